//! `WWW-Authenticate` challenges, parsed: the `Bearer` challenge of a 401 or a
//! 403 from a protected MCP server.
//!
//! Sources: RFC 9110 §11.6.1 (the header's grammar: challenges separated by
//! commas, each a scheme then a token68 or `name=value` parameters, values a token
//! or a quoted string), RFC 6750 §3 (the `Bearer` scheme: `scope`, `error`,
//! `error_description`), RFC 9728 §5.1 (`resource_metadata`), MCP 2025-11-25
//! "Authorization → Scope challenge handling" (a 403 with
//! `error="insufficient_scope"` asks for a step-up).
//!
//! Pure functions; never panics on any input (fuzzed with the other parsers).

use http::header::{HeaderMap, WWW_AUTHENTICATE};
use http::StatusCode;

/// One challenge of a `WWW-Authenticate` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// The auth scheme as written (`Bearer`, `DPoP`, `Basic`, ...).
    pub scheme: String,
    /// `name=value` parameters in order, names lowercased, quoted strings unescaped.
    pub params: Vec<(String, String)>,
    /// The token68 form, when the challenge has one instead of parameters.
    pub token68: Option<String>,
}

impl Challenge {
    /// The value of parameter `name` (lowercase), the first one when repeated.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What a protected resource's `Bearer` challenge tells the client.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BearerChallenge {
    /// `resource_metadata`: the URL of its Protected Resource Metadata (RFC 9728 §5.1).
    pub resource_metadata: Option<String>,
    /// `scope`: space-separated scopes the resource needs.
    pub scope: Option<String>,
    /// `error`: `invalid_token`, `insufficient_scope`, ...
    pub error: Option<String>,
    /// `error_description`, for messages.
    pub error_description: Option<String>,
}

impl BearerChallenge {
    /// The scopes of `scope`, split on spaces (none when absent or blank).
    pub fn scopes(&self) -> Vec<String> {
        split_scopes(self.scope.as_deref())
    }

    /// Whether this is a step-up request (`error="insufficient_scope"`).
    pub fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }

    /// The `Bearer` challenge among the `WWW-Authenticate` headers of a
    /// response; an empty one (every field `None`) when there is none. A value
    /// with bytes beyond ASCII (RFC 9110 `obs-text`, e.g. in an
    /// `error_description`) is read as UTF-8, invalid sequences replaced, so its
    /// other parameters still count.
    pub fn from_headers(headers: &HeaderMap) -> Self {
        let mut found = BearerChallenge::default();
        for value in headers.get_all(WWW_AUTHENTICATE) {
            let text = String::from_utf8_lossy(value.as_bytes());
            if let Some(c) = parse(&text)
                .into_iter()
                .find(|c| c.scheme.eq_ignore_ascii_case("bearer"))
            {
                let get = |n: &str| c.param(n).map(str::to_owned);
                found = BearerChallenge {
                    resource_metadata: get("resource_metadata"),
                    scope: get("scope"),
                    error: get("error"),
                    error_description: get("error_description"),
                };
                break;
            }
        }
        found
    }
}

/// Whether a response is an authorization challenge the OAuth client answers:
/// any 401, and a 403 whose `Bearer` challenge says `insufficient_scope` (another
/// 403 is a refusal no token changes).
pub fn is_challenge(status: StatusCode, headers: &HeaderMap) -> bool {
    status == StatusCode::UNAUTHORIZED
        || (status == StatusCode::FORBIDDEN
            && BearerChallenge::from_headers(headers).insufficient_scope())
}

/// Space-separated scopes, empty entries dropped.
pub fn split_scopes(scope: Option<&str>) -> Vec<String> {
    scope
        .unwrap_or("")
        .split(' ')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn is_token68_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~+/".contains(&b)
}

