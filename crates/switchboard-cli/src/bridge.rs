//! `switchboard bridge` (a stdio MCP server served over HTTP to clients of every
//! era) and `switchboard connect` (a remote HTTP MCP server served on our stdio).
//!
//! This module only turns flags into a `switchboard_gateway::BridgeConfig` and runs
//! it until SIGTERM or Ctrl-C (watched by [`crate::signals`] from before the
//! listener and the children start); what the bridge does is in
//! `switchboard-gateway`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::ValueEnum;
use switchboard_gateway::pin::{Lock, UpstreamLock};
use switchboard_gateway::{
    connect_stdio, Allowlist, Bridge, BridgeConfig, ChildMode, ConnectConfig, ConnectEnd,
    Connector, DriftGuard, GuardMode,
};
use switchboard_transport::http::client::{
    check_endpoint_url, refuse_managed_header, HttpClientConfig,
};
use switchboard_transport::http::server::HttpServerConfig;
use switchboard_transport::http::sse_client::SseClientConfig;
use switchboard_transport::stdio::{ChildConfig, ChildScheduling, Inherit};

use crate::client::render::one_line;
use crate::signals::{Inherited, Signals, Stop};

/// `--child-scheduling`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchedulingArg {
    /// `SCHED_BATCH` (default): a child woken by a request waits for the
    /// bridge to sleep instead of preempting it.
    Batch,
    /// The bridge's own policy.
    Inherit,
}

