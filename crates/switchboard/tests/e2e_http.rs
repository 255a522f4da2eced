//! End to end over Streamable HTTP: the example server's tools
//! (`examples/echo_server.rs`, included below) served by `Server::serve_http` on
//! 127.0.0.1, driven by a raw HTTP client (reqwest) that parses the SSE replies with
//! `switchboard_protocol::codec::sse::SseParser`, including the streams under
//! pressure (see the comment above those tests). Every test is bounded by a
//! timeout.

#[path = "../examples/echo_server.rs"]
#[allow(dead_code)]
mod echo_server;

use std::future::Future;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard::server::{ServeOptions, ToolContext};
use switchboard_protocol::codec::sse::{SseItem, SseParser};
use switchboard_protocol::types::{CallToolResult, TextContent};
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
/// skipped), calling `on_message` for each, until the stream ends; a JSON
/// reply (a lone response that came first) is its one message.
async fn read_stream(
    resp: &mut reqwest::Response,
    mut on_message: impl AsyncFnMut(&Value),
) -> Vec<Value> {
    let content_type = resp.headers()["content-type"].to_str().unwrap().to_owned();
    if content_type == "application/json" {
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.unwrap() {
            body.extend_from_slice(&chunk);
        }
        let v: Value = serde_json::from_slice(&body).unwrap();
        on_message(&v).await;
        return vec![v];
    }
    assert_eq!(content_type, "text/event-stream");
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

/// Serves `server` over HTTP with `config` (on 127.0.0.1): the HTTP server
/// (drop it to stop) and its endpoint URL.
async fn serve(
    config: HttpServerConfig,
    server: switchboard::server::Server,
) -> (HttpServer, String) {
    let (http, acceptor) = HttpServer::bind(config).await.unwrap();
    tokio::spawn(server.serve_http(acceptor, ServeOptions::default()));
    let url = http.url();
    (http, url)
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

// The streams under pressure (2025-11-25, "Transports → Streamable HTTP"):
// events sent while a POST's request is still being delivered (a handler's first
// poll), with queues of one or two; a handler that closes its stream for polling
// (SEP-1699) while its POST has not taken its events yet; tools that panic before
// they return a future; progress tokens in escaped `_meta` members; batches with
// invalid items; many sessions calling while some are deleted.

/// (id, data) of every event of an SSE body, read to its end.
async fn all_events(resp: &mut reqwest::Response) -> Vec<(Option<String>, String)> {
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await.unwrap() {
        let items: Vec<_> = parser.feed(&chunk).collect();
        for item in items {
            if let SseItem::Event(e) = item.unwrap() {
                out.push((e.id, e.data));
            }
        }
    }
    out
}

/// The messages of the session's stream resumed (GET with `Last-Event-ID`)
/// after the last event of `evs`, read to the stream's end.
async fn resume_after(
    c: &reqwest::Client,
    url: &str,
    sid: &str,
    evs: &[(Option<String>, String)],
) -> Vec<Value> {
    let last = evs.last().unwrap().0.clone().expect("an event id");
    let mut resumed = c
        .get(url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", sid)
        .header("mcp-protocol-version", VERSION)
        .header("last-event-id", last)
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), 200);
    msgs(&all_events(&mut resumed).await)
}

fn msgs(evs: &[(Option<String>, String)]) -> Vec<Value> {
    evs.iter()
        .filter(|(_, d)| !d.is_empty())
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect()
}

fn text(t: &str) -> CallToolResult {
    CallToolResult {
        content: vec![TextContent::new(t).into()],
        ..Default::default()
    }
}

fn tool(name: &str) -> switchboard_protocol::types::Tool {
    serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}})).unwrap()
}

