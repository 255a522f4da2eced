//! The stateless 2026-07-28 form of the Streamable HTTP server transport
//! (`http::stateless`; REVISIONS.md §5.4, §6) against a real HTTP client
//! (reqwest), with a scripted library side. Servers bind 127.0.0.1:0 only; every
//! wait is bounded by a timeout.

use std::future::Future;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard_protocol::codec::{SseItem, SseParser};
use switchboard_protocol::jsonrpc::{
    ErrorObject, ErrorResponse, Message, Notification, Request, Response,
};
use switchboard_transport::http::server::{
    HttpServer, HttpServerConfig, HttpSession, SessionAcceptor, SessionKind,
};
use switchboard_transport::{CloseReason, Inbound};
use tokio::sync::mpsc;

const ACCEPT_BOTH: &str = "application/json, text/event-stream";
const LIMIT: Duration = Duration::from_secs(20);
const MODERN: &str = "2026-07-28";

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("test timed out")
}

/// What the scripted library saw of one exchange.
#[derive(Debug)]
struct Seen {
    kind: SessionKind,
    method: String,
    header_method: Option<String>,
    version: String,
    closed: CloseReason,
}

/// The library side: for each session, reads the first message and answers by
/// method:
/// - `error/<code>`: an error response with that code;
/// - `progress`: a related progress notification, then `{"done": true}`;
/// - `ask`: a server→client request (must be dropped), then `{"asked": true}`;
/// - `slow`: a progress notification, then waits for the input to close;
/// - `initialize`: a legacy initialize result (stateful sessions);
/// - anything else: `{"echo": method}`.
///
/// Reports what it saw on the channel once the exchange's input closed.
fn library(mut acceptor: SessionAcceptor) -> mpsc::UnboundedReceiver<Seen> {
    let (seen_tx, seen_rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(session) = acceptor.accept().await {
            let seen_tx = seen_tx.clone();
            tokio::spawn(serve(session, seen_tx));
        }
    });
    seen_rx
}

async fn serve(session: HttpSession, seen_tx: mpsc::UnboundedSender<Seen>) {
    let kind = session.kind;
    assert_eq!(session.is_stateless(), kind == SessionKind::Stateless);
    if session.is_stateless() {
        assert!(session.session_id.is_empty());
    }
    let header_method = session
        .headers
        .get("mcp-method")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let version = session.protocol_version.as_str().to_owned();
    let (tx, mut rx) = session.transport.split();
    let mut method = String::new();
    let closed = loop {
        match rx.recv().await {
            Some(Inbound::Message(Message::Request(r))) => {
                method = r.method.clone();
                answer(&tx, r).await;
            }
            Some(Inbound::Message(Message::Notification(n))) => method = n.method.clone(),
            Some(Inbound::Closed { reason }) => break reason,
            Some(_) => {}
            None => break CloseReason::PeerClosed,
        }
    };
    let _ = seen_tx.send(Seen {
        kind,
        method,
        header_method,
        version,
        closed,
    });
}

async fn answer(tx: &switchboard_transport::Sender, r: Request) {
    let id = r.id.clone();
    let progress = || {
        Message::Notification(
            Notification::new(
                "notifications/progress",
                &json!({"progressToken": "t", "progress": 1}),
            )
            .unwrap(),
        )
    };
    let result = match r.method.as_str() {
        m if m.starts_with("error/") => {
            let code: i64 = m["error/".len()..].parse().unwrap();
            let e = ErrorResponse::new(Some(id), ErrorObject::new(code, "scripted"));
            tx.send(Message::Error(e)).await.unwrap();
            return;
        }
        "progress" => {
            tx.send_related(progress(), Some(id.clone())).await.unwrap();
            json!({"done": true})
        }
        "ask" => {
            let ask = Request::new(99, "elicitation/create", &json!({"message": "?"})).unwrap();
            // Refused by the exchange's sender: it never reaches the wire.
            let refused = tx
                .send_related(Message::Request(ask), Some(id.clone()))
                .await
                .unwrap_err();
            json!({"asked": true, "refused": refused.is_request_refused()})
        }
        "slow" => {
            tx.send_related(progress(), Some(id.clone())).await.unwrap();
            return; // never answers: the client closing the stream ends it
        }
        "initialize" => json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "serverInfo": {"name": "t", "version": "0"}}),
        m => json!({"echo": m}),
    };
    tx.send(Message::Response(Response::new(id, &result).unwrap()))
        .await
        .unwrap();
}

async fn start() -> (HttpServer, mpsc::UnboundedReceiver<Seen>) {
    let (server, acceptor) = HttpServer::bind(HttpServerConfig::default()).await.unwrap();
    assert!(server.local_addr().ip().is_loopback());
    (server, library(acceptor))
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(LIMIT).build().unwrap()
}

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": MODERN,
           "io.modelcontextprotocol/clientCapabilities": {}})
}

