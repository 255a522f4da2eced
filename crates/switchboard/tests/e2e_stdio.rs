//! End to end across a process boundary: the library's `Client` against the example
//! stdio server (`examples/echo_server.rs`) run as a child process, plus raw lines
//! written to the child's stdin.
//!
//! Where the binary comes from: Cargo gives integration tests no path to examples
//! (`CARGO_BIN_EXE_*` is for `[[bin]]` targets only, and a bin target would ship an
//! `echo_server` with the library). But `cargo test` (without target filters, as
//! `cargo test --workspace` and `-p switchboard` run it) builds every example
//! before running tests, into `<target>/<profile>/examples/`, the directory next to
//! this test binary's `deps/`. So the test looks there; when the binary is missing
//! (e.g. `cargo test --test e2e_stdio`, which builds no examples) each test prints
//! why and passes without checking anything. Run `cargo build --example
//! echo_server` first in that case.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use switchboard::{CallOptions, Client, ClientOptions};
use switchboard_protocol::types::{CallToolResult, CreateMessageResult, Implementation};
use switchboard_transport::stdio::{spawn, ChildConfig, ChildTransport, ShutdownStep};
use switchboard_transport::{Transport, TransportConfig};

const BOUND: Duration = Duration::from_secs(20);

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, f)
        .await
        .expect("the test's bound elapsed")
}

/// `<target>/<profile>/examples/echo_server`, if it was built.
fn example_binary() -> Option<PathBuf> {
    example_named("echo_server")
}

/// `<target>/<profile>/examples/<name>`, if it was built.
fn example_named(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe
        .parent()?
        .parent()?
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if path.is_file() {
        return Some(path);
    }
    eprintln!(
        "SKIPPED: {} not found; `cargo test` without target filters builds it \
         (or run `cargo build -p switchboard --example {name}`)",
        path.display()
    );
    None
}

/// The example server as a child, and a client connected to it with `options`.
async fn connect_to_example(
    path: &std::path::Path,
    options: ClientOptions,
) -> (Client, switchboard_transport::stdio::ChildProcess) {
    let ChildTransport {
        sender,
        receiver,
        process,
    } = spawn(
        ChildConfig::new("echo_server", path),
        &TransportConfig::default(),
    )
    .expect("the example starts");
    let client = within(Client::connect(Transport { sender, receiver }, options))
        .await
        .expect("connect");
    (client, process)
}

fn first_text(r: &CallToolResult) -> String {
    let v = serde_json::to_value(&r.content[0]).unwrap();
    v["text"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn the_client_talks_to_the_example_server_process() {
    let Some(path) = example_binary() else { return };
    let options = ClientOptions::new(Implementation::new("e2e-stdio", "0.1.0")).with_sampling(
        |_params, _cx| async {
            let answer: CreateMessageResult = serde_json::from_value(json!({
                "role": "assistant",
                "content": {"type": "text", "text": "sampled over stdio"},
                "model": "test-model"
            }))
            .unwrap();
            Ok(answer)
        },
    );
    let (client, process) = connect_to_example(&path, options).await;
    assert_eq!(client.server_info().name, "echo-server");

    let tools = within(client.list_tools()).await.unwrap();
    assert_eq!(tools.len(), 4);

    let r = within(client.call_tool("echo", json!({"text": "über stdio ✓"})))
        .await
        .unwrap();
    assert_eq!(first_text(&r), "über stdio ✓");

    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = seen.clone();
    let options = CallOptions::new().on_progress(move |p| {
        sink.lock()
            .unwrap()
            .push(serde_json::to_value(&p).unwrap()["progress"].to_string())
    });
    let r = within(client.call_tool_with(
        "slow_progress",
        json!({"steps": 4, "delay_ms": 10}),
        options,
    ))
    .await
    .unwrap();
    assert_eq!(first_text(&r), "done");
    assert_eq!(*seen.lock().unwrap(), ["1", "2", "3", "4"]);

    let r = within(client.call_tool("fail", json!({}))).await.unwrap();
    assert!(r.is_error());

    let r = within(client.call_tool("ask_sampling", json!({"prompt": "hi"})))
        .await
        .unwrap();
    assert_eq!(first_text(&r), "sampled over stdio");

    // Closing its stdin ends the server: it exits on its own, successfully.
    drop(client);
    let report = within(process.shutdown()).await.expect("shutdown");
    assert!(report.status.success(), "{report:?}");
    assert!(
        matches!(
            report.step,
            ShutdownStep::StdinClosed | ShutdownStep::AlreadyExited
        ),
        "{report:?}"
    );
}

/// A panic in a synchronous callback of the user (here a progress callback, run by
/// the task that reads the child's stdout) is contained: the call it belongs to
/// still gets its result and the session goes on.
#[tokio::test]
async fn a_panicking_progress_callback_does_not_end_the_session() {
    let Some(path) = example_binary() else { return };
    let options = ClientOptions::new(Implementation::new("e2e-stdio", "0.1.0"));
    let (client, process) = connect_to_example(&path, options).await;
    let options = CallOptions::new().on_progress(|_| panic!("a bug in the progress callback"));
    let r = within(client.call_tool_with(
        "slow_progress",
        json!({"steps": 3, "delay_ms": 10}),
        options,
    ))
    .await
    .expect("the call survives its callback's panic");
    assert_eq!(first_text(&r), "done");
    let r = within(client.call_tool("echo", json!({"text": "still here"})))
        .await
        .expect("the session goes on");
    assert_eq!(first_text(&r), "still here");
    drop(client);
    within(process.shutdown()).await.expect("shutdown");
}

/// Reads the child's stdout on a thread; each line arrives on a channel, so every
/// wait is bounded by `recv_timeout`.
struct Lines(std::sync::mpsc::Receiver<String>);

impl Lines {
    fn next(&self) -> Value {
        let line = self.0.recv_timeout(BOUND).expect("a line within the bound");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
    }
}

fn write_line(stdin: &mut std::process::ChildStdin, line: &str) {
    stdin.write_all(line.as_bytes()).unwrap();
    stdin.write_all(b"\n").unwrap();
    stdin.flush().unwrap();
}

/// A client that writes its requests and closes stdin at once (a shell pipe)
/// gets every answer the server produced, from a server whose `main` simply
/// returns when `ServerSession::run` does (the `conformance_stdio` example): `run`
/// writes out what is queued before it returns. Repeated, since without that the
/// runtime's shutdown lost the answers in only some runs.
#[test]
fn answers_queued_when_stdin_ends_are_written_before_the_server_exits() {
    let Some(path) = example_named("conformance_stdio") else {
        return;
    };
    let input = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "pipe", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "test_simple_text", "arguments": {}}}),
    ]
    .iter()
    .map(|m| format!("{m}\n"))
    .collect::<String>();
    for run in 0..20 {
        let mut child = Command::new(&path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the example starts");
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input.as_bytes()).unwrap();
        drop(stdin);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        let out = rx
            .recv_timeout(BOUND)
            .expect("the server exits when stdin ends")
            .unwrap();
        assert!(out.status.success(), "run {run}: {:?}", out.status);
        let ids: Vec<Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("JSON")["id"].clone())
            .collect();
        assert_eq!(ids, [json!(1), json!(2)], "run {run}: answers lost");
    }
}