/// Arguments of `switchboard bridge`.
#[derive(Debug, clap::Args)]
pub struct BridgeArgs {
    /// The address to listen on (loopback unless told otherwise).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// An admin listener of its own, off by default: `/metrics`
    /// (Prometheus: the OpenTelemetry MCP conventions' histograms and
    /// Switchboard's own series), `/healthz`, `/readyz`. IP:PORT, or a port
    /// alone for 127.0.0.1 (9464 is the usual one).
    #[arg(long, value_name = "ADDR", value_parser = parse_admin)]
    pub admin: Option<SocketAddr>,
    #[command(flatten)]
    pub audit: crate::audit::AuditArgs,
    /// How log lines are written on stderr: text, or one JSON object a line
    /// (for log collectors; a traced call's lines carry its `trace_id`).
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: crate::telemetry::LogFormat,
    /// The Streamable HTTP (and 2026-07-28) endpoint's path.
    #[arg(long, default_value = "/mcp")]
    pub path: String,
    /// The legacy HTTP+SSE (2024-11-05) stream's path.
    #[arg(long, default_value = "/sse")]
    pub sse_path: String,
    /// The path legacy HTTP+SSE clients POST to.
    #[arg(long, default_value = "/message")]
    pub message_path: String,
    /// Turn the legacy HTTP+SSE endpoints off.
    #[arg(long)]
    pub no_sse: bool,
    /// `per-session`: one child per client session (when it dies, its
    /// session ends: the client starts a new one); `shared`: one child for
    /// every client (restarted when it dies); `per-session-respawn`: one per
    /// session, restarted under it when it dies (its state lost). With
    /// `--upstream`, a session of the remote server stands for the child.
    #[arg(long, default_value = "per-session", value_parser = parse_child_mode)]
    pub child: ChildMode,
    /// Only this tool may be listed and called (repeatable); default: every tool.
    #[arg(long = "allow-tool", value_name = "NAME")]
    pub allow_tools: Vec<String>,
    /// Judge the server's tools against this lock (`switchboard lock`): with
    /// `--lock-mode block` (the default) a tool that is new or whose definition
    /// is not the approved one is withheld from `tools/list` and its calls are
    /// refused (-32602, never reaching the server); `warn` serves and logs it.
    /// Read again on SIGHUP and when it (or the `--lock-key` file) changes.
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// What `--lock` does with a tool that is not as approved.
    #[arg(long, value_enum, default_value = "block", requires = "lock")]
    pub lock_mode: LockModeArg,
    /// Which upstream of the lock is this server's; default: the lock's only one.
    #[arg(long, value_name = "NAME", requires = "lock")]
    pub lock_upstream: Option<String>,
    /// Refuse to start unless the lock is signed with this key (a file, or the
    /// key itself, `ed25519:...`: `switchboard keygen`, `lock sign`).
    #[arg(long, value_name = "PUBKEY", requires = "lock")]
    pub lock_key: Option<String>,
    /// Host and Origin checks, limits, timeouts, threads: as the gateway's.
    #[command(flatten)]
    pub serve: crate::serve_args::ServeArgs,
    /// The Linux scheduling policy of the children. `batch` (the default):
    /// `SCHED_BATCH` when the bridge runs in the usual `SCHED_OTHER` (in any
    /// other policy the children get the bridge's), the same CPU share, but a
    /// child woken by a request does
    /// not preempt the bridge on its CPU; it runs once the bridge has done what
    /// it was doing (answering, writing to other children) and sleeps, or on an
    /// idle CPU. Under load that is fewer context switches for the bridge and
    /// more calls per second (docs/benchmarks.md); `inherit` keeps the
    /// bridge's own policy for the children.
    #[arg(long, value_enum, default_value = "batch")]
    pub child_scheduling: SchedulingArg,
    /// The child's name in logs (default: the command's file name).
    #[arg(long)]
    pub name: Option<String>,
    /// Set a variable in the child's environment (repeatable): `NAME=VALUE`,
    /// or `NAME` for ours under that name.
    #[arg(long = "env", value_name = "NAME[=VALUE]")]
    pub env: Vec<String>,
    /// The child inherits every variable of ours. By default it gets only
    /// `HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM`, `USER`, `TMPDIR` and the
    /// locale, plus `--env`: a secret of the bridge's never reaches a server
    /// that was not given it. For a sidecar whose server reads the pod's
    /// environment.
    #[arg(long)]
    pub inherit_env: bool,
    /// A remote MCP server to serve instead of a command: its Streamable HTTP
    /// endpoint (2025-03-26 and later, 2026-07-28 included: its era is found as
    /// the library's client finds it). Clients of every era reach it through
    /// the bridge; with `--child per-session` each downstream session gets an
    /// upstream session of its own.
    #[arg(long, value_name = "URL", conflicts_with_all = ["command", "upstream_sse"])]
    pub upstream: Option<String>,
    /// A remote legacy HTTP+SSE (2024-11-05) server to serve instead of a
    /// command: the URL of its SSE stream.
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub upstream_sse: Option<String>,
    /// A header sent on every request to the remote upstream (`NAME: VALUE`,
    /// e.g. its own credentials); repeat for more. A client's own
    /// `Authorization` is never passed on.
    #[arg(long = "upstream-header", value_name = "NAME: VALUE")]
    pub upstream_headers: Vec<String>,
    /// MCP authorization: the `--auth-*` flags.
    #[command(flatten)]
    pub auth: crate::auth_args::AuthArgs,
    /// The stdio server's command and arguments, after `--`. Default: the built-in
    /// example server (`switchboard example-server`).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// The upstream of `args`: the remote server of `--upstream`/`--upstream-sse`
/// (its URL checked, its headers parsed and refused when the transport
/// manages them), else the command after `--`.
fn upstream_from(args: &BridgeArgs, child: ChildConfig) -> Result<Connector, String> {
    let mut headers = Vec::new();
    for h in &args.upstream_headers {
        let Some((name, value)) = h.split_once(':') else {
            return Err(format!("--upstream-header needs NAME: VALUE, got {h:?}"));
        };
        let (name, value) = (name.trim(), value.trim());
        refuse_managed_header(name).map_err(|e| format!("--upstream-header: {e}"))?;
        headers.push((name.to_owned(), value.to_owned()));
    }
    if !headers.is_empty() && args.upstream.is_none() && args.upstream_sse.is_none() {
        return Err("--upstream-header needs --upstream or --upstream-sse".to_owned());
    }
    if let Some(url) = &args.upstream {
        check_endpoint_url(url).map_err(|e| format!("--upstream: {e}"))?;
        let mut config = HttpClientConfig::new(url.clone());
        config.headers = headers;
        // Server-initiated messages (list changes, requests) on the GET stream.
        config.standalone_stream = true;
        return Ok(Connector::StreamableHttp(config));
    }
    if let Some(url) = &args.upstream_sse {
        check_endpoint_url(url).map_err(|e| format!("--upstream-sse: {e}"))?;
        let mut config = SseClientConfig::default();
        for (name, value) in headers {
            let name = http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| format!("--upstream-header {name:?}: {e}"))?;
            let value = http::HeaderValue::from_str(&value)
                .map_err(|e| format!("--upstream-header {name}: {e}"))?;
            config.headers.append(name, value);
        }
        return Ok(Connector::Sse(url.clone(), config));
    }
    Ok(Connector::Stdio(child))
}