fn modern(id: u64, method: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"_meta": meta()}}).to_string()
}

/// A 2026-07-28 POST with the standard headers.
async fn post(server: &HttpServer, method: &str, body: String) -> reqwest::Response {
    bounded(
        client()
            .post(server.url())
            .header("accept", ACCEPT_BOTH)
            .header("content-type", "application/json")
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", method)
            .body(body)
            .send(),
    )
    .await
    .unwrap()
}

async fn json_of(r: reqwest::Response) -> Value {
    let bytes = bounded(r.bytes()).await.unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn events(body: &str) -> Vec<Value> {
    // A lone response that came first is a JSON body (`json_reply_within`).
    if body.trim_start().starts_with('{') {
        return vec![serde_json::from_str(body).unwrap()];
    }
    let mut parser = SseParser::new();
    let mut data: Vec<String> = parser
        .feed(body.as_bytes())
        .filter_map(|item| match item.unwrap() {
            SseItem::Event(e) => Some(e.data),
            SseItem::Comment(_) => None,
        })
        .collect();
    parser.finish();
    while let Some(item) = parser.next_item() {
        if let SseItem::Event(e) = item.unwrap() {
            data.push(e.data);
        }
    }
    data.iter()
        .filter(|d| !d.is_empty())
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[tokio::test]
async fn a_lone_response_is_plain_json_and_the_exchange_ends() {
    let (server, mut seen) = start().await;
    let r = post(&server, "tools/list", modern(1, "tools/list")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    assert!(r.headers().get("mcp-session-id").is_none());
    let body: Value = json_of(r).await;
    assert_eq!(
        body,
        json!({"jsonrpc": "2.0", "id": 1, "result": {"echo": "tools/list"}})
    );
    let s = bounded(seen.recv()).await.unwrap();
    assert_eq!(s.kind, SessionKind::Stateless);
    assert_eq!(s.method, "tools/list");
    assert_eq!(s.header_method.as_deref(), Some("tools/list"));
    assert_eq!(s.version, MODERN);
    assert!(
        matches!(s.closed, CloseReason::SessionClosed),
        "{:?}",
        s.closed
    );
    assert_eq!(server.session_count(), 0, "no session is kept");
}

#[tokio::test]
async fn notifications_then_the_response_go_on_an_sse_reply() {
    let (server, mut seen) = start().await;
    let r = post(&server, "progress", modern(2, "progress")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let body = bounded(r.text()).await.unwrap();
    assert!(!body.contains("id:"), "no event ids in 2026-07-28: {body}");
    let got = events(&body);
    assert_eq!(got.len(), 2, "{body}");
    assert_eq!(got[0]["method"], "notifications/progress");
    assert_eq!(got[1]["result"], json!({"done": true}));
    let s = bounded(seen.recv()).await.unwrap();
    assert!(
        matches!(s.closed, CloseReason::SessionClosed),
        "{:?}",
        s.closed
    );
}

#[tokio::test]
async fn error_codes_pick_the_http_status() {
    let (server, _seen) = start().await;
    // (code, _meta complete, expected status): REVISIONS.md §5.4.
    let cases = [
        (-32020, true, 400),
        (-32021, true, 400),
        (-32022, true, 400),
        (-32602, false, 400),
        (-32602, true, 200),
        (-32601, true, 404),
        (-32603, true, 200),
    ];
    for (i, (code, complete, status)) in cases.into_iter().enumerate() {
        let method = format!("error/{code}");
        let m = if complete {
            meta()
        } else {
            json!({"io.modelcontextprotocol/protocolVersion": MODERN})
        };
        let body = json!({"jsonrpc": "2.0", "id": i, "method": method, "params": {"_meta": m}});
        let r = post(&server, &method, body.to_string()).await;
        assert_eq!(r.status().as_u16(), status, "{code} complete={complete}");
        let v: Value = json_of(r).await;
        assert_eq!(v["error"]["code"], code);
        assert_eq!(v["id"], i, "errors keep the request id");
    }
}

#[tokio::test]
async fn get_and_delete_from_a_2026_client_get_405() {
    assert!(HttpServerConfig::default()
        .supported_versions
        .contains(&switchboard_protocol::ProtocolVersion::V2026_07_28));
    let (server, _seen) = start().await;
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let r = bounded(
            client()
                .request(method.clone(), server.url())
                .header("accept", "text/event-stream")
                .header("mcp-protocol-version", MODERN)
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 405, "{method}");
        assert_eq!(r.headers()["allow"], "POST");
    }
}

#[tokio::test]
async fn a_notification_gets_202_and_reaches_the_library() {
    let (server, mut seen) = start().await;
    let body = json!({"jsonrpc": "2.0", "method": "notifications/x", "params": {"_meta": meta()}});
    let r = post(&server, "notifications/x", body.to_string()).await;
    assert_eq!(r.status(), 202);
    assert!(bounded(r.bytes()).await.unwrap().is_empty());
    let s = bounded(seen.recv()).await.unwrap();
    assert_eq!(s.method, "notifications/x");
    assert_eq!(s.kind, SessionKind::Stateless);
}

#[tokio::test]
async fn a_server_to_client_request_never_reaches_the_wire() {
    let (server, _seen) = start().await;
    let r = post(&server, "ask", modern(3, "ask")).await;
    assert_eq!(r.status(), 200);
    // The request was refused, so the response came first: plain JSON.
    assert_eq!(r.headers()["content-type"], "application/json");
    let body = bounded(r.text()).await.unwrap();
    assert!(!body.contains("elicitation/create"), "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["result"],
        json!({"asked": true, "refused": true})
    );
}

#[tokio::test]
async fn the_client_closing_the_stream_closes_the_exchange_input() {
    let (server, mut seen) = start().await;
    let mut r = post(&server, "slow", modern(4, "slow")).await;
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let first = bounded(r.chunk()).await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("notifications/progress"));
    drop(r);
    let s = bounded(seen.recv()).await.unwrap();
    assert_eq!(s.method, "slow");
    assert!(
        matches!(s.closed, CloseReason::PeerClosed),
        "{:?}",
        s.closed
    );
}

#[tokio::test]
async fn the_body_meta_alone_marks_a_2026_request() {
    let (server, mut seen) = start().await;
    // No MCP-Protocol-Version header, no session: the body's `_meta` decides.
    let r = bounded(
        client()
            .post(server.url())
            .header("accept", ACCEPT_BOTH)
            .header("content-type", "application/json")
            .body(modern(5, "tools/list"))
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    let s = bounded(seen.recv()).await.unwrap();
    assert_eq!(s.kind, SessionKind::Stateless);
    assert_eq!(
        s.header_method, None,
        "the library sees the missing headers"
    );
    // An unknown version in the header with a 2026 body: still the library's to
    // answer (-32022 or -32020), not the transport's 400.
    let r = bounded(
        client()
            .post(server.url())
            .header("accept", ACCEPT_BOTH)
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2099-01-01")
            .body(modern(6, "error/-32022"))
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = json_of(r).await;
    assert_eq!(v["error"]["code"], -32022);
    assert_eq!(v["id"], 6);
    // The same unknown header with a legacy body: the transport's 400 (-32600).
    let legacy = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}).to_string();
    let r = bounded(
        client()
            .post(server.url())
            .header("accept", ACCEPT_BOTH)
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2099-01-01")
            .body(legacy)
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = json_of(r).await;
    assert_eq!(v["error"]["code"], -32600);
}

#[tokio::test]
async fn a_legacy_session_and_stateless_exchanges_share_the_endpoint() {
    let (server, mut seen) = start().await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    let r = bounded(
        client()
            .post(server.url())
            .header("accept", ACCEPT_BOTH)
            .header("content-type", "application/json")
            .body(init.to_string())
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let _ = bounded(r.text()).await.unwrap();
    // Interleave stateless exchanges and session requests, concurrently.
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..8u64 {
        let url = server.url();
        let sid = sid.clone();
        tasks.spawn(async move {
            let c = client();
            let modern_reply = c
                .post(&url)
                .header("accept", ACCEPT_BOTH)
                .header("content-type", "application/json")
                .header("mcp-protocol-version", MODERN)
                .header("mcp-method", "modern/echo")
                .body(modern(100 + i, "modern/echo"))
                .send()
                .await
                .unwrap();
            let v: Value = json_of(modern_reply).await;
            assert_eq!(v["result"]["echo"], "modern/echo");
            let legacy = json!({"jsonrpc": "2.0", "id": 200 + i, "method": "legacy/echo"});
            let legacy_reply = c
                .post(&url)
                .header("accept", ACCEPT_BOTH)
                .header("content-type", "application/json")
                .header("mcp-protocol-version", "2025-11-25")
                .header("mcp-session-id", sid)
                .body(legacy.to_string())
                .send()
                .await
                .unwrap();
            let body = legacy_reply.text().await.unwrap();
            let got = events(&body);
            let answer = got.iter().find(|e| e.get("result").is_some()).unwrap();
            assert_eq!(answer["result"]["echo"], "legacy/echo");
            assert_eq!(answer["id"], 200 + i);
        });
    }
    while let Some(done) = bounded(tasks.join_next()).await {
        done.unwrap();
    }
    assert_eq!(server.session_count(), 1, "only the legacy session is kept");
    let mut stateless = 0;
    while stateless < 8 {
        let s = bounded(seen.recv()).await.unwrap();
        assert_eq!(s.kind, SessionKind::Stateless, "the session is still open");
        assert_eq!(s.method, "modern/echo");
        stateless += 1;
    }
}

#[tokio::test]
async fn exchanges_beyond_the_limit_get_503_until_one_ends() {
    let mut config = HttpServerConfig::default();
    config.max_exchanges = 1;
    let (server, acceptor) = HttpServer::bind(config).await.unwrap();
    let mut seen = library(acceptor);
    // `slow` holds the only permit while its stream is open.
    let mut slow = post(&server, "slow", modern(1, "slow")).await;
    let _ = bounded(slow.chunk()).await.unwrap().unwrap();
    let r = post(&server, "tools/list", modern(2, "tools/list")).await;
    assert_eq!(r.status(), 503);
    assert_eq!(json_of(r).await["error"]["code"], -32000);
    drop(slow);
    let s = bounded(seen.recv()).await.unwrap();
    assert_eq!(s.method, "slow");
    // The permit comes back once the exchange ended.
    let mut status = 0;
    for _ in 0..100 {
        let r = post(&server, "tools/list", modern(3, "tools/list")).await;
        status = r.status().as_u16();
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(status, 200);
}

/// During a drain (`refuse_new_sessions`) a new stateless request gets 503
/// under its id, so a load balancer sends it elsewhere; what work in progress
/// needs still comes in: a notification (a cancellation), and the retry of an
/// `input_required` round trip.
#[tokio::test]
async fn a_drain_refuses_new_stateless_requests_but_not_work_in_progress() {
    let (server, mut seen) = start().await;
    server.refuse_new_sessions();
    let r = post(&server, "tools/list", modern(7, "tools/list")).await;
    assert_eq!(r.status(), 503);
    let body = json_of(r).await;
    assert_eq!(body["id"], 7, "{body}");
    assert_eq!(body["error"]["code"], -32000, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("shutting down"),
        "{body}"
    );
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 3, "_meta": meta()}})
    .to_string();
    let r = post(&server, "notifications/cancelled", cancel).await;
    assert_eq!(r.status(), 202);
    let s = bounded(seen.recv()).await.unwrap();
    assert_eq!(s.method, "notifications/cancelled");
    // Not a retry: an empty inputResponses, or a method without input rounds.
    for (id, method, extra) in [
        (9, "tools/call", json!({"name": "t", "inputResponses": {}})),
        (
            10,
            "tools/list",
            json!({"requestState": "s", "inputResponses": {"k": {}}}),
        ),
    ] {
        let mut params = extra;
        params["_meta"] = meta();
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let r = post(&server, method, body.to_string()).await;
        assert_eq!(r.status(), 503, "{method} {body}");
    }
    let retry = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
        "params": {"name": "t", "_meta": meta(), "inputResponses": {"k": {}}, "requestState": "s"}})
    .to_string();
    let r = post(&server, "tools/call", retry).await;
    assert_eq!(r.status(), 200);
    assert_eq!(json_of(r).await["result"]["echo"], "tools/call");
}

