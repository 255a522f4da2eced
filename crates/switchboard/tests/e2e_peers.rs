//! Our [`Client`] over stdio (`stdio::spawn`) against the reference MCP servers the
//! bridge will sit in front of, each at its pinned version (`interop/peers-node`,
//! `interop/requirements.txt`; launch commands in `tests/common/peers.rs`):
//! `tools/list` and a real `tools/call` on each, checking the content.
//!
//! - `@modelcontextprotocol/server-everything` 2026.8.31: `echo`, and
//!   `trigger-long-running-operation` with a progress callback;
//! - `@modelcontextprotocol/server-filesystem` 2026.8.31 on a temp dir:
//!   `list_directory` and `read_text_file` of a file the test wrote;
//! - `@modelcontextprotocol/server-memory` 2026.8.31 with a temp memory file:
//!   `create_entities` then `read_graph`;
//! - `mcp-server-time` 2026.10.19: `get_current_time` in UTC;
//! - `mcp-server-git` 2026.10.19 on a temp repository with one commit: `git_log`
//!   and `git_status`;
//! - with `EraPolicy::Auto` (the `server/discover` probe first): server-everything
//!   (TypeScript SDK v1, legacy only) must reject the probe so that the client falls
//!   back to `initialize`, and mcp-server-time (Python SDK 2.x) answers it, so the
//!   session is 2026-07-28.
//!
//! Required when the peers' variables are set (`scripts/test` sets them from
//! `scripts/install-peers`); otherwise each test prints why it is skipped and passes.
//! Every wait is bounded.

#[path = "common/peers.rs"]
mod peers;

use std::future::Future;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use switchboard::client::EraPolicy;
use switchboard::{CallOptions, Client, ClientOptions};
use switchboard_protocol::types::{CallToolResult, Implementation};
use switchboard_protocol::version::Era;
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::stdio::{spawn, ChildProcess, ChildTransport};
use switchboard_transport::{Transport, TransportConfig};

/// The bound on each await (a Node or Python server starts in well under this).
const LIMIT: Duration = Duration::from_secs(30);

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("the test's bound elapsed")
}

fn text_of(r: &CallToolResult) -> String {
    r.content.iter().filter_map(|b| b.as_text()).collect()
}

/// Starts `spec` and runs the handshake; returns the client and the process.
async fn connect(spec: &peers::PeerSpec) -> (Client, ChildProcess) {
    connect_with(spec, None).await
}

/// [`connect`] with an era policy (`None`: `Client::connect`'s default, legacy).
async fn connect_with(spec: &peers::PeerSpec, era: Option<EraPolicy>) -> (Client, ChildProcess) {
    let mut options = ClientOptions::new(Implementation::new("switchboard-e2e-peers", "0.1.0"));
    options.era = era;
    let ChildTransport {
        sender,
        receiver,
        process,
    } = spawn(spec.child_config(), &TransportConfig::default())
        .unwrap_or_else(|e| panic!("spawn {}: {e}", spec.name));
    let client = bounded(Client::connect(Transport { sender, receiver }, options))
        .await
        .unwrap_or_else(|e| panic!("initialize with {}: {e}", spec.name));
    (client, process)
}

/// `tools/list`, checking that every name in `expected` is offered.
async fn tool_names(client: &Client, expected: &[&str]) -> Vec<String> {
    let names: Vec<String> = bounded(client.list_tools())
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name)
        .collect();
    for want in expected {
        assert!(names.iter().any(|n| n == want), "{want} not in {names:?}");
    }
    names
}

/// `tools/call` that must succeed (no JSON-RPC error, no `isError`); its text.
async fn call_ok(client: &Client, name: &str, arguments: Value) -> (CallToolResult, String) {
    let r = bounded(client.call_tool(name, arguments))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(!r.is_error(), "{name} failed: {r:?}");
    let text = text_of(&r);
    (r, text)
}

