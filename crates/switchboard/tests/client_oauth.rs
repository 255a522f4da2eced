//! MCP authorization against a real peer: our [`Client`] with an OAuth client
//! ([`HttpClientConfig::auth`]) connects to an MCP server protected by the
//! official TypeScript SDK's authorization server and resource server
//! (`tests/interop/ts_oauth_server.cjs`: `mcpAuthRouter` over the SDK's demo
//! provider, which approves at once, and `requireBearerAuth` with
//! `expectedResource`), logs in through discovery, Dynamic Client Registration
//! and the code grant with PKCE (the SDK checks the verifier and that `resource`
//! is exactly the MCP URL), and calls a tool that reports the token the SDK
//! verified. The same against the Python SDK's authorization server
//! (`tests/interop/python_oauth_server.py`, `MCPServer` with an in-memory
//! provider), whose refresh tokens are then used when the access token is gone.
//!
//! Required when `SWITCHBOARD_NODE` and `SWITCHBOARD_PEERS_NODE` (TypeScript),
//! `SWITCHBOARD_PYTHON` (Python) are set (`scripts/test` sets them from
//! `scripts/install-peers`); otherwise each test prints why it is skipped and
//! passes. Every wait is bounded.

#[path = "common/peers.rs"]
mod peers;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use switchboard::client::auth::{FollowRedirects, OAuthClient, OAuthConfig};
use switchboard::client::HttpClientConfig;
use switchboard::{Client, ClientOptions};
use switchboard_protocol::types::Implementation;

const LIMIT: Duration = Duration::from_secs(30);

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
        .recv_timeout(LIMIT)
        .expect("the OAuth server did not print its URL in time");
    let ready: Value = serde_json::from_str(line.trim()).expect("the ready line is JSON");
    Some((child, ready["url"].as_str().unwrap().to_owned()))
}

/// Connects to `url` with an OAuth client whose agent follows the redirects.
async fn connect(url: &str) -> (Client, Arc<OAuthClient>) {
    let auth = OAuthClient::new(OAuthConfig {
        client_name: "switchboard-interop".into(),
        redirect_uri: "http://127.0.0.1:9/callback".into(),
        agent: Some(Arc::new(FollowRedirects::new(LIMIT).unwrap())),
        ..OAuthConfig::default()
    })
    .unwrap();
    let mut config = HttpClientConfig::new(url);
    config.auth = Some(auth.clone());
    let options = ClientOptions::new(Implementation::new("switchboard-interop", "0"));
    let client = tokio::time::timeout(LIMIT, Client::connect_url(url, options, config))
        .await
        .expect("bounded")
        .expect("connect through the SDK's authorization");
    (client, auth)
}

/// `tools/call name {}`, its text.
async fn call(client: &Client, name: &str) -> String {
    let result = tokio::time::timeout(LIMIT, client.call_tool(name, json!({})))
        .await
        .expect("bounded")
        .unwrap_or_else(|e| panic!("tools/call {name}: {e}"));
    assert!(!result.is_error(), "{name}: {result:?}");
    result.content.iter().filter_map(|b| b.as_text()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_in_at_the_ts_sdk_authorization_server_and_calls_a_tool() {
    let script = peers::interop_script("ts_oauth_server.cjs");
    let Some((_server, url)) = start_server(peers::node_script("ts-oauth-server", &script)) else {
        return;
    };
    let (client, auth) = connect(&url).await;
    assert!(auth.is_authorized());
    let text = call(&client, "whoami").await;
    // The SDK registered us (a client id of its own) and granted the scope its
    // Protected Resource Metadata lists.
    assert!(text.starts_with("client "), "{text}");
    assert!(text.ends_with("scopes mcp:tools"), "{text}");
}

/// The Python SDK's authorization server issues refresh tokens: after the
/// server forgets the access token, the next call's 401 is answered with the
/// refresh_token grant (the SDK counts it), not a new authorization.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_in_at_the_python_sdk_authorization_server_and_refreshes() {
    let script = peers::interop_script("python_oauth_server.py");
    let Some((_server, url)) = start_server(peers::python_script("python-oauth-server", &script))
    else {
        return;
    };
    let (client, auth) = connect(&url).await;
    let text = call(&client, "whoami").await;
    assert!(
        text.starts_with("client ") && text.ends_with(" refreshed 0"),
        "{text}"
    );
    let first = auth.generation();
    assert_eq!(call(&client, "revoke_access").await, "revoked");
    let text = call(&client, "whoami").await;
    assert!(text.ends_with(" refreshed 1"), "{text}");
    assert_eq!(auth.generation(), first + 1);
}
