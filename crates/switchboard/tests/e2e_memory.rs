//! End to end in one process: the library's `Client` against `Server::serve` over
//! `memory::pair` (the real line codec), with the example server's tools
//! (`examples/echo_server.rs`, included below) plus test-only tools. Where the
//! client cannot misbehave on purpose, the server's end is driven with raw
//! JSON-RPC messages. Every await is bounded.

#[allow(dead_code)]
#[path = "../examples/echo_server.rs"]
mod echo_server;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use switchboard::peer::CancelToken;
use switchboard::server::{ServeOptions, Server, ToolError};
use switchboard::{CallOptions, Client, ClientOptions};
use switchboard_protocol::jsonrpc::{Batching, Message, Request};
use switchboard_protocol::types::{
    CallToolResult, CreateMessageResult, Implementation, ProgressNotificationParams, TextContent,
};
use switchboard_protocol::version::Supported;
use switchboard_protocol::ProtocolVersion::{self, *};
use switchboard_transport::{memory, Inbound, Receiver, Sender, TransportConfig};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

const BOUND: Duration = Duration::from_secs(10);

async fn within<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, f)
        .await
        .expect("the test's bound elapsed")
}

/// What the `wait_for_cancel` tool reports: it started, and (when its future is
/// dropped) whether its `ToolContext` saw the cancellation.
struct Probe {
    started: mpsc::UnboundedReceiver<()>,
    dropped: mpsc::UnboundedReceiver<bool>,
}

/// Sends `ctx.is_cancelled()` when the tool's future is dropped or finishes.
struct DropReport {
    ctx: switchboard::server::ToolContext,
    tx: mpsc::UnboundedSender<bool>,
}

impl Drop for DropReport {
    fn drop(&mut self) {
        let _ = self.tx.send(self.ctx.is_cancelled());
    }
}

/// The example's server plus `wait_for_cancel` (waits until cancelled).
fn server() -> (Server, Probe) {
    let (started_tx, started) = mpsc::unbounded_channel();
    let (dropped_tx, dropped) = mpsc::unbounded_channel();
    let tool = serde_json::from_value(json!({
        "name": "wait_for_cancel",
        "inputSchema": {"type": "object"}
    }))
    .unwrap();
    let server = echo_server::builder()
        .tool(tool, move |_args, ctx| {
            let started_tx = started_tx.clone();
            let report = DropReport {
                ctx: ctx.clone(),
                tx: dropped_tx.clone(),
            };
            async move {
                let _report = report;
                let _ = started_tx.send(());
                ctx.cancelled().await;
                Err::<CallToolResult, _>(ToolError::new("cancelled"))
            }
        })
        .build()
        .expect("the server builds");
    (server, Probe { started, dropped })
}

fn client_options() -> ClientOptions {
    ClientOptions::new(Implementation::new("e2e-client", "0.1.0"))
}

/// Serves `server` on one end of a pair and connects a client on the other.
async fn connect(server: &Server, options: ClientOptions) -> (Client, JoinHandle<String>) {
    let (client_end, server_end) = memory::pair(&TransportConfig::default());
    let session = server.serve(server_end, ServeOptions::default());
    let serving = tokio::spawn(session.run());
    let client = within(Client::connect(client_end, options))
        .await
        .expect("the client connects");
    (client, serving)
}

fn first_text(r: &CallToolResult) -> String {
    let v = serde_json::to_value(&r.content[0]).unwrap();
    v["text"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn each_legacy_version_is_negotiated_when_it_is_the_only_one_offered() {
    let (server, _probe) = server();
    for v in [V2024_11_05, V2025_03_26, V2025_06_18, V2025_11_25] {
        let mut options = client_options();
        options.supported = Supported::new([v]).unwrap();
        let (client, serving) = connect(&server, options).await;
        assert_eq!(client.protocol_version(), v);
        assert_eq!(client.server_info().name, "echo-server");
        assert!(client.server_capabilities().tools.is_some());
        assert!(client.instructions().is_some());
        within(client.ping()).await.unwrap();
        let r = within(client.call_tool("echo", json!({"text": v.as_str()})))
            .await
            .unwrap();
        assert_eq!(first_text(&r), v.as_str());
        drop(client);
        let reason = within(serving).await.unwrap();
        assert_eq!(reason, "peer closed the connection", "{v}");
    }
}

#[tokio::test]
async fn list_tools_and_echo() {
    let (server, _probe) = server();
    let (client, _serving) = connect(&server, client_options()).await;
    assert_eq!(client.protocol_version(), ProtocolVersion::LATEST_LEGACY);
    let tools = within(client.list_tools()).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "echo",
            "slow_progress",
            "fail",
            "ask_sampling",
            "wait_for_cancel"
        ]
    );
    let r = within(client.call_tool("echo", json!({"text": "hello, world"})))
        .await
        .unwrap();
    assert!(!r.is_error());
    assert_eq!(first_text(&r), "hello, world");
    // A missing required argument: from 2025-11-25 an isError result.
    let r = within(client.call_tool("echo", json!({}))).await.unwrap();
    assert!(r.is_error());
}

