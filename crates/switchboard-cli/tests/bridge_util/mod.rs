//! Helpers for the bridge tests: start `switchboard bridge` as a process and
//! speak raw HTTP to it (Streamable HTTP sessions, 2026-07-28 exchanges, legacy
//! HTTP+SSE), so the tests see exactly what a client of each era sees.
#![allow(dead_code)]

use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard_protocol::codec::{SseItem, SseParser};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Every wait in these tests is bounded by this.
pub const WAIT: Duration = Duration::from_secs(30);

pub const BIN: &str = env!("CARGO_BIN_EXE_switchboard");

/// A running `switchboard bridge`.
pub struct BridgeProc {
    pub child: Child,
    /// `http://127.0.0.1:PORT/mcp`
    pub url: String,
    /// `http://127.0.0.1:PORT`
    pub base: String,
}

impl BridgeProc {
    /// Starts `switchboard bridge --listen 127.0.0.1:0 ARGS -- CMD` (no `--` when
    /// `cmd` is empty: the built-in example server) and reads its URL.
    pub async fn start(args: &[&str], cmd: &[&str]) -> BridgeProc {
        BridgeProc::start_with_env(args, cmd, &[]).await
    }

    /// [`start`](Self::start) with `env` added to the bridge's environment
    /// only (its children get the safe set: not these).
    pub async fn start_with_env(args: &[&str], cmd: &[&str], env: &[(&str, &str)]) -> BridgeProc {
        BridgeProc::start_with(args, cmd, env, Stdio::inherit()).await
    }

    /// [`start`](Self::start) with `env` set for its children too: in the
    /// bridge's environment and passed on by name (`--env NAME`).
    pub async fn start_with_child_env(
        args: &[&str],
        cmd: &[&str],
        env: &[(&str, &str)],
    ) -> BridgeProc {
        let mut all: Vec<&str> = args.to_vec();
        for (name, _) in env {
            all.extend(["--env", name]);
        }
        BridgeProc::start_with(&all, cmd, env, Stdio::inherit()).await
    }

    /// [`start`](Self::start) with its stderr (its logs, at `info`) written
    /// to the file `log`.
    pub async fn start_logged(args: &[&str], cmd: &[&str], log: &std::path::Path) -> BridgeProc {
        let file = std::fs::File::create(log).expect("the log file can be created");
        BridgeProc::start_with(args, cmd, &[("RUST_LOG", "info")], Stdio::from(file)).await
    }

