//! End to end over the stateless 2026-07-28 form of Streamable HTTP: the
//! conformance fixture (with its 2026-07-28 additions) served by
//! `Server::serve_http` on 127.0.0.1, driven by a raw HTTP client (reqwest).
//! Covers each row of the validation table (REVISIONS.md §5.4: HTTP status and
//! JSON-RPC code), progress on an SSE reply, MRTR round trips through the same
//! handler code as a legacy session, a tampered `requestState`, a listen stream,
//! GET/DELETE 405, a legacy session beside stateless exchanges, cancellation by
//! closing the stream, and SEP-1699 polling (a handler closes its stream, the
//! client resumes with `Last-Event-ID`). Every wait is bounded by a timeout.

mod common;

use std::future::Future;
use std::time::Duration;

use common::conformance_fixture as fixture;
use serde_json::{json, Value};
use switchboard::server::{ServeOptions, Server, ToolContext};
use switchboard_protocol::codec::sse::{SseItem, SseParser};
use switchboard_transport::http::server::{HttpServer, HttpServerConfig};
use tokio::sync::mpsc;

const LIMIT: Duration = Duration::from_secs(30);
const MODERN: &str = "2026-07-28";

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("test timed out")
}

async fn start(server: Server) -> HttpServer {
    let (http, acceptor) = HttpServer::bind(HttpServerConfig::default()).await.unwrap();
    assert!(http.local_addr().ip().is_loopback());
    tokio::spawn(server.serve_http(acceptor, ServeOptions::default()));
    http
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(LIMIT).build().unwrap()
}

fn meta(caps: Value) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": MODERN,
           "io.modelcontextprotocol/clientCapabilities": caps,
           "io.modelcontextprotocol/clientInfo": {"name": "e2e", "version": "0"}})
}

/// The spec's headers for a request body: version, method and (for the three
/// named methods) name.
fn headers_for(body: &Value) -> Vec<(String, String)> {
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    let mut h = vec![
        ("mcp-protocol-version".to_owned(), MODERN.to_owned()),
        ("mcp-method".to_owned(), method.clone()),
    ];
    let name = match method.as_str() {
        "tools/call" | "prompts/get" => body["params"]["name"].as_str(),
        "resources/read" => body["params"]["uri"].as_str(),
        _ => None,
    };
    if let Some(n) = name {
        h.push(("mcp-name".to_owned(), n.to_owned()));
    }
    h
}

/// A reply: status, content type, and its JSON-RPC messages (one for a JSON reply,
/// each event of an SSE reply).
struct Reply {
    status: u16,
    content_type: String,
    messages: Vec<Value>,
}

impl Reply {
    /// The last message (the response).
    fn last(&self) -> &Value {
        self.messages.last().expect("a message")
    }
}

fn sse_messages(parser: &mut SseParser, chunk: &[u8], out: &mut Vec<Value>) {
    // A lone response that came first is a JSON body (`json_reply_within`).
    if chunk.trim_ascii_start().starts_with(b"{") {
        out.push(serde_json::from_slice(chunk).unwrap());
        return;
    }
    let items: Vec<_> = parser.feed(chunk).collect();
    for item in items {
        if let SseItem::Event(e) = item.unwrap() {
            if !e.data.is_empty() {
                out.push(serde_json::from_str(&e.data).unwrap());
            }
        }
    }
}

async fn send(http: &HttpServer, body: Value, headers: Vec<(String, String)>) -> Reply {
    let mut b = client()
        .post(http.url())
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string());
    for (k, v) in headers {
        b = b.header(k, v);
    }
    let r = bounded(b.send()).await.unwrap();
    let status = r.status().as_u16();
    let content_type = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let bytes = bounded(r.bytes()).await.unwrap();
    let messages = if content_type == "text/event-stream" {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        sse_messages(&mut parser, &bytes, &mut out);
        out
    } else if bytes.is_empty() {
        Vec::new()
    } else {
        vec![serde_json::from_slice(&bytes).unwrap()]
    };
    Reply {
        status,
        content_type,
        messages,
    }
}