/// Arguments of `switchboard connect`.
#[derive(Debug, clap::Args)]
pub struct ConnectArgs {
    /// The remote server's URL.
    pub url: String,
    /// An extra header for every request, `Name: value` (repeatable), e.g.
    /// `Authorization: Bearer ...`. Headers the transport sets itself
    /// (`Mcp-Session-Id`, `MCP-Protocol-Version`, `Host`, `Accept`,
    /// `Content-Type`, ...) are refused.
    #[arg(long = "header", value_name = "K:V")]
    pub headers: Vec<String>,
    /// MCP authorization (unless a header gives `Authorization`): a stored login
    /// (`switchboard auth login`) is used, and a 401 logs in through the browser
    /// (the URL printed on stderr; stdout stays JSON-RPC).
    #[command(flatten)]
    pub login: crate::auth::LoginArgs,
}

/// `90s`, `30m`, `2h`, `500ms` or plain seconds.
/// `--child`: one of [`ChildMode::as_str`]'s names.
fn parse_child_mode(text: &str) -> Result<ChildMode, String> {
    text.parse()
}

/// `--admin` (and the gateway file's `admin`): `IP:PORT`, or a port alone
/// for 127.0.0.1 (loopback unless told otherwise, as `--listen`).
pub(crate) fn parse_admin(text: &str) -> Result<SocketAddr, String> {
    let text = text.trim();
    if let Ok(port) = text.trim_start_matches(':').parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse()
        .map_err(|_| format!("{text:?} is not an IP:PORT address or a port (e.g. 9464)"))
}

pub(crate) fn init_tracing(format: crate::telemetry::LogFormat) {
    crate::telemetry::init_logs(tracing::Level::INFO, format);
}

/// Flag values that cannot work, refused before anything starts; the shared
/// settings resolved.
fn check_args(args: &BridgeArgs) -> Result<crate::serve_args::Serve, String> {
    let serve = args
        .serve
        .resolve(&crate::serve_args::ServeFile::default())
        .map_err(|problems| {
            let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
            lines.join("; ")
        })?;
    for (flag, path) in [
        ("--path", &args.path),
        ("--sse-path", &args.sse_path),
        ("--message-path", &args.message_path),
    ] {
        if !path.starts_with('/') {
            return Err(format!("{flag} must start with '/': {path:?}"));
        }
    }
    if !args.no_sse
        && (args.path == args.sse_path
            || args.path == args.message_path
            || args.sse_path == args.message_path)
    {
        return Err(format!(
            "--path ({}), --sse-path ({}) and --message-path ({}) must differ (or give --no-sse)",
            args.path, args.sse_path, args.message_path
        ));
    }
    // `/healthz` and `/readyz` answer every GET with the probe: an endpoint there
    // would lose its GETs (the SSE stream, or the session's GET stream).
    let mut endpoints = vec![("--path", &args.path)];
    if !args.no_sse {
        endpoints.push(("--sse-path", &args.sse_path));
        endpoints.push(("--message-path", &args.message_path));
    }
    for (flag, path) in endpoints {
        if path == "/healthz" || path == "/readyz" {
            return Err(format!(
                "{flag} {path}: that path is the bridge's health probe"
            ));
        }
    }
    if let Some(bad) = args.allow_tools.iter().find(|t| t.trim().is_empty()) {
        return Err(format!("--allow-tool needs a tool name, got {bad:?}"));
    }
    Ok(serve)
}

#[cfg(test)]
fn config_from(args: BridgeArgs) -> Result<BridgeConfig, String> {
    let serve = check_args(&args)?;
    config_with(args, &serve)
}

