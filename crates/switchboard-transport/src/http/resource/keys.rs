//! The issuer's JWK set: where it is (configured, else the issuer's RFC 8414 /
//! OpenID Connect metadata `jwks_uri`), fetched with reqwest, cached, and
//! fetched again when it is older than `max_age` or a token names a `kid` it
//! lacks (a key rotation), never more often than once per `min_interval`
//! ([`RefetchPolicy`], a pure decision on times given to it).
//!
//! It must not know tokens beyond their `kid`, nor the HTTP server.

use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use serde::Deserialize;
use tokio::time::Instant;
use tracing::{debug, warn};

use super::jwt::KeySet;
use super::KeySourceError;

/// When the key set is fetched (again). Times are passed in: the decision is
/// pure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefetchPolicy {
    /// The least time between two fetches of any kind (the rate bound: tokens
    /// naming made-up `kid`s cause at most one fetch per interval). Default
    /// 30 s.
    pub min_interval: Duration,
    /// A set older than this is fetched again at its next use. Default 1 h.
    pub max_age: Duration,
}

impl Default for RefetchPolicy {
    fn default() -> Self {
        RefetchPolicy {
            min_interval: Duration::from_secs(30),
            max_age: Duration::from_secs(3600),
        }
    }
}

impl RefetchPolicy {
    /// Whether to fetch at `now`: the set is missing or older than
    /// [`max_age`](Self::max_age), or `unknown_kid` (a token names a key the
    /// set lacks), and the last attempt (successful or not) is at least
    /// [`min_interval`](Self::min_interval) ago.
    pub fn should_fetch(
        &self,
        last_attempt: Option<Instant>,
        fetched_at: Option<Instant>,
        unknown_kid: bool,
        now: Instant,
    ) -> bool {
        let since = |t: Instant| now.saturating_duration_since(t);
        let rate_ok = last_attempt.is_none_or(|t| since(t) >= self.min_interval);
        let stale = fetched_at.is_none_or(|t| since(t) >= self.max_age);
        rate_ok && (stale || unknown_kid)
    }
}

#[derive(Default)]
struct State {
    keys: Arc<KeySet>,
    fetched_at: Option<Instant>,
    last_attempt: Option<Instant>,
    /// The set's URL, once known (configured or discovered).
    url: Option<Url>,
}

/// The cached key set of one issuer.
pub(crate) struct Jwks {
    client: reqwest::Client,
    issuer: Url,
    policy: RefetchPolicy,
    state: tokio::sync::Mutex<State>,
}

/// The members of authorization server metadata read here.
#[derive(Deserialize)]
struct Metadata {
    issuer: String,
    jwks_uri: Option<String>,
}

impl Jwks {
    pub(crate) fn new(
        client: reqwest::Client,
        issuer: Url,
        url: Option<Url>,
        policy: RefetchPolicy,
    ) -> Self {
        Jwks {
            client,
            issuer,
            policy,
            state: tokio::sync::Mutex::new(State {
                url,
                ..State::default()
            }),
        }
    }

    /// The key set to check a token naming `kid` with, fetched first when the
    /// policy says so at `now`. A failed fetch keeps the set held (logged);
    /// with none held yet it is the error.
    pub(crate) async fn keys(
        &self,
        kid: Option<&str>,
        now: Instant,
    ) -> Result<Arc<KeySet>, KeySourceError> {
        let mut state = self.state.lock().await;
        let unknown = kid.is_some_and(|k| !state.keys.has_kid(k));
        if !self
            .policy
            .should_fetch(state.last_attempt, state.fetched_at, unknown, now)
        {
            // A first fetch that failed moments ago: no keys to judge by.
            if state.fetched_at.is_none() {
                return Err(KeySourceError::NoKeysYet);
            }
            return Ok(state.keys.clone());
        }
        state.last_attempt = Some(now);
        match self.fetch(&mut state).await {
            Ok(keys) => {
                debug!(keys = keys.len(), "fetched the issuer's key set");
                state.keys = Arc::new(keys);
                state.fetched_at = Some(now);
                Ok(state.keys.clone())
            }
            Err(e) if state.fetched_at.is_some() => {
                warn!(error = %crate::error_chain(&e), "fetching the issuer's key set failed; the keys held are used");
                Ok(state.keys.clone())
            }
            Err(e) => Err(e),
        }
    }

