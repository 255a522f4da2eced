//! `server/discover` (2026-07-28): what a stateless server supports, asked for
//! without any handshake.
//!
//! Source: 2026-07-28, "Base protocol → Lifecycle → Discovery" and its schema
//! (`DiscoverRequest`, `DiscoverResult`). Servers MUST implement it; clients MAY call
//! it (e.g. to choose a version before the first real request). Its params are only
//! the per-request `_meta` ([`crate::types::PaginatedRequestParams`] fits).
//!
//! This module holds only the wire shapes; it must not know how a server assembles
//! its capabilities or how long a client caches them.

use serde::{Deserialize, Serialize};

use super::capabilities::ServerCapabilities;
use super::common::{meta, CacheScope, Extra, Implementation, Meta, ResultType};

/// `server/discover` (2026-07-28, client→server): params `{_meta}`, result
/// [`DiscoverResult`].
pub const SERVER_DISCOVER: &str = "server/discover";

/// The answer to `server/discover`: `{resultType, supportedVersions, capabilities,
/// instructions?, ttlMs, cacheScope, _meta?}` where `_meta` SHOULD carry
/// `io.modelcontextprotocol/serverInfo` (2026-07-28, schema `DiscoverResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// `resultType` (required by the schema, `complete`; a missing one is read as
    /// complete by clients).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Every protocol revision the server accepts, as wire strings.
    pub supported_versions: Vec<String>,
    /// The server's capabilities.
    pub capabilities: ServerCapabilities,
    /// How to use the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// How long the result may be cached, in milliseconds. Required by the schema
    /// (≥ 0), but kept as received: a missing or negative value counts as 0 (stale),
    /// see [`effective_ttl_ms`](super::effective_ttl_ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<i64>,
    /// Who may reuse a cached copy (required by the schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// `_meta`, with `io.modelcontextprotocol/serverInfo`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl DiscoverResult {
    /// A complete result. `server_info`, when given, goes into `_meta`.
    pub fn new(
        supported_versions: Vec<String>,
        capabilities: ServerCapabilities,
        ttl_ms: u64,
        cache_scope: CacheScope,
        server_info: Option<&Implementation>,
    ) -> Self {
        let meta = server_info.and_then(|info| {
            let v = serde_json::to_value(info).ok()?;
            let mut m = Meta::new();
            m.insert(meta::SERVER_INFO.to_owned(), v);
            Some(m)
        });
        DiscoverResult {
            result_type: Some(ResultType::Complete),
            supported_versions,
            capabilities,
            instructions: None,
            ttl_ms: Some(i64::try_from(ttl_ms).unwrap_or(i64::MAX)),
            cache_scope: Some(cache_scope),
            meta,
            extra: Extra::new(),
        }
    }

    /// `_meta["io.modelcontextprotocol/serverInfo"]`, when present and well-formed.
    pub fn server_info(&self) -> Option<Implementation> {
        self.meta
            .as_ref()?
            .get(meta::SERVER_INFO)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn round_trip<T: serde::de::DeserializeOwned + Serialize>(v: Value) -> T {
        let t: T = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&t).unwrap(), v);
        t
    }

    #[test]
    fn discover_result_round_trip() {
        let r: DiscoverResult = round_trip(json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}, "resources": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "ExampleServer", "version": "1.0.0"}},
            "instructions": "This server provides weather utilities.",
            "ttlMs": 3600000,
            "cacheScope": "public"
        }));
        assert_eq!(r.result_type, Some(ResultType::Complete));
        assert_eq!(super::super::effective_ttl_ms(r.ttl_ms), 3_600_000);
        assert_eq!(r.cache_scope, Some(CacheScope::Public));
        assert_eq!(r.server_info().unwrap().name, "ExampleServer");
        assert!(r.capabilities.supports_tools());
    }

    #[test]
    fn required_members_and_unknowns() {
        let r: DiscoverResult = round_trip(json!({
            "resultType": "complete", "supportedVersions": ["2026-07-28", "2025-11-25"],
            "capabilities": {}, "ttlMs": 0, "cacheScope": "private", "x-new": {"a": 1}
        }));
        assert_eq!(r.extra["x-new"], json!({"a": 1}));
        assert!(r.server_info().is_none());
        for missing in ["supportedVersions", "capabilities"] {
            let mut v = json!({"resultType": "complete", "supportedVersions": [],
                "capabilities": {}, "ttlMs": 1, "cacheScope": "public"});
            v.as_object_mut().unwrap().remove(missing);
            assert!(
                serde_json::from_value::<DiscoverResult>(v).is_err(),
                "{missing}"
            );
        }
        // Cache hints are lenient: missing or negative means stale, and is kept.
        let r: DiscoverResult = round_trip(json!({"supportedVersions": [],
            "capabilities": {}, "ttlMs": -1}));
        assert_eq!(super::super::effective_ttl_ms(r.ttl_ms), 0);
        assert_eq!(r.cache_scope, None);
    }

    #[test]
    fn constructor() {
        let r = DiscoverResult::new(
            vec!["2026-07-28".into()],
            ServerCapabilities::default(),
            60_000,
            CacheScope::Public,
            Some(&Implementation::new("s", "1")),
        );
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                   "capabilities": {}, "ttlMs": 60000, "cacheScope": "public",
                   "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}})
        );
        assert_eq!(r.server_info(), Some(Implementation::new("s", "1")));
    }
}