#[tokio::test]
async fn progress_reaches_the_callback_in_order() {
    let (server, _probe) = server();
    let (client, _serving) = connect(&server, client_options()).await;
    let seen: Arc<Mutex<Vec<ProgressNotificationParams>>> = Arc::default();
    let sink = seen.clone();
    let options = CallOptions::new().on_progress(move |p| sink.lock().unwrap().push(p));
    let r =
        within(client.call_tool_with("slow_progress", json!({"steps": 6, "delay_ms": 5}), options))
            .await
            .unwrap();
    assert_eq!(first_text(&r), "done");
    let seen = seen.lock().unwrap();
    let values: Vec<Value> = seen
        .iter()
        .map(|p| {
            let v = serde_json::to_value(p).unwrap();
            json!([v["progress"], v["total"], v["message"]])
        })
        .collect();
    let expected: Vec<Value> = (1..=6)
        .map(|i| json!([i, 6, format!("step {i} of 6")]))
        .collect();
    assert_eq!(values, expected);
}

#[tokio::test]
async fn a_failing_tool_is_an_is_error_result() {
    let (server, _probe) = server();
    let (client, _serving) = connect(&server, client_options()).await;
    let r = within(client.call_tool("fail", json!({}))).await.unwrap();
    assert!(r.is_error());
    assert_eq!(first_text(&r), "this tool always fails");
    // An unknown tool is a JSON-RPC error.
    let e = within(client.call_tool("nope", json!({})))
        .await
        .unwrap_err();
    assert_eq!(e.error_object().unwrap().code, -32602);
}

/// A tool handler that panics, in its synchronous part (before its future exists)
/// or while its future runs, gets an internal error for that call only; the
/// session and its other calls go on.
#[tokio::test]
async fn a_panicking_tool_gets_an_internal_error_and_the_session_goes_on() {
    let server = echo_server::builder()
        .tool(
            serde_json::from_value(
                json!({"name": "panics_at_once", "inputSchema": {"type": "object"}}),
            )
            .unwrap(),
            |_args, _ctx| -> std::future::Ready<Result<CallToolResult, ToolError>> {
                panic!("a bug before the future")
            },
        )
        .tool(
            serde_json::from_value(
                json!({"name": "panics_later", "inputSchema": {"type": "object"}}),
            )
            .unwrap(),
            |_args, _ctx| async move {
                tokio::task::yield_now().await;
                panic!("a bug inside the future")
            },
        )
        .build()
        .expect("the server builds");
    let (client, _serving) = connect(&server, client_options()).await;
    for name in ["panics_at_once", "panics_later", "panics_at_once"] {
        let e = within(client.call_tool(name, json!({})))
            .await
            .expect_err("a panic is an error");
        let object = e.error_object().unwrap_or_else(|| panic!("{name}: {e}"));
        assert_eq!(object.code, -32603, "{name}");
        assert_eq!(
            object.message, "internal error: the handler failed",
            "{name}"
        );
        let r = within(client.call_tool("echo", json!({"text": name})))
            .await
            .expect("the session goes on");
        assert_eq!(first_text(&r), name);
    }
}

/// A message longer than the line limit is dropped unread, but what its ends show
/// is used: an answer too long fails its call at once (`is_transport`, naming the
/// limit) instead of leaving it to its timeout; a request too long is answered
/// with an error carrying its id. The session goes on in both cases.
#[tokio::test]
async fn a_message_over_the_line_limit_fails_its_call_at_once() {
    let server = echo_server::builder()
        .tool(
            serde_json::from_value(json!({"name": "big", "inputSchema": {"type": "object"}}))
                .unwrap(),
            |_args, _ctx| async move {
                Ok(CallToolResult {
                    content: vec![TextContent::new("x".repeat(10_000)).into()],
                    ..Default::default()
                })
            },
        )
        .build()
        .expect("the server builds");
    let mut config = TransportConfig::default();
    config.max_line_len = 4096;
    let (client_end, server_end) = memory::pair(&config);
    let serving = tokio::spawn(server.serve(server_end, ServeOptions::default()).run());
    let client = within(Client::connect(client_end, client_options()))
        .await
        .expect("the client connects");

    let e = within(client.call_tool("big", json!({})))
        .await
        .expect_err("the answer is over the limit");
    assert!(e.is_transport(), "{e:?}");
    assert!(
        e.to_string().contains("exceeds the limit of 4096 bytes"),
        "{e}"
    );

    let e = within(client.call_tool("echo", json!({"text": "y".repeat(10_000)})))
        .await
        .expect_err("the request is over the server's limit");
    assert!(e.is_protocol(), "{e:?}");
    assert_eq!(e.error_object().unwrap().code, -32700);

    let r = within(client.call_tool("echo", json!({"text": "small"})))
        .await
        .expect("the session goes on");
    assert_eq!(first_text(&r), "small");
    drop(client);
    within(serving).await.unwrap();
}

