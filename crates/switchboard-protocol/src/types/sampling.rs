//! Sampling: a server asks the client's LLM for a completion
//! (`sampling/createMessage`).
//!
//! Sources: "Client features → Sampling" of every revision. 2024-11-05 allows text
//! and image content, 2025-03-26 adds audio; 2025-11-25 adds tool use (`tools`,
//! `toolChoice`, `tool_use`/`tool_result` blocks, content as an array) and `task`;
//! in 2026-07-28 the request only travels inside a multi round-trip `inputRequests`
//! map and Sampling (with `includeContext` values other than `"none"`) is deprecated.
//!
//! This module holds only the wire shapes; it must not know how a client picks a
//! model, asks the user for approval or runs the tools.

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use super::common::{Extra, Meta, Role};
use super::content::SamplingMessageContentBlock;
use super::tasks::TaskMetadata;
use super::tools::Tool;

/// `sampling/createMessage` (server→client request in 2024-11-05 to 2025-11-25; an
/// `inputRequests` entry in 2026-07-28): params [`CreateMessageRequestParams`],
/// result [`CreateMessageResult`].
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";

/// The `content` of a [`SamplingMessage`] or a [`CreateMessageResult`]: one block
/// (every revision) or an array of blocks (2025-11-25+). The schema gives this union
/// no name of its own.
///
/// Decoding: a JSON array → [`SamplingContent::Multiple`], an object →
/// [`SamplingContent::Single`]; either way blocks of an unknown `type` are kept.
#[derive(Debug, Clone, PartialEq)]
pub enum SamplingContent {
    /// A single block (the only shape before 2025-11-25); boxed to keep the enum
    /// small.
    Single(Box<SamplingMessageContentBlock>),
    /// Several blocks (2025-11-25+), e.g. parallel `tool_use` blocks.
    Multiple(Vec<SamplingMessageContentBlock>),
}

impl SamplingContent {
    /// The blocks, one or many, in order.
    pub fn blocks(&self) -> &[SamplingMessageContentBlock] {
        match self {
            SamplingContent::Single(b) => std::slice::from_ref(&**b),
            SamplingContent::Multiple(v) => v,
        }
    }
}

impl From<SamplingMessageContentBlock> for SamplingContent {
    fn from(b: SamplingMessageContentBlock) -> Self {
        SamplingContent::Single(Box::new(b))
    }
}

impl Serialize for SamplingContent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SamplingContent::Single(b) => b.serialize(s),
            SamplingContent::Multiple(v) => v.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for SamplingContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            v @ Value::Array(_) => serde_json::from_value(v)
                .map(SamplingContent::Multiple)
                .map_err(de::Error::custom),
            v @ Value::Object(_) => serde_json::from_value(v)
                .map(|b| SamplingContent::Single(Box::new(b)))
                .map_err(de::Error::custom),
            _ => Err(de::Error::custom(
                "sampling content must be a content block or an array of them",
            )),
        }
    }
}

/// One message of the conversation to sample from: `{role, content, _meta?}`
/// (schema `SamplingMessage`, all revisions; `_meta` and array content from
/// 2025-11-25).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SamplingMessage {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: SamplingContent,
    /// `_meta` (2025-11-25+).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl SamplingMessage {
    /// A message with one block.
    pub fn new(role: Role, block: SamplingMessageContentBlock) -> Self {
        SamplingMessage {
            role,
            content: SamplingContent::Single(Box::new(block)),
            meta: None,
            extra: Extra::new(),
        }
    }
}

/// The server's model preferences: `{hints?, costPriority?, speedPriority?,
/// intelligencePriority?}`, priorities from 0 to 1 (schema `ModelPreferences`, all
/// revisions). Priorities are kept as JSON numbers, so `1` stays `1`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelPreferences {
    /// Model name hints, in order of preference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<ModelHint>>,
    /// How much cost matters (0–1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_priority: Option<Number>,
    /// How much latency matters (0–1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_priority: Option<Number>,
    /// How much capability matters (0–1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intelligence_priority: Option<Number>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A model hint: `{name?}`, a substring of a model name such as `"claude-3-5"`
