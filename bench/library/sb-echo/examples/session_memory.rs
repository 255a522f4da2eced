//! Where the memory of an open idle session goes: the echo server of this crate
//! in process, behind a counting global allocator, with N sessions opened over
//! real loopback TCP (`initialize` + `notifications/initialized`, MCP 2025-11-25,
//! "Transports → Streamable HTTP").
//!
//! ```sh
//! cargo run --release -p switchboard-bench-echo --example session_memory -- [N]
//! ```
//!
//! Prints, after one warm-up session (so one-time costs are not counted): the live
//! heap bytes and allocations per session with each session's connection held,
//! then after closing those connections (the session's own cost), and the
//! allocation sizes that grew by at least N/2 live blocks (size in bytes, live
//! blocks added per session, bytes per session), largest share first: the shape of
//! what each session keeps. Heap only: allocator overhead, thread stacks and
//! kernel socket buffers are not in it (`bench/library/run` reads VmRSS for those).
//!
//! A diagnostic for issue 3's memory target; not part of any test.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sizes below this are counted one by one; larger ones share the last slot.
const SIZES: usize = 1 << 16;

/// The system allocator, counting live bytes, live blocks and live blocks by size.
struct Counting;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);
static LIVE_BLOCKS: AtomicUsize = AtomicUsize::new(0);
static BY_SIZE: [AtomicIsize; SIZES] = [const { AtomicIsize::new(0) }; SIZES];

fn slot(size: usize) -> usize {
    size.min(SIZES - 1)
}

// SAFETY: every call is passed to `System` unchanged; the counters are atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
            LIVE_BLOCKS.fetch_add(1, Ordering::Relaxed);
            BY_SIZE[slot(layout.size())].fetch_add(1, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller upholds `GlobalAlloc::dealloc`'s contract.
        unsafe { System.dealloc(ptr, layout) };
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        LIVE_BLOCKS.fetch_sub(1, Ordering::Relaxed);
        BY_SIZE[slot(layout.size())].fetch_sub(1, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE_BYTES.fetch_add(new_size, Ordering::Relaxed);
            LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
            BY_SIZE[slot(layout.size())].fetch_sub(1, Ordering::Relaxed);
            BY_SIZE[slot(new_size)].fetch_add(1, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A snapshot of the counters.
struct Snapshot {
    bytes: usize,
    blocks: usize,
    by_size: Vec<isize>,
}

fn snapshot() -> Snapshot {
    Snapshot {
        bytes: LIVE_BYTES.load(Ordering::Relaxed),
        blocks: LIVE_BLOCKS.load(Ordering::Relaxed),
        by_size: BY_SIZE.iter().map(|c| c.load(Ordering::Relaxed)).collect(),
    }
}

/// One client connection speaking just enough HTTP/1.1 for the two POSTs.
struct Client {
    stream: TcpStream,
    authority: String,
    session: Option<String>,
}

impl Client {
    async fn connect(authority: &str) -> std::io::Result<Client> {
        let stream = TcpStream::connect(authority).await?;
        stream.set_nodelay(true)?;
        Ok(Client {
            stream,
            authority: authority.to_owned(),
            session: None,
        })
    }

    /// POSTs `body` to `/mcp`; returns the response head and body (de-chunked
    /// bytes are not needed: the body is returned raw).
    async fn post(&mut self, body: &str) -> std::io::Result<(String, String)> {
        let session = self
            .session
            .as_ref()
            .map(|s| format!("mcp-session-id: {s}\r\n"))
            .unwrap_or_default();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\n\
             {session}content-length: {}\r\n\r\n{body}",
            self.authority,
            body.len()
        );
        self.stream.write_all(request.as_bytes()).await?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = self.stream.read(&mut chunk).await?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf);
            if let Some(end) = text.find("\r\n\r\n") {
                let head = text[..end].to_ascii_lowercase();
                let rest = &text[end + 4..];
                let complete = if head.contains("transfer-encoding: chunked") {
                    rest.ends_with("0\r\n\r\n")
                } else {
                    let len = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length: "))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    rest.len() >= len
                };
                if complete {
                    return Ok((head, rest.to_owned()));
                }
            }
        }
    }

    async fn open(authority: &str) -> std::io::Result<Client> {
        let mut c = Client::connect(authority).await?;
        let (head, body) = c
            .post(
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"session-memory","version":"0"}}}"#,
            )
            .await?;
        if !head.starts_with("http/1.1 200") || !body.contains("\"result\"") {
            return Err(std::io::Error::other(format!("initialize: {head} {body}")));
        }
        c.session = head
            .lines()
            .find_map(|l| l.strip_prefix("mcp-session-id: "))
            .map(|s| s.trim().to_owned());
        let (head, _) = c
            .post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await?;
        if !head.starts_with("http/1.1 202") {
            return Err(std::io::Error::other(format!("initialized: {head}")));
        }
        Ok(c)
    }
}

