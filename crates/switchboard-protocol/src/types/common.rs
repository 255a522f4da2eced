//! Shapes shared by every feature: `_meta`, extra members, roles, annotations, icons,
//! implementation info, pagination, empty results, `resultType`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use crate::jsonrpc::Id as RequestId;

/// The reserved `_meta` object (2025-06-18 "General fields: `_meta`"; in 2024-11-05
/// and 2025-03-26 only `params._meta.progressToken` is defined). Keys are kept as
/// received; see [`meta`] for the reserved key names and typed accessors.
pub type Meta = Map<String, Value>;

/// Members of a JSON object that the type does not model, kept for the round trip.
pub type Extra = Map<String, Value>;

/// A progress token: a string or an integer (all revisions).
pub type ProgressToken = crate::jsonrpc::Id;

/// An opaque pagination cursor (all revisions, "Pagination").
pub type Cursor = String;

/// Reserved `_meta` keys and typed accessors for them.
///
/// Sources: 2024-11-05 "Progress" (`progressToken`); 2025-11-25 "Tasks"
/// (`io.modelcontextprotocol/related-task`); 2026-07-28 "Lifecycle" and
/// "Subscriptions" (`io.modelcontextprotocol/*`); W3C trace context keys, which
/// 2026-07-28 exempts from the prefix rule.
pub mod meta {
    use super::{Meta, ProgressToken};
    use serde_json::Value;

    /// `progressToken` (request `params._meta`, all revisions).
    pub const PROGRESS_TOKEN: &str = "progressToken";
    /// The request's protocol version (2026-07-28, required on every request).
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// The client's capabilities (2026-07-28, required on every request; `{}` = none).
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// The client's `Implementation` (2026-07-28, SHOULD on every request).
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// Opt-in log level for one request (2026-07-28, deprecated).
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// The server's `Implementation` (2026-07-28, SHOULD on every result).
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// The listen request's id on every notification of a listen stream (2026-07-28).
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
    /// `{taskId}` on task-related messages (2025-11-25).
    pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
    /// Optional immediate response for a `CreateTaskResult` (2025-11-25).
    pub const MODEL_IMMEDIATE_RESPONSE: &str = "io.modelcontextprotocol/model-immediate-response";
    /// W3C trace context (exempt from the prefix rule).
    pub const TRACEPARENT: &str = "traceparent";
    /// W3C trace context.
    pub const TRACESTATE: &str = "tracestate";
    /// W3C baggage.
    pub const BAGGAGE: &str = "baggage";

    /// `progressToken`, when present and a string or an integer.
    pub fn progress_token(meta: &Meta) -> Option<ProgressToken> {
        meta.get(PROGRESS_TOKEN)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }

    /// A string-valued key, e.g. [`PROTOCOL_VERSION`].
    pub fn str_value<'a>(meta: &'a Meta, key: &str) -> Option<&'a str> {
        meta.get(key).and_then(Value::as_str)
    }

    /// Whether `key` is reserved by MCP: its prefix (the part before the first `/`)
    /// has `modelcontextprotocol` or `mcp` as its second dot-separated label
    /// (2025-11-25 and 2026-07-28 rule; e.g. `io.modelcontextprotocol/` but not
    /// `com.example.mcp/`).
    pub fn is_reserved(key: &str) -> bool {
        let Some((prefix, _)) = key.split_once('/') else {
            return false;
        };
        matches!(
            prefix.split('.').nth(1),
            Some("modelcontextprotocol" | "mcp")
        )
    }

    /// Whether `key` is reserved by the 2025-06-18 rule ("General fields:
    /// `_meta`"): its prefix has a label `modelcontextprotocol` or `mcp` followed
    /// by another label (e.g. `modelcontextprotocol.io/`, `mcp.dev/`,
    /// `tools.mcp.com/`, but not `com.example.mcp/`). 2025-11-25 replaced it with
    /// [`is_reserved`]'s rule; each reserves keys the other does not
    /// (`mcp.dev/` only here, `io.modelcontextprotocol/` only there).
    pub fn is_reserved_2025_06_18(key: &str) -> bool {
        let Some((prefix, _)) = key.split_once('/') else {
            return false;
        };
        let labels: Vec<&str> = prefix.split('.').collect();
        labels
            .iter()
            .take(labels.len().saturating_sub(1))
            .any(|l| matches!(*l, "modelcontextprotocol" | "mcp"))
    }

    /// Whether `key` is well-formed (2025-06-18 and later): an optional prefix of
    /// dot-separated labels (each starting with a letter, ending with a letter or
    /// digit, hyphens inside) followed by `/`, then a name that begins and ends with an
    /// alphanumeric character with `-`, `_`, `.` and alphanumerics inside. The empty
    /// name is allowed.
    pub fn is_valid_key(key: &str) -> bool {
        let (prefix, name) = match key.rsplit_once('/') {
            Some((p, n)) => (Some(p), n),
            None => (None, key),
        };
        let label_ok = |l: &str| {
            let b = l.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphabetic()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
        };
        if let Some(p) = prefix {
            if !p.split('.').all(label_ok) {
                return false;
            }
        }
        let b = name.as_bytes();
        b.is_empty()
            || (b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')))
    }
}

/// The sender or recipient of messages and data in a conversation (all revisions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The assistant (the model).
    Assistant,
}