/// (schema `ModelHint`, all revisions).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelHint {
    /// A (partial) model name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `includeContext`: which servers' context the client should add (all revisions;
/// `thisServer` and `allServers` are deprecated in 2026-07-28).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum IncludeContext {
    /// No context.
    None,
    /// Context from the requesting server only.
    ThisServer,
    /// Context from every connected server.
    AllServers,
}

/// `ToolChoice.mode` (2025-11-25+).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoiceMode {
    /// The model decides.
    Auto,
    /// The model must use at least one tool.
    Required,
    /// The model must not use tools.
    None,
}

/// How the model may use the offered tools: `{mode?}` (schema `ToolChoice`,
/// 2025-11-25+). An absent mode means `auto`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolChoice {
    /// The mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ToolChoiceMode>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `sampling/createMessage` (schema `CreateMessageRequestParams`,
/// 2025-11-25+; the inline params of `CreateMessageRequest` before that):
/// `{messages, modelPreferences?, systemPrompt?, includeContext?, temperature?,
/// maxTokens, stopSequences?, metadata?, tools?, toolChoice?, task?, _meta?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageRequestParams {
    /// The conversation.
    pub messages: Vec<SamplingMessage>,
    /// Model preferences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    /// A system prompt the client may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Context to include.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<IncludeContext>,
    /// Sampling temperature, kept as a JSON number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<Number>,
    /// Maximum number of tokens to sample.
    pub max_tokens: i64,
    /// Sequences that stop sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider-specific metadata passed through to the LLM provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Tools the model may use (2025-11-25+; needs the client's `sampling.tools`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// How the model may use `tools` (2025-11-25+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Run the request as a task (2025-11-25 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// `_meta` (not in the 2026-07-28 schema; kept if sent).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl CreateMessageRequestParams {
    /// Params with just the conversation and the token limit.
    pub fn new(messages: Vec<SamplingMessage>, max_tokens: i64) -> Self {
        CreateMessageRequestParams {
            messages,
            model_preferences: None,
            system_prompt: None,
            include_context: None,
            temperature: None,
            max_tokens,
            stop_sequences: None,
            metadata: None,
            tools: None,
            tool_choice: None,
            task: None,
            meta: None,
            extra: Extra::new(),
        }
    }
}

/// Why sampling stopped (`CreateMessageResult.stopReason`, a free string in the
/// schema). The values the spec names are variants; any other is kept as
/// [`StopReason::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// The model finished its turn.
    EndTurn,
    /// A stop sequence was produced.
    StopSequence,
    /// `maxTokens` was reached.
    MaxTokens,
    /// The model wants to use a tool (2025-11-25+).
    ToolUse,
    /// Any other reason, as sent.
    #[serde(untagged)]
    Other(String),
}

