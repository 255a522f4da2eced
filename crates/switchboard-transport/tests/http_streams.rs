//! The life of the HTTP server's SSE streams, seen from the wire: a new GET
//! takes the standalone stream over from a connection that still holds it (a
//! half-open one never ends by itself), GET streams get keep-alive comments
//! while silent, and [`HttpServer::shutdown`] ends every open SSE body with the
//! terminating zero-length chunk before the connections close, even when the
//! runtime ends right after it (as a program's does). Servers bind 127.0.0.1
//! only; every wait is bounded.

use std::future::Future;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard_protocol::codec::{SseItem, SseParser};
use switchboard_protocol::jsonrpc::{Message, Notification, Response};
use switchboard_transport::http::server::{HttpServer, HttpServerConfig, SessionAcceptor};
use switchboard_transport::Inbound;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

#[path = "common/raw_http.rs"]
mod raw_http;
use raw_http::Raw;

const LIMIT: Duration = Duration::from_secs(20);

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("test timed out")
}

/// Serves every session: answers `initialize`, holds every other request
/// unanswered (its stream stays open), and hands each session's sender to
/// `senders` so the test can send on it.
fn serve(
    mut acceptor: SessionAcceptor,
    senders: mpsc::UnboundedSender<switchboard_transport::Sender>,
) {
    tokio::spawn(async move {
        while let Some(session) = acceptor.accept().await {
            let (tx, mut rx) = session.transport.split();
            let _ = senders.send(tx.clone());
            tokio::spawn(async move {
                while let Some(event) = rx.recv().await {
                    match event {
                        Inbound::Message(Message::Request(r)) if r.method == "initialize" => {
                            let result = json!({"protocolVersion": "2025-11-25",
                                "capabilities": {}, "serverInfo": {"name": "s", "version": "0"}});
                            let answer = Response::new(r.id, &result).unwrap();
                            let _ = tx.send(Message::Response(answer)).await;
                        }
                        Inbound::Closed { .. } => break,
                        _ => {}
                    }
                }
            });
        }
    });
}

fn initialize() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}})
    .to_string()
}

/// Opens a Streamable HTTP session on `url`; returns its id.
async fn open_session(c: &reqwest::Client, url: &str) -> String {
    let resp = c
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(initialize())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let sid = resp.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    resp.bytes().await.unwrap();
    sid
}

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

fn list_changed() -> Message {
    Message::Notification(
        Notification::new("notifications/tools/list_changed", &json!({})).unwrap(),
    )
}

fn progress(n: u64) -> Message {
    Message::Notification(
        Notification::new(
            "notifications/message",
            &json!({"level": "info", "data": n}),
        )
        .unwrap(),
    )
}

/// Reads SSE events (id, data) from `resp` until `n` with data came.
async fn read_events(
    resp: &mut reqwest::Response,
    parser: &mut SseParser,
    n: usize,
) -> Vec<(Option<String>, String)> {
    let mut out = Vec::new();
    while out.len() < n {
        let chunk = resp.chunk().await.unwrap().expect("the stream ended early");
        for item in parser.feed(&chunk) {
            if let SseItem::Event(e) = item.unwrap() {
                if !e.data.is_empty() {
                    out.push((e.id, e.data));
                }
            }
        }
    }
    out
}

/// Reads `resp` to its end; `Ok` when the body ended properly, `Err` when it
/// broke (reqwest reports a body cut before its last chunk as an error).
async fn read_to_end(resp: &mut reqwest::Response) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) => return Ok(body),
            Err(e) => return Err(format!("{e:?}")),
        }
    }
}

