//! The OAuth 2.1 **client** of MCP authorization: what the HTTP client
//! transport does when a server answers 401 or 403 `insufficient_scope`.
//!
//! Sources: MCP 2025-03-26 to 2026-07-28, "Basic → Authorization"; RFC 9728
//! (Protected Resource Metadata), RFC 8414 and OpenID Connect Discovery
//! (authorization server metadata), RFC 7591 (Dynamic Client Registration),
//! draft-ietf-oauth-client-id-metadata-document (Client ID Metadata Documents),
//! OAuth 2.1 draft 13 (authorization code with PKCE, refresh, client
//! credentials), RFC 8707 (`resource`), RFC 9207 (`iss`).
//!
//! ```text
//! 401 ──> refresh token? ── yes: refresh_token grant ── ok ──> retry
//!           │ no / refused
//!           v
//!         discovery: PRM (challenge's resource_metadata, path-inserted, root)
//!           ├─ found: resource checked against the server URL; its first
//!           │         authorization server's metadata (RFC 8414 / OIDC, path
//!           │         variants), issuer checked; S256 required
//!           └─ none:  2025-03-26: metadata at the server's origin, else the
//!                     default /authorize, /token, /register
//!         client: pre-registered for this issuer, else CIMD (when supported
//!                 and configured), else DCR, else refused
//!         grant:  authorization code + PKCE S256 + resource (state and iss
//!                 checked on the redirect), or client credentials
//!         ──> tokens ──> retry with Authorization: Bearer
//! 403 insufficient_scope ──> the same with the union of scopes (step-up)
//! ```
//!
//! At most [`OAuthConfig::max_authorizations`] authorizations per request
//! (scope step-ups that never satisfy the server end there). One flow at a time:
//! requests that meet a challenge while another request's flow runs wait for it
//! and retry with its token. Registered clients are kept per issuer, so a server
//! that moves to another authorization server never sees the old one's
//! credentials. Tokens live in memory, and in the application's [`TokenStore`]
//! when one is configured ([`OAuthConfig::store`]: each new authorization is
//! saved there; [`OAuthClient::resume`] takes an earlier one back, refreshing it
//! first when it runs out within [`REFRESH_MARGIN`]); no log line holds a token,
//! code, verifier or secret.
//!
//! The "browser" is an [`AuthorizationAgent`]: it takes the authorization URL and
//! returns the redirect the authorization server sent back.
//! [`FollowRedirects`] is the headless one (an authorization server that
//! redirects at once, as in tests and for pre-approved clients).

mod challenge;
mod discovery;
mod policy;
mod store;

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use http::header::{HeaderMap, HeaderValue, AUTHORIZATION, LOCATION};
use http::StatusCode;
use reqwest::Url;
use serde::Deserialize;
use serde_json::json;

pub use challenge::{
    is_challenge, parse as parse_www_authenticate, split_scopes, BearerChallenge, Challenge,
};
pub use discovery::{
    authorization_server_metadata_urls, protected_resource_metadata_urls,
    AuthorizationServerMetadata, ProtectedResourceMetadata,
};
pub use policy::{
    check_endpoint, check_iss, check_resource, code_challenge, select_scopes, token_auth, TokenAuth,
};
pub use store::{
    freshness, unix_seconds, Freshness, StoreError, StoredAuthorization, TokenStore, REFRESH_MARGIN,
};

use crate::error_chain;

/// Why the OAuth client could not get a token. The text never holds a token,
/// code or secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthError {
    /// No Protected Resource Metadata nor (2025-03-26) authorization server
    /// metadata or default endpoints could be used.
    Discovery(String),
    /// The Protected Resource Metadata is about another resource (RFC 9728 §3.3).
    ResourceMismatch {
        /// Its `resource`.
        resource: String,
        /// The MCP server's URL.
        server: String,
    },
    /// Authorization server metadata whose `issuer` is not the one its URL was
    /// made from (RFC 8414 §3.3).
    IssuerMismatch {
        /// The issuer the well-known URL was made from.
        expected: String,
        /// The document's `issuer`.
        got: String,
    },
    /// The authorization server does not advertise PKCE `S256`.
    PkceUnsupported {
        /// Its issuer.
        issuer: String,
    },
    /// No way to be a client of this authorization server: no pre-registered
    /// credentials for it, no Client ID Metadata Document it accepts, no
    /// registration endpoint.
    NoClient {
        /// Its issuer.
        issuer: String,
    },
    /// Dynamic Client Registration failed.
    Registration(String),
    /// The authorization step failed: the agent gave up, the server answered with
    /// an `error`, the redirect lacked a code or its `state` did not match.
    Authorization(String),
    /// RFC 9207: the redirect's `iss` is not the authorization server's issuer.
    IssMismatch {
        /// The recorded issuer.
        expected: String,
        /// The `iss` received.
        got: String,
    },
    /// RFC 9207: the server advertised `iss` but the redirect had none.
    IssMissing {
        /// The recorded issuer.
        issuer: String,
    },
    /// The token endpoint refused or answered something unusable.
    Token {
        /// What happened (the OAuth `error` and `error_description` when given).
        message: String,
        /// The endpoint answered `invalid_client` (RFC 6749 §5.2): the client
        /// it was given is unknown there or failed to authenticate.
        invalid_client: bool,
    },
    /// An authorization server endpoint that is not `https` (loopback
    /// excepted): the client does not send credentials or codes there.
    Insecure {
        /// Which endpoint (`token_endpoint`, ...).
        what: String,
        /// Its URL.
        url: String,
    },
    /// The configured grant needs something not configured (client credentials
    /// without credentials, the code grant without an agent).
    Config(String),
    /// An HTTP exchange of the flow failed.
    Http(String),
    /// The [`TokenStore`] could not be read.
    Store(String),
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthError::Discovery(m) => write!(f, "authorization discovery failed: {m}"),
            AuthError::ResourceMismatch { resource, server } => write!(
                f,
                "the protected resource metadata names resource {resource:?}, not this server ({server})"
            ),
            AuthError::IssuerMismatch { expected, got } => write!(
                f,
                "the authorization server metadata of {expected:?} names issuer {got:?}; refused"
            ),
            AuthError::PkceUnsupported { issuer } => write!(
                f,
                "the authorization server {issuer} does not advertise PKCE S256 (code_challenge_methods_supported); refused"
            ),
            AuthError::NoClient { issuer } => write!(
                f,
                "no client for the authorization server {issuer}: no pre-registered credentials for it, no client metadata document it accepts, no registration endpoint"
            ),
            AuthError::Registration(m) => write!(f, "dynamic client registration failed: {m}"),
            AuthError::Authorization(m) => write!(f, "authorization failed: {m}"),
            AuthError::IssMismatch { expected, got } => write!(
                f,
                "the authorization response's iss {got:?} is not the authorization server's issuer {expected:?} (RFC 9207); refused"
            ),
            AuthError::IssMissing { issuer } => write!(
                f,
                "the authorization server {issuer} advertises the iss parameter but its response has none (RFC 9207); refused"
            ),
            AuthError::Token { message, .. } => write!(f, "the token request failed: {message}"),
            AuthError::Insecure { what, url } => write!(
                f,
                "the authorization server's {what} {url} is not https (only loopback may use http); refused"
            ),
            AuthError::Config(m) => write!(f, "OAuth is not configured for this: {m}"),
            AuthError::Http(m) => write!(f, "{m}"),
            AuthError::Store(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for AuthError {}

/// Credentials an authorization server issued to this client beforehand.
#[derive(Clone, PartialEq, Eq)]
pub struct PreRegistered {
    /// The issuer they are for; `None`: any (they are offered to every
    /// authorization server, so give one when more than one may be met).
    pub issuer: Option<String>,
    /// `client_id`.
    pub client_id: String,
    /// `client_secret`, for a confidential client.
    pub client_secret: Option<String>,
}

impl fmt::Debug for PreRegistered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreRegistered")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .finish()
    }
}

