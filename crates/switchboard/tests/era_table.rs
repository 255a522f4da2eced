//! The table of client era x server era over HTTP (issue 3, "How it is checked"):
//! our Client speaking exactly one revision (2024-11-05 over the legacy HTTP+SSE
//! transport, 2025-03-26 / 2025-06-18 / 2025-11-25 over Streamable HTTP sessions,
//! 2026-07-28 stateless) against our Server speaking exactly one revision, or all
//! of them, on one `HttpServer` (`/mcp` and `/sse`).
//!
//! Every pair the spec lets meet (the same revision, or any client against the
//! server that speaks all) negotiates that revision and makes a working tool call
//! with progress; every other pair fails to connect with an error, within a bound,
//! never a hang.

#[path = "../examples/echo_server.rs"]
#[allow(dead_code)]
mod echo_server;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use switchboard::client::EraPolicy;
use switchboard::server::ServeOptions;
use switchboard::{CallOptions, Client, ClientOptions};
use switchboard_protocol::types::Implementation;
use switchboard_protocol::version::Supported;
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::http::client::HttpClientConfig;
use switchboard_transport::http::server::{HttpServer, HttpServerConfig};

const BOUND: Duration = Duration::from_secs(20);

/// A client era: the one revision it speaks (2024-11-05 always over HTTP+SSE).
const CLIENT_ERAS: [ProtocolVersion; 5] = ProtocolVersion::ALL;

async fn server(versions: &[ProtocolVersion]) -> (HttpServer, tokio::task::JoinHandle<()>) {
    let mut config = HttpServerConfig::default();
    config.supported_versions = versions
        .iter()
        .copied()
        .filter(|v| *v != ProtocolVersion::V2024_11_05)
        .collect();
    if config.supported_versions.is_empty() {
        // A 2024-11-05-only server: its Streamable HTTP endpoint still needs a list;
        // its clients come through /sse.
        config.supported_versions = vec![ProtocolVersion::V2025_03_26];
    }
    let (http, acceptor) = HttpServer::bind(config).await.unwrap();
    let built = echo_server::builder()
        .supported(Supported::new(versions.iter().copied()).unwrap())
        .build()
        .unwrap();
    let task = tokio::spawn(built.serve_http(acceptor, ServeOptions::default()));
    (http, task)
}

async fn connect(http: &HttpServer, version: ProtocolVersion) -> Result<Client, String> {
    let mut options = ClientOptions::new(Implementation::new("era-table", "1"));
    options.supported = Supported::new([version]).unwrap();
    let base = format!("http://{}", http.local_addr());
    let (url, era) = match version {
        ProtocolVersion::V2024_11_05 => (format!("{base}/sse"), EraPolicy::Legacy),
        ProtocolVersion::V2026_07_28 => (format!("{base}/mcp"), EraPolicy::Modern),
        _ => (format!("{base}/mcp"), EraPolicy::Legacy),
    };
    options.era = Some(era);
    tokio::time::timeout(
        BOUND,
        Client::connect_url(&url, options, HttpClientConfig::new(&url)),
    )
    .await
    .map_err(|_| format!("connecting as {} hung", version.as_str()))?
    .map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_client_era_against_every_server_era() {
    let mut server_eras: Vec<(String, Vec<ProtocolVersion>)> = ProtocolVersion::ALL
        .iter()
        .map(|v| (v.as_str().to_owned(), vec![*v]))
        .collect();
    server_eras.push(("all".to_owned(), ProtocolVersion::ALL.to_vec()));
    let mut table = Vec::new();
    for (server_name, versions) in &server_eras {
        let (http, task) = server(versions).await;
        for client in CLIENT_ERAS {
            let meets = versions.contains(&client);
            let outcome = connect(&http, client).await;
            match (meets, outcome) {
                (true, Ok(c)) => {
                    assert_eq!(
                        c.protocol_version(),
                        client,
                        "client {} x server {server_name}",
                        client.as_str()
                    );
                    let seen = Arc::new(Mutex::new(Vec::new()));
                    let sink = seen.clone();
                    let options = CallOptions::new()
                        .on_progress(move |p| sink.lock().unwrap().push(p.progress_f64()));
                    let result = tokio::time::timeout(
                        BOUND,
                        c.call_tool_with(
                            "slow_progress",
                            json!({"steps": 2, "delay_ms": 5}),
                            options,
                        ),
                    )
                    .await
                    .expect("the call is answered in time")
                    .unwrap_or_else(|e| {
                        panic!("client {} x server {server_name}: {e}", client.as_str())
                    });
                    assert_ne!(result.is_error, Some(true));
                    assert_eq!(
                        *seen.lock().unwrap(),
                        [1.0, 2.0],
                        "progress: client {} x server {server_name}",
                        client.as_str()
                    );
                    table.push(format!(
                        "{:>10} x {:>10}: {} + tool call with progress",
                        client.as_str(),
                        server_name,
                        client.as_str()
                    ));
                }
                (true, Err(e)) => panic!(
                    "client {} x server {server_name} should meet: {e}",
                    client.as_str()
                ),
                (false, Ok(c)) => panic!(
                    "client {} x server {server_name} should not meet, but negotiated {}",
                    client.as_str(),
                    c.protocol_version().as_str()
                ),
                (false, Err(e)) => table.push(format!(
                    "{:>10} x {:>10}: refused ({})",
                    client.as_str(),
                    server_name,
                    e.chars().take(90).collect::<String>()
                )),
            }
        }
        drop(http);
        task.abort();
    }
    println!("client era x server era:\n{}", table.join("\n"));
    assert_eq!(table.len(), 30);
}
