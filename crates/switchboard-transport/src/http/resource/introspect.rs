//! Opaque access tokens, checked by RFC 7662 token introspection: a POST of
//! `token=<token>` to the configured endpoint, with the resource server's own
//! client credentials (HTTP Basic, RFC 7662 §2.1), and a brief cache of the
//! answers keyed by the token's SHA-256 (never the token itself).
//!
//! [`judge`] is the pure part: an introspection answer, the expectations and
//! the time give a [`Principal`] or a [`TokenError`]. It must not know JWTs or
//! the HTTP server.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use reqwest::Url;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use super::jwt::Expectations;
use super::{KeySourceError, Principal, TokenError};

/// RFC 7662 §2.2: the members of an introspection answer read here.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Introspection {
    /// Whether the token is active; everything else is meaningless without it.
    pub active: bool,
    /// Space-separated scopes.
    #[serde(default)]
    pub scope: Option<String>,
    /// The client the token was issued to.
    #[serde(default)]
    pub client_id: Option<String>,
    /// The subject (the resource owner, or the client itself).
    #[serde(default)]
    pub sub: Option<String>,
    /// The audience: a string or an array of strings.
    #[serde(default)]
    pub aud: Option<serde_json::Value>,
    /// The issuer.
    #[serde(default)]
    pub iss: Option<String>,
    /// Expiry, Unix seconds.
    #[serde(default)]
    pub exp: Option<f64>,
    /// Not before, Unix seconds.
    #[serde(default)]
    pub nbf: Option<f64>,
}

/// Judges an introspection answer at Unix time `now` (seconds): `active`
/// ([`TokenError::Inactive`]), `iss` when present equal to the issuer
/// ([`TokenError::Issuer`]), `aud` containing the resource
/// ([`TokenError::Audience`]: required, as for JWTs), `exp`/`nbf` when
/// present within the leeway, and a subject (`sub`, else `client_id`).
pub fn judge(
    answer: Introspection,
    expect: &Expectations<'_>,
    now: u64,
) -> Result<Principal, TokenError> {
    if !answer.active {
        return Err(TokenError::Inactive);
    }
    if let Some(iss) = &answer.iss {
        if iss != expect.issuer {
            return Err(TokenError::Issuer {
                found: Some(iss.clone()),
            });
        }
    }
    let audience_ok = match &answer.aud {
        Some(serde_json::Value::String(a)) => a == expect.resource,
        Some(serde_json::Value::Array(many)) => {
            many.iter().any(|a| a.as_str() == Some(expect.resource))
        }
        _ => false,
    };
    if !audience_ok {
        return Err(TokenError::Audience);
    }
    let (now, leeway) = (now as f64, expect.leeway as f64);
    if answer.exp.is_some_and(|exp| now > exp + leeway) {
        return Err(TokenError::Expired);
    }
    if answer.nbf.is_some_and(|nbf| nbf > now + leeway) {
        return Err(TokenError::NotYetValid);
    }
    let subject = answer
        .sub
        .filter(|s| !s.is_empty())
        .or_else(|| answer.client_id.clone())
        .ok_or(TokenError::NoSubject)?;
    Ok(Principal {
        subject,
        client_id: answer.client_id,
        scopes: super::bearer::split_scopes(answer.scope.as_deref().unwrap_or("")),
    })
}

/// Where and as whom tokens are introspected.
#[derive(Clone)]
pub struct IntrospectionConfig {
    /// The RFC 7662 endpoint (`https`, or `http` on the loopback).
    pub endpoint: String,
    /// The resource server's client id at the authorization server.
    pub client_id: String,
    /// Its secret (sent with HTTP Basic; never logged: `Debug` hides it).
    pub client_secret: String,
}

impl std::fmt::Debug for IntrospectionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionConfig")
            .field("endpoint", &self.endpoint)
            .field("client_id", &self.client_id)
            .field("client_secret", &"…")
            .finish()
    }
}

/// At most this many answers are cached; when full, expired ones go, then all.
const CACHE_ENTRIES: usize = 4096;

type Cached = (Result<Principal, TokenError>, Instant);

/// The introspection client with its cache.
pub(crate) struct Introspector {
    client: reqwest::Client,
    endpoint: Url,
    client_id: String,
    client_secret: String,
    ttl: Duration,
    cache: Mutex<HashMap<[u8; 32], Cached>>,
}

