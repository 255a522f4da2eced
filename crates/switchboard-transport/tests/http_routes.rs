//! Routes (`HttpServerConfig::routes`): more endpoint paths on one listener,
//! each served as the main one, for each of which a session belongs to the path
//! that opened it (`HttpSession::path`). Driven by a raw HTTP client (reqwest)
//! against a library side that answers every request with the path and id of
//! the session that got it. Servers bind 127.0.0.1:0 only; every wait is
//! bounded.

use std::future::Future;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard_protocol::codec::{Event, SseItem, SseParser};
use switchboard_protocol::jsonrpc::{Message, Response};
use switchboard_transport::http::resource::ResourceServerConfig;
use switchboard_transport::http::server::{
    HttpServer, HttpServerConfig, HttpSession, SessionAcceptor, SessionKind,
};
use switchboard_transport::Inbound;
use tokio::sync::mpsc;

const LIMIT: Duration = Duration::from_secs(20);
const ACCEPT_BOTH: &str = "application/json, text/event-stream";
const MODERN: &str = "2026-07-28";

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("test timed out")
}

/// A new session as the library saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Opened {
    kind: SessionKind,
    path: String,
    session_id: String,
}

/// The library side: reports each new session, and answers each of its
/// requests with `{"path", "session", "method"}` of that session
/// (`initialize` with a 2025-11-25 result carrying the same).
fn library(mut acceptor: SessionAcceptor) -> mpsc::UnboundedReceiver<Opened> {
    let (opened_tx, opened_rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(session) = acceptor.accept().await {
            let HttpSession {
                transport,
                kind,
                path,
                session_id,
                ..
            } = session;
            let _ = opened_tx.send(Opened {
                kind,
                path: path.clone(),
                session_id: session_id.clone(),
            });
            tokio::spawn(async move {
                let (tx, mut rx) = transport.split();
                while let Some(event) = rx.recv().await {
                    let request = match event {
                        Inbound::Message(Message::Request(r)) => r,
                        Inbound::Closed { .. } => break,
                        _ => continue,
                    };
                    let mut result =
                        json!({"path": path, "session": session_id, "method": request.method});
                    if request.method == "initialize" {
                        result["protocolVersion"] = json!("2025-11-25");
                        result["capabilities"] = json!({});
                        result["serverInfo"] = json!({"name": "routes", "version": "0"});
                    }
                    let response = Response::new(request.id.clone(), &result).unwrap();
                    if tx.send(Message::Response(response)).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    opened_rx
}

/// A server with routes `/a` and `/b` besides `/mcp`, answering in JSON.
async fn start(
    tune: impl FnOnce(&mut HttpServerConfig),
) -> (HttpServer, mpsc::UnboundedReceiver<Opened>) {
    let mut config = HttpServerConfig::default();
    config.routes = vec!["/a".into(), "/b".into()];
    config.json_response = true;
    tune(&mut config);
    let (server, acceptor) = HttpServer::bind(config).await.unwrap();
    assert!(server.local_addr().ip().is_loopback());
    (server, library(acceptor))
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(LIMIT).build().unwrap()
}

fn initialize() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}})
    .to_string()
}

fn request(id: u64, method: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {}}).to_string()
}

/// A Streamable HTTP POST, in `session` when given.
async fn post(url: &str, session: Option<&str>, body: String) -> reqwest::Response {
    let mut b = client()
        .post(url)
        .header("accept", ACCEPT_BOTH)
        .header("content-type", "application/json")
        .body(body);
    if let Some(s) = session {
        b = b
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", "2025-11-25");
    }
    bounded(b.send()).await.unwrap()
}

