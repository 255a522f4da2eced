//! The legacy HTTP+SSE transport (MCP 2024-11-05): the server side served by
//! `HttpServer` next to the Streamable HTTP endpoint, driven by a raw HTTP client
//! (reqwest, SSE parsed with `codec::SseParser`), and the client side
//! (`http::sse_client::connect`) against it and against scripted fake servers.
//! Servers bind 127.0.0.1:0 only; every test is bounded by a timeout.

use std::future::Future;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard_protocol::codec::{Event, SseItem, SseParser};
use switchboard_protocol::jsonrpc::{Id, Message, Notification, Request, Response};
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::http::server::{
    HttpServer, HttpServerConfig, HttpSession, SessionAcceptor, SessionKind,
};
use switchboard_transport::http::sse_client::{self, SseClientConfig, SseClientError};
use switchboard_transport::{CloseReason, Inbound, Receiver, Transport, TRANSPORT_ERROR};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const LIMIT: Duration = Duration::from_secs(20);
/// How long "nothing arrives" is watched for.
const QUIET: Duration = Duration::from_millis(300);

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("test timed out")
}

async fn start(config: HttpServerConfig) -> (HttpServer, SessionAcceptor) {
    let (server, acceptor) = HttpServer::bind(config).await.unwrap();
    assert!(server.local_addr().ip().is_loopback());
    (server, acceptor)
}

fn base(server: &HttpServer) -> String {
    format!("http://{}", server.local_addr())
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().build().unwrap()
}

/// An open SSE response and its parser.
struct Stream {
    response: reqwest::Response,
    parser: SseParser,
    /// Comments seen so far.
    comments: Vec<String>,
}

impl Stream {
    fn new(response: reqwest::Response) -> Self {
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        Stream {
            response,
            parser: SseParser::new().with_comments(true),
            comments: Vec::new(),
        }
    }

    /// The next event; `None` when the stream ends.
    async fn next(&mut self) -> Option<Event> {
        loop {
            while let Some(item) = self.parser.next_item() {
                match item.unwrap() {
                    SseItem::Event(e) => return Some(e),
                    SseItem::Comment(c) => self.comments.push(c),
                }
            }
            match self.response.chunk().await.ok()? {
                Some(chunk) => self.parser.push(&chunk),
                None => return None,
            }
        }
    }

    /// The next `message` event's JSON.
    async fn next_message(&mut self) -> Value {
        let e = self.next().await.expect("a message event");
        assert_eq!(e.event, "message");
        assert_eq!(e.id, None, "legacy events carry no id");
        serde_json::from_str(&e.data).unwrap()
    }
}

/// GET /sse: the stream, and the endpoint event's data.
async fn open(c: &reqwest::Client, base: &str) -> (Stream, String) {
    let response = c
        .get(format!("{base}/sse"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    let mut stream = Stream::new(response);
    let first = stream.next().await.expect("the endpoint event");
    assert_eq!(first.event, "endpoint");
    (stream, first.data)
}

fn post(c: &reqwest::Client, url: &str, body: impl Into<String>) -> reqwest::RequestBuilder {
    c.post(url)
        .header("content-type", "application/json")
        .body(body.into())
}

fn request(id: i64, method: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {}})
}

async fn next_message(t: &mut Transport) -> Message {
    match t.receiver.recv().await {
        Some(Inbound::Message(m)) => m,
        other => panic!("expected a message, got {other:?}"),
    }
}

async fn closed_reason(rx: &mut Receiver) -> CloseReason {
    loop {
        match rx.recv().await {
            Some(Inbound::Closed { reason }) => return reason,
            Some(_) => continue,
            None => panic!("the receiver ended without Closed"),
        }
    }
}