/// A request with the spec's headers.
async fn call(http: &HttpServer, id: u64, method: &str, params: Value) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let headers = headers_for(&body);
    send(http, body, headers).await
}

/// A POST for a 2025-11-25 session (`sid`; none for `initialize`).
fn legacy_post(
    c: &reqwest::Client,
    http: &HttpServer,
    body: Value,
    sid: Option<&str>,
) -> reqwest::RequestBuilder {
    let b = c
        .post(http.url())
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string());
    match sid {
        Some(s) => b
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", "2025-11-25"),
        None => b,
    }
}

/// Opens a 2025-11-25 session declaring `capabilities` (`initialize`, then
/// `notifications/initialized`, answered 202); its id.
async fn legacy_session(c: &reqwest::Client, http: &HttpServer, capabilities: Value) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities,
        "clientInfo": {"name": "legacy", "version": "0"}}});
    let r = bounded(legacy_post(c, http, init, None).send())
        .await
        .unwrap();
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let _ = bounded(r.bytes()).await.unwrap();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = bounded(legacy_post(c, http, initialized, Some(&sid)).send())
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    sid
}

fn tool_call(name: &str, args: Value, caps: Value) -> Value {
    json!({"name": name, "arguments": args, "_meta": meta(caps)})
}

#[tokio::test]
async fn each_validation_row_gets_its_status_and_code() {
    let http = start(fixture::server_2026()).await;
    let ok_meta = json!({"_meta": meta(json!({}))});

    // Required `_meta` missing: 400, -32602.
    let r = call(&http, 1, "tools/list", json!({})).await;
    assert_eq!(
        (r.status, r.last()["error"]["code"].as_i64()),
        (400, Some(-32602))
    );
    assert_eq!(r.last()["id"], 1, "errors echo the id");
    let r = call(
        &http,
        2,
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}),
    )
    .await;
    assert_eq!(
        (r.status, r.last()["error"]["code"].as_i64()),
        (400, Some(-32602))
    );

    // Header mismatches: 400, -32020.
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": ok_meta});
    let wrong_version = vec![
        ("mcp-protocol-version".into(), "2025-11-25".into()),
        ("mcp-method".into(), "tools/list".into()),
    ];
    let no_method = vec![("mcp-protocol-version".into(), MODERN.into())];
    let wrong_method = vec![
        ("mcp-protocol-version".into(), MODERN.into()),
        ("mcp-method".into(), "prompts/list".into()),
    ];
    for headers in [wrong_version, no_method, wrong_method] {
        let r = send(&http, body.clone(), headers.clone()).await;
        assert_eq!(
            (r.status, r.last()["error"]["code"].as_i64()),
            (400, Some(-32020)),
            "{headers:?}"
        );
    }
    let call_body = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": tool_call("test_simple_text", json!({}), json!({}))});
    let mut wrong_name = headers_for(&call_body);
    wrong_name.retain(|(k, _)| k != "mcp-name");
    let r = send(&http, call_body.clone(), wrong_name.clone()).await;
    assert_eq!(
        (r.status, r.last()["error"]["code"].as_i64()),
        (400, Some(-32020))
    );
    wrong_name.push(("mcp-name".into(), "test_error_handling".into()));
    let r = send(&http, call_body.clone(), wrong_name).await;
    assert_eq!(
        (r.status, r.last()["error"]["code"].as_i64()),
        (400, Some(-32020))
    );
    // Whitespace around a value is not part of it (RFC 9110 §5.5).
    let mut padded = headers_for(&call_body);
    padded.retain(|(k, _)| k != "mcp-name");
    padded.push(("mcp-name".into(), "  test_simple_text ".into()));
    let r = send(&http, call_body, padded).await;
    assert_eq!(r.status, 200, "{:?}", r.messages);

    // Mcp-Param-*: mirrored argument, base64-encoded value, mismatch, missing.
    let region = |value: Value, header: Option<&str>| {
        let body = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": tool_call("test_x_mcp_header", json!({"region": value}), json!({}))});
        let mut h = headers_for(&body);
        if let Some(v) = header {
            h.push(("mcp-param-region".into(), v.to_owned()));
        }
        (body, h)
    };
    let (b, h) = region(json!("eu-west"), Some("eu-west"));
    let r = send(&http, b, h).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        fixture::first_text(&r.last()["result"]),
        "region=\"eu-west\""
    );
    let (b, h) = region(json!("été"), Some("=?base64?w6l0w6k=?="));
    assert_eq!(send(&http, b, h).await.status, 200);
    for (value, header) in [
        (json!("eu-west"), Some("us-east")),
        (json!("eu-west"), None),
    ] {
        let (b, h) = region(value, header);
        let r = send(&http, b, h).await;
        assert_eq!(
            (r.status, r.last()["error"]["code"].as_i64()),
            (400, Some(-32020))
        );
    }

    // A version this server does not speak: 400, -32022 with the supported ones.
    let body = json!({"jsonrpc": "2.0", "id": 6, "method": "server/discover",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01",
                             "io.modelcontextprotocol/clientCapabilities": {}}}});
    let headers = vec![
        ("mcp-protocol-version".into(), "2099-01-01".into()),
        ("mcp-method".into(), "server/discover".into()),
    ];
    let r = send(&http, body, headers).await;
    assert_eq!(
        (r.status, r.last()["error"]["code"].as_i64()),
        (400, Some(-32022))
    );
    assert_eq!(r.last()["error"]["data"]["requested"], "2099-01-01");
    assert!(r.last()["error"]["data"]["supported"]
        .as_array()
        .unwrap()
        .contains(&json!(MODERN)));

    // An undeclared capability the tool needs: 400, -32021.
    let r = call(
        &http,
        7,
        "tools/call",
        tool_call("test_missing_capability", json!({}), json!({})),
    )
    .await;
    assert_eq!(
        (r.status, r.last()["error"]["code"].as_i64()),
        (400, Some(-32021))
    );
    assert!(r.last()["error"]["data"]["requiredCapabilities"]["sampling"].is_object());

    // Removed and unknown methods: 404, -32601.
    for method in ["ping", "initialize", "logging/setLevel", "nope/nothing"] {
        let r = call(&http, 8, method, ok_meta.clone()).await;
        assert_eq!(
            (r.status, r.last()["error"]["code"].as_i64()),
            (404, Some(-32601)),
            "{method}"
        );
    }

    // Any other error: 200 (e.g. an unknown tool, -32602 with a complete _meta).
    let r = call(
        &http,
        9,
        "tools/call",
        tool_call("nope", json!({}), json!({})),
    )
    .await;
    assert_eq!(
        (r.status, r.last()["error"]["code"].as_i64()),
        (200, Some(-32602))
    );

    // server/discover answers.
    let r = call(&http, 10, "server/discover", ok_meta).await;
    assert_eq!(r.status, 200);
    let d = &r.last()["result"];
    assert_eq!(d["resultType"], "complete");
    assert!(d["supportedVersions"]
        .as_array()
        .unwrap()
        .contains(&json!(MODERN)));
    assert_eq!(d["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(
        d["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "conformance-fixture"
    );
}

#[tokio::test]
async fn a_tool_call_reports_progress_on_an_sse_reply() {
    let http = start(fixture::server_2026()).await;
    let mut params = tool_call("test_tool_with_progress", json!({}), json!({}));
    params["_meta"]["progressToken"] = json!("p1");
    let r = call(&http, 1, "tools/call", params).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.content_type, "text/event-stream");
    let progress: Vec<f64> = r
        .messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            assert_eq!(m["params"]["progressToken"], "p1");
            m["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    assert_eq!(progress, [0.0, 50.0, 100.0]);
    assert_eq!(r.last()["id"], 1);
    assert_eq!(r.last()["result"]["resultType"], "complete");
    // Without a logLevel, a tool's log messages are not sent; with one, they are.
    let r = call(
        &http,
        2,
        "tools/call",
        tool_call("test_logging_tool", json!({}), json!({})),
    )
    .await;
    assert_eq!(r.messages.len(), 1, "{:?}", r.messages);
    let mut params = tool_call("test_logging_tool", json!({}), json!({}));
    params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
    let r = call(&http, 3, "tools/call", params).await;
    assert_eq!(r.messages[0]["method"], "notifications/message");
}

#[tokio::test]
async fn an_elicitation_round_trip_runs_the_same_handler_twice() {
    let http = start(fixture::server_2026()).await;
    let caps = json!({"elicitation": {}});
    let name = "test_input_required_result_elicitation";
    let first = call(
        &http,
        1,
        "tools/call",
        tool_call(name, json!({}), caps.clone()),
    )
    .await;
    assert_eq!(first.status, 200);
    let interim = &first.last()["result"];
    assert_eq!(interim["resultType"], "input_required");
    let ask = &interim["inputRequests"]["user_name"];
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["message"], "What is your name?");
    let state = interim["requestState"].as_str().unwrap().to_owned();

    let mut retry = tool_call(name, json!({}), caps.clone());
    retry["inputResponses"] =
        json!({"user_name": {"action": "accept", "content": {"name": "Alice"}}});
    retry["requestState"] = json!(state);
    let done = call(&http, 2, "tools/call", retry.clone()).await;
    let result = &done.last()["result"];
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_eq!(fixture::first_text(result), "Hello, Alice!");

    // A tampered requestState is refused.
    let mut tampered = retry.clone();
    tampered["requestState"] = json!(format!("{state}-TAMPERED"));
    let r = call(&http, 3, "tools/call", tampered).await;
    assert_eq!(r.last()["error"]["code"], -32602, "{:?}", r.messages);
    // So is a state issued for other arguments of the same tool.
    let mut moved = retry;
    moved["arguments"] = json!({"other": 1});
    let r = call(&http, 4, "tools/call", moved).await;
    assert_eq!(r.last()["error"]["code"], -32602);

    // Two rounds: the first answer travels in the sealed state.
    let name = "test_input_required_result_multi_round";
    let r1 = call(
        &http,
        5,
        "tools/call",
        tool_call(name, json!({}), caps.clone()),
    )
    .await;
    let s1 = r1.last()["result"]["requestState"].clone();
    let mut p2 = tool_call(name, json!({}), caps.clone());
    p2["inputResponses"] = json!({"step1": {"action": "accept", "content": {"name": "Bo"}}});
    p2["requestState"] = s1;
    let r2 = call(&http, 6, "tools/call", p2).await;
    let interim = &r2.last()["result"];
    assert!(interim["inputRequests"]["step2"].is_object(), "{interim}");
    let mut p3 = tool_call(name, json!({}), caps.clone());
    p3["inputResponses"] = json!({"step2": {"action": "accept", "content": {"color": "red"}}});
    p3["requestState"] = interim["requestState"].clone();
    let r3 = call(&http, 7, "tools/call", p3).await;
    assert_eq!(
        fixture::first_text(&r3.last()["result"]),
        "name=\"Bo\", color=\"red\""
    );

    // prompts/get asks too.
    let prompt = json!({"name": "test_input_required_result_prompt", "_meta": meta(caps)});
    let r = call(&http, 8, "prompts/get", prompt).await;
    assert_eq!(r.last()["result"]["resultType"], "input_required");
    assert!(r.last()["result"]["inputRequests"]["user_context"].is_object());
}

