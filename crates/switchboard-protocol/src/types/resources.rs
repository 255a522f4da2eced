//! Resources (server feature): `Resource`, `ResourceTemplate`, the list, read,
//! subscribe and unsubscribe params and results, and the updated notification.
//!
//! Source: every revision's "Server features → Resources". The 2026-07-28
//! `input_required` answer to `resources/read` is not modelled here (see the
//! multi-round-trip types). This module knows JSON shapes only: it must not fetch
//! URIs, expand URI templates or track subscriptions.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::common::{Annotations, CacheScope, Cursor, Extra, Icon, Meta, ResultType};
use super::content::ResourceContents;

/// Method `resources/list` (request; all revisions).
pub const RESOURCES_LIST: &str = "resources/list";
/// Method `resources/templates/list` (request; all revisions).
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// Method `resources/read` (request; all revisions).
pub const RESOURCES_READ: &str = "resources/read";
/// Method `resources/subscribe` (request; 2024-11-05 to 2025-11-25).
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// Method `resources/unsubscribe` (request; 2024-11-05 to 2025-11-25).
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// Method `notifications/resources/updated` (server notification; all revisions).
pub const NOTIFICATION_RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// Method `notifications/resources/list_changed` (server notification; all
/// revisions).
pub const NOTIFICATION_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";

/// A resource the server can read: `{uri, name, title?, description?, mimeType?,
/// size?, annotations?, icons?, _meta?}`.
///
/// Source: all revisions ("Resources → Resource"); `title`, `_meta` from 2025-06-18;
/// `icons` from 2025-11-25.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// The resource's URI.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Display name (2025-06-18+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Size of the raw content in bytes (before base64), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
    /// Hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons (2025-11-25+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// `_meta` (2025-06-18+).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Resource {
    /// The name to show a user: `title`, then `name` (2025-06-18+).
    pub fn display_name(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }
}

/// A family of resources described by an RFC 6570 URI template: `{uriTemplate, name,
/// title?, description?, mimeType?, annotations?, icons?, _meta?}`.
///
/// Source: all revisions ("Resources → Resource Templates"); `title`, `_meta` from
/// 2025-06-18; `icons` from 2025-11-25.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// RFC 6570 URI template (not expanded here).
    pub uri_template: String,
    /// Programmatic name.
    pub name: String,
    /// Display name (2025-06-18+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type of every matching resource, if they share one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Hints for the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons (2025-11-25+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// `_meta` (2025-06-18+).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Result of `resources/list`: `{resources, nextCursor?, resultType?, ttlMs?,
/// cacheScope?, _meta?}`.
///
/// Source: all revisions; `resultType`, `ttlMs` (milliseconds, ≥ 0 per the schema;
/// a negative value counts as 0), `cacheScope` are 2026-07-28, where they are
/// required.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourcesResult {
    /// The resources on this page.
    pub resources: Vec<Resource>,
    /// Cursor of the next page, if there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// `resultType` (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Cache lifetime in milliseconds (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<i64>,
    /// Who may reuse a cached copy (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Result of `resources/templates/list`: `{resourceTemplates, nextCursor?,
/// resultType?, ttlMs?, cacheScope?, _meta?}`.
///
/// Source: all revisions; `resultType`, `ttlMs` (milliseconds), `cacheScope` are
/// 2026-07-28, where they are required.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourceTemplatesResult {
    /// The templates on this page.
    pub resource_templates: Vec<ResourceTemplate>,
    /// Cursor of the next page, if there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// `resultType` (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Cache lifetime in milliseconds (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<i64>,
    /// Who may reuse a cached copy (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `resources/read`: `{uri, inputResponses?, requestState?, _meta?}`.
///
/// Source: all revisions; `inputResponses` and `requestState` are 2026-07-28 (multi
/// round-trip requests), where `_meta` is also required.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceRequestParams {
    /// The resource's URI.
    pub uri: String,
    /// Answers to a previous `input_required` result (2026-07-28 `InputResponses`),
    /// kept as raw JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<Map<String, Value>>,
    /// Opaque state echoed from a previous `input_required` result (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Result of `resources/read`: `{contents, resultType?, ttlMs?, cacheScope?,
/// _meta?}`.
///
/// Source: all revisions; `resultType`, `ttlMs` (milliseconds), `cacheScope` are
/// 2026-07-28, where they are required on a complete result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceResult {
    /// The contents (one resource may yield several, e.g. a directory).
    pub contents: Vec<ResourceContents>,
    /// `resultType` (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Cache lifetime in milliseconds (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<i64>,
    /// Who may reuse a cached copy (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `resources/subscribe`: `{uri, _meta?}` (2024-11-05 to 2025-11-25;