/// The client's answer to `sampling/createMessage`: `{role, content, model,
/// stopReason?, _meta?}` (schema `CreateMessageResult`, all revisions; array
/// content and tool blocks from 2025-11-25).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// Who produced the content (normally `assistant`).
    pub role: Role,
    /// The sampled content.
    pub content: SamplingContent,
    /// The model that produced it.
    pub model: String,
    /// Why sampling stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
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
    fn request_2024_11_05_shape() {
        let p: CreateMessageRequestParams = round_trip(json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}},
                {"role": "user", "content": {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}}
            ],
            "modelPreferences": {
                "hints": [{"name": "claude-3-sonnet"}],
                "intelligencePriority": 0.8,
                "speedPriority": 0.5,
                "costPriority": 1
            },
            "systemPrompt": "You are a helpful assistant.",
            "includeContext": "thisServer",
            "temperature": 1,
            "maxTokens": 100,
            "stopSequences": ["\n\n"],
            "metadata": {"provider": {"x": 1}}
        }));
        assert_eq!(p.max_tokens, 100);
        assert_eq!(p.include_context, Some(IncludeContext::ThisServer));
        assert_eq!(p.messages.len(), 2);
        assert!(matches!(
            &p.messages[0].content,
            SamplingContent::Single(b) if matches!(**b, SamplingMessageContentBlock::Text(_))
        ));
        let prefs = p.model_preferences.unwrap();
        assert_eq!(
            prefs.hints.unwrap()[0].name.as_deref(),
            Some("claude-3-sonnet")
        );
        assert_eq!(
            prefs.intelligence_priority.and_then(|n| n.as_f64()),
            Some(0.8)
        );
    }

    #[test]
    fn request_2025_11_25_with_tools_and_arrays() {
        let p: CreateMessageRequestParams = round_trip(json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Weather in Paris?"}},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "toolUseId": "call_1",
                     "content": [{"type": "text", "text": "18°C"}]}
                ], "_meta": {"k": "v"}}
            ],
            "tools": [{"name": "get_weather", "inputSchema": {"type": "object"}}],
            "toolChoice": {"mode": "required"},
            "task": {"ttl": 30000},
            "maxTokens": 500,
            "_meta": {"progressToken": "p1"}
        }));
        assert_eq!(p.tools.as_ref().unwrap()[0].name, "get_weather");
        assert_eq!(
            p.tool_choice.as_ref().unwrap().mode,
            Some(ToolChoiceMode::Required)
        );
        assert_eq!(p.task.as_ref().unwrap().ttl, Some(30000));
        let blocks = p.messages[1].content.blocks();
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].type_name(), "tool_use");
        assert_eq!(p.messages[2].content.blocks()[0].type_name(), "tool_result");
        assert_eq!(p.messages[0].content.blocks().len(), 1);
    }

    #[test]
    fn results_of_each_revision() {
        let r: CreateMessageResult = round_trip(json!({
            "role": "assistant",
            "content": {"type": "text", "text": "The capital of France is Paris."},
            "model": "claude-3-sonnet-20240307",
            "stopReason": "endTurn"
        }));
        assert_eq!(r.stop_reason, Some(StopReason::EndTurn));
        assert_eq!(r.role, Role::Assistant);
        let r: CreateMessageResult = round_trip(json!({
            "role": "assistant",
            "content": {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
            "model": "m", "_meta": {}
        }));
        assert_eq!(r.stop_reason, None);
        let r: CreateMessageResult = round_trip(json!({
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "a", "name": "t", "input": {}},
                {"type": "tool_use", "id": "b", "name": "t", "input": {"x": 1}}
            ],
            "model": "m", "stopReason": "toolUse"
        }));
        assert_eq!(r.stop_reason, Some(StopReason::ToolUse));
        assert_eq!(r.content.blocks().len(), 2);
        let r: CreateMessageResult = round_trip(json!({
            "role": "assistant", "content": {"type": "text", "text": "x"},
            "model": "m", "stopReason": "refusal", "futureField": 1
        }));
        assert_eq!(r.stop_reason, Some(StopReason::Other("refusal".into())));
        assert_eq!(r.extra["futureField"], json!(1));
    }

    #[test]
    fn unknown_blocks_kept_and_bad_content_refused() {
        let m: SamplingMessage = round_trip(json!({
            "role": "user", "content": {"type": "video", "url": "https://x"}
        }));
        assert_eq!(m.content.blocks()[0].type_name(), "video");
        assert!(serde_json::from_value::<SamplingMessage>(
            json!({"role": "user", "content": "text"})
        )
        .is_err());
        assert!(
            serde_json::from_value::<CreateMessageRequestParams>(json!({"messages": []})).is_err(),
            "maxTokens is required"
        );
        assert!(serde_json::from_value::<CreateMessageRequestParams>(
            json!({"messages": [], "maxTokens": 1, "includeContext": "everything"})
        )
        .is_err());
    }

    #[test]
    fn constructors() {
        let text: SamplingMessageContentBlock =
            serde_json::from_value(json!({"type": "text", "text": "hi"})).unwrap();
        let p = CreateMessageRequestParams::new(vec![SamplingMessage::new(Role::User, text)], 10);
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10})
        );
    }
}