/// A 2026-07-28 POST with `accept`.
async fn post_accepting(server: &HttpServer, method: &str, accept: &str) -> reqwest::Response {
    bounded(
        client()
            .post(server.url())
            .header("accept", accept)
            .header("content-type", "application/json")
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", method)
            .body(modern(5, method))
            .send(),
    )
    .await
    .unwrap()
}

/// A client whose `Accept` allows one type gets that type: JSON only, the
/// response as one JSON body even when notifications came first (they are not
/// sent); SSE only, an SSE stream even for a lone response; `*/*`, the
/// server's choice; neither, 406.
#[tokio::test]
async fn a_client_accepting_one_type_gets_that_type() {
    let (server, _seen) = start().await;
    let r = post_accepting(&server, "progress", "application/json").await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    assert_eq!(json_of(r).await["result"], json!({"done": true}));

    let r = post_accepting(&server, "tools/list", "text/event-stream").await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let got = events(&bounded(r.text()).await.unwrap());
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["result"], json!({"echo": "tools/list"}));

    let r = post_accepting(&server, "tools/list", "*/*").await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    json_of(r).await;
    let r = post_accepting(&server, "progress", "*/*").await;
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    assert_eq!(events(&bounded(r.text()).await.unwrap()).len(), 2);

    let r = post_accepting(&server, "tools/list", "text/plain").await;
    assert_eq!(r.status(), 406);
}