/// needs the server's `resources.subscribe` capability; replaced in 2026-07-28 by
/// `subscriptions/listen`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeRequestParams {
    /// The resource to watch.
    pub uri: String,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `resources/unsubscribe`: `{uri, _meta?}` (2024-11-05 to 2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnsubscribeRequestParams {
    /// The resource to stop watching.
    pub uri: String,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `notifications/resources/updated`: `{uri, _meta?}` (all revisions; in
/// 2026-07-28 sent on a listen stream, `_meta` carrying the subscription id).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceUpdatedNotificationParams {
    /// The resource that changed (may be a sub-resource of the subscribed URI).
    pub uri: String,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip<T: serde::de::DeserializeOwned + Serialize>(v: Value) -> T {
        let t: T = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&t).unwrap(), v);
        t
    }

    #[test]
    fn examples_2026() {
        let r: ListResourcesResult = round_trip(json!({"resultType": "complete", "resources": [{
            "uri": "file:///project/src/main.rs", "name": "main.rs",
            "title": "Rust Software Application Main File",
            "description": "Primary application entry point", "mimeType": "text/x-rust",
            "icons": [{"src": "https://example.com/rust-file-icon.png", "mimeType": "image/png",
                "sizes": ["48x48"]}]}],
            "nextCursor": "eyJwYWdlIjogM30=", "ttlMs": 600000, "cacheScope": "private"}));
        assert_eq!(r.cache_scope, Some(CacheScope::Private));
        assert_eq!(
            r.resources[0].display_name(),
            "Rust Software Application Main File"
        );
        let t: ListResourceTemplatesResult = round_trip(json!({"resultType": "complete",
            "resourceTemplates": [{"uriTemplate": "file:///{path}", "name": "Project Files",
                "title": "📁 Project Files", "description": "Access files in the project directory",
                "mimeType": "application/octet-stream",
                "icons": [{"src": "https://example.com/folder-icon.png", "mimeType": "image/png",
                    "sizes": ["48x48"]}]}],
            "nextCursor": "next-page-cursor", "ttlMs": 3600000, "cacheScope": "public"}));
        assert_eq!(t.resource_templates[0].uri_template, "file:///{path}");
        let rr: ReadResourceResult = round_trip(json!({"resultType": "complete", "contents": [{
            "uri": "file:///project/src/main.rs", "mimeType": "text/x-rust",
            "text": "fn main() {}"}], "ttlMs": 60000, "cacheScope": "private"}));
        assert_eq!(rr.ttl_ms, Some(60000));
        assert_eq!(rr.contents[0].uri(), "file:///project/src/main.rs");
        let res: Resource = round_trip(json!({"uri": "file:///project/README.md",
            "name": "README.md", "title": "Project Documentation", "mimeType": "text/markdown",
            "annotations": {"audience": ["user"], "priority": 0.8,
                "lastModified": "2025-01-12T15:00:58Z"}}));
        assert_eq!(res.annotations.unwrap().priority_f64(), Some(0.8));
        let u: ResourceUpdatedNotificationParams =
            round_trip(json!({"uri": "file:///project/src/main.rs"}));
        assert_eq!(u.uri, "file:///project/src/main.rs");
        let p: ReadResourceRequestParams = round_trip(json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}},
            "uri": "file:///a", "inputResponses": {"q": {"action": "decline"}},
            "requestState": "s1"}));
        assert_eq!(p.request_state.as_deref(), Some("s1"));
    }

    #[test]
    fn older_revisions() {
        // 2024-11-05 list without resultType/ttl: nothing is invented on the way out.
        let r: ListResourcesResult = round_trip(json!({"resources": [{"uri": "a:b", "name": "b",
            "size": 12, "annotations": {"priority": 0.25}}]}));
        assert!(r.result_type.is_none() && r.ttl_ms.is_none());
        assert_eq!(r.resources[0].size, Some(12));
        assert_eq!(r.resources[0].display_name(), "b");
        let rr: ReadResourceResult = round_trip(json!({"contents": [
            {"uri": "a:b", "blob": "AA=="}, {"uri": "a:c", "text": "t", "mimeType": "x/y"}]}));
        assert!(matches!(rr.contents[0], ResourceContents::Blob(_)));
        let s: SubscribeRequestParams =
            round_trip(json!({"uri": "a:b", "_meta": {"progressToken": 3}}));
        assert_eq!(s.uri, "a:b");
        let u: UnsubscribeRequestParams = round_trip(json!({"uri": "a:b"}));
        assert_eq!(u.uri, "a:b");
        assert!(serde_json::from_value::<SubscribeRequestParams>(json!({})).is_err());
    }

    #[test]
    fn unknown_members_and_negative_ttl_kept() {
        let r: ReadResourceResult = round_trip(json!({"contents": [], "ttlMs": -5,
            "cacheScope": "public", "resultType": "complete", "newThing": [1]}));
        assert_eq!(r.ttl_ms, Some(-5));
        assert_eq!(r.extra["newThing"], json!([1]));
        let t: ResourceTemplate = round_trip(
            json!({"uriTemplate": "x://{a}", "name": "n", "_meta": {"k": "v"},
                "later": null}),
        );
        assert_eq!(t.extra["later"], Value::Null);
    }
}
