//! The MCP lifecycle of each side as explicit state machines, and the capability rules
//! that gate every method. Sans-IO: the caller feeds in what arrived and asks before it
//! sends; nothing here reads a clock, a socket or a task.
//!
//! # Legacy (2024-11-05 to 2025-11-25, "Lifecycle")
//!
//! ```text
//! client                                   server
//!   | Idle                                   | AwaitingInitialize
//!   |--- initialize{protocolVersion,... } -->|
//!   | Initializing                           | Initializing{version, client caps}
//!   |<-- result{protocolVersion, caps, ..} --|  (initialize_response)
//!   | Initialized (version accepted)         | AwaitingInitialized
//!   |--- notifications/initialized -------->|
//!   | Operating                              | Operating
//!   |        ... capability-gated traffic, ping both ways ...
//!   | Closed (no shutdown message)           | Closed
//! ```
//!
//! Rules and the answer to each violation (codes from [`crate::jsonrpc::code`]):
//!
//! | rule | source | answer |
//! |---|---|---|
//! | before initialization, a peer request other than `ping`/`initialize` | "Lifecycle" → "Initialization" (SHOULD NOT; the spec names no code) | -32600 (our choice) |
//! | a second `initialize` | same (the spec names no code) | -32600 (our choice) |
//! | `notifications/initialized` before the `initialize` response | same | rejected for logging (never answered) |
//! | `notifications/cancelled` for `initialize` | "Cancellation": `initialize` MUST NOT be cancelled | rejected for logging |
//! | unsupported version in `initialize` on a server with no legacy revision | 2026-07-28 "Era detection": implementation-defined | -32602 with `data{supported, requested}` |
//! | server sends anything but `ping` and logging before `initialized` | "Initialization" | refused locally |
//! | client sends anything but `ping` before the `initialize` response | "Initialization" | refused locally |
//! | a request needing a capability the receiver did not declare | "Capability Negotiation" | -32601 (method not found) |
//! | a request using a feature of a declared capability that was not declared (elicitation `mode`, sampling `tools`) | 2025-11-25 "Elicitation", "Sampling" | -32602 |
//!
//! Where the spec is silent the choices are: requests that arrive after the server sent
//! its `initialize` response but before `notifications/initialized` are accepted (over
//! HTTP they may overtake the notification), and the server may then also send
//! `notifications/progress` and `notifications/cancelled` for them; incoming
//! notifications that only refer to other requests (`notifications/cancelled`,
//! `notifications/progress`) are accepted at any time before [`ServerState::Closed`];
//! a message after close is -32600; an undeclared elicitation mode or sampling `tools`
//! is -32602 while a wholly undeclared capability is -32601.
//!
//! # Modern (2026-07-28, "Lifecycle")
//!
//! No session: [`check_modern_request`] is a pure function of the request. Order of the
//! checks: a method removed in 2026-07-28 → -32601; `params._meta` missing its
//! required `io.modelcontextprotocol/protocolVersion` (string) or
//! `io.modelcontextprotocol/clientCapabilities` (object) → -32602; a version not
//! supported → -32022 `data{supported, requested}`; a server capability not advertised →
//! -32601; a client capability needed but not declared → -32021
//! `data{requiredCapabilities}`.
//!
//! # Dual era
//!
//! [`DualEraServer`]: `initialize` selects the legacy machine for the rest of the
//! connection; a request whose `_meta` carries a protocol version is served modern.
//!
//! This module must not know about transports, processes, HTTP status codes or what a
//! tool does; it knows methods, `_meta` keys, capabilities and versions.

pub mod continuity;
pub mod handshake;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::jsonrpc::{code, ErrorObject, Id, Notification, Request, Response};
use crate::types::{meta, ClientCapabilities, Implementation, ServerCapabilities};
use crate::version::{Era, ProtocolVersion, Supported, UnsupportedVersion};

/// The method names the rules here use: the `types` constants, under short
/// names.
mod m {
    pub use crate::types::{
        COMPLETION_COMPLETE, ELICITATION_CREATE, INITIALIZE, LOGGING_SET_LEVEL,
        NOTIFICATION_CANCELLED as CANCELLED,
        NOTIFICATION_ELICITATION_COMPLETE as ELICITATION_COMPLETE,
        NOTIFICATION_INITIALIZED as INITIALIZED, NOTIFICATION_MESSAGE as MESSAGE,
        NOTIFICATION_PROGRESS as PROGRESS,
        NOTIFICATION_PROMPTS_LIST_CHANGED as PROMPTS_LIST_CHANGED,
        NOTIFICATION_RESOURCES_LIST_CHANGED as RESOURCES_LIST_CHANGED,
        NOTIFICATION_RESOURCES_UPDATED as RESOURCES_UPDATED,
        NOTIFICATION_ROOTS_LIST_CHANGED as ROOTS_LIST_CHANGED,
        NOTIFICATION_TASKS_STATUS as TASKS_STATUS,
        NOTIFICATION_TOOLS_LIST_CHANGED as TOOLS_LIST_CHANGED, PING, PROMPTS_GET, PROMPTS_LIST,
        RESOURCES_LIST, RESOURCES_READ, RESOURCES_SUBSCRIBE, RESOURCES_TEMPLATES_LIST,
        RESOURCES_UNSUBSCRIBE, ROOTS_LIST, SAMPLING_CREATE_MESSAGE, TASKS_CANCEL, TASKS_GET,
        TASKS_LIST, TASKS_RESULT, TASKS_UPDATE, TOOLS_CALL, TOOLS_LIST,
    };
}

/// The 2026-07-28 tasks extension's identifier (`extensions` key on both sides).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// A lifecycle or capability rule was broken, by the peer (incoming: answer with
/// [`LifecycleError::to_error_object`], or only log it for a notification) or by us
/// (outgoing: the message must not be sent).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LifecycleError {
    /// A message other than those allowed arrived or was to be sent before the
    /// handshake completed (legacy "Initialization"). Code -32600 (the spec names none).
    #[error("{method:?} is not allowed before initialization completes")]
    NotInitialized {
        /// The method.
        method: String,
    },
    /// A second `initialize` (legacy). Code -32600.
    #[error("the session is already initialized")]
    AlreadyInitialized,
    /// `notifications/initialized` before the `initialize` response was sent or
    /// received (legacy). Code -32600 (for logging; a notification is never answered).
    #[error("notifications/initialized arrived before the initialize response")]
    InitializedBeforeResponse,
    /// The client must send `notifications/initialized` before anything but `ping`
    /// (legacy). Code -32600; only ever an outgoing error.
    #[error("send notifications/initialized before {method:?}")]
    InitializedNotSent {
        /// The method that was to be sent.
        method: String,
    },
    /// `notifications/cancelled` naming the `initialize` request (legacy "Cancellation":
    /// MUST NOT). Code -32600.
    #[error("the initialize request cannot be cancelled")]
    InitializeNotCancellable,
    /// The session is closed. Code -32600.
    #[error("the session is closed")]
    Closed,
    /// A transition that the current state does not allow for our own action, e.g.
    /// sending the `initialize` response twice. Code -32603.
    #[error("invalid lifecycle transition: {0}")]
    InvalidTransition(&'static str),
    /// Malformed parameters (e.g. `initialize` params, or a modern request's `_meta`).
    /// Code -32602.
    #[error("invalid params: {0}")]
    InvalidParams(String),
    /// `initialize` asked for a version the server cannot answer with any legacy
    /// revision (a modern-only server). Code -32602 with `data{supported, requested}`.
    #[error("{0}")]
    InitializeVersion(UnsupportedVersion),
    /// The server's `initialize` answer names a version this client cannot speak; the
    /// client SHOULD disconnect (legacy "Version Negotiation"). Code -32602.
    #[error("server answered {0}")]
    AnswerNotAccepted(UnsupportedVersion),
    /// A modern request's version is not supported. Code -32022 with
    /// `data{supported, requested}` (2026-07-28).
    #[error("{0}")]
    UnsupportedProtocolVersion(UnsupportedVersion),
    /// The method is removed in 2026-07-28 ("Lifecycle"/"Changelog"). Code -32601.
    #[error("method {method:?} does not exist in 2026-07-28")]
    MethodRemoved {
        /// The method.
        method: String,
    },
    /// The method does not exist yet in the session's revision, e.g. `elicitation/create`
    /// in a 2024-11-05 session ([`introduced_in`]). Code -32601.
    #[error("method {method:?} does not exist in {version} (added in {added})")]
    MethodNotInRevision {
        /// The method.
        method: String,
        /// The session's revision.
        version: ProtocolVersion,
        /// The revision that added the method.
        added: ProtocolVersion,
    },
    /// A capability the method needs was not declared by the side that must declare it.
    /// Code -32601 for [`Gate::Method`], -32602 for [`Gate::Feature`].
    #[error("{method:?} needs the {} capability `{}`, which was not declared", .requirement.capability.side(), .requirement.capability.path())]
    CapabilityNotDeclared {
        /// The method.
        method: String,
        /// The unmet requirement.
        requirement: Requirement,
    },
    /// A 2026-07-28 request needs client capabilities it did not declare. Code -32021
    /// with `data.requiredCapabilities`.
    #[error("{method:?} needs the client capability `{}`", .capability.path())]
    MissingRequiredClientCapability {
        /// The method the client sent (or the input request the server wanted to ask).
        method: String,
        /// The missing capability.
        capability: ClientCapability,
    },
    /// A local configuration error, e.g. a client whose version set holds no legacy
    /// revision trying to send `initialize`. Code -32603.
    #[error("{0}")]
    Config(&'static str),
}

impl LifecycleError {
    /// The JSON-RPC error code for this error (see each variant).
    pub fn code(&self) -> i64 {
        use LifecycleError::*;
        match self {
            NotInitialized { .. }
            | AlreadyInitialized
            | InitializedBeforeResponse
            | InitializedNotSent { .. }
            | InitializeNotCancellable
            | Closed => code::INVALID_REQUEST,
            InvalidParams(_) | InitializeVersion(_) | AnswerNotAccepted(_) => code::INVALID_PARAMS,
            UnsupportedProtocolVersion(_) => code::UNSUPPORTED_PROTOCOL_VERSION,
            MethodRemoved { .. } | MethodNotInRevision { .. } => code::METHOD_NOT_FOUND,
            CapabilityNotDeclared { requirement, .. } => match requirement.gate {
                Gate::Method => code::METHOD_NOT_FOUND,
                Gate::Feature => code::INVALID_PARAMS,
            },
            MissingRequiredClientCapability { .. } => code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            InvalidTransition(_) | Config(_) => code::INTERNAL_ERROR,
        }
    }

    /// The JSON-RPC error object to answer with: [`LifecycleError::code`], the display
    /// text as `message`, and `data` where the spec defines one (-32022 and the legacy
    /// version error: `{supported, requested}`; -32021: `{requiredCapabilities}`).
    pub fn to_error_object(&self) -> ErrorObject {
        match self {
            LifecycleError::InitializeVersion(v) | LifecycleError::AnswerNotAccepted(v) => {
                v.to_initialize_error()
            }
            LifecycleError::UnsupportedProtocolVersion(v) => v.to_error(),
            LifecycleError::MissingRequiredClientCapability { capability, .. } => {
                ErrorObject::new(self.code(), self.to_string()).with_data(
                    &json!({ "requiredCapabilities": capability.as_required_capabilities() }),
                )
            }
            _ => ErrorObject::new(self.code(), self.to_string()),
        }
    }
}

impl From<LifecycleError> for ErrorObject {
    fn from(e: LifecycleError) -> ErrorObject {
        e.to_error_object()
    }
}

// ---------------------------------------------------------------------------
// Capabilities each method needs
// ---------------------------------------------------------------------------

/// Which way a message travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Sent by the client, received by the server.
    ClientToServer,
    /// Sent by the server, received by the client.
    ServerToClient,
}

/// A server capability (or sub-capability) a message can depend on
/// (`ServerCapabilities`, all revisions unless noted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerCapability {
    /// `logging`.
    Logging,
    /// `completions` (2025-03-26+).
    Completions,
    /// `prompts`.
    Prompts,
    /// `prompts.listChanged: true`.
    PromptsListChanged,
    /// `resources`.
    Resources,
    /// `resources.subscribe: true`.
    ResourcesSubscribe,
    /// `resources.listChanged: true`.
    ResourcesListChanged,
    /// `tools`.
    Tools,
    /// `tools.listChanged: true`.
    ToolsListChanged,
    /// `tasks` (2025-11-25).
    Tasks,
    /// `tasks.list` (2025-11-25).
    TasksList,
    /// `tasks.cancel` (2025-11-25).
    TasksCancel,
    /// `tasks.requests.tools.call` (2025-11-25).
    TaskAugmentedToolCall,
    /// `extensions[id]` (2026-07-28).
    Extension(&'static str),
}

impl ServerCapability {
    /// Whether `caps` declares it.
    pub fn is_declared_in(self, caps: &ServerCapabilities) -> bool {
        use ServerCapability::*;
        match self {
            Logging => caps.supports_logging(),
            Completions => caps.supports_completions(),
            Prompts => caps.supports_prompts(),
            PromptsListChanged => caps.supports_prompts_list_changed(),
            Resources => caps.supports_resources(),
            ResourcesSubscribe => caps.supports_resource_subscribe(),
            ResourcesListChanged => caps.supports_resources_list_changed(),
            Tools => caps.supports_tools(),
            ToolsListChanged => caps.supports_tools_list_changed(),
            Tasks => caps.supports_tasks(),
            TasksList => caps.supports_tasks_list(),
            TasksCancel => caps.supports_tasks_cancel(),
            TaskAugmentedToolCall => caps.supports_task_augmented_tool_call(),
            Extension(id) => caps.supports_extension(id),
        }
    }

