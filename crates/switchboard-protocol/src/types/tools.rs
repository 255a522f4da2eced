//! Tools (server feature): the `Tool` definition, `tools/list` and `tools/call`
//! params and results, and the tool-name and display-name rules.
//!
//! Source: every revision's "Server features → Tools". This module knows JSON
//! shapes only: it must not validate arguments against `inputSchema`, run tools or
//! know about sessions or transports.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::common::{CacheScope, Cursor, Extra, Icon, Meta, ResultType};
use super::content::{present_value, ContentBlock};
use super::tasks::TaskMetadata;

/// Method `tools/list` (request; all revisions).
pub const TOOLS_LIST: &str = "tools/list";
/// Method `tools/call` (request; all revisions).
pub const TOOLS_CALL: &str = "tools/call";
/// Method `notifications/tools/list_changed` (server notification; all revisions; in
/// 2026-07-28 only on a listen stream).
pub const NOTIFICATION_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";

/// Longest valid tool name, in characters (2025-11-25 "Tool names").
pub const TOOL_NAME_MAX_LEN: usize = 128;

/// Whether `name` follows the tool-name rule of 2025-11-25 and later ("Tools → Tool
/// names", a SHOULD): 1 to 128 characters, each an ASCII letter, digit, `_`, `-` or
/// `.`. Case-sensitive; uniqueness per server is not checked here.
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=TOOL_NAME_MAX_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// A tool the server offers: `{name, title?, description?, inputSchema,
/// outputSchema?, annotations?, icons?, execution?, _meta?}`.
///
/// Source: all revisions ("Tools → Tool"); `annotations` from 2025-03-26; `title`,
/// `outputSchema`, `_meta` from 2025-06-18; `icons`, `execution` from 2025-11-25
/// (`execution` is gone again in 2026-07-28, where tasks are an extension).
/// The schemas are JSON Schema objects, kept as raw JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Programmatic name; see [`is_valid_tool_name`].
    pub name: String,
    /// Display name (2025-06-18+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments; `type` must be `"object"`.
    pub input_schema: Map<String, Value>,
    /// JSON Schema of `structuredContent` (2025-06-18+; an object schema up to
    /// 2025-11-25, any schema object in 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Map<String, Value>>,
    /// Behaviour hints (2025-03-26+); untrusted unless the server is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons (2025-11-25+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Execution properties (2025-11-25 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
    /// `_meta` (2025-06-18+).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Tool {
    /// The name to show a user: `title`, then `annotations.title`, then `name`
    /// (2025-06-18+ "Tools → Tool", display-name precedence).
    pub fn display_name(&self) -> &str {
        self.title
            .as_deref()
            .or_else(|| self.annotations.as_ref()?.title.as_deref())
            .unwrap_or(&self.name)
    }

    /// Whether [`name`](Self::name) passes [`is_valid_tool_name`].
    pub fn has_valid_name(&self) -> bool {
        is_valid_tool_name(&self.name)
    }

    /// The task-augmentation support the tool declares; absent means
    /// [`TaskSupport::Forbidden`] (2025-11-25).
    pub fn task_support(&self) -> TaskSupport {
        self.execution
            .as_ref()
            .and_then(|e| e.task_support.clone())
            .unwrap_or(TaskSupport::Forbidden)
    }
}

/// Hints about a tool's behaviour (`ToolAnnotations`, 2025-03-26+). All optional;
/// the accessor methods apply the spec's defaults. Clients must not trust them
/// unless the server is trusted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates (default true; meaningful only when
    /// not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating a call with the same arguments has no further effect (default
    /// false; meaningful only when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ToolAnnotations {
    /// `readOnlyHint`, default false.
    pub fn read_only(&self) -> bool {
        self.read_only_hint.unwrap_or(false)
    }
    /// `destructiveHint`, default true.
    pub fn destructive(&self) -> bool {
        self.destructive_hint.unwrap_or(true)
    }
    /// `idempotentHint`, default false.
    pub fn idempotent(&self) -> bool {
        self.idempotent_hint.unwrap_or(false)
    }
    /// `openWorldHint`, default true.
    pub fn open_world(&self) -> bool {
        self.open_world_hint.unwrap_or(true)
    }
}

/// Execution properties of a tool (`ToolExecution`, 2025-11-25 only):
/// `{taskSupport?}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// Whether the tool supports task-augmented calls (absent = forbidden).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `ToolExecution.taskSupport` (2025-11-25, "Tasks → Tool-level negotiation").
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// The tool must not be called as a task (the default).
    Forbidden,
    /// The tool may be called as a task or not.
    Optional,
    /// The tool must be called as a task.
    Required,
    /// A value this crate does not know, kept as received.
    #[serde(untagged)]
    Other(String),
}