    async fn start_with(
        args: &[&str],
        cmd: &[&str],
        env: &[(&str, &str)],
        stderr: Stdio,
    ) -> BridgeProc {
        let mut command = Command::new(BIN);
        command
            .envs(env.iter().copied())
            .arg("bridge")
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .env(
                "RUST_LOG",
                std::env::var("BRIDGE_TEST_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .envs(env.iter().copied().filter(|(k, _)| *k == "RUST_LOG"))
            .kill_on_drop(true);
        if !cmd.is_empty() {
            command.arg("--").args(cmd);
        }
        let mut child = command.spawn().expect("the switchboard binary runs");
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let url = tokio::time::timeout(WAIT, async {
            while let Some(line) = lines.next_line().await.unwrap() {
                // stdout: `route PATH: URL`, then the other endpoints.
                if let Some((_, url)) = line.strip_prefix("route ").and_then(|l| l.split_once(": "))
                {
                    return url.trim().to_owned();
                }
            }
            panic!("the bridge ended without printing its URL");
        })
        .await
        .expect("the bridge prints its URL in time");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let base = url.trim_end_matches("/mcp").to_owned();
        BridgeProc { child, url, base }
    }

    /// Sends `signal` (e.g. `libc::SIGINT`) with `kill(2)`; panics if it
    /// cannot be sent.
    pub fn signal(&self, signal: i32) {
        let pid = libc::pid_t::try_from(self.child.id().expect("running")).expect("a pid");
        // SAFETY: a plain system call on the bridge this test started, by its id.
        let sent = unsafe { libc::kill(pid, signal) };
        assert_eq!(sent, 0, "kill: {}", std::io::Error::last_os_error());
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let pid = self.child.id().expect("running").to_string();
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(status.success());
    }
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(WAIT).build().unwrap()
}

/// One HTTP answer, its body split into JSON-RPC messages (a JSON body, or the
/// `data` of each SSE event that has any).
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub messages: Vec<Value>,
    pub body: String,
}

impl Reply {
    /// The message with `id` (a response or error), panicking if there is none.
    pub fn response(&self, id: &Value) -> &Value {
        self.messages
            .iter()
            .find(|m| m.get("id") == Some(id) && m.get("method").is_none())
            .unwrap_or_else(|| {
                panic!(
                    "no response with id {id} in {:?} ({})",
                    self.messages, self.status
                )
            })
    }
}

pub fn sse_messages(body: &str) -> Vec<Value> {
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    for item in parser.feed(body.as_bytes()) {
        if let Ok(SseItem::Event(e)) = item {
            if !e.data.is_empty() {
                out.push(serde_json::from_str(&e.data).expect("SSE data is JSON"));
            }
        }
    }
    out
}

pub async fn post(c: &reqwest::Client, url: &str, headers: &[(&str, &str)], body: &Value) -> Reply {
    let mut req = c
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.expect("the POST is answered");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let is_sse = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let body = resp.text().await.expect("the body is read");
    let messages = if is_sse {
        sse_messages(&body)
    } else if body.trim().is_empty() {
        Vec::new()
    } else {
        match serde_json::from_str::<Value>(&body) {
            Ok(Value::Array(items)) => items,
            Ok(v) => vec![v],
            Err(_) => Vec::new(),
        }
    };
    Reply {
        status,
        headers,
        messages,
        body,
    }
}

/// A Streamable HTTP session (2025-11-25 unless told otherwise).
pub struct Session {
    pub id: String,
    pub version: String,
}

pub async fn open_session(
    c: &reqwest::Client,
    url: &str,
    version: &str,
    capabilities: Value,
) -> Session {
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion": version, "capabilities": capabilities,
        "clientInfo": {"name":"bridge-test","version":"1"}}});
    let reply = post(c, url, &[], &init).await;
    assert_eq!(reply.status, 200, "initialize: {}", reply.body);
    let result = &reply.response(&json!(0))["result"];
    assert!(result.get("protocolVersion").is_some(), "{result}");
    let id = reply
        .headers
        .get("mcp-session-id")
        .expect("a session id")
        .to_str()
        .unwrap()
        .to_owned();
    let version = result["protocolVersion"].as_str().unwrap().to_owned();
    let s = Session { id, version };
    let done = post(
        c,
        url,
        &s.headers(),
        &json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    )
    .await;
    assert_eq!(done.status, 202, "{}", done.body);
    s
}

impl Session {
    pub fn headers(&self) -> Vec<(&str, &str)> {
        vec![
            ("mcp-session-id", self.id.as_str()),
            ("mcp-protocol-version", self.version.as_str()),
        ]
    }

    pub async fn request(
        &self,
        c: &reqwest::Client,
        url: &str,
        id: Value,
        method: &str,
        params: Value,
    ) -> Reply {
        let body = json!({"jsonrpc":"2.0","id":id,"method":method,"params":params});
        post(c, url, &self.headers(), &body).await
    }

    /// `tools/call` of the example server's `echo` with `text`, as request `id`.
    pub async fn echo(&self, c: &reqwest::Client, url: &str, id: i64, text: &str) -> Reply {
        let params = json!({"name": "echo", "arguments": {"text": text}});
        self.request(c, url, json!(id), "tools/call", params).await
    }

    /// Ends the session (DELETE with its headers); the HTTP status.
    pub async fn delete(&self, c: &reqwest::Client, url: &str) -> u16 {
        c.delete(url)
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", &self.version)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }
}

/// `_meta` of a 2026-07-28 request.
pub fn modern_meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "bridge-test", "version": "1"}
    })
}

/// A 2026-07-28 request with the headers it needs.
pub async fn modern(
    c: &reqwest::Client,
    url: &str,
    id: Value,
    method: &str,
    params: Value,
    capabilities: Value,
) -> Reply {
    modern_with(c, url, id, method, params, capabilities, &[]).await
}

/// [`modern`] with `extra` headers too (e.g. `Mcp-Param-*`).
pub async fn modern_with(
    c: &reqwest::Client,
    url: &str,
    id: Value,
    method: &str,
    mut params: Value,
    capabilities: Value,
    extra: &[(&str, &str)],
) -> Reply {
    let meta = params
        .as_object_mut()
        .unwrap()
        .entry("_meta")
        .or_insert_with(|| json!({}));
    for (k, v) in modern_meta(capabilities).as_object().unwrap() {
        meta[k] = v.clone();
    }
    let name = params
        .get("name")
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let body = json!({"jsonrpc":"2.0","id":id,"method":method,"params":params});
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if let Some(n) = name.as_deref() {
        if matches!(method, "tools/call" | "prompts/get" | "resources/read") {
            headers.push(("mcp-name", n));
        }
    }
    headers.extend_from_slice(extra);
    post(c, url, &headers, &body).await
}