    /// The capability's path in `ServerCapabilities`, e.g. `"resources.subscribe"`.
    pub fn path(self) -> String {
        use ServerCapability::*;
        match self {
            Logging => "logging".into(),
            Completions => "completions".into(),
            Prompts => "prompts".into(),
            PromptsListChanged => "prompts.listChanged".into(),
            Resources => "resources".into(),
            ResourcesSubscribe => "resources.subscribe".into(),
            ResourcesListChanged => "resources.listChanged".into(),
            Tools => "tools".into(),
            ToolsListChanged => "tools.listChanged".into(),
            Tasks => "tasks".into(),
            TasksList => "tasks.list".into(),
            TasksCancel => "tasks.cancel".into(),
            TaskAugmentedToolCall => "tasks.requests.tools.call".into(),
            Extension(id) => format!("extensions.{id}"),
        }
    }
}

/// A client capability (or sub-capability) a message can depend on
/// (`ClientCapabilities`, all revisions unless noted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientCapability {
    /// `roots`.
    Roots,
    /// `roots.listChanged: true`.
    RootsListChanged,
    /// `sampling`.
    Sampling,
    /// `sampling.tools` (2025-11-25+).
    SamplingTools,
    /// `elicitation` in form mode (`elicitation: {}` or `elicitation.form`; 2025-06-18+).
    ElicitationForm,
    /// `elicitation.url` (2025-11-25+).
    ElicitationUrl,
    /// `tasks` (2025-11-25).
    Tasks,
    /// `tasks.list` (2025-11-25).
    TasksList,
    /// `tasks.cancel` (2025-11-25).
    TasksCancel,
    /// `tasks.requests.sampling.createMessage` (2025-11-25).
    TaskAugmentedSampling,
    /// `tasks.requests.elicitation.create` (2025-11-25).
    TaskAugmentedElicitation,
    /// `extensions[id]` (2026-07-28).
    Extension(&'static str),
}

impl ClientCapability {
    /// Whether `caps` declares it.
    pub fn is_declared_in(self, caps: &ClientCapabilities) -> bool {
        use ClientCapability::*;
        match self {
            Roots => caps.supports_roots(),
            RootsListChanged => caps.supports_roots_list_changed(),
            Sampling => caps.supports_sampling(),
            SamplingTools => caps.supports_sampling_tools(),
            ElicitationForm => caps.supports_elicitation_form(),
            ElicitationUrl => caps.supports_elicitation_url(),
            Tasks => caps.supports_tasks(),
            TasksList => caps.supports_tasks_list(),
            TasksCancel => caps.supports_tasks_cancel(),
            TaskAugmentedSampling => caps.supports_task_augmented_sampling(),
            TaskAugmentedElicitation => caps.supports_task_augmented_elicitation(),
            Extension(id) => caps.supports_extension(id),
        }
    }

    /// The capability's path in `ClientCapabilities`, e.g. `"elicitation.url"`.
    pub fn path(self) -> String {
        use ClientCapability::*;
        match self {
            Roots => "roots".into(),
            RootsListChanged => "roots.listChanged".into(),
            Sampling => "sampling".into(),
            SamplingTools => "sampling.tools".into(),
            ElicitationForm => "elicitation".into(),
            ElicitationUrl => "elicitation.url".into(),
            Tasks => "tasks".into(),
            TasksList => "tasks.list".into(),
            TasksCancel => "tasks.cancel".into(),
            TaskAugmentedSampling => "tasks.requests.sampling.createMessage".into(),
            TaskAugmentedElicitation => "tasks.requests.elicitation.create".into(),
            Extension(id) => format!("extensions.{id}"),
        }
    }

    /// The smallest `ClientCapabilities` object that declares it, as -32021's
    /// `data.requiredCapabilities` carries it (2026-07-28 example:
    /// `{"elicitation": {}}` for form-mode elicitation).
    pub fn as_required_capabilities(self) -> Value {
        use ClientCapability::*;
        match self {
            Roots => json!({"roots": {}}),
            RootsListChanged => json!({"roots": {"listChanged": true}}),
            Sampling => json!({"sampling": {}}),
            SamplingTools => json!({"sampling": {"tools": {}}}),
            ElicitationForm => json!({"elicitation": {}}),
            ElicitationUrl => json!({"elicitation": {"url": {}}}),
            Tasks => json!({"tasks": {}}),
            TasksList => json!({"tasks": {"list": {}}}),
            TasksCancel => json!({"tasks": {"cancel": {}}}),
            TaskAugmentedSampling => {
                json!({"tasks": {"requests": {"sampling": {"createMessage": {}}}}})
            }
            TaskAugmentedElicitation => {
                json!({"tasks": {"requests": {"elicitation": {"create": {}}}}})
            }
            Extension(id) => json!({"extensions": {id: {}}}),
        }
    }
}

/// A capability of either side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Capability {
    /// Declared in `ServerCapabilities`.
    Server(ServerCapability),
    /// Declared in `ClientCapabilities`.
    Client(ClientCapability),
}

impl Capability {
    /// `"server"` or `"client"`.
    pub fn side(self) -> &'static str {
        match self {
            Capability::Server(_) => "server",
            Capability::Client(_) => "client",
        }
    }

    /// The path in its side's capabilities object.
    pub fn path(self) -> String {
        match self {
            Capability::Server(c) => c.path(),
            Capability::Client(c) => c.path(),
        }
    }

    /// Whether the side that must declare it did.
    pub fn is_declared(self, server: &ServerCapabilities, client: &ClientCapabilities) -> bool {
        match self {
            Capability::Server(c) => c.is_declared_in(server),
            Capability::Client(c) => c.is_declared_in(client),
        }
    }
}

/// What an undeclared capability takes away: the method itself, or one feature of a
/// method whose main capability is declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Gate {
    /// Without it the method does not exist for this peer: -32601.
    Method,
    /// Without it a parameter-level feature is not available (elicitation `mode: "url"`
    /// with only form declared, sampling `tools` without `sampling.tools`): -32602.
    Feature,
}

/// One capability a message needs, and what it gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Requirement {
    /// The capability.
    pub capability: Capability,
    /// What is lost without it.
    pub gate: Gate,
}

fn need(capability: Capability, gate: Gate) -> Requirement {
    Requirement { capability, gate }
}

fn server_method(c: ServerCapability) -> Requirement {
    need(Capability::Server(c), Gate::Method)
}

fn client_method(c: ClientCapability) -> Requirement {
    need(Capability::Client(c), Gate::Method)
}

fn client_feature(c: ClientCapability) -> Requirement {
    need(Capability::Client(c), Gate::Feature)
}

/// The few `params` members the capability rules look at. Anything malformed reads
/// as absent: validating params is the typed layer's job.
#[derive(Deserialize, Default, Debug, PartialEq)]
struct Peek {
    #[serde(default)]
    mode: Option<Value>,
    #[serde(default)]
    task: Option<Value>,
    #[serde(default)]
    tools: Option<Value>,
}

fn peek(params: Option<&RawValue>) -> Peek {
    let Some(p) = params else {
        return Peek::default();
    };
    match members(p, ["mode", "task", "tools"]) {
        // Only the members present are decoded (`null` reads as absent, as it
        // does for serde's `Option`): the rest of `params`, a tool call's
        // arguments say, is scanned and never built.
        Ok(Some([mode, task, tools])) => {
            let decode = |text: Option<&str>| {
                text.and_then(|t| serde_json::from_str::<Option<Value>>(t).ok().flatten())
            };
            Peek {
                mode: decode(mode),
                task: decode(task),
                tools: decode(tools),
            }
        }
        Ok(None) => serde_json::from_str::<Peek>(p.get()).unwrap_or_default(),
        Err(_) => Peek::default(),
    }
}

/// The raw text of the top-level members of `params` named `keys` (`None` for
/// each one absent), found by scanning `params` without building anything.
/// `Ok(None)` when a key is written with an escape or one of `keys` appears
/// twice: serde's reading of such params is the authority, so the caller
/// decodes them with serde instead. `Err` when `params` is not an object.
fn members<'a, const N: usize>(
    params: &'a RawValue,
    keys: [&str; N],
) -> Result<Option<[Option<&'a str>; N]>, ()> {
    let mut found = [None; N];
    let mut unsure = false;
    crate::jsonrpc::object_members(params.get(), |key, escaped, value| {
        unsure |= escaped;
        if let Some(i) = keys.iter().position(|k| *k == key) {
            unsure |= found[i].is_some();
            found[i] = Some(value);
        }
    })
    .map_err(|_| ())?;
    Ok((!unsure).then_some(found))
}

/// The capabilities a message needs, for a message travelling `direction` under
/// `version` (requests and notifications alike; responses need none).
///
/// Legacy (2024-11-05 to 2025-11-25):
/// - client→server requests need server capabilities: `tools/*` → `tools`;
///   `resources/list|templates/list|read` → `resources`;
///   `resources/subscribe|unsubscribe` → `resources.subscribe`; `prompts/*` →
///   `prompts`; `logging/setLevel` → `logging`; `completion/complete` → `completions`;
///   `tasks/get|result` → `tasks`, `tasks/list` → `tasks.list`, `tasks/cancel` →
///   `tasks.cancel`; `tools/call` with `params.task` also needs
///   `tasks.requests.tools.call`.
/// - server→client requests need client capabilities: `roots/list` → `roots`;
///   `sampling/createMessage` → `sampling` (+ `sampling.tools` when `params.tools` is
///   present, + `tasks.requests.sampling.createMessage` with `params.task`);
///   `elicitation/create` → `elicitation` in the mode of `params.mode` (`"url"` →
///   `elicitation.url`, otherwise form; + `tasks.requests.elicitation.create` with
///   `params.task`); `tasks/*` → the client's `tasks` as above.
/// - notifications need their sender's capability: `notifications/tools/list_changed`
///   → `tools.listChanged` (same for prompts, resources);
///   `notifications/resources/updated` → `resources.subscribe`;
///   `notifications/message` → `logging`; `notifications/roots/list_changed` →
///   `roots.listChanged`; `notifications/elicitation/complete` → `elicitation.url`.
///
/// 2026-07-28: the same server capabilities gate client requests; the extension's
/// `tasks/get|update|cancel` need the `io.modelcontextprotocol/tasks` extension on both
/// sides. Server→client requests do not exist (MRTR input requests are checked with
/// [`RequestContext::check_input_request`]).
///
/// `ping`, `initialize`, `notifications/initialized`, `notifications/cancelled`,
/// `notifications/progress`, `server/discover`, `subscriptions/listen` and unknown
/// methods need nothing (an unknown method is the application's -32601).
pub fn requirements(
    direction: Direction,
    version: ProtocolVersion,
    method: &str,
    params: Option<&RawValue>,
) -> Vec<Requirement> {
    use ClientCapability as C;
    use ServerCapability as S;
    let modern = version.era() == Era::Modern;
    match (direction, method) {
        (Direction::ClientToServer, m::TOOLS_LIST) => vec![server_method(S::Tools)],
        (Direction::ClientToServer, m::TOOLS_CALL) => {
            let mut v = vec![server_method(S::Tools)];
            // Most calls have no `task`: the filter spares them the scan.
            let may_have_task =
                params.is_some_and(|p| crate::jsonrpc::may_have_member(p.get(), "task"));
            if !modern && may_have_task && peek(params).task.is_some() {
                v.push(server_method(S::TaskAugmentedToolCall));
            }
            v
        }
        (
            Direction::ClientToServer,
            m::RESOURCES_LIST | m::RESOURCES_TEMPLATES_LIST | m::RESOURCES_READ,
        ) => vec![server_method(S::Resources)],
        (Direction::ClientToServer, m::RESOURCES_SUBSCRIBE | m::RESOURCES_UNSUBSCRIBE) => {
            vec![server_method(S::ResourcesSubscribe)]
        }
        (Direction::ClientToServer, m::PROMPTS_LIST | m::PROMPTS_GET) => {
            vec![server_method(S::Prompts)]
        }
        (Direction::ClientToServer, m::LOGGING_SET_LEVEL) => vec![server_method(S::Logging)],
        (Direction::ClientToServer, m::COMPLETION_COMPLETE) => {
            vec![server_method(S::Completions)]
        }
        (Direction::ClientToServer, m::TASKS_GET | m::TASKS_UPDATE | m::TASKS_CANCEL) if modern => {
            vec![
                server_method(S::Extension(TASKS_EXTENSION)),
                client_method(C::Extension(TASKS_EXTENSION)),
            ]
        }
        (Direction::ClientToServer, m::TASKS_GET | m::TASKS_RESULT) => {
            vec![server_method(S::Tasks)]
        }
        (Direction::ClientToServer, m::TASKS_LIST) => vec![server_method(S::TasksList)],
        (Direction::ClientToServer, m::TASKS_CANCEL) => vec![server_method(S::TasksCancel)],
        (Direction::ClientToServer, m::ROOTS_LIST_CHANGED) => {
            vec![client_method(C::RootsListChanged)]
        }
        (Direction::ServerToClient, m::ROOTS_LIST) => vec![client_method(C::Roots)],
        (Direction::ServerToClient, m::SAMPLING_CREATE_MESSAGE) => {
            let p = peek(params);
            let mut v = vec![client_method(C::Sampling)];
            if p.tools.is_some() {
                v.push(client_feature(C::SamplingTools));
            }
            if p.task.is_some() {
                v.push(client_method(C::TaskAugmentedSampling));
            }
            v
        }
        (Direction::ServerToClient, m::ELICITATION_CREATE) => {
            let p = peek(params);
            let url = p.mode.as_ref().and_then(Value::as_str) == Some("url");
            let mode = if url {
                C::ElicitationUrl
            } else {
                C::ElicitationForm
            };
            let mut v = vec![client_feature(mode)];
            if p.task.is_some() {
                v.push(client_method(C::TaskAugmentedElicitation));
            }
            v
        }
        (Direction::ServerToClient, m::TASKS_GET | m::TASKS_RESULT) => {
            vec![client_method(C::Tasks)]
        }
        (Direction::ServerToClient, m::TASKS_LIST) => vec![client_method(C::TasksList)],
        (Direction::ServerToClient, m::TASKS_CANCEL) => vec![client_method(C::TasksCancel)],
        (Direction::ServerToClient, m::TOOLS_LIST_CHANGED) => {
            vec![server_method(S::ToolsListChanged)]
        }
        (Direction::ServerToClient, m::PROMPTS_LIST_CHANGED) => {
            vec![server_method(S::PromptsListChanged)]
        }
        (Direction::ServerToClient, m::RESOURCES_LIST_CHANGED) => {
            vec![server_method(S::ResourcesListChanged)]
        }
        (Direction::ServerToClient, m::RESOURCES_UPDATED) => {
            vec![server_method(S::ResourcesSubscribe)]
        }
        (Direction::ServerToClient, m::MESSAGE) => vec![server_method(S::Logging)],
        (Direction::ServerToClient, m::ELICITATION_COMPLETE) => {
            vec![client_method(C::ElicitationUrl)]
        }
        _ => Vec::new(),
    }
}

