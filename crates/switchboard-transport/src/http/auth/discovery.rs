//! Where the metadata is and what it says: the well-known URLs in the order each
//! MCP revision requires, and the two metadata documents.
//!
//! Sources: RFC 9728 §3.1 (Protected Resource Metadata at
//! `/.well-known/oauth-protected-resource` inserted before the resource's path),
//! RFC 8414 §3.1 and OpenID Connect Discovery 1.0 §4 (authorization server
//! metadata, path-inserted and, for OpenID, path-appended), MCP 2025-11-25
//! "Authorization → Protected Resource Metadata Discovery Requirements" and
//! "Authorization Server Metadata Discovery" (the orders below), MCP 2025-03-26
//! "Authorization → Server Metadata Discovery" and "Fallbacks for Servers without
//! Metadata Discovery" (`/authorize`, `/token`, `/register` at the authorization
//! base URL).
//!
//! Pure functions and serde types; the fetching is in the parent module.

use reqwest::Url;
use serde::Deserialize;

/// RFC 9728 Protected Resource Metadata, the members the client uses.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct ProtectedResourceMetadata {
    /// The protected resource's identifier; the client sends it, exactly as
    /// published, as the `resource` parameter (RFC 8707).
    pub resource: String,
    /// Issuer identifiers of the authorization servers (the first is used).
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// Scopes the resource knows, requested when a challenge names none.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
}

/// RFC 8414 / OpenID Connect authorization server metadata, the members the
/// client uses.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct AuthorizationServerMetadata {
    /// Its issuer identifier: must equal, character for character, the one the
    /// well-known URL was made from (RFC 8414 §3.3).
    pub issuer: String,
    /// Where the user agent is sent (authorization code grant).
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    /// Where codes, refresh tokens and client credentials become tokens.
    pub token_endpoint: String,
    /// RFC 7591 Dynamic Client Registration, when offered.
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// Scopes it knows (`offline_access` here means refresh tokens, SEP-2207).
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// PKCE methods; MCP requires `S256` among them.
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// `client_secret_basic`, `client_secret_post`, `none`, ...; absent means
    /// `client_secret_basic` (RFC 8414 §2).
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// RFC 9207: it sends `iss` on the authorization response.
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// Client ID Metadata Documents (a URL as `client_id`) are accepted.
    #[serde(default)]
    pub client_id_metadata_document_supported: Option<bool>,
    /// RFC 7009 token revocation, when offered (RFC 8414 §2).
    #[serde(default)]
    pub revocation_endpoint: Option<String>,
    /// The client authentication methods of the revocation endpoint (RFC
    /// 8414 §2), in the server's order of preference.
    #[serde(default)]
    pub revocation_endpoint_auth_methods_supported: Option<Vec<String>>,
}

impl AuthorizationServerMetadata {
    /// The endpoints a 2025-03-26 server without metadata has by default:
    /// `/authorize`, `/token` and `/register` at `base` (the MCP server's URL
    /// without its path). PKCE `S256` is assumed (that revision requires it).
    pub fn defaults_2025_03_26(base: &Url) -> Self {
        let at = |p: &str| {
            let mut u = base.clone();
            u.set_path(p);
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
        };
        AuthorizationServerMetadata {
            issuer: origin(base),
            authorization_endpoint: Some(at("/authorize")),
            token_endpoint: at("/token"),
            registration_endpoint: Some(at("/register")),
            scopes_supported: None,
            code_challenge_methods_supported: Some(vec!["S256".to_owned()]),
            token_endpoint_auth_methods_supported: None,
            authorization_response_iss_parameter_supported: None,
            client_id_metadata_document_supported: None,
            revocation_endpoint: None,
            revocation_endpoint_auth_methods_supported: None,
        }
    }

    /// Whether PKCE with `S256` is advertised (MCP: a client MUST refuse to go on
    /// otherwise).
    pub fn supports_s256(&self) -> bool {
        self.code_challenge_methods_supported
            .as_ref()
            .is_some_and(|m| m.iter().any(|m| m == "S256"))
    }
}

/// `scheme://host[:port]` of `url`, no trailing slash.
pub fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// `url`'s path without a terminating `/` (empty for the root).
fn trimmed_path(url: &Url) -> &str {
    url.path().trim_end_matches('/')
}