/// The bridge's configuration from flags checked into `serve`
/// ([`check_args`]).
fn config_with(args: BridgeArgs, serve: &crate::serve_args::Serve) -> Result<BridgeConfig, String> {
    let (program, rest, default_name) = match args.command.split_first() {
        Some((program, rest)) => {
            let name = std::path::Path::new(program)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| program.clone());
            (program.clone(), rest.to_vec(), name)
        }
        None => {
            let me = std::env::current_exe()
                .map_err(|e| format!("cannot find this program to run the example server: {e}"))?;
            (
                me.to_string_lossy().into_owned(),
                vec!["example-server".to_owned()],
                "example-server".to_owned(),
            )
        }
    };
    let mut child = ChildConfig::new(args.name.clone().unwrap_or(default_name), program).args(rest);
    if args.inherit_env {
        child.inherit = Inherit::All;
    }
    for pair in &args.env {
        child = match pair.split_once('=') {
            Some((name, value)) if !name.is_empty() => child.env(name, value),
            None if !pair.is_empty() => match std::env::var_os(pair) {
                Some(value) => child.env(pair, value),
                None => return Err(format!("--env {pair}: no such variable here")),
            },
            _ => return Err(format!("--env needs NAME or NAME=VALUE, got {pair:?}")),
        };
    }
    child.scheduling = match args.child_scheduling {
        SchedulingArg::Batch => ChildScheduling::Batch,
        SchedulingArg::Inherit => ChildScheduling::Inherit,
    };
    let upstream = upstream_from(&args, child)?;
    let mut http = HttpServerConfig::default();
    http.auth = args.auth.resource_config(&args.path)?;
    http.bind = args.listen;
    http.admin = args.admin;
    http.path = args.path;
    http.sse_path = (!args.no_sse).then_some(args.sse_path);
    http.message_path = args.message_path;
    serve.apply(&mut http);
    let mut config = BridgeConfig::new(upstream);
    config.http = http;
    config.mode = args.child;
    config.allow_tools = if args.allow_tools.is_empty() {
        Allowlist::All
    } else {
        Allowlist::only(args.allow_tools)
    };
    if let Some(file) = &args.lock {
        config.drift_guard = Some(Arc::new(drift_guard(
            file,
            args.lock_upstream.as_deref(),
            args.lock_key.as_deref(),
            match args.lock_mode {
                LockModeArg::Block => GuardMode::Block,
                LockModeArg::Warn => GuardMode::Warn,
            },
        )?));
    }
    config.drain_timeout = serve.drain_timeout;
    config.request_timeout = serve.request_timeout;
    config.held_call_timeout = serve.held_call_timeout;
    config.max_in_flight = serve.max_in_flight;
    config.init_timeout = serve.init_timeout;
    Ok(config)
}

