//! The terminal MCP client: `switchboard tools list|call`, `resources
//! list|templates|read`, `prompts list|get` and `ping`, against a server given as a
//! TARGET: an `http(s)://` URL, or `-- CMD [ARGS...]` for a stdio server started as
//! a child process (MCP "Transports → stdio"; shut down by closing its stdin, then
//! SIGTERM, then SIGKILL).
//!
//! Every command connects with [`switchboard::Client`] (for a stdio server the
//! legacy handshake, REVISIONS.md §3, and `server/discover` only when the server
//! refuses it, so a server that speaks only 2026-07-28 works too; for a URL the
//! HTTP rules of §6; see `--era`), makes its requests through the library (never
//! raw JSON-RPC), prints, and disconnects.
//!
//! Output:
//! - stdout: tables sized to their content by default; with `--json`, the result
//!   JSON exactly as the server sent it, one line per result (a listing that took
//!   several pages prints `{"tools": [...]}` — or `resources`, `resourceTemplates`,
//!   `prompts` — with every page's items instead);
//! - stderr: progress (`notifications/progress`) as a bar when stderr is a terminal,
//!   else one `progress: P/T message` line per notification; the server's log
//!   messages (`notifications/message`) as `[LEVEL] data`; `--quiet` silences both;
//!   an argument of a listed tool that its `inputSchema` does not declare as
//!   `switchboard: warning: ...` (before the call); a failure as one line
//!   `switchboard: ...` (a tool's `isError` says so without repeating the
//!   content, which is on stdout).
//!
//! Exit status ([`EXIT_OK`], [`EXIT_TOOL_ERROR`], [`EXIT_FAILURE`]): 0 on success, 1
//! when the tool returned `isError: true`, 2 on a protocol or transport error (the
//! server cannot be started or reached, it answered a JSON-RPC error, it timed out,
//! an unknown tool, bad arguments); 128 + the signal's number when a signal ended
//! it (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP: [`Stop::exit_code`]).
//!
//! **Signals** ([`crate::signals`], watched from before the server is started or
//! reached until exit; one inherited as ignored stays ignored). Ctrl-C, SIGTERM or
//! SIGHUP cancels the request in flight (`notifications/cancelled`) and closes: a
//! stdio server is shut down in the spec's order (at most [`CHILD_GRACE`] per
//! step), an HTTP session deleted (at most [`CLOSE_BOUND`]). A second signal at any
//! point while closing kills the stdio server at once (SIGKILL to its process
//! group) or abandons the `DELETE`.
//!
//! **Sampling and elicitation.** This client declares neither capability (nor
//! `roots`): it has no model and, in non-interactive use, no human to ask. A
//! conforming server therefore never sends `sampling/createMessage` or
//! `elicitation/create` to it; a tool that needs them fails (typically with
//! `isError`), and a server that asks anyway is answered -32601 by the library.
//!
//! **Authorization.** A URL target that answers 401 is logged in to through the
//! browser, and a stored login (`switchboard auth login`) is used first
//! ([`crate::auth::oauth_for`]; `--no-login`, `--login-timeout`, `--auth-file`),
//! unless `--header` gives an `Authorization` of its own.
//!
//! This module must not know about framing, sockets or JSON-RPC ids (the library's
//! and the transport's business).

pub mod args;
pub mod lock;
pub mod render;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use switchboard::client::{EraPolicy, HttpClientConfig};
use switchboard::{CallOptions, Client, ClientOptions};
use switchboard_protocol::types::{
    CallToolRequestParams, CallToolResult, GetPromptRequestParams, Implementation, LoggingLevel,
    PaginatedRequestParams, ReadResourceRequestParams, ServerNotification, SERVER_DISCOVER,
};
use switchboard_protocol::version::Era;
use switchboard_transport::stdio::{spawn, ChildConfig, ChildProcess, ChildTransport};
use switchboard_transport::{error_chain, Transport, TransportConfig};

use crate::signals::{Inherited, Signals, Stop};

/// Exit status: success.
pub const EXIT_OK: u8 = 0;
/// Exit status: the tool returned `isError: true` ("Tools" → "Error Handling").
pub const EXIT_TOOL_ERROR: u8 = 1;
/// Exit status: a protocol or transport error, or bad command-line input.
pub const EXIT_FAILURE: u8 = 2;

/// How long a stdio child gets after its stdin is closed, and then after SIGTERM,
/// before the next step of the shutdown.
const CHILD_GRACE: Duration = Duration::from_secs(2);

