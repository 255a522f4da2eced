//! The OAuth client's decisions, as pure functions: which scopes to ask for,
//! whether a Protected Resource Metadata document is about this server, whether
//! an authorization response's `iss` is acceptable, how to authenticate at the
//! token endpoint, and PKCE.
//!
//! Sources: MCP 2025-11-25 "Authorization → Scope Selection Strategy" and
//! "Scope Challenge Handling", SEP-2350 (re-authorization asks for the union),
//! SEP-2207 (`offline_access` only when the authorization server lists it),
//! RFC 9728 §3.3 (the resource must match the URL it was discovered for),
//! RFC 9207 §2.4 (`iss` compared by simple string comparison), RFC 8414 §2 and
//! RFC 6749 §2.3.1 (token endpoint client authentication), RFC 7636 (PKCE S256).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use reqwest::Url;
use sha2::{Digest, Sha256};

use super::AuthError;

/// The scopes of an authorization request: those of the challenge, else all of
/// the Protected Resource Metadata's `scopes_supported`, else none; joined with
/// the scopes asked for before (a step-up keeps what was granted, SEP-2350);
/// then `offline_access` when `want_refresh` and the authorization server lists
/// it (SEP-2207: never otherwise). Order kept, duplicates dropped.
pub fn select_scopes(
    challenge: &[String],
    resource_supported: Option<&[String]>,
    server_supported: Option<&[String]>,
    previous: &[String],
    want_refresh: bool,
) -> Vec<String> {
    let base: &[String] = if !challenge.is_empty() {
        challenge
    } else {
        resource_supported.unwrap_or(&[])
    };
    let mut out: Vec<String> = Vec::new();
    for s in previous.iter().chain(base) {
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    let offline = "offline_access";
    if want_refresh
        && server_supported.is_some_and(|s| s.iter().any(|s| s == offline))
        && !out.iter().any(|s| s == offline)
    {
        out.push(offline.to_owned());
    }
    out
}

/// Whether the `resource` of Protected Resource Metadata is this MCP server's:
/// same scheme, host and port as `server`, and a path that is `server`'s or a
/// parent of it (segment-wise; a resource at the root covers the whole origin).
/// Errors with [`AuthError::ResourceMismatch`] otherwise.
pub fn check_resource(resource: &str, server: &Url) -> Result<(), AuthError> {
    let mismatch = || AuthError::ResourceMismatch {
        resource: resource.to_owned(),
        server: server.to_string(),
    };
    let r = Url::parse(resource).map_err(|_| mismatch())?;
    if r.origin() != server.origin() {
        return Err(mismatch());
    }
    let rp = r.path().trim_end_matches('/');
    let sp = server.path().trim_end_matches('/');
    let covered = rp.is_empty()
        || sp == rp
        || sp
            .strip_prefix(rp)
            .is_some_and(|rest| rest.starts_with('/'));
    if covered {
        Ok(())
    } else {
        Err(mismatch())
    }
}

/// MCP 2025-06-18+ "Authorization → Communication Security": an authorization
/// server endpoint must be `https`, except on the loopback interface
/// (`localhost`, `127.0.0.0/8`, `::1`), where `http` is allowed (local servers,
/// tests). `what` names the endpoint in the error ([`AuthError::Insecure`]).
pub fn check_endpoint(what: &str, url: &str) -> Result<(), AuthError> {
    let insecure = || AuthError::Insecure {
        what: what.to_owned(),
        url: url.to_owned(),
    };
    let u = Url::parse(url).map_err(|_| insecure())?;
    let loopback = match u.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match u.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err(insecure()),
    }
}

/// RFC 9207 on an authorization response: a present `iss` must equal `issuer`
/// exactly (no normalization: a trailing slash is a mismatch); an absent one is
/// refused when the server advertised `authorization_response_iss_parameter_supported`.
pub fn check_iss(issuer: &str, advertised: bool, iss: Option<&str>) -> Result<(), AuthError> {
    match iss {
        Some(got) if got == issuer => Ok(()),
        Some(got) => Err(AuthError::IssMismatch {
            expected: issuer.to_owned(),
            got: got.to_owned(),
        }),
        None if advertised => Err(AuthError::IssMissing {
            issuer: issuer.to_owned(),
        }),
        None => Ok(()),
    }
}

/// How the client authenticates at the token endpoint (RFC 6749 §2.3.1, OpenID
/// Connect Core §9 names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenAuth {
    /// `client_secret_basic`: HTTP Basic with the form-encoded id and secret.
    ClientSecretBasic,
    /// `client_secret_post`: `client_id` and `client_secret` in the body.
    ClientSecretPost,
    /// `none`: a public client; `client_id` in the body.
    None,
}

