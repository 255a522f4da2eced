//! The Client over HTTP (`Client::connect_url`): our Server behind
//! `Server::serve_http` in both eras (a tool with progress, a server→client
//! sampling request on the call's stream, cancellation), the era fallback of spec
//! notes §6 (a legacy-only server gets `initialize`, the outcome is remembered per
//! origin; the legacy HTTP+SSE endpoint is reached last), and a 2026-07-28 MRTR
//! elicitation round trip with the `Mcp-*` headers against a scripted server that
//! speaks the 2026-07-28 examples. Servers listen on 127.0.0.1 port 0; every await
//! is bounded.

#[path = "../examples/echo_server.rs"]
#[allow(dead_code)]
mod echo_server;

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use switchboard::client::http::{cached_era, CachedEra};
use switchboard::client::{EraPolicy, HttpClientConfig};
use switchboard::server::ServeOptions;
use switchboard::{CallOptions, Client, ClientOptions};
use switchboard_protocol::types::{CreateMessageResult, ElicitResult, Implementation};
use switchboard_protocol::version::Era;
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::http::server::{HttpServer, HttpServerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

const LIMIT: Duration = Duration::from_secs(30);

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("test timed out")
}

fn options() -> ClientOptions {
    ClientOptions::new(Implementation::new("http-test-client", "0.1.0"))
}

