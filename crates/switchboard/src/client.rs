//! The MCP client: [`Client::connect`] opens a session over any transport (the
//! legacy handshake first by default, see "Eras" below), [`Client::connect_url`] over
//! HTTP whatever the server's era, [`Client::spawn`] with a stdio server it starts; then it offers typed calls for every client→server method and answers the server's
//! requests (sampling, elicitation, roots) with the handlers set in [`ClientOptions`].
//!
//! ```text
//! Client::connect(transport, options)
//!   --> initialize{protocolVersion: newest legacy in options.supported, capabilities, clientInfo}
//!   <-- result{protocolVersion, capabilities, serverInfo, instructions?}
//!       accepted if that version is in options.supported, else Err and disconnect
//!   --> notifications/initialized
//! ```
//!
//! Rules kept here (spec notes §3, §4, §7):
//! - the client's capabilities are derived from which handlers are set: `sampling{}`
//!   with a sampling handler, `elicitation{}` (form; `{form, url}` with
//!   `elicitation_url`) with an elicitation handler, `roots{}` with a roots
//!   handler; nothing is declared that cannot be answered;
//! - every request goes through the lifecycle's `check_send_request` first: a method
//!   whose server capability was not declared fails locally
//!   ([`Error::is_local_refusal`]) and nothing is sent;
//! - server→client requests go through the lifecycle's `recv_request`: an undeclared
//!   capability (no handler) is answered -32601;
//! - a tool's own failure (`isError: true`) is an `Ok(CallToolResult)`; a
//!   JSON-RPC error is an `Err`, and so is a successful result whose
//!   `structuredContent` breaks the `outputSchema` of the session's last
//!   `tools/list` (2025-06-18+: clients SHOULD validate; schemas kept per session,
//!   forgotten on `notifications/tools/list_changed` and when the transport
//!   replaces a lost Streamable HTTP session, unused once a 2026-07-28 list's
//!   `ttlMs` has run out; see [`Client::call_tool_with`]);
//! - when the Streamable HTTP transport replaces a lost session (404, then the
//!   replayed `initialize`), the new session's `initialize` result is taken in
//!   through the lifecycle before the next request or accessor: its version,
//!   capabilities, `serverInfo` and `instructions` replace the old session's
//!   (a version this client cannot speak ends the session);
//! - listings follow `nextCursor` until it is absent, at most
//!   [`ClientOptions::max_list_pages`] pages ([`Error::is_limit`] beyond).
//!
//! **Eras.** A client runs in one of two eras, chosen at connect time:
//! - *legacy* (2024-11-05 to 2025-11-25): the handshake above, then the lifecycle's
//!   checks on every message;
//! - *modern* (2026-07-28): no handshake; `server/discover` tells the server's
//!   versions and capabilities, every request carries `_meta`
//!   (`io.modelcontextprotocol/protocolVersion`, `clientCapabilities`, `clientInfo`,
//!   and `logLevel` once [`Client::set_level`] was called), and an `input_required`
//!   result is answered with the same sampling / elicitation / roots handlers and
//!   retried with `inputResponses` + `requestState` (MRTR, spec notes §5.5), at most
//!   [`ClientOptions::max_input_rounds`] rounds. A -32022 answer naming a version we
//!   share switches to it and retries once.
//!
//! Which one: [`Client::connect`] follows [`ClientOptions::era`], by default
//! [`EraPolicy::LegacyFirst`]: `initialize`, and only when the server answers it
//! with a JSON-RPC error (as a 2026-07-28-only server does, spec notes §6
//! "Modern-only server vs legacy clients") a `server/discover` probe, so a legacy
//! server costs no extra round trip and a modern-only one still connects;
//! [`EraPolicy::Auto`] probes with `server/discover` first (spec notes §6, "stdio
//! client": a result or a recognised modern error means modern, any other error
//! or a timeout means legacy); [`Client::connect_url`] runs the HTTP rules of §6
//! and remembers the outcome per origin (see [`http`]).
//!
//! ```text
//! EraPolicy::LegacyFirst (the default of Client::connect and Client::spawn)
//!   --> initialize
//!   <-- result                -> legacy (as above), nothing else sent
//!   <-- JSON-RPC error        -> --> server/discover (the probe of Auto: -32022
//!                                    naming a shared 2026-07-28 revision retried once)
//!                                --> ping (right behind it)
//!                                <-- DiscoverResult -> modern
//!                                <-- ping result first -> Err (a legacy server
//!                                    that leaves unknown methods unanswered: no
//!                                    wait for the probe timeout)
//!                                <-- anything else  -> Err(the initialize error,
//!                                                      the probe's failure noted)
//!   timeout, closed transport, refused answer -> Err, no probe
//! ```
//!
//! Typed calls in the modern era: `ping` (removed in 2026-07-28) sends
//! `server/discover`, the one request every modern server MUST answer;
//! `logging/setLevel` (removed) sets the `logLevel` sent in every later request's
//! `_meta`; [`Client::subscribe`] opens a `subscriptions/listen` stream for the URI
//! and returns once the server acknowledged it, and [`Client::unsubscribe`] closes
//! it (cancellation: `notifications/cancelled` on stdio, closing the stream over
//! HTTP).
//!
//! [`Client::spawn`] (submodule `stdio`) starts a stdio server and keeps its
//! transport handle, so that [`Client::close`] ends it in the spec's order.
//!
//! This module must not know about bytes, framing or how processes are run (the
//! transport) nor about ids, deadlines and routing (the peer).

mod modern;
mod stdio;

pub mod http;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use switchboard_protocol::jsonrpc::{code, ErrorObject, Id, Notification, Request, Response};
use switchboard_protocol::lifecycle::handshake::{
    self, Answer, Ask, Connected, Handshake, HandshakeConfig, Next, Outgoing, Policy, Reason, Token,
};
use switchboard_protocol::lifecycle::{ClientLifecycle, LegacySession, LifecycleError};
use switchboard_protocol::types::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, CompleteRequestParams,
    CompleteResult, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationCapability, EmptyCapability, GetPromptRequestParams, GetPromptResult,
    Implementation, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListRootsResult, ListToolsResult, LoggingLevel, PaginatedRequestParams, Prompt,
    ReadResourceRequestParams, ReadResourceResult, Resource, ResourceTemplate, RootsCapability,
    SamplingCapability, ServerCapabilities, ServerNotification, ServerRequest,
    SetLevelRequestParams, SubscribeRequestParams, Tool, UnsubscribeRequestParams,
};
use switchboard_protocol::types::{
    DiscoverResult, SubscriptionFilter, SubscriptionsListenRequestParams, INITIALIZE,
    NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED, NOTIFICATION_TOOLS_LIST_CHANGED, PING,
    SERVER_DISCOVER, SUBSCRIPTIONS_LISTEN,
};
use switchboard_protocol::version::Era;
use switchboard_protocol::version::Supported;
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::http::client::HttpClientHandle;
use switchboard_transport::Transport;
use tokio::sync::oneshot;

use crate::error::Error;
use crate::peer::{
    self, method_not_found, CancelToken, Handler, HandlerContext, HandlerFuture, Peer, PeerConfig,
    RequestOptions,
};
use modern::{ModernState, Outcome};

pub use self::http::{connect_url_cache_clear, HttpClientConfig};
/// MCP authorization's OAuth 2.1 client, for [`HttpClientConfig::auth`]: a 401
/// or 403 `insufficient_scope` from the server runs discovery, registration and
/// the grant, then the request goes again with the token (the transport's
/// `http::auth`).
pub use switchboard_transport::http::auth;

/// Options of one call: timeout, progress callback, cancellation, members of the
/// caller's own for `params._meta` ([`RequestOptions::meta`]: merged with the
/// library's `progressToken` and, in 2026-07-28, its `io.modelcontextprotocol/*`
/// members; reserved keys and `progressToken` refused). The peer's
/// [`RequestOptions`].
pub type CallOptions = RequestOptions;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Answers `sampling/createMessage` (spec §7 "Sampling"). An `Err` is sent as the
/// JSON-RPC error.
pub type SamplingHandler = Arc<
    dyn Fn(
            CreateMessageRequestParams,
            HandlerContext,
        ) -> BoxFuture<Result<CreateMessageResult, ErrorObject>>
        + Send
        + Sync,
>;

/// Answers `elicitation/create` (spec §7 "Elicitation", 2025-06-18+).
pub type ElicitationHandler = Arc<
    dyn Fn(ElicitRequestParams, HandlerContext) -> BoxFuture<Result<ElicitResult, ErrorObject>>
        + Send
        + Sync,
>;

/// Answers `roots/list` (spec §7 "Roots").
pub type RootsHandler =
    Arc<dyn Fn(HandlerContext) -> BoxFuture<Result<ListRootsResult, ErrorObject>> + Send + Sync>;

/// Receives the server's notifications other than progress and cancellation
/// (`notifications/tools/list_changed`, `notifications/resources/updated`,
/// `notifications/message`, ...), on the driver task: return quickly.
pub type NotificationCallback = Arc<dyn Fn(ServerNotification) + Send + Sync>;

