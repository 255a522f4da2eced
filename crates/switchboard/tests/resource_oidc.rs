//! MCP authorization on the server side against a real authorization server:
//! `oidc-provider` (npm, pinned in interop/peers-node;
//! `tests/interop/oidc_provider.mjs`) issues RFC 9068 JWT access tokens (ES256,
//! `aud` = the RFC 8707 resource) by the client credentials grant, and our
//! `Server::serve_http` behind `HttpServerConfig::auth` checks them against its
//! JWK set, found through its OpenID metadata. Then:
//!
//! - our `Client` with an OAuth client (client credentials) finds the
//!   authorization server from our 401 and Protected Resource Metadata, gets a
//!   token for our resource and calls a tool;
//! - real tokens: one for another resource is refused (401 `invalid_token`),
//!   another subject's token on an open session gets 404;
//! - the official TypeScript SDK's and Python SDK's discovery functions
//!   (`tests/interop/ts_discovery.cjs`, `tests/interop/python_discovery.py`)
//!   find the authorization server from our challenge and metadata.
//!
//! Required when `SWITCHBOARD_NODE` and `SWITCHBOARD_PEERS_NODE` are set (the
//! Python one also needs `SWITCHBOARD_PYTHON`; `scripts/test` sets them from
//! `scripts/install-peers`); otherwise each test prints why it is skipped and
//! passes. Servers listen on 127.0.0.1; every wait is bounded.

#[path = "../examples/echo_server.rs"]
#[allow(dead_code)]
mod echo_server;
#[path = "common/peers.rs"]
mod peers;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use switchboard::client::auth::{Grant, OAuthClient, OAuthConfig, PreRegistered};
use switchboard::client::HttpClientConfig;
use switchboard::server::ServeOptions;
use switchboard::{Client, ClientOptions};
use switchboard_protocol::types::Implementation;
use switchboard_transport::http::resource::{IntrospectionConfig, ResourceServerConfig};
use switchboard_transport::http::server::{HttpServer, HttpServerConfig};

const LIMIT: Duration = Duration::from_secs(30);

/// Kills the authorization server when the test ends, however it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `oidc_provider.mjs` and reads its issuer (bounded); `None` when Node
/// is not installed (skipped, reason printed).
fn start_oidc() -> Option<(Killed, String)> {
    let spec = peers::node_script("oidc-provider", &peers::interop_script("oidc_provider.mjs"))?;
    let mut cmd = spec.command();
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = Killed(cmd.spawn().expect("start oidc-provider"));
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(LIMIT)
        .expect("oidc-provider did not print its issuer in time");
    let ready: Value = serde_json::from_str(line.trim()).expect("the ready line is JSON");
    Some((child, ready["issuer"].as_str().unwrap().to_owned()))
}

/// Our protected server: the echo example's tools by `Server::serve_http`,
/// the resource being its own URL (a port taken first so the URL is known
/// before the server binds), scope `mcp:tools` required.
struct Protected {
    http: HttpServer,
    url: String,
}

async fn protected(issuer: &str) -> Protected {
    protected_with(issuer, |_| {}).await
}

async fn protected_with(issuer: &str, tune: impl FnOnce(&mut ResourceServerConfig)) -> Protected {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut auth = ResourceServerConfig::new(issuer, url.clone());
    auth.scopes = vec!["mcp:tools".into()];
    tune(&mut auth);
    let mut config = HttpServerConfig::default();
    config.bind = ([127, 0, 0, 1], port).into();
    config.auth = Some(auth);
    let (http, acceptor) = HttpServer::bind(config)
        .await
        .expect("bind the reserved port");
    let server = echo_server::builder().build().unwrap();
    tokio::spawn(server.serve_http(acceptor, ServeOptions::default()));
    Protected { http, url }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(LIMIT).build().unwrap()
}

/// A client credentials token of `machine-<x>` (secret `secret-<x>`) for
/// `resource`, from oidc-provider's token endpoint.
async fn token(issuer: &str, client_id: &str, resource: &str) -> String {
    let secret = client_id.replace("machine-", "secret-");
    let r = client()
        .post(format!("{issuer}/token"))
        .basic_auth(client_id, Some(secret))
        .form(&[
            ("grant_type", "client_credentials"),
            ("scope", "mcp:tools"),
            ("resource", resource),
        ])
        .send()
        .await
        .unwrap();
    let status = r.status();
    let body: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
    assert_eq!(status, 200, "{body}");
    body["access_token"].as_str().unwrap().to_owned()
}

fn initialize() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}})
    .to_string()
}