#[test]
fn a_malformed_line_gets_parse_error_and_the_session_goes_on() {
    let Some(path) = example_binary() else { return };
    let mut child = Command::new(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the example starts");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let lines = Lines(rx);
    let mut send = |s: &str| write_line(&mut stdin, s);

    send(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#,
    );
    let init = lines.next();
    assert_eq!(init["id"], 1);
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);

    send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"#);
    let e = lines.next();
    assert_eq!(e["error"]["code"], -32700, "{e}");
    assert_eq!(e["id"], Value::Null);

    send("this is not JSON");
    assert_eq!(lines.next()["error"]["code"], -32700);

    send(
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}"#,
    );
    let r = lines.next();
    assert_eq!(r["id"], 3);
    assert_eq!(r["result"]["content"][0]["text"], "still here");

    // End of stdin: the server exits on its own.
    drop(stdin);
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done_tx.send(child.wait());
    });
    let status = done_rx
        .recv_timeout(BOUND)
        .expect("the server exits after end of stdin")
        .unwrap();
    assert!(status.success(), "{status}");
}

/// The example server speaking only 2026-07-28 (`--modern-only`), reached with
/// the default options (`EraPolicy::LegacyFirst`): its refusal of `initialize`
/// (an error listing the versions it supports, spec notes §6) leads to
/// `server/discover`, and the session is 2026-07-28. `EraPolicy::Legacy` still
/// means `initialize` only: that client gets the refusal.
#[tokio::test]
async fn a_2026_07_28_only_server_is_reached_with_the_default_options() {
    let Some(path) = example_binary() else { return };
    let config = || ChildConfig::new("echo_server", &path).arg("--modern-only");
    let options = ClientOptions::new(Implementation::new("e2e-stdio", "0.1.0"));
    assert_eq!(options.era, None, "the default is what is tested here");
    let client = within(Client::spawn(config(), options.clone()))
        .await
        .expect("the default connects to a 2026-07-28-only server");
    assert_eq!(client.era(), switchboard_protocol::version::Era::Modern);
    assert_eq!(
        client.protocol_version(),
        switchboard_protocol::ProtocolVersion::V2026_07_28
    );
    assert_eq!(client.server_info().name, "echo-server");
    let tools = within(client.list_tools()).await.unwrap();
    assert_eq!(tools.len(), 4);
    let r = within(client.call_tool("echo", json!({"text": "modern over stdio"})))
        .await
        .unwrap();
    assert_eq!(first_text(&r), "modern over stdio");
    within(client.close()).await;

    let e = within(Client::spawn(
        config(),
        options.with_era(switchboard::EraPolicy::Legacy),
    ))
    .await
    .expect_err("initialize only: the server refuses it");
    assert!(e.is_protocol(), "{e}");
    assert_eq!(e.method(), Some("initialize"));
    assert!(
        !e.to_string().contains("server/discover"),
        "no probe with EraPolicy::Legacy: {e}"
    );
}