/// Result of `tools/list`: `{tools, nextCursor?, resultType?, ttlMs?, cacheScope?,
/// _meta?}`.
///
/// Source: all revisions; `resultType`, `ttlMs`, `cacheScope` are 2026-07-28, where
/// they are required on a complete result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// The tools on this page.
    pub tools: Vec<Tool>,
    /// Cursor of the next page, if there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// `resultType` (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// How long the result may be cached, in milliseconds (2026-07-28; ≥ 0 per the
    /// schema, a negative value counts as 0).
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

/// Params of `tools/call`: `{name, arguments?, task?, inputResponses?,
/// requestState?, _meta?}`.
///
/// Source: all revisions; `task` is 2025-11-25 (task augmentation, `{ttl?}`);
/// `inputResponses`, `requestState` are 2026-07-28 (multi round-trip requests), where
/// `_meta` is also required (protocol version and client capabilities).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolRequestParams {
    /// The tool's name.
    pub name: String,
    /// The arguments, an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// Run as a task, with the requested time to live (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// Answers to a previous `input_required` result, keyed by the input request's
    /// key (2026-07-28 `InputResponses`), kept as raw JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<Map<String, Value>>,
    /// Opaque state echoed from a previous `input_required` result (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// `_meta` (progress token; in 2026-07-28 also protocol version, client info and
    /// capabilities).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl CallToolRequestParams {
    /// A call of `name` with the given arguments.
    pub fn new(name: impl Into<String>, arguments: Option<Map<String, Value>>) -> Self {
        CallToolRequestParams {
            name: name.into(),
            arguments,
            ..Default::default()
        }
    }
}

/// Result of `tools/call`: `{content, structuredContent?, isError?, resultType?,
/// _meta?}`.
///
/// Source: all revisions; `structuredContent` from 2025-06-18 (an object in
/// 2025-06-18 and 2025-11-25, any JSON value in 2026-07-28; an explicit `null` is
/// kept as `Some(Value::Null)`); `resultType` 2026-07-28. Before 2025-06-18 the
/// content blocks are limited to text, image, (2025-03-26+) audio and resource.
/// A tool-level failure is `isError: true`, not a JSON-RPC error.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Unstructured result.
    pub content: Vec<ContentBlock>,
    /// Structured result, matching the tool's `outputSchema` if it has one.
    #[serde(
        default,
        deserialize_with = "present_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub structured_content: Option<Value>,
    /// Whether the call failed (absent = false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
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

impl CallToolResult {
    /// Whether `isError` is true.
    pub fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::TextContent;
    use serde_json::json;