impl TokenAuth {
    /// The method's registered name.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenAuth::ClientSecretBasic => "client_secret_basic",
            TokenAuth::ClientSecretPost => "client_secret_post",
            TokenAuth::None => "none",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "client_secret_basic" => Some(TokenAuth::ClientSecretBasic),
            "client_secret_post" => Some(TokenAuth::ClientSecretPost),
            "none" => Some(TokenAuth::None),
            _ => None,
        }
    }
}

/// The token endpoint authentication for a client: without a secret, `none`;
/// with one, the method its registration named (when one of the three), else
/// `client_secret_basic` when the server lists it or lists nothing (RFC 8414's
/// default), else `client_secret_post` when listed, else basic.
pub fn token_auth(
    registered: Option<&str>,
    supported: Option<&[String]>,
    has_secret: bool,
) -> TokenAuth {
    if !has_secret {
        return TokenAuth::None;
    }
    if let Some(m) = registered.and_then(TokenAuth::parse) {
        if m != TokenAuth::None {
            return m;
        }
    }
    let lists = |m: TokenAuth| supported.is_some_and(|s| s.iter().any(|x| x == m.as_str()));
    if supported.is_none() || lists(TokenAuth::ClientSecretBasic) {
        TokenAuth::ClientSecretBasic
    } else if lists(TokenAuth::ClientSecretPost) {
        TokenAuth::ClientSecretPost
    } else {
        TokenAuth::ClientSecretBasic
    }
}

/// The client authentication at the revocation endpoint (RFC 7009 §2.1): without
/// a secret, `none`; as at the token endpoint ([`token_auth`]) when the server
/// lists no methods for the revocation endpoint
/// (`revocation_endpoint_auth_methods_supported`) or lists that one; else the
/// first of `client_secret_basic` and `client_secret_post` in its list.
pub fn revocation_auth(
    registered: Option<&str>,
    token_supported: Option<&[String]>,
    revocation_supported: Option<&[String]>,
    has_secret: bool,
) -> TokenAuth {
    if !has_secret {
        return TokenAuth::None;
    }
    let usual = token_auth(registered, token_supported, has_secret);
    let Some(list) = revocation_supported else {
        return usual;
    };
    if list.iter().any(|m| m == usual.as_str()) {
        return usual;
    }
    list.iter()
        .find_map(|m| match TokenAuth::parse(m) {
            Some(TokenAuth::None) | None => None,
            Some(m) => Some(m),
        })
        .unwrap_or(usual)
}

/// The method asked for in a Dynamic Client Registration: `none` (a public
/// client, as a native app is) when the server lists it, else the first of
/// `client_secret_basic`, `client_secret_post` it lists, else `none`; when the
/// server lists nothing, `client_secret_basic` (RFC 8414's default).
pub fn registration_auth(supported: Option<&[String]>) -> TokenAuth {
    let Some(s) = supported else {
        return TokenAuth::ClientSecretBasic;
    };
    let lists = |m: TokenAuth| s.iter().any(|x| x == m.as_str());
    [
        TokenAuth::None,
        TokenAuth::ClientSecretBasic,
        TokenAuth::ClientSecretPost,
    ]
    .into_iter()
    .find(|m| lists(*m))
    .unwrap_or(TokenAuth::None)
}