/// A handler closes its SSE stream (SEP-1699 polling) while its POST is still
/// delivering (the handler's first poll, direct delivery) and while another
/// task of the handler waits for room among the early events (capacity 2).
/// Expected: that task's progress is buffered for resumption and it goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_sse_stream_during_early_phase_does_not_strand_a_waiting_sender() {
    bounded(async {
        let mut config = HttpServerConfig::default();
        config.transport.channel_capacity = 2;
        let server = echo_server::builder()
            .tool(tool("poll"), |_args, cx: ToolContext| async move {
                // Progress and the switch to polling, side by side in one task:
                // the third progress finds the early events at capacity (2) and
                // waits for the POST; the stream is closed meanwhile, all in the
                // handler's first poll (the POST is still delivering).
                let progress = async {
                    for i in 1..=3 {
                        cx.progress(f64::from(i), None, None).await?;
                    }
                    Ok::<_, switchboard::server::ContextError>(())
                };
                let close = async { cx.close_sse_stream() };
                let (sent, closed) = tokio::join!(
                    tokio::time::timeout(Duration::from_secs(3), progress),
                    close
                );
                let outcome = match sent {
                    Ok(r) => format!("closed={closed} progress={r:?}"),
                    Err(_) => format!("closed={closed} progress STUCK"),
                };
                Ok(text(&outcome))
            })
            .build()
            .unwrap();
        let (_http, url) = serve(config, server).await;
        let c = client();
        let sid = open_session_as(&c, &url, VERSION).await;
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "poll", "arguments": {}, "_meta": {"progressToken": "p"}}});
        let mut resp = post(&c, &url, Some(&sid), call).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        let evs = all_events(&mut resp).await;
        let mut got = msgs(&evs);
        got.extend(resume_after(&c, &url, &sid, &evs).await);
        let result = got.last().unwrap();
        assert_eq!(result["id"], 2);
        let t = result["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            t.contains("progress=Ok(())"),
            "the third progress never went: {t}"
        );
        let progress: Vec<_> = got
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .map(|m| m["params"]["progress"].as_f64().unwrap())
            .collect();
        assert_eq!(progress, vec![1.0, 2.0, 3.0], "{got:?}");
    })
    .await;
}

fn sync_panic_server(
    capacity: usize,
    json_mode: bool,
) -> (HttpServerConfig, switchboard::server::Server) {
    let mut config = HttpServerConfig::default();
    config.transport.channel_capacity = capacity;
    config.json_response = json_mode;
    let server = echo_server::builder()
        .tool(tool("sync_boom"), |_args, _cx: ToolContext| {
            if std::hint::black_box(true) {
                panic!("synchronous bug");
            }
            async { Ok(text("never")) }
        })
        .tool(tool("burst3"), |_args, cx: ToolContext| async move {
            for i in 1..=3 {
                cx.progress(f64::from(i), None, None).await?;
            }
            Ok(text("burst3 done"))
        })
        .build()
        .unwrap();
    (config, server)
}

/// A tool whose synchronous part panics (before its future exists), over a
/// 2025-11-25 session: -32603 with the request's id, and the session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_panic_over_a_session_is_answered_and_the_session_goes_on() {
    bounded(async {
        for json_mode in [false, true] {
            let (config, server) = sync_panic_server(1, json_mode);
            let (_http, url) = serve(config, server).await;
            let c = client();
            let sid = open_session_as(&c, &url, VERSION).await;
            for id in [5, 6] {
                let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": "sync_boom", "arguments": {}}});
                let resp = post(&c, &url, Some(&sid), call).send().await.unwrap();
                let got = answers(resp).await;
                assert_eq!(got.len(), 1, "{got:?}");
                assert_eq!(got[0]["id"], id, "{got:?}");
                assert_eq!(got[0]["error"]["code"], -32603, "{got:?}");
                let call = json!({"jsonrpc": "2.0", "id": id + 10, "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "alive"}}});
                let resp = post(&c, &url, Some(&sid), call).send().await.unwrap();
                let got = answers(resp).await;
                assert_eq!(got[0]["result"]["content"][0]["text"], "alive", "{got:?}");
            }
        }
    })
    .await;
}

/// The answers of a reply, SSE or JSON (a JSON array is flattened).
async fn answers(mut resp: reqwest::Response) -> Vec<Value> {
    assert_eq!(resp.status(), 200);
    let ct = resp.headers()["content-type"].to_str().unwrap().to_owned();
    if ct == "application/json" {
        let v: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
        match v {
            Value::Array(a) => a,
            v => vec![v],
        }
    } else {
        msgs(&all_events(&mut resp).await)
    }
}

/// `initialize` (as `version`) then `notifications/initialized`, with SSE or
/// JSON replies; returns the session id.
async fn open_session_as(c: &reqwest::Client, url: &str, version: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "brk", "version": "0"}}});
    let resp = post(c, url, None, init).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let sid = resp.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let got = answers(resp).await;
    assert_eq!(got.len(), 1, "{got:?}");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let resp = c
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", version)
        .body(initialized.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 202);
    sid
}