fn first_text(r: &switchboard_protocol::types::CallToolResult) -> String {
    serde_json::to_value(&r.content[0]).unwrap()["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The example server over Streamable HTTP on 127.0.0.1:0.
async fn start(config: HttpServerConfig) -> (HttpServer, tokio::task::JoinHandle<()>) {
    let (http, acceptor) = HttpServer::bind(config).await.unwrap();
    let server = echo_server::builder().build().unwrap();
    let task = tokio::spawn(server.serve_http(acceptor, ServeOptions::default()));
    (http, task)
}

fn sampling_options() -> ClientOptions {
    options().with_sampling(|p, _cx| async move {
        let asked = serde_json::to_value(&p.messages[0]).unwrap()["content"]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        Ok(serde_json::from_value::<CreateMessageResult>(json!({
            "role": "assistant", "model": "test-model",
            "content": {"type": "text", "text": format!("model says: {asked}")}
        }))
        .unwrap())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_streamable_http_calls_a_tool_with_progress_and_answers_sampling() {
    bounded(async {
        let (http, _task) = start(HttpServerConfig::default()).await;
        let client = Client::connect_url(
            &http.url(),
            sampling_options().with_era(EraPolicy::Legacy),
            HttpClientConfig::new(""),
        )
        .await
        .unwrap();
        assert_eq!(client.era(), Era::Legacy);
        assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
        assert_eq!(client.server_info().name, "echo-server");
        assert_eq!(http.session_count(), 1);

        let tools = client.list_tools().await.unwrap();
        assert_eq!(tools.len(), 4);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let r = client
            .call_tool_with(
                "slow_progress",
                json!({"steps": 3, "delay_ms": 1}),
                CallOptions::new()
                    .on_progress(move |p| s2.lock().unwrap().push(p.progress.as_f64().unwrap())),
            )
            .await
            .unwrap();
        assert_eq!(first_text(&r), "done");
        assert_eq!(*seen.lock().unwrap(), vec![1.0, 2.0, 3.0]);

        // A server→client request on the call's SSE stream, answered by POST.
        let r = client
            .call_tool("ask_sampling", json!({"prompt": "hello"}))
            .await
            .unwrap();
        assert_eq!(first_text(&r), "model says: hello");
        client.ping().await.unwrap();

        // Cancelling a call fails it at once (notifications/cancelled is POSTed).
        let token = switchboard::peer::CancelToken::new();
        let t2 = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            t2.cancel();
        });
        let e = client
            .call_tool_with(
                "slow_progress",
                json!({"steps": 1000, "delay_ms": 50}),
                CallOptions::new().cancel(token),
            )
            .await
            .unwrap_err();
        assert!(e.is_cancelled(), "{e}");

        drop(client);
        for _ in 0..100 {
            if http.session_count() == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(http.session_count(), 0, "the session was deleted on close");
    })
    .await;
}

/// `Client::close` returns only once the session is deleted: a program that exits
/// right after it (its runtime gone) leaves no session behind on the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_returns_once_the_session_is_deleted() {
    bounded(async {
        let (http, _task) = start(HttpServerConfig::default()).await;
        let client = Client::connect_url(
            &http.url(),
            options().with_era(EraPolicy::Legacy),
            HttpClientConfig::new(""),
        )
        .await
        .unwrap();
        client.ping().await.unwrap();
        assert_eq!(http.session_count(), 1);
        client.close().await;
        assert_eq!(http.session_count(), 0, "DELETE sent before close returned");
    })
    .await;
}

/// `Client::subscribe` says updates arrive at the notification callback. Over a
/// legacy Streamable HTTP session the server sends `notifications/resources/updated`
/// (and list changes) on the standalone GET stream, which `HttpClientConfig::new`
/// leaves closed: `subscribe` succeeded, yet every update was silently lost.
/// `subscribe` now opens the GET stream itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_http_subscription_hears_its_updates_without_the_standalone_option() {
    bounded(async {
        let uri = "test://watched";
        let builder = echo_server::builder().resource(
            serde_json::from_value(json!({"uri": uri, "name": "watched"})).unwrap(),
            |r| async move {
                Ok(vec![serde_json::from_value(
                    json!({"uri": r.uri, "text": "x"}),
                )
                .unwrap()])
            },
        );
        let announcer = builder.announcer();
        let (http, acceptor) = HttpServer::bind(HttpServerConfig::default()).await.unwrap();
        let server = builder.build().unwrap();
        let _task = tokio::spawn(server.serve_http(acceptor, ServeOptions::default()));
        let (tx, mut rx) = mpsc::unbounded_channel();
        let client = Client::connect_url(
            &http.url(),
            options()
                .with_era(EraPolicy::Legacy)
                .with_notifications(move |n| {
                    let _ = tx.send(n);
                }),
            HttpClientConfig::new(""),
        )
        .await
        .unwrap();
        assert_eq!(client.era(), Era::Legacy);
        client.subscribe(uri).await.unwrap();
        // The GET stream opens in the background after `initialized`; announce
        // until one arrives (an update sent before it opened has nowhere to go).
        let heard = async {
            loop {
                announcer.resource_updated(uri);
                if let Ok(Some(n)) =
                    tokio::time::timeout(Duration::from_millis(200), rx.recv()).await
                {
                    return n;
                }
            }
        };
        let n = tokio::time::timeout(Duration::from_secs(5), heard)
            .await
            .expect("no notifications/resources/updated within 5 s");
        match n {
            switchboard_protocol::types::ServerNotification::ResourceUpdated(p) => {
                assert_eq!(p.uri, uri)
            }
            other => panic!("unexpected notification {other:?}"),
        }
        client.close().await;
    })
    .await;
}

/// The documented errors of `connect_url`: a URL that is not http(s) is
/// `is_closed`; nothing listening (connection refused) is `is_transport` with
/// code -32000 and no HTTP status (the docs said `is_closed`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_url_errors_for_a_bad_url_and_a_refused_connection() {
    bounded(async {
        let e = Client::connect_url("ftp://127.0.0.1/mcp", options(), HttpClientConfig::new(""))
            .await
            .unwrap_err();
        assert!(e.is_closed(), "{e}");
        // A port nothing listens on: bind one, then free it.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        drop(listener);
        let e = Client::connect_url(&url, options(), HttpClientConfig::new(""))
            .await
            .unwrap_err();
        assert!(e.is_transport() && !e.is_closed(), "{e}");
        let o = e.error_object().unwrap();
        assert_eq!(o.code, -32000);
        assert!(o.data.is_none(), "{:?}", o.data);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_speaks_2026_07_28_to_our_dual_era_server() {
    bounded(async {
        let (http, _task) = start(HttpServerConfig::default()).await;
        let client = Client::connect_url(&http.url(), options(), HttpClientConfig::new(""))
            .await
            .unwrap();
        assert_eq!(client.era(), Era::Modern);
        assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
        assert_eq!(
            cached_era(&http.url()),
            Some(CachedEra::Modern(ProtocolVersion::V2026_07_28))
        );
        assert_eq!(http.session_count(), 0, "2026-07-28 has no sessions");
        let tools = client.list_tools().await.unwrap();
        assert!(tools.iter().any(|t| t.name == "echo"));
        let r = client
            .call_tool("echo", json!({"text": "stateless"}))
            .await
            .unwrap();
        assert_eq!(first_text(&r), "stateless");

        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let r = client
            .call_tool_with(
                "slow_progress",
                json!({"steps": 2, "delay_ms": 1}),
                CallOptions::new()
                    .on_progress(move |p| s2.lock().unwrap().push(p.progress.as_f64().unwrap())),
            )
            .await
            .unwrap();
        assert_eq!(first_text(&r), "done");
        assert_eq!(*seen.lock().unwrap(), vec![1.0, 2.0]);

        // Cancellation in 2026-07-28 over HTTP closes the stream.
        let token = switchboard::peer::CancelToken::new();
        let t2 = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            t2.cancel();
        });
        let e = client
            .call_tool_with(
                "slow_progress",
                json!({"steps": 1000, "delay_ms": 50}),
                CallOptions::new().cancel(token),
            )
            .await
            .unwrap_err();
        assert!(e.is_cancelled(), "{e}");
        // The client keeps working afterwards.
        client.ping().await.unwrap();
    })
    .await;
}

// ---------------------------------------------------------------------------
// Scripted HTTP servers on raw TCP (one request per connection)
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Seen {
    headers: HashMap<String, String>,
    body: Value,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
    fn rpc(&self) -> &str {
        self.body["method"].as_str().unwrap_or("")
    }
}

struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
}

fn json_reply(status: u16, body: Value) -> Reply {
    Reply {
        status,
        headers: vec![("content-type", "application/json".into())],
        body: body.to_string(),
    }
}

fn result_for(seen: &Seen, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": seen.body["id"].clone(), "result": result})
}

async fn stub(
    script: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
) -> (String, mpsc::UnboundedReceiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::unbounded_channel();
    let script = Arc::new(script);
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let script = script.clone();
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let head_end = loop {
                    let mut chunk = [0u8; 4096];
                    let n = sock.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break p + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                let mut lines = head.split("\r\n");
                let _request_line = lines.next();
                let headers: HashMap<String, String> = lines
                    .filter_map(|l| l.split_once(':'))
                    .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
                    .collect();
                let len: usize = headers
                    .get("content-length")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                let mut body = buf[head_end..].to_vec();
                while body.len() < len {
                    let mut chunk = [0u8; 4096];
                    let n = sock.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    body.extend_from_slice(&chunk[..n]);
                }
                let seen = Seen {
                    headers,
                    body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                };
                let reply = script(&seen);
                let _ = tx.send(seen);
                let mut out = format!(
                    "HTTP/1.1 {} X\r\nconnection: close\r\ncontent-length: {}\r\n",
                    reply.status,
                    reply.body.len()
                );
                for (k, v) in reply.headers {
                    out.push_str(&format!("{k}: {v}\r\n"));
                }
                out.push_str("\r\n");
                out.push_str(&reply.body);
                let _ = sock.write_all(out.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    (url, rx)
}

/// A 2025-06-18-only server: anything without a session but `initialize` gets a
/// plain-text 400 (as a legacy server answers a 2026-07-28 probe).
fn legacy_only(seen: &Seen) -> Reply {
    match seen.rpc() {
        "initialize" => {
            let mut r = json_reply(
                200,
                result_for(
                    seen,
                    json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                           "serverInfo": {"name": "legacy-stub", "version": "1"}}),
                ),
            );
            r.headers.push(("mcp-session-id", "sess-1".into()));
            r
        }
        _ if seen.header("mcp-session-id") != Some("sess-1") => Reply {
            status: 400,
            headers: vec![("content-type", "text/plain".into())],
            body: "Bad Request: No valid session ID provided".into(),
        },
        "notifications/initialized" => Reply {
            status: 202,
            headers: Vec::new(),
            body: String::new(),
        },
        "tools/list" => json_reply(200, result_for(seen, json!({"tools": []}))),
        _ => json_reply(404, json!({})),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_only_server_gets_initialize_and_the_origin_is_remembered() {
    bounded(async {
        let (url, mut seen) = stub(legacy_only).await;
        let client = Client::connect_url(&url, options(), HttpClientConfig::new(""))
            .await
            .unwrap();
        assert_eq!(client.era(), Era::Legacy);
        assert_eq!(client.protocol_version(), ProtocolVersion::V2025_06_18);
        assert_eq!(client.server_info().name, "legacy-stub");
        assert!(client.list_tools().await.unwrap().is_empty());
        assert_eq!(cached_era(&url), Some(CachedEra::Legacy));
        let mut first = Vec::new();
        while let Ok(s) = seen.try_recv() {
            first.push(s);
        }
        assert_eq!(first[0].rpc(), "server/discover");
        assert_eq!(first[0].header("mcp-method"), Some("server/discover"));
        assert_eq!(first[0].header("mcp-protocol-version"), Some("2026-07-28"));
        assert_eq!(first[1].rpc(), "initialize");
        assert!(first[1].header("mcp-protocol-version").is_none());
        let list = first.iter().find(|s| s.rpc() == "tools/list").unwrap();
        assert_eq!(list.header("mcp-protocol-version"), Some("2025-06-18"));
        assert_eq!(list.header("mcp-session-id"), Some("sess-1"));
        assert!(list.header("mcp-method").is_none());
        drop(client);

        // Same origin again: no probe this time.
        let client = Client::connect_url(&url, options(), HttpClientConfig::new(""))
            .await
            .unwrap();
        assert_eq!(client.era(), Era::Legacy);
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut second = Vec::new();
        while let Ok(s) = seen.try_recv() {
            second.push(s);
        }
        assert!(
            second.iter().all(|s| s.rpc() != "server/discover"),
            "{second:?}"
        );
        assert!(second.iter().any(|s| s.rpc() == "initialize"));
    })
    .await;
}

/// A server's own error response is `is_protocol`, whatever its code (-32000
/// here, the code the transport uses for its own failures); an HTTP error without
/// a JSON-RPC body is `is_transport`, with the status in `data`; neither ends the
/// session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_s_errors_and_the_transport_s_failures_are_told_apart() {
    bounded(async {
        let (url, _seen) = stub(|seen: &Seen| match seen.body["params"]["name"].as_str() {
            Some("own_error") if seen.rpc() == "tools/call" => json_reply(
                200,
                json!({"jsonrpc": "2.0", "id": seen.body["id"].clone(),
                       "error": {"code": -32000, "message": "quota exceeded"}}),
            ),
            Some("broken") if seen.rpc() == "tools/call" => Reply {
                status: 500,
                headers: vec![("content-type", "text/plain".into())],
                body: "database is down".into(),
            },
            _ => legacy_only(seen),
        })
        .await;
        let client = Client::connect_url(&url, options(), HttpClientConfig::new(""))
            .await
            .unwrap();

        let e = client.call_tool("own_error", json!({})).await.unwrap_err();
        assert!(e.is_protocol() && !e.is_transport(), "{e:?}");
        assert_eq!(e.error_object().unwrap().code, -32000);
        assert_eq!(
            e.to_string(),
            "tools/call: peer answered error -32000: quota exceeded"
        );

        let e = client.call_tool("broken", json!({})).await.unwrap_err();
        assert!(e.is_transport() && !e.is_protocol(), "{e:?}");
        assert!(!e.is_closed());
        let object = e.error_object().expect("the transport's description");
        assert_eq!(object.code, -32000);
        let data: Value = serde_json::from_str(object.data.as_ref().unwrap().get()).unwrap();
        assert_eq!(data["httpStatus"], 500);
        let text = e.to_string();
        assert!(text.starts_with("tools/call: transport failed: "), "{text}");
        assert!(
            text.contains("500") && text.contains("database is down"),
            "{text}"
        );

        // Neither ended the session.
        assert!(client.list_tools().await.unwrap().is_empty());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_legacy_http_sse_endpoint_is_reached_last() {
    bounded(async {
        let (http, _task) = start(HttpServerConfig::default()).await;
        let sse_url = format!("http://{}/sse", http.local_addr());
        let client = Client::connect_url(&sse_url, options(), HttpClientConfig::new(""))
            .await
            .unwrap();
        assert_eq!(client.era(), Era::Legacy);
        assert_eq!(cached_era(&sse_url), Some(CachedEra::LegacySse));
        let r = client
            .call_tool("echo", json!({"text": "over sse"}))
            .await
            .unwrap();
        assert_eq!(first_text(&r), "over sse");
    })
    .await;
}

/// A 2026-07-28 server from the examples: discover, a tool with an
/// `x-mcp-header`, and an elicitation round (MRTR) before the result.
fn modern_stub(seen: &Seen) -> Reply {
    let meta = &seen.body["params"]["_meta"];
    if meta["io.modelcontextprotocol/protocolVersion"] != "2026-07-28"
        || seen.header("mcp-protocol-version") != Some("2026-07-28")
        || seen.header("mcp-method") != Some(seen.rpc())
    {
        return json_reply(
            400,
            json!({"jsonrpc": "2.0", "id": seen.body["id"].clone(),
                   "error": {"code": -32020, "message": "header mismatch"}}),
        );
    }
    match seen.rpc() {
        "server/discover" => json_reply(
            200,
            result_for(
                seen,
                json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                       "capabilities": {"tools": {}}, "ttlMs": 60000, "cacheScope": "public",
                       "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern-stub", "version": "1"}}}),
            ),
        ),
        "tools/list" => json_reply(
            200,
            result_for(
                seen,
                json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "public", "tools": [
                    {"name": "book", "inputSchema": {"type": "object", "properties": {
                        "city": {"type": "string", "x-mcp-header": "City"}}}},
                    {"name": "broken", "inputSchema": {"type": "object", "properties": {
                        "n": {"type": "number", "x-mcp-header": "N"}}}}
                ]}),
            ),
        ),
        "tools/call" => {
            if seen.header("mcp-name") != Some("book")
                || seen.header("mcp-param-city") != Some("=?base64?WsO8cmljaA==?=")
            {
                return json_reply(
                    400,
                    json!({"jsonrpc": "2.0", "id": seen.body["id"].clone(),
                           "error": {"code": -32020, "message": "Mcp-Param-City mismatch"}}),
                );
            }
            let p = &seen.body["params"];
            match p.get("inputResponses") {
                None => json_reply(
                    200,
                    result_for(
                        seen,
                        json!({"resultType": "input_required", "requestState": "opaque-1",
                               "inputRequests": {"confirm": {"method": "elicitation/create", "params": {
                                   "mode": "form", "message": "Book a room in Zürich?",
                                   "requestedSchema": {"type": "object", "properties": {
                                       "ok": {"type": "boolean"}}}}}}}),
                    ),
                ),
                Some(r) => {
                    assert_eq!(p["requestState"], "opaque-1");
                    let ok = r["confirm"]["content"]["ok"] == true;
                    json_reply(
                        200,
                        result_for(
                            seen,
                            json!({"resultType": "complete", "content": [
                                {"type": "text", "text": if ok { "booked" } else { "not booked" }}]}),
                        ),
                    )
                }
            }
        }
        _ => json_reply(
            404,
            json!({"jsonrpc": "2.0", "id": seen.body["id"].clone(),
                   "error": {"code": -32601, "message": "method not found"}}),
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mrtr_elicitation_round_trip_over_2026_07_28_http() {
    bounded(async {
        let (url, mut seen) = stub(modern_stub).await;
        let opts = options().with_elicitation(|p, _cx| async move {
            let msg = serde_json::to_value(&p).unwrap()["message"].clone();
            assert_eq!(msg, "Book a room in Zürich?");
            Ok(serde_json::from_value::<ElicitResult>(
                json!({"action": "accept", "content": {"ok": true}}),
            )
            .unwrap())
        });
        let client = Client::connect_url(&url, opts, HttpClientConfig::new(""))
            .await
            .unwrap();
        assert_eq!(client.era(), Era::Modern);
        assert_eq!(client.server_info().name, "modern-stub");
        // The tool with an invalid annotation is dropped from the view.
        let tools = client.list_tools().await.unwrap();
        let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, vec!["book"]);
        let r = client
            .call_tool("book", json!({"city": "Zürich"}))
            .await
            .unwrap();
        assert_eq!(first_text(&r), "booked");
        let calls: Vec<Seen> = std::iter::from_fn(|| seen.try_recv().ok())
            .filter(|s| s.rpc() == "tools/call")
            .collect();
        assert_eq!(calls.len(), 2, "the call and its retry");
        assert_ne!(calls[0].body["id"], calls[1].body["id"]);
        assert!(calls.iter().all(|s| s.header("mcp-session-id").is_none()));
        // No legacy methods exist here: ping goes as server/discover.
        client.ping().await.unwrap();
    })
    .await;
}

/// A tool that asks the user (elicitation) and then the model (sampling).
async fn confirm_and_ask(
    _args: switchboard::server::Arguments,
    cx: switchboard::server::ToolContext,
) -> Result<switchboard_protocol::types::CallToolResult, switchboard::server::ToolError> {
    let params = serde_json::from_value(json!({
        "message": "Proceed?",
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    }))
    .unwrap();
    let answer = cx.elicit(params).await?;
    let ok = serde_json::to_value(&answer).unwrap()["content"]["ok"] == json!(true);
    let message = serde_json::from_value(json!({
        "role": "user", "content": {"type": "text", "text": "go"}}))
    .unwrap();
    let sampled = cx
        .create_message(
            switchboard_protocol::types::CreateMessageRequestParams::new(vec![message], 10),
        )
        .await?;
    let said = serde_json::to_value(&sampled.content).unwrap();
    Ok(serde_json::from_value(json!({"content": [{"type": "text",
        "text": format!("ok={ok} model={}", said["text"].as_str().unwrap_or("?"))}]}))
    .unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mrtr_rounds_against_our_server_over_2026_07_28_http() {
    bounded(async {
        let (http, acceptor) = HttpServer::bind(HttpServerConfig::default()).await.unwrap();
        let tool: switchboard_protocol::types::Tool = serde_json::from_value(json!({
            "name": "confirm_and_ask",
            "inputSchema": {"type": "object", "properties": {}}
        }))
        .unwrap();
        let server = echo_server::builder()
            .tool(tool, confirm_and_ask)
            .build()
            .unwrap();
        let _task = tokio::spawn(server.serve_http(acceptor, ServeOptions::default()));
        let elicited = Arc::new(Mutex::new(0));
        let e2 = elicited.clone();
        let opts = sampling_options().with_elicitation(move |p, _cx| {
            let e2 = e2.clone();
            async move {
                assert_eq!(serde_json::to_value(&p).unwrap()["message"], "Proceed?");
                *e2.lock().unwrap() += 1;
                Ok(serde_json::from_value::<ElicitResult>(
                    json!({"action": "accept", "content": {"ok": true}}),
                )
                .unwrap())
            }
        });
        let client = Client::connect_url(&http.url(), opts, HttpClientConfig::new(""))
            .await
            .unwrap();
        assert_eq!(client.era(), Era::Modern);
        let r = client
            .call_tool("confirm_and_ask", json!({}))
            .await
            .unwrap();
        assert_eq!(first_text(&r), "ok=true model=model says: go");
        assert!(*elicited.lock().unwrap() >= 1);
        // The sampling-only tool of the example works the same way.
        let r = client
            .call_tool("ask_sampling", json!({"prompt": "hi"}))
            .await
            .unwrap();
        assert_eq!(first_text(&r), "model says: hi");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_mismatch_relists_the_tools_and_retries_once() {
    bounded(async {
        let (url, mut seen) = stub(modern_stub).await;
        let opts = options().with_elicitation(|_p, _cx| async move {
            Ok(serde_json::from_value::<ElicitResult>(json!({"action": "decline"})).unwrap())
        });
        let client = Client::connect_url(&url, opts, HttpClientConfig::new(""))
            .await
            .unwrap();
        // No tools/list yet: the first call lacks Mcp-Param-City and gets -32020.
        let r = client
            .call_tool("book", json!({"city": "Zürich"}))
            .await
            .unwrap();
        assert_eq!(first_text(&r), "not booked");
        let methods: Vec<String> = std::iter::from_fn(|| seen.try_recv().ok())
            .map(|s| s.rpc().to_owned())
            .collect();
        assert_eq!(
            methods,
            vec![
                "server/discover",
                "tools/call",
                "tools/list",
                "tools/call",
                "tools/call"
            ],
            "call, re-list, retried call, then its MRTR retry"
        );
    })
    .await;
}

/// A session that ended on the server (here: idle expiry) is replaced once, by a
/// replayed `initialize` that our own server accepts (it checks `Content-Type`),
/// and the client goes on working (MCP 2025-03-26+, "Session Management").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_session_is_renewed_against_our_own_server() {
    let mut config = HttpServerConfig::default();
    config.session_idle_timeout = Some(Duration::from_millis(300));
    let (http, _task) = start(config).await;
    let url = http.url();
    let mut opts = options();
    opts.era = Some(EraPolicy::Legacy);
    let client = bounded(Client::connect_url(&url, opts, HttpClientConfig::new(&url)))
        .await
        .unwrap();
    let first = bounded(client.call_tool("echo", json!({"text": "one"})))
        .await
        .unwrap();
    assert_eq!(first_text(&first), "one");
    // Let the session expire: the next POST gets 404.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(http.session_count(), 0, "the session expired");
    let second = bounded(client.call_tool("echo", json!({"text": "two"})))
        .await
        .expect("the call goes through a new session");
    assert_eq!(first_text(&second), "two");
    assert_eq!(http.session_count(), 1, "a new session");
    let third = bounded(client.call_tool("echo", json!({"text": "three"})))
        .await
        .unwrap();
    assert_eq!(first_text(&third), "three");
}

/// A 2025-06-18 server over Streamable HTTP whose `initialize` number N opens
/// session `sess-N`, and which knows only session `sess-<inits>`: a test that
/// raises `inits` makes it lose the session in use (404). Session 1 lists
/// `weather` with `outputSchema` `{temperature: number}`, later sessions with
/// `{temperature: string}` (another server behind the same URL); `tools/call`
/// answers what `answer` holds.
fn schema_per_session(
    inits: Arc<std::sync::atomic::AtomicUsize>,
    answer: Arc<Mutex<Value>>,
) -> impl Fn(&Seen) -> Reply + Send + Sync + 'static {
    use std::sync::atomic::Ordering::SeqCst;
    move |seen| {
        let current = format!("sess-{}", inits.load(SeqCst));
        match seen.rpc() {
            "initialize" => {
                let n = inits.fetch_add(1, SeqCst) + 1;
                let mut r = json_reply(
                    200,
                    result_for(
                        seen,
                        json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                               "serverInfo": {"name": "schema-per-session", "version": "1"}}),
                    ),
                );
                r.headers.push(("mcp-session-id", format!("sess-{n}")));
                r
            }
            _ if seen.header("mcp-session-id") != Some(current.as_str()) => {
                json_reply(404, json!({}))
            }
            "notifications/initialized" => Reply {
                status: 202,
                headers: Vec::new(),
                body: String::new(),
            },
            "tools/list" => {
                let ty = if current == "sess-1" {
                    "number"
                } else {
                    "string"
                };
                json_reply(
                    200,
                    result_for(
                        seen,
                        json!({"tools": [{"name": "weather", "inputSchema": {"type": "object"},
                            "outputSchema": {"type": "object", "required": ["temperature"],
                                "properties": {"temperature": {"type": ty}}}}]}),
                    ),
                )
            }
            "tools/call" => json_reply(200, result_for(seen, answer.lock().unwrap().clone())),
            _ => json_reply(404, json!({})),
        }
    }
}

/// The `outputSchema`s of a legacy Streamable HTTP session's `tools/list` are
/// forgotten when the transport replaces the session after a 404 (the new
/// session's server may list other tools): the call that met the 404, sent
/// again on the new session, is taken as sent; the new session's `tools/list`
/// brings the check back, with its own schemas.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_session_forgets_the_listed_output_schemas() {
    bounded(async {
        let inits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let answer = Arc::new(Mutex::new(Value::Null));
        let (url, _seen) = stub(schema_per_session(inits.clone(), answer.clone())).await;
        let set = |v: Value| {
            *answer.lock().unwrap() = json!({
                "content": [{"type": "text", "text": "weather"}], "structuredContent": v
            });
        };
        let client = Client::connect_url(
            &url,
            options().with_era(EraPolicy::Legacy),
            HttpClientConfig::new(""),
        )
        .await
        .unwrap();
        assert_eq!(client.protocol_version(), ProtocolVersion::V2025_06_18);
        client.list_tools().await.unwrap();
        set(json!({"temperature": "warm"}));
        let e = client.call_tool("weather", json!({})).await.unwrap_err();
        assert!(e.is_invalid_structured_content(), "session 1's schema: {e}");

        // The server loses session 1: the call meets a 404 and goes through a
        // new session (sess-3), whose server would list another schema.
        inits.store(2, std::sync::atomic::Ordering::SeqCst);
        let r = client
            .call_tool("weather", json!({}))
            .await
            .expect("the old session's schema is forgotten");
        assert_eq!(r.structured_content.unwrap()["temperature"], "warm");
        assert_eq!(inits.load(std::sync::atomic::Ordering::SeqCst), 3);

        // The new session's list: its own schema is checked.
        client.list_tools().await.unwrap();
        assert!(client.call_tool("weather", json!({})).await.is_ok());
        set(json!({"temperature": 21.5}));
        let e = client.call_tool("weather", json!({})).await.unwrap_err();
        assert!(e.is_invalid_structured_content(), "session 3's schema: {e}");
    })
    .await;
}

/// A Streamable HTTP server whose `initialize` number N opens session `sess-N`
/// and which knows only session `sess-<inits>`, as [`schema_per_session`]: a
/// test that raises `inits` makes it lose the session in use (404). Session 1
/// is a 2025-11-25 server "first" with tools only; every later one a
/// 2025-06-18 server "second" with tools and resources (another deployment
/// behind the same URL).
fn new_server_per_session(
    inits: Arc<std::sync::atomic::AtomicUsize>,
) -> impl Fn(&Seen) -> Reply + Send + Sync + 'static {
    use std::sync::atomic::Ordering::SeqCst;
    move |seen| {
        let current = format!("sess-{}", inits.load(SeqCst));
        match seen.rpc() {
            "initialize" => {
                let n = inits.fetch_add(1, SeqCst) + 1;
                let result = if n == 1 {
                    json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                           "serverInfo": {"name": "first", "version": "1"},
                           "instructions": "one"})
                } else {
                    json!({"protocolVersion": "2025-06-18",
                           "capabilities": {"tools": {}, "resources": {}},
                           "serverInfo": {"name": "second", "version": "2"},
                           "instructions": "two"})
                };
                let mut r = json_reply(200, result_for(seen, result));
                r.headers.push(("mcp-session-id", format!("sess-{n}")));
                r
            }
            _ if seen.header("mcp-session-id") != Some(current.as_str()) => {
                json_reply(404, json!({}))
            }
            "notifications/initialized" => Reply {
                status: 202,
                headers: Vec::new(),
                body: String::new(),
            },
            "tools/list" => json_reply(200, result_for(seen, json!({"tools": []}))),
            "resources/list" => json_reply(200, result_for(seen, json!({"resources": []}))),
            _ => json_reply(404, json!({})),
        }
    }
}

