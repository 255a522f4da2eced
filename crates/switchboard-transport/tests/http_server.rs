//! The Streamable HTTP server transport (stateful shape, MCP 2025-03-26 to
//! 2025-11-25) against a real HTTP client (reqwest), with a tiny echo loop on the
//! library side. Servers bind 127.0.0.1:0 only; every test is bounded by a timeout.

use std::future::Future;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard_protocol::codec::{SseItem, SseParser};
use switchboard_protocol::jsonrpc::{Id, Message, Notification, Response};
use switchboard_transport::http::server::{HttpServer, HttpServerConfig, SessionAcceptor};
use switchboard_transport::{CloseReason, Inbound};
use tokio::sync::mpsc;

const ACCEPT_BOTH: &str = "application/json, text/event-stream";
const LIMIT: Duration = Duration::from_secs(20);

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("test timed out")
}

/// Answers every request of every session: `initialize` with a fixed result;
/// `with_progress` with a related progress notification, then the response;
/// `notify_unrelated` with an unrelated log notification, then the response;
/// `hold` with nothing until the session's next request, `release`, which
/// answers both; `forgotten` never (the library forgets it, as after a
/// cancellation); anything else with `{"echo": method, "params": params}`. Each
/// session's close reason is sent on the returned channel.
fn echo(mut acceptor: SessionAcceptor) -> mpsc::UnboundedReceiver<CloseReason> {
    let (closed_tx, closed_rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(session) = acceptor.accept().await {
            let closed_tx = closed_tx.clone();
            assert!(!session.session_id.is_empty());
            tokio::spawn(async move {
                let (tx, mut rx) = session.transport.split();
                let mut held = None;
                while let Some(event) = rx.recv().await {
                    let request = match event {
                        Inbound::Message(Message::Request(r)) => r,
                        Inbound::Closed { reason } => {
                            let _ = closed_tx.send(reason);
                            break;
                        }
                        _ => continue,
                    };
                    let id = request.id.clone();
                    let result = match request.method.as_str() {
                        "initialize" => json!({
                            "protocolVersion": "2025-11-25",
                            "capabilities": {},
                            "serverInfo": {"name": "echo", "version": "0"}
                        }),
                        "with_progress" => {
                            let note = Notification::new(
                                "notifications/progress",
                                &json!({"progressToken": "t", "progress": 1}),
                            )
                            .unwrap();
                            tx.send_related(Message::Notification(note), Some(id.clone()))
                                .await
                                .unwrap();
                            json!({"done": true})
                        }
                        // 2 MiB of text: past the 1 MiB a client may cap an SSE event at.
                        "big" => json!({"text": "x".repeat(2 << 20)}),
                        "notify_unrelated" => {
                            let note = Notification::new(
                                "notifications/message",
                                &json!({"level": "info", "data": "unrelated"}),
                            )
                            .unwrap();
                            tx.send(Message::Notification(note)).await.unwrap();
                            json!({"sent": true})
                        }
                        "hold" => {
                            held = Some(id);
                            continue;
                        }
                        "forgotten" => {
                            tx.forget(&id);
                            continue;
                        }
                        "release" => {
                            if let Some(h) = held.take() {
                                let r = Response::new(h, &json!({"released": true})).unwrap();
                                tx.send(Message::Response(r)).await.unwrap();
                            }
                            json!({"release": true})
                        }
                        method => {
                            let params: Value = request.params_as().unwrap_or(Value::Null);
                            json!({"echo": method, "params": params})
                        }
                    };
                    let response = Response::new(id, &result).unwrap();
                    if tx.send(Message::Response(response)).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    closed_rx
}

async fn start(config: HttpServerConfig) -> (HttpServer, mpsc::UnboundedReceiver<CloseReason>) {
    let (server, acceptor) = HttpServer::bind(config).await.unwrap();
    assert!(server.local_addr().ip().is_loopback());
    let closed = echo(acceptor);
    (server, closed)
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(LIMIT).build().unwrap()
}

fn request(id: u64, method: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"n": id}}).to_string()
}

fn initialize(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}})
    .to_string()
}

fn post(
    c: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: String,
) -> reqwest::RequestBuilder {
    let mut b = c
        .post(url)
        .header("accept", ACCEPT_BOTH)
        .header("content-type", "application/json")
        .body(body);
    if let Some(s) = session {
        b = b
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", "2025-11-25");
    }
    b
}

/// Every event of a finished SSE body, as (id, data); a JSON body (a lone
/// response, `HttpServerConfig::json_reply_within`) is one event without an id.
fn events(body: &[u8]) -> Vec<(Option<String>, String)> {
    if matches!(body.trim_ascii_start().first(), Some(b'{' | b'[')) {
        return vec![(None, String::from_utf8(body.to_vec()).unwrap())];
    }
    let mut parser = SseParser::new();
    let mut out: Vec<_> = parser
        .feed(body)
        .filter_map(|item| match item.unwrap() {
            SseItem::Event(e) => Some((e.id, e.data)),
            SseItem::Comment(_) => None,
        })
        .collect();
    parser.finish();
    while let Some(item) = parser.next_item() {
        if let SseItem::Event(e) = item.unwrap() {
            out.push((e.id, e.data));
        }
    }
    out
}

/// The JSON messages of an SSE body (priming events skipped).
fn messages(body: &[u8]) -> Vec<Value> {
    events(body)
        .into_iter()
        .filter(|(_, data)| !data.is_empty())
        .map(|(_, data)| serde_json::from_str(&data).unwrap())
        .collect()
}

/// Creates a session; returns its id.
async fn open_session(c: &reqwest::Client, url: &str) -> String {
    let resp = post(c, url, None, initialize(1)).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let sid = resp.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let body = resp.bytes().await.unwrap();
    let msgs = messages(&body);
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert_eq!(msgs[0]["id"], 1);
    sid
}

/// Reads an open SSE stream until `n` message events came.
async fn read_messages(resp: &mut reqwest::Response, n: usize) -> Vec<(Option<String>, Value)> {
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    while out.len() < n {
        let chunk = resp.chunk().await.unwrap().expect("the stream ended early");
        for item in parser.feed(&chunk) {
            if let SseItem::Event(e) = item.unwrap() {
                if !e.data.is_empty() {
                    out.push((e.id, serde_json::from_str(&e.data).unwrap()));
                }
            }
        }
    }
    out
}

