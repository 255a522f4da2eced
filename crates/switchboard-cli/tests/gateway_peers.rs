//! `switchboard gateway` with real MCP software on both sides: eight upstreams
//! at once behind one gateway, called through it by every kind of client.
//!
//! Upstreams (one gateway, the default `/mcp` route, prefixes = names):
//! - `everything`: `@modelcontextprotocol/server-everything` over stdio;
//! - `filesystem`: `@modelcontextprotocol/server-filesystem` on a temp dir;
//! - `memory`: `@modelcontextprotocol/server-memory` with a temp memory file;
//! - `time`: `mcp-server-time` (PyPI) over stdio;
//! - `git`: `mcp-server-git` (PyPI) on a temp repository with one commit and an
//!   untracked file;
//! - `evhttp`: server-everything over Streamable HTTP (`streamableHttp`, started
//!   by the test on a free port with `bind-loopback.cjs`);
//! - `evsse`: server-everything over legacy HTTP+SSE (`sse`, likewise);
//! - `example`: `switchboard example-server --modern-only` (2026-07-28 only);
//! - `broken` and `refused`: down for good (a command that exits at once, a
//!   URL nothing listens on), each with a list timeout of a minute: no list
//!   or call of any client below waits for them.
//!
//! Clients, each listing every page of `tools/list` (every called tool must be
//! listed) and calling a tool of EVERY upstream, checking the content:
//! the library [`switchboard::Client`] (a Streamable HTTP session, 2026-07-28
//! stateless requests, legacy HTTP+SSE at `/sse`), the `switchboard tools
//! list/call` binary (`--era legacy` and `--era modern`), the Python SDK client
//! and the TypeScript SDK client (`tests/interop/*_gateway_client.*`, over
//! Streamable HTTP and legacy SSE), the TypeScript SDK v2 client
//! (`ts2_gateway_client.mjs`, negotiating 2026-07-28, and 2025-11-25) and the
//! MCP Inspector's CLI mode (`--protocol-era modern`).
//!
//! Peers are found through the variables of `scripts/install-peers`: a test
//! prints `SKIPPED: ...` and passes when one it needs is unset. The tests run
//! one at a time (each starts its own eight upstreams). Every wait is bounded.

#[path = "../../switchboard/tests/common/peers.rs"]
mod peers;

mod gateway_util;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use gateway_util::{
    bounded, connect, eventually, fixture, q, qa, text_of, GatewayProc, LEGS, LIMIT,
};
use serde_json::{json, Value};
use tokio::process::{Child, Command};

/// One gateway scene at a time: eight upstreams each on two shared cores.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// One call every client makes: a served tool name, its arguments and a text
/// its result must contain.
struct Call {
    name: &'static str,
    arguments: Value,
    expect: String,
}

/// The upstreams and the gateway in front of them.
struct Scene {
    gw: GatewayProc,
    dir: peers::TempDir,
    /// server-everything over HTTP, killed on drop.
    _http: Vec<Child>,
}

/// A free port on 127.0.0.1 (the OS's choice; released at once for the peer).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `[upstreams.NAME]` for a stdio peer.
fn stdio_upstream(name: &str, spec: &peers::PeerSpec) -> String {
    let utf8 = |s: &std::ffi::OsStr| s.to_str().expect("UTF-8").to_owned();
    let args: Vec<String> = spec.args.iter().map(|a| utf8(a)).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut out = format!(
        "[upstreams.{name}]\ncommand = {}\nargs = {}\n",
        q(&utf8(spec.program.as_os_str())),
        qa(&args)
    );
    if let Some(cwd) = &spec.current_dir {
        out.push_str(&format!("cwd = {}\n", q(cwd.to_str().unwrap())));
    }
    if !spec.env.is_empty() {
        out.push_str(&format!("[upstreams.{name}.env]\n"));
        for (k, v) in &spec.env {
            out.push_str(&format!("{} = {}\n", q(&utf8(k)), q(&utf8(v))));
        }
    }
    out
}

