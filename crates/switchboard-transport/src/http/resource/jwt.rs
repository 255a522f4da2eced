//! JWT access tokens checked against the issuer's keys: sans-IO (the key set
//! and the time are passed in).
//!
//! Sources: RFC 7515/7519 (JWS, JWT), RFC 8725 §3.1-3.2 (the algorithm is
//! checked against an allowlist and against the key's type: never `none`,
//! never an HMAC key made of a public key), RFC 9068 (JWT access tokens:
//! `iss`, `aud`, `exp`, `sub`, `client_id`, `scope`), RFC 8707 and MCP
//! 2025-06-18+ "Authorization → Token Audience Binding and Validation" (`aud`
//! must name this resource), RFC 7517 (JWK sets).
//!
//! It must not know where the keys come from (module `keys`), HTTP, or the
//! clock: `now` is a Unix time in seconds given by the caller.

use base64::Engine as _;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;

use super::{Principal, TokenError};

/// The algorithms accepted by default: RSA (PKCS#1 v1.5 and PSS), ECDSA P-256
/// and P-384, and EdDSA (Ed25519). HMAC is never accepted (a resource server
/// holds no shared secret with the issuer), nor `none`.
pub const DEFAULT_ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// One usable verification key of a JWK set.
struct Key {
    kid: Option<String>,
    /// The JWK's own `alg`, when it names one: the only one it verifies.
    alg: Option<Algorithm>,
    key: DecodingKey,
}

/// The verification keys of a JWK set: asymmetric keys meant for signatures
/// (`use` absent or `sig`); symmetric (`oct`) keys and keys that do not parse
/// are left out.
#[derive(Default)]
pub struct KeySet {
    keys: Vec<Key>,
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.keys.iter().map(|k| &k.kid))
            .finish()
    }
}

/// The outcome of looking a token's key up.
enum Lookup<'a> {
    Found(&'a DecodingKey),
    /// The token names a `kid` the set lacks (the issuer may have rotated its
    /// keys: the caller fetches the set again, within its rate).
    UnknownKid,
    /// No `kid`, and not exactly one key of the algorithm's family.
    Ambiguous,
    /// The `kid`'s key names another algorithm (its JWK `alg`).
    OtherAlgorithm,
}

impl KeySet {
    /// The usable keys of `set`.
    pub fn from_jwks(set: &JwkSet) -> KeySet {
        let keys = set.keys.iter().filter_map(usable).collect();
        KeySet { keys }
    }

    /// The usable keys of a JWK set document (RFC 7517 §5, `{"keys": [...]}`);
    /// a key this crate does not know is left out, not an error.
    pub fn from_json(text: &[u8]) -> Result<KeySet, serde_json::Error> {
        #[derive(Deserialize)]
        struct Raw {
            keys: Vec<serde_json::Value>,
        }
        let raw: Raw = serde_json::from_slice(text)?;
        let keys = raw
            .keys
            .into_iter()
            .filter_map(|k| serde_json::from_value::<Jwk>(k).ok())
            .filter_map(|k| usable(&k))
            .collect();
        Ok(KeySet { keys })
    }

    /// How many usable keys it holds.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether it holds no usable key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Whether a key with this `kid` is in the set.
    pub fn has_kid(&self, kid: &str) -> bool {
        self.keys.iter().any(|k| k.kid.as_deref() == Some(kid))
    }

    fn lookup(&self, kid: Option<&str>, alg: Algorithm) -> Lookup<'_> {
        let fits = |k: &&Key| k.key.family() == alg.family() && k.alg.is_none_or(|a| a == alg);
        match kid {
            Some(kid) => match self.keys.iter().find(|k| k.kid.as_deref() == Some(kid)) {
                Some(k) if k.alg.is_some_and(|a| a != alg) => Lookup::OtherAlgorithm,
                Some(k) => Lookup::Found(&k.key),
                None => Lookup::UnknownKid,
            },
            None => {
                let mut candidates = self.keys.iter().filter(fits);
                match (candidates.next(), candidates.next()) {
                    (Some(k), None) => Lookup::Found(&k.key),
                    _ => Lookup::Ambiguous,
                }
            }
        }
    }
}

