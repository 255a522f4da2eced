//! `switchboard auth login|status|logout` and the automatic login of `tools …`
//! against MCP servers protected by the official SDKs' authorization servers
//! (`crates/switchboard/tests/interop/python_oauth_server.py`, with refresh
//! tokens and RFC 7009 revocation, and `ts_oauth_server.cjs`). The real
//! `switchboard` binary runs with `$BROWSER` set to `fixtures/oauth_browser.py`,
//! which follows the authorization server's redirects onto the CLI's loopback
//! listener, as a person's browser would, and logs what it did.
//!
//! Required when `SWITCHBOARD_PYTHON` (and, for the TypeScript test,
//! `SWITCHBOARD_NODE` and `SWITCHBOARD_PEERS_NODE`) are set (`scripts/test`
//! sets them from `scripts/install-peers`); otherwise each test prints why it
//! is skipped and passes. Every wait is bounded.

#[path = "../../switchboard/tests/common/peers.rs"]
mod peers;

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

/// How long a server has to print its URL.
const READY: Duration = Duration::from_secs(30);

/// Kills the server when the test ends, however it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a server script and reads the URL it prints (bounded).
fn start_server(spec: Option<peers::PeerSpec>) -> Option<(Killed, String)> {
    let mut cmd = spec?.command();
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = Killed(cmd.spawn().expect("start the OAuth server"));
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(READY)
        .expect("the OAuth server did not print its URL in time");
    let ready: Value = serde_json::from_str(line.trim()).expect("the ready line is JSON");
    Some((child, ready["url"].as_str().unwrap().to_owned()))
}

fn python_server() -> Option<(Killed, String)> {
    let script = peers::interop_script("python_oauth_server.py");
    start_server(peers::python_script("python-oauth-server", &script))
}

/// A test's own directory: the login file's parent (not yet created, so its
/// mode is switchboard's) and the browser's log.
struct Scene {
    dir: PathBuf,
    python: PathBuf,
}

