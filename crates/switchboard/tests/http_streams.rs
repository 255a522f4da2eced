//! The Streamable HTTP server's streams under pressure (MCP 2025-03-26 to
//! 2025-11-25, "Transports → Streamable HTTP"): events sent while a POST's
//! request is still being delivered (a handler's first poll), with queues of one
//! or two; a handler that closes its stream for polling (2025-11-25, SEP-1699)
//! while its POST has not taken its events yet; tools that panic before they
//! return a future; progress tokens in escaped `_meta` members; batches with
//! invalid items; many sessions calling while some are deleted. Served by the
//! library on 127.0.0.1, driven by reqwest; every wait is bounded.

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

fn msgs(evs: &[(Option<String>, String)]) -> Vec<Value> {
    evs.iter()
        .filter(|(_, d)| !d.is_empty())
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect()
}

async fn open_session(c: &reqwest::Client, url: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": "brk", "version": "0"}}});
    let mut resp = post(c, url, None, init).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let sid = resp.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let m = msgs(&all_events(&mut resp).await);
    assert_eq!(m.len(), 1, "{m:?}");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let resp = post(c, url, Some(&sid), initialized).send().await.unwrap();
    assert_eq!(resp.status(), 202);
    sid
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
        let (http, acceptor) = HttpServer::bind(config).await.unwrap();
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
        let _task = tokio::spawn(server.serve_http(acceptor, ServeOptions::default()));
        let url = http.url();
        let c = client();
        let sid = open_session(&c, &url).await;
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "poll", "arguments": {}, "_meta": {"progressToken": "p"}}});
        let mut resp = post(&c, &url, Some(&sid), call).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        let evs = all_events(&mut resp).await;
        eprintln!("POST body events: {evs:?}");
        let last = evs.last().unwrap().0.clone().expect("an event id");
        let mut resumed = c
            .get(&url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", VERSION)
            .header("last-event-id", last)
            .send()
            .await
            .unwrap();
        assert_eq!(resumed.status(), 200);
        let mut got = msgs(&evs);
        got.extend(msgs(&all_events(&mut resumed).await));
        eprintln!("POST body + resumed: {got:?}");
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
            let (http, acceptor) = HttpServer::bind(config).await.unwrap();
            let _task = tokio::spawn(server.serve_http(acceptor, ServeOptions::default()));
            let url = http.url();
            let c = client();
            let sid = open_session_any(&c, &url).await;
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

/// Like open_session, for SSE or JSON replies.
async fn open_session_any(c: &reqwest::Client, url: &str) -> String {
    open_session_as(c, url, VERSION).await
}

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
        let (http, acceptor) = HttpServer::bind(config).await.unwrap();
        let _task = tokio::spawn(server.serve_http(acceptor, ServeOptions::default()));
        let url = http.url();
        let c = client();
        let sid = open_session(&c, &url).await;
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
                let (http, acceptor) = HttpServer::bind(config).await.unwrap();
                let _task = tokio::spawn(server.serve_http(acceptor, ServeOptions::default()));
                let url = http.url();
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
            let (http, acceptor) = HttpServer::bind(config).await.unwrap();
            let _task = tokio::spawn(server.serve_http(acceptor, ServeOptions::default()));
            let url = http.url();
            let c = client();
            let mut tasks = Vec::new();
            for s in 0..24 {
                let c = c.clone();
                let url = url.clone();
                tasks.push(tokio::spawn(async move {
                    let sid = open_session_any(&c, &url).await;
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
        let (http, acceptor) = HttpServer::bind(config).await.unwrap();
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
        let _task = tokio::spawn(server.serve_http(acceptor, ServeOptions::default()));
        let url = http.url();
        let c = client();
        let sid = open_session(&c, &url).await;
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "poll5", "arguments": {}, "_meta": {"progressToken": "p"}}});
        let mut resp = post(&c, &url, Some(&sid), call).send().await.unwrap();
        let evs = all_events(&mut resp).await;
        let mut got = msgs(&evs);
        let last = evs.last().unwrap().0.clone().expect("an event id");
        let mut resumed = c
            .get(&url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", VERSION)
            .header("last-event-id", last)
            .send()
            .await
            .unwrap();
        assert_eq!(resumed.status(), 200);
        got.extend(msgs(&all_events(&mut resumed).await));
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