/// Runs `switchboard bridge` until SIGTERM or Ctrl-C, then drains and ends the
/// children (exit 0); a second SIGTERM or Ctrl-C meanwhile stops it at once,
/// children killed (exit 128 + that signal's number: 143, 130; not 1, which the
/// client commands use for a tool's `isError`). Exit 2 when it cannot start: a
/// bad flag, a server command that is not an executable file or not in `PATH`
/// (`ChildConfig::find_program`), a listener that cannot bind. Both signals are watched even when inherited as ignored (`cmd &` in a
/// script), from before the bridge starts until it exits.
pub fn run_bridge(args: BridgeArgs) -> ExitCode {
    init_tracing(args.log_format);
    let sse = (!args.no_sse).then(|| args.sse_path.clone());
    // A sample call for the banner: one the example server has and the
    // allowlist (if any) lets through, so that the line pastes and works.
    let allows = |t: &str| args.allow_tools.is_empty() || args.allow_tools.iter().any(|a| a == t);
    let remote = args.upstream.as_ref().or(args.upstream_sse.as_ref());
    let sample_call = if !args.command.is_empty() || remote.is_some() {
        None
    } else if allows("progress") {
        Some("progress --arg seconds=2")
    } else if allows("echo") {
        Some("echo --arg text=hello")
    } else {
        None
    };
    let command_text = match remote {
        Some(url) => url.clone(),
        None if args.command.is_empty() => "the built-in example server".to_owned(),
        None => args.command.join(" "),
    };
    let listen = args.listen;
    // What SIGHUP reads again: the lock, checked as at start.
    let reload = args.lock.clone().map(|file| LockReload {
        file,
        upstream: args.lock_upstream.clone(),
        key: args.lock_key.clone(),
    });
    let audit = args.audit.config(None);
    let admin = args.admin.is_some();
    let lock_mode = args.lock_mode;
    let serve = match check_args(&args) {
        Ok(s) => s,
        Err(e) => {
            crate::telemetry::fatal(format_args!("{e}"));
            return ExitCode::from(2);
        }
    };
    let config = match config_with(args, &serve) {
        Ok(c) => c,
        Err(e) => {
            crate::telemetry::fatal(format_args!("{e}"));
            return ExitCode::from(2);
        }
    };
    let guard = config.drift_guard.clone();
    if let Some(reload) = &reload {
        tracing::info!(
            "switchboard bridge: the server judged against {} ({})",
            reload.file.display(),
            lock_mode.said()
        );
    }
    let mut open: Vec<&str> = Vec::new();
    if config.http.auth.is_none() {
        open.push(config.http.path.as_str());
        if let Some(sse) = &config.http.sse_path {
            open.extend([sse.as_str(), config.http.message_path.as_str()]);
        }
    }
    for warning in crate::serve_args::exposure_warnings(listen, &open, config.http.admin) {
        tracing::warn!("{warning}");
    }
    // A command that can never start (a typo, a missing file) is a mistake in
    // this command line, not a child to restart with backoff forever: said at
    // once, exit 2. One that starts and then dies is supervised as usual.
    if let Connector::Stdio(child) = &config.upstream {
        if let Err(e) = child.find_program() {
            crate::telemetry::fatal(format_args!("cannot run the server command: {e}"));
            return ExitCode::from(2);
        }
    }
    let runtime = match serve.runtime() {
        Ok(r) => r,
        Err(e) => {
            crate::telemetry::fatal(format_args!("cannot start the runtime: {e}"));
            return ExitCode::from(2);
        }
    };
    runtime.block_on(async move {
        // Before anything starts: a signal during start-up, or between the first
        // signal and the wait for a second, is never lost nor fatal.
        let mut signals = match Signals::watch(&[Stop::Interrupt, Stop::Terminate], Inherited::Overridden) {
            Ok(s) => s,
            Err(e) => {
                crate::telemetry::fatal(format_args!("cannot watch signals: {e}"));
                return ExitCode::from(2);
            }
        };
        // With --lock, SIGHUP reloads it: watched from here on, so that it is
        // never the default action (the end of the process).
        let hup = match &reload {
            Some(_) => match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
                Ok(h) => Some(h),
                Err(e) => {
                    crate::telemetry::fatal(format_args!("cannot watch SIGHUP: {e}"));
                    return ExitCode::from(2);
                }
            },
            // Without --lock, SIGHUP (the terminal went away) stops the
            // bridge as SIGTERM does, drained, its children ended; left
            // ignored when inherited so (`nohup`).
            None => {
                if let Err(e) = signals.also(Stop::Hangup, Inherited::Kept) {
                    crate::telemetry::fatal(format_args!("cannot watch SIGHUP: {e}"));
                    return ExitCode::from(2);
                }
                None
            }
        };
        crate::telemetry::start_traces();
        if let Err(e) = crate::audit::start(audit, admin) {
            crate::telemetry::fatal(e);
            return ExitCode::from(2);
        }
        let bridge = match Bridge::start(config).await {
            Ok(b) => b,
            Err(e) => {
                crate::telemetry::fatal(format_args!("cannot listen on {listen}: {e}"));
                return ExitCode::from(2);
            }
        };
        let url = bridge.url();
        // The legacy endpoints and the probes are at the listener's root, not
        // beside `--path` (`--path /a/b/mcp` has `/sse`, not `/a/b/sse`).
        let base = origin_of(&url).to_owned();
        let path = url.strip_prefix(base.as_str()).unwrap_or("/mcp").to_owned();
        let mut endpoints = vec![(format!("route {path}"), url.clone())];
        let mut lines = vec![format!("switchboard bridge: serving {command_text}")];
        match sse {
            Some(sse) => {
                endpoints.push(("sse".to_owned(), format!("{base}{sse}")));
                lines.push(format!(
                    "switchboard bridge: Streamable HTTP and 2026-07-28 at {url}, \
                     legacy HTTP+SSE (2024-11-05) at {base}{sse}"
                ));
            }
            None => lines.push(format!(
                "switchboard bridge: Streamable HTTP and 2026-07-28 at {url}"
            )),
        }
        lines.push(format!(
            "switchboard bridge: health at {base}/healthz, readiness at {base}/readyz"
        ));
        if let Some(admin) = bridge.admin_addr() {
            endpoints.push(("admin".to_owned(), format!("http://{admin}")));
            lines.push(format!(
                "switchboard bridge: admin at http://{admin}/metrics (and /ui, /healthz, /readyz)"
            ));
        }
        // The path of this very binary, so the line pastes as is (a newcomer who
        // ran `cargo run` has no `switchboard` on PATH).
        let me = std::env::current_exe()
            .ok()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "switchboard".to_owned());
        lines.push(format!(
            "switchboard bridge: try it in another terminal: {me} tools list {url}"
        ));
        if let Some(call) = sample_call {
            lines.push(format!(
                "switchboard bridge: and: {me} tools call {url} {call}"
            ));
        }
        crate::telemetry::banner(&endpoints, &lines);
        match (&reload, &guard, hup) {
            (Some(reload), Some(guard), Some(mut hup)) => {
                reload.serve_until(guard, &mut hup, &mut signals).await
            }
            _ => {
                signals.next().await;
            }
        }
        tracing::info!(
            "switchboard bridge: stopping (draining requests in flight; a second signal stops at once)"
        );
        let code = tokio::select! {
            () = bridge.shutdown() => ExitCode::SUCCESS,
            // Asked twice: no more drain, nor graces for the children. Leaving
            // the runtime kills each child's process group (SIGKILL), as
            // `ChildProcess` promises when its runtime ends first.
            stop = signals.next() => {
                tracing::warn!("switchboard bridge: second signal: stopped at once, children killed");
                crate::audit::stop(Duration::from_millis(500)).await;
                return ExitCode::from(stop.exit_code());
            }
        };
        crate::audit::stop(Duration::from_secs(2)).await;
        crate::telemetry::stop_traces().await;
        code
    })
}

