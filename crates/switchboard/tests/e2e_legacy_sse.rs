//! End to end over the legacy HTTP+SSE transport (MCP 2024-11-05): the example
//! server's tools (`examples/echo_server.rs`, included below) served by
//! `Server::serve_http` on 127.0.0.1 (the same `HttpServer` that serves Streamable
//! HTTP at `/mcp` serves legacy clients at `/sse` + `/message`), and
//!
//! - our own client: `http::sse_client::connect` + `switchboard::Client::connect`,
//!   calling tools with progress;
//! - the official MCP Python SDK's SSE client (`tests/interop/python_sse_client.py`;
//!   `mcp` 2.3.0 from `scripts/install-peers`, found through `SWITCHBOARD_PYTHON`
//!   as in `e2e_python.rs`: required when that is set, skipped with a message
//!   otherwise when `python3` has no `mcp`);
//!
//! and our client (`sse_client::connect` + `Client::connect`) against the Python
//! SDK's own legacy SSE server (`MCPServer.sse_app`, its `SseServerTransport`:
//! endpoint `/messages/?session_id=..`), the script below run with `python -c` on
//! a socket it binds to 127.0.0.1:0 and whose port it prints.
//!
//! Every test is bounded by a timeout.

#[path = "../examples/echo_server.rs"]
#[allow(dead_code)]
mod echo_server;

use std::future::Future;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use switchboard::client::{CallOptions, Client, ClientOptions};
use switchboard::server::ServeOptions;
use switchboard_protocol::types::Implementation;
use switchboard_protocol::version::Supported;
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::http::server::{HttpServer, HttpServerConfig};
use switchboard_transport::http::sse_client::{self, SseClientConfig};

const LIMIT: Duration = Duration::from_secs(60);

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("test timed out")
}

/// The example server on 127.0.0.1:0; returns the HTTP server (drop it to stop)
/// and the `serve_http` task.
async fn start() -> (HttpServer, tokio::task::JoinHandle<()>) {
    let (http, acceptor) = HttpServer::bind(HttpServerConfig::default()).await.unwrap();
    assert!(http.local_addr().ip().is_loopback());
    let server = echo_server::builder().build().unwrap();
    let task = tokio::spawn(server.serve_http(acceptor, ServeOptions::default()));
    (http, task)
}

