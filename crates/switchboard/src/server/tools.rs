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
//!   block (a tool execution error), or, made by [`ToolError::protocol`], a
//!   JSON-RPC error with the handler's code (within the revision's rules), message
//!   and data; [`ToolError::invalid_arguments`] follows the `inputSchema` rule
//!   above;
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

/// A failed `tools/call`, as the handler reports it. MCP has two layers for it
/// (2025-06-18+ "Tools → Error Handling"; 2024-11-05 and 2025-03-26 "Error
/// Handling" alike):
///
/// - a **tool execution error** ([`ToolError::new`], and every `From`
///   conversion): the call ran and failed; the answer is a `CallToolResult` with
///   `isError: true` whose one text block is [`message`](Self::message), so the
///   model sees it and can correct itself (an API failure, bad input the tool
///   noticed, a business rule);
/// - a **protocol error** ([`ToolError::protocol`]): the request itself is
///   refused; the answer is a JSON-RPC error response `{code, message, data?}`,
///   which a client hands to its caller, not to the model.
///
/// [`ToolError::invalid_arguments`] picks the layer by revision, as the
/// library's own `inputSchema` check does: -32602 before 2025-11-25, a tool
/// execution error from 2025-11-25 on (which made input validation failures tool
/// execution errors "so the model can correct itself").
///
/// The same in every transport and era, including the stateless 2026-07-28 path
/// (where a protocol error's HTTP status is the transport's, by code:
/// `switchboard_transport::http::stateless::status_for_error`, so 200 for the
/// codes a tool may send). An unknown tool is answered -32602 by the library
/// before any handler runs.
///
/// Prompt handlers do not use this type: their failures are
/// [`HandlerError`](super::HandlerError), always JSON-RPC errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    /// What went wrong: the text block of a tool execution error (for the
    /// model), or the JSON-RPC error's `message`.
    pub message: String,
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Execution,
    InvalidArguments,
    Protocol { code: i64, data: Option<Value> },
}