/// The same handler, over a legacy session: the ask is a real
/// `elicitation/create` request on the call's SSE stream.
#[tokio::test]
async fn the_same_handler_sends_a_request_in_a_legacy_session() {
    let http = start(fixture::server_2026()).await;
    let c = client();
    let post = |body: Value, sid: Option<&str>| legacy_post(&c, &http, body, sid);
    let sid = legacy_session(&c, &http, json!({"elicitation": {}})).await;
    let call_body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "test_input_required_result_elicitation", "arguments": {}}});
    let mut r = bounded(post(call_body, Some(&sid)).send()).await.unwrap();
    let mut parser = SseParser::new();
    let mut got = Vec::new();
    let request = loop {
        let chunk = bounded(r.chunk())
            .await
            .unwrap()
            .expect("the stream goes on");
        sse_messages(&mut parser, &chunk, &mut got);
        if let Some(m) = got.iter().find(|m| m["method"] == "elicitation/create") {
            break m.clone();
        }
    };
    assert_eq!(request["params"]["message"], "What is your name?");
    let answer = json!({"jsonrpc": "2.0", "id": request["id"],
        "result": {"action": "accept", "content": {"name": "Carol"}}});
    let a = bounded(post(answer, Some(&sid)).send()).await.unwrap();
    assert_eq!(a.status(), 202);
    let response = loop {
        if let Some(m) = got.iter().find(|m| m["id"] == 2) {
            break m.clone();
        }
        let chunk = bounded(r.chunk())
            .await
            .unwrap()
            .expect("the response comes");
        sse_messages(&mut parser, &chunk, &mut got);
    };
    assert_eq!(fixture::first_text(&response["result"]), "Hello, Carol!");
}

