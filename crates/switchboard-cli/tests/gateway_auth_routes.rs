//! Per-route authorization of `switchboard gateway`, from the configuration
//! file: a top-level `[auth]` table protecting the default route `/mcp`, two
//! routes that are protected resources of their own (`/a/mcp`, `/b/mcp`:
//! their own `resource`, scopes and tool scopes), and a route left open
//! (`auth = false`), all over `switchboard example-server` (`ex`). Tokens are
//! minted here (Ed25519, checked against a JWK set served by this test on
//! 127.0.0.1).
//!
//! Checked: each route's 401 challenge names its own Protected Resource
//! Metadata, served at the well-known URL with the route's path inserted
//! (and at the root for `/mcp`) with `resource` exactly as configured; the
//! open route answers without a token and serves no metadata; a token for
//! one route's resource is refused on the others with 401 `invalid_token`;
//! tool scopes are the route's own (replacing the top-level ones) or
//! inherited; a broken `auth` table, and the flags together with `[auth]`,
//! are refused at start with their place and exit 2; a reload that changes
//! a route's authorization is refused and the running settings kept. Every
//! wait is bounded.

mod auth_util;
mod gateway_util;

use std::process::Stdio;

use auth_util::{challenge_scopes, http, initialize, jwks_server, modern_call, post, token, Reply};
use gateway_util::*;
use serde_json::{json, Value};
use switchboard::client::http::HttpClientConfig;
use switchboard::client::EraPolicy;
use switchboard::Client;

const ISSUER: &str = "http://127.0.0.1:1";
const MAIN: &str = "https://gateway.example/mcp";
const RES_A: &str = "https://gateway.example/a/mcp";
const RES_B: &str = "https://gateway.example/b/mcp";
const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The file: `[auth]` (scope `mcp:tools`, `ex__echo` needs `echo`), route A
/// (scope `a:read`, its own tool scopes: `ex__add` needs `a:calc`), route B
/// (scope `b:read`, the top-level tool scopes), the open route.
fn config(jwks: &str) -> String {
    format!(
        r#"{upstream}
[auth]
issuer = "{ISSUER}"
resource = "{MAIN}"
jwks = "{jwks}"
scopes = ["mcp:tools"]
tool_scopes = {{ ex__echo = ["echo"] }}

[routes.a]
path = "/a/mcp"
auth = {{ resource = "{RES_A}", scopes = ["a:read"], tool_scopes = {{ ex__add = ["a:calc"] }} }}

[routes.b]
path = "/b/mcp"
auth = {{ resource = "{RES_B}", scopes = ["b:read"] }}

[routes.open]
path = "/open/mcp"
auth = false
"#,
        upstream = example_upstream("ex", &[]),
    )
}

struct Setup {
    gw: GatewayProc,
    dir: TempDir,
}

impl Setup {
    async fn start(tag: &str) -> Setup {
        let dir = TempDir::new(tag);
        let jwks = jwks_server().await;
        let gw = GatewayProc::start(dir.path(), &config(&jwks)).await;
        // The upstream listed before any call: a call of a tool the gateway
        // has not listed yet is "unknown tool", not what is tested.
        eventually(LIMIT, "/readyz: ex listed", || async {
            let (status, body) = gw.readyz().await;
            let v: Value = serde_json::from_str(&body).ok()?;
            (status == 200 && v["upstreams"]["ex"]["listed"] == true).then_some(())
        })
        .await;
        Setup { gw, dir }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.gw.base)
    }
}

/// The Protected Resource Metadata URL of a resource (RFC 9728 §3.1).
fn prm_url(resource: &str) -> String {
    resource.replace(
        "https://gateway.example",
        &format!("https://gateway.example{WELL_KNOWN}"),
    )
}

/// `GET base+path`: status and body.
async fn get(url: &str) -> (u16, String) {
    let r = bounded(http().get(url).send())
        .await
        .expect("the gateway answers");
    let status = r.status().as_u16();
    (status, bounded(r.text()).await.unwrap_or_default())
}