/// An open SSE response read incrementally.
pub struct SseStream {
    pub resp: reqwest::Response,
    parser: SseParser,
    queue: std::collections::VecDeque<(String, String)>,
}

impl SseStream {
    pub fn new(resp: reqwest::Response) -> Self {
        SseStream {
            resp,
            parser: SseParser::new(),
            queue: Default::default(),
        }
    }

    /// The next event as (event type, data); `None` at the end of the stream.
    pub async fn next_event(&mut self) -> Option<(String, String)> {
        loop {
            if let Some(e) = self.queue.pop_front() {
                return Some(e);
            }
            let chunk = tokio::time::timeout(WAIT, self.resp.chunk())
                .await
                .expect("an SSE event in time")
                .ok()??;
            for item in self.parser.feed(&chunk) {
                if let Ok(SseItem::Event(e)) = item {
                    self.queue.push_back((e.event, e.data));
                }
            }
        }
    }

    /// The next JSON-RPC message (skipping events without data).
    pub async fn next_message(&mut self) -> Option<Value> {
        loop {
            let (_, data) = self.next_event().await?;
            if !data.is_empty() {
                return Some(serde_json::from_str(&data).expect("JSON"));
            }
        }
    }
}

/// Opens a request whose SSE reply is read incrementally.
pub async fn post_streaming(
    c: &reqwest::Client,
    url: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> SseStream {
    let mut req = c
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.expect("answered");
    assert_eq!(resp.status().as_u16(), 200);
    SseStream::new(resp)
}

/// A legacy HTTP+SSE (2024-11-05) session: the GET stream and the POST endpoint.
pub struct LegacySse {
    pub stream: SseStream,
    pub endpoint: String,
}

pub async fn open_legacy(c: &reqwest::Client, base: &str) -> LegacySse {
    let resp = c
        .get(format!("{base}/sse"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let mut stream = SseStream::new(resp);
    let (event, data) = stream.next_event().await.expect("the endpoint event");
    assert_eq!(event, "endpoint");
    let endpoint = if data.starts_with("http") {
        data
    } else {
        format!("{base}{data}")
    };
    LegacySse { stream, endpoint }
}

impl LegacySse {
    pub async fn send(&self, c: &reqwest::Client, message: &Value) -> u16 {
        c.post(&self.endpoint)
            .header("content-type", "application/json")
            .body(message.to_string())
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }

    /// Messages until the response with `id` (which is last).
    pub async fn until_response(&mut self, id: &Value) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let m = self
                .stream
                .next_message()
                .await
                .expect("the stream goes on");
            let done = m.get("id") == Some(id) && m.get("method").is_none();
            seen.push(m);
            if done {
                return seen;
            }
        }
    }
}

/// The text of the first content block of a tool result.
pub fn first_text(result: &Value) -> &str {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {result}"))
}

/// A temporary file path unique to this test process and `tag` (removed first
/// if it exists).
/// An executable file that is no program (no `#!`, no ELF header): it passes
/// the bridge's start-up check (`ChildConfig::find_program`), and every spawn of
/// it fails ("Exec format error"), as a spawn can fail after start-up (the file
/// replaced, no file descriptors left).
pub fn unspawnable_program(tag: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let p = temp_path(tag);
    std::fs::write(&p, b"\x00\x01 not a program\n").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p.to_string_lossy().into_owned()
}

pub fn temp_path(tag: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("sb-bridge-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

/// The pids written one per line to `file` (by a child started through `sh`).
pub fn pids_in(file: &std::path::Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Polls `f` every 50 ms until it holds; panics naming `what` after [`WAIT`].
pub async fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + WAIT;
    while !f() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// SIGKILL to `pid`.
pub fn kill_hard(pid: i32) {
    std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
}

/// The key of the first input request of an `input_required` result
/// (2026-07-28 multi round-trip requests).
pub fn first_input_key(result: &Value) -> String {
    result["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone()
}

/// POSTs a 2026-07-28 `subscriptions/listen` request (`body`, the whole
/// JSON-RPC message) and returns its open stream.
pub async fn open_listen(c: &reqwest::Client, url: &str, body: &Value) -> SseStream {
    post_streaming(
        c,
        url,
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "subscriptions/listen"),
        ],
        body,
    )
    .await
}