#[tokio::test]
async fn a_listen_is_acknowledged_then_gets_list_changes() {
    let http = start(fixture::server_2026()).await;
    let body = json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
        "params": {"_meta": meta(json!({})),
                   "notifications": {"toolsListChanged": true, "resourcesListChanged": true}}});
    let mut req = client()
        .post(http.url())
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    for (k, v) in headers_for(&body) {
        req = req.header(k, v);
    }
    let mut stream = bounded(req.body(body.to_string()).send()).await.unwrap();
    assert_eq!(stream.status(), 200);
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    let mut parser = SseParser::new();
    let mut got = Vec::new();
    while got.is_empty() {
        let chunk = bounded(stream.chunk()).await.unwrap().expect("the ack");
        sse_messages(&mut parser, &chunk, &mut got);
    }
    let ack = &got[0];
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen-1"
    );
    // Only what the server honours: it declares tools and resources listChanged.
    assert_eq!(ack["params"]["notifications"]["toolsListChanged"], true);
    assert_eq!(ack["params"]["notifications"]["resourcesListChanged"], true);

    // A prompt change is not asked for; a tool change is.
    for tool in ["test_trigger_prompt_change", "test_trigger_tool_change"] {
        let r = call(
            &http,
            2,
            "tools/call",
            tool_call(tool, json!({}), json!({})),
        )
        .await;
        assert_eq!(r.status, 200);
    }
    while got.len() < 2 {
        let chunk = bounded(stream.chunk()).await.unwrap().expect("a change");
        sse_messages(&mut parser, &chunk, &mut got);
    }
    assert_eq!(
        got[1]["method"], "notifications/tools/list_changed",
        "{got:?}"
    );
    assert_eq!(
        got[1]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen-1"
    );

    // Server shutdown ends the listen with its final result.
    drop(http);
    loop {
        if let Some(last) = got.iter().find(|m| m.get("result").is_some()) {
            assert_eq!(last["id"], "listen-1");
            assert_eq!(last["result"]["resultType"], "complete");
            assert_eq!(
                last["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
                "listen-1"
            );
            break;
        }
        let chunk = bounded(stream.chunk())
            .await
            .unwrap()
            .expect("the final result");
        sse_messages(&mut parser, &chunk, &mut got);
    }
}