/// `--lock` read again on SIGHUP or when it changes (`lock approve`, a new
/// ConfigMap), checked as at start (`--lock-key`); a refused one keeps the
/// lock in force and says why in one line.
struct LockReload {
    file: PathBuf,
    upstream: Option<String>,
    key: Option<String>,
}

impl LockReload {
    /// Reloads on each SIGHUP, and when the lock (or the key's file)
    /// changes, as the gateway does; until a stopping signal comes.
    async fn serve_until(
        &self,
        guard: &DriftGuard,
        hup: &mut tokio::signal::unix::Signal,
        signals: &mut Signals,
    ) {
        let files = std::iter::once(self.file.clone()).chain(key_file(self.key.as_deref()));
        let mut watched = crate::files::Watched::new(files.collect());
        let mut poll = tokio::time::interval(crate::gateway::FILE_POLL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let why = tokio::select! {
                _ = signals.next() => return,
                _ = hup.recv() => {
                    watched.seen_now();
                    "SIGHUP".to_owned()
                }
                _ = poll.tick() => match watched.changed() {
                    Some(why) => why,
                    None => continue,
                },
            };
            self.reload(guard, &why);
        }
    }

    /// Reads the lock again and puts it in force; a refused one is said.
    fn reload(&self, guard: &DriftGuard, why: &str) {
        match read_lock_entry(&self.file, self.upstream.as_deref(), self.key.as_deref()) {
            Ok(lock) => {
                let changed = guard.reload(lock);
                let file = self.file.display().to_string();
                let what = if changed.is_empty() {
                    "what is served is unchanged".to_owned()
                } else {
                    let kinds: Vec<&str> = changed.iter().map(|k| k.noun()).collect();
                    format!("the {} served change: sessions are told", kinds.join(", "))
                };
                tracing::info!("switchboard bridge: {why}: {file} reloaded: {what}");
            }
            Err(e) => tracing::warn!(
                "switchboard bridge: {why}: reload refused, the lock in force is kept: {}",
                one_line(&e.to_string())
            ),
        }
    }
}

/// `http://host:port` of `http://host:port/path...`.
fn origin_of(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(i) => &url[..after_scheme + i],
        None => url,
    }
}

/// `Name: value` (or `Name:value`) → the pair. Refused: no colon, no name, or a
/// name the HTTP transports set themselves (`Mcp-Session-Id`, `Host`, `Accept`,
/// ...: `switchboard_transport::http::client::MANAGED_HEADERS`, any case, and
/// `Mcp-Param-*`), which would replace the protocol's own or go out beside it.
fn parse_header(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| format!("a header is `Name: value`, got {text:?}"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("a header needs a name: {text:?}"));
    }
    switchboard_transport::http::client::refuse_managed_header(name)
        .map_err(|e| format!("--header {text:?}: {e}"))?;
    Ok((name.to_owned(), value.trim().to_owned()))
}

/// Runs `switchboard connect` until the host app closes stdin (exit 0, once the
/// answers to its requests already forwarded are written, within
/// `ConnectConfig::drain_on_close`), the remote cannot be reached or goes away
/// (exit 2, one line on stderr), or a signal stops it (the remote session ended
/// first; exit 128 + its number: 130 for SIGINT, 143 for SIGTERM, 129 for
/// SIGHUP). Stdout carries only JSON-RPC; diagnostics go to stderr.
pub fn run_connect(args: ConnectArgs) -> ExitCode {
    crate::telemetry::init_logs(tracing::Level::WARN, crate::telemetry::LogFormat::Text);
    let mut config = ConnectConfig::new(args.url);
    for h in &args.headers {
        match parse_header(h) {
            Ok(pair) => config.headers.push(pair),
            Err(e) => {
                crate::telemetry::fatal(format_args!("{e}"));
                return ExitCode::from(2);
            }
        }
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            crate::telemetry::fatal(format_args!("cannot start the runtime: {e}"));
            return ExitCode::from(2);
        }
    };
    // connect_stdio writes out what is queued for the host app before it returns.
    let outcome = runtime.block_on(async {
        if !crate::auth::has_authorization(&config.headers) {
            let url = config.url.clone();
            config.auth = Some(crate::auth::oauth_for(&url, &args.login).await?);
            // A login on the first 401 runs inside the wait for the answer to
            // the host app's `initialize`: the person's time at the browser
            // (up to --login-timeout) must not count against the remote's.
            if !args.login.no_login {
                config.first_answer_timeout += args.login.login_timeout;
            }
        }
        connect_stdio(config).await
    });
    // The stdin reader sits in a blocking read: do not wait for it.
    runtime.shutdown_background();
    match outcome {
        Ok(ConnectEnd::Closed) => ExitCode::SUCCESS,
        // 128 + the signal's number, as for the other commands (`signals`).
        Ok(ConnectEnd::Signal(n)) => ExitCode::from(128 + n.clamp(0, 127) as u8),
        Err(e) => {
            crate::telemetry::fatal(format_args!("{e}"));
            ExitCode::from(2)
        }
    }
}