/// After the transport replaced a lost session (404, then the replayed
/// `initialize`), the client's negotiated version, capabilities, `serverInfo`
/// and `instructions` are the new session's: they used to stay the first
/// session's, so a capability the new server declares was refused locally and
/// the old version was sent as `MCP-Protocol-Version` on the new session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_session_brings_its_own_version_capabilities_and_server_info() {
    bounded(async {
        let inits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (url, mut seen) = stub(new_server_per_session(inits.clone())).await;
        let client = Client::connect_url(
            &url,
            options().with_era(EraPolicy::Legacy),
            HttpClientConfig::new(""),
        )
        .await
        .unwrap();
        assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
        assert_eq!(client.server_info().name, "first");
        let e = client.list_resources().await.unwrap_err();
        assert!(e.is_local_refusal(), "session 1 has no resources: {e}");

        // The server loses session 1; the next request meets a 404 and goes
        // through a new session (sess-3).
        inits.store(2, std::sync::atomic::Ordering::SeqCst);
        client.list_tools().await.unwrap();
        assert_eq!(inits.load(std::sync::atomic::Ordering::SeqCst), 3);
        assert_eq!(client.server_info().name, "second");
        assert_eq!(client.protocol_version(), ProtocolVersion::V2025_06_18);
        assert!(client.server_capabilities().resources.is_some());
        assert_eq!(client.instructions().as_deref(), Some("two"));
        client
            .list_resources()
            .await
            .expect("the new session declares resources");

        // On the new session, every message carries its version.
        drop(client);
        let mut on_new = Vec::new();
        while let Ok(Some(s)) = tokio::time::timeout(Duration::from_millis(300), seen.recv()).await
        {
            if s.header("mcp-session-id") == Some("sess-3") {
                on_new.push(s);
            }
        }
        let methods: Vec<&str> = on_new.iter().map(Seen::rpc).collect();
        assert!(
            methods.contains(&"notifications/initialized"),
            "{methods:?}"
        );
        assert!(methods.contains(&"resources/list"), "{methods:?}");
        for s in &on_new {
            assert_eq!(
                s.header("mcp-protocol-version"),
                Some("2025-06-18"),
                "{}",
                s.rpc()
            );
        }
    })
    .await;
}