    async fn fetch(&self, state: &mut State) -> Result<KeySet, KeySourceError> {
        let url = match &state.url {
            Some(url) => url.clone(),
            None => {
                let url = self.discover().await?;
                state.url = Some(url.clone());
                url
            }
        };
        let body = get(&self.client, &url).await?;
        KeySet::from_json(&body).map_err(|source| KeySourceError::Json {
            url: url.to_string(),
            source,
        })
    }

    /// The `jwks_uri` of the issuer's metadata, at the well-known URLs in the
    /// order MCP gives (RFC 8414, then OpenID Connect, path variants); the
    /// metadata's `issuer` must be the configured one exactly (RFC 8414 §3.3).
    async fn discover(&self) -> Result<Url, KeySourceError> {
        let mut last = None;
        for url in crate::http::auth::authorization_server_metadata_urls(&self.issuer) {
            let body = match get(&self.client, &url).await {
                Ok(body) => body,
                Err(e) => {
                    last = Some(e);
                    continue;
                }
            };
            let meta: Metadata =
                serde_json::from_slice(&body).map_err(|source| KeySourceError::Json {
                    url: url.to_string(),
                    source,
                })?;
            if meta.issuer != self.issuer.as_str() && meta.issuer != issuer_text(&self.issuer) {
                return Err(KeySourceError::IssuerMismatch {
                    expected: issuer_text(&self.issuer),
                    found: meta.issuer,
                });
            }
            let jwks = meta.jwks_uri.ok_or(KeySourceError::NoJwksUri {
                url: url.to_string(),
            })?;
            return Url::parse(&jwks).map_err(|_| KeySourceError::NoJwksUri {
                url: url.to_string(),
            });
        }
        Err(last.unwrap_or(KeySourceError::NoMetadata))
    }
}

/// The issuer as configured: `Url` adds a `/` to a bare origin, which the
/// configured text may lack.
fn issuer_text(issuer: &Url) -> String {
    let s = issuer.as_str();
    if issuer.path() == "/" && issuer.query().is_none() {
        s.trim_end_matches('/').to_owned()
    } else {
        s.to_owned()
    }
}

/// At most this much of a metadata or key set document is read: 1 MiB.
const MAX_DOCUMENT: usize = 1 << 20;

/// GET `url`, 200 expected, the body at most [`MAX_DOCUMENT`] bytes.
pub(crate) async fn get(client: &reqwest::Client, url: &Url) -> Result<Vec<u8>, KeySourceError> {
    let http = |source| KeySourceError::Http {
        url: url.to_string(),
        source,
    };
    let response = client
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(http)?;
    if !response.status().is_success() {
        return Err(KeySourceError::Status {
            url: url.to_string(),
            status: response.status().as_u16(),
        });
    }
    read_limited(response, url).await
}

/// The body of `response`, at most [`MAX_DOCUMENT`] bytes.
pub(crate) async fn read_limited(
    mut response: reqwest::Response,
    url: &Url,
) -> Result<Vec<u8>, KeySourceError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|source| KeySourceError::Http {
            url: url.to_string(),
            source,
        })?
    {
        if body.len() + chunk.len() > MAX_DOCUMENT {
            return Err(KeySourceError::TooLarge {
                url: url.to_string(),
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refetch_policy_table() {
        let p = RefetchPolicy {
            min_interval: Duration::from_secs(30),
            max_age: Duration::from_secs(3600),
        };
        let t0 = Instant::now();
        let s = Duration::from_secs;
        // (last attempt, fetched at, unknown kid, now, fetch?)
        let cases = [
            (None, None, false, t0, true),
            (Some(t0), None, false, t0 + s(29), false),
            (Some(t0), None, false, t0 + s(30), true),
            (Some(t0), Some(t0), false, t0 + s(100), false),
            (Some(t0), Some(t0), true, t0 + s(29), false),
            (Some(t0), Some(t0), true, t0 + s(30), true),
            (Some(t0), Some(t0), false, t0 + s(3600), true),
            (Some(t0 + s(3590)), Some(t0), false, t0 + s(3600), false),
        ];
        for (i, (last, fetched, unknown, now, want)) in cases.into_iter().enumerate() {
            assert_eq!(
                p.should_fetch(last, fetched, unknown, now),
                want,
                "case {i}"
            );
        }
    }

    #[test]
    fn issuer_text_keeps_the_configured_form() {
        let u = Url::parse("https://as.example").unwrap();
        assert_eq!(issuer_text(&u), "https://as.example");
        let u = Url::parse("https://as.example/tenant").unwrap();
        assert_eq!(issuer_text(&u), "https://as.example/tenant");
    }
}
