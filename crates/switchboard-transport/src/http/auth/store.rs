//! What outlives a process: the authorization the OAuth client got (tokens and
//! the client it registered), handed to a [`TokenStore`] the application owns
//! (the CLI keeps a file; this crate knows no paths), and the pure decision
//! whether stored tokens are used, refreshed first, or dropped ([`freshness`]).
//!
//! Sources: OAuth 2.1 draft 13 §4.3 (refresh tokens: used only when the
//! authorization server issued one), RFC 6749 §5.1 (`expires_in`), RFC 7591
//! (the registered client kept for the next authorization).

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// How long before its expiry a stored access token is refreshed rather than
/// used (a request sent at the edge would meet a 401): 60 s.
pub const REFRESH_MARGIN: Duration = Duration::from_secs(60);

/// One authorization as kept between runs: per authorization server
/// (`issuer`), protected resource (`resource`) and client (`client_id`), with
/// the MCP endpoint it was got for (`server`). Its `Debug` shows no token or
/// secret; nothing logs its values.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredAuthorization {
    /// The MCP endpoint URL the authorization was got for (what a store looks
    /// entries up by).
    pub server: String,
    /// The authorization server's issuer identifier.
    pub issuer: String,
    /// The `resource` the tokens are bound to (RFC 8707): the Protected
    /// Resource Metadata's `resource`, or the server URL without one.
    pub resource: String,
    /// The client's `client_id` at that issuer (registered, pre-registered or a
    /// Client ID Metadata Document URL).
    pub client_id: String,
    /// Its `client_secret`, for a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The token endpoint authentication method its registration named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
    /// The redirect URI the client was registered with (Dynamic Client
    /// Registration only): a later authorization with another redirect URI
    /// registers anew.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
    /// The access token.
    pub access_token: String,
    /// The refresh token, when the authorization server issued one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token runs out, in seconds since the Unix epoch (from
    /// `expires_in`); `None` when the server gave no lifetime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes asked for.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// When this entry was written, in seconds since the Unix epoch.
    #[serde(default)]
    pub saved_at: u64,
}

impl fmt::Debug for StoredAuthorization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredAuthorization")
            .field("server", &self.server)
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("access_token", &"…")
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "…"))
            .field("expires_at", &self.expires_at)
            .field("scopes", &self.scopes)
            .finish()
    }
}

impl StoredAuthorization {
    /// Whether it is kept under the same key as `other`: the same issuer,
    /// resource and client.
    pub fn same_key(&self, other: &StoredAuthorization) -> bool {
        self.issuer == other.issuer
            && self.resource == other.resource
            && self.client_id == other.client_id
    }
}

/// A store's failure (reading or writing its medium), as the store tells it.
#[derive(Debug, thiserror::Error)]
#[error("the token store failed")]
pub struct StoreError(#[source] pub Box<dyn std::error::Error + Send + Sync>);

impl StoreError {
    /// Wraps any error.
    pub fn new(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        StoreError(e.into())
    }
}

/// Where an [`OAuthClient`](super::OAuthClient) finds the authorization of an
/// earlier run and keeps each new one (set
/// [`OAuthConfig::store`](super::OAuthConfig::store)). Implementations own the
/// medium (a file readable by the user alone, a keyring) and must never log
/// the values. Both methods are called from async code (`load` in
/// [`resume`](super::OAuthClient::resume), `save` after each token response):
/// they may block briefly (a file lock), not for long.
pub trait TokenStore: Send + Sync {
    /// The authorization kept for the MCP endpoint `server` (its URL as given
    /// to the client), the most recently saved when there are several; `None`
    /// when there is none.
    fn load(&self, server: &str) -> Result<Option<StoredAuthorization>, StoreError>;
    /// Keeps `authorization`, replacing the entry with the same issuer,
    /// resource and client ([`StoredAuthorization::same_key`]).
    fn save(&self, authorization: &StoredAuthorization) -> Result<(), StoreError>;
}

/// What to do with stored tokens before the first request ([`freshness`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// Use the access token (it does not run out within the margin, or no
    /// lifetime was given: a 401 will tell).
    Fresh,
    /// Refresh first: it runs out within the margin (or already has) and a
    /// refresh token is held.
    RefreshDue,
    /// The access token has run out and there is no refresh token: drop it
    /// (the first request's 401 then authorizes anew).
    Expired,
}

/// Seconds since the Unix epoch at `t` (0 before it).
pub fn unix_seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The decision for a token that expires at `expires_at` (Unix seconds;
/// `None`: no lifetime given), at `now`, refreshing `margin` ahead. Never
/// assumes a refresh token: without one, a token is used until it has run out.
pub fn freshness(
    expires_at: Option<u64>,
    has_refresh: bool,
    now: SystemTime,
    margin: Duration,
) -> Freshness {
    let Some(expires_at) = expires_at else {
        return Freshness::Fresh;
    };
    let now = unix_seconds(now);
    if now.saturating_add(margin.as_secs()) < expires_at {
        Freshness::Fresh
    } else if has_refresh {
        Freshness::RefreshDue
    } else if now < expires_at {
        Freshness::Fresh
    } else {
        Freshness::Expired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(s)
    }

    const M: Duration = Duration::from_secs(60);

    #[test]
    fn no_lifetime_is_used_as_is() {
        assert_eq!(freshness(None, true, at(1000), M), Freshness::Fresh);
        assert_eq!(freshness(None, false, at(1000), M), Freshness::Fresh);
    }

    #[test]
    fn refreshed_within_the_margin_only_with_a_refresh_token() {
        // Well ahead of the margin.
        assert_eq!(freshness(Some(2000), true, at(1000), M), Freshness::Fresh);
        // Within the margin.
        assert_eq!(
            freshness(Some(1030), true, at(1000), M),
            Freshness::RefreshDue
        );
        // Exactly at the margin's edge counts as within.
        assert_eq!(
            freshness(Some(1060), true, at(1000), M),
            Freshness::RefreshDue
        );
        assert_eq!(freshness(Some(1061), true, at(1000), M), Freshness::Fresh);
        // Within the margin, no refresh token: used while it lasts.
        assert_eq!(freshness(Some(1030), false, at(1000), M), Freshness::Fresh);
    }

    #[test]
    fn run_out_is_refreshed_or_dropped() {
        assert_eq!(
            freshness(Some(900), true, at(1000), M),
            Freshness::RefreshDue
        );
        assert_eq!(
            freshness(Some(1000), false, at(1000), M),
            Freshness::Expired
        );
        assert_eq!(freshness(Some(900), false, at(1000), M), Freshness::Expired);
    }

    #[test]
    fn debug_shows_no_secret() {
        let a = StoredAuthorization {
            server: "https://s/mcp".into(),
            issuer: "https://as".into(),
            resource: "https://s/mcp".into(),
            client_id: "c".into(),
            client_secret: Some("SECRET-1".into()),
            token_endpoint_auth_method: None,
            redirect_uri: None,
            access_token: "SECRET-2".into(),
            refresh_token: Some("SECRET-3".into()),
            expires_at: Some(5),
            scopes: vec![],
            saved_at: 1,
        };
        let text = format!("{a:?}");
        assert!(!text.contains("SECRET"), "{text}");
    }
}
