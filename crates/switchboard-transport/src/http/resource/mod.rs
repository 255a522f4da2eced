//! MCP authorization, resource server side: the HTTP server
//! ([`HttpServerConfig::auth`](super::server::HttpServerConfig::auth)) as an
//! OAuth 2.1 resource server (MCP 2025-06-18+ "Authorization"; REVISIONS.md §8).
//!
//! Configured by a [`ResourceServerConfig`]: the issuer, the canonical
//! resource URI, optionally the JWK set URL (else the issuer's metadata names
//! it), required scopes, and optionally an RFC 7662 introspection endpoint for
//! opaque tokens. The server then publishes Protected Resource Metadata (RFC
//! 9728, [`ResourceServer::metadata_paths`]), answers a request without a valid
//! token with 401 and a `WWW-Authenticate: Bearer` challenge naming that
//! metadata, and one without the scopes with 403 `insufficient_scope`; what a
//! valid token says is a [`Principal`], handed to the library with each
//! session.
//!
//! Parts: `bearer` (the `Authorization` header, the query rule, the challenge's
//! text; `std` only, fuzzed), `jwt` (JWT checks on a key set and a time given),
//! `keys` (the JWK set, fetched and cached under a [`RefetchPolicy`]),
//! `introspect` (RFC 7662). This module reads the clock and holds the state;
//! the pure parts are table-tested.
//!
//! It must not know MCP messages, sessions or the server's routing: the server
//! asks it about a request's credentials and maps its [`Refusal`] to a response
//! in one place. Tokens are never logged, never kept beyond the introspection
//! cache (by their SHA-256), and never handed on: the server takes the
//! `Authorization` header out of what it gives the library.

pub mod bearer;
pub mod introspect;
pub mod jwt;
pub mod keys;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::Url;
use tokio::time::Instant;

pub use bearer::BearerError;
pub use introspect::IntrospectionConfig;
pub use jsonwebtoken::Algorithm;
pub use keys::RefetchPolicy;

/// The well-known path of Protected Resource Metadata (RFC 9728 §3.1).
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The default clock skew allowed on `exp` and `nbf`: 60 s.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(60);

/// The default time an introspection answer is reused: 30 s (never beyond
/// the token's `exp`).
pub const DEFAULT_INTROSPECTION_CACHE: Duration = Duration::from_secs(30);

/// The default bound of one fetch (metadata, key set, introspection): 10 s.
pub const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(10);

/// Who made a request, as its access token says.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Principal {
    /// `sub` (else the client id, for a client acting for itself).
    pub subject: String,
    /// `client_id` (else `azp`), when the token names it.
    pub client_id: Option<String>,
    /// The scopes granted (`scope`, or `scp`).
    pub scopes: Vec<String>,
}

impl Principal {
    /// A principal (for tests and for callers that authenticate by other
    /// means).
    pub fn new(subject: impl Into<String>, client_id: Option<String>, scopes: Vec<String>) -> Self {
        Principal {
            subject: subject.into(),
            client_id,
            scopes,
        }
    }

    /// The scopes of `required` this principal lacks, in order.
    pub fn missing_scopes<'a>(&self, required: &'a [String]) -> Vec<&'a str> {
        bearer::missing_scopes(&self.scopes, required)
    }
}

/// Scopes needed beyond [`ResourceServerConfig::scopes`], by tool: the hook a
/// gateway fills per route and per tool. The HTTP server checks it for every
/// `tools/call` it is POSTed (alone, in a batch, on the legacy message path)
/// naming a listed tool: 403 `insufficient_scope` with the scopes to ask for
/// when the token lacks one.
pub type ToolScopes = BTreeMap<String, Vec<String>>;