/// A new GET for the standalone stream, with or without `Last-Event-ID`, is
/// not refused while a connection still holds the stream (a half-open one
/// looks open to the server until a write to it fails, which can take many
/// minutes): it takes the stream over. The old body ends, events after the
/// `Last-Event-ID` are replayed, and later ones go to the new connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_get_takes_the_standalone_stream_over() {
    bounded(async {
        let (server, acceptor) = HttpServer::bind(HttpServerConfig::default()).await.unwrap();
        let (senders_tx, mut senders) = mpsc::unbounded_channel();
        serve(acceptor, senders_tx);
        let url = server.url();
        let c = reqwest::Client::new();
        let sid = open_session(&c, &url).await;
        let tx = senders.recv().await.unwrap();

        let mut first = get_stream(&c, &url, &sid, None).send().await.unwrap();
        assert_eq!(first.status(), 200);
        let mut parser = SseParser::new();
        tx.send(progress(1)).await.unwrap();
        let got = read_events(&mut first, &mut parser, 1).await;
        let seen = got[0].0.clone().expect("events carry ids");
        // Sent after the last event the client saw: the client never saw
        // these (its connection is the half-open one).
        tx.send(progress(2)).await.unwrap();
        tx.send(progress(3)).await.unwrap();

        let mut second = get_stream(&c, &url, &sid, Some(&seen))
            .send()
            .await
            .unwrap();
        assert_eq!(second.status(), 200, "taken over, not refused");
        let ended = tokio::time::timeout(Duration::from_secs(10), read_to_end(&mut first))
            .await
            .expect("the old connection's body ends");
        ended.expect("and ends properly");
        let mut parser = SseParser::new();
        let replayed = read_events(&mut second, &mut parser, 2).await;
        let data: Vec<Value> = replayed
            .iter()
            .map(|(_, d)| serde_json::from_str(d).unwrap())
            .collect();
        assert_eq!(data[0]["params"]["data"], 2, "{data:?}");
        assert_eq!(data[1]["params"]["data"], 3, "{data:?}");
        tx.send(progress(4)).await.unwrap();
        let live = read_events(&mut second, &mut parser, 1).await;
        let last = live[0].0.clone().expect("an id");
        assert!(live[0].1.contains(r#""data":4"#), "{live:?}");

        // Without Last-Event-ID too: the third GET takes the stream from the
        // second, and gets what is sent from then on.
        let mut third = get_stream(&c, &url, &sid, None).send().await.unwrap();
        assert_eq!(third.status(), 200);
        tokio::time::timeout(Duration::from_secs(10), read_to_end(&mut second))
            .await
            .expect("the second connection's body ends")
            .expect("properly");
        tx.send(progress(5)).await.unwrap();
        let mut parser = SseParser::new();
        let got = read_events(&mut third, &mut parser, 1).await;
        assert!(got[0].1.contains(r#""data":5"#), "{got:?}");
        assert_ne!(got[0].0.as_deref(), Some(last.as_str()));
        drop(tx);
    })
    .await
}

/// A GET stream silent for `sse_keep_alive` gets a `: keep-alive` comment,
/// and more of them while it stays silent; a message in between still comes
/// as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_standalone_stream_gets_keep_alives() {
    bounded(async {
        let mut config = HttpServerConfig::default();
        config.sse_keep_alive = Some(Duration::from_millis(100));
        let (server, acceptor) = HttpServer::bind(config).await.unwrap();
        let (senders_tx, mut senders) = mpsc::unbounded_channel();
        serve(acceptor, senders_tx);
        let url = server.url();
        let c = reqwest::Client::new();
        let sid = open_session(&c, &url).await;
        let tx = senders.recv().await.unwrap();
        let mut stream = get_stream(&c, &url, &sid, None).send().await.unwrap();
        assert_eq!(stream.status(), 200);
        let mut parser = SseParser::new().with_comments(true);
        let mut comments = 0;
        let mut messages = 0;
        let mut sent = false;
        while comments < 3 || messages < 1 {
            let chunk = tokio::time::timeout(Duration::from_secs(5), stream.chunk())
                .await
                .expect("no keep-alive within 5 s")
                .unwrap()
                .expect("the stream stays open");
            for item in parser.feed(&chunk) {
                match item.unwrap() {
                    SseItem::Comment(text) => {
                        assert_eq!(text.trim(), "keep-alive");
                        comments += 1;
                    }
                    SseItem::Event(e) if !e.data.is_empty() => messages += 1,
                    SseItem::Event(_) => {}
                }
            }
            if comments >= 1 && !sent {
                tx.send(list_changed()).await.unwrap();
                sent = true;
            }
        }
    })
    .await
}

/// [`HttpServer::shutdown`] ends every open SSE body with the terminating
/// zero-length chunk before the connections close: the reply to a POST whose
/// call is unanswered, the standalone GET stream and a legacy `/sse` stream,
/// as DELETE ends a session's streams. The server runs on a runtime of its own
/// that is dropped right after `shutdown` returns, as at the end of a
/// program: a connection not finished by then would be cut mid-body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_every_open_sse_body_with_its_last_chunk() {
    bounded(async {
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        let server_thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let (server, acceptor) =
                    HttpServer::bind(HttpServerConfig::default()).await.unwrap();
                let (senders_tx, senders) = mpsc::unbounded_channel();
                serve(acceptor, senders_tx);
                let _ = ready_tx.send((server.local_addr(), server.url()));
                let _ = stop_rx.await;
                let cut = server.shutdown(Duration::from_secs(10)).await;
                let _ = done_tx.send(cut);
                drop(senders);
            });
            // Every task left (a connection not finished) is dropped here.
            drop(runtime);
        });
        let (addr, url) = ready_rx.await.unwrap();
        let c = reqwest::Client::new();
        let sid = open_session(&c, &url).await;
        let host = format!("127.0.0.1:{}", addr.port());
        let common = format!(
            "Host: {host}\r\nmcp-session-id: {sid}\r\nmcp-protocol-version: 2025-11-25\r\n"
        );
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "held", "params": {}}).to_string();
        let mut post = Raw::open(
            addr,
            format!(
                "POST /mcp HTTP/1.1\r\n{common}accept: application/json, text/event-stream\r\n\
                 content-type: application/json\r\ncontent-length: {}\r\n\r\n{call}",
                call.len()
            ),
        )
        .await;
        let mut standalone = Raw::open(
            addr,
            format!("GET /mcp HTTP/1.1\r\n{common}accept: text/event-stream\r\n\r\n"),
        )
        .await;
        let mut legacy = Raw::open(
            addr,
            format!("GET /sse HTTP/1.1\r\nHost: {host}\r\naccept: text/event-stream\r\n\r\n"),
        )
        .await;
        for (raw, what) in [(&post, "POST"), (&standalone, "GET"), (&legacy, "legacy")] {
            assert!(raw.head.starts_with("HTTP/1.1 200"), "{what}: {}", raw.head);
        }
        // Each stream has sent its first event: the POST's and the GET's
        // priming events (2025-11-25), the legacy stream's endpoint.
        post.wait_for("id: ").await;
        standalone.wait_for("id: ").await;
        legacy.wait_for("event: endpoint").await;

        stop_tx.send(()).unwrap();
        let cut = done_rx.await.unwrap();
        assert_eq!(cut, 0, "no connection needed cutting");
        for (raw, what) in [(post, "POST"), (standalone, "GET"), (legacy, "legacy")] {
            let body = raw
                .finish()
                .await
                .unwrap_or_else(|e| panic!("the {what} stream did not end properly: {e}"));
            assert!(
                body.contains("id: ") || body.contains("endpoint"),
                "{what}: {body}"
            );
        }
        server_thread.join().unwrap();
    })
    .await
}

