//! The end of a connection's input with requests still being handled
//! (`ServeOptions::drain_on_close`; MCP 2025-11-25 "Lifecycle → Shutdown",
//! "Transports → stdio"): over the stdio transport's code path (`serve_on`, with
//! the reason "stdin closed") on a real socket pair whose client half shuts its
//! writing side down, the way a shell pipe closes a server's stdin. A call in
//! flight is answered; one slower than the grace is cancelled and not answered;
//! a server→client request made after the input closed fails at once; an HTTP
//! session's end cancels at once (no grace). Every wait is bounded.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchboard::server::{ServeOptions, Server, ToolError};
use switchboard_protocol::types::{CallToolResult, CreateMessageRequestParams, Implementation};
use switchboard_transport::{stdio, TransportConfig};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::sync::mpsc;

const BOUND: Duration = Duration::from_secs(20);

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, f)
        .await
        .expect("the test's bound elapsed")
}

fn text(t: impl Into<String>) -> CallToolResult {
    serde_json::from_value(json!({"content": [{"type": "text", "text": t.into()}]})).unwrap()
}

/// Tells `tx` when the `hang` tool's future is dropped with its context
/// cancelled (the peer drops a cancelled handler's future).
struct DropReport {
    cx: switchboard::server::ToolContext,
    tx: mpsc::UnboundedSender<()>,
}

impl Drop for DropReport {
    fn drop(&mut self) {
        if self.cx.is_cancelled() {
            let _ = self.tx.send(());
        }
    }
}

/// `slow {ms}`: sleeps, then answers "slept"; `hang`: never answers, and tells
/// `cancelled` when it is dropped cancelled; `ask_after {ms}`: sleeps (the input
/// has closed meanwhile), then asks the client to sample and answers what came
/// back, an error as `isError`.
fn server(cancelled: mpsc::UnboundedSender<()>) -> Server {
    let tool = |name: &str| {
        serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}})).unwrap()
    };
    let ms = |args: &switchboard::server::Arguments| {
        Duration::from_millis(args.get("ms").and_then(Value::as_u64).unwrap_or(0))
    };
    Server::builder(Implementation::new("drain", "1"))
        .tool(tool("slow"), move |args, _cx| async move {
            tokio::time::sleep(ms(&args)).await;
            Ok(text("slept"))
        })
        .tool(tool("hang"), move |_args, cx| {
            let report = DropReport {
                cx: cx.clone(),
                tx: cancelled.clone(),
            };
            async move {
                let _report = report;
                std::future::pending::<()>().await;
                Ok(text("never"))
            }
        })
        .tool(tool("ask_after"), move |args, cx| async move {
            tokio::time::sleep(ms(&args)).await;
            let params: CreateMessageRequestParams = serde_json::from_value(json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                "maxTokens": 10}))
            .unwrap();
            match cx.create_message(params).await {
                Ok(_) => Ok(text("the client answered")),
                Err(e) => Err(ToolError::new(format!("sampling failed: {e}"))),
            }
        })
        .build()
        .expect("the server builds")
}

/// A server served with `options` over `serve_on` (the stdio transport) on one
/// half of a socket pair, and the other half, as a client.
struct Piped {
    client: UnixStream,
    serving: tokio::task::JoinHandle<String>,
}

fn piped(server: &Server, options: ServeOptions) -> Piped {
    let (client, server_end) = UnixStream::pair().expect("a socket pair");
    let (read, write) = server_end.into_split();
    let transport = stdio::serve_on(read, write, &TransportConfig::default());
    let serving = tokio::spawn(server.serve(transport, options).run());
    Piped { client, serving }
}

fn lines(messages: &[Value]) -> String {
    messages.iter().map(|m| format!("{m}\n")).collect()
}