/// Checks every requirement of a message against both sides' capabilities; the first
/// unmet one becomes [`LifecycleError::CapabilityNotDeclared`].
///
/// For elicitation, a missing `elicitation` capability altogether is reported with
/// [`Gate::Method`] (-32601), a missing mode of a declared one with [`Gate::Feature`]
/// (-32602).
pub fn check_capabilities(
    direction: Direction,
    version: ProtocolVersion,
    method: &str,
    params: Option<&RawValue>,
    server: &ServerCapabilities,
    client: &ClientCapabilities,
) -> Result<(), LifecycleError> {
    if let Some(added) = introduced_in(method).filter(|added| version < *added) {
        return Err(LifecycleError::MethodNotInRevision {
            method: method.to_owned(),
            version,
            added,
        });
    }
    for mut r in requirements(direction, version, method, params) {
        if r.capability.is_declared(server, client) {
            continue;
        }
        if let Capability::Client(
            ClientCapability::ElicitationForm | ClientCapability::ElicitationUrl,
        ) = r.capability
        {
            if !client.supports_elicitation() {
                r.gate = Gate::Method;
            }
        }
        return Err(LifecycleError::CapabilityNotDeclared {
            method: method.to_owned(),
            requirement: r,
        });
    }
    Ok(())
}

/// The revision that added a method of the MCP method set, for the methods that
/// were not in 2024-11-05 (each revision's schema and changelog); `None` for the
/// methods of 2024-11-05 and for methods MCP does not define. Removals in 2026-07-28
/// are [`removed_in_modern`].
pub fn introduced_in(method: &str) -> Option<ProtocolVersion> {
    use ProtocolVersion::*;
    Some(match method {
        m::COMPLETION_COMPLETE => V2025_03_26,
        m::ELICITATION_CREATE => V2025_06_18,
        m::TASKS_GET
        | m::TASKS_RESULT
        | m::TASKS_LIST
        | m::TASKS_CANCEL
        | m::TASKS_STATUS
        | m::ELICITATION_COMPLETE => V2025_11_25,
        "server/discover"
        | "subscriptions/listen"
        | "notifications/subscriptions/acknowledged"
        | m::TASKS_UPDATE => V2026_07_28,
        _ => return None,
    })
}

// ---------------------------------------------------------------------------
// Legacy: shared pieces
// ---------------------------------------------------------------------------

/// `notifications/cancelled` params, as far as the lifecycle cares.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CancelledPeek {
    #[serde(default)]
    request_id: Option<Id>,
}

fn cancels(params: Option<&RawValue>, id: &Id) -> bool {
    params
        .and_then(|p| serde_json::from_str::<CancelledPeek>(p.get()).ok())
        .and_then(|c| c.request_id)
        .is_some_and(|r| &r == id)
}

/// `initialize` params (all legacy revisions): `{protocolVersion, capabilities,
/// clientInfo}`. Only what the lifecycle needs; the full type lives in
/// [`crate::types`].
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializeParamsPeek {
    protocol_version: String,
    capabilities: ClientCapabilities,
    client_info: Implementation,
}

/// `InitializeResult` as far as the lifecycle needs it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializeResultPeek {
    protocol_version: String,
    capabilities: ServerCapabilities,
    server_info: Implementation,
    #[serde(default)]
    instructions: Option<String>,
}

/// What both sides agreed on in a legacy handshake ("Lifecycle" → "Initialization").
#[derive(Debug, Clone, PartialEq)]
pub struct LegacySession {
    /// The negotiated revision (always a legacy one).
    pub version: ProtocolVersion,
    /// The client's `capabilities` from `initialize`.
    pub client_capabilities: ClientCapabilities,
    /// The server's `capabilities` from the `initialize` result.
    pub server_capabilities: ServerCapabilities,
    /// The client's `clientInfo`.
    pub client_info: Implementation,
    /// The server's `serverInfo`.
    pub server_info: Implementation,
    /// The server's `instructions`, if any.
    pub instructions: Option<String>,
}

impl LegacySession {
    fn check(
        &self,
        direction: Direction,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), LifecycleError> {
        check_capabilities(
            direction,
            self.version,
            method,
            params,
            &self.server_capabilities,
            &self.client_capabilities,
        )
    }
}

fn not_initialized(method: &str) -> LifecycleError {
    LifecycleError::NotInitialized {
        method: method.to_owned(),
    }
}

// ---------------------------------------------------------------------------
// Legacy server
// ---------------------------------------------------------------------------

/// The legacy server's lifecycle state (2024-11-05 to 2025-11-25, "Lifecycle").
///
/// ```text
/// AwaitingInitialize --initialize request--> Initializing
/// Initializing --initialize_response()--> AwaitingInitialized
/// AwaitingInitialized --notifications/initialized--> Operating
/// any --close()--> Closed
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum ServerState {
    /// Nothing but `ping` and `initialize` is accepted.
    AwaitingInitialize,
    /// `initialize` was accepted; its response is not sent yet. Only `ping` is
    /// accepted; the server may send `ping` and `notifications/message`.
    Initializing {
        /// The `initialize` request's id.
        request_id: Id,
        /// The version the response will carry.
        version: ProtocolVersion,
        /// The client's declared capabilities.
        client_capabilities: ClientCapabilities,
        /// The client's `clientInfo`.
        client_info: Implementation,
    },
    /// The response was sent; `notifications/initialized` has not arrived. Client
    /// requests are accepted (they may overtake the notification over HTTP); the server
    /// still sends only `ping`, logging, progress and cancellation.
    AwaitingInitialized(LegacySession),
    /// Normal operation: capability-gated traffic both ways.
    Operating(LegacySession),
    /// No further messages.
    Closed,
}

/// The legacy server-side lifecycle: one per session (a stdio process, an HTTP
/// `Mcp-Session-Id`).
#[derive(Debug, Clone)]
pub struct ServerLifecycle {
    supported: Supported,
    capabilities: ServerCapabilities,
    server_info: Implementation,
    instructions: Option<String>,
    state: ServerState,
}

impl ServerLifecycle {
    /// A server that speaks `supported`, declares `capabilities` and introduces itself
    /// as `server_info` (with optional `instructions`) in its `initialize` result.
    pub fn new(
        supported: Supported,
        capabilities: ServerCapabilities,
        server_info: Implementation,
        instructions: Option<String>,
    ) -> Self {
        ServerLifecycle {
            supported,
            capabilities,
            server_info,
            instructions,
            state: ServerState::AwaitingInitialize,
        }
    }

    /// The current state.
    pub fn state(&self) -> &ServerState {
        &self.state
    }

    /// The negotiated session once the `initialize` response was sent.
    pub fn session(&self) -> Option<&LegacySession> {
        match &self.state {
            ServerState::AwaitingInitialized(s) | ServerState::Operating(s) => Some(s),
            _ => None,
        }
    }

    /// The capabilities this server declares.
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.capabilities
    }

    /// Ends the session (no shutdown message exists; the transport closes).
    pub fn close(&mut self) {
        self.state = ServerState::Closed;
    }

    /// A request arrived from the client. `Ok` means the application may handle it
    /// (for `initialize`: answer with [`ServerLifecycle::initialize_response`]); `Err`
    /// is the error to answer with ([`LifecycleError::to_error_object`]).
    ///
    /// Rules: `ping` is accepted in every state but `Closed`; `initialize` only in
    /// `AwaitingInitialize` (else -32600), with params that decode (else -32602) and a
    /// version the server can answer (else -32602 with `data{supported, requested}`);
    /// any other request before the response was sent → -32600; afterwards the method's
    /// server capability must be declared (-32601, see [`requirements`]).
    pub fn recv_request(&mut self, request: &Request) -> Result<(), LifecycleError> {
        let method = request.method.as_str();
        let params = request.params.as_deref();
        match (&self.state, method) {
            (ServerState::Closed, _) => Err(LifecycleError::Closed),
            (_, m::PING) => Ok(()),
            (ServerState::AwaitingInitialize, m::INITIALIZE) => {
                let p: InitializeParamsPeek = request
                    .params_as()
                    .map_err(|e| LifecycleError::InvalidParams(format!("initialize: {e}")))?;
                let version = self
                    .supported
                    .negotiate_initialize(&p.protocol_version)
                    .ok_or_else(|| {
                        LifecycleError::InitializeVersion(UnsupportedVersion {
                            requested: p.protocol_version.clone(),
                            supported: self.supported.clone(),
                        })
                    })?;
                self.state = ServerState::Initializing {
                    request_id: request.id.clone(),
                    version,
                    client_capabilities: p.capabilities,
                    client_info: p.client_info,
                };
                Ok(())
            }
            (_, m::INITIALIZE) => Err(LifecycleError::AlreadyInitialized),
            (ServerState::AwaitingInitialize | ServerState::Initializing { .. }, _) => {
                Err(not_initialized(method))
            }
            (ServerState::AwaitingInitialized(s) | ServerState::Operating(s), _) => {
                s.check(Direction::ClientToServer, method, params)
            }
        }
    }

    /// The `initialize` response to send: `{protocolVersion, capabilities, serverInfo,
    /// instructions?}` for the request accepted by [`ServerLifecycle::recv_request`].
    /// Moves `Initializing` → `AwaitingInitialized`; any other state is
    /// [`LifecycleError::InvalidTransition`].
    pub fn initialize_response(&mut self) -> Result<Response, LifecycleError> {
        let ServerState::Initializing {
            request_id,
            version,
            client_capabilities,
            client_info,
        } = &self.state
        else {
            return Err(LifecycleError::InvalidTransition(
                "initialize_response needs an accepted initialize request",
            ));
        };
        let mut result = Map::new();
        result.insert("protocolVersion".into(), json!(version.as_str()));
        result.insert(
            "capabilities".into(),
            serde_json::to_value(&self.capabilities).unwrap_or_else(|_| json!({})),
        );
        result.insert(
            "serverInfo".into(),
            serde_json::to_value(&self.server_info).unwrap_or_else(|_| json!({})),
        );
        if let Some(i) = &self.instructions {
            result.insert("instructions".into(), json!(i));
        }
        let response = Response::new(request_id.clone(), &result)
            .map_err(|_| LifecycleError::InvalidTransition("unserializable result"))?;
        let session = LegacySession {
            version: *version,
            client_capabilities: client_capabilities.clone(),
            server_capabilities: self.capabilities.clone(),
            client_info: client_info.clone(),
            server_info: self.server_info.clone(),
            instructions: self.instructions.clone(),
        };
        self.state = ServerState::AwaitingInitialized(session);
        Ok(response)
    }

    /// A notification arrived from the client. Notifications are never answered: an
    /// `Err` is for logging only.
    ///
    /// `notifications/initialized` moves `AwaitingInitialized` → `Operating`; before the
    /// response it is [`LifecycleError::InitializedBeforeResponse`]; a repeat in
    /// `Operating` is ignored. `notifications/cancelled` naming `initialize` is
    /// [`LifecycleError::InitializeNotCancellable`]. Before the response only
    /// `notifications/cancelled` and `notifications/progress` are accepted.
    pub fn recv_notification(&mut self, n: &Notification) -> Result<(), LifecycleError> {
        let method = n.method.as_str();
        let params = n.params.as_deref();
        match (&self.state, method) {
            (ServerState::Closed, _) => Err(LifecycleError::Closed),
            (ServerState::Initializing { request_id, .. }, m::CANCELLED)
                if cancels(params, request_id) =>
            {
                Err(LifecycleError::InitializeNotCancellable)
            }
            (_, m::CANCELLED | m::PROGRESS) => Ok(()),
            (ServerState::AwaitingInitialized(s), m::INITIALIZED) => {
                self.state = ServerState::Operating(s.clone());
                Ok(())
            }
            (ServerState::Operating(_), m::INITIALIZED) => Ok(()),
            (
                ServerState::AwaitingInitialize | ServerState::Initializing { .. },
                m::INITIALIZED,
            ) => Err(LifecycleError::InitializedBeforeResponse),
            (ServerState::AwaitingInitialize | ServerState::Initializing { .. }, _) => {
                Err(not_initialized(method))
            }
            (ServerState::AwaitingInitialized(s) | ServerState::Operating(s), _) => {
                s.check(Direction::ClientToServer, method, params)
            }
        }
    }

    /// May the server send this request now? Before `notifications/initialized` only
    /// `ping` (not before `initialize` arrived); in `Operating` the client must have
    /// declared the capability the method needs. An `Err` means: do not send.
    pub fn check_send_request(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), LifecycleError> {
        match &self.state {
            ServerState::Closed => Err(LifecycleError::Closed),
            ServerState::AwaitingInitialize => Err(not_initialized(method)),
            ServerState::Initializing { .. } | ServerState::AwaitingInitialized(_) => {
                if method == m::PING {
                    Ok(())
                } else {
                    Err(not_initialized(method))
                }
            }
            ServerState::Operating(s) => s.check(Direction::ServerToClient, method, params),
        }
    }

    /// May the server send this notification now? Before `initialize` arrived:
    /// nothing. Until `notifications/initialized`: `notifications/message` (needs the
    /// server's `logging`), and after the response also `notifications/progress` and
    /// `notifications/cancelled` for requests the client sent. In `Operating` the
    /// server's own capability must be declared (e.g. `tools.listChanged`).
    pub fn check_send_notification(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), LifecycleError> {
        let logging = || {
            if self.capabilities.supports_logging() {
                Ok(())
            } else {
                Err(LifecycleError::CapabilityNotDeclared {
                    method: method.to_owned(),
                    requirement: server_method(ServerCapability::Logging),
                })
            }
        };
        match (&self.state, method) {
            (ServerState::Closed, _) => Err(LifecycleError::Closed),
            (ServerState::AwaitingInitialize, _) => Err(not_initialized(method)),
            (
                ServerState::Initializing { .. } | ServerState::AwaitingInitialized(_),
                m::MESSAGE,
            ) => logging(),
            (ServerState::AwaitingInitialized(_), m::PROGRESS | m::CANCELLED) => Ok(()),
            (ServerState::Initializing { .. } | ServerState::AwaitingInitialized(_), _) => {
                Err(not_initialized(method))
            }
            (ServerState::Operating(s), _) => s.check(Direction::ServerToClient, method, params),
        }
    }
}

