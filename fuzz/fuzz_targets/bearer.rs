//! Fuzz target: the resource server's bearer parsing and challenge writing
//! (`switchboard-transport`'s `http/resource/bearer.rs`, included by path: that
//! file depends on `std` only, so this crate needs none of the transport's
//! dependencies).
//!
//! The input is `AUTHORIZATION \0 QUERY \0 CHALLENGE-TEXT` (missing parts are
//! empty; an empty first part means no header). Invariants: never panics; a
//! token read is a b64token and reads back the same from `Bearer <token>`; a
//! query naming `access_token` is always refused; a JWT-shaped token has
//! exactly two dots; a rendered challenge is a valid header value (visible
//! ASCII and spaces) starting with `Bearer`; scopes split and joined split
//! the same.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/switchboard-transport/src/http/resource/bearer.rs"]
#[allow(dead_code)]
mod bearer;

use bearer::{bearer_token, is_b64token, looks_like_jwt, split_scopes, BearerError, ChallengeParams};

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |b| *b == 0);
    let header = parts.next().unwrap_or(&[]);
    let query = parts.next().map(String::from_utf8_lossy);
    let text = String::from_utf8_lossy(parts.next().unwrap_or(&[]));

    let headers: Vec<&[u8]> = if header.is_empty() { Vec::new() } else { vec![header] };
    let got = bearer_token(&headers, query.as_deref());
    if query.as_deref().is_some_and(|q| q.split('&').any(|p| p.split('=').next() == Some("access_token"))) {
        assert_eq!(got, Err(BearerError::InQuery));
    }
    if let Ok(Some(token)) = got {
        assert!(is_b64token(token));
        let again = format!("Bearer {token}");
        assert_eq!(bearer_token(&[again.as_bytes()], None), Ok(Some(token)));
        if looks_like_jwt(token) {
            assert_eq!(token.matches('.').count(), 2);
        }
    }
    // Two headers are always refused, whatever they hold.
    assert_eq!(bearer_token(&[header, header], None), Err(BearerError::Repeated));

    let scopes = split_scopes(&text);
    assert_eq!(split_scopes(&scopes.join(" ")), scopes);
    let rendered = ChallengeParams {
        error: Some(&text),
        error_description: query.as_deref(),
        scope: &scopes,
        resource_metadata: Some(&text),
    }
    .render();
    assert!(rendered.starts_with("Bearer"));
    assert!(rendered.bytes().all(|b| (b' '..=b'~').contains(&b)));
});
