//! Per-route MCP authorization of `switchboard gateway`, end to end with a
//! real authorization server: `oidc-provider` (as in `auth_e2e`, whose
//! helpers `oidc_util` holds) in front of a gateway whose file protects the
//! default route `/mcp` with its top-level `[auth]` table and the route
//! `/team/mcp` as a resource of its own (`auth = { resource = ... }`), both
//! serving `switchboard example-server` unprefixed. The person at the browser
//! is `fixtures/oauth_browser.py`.
//!
//! - `switchboard tools call` on `/team/mcp` meets its 401, finds that
//!   route's own metadata, logs in through oidc-provider's pages and calls
//!   `echo`; the token it got (its `aud` the route's resource) is refused on
//!   `/mcp` with 401 `invalid_token` naming `/mcp`'s own metadata;
//! - the official Python SDK client logs in with its OAuth support and calls
//!   `echo` on `/team/mcp`.
//!
//! Required when `SWITCHBOARD_PYTHON`, `SWITCHBOARD_NODE` and
//! `SWITCHBOARD_PEERS_NODE` are set (`scripts/test` sets them from
//! `scripts/install-peers`); otherwise each test prints why it is skipped and
//! passes, as `auth_e2e`'s do. Everything listens on 127.0.0.1; every wait
//! is bounded.

#[path = "../../switchboard/tests/common/peers.rs"]
mod peers;

mod common;
mod oidc_util;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use oidc_util::*;
use serde_json::Value;

/// The authorization server and the gateway; `None` when a peer is not
/// installed (skipped).
struct Protected {
    _oidc: Killed,
    _gateway: Killed,
    issuer: String,
    /// The default route: `http://127.0.0.1:PORT/mcp`.
    main: String,
    /// The route with its own resource: `http://127.0.0.1:PORT/team/mcp`.
    team: String,
    python: PathBuf,
    _dir: peers::TempDir,
}

/// The gateway's file: resources are the routes' own URLs, so a free port is
/// taken first (the URLs must be known before it binds).
fn gateway_file(issuer: &str, base: &str) -> String {
    format!(
        r#"[upstreams.ex]
command = {exe:?}
args = ["example-server"]
prefix = ""

[auth]
issuer = "{issuer}"
resource = "{base}/mcp"
scopes = ["mcp:tools"]

[routes.team]
path = "/team/mcp"
upstreams = ["ex"]
auth = {{ resource = "{base}/team/mcp" }}
"#,
        exe = common::exe(),
    )
}