/// Options every client command that prints a server's results takes:
/// `--json`, and how to reach the server ([`ConnectArgs`], which it derefs
/// to).
#[derive(Debug, Clone, clap::Args)]
pub struct CommonArgs {
    /// Print the result JSON exactly as received instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

impl std::ops::Deref for CommonArgs {
    type Target = ConnectArgs;
    fn deref(&self) -> &ConnectArgs {
        &self.connect
    }
}

impl std::ops::DerefMut for CommonArgs {
    fn deref_mut(&mut self) -> &mut ConnectArgs {
        &mut self.connect
    }
}

/// How a client command reaches the server: every client command takes
/// these (the `lock` commands without `--json`, which they do not print).
#[derive(Debug, Clone, clap::Args)]
pub struct ConnectArgs {
    /// How long to wait for each answer, in seconds (fractions allowed); a progress
    /// notification restarts the wait (up to ten minutes in all, or the timeout if
    /// longer).
    #[arg(long, value_name = "SECONDS", default_value = "60", value_parser = parse_seconds)]
    pub timeout: Duration,
    /// No progress and no server log lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Ask the server to send only log messages at or above LEVEL (debug, info,
    /// notice, warning, error, critical, alert, emergency): `logging/setLevel`, or in
    /// 2026-07-28 the level in each request's `_meta`. Default: the server's own
    /// choice (legacy), every level (2026-07-28, where none means no logs).
    #[arg(long, value_name = "LEVEL")]
    pub log_level: Option<LoggingLevel>,
    /// Which protocol era to speak: `legacy-first` sends `initialize` and, only
    /// when the server answers it with an error (as a server that speaks only
    /// 2026-07-28 does), asks `server/discover` and speaks 2026-07-28 if that
    /// succeeds; `auto` probes with `server/discover` (2026-07-28) first and falls
    /// back to `initialize`; `legacy` uses `initialize` only (2024-11-05 to
    /// 2025-11-25); `modern` uses 2026-07-28 only. Default: `auto` for a URL
    /// (where `legacy-first` means `auto` too: the HTTP rules are cached per
    /// origin), `legacy-first` for a stdio command.
    #[arg(long, value_enum, value_name = "ERA")]
    pub era: Option<EraArg>,
    /// An HTTP header sent with every request to a URL target, `NAME: VALUE` (e.g.
    /// `Authorization: Bearer ...`). Repeatable.
    #[arg(long, value_name = "NAME: VALUE")]
    pub header: Vec<String>,
    /// MCP authorization for a URL target: a stored login (`switchboard auth
    /// login`) is used, and a 401 logs in through the browser.
    #[command(flatten)]
    pub login: crate::auth::LoginArgs,
    /// The stdio server to start: `-- CMD [ARGS...]` (instead of a URL).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
    /// A stdio server's environment and working directory beyond the
    /// command line's (set for an upstream of a gateway configuration:
    /// `lock --config`); not flags.
    #[arg(skip)]
    pub child_env: Vec<(String, String)>,
    #[arg(skip)]
    pub child_cwd: Option<std::path::PathBuf>,
    /// The stdio server gets only the safe set of our environment, as the
    /// bridge and the gateway start it (`switchboard lock`, always: an
    /// upstream of `--config` unless its `inherit_env`); else all of it, as
    /// the command run from this shell would (`tools`, `resources`, …).
    #[arg(skip)]
    pub child_safe_env: bool,
}

/// `--era`: which era the client speaks (spec notes §6, connecting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EraArg {
    /// `server/discover` first, then `initialize`.
    Auto,
    /// `initialize` only (2024-11-05 to 2025-11-25).
    Legacy,
    /// `initialize`, then `server/discover` only if the server refused it with an
    /// error (the default for a stdio command; `auto` for a URL).
    LegacyFirst,
    /// `server/discover` only (2026-07-28).
    Modern,
}

impl From<EraArg> for EraPolicy {
    fn from(e: EraArg) -> Self {
        match e {
            EraArg::Auto => EraPolicy::Auto,
            EraArg::Legacy => EraPolicy::Legacy,
            EraArg::LegacyFirst => EraPolicy::LegacyFirst,
            EraArg::Modern => EraPolicy::Modern,
        }
    }
}

/// `--timeout`: a positive, finite number of seconds (0 would fail every request
/// before it was sent, so it is refused here with a clear message).
fn parse_seconds(s: &str) -> Result<Duration, String> {
    // clap names the value given before each message.
    let secs: f64 = s
        .parse()
        .map_err(|_| "not a number of seconds (e.g. 30 or 2.5)".to_owned())?;
    match Duration::try_from_secs_f64(secs) {
        Ok(d) if d.is_zero() => Err("the timeout must be more than 0 seconds".to_owned()),
        Ok(d) => Ok(d),
        Err(_) => Err("the timeout must be a positive, finite number of seconds".to_owned()),
    }
}

/// `switchboard tools ...`.
#[derive(Debug, clap::Subcommand)]
pub enum ToolsCommand {
    /// List the server's tools (`tools/list`, every page).
    List {
        /// The server's URL (`http://` or `https://`); omit it when giving `-- CMD`.
        #[arg(value_name = "URL")]
        url: Option<String>,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Call a tool (`tools/call`) and print its result.
    #[command(
        override_usage = "switchboard tools call [OPTIONS] URL NAME\n       switchboard tools call [OPTIONS] NAME -- CMD [ARGS]..."
    )]
    Call {
        /// `[URL] NAME`: the server's URL (omit it when giving `-- CMD`) and the
        /// tool's name.
        #[arg(value_names = ["URL", "NAME"], required = true, num_args = 1..=2)]
        operands: Vec<String>,
        /// One argument, KEY=VALUE; the value is read by the type the tool's
        /// inputSchema declares (integer, number, boolean, object and array as JSON;
        /// a string stays a string). Repeatable; overrides keys of --args.
        #[arg(long = "arg", value_name = "KEY=VALUE")]
        arg: Vec<String>,
        /// All arguments as one JSON object; `@FILE` reads it from FILE, `-`
        /// from stdin (for large arguments). Checked before sending, when the
        /// server lists the tool: an argument its inputSchema does not declare
        /// is warned of (refused, exit 2, when the schema says
        /// `additionalProperties: false`), a required one missing is refused.
        #[arg(long = "args", value_name = "JSON|@FILE|-")]
        args: Option<String>,
        #[command(flatten)]
        common: CommonArgs,
    },
}

/// `switchboard resources ...`.
#[derive(Debug, clap::Subcommand)]
pub enum ResourcesCommand {
    /// List the server's resources (`resources/list`, every page).
    List {
        /// The server's URL; omit it when giving `-- CMD`.
        #[arg(value_name = "URL")]
        url: Option<String>,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// List the server's resource templates (`resources/templates/list`).
    Templates {
        /// The server's URL; omit it when giving `-- CMD`.
        #[arg(value_name = "URL")]
        url: Option<String>,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Read a resource (`resources/read`): text as is, binary as a summary line
    /// (or its bytes into a file with --output).
    #[command(
        override_usage = "switchboard resources read [OPTIONS] URL URI\n       switchboard resources read [OPTIONS] URI -- CMD [ARGS]..."
    )]
    Read {
        /// `[URL] URI`: the server's URL (omit it when giving `-- CMD`) and the
        /// resource's URI.
        #[arg(value_names = ["URL", "URI"], required = true, num_args = 1..=2)]
        operands: Vec<String>,
        /// Write the contents (text, or a blob's decoded bytes) to FILE instead of
        /// printing them; the result must hold exactly one contents item.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
        #[command(flatten)]
        common: CommonArgs,
    },
}