/// How a [`Client`] connects and behaves. Every field documents its default.
#[derive(Clone)]
pub struct ClientOptions {
    /// Our `clientInfo`.
    pub client_info: Implementation,
    /// The revisions we speak. Default: all; `initialize` offers the newest legacy
    /// one, and the server's answer is accepted when it is a legacy revision in here.
    pub supported: Supported,
    /// The timeout of a call that sets none. Default 60 s.
    pub default_timeout: Duration,
    /// The hard maximum of any call, progress included. Default 10 min.
    pub max_timeout: Duration,
    /// The most calls awaiting an answer at once. Default 1024.
    pub max_pending: usize,
    /// The most server requests handled at once. Default 16.
    pub max_concurrent_handlers: usize,
    /// The most pages one listing follows. Default 100.
    pub max_list_pages: usize,
    /// Answers `sampling/createMessage`; declares `sampling{}`. Default none.
    pub sampling: Option<SamplingHandler>,
    /// Answers `elicitation/create`; declares `elicitation{}` (form). Default none.
    pub elicitation: Option<ElicitationHandler>,
    /// With an elicitation handler, also declare URL mode: `elicitation:
    /// {form: {}, url: {}}` (2025-11-25+ "Elicitation"); the handler then
    /// gets [`ElicitRequestParams::Url`] requests too. Default `false`.
    pub elicitation_url: bool,
    /// Answers `roots/list`; declares `roots{}`. Default none.
    pub roots: Option<RootsHandler>,
    /// Receives the server's notifications. Default none (dropped). Over legacy
    /// Streamable HTTP, those not related to a call (list changes, resource
    /// updates) come on the standalone GET stream only: set
    /// `HttpClientConfig::standalone_stream` to hear list changes
    /// ([`Client::subscribe`] opens the stream itself).
    pub on_notification: Option<NotificationCallback>,
    /// Which era the client speaks, and how it finds out (spec notes §6). Default
    /// `None`: [`EraPolicy::LegacyFirst`] for [`Client::connect`] and
    /// [`Client::spawn`] (`initialize` first, `server/discover` only after an
    /// error answer), [`EraPolicy::Auto`] for [`Client::connect_url`] and
    /// [`Client::connect_http`].
    pub era: Option<EraPolicy>,
    /// How long the `server/discover` probe of [`EraPolicy::Auto`] waits before
    /// deciding the server is legacy (spec notes §6: a timeout means legacy), and
    /// the one of [`EraPolicy::LegacyFirst`] before giving up with the
    /// `initialize` error. Default 10 s.
    pub probe_timeout: Duration,
    /// The most `input_required` rounds one 2026-07-28 call may take before it
    /// fails with [`Error::is_limit`]. Default 8.
    pub max_input_rounds: usize,
    /// Check each successful `tools/call` result's `structuredContent` against the
    /// tool's `outputSchema` (MCP 2025-06-18+ "Tools → Output Schema": clients
    /// SHOULD validate), for the tools whose schema this session's last
    /// `tools/list` gave (within its 2026-07-28 `ttlMs`); see
    /// [`Client::call_tool_with`]. Default `true`; `false` takes results as the
    /// server sent them (and keeps no schemas).
    pub validate_structured_content: bool,
}

/// Which era a client speaks, and how it finds out (spec notes §1, §3, §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EraPolicy {
    /// Probe with `server/discover` at the newest modern revision in
    /// [`ClientOptions::supported`]; fall back to `initialize` by the rules of §6
    /// (a `DiscoverResult` or a recognised 2026-07-28 error means modern; any
    /// other error, or no answer within [`ClientOptions::probe_timeout`], means
    /// legacy). One extra round trip (or the probe's timeout) before a legacy
    /// server's `initialize`.
    Auto,
    /// `initialize` only (2024-11-05 to 2025-11-25); a 2026-07-28-only server is
    /// an error (its answer to `initialize`).
    Legacy,
    /// `initialize` first, as [`Legacy`](Self::Legacy); when the server answers it
    /// with a JSON-RPC error ([`Error::is_protocol`]; not a timeout, a closed
    /// transport or an answer the lifecycle refuses), which is how a
    /// 2026-07-28-only server answers a stdio `initialize` (spec notes §6,
    /// "Modern-only server vs legacy clients": an implementation-defined code),
    /// the `server/discover` probe of [`Auto`](Self::Auto) follows (its -32022
    /// retry included, bounded by [`ClientOptions::probe_timeout`]), with a
    /// `ping` right behind it, and a `DiscoverResult` connects in 2026-07-28.
    /// Otherwise the result is the `initialize` error, whose `Display` ends with
    /// the probe's failure; a `ping` result that comes before any answer to the
    /// probe ends the wait at once (a legacy server that leaves unknown methods
    /// unanswered would otherwise cost the whole probe timeout). A
    /// legacy server costs exactly the `initialize` round trip; a modern-only
    /// one, two. The default of [`Client::connect`] and [`Client::spawn`].
    /// No probe when [`ClientOptions::supported`] has no 2026-07-28 revision.
    /// [`Client::connect_url`] reads it as [`Auto`](Self::Auto): the HTTP
    /// rules of §6, whose outcome it remembers per origin.
    LegacyFirst,
    /// `server/discover` only (2026-07-28); a legacy server is an error.
    Modern,
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientOptions")
            .field("client_info", &self.client_info)
            .field("supported", &self.supported)
            .field("default_timeout", &self.default_timeout)
            .field("max_timeout", &self.max_timeout)
            .field("max_pending", &self.max_pending)
            .field("max_concurrent_handlers", &self.max_concurrent_handlers)
            .field("max_list_pages", &self.max_list_pages)
            .field("elicitation_url", &self.elicitation_url)
            .field("era", &self.era)
            .field("probe_timeout", &self.probe_timeout)
            .field("max_input_rounds", &self.max_input_rounds)
            .field(
                "validate_structured_content",
                &self.validate_structured_content,
            )
            .field("capabilities", &self.capabilities())
            .finish()
    }
}

impl ClientOptions {
    /// Defaults, as `client_info`.
    pub fn new(client_info: Implementation) -> Self {
        ClientOptions {
            client_info,
            supported: Supported::default(),
            default_timeout: Duration::from_secs(60),
            max_timeout: Duration::from_secs(600),
            max_pending: 1024,
            max_concurrent_handlers: 16,
            max_list_pages: 100,
            sampling: None,
            elicitation: None,
            elicitation_url: false,
            roots: None,
            on_notification: None,
            era: None,
            probe_timeout: Duration::from_secs(10),
            max_input_rounds: 8,
            validate_structured_content: true,
        }
    }

    /// Sets [`era`](Self::era).
    pub fn with_era(mut self, era: EraPolicy) -> Self {
        self.era = Some(era);
        self
    }

