//! The server side of MCP, transport-independent: what was registered (tools,
//! resources, resource templates, prompts, completions), the capabilities that follow
//! from it, and [`Server::handle`], which answers one typed client request.
//!
//! ```text
//! Server::builder(info)            register; schemas compiled, names checked
//!   .tool(..).resource(..) ...
//!   .build()?  ───────────────────> Server { capabilities derived from the registry }
//!
//! peer layer (later step)          lifecycle (DualEraServer) accepted the request,
//!   Server::handle(session,        ─> one match on ClientRequest ─> result JSON
//!     version, client caps,           or ErrorObject (the spec's code)
//!     request, sink)
//! ```
//!
//! Sources: REVISIONS.md §7 (features), each revision's "Server features" and
//! "Utilities" sections and `schema.json`.
//!
//! Choices where the spec leaves room (each documented at its item):
//! - invalid tool arguments: -32602 before 2025-11-25, an `isError` result from
//!   2025-11-25 on ([`tools`]);
//! - a result that breaks the tool's own `outputSchema`: -32603 ([`tools`]);
//! - a handler's [`ToolError`]: `isError` ([`ToolError::new`]) or a JSON-RPC
//!   error ([`ToolError::protocol`]; a code the protocol layer owns in the
//!   session's revision is sent as -32603);
//! - cursors are opaque strings naming the list and an offset; any other cursor is
//!   -32602 ([`ServerBuilder::page_size`]);
//! - 2026-07-28 caching: lists `ttlMs` 60000 / `private`, `resources/read` `ttlMs` 0 /
//!   `private` unless configured ([`CachePolicy`]);
//! - legacy logging: every level is sent until the client calls `logging/setLevel`
//!   ([`SessionState`]);
//! - the registry is fixed at [`ServerBuilder::build`]; `listChanged` is declared
//!   `false` for tools, resources and prompts unless
//!   [`ServerBuilder::list_changed`] says the lists' contents change (e.g. tools
//!   that answer differently), announced with an [`Announcer`].
//!
//! This module must not know about transports, framing, JSON-RPC ids or the
//! pending-request table (that is the peer layer), nor run the lifecycle (that is
//! `switchboard_protocol::lifecycle`, which has accepted the request before
//! [`Server::handle`] sees it). It never sends anything itself: notifications go
//! through the request's [`ContextSink`] or are returned to the caller
//! ([`Server::resource_updated`]).

pub mod changes;
pub mod completion;
pub mod context;
mod exchange;
mod mrtr;
pub mod prompts;
pub mod resources;
mod serve;
pub mod testing;
pub mod tools;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use switchboard_protocol::jsonrpc::{code, ErrorObject};
use switchboard_protocol::lifecycle::{introduced_in, removed_in_modern, DualEraServer};
use switchboard_protocol::types::{
    is_valid_tool_name, meta, CacheScope, CallToolRequestParams, CallToolResult,
    ClientCapabilities, ClientRequest, CompleteReference, CompleteResult, DiscoverResult,
    EmptyCapability, EmptyResult, GetPromptResult, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel, Meta, Prompt,
    PromptsCapability, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
    ResourceUpdatedNotificationParams, ResourcesCapability, ServerCapabilities, ServerNotification,
    Tool, ToolsCapability,
};
use switchboard_protocol::version::Supported;
use switchboard_protocol::ProtocolVersion;

pub use changes::{Announcer, Change};
pub use completion::CompletionRequest;
pub use context::{BoxFuture, ContextError, ContextSink, ToolContext};
pub use exchange::CANCEL_GRACE;
pub use mrtr::STATE_TTL;
pub use prompts::PromptArguments;
pub use resources::{ResourceRequest, UriTemplate, UriTemplateError};
pub use serve::{ServeOptions, ServerSession, DRAIN_ON_CLOSE, FLUSH_BOUND};
pub use switchboard_transport::http::resource::Principal;
pub use tools::{Arguments, ToolError};

use completion::{CompletionHandler, CompletionKey};
use context::LogGate;
use prompts::{PromptHandler, RegisteredPrompt};
use resources::{RegisteredResource, RegisteredTemplate, ResourceHandler};
use tools::{RegisteredTool, ToolHandler};

/// A failure of a resource, prompt or completion handler, mapped to a JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandlerError {
    /// The request's params are unacceptable: -32602.
    #[error("{0}")]
    InvalidParams(String),
    /// The thing asked for does not exist: for `resources/read` the revision's
    /// resource-not-found code (-32002 before 2026-07-28, -32602 from it), else -32602.
    #[error("{0}")]
    NotFound(String),
    /// The handler failed: -32603.
    #[error("{0}")]
    Internal(String),
}

impl From<ContextError> for HandlerError {
    /// A [`ToolContext`] failure inside a prompt handler: -32603 with its text.
    fn from(e: ContextError) -> Self {
        HandlerError::Internal(e.to_string())
    }
}

/// Something [`ServerBuilder::build`] refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistrationError {
    /// The tool name breaks the 2025-11-25 rule (1–128 characters of
    /// `[A-Za-z0-9_.-]`; `types::is_valid_tool_name`).
    #[error("invalid tool name {0:?}: 1 to 128 characters of A-Z a-z 0-9 _ - .")]
    InvalidToolName(String),
    /// Two tools, prompts, resources or templates with one name/URI.
    #[error("{kind} {name:?} is registered twice")]
    Duplicate {
        /// `"tool"`, `"prompt"`, `"resource"` or `"resource template"`.
        kind: &'static str,
        /// The name, URI or URI template.
        name: String,
    },
    /// A tool's `inputSchema` or `outputSchema` does not compile (or the input schema
    /// is not `type: "object"`, which every revision requires).
    #[error("tool {tool:?}: {which} does not compile: {reason}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// `"inputSchema"` or `"outputSchema"`.
        which: &'static str,
        /// The compiler's reason.
        reason: String,
    },
    /// A resource template is not a level-1 URI template.
    #[error(transparent)]
    InvalidUriTemplate(#[from] UriTemplateError),
    /// A completion handler names a prompt argument or template variable that is not
    /// registered.
    #[error("completion for unknown {0}")]
    UnknownCompletionTarget(String),
    /// A resource with an empty URI or name.
    #[error("resource {0:?} needs a non-empty uri and name")]
    InvalidResource(String),
}

