//! Helpers of the end-to-end authorization tests with a real authorization
//! server (`oidc-provider` in its `--people` mode) and the person at the
//! browser (`fixtures/oauth_browser.py`): starting it, a scene per test (its
//! login file, the browser's log, `switchboard` runs with `$BROWSER` set), and
//! reading what was stored. Used by `auth_e2e` (the bridge) and
//! `gateway_auth_e2e` (the gateway); each declares the `peers` and `common`
//! modules this one uses. Every wait is bounded.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};

use crate::{common, peers};

/// How long a server has to print its URL, and a host app to get an answer.
pub const WAIT: Duration = Duration::from_secs(30);

/// The bound given to each login (`--login-timeout`), under `common::BOUND`.
pub const LOGIN_TIMEOUT: &str = "40";

/// Kills a server when the test ends, however it ends.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The first line of `child`'s stdout that `pick` accepts, within [`WAIT`];
/// the rest of its stdout is drained so it never blocks on a full pipe.
pub fn wait_for_line(child: &mut Killed, what: &str, pick: fn(&str) -> Option<String>) -> String {
    try_wait_for_line(child, what, pick)
        .unwrap_or_else(|| panic!("{what} ended without printing its URL"))
}

/// [`wait_for_line`], `None` when `child` ends its stdout first (it could
/// not start: a port another process took meanwhile).
pub fn try_wait_for_line(
    child: &mut Killed,
    what: &str,
    pick: fn(&str) -> Option<String>,
) -> Option<String> {
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if !sent {
                if let Some(found) = pick(&line) {
                    let _ = tx.send(found);
                    sent = true;
                }
            }
        }
    });
    match rx.recv_timeout(WAIT) {
        Ok(line) => Some(line),
        Err(mpsc::RecvTimeoutError::Disconnected) => None,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what} did not print its URL within {WAIT:?}")
        }
    }
}

/// Starts oidc-provider in its `--people` mode and reads its issuer; `None`
/// (skipped, reason printed) when Node is not installed.
pub fn start_oidc() -> Option<(Killed, String)> {
    let script = peers::interop_script("oidc_provider.mjs");
    let mut cmd = peers::node_script("oidc-provider", &script)?
        .arg("--people")
        .command();
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = Killed(cmd.spawn().expect("start oidc-provider"));
    let issuer = wait_for_line(&mut child, "oidc-provider", |line| {
        let ready: Value = serde_json::from_str(line.trim()).ok()?;
        Some(ready["issuer"].as_str()?.to_owned())
    });
    Some((child, issuer))
}

/// A test's own directory: the login file (not yet created) and the browser's
/// log.
pub struct Scene {
    dir: peers::TempDir,
    python: PathBuf,
}

impl Scene {
    pub fn new(name: &str, python: &Path) -> Self {
        Scene {
            dir: peers::TempDir::new(&format!("e2e-{name}")),
            python: python.to_owned(),
        }
    }

    pub fn auth_file(&self) -> PathBuf {
        self.dir.path().join("auth.json")
    }

    pub fn browser_log(&self) -> PathBuf {
        self.dir.path().join("browser.log")
    }

    pub fn browser_script() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oauth_browser.py")
    }

    /// The browser's log lines (none before it was first opened).
    pub fn browser(&self) -> Vec<String> {
        std::fs::read_to_string(self.browser_log())
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The environment of a run: the login file in the scene's directory,
    /// `$BROWSER` the script that signs in and consents.
    pub fn env(&self) -> Vec<(String, String)> {
        let browser = format!(
            "{} {}",
            self.python.display(),
            Self::browser_script().display()
        );
        vec![
            ("SWITCHBOARD_AUTH_FILE".into(), path_str(&self.auth_file())),
            ("BROWSER".into(), browser),
            ("SB_TEST_BROWSER_LOG".into(), path_str(&self.browser_log())),
            ("SB_TEST_BROWSER_MODE".into(), "follow".into()),
        ]
    }

    /// Runs `switchboard ARGS` in the scene (bounded by `common::BOUND`).
    pub fn run(&self, args: &[&str]) -> common::Run {
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        common::run_with_env(args, None, &env)
    }

    /// The login file's entries.
    pub fn entries(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.auth_file()).expect("the login file");
        let v: Value = serde_json::from_str(&text).expect("JSON");
        v["authorizations"].as_array().cloned().unwrap_or_default()
    }
}

pub fn path_str(p: &Path) -> String {
    p.to_str().unwrap().to_owned()
}

pub fn ok(run: &common::Run, what: &str) {
    assert_eq!(
        run.code,
        Some(0),
        "{what}: stdout {:?} stderr {:?}",
        run.stdout,
        run.stderr
    );
}

/// The browser's steps on oidc-provider: its login page, its consent page, then
/// the redirect to switchboard's loopback listener.
pub const CONSENTED: [&str; 4] = ["opened", "form login", "form consent", "callback 200"];

/// The claims of a JWT (its payload, not verified: the bridge does that).
pub fn claims(jwt: &str) -> Value {
    let payload = jwt.split('.').nth(1).expect("a JWT");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url");
    serde_json::from_slice(&bytes).expect("JSON claims")
}

pub fn audience_has(claims: &Value, resource: &str) -> bool {
    match &claims["aud"] {
        Value::String(s) => s == resource,
        Value::Array(a) => a.iter().any(|x| x == resource),
        _ => false,
    }
}

/// POSTs an `initialize` with `token`; the status and `WWW-Authenticate`.
pub fn initialize_with(url: &str, token: &str) -> (u16, String) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let r = reqwest::Client::builder()
            .timeout(WAIT)
            .build()
            .unwrap()
            .post(url)
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"}}})
                .to_string(),
            )
            .send()
            .await
            .expect("the server answers");
        let challenge = r
            .headers()
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        (r.status().as_u16(), challenge)
    })
}
