//! What a tool handler may do while it runs: report progress, log, notice
//! cancellation, and ask the client for sampling, elicitation or roots.
//!
//! [`ToolContext`] holds the rules (progress only with a `progressToken` and strictly
//! increasing; log messages only at or above the session's level, or, in 2026-07-28,
//! only when the request set `io.modelcontextprotocol/logLevel`; requests to the client
//! only for capabilities it declared). [`ContextSink`] is the object-safe seam to the
//! peer layer, which moves the notifications and requests: over a legacy session as
//! JSON-RPC notifications and server→client requests, in 2026-07-28 as
//! notifications on the request's own stream and `input_required` round trips.
//!
//! This module must not know about transports, JSON-RPC ids or the pending-request
//! table: the sink is told *what* to send, never how.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use serde::de::DeserializeOwned;
use serde_json::Value;
use switchboard_protocol::types::{
    meta, ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, IncludeContext, ListRootsResult, LoggingLevel, LoggingMessageNotificationParams,
    Meta, ProgressNotificationParams, ProgressToken, ServerNotification, ServerRequest,
};
use switchboard_protocol::ProtocolVersion;

use super::mrtr::Round;
use super::SessionState;

/// A boxed, `Send` future: what handlers and [`ContextSink`] methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why a [`ToolContext`] operation did not happen.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ContextError {
    /// The client did not declare the capability the operation needs (e.g.
    /// `sampling`, `sampling.tools`, `elicitation.form`, `elicitation.url`, `roots`);
    /// refused locally, nothing was sent ("Lifecycle" → "Capability Negotiation").
    #[error("the client did not declare the {capability} capability")]
    CapabilityNotDeclared {
        /// The capability's path, e.g. `"elicitation.url"`.
        capability: &'static str,
    },
    /// The operation does not exist in the session's revision (e.g. elicitation
    /// before 2025-06-18); refused locally.
    #[error("{method} does not exist in protocol revision {version}")]
    NotInRevision {
        /// The method, e.g. `elicitation/create`.
        method: &'static str,
        /// The revision in use.
        version: ProtocolVersion,
    },
    /// `progress` did not strictly increase over the last value sent for this
    /// request ("Progress": the value MUST increase); nothing was sent.
    #[error("progress must strictly increase: {progress} after {last}")]
    ProgressNotIncreasing {
        /// The refused value.
        progress: f64,
        /// The last value sent.
        last: f64,
    },
    /// `progress` or `total` was NaN or infinite (not representable in JSON).
    #[error("progress and total must be finite numbers")]
    ProgressNotFinite,
    /// The request was cancelled while waiting.
    #[error("the request was cancelled")]
    Cancelled,
    /// The client answered the server→client request with a JSON-RPC error.
    #[error("the client answered with error {code}: {message}")]
    Client {
        /// The error's code.
        code: i64,
        /// The error's message.
        message: String,
    },
    /// The client's answer did not decode as the method's result type.
    #[error("the client's answer to {method} does not decode: {reason}")]
    InvalidResult {
        /// The method asked.
        method: &'static str,
        /// serde's reason.
        reason: String,
    },
    /// The connection to the client is gone.
    #[error("the connection to the client is closed")]
    Closed,
    /// Any other failure of the peer layer (e.g. a timeout), as text.
    #[error("{0}")]
    Peer(String),
}

/// The peer layer's side of a request in progress: sends what [`ToolContext`] decided
/// to send, and reports cancellation. One sink per request; object-safe.
///
/// Implementations decide the transport details: which stream a notification travels
/// on, the JSON-RPC id of a server→client request and its timeout, or (2026-07-28)
/// how a request becomes an `input_required` round trip. They must not re-check the
/// rules [`ToolContext`] already applied.
pub trait ContextSink: Send + Sync {
    /// Sends a notification related to this request (`notifications/progress`,
    /// `notifications/message`).
    fn notify(&self, notification: ServerNotification) -> BoxFuture<'_, Result<(), ContextError>>;

