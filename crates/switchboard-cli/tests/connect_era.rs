//! `switchboard connect URL` when the host app changes its mind about the era
//! (REVISIONS.md §6: re-probe, then fall back): an `initialize` after 2026-07-28
//! requests opens a legacy session (Streamable HTTP or HTTP+SSE) that the later
//! requests use; and what `connect` says when it cannot start or its HTTP+SSE
//! session ends.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::HttpExample;
use serde_json::{json, Value};

/// How long any one answer may take.
const WAIT: Duration = Duration::from_secs(20);

fn modern_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28",
           "io.modelcontextprotocol/clientCapabilities":{}})
}

fn modern(id: Value, method: &str, mut params: Value) -> Value {
    params["_meta"] = modern_meta();
    json!({"jsonrpc":"2.0","id":id,"method":method,"params":params})
}

fn initialize(id: u64, version: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{
        "protocolVersion":version,"capabilities":{},"clientInfo":{"name":"host","version":"1"}}})
}

/// `switchboard connect URL` as a host app runs it: lines on stdin, every
/// stdout line read by a thread, stderr kept.
struct Host {
    child: Child,
    stdin: Option<ChildStdin>,
    out: mpsc::Receiver<Value>,
    stderr: Arc<Mutex<String>>,
    /// Every message read from stdout so far, in order.
    seen: Vec<Value>,
}