fn response(id: Id, result: Value) -> Message {
    Message::Response(Response::new(id, &result).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoint_first_then_202_and_message_events() {
    bounded(async {
        let (server, mut acceptor) = start(HttpServerConfig::default()).await;
        let base = base(&server);
        let c = client();
        let (mut stream, endpoint) = open(&c, &base).await;
        let id = endpoint
            .strip_prefix("/message?sessionId=")
            .expect("a relative endpoint URI");
        assert_eq!(id.len(), 32);
        assert!(id
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));

        let HttpSession {
            transport: mut session,
            session_id,
            protocol_version,
            kind,
            ..
        } = acceptor.accept().await.unwrap();
        assert_eq!(session_id, id);
        assert_eq!(kind, SessionKind::LegacySse);
        assert_eq!(protocol_version, ProtocolVersion::V2024_11_05);

        let url = format!("{base}{endpoint}");
        let resp = post(&c, &url, request(1, "initialize").to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 202);
        assert_eq!(resp.text().await.unwrap(), "Accepted");
        let Message::Request(r) = next_message(&mut session).await else {
            panic!("a request")
        };
        assert_eq!(r.method, "initialize");

        // A related notification and the response both go on the one stream, in
        // the order sent.
        let note = Notification::new(
            "notifications/progress",
            &json!({"progressToken": 1, "progress": 1}),
        )
        .unwrap();
        session
            .sender
            .send_related(Message::Notification(note), Some(r.id.clone()))
            .await
            .unwrap();
        session
            .sender
            .send(response(r.id, json!({"ok": true})))
            .await
            .unwrap();
        let first = stream.next_message().await;
        assert_eq!(first["method"], "notifications/progress");
        let second = stream.next_message().await;
        assert_eq!(second["id"], 1);
        assert_eq!(second["result"]["ok"], true);

        // A server request is a message event too; its answer is POSTed back.
        let ask = Request::new(Id::from(7), "roots/list", &json!({})).unwrap();
        session.sender.send(Message::Request(ask)).await.unwrap();
        let asked = stream.next_message().await;
        assert_eq!(asked["method"], "roots/list");
        let answer = json!({"jsonrpc": "2.0", "id": 7, "result": {"roots": []}});
        let resp = post(&c, &url, answer.to_string()).send().await.unwrap();
        assert_eq!(resp.status(), 202);
        assert!(matches!(
            next_message(&mut session).await,
            Message::Response(_)
        ));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_posts_get_the_spec_answers() {
    bounded(async {
        let mut config = HttpServerConfig::default();
        config.max_body_bytes = 1024;
        let (server, mut acceptor) = start(config).await;
        let base = base(&server);
        let c = client();
        let (_stream, endpoint) = open(&c, &base).await;
        let mut session = acceptor.accept().await.unwrap().transport;
        let url = format!("{base}{endpoint}");

        let unknown = format!("{base}/message?sessionId=00000000000000000000000000000000");
        let resp = post(&c, &unknown, request(1, "ping").to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 404);

        let resp = post(
            &c,
            &format!("{base}/message"),
            request(1, "ping").to_string(),
        )
        .send()
        .await
        .unwrap();
        assert_eq!(resp.status(), 400, "no sessionId");

        let resp = post(&c, &url, "{not json").send().await.unwrap();
        assert_eq!(resp.status(), 400);
        assert_eq!(resp.headers()["content-type"], "application/json");
        let body: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
        assert_eq!(body["error"]["code"], -32700);
        assert_eq!(body["id"], Value::Null);

        let resp = post(&c, &url, r#"{"jsonrpc":"2.0","id":5}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400);
        let body: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
        assert_eq!(body["error"]["code"], -32600);

        let batch = json!([request(2, "ping"), request(3, "ping")]).to_string();
        let resp = post(&c, &url, batch).send().await.unwrap();
        assert_eq!(resp.status(), 400, "2024-11-05 has no batches");
        let body: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
        assert_eq!(body["error"]["code"], -32600);

        let resp = c
            .post(&url)
            .header("content-type", "text/plain")
            .body(request(4, "ping").to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 415);
        // A coded body is not decoded: 415 naming what would do.
        let resp = c
            .post(&url)
            .header("content-type", "application/json")
            .header("content-encoding", "gzip")
            .body(request(4, "ping").to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 415);
        assert_eq!(resp.headers()["accept-encoding"], "identity");

        let big = json!({"jsonrpc": "2.0", "method": "x", "params": {"pad": "y".repeat(2000)}});
        let resp = post(&c, &url, big.to_string()).send().await.unwrap();
        assert_eq!(resp.status(), 413);

        let resp = c.get(&url).send().await.unwrap();
        assert_eq!(resp.status(), 405);
        assert_eq!(resp.headers()["allow"], "POST");
        let resp = c.post(format!("{base}/sse")).send().await.unwrap();
        assert_eq!(resp.status(), 405);
        assert_eq!(resp.headers()["allow"], "GET");
        let resp = c
            .get(format!("{base}/sse"))
            .header("accept", "application/json")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 406);

        // None of that reached the session; a good POST still does.
        let resp = post(&c, &url, request(9, "ping").to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 202);
        let Message::Request(r) = next_message(&mut session).await else {
            panic!("a request")
        };
        assert_eq!(r.id, Id::from(9));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_origin_and_host_get_403() {
    bounded(async {
        let (server, mut acceptor) = start(HttpServerConfig::default()).await;
        let base = base(&server);
        let c = client();
        let resp = c
            .get(format!("{base}/sse"))
            .header("origin", "http://evil.example")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 403);
        let resp = c
            .get(format!("{base}/sse"))
            .header("host", "evil.example")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 403);

        let (_stream, endpoint) = open(&c, &base).await;
        let _session = acceptor.accept().await.unwrap();
        let resp = post(
            &c,
            &format!("{base}{endpoint}"),
            request(1, "ping").to_string(),
        )
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
        assert_eq!(resp.status(), 403);
        assert_eq!(
            server.session_count(),
            1,
            "only the allowed GET made a session"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_stream_ends_the_session() {
    bounded(async {
        let mut config = HttpServerConfig::default();
        config.sse_keep_alive = None; // the close must be noticed without writes
        let (server, mut acceptor) = start(config).await;
        let base = base(&server);
        let c = client();
        let (stream, endpoint) = open(&c, &base).await;
        let mut session = acceptor.accept().await.unwrap().transport;
        assert_eq!(server.session_count(), 1);
        drop(stream);
        let reason = closed_reason(&mut session.receiver).await;
        assert!(matches!(reason, CloseReason::PeerClosed), "{reason:?}");
        assert!(session.receiver.recv().await.is_none());
        assert_eq!(server.session_count(), 0);
        let resp = post(
            &c,
            &format!("{base}{endpoint}"),
            request(1, "ping").to_string(),
        )
        .send()
        .await
        .unwrap();
        assert_eq!(resp.status(), 404);
        let sent = session.sender.send(response(Id::from(1), json!({}))).await;
        assert!(sent.unwrap_err().is_closed());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_are_isolated() {
    bounded(async {
        let (server, mut acceptor) = start(HttpServerConfig::default()).await;
        let base = base(&server);
        let c = client();
        let (mut stream_a, endpoint_a) = open(&c, &base).await;
        let mut a = acceptor.accept().await.unwrap().transport;
        let (mut stream_b, endpoint_b) = open(&c, &base).await;
        let mut b = acceptor.accept().await.unwrap().transport;
        assert_ne!(endpoint_a, endpoint_b);

        let resp = post(
            &c,
            &format!("{base}{endpoint_b}"),
            request(1, "for_b").to_string(),
        )
        .send()
        .await
        .unwrap();
        assert_eq!(resp.status(), 202);
        let Message::Request(r) = next_message(&mut b).await else {
            panic!("a request")
        };
        assert_eq!(r.method, "for_b");
        assert!(
            tokio::time::timeout(QUIET, a.receiver.recv())
                .await
                .is_err(),
            "nothing reaches session a"
        );

        a.sender
            .send(response(Id::from(1), json!({"from": "a"})))
            .await
            .unwrap();
        b.sender
            .send(response(Id::from(1), json!({"from": "b"})))
            .await
            .unwrap();
        assert_eq!(stream_a.next_message().await["result"]["from"], "a");
        assert_eq!(stream_b.next_message().await["result"]["from"], "b");
        assert!(
            tokio::time::timeout(QUIET, stream_a.next()).await.is_err(),
            "b's message does not reach a's stream"
        );

        // Ending one leaves the other working.
        drop(stream_a);
        assert!(matches!(
            closed_reason(&mut a.receiver).await,
            CloseReason::PeerClosed
        ));
        b.sender
            .send(response(Id::from(2), json!({"still": "here"})))
            .await
            .unwrap();
        assert_eq!(stream_b.next_message().await["result"]["still"], "here");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_and_legacy_sessions_share_one_server() {
    bounded(async {
        let (server, mut acceptor) = start(HttpServerConfig::default()).await;
        let base = base(&server);
        let c = client();

        // A Streamable HTTP session on /mcp ...
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}});
        let pending = c
            .post(format!("{base}/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(init.to_string())
            .send();
        let (resp, streamable) = tokio::join!(pending, async {
            let s = acceptor.accept().await.unwrap();
            assert_eq!(s.kind, SessionKind::Stateful);
            let mut t = s.transport;
            let Message::Request(r) = next_message(&mut t).await else {
                panic!("initialize")
            };
            t.sender
                .send(response(r.id, json!({"protocolVersion": "2025-11-25"})))
                .await
                .unwrap();
            (s.session_id, t)
        });
        let resp = resp.unwrap();
        assert_eq!(resp.status(), 200);
        let (streamable_id, _streamable) = streamable;
        let mut reply = Stream::new(resp);
        let answer = loop {
            let e = reply.next().await.expect("the initialize response");
            if !e.data.is_empty() {
                break serde_json::from_str::<Value>(&e.data).unwrap();
            }
        };
        assert_eq!(answer["id"], 1);

        // ... and a legacy one at the same time.
        let (mut stream, endpoint) = open(&c, &base).await;
        let legacy = acceptor.accept().await.unwrap();
        assert_eq!(legacy.kind, SessionKind::LegacySse);
        let legacy_id = legacy.session_id.clone();
        let mut legacy = legacy.transport;
        assert_eq!(server.session_count(), 2);

        let resp = post(
            &c,
            &format!("{base}{endpoint}"),
            request(2, "ping").to_string(),
        )
        .send()
        .await
        .unwrap();
        assert_eq!(resp.status(), 202);
        let Message::Request(r) = next_message(&mut legacy).await else {
            panic!("ping")
        };
        legacy.sender.send(response(r.id, json!({}))).await.unwrap();
        assert_eq!(stream.next_message().await["id"], 2);

        // Neither kind's id opens the other kind's session.
        let resp = post(
            &c,
            &format!("{base}/message?sessionId={streamable_id}"),
            request(3, "ping").to_string(),
        )
        .send()
        .await
        .unwrap();
        assert_eq!(resp.status(), 404);
        let resp = c
            .post(format!("{base}/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-session-id", &legacy_id)
            .body(request(4, "ping").to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 404);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_limit_counts_both_kinds() {
    bounded(async {
        let mut config = HttpServerConfig::default();
        config.max_sessions = 1;
        let (server, mut acceptor) = start(config).await;
        let base = base(&server);
        let c = client();
        let (_stream, _) = open(&c, &base).await;
        let _session = acceptor.accept().await.unwrap();
        let resp = c
            .get(format!("{base}/sse"))
            .header("accept", "text/event-stream")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 503);
        let resp = c
            .post(format!("{base}/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(request(1, "initialize").to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 503);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_idle_expiry_and_shutdown_end_streams() {
    bounded(async {
        let mut config = HttpServerConfig::default();
        config.sse_keep_alive = Some(Duration::from_millis(50));
        config.session_idle_timeout = Some(Duration::from_millis(600));
        let (server, mut acceptor) = start(config).await;
        let base = base(&server);
        let c = client();

        // Idle: keep-alives flow, then the stream ends after 600 ms without traffic.
        let (mut stream, _) = open(&c, &base).await;
        let mut idle = acceptor.accept().await.unwrap().transport;
        assert!(
            stream.next().await.is_none(),
            "the stream ends on idle expiry"
        );
        assert!(
            stream.comments.iter().any(|c| c == "keep-alive"),
            "{:?}",
            stream.comments
        );
        assert!(matches!(
            closed_reason(&mut idle.receiver).await,
            CloseReason::SessionExpired
        ));

        // Shutdown: dropping the server ends a live stream.
        let (mut stream, _) = open(&c, &base).await;
        let mut live = acceptor.accept().await.unwrap().transport;
        drop(server);
        assert!(stream.next().await.is_none(), "the stream ends on shutdown");
        assert!(matches!(
            closed_reason(&mut live.receiver).await,
            CloseReason::SessionClosed
        ));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_does_not_read_slows_only_its_own_session() {
    bounded(async {
        let mut config = HttpServerConfig::default();
        config.transport.channel_capacity = 2;
        let (server, mut acceptor) = start(config).await;
        let base = base(&server);
        let c = client();
        let (_stalled_stream, _) = open(&c, &base).await;
        let stalled = acceptor.accept().await.unwrap().transport;
        let (mut stream, endpoint) = open(&c, &base).await;
        let mut healthy = acceptor.accept().await.unwrap().transport;

        // Fill the stalled session until its sender waits (socket buffers, the
        // connection queue and the session queue all full).
        let pad = "x".repeat(256 * 1024);
        let mut blocked = false;
        for i in 0..2000 {
            let note = Notification::new("pad", &json!({"i": i, "pad": pad})).unwrap();
            let send = stalled.sender.send(Message::Notification(note));
            if tokio::time::timeout(Duration::from_millis(500), send)
                .await
                .is_err()
            {
                blocked = true;
                break;
            }
        }
        assert!(blocked, "the stalled session's sender never waited");

        // The other session is unaffected.
        let resp = post(
            &c,
            &format!("{base}{endpoint}"),
            request(1, "ping").to_string(),
        )
        .send()
        .await
        .unwrap();
        assert_eq!(resp.status(), 202);
        let Message::Request(r) = next_message(&mut healthy).await else {
            panic!("ping")
        };
        healthy
            .sender
            .send(response(r.id, json!({})))
            .await
            .unwrap();
        assert_eq!(stream.next_message().await["id"], 1);
    })
    .await;
}

// ---- the client side ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_round_trips_with_our_server() {
    bounded(async {
        let (server, mut acceptor) = start(HttpServerConfig::default()).await;
        let mut config = SseClientConfig::default();
        config
            .headers
            .insert("authorization", "Bearer t0ken".parse().unwrap());
        let url = format!("{}/sse", base(&server));
        let connecting = sse_client::connect(&url, config);
        let (client, session) = tokio::join!(connecting, acceptor.accept());
        let mut client = client.unwrap();
        let session = session.unwrap();
        assert_eq!(session.headers["authorization"], "Bearer t0ken");
        let mut session = session.transport;

        client
            .sender
            .send(Message::Request(
                Request::new(Id::from(1), "initialize", &json!({})).unwrap(),
            ))
            .await
            .unwrap();
        let Message::Request(r) = next_message(&mut session).await else {
            panic!("a request")
        };
        assert_eq!(r.method, "initialize");
        session
            .sender
            .send(response(r.id, json!({"hello": "client"})))
            .await
            .unwrap();
        let Message::Response(answer) = next_message(&mut client).await else {
            panic!("a response")
        };
        assert_eq!(answer.id, Id::from(1));
        let result: Value = answer.result_as().unwrap();
        assert_eq!(result["hello"], "client");

        // Dropping the client's sender closes its stream: the server's session ends.
        let Transport { sender, receiver } = client;
        drop(sender);
        let mut client_rx = receiver;
        match client_rx.recv().await {
            Some(Inbound::Closed { reason }) => {
                assert!(matches!(reason, CloseReason::SessionClosed), "{reason:?}")
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            closed_reason(&mut session.receiver).await,
            CloseReason::PeerClosed
        ));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_sees_the_stream_end_and_refused_posts() {
    bounded(async {
        let (server, mut acceptor) = start(HttpServerConfig::default()).await;
        let url = format!("{}/sse", base(&server));
        let (client, session) = tokio::join!(
            sse_client::connect(&url, SseClientConfig::default()),
            acceptor.accept()
        );
        let mut client = client.unwrap();
        let Transport {
            sender,
            receiver: mut session_rx,
        } = session.unwrap().transport;

        // The server ends the session: the client's receiver closes.
        drop(sender);
        assert!(matches!(
            closed_reason(&mut session_rx).await,
            CloseReason::SessionClosed
        ));
        match client.receiver.recv().await {
            Some(Inbound::Closed { reason }) => {
                assert!(matches!(reason, CloseReason::PeerClosed), "{reason:?}")
            }
            other => panic!("{other:?}"),
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_post_of_a_request_yields_an_error_response() {
    bounded(async {
        // GET: the endpoint event, then the stream stays open; POST: 500.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 8192];
                    let n = socket.read(&mut buf).await.unwrap_or(0);
                    if buf[..n].starts_with(b"GET") {
                        let events = "event: endpoint\ndata: /message?sessionId=1\n\n";
                        socket.write_all(SSE_HEAD.as_bytes()).await.unwrap();
                        socket.write_all(events.as_bytes()).await.unwrap();
                        tokio::time::sleep(LIMIT).await;
                    } else {
                        let body = "no such session";
                        let head = format!(
                            "HTTP/1.1 500 Internal Server Error\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                            body.len()
                        );
                        let _ = socket.write_all(head.as_bytes()).await;
                        let _ = socket.write_all(body.as_bytes()).await;
                    }
                });
            }
        });
        let url = format!("http://{addr}/sse");
        let mut client = sse_client::connect(&url, SseClientConfig::default())
            .await
            .unwrap();
        let note = Notification::new("notifications/initialized", &json!({})).unwrap();
        client.sender.send(Message::Notification(note)).await.unwrap();
        let ping = Request::new(Id::from(5), "ping", &json!({})).unwrap();
        client.sender.send(Message::Request(ping)).await.unwrap();
        // Only the request gets an answer (the notification's failure is logged).
        match client.receiver.recv().await {
            Some(Inbound::Failed { id, error }) => {
                assert_eq!(id, Id::from(5));
                assert_eq!(error.code, TRANSPORT_ERROR);
                assert!(error.message.contains("500"), "{}", error.message);
            }
            other => panic!("expected the transport's failure, got {other:?}"),
        }
    })
    .await;
}

/// A one-connection fake server that answers the GET with `head` and then
/// `events`, and keeps the connection open until the test ends.
async fn fake_server(head: &'static str, events: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 4096];
        let _ = socket.read(&mut buf).await;
        socket.write_all(head.as_bytes()).await.unwrap();
        socket.write_all(events.as_bytes()).await.unwrap();
        tokio::time::sleep(LIMIT).await;
    });
    format!("http://{addr}/sse")
}

const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_refuses_a_cross_origin_endpoint() {
    bounded(async {
        let url = fake_server(
            SSE_HEAD,
            "event: endpoint\ndata: http://evil.example/message?sessionId=1\n\n",
        )
        .await;
        let err = sse_client::connect(&url, SseClientConfig::default())
            .await
            .unwrap_err();
        assert!(
            matches!(err, SseClientError::CrossOriginEndpoint(_)),
            "{err}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_waits_for_the_endpoint_a_bounded_time() {
    bounded(async {
        let url = fake_server(SSE_HEAD, ": hello\n\n").await;
        let mut config = SseClientConfig::default();
        config.endpoint_timeout = Duration::from_millis(300);
        let err = sse_client::connect(&url, config).await.unwrap_err();
        assert!(matches!(err, SseClientError::EndpointTimeout(_)), "{err}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_reports_a_refused_get() {
    bounded(async {
        let (server, _acceptor) = start(HttpServerConfig::default()).await;
        // A Streamable-only path answers a plain GET without a session with 4xx.
        let err = sse_client::connect(
            &format!("{}/nowhere", base(&server)),
            SseClientConfig::default(),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(err, SseClientError::Status { status: 404, .. }),
            "{err}"
        );
        let url = fake_server(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n",
            "{}",
        )
        .await;
        let err = sse_client::connect(&url, SseClientConfig::default())
            .await
            .unwrap_err();
        assert!(matches!(err, SseClientError::NotEventStream(_)), "{err}");
        let err = sse_client::connect("ftp://127.0.0.1/sse", SseClientConfig::default())
            .await
            .unwrap_err();
        assert!(matches!(err, SseClientError::InvalidUrl(_)), "{err}");
    })
    .await;
}
