//! The drift guard's pure parts: locks of approved tool, prompt and template
//! definitions (RFC 8785 canonical form, SHA-256), their comparison with a new
//! discovery, readable descriptions of what changed, and the suspicious-text
//! rules, and the lock's Ed25519 signature. No I/O, no clock: callers fetch the
//! lists and read or write files.

mod canonical;
mod diff;
mod lock;
mod sign;
mod suspicious;

pub use canonical::{canonical, hex, sha256, sha256_hex};
pub use diff::{describe, pointer_changes, word_diff, Line, Severity};
pub use lock::{
    approve, compare, definition, Change, Discovery, Drift, Identity, Kind, Lock, Malformed,
    Pinned, UpstreamLock, LOCK_VERSION,
};
pub use sign::{check_public, generate, public_of, sign, verify, SignatureError};
pub use suspicious::{findings, invisible, Finding, Rule, MAX_DESCRIPTION_CHARS};
