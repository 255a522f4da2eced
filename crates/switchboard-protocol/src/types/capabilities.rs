//! `ClientCapabilities` and `ServerCapabilities` of every revision (2024-11-05 to
//! 2026-07-28), with their sub-objects and "does the peer support X?" helpers.
//!
//! Sources: each revision's `schema.json` (`ClientCapabilities`, `ServerCapabilities`)
//! and "Lifecycle" → "Capability Negotiation"; 2026-07-28 "Lifecycle" (capabilities
//! per request, `extensions`).
//!
//! Presence matters: a capability such as `logging: {}` is declared by being present,
//! even when empty, so every capability is an `Option` and an empty object round-trips
//! as `{}`. Members not modelled are kept in `extra` maps. This module knows only the
//! shapes; which method needs which capability is [`crate::lifecycle`]'s business.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Extra;

/// A capability whose schema is an open object with no defined members (the schema's
/// `{"type":"object","additionalProperties":true}`, 2026-07-28 `JSONObject`): server
/// `logging` and `completions`, client `elicitation.form`/`url`, `sampling.context`/
/// `tools`, and the task flags. Being present is what declares it; any members are
/// kept in [`EmptyCapability::extra`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmptyCapability {
    /// Members (settings) not modelled here; usually empty.
    #[serde(flatten)]
    pub extra: Extra,
}

impl EmptyCapability {
    /// `{}`.
    pub fn new() -> Self {
        Self::default()
    }
}

/// Client `roots` (all revisions): present if the client can list roots.
/// `listChanged` exists in 2024-11-05 to 2025-11-25; 2026-07-28 defines `roots: {}`
/// only (deprecated there) but the member is still kept when sent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RootsCapability {
    /// Whether the client sends `notifications/roots/list_changed` (2024-11-05 to
    /// 2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Client `sampling` (all revisions): `{}` before 2025-11-25; 2025-11-25 adds
/// `context` and `tools` (2026-07-28: same, deprecated).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SamplingCapability {
    /// Supports `includeContext` other than `"none"` (2025-11-25+). Absent: servers
    /// SHOULD only use `includeContext: "none"` or omit it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<EmptyCapability>,
    /// Supports `tools` and `toolChoice` in `sampling/createMessage` (2025-11-25+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<EmptyCapability>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Client `elicitation` (2025-06-18+): `{}` in 2025-06-18; `{form?, url?}` from
/// 2025-11-25, where an empty object means form mode only (2025-11-25 "Elicitation"
/// → "Capabilities", for backwards compatibility).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationCapability {
    /// Form mode (2025-11-25+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<EmptyCapability>,
    /// URL mode (2025-11-25+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<EmptyCapability>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ElicitationCapability {
    /// Whether form mode is supported: `form` is present, or neither `form` nor `url`
    /// is (the 2025-06-18 `{}` and its 2025-11-25 reading).
    pub fn supports_form(&self) -> bool {
        self.form.is_some() || self.url.is_none()
    }

    /// Whether URL mode is supported (`url` present; 2025-11-25+).
    pub fn supports_url(&self) -> bool {
        self.url.is_some()
    }
}

/// Client `tasks.requests.sampling` (2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientTaskSamplingRequests {
    /// Task-augmented `sampling/createMessage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_message: Option<EmptyCapability>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Client `tasks.requests.elicitation` (2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientTaskElicitationRequests {
    /// Task-augmented `elicitation/create`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create: Option<EmptyCapability>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Client `tasks.requests` (2025-11-25): which server→client requests may be
/// task-augmented.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientTaskRequests {
    /// Sampling requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<ClientTaskSamplingRequests>,
    /// Elicitation requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ClientTaskElicitationRequests>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Client `tasks` (2025-11-25 only; 2026-07-28 moves tasks to the
/// `io.modelcontextprotocol/tasks` extension).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientTasksCapability {
    /// The client answers `tasks/list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<EmptyCapability>,
    /// The client answers `tasks/cancel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<EmptyCapability>,
    /// Request types that may be task-augmented.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<ClientTaskRequests>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Capabilities a client may support (`ClientCapabilities`, all revisions; an open
