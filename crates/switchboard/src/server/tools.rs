//! Tools: registration (schemas compiled once), argument validation, the call, and
//! the result rules ("Server features → Tools" of every revision; REVISIONS.md §7).
//!
//! Rules applied by [`Server::handle`](super::Server::handle) for `tools/call`:
//! - an unknown tool → -32602;
//! - arguments are validated against `inputSchema` (JSON Schema; 2020-12 unless the
//!   schema's `$schema` names another draft) before the handler runs. A failure is
//!   -32602 before 2025-11-25 and, from 2025-11-25 on, a tool execution error
//!   (`isError: true` with the validation messages as text), as 2025-11-25 moved
//!   input validation errors into the result so the model can correct itself;
//! - a handler's [`ToolError`] becomes `isError: true` with the message as a text
//!   block;
//! - a declared `outputSchema` binds the server: a successful result must carry
//!   `structuredContent` that validates, otherwise the answer is -32603 (internal
//!   error: the server broke its own contract, the client is not at fault). When the
//!   handler gave structured content but no content blocks, the JSON is added as a text
//!   block (the spec's SHOULD, and what clients before 2025-06-18 can read);
//!   `structuredContent` itself is dropped for those revisions.
//!
//! This module must not know about transports or JSON-RPC ids.

use std::sync::Arc;

use serde_json::{Map, Value};
use switchboard_protocol::jsonrpc::{code, ErrorObject};
use switchboard_protocol::types::{CallToolResult, TextContent, Tool};
use switchboard_protocol::ProtocolVersion;

use super::context::{BoxFuture, ContextError, ToolContext};

/// A tool's arguments: the `arguments` object of `tools/call` (`{}` when absent),
/// already validated against the tool's `inputSchema`.
pub type Arguments = Map<String, Value>;

/// A tool execution failure, reported to the client as a result with `isError: true`
/// whose one text block is `message` (not as a JSON-RPC error; "Tools → Error
/// Handling").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    /// What went wrong, for the model.
    pub message: String,
}

impl ToolError {
    /// A failure with this message.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
        }
    }
}

impl From<ContextError> for ToolError {
    fn from(e: ContextError) -> Self {
        ToolError::new(e.to_string())
    }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError { message }
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        ToolError::new(message)
    }
}

pub(crate) type ToolHandler = Arc<
    dyn Fn(Arguments, ToolContext) -> BoxFuture<'static, Result<CallToolResult, ToolError>>
        + Send
        + Sync,
>;

/// A registered tool: its definition, compiled schemas and handler.
pub(crate) struct RegisteredTool {
    pub(crate) tool: Tool,
    pub(crate) input: jsonschema::Validator,
    pub(crate) output: Option<jsonschema::Validator>,
    pub(crate) handler: ToolHandler,
}

/// Compiles a schema, or says why it does not compile. No retriever is configured, so
/// a `$ref` to anything outside the schema fails here rather than being fetched
/// (2026-07-28: network `$ref`s MUST NOT be dereferenced automatically).
pub(crate) fn compile(schema: &Map<String, Value>) -> Result<jsonschema::Validator, String> {
    jsonschema::validator_for(&Value::Object(schema.clone())).map_err(|e| e.to_string())
}

/// The validation messages of `instance`, at most 10, each `path: message`; empty
/// when valid.
pub(crate) fn violations(validator: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .take(10)
        .map(|e| {
            let path = e.instance_path().to_string();
            if path.is_empty() {
                e.to_string()
            } else {
                format!("{path}: {e}")
            }
        })
        .collect()
}

fn error_result(message: String) -> CallToolResult {
    CallToolResult {
        content: vec![TextContent::new(message).into()],
        is_error: Some(true),
        ..Default::default()
    }
}

/// A running tool handler: its future, from [`start`].
pub(crate) type Running = BoxFuture<'static, Result<CallToolResult, ToolError>>;

/// Starts `tools/call` for a found tool: validates the arguments against the
/// tool's `inputSchema` and, when they pass, calls the handler, whose future
/// comes back (its result goes to [`finish`]). Invalid arguments come back as the
/// answer instead (boxed: it is rare, and large): `Ok` with an `isError` result
/// from 2025-11-25 on, `Err` -32602 before.
pub(crate) fn start(
    t: &RegisteredTool,
    version: ProtocolVersion,
    arguments: Option<Map<String, Value>>,
    ctx: ToolContext,
) -> Result<Running, Box<Result<CallToolResult, ErrorObject>>> {
    let args = Value::Object(arguments.unwrap_or_default());
    // The messages are gathered only for arguments that fail: `is_valid` stops at
    // the first problem and allocates nothing.
    if !t.input.is_valid(&args) {
        let message = format!(
            "invalid arguments for tool {}: {}",
            t.tool.name,
            violations(&t.input, &args).join("; ")
        );
        return Err(Box::new(if version >= ProtocolVersion::V2025_11_25 {
            Ok(error_result(message))
        } else {
            Err(ErrorObject::new(code::INVALID_PARAMS, message))
        }));
    }
    let Value::Object(args) = args else {
        unreachable!("built from a map")
    };
    Ok((t.handler)(args, ctx))
}

/// Finishes `tools/call` with the handler's `outcome` (see [`start`]): a
/// [`ToolError`] becomes an `isError` result; a declared `outputSchema` is
/// checked (-32603 when the result breaks it); structured content gets its text
/// block when it has none, and is dropped before 2025-06-18.
pub(crate) fn finish(
    t: &RegisteredTool,
    version: ProtocolVersion,
    outcome: Result<CallToolResult, ToolError>,
) -> Result<CallToolResult, ErrorObject> {
    let mut result = match outcome {
        Ok(r) => r,
        Err(e) => return Ok(error_result(e.message)),
    };
    if let (Some(schema), false) = (&t.output, result.is_error()) {
        let Some(structured) = &result.structured_content else {
            return Err(ErrorObject::new(
                code::INTERNAL_ERROR,
                format!(
                    "tool {} declares an outputSchema but returned no structuredContent",
                    t.tool.name
                ),
            ));
        };
        let problems = violations(schema, structured);
        if !problems.is_empty() {
            return Err(ErrorObject::new(
                code::INTERNAL_ERROR,
                format!(
                    "tool {} returned structuredContent that does not match its outputSchema: {}",
                    t.tool.name,
                    problems.join("; ")
                ),
            ));
        }
    }
    if let Some(structured) = &result.structured_content {
        if result.content.is_empty() {
            result
                .content
                .push(TextContent::new(structured.to_string()).into());
        }
    }
    if version < ProtocolVersion::V2025_06_18 {
        result.structured_content = None;
    }
    Ok(result)
}

/// The tool as a revision's `tools/list` shows it: members the revision lacks are
/// left out (`annotations` before 2025-03-26; `title`, `outputSchema`, `_meta` before
/// 2025-06-18; `icons` before 2025-11-25; `execution` outside 2025-11-25).
pub(crate) fn for_revision(tool: &Tool, version: ProtocolVersion) -> Tool {
    let mut t = tool.clone();
    if version < ProtocolVersion::V2025_03_26 {
        t.annotations = None;
    }
    if version < ProtocolVersion::V2025_06_18 {
        t.title = None;
        t.output_schema = None;
        t.meta = None;
    }
    if version < ProtocolVersion::V2025_11_25 {
        t.icons = None;
    }
    if version != ProtocolVersion::V2025_11_25 {
        t.execution = None;
    }
    t
}