/// A progress token given under `_meta` written with a JSON escape
/// (`"\u005fmeta"`), and one with an escape inside the token's member name:
/// the filter must not rule them out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escaped_meta_still_carries_the_progress_token() {
    bounded(async {
        let (config, server) = sync_panic_server(64, false);
        let (_http, url) = serve(config, server).await;
        let c = client();
        let sid = open_session_as(&c, &url, VERSION).await;
        let bodies = [
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"burst3","arguments":{},"\u005fmeta":{"progressToken":"esc"}}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"burst3","arguments":{},"_meta":{"progress\u0054oken":"esc"}}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"burst3","arguments":{},"_meta":{"progressToken":"e\u0073c"}}}"#,
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"burst3","_meta":{"progressToken":"esc"},"arguments":{"x":"\"_meta\""}}}"#,
        ];
        for body in bodies {
            let resp = c
                .post(&url)
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .header("mcp-session-id", &sid)
                .header("mcp-protocol-version", VERSION)
                .body(body)
                .send()
                .await
                .unwrap();
            let got = answers(resp).await;
            assert_eq!(got.len(), 4, "{body}: {got:?}");
            assert_eq!(got[0]["params"]["progressToken"], "esc", "{got:?}");
        }
    })
    .await;
}

/// 2025-03-26 batches with many requests and invalid items on a server whose
/// queues hold 1, SSE and JSON: one answer per request and per invalid item.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_batches_with_capacity_one() {
    bounded(async {
        for json_mode in [false, true] {
            for capacity in [1, 2] {
                let (config, server) = sync_panic_server(capacity, json_mode);
                let (_http, url) = serve(config, server).await;
                let c = client();
                let sid = open_session_as(&c, &url, "2025-03-26").await;
                let mut batch = Vec::new();
                for i in 0..12 {
                    batch.push(json!({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call",
                        "params": {"name": if i % 3 == 0 { "burst3" } else if i % 3 == 1 { "sync_boom" } else { "echo" },
                                   "arguments": {"text": "x"}, "_meta": {"progressToken": i}}}));
                    batch.push(json!(i));
                }
                batch.push(json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}));
                let resp = c
                    .post(&url)
                    .header("accept", "application/json, text/event-stream")
                    .header("content-type", "application/json")
                    .header("mcp-session-id", &sid)
                    .header("mcp-protocol-version", "2025-03-26")
                    .body(Value::Array(batch).to_string())
                    .send()
                    .await
                    .unwrap();
                let got = answers(resp).await;
                let responses: Vec<_> = got.iter().filter(|m| m.get("method").is_none()).collect();
                assert_eq!(responses.len(), 24, "json {json_mode} cap {capacity}: {got:?}");
                let ids: std::collections::BTreeSet<_> = responses
                    .iter()
                    .filter(|m| !m["id"].is_null())
                    .map(|m| m["id"].as_i64().unwrap())
                    .collect();
                assert_eq!(ids.len(), 12, "json {json_mode} cap {capacity}: {got:?}");
            }
        }
    })
    .await;
}