#[tokio::test]
async fn the_tool_asks_the_client_to_sample() {
    let (server, _probe) = server();
    let options = client_options().with_sampling(|params, _cx| async move {
        let asked = serde_json::to_value(&params.messages[0].content).unwrap();
        let answer: CreateMessageResult = serde_json::from_value(json!({
            "role": "assistant",
            "content": {"type": "text", "text": format!("model: {}", asked["text"].as_str().unwrap())},
            "model": "test-model",
            "stopReason": "endTurn"
        }))
        .unwrap();
        Ok(answer)
    });
    let (client, _serving) = connect(&server, options).await;
    let r = within(client.call_tool("ask_sampling", json!({"prompt": "2+2?"})))
        .await
        .unwrap();
    assert!(!r.is_error(), "{r:?}");
    assert_eq!(first_text(&r), "model: 2+2?");

    // A client without sampling: refused before anything is sent, as isError.
    let (plain, _serving) = connect(&server, client_options()).await;
    let r = within(plain.call_tool("ask_sampling", json!({"prompt": "x"})))
        .await
        .unwrap();
    assert!(r.is_error());
    assert!(first_text(&r).contains("sampling"), "{r:?}");
}

#[tokio::test]
async fn cancelling_a_call_reaches_the_tool() {
    let (server, mut probe) = server();
    let (client, _serving) = connect(&server, client_options()).await;
    let token = CancelToken::new();
    let call = {
        let client = client.clone();
        let options = CallOptions::new().cancel(token.clone());
        tokio::spawn(async move {
            client
                .call_tool_with("wait_for_cancel", json!({}), options)
                .await
        })
    };
    within(probe.started.recv())
        .await
        .expect("the tool started");
    token.cancel_with("the user changed their mind");
    let e = within(call).await.unwrap().unwrap_err();
    assert!(e.is_cancelled(), "{e:?}");
    // The server got notifications/cancelled: the tool's context saw it before its
    // future was dropped.
    assert_eq!(within(probe.dropped.recv()).await, Some(true));
    // The session goes on.
    let r = within(client.call_tool("echo", json!({"text": "still here"})))
        .await
        .unwrap();
    assert_eq!(first_text(&r), "still here");
}

// ---------------------------------------------------------------------------
// The server's end driven with raw messages
// ---------------------------------------------------------------------------

struct Raw {
    tx: Sender,
    rx: Receiver,
    serving: JoinHandle<String>,
}

fn raw_session(server: &Server) -> Raw {
    raw_session_with(server, ServeOptions::default())
}

fn raw_session_with(server: &Server, options: ServeOptions) -> Raw {
    let (client_end, server_end) = memory::pair(&TransportConfig::default());
    let serving = tokio::spawn(server.serve(server_end, options).run());
    let (tx, rx) = client_end.split();
    Raw { tx, rx, serving }
}

impl Raw {
    async fn request(&self, id: i64, method: &str, params: Value) {
        let r = Request::new(id, method, &params).unwrap();
        within(self.tx.send(Message::Request(r))).await.unwrap();
    }

    async fn notify(&self, method: &str, params: Value) {
        let n = switchboard_protocol::jsonrpc::Notification::new(method, &params).unwrap();
        within(self.tx.send(Message::Notification(n)))
            .await
            .unwrap();
    }

    /// The next message as JSON.
    async fn recv(&mut self) -> Value {
        match within(self.rx.recv()).await {
            Some(Inbound::Message(m)) => serde_json::from_slice(&m.encode()).unwrap(),
            other => panic!("expected a message, got {other:?}"),
        }
    }