/// The file of a `--lock-key` given as one (not an `ed25519:` value): what a
/// reload reads, so watched.
pub(crate) fn key_file(key: Option<&str>) -> Option<PathBuf> {
    key.filter(|k| !k.starts_with("ed25519:"))
        .map(PathBuf::from)
}

/// `--lock-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LockModeArg {
    /// Withhold and refuse what is not as approved.
    Block,
    /// Serve it and log.
    Warn,
}

impl LockModeArg {
    /// The mode and what it does, for the start-up line.
    pub(crate) fn said(self) -> &'static str {
        match self {
            LockModeArg::Block => "block mode: what is not as approved is withheld",
            LockModeArg::Warn => "warn mode: what is not as approved is served and logged",
        }
    }
}

/// Reads the lock for `--lock` (checking its signature first with
/// `--lock-key`) and picks this server's upstream. Errors: one line.
fn drift_guard(
    file: &Path,
    upstream: Option<&str>,
    key: Option<&str>,
    mode: GuardMode,
) -> Result<DriftGuard, String> {
    let entry = read_lock_entry(file, upstream, key).map_err(|e| e.to_string())?;
    Ok(DriftGuard::new(entry, mode, file.display().to_string()))
}

/// Why `--lock` could not be read: each names the file (and the entry).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LockFileError {
    /// Not signed with `--lock-key` (the check's own line).
    #[error("{0}")]
    Signature(String),
    /// Unreadable, or not a lock (syntax, an entry whose hash is wrong).
    #[error("{file}: {why}")]
    Unreadable { file: String, why: String },
    /// A lock of no upstream.
    #[error("{0}: locks no upstream")]
    Empty(String),
    /// Several entries, and no `--lock-upstream` to pick one.
    #[error("{file}: holds {count} upstreams: name this server's with --lock-upstream")]
    Ambiguous { file: String, count: usize },
    /// No entry of that name.
    #[error("{file}: no upstream {name:?} in the lock")]
    NoEntry { file: String, name: String },
}

/// This server's entry of the lock at `file`, its signature checked first
/// with `key`.
pub(crate) fn read_lock_entry(
    file: &Path,
    upstream: Option<&str>,
    key: Option<&str>,
) -> Result<UpstreamLock, LockFileError> {
    lock_entry(&read_lock(file, key)?, file, upstream)
}

/// The lock at `file`, its signature checked against `key` when given.
pub(crate) fn read_lock(file: &Path, key: Option<&str>) -> Result<Lock, LockFileError> {
    if let Some(key) = key {
        crate::client::lock::check_signature(file, key, "--lock-key")
            .map_err(LockFileError::Signature)?;
    }
    let shown = || file.display().to_string();
    let unreadable = |why: String| LockFileError::Unreadable { file: shown(), why };
    let text = crate::files::read_text(file, crate::files::MAX_LOCK_BYTES)
        .map_err(|e| unreadable(e.to_string()))?;
    let lock = Lock::parse(&text).map_err(|e| unreadable(e.to_string()))?;
    if lock.upstreams.is_empty() {
        return Err(LockFileError::Empty(shown()));
    }
    Ok(lock)
}

