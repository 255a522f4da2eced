//! Helpers for the tests of the `--auth-*` flags and `auth` tables (a server
//! as an OAuth resource server): a test signing key, its JWK set served on
//! 127.0.0.1, access tokens (Ed25519 JWTs) minted with it, and raw requests
//! that show a refusal's status and challenge. Every wait is bounded.
#![allow(dead_code)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A test key (generated once with openssl; test use only): Ed25519 PKCS#8
/// DER and the public `x`.
pub const KEY: (&str, &str) = (
    "MC4CAQAwBQYDK2VwBCIEIGbIJxeyCFvPWHF1osnaF7a7SRfGYtDWKd9GvtLBMd0M",
    "GjzkVYDne0KflCZIk0dgxf3GXm-1Gp8dWERqzRxmhrM",
);

/// The key id of [`KEY`] in the JWK set and in the tokens' header.
pub const KID: &str = "k1";

/// The bound on reading one request of the JWK set server, and on each
/// request and answer of [`post`].
const READ_BOUND: Duration = Duration::from_secs(30);

/// Serves the JWK set of [`KEY`] at any path, one connection at a time, until
/// the test's runtime ends; returns its URL (`http://127.0.0.1:PORT/jwks`).
pub async fn jwks_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks", listener.local_addr().unwrap());
    let body = json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": KEY.1, "kid": KID,
                                "use": "sig", "alg": "EdDSA"}]})
    .to_string();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buf = [0u8; 4096];
            let _ = tokio::time::timeout(READ_BOUND, stream.read(&mut buf)).await;
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes()).await;
        }
    });
    url
}

/// Seconds since the epoch.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A JWT with these claims, signed with [`KEY`] (EdDSA, `kid` [`KID`]).
pub fn mint(claims: &Value) -> String {
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some(KID.into());
    let der = base64::engine::general_purpose::STANDARD
        .decode(KEY.0)
        .unwrap();
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_ed_der(&der)).unwrap()
}

/// An access token of `issuer` for `audience`: subject `sub`, `scope` (space
/// separated), valid for five minutes from now.
pub fn token(issuer: &str, audience: &str, sub: &str, scope: &str) -> String {
    mint(
        &json!({"iss": issuer, "aud": audience, "sub": sub, "client_id": "cli",
                 "scope": scope, "exp": now() + 300}),
    )
}

/// `f`, or a panic after [`READ_BOUND`].
async fn bounded<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(READ_BOUND, f)
        .await
        .expect("answered within the bound")
}

/// An HTTP client whose every request is bounded by [`READ_BOUND`].
pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(READ_BOUND)
        .build()
        .unwrap()
}

/// What [`post`] got back.
pub struct Reply {
    pub status: u16,
    pub challenge: Option<String>,
    pub session: Option<String>,
    pub body: String,
}

impl Reply {
    /// The JSON-RPC message answering `id` (a JSON body, or one of an SSE
    /// stream's events).
    pub fn response(&self, id: i64) -> Value {
        if let Ok(v) = serde_json::from_str::<Value>(&self.body) {
            return v;
        }
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("no response to {id} in {}", self.body))
    }
}

/// POSTs `body` to `url` with `bearer` (if any) and `headers`.
pub async fn post(
    url: &str,
    bearer: Option<&str>,
    headers: &[(&str, &str)],
    body: &Value,
) -> Reply {
    let mut req = http()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(t) = bearer {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = bounded(req.send()).await.expect("the gateway answers");
    let status = r.status().as_u16();
    let challenge = r
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned());
    let session = r
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let body = bounded(r.text()).await.unwrap_or_default();
    Reply {
        status,
        challenge,
        session,
        body,
    }
}

/// An `initialize` request (2025-11-25) as request 0.
pub fn initialize() -> Value {
    json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name":"gateway-auth-test","version":"1"}}})
}

/// A 2026-07-28 `tools/call` of `tool` with `arguments`, raw, as request `id`.
pub async fn modern_call(url: &str, bearer: &str, id: i64, tool: &str, arguments: Value) -> Reply {
    let body = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{
        "name": tool, "arguments": arguments, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "gateway-auth-test", "version": "1"}}}});
    post(
        url,
        Some(bearer),
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", tool),
        ],
        &body,
    )
    .await
}

/// The `scope` parameter of a challenge, split.
pub fn challenge_scopes(challenge: &str) -> Vec<String> {
    let Some((_, rest)) = challenge.split_once(" scope=\"") else {
        return Vec::new();
    };
    let value = rest.split('"').next().unwrap_or_default();
    value.split_whitespace().map(str::to_owned).collect()
}
