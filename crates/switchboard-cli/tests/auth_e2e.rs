//! MCP authorization end to end with a real authorization server: `oidc-provider`
//! (npm, pinned in interop/peers-node; `crates/switchboard/tests/interop/
//! oidc_provider.mjs --people`: authorization code with PKCE S256, open Dynamic
//! Client Registration, RFC 8707 resources issuing JWT access tokens whose `aud`
//! is the resource, refresh tokens, and its login and consent pages) in front of
//! `switchboard bridge --auth-issuer ISSUER --auth-resource URL --auth-scope
//! mcp:tools` (the built-in example server behind it). The person at the browser
//! is `fixtures/oauth_browser.py`, which signs in on the login page and submits
//! the consent page, as a person would, then follows the redirect to the client.
//!
//! - `switchboard tools call` logs in on the first 401 and calls `echo`; the next
//!   call uses the stored token, a token about to run out is refreshed, neither
//!   with the browser;
//! - the official Python SDK client with its `OAuthClientProvider`
//!   (`fixtures/python_oauth_client.py`) logs in and calls `echo`;
//! - `switchboard connect` serves a host app (JSON-RPC on its stdin) against
//!   the protected bridge, logging in on the first 401, also when the person
//!   takes longer than its bound on the remote's first answer;
//! - a real token for another resource (another bridge of the same issuer) is
//!   refused with 401 `invalid_token`.
//!
//! Required when `SWITCHBOARD_PYTHON`, `SWITCHBOARD_NODE` and
//! `SWITCHBOARD_PEERS_NODE` are set (`scripts/test` sets them from
//! `scripts/install-peers`); otherwise each test prints why it is skipped and
//! passes. Everything listens on 127.0.0.1; every wait is bounded (a login that
//! hangs fails the run at `--login-timeout`, and the run itself at
//! `common::BOUND`).

#[path = "../../switchboard/tests/common/peers.rs"]
mod peers;

mod common;
mod oidc_util;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use oidc_util::*;
use serde_json::{json, Value};