    /// Sets the sampling handler.
    pub fn with_sampling<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(CreateMessageRequestParams, HandlerContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, ErrorObject>> + Send + 'static,
    {
        self.sampling = Some(Arc::new(move |p, cx| Box::pin(f(p, cx))));
        self
    }

    /// Sets the elicitation handler.
    pub fn with_elicitation<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(ElicitRequestParams, HandlerContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, ErrorObject>> + Send + 'static,
    {
        self.elicitation = Some(Arc::new(move |p, cx| Box::pin(f(p, cx))));
        self
    }

    /// Sets the roots handler.
    pub fn with_roots<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(HandlerContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ListRootsResult, ErrorObject>> + Send + 'static,
    {
        self.roots = Some(Arc::new(move |cx| Box::pin(f(cx))));
        self
    }

    /// Sets the notification callback.
    pub fn with_notifications(
        mut self,
        f: impl Fn(ServerNotification) + Send + Sync + 'static,
    ) -> Self {
        self.on_notification = Some(Arc::new(f));
        self
    }

    /// The capabilities `initialize` declares, derived from the handlers set.
    pub fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            sampling: self
                .sampling
                .as_ref()
                .map(|_| SamplingCapability::default()),
            elicitation: self.elicitation.as_ref().map(|_| ElicitationCapability {
                form: self.elicitation_url.then(EmptyCapability::default),
                url: self.elicitation_url.then(EmptyCapability::default),
                ..Default::default()
            }),
            roots: self.roots.as_ref().map(|_| RootsCapability::default()),
            ..Default::default()
        }
    }
}

/// What the connected session is: a legacy session (after `initialize`) or a
/// modern one (after `server/discover`).
enum EraState {
    Legacy {
        lifecycle: Arc<Mutex<ClientLifecycle>>,
        session: Mutex<LegacyCurrent>,
    },
    Modern(Box<ModernState>),
}

/// What a legacy session negotiated, as far as the client has taken it in:
/// the `initialize` answer, or the one of the session the HTTP transport
/// started after a 404 ([`HttpClientHandle::replaced_session_result`]).
struct LegacyCurrent {
    session: Arc<LegacySession>,
    /// The transport's [`HttpClientHandle::sessions_replaced`] count this
    /// session is from (0: the first).
    replacement: u64,
    /// Why the session is over when a replacement's answer was refused (a
    /// version this client cannot speak, a result that does not decode).
    refused: Option<String>,
}

/// A connected MCP client. Cloneable (clones share the session). Dropping the last
/// clone closes our side of the transport (see [`crate::peer`]).
#[derive(Clone)]
pub struct Client {
    peer: Peer,
    era: Arc<EraState>,
    handler: Arc<ClientHandler>,
    http: Option<HttpClientHandle>,
    max_list_pages: usize,
    /// Open `subscriptions/listen` streams (modern `subscribe`), by URI.
    listens: Arc<Mutex<HashMap<String, (u64, CancelToken)>>>,
    /// Becomes `true` when the peer's driver has ended (the transport closed).
    ended: tokio::sync::watch::Receiver<bool>,
    /// The server child started by [`Client::spawn`], shut down by `close`.
    child: Option<stdio::OwnedChild>,
}

/// Tells listen streams apart (a later subscribe to the same URI replaces one).
static LISTEN_SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server_info", &self.server_info())
            .field("protocol_version", &self.protocol_version())
            .field("era", &self.era())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn to_params<P: Serialize>(p: &P) -> Result<Option<Box<RawValue>>, Error> {
    serde_json::value::to_raw_value(p)
        .map(Some)
        .map_err(Error::encode)
}

/// A client whose peer runs but whose era is not chosen yet.
struct Started {
    peer: Peer,
    handler: Arc<ClientHandler>,
    lifecycle: Arc<Mutex<ClientLifecycle>>,
    options: ClientOptions,
    http: Option<HttpClientHandle>,
    ended: tokio::sync::watch::Receiver<bool>,
}

/// What the `server/discover` probe of [`Started::probe`] found (spec notes §6).
pub(super) enum Probe {
    /// A modern server, at this version.
    Modern(ProtocolVersion, Box<DiscoverResult>),
    /// Not a modern server (any other error, or a timeout): use `initialize`.
    Legacy(Error),
}

/// The era the handshake found: the legacy session (its `initialize` answer
/// accepted by the lifecycle) or the modern server's discover result.
enum Found {
    Legacy(Box<LegacySession>),
    Modern(ProtocolVersion, Box<DiscoverResult>),
}

/// The JSON-RPC error codes that only a 2026-07-28 server sends (spec notes §2):
/// -32022 `UnsupportedProtocolVersion` with `data.supported`, its list.
fn modern_error_supported(e: &Error) -> Option<Vec<String>> {
    handshake::unsupported_version_list(e.error_object()?)
}

/// How a request of the handshake ended, for the machine: an error answer is
/// the server's (`is_protocol`); a transport failure, a refused or mistyped
/// answer is a failure; the machine never sees the library's `Error`.
fn answer_of(outcome: &Result<Box<RawValue>, Error>) -> Answer {
    match outcome {
        Ok(raw) => Answer::Result(raw.clone()),
        Err(e) if e.is_protocol() => match e.error_object() {
            Some(o) => Answer::Error(o.clone()),
            None => Answer::Failed,
        },
        Err(e) if e.is_timeout() => Answer::TimedOut,
        Err(e) if e.is_closed() => Answer::Closed,
        Err(_) => Answer::Failed,
    }
}

/// One request of the handshake in flight.
type Asked<'a> = Pin<Box<dyn Future<Output = Result<Box<RawValue>, Error>> + Send + 'a>>;

impl Started {
    fn new(transport: Transport, options: ClientOptions, http: Option<HttpClientHandle>) -> Self {
        let lifecycle = Arc::new(Mutex::new(ClientLifecycle::new(
            options.supported.clone(),
            options.capabilities(),
            options.client_info.clone(),
        )));
        let handler = Arc::new(ClientHandler {
            lifecycle: lifecycle.clone(),
            options: options.clone(),
            modern: AtomicBool::new(false),
            acks: Mutex::new(HashMap::new()),
            output_schemas: Mutex::new(OutputSchemas::default()),
        });
        let config = PeerConfig {
            name: options.client_info.name.clone(),
            default_timeout: options.default_timeout,
            max_timeout: options.max_timeout,
            max_pending: options.max_pending,
            max_concurrent_handlers: options.max_concurrent_handlers,
            // A server that closed our input has normally ended: the client's
            // handlers (sampling, elicitation, roots) are cancelled at once.
            drain_on_close: Duration::ZERO,
        };
        let (peer, driver) = peer::connect(transport, config, handler.clone());
        let (ended_tx, ended) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            driver.run().await;
            let _ = ended_tx.send(true);
        });
        Started {
            peer,
            handler,
            lifecycle,
            options,
            http,
            ended,
        }
    }

    fn client(self, era: EraState) -> Client {
        Client {
            peer: self.peer,
            era: Arc::new(era),
            handler: self.handler,
            http: self.http,
            max_list_pages: self.options.max_list_pages,
            listens: Arc::new(Mutex::new(HashMap::new())),
            ended: self.ended,
            child: None,
        }
    }

    fn set_http_version(&self, v: Option<ProtocolVersion>) {
        if let Some(h) = &self.http {
            h.set_protocol_version(v);
        }
    }

    /// The legacy handshake only (spec §3). On error `self` is dropped, which
    /// closes our side of the transport (the spec's "SHOULD disconnect").
    pub(super) async fn legacy(self) -> Result<Client, Error> {
        self.run(EraPolicy::Legacy).await
    }

    /// Runs the era handshake (`lifecycle::handshake`) by `policy` over the
    /// peer: each [`Ask`] becomes a request bounded by its wait (never
    /// cancelled: a server that does not know the method must not get a stray
    /// cancellation), each outcome goes back to the machine. `initialize` goes
    /// through the lifecycle (its params, its check of the answer: a refused
    /// answer is a failure, never followed by a probe). `answer_wait` bounds
    /// `initialize` and `ModernOnly`'s `server/discover`. Leaves the
    /// transport open whatever happens; the requests still open when it
    /// returns are forgotten. Errors: the failure's own (the library's
    /// `Error` of the request that failed), with the probe's failure as a
    /// note; `bool`: [`Failure::legacy_possible`].
    async fn handshake(
        &self,
        policy: Policy,
        answer_wait: Duration,
    ) -> Result<Found, (Error, bool)> {
        let mut machine = Handshake::new(HandshakeConfig {
            policy,
            supported: self.options.supported.clone(),
            client_capabilities: self.options.capabilities(),
            client_info: self.options.client_info.clone(),
            probe_wait: self.options.probe_timeout,
            answer_wait,
        });
        let init_id: Mutex<Option<Id>> = Mutex::new(None);
        let mut open: Vec<(Token, Asked<'_>)> = Vec::new();
        let mut errors: HashMap<Token, Error> = HashMap::new();
        let mut next = machine.start();
        loop {
            match next {
                Next::Send(out) => {
                    for o in out {
                        tracing::debug!(method = o.ask.method(), wait = ?o.wait, "handshake: asking");
                        open.push((o.token, self.ask(o, &init_id)));
                    }
                }
                Next::Wait => {}
                Next::Connected(Connected::Legacy(result)) => {
                    let id = lock(&init_id)
                        .clone()
                        .expect("set before initialize is sent");
                    let mut lc = lock(&self.lifecycle);
                    lc.recv_response(&Response { id, result })
                        .map_err(|e| (Error::refused_answer(e).with_method("initialize"), false))?;
                    let session = lc
                        .session()
                        .cloned()
                        .expect("an accepted answer gives a session");
                    return Ok(Found::Legacy(Box::new(session)));
                }
                Next::Connected(Connected::Modern { version, discover }) => {
                    return Ok(Found::Modern(version, discover));
                }
                Next::Failed(f) => {
                    let mut take = |r: Reason| match r {
                        Reason::Ask(t) => errors
                            .remove(&t)
                            .unwrap_or_else(|| Error::closed("the handshake ended")),
                        Reason::NoModernRevision => Error::lifecycle(LifecycleError::Config(
                            "no 2026-07-28 revision in ClientOptions::supported",
                        )),
                        Reason::NoSharedRevision(_) => Error::lifecycle(LifecycleError::Config(
                            "server/discover names no 2026-07-28 revision we speak",
                        )),
                        Reason::InvalidDiscover(e) => Error::decode(e).with_method(SERVER_DISCOVER),
                        r @ Reason::PingAnswered => Error::closed(r.text().unwrap_or_default()),
                    };
                    let mut error = take(f.reason);
                    if let Some(probe) = f.probe {
                        let why = match probe.text() {
                            Some(text) if matches!(probe, Reason::PingAnswered) => text,
                            _ => take(probe).to_string(),
                        };
                        error = error.with_note(handshake::probe_note(&why));
                    }
                    return Err((error, f.legacy_possible));
                }
            }
            // The first request done, in the order they were sent
            // (`server/discover` before the `ping` behind it).
            let (token, outcome) = std::future::poll_fn(|cx| {
                for i in 0..open.len() {
                    if let std::task::Poll::Ready(r) = open[i].1.as_mut().poll(cx) {
                        let (token, _) = open.remove(i);
                        return std::task::Poll::Ready((token, r));
                    }
                }
                std::task::Poll::Pending
            })
            .await;
            let answer = answer_of(&outcome);
            if let Err(e) = outcome {
                errors.insert(token, e);
            }
            next = machine.on(token, answer);
        }
    }

    /// One request of the handshake as a future. `initialize`: the
    /// lifecycle's request (its id kept in `init_id`), and on an error the
    /// lifecycle closed (spec §3: that session is over; a 2026-07-28 one,
    /// which has no lifecycle, may still follow).
    fn ask<'a>(&'a self, o: Outgoing, init_id: &'a Mutex<Option<Id>>) -> Asked<'a> {
        let options = RequestOptions::default().timeout(o.wait);
        match o.ask {
            Ask::Initialize => Box::pin(async move {
                self.set_http_version(None);
                self.handler.modern.store(false, Ordering::Release);
                let lifecycle = self.lifecycle.clone();
                let answer = self
                    .peer
                    .request_with(INITIALIZE, options, false, |id| {
                        let request = lock(&lifecycle)
                            .initialize_request(id.clone())
                            .map_err(|e| Error::lifecycle(e).with_method(INITIALIZE))?;
                        *lock(init_id) = Some(id);
                        Ok(request.params)
                    })
                    .await;
                if answer.is_err() {
                    let id = lock(init_id).clone();
                    let mut lc = lock(&lifecycle);
                    if !lc.recv_error_response(id.as_ref()) {
                        lc.close();
                    }
                }
                answer
            }),
            Ask::Discover { version, params } => Box::pin(async move {
                self.set_http_version(Some(version));
                self.peer
                    .request_with(SERVER_DISCOVER, options, false, |_| Ok(Some(params)))
                    .await
            }),
            Ask::Ping => Box::pin(self.peer.request_with(PING, options, false, |_| Ok(None))),
        }
    }

    /// After an accepted `initialize` answer: `notifications/initialized`, and the
    /// legacy client (spec §3). On error `self` is dropped (our side closed).
    async fn operate(self, session: LegacySession) -> Result<Client, Error> {
        let initialized = lock(&self.lifecycle)
            .initialized_notification()
            .map_err(|e| Error::lifecycle(e).with_method("initialize"))?;
        // Batches exist only in 2025-03-26; set before `initialized` (see Sender).
        self.peer.set_batching(session.version.batching());
        // Over HTTP, `MCP-Protocol-Version` goes on every request after initialize.
        self.set_http_version(Some(session.version));
        self.peer.notify(initialized).await?;
        tracing::info!(
            server = %session.server_info.name,
            version = %session.version,
            "connected (legacy)"
        );
        let lifecycle = self.lifecycle.clone();
        let replacement = self
            .http
            .as_ref()
            .map_or(0, HttpClientHandle::sessions_replaced);
        Ok(self.client(EraState::Legacy {
            lifecycle,
            session: Mutex::new(LegacyCurrent {
                session: Arc::new(session),
                replacement,
                refused: None,
            }),
        }))
    }

    /// The `server/discover` probe of spec notes §6 alone (`ModernOnly`, bounded
    /// by `timeout`; a -32022 naming a modern revision we share is retried once
    /// with it): `Probe::Legacy` when the server may still be a legacy one,
    /// `Err` when it is a 2026-07-28 server that refused us or is gone.
    pub(super) async fn probe(&self, timeout: Duration) -> Result<Probe, Error> {
        match self.handshake(Policy::ModernOnly, timeout).await {
            Ok(Found::Modern(v, d)) => Ok(Probe::Modern(v, d)),
            Ok(Found::Legacy(_)) => unreachable!("ModernOnly never asks initialize"),
            Err((e, true)) => {
                tracing::debug!(error = %e, "server/discover failed: a legacy server");
                Ok(Probe::Legacy(e))
            }
            Err((e, false)) => Err(e),
        }
    }

    fn modern(self, version: ProtocolVersion, discover: Box<DiscoverResult>) -> Client {
        self.handler.modern.store(true, Ordering::Release);
        self.set_http_version(Some(version));
        let state = ModernState::new(version, *discover, &self.options);
        tracing::info!(server = %state.server_info.name, %version, "connected (modern)");
        self.client(EraState::Modern(Box::new(state)))
    }

    /// Connects by `policy` over the started peer; on error `self` is dropped
    /// (our side closed), once nothing more is to be tried.
    async fn run(self, policy: EraPolicy) -> Result<Client, Error> {
        let (policy, answer_wait) = match policy {
            EraPolicy::Legacy => (Policy::LegacyOnly, self.options.default_timeout),
            EraPolicy::LegacyFirst => (Policy::InitializeFirst, self.options.default_timeout),
            EraPolicy::Auto => (Policy::DiscoverFirst, self.options.default_timeout),
            EraPolicy::Modern => (Policy::ModernOnly, self.options.default_timeout),
        };
        match self.handshake(policy, answer_wait).await {
            Ok(Found::Legacy(session)) => self.operate(*session).await,
            Ok(Found::Modern(v, d)) => Ok(self.modern(v, d)),
            Err((e, _)) => {
                tracing::warn!(error = %e, "the handshake failed; disconnecting");
                Err(e)
            }
        }
    }
}

