//! The bearer token as a request carries it, and the challenge the resource
//! server answers with: pure text functions.
//!
//! Sources: RFC 6750 §2.1 (`Authorization: Bearer <b64token>`; the scheme is
//! case-insensitive, RFC 9110 §11.1), §2.3 and MCP 2025-06-18+ "Authorization →
//! Token Handling" (a token in the URI query string is refused: `access_token`),
//! §3 (the `WWW-Authenticate: Bearer` challenge: `error`, `error_description`,
//! `scope`), RFC 9728 §5.1 (`resource_metadata`), RFC 9110 §5.6.4 (quoted
//! strings).
//!
//! It must not know HTTP types, tokens' contents or keys: it depends on `std`
//! only, so the fuzz crate (`fuzz/fuzz_targets/bearer.rs`) includes this very
//! file with `#[path]` and fuzzes it without the transport crate's
//! dependencies. Never panics on any input.

/// Why the credentials of a request could not be read (RFC 6750 §3.1
/// `invalid_request`: 400), or, for [`BearerError::Malformed`], a token that
/// cannot be one (`invalid_token`: 401).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BearerError {
    /// The request carries a token in its query string (`access_token=`):
    /// MCP forbids it (400 `invalid_request`).
    InQuery,
    /// More than one `Authorization` header (400 `invalid_request`).
    Repeated,
    /// `Authorization: Bearer` with a value that is not one b64token (empty,
    /// spaces inside, other characters): 401 `invalid_token`.
    Malformed,
}

impl BearerError {
    /// The RFC 6750 §3.1 error code this refusal is answered with.
    pub fn code(self) -> &'static str {
        match self {
            BearerError::InQuery | BearerError::Repeated => "invalid_request",
            BearerError::Malformed => "invalid_token",
        }
    }

    /// A short description for `error_description` (no quotes, no backslashes).
    pub fn description(self) -> &'static str {
        match self {
            BearerError::InQuery => "access tokens are not accepted in the query string",
            BearerError::Repeated => "more than one Authorization header",
            BearerError::Malformed => "the bearer token is malformed",
        }
    }
}

/// Whether `b` may appear in an RFC 6750 §2.1 `b64token` (before its `=`
/// padding): `ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/"`.
fn is_b64token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/')
}

/// Whether `token` is one RFC 6750 `b64token`: at least one token character,
/// then only `=` padding.
pub fn is_b64token(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    !body.is_empty() && body.bytes().all(is_b64token_char)
}

/// The bearer token of a request, from its `Authorization` header values (each
/// as bytes, in order) and its URI's query (without the `?`).
///
/// - `Ok(None)`: no `Authorization` header, or one of another scheme (`Basic`,
///   `DPoP`): the request has no bearer token (401 without an error code).
/// - `Ok(Some(token))`: `Bearer` (any case) followed by one or more spaces and a
///   b64token; spaces around are ignored.
/// - `Err`: see [`BearerError`]. The query is looked at first: a token there is
///   refused even when the header carries one too.
pub fn bearer_token<'a>(
    authorization: &[&'a [u8]],
    query: Option<&str>,
) -> Result<Option<&'a str>, BearerError> {
    if query.is_some_and(query_carries_token) {
        return Err(BearerError::InQuery);
    }
    let value = match authorization {
        [] => return Ok(None),
        [one] => *one,
        _ => return Err(BearerError::Repeated),
    };
    let Ok(text) = std::str::from_utf8(value) else {
        return Err(BearerError::Malformed);
    };
    let text = text.trim_matches(|c| c == ' ' || c == '\t');
    let (scheme, rest) = match text.find([' ', '\t']) {
        Some(i) => (&text[..i], &text[i..]),
        None => (text, ""),
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Ok(None);
    }
    let token = rest.trim_start_matches([' ', '\t']);
    if is_b64token(token) {
        Ok(Some(token))
    } else {
        Err(BearerError::Malformed)
    }
}