/// `switchboard prompts ...`.
#[derive(Debug, clap::Subcommand)]
pub enum PromptsCommand {
    /// List the server's prompts (`prompts/list`, every page).
    List {
        /// The server's URL; omit it when giving `-- CMD`.
        #[arg(value_name = "URL")]
        url: Option<String>,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Get a prompt (`prompts/get`) with arguments and print its messages.
    #[command(
        override_usage = "switchboard prompts get [OPTIONS] URL NAME\n       switchboard prompts get [OPTIONS] NAME -- CMD [ARGS]..."
    )]
    Get {
        /// `[URL] NAME`: the server's URL (omit it when giving `-- CMD`) and the
        /// prompt's name.
        #[arg(value_names = ["URL", "NAME"], required = true, num_args = 1..=2)]
        operands: Vec<String>,
        /// One argument, KEY=VALUE (prompt arguments are strings). Repeatable;
        /// overrides keys of --args.
        #[arg(long = "arg", value_name = "KEY=VALUE")]
        arg: Vec<String>,
        /// All arguments as one JSON object of strings; `@FILE` reads it from
        /// FILE, `-` from stdin.
        #[arg(long = "args", value_name = "JSON|@FILE|-")]
        args: Option<String>,
        #[command(flatten)]
        common: CommonArgs,
    },
}

/// `switchboard ping`.
#[derive(Debug, clap::Args)]
pub struct PingArgs {
    /// The server's URL; omit it when giving `-- CMD`.
    #[arg(value_name = "URL")]
    pub url: Option<String>,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Why a command did not succeed: the exit status and the one line for stderr.
#[derive(Debug)]
pub struct Failure {
    /// [`EXIT_TOOL_ERROR`], [`EXIT_FAILURE`], or a signal's [`Stop::exit_code`].
    pub code: u8,
    /// The message, without the `switchboard: ` prefix.
    pub message: String,
}

impl Failure {
    fn new(message: impl Into<String>) -> Self {
        Failure {
            code: EXIT_FAILURE,
            message: message.into(),
        }
    }

    /// The command was ended by `stop` (Ctrl-C, SIGTERM, SIGHUP).
    fn stopped(stop: Stop) -> Self {
        Failure {
            code: stop.exit_code(),
            message: stop.message().to_owned(),
        }
    }
}

impl From<switchboard::Error> for Failure {
    fn from(e: switchboard::Error) -> Self {
        Failure::new(error_chain(&e))
    }
}

/// Where the server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// An `http://` or `https://` URL.
    Url(String),
    /// A stdio server's command and arguments.
    Command(Vec<String>),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Url(u) => f.write_str(u),
            Target::Command(c) => write!(f, "`{}`", c.join(" ")),
        }
    }
}

/// Whether `s` starts with `http://` or `https://`, in any case (a URL's scheme
/// is case-insensitive, RFC 3986 §3.1).
fn is_url(s: &str) -> bool {
    let starts = |prefix: &str| {
        s.get(..prefix.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
    };
    starts("http://") || starts("https://")
}

/// Splits the positional operands into the target and the `wanted` operands after
/// it: with `-- CMD`, the operands are exactly `wanted`; without, the first is a URL
/// and the rest are `wanted`. Errors: one line saying what is missing or extra.
pub fn resolve_target(
    mut operands: Vec<String>,
    command: Vec<String>,
    wanted: &[&str],
) -> Result<(Target, Vec<String>), Failure> {
    if !command.is_empty() {
        if operands.len() > wanted.len() {
            return Err(Failure::new(format!(
                "unexpected argument {:?}: give either a URL or `-- CMD [ARGS...]`, not both",
                operands[0]
            )));
        }
        if operands.len() < wanted.len() {
            return Err(Failure::new(format!(
                "missing {}",
                wanted[operands.len()..].join(" and ")
            )));
        }
        return Ok((Target::Command(command), operands));
    }
    match operands.first() {
        Some(u) if is_url(u) => {}
        Some(other) => {
            return Err(Failure::new(format!(
                "{other:?} is not an http(s):// URL; to start a stdio server put its command after `--`"
            )))
        }
        None => {
            return Err(Failure::new(
                "no server given: a URL (http:// or https://) or `-- CMD [ARGS...]`",
            ))
        }
    }
    if operands.len() != wanted.len() + 1 {
        return Err(Failure::new(if operands.len() <= wanted.len() {
            format!("missing {}", wanted[operands.len() - 1..].join(" and "))
        } else {
            format!("unexpected argument {:?}", operands[wanted.len() + 1])
        }));
    }
    let url = operands.remove(0);
    Ok((Target::Url(url), operands))
}

/// What the user sees on stderr while a command runs: progress and server logs,
/// drawn around the progress bar when there is one.
struct Ui {
    quiet: bool,
    terminal: bool,
    bar: Mutex<Option<ProgressBar>>,
}

/// Progress positions are kept in thousandths, so fractional progress shows.
const BAR_SCALE: f64 = 1000.0;

impl Ui {
    fn new(quiet: bool) -> Arc<Self> {
        Arc::new(Ui {
            quiet,
            terminal: std::io::stderr().is_terminal(),
            bar: Mutex::new(None),
        })
    }

    fn bar(&self) -> std::sync::MutexGuard<'_, Option<ProgressBar>> {
        self.bar.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Prints one line to stderr (above the bar, if one is drawn), with terminal
    /// controls made visible ([`render::printable`]): it carries a server's text.
    fn line(&self, line: &str) {
        if self.quiet {
            return;
        }
        let line = render::printable(line);
        match &*self.bar() {
            Some(bar) => bar.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }

    fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if self.quiet {
            return;
        }
        if !self.terminal {
            eprintln!(
                "{}",
                render::printable(&render::progress_line(progress, total, message))
            );
            return;
        }
        let mut slot = self.bar();
        let bar = slot.get_or_insert_with(|| {
            let bar = ProgressBar::new(0);
            let style = match total {
                Some(_) => ProgressStyle::with_template("{bar:40.cyan/blue} {percent:>3}% {msg}"),
                None => ProgressStyle::with_template("{spinner} {msg}"),
            };
            if let Ok(style) = style {
                bar.set_style(style);
            }
            bar
        });
        if let Some(t) = total {
            bar.set_length((t.max(0.0) * BAR_SCALE) as u64);
            bar.set_position((progress.max(0.0) * BAR_SCALE) as u64);
        } else {
            bar.tick();
        }
        let msg = match (message, total) {
            // A message is one line of the bar: newlines too become visible.
            (Some(m), _) => render::printable(m).replace('\n', "\\n").replace('\t', " "),
            (None, Some(t)) => format!("{progress}/{t}"),
            (None, None) => format!("{progress}"),
        };
        bar.set_message(msg);
    }

    fn finish(&self) {
        if let Some(bar) = self.bar().take() {
            bar.finish_and_clear();
        }
    }
}

/// How long ending an HTTP session (its `DELETE`) may take before the command
/// exits anyway.
const CLOSE_BOUND: Duration = Duration::from_secs(3);

/// How long the messages queued for a stdio server (a cancellation) may take to
/// be written before its stdin is closed anyway.
const FLUSH_BOUND: Duration = Duration::from_secs(1);

/// A connected client and, for a stdio target, its child process.
struct Connection {
    client: Client,
    child: Option<ChildProcess>,
}

impl Connection {
    /// Disconnects: a URL's session is ended (its `DELETE` sent, at most
    /// [`CLOSE_BOUND`]), or what is queued for the child is written (at most
    /// [`FLUSH_BOUND`]), the client dropped (closing the child's stdin) and the
    /// child shut down in the spec's order and reaped. A signal at any point
    /// meanwhile cuts it short: the `DELETE` is abandoned, the child killed at once.
    async fn close(self, signals: &mut Signals) {
        let Connection { client, child } = self;
        let Some(child) = child else {
            tokio::select! {
                closed = tokio::time::timeout(CLOSE_BOUND, client.close()) => {
                    if closed.is_err() {
                        tracing::debug!("the session did not close in time");
                    }
                }
                stop = signals.next() => tracing::debug!("{} again: the session is not deleted", stop.message()),
            }
            return;
        };
        // What is queued for the server goes out before its stdin closes: above
        // all the `notifications/cancelled` of a call a signal interrupted (queued
        // when the call's future was dropped), which is the only way to cancel a
        // call over stdio. Bounded; a signal cuts it short and, as it is the
        // user's second, the shutdown too (it is not waited for again there).
        let ending = tokio::select! {
            flushed = tokio::time::timeout(FLUSH_BOUND, client.peer().flush()) => {
                if !matches!(flushed, Ok(true)) {
                    tracing::debug!("the server's stdin did not take what was queued");
                }
                Ending::InOrder
            }
            stop = signals.next() => {
                tracing::debug!("{} again: not waiting to write to the server", stop.message());
                Ending::AtOnce
            }
        };
        drop(client);
        shut_down(child, signals, ending).await;
    }
}

/// How a stdio server is ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// In the spec's order (stdin closed, SIGTERM, SIGKILL, [`CHILD_GRACE`]
    /// apart), unless a signal comes meanwhile.
    InOrder,
    /// At once (SIGKILL to its process group): the user already asked twice.
    AtOnce,
}