/// The resource server's configuration ([`HttpServerConfig::auth`](super::server::HttpServerConfig::auth),
/// or one route's in [`HttpServerConfig::route_auth`](super::server::HttpServerConfig::route_auth)).
/// Compared whole (`==`) by a gateway's reload, secrets included.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ResourceServerConfig {
    /// The authorization server's issuer identifier: tokens' `iss` must equal
    /// it exactly, and it is the one `authorization_servers` entry of the
    /// metadata. `https`, or `http` on the loopback.
    pub issuer: String,
    /// The canonical URI of this MCP server (RFC 8707 §2, MCP "Canonical Server
    /// URI"), e.g. `https://mcp.example.com/mcp`: tokens' `aud` must contain it
    /// exactly, and the metadata's `resource` is it, exactly as given. An
    /// absolute `http(s)` URI without fragment.
    pub resource: String,
    /// The JWK set URL. `None`: the `jwks_uri` of the issuer's metadata (RFC
    /// 8414, then OpenID Connect discovery, at the URLs MCP lists).
    pub jwks_url: Option<String>,
    /// Scopes every request needs; also the metadata's `scopes_supported` and
    /// the 401 challenge's `scope`. Default none.
    pub scopes: Vec<String>,
    /// Scopes by tool ([`ToolScopes`]). Default none.
    pub tool_scopes: ToolScopes,
    /// RFC 7662 introspection for tokens that are not JWTs. `None`: only JWTs
    /// are accepted.
    pub introspection: Option<IntrospectionConfig>,
    /// The JWS algorithms accepted. Default [`jwt::DEFAULT_ALGORITHMS`]
    /// (RSA, ECDSA, EdDSA); HMAC ones are refused here.
    pub algorithms: Vec<Algorithm>,
    /// Clock skew allowed on `exp` and `nbf`. Default [`DEFAULT_LEEWAY`] (60 s).
    pub leeway: Duration,
    /// When the key set is fetched again. Default [`RefetchPolicy::default`].
    pub refetch: RefetchPolicy,
    /// How long an introspection answer is reused. Default
    /// [`DEFAULT_INTROSPECTION_CACHE`].
    pub introspection_cache: Duration,
    /// The bound of each fetch. Default [`DEFAULT_HTTP_TIMEOUT`].
    pub http_timeout: Duration,
}

impl ResourceServerConfig {
    /// A configuration with these and the defaults for the rest.
    pub fn new(issuer: impl Into<String>, resource: impl Into<String>) -> Self {
        ResourceServerConfig {
            issuer: issuer.into(),
            resource: resource.into(),
            jwks_url: None,
            scopes: Vec::new(),
            tool_scopes: ToolScopes::new(),
            introspection: None,
            algorithms: jwt::DEFAULT_ALGORITHMS.to_vec(),
            leeway: DEFAULT_LEEWAY,
            refetch: RefetchPolicy::default(),
            introspection_cache: DEFAULT_INTROSPECTION_CACHE,
            http_timeout: DEFAULT_HTTP_TIMEOUT,
        }
    }
}

/// A [`ResourceServerConfig`] that cannot be served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A URL that does not parse or is not `http(s)`.
    #[error("{what} is not an absolute http(s) URL: {url:?}")]
    Url {
        /// Which setting.
        what: &'static str,
        /// Its value.
        url: String,
    },
    /// An authorization server URL over plain `http` off the loopback.
    #[error("{what} must use https (http only on the loopback): {url:?}")]
    Insecure {
        /// Which setting.
        what: &'static str,
        /// Its value.
        url: String,
    },
    /// The resource URI has a fragment (RFC 8707 §2 forbids it).
    #[error("the resource URI must not have a fragment: {0:?}")]
    Fragment(String),
    /// No algorithm left once HMAC ones are taken out.
    #[error("no asymmetric JWS algorithm is accepted (HMAC ones never are)")]
    NoAlgorithm,
    /// The HTTP client could not be built.
    #[error("the HTTP client for the authorization server could not be built")]
    Client(#[source] reqwest::Error),
}

