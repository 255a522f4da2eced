//! `switchboard bridge` with real MCP software on both sides (issue 4, "How it is
//! checked", the interop legs).
//!
//! 1. The bridge in front of real stdio servers, each started once per test (one
//!    shared child, `--child shared`; server-everything also in the default
//!    `--child per-session`), called by our [`Client`] in every era the
//!    bridge serves: a Streamable HTTP session (`initialize`, 2025-11-25; forced with
//!    `EraPolicy::Legacy` on `/mcp`), 2026-07-28 stateless requests (forced with
//!    `EraPolicy::Modern` on `/mcp`) and the legacy HTTP+SSE transport (2024-11-05;
//!    `EraPolicy::Legacy` on `/sse`, where `initialize` is refused by the HTTP
//!    status and the client falls back to the GET stream). Each leg checks that
//!    `tools/list` offers the expected tools and that a real `tools/call` returns
//!    the expected content:
//!    - `@modelcontextprotocol/server-everything`: `echo`, and
//!      `trigger-long-running-operation` with a progress callback;
//!    - `@modelcontextprotocol/server-filesystem` on a temp dir: `list_directory`
//!      and `read_text_file` of a file the test wrote;
//!    - `@modelcontextprotocol/server-memory` with a temp memory file:
//!      `create_entities` (one entity per leg) then `read_graph` (every entity so
//!      far: the legs share the child);
//!    - `mcp-server-time`: `get_current_time` in UTC;
//!    - `mcp-server-git` on a temp repository with one commit: `git_log`,
//!      `git_status`.
//! 2. Real clients against the bridge in front of `switchboard example-server`:
//!    the official Python SDK client (`mcp` 2.3.0: `streamable_http_client`,
//!    `sse_client`) and TypeScript SDK client (`@modelcontextprotocol/sdk` 1.32.2:
//!    `StreamableHTTPClientTransport`, `SSEClientTransport`) call `progress` with a
//!    progress callback (scripts in `tests/interop/`, the URL as argv).
//!
//! 3. The official Python SDK 1.x client (`mcp` 1.30.0, `SWITCHBOARD_PY1_PYTHON`)
//!    against the bridge in front of a stdio server that speaks only 2024-11-05
//!    (`example-server --protocol-version 2024-11-05`): the negotiated 2024-11-05
//!    in `MCP-Protocol-Version` is accepted on every request and the DELETE.
//!
//! The peers are found through the variables of `scripts/install-peers` (see
//! `crates/switchboard/tests/common/peers.rs`): each test prints `SKIPPED: ...` and
//! passes when one it needs is unset, and is required when it is set. Every wait is
//! bounded.

#[path = "../../switchboard/tests/common/peers.rs"]
mod peers;

mod bridge_util;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bridge_util::BridgeProc;
use serde_json::{json, Value};
use switchboard::client::http::{cached_era, CachedEra, HttpClientConfig};
use switchboard::client::EraPolicy;
use switchboard::{CallOptions, Client, ClientOptions};
use switchboard_protocol::types::{CallToolResult, Implementation};
use switchboard_protocol::version::Era;
use switchboard_protocol::ProtocolVersion;

/// The bound on each await (a Node or Python server starts well within it).
const LIMIT: Duration = Duration::from_secs(30);

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("the test's bound elapsed")
}

/// How a client reaches the bridge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leg {
    /// `initialize` over Streamable HTTP at `/mcp` (a session, 2025-11-25).
    Streamable,
    /// 2026-07-28 stateless requests at `/mcp`.
    Modern,
    /// The legacy HTTP+SSE transport (2024-11-05) at `/sse`.
    LegacySse,
}

const LEGS: [Leg; 3] = [Leg::Streamable, Leg::Modern, Leg::LegacySse];

impl Leg {
    fn tag(self) -> &'static str {
        match self {
            Leg::Streamable => "streamable",
            Leg::Modern => "modern",
            Leg::LegacySse => "sse",
        }
    }
}

