//! SIGTERM and the open SSE streams of the bridge (and of the example server
//! over HTTP), seen on the wire: every open response body (a POST's stream
//! with a call in flight, the standalone GET stream, a legacy `/sse` stream)
//! ends with the terminating zero-length chunk before its connection closes,
//! as on DELETE, never a reset or a body cut mid-chunk. The servers listen on
//! 127.0.0.1 only; every wait is bounded.

mod bridge_util;
mod common;

use std::net::SocketAddr;

use bridge_util::*;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One raw HTTP/1.1 exchange: the request written, the response head read.
struct Raw {
    sock: TcpStream,
    /// What was read after the head so far.
    rest: Vec<u8>,
    head: String,
}

impl Raw {
    async fn open(addr: SocketAddr, request: String) -> Raw {
        let mut sock = TcpStream::connect(addr).await.unwrap();
        sock.write_all(request.as_bytes()).await.unwrap();
        let mut buf = Vec::new();
        let end = loop {
            let mut chunk = [0u8; 4096];
            let n = sock.read(&mut chunk).await.unwrap();
            assert!(n > 0, "closed before the head");
            buf.extend_from_slice(&chunk[..n]);
            if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p + 4;
            }
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        Raw {
            sock,
            rest: buf[end..].to_vec(),
            head,
        }
    }

    /// Reads until `needle` has come in the body's raw bytes.
    async fn wait_for(&mut self, needle: &str) {
        while !String::from_utf8_lossy(&self.rest).contains(needle) {
            let mut chunk = [0u8; 4096];
            let n = self.sock.read(&mut chunk).await.unwrap();
            assert!(n > 0, "closed before {needle:?}");
            self.rest.extend_from_slice(&chunk[..n]);
        }
    }

    /// Reads to the end of the connection: `Ok(body)` when the chunked body
    /// ended properly, else how it broke.
    async fn finish(mut self) -> Result<String, String> {
        assert!(
            self.head
                .to_ascii_lowercase()
                .contains("transfer-encoding: chunked"),
            "{}",
            self.head
        );
        loop {
            let mut chunk = [0u8; 4096];
            match self.sock.read(&mut chunk).await {
                Ok(0) => break,
                Ok(n) => self.rest.extend_from_slice(&chunk[..n]),
                Err(e) => return Err(format!("the connection broke: {e}")),
            }
        }
        dechunk(&self.rest)
    }
}

/// Decodes a chunked body (RFC 9112 §7.1): `Ok` with its data when it ends
/// with the zero-length chunk and the empty line after it, `Err` otherwise.
fn dechunk(mut raw: &[u8]) -> Result<String, String> {
    let mut data = Vec::new();
    loop {
        let Some(eol) = raw.windows(2).position(|w| w == b"\r\n") else {
            return Err(format!(
                "cut inside a chunk-size line, after {:?}",
                String::from_utf8_lossy(&data)
            ));
        };
        let line = std::str::from_utf8(&raw[..eol]).map_err(|e| e.to_string())?;
        let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|e| format!("bad chunk size {line:?}: {e}"))?;
        raw = &raw[eol + 2..];
        if size == 0 {
            return if raw == b"\r\n" {
                Ok(String::from_utf8_lossy(&data).into_owned())
            } else {
                Err(format!("bad end after the last chunk: {raw:?}"))
            };
        }
        if raw.len() < size + 2 || &raw[size..size + 2] != b"\r\n" {
            return Err(format!(
                "cut inside a chunk of {size} bytes, after {:?}",
                String::from_utf8_lossy(&data)
            ));
        }
        data.extend_from_slice(&raw[..size]);
        raw = &raw[size + 2..];
    }
}

#[test]
fn dechunk_tells_a_whole_body_from_a_cut_one() {
    assert_eq!(dechunk(b"3\r\nabc\r\n0\r\n\r\n").unwrap(), "abc");
    assert!(dechunk(b"3\r\nabc\r\n").is_err());
    assert!(dechunk(b"5\r\nabc").is_err());
    assert!(dechunk(b"3\r\nabc\r\n0\r\n").is_err());
}

