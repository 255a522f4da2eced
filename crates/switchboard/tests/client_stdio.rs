//! The client against a real child process over stdio (`stdio::spawn`).
//!
//! The child is `$SWITCHBOARD_TEST_STDIO_SERVER` (a command line, split on spaces) when
//! set — it must offer at least one tool — otherwise a tiny MCP server written in
//! Python below, when `python3` is on `PATH`. Without either the test is skipped
//! (it passes, and says so on stderr).

mod client_support;

use client_support::*;
use serde_json::json;
use switchboard::Client;
use switchboard_transport::stdio::{spawn, ChildConfig, ChildTransport};
use switchboard_transport::{Transport, TransportConfig};

const SERVER_PY: &str = r#"
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if mid is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {"tools": {}},
                  "serverInfo": {"name": "py-echo", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        text = json.dumps(msg["params"].get("arguments", {}), sort_keys=True)
        result = {"content": [{"type": "text", "text": text}]}
    elif method == "ping":
        result = {}
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": mid,
            "error": {"code": -32601, "message": "method not found"}}) + "\n")
        sys.stdout.flush()
        continue
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}) + "\n")
    sys.stdout.flush()
"#;

fn child_config() -> Option<(ChildConfig, bool)> {
    if let Ok(cmd) = std::env::var("SWITCHBOARD_TEST_STDIO_SERVER") {
        let mut parts = cmd.split_whitespace();
        let program = parts.next()?;
        return Some((ChildConfig::new("external", program).args(parts), false));
    }
    let ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    ok.then(|| {
        (
            ChildConfig::new("py-echo", "python3")
                .arg("-u")
                .arg("-c")
                .arg(SERVER_PY),
            true,
        )
    })
}

#[tokio::test]
async fn a_stdio_child_server_answers() {
    let Some((config, is_ours)) = child_config() else {
        eprintln!(
            "skipped: no stdio MCP server (set SWITCHBOARD_TEST_STDIO_SERVER or install python3)"
        );
        return;
    };
    let ChildTransport {
        sender,
        receiver,
        process,
    } = spawn(config, &TransportConfig::default()).expect("spawn");
    let client = within(Client::connect(Transport { sender, receiver }, options()))
        .await
        .expect("handshake");
    within(client.ping()).await.expect("ping");
    let tools = within(client.list_tools()).await.expect("tools/list");
    assert!(!tools.is_empty());
    if is_ours {
        assert_eq!(client.server_info().name, "py-echo");
        let r = within(client.call_tool("echo", json!({"a": 1})))
            .await
            .unwrap();
        assert_eq!(first_text(&r), r#"{"a": 1}"#);
    }
    drop(client);
    within(process.shutdown()).await.expect("shutdown");
}

/// Whether a process with this id still exists (running or not reaped).
fn exists(pid: u32) -> bool {
    std::process::Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `Client::spawn` owns its server: calls work, and `close` ends the child and
/// reaps it (no process left behind, not even a zombie).
#[tokio::test]
async fn a_spawned_server_is_owned_and_ended_by_close() {
    let Some((config, is_ours)) = child_config() else {
        eprintln!(
            "skipped: no stdio MCP server (set SWITCHBOARD_TEST_STDIO_SERVER or install python3)"
        );
        return;
    };
    let client = within(Client::spawn(config, options()))
        .await
        .expect("spawn and handshake");
    let pid = client.child_pid().expect("a spawned child has a pid");
    assert!(exists(pid));
    let tools = within(client.list_tools()).await.expect("tools/list");
    assert!(!tools.is_empty());
    if is_ours {
        let r = within(client.call_tool("echo", json!({"b": 2})))
            .await
            .unwrap();
        assert_eq!(first_text(&r), r#"{"b": 2}"#);
    }
    let clone = client.clone();
    within(client.close()).await;
    assert!(!exists(pid), "the server process {pid} is still there");
    // A clone left over fails as closed instead of hanging.
    let err = within(clone.ping()).await.unwrap_err();
    assert!(err.is_closed(), "{err}");
}

/// A server that ignores both the end of its stdin and SIGTERM is still ended
/// by `close`, in the spec's order: SIGKILL after the two graces.
#[tokio::test]
async fn close_ends_a_spawned_server_that_ignores_its_shutdown() {
    const STUBBORN_PY: &str = r#"
import json, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {},
                  "serverInfo": {"name": "stubborn", "version": "1"}}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
        sys.stdout.flush()
    elif msg.get("method") == "ping":
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {}}) + "\n")
        sys.stdout.flush()
while True:
    time.sleep(1)
"#;
    if child_config().is_none_or(|(_, is_ours)| !is_ours) {
        eprintln!("skipped: needs python3 (and no SWITCHBOARD_TEST_STDIO_SERVER)");
        return;
    }
    let mut config = ChildConfig::new("stubborn", "python3")
        .arg("-u")
        .arg("-c")
        .arg(STUBBORN_PY);
    config.shutdown.stdin_close_grace = std::time::Duration::from_millis(300);
    config.shutdown.sigterm_grace = std::time::Duration::from_millis(300);
    let client = within(Client::spawn(config, options()))
        .await
        .expect("spawn and handshake");
    within(client.ping()).await.expect("ping");
    let pid = client.child_pid().unwrap();
    let started = std::time::Instant::now();
    within(client.close()).await;
    assert!(!exists(pid), "the server process {pid} is still there");
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(600),
        "ended before both graces: {:?}",
        started.elapsed()
    );
}

/// A command that cannot be started is a closed error naming it.
#[tokio::test]
async fn spawning_a_missing_command_fails_with_its_name() {
    let config = ChildConfig::new("ghost", "/nonexistent/mcp-server");
    let err = within(Client::spawn(config, options())).await.unwrap_err();
    assert!(err.is_closed(), "{err}");
    assert!(err.to_string().contains("/nonexistent/mcp-server"), "{err}");
}

/// A "server" that prints a banner on stdout and exits: `Client::spawn`'s error
/// names the line it skipped, which the exit status alone does not explain.
#[tokio::test]
async fn a_spawn_failure_names_the_lines_that_are_not_json_rpc() {
    let config = ChildConfig::new("banner", "sh")
        .arg("-c")
        .arg("echo 'Server ready on stdio'; read x; exit 3");
    let err = within(Client::spawn(config, options())).await.unwrap_err();
    let text = err.to_string();
    assert!(err.is_closed(), "{text}");
    assert!(
        text.contains("1 line on stdout that is not JSON-RPC")
            && text.contains("Server ready on stdio"),
        "{text}"
    );
}
