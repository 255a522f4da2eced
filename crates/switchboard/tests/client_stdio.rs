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
