//! End to end over Streamable HTTP: the example server's tools
//! (`examples/echo_server.rs`, included below) served by `Server::serve_http` on
//! 127.0.0.1, driven by a raw HTTP client (reqwest) that parses the SSE replies with
//! `switchboard_protocol::codec::sse::SseParser`. Every test is bounded by a timeout.

#[path = "../examples/echo_server.rs"]
#[allow(dead_code)]
mod echo_server;

use std::future::Future;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard::server::ServeOptions;
use switchboard_protocol::codec::sse::{SseItem, SseParser};
use switchboard_transport::http::server::{HttpServer, HttpServerConfig};

const LIMIT: Duration = Duration::from_secs(30);
const VERSION: &str = "2025-11-25";

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("test timed out")
}

/// The example server on 127.0.0.1:0; returns the HTTP server (drop it to stop)
/// and the `serve_http` task.
async fn start() -> (HttpServer, tokio::task::JoinHandle<()>) {
    let (http, acceptor) = HttpServer::bind(HttpServerConfig::default()).await.unwrap();
    assert!(http.local_addr().ip().is_loopback());
    let server = echo_server::builder().build().unwrap();
    let task = tokio::spawn(server.serve_http(acceptor, ServeOptions::default()));
    (http, task)
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(LIMIT).build().unwrap()
}

fn post(
    c: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: Value,
) -> reqwest::RequestBuilder {
    let mut b = c
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(s) = session {
        b = b
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", VERSION);
    }
    b
}

/// Reads the JSON messages of an SSE reply as they arrive (priming events
/// skipped), calling `on_message` for each, until the stream ends.
async fn read_stream(
    resp: &mut reqwest::Response,
    mut on_message: impl AsyncFnMut(&Value),
) -> Vec<Value> {
    assert_eq!(
        resp.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await.unwrap() {
        let events: Vec<_> = parser.feed(&chunk).collect();
        for item in events {
            if let SseItem::Event(e) = item.unwrap() {
                if e.data.is_empty() {
                    continue;
                }
                let v: Value = serde_json::from_str(&e.data).unwrap();
                on_message(&v).await;
                out.push(v);
            }
        }
    }
    out
}

/// `initialize` then `notifications/initialized`; returns the session id.
async fn open_session(c: &reqwest::Client, url: &str, capabilities: Value) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": capabilities,
        "clientInfo": {"name": "e2e-http", "version": "0"}}});
    let mut resp = post(c, url, None, init).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let sid = resp.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let msgs = read_stream(&mut resp, async |_| {}).await;
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert_eq!(msgs[0]["id"], 1);
    assert_eq!(msgs[0]["result"]["protocolVersion"], VERSION);
    assert_eq!(msgs[0]["result"]["serverInfo"]["name"], "echo-server");

    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let resp = post(c, url, Some(&sid), initialized).send().await.unwrap();
    assert_eq!(resp.status(), 202);
    sid
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_arrives_on_the_call_stream_and_delete_ends_the_session() {
    bounded(async {
        let (http, task) = start().await;
        let url = http.url();
        let c = client();
        let sid = open_session(&c, &url, json!({})).await;

        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "slow_progress", "arguments": {"steps": 3, "delay_ms": 0},
            "_meta": {"progressToken": "tok-1"}}});
        let mut resp = post(&c, &url, Some(&sid), call).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        let msgs = read_stream(&mut resp, async |_| {}).await;
        assert_eq!(
            msgs.len(),
            4,
            "three progress notifications, then the result: {msgs:?}"
        );
        for (i, m) in msgs[..3].iter().enumerate() {
            assert_eq!(m["method"], "notifications/progress", "{m}");
            assert_eq!(m["params"]["progressToken"], "tok-1");
            assert_eq!(m["params"]["progress"].as_f64(), Some((i + 1) as f64));
            assert_eq!(m["params"]["total"].as_f64(), Some(3.0));
        }
        assert_eq!(msgs[3]["id"], 2);
        assert_eq!(msgs[3]["result"]["content"][0]["text"], "done");

        let resp = c
            .delete(&url)
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", VERSION)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
        let resp = post(&c, &url, Some(&sid), ping).send().await.unwrap();
        assert_eq!(resp.status(), 404, "the deleted session is gone");

        // Dropping the HTTP server ends the acceptor, and serve_http with it.
        drop(http);
        task.await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_request_travels_on_the_call_stream() {
    bounded(async {
        let (http, _task) = start().await;
        let url = http.url();
        let c = client();
        let sid = open_session(&c, &url, json!({"sampling": {}})).await;

        let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "ask_sampling", "arguments": {"prompt": "hello"}}});
        let mut resp = post(&c, &url, Some(&sid), call).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        let msgs = read_stream(&mut resp, async |m: &Value| {
            if m["method"] == "sampling/createMessage" {
                let answer = json!({"jsonrpc": "2.0", "id": m["id"], "result": {
                    "role": "assistant", "model": "test-model",
                    "content": {"type": "text", "text": "hi there"}}});
                let r = post(&c, &url, Some(&sid), answer).send().await.unwrap();
                assert_eq!(r.status(), 202);
            }
        })
        .await;
        assert_eq!(msgs.len(), 2, "{msgs:?}");
        assert_eq!(msgs[0]["method"], "sampling/createMessage");
        assert_eq!(msgs[1]["id"], 7);
        assert_eq!(msgs[1]["result"]["content"][0]["text"], "hi there");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_served_concurrently() {
    bounded(async {
        let (http, _task) = start().await;
        let url = http.url();
        let c = client();
        let a = open_session(&c, &url, json!({})).await;
        let b = open_session(&c, &url, json!({})).await;
        assert_ne!(a, b);
        assert_eq!(http.session_count(), 2);
        for (sid, text) in [(&a, "from a"), (&b, "from b")] {
            let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "echo", "arguments": {"text": text}}});
            let mut resp = post(&c, &url, Some(sid), call).send().await.unwrap();
            let msgs = read_stream(&mut resp, async |_| {}).await;
            assert_eq!(msgs[0]["result"]["content"][0]["text"], text);
        }
    })
    .await;
}