async fn post(url: &str, token: &str, session: Option<&str>, body: String) -> reqwest::Response {
    let mut req = client()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body);
    if let Some(s) = session {
        req = req
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", "2025-11-25");
    }
    req.send().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_gets_a_token_from_oidc_provider_and_calls_a_tool() {
    let Some((_as, issuer)) = start_oidc() else {
        return;
    };
    let server = protected(&issuer).await;
    let auth = OAuthClient::new(OAuthConfig {
        grant: Grant::ClientCredentials,
        pre_registered: vec![PreRegistered {
            issuer: Some(issuer.clone()),
            client_id: "machine-a".into(),
            client_secret: Some("secret-a".into()),
        }],
        want_refresh: false,
        ..OAuthConfig::default()
    })
    .unwrap();
    let mut config = HttpClientConfig::new(&server.url);
    config.auth = Some(auth.clone());
    let options = ClientOptions::new(Implementation::new("resource-oidc", "0"));
    let client = tokio::time::timeout(LIMIT, Client::connect_url(&server.url, options, config))
        .await
        .expect("bounded")
        .expect("connect: discovery from our metadata, a token from oidc-provider");
    assert!(auth.is_authorized());
    let result = tokio::time::timeout(LIMIT, client.call_tool("echo", json!({"text": "hi"})))
        .await
        .expect("bounded")
        .expect("tools/call echo");
    assert!(!result.is_error(), "{result:?}");
    let text: String = result.content.iter().filter_map(|b| b.as_text()).collect();
    assert_eq!(text, "hi");
    drop(server.http);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_tokens_are_checked_for_audience_and_subject() {
    let Some((_as, issuer)) = start_oidc() else {
        return;
    };
    let server = protected(&issuer).await;
    let metadata = server
        .url
        .replace("/mcp", "/.well-known/oauth-protected-resource/mcp");

    let alice = token(&issuer, "machine-a", &server.url).await;
    let r = post(&server.url, &alice, None, initialize()).await;
    assert_eq!(r.status(), 200);
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();

    // A token for another resource: its audience is not ours.
    let elsewhere = token(&issuer, "machine-a", "http://127.0.0.1:9/mcp").await;
    let r = post(&server.url, &elsewhere, None, initialize()).await;
    assert_eq!(r.status(), 401);
    assert_eq!(
        r.headers()["www-authenticate"].to_str().unwrap(),
        format!("Bearer error=\"invalid_token\", error_description=\"the token is not for this resource (aud)\", scope=\"mcp:tools\", resource_metadata=\"{metadata}\"")
    );

    // Another subject's valid token on machine-a's session.
    let bob = token(&issuer, "machine-b", &server.url).await;
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}).to_string();
    let r = post(&server.url, &bob, Some(&session), ping.clone()).await;
    assert_eq!(r.status(), 404);
    let r = post(&server.url, &alice, Some(&session), ping).await;
    assert_eq!(r.status(), 200);
    drop(server.http);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opaque_tokens_are_introspected_at_oidc_provider() {
    let Some((_as, issuer)) = start_oidc() else {
        return;
    };
    let server = protected_with(&issuer, |rs| {
        rs.introspection = Some(IntrospectionConfig::new(
            format!("{issuer}/token/introspection"),
            "rs",
            "secret-rs",
        ));
    })
    .await;
    let opaque = token(&issuer, "machine-o", &server.url).await;
    assert_eq!(opaque.matches('.').count(), 0, "an opaque token: {opaque}");
    let r = post(&server.url, &opaque, None, initialize()).await;
    assert_eq!(r.status(), 200);
    // JWTs still go by the keys.
    let jwt = token(&issuer, "machine-a", &server.url).await;
    assert_eq!(
        post(&server.url, &jwt, None, initialize()).await.status(),
        200
    );
    // An opaque token for another resource: introspection names its audience.
    let elsewhere = token(&issuer, "machine-o", "http://127.0.0.1:9/mcp").await;
    let r = post(&server.url, &elsewhere, None, initialize()).await;
    assert_eq!(r.status(), 401);
    let challenge = r.headers()["www-authenticate"].to_str().unwrap().to_owned();
    assert!(
        challenge.contains("error=\"invalid_token\", error_description=\"the token is not for this resource (aud)\""),
        "{challenge}"
    );
    // A made-up one is not active.
    let r = post(&server.url, "made-up-opaque-token", None, initialize()).await;
    assert_eq!(r.status(), 401);
    drop(server.http);
}

/// Runs a discovery script against our server and returns its JSON line.
async fn discovery(spec: peers::PeerSpec, url: &str, marker: &str) -> Value {
    let cmd = spec.arg(url).command();
    let out = peers::run_bounded_async(cmd, peers::SCRIPT_BOUND).await;
    let stdout = peers::assert_script_ok(&out, marker);
    let line = stdout.lines().next().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn assert_found(found: &Value, server: &Protected, issuer: &str) {
    let metadata = server
        .url
        .replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
    assert_eq!(found["status"], 401, "{found}");
    assert_eq!(found["resource_metadata"], metadata.as_str(), "{found}");
    assert_eq!(found["scope"], "mcp:tools", "{found}");
    assert_eq!(found["resource"], server.url.as_str(), "{found}");
    assert_eq!(found["fallback_resource"], server.url.as_str(), "{found}");
    let trimmed = |v: &Value| v.as_str().unwrap_or("").trim_end_matches('/').to_owned();
    assert_eq!(trimmed(&found["authorization_server"]), issuer, "{found}");
    assert_eq!(trimmed(&found["issuer"]), issuer, "{found}");
    assert_eq!(
        found["token_endpoint"],
        format!("{issuer}/token"),
        "{found}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ts_sdk_discovers_the_authorization_server_from_our_metadata() {
    let Some(spec) = peers::node_script("ts-discovery", &peers::interop_script("ts_discovery.cjs"))
    else {
        return;
    };
    let Some((_as, issuer)) = start_oidc() else {
        return;
    };
    let server = protected(&issuer).await;
    let found = discovery(spec, &server.url, "ts discovery ok").await;
    assert_found(&found, &server, &issuer);
    drop(server.http);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_discovers_the_authorization_server_from_our_metadata() {
    let Some(spec) = peers::python_script(
        "python-discovery",
        &peers::interop_script("python_discovery.py"),
    ) else {
        return;
    };
    let Some((_as, issuer)) = start_oidc() else {
        return;
    };
    let server = protected(&issuer).await;
    let found = discovery(spec, &server.url, "python discovery ok").await;
    assert_found(&found, &server, &issuer);
    // It tried the challenge's URL first, and found the path-inserted one
    // without it.
    let metadata = server
        .url
        .replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
    assert_eq!(found["prm_url"], metadata.as_str());
    assert_eq!(found["fallback_url"], metadata.as_str());
    drop(server.http);
}