async fn json_of(r: reqwest::Response) -> Value {
    let bytes = bounded(r.bytes()).await.unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// Opens a session at `url`: its id, as the response header names it, and as
/// the library saw it.
async fn open_session(url: &str, opened: &mut mpsc::UnboundedReceiver<Opened>) -> (String, Opened) {
    let r = post(url, None, initialize()).await;
    assert_eq!(r.status(), 200, "{url}");
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let answer = json_of(r).await;
    assert_eq!(answer["id"], 1);
    let seen = bounded(opened.recv()).await.unwrap();
    assert_eq!(seen.session_id, sid);
    assert_eq!(answer["result"]["session"], sid.as_str());
    (sid, seen)
}

/// `whoami` in session `sid` at `url`: the answer's result.
async fn whoami(url: &str, sid: &str) -> Value {
    let r = post(url, Some(sid), request(2, "whoami")).await;
    assert_eq!(r.status(), 200, "{url}");
    json_of(r).await["result"].clone()
}

#[tokio::test]
async fn sessions_open_at_each_path_and_belong_to_it() {
    bounded(async {
        let (server, mut opened) = start(|_| {}).await;
        for path in ["/mcp", "/a", "/b"] {
            let url = server.url_of(path);
            let (sid, seen) = open_session(&url, &mut opened).await;
            assert_eq!(seen.kind, SessionKind::Stateful);
            assert_eq!(seen.path, path);
            let result = whoami(&url, &sid).await;
            assert_eq!(result["path"], path);
            assert_eq!(result["session"], sid.as_str());
            assert_eq!(result["method"], "whoami");
        }
        assert_eq!(server.url(), server.url_of("/mcp"));
        assert_eq!(server.session_count(), 3);
        // Not a route: 404 as before.
        let r = post(&server.url_of("/c"), None, initialize()).await;
        assert_eq!(r.status(), 404);
    })
    .await;
}

#[tokio::test]
async fn a_session_named_at_another_path_is_not_found_there() {
    bounded(async {
        let (server, mut opened) = start(|_| {}).await;
        let (main_sid, _) = open_session(&server.url(), &mut opened).await;
        let (sid, _) = open_session(&server.url_of("/a"), &mut opened).await;
        for (path, id) in [("/mcp", &sid), ("/b", &sid), ("/a", &main_sid)] {
            let url = server.url_of(path);
            let r = post(&url, Some(id), request(3, "whoami")).await;
            assert_eq!(r.status(), 404, "POST {path}");
            let r = bounded(
                client()
                    .get(&url)
                    .header("accept", "text/event-stream")
                    .header("mcp-session-id", id.as_str())
                    .header("mcp-protocol-version", "2025-11-25")
                    .send(),
            )
            .await
            .unwrap();
            assert_eq!(r.status(), 404, "GET {path}");
            let r = bounded(
                client()
                    .delete(&url)
                    .header("mcp-session-id", id.as_str())
                    .header("mcp-protocol-version", "2025-11-25")
                    .send(),
            )
            .await
            .unwrap();
            assert_eq!(r.status(), 404, "DELETE {path}");
        }
        // Both live on, each at its own path.
        assert_eq!(server.session_count(), 2);
        assert_eq!(whoami(&server.url_of("/a"), &sid).await["path"], "/a");
        assert_eq!(whoami(&server.url(), &main_sid).await["path"], "/mcp");
        let r = bounded(
            client()
                .delete(server.url_of("/a"))
                .header("mcp-session-id", sid.as_str())
                .header("mcp-protocol-version", "2025-11-25")
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(server.session_count(), 1);
    })
    .await;
}

#[tokio::test]
async fn a_stateless_exchange_at_a_route_has_its_path() {
    bounded(async {
        let (server, mut opened) = start(|_| {}).await;
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "whoami", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {}}}})
        .to_string();
        let r = bounded(
            client()
                .post(server.url_of("/b"))
                .header("accept", ACCEPT_BOTH)
                .header("content-type", "application/json")
                .header("mcp-protocol-version", MODERN)
                .header("mcp-method", "whoami")
                .body(body)
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(json_of(r).await["result"]["path"], "/b");
        let seen = bounded(opened.recv()).await.unwrap();
        assert_eq!(seen.kind, SessionKind::Stateless);
        assert_eq!(seen.path, "/b");
        // GET with a modern version: 405 at a route as at the main path.
        let r = bounded(
            client()
                .get(server.url_of("/b"))
                .header("mcp-protocol-version", MODERN)
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 405);
    })
    .await;
}

/// An open legacy SSE stream.
struct Stream {
    response: reqwest::Response,
    parser: SseParser,
}

impl Stream {
    async fn next(&mut self) -> Event {
        loop {
            if let Some(item) = self.parser.next_item() {
                match item.unwrap() {
                    SseItem::Event(e) => return e,
                    SseItem::Comment(_) => continue,
                }
            }
            let chunk = bounded(self.response.chunk()).await.unwrap();
            self.parser.push(&chunk.expect("the stream ended early"));
        }
    }
}