#[tokio::test]
async fn get_and_delete_from_a_2026_client_get_405() {
    let http = start(fixture::server_2026()).await;
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let r = bounded(
            client()
                .request(method.clone(), http.url())
                .header("accept", "text/event-stream")
                .header("mcp-protocol-version", MODERN)
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 405, "{method}");
    }
}

#[tokio::test]
async fn a_legacy_session_and_stateless_exchanges_run_side_by_side() {
    let http = start(fixture::server_2026()).await;
    let url = http.url();
    let c = client();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "legacy", "version": "0"}}});
    let r = bounded(
        c.post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(init.to_string())
            .send(),
    )
    .await
    .unwrap();
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let _ = bounded(r.bytes()).await.unwrap();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..6u64 {
        let (c, url, sid) = (c.clone(), url.clone(), sid.clone());
        tasks.spawn(async move {
            let legacy = json!({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
                "params": {"name": "test_simple_text", "arguments": {}}});
            let r = c
                .post(&url)
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .header("mcp-session-id", &sid)
                .header("mcp-protocol-version", "2025-06-18")
                .body(legacy.to_string())
                .send()
                .await
                .unwrap();
            let bytes = r.bytes().await.unwrap();
            let mut out = Vec::new();
            sse_messages(&mut SseParser::new(), &bytes, &mut out);
            let answer = out.iter().find(|m| m["id"] == 10 + i).unwrap();
            assert!(
                answer["result"].get("resultType").is_none(),
                "legacy: {answer}"
            );
            assert_eq!(fixture::first_text(&answer["result"]), fixture::SIMPLE_TEXT);
        });
    }
    for i in 0..6u64 {
        let r = call(
            &http,
            100 + i,
            "tools/call",
            tool_call("test_simple_text", json!({}), json!({})),
        )
        .await;
        assert_eq!(r.last()["result"]["resultType"], "complete");
    }
    while let Some(done) = bounded(tasks.join_next()).await {
        done.unwrap();
    }
    assert_eq!(http.session_count(), 1);
}