impl Client {
    /// Connects over `transport` (stdio, a child process, the in-memory pair):
    /// spawns the peer's driver on the current Tokio runtime and opens the session
    /// by [`ClientOptions::era`]: by default [`EraPolicy::LegacyFirst`], the
    /// legacy handshake (spec §3) and, only when the server answers `initialize`
    /// with a JSON-RPC error, a `server/discover` probe that connects in
    /// 2026-07-28 when the server speaks it (spec notes §6); [`EraPolicy::Legacy`]
    /// sends `initialize` only; [`EraPolicy::Auto`] probes with
    /// `server/discover` first and falls back to `initialize` (spec notes §6,
    /// "stdio client"); [`EraPolicy::Modern`] speaks 2026-07-28 only.
    ///
    /// Errors: [`Error::is_local_refusal`] when the server answered a version not in
    /// `options.supported` (or an unreadable result); [`Error::is_protocol`] when it
    /// answered `initialize` with an error and (by default) `server/discover`
    /// found no 2026-07-28 server either (that failure is named at the end of
    /// the error's `Display`), or (modern) answered `server/discover` with an
    /// error; [`Error::is_timeout`] / [`Error::is_closed`]. On error our side of
    /// the transport is closed (the spec's "SHOULD disconnect"), after any
    /// fallback was tried.
    ///
    /// Panics outside a Tokio runtime.
    pub async fn connect(transport: Transport, options: ClientOptions) -> Result<Client, Error> {
        let policy = options.era.unwrap_or(EraPolicy::LegacyFirst);
        Started::new(transport, options, None).run(policy).await
    }

    /// Connects over a Streamable HTTP client transport made by the caller, with its
    /// handle (so the library can set `MCP-Protocol-Version` and the `Mcp-Param-*`
    /// map); the era by [`ClientOptions::era`] (default [`EraPolicy::Auto`]). Most
    /// callers want [`connect_url`](Self::connect_url), which also falls back and
    /// caches per origin.
    ///
    /// Errors: as [`connect`](Self::connect).
    pub async fn connect_http(
        transport: Transport,
        handle: HttpClientHandle,
        options: ClientOptions,
    ) -> Result<Client, Error> {
        let policy = options.era.unwrap_or(EraPolicy::Auto);
        Started::new(transport, options, Some(handle))
            .run(policy)
            .await
    }

    /// Ends the session and waits until the transport has closed: open
    /// `subscriptions/listen` streams are cancelled, this handle is dropped, and
    /// the call returns once the peer's driver has seen the transport end. Over
    /// Streamable HTTP that includes the `DELETE` of the session (2025-03-26+
    /// "Session Management": a client that no longer needs a session SHOULD delete
    /// it), bounded by `HttpClientConfig::delete_timeout`.
    ///
    /// Over stdio with a server started by [`Client::spawn`], the server is shut
    /// down in the spec's order (its stdin closed, then SIGTERM, then SIGKILL, each
    /// after its grace) and reaped before the call returns, whatever it does and
    /// whatever other clones of this client remain (their requests then fail as
    /// closed). Over any other stdio transport our output is closed and the call
    /// returns when the server closes its own: a server that does not exit when
    /// its stdin closes keeps that waiting, so for a child you spawned yourself
    /// bound the call with a timeout, or call the transport's
    /// `ChildProcess::shutdown` instead.
    ///
    /// Merely dropping the last [`Client`] does the same in the background, which a
    /// program about to exit (its runtime shut down) never lets finish: call this
    /// instead. Other clones keep the session open (except a spawned server's):
    /// the call then waits until they are dropped too, so bound it with a timeout
    /// if clones may linger.
    pub async fn close(self) {
        for (_, (_, cancel)) in lock(&self.listens).drain() {
            cancel.cancel();
        }
        let mut ended = self.ended.clone();
        let child = self.child.as_ref().and_then(|c| lock(c).take());
        drop(self);
        if let Some(child) = child {
            stdio::shut_down(child).await;
        }
        let _ = ended.wait_for(|done| *done).await;
    }

    /// Which era the session speaks.
    pub fn era(&self) -> Era {
        match &*self.era {
            EraState::Legacy { .. } => Era::Legacy,
            EraState::Modern(_) => Era::Modern,
        }
    }

    /// The legacy session in force: the `initialize` answer's, or that of the
    /// session the Streamable HTTP transport started after the server lost the
    /// first (404; taken in here, see [`Self::take_replaced_session`]). `None`
    /// in the modern era.
    fn legacy_session(&self) -> Option<Arc<LegacySession>> {
        let EraState::Legacy { session, .. } = &*self.era else {
            return None;
        };
        self.take_replaced_session();
        Some(lock(session).session.clone())
    }

    /// When the HTTP transport replaced a lost session since this client last
    /// looked (MCP 2025-03-26+ "Session Management": 404, then a new
    /// `initialize`, which the transport replays), takes in the new session's
    /// `initialize` result through the lifecycle
    /// (`ClientLifecycle::session_replaced`): its version (and the batching
    /// rule that goes with it), server capabilities (against which later
    /// requests are checked), `serverInfo` and `instructions` replace the old
    /// session's. A result this client cannot speak ends the session: later
    /// requests fail ([`Error::is_closed`], saying why).
    fn take_replaced_session(&self) {
        let (EraState::Legacy { lifecycle, session }, Some(http)) = (&*self.era, &self.http) else {
            return;
        };
        let Some((n, result)) = http.replaced_session_result() else {
            return;
        };
        let mut current = lock(session);
        if n <= current.replacement {
            return;
        }
        current.replacement = n;
        let replaced = lock(lifecycle).session_replaced(&result).cloned();
        match replaced {
            Ok(new) => {
                tracing::info!(
                    server = %new.server_info.name,
                    version = %new.version,
                    "the server lost the session; the new one's initialize result is in force"
                );
                self.peer.set_batching(new.version.batching());
                http.set_protocol_version(Some(new.version));
                current.session = Arc::new(new);
            }
            Err(e) => {
                let why = format!("the session that replaced a lost one (404) is refused: {e}");
                tracing::warn!("{why}");
                current.refused = Some(why);
            }
        }
    }

    /// The server's `serverInfo` (modern: from `server/discover`'s `_meta`; name
    /// `"unknown"` when the server sent none). Legacy over Streamable HTTP: the
    /// current session's, which after a 404 is the new session's (the server
    /// behind the URL may have changed).
    pub fn server_info(&self) -> Implementation {
        match &*self.era {
            EraState::Legacy { .. } => self.legacy_session().expect("legacy").server_info.clone(),
            EraState::Modern(m) => m.server_info.clone(),
        }
    }

    /// The server's declared capabilities (`initialize` or `server/discover`;
    /// after a 404, the new session's, as [`server_info`](Self::server_info)).
    pub fn server_capabilities(&self) -> ServerCapabilities {
        match &*self.era {
            EraState::Legacy { .. } => self
                .legacy_session()
                .expect("legacy")
                .server_capabilities
                .clone(),
            EraState::Modern(m) => m.discover.capabilities.clone(),
        }
    }

    /// The revision in use (negotiated, or chosen from `server/discover`; after
    /// a 404, the new session's, as [`server_info`](Self::server_info)).
    pub fn protocol_version(&self) -> ProtocolVersion {
        match &*self.era {
            EraState::Legacy { .. } => self.legacy_session().expect("legacy").version,
            EraState::Modern(m) => m.version(),
        }
    }

    /// The server's `instructions`, if any (after a 404, the new session's, as
    /// [`server_info`](Self::server_info)).
    pub fn instructions(&self) -> Option<String> {
        match &*self.era {
            EraState::Legacy { .. } => self.legacy_session().expect("legacy").instructions.clone(),
            EraState::Modern(m) => m.discover.instructions.clone(),
        }
    }

    /// The `server/discover` result of a modern session.
    pub fn discover_result(&self) -> Option<&DiscoverResult> {
        match &*self.era {
            EraState::Legacy { .. } => None,
            EraState::Modern(m) => Some(&m.discover),
        }
    }

