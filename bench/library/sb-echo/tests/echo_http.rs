//! The benchmark's echo server over real Streamable HTTP on 127.0.0.1 (port 0):
//! `initialize`, `notifications/initialized`, then `tools/call echo` answered on an
//! SSE stream with exactly the text sent (MCP 2025-11-25, "Transports → Streamable
//! HTTP" and "Server Features → Tools").

use std::time::Duration;

use serde_json::{json, Value};

/// The JSON-RPC messages of an SSE body (`data:` lines, one event each).
fn sse_messages(body: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            if data.is_empty() {
                return None;
            }
            serde_json::from_str(&data.join("\n")).ok()
        })
        .collect()
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: Value,
) -> reqwest::Response {
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(id) = session {
        request = request.header("mcp-session-id", id);
    }
    request.body(body.to_string()).send().await.expect("POST")
}

#[tokio::test]
async fn echo_round_trip_over_streamable_http() {
    let server = switchboard_bench_echo::server().expect("builds");
    let (http, url, serving) = switchboard_bench_echo::bind(&server, 0)
        .await
        .expect("binds");
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    let serving = tokio::spawn(serving);
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client");

    let init = post(
        &client,
        &url,
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}}),
    )
    .await;
    assert_eq!(init.status(), 200);
    let session = init
        .headers()
        .get("mcp-session-id")
        .expect("a stateful session id")
        .to_str()
        .expect("ASCII")
        .to_owned();
    let messages = sse_messages(&init.text().await.expect("body"));
    assert_eq!(messages[0]["result"]["protocolVersion"], "2025-11-25");
    assert!(messages[0]["result"]["capabilities"]["tools"].is_object());

    let initialized = post(
        &client,
        &url,
        Some(&session),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(initialized.status(), 202);

    for (id, text) in [(2, "hello"), (3, "é \" \n ✓")] {
        let call = post(
            &client,
            &url,
            Some(&session),
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": "echo", "arguments": {"text": text}}}),
        )
        .await;
        assert_eq!(call.status(), 200);
        let content_type = call.headers()["content-type"].to_str().unwrap().to_owned();
        // A quick lone response is one JSON body (`json_reply_within`).
        assert!(
            content_type.starts_with("application/json"),
            "a quick lone reply is JSON: {content_type}"
        );
        let reply: Value = serde_json::from_str(&call.text().await.expect("body")).unwrap();
        assert_eq!(reply["id"], id);
        assert_eq!(
            reply["result"]["content"],
            json!([{"type": "text", "text": text}])
        );
    }

    drop(http);
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("serving ends once the HTTP server is dropped")
        .expect("no panic");
}