    fn round_trip<T: serde::de::DeserializeOwned + Serialize>(v: Value) -> T {
        let t: T = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&t).unwrap(), v);
        t
    }

    #[test]
    fn example_2026_list_tools_result() {
        let r: ListToolsResult = round_trip(json!({"resultType": "complete", "tools": [{
            "name": "get_weather", "title": "Weather Information Provider",
            "description": "Get current weather information for a location",
            "inputSchema": {"type": "object", "properties": {"location": {"type": "string",
                "description": "City name or zip code"}}, "required": ["location"]},
            "icons": [{"src": "https://example.com/weather-icon.png", "mimeType": "image/png",
                "sizes": ["48x48"]}]}],
            "nextCursor": "next-page-cursor", "ttlMs": 300000, "cacheScope": "public"}));
        assert_eq!(r.ttl_ms, Some(300000));
        assert_eq!(r.cache_scope, Some(CacheScope::Public));
        assert_eq!(r.result_type, Some(ResultType::Complete));
        assert_eq!(r.tools[0].display_name(), "Weather Information Provider");
    }

    #[test]
    fn example_2026_tools() {
        let t: Tool = round_trip(json!({"name": "list_users", "title": "User List",
            "description": "Returns a list of all users",
            "inputSchema": {"type": "object", "properties": {}},
            "outputSchema": {"type": "array", "items": {"type": "object"}}}));
        assert_eq!(t.output_schema.unwrap()["type"], "array");
        let t: Tool = round_trip(json!({"name": "get_current_time",
            "description": "Returns the current server time",
            "inputSchema": {"type": "object", "additionalProperties": false}}));
        assert_eq!(t.display_name(), "get_current_time");
        let t: Tool = round_trip(
            json!({"name": "calculate_sum", "description": "Add two numbers",
            "inputSchema": {"$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]}}),
        );
        assert!(t.input_schema.contains_key("$schema"));
    }

    #[test]
    fn older_revision_tools() {
        // 2024-11-05: name, description, inputSchema only.
        let t: Tool = round_trip(json!({"name": "echo", "description": "Echo",
            "inputSchema": {"type": "object"}}));
        assert!(t.title.is_none() && t.annotations.is_none());
        // 2025-03-26 annotations; 2025-11-25 execution.
        let t: Tool = round_trip(json!({"name": "rm", "inputSchema": {"type": "object"},
            "annotations": {"title": "Remove", "destructiveHint": true},
            "execution": {"taskSupport": "optional"}, "x-vendor": 1}));
        assert_eq!(t.display_name(), "Remove");
        assert_eq!(t.task_support(), TaskSupport::Optional);
        assert_eq!(t.extra["x-vendor"], 1);
        let a = t.annotations.unwrap();
        assert!(a.destructive() && !a.read_only() && !a.idempotent() && a.open_world());
        assert!(serde_json::from_value::<Tool>(json!({"name": "x"})).is_err());
    }

    #[test]
    fn display_name_precedence() {
        let mut t = Tool {
            name: "n".into(),
            ..Default::default()
        };
        assert_eq!(t.display_name(), "n");
        t.annotations = Some(ToolAnnotations {
            title: Some("A".into()),
            ..Default::default()
        });
        assert_eq!(t.display_name(), "A");
        t.title = Some("T".into());
        assert_eq!(t.display_name(), "T");
    }

    #[test]
    fn tool_name_rule() {
        for ok in ["a", "get_weather", "A-b.c_9", &"x".repeat(128)] {
            assert!(is_valid_tool_name(ok), "{ok}");
        }
        for bad in ["", "has space", "a/b", "é", "a,b", &"x".repeat(129)] {
            assert!(!is_valid_tool_name(bad), "{bad}");
        }
    }

    #[test]
    fn call_params_all_revisions() {
        let p: CallToolRequestParams = round_trip(json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "ExampleClient", "version": "1.0.0"},
            "io.modelcontextprotocol/clientCapabilities": {}, "progressToken": "oivaizmir"},
            "name": "build_simulation", "arguments": {"city": "Micropolis"}}));
        assert_eq!(p.name, "build_simulation");
        let token = crate::types::meta::progress_token(p.meta.as_ref().unwrap());
        assert_eq!(
            token,
            Some(crate::types::ProgressToken::Str("oivaizmir".into()))
        );
        let p: CallToolRequestParams = round_trip(json!({"name": "slow",
            "task": {"ttl": 60000}}));
        assert_eq!(p.task.unwrap().ttl, Some(60000));
        let p: CallToolRequestParams = round_trip(json!({"name": "ask",
            "inputResponses": {"k": {"action": "accept"}}, "requestState": "opaque"}));
        assert_eq!(p.request_state.as_deref(), Some("opaque"));
        let p: CallToolRequestParams = round_trip(json!({"name": "bare"}));
        assert!(p.arguments.is_none());
        assert_eq!(
            serde_json::to_value(CallToolRequestParams::new("x", None)).unwrap(),
            json!({"name": "x"})
        );
    }

    #[test]
    fn call_results() {
        let r: CallToolResult = round_trip(json!({"resultType": "complete",
            "content": [{"type": "text", "text": "Invalid departure date"}], "isError": true}));
        assert!(r.is_error());
        let r: CallToolResult = round_trip(json!({"resultType": "complete",
            "content": [{"type": "text", "text": "Found 2 users"}],
            "structuredContent": [{"id": "1"}, {"id": "2"}]}));
        assert!(r.structured_content.unwrap().is_array());
        let r: CallToolResult = round_trip(json!({"content": [], "structuredContent": null}));
        assert_eq!(r.structured_content, Some(Value::Null));
        // 2024-11-05 shape with an unknown block type and unknown members.
        let r: CallToolResult = round_trip(json!({"content": [{"type": "text", "text": "a"},
            {"type": "video", "url": "x"}], "_meta": {"a": 1}, "later": true}));
        assert_eq!(r.content[1].type_name(), "video");
        assert!(!r.is_error());
        let built = CallToolResult {
            content: vec![TextContent::new("ok").into()],
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(built).unwrap(),
            json!({"content": [{"type": "text", "text": "ok"}]})
        );
    }
}