/// Which OAuth grant gets the tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// Authorization code with PKCE, through the [`AuthorizationAgent`] (a
    /// person, or a server that approves at once).
    AuthorizationCode,
    /// Client credentials (a machine; needs [`PreRegistered`] credentials with a
    /// secret).
    ClientCredentials,
}

/// One authorization request for the agent: send the user to `url`; the
/// authorization server ends by redirecting to `redirect_uri` with the result.
#[derive(Debug, Clone)]
pub struct AuthorizationRequest {
    /// The authorization endpoint with the request's query.
    pub url: String,
    /// The redirect URI registered for this client.
    pub redirect_uri: String,
}

/// The future an [`AuthorizationAgent`] returns: the full redirect URL
/// (`redirect_uri?code=…&state=…[&iss=…]`), or why it failed.
pub type AgentFuture<'a> = Pin<Box<dyn Future<Output = Result<String, String>> + Send + 'a>>;

/// The user agent of the authorization code grant (a browser and a loopback
/// listener, or [`FollowRedirects`]).
pub trait AuthorizationAgent: Send + Sync {
    /// Takes the user through `request` and returns the redirect URL the
    /// authorization server sent back to `request.redirect_uri`.
    fn authorize<'a>(&'a self, request: &'a AuthorizationRequest) -> AgentFuture<'a>;
}

/// A headless agent: GETs the authorization URL and follows redirects (at most
/// 10) until one goes to the redirect URI, which it returns without fetching. For
/// authorization servers that approve without a person (tests, pre-approved
/// clients); a page that asks for a login fails it.
#[derive(Debug, Clone)]
pub struct FollowRedirects {
    http: reqwest::Client,
}

impl FollowRedirects {
    /// A headless agent with its own HTTP client (no automatic redirects; each
    /// request bounded by `timeout`).
    pub fn new(timeout: Duration) -> Result<Self, AuthError> {
        Ok(FollowRedirects {
            http: oauth_http_client(timeout)?,
        })
    }
}