/// Shuts a stdio server down as `ending` says and reaps it; a signal meanwhile
/// (the user's second Ctrl-C) kills it at once instead of waiting out its
/// graces.
async fn shut_down(child: ChildProcess, signals: &mut Signals, ending: Ending) {
    let switch = child.kill_switch();
    if ending == Ending::AtOnce {
        tracing::debug!("killing the server process");
        switch.kill();
    }
    let shutdown = child.shutdown();
    tokio::pin!(shutdown);
    let report = tokio::select! {
        report = &mut shutdown => report,
        stop = signals.next(), if ending == Ending::InOrder => {
            tracing::debug!("{} again: killing the server process", stop.message());
            switch.kill();
            shutdown.await
        }
    };
    match report {
        Ok(report) => tracing::debug!(%report, "server process ended"),
        Err(e) => tracing::warn!(error = %e, "server process shutdown failed"),
    }
}

fn client_options(common: &ConnectArgs, ui: &Arc<Ui>) -> ClientOptions {
    let mut options = ClientOptions::new(Implementation::new(
        "switchboard-cli",
        env!("CARGO_PKG_VERSION"),
    ));
    options.default_timeout = common.timeout;
    if let Some(era) = common.era {
        options = options.with_era(era.into());
    }
    options.max_timeout = options.max_timeout.max(common.timeout);
    // The 2026-07-28 probe waits no longer than any other answer: a server that
    // never answers fails in about --timeout per step, not 10 s more.
    options.probe_timeout = options.probe_timeout.min(common.timeout);
    let ui = ui.clone();
    options.with_notifications(move |n| match n {
        ServerNotification::LoggingMessage(p) => ui.line(&render::log_line(
            &serde_json::to_value(&p).unwrap_or_default(),
        )),
        other => tracing::debug!(method = other.method(), "server notification"),
    })
}

/// Connects to an `http(s)://` URL with the library's HTTP client
/// ([`Client::connect_url`]: 2026-07-28 first, then Streamable HTTP, then legacy
/// HTTP+SSE), sending `headers` (`--header`) with every HTTP request, and,
/// unless they hold an `Authorization`, with MCP authorization
/// ([`crate::auth::oauth_for`]: the stored login, a browser login on a 401).
async fn connect_target(
    url: &str,
    options: ClientOptions,
    common: &ConnectArgs,
) -> Result<Client, Failure> {
    let mut config = HttpClientConfig::new(url);
    config.connect_timeout = common.timeout;
    for h in &common.header {
        let (k, v) = h
            .split_once(':')
            .ok_or_else(|| Failure::new(format!("--header {h:?}: expected NAME: VALUE")))?;
        config
            .headers
            .push((k.trim().to_owned(), v.trim().to_owned()));
    }
    if !crate::auth::has_authorization(&config.headers) {
        let auth = crate::auth::oauth_for(url, &common.login)
            .await
            .map_err(|e| Failure::new(format!("cannot connect to {url}: {e}")))?;
        config.auth = Some(auth);
    }
    Client::connect_url(url, options, config)
        .await
        .map_err(|e| {
            let mut message = format!("cannot connect to {url}: {}", error_chain(&e));
            if http_status(&e) == Some(404) {
                if let Some(endpoint) = mcp_endpoint_hint(url) {
                    message.push_str(&format!(" (did you mean {endpoint}?)"));
                }
            }
            Failure::new(message)
        })
}