fn usable(jwk: &Jwk) -> Option<Key> {
    if matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)) {
        return None;
    }
    if jwk
        .common
        .public_key_use
        .as_ref()
        .is_some_and(|u| *u != PublicKeyUse::Signature)
    {
        return None;
    }
    let alg = match jwk.common.key_algorithm {
        Some(a) => Some(a.to_string().parse::<Algorithm>().ok()?),
        None => None,
    };
    Some(Key {
        kid: jwk.common.key_id.clone(),
        alg,
        key: DecodingKey::from_jwk(jwk).ok()?,
    })
}

/// What a token must say to be accepted here.
#[derive(Debug, Clone, Copy)]
pub struct Expectations<'a> {
    /// `iss`, compared exactly (RFC 9068 §4).
    pub issuer: &'a str,
    /// Must be `aud` or one of its entries, exactly (RFC 8707).
    pub resource: &'a str,
    /// The algorithms accepted (HMAC ones are refused whatever this says).
    pub algorithms: &'a [Algorithm],
    /// Clock skew allowed on `exp` and `nbf`, in seconds.
    pub leeway: u64,
}

/// The registered claims read here, each optional (their absence is judged
/// below); other claims are ignored.
#[derive(Debug, Deserialize)]
struct Claims {
    iss: Option<String>,
    aud: Option<OneOrMany>,
    exp: Option<f64>,
    nbf: Option<f64>,
    sub: Option<String>,
    client_id: Option<String>,
    azp: Option<String>,
    scope: Option<String>,
    scp: Option<OneOrMany>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn contains(&self, s: &str) -> bool {
        match self {
            OneOrMany::One(one) => one == s,
            OneOrMany::Many(many) => many.iter().any(|m| m == s),
        }
    }
}

/// The protected header's members read before any key is touched.
#[derive(Deserialize)]
struct RawHeader {
    alg: Option<String>,
    kid: Option<String>,
}

/// The header's `alg` (as written) and `kid`, read without trusting anything.
fn raw_header(token: &str) -> Result<(String, Option<String>), TokenError> {
    let first = token.split('.').next().unwrap_or("");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(first)
        .map_err(|_| TokenError::Malformed("the header is not base64url".into()))?;
    let header: RawHeader = serde_json::from_slice(&bytes)
        .map_err(|_| TokenError::Malformed("the header is not a JSON object".into()))?;
    let alg = header
        .alg
        .ok_or_else(|| TokenError::Malformed("the header has no alg".into()))?;
    Ok((alg, header.kid))
}

/// The `kid` of a token's header, read without trusting anything (`None`
/// when absent or unreadable): which key set to look in.
pub fn header_kid(token: &str) -> Option<String> {
    raw_header(token).ok().and_then(|(_, kid)| kid)
}

/// `alg_name` when it is one of `expect.algorithms` and not HMAC
/// ([`TokenError::Algorithm`] otherwise: `none`, `HS256`, ...).
fn allowed(alg_name: &str, expect: &Expectations<'_>) -> Result<Algorithm, TokenError> {
    alg_name
        .parse::<Algorithm>()
        .ok()
        .filter(|a| {
            expect.algorithms.contains(a) && a.family() != jsonwebtoken::AlgorithmFamily::Hmac
        })
        .ok_or_else(|| TokenError::Algorithm(alg_name.to_owned()))
}

/// What can be refused of a JWT before any key is fetched, read without
/// trusting it: an unreadable header or payload ([`TokenError::Malformed`]),
/// an `alg` not allowed, and the claims [`validate`] checks (`iss`, `aud`,
/// `exp`, `nbf`, a subject), with the same errors. `Ok` proves nothing:
/// [`validate`] checks everything again once the signature verifies. It
/// spares the key set a fetch for a token that can never be valid, and the
/// caller a 503 for one when the issuer is unreachable.
pub fn precheck(token: &str, expect: &Expectations<'_>, now: u64) -> Result<(), TokenError> {
    let (alg_name, _) = raw_header(token)?;
    allowed(&alg_name, expect)?;
    let payload = token.split('.').nth(1).unwrap_or("");
    let claims: Claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(|| TokenError::Malformed("the payload is not a JSON object".into()))?;
    check_claims(claims, expect, now).map(|_| ())
}