#[tokio::test]
async fn closing_the_stream_cancels_the_handler() {
    let (tx, mut cancelled) = mpsc::unbounded_channel::<&'static str>();
    let tool: switchboard_protocol::types::Tool = serde_json::from_value(json!({
        "name": "wait_for_cancel", "inputSchema": {"type": "object"}}))
    .unwrap();
    let server = fixture::with_2026_fixtures(fixture::builder())
        .tool(tool, move |_, ctx: ToolContext| {
            let tx = tx.clone();
            async move {
                ctx.progress(1.0, None, None).await?;
                tokio::select! {
                    () = ctx.cancelled() => { let _ = tx.send("cancelled"); }
                    () = tokio::time::sleep(LIMIT) => { let _ = tx.send("not cancelled"); }
                }
                Ok(serde_json::from_value(json!({"content": []})).unwrap())
            }
        })
        .build()
        .unwrap();
    let http = start(server).await;
    let mut params = tool_call("wait_for_cancel", json!({}), json!({}));
    params["_meta"]["progressToken"] = json!(1);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let mut req = client()
        .post(http.url())
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    for (k, v) in headers_for(&body) {
        req = req.header(k, v);
    }
    let mut r = bounded(req.body(body.to_string()).send()).await.unwrap();
    let first = bounded(r.chunk()).await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("notifications/progress"));
    drop(r);
    assert_eq!(bounded(cancelled.recv()).await, Some("cancelled"));
}

/// Announcements reach legacy sessions too: a list change as
/// `notifications/tools/list_changed` and a resource update (to a session that
/// subscribed) as `notifications/resources/updated`, on the session's GET stream.
#[tokio::test]
async fn announcements_reach_a_legacy_session() {
    let server = fixture::server_2026();
    let announcer = server.announcer().clone();
    let http = start(server).await;
    let c = client();
    let post = |body: Value, sid: Option<&str>| legacy_post(&c, &http, body, sid);
    let sid = legacy_session(&c, &http, json!({})).await;
    let subscribe = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
        "params": {"uri": "test://watched-resource"}});
    let r = bounded(post(subscribe, Some(&sid)).send()).await.unwrap();
    assert!(r.status().is_success());
    let _ = bounded(r.bytes()).await.unwrap();
    let mut get = bounded(
        c.get(http.url())
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", "2025-11-25")
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(get.status(), 200);
    // The GET stream is open once its priming event arrived.
    let _ = bounded(get.chunk()).await.unwrap();
    let trigger = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "test_trigger_tool_change", "arguments": {}}});
    let r = bounded(post(trigger, Some(&sid)).send()).await.unwrap();
    let _ = bounded(r.bytes()).await.unwrap();
    assert!(announcer.resource_updated("test://watched-resource") >= 1);
    assert!(announcer.resource_updated("test://static-text") >= 1);
    let mut parser = SseParser::new();
    let mut got = Vec::new();
    while got.len() < 2 {
        let chunk = bounded(get.chunk())
            .await
            .unwrap()
            .expect("the GET stream goes on");
        sse_messages(&mut parser, &chunk, &mut got);
    }
    assert_eq!(
        got[0]["method"], "notifications/tools/list_changed",
        "{got:?}"
    );
    assert_eq!(got[1]["method"], "notifications/resources/updated");
    assert_eq!(got[1]["params"]["uri"], "test://watched-resource");
    // test://static-text was not subscribed: nothing more arrives.
    let more = tokio::time::timeout(Duration::from_millis(200), get.chunk()).await;
    assert!(more.is_err(), "unexpected: {more:?}");
}