/// Waits (at most [`WAIT`]) until `/readyz` says the upstream is listed: a
/// call of a tool not listed yet is "unknown tool", not what is tested.
fn wait_ready(base: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = reqwest::Client::builder().timeout(WAIT).build().unwrap();
    let deadline = Instant::now() + WAIT;
    runtime.block_on(async {
        loop {
            if let Ok(r) = client.get(format!("{base}/readyz")).send().await {
                let text = r.text().await.unwrap_or_default();
                let body: Value = serde_json::from_str(&text).unwrap_or_default();
                if body["upstreams"]["ex"]["listed"] == true {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "the gateway's upstream was not listed within {WAIT:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
}

fn protected() -> Option<Protected> {
    let python = peers::python()?;
    let (oidc, issuer) = start_oidc()?;
    let dir = peers::TempDir::new("e2e-gateway");
    let file = dir.path().join("gateway.toml");
    // The port is chosen before the gateway binds it (the file names its
    // URLs): another process may take it meanwhile, so a gateway that
    // could not listen is tried again on another, a few times.
    let mut tries = 0;
    let (gateway, base, team) = loop {
        tries += 1;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let base = format!("http://127.0.0.1:{port}");
        std::fs::write(&file, gateway_file(&issuer, &base)).unwrap();
        let mut gateway = Killed(
            Command::new(common::exe())
                .arg("gateway")
                .arg("--config")
                .arg(&file)
                .args(["--listen", &format!("127.0.0.1:{port}")])
                .env("RUST_LOG", "warn")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("start the gateway"),
        );
        let team = try_wait_for_line(&mut gateway, "the gateway", |line| {
            Some(
                line.trim()
                    .strip_prefix("route /team/mcp:")?
                    .trim()
                    .to_owned(),
            )
        });
        match team {
            Some(team) => {
                assert_eq!(team, format!("{base}/team/mcp"));
                break (gateway, base, team);
            }
            None if tries < 5 => continue,
            None => panic!("the gateway could not start in {tries} tries"),
        }
    };
    wait_ready(&base);
    Some(Protected {
        _oidc: oidc,
        _gateway: gateway,
        issuer,
        main: format!("{base}/mcp"),
        team,
        python,
        _dir: dir,
    })
}

/// `tools call` on the route with its own resource: the login is for that
/// resource, and its token is good there only.
#[test]
fn tools_call_logs_in_for_a_gateway_route_and_its_token_stays_there() {
    let Some(p) = protected() else {
        return;
    };
    let scene = Scene::new("gateway-tools", &p.python);
    let call = scene.run(&[
        "tools",
        "call",
        &p.team,
        "echo",
        "--arg",
        "text=through the gateway",
        "--login-timeout",
        LOGIN_TIMEOUT,
    ]);
    ok(&call, "tools call with a login");
    assert_eq!(call.stdout.trim(), "through the gateway");
    assert_eq!(scene.browser(), CONSENTED);

    let entries = scene.entries();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["issuer"], p.issuer.as_str());
    assert_eq!(entries[0]["resource"], p.team.as_str());
    let token = entries[0]["access_token"].as_str().unwrap().to_owned();
    let jwt = claims(&token);
    assert!(audience_has(&jwt, &p.team), "{jwt}");
    assert!(!audience_has(&jwt, &p.main), "{jwt}");
    assert_eq!(jwt["scope"], "mcp:tools", "{jwt}");

    // The next call uses the stored token: no browser.
    let again = scene.run(&["tools", "call", &p.team, "echo", "--arg", "text=again"]);
    ok(&again, "tools call with the stored token");
    assert_eq!(again.stdout.trim(), "again");
    assert_eq!(scene.browser(), CONSENTED);

    // On the default route, a resource of its own, the same token is
    // refused, its challenge naming the default route's metadata.
    let (status, _) = initialize_with(&p.team, &token);
    assert_eq!(status, 200, "the token is good where it belongs");
    let (status, challenge) = initialize_with(&p.main, &token);
    assert_eq!(status, 401, "{challenge}");
    let metadata = p
        .main
        .replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
    assert!(
        challenge.starts_with("Bearer error=\"invalid_token\"")
            && challenge.contains("(aud)")
            && challenge.contains(&format!("resource_metadata=\"{metadata}\"")),
        "{challenge}"
    );
}

/// The official Python SDK client logs in with its OAuth support (discovery
/// from the route's 401 and metadata) and calls a tool through the gateway.
#[test]
fn the_python_sdk_client_logs_in_at_a_gateway_route_and_calls_a_tool() {
    let Some(p) = protected() else {
        return;
    };
    let scene = Scene::new("gateway-python", &p.python);
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/python_oauth_client.py");
    let mut cmd = Command::new(&p.python);
    cmd.arg("-u")
        .arg(script)
        .args([p.team.as_str(), "from python via the gateway"])
        .env("SB_TEST_BROWSER_LOG", scene.browser_log());
    let out = peers::run_bounded(cmd, peers::SCRIPT_BOUND);
    let stdout = peers::assert_script_ok(&out, "python oauth client ok");
    let report: Value =
        serde_json::from_str(stdout.lines().next().unwrap()).expect("its JSON line");
    assert_eq!(report["text"], "from python via the gateway", "{report}");
    assert_eq!(report["scope"], "mcp:tools", "{report}");
    assert!(report["client_id"].is_string(), "{report}");
    assert_eq!(scene.browser(), ["opened", "form login", "form consent"]);
}