impl Host {
    fn start(url: &str) -> Host {
        let mut child = Command::new(common::exe())
            .args(["connect", url])
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn connect");
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, out) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { return };
                let m: Value = serde_json::from_str(&line).expect("only JSON-RPC on stdout");
                let _ = tx.send(m);
            }
        });
        let mut err = child.stderr.take().unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let kept = stderr.clone();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = err.read_to_string(&mut text);
            kept.lock().unwrap().push_str(&text);
        });
        Host {
            stdin: child.stdin.take(),
            child,
            out,
            stderr,
            seen: Vec::new(),
        }
    }

    fn send(&mut self, m: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(format!("{m}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// The answer to `id` (a message without `method`), waiting at most [`WAIT`].
    fn answer(&mut self, id: Value) -> Value {
        let deadline = Instant::now() + WAIT;
        if let Some(m) = self
            .seen
            .iter()
            .find(|m| m["id"] == id && m.get("method").is_none())
        {
            return m.clone();
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let m = self
                .out
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no answer to {id} in {WAIT:?}; seen {:?}", self.seen));
            self.seen.push(m.clone());
            if m["id"] == id && m.get("method").is_none() {
                return m;
            }
        }
    }

    /// The position of `id`'s answer among the messages read so far.
    fn position(&self, id: &Value) -> Option<usize> {
        self.seen
            .iter()
            .position(|m| &m["id"] == id && m.get("method").is_none())
    }

    /// Waits (bounded) for the exit; the exit code and stderr.
    fn wait(mut self) -> (Option<i32>, String) {
        drop(self.stdin.take());
        let deadline = Instant::now() + WAIT;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("connect did not exit in {WAIT:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        std::thread::sleep(Duration::from_millis(100));
        let stderr = self.stderr.lock().unwrap().clone();
        (status.code(), stderr)
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// A remote that speaks only 2025-11-25 Streamable HTTP the way
/// `@modelcontextprotocol/server-everything` (`streamableHttp`) does: a POST
/// without a session that is not `initialize` is answered 400 "Server not
/// initialized" (so are the 2026-07-28 requests, whose headers it ignores),
/// `initialize` opens a session (`Mcp-Session-Id`), requests in it are
/// answered as JSON (`tools/call` echoes its `message`), the GET stream is
/// refused (405). It notes every POST: its JSON-RPC method and session header.
struct LegacyRemote {
    url: String,
    posts: Posts,
}

const SESSION: &str = "legacy-session-1";

/// What [`LegacyRemote`] notes of each POST: the JSON-RPC method and the
/// `Mcp-Session-Id` header.
type Posts = Arc<Mutex<Vec<(String, Option<String>)>>>;

impl LegacyRemote {
    fn start() -> LegacyRemote {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let posts = Arc::new(Mutex::new(Vec::new()));
        let noted = posts.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let noted = noted.clone();
                std::thread::spawn(move || serve_one(stream, &noted));
            }
        });
        LegacyRemote { url, posts }
    }

    fn posts(&self) -> Vec<(String, Option<String>)> {
        self.posts.lock().unwrap().clone()
    }
}

/// One HTTP/1.1 exchange of [`LegacyRemote`] (then the connection closes).
fn serve_one(stream: TcpStream, posts: &Posts) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let verb = line.split(' ').next().unwrap_or_default().to_owned();
    let (mut length, mut session) = (0usize, None);
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
        let (k, v) = h.split_once(':').unwrap_or((&h, ""));
        let v = v.trim().to_owned();
        match k.to_ascii_lowercase().as_str() {
            "content-length" => length = v.parse().unwrap_or(0),
            "mcp-session-id" => session = Some(v),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let (status, extra, reply) = match verb.as_str() {
        "POST" => {
            let m: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let method = m["method"].as_str().unwrap_or_default().to_owned();
            posts
                .lock()
                .unwrap()
                .push((method.clone(), session.clone()));
            let id = m.get("id").cloned();
            match (method.as_str(), session.as_deref(), id) {
                ("initialize", _, Some(id)) => (
                    "200 OK",
                    format!("Mcp-Session-Id: {SESSION}\r\n"),
                    json!({"jsonrpc":"2.0","id":id,"result":{"protocolVersion":"2025-11-25",
                        "capabilities":{"tools":{}},"serverInfo":{"name":"legacy","version":"1"}}})
                    .to_string(),
                ),
                (_, None, _) => (
                    "400 Bad Request",
                    String::new(),
                    json!({"jsonrpc":"2.0","error":{"code":-32000,
                        "message":"Bad Request: Server not initialized"},"id":null})
                    .to_string(),
                ),
                (_, Some(s), _) if s != SESSION => ("404 Not Found", String::new(), String::new()),
                (_, Some(_), None) => ("202 Accepted", String::new(), String::new()),
                ("tools/call", Some(_), Some(id)) => {
                    let said = m["params"]["arguments"]["message"].as_str().unwrap_or("");
                    (
                        "200 OK",
                        String::new(),
                        json!({"jsonrpc":"2.0","id":id,"result":{
                            "content":[{"type":"text","text":format!("Echo: {said}")}]}})
                        .to_string(),
                    )
                }
                (_, Some(_), Some(id)) => (
                    "200 OK",
                    String::new(),
                    json!({"jsonrpc":"2.0","id":id,"result":{}}).to_string(),
                ),
            }
        }
        "DELETE" => ("200 OK", String::new(), String::new()),
        _ => ("405 Method Not Allowed", String::new(), String::new()),
    };
    let content_type = if reply.is_empty() {
        ""
    } else {
        "Content-Type: application/json\r\n"
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\n{content_type}{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{reply}",
        reply.len()
    );
}

/// A host app that remembered the remote as 2026-07-28 sends a 2026-07-28
/// `tools/list` first (or probes with `server/discover` and then sends it); a
/// remote of 2025-11-25 refuses it, and the host app falls back to
/// `initialize`. The initialize used to go out in the 2026-07-28 shape: it
/// succeeded, but the session it opened was not kept, so every later call got
/// "Bad Request: Server not initialized". Now it opens a Streamable HTTP
/// session whose id the later requests carry.
#[test]
fn initialize_after_2026_requests_opens_a_streamable_http_session() {
    for probe_first in [false, true] {
        let remote = LegacyRemote::start();
        let mut host = Host::start(&remote.url);
        if probe_first {
            host.send(modern(json!("d"), "server/discover", json!({})));
            assert!(host.answer(json!("d")).get("error").is_some());
        }
        host.send(modern(json!("l"), "tools/list", json!({})));
        let refused = host.answer(json!("l"));
        assert!(refused.get("error").is_some(), "{refused}");
        host.send(initialize(1, "2025-11-25"));
        let init = host.answer(json!(1));
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
        host.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        host.send(json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
            "params":{"name":"echo","arguments":{"message":"after the fallback"}}}));
        let call = host.answer(json!(2));
        assert_eq!(
            text(&call["result"]),
            "Echo: after the fallback",
            "probe first: {probe_first}: {call}; the remote saw {:?}",
            remote.posts()
        );
        let posts = remote.posts();
        let in_session = |method: &str| {
            posts
                .iter()
                .any(|(m, s)| m == method && s.as_deref() == Some(SESSION))
        };
        assert!(
            in_session("notifications/initialized") && in_session("tools/call"),
            "{posts:?}"
        );
        let (code, stderr) = host.wait();
        assert_eq!(code, Some(0), "{stderr}");
    }
}

/// The same fallback in front of a legacy HTTP+SSE endpoint (`/sse`, which
/// refuses POSTs): the `initialize` takes the first message's path, Streamable
/// HTTP then HTTP+SSE, and the later requests go over that session. It used to
/// be posted in the 2026-07-28 shape and refused.
#[test]
fn initialize_after_2026_requests_falls_back_to_http_sse() {
    let remote = HttpExample::start();
    let sse = remote.url.replace("/mcp", "/sse");
    let mut host = Host::start(&sse);
    host.send(modern(json!("l"), "tools/list", json!({})));
    let refused = host.answer(json!("l"));
    assert!(refused.get("error").is_some(), "{refused}");
    host.send(initialize(1, "2024-11-05"));
    let init = host.answer(json!(1));
    assert_eq!(init["result"]["protocolVersion"], "2024-11-05", "{init}");
    host.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    host.send(json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"echo","arguments":{"text":"over HTTP+SSE"}}}));
    let call = host.answer(json!(2));
    assert_eq!(text(&call["result"]), "over HTTP+SSE", "{call}");
}

