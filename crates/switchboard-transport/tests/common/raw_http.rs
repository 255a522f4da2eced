//! A raw HTTP/1.1 exchange for tests that check what goes on the wire: the
//! response head, then the chunked body to its end (RFC 9112 §7.1), so that a
//! body cut mid-chunk or ended without its zero-length chunk is told from one
//! that ended properly. Shared by the transport's and the CLI's tests.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One raw HTTP/1.1 exchange: the request is written, then the response head
/// is read; the rest is read by [`Raw::finish`].
pub struct Raw {
    sock: TcpStream,
    /// What was read after the head so far.
    rest: Vec<u8>,
    /// The response head.
    pub head: String,
}

impl Raw {
    pub async fn open(addr: SocketAddr, request: String) -> Raw {
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
    pub async fn wait_for(&mut self, needle: &str) {
        while !String::from_utf8_lossy(&self.rest).contains(needle) {
            let mut chunk = [0u8; 4096];
            let n = self.sock.read(&mut chunk).await.unwrap();
            assert!(n > 0, "closed before {needle:?}");
            self.rest.extend_from_slice(&chunk[..n]);
        }
    }

    /// Reads to the end of the connection and checks the chunked body ended
    /// properly: `Ok(body)`, or `Err` saying how it broke (a reset, a cut
    /// chunk, no terminating zero-length chunk).
    pub async fn finish(mut self) -> Result<String, String> {
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
pub fn dechunk(mut raw: &[u8]) -> Result<String, String> {
    let mut data = Vec::new();
    loop {
        let Some(eol) = raw.windows(2).position(|w| w == b"\r\n") else {
            return Err(format!(
                "cut inside a chunk-size line, after {:?}",
                String::from_utf8_lossy(&data)
            ));
        };
        let line = std::str::from_utf8(&raw[..eol]).map_err(|e| e.to_string())?;
        let size_text = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|e| format!("bad chunk size {line:?}: {e}"))?;
        raw = &raw[eol + 2..];
        if size == 0 {
            return if raw == b"\r\n" {
                Ok(String::from_utf8_lossy(&data).into_owned())
            } else {
                Err(format!("bad end after the last chunk: {raw:?}"))
            };
        }
        if raw.len() < size + 2 {
            return Err(format!(
                "cut inside a chunk of {size} bytes, after {:?}",
                String::from_utf8_lossy(&data)
            ));
        }
        data.extend_from_slice(&raw[..size]);
        if &raw[size..size + 2] != b"\r\n" {
            return Err("a chunk not followed by CRLF".to_owned());
        }
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