    async fn initialize(&mut self, version: &str) -> Value {
        self.request(
            0,
            "initialize",
            json!({
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"}
            }),
        )
        .await;
        let answer = self.recv().await;
        self.notify("notifications/initialized", json!({})).await;
        answer
    }
}

#[tokio::test]
async fn a_request_before_initialize_is_invalid_request() {
    let (server, _probe) = server();
    let mut raw = raw_session(&server);
    raw.request(1, "tools/list", json!({})).await;
    let e = raw.recv().await;
    assert_eq!(e["id"], 1);
    assert_eq!(e["error"]["code"], -32600, "{e}");
    // ping is allowed before initialize.
    raw.request(2, "ping", json!({})).await;
    assert_eq!(
        raw.recv().await,
        json!({"jsonrpc": "2.0", "id": 2, "result": {}})
    );
    // The handshake still works afterwards.
    let init = raw.initialize("2025-06-18").await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "echo-server");
    assert_eq!(
        init["result"]["capabilities"]["tools"]["listChanged"],
        false
    );
    raw.request(3, "tools/list", json!({})).await;
    let list = raw.recv().await;
    assert_eq!(list["id"], 3);
    assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 5);
    // A second initialize is refused.
    raw.request(4, "initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}})).await;
    assert_eq!(raw.recv().await["error"]["code"], -32600);
}

#[tokio::test]
async fn batches_are_served_after_2025_03_26_is_negotiated() {
    let (server, _probe) = server();
    let mut raw = raw_session(&server);
    let init = raw.initialize("2025-03-26").await;
    assert_eq!(init["result"]["protocolVersion"], "2025-03-26");
    raw.tx.set_batching(Batching::Allowed);
    let batch = vec![
        Message::Request(Request::new(7, "ping", &json!({})).unwrap()),
        Message::Request(
            Request::new(
                8,
                "tools/call",
                &json!({"name": "echo", "arguments": {"text": "batched"}}),
            )
            .unwrap(),
        ),
    ];
    within(raw.tx.send_batch(batch)).await.unwrap();
    // Each item is answered, all in one batch (JSON-RPC 2.0 §6; in any order).
    let mut answers: Vec<Value> = match within(raw.rx.recv()).await {
        Some(Inbound::Batch(items)) => items
            .into_iter()
            .map(|m| serde_json::from_slice(&m.unwrap().encode()).unwrap())
            .collect(),
        other => panic!("expected one batch of answers, got {other:?}"),
    };
    answers.sort_by_key(|a| a["id"].as_i64());
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert_eq!(answers[0], json!({"jsonrpc": "2.0", "id": 7, "result": {}}));
    assert_eq!(answers[1]["result"]["content"][0]["text"], "batched");
}

#[tokio::test]
async fn a_modern_request_is_served_without_a_session() {
    let (server, _probe) = server();
    let mut raw = raw_session(&server);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"sampling": {}}
    });
    raw.request(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "modern"}, "_meta": meta}),
    )
    .await;
    let r = raw.recv().await;
    assert_eq!(r["result"]["content"][0]["text"], "modern", "{r}");
    assert_eq!(r["result"]["resultType"], "complete");
    // A server-to-client request becomes an input_required round (MRTR).
    raw.request(
        2,
        "tools/call",
        json!({"name": "ask_sampling", "arguments": {"prompt": "x"}, "_meta": meta}),
    )
    .await;
    let r = raw.recv().await;
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    assert_eq!(
        r["result"]["inputRequests"]["input-0"]["method"], "sampling/createMessage",
        "{r}"
    );
    assert!(r["result"]["requestState"].is_string(), "{r}");
    // A wrong version: -32022.
    raw.request(
        3,
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01",
                         "io.modelcontextprotocol/clientCapabilities": {}}}),
    )
    .await;
    assert_eq!(raw.recv().await["error"]["code"], -32022);
}

/// The client closing its writer ends the server's input while its output stays
/// usable: the call still running goes on for `drain_on_close`, then is
/// cancelled (not answered) and `run` returns.
#[tokio::test]
async fn closing_the_input_ends_serve_and_cancels_what_runs_after_the_grace() {
    let (server, mut probe) = server();
    let grace = Duration::from_millis(300);
    let options = ServeOptions {
        drain_on_close: grace,
        ..ServeOptions::default()
    };
    let mut raw = raw_session_with(&server, options);
    raw.initialize("2025-11-25").await;
    raw.request(5, "tools/call", json!({"name": "wait_for_cancel"}))
        .await;
    within(probe.started.recv())
        .await
        .expect("the tool started");
    let Raw {
        tx,
        mut rx,
        serving,
    } = raw;
    drop(tx);
    let closed_at = std::time::Instant::now();
    let reason = within(serving).await.unwrap();
    assert!(closed_at.elapsed() >= grace, "{:?}", closed_at.elapsed());
    assert_eq!(reason, "peer closed the connection");
    assert_eq!(within(probe.dropped.recv()).await, Some(true));
    // Nothing answers the cancelled call: the output ends.
    match within(rx.recv()).await {
        Some(Inbound::Closed { .. }) | None => {}
        other => panic!("expected the end, got {other:?}"),
    }
}