// ---------------------------------------------------------------------------
// Legacy client
// ---------------------------------------------------------------------------

/// The legacy client's lifecycle state (2024-11-05 to 2025-11-25, "Lifecycle").
///
/// ```text
/// Idle --initialize_request()--> Initializing
/// Initializing --initialize result, version accepted--> Initialized
/// Initializing --result with an unusable version, or an error--> Closed
/// Initialized --initialized_notification()--> Operating
/// Operating --session_replaced(result), version accepted--> Operating (new session)
/// Operating --session_replaced(result), unusable--> Closed
/// any --close()--> Closed
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum ClientState {
    /// Nothing sent yet.
    Idle,
    /// `initialize` sent; the client sends only `ping` until the answer.
    Initializing {
        /// The `initialize` request's id.
        request_id: Id,
        /// The version offered.
        offered: ProtocolVersion,
    },
    /// The answer was accepted; the client must now send `notifications/initialized`
    /// (and sends only `ping` before it).
    Initialized(LegacySession),
    /// Normal operation.
    Operating(LegacySession),
    /// No further messages (also after a failed handshake).
    Closed,
}

/// The legacy client-side lifecycle, one per connection to a server.
#[derive(Debug, Clone)]
pub struct ClientLifecycle {
    supported: Supported,
    capabilities: ClientCapabilities,
    client_info: Implementation,
    state: ClientState,
}

impl ClientLifecycle {
    /// A client that speaks `supported` and declares `capabilities` as `client_info`.
    pub fn new(
        supported: Supported,
        capabilities: ClientCapabilities,
        client_info: Implementation,
    ) -> Self {
        ClientLifecycle {
            supported,
            capabilities,
            client_info,
            state: ClientState::Idle,
        }
    }

    /// The current state.
    pub fn state(&self) -> &ClientState {
        &self.state
    }

    /// The negotiated session once the `initialize` answer was accepted.
    pub fn session(&self) -> Option<&LegacySession> {
        match &self.state {
            ClientState::Initialized(s) | ClientState::Operating(s) => Some(s),
            _ => None,
        }
    }

    /// Ends the session.
    pub fn close(&mut self) {
        self.state = ClientState::Closed;
    }

    /// The `initialize` request to send with id `id`, offering the newest legacy
    /// revision in the set ("Version Negotiation": the client SHOULD send its latest).
    /// `Idle` → `Initializing`. Errors: not `Idle` (`InvalidTransition`); no legacy
    /// revision in the set (`Config`).
    pub fn initialize_request(&mut self, id: Id) -> Result<Request, LifecycleError> {
        if self.state != ClientState::Idle {
            return Err(LifecycleError::InvalidTransition(
                "initialize is sent once, from Idle",
            ));
        }
        let offered = self
            .supported
            .latest_legacy()
            .ok_or(LifecycleError::Config("no legacy revision to offer"))?;
        let params = json!({
            "protocolVersion": offered.as_str(),
            "capabilities": self.capabilities,
            "clientInfo": self.client_info,
        });
        let request = Request::new(id.clone(), m::INITIALIZE, &params)
            .map_err(|_| LifecycleError::Config("unserializable initialize params"))?;
        self.state = ClientState::Initializing {
            request_id: id,
            offered,
        };
        Ok(request)
    }

    /// A response arrived. Returns `Ok(true)` when it was the `initialize` answer and
    /// was accepted (`Initializing` → `Initialized`), `Ok(false)` for any other
    /// response. An `initialize` result that does not decode or names a version this
    /// client cannot speak closes the session and is returned as the error to report
    /// (the client SHOULD disconnect).
    pub fn recv_response(&mut self, response: &Response) -> Result<bool, LifecycleError> {
        let ClientState::Initializing { request_id, .. } = &self.state else {
            return Ok(false);
        };
        if &response.id != request_id {
            return Ok(false);
        }
        let outcome = self.accept_result(&response.result);
        match outcome {
            Ok(session) => {
                self.state = ClientState::Initialized(session);
                Ok(true)
            }
            Err(e) => {
                self.state = ClientState::Closed;
                Err(e)
            }
        }
    }

    /// The session an `initialize` result negotiates, if this client can speak it.
    fn accept_result(&self, result: &RawValue) -> Result<LegacySession, LifecycleError> {
        let r: InitializeResultPeek = serde_json::from_str(result.get())
            .map_err(|e| LifecycleError::InvalidParams(format!("initialize result: {e}")))?;
        let version = self
            .supported
            .accept_initialize_answer(&r.protocol_version)
            .map_err(LifecycleError::AnswerNotAccepted)?;
        Ok(LegacySession {
            version,
            client_capabilities: self.capabilities.clone(),
            server_capabilities: r.capabilities,
            client_info: self.client_info.clone(),
            server_info: r.server_info,
            instructions: r.instructions,
        })
    }

    /// The server lost the session and the transport started a new one with the
    /// same `initialize` and `notifications/initialized` (Streamable HTTP, a
    /// 404: 2025-03-26+ "Transports → Session Management"): `result`, the new
    /// session's `initialize` result, replaces what was negotiated (version,
    /// server capabilities, `serverInfo`, `instructions`), as a new handshake
    /// would. `Operating` → `Operating` with the new session, which is returned.
    /// A result that does not decode or names a version this client cannot
    /// speak closes the session (`Closed`) and is the error, as in
    /// [`recv_response`](Self::recv_response); any state but `Operating` is
    /// `InvalidTransition` (`Closed` stays closed).
    pub fn session_replaced(
        &mut self,
        result: &RawValue,
    ) -> Result<&LegacySession, LifecycleError> {
        match &self.state {
            ClientState::Operating(_) => {}
            ClientState::Closed => return Err(LifecycleError::Closed),
            _ => {
                return Err(LifecycleError::InvalidTransition(
                    "a session is replaced once operating",
                ))
            }
        }
        match self.accept_result(result) {
            Ok(session) => {
                self.state = ClientState::Operating(session);
                Ok(self.session().expect("operating"))
            }
            Err(e) => {
                self.state = ClientState::Closed;
                Err(e)
            }
        }
    }

    /// An error response arrived. If it answers `initialize`, the handshake failed and
    /// the session closes (`Ok(true)`); otherwise `Ok(false)`.
    pub fn recv_error_response(&mut self, id: Option<&Id>) -> bool {
        match &self.state {
            ClientState::Initializing { request_id, .. } if id == Some(request_id) => {
                self.state = ClientState::Closed;
                true
            }
            _ => false,
        }
    }

    /// `notifications/initialized`, to send right after the answer was accepted.
    /// `Initialized` → `Operating`; any other state is `InvalidTransition`.
    pub fn initialized_notification(&mut self) -> Result<Notification, LifecycleError> {
        let ClientState::Initialized(session) = &self.state else {
            return Err(LifecycleError::InvalidTransition(
                "notifications/initialized follows an accepted initialize answer",
            ));
        };
        let session = session.clone();
        self.state = ClientState::Operating(session);
        Ok(Notification {
            method: m::INITIALIZED.to_owned(),
            params: None,
        })
    }

    /// May the client send this request now? `initialize` goes through
    /// [`ClientLifecycle::initialize_request`]; until `Operating` only `ping`
    /// ([`LifecycleError::InitializedNotSent`] in `Initialized`); in `Operating` the
    /// server must have declared the capability the method needs.
    pub fn check_send_request(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), LifecycleError> {
        match (&self.state, method) {
            (ClientState::Closed, _) => Err(LifecycleError::Closed),
            (_, m::PING) => Ok(()),
            (ClientState::Idle, m::INITIALIZE) => Err(LifecycleError::InvalidTransition(
                "send initialize with initialize_request",
            )),
            (_, m::INITIALIZE) => Err(LifecycleError::AlreadyInitialized),
            (ClientState::Idle | ClientState::Initializing { .. }, _) => {
                Err(not_initialized(method))
            }
            (ClientState::Initialized(_), _) => Err(LifecycleError::InitializedNotSent {
                method: method.to_owned(),
            }),
            (ClientState::Operating(s), _) => s.check(Direction::ClientToServer, method, params),
        }
    }

    /// May the client send this notification now? `notifications/initialized` goes
    /// through [`ClientLifecycle::initialized_notification`]; cancelling `initialize`
    /// is refused; `notifications/cancelled` and `notifications/progress` are allowed
    /// once something was sent; others need `Operating` and the capability (e.g.
    /// `roots.listChanged`).
    pub fn check_send_notification(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), LifecycleError> {
        match (&self.state, method) {
            (ClientState::Closed, _) => Err(LifecycleError::Closed),
            (ClientState::Initializing { request_id, .. }, m::CANCELLED)
                if cancels(params, request_id) =>
            {
                Err(LifecycleError::InitializeNotCancellable)
            }
            (_, m::INITIALIZED) => Err(LifecycleError::InvalidTransition(
                "send notifications/initialized with initialized_notification",
            )),
            (ClientState::Idle, _) => Err(not_initialized(method)),
            (_, m::CANCELLED | m::PROGRESS) => Ok(()),
            (ClientState::Initializing { .. }, _) => Err(not_initialized(method)),
            (ClientState::Initialized(_), _) => Err(LifecycleError::InitializedNotSent {
                method: method.to_owned(),
            }),
            (ClientState::Operating(s), _) => s.check(Direction::ClientToServer, method, params),
        }
    }

    /// A request arrived from the server. `ping` is always answered; before
    /// `Operating` nothing else is accepted (-32600: the server sends only `ping` and
    /// logging before `notifications/initialized`); in `Operating` the client must have
    /// declared the capability (-32601, or -32602 for an undeclared elicitation mode or
    /// sampling tools).
    pub fn recv_request(&self, request: &Request) -> Result<(), LifecycleError> {
        let method = request.method.as_str();
        match (&self.state, method) {
            (ClientState::Closed, _) => Err(LifecycleError::Closed),
            (_, m::PING) => Ok(()),
            (ClientState::Operating(s), _) => {
                s.check(Direction::ServerToClient, method, request.params.as_deref())
            }
            _ => Err(not_initialized(method)),
        }
    }

    /// A notification arrived from the server (an `Err` is for logging only).
    /// `notifications/message`, `notifications/progress` and `notifications/cancelled`
    /// are accepted once `initialize` was sent (logging is checked against the server's
    /// capabilities once they are known); others need `Operating` and the server's
    /// capability (e.g. `tools.listChanged`).
    pub fn recv_notification(&self, n: &Notification) -> Result<(), LifecycleError> {
        let method = n.method.as_str();
        let params = n.params.as_deref();
        match (&self.state, method) {
            (ClientState::Closed, _) => Err(LifecycleError::Closed),
            (ClientState::Idle, _) => Err(not_initialized(method)),
            (ClientState::Initializing { .. }, m::MESSAGE | m::PROGRESS | m::CANCELLED) => Ok(()),
            (_, m::PROGRESS | m::CANCELLED) => Ok(()),
            (ClientState::Initialized(s), m::MESSAGE) => {
                s.check(Direction::ServerToClient, method, params)
            }
            (ClientState::Operating(s), _) => s.check(Direction::ServerToClient, method, params),
            _ => Err(not_initialized(method)),
        }
    }
}

// ---------------------------------------------------------------------------
// Modern (2026-07-28)
// ---------------------------------------------------------------------------

/// The log level of a 2026-07-28 request's `_meta` (the same `LoggingLevel` as
/// `logging/setLevel` uses).
pub use crate::types::LoggingLevel as LogLevel;

/// What a 2026-07-28 request says about its sender, read from `params._meta` by
/// [`check_modern_request`] ("Lifecycle" → per-request metadata). The server MUST NOT
/// infer any of it from earlier requests.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestContext {
    /// `io.modelcontextprotocol/protocolVersion`, checked to be supported.
    pub version: ProtocolVersion,
    /// `io.modelcontextprotocol/clientCapabilities` (`{}` = none).
    pub client_capabilities: ClientCapabilities,
    /// `io.modelcontextprotocol/clientInfo` (SHOULD; self-reported, not for security).
    pub client_info: Option<Implementation>,
    /// `io.modelcontextprotocol/logLevel` (deprecated opt-in): without it the server
    /// MUST NOT send `notifications/message` for this request.
    pub log_level: Option<LogLevel>,
}

impl RequestContext {
    /// Whether a log message at `level` may be sent for this request: a level was
    /// requested and `level` is at least as severe.
    pub fn wants_log(&self, level: LogLevel) -> bool {
        self.log_level.is_some_and(|min| level >= min)
    }