    /// Asks the client (`sampling/createMessage`, `elicitation/create`, `roots/list`)
    /// and returns the raw JSON `result` of its answer; a JSON-RPC error answer is
    /// [`ContextError::Client`].
    fn request(&self, request: ServerRequest) -> BoxFuture<'_, Result<Value, ContextError>>;

    /// Whether the client cancelled this request (`notifications/cancelled`, or in
    /// 2026-07-28 HTTP a closed stream).
    fn is_cancelled(&self) -> bool;

    /// Completes when the request is cancelled (never, if it is not).
    fn cancelled(&self) -> BoxFuture<'_, ()>;

    /// Closes the connection carrying this request's reply stream while the
    /// request goes on (2025-11-25 polling, SEP-1699); whether one was closed.
    /// The default does nothing and returns `false` (a transport without
    /// resumable streams).
    fn close_stream(&self) -> bool {
        false
    }
}

/// Which log messages a request may emit.
#[derive(Debug, Clone)]
pub(crate) enum LogGate {
    /// The server did not declare `logging`: never.
    Off,
    /// Legacy: at or above the session's `logging/setLevel` level, read when the
    /// message is logged (all levels until the client sets one).
    Session(SessionState),
    /// 2026-07-28: at or above the request's `_meta` `logLevel`; never without one.
    Request(Option<LoggingLevel>),
}

struct Inner {
    sink: Arc<dyn ContextSink>,
    version: ProtocolVersion,
    client_capabilities: Arc<ClientCapabilities>,
    progress_token: Option<ProgressToken>,
    /// The request's `_meta`, as the client sent it.
    meta: Meta,
    last_progress: Mutex<Option<f64>>,
    log: LogGate,
    /// 2026-07-28 `tools/call` / `prompts/get`: asks become `input_required` rounds.
    round: Option<Arc<Round>>,
    /// Who made the request, when the HTTP server checks tokens.
    principal: Option<super::Principal>,
}

/// The context a tool handler gets with its arguments (cheap to clone; clones share
/// the progress history).
///
/// Every method applies the spec's rules before anything reaches the
/// [`ContextSink`]:
/// - [`progress`](Self::progress): only when the request carried
///   `_meta.progressToken`; values must strictly increase ("Progress").
/// - [`log`](Self::log): only if the server declared `logging`, and then at or above
///   the session's level (legacy; every level until `logging/setLevel`) or the
///   request's `io.modelcontextprotocol/logLevel` (2026-07-28; nothing without it).
/// - [`create_message`](Self::create_message), [`elicit`](Self::elicit),
///   [`list_roots`](Self::list_roots): only for capabilities the client declared
///   (the session's capabilities, or in 2026-07-28 the request's `_meta`).
///
/// **2026-07-28.** A modern request has no server→client requests: for `tools/call`
/// and `prompts/get` the same three asks are served as a multi round-trip request
/// (MRTR, see `server::mrtr`): an ask with an answer in the retried request's
/// `inputResponses` (or the sealed `requestState`) returns it; otherwise the handler
/// is stopped and the request is answered `input_required` with the asks, and the
/// client's retry runs the handler again from the start. So a handler must ask
/// before it does anything it must not repeat. Keys are `input-<n>` (the handler's
/// n-th ask, from 0) unless chosen with the `*_as` variants. An ask for a
/// capability the request did not declare ends the request with -32021
/// (`MissingRequiredClientCapability`); check
/// [`client_capabilities`](Self::client_capabilities) first to skip optional asks.
#[derive(Clone)]
pub struct ToolContext {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("version", &self.inner.version)
            .field("progress_token", &self.inner.progress_token)
            .field("log", &self.inner.log)
            .finish_non_exhaustive()
    }
}

fn decode<T: DeserializeOwned>(method: &'static str, v: Value) -> Result<T, ContextError> {
    serde_json::from_value(v).map_err(|e| ContextError::InvalidResult {
        method,
        reason: e.to_string(),
    })
}