impl AuthorizationAgent for FollowRedirects {
    fn authorize<'a>(&'a self, request: &'a AuthorizationRequest) -> AgentFuture<'a> {
        Box::pin(async move {
            let mut url = Url::parse(&request.url).map_err(|e| e.to_string())?;
            for _ in 0..10 {
                if is_redirect_target(&url, &request.redirect_uri) {
                    return Ok(url.to_string());
                }
                let resp = self.http.get(url.clone()).send().await.map_err(|e| {
                    format!(
                        "GET of the authorization endpoint failed: {}",
                        error_chain(&e)
                    )
                })?;
                let status = resp.status();
                let location = resp
                    .headers()
                    .get(LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                match location {
                    Some(l) if status.is_redirection() => {
                        // The Location is not quoted: it may hold a code.
                        url = url
                            .join(&l)
                            .map_err(|e| format!("a redirect that is not a URL: {e}"))?;
                    }
                    _ => {
                        return Err(format!(
                            "the authorization endpoint answered HTTP {status} instead of redirecting (a person must log in: use a browser)"
                        ))
                    }
                }
            }
            if is_redirect_target(&url, &request.redirect_uri) {
                return Ok(url.to_string());
            }
            Err("more than 10 redirects from the authorization endpoint".to_owned())
        })
    }
}

/// Whether `url` is the redirect URI (same scheme, authority and path; its query
/// is the response).
fn is_redirect_target(url: &Url, redirect_uri: &str) -> bool {
    Url::parse(redirect_uri).is_ok_and(|r| {
        r.scheme() == url.scheme()
            && r.host_str() == url.host_str()
            && r.port_or_known_default() == url.port_or_known_default()
            && r.path() == url.path()
    })
}

/// How the OAuth client behaves. Every field documents its default.
#[derive(Clone)]
pub struct OAuthConfig {
    /// `client_name` in a Dynamic Client Registration. Default `"switchboard"`.
    pub client_name: String,
    /// The redirect URI of the authorization code grant. Default
    /// `http://127.0.0.1:8765/callback` (a loopback URI: RFC 8252 §7.3).
    pub redirect_uri: String,
    /// Credentials issued beforehand, tried first (for their issuer, or any when
    /// it is `None`). Default none.
    pub pre_registered: Vec<PreRegistered>,
    /// The URL of this client's Client ID Metadata Document, used as `client_id`
    /// where the authorization server advertises
    /// `client_id_metadata_document_supported` (an `https` URL with a path).
    /// Default none (Dynamic Client Registration then).
    pub client_metadata_url: Option<String>,
    /// The grant. Default [`Grant::AuthorizationCode`].
    pub grant: Grant,
    /// The user agent of the code grant; required for it. Default none.
    pub agent: Option<Arc<dyn AuthorizationAgent>>,
    /// Ask for `offline_access` (a refresh token) where the authorization server
    /// lists it. Default `true`.
    pub want_refresh: bool,
    /// The most authorizations one request may cause (its 401, then each 403
    /// `insufficient_scope` step-up); beyond, the request fails with the
    /// server's answer. Default 3.
    pub max_authorizations: u32,
    /// The bound on each HTTP request of the flow (metadata, registration,
    /// token). Default 30 s.
    pub request_timeout: Duration,
    /// Where each new authorization (tokens and the client) is saved, and
    /// where [`OAuthClient::resume`] finds an earlier one. Default none (the
    /// tokens live as long as the client).
    pub store: Option<Arc<dyn TokenStore>>,
}

impl fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_name", &self.client_name)
            .field("redirect_uri", &self.redirect_uri)
            .field("pre_registered", &self.pre_registered)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("grant", &self.grant)
            .field("agent", &self.agent.as_ref().map(|_| "…"))
            .field("want_refresh", &self.want_refresh)
            .field("max_authorizations", &self.max_authorizations)
            .field("request_timeout", &self.request_timeout)
            .field("store", &self.store.as_ref().map(|_| "…"))
            .finish()
    }
}

impl Default for OAuthConfig {
    fn default() -> Self {
        OAuthConfig {
            client_name: "switchboard".to_owned(),
            redirect_uri: "http://127.0.0.1:8765/callback".to_owned(),
            pre_registered: Vec::new(),
            client_metadata_url: None,
            grant: Grant::AuthorizationCode,
            agent: None,
            want_refresh: true,
            max_authorizations: 3,
            request_timeout: Duration::from_secs(30),
            store: None,
        }
    }
}

/// A client of one authorization server.
#[derive(Clone)]
struct ClientCredentials {
    client_id: String,
    client_secret: Option<String>,
    /// The method its registration named, if any.
    auth_method: Option<String>,
    /// The redirect URI it was registered with (Dynamic Client Registration).
    redirect_uri: Option<String>,
}

/// The tokens in force.
#[derive(Clone)]
struct Tokens {
    access: String,
    refresh: Option<String>,
    /// When the access token runs out, if the server said (`expires_in`).
    expires_at: Option<Instant>,
    /// The same in seconds since the Unix epoch, for a [`TokenStore`].
    expires_unix: Option<u64>,
}

/// What discovery found for the server, kept for refreshes and step-ups.
#[derive(Clone)]
struct Found {
    /// The MCP endpoint URL discovery started from.
    server: String,
    /// The `resource` parameter: the PRM's `resource` exactly, or (no PRM) the
    /// server's URL.
    resource: String,
    resource_scopes: Option<Vec<String>>,
    metadata: AuthorizationServerMetadata,
}

/// The OAuth client's state: none yet, or authorized.
enum TokenState {
    /// No token: requests go out without `Authorization`.
    None,
    /// Authorized: the tokens, what they were asked for, and by which
    /// authorization server (its issuer).
    Authorized {
        tokens: Tokens,
        scopes: Vec<String>,
        issuer: String,
    },
}

struct State {
    /// Bumped each time the tokens change.
    generation: u64,
    tokens: TokenState,
    /// Registered clients, by issuer (never offered to another issuer).
    clients: HashMap<String, ClientCredentials>,
}

/// The OAuth client of one MCP server URL (or several transports of it: clones
/// of an `Arc` share tokens). Put it in
/// [`HttpClientConfig::auth`](super::client::HttpClientConfig::auth).
pub struct OAuthClient {
    config: OAuthConfig,
    http: reqwest::Client,
    state: Mutex<State>,
    /// Held while a flow runs (one at a time).
    flow: tokio::sync::Mutex<()>,
}

impl fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthClient")
            .field("config", &self.config)
            .field("generation", &self.generation())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The HTTP client of the flow's requests: no automatic redirects (a metadata
/// or token endpoint that redirects is not followed), bounded.
fn oauth_http_client(timeout: Duration) -> Result<reqwest::Client, AuthError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .timeout(timeout)
        .build()
        .map_err(|e| AuthError::Http(format!("cannot build the OAuth HTTP client: {e}")))
}

/// A successful token endpoint answer (OAuth 2.1 §3.2.3).
#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    refresh_token: Option<String>,
}

/// An RFC 7591 registration answer.
#[derive(Deserialize)]
struct RegistrationResponse {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
}

impl OAuthClient {
    /// An OAuth client with `config`, no tokens yet.
    ///
    /// Errors: [`AuthError::Config`] for the code grant without an agent,
    /// client credentials without a pre-registered secret, or a client metadata
    /// URL that is not `https` with a path; [`AuthError::Http`] when the HTTP
    /// client cannot be built.
    pub fn new(config: OAuthConfig) -> Result<Arc<Self>, AuthError> {
        match config.grant {
            Grant::AuthorizationCode if config.agent.is_none() => {
                return Err(AuthError::Config(
                    "the authorization code grant needs an AuthorizationAgent".into(),
                ))
            }
            Grant::ClientCredentials
                if !config
                    .pre_registered
                    .iter()
                    .any(|c| c.client_secret.is_some()) =>
            {
                return Err(AuthError::Config(
                    "the client credentials grant needs pre-registered credentials with a secret"
                        .into(),
                ))
            }
            _ => {}
        }
        if let Some(u) = &config.client_metadata_url {
            let ok = Url::parse(u).is_ok_and(|u| u.scheme() == "https" && u.path() != "/");
            if !ok {
                return Err(AuthError::Config(format!(
                    "a client metadata document URL must be https with a path: {u:?}"
                )));
            }
        }
        Ok(Arc::new(OAuthClient {
            http: oauth_http_client(config.request_timeout)?,
            config,
            state: Mutex::new(State {
                generation: 0,
                tokens: TokenState::None,
                clients: HashMap::new(),
            }),
            flow: tokio::sync::Mutex::new(()),
        }))
    }

