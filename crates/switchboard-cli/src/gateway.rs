//! `switchboard gateway --config FILE`: the configuration file (module
//! `config`) turned into a running [`Gateway`], served until SIGTERM or Ctrl-C.
//!
//! This module must not hold gateway logic: it translates the validated file
//! into [`GatewayConfig`] and runs it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use switchboard_gateway::{
    Allowlist, Connector, Gateway, GatewayConfig, GatewayRoute, GatewayUpstream,
};
use switchboard_transport::http::client::HttpClientConfig;
use switchboard_transport::http::sse_client::SseClientConfig;
use switchboard_transport::stdio::{ChildConfig, Inherit};

use crate::config::{self, Allow, ChildMode, HttpTransport, Target};
use crate::signals::{Inherited, Signals, Stop};

/// `switchboard gateway`.
#[derive(Args, Debug)]
pub struct GatewayArgs {
    /// The configuration file: the gateway's own TOML, YAML or JSON (`switchboard
    /// config schema`), an `mcpServers` file (Claude Desktop, Cursor) or VS
    /// Code's `servers`.
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// The address to listen on. Default: the file's `listen`, else
    /// 127.0.0.1:8080.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// An admin listener of its own, off by default: `/metrics`, `/healthz`,
    /// `/readyz`. IP:PORT, or a port alone for 127.0.0.1 (9464 is the usual
    /// one). Default: the file's `admin`.
    #[arg(long, value_name = "ADDR", value_parser = crate::bridge::parse_admin)]
    pub admin: Option<SocketAddr>,
    /// The audit trail; the flags win over the file's `audit`.
    #[command(flatten)]
    pub audit: crate::audit::AuditArgs,
    /// How log lines are written on stderr: text, or one JSON object a line
    /// (a traced call's lines carry its `trace_id`). Default: the file's
    /// `log_format`, else text.
    #[arg(long, value_enum)]
    pub log_format: Option<crate::telemetry::LogFormat>,
    /// MCP authorization for every route without an `auth` key of its own in
    /// the file: the `--auth-*` flags (tool scopes by served name, e.g.
    /// `--auth-tool-scope calc__add=calc`). Not together with the file's
    /// top-level `[auth]` table.
    #[command(flatten)]
    pub auth: crate::auth_args::AuthArgs,
    /// Judge every upstream's tools, prompts, templates and instructions
    /// against its entry (by upstream name) in this lock (`switchboard
    /// lock`); an upstream the lock does not hold is an error. Read again on
    /// SIGHUP and when the configuration file changes.
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// What `--lock` does with an entry that is not as approved.
    #[arg(long, value_enum, default_value = "block", requires = "lock")]
    pub lock_mode: crate::bridge::LockModeArg,
    /// Refuse a lock not signed with this key (a file, or `ed25519:...`).
    #[arg(long, value_name = "PUBKEY", requires = "lock")]
    pub lock_key: Option<String>,
    /// Host and Origin checks, limits, timeouts, threads: as the bridge's,
    /// each also a key of the file (`allow_hosts`, `max_sessions`, …); a
    /// flag wins over the file.
    #[command(flatten)]
    pub serve: crate::serve_args::ServeArgs,
}

/// What a reload cannot change: the listeners and their settings, as bound
/// at start (the flags, else the file, else the defaults).
#[derive(Debug, Clone, PartialEq)]
struct Fixed {
    listen: SocketAddr,
    admin: Option<SocketAddr>,
    serve: crate::serve_args::Serve,
}

impl Fixed {
    /// The settings `file` asks for under `args`. Errors: one line each.
    fn of(args: &GatewayArgs, file: &config::GatewayConfig) -> Result<Fixed, Vec<String>> {
        let serve = args
            .serve
            .resolve(&file.serve)
            .map_err(|problems| problems.iter().map(ToString::to_string).collect::<Vec<_>>())?;
        Ok(Fixed {
            listen: args
                .listen
                .or(file.listen)
                .unwrap_or_else(|| DEFAULT_LISTEN.parse().expect("a valid address")),
            admin: args.admin.or(file.admin),
            serve,
        })
    }

