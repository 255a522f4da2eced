//! Interop with the official MCP TypeScript SDK (`@modelcontextprotocol/sdk` 1.32.2,
//! pinned in `interop/peers-node`, run with the pinned Node 22) in both directions:
//!
//! - its `Client` over `StdioClientTransport` against the example server binary
//!   (`examples/echo_server.rs`), and over `StreamableHTTPClientTransport` against the
//!   same tools served in this test by `Server::serve_http` on 127.0.0.1:0
//!   (`tests/interop/ts_client.cjs`): `echo`, `slow_progress` with an `onprogress`
//!   callback (at least the first notification must arrive: the SDK drops a
//!   progress notification read together with the response, see the script), `fail`;
//! - our [`Client`] over `stdio::spawn` against an `McpServer` +
//!   `StdioServerTransport` (`tests/interop/ts_server.cjs`) whose `progress` tool
//!   reports through `extra.sendNotification` with the request's progressToken.
//!
//! Required when `SWITCHBOARD_NODE` and `SWITCHBOARD_PEERS_NODE` are set
//! (`scripts/test` sets them from `scripts/install-peers`); otherwise each test prints
//! why it is skipped and passes. Every wait is bounded.

#[path = "../examples/echo_server.rs"]
#[allow(dead_code)]
mod echo_server;
#[path = "common/peers.rs"]
mod peers;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use switchboard::client::CallOptions;
use switchboard::server::ServeOptions;
use switchboard::{Client, ClientOptions};
use switchboard_protocol::types::{CallToolResult, Implementation};
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

/// The client script, with the Node it needs, or `None` (skipped, reason printed).
fn ts_client() -> Option<peers::PeerSpec> {
    peers::node_script("ts-client", &peers::interop_script("ts_client.cjs"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ts_sdk_client_calls_the_stdio_example_with_progress() {
    let Some(client) = ts_client() else { return };
    let Some(server) = peers::example_binary("echo_server") else {
        panic!(
            "SWITCHBOARD_NODE is set but the echo_server example is not built \
             (cargo build -p switchboard --example echo_server)"
        );
    };
    let mut cmd = client.arg("stdio").arg(&server).command();
    cmd.env("ECHO_SERVER_DEBUG", "1");
    let out = peers::run_bounded_async(cmd, peers::SCRIPT_BOUND).await;
    let stdout = peers::assert_script_ok(&out, "ts interop ok (stdio, progress 1");
    eprintln!("{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ts_sdk_client_calls_our_streamable_http_server_with_progress() {
    let Some(client) = ts_client() else { return };
    let (http, acceptor) = HttpServer::bind(HttpServerConfig::default())
        .await
        .expect("bind 127.0.0.1:0");
    assert!(http.local_addr().ip().is_loopback());
    let server = echo_server::builder().build().unwrap();
    let task = tokio::spawn(server.serve_http(acceptor, ServeOptions::default()));

    let cmd = client.arg("http").arg(http.url()).command();
    let out = peers::run_bounded_async(cmd, peers::SCRIPT_BOUND).await;
    let stdout = peers::assert_script_ok(&out, "ts interop ok (http, progress 1");
    eprintln!("{stdout}");

    drop(http);
    bounded(task)
        .await
        .expect("serve_http ends when the server is dropped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_calls_a_ts_sdk_server_with_progress() {
    let Some(spec) = peers::ts_server() else {
        return;
    };
    let ChildTransport {
        sender,
        receiver,
        process,
    } = spawn(spec.child_config(), &TransportConfig::default()).expect("spawn node");
    let client = bounded(Client::connect(
        Transport { sender, receiver },
        ClientOptions::new(Implementation::new("switchboard-e2e-ts", "0.1.0")),
    ))
    .await
    .expect("initialize with the TS SDK server");
    assert_eq!(client.server_info().name, "ts-interop-server");
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
            p.progress_token,
        ))
    });
    let r = bounded(client.call_tool_with("progress", json!({"steps": 3}), options))
        .await
        .expect("progress");
    assert!(!r.is_error(), "{r:?}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "three progress notifications: {seen:?}");
    for (i, (progress, total, message, _)) in seen.iter().enumerate() {
        assert_eq!(*progress, Some((i + 1) as f64));
        assert_eq!(*total, Some(3.0));
        assert_eq!(message.as_deref(), Some(format!("step {}", i + 1).as_str()));
    }
    // The server echoes the token it got: the one our client put in `_meta`.
    let token = serde_json::to_string(&seen[0].3).unwrap();
    assert_eq!(text_of(&r), format!("counted to 3 with token {token}"));

    // A wrong argument type is the SDK's tool error (or a JSON-RPC error), never a hang.
    let bad = bounded(client.call_tool("progress", json!({"steps": "x"}))).await;
    match bad {
        Ok(r) => assert!(r.is_error(), "{r:?}"),
        Err(e) => assert!(e.is_protocol(), "{e}"),
    }

    drop(client);
    let report = bounded(process.shutdown()).await.expect("shutdown");
    eprintln!("ts server: {report}");
}