/// Parses a `WWW-Authenticate` value into its challenges (RFC 9110 §11.6.1),
/// leniently: what does not parse is skipped up to the next comma.
pub fn parse(header: &str) -> Vec<Challenge> {
    let b = header.as_bytes();
    let mut i = 0;
    let mut out: Vec<Challenge> = Vec::new();
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && (b[*i] == b' ' || b[*i] == b'\t') {
            *i += 1;
        }
    };
    let token = |i: &mut usize| -> String {
        let start = *i;
        while *i < b.len() && is_tchar(b[*i]) {
            *i += 1;
        }
        header[start..*i].to_owned()
    };
    loop {
        skip_ws(&mut i);
        while i < b.len() && b[i] == b',' {
            i += 1;
            skip_ws(&mut i);
        }
        if i >= b.len() {
            break;
        }
        let name = token(&mut i);
        if name.is_empty() {
            // Not a token: skip to the next comma.
            while i < b.len() && b[i] != b',' {
                i += 1;
            }
            continue;
        }
        skip_ws(&mut i);
        // `name=` then a value (not `==`, which ends a token68) is a parameter of
        // the current challenge.
        let is_param = i < b.len()
            && b[i] == b'='
            && !out.is_empty()
            && !(i + 1 < b.len() && b[i + 1] == b'=');
        if is_param {
            // A parameter of the current challenge.
            i += 1;
            skip_ws(&mut i);
            let value = if i < b.len() && b[i] == b'"' {
                i += 1;
                let mut v = String::new();
                let mut chars = header[i..].char_indices();
                let mut end = header.len() - i;
                while let Some((k, c)) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some((_, n)) = chars.next() {
                                v.push(n);
                            }
                        }
                        '"' => {
                            end = k + 1;
                            break;
                        }
                        c => v.push(c),
                    }
                }
                i += end;
                v
            } else {
                token(&mut i)
            };
            if let Some(c) = out.last_mut() {
                c.params.push((name.to_ascii_lowercase(), value));
            }
            skip_ws(&mut i);
            while i < b.len() && b[i] != b',' {
                i += 1;
            }
            continue;
        }
        // A new challenge: the scheme, then maybe a token68 or parameters.
        let mut challenge = Challenge {
            scheme: name,
            params: Vec::new(),
            token68: None,
        };
        skip_ws(&mut i);
        if !looks_like_param(&header[i..]) {
            let mut j = i;
            while j < b.len() && is_token68_char(b[j]) {
                j += 1;
            }
            while j < b.len() && b[j] == b'=' {
                j += 1;
            }
            let mut k = j;
            skip_ws(&mut k);
            if j > i && (k >= b.len() || b[k] == b',') {
                challenge.token68 = Some(header[i..j].to_owned());
                i = j;
            }
        }
        out.push(challenge);
    }
    out
}