/// Everything [`ServerBuilder::build`] refused, in registration order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} registration error(s); first: {}", errors.len(), errors[0])]
pub struct BuildError {
    /// The errors (never empty).
    pub errors: Vec<RegistrationError>,
}

/// The 2026-07-28 caching hints put on a cacheable result ("Caching").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachePolicy {
    /// `ttlMs`: how long the result may be reused, in milliseconds (0 = stale at once).
    pub ttl_ms: u64,
    /// `cacheScope`: who may reuse it.
    pub scope: CacheScope,
}

/// Per-session server state: the `logging/setLevel` level and the
/// `resources/subscribe` set (legacy sessions; a 2026-07-28 request carries its own
/// log level and uses listen streams instead).
///
/// A cheap handle (clones share the state), internally locked and never held across
/// an await, so concurrent requests of one session can run while one updates it.
#[derive(Debug, Clone, Default)]
pub struct SessionState {
    inner: Arc<Mutex<SessionInner>>,
}

#[derive(Debug, Default)]
struct SessionInner {
    /// Who opened the session, when the HTTP server checks tokens.
    principal: Option<Principal>,
    log_level: Option<LoggingLevel>,
    /// Subscribed URI -> the announcer's mark when the subscription was made.
    subscriptions: BTreeMap<String, u64>,
}

impl SessionState {
    /// A fresh session: no level set (every level is sent), no subscriptions.
    pub fn new() -> Self {
        Self::default()
    }

    /// A fresh session opened by `principal` (the caller its access token
    /// names, when the HTTP server checks tokens).
    pub fn of(principal: Option<Principal>) -> Self {
        let state = Self::default();
        state.lock().principal = principal;
        state
    }

    /// Who opened the session, when the HTTP server checks tokens
    /// (`HttpServerConfig::auth`); `None` otherwise.
    pub fn principal(&self) -> Option<Principal> {
        self.lock().principal.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SessionInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The level from the last `logging/setLevel`, if any.
    pub fn log_level(&self) -> Option<LoggingLevel> {
        self.lock().log_level
    }

    /// Sets the minimum level (what `logging/setLevel` does).
    pub fn set_log_level(&self, level: LoggingLevel) {
        self.lock().log_level = Some(level);
    }

    /// Whether the client subscribed to exactly `uri`.
    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.lock().subscriptions.contains_key(uri)
    }

    /// Whether the update announced as number `announced` (see
    /// [`Announcer`]) is for this session: it subscribed to exactly `uri` before
    /// the announcement was made.
    pub(crate) fn hears_update(&self, uri: &str, announced: u64) -> bool {
        self.lock()
            .subscriptions
            .get(uri)
            .is_some_and(|&mark| announced >= mark)
    }

    /// The subscribed URIs, sorted.
    pub fn subscriptions(&self) -> Vec<String> {
        self.lock().subscriptions.keys().cloned().collect()
    }
}

/// Registers what a [`Server`] offers; [`build`](Self::build) checks it all.
///
/// Registration methods never fail on the spot, so calls chain; every problem is
/// reported by `build` ([`BuildError`]).
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    supported: Supported,
    page_size: usize,
    list_cache: CachePolicy,
    read_cache: CachePolicy,
    logging: bool,
    tools: Vec<Arc<RegisteredTool>>,
    resources: Vec<RegisteredResource>,
    templates: Vec<RegisteredTemplate>,
    prompts: Vec<RegisteredPrompt>,
    completions: Vec<(CompletionKey, CompletionHandler)>,
    errors: Vec<RegistrationError>,
    list_changed: bool,
    announcer: Announcer,
}

impl ServerBuilder {
    /// Declare `listChanged: true` for the tool, prompt and resource lists (default
    /// false): the application will announce changes with the [`Announcer`]
    /// ([`announcer`](Self::announcer)).
    pub fn list_changed(mut self, on: bool) -> Self {
        self.list_changed = on;
        self
    }

    /// The [`Announcer`] of the server being built (the same one
    /// [`Server::announcer`] returns), e.g. for handlers registered here.
    pub fn announcer(&self) -> Announcer {
        self.announcer.clone()
    }

    /// `instructions` for the `initialize` / `server/discover` result.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// The revisions the server speaks (for `server/discover` and
    /// [`Server::lifecycle`]); default: all.
    pub fn supported(mut self, supported: Supported) -> Self {
        self.supported = supported;
        self
    }

    /// Items per page of `tools/list`, `resources/list`, `resources/templates/list`
    /// and `prompts/list` (default 50; 0 counts as 1). A page that is not the last
    /// carries `nextCursor`, an opaque string; a cursor the server did not issue is
    /// -32602.
    pub fn page_size(mut self, n: usize) -> Self {
        self.page_size = n.max(1);
        self
    }

    /// 2026-07-28 cache hints on the four list results and `server/discover`
    /// (default `ttlMs` 60000, `private`: the registry is fixed, but a list may vary
    /// by authorization).
    pub fn list_cache(mut self, ttl_ms: u64, scope: CacheScope) -> Self {
        self.list_cache = CachePolicy { ttl_ms, scope };
        self
    }

