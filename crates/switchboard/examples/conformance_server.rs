//! The MCP conformance suite's server fixtures (`modelcontextprotocol/conformance`,
//! REVISIONS.md §9) served over Streamable HTTP, for `scripts/conformance`.
//!
//! ```sh
//! cargo run -p switchboard --example conformance_server -- --port 3001
//! ```
//!
//! Listens on `127.0.0.1` only, at `/mcp`, on the port given by `--port N` (or the
//! `PORT` environment variable; `0`, the default, lets the OS choose). Once
//! listening it logs `listening on http://127.0.0.1:PORT/mcp` to stderr (stdout is
//! not used). The fixture set itself (tools `test_*`, resources `test://…`,
//! prompts, completions, and the 2026-07-28 fixtures: MRTR tools and prompt,
//! list-change triggers) is `tests/common/conformance_fixture.rs`, included below
//! and shared with the tests. Clients of every revision are served on the one
//! endpoint: legacy sessions and stateless 2026-07-28 exchanges. Stops on Ctrl-C or SIGTERM.

#[path = "../tests/common/conformance_fixture.rs"]
#[allow(dead_code)]
mod conformance_fixture;

use std::net::{Ipv4Addr, SocketAddr};

use switchboard::server::ServeOptions;
use switchboard_transport::http::server::{HttpServer, HttpServerConfig, DEFAULT_SHUTDOWN_GRACE};

/// The port from `--port N` / `--port=N`, else `PORT`, else 0.
fn port() -> Result<u16, String> {
    let mut args = std::env::args().skip(1);
    let mut value = None;
    while let Some(a) = args.next() {
        if a == "--port" {
            value = Some(args.next().ok_or("--port needs a value")?);
        } else if let Some(v) = a.strip_prefix("--port=") {
            value = Some(v.to_owned());
        } else {
            return Err(format!(
                "unknown argument {a:?} (usage: conformance_server [--port N])"
            ));
        }
    }
    let value = value.or_else(|| std::env::var("PORT").ok());
    match value {
        None => Ok(0),
        Some(v) => v.parse().map_err(|e| format!("bad port {v:?}: {e}")),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let level = if std::env::var_os("CONFORMANCE_SERVER_DEBUG").is_some() {
        tracing::Level::DEBUG
    } else {
        tracing::Level::INFO
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_ansi(false)
        .init();

    let mut config = HttpServerConfig::default();
    config.bind = SocketAddr::from((Ipv4Addr::LOCALHOST, port()?));
    // test_reconnection closes its stream mid-call: tell clients when to come back.
    config.sse_retry = Some(std::time::Duration::from_millis(500));
    let (http, acceptor) = HttpServer::bind(config).await?;
    tracing::info!("listening on {}", http.url());

    let server = conformance_fixture::server_2026();
    let serving = server.serve_http(acceptor, ServeOptions::default());
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = serving => {}
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted; stopping"),
        _ = term.recv() => tracing::info!("terminated; stopping"),
    }
    // Awaited before the runtime ends: every open SSE body ends with its last
    // chunk rather than being cut when the process exits.
    http.shutdown(DEFAULT_SHUTDOWN_GRACE).await;
    Ok(())
}