    /// The configuration.
    pub fn config(&self) -> &OAuthConfig {
        &self.config
    }

    /// How many times the tokens have changed (0: none yet).
    pub fn generation(&self) -> u64 {
        lock(&self.state).generation
    }

    /// Whether an access token is held.
    pub fn is_authorized(&self) -> bool {
        matches!(lock(&self.state).tokens, TokenState::Authorized { .. })
    }

    /// `Authorization: Bearer <token>` for the next request, when authorized.
    pub fn authorization(&self) -> Option<HeaderValue> {
        match &lock(&self.state).tokens {
            TokenState::Authorized { tokens, .. } => {
                let mut v = HeaderValue::from_str(&format!("Bearer {}", tokens.access)).ok()?;
                v.set_sensitive(true);
                Some(v)
            }
            TokenState::None => None,
        }
    }

    /// Answers a challenge (a response for which [`is_challenge`] holds) that
    /// `server` (the MCP endpoint URL) gave to a request sent with the tokens of
    /// `sent_generation`: when the tokens changed since, returns at once (retry
    /// with the new ones); otherwise discovers again, then refreshes (a 401, a
    /// refresh token, and the same authorization server as before) or runs the
    /// whole flow, with the challenge's scopes joined to those asked for before.
    /// `Ok`: retry the request.
    pub async fn answer(
        &self,
        server: &str,
        status: StatusCode,
        headers: &HeaderMap,
        sent_generation: u64,
    ) -> Result<(), AuthError> {
        let _flow = self.flow.lock().await;
        if self.generation() != sent_generation {
            return Ok(());
        }
        let challenge = BearerChallenge::from_headers(headers);
        let server = Url::parse(server)
            .map_err(|e| AuthError::Discovery(format!("bad server URL {server:?}: {e}")))?;
        let (previous, refresh) = match &lock(&self.state).tokens {
            TokenState::Authorized {
                tokens,
                scopes,
                issuer,
            } => (
                scopes.clone(),
                tokens.refresh.clone().map(|r| (r, issuer.clone())),
            ),
            TokenState::None => (Vec::new(), None),
        };
        // Discovery first, even for a refresh: a resource that moved to another
        // authorization server (SEP-2352) must not get the old one's tokens.
        let found = self.discover(&server, &challenge).await?;
        if status == StatusCode::UNAUTHORIZED {
            if let Some((refresh, before)) = refresh {
                if before == found.metadata.issuer {
                    match self.refresh(&refresh, &found, &previous).await {
                        Ok(()) => return Ok(()),
                        Err(e) => {
                            tracing::info!(error = %e, "the refresh was refused; authorizing again")
                        }
                    }
                } else {
                    tracing::info!(from = %before, to = %found.metadata.issuer, "the resource moved to another authorization server");
                }
            }
        }
        let challenge_scopes = challenge.scopes();
        if status == StatusCode::FORBIDDEN {
            tracing::info!(scope = ?challenge.scope, "the server asks for more scope (step-up)");
        }
        self.authorize(&found, &challenge_scopes, &previous).await
    }

    /// Discovery: the Protected Resource Metadata (challenge's URL, path-inserted,
    /// root), then its authorization server's metadata; without PRM, the
    /// 2025-03-26 rules (metadata at the server's origin, else default endpoints).
    async fn discover(
        &self,
        server: &Url,
        challenge: &BearerChallenge,
    ) -> Result<Found, AuthError> {
        let mut prm = None;
        for url in protected_resource_metadata_urls(server, challenge.resource_metadata.as_deref())
        {
            match self.get_json::<ProtectedResourceMetadata>(&url).await {
                Ok(Some(m)) => {
                    tracing::debug!(%url, "protected resource metadata found");
                    prm = Some(m);
                    break;
                }
                Ok(None) => {}
                Err(e) => tracing::debug!(%url, error = %e, "no protected resource metadata there"),
            }
        }
        let Some(prm) = prm else {
            // 2025-03-26: the authorization base URL is the server's origin.
            tracing::info!("no protected resource metadata; using the 2025-03-26 discovery");
            let mut base = server.clone();
            base.set_path("/");
            // The URL is made from the server's, not from an issuer the client
            // was given, so the document's `issuer` is taken as it is.
            let metadata = match self
                .server_metadata(&discovery::origin(server), false)
                .await?
            {
                Some(m) => m,
                None => AuthorizationServerMetadata::defaults_2025_03_26(&base),
            };
            let mut resource = server.clone();
            resource.set_fragment(None);
            return Ok(Found {
                server: server.to_string(),
                resource: resource.to_string(),
                resource_scopes: None,
                metadata,
            });
        };
        check_resource(&prm.resource, server)?;
        let issuer = prm.authorization_servers.first().cloned().ok_or_else(|| {
            AuthError::Discovery(
                "the protected resource metadata names no authorization server".into(),
            )
        })?;
        let metadata = self.server_metadata(&issuer, true).await?.ok_or_else(|| {
            AuthError::Discovery(format!("no authorization server metadata for {issuer}"))
        })?;
        Ok(Found {
            server: server.to_string(),
            resource: prm.resource,
            resource_scopes: prm.scopes_supported,
            metadata,
        })
    }