/// Why a token was not accepted (401 `invalid_token`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Not a JWS, or a header or claims that do not parse.
    #[error("the token is malformed: {0}")]
    Malformed(String),
    /// An algorithm not accepted (`none`, HMAC, one not configured), or one
    /// that does not fit its key.
    #[error("the token's algorithm {0:?} is not accepted")]
    Algorithm(String),
    /// No key of the issuer's set has the token's `kid` (`None`: no `kid` and
    /// no single key to use).
    #[error("no key of the issuer verifies the token ({})", .0.as_deref().map_or("no kid".to_owned(), |k| format!("kid {k}")))]
    UnknownKey(Option<String>),
    /// The signature does not verify.
    #[error("the token's signature does not verify")]
    Signature,
    /// `iss` is not the issuer.
    #[error("the token was issued by {}, not this resource's issuer", .found.as_deref().unwrap_or("no one (no iss)"))]
    Issuer {
        /// The token's `iss`.
        found: Option<String>,
    },
    /// `aud` does not contain this resource.
    #[error("the token is not for this resource (aud)")]
    Audience,
    /// Past `exp` (or no `exp`).
    #[error("the token has expired")]
    Expired,
    /// Before `nbf`.
    #[error("the token is not valid yet")]
    NotYetValid,
    /// Neither `sub` nor a client id.
    #[error("the token names no subject")]
    NoSubject,
    /// Introspection says it is not active.
    #[error("the token is not active")]
    Inactive,
    /// Not a JWT, and no introspection endpoint is configured.
    #[error("opaque tokens are not accepted here")]
    Opaque,
}

/// Why a token could not be checked at all: the authorization server's
/// documents could not be had (503).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeySourceError {
    /// The request failed (connection, timeout).
    #[error("fetching {url} failed")]
    Http {
        /// What was fetched.
        url: String,
        /// Why.
        #[source]
        source: reqwest::Error,
    },
    /// Not a 2xx answer.
    #[error("{url} answered {status}")]
    Status {
        /// What was fetched.
        url: String,
        /// The HTTP status.
        status: u16,
    },
    /// Not the JSON expected.
    #[error("{url} did not answer the JSON expected")]
    Json {
        /// What was fetched.
        url: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// Over 1 MiB.
    #[error("{url} answered more than 1 MiB")]
    TooLarge {
        /// What was fetched.
        url: String,
    },
    /// The last fetch of the key set failed and the next is not due yet.
    #[error("the issuer's keys could not be fetched; the next try is not due yet")]
    NoKeysYet,
    /// None of the metadata URLs answered.
    #[error("the issuer publishes no metadata")]
    NoMetadata,
    /// The metadata names no (valid) `jwks_uri`.
    #[error("the issuer's metadata at {url} names no jwks_uri")]
    NoJwksUri {
        /// The metadata's URL.
        url: String,
    },
    /// The metadata is another issuer's.
    #[error("the metadata is for issuer {found:?}, not {expected:?}")]
    IssuerMismatch {
        /// The configured issuer.
        expected: String,
        /// The metadata's `issuer`.
        found: String,
    },
}

/// Why a request was refused; [`Refusal::status`] and
/// [`ResourceServer::challenge`] are its answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// No bearer token (401, no error code: RFC 6750 §3.1).
    #[error("no bearer token")]
    NoToken,
    /// A malformed request (400 `invalid_request`) or token (401
    /// `invalid_token`).
    #[error("{}", .0.description())]
    Request(BearerError),
    /// A token not accepted (401 `invalid_token`).
    #[error(transparent)]
    Token(#[from] TokenError),
    /// The token lacks scopes (403 `insufficient_scope`); `required` is what
    /// to ask for.
    #[error("the token lacks the scopes: {}", missing.join(" "))]
    Scope {
        /// What it lacks.
        missing: Vec<String>,
        /// Every scope the request needs.
        required: Vec<String>,
    },
    /// The token could not be checked (503).
    #[error("the token could not be checked")]
    Unavailable(#[from] KeySourceError),
}

/// The reasons a request is refused, as counted: no token, a malformed
/// request, a token not accepted, missing scopes, a token not checkable.
pub const REFUSAL_REASONS: [&str; 5] = [
    "no_token",
    "invalid_request",
    "invalid_token",
    "insufficient_scope",
    "unavailable",
];

impl Refusal {
    /// Its reason, one of [`REFUSAL_REASONS`].
    pub fn reason(&self) -> &'static str {
        REFUSAL_REASONS[self.reason_index()]
    }

    fn reason_index(&self) -> usize {
        match self {
            Refusal::NoToken => 0,
            Refusal::Request(e) if e.code() == "invalid_request" => 1,
            Refusal::Request(_) | Refusal::Token(_) => 2,
            Refusal::Scope { .. } => 3,
            Refusal::Unavailable(_) => 4,
        }
    }

    /// The HTTP status: 400, 401, 403 or 503.
    pub fn status(&self) -> u16 {
        match self {
            Refusal::Request(e) if e.code() == "invalid_request" => 400,
            Refusal::NoToken | Refusal::Request(_) | Refusal::Token(_) => 401,
            Refusal::Scope { .. } => 403,
            Refusal::Unavailable(_) => 503,
        }
    }
}