/// `upstream`'s entry of `lock` (read from `file`); without a name, its only
/// one.
pub(crate) fn lock_entry(
    lock: &Lock,
    file: &Path,
    upstream: Option<&str>,
) -> Result<UpstreamLock, LockFileError> {
    let file = file.display().to_string();
    let name = match upstream {
        Some(n) => n.to_owned(),
        None if lock.upstreams.len() == 1 => {
            lock.upstreams.keys().next().cloned().unwrap_or_default()
        }
        None => {
            return Err(LockFileError::Ambiguous {
                file,
                count: lock.upstreams.len(),
            })
        }
    };
    lock.upstreams
        .get(&name)
        .cloned()
        .ok_or(LockFileError::NoEntry { file, name })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> BridgeArgs {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Wrap {
            #[command(flatten)]
            args: BridgeArgs,
        }
        let mut argv = vec!["bridge"];
        argv.extend_from_slice(extra);
        Wrap::parse_from(argv).args
    }

    #[test]
    fn impossible_flags_are_refused() {
        assert!(check_args(&args(&[])).is_ok());
        for bad in [
            &["--request-timeout", "0"][..],
            &["--held-call-timeout", "0"],
            &["--max-body", "0"],
            &["--path", "/sse"],
            &["--path", "mcp"],
            &["--allow-tool", ""],
            &["--max-in-flight", "0"],
            &["--threads", "0"],
            // The probes' paths: a GET there answers the probe, never MCP.
            &["--path", "/healthz"],
            &["--path", "/readyz"],
            &["--sse-path", "/readyz"],
            &["--message-path", "/healthz"],
        ] {
            assert!(check_args(&args(bad)).is_err(), "{bad:?}");
        }
        assert!(check_args(&args(&["--path", "/sse", "--no-sse"])).is_ok());
        let mode = |argv: &[&str]| config_from(args(argv)).expect("a config").mode;
        assert_eq!(mode(&["--", "srv"]), ChildMode::PerSession, "the default");
        assert_eq!(mode(&["--child", "shared", "--", "srv"]), ChildMode::Shared);
        let config =
            config_from(args(&["--held-call-timeout", "90s", "--", "srv"])).expect("a config");
        assert_eq!(config.held_call_timeout, Duration::from_secs(90));
        let scheduling = |config: &BridgeConfig| match &config.upstream {
            Connector::Stdio(child) => child.scheduling,
            other => panic!("a child, not {other:?}"),
        };
        assert_eq!(scheduling(&config), ChildScheduling::Batch, "the default");
        let config = config_from(args(&["--child-scheduling", "inherit", "--", "srv"])).unwrap();
        assert_eq!(scheduling(&config), ChildScheduling::Inherit);
        assert!(check_args(&args(&["--sse-path", "/healthz", "--no-sse"])).is_ok());
    }

    /// `--allow-host` and `--allow-origin` add to the loopback defaults;
    /// `--no-default-hosts`/`--no-default-origins` drop them, and the former
    /// needs an `--allow-host` (else every request would get 403).
    #[test]
    fn allowed_hosts_add_to_the_defaults() {
        let config = config_from(args(&[
            "--allow-host",
            "mcp.example",
            "--allow-origin",
            "https://app.example",
            "--",
            "srv",
        ]))
        .unwrap();
        assert_eq!(config.http.allowed_hosts, ["mcp.example"]);
        assert!(config.http.default_hosts);
        assert_eq!(config.http.allowed_origins, ["https://app.example"]);
        assert!(config.http.default_origins);
        let config = config_from(args(&[
            "--allow-host",
            "mcp.example",
            "--no-default-hosts",
            "--no-default-origins",
            "--",
            "srv",
        ]))
        .unwrap();
        assert!(!config.http.default_hosts && !config.http.default_origins);
        assert!(check_args(&args(&["--no-default-hosts"])).is_err());
        assert!(check_args(&args(&["--allow-host", " "])).is_err());
        assert!(check_args(&args(&["--no-default-origins"])).is_ok());
    }

    #[test]
    fn headers_parse() {
        assert_eq!(
            parse_header("Authorization: Bearer a:b").unwrap(),
            ("Authorization".to_owned(), "Bearer a:b".to_owned())
        );
        assert_eq!(
            parse_header("X-A:1").unwrap(),
            ("X-A".to_owned(), "1".to_owned())
        );
        assert!(parse_header("nocolon").is_err());
        assert!(parse_header(": v").is_err());
        assert!(parse_header("X-Api-Key: k").is_ok());
    }

    /// The headers the transport sets itself are refused, in any case: a
    /// `Mcp-Session-Id` went out on `initialize`, a `Host` replaced the
    /// target's, an `Accept` went out twice on the HTTP+SSE GET.
    #[test]
    fn managed_headers_are_refused() {
        for text in [
            "Mcp-Session-Id: abc",
            "mcp-protocol-version: 2025-11-25",
            "MCP-Method: tools/call",
            "Mcp-Name: x",
            "Mcp-Param-Region: eu",
            "Last-Event-ID: 1",
            "Host: evil.com",
            "content-type: text/plain",
            "Content-Length: 3",
            "ACCEPT: text/html",
            "Transfer-Encoding: chunked",
            "Connection: close",
        ] {
            let e = parse_header(text).unwrap_err();
            assert!(e.contains("set by the MCP HTTP transport"), "{text}: {e}");
        }
    }
}
