//! `switchboard connect URL` and `switchboard tools list URL` against a real
//! Streamable HTTP server of the Python SDK 1.x: PyPI `mcp-proxy` 0.13.0 (on
//! `mcp` 1.30.0) serving `switchboard example-server` at `/mcp`.
//!
//! That server answers a POST without a session that is not `initialize` (the
//! 2026-07-28 `server/discover` probe) with HTTP 400 and a JSON-RPC error whose
//! id is `"server-error"`, not the request's. That answer is the probe's failure:
//! `connect` relays it to the host app under the probe's id (the host app then
//! falls back to `initialize`, which is relayed), and `tools list` falls back to
//! `initialize` at once instead of after its 10 s probe timeout.
//!
//! The peer is found through `SWITCHBOARD_PY1_BIN` (`scripts/install-peers`,
//! `interop/requirements-py1.txt`): the test prints `SKIPPED: ...` and passes
//! when it is unset, and is required when it is set. Every wait is bounded.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How long any one answer (or the proxy's start) may take.
const WAIT: Duration = Duration::from_secs(30);

/// `$SWITCHBOARD_PY1_BIN/mcp-proxy`, or `None` after printing why the test is
/// skipped; a panic when the variable is set but the program is missing.
fn mcp_proxy() -> Option<PathBuf> {
    match std::env::var_os("SWITCHBOARD_PY1_BIN") {
        Some(dir) if !dir.is_empty() => {
            let program = PathBuf::from(dir).join("mcp-proxy");
            assert!(
                program.exists(),
                "{} does not exist (run scripts/install-peers)",
                program.display()
            );
            Some(program)
        }
        _ => {
            eprintln!("SKIPPED: SWITCHBOARD_PY1_BIN is unset (scripts/install-peers installs mcp-proxy 0.13.0; scripts/test sets it)");
            None
        }
    }
}

/// `mcp-proxy --port P --host 127.0.0.1 -- switchboard example-server`, ended
/// (SIGTERM by its pid, then SIGKILL) when dropped.
struct Proxy {
    url: String,
    child: Child,
}

impl Proxy {
    fn start(program: &PathBuf) -> Proxy {
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let child = Command::new(program)
            .args(["--port", &port.to_string(), "--host", "127.0.0.1", "--"])
            .args([common::exe(), "example-server"])
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mcp-proxy");
        let proxy = Proxy {
            url: format!("http://127.0.0.1:{port}/mcp"),
            child,
        };
        let deadline = Instant::now() + WAIT;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "mcp-proxy did not listen on {port} within {WAIT:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        proxy
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while let Ok(None) = self.child.try_wait() {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The answer to `id` among the lines `out` yields, waiting at most [`WAIT`]
/// (notifications and other answers are skipped).
fn answer(out: &mpsc::Receiver<Value>, id: Value) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let m = out
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no answer to {id} within {WAIT:?}"));
        if m["id"] == id && m.get("method").is_none() {
            return m;
        }
    }
}

/// A 2026-aware host app in front of `connect`: its `server/discover` probe is
/// refused (the Python SDK's HTTP 400, id `"server-error"`) and answered at once
/// under the probe's id; its `initialize`, `tools/list` and `tools/call` then go
/// through a Streamable HTTP session. Before, the probe was never answered (the
/// refusal was relayed under the server's id), `connect` waited 30 s for it and
/// exited 2 without forwarding `initialize`.
#[test]
fn connect_serves_a_host_app_in_front_of_python_sdk_1_mcp_proxy() {
    let Some(program) = mcp_proxy() else { return };
    let proxy = Proxy::start(&program);
    let mut child = Command::new(common::exe())
        .args(["connect", &proxy.url])
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
    let mut stdin = child.stdin.take().unwrap();
    let mut send = |m: Value| {
        stdin.write_all(format!("{m}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    };
    send(
        json!({"jsonrpc":"2.0","id":"probe","method":"server/discover","params":{"_meta":{
        "io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientCapabilities":{}}}}),
    );
    let refused = answer(&out, json!("probe"));
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    send(
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},
        "clientInfo":{"name":"host","version":"1"}}}),
    );
    let init = answer(&out, json!(1));
    assert_eq!(
        init["result"]["serverInfo"]["name"], "switchboard-example",
        "{init}"
    );
    send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    send(json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}));
    let list = answer(&out, json!(2));
    let tools = list["result"]["tools"].as_array().expect("tools");
    assert!(tools.iter().any(|t| t["name"] == "echo"), "{list}");
    send(json!({"jsonrpc":"2.0","id":3,"method":"tools/call",
        "params":{"name":"echo","arguments":{"text":"through mcp-proxy"}}}));
    let call = answer(&out, json!(3));
    assert_eq!(
        call["result"]["content"][0]["text"], "through mcp-proxy",
        "{call}"
    );
    drop(stdin);
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("connect did not exit within {WAIT:?} of stdin's end");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
}

/// `switchboard tools list URL` (era `auto`: the 2026-07-28 probe first) in
/// front of the same server: the probe's HTTP 400 is its failure at once, so
/// the `initialize` fallback follows without waiting for the probe timeout
/// (10 s; it used to take all of it).
#[test]
fn tools_list_does_not_wait_for_the_probe_timeout() {
    let Some(program) = mcp_proxy() else { return };
    let proxy = Proxy::start(&program);
    let run = common::run(&["tools", "list", &proxy.url]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.contains("echo"), "{}", run.stdout);
    assert!(
        run.elapsed < Duration::from_secs(6),
        "took {:?}: the probe's 10 s timeout was waited for",
        run.elapsed
    );
}