    /// The underlying peer (for raw requests and notifications, bypassing the
    /// lifecycle's checks: use with care).
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Sends any request after the era's checks, and returns the raw result.
    ///
    /// Legacy: the lifecycle's check, then the request. Modern: `check_modern_send`
    /// (methods removed in 2026-07-28 and undeclared server capabilities fail
    /// locally), `_meta` merged into `params` (which must then be an object), and
    /// `input_required` results answered and retried (MRTR); a -32022 naming a
    /// modern revision we share switches to it and retries once.
    ///
    /// Errors: [`Error::is_local_refusal`] (nothing sent) when the method needs a
    /// server capability that was not declared, or (modern) the server asked for
    /// input this client declared no capability for; [`Error::is_closed`] once the
    /// session is closed; [`Error::is_limit`] after
    /// [`ClientOptions::max_input_rounds`] rounds; [`Error::is_decode`] for an
    /// unknown `resultType`, or (nothing sent) for a key of
    /// [`RequestOptions::meta`] that the caller may not set; otherwise as
    /// [`Peer::request`].
    ///
    /// `options.meta` goes into `params._meta` in every era (see
    /// [`RequestOptions::meta`]); in 2026-07-28 the library's own members are
    /// merged in first, and they are under the reserved prefix the caller's keys
    /// may not use, so neither overwrites the other.
    pub async fn request(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
        options: CallOptions,
    ) -> Result<Box<RawValue>, Error> {
        match &*self.era {
            EraState::Legacy { lifecycle, session } => {
                self.take_replaced_session();
                let check = lock(lifecycle).check_send_request(method, params.as_deref());
                match check {
                    Ok(()) => {}
                    Err(LifecycleError::Closed) => {
                        let reason = self
                            .peer
                            .closed_reason()
                            .or_else(|| lock(session).refused.clone())
                            .unwrap_or_else(|| "the session is closed".to_owned());
                        return Err(Error::closed(reason).with_method(method));
                    }
                    Err(e) => return Err(Error::lifecycle(e).with_method(method)),
                }
                self.peer.request(method, params, options).await
            }
            EraState::Modern(m) => self.modern_request(m, method, params, options).await,
        }
    }

    async fn modern_request(
        &self,
        m: &ModernState,
        method: &str,
        params: Option<Box<RawValue>>,
        options: CallOptions,
    ) -> Result<Box<RawValue>, Error> {
        if let Some(reason) = self.peer.closed_reason() {
            return Err(Error::closed(reason).with_method(method));
        }
        m.check(method, params.as_deref())?;
        let mut retry: Option<(switchboard_protocol::types::InputResponses, Option<String>)> = None;
        let mut version_switched = false;
        let mut rounds = 0usize;
        loop {
            let p = m.params(method, params.as_deref(), retry.as_ref())?;
            let raw = match self.peer.request(method, Some(p), options.clone()).await {
                Ok(raw) => raw,
                Err(e) => {
                    // -32022: retry once with a modern revision we share (§3).
                    let pick = modern_error_supported(&e)
                        .and_then(|s| self.handler.options.supported.pick_from(&s));
                    match pick {
                        Some(v) if !version_switched && v.era() == Era::Modern => {
                            tracing::info!(%v, "the server asked for another version (-32022)");
                            m.set_version(v);
                            if let Some(h) = &self.http {
                                h.set_protocol_version(Some(v));
                            }
                            version_switched = true;
                            continue;
                        }
                        _ => return Err(e),
                    }
                }
            };
            match modern::outcome(method, &raw)? {
                Outcome::Complete => return Ok(raw),
                Outcome::InputRequired(ir) => {
                    rounds += 1;
                    if rounds > m.max_rounds() {
                        return Err(Error::limit(format!(
                            "more than {} input_required rounds",
                            m.max_rounds()
                        ))
                        .with_method(method));
                    }
                    tracing::debug!(
                        round = rounds,
                        requests = ir.input_requests.as_ref().map_or(0, |r| r.len()),
                        "input required"
                    );
                    let responses = m.answer(ir.input_requests.unwrap_or_default()).await?;
                    retry = Some((responses, ir.request_state));
                }
            }
        }
    }

    async fn call<R: DeserializeOwned>(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
        options: CallOptions,
    ) -> Result<R, Error> {
        let raw = self.request(method, params, options).await?;
        serde_json::from_str(raw.get()).map_err(|e| Error::decode(e).with_method(method))
    }