/// A connection that cannot finish its response (here a stateless 2026-07-28
/// call whose library side keeps its sender and never answers) does not hold
/// [`HttpServer::shutdown`] past its grace: it is cut, counted in the return
/// value, and closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_cuts_what_is_still_open_after_the_grace() {
    bounded(async {
        let (server, acceptor) = HttpServer::bind(HttpServerConfig::default()).await.unwrap();
        let (senders_tx, mut senders) = mpsc::unbounded_channel();
        serve(acceptor, senders_tx);
        let addr = server.local_addr();
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "never", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}})
        .to_string();
        let mut sock = TcpStream::connect(addr).await.unwrap();
        sock.write_all(
            format!(
                "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\naccept: application/json, text/event-stream\r\n\
                 content-type: application/json\r\nmcp-protocol-version: 2026-07-28\r\n\
                 content-length: {}\r\n\r\n{call}",
                addr.port(),
                call.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
        // The exchange reached the library, which holds its sender.
        let _held = senders.recv().await.expect("the exchange");
        let cut = server.shutdown(Duration::from_millis(300)).await;
        assert_eq!(cut, 1);
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(5), sock.read_to_end(&mut rest))
            .await
            .expect("the cut connection is closed");
        // Closed, one way or the other, without an answer to the call.
        let text = String::from_utf8_lossy(&rest);
        assert!(closed.is_err() || !text.contains("\"id\":1"), "{text}");
    })
    .await
}