fn text_of(result: &switchboard_protocol::types::CallToolResult) -> String {
    let v = serde_json::to_value(&result.content).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_calls_tools_with_progress_over_legacy_sse() {
    bounded(async {
        let (http, task) = start().await;
        let url = format!("http://{}/sse", http.local_addr());
        let transport = sse_client::connect(&url, SseClientConfig::default())
            .await
            .unwrap();
        let mut options = ClientOptions::new(Implementation::new("e2e-legacy-sse", "0"));
        // The legacy transport's own revision; the server agrees to it.
        options.supported = Supported::new([ProtocolVersion::V2024_11_05]).unwrap();
        let client = Client::connect(transport, options).await.unwrap();
        assert_eq!(client.protocol_version(), ProtocolVersion::V2024_11_05);
        assert_eq!(client.server_info().name, "echo-server");
        assert_eq!(http.session_count(), 1);

        let result = client
            .call_tool("echo", json!({"text": "over legacy sse"}))
            .await
            .unwrap();
        assert_eq!(text_of(&result), "over legacy sse");

        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let options = CallOptions::new().on_progress(move |p| {
            sink.lock().unwrap().push((p.progress_f64(), p.total_f64()));
        });
        let result = client
            .call_tool_with("slow_progress", json!({"steps": 3, "delay_ms": 5}), options)
            .await
            .unwrap();
        assert_eq!(text_of(&result), "done");
        let seen = seen.lock().unwrap().clone();
        let progress: Vec<_> = seen.iter().map(|(p, _)| *p).collect();
        assert_eq!(progress, [1.0, 2.0, 3.0], "{seen:?}");
        assert!(seen.iter().all(|(_, t)| *t == Some(3.0)), "{seen:?}");

        let failed = client.call_tool("fail", json!({})).await.unwrap();
        assert_eq!(failed.is_error, Some(true));

        // Closing the client closes its stream: the server's session ends.
        drop(client);
        tokio::time::timeout(Duration::from_secs(10), async {
            while http.session_count() != 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("the session ends once the client is gone");
        drop(http);
        task.await.unwrap();
    })
    .await;
}

/// The interpreter, and whether the environment requires this test to run.
fn python() -> (String, bool) {
    match std::env::var("SWITCHBOARD_PYTHON") {
        Ok(p) if !p.is_empty() => (p, true),
        _ => ("python3".to_owned(), false),
    }
}

fn python_has_mcp(python: &str) -> bool {
    std::process::Command::new(python)
        .args(["-c", "import mcp.client.sse"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_sse_client_calls_tools_with_progress() {
    let (python, required) = python();
    if !python_has_mcp(&python) {
        assert!(!required, "SWITCHBOARD_PYTHON={python} cannot import mcp");
        eprintln!("SKIPPED: `{python} -c 'import mcp'` failed (scripts/install-peers installs it)");
        return;
    }
    bounded(async {
        let (http, _task) = start().await;
        let url = format!("http://{}/sse", http.local_addr());
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/python_sse_client.py");
        let child = std::process::Command::new(&python)
            .arg(&script)
            .arg(&url)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python starts");
        let pid = child.id();
        let waiter = tokio::task::spawn_blocking(move || child.wait_with_output());
        let out = match tokio::time::timeout(Duration::from_secs(45), waiter).await {
            Ok(joined) => joined.unwrap().expect("python output"),
            Err(_) => {
                // Only the child we started, by its id.
                let _ = std::process::Command::new("kill")
                    .arg(pid.to_string())
                    .status();
                panic!("the Python SSE client did not finish within 45 s");
            }
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "python SSE client failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
            out.status
        );
        assert!(stdout.contains("python sse interop ok"), "{stdout}");
        eprintln!("{}", stdout.trim());
    })
    .await;
}

/// A Python SDK server (`MCPServer`, tools `echo` and `progress`) on its legacy
/// SSE app, served by uvicorn on a socket bound to 127.0.0.1:0; prints the port
/// on the first line of stdout, logs only warnings to stderr.
const PYTHON_SSE_SERVER: &str = r#"
import asyncio, socket, uvicorn
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("python-sse-server", version="1.0.0", log_level="WARNING")

@server.tool(description="Returns its text argument.")
def echo(text: str) -> str:
    return text

@server.tool(description="Reports progress 1..steps of steps.")
async def progress(steps: int, ctx: Context) -> str:
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i}")
    return f"counted to {steps}"

sock = socket.socket()
sock.bind(("127.0.0.1", 0))
sock.listen()
print(sock.getsockname()[1], flush=True)
app = server.sse_app(host="127.0.0.1")
asyncio.run(uvicorn.Server(uvicorn.Config(app, log_level="warning")).serve(sockets=[sock]))
"#;

/// Kills the child we started when dropped (by its own handle).
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_calls_the_python_sdk_sse_server_with_progress() {
    let (python, required) = python();
    if !python_has_mcp(&python) {
        assert!(!required, "SWITCHBOARD_PYTHON={python} cannot import mcp");
        eprintln!("SKIPPED: `{python} -c 'import mcp'` failed (scripts/install-peers installs it)");
        return;
    }
    bounded(async {
        let mut child = std::process::Command::new(&python)
            .args(["-c", PYTHON_SSE_SERVER])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python starts");
        let stdout = child.stdout.take().unwrap();
        let child = KillOnDrop(child);
        let read_port = tokio::task::spawn_blocking(move || {
            use std::io::BufRead;
            let mut line = String::new();
            std::io::BufReader::new(stdout)
                .read_line(&mut line)
                .map(|_| line)
        });
        let line = tokio::time::timeout(Duration::from_secs(30), read_port)
            .await
            .expect("the Python server prints its port within 30 s")
            .unwrap()
            .unwrap();
        let port: u16 = line.trim().parse().expect("a port number");

        let url = format!("http://127.0.0.1:{port}/sse");
        let transport = sse_client::connect(&url, SseClientConfig::default())
            .await
            .unwrap();
        let options = ClientOptions::new(Implementation::new("e2e-legacy-sse", "0"));
        let client = Client::connect(transport, options).await.unwrap();
        assert_eq!(client.server_info().name, "python-sse-server");

        let result = client
            .call_tool("echo", json!({"text": "to python"}))
            .await
            .unwrap();
        assert_eq!(text_of(&result), "to python");

        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let options = CallOptions::new().on_progress(move |p| {
            sink.lock().unwrap().push((p.progress_f64(), p.total_f64()));
        });
        let result = client
            .call_tool_with("progress", json!({"steps": 3}), options)
            .await
            .unwrap();
        assert_eq!(text_of(&result), "counted to 3");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))],
            "{seen:?}"
        );
        drop(client);
        drop(child);
    })
    .await;
}
