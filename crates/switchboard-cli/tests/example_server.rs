//! `switchboard example-server` end to end: over stdio through the library's
//! `Client` (subscriptions, completions), stdout carrying only JSON-RPC, Streamable
//! HTTP on 127.0.0.1 port 0 with the URL on stderr, and the official Python SDK
//! client (when `SWITCHBOARD_PYTHON` or a `python3` with `mcp` is available; see
//! `crates/switchboard/tests/e2e_python.rs`).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{exe, BOUND};
use serde_json::{json, Value};
use switchboard::{Client, ClientOptions};
use switchboard_protocol::types::{CompleteRequestParams, Implementation, ServerNotification};
use switchboard_transport::stdio::{spawn, ChildConfig, ChildTransport};
use switchboard_transport::{Transport, TransportConfig};

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .expect("bounded wait")
}

#[tokio::test]
async fn subscriptions_and_completions_over_stdio() {
    let ChildTransport {
        sender,
        receiver,
        process,
    } = spawn(
        ChildConfig::new("example", exe()).arg("example-server"),
        &TransportConfig::default(),
    )
    .expect("spawn");
    let updates = Arc::new(Mutex::new(Vec::new()));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let seen = updates.clone();
    let options =
        ClientOptions::new(Implementation::new("test", "1")).with_notifications(move |n| {
            if let ServerNotification::ResourceUpdated(p) = n {
                seen.lock().unwrap().push(p.uri.clone());
                let _ = tx.send(());
            }
        });
    let client = within(Client::connect(Transport { sender, receiver }, options))
        .await
        .expect("handshake");
    assert_eq!(client.server_info().name, "switchboard-example");
    let caps = client.server_capabilities();
    assert!(caps.supports_resource_subscribe() && caps.supports_completions());

    // Not subscribed: a change is not announced.
    let r = within(client.call_tool("bump_counter", json!({})))
        .await
        .unwrap();
    assert!(!r.is_error());
    let read = within(client.read_resource("example://counter"))
        .await
        .unwrap();
    let v = serde_json::to_value(&read).unwrap();
    assert_eq!(v["contents"][0]["text"], "1");

    within(client.subscribe("example://counter")).await.unwrap();
    within(client.call_tool("bump_counter", json!({})))
        .await
        .unwrap();
    within(rx.recv()).await.expect("an update");
    assert_eq!(*updates.lock().unwrap(), ["example://counter"]);
    let read = within(client.read_resource("example://counter"))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&read).unwrap()["contents"][0]["text"],
        "2"
    );

    within(client.unsubscribe("example://counter"))
        .await
        .unwrap();
    within(client.call_tool("bump_counter", json!({})))
        .await
        .unwrap();
    // A ping round trip after the call: any update would have arrived before it.
    within(client.ping()).await.unwrap();
    assert_eq!(
        updates.lock().unwrap().len(),
        1,
        "no update after unsubscribe"
    );

    let complete = |reference: Value, name: &str, value: &str| -> CompleteRequestParams {
        serde_json::from_value(json!({"ref": reference,
            "argument": {"name": name, "value": value}}))
        .unwrap()
    };
    let r = within(client.complete(&complete(
        json!({"type": "ref/prompt", "name": "greet"}),
        "style",
        "f",
    )))
    .await
    .unwrap();
    assert_eq!(
        serde_json::to_value(&r).unwrap()["completion"]["values"],
        json!(["formal"])
    );
    let r = within(client.complete(&complete(
        json!({"type": "ref/resource", "uri": "example://greeting/{name}"}),
        "name",
        "",
    )))
    .await
    .unwrap();
    assert_eq!(
        serde_json::to_value(&r).unwrap()["completion"]["values"],
        json!(["alice", "bob", "carol", "dave"])
    );

    drop(client);
    let report = within(process.shutdown()).await.expect("shutdown");
    assert!(report.status.success(), "{report}");
}

/// `switchboard example-server` with stdin and stdout piped, stderr dropped.
fn spawn_piped() -> std::process::Child {
    Command::new(exe())
        .arg("example-server")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn")
}