fn report(what: &str, n: usize, before: &Snapshot, after: &Snapshot) {
    let bytes = after.bytes as f64 - before.bytes as f64;
    let blocks = after.blocks as f64 - before.blocks as f64;
    println!(
        "{what}: {:.0} bytes ({:.1} KiB) in {:.1} live allocations per session",
        bytes / n as f64,
        bytes / n as f64 / 1024.0,
        blocks / n as f64
    );
    let mut grown: Vec<(usize, f64)> = (0..SIZES)
        .filter_map(|s| {
            let d = after.by_size[s] - before.by_size[s];
            (d as f64 >= n as f64 / 2.0).then_some((s, d as f64 / n as f64))
        })
        .collect();
    grown.sort_by(|a, b| (b.0 as f64 * b.1).total_cmp(&(a.0 as f64 * a.1)));
    println!("  size (bytes)  blocks/session  bytes/session");
    for (size, per) in grown.iter().take(25) {
        let shown = if *size == SIZES - 1 {
            format!(">={size}")
        } else {
            size.to_string()
        };
        println!("  {shown:>12}  {per:>14.2}  {:>13.0}", *size as f64 * per);
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(200);
    let server = switchboard_bench_echo::server()?;
    let (http, url, serving) = switchboard_bench_echo::bind(&server, 0).await?;
    let serving = tokio::spawn(serving);
    let authority = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let settle = || tokio::time::sleep(Duration::from_millis(500));

    // One warm-up session, closed, so lazily made state is not counted.
    drop(Client::open(&authority).await?);
    settle().await;
    let before = snapshot();
    let mut clients = Vec::with_capacity(n);
    for _ in 0..n {
        clients.push(Client::open(&authority).await?);
    }
    settle().await;
    let held = snapshot();
    drop(clients);
    settle().await;
    let closed = snapshot();
    println!(
        "{n} idle sessions of the switchboard echo server (default HttpServerConfig, ServeOptions)"
    );
    report("connection held", n, &before, &held);
    report("connection closed (sessions only)", n, &before, &closed);
    println!("live sessions at the end: {}", http.session_count());
    // Sizes that explain some of the blocks above: a tokio mpsc queue allocates its
    // first block of 32 slots when it is made (32 * size + 32 bytes), and a spawned
    // task is one allocation holding its future.
    let (a, _b) = switchboard_transport::memory::pair(&Default::default());
    let run = server.serve(a, Default::default()).run();
    println!(
        "size_of Inbound = {} (a queue block: {} bytes); one session's serve task future = {} bytes",
        std::mem::size_of::<switchboard_transport::Inbound>(),
        32 * std::mem::size_of::<switchboard_transport::Inbound>() + 32,
        std::mem::size_of_val(&run)
    );
    drop(run);
    drop(http);
    let _ = tokio::time::timeout(Duration::from_secs(10), serving).await;
    Ok(())
}
