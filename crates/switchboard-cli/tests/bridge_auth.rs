//! `switchboard bridge --auth-*`: the bridge as an OAuth resource server in
//! front of a stdio child that records everything it is given (its stdin, its
//! environment) before handing stdin on to `switchboard example-server`. A
//! request without a token gets the 401 challenge; with a valid one (minted
//! here, Ed25519, checked against a JWK set served by this test on 127.0.0.1),
//! a session and a stateless 2026-07-28 call work, and the child never sees the
//! token nor an `Authorization` header (MCP: no token passthrough). Every wait
//! is bounded.

mod auth_util;
mod bridge_util;

use auth_util::jwks_server;
use bridge_util::*;
use serde_json::json;

const ISSUER: &str = "http://127.0.0.1:1";
const RESOURCE: &str = "https://bridge.example/mcp";

fn token(sub: &str) -> String {
    auth_util::token(ISSUER, RESOURCE, sub, "mcp:tools")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bridge_checks_tokens_and_never_hands_them_to_the_child() {
    let jwks = jwks_server().await;
    let record = temp_path("auth-record");
    let record_s = record.to_str().unwrap().to_owned();
    // The child: its environment and everything on its stdin appended to the
    // record, stdin then served by the example server.
    let script = format!("env >> '{record_s}'; tee -a '{record_s}' | exec '{BIN}' example-server");
    let bridge = BridgeProc::start(
        &[
            "--child",
            "shared",
            "--auth-issuer",
            ISSUER,
            "--auth-resource",
            RESOURCE,
            "--auth-jwks",
            &jwks,
            "--auth-scope",
            "mcp:tools",
        ],
        &["sh", "-c", &script],
    )
    .await;
    let c = client();
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name":"bridge-test","version":"1"}}});

    // No token: the challenge, and the metadata where it points.
    let reply = post(&c, &bridge.url, &[], &init).await;
    assert_eq!(reply.status, 401, "{}", reply.body);
    assert_eq!(
        reply.headers["www-authenticate"].to_str().unwrap(),
        "Bearer scope=\"mcp:tools\", resource_metadata=\"https://bridge.example/.well-known/oauth-protected-resource/mcp\""
    );
    let prm = c
        .get(format!(
            "{}/.well-known/oauth-protected-resource/mcp",
            bridge.base
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(prm.status(), 200);
    let prm: serde_json::Value = serde_json::from_str(&prm.text().await.unwrap()).unwrap();
    assert_eq!(prm["resource"], RESOURCE);
    assert_eq!(prm["authorization_servers"], json!([ISSUER]));

    // With a token: a session and a tool call, then a 2026-07-28 call.
    let secret = token("alice");
    let bearer = format!("Bearer {secret}");
    let auth = [("authorization", bearer.as_str())];
    let reply = post(&c, &bridge.url, &auth, &init).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let session = reply.headers["mcp-session-id"].to_str().unwrap().to_owned();
    let mut headers = vec![
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    headers.extend_from_slice(&auth);
    let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
                      "params":{"name":"echo","arguments":{"text":"through"}}});
    let reply = post(&c, &bridge.url, &headers, &call).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(first_text(&reply.response(&json!(1))["result"]), "through");
    // Another subject's token on that session: not found.
    let mallory = format!("Bearer {}", token("mallory"));
    headers.pop();
    headers.push(("authorization", mallory.as_str()));
    let reply = post(&c, &bridge.url, &headers, &call).await;
    assert_eq!(reply.status, 404, "{}", reply.body);

    let mut params = json!({"name":"echo","arguments":{"text":"modern"}});
    params["_meta"] = modern_meta(json!({}));
    let body = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":params});
    let mut modern_headers = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "echo"),
    ];
    modern_headers.extend_from_slice(&auth);
    let reply = post(&c, &bridge.url, &modern_headers, &body).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(first_text(&reply.response(&json!(2))["result"]), "modern");

    // The child got the calls, and never the token.
    let seen = std::fs::read_to_string(&record).unwrap();
    assert!(
        seen.contains("\"through\"") && seen.contains("\"modern\""),
        "{seen}"
    );
    assert!(!seen.contains(&secret), "the token reached the child");
    assert!(!seen.to_ascii_lowercase().contains("bearer"), "{seen}");
    assert!(
        !seen.to_ascii_lowercase().contains("authorization"),
        "{seen}"
    );
    let _ = std::fs::remove_file(&record);
}