/// Optional annotations for the client on content and resources (all revisions;
/// `lastModified` from 2025-06-18).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the data is meant for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance from 0 (least) to 1 (most), kept as the number that was sent (`1`
    /// stays `1`, not `1.0`); see [`Annotations::priority_f64`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<serde_json::Number>,
    /// ISO 8601 time of the last modification (2025-06-18+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Annotations {
    /// `priority` as a float.
    pub fn priority_f64(&self) -> Option<f64> {
        self.priority.as_ref().and_then(serde_json::Number::as_f64)
    }
}

/// An icon a client may show (2025-11-25+).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// A URI: `https:` or a `data:` URI with base64 image data.
    pub src: String,
    /// MIME type override, e.g. `image/png`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes such as `"48x48"` or `"any"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// `"light"` or `"dark"`: the theme the icon is designed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Name and version of an MCP implementation (`clientInfo`, `serverInfo`; all
/// revisions; `title` from 2025-06-18; `icons`, `websiteUrl` from 2025-11-25;
/// `description` from 2026-07-28).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Display name (2025-06-18+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Human-readable description (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons (2025-11-25+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Website (2025-11-25+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Implementation {
    /// An implementation with just a name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation {
            name: name.into(),
            version: version.into(),
            title: None,
            description: None,
            icons: None,
            website_url: None,
            extra: Extra::new(),
        }
    }
}

/// `resultType` on every 2026-07-28 result. A missing value (a legacy peer) means
/// [`ResultType::Complete`]; an unknown value is kept so the caller can reject it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultType {
    /// A final result.
    Complete,
    /// A multi-round-trip interim result: the client must supply `inputResponses`.
    InputRequired,
    /// The tasks extension's task handle.
    Task,
    /// Any other value (an extension's); a client that does not know it rejects it.
    #[serde(untagged)]
    Other(String),
}

/// Cache scope of a cacheable 2026-07-28 result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// Any client may reuse it.
    Public,
    /// Only this principal may reuse it.
    Private,
}

/// The cache lifetime a 2026-07-28 client uses for a `ttlMs` as received, in
/// milliseconds: a missing or negative value counts as 0, i.e. stale ("Caching").
pub fn effective_ttl_ms(ttl_ms: Option<i64>) -> u64 {
    ttl_ms.map_or(0, |t| u64::try_from(t).unwrap_or(0))
}

/// A result with no content of its own (`{}`), e.g. for `ping` or
/// `logging/setLevel`; 2026-07-28 adds `resultType`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmptyResult {
    /// `resultType` (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of a request that takes only `_meta` (and, where paginated, `cursor`):
/// `ping`, `tools/list`, `server/discover` and the like.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaginatedRequestParams {
    /// Where to continue a listing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<Cursor>,
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

    #[test]
    fn unknown_members_survive() {
        let v = json!({"name":"x","version":"1","futureField":{"a":1}});
        let imp: Implementation = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(imp.extra["futureField"], json!({"a":1}));
        assert_eq!(serde_json::to_value(&imp).unwrap(), v);
    }

    #[test]
    fn integer_priority_stays_an_integer() {
        let v = json!({"audience":["user"],"priority":1});
        let a: Annotations = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(a.priority_f64(), Some(1.0));
        assert_eq!(serde_json::to_value(&a).unwrap(), v);
    }

    #[test]
    fn ttl_rules() {
        assert_eq!(effective_ttl_ms(None), 0);
        assert_eq!(effective_ttl_ms(Some(-5)), 0);
        assert_eq!(effective_ttl_ms(Some(1500)), 1500);
    }

    #[test]
    fn result_type_values() {
        let r: ResultType = serde_json::from_value(json!("input_required")).unwrap();
        assert_eq!(r, ResultType::InputRequired);
        let r: ResultType = serde_json::from_value(json!("x-new")).unwrap();
        assert_eq!(r, ResultType::Other("x-new".into()));
        assert_eq!(
            serde_json::to_value(ResultType::Other("x".into())).unwrap(),
            json!("x")
        );
    }

    #[test]
    fn meta_keys() {
        assert!(meta::is_reserved("io.modelcontextprotocol/protocolVersion"));
        assert!(meta::is_reserved("dev.mcp/x"));
        assert!(!meta::is_reserved("com.example.mcp/x"));
        assert!(!meta::is_reserved("progressToken"));
        assert!(!meta::is_reserved("mcp.dev/x"));
        assert!(meta::is_reserved_2025_06_18("mcp.dev/x"));
        assert!(meta::is_reserved_2025_06_18("modelcontextprotocol.io/x"));
        assert!(meta::is_reserved_2025_06_18("tools.mcp.com/x"));
        assert!(meta::is_reserved_2025_06_18(
            "api.modelcontextprotocol.org/x"
        ));
        assert!(!meta::is_reserved_2025_06_18("io.modelcontextprotocol/x"));
        assert!(!meta::is_reserved_2025_06_18("com.example.mcp/x"));
        assert!(!meta::is_reserved_2025_06_18("mcp"));
        assert!(!meta::is_reserved_2025_06_18("traceparent"));
        assert!(meta::is_valid_key("progressToken"));
        assert!(meta::is_valid_key("io.modelcontextprotocol/related-task"));
        assert!(!meta::is_valid_key("-bad"));
        assert!(!meta::is_valid_key("1abc.com/x"));
        let m: Meta = serde_json::from_value(json!({"progressToken": 5})).unwrap();
        assert_eq!(meta::progress_token(&m), Some(RequestId::from(5)));
    }
}
