//! `switchboard gateway --auth-*`: every route an OAuth resource server. Two
//! upstreams, `switchboard example-server` over stdio (`ex`) and an HTTP
//! upstream that records the headers it receives (`rec`,
//! `fixtures/header_recording_server.py`), served on the default route `/mcp`
//! and on a second route `/agent`. Tokens are minted here (Ed25519, checked
//! against a JWK set served by this test on 127.0.0.1). Checked: the 401
//! challenge without a token on each route and on the legacy `/sse`; the
//! Protected Resource Metadata; a valid token listing and calling tools of
//! both upstreams in each era; a per-tool scope (`--auth-tool-scope` on a
//! served name) refused with 403 `insufficient_scope`; expired and foreign
//! tokens refused with 401 `invalid_token`; and the token never reaching the
//! HTTP upstream; each refusal counted by its reason on the admin
//! listener's `/metrics`. Every wait is bounded.

mod auth_util;
mod gateway_util;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use auth_util::{
    challenge_scopes, http, initialize, jwks_server, mint, modern_call, now, post, token,
};
use gateway_util::*;
use serde_json::{json, Value};
use switchboard::client::http::HttpClientConfig;
use switchboard::client::EraPolicy;
use switchboard::Client;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const ISSUER: &str = "http://127.0.0.1:1";
const RESOURCE: &str = "https://gateway.example/mcp";
/// Where the challenge points: the metadata of the default route's resource.
const PRM_URL: &str = "https://gateway.example/.well-known/oauth-protected-resource/mcp";
/// The scope every request needs.
const SCOPE: &str = "mcp:tools";
/// The served tool that needs [`TOOL_SCOPE`] besides [`SCOPE`].
const GATED_TOOL: &str = "ex__add";
const TOOL_SCOPE: &str = "calc:write";