/// `switchboard bridge` with authorization on, in front of the built-in
/// example server: its resource is its own URL, so a free port is taken first
/// (the URL must be known before it binds); scope `mcp:tools` required.
fn start_bridge(issuer: &str) -> (Killed, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut child = Killed(
        Command::new(common::exe())
            .args(["bridge", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--auth-issuer", issuer, "--auth-resource", &url])
            .args(["--auth-scope", "mcp:tools"])
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the bridge"),
    );
    let printed = wait_for_line(&mut child, "the bridge", |line| {
        Some(line.strip_prefix("route /mcp: ")?.trim().to_owned())
    });
    assert_eq!(printed, url);
    (child, url)
}

/// The authorization server and one protected bridge; `None` when a peer is not
/// installed (skipped).
struct Protected {
    _oidc: Killed,
    issuer: String,
    _bridge: Killed,
    url: String,
    python: PathBuf,
}

fn protected() -> Option<Protected> {
    let python = peers::python()?;
    let (oidc, issuer) = start_oidc()?;
    let (bridge, url) = start_bridge(&issuer);
    Some(Protected {
        _oidc: oidc,
        issuer,
        _bridge: bridge,
        url,
        python,
    })
}

/// `tools call` meets the 401, logs in through oidc-provider's pages and
/// calls; the login is kept and used, refreshed when it runs out, without the
/// browser again.
#[test]
fn tools_call_logs_in_at_oidc_provider_then_uses_the_stored_token() {
    let Some(p) = protected() else {
        return;
    };
    let scene = Scene::new("tools", &p.python);
    let call = scene.run(&[
        "tools",
        "call",
        &p.url,
        "echo",
        "--arg",
        "text=first",
        "--login-timeout",
        LOGIN_TIMEOUT,
    ]);
    ok(&call, "tools call with a login");
    assert_eq!(call.stdout.trim(), "first");
    assert_eq!(scene.browser(), CONSENTED);

    // What was stored: oidc-provider's client and tokens for the bridge.
    let entries = scene.entries();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let entry = &entries[0];
    assert_eq!(entry["issuer"], p.issuer.as_str());
    assert_eq!(entry["resource"], p.url.as_str());
    let access = entry["access_token"].as_str().unwrap().to_owned();
    assert!(entry["refresh_token"].is_string(), "{entry}");
    let jwt = claims(&access);
    assert_eq!(jwt["iss"], p.issuer.as_str(), "{jwt}");
    assert!(audience_has(&jwt, &p.url), "{jwt}");
    assert_eq!(jwt["sub"], "alice", "{jwt}");
    assert_eq!(jwt["client_id"], entry["client_id"], "{jwt}");
    assert_eq!(jwt["scope"], "mcp:tools", "{jwt}");
    assert!(!call.stdout.contains(&access) && !call.stderr.contains(&access));

    // The next call uses the stored token: no browser.
    let again = scene.run(&["tools", "call", &p.url, "echo", "--arg", "text=second"]);
    ok(&again, "tools call with the stored token");
    assert_eq!(again.stdout.trim(), "second");
    assert_eq!(scene.browser(), CONSENTED);

    // A token that runs out within the margin is refreshed at oidc-provider
    // before the first request, still without the browser.
    let mut file: Value =
        serde_json::from_str(&std::fs::read_to_string(scene.auth_file()).unwrap()).unwrap();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    file["authorizations"][0]["expires_at"] = (now + 5).into();
    std::fs::write(scene.auth_file(), file.to_string()).unwrap();
    let refreshed = scene.run(&[
        "-vvv",
        "tools",
        "call",
        &p.url,
        "echo",
        "--arg",
        "text=third",
        "--no-login",
    ]);
    ok(&refreshed, "tools call after a refresh");
    assert_eq!(refreshed.stdout.trim(), "third");
    assert!(
        refreshed.stderr.contains("access token refreshed"),
        "{}",
        refreshed.stderr
    );
    for secret in [&access, entry["refresh_token"].as_str().unwrap()] {
        assert!(!refreshed.stderr.contains(secret), "a token in the log");
    }
    let entries = scene.entries();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let renewed = entries[0]["access_token"].as_str().unwrap();
    assert_ne!(renewed, access);
    assert!(audience_has(&claims(renewed), &p.url));
    assert_eq!(scene.browser(), CONSENTED);
}

/// The official Python SDK client logs in with its OAuth support (discovery
/// from the bridge's 401 and metadata, registration at oidc-provider, code +
/// PKCE + resource; its redirect handler signs in and consents) and calls a
/// tool through the bridge.
#[test]
fn the_python_sdk_client_logs_in_and_calls_a_tool() {
    let Some(p) = protected() else {
        return;
    };
    let scene = Scene::new("python", &p.python);
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/python_oauth_client.py");
    let mut cmd = Command::new(&p.python);
    cmd.arg("-u")
        .arg(script)
        .args([p.url.as_str(), "from python"])
        .env("SB_TEST_BROWSER_LOG", scene.browser_log());
    let out = peers::run_bounded(cmd, peers::SCRIPT_BOUND);
    let stdout = peers::assert_script_ok(&out, "python oauth client ok");
    let report: Value =
        serde_json::from_str(stdout.lines().next().unwrap()).expect("its JSON line");
    assert_eq!(report["text"], "from python", "{report}");
    assert_eq!(report["scope"], "mcp:tools", "{report}");
    assert_eq!(report["refresh_token"], true, "{report}");
    assert!(report["client_id"].is_string(), "{report}");
    assert_eq!(scene.browser(), ["opened", "form login", "form consent"]);
}

/// `switchboard connect` in front of the protected bridge: the host app's
/// `initialize` meets the 401, the login runs through oidc-provider's pages
/// (stdout stays JSON-RPC), and the relay goes on with the token.
#[test]
fn connect_serves_a_host_app_against_the_protected_bridge() {
    let Some(p) = protected() else {
        return;
    };
    let scene = Scene::new("connect", &p.python);
    host_app(&p, &scene, "0", LOGIN_TIMEOUT);
}

/// A person who takes longer at the browser than `connect` gives the remote
/// to answer the host app's `initialize` (`ConnectConfig::first_answer_timeout`,
/// 30 s): the login's time does not count against that bound, so the relay
/// still goes on (it used to end with "the remote did not answer initialize
/// within 30s" and no answer to the host app while the login could still
/// complete).
#[test]
fn connect_waits_for_a_person_slower_than_its_first_answer_bound() {
    let Some(p) = protected() else {
        return;
    };
    let scene = Scene::new("connect-slow", &p.python);
    host_app(&p, &scene, "35", "90");
}

/// Runs `switchboard connect` as a host app would, the person at the browser
/// taking `delay` seconds before following the URL: initialize, then a call.
fn host_app(p: &Protected, scene: &Scene, delay: &str, login_timeout: &str) {
    let mut child = Killed(
        Command::new(common::exe())
            .args(["connect", &p.url, "--login-timeout", login_timeout])
            .envs(scene.env())
            .env("SB_TEST_BROWSER_DELAY", delay)
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn connect"),
    );
    // The login happens inside the first answer's wait: up to the login's
    // own bound, then some.
    let bound = WAIT + Duration::from_secs(login_timeout.parse().unwrap());
    let mut host = common::Host::new(&mut child.0);
    host.send(
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},
        "clientInfo":{"name":"host","version":"1"}}}),
    );
    let init = host.answer(1, bound);
    assert!(init.get("result").is_some(), "{init}");
    host.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    host.send(json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"echo","arguments":{"text":"from the host"}}}));
    let call = host.answer(2, bound);
    assert_eq!(
        call["result"]["content"][0]["text"], "from the host",
        "{call}"
    );
    assert_eq!(scene.browser(), CONSENTED);
    let entries = scene.entries();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["resource"], p.url.as_str());

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

/// A real token from the same authorization server, for the same person, but
/// for another resource (a second bridge): the first bridge refuses it (401
/// `invalid_token`, its own metadata named), while the bridge it was issued
/// for takes it.
#[test]
fn a_token_for_another_resource_is_refused() {
    let Some(p) = protected() else {
        return;
    };
    let (_other_bridge, other) = start_bridge(&p.issuer);
    let scene = Scene::new("audience", &p.python);
    ok(
        &scene.run(&["auth", "login", &other, "--login-timeout", LOGIN_TIMEOUT]),
        "auth login at the other bridge",
    );
    assert_eq!(scene.browser(), CONSENTED);
    let entries = scene.entries();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let token = entries[0]["access_token"].as_str().unwrap().to_owned();
    assert!(audience_has(&claims(&token), &other));
    assert!(!audience_has(&claims(&token), &p.url));

    let (status, _) = initialize_with(&other, &token);
    assert_eq!(status, 200, "the token is good where it belongs");
    let (status, challenge) = initialize_with(&p.url, &token);
    assert_eq!(status, 401, "{challenge}");
    let metadata = p
        .url
        .replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
    assert!(
        challenge.starts_with("Bearer error=\"invalid_token\"")
            && challenge.contains("(aud)")
            && challenge.contains(&format!("resource_metadata=\"{metadata}\"")),
        "{challenge}"
    );
}