/// set: unknown members are kept in `extra`).
///
/// Sent in `initialize.params.capabilities` (2024-11-05 to 2025-11-25) or in every
/// request's `_meta["io.modelcontextprotocol/clientCapabilities"]` (2026-07-28), where
/// `{}` means no optional capabilities.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    /// Experimental, non-standard capabilities: name → settings object (all revisions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Map<String, Value>>,
    /// Root listing (all revisions; deprecated in 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<RootsCapability>,
    /// Sampling from an LLM (all revisions; deprecated in 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingCapability>,
    /// Elicitation (2025-06-18+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationCapability>,
    /// Task-augmented requests (2025-11-25 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<ClientTasksCapability>,
    /// Extensions: prefixed identifier (e.g.
    /// `io.modelcontextprotocol/oauth-client-credentials`) → settings object, `{}` for
    /// none (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Map<String, Value>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ClientCapabilities {
    /// Whether `roots` is declared (the server may send `roots/list`).
    pub fn supports_roots(&self) -> bool {
        self.roots.is_some()
    }

    /// Whether `roots.listChanged` is `true`.
    pub fn supports_roots_list_changed(&self) -> bool {
        self.roots
            .as_ref()
            .and_then(|r| r.list_changed)
            .unwrap_or(false)
    }

    /// Whether `sampling` is declared (the server may send `sampling/createMessage`).
    pub fn supports_sampling(&self) -> bool {
        self.sampling.is_some()
    }

    /// Whether `sampling.context` is declared (2025-11-25+).
    pub fn supports_sampling_context(&self) -> bool {
        self.sampling.as_ref().is_some_and(|s| s.context.is_some())
    }

    /// Whether `sampling.tools` is declared (2025-11-25+).
    pub fn supports_sampling_tools(&self) -> bool {
        self.sampling.as_ref().is_some_and(|s| s.tools.is_some())
    }

    /// Whether `elicitation` is declared in any mode.
    pub fn supports_elicitation(&self) -> bool {
        self.elicitation.is_some()
    }

    /// Whether form-mode elicitation is supported: `elicitation.form` is present, or
    /// `elicitation` is `{}` (means form only; 2025-11-25 "Elicitation").
    pub fn supports_elicitation_form(&self) -> bool {
        self.elicitation
            .as_ref()
            .is_some_and(ElicitationCapability::supports_form)
    }

    /// Whether URL-mode elicitation is supported (`elicitation.url`, 2025-11-25+).
    pub fn supports_elicitation_url(&self) -> bool {
        self.elicitation
            .as_ref()
            .is_some_and(ElicitationCapability::supports_url)
    }

    /// Whether `tasks` is declared (2025-11-25).
    pub fn supports_tasks(&self) -> bool {
        self.tasks.is_some()
    }

    /// Whether `tasks.list` is declared (the server may send `tasks/list`).
    pub fn supports_tasks_list(&self) -> bool {
        self.tasks.as_ref().is_some_and(|t| t.list.is_some())
    }

    /// Whether `tasks.cancel` is declared (the server may send `tasks/cancel`).
    pub fn supports_tasks_cancel(&self) -> bool {
        self.tasks.as_ref().is_some_and(|t| t.cancel.is_some())
    }

    /// Whether `sampling/createMessage` may be task-augmented
    /// (`tasks.requests.sampling.createMessage`).
    pub fn supports_task_augmented_sampling(&self) -> bool {
        self.tasks
            .as_ref()
            .and_then(|t| t.requests.as_ref())
            .and_then(|r| r.sampling.as_ref())
            .is_some_and(|s| s.create_message.is_some())
    }

    /// Whether `elicitation/create` may be task-augmented
    /// (`tasks.requests.elicitation.create`).
    pub fn supports_task_augmented_elicitation(&self) -> bool {
        self.tasks
            .as_ref()
            .and_then(|t| t.requests.as_ref())
            .and_then(|r| r.elicitation.as_ref())
            .is_some_and(|e| e.create.is_some())
    }

    /// The settings of extension `id` when declared (2026-07-28).
    pub fn extension(&self, id: &str) -> Option<&Value> {
        self.extensions.as_ref().and_then(|e| e.get(id))
    }

    /// Whether extension `id` is declared (2026-07-28).
    pub fn supports_extension(&self, id: &str) -> bool {
        self.extension(id).is_some()
    }

    /// The settings of experimental capability `name` when declared.
    pub fn experimental(&self, name: &str) -> Option<&Value> {
        self.experimental.as_ref().and_then(|e| e.get(name))
    }
}

/// Server `prompts` (all revisions): present if the server offers prompts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptsCapability {
    /// Whether the server sends `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Server `resources` (all revisions): present if the server offers resources.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    /// Whether the server supports resource subscriptions (`resources/subscribe` in
    /// 2024-11-05 to 2025-11-25; resource update notifications on a listen stream in
    /// 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// Whether the server sends `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Server `tools` (all revisions): present if the server offers tools.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsCapability {
    /// Whether the server sends `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Server `tasks.requests.tools` (2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerTaskToolsRequests {
    /// Task-augmented `tools/call`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<EmptyCapability>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Server `tasks.requests` (2025-11-25): which client→server requests may be
/// task-augmented.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerTaskRequests {
    /// Tool requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ServerTaskToolsRequests>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Server `tasks` (2025-11-25 only; 2026-07-28 moves tasks to the