    /// The server needs `capability` from the client to go on (e.g. it is about to
    /// ask for input that needs it): `Err` is -32021 with `data.requiredCapabilities`.
    pub fn require(
        &self,
        method: &str,
        capability: ClientCapability,
    ) -> Result<(), LifecycleError> {
        if capability.is_declared_in(&self.client_capabilities) {
            Ok(())
        } else {
            Err(LifecycleError::MissingRequiredClientCapability {
                method: method.to_owned(),
                capability,
            })
        }
    }

    /// May the server put this input request (MRTR `inputRequests` value
    /// `{method, params}`) into an `input_required` result? Only `elicitation/create`,
    /// `sampling/createMessage` and `roots/list` exist there, and only for capabilities
    /// this request declared ("MRTR"); an undeclared one is -32021 (the error to answer
    /// the original request with). Any other method is `InvalidTransition`.
    pub fn check_input_request(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), LifecycleError> {
        if !matches!(
            method,
            m::ELICITATION_CREATE | m::SAMPLING_CREATE_MESSAGE | m::ROOTS_LIST
        ) {
            return Err(LifecycleError::InvalidTransition(
                "input requests are elicitation/create, sampling/createMessage or roots/list",
            ));
        }
        for r in requirements(Direction::ServerToClient, self.version, method, params) {
            if let Capability::Client(c) = r.capability {
                self.require(method, c)?;
            }
        }
        Ok(())
    }
}

/// Whether a client→server method or notification is gone in 2026-07-28 ("Lifecycle"
/// and "Changelog"): `initialize`, `ping`, `logging/setLevel`,
/// `resources/subscribe`, `resources/unsubscribe`, the core `tasks/result` and
/// `tasks/list`, `notifications/initialized`, `notifications/roots/list_changed`,
/// `notifications/progress` (client→server), `notifications/tasks/status` and
/// `notifications/elicitation/complete`. (`tasks/get` and `tasks/cancel` live on in
/// the tasks extension and are gated by it, see [`requirements`].)
pub fn removed_in_modern(method: &str) -> bool {
    matches!(
        method,
        m::INITIALIZE
            | m::PING
            | m::LOGGING_SET_LEVEL
            | m::RESOURCES_SUBSCRIBE
            | m::RESOURCES_UNSUBSCRIBE
            | m::TASKS_RESULT
            | m::TASKS_LIST
            | m::INITIALIZED
            | m::ROOTS_LIST_CHANGED
            | m::PROGRESS
            | m::TASKS_STATUS
            | m::ELICITATION_COMPLETE
    )
}

#[derive(Deserialize)]
struct MetaPeek {
    #[serde(default, rename = "_meta")]
    meta: Option<Value>,
}

/// `params._meta` as an object: `Ok(None)` when `params` or `_meta` is absent; an
/// `Err` when `params` is not an object or `_meta` is not an object.
fn request_meta(params: Option<&RawValue>) -> Result<Option<Map<String, Value>>, LifecycleError> {
    let Some(p) = params else {
        return Ok(None);
    };
    let meta = match members(p, ["_meta"]) {
        Err(()) => {
            return Err(LifecycleError::InvalidParams(
                "params must be an object".into(),
            ))
        }
        // Only `_meta` is decoded, not the rest of `params`.
        Ok(Some([None])) => None,
        Ok(Some([Some(text)])) => serde_json::from_str::<Option<Value>>(text)
            .map_err(|e| LifecycleError::InvalidParams(format!("params._meta: {e}")))?,
        Ok(None) => {
            serde_json::from_str::<MetaPeek>(p.get())
                .map_err(|e| LifecycleError::InvalidParams(format!("params: {e}")))?
                .meta
        }
    };
    match meta {
        None => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(_) => Err(LifecycleError::InvalidParams(
            "params._meta must be an object".into(),
        )),
    }
}

/// Whether a request's `_meta` marks it as 2026-07-28 (it names the protocol version or
/// the client capabilities there).
fn has_modern_meta(params: Option<&RawValue>) -> bool {
    matches!(request_meta(params), Ok(Some(m))
        if m.contains_key(meta::PROTOCOL_VERSION) || m.contains_key(meta::CLIENT_CAPABILITIES))
}

fn missing(key: &str) -> LifecycleError {
    LifecycleError::InvalidParams(format!("params._meta[{key:?}] is required"))
}

/// The per-request check of a 2026-07-28 server ("Lifecycle", "Server validation"):
/// pure, no session. In order:
///
/// 1. a method removed in 2026-07-28 ([`removed_in_modern`]) → -32601;
/// 2. `params._meta` must carry `io.modelcontextprotocol/protocolVersion` (a string)
///    → else -32602;
/// 3. the version must be a supported modern revision ([`Supported::check_modern`])
///    → else -32022 with `data{supported, requested}` (checked before the other
///    members, whose shape depends on the version);
///    then `io.modelcontextprotocol/clientCapabilities` (a `ClientCapabilities`
///    object) is required, and `clientInfo` and `logLevel`, optional, must be
///    well-formed when present → else -32602;
/// 4. the server capability the method needs must be in `server` → else -32601;
/// 5. a client capability the method needs (the tasks extension) must be declared →
///    else -32021 with `data.requiredCapabilities`.
///
/// `Err` converts into the JSON-RPC error to answer with (`ErrorObject::from`).
pub fn check_modern_request(
    supported: &Supported,
    server: &ServerCapabilities,
    method: &str,
    params: Option<&RawValue>,
) -> Result<RequestContext, LifecycleError> {
    if removed_in_modern(method) {
        return Err(LifecycleError::MethodRemoved {
            method: method.to_owned(),
        });
    }
    let meta_obj = request_meta(params)?
        .ok_or_else(|| LifecycleError::InvalidParams("params._meta is required".into()))?;
    let requested = match meta_obj.get(meta::PROTOCOL_VERSION) {
        None => return Err(missing(meta::PROTOCOL_VERSION)),
        Some(Value::String(s)) => s.as_str(),
        Some(_) => {
            return Err(LifecycleError::InvalidParams(format!(
                "params._meta[{:?}] must be a string",
                meta::PROTOCOL_VERSION
            )))
        }
    };
    // The version first: the shape of every other `_meta` member depends on it, and a
    // newer client must learn the supported versions rather than get -32602.
    let version = supported
        .check_modern(requested)
        .map_err(LifecycleError::UnsupportedProtocolVersion)?;
    let client_capabilities: ClientCapabilities = match meta_obj.get(meta::CLIENT_CAPABILITIES) {
        None => return Err(missing(meta::CLIENT_CAPABILITIES)),
        Some(v @ Value::Object(_)) => serde_json::from_value(v.clone()).map_err(|e| {
            LifecycleError::InvalidParams(format!(
                "params._meta[{:?}]: {e}",
                meta::CLIENT_CAPABILITIES
            ))
        })?,
        Some(_) => {
            return Err(LifecycleError::InvalidParams(format!(
                "params._meta[{:?}] must be an object",
                meta::CLIENT_CAPABILITIES
            )))
        }
    };
    let client_info = meta_obj
        .get(meta::CLIENT_INFO)
        .map(|v| serde_json::from_value::<Implementation>(v.clone()))
        .transpose()
        .map_err(|e| {
            LifecycleError::InvalidParams(format!("params._meta[{:?}]: {e}", meta::CLIENT_INFO))
        })?;
    let log_level = meta_obj
        .get(meta::LOG_LEVEL)
        .map(|v| serde_json::from_value::<LogLevel>(v.clone()))
        .transpose()
        .map_err(|e| {
            LifecycleError::InvalidParams(format!("params._meta[{:?}]: {e}", meta::LOG_LEVEL))
        })?;
    let ctx = RequestContext {
        version,
        client_capabilities,
        client_info,
        log_level,
    };
    for r in requirements(Direction::ClientToServer, version, method, params) {
        match r.capability {
            Capability::Server(c) if !c.is_declared_in(server) => {
                return Err(LifecycleError::CapabilityNotDeclared {
                    method: method.to_owned(),
                    requirement: r,
                })
            }
            Capability::Client(c) => ctx.require(method, c)?,
            Capability::Server(_) => {}
        }
    }
    Ok(ctx)
}

/// The check of a client→server notification under 2026-07-28: a notification removed
/// there ([`removed_in_modern`]) is an `Err` (for logging; never answered). Others,
/// e.g. `notifications/cancelled` on stdio, pass.
pub fn check_modern_notification(method: &str) -> Result<(), LifecycleError> {
    if removed_in_modern(method) {
        Err(LifecycleError::MethodRemoved {
            method: method.to_owned(),
        })
    } else {
        Ok(())
    }
}

/// May a 2026-07-28 client send this request? Refuses methods removed in 2026-07-28, a
/// legacy `version`, capabilities the server did not advertise (when its
/// `server/discover` capabilities are known) and client capabilities it needs but this
/// client does not declare. `Err` means: do not send.
pub fn check_modern_send(
    version: ProtocolVersion,
    method: &str,
    params: Option<&RawValue>,
    client: &ClientCapabilities,
    server: Option<&ServerCapabilities>,
) -> Result<(), LifecycleError> {
    if version.era() != Era::Modern {
        return Err(LifecycleError::Config(
            "check_modern_send needs a modern revision",
        ));
    }
    if removed_in_modern(method) {
        return Err(LifecycleError::MethodRemoved {
            method: method.to_owned(),
        });
    }
    for r in requirements(Direction::ClientToServer, version, method, params) {
        let declared = match r.capability {
            Capability::Server(c) => server.is_none_or(|s| c.is_declared_in(s)),
            Capability::Client(c) => c.is_declared_in(client),
        };
        if !declared {
            return Err(LifecycleError::CapabilityNotDeclared {
                method: method.to_owned(),
                requirement: r,
            });
        }
    }
    Ok(())
}

/// The `_meta` members every 2026-07-28 request carries: `protocolVersion`,
/// `clientCapabilities`, and when given `clientInfo` and `logLevel`. Merge it into the
/// request's `params._meta`.
pub fn modern_request_meta(
    version: ProtocolVersion,
    client_capabilities: &ClientCapabilities,
    client_info: Option<&Implementation>,
    log_level: Option<LogLevel>,
) -> crate::types::Meta {
    let mut out = crate::types::Meta::new();
    out.insert(meta::PROTOCOL_VERSION.into(), json!(version.as_str()));
    out.insert(
        meta::CLIENT_CAPABILITIES.into(),
        serde_json::to_value(client_capabilities).unwrap_or_else(|_| json!({})),
    );
    if let Some(info) = client_info {
        if let Ok(v) = serde_json::to_value(info) {
            out.insert(meta::CLIENT_INFO.into(), v);
        }
    }
    if let Some(level) = log_level {
        out.insert(meta::LOG_LEVEL.into(), json!(level.as_str()));
    }
    out
}

// ---------------------------------------------------------------------------
// Dual era
// ---------------------------------------------------------------------------

/// How a [`DualEraServer`] will serve a request it accepted.
#[derive(Debug, Clone, PartialEq)]
pub enum Accepted {
    /// Under the legacy session (see [`DualEraServer::legacy`] for its state; answer
    /// `initialize` with [`DualEraServer::initialize_response`]).
    Legacy,
    /// Statelessly, under 2026-07-28, with what the request declared.
    Modern(Box<RequestContext>),
}

/// A server that speaks both eras on one connection (2026-07-28 "Era detection" →
/// dual-era server).
///
/// Each request is routed by what it carries (2026-07-28 "Era detection": "a request
/// with modern `_meta` is served stateless"; `initialize` selects legacy semantics):
/// - `initialize` goes to the legacy machine;
/// - a request whose `_meta` names `io.modelcontextprotocol/protocolVersion` or
///   `io.modelcontextprotocol/clientCapabilities` gets [`check_modern_request`] and is
///   served statelessly — also after `initialize`, and a failed check (-32022, -32602)
///   locks nothing, so a client may retry or fall back;
/// - any other request follows the legacy rules (`ping` works before `initialize`,
///   anything else is -32600), except on a connection that has only spoken modern so
///   far, where it gets the modern check too (so `ping` is -32601 there).
#[derive(Debug, Clone)]
pub struct DualEraServer {
    supported: Supported,
    legacy: ServerLifecycle,
    era: Option<Era>,
}

impl DualEraServer {
    /// A server that speaks `supported` (both eras, normally) and declares
    /// `capabilities`; `server_info` and `instructions` go into a legacy `initialize`
    /// result.
    pub fn new(
        supported: Supported,
        capabilities: ServerCapabilities,
        server_info: Implementation,
        instructions: Option<String>,
    ) -> Self {
        DualEraServer {
            legacy: ServerLifecycle::new(
                supported.clone(),
                capabilities,
                server_info,
                instructions,
            ),
            supported,
            era: None,
        }
    }

    /// The selected era, `None` until the first `initialize` or passing modern request.
    pub fn era(&self) -> Option<Era> {
        self.era
    }

    /// The legacy machine (its state stays `AwaitingInitialize` in the modern era).
    pub fn legacy(&self) -> &ServerLifecycle {
        &self.legacy
    }

    /// A request arrived: which era serves it, or the error to answer with.
    pub fn recv_request(&mut self, request: &Request) -> Result<Accepted, LifecycleError> {
        let params = request.params.as_deref();
        let is_initialize = request.method == m::INITIALIZE;
        let modern = !is_initialize && (has_modern_meta(params) || self.era == Some(Era::Modern));
        if modern {
            let ctx = check_modern_request(
                &self.supported,
                self.legacy.capabilities(),
                &request.method,
                params,
            )?;
            self.era.get_or_insert(Era::Modern);
            Ok(Accepted::Modern(Box::new(ctx)))
        } else {
            self.legacy.recv_request(request)?;
            if request.method == m::INITIALIZE {
                self.era = Some(Era::Legacy);
            }
            Ok(Accepted::Legacy)
        }
    }

    /// The legacy `initialize` response ([`ServerLifecycle::initialize_response`]).
    pub fn initialize_response(&mut self) -> Result<Response, LifecycleError> {
        self.legacy.initialize_response()
    }