/// What is still in flight on the 2026-07-28 path when the host app sends
/// `initialize` (a slow call, an open `subscriptions/listen`) ends there: each
/// gets an error answer at once, before the initialize's answer (it used to be
/// left to the old path, whose answer could come in the middle of the new
/// session, or never for a listen), and the new session works.
#[test]
fn requests_in_flight_on_the_2026_path_are_answered_when_initialize_switches() {
    let remote = HttpExample::start();
    let mut host = Host::start(&remote.url);
    host.send(modern(
        json!("slow"),
        "tools/call",
        json!({"name":"progress","arguments":{"seconds":30}}),
    ));
    host.send(modern(
        json!("listen"),
        "subscriptions/listen",
        json!({"notifications":{"toolsListChanged":true}}),
    ));
    // Both reached the remote (the call reports progress, the listen is
    // acknowledged) before the switch.
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    host.send(initialize(1, "2025-11-25"));
    let init = host.answer(json!(1));
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    for id in [json!("slow"), json!("listen")] {
        let at = host.position(&id);
        let init_at = host.position(&json!(1));
        assert!(
            at.is_some() && at < init_at,
            "{id} was not answered before the initialize: {:?}",
            host.seen
        );
        let answer = host.answer(id.clone());
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("initialize")),
            "{answer}"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(10));
    host.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    host.send(json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"echo","arguments":{"text":"in the session"}}}));
    assert_eq!(text(&host.answer(json!(2))["result"]), "in the session");
    let (code, stderr) = host.wait();
    assert_eq!(code, Some(0), "{stderr}");
    // The new session was a real one: deleted at the end.
    let deadline = Instant::now() + Duration::from_secs(3);
    while remote.logged("session ended reason=the client deleted the HTTP session") < 1
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        remote.logged("session ended reason=the client deleted the HTTP session"),
        1,
        "{}",
        remote.log()
    );
}

