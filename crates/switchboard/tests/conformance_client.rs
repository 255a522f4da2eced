//! The conformance client (`examples/conformance_client.rs`) run as a child process
//! against a library server on 127.0.0.1 over Streamable HTTP, as the official
//! suite runs it (`MCP_CONFORMANCE_SCENARIO`, `MCP_CONFORMANCE_PROTOCOL_VERSION`,
//! the URL as `argv[1]`): the `tools_call` scenario in both eras (the server
//! records the arguments it got), and the exit statuses (1 for a failed step, 2 for
//! an unknown scenario, 3 for the `auth/*` extensions it does not implement).
//!
//! Where the binary comes from: `target/<profile>/examples/conformance_client`,
//! which `cargo test` of the workspace builds before running tests (as in
//! `e2e_stdio.rs`); with a narrower command, build it first with `cargo build -p
//! switchboard --example conformance_client` (the tests fail, naming that command,
//! when it is missing). Every wait is bounded.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchboard::server::{Arguments, ServeOptions, Server, ToolContext, ToolError};
use switchboard_protocol::types::{CallToolResult, Implementation, TextContent, Tool};
use switchboard_transport::http::server::{HttpServer, HttpServerConfig};

/// The bound on one run of the client (it bounds itself at 45 s).
const LIMIT: Duration = Duration::from_secs(60);