/// A resource server ready to check requests: built once per protected
/// resource of an HTTP server (the server's, or one route's).
pub struct ResourceServer {
    /// Requests refused, by [`Refusal::reason`]'s index in [`REFUSAL_REASONS`].
    refusals: [std::sync::atomic::AtomicU64; REFUSAL_REASONS.len()],
    /// `tools/call`s refused for the tool's own scopes.
    tool_scope_refusals: std::sync::atomic::AtomicU64,
    config: ResourceServerConfig,
    metadata_url: String,
    metadata_paths: Vec<String>,
    metadata: Vec<u8>,
    jwks: keys::Jwks,
    introspector: Option<introspect::Introspector>,
}

impl fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceServer")
            .field("issuer", &self.config.issuer)
            .field("resource", &self.config.resource)
            .finish_non_exhaustive()
    }
}

/// `url` parsed as an absolute http(s) URL.
fn http_url(what: &'static str, url: &str) -> Result<Url, ConfigError> {
    let bad = || ConfigError::Url {
        what,
        url: url.to_owned(),
    };
    let u = Url::parse(url).map_err(|_| bad())?;
    if !matches!(u.scheme(), "http" | "https") || u.host().is_none() {
        return Err(bad());
    }
    Ok(u)
}

/// `url` as an authorization server endpoint: `https`, or `http` on the
/// loopback (MCP "Communication Security").
fn as_url(what: &'static str, url: &str) -> Result<Url, ConfigError> {
    let u = http_url(what, url)?;
    crate::http::auth::check_endpoint(what, url).map_err(|_| ConfigError::Insecure {
        what,
        url: url.to_owned(),
    })?;
    Ok(u)
}

/// The Protected Resource Metadata URL of `resource` (RFC 9728 §3.1: the
/// well-known path inserted between its authority and its path, a trailing
/// `/` of the path dropped) and the path it has on this server.
pub fn metadata_location(resource: &Url) -> (String, String) {
    let path = resource.path().trim_end_matches('/');
    let well_known = format!("{WELL_KNOWN}{path}");
    let url = format!("{}{well_known}", resource.origin().ascii_serialization());
    (url, well_known)
}

/// The paths the metadata is served at for an endpoint at `endpoint_path`
/// and a resource whose own metadata path is `resource_path`: the endpoint's
/// path inserted, the resource's, and the root one for the default `/mcp`
/// endpoint (MCP clients try it after the path-inserted one).
pub fn metadata_paths(endpoint_path: &str, resource_path: &str) -> Vec<String> {
    endpoints_metadata_paths(&[endpoint_path], resource_path)
}

/// [`metadata_paths`] for a resource served at several endpoints (each one's
/// path inserted, in order; then the resource's; then the root when one of
/// them is `/mcp`), or at none of its own (the resource's path only).
/// Without duplicates.
pub fn endpoints_metadata_paths(endpoint_paths: &[&str], resource_path: &str) -> Vec<String> {
    let mut wanted: Vec<String> = endpoint_paths
        .iter()
        .map(|e| format!("{WELL_KNOWN}{}", e.trim_end_matches('/')))
        .collect();
    wanted.push(resource_path.to_owned());
    if endpoint_paths.contains(&super::server::DEFAULT_PATH) {
        wanted.push(WELL_KNOWN.to_owned());
    }
    let mut paths: Vec<String> = Vec::with_capacity(wanted.len());
    for p in wanted {
        if !paths.contains(&p) {
            paths.push(p);
        }
    }
    paths
}

