//! Protocol revisions and version negotiation.
//!
//! Sources: "Lifecycle" → "Version Negotiation" (2024-11-05 to 2025-11-25): the client
//! offers its latest version in `initialize`; the server answers that version when it
//! supports it, otherwise its own latest; a client that cannot use the answer
//! disconnects. 2026-07-28 ("Lifecycle" → "Protocol Version"): no handshake; every
//! request carries `_meta["io.modelcontextprotocol/protocolVersion"]`, and an
//! unsupported one gets -32022 with `data{supported, requested}`.
//!
//! This module must not know about transports or sessions.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::jsonrpc::{code, ErrorObject};

/// An MCP protocol revision, named by its date. Ordered oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProtocolVersion {
    /// 2024-11-05: the first revision; HTTP+SSE transport.
    V2024_11_05,
    /// 2025-03-26: Streamable HTTP, batches, tool annotations, audio, completions.
    V2025_03_26,
    /// 2025-06-18: no batches, `MCP-Protocol-Version` header, elicitation,
    /// structured tool output.
    V2025_06_18,
    /// 2025-11-25: tasks, icons, URL elicitation, sampling tools.
    V2025_11_25,
    /// 2026-07-28: stateless ("modern"); `server/discover`, MRTR, `resultType`.
    V2026_07_28,
}

/// The two eras of MCP (2026-07-28 spec, "Versioning"): legacy revisions open a
/// session with `initialize`; modern ones carry version and capabilities per request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// 2024-11-05 to 2025-11-25.
    Legacy,
    /// 2026-07-28 and later.
    Modern,
}

impl ProtocolVersion {
    /// Every revision, oldest first.
    pub const ALL: [ProtocolVersion; 5] = [
        ProtocolVersion::V2024_11_05,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2026_07_28,
    ];

    /// The newest revision this crate speaks.
    pub const LATEST: ProtocolVersion = ProtocolVersion::V2026_07_28;

    /// The newest legacy (handshake) revision.
    pub const LATEST_LEGACY: ProtocolVersion = ProtocolVersion::V2025_11_25;

    /// The version an HTTP server assumes when `MCP-Protocol-Version` is absent and
    /// nothing else tells it (2025-06-18, "Protocol Version Header").
    pub const HTTP_DEFAULT: ProtocolVersion = ProtocolVersion::V2025_03_26;

    /// The wire string, e.g. `"2025-11-25"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V2024_11_05 => "2024-11-05",
            ProtocolVersion::V2025_03_26 => "2025-03-26",
            ProtocolVersion::V2025_06_18 => "2025-06-18",
            ProtocolVersion::V2025_11_25 => "2025-11-25",
            ProtocolVersion::V2026_07_28 => "2026-07-28",
        }
    }

    /// Parses a wire string; `None` for any other text (comparison is exact).
    pub fn parse(s: &str) -> Option<ProtocolVersion> {
        ProtocolVersion::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Legacy (handshake) or modern (stateless).
    pub const fn era(self) -> Era {
        match self {
            ProtocolVersion::V2026_07_28 => Era::Modern,
            _ => Era::Legacy,
        }
    }

    /// Whether JSON-RPC batches are allowed (2025-03-26 only: added there, removed in
    /// 2025-06-18).
    pub const fn allows_batches(self) -> bool {
        matches!(self, ProtocolVersion::V2025_03_26)
    }

    /// The batching rule for the envelope decoder.
    pub const fn batching(self) -> crate::jsonrpc::Batching {
        if self.allows_batches() {
            crate::jsonrpc::Batching::Allowed
        } else {
            crate::jsonrpc::Batching::Refused
        }
    }

    /// Whether an HTTP client must send `MCP-Protocol-Version` (2025-06-18 onward).
    pub const fn has_version_header(self) -> bool {
        !matches!(
            self,
            ProtocolVersion::V2024_11_05 | ProtocolVersion::V2025_03_26
        )
    }

    /// Whether the server may send requests to the client (every legacy revision;
    /// 2026-07-28 replaces them with `input_required` results).
    pub const fn has_server_requests(self) -> bool {
        matches!(self.era(), Era::Legacy)
    }

    /// Whether every result carries `resultType` (2026-07-28).
    pub const fn has_result_type(self) -> bool {
        matches!(self.era(), Era::Modern)
    }

    /// The code for "resource not found": -32002 before 2026-07-28, -32602 from it.
    pub const fn resource_not_found_code(self) -> i64 {
        match self.era() {
            Era::Legacy => code::RESOURCE_NOT_FOUND,
            Era::Modern => code::INVALID_PARAMS,
        }
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The text was not a revision this crate knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown MCP protocol version {0:?}")]
pub struct UnknownVersion(pub String);

impl FromStr for ProtocolVersion {
    type Err = UnknownVersion;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ProtocolVersion::parse(s).ok_or_else(|| UnknownVersion(s.to_owned()))
    }
}

impl Serialize for ProtocolVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProtocolVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        ProtocolVersion::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(UnknownVersion(s.into_owned())))
    }
}