    /// A notification arrived (an `Err` is for logging only): the legacy rules until
    /// modern is selected, then [`check_modern_notification`].
    pub fn recv_notification(&mut self, n: &Notification) -> Result<(), LifecycleError> {
        match self.era {
            Some(Era::Modern) => check_modern_notification(&n.method),
            _ => self.legacy.recv_notification(n),
        }
    }

    /// Ends the connection.
    pub fn close(&mut self) {
        self.legacy.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ProtocolVersion::*;

    fn raw(v: Value) -> Box<RawValue> {
        serde_json::value::to_raw_value(&v).unwrap()
    }

    /// The scanning `peek` and `request_meta` read params exactly as decoding
    /// them whole with serde does (the way both worked before they scanned):
    /// escaped and repeated keys, `null` members, non-objects, nesting. One
    /// difference, on purpose: `peek` reads an array as having no members, where
    /// serde would fill the struct from it by position.
    #[test]
    fn scanned_params_read_as_serde_reads_them() {
        fn meta_by_serde(p: &RawValue) -> Result<Option<Map<String, Value>>, String> {
            if !p.get().trim_start().starts_with('{') {
                return Err("not an object".into());
            }
            let peek: MetaPeek = serde_json::from_str(p.get()).map_err(|e| e.to_string())?;
            match peek.meta {
                None => Ok(None),
                Some(Value::Object(m)) => Ok(Some(m)),
                Some(_) => Err("not an object".into()),
            }
        }
        let samples = [
            r#"{}"#,
            r#" { "task" : {"ttl": 5} , "name": "x" } "#,
            r#"{"task": null}"#,
            r#"{"task": 1, "task": 2}"#,
            r#"{"\u0074ask": {}}"#,
            r#"{"mode": "url", "tools": [1, {"task": 2}]}"#,
            r#"{"mode": "\u0075rl"}"#,
            r#"{"arguments": {"task": 1, "_meta": {}}, "name": "echo"}"#,
            r#"{"_meta": {"progressToken": 7}, "name": "echo"}"#,
            r#"{"_meta": null}"#,
            r#"{"_meta": 5}"#,
            r#"{"_meta": {}, "_meta": {}}"#,
            r#"{"\u005fmeta": {"a": 1}}"#,
            r#"[1, 2]"#,
            r#""text""#,
            r#"7"#,
            r#"null"#,
        ];
        for text in samples {
            let p: Box<RawValue> = serde_json::from_str(text).unwrap();
            // serde would also read a struct from an array, by position; params
            // that are not an object read as having none of these members.
            let by_serde = if text.trim_start().starts_with('{') {
                serde_json::from_str::<Peek>(p.get()).unwrap_or_default()
            } else {
                Peek::default()
            };
            assert_eq!(peek(Some(&p)), by_serde, "peek of {text}");
            let scanned = request_meta(Some(&p)).map_err(|_| ());
            assert_eq!(
                scanned,
                meta_by_serde(&p).map_err(|_| ()),
                "_meta of {text}"
            );
        }
        assert_eq!(peek(None), Peek::default());
        assert_eq!(request_meta(None).unwrap(), None);
    }

    fn req(id: i64, method: &str, params: Option<Value>) -> Request {
        Request {
            id: Id::from(id),
            method: method.into(),
            params: params.map(raw),
        }
    }

    fn note(method: &str, params: Option<Value>) -> Notification {
        Notification {
            method: method.into(),
            params: params.map(raw),
        }
    }

    fn data(e: &ErrorObject) -> Value {
        serde_json::from_str(e.data.as_ref().expect("data").get()).unwrap()
    }

    fn server_caps() -> ServerCapabilities {
        serde_json::from_value(json!({
            "tools": {"listChanged": true},
            "resources": {},
            "logging": {}
        }))
        .unwrap()
    }

    fn client_caps() -> Value {
        json!({"roots": {"listChanged": true}, "sampling": {}, "elicitation": {}})
    }

    fn init_params(version: &str, caps: Value) -> Value {
        json!({
            "protocolVersion": version,
            "capabilities": caps,
            "clientInfo": {"name": "c", "version": "1"}
        })
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum S {
        AwaitInit,
        Initializing,
        AwaitInitialized,
        Operating,
        Closed,
    }

    fn kind(s: &ServerState) -> S {
        match s {
            ServerState::AwaitingInitialize => S::AwaitInit,
            ServerState::Initializing { .. } => S::Initializing,
            ServerState::AwaitingInitialized(_) => S::AwaitInitialized,
            ServerState::Operating(_) => S::Operating,
            ServerState::Closed => S::Closed,
        }
    }

    /// A server driven into `target` by real messages, with [`server_caps`] and the
    /// given client capabilities.
    fn server_in(target: S, client: Value) -> ServerLifecycle {
        let mut s = ServerLifecycle::new(
            Supported::default(),
            server_caps(),
            Implementation::new("s", "1"),
            None,
        );
        if target == S::Closed {
            s.close();
            return s;
        }
        if target == S::AwaitInit {
            return s;
        }
        s.recv_request(&req(
            1,
            "initialize",
            Some(init_params("2025-11-25", client)),
        ))
        .unwrap();
        if target == S::Initializing {
            return s;
        }
        s.initialize_response().unwrap();
        if target == S::AwaitInitialized {
            return s;
        }
        s.recv_notification(&note("notifications/initialized", None))
            .unwrap();
        assert_eq!(kind(s.state()), S::Operating);
        s
    }

    enum In {
        Req(&'static str, Option<Value>),
        Note(&'static str, Option<Value>),
    }

    #[test]
    fn legacy_server_incoming_table() {
        use In::*;
        let good_init = Some(init_params("2025-11-25", client_caps()));
        let cancel_init = Some(json!({"requestId": 1}));
        // (state, incoming, Ok(next state) | Err(code))
        let table: Vec<(S, In, Result<S, i64>)> = vec![
            (S::AwaitInit, Req("ping", None), Ok(S::AwaitInit)),
            (S::AwaitInit, Req("tools/list", None), Err(-32600)),
            (
                S::AwaitInit,
                Req("initialize", good_init.clone()),
                Ok(S::Initializing),
            ),
            (
                S::AwaitInit,
                Req("initialize", Some(json!({"protocolVersion": "2025-11-25"}))),
                Err(-32602),
            ),
            (S::AwaitInit, Req("initialize", None), Err(-32602)),
            (
                S::AwaitInit,
                Note("notifications/initialized", None),
                Err(-32600),
            ),
            (
                S::AwaitInit,
                Note("notifications/roots/list_changed", None),
                Err(-32600),
            ),
            (
                S::AwaitInit,
                Note("notifications/cancelled", cancel_init.clone()),
                Ok(S::AwaitInit),
            ),
            (
                S::Initializing,
                Req("initialize", good_init.clone()),
                Err(-32600),
            ),
            (S::Initializing, Req("tools/list", None), Err(-32600)),
            (S::Initializing, Req("ping", None), Ok(S::Initializing)),
            (
                S::Initializing,
                Note("notifications/initialized", None),
                Err(-32600),
            ),
            (
                S::Initializing,
                Note("notifications/cancelled", cancel_init.clone()),
                Err(-32600),
            ),
            (
                S::Initializing,
                Note("notifications/cancelled", Some(json!({"requestId": 9}))),
                Ok(S::Initializing),
            ),
            (
                S::AwaitInitialized,
                Note("notifications/initialized", None),
                Ok(S::Operating),
            ),
            (
                S::AwaitInitialized,
                Req("tools/list", None),
                Ok(S::AwaitInitialized),
            ),
            (S::AwaitInitialized, Req("prompts/list", None), Err(-32601)),
            (
                S::AwaitInitialized,
                Req("initialize", good_init.clone()),
                Err(-32600),
            ),
            (
                S::Operating,
                Req("initialize", good_init.clone()),
                Err(-32600),
            ),
            (
                S::Operating,
                Note("notifications/initialized", None),
                Ok(S::Operating),
            ),
            (S::Operating, Req("ping", None), Ok(S::Operating)),
            (
                S::Operating,
                Req("tools/call", Some(json!({"name": "x"}))),
                Ok(S::Operating),
            ),
            (
                S::Operating,
                Req("resources/read", Some(json!({"uri": "a:b"}))),
                Ok(S::Operating),
            ),
            (
                S::Operating,
                Req("prompts/get", Some(json!({"name": "p"}))),
                Err(-32601),
            ),
            (
                S::Operating,
                Req("resources/subscribe", Some(json!({"uri": "a:b"}))),
                Err(-32601),
            ),
            (
                S::Operating,
                Req("resources/unsubscribe", Some(json!({"uri": "a:b"}))),
                Err(-32601),
            ),
            (
                S::Operating,
                Req("completion/complete", Some(json!({}))),
                Err(-32601),
            ),
            (
                S::Operating,
                Req("logging/setLevel", Some(json!({"level": "info"}))),
                Ok(S::Operating),
            ),
            (
                S::Operating,
                Req(
                    "tools/call",
                    Some(json!({"name": "x", "task": {"ttl": 10}})),
                ),
                Err(-32601),
            ),
            (S::Operating, Req("tasks/list", None), Err(-32601)),
            (
                S::Operating,
                Req("tasks/get", Some(json!({"taskId": "t"}))),
                Err(-32601),
            ),
            (S::Operating, Req("x-vendor/method", None), Ok(S::Operating)),
            (
                S::Operating,
                Note("notifications/roots/list_changed", None),
                Ok(S::Operating),
            ),
            (
                S::Operating,
                Note("notifications/progress", None),
                Ok(S::Operating),
            ),
            (S::Closed, Req("ping", None), Err(-32600)),
            (
                S::Closed,
                Note("notifications/initialized", None),
                Err(-32600),
            ),
        ];
        for (i, (start, input, expect)) in table.into_iter().enumerate() {
            let mut s = server_in(start, client_caps());
            let got = match &input {
                Req(method, params) => s.recv_request(&req(2, method, params.clone())),
                Note(method, params) => s.recv_notification(&note(method, params.clone())),
            };
            match (got, expect) {
                (Ok(()), Ok(next)) => assert_eq!(kind(s.state()), next, "row {i}"),
                (Err(e), Err(code)) => {
                    assert_eq!(e.code(), code, "row {i}: {e}");
                    assert_eq!(e.to_error_object().code, code, "row {i}");
                    assert_eq!(kind(s.state()), start, "row {i}: state kept on error");
                }
                (got, expect) => panic!("row {i}: got {got:?}, expected {expect:?}"),
            }
        }
    }

    #[test]
    fn undeclared_roots_list_changed_is_rejected() {
        let mut s = server_in(S::Operating, json!({"roots": {}}));
        let e = s
            .recv_notification(&note("notifications/roots/list_changed", None))
            .unwrap_err();
        assert_eq!(e.code(), -32601);
        assert!(e.to_string().contains("roots.listChanged"), "{e}");
    }

    #[test]
    fn legacy_server_negotiates_and_answers() {
        for (asked, answered) in [
            ("2025-03-26", V2025_03_26),
            ("2024-11-05", V2024_11_05),
            ("2099-01-01", V2025_11_25),
            ("2026-07-28", V2025_11_25),
        ] {
            let mut s = ServerLifecycle::new(
                Supported::default(),
                server_caps(),
                Implementation::new("s", "1"),
                Some("be nice".into()),
            );
            s.recv_request(&req(7, "initialize", Some(init_params(asked, json!({})))))
                .unwrap();
            let resp = s.initialize_response().unwrap();
            assert_eq!(resp.id, Id::from(7));
            let v: Value = resp.result_as().unwrap();
            assert_eq!(v["protocolVersion"], answered.as_str());
            assert_eq!(
                v["capabilities"],
                serde_json::to_value(server_caps()).unwrap()
            );
            assert_eq!(v["serverInfo"]["name"], "s");
            assert_eq!(v["instructions"], "be nice");
            assert_eq!(s.session().unwrap().version, answered);
            assert_eq!(
                s.initialize_response().unwrap_err().code(),
                code::INTERNAL_ERROR
            );
        }
    }

    #[test]
    fn modern_only_server_refuses_initialize_with_its_versions() {
        let mut s = ServerLifecycle::new(
            Supported::new([V2026_07_28]).unwrap(),
            server_caps(),
            Implementation::new("s", "1"),
            None,
        );
        let e = s
            .recv_request(&req(
                1,
                "initialize",
                Some(init_params("2025-11-25", json!({}))),
            ))
            .unwrap_err()
            .to_error_object();
        assert_eq!(e.code, -32602);
        assert_eq!(data(&e)["supported"], json!(["2026-07-28"]));
        assert_eq!(data(&e)["requested"], "2025-11-25");
        assert_eq!(kind(s.state()), S::AwaitInit);
    }

    enum Out {
        Req(&'static str, Option<Value>),
        Note(&'static str, Option<Value>),
    }

    #[test]
    fn legacy_server_outgoing_table() {
        use Out::*;
        let table: Vec<(S, Value, Out, Result<(), i64>)> = vec![
            (S::AwaitInit, client_caps(), Req("ping", None), Err(-32600)),
            (
                S::AwaitInit,
                client_caps(),
                Note("notifications/message", None),
                Err(-32600),
            ),
            (S::Initializing, client_caps(), Req("ping", None), Ok(())),
            (
                S::Initializing,
                client_caps(),
                Req("sampling/createMessage", None),
                Err(-32600),
            ),
            (
                S::Initializing,
                client_caps(),
                Note("notifications/message", None),
                Ok(()),
            ),
            (
                S::Initializing,
                client_caps(),
                Note("notifications/progress", None),
                Err(-32600),
            ),
            (
                S::Initializing,
                client_caps(),
                Note("notifications/tools/list_changed", None),
                Err(-32600),
            ),
            (
                S::AwaitInitialized,
                client_caps(),
                Req("roots/list", None),
                Err(-32600),
            ),
            (
                S::AwaitInitialized,
                client_caps(),
                Req("ping", None),
                Ok(()),
            ),
            (
                S::AwaitInitialized,
                client_caps(),
                Note("notifications/progress", None),
                Ok(()),
            ),
            (
                S::Operating,
                client_caps(),
                Req("sampling/createMessage", None),
                Ok(()),
            ),
            (
                S::Operating,
                client_caps(),
                Req("sampling/createMessage", Some(json!({"tools": []}))),
                Err(-32602),
            ),
            (
                S::Operating,
                client_caps(),
                Req("elicitation/create", None),
                Ok(()),
            ),
            (
                S::Operating,
                client_caps(),
                Req("elicitation/create", Some(json!({"mode": "form"}))),
                Ok(()),
            ),
            (
                S::Operating,
                client_caps(),
                Req(
                    "elicitation/create",
                    Some(json!({"mode": "url", "url": "https://x"})),
                ),
                Err(-32602),
            ),
            (
                S::Operating,
                json!({"elicitation": {"url": {}}}),
                Req("elicitation/create", Some(json!({"mode": "url"}))),
                Ok(()),
            ),
            (
                S::Operating,
                json!({"elicitation": {"url": {}}}),
                Req("elicitation/create", Some(json!({"message": "m"}))),
                Err(-32602),
            ),
            (
                S::Operating,
                json!({}),
                Req("elicitation/create", None),
                Err(-32601),
            ),
            (
                S::Operating,
                json!({}),
                Req("sampling/createMessage", None),
                Err(-32601),
            ),
            (
                S::Operating,
                json!({}),
                Req("roots/list", None),
                Err(-32601),
            ),
            (S::Operating, client_caps(), Req("roots/list", None), Ok(())),
            (
                S::Operating,
                client_caps(),
                Req("tasks/list", None),
                Err(-32601),
            ),
            (
                S::Operating,
                json!({"tasks": {"list": {}}}),
                Req("tasks/list", None),
                Ok(()),
            ),
            (
                S::Operating,
                json!({"sampling": {}, "tasks": {}}),
                Req("sampling/createMessage", Some(json!({"task": {}}))),
                Err(-32601),
            ),
            (
                S::Operating,
                client_caps(),
                Note("notifications/tools/list_changed", None),
                Ok(()),
            ),
            (
                S::Operating,
                client_caps(),
                Note("notifications/prompts/list_changed", None),
                Err(-32601),
            ),
            (
                S::Operating,
                client_caps(),
                Note(
                    "notifications/resources/updated",
                    Some(json!({"uri": "a:b"})),
                ),
                Err(-32601),
            ),
            (
                S::Operating,
                client_caps(),
                Note("notifications/resources/list_changed", None),
                Err(-32601),
            ),
            (
                S::Operating,
                client_caps(),
                Note("notifications/message", None),
                Ok(()),
            ),
            (
                S::Operating,
                client_caps(),
                Note("notifications/elicitation/complete", None),
                Err(-32601),
            ),
            (S::Closed, client_caps(), Req("ping", None), Err(-32600)),
        ];
        for (i, (state, client, out, expect)) in table.into_iter().enumerate() {
            let s = server_in(state, client);
            let got = match &out {
                Req(method, params) => {
                    s.check_send_request(method, params.clone().map(raw).as_deref())
                }
                Note(method, params) => {
                    s.check_send_notification(method, params.clone().map(raw).as_deref())
                }
            };
            assert_eq!(got.map_err(|e| e.code()), expect, "row {i}");
        }
    }

    #[test]
    fn server_without_logging_may_not_log_even_early() {
        let mut s = ServerLifecycle::new(
            Supported::default(),
            ServerCapabilities::default(),
            Implementation::new("s", "1"),
            None,
        );
        s.recv_request(&req(
            1,
            "initialize",
            Some(init_params("2025-06-18", json!({}))),
        ))
        .unwrap();
        let e = s
            .check_send_notification("notifications/message", None)
            .unwrap_err();
        assert_eq!(e.code(), -32601);
    }

    fn client() -> ClientLifecycle {
        ClientLifecycle::new(
            Supported::default(),
            serde_json::from_value(client_caps()).unwrap(),
            Implementation::new("c", "1"),
        )
    }

    fn answer(id: i64, version: &str, caps: Value) -> Response {
        Response::new(
            Id::from(id),
            &json!({
                "protocolVersion": version,
                "capabilities": caps,
                "serverInfo": {"name": "s", "version": "1"}
            }),
        )
        .unwrap()
    }

    #[test]
    fn legacy_client_handshake() {
        let mut c = client();
        assert_eq!(c.state(), &ClientState::Idle);
        assert_eq!(
            c.check_send_request("tools/list", None).unwrap_err().code(),
            -32600
        );
        assert!(c.check_send_request("ping", None).is_ok());
        assert_eq!(
            c.check_send_request("initialize", None).unwrap_err().code(),
            -32603
        );
        // Server messages before initialize was sent are refused.
        assert_eq!(
            c.recv_notification(&note("notifications/message", None))
                .unwrap_err()
                .code(),
            -32600
        );

        let init = c.initialize_request(Id::from(1)).unwrap();
        let p: Value = init.params_as().unwrap();
        assert_eq!(p["protocolVersion"], "2025-11-25");
        assert_eq!(p["capabilities"], client_caps());
        assert_eq!(p["clientInfo"]["name"], "c");
        assert!(matches!(
            c.state(),
            ClientState::Initializing {
                offered: V2025_11_25,
                ..
            }
        ));
        assert!(c.initialize_request(Id::from(2)).is_err());

        // Initializing: only ping out; ping and logging in.
        assert_eq!(
            c.check_send_request("tools/list", None).unwrap_err().code(),
            -32600
        );
        assert!(c.check_send_request("ping", None).is_ok());
        let cancel_init = raw(json!({"requestId": 1}));
        assert_eq!(
            c.check_send_notification("notifications/cancelled", Some(&cancel_init))
                .unwrap_err()
                .code(),
            -32600
        );
        assert!(c.recv_request(&req(5, "ping", None)).is_ok());
        assert_eq!(
            c.recv_request(&req(5, "sampling/createMessage", None))
                .unwrap_err()
                .code(),
            -32600
        );
        assert!(c
            .recv_notification(&note("notifications/message", None))
            .is_ok());
        assert_eq!(
            c.recv_notification(&note("notifications/tools/list_changed", None))
                .unwrap_err()
                .code(),
            -32600
        );

        // A response to another request is not the answer.
        assert_eq!(
            c.recv_response(&answer(99, "2025-11-25", json!({}))),
            Ok(false)
        );
        let caps = json!({"tools": {"listChanged": true}, "logging": {}});
        assert_eq!(c.recv_response(&answer(1, "2025-06-18", caps)), Ok(true));
        assert_eq!(c.session().unwrap().version, V2025_06_18);

        // Initialized: must send notifications/initialized first.
        let e = c.check_send_request("tools/list", None).unwrap_err();
        assert!(matches!(e, LifecycleError::InitializedNotSent { .. }));
        assert_eq!(e.code(), -32600);
        assert!(c.check_send_request("ping", None).is_ok());
        assert!(c
            .check_send_notification("notifications/initialized", None)
            .is_err());
        let n = c.initialized_notification().unwrap();
        assert_eq!(n.method, "notifications/initialized");
        assert!(matches!(c.state(), ClientState::Operating(_)));
        assert!(c.initialized_notification().is_err());

        // Operating: capabilities both ways.
        assert!(c.check_send_request("tools/call", None).is_ok());
        for m in [
            "prompts/list",
            "resources/read",
            "resources/subscribe",
            "completion/complete",
        ] {
            assert_eq!(
                c.check_send_request(m, None).unwrap_err().code(),
                -32601,
                "{m}"
            );
        }
        assert!(c.check_send_request("logging/setLevel", None).is_ok());
        assert!(c
            .check_send_notification("notifications/roots/list_changed", None)
            .is_ok());
        assert!(c
            .recv_request(&req(6, "sampling/createMessage", None))
            .is_ok());
        assert!(c.recv_request(&req(6, "roots/list", None)).is_ok());
        let url = req(6, "elicitation/create", Some(json!({"mode": "url"})));
        assert_eq!(c.recv_request(&url).unwrap_err().code(), -32602);
        assert_eq!(
            c.recv_request(&req(6, "tasks/list", None))
                .unwrap_err()
                .code(),
            -32601
        );
        assert!(c
            .recv_notification(&note("notifications/tools/list_changed", None))
            .is_ok());
        assert_eq!(
            c.recv_notification(&note("notifications/prompts/list_changed", None))
                .unwrap_err()
                .code(),
            -32601
        );
        assert!(c
            .recv_notification(&note("notifications/message", None))
            .is_ok());
        c.close();
        assert_eq!(
            c.check_send_request("ping", None).unwrap_err().code(),
            -32600
        );
    }

    /// A new session after a 404 replaces what was negotiated: the capability
    /// checks follow the new server's; an answer the client cannot speak closes
    /// the session.
    #[test]
    fn a_replaced_session_replaces_what_was_negotiated() {
        let mut c = client();
        let result = |version: &str, caps: Value| {
            serde_json::value::to_raw_value(&json!({
                "protocolVersion": version,
                "capabilities": caps,
                "serverInfo": {"name": "two", "version": "2"}
            }))
            .unwrap()
        };
        assert!(matches!(
            c.session_replaced(&result("2025-06-18", json!({}))),
            Err(LifecycleError::InvalidTransition(_))
        ));
        c.initialize_request(Id::from(1)).unwrap();
        c.recv_response(&answer(1, "2025-11-25", json!({"tools": {}})))
            .unwrap();
        c.initialized_notification().unwrap();
        assert!(c.check_send_request("resources/list", None).is_err());
        let s = c
            .session_replaced(&result("2025-06-18", json!({"resources": {}})))
            .unwrap();
        assert_eq!(s.version, V2025_06_18);
        assert_eq!(s.server_info.name, "two");
        assert!(c.check_send_request("resources/list", None).is_ok());
        assert!(c.check_send_request("tools/list", None).is_err());
        assert!(matches!(c.state(), ClientState::Operating(_)));

        let e = c
            .session_replaced(&result("2023-01-01", json!({})))
            .unwrap_err();
        assert!(matches!(e, LifecycleError::AnswerNotAccepted(_)), "{e:?}");
        assert_eq!(c.state(), &ClientState::Closed);
        assert!(matches!(
            c.session_replaced(&result("2025-06-18", json!({}))),
            Err(LifecycleError::Closed)
        ));
    }

    #[test]
    fn legacy_client_rejects_unusable_answers() {
        let mut c = client();
        c.initialize_request(Id::from(1)).unwrap();
        let e = c
            .recv_response(&answer(1, "2024-01-01", json!({})))
            .unwrap_err();
        assert!(matches!(e, LifecycleError::AnswerNotAccepted(_)));
        assert_eq!(c.state(), &ClientState::Closed);

        // A modern version is not a valid initialize answer.
        let mut c = client();
        c.initialize_request(Id::from(1)).unwrap();
        assert!(c
            .recv_response(&answer(1, "2026-07-28", json!({})))
            .is_err());

        // A malformed result closes too.
        let mut c = client();
        c.initialize_request(Id::from(1)).unwrap();
        let bad = Response::new(Id::from(1), &json!({"protocolVersion": 5})).unwrap();
        assert_eq!(c.recv_response(&bad).unwrap_err().code(), -32602);
        assert_eq!(c.state(), &ClientState::Closed);

        // An error answer to initialize closes.
        let mut c = client();
        c.initialize_request(Id::from("i")).unwrap();
        assert!(!c.recv_error_response(Some(&Id::from(3))));
        assert!(c.recv_error_response(Some(&Id::from("i"))));
        assert_eq!(c.state(), &ClientState::Closed);

        // A client with no legacy revision cannot send initialize.
        let mut c = ClientLifecycle::new(
            Supported::new([V2026_07_28]).unwrap(),
            ClientCapabilities::default(),
            Implementation::new("c", "1"),
        );
        assert_eq!(
            c.initialize_request(Id::from(1)).unwrap_err().code(),
            -32603
        );
    }

    fn modern_params(version: Value, caps: Value, extra_meta: Value) -> Value {
        let mut m = json!({
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": caps,
        });
        for (k, v) in extra_meta.as_object().unwrap() {
            m[k] = v.clone();
        }
        json!({"_meta": m})
    }

    fn modern_server_caps() -> ServerCapabilities {
        serde_json::from_value(json!({
            "tools": {},
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        }))
        .unwrap()
    }

    #[test]
    fn modern_request_table() {
        let ok = || modern_params(json!("2026-07-28"), json!({}), json!({}));
        let with_ext = modern_params(
            json!("2026-07-28"),
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
            json!({}),
        );
        let table: Vec<(&str, Option<Value>, Result<(), i64>)> = vec![
            ("tools/list", Some(ok()), Ok(())),
            ("tools/list", None, Err(-32602)),
            ("tools/list", Some(json!({})), Err(-32602)),
            ("tools/list", Some(json!([1, 2])), Err(-32602)),
            ("tools/list", Some(json!({"_meta": null})), Err(-32602)),
            ("tools/list", Some(json!({"_meta": 3})), Err(-32602)),
            (
                "tools/list",
                Some(json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}})),
                Err(-32602),
            ),
            (
                "tools/list",
                Some(json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})),
                Err(-32602),
            ),
            (
                "tools/list",
                Some(modern_params(json!(20260728), json!({}), json!({}))),
                Err(-32602),
            ),
            (
                "tools/list",
                Some(modern_params(json!("2026-07-28"), json!([]), json!({}))),
                Err(-32602),
            ),
            (
                "tools/list",
                Some(modern_params(
                    json!("2026-07-28"),
                    json!({"roots": 5}),
                    json!({}),
                )),
                Err(-32602),
            ),
            (
                "tools/list",
                Some(modern_params(
                    json!("2026-07-28"),
                    json!({}),
                    json!({"io.modelcontextprotocol/logLevel": "loud"}),
                )),
                Err(-32602),
            ),
            (
                "tools/list",
                Some(modern_params(
                    json!("2026-07-28"),
                    json!({}),
                    json!({"io.modelcontextprotocol/clientInfo": {"name": 1}}),
                )),
                Err(-32602),
            ),
            (
                "tools/list",
                Some(modern_params(json!("2025-11-25"), json!({}), json!({}))),
                Err(-32022),
            ),
            (
                "tools/list",
                Some(modern_params(json!("2099-01-01"), json!({}), json!({}))),
                Err(-32022),
            ),
            ("initialize", Some(ok()), Err(-32601)),
            ("ping", Some(ok()), Err(-32601)),
            ("ping", None, Err(-32601)),
            ("logging/setLevel", Some(ok()), Err(-32601)),
            ("resources/subscribe", Some(ok()), Err(-32601)),
            ("resources/unsubscribe", Some(ok()), Err(-32601)),
            ("tasks/result", Some(ok()), Err(-32601)),
            ("tasks/list", Some(ok()), Err(-32601)),
            ("prompts/list", Some(ok()), Err(-32601)),
            ("completion/complete", Some(ok()), Err(-32601)),
            ("tasks/get", Some(ok()), Err(-32021)),
            ("tasks/get", Some(with_ext.clone()), Ok(())),
            ("tasks/update", Some(with_ext.clone()), Ok(())),
            ("tasks/cancel", Some(ok()), Err(-32021)),
            ("server/discover", Some(ok()), Ok(())),
        ];
        let supported = Supported::default();
        for (i, (method, params, expect)) in table.into_iter().enumerate() {
            let p = params.map(raw);
            let got = check_modern_request(&supported, &modern_server_caps(), method, p.as_deref());
            assert_eq!(
                got.as_ref().map(|_| ()).map_err(|e| e.code()),
                expect,
                "row {i} {method}"
            );
            if let Err(e) = got {
                assert_eq!(ErrorObject::from(e).code, expect.unwrap_err(), "row {i}");
            }
        }
    }

    #[test]
    fn modern_errors_carry_their_data() {
        let supported = Supported::default();
        let p = raw(modern_params(json!("2025-11-25"), json!({}), json!({})));
        let e: ErrorObject =
            check_modern_request(&supported, &modern_server_caps(), "tools/list", Some(&p))
                .unwrap_err()
                .into();
        assert_eq!(e.code, -32022);
        assert_eq!(data(&e)["requested"], "2025-11-25");
        // Only the versions a retry with per-request `_meta` can use.
        assert_eq!(data(&e)["supported"], json!(["2026-07-28"]));

        // The tasks extension is on the server, not on the client: -32021.
        let p = raw(modern_params(json!("2026-07-28"), json!({}), json!({})));
        let e: ErrorObject =
            check_modern_request(&supported, &modern_server_caps(), "tasks/get", Some(&p))
                .unwrap_err()
                .into();
        assert_eq!(e.code, -32021);
        assert_eq!(
            data(&e)["requiredCapabilities"],
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
        );
        // Not on the server either: -32601 first.
        let e = check_modern_request(
            &supported,
            &ServerCapabilities::default(),
            "tasks/get",
            Some(&p),
        )
        .unwrap_err();
        assert_eq!(e.code(), -32601);
    }

    #[test]
    fn modern_context_is_typed() {
        let info = Implementation::new("c", "2");
        let caps: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {}, "sampling": {}})).unwrap();
        let m = modern_request_meta(V2026_07_28, &caps, Some(&info), Some(LogLevel::Warning));
        let p = raw(json!({"_meta": m, "name": "t"}));
        let ctx = check_modern_request(
            &Supported::default(),
            &modern_server_caps(),
            "tools/call",
            Some(&p),
        )
        .unwrap();
        assert_eq!(ctx.version, V2026_07_28);
        assert_eq!(ctx.client_capabilities, caps);
        assert_eq!(ctx.client_info, Some(info));
        assert_eq!(ctx.log_level, Some(LogLevel::Warning));
        assert!(ctx.wants_log(LogLevel::Error) && !ctx.wants_log(LogLevel::Info));

        // MRTR input requests only for declared capabilities.
        assert!(ctx.check_input_request("elicitation/create", None).is_ok());
        assert!(ctx
            .check_input_request("sampling/createMessage", None)
            .is_ok());
        let url = raw(json!({"mode": "url", "url": "https://x", "message": "m"}));
        let e: ErrorObject = ctx
            .check_input_request("elicitation/create", Some(&url))
            .unwrap_err()
            .into();
        assert_eq!(e.code, -32021);
        assert_eq!(
            data(&e)["requiredCapabilities"],
            json!({"elicitation": {"url": {}}})
        );
        let e: ErrorObject = ctx
            .check_input_request("roots/list", None)
            .unwrap_err()
            .into();
        assert_eq!(data(&e)["requiredCapabilities"], json!({"roots": {}}));
        let tools = raw(json!({"tools": []}));
        let e: ErrorObject = ctx
            .check_input_request("sampling/createMessage", Some(&tools))
            .unwrap_err()
            .into();
        assert_eq!(
            data(&e)["requiredCapabilities"],
            json!({"sampling": {"tools": {}}})
        );
        assert!(ctx.check_input_request("tools/list", None).is_err());

        // Without logLevel no log is wanted.
        let m = modern_request_meta(V2026_07_28, &caps, None, None);
        let p = raw(json!({"_meta": m}));
        let ctx = check_modern_request(
            &Supported::default(),
            &modern_server_caps(),
            "tools/list",
            Some(&p),
        )
        .unwrap();
        assert!(!ctx.wants_log(LogLevel::Emergency));
        assert_eq!(ctx.client_info, None);
    }

    #[test]
    fn modern_notifications_and_sending() {
        assert!(check_modern_notification("notifications/initialized").is_err());
        assert!(check_modern_notification("notifications/roots/list_changed").is_err());
        assert!(check_modern_notification("notifications/cancelled").is_ok());

        let caps = ClientCapabilities::default();
        assert_eq!(
            check_modern_send(V2026_07_28, "ping", None, &caps, None)
                .unwrap_err()
                .code(),
            -32601
        );
        assert!(check_modern_send(V2026_07_28, "prompts/list", None, &caps, None).is_ok());
        assert_eq!(
            check_modern_send(
                V2026_07_28,
                "prompts/list",
                None,
                &caps,
                Some(&modern_server_caps())
            )
            .unwrap_err()
            .code(),
            -32601
        );
        assert!(check_modern_send(V2026_07_28, "tasks/get", None, &caps, None).is_err());
        assert_eq!(
            check_modern_send(V2025_11_25, "tools/list", None, &caps, None)
                .unwrap_err()
                .code(),
            -32603
        );
    }

    #[test]
    fn methods_newer_than_the_session_do_not_exist() {
        let client: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {}, "sampling": {}})).unwrap();
        let server: ServerCapabilities =
            serde_json::from_value(json!({"completions": {}})).unwrap();
        let elicit =
            raw(json!({"message": "m", "requestedSchema": {"type": "object", "properties": {}}}));
        for (version, method, dir, ok) in [
            (
                V2024_11_05,
                "elicitation/create",
                Direction::ServerToClient,
                false,
            ),
            (
                V2025_06_18,
                "elicitation/create",
                Direction::ServerToClient,
                true,
            ),
            (
                V2024_11_05,
                "completion/complete",
                Direction::ClientToServer,
                false,
            ),
            (
                V2025_03_26,
                "completion/complete",
                Direction::ClientToServer,
                true,
            ),
            (V2025_06_18, "tasks/list", Direction::ClientToServer, false),
        ] {
            let r = check_capabilities(dir, version, method, Some(&elicit), &server, &client);
            assert_eq!(r.is_ok(), ok, "{version} {method}: {r:?}");
            if let Err(e) = r {
                assert_eq!(e.code(), -32601, "{version} {method}");
            }
        }
        assert_eq!(introduced_in("tools/call"), None);
    }

    fn dual() -> DualEraServer {
        DualEraServer::new(
            Supported::default(),
            modern_server_caps(),
            Implementation::new("s", "1"),
            None,
        )
    }

    #[test]
    fn dual_era_selects_legacy_on_initialize() {
        let mut d = dual();
        assert_eq!(d.era(), None);
        assert_eq!(d.recv_request(&req(1, "ping", None)), Ok(Accepted::Legacy));
        assert_eq!(
            d.recv_request(&req(2, "tools/list", None))
                .unwrap_err()
                .code(),
            -32600
        );
        assert_eq!(d.era(), None);
        let init = req(3, "initialize", Some(init_params("2025-06-18", json!({}))));
        assert_eq!(d.recv_request(&init), Ok(Accepted::Legacy));
        assert_eq!(d.era(), Some(Era::Legacy));
        // A request with modern `_meta` is still served statelessly.
        let modern = req(
            4,
            "tools/list",
            Some(modern_params(json!("2026-07-28"), json!({}), json!({}))),
        );
        assert!(matches!(d.recv_request(&modern), Ok(Accepted::Modern(_))));
        // A legacy request before the handshake is over is not.
        assert_eq!(
            d.recv_request(&req(5, "tools/list", None))
                .unwrap_err()
                .code(),
            -32600
        );
        let resp = d.initialize_response().unwrap();
        assert_eq!(
            resp.result_as::<Value>().unwrap()["protocolVersion"],
            "2025-06-18"
        );
        d.recv_notification(&note("notifications/initialized", None))
            .unwrap();
        assert!(matches!(d.legacy().state(), ServerState::Operating(_)));
        assert!(matches!(d.recv_request(&modern), Ok(Accepted::Modern(_))));
        assert_eq!(
            d.recv_request(&req(6, "tools/list", None)),
            Ok(Accepted::Legacy)
        );
        // Capabilities without a version: a modern request missing a required field.
        let no_version = req(
            7,
            "tools/list",
            Some(json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}})),
        );
        assert_eq!(d.recv_request(&no_version).unwrap_err().code(), -32602);
        assert_eq!(d.recv_request(&init).unwrap_err().code(), -32600);
    }

    #[test]
    fn dual_era_selects_modern_on_meta() {
        let mut d = dual();
        // A failed modern check does not lock the era.
        let old = req(
            1,
            "server/discover",
            Some(modern_params(json!("2099-01-01"), json!({}), json!({}))),
        );
        assert_eq!(d.recv_request(&old).unwrap_err().code(), -32022);
        assert_eq!(d.era(), None);
        let ok = req(
            2,
            "tools/list",
            Some(modern_params(json!("2026-07-28"), json!({}), json!({}))),
        );
        assert!(matches!(d.recv_request(&ok), Ok(Accepted::Modern(_))));
        assert_eq!(d.era(), Some(Era::Modern));
        // Now every request gets the modern check.
        assert_eq!(
            d.recv_request(&req(3, "ping", None)).unwrap_err().code(),
            -32601
        );
        assert_eq!(
            d.recv_request(&req(4, "tools/list", Some(json!({}))))
                .unwrap_err()
                .code(),
            -32602
        );
        assert!(d
            .recv_notification(&note("notifications/initialized", None))
            .is_err());
        assert!(d
            .recv_notification(&note("notifications/cancelled", None))
            .is_ok());
        // initialize still selects legacy on a dual-era server.
        let init = req(5, "initialize", Some(init_params("2025-11-25", json!({}))));
        assert_eq!(d.recv_request(&init), Ok(Accepted::Legacy));
        assert_eq!(d.era(), Some(Era::Legacy));
        d.close();
        assert_eq!(
            d.recv_request(&req(6, "ping", None)).unwrap_err().code(),
            -32600
        );
    }

    #[test]
    fn odd_peer_input_never_panics() {
        let odd = [
            json!(null),
            json!([]),
            json!("s"),
            json!({"_meta": []}),
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": null}}),
            json!({"mode": 5, "task": null, "tools": "x", "requestId": {"a": 1}}),
            json!({"protocolVersion": [], "capabilities": 1, "clientInfo": null}),
        ];
        let methods = [
            "initialize",
            "ping",
            "tools/call",
            "elicitation/create",
            "sampling/createMessage",
            "notifications/cancelled",
            "notifications/initialized",
            "",
        ];
        for p in &odd {
            for method in methods {
                let r = raw(p.clone());
                let _ =
                    check_modern_request(&Supported::default(), &server_caps(), method, Some(&r));
                let _ = requirements(Direction::ServerToClient, V2025_11_25, method, Some(&r));
                for state in [
                    S::AwaitInit,
                    S::Initializing,
                    S::AwaitInitialized,
                    S::Operating,
                ] {
                    let mut s = server_in(state, client_caps());
                    let _ = s.recv_request(&req(9, method, Some(p.clone())));
                    let _ = s.recv_notification(&note(method, Some(p.clone())));
                    let _ = s.check_send_request(method, Some(&r));
                }
                let mut d = dual();
                let _ = d.recv_request(&req(9, method, Some(p.clone())));
            }
        }
    }

    #[test]
    fn requirement_paths_and_objects_agree() {
        use ClientCapability as C;
        for c in [
            C::Roots,
            C::RootsListChanged,
            C::Sampling,
            C::SamplingTools,
            C::ElicitationForm,
            C::ElicitationUrl,
            C::Tasks,
            C::TasksList,
            C::TasksCancel,
            C::TaskAugmentedSampling,
            C::TaskAugmentedElicitation,
            C::Extension("x.y/z"),
        ] {
            // The minimal object declares exactly what it stands for.
            let caps: ClientCapabilities =
                serde_json::from_value(c.as_required_capabilities()).unwrap();
            assert!(c.is_declared_in(&caps), "{c:?}");
            assert!(!c.is_declared_in(&ClientCapabilities::default()), "{c:?}");
        }
        assert_eq!(
            Capability::Server(ServerCapability::ResourcesSubscribe).path(),
            "resources.subscribe"
        );
    }
}