/// SIGTERM with a call in flight (past the drain: it gets its error on its
/// stream), the standalone GET stream and a legacy `/sse` stream open: each
/// body ends with its last chunk, and the bridge exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_every_open_sse_body_with_its_last_chunk() {
    let mut bridge = BridgeProc::start(&["--drain-timeout", "300ms"], &[]).await;
    let c = client();
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let addr: SocketAddr = bridge.base.trim_start_matches("http://").parse().unwrap();
    let common = format!(
        "Host: {addr}\r\nmcp-session-id: {}\r\nmcp-protocol-version: {}\r\n",
        s.id, s.version
    );
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "progress", "arguments": {"seconds": 60, "steps": 60},
        "_meta": {"progressToken": "p"}}})
    .to_string();
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
        format!("GET /sse HTTP/1.1\r\nHost: {addr}\r\naccept: text/event-stream\r\n\r\n"),
    )
    .await;
    for (raw, what) in [(&post, "POST"), (&standalone, "GET"), (&legacy, "legacy")] {
        assert!(raw.head.starts_with("HTTP/1.1 200"), "{what}: {}", raw.head);
    }
    // The call is under way (its first progress came), the GET stream is
    // attached (its priming event, 2025-11-25) and the legacy session too.
    post.wait_for("notifications/progress").await;
    standalone.wait_for("id: ").await;
    legacy.wait_for("event: endpoint").await;

    bridge.terminate();
    let bodies = tokio::time::timeout(WAIT, async {
        let mut bodies = Vec::new();
        for (raw, what) in [(post, "POST"), (standalone, "GET"), (legacy, "legacy")] {
            let body = raw
                .finish()
                .await
                .unwrap_or_else(|e| panic!("the {what} stream did not end properly: {e}"));
            bodies.push(body);
        }
        bodies
    })
    .await
    .expect("every stream ends");
    // The call cut short by the shutdown got its answer on its stream.
    assert!(bodies[0].contains(r#""id":1"#), "{}", bodies[0]);
    let status = tokio::time::timeout(WAIT, bridge.child.wait())
        .await
        .expect("the bridge exits")
        .unwrap();
    assert!(status.success(), "{status:?}");
}

/// `example-server --http` on SIGTERM: its standalone GET stream and a legacy
/// `/sse` stream end with their last chunk too, and it exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_example_server_ends_its_streams_on_sigterm_too() {
    let server = common::HttpExample::start();
    let c = client();
    let s = open_session(&c, &server.url, "2025-11-25", json!({})).await;
    let addr: SocketAddr = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    let common = format!(
        "Host: {addr}\r\nmcp-session-id: {}\r\nmcp-protocol-version: {}\r\n",
        s.id, s.version
    );
    let mut standalone = Raw::open(
        addr,
        format!("GET /mcp HTTP/1.1\r\n{common}accept: text/event-stream\r\n\r\n"),
    )
    .await;
    let mut legacy = Raw::open(
        addr,
        format!("GET /sse HTTP/1.1\r\nHost: {addr}\r\naccept: text/event-stream\r\n\r\n"),
    )
    .await;
    standalone.wait_for("id: ").await;
    legacy.wait_for("event: endpoint").await;
    let readers = tokio::spawn(async move { (standalone.finish().await, legacy.finish().await) });
    let status = tokio::task::spawn_blocking(move || server.stop())
        .await
        .unwrap();
    let (standalone, legacy) = tokio::time::timeout(WAIT, readers)
        .await
        .expect("every stream ends")
        .unwrap();
    standalone.unwrap_or_else(|e| panic!("the GET stream did not end properly: {e}"));
    legacy.unwrap_or_else(|e| panic!("the legacy stream did not end properly: {e}"));
    assert!(status.success(), "{status:?}");
}