/// Many sessions calling a tool that sends progress beyond the capacity in its
/// first poll, while some sessions are deleted mid-way: every POST finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_sessions_with_deletes_never_hang() {
    bounded(async {
        for json_mode in [false, true] {
            let (mut config, server) = sync_panic_server(1, json_mode);
            config.max_sessions = 1000;
            let (_http, url) = serve(config, server).await;
            let c = client();
            let mut tasks = Vec::new();
            for s in 0..24 {
                let c = c.clone();
                let url = url.clone();
                tasks.push(tokio::spawn(async move {
                    let sid = open_session_as(&c, &url, VERSION).await;
                    let mut calls = Vec::new();
                    for k in 0..10u64 {
                        let c = c.clone();
                        let url = url.clone();
                        let sid = sid.clone();
                        calls.push(tokio::spawn(async move {
                            let name = ["burst3", "echo", "sync_boom"][(k % 3) as usize];
                            let call = json!({"jsonrpc": "2.0", "id": 10 + k, "method": "tools/call",
                                "params": {"name": name, "arguments": {"text": "t"}, "_meta": {"progressToken": k}}});
                            let resp = tokio::time::timeout(Duration::from_secs(10), post(&c, &url, Some(&sid), call).send())
                                .await
                                .expect("POST head hangs")
                                .unwrap();
                            let status = resp.status().as_u16();
                            if status == 200 {
                                let got = tokio::time::timeout(Duration::from_secs(10), answers(resp)).await.expect("body hangs");
                                (status, got.len())
                            } else {
                                (status, 0)
                            }
                        }));
                    }
                    if s % 3 == 0 {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        let _ = c
                            .delete(&url)
                            .header("mcp-session-id", &sid)
                            .header("mcp-protocol-version", VERSION)
                            .send()
                            .await
                            .unwrap();
                    }
                    let mut out = Vec::new();
                    for call in calls {
                        out.push(call.await.unwrap());
                    }
                    (s, out)
                }));
            }
            for t in tasks {
                let (s, out) = t.await.unwrap();
                for (k, (status, n)) in out.iter().enumerate() {
                    assert!(*status == 200 || *status == 404, "session {s} call {k}: {status}");
                    if s % 3 != 0 {
                        assert_eq!(*status, 200);
                        let want = if json_mode { 1 } else if k % 3 == 0 { 4 } else { 1 };
                        assert_eq!(*n, want, "json {json_mode} session {s} call {k}");
                    }
                }
            }
        }
    })
    .await;
}

/// Progress sent in the handler's first poll, then the handler closes its SSE
/// stream (polling) and answers. With a replay buffer smaller than what the
/// early events held, the client must still get every message between the
/// POST's body and its resumption (before the early-events change the events
/// already sent went out on the closing connection).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_sent_before_close_sse_stream_in_the_first_poll_are_not_lost() {
    bounded(async {
        let mut config = HttpServerConfig::default();
        config.sse_replay_buffer = 2;
        let server = echo_server::builder()
            .tool(tool("poll5"), |_args, cx: ToolContext| async move {
                for i in 1..=5 {
                    cx.progress(f64::from(i), None, None).await?;
                }
                let closed = cx.close_sse_stream();
                Ok(text(&format!("closed={closed}")))
            })
            .build()
            .unwrap();
        let (_http, url) = serve(config, server).await;
        let c = client();
        let sid = open_session_as(&c, &url, VERSION).await;
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "poll5", "arguments": {}, "_meta": {"progressToken": "p"}}});
        let mut resp = post(&c, &url, Some(&sid), call).send().await.unwrap();
        let evs = all_events(&mut resp).await;
        let mut got = msgs(&evs);
        got.extend(resume_after(&c, &url, &sid, &evs).await);
        let progress: Vec<_> = got
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .map(|m| m["params"]["progress"].as_f64().unwrap())
            .collect();
        assert_eq!(got.last().unwrap()["id"], 2, "{got:?}");
        assert_eq!(progress, vec![1.0, 2.0, 3.0, 4.0, 5.0], "{got:?}");
    })
    .await;
}