/// server-everything serving `mode` (`streamableHttp` or `sse`) on a free port of
/// 127.0.0.1; returns it once the port accepts connections.
async fn everything_over_http(spec: &peers::PeerSpec, mode: &str) -> (Child, u16) {
    let port = free_port();
    let entry = spec.args.first().expect("the server's entry point");
    let mut child = Command::new(&spec.program)
        .arg(entry)
        .arg(mode)
        .env("PORT", port.to_string())
        .env(
            "NODE_OPTIONS",
            format!("--require {}", fixture("bind-loopback.cjs")),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs");
    let start = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("server-everything {mode} exited: {status}");
        }
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            break;
        }
        assert!(
            start.elapsed() < LIMIT,
            "server-everything {mode} does not listen"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (child, port)
}

fn git(git: &Path, repo: &Path, args: &[&str]) {
    let out = std::process::Command::new(git)
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

const COMMIT: &str = "first commit through the gateway";

/// Starts every upstream and the gateway; `None` (after `SKIPPED: ...`) when a
/// peer is not installed.
async fn scene() -> Option<Scene> {
    let dir = peers::TempDir::new("gateway-peers");
    let files = dir.path().join("files");
    std::fs::create_dir(&files).unwrap();
    std::fs::write(files.join("hello.txt"), "line one\nline two\n").unwrap();
    // 2.2 MB: a result past the 1 MiB the Python SDK caps an SSE event at.
    let big: String = (0..200_000).map(|i| format!("row {i:06}\n")).collect();
    std::fs::write(files.join("big.txt"), big).unwrap();
    std::fs::create_dir(files.join("sub")).unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();

    let everything = peers::everything()?;
    let filesystem = peers::filesystem(&files)?;
    let memory = peers::memory(&dir.path().join("memory.jsonl"))?;
    let time = peers::time()?;
    let git_server = peers::git_server(&repo)?;
    let git_bin = peers::git()?;

    git(&git_bin, &repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README"), "interop\n").unwrap();
    git(&git_bin, &repo, &["add", "README"]);
    git(
        &git_bin,
        &repo,
        &[
            "-c",
            "user.name=Switchboard Test",
            "-c",
            "user.email=test@switchboard.invalid",
            "commit",
            "-q",
            "-m",
            COMMIT,
        ],
    );
    std::fs::write(repo.join("untracked.txt"), "new\n").unwrap();

    let (http_child, http_port) = everything_over_http(&everything, "streamableHttp").await;
    let (sse_child, sse_port) = everything_over_http(&everything, "sse").await;

    let config = [
        stdio_upstream("everything", &everything),
        stdio_upstream("filesystem", &filesystem),
        stdio_upstream("memory", &memory),
        stdio_upstream("time", &time),
        stdio_upstream("git", &git_server),
        format!(
            "[upstreams.evhttp]\nurl = \"http://127.0.0.1:{http_port}/mcp\"\ntransport = \"streamable-http\"\n"
        ),
        format!("[upstreams.evsse]\nurl = \"http://127.0.0.1:{sse_port}/sse\"\ntransport = \"sse\"\n"),
        gateway_util::example_upstream("example", &["--modern-only"]),
        // Two that are down for good, each with a list timeout of a minute:
        // every client's lists and calls go on without waiting for them.
        "[upstreams.broken]\ncommand = \"sh\"\nargs = [\"-c\", \"exit 3\"]\ntimeout = \"60s\"\n".into(),
        format!(
            "[upstreams.refused]\nurl = \"http://127.0.0.1:{}/mcp\"\ntimeout = \"60s\"\n",
            free_port()
        ),
    ]
    .concat();
    let gw = GatewayProc::start(dir.path(), &config).await;
    // Every upstream ready (listed) before the clients start.
    let names = [
        "everything",
        "filesystem",
        "memory",
        "time",
        "git",
        "evhttp",
        "evsse",
        "example",
    ];
    eventually(Duration::from_secs(60), "every upstream ready", || async {
        // /readyz is 200 once one is ready: wait for all through a list.
        let client = switchboard::Client::connect_url(
            &gw.url,
            gateway_util::options().with_era(switchboard::client::EraPolicy::Legacy),
            switchboard::client::http::HttpClientConfig::new(""),
        )
        .await
        .ok()?;
        let tools = client.list_tools().await.ok()?;
        client.close().await;
        names
            .iter()
            .all(|n| {
                let prefix = format!("{n}__");
                tools.iter().any(|t| t.name.starts_with(&prefix))
            })
            .then_some(())
    })
    .await;
    Some(Scene {
        gw,
        dir,
        _http: vec![http_child, sse_child],
    })
}

impl Scene {
    fn files(&self) -> PathBuf {
        self.dir.path().join("files")
    }

    fn repo(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    /// A tool of every upstream, with text unique to `tag` where the tool
    /// echoes or stores it.
    fn calls(&self, tag: &str) -> Vec<Call> {
        let files = self.files();
        let repo = self.repo();
        let message = format!("hello {tag}");
        let echo = format!("Echo: {message}");
        let entity = format!("entity-{tag}");
        vec![
            Call {
                name: "everything__echo",
                arguments: json!({"message": message}),
                expect: echo.clone(),
            },
            Call {
                name: "evhttp__echo",
                arguments: json!({"message": message}),
                expect: echo.clone(),
            },
            Call {
                name: "evsse__echo",
                arguments: json!({"message": message}),
                expect: echo,
            },
            Call {
                name: "filesystem__list_directory",
                arguments: json!({"path": files.to_str().unwrap()}),
                expect: "[FILE] hello.txt".into(),
            },
            Call {
                name: "filesystem__read_text_file",
                arguments: json!({"path": files.join("hello.txt").to_str().unwrap()}),
                expect: "line one\nline two".into(),
            },
            Call {
                name: "memory__create_entities",
                arguments: json!({"entities": [
                    {"name": entity, "entityType": "test", "observations": [format!("seen by {tag}")]},
                ]}),
                expect: entity.clone(),
            },
            Call {
                name: "memory__read_graph",
                arguments: json!({}),
                expect: format!("seen by {tag}"),
            },
            Call {
                name: "time__get_current_time",
                arguments: json!({"timezone": "UTC"}),
                expect: "\"timezone\": \"UTC\"".into(),
            },
            Call {
                name: "git__git_status",
                arguments: json!({"repo_path": repo.to_str().unwrap()}),
                expect: "untracked.txt".into(),
            },
            Call {
                name: "git__git_log",
                arguments: json!({"repo_path": repo.to_str().unwrap(), "max_count": 5}),
                expect: COMMIT.into(),
            },
            Call {
                name: "example__echo",
                arguments: json!({"text": format!("example {tag}")}),
                expect: format!("example {tag}"),
            },
        ]
    }

    /// A read of the 2.2 MB file: one result over 1 MiB.
    fn big_read(&self) -> Call {
        Call {
            name: "filesystem__read_text_file",
            arguments: json!({"path": self.files().join("big.txt").to_str().unwrap()}),
            expect: "row 199999".into(),
        }
    }

    fn calls_json(&self, tag: &str) -> String {
        Self::as_json(self.calls(tag))
    }

    fn as_json(calls: Vec<Call>) -> String {
        let calls: Vec<Value> = calls
            .into_iter()
            .map(|c| json!({"name": c.name, "arguments": c.arguments, "expect": c.expect}))
            .collect();
        Value::from(calls).to_string()
    }
}

/// Our library client in each era: every page listed (each name once), a tool
/// of every upstream called.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_library_client_reaches_every_real_upstream_through_the_gateway() {
    let _serial = SERIAL.lock().await;
    let Some(scene) = scene().await else {
        return;
    };
    let started = Instant::now();
    for leg in LEGS {
        let client = connect(&scene.gw, leg).await;
        let tools = bounded(client.list_tools())
            .await
            .unwrap_or_else(|e| panic!("{leg:?}: tools/list: {e}"));
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{leg:?}: a name listed twice");
        // server-everything over three transports: the same tools under three
        // prefixes.
        let of = |p: &str| {
            let mut v: Vec<&str> = names.iter().filter_map(|n| n.strip_prefix(p)).collect();
            v.sort_unstable();
            v
        };
        assert_eq!(of("everything__"), of("evhttp__"), "{leg:?}");
        assert_eq!(of("everything__"), of("evsse__"), "{leg:?}");
        let tag = format!("lib-{leg:?}");
        for call in scene.calls(&tag) {
            assert!(
                names.contains(&call.name),
                "{leg:?}: {} not in {names:?}",
                call.name
            );
            let r = bounded(client.call_tool(call.name, call.arguments.clone()))
                .await
                .unwrap_or_else(|e| panic!("{leg:?}: {}: {e}", call.name));
            assert!(!r.is_error(), "{leg:?}: {} failed: {r:?}", call.name);
            let text = text_of(&r);
            assert!(
                text.contains(&call.expect),
                "{leg:?}: {}: {:?} not in {text}",
                call.name,
                call.expect
            );
            if call.name.ends_with("__echo") && call.name != "example__echo" {
                assert_eq!(text, call.expect, "{leg:?}: {}", call.name);
            }
            if call.name == "example__echo" {
                assert_eq!(text, call.expect, "{leg:?}");
            }
        }
        client.close().await;
    }
    eprintln!("library legs in {:?}", started.elapsed());
}

/// `switchboard tools list/call URL` against the gateway, `--era legacy` and
/// `--era modern`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_switchboard_binary_reaches_every_real_upstream_through_the_gateway() {
    let _serial = SERIAL.lock().await;
    let Some(scene) = scene().await else {
        return;
    };
    for era in ["legacy", "modern"] {
        let mut cmd = std::process::Command::new(gateway_util::BIN);
        cmd.args(["tools", "list", &scene.gw.url, "--json", "--era", era]);
        let out = peers::run_bounded_async(cmd, peers::SCRIPT_BOUND).await;
        let listing = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "tools list --era {era}: {}\n{listing}",
            String::from_utf8_lossy(&out.stderr)
        );
        let tag = format!("cli-{era}");
        for call in scene.calls(&tag) {
            assert!(
                listing.contains(&format!("\"{}\"", call.name)),
                "--era {era}: {} not listed: {listing}",
                call.name
            );
            let mut cmd = std::process::Command::new(gateway_util::BIN);
            cmd.args([
                "tools",
                "call",
                &scene.gw.url,
                call.name,
                "--json",
                "--era",
                era,
            ])
            .arg("--args")
            .arg(call.arguments.to_string());
            let out = peers::run_bounded_async(cmd, peers::SCRIPT_BOUND).await;
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "tools call {} --era {era}: {}\n{stdout}",
                call.name,
                String::from_utf8_lossy(&out.stderr)
            );
            let result: Value = serde_json::from_str(stdout.trim())
                .unwrap_or_else(|e| panic!("{}: not JSON ({e}): {stdout}", call.name));
            assert_ne!(result["isError"], true, "{}: {result}", call.name);
            let text: String = result["content"]
                .as_array()
                .unwrap_or_else(|| panic!("{}: no content: {result}", call.name))
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect();
            assert!(
                text.contains(&call.expect),
                "--era {era}: {}: {:?} not in {text}",
                call.name,
                call.expect
            );
        }
    }
}