impl Scene {
    fn new(name: &str, python: PathBuf) -> Self {
        let dir =
            std::env::temp_dir().join(format!("switchboard-auth-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scene { dir, python }
    }

    fn auth_file(&self) -> PathBuf {
        self.dir
            .join("config")
            .join("switchboard")
            .join("auth.json")
    }

    fn browser_log(&self) -> PathBuf {
        self.dir.join("browser.log")
    }

    /// The browser's log lines (none before it was first opened).
    fn browser(&self) -> Vec<String> {
        std::fs::read_to_string(self.browser_log())
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The environment of a run: the login file in the scene's directory,
    /// `$BROWSER` playing the user in `mode`.
    fn env(&self, mode: &str) -> Vec<(String, String)> {
        let browser = format!(
            "{} {}",
            self.python.display(),
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/oauth_browser.py")
                .display()
        );
        let file = self.auth_file();
        let log = self.browser_log();
        [
            ("SWITCHBOARD_AUTH_FILE", file.to_str().unwrap()),
            ("BROWSER", &browser),
            ("SB_TEST_BROWSER_LOG", log.to_str().unwrap()),
            ("SB_TEST_BROWSER_MODE", mode),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// Runs `switchboard ARGS` in the scene (see [`Scene::env`]).
    fn run_mode(&self, args: &[&str], mode: &str) -> common::Run {
        let env = self.env(mode);
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        common::run_with_env(args, None, &env)
    }

    fn run(&self, args: &[&str]) -> common::Run {
        self.run_mode(args, "follow")
    }

    /// The login file's entries.
    fn entries(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.auth_file()).expect("the login file");
        let v: Value = serde_json::from_str(&text).expect("JSON");
        v["authorizations"].as_array().cloned().unwrap_or_default()
    }
}

impl Drop for Scene {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn ok(run: &common::Run, what: &str) {
    assert_eq!(
        run.code,
        Some(0),
        "{what}: stdout {:?} stderr {:?}",
        run.stdout,
        run.stderr
    );
}

/// The tool's text: the output's first line (the Python SDK adds its
/// `structuredContent` below it).
fn first_line(run: &common::Run) -> &str {
    run.stdout.lines().next().unwrap_or_default()
}

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Login, status, the stored token used without a new login, a refresh ahead
/// of expiry, logout with revocation.
#[test]
fn login_then_tools_use_the_stored_token_and_logout_forgets_it() {
    let Some(python) = peers::python() else {
        return;
    };
    let Some((_server, url)) = python_server() else {
        return;
    };
    let scene = Scene::new("login", python);

    let login = scene.run(&["auth", "login", &url]);
    ok(&login, "auth login");
    assert!(
        login.stdout.contains(&format!("Logged in to {url}")),
        "{}",
        login.stdout
    );
    assert_eq!(scene.browser(), ["opened", "callback 200"]);

    // The file is the user's alone, and so is the directory it made.
    assert_eq!(mode_of(&scene.auth_file()), 0o600);
    assert_eq!(mode_of(scene.auth_file().parent().unwrap()), 0o700);
    let entries = scene.entries();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let entry = &entries[0];
    let access = entry["access_token"].as_str().unwrap().to_owned();
    let refresh = entry["refresh_token"].as_str().unwrap().to_owned();
    let client_id = entry["client_id"].as_str().unwrap().to_owned();
    assert_eq!(entry["server"], url.as_str());
    assert!(!login.stdout.contains(&access) && !login.stderr.contains(&access));

    // Status: the entry, never its tokens.
    let status = scene.run(&["auth", "status"]);
    ok(&status, "auth status");
    for needed in [
        url.as_str(),
        "issuer:",
        "resource:",
        "client id:",
        "expires:",
        &client_id,
    ] {
        assert!(
            status.stdout.contains(needed),
            "{needed}: {}",
            status.stdout
        );
    }
    for secret in [&access, &refresh] {
        assert!(
            !status.stdout.contains(secret.as_str()) && !status.stderr.contains(secret.as_str())
        );
    }
    ok(&scene.run(&["auth", "status", &url]), "auth status URL");
    let other = scene.run(&["auth", "status", "http://127.0.0.1:9/other"]);
    assert_eq!(other.code, Some(1), "{other:?}");

    // The stored token is used: no new login, the same client.
    let list = scene.run(&["tools", "list", &url, "--json"]);
    ok(&list, "tools list");
    assert!(list.stdout.contains("whoami"), "{}", list.stdout);
    let call = scene.run(&["tools", "call", &url, "whoami"]);
    ok(&call, "tools call");
    assert_eq!(first_line(&call), format!("client {client_id} refreshed 0"));
    assert_eq!(scene.browser().len(), 2, "{:?}", scene.browser());

    // A token that runs out within the margin is refreshed before the first
    // request (the server counts the refresh), still without a browser.
    let mut file: Value =
        serde_json::from_str(&std::fs::read_to_string(scene.auth_file()).unwrap()).unwrap();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    file["authorizations"][0]["expires_at"] = (now + 5).into();
    std::fs::write(scene.auth_file(), file.to_string()).unwrap();
    // With every log line on (-vvv): none holds a token.
    let call = scene.run(&["-vvv", "tools", "call", &url, "whoami"]);
    ok(&call, "tools call after the refresh");
    assert!(
        call.stderr.contains("access token refreshed"),
        "{}",
        call.stderr
    );
    for secret in [&access, &refresh] {
        assert!(!call.stderr.contains(secret.as_str()), "a token in the log");
    }
    assert_eq!(first_line(&call), format!("client {client_id} refreshed 1"));
    assert_eq!(scene.browser().len(), 2, "{:?}", scene.browser());
    let entries = scene.entries();
    assert_eq!(entries.len(), 1);
    assert_ne!(entries[0]["access_token"].as_str(), Some(access.as_str()));
    assert!(entries[0]["expires_at"].as_u64().unwrap() > now + 600);
    assert_eq!(mode_of(&scene.auth_file()), 0o600);

    // Logout: the entry is gone, its tokens revoked at the server.
    let before = std::fs::read(scene.auth_file()).unwrap();
    let logout = scene.run(&["auth", "logout", &url]);
    ok(&logout, "auth logout");
    assert!(
        logout.stdout.contains("tokens revoked"),
        "{}",
        logout.stdout
    );
    assert!(scene.entries().is_empty());
    let status = scene.run(&["auth", "status", &url]);
    assert_eq!(status.code, Some(1), "{status:?}");
    // Revoked at the server: with the entry put back, its access token gets a
    // 401 and its refresh token is refused, so without a browser login
    // (--no-login) the command fails at once, naming `auth login`.
    std::fs::write(scene.auth_file(), before).unwrap();
    let refused = scene.run(&["tools", "list", &url, "--no-login"]);
    assert_eq!(refused.code, Some(2), "{refused:?}");
    assert!(
        refused.stderr.contains("switchboard auth login"),
        "{}",
        refused.stderr
    );
    assert_eq!(scene.browser().len(), 2, "{:?}", scene.browser());
}

/// No stored login: the first 401 of `tools call` logs in through the browser,
/// the call goes on, and the login is kept.
#[test]
fn tools_call_logs_in_on_the_first_401() {
    let Some(python) = peers::python() else {
        return;
    };
    let Some((_server, url)) = python_server() else {
        return;
    };
    let scene = Scene::new("auto", python);
    let call = scene.run(&["tools", "call", &url, "whoami"]);
    ok(&call, "tools call");
    assert!(call.stdout.starts_with("client "), "{}", call.stdout);
    assert!(
        call.stderr.contains("/authorize?"),
        "the URL is printed: {}",
        call.stderr
    );
    assert_eq!(scene.browser(), ["opened", "callback 200"]);
    let entries = scene.entries();
    assert_eq!(entries.len(), 1);
    assert_eq!(
        first_line(&call),
        format!(
            "client {} refreshed 0",
            entries[0]["client_id"].as_str().unwrap()
        )
    );
}

/// A callback whose `state` is not the login's is refused (400) and does not
/// end the login; a login that only ever gets such a callback fails when its
/// time is up and stores nothing.
#[test]
fn a_callback_with_a_wrong_state_is_refused() {
    let Some(python) = peers::python() else {
        return;
    };
    let Some((_server, url)) = python_server() else {
        return;
    };
    let scene = Scene::new("state", python);
    let login = scene.run_mode(&["auth", "login", &url], "wrong-state-first");
    ok(&login, "auth login");
    assert_eq!(
        scene.browser(),
        ["opened", "wrong-state 400", "callback 200"]
    );
    assert!(
        login.stderr.contains("refused a redirect whose state"),
        "{}",
        login.stderr
    );
    assert_eq!(scene.entries().len(), 1);

    let _ = std::fs::remove_file(scene.browser_log());
    ok(&scene.run(&["auth", "logout"]), "auth logout");
    let login = scene.run_mode(
        &["auth", "login", &url, "--login-timeout", "3"],
        "wrong-state-only",
    );
    assert_eq!(login.code, Some(2), "{login:?}");
    assert!(login.stderr.contains("not completed"), "{}", login.stderr);
    assert_eq!(scene.browser(), ["opened", "wrong-state 400"]);
    assert!(scene.entries().is_empty());
}

/// The TypeScript SDK's authorization server: login, then a call with the
/// stored token (the SDK verified it: its client and scope).
#[test]
fn login_at_the_ts_sdk_authorization_server() {
    let Some(python) = peers::python() else {
        return;
    };
    let script = peers::interop_script("ts_oauth_server.cjs");
    let Some((_server, url)) = start_server(peers::node_script("ts-oauth-server", &script)) else {
        return;
    };
    let scene = Scene::new("ts", python);
    ok(&scene.run(&["auth", "login", &url]), "auth login");
    let call = scene.run(&["tools", "call", &url, "whoami"]);
    ok(&call, "tools call");
    let client_id = scene.entries()[0]["client_id"].as_str().unwrap().to_owned();
    assert_eq!(
        first_line(&call),
        format!("client {client_id} scopes mcp:tools")
    );
    assert_eq!(scene.browser(), ["opened", "callback 200"]);
    // No revocation endpoint there: logout still forgets the login.
    let logout = scene.run(&["auth", "logout", &url]);
    ok(&logout, "auth logout");
    assert!(scene.entries().is_empty());
}

/// `switchboard connect` in front of the protected server: the host app's
/// `initialize` meets the 401, the browser login runs (stdout stays JSON-RPC),
/// and the relay goes on with the token; the login is kept.
#[test]
fn connect_logs_in_on_the_first_401() {
    const WAIT: Duration = Duration::from_secs(30);
    let Some(python) = peers::python() else {
        return;
    };
    let Some((_server, url)) = python_server() else {
        return;
    };
    let scene = Scene::new("connect", python);
    let mut child = Killed(
        Command::new(common::exe())
            .args(["connect", &url])
            .envs(scene.env("follow"))
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn connect"),
    );
    let mut host = common::Host::new(&mut child.0);
    host.send(
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},
        "clientInfo":{"name":"host","version":"1"}}}),
    );
    let init = host.answer(1, WAIT);
    assert!(init.get("result").is_some(), "{init}");
    host.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    host.send(json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"whoami","arguments":{}}}));
    let call = host.answer(2, WAIT);
    let text = call["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    let entries = scene.entries();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(
        text,
        format!(
            "client {} refreshed 0",
            entries[0]["client_id"].as_str().unwrap()
        ),
        "{call}"
    );
    assert_eq!(scene.browser(), ["opened", "callback 200"]);
    drop(host);
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "connect did not exit within {WAIT:?} of stdin's end"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
}

/// Nobody to ask (no `$BROWSER`, no `xdg-open` on the `PATH`, stderr not a
/// terminal): the 401 fails at once with the hint, instead of waiting for a
/// login no one can complete.
#[test]
fn without_a_browser_or_terminal_the_401_fails_with_a_hint() {
    let Some(python) = peers::python() else {
        return;
    };
    let Some((_server, url)) = python_server() else {
        return;
    };
    let scene = Scene::new("nobody", python);
    let empty = scene.dir.join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let file = scene.auth_file();
    let run = common::run_with_env(
        &["tools", "list", &url],
        None,
        &[
            ("SWITCHBOARD_AUTH_FILE", file.to_str().unwrap()),
            ("BROWSER", ""),
            ("PATH", empty.to_str().unwrap()),
        ],
    );
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(
        run.stderr.contains("no browser or terminal can reach you")
            && run
                .stderr
                .contains(&format!("switchboard auth login {url}")),
        "{}",
        run.stderr
    );
    assert!(scene.browser().is_empty());
}
