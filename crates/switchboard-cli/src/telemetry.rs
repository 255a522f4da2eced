//! The long-running commands' telemetry (`bridge`, `gateway`, `connect`):
//! log lines on stderr as text or JSON (`--log-format`, the gateway file's
//! `log_format`), and traces from the standard `OTEL_*` variables (module
//! `switchboard_gateway::trace`). Text lines are escaped
//! (module `log_writer`); JSON lines are JSON's own escaping, one object a
//! line, the fields of the spans they are in (a traced call's `trace_id`)
//! included.
//!
//! This module must not know what is logged.

use std::fmt::Display;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use tracing::{info, warn};
use tracing_subscriber::prelude::*;
use tracing_subscriber::{reload, Layer, Registry};

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One line of text each (the default).
    Text,
    /// One JSON object each: `timestamp`, `level`, `fields`, `spans`.
    Json,
}

type Boxed = Box<dyn Layer<Registry> + Send + Sync>;

/// Where [`set_log_format`] swaps the format.
static RELOAD: OnceLock<reload::Handle<Boxed, Registry>> = OnceLock::new();

/// Whether lines are JSON now (what [`fatal`] follows).
static JSON: AtomicBool = AtomicBool::new(false);

fn layer(format: LogFormat) -> Boxed {
    match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(crate::log_writer::LogStderr)
            .with_target(false)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(false)
            .with_span_list(true)
            .with_writer(std::io::stderr)
            .with_target(false)
            .boxed(),
    }
}

/// What a server says as it starts listening: `lines` logged (info, like
/// every other line), and its endpoints alone on stdout, one `NAME: URL` a
/// line, for a script that listens on port 0 (`route /mcp: http://…`).
pub(crate) fn banner(endpoints: &[(String, String)], lines: &[String]) {
    use std::io::Write;
    // The endpoints first: whoever waits for the last line logged finds them.
    let mut text = String::new();
    for (name, url) in endpoints {
        text.push_str(&format!("{name}: {url}\n"));
    }
    {
        let mut stdout = std::io::stdout().lock();
        // A closed stdout (`| head -1`) is not an error.
        let _ = stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush());
    }
    for line in lines {
        info!("{line}");
    }
}

/// Logs at `level` (`RUST_LOG` wins) in `format`, to stderr.
pub(crate) fn init_logs(level: tracing::Level, format: LogFormat) {
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|s| s.parse::<tracing_subscriber::filter::Targets>().ok())
        .unwrap_or_else(|| tracing_subscriber::filter::Targets::new().with_default(level));
    let (layer, handle) = reload::Layer::new(layer(format));
    if tracing_subscriber::registry()
        .with(layer)
        .with(filter)
        .try_init()
        .is_ok()
    {
        let _ = RELOAD.set(handle);
        JSON.store(format == LogFormat::Json, Ordering::Relaxed);
    }
}

/// Writes the log lines from now on in `format` (a configuration file's).
pub(crate) fn set_log_format(format: LogFormat) {
    if let Some(handle) = RELOAD.get() {
        if handle.reload(layer(format)).is_ok() {
            JSON.store(format == LogFormat::Json, Ordering::Relaxed);
        }
    }
}

/// Says why the command cannot start or go on (before its exit 2): a
/// JSON line at level ERROR when lines are JSON, else `switchboard: why`,
/// the line the client commands write too. Never filtered away: a filter
/// (`RUST_LOG`) that drops errors gets the text line.
pub(crate) fn fatal(why: impl Display) {
    say(format_args!("switchboard: {why}"), &why);
}

/// A problem at a place in a file (`FILE:LINE:COL: what`, as compilers
/// write them) that stops the command: as [`fatal`], without the prefix.
pub(crate) fn problem(at: impl Display) {
    say(format_args!("{at}"), &at);
}

fn say(text: impl Display, message: impl Display) {
    if JSON.load(Ordering::Relaxed) && tracing::enabled!(tracing::Level::ERROR) {
        tracing::error!("{message}");
    } else {
        use std::io::Write;
        let line = format!("{text}\n");
        let _ = crate::log_writer::EscapedStderr.write_all(line.as_bytes());
    }
}

/// Turns traces on when `OTEL_EXPORTER_OTLP_ENDPOINT` (or the traces one)
/// is set; in the runtime that exports them.
pub(crate) fn start_traces() {
    match switchboard_gateway::trace::init_from_env(tokio::runtime::Handle::current()) {
        Ok(true) => info!("traces on: exported over OTLP (OTEL_* variables)"),
        Ok(false) => {}
        Err(e) => warn!("traces stay off: {e}"),
    }
}

/// Exports the traces still buffered: at most 2 s (an export's own bound),
/// so that a collector that does not answer does not hold the exit.
pub(crate) async fn stop_traces() {
    let flush = tokio::task::spawn_blocking(switchboard_gateway::trace::shutdown);
    let _ = tokio::time::timeout(Duration::from_secs(2), flush).await;
}