fn get(c: &reqwest::Client, url: &str, session: &str) -> reqwest::RequestBuilder {
    c.get(url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25")
}

#[tokio::test]
async fn initialize_creates_a_session_with_an_id() {
    bounded(async {
        let (server, _closed) = start(HttpServerConfig::default()).await;
        let url = server.url();
        let resp = post(&client(), &url, None, initialize(1))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let h = resp.headers();
        assert_eq!(h["content-type"], "text/event-stream");
        assert_eq!(h["x-accel-buffering"], "no");
        let sid = h["mcp-session-id"].to_str().unwrap().to_owned();
        assert!(
            sid.len() >= 16 && sid.bytes().all(|b| (0x21..=0x7e).contains(&b)),
            "{sid}"
        );
        let msgs = messages(&resp.bytes().await.unwrap());
        assert_eq!(msgs.len(), 1);
        assert_eq!(msgs[0]["result"]["serverInfo"]["name"], "echo");
        assert_eq!(server.session_count(), 1);
    })
    .await
}

#[tokio::test]
async fn a_call_gets_its_related_notification_before_the_response_then_the_stream_ends() {
    bounded(async {
        let (server, _closed) = start(HttpServerConfig::default()).await;
        let url = server.url();
        let c = client();
        let sid = open_session(&c, &url).await;
        let resp = post(&c, &url, Some(&sid), request(2, "with_progress"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        // The whole body: the stream ends after the response.
        let evs = events(&resp.bytes().await.unwrap());
        assert_eq!(evs.len(), 3, "{evs:?}");
        // 2025-11-25: a priming event (an id, empty data) first.
        assert!(evs[0].1.is_empty() && evs[0].0.is_some(), "{evs:?}");
        let note: Value = serde_json::from_str(&evs[1].1).unwrap();
        assert_eq!(note["method"], "notifications/progress");
        let answer: Value = serde_json::from_str(&evs[2].1).unwrap();
        assert_eq!(answer["id"], 2);
        assert_eq!(answer["result"]["done"], true);
        // Event ids are distinct.
        let ids: std::collections::HashSet<_> = evs.iter().map(|e| e.0.clone().unwrap()).collect();
        assert_eq!(ids.len(), 3);
    })
    .await
}

/// A response ready at once travels with the head: the whole reply is one
/// complete body (priming event and response; its length known). A response
/// that takes longer does not hold the head back: the head and the priming event
/// arrive first, the response later on the same stream.
#[tokio::test]
async fn a_quick_reply_is_one_body_and_a_slow_one_gets_its_head_first() {
    bounded(async {
        // A wait far longer than any test machine's scheduling delay, so that
        // "ready at once" holds however loaded the machine is.
        let mut config = HttpServerConfig::default();
        config.sse_first_event_wait = Duration::from_secs(5);
        // SSE whatever comes first (a lone response is JSON by default).
        config.json_reply_within = Duration::ZERO;
        let (patient, _closed) = start(config).await;
        let c = client();
        let sid = open_session(&c, &patient.url()).await;
        let resp = post(&c, &patient.url(), Some(&sid), request(2, "quick"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert!(
            resp.headers().contains_key("content-length"),
            "{:?}",
            resp.headers()
        );
        let evs = events(&resp.bytes().await.unwrap());
        assert_eq!(evs.len(), 2, "{evs:?}");
        assert!(evs[0].1.is_empty() && evs[0].0.is_some(), "{evs:?}");
        let answer: Value = serde_json::from_str(&evs[1].1).unwrap();
        assert_eq!(answer["result"]["echo"], "quick");

        // `hold` is answered only when `release` comes, which this test sends
        // after the held call's head has arrived (default wait).
        let (server, _closed) = start(HttpServerConfig::default()).await;
        let url = server.url();
        let sid = open_session(&c, &url).await;
        let mut held = post(&c, &url, Some(&sid), request(3, "hold"))
            .send()
            .await
            .unwrap();
        assert_eq!(held.status(), 200);
        assert!(!held.headers().contains_key("content-length"));
        let first = held.chunk().await.unwrap().expect("the priming event");
        let evs = events(&first);
        assert_eq!(evs.len(), 1, "only the priming event so far: {evs:?}");
        assert!(evs[0].1.is_empty() && evs[0].0.is_some(), "{evs:?}");
        let release = post(&c, &url, Some(&sid), request(4, "release"))
            .send()
            .await
            .unwrap();
        assert_eq!(
            messages(&release.bytes().await.unwrap())[0]["result"]["release"],
            true
        );
        let mut rest = Vec::new();
        while let Some(chunk) = held.chunk().await.unwrap() {
            rest.extend_from_slice(&chunk);
        }
        let answer = &messages(&rest)[0];
        assert_eq!(answer["id"], 3);
        assert_eq!(answer["result"]["released"], true);
    })
    .await
}

/// A lone request whose client takes either type: its response, when it is
/// the first thing to send, is one `application/json` body (no stream, no
/// priming event; a 2 MiB result too, which an SSE client capping events at
/// 1 MiB could not read); anything sent first opens the SSE stream, and a
/// client that takes only SSE gets SSE.
#[tokio::test]
async fn a_lone_response_first_is_one_json_body_and_anything_first_streams() {
    bounded(async {
        let (server, _closed) = start(HttpServerConfig::default()).await;
        let url = server.url();
        let c = client();
        let sid = open_session(&c, &url).await;
        for (id, method) in [(2, "quick"), (3, "big")] {
            let resp = post(&c, &url, Some(&sid), request(id, method))
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 200);
            assert_eq!(
                resp.headers()["content-type"],
                "application/json",
                "{method}"
            );
            assert!(resp.headers().contains_key("content-length"), "{method}");
            let body: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
            assert_eq!(body["id"], id, "{method}");
        }
        // Progress first: the stream, primed, then the response.
        let resp = post(&c, &url, Some(&sid), request(4, "with_progress"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        let evs = events(&resp.bytes().await.unwrap());
        assert_eq!(evs.len(), 3, "{evs:?}");
        assert!(
            evs[0].1.is_empty() && evs[0].0.is_some(),
            "priming first: {evs:?}"
        );
        assert!(evs[1].1.contains("notifications/progress"), "{evs:?}");
        assert!(evs[2].1.contains("\"done\""), "{evs:?}");
        // Only SSE accepted: SSE.
        let resp = c
            .post(&url)
            .header("accept", "text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", "2025-11-25")
            .body(request(5, "quick"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        assert_eq!(messages(&resp.bytes().await.unwrap())[0]["id"], 5);
    })
    .await
}

#[tokio::test]
async fn notifications_get_202_and_no_body() {
    bounded(async {
        let (server, _closed) = start(HttpServerConfig::default()).await;
        let url = server.url();
        let c = client();
        let sid = open_session(&c, &url).await;
        let body = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
        let resp = post(&c, &url, Some(&sid), body).send().await.unwrap();
        assert_eq!(resp.status(), 202);
        assert!(resp.bytes().await.unwrap().is_empty());
    })
    .await
}

#[tokio::test]
async fn session_header_rules_400_404_and_delete() {
    bounded(async {
        let (server, mut closed) = start(HttpServerConfig::default()).await;
        let url = server.url();
        let c = client();
        let sid = open_session(&c, &url).await;
        // Missing session id on a non-initialize request: 400.
        let resp = post(&c, &url, None, request(2, "ping"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400);
        // Unknown session: 404.
        let resp = post(&c, &url, Some("no-such-session"), request(2, "ping"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 404);
        // The real one works.
        let resp = post(&c, &url, Some(&sid), request(3, "ping"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(
            messages(&resp.bytes().await.unwrap())[0]["result"]["echo"],
            "ping"
        );
        // DELETE ends it: the library sees Closed, later requests get 404.
        let resp = c
            .delete(&url)
            .header("mcp-session-id", &sid)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert!(matches!(
            closed.recv().await,
            Some(CloseReason::SessionDeleted)
        ));
        let resp = post(&c, &url, Some(&sid), request(4, "ping"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 404);
        assert_eq!(server.session_count(), 0);
    })
    .await
}

#[tokio::test]
async fn header_checks_406_403_400() {
    bounded(async {
        let (server, _closed) = start(HttpServerConfig::default()).await;
        let url = server.url();
        let c = client();
        let sid = open_session(&c, &url).await;
        // Accept allowing neither JSON nor SSE: 406.
        let resp = c
            .post(&url)
            .header("accept", "text/html, application/json;q=0")
            .header("content-type", "application/json")
            .header("mcp-session-id", &sid)
            .body(request(2, "ping"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 406);
        // A foreign Origin: 403.
        let resp = post(&c, &url, Some(&sid), request(2, "ping"))
            .header("origin", "http://evil.example")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 403);
        // A local Origin is fine.
        let origin = format!("http://localhost:{}", server.local_addr().port());
        let resp = post(&c, &url, Some(&sid), request(3, "ping"))
            .header("origin", origin)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        resp.bytes().await.unwrap();
        // A foreign Host (DNS rebinding): 403.
        let resp = post(&c, &url, Some(&sid), request(4, "ping"))
            .header(
                "host",
                format!("evil.example:{}", server.local_addr().port()),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 403);
        // An unsupported MCP-Protocol-Version: 400.
        let resp = c
            .post(&url)
            .header("accept", ACCEPT_BOTH)
            .header("content-type", "application/json")
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", "1999-01-01")
            .body(request(5, "ping"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400);
        // GET without text/event-stream: 406.
        let resp = c
            .get(&url)
            .header("accept", "application/json")
            .header("mcp-session-id", &sid)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 406);
        // Another method: 405.
        let resp = c.put(&url).send().await.unwrap();
        assert_eq!(resp.status(), 405);
    })
    .await
}

/// A server whose `max_body_bytes` is `max`, a client and an open session on it.
async fn limited_session(max: usize) -> (HttpServer, reqwest::Client, String) {
    let mut config = HttpServerConfig::default();
    config.max_body_bytes = max;
    let (server, _closed) = start(config).await;
    let c = client();
    let sid = open_session(&c, &server.url()).await;
    (server, c, sid)
}

/// A `ping` whose params hold `pad` bytes of padding.
fn padded_ping(pad: usize) -> String {
    json!({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"pad": "x".repeat(pad)}})
        .to_string()
}

#[tokio::test]
async fn a_body_over_the_limit_gets_413() {
    bounded(async {
        let (server, c, sid) = limited_session(1024).await;
        let url = server.url();
        let big = padded_ping(4096);
        let resp = post(&c, &url, Some(&sid), big).send().await.unwrap();
        assert_eq!(resp.status(), 413);
    })
    .await
}

/// The status of the reply to a POST of `head` (request line and headers, each
/// line ending in CRLF, without the empty line) and then `body` as it is, over a
/// raw socket; the whole body is written before the reply is read unless
/// `wait_first`, which reads the reply first (a client waiting for `100 Continue`).
/// An error when the server resets the connection first.
async fn raw_post(url: &str, head: String, body: &[u8], wait_first: bool) -> std::io::Result<u16> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let authority = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let mut s = tokio::net::TcpStream::connect(&authority).await?;
    s.write_all(format!("{head}Host: {authority}\r\n\r\n").as_bytes())
        .await?;
    if !wait_first {
        s.write_all(body).await?;
    }
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    while !reply.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = s.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        reply.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&reply);
    text.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status line in {text:?}")))
}

/// `body` in `Transfer-Encoding: chunked` form, 64 KiB chunks.
fn chunked(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for chunk in body.chunks(64 << 10) {
        out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        out.extend_from_slice(chunk);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// A body far over the limit (more than the sockets buffer) still gets its 413,
/// not a reset connection that the client sees as "broken pipe": the server reads
/// and discards the rest of the body (bounded) before it answers. Both with a
/// declared Content-Length and with a chunked body, and the session goes on. A
/// client that waits for `100 Continue` gets the 413 at once instead (nothing is
/// read, so it is not told to send the body).
#[tokio::test]
async fn a_body_far_over_the_limit_gets_413_not_a_reset() {
    bounded(async {
        let (server, c, sid) = limited_session(1024).await;
        let url = server.url();
        let big = padded_ping(8 << 20);
        for round in 0..3 {
            let resp = post(&c, &url, Some(&sid), big.clone())
                .send()
                .await
                .unwrap_or_else(|e| panic!("round {round}, declared length: {e:?}"));
            assert_eq!(resp.status(), 413);
            let body = resp.text().await.unwrap();
            assert!(body.contains("1024"), "names the limit: {body}");
            let head = |extra: &str| {
                format!(
                    "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\n\
                     Accept: application/json, text/event-stream\r\nMcp-Session-Id: {sid}\r\n\
                     MCP-Protocol-Version: 2025-11-25\r\n{extra}"
                )
            };
            let status = raw_post(
                &url,
                head("Transfer-Encoding: chunked\r\n"),
                &chunked(big.as_bytes()),
                false,
            )
            .await
            .unwrap_or_else(|e| panic!("round {round}, chunked: {e:?}"));
            assert_eq!(status, 413);
            let expect = format!("Content-Length: {}\r\nExpect: 100-continue\r\n", big.len());
            let status = raw_post(&url, head(&expect), big.as_bytes(), true)
                .await
                .unwrap_or_else(|e| panic!("round {round}, 100-continue: {e:?}"));
            assert_eq!(status, 413, "the 413 first, not 100 Continue");
        }
        let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}).to_string();
        let resp = post(&c, &url, Some(&sid), ping).send().await.unwrap();
        assert_eq!(resp.status(), 200, "the session goes on");
    })
    .await
}

#[tokio::test]
async fn bad_json_gets_400_with_a_parse_error() {
    bounded(async {
        let (server, _closed) = start(HttpServerConfig::default()).await;
        let url = server.url();
        let c = client();
        let sid = open_session(&c, &url).await;
        let resp = post(&c, &url, Some(&sid), "{not json".to_owned())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400);
        let body: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
        assert_eq!(body["error"]["code"], -32700);
        assert!(body["id"].is_null() && body.get("id").is_some(), "{body}");
    })
    .await
}

#[tokio::test]
async fn max_sessions_gives_503() {
    bounded(async {
        let mut config = HttpServerConfig::default();
        config.max_sessions = 2;
        let (server, _closed) = start(config).await;
        let url = server.url();
        let c = client();
        // Two sessions, each busy with a call (none idle: none is evicted).
        let mut held = Vec::new();
        for _ in 0..2 {
            let sid = open_session(&c, &url).await;
            // Sent back once the head is out, after the call was delivered.
            let call = post(&c, &url, Some(&sid), request(2, "hold"))
                .send()
                .await
                .unwrap();
            assert_eq!(call.status(), 200);
            held.push(call);
        }
        let resp = post(&c, &url, None, initialize(7)).send().await.unwrap();
        assert_eq!(resp.status(), 503);
        assert_eq!(server.evicted_sessions(), 0);
        // The answer to that initialize, under its id, naming the limit.
        let body: serde_json::Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
        assert_eq!(body["id"], 7, "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("limit of 2 live sessions"),
            "{body}"
        );
    })
    .await
}

/// After `refuse_new_sessions` (a drain): a new session of either kind gets
/// 503 with a JSON-RPC error, while a live session is served as before.
#[tokio::test]
async fn refused_new_sessions_get_503_and_live_ones_go_on() {
    bounded(async {
        let (server, _closed) = start(HttpServerConfig::default()).await;
        let url = server.url();
        let c = client();
        let sid = open_session(&c, &url).await;
        server.refuse_new_sessions();
        let resp = post(&c, &url, None, initialize(1)).send().await.unwrap();
        assert_eq!(resp.status(), 503);
        let body: serde_json::Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
        assert_eq!(body["error"]["code"], -32000, "{body}");
        assert!(body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("shutting down"));
        let sse = format!("http://{}/sse", server.local_addr());
        let legacy = c
            .get(&sse)
            .header("accept", "text/event-stream")
            .send()
            .await
            .unwrap();
        assert_eq!(legacy.status(), 503);
        let resp = post(&c, &url, Some(&sid), request(2, "echo"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let msgs = messages(&resp.bytes().await.unwrap());
        assert_eq!(msgs[0]["id"], 2, "{msgs:?}");
        assert_eq!(server.session_count(), 1);
    })
    .await
}

/// A POST whose body is gzip-coded gets 415 with `Accept-Encoding: identity`,
/// not a -32700 for bytes that were never JSON; the session goes on.
#[tokio::test]
async fn a_coded_body_gets_415_and_the_session_goes_on() {
    bounded(async {
        let (server, _closed) = start(HttpServerConfig::default()).await;
        let url = server.url();
        let c = client();
        let sid = open_session(&c, &url).await;
        let resp = post(&c, &url, Some(&sid), request(2, "echo"))
            .header("content-encoding", "gzip")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 415);
        assert_eq!(resp.headers()["accept-encoding"], "identity");
        let resp = post(&c, &url, Some(&sid), request(3, "echo"))
            .header("content-encoding", "identity")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let msgs = messages(&resp.bytes().await.unwrap());
        assert_eq!(msgs[0]["id"], 3, "{msgs:?}");
    })
    .await
}

#[tokio::test]
async fn the_get_stream_receives_unrelated_server_messages_and_resumes() {
    bounded(async {
        let (server, _closed) = start(HttpServerConfig::default()).await;
        let url = server.url();
        let c = client();
        let sid = open_session(&c, &url).await;
        let mut first = get(&c, &url, &sid).send().await.unwrap();
        assert_eq!(first.status(), 200);
        assert_eq!(first.headers()["content-type"], "text/event-stream");
        // A second standalone stream at once takes it over: the first one's
        // body ends.
        let mut stream = get(&c, &url, &sid).send().await.unwrap();
        assert_eq!(stream.status(), 200);
        while first.chunk().await.unwrap().is_some() {}
        let resp = post(&c, &url, Some(&sid), request(2, "notify_unrelated"))
            .send()
            .await
            .unwrap();
        let msgs = messages(&resp.bytes().await.unwrap());
        assert_eq!(
            msgs.len(),
            1,
            "only the response on the POST stream: {msgs:?}"
        );
        assert_eq!(msgs[0]["id"], 2);
        let got = read_messages(&mut stream, 1).await;
        assert_eq!(got[0].1["method"], "notifications/message");
        let first_id = got[0].0.clone().expect("events carry ids");
        drop(stream);
        // With no GET open, the next one is buffered...
        let resp = post(&c, &url, Some(&sid), request(3, "notify_unrelated"))
            .send()
            .await
            .unwrap();
        resp.bytes().await.unwrap();
        // ...and replayed on resumption after the last event seen (the old
        // connection, closed or not yet seen closed, is taken over).
        let mut resumed = get(&c, &url, &sid)
            .header("last-event-id", &first_id)
            .send()
            .await
            .unwrap();
        assert_eq!(resumed.status(), 200);
        let got = read_messages(&mut resumed, 1).await;
        assert_eq!(got[0].1["method"], "notifications/message");
        assert_ne!(got[0].0.as_deref(), Some(first_id.as_str()));
    })
    .await
}

#[tokio::test]
async fn json_response_mode_answers_with_application_json() {
    bounded(async {
        let mut config = HttpServerConfig::default();
        config.json_response = true;
        let (server, _closed) = start(config).await;
        let url = server.url();
        let c = client();
        let resp = post(&c, &url, None, initialize(1)).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], "application/json");
        let sid = resp.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let body: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
        assert_eq!(body["id"], 1);
        let resp = post(&c, &url, Some(&sid), request(2, "with_progress"))
            .send()
            .await
            .unwrap();
        let body: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
        assert_eq!(body["result"]["done"], true);
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_concurrent_sessions_each_get_their_own_answers() {
    bounded(async {
        let (server, _closed) = start(HttpServerConfig::default()).await;
        let url = server.url();
        let mut tasks = Vec::new();
        for n in 0..20u64 {
            let url = url.clone();
            tasks.push(tokio::spawn(async move {
                let c = client();
                let sid = open_session(&c, &url).await;
                for k in 0..5u64 {
                    let id = 100 + k;
                    let method = format!("m{n}");
                    let resp = post(&c, &url, Some(&sid), request(id, &method))
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(resp.status(), 200);
                    let msgs = messages(&resp.bytes().await.unwrap());
                    assert_eq!(msgs.len(), 1, "{msgs:?}");
                    assert_eq!(msgs[0]["id"], id);
                    assert_eq!(msgs[0]["result"]["echo"], method);
                    assert_eq!(msgs[0]["result"]["params"]["n"], id);
                }
                sid
            }));
        }
        let mut ids = std::collections::HashSet::new();
        for t in tasks {
            ids.insert(t.await.unwrap());
        }
        assert_eq!(ids.len(), 20);
        assert_eq!(server.session_count(), 20);
    })
    .await
}

#[tokio::test]
async fn dropping_the_server_closes_every_session() {
    bounded(async {
        let (server, mut closed) = start(HttpServerConfig::default()).await;
        let url = server.url();
        let c = client();
        open_session(&c, &url).await;
        drop(server);
        assert!(matches!(
            closed.recv().await,
            Some(CloseReason::SessionClosed)
        ));
    })
    .await
}

/// A session with no open response and no request for the idle timeout ends:
/// the library gets [`CloseReason::SessionExpired`], the client 404. A session
/// whose GET stream is open does not expire.
#[tokio::test]
async fn an_idle_session_expires_and_an_open_stream_keeps_one_alive() {
    bounded(async {
        let mut config = HttpServerConfig::default();
        config.session_idle_timeout = Some(Duration::from_millis(400));
        let (server, mut closed) = start(config).await;
        let url = server.url();
        let c = client();
        let listening = open_session(&c, &url).await;
        let get = c
            .get(&url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &listening)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await
            .unwrap();
        assert_eq!(get.status(), 200);
        let idle = open_session(&c, &url).await;
        assert!(matches!(
            closed.recv().await,
            Some(CloseReason::SessionExpired)
        ));
        let resp = post(&c, &url, Some(&idle), request(2, "ping"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 404);
        // Well past the timeout, the listening session still answers.
        tokio::time::sleep(Duration::from_millis(800)).await;
        let resp = post(&c, &url, Some(&listening), request(3, "ping"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(
            messages(&resp.bytes().await.unwrap())[0]["result"]["echo"],
            "ping"
        );
        assert_eq!(server.session_count(), 1);
    })
    .await
}

/// Opens a session whose library side the test drives by hand: answers its
/// `initialize` and returns the session id and the session's transport halves.
async fn open_raw_session(
    c: &reqwest::Client,
    url: &str,
    acceptor: &mut SessionAcceptor,
) -> (
    String,
    switchboard_transport::Sender,
    switchboard_transport::Receiver,
) {
    open_raw_session_at(c, url, acceptor, "2025-11-25").await
}

/// [`open_raw_session`], its `initialize` answered with revision `agreed`.
async fn open_raw_session_at(
    c: &reqwest::Client,
    url: &str,
    acceptor: &mut SessionAcceptor,
    agreed: &str,
) -> (
    String,
    switchboard_transport::Sender,
    switchboard_transport::Receiver,
) {
    let opening = tokio::spawn({
        let c = c.clone();
        let url = url.to_owned();
        async move { post(&c, &url, None, initialize(1)).send().await.unwrap() }
    });
    let session = acceptor.accept().await.unwrap();
    let (tx, mut rx) = session.transport.split();
    let Some(Inbound::Message(Message::Request(init))) = rx.recv().await else {
        panic!("initialize first")
    };
    let result = json!({"protocolVersion": agreed, "capabilities": {},
        "serverInfo": {"name": "t", "version": "0"}});
    tx.send(Message::Response(Response::new(init.id, &result).unwrap()))
        .await
        .unwrap();
    let sid = opening.await.unwrap().headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    (sid, tx, rx)
}

/// When the library drops every clone of a session's `Sender`, the session
/// ends: its open stream closes and later requests get 404.
#[tokio::test]
async fn dropping_the_sender_ends_the_session() {
    bounded(async {
        let (server, mut acceptor) = HttpServer::bind(HttpServerConfig::default()).await.unwrap();
        let url = server.url();
        let c = client();
        let (sid, tx, rx) = open_raw_session(&c, &url, &mut acceptor).await;
        let mut held = post(&c, &url, Some(&sid), request(2, "never answered"))
            .send()
            .await
            .unwrap();
        assert_eq!(held.status(), 200);
        let clone = tx.clone();
        drop(tx);
        assert!(!clone.is_closed(), "a clone keeps the session");
        drop(clone);
        // The held call's stream ends without a response.
        let mut rest = Vec::new();
        while let Some(chunk) = held.chunk().await.unwrap() {
            rest.extend_from_slice(&chunk);
        }
        assert!(messages(&rest).is_empty(), "{rest:?}");
        let resp = post(&c, &url, Some(&sid), request(3, "ping"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 404);
        drop(rx);
    })
    .await
}

/// Messages sent on one stream from many tasks at once arrive with event ids in
/// increasing order, each exactly once, and the response last.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_senders_keep_a_streams_event_order() {
    bounded(async {
        let (server, mut acceptor) = HttpServer::bind(HttpServerConfig::default()).await.unwrap();
        let url = server.url();
        let c = client();
        let (sid, tx, mut rx) = open_raw_session(&c, &url, &mut acceptor).await;
        let call = tokio::spawn({
            let c = c.clone();
            let url = url.clone();
            async move {
                let resp = post(&c, &url, Some(&sid), request(2, "busy"))
                    .send()
                    .await
                    .unwrap();
                resp.bytes().await.unwrap()
            }
        });
        let Some(Inbound::Message(Message::Request(busy))) = rx.recv().await else {
            panic!("the call")
        };
        // 8 tasks x 50 progress notifications, related to the call, at once.
        let mut tasks = Vec::new();
        for t in 0..8 {
            let tx = tx.clone();
            let id = busy.id.clone();
            tasks.push(tokio::spawn(async move {
                for k in 0..50 {
                    let note = Notification::new(
                        "notifications/progress",
                        &json!({"progressToken": t, "progress": k}),
                    )
                    .unwrap();
                    tx.send_related(Message::Notification(note), Some(id.clone()))
                        .await
                        .unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        tx.send(Message::Response(
            Response::new(busy.id, &json!({})).unwrap(),
        ))
        .await
        .unwrap();
        let body = call.await.unwrap();
        let evs = events(&body);
        let data: Vec<_> = evs.iter().filter(|e| !e.1.is_empty()).collect();
        assert_eq!(data.len(), 401, "every notification and the response");
        let seqs: Vec<u64> = evs
            .iter()
            .map(|e| {
                e.0.as_deref()
                    .unwrap()
                    .rsplit('-')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect();
        assert!(
            seqs.windows(2).all(|w| w[0] < w[1]),
            "ids in order: {seqs:?}"
        );
        let last: Value = serde_json::from_str(&data[400].1).unwrap();
        assert_eq!(last["id"], 2);
        // Each task's notifications in its own order.
        for t in 0..8 {
            let ks: Vec<i64> = data[..400]
                .iter()
                .map(|e| serde_json::from_str::<Value>(&e.1).unwrap())
                .filter(|v| v["params"]["progressToken"] == t)
                .map(|v| v["params"]["progress"].as_i64().unwrap())
                .collect();
            assert_eq!(ks, (0..50).collect::<Vec<_>>());
        }
        drop(rx);
    })
    .await
}

/// A request the library says it will not answer (cancelled) ends its POST's
/// stream (SSE: the priming event and nothing else; JSON replies: 202 with no
/// body), and the session goes on.
#[tokio::test]
async fn a_forgotten_request_ends_its_stream() {
    bounded(async {
        let (server, _closed) = start(HttpServerConfig::default()).await;
        let url = server.url();
        let c = client();
        let sid = open_session(&c, &url).await;
        let resp = post(&c, &url, Some(&sid), request(2, "forgotten"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let evs = events(&resp.bytes().await.unwrap());
        assert_eq!(evs.len(), 1, "only the priming event: {evs:?}");
        assert!(evs[0].1.is_empty());
        let resp = post(&c, &url, Some(&sid), request(3, "ping"))
            .send()
            .await
            .unwrap();
        assert_eq!(messages(&resp.bytes().await.unwrap())[0]["id"], 3);

        let mut config = HttpServerConfig::default();
        config.json_response = true;
        let (json_server, _closed) = start(config).await;
        let url = json_server.url();
        let init = post(&c, &url, None, initialize(1)).send().await.unwrap();
        let sid = init.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let resp = post(&c, &url, Some(&sid), request(2, "forgotten"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 202);
        assert!(resp.bytes().await.unwrap().is_empty());
        let resp = post(&c, &url, Some(&sid), request(3, "ping"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
    })
    .await
}

/// SEP-1699 polling (2025-11-25): the server closes a POST's SSE connection
/// mid-call (after the priming event, which carries `retry` when configured);
/// what is sent for the request afterwards waits in the stream's buffer and
/// reaches the client that reconnects with GET and `Last-Event-ID`. Closing
/// again with no connection open, or for an unknown id, does nothing.
#[tokio::test]
async fn a_closed_stream_resumes_with_last_event_id() {
    bounded(async {
        let mut config = HttpServerConfig::default();
        config.sse_retry = Some(Duration::from_millis(250));
        let (server, mut acceptor) = HttpServer::bind(config).await.unwrap();
        let url = server.url();
        let c = client();
        let (sid, tx, mut rx) = open_raw_session(&c, &url, &mut acceptor).await;
        let (held, call) = held_call(&c, &url, &sid, "2025-11-25", &mut rx).await;
        assert!(tx.close_stream(&call.id), "the POST's connection was open");
        assert!(!tx.close_stream(&call.id), "nothing left to close");
        assert!(!tx.close_stream(&Id::from(99)));
        // The POST's body ends with the priming event alone, which says how long to wait.
        let body = held.bytes().await.unwrap();
        let text = String::from_utf8_lossy(&body).into_owned();
        assert!(text.contains("retry: 250\n"), "{text}");
        let evs = events(&body);
        assert_eq!(evs.len(), 1, "{evs:?}");
        let last = evs[0].0.clone().expect("the priming event has an id");
        // Sent while nobody is connected: progress, then the response.
        let progress = Notification::new(
            "notifications/progress",
            &json!({"progressToken": 1, "progress": 1}),
        )
        .unwrap();
        tx.send_related(Message::Notification(progress), Some(call.id.clone()))
            .await
            .unwrap();
        tx.send(Message::Response(
            Response::new(call.id.clone(), &json!({"done": true})).unwrap(),
        ))
        .await
        .unwrap();
        let resumed = get_stream(&c, &url, &sid, Some(&last))
            .send()
            .await
            .unwrap();
        assert_eq!(resumed.status(), 200);
        let got = messages(&resumed.bytes().await.unwrap());
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0]["method"], "notifications/progress");
        assert_eq!(got[1]["id"], 2);
        assert_eq!(got[1]["result"]["done"], true);
        // The session goes on.
        let resp = post(&c, &url, Some(&sid), request(3, "ping"))
            .send()
            .await
            .unwrap();
        let Some(Inbound::Message(Message::Request(ping))) = rx.recv().await else {
            panic!("the ping")
        };
        tx.send(Message::Response(
            Response::new(ping.id, &json!({})).unwrap(),
        ))
        .await
        .unwrap();
        assert_eq!(messages(&resp.bytes().await.unwrap())[0]["id"], 3);
    })
    .await
}

/// A priming event opens a POST's stream when the session's `initialize`
/// agreed on 2025-11-25 or later, or a request of it named one (the client has
/// shown it knows them), whatever later requests name; a session that agreed on
/// 2025-06-18 and whose requests only ever named 2025-03-26 gets none.
#[tokio::test]
async fn priming_follows_what_the_session_has_shown() {
    bounded(async {
        // SSE replies only: what is primed when.
        let mut config = HttpServerConfig::default();
        config.json_reply_within = Duration::ZERO;
        let (server, mut acceptor) = HttpServer::bind(config).await.unwrap();
        let url = server.url();
        let c = client();
        let first_is_priming = |body: &[u8]| events(body).first().is_some_and(|e| e.1.is_empty());
        for (agreed, primed) in [("2025-06-18", false), ("2025-11-25", true)] {
            let (sid, tx, mut rx) = open_raw_session_at(&c, &url, &mut acceptor, agreed).await;
            // Answers every request of the session with `{}`.
            tokio::spawn(async move {
                while let Some(event) = rx.recv().await {
                    if let Inbound::Message(Message::Request(r)) = event {
                        let _ = tx
                            .send(Message::Response(Response::new(r.id, &json!({})).unwrap()))
                            .await;
                    }
                }
            });
            let old = |id: u64| post_as(&c, &url, &sid, "2025-03-26", request(id, "ping"));
            // Only 2025-03-26 named so far (initialize carried no header).
            let body = old(2).send().await.unwrap().bytes().await.unwrap();
            assert_eq!(
                first_is_priming(&body),
                primed,
                "{agreed}: {}",
                String::from_utf8_lossy(&body)
            );
            assert_eq!(messages(&body)[0]["id"], 2);
            if agreed == "2025-11-25" {
                // A 2025-11-25 request gets one too, and so does a 2025-03-26 one after it.
                let body = post(&c, &url, Some(&sid), request(3, "ping"))
                    .send()
                    .await
                    .unwrap()
                    .bytes()
                    .await
                    .unwrap();
                assert!(first_is_priming(&body));
                let body = old(4).send().await.unwrap().bytes().await.unwrap();
                assert!(
                    first_is_priming(&body),
                    "{}",
                    String::from_utf8_lossy(&body)
                );
                assert_eq!(messages(&body)[0]["id"], 4);
            }
        }
    })
    .await
}

/// A POST with the given `MCP-Protocol-Version`.
fn post_as(
    c: &reqwest::Client,
    url: &str,
    sid: &str,
    version: &str,
    body: String,
) -> reqwest::RequestBuilder {
    c.post(url)
        .header("accept", ACCEPT_BOTH)
        .header("content-type", "application/json")
        .header("mcp-session-id", sid)
        .header("mcp-protocol-version", version)
        .body(body)
}

/// POSTs request 2 (`slow`) with `MCP-Protocol-Version: version` and takes it
/// from the session's receiver; the POST's response is still open.
async fn held_call(
    c: &reqwest::Client,
    url: &str,
    sid: &str,
    version: &str,
    rx: &mut switchboard_transport::Receiver,
) -> (reqwest::Response, switchboard_protocol::jsonrpc::Request) {
    let held = post_as(c, url, sid, version, request(2, "slow"))
        .send()
        .await
        .unwrap();
    let Some(Inbound::Message(Message::Request(call))) = rx.recv().await else {
        panic!("the request first")
    };
    (held, call)
}

/// A GET on the session's endpoint, resuming after `last` when given.
fn get_stream(
    c: &reqwest::Client,
    url: &str,
    sid: &str,
    last: Option<&str>,
) -> reqwest::RequestBuilder {
    let b = c
        .get(url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", sid)
        .header("mcp-protocol-version", "2025-11-25");
    match last {
        Some(l) => b.header("last-event-id", l),
        None => b,
    }
}

/// Closing is refused when the client holds no id to come back with: a session
/// that agreed on 2025-06-18 and never named 2025-11-25 gets no priming event,
/// so its stream stays open and the response arrives on it.
#[tokio::test]
async fn an_old_clients_stream_is_not_closed() {
    bounded(async {
        let (server, mut acceptor) = HttpServer::bind(HttpServerConfig::default()).await.unwrap();
        let url = server.url();
        let c = client();
        let (sid, tx, mut rx) = open_raw_session_at(&c, &url, &mut acceptor, "2025-06-18").await;
        let (held, call) = held_call(&c, &url, &sid, "2025-06-18", &mut rx).await;
        assert!(
            !tx.close_stream(&call.id),
            "no priming event: nothing to resume from"
        );
        tx.send(Message::Response(
            Response::new(call.id, &json!({"ok": 1})).unwrap(),
        ))
        .await
        .unwrap();
        let got = messages(&held.bytes().await.unwrap());
        assert_eq!(got.len(), 1);
        assert_eq!(got[0]["result"]["ok"], 1);
    })
    .await
}

/// A stream closed again right after a resumption that had nothing to replay
/// still leaves the client an id: the resumed connection starts with a priming
/// event of a fresh id, and every event id of the session stays unique.
#[tokio::test]
async fn a_stream_closed_twice_resumes_twice() {
    bounded(async {
        let mut config = HttpServerConfig::default();
        config.sse_retry = Some(Duration::from_millis(100));
        let (server, mut acceptor) = HttpServer::bind(config).await.unwrap();
        let url = server.url();
        let c = client();
        let (sid, tx, mut rx) = open_raw_session(&c, &url, &mut acceptor).await;
        let (held, call) = held_call(&c, &url, &sid, "2025-11-25", &mut rx).await;
        let mut ids = Vec::new();
        assert!(tx.close_stream(&call.id));
        let evs = events(&held.bytes().await.unwrap());
        let mut last = evs[0].0.clone().unwrap();
        ids.push(last.clone());
        for round in 0..2 {
            let resumed = get_stream(&c, &url, &sid, Some(&last))
                .send()
                .await
                .unwrap();
            assert_eq!(resumed.status(), 200);
            // Wait until the resumed connection is attached, then close it again.
            let mut resumed = resumed;
            let first = resumed.chunk().await.unwrap().expect("the priming event");
            let text = String::from_utf8_lossy(&first).into_owned();
            assert!(text.contains("retry: 100\n"), "round {round}: {text}");
            assert!(tx.close_stream(&call.id), "round {round}");
            let mut body = first.to_vec();
            while let Some(more) = resumed.chunk().await.unwrap() {
                body.extend_from_slice(&more);
            }
            let evs = events(&body);
            assert_eq!(evs.len(), 1, "round {round}: only a priming event: {evs:?}");
            assert!(evs[0].1.is_empty());
            last = evs[0].0.clone().unwrap();
            ids.push(last.clone());
        }
        tx.send(Message::Response(
            Response::new(call.id, &json!({"done": 1})).unwrap(),
        ))
        .await
        .unwrap();
        let body = get_stream(&c, &url, &sid, Some(&last))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let evs = events(&body);
        assert_eq!(evs.len(), 1, "the response alone: {evs:?}");
        assert_eq!(messages(&body)[0]["result"]["done"], 1);
        ids.push(evs[0].0.clone().unwrap());
        let unique: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len(), "ids repeat: {ids:?}");
    })
    .await
}

/// Reopening the standalone stream primes it with a fresh id, never the id of
/// a message already delivered; an unreadable `Last-Event-ID` is a 400, not a
/// request for the standalone stream.
#[tokio::test]
async fn standalone_ids_stay_unique_and_a_bad_last_event_id_is_refused() {
    bounded(async {
        let (server, mut acceptor) = HttpServer::bind(HttpServerConfig::default()).await.unwrap();
        let url = server.url();
        let c = client();
        let (sid, tx, _rx) = open_raw_session(&c, &url, &mut acceptor).await;
        let mut ids = Vec::new();
        let mut first = get_stream(&c, &url, &sid, None).send().await.unwrap();
        let priming = first.chunk().await.unwrap().expect("the priming event");
        let note = Notification::new("notifications/tools/list_changed", &json!({})).unwrap();
        tx.send(Message::Notification(note)).await.unwrap();
        let mut body = priming.to_vec();
        while !events(&body).iter().any(|e| !e.1.is_empty()) {
            body.extend_from_slice(&first.chunk().await.unwrap().expect("the notification"));
        }
        ids.extend(events(&body).into_iter().map(|e| e.0.unwrap()));
        drop(first);
        // Whether or not the server has noticed the closed connection yet, a
        // new GET takes the stream over.
        let mut second = get_stream(&c, &url, &sid, None).send().await.unwrap();
        assert_eq!(second.status(), 200);
        let note = Notification::new("notifications/tools/list_changed", &json!({})).unwrap();
        tx.send(Message::Notification(note)).await.unwrap();
        let chunk = second.chunk().await.unwrap().expect("an event");
        ids.extend(events(&chunk).into_iter().map(|e| e.0.unwrap()));
        let unique: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len(), "ids repeat: {ids:?}");

        let bad = get_stream(&c, &url, &sid, None)
            .header(
                "last-event-id",
                reqwest::header::HeaderValue::from_bytes("\u{ff12}-0".as_bytes()).unwrap(),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(bad.status(), 400);
    })
    .await
}

/// Opens a session whose library side the test drives by hand, as
/// [`open_raw_session`] does: the `initialize` body asks for `requested` (the POST
/// names `header` in `MCP-Protocol-Version` when given; none by default), and the
/// library answers with `answered` after `delay`. Returns the session id, the
/// `initialize` reply's whole SSE body and the session's transport halves.
async fn initialize_as(
    c: &reqwest::Client,
    url: &str,
    acceptor: &mut SessionAcceptor,
    requested: &str,
    header: Option<&str>,
    answered: &str,
    delay: Duration,
) -> (
    String,
    Vec<u8>,
    switchboard_transport::Sender,
    switchboard_transport::Receiver,
) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": requested, "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}})
    .to_string();
    let mut builder = c
        .post(url)
        .header("accept", ACCEPT_BOTH)
        .header("content-type", "application/json")
        .body(body);
    if let Some(h) = header {
        builder = builder.header("mcp-protocol-version", h);
    }
    let opening = tokio::spawn(async move {
        let resp = builder.send().await.unwrap();
        assert_eq!(resp.status(), 200);
        let sid = resp.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        (sid, resp.bytes().await.unwrap().to_vec())
    });
    let session = acceptor.accept().await.unwrap();
    let (tx, mut rx) = session.transport.split();
    let Some(Inbound::Message(Message::Request(init))) = rx.recv().await else {
        panic!("initialize first")
    };
    tokio::time::sleep(delay).await;
    let result = json!({"protocolVersion": answered, "capabilities": {},
        "serverInfo": {"name": "t", "version": "0"}});
    tx.send(Message::Response(Response::new(init.id, &result).unwrap()))
        .await
        .unwrap();
    let (sid, body) = opening.await.unwrap();
    (sid, body, tx, rx)
}

/// The SSE reply to the `initialize` that opens a session is primed according to
/// the revision the session negotiated (the one the library answers with), not
/// the POST's `MCP-Protocol-Version` (absent on an `initialize`, so 2025-03-26):
/// 2025-11-25 gets a priming event (an id, empty data) before the
/// `InitializeResult`, also when the answer takes longer than the first-event
/// wait; an older revision gets none, whatever the body asked for or the header
/// named, and neither do the later replies of such a session.
#[tokio::test]
async fn initialize_priming_follows_the_negotiated_revision() {
    bounded(async {
        let (server, mut acceptor) = HttpServer::bind(HttpServerConfig::default()).await.unwrap();
        let url = server.url();
        let c = client();
        let cases: [(&str, Option<&str>, &str, u64, bool); 6] = [
            ("2025-11-25", None, "2025-11-25", 0, true),
            // Slower than the first-event wait (2 ms).
            ("2025-11-25", None, "2025-11-25", 100, true),
            // An unknown revision asked for, 2025-11-25 answered.
            ("2099-01-01", None, "2025-11-25", 0, true),
            ("2025-06-18", None, "2025-06-18", 0, false),
            // A library that stops at 2025-06-18 answers a 2025-11-25 client.
            ("2025-11-25", None, "2025-06-18", 0, false),
            ("2025-03-26", Some("2025-11-25"), "2025-03-26", 0, false),
        ];
        for (requested, header, answered, delay, primed) in cases {
            let case = format!("{requested} / {header:?} -> {answered}, {delay} ms");
            let (sid, body, tx, mut rx) = initialize_as(
                &c,
                &url,
                &mut acceptor,
                requested,
                header,
                answered,
                Duration::from_millis(delay),
            )
            .await;
            let evs = events(&body);
            let text = String::from_utf8_lossy(&body).into_owned();
            if primed {
                assert_eq!(evs.len(), 2, "{case}: {text}");
                assert!(evs[0].0.is_some() && evs[0].1.is_empty(), "{case}: {text}");
            } else {
                assert_eq!(evs.len(), 1, "{case}: no priming event: {text}");
            }
            let answer: Value = serde_json::from_str(&evs.last().unwrap().1).unwrap();
            assert_eq!(answer["id"], 1, "{case}");
            assert_eq!(answer["result"]["protocolVersion"], answered, "{case}");
            // The next request, naming the negotiated revision as a client must.
            let next = post_as(&c, &url, &sid, answered, request(2, "ping"))
                .send()
                .await
                .unwrap();
            let Some(Inbound::Message(Message::Request(ping))) = rx.recv().await else {
                panic!("{case}: the ping")
            };
            tx.send(Message::Response(
                Response::new(ping.id, &json!({})).unwrap(),
            ))
            .await
            .unwrap();
            let body = next.bytes().await.unwrap();
            let evs = events(&body);
            assert_eq!(
                evs.first().is_some_and(|e| e.1.is_empty()),
                primed,
                "{case}: {}",
                String::from_utf8_lossy(&body)
            );
            assert_eq!(messages(&body)[0]["id"], 2, "{case}");
        }
    })
    .await
}

/// GETs with `Last-Event-ID: last` (a connection still reading that stream is
/// taken over).
async fn resume_at(c: &reqwest::Client, url: &str, sid: &str, last: &str) -> reqwest::Response {
    get_stream(c, url, sid, Some(last)).send().await.unwrap()
}

/// Asserts a 400 whose body is a JSON-RPC error without id (-32600).
async fn assert_refused(resp: reqwest::Response, what: &str) {
    assert_eq!(resp.status(), 400, "{what}");
    assert_eq!(resp.headers()["content-type"], "application/json", "{what}");
    let body: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
    assert_eq!(body["jsonrpc"], "2.0", "{what}: {body}");
    assert_eq!(body["id"], Value::Null, "{what}: {body}");
    assert_eq!(body["error"]["code"], -32600, "{what}: {body}");
}

/// A `Last-Event-ID` naming an event the server never sent on that stream (its
/// sequence number beyond the last event handed to the client, even one already
/// buffered; or a seq 0 the stream never had) is an id the client cannot hold:
/// 400 with a JSON-RPC error (-32600, no id), and nothing changes. The stream
/// keeps its events, a valid id then resumes exactly after the event it names,
/// and the session's other streams work on. Holds for a POST stream still open,
/// a finished one kept for replay, and the standalone stream.
#[tokio::test]
async fn a_last_event_id_never_sent_is_refused_and_changes_nothing() {
    bounded(async {
        let (server, mut acceptor) = HttpServer::bind(HttpServerConfig::default()).await.unwrap();
        let url = server.url();
        let c = client();
        let (sid, tx, mut rx) = open_raw_session(&c, &url, &mut acceptor).await;
        let progress = |n: u64| {
            Message::Notification(
                Notification::new(
                    "notifications/progress",
                    &json!({"progressToken": 1, "progress": n}),
                )
                .unwrap(),
            )
        };
        let refused = |last: String| {
            let request = get_stream(&c, &url, &sid, Some(&last));
            async move { assert_refused(request.send().await.unwrap(), &last).await }
        };

        // A POST stream still open: its connection closed after the priming
        // event (S-0), then two notifications buffered (S-1, S-2).
        let (held, call) = held_call(&c, &url, &sid, "2025-11-25", &mut rx).await;
        assert!(tx.close_stream(&call.id));
        let evs = events(&held.bytes().await.unwrap());
        let primed = evs[0].0.clone().expect("the priming event has an id");
        let stream = primed.strip_suffix("-0").expect("seq 0 primes").to_owned();
        let id = |seq: u64| format!("{stream}-{seq}");
        for n in 1..=2 {
            tx.send_related(progress(n), Some(call.id.clone()))
                .await
                .unwrap();
        }
        // Buffered but never sent, and beyond anything made.
        for seq in [1, 2, 3, 99] {
            refused(id(seq)).await;
        }
        // After S-0: S-1 and S-2; then the server closes the connection again.
        let mut resumed = resume_at(&c, &url, &sid, &primed).await;
        assert_eq!(resumed.status(), 200);
        let got = read_messages(&mut resumed, 2).await;
        let got_ids: Vec<_> = got.iter().map(|m| m.0.clone().unwrap()).collect();
        assert_eq!(got_ids, [id(1), id(2)]);
        assert!(tx.close_stream(&call.id));
        while resumed.chunk().await.unwrap().is_some() {}
        tx.send_related(progress(3), Some(call.id.clone()))
            .await
            .unwrap();
        refused(id(3)).await;
        // After S-1 (a valid id, though not the last one the client got):
        // exactly S-2 and S-3, then what comes live, the response last.
        let mut resumed = resume_at(&c, &url, &sid, &id(1)).await;
        assert_eq!(resumed.status(), 200);
        let got = read_messages(&mut resumed, 2).await;
        assert_eq!(got[0].0.as_deref(), Some(id(2).as_str()));
        assert_eq!(got[0].1["params"]["progress"], 2);
        assert_eq!(got[1].0.as_deref(), Some(id(3).as_str()));
        assert_eq!(got[1].1["params"]["progress"], 3);
        tx.send(Message::Response(
            Response::new(call.id.clone(), &json!({"done": 2})).unwrap(),
        ))
        .await
        .unwrap();
        let mut rest = Vec::new();
        while let Some(chunk) = resumed.chunk().await.unwrap() {
            rest.extend_from_slice(&chunk);
        }
        let evs = events(&rest);
        assert_eq!(evs.len(), 1, "the response alone: {evs:?}");
        assert_eq!(evs[0].0.as_deref(), Some(id(4).as_str()));
        assert_eq!(messages(&rest)[0]["result"]["done"], 2);

        // A finished POST stream kept for replay: its response (T-1) was sent
        // while nobody read it.
        let held = post_as(&c, &url, &sid, "2025-11-25", request(3, "slow"))
            .send()
            .await
            .unwrap();
        let Some(Inbound::Message(Message::Request(call))) = rx.recv().await else {
            panic!("the request first")
        };
        assert!(tx.close_stream(&call.id));
        let evs = events(&held.bytes().await.unwrap());
        let primed = evs[0].0.clone().expect("the priming event has an id");
        let stream = primed.strip_suffix("-0").expect("seq 0 primes").to_owned();
        tx.send(Message::Response(
            Response::new(call.id.clone(), &json!({"done": 3})).unwrap(),
        ))
        .await
        .unwrap();
        // Its response (T-1) was never sent, and T-2 was never made.
        for seq in [1, 2] {
            refused(format!("{stream}-{seq}")).await;
        }
        let body = resume_at(&c, &url, &sid, &primed)
            .await
            .bytes()
            .await
            .unwrap();
        let evs = events(&body);
        assert_eq!(evs.len(), 1, "the response alone: {evs:?}");
        assert_eq!(evs[0].0.as_deref(), Some(format!("{stream}-1").as_str()));
        assert_eq!(messages(&body)[0]["result"]["done"], 3);

        // The standalone stream, which has sent nothing yet: refused, and not
        // attached.
        // Its priming events take fresh seqs: 0-0 is never sent either.
        for last in ["0-7", "0-0"] {
            refused(last.to_owned()).await;
        }
        let mut standalone = get_stream(&c, &url, &sid, None).send().await.unwrap();
        assert_eq!(standalone.status(), 200);
        tx.send(progress(9)).await.unwrap();
        let got = read_messages(&mut standalone, 1).await;
        assert_eq!(got[0].1["params"]["progress"], 9);

        // The session goes on.
        let resp = post(&c, &url, Some(&sid), request(4, "ping"))
            .send()
            .await
            .unwrap();
        let Some(Inbound::Message(Message::Request(ping))) = rx.recv().await else {
            panic!("the ping")
        };
        tx.send(Message::Response(
            Response::new(ping.id, &json!({})).unwrap(),
        ))
        .await
        .unwrap();
        assert_eq!(messages(&resp.bytes().await.unwrap())[0]["id"], 4);
    })
    .await
}

/// The reply to the `initialize` that opens a session waits for its first
/// message to know whether to prime, but no longer: a message the library sends
/// before the answer reaches the client at once (it might need the client's
/// reply), and the reply is then unprimed.
#[tokio::test]
async fn an_initialize_reply_never_holds_back_a_message_sent_before_the_answer() {
    bounded(async {
        let (server, mut acceptor) = HttpServer::bind(HttpServerConfig::default()).await.unwrap();
        let url = server.url();
        let c = client();
        let opening = tokio::spawn(post(&c, &url, None, initialize(1)).send());
        let session = acceptor.accept().await.unwrap();
        let (tx, mut rx) = session.transport.split();
        let Some(Inbound::Message(Message::Request(init))) = rx.recv().await else {
            panic!("initialize first")
        };
        let note = Notification::new(
            "notifications/message",
            &json!({"level": "info", "data": "starting"}),
        )
        .unwrap();
        tx.send_related(Message::Notification(note), Some(init.id.clone()))
            .await
            .unwrap();
        let mut reply = opening.await.unwrap().unwrap();
        assert_eq!(reply.status(), 200);
        assert!(reply.headers().contains_key("mcp-session-id"));
        let first = reply.chunk().await.unwrap().expect("the notification");
        let evs = events(&first);
        assert_eq!(evs.len(), 1, "the notification alone, unprimed: {evs:?}");
        assert_eq!(messages(&first)[0]["method"], "notifications/message");
        let result = json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "serverInfo": {"name": "t", "version": "0"}});
        tx.send(Message::Response(Response::new(init.id, &result).unwrap()))
            .await
            .unwrap();
        let mut rest = Vec::new();
        while let Some(chunk) = reply.chunk().await.unwrap() {
            rest.extend_from_slice(&chunk);
        }
        let evs = events(&rest);
        assert_eq!(evs.len(), 1, "{evs:?}");
        assert_eq!(messages(&rest)[0]["id"], 1);
    })
    .await
}

/// An `initialize` answered with an error response establishes no session: the
/// reply carries the error but no `Mcp-Session-Id` (2025-03-26+, "Session
/// Management": the id comes with the `InitializeResult`), and the session ends
/// at once instead of waiting for idle expiry. In SSE and in JSON reply mode.
#[tokio::test]
async fn a_failed_initialize_hands_out_no_session() {
    bounded(async {
        for json_response in [false, true] {
            let mut config = HttpServerConfig::default();
            config.json_response = json_response;
            let (server, mut acceptor) = HttpServer::bind(config).await.unwrap();
            let url = server.url();
            let c = client();
            let reply = tokio::spawn({
                let c = c.clone();
                let url = url.clone();
                async move { post(&c, &url, None, initialize(1)).send().await.unwrap() }
            });
            let session = acceptor.accept().await.expect("a session");
            let (tx, mut rx) = session.transport.split();
            let Some(Inbound::Message(Message::Request(init))) = rx.recv().await else {
                panic!("the initialize")
            };
            tx.send(Message::Error(
                switchboard_protocol::jsonrpc::ErrorResponse::new(
                    Some(init.id),
                    switchboard_protocol::jsonrpc::ErrorObject::new(-32602, "unsupported"),
                ),
            ))
            .await
            .unwrap();
            let resp = reply.await.unwrap();
            assert_eq!(resp.status(), 200, "json_response={json_response}");
            assert!(
                resp.headers().get("mcp-session-id").is_none(),
                "json_response={json_response}: no session id for a failed initialize"
            );
            let body = resp.bytes().await.unwrap();
            let answer: Value = if json_response {
                serde_json::from_slice(&body).unwrap()
            } else {
                messages(&body).pop().expect("the error event")
            };
            assert_eq!(
                answer["error"]["code"], -32602,
                "json_response={json_response}"
            );
            // The library hears that the session is over.
            match rx.recv().await {
                Some(Inbound::Closed { reason }) => {
                    assert!(matches!(reason, CloseReason::SessionClosed), "{reason:?}")
                }
                other => panic!("json_response={json_response}: expected Closed, got {other:?}"),
            }
            // A successful initialize still gets its id.
            let _closed = echo(acceptor);
            if !json_response {
                let sid = open_session(&c, &url).await;
                assert!(!sid.is_empty());
            }
        }
    })
    .await;
}

/// Answers every request of a session already past `initialize` with
/// `{"echo": method}`, until it closes; returns the close reason.
fn serve_echo(
    tx: switchboard_transport::Sender,
    mut rx: switchboard_transport::Receiver,
) -> tokio::task::JoinHandle<Option<CloseReason>> {
    tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            match event {
                Inbound::Message(Message::Request(r)) => {
                    let result = json!({"echo": r.method});
                    let _ = tx
                        .send(Message::Response(Response::new(r.id, &result).unwrap()))
                        .await;
                }
                Inbound::Closed { reason } => return Some(reason),
                _ => {}
            }
        }
        None
    })
}

/// A revision negotiated on a session is one its requests may name in
/// `MCP-Protocol-Version`, supported by the server or not: a server that
/// answered `initialize` with 2024-11-05 (a stdio server behind a bridge) gets
/// the client's `notifications/initialized`, requests, GET and DELETE, all
/// naming 2024-11-05, where each got 400 before. A revision newer than the
/// negotiated one is refused (a 2025-03-26 session naming 2025-06-18), an older
/// supported one is not.
#[tokio::test]
async fn a_session_speaks_the_revision_it_negotiated() {
    bounded(async {
        let (server, mut acceptor) = HttpServer::bind(HttpServerConfig::default()).await.unwrap();
        let url = server.url();
        let c = client();
        let (sid, body, tx, rx) = initialize_as(
            &c,
            &url,
            &mut acceptor,
            "2024-11-05",
            None,
            "2024-11-05",
            Duration::ZERO,
        )
        .await;
        assert_eq!(
            messages(&body)[0]["result"]["protocolVersion"],
            "2024-11-05"
        );
        let served = serve_echo(tx, rx);
        let initialized =
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
        let resp = post_as(&c, &url, &sid, "2024-11-05", initialized)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 202, "{}", resp.text().await.unwrap());
        let resp = post_as(&c, &url, &sid, "2024-11-05", request(2, "tools/list"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let msgs = messages(&resp.bytes().await.unwrap());
        assert_eq!(msgs[0]["result"]["echo"], "tools/list", "{msgs:?}");
        let stream = c
            .get(&url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", "2024-11-05")
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status(), 200);
        drop(stream);
        // Newer than negotiated: refused, saying why.
        let resp = post_as(&c, &url, &sid, "2025-06-18", request(3, "ping"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400);
        let text = resp.text().await.unwrap();
        assert!(text.contains("2024-11-05"), "{text}");
        let resp = c
            .delete(&url)
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", "2024-11-05")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert!(matches!(
            served.await.unwrap(),
            Some(CloseReason::SessionDeleted)
        ));
        // Another server's sessions: 2025-03-26 negotiated.
        let (sid, _, tx, rx) = initialize_as(
            &c,
            &url,
            &mut acceptor,
            "2025-06-18",
            None,
            "2025-03-26",
            Duration::ZERO,
        )
        .await;
        let _served = serve_echo(tx, rx);
        let resp = post_as(&c, &url, &sid, "2025-06-18", request(2, "ping"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400, "a 2025-03-26 session names 2025-06-18");
        let resp = post_as(&c, &url, &sid, "2025-03-26", request(3, "ping"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        resp.bytes().await.unwrap();
        // 2025-11-25 negotiated: an older supported revision passes (the
        // conformance suite's polling scenario names 2025-03-26), a revision
        // unknown to the server does not.
        let (sid, _, tx, rx) = initialize_as(
            &c,
            &url,
            &mut acceptor,
            "2025-11-25",
            None,
            "2025-11-25",
            Duration::ZERO,
        )
        .await;
        let _served = serve_echo(tx, rx);
        let resp = post_as(&c, &url, &sid, "2025-03-26", request(2, "ping"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        resp.bytes().await.unwrap();
        let resp = post_as(&c, &url, &sid, "2024-11-05", request(3, "ping"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400);
    })
    .await
}

/// `Accept` is read as RFC 9110 says: `*/*` and no `Accept` take the server's
/// choice, a JSON-only client gets one JSON body, an SSE-only client an SSE
/// stream (even from a server set to answer JSON), and only a client that
/// accepts neither gets 406.
#[tokio::test]
async fn accept_wildcards_and_single_types_get_a_type_they_accept() {
    bounded(async {
        for json_response in [false, true] {
            let mut config = HttpServerConfig::default();
            config.json_response = json_response;
            let (server, _closed) = start(config).await;
            let url = server.url();
            let c = client();
            let resp = post(&c, &url, None, initialize(1)).send().await.unwrap();
            assert_eq!(resp.status(), 200);
            let sid = resp.headers()["mcp-session-id"]
                .to_str()
                .unwrap()
                .to_owned();
            resp.bytes().await.unwrap();
            // A quick lone response: JSON for a client that takes either,
            // whatever `json_response` says (`json_reply_within`).
            let served = "application/json";
            let cases: [(Option<&str>, Option<&str>); 7] = [
                (Some("*/*"), Some(served)),
                (None, Some(served)),
                (Some("application/json"), Some("application/json")),
                (Some("application/*"), Some("application/json")),
                (Some("text/event-stream"), Some("text/event-stream")),
                (Some("*/*, text/event-stream;q=0"), Some("application/json")),
                (Some("text/html, */*;q=0"), None),
            ];
            for (n, (accept, expected)) in cases.into_iter().enumerate() {
                let id = 10 + n as u64;
                let mut b = c
                    .post(&url)
                    .header("content-type", "application/json")
                    .header("mcp-session-id", &sid)
                    .header("mcp-protocol-version", "2025-11-25")
                    .body(request(id, "echo"));
                if let Some(a) = accept {
                    b = b.header("accept", a);
                }
                let resp = b.send().await.unwrap();
                let what = format!("json_response={json_response} Accept: {accept:?}");
                let Some(expected) = expected else {
                    assert_eq!(resp.status(), 406, "{what}");
                    continue;
                };
                assert_eq!(resp.status(), 200, "{what}");
                assert_eq!(resp.headers()["content-type"], expected, "{what}");
                let body = resp.bytes().await.unwrap();
                let answer: Value = if expected == "application/json" {
                    serde_json::from_slice(&body).unwrap()
                } else {
                    messages(&body).pop().expect("the response event")
                };
                assert_eq!(answer["id"], id, "{what}");
                assert_eq!(answer["result"]["echo"], "echo", "{what}");
            }
            // The GET stream: any Accept that allows SSE.
            for accept in ["*/*", "text/*"] {
                let resp = c
                    .get(&url)
                    .header("accept", accept)
                    .header("mcp-session-id", &sid)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(resp.status(), 200, "GET Accept: {accept}");
                drop(resp);
                // Wait until the server saw the stream close (409 otherwise).
                wait_for_standalone_free(&c, &url, &sid).await;
            }
            let resp = c
                .get(&url)
                .header("accept", "application/json")
                .header("mcp-session-id", &sid)
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 406);
        }
    })
    .await
}

/// Waits (bounded) until a GET for the session's standalone stream is no
/// longer refused with 409, and closes the stream it opened.
async fn wait_for_standalone_free(c: &reqwest::Client, url: &str, sid: &str) {
    for _ in 0..200 {
        let resp = get(c, url, sid).send().await.unwrap();
        if resp.status() != 409 {
            assert_eq!(resp.status(), 200);
            drop(resp);
            // This stream's close must be seen too before the next GET.
            for _ in 0..200 {
                tokio::time::sleep(Duration::from_millis(10)).await;
                let again = get(c, url, sid).send().await.unwrap();
                if again.status() == 200 {
                    return;
                }
            }
            panic!("the standalone stream stayed taken");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the standalone stream stayed taken");
}

/// `Host` with a loopback name and any port or none passes; the allowed hosts
/// add to those defaults (a name alone: any port); without the defaults only
/// the allowed ones pass.
#[tokio::test]
async fn loopback_hosts_pass_without_a_port_and_allowed_hosts_add() {
    bounded(async {
        let mut config = HttpServerConfig::default();
        config.allowed_hosts = vec!["mcp.example".to_owned()];
        let (server, _closed) = start(config).await;
        let url = server.url();
        let port = server.local_addr().port();
        let c = client();
        let sid = open_session(&c, &url).await;
        let own = format!("127.0.0.1:{port}");
        let other_port = format!("localhost:{}", port.wrapping_add(1));
        for host in [
            "localhost",
            "127.0.0.1",
            "[::1]",
            own.as_str(),
            other_port.as_str(),
            "mcp.example",
            "mcp.example:443",
        ] {
            let resp = post(&c, &url, Some(&sid), request(2, "echo"))
                .header("host", host)
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 200, "Host: {host}");
            resp.bytes().await.unwrap();
        }
        let resp = post(&c, &url, Some(&sid), request(3, "echo"))
            .header("host", "evil.example")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 403);

        let mut config = HttpServerConfig::default();
        config.allowed_hosts = vec![format!("mcp.example:{port}")];
        config.default_hosts = false;
        config.bind = "127.0.0.1:0".parse().unwrap();
        let (strict, _closed) = start(config).await;
        let url = strict.url();
        let strict_port = strict.local_addr().port();
        let resp = post(&c, &url, None, initialize(1))
            .header("host", format!("127.0.0.1:{strict_port}"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 403, "the defaults are off");
        let resp = post(&c, &url, None, initialize(1))
            .header("host", format!("mcp.example:{port}"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
    })
    .await
}

/// With `max_sessions` live, a new session ends the least recently used idle
/// one (its client then gets 404; the library hears `SessionEvicted`) instead
/// of getting 503; a session with a call in flight is never taken.
#[tokio::test]
async fn a_full_table_evicts_the_least_recently_used_idle_session() {
    bounded(async {
        let mut config = HttpServerConfig::default();
        config.max_sessions = 3;
        let (server, mut closed) = start(config).await;
        let url = server.url();
        let c = client();
        let busy = open_session(&c, &url).await;
        let first = open_session(&c, &url).await;
        let second = open_session(&c, &url).await;
        // `busy` has a call in flight; `first` was used after `second`.
        let held = post(&c, &url, Some(&busy), request(2, "hold"))
            .send()
            .await
            .unwrap();
        assert_eq!(held.status(), 200);
        tokio::time::sleep(Duration::from_millis(5)).await;
        let resp = post(&c, &url, Some(&first), request(2, "echo"))
            .send()
            .await
            .unwrap();
        resp.bytes().await.unwrap();
        let third = open_session(&c, &url).await;
        assert_eq!(server.evicted_sessions(), 1);
        assert_eq!(server.session_count(), 3);
        match closed.recv().await {
            Some(CloseReason::SessionEvicted) => {}
            other => panic!("expected SessionEvicted, got {other:?}"),
        }
        let resp = post(&c, &url, Some(&second), request(3, "echo"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 404, "the least recently used went");
        for sid in [&busy, &first, &third] {
            let resp = post(&c, &url, Some(sid), request(4, "echo"))
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 200);
            resp.bytes().await.unwrap();
        }
        // `busy`'s call was answered by `release` (request 4 above is `echo`):
        // release it now, and it is idle again.
        let resp = post(&c, &url, Some(&busy), request(5, "release"))
            .send()
            .await
            .unwrap();
        resp.bytes().await.unwrap();
        held.bytes().await.unwrap();
        assert_eq!(server.evicted_sessions(), 1);
    })
    .await
}

/// A session that was opening when a drain began, whose `initialize` the
/// library refuses (as the bridge does once draining), gets 503 under the
/// initialize's id like every new session then, not an error inside a 200; a
/// legacy HTTP+SSE session's `initialize` during a drain too.
#[tokio::test]
async fn an_initialize_refused_during_a_drain_gets_503() {
    bounded(async {
        for json_response in [false, true] {
            let mut config = HttpServerConfig::default();
            config.json_response = json_response;
            let (server, mut acceptor) = HttpServer::bind(config).await.unwrap();
            let server = std::sync::Arc::new(server);
            let url = server.url();
            let c = client();
            let reply = tokio::spawn({
                let c = c.clone();
                let url = url.clone();
                async move { post(&c, &url, None, initialize(7)).send().await.unwrap() }
            });
            let session = acceptor.accept().await.expect("a session");
            let (tx, mut rx) = session.transport.split();
            let Some(Inbound::Message(Message::Request(init))) = rx.recv().await else {
                panic!("the initialize")
            };
            server.refuse_new_sessions();
            tx.send(Message::Error(
                switchboard_protocol::jsonrpc::ErrorResponse::new(
                    Some(init.id),
                    switchboard_protocol::jsonrpc::ErrorObject::new(-32603, "shutting down"),
                ),
            ))
            .await
            .unwrap();
            let resp = reply.await.unwrap();
            assert_eq!(resp.status(), 503, "json_response={json_response}");
            assert!(resp.headers().get("mcp-session-id").is_none());
            let body: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
            assert_eq!(body["id"], 7, "{body}");
            assert_eq!(body["error"]["code"], -32000, "{body}");
            assert_eq!(server.session_count(), 0);
        }

        let (server, mut acceptor) = HttpServer::bind(HttpServerConfig::default()).await.unwrap();
        let base = format!("http://{}", server.local_addr());
        let c = client();
        let mut stream = c
            .get(format!("{base}/sse"))
            .header("accept", "text/event-stream")
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status(), 200);
        let _session = acceptor.accept().await.expect("a legacy session");
        let first = stream.chunk().await.unwrap().expect("the endpoint event");
        let text = String::from_utf8_lossy(&first).into_owned();
        let endpoint = text
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .expect("endpoint data")
            .trim()
            .to_owned();
        server.refuse_new_sessions();
        let resp = c
            .post(format!("{base}{endpoint}"))
            .header("content-type", "application/json")
            .body(initialize(3))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 503);
        let body: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
        assert_eq!(body["id"], 3, "{body}");
        // The legacy session ended with it: its stream closes.
        while let Some(chunk) = stream.chunk().await.unwrap() {
            assert!(!String::from_utf8_lossy(&chunk).contains("\"id\":3"));
        }
    })
    .await
}