#[test]
fn stdout_carries_only_json_rpc() {
    let mut child = spawn_piped();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let input = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "\n",
        "this line is not JSON\n",
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"log","arguments":{}}}"#,
        "\n",
    );
    stdin.write_all(input.as_bytes()).unwrap();
    stdin.flush().unwrap();
    // Every line until the answers to ids 1 and 2 (requests are handled
    // concurrently, so their answers may come in either order; the bad line's
    // answer may come first).
    let mut lines: Vec<Value> = Vec::new();
    while !(lines.iter().any(|m| m["id"] == 1) && lines.iter().any(|m| m["id"] == 2)) {
        let line = rx.recv_timeout(BOUND).expect("a line within the bound");
        lines.push(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}")));
    }
    // End of stdin ends the server, cleanly.
    drop(stdin);
    let (tx, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = done
        .recv_timeout(BOUND)
        .expect("exits at end of stdin")
        .unwrap();
    assert!(status.success(), "{status}");

    let init = lines
        .iter()
        .find(|m| m["id"] == 1)
        .expect("the initialize answer");
    assert_eq!(init["result"]["serverInfo"]["name"], "switchboard-example");
    let logs = lines
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .count();
    assert_eq!(logs, 4, "{lines:?}");
    let call = lines.iter().find(|m| m["id"] == 2).unwrap();
    assert!(call["result"]["content"].is_array(), "{call}");
    assert!(
        lines
            .iter()
            .any(|m| m["id"].is_null() && m["error"]["code"] == -32700),
        "the bad line is answered -32700: {lines:?}"
    );
}

/// One HTTP/1.1 POST of `body` to `url` (`http://HOST:PORT/PATH`), with the headers
/// Streamable HTTP requires; returns the status line, the headers and the body.
fn post(url: &str, body: &str, extra: &[(&str, &str)]) -> (String, String, String) {
    let rest = url.strip_prefix("http://").expect("http URL");
    let (authority, path) = rest.split_at(rest.find('/').expect("a path"));
    let mut stream = TcpStream::connect(authority).expect("connect");
    stream.set_read_timeout(Some(BOUND)).unwrap();
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n",
        body.len()
    );
    for (k, v) in extra {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("a response");
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    (
        status.to_owned(),
        headers.to_ascii_lowercase(),
        body.to_owned(),
    )
}

#[test]
fn serves_streamable_http_and_prints_its_url() {
    let server = common::HttpExample::start();
    let url = server.url.clone();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    let (status, headers, body) = post(&url, init, &[]);
    assert!(status.contains(" 200 "), "{status}\n{headers}\n{body}");
    let session = headers
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id: "))
        .expect("a session id")
        .trim()
        .to_owned();
    assert!(body.contains("switchboard-example"), "{body}");

    let (status, _, _) = post(
        &url,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        &[
            ("Mcp-Session-Id", &session),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
    );
    assert!(status.contains(" 202 "), "{status}");
    let (status, _, body) = post(
        &url,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"over http"}}}"#,
        &[
            ("Mcp-Session-Id", &session),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
    );
    assert!(status.contains(" 200 "), "{status}");
    assert!(body.contains("over http"), "{body}");

    // SIGTERM stops it, cleanly.
    let status = server.stop();
    assert!(status.success(), "{status}");
}