    /// Every page of the listing `method` (spec "Utilities → Pagination": follow
    /// `nextCursor` until it is absent), each page's request made with a clone of
    /// `options` (so a timeout is per page, and a cancellation ends the page in
    /// flight).
    async fn list_all<R: DeserializeOwned, T>(
        &self,
        method: &str,
        options: CallOptions,
        split: impl Fn(R) -> (Vec<T>, Option<String>),
    ) -> Result<Vec<T>, Error> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..self.max_list_pages {
            let params = match cursor.take() {
                None => None,
                Some(c) => to_params(&PaginatedRequestParams {
                    cursor: Some(c),
                    ..Default::default()
                })?,
            };
            let (page, next) = split(self.call(method, params, options.clone()).await?);
            items.extend(page);
            match next {
                Some(c) => cursor = Some(c),
                None => return Ok(items),
            }
        }
        Err(Error::limit(format!("more than {} pages", self.max_list_pages)).with_method(method))
    }

    /// Liveness check. Legacy: `ping` (either direction), Ok when the server
    /// answers `{}`. Modern: `ping` does not exist in 2026-07-28, so this sends
    /// `server/discover`, which every modern server MUST answer.
    pub async fn ping(&self) -> Result<(), Error> {
        let method = match &*self.era {
            EraState::Legacy { .. } => "ping",
            EraState::Modern(_) => SERVER_DISCOVER,
        };
        self.call::<Value>(method, None, CallOptions::default())
            .await
            .map(|_| ())
    }

    /// `tools/list`, every page (needs the server's `tools`). In a 2026-07-28 HTTP
    /// session, tools whose `x-mcp-header` annotations are invalid are dropped
    /// (logged at warn; spec notes §5.4) and the rest give the transport its
    /// `Mcp-Param-*` map. With default options; see
    /// [`list_tools_with`](Self::list_tools_with).
    pub async fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        self.list_tools_with(CallOptions::default()).await
    }

    /// [`list_tools`](Self::list_tools) with a timeout, a progress callback, a
    /// cancellation token or `_meta` members of the caller's own (trace context,
    /// vendor keys; see [`RequestOptions::meta`] for the merge with the library's
    /// `progressToken` and 2026-07-28 members, and the keys refused), applied to
    /// the request of every page: `tools/list{cursor?, _meta?}` →
    /// `{tools: [Tool], nextCursor?}` (all revisions, "Server Features → Tools →
    /// Listing Tools"; 2026-07-28 adds `ttlMs`, `cacheScope`), followed until
    /// `nextCursor` is absent ("Utilities → Pagination"). The timeout is per
    /// page. The tools' `outputSchema`s are kept as after
    /// [`list_tools`](Self::list_tools) (see [`call_tool_with`](Self::call_tool_with)).
    ///
    /// Errors: as [`request`](Self::request); [`Error::is_limit`] after
    /// [`ClientOptions::max_list_pages`] pages; [`Error::is_decode`] when a page
    /// does not decode, or (nothing sent) a key of `options.meta` is refused.
    pub async fn list_tools_with(&self, options: CallOptions) -> Result<Vec<Tool>, Error> {
        let mut source = self.schema_source();
        let modern = self.era() == Era::Modern;
        let pages = self
            .list_all("tools/list", options, |r: ListToolsResult| {
                (vec![(r.tools, stale_at(modern, r.ttl_ms))], r.next_cursor)
            })
            .await?;
        let mut tools = Vec::new();
        source.expires = None;
        for (page, expires) in pages {
            tools.extend(page);
            source.expires = earliest(source.expires, expires);
        }
        let tools = self.check_tool_headers(tools);
        self.keep_output_schemas(&tools, source, true);
        Ok(tools)
    }

    /// Where the schemas of a `tools/list` starting now come from (its
    /// `expires` filled in once the result is in).
    fn schema_source(&self) -> SchemaSource {
        SchemaSource {
            generation: self.handler.schema_generation(),
            session: self.sessions_replaced(),
            expires: None,
        }
    }

    /// The transport's count of replaced sessions (legacy Streamable HTTP); 0
    /// over any other transport.
    fn sessions_replaced(&self) -> u64 {
        self.http
            .as_ref()
            .map_or(0, HttpClientHandle::sessions_replaced)
    }

    /// Whether `structuredContent` is checked in this session: asked for, and a
    /// revision that has `outputSchema` (2025-06-18+).
    fn validates_structured_content(&self) -> bool {
        self.handler.options.validate_structured_content
            && self.protocol_version() >= ProtocolVersion::V2025_06_18
    }

    fn keep_output_schemas(&self, tools: &[Tool], source: SchemaSource, replace: bool) {
        if self.validates_structured_content() {
            self.handler.keep_schemas(tools, source, replace);
        }
    }

    /// The `outputSchema` check of [`call_tool_with`](Self::call_tool_with), for
    /// a `tools/call` result got another way (a raw [`request`](Self::request)):
    /// `result` back when it need not or does pass the check (an `isError`
    /// result, a tool with no `outputSchema` in this session's last
    /// `tools/list`, or one no longer used: the session was replaced since, or
    /// the list's 2026-07-28 `ttlMs` ran out; a revision before 2025-06-18,
    /// [`ClientOptions::validate_structured_content`] off); otherwise
    /// [`Error::is_invalid_structured_content`] saying what is wrong, with the
    /// result in [`Error::call_tool_result`] (2025-06-18+ "Tools → Output
    /// Schema": clients SHOULD validate).
    pub fn check_structured_content(
        &self,
        name: &str,
        result: CallToolResult,
    ) -> Result<CallToolResult, Error> {
        if result.is_error() || !self.validates_structured_content() {
            return Ok(result);
        }
        let Some(schema) =
            self.handler
                .output_schema(name, self.sessions_replaced(), Instant::now())
        else {
            return Ok(result);
        };
        let reason = match &result.structured_content {
            None => format!(
                "tool {name:?} declares an outputSchema but its result has no structuredContent"
            ),
            Some(structured) => {
                let problems = crate::server::tools::violations(&schema, structured);
                if problems.is_empty() {
                    return Ok(result);
                }
                format!(
                    "tool {name:?} returned structuredContent that does not match its outputSchema: {}",
                    problems.join("; ")
                )
            }
        };
        Err(Error::structured_content(result, reason).with_method("tools/call"))
    }

    fn check_tool_headers(&self, tools: Vec<Tool>) -> Vec<Tool> {
        let (EraState::Modern(_), Some(http)) = (&*self.era, &self.http) else {
            return tools;
        };
        let mut map = HashMap::new();
        let mut kept = Vec::with_capacity(tools.len());
        for tool in tools {
            match modern::tool_headers(&tool) {
                Ok(h) => {
                    if !h.is_empty() {
                        map.insert(tool.name.clone(), h);
                    }
                    kept.push(tool);
                }
                Err(why) => {
                    tracing::warn!(tool = %tool.name, %why, "tool dropped: invalid x-mcp-header")
                }
            }
        }
        http.set_tool_headers(map);
        kept
    }

    /// One page of `tools/list`, from `cursor` (`None`: the first), with default
    /// options; see [`list_tools_page_with`](Self::list_tools_page_with).
    pub async fn list_tools_page(&self, cursor: Option<String>) -> Result<ListToolsResult, Error> {
        self.list_tools_page_with(cursor, CallOptions::default())
            .await
    }

    /// One page of `tools/list`: `{cursor?, _meta?}` → the page as the server
    /// sent it, `{tools, nextCursor?}` (2026-07-28: also `resultType`, `ttlMs`,
    /// `cacheScope`), from `cursor` (`None`: the first; "Utilities →
    /// Pagination"), with [`CallOptions`] as for
    /// [`list_tools_with`](Self::list_tools_with). The page's `outputSchema`s
    /// are kept (the first page's replace those kept before).
    ///
    /// Errors: as [`list_tools_with`](Self::list_tools_with), but no page limit.
    pub async fn list_tools_page_with(
        &self,
        cursor: Option<String>,
        options: CallOptions,
    ) -> Result<ListToolsResult, Error> {
        let mut source = self.schema_source();
        let first = cursor.is_none();
        let params = match cursor {
            None => None,
            Some(c) => to_params(&PaginatedRequestParams {
                cursor: Some(c),
                ..Default::default()
            })?,
        };
        let mut page: ListToolsResult = self.call("tools/list", params, options).await?;
        source.expires = stale_at(self.era() == Era::Modern, page.ttl_ms);
        page.tools = self.check_tool_headers(std::mem::take(&mut page.tools));
        self.keep_output_schemas(&page.tools, source, first);
        Ok(page)
    }

    /// `tools/call` with `arguments` (a JSON object, or `null` for none) and default
    /// options. A tool's own failure is `Ok` with `is_error()`; a JSON-RPC error
    /// (unknown tool: -32602) is `Err`, and so is `structuredContent` that breaks
    /// the tool's listed `outputSchema` (see [`call_tool_with`](Self::call_tool_with)).
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult, Error> {
        self.call_tool_with(name, arguments, CallOptions::default())
            .await
    }

    /// `tools/call` with a timeout, a progress callback, a cancellation token or
    /// `_meta` members of the caller's own (trace context, vendor keys; see
    /// [`RequestOptions::meta`] for the merge with the library's `progressToken`
    /// and 2026-07-28 members, and the keys refused). In 2026-07-28 over HTTP a
    /// -32020 (header mismatch) re-lists the tools (to refresh the `Mcp-Param-*`
    /// map) and retries once (spec notes §5.4).
    ///
    /// **`structuredContent` check** (MCP 2025-06-18+ "Tools → Structured Content"
    /// and "Output Schema": servers MUST return conforming structured results,
    /// clients SHOULD validate them). When this session's last `tools/list`
    /// ([`list_tools`](Self::list_tools), or the pages of
    /// [`list_tools_page`](Self::list_tools_page)) gave the tool an
    /// `outputSchema`, a result that is not `isError` must carry
    /// `structuredContent` that validates against it (JSON Schema 2020-12 unless
    /// its `$schema` says otherwise; no remote `$ref` is fetched), else the call
    /// fails with [`Error::is_invalid_structured_content`] (the validation
    /// messages in `Display`, the result in [`Error::call_tool_result`]). An
    /// `isError` result is not checked (it reports a failure, not the tool's
    /// output). Not checked: tools the session has not listed (nothing is listed
    /// behind the caller's back), any tool after
    /// `notifications/tools/list_changed` until the next `tools/list`, any tool
    /// after the Streamable HTTP transport replaced a lost session (404, then a
    /// new `initialize`: the new session's server may have other tools) until
    /// the next `tools/list` (a listing during which that happened counts as the
    /// old session's), any tool in 2026-07-28 once the `ttlMs` of the
    /// `tools/list` result that gave its schema has run out (the earliest of
    /// the listing's pages', counted in milliseconds from when each page was
    /// received; 0 or none means at once, "Caching") until the next
    /// `tools/list`, schemas that do not compile (logged at warn when listed),
    /// revisions before 2025-06-18 (no `outputSchema`),
    /// [`request`](Self::request) (raw), and everything when
    /// [`ClientOptions::validate_structured_content`] is `false`. Legacy
    /// revisions have no `ttlMs`: one sent anyway is ignored.
    ///
    /// Errors: as [`call_tool`](Self::call_tool); [`Error::is_decode`] when
    /// `arguments` is neither an object nor `null`, or a key of `options.meta` is
    /// refused (nothing sent either way); [`Error::is_invalid_structured_content`]
    /// as above.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<CallToolResult, Error> {
        let arguments: Option<Map<String, Value>> = match arguments {
            Value::Null => None,
            Value::Object(m) => Some(m),
            _ => {
                return Err(Error::encode(serde::de::Error::custom(
                    "tool arguments must be a JSON object",
                ))
                .with_method("tools/call"))
            }
        };
        let params = to_params(&CallToolRequestParams::new(name, arguments))?;
        let result = match self
            .call("tools/call", params.clone(), options.clone())
            .await
        {
            Err(e)
                if self.http.is_some()
                    && self.era() == Era::Modern
                    && e.error_object().is_some_and(|o| o.code == -32020) =>
            {
                tracing::info!(tool = %name, "header mismatch (-32020): re-listing tools and retrying");
                self.list_tools().await?;
                self.call("tools/call", params, options).await
            }
            other => other,
        }?;
        self.check_structured_content(name, result)
    }

    /// `resources/list`, every page (needs `resources`), with default options;
    /// see [`list_resources_with`](Self::list_resources_with).
    pub async fn list_resources(&self) -> Result<Vec<Resource>, Error> {
        self.list_resources_with(CallOptions::default()).await
    }

    /// `resources/list{cursor?, _meta?}` → `{resources: [Resource], nextCursor?}`,
    /// every page (needs `resources`; all revisions, "Server Features →
    /// Resources → Listing Resources"; 2026-07-28 adds `ttlMs`, `cacheScope`),
    /// with [`CallOptions`] (timeout, progress, cancellation, `_meta` members of
    /// the caller's own, see [`RequestOptions::meta`]) on every page's request,
    /// as [`list_tools_with`](Self::list_tools_with).
    ///
    /// Errors: as [`list_tools_with`](Self::list_tools_with).
    pub async fn list_resources_with(&self, options: CallOptions) -> Result<Vec<Resource>, Error> {
        self.list_all("resources/list", options, |r: ListResourcesResult| {
            (r.resources, r.next_cursor)
        })
        .await
    }

    /// `resources/templates/list`, every page (needs `resources`), with default
    /// options; see [`list_resource_templates_with`](Self::list_resource_templates_with).
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, Error> {
        self.list_resource_templates_with(CallOptions::default())
            .await
    }

    /// `resources/templates/list{cursor?, _meta?}` → `{resourceTemplates:
    /// [ResourceTemplate], nextCursor?}`, every page (needs `resources`; all
    /// revisions, "Server Features → Resources → Resource Templates"; 2026-07-28
    /// adds `ttlMs`, `cacheScope`), with [`CallOptions`] on every page's request,
    /// as [`list_tools_with`](Self::list_tools_with).
    ///
    /// Errors: as [`list_tools_with`](Self::list_tools_with).
    pub async fn list_resource_templates_with(
        &self,
        options: CallOptions,
    ) -> Result<Vec<ResourceTemplate>, Error> {
        self.list_all(
            "resources/templates/list",
            options,
            |r: ListResourceTemplatesResult| (r.resource_templates, r.next_cursor),
        )
        .await
    }

    /// `resources/read{uri}` (needs `resources`). Not found is `Err` with -32002
    /// (legacy) or -32602. With default options; see
    /// [`read_resource_with`](Self::read_resource_with).
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, Error> {
        self.read_resource_with(uri, CallOptions::default()).await
    }

    /// `resources/read{uri, _meta?}` → `{contents: [TextResourceContents |
    /// BlobResourceContents]}` (needs `resources`; all revisions, "Server
    /// Features → Resources → Reading Resources"; 2026-07-28 adds `ttlMs`,
    /// `cacheScope` and `input_required` rounds, answered here), with a timeout,
    /// a progress callback, a cancellation token or `_meta` members of the
    /// caller's own (see [`RequestOptions::meta`]).
    ///
    /// Errors: as [`request`](Self::request); a resource not found is
    /// [`Error::is_protocol`] with -32002 (legacy) or -32602 (2026-07-28);
    /// [`Error::is_decode`] when the result does not decode, or (nothing sent) a
    /// key of `options.meta` is refused.
    pub async fn read_resource_with(
        &self,
        uri: &str,
        options: CallOptions,
    ) -> Result<ReadResourceResult, Error> {
        let params = to_params(&ReadResourceRequestParams {
            uri: uri.to_owned(),
            ..Default::default()
        })?;
        self.call("resources/read", params, options).await
    }

    /// Subscribes to `notifications/resources/updated` for `uri` (needs
    /// `resources.subscribe`); updates arrive at the notification callback.
    ///
    /// Legacy: `resources/subscribe{uri}`; over Streamable HTTP the server sends
    /// the updates on the standalone GET stream, so this also opens it when
    /// `HttpClientConfig::standalone_stream` left it closed. Modern (2026-07-28, where
    /// `resources/subscribe` is removed): opens a `subscriptions/listen` stream with
    /// `notifications.resourceSubscriptions = [uri]` and returns once the server
    /// sent `notifications/subscriptions/acknowledged` for it (within
    /// [`ClientOptions::default_timeout`]); the stream stays open until
    /// [`unsubscribe`](Self::unsubscribe), the server ends it, or the client is
    /// dropped. Subscribing again to the same URI replaces the stream.
    ///
    /// Errors: as [`request`](Self::request); modern: [`Error::is_timeout`] when no
    /// acknowledgement came in time (the stream is then closed).
    pub async fn subscribe(&self, uri: &str) -> Result<(), Error> {
        match &*self.era {
            EraState::Legacy { .. } => {
                let params = to_params(&SubscribeRequestParams {
                    uri: uri.to_owned(),
                    ..Default::default()
                })?;
                self.call::<Value>("resources/subscribe", params, CallOptions::default())
                    .await?;
                if let Some(http) = &self.http {
                    http.open_standalone_stream();
                }
                Ok(())
            }
            EraState::Modern(m) => self.listen(m, uri).await,
        }
    }

    async fn listen(&self, m: &ModernState, uri: &str) -> Result<(), Error> {
        let filter = SubscriptionFilter {
            resource_subscriptions: Some(vec![uri.to_owned()]),
            ..Default::default()
        };
        let raw = to_params(&SubscriptionsListenRequestParams {
            notifications: filter,
            ..Default::default()
        })?;
        m.check(SUBSCRIPTIONS_LISTEN, raw.as_deref())?;
        let params = m.params(SUBSCRIPTIONS_LISTEN, raw.as_deref(), None)?;
        let (ack_tx, ack_rx) = oneshot::channel();
        let (end_tx, end_rx) = oneshot::channel::<Error>();
        let cancel = CancelToken::new();
        // A listen lasts as long as the caller wants it: no practical deadline.
        let long = Duration::from_secs(365 * 24 * 3600);
        let options = RequestOptions::default()
            .timeout(long)
            .max_total(long)
            .cancel(cancel.clone());
        let peer = self.peer.clone();
        let handler = self.handler.clone();
        let listens = self.listens.clone();
        let key = uri.to_owned();
        let seq = LISTEN_SEQ.fetch_add(1, Ordering::Relaxed);
        let mut ack_tx = Some(ack_tx);
        let mut ack_key: Option<String> = None;
        tokio::spawn(async move {
            let result = peer
                .request_with(SUBSCRIPTIONS_LISTEN, options, true, |id| {
                    let k = id.to_string();
                    if let Some(tx) = ack_tx.take() {
                        lock(&handler.acks).insert(k.clone(), tx);
                    }
                    ack_key = Some(k);
                    Ok(Some(params))
                })
                .await;
            if let Some(k) = ack_key {
                lock(&handler.acks).remove(&k);
            }
            {
                let mut l = lock(&listens);
                if l.get(&key).is_some_and(|(n, _)| *n == seq) {
                    l.remove(&key);
                }
            }
            match result {
                Ok(_) => tracing::debug!(uri = %key, "the server ended the listen stream"),
                Err(e) => {
                    tracing::debug!(uri = %key, error = %e, "listen stream ended");
                    let _ = end_tx.send(e);
                }
            }
        });
        if let Some((_, old)) = lock(&self.listens).insert(uri.to_owned(), (seq, cancel.clone())) {
            old.cancel_with("replaced by a new subscription");
        }
        let wait = self.peer.config().default_timeout;
        tokio::select! {
            ack = ack_rx => match ack {
                Ok(()) => Ok(()),
                Err(_) => Err(Error::closed("the listen stream ended before it was acknowledged")
                    .with_method(SUBSCRIPTIONS_LISTEN)),
            },
            end = end_rx => {
                lock(&self.listens).remove(uri);
                Err(end.unwrap_or_else(|_| Error::closed("the listen stream ended before it was acknowledged")
                    .with_method(SUBSCRIPTIONS_LISTEN)))
            }
            _ = tokio::time::sleep(wait) => {
                cancel.cancel_with("no acknowledgement");
                lock(&self.listens).remove(uri);
                Err(Error::timeout(wait).with_method(SUBSCRIPTIONS_LISTEN))
            }
        }
    }

    /// Ends the subscription to `uri`. Legacy: `resources/unsubscribe{uri}` (needs
    /// `resources.subscribe`). Modern: closes the URI's `subscriptions/listen`
    /// stream (`notifications/cancelled` on stdio; over HTTP the transport closes
    /// the stream instead); `Ok` also when none was open.
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), Error> {
        match &*self.era {
            EraState::Legacy { .. } => {
                let params = to_params(&UnsubscribeRequestParams {
                    uri: uri.to_owned(),
                    ..Default::default()
                })?;
                self.call::<Value>("resources/unsubscribe", params, CallOptions::default())
                    .await
                    .map(|_| ())
            }
            EraState::Modern(_) => {
                if let Some((_, t)) = lock(&self.listens).remove(uri) {
                    t.cancel_with("unsubscribed");
                }
                Ok(())
            }
        }
    }

    /// `prompts/list`, every page (needs `prompts`), with default options; see
    /// [`list_prompts_with`](Self::list_prompts_with).
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, Error> {
        self.list_prompts_with(CallOptions::default()).await
    }

    /// `prompts/list{cursor?, _meta?}` → `{prompts: [Prompt], nextCursor?}`,
    /// every page (needs `prompts`; all revisions, "Server Features → Prompts →
    /// Listing Prompts"; 2026-07-28 adds `ttlMs`, `cacheScope`), with
    /// [`CallOptions`] on every page's request, as
    /// [`list_tools_with`](Self::list_tools_with).
    ///
    /// Errors: as [`list_tools_with`](Self::list_tools_with).
    pub async fn list_prompts_with(&self, options: CallOptions) -> Result<Vec<Prompt>, Error> {
        self.list_all("prompts/list", options, |r: ListPromptsResult| {
            (r.prompts, r.next_cursor)
        })
        .await
    }

    /// `prompts/get{name, arguments?}` (needs `prompts`), with default options;
    /// see [`get_prompt_with`](Self::get_prompt_with).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<BTreeMap<String, String>>,
    ) -> Result<GetPromptResult, Error> {
        self.get_prompt_with(name, arguments, CallOptions::default())
            .await
    }

    /// `prompts/get{name, arguments?, _meta?}` → `{description?, messages:
    /// [PromptMessage]}` (needs `prompts`; all revisions, "Server Features →
    /// Prompts → Getting a Prompt"; argument values are strings; 2026-07-28 adds
    /// `input_required` rounds, answered here), with a timeout, a progress
    /// callback, a cancellation token or `_meta` members of the caller's own
    /// (see [`RequestOptions::meta`]).
    ///
    /// Errors: as [`request`](Self::request); an unknown prompt or a missing
    /// required argument is [`Error::is_protocol`] with -32602;
    /// [`Error::is_decode`] when the result does not decode, or (nothing sent) a
    /// key of `options.meta` is refused.
    pub async fn get_prompt_with(
        &self,
        name: &str,
        arguments: Option<BTreeMap<String, String>>,
        options: CallOptions,
    ) -> Result<GetPromptResult, Error> {
        let params = to_params(&GetPromptRequestParams {
            name: name.to_owned(),
            arguments,
            ..Default::default()
        })?;
        self.call("prompts/get", params, options).await
    }

    /// `completion/complete` (needs `completions`, 2025-03-26+), with default
    /// options; see [`complete_with`](Self::complete_with).
    pub async fn complete(&self, params: &CompleteRequestParams) -> Result<CompleteResult, Error> {
        self.complete_with(params, CallOptions::default()).await
    }

    /// `completion/complete{ref, argument{name, value}, context?, _meta?}` →
    /// `{completion: {values: [string] (at most 100), total?, hasMore?}}`
    /// (needs the server's `completions`; 2025-03-26+ "Utilities →
    /// Completion"; `context` 2025-06-18+), with a timeout, a progress callback,
    /// a cancellation token or `_meta` members of the caller's own (see
    /// [`RequestOptions::meta`]), which replace a `_meta` that `params` carries
    /// member by member.
    ///
    /// Errors: as [`request`](Self::request) ([`Error::is_local_refusal`],
    /// nothing sent, when the server did not declare `completions`);
    /// [`Error::is_decode`] when the result does not decode, or (nothing sent) a
    /// key of `options.meta` is refused.
    pub async fn complete_with(
        &self,
        params: &CompleteRequestParams,
        options: CallOptions,
    ) -> Result<CompleteResult, Error> {
        let params = to_params(params)?;
        self.call("completion/complete", params, options).await
    }

    /// Sets the server's log level (needs `logging`). Legacy:
    /// `logging/setLevel{level}`. Modern (where that method is removed): remembers
    /// `level` and sends it as `_meta["io.modelcontextprotocol/logLevel"]` on every
    /// later request, which is how 2026-07-28 opts in to `notifications/message`
    /// (spec notes §7 "Logging"); nothing is sent now.
    pub async fn set_level(&self, level: LoggingLevel) -> Result<(), Error> {
        match &*self.era {
            EraState::Legacy { .. } => {
                let params = to_params(&SetLevelRequestParams {
                    level,
                    meta: None,
                    extra: Default::default(),
                })?;
                self.call::<Value>("logging/setLevel", params, CallOptions::default())
                    .await
                    .map(|_| ())
            }
            EraState::Modern(m) => {
                m.set_log_level(level);
                Ok(())
            }
        }
    }
}

