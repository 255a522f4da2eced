//! Helpers for the tests of the `--auth-*` flags (a server as an OAuth resource
//! server): a test signing key, its JWK set served on 127.0.0.1, and access
//! tokens (Ed25519 JWTs) minted with it.
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

/// The bound on reading one request of the JWK set server.
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