/// Runs an interop client script; it must print `marker`.
async fn run_script(spec: peers::PeerSpec, args: &[&str], marker: &str) {
    let mut cmd = spec.command();
    cmd.args(args);
    let out = peers::run_bounded_async(cmd, peers::SCRIPT_BOUND).await;
    let stdout = peers::assert_script_ok(&out, marker);
    eprintln!("{}", stdout.trim_end());
}

fn interop(file: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/interop")
        .join(file);
    assert!(path.is_file(), "{} is missing", path.display());
    path
}

/// The official Python SDK client over Streamable HTTP and legacy SSE.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_client_reaches_every_real_upstream_through_the_gateway() {
    let _serial = SERIAL.lock().await;
    let Some(spec) = peers::python_script(
        "python-gateway-client",
        &interop("python_gateway_client.py"),
    ) else {
        return;
    };
    let Some(scene) = scene().await else {
        return;
    };
    let sse = format!("{}/sse", scene.gw.base);
    // Over Streamable HTTP a result over 1 MiB too (a lone response first is
    // JSON, not an SSE event the SDK would refuse); not over legacy SSE,
    // which has only events.
    let mut calls = scene.calls("py-http");
    calls.push(scene.big_read());
    let http_calls = Scene::as_json(calls);
    run_script(
        spec.clone(),
        &["http", &scene.gw.url, &http_calls],
        "python gateway client ok (http",
    )
    .await;
    let sse_calls = scene.calls_json("py-sse");
    run_script(
        spec,
        &["sse", &sse, &sse_calls],
        "python gateway client ok (sse",
    )
    .await;
}

