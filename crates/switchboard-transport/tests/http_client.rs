//! The Streamable HTTP client transport (`http::client`) against our own
//! `HttpServer` (JSON and SSE replies, the session header) and against small
//! scripted HTTP/1.1 servers on raw TCP for the fault cases: 404 → one new session
//! without losing requests in flight, an SSE reply cut after an event id → resumed
//! with `Last-Event-ID`, HTTP errors → error responses for the request's id, a
//! server that is gone → every call fails fast, the 2026-07-28 headers and
//! cancellation by closing the stream, DELETE on close. Every wait is bounded.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard_protocol::jsonrpc::{ErrorResponse, Id, Message, Notification, Request, Response};
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::http::client::{self, HttpClientConfig, TRANSPORT_ERROR};
use switchboard_transport::http::server::{HttpServer, HttpServerConfig};
use switchboard_transport::{Inbound, Receiver};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

const LIMIT: Duration = Duration::from_secs(20);

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("test timed out")
}

fn request(id: i64, method: &str, params: Value) -> Message {
    Message::Request(Request::new(id, method, &params).unwrap())
}

fn notification(method: &str, params: Value) -> Message {
    Message::Notification(Notification::new(method, &params).unwrap())
}

fn initialize(id: i64) -> Message {
    request(
        id,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "t", "version": "0"}}),
    )
}

/// The next message on `rx`; panics on anything else.
async fn next_message(rx: &mut Receiver) -> Message {
    match bounded(rx.recv()).await {
        Some(Inbound::Message(m)) => m,
        other => panic!("expected a message, got {other:?}"),
    }
}

/// The next response or error response on `rx`, skipping notifications.
async fn next_answer(rx: &mut Receiver) -> Message {
    loop {
        let m = next_message(rx).await;
        if matches!(m, Message::Response(_) | Message::Error(_)) {
            return m;
        }
    }
}

/// A client of `url` with `max_body_bytes` set to `max`, initialized (2025-11-25).
async fn open_with_max_body(url: &str, max: usize) -> (switchboard_transport::Sender, Receiver) {
    let mut config = HttpClientConfig::new(url);
    config.max_body_bytes = max;
    let (transport, handle) = client::connect(config).unwrap();
    let (tx, mut rx) = transport.split();
    tx.send(initialize(1)).await.unwrap();
    assert_eq!(answer_id(&next_answer(&mut rx).await), Id::from(1));
    handle.set_protocol_version(Some(ProtocolVersion::V2025_11_25));
    (tx, rx)
}

