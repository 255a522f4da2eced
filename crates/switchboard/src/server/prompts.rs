//! Prompts: registration and what a `prompts/get` handler gets ("Server features →
//! Prompts").
//!
//! `prompts/get` rules applied by [`Server::handle`](super::Server::handle): an unknown
//! prompt → -32602; a missing required argument → -32602 naming it; arguments the
//! prompt does not declare are passed on untouched (the spec does not forbid them).
//!
//! This module must not know about transports, JSON-RPC ids or sessions.

use std::collections::BTreeMap;
use std::sync::Arc;

use switchboard_protocol::types::{GetPromptResult, Prompt};

use super::context::{BoxFuture, ToolContext};
use super::HandlerError;

/// A prompt's arguments: name → value (strings only, as in `prompts/get`), with every
/// required argument present.
pub type PromptArguments = BTreeMap<String, String>;

pub(crate) type PromptHandler = Arc<
    dyn Fn(
            PromptArguments,
            ToolContext,
        ) -> BoxFuture<'static, Result<GetPromptResult, HandlerError>>
        + Send
        + Sync,
>;

pub(crate) struct RegisteredPrompt {
    pub(crate) prompt: Prompt,
    pub(crate) handler: PromptHandler,
}

impl RegisteredPrompt {
    /// The first required argument missing from `args`, if any.
    pub(crate) fn missing_required(&self, args: &PromptArguments) -> Option<&str> {
        self.prompt
            .arguments
            .iter()
            .flatten()
            .find(|a| a.required == Some(true) && !args.contains_key(&a.name))
            .map(|a| a.name.as_str())
    }

    pub(crate) fn has_argument(&self, name: &str) -> bool {
        self.prompt
            .arguments
            .iter()
            .flatten()
            .any(|a| a.name == name)
    }
}