/// Checks a JWT access token (JWS compact form) at Unix time `now` (seconds).
///
/// In order: the header's `alg` is one of `expect.algorithms` and not HMAC
/// ([`TokenError::Algorithm`]: `none`, `HS256`, ...); its key is found by
/// `kid` ([`TokenError::UnknownKey`] when the set lacks that `kid`: the caller
/// may fetch the set again) or, without a `kid`, is the set's only key of that
/// algorithm's type; the key's type matches the algorithm; the signature
/// verifies ([`TokenError::Signature`]); `iss` equals the issuer
/// ([`TokenError::Issuer`]); `aud` contains the resource
/// ([`TokenError::Audience`]); `exp` is present and `now <= exp + leeway`
/// ([`TokenError::Expired`]); `nbf`, when present, `<= now + leeway`
/// ([`TokenError::NotYetValid`]); a subject exists (`sub`, else `client_id`:
/// [`TokenError::NoSubject`]).
///
/// The [`Principal`]: `sub` (else `client_id`), `client_id` (else `azp`), and
/// the scopes of `scope` (space-separated) or `scp` (a string or an array).
pub fn validate(
    token: &str,
    keys: &KeySet,
    expect: &Expectations<'_>,
    now: u64,
) -> Result<Principal, TokenError> {
    let (alg_name, kid) = raw_header(token)?;
    let alg = allowed(&alg_name, expect)?;
    let key = match keys.lookup(kid.as_deref(), alg) {
        Lookup::Found(key) => key,
        Lookup::UnknownKid => return Err(TokenError::UnknownKey(kid)),
        Lookup::Ambiguous => return Err(TokenError::UnknownKey(None)),
        Lookup::OtherAlgorithm => return Err(TokenError::Algorithm(alg_name)),
    };
    if key.family() != alg.family() {
        return Err(TokenError::Algorithm(alg_name));
    }
    let mut validation = Validation::new(alg);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    let claims = jsonwebtoken::decode::<Claims>(token, key, &validation)
        .map_err(|e| match e.kind() {
            jsonwebtoken::errors::ErrorKind::InvalidSignature => TokenError::Signature,
            jsonwebtoken::errors::ErrorKind::InvalidAlgorithm
            | jsonwebtoken::errors::ErrorKind::InvalidAlgorithmName => {
                TokenError::Algorithm(alg_name.clone())
            }
            // A key that cannot verify (a malformed EC point) is the key set's
            // fault, but the token cannot be accepted either way.
            other => TokenError::Malformed(format!("{other:?}")),
        })?
        .claims;
    check_claims(claims, expect, now)
}