/// The `Authorization` value of `client_secret_basic`: Basic over the
/// form-urlencoded id and secret (RFC 6749 §2.3.1).
pub fn basic_credentials(client_id: &str, secret: &str) -> String {
    let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let pair = format!("{}:{}", enc(client_id), enc(secret));
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

/// The S256 `code_challenge` of a PKCE verifier: base64url(SHA-256(verifier)),
/// unpadded (RFC 7636 §4.2).
pub fn code_challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// `bytes` random bytes from the OS, base64url (PKCE verifiers, `state`).
/// 32 bytes give a 43-character verifier, RFC 7636's minimum length.
pub fn random_token(bytes: usize) -> Result<String, AuthError> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| AuthError::Http(format!("no randomness: {e}")))?;
    Ok(URL_SAFE_NO_PAD.encode(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn scopes_challenge_then_supported_then_none() {
        let sup = v(&["a", "b"]);
        assert_eq!(
            select_scopes(&v(&["x"]), Some(&sup), None, &[], false),
            ["x"]
        );
        assert_eq!(select_scopes(&[], Some(&sup), None, &[], false), ["a", "b"]);
        assert!(select_scopes(&[], None, None, &[], false).is_empty());
        // Step-up: the union, earlier first (SEP-2350).
        assert_eq!(
            select_scopes(&v(&["w", "r"]), Some(&sup), None, &v(&["r"]), false),
            ["r", "w"]
        );
        // offline_access only when the authorization server lists it.
        let as_sup = v(&["a", "offline_access"]);
        assert_eq!(
            select_scopes(&[], Some(&sup), Some(&as_sup), &[], true),
            ["a", "b", "offline_access"]
        );
        assert_eq!(
            select_scopes(&[], Some(&sup), Some(&sup), &[], true),
            ["a", "b"]
        );
        assert_eq!(
            select_scopes(&[], Some(&sup), Some(&as_sup), &[], false),
            ["a", "b"]
        );
    }

    #[test]
    fn the_resource_must_be_this_server_or_a_parent() {
        let server = Url::parse("http://localhost:3000/mcp").unwrap();
        for ok in [
            "http://localhost:3000/mcp",
            "http://localhost:3000",
            "http://localhost:3000/",
            "http://LOCALHOST:3000/mcp/",
        ] {
            assert!(check_resource(ok, &server).is_ok(), "{ok}");
        }
        for bad in [
            "https://evil.example.com/mcp",
            "http://localhost:3001/mcp",
            "https://localhost:3000/mcp",
            "http://localhost:3000/mcpx",
            "http://localhost:3000/other",
            "not a url",
        ] {
            assert!(
                matches!(
                    check_resource(bad, &server),
                    Err(AuthError::ResourceMismatch { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn endpoints_must_be_https_except_on_loopback() {
        for ok in [
            "https://auth.example.com/token",
            "http://localhost:3000/token",
            "http://LOCALHOST/token",
            "http://127.0.0.1:1/token",
            "http://127.8.9.10/token",
            "http://[::1]:8080/token",
        ] {
            assert!(check_endpoint("token_endpoint", ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://auth.example.com/token",
            "http://10.0.0.5/token",
            "http://localhost.example.com/token",
            "ftp://localhost/token",
            "not a url",
        ] {
            assert!(
                matches!(
                    check_endpoint("token_endpoint", bad),
                    Err(AuthError::Insecure { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn iss_is_compared_exactly() {
        let i = "http://localhost:3000";
        assert!(check_iss(i, true, Some(i)).is_ok());
        assert!(check_iss(i, false, None).is_ok());
        assert!(check_iss(i, false, Some(i)).is_ok());
        assert!(matches!(
            check_iss(i, true, None),
            Err(AuthError::IssMissing { .. })
        ));
        for bad in [
            "http://localhost:3000/",
            "HTTP://localhost:3000",
            "https://evil.example.com",
        ] {
            assert!(
                matches!(
                    check_iss(i, false, Some(bad)),
                    Err(AuthError::IssMismatch { .. })
                ),
                "{bad}"
            );
            assert!(
                matches!(
                    check_iss(i, true, Some(bad)),
                    Err(AuthError::IssMismatch { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn token_endpoint_authentication_choice() {
        let basic = v(&["client_secret_basic"]);
        let post = v(&["client_secret_post"]);
        let none = v(&["none"]);
        assert_eq!(token_auth(None, Some(&post), false), TokenAuth::None);
        assert_eq!(
            token_auth(Some("client_secret_post"), Some(&basic), true),
            TokenAuth::ClientSecretPost
        );
        assert_eq!(
            token_auth(None, Some(&post), true),
            TokenAuth::ClientSecretPost
        );
        assert_eq!(
            token_auth(None, Some(&basic), true),
            TokenAuth::ClientSecretBasic
        );
        assert_eq!(token_auth(None, None, true), TokenAuth::ClientSecretBasic);
        assert_eq!(
            token_auth(Some("private_key_jwt"), Some(&none), true),
            TokenAuth::ClientSecretBasic
        );
        assert_eq!(registration_auth(Some(&none)), TokenAuth::None);
        assert_eq!(registration_auth(Some(&post)), TokenAuth::ClientSecretPost);
        assert_eq!(registration_auth(None), TokenAuth::ClientSecretBasic);
    }

    #[test]
    fn revocation_authentication_follows_the_servers_order() {
        let post_first = v(&["client_secret_post", "client_secret_basic"]);
        // The registered method when the revocation endpoint takes it.
        assert_eq!(
            revocation_auth(Some("client_secret_basic"), None, Some(&post_first), true),
            TokenAuth::ClientSecretBasic
        );
        // Else the first the revocation endpoint lists.
        assert_eq!(
            revocation_auth(
                Some("client_secret_basic"),
                None,
                Some(&v(&["none", "client_secret_post"])),
                true
            ),
            TokenAuth::ClientSecretPost
        );
        assert_eq!(
            revocation_auth(Some("client_secret_post"), None, None, true),
            TokenAuth::ClientSecretPost
        );
        assert_eq!(
            revocation_auth(None, None, Some(&v(&["private_key_jwt"])), true),
            TokenAuth::ClientSecretBasic
        );
        assert_eq!(
            revocation_auth(None, None, Some(&post_first), false),
            TokenAuth::None
        );
    }

    #[test]
    fn pkce_and_basic_vectors() {
        // RFC 7636 Appendix B.
        assert_eq!(
            code_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        assert_eq!(
            basic_credentials("a b", "p:w"),
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode("a+b:p%3Aw")
            )
        );
        let t = random_token(32).unwrap();
        assert_eq!(t.len(), 43);
        assert_ne!(t, random_token(32).unwrap());
    }
}