impl ToolContext {
    pub(crate) fn new(
        sink: Arc<dyn ContextSink>,
        version: ProtocolVersion,
        client_capabilities: Arc<ClientCapabilities>,
        meta: Meta,
        log: LogGate,
        round: Option<Arc<Round>>,
        principal: Option<super::Principal>,
    ) -> Self {
        ToolContext {
            inner: Arc::new(Inner {
                sink,
                version,
                client_capabilities,
                progress_token: meta::progress_token(&meta),
                meta,
                last_progress: Mutex::new(None),
                log,
                round,
                principal,
            }),
        }
    }

    /// Sends `request` to the client: a server→client request (legacy), or an MRTR
    /// ask under `key` (2026-07-28).
    async fn ask(
        &self,
        key: Option<String>,
        request: ServerRequest,
    ) -> Result<Value, ContextError> {
        match &self.inner.round {
            Some(round) => round.ask(key, request).await,
            None => self.inner.sink.request(request).await,
        }
    }

    /// Who made the request, as its access token says (subject, client id,
    /// scopes), when the HTTP server checks tokens
    /// (`HttpServerConfig::auth`); `None` otherwise (stdio, or no
    /// authorization).
    pub fn principal(&self) -> Option<&super::Principal> {
        self.inner.principal.as_ref()
    }

    /// The revision the request is served under.
    pub fn version(&self) -> ProtocolVersion {
        self.inner.version
    }