fn handshake(capabilities: Value) -> Vec<Value> {
    vec![
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "pipe", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
}

fn call(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
}

impl Piped {
    /// Writes `messages`, closes our writing side at once (the server's stdin
    /// reaches end of file), then reads every line until the server closes its
    /// output. Returns the messages, when the input was closed, and the reason
    /// `run` returned.
    async fn write_close_and_read(self, messages: &[Value]) -> (Vec<Value>, Instant, String) {
        let Piped { client, serving } = self;
        let (read, mut write) = client.into_split();
        within(write.write_all(lines(messages).as_bytes()))
            .await
            .unwrap();
        within(write.shutdown()).await.unwrap();
        let closed_at = Instant::now();
        let mut reader = BufReader::new(read).lines();
        let mut out = Vec::new();
        while let Some(line) = within(reader.next_line()).await.unwrap() {
            out.push(serde_json::from_str(&line).expect("JSON-RPC"));
        }
        let reason = within(serving).await.unwrap();
        (out, closed_at, reason)
    }
}

fn answer(out: &[Value], id: i64) -> Option<&Value> {
    out.iter()
        .find(|m| m["id"] == id && m.get("method").is_none())
}

/// A call still being handled when stdin reaches end of file is answered, and
/// `run` returns soon after (it used to cancel the call: no answer).
#[tokio::test]
async fn a_call_in_flight_when_stdin_ends_is_answered() {
    let (tx, _rx) = mpsc::unbounded_channel();
    let p = piped(&server(tx), ServeOptions::default());
    let mut messages = handshake(json!({}));
    messages.push(call(1, "slow", json!({"ms": 400})));
    let (out, closed_at, reason) = p.write_close_and_read(&messages).await;
    let took = closed_at.elapsed();
    assert_eq!(reason, "stdin closed");
    assert!(answer(&out, 0).is_some(), "{out:?}");
    let a = answer(&out, 1).expect("the call in flight is answered");
    assert_eq!(a["result"]["content"][0]["text"], "slept", "{a}");
    assert!(
        took < Duration::from_secs(5),
        "run returned {took:?} after the input closed"
    );
}

/// A handler slower than the grace is cancelled when the grace ends and not
/// answered; a faster one in flight at the same time is answered; `run` returns
/// within the grace and a bound.
#[tokio::test]
async fn a_handler_slower_than_the_grace_is_cancelled_and_not_answered() {
    let (tx, mut cancelled) = mpsc::unbounded_channel();
    let grace = Duration::from_millis(500);
    let options = ServeOptions {
        drain_on_close: grace,
        ..ServeOptions::default()
    };
    let p = piped(&server(tx), options);
    let mut messages = handshake(json!({}));
    messages.push(call(1, "hang", json!({})));
    messages.push(call(2, "slow", json!({"ms": 100})));
    let (out, closed_at, reason) = p.write_close_and_read(&messages).await;
    let took = closed_at.elapsed();
    assert_eq!(reason, "stdin closed");
    assert!(
        answer(&out, 2).is_some(),
        "the fast call is answered: {out:?}"
    );
    assert!(answer(&out, 1).is_none(), "the hung call is not: {out:?}");
    assert_eq!(
        within(cancelled.recv()).await,
        Some(()),
        "its context saw it"
    );
    assert!(took >= grace, "the grace was kept: {took:?}");
    assert!(
        took < grace + Duration::from_secs(3),
        "run returned {took:?} after the input closed"
    );
}

/// With no grace, today's end: the call in flight is cancelled at once.
#[tokio::test]
async fn no_grace_cancels_at_once() {
    let (tx, mut cancelled) = mpsc::unbounded_channel();
    let options = ServeOptions {
        drain_on_close: Duration::ZERO,
        ..ServeOptions::default()
    };
    let p = piped(&server(tx), options);
    let mut messages = handshake(json!({}));
    messages.push(call(1, "slow", json!({"ms": 5000})));
    messages.push(call(2, "hang", json!({})));
    let (out, closed_at, _) = p.write_close_and_read(&messages).await;
    assert!(
        answer(&out, 1).is_none() && answer(&out, 2).is_none(),
        "{out:?}"
    );
    assert_eq!(within(cancelled.recv()).await, Some(()));
    // Well before the slow call could have finished: it was not waited for.
    assert!(closed_at.elapsed() < Duration::from_secs(3));
}

/// A tool that asks the client for sampling after the input closed gets an
/// error at once (no answer can arrive any more), not a wait for the request's
/// timeout (60 s here), and answers with it.
#[tokio::test]
async fn asking_the_client_after_the_input_closed_fails_at_once() {
    let (tx, _rx) = mpsc::unbounded_channel();
    let p = piped(&server(tx), ServeOptions::default());
    let mut messages = handshake(json!({"sampling": {}}));
    messages.push(call(1, "ask_after", json!({"ms": 300})));
    let (out, closed_at, _) = p.write_close_and_read(&messages).await;
    let took = closed_at.elapsed();
    let a = answer(&out, 1).expect("the tool answers");
    assert_eq!(a["result"]["isError"], true, "{a}");
    let said = a["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        said.starts_with("sampling failed") && said.contains("closed"),
        "{said}"
    );
    assert!(
        !out.iter().any(|m| m["method"] == "sampling/createMessage"),
        "nothing is asked of a client whose input closed: {out:?}"
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
}

/// An HTTP session's end (DELETE) means the session is gone: the request still
/// being handled is cancelled at once, even with a grace configured.
#[tokio::test]
async fn an_http_session_ending_cancels_at_once() {
    use switchboard_transport::http::server::{HttpServer, HttpServerConfig};
    let (tx, mut cancelled) = mpsc::unbounded_channel();
    let server = server(tx);
    let (http, mut acceptor) = within(HttpServer::bind(HttpServerConfig::default()))
        .await
        .unwrap();
    let url = http.url();
    let options = ServeOptions {
        drain_on_close: Duration::from_secs(30),
        ..ServeOptions::default()
    };
    // Served with `serve` itself, not `serve_http` (which sets no grace): the
    // close reason alone must keep the drain away.
    let serving = tokio::spawn(async move {
        let session = acceptor.accept().await.expect("a session");
        server.serve(session.transport, options).run().await
    });
    let c = reqwest::Client::builder().timeout(BOUND).build().unwrap();
    let post = |session: Option<&str>, body: Value| {
        let mut b = c
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string());
        if let Some(s) = session {
            b = b.header("mcp-session-id", s);
        }
        b
    };
    let [init, initialized] = <[Value; 2]>::try_from(handshake(json!({}))).unwrap();
    let resp = within(post(None, init).send()).await.unwrap();
    assert_eq!(resp.status(), 200);
    let sid = resp.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    drop(within(resp.bytes()).await.unwrap());
    let resp = within(post(Some(&sid), initialized).send()).await.unwrap();
    assert_eq!(resp.status(), 202);
    // The hung call, on a stream of its own.
    let hung = tokio::spawn(post(Some(&sid), call(1, "hang", json!({}))).send());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let deleted = within(
        c.delete(&url)
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", "2025-11-25")
            .send(),
    )
    .await
    .unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());
    let at = Instant::now();
    assert_eq!(within(cancelled.recv()).await, Some(()));
    let reason = within(serving).await.unwrap();
    assert!(
        at.elapsed() < Duration::from_secs(3),
        "cancelled {:?} after DELETE",
        at.elapsed()
    );
    assert!(reason.contains("deleted"), "{reason}");
    hung.abort();
    drop(http);
}

/// A `subscriptions/listen` (2026-07-28) over stdio runs until the client
/// cancels it or the connection ends: at stdin's end it ends at once with its
/// final result, rather than holding the server for the whole grace.
#[tokio::test]
async fn a_listen_ends_with_its_final_result_when_stdin_ends() {
    let (tx, _rx) = mpsc::unbounded_channel();
    let p = piped(&server(tx), ServeOptions::default());
    let listen = json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {}},
                   "notifications": {"toolsListChanged": true}}});
    let (out, closed_at, _) = p.write_close_and_read(&[listen]).await;
    let took = closed_at.elapsed();
    let done = answer(&out, 7).expect("the listen's final result");
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(
        done["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
}
