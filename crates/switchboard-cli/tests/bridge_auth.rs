//! `switchboard bridge --auth-*`: the bridge as an OAuth resource server in
//! front of a stdio child that records everything it is given (its stdin, its
//! environment) before handing stdin on to `switchboard example-server`. A
//! request without a token gets the 401 challenge; with a valid one (minted
//! here, Ed25519, checked against a JWK set served by this test on 127.0.0.1),
//! a session and a stateless 2026-07-28 call work, and the child never sees the
//! token nor an `Authorization` header (MCP: no token passthrough). Every wait
//! is bounded.

mod bridge_util;

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use bridge_util::*;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A test key (generated once with openssl; test use only): Ed25519 PKCS#8
/// DER and the public `x`.
const KEY: (&str, &str) = (
    "MC4CAQAwBQYDK2VwBCIEIGbIJxeyCFvPWHF1osnaF7a7SRfGYtDWKd9GvtLBMd0M",
    "GjzkVYDne0KflCZIk0dgxf3GXm-1Gp8dWERqzRxmhrM",
);
const ISSUER: &str = "http://127.0.0.1:1";
const RESOURCE: &str = "https://bridge.example/mcp";

/// Serves the JWK set at any path, one connection at a time, until the test
/// ends; returns its URL.
async fn jwks_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks", listener.local_addr().unwrap());
    let body = json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": KEY.1, "kid": "k1",
                                "use": "sig", "alg": "EdDSA"}]})
    .to_string();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buf = [0u8; 4096];
            let _ = tokio::time::timeout(WAIT, stream.read(&mut buf)).await;
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes()).await;
        }
    });
    url
}

fn token(sub: &str) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = json!({"iss": ISSUER, "aud": RESOURCE, "sub": sub, "client_id": "cli",
                        "scope": "mcp:tools", "exp": now + 300});
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some("k1".into());
    let der = base64::engine::general_purpose::STANDARD
        .decode(KEY.0)
        .unwrap();
    jsonwebtoken::encode(&header, &claims, &EncodingKey::from_ed_der(&der)).unwrap()
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