/// The remote is down at start: the one line names both attempts and why each
/// failed (it used to name only the HTTP+SSE one).
#[test]
fn a_remote_down_at_start_is_named_for_both_transports() {
    let free = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", free.local_addr().unwrap());
    drop(free);
    let mut host = Host::start(&url);
    host.send(initialize(0, "2025-11-25"));
    let answer = host.answer(json!(0));
    let (code, stderr) = host.wait();
    assert_eq!(code, Some(2), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    let line = lines[0];
    assert!(line.starts_with("switchboard: "), "{line}");
    for says in [
        "Streamable HTTP: HTTP POST",
        "HTTP+SSE: ",
        "Connection refused",
    ] {
        assert!(line.contains(says), "{says:?} missing: {line}");
    }
    assert_eq!(line.matches("Connection refused").count(), 2, "{line}");
    // The host app's initialize got the same words as its error answer.
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| line.ends_with(m)),
        "{answer}"
    );
}

/// A legacy HTTP+SSE session whose remote goes away: `connect` ends (exit 2,
/// as documented: 2024-11-05 has no resumption) saying that the remote closed
/// the event stream and the session cannot be resumed; it used to say only
/// "error decoding response body". The host app's request in flight (a slow
/// `tools/call`) gets an error answer saying so before the exit; it used to
/// get none.
#[test]
fn the_end_of_an_http_sse_session_says_it_cannot_be_resumed() {
    let remote = HttpExample::start();
    let sse = remote.url.replace("/mcp", "/sse");
    let mut host = Host::start(&sse);
    host.send(initialize(0, "2024-11-05"));
    let init = host.answer(json!(0));
    assert_eq!(init["result"]["protocolVersion"], "2024-11-05", "{init}");
    host.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    host.send(json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"progress","arguments":{"seconds":60}}}));
    // Everything sent has reached the remote before it goes away (the POSTs
    // go one at a time, in order).
    host.send(json!({"jsonrpc":"2.0","id":1,"method":"ping"}));
    assert_eq!(host.answer(json!(1))["result"], json!({}));
    drop(remote);
    let failed = host.answer(json!(2));
    assert_eq!(failed["error"]["code"], -32000, "{failed}");
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("closed the event stream"), "{failed}");
    let deadline = Instant::now() + WAIT;
    while host.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "connect kept running");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (code, stderr) = host.wait();
    assert_eq!(code, Some(2), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    for says in ["closed the event stream", "HTTP+SSE", "cannot be resumed"] {
        assert!(lines[0].contains(says), "{says:?} missing: {stderr}");
    }
}

/// `--header` naming a header the transport sets itself is refused at start,
/// exit 2 and one line, before anything is sent (the remote here sees no
/// connection); `Authorization` and custom headers are not. It used to send
/// `Mcp-Session-Id: abc` on `initialize`, replace `Host`, and send `Accept`
/// twice on the HTTP+SSE GET.
#[test]
fn a_managed_header_is_refused_at_start() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let init = format!("{}\n", initialize(0, "2025-11-25"));
    for header in [
        "Mcp-Session-Id: abc",
        "MCP-Protocol-Version: 2025-11-25",
        "mcp-method: tools/call",
        "Mcp-Name: echo",
        "Last-Event-ID: 7",
        "Host: evil.com",
        "Content-Type: text/plain",
        "Content-Length: 10",
        "accept: text/html",
        "Transfer-Encoding: chunked",
        "Connection: close",
    ] {
        let run = common::run_with(
            &["connect", &url, "--header", header],
            Some(init.as_bytes()),
        );
        assert_eq!(run.code, Some(2), "{header}: {run:?}");
        let lines = run.stderr_lines();
        assert_eq!(lines.len(), 1, "{header}: {run:?}");
        let name = header.split(':').next().unwrap();
        assert!(
            lines[0].starts_with("switchboard: ") && lines[0].contains(name),
            "{header}: {run:?}"
        );
        assert!(
            matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "{header}: something was sent"
        );
    }
    // Allowed: stdin closed before any request, so nothing to relay (exit 0).
    for header in ["Authorization: Bearer t", "X-Api-Key: k"] {
        let run = common::run_with(&["connect", &url, "--header", header], None);
        assert_eq!(run.code, Some(0), "{header}: {run:?}");
    }
}