/// `origin` + `prefix` + `suffix`, no query or fragment.
fn at(url: &Url, path: &str) -> Option<Url> {
    let mut u = url.clone();
    u.set_query(None);
    u.set_fragment(None);
    u.set_path(path);
    Some(u)
}

/// Where to look for the MCP server's Protected Resource Metadata, in order:
/// the `resource_metadata` URL of its challenge (when given and a valid
/// http(s) URL), then the well-known URL with the server's path inserted (when it
/// has one), then the one at the root (MCP 2025-11-25, "Protected Resource
/// Metadata Discovery Requirements").
pub fn protected_resource_metadata_urls(server: &Url, from_challenge: Option<&str>) -> Vec<Url> {
    let mut urls = Vec::new();
    if let Some(u) = from_challenge
        .and_then(|u| Url::parse(u).ok())
        .filter(|u| matches!(u.scheme(), "http" | "https"))
    {
        urls.push(u);
    }
    let path = trimmed_path(server);
    if !path.is_empty() {
        urls.extend(at(
            server,
            &format!("/.well-known/oauth-protected-resource{path}"),
        ));
    }
    urls.extend(at(server, "/.well-known/oauth-protected-resource"));
    urls.dedup();
    urls
}

/// Where to look for the metadata of the authorization server `issuer`, in
/// order (MCP 2025-11-25, "Authorization Server Metadata Discovery"): for an
/// issuer with a path, OAuth then OpenID Connect with the path inserted, then
/// OpenID Connect with it appended; for one without, OAuth then OpenID Connect.
/// `None` for an issuer that is not an http(s) URL.
pub fn authorization_server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = trimmed_path(issuer);
    let mut urls = Vec::new();
    if path.is_empty() {
        urls.extend(at(issuer, "/.well-known/oauth-authorization-server"));
        urls.extend(at(issuer, "/.well-known/openid-configuration"));
    } else {
        urls.extend(at(
            issuer,
            &format!("/.well-known/oauth-authorization-server{path}"),
        ));
        urls.extend(at(
            issuer,
            &format!("/.well-known/openid-configuration{path}"),
        ));
        urls.extend(at(
            issuer,
            &format!("{path}/.well-known/openid-configuration"),
        ));
    }
    urls
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(urls: Vec<Url>) -> Vec<String> {
        urls.into_iter().map(String::from).collect()
    }

    #[test]
    fn prm_urls_challenge_then_path_inserted_then_root() {
        let server = Url::parse("https://mcp.example.com/tenant/mcp/?x=1#f").unwrap();
        assert_eq!(
            strings(protected_resource_metadata_urls(
                &server,
                Some("https://mcp.example.com/custom/prm.json")
            )),
            [
                "https://mcp.example.com/custom/prm.json",
                "https://mcp.example.com/.well-known/oauth-protected-resource/tenant/mcp",
                "https://mcp.example.com/.well-known/oauth-protected-resource",
            ]
        );
        let root = Url::parse("http://127.0.0.1:8080").unwrap();
        assert_eq!(
            strings(protected_resource_metadata_urls(&root, Some("not a url"))),
            ["http://127.0.0.1:8080/.well-known/oauth-protected-resource"]
        );
        assert_eq!(
            strings(protected_resource_metadata_urls(
                &root,
                Some("file:///etc/passwd")
            )),
            ["http://127.0.0.1:8080/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn as_metadata_urls_with_and_without_a_path() {
        let issuer = Url::parse("https://auth.example.com/tenant1/").unwrap();
        assert_eq!(
            strings(authorization_server_metadata_urls(&issuer)),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        let issuer = Url::parse("https://auth.example.com").unwrap();
        assert_eq!(
            strings(authorization_server_metadata_urls(&issuer)),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn the_2025_03_26_defaults_sit_at_the_root() {
        let base = Url::parse("http://localhost:3000/mcp?x").unwrap();
        let m = AuthorizationServerMetadata::defaults_2025_03_26(&base);
        assert_eq!(m.issuer, "http://localhost:3000");
        assert_eq!(
            m.authorization_endpoint.as_deref(),
            Some("http://localhost:3000/authorize")
        );
        assert_eq!(m.token_endpoint, "http://localhost:3000/token");
        assert_eq!(
            m.registration_endpoint.as_deref(),
            Some("http://localhost:3000/register")
        );
        assert!(m.supports_s256());
    }
}