/// The Unix time now, in seconds (0 before 1970).
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl ResourceServer {
    /// Counts `refusal` (the one place a refusal becomes an answer calls it);
    /// `tool`: a `tools/call` refused for the tool's own scopes.
    pub(crate) fn count(&self, refusal: &Refusal, tool: bool) {
        use std::sync::atomic::Ordering::Relaxed;
        self.refusals[refusal.reason_index()].fetch_add(1, Relaxed);
        if tool {
            self.tool_scope_refusals.fetch_add(1, Relaxed);
        }
    }

    /// What it refused so far: by reason ([`REFUSAL_REASONS`]), and the
    /// `tools/call`s refused for the tool's own scopes.
    pub fn refused(&self) -> ([u64; REFUSAL_REASONS.len()], u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (
            std::array::from_fn(|i| self.refusals[i].load(Relaxed)),
            self.tool_scope_refusals.load(Relaxed),
        )
    }

    /// Checks `config` and builds the server for an MCP endpoint at
    /// `endpoint_path`. Nothing is fetched yet: the key set comes with the
    /// first token.
    pub fn new(config: ResourceServerConfig, endpoint_path: &str) -> Result<Self, ConfigError> {
        Self::for_endpoints(config, &[endpoint_path])
    }

    /// [`ResourceServer::new`] for a resource that protects the endpoints at
    /// `endpoint_paths` (none: its metadata is served at its resource's own
    /// well-known path only; see [`endpoints_metadata_paths`]).
    pub fn for_endpoints(
        config: ResourceServerConfig,
        endpoint_paths: &[&str],
    ) -> Result<Self, ConfigError> {
        let issuer = as_url("the issuer", &config.issuer)?;
        let resource = http_url("the resource", &config.resource)?;
        if resource.fragment().is_some() || config.resource.contains('#') {
            return Err(ConfigError::Fragment(config.resource.clone()));
        }
        let jwks_url = config
            .jwks_url
            .as_deref()
            .map(|u| as_url("the JWK set URL", u))
            .transpose()?;
        let algorithms: Vec<Algorithm> = config
            .algorithms
            .iter()
            .copied()
            .filter(|a| a.family() != jsonwebtoken::AlgorithmFamily::Hmac)
            .collect();
        if algorithms.is_empty() {
            return Err(ConfigError::NoAlgorithm);
        }
        let client = reqwest::Client::builder()
            .timeout(config.http_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(ConfigError::Client)?;
        let introspector = config
            .introspection
            .as_ref()
            .map(|i| {
                let endpoint = as_url("the introspection endpoint", &i.endpoint)?;
                Ok::<_, ConfigError>(introspect::Introspector::new(
                    client.clone(),
                    endpoint,
                    i,
                    config.introspection_cache,
                ))
            })
            .transpose()?;
        let (metadata_url, resource_path) = metadata_location(&resource);
        let mut document = serde_json::json!({
            "resource": config.resource,
            "authorization_servers": [config.issuer],
            "bearer_methods_supported": ["header"],
        });
        if !config.scopes.is_empty() {
            document["scopes_supported"] = serde_json::json!(config.scopes);
        }
        let jwks = keys::Jwks::new(client, issuer, jwks_url, config.refetch);
        let mut config = config;
        config.algorithms = algorithms;
        Ok(ResourceServer {
            refusals: Default::default(),
            tool_scope_refusals: Default::default(),
            metadata_paths: endpoints_metadata_paths(endpoint_paths, &resource_path),
            metadata_url,
            metadata: serde_json::to_vec(&document).unwrap_or_default(),
            jwks,
            introspector,
            config,
        })
    }

    /// The configuration in force (HMAC algorithms taken out).
    pub fn config(&self) -> &ResourceServerConfig {
        &self.config
    }

    /// The absolute URL of the Protected Resource Metadata, as challenges
    /// name it (`resource_metadata`).
    pub fn metadata_url(&self) -> &str {
        &self.metadata_url
    }

    /// The paths the metadata is served at (see [`metadata_paths`]).
    pub fn metadata_paths(&self) -> &[String] {
        &self.metadata_paths
    }

    /// The metadata document (RFC 9728 §2): `resource`, `authorization_servers`,
    /// `bearer_methods_supported` (`header`), `scopes_supported` when scopes
    /// are configured. JSON bytes.
    pub fn metadata_document(&self) -> &[u8] {
        &self.metadata
    }

    fn expectations(&self) -> jwt::Expectations<'_> {
        jwt::Expectations {
            issuer: &self.config.issuer,
            resource: &self.config.resource,
            algorithms: &self.config.algorithms,
            leeway: self.config.leeway.as_secs(),
        }
    }

    /// Checks a request's credentials: its `Authorization` header values and
    /// its URI's query (see [`bearer::bearer_token`]), then the token (a JWT
    /// against the issuer's keys, fetched again for an unknown `kid` within
    /// the [`RefetchPolicy`]; another token by introspection when configured),
    /// then the global scopes. Reads the clock.
    pub async fn authenticate(
        &self,
        authorization: &[&[u8]],
        query: Option<&str>,
    ) -> Result<Principal, Refusal> {
        let token = bearer::bearer_token(authorization, query)
            .map_err(Refusal::Request)?
            .ok_or(Refusal::NoToken)?;
        let principal = self.check_token(token).await?;
        self.check_scopes(&principal, &self.config.scopes)?;
        Ok(principal)
    }

    /// Checks one token (no scope check).
    pub async fn check_token(&self, token: &str) -> Result<Principal, Refusal> {
        let expect = self.expectations();
        if bearer::looks_like_jwt(token) {
            // A token that can never be valid is refused without the keys.
            jwt::precheck(token, &expect, unix_now())?;
            let kid = jwt::header_kid(token);
            let keys = self.jwks.keys(kid.as_deref(), Instant::now()).await?;
            return Ok(jwt::validate(token, &keys, &expect, unix_now())?);
        }
        let Some(introspector) = &self.introspector else {
            return Err(TokenError::Opaque.into());
        };
        Ok(introspector
            .check(token, &expect, Instant::now(), unix_now())
            .await??)
    }

    /// `Ok` when `principal` holds every scope of `required`, else the 403
    /// refusal naming them all.
    pub fn check_scopes(&self, principal: &Principal, required: &[String]) -> Result<(), Refusal> {
        let missing = principal.missing_scopes(required);
        if missing.is_empty() {
            return Ok(());
        }
        Err(Refusal::Scope {
            missing: missing.into_iter().map(str::to_owned).collect(),
            required: required.to_vec(),
        })
    }

    /// The scopes a `tools/call` of `tool` needs: the global ones, then the
    /// tool's own ([`ResourceServerConfig::tool_scopes`]); `None` when the
    /// tool has none of its own.
    pub fn tool_scopes(&self, tool: &str) -> Option<Vec<String>> {
        let own = self.config.tool_scopes.get(tool)?;
        let mut all = self.config.scopes.clone();
        for s in own {
            if !all.contains(s) {
                all.push(s.clone());
            }
        }
        Some(all)
    }

    /// The `WWW-Authenticate` value answering `refusal` (`None` for a 503):
    /// `Bearer` with `error` (none when no token was given), `scope` (the
    /// configured scopes on a 401, the required ones on a 403) and
    /// `resource_metadata`.
    pub fn challenge(&self, refusal: &Refusal) -> Option<String> {
        let (error, scope): (Option<&str>, &[String]) = match refusal {
            Refusal::NoToken => (None, &self.config.scopes),
            Refusal::Request(e) => (Some(e.code()), &self.config.scopes),
            Refusal::Token(_) => (Some("invalid_token"), &self.config.scopes),
            Refusal::Scope { required, .. } => (Some("insufficient_scope"), required),
            Refusal::Unavailable(_) => return None,
        };
        let description = match refusal {
            Refusal::NoToken | Refusal::Unavailable(_) => None,
            other => Some(other.to_string()),
        };
        Some(
            bearer::ChallengeParams {
                error,
                error_description: description.as_deref(),
                scope,
                resource_metadata: Some(&self.metadata_url),
            }
            .render(),
        )
    }
}