/// A 2025-03-26 batch (the one revision with batches) over Streamable HTTP: its
/// POST's reply carries one answer per request and per invalid item (JSON-RPC
/// 2.0 §6), including the error responses with a `null` id for items whose id
/// cannot be read, which nothing could route to the POST before; none for the
/// notification. In JSON mode a batch is answered with an array, even of one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_03_26_batch_is_answered_item_by_item_on_its_post() {
    bounded(async {
        for json_mode in [false, true] {
            let mut config = HttpServerConfig::default();
            config.json_response = json_mode;
            let (http, acceptor) = HttpServer::bind(config).await.unwrap();
            let server = echo_server::builder().build().unwrap();
            let _task = tokio::spawn(server.serve_http(acceptor, ServeOptions::default()));
            let url = http.url();
            let c = client();
            let send = |sid: Option<&str>, body: Value| {
                let mut b = c
                    .post(&url)
                    .header("accept", "application/json, text/event-stream")
                    .header("content-type", "application/json")
                    .body(body.to_string());
                if let Some(s) = sid {
                    b = b
                        .header("mcp-session-id", s)
                        .header("mcp-protocol-version", "2025-03-26");
                }
                b.send()
            };
            let answers = async |mut resp: reqwest::Response| -> Vec<Value> {
                assert_eq!(resp.status(), 200, "json mode {json_mode}");
                if json_mode {
                    let body: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
                    body.as_array().expect("a batch gets an array").clone()
                } else {
                    read_stream(&mut resp, async |_| {}).await
                }
            };
            let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-03-26", "capabilities": {},
                "clientInfo": {"name": "e2e-http", "version": "0"}}});
            let resp = send(None, init).await.unwrap();
            let sid = resp.headers()["mcp-session-id"]
                .to_str()
                .unwrap()
                .to_owned();
            drop(resp);
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            assert_eq!(send(Some(&sid), initialized).await.unwrap().status(), 202);

            let batch = json!([
                {"jsonrpc": "2.0", "id": 2, "method": "ping"},
                42,
                {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}},
                {"jsonrpc": "2.0", "id": {}, "method": "ping"},
                {"jsonrpc": "1.0", "id": 7, "method": "ping"},
            ]);
            let mut got = answers(send(Some(&sid), batch).await.unwrap()).await;
            got.sort_by_key(|m| m["id"].to_string());
            assert_eq!(got.len(), 4, "json mode {json_mode}: {got:?}");
            assert_eq!(got[0]["id"], 2);
            assert_eq!(got[0]["result"], json!({}));
            assert_eq!(got[1]["id"], 7);
            assert_eq!(got[1]["error"]["code"], -32600);
            for orphan in &got[2..] {
                assert_eq!(orphan["id"], Value::Null, "{got:?}");
                assert_eq!(orphan["error"]["code"], -32600, "{got:?}");
            }

            // Nothing but unreadable items: answered all the same.
            let got = answers(send(Some(&sid), json!([1, "two"])).await.unwrap()).await;
            assert_eq!(got.len(), 2, "json mode {json_mode}: {got:?}");
            assert!(got.iter().all(|m| m["error"]["code"] == -32600));

            // A batch of one request, and the session goes on.
            let one = json!([{"jsonrpc": "2.0", "id": 3, "method": "ping"}]);
            let got = answers(send(Some(&sid), one).await.unwrap()).await;
            assert_eq!(got, vec![json!({"jsonrpc": "2.0", "id": 3, "result": {}})]);
        }
    })
    .await;
}