/// A client that asks the library's HTTP server for 2024-11-05 gets it, and
/// then names it in `MCP-Protocol-Version` on `notifications/initialized`, its
/// calls and the DELETE: all accepted on that session (400 before), while a
/// newer revision than the one negotiated is not.
#[test]
fn a_client_of_2024_11_05_is_served_over_http() {
    let server = common::HttpExample::start();
    let url = server.url.clone();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}"#;
    let (status, headers, body) = post(&url, init, &[]);
    assert!(status.contains(" 200 "), "{status}\n{headers}\n{body}");
    assert!(body.contains(r#""protocolVersion":"2024-11-05""#), "{body}");
    let session = headers
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id: "))
        .expect("a session id")
        .trim()
        .to_owned();
    let named = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2024-11-05"),
    ];
    let (status, _, body) = post(
        &url,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        &named,
    );
    assert!(status.contains(" 202 "), "{status}\n{body}");
    let (status, _, body) = post(
        &url,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"old client"}}}"#,
        &named,
    );
    assert!(status.contains(" 200 "), "{status}\n{body}");
    assert!(body.contains("old client"), "{body}");
    let (status, _, body) = post(
        &url,
        r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
        &[
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
    );
    assert!(
        status.contains(" 400 "),
        "newer than negotiated: {status}\n{body}"
    );
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap());
    let mut stream = TcpStream::connect(authority).unwrap();
    stream.set_read_timeout(Some(BOUND)).unwrap();
    write!(
        stream,
        "DELETE {path} HTTP/1.1\r\nHost: {authority}\r\nMcp-Session-Id: {session}\r\n\
         MCP-Protocol-Version: 2024-11-05\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let status = server.stop();
    assert!(status.success(), "{status}");
}

/// The interpreter, and whether the environment requires this test to run.
fn python() -> (String, bool) {
    match std::env::var("SWITCHBOARD_PYTHON") {
        Ok(p) if !p.is_empty() => (p, true),
        _ => ("python3".to_owned(), false),
    }
}

#[test]
fn the_python_sdk_client_lists_tools_and_follows_progress() {
    let (python, required) = python();
    let has_mcp = Command::new(&python)
        .args(["-c", "import mcp"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !has_mcp {
        assert!(!required, "SWITCHBOARD_PYTHON={python} cannot import mcp");
        eprintln!("SKIPPED: `{python} -c 'import mcp'` failed (scripts/install-peers installs it)");
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/python_client.py");
    let child = Command::new(&python)
        .arg(&script)
        .arg(exe())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python starts");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let out = child.wait_with_output();
        let _ = tx.send(());
        out
    });
    if rx.recv_timeout(BOUND).is_err() {
        // Only the child we started, by its id.
        let _ = Command::new("kill").arg(pid.to_string()).status();
        panic!("the Python client did not finish within {BOUND:?}");
    }
    let out = waiter.join().unwrap().expect("python output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "python client failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    assert!(stdout.contains("python interop ok"), "{stdout}");
}

/// Writes `input` to a fresh `switchboard example-server` and closes its stdin at
/// once (a shell pipe); returns every stdout line, the exit status and how long
/// the server took to exit after its stdin closed.
fn pipe_and_close(input: &[Value]) -> (Vec<Value>, std::process::ExitStatus, Duration) {
    let mut child = spawn_piped();
    let mut stdin = child.stdin.take().unwrap();
    let text: String = input.iter().map(|m| format!("{m}\n")).collect();
    stdin.write_all(text.as_bytes()).unwrap();
    drop(stdin);
    let closed_at = std::time::Instant::now();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = rx
        .recv_timeout(BOUND)
        .expect("exits after end of stdin")
        .unwrap();
    let took = closed_at.elapsed();
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    (lines, out.status, took)
}

fn pipe_handshake(capabilities: Value) -> Vec<Value> {
    vec![
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":capabilities,
            "clientInfo":{"name":"pipe","version":"1"}}}),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    ]
}

fn answer_to(lines: &[Value], id: i64) -> Option<&Value> {
    lines
        .iter()
        .find(|m| m["id"] == id && m.get("method").is_none())
}

/// `printf '%s\n' "$initialize" "$initialized" "$slow_call" | switchboard
/// example-server`: the slow call (progress over 0.6 s) is answered before the
/// server exits (0), soon after; a `sample` call made in the same pipe (the
/// client declares sampling but can no longer answer) gets an error answer at
/// once instead of waiting for the request's 60 s timeout.
#[test]
fn calls_in_flight_when_stdin_ends_are_answered() {
    let mut input = pipe_handshake(json!({"sampling": {}}));
    input.push(json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"progress","arguments":{"seconds":0.6,"steps":2}}}));
    input.push(json!({"jsonrpc":"2.0","id":3,"method":"tools/call",
        "params":{"name":"sample","arguments":{"prompt":"hi"}}}));
    let (lines, status, took) = pipe_and_close(&input);
    assert!(status.success(), "{status}");
    assert!(answer_to(&lines, 1).is_some(), "{lines:?}");
    let slow = answer_to(&lines, 2).expect("the slow call is answered");
    assert_eq!(
        slow["result"]["content"][0]["text"], "done: 2 steps in 0.6 s",
        "{slow}"
    );
    let sample = answer_to(&lines, 3).expect("the sampling call is answered");
    let failed = sample["result"]["isError"] == true || sample.get("error").is_some();
    assert!(failed, "{sample}");
    assert!(
        took < Duration::from_secs(5),
        "exited {took:?} after stdin closed"
    );
}