/// The next answer on `rx` is the response to `id` that a resumed stream
/// delivered (`{"resumed":true}`).
async fn assert_resumed(rx: &mut Receiver, id: u64) {
    let m = next_answer(rx).await;
    let Message::Response(r) = m else {
        panic!("the resumed stream delivers the response: {m:?}")
    };
    assert_eq!(r.id, Id::from(id));
    assert_eq!(r.result.get(), r#"{"resumed":true}"#);
}

/// The next [`Inbound::Failed`] on `rx` (as the error response a relay would send
/// for it), skipping notifications; panics on any answer from the server.
async fn next_failure(rx: &mut Receiver) -> ErrorResponse {
    loop {
        match bounded(rx.recv()).await {
            Some(Inbound::Failed { id, error }) => return ErrorResponse::new(Some(id), error),
            Some(Inbound::Message(Message::Notification(_))) => continue,
            other => panic!("expected the transport's failure, got {other:?}"),
        }
    }
}

fn answer_id(m: &Message) -> Id {
    match m {
        Message::Response(r) => r.id.clone(),
        Message::Error(e) => e.id.clone().expect("an id"),
        other => panic!("not an answer: {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Against our own HttpServer
// ---------------------------------------------------------------------------

/// Serves each session by hand: answers `initialize` with a minimal result and
/// every other request with `{"method": <its method>}`.
async fn our_server(json_response: bool) -> HttpServer {
    let mut config = HttpServerConfig::default();
    config.json_response = json_response;
    let (http, mut acceptor) = HttpServer::bind(config).await.unwrap();
    tokio::spawn(async move {
        while let Some(session) = acceptor.accept().await {
            let (tx, mut rx) = session.transport.split();
            tokio::spawn(async move {
                while let Some(Inbound::Message(m)) = rx.recv().await {
                    let Message::Request(r) = m else { continue };
                    let result = if r.method == "initialize" {
                        json!({"protocolVersion": "2025-11-25", "capabilities": {},
                               "serverInfo": {"name": "s", "version": "0"}})
                    } else {
                        json!({"method": r.method})
                    };
                    let resp = Response::new(r.id, &result).unwrap();
                    if tx.send(Message::Response(resp)).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    http
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_and_sse_replies_from_our_server_with_the_session_header() {
    bounded(async {
        for json_response in [false, true] {
            let http = our_server(json_response).await;
            let (transport, handle) = client::connect(HttpClientConfig::new(http.url())).unwrap();
            let (tx, mut rx) = transport.split();
            tx.send(initialize(1)).await.unwrap();
            let m = next_answer(&mut rx).await;
            assert_eq!(answer_id(&m), Id::from(1), "{m:?}");
            let sid = handle.session_id().expect("the session id is remembered");
            assert!(!sid.is_empty());
            handle.set_protocol_version(Some(ProtocolVersion::V2025_11_25));
            tx.send(notification("notifications/initialized", json!({})))
                .await
                .unwrap();
            // The server routes by session id: an answer proves the header was sent.
            for id in 2..5 {
                tx.send(request(id, "tools/list", json!({}))).await.unwrap();
            }
            let mut seen = Vec::new();
            for _ in 2..5 {
                let Message::Response(r) = next_answer(&mut rx).await else {
                    panic!("expected a response")
                };
                let v: Value = serde_json::from_str(r.result.get()).unwrap();
                assert_eq!(v["method"], "tools/list");
                seen.push(r.id);
            }
            seen.sort();
            assert_eq!(seen, vec![Id::from(2), Id::from(3), Id::from(4)]);
            assert_eq!(http.session_count(), 1, "json_response={json_response}");
            // Closing the transport deletes the session.
            drop(tx);
            match bounded(rx.recv()).await {
                Some(Inbound::Closed { .. }) => {}
                other => panic!("expected the close, got {other:?}"),
            }
            for _ in 0..100 {
                if http.session_count() == 0 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert_eq!(http.session_count(), 0, "DELETE ended the session");
        }
    })
    .await;
}

// ---------------------------------------------------------------------------
// Scripted servers on raw TCP
// ---------------------------------------------------------------------------

/// One HTTP request as the stub saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    headers: HashMap<String, String>,
    body: Value,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }

    fn rpc_method(&self) -> &str {
        self.body["method"].as_str().unwrap_or("")
    }
}

/// What the stub answers.
enum Reply {
    /// A complete response.
    Full {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    /// An SSE response: these raw chunks, then the connection is closed.
    Sse(Vec<String>),
    /// An SSE response that stays open (headers only) until the client closes it;
    /// the close is reported on the channel.
    Hold(mpsc::UnboundedSender<()>),
    /// An SSE response that sends these raw chunks and then goes silent, open,
    /// as a half-open connection does (no byte more, no close), until the
    /// client closes it; the close is reported on the channel.
    Silent(String, mpsc::UnboundedSender<()>),
}

fn json_reply(status: u16, body: Value) -> Reply {
    Reply::Full {
        status,
        headers: vec![("content-type", "application/json".into())],
        body: body.to_string(),
    }
}

fn accepted() -> Reply {
    Reply::Full {
        status: 202,
        headers: Vec::new(),
        body: String::new(),
    }
}

fn result_for(body: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": body["id"].clone(), "result": result})
}

type Script = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;

/// A stub HTTP/1.1 server: one request per connection (`Connection: close`).
/// Returns its URL, what it saw, and the listener task (abort it to make the
/// server vanish).
async fn stub(
    script: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
) -> (
    String,
    mpsc::UnboundedReceiver<Seen>,
    tokio::task::JoinHandle<()>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (seen_tx, seen_rx) = mpsc::unbounded_channel();
    let script: Script = Arc::new(script);
    // Connections live in a JoinSet owned by the listener task: aborting the task
    // closes every connection, as a server process that exits would.
    let task = tokio::spawn(async move {
        let mut conns = tokio::task::JoinSet::new();
        loop {
            let Ok((sock, _)) = listener.accept().await else {
                return;
            };
            while conns.try_join_next().is_some() {}
            let script = script.clone();
            let seen_tx = seen_tx.clone();
            conns.spawn(async move {
                let _ = serve_one(sock, script, seen_tx).await;
            });
        }
    });
    (url, seen_rx, task)
}

async fn serve_one(
    mut sock: TcpStream,
    script: Script,
    seen_tx: mpsc::UnboundedSender<Seen>,
) -> std::io::Result<()> {
    sock.set_nodelay(true)?;
    let mut buf = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 4096];
        let n = sock.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let method = lines
        .next()
        .unwrap_or("")
        .split(' ')
        .next()
        .unwrap_or("")
        .to_owned();
    let mut headers = HashMap::new();
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    let len: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < len {
        let mut chunk = [0u8; 4096];
        let n = sock.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let seen = Seen {
        method,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    let reply = script(&seen);
    let _ = seen_tx.send(seen);
    match reply {
        Reply::Full {
            status,
            headers,
            body,
        } => {
            let mut out = format!(
                "HTTP/1.1 {status} X\r\nconnection: close\r\ncontent-length: {}\r\n",
                body.len()
            );
            for (k, v) in headers {
                out.push_str(&format!("{k}: {v}\r\n"));
            }
            out.push_str("\r\n");
            out.push_str(&body);
            sock.write_all(out.as_bytes()).await?;
        }
        Reply::Sse(chunks) => {
            sock.write_all(
                b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-type: text/event-stream\r\n\r\n",
            )
            .await?;
            for c in chunks {
                sock.write_all(c.as_bytes()).await?;
                sock.flush().await?;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        Reply::Hold(closed) => {
            sock.write_all(
                b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-type: text/event-stream\r\n\r\n: open\n\n",
            )
            .await?;
            let mut chunk = [0u8; 64];
            // Returns 0 (or fails) once the client drops the connection.
            let _ = sock.read(&mut chunk).await;
            let _ = closed.send(());
        }
        Reply::Silent(chunks, closed) => {
            sock.write_all(
                b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-type: text/event-stream\r\n\r\n",
            )
            .await?;
            sock.write_all(chunks.as_bytes()).await?;
            let mut chunk = [0u8; 64];
            let _ = sock.read(&mut chunk).await;
            let _ = closed.send(());
        }
    }
    sock.shutdown().await
}

/// A stub that answers `initialize` (session `s<n>` for the n-th one, JSON),
/// notifications with 202, and other requests as `other` says.
fn session_script(
    inits: Arc<AtomicUsize>,
    other: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
) -> impl Fn(&Seen) -> Reply + Send + Sync + 'static {
    move |seen: &Seen| {
        if seen.rpc_method() == "initialize" {
            let n = inits.fetch_add(1, Ordering::SeqCst) + 1;
            let mut r = json_reply(
                200,
                result_for(
                    &seen.body,
                    json!({"protocolVersion": "2025-11-25", "capabilities": {},
                           "serverInfo": {"name": "stub", "version": "0"}}),
                ),
            );
            if let Reply::Full { headers, .. } = &mut r {
                headers.push(("mcp-session-id", format!("s{n}")));
            }
            r
        } else if seen.body.get("id").is_none() && seen.method == "POST" {
            accepted()
        } else {
            other(seen)
        }
    }
}

/// A [`session_script`] server that knows only session `s<inits>` (the latest
/// handed out, or one set by the test): any other session id gets 404; a
/// request on it gets `result(session id)`.
fn knows_only_the_latest_session(
    inits: Arc<AtomicUsize>,
    result: impl Fn(&str) -> Value + Send + Sync + 'static,
) -> impl Fn(&Seen) -> Reply + Send + Sync + 'static {
    let counter = inits.clone();
    session_script(inits, move |seen| {
        let current = format!("s{}", counter.load(Ordering::SeqCst));
        if seen.header("mcp-session-id") != Some(current.as_str()) {
            return Reply::Full {
                status: 404,
                headers: Vec::new(),
                body: "no such session".into(),
            };
        }
        json_reply(200, result_for(&seen.body, result(&current)))
    })
}

async fn open(
    url: &str,
) -> (
    switchboard_transport::Sender,
    Receiver,
    client::HttpClientHandle,
) {
    let (transport, handle) = client::connect(HttpClientConfig::new(url)).unwrap();
    let (tx, mut rx) = transport.split();
    tx.send(initialize(1)).await.unwrap();
    assert_eq!(answer_id(&next_answer(&mut rx).await), Id::from(1));
    handle.set_protocol_version(Some(ProtocolVersion::V2025_11_25));
    tx.send(notification("notifications/initialized", json!({})))
        .await
        .unwrap();
    (tx, rx, handle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_reply_and_an_sse_reply_with_comments_and_notifications() {
    bounded(async {
        let inits = Arc::new(AtomicUsize::new(0));
        let (url, _seen, _task) = stub(session_script(inits, |seen| {
            if seen.body["params"]["sse"] == true {
                let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": 1, "progress": 1}});
                let resp = result_for(&seen.body, json!({"via": "sse"}));
                Reply::Sse(vec![
                    ": keep-alive\n\n".into(),
                    "id: p1\ndata:\n\n".into(),
                    format!("data: {progress}\n\n"),
                    format!("id: e2\ndata: {resp}\n\n"),
                ])
            } else {
                json_reply(200, result_for(&seen.body, json!({"via": "json"})))
            }
        }))
        .await;
        let (tx, mut rx, _h) = open(&url).await;
        tx.send(request(2, "x/json", json!({"sse": false})))
            .await
            .unwrap();
        let Message::Response(r) = next_answer(&mut rx).await else {
            panic!()
        };
        assert_eq!(r.id, Id::from(2));
        assert_eq!(r.result.get(), r#"{"via":"json"}"#);

        tx.send(request(3, "x/sse", json!({"sse": true})))
            .await
            .unwrap();
        let Message::Notification(n) = next_message(&mut rx).await else {
            panic!("the progress notification comes first")
        };
        assert_eq!(n.method, "notifications/progress");
        let Message::Response(r) = next_answer(&mut rx).await else {
            panic!()
        };
        assert_eq!(r.id, Id::from(3));
        assert_eq!(r.result.get(), r#"{"via":"sse"}"#);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_404_starts_one_new_session_and_no_request_is_lost() {
    bounded(async {
        let inits = Arc::new(AtomicUsize::new(0));
        let (url, mut seen, _task) = stub(knows_only_the_latest_session(
            inits.clone(),
            |s| json!({"session": s}),
        ))
        .await;
        let (tx, mut rx, handle) = open(&url).await;
        assert_eq!(handle.session_id().as_deref(), Some("s1"));
        assert_eq!(handle.sessions_replaced(), 0);
        assert!(handle.replaced_session_result().is_none());
        // The server forgets session s1: it now only knows "s2" (which it never
        // handed out), and the replayed initialize will get "s3".
        inits.store(2, Ordering::SeqCst);
        // Several requests in flight on the dead session.
        for id in 10..14 {
            tx.send(request(id, "tools/list", json!({}))).await.unwrap();
        }
        let mut ids = Vec::new();
        for _ in 10..14 {
            let m = next_answer(&mut rx).await;
            let Message::Response(r) = &m else {
                panic!("every request is answered on the new session: {m:?}")
            };
            assert_eq!(r.result.get(), r#"{"session":"s3"}"#);
            ids.push(r.id.clone());
        }
        ids.sort();
        assert_eq!(ids, (10..14).map(Id::from).collect::<Vec<_>>());
        assert_eq!(handle.session_id().as_deref(), Some("s3"));
        assert_eq!(
            handle.sessions_replaced(),
            1,
            "four requests, one new session"
        );
        // The new session's initialize result, kept for the library.
        let (n, result) = handle.replaced_session_result().expect("kept");
        assert_eq!(n, 1);
        let result: Value = serde_json::from_str(result.get()).unwrap();
        assert_eq!(result["serverInfo"]["name"], "stub");
        assert_eq!(
            handle.protocol_version(),
            Some(ProtocolVersion::V2025_11_25)
        );
        // Exactly one new initialize (the third one counted), no session header on it,
        // followed by notifications/initialized on the new session.
        drop(tx);
        let mut all = Vec::new();
        while let Ok(Some(s)) = tokio::time::timeout(Duration::from_millis(300), seen.recv()).await
        {
            all.push(s);
        }
        let inits_seen: Vec<_> = all
            .iter()
            .filter(|s| s.rpc_method() == "initialize")
            .collect();
        assert_eq!(inits_seen.len(), 2, "the first and one replay");
        assert!(inits_seen[1].header("mcp-session-id").is_none());
        assert!(all
            .iter()
            .any(|s| s.rpc_method() == "notifications/initialized"
                && s.header("mcp-session-id") == Some("s3")));
    })
    .await;
}

/// A new session after a 404 gets the old one's state again, after
/// `notifications/initialized`: the last log level and the subscriptions still
/// in force (not one undone by `resources/unsubscribe`), under ids of the
/// transport's own, whose answers never reach the receiver.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_session_after_a_404_gets_the_log_level_and_subscriptions_again() {
    bounded(async {
        let inits = Arc::new(AtomicUsize::new(0));
        let (url, mut seen, _task) =
            stub(knows_only_the_latest_session(inits.clone(), |_| json!({}))).await;
        let (tx, mut rx, handle) = open(&url).await;
        let setup = [
            (2, "logging/setLevel", json!({"level": "info"})),
            (3, "resources/subscribe", json!({"uri": "file:///a"})),
            (4, "resources/subscribe", json!({"uri": "file:///b"})),
            (5, "logging/setLevel", json!({"level": "debug"})),
            (6, "resources/unsubscribe", json!({"uri": "file:///a"})),
        ];
        for (id, method, params) in setup {
            tx.send(request(id, method, params)).await.unwrap();
            assert_eq!(answer_id(&next_answer(&mut rx).await), Id::from(id));
        }
        while seen.try_recv().is_ok() {}
        // The server forgets s1; the replayed initialize gets s3.
        inits.store(2, Ordering::SeqCst);
        tx.send(request(7, "tools/list", json!({}))).await.unwrap();
        let m = next_answer(&mut rx).await;
        assert_eq!(answer_id(&m), Id::from(7), "{m:?}");
        assert_eq!(handle.session_id().as_deref(), Some("s3"));
        let mut on_s3 = Vec::new();
        while let Ok(Some(s)) = tokio::time::timeout(Duration::from_millis(300), seen.recv()).await
        {
            if s.header("mcp-session-id") == Some("s3") {
                on_s3.push((s.rpc_method().to_owned(), s.body.clone()));
            }
        }
        let methods: Vec<&str> = on_s3.iter().map(|(m, _)| m.as_str()).collect();
        assert_eq!(
            methods,
            [
                "notifications/initialized",
                "logging/setLevel",
                "resources/subscribe",
                "tools/list"
            ],
            "{on_s3:?}"
        );
        assert_eq!(on_s3[1].1["params"], json!({"level": "debug"}));
        assert_eq!(on_s3[2].1["params"], json!({"uri": "file:///b"}));
        for (_, body) in &on_s3[1..3] {
            assert!(body["id"]
                .as_str()
                .is_some_and(|id| id.starts_with("switchboard-replay-")));
        }
        // Nothing else reached the receiver: the replays' answers were dropped.
        assert!(
            tokio::time::timeout(Duration::from_millis(200), rx.recv())
                .await
                .is_err(),
            "no stray answer"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sse_reply_cut_after_an_event_id_is_resumed_with_last_event_id() {
    bounded(async {
        let inits = Arc::new(AtomicUsize::new(0));
        let (url, mut seen, _task) = stub(session_script(inits, |seen| {
            if seen.method == "GET" {
                assert_eq!(seen.header("last-event-id"), Some("ev-1"));
                let resp = json!({"jsonrpc": "2.0", "id": 5, "result": {"resumed": true}});
                return Reply::Sse(vec![format!("id: ev-2\ndata: {resp}\n\n")]);
            }
            let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": 5, "progress": 1}});
            // retry: 30 ms, one event with an id, then the connection is cut.
            Reply::Sse(vec![format!("retry: 30\nid: ev-1\ndata: {progress}\n\n")])
        }))
        .await;
        let (tx, mut rx, _h) = open(&url).await;
        tx.send(request(5, "tools/call", json!({"name": "x"})))
            .await
            .unwrap();
        assert_resumed(&mut rx, 5).await;
        let mut get = None;
        while let Ok(s) = seen.try_recv() {
            if s.method == "GET" {
                get = Some(s);
            }
        }
        let get = get.expect("a GET resumed the stream");
        assert_eq!(get.header("mcp-session-id"), Some("s1"));
        assert_eq!(get.header("accept"), Some("text/event-stream"));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_without_an_event_id_fails_the_request_clearly() {
    bounded(async {
        let inits = Arc::new(AtomicUsize::new(0));
        let (url, _seen, _task) = stub(session_script(inits, |_| {
            Reply::Sse(vec![": nothing yet\n\n".into()])
        }))
        .await;
        let (tx, mut rx, _h) = open(&url).await;
        tx.send(request(6, "tools/call", json!({"name": "x"})))
            .await
            .unwrap();
        let e = next_failure(&mut rx).await;
        assert_eq!(e.id, Some(Id::from(6)));
        assert_eq!(e.error.code, TRANSPORT_ERROR);
        assert!(
            e.error.message.contains("ended before the response"),
            "{}",
            e.error.message
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_errors_become_error_responses_for_the_request() {
    bounded(async {
        let inits = Arc::new(AtomicUsize::new(0));
        let (url, _seen, _task) = stub(session_script(inits, |seen| {
            match seen.body["params"]["case"].as_str() {
                Some("500") => Reply::Full {
                    status: 500,
                    headers: vec![("content-type", "text/plain".into())],
                    body: "boom: the database is down".into(),
                },
                Some("foreign-id") => json_reply(
                    400,
                    json!({"jsonrpc": "2.0", "id": "server-error",
                           "error": {"code": -32600, "message": "Bad Request: Missing session ID"}}),
                ),
                // A JSON-RPC error body without an id: it is given the request's id.
                _ => json_reply(
                    400,
                    json!({"jsonrpc": "2.0", "error": {"code": -32602, "message": "bad params"}}),
                ),
            }
        }))
        .await;
        let (tx, mut rx, handle) = open(&url).await;
        tx.send(request(7, "tools/call", json!({"case": "500"})))
            .await
            .unwrap();
        let e = next_failure(&mut rx).await;
        assert_eq!(e.id, Some(Id::from(7)));
        assert_eq!(e.error.code, TRANSPORT_ERROR);
        assert!(e.error.message.contains("500"), "{}", e.error.message);
        assert!(
            e.error.message.contains("database is down"),
            "{}",
            e.error.message
        );
        let data: Value = serde_json::from_str(e.error.data.unwrap().get()).unwrap();
        assert_eq!(data["httpStatus"], 500);
        assert_eq!(handle.last_error_status(), Some(500));

        tx.send(request(8, "tools/call", json!({"case": "400"})))
            .await
            .unwrap();
        // The server's own error (in an HTTP error's body) is its answer, not a
        // failure of the transport.
        let Message::Error(e) = next_answer(&mut rx).await else {
            panic!("the server's error response")
        };
        assert_eq!(e.id, Some(Id::from(8)));
        assert_eq!(e.error.code, -32602);
        assert_eq!(e.error.message, "bad params");
        assert_eq!(handle.last_error_status(), Some(400));

        // A body naming another id (the Python SDK 1.x answers a request without
        // a session with id "server-error") still answers the request POSTed:
        // it was relayed under its own id, and the request was never answered.
        tx.send(request(9, "tools/call", json!({"case": "foreign-id"})))
            .await
            .unwrap();
        let Message::Error(e) = next_answer(&mut rx).await else {
            panic!("the server's error response")
        };
        assert_eq!(e.id, Some(Id::from(9)));
        assert_eq!(e.error.code, -32600);
        assert_eq!(e.error.message, "Bad Request: Missing session ID");
    })
    .await;
}

/// A 200 reply that is not JSON-RPC (a web page at the URL) fails the request
/// saying so, with the status, the Content-Type and the start of the body (it
/// was "the server's JSON reply held no response for this request").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_that_is_not_json_rpc_is_named_as_such() {
    bounded(async {
        let inits = Arc::new(AtomicUsize::new(0));
        let (url, _seen, _task) = stub(session_script(inits, |_| Reply::Full {
            status: 200,
            headers: vec![("content-type", "text/html".into())],
            body: "<html>Welcome to my blog</html>".into(),
        }))
        .await;
        let (tx, mut rx, _h) = open(&url).await;
        tx.send(request(9, "tools/list", json!({}))).await.unwrap();
        let e = next_failure(&mut rx).await;
        assert_eq!(e.id, Some(Id::from(9)));
        assert_eq!(e.error.code, TRANSPORT_ERROR);
        for part in [
            "not a JSON-RPC message",
            "HTTP 200",
            "text/html",
            "Welcome to my blog",
        ] {
            assert!(
                e.error.message.contains(part),
                "{part}: {}",
                e.error.message
            );
        }
    })
    .await;
}

/// A reply bigger than `max_body_bytes` fails its request naming the limit, as
/// JSON (it was "not a JSON-RPC message", the cut body's excerpt) and as an SSE
/// event (it was "ended before the response", after resuming in vain).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_over_max_body_bytes_names_the_limit() {
    bounded(async {
        let inits = Arc::new(AtomicUsize::new(0));
        let (url, _seen, _task) = stub(session_script(inits, |seen| {
            let big = result_for(&seen.body, json!({"text": "x".repeat(4096)}));
            if seen.body["params"]["sse"] == true {
                Reply::Sse(vec![
                    "id: 1\ndata: \n\n".into(),
                    format!("id: 2\nevent: message\ndata: {big}\n\n"),
                ])
            } else {
                json_reply(200, big)
            }
        }))
        .await;
        let (tx, mut rx) = open_with_max_body(&url, 1024).await;
        for (id, sse) in [(5, false), (6, true)] {
            tx.send(request(id, "tools/call", json!({"name": "x", "sse": sse})))
                .await
                .unwrap();
            let e = next_failure(&mut rx).await;
            assert_eq!(e.id, Some(Id::from(id)));
            assert_eq!(e.error.code, TRANSPORT_ERROR);
            assert!(
                e.error.message.contains("max_body_bytes (1024 bytes)"),
                "{}",
                e.error.message
            );
        }
    })
    .await;
}

/// An SSE event over `max_body_bytes` is dropped, but a later event with an id
/// moves the last event id past it: when the stream is then cut, it is resumed
/// from that later id (which does not replay the dropped event) and the response
/// arrives. Resuming is refused only while no later id has come (the test above).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_big_event_does_not_stop_a_later_resumption() {
    bounded(async {
        let inits = Arc::new(AtomicUsize::new(0));
        let (url, _seen, _task) = stub(session_script(inits, |seen| {
            let note = |n: u32| {
                json!({"jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": "x".repeat(n as usize)}})
            };
            if seen.method == "GET" {
                assert_eq!(seen.header("last-event-id"), Some("3"));
                let resp = json!({"jsonrpc": "2.0", "id": 7, "result": {"resumed": true}});
                return Reply::Sse(vec![format!("id: 4\ndata: {resp}\n\n")]);
            }
            Reply::Sse(vec![
                "retry: 30\nid: 1\ndata: \n\n".into(),
                format!("id: 2\ndata: {}\n\n", note(4096)),
                format!("id: 3\ndata: {}\n\n", note(8)),
            ])
        }))
        .await;
        let (tx, mut rx) = open_with_max_body(&url, 1024).await;
        tx.send(request(7, "tools/call", json!({"name": "x"})))
            .await
            .unwrap();
        assert_resumed(&mut rx, 7).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_server_is_gone_every_pending_call_fails_fast() {
    bounded(async {
        let (held_tx, _held_rx) = mpsc::unbounded_channel::<()>();
        let inits = Arc::new(AtomicUsize::new(0));
        let (url, _seen, task) = stub(session_script(inits, move |_| {
            // Each call's stream stays open (no event id) until the server dies.
            Reply::Hold(held_tx.clone())
        }))
        .await;
        let (tx, mut rx, _h) = open(&url).await;
        for id in 20..23 {
            tx.send(request(id, "tools/call", json!({}))).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        // The server vanishes: the listener and every connection.
        task.abort();
        let _ = task.await;
        tx.send(request(23, "tools/call", json!({}))).await.unwrap();
        let started = tokio::time::Instant::now();
        let mut ids = Vec::new();
        for _ in 20..24 {
            let e = next_failure(&mut rx).await;
            assert_eq!(e.error.code, TRANSPORT_ERROR, "{}", e.error.message);
            ids.push(e.id.unwrap());
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        ids.sort();
        assert_eq!(ids, (20..24).map(Id::from).collect::<Vec<_>>());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_fails_each_request_with_its_id() {
    bounded(async {
        // A port nobody listens on.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        drop(listener);
        let (transport, _h) = client::connect(HttpClientConfig::new(url)).unwrap();
        let (tx, mut rx) = transport.split();
        for id in 1..4 {
            tx.send(request(id, "tools/list", json!({}))).await.unwrap();
        }
        let mut ids = Vec::new();
        for _ in 1..4 {
            let e = next_failure(&mut rx).await;
            assert_eq!(e.error.code, TRANSPORT_ERROR);
            assert!(e.error.message.contains("HTTP POST"), "{}", e.error.message);
            ids.push(e.id.unwrap());
        }
        ids.sort();
        assert_eq!(ids, vec![Id::from(1), Id::from(2), Id::from(3)]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_requests_carry_the_headers_and_cancel_by_closing_the_stream() {
    bounded(async {
        let (closed_tx, mut closed_rx) = mpsc::unbounded_channel();
        let (url, mut seen, _task) = stub(move |seen: &Seen| {
            if seen.body["params"]["name"] == "slow" {
                Reply::Hold(closed_tx.clone())
            } else {
                json_reply(
                    200,
                    result_for(&seen.body, json!({"resultType": "complete"})),
                )
            }
        })
        .await;
        let (transport, handle) = client::connect(HttpClientConfig::new(&url)).unwrap();
        let (tx, mut rx) = transport.split();
        handle.set_protocol_version(Some(ProtocolVersion::V2026_07_28));
        let mut tools = HashMap::new();
        tools.insert(
            "deploy".to_owned(),
            vec![
                ("region".to_owned(), "Region".to_owned()),
                ("note".to_owned(), "Note".to_owned()),
            ],
        );
        handle.set_tool_headers(tools);
        tx.send(request(
            1,
            "tools/call",
            json!({"name": "deploy", "arguments": {"region": "eu-west", "note": "héllo"},
                   "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
        ))
        .await
        .unwrap();
        assert_eq!(answer_id(&next_answer(&mut rx).await), Id::from(1));
        let s = bounded(seen.recv()).await.unwrap();
        assert_eq!(s.header("mcp-protocol-version"), Some("2026-07-28"));
        assert_eq!(s.header("mcp-method"), Some("tools/call"));
        assert_eq!(s.header("mcp-name"), Some("deploy"));
        assert_eq!(s.header("mcp-param-region"), Some("eu-west"));
        assert_eq!(s.header("mcp-param-note"), Some("=?base64?aMOpbGxv?="));
        assert!(s.header("mcp-session-id").is_none());
        assert!(s.header("accept").unwrap().contains("text/event-stream"));

        // Cancellation: notifications/cancelled is not posted; the stream closes.
        tx.send(request(2, "tools/call", json!({"name": "slow"})))
            .await
            .unwrap();
        let s = bounded(seen.recv()).await.unwrap();
        assert_eq!(s.header("mcp-name"), Some("slow"));
        tx.send(notification(
            "notifications/cancelled",
            json!({"requestId": 2}),
        ))
        .await
        .unwrap();
        bounded(closed_rx.recv())
            .await
            .expect("the stream was closed");
        // Nothing was posted for the notification, and nothing arrives for id 2.
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(seen.try_recv().is_err());
        assert!(rx.try_recv().is_none());

        // The handle's cancel does the same.
        tx.send(request(3, "tools/call", json!({"name": "slow"})))
            .await
            .unwrap();
        let _ = bounded(seen.recv()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(handle.cancel(&Id::from(3)));
        bounded(closed_rx.recv())
            .await
            .expect("the stream was closed");
        assert!(!handle.cancel(&Id::from(3)));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_deletes_the_session_and_the_standalone_stream_is_optional() {
    bounded(async {
        let inits = Arc::new(AtomicUsize::new(0));
        let (url, mut seen, _task) =
            stub(session_script(inits, |seen| match seen.method.as_str() {
                "GET" => {
                    let note =
                        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
                    Reply::Sse(vec![format!("id: g1\ndata: {note}\n\n")])
                }
                "DELETE" => accepted(),
                _ => json_reply(200, result_for(&seen.body, json!({}))),
            }))
            .await;
        let mut config = HttpClientConfig::new(&url);
        config.standalone_stream = true;
        config.default_retry = Duration::from_millis(20);
        config.max_resume_attempts = 1;
        let (transport, handle) = client::connect(config).unwrap();
        let (tx, mut rx) = transport.split();
        tx.send(initialize(1)).await.unwrap();
        assert_eq!(answer_id(&next_answer(&mut rx).await), Id::from(1));
        handle.set_protocol_version(Some(ProtocolVersion::V2025_06_18));
        tx.send(notification("notifications/initialized", json!({})))
            .await
            .unwrap();
        // The GET stream delivers a server notification.
        let Message::Notification(n) = next_message(&mut rx).await else {
            panic!()
        };
        assert_eq!(n.method, "notifications/tools/list_changed");
        drop(tx);
        loop {
            match bounded(rx.recv()).await {
                Some(Inbound::Closed { .. }) => break,
                Some(_) => continue,
                None => panic!("closed without the Closed event"),
            }
        }
        let mut delete = None;
        let mut get = None;
        while let Ok(Some(s)) = tokio::time::timeout(Duration::from_millis(300), seen.recv()).await
        {
            match s.method.as_str() {
                "DELETE" => delete = Some(s),
                "GET" => get = Some(s),
                _ => {}
            }
        }
        let delete = delete.expect("DELETE sent on close");
        assert_eq!(delete.header("mcp-session-id"), Some("s1"));
        let get = get.expect("the standalone GET was opened");
        assert_eq!(get.header("mcp-protocol-version"), Some("2025-06-18"));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_cancellation_is_posted_then_the_stream_is_dropped() {
    bounded(async {
        let (closed_tx, mut closed_rx) = mpsc::unbounded_channel();
        let inits = Arc::new(AtomicUsize::new(0));
        let (url, mut seen, _task) = stub(session_script(inits, move |_| {
            Reply::Hold(closed_tx.clone())
        }))
        .await;
        let (tx, mut rx, _h) = open(&url).await;
        tx.send(request(9, "tools/call", json!({"name": "slow"})))
            .await
            .unwrap();
        // Wait until the stub holds the call open.
        loop {
            let s = bounded(seen.recv()).await.unwrap();
            if s.rpc_method() == "tools/call" {
                break;
            }
        }
        tx.send(notification(
            "notifications/cancelled",
            json!({"requestId": 9, "reason": "user"}),
        ))
        .await
        .unwrap();
        let s = bounded(seen.recv()).await.unwrap();
        assert_eq!(s.rpc_method(), "notifications/cancelled");
        assert_eq!(s.header("mcp-session-id"), Some("s1"));
        bounded(closed_rx.recv())
            .await
            .expect("the call's stream was dropped");
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            rx.try_recv().is_none(),
            "nothing is delivered for a cancelled call"
        );
    })
    .await;
}

/// A standalone GET stream silent past its keep-alive (no event, no comment,
/// never closed: a half-open connection) is taken for dead: the client drops
/// it and opens the stream again with the last event id it saw there, and
/// what the server sends on the new one arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standalone_stream_silent_past_its_keep_alive_is_reopened_with_last_event_id() {
    bounded(async {
        let inits = Arc::new(AtomicUsize::new(0));
        let gets = Arc::new(AtomicUsize::new(0));
        let (closed_tx, mut closed) = mpsc::unbounded_channel();
        let note = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
        let script = {
            let gets = gets.clone();
            session_script(inits, move |seen| match seen.method.as_str() {
                // The first stream primes an id, then goes silent for good.
                "GET" if gets.fetch_add(1, Ordering::SeqCst) == 0 => {
                    Reply::Silent("id: 0-1\ndata: \n\n".into(), closed_tx.clone())
                }
                "GET" => Reply::Silent(format!("id: 0-2\ndata: {note}\n\n"), closed_tx.clone()),
                _ => json_reply(200, result_for(&seen.body, json!({}))),
            })
        };
        let (url, mut seen, _task) = stub(script).await;
        let mut config = HttpClientConfig::new(&url);
        config.standalone_stream = true;
        config.sse_keep_alive = Some(Duration::from_millis(100));
        config.default_retry = Duration::from_millis(20);
        let (transport, handle) = client::connect(config).unwrap();
        let (tx, mut rx) = transport.split();
        tx.send(initialize(1)).await.unwrap();
        assert_eq!(answer_id(&next_answer(&mut rx).await), Id::from(1));
        handle.set_protocol_version(Some(ProtocolVersion::V2025_11_25));
        tx.send(notification("notifications/initialized", json!({})))
            .await
            .unwrap();
        // The silence limit is 1.1 s: well within this bound, the stream is
        // given up and reopened, and the notification of the new one arrives.
        let got = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("the silent stream was never given up");
        let Some(Inbound::Message(Message::Notification(n))) = got else {
            panic!("the new stream's notification: {got:?}")
        };
        assert_eq!(n.method, "notifications/tools/list_changed");
        tokio::time::timeout(Duration::from_secs(5), closed.recv())
            .await
            .expect("the client closed the silent connection");
        let mut get_ids = Vec::new();
        while get_ids.len() < 2 {
            let s = bounded(seen.recv()).await.expect("a request");
            if s.method == "GET" {
                get_ids.push(s.header("last-event-id").map(str::to_owned));
            }
        }
        assert_eq!(get_ids[0], None, "the first GET has no id to resume from");
        assert_eq!(
            get_ids[1].as_deref(),
            Some("0-1"),
            "resumed after the priming event"
        );
        drop(tx);
    })
    .await;
}

/// A standalone stream refused for a while (a server that still counts a dead
/// connection as the stream's reader answers 409) is tried again, backing off,
/// well past `max_resume_attempts`, instead of being given up: once the server
/// lets it open, its notifications arrive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_standalone_stream_is_tried_again_not_given_up() {
    bounded(async {
        let inits = Arc::new(AtomicUsize::new(0));
        let gets = Arc::new(AtomicUsize::new(0));
        let (closed_tx, _closed) = mpsc::unbounded_channel();
        let note = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
        let script = {
            let gets = gets.clone();
            session_script(inits, move |seen| match seen.method.as_str() {
                "GET" if gets.fetch_add(1, Ordering::SeqCst) < 4 => Reply::Full {
                    status: 409,
                    headers: Vec::new(),
                    body: "the standalone stream is already open".into(),
                },
                "GET" => Reply::Silent(format!("id: 0-1\ndata: {note}\n\n"), closed_tx.clone()),
                _ => json_reply(200, result_for(&seen.body, json!({}))),
            })
        };
        let (url, _seen, _task) = stub(script).await;
        let mut config = HttpClientConfig::new(&url);
        config.standalone_stream = true;
        config.max_resume_attempts = 1;
        config.default_retry = Duration::from_millis(20);
        let (transport, handle) = client::connect(config).unwrap();
        let (tx, mut rx) = transport.split();
        tx.send(initialize(1)).await.unwrap();
        assert_eq!(answer_id(&next_answer(&mut rx).await), Id::from(1));
        handle.set_protocol_version(Some(ProtocolVersion::V2025_11_25));
        tx.send(notification("notifications/initialized", json!({})))
            .await
            .unwrap();
        // Four refusals: waits of 20, 20, 40 and 80 ms.
        let got = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("the stream was given up");
        let Some(Inbound::Message(Message::Notification(n))) = got else {
            panic!("the stream's notification: {got:?}")
        };
        assert_eq!(n.method, "notifications/tools/list_changed");
        assert_eq!(gets.load(Ordering::SeqCst), 5);
        drop(tx);
    })
    .await;
}

/// A standalone stream that ends and is then refused with 404 (the server
/// restarted and lost the session) starts a new session at once, as a
/// request's 404 does, without waiting for the client's next request: the
/// new session's stream brings the server's notifications again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standalone_stream_whose_session_is_lost_starts_a_new_one() {
    bounded(async {
        let inits = Arc::new(AtomicUsize::new(0));
        let gets = Arc::new(AtomicUsize::new(0));
        let (closed_tx, _closed) = mpsc::unbounded_channel();
        let note = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
        let script = {
            let (gets, inits) = (gets.clone(), inits.clone());
            session_script(inits.clone(), move |seen| {
                if seen.method != "GET" {
                    return json_reply(200, result_for(&seen.body, json!({})));
                }
                let current = format!("s{}", inits.load(Ordering::SeqCst));
                match gets.fetch_add(1, Ordering::SeqCst) {
                    // Served, then the server goes away.
                    0 => Reply::Sse(vec!["id: 0-1\ndata: \n\n".into()]),
                    // Back, without the session.
                    _ if seen.header("mcp-session-id") != Some(current.as_str())
                        || current == "s1" =>
                    {
                        Reply::Full {
                            status: 404,
                            headers: Vec::new(),
                            body: "session not found".into(),
                        }
                    }
                    _ => Reply::Silent(format!("id: 0-1\ndata: {note}\n\n"), closed_tx.clone()),
                }
            })
        };
        let (url, mut seen, _task) = stub(script).await;
        let mut config = HttpClientConfig::new(&url);
        config.standalone_stream = true;
        config.default_retry = Duration::from_millis(20);
        let (transport, handle) = client::connect(config).unwrap();
        let (tx, mut rx) = transport.split();
        tx.send(initialize(1)).await.unwrap();
        assert_eq!(answer_id(&next_answer(&mut rx).await), Id::from(1));
        handle.set_protocol_version(Some(ProtocolVersion::V2025_11_25));
        tx.send(notification("notifications/initialized", json!({})))
            .await
            .unwrap();
        let got = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("no new session's stream");
        let Some(Inbound::Message(Message::Notification(n))) = got else {
            panic!("the new session's notification: {got:?}")
        };
        assert_eq!(n.method, "notifications/tools/list_changed");
        assert_eq!(inits.load(Ordering::SeqCst), 2, "one new session");
        assert_eq!(handle.session_id().as_deref(), Some("s2"));
        assert_eq!(handle.sessions_replaced(), 1);
        // The new session got the replayed initialize and initialized.
        let mut posts = Vec::new();
        while let Ok(Some(s)) = tokio::time::timeout(Duration::from_millis(300), seen.recv()).await
        {
            if s.method == "POST" {
                posts.push(s.rpc_method().to_owned());
            }
        }
        assert_eq!(
            posts,
            [
                "initialize",
                "notifications/initialized",
                "initialize",
                "notifications/initialized"
            ]
        );
        drop(tx);
    })
    .await;
}
