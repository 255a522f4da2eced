//! The MCP conformance suite's server fixtures (the same set as
//! `conformance_server`, from `tests/common/conformance_fixture.rs`) served on
//! stdio: one message per line on stdin/stdout, logs on stderr, ending when stdin
//! closes. `scripts/conformance-bridge` runs it behind `switchboard bridge` so the
//! suite, an HTTP client, tests the bridge in front of a stdio server.
//!
//! ```sh
//! switchboard bridge --listen 127.0.0.1:3001 -- target/debug/examples/conformance_stdio
//! ```

#[path = "../tests/common/conformance_fixture.rs"]
#[allow(dead_code)]
mod conformance_fixture;

use switchboard::server::ServeOptions;
use switchboard_transport::{stdio, TransportConfig};

#[tokio::main]
async fn main() {
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
    let transport = stdio::serve(&TransportConfig::default());
    let server = conformance_fixture::server_2026();
    let reason = server.serve(transport, ServeOptions::default()).run().await;
    tracing::info!(%reason, "stdin closed; exiting");
}
