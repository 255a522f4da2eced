//! Prompts (server feature): `Prompt`, `PromptArgument`, `PromptMessage`, and the
//! `prompts/list` and `prompts/get` params and results.
//!
//! Source: every revision's "Server features → Prompts". The 2026-07-28
//! `input_required` answer to `prompts/get` is not modelled here (see the
//! multi-round-trip types). This module knows JSON shapes only: it must not fill in
//! templates or check required arguments.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::common::{CacheScope, Cursor, Extra, Icon, Meta, ResultType, Role};
use super::content::ContentBlock;

/// Method `prompts/list` (request; all revisions).
pub const PROMPTS_LIST: &str = "prompts/list";
/// Method `prompts/get` (request; all revisions).
pub const PROMPTS_GET: &str = "prompts/get";
/// Method `notifications/prompts/list_changed` (server notification; all revisions;
/// in 2026-07-28 only on a listen stream).
pub const NOTIFICATION_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";

/// A prompt template the server offers: `{name, title?, description?, arguments?,
/// icons?, _meta?}`.
///
/// Source: all revisions ("Prompts → Prompt"); `title`, `_meta` from 2025-06-18;
/// `icons` from 2025-11-25.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Prompt {
    /// Programmatic name.
    pub name: String,
    /// Display name (2025-06-18+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the prompt provides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments the template accepts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<PromptArgument>>,
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

impl Prompt {
    /// The name to show a user: `title`, then `name` (2025-06-18+).
    pub fn display_name(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }
}

/// An argument a prompt accepts: `{name, title?, description?, required?}`.
///
/// Source: all revisions; `title` from 2025-06-18. The schema defines no `_meta`
/// here; a `_meta` a peer sends anyway is kept in `extra`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgument {
    /// Programmatic name.
    pub name: String,
    /// Display name (2025-06-18+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the argument is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given (absent = false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One message of a prompt: `{role, content}`.
///
/// Source: all revisions ("Prompts → PromptMessage"); `content` is one
/// [`ContentBlock`] (before 2025-06-18 only text, image, (2025-03-26+) audio or
/// resource). The schema defines no `_meta` here; one sent anyway is kept in `extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptMessage {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: ContentBlock,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Result of `prompts/list`: `{prompts, nextCursor?, resultType?, ttlMs?,
/// cacheScope?, _meta?}`.
///
/// Source: all revisions; `resultType`, `ttlMs` (milliseconds, ≥ 0 per the schema;
/// a negative value counts as 0), `cacheScope` are 2026-07-28, where they are
/// required.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListPromptsResult {
    /// The prompts on this page.
    pub prompts: Vec<Prompt>,
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

/// Params of `prompts/get`: `{name, arguments?, inputResponses?, requestState?,
/// _meta?}`.
///
/// Source: all revisions; `arguments` maps argument names to string values;
/// `inputResponses` and `requestState` are 2026-07-28 (multi round-trip requests),
/// where `_meta` is also required.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptRequestParams {
    /// The prompt's name.
    pub name: String,
    /// Argument values by name (strings only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
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

/// Result of `prompts/get`: `{description?, messages, resultType?, _meta?}`.
///
/// Source: all revisions; `resultType` 2026-07-28 (required there).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptResult {
    /// Description of the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
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
        let l: ListPromptsResult = round_trip(json!({"resultType": "complete", "prompts": [{
            "name": "code_review", "title": "Request Code Review",
            "description": "Asks the LLM to analyze code quality and suggest improvements",
            "arguments": [{"name": "code", "description": "The code to review", "required": true}],
            "icons": [{"src": "https://example.com/review-icon.svg", "mimeType": "image/svg+xml",
                "sizes": ["any"]}]}],
            "nextCursor": "next-page-cursor", "ttlMs": 600000, "cacheScope": "public"}));
        assert_eq!(l.prompts[0].display_name(), "Request Code Review");
        assert_eq!(
            l.prompts[0].arguments.as_ref().unwrap()[0].required,
            Some(true)
        );
        let p: GetPromptRequestParams = round_trip(json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "ExampleClient", "version": "1.0.0"},
            "io.modelcontextprotocol/clientCapabilities": {}},
            "name": "code_review", "arguments": {"code": "def hello():\n    print('world')"}}));
        assert_eq!(
            p.arguments.unwrap()["code"],
            "def hello():\n    print('world')"
        );
        let r: GetPromptResult = round_trip(json!({"resultType": "complete",
            "description": "Code review prompt", "messages": [{"role": "user",
                "content": {"type": "text", "text": "Please review this Python code"}}]}));
        assert_eq!(r.messages[0].role, Role::User);
        assert_eq!(
            r.messages[0].content.as_text(),
            Some("Please review this Python code")
        );
    }

    #[test]
    fn older_and_future_shapes() {
        // 2024-11-05: no title, embedded resource content, no resultType.
        let r: GetPromptResult = round_trip(json!({"messages": [{"role": "assistant",
            "content": {"type": "resource", "resource": {"uri": "a:b", "text": "x"}}}]}));
        assert_eq!(r.messages[0].content.type_name(), "resource");
        assert!(r.result_type.is_none());
        // MRTR retry params and unknown members.
        let p: GetPromptRequestParams = round_trip(json!({"name": "n",
            "inputResponses": {"k": {"action": "accept", "content": {"a": 1}}},
            "requestState": "st", "extraThing": 1}));
        assert_eq!(p.extra["extraThing"], 1);
        // Non-string argument values are not valid.
        assert!(serde_json::from_value::<GetPromptRequestParams>(
            json!({"name": "n", "arguments": {"a": 1}})
        )
        .is_err());
        let a: PromptArgument = round_trip(json!({"name": "x", "title": "X", "_meta": {}}));
        assert!(a.extra.contains_key("_meta"));
        let m: PromptMessage = round_trip(json!({"role": "user",
            "content": {"type": "newkind", "blob": 1}}));
        assert_eq!(m.content.type_name(), "newkind");
    }
}