/// Whether the text after a comma starts a `name=value` parameter (so the token
/// before it was a parameter-less scheme, not a token68).
fn looks_like_param(text: &str) -> bool {
    let t = text.trim_start_matches([',', ' ', '\t']);
    let name_len = t.bytes().take_while(|b| is_tchar(*b)).count();
    let Some(value) = t[name_len..].trim_start().strip_prefix('=') else {
        return false;
    };
    // `abc==` and `abc=` at the end are token68 padding, not `name=value`.
    let value = value.trim_start();
    name_len > 0 && !value.is_empty() && !value.starts_with([',', '='])
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    /// Found by fuzzing: a value with non-ASCII bytes was skipped whole, losing
    /// its `resource_metadata`.
    #[test]
    fn a_value_with_non_ascii_bytes_still_counts() {
        let mut h = HeaderMap::new();
        h.insert(
            WWW_AUTHENTICATE,
            HeaderValue::from_bytes(
                b"Bearer error_description=\"caf\xc3\xa9 \xff\", resource_metadata=\"https://a/x\"",
            )
            .unwrap(),
        );
        let b = BearerChallenge::from_headers(&h);
        assert_eq!(b.resource_metadata.as_deref(), Some("https://a/x"));
        assert_eq!(b.error_description.as_deref(), Some("café \u{fffd}"));
    }

    #[test]
    fn a_bearer_challenge_with_quoted_and_token_params() {
        let c = parse(
            r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp", error_description="need \"write\"""#,
        );
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].scheme, "Bearer");
        assert_eq!(c[0].param("error"), Some("insufficient_scope"));
        assert_eq!(c[0].param("scope"), Some("mcp:basic mcp:write"));
        assert_eq!(
            c[0].param("resource_metadata"),
            Some("https://a.example/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c[0].param("error_description"), Some(r#"need "write""#));
    }

    #[test]
    fn several_challenges_and_token68() {
        let c = parse(r#"Basic realm="x", Bearer realm=api, scope=read, Negotiate abc123=="#);
        let schemes: Vec<_> = c.iter().map(|c| c.scheme.as_str()).collect();
        assert_eq!(schemes, ["Basic", "Bearer", "Negotiate"]);
        assert_eq!(c[1].param("realm"), Some("api"));
        assert_eq!(c[1].param("scope"), Some("read"));
        assert_eq!(c[2].token68.as_deref(), Some("abc123=="));
        let c = parse("Bearer");
        assert_eq!(c.len(), 1);
        assert!(c[0].params.is_empty());
        let c = parse("Bearer, DPoP algs=\"ES256\"");
        assert_eq!(c.len(), 2);
        assert_eq!(c[1].param("algs"), Some("ES256"));
    }

    #[test]
    fn bearer_from_headers_and_the_step_up_test() {
        let mut h = HeaderMap::new();
        h.append(
            WWW_AUTHENTICATE,
            HeaderValue::from_static("DPoP algs=\"ES256\""),
        );
        h.append(
            WWW_AUTHENTICATE,
            HeaderValue::from_static(
                "bearer scope=\"mcp:write\", error=\"insufficient_scope\", resource_metadata=\"http://x/m\"",
            ),
        );
        let b = BearerChallenge::from_headers(&h);
        assert_eq!(b.scopes(), ["mcp:write"]);
        assert!(b.insufficient_scope());
        assert_eq!(b.resource_metadata.as_deref(), Some("http://x/m"));
        assert!(is_challenge(StatusCode::FORBIDDEN, &h));
        assert!(is_challenge(StatusCode::UNAUTHORIZED, &HeaderMap::new()));
        assert!(!is_challenge(StatusCode::FORBIDDEN, &HeaderMap::new()));
        assert_eq!(
            BearerChallenge::from_headers(&HeaderMap::new()),
            BearerChallenge::default()
        );
    }

    proptest::proptest! {
        /// Any text, and any text after a valid challenge, parses without a
        /// panic; a well-formed `Bearer` challenge after arbitrary earlier ones is
        /// still found with its parameters.
        #[test]
        fn any_header_parses_and_a_trailing_bearer_is_found(
            any in "[ -~\\t]{0,80}",
            junk in "[ !#-\\[\\]-~\\t]{0,80}",
            scope in "[a-z:]{1,12}( [a-z:]{1,12}){0,3}",
        ) {
            let _ = parse(&any);
            let _ = parse(&format!("{any}, Bearer scope=\"{scope}\""));
            // Junk without quotes or backslashes cannot open a quoted string
            // that would swallow the rest (a stray quote in junk can, wherever
            // it stands: no rule on the junk alone tells).
            let text = format!("{junk}, Bearer scope=\"{scope}\", error=insufficient_scope");
            let found = parse(&text)
                .into_iter()
                .rfind(|c| c.scheme == "Bearer")
                .map(|c| (c.param("scope").map(str::to_owned), c.param("error").map(str::to_owned)));
            proptest::prop_assert_eq!(
                found,
                Some((Some(scope.clone()), Some("insufficient_scope".to_owned())))
            );
        }
    }

    #[test]
    fn garbage_never_panics() {
        for s in [
            "",
            ",",
            "=",
            "\"",
            "Bearer =",
            "Bearer a=\"unterminated",
            "Bearer a=\"\\",
            "é=ü, Bearer scope=\"日本\"",
            "Bearer ,,, a = b",
            "== ,",
            "Bearer a==b",
        ] {
            let _ = parse(s);
        }
        assert_eq!(
            parse("Bearer scope=\"日本\"")[0].param("scope"),
            Some("日本")
        );
    }
}