    /// 2026-07-28 cache hints on `resources/read` results (default `ttlMs` 0,
    /// `private`: contents may change at any time).
    pub fn read_cache(mut self, ttl_ms: u64, scope: CacheScope) -> Self {
        self.read_cache = CachePolicy { ttl_ms, scope };
        self
    }

    /// Whether to declare the `logging` capability (default true). Without it
    /// [`ToolContext::log`] sends nothing and `logging/setLevel` is -32601.
    pub fn logging(mut self, on: bool) -> Self {
        self.logging = on;
        self
    }

    /// Registers a tool: `tool` is its definition as `tools/list` shows it (name,
    /// title, description, `inputSchema`, `outputSchema`, annotations, icons, `_meta`),
    /// `handler` runs it with validated arguments.
    ///
    /// Checked at build: the name (`is_valid_tool_name`) and its uniqueness;
    /// `inputSchema` must be `type: "object"` and compile, as must `outputSchema`
    /// (JSON Schema 2020-12 unless `$schema` says otherwise; no remote `$ref`).
    pub fn tool<F, Fut>(mut self, tool: Tool, handler: F) -> Self
    where
        F: Fn(Arguments, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult, ToolError>> + Send + 'static,
    {
        let handler: ToolHandler = Arc::new(move |a, c| Box::pin(handler(a, c)));
        let name = tool.name.clone();
        let schema_err = |which, reason| RegistrationError::InvalidSchema {
            tool: name.clone(),
            which,
            reason,
        };
        if !is_valid_tool_name(&name) {
            self.errors.push(RegistrationError::InvalidToolName(name));
            return self;
        }
        if self.tools.iter().any(|t| t.tool.name == name) {
            self.errors
                .push(RegistrationError::Duplicate { kind: "tool", name });
            return self;
        }
        if tool.input_schema.get("type") != Some(&json!("object")) {
            self.errors
                .push(schema_err("inputSchema", "type must be \"object\"".into()));
            return self;
        }
        let input = match tools::compile(&tool.input_schema) {
            Ok(v) => v,
            Err(reason) => {
                self.errors.push(schema_err("inputSchema", reason));
                return self;
            }
        };
        let output = match tool.output_schema.as_ref().map(tools::compile).transpose() {
            Ok(v) => v,
            Err(reason) => {
                self.errors.push(schema_err("outputSchema", reason));
                return self;
            }
        };
        self.tools.push(Arc::new(RegisteredTool {
            tool,
            input,
            output,
            handler,
        }));
        self
    }

    fn resource_handler<F, Fut>(handler: F) -> ResourceHandler
    where
        F: Fn(ResourceRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, HandlerError>> + Send + 'static,
    {
        Arc::new(move |r| Box::pin(handler(r)))
    }

    /// Registers a static resource (`resources/list` shows `resource`); `handler`
    /// returns its contents (text or base64 blob) for `resources/read`. The URI must
    /// be unique and non-empty.
    pub fn resource<F, Fut>(mut self, resource: Resource, handler: F) -> Self
    where
        F: Fn(ResourceRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, HandlerError>> + Send + 'static,
    {
        if resource.uri.is_empty() || resource.name.is_empty() {
            self.errors
                .push(RegistrationError::InvalidResource(resource.uri));
        } else if self
            .resources
            .iter()
            .any(|r| r.resource.uri == resource.uri)
        {
            self.errors.push(RegistrationError::Duplicate {
                kind: "resource",
                name: resource.uri,
            });
        } else {
            self.resources.push(RegisteredResource {
                resource,
                handler: Self::resource_handler(handler),
            });
        }
        self
    }

    /// Registers a resource template (`resources/templates/list` shows it);
    /// `handler` reads any URI that matches `uriTemplate` (RFC 6570 level 1, see
    /// [`UriTemplate`]) and gets the variables' values.
    pub fn resource_template<F, Fut>(mut self, template: ResourceTemplate, handler: F) -> Self
    where
        F: Fn(ResourceRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, HandlerError>> + Send + 'static,
    {
        match UriTemplate::parse(&template.uri_template) {
            Err(e) => self.errors.push(e.into()),
            Ok(_)
                if self
                    .templates
                    .iter()
                    .any(|t| t.template.uri_template == template.uri_template) =>
            {
                self.errors.push(RegistrationError::Duplicate {
                    kind: "resource template",
                    name: template.uri_template,
                })
            }
            Ok(parsed) => self.templates.push(RegisteredTemplate {
                template,
                parsed,
                handler: Self::resource_handler(handler),
            }),
        }
        self
    }

    /// Registers a prompt (`prompts/list` shows `prompt`, with its arguments);
    /// `handler` renders it for `prompts/get` once every required argument is
    /// present.
    pub fn prompt<F, Fut>(self, prompt: Prompt, handler: F) -> Self
    where
        F: Fn(PromptArguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, HandlerError>> + Send + 'static,
    {
        self.prompt_with_context(prompt, move |a, _ctx| handler(a))
    }

    /// Registers a prompt whose handler also gets a [`ToolContext`]: to ask the
    /// client for input while rendering (elicitation, sampling, roots; a
    /// server→client request in a legacy session, an `input_required` round trip in
    /// 2026-07-28), to log, or to notice cancellation. Otherwise as
    /// [`prompt`](Self::prompt). A [`ContextError`] from the context can be turned
    /// into a [`HandlerError`] (-32603).
    pub fn prompt_with_context<F, Fut>(mut self, prompt: Prompt, handler: F) -> Self
    where
        F: Fn(PromptArguments, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, HandlerError>> + Send + 'static,
    {
        if self.prompts.iter().any(|p| p.prompt.name == prompt.name) {
            self.errors.push(RegistrationError::Duplicate {
                kind: "prompt",
                name: prompt.name,
            });
        } else {
            let handler: PromptHandler = Arc::new(move |a, c| Box::pin(handler(a, c)));
            self.prompts.push(RegisteredPrompt { prompt, handler });
        }
        self
    }

    fn completion<F, Fut>(mut self, key: CompletionKey, handler: F) -> Self
    where
        F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, HandlerError>> + Send + 'static,
    {
        let handler: CompletionHandler = Arc::new(move |r| Box::pin(handler(r)));
        self.completions.push((key, handler));
        self
    }

    /// Registers completion for argument `argument` of prompt `prompt` (both must be
    /// registered by build time). The handler returns every matching value; the
    /// server caps the answer at 100.
    pub fn prompt_completion<F, Fut>(
        self,
        prompt: impl Into<String>,
        argument: impl Into<String>,
        handler: F,
    ) -> Self
    where
        F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, HandlerError>> + Send + 'static,
    {
        self.completion(
            CompletionKey::Prompt(prompt.into(), argument.into()),
            handler,
        )
    }

    /// Registers completion for variable `variable` of the resource template whose
    /// `uriTemplate` is `uri_template` (both must be registered by build time).
    pub fn template_completion<F, Fut>(
        self,
        uri_template: impl Into<String>,
        variable: impl Into<String>,
        handler: F,
    ) -> Self
    where
        F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, HandlerError>> + Send + 'static,
    {
        self.completion(
            CompletionKey::Template(uri_template.into(), variable.into()),
            handler,
        )
    }

    /// Checks everything registered and derives the capabilities: `tools`,
    /// `resources` (`subscribe: true`), `prompts` when any was registered (each with
    /// `listChanged` as set by [`list_changed`](Self::list_changed), default false),
    /// `completions` only when a completion handler was, `logging` unless turned off.
    pub fn build(mut self) -> Result<Server, BuildError> {
        let mut completions = HashMap::new();
        for (key, handler) in self.completions {
            let known = match &key {
                CompletionKey::Prompt(p, a) => self
                    .prompts
                    .iter()
                    .any(|r| &r.prompt.name == p && r.has_argument(a)),
                CompletionKey::Template(t, v) => self
                    .templates
                    .iter()
                    .any(|r| &r.template.uri_template == t && r.parsed.variables().any(|x| x == v)),
            };
            if known {
                completions.insert(key, handler);
            } else {
                let what = match key {
                    CompletionKey::Prompt(p, a) => format!("prompt argument {p}/{a}"),
                    CompletionKey::Template(t, v) => format!("template variable {t} {{{v}}}"),
                };
                self.errors
                    .push(RegistrationError::UnknownCompletionTarget(what));
            }
        }
        if !self.errors.is_empty() {
            return Err(BuildError {
                errors: self.errors,
            });
        }
        let capabilities = ServerCapabilities {
            logging: self.logging.then(EmptyCapability::new),
            completions: (!completions.is_empty()).then(EmptyCapability::new),
            prompts: (!self.prompts.is_empty()).then(|| PromptsCapability {
                list_changed: Some(self.list_changed),
                ..Default::default()
            }),
            resources: (!self.resources.is_empty() || !self.templates.is_empty()).then(|| {
                ResourcesCapability {
                    subscribe: Some(true),
                    list_changed: Some(self.list_changed),
                    ..Default::default()
                }
            }),
            tools: (!self.tools.is_empty()).then(|| ToolsCapability {
                list_changed: Some(self.list_changed),
                ..Default::default()
            }),
            ..Default::default()
        };
        Ok(Server {
            inner: Arc::new(Inner {
                info: self.info,
                instructions: self.instructions,
                supported: self.supported,
                page_size: self.page_size,
                list_cache: self.list_cache,
                read_cache: self.read_cache,
                capabilities,
                tools: self.tools,
                resources: self.resources,
                templates: self.templates,
                prompts: self.prompts,
                completions,
                announcer: self.announcer,
            }),
        })
    }
}

struct Inner {
    info: Implementation,
    instructions: Option<String>,
    supported: Supported,
    page_size: usize,
    list_cache: CachePolicy,
    read_cache: CachePolicy,
    capabilities: ServerCapabilities,
    tools: Vec<Arc<RegisteredTool>>,
    resources: Vec<RegisteredResource>,
    templates: Vec<RegisteredTemplate>,
    prompts: Vec<RegisteredPrompt>,
    completions: HashMap<CompletionKey, CompletionHandler>,
    announcer: Announcer,
}

/// A built MCP server: the registry and its derived capabilities. Cheap to clone
/// (clones share everything); immutable after [`ServerBuilder::build`].
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("info", &self.inner.info)
            .field("capabilities", &self.inner.capabilities)
            .finish_non_exhaustive()
    }
}

/// What [`Server::start`] leaves to do.
pub(crate) enum Started {
    /// The answer, ready at once.
    Ready(Result<Box<RawValue>, ErrorObject>),
    /// A handler runs: the future yields the answer.
    Pending(BoxFuture<'static, Result<Box<RawValue>, ErrorObject>>),
}

fn invalid_params(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(code::INVALID_PARAMS, message)
}

fn handler_error(e: HandlerError, not_found_code: i64) -> ErrorObject {
    match e {
        HandlerError::InvalidParams(m) => ErrorObject::new(code::INVALID_PARAMS, m),
        HandlerError::NotFound(m) => ErrorObject::new(not_found_code, m),
        HandlerError::Internal(m) => ErrorObject::new(code::INTERNAL_ERROR, m),
    }
}

impl Server {
    /// Starts a server that introduces itself as `info` (`serverInfo`).
    pub fn builder(info: Implementation) -> ServerBuilder {
        ServerBuilder {
            info,
            instructions: None,
            supported: Supported::default(),
            page_size: 50,
            list_cache: CachePolicy {
                ttl_ms: 60_000,
                scope: CacheScope::Private,
            },
            read_cache: CachePolicy {
                ttl_ms: 0,
                scope: CacheScope::Private,
            },
            logging: true,
            tools: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            prompts: Vec::new(),
            completions: Vec::new(),
            errors: Vec::new(),
            list_changed: false,
            announcer: Announcer::default(),
        }
    }

    /// The server's [`Announcer`]: announce list changes and resource updates to
    /// every session and listen stream.
    pub fn announcer(&self) -> &Announcer {
        &self.inner.announcer
    }

    /// The revisions this server speaks.
    pub fn supported(&self) -> &Supported {
        &self.inner.supported
    }

    /// The capabilities derived at build (what `initialize` / `server/discover`
    /// declare).
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.inner.capabilities
    }

    /// `serverInfo`.
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// `instructions`, if any.
    pub fn instructions(&self) -> Option<&str> {
        self.inner.instructions.as_deref()
    }

    /// A fresh dual-era lifecycle for one connection, declaring this server's
    /// capabilities, info and instructions.
    pub fn lifecycle(&self) -> DualEraServer {
        DualEraServer::new(
            self.inner.supported.clone(),
            self.inner.capabilities.clone(),
            self.inner.info.clone(),
            self.inner.instructions.clone(),
        )
    }

    /// The `notifications/resources/updated{uri}` to send to `session` after the
    /// resource at `uri` changed, or `None` when the session did not subscribe to
    /// exactly that URI (or `resources.subscribe` is not declared): the server never
    /// notifies unasked (legacy "Resources → Subscriptions"; 2026-07-28 listen streams
    /// are the peer layer's).
    pub fn resource_updated(
        &self,
        session: &SessionState,
        uri: &str,
    ) -> Option<ServerNotification> {
        (self.inner.capabilities.supports_resource_subscribe() && session.is_subscribed(uri)).then(
            || {
                ServerNotification::ResourceUpdated(Box::new(ResourceUpdatedNotificationParams {
                    uri: uri.to_owned(),
                    ..Default::default()
                }))
            },
        )
    }

    /// Answers one client request, already accepted by the lifecycle, under `version`
    /// with the client's `client_capabilities` (the session's, or the 2026-07-28
    /// request's `_meta`). `session` is the legacy session's state (for a 2026-07-28
    /// request pass a fresh one: nothing is inferred from earlier requests). `sink`
    /// carries what a tool handler sends while it runs.
    ///
    /// Returns the JSON `result` (2026-07-28: with `resultType: "complete"` when the
    /// handler set none, `_meta["io.modelcontextprotocol/serverInfo"]`, and `ttlMs` /
    /// `cacheScope` on the list results, `resources/read` and `server/discover`) or the
    /// error object. -32601 when the method is unknown, not in `version`, or needs a
    /// server capability this server did not declare (including the tasks methods and
    /// `resources/subscribe` without resources). `initialize` is -32600 here (the
    /// lifecycle answers it); `subscriptions/listen` is -32603 here (the peer layer
    /// serves listen streams).
    ///
    /// Cancellation is the caller's: drop the future, or let the handler observe
    /// [`ToolContext::is_cancelled`].
    pub async fn handle(
        &self,
        session: &SessionState,
        version: ProtocolVersion,
        client_capabilities: &ClientCapabilities,
        request: ClientRequest,
        sink: Arc<dyn ContextSink>,
    ) -> Result<Value, ErrorObject> {
        let client_capabilities = Arc::new(client_capabilities.clone());
        let raw = self
            .handle_with(session, version, &client_capabilities, request, sink, None)
            .await?;
        serde_json::from_str(raw.get()).map_err(|e| {
            ErrorObject::new(code::INTERNAL_ERROR, format!("result does not parse: {e}"))
        })
    }

    /// [`handle`](Self::handle) with the MRTR round of a 2026-07-28 attempt.
    pub(crate) async fn handle_with(
        &self,
        session: &SessionState,
        version: ProtocolVersion,
        client_capabilities: &Arc<ClientCapabilities>,
        request: ClientRequest,
        sink: Arc<dyn ContextSink>,
        round: Option<Arc<mrtr::Round>>,
    ) -> Result<Box<RawValue>, ErrorObject> {
        match self.start(session, version, client_capabilities, request, sink, round) {
            Started::Ready(answer) => answer,
            Started::Pending(handling) => handling.await,
        }
    }

    /// The synchronous part of [`handle`](Self::handle): gates the request,
    /// answers it at once when no handler has to run, and otherwise calls the
    /// handler and returns the future that finishes the answer. That future owns
    /// all it needs (`'static`) and holds no copy of the request, so its box stays
    /// small: 64 bytes for a `tools/call` (DHAT, the library benchmark's echo
    /// server), beside the handler's own future. The future that awaited the
    /// handler inside `handle` was about 1.9 KB, copied into every call's box.
    pub(crate) fn start(
        &self,
        session: &SessionState,
        version: ProtocolVersion,
        client_capabilities: &Arc<ClientCapabilities>,
        request: ClientRequest,
        sink: Arc<dyn ContextSink>,
        round: Option<Arc<mrtr::Round>>,
    ) -> Started {
        if let Err(reason) = self.gate(version, &request) {
            return Started::Ready(Err(ErrorObject::new(
                code::METHOD_NOT_FOUND,
                format!("{}: {reason}", request.method()),
            )));
        }
        match self.dispatch(session, version, client_capabilities, request, sink, round) {
            Ok(started) => started,
            Err(e) => Started::Ready(Err(e)),
        }
    }

    /// Whether the method exists in `version` and its server capability is declared.
    fn gate(&self, version: ProtocolVersion, request: &ClientRequest) -> Result<(), &'static str> {
        let method = request.method();
        if request.is_other() {
            return Err("method not found");
        }
        if version.era() == switchboard_protocol::version::Era::Modern && removed_in_modern(method)
        {
            return Err("not available in 2026-07-28");
        }
        if introduced_in(method).is_some_and(|v| v > version) {
            return Err("not available in this protocol revision");
        }
        let caps = &self.inner.capabilities;
        let declared = match request {
            ClientRequest::ListTools(_) | ClientRequest::CallTool(_) => caps.tools.is_some(),
            ClientRequest::ListResources(_)
            | ClientRequest::ListResourceTemplates(_)
            | ClientRequest::ReadResource(_) => caps.supports_resources(),
            ClientRequest::Subscribe(_) | ClientRequest::Unsubscribe(_) => {
                caps.supports_resource_subscribe()
            }
            ClientRequest::ListPrompts(_) | ClientRequest::GetPrompt(_) => caps.supports_prompts(),
            ClientRequest::Complete(_) => caps.supports_completions(),
            ClientRequest::SetLevel(_) => caps.supports_logging(),
            ClientRequest::GetTask(_)
            | ClientRequest::GetTaskPayload(_)
            | ClientRequest::ListTasks(_)
            | ClientRequest::CancelTask(_) => caps.tasks.is_some(),
            ClientRequest::Initialize(_)
            | ClientRequest::Ping(_)
            | ClientRequest::Discover(_)
            | ClientRequest::SubscriptionsListen(_)
            | ClientRequest::Other { .. } => true,
        };
        if !declared {
            return Err("the server did not declare the capability this method needs");
        }
        match request {
            // Declared, but this library serves no tasks.
            ClientRequest::GetTask(_)
            | ClientRequest::GetTaskPayload(_)
            | ClientRequest::ListTasks(_)
            | ClientRequest::CancelTask(_) => Err("method not found"),
            _ => Ok(()),
        }
    }

    /// Answers a request that passed [`gate`](Self::gate): at once, or with the
    /// future of the handler it calls.
    fn dispatch(
        &self,
        session: &SessionState,
        version: ProtocolVersion,
        client_capabilities: &Arc<ClientCapabilities>,
        request: ClientRequest,
        sink: Arc<dyn ContextSink>,
        round: Option<Arc<mrtr::Round>>,
    ) -> Result<Started, ErrorObject> {
        let inner = &*self.inner;
        let list_cache = Some(inner.list_cache);
        let ready = |answer| Ok(Started::Ready(answer));
        match request {
            ClientRequest::Initialize(_) => Err(ErrorObject::new(
                code::INVALID_REQUEST,
                "initialize is answered by the lifecycle, not by Server::handle",
            )),
            ClientRequest::Ping(_) => ready(self.finish(version, &EmptyResult::default(), None)),
            ClientRequest::Discover(_) => {
                let mut r = DiscoverResult::new(
                    inner
                        .supported
                        .wire_strings()
                        .into_iter()
                        .map(str::to_owned)
                        .collect(),
                    inner.capabilities.clone(),
                    inner.list_cache.ttl_ms,
                    inner.list_cache.scope,
                    Some(&inner.info),
                );
                r.instructions = inner.instructions.clone();
                ready(self.finish(version, &r, list_cache))
            }
            ClientRequest::SubscriptionsListen(_) => Err(ErrorObject::new(
                code::INTERNAL_ERROR,
                "subscriptions/listen is served by the peer layer, not by Server::handle",
            )),
            ClientRequest::ListTools(p) => {
                let (tools, next_cursor) = self.page(
                    "tools",
                    &inner.tools,
                    p.as_ref().and_then(|p| p.cursor.as_deref()),
                    |t| tools::for_revision(&t.tool, version),
                )?;
                let r = ListToolsResult {
                    tools,
                    next_cursor,
                    ..Default::default()
                };
                ready(self.finish(version, &r, list_cache))
            }
            ClientRequest::CallTool(p) => {
                let t = inner
                    .tools
                    .iter()
                    .find(|t| t.tool.name == p.name)
                    .ok_or_else(|| invalid_params(format!("unknown tool {:?}", p.name)))?;
                let CallToolRequestParams {
                    arguments, meta, ..
                } = *p;
                let request_meta = meta.unwrap_or_default();
                let log = if !inner.capabilities.supports_logging() {
                    LogGate::Off
                } else if version.era() == switchboard_protocol::version::Era::Modern {
                    LogGate::Request(Self::modern_log_level(&request_meta)?)
                } else {
                    LogGate::Session(session.clone())
                };
                let ctx = ToolContext::new(
                    sink,
                    version,
                    client_capabilities.clone(),
                    request_meta,
                    log,
                    round,
                    session.principal(),
                );
                let running = match tools::start(t, version, arguments, ctx) {
                    Err(invalid) => {
                        return ready(
                            (*invalid).map_or_else(Err, |r| self.finish(version, &r, None)),
                        )
                    }
                    Ok(running) => running,
                };
                let (server, t) = (self.clone(), t.clone());
                self.pending(async move {
                    let result = tools::finish(&t, version, running.await)?;
                    server.finish(version, &result, None)
                })
            }
            ClientRequest::ListResources(p) => {
                let (resources, next_cursor) = self.page(
                    "resources",
                    &inner.resources,
                    p.as_ref().and_then(|p| p.cursor.as_deref()),
                    |r| r.resource.clone(),
                )?;
                let r = ListResourcesResult {
                    resources,
                    next_cursor,
                    ..Default::default()
                };
                ready(self.finish(version, &r, list_cache))
            }
            ClientRequest::ListResourceTemplates(p) => {
                let (resource_templates, next_cursor) = self.page(
                    "templates",
                    &inner.templates,
                    p.as_ref().and_then(|p| p.cursor.as_deref()),
                    |t| t.template.clone(),
                )?;
                let r = ListResourceTemplatesResult {
                    resource_templates,
                    next_cursor,
                    ..Default::default()
                };
                ready(self.finish(version, &r, list_cache))
            }
            ClientRequest::ReadResource(p) => {
                let not_found = version.resource_not_found_code();
                let (handler, variables) = self.find_resource(&p.uri).ok_or_else(|| {
                    ErrorObject::new(not_found, format!("resource not found: {}", p.uri))
                        .with_data(&json!({"uri": p.uri}))
                })?;
                let reading = handler(ResourceRequest {
                    uri: p.uri,
                    variables,
                });
                let (server, cache) = (self.clone(), Some(inner.read_cache));
                self.pending(async move {
                    let contents = reading.await.map_err(|e| handler_error(e, not_found))?;
                    let r = ReadResourceResult {
                        contents,
                        ..Default::default()
                    };
                    server.finish(version, &r, cache)
                })
            }
            ClientRequest::Subscribe(p) => {
                if self.find_resource(&p.uri).is_none() {
                    return Err(ErrorObject::new(
                        version.resource_not_found_code(),
                        format!("resource not found: {}", p.uri),
                    )
                    .with_data(&json!({"uri": p.uri})));
                }
                let mark = self.inner.announcer.mark();
                session.lock().subscriptions.insert(p.uri.clone(), mark);
                ready(self.finish(version, &EmptyResult::default(), None))
            }
            ClientRequest::Unsubscribe(p) => {
                session.lock().subscriptions.remove(&p.uri);
                ready(self.finish(version, &EmptyResult::default(), None))
            }
            ClientRequest::ListPrompts(p) => {
                let (prompts, next_cursor) = self.page(
                    "prompts",
                    &inner.prompts,
                    p.as_ref().and_then(|p| p.cursor.as_deref()),
                    |p| p.prompt.clone(),
                )?;
                let r = ListPromptsResult {
                    prompts,
                    next_cursor,
                    ..Default::default()
                };
                ready(self.finish(version, &r, list_cache))
            }
            ClientRequest::GetPrompt(p) => {
                let prompt = inner
                    .prompts
                    .iter()
                    .find(|r| r.prompt.name == p.name)
                    .ok_or_else(|| invalid_params(format!("unknown prompt {:?}", p.name)))?;
                let args = p.arguments.unwrap_or_default();
                if let Some(missing) = prompt.missing_required(&args) {
                    return Err(invalid_params(format!(
                        "prompt {:?}: missing required argument {missing:?}",
                        p.name
                    )));
                }
                let request_meta = p.meta.unwrap_or_default();
                let log = if !inner.capabilities.supports_logging() {
                    LogGate::Off
                } else if version.era() == switchboard_protocol::version::Era::Modern {
                    LogGate::Request(Self::modern_log_level(&request_meta)?)
                } else {
                    LogGate::Session(session.clone())
                };
                let ctx = ToolContext::new(
                    sink,
                    version,
                    client_capabilities.clone(),
                    request_meta,
                    log,
                    round,
                    session.principal(),
                );
                let getting = (prompt.handler)(args, ctx);
                let server = self.clone();
                self.pending(async move {
                    let r = getting
                        .await
                        .map_err(|e| handler_error(e, code::INVALID_PARAMS))?;
                    server.finish(version, &r, None)
                })
            }
            ClientRequest::Complete(p) => {
                let argument = p.argument.name.clone();
                let key = match &p.reference {
                    CompleteReference::Prompt(r) => {
                        if !inner.prompts.iter().any(|x| x.prompt.name == r.name) {
                            return Err(invalid_params(format!("unknown prompt {:?}", r.name)));
                        }
                        CompletionKey::Prompt(r.name.clone(), argument.clone())
                    }
                    CompleteReference::ResourceTemplate(r) => {
                        if !inner
                            .templates
                            .iter()
                            .any(|t| t.template.uri_template == r.uri)
                        {
                            return Err(invalid_params(format!(
                                "unknown resource template {:?}",
                                r.uri
                            )));
                        }
                        CompletionKey::Template(r.uri.clone(), argument.clone())
                    }
                    CompleteReference::Other(_) => {
                        return Err(invalid_params("unknown completion reference type"))
                    }
                };
                let completing = inner.completions.get(&key).map(|h| {
                    h(CompletionRequest {
                        argument,
                        value: p.argument.value,
                        context: p.context.and_then(|c| c.arguments).unwrap_or_default(),
                    })
                });
                let server = self.clone();
                self.pending(async move {
                    let values = match completing {
                        None => Vec::new(),
                        Some(completing) => completing
                            .await
                            .map_err(|e| handler_error(e, code::INVALID_PARAMS))?,
                    };
                    let r = CompleteResult {
                        completion: completion::capped(values),
                        ..Default::default()
                    };
                    server.finish(version, &r, None)
                })
            }
            ClientRequest::SetLevel(p) => {
                session.set_log_level(p.level);
                ready(self.finish(version, &EmptyResult::default(), None))
            }
            ClientRequest::GetTask(_)
            | ClientRequest::GetTaskPayload(_)
            | ClientRequest::ListTasks(_)
            | ClientRequest::CancelTask(_)
            | ClientRequest::Other { .. } => Err(ErrorObject::new(
                code::METHOD_NOT_FOUND,
                "method not found (refused by the gate first)",
            )),
        }
    }

    /// A handler's answer still to come, boxed ([`Started::Pending`]).
    #[allow(clippy::unnecessary_wraps)] // the shape of `dispatch`'s arms
    fn pending(
        &self,
        answer: impl Future<Output = Result<Box<RawValue>, ErrorObject>> + Send + 'static,
    ) -> Result<Started, ErrorObject> {
        Ok(Started::Pending(Box::pin(answer)))
    }

    /// The 2026-07-28 `_meta` log level; a malformed one is -32602.
    fn modern_log_level(m: &Meta) -> Result<Option<LoggingLevel>, ErrorObject> {
        m.get(meta::LOG_LEVEL)
            .map(|v| serde_json::from_value::<LoggingLevel>(v.clone()))
            .transpose()
            .map_err(|e| invalid_params(format!("_meta[{:?}]: {e}", meta::LOG_LEVEL)))
    }

    /// The handler and template variables for `uri`: a static resource with exactly
    /// that URI first, then the first matching template.
    fn find_resource(
        &self,
        uri: &str,
    ) -> Option<(ResourceHandler, std::collections::BTreeMap<String, String>)> {
        let inner = &*self.inner;
        if let Some(r) = inner.resources.iter().find(|r| r.resource.uri == uri) {
            return Some((r.handler.clone(), Default::default()));
        }
        inner
            .templates
            .iter()
            .find_map(|t| t.parsed.matches(uri).map(|v| (t.handler.clone(), v)))
    }

    /// One page of a list, each item mapped by `item`, and the next cursor. Cursors
    /// are `"<list>:<offset>"`, opaque to clients; any other value, another list's
    /// cursor, or an offset outside `1..len` is -32602.
    fn page<T, U>(
        &self,
        list: &str,
        items: &[T],
        cursor: Option<&str>,
        item: impl FnMut(&T) -> U,
    ) -> Result<(Vec<U>, Option<String>), ErrorObject> {
        let len = items.len();
        let start = match cursor {
            None => 0,
            Some(c) => c
                .strip_prefix(list)
                .and_then(|r| r.strip_prefix(':'))
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| (1..len).contains(n))
                .ok_or_else(|| invalid_params(format!("invalid cursor {c:?}")))?,
        };
        let end = start.saturating_add(self.inner.page_size).min(len);
        let next = (end < len).then(|| format!("{list}:{end}"));
        Ok((items[start..end].iter().map(item).collect(), next))
    }

    /// The result as JSON text for `version`: 2026-07-28 gets
    /// `resultType: "complete"` (unless the handler set one), `_meta` serverInfo
    /// and, for cacheable results, `ttlMs`/`cacheScope`; earlier revisions get no
    /// `resultType`. For those earlier revisions the result is written straight to
    /// text, without building a `serde_json::Value` first (the path every call of a
    /// 2025 session takes), unless the text names a `resultType` to remove.
    fn finish<T: Serialize>(
        &self,
        version: ProtocolVersion,
        result: &T,
        cache: Option<CachePolicy>,
    ) -> Result<Box<RawValue>, ErrorObject> {
        let unserializable = |e: serde_json::Error| {
            ErrorObject::new(
                code::INTERNAL_ERROR,
                format!("result does not serialize: {e}"),
            )
        };
        if !version.has_result_type() {
            let raw = serde_json::value::to_raw_value(result).map_err(unserializable)?;
            if !raw.get().contains("\"resultType\"") {
                return Ok(raw);
            }
        }
        let mut v = serde_json::to_value(result).map_err(unserializable)?;
        if let Value::Object(m) = &mut v {
            if version.has_result_type() {
                m.entry("resultType").or_insert_with(|| json!("complete"));
                if let Some(c) = cache {
                    m.insert("ttlMs".into(), json!(c.ttl_ms));
                    m.insert("cacheScope".into(), json!(c.scope));
                }
                let meta_value = m.entry("_meta").or_insert_with(|| json!({}));
                if let Value::Object(meta_obj) = meta_value {
                    meta_obj
                        .entry(meta::SERVER_INFO)
                        .or_insert_with(|| json!(self.inner.info));
                }
            } else {
                m.remove("resultType");
            }
        }
        serde_json::value::to_raw_value(&v).map_err(unserializable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_protocol::jsonrpc::{Id, Request};

    fn request(method: &str, params: Value) -> ClientRequest {
        ClientRequest::from_request(&Request {
            id: Id::from(1),
            method: method.to_owned(),
            params: Some(serde_json::value::to_raw_value(&params).unwrap()),
        })
        .unwrap()
    }

    /// A change announced before `resources/subscribe` was handled is not the
    /// session's, even when its task reads the announcement only afterwards (the
    /// race that made an example-server test see an extra update); one announced
    /// after is, until `resources/unsubscribe`.
    #[tokio::test]
    async fn an_update_counts_only_when_announced_after_the_subscription() {
        let uri = "test://counter";
        let server = Server::builder(Implementation::new("t", "1"))
            .resource(
                serde_json::from_value(json!({"uri": uri, "name": "counter"})).unwrap(),
                |_| async { Ok(Vec::new()) },
            )
            .build()
            .unwrap();
        let session = SessionState::new();
        let caps = ClientCapabilities::default();
        let call = |method: &'static str| {
            server.handle(
                &session,
                ProtocolVersion::V2025_11_25,
                &caps,
                request(method, json!({ "uri": uri })),
                testing::RecordingSink::new(),
            )
        };
        let announcer = server.announcer();
        let before = announcer.mark();
        announcer.resource_updated(uri);
        call("resources/subscribe").await.unwrap();
        let after = announcer.mark();
        assert_eq!(after, before + 1);
        assert!(session.is_subscribed(uri));
        assert!(!session.hears_update(uri, before), "announced before");
        assert!(session.hears_update(uri, after), "announced after");
        assert!(!session.hears_update("test://other", after));
        call("resources/unsubscribe").await.unwrap();
        assert!(!session.hears_update(uri, after));
    }
}