fn client_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps")
        .join("examples")
        .join(format!(
            "conformance_client{}",
            std::env::consts::EXE_SUFFIX
        ));
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build -p switchboard --example conformance_client` first",
        path.display()
    );
    path
}

/// Runs the client for `scenario` against `url` with `env` set, bounded by
/// [`LIMIT`] (on the bound the child is killed and the test fails).
async fn run_client(scenario: &str, url: &str, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(client_binary());
    cmd.arg(url)
        .env("MCP_CONFORMANCE_SCENARIO", scenario)
        .env_remove("MCP_CONFORMANCE_PROTOCOL_VERSION")
        .env_remove("MCP_CONFORMANCE_CONTEXT")
        .env_remove("CONFORMANCE_CLIENT_DEBUG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let scenario = scenario.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().expect("start the conformance client");
        let drain = |mut pipe: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let _ = pipe.read_to_end(&mut buf);
                buf
            })
        };
        let stdout = drain(Box::new(child.stdout.take().unwrap()));
        let stderr = drain(Box::new(child.stderr.take().unwrap()));
        let deadline = Instant::now() + LIMIT;
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for the client") {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the client ran longer than {LIMIT:?} for {scenario}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        Output {
            status,
            stdout: stdout.join().unwrap(),
            stderr: stderr.join().unwrap(),
        }
    })
    .await
    .expect("the client runner")
}

/// A server with the `tools_call` scenario's `add_numbers` tool (or, with
/// `with_tool` false, no tool) on 127.0.0.1:0, serving legacy sessions and
/// 2026-07-28 requests; returns its URL, the HTTP server (drop it to stop) and the
/// arguments of every call.
async fn start(with_tool: bool) -> (String, HttpServer, Arc<Mutex<Vec<Value>>>) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let mut builder = Server::builder(Implementation::new("add-numbers-server", "1.0.0"));
    if with_tool {
        let tool: Tool = serde_json::from_value(json!({
            "name": "add_numbers",
            "description": "Add two numbers together",
            "inputSchema": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
        }))
        .unwrap();
        let seen = calls.clone();
        builder = builder.tool(tool, move |args: Arguments, _cx: ToolContext| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(Value::Object(args.clone()));
                let (a, b) = (args["a"].as_f64(), args["b"].as_f64());
                let (Some(a), Some(b)) = (a, b) else {
                    return Err(ToolError::new("a and b must be numbers"));
                };
                Ok(CallToolResult {
                    content: vec![
                        TextContent::new(format!("The sum of {a} and {b} is {}", a + b)).into(),
                    ],
                    ..Default::default()
                })
            }
        });
    } else {
        // A tool that is not the scenario's, so that `tools` is declared.
        let tool: Tool = serde_json::from_value(json!({
            "name": "something_else",
            "inputSchema": {"type": "object"},
        }))
        .unwrap();
        builder = builder.tool(tool, |_args: Arguments, _cx: ToolContext| async {
            Ok(CallToolResult::default())
        });
    }
    let server = builder.build().unwrap();
    let (http, acceptor) = HttpServer::bind(HttpServerConfig::default()).await.unwrap();
    assert!(http.local_addr().ip().is_loopback());
    tokio::spawn(server.serve_http(acceptor, ServeOptions::default()));
    (http.url(), http, calls)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_call_lists_and_calls_add_numbers_in_both_eras() {
    for version in [None, Some("2025-11-25"), Some("2026-07-28")] {
        let (url, _http, calls) = start(true).await;
        let env: Vec<(&str, &str)> = version
            .map(|v| vec![("MCP_CONFORMANCE_PROTOCOL_VERSION", v)])
            .unwrap_or_default();
        let out = run_client("tools_call", &url, &env).await;
        assert!(
            out.status.success(),
            "{version:?}: exit {:?}, stderr: {}",
            out.status.code(),
            stderr(&out)
        );
        assert_eq!(
            *calls.lock().unwrap(),
            vec![json!({"a": 5, "b": 3})],
            "{version:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_step_exits_1_with_a_one_line_reason() {
    let (url, _http, calls) = start(false).await;
    let out = run_client("tools_call", &url, &[]).await;
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("add_numbers"), "{err}");
    assert!(calls.lock().unwrap().is_empty());

    // Nothing listens: the connection fails (exit 1), bounded.
    let (url, http, _) = start(true).await;
    drop(http);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let out = run_client("tools_call", &url, &[]).await;
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    assert!(stderr(&out).contains("connect"), "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_scenarios_exit_2_and_auth_extensions_exit_3_without_a_request() {
    let (url, _http, calls) = start(true).await;
    let out = run_client("no-such-scenario", &url, &[]).await;
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    assert!(
        stderr(&out).contains("unknown scenario"),
        "{}",
        stderr(&out)
    );

    // The authorization extensions outside MCP authorization proper.
    for scenario in [
        "auth/client-credentials-jwt",
        "auth/dpop",
        "auth/wif-jwt-bearer",
    ] {
        let out = run_client(scenario, &url, &[]).await;
        assert_eq!(out.status.code(), Some(3), "stderr: {}", stderr(&out));
        assert!(
            stderr(&out).contains("does not implement"),
            "{}",
            stderr(&out)
        );
    }

    let out = run_client(
        "tools_call",
        &url,
        &[("MCP_CONFORMANCE_PROTOCOL_VERSION", "1999-01-01")],
    )
    .await;
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    assert!(calls.lock().unwrap().is_empty());
}

/// One HTTP/1.1 exchange read from `stream`: the request's headers (lower-case
/// names) and its JSON body; `None` at the end of the connection.
async fn read_request(
    stream: &mut tokio::io::BufReader<tokio::net::TcpStream>,
) -> Option<(Vec<(String, String)>, Value)> {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt};
    let mut headers = Vec::new();
    let mut line = String::new();
    if stream.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    loop {
        line.clear();
        stream.read_line(&mut line).await.ok()?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    stream.read_exact(&mut body).await.ok()?;
    Some((
        headers,
        serde_json::from_slice(&body).unwrap_or(Value::Null),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_metadata_retries_after_unsupported_protocol_version() {
    use tokio::io::AsyncWriteExt;
    // The `request-metadata` scenario's server: the first request is refused with
    // 400 / -32022 naming 2026-07-28 (the version it asked for); later ones are
    // answered. It records (MCP-Protocol-Version header, body) of each request.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::<(Option<String>, Value)>::new()));
    let recorded = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let recorded = recorded.clone();
            tokio::spawn(async move {
                let mut stream = tokio::io::BufReader::new(stream);
                while let Some((headers, body)) = read_request(&mut stream).await {
                    let version = headers
                        .iter()
                        .find(|(k, _)| k == "mcp-protocol-version")
                        .map(|(_, v)| v.clone());
                    let first = {
                        let mut r = recorded.lock().unwrap();
                        r.push((version, body.clone()));
                        r.len() == 1
                    };
                    let (status, reply) = if first {
                        (
                            "400 Bad Request",
                            json!({"jsonrpc": "2.0", "id": body["id"], "error": {
                                "code": -32022, "message": "Unsupported protocol version",
                                "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}}}),
                        )
                    } else {
                        (
                            "200 OK",
                            json!({"jsonrpc": "2.0", "id": body["id"], "result": {
                                "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                                "supportedVersions": ["2026-07-28"], "capabilities": {},
                                "serverInfo": {"name": "test", "version": "1.0"}}}),
                        )
                    };
                    let reply = reply.to_string();
                    let head = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                        reply.len()
                    );
                    let s = stream.get_mut();
                    if s.write_all(head.as_bytes()).await.is_err()
                        || s.write_all(reply.as_bytes()).await.is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    let out = run_client(
        "request-metadata",
        &url,
        &[("MCP_CONFORMANCE_PROTOCOL_VERSION", "2026-07-28")],
    )
    .await;
    assert!(
        out.status.success(),
        "exit {:?}, stderr: {}",
        out.status.code(),
        stderr(&out)
    );
    let seen = seen.lock().unwrap();
    // The refused discover, its retry, then the scenario's own request.
    assert!(seen.len() >= 3, "{seen:?}");
    for (version, body) in seen.iter() {
        assert_eq!(version.as_deref(), Some("2026-07-28"), "{body}");
        assert_eq!(body["method"], "server/discover", "{body}");
        let meta = &body["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert!(meta["io.modelcontextprotocol/clientCapabilities"].is_object());
        assert!(meta["io.modelcontextprotocol/clientInfo"]["name"].is_string());
    }
    assert_ne!(seen[0].1["id"], seen[1].1["id"], "a retry gets a new id");
}