/// The client's [`Handler`]: the lifecycle's checks (legacy), then the configured
/// handlers.
struct ClientHandler {
    lifecycle: Arc<Mutex<ClientLifecycle>>,
    options: ClientOptions,
    /// Set once the session is modern: no lifecycle checks, no server requests.
    modern: AtomicBool,
    /// Waiters for `notifications/subscriptions/acknowledged`, by listen id.
    acks: Mutex<HashMap<String, oneshot::Sender<()>>>,
    /// The compiled `outputSchema`s of the last `tools/list`.
    output_schemas: Mutex<OutputSchemas>,
}

/// The `outputSchema` of each tool of this session's last `tools/list` that has
/// one, compiled; emptied by `notifications/tools/list_changed`, whose count
/// (`generation`) keeps a listing that was under way then from storing what may
/// be the old list.
#[derive(Default)]
struct OutputSchemas {
    generation: u64,
    by_tool: HashMap<String, KeptSchema>,
}

/// One tool's compiled `outputSchema` and what bounds its use.
struct KeptSchema {
    validator: Arc<jsonschema::Validator>,
    /// The transport's count of replaced sessions
    /// (`HttpClientHandle::sessions_replaced`) when the listing started: the
    /// schema belongs to that session's server (always 0 off legacy
    /// Streamable HTTP).
    session: u64,
    /// When the listing's 2026-07-28 `ttlMs` runs out (the earliest of its
    /// pages'); `None`: never (legacy revisions have no `ttlMs`).
    expires: Option<Instant>,
}