/// The HTTP status an error of the HTTP transport carries (`data.httpStatus`
/// of its -32000), if any.
fn http_status(e: &switchboard::Error) -> Option<u64> {
    let data = e.error_object()?.data.as_ref()?;
    serde_json::from_str::<Value>(data.get())
        .ok()?
        .get("httpStatus")?
        .as_u64()
}

/// For a URL that got 404: the same URL with `/mcp` appended to its path,
/// the MCP endpoint's usual place (`http://127.0.0.1:8080` →
/// `http://127.0.0.1:8080/mcp`); `None` when the path already has an `mcp`
/// segment (`/mcp`, `/mcp/`, `/mcp/x`: that guess is no better) or the URL
/// does not parse.
fn mcp_endpoint_hint(url: &str) -> Option<String> {
    let mut parsed = url::Url::parse(url).ok()?;
    let path = parsed.path().trim_end_matches('/');
    if path.split('/').any(|segment| segment == "mcp") {
        return None;
    }
    let path = format!("{path}/mcp");
    parsed.set_path(&path);
    parsed.set_fragment(None);
    Some(parsed.to_string())
}

/// The most `--args @FILE` or `--args -` reads: 64 MiB.
const MAX_ARGS_BYTES: u64 = 64 << 20;

/// The JSON of `--args VALUE`: the value itself, FILE's contents for `@FILE`,
/// stdin's to its end for `-` ([`args::args_source`]). Errors name the file.
fn read_args(value: Option<String>) -> Result<Option<args::ArgsJson>, Failure> {
    use std::io::Read;
    let Some(value) = value else {
        return Ok(None);
    };
    let (origin, read) = match args::args_source(&value) {
        args::ArgsSource::Inline(text) => return Ok(Some(args::ArgsJson::inline(text))),
        args::ArgsSource::File(path) => (
            format!("--args @{}", path.display()),
            std::fs::File::open(&path).and_then(|f| {
                let mut bytes = Vec::new();
                f.take(MAX_ARGS_BYTES + 1).read_to_end(&mut bytes)?;
                Ok(bytes)
            }),
        ),
        args::ArgsSource::Stdin => ("--args - (stdin)".to_owned(), {
            let mut bytes = Vec::new();
            std::io::stdin()
                .lock()
                .take(MAX_ARGS_BYTES + 1)
                .read_to_end(&mut bytes)
                .map(|_| bytes)
        }),
    };
    let bytes = read.map_err(|e| Failure::new(format!("{origin}: cannot read it: {e}")))?;
    if bytes.len() as u64 > MAX_ARGS_BYTES {
        return Err(Failure::new(format!(
            "{origin}: larger than {MAX_ARGS_BYTES} bytes"
        )));
    }
    let text = String::from_utf8(bytes)
        .map_err(|e| Failure::new(format!("{origin}: not UTF-8 text ({e})")))?;
    Ok(Some(args::ArgsJson { origin, text }))
}

/// Connects to `target`; a signal (Ctrl-C, SIGTERM, SIGHUP: see [`Signals`])
/// abandons the handshake with its message, after a stdio child has been shut
/// down in the spec's order (never left running; a second signal kills it).
async fn connect(
    target: &Target,
    options: ClientOptions,
    common: &ConnectArgs,
    signals: &mut Signals,
) -> Result<Connection, Failure> {
    match target {
        Target::Url(url) => tokio::select! {
            client = connect_target(url, options, common) => Ok(Connection {
                client: client?,
                child: None,
            }),
            stop = signals.next() => Err(Failure::stopped(stop)),
        },
        Target::Command(_) if !common.header.is_empty() => Err(Failure::new(
            "--header applies to a URL target; a stdio server (-- CMD) has no HTTP headers",
        )),
        Target::Command(command) => {
            let mut config = ChildConfig::new(&command[0], &command[0]).args(&command[1..]);
            for (k, v) in &common.child_env {
                config = config.env(k, v);
            }
            config.current_dir = common.child_cwd.clone();
            config.inherit = match common.child_safe_env {
                true => switchboard_transport::stdio::Inherit::Safe,
                false => switchboard_transport::stdio::Inherit::All,
            };
            config.shutdown.stdin_close_grace = CHILD_GRACE;
            config.shutdown.sigterm_grace = CHILD_GRACE;
            let ChildTransport {
                sender,
                receiver,
                process,
            } = spawn(config, &TransportConfig::default())
                .map_err(|e| Failure::new(error_chain(&e)))?;
            let handshake = tokio::select! {
                r = Client::connect(Transport { sender, receiver }, options) => r.map_err(|e| {
                    Failure::new(format!("cannot connect to {target}: {}", error_chain(&e)))
                }),
                stop = signals.next() => Err(Failure::stopped(stop)),
            };
            match handshake {
                Ok(client) => Ok(Connection {
                    client,
                    child: Some(process),
                }),
                Err(failure) => {
                    let failure = with_skipped(failure, &process);
                    shut_down(process, signals, Ending::InOrder).await;
                    Err(failure)
                }
            }
        }
    }
}

/// Writes `text` to stdout; a closed stdout (`| head`) is not an error.
fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// [`out`] for a server's text shown to a person (a tool result, resource text, a
/// prompt): on a terminal its controls are made visible ([`render::printable`]);
/// into a pipe or file it goes out exactly as received.
fn out_text(text: &str) {
    if std::io::stdout().is_terminal() {
        out(&render::printable(text));
    } else {
        out(text);
    }
}

fn to_raw(v: &impl serde::Serialize) -> Result<Option<Box<RawValue>>, Failure> {
    serde_json::value::to_raw_value(v)
        .map(Some)
        .map_err(|e| Failure::new(format!("cannot encode the request: {e}")))
}

fn parse(raw: &RawValue) -> Result<Value, Failure> {
    serde_json::from_str(raw.get())
        .map_err(|e| Failure::new(format!("the server's result is not JSON: {e}")))
}

/// The array `key` of `method`'s `result`, which every revision's schema requires
/// (`tools`, `resources`, `resourceTemplates`, `prompts`, `contents`, `messages`).
/// Errors: a protocol error naming the method, never an empty listing.
fn required_array<'a>(result: &'a Value, method: &str, key: &str) -> Result<&'a [Value], Failure> {
    result
        .get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .ok_or_else(|| {
            Failure::new(format!(
                "{method}: the server's result has no {key:?} array (a malformed result)"
            ))
        })
}