    /// The metadata of the authorization server `issuer` from the first of its
    /// well-known URLs that has one; `None` when none has. With `check_issuer`, a
    /// document whose `issuer` differs is refused ([`AuthError::IssuerMismatch`],
    /// after trying the other URLs); without (2025-03-26: `issuer` is only the
    /// MCP server's origin), any is taken.
    async fn server_metadata(
        &self,
        issuer: &str,
        check_issuer: bool,
    ) -> Result<Option<AuthorizationServerMetadata>, AuthError> {
        let issuer_url = Url::parse(issuer)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| AuthError::Discovery(format!("bad issuer {issuer:?}")))?;
        let mut mismatch = None;
        for url in authorization_server_metadata_urls(&issuer_url) {
            match self.get_json::<AuthorizationServerMetadata>(&url).await {
                Ok(Some(m)) if m.issuer == issuer || !check_issuer => {
                    tracing::debug!(%url, "authorization server metadata found");
                    return Ok(Some(m));
                }
                Ok(Some(m)) => {
                    tracing::warn!(%url, issuer = %m.issuer, expected = %issuer, "authorization server metadata with another issuer; refused");
                    mismatch = Some(AuthError::IssuerMismatch {
                        expected: issuer.to_owned(),
                        got: m.issuer,
                    });
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::debug!(%url, error = %e, "no authorization server metadata there")
                }
            }
        }
        match mismatch {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }

    /// GETs a JSON document: `Ok(None)` for a 4xx (not there), the document for
    /// a 2xx, an error otherwise.
    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        url: &Url,
    ) -> Result<Option<T>, AuthError> {
        let resp = self
            .http
            .get(url.clone())
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| AuthError::Http(format!("GET {url} failed: {}", error_chain(&e))))?;
        let status = resp.status();
        if status.is_client_error() {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(AuthError::Http(format!("GET {url}: HTTP {status}")));
        }
        let body = resp
            .bytes()
            .await
            .map_err(|e| AuthError::Http(format!("GET {url}: {}", error_chain(&e))))?;
        serde_json::from_slice(&body)
            .map(Some)
            .map_err(|e| AuthError::Http(format!("GET {url}: not the expected JSON: {e}")))
    }

    /// The client for `metadata`'s issuer: kept from before, else pre-registered,
    /// else CIMD, else DCR (MCP 2025-11-25, "Client Registration Approaches").
    /// With `redirect` (the code grant), a kept client registered with another
    /// redirect URI (an earlier run's loopback port) is registered anew.
    async fn client_for(
        &self,
        metadata: &AuthorizationServerMetadata,
        redirect: bool,
    ) -> Result<ClientCredentials, AuthError> {
        let issuer = &metadata.issuer;
        if let Some(c) = lock(&self.state).clients.get(issuer) {
            let stale = redirect
                && c.redirect_uri
                    .as_ref()
                    .is_some_and(|r| *r != self.config.redirect_uri);
            if !stale {
                return Ok(c.clone());
            }
            tracing::info!(%issuer, "the kept client was registered with another redirect URI; registering again");
        }
        let pre = self
            .config
            .pre_registered
            .iter()
            .find(|p| p.issuer.as_deref() == Some(issuer.as_str()))
            .or_else(|| {
                self.config
                    .pre_registered
                    .iter()
                    .find(|p| p.issuer.is_none())
            });
        let client = if let Some(p) = pre {
            tracing::info!(%issuer, client_id = %p.client_id, "using pre-registered client credentials");
            ClientCredentials {
                client_id: p.client_id.clone(),
                client_secret: p.client_secret.clone(),
                auth_method: None,
                redirect_uri: None,
            }
        } else if let (Some(url), Some(true)) = (
            &self.config.client_metadata_url,
            metadata.client_id_metadata_document_supported,
        ) {
            tracing::info!(%issuer, client_id = %url, "using the client metadata document as client_id");
            ClientCredentials {
                client_id: url.clone(),
                client_secret: None,
                auth_method: Some("none".into()),
                redirect_uri: None,
            }
        } else if let Some(endpoint) = &metadata.registration_endpoint {
            self.register(endpoint, metadata).await?
        } else {
            return Err(AuthError::NoClient {
                issuer: issuer.clone(),
            });
        };
        lock(&self.state)
            .clients
            .insert(issuer.clone(), client.clone());
        Ok(client)
    }

    /// RFC 7591 Dynamic Client Registration as a native client.
    async fn register(
        &self,
        endpoint: &str,
        metadata: &AuthorizationServerMetadata,
    ) -> Result<ClientCredentials, AuthError> {
        let method =
            policy::registration_auth(metadata.token_endpoint_auth_methods_supported.as_deref());
        let mut grant_types = vec!["authorization_code", "refresh_token"];
        if self.config.grant == Grant::ClientCredentials {
            grant_types = vec!["client_credentials"];
        }
        let body = json!({
            "client_name": self.config.client_name,
            "redirect_uris": [self.config.redirect_uri],
            "grant_types": grant_types,
            "response_types": ["code"],
            "token_endpoint_auth_method": method.as_str(),
            "application_type": "native",
        });
        let resp = self
            .http
            .post(endpoint)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| {
                AuthError::Registration(format!("POST {endpoint}: {}", error_chain(&e)))
            })?;
        let status = resp.status();
        let bytes = resp.bytes().await.unwrap_or_default();
        if !status.is_success() {
            return Err(AuthError::Registration(format!(
                "HTTP {status}: {}",
                oauth_error_text(&bytes)
            )));
        }
        let r: RegistrationResponse = serde_json::from_slice(&bytes)
            .map_err(|e| AuthError::Registration(format!("not a registration response: {e}")))?;
        tracing::info!(issuer = %metadata.issuer, client_id = %r.client_id, "registered (RFC 7591)");
        Ok(ClientCredentials {
            client_id: r.client_id,
            client_secret: r.client_secret,
            auth_method: r.token_endpoint_auth_method,
            redirect_uri: Some(self.config.redirect_uri.clone()),
        })
    }

    /// Runs the configured grant and keeps the tokens.
    async fn authorize(
        &self,
        found: &Found,
        challenge: &[String],
        previous: &[String],
    ) -> Result<(), AuthError> {
        let metadata = &found.metadata;
        let scopes = select_scopes(
            challenge,
            found.resource_scopes.as_deref(),
            metadata.scopes_supported.as_deref(),
            previous,
            self.config.want_refresh && self.config.grant == Grant::AuthorizationCode,
        );
        if self.config.grant == Grant::AuthorizationCode && !metadata.supports_s256() {
            return Err(AuthError::PkceUnsupported {
                issuer: metadata.issuer.clone(),
            });
        }
        policy::check_endpoint("token_endpoint", &metadata.token_endpoint)?;
        if let Some(e) = &metadata.registration_endpoint {
            policy::check_endpoint("registration_endpoint", e)?;
        }
        if let (Grant::AuthorizationCode, Some(e)) =
            (self.config.grant, &metadata.authorization_endpoint)
        {
            policy::check_endpoint("authorization_endpoint", e)?;
        }
        let client = self
            .client_for(metadata, self.config.grant == Grant::AuthorizationCode)
            .await?;
        let mut form: Vec<(&str, String)> = Vec::new();
        match self.config.grant {
            Grant::ClientCredentials => {
                form.push(("grant_type", "client_credentials".into()));
            }
            Grant::AuthorizationCode => {
                let (code, verifier) = self.code(found, &client, &scopes).await?;
                form.push(("grant_type", "authorization_code".into()));
                form.push(("code", code));
                form.push(("redirect_uri", self.config.redirect_uri.clone()));
                form.push(("code_verifier", verifier));
            }
        }
        if !scopes.is_empty() && self.config.grant == Grant::ClientCredentials {
            form.push(("scope", scopes.join(" ")));
        }
        form.push(("resource", found.resource.clone()));
        let tokens = match self.token_request(metadata, &client, form).await {
            Ok(t) => t,
            Err(e) => {
                if matches!(
                    &e,
                    AuthError::Token {
                        invalid_client: true,
                        ..
                    }
                ) {
                    self.forget_registered(&metadata.issuer);
                }
                return Err(e);
            }
        };
        tracing::info!(issuer = %metadata.issuer, scope = %scopes.join(" "), "authorized");
        self.keep(tokens, scopes, found, &client);
        Ok(())
    }

    /// The authorization step of the code grant: the request (PKCE S256, state,
    /// scope, resource) through the agent, the redirect checked (state, error,
    /// RFC 9207 iss). Returns the code and the PKCE verifier.
    async fn code(
        &self,
        found: &Found,
        client: &ClientCredentials,
        scopes: &[String],
    ) -> Result<(String, String), AuthError> {
        let metadata = &found.metadata;
        let endpoint = metadata.authorization_endpoint.as_deref().ok_or_else(|| {
            AuthError::Discovery(format!("{} has no authorization_endpoint", metadata.issuer))
        })?;
        let mut url = Url::parse(endpoint).map_err(|e| {
            AuthError::Discovery(format!("bad authorization_endpoint {endpoint:?}: {e}"))
        })?;
        let verifier = policy::random_token(32)?;
        let state = policy::random_token(16)?;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code");
            q.append_pair("client_id", &client.client_id);
            q.append_pair("redirect_uri", &self.config.redirect_uri);
            q.append_pair("state", &state);
            q.append_pair("code_challenge", &code_challenge(&verifier));
            q.append_pair("code_challenge_method", "S256");
            if !scopes.is_empty() {
                q.append_pair("scope", &scopes.join(" "));
            }
            q.append_pair("resource", &found.resource);
        }
        let agent = self
            .config
            .agent
            .as_ref()
            .ok_or_else(|| AuthError::Config("no AuthorizationAgent".into()))?;
        let request = AuthorizationRequest {
            url: url.to_string(),
            redirect_uri: self.config.redirect_uri.clone(),
        };
        let redirect = agent
            .authorize(&request)
            .await
            .map_err(AuthError::Authorization)?;
        let redirect = Url::parse(&redirect)
            .map_err(|e| AuthError::Authorization(format!("bad redirect URL: {e}")))?;
        let get = |k: &str| {
            redirect
                .query_pairs()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.into_owned())
        };
        if get("state").as_deref() != Some(state.as_str()) {
            return Err(AuthError::Authorization(
                "the redirect's state is not the request's (possible CSRF); refused".into(),
            ));
        }
        check_iss(
            &metadata.issuer,
            metadata.authorization_response_iss_parameter_supported == Some(true),
            get("iss").as_deref(),
        )?;
        if let Some(error) = get("error") {
            let description = get("error_description").unwrap_or_default();
            return Err(AuthError::Authorization(format!(
                "the authorization server answered {error}: {description}"
            )));
        }
        let code = get("code")
            .ok_or_else(|| AuthError::Authorization("the redirect has no code".into()))?;
        Ok((code, verifier))
    }

    /// The refresh_token grant (with the same `resource`); keeps the new tokens
    /// (and the old refresh token when no new one came).
    async fn refresh(
        &self,
        refresh: &str,
        found: &Found,
        scopes: &[String],
    ) -> Result<(), AuthError> {
        let client = self.client_for(&found.metadata, false).await?;
        let form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh.to_owned()),
            ("resource", found.resource.clone()),
        ];
        let mut tokens = self.token_request(&found.metadata, &client, form).await?;
        if tokens.refresh.is_none() {
            tokens.refresh = Some(refresh.to_owned());
        }
        tracing::info!(issuer = %found.metadata.issuer, "access token refreshed");
        self.keep(tokens, scopes.to_vec(), found, &client);
        Ok(())
    }

    /// POSTs a token request with the client's authentication.
    async fn token_request(
        &self,
        metadata: &AuthorizationServerMetadata,
        client: &ClientCredentials,
        form: Vec<(&str, String)>,
    ) -> Result<Tokens, AuthError> {
        let endpoint = &metadata.token_endpoint;
        let method = token_auth(
            client.auth_method.as_deref(),
            metadata.token_endpoint_auth_methods_supported.as_deref(),
            client.client_secret.is_some(),
        );
        let bytes = self.client_post(endpoint, method, client, form).await?;
        let t: TokenResponse = serde_json::from_slice(&bytes)
            .map_err(|e| token_error(format!("{endpoint}: not a token response: {e}")))?;
        if let Some(kind) = &t.token_type {
            if !kind.eq_ignore_ascii_case("bearer") {
                return Err(token_error(format!(
                    "{endpoint} issued a {kind:?} token; only Bearer is supported"
                )));
            }
        }
        let lifetime = t
            .expires_in
            .map(|s| Duration::from_secs(s.min(u64::from(u32::MAX))));
        Ok(Tokens {
            access: t.access_token,
            refresh: t.refresh_token,
            expires_at: lifetime.map(|l| Instant::now() + l),
            expires_unix: lifetime.map(|l| unix_seconds(SystemTime::now() + l)),
        })
    }

    /// POSTs `form` to `endpoint` (a token or revocation endpoint) with the
    /// client's authentication by `method`; the body of a 2xx answer.
    async fn client_post(
        &self,
        endpoint: &str,
        method: TokenAuth,
        client: &ClientCredentials,
        mut form: Vec<(&str, String)>,
    ) -> Result<bytes::Bytes, AuthError> {
        let mut request = self.http.post(endpoint);
        // `client_id` goes in the body with every method: RFC 6749 §4.1.3 wants
        // it from public clients, and servers such as the Python SDK's look it
        // up there before reading the Basic header.
        form.push(("client_id", client.client_id.clone()));
        match (method, &client.client_secret) {
            (TokenAuth::ClientSecretBasic, Some(secret)) => {
                request = request.header(
                    AUTHORIZATION,
                    policy::basic_credentials(&client.client_id, secret),
                );
            }
            (TokenAuth::ClientSecretPost, Some(secret)) => {
                form.push(("client_secret", secret.clone()));
            }
            _ => {}
        }
        let resp = request
            .header(http::header::ACCEPT, "application/json")
            .form(&form)
            .send()
            .await
            .map_err(|e| token_error(format!("POST {endpoint}: {}", error_chain(&e))))?;
        let status = resp.status();
        let bytes = resp.bytes().await.unwrap_or_default();
        if !status.is_success() {
            return Err(AuthError::Token {
                message: format!(
                    "{endpoint} answered HTTP {status}: {}",
                    oauth_error_text(&bytes)
                ),
                invalid_client: oauth_error_code(&bytes).as_deref() == Some("invalid_client"),
            });
        }
        Ok(bytes)
    }

    /// Forgets the client kept for `issuer` when it was not pre-registered (a
    /// server that forgot its registration answers `invalid_client`; the next
    /// challenge registers again).
    fn forget_registered(&self, issuer: &str) {
        let pre = self
            .config
            .pre_registered
            .iter()
            .any(|p| p.issuer.as_deref().is_none_or(|i| i == issuer));
        if !pre {
            lock(&self.state).clients.remove(issuer);
        }
    }

    /// Takes `tokens` as the ones in force and saves them, with the client, in
    /// the store (a store that fails is logged, not an error of the flow).
    fn keep(&self, tokens: Tokens, scopes: Vec<String>, found: &Found, client: &ClientCredentials) {
        let stored = StoredAuthorization {
            server: found.server.clone(),
            issuer: found.metadata.issuer.clone(),
            resource: found.resource.clone(),
            client_id: client.client_id.clone(),
            client_secret: client.client_secret.clone(),
            token_endpoint_auth_method: client.auth_method.clone(),
            redirect_uri: client.redirect_uri.clone(),
            access_token: tokens.access.clone(),
            refresh_token: tokens.refresh.clone(),
            expires_at: tokens.expires_unix,
            scopes: scopes.clone(),
            saved_at: unix_seconds(SystemTime::now()),
        };
        {
            let mut st = lock(&self.state);
            st.generation += 1;
            st.tokens = TokenState::Authorized {
                tokens,
                scopes,
                issuer: found.metadata.issuer.clone(),
            };
        }
        if let Some(store) = &self.config.store {
            if let Err(e) = store.save(&stored) {
                tracing::warn!(error = %error_chain(&e), "the authorization could not be saved");
            }
        }
    }

    /// Takes back the authorization the store keeps for the MCP endpoint
    /// `server` (its URL, as given to the transport) before the first request:
    /// the client it registered (reused by the next authorization at that
    /// issuer) and, with `tokens`, its tokens, as [`freshness`] decides at
    /// `now` with `margin` ([`REFRESH_MARGIN`]): used as they are, refreshed
    /// first (discovery again, then the refresh_token grant at the same
    /// issuer; a refusal drops them), or dropped when run out without a
    /// refresh token. Whatever is dropped, the first request's 401 authorizes
    /// anew.
    ///
    /// Errors: [`AuthError::Store`] when the store cannot be read. A failed
    /// refresh is not an error (see [`Resumed::Dropped`]).
    pub async fn resume(
        &self,
        server: &str,
        tokens: bool,
        now: SystemTime,
        margin: Duration,
    ) -> Result<Resumed, AuthError> {
        let Some(store) = &self.config.store else {
            return Ok(Resumed::Nothing);
        };
        let Some(stored) = store
            .load(server)
            .map_err(|e| AuthError::Store(error_chain(&e)))?
        else {
            return Ok(Resumed::Nothing);
        };
        let _flow = self.flow.lock().await;
        lock(&self.state).clients.insert(
            stored.issuer.clone(),
            ClientCredentials {
                client_id: stored.client_id.clone(),
                client_secret: stored.client_secret.clone(),
                auth_method: stored.token_endpoint_auth_method.clone(),
                redirect_uri: stored.redirect_uri.clone(),
            },
        );
        if !tokens {
            return Ok(Resumed::ClientOnly);
        }
        let decision = freshness(
            stored.expires_at,
            stored.refresh_token.is_some(),
            now,
            margin,
        );
        if decision == Freshness::Expired {
            tracing::info!(issuer = %stored.issuer, "the stored access token has run out and there is no refresh token");
            return Ok(Resumed::Dropped);
        }
        let left = stored
            .expires_at
            .map(|e| Duration::from_secs(e.saturating_sub(unix_seconds(now))));
        {
            let mut st = lock(&self.state);
            st.generation += 1;
            st.tokens = TokenState::Authorized {
                tokens: Tokens {
                    access: stored.access_token.clone(),
                    refresh: stored.refresh_token.clone(),
                    expires_at: left.map(|l| Instant::now() + l),
                    expires_unix: stored.expires_at,
                },
                scopes: stored.scopes.clone(),
                issuer: stored.issuer.clone(),
            };
        }
        if decision == Freshness::Fresh {
            return Ok(Resumed::Stored);
        }
        let refreshed = match (Url::parse(server), &stored.refresh_token) {
            (Ok(url), Some(refresh)) => {
                match self.discover(&url, &BearerChallenge::default()).await {
                    Ok(found) if found.metadata.issuer == stored.issuer => {
                        self.refresh(refresh, &found, &stored.scopes).await
                    }
                    Ok(found) => Err(AuthError::Discovery(format!(
                        "the resource is now protected by {}, not {}",
                        found.metadata.issuer, stored.issuer
                    ))),
                    Err(e) => Err(e),
                }
            }
            (Err(e), _) => Err(AuthError::Discovery(format!(
                "bad server URL {server:?}: {e}"
            ))),
            (_, None) => Err(AuthError::Config("no refresh token".into())),
        };
        match refreshed {
            Ok(()) => Ok(Resumed::Refreshed),
            Err(e) => {
                tracing::info!(error = %e, "the stored tokens could not be refreshed; dropped");
                let mut st = lock(&self.state);
                st.generation += 1;
                st.tokens = TokenState::None;
                Ok(Resumed::Dropped)
            }
        }
    }

    /// Revokes `stored`'s tokens at its authorization server (RFC 7009: the
    /// refresh token, then the access token, each with its
    /// `token_type_hint`, with the client's authentication), when its
    /// metadata advertises a `revocation_endpoint`. Returns whether it did.
    ///
    /// Errors: [`AuthError::Discovery`] or [`AuthError::Http`] when the
    /// metadata cannot be had, [`AuthError::Insecure`] for a revocation
    /// endpoint that is not `https` (loopback excepted), [`AuthError::Token`]
    /// when the endpoint refuses.
    pub async fn revoke(&self, stored: &StoredAuthorization) -> Result<bool, AuthError> {
        let Some(metadata) = self.server_metadata(&stored.issuer, true).await? else {
            return Ok(false);
        };
        let Some(endpoint) = metadata.revocation_endpoint.clone() else {
            return Ok(false);
        };
        policy::check_endpoint("revocation_endpoint", &endpoint)?;
        let client = ClientCredentials {
            client_id: stored.client_id.clone(),
            client_secret: stored.client_secret.clone(),
            auth_method: stored.token_endpoint_auth_method.clone(),
            redirect_uri: None,
        };
        let mut tokens = Vec::new();
        if let Some(r) = &stored.refresh_token {
            tokens.push((r.clone(), "refresh_token"));
        }
        tokens.push((stored.access_token.clone(), "access_token"));
        let method = policy::revocation_auth(
            client.auth_method.as_deref(),
            metadata.token_endpoint_auth_methods_supported.as_deref(),
            metadata
                .revocation_endpoint_auth_methods_supported
                .as_deref(),
            client.client_secret.is_some(),
        );
        for (token, hint) in tokens {
            let form = vec![("token", token), ("token_type_hint", hint.to_owned())];
            self.client_post(&endpoint, method, &client, form).await?;
        }
        tracing::info!(issuer = %stored.issuer, "tokens revoked");
        Ok(true)
    }

    /// Whether the access token held has run out by the server's `expires_in`
    /// (`false` when none is held or no lifetime was given).
    pub fn expired(&self) -> bool {
        match &lock(&self.state).tokens {
            TokenState::Authorized { tokens, .. } => {
                tokens.expires_at.is_some_and(|t| Instant::now() >= t)
            }
            TokenState::None => false,
        }
    }
}