/// GET `<base><sse>`: the stream and the endpoint event's data.
async fn open_legacy(base: &str, sse: &str) -> (Stream, String) {
    let response = bounded(
        client()
            .get(format!("{base}{sse}"))
            .header("accept", "text/event-stream")
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(response.status(), 200, "{sse}");
    let mut stream = Stream {
        response,
        parser: SseParser::new(),
    };
    let first = stream.next().await;
    assert_eq!(first.event, "endpoint");
    (stream, first.data)
}

async fn legacy_post(url: &str, body: String) -> reqwest::Response {
    bounded(
        client()
            .post(url)
            .header("content-type", "application/json")
            .body(body)
            .send(),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn legacy_sse_at_a_route_and_at_the_default_paths() {
    bounded(async {
        let (server, mut opened) = start(|_| {}).await;
        let base = format!("http://{}", server.local_addr());
        let (mut route_stream, route_endpoint) = open_legacy(&base, "/a/sse").await;
        let seen = bounded(opened.recv()).await.unwrap();
        assert_eq!(seen.kind, SessionKind::LegacySse);
        assert_eq!(seen.path, "/a");
        assert_eq!(
            route_endpoint,
            format!("/a/message?sessionId={}", seen.session_id)
        );
        let (mut main_stream, main_endpoint) = open_legacy(&base, "/sse").await;
        let main_seen = bounded(opened.recv()).await.unwrap();
        assert_eq!(main_seen.kind, SessionKind::LegacySse);
        assert_eq!(main_seen.path, "/mcp");
        assert_eq!(
            main_endpoint,
            format!("/message?sessionId={}", main_seen.session_id)
        );

        // Each session's id at the other's message path: 404.
        let crossed = [
            format!("/message?sessionId={}", seen.session_id),
            format!("/a/message?sessionId={}", main_seen.session_id),
            format!("/b/message?sessionId={}", seen.session_id),
        ];
        for url in crossed {
            let r = legacy_post(&format!("{base}{url}"), request(5, "whoami")).await;
            assert_eq!(r.status(), 404, "{url}");
        }

        for (stream, endpoint, path) in [
            (&mut route_stream, &route_endpoint, "/a"),
            (&mut main_stream, &main_endpoint, "/mcp"),
        ] {
            let r = legacy_post(&format!("{base}{endpoint}"), request(6, "whoami")).await;
            assert_eq!(r.status(), 202, "{endpoint}");
            let e = stream.next().await;
            assert_eq!(e.event, "message");
            let answer: Value = serde_json::from_str(&e.data).unwrap();
            assert_eq!(answer["id"], 6);
            assert_eq!(answer["result"]["path"], path);
        }
    })
    .await;
}

#[tokio::test]
async fn routes_whose_paths_are_taken_are_refused() {
    let cases: [(&[&str], &str); 8] = [
        (&["/a", "/a"], "route \"/a\""),
        (&["/mcp"], "the endpoint path"),
        (&["/healthz"], "the health endpoint"),
        (&["/readyz"], "the readiness endpoint"),
        (&["a"], "must start with '/'"),
        (&["/sse"], "the legacy SSE path"),
        (&["/message"], "the legacy message path"),
        // Route `/a`'s legacy SSE path.
        (&["/a", "/a/sse"], "the legacy SSE path of route \"/a\""),
    ];
    for (routes, why) in cases {
        let mut config = HttpServerConfig::default();
        config.routes = routes.iter().map(|r| (*r).to_owned()).collect();
        let e = HttpServer::bind(config).await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{routes:?}");
        assert!(e.to_string().contains(why), "{routes:?}: {e}");
    }
    // Without the legacy transport `/a/sse` is a path like any other, and so
    // are `/sse` and `/message`.
    let mut config = HttpServerConfig::default();
    config.sse_path = None;
    config.routes = vec!["/a".into(), "/a/sse".into(), "/sse".into()];
    HttpServer::bind(config).await.unwrap();
    // A Protected Resource Metadata path.
    let mut config = HttpServerConfig::default();
    config.auth = Some(ResourceServerConfig::new(
        "http://127.0.0.1:1",
        "https://mcp.example/mcp",
    ));
    config.routes = vec!["/.well-known/oauth-protected-resource".into()];
    let e = HttpServer::bind(config).await.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("Protected Resource Metadata"), "{e}");
}

#[tokio::test]
async fn with_auth_every_route_needs_a_token() {
    bounded(async {
        // No token is ever checked here: the issuer is never contacted.
        let (server, _opened) = start(|config| {
            config.auth = Some(ResourceServerConfig::new(
                "http://127.0.0.1:1",
                "https://mcp.example/mcp",
            ));
        })
        .await;
        for path in ["/mcp", "/a", "/b"] {
            let r = post(&server.url_of(path), None, initialize()).await;
            assert_eq!(r.status(), 401, "{path}");
            let challenge = r.headers()["www-authenticate"].to_str().unwrap();
            assert!(
                challenge.contains("resource_metadata=\"https://mcp.example/.well-known/oauth-protected-resource/mcp\""),
                "{path}: {challenge}"
            );
        }
        let base = format!("http://{}", server.local_addr());
        let r = bounded(
            client()
                .get(format!("{base}/a/sse"))
                .header("accept", "text/event-stream")
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 401);
        // The metadata is where it was, and only there.
        let r = bounded(
            client()
                .get(format!("{base}/.well-known/oauth-protected-resource/mcp"))
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 200);
        let r = bounded(
            client()
                .get(format!("{base}/.well-known/oauth-protected-resource/a"))
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 404);
    })
    .await;
}