impl ToolError {
    /// A tool execution error with this message: answered as a result with
    /// `isError: true` and `message` as its one text block.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
            kind: Kind::Execution,
        }
    }

    /// A protocol error: the call is answered with the JSON-RPC error
    /// `{code, message, data?}` instead of a result (`data` omitted when `None`).
    ///
    /// Which codes go out as given, by the session's revision (JSON-RPC 2.0 §5.1,
    /// REVISIONS.md §2 "Error codes"):
    /// - any code outside -32768..=-32000 (application errors: where 2026-07-28
    ///   says they should be), -32602 (invalid params) and -32603 (internal
    ///   error), in every revision;
    /// - -32099..=-32000, the implementation-defined server errors, before
    ///   2026-07-28 (e.g. 2025-11-25's -32042 `URLElicitationRequiredError`, a
    ///   `tools/call` answer with `data.elicitations`); in 2026-07-28 only
    ///   -32019..=-32000 but -32002 (which 2026-07-28 MUST NOT send), as it
    ///   reserves -32020..=-32099 for the spec.
    ///
    /// Any other code (-32700, -32600, -32601, the rest of JSON-RPC's reserved
    /// range, and in 2026-07-28 the spec's own codes such as -32022, which would
    /// make a client switch versions, or -32601, which is HTTP 404 there) speaks
    /// for the protocol layer, not for a tool: it is sent as -32603 with the same
    /// message and data, and logged at warn.
    ///
    /// For arguments the model could fix, prefer [`ToolError::new`] or
    /// [`ToolError::invalid_arguments`] (2025-11-25: input validation errors are
    /// tool execution errors).
    pub fn protocol(code: i64, message: impl Into<String>, data: Option<Value>) -> Self {
        ToolError {
            message: message.into(),
            kind: Kind::Protocol { code, data },
        }
    }

    /// Arguments that the tool's own checks refused (beyond what `inputSchema`
    /// says): answered as the library answers arguments that fail `inputSchema`,
    /// -32602 (a protocol error) before 2025-11-25, and from 2025-11-25 on a tool
    /// execution error (`isError: true`, `message` as its text), so that the model
    /// can correct itself (2025-11-25 "Tools → Error Handling").
    pub fn invalid_arguments(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
            kind: Kind::InvalidArguments,
        }
    }

    /// Whether this is a protocol error made by [`ToolError::protocol`].
    pub fn is_protocol_error(&self) -> bool {
        matches!(self.kind, Kind::Protocol { .. })
    }

    /// Whether this was made by [`ToolError::invalid_arguments`].
    pub fn is_invalid_arguments(&self) -> bool {
        matches!(self.kind, Kind::InvalidArguments)
    }

    /// The JSON-RPC code of a protocol error, as the handler gave it (before the
    /// revision's rules of [`ToolError::protocol`]); `None` otherwise.
    pub fn code(&self) -> Option<i64> {
        match &self.kind {
            Kind::Protocol { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// The `data` of a protocol error, if it has one.
    pub fn data(&self) -> Option<&Value> {
        match &self.kind {
            Kind::Protocol { data, .. } => data.as_ref(),
            _ => None,
        }
    }
}

/// Why `code` may not go out as a tool's protocol error in `version` (see
/// [`ToolError::protocol`]), if it may not.
fn refuse_code(code: i64, version: ProtocolVersion) -> Option<&'static str> {
    const JSON_RPC_RESERVED: std::ops::RangeInclusive<i64> = -32768..=-32000;
    if !JSON_RPC_RESERVED.contains(&code)
        || code == code::INVALID_PARAMS
        || code == code::INTERNAL_ERROR
    {
        return None;
    }
    if !code::SERVER_ERROR_RANGE.contains(&code) {
        return Some("a JSON-RPC code about the message itself, not about a tool");
    }
    if version.era() == switchboard_protocol::version::Era::Modern {
        if code <= code::HEADER_MISMATCH {
            return Some("2026-07-28 reserves -32020..=-32099 for the spec");
        }
        if code == code::RESOURCE_NOT_FOUND {
            return Some("2026-07-28 MUST NOT send -32002");
        }
    }
    None
}

impl From<ContextError> for ToolError {
    /// A [`ToolContext`] failure (the client refused a sampling request, a
    /// timeout, ...): a tool execution error with its text.
    fn from(e: ContextError) -> Self {
        ToolError::new(e.to_string())
    }
}

impl From<String> for ToolError {
    /// A tool execution error ([`ToolError::new`]).
    fn from(message: String) -> Self {
        ToolError::new(message)
    }
}

impl From<&str> for ToolError {
    /// A tool execution error ([`ToolError::new`]).
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

/// The answer for a handler's [`ToolError`] in `version` (see its docs).
fn tool_error(
    tool: &str,
    version: ProtocolVersion,
    e: ToolError,
) -> Result<CallToolResult, ErrorObject> {
    match e.kind {
        Kind::Execution => Ok(error_result(e.message)),
        Kind::InvalidArguments if version >= ProtocolVersion::V2025_11_25 => {
            Ok(error_result(e.message))
        }
        Kind::InvalidArguments => Err(ErrorObject::new(code::INVALID_PARAMS, e.message)),
        Kind::Protocol { code: given, data } => {
            let sent = match refuse_code(given, version) {
                None => given,
                Some(why) => {
                    tracing::warn!(tool, code = given, %version, why, "a tool's JSON-RPC error code the protocol layer owns; sent as -32603");
                    code::INTERNAL_ERROR
                }
            };
            let mut obj = ErrorObject::new(sent, e.message);
            if let Some(d) = &data {
                obj = obj.with_data(d);
            }
            Err(obj)
        }
    }
}

/// Finishes `tools/call` with the handler's `outcome` (see [`start`]): a
/// [`ToolError`] becomes an `isError` result or a JSON-RPC error (see its docs);
/// a declared `outputSchema` is checked (-32603 when the result breaks it);
/// structured content gets its text block when it has none, and is dropped
/// before 2025-06-18.
pub(crate) fn finish(
    t: &RegisteredTool,
    version: ProtocolVersion,
    outcome: Result<CallToolResult, ToolError>,
) -> Result<CallToolResult, ErrorObject> {
    let mut result = match outcome {
        Ok(r) => r,
        Err(e) => return tool_error(&t.tool.name, version, e),
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