/// What [`OAuthClient::resume`] took back from the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resumed {
    /// Nothing stored for this server (or no store).
    Nothing,
    /// Only the registered client (asked for without tokens).
    ClientOnly,
    /// The client and its tokens, used as they are.
    Stored,
    /// The client and tokens refreshed just now (they ran out within the margin).
    Refreshed,
    /// The client; the tokens were dropped (run out without a refresh token,
    /// or the refresh was refused).
    Dropped,
}

/// A token endpoint failure that is not an OAuth error answer.
fn token_error(message: String) -> AuthError {
    AuthError::Token {
        message,
        invalid_client: false,
    }
}

/// An OAuth error body (RFC 6749 §5.2).
#[derive(Deserialize)]
struct OAuthErrorBody {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

/// The `error` code of an OAuth error body, if it is one.
fn oauth_error_code(body: &[u8]) -> Option<String> {
    serde_json::from_slice::<OAuthErrorBody>(body)
        .ok()
        .map(|e| e.error)
}

/// The `error` and `error_description` of an OAuth error body (RFC 6749 §5.2),
/// else an excerpt of the body.
fn oauth_error_text(body: &[u8]) -> String {
    match serde_json::from_slice::<OAuthErrorBody>(body) {
        Ok(e) => match e.error_description {
            Some(d) => format!("{}: {d}", e.error),
            None => e.error,
        },
        Err(_) => String::from_utf8_lossy(body).chars().take(200).collect(),
    }
}