/// SEP-1699 polling through the library: `ToolContext::close_sse_stream` in a
/// 2025-11-25 session ends the POST's body after its priming event, and the
/// result reaches the client that resumes with GET and `Last-Event-ID`. In a
/// 2026-07-28 exchange the same handler closes nothing (closing would cancel
/// it) and answers on its stream.
#[tokio::test]
async fn a_handler_closes_its_stream_and_the_client_resumes() {
    let http = start(fixture::server_2026()).await;
    let c = client();
    let post = |body: Value, sid: Option<&str>| legacy_post(&c, &http, body, sid);
    let sid = legacy_session(&c, &http, json!({})).await;
    let call_body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "test_reconnection", "arguments": {}}});
    let r = bounded(post(call_body, Some(&sid)).send()).await.unwrap();
    let body = bounded(r.bytes()).await.unwrap();
    let mut parser = SseParser::new();
    let events: Vec<_> = parser
        .feed(&body)
        .filter_map(|i| match i.unwrap() {
            SseItem::Event(e) => Some(e),
            SseItem::Comment(_) => None,
        })
        .collect();
    assert_eq!(events.len(), 1, "only the priming event: {events:?}");
    assert!(events[0].data.is_empty());
    let last = events[0].id.clone().expect("an event id");
    let resumed = bounded(
        c.get(http.url())
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", "2025-11-25")
            .header("last-event-id", &last)
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(resumed.status(), 200);
    let mut got = Vec::new();
    sse_messages(
        &mut SseParser::new(),
        &bounded(resumed.bytes()).await.unwrap(),
        &mut got,
    );
    let response = got
        .iter()
        .find(|m| m["id"] == 2)
        .expect("the result on the resumed stream");
    assert_eq!(
        fixture::first_text(&response["result"]),
        "Reconnection test completed (stream closed: true)"
    );

    let reply = call(
        &http,
        3,
        "tools/call",
        tool_call("test_reconnection", json!({}), json!({})),
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        fixture::first_text(&reply.last()["result"]),
        "Reconnection test completed (stream closed: false)"
    );
}