    /// Writes them into `config`.
    fn apply(&self, config: &mut GatewayConfig) {
        config.http.bind = self.listen;
        config.http.admin = self.admin;
        self.serve.apply(&mut config.http);
        config.init_timeout = self.serve.init_timeout;
        config.request_timeout = self.serve.request_timeout;
        config.drain_timeout = self.serve.drain_timeout;
        config.held_call_timeout = self.serve.held_call_timeout;
        config.max_in_flight = self.serve.max_in_flight;
    }

    /// What differs in `next`, by the file's keys (empty: nothing).
    fn changed(&self, next: &Fixed) -> Vec<&'static str> {
        let mut keys = Vec::new();
        if self.listen != next.listen {
            keys.push("listen");
        }
        if self.admin != next.admin {
            keys.push("admin");
        }
        let (a, b) = (&self.serve, &next.serve);
        for (key, differs) in [
            ("allow_hosts", a.allow_hosts != b.allow_hosts),
            ("no_default_hosts", a.default_hosts != b.default_hosts),
            ("allow_origins", a.allow_origins != b.allow_origins),
            ("no_default_origins", a.default_origins != b.default_origins),
            ("max_body", a.max_body != b.max_body),
            ("max_sessions", a.max_sessions != b.max_sessions),
            ("idle_timeout", a.idle_timeout != b.idle_timeout),
            ("sse_retry", a.sse_retry != b.sse_retry),
            ("request_timeout", a.request_timeout != b.request_timeout),
            (
                "held_call_timeout",
                a.held_call_timeout != b.held_call_timeout,
            ),
            ("max_in_flight", a.max_in_flight != b.max_in_flight),
            ("init_timeout", a.init_timeout != b.init_timeout),
            ("drain_timeout", a.drain_timeout != b.drain_timeout),
            ("threads", a.threads != b.threads),
        ] {
            if differs {
                keys.push(key);
            }
        }
        keys
    }
}

/// The drift guards in force, by upstream name: kept across reloads (an
/// unchanged upstream keeps its guard, its lock entry reloaded in place).
type Guards = std::collections::BTreeMap<String, std::sync::Arc<switchboard_gateway::DriftGuard>>;