/// Starts the bridge in front of `spec` with `--child MODE` (`shared`: one child for
/// every leg; `per-session`: one more per legacy session): its program and
/// arguments after `--`, its environment passed on by the bridge (`--env
/// NAME`: children get only the safe set otherwise).
async fn bridge_for(spec: &peers::PeerSpec, mode: &str) -> BridgeProc {
    assert!(
        spec.current_dir.is_none(),
        "the bridge has no working-directory flag"
    );
    let utf8 = |s: &std::ffi::OsStr| s.to_str().expect("UTF-8 paths").to_owned();
    let mut cmd = vec![utf8(spec.program.as_os_str())];
    cmd.extend(spec.args.iter().map(|a| utf8(a)));
    let env: Vec<(String, String)> = spec.env.iter().map(|(k, v)| (utf8(k), utf8(v))).collect();
    let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let args = ["--child", mode, "--name", spec.name.as_str()];
    bounded(BridgeProc::start_with_child_env(&args, &cmd, &env)).await
}

/// Our client on `leg` of `bridge`, checking that it got the era it asked for.
async fn connect(bridge: &BridgeProc, leg: Leg) -> Client {
    let (url, era) = match leg {
        Leg::Streamable => (bridge.url.clone(), EraPolicy::Legacy),
        Leg::Modern => (bridge.url.clone(), EraPolicy::Modern),
        Leg::LegacySse => (format!("{}/sse", bridge.base), EraPolicy::Legacy),
    };
    let options =
        ClientOptions::new(Implementation::new("switchboard-bridge-peers", "0.1.0")).with_era(era);
    let client = bounded(Client::connect_url(
        &url,
        options,
        HttpClientConfig::new(""),
    ))
    .await
    .unwrap_or_else(|e| panic!("connect over {leg:?} to {url}: {e}"));
    match leg {
        Leg::Streamable => {
            assert_eq!(client.era(), Era::Legacy);
            assert_eq!(client.protocol_version(), ProtocolVersion::V2025_11_25);
            assert_eq!(cached_era(&url), Some(CachedEra::Legacy));
        }
        Leg::Modern => {
            assert_eq!(client.era(), Era::Modern);
            assert_eq!(client.protocol_version(), ProtocolVersion::V2026_07_28);
        }
        Leg::LegacySse => {
            assert_eq!(client.era(), Era::Legacy);
            assert_eq!(cached_era(&url), Some(CachedEra::LegacySse));
        }
    }
    client
}

fn text_of(r: &CallToolResult) -> String {
    r.content.iter().filter_map(|b| b.as_text()).collect()
}

/// `tools/list`, checking that every name in `expected` is offered.
async fn expect_tools(client: &Client, leg: Leg, expected: &[&str]) {
    let names: Vec<String> = bounded(client.list_tools())
        .await
        .unwrap_or_else(|e| panic!("tools/list over {leg:?}: {e}"))
        .into_iter()
        .map(|t| t.name)
        .collect();
    for want in expected {
        assert!(
            names.iter().any(|n| n == want),
            "{leg:?}: {want} not in {names:?}"
        );
    }
}

/// `tools/call` that must succeed (no JSON-RPC error, no `isError`); its text.
async fn call_ok(
    client: &Client,
    leg: Leg,
    name: &str,
    arguments: Value,
) -> (CallToolResult, String) {
    let r = bounded(client.call_tool(name, arguments))
        .await
        .unwrap_or_else(|e| panic!("{name} over {leg:?}: {e}"));
    assert!(!r.is_error(), "{name} over {leg:?} failed: {r:?}");
    let text = text_of(&r);
    (r, text)
}