/// A tool that panics is answered the same way in a stateless 2026-07-28 exchange
/// as in a session: -32603 "internal error: the handler failed" with the request's
/// id (not a `null`-id error for a request that "ended without a response"), and
/// the server goes on answering both. Whether it panics in its future or before
/// it returns one (its synchronous part, which the server calls first), and
/// with or without a progress token (an SSE or a JSON reply).
#[tokio::test]
async fn a_panicking_tool_gets_the_same_answer_in_every_era() {
    let tool = |name: &str| -> switchboard_protocol::types::Tool {
        serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}})).unwrap()
    };
    let server = fixture::with_2026_fixtures(fixture::builder())
        .tool(tool("panics"), |_, _ctx: ToolContext| async move {
            tokio::task::yield_now().await;
            panic!("a bug in the tool")
        })
        .tool(tool("sync_panics"), |_, _ctx: ToolContext| {
            if std::hint::black_box(true) {
                panic!("a bug in the tool's synchronous part")
            }
            async { unreachable!() }
        })
        .build()
        .unwrap();
    let http = start(server).await;
    let c = client();
    let sid = legacy_session(&c, &http, json!({})).await;
    let want = json!({"code": -32603, "message": "internal error: the handler failed"});
    let mut id = 7;
    for name in ["panics", "sync_panics"] {
        for progress in [false, true] {
            id += 20;
            let mut params = tool_call(name, json!({}), json!({}));
            if progress {
                params["_meta"]["progressToken"] = json!("p");
            }
            let r = bounded(call(&http, id, "tools/call", params)).await;
            let last = r.last();
            assert_eq!(last["id"], id, "{name}: {last}");
            assert_eq!(last["error"], want, "{name}: {last}");
            let r = call(
                &http,
                id + 10,
                "tools/call",
                tool_call("test_simple_text", json!({}), json!({})),
            )
            .await;
            assert_eq!(r.status, 200);
            assert_eq!(
                r.last()["id"],
                id + 10,
                "the server goes on: {:?}",
                r.messages
            );
            assert!(r.last().get("result").is_some(), "{:?}", r.messages);
        }
        id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": {}}});
        let r = bounded(legacy_post(&c, &http, body, Some(&sid)).send())
            .await
            .unwrap();
        let text = bounded(r.text()).await.unwrap();
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .unwrap_or(&text);
        let answer: Value = serde_json::from_str(line).unwrap();
        assert_eq!(answer["id"], id, "{name}: {answer}");
        assert_eq!(answer["error"], want, "{name}: {answer}");
    }
}

/// A tool's `ToolError::protocol` over the stateless 2026-07-28 path: a JSON-RPC
/// error with the tool's code, message and data, HTTP 200 (JSON or SSE reply);
/// a code 2026-07-28 reserves for the spec (-32022 would make a client switch
/// versions, and be HTTP 400) goes out as -32603. A 2025-11-25 session on the
/// same listener gets -32022 as given (implementation-defined there).
#[tokio::test]
async fn a_tools_json_rpc_error_over_the_stateless_path() {
    let tool = |name: &str| -> switchboard_protocol::types::Tool {
        serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}})).unwrap()
    };
    let server = fixture::with_2026_fixtures(fixture::builder())
        .tool(tool("quota"), |_, _ctx: ToolContext| async move {
            Err::<switchboard_protocol::types::CallToolResult, _>(
                switchboard::server::ToolError::protocol(
                    4001,
                    "quota exceeded",
                    Some(json!({"retryAfterMs": 500})),
                ),
            )
        })
        .tool(tool("reserved"), |_, _ctx: ToolContext| async move {
            Err::<switchboard_protocol::types::CallToolResult, _>(
                switchboard::server::ToolError::protocol(-32022, "not a version problem", None),
            )
        })
        .build()
        .unwrap();
    let http = start(server).await;
    for (id, progress) in [(1, false), (2, true)] {
        let mut params = tool_call("quota", json!({}), json!({}));
        if progress {
            params["_meta"]["progressToken"] = json!("p");
        }
        let r = bounded(call(&http, id, "tools/call", params)).await;
        assert_eq!(r.status, 200, "{:?}", r.messages);
        assert_eq!(
            r.last()["error"],
            json!({"code": 4001, "message": "quota exceeded", "data": {"retryAfterMs": 500}}),
            "{:?}",
            r.messages
        );
        assert_eq!(r.last()["id"], id);
    }
    let r = bounded(call(
        &http,
        3,
        "tools/call",
        tool_call("reserved", json!({}), json!({})),
    ))
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.last()["error"],
        json!({"code": -32603, "message": "not a version problem"})
    );
    let c = client();
    let sid = legacy_session(&c, &http, json!({})).await;
    let body = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "reserved", "arguments": {}}});
    let r = bounded(legacy_post(&c, &http, body, Some(&sid)).send())
        .await
        .unwrap();
    let text = bounded(r.text()).await.unwrap();
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or(&text);
    let answer: Value = serde_json::from_str(line).unwrap();
    assert_eq!(answer["error"]["code"], -32022, "{answer}");
}
