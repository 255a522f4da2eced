//! Fuzz target: the `WWW-Authenticate` challenge parser of the OAuth client
//! (`switchboard_transport::http::auth`, module `challenge`), which reads what
//! any server a client connects to sends.
//!
//! The input is the header's value. Invariants: never panics; every challenge
//! has a scheme made of token characters; parameter names are lowercase token
//! characters; a challenge has parameters or a token68, not both; the
//! `Bearer` challenge read from a header map holding the value is the first
//! `Bearer` challenge the parser finds; `is_challenge` holds for any 401.
#![no_main]

use http::header::{HeaderMap, HeaderValue, WWW_AUTHENTICATE};
use http::StatusCode;
use libfuzzer_sys::fuzz_target;
use switchboard_transport::http::auth::{is_challenge, parse_www_authenticate, BearerChallenge};

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let challenges = parse_www_authenticate(text);
    for c in &challenges {
        assert!(!c.scheme.is_empty() && c.scheme.chars().all(is_tchar), "{c:?}");
        for (name, _) in &c.params {
            assert!(!name.is_empty(), "{c:?}");
            assert!(
                name.chars().all(|ch| is_tchar(ch) && !ch.is_ascii_uppercase()),
                "{c:?}"
            );
        }
        assert!(c.token68.as_ref().is_none_or(|t| !t.is_empty()), "{c:?}");
    }
    // Through a header map, as the HTTP client sees it (only values that are
    // valid header values get there).
    let Ok(value) = HeaderValue::from_str(text) else {
        return;
    };
    let mut headers = HeaderMap::new();
    headers.insert(WWW_AUTHENTICATE, value);
    let bearer = BearerChallenge::from_headers(&headers);
    let first = challenges
        .iter()
        .find(|c| c.scheme.eq_ignore_ascii_case("bearer"));
    match first {
        Some(c) => {
            assert_eq!(bearer.resource_metadata.as_deref(), c.param("resource_metadata"));
            assert_eq!(bearer.scope.as_deref(), c.param("scope"));
            assert_eq!(bearer.error.as_deref(), c.param("error"));
        }
        None => assert_eq!(bearer, BearerChallenge::default()),
    }
    let _ = bearer.scopes();
    assert!(is_challenge(StatusCode::UNAUTHORIZED, &headers));
    let _ = is_challenge(StatusCode::FORBIDDEN, &headers);
});