/// Runs `method` (a paginated list) to the end. Returns each page's raw result and
/// every item of `key`, in order. Errors: the server's, or more than 100 pages.
async fn list_pages(
    client: &Client,
    method: &str,
    key: &str,
) -> Result<(Vec<Box<RawValue>>, Vec<Value>), Failure> {
    const MAX_PAGES: usize = 100;
    let mut pages = Vec::new();
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = match cursor.take() {
            None => None,
            Some(c) => to_raw(&PaginatedRequestParams {
                cursor: Some(c),
                ..Default::default()
            })?,
        };
        let raw = client
            .request(method, params, CallOptions::default())
            .await?;
        let page = parse(&raw)?;
        items.extend(required_array(&page, method, key)?.iter().cloned());
        pages.push(raw);
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(c) => cursor = Some(c.to_owned()),
            None => return Ok((pages, items)),
        }
    }
    Err(Failure::new(format!(
        "{method}: more than {MAX_PAGES} pages"
    )))
}

/// Prints a listing: the raw page (one page) or every item under `key` (several)
/// with `--json`, else the table.
fn print_listing(
    json: bool,
    key: &str,
    pages: Vec<Box<RawValue>>,
    items: &[Value],
    table: fn(&[Value]) -> String,
) {
    if json {
        if pages.len() == 1 {
            out(&format!("{}\n", pages[0].get()));
        } else {
            out(&format!("{}\n", json!({ key: items })));
        }
    } else {
        out(&table(items));
    }
}

/// `resources read --output FILE`: writes the one contents item of `result` (its
/// text, or its base64 blob decoded) to `path`. Errors: not exactly one item, a
/// blob that is not base64, or the file cannot be written.
fn write_contents(result: &Value, path: &Path) -> Result<(), Failure> {
    let contents = result
        .get("contents")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let [item] = contents else {
        return Err(Failure::new(format!(
            "--output needs exactly one contents item; the server sent {}",
            contents.len()
        )));
    };
    let bytes = if let Some(text) = item.get("text").and_then(Value::as_str) {
        text.as_bytes().to_vec()
    } else if let Some(blob) = item.get("blob").and_then(Value::as_str) {
        STANDARD
            .decode(blob)
            .map_err(|e| Failure::new(format!("the blob is not base64: {e}")))?
    } else {
        return Err(Failure::new("the contents item has neither text nor blob"));
    };
    std::fs::write(path, &bytes)
        .map_err(|e| Failure::new(format!("cannot write {}: {e}", path.display())))
}

/// What one command does once connected.
enum Action {
    ListTools,
    CallTool {
        name: String,
        arg: Vec<String>,
        args: Option<args::ArgsJson>,
    },
    ListResources,
    ListTemplates,
    ReadResource {
        uri: String,
        output: Option<PathBuf>,
    },
    ListPrompts,
    GetPrompt {
        name: String,
        arg: Vec<String>,
        args: Option<args::ArgsJson>,
    },
    Ping,
}

async fn call_tool(
    client: &Client,
    common: &CommonArgs,
    ui: &Arc<Ui>,
    name: &str,
    pairs: &[String],
    args_json: Option<&args::ArgsJson>,
) -> Result<u8, Failure> {
    let tools = client.list_tools().await?;
    // A tool not listed is called all the same: the server's own refusal says
    // why (a gateway's "the upstream is down", a drift guard's reason), with
    // what it lists beside it.
    let listed = tools.iter().find(|t| t.name == name);
    let unlisted = listed.is_none().then(|| {
        // The first few names, not all of a gateway's hundred.
        const SHOWN: usize = 8;
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        let more = names.len().saturating_sub(SHOWN);
        names.truncate(SHOWN);
        let rest = match more {
            0 => String::new(),
            n => format!(" and {n} more (`switchboard tools list` shows them)"),
        };
        format!(
            "{name:?} is not listed; the server offers: {}{rest}",
            names.join(", ")
        )
    });
    let no_schema = serde_json::Map::new();
    let schema = listed.map_or(&no_schema, |t| &t.input_schema);
    let arguments = args::tool_arguments(schema, args_json, pairs).map_err(Failure::new)?;
    // What the listed schema makes certain is checked here, before anything is
    // sent; an unlisted tool's call is left to the server.
    if let Some(tool) = listed {
        let checked = args::check_arguments(name, &tool.input_schema, &arguments);
        for warning in &checked.warnings {
            eprintln!("switchboard: warning: {}", render::printable(warning));
        }
        if let Some(refusal) = checked.refusal {
            return Err(Failure::new(refusal));
        }
    }
    let params = to_raw(&CallToolRequestParams::new(name, Some(arguments)))?;
    let progress_ui = ui.clone();
    let options = CallOptions::new()
        .timeout(common.timeout)
        .on_progress(move |p| {
            progress_ui.progress(p.progress_f64(), p.total_f64(), p.message.as_deref())
        });
    let answer = client.request("tools/call", params, options).await;
    ui.finish();
    let raw = match (answer, &unlisted) {
        (Err(e), Some(why)) => {
            let mut failure = Failure::from(e);
            failure.message = format!("{} ({why})", failure.message);
            return Err(failure);
        }
        (answer, _) => answer?,
    };
    let result = parse(&raw)?;
    let typed = match serde_json::from_value::<CallToolResult>(result.clone()) {
        Ok(t) => t,
        Err(e) => {
            return Err(Failure::new(format!(
                "tools/call: the server's result is not a CallToolResult: {e}"
            )))
        }
    };
    if common.json {
        out(&format!("{}\n", raw.get()));
    } else {
        out_text(&render::tool_result(&result));
    }
    // Shown as the server sent it, then held to the tool's `outputSchema`
    // (2025-06-18+: clients SHOULD validate): a result that breaks it is the
    // server's protocol error.
    if let Err(e) = client.check_structured_content(name, typed) {
        return Err(Failure::new(e.to_string()));
    }
    // The error's content was printed above, as any result is: the line on
    // stderr says what the exit status says, without repeating it.
    if result.get("isError") == Some(&Value::Bool(true)) {
        let shown = match result.get("content").and_then(Value::as_array) {
            Some(c) if !c.is_empty() => "its content is on stdout",
            _ => "with no content",
        };
        return Err(Failure {
            code: EXIT_TOOL_ERROR,
            message: format!("tool {name:?} returned an error (isError; {shown})"),
        });
    }
    Ok(EXIT_OK)
}