/// The set of revisions one side is willing to speak.
///
/// Never empty. [`Supported::default`] is every revision this crate knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Supported(Vec<ProtocolVersion>);

impl Default for Supported {
    fn default() -> Self {
        Supported(ProtocolVersion::ALL.to_vec())
    }
}

impl Supported {
    /// A set from a list; duplicates are removed and the order is made oldest first.
    /// `None` for an empty list.
    pub fn new(versions: impl IntoIterator<Item = ProtocolVersion>) -> Option<Supported> {
        let mut v: Vec<_> = versions.into_iter().collect();
        v.sort();
        v.dedup();
        (!v.is_empty()).then_some(Supported(v))
    }

    /// The revisions, oldest first.
    pub fn versions(&self) -> &[ProtocolVersion] {
        &self.0
    }

    /// Whether `v` is in the set.
    pub fn contains(&self, v: ProtocolVersion) -> bool {
        self.0.contains(&v)
    }

    /// The newest legacy revision in the set (what `initialize` offers and falls back
    /// to), if any.
    pub fn latest_legacy(&self) -> Option<ProtocolVersion> {
        self.0
            .iter()
            .rev()
            .copied()
            .find(|v| v.era() == Era::Legacy)
    }

    /// The newest modern revision in the set, if any.
    pub fn latest_modern(&self) -> Option<ProtocolVersion> {
        self.0
            .iter()
            .rev()
            .copied()
            .find(|v| v.era() == Era::Modern)
    }

    /// The wire strings, newest first, as `server/discover`'s `supportedVersions` and
    /// -32022's `data.supported` list them.
    pub fn wire_strings(&self) -> Vec<&'static str> {
        self.0.iter().rev().map(|v| v.as_str()).collect()
    }

    /// The server's answer to `initialize{protocolVersion: requested}` (legacy
    /// lifecycle): the requested revision when it is a legacy one in the set,
    /// otherwise the newest legacy revision in the set. `None` when the set holds no
    /// legacy revision (a modern-only server, which answers `initialize` with an
    /// error; 2026-07-28 "Era detection").
    ///
    /// An unknown or modern string in `initialize` is answered with the latest legacy
    /// revision, as the spec says ("If the server supports the requested protocol
    /// version, it MUST respond with the same version. Otherwise, the server MUST
    /// respond with another protocol version it supports").
    pub fn negotiate_initialize(&self, requested: &str) -> Option<ProtocolVersion> {
        match ProtocolVersion::parse(requested) {
            Some(v) if v.era() == Era::Legacy && self.contains(v) => Some(v),
            _ => self.latest_legacy(),
        }
    }

    /// The client's check of the server's `initialize` answer: `Ok` when the client
    /// can speak it, else the error to report before disconnecting.
    pub fn accept_initialize_answer(
        &self,
        answered: &str,
    ) -> Result<ProtocolVersion, UnsupportedVersion> {
        match ProtocolVersion::parse(answered) {
            Some(v) if v.era() == Era::Legacy && self.contains(v) => Ok(v),
            _ => Err(UnsupportedVersion {
                requested: answered.to_owned(),
                supported: self.clone(),
            }),
        }
    }

    /// The server's check of a 2026-07-28 request's
    /// `_meta["io.modelcontextprotocol/protocolVersion"]`: `Ok` for a modern revision
    /// in the set, else the -32022 error ([`UnsupportedVersion::to_error`]). The error
    /// lists only the modern revisions of the set, the ones a retry with per-request
    /// `_meta` can use (legacy ones are reached through `initialize` instead).
    pub fn check_modern(&self, requested: &str) -> Result<ProtocolVersion, UnsupportedVersion> {
        match ProtocolVersion::parse(requested) {
            Some(v) if v.era() == Era::Modern && self.contains(v) => Ok(v),
            _ => Err(UnsupportedVersion {
                requested: requested.to_owned(),
                supported: Supported::new(
                    self.0.iter().copied().filter(|v| v.era() == Era::Modern),
                )
                .unwrap_or_else(|| self.clone()),
            }),
        }
    }

    /// The client's choice after a -32022 answer: the newest version in both the
    /// server's `data.supported` list and this set, or `None` when they share none.
    pub fn pick_from(&self, server_supported: &[String]) -> Option<ProtocolVersion> {
        self.0
            .iter()
            .rev()
            .copied()
            .find(|v| server_supported.iter().any(|s| s == v.as_str()))
    }
}