/// Whether a URI query (without the `?`) has an `access_token` parameter
/// (RFC 6750 §2.3), its name compared exactly after percent-decoding the
/// letters a client might have escaped (`access%5Ftoken`).
pub fn query_carries_token(query: &str) -> bool {
    query.split('&').any(|pair| {
        let name = pair.split('=').next().unwrap_or("");
        name == "access_token" || percent_decoded_eq(name, "access_token")
    })
}

/// Whether `encoded`, percent-decoded (and `+` as a space), is `plain`.
fn percent_decoded_eq(encoded: &str, plain: &str) -> bool {
    let b = encoded.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                let hex = |c: u8| (c as char).to_digit(16);
                match (hex(b[i + 1]), hex(b[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 3;
                        continue;
                    }
                    _ => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    out == plain.as_bytes()
}

/// Whether `token` has the shape of a JWT (RFC 7519 §7.2, JWS compact form,
/// RFC 7515 §7.1): three base64url parts separated by dots, the first two
/// non-empty (an empty third is an unsecured `alg: none` JWT, judged and
/// refused as a JWT). A token that does not is opaque (introspected, RFC 7662,
/// when that is configured).
pub fn looks_like_jwt(token: &str) -> bool {
    let b64url = |part: &str| {
        part.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    let mut parts = token.split('.');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(h), Some(c), Some(s), None) => {
            !h.is_empty() && !c.is_empty() && b64url(h) && b64url(c) && b64url(s)
        }
        _ => false,
    }
}

/// Space-separated scopes (RFC 6749 §3.3), empty entries dropped, in order,
/// duplicates kept once.
pub fn split_scopes(scope: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in scope.split(' ').filter(|s| !s.is_empty()) {
        if !out.iter().any(|o| o == s) {
            out.push(s.to_owned());
        }
    }
    out
}

/// The scopes of `required` that `granted` lacks, in `required`'s order.
pub fn missing_scopes<'a>(granted: &[String], required: &'a [String]) -> Vec<&'a str> {
    required
        .iter()
        .filter(|r| !granted.iter().any(|g| g == *r))
        .map(String::as_str)
        .collect()
}

/// A `Bearer` challenge (RFC 6750 §3), parameters in this order, each only when
/// given: `error`, `error_description`, `scope` (space-separated), then
/// `resource_metadata` (RFC 9728 §5.1). Values are quoted strings: `"` and `\`
/// are escaped with a backslash, and characters a header value cannot hold
/// (controls, non-ASCII) are dropped, so the result is always a valid header
/// value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChallengeParams<'a> {
    /// `error`: `invalid_request`, `invalid_token`, `insufficient_scope`.
    pub error: Option<&'a str>,
    /// `error_description`: for people.
    pub error_description: Option<&'a str>,
    /// `scope`: the scopes to ask for.
    pub scope: &'a [String],
    /// `resource_metadata`: the Protected Resource Metadata URL.
    pub resource_metadata: Option<&'a str>,
}