impl Introspector {
    pub(crate) fn new(
        client: reqwest::Client,
        endpoint: Url,
        config: &IntrospectionConfig,
        ttl: Duration,
    ) -> Self {
        Introspector {
            client,
            endpoint,
            client_id: config.client_id.clone(),
            client_secret: config.client_secret.clone(),
            ttl,
            cache: Mutex::new(HashMap::new()),
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Cached>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Checks `token`, from the cache when an answer for it is younger than
    /// the TTL (`now`: for the cache; `unix`: for [`judge`]).
    pub(crate) async fn check(
        &self,
        token: &str,
        expect: &Expectations<'_>,
        now: Instant,
        unix: u64,
    ) -> Result<Result<Principal, TokenError>, KeySourceError> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some((verdict, until)) = self.cache().get(&key) {
            if now < *until {
                return Ok(verdict.clone());
            }
        }
        let answer = self.ask(token).await?;
        let exp = answer.exp;
        let verdict = judge(answer, expect, unix);
        // Never cached beyond the token's own expiry.
        let mut ttl = self.ttl;
        if let Some(exp) = exp {
            let left = (exp - unix as f64).max(0.0);
            ttl = ttl.min(Duration::from_secs_f64(left));
        }
        let mut cache = self.cache();
        if cache.len() >= CACHE_ENTRIES {
            cache.retain(|_, (_, until)| now < *until);
            if cache.len() >= CACHE_ENTRIES {
                cache.clear();
            }
        }
        cache.insert(key, (verdict.clone(), now + ttl));
        Ok(verdict)
    }

    async fn ask(&self, token: &str) -> Result<Introspection, KeySourceError> {
        let url = &self.endpoint;
        let response = self
            .client
            .post(url.clone())
            .basic_auth(&self.client_id, Some(&self.client_secret))
            .header(reqwest::header::ACCEPT, "application/json")
            .form(&[("token", token), ("token_type_hint", "access_token")])
            .send()
            .await
            .map_err(|source| KeySourceError::Http {
                url: url.to_string(),
                source,
            })?;
        if !response.status().is_success() {
            return Err(KeySourceError::Status {
                url: url.to_string(),
                status: response.status().as_u16(),
            });
        }
        let body = super::keys::read_limited(response, url).await?;
        serde_json::from_slice(&body).map_err(|source| KeySourceError::Json {
            url: url.to_string(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn expect() -> Expectations<'static> {
        Expectations {
            issuer: "https://as.example",
            resource: "https://mcp.example/mcp",
            algorithms: &[],
            leeway: 60,
        }
    }

    fn answer(v: serde_json::Value) -> Introspection {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn judge_table() {
        let now = 1_000_000u64;
        let base = json!({"active": true, "sub": "bob", "client_id": "cli", "aud": "https://mcp.example/mcp", "scope": "a b", "exp": now + 10});
        let with = |k: &str, v: serde_json::Value| {
            let mut b = base.clone();
            if v.is_null() {
                b.as_object_mut().unwrap().remove(k);
            } else {
                b[k] = v;
            }
            b
        };
        let cases = [
            (base.clone(), Ok("bob")),
            (json!({"active": false}), Err(TokenError::Inactive)),
            (with("active", json!(false)), Err(TokenError::Inactive)),
            (
                with("iss", json!("https://other")),
                Err(TokenError::Issuer {
                    found: Some("https://other".into()),
                }),
            ),
            (with("iss", json!("https://as.example")), Ok("bob")),
            (with("aud", json!(null)), Err(TokenError::Audience)),
            (
                with("aud", json!(["x", "https://mcp.example/mcp"])),
                Ok("bob"),
            ),
            (
                with("aud", json!("https://mcp.example/")),
                Err(TokenError::Audience),
            ),
            (with("exp", json!(now - 61)), Err(TokenError::Expired)),
            (with("nbf", json!(now + 61)), Err(TokenError::NotYetValid)),
            (with("sub", json!(null)), Ok("cli")),
        ];
        for (i, (a, want)) in cases.into_iter().enumerate() {
            let got = judge(answer(a), &expect(), now).map(|p| p.subject);
            assert_eq!(got.as_deref().map_err(Clone::clone), want, "case {i}");
        }
        let p = judge(answer(base), &expect(), now).unwrap();
        assert_eq!(p.scopes, vec!["a", "b"]);
        assert_eq!(p.client_id.as_deref(), Some("cli"));
    }

    #[test]
    fn debug_hides_the_secret() {
        let c = IntrospectionConfig {
            endpoint: "https://as.example/introspect".into(),
            client_id: "rs".into(),
            client_secret: "hunter2".into(),
        };
        assert!(!format!("{c:?}").contains("hunter2"));
    }
}