/// Where a listing's schemas come from: see [`KeptSchema`].
#[derive(Clone, Copy)]
struct SchemaSource {
    /// Counts list changes (see [`OutputSchemas`]).
    generation: u64,
    session: u64,
    expires: Option<Instant>,
}

/// When a 2026-07-28 result received now with `ttl_ms` goes stale ("Caching": a
/// missing or negative `ttlMs` counts as 0, i.e. already stale); `None` in a
/// legacy session (no `ttlMs`) or beyond what `Instant` can hold.
fn stale_at(modern: bool, ttl_ms: Option<i64>) -> Option<Instant> {
    if !modern {
        return None;
    }
    Instant::now().checked_add(Duration::from_millis(
        switchboard_protocol::types::effective_ttl_ms(ttl_ms),
    ))
}

/// The earlier of two deadlines, `None` being never.
fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl ClientHandler {
    /// The count of list changes so far (taken before a `tools/list`).
    fn schema_generation(&self) -> u64 {
        lock(&self.output_schemas).generation
    }

    /// Keeps the `outputSchema`s of `tools`, listed as `source` says;
    /// `replace`: the listing is whole (or its first page), so tools not in it
    /// are forgotten. Nothing is kept when a list change came meanwhile. A schema
    /// that does not compile is logged (warn) and that tool's results are not
    /// checked.
    fn keep_schemas(&self, tools: &[Tool], source: SchemaSource, replace: bool) {
        let mut compiled = HashMap::new();
        for tool in tools {
            let Some(schema) = &tool.output_schema else {
                continue;
            };
            match crate::server::tools::compile(schema) {
                Ok(v) => {
                    compiled.insert(
                        tool.name.clone(),
                        KeptSchema {
                            validator: Arc::new(v),
                            session: source.session,
                            expires: source.expires,
                        },
                    );
                }
                Err(why) => {
                    tracing::warn!(tool = %tool.name, %why, "outputSchema does not compile: its structuredContent is not checked")
                }
            }
        }
        let mut cache = lock(&self.output_schemas);
        if cache.generation != source.generation {
            return;
        }
        if replace {
            cache.by_tool.clear();
        }
        for tool in tools {
            cache.by_tool.remove(&tool.name);
        }
        cache.by_tool.extend(compiled);
    }

    /// `notifications/tools/list_changed`: the schemas may be stale.
    fn forget_schemas(&self) {
        let mut cache = lock(&self.output_schemas);
        cache.generation += 1;
        cache.by_tool.clear();
    }

    /// The schema to check `tool`'s result against: none when the tool has none
    /// in the last listing, when that listing came from a session that has since
    /// been replaced (`session` is the transport's count now: the schemas are
    /// then forgotten, as the new session's server may list other tools), or
    /// when its 2026-07-28 `ttlMs` ran out before `now` (kept: the next
    /// `tools/list` replaces it).
    fn output_schema(
        &self,
        tool: &str,
        session: u64,
        now: Instant,
    ) -> Option<Arc<jsonschema::Validator>> {
        let mut cache = lock(&self.output_schemas);
        if cache.by_tool.values().any(|k| k.session != session) {
            tracing::debug!(
                "the session was replaced: the outputSchemas of its tools/list are forgotten"
            );
            cache.by_tool.retain(|_, k| k.session == session);
        }
        let kept = cache.by_tool.get(tool)?;
        if kept.expires.is_some_and(|at| now >= at) {
            tracing::debug!(%tool, "the tools/list result's ttlMs ran out: its outputSchema is not checked until the next tools/list");
            return None;
        }
        Some(kept.validator.clone())
    }
}

fn encode_result<T: Serialize>(r: Result<T, ErrorObject>) -> Result<Box<RawValue>, ErrorObject> {
    let v = r?;
    serde_json::value::to_raw_value(&v)
        .map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, format!("result did not encode: {e}")))
}

/// Answers a server→client request (legacy) or an MRTR input request (modern,
/// through the input loop) with the configured handlers: `ping`,
/// `sampling/createMessage`, `elicitation/create`, `roots/list`; anything else, or
/// a missing handler, is -32601.
fn dispatch_server_request(
    options: &ClientOptions,
    request: &Request,
    cx: HandlerContext,
) -> HandlerFuture {
    let decoded = match ServerRequest::from_request(request) {
        Ok(d) => d,
        Err(e) => return Box::pin(async move { Err(e) }),
    };
    let not_found = || -> HandlerFuture {
        let e = method_not_found(&request.method);
        Box::pin(async move { Err(e) })
    };
    match decoded {
        ServerRequest::Ping(_) => {
            Box::pin(async { Ok(RawValue::from_string("{}".to_owned()).expect("valid JSON")) })
        }
        ServerRequest::CreateMessage(p) => match &options.sampling {
            Some(h) => {
                let fut = h(*p, cx);
                Box::pin(async move { encode_result(fut.await) })
            }
            None => not_found(),
        },
        ServerRequest::Elicit(p) => match &options.elicitation {
            Some(h) => {
                let fut = h(*p, cx);
                Box::pin(async move { encode_result(fut.await) })
            }
            None => not_found(),
        },
        ServerRequest::ListRoots(_) => match &options.roots {
            Some(h) => {
                let fut = h(cx);
                Box::pin(async move { encode_result(fut.await) })
            }
            None => not_found(),
        },
        _ => not_found(),
    }
}

impl Handler for ClientHandler {
    fn request(&self, request: Request, cx: HandlerContext) -> HandlerFuture {
        if request.method == "initialize" {
            // A client's request in every revision: a "server" that sends it is
            // echoing its input (`cat`), and will echo this answer back as the
            // answer to our own `initialize`, so it must say what happened.
            tracing::warn!("the server sent `initialize`: is it echoing its input?");
            let e = ErrorObject::new(
                code::INVALID_REQUEST,
                "the server sent our \"initialize\" back: a server never sends it (is the command echoing its input rather than speaking MCP?)",
            );
            return Box::pin(async move { Err(e) });
        }
        if self.modern.load(Ordering::Acquire) {
            // 2026-07-28 servers never send requests (MRTR replaces them).
            let e = method_not_found(&request.method);
            return Box::pin(async move { Err(e) });
        }
        if let Err(e) = lock(&self.lifecycle).recv_request(&request) {
            tracing::debug!(method = %request.method, error = %e, "server request refused");
            let error = e.to_error_object();
            return Box::pin(async move { Err(error) });
        }
        dispatch_server_request(&self.options, &request, cx)
    }

    fn notification(&self, notification: Notification) {
        if !self.modern.load(Ordering::Acquire) {
            if let Err(e) = lock(&self.lifecycle).recv_notification(&notification) {
                tracing::debug!(method = %notification.method, error = %e, "server notification refused; dropped");
                return;
            }
        }
        let decoded = ServerNotification::from_notification(&notification);
        if notification.method == NOTIFICATION_TOOLS_LIST_CHANGED {
            self.forget_schemas();
        }
        if notification.method == NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED {
            let id = notification
                .params
                .as_ref()
                .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
                .and_then(|v| {
                    v.get("_meta")?
                        .get(switchboard_protocol::types::meta::SUBSCRIPTION_ID)
                        .cloned()
                })
                .and_then(|v| serde_json::from_value::<Id>(v).ok());
            if let Some(tx) = id.and_then(|id| lock(&self.acks).remove(&id.to_string())) {
                let _ = tx.send(());
            }
        }
        match decoded {
            Ok(n) => match &self.options.on_notification {
                Some(cb) => cb(n),
                None => {
                    tracing::debug!(method = %notification.method, "server notification (no callback)")
                }
            },
            Err(e) => {
                tracing::debug!(method = %notification.method, error = %e.message, "malformed server notification; dropped")
            }
        }
    }

    fn closed(&self, reason: &str) {
        tracing::debug!(%reason, "session closed");
        lock(&self.lifecycle).close();
        lock(&self.acks).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_follow_the_handlers() {
        let o = ClientOptions::new(Implementation::new("c", "1"));
        assert_eq!(
            serde_json::to_value(o.capabilities()).unwrap(),
            serde_json::json!({})
        );
        let o = o
            .with_sampling(|_, _| async { Err(ErrorObject::new(-1, "x")) })
            .with_roots(|_| async {
                Ok(ListRootsResult {
                    roots: vec![],
                    meta: None,
                    extra: Default::default(),
                })
            });
        assert_eq!(
            serde_json::to_value(o.capabilities()).unwrap(),
            serde_json::json!({"sampling": {}, "roots": {}})
        );
        let mut o = o.with_elicitation(|_, _| async { Err(ErrorObject::new(-1, "x")) });
        assert_eq!(
            serde_json::to_value(o.capabilities()).unwrap()["elicitation"],
            serde_json::json!({})
        );
        o.elicitation_url = true;
        assert_eq!(
            serde_json::to_value(o.capabilities()).unwrap()["elicitation"],
            serde_json::json!({"form": {}, "url": {}})
        );
    }
}