/// A tool that reports progress many times before its first await that waits
/// (the events queue up while its request is still being delivered, before the
/// POST takes them), on a server whose queues hold 4: every notification
/// arrives, in order, then the result; and the session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_progress_beyond_the_queue_capacity_arrives_whole_and_in_order() {
    bounded(async {
        const STEPS: u64 = 50;
        let mut config = HttpServerConfig::default();
        config.transport.channel_capacity = 4;
        let (http, acceptor) = HttpServer::bind(config).await.unwrap();
        let server = echo_server::builder()
            .tool(
                serde_json::from_value(json!({
                    "name": "burst",
                    "inputSchema": {"type": "object"}
                }))
                .unwrap(),
                |_args, cx: switchboard::server::ToolContext| async move {
                    for i in 1..=STEPS {
                        cx.progress(i as f64, Some(STEPS as f64), None).await?;
                    }
                    Ok(switchboard_protocol::types::CallToolResult {
                        content: vec![
                            switchboard_protocol::types::TextContent::new("burst done").into()
                        ],
                        ..Default::default()
                    })
                },
            )
            .build()
            .unwrap();
        let task = tokio::spawn(server.serve_http(acceptor, ServeOptions::default()));
        let url = http.url();
        let c = client();
        let sid = open_session(&c, &url, json!({})).await;
        for round in 0..3 {
            let id = 10 + round;
            let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "burst", "arguments": {}, "_meta": {"progressToken": round}}});
            let mut resp = post(&c, &url, Some(&sid), call).send().await.unwrap();
            assert_eq!(resp.status(), 200);
            let msgs = read_stream(&mut resp, async |_| {}).await;
            assert_eq!(msgs.len() as u64, STEPS + 1, "round {round}: {msgs:?}");
            for (i, m) in msgs[..STEPS as usize].iter().enumerate() {
                assert_eq!(m["method"], "notifications/progress", "{m}");
                assert_eq!(m["params"]["progressToken"], round);
                assert_eq!(m["params"]["progress"].as_f64(), Some((i + 1) as f64));
            }
            assert_eq!(msgs[STEPS as usize]["id"], id);
            assert_eq!(
                msgs[STEPS as usize]["result"]["content"][0]["text"],
                "burst done"
            );
        }
        drop(http);
        task.await.unwrap();
    })
    .await;
}