/// A requested version that the other side cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported protocol version {requested:?} (supported: {})", .supported.wire_strings().join(", "))]
pub struct UnsupportedVersion {
    /// The version string that was asked for or answered.
    pub requested: String,
    /// What this side supports.
    pub supported: Supported,
}

impl UnsupportedVersion {
    /// The 2026-07-28 error: code -32022, `data{supported: [..newest first], requested}`.
    pub fn to_error(&self) -> ErrorObject {
        ErrorObject::new(code::UNSUPPORTED_PROTOCOL_VERSION, self.to_string()).with_data(
            &serde_json::json!({
                "supported": self.supported.wire_strings(),
                "requested": self.requested,
            }),
        )
    }

    /// The legacy `initialize` form (2025-11-25 "Version Negotiation" example):
    /// code -32602, `data{supported, requested}`.
    pub fn to_initialize_error(&self) -> ErrorObject {
        ErrorObject::new(code::INVALID_PARAMS, self.to_string()).with_data(&serde_json::json!({
            "supported": self.supported.wire_strings(),
            "requested": self.requested,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ProtocolVersion::*;

    #[test]
    fn parse_and_print_every_revision() {
        for v in ProtocolVersion::ALL {
            assert_eq!(ProtocolVersion::parse(v.as_str()), Some(v));
            assert_eq!(serde_json::to_string(&v).unwrap(), format!("\"{v}\""));
        }
        assert_eq!(ProtocolVersion::parse("2025-11-25 "), None);
        assert!("draft".parse::<ProtocolVersion>().is_err());
        assert!(V2024_11_05 < V2026_07_28);
    }

    #[test]
    fn batches_only_in_2025_03_26() {
        let allowed: Vec<_> = ProtocolVersion::ALL
            .into_iter()
            .filter(|v| v.allows_batches())
            .collect();
        assert_eq!(allowed, [V2025_03_26]);
    }

    #[test]
    fn server_echoes_a_supported_version_else_its_latest() {
        let all = Supported::default();
        assert_eq!(all.negotiate_initialize("2025-03-26"), Some(V2025_03_26));
        assert_eq!(all.negotiate_initialize("2024-11-05"), Some(V2024_11_05));
        assert_eq!(all.negotiate_initialize("2099-01-01"), Some(V2025_11_25));
        // initialize never selects the modern era.
        assert_eq!(all.negotiate_initialize("2026-07-28"), Some(V2025_11_25));
        let old = Supported::new([V2024_11_05, V2025_03_26]).unwrap();
        assert_eq!(old.negotiate_initialize("2025-11-25"), Some(V2025_03_26));
        let modern_only = Supported::new([V2026_07_28]).unwrap();
        assert_eq!(modern_only.negotiate_initialize("2025-11-25"), None);
        assert!(Supported::new([]).is_none());
    }

    #[test]
    fn client_checks_the_answer() {
        let client = Supported::new([V2025_06_18, V2025_11_25]).unwrap();
        assert_eq!(
            client.accept_initialize_answer("2025-06-18"),
            Ok(V2025_06_18)
        );
        let err = client.accept_initialize_answer("2024-11-05").unwrap_err();
        assert_eq!(err.requested, "2024-11-05");
    }

    #[test]
    fn modern_requests_get_32022_with_supported_list() {
        let server = Supported::default();
        assert_eq!(server.check_modern("2026-07-28"), Ok(V2026_07_28));
        let err = server.check_modern("2025-11-25").unwrap_err();
        let obj = err.to_error();
        assert_eq!(obj.code, -32022);
        let data: serde_json::Value = serde_json::from_str(obj.data.unwrap().get()).unwrap();
        assert_eq!(data["requested"], "2025-11-25");
        assert_eq!(
            data["supported"],
            serde_json::json!(["2026-07-28"]),
            "only what a retry can use"
        );
        assert_eq!(err.to_initialize_error().code, -32602);
    }

    #[test]
    fn client_picks_from_the_servers_list() {
        let client = Supported::default();
        let from_server = vec!["2026-07-28".to_owned(), "2025-06-18".to_owned()];
        assert_eq!(client.pick_from(&from_server), Some(V2026_07_28));
        let only_old = Supported::new([V2024_11_05]).unwrap();
        assert_eq!(only_old.pick_from(&from_server), None);
    }

    #[test]
    fn resource_not_found_code_by_era() {
        assert_eq!(V2025_11_25.resource_not_found_code(), -32002);
        assert_eq!(V2026_07_28.resource_not_found_code(), -32602);
    }
}