/// `echo` and `trigger-long-running-operation` (with progress) on every leg of a
/// bridge in front of server-everything.
async fn everything_on_every_leg(bridge: &BridgeProc) {
    for leg in LEGS {
        let client = connect(bridge, leg).await;
        assert!(
            client.server_info().name.contains("everything"),
            "{leg:?}: {:?}",
            client.server_info()
        );
        expect_tools(&client, leg, &["echo", "trigger-long-running-operation"]).await;

        let message = format!("hello everything over {}", leg.tag());
        let (_, text) = call_ok(&client, leg, "echo", json!({"message": message})).await;
        assert_eq!(text, format!("Echo: {message}"));

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
        .unwrap_or_else(|e| panic!("trigger-long-running-operation over {leg:?}: {e}"));
        assert!(!r.is_error(), "{leg:?}: {r:?}");
        assert!(text_of(&r).contains("Steps: 3"), "{leg:?}: {r:?}");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            [
                (Some(1.0), Some(3.0)),
                (Some(2.0), Some(3.0)),
                (Some(3.0), Some(3.0))
            ],
            "{leg:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_echoes_and_reports_progress_through_the_bridge() {
    let Some(spec) = peers::everything() else {
        return;
    };
    let bridge = bridge_for(&spec, "shared").await;
    everything_on_every_leg(&bridge).await;
}

/// The default `--child per-session`: each legacy session (Streamable HTTP, HTTP+SSE)
/// gets its own server-everything initialized with the client's own params; the
/// 2026-07-28 requests go to the shared child.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_with_a_child_per_session_through_the_bridge() {
    let Some(spec) = peers::everything() else {
        return;
    };
    let bridge = bridge_for(&spec, "per-session").await;
    everything_on_every_leg(&bridge).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_filesystem_lists_and_reads_a_temp_dir_through_the_bridge() {
    let dir = peers::TempDir::new("bridge-fs");
    let Some(spec) = peers::filesystem(dir.path()) else {
        return;
    };
    let file = dir.path().join("hello.txt");
    std::fs::write(&file, "line one\nline two\n").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let bridge = bridge_for(&spec, "shared").await;
    for leg in LEGS {
        let client = connect(&bridge, leg).await;
        expect_tools(&client, leg, &["list_directory", "read_text_file"]).await;

        let (_, listing) = call_ok(
            &client,
            leg,
            "list_directory",
            json!({"path": dir.path().to_str().unwrap()}),
        )
        .await;
        let mut lines: Vec<&str> = listing.lines().collect();
        lines.sort();
        assert_eq!(
            lines,
            ["[DIR] sub", "[FILE] hello.txt"],
            "{leg:?}: {listing}"
        );

        let (_, content) = call_ok(
            &client,
            leg,
            "read_text_file",
            json!({"path": file.to_str().unwrap()}),
        )
        .await;
        assert_eq!(content, "line one\nline two\n", "{leg:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_memory_keeps_one_graph_for_every_era_through_the_bridge() {
    let dir = peers::TempDir::new("bridge-memory");
    let memory_file = dir.path().join("memory.jsonl");
    let Some(spec) = peers::memory(&memory_file) else {
        return;
    };
    let bridge = bridge_for(&spec, "shared").await;
    let mut created: Vec<String> = Vec::new();
    for leg in LEGS {
        let client = connect(&bridge, leg).await;
        expect_tools(&client, leg, &["create_entities", "read_graph"]).await;

        let name = format!("entity-{}", leg.tag());
        let observation = format!("created over {leg:?}");
        let entities = json!({"entities": [
            {"name": name, "entityType": "test", "observations": [observation]},
        ]});
        call_ok(&client, leg, "create_entities", entities).await;
        created.push(name);

        // The child is shared: the graph holds what every earlier leg created.
        let (r, text) = call_ok(&client, leg, "read_graph", json!({})).await;
        let graph: Value = serde_json::from_str(&text).expect("read_graph answers JSON text");
        let mut names: Vec<String> = graph["entities"]
            .as_array()
            .unwrap_or_else(|| panic!("{leg:?}: no entities in {graph}"))
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_owned())
            .collect();
        names.sort();
        let mut want = created.clone();
        want.sort();
        assert_eq!(names, want, "{leg:?}: {graph}");
        let mine = graph["entities"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == format!("entity-{}", leg.tag()))
            .unwrap();
        assert_eq!(mine["observations"], json!([observation]), "{leg:?}");
        if let Some(structured) = &r.structured_content {
            assert_eq!(structured["entities"], graph["entities"], "{leg:?}");
        }
    }
    let stored = std::fs::read_to_string(&memory_file).expect("the memory file was written");
    for name in &created {
        assert!(stored.contains(name.as_str()), "{name} not in {stored}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_server_time_tells_the_time_in_utc_through_the_bridge() {
    let Some(spec) = peers::time() else {
        return;
    };
    let bridge = bridge_for(&spec, "shared").await;
    let year = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        / 31_556_952
        + 1970;
    for leg in LEGS {
        let client = connect(&bridge, leg).await;
        expect_tools(&client, leg, &["get_current_time", "convert_time"]).await;

        let (r, text) = call_ok(&client, leg, "get_current_time", json!({"timezone": "UTC"})).await;
        let answer: Value = r
            .structured_content
            .clone()
            .or_else(|| serde_json::from_str(&text).ok())
            .unwrap_or_else(|| panic!("{leg:?}: no JSON in {r:?}"));
        assert_eq!(answer["timezone"], "UTC", "{leg:?}: {answer}");
        let datetime = answer["datetime"].as_str().expect("datetime");
        // ISO 8601 with a UTC offset, this year (± one for New Year's Eve).
        let shown: u64 = datetime[..4].parse().expect("a year");
        assert!(shown.abs_diff(year) <= 1, "{leg:?}: {datetime}");
        assert!(datetime.ends_with("+00:00"), "{leg:?}: {datetime}");
    }
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
async fn mcp_server_git_logs_a_temp_repository_through_the_bridge() {
    let dir = peers::TempDir::new("bridge-git");
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
            "first commit through the bridge",
        ],
    );
    std::fs::write(repo.join("untracked.txt"), "new\n").unwrap();
    let repo_path = repo.to_str().unwrap();

    let bridge = bridge_for(&spec, "shared").await;
    for leg in LEGS {
        let client = connect(&bridge, leg).await;
        expect_tools(&client, leg, &["git_status", "git_log"]).await;

        let (_, log) = call_ok(
            &client,
            leg,
            "git_log",
            json!({"repo_path": repo_path, "max_count": 5}),
        )
        .await;
        assert!(
            log.contains("first commit through the bridge"),
            "{leg:?}: {log}"
        );
        assert!(log.contains("Switchboard Test"), "{leg:?}: {log}");
        assert_eq!(log.matches("Commit: ").count(), 1, "{leg:?}: {log}");

        let (_, status) =
            call_ok(&client, leg, "git_status", json!({"repo_path": repo_path})).await;
        assert!(status.contains("untracked.txt"), "{leg:?}: {status}");
        assert!(status.contains("main"), "{leg:?}: {status}");
    }
}

/// A script of this crate's `tests/interop/`.
fn bridge_script(file: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/interop")
        .join(file);
    assert!(path.is_file(), "{} is missing", path.display());
    path
}

/// Runs `spec` with `args`, bounded, on the blocking pool (the bridge is another
/// process, but the test's own waits stay bounded too); it must print `marker`.
async fn run_script(spec: peers::PeerSpec, args: &[&str], marker: &str) -> String {
    let mut cmd = spec.command();
    cmd.args(args);
    let out = peers::run_bounded_async(cmd, peers::SCRIPT_BOUND).await;
    let stdout = peers::assert_script_ok(&out, marker);
    eprintln!("{}", stdout.trim_end());
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_client_calls_progress_through_the_bridge() {
    let Some(spec) = peers::python_script(
        "python-bridge-client",
        &bridge_script("python_bridge_client.py"),
    ) else {
        return;
    };
    let bridge = bounded(BridgeProc::start(&[], &[])).await;
    let sse = format!("{}/sse", bridge.base);
    run_script(
        spec.clone(),
        &["http", &bridge.url],
        "python bridge client ok (http",
    )
    .await;
    run_script(spec, &["sse", &sse], "python bridge client ok (sse").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_client_calls_progress_through_the_bridge() {
    let Some(spec) = peers::node_script("ts-bridge-client", &bridge_script("ts_bridge_client.cjs"))
    else {
        return;
    };
    let bridge = bounded(BridgeProc::start(&[], &[])).await;
    let sse = format!("{}/sse", bridge.base);
    run_script(
        spec.clone(),
        &["http", &bridge.url],
        "ts bridge client ok (http",
    )
    .await;
    run_script(spec, &["sse", &sse], "ts bridge client ok (sse").await;
}

/// The Python SDK 1.x client names the revision the child negotiated,
/// 2024-11-05, in `MCP-Protocol-Version` on `notifications/initialized`, its
/// GET stream, tools/list, tools/call and the session's DELETE: the bridge
/// accepts it on that session (before, 400 on each, and the client crashed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_1_client_reaches_a_2024_11_05_server_through_the_bridge() {
    let Some(spec) = peers::py1_script(
        "python1-bridge-client",
        &bridge_script("python1_bridge_client.py"),
    ) else {
        return;
    };
    let bridge = bounded(BridgeProc::start(
        &[],
        &[
            bridge_util::BIN,
            "example-server",
            "--protocol-version",
            "2024-11-05",
        ],
    ))
    .await;
    run_script(
        spec,
        &[&bridge.url],
        "python1 bridge client ok (protocol 2024-11-05",
    )
    .await;
}