/// A request whose id is written `1.0` is cancelled by a `notifications/cancelled`
/// whose `requestId` is `1.0` (or `1`: one number, one id): no answer comes, and
/// the server exits well before the call would have ended.
#[test]
fn a_request_id_written_1_0_can_be_cancelled() {
    for cancel_with in ["1.0", "1"] {
        let mut child = spawn_piped();
        let mut stdin = child.stdin.take().unwrap();
        let mut text: String = pipe_handshake(json!({}))
            .iter()
            .map(|m| format!("{m}\n"))
            .collect();
        text.push_str(r#"{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":{"name":"progress","arguments":{"seconds":3,"steps":3},"_meta":{"progressToken":"p"}}}"#);
        text.push('\n');
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.flush().unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let cancel = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{cancel_with}}}}}"#
        );
        stdin.write_all(format!("{cancel}\n").as_bytes()).unwrap();
        drop(stdin);
        let started = std::time::Instant::now();
        let out = child.wait_with_output().unwrap();
        let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(
            !lines
                .iter()
                .any(|m| m.get("method").is_none() && m["id"] != 1 && m["id"].is_number()),
            "{cancel_with}: the cancelled call was answered: {lines:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{cancel_with}: took {:?}",
            started.elapsed()
        );
    }
}

/// A call slower than the grace (10 s by default) is cancelled when the grace
/// ends and not answered; the server still exits (0) within the grace and a bound.
#[test]
fn a_call_slower_than_the_grace_is_not_answered() {
    let mut input = pipe_handshake(json!({}));
    input.push(json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"progress","arguments":{"seconds":60,"steps":2}}}));
    let (lines, status, took) = pipe_and_close(&input);
    assert!(status.success(), "{status}");
    assert!(answer_to(&lines, 1).is_some(), "{lines:?}");
    assert!(answer_to(&lines, 2).is_none(), "{lines:?}");
    let grace = switchboard::server::DRAIN_ON_CLOSE;
    assert!(took >= grace, "exited {took:?} after stdin closed");
    assert!(
        took < grace + Duration::from_secs(5),
        "exited {took:?} after stdin closed"
    );
}

/// A client killed in the middle of a call closes both pipes: the server sees
/// stdin end, then its stdout's reader gone, and exits at once instead of
/// running the call (and its side effects) for the whole 10 s grace to answer
/// no one.
#[test]
fn a_client_that_dies_mid_call_does_not_hold_the_server() {
    use std::io::{BufRead, BufReader};
    let mut child = spawn_piped();
    let mut stdin = child.stdin.take().unwrap();
    let mut input = pipe_handshake(json!({}));
    input.push(json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"progress","arguments":{"seconds":30,"steps":2}}}));
    let text: String = input.iter().map(|m| format!("{m}\n")).collect();
    stdin.write_all(text.as_bytes()).unwrap();
    // The initialize answer: the server runs and has read the call.
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("\"id\":1"), "{line}");
    std::thread::sleep(Duration::from_millis(200));
    // The client dies: both its ends close.
    drop(stdin);
    drop(stdout);
    let died = std::time::Instant::now();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = rx.recv_timeout(BOUND).expect("exits").unwrap();
    let took = died.elapsed();
    assert!(status.success(), "{status}");
    assert!(
        took < Duration::from_secs(3),
        "exited {took:?} after its client died (the grace is 10 s)"
    );
}
