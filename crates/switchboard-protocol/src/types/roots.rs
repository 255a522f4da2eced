//! Roots: the client's filesystem boundaries, listed on a server's request.
//!
//! Source: "Client features → Roots" of every revision. In 2024-11-05 to 2025-11-25
//! `roots/list` is a server→client request and `notifications/roots/list_changed` a
//! client→server notification; in 2026-07-28 `roots/list` only travels inside a
//! multi round-trip `inputRequests` map (see [`crate::types::InputRequest`]), the
//! notification is gone and Roots is deprecated.
//!
//! This module holds only the wire shapes; it must not know how a client finds its
//! roots or how a server uses them.

use serde::{Deserialize, Serialize};

use super::common::{Extra, Meta};

/// `roots/list`: a server asks the client for its roots (server→client request in
/// 2024-11-05 to 2025-11-25; an `inputRequests` entry in 2026-07-28). Its params are
/// only `_meta`.
pub const ROOTS_LIST: &str = "roots/list";

/// `notifications/roots/list_changed`: the client's roots changed (client→server,
/// 2024-11-05 to 2025-11-25; removed in 2026-07-28). Its params are only `_meta`.
pub const NOTIFICATION_ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";

/// A root directory or file the server may operate on: `{uri, name?, _meta?}`.
///
/// `uri` is a `file://` URI in every revision so far. `_meta` was added in
/// 2025-06-18. Source: schema `Root`, all revisions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Root {
    /// The root's URI, e.g. `file:///home/user/project`.
    pub uri: String,
    /// A human-readable name, e.g. for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `_meta` (2025-06-18+).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Root {
    /// A root with just a URI.
    pub fn new(uri: impl Into<String>) -> Self {
        Root {
            uri: uri.into(),
            name: None,
            meta: None,
            extra: Extra::new(),
        }
    }
}

/// The client's answer to `roots/list`: `{roots: [Root], _meta?}`.
///
/// In 2026-07-28 it is an `inputResponses` value and has no `_meta` or `resultType`
/// of its own in the schema; either is still kept if sent. Source: schema
/// `ListRootsResult`, all revisions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListRootsResult {
    /// The roots, possibly empty.
    pub roots: Vec<Root>,
    /// `_meta` (2024-11-05 to 2025-11-25 results).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
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
    fn list_roots_result_2024_and_2026_shapes() {
        // 2024-11-05: no _meta on roots.
        let r: ListRootsResult = round_trip(json!({
            "roots": [{"uri": "file:///home/user/repos/frontend", "name": "Frontend"}]
        }));
        assert_eq!(r.roots[0].name.as_deref(), Some("Frontend"));
        assert!(r.meta.is_none());
        // 2025-06-18+: _meta on roots and result.
        let r: ListRootsResult = round_trip(json!({
            "roots": [{"uri": "file:///a", "_meta": {"k": 1}}],
            "_meta": {"x": true}
        }));
        assert_eq!(r.roots[0].meta.as_ref().unwrap()["k"], json!(1));
        assert!(r.roots[0].name.is_none());
        // Empty list.
        let r: ListRootsResult = round_trip(json!({"roots": []}));
        assert!(r.roots.is_empty());
    }

    #[test]
    fn unknown_members_kept_and_uri_required() {
        let r: Root = round_trip(json!({"uri": "file:///a", "future": [1, 2]}));
        assert_eq!(r.extra["future"], json!([1, 2]));
        assert!(serde_json::from_value::<Root>(json!({"name": "x"})).is_err());
        assert!(serde_json::from_value::<ListRootsResult>(json!({})).is_err());
    }

    #[test]
    fn constructor_encodes_minimal_shape() {
        let r = Root::new("file:///p");
        assert_eq!(
            serde_json::to_value(r).unwrap(),
            json!({"uri": "file:///p"})
        );
    }
}