/// The official TypeScript SDK client over Streamable HTTP and legacy SSE.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_client_reaches_every_real_upstream_through_the_gateway() {
    let _serial = SERIAL.lock().await;
    let Some(spec) = peers::node_script("ts-gateway-client", &interop("ts_gateway_client.cjs"))
    else {
        return;
    };
    let Some(scene) = scene().await else {
        return;
    };
    let sse = format!("{}/sse", scene.gw.base);
    let http_calls = scene.calls_json("ts-http");
    run_script(
        spec.clone(),
        &["http", &scene.gw.url, &http_calls],
        "ts gateway client ok (http",
    )
    .await;
    let sse_calls = scene.calls_json("ts-sse");
    run_script(
        spec,
        &["sse", &sse, &sse_calls],
        "ts gateway client ok (sse",
    )
    .await;
}

/// The TypeScript SDK v2 client (`@modelcontextprotocol/client`) over Streamable
/// HTTP: `versionNegotiation` `auto` (it must report 2026-07-28) and `legacy`
/// (2025-11-25).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_v2_client_reaches_every_real_upstream_through_the_gateway() {
    let _serial = SERIAL.lock().await;
    let Some(spec) = peers::ts_v2_script("ts2-gateway-client", &interop("ts2_gateway_client.mjs"))
    else {
        return;
    };
    let Some(scene) = scene().await else {
        return;
    };
    for (mode, version) in [
        ("auto", "version 2026-07-28"),
        ("legacy", "version 2025-11-25"),
    ] {
        let calls = scene.calls_json(&format!("ts2-{mode}"));
        let mut cmd = spec.command();
        cmd.args([mode, &scene.gw.url, &calls]);
        let out = peers::run_bounded_async(cmd, peers::SCRIPT_BOUND).await;
        let stdout = peers::assert_script_ok(&out, &format!("ts2 gateway client ok ({mode},"));
        eprintln!("{}", stdout.trim_end());
        assert!(
            stdout.contains(version),
            "{mode}: {version} not in {stdout}"
        );
    }
}

