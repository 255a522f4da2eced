//! Interop with the official MCP Python SDK (`mcp` 2.3.0, pinned in
//! `interop/requirements.txt`), the directions `e2e_python.rs` (its client over stdio)
//! does not cover:
//!
//! - its client over Streamable HTTP (`streamable_http_client` + `ClientSession`,
//!   `tests/interop/python_http_client.py`) against the example tools served in this
//!   test by `Server::serve_http` on 127.0.0.1:0: `echo`, `slow_progress` with a
//!   progress callback, `fail`;
//! - our [`Client`] over `stdio::spawn` against a server written with its
//!   `MCPServer` (`tests/interop/python_server.py`) whose `progress` tool reports
//!   through `Context.report_progress`, twice: with the default era of
//!   `Client::connect` (the legacy `initialize`, which the server must keep
//!   accepting) and with `EraPolicy::Auto` (the `server/discover` probe, which this
//!   2026-07-28 server answers, so the session is modern).
//!
//! Required when `SWITCHBOARD_PYTHON` is set (`scripts/test` sets it); otherwise each
//! test prints why it is skipped and passes. Every wait is bounded.

#[path = "../examples/echo_server.rs"]
#[allow(dead_code)]
mod echo_server;
#[path = "common/peers.rs"]
mod peers;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use switchboard::client::EraPolicy;
use switchboard::server::ServeOptions;
use switchboard::{CallOptions, Client, ClientOptions};
use switchboard_protocol::types::{CallToolResult, Implementation};
use switchboard_protocol::version::Era;
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::http::server::{HttpServer, HttpServerConfig};
use switchboard_transport::stdio::{spawn, ChildTransport};
use switchboard_transport::{Transport, TransportConfig};

/// The bound on each await of our own side.
const LIMIT: Duration = Duration::from_secs(30);

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("the test's bound elapsed")
}

fn text_of(r: &CallToolResult) -> String {
    r.content.iter().filter_map(|b| b.as_text()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_client_calls_our_streamable_http_server_with_progress() {
    let Some(client) = peers::python_script(
        "python-http-client",
        &peers::interop_script("python_http_client.py"),
    ) else {
        return;
    };
    let (http, acceptor) = HttpServer::bind(HttpServerConfig::default())
        .await
        .expect("bind 127.0.0.1:0");
    assert!(http.local_addr().ip().is_loopback());
    let server = echo_server::builder().build().unwrap();
    let task = tokio::spawn(server.serve_http(acceptor, ServeOptions::default()));

    let cmd = client.arg(http.url()).command();
    let out = peers::run_bounded_async(cmd, peers::SCRIPT_BOUND).await;
    let stdout = peers::assert_script_ok(&out, "python http interop ok");
    assert!(
        stdout.contains("progress [(1.0, 3.0, 'step 1 of 3'), (2.0, 3.0, 'step 2 of 3'), (3.0, 3.0, 'step 3 of 3')]"),
        "{stdout}"
    );
    eprintln!("{stdout}");

    drop(http);
    bounded(task)
        .await
        .expect("serve_http ends when the server is dropped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_calls_a_python_sdk_server_with_progress() {
    // The default era of `Client::connect` over stdio: the legacy `initialize`.
    call_the_python_server(None, Era::Legacy).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_auto_era_client_calls_a_python_sdk_server_over_2026_07_28() {
    // `server/discover` first: this server answers it, so the session is modern.
    call_the_python_server(Some(EraPolicy::Auto), Era::Modern).await;
}

/// Connects to `tests/interop/python_server.py` with `era` (default when `None`),
/// checks that the session is in `expected`, then lists and calls its tools, the
/// `progress` call with a progress callback.
async fn call_the_python_server(era: Option<EraPolicy>, expected: Era) {
    let Some(spec) = peers::python_server() else {
        return;
    };
    let ChildTransport {
        sender,
        receiver,
        process,
    } = spawn(spec.child_config(), &TransportConfig::default()).expect("spawn python");
    let mut options = ClientOptions::new(Implementation::new("switchboard-e2e-python", "0.1.0"));
    options.era = era;
    let client = bounded(Client::connect(Transport { sender, receiver }, options))
        .await
        .expect("connect to the Python SDK server");
    assert_eq!(client.era(), expected);
    let version = match expected {
        Era::Legacy => ProtocolVersion::V2025_11_25,
        Era::Modern => ProtocolVersion::V2026_07_28,
    };
    assert_eq!(client.protocol_version(), version);
    assert_eq!(client.server_info().name, "python-interop-server");
    assert!(client.server_capabilities().tools.is_some());

    let mut names: Vec<String> = bounded(client.list_tools())
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name)
        .collect();
    names.sort();
    assert_eq!(names, ["echo", "progress"]);

    let r = bounded(client.call_tool("echo", json!({"text": "hello from rust"})))
        .await
        .expect("echo");
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(text_of(&r), "hello from rust");

    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let options = CallOptions::new().on_progress(move |p| {
        sink.lock().unwrap().push((
            p.progress.as_f64(),
            p.total.and_then(|t| t.as_f64()),
            p.message,
        ))
    });
    let r = bounded(client.call_tool_with("progress", json!({"steps": 3}), options))
        .await
        .expect("progress");
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(text_of(&r), "counted to 3");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [1, 2, 3]
            .map(|i| (Some(i as f64), Some(3.0), Some(format!("step {i}"))))
            .to_vec()
    );

    // Its argument validation: a tool error (isError), not a JSON-RPC error or a hang.
    let r = bounded(client.call_tool("progress", json!({"steps": "many"})))
        .await
        .expect("a tool error is a result");
    assert!(r.is_error(), "{r:?}");

    drop(client);
    let report = bounded(process.shutdown()).await.expect("shutdown");
    eprintln!("python server: {report}");
}
