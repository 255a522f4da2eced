//! `sb-echo`: the library benchmark's echo server (see the crate docs).
//!
//! ```text
//! sb-echo [PORT]        # or PORT=...; 0 or absent: a free port
//! ```
//!
//! Prints `listening on http://127.0.0.1:PORT/mcp` on stdout once bound; stops on
//! Ctrl-C or SIGTERM. Tokio's default multi-threaded runtime (one worker per core,
//! or `TOKIO_WORKER_THREADS`; `bench/library/run` sets one), no logging
//! subscriber.

use std::process::ExitCode;

fn port() -> Result<u16, String> {
    match std::env::args()
        .nth(1)
        .or_else(|| std::env::var("PORT").ok())
    {
        None => Ok(0),
        Some(p) => p.parse().map_err(|e| format!("bad port {p:?}: {e}")),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let port = match port() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("sb-echo: {e} (usage: sb-echo [PORT])");
            return ExitCode::from(2);
        }
    };
    let server = switchboard_bench_echo::server().expect("the echo server builds");
    let (http, url, serving) = match switchboard_bench_echo::bind(&server, port).await {
        Ok(bound) => bound,
        Err(e) => {
            eprintln!("sb-echo: cannot listen on 127.0.0.1:{port}: {e}");
            return ExitCode::from(1);
        }
    };
    println!("listening on {url}");
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("sb-echo: cannot watch SIGTERM: {e}");
            return ExitCode::from(1);
        }
    };
    tokio::select! {
        _ = serving => {}
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    drop(http);
    ExitCode::SUCCESS
}