/// `io.modelcontextprotocol/tasks` extension).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerTasksCapability {
    /// The server answers `tasks/list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<EmptyCapability>,
    /// The server answers `tasks/cancel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<EmptyCapability>,
    /// Request types that may be task-augmented.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<ServerTaskRequests>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Capabilities a server may support (`ServerCapabilities`, all revisions; an open
/// set: unknown members are kept in `extra`).
///
/// Sent in the `initialize` result (2024-11-05 to 2025-11-25) or the
/// `server/discover` result (2026-07-28).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerCapabilities {
    /// Experimental, non-standard capabilities: name → settings object (all revisions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Map<String, Value>>,
    /// The server sends log messages (all revisions; deprecated in 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<EmptyCapability>,
    /// Argument autocompletion, `completion/complete` (2025-03-26+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<EmptyCapability>,
    /// Prompt templates (all revisions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<PromptsCapability>,
    /// Resources (all revisions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// Tools (all revisions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsCapability>,
    /// Task-augmented requests (2025-11-25 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<ServerTasksCapability>,
    /// Extensions: prefixed identifier (e.g. `io.modelcontextprotocol/tasks`) →
    /// settings object, `{}` for none (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Map<String, Value>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ServerCapabilities {
    /// Whether `logging` is declared.
    pub fn supports_logging(&self) -> bool {
        self.logging.is_some()
    }

    /// Whether `completions` is declared (2025-03-26+).
    pub fn supports_completions(&self) -> bool {
        self.completions.is_some()
    }

    /// Whether `prompts` is declared.
    pub fn supports_prompts(&self) -> bool {
        self.prompts.is_some()
    }

    /// Whether `prompts.listChanged` is `true`.
    pub fn supports_prompts_list_changed(&self) -> bool {
        self.prompts
            .as_ref()
            .and_then(|p| p.list_changed)
            .unwrap_or(false)
    }

    /// Whether `resources` is declared.
    pub fn supports_resources(&self) -> bool {
        self.resources.is_some()
    }

    /// Whether `resources.subscribe` is `true`.
    pub fn supports_resource_subscribe(&self) -> bool {
        self.resources
            .as_ref()
            .and_then(|r| r.subscribe)
            .unwrap_or(false)
    }

    /// Whether `resources.listChanged` is `true`.
    pub fn supports_resources_list_changed(&self) -> bool {
        self.resources
            .as_ref()
            .and_then(|r| r.list_changed)
            .unwrap_or(false)
    }

    /// Whether `tools` is declared.
    pub fn supports_tools(&self) -> bool {
        self.tools.is_some()
    }

    /// Whether `tools.listChanged` is `true`.
    pub fn supports_tools_list_changed(&self) -> bool {
        self.tools
            .as_ref()
            .and_then(|t| t.list_changed)
            .unwrap_or(false)
    }

    /// Whether `tasks` is declared (2025-11-25).
    pub fn supports_tasks(&self) -> bool {
        self.tasks.is_some()
    }

    /// Whether `tasks.list` is declared (the client may send `tasks/list`).
    pub fn supports_tasks_list(&self) -> bool {
        self.tasks.as_ref().is_some_and(|t| t.list.is_some())
    }

    /// Whether `tasks.cancel` is declared (the client may send `tasks/cancel`).
    pub fn supports_tasks_cancel(&self) -> bool {
        self.tasks.as_ref().is_some_and(|t| t.cancel.is_some())
    }

    /// Whether `tools/call` may be task-augmented (`tasks.requests.tools.call`).
    pub fn supports_task_augmented_tool_call(&self) -> bool {
        self.tasks
            .as_ref()
            .and_then(|t| t.requests.as_ref())
            .and_then(|r| r.tools.as_ref())
            .is_some_and(|t| t.call.is_some())
    }

    /// The settings of extension `id` when declared (2026-07-28).
    pub fn extension(&self, id: &str) -> Option<&Value> {
        self.extensions.as_ref().and_then(|e| e.get(id))
    }

    /// Whether extension `id` is declared (2026-07-28).
    pub fn supports_extension(&self, id: &str) -> bool {
        self.extension(id).is_some()
    }

    /// The settings of experimental capability `name` when declared.
    pub fn experimental(&self, name: &str) -> Option<&Value> {
        self.experimental.as_ref().and_then(|e| e.get(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip<T: serde::de::DeserializeOwned + Serialize>(v: &Value) -> T {
        let t: T = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(&serde_json::to_value(&t).unwrap(), v, "round trip of {v}");
        t
    }

    #[test]
    fn empty_capabilities_are_present_and_round_trip() {
        let s: ServerCapabilities = round_trip(&json!({"logging": {}}));
        assert!(s.supports_logging());
        assert!(!s.supports_completions());
        let s: ServerCapabilities = round_trip(&json!({}));
        assert!(!s.supports_logging());
        assert_eq!(s, ServerCapabilities::default());
        let c: ClientCapabilities = round_trip(&json!({"sampling": {}, "roots": {}}));
        assert!(c.supports_sampling() && c.supports_roots());
        assert!(!c.supports_roots_list_changed() && !c.supports_sampling_tools());
    }

    #[test]
    fn elicitation_modes() {
        let cases = [
            (json!({}), false, false, false),
            (json!({"elicitation": {}}), true, true, false),
            (json!({"elicitation": {"form": {}}}), true, true, false),
            (json!({"elicitation": {"url": {}}}), true, false, true),
            (
                json!({"elicitation": {"form": {}, "url": {}}}),
                true,
                true,
                true,
            ),
        ];
        for (v, any, form, url) in cases {
            let c: ClientCapabilities = round_trip(&v);
            assert_eq!(c.supports_elicitation(), any, "{v}");
            assert_eq!(c.supports_elicitation_form(), form, "{v}");
            assert_eq!(c.supports_elicitation_url(), url, "{v}");
        }
    }

    #[test]
    fn client_capabilities_of_every_revision() {
        let v = json!({
            "experimental": {"x": {"a": 1}},
            "roots": {"listChanged": true},
            "sampling": {"context": {}, "tools": {}},
            "elicitation": {"form": {}, "url": {}},
            "tasks": {
                "list": {}, "cancel": {},
                "requests": {"sampling": {"createMessage": {}}, "elicitation": {"create": {}}}
            },
            "extensions": {"io.modelcontextprotocol/oauth-client-credentials": {}},
            "future": {"y": true}
        });
        let c: ClientCapabilities = round_trip(&v);
        assert!(c.supports_roots_list_changed());
        assert!(c.supports_sampling_context() && c.supports_sampling_tools());
        assert!(c.supports_tasks_list() && c.supports_tasks_cancel());
        assert!(c.supports_task_augmented_sampling());
        assert!(c.supports_task_augmented_elicitation());
        assert!(c.supports_extension("io.modelcontextprotocol/oauth-client-credentials"));
        assert!(!c.supports_extension("io.modelcontextprotocol/ui"));
        assert_eq!(c.experimental("x"), Some(&json!({"a": 1})));
        assert_eq!(c.extra["future"], json!({"y": true}));
        let c: ClientCapabilities = round_trip(&json!({"tasks": {}}));
        assert!(c.supports_tasks() && !c.supports_tasks_list());
        assert!(!c.supports_task_augmented_sampling());
    }

    #[test]
    fn server_capabilities_of_every_revision() {
        let v = json!({
            "experimental": {},
            "logging": {},
            "completions": {"extraSetting": 3},
            "prompts": {"listChanged": false},
            "resources": {"subscribe": true, "listChanged": true},
            "tools": {"listChanged": true},
            "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
            "extensions": {"io.modelcontextprotocol/tasks": {"k": "v"}}
        });
        let s: ServerCapabilities = round_trip(&v);
        assert!(s.supports_completions());
        assert!(s.supports_prompts() && !s.supports_prompts_list_changed());
        assert!(s.supports_resource_subscribe() && s.supports_resources_list_changed());
        assert!(s.supports_tools() && s.supports_tools_list_changed());
        assert!(s.supports_tasks_list() && s.supports_tasks_cancel());
        assert!(s.supports_task_augmented_tool_call());
        assert_eq!(
            s.extension("io.modelcontextprotocol/tasks"),
            Some(&json!({"k": "v"}))
        );
        let s: ServerCapabilities = round_trip(&json!({"resources": {}, "tools": {}}));
        assert!(s.supports_resources() && !s.supports_resource_subscribe());
        assert!(s.supports_tools() && !s.supports_tools_list_changed());
        assert!(!s.supports_task_augmented_tool_call());
    }

    #[test]
    fn spec_examples_round_trip() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/spec/2026-07-28/examples"
        );
        let mut seen = 0;
        for (def, client) in [("ClientCapabilities", true), ("ServerCapabilities", false)] {
            let Ok(entries) = std::fs::read_dir(format!("{dir}/{def}")) else {
                continue;
            };
            for e in entries {
                let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
                let v: Value = serde_json::from_str(&text).unwrap();
                if client {
                    round_trip::<ClientCapabilities>(&v);
                } else {
                    round_trip::<ServerCapabilities>(&v);
                }
                seen += 1;
            }
        }
        // The spec material is optional in a checkout; when present it has examples.
        if std::path::Path::new(dir).exists() {
            assert!(seen > 0);
        }
    }

    #[test]
    fn explicit_false_is_kept() {
        let s: ServerCapabilities =
            round_trip(&json!({"resources": {"subscribe": false, "listChanged": false}}));
        assert_eq!(s.resources.as_ref().unwrap().subscribe, Some(false));
    }
}