/// The MCP Inspector's CLI mode (`--protocol-era modern`): `tools/list` names
/// every called tool, and each call's text holds what it must.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_cli_reaches_every_real_upstream_through_the_gateway() {
    let _serial = SERIAL.lock().await;
    let Some(spec) = peers::inspector_cli() else {
        return;
    };
    let Some(scene) = scene().await else {
        return;
    };
    let home = scene.dir.path().join("inspector-home");
    std::fs::create_dir(&home).unwrap();
    let run = |args: Vec<String>| {
        let mut cmd = spec.command();
        cmd.arg(&scene.gw.url)
            .args(["--transport", "http", "--format", "json", "--quiet"])
            .args(["--stored-auth-only", "--protocol-era", "modern"])
            .args(args)
            .env("HOME", &home)
            .env("MCP_CATALOG_PATH", home.join("mcp.json"))
            .env("MCP_CLIENT_CONFIG_PATH", home.join("client.json"));
        async move {
            let out = peers::run_bounded_async(cmd, peers::SCRIPT_BOUND).await;
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "inspector failed ({}):\n{stdout}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            let v: Value = serde_json::from_str(stdout.trim())
                .unwrap_or_else(|e| panic!("inspector: not JSON ({e}): {stdout}"));
            v["result"].clone()
        }
    };
    let listing = run(vec!["--method".into(), "tools/list".into()]).await;
    let names: Vec<&str> = listing["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {listing}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for call in scene.calls("inspector") {
        assert!(names.contains(&call.name), "{} not in {names:?}", call.name);
        let result = run(vec![
            "--method".into(),
            "tools/call".into(),
            "--tool-name".into(),
            call.name.into(),
            "--tool-args-json".into(),
            call.arguments.to_string(),
        ])
        .await;
        assert_ne!(result["isError"], true, "{}: {result}", call.name);
        let text: String = result["content"]
            .as_array()
            .unwrap_or_else(|| panic!("{}: no content: {result}", call.name))
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect();
        assert!(
            text.contains(&call.expect),
            "{}: {:?} not in {text}",
            call.name,
            call.expect
        );
    }
}