async fn stop(client: Client, process: ChildProcess) {
    drop(client);
    let report = bounded(process.shutdown()).await.expect("shutdown");
    eprintln!("{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_echoes_and_reports_progress() {
    let Some(spec) = peers::everything() else {
        return;
    };
    let (client, process) = connect(&spec).await;
    assert!(
        client.server_info().name.contains("everything"),
        "{:?}",
        client.server_info()
    );
    tool_names(&client, &["echo", "trigger-long-running-operation"]).await;

    let (_, text) = call_ok(&client, "echo", json!({"message": "hello everything"})).await;
    assert_eq!(text, "Echo: hello everything");

    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let options = CallOptions::new().on_progress(move |p| {
        sink.lock()
            .unwrap()
            .push((p.progress.as_f64(), p.total.and_then(|t| t.as_f64())))
    });
    let r = bounded(client.call_tool_with(
        "trigger-long-running-operation",
        json!({"duration": 0.3, "steps": 3}),
        options,
    ))
    .await
    .expect("trigger-long-running-operation");
    assert!(!r.is_error(), "{r:?}");
    assert!(text_of(&r).contains("Steps: 3"), "{r:?}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            (Some(1.0), Some(3.0)),
            (Some(2.0), Some(3.0)),
            (Some(3.0), Some(3.0))
        ]
    );
    stop(client, process).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_filesystem_lists_and_reads_a_temp_dir() {
    let dir = peers::TempDir::new("fs");
    let Some(spec) = peers::filesystem(dir.path()) else {
        return;
    };
    let file = dir.path().join("hello.txt");
    std::fs::write(&file, "line one\nline two\n").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();

    let (client, process) = connect(&spec).await;
    tool_names(&client, &["list_directory", "read_text_file"]).await;

    let (_, listing) = call_ok(
        &client,
        "list_directory",
        json!({"path": dir.path().to_str().unwrap()}),
    )
    .await;
    let mut lines: Vec<&str> = listing.lines().collect();
    lines.sort();
    assert_eq!(lines, ["[DIR] sub", "[FILE] hello.txt"], "{listing}");

    let (_, content) = call_ok(
        &client,
        "read_text_file",
        json!({"path": file.to_str().unwrap()}),
    )
    .await;
    assert_eq!(content, "line one\nline two\n");

    // Outside the allowed directory: refused, as a tool error.
    let outside = bounded(client.call_tool("read_text_file", json!({"path": "/etc/hostname"})))
        .await
        .expect("a refusal is a result");
    assert!(outside.is_error(), "{outside:?}");
    stop(client, process).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_memory_creates_entities_and_reads_the_graph() {
    let dir = peers::TempDir::new("memory");
    let memory_file = dir.path().join("memory.jsonl");
    let Some(spec) = peers::memory(&memory_file) else {
        return;
    };
    let (client, process) = connect(&spec).await;
    tool_names(&client, &["create_entities", "read_graph"]).await;

    let entities = json!({"entities": [
        {"name": "switchboard", "entityType": "project", "observations": ["speaks MCP"]},
        {"name": "bridge", "entityType": "component", "observations": ["fronts upstreams"]},
    ]});
    call_ok(&client, "create_entities", entities).await;

    let (r, text) = call_ok(&client, "read_graph", json!({})).await;
    let graph: Value = serde_json::from_str(&text).expect("read_graph answers JSON text");
    let mut names: Vec<&str> = graph["entities"]
        .as_array()
        .expect("entities")
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["bridge", "switchboard"], "{graph}");
    let project = graph["entities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "switchboard")
        .unwrap();
    assert_eq!(project["observations"], json!(["speaks MCP"]));
    if let Some(structured) = &r.structured_content {
        assert_eq!(structured["entities"], graph["entities"]);
    }
    stop(client, process).await;
    let stored = std::fs::read_to_string(&memory_file).expect("the memory file was written");
    assert!(stored.contains("switchboard"), "{stored}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_server_time_tells_the_time_in_utc() {
    let Some(spec) = peers::time() else {
        return;
    };
    let (client, process) = connect(&spec).await;
    tool_names(&client, &["get_current_time", "convert_time"]).await;

    let (r, text) = call_ok(&client, "get_current_time", json!({"timezone": "UTC"})).await;
    let answer: Value = r
        .structured_content
        .clone()
        .or_else(|| serde_json::from_str(&text).ok())
        .unwrap_or_else(|| panic!("no JSON in {r:?}"));
    assert_eq!(answer["timezone"], "UTC", "{answer}");
    let datetime = answer["datetime"].as_str().expect("datetime");
    let year = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        / 31_556_952
        + 1970;
    // ISO 8601 with a UTC offset, this year (± one for New Year's Eve).
    let shown: u64 = datetime[..4].parse().expect("a year");
    assert!(shown.abs_diff(year) <= 1, "{datetime}");
    assert!(datetime.ends_with("+00:00"), "{datetime}");

    // An unknown zone is the tool's error, not a hang.
    let bad =
        bounded(client.call_tool("get_current_time", json!({"timezone": "Nowhere/Land"}))).await;
    match bad {
        Ok(r) => assert!(r.is_error(), "{r:?}"),
        Err(e) => assert!(e.is_protocol(), "{e}"),
    }
    stop(client, process).await;
}

/// `git ARGS` in `repo`, which must succeed.
fn git(git: &Path, repo: &Path, args: &[&str]) {
    let out = Command::new(git)
        .arg("-C")
        .arg(repo)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", repo)
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_server_git_logs_a_temp_repository() {
    let dir = peers::TempDir::new("git");
    let Some(spec) = peers::git_server(dir.path()) else {
        return;
    };
    let git_bin = peers::git().expect("git_server needs SWITCHBOARD_GIT");
    let repo = dir.path();
    git(&git_bin, repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README"), "interop\n").unwrap();
    git(&git_bin, repo, &["add", "README"]);
    git(
        &git_bin,
        repo,
        &[
            "-c",
            "user.name=Switchboard Test",
            "-c",
            "user.email=test@switchboard.invalid",
            "commit",
            "-q",
            "-m",
            "first commit from the interop test",
        ],
    );
    std::fs::write(repo.join("untracked.txt"), "new\n").unwrap();

    let (client, process) = connect(&spec).await;
    tool_names(&client, &["git_status", "git_log"]).await;
    let repo_path = repo.to_str().unwrap();

    let (_, log) = call_ok(
        &client,
        "git_log",
        json!({"repo_path": repo_path, "max_count": 5}),
    )
    .await;
    assert!(log.contains("first commit from the interop test"), "{log}");
    assert!(log.contains("Switchboard Test"), "{log}");
    assert_eq!(log.matches("Commit: ").count(), 1, "{log}");

    let (_, status) = call_ok(&client, "git_status", json!({"repo_path": repo_path})).await;
    assert!(status.contains("untracked.txt"), "{status}");
    assert!(status.contains("main"), "{status}");
    stop(client, process).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_auto_era_falls_back_for_server_everything_and_goes_modern_for_mcp_server_time() {
    let (Some(everything), Some(time)) = (peers::everything(), peers::time()) else {
        return;
    };

    let (client, process) = connect_with(&everything, Some(EraPolicy::Auto)).await;
    assert_eq!(
        client.era(),
        Era::Legacy,
        "server-everything speaks up to 2025-11-25"
    );
    assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
    let (_, text) = call_ok(&client, "echo", json!({"message": "after the probe"})).await;
    assert_eq!(text, "Echo: after the probe");
    stop(client, process).await;

    let (client, process) = connect_with(&time, Some(EraPolicy::Auto)).await;
    assert_eq!(
        client.era(),
        Era::Modern,
        "mcp-server-time answers server/discover"
    );
    assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
    tool_names(&client, &["get_current_time"]).await;
    let (r, text) = call_ok(&client, "get_current_time", json!({"timezone": "UTC"})).await;
    let answer: Value = r
        .structured_content
        .clone()
        .or_else(|| serde_json::from_str(&text).ok())
        .unwrap_or_else(|| panic!("no JSON in {r:?}"));
    assert_eq!(answer["timezone"], "UTC", "{answer}");
    stop(client, process).await;
}