async fn act(
    client: &Client,
    common: &CommonArgs,
    ui: &Arc<Ui>,
    action: Action,
) -> Result<u8, Failure> {
    // 2026-07-28 sends log messages only to requests that name a level: ask for
    // every level then, as a legacy server does until `logging/setLevel`.
    let level = match (common.log_level, client.era()) {
        (Some(level), _) => Some(level),
        (None, Era::Modern) => Some(LoggingLevel::Debug),
        (None, Era::Legacy) => None,
    };
    if let Some(level) = level {
        if client.server_capabilities().supports_logging() {
            client.set_level(level).await?;
        } else {
            tracing::warn!("the server does not declare logging; no log level set");
        }
    }
    match action {
        Action::ListTools => {
            let (pages, items) = list_pages(client, "tools/list", "tools").await?;
            print_listing(common.json, "tools", pages, &items, render::tools_table);
        }
        Action::CallTool { name, arg, args } => {
            return call_tool(client, common, ui, &name, &arg, args.as_ref()).await
        }
        Action::ListResources => {
            let (pages, items) = list_pages(client, "resources/list", "resources").await?;
            print_listing(
                common.json,
                "resources",
                pages,
                &items,
                render::resources_table,
            );
        }
        Action::ListTemplates => {
            let (pages, items) =
                list_pages(client, "resources/templates/list", "resourceTemplates").await?;
            print_listing(
                common.json,
                "resourceTemplates",
                pages,
                &items,
                render::templates_table,
            );
        }
        Action::ReadResource { uri, output } => {
            let params = to_raw(&ReadResourceRequestParams {
                uri,
                ..Default::default()
            })?;
            let raw = client
                .request("resources/read", params, CallOptions::default())
                .await?;
            let result = parse(&raw)?;
            let contents = required_array(&result, "resources/read", "contents")?;
            if let Some(path) = output {
                write_contents(&result, &path)?;
            } else if common.json {
                out(&format!("{}\n", raw.get()));
            } else {
                for c in contents {
                    let mut text = render::resource_contents(c);
                    if !text.ends_with('\n') {
                        text.push('\n');
                    }
                    out_text(&text);
                }
            }
        }
        Action::ListPrompts => {
            let (pages, items) = list_pages(client, "prompts/list", "prompts").await?;
            print_listing(common.json, "prompts", pages, &items, render::prompts_table);
        }
        Action::GetPrompt { name, arg, args } => {
            let arguments = args::prompt_arguments(args.as_ref(), &arg).map_err(Failure::new)?;
            let params = to_raw(&GetPromptRequestParams {
                name,
                arguments: (!arguments.is_empty()).then_some(arguments),
                ..Default::default()
            })?;
            let raw = client
                .request("prompts/get", params, CallOptions::default())
                .await?;
            let result = parse(&raw)?;
            required_array(&result, "prompts/get", "messages")?;
            if common.json {
                out(&format!("{}\n", raw.get()));
            } else {
                out_text(&render::prompt_result(&result));
            }
        }
        Action::Ping => {
            let started = Instant::now();
            // `ping` does not exist in 2026-07-28: `server/discover` is the request
            // every modern server must answer.
            let method = match client.era() {
                Era::Legacy => "ping",
                Era::Modern => SERVER_DISCOVER,
            };
            let raw = client.request(method, None, CallOptions::default()).await?;
            let elapsed = started.elapsed();
            if common.json {
                out(&format!("{}\n", raw.get()));
            } else {
                let info = client.server_info();
                out_text(&format!(
                    "pong from {} {} (protocol {}) in {:.1} ms\n",
                    info.name,
                    info.version,
                    client.protocol_version(),
                    elapsed.as_secs_f64() * 1000.0
                ));
            }
        }
    }
    Ok(EXIT_OK)
}

/// Connects, acts, disconnects; Ctrl-C (or SIGTERM, SIGHUP) cancels the request
/// in flight (the library sends `notifications/cancelled`) and fails the command.
async fn session(target: Target, common: CommonArgs, action: Action) -> Result<u8, Failure> {
    let ui = Ui::new(common.quiet);
    // One signal handler for the whole command, the handshake included: without
    // it a Ctrl-C (SIGTERM, SIGHUP) while connecting killed the process outright,
    // with no message and a stdio child left running in its own process group.
    // Installed here, before any child is spawned (`ctrl_c()` would install its
    // handler only when first polled, after the spawn).
    let mut signals = Signals::watch(&Stop::ALL, Inherited::Kept)
        .map_err(|e| Failure::new(format!("cannot watch signals: {e}")))?;
    let connection = connect(&target, client_options(&common, &ui), &common, &mut signals).await?;
    let outcome = tokio::select! {
        // A result that is ready counts, even if a signal came at the same time.
        biased;
        r = act(&connection.client, &common, &ui, action) => r,
        stop = signals.next() => Err(Failure::stopped(stop)),
    };
    ui.finish();
    let outcome = match (outcome, &connection.child) {
        (Err(failure), Some(child)) => Err(with_skipped(failure, child)),
        (outcome, _) => outcome,
    };
    connection.close(&mut signals).await;
    outcome
}

/// `failure`, telling also of the lines of a stdio server's stdout that were
/// skipped as not JSON-RPC (a server that prints a banner or logs to stdout
/// rather than stderr), which otherwise only a timeout would show; the latest is
/// quoted. Unchanged when there were none, and for a tool's own error
/// (`isError`, exit 1).
fn with_skipped(failure: Failure, child: &ChildProcess) -> Failure {
    let (count, last) = child.skipped_lines();
    if count == 0 || failure.code == EXIT_TOOL_ERROR {
        return failure;
    }
    let last = last.unwrap_or_default();
    let wrote = if count == 1 {
        format!("1 line on stdout that is not JSON-RPC ({last:?})")
    } else {
        format!("{count} lines on stdout that are not JSON-RPC (the latest: {last:?})")
    };
    Failure {
        message: format!("{}; the server wrote {wrote}", failure.message),
        ..failure
    }
}