fn assert_refused(reply: &Reply, status: u16, error: Option<&str>, resource: &str, what: &str) {
    assert_eq!(reply.status, status, "{what}: {}", reply.body);
    let challenge = reply
        .challenge
        .as_deref()
        .unwrap_or_else(|| panic!("{what}: no challenge"));
    assert!(challenge.starts_with("Bearer "), "{what}: {challenge}");
    let meta = format!("resource_metadata=\"{}\"", prm_url(resource));
    assert!(
        challenge.contains(&meta),
        "{what}: {challenge} lacks {meta}"
    );
    match error {
        Some(e) => assert!(
            challenge.contains(&format!("error=\"{e}\"")),
            "{what}: {challenge}"
        ),
        None => assert!(!challenge.contains("error="), "{what}: {challenge}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_route_answers_its_own_challenge_and_serves_its_own_metadata() {
    let s = Setup::start("routes-prm").await;
    for (path, resource, scope) in [
        ("/mcp", MAIN, "mcp:tools"),
        ("/a/mcp", RES_A, "a:read"),
        ("/b/mcp", RES_B, "b:read"),
    ] {
        let reply = post(&s.url(path), None, &[], &initialize()).await;
        assert_refused(&reply, 401, None, resource, path);
        assert_eq!(
            challenge_scopes(reply.challenge.as_deref().unwrap()),
            [scope],
            "{path}"
        );
        // The well-known URL with the route's path inserted.
        let (status, body) = get(&s.url(&format!("{WELL_KNOWN}{path}"))).await;
        assert_eq!(status, 200, "{path}: {body}");
        let prm: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(prm["resource"], resource, "{path}: {prm}");
        assert_eq!(
            prm["authorization_servers"],
            json!([ISSUER]),
            "{path}: {prm}"
        );
        assert_eq!(prm["scopes_supported"], json!([scope]), "{path}: {prm}");
    }
    // The default route's also at the root.
    let (status, body) = get(&s.url(WELL_KNOWN)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["resource"],
        MAIN
    );
    // A route's legacy HTTP+SSE stream: its own challenge too.
    let r = bounded(
        http()
            .get(s.url("/a/mcp/sse"))
            .header("accept", "text/event-stream")
            .send(),
    )
    .await
    .expect("the gateway answers");
    assert_eq!(r.status().as_u16(), 401);
    let challenge = r.headers()["www-authenticate"].to_str().unwrap();
    assert!(challenge.contains(&prm_url(RES_A)), "{challenge}");

    // The open route: no token needed, no metadata.
    let reply = post(&s.url("/open/mcp"), None, &[], &initialize()).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(reply.challenge.is_none());
    let (status, _) = get(&s.url(&format!("{WELL_KNOWN}/open/mcp"))).await;
    assert_eq!(status, 404);
    // The library client there, in both eras, without a token: it calls.
    for era in [EraPolicy::Legacy, EraPolicy::Modern] {
        let client = bounded(Client::connect_url(
            &s.url("/open/mcp"),
            options().with_era(era),
            HttpClientConfig::new(""),
        ))
        .await
        .unwrap_or_else(|e| panic!("{era:?}: {e}"));
        assert_eq!(
            call_text(&client, "ex__echo", json!({"text": "open"})).await,
            "open"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_for_one_routes_resource_is_refused_on_the_others() {
    let s = Setup::start("routes-aud").await;
    let for_a = token(ISSUER, RES_A, "alice", "a:read b:read mcp:tools");
    let for_b = token(ISSUER, RES_B, "alice", "a:read b:read mcp:tools");
    let for_main = token(ISSUER, MAIN, "alice", "a:read b:read mcp:tools");
    let cases = [
        ("/a/mcp", RES_A, &for_a, [&for_b, &for_main]),
        ("/b/mcp", RES_B, &for_b, [&for_a, &for_main]),
        ("/mcp", MAIN, &for_main, [&for_a, &for_b]),
    ];
    for (path, resource, good, others) in cases {
        for (i, bad) in others.into_iter().enumerate() {
            let what = format!("{path} with another route's token ({i})");
            let reply = post(&s.url(path), Some(bad), &[], &initialize()).await;
            assert_refused(&reply, 401, Some("invalid_token"), resource, &what);
            assert!(reply.body.contains("(aud)"), "{what}: {}", reply.body);
            // 2026-07-28, raw: the same.
            let reply = modern_call(&s.url(path), bad, 1, "ex__add", json!({"a": 1, "b": 2})).await;
            assert_refused(&reply, 401, Some("invalid_token"), resource, &what);
        }
        let reply = post(&s.url(path), Some(good), &[], &initialize()).await;
        assert_eq!(
            reply.status, 200,
            "{path} with its own token: {}",
            reply.body
        );
    }
    // A session opened on one route is not found on another, even with a
    // token good there.
    let reply = post(&s.url("/a/mcp"), Some(&for_a), &[], &initialize()).await;
    let session = reply.session.expect("a session id");
    let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/list"});
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let reply = post(&s.url("/b/mcp"), Some(&for_b), &headers, &call).await;
    assert_eq!(reply.status, 404, "{}", reply.body);
    let reply = post(&s.url("/a/mcp"), Some(&for_a), &headers, &call).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_scopes_are_each_routes_own_or_the_top_level_ones() {
    let s = Setup::start("routes-tools").await;
    let add = |id| (id, "ex__add", json!({"a": 2, "b": 3}));
    let echo = |id| (id, "ex__echo", json!({"text": "hi"}));
    // (route, resource, token scopes, call, refused with this scope asked for)
    let cases = [
        // A: its own tool scopes replace the top-level ones.
        ("/a/mcp", RES_A, "a:read", add(1), Some("a:calc")),
        ("/a/mcp", RES_A, "a:read a:calc", add(2), None),
        ("/a/mcp", RES_A, "a:read", echo(3), None),
        // B: the top-level tool scopes.
        ("/b/mcp", RES_B, "b:read", echo(4), Some("echo")),
        ("/b/mcp", RES_B, "b:read echo", echo(5), None),
        ("/b/mcp", RES_B, "b:read", add(6), None),
        // The default route: the top-level table.
        ("/mcp", MAIN, "mcp:tools", echo(7), Some("echo")),
        ("/mcp", MAIN, "mcp:tools echo", echo(8), None),
        ("/mcp", MAIN, "mcp:tools", add(9), None),
        // A's scope does not let in at B.
        ("/b/mcp", RES_B, "a:read", add(10), Some("b:read")),
    ];
    for (path, resource, scopes, (id, tool, args), refused) in cases {
        let what = format!("{path} {tool} with {scopes:?}");
        let bearer = token(ISSUER, resource, "carol", scopes);
        let reply = modern_call(&s.url(path), &bearer, id, tool, args).await;
        match refused {
            Some(scope) => {
                assert_refused(&reply, 403, Some("insufficient_scope"), resource, &what);
                let asked = challenge_scopes(reply.challenge.as_deref().unwrap());
                assert!(asked.contains(&scope.to_owned()), "{what}: {asked:?}");
            }
            None => {
                assert_eq!(reply.status, 200, "{what}: {}", reply.body);
                assert!(
                    reply.response(id)["result"].is_object(),
                    "{what}: {}",
                    reply.body
                );
            }
        }
    }
}

/// `switchboard gateway` with `config` (and `args`) in `dir`: its exit code
/// and stderr, the run bounded by [`LIMIT`].
async fn refused_at_start(
    dir: &std::path::Path,
    config: &str,
    args: &[&str],
) -> (Option<i32>, String) {
    let file = dir.join("refused.toml");
    std::fs::write(&file, config).unwrap();
    let out = bounded(
        tokio::process::Command::new(BIN)
            .arg("gateway")
            .arg("--config")
            .arg(&file)
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the gateway runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_auth_settings_are_refused_at_start_with_their_place() {
    let dir = TempDir::new("routes-broken");
    // Line 7: the route's auth table.
    let broken = format!(
        "{}\n[routes.a]\npath = \"/a/mcp\"\nauth = {{ issuer = \"http://as.example\", scopes = [\"x\"] }}\n",
        example_upstream("ex", &[])
    );
    let (code, stderr) = refused_at_start(dir.path(), &broken, &[]).await;
    assert_eq!(code, Some(2), "{stderr}");
    let file = dir.path().join("refused.toml");
    let at = format!("{}:", file.display());
    // One line per problem, each with its place.
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with(&at)).collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(
        lines.iter().any(
            |l| l.contains(":7:19: routes.a.auth.issuer: \"http://as.example\" must use https")
        ),
        "{stderr}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains(":7:8: routes.a.auth: needs `resource`")),
        "{stderr}"
    );

    // The flags and the file's [auth] table together: which would win is
    // not obvious, so neither does.
    let jwks = "http://127.0.0.1:1/jwks";
    let (code, stderr) = refused_at_start(
        dir.path(),
        &config(jwks),
        &["--auth-issuer", ISSUER, "--auth-resource", MAIN],
    )
    .await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("the --auth-* flags and the file's top-level [auth] table both give"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_that_changes_authorization_is_refused() {
    let mut s = Setup::start("routes-reload").await;
    let file = s.dir.path().join("gateway.toml");
    let before = std::fs::read_to_string(&file).unwrap();
    let after = before.replace("scopes = [\"b:read\"]", "scopes = [\"b:write\"]");
    assert_ne!(before, after);
    std::fs::write(&file, &after).unwrap();
    eventually(LIMIT, "the reload refused", || async {
        let log = s.gw.log();
        (log.contains(
            "the authorization settings changed (route /b/mcp): applying them needs a restart",
        ) && log.contains("reload refused"))
        .then_some(())
    })
    .await;
    // The running settings are kept: b:read still lets in.
    let bearer = token(ISSUER, RES_B, "dave", "b:read");
    let reply = post(&s.url("/b/mcp"), Some(&bearer), &[], &initialize()).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    // A change elsewhere (an upstream's timeout) still applies.
    std::fs::write(
        &file,
        before.replace("args = ", "timeout = \"5s\"\nargs = "),
    )
    .unwrap();
    eventually(LIMIT, "the reload applied", || async {
        s.gw.log().contains("reloaded: added []").then_some(())
    })
    .await;
    let (_, status) = s.gw.terminate().await;
    assert!(status.success(), "{status}");
}