impl ChallengeParams<'_> {
    /// The header value, `Bearer` then the parameters (`Bearer` alone when none).
    pub fn render(&self) -> String {
        let mut out = String::from("Bearer");
        let mut first = true;
        let mut param = |name: &str, value: &str| {
            out.push_str(if first { " " } else { ", " });
            first = false;
            out.push_str(name);
            out.push_str("=\"");
            for c in value.chars() {
                match c {
                    '"' | '\\' => {
                        out.push('\\');
                        out.push(c);
                    }
                    ' '..='~' => out.push(c),
                    _ => {}
                }
            }
            out.push('"');
        };
        if let Some(e) = self.error {
            param("error", e);
        }
        if let Some(d) = self.error_description {
            param("error_description", d);
        }
        if !self.scope.is_empty() {
            param("scope", &self.scope.join(" "));
        }
        if let Some(m) = self.resource_metadata {
            param("resource_metadata", m);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_token_table() {
        type Case = (
            &'static [&'static [u8]],
            Option<&'static str>,
            Result<Option<&'static str>, BearerError>,
        );
        let cases: &[Case] = &[
            (&[], None, Ok(None)),
            (&[b"Bearer abc.def-_~+/="], None, Ok(Some("abc.def-_~+/="))),
            (&[b"bearer   tok"], None, Ok(Some("tok"))),
            (&[b"BEARER\ttok  "], None, Ok(Some("tok"))),
            (&[b"Basic dXNlcjpwdw=="], None, Ok(None)),
            (&[b"DPoP tok"], None, Ok(None)),
            (&[b"Bearer"], None, Err(BearerError::Malformed)),
            (&[b"Bearer "], None, Err(BearerError::Malformed)),
            (&[b"Bearer a b"], None, Err(BearerError::Malformed)),
            (&[b"Bearer a,b"], None, Err(BearerError::Malformed)),
            (&[b"Bearer ==="], None, Err(BearerError::Malformed)),
            (&[b"Bearer a=b"], None, Err(BearerError::Malformed)),
            (&[b"Bearer \xff"], None, Err(BearerError::Malformed)),
            (
                &[b"Bearer a", b"Bearer b"],
                None,
                Err(BearerError::Repeated),
            ),
            (
                &[b"Bearer a"],
                Some("access_token=a"),
                Err(BearerError::InQuery),
            ),
            (&[], Some("x=1&access_token=a"), Err(BearerError::InQuery)),
            (&[], Some("access%5Ftoken=a"), Err(BearerError::InQuery)),
            (&[], Some("access_token"), Err(BearerError::InQuery)),
            (&[], Some("sessionId=1&token=a"), Ok(None)),
            (&[], Some("%"), Ok(None)),
            (&[], Some("access_token%"), Ok(None)),
        ];
        for (headers, query, want) in cases {
            assert_eq!(
                bearer_token(headers, *query),
                *want,
                "{headers:?} {query:?}"
            );
        }
    }

    #[test]
    fn jwt_shape() {
        assert!(looks_like_jwt("eyJh.eyJz.c2ln"));
        assert!(looks_like_jwt("eyJh.eyJz."));
        assert!(!looks_like_jwt(".eyJz.c2ln"));
        assert!(!looks_like_jwt("eyJh.eyJz"));
        assert!(!looks_like_jwt("a.b.c.d"));
        assert!(!looks_like_jwt("a.b+.c"));
        assert!(!looks_like_jwt("opaque-token"));
    }

    #[test]
    fn scopes() {
        assert_eq!(split_scopes(" a  b a "), vec!["a", "b"]);
        let granted = vec!["a".to_owned()];
        let required = vec!["a".to_owned(), "b".to_owned()];
        assert_eq!(missing_scopes(&granted, &required), vec!["b"]);
        assert!(missing_scopes(&required, &required).is_empty());
    }

    #[test]
    fn challenge_rendering() {
        let scope = vec!["mcp:read".to_owned(), "mcp:write".to_owned()];
        let cases = [
            (ChallengeParams::default(), "Bearer"),
            (
                ChallengeParams {
                    resource_metadata: Some("https://a.example/.well-known/oauth-protected-resource/mcp"),
                    scope: &scope,
                    ..Default::default()
                },
                "Bearer scope=\"mcp:read mcp:write\", resource_metadata=\"https://a.example/.well-known/oauth-protected-resource/mcp\"",
            ),
            (
                ChallengeParams {
                    error: Some("invalid_token"),
                    error_description: Some("say \"hi\" \\ \u{7}é"),
                    resource_metadata: Some("u"),
                    ..Default::default()
                },
                "Bearer error=\"invalid_token\", error_description=\"say \\\"hi\\\" \\\\ \", resource_metadata=\"u\"",
            ),
        ];
        for (params, want) in cases {
            assert_eq!(params.render(), want);
        }
    }
}