fn finish(outcome: Result<u8, Failure>) -> ExitCode {
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            eprintln!("switchboard: {}", render::printable(&f.message));
            ExitCode::from(f.code)
        }
    }
}

fn run_on_runtime(
    operands: Vec<String>,
    common: CommonArgs,
    wanted: &[&str],
    make: impl FnOnce(Vec<String>) -> Action,
) -> ExitCode {
    let outcome = (|| {
        let (target, rest) = resolve_target(operands, common.command.clone(), wanted)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Failure::new(format!("cannot start the async runtime: {e}")))?;
        runtime.block_on(session(target, common, make(rest)))
    })();
    finish(outcome)
}

/// Runs `switchboard tools ...`; the exit status as the module documentation says.
pub fn run_tools(command: ToolsCommand) -> ExitCode {
    match command {
        ToolsCommand::List { url, common } => {
            run_on_runtime(url.into_iter().collect(), common, &[], |_| {
                Action::ListTools
            })
        }
        ToolsCommand::Call {
            operands,
            arg,
            args,
            common,
        } => {
            let args = match read_args(args) {
                Ok(args) => args,
                Err(failure) => return finish(Err(failure)),
            };
            run_on_runtime(operands, common, &["the tool's NAME"], |mut rest| {
                Action::CallTool {
                    name: rest.remove(0),
                    arg,
                    args,
                }
            })
        }
    }
}

/// Runs `switchboard resources ...`.
pub fn run_resources(command: ResourcesCommand) -> ExitCode {
    match command {
        ResourcesCommand::List { url, common } => {
            run_on_runtime(url.into_iter().collect(), common, &[], |_| {
                Action::ListResources
            })
        }
        ResourcesCommand::Templates { url, common } => {
            run_on_runtime(url.into_iter().collect(), common, &[], |_| {
                Action::ListTemplates
            })
        }
        ResourcesCommand::Read {
            operands,
            output,
            common,
        } => run_on_runtime(operands, common, &["the resource's URI"], |mut rest| {
            Action::ReadResource {
                uri: rest.remove(0),
                output,
            }
        }),
    }
}

/// Runs `switchboard prompts ...`.
pub fn run_prompts(command: PromptsCommand) -> ExitCode {
    match command {
        PromptsCommand::List { url, common } => {
            run_on_runtime(url.into_iter().collect(), common, &[], |_| {
                Action::ListPrompts
            })
        }
        PromptsCommand::Get {
            operands,
            arg,
            args,
            common,
        } => {
            let args = match read_args(args) {
                Ok(args) => args,
                Err(failure) => return finish(Err(failure)),
            };
            run_on_runtime(operands, common, &["the prompt's NAME"], |mut rest| {
                Action::GetPrompt {
                    name: rest.remove(0),
                    arg,
                    args,
                }
            })
        }
    }
}

/// Runs `switchboard ping`: prints the server's name and the round trip time.
pub fn run_ping(args: PingArgs) -> ExitCode {
    run_on_runtime(args.url.into_iter().collect(), args.common, &[], |_| {
        Action::Ping
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn targets_resolve_from_a_url_or_a_command() {
        let (t, rest) =
            resolve_target(strings(&["http://h/mcp", "echo"]), vec![], &["NAME"]).unwrap();
        assert_eq!(t, Target::Url("http://h/mcp".into()));
        let (t, _) =
            resolve_target(strings(&["HTTPS://h/mcp", "echo"]), vec![], &["NAME"]).unwrap();
        assert_eq!(
            t,
            Target::Url("HTTPS://h/mcp".into()),
            "the scheme in any case"
        );
        assert_eq!(rest, ["echo"]);
        let (t, rest) =
            resolve_target(strings(&["echo"]), strings(&["srv", "-x"]), &["NAME"]).unwrap();
        assert_eq!(t, Target::Command(strings(&["srv", "-x"])));
        assert_eq!(rest, ["echo"]);
        let (t, rest) = resolve_target(vec![], strings(&["srv"]), &[]).unwrap();
        assert_eq!(t, Target::Command(strings(&["srv"])));
        assert!(rest.is_empty());
    }

    #[test]
    fn bad_targets_say_what_is_wrong() {
        let msg = |o: &[&str], c: &[&str], w: &[&str]| {
            resolve_target(strings(o), strings(c), w)
                .unwrap_err()
                .message
        };
        assert!(msg(&[], &[], &[]).contains("no server given"));
        assert!(msg(&["echo"], &[], &["NAME"]).contains("not an http(s):// URL"));
        assert!(msg(&["http://h"], &[], &["NAME"]).contains("missing NAME"));
        assert!(msg(&["http://h", "a", "b"], &[], &["NAME"]).contains("unexpected argument \"b\""));
        assert!(msg(&["http://h", "a"], &["srv"], &["NAME"]).contains("not both"));
        assert!(msg(&[], &["srv"], &["NAME"]).contains("missing NAME"));
    }

    #[test]
    fn timeouts_parse_as_seconds() {
        assert_eq!(parse_seconds("2.5").unwrap(), Duration::from_millis(2500));
        assert!(parse_seconds("0").is_err());
        assert!(parse_seconds("0.0000000001").is_err(), "rounds to zero");
        assert_eq!(parse_seconds("0.001").unwrap(), Duration::from_millis(1));
        assert!(parse_seconds("-1").is_err());
        assert!(parse_seconds("soon").is_err());
        assert!(parse_seconds("inf").is_err());
    }

    #[test]
    fn a_404_hints_at_the_mcp_path() {
        for (url, hint) in [
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080/mcp"),
            ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/mcp"),
            ("https://h.example/review", "https://h.example/review/mcp"),
            ("https://h.example/review/", "https://h.example/review/mcp"),
            ("http://h/x?k=1#frag", "http://h/x/mcp?k=1"),
            ("http://h/mcpx", "http://h/mcpx/mcp"),
        ] {
            assert_eq!(mcp_endpoint_hint(url).as_deref(), Some(hint), "{url}");
        }
        for url in [
            "http://h/mcp",
            "http://h/mcp/",
            "http://h/a/mcp",
            "http://h/mcp/x",
            "not a url",
        ] {
            assert_eq!(mcp_endpoint_hint(url), None, "{url}");
        }
    }
}