/// The resource server of an HTTP server, shared by its connections.
pub(crate) type Shared = Arc<ResourceServer>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_locations() {
        let cases = [
            (
                "https://mcp.example/mcp",
                "https://mcp.example/.well-known/oauth-protected-resource/mcp",
            ),
            (
                "https://mcp.example/mcp/",
                "https://mcp.example/.well-known/oauth-protected-resource/mcp",
            ),
            (
                "https://mcp.example",
                "https://mcp.example/.well-known/oauth-protected-resource",
            ),
            (
                "http://127.0.0.1:8080/a/b",
                "http://127.0.0.1:8080/.well-known/oauth-protected-resource/a/b",
            ),
        ];
        for (resource, want) in cases {
            let (url, path) = metadata_location(&Url::parse(resource).unwrap());
            assert_eq!(url, want);
            assert!(want.ends_with(&path));
        }
        assert_eq!(
            metadata_paths("/mcp", "/.well-known/oauth-protected-resource/mcp"),
            vec![
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            endpoints_metadata_paths(&[], "/.well-known/oauth-protected-resource/mcp"),
            vec!["/.well-known/oauth-protected-resource/mcp"]
        );
        assert_eq!(
            endpoints_metadata_paths(
                &["/a/mcp", "/mcp"],
                "/.well-known/oauth-protected-resource/a/mcp"
            ),
            vec![
                "/.well-known/oauth-protected-resource/a/mcp",
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            metadata_paths("/api", "/.well-known/oauth-protected-resource/x/api"),
            vec![
                "/.well-known/oauth-protected-resource/api",
                "/.well-known/oauth-protected-resource/x/api"
            ]
        );
    }

    #[test]
    fn config_checks() {
        let ok = ResourceServerConfig::new("https://as.example", "https://mcp.example/mcp");
        assert!(ResourceServer::new(ok.clone(), "/mcp").is_ok());
        let cases: Vec<(ResourceServerConfig, &str)> = vec![
            (
                ResourceServerConfig::new("http://as.example", "https://mcp.example/mcp"),
                "https",
            ),
            (
                ResourceServerConfig::new("as.example", "https://mcp.example/mcp"),
                "absolute",
            ),
            (
                ResourceServerConfig::new("https://as.example", "https://mcp.example/mcp#x"),
                "fragment",
            ),
            (
                ResourceServerConfig::new("https://as.example", "urn:x"),
                "absolute",
            ),
            (
                ResourceServerConfig {
                    algorithms: vec![Algorithm::HS256],
                    ..ok.clone()
                },
                "HMAC",
            ),
        ];
        for (config, want) in cases {
            let e = ResourceServer::new(config, "/mcp").unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
        let loopback = ResourceServerConfig::new("http://127.0.0.1:9/", "http://127.0.0.1:8/mcp");
        assert!(ResourceServer::new(loopback, "/mcp").is_ok());
    }

    #[test]
    fn challenges() {
        let mut config = ResourceServerConfig::new("https://as.example", "https://mcp.example/mcp");
        config.scopes = vec!["mcp".into()];
        let rs = ResourceServer::new(config, "/mcp").unwrap();
        let meta =
            "resource_metadata=\"https://mcp.example/.well-known/oauth-protected-resource/mcp\"";
        let cases = [
            (Refusal::NoToken, 401, format!("Bearer scope=\"mcp\", {meta}")),
            (
                Refusal::Token(TokenError::Expired),
                401,
                format!("Bearer error=\"invalid_token\", error_description=\"the token has expired\", scope=\"mcp\", {meta}"),
            ),
            (
                Refusal::Request(BearerError::InQuery),
                400,
                format!("Bearer error=\"invalid_request\", error_description=\"access tokens are not accepted in the query string\", scope=\"mcp\", {meta}"),
            ),
            (
                Refusal::Scope { missing: vec!["b".into()], required: vec!["mcp".into(), "b".into()] },
                403,
                format!("Bearer error=\"insufficient_scope\", error_description=\"the token lacks the scopes: b\", scope=\"mcp b\", {meta}"),
            ),
        ];
        for (refusal, status, want) in cases {
            assert_eq!(refusal.status(), status);
            assert_eq!(rs.challenge(&refusal).unwrap(), want);
        }
        let doc: serde_json::Value = serde_json::from_slice(rs.metadata_document()).unwrap();
        assert_eq!(
            doc,
            serde_json::json!({
                "resource": "https://mcp.example/mcp",
                "authorization_servers": ["https://as.example"],
                "bearer_methods_supported": ["header"],
                "scopes_supported": ["mcp"],
            })
        );
    }
}