/// Each upstream's guard from `args.lock` (none without it), reusing those in
/// `guards`. Errors: one line each (an upstream the lock lacks, a bad lock).
fn attach_guards(
    args: &GatewayArgs,
    config: &mut GatewayConfig,
    guards: &mut Guards,
) -> Result<(), Vec<String>> {
    let Some(file) = &args.lock else {
        return Ok(());
    };
    let mode = match args.lock_mode {
        crate::bridge::LockModeArg::Block => switchboard_gateway::GuardMode::Block,
        crate::bridge::LockModeArg::Warn => switchboard_gateway::GuardMode::Warn,
    };
    // A problem of the file (its signature, its syntax, an entry whose hash
    // is wrong) is the file's: said once, naming no upstream of ours.
    let lock = crate::bridge::read_lock(file, args.lock_key.as_deref())
        .map_err(|e| vec![format!("--lock: {e}")])?;
    let mut problems = Vec::new();
    let mut entries = Vec::new();
    for u in &config.upstreams {
        match crate::bridge::lock_entry(&lock, file, Some(&u.name)) {
            Ok(entry) => entries.push(entry),
            Err(e) => problems.push(format!("--lock: {e}")),
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    for (u, entry) in config.upstreams.iter_mut().zip(entries) {
        let guard = match guards.get(&u.name) {
            Some(g) => {
                g.reload(entry);
                g.clone()
            }
            // Named in every drift line and refusal: which lock, which upstream.
            None => std::sync::Arc::new(switchboard_gateway::DriftGuard::new(
                entry,
                mode,
                format!("{}, upstream {}", file.display(), u.name),
            )),
        };
        guards.insert(u.name.clone(), guard.clone());
        u.drift_guard = Some(guard);
    }
    Ok(())
}

/// The default listen address: loopback only.
const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// The gateway's configuration from a validated file: upstream headers read
/// from the environment or files now. Errors: one line each.
fn gateway_config(file: &config::GatewayConfig) -> Result<GatewayConfig, Vec<String>> {
    let mut problems = Vec::new();
    let mut upstreams = Vec::new();
    for u in &file.upstreams {
        let mut child_mode = ChildMode::Shared;
        let connector = match &u.target {
            Target::Stdio {
                command,
                args,
                env,
                cwd,
                child,
                inherit_env,
            } => {
                child_mode = *child;
                let mut c = ChildConfig::new(u.name.clone(), command).args(args);
                if *inherit_env {
                    c.inherit = Inherit::All;
                }
                for (k, v) in env {
                    c = c.env(k, v);
                }
                // `config::load` checked the program and the directory.
                c.current_dir = cwd.clone();
                Connector::Stdio(c)
            }
            Target::Http {
                url,
                transport,
                headers,
            } => {
                let mut resolved = Vec::new();
                for (name, source) in headers {
                    let value = config::header_value(source);
                    match value {
                        Ok(v) => resolved.push((name.clone(), v)),
                        Err(e) => {
                            problems.push(format!("upstreams.{}.headers.{name}: {e}", u.name))
                        }
                    }
                }
                let mut sse = SseClientConfig::default();
                for (name, value) in &resolved {
                    match (
                        http::HeaderName::from_bytes(name.as_bytes()),
                        http::HeaderValue::from_str(value),
                    ) {
                        (Ok(n), Ok(v)) => {
                            sse.headers.append(n, v);
                        }
                        _ => problems.push(format!(
                            "upstreams.{}.headers.{name}: not a valid header",
                            u.name
                        )),
                    }
                }
                let mut streamable = HttpClientConfig::new(url.clone());
                streamable.headers = resolved;
                streamable.standalone_stream = true;
                match transport {
                    HttpTransport::Sse => Connector::Sse(url.clone(), sse),
                    // Streamable HTTP, else legacy HTTP+SSE at the same URL.
                    HttpTransport::Auto => Connector::Auto(streamable, (url.clone(), sse)),
                    // The era is found by the handshake (2026-07-28 or
                    // Streamable HTTP).
                    HttpTransport::StreamableHttp | HttpTransport::Stateless => {
                        Connector::StreamableHttp(streamable)
                    }
                }
            }
        };
        let mut g = GatewayUpstream::new(u.name.clone(), connector);
        g.prefix = u.prefix.clone();
        g.list_timeout = u.list_timeout;
        g.child = child_mode;
        // What a reload compares: how the file says to reach it (its prefix
        // and timeout are compared apart: a new prefix keeps the child), and
        // the header values as read now (a rotated token restarts the
        // upstream). Never logged.
        g.identity = format!(
            "{}|{:?}",
            serde_json::to_string(&u.target).unwrap_or_default(),
            header_values_of(&g.connector)
        );
        upstreams.push(g);
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    // The default route first: it takes the listener's main path.
    let mut routes: Vec<GatewayRoute> = file
        .routes
        .iter()
        .map(|r| {
            let mut route = GatewayRoute::new(r.name.clone(), r.path.clone(), r.upstreams.clone());
            route.tools = match &r.tools {
                Allow::All => Allowlist::All,
                Allow::Only(set) => Allowlist::only(set.iter().cloned()),
            };
            route
        })
        .collect();
    routes.sort_by_key(|r| r.path != config::DEFAULT_ROUTE_PATH);
    Ok(GatewayConfig::new(upstreams, routes))
}

/// The listener's authorization from the flags and the file: the global
/// settings (the `--auth-*` flags or the file's top-level `[auth]` table,
/// never both: which would win is not obvious, so it is an error) and each
/// route's own (`auth = false`: open; a table: its own resource). Client
/// secrets are read from the environment now. Errors: one line each.
fn set_auth(
    args: &crate::auth_args::AuthArgs,
    file: &config::GatewayConfig,
    http: &mut switchboard_transport::http::server::HttpServerConfig,
) -> Result<(), Vec<String>> {
    let env = |var: &str| std::env::var(var).ok();
    let mut problems = Vec::new();
    let flags = args
        .resource_config(config::DEFAULT_ROUTE_PATH)
        .map_err(|e| vec![e])?;
    http.auth = match (flags, &file.auth) {
        (Some(_), Some(_)) => {
            return Err(vec![
                "the --auth-* flags and the file's top-level [auth] table both give the global authorization settings: keep one".into(),
            ])
        }
        (Some(flags), None) => Some(flags),
        // A table whose resource no route uses protects nothing.
        (None, Some(table)) if table.resource.is_some() => match table.resource_config(env) {
            Ok(c) => Some(c),
            Err(e) => {
                problems.push(format!("auth: {e}"));
                None
            }
        },
        (None, _) => None,
    };
    http.route_auth.clear();
    for r in &file.routes {
        match &r.auth {
            config::RouteAuth::Global => {}
            config::RouteAuth::Off => {
                http.route_auth.insert(r.path.clone(), None);
            }
            config::RouteAuth::Own(a) => match a.resource_config(env) {
                Ok(c) => {
                    http.route_auth.insert(r.path.clone(), Some(c));
                }
                Err(e) => problems.push(format!("routes.{}.auth: {e}", r.name)),
            },
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// The outbound header values an upstream is connected with.
fn header_values_of(connector: &Connector) -> Vec<(String, String)> {
    match connector {
        Connector::StreamableHttp(c) | Connector::Auto(c, _) => c.headers.clone(),
        Connector::Sse(_, c) => c
            .headers
            .iter()
            .map(|(n, v)| {
                (
                    n.to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The legacy HTTP+SSE paths served beside route `path`: the listener's
/// own for its main path, `PATH/sse` and `PATH/message` for the others.
fn gateway_legacy_paths(
    path: &str,
    http: &switchboard_transport::http::server::HttpServerConfig,
) -> Vec<String> {
    match &http.sse_path {
        None => Vec::new(),
        Some(sse) if path == http.path => vec![sse.clone(), http.message_path.clone()],
        Some(_) => {
            let base = path.trim_end_matches('/');
            vec![format!("{base}/sse"), format!("{base}/message")]
        }
    }
}

/// The files a reload reads: the configuration, and with `--lock` the lock
/// and a key given as a file (not an `ed25519:` value).
fn watched_files(args: &GatewayArgs) -> Vec<PathBuf> {
    let mut files = vec![args.config.clone()];
    files.extend(args.lock.clone());
    files.extend(crate::bridge::key_file(args.lock_key.as_deref()));
    files
}

/// How often the watched files (the configuration, the lock, its key) are
/// read to see whether they changed: 2 s.
pub(crate) const FILE_POLL: std::time::Duration = std::time::Duration::from_secs(2);

/// Reads the file again and applies it (`why`: what asked, for the log). A
/// file that is invalid, or that the gateway refuses, keeps the running
/// configuration; each problem is one line.
async fn reload(
    gateway: &mut Gateway,
    args: &GatewayArgs,
    fixed: &Fixed,
    guards: &mut Guards,
    why: &str,
) {
    let path = args.config.as_path();
    let shown = path.display();
    let refused = |lines: Vec<String>| {
        for l in lines {
            tracing::warn!("switchboard gateway: {why}: {l}");
        }
        tracing::warn!(
            "switchboard gateway: {why}: reload refused, the running configuration is kept"
        );
    };
    let file = match config::load(path) {
        Ok(f) => f,
        Err(problems) => {
            return refused(problems.iter().map(|p| format!("{shown}: {p}")).collect());
        }
    };
    let mut config = match gateway_config(&file) {
        Ok(c) => c,
        Err(problems) => {
            return refused(
                problems
                    .into_iter()
                    .map(|p| format!("{shown}: {p}"))
                    .collect(),
            )
        }
    };
    match Fixed::of(args, &file) {
        Err(problems) => return refused(problems),
        Ok(next) => {
            let changed = fixed.changed(&next);
            if !changed.is_empty() {
                return refused(vec![format!(
                    "{shown}: {} changed: a restart applies it",
                    changed.join(", ")
                )]);
            }
            fixed.apply(&mut config);
        }
    }
    if let Err(problems) = set_auth(&args.auth, &file, &mut config.http) {
        return refused(problems);
    }
    // A refused lock keeps every guard as it was.
    let mut next = guards.clone();
    if let Err(problems) = attach_guards(args, &mut config, &mut next) {
        return refused(problems);
    }
    match gateway.reload(config) {
        Ok(summary) => {
            *guards = next;
            if args.lock.is_some() {
                gateway.relist().await;
            }
            let read = match &args.lock {
                Some(lock) => format!("{shown} and {}", lock.display()),
                None => shown.to_string(),
            };
            tracing::info!("switchboard gateway: {why}: {read} reloaded: {summary}");
        }
        Err(e) => refused(vec![e]),
    }
}

/// Runs `switchboard gateway` until SIGTERM or Ctrl-C (drained, exit 0; a
/// second signal stops at once). Exit 2 when the file is invalid or the
/// listener cannot bind.
pub fn run_gateway(args: GatewayArgs) -> ExitCode {
    crate::bridge::init_tracing(args.log_format.unwrap_or(crate::telemetry::LogFormat::Text));
    let file = match config::load(&args.config) {
        Ok(c) => c,
        Err(problems) => {
            for p in &problems {
                let sep = if p.pos.is_some() { ":" } else { ": " };
                crate::telemetry::problem(format_args!("{}{sep}{p}", args.config.display()));
            }
            let n = problems.len();
            let s = if n == 1 { "" } else { "s" };
            crate::telemetry::fatal(format_args!("{}: {n} problem{s}", args.config.display()));
            return ExitCode::from(2);
        }
    };
    let mut config = match gateway_config(&file) {
        Ok(c) => c,
        Err(problems) => {
            for p in problems {
                crate::telemetry::problem(format_args!("{}: {p}", args.config.display()));
            }
            return ExitCode::from(2);
        }
    };
    let mut guards = Guards::new();
    if let Err(problems) = attach_guards(&args, &mut config, &mut guards) {
        for p in problems {
            crate::telemetry::fatal(format_args!("{p}"));
        }
        return ExitCode::from(2);
    }
    let fixed = match Fixed::of(&args, &file) {
        Ok(f) => f,
        Err(problems) => {
            for p in problems {
                crate::telemetry::fatal(format_args!("{}: {p}", args.config.display()));
            }
            return ExitCode::from(2);
        }
    };
    fixed.apply(&mut config);
    let listen = fixed.listen;
    if let (None, Some(format)) = (args.log_format, file.log_format) {
        crate::telemetry::set_log_format(format);
    }
    for note in &file.notes {
        tracing::info!("switchboard gateway: {}: {note}", args.config.display());
    }
    if let Some(lock) = &args.lock {
        tracing::info!(
            "switchboard gateway: every upstream judged against {} ({})",
            lock.display(),
            args.lock_mode.said()
        );
    }
    if let Err(problems) = set_auth(&args.auth, &file, &mut config.http) {
        for p in problems {
            crate::telemetry::fatal(format_args!("{p}"));
        }
        return ExitCode::from(2);
    }
    // Routes served without authorization: their own `auth = false`, or
    // none of their own and no global settings.
    let open: Vec<&str> = config
        .routes
        .iter()
        .map(|r| r.path.as_str())
        .filter(|p| match config.http.route_auth.get(*p) {
            Some(own) => own.is_none(),
            None => config.http.auth.is_none(),
        })
        .collect();
    // Each open route's legacy HTTP+SSE endpoints are as open.
    let legacy: Vec<String> = match &config.http.sse_path {
        Some(_) => open
            .iter()
            .flat_map(|p| gateway_legacy_paths(p, &config.http))
            .collect(),
        None => Vec::new(),
    };
    let mut open = open;
    open.extend(legacy.iter().map(String::as_str));
    for warning in crate::serve_args::exposure_warnings(listen, &open, config.http.admin) {
        tracing::warn!("{warning}");
    }
    let runtime = match fixed.serve.runtime() {
        Ok(r) => r,
        Err(e) => {
            crate::telemetry::fatal(format_args!("cannot start the runtime: {e}"));
            return ExitCode::from(2);
        }
    };
    runtime.block_on(async move {
        let mut signals =
            match Signals::watch(&[Stop::Interrupt, Stop::Terminate], Inherited::Overridden) {
                Ok(s) => s,
                Err(e) => {
                    crate::telemetry::fatal(format_args!("cannot watch signals: {e}"));
                    return ExitCode::from(2);
                }
            };
        // SIGHUP reloads the file: watched from here on, so that it is never
        // the default action (the end of the process).
        let mut hup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
            Ok(h) => h,
            Err(e) => {
                crate::telemetry::fatal(format_args!("cannot watch SIGHUP: {e}"));
                return ExitCode::from(2);
            }
        };
        let paths: Vec<String> = config.routes.iter().map(|r| r.path.clone()).collect();
        crate::telemetry::start_traces();
        let trail = args.audit.config(file.audit.as_ref().map(|a| a.to_config()).as_ref());
        if let Err(e) = crate::audit::start(trail, config.http.admin.is_some()) {
            crate::telemetry::fatal(e);
            return ExitCode::from(2);
        }
        let mut gateway = match Gateway::start(config).await {
            Ok(g) => g,
            Err(e) => {
                crate::telemetry::fatal(format_args!("cannot listen on {listen}: {e}"));
                return ExitCode::from(2);
            }
        };
        let n = file.upstreams.len();
        let mut lines = vec![format!(
            "switchboard gateway: {n} upstream{} from {}",
            if n == 1 { "" } else { "s" },
            args.config.display()
        )];
        let mut endpoints = Vec::new();
        for p in &paths {
            let url = gateway.url_of(p);
            lines.push(format!("switchboard gateway: route {p} at {url}"));
            endpoints.push((format!("route {p}"), url));
        }
        let base = format!("http://{}", gateway.local_addr());
        lines.push(format!(
            "switchboard gateway: health at {base}/healthz, readiness at {base}/readyz"
        ));
        if let Some(admin) = gateway.admin_addr() {
            endpoints.push(("admin".to_owned(), format!("http://{admin}")));
            lines.push(format!(
                "switchboard gateway: admin at http://{admin}/metrics (and /ui, /healthz, /readyz)"
            ));
        }
        crate::telemetry::banner(&endpoints, &lines);
        // A changed file (the configuration, the lock, the lock's key) is
        // applied like SIGHUP (a ConfigMap update): their bytes compared
        // every FILE_POLL.
        let mut watched = crate::files::Watched::new(watched_files(&args));
        let mut poll = tokio::time::interval(FILE_POLL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = signals.next() => break,
                _ = hup.recv() => {
                    watched.seen_now();
                    reload(&mut gateway, &args, &fixed, &mut guards, "SIGHUP").await;
                }
                _ = poll.tick() => {
                    if let Some(why) = watched.changed() {
                        reload(&mut gateway, &args, &fixed, &mut guards, &why).await;
                    }
                }
            }
        }
        tracing::info!("switchboard gateway: stopping (draining requests in flight; a second signal stops at once)");
        let code = tokio::select! {
            () = gateway.shutdown() => ExitCode::SUCCESS,
            stop = signals.next() => {
                tracing::warn!("switchboard gateway: second signal: stopped at once");
                crate::audit::stop(std::time::Duration::from_millis(500)).await;
                return ExitCode::from(stop.exit_code());
            }
        };
        crate::audit::stop(std::time::Duration::from_secs(2)).await;
        crate::telemetry::stop_traces().await;
        code
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(argv: &[&str]) -> GatewayArgs {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Wrap {
            #[command(flatten)]
            args: GatewayArgs,
        }
        let mut all = vec!["gateway", "--config", "g.toml"];
        all.extend_from_slice(argv);
        Wrap::parse_from(all).args
    }

    fn file(text: &str) -> config::GatewayConfig {
        config::parse(
            text,
            config::Format::Toml,
            &config::Env::process(std::path::PathBuf::from("/")),
        )
        .expect("a valid file")
    }

    #[test]
    fn a_reload_may_not_change_the_listeners() {
        let base = "[upstreams.a]\ncommand = \"sh\"\n";
        let running = Fixed::of(&args(&[]), &file(base)).unwrap();
        assert_eq!(running.listen.to_string(), DEFAULT_LISTEN);
        let changes = |text: &str, argv: &[&str]| {
            let next = Fixed::of(&args(argv), &file(&format!("{text}{base}"))).unwrap();
            Fixed::of(&args(argv), &file(base)).unwrap().changed(&next)
        };
        assert_eq!(changes("listen = \"0.0.0.0:9000\"\n", &[]), ["listen"]);
        assert_eq!(changes("admin = 9464\n", &[]), ["admin"]);
        assert_eq!(changes("max_sessions = 5\n", &[]), ["max_sessions"]);
        assert_eq!(
            changes("idle_timeout = \"1m\"\nthreads = 2\n", &[]),
            ["idle_timeout", "threads"]
        );
        // What a flag sets, the file cannot change.
        let flags = ["--listen", "127.0.0.1:7000", "--max-sessions", "9"];
        assert!(changes("listen = \"0.0.0.0:9000\"\nmax_sessions = 5\n", &flags).is_empty());
        assert!(running.changed(&running.clone()).is_empty());
    }
}
