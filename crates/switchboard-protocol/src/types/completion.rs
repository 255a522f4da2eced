//! Argument completion (server feature): `completion/complete` params and result,
//! and the prompt and resource-template references.
//!
//! Source: every revision's "Server features → Utilities → Completion" (the
//! `completions` capability is 2025-03-26+). This module knows JSON shapes only: it
//! must not compute completions.

use std::collections::BTreeMap;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::common::{Extra, Meta, ResultType};

/// Method `completion/complete` (request; all revisions).
pub const COMPLETION_COMPLETE: &str = "completion/complete";

/// Most values a `CompleteResult` may carry (all revisions).
pub const COMPLETION_MAX_VALUES: usize = 100;

const_tag!(
    /// The `type` of a [`PromptReference`]: always `"ref/prompt"`.
    PromptReferenceType = "ref/prompt"
);
const_tag!(
    /// The `type` of a [`ResourceTemplateReference`]: always `"ref/resource"`.
    ResourceTemplateReferenceType = "ref/resource"
);

/// Identifies a prompt: `{type:"ref/prompt", name, title?}`.
///
/// Source: all revisions; `title` from 2025-06-18.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptReference {
    /// Always `"ref/prompt"`.
    #[serde(rename = "type")]
    pub kind: PromptReferenceType,
    /// The prompt's name.
    pub name: String,
    /// Display name (2025-06-18+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Identifies a resource template: `{type:"ref/resource", uri}` where `uri` is the
/// URI template.
///
/// Source: 2025-06-18+ as `ResourceTemplateReference`; 2024-11-05 and 2025-03-26 call
/// the same shape `ResourceReference` (see [`ResourceReference`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplateReference {
    /// Always `"ref/resource"`.
    #[serde(rename = "type")]
    pub kind: ResourceTemplateReferenceType,
    /// The URI or URI template.
    pub uri: String,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The 2024-11-05 / 2025-03-26 name of [`ResourceTemplateReference`] (same shape).
pub type ResourceReference = ResourceTemplateReference;

/// `CompleteRequestParams.ref`: what is being completed (all revisions).
///
/// Dispatches on `type`; a well-formed object with another `type` is kept whole in
/// [`Other`](Self::Other). A known `type` with a bad shape, or no `type`, is an error.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum CompleteReference {
    /// `ref/prompt`.
    Prompt(PromptReference),
    /// `ref/resource`.
    ResourceTemplate(ResourceTemplateReference),
    /// Any other `type`, kept as received.
    Other(Map<String, Value>),
}

impl<'de> Deserialize<'de> for CompleteReference {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        let kind = match map.get("type") {
            None => return Err(D::Error::missing_field("type")),
            Some(v) => v.as_str().map(str::to_owned),
        };
        let v = Value::Object(map);
        Ok(match kind.as_deref() {
            Some(PromptReferenceType::VALUE) => {
                CompleteReference::Prompt(serde_json::from_value(v).map_err(D::Error::custom)?)
            }
            Some(ResourceTemplateReferenceType::VALUE) => CompleteReference::ResourceTemplate(
                serde_json::from_value(v).map_err(D::Error::custom)?,
            ),
            _ => match v {
                Value::Object(m) => CompleteReference::Other(m),
                _ => unreachable!("built from a map"),
            },
        })
    }
}

/// `CompleteRequestParams.argument`: `{name, value}` — the argument being completed
/// and what the user typed so far (all revisions).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteArgument {
    /// The argument's name.
    pub name: String,
    /// The partial value.
    pub value: String,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `CompleteRequestParams.context`: `{arguments?}` — values already resolved for
/// other arguments (2025-06-18+).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteContext {
    /// Argument values by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `completion/complete`: `{ref, argument, context?, _meta?}`.
///
/// Source: all revisions; `context` from 2025-06-18; `_meta` required in 2026-07-28.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteRequestParams {
    /// The prompt or resource template.
    #[serde(rename = "ref")]
    pub reference: CompleteReference,
    /// The argument being completed.
    pub argument: CompleteArgument,
    /// Other arguments' values (2025-06-18+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompleteContext>,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `CompleteResult.completion`: `{values, total?, hasMore?}` (all revisions).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteResultCompletion {
    /// Suggested values, at most [`COMPLETION_MAX_VALUES`] (not enforced on decode).
    pub values: Vec<String>,
    /// How many values exist in all (may exceed `values.len()`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<i64>,
    /// Whether more values exist than were returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Result of `completion/complete`: `{completion, resultType?, _meta?}`.
///
/// Source: all revisions; `resultType` 2026-07-28 (required there).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteResult {
    /// The suggestions.
    pub completion: CompleteResultCompletion,
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
        let p: CompleteRequestParams = round_trip(json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "ExampleClient", "version": "1.0.0"},
            "io.modelcontextprotocol/clientCapabilities": {}},
            "ref": {"type": "ref/prompt", "name": "code_review"},
            "argument": {"name": "framework", "value": "fla"},
            "context": {"arguments": {"language": "python"}}}));
        assert!(matches!(p.reference, CompleteReference::Prompt(ref r) if r.name == "code_review"));
        assert_eq!(p.context.unwrap().arguments.unwrap()["language"], "python");
        let r: CompleteResult = round_trip(json!({"resultType": "complete",
            "completion": {"values": ["python", "pytorch", "pyside"], "total": 10,
                "hasMore": true}}));
        assert_eq!(r.completion.total, Some(10));
        assert_eq!(r.completion.has_more, Some(true));
        let r: CompleteResult = round_trip(json!({"resultType": "complete",
            "completion": {"values": ["flask"], "total": 1, "hasMore": false}}));
        assert_eq!(r.completion.values, ["flask"]);
    }

    #[test]
    fn older_revisions_and_unknown_refs() {
        // 2024-11-05 ResourceReference, no context, no _meta.
        let p: CompleteRequestParams = round_trip(json!({
            "ref": {"type": "ref/resource", "uri": "file:///{path}"},
            "argument": {"name": "path", "value": "sr"}}));
        assert!(matches!(p.reference,
            CompleteReference::ResourceTemplate(ref r) if r.uri == "file:///{path}"));
        let r: CompleteResult = round_trip(json!({"completion": {"values": []}}));
        assert!(r.result_type.is_none() && r.completion.total.is_none());
        let p: CompleteRequestParams = round_trip(json!({
            "ref": {"type": "ref/tool", "name": "x"}, "argument": {"name": "a", "value": ""}}));
        assert!(matches!(p.reference, CompleteReference::Other(_)));
        assert!(
            serde_json::from_value::<CompleteReference>(json!({"type": "ref/prompt"})).is_err()
        );
        assert!(serde_json::from_value::<CompleteReference>(json!({"name": "x"})).is_err());
        let r: PromptReference =
            round_trip(json!({"type": "ref/prompt", "name": "p", "title": "P", "x": 1}));
        assert_eq!(r.extra["x"], 1);
    }
}
