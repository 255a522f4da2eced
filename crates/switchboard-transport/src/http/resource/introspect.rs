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
/// ([`TokenError::Issuer`]), the audience ([`TokenError::Audience`]), `exp`/`nbf`
/// when present within the leeway, and a subject (`sub`, else `client_id`).
///
/// The audience: an `aud` that is present must be the resource or an array
/// containing it (anything else, an empty array or a non-string included, is
/// refused); an absent (or `null`) `aud` is refused unless
/// `accept_missing_audience` ([`IntrospectionConfig::accept_missing_audience`]).
/// MCP (2025-06-18+, "Token Handling") requires validating that the token was
/// issued for this resource (RFC 8707); RFC 7662 §2.2 makes `aud` optional, so
/// an answer without it proves nothing and is accepted only by that explicit
/// opt-in, for an authorization server that never returns `aud` and binds
/// tokens to the resource by other means.
pub fn judge(
    answer: Introspection,
    expect: &Expectations<'_>,
    accept_missing_audience: bool,
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
        None | Some(serde_json::Value::Null) => accept_missing_audience,
        Some(_) => false,
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
#[derive(Clone, PartialEq, Eq)]
pub struct IntrospectionConfig {
    /// The RFC 7662 endpoint (`https`, or `http` on the loopback).
    pub endpoint: String,
    /// The resource server's client id at the authorization server.
    pub client_id: String,
    /// Its secret (sent with HTTP Basic; never logged: `Debug` hides it).
    pub client_secret: String,
    /// Whether an answer without `aud` is accepted (see [`judge`]). `false`
    /// (refused) unless set: an `aud` that is present is checked either way.
    pub accept_missing_audience: bool,
}

impl IntrospectionConfig {
    /// Introspection at `endpoint` as `client_id` with `client_secret`; an
    /// answer without `aud` refused.
    pub fn new(
        endpoint: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        IntrospectionConfig {
            endpoint: endpoint.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            accept_missing_audience: false,
        }
    }
}

impl std::fmt::Debug for IntrospectionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionConfig")
            .field("endpoint", &self.endpoint)
            .field("client_id", &self.client_id)
            .field("client_secret", &"…")
            .field("accept_missing_audience", &self.accept_missing_audience)
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
    accept_missing_audience: bool,
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
            accept_missing_audience: config.accept_missing_audience,
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
        let verdict = judge(answer, expect, self.accept_missing_audience, unix);
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
            let got = judge(answer(a), &expect(), false, now).map(|p| p.subject);
            assert_eq!(got.as_deref().map_err(Clone::clone), want, "case {i}");
        }
        let p = judge(answer(base), &expect(), false, now).unwrap();
        assert_eq!(p.scopes, vec!["a", "b"]);
        assert_eq!(p.client_id.as_deref(), Some("cli"));
    }

    /// The audience rule, strict by default and with the opt-in for an
    /// absent `aud`: a present `aud` that does not name the resource is
    /// refused either way.
    #[test]
    fn audience_table() {
        let now = 1_000_000u64;
        let with_aud = |aud: Option<serde_json::Value>| {
            let mut b = json!({"active": true, "sub": "bob", "exp": now + 10});
            if let Some(aud) = aud {
                b["aud"] = aud;
            }
            answer(b)
        };
        let me = || json!("https://mcp.example/mcp");
        let cases: [(Option<serde_json::Value>, bool, bool); 16] = [
            // (aud, accept_missing_audience, accepted)
            (Some(me()), false, true),
            (Some(me()), true, true),
            (Some(json!(["a", "https://mcp.example/mcp"])), false, true),
            (Some(json!(["a", "https://mcp.example/mcp"])), true, true),
            (Some(json!("https://other.example/mcp")), false, false),
            (Some(json!("https://other.example/mcp")), true, false),
            (Some(json!(["https://other.example/mcp"])), true, false),
            (Some(json!([])), false, false),
            (Some(json!([])), true, false),
            (Some(json!("")), true, false),
            (Some(json!(7)), true, false),
            (Some(json!({"aud": "https://mcp.example/mcp"})), true, false),
            (None, false, false),
            (None, true, true),
            (Some(serde_json::Value::Null), false, false),
            (Some(serde_json::Value::Null), true, true),
        ];
        for (i, (aud, accept_missing, accepted)) in cases.into_iter().enumerate() {
            let got = judge(with_aud(aud.clone()), &expect(), accept_missing, now);
            match (accepted, got) {
                (true, Ok(p)) => assert_eq!(p.subject, "bob", "case {i}"),
                (false, Err(TokenError::Audience)) => {}
                (_, other) => panic!("case {i} ({aud:?}, {accept_missing}): {other:?}"),
            }
        }
    }

    #[test]
    fn debug_hides_the_secret() {
        let c = IntrospectionConfig::new("https://as.example/introspect", "rs", "hunter2");
        assert!(!format!("{c:?}").contains("hunter2"));
    }
}