    /// What the client declared (session or request capabilities).
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.inner.client_capabilities
    }

    /// The request's `_meta.progressToken`, if it asked for progress.
    pub fn progress_token(&self) -> Option<&ProgressToken> {
        self.inner.progress_token.as_ref()
    }

    /// The request's `params._meta` as the client sent it (every revision,
    /// "Basic → `_meta`"): the progress token, and whatever else the client put
    /// there, such as trace context (`traceparent`) or keys of its own; in
    /// 2026-07-28 also the `io.modelcontextprotocol/*` keys of the request.
    /// Empty when the request had none.
    pub fn meta(&self) -> &Meta {
        &self.inner.meta
    }

    /// Reports progress (`notifications/progress{progressToken, progress, total?,
    /// message?}`; unitless numbers, may be fractional; `message` is dropped before
    /// 2025-03-26, which lacks it).
    ///
    /// `Ok(false)`: the request carried no progress token, nothing sent. `Ok(true)`:
    /// handed to the sink. Errors: [`ContextError::ProgressNotIncreasing`] when
    /// `progress` is not above the last value sent for this request,
    /// [`ContextError::ProgressNotFinite`], or the sink's error.
    pub async fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> Result<bool, ContextError> {
        let Some(token) = self.inner.progress_token.clone() else {
            return Ok(false);
        };
        if !progress.is_finite() || total.is_some_and(|t| !t.is_finite()) {
            return Err(ContextError::ProgressNotFinite);
        }
        {
            let mut last = self
                .inner
                .last_progress
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if let Some(l) = *last {
                if progress <= l {
                    return Err(ContextError::ProgressNotIncreasing { progress, last: l });
                }
            }
            *last = Some(progress);
        }
        let mut params = ProgressNotificationParams::new(token, progress)
            .ok_or(ContextError::ProgressNotFinite)?;
        if let Some(t) = total {
            params = params.with_total(t);
        }
        if self.inner.version >= ProtocolVersion::V2025_03_26 {
            params.message = message;
        }
        self.inner
            .sink
            .notify(ServerNotification::Progress(Box::new(params)))
            .await?;
        Ok(true)
    }

    /// Whether a log message at `level` would be sent now (see the type's rules).
    pub fn wants_log(&self, level: LoggingLevel) -> bool {
        match &self.inner.log {
            LogGate::Off => false,
            LogGate::Session(s) => s.log_level().is_none_or(|min| level >= min),
            LogGate::Request(min) => min.is_some_and(|min| level >= min),
        }
    }

    /// Logs `data` (any JSON) at `level` as `notifications/message{level, data}`.
    ///
    /// `Ok(false)`: filtered out (see the type's rules), nothing sent; `Ok(true)`:
    /// handed to the sink. Errors: the sink's.
    pub async fn log(&self, level: LoggingLevel, data: Value) -> Result<bool, ContextError> {
        if !self.wants_log(level) {
            return Ok(false);
        }
        let params = LoggingMessageNotificationParams {
            level,
            logger: None,
            data,
            meta: None,
            extra: Default::default(),
        };
        self.inner
            .sink
            .notify(ServerNotification::LoggingMessage(Box::new(params)))
            .await?;
        Ok(true)
    }

    /// Whether the client cancelled the request. A handler that sees `true` should
    /// stop; its result will not be sent ("Cancellation").
    ///
    /// When the handler gets to see it depends on how the request is served: in a
    /// session ([`Server::serve`](super::Server::serve): stdio, a Streamable HTTP
    /// session) the handler's future is dropped as soon as the cancellation
    /// arrives (or the connection ends: at once for an HTTP session, after
    /// [`ServeOptions::drain_on_close`](super::ServeOptions::drain_on_close) when
    /// only a stdio server's input ended) and is not polled again, so cleanup
    /// belongs in a `Drop` guard (which can read this flag); in a stateless
    /// 2026-07-28 HTTP exchange it runs on for up to
    /// [`CANCEL_GRACE`](super::CANCEL_GRACE) to notice.
    pub fn is_cancelled(&self) -> bool {
        self.inner.sink.is_cancelled()
    }

    /// Completes when the client cancels the request (for `tokio::select!`).
    /// In a session the handler is dropped at that moment, so code after this
    /// completes runs only in a stateless 2026-07-28 exchange (see
    /// [`is_cancelled`](Self::is_cancelled)).
    pub async fn cancelled(&self) {
        self.inner.sink.cancelled().await
    }

    /// Closes the HTTP connection that carries this request's SSE reply while
    /// the handler goes on: the "polling" of MCP 2025-11-25 ("Transports →
    /// Streamable HTTP", SEP-1699), for a long call behind proxies that cut
    /// long-lived connections. Progress, logs and the result sent afterwards
    /// wait in the stream's replay buffer until the client reconnects with GET
    /// and `Last-Event-ID` (configure `HttpServerConfig::sse_retry` to tell it
    /// when). Returns whether a connection was closed: `false`, and nothing
    /// done, over stdio, for a JSON reply, for a 2026-07-28 request (closing its
    /// stream would cancel it), for a client that has not shown it speaks
    /// 2025-11-25 (it has no event id to come back with), or when the client is
    /// already away.
    pub fn close_sse_stream(&self) -> bool {
        self.inner.sink.close_stream()
    }

    /// Asks the client to sample from its LLM (`sampling/createMessage`, "Sampling").
    ///
    /// Refused locally with [`ContextError::CapabilityNotDeclared`] when the client
    /// did not declare `sampling`, or `sampling.tools` while `tools`/`toolChoice` is
    /// set (2025-11-25), or `sampling.context` while `includeContext` is
    /// `thisServer`/`allServers` (2025-11-25; earlier revisions have no such
    /// sub-capability and are not checked for it).
    pub async fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ContextError> {
        self.create_message_keyed(None, params).await
    }

    /// [`create_message`](Self::create_message) whose 2026-07-28 `inputRequests` key
    /// is `key` (legacy sessions ignore it).
    pub async fn create_message_as(
        &self,
        key: impl Into<String>,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ContextError> {
        self.create_message_keyed(Some(key.into()), params).await
    }

    async fn create_message_keyed(
        &self,
        key: Option<String>,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ContextError> {
        if self.inner.round.is_some() {
            let v = self
                .ask(key, ServerRequest::CreateMessage(Box::new(params)))
                .await?;
            return decode("sampling/createMessage", v);
        }
        let caps = &self.inner.client_capabilities;
        if !caps.supports_sampling() {
            return Err(ContextError::CapabilityNotDeclared {
                capability: "sampling",
            });
        }
        if (params.tools.is_some() || params.tool_choice.is_some())
            && !caps.supports_sampling_tools()
        {
            return Err(ContextError::CapabilityNotDeclared {
                capability: "sampling.tools",
            });
        }
        let wants_context = matches!(
            params.include_context,
            Some(IncludeContext::ThisServer | IncludeContext::AllServers)
        );
        if wants_context
            && self.inner.version >= ProtocolVersion::V2025_11_25
            && !caps.supports_sampling_context()
        {
            return Err(ContextError::CapabilityNotDeclared {
                capability: "sampling.context",
            });
        }
        let v = self
            .ask(key, ServerRequest::CreateMessage(Box::new(params)))
            .await?;
        decode("sampling/createMessage", v)
    }

    /// Asks the user for input through the client (`elicitation/create`,
    /// "Elicitation"; 2025-06-18+).
    ///
    /// Refused locally: before 2025-06-18 ([`ContextError::NotInRevision`]); URL mode
    /// before 2025-11-25; without `elicitation` (any mode), `elicitation.form` (form
    /// mode; `{}` counts as form) or `elicitation.url` (URL mode) declared
    /// ([`ContextError::CapabilityNotDeclared`]).
    pub async fn elicit(&self, params: ElicitRequestParams) -> Result<ElicitResult, ContextError> {
        self.elicit_keyed(None, params).await
    }

    /// [`elicit`](Self::elicit) whose 2026-07-28 `inputRequests` key is `key`
    /// (legacy sessions ignore it).
    pub async fn elicit_as(
        &self,
        key: impl Into<String>,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, ContextError> {
        self.elicit_keyed(Some(key.into()), params).await
    }

    async fn elicit_keyed(
        &self,
        key: Option<String>,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, ContextError> {
        const METHOD: &str = "elicitation/create";
        if self.inner.round.is_some() {
            let v = self
                .ask(key, ServerRequest::Elicit(Box::new(params)))
                .await?;
            return decode(METHOD, v);
        }
        let version = self.inner.version;
        if version < ProtocolVersion::V2025_06_18
            || (params.is_url() && version < ProtocolVersion::V2025_11_25)
        {
            return Err(ContextError::NotInRevision {
                method: METHOD,
                version,
            });
        }
        let caps = &self.inner.client_capabilities;
        let (ok, capability) = match &params {
            ElicitRequestParams::Form(_) => (caps.supports_elicitation_form(), "elicitation.form"),
            ElicitRequestParams::Url(_) => (caps.supports_elicitation_url(), "elicitation.url"),
            ElicitRequestParams::Other(_) => (caps.supports_elicitation(), "elicitation"),
        };
        if !ok {
            return Err(ContextError::CapabilityNotDeclared { capability });
        }
        let v = self
            .ask(key, ServerRequest::Elicit(Box::new(params)))
            .await?;
        decode(METHOD, v)
    }

    /// Asks the client for its roots (`roots/list`, "Roots"). Refused locally with
    /// [`ContextError::CapabilityNotDeclared`] when the client did not declare `roots`.
    pub async fn list_roots(&self) -> Result<ListRootsResult, ContextError> {
        self.list_roots_keyed(None).await
    }

    /// [`list_roots`](Self::list_roots) whose 2026-07-28 `inputRequests` key is
    /// `key` (legacy sessions ignore it).
    pub async fn list_roots_as(
        &self,
        key: impl Into<String>,
    ) -> Result<ListRootsResult, ContextError> {
        self.list_roots_keyed(Some(key.into())).await
    }

    async fn list_roots_keyed(&self, key: Option<String>) -> Result<ListRootsResult, ContextError> {
        if self.inner.round.is_none() && !self.inner.client_capabilities.supports_roots() {
            return Err(ContextError::CapabilityNotDeclared {
                capability: "roots",
            });
        }
        let v = self.ask(key, ServerRequest::ListRoots(None)).await?;
        decode("roots/list", v)
    }
}
