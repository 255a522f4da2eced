//! SIGTERM and the open SSE streams of the bridge (and of the example server
//! over HTTP), seen on the wire: every open response body (a POST's stream
//! with a call in flight, the standalone GET stream, a legacy `/sse` stream)
//! ends with the terminating zero-length chunk before its connection closes,
//! as on DELETE, never a reset or a body cut mid-chunk. The servers listen on
//! 127.0.0.1 only; every wait is bounded.

mod bridge_util;
mod common;
#[path = "../../switchboard-transport/tests/common/raw_http.rs"]
mod raw_http;

use std::net::SocketAddr;

use bridge_util::*;
use raw_http::Raw;
use serde_json::json;

/// SIGTERM with a call in flight (past the drain: it gets its error on its
/// stream), the standalone GET stream and a legacy `/sse` stream open: each
/// body ends with its last chunk, and the bridge exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_every_open_sse_body_with_its_last_chunk() {
    let mut bridge = BridgeProc::start(&["--drain-timeout", "300ms"], &[]).await;
    let c = client();
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let addr: SocketAddr = bridge.base.trim_start_matches("http://").parse().unwrap();
    let common = format!(
        "Host: {addr}\r\nmcp-session-id: {}\r\nmcp-protocol-version: {}\r\n",
        s.id, s.version
    );
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "progress", "arguments": {"seconds": 60, "steps": 60},
        "_meta": {"progressToken": "p"}}})
    .to_string();
    let mut post = Raw::open(
        addr,
        format!(
            "POST /mcp HTTP/1.1\r\n{common}accept: application/json, text/event-stream\r\n\
             content-type: application/json\r\ncontent-length: {}\r\n\r\n{call}",
            call.len()
        ),
    )
    .await;
    let mut standalone = Raw::open(
        addr,
        format!("GET /mcp HTTP/1.1\r\n{common}accept: text/event-stream\r\n\r\n"),
    )
    .await;
    let mut legacy = Raw::open(
        addr,
        format!("GET /sse HTTP/1.1\r\nHost: {addr}\r\naccept: text/event-stream\r\n\r\n"),
    )
    .await;
    for (raw, what) in [(&post, "POST"), (&standalone, "GET"), (&legacy, "legacy")] {
        assert!(raw.head.starts_with("HTTP/1.1 200"), "{what}: {}", raw.head);
    }
    // The call is under way (its first progress came), the GET stream is
    // attached (its priming event, 2025-11-25) and the legacy session too.
    post.wait_for("notifications/progress").await;
    standalone.wait_for("id: ").await;
    legacy.wait_for("event: endpoint").await;

    bridge.terminate();
    let bodies = tokio::time::timeout(WAIT, async {
        let mut bodies = Vec::new();
        for (raw, what) in [(post, "POST"), (standalone, "GET"), (legacy, "legacy")] {
            let body = raw
                .finish()
                .await
                .unwrap_or_else(|e| panic!("the {what} stream did not end properly: {e}"));
            bodies.push(body);
        }
        bodies
    })
    .await
    .expect("every stream ends");
    // The call cut short by the shutdown got its answer on its stream.
    assert!(bodies[0].contains(r#""id":1"#), "{}", bodies[0]);
    let status = tokio::time::timeout(WAIT, bridge.child.wait())
        .await
        .expect("the bridge exits")
        .unwrap();
    assert!(status.success(), "{status:?}");
}

/// `example-server --http` on SIGTERM: its standalone GET stream and a legacy
/// `/sse` stream end with their last chunk too, and it exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_example_server_ends_its_streams_on_sigterm_too() {
    let server = common::HttpExample::start();
    let c = client();
    let s = open_session(&c, &server.url, "2025-11-25", json!({})).await;
    let addr: SocketAddr = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    let common = format!(
        "Host: {addr}\r\nmcp-session-id: {}\r\nmcp-protocol-version: {}\r\n",
        s.id, s.version
    );
    let mut standalone = Raw::open(
        addr,
        format!("GET /mcp HTTP/1.1\r\n{common}accept: text/event-stream\r\n\r\n"),
    )
    .await;
    let mut legacy = Raw::open(
        addr,
        format!("GET /sse HTTP/1.1\r\nHost: {addr}\r\naccept: text/event-stream\r\n\r\n"),
    )
    .await;
    standalone.wait_for("id: ").await;
    legacy.wait_for("event: endpoint").await;
    let readers = tokio::spawn(async move { (standalone.finish().await, legacy.finish().await) });
    let status = tokio::task::spawn_blocking(move || server.stop())
        .await
        .unwrap();
    let (standalone, legacy) = tokio::time::timeout(WAIT, readers)
        .await
        .expect("every stream ends")
        .unwrap();
    standalone.unwrap_or_else(|e| panic!("the GET stream did not end properly: {e}"));
    legacy.unwrap_or_else(|e| panic!("the legacy stream did not end properly: {e}"));
    assert!(status.success(), "{status:?}");
}
