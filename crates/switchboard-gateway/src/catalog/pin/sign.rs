//! Signed locks: an Ed25519 signature over the exact bytes of a lock file, so
//! that every replica that shares the lock (a ConfigMap) enforces the same
//! approval and refuses one that was changed or signed by another key.
//!
//! Text forms, one line each: a public key `ed25519:BASE64` (32 bytes), a
//! secret key `ed25519-secret:BASE64` (the 32-byte seed), a signature
//! `ed25519:KEYID:BASE64` (64 bytes; KEYID is the first 8 bytes of the public
//! key's SHA-256 in hex, so that "signed by another key" is told apart from
//! "changed"). Pure but for [`generate`], which reads the system's CSPRNG.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use sha2::{Digest, Sha256};

const PUBLIC: &str = "ed25519:";
const SECRET: &str = "ed25519-secret:";

/// Why a lock's signature is refused, or a key cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// No signature where one is required.
    #[error("the lock is not signed")]
    Unsigned,
    /// The signature does not match the lock's bytes.
    #[error("the lock was changed after it was signed (the signature does not match)")]
    Tampered,
    /// Signed, but by a key other than the one given.
    #[error("the lock is signed by another key (key id {found}, expected {expected})")]
    OtherKey {
        /// The key id the signature names.
        found: String,
        /// The key id of the key given.
        expected: String,
    },
    /// A key or signature text that is not in its form.
    #[error("{0}")]
    Malformed(String),
}

/// A new key pair: (secret key text, public key text).
pub fn generate() -> Result<(String, String), getrandom::Error> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed)?;
    let key = SigningKey::from_bytes(&seed);
    seed.fill(0);
    let secret = format!("{SECRET}{}", STANDARD.encode(key.to_bytes()));
    Ok((secret, public_text(&key.verifying_key())))
}

/// The public key text of a secret key text.
pub fn public_of(secret: &str) -> Result<String, SignatureError> {
    Ok(public_text(&signing_key(secret)?.verifying_key()))
}

/// Checks that `public` is a public key text (`ed25519:BASE64`, 32 bytes, a
/// point of the curve), so that a caller can tell a bad key from a bad
/// signature.
pub fn check_public(public: &str) -> Result<(), SignatureError> {
    verifying_key(public).map(|_| ())
}

/// Signs `lock` (the file's exact bytes) with the secret key text.
pub fn sign(lock: &[u8], secret: &str) -> Result<String, SignatureError> {
    let key = signing_key(secret)?;
    let signature = key.sign(lock);
    Ok(format!(
        "{PUBLIC}{}:{}",
        key_id(&key.verifying_key()),
        STANDARD.encode(signature.to_bytes())
    ))
}

/// Checks `signature` (its text, `None` when there is none) over `lock` against
/// the public key text.
pub fn verify(lock: &[u8], signature: Option<&str>, public: &str) -> Result<(), SignatureError> {
    let key = verifying_key(public)?;
    let text = signature.map(str::trim).filter(|s| !s.is_empty());
    let text = text.ok_or(SignatureError::Unsigned)?;
    let malformed = || SignatureError::Malformed("a signature is ed25519:KEYID:BASE64".to_owned());
    let rest = text.strip_prefix(PUBLIC).ok_or_else(malformed)?;
    let (id, b64) = rest.split_once(':').ok_or_else(malformed)?;
    let expected = key_id(&key);
    if id != expected {
        return Err(SignatureError::OtherKey {
            found: id.to_owned(),
            expected,
        });
    }
    let bytes: [u8; 64] = STANDARD
        .decode(b64)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(malformed)?;
    key.verify(lock, &Signature::from_bytes(&bytes))
        .map_err(|_| SignatureError::Tampered)
}

fn public_text(key: &VerifyingKey) -> String {
    format!("{PUBLIC}{}", STANDARD.encode(key.to_bytes()))
}