/// The header-recording HTTP upstream, killed when dropped.
struct Recorder {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Recorder {
    async fn start(dir: &Path) -> Recorder {
        let log = dir.join("headers.jsonl");
        let mut child = Command::new("python3")
            .arg(fixture("header_recording_server.py"))
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 runs");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = bounded(async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(url) = line.trim().strip_prefix("listening on ") {
                    return url.to_owned();
                }
            }
            panic!("the recording upstream ended without its URL");
        })
        .await;
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Recorder { child, url, log }
    }

    /// The headers of every request it got so far.
    fn recorded(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }

    /// Checks that it got requests and that none of them carried an
    /// `Authorization` header nor any of `tokens` anywhere in its headers.
    fn assert_no_token(&self, tokens: &[&str]) {
        let recorded = self.recorded();
        assert!(!recorded.is_empty(), "the recording upstream got nothing");
        for headers in &recorded {
            let map = headers.as_object().expect("an object");
            assert!(
                !map.contains_key("authorization"),
                "an Authorization header reached the upstream: {headers}"
            );
            let text = headers.to_string();
            assert!(
                !text.to_ascii_lowercase().contains("bearer"),
                "a bearer credential reached the upstream: {headers}"
            );
            for t in tokens {
                assert!(
                    !text.contains(t),
                    "the token reached the upstream: {headers}"
                );
            }
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// A gateway with the `--auth-*` flags over `ex` and `rec`, on `/mcp` and
/// `/agent`, and what it needs kept alive.
struct Setup {
    gw: GatewayProc,
    rec: Recorder,
    _dir: TempDir,
}

impl Setup {
    async fn start(tag: &str) -> Setup {
        let dir = TempDir::new(tag);
        let jwks = jwks_server().await;
        let rec = Recorder::start(dir.path()).await;
        let config = format!(
            "{}\n[upstreams.rec]\nurl = {}\n\n[routes.agent]\npath = \"/agent\"\nupstreams = [\"ex\", \"rec\"]\n",
            example_upstream("ex", &[]),
            q(&rec.url)
        );
        let tool_scope = format!("{GATED_TOOL}={TOOL_SCOPE}");
        let trail = dir.path().join("audit.jsonl");
        let gw = GatewayProc::start_with_args(
            dir.path(),
            &config,
            &[
                "--auth-issuer",
                ISSUER,
                "--auth-resource",
                RESOURCE,
                "--auth-jwks",
                &jwks,
                "--auth-scope",
                SCOPE,
                "--auth-tool-scope",
                &tool_scope,
                "--admin",
                "127.0.0.1:0",
                "--audit",
                trail.to_str().unwrap(),
            ],
        )
        .await;
        // Both upstreams listed before any check: a call of a tool the
        // gateway has not listed yet is "unknown tool", not what is tested.
        eventually(LIMIT, "/readyz: ex and rec listed", || async {
            let (status, body) = gw.readyz().await;
            let v: Value = serde_json::from_str(&body).ok()?;
            let listed = |u: &str| v["upstreams"][u]["listed"] == true;
            (status == 200 && listed("ex") && listed("rec")).then_some(())
        })
        .await;
        Setup { gw, rec, _dir: dir }
    }

    fn agent(&self) -> String {
        format!("{}/agent", self.gw.base)
    }
}

/// A token with every scope this gateway uses.
fn full_token() -> String {
    token(ISSUER, RESOURCE, "alice", &format!("{SCOPE} {TOOL_SCOPE}"))
}

/// A token with [`SCOPE`] only.
fn basic_token() -> String {
    token(ISSUER, RESOURCE, "bob", SCOPE)
}

/// The library client at `url` in `era`, sending `Authorization: Bearer TOKEN`.
async fn authed(url: &str, era: EraPolicy, bearer: &str) -> Result<Client, switchboard::Error> {
    let mut config = HttpClientConfig::new("");
    config
        .headers
        .push(("Authorization".into(), format!("Bearer {bearer}")));
    bounded(Client::connect_url(url, options().with_era(era), config)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_token_every_route_answers_the_challenge_and_the_metadata_is_served() {
    let s = Setup::start("auth-challenge").await;
    let expected = format!("Bearer scope=\"{SCOPE}\", resource_metadata=\"{PRM_URL}\"");
    for url in [s.gw.url.clone(), s.agent()] {
        let reply = post(&url, None, &[], &initialize()).await;
        assert_eq!(reply.status, 401, "{url}: {}", reply.body);
        assert_eq!(reply.challenge.as_deref(), Some(expected.as_str()), "{url}");
    }
    // The legacy HTTP+SSE transport's stream.
    let r = bounded(
        http()
            .get(format!("{}/sse", s.gw.base))
            .header("accept", "text/event-stream")
            .send(),
    )
    .await
    .expect("the gateway answers");
    assert_eq!(r.status().as_u16(), 401);
    let challenge = r.headers()["www-authenticate"].to_str().unwrap();
    assert_eq!(challenge, expected);
    // A token that is not even a JWT: invalid, on both routes.
    for url in [s.gw.url.clone(), s.agent()] {
        let reply = post(&url, Some("not-a-jwt"), &[], &initialize()).await;
        assert_eq!(reply.status, 401, "{url}: {}", reply.body);
        let challenge = reply.challenge.unwrap();
        assert!(
            challenge.contains("error=\"invalid_token\"")
                && challenge.contains(&format!("resource_metadata=\"{PRM_URL}\"")),
            "{url}: {challenge}"
        );
    }

    // The metadata, at the well-known URL of the default route's path.
    let r = bounded(
        http()
            .get(format!(
                "{}/.well-known/oauth-protected-resource/mcp",
                s.gw.base
            ))
            .send(),
    )
    .await
    .expect("the gateway answers");
    assert_eq!(r.status().as_u16(), 200);
    let prm: Value = serde_json::from_str(&bounded(r.text()).await.unwrap()).unwrap();
    assert_eq!(prm["resource"], RESOURCE, "{prm}");
    assert_eq!(prm["authorization_servers"], json!([ISSUER]), "{prm}");
    assert!(
        prm["scopes_supported"]
            .as_array()
            .is_some_and(|a| a.contains(&json!(SCOPE))),
        "{prm}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_token_lists_and_calls_both_upstreams_and_never_reaches_one() {
    let s = Setup::start("auth-valid").await;
    let secret = full_token();
    for (url, era) in [
        (s.gw.url.clone(), EraPolicy::Legacy),
        (s.gw.url.clone(), EraPolicy::Modern),
        (s.agent(), EraPolicy::Legacy),
        (s.agent(), EraPolicy::Modern),
    ] {
        let client = authed(&url, era, &secret)
            .await
            .unwrap_or_else(|e| panic!("connect to {url} ({era:?}): {e}"));
        let names = tool_names(&client).await;
        for want in ["ex__echo", GATED_TOOL, "rec__echo"] {
            assert!(
                names.iter().any(|n| n == want),
                "{url} ({era:?}): {names:?}"
            );
        }
        let tag = format!("{url} {era:?}");
        assert_eq!(
            call_text(&client, "ex__echo", json!({"text": tag})).await,
            tag
        );
        assert_eq!(
            call_text(&client, "rec__echo", json!({"text": tag})).await,
            tag
        );
        let sum = bounded(client.call_tool(GATED_TOOL, json!({"a": 2, "b": 3})))
            .await
            .unwrap_or_else(|e| panic!("{tag}: {GATED_TOOL}: {e}"));
        assert!(!sum.is_error(), "{tag}: {sum:?}");
        assert_eq!(
            sum.structured_content.as_ref().map(|v| v["sum"].clone()),
            Some(json!(5)),
            "{tag}: {sum:?}"
        );
    }
    // A session opened with the token, then a request on it without: refused.
    let reply = post(&s.gw.url, Some(&secret), &[], &initialize()).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let session = reply.session.expect("a session id");
    let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
                      "params":{"name":"rec__echo","arguments":{"text":"no"}}});
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let reply = post(&s.gw.url, None, &headers, &call).await;
    assert_eq!(reply.status, 401, "{}", reply.body);
    let reply = post(&s.gw.url, Some(&secret), &headers, &call).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.response(1)["result"]["content"][0]["text"], "no");

    // What reached the HTTP upstream: requests (the gateway's own and the
    // calls above), none with the token.
    let recorded = s.rec.recorded();
    assert!(recorded.len() >= 4, "{recorded:?}");
    s.rec.assert_no_token(&[&secret]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_without_a_tools_scope_gets_403_for_that_tool_only() {
    let s = Setup::start("auth-scope").await;
    let basic = basic_token();
    let full = full_token();
    for url in [s.gw.url.clone(), s.agent()] {
        // 2026-07-28, raw: the challenge names the missing scope.
        let reply = modern_call(&url, &basic, 1, GATED_TOOL, json!({"a": 1, "b": 2})).await;
        assert_eq!(reply.status, 403, "{url}: {}", reply.body);
        let challenge = reply.challenge.expect("a challenge");
        assert!(
            challenge.starts_with("Bearer ")
                && challenge.contains("error=\"insufficient_scope\"")
                && challenge.contains(&format!("resource_metadata=\"{PRM_URL}\"")),
            "{url}: {challenge}"
        );
        assert!(
            challenge_scopes(&challenge).contains(&TOOL_SCOPE.to_owned()),
            "{url}: {challenge}"
        );
        // The same request with the scope: it works.
        let reply = modern_call(&url, &full, 2, GATED_TOOL, json!({"a": 1, "b": 2})).await;
        assert_eq!(reply.status, 200, "{url}: {}", reply.body);
        assert_eq!(
            reply.response(2)["result"]["structuredContent"]["sum"],
            3,
            "{url}: {}",
            reply.body
        );
        // Another tool with the basic token: it works.
        let reply = modern_call(&url, &basic, 3, "rec__echo", json!({"text": "ok"})).await;
        assert_eq!(reply.status, 200, "{url}: {}", reply.body);
        assert_eq!(
            reply.response(3)["result"]["content"][0]["text"],
            "ok",
            "{url}: {}",
            reply.body
        );

        // A Streamable HTTP session of the library client with the basic token.
        let client = authed(&url, EraPolicy::Legacy, &basic)
            .await
            .unwrap_or_else(|e| panic!("connect to {url}: {e}"));
        let e = bounded(client.call_tool(GATED_TOOL, json!({"a": 1, "b": 2})))
            .await
            .expect_err("the call without the tool's scope is refused");
        // The 403 carries a JSON-RPC error, which the client reports.
        let message = e.error_object().map(|o| o.message.clone());
        assert!(
            message.is_some_and(|m| m.contains(TOOL_SCOPE)),
            "{url}: {e}"
        );
        assert_eq!(
            call_text(&client, "ex__echo", json!({"text": "still"})).await,
            "still"
        );
        assert_eq!(
            call_text(&client, "rec__echo", json!({"text": "too"})).await,
            "too"
        );
    }
    s.rec.assert_no_token(&[&basic, &full]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_and_foreign_tokens_get_401_invalid_token() {
    let s = Setup::start("auth-invalid").await;
    let expired = mint(&json!({"iss": ISSUER, "aud": RESOURCE, "sub": "alice",
        "client_id": "cli", "scope": SCOPE, "exp": now() - 3600}));
    let foreign = token(ISSUER, "https://other.example/mcp", "alice", SCOPE);
    let wrong_issuer = token("http://127.0.0.1:2", RESOURCE, "alice", SCOPE);
    for url in [s.gw.url.clone(), s.agent()] {
        for (what, bad) in [
            ("expired", &expired),
            ("wrong audience", &foreign),
            ("wrong issuer", &wrong_issuer),
        ] {
            let reply = post(&url, Some(bad), &[], &initialize()).await;
            assert_eq!(reply.status, 401, "{url} {what}: {}", reply.body);
            let challenge = reply.challenge.expect("a challenge");
            assert!(
                challenge.contains("error=\"invalid_token\"")
                    && challenge.contains(&format!("resource_metadata=\"{PRM_URL}\"")),
                "{url} {what}: {challenge}"
            );
            let reply = modern_call(&url, bad, 1, "ex__echo", json!({"text": "x"})).await;
            assert_eq!(
                reply.status, 401,
                "{url} {what} (2026-07-28): {}",
                reply.body
            );
        }
        // The control: a good token, the same request.
        let reply = post(&url, Some(&basic_token()), &[], &initialize()).await;
        assert_eq!(reply.status, 200, "{url}: {}", reply.body);
    }
}

/// The value of the series `head` (name and labels, as written) in the
/// gateway's `/metrics` (classic text), 0 when it is not there yet.
async fn series(s: &Setup, head: &str) -> u64 {
    let admin = s.gw.admin.clone().expect("its admin listener");
    let text = bounded(async {
        reqwest::get(format!("http://{admin}/metrics"))
            .await
            .expect("the admin listener answers")
            .text()
            .await
            .expect("a body")
    })
    .await;
    text.lines()
        .find_map(|l| l.strip_prefix(head)?.strip_prefix(' '))
        .map_or(0, |v| v.trim().parse().expect("a count"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_refusal_is_counted_by_its_reason() {
    let s = Setup::start("auth-metrics").await;
    let failures = |reason: &str| format!("switchboard_auth_failures_total{{reason=\"{reason}\"}}");
    let scope = r#"switchboard_requests_refused_total{upstream="",reason="scope"}"#;
    for head in [
        failures("no_token"),
        failures("invalid_token"),
        scope.to_owned(),
    ] {
        assert_eq!(series(&s, &head).await, 0, "{head} before any request");
    }
    let expired = mint(&json!({"iss": ISSUER, "aud": RESOURCE, "sub": "alice",
        "client_id": "cli", "scope": SCOPE, "exp": now() - 3600}));
    for url in [s.gw.url.clone(), s.agent()] {
        assert_eq!(post(&url, None, &[], &initialize()).await.status, 401);
        assert_eq!(
            post(&url, Some(&expired), &[], &initialize()).await.status,
            401
        );
        let gated = json!({"a": 1, "b": 2});
        let reply = modern_call(&url, &basic_token(), 1, GATED_TOOL, gated).await;
        assert_eq!(reply.status, 403, "{}", reply.body);
        // Allowed: not counted.
        let reply = modern_call(&url, &full_token(), 2, GATED_TOOL, json!({"a": 1, "b": 2})).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
    }
    assert_eq!(series(&s, &failures("no_token")).await, 2);
    assert_eq!(series(&s, &failures("invalid_token")).await, 2);
    // A tool's own scope missing: an authorization failure and a refusal.
    assert_eq!(series(&s, &failures("insufficient_scope")).await, 2);
    assert_eq!(series(&s, scope).await, 2);
    // Read twice, counted once.
    assert_eq!(series(&s, &failures("no_token")).await, 2);
    // The audit trail names the caller of each call that reached policy,
    // and records each refusal by authorization but a missing token's:
    // the expired token (its caller unknown) and the scope a tool lacked.
    let trail = s._dir.path().join("audit.jsonl");
    let records = eventually(LIMIT, "the calls and refusals audited", || {
        let text = std::fs::read_to_string(&trail).unwrap_or_default();
        async move {
            let records: Vec<Value> = text
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .collect();
            (records.len() == 6).then_some(records)
        }
    })
    .await;
    let calls: Vec<&Value> = records.iter().filter(|r| r["kind"] == "call").collect();
    assert_eq!(calls.len(), 2, "{records:#?}");
    for c in &calls {
        assert_eq!(c["name"], GATED_TOOL);
        assert_eq!(
            (c["subject"].as_str(), c["client_id"].as_str()),
            (Some("alice"), Some("cli")),
            "{c}"
        );
        assert_eq!(c["outcome"], "ok");
    }
    let refused = |reason: &str| {
        records
            .iter()
            .filter(|r| r["kind"] == "refused" && r["reason"] == reason)
            .collect::<Vec<_>>()
    };
    let expired_ones = refused("invalid_token");
    assert_eq!(expired_ones.len(), 2, "{records:#?}");
    assert!(expired_ones
        .iter()
        .all(|r| r.get("subject").is_none() && r.get("method").is_none() && r["code"] == -32600));
    let scoped = refused("insufficient_scope");
    assert_eq!(scoped.len(), 2, "{records:#?}");
    let routes: Vec<&str> = scoped
        .iter()
        .map(|r| r["route"].as_str().unwrap())
        .collect();
    assert_eq!(routes, ["/mcp", "/agent"]);
    for r in &scoped {
        assert_eq!(
            (
                r["method"].as_str(),
                r["name"].as_str(),
                r["subject"].as_str()
            ),
            (Some("tools/call"), Some(GATED_TOOL), Some("bob")),
            "the basic token's caller: {r}"
        );
    }
    let (code, said) = {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args(["audit", "verify"])
            .arg(&trail)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    assert_eq!(code, Some(0), "{said}");
    // No token and no argument is shown on the page.
    let admin = s.gw.admin.clone().unwrap();
    let text = bounded(async {
        reqwest::get(format!("http://{admin}/metrics"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    })
    .await;
    assert!(
        !text.contains(&expired) && !text.contains("Bearer"),
        "{text}"
    );
}