#[tokio::test]
async fn no_server_request_before_notifications_initialized() {
    let (server, _probe) = server();
    let mut raw = raw_session(&server);
    raw.request(
        0,
        "initialize",
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"sampling": {}},
            "clientInfo": {"name": "raw", "version": "1"}
        }),
    )
    .await;
    assert_eq!(raw.recv().await["result"]["protocolVersion"], "2025-11-25");
    // Requests may overtake notifications/initialized, but the server must not ask
    // the client anything yet: the tool's sampling request is refused locally.
    raw.request(
        1,
        "tools/call",
        json!({"name": "ask_sampling", "arguments": {"prompt": "x"}}),
    )
    .await;
    let r = raw.recv().await;
    assert_eq!(r["id"], 1);
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(r["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("before initialization"));
    // After the notification the tool asks; answer it by hand.
    raw.notify("notifications/initialized", json!({})).await;
    raw.request(
        2,
        "tools/call",
        json!({"name": "ask_sampling", "arguments": {"prompt": "y"}}),
    )
    .await;
    let ask = raw.recv().await;
    assert_eq!(ask["method"], "sampling/createMessage", "{ask}");
    assert_eq!(ask["params"]["messages"][0]["content"]["text"], "y");
    let answer = switchboard_protocol::jsonrpc::Response::new(
        serde_json::from_value(ask["id"].clone()).unwrap(),
        &json!({"role": "assistant", "content": {"type": "text", "text": "by hand"}, "model": "m"}),
    )
    .unwrap();
    within(raw.tx.send(Message::Response(answer)))
        .await
        .unwrap();
    let r = raw.recv().await;
    assert_eq!(r["id"], 2);
    assert_eq!(r["result"]["content"][0]["text"], "by hand", "{r}");
}

#[tokio::test]
async fn a_batch_over_stdio_is_answered_with_one_array() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (server, _probe) = server();
    let (ours, theirs) = tokio::io::duplex(65_536);
    let (their_r, their_w) = tokio::io::split(theirs);
    let transport = switchboard_transport::connect(
        their_r,
        their_w,
        switchboard_transport::Role::Server,
        &TransportConfig::default(),
        tracing::Span::none(),
    );
    let serving = tokio::spawn(server.serve(transport, ServeOptions::default()).run());
    let (our_r, mut our_w) = tokio::io::split(ours);
    let mut lines = BufReader::new(our_r).lines();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    within(our_w.write_all(format!("{init}\n").as_bytes()))
        .await
        .unwrap();
    assert_eq!(
        next_json(&mut lines).await["result"]["protocolVersion"],
        "2025-03-26"
    );
    let rest = concat!(
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "\n",
        r#"[{"jsonrpc":"2.0","id":9,"method":7},{"jsonrpc":"1.0","method":"x"},{"jsonrpc":"2.0","id":10,"method":"ping"}]"#,
        "\n"
    );
    within(our_w.write_all(rest.as_bytes())).await.unwrap();
    // One line, an array (JSON-RPC 2.0 §6): the invalid request answered with
    // -32600 and its id, the valid one served, the broken notification not
    // answered.
    let mut answers = match next_json(&mut lines).await {
        Value::Array(answers) => answers,
        other => panic!("expected one array, got {other}"),
    };
    assert_eq!(answers.len(), 2, "{answers:?}");
    answers.sort_by_key(|a| a["id"].as_i64());
    assert_eq!(answers[0]["id"], 9);
    assert_eq!(answers[0]["error"]["code"], -32600);
    assert_eq!(
        answers[1],
        json!({"jsonrpc": "2.0", "id": 10, "result": {}})
    );
    // End of input ends the session.
    within(our_w.shutdown()).await.unwrap();
    within(serving).await.unwrap();
}

/// The next line the server wrote, as JSON.
async fn next_json<R: tokio::io::AsyncBufRead + Unpin>(lines: &mut tokio::io::Lines<R>) -> Value {
    let line = within(lines.next_line()).await.unwrap().expect("a line");
    serde_json::from_str(&line).unwrap()
}