fn key_id(key: &VerifyingKey) -> String {
    Sha256::digest(key.to_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn decode32(text: &str, prefix: &str, what: &str) -> Result<[u8; 32], SignatureError> {
    text.trim()
        .strip_prefix(prefix)
        .and_then(|b| STANDARD.decode(b).ok())
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| SignatureError::Malformed(format!("a {what} is {prefix}BASE64 (32 bytes)")))
}

fn signing_key(secret: &str) -> Result<SigningKey, SignatureError> {
    Ok(SigningKey::from_bytes(&decode32(
        secret,
        SECRET,
        "secret key",
    )?))
}

fn verifying_key(public: &str) -> Result<VerifyingKey, SignatureError> {
    VerifyingKey::from_bytes(&decode32(public, PUBLIC, "public key")?)
        .map_err(|_| SignatureError::Malformed("not an Ed25519 public key".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_lock_verifies_and_every_fault_is_told_apart() {
        let (secret, public) = generate().unwrap();
        assert_eq!(public_of(&secret).unwrap(), public);
        let lock = br#"{"version": 1, "upstreams": {}}"#;
        let sig = sign(lock, &secret).unwrap();
        assert_eq!(verify(lock, Some(&sig), &public), Ok(()));
        // Trailing newline of a .sig file is fine.
        assert_eq!(verify(lock, Some(&format!("{sig}\n")), &public), Ok(()));
        // One byte changed.
        let mut changed = lock.to_vec();
        changed[12] ^= 1;
        assert_eq!(
            verify(&changed, Some(&sig), &public),
            Err(SignatureError::Tampered)
        );
        // No signature.
        assert_eq!(verify(lock, None, &public), Err(SignatureError::Unsigned));
        assert_eq!(
            verify(lock, Some(" \n"), &public),
            Err(SignatureError::Unsigned)
        );
        // Another key.
        let (_, other) = generate().unwrap();
        assert!(matches!(
            verify(lock, Some(&sig), &other),
            Err(SignatureError::OtherKey { .. })
        ));
        // A signature from another key presented under this key's id.
        let (other_secret, _) = generate().unwrap();
        let forged = sign(lock, &other_secret).unwrap();
        let body = forged.rsplit(':').next().unwrap();
        let relabelled = format!(
            "{PUBLIC}{}:{body}",
            key_id(&verifying_key(&public).unwrap())
        );
        assert_eq!(
            verify(lock, Some(&relabelled), &public),
            Err(SignatureError::Tampered)
        );
    }

    #[test]
    fn malformed_texts_are_refused_clearly() {
        let (secret, public) = generate().unwrap();
        assert!(matches!(
            sign(b"x", "nope"),
            Err(SignatureError::Malformed(_))
        ));
        assert!(matches!(
            sign(b"x", &public),
            Err(SignatureError::Malformed(_))
        ));
        assert!(matches!(
            verify(b"x", Some("ed25519:x"), &public),
            Err(SignatureError::Malformed(_))
        ));
        assert!(matches!(
            verify(b"x", Some("x"), &secret),
            Err(SignatureError::Malformed(_))
        ));
    }

    #[test]
    fn a_known_key_signs_deterministically() {
        // RFC 8032 §7.1, test 1: the empty message.
        let seed = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
        let seed: Vec<u8> = (0..32)
            .map(|i| u8::from_str_radix(&seed[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        let secret = format!("{SECRET}{}", STANDARD.encode(&seed));
        let sig = sign(b"", &secret).unwrap();
        let hex: String = STANDARD
            .decode(sig.rsplit(':').next().unwrap())
            .unwrap()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            hex,
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        );
        assert!(public_of(&secret).unwrap().ends_with(&STANDARD.encode([
            0xd7, 0x5a, 0x98, 0x01, 0x82, 0xb1, 0x0a, 0xb7, 0xd5, 0x4b, 0xfe, 0xd3, 0xc9, 0x64,
            0x07, 0x3a, 0x0e, 0xe1, 0x72, 0xf3, 0xda, 0xa6, 0x23, 0x25, 0xaf, 0x02, 0x1a, 0x68,
            0xf7, 0x07, 0x51, 0x1a
        ])));
    }
}