fn check_claims(
    claims: Claims,
    expect: &Expectations<'_>,
    now: u64,
) -> Result<Principal, TokenError> {
    match claims.iss.as_deref() {
        Some(iss) if iss == expect.issuer => {}
        found => {
            return Err(TokenError::Issuer {
                found: found.map(str::to_owned),
            })
        }
    }
    if !claims
        .aud
        .as_ref()
        .is_some_and(|a| a.contains(expect.resource))
    {
        return Err(TokenError::Audience);
    }
    let now = now as f64;
    let leeway = expect.leeway as f64;
    match claims.exp {
        Some(exp) if now <= exp + leeway => {}
        _ => return Err(TokenError::Expired),
    }
    if claims.nbf.is_some_and(|nbf| nbf > now + leeway) {
        return Err(TokenError::NotYetValid);
    }
    let client_id = claims.client_id.or(claims.azp);
    let subject = claims
        .sub
        .filter(|s| !s.is_empty())
        .or_else(|| client_id.clone())
        .ok_or(TokenError::NoSubject)?;
    let scopes = match (claims.scope, claims.scp) {
        (Some(scope), _) => super::bearer::split_scopes(&scope),
        (None, Some(OneOrMany::One(s))) => super::bearer::split_scopes(&s),
        (None, Some(OneOrMany::Many(m))) => m,
        (None, None) => Vec::new(),
    };
    Ok(Principal {
        subject,
        client_id,
        scopes,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use jsonwebtoken::{EncodingKey, Header};
    use serde_json::json;

    /// Test keys (generated once with openssl; test use only): two Ed25519
    /// keys (PKCS#8 DER, public `x`) and a P-256 one (PKCS#8 DER, `x`, `y`).
    pub(crate) const ED1: (&str, &str) = (
        "MC4CAQAwBQYDK2VwBCIEIGbIJxeyCFvPWHF1osnaF7a7SRfGYtDWKd9GvtLBMd0M",
        "GjzkVYDne0KflCZIk0dgxf3GXm-1Gp8dWERqzRxmhrM",
    );
    pub(crate) const ED2: (&str, &str) = (
        "MC4CAQAwBQYDK2VwBCIEINdVHvxRN65SOKrVlDhmAR6qtYWUkdqXgjFhzJeHfZ0O",
        "BUUIKFBZKZhW_ihB4W_eWwNPvY5HpfwMnE7Bn9vGagY",
    );
    const EC: (&str, &str, &str) = (
        "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgGD6LW7Zx3dMYwOf5k9sJmPdZLeN1ugYSxQ3CkJ77CjqhRANCAAR1uLfnpTjLOfMyjE8Na2QXPlj4wyppd3MY7Z5SPdW9AcwIMW46p896Em9a9TvuHGdLR0DRfr6n/pugAuxxhzMK",
        "dbi356U4yznzMoxPDWtkFz5Y-MMqaXdzGO2eUj3VvQE",
        "zAgxbjqnz3oSb1r1O-4cZ0tHQNF-vqf-m6AC7HGHMwo",
    );

    fn der(b64: &str) -> Vec<u8> {
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap()
    }

    pub(crate) fn ed_jwk(kid: &str, x: &str) -> serde_json::Value {
        json!({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "use": "sig", "alg": "EdDSA"})
    }

    pub(crate) fn sign_ed(
        kid: Option<&str>,
        key: (&str, &str),
        claims: &serde_json::Value,
    ) -> String {
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = kid.map(str::to_owned);
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_ed_der(&der(key.0))).unwrap()
    }

    /// A token whose header is `header` (as JSON) and whose signature is
    /// `sig` (base64url), for the shapes no signer makes.
    fn raw_token(header: serde_json::Value, claims: &serde_json::Value, sig: &str) -> String {
        let e = |v: &serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap())
        };
        format!("{}.{}.{sig}", e(&header), e(claims))
    }

    const ISS: &str = "https://as.example";
    const RES: &str = "https://mcp.example/mcp";
    const NOW: u64 = 1_800_000_000;

    fn claims() -> serde_json::Value {
        json!({"iss": ISS, "aud": RES, "exp": NOW + 300, "sub": "alice", "client_id": "app", "scope": "mcp:read mcp:write"})
    }

    fn with(mut c: serde_json::Value, key: &str, value: serde_json::Value) -> serde_json::Value {
        if value.is_null() {
            c.as_object_mut().unwrap().remove(key);
        } else {
            c[key] = value;
        }
        c
    }

    fn keyset() -> KeySet {
        let set = json!({"keys": [
            ed_jwk("k1", ED1.1),
            {"kty": "EC", "crv": "P-256", "x": EC.1, "y": EC.2, "kid": "ec1", "use": "sig", "alg": "ES256"},
            {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"},
            {"kty": "OKP", "crv": "Ed25519", "x": ED2.1, "kid": "enc", "use": "enc"},
            {"kty": "weird", "kid": "unknown-type"},
        ]});
        KeySet::from_json(set.to_string().as_bytes()).unwrap()
    }

    fn expect() -> Expectations<'static> {
        Expectations {
            issuer: ISS,
            resource: RES,
            algorithms: DEFAULT_ALGORITHMS,
            leeway: 60,
        }
    }

    #[test]
    fn keyset_keeps_only_signature_keys() {
        let keys = keyset();
        assert_eq!(keys.len(), 2);
        assert!(keys.has_kid("k1") && keys.has_kid("ec1"));
        assert!(!keys.has_kid("hmac") && !keys.has_kid("enc"));
    }

    #[test]
    fn table() {
        let keys = keyset();
        let ok = sign_ed(Some("k1"), ED1, &claims());
        let public_x = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(ED1.1)
            .unwrap();
        let mut hs = Header::new(Algorithm::HS256);
        hs.kid = Some("k1".into());
        let hmac_with_public =
            jsonwebtoken::encode(&hs, &claims(), &EncodingKey::from_secret(&public_x)).unwrap();
        let mut es = Header::new(Algorithm::ES256);
        es.kid = Some("ec1".into());
        let ec_ok =
            jsonwebtoken::encode(&es, &claims(), &EncodingKey::from_ec_der(&der(EC.0))).unwrap();
        let mut tampered = ok.clone();
        tampered.replace_range(tampered.len() - 4.., "AAAA");
        let alg_none = raw_token(json!({"alg": "none", "kid": "k1"}), &claims(), "");
        let alg_none_sig = raw_token(json!({"alg": "none"}), &claims(), "c2ln");
        // The EdDSA header on a P-256 key: right kid, wrong key type.
        let mut ed_on_ec = Header::new(Algorithm::EdDSA);
        ed_on_ec.kid = Some("ec1".into());
        let ed_on_ec =
            jsonwebtoken::encode(&ed_on_ec, &claims(), &EncodingKey::from_ed_der(&der(ED1.0)))
                .unwrap();

        // A JWK that names its algorithm verifies that one only.
        let es384_on_es256 = raw_token(json!({"alg": "ES384", "kid": "ec1"}), &claims(), "c2ln");
        type Want = Result<&'static str, TokenError>;
        let cases: Vec<(&str, String, u64, Want)> = vec![
            ("valid", ok.clone(), NOW, Ok("alice")),
            ("valid ES256", ec_ok, NOW, Ok("alice")),
            (
                "valid, no kid, one Ed key",
                sign_ed(None, ED1, &claims()),
                NOW,
                Ok("alice"),
            ),
            (
                "expired",
                ok.clone(),
                NOW + 300 + 61,
                Err(TokenError::Expired),
            ),
            (
                "expired within leeway",
                ok.clone(),
                NOW + 300 + 60,
                Ok("alice"),
            ),
            (
                "no exp",
                sign_ed(Some("k1"), ED1, &with(claims(), "exp", json!(null))),
                NOW,
                Err(TokenError::Expired),
            ),
            (
                "not yet valid",
                sign_ed(Some("k1"), ED1, &with(claims(), "nbf", json!(NOW + 61))),
                NOW,
                Err(TokenError::NotYetValid),
            ),
            (
                "nbf within leeway",
                sign_ed(Some("k1"), ED1, &with(claims(), "nbf", json!(NOW + 60))),
                NOW,
                Ok("alice"),
            ),
            (
                "wrong issuer",
                sign_ed(
                    Some("k1"),
                    ED1,
                    &with(claims(), "iss", json!("https://as.example/")),
                ),
                NOW,
                Err(TokenError::Issuer {
                    found: Some("https://as.example/".into()),
                }),
            ),
            (
                "no issuer",
                sign_ed(Some("k1"), ED1, &with(claims(), "iss", json!(null))),
                NOW,
                Err(TokenError::Issuer { found: None }),
            ),
            (
                "wrong audience",
                sign_ed(
                    Some("k1"),
                    ED1,
                    &with(claims(), "aud", json!("https://mcp.example/mcp/")),
                ),
                NOW,
                Err(TokenError::Audience),
            ),
            (
                "audience array",
                sign_ed(Some("k1"), ED1, &with(claims(), "aud", json!(["x", RES]))),
                NOW,
                Ok("alice"),
            ),
            (
                "no audience",
                sign_ed(Some("k1"), ED1, &with(claims(), "aud", json!(null))),
                NOW,
                Err(TokenError::Audience),
            ),
            ("bad signature", tampered, NOW, Err(TokenError::Signature)),
            (
                "signed by another key",
                sign_ed(Some("k1"), ED2, &claims()),
                NOW,
                Err(TokenError::Signature),
            ),
            (
                "alg none",
                alg_none,
                NOW,
                Err(TokenError::Algorithm("none".into())),
            ),
            (
                "alg none, no kid",
                alg_none_sig,
                NOW,
                Err(TokenError::Algorithm("none".into())),
            ),
            (
                "HS256 with the public key",
                hmac_with_public,
                NOW,
                Err(TokenError::Algorithm("HS256".into())),
            ),
            (
                "EdDSA header on an EC key",
                ed_on_ec,
                NOW,
                Err(TokenError::Algorithm("EdDSA".into())),
            ),
            (
                "unknown kid",
                sign_ed(Some("k9"), ED2, &claims()),
                NOW,
                Err(TokenError::UnknownKey(Some("k9".into()))),
            ),
            (
                "ES384 header on an ES256 key",
                es384_on_es256,
                NOW,
                Err(TokenError::Algorithm("ES384".into())),
            ),
            (
                "client_id as subject",
                sign_ed(Some("k1"), ED1, &with(claims(), "sub", json!(null))),
                NOW,
                Ok("app"),
            ),
            (
                "no subject",
                sign_ed(
                    Some("k1"),
                    ED1,
                    &with(with(claims(), "sub", json!(null)), "client_id", json!(null)),
                ),
                NOW,
                Err(TokenError::NoSubject),
            ),
            (
                "not a JWT header",
                "e30.e30.c2ln".to_owned(),
                NOW,
                Err(TokenError::Malformed("the header has no alg".into())),
            ),
        ];
        for (name, token, now, want) in cases {
            let got = validate(&token, &keys, &expect(), now).map(|p| p.subject);
            assert_eq!(got.as_deref().map_err(Clone::clone), want, "{name}");
        }
    }

    #[test]
    fn principal_fields() {
        let keys = keyset();
        let p = validate(&sign_ed(Some("k1"), ED1, &claims()), &keys, &expect(), NOW).unwrap();
        assert_eq!(p.client_id.as_deref(), Some("app"));
        assert_eq!(p.scopes, vec!["mcp:read", "mcp:write"]);
        let scp = with(
            with(claims(), "scope", json!(null)),
            "scp",
            json!(["a", "b"]),
        );
        let p = validate(&sign_ed(Some("k1"), ED1, &scp), &keys, &expect(), NOW).unwrap();
        assert_eq!(p.scopes, vec!["a", "b"]);
        let azp = with(
            with(claims(), "client_id", json!(null)),
            "azp",
            json!("web"),
        );
        let p = validate(&sign_ed(Some("k1"), ED1, &azp), &keys, &expect(), NOW).unwrap();
        assert_eq!(p.client_id.as_deref(), Some("web"));
    }

    /// What is refused before any key is fetched: the same errors as after
    /// the signature, on the unverified token; a token that could be valid
    /// passes (its signature is not looked at).
    #[test]
    fn precheck_refuses_what_can_never_be_valid() {
        let ed = json!({"alg": "EdDSA", "kid": "k1"});
        let cases: Vec<(String, Result<(), TokenError>)> = vec![
            (raw_token(ed.clone(), &claims(), "bad-signature"), Ok(())),
            (
                raw_token(json!({"alg": "none"}), &claims(), ""),
                Err(TokenError::Algorithm("none".into())),
            ),
            (
                raw_token(
                    ed.clone(),
                    &with(claims(), "iss", json!("https://evil")),
                    "x",
                ),
                Err(TokenError::Issuer {
                    found: Some("https://evil".into()),
                }),
            ),
            (
                raw_token(
                    ed.clone(),
                    &with(claims(), "aud", json!("https://other")),
                    "x",
                ),
                Err(TokenError::Audience),
            ),
            (
                raw_token(ed.clone(), &with(claims(), "exp", json!(NOW - 3600)), "x"),
                Err(TokenError::Expired),
            ),
            (
                "abc.def.ghi".to_owned(),
                Err(TokenError::Malformed(
                    "the header is not a JSON object".into(),
                )),
            ),
            (
                format!(
                    "{}.!!.x",
                    raw_token(ed, &claims(), "x").split('.').next().unwrap()
                ),
                Err(TokenError::Malformed(
                    "the payload is not a JSON object".into(),
                )),
            ),
        ];
        for (i, (token, want)) in cases.into_iter().enumerate() {
            assert_eq!(precheck(&token, &expect(), NOW), want, "case {i}");
        }
    }

    proptest::proptest! {
        /// Any text, or three base64url parts of any JSON-ish bytes: never a
        /// panic, and never `Ok` for `alg: none`.
        #[test]
        fn precheck_never_panics(text in ".{0,200}", a in proptest::collection::vec(proptest::num::u8::ANY, 0..80), b in proptest::collection::vec(proptest::num::u8::ANY, 0..120)) {
            let _ = precheck(&text, &expect(), NOW);
            let e = |v: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
            let _ = precheck(&format!("{}.{}.x", e(&a), e(&b)), &expect(), NOW);
            let none = format!("{}.{}.", e(br#"{"alg":"none"}"#), e(&b));
            proptest::prop_assert!(precheck(&none, &expect(), NOW).is_err());
        }
    }

    #[test]
    fn restricted_algorithms() {
        let keys = keyset();
        let only_es = Expectations {
            algorithms: &[Algorithm::ES256],
            ..expect()
        };
        let got = validate(&sign_ed(Some("k1"), ED1, &claims()), &keys, &only_es, NOW);
        assert_eq!(got, Err(TokenError::Algorithm("EdDSA".into())));
        let with_hs = Expectations {
            algorithms: &[Algorithm::HS256, Algorithm::EdDSA],
            ..expect()
        };
        let mut hs = Header::new(Algorithm::HS256);
        hs.kid = Some("hmac".into());
        let token =
            jsonwebtoken::encode(&hs, &claims(), &EncodingKey::from_secret(b"secret")).unwrap();
        assert_eq!(
            validate(&token, &keys, &with_hs, NOW),
            Err(TokenError::Algorithm("HS256".into()))
        );
    }
}
