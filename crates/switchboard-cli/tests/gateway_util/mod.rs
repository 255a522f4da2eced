//! Helpers for the gateway tests: start `switchboard gateway` as a process on a
//! configuration file the test writes, read its banner, connect clients.
#![allow(dead_code)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use switchboard::client::http::HttpClientConfig;
use switchboard::client::EraPolicy;
use switchboard::{Client, ClientOptions};
use switchboard_protocol::types::{CallToolResult, Implementation};
use switchboard_protocol::version::Era;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The bound on each await of these tests.
pub const LIMIT: Duration = Duration::from_secs(30);

pub const BIN: &str = env!("CARGO_BIN_EXE_switchboard");

pub async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("the test's bound elapsed")
}

/// A TOML basic string holding `s` (JSON's escapes are TOML's).
pub fn q(s: &str) -> String {
    Value::from(s).to_string()
}

/// A TOML array of strings.
pub fn qa(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| q(s)).collect();
    format!("[{}]", quoted.join(", "))
}

/// `tests/fixtures/FILE` of this crate.
pub fn fixture(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(file);
    assert!(path.is_file(), "{} is missing", path.display());
    path.to_str().expect("a UTF-8 path").to_owned()
}

/// A `[upstreams.NAME]` table running `python3 gateway_upstream.py ARGS`, with
/// `extra` TOML lines (e.g. `prefix = ""`) added.
pub fn fixture_upstream(name: &str, args: &[&str], extra: &str) -> String {
    let mut all = vec![fixture("gateway_upstream.py")];
    all.extend(args.iter().map(|s| (*s).to_owned()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    format!(
        "[upstreams.{name}]\ncommand = \"python3\"\nargs = {}\n{extra}\n",
        qa(&all)
    )
}

/// A `[upstreams.NAME]` table running `switchboard example-server ARGS`.
pub fn example_upstream(name: &str, args: &[&str]) -> String {
    let mut all = vec!["example-server"];
    all.extend_from_slice(args);
    format!(
        "[upstreams.{name}]\ncommand = {}\nargs = {}\n",
        q(BIN),
        qa(&all)
    )
}

/// A running `switchboard gateway`; killed when dropped.
pub struct GatewayProc {
    pub child: Child,
    /// The `/mcp` route: `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// With `--admin`: the admin listener's `IP:PORT`, as its banner said.
    pub admin: Option<String>,
    /// Its stderr (logs at `RUST_LOG`, default `info`).
    pub log: PathBuf,
}

impl GatewayProc {
    /// Writes `config` (TOML) to `dir/gateway.toml` and starts `switchboard
    /// gateway --config it --listen 127.0.0.1:0`, reading the `/mcp` route's URL
    /// from its banner.
    pub async fn start(dir: &Path, config: &str) -> GatewayProc {
        GatewayProc::start_with_args(dir, config, &[]).await
    }

    /// [`start`](Self::start) with `extra_args` after `--listen` (e.g. the
    /// `--auth-*` flags).
    pub async fn start_with_args(dir: &Path, config: &str, extra_args: &[&str]) -> GatewayProc {
        GatewayProc::start_with_env(dir, config, extra_args, &[]).await
    }

    /// [`start_with_args`](Self::start_with_args) with `env` set for it
    /// (after `RUST_LOG`, which it may override).
    pub async fn start_with_env(
        dir: &Path,
        config: &str,
        extra_args: &[&str],
        env: &[(&str, &str)],
    ) -> GatewayProc {
        let file = dir.join("gateway.toml");
        std::fs::write(&file, config).unwrap();
        let log = dir.join("gateway.log");
        let stderr = std::fs::File::create(&log).unwrap();
        let mut child = Command::new(BIN)
            .arg("gateway")
            .arg("--config")
            .arg(&file)
            .args(["--listen", "127.0.0.1:0"])
            .args(extra_args)
            .env(
                "RUST_LOG",
                std::env::var("GATEWAY_TEST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .expect("the switchboard binary runs");
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let banner_log = log.clone();
        let url = tokio::time::timeout(LIMIT, async {
            while let Some(line) = lines.next_line().await.unwrap() {
                let line = line.trim();
                if let Some(rest) = line.strip_prefix("route /mcp:") {
                    return rest.trim().to_owned();
                }
            }
            panic!(
                "the gateway ended without printing its /mcp route: {}",
                std::fs::read_to_string(&banner_log).unwrap_or_default()
            );
        })
        .await
        .expect("the gateway prints its banner in time");
        // With an admin listener, its line ends the banner (after `health:`).
        let mut admin = None;
        if extra_args.contains(&"--admin") {
            admin = tokio::time::timeout(LIMIT, async {
                while let Some(line) = lines.next_line().await.unwrap() {
                    if let Some(rest) = line.trim().strip_prefix("admin: http://") {
                        return rest.split('/').next().map(str::to_owned);
                    }
                }
                None
            })
            .await
            .expect("the gateway prints its admin listener in time");
        }
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        let base = url.trim_end_matches("/mcp").to_owned();
        GatewayProc {
            child,
            url,
            admin,
            base,
            log,
        }
    }

    /// Sends SIGTERM and waits (at most [`LIMIT`]) for the gateway to end; how
    /// long it took and its exit status.
    pub async fn terminate(&mut self) -> (Duration, std::process::ExitStatus) {
        let pid = libc::pid_t::try_from(self.child.id().expect("running")).expect("a pid");
        let start = Instant::now();
        // SAFETY: a plain system call on the gateway this test started, by its id.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        let status = tokio::time::timeout(LIMIT, self.child.wait())
            .await
            .expect("the gateway ends after SIGTERM")
            .unwrap();
        (start.elapsed(), status)
    }

    /// Its stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `GET /readyz`: status and body.
    pub async fn readyz(&self) -> (u16, String) {
        let c = reqwest::Client::builder().timeout(LIMIT).build().unwrap();
        let r = c
            .get(format!("{}/readyz", self.base))
            .send()
            .await
            .expect("/readyz answers");
        let status = r.status().as_u16();
        (status, r.text().await.unwrap())
    }
}

/// Stops the gateway with SIGTERM, so that it shuts its stdio children down
/// (a SIGKILL would orphan those that do not exit on stdin's end, such as
/// server-everything), then kills it if it has not ended within 10 s.
impl Drop for GatewayProc {
    fn drop(&mut self) {
        let Some(pid) = self.child.id() else {
            return;
        };
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return;
        };
        // SAFETY: a plain system call on the gateway this test started, by its id.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("the gateway did not stop within 10 s of SIGTERM: killed");
        let _ = self.child.start_kill();
    }
}

/// How a client reaches the gateway's `/mcp` route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leg {
    /// A Streamable HTTP session (`initialize`, 2025-11-25) at `/mcp`.
    Streamable,
    /// 2026-07-28 stateless requests at `/mcp`.
    Modern,
    /// The legacy HTTP+SSE transport (2024-11-05) at `/sse`.
    LegacySse,
}

pub const LEGS: [Leg; 3] = [Leg::Streamable, Leg::Modern, Leg::LegacySse];

/// The library client on `leg` of `gw`, with `options` (its era set here);
/// checks that it got the era it asked for.
pub async fn connect_with(gw: &GatewayProc, leg: Leg, options: ClientOptions) -> Client {
    let (url, era) = match leg {
        Leg::Streamable => (gw.url.clone(), EraPolicy::Legacy),
        Leg::Modern => (gw.url.clone(), EraPolicy::Modern),
        Leg::LegacySse => (format!("{}/sse", gw.base), EraPolicy::Legacy),
    };
    let client = bounded(Client::connect_url(
        &url,
        options.with_era(era),
        HttpClientConfig::new(""),
    ))
    .await
    .unwrap_or_else(|e| panic!("connect over {leg:?} to {url}: {e}"));
    let want = if leg == Leg::Modern {
        Era::Modern
    } else {
        Era::Legacy
    };
    assert_eq!(client.era(), want, "{leg:?}");
    client
}

pub fn options() -> ClientOptions {
    ClientOptions::new(Implementation::new("switchboard-gateway-tests", "0.1.0"))
}

pub async fn connect(gw: &GatewayProc, leg: Leg) -> Client {
    connect_with(gw, leg, options()).await
}

pub fn text_of(r: &CallToolResult) -> String {
    r.content.iter().filter_map(|b| b.as_text()).collect()
}

/// Every tool name `tools/list` offers (all pages), sorted.
pub async fn tool_names(client: &Client) -> Vec<String> {
    let mut names: Vec<String> = bounded(client.list_tools())
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name)
        .collect();
    names.sort();
    names
}

/// `tools/call` that must succeed without `isError`; its text.
pub async fn call_text(client: &Client, name: &str, arguments: Value) -> String {
    let r = bounded(client.call_tool(name, arguments))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(!r.is_error(), "{name} failed: {r:?}");
    text_of(&r)
}

/// Polls `check` every 100 ms until it returns `Some`, for at most `bound`.
pub async fn eventually<T, F, Fut>(bound: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(start.elapsed() < bound, "not within {bound:?}: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A temporary directory, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        use std::sync::atomic::{AtomicU32, Ordering};
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = std::env::temp_dir().join(format!(
            "switchboard-gw-{tag}-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).expect("create a temp dir");
        TempDir(path.canonicalize().expect("canonical temp dir"))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `switchboard lock --config CONFIG --file LOCK`, which must succeed.
pub fn lock_config(dir: &Path, config: &str, lock: &Path) {
    let file = dir.join("approved.toml");
    std::fs::write(&file, config).unwrap();
    let out = std::process::Command::new(BIN)
        .args(["lock", "--config"])
        .arg(&file)
        .arg("--file")
        .arg(lock)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "lock: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
