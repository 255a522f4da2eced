//! Serving one connection: a [`Server`] behind the JSON-RPC peer, over any
//! `switchboard-transport` [`Transport`] (stdio, a child's pipes, the in-memory pair,
//! one Streamable HTTP session); and serving every session of a Streamable HTTP
//! server ([`Server::serve_http`]).
//!
//! ```text
//! Server::serve(transport, options) -> ServerSession      (nothing runs yet)
//! ServerSession::run().await                              (until the transport closes)
//! Server::serve_http(acceptor, options).await             (Streamable HTTP: one spawned
//!                                                          serve(..).run() per session,
//!                                                          one exchange::serve per
//!                                                          stateless 2026-07-28 POST)
//!
//! inbound request ──> DualEraServer::recv_request (on the driver task, in arrival order)
//!   Err(e)                  -> e.to_error_object()   (-32600 before initialize, -32601, ...)
//!   Legacy  initialize      -> initialize_response() (negotiated version, derived caps;
//!                              batching switched on first when 2025-03-26 was agreed)
//!   Legacy  ping            -> {}
//!   Legacy  anything else   -> ClientRequest::from_request -> Server::handle(session
//!                              state, negotiated version, client capabilities, PeerSink)
//!   Modern  (2026-07-28 _meta, check_modern_request passed)
//!                           -> Server::handle(fresh state, request's version and
//!                              capabilities, PeerSink without server→client requests)
//! inbound notification ──> DualEraServer::recv_notification (errors are only logged)
//! ```
//!
//! The [`ContextSink`] of each request ([`PeerSink`], private) sends what a tool's
//! [`ToolContext`](super::ToolContext) decided: notifications as JSON-RPC
//! notifications through the peer, sampling / elicitation / roots as server→client
//! requests through the peer (with the peer's default timeout), both tagged with the
//! incoming request's id as the transport's routing hint
//! ([`Peer::notify_related`], [`RequestOptions::related`]; the Streamable HTTP
//! server puts them on that call's SSE stream, stdio ignores it), after the legacy
//! lifecycle's `check_send_*` (e.g. no server→client request before
//! `notifications/initialized`). Cancellation is the peer's: the request's
//! [`HandlerContext::cancellation`] token, fired by `notifications/cancelled`.
//!
//! Choices and limits:
//! - **2026-07-28 and server→client requests.** A modern request is served without a
//!   session. Its tool may send notifications (progress, logging); sampling,
//!   elicitation and roots asked by a `tools/call` or `prompts/get` handler become an
//!   `input_required` result and a retried request (MRTR, `mrtr.rs`), with the same
//!   handler code. `subscriptions/listen` (2026-07-28 "Subscriptions", stdio works
//!   the same way as HTTP): acknowledged first with the honoured filter, then each
//!   announced change it asked for, tagged with the subscription id, until the
//!   client cancels it (`notifications/cancelled`; a cancelled request is not
//!   answered) or the connection's input ends (then it answers its final result
//!   `{resultType: "complete"}` at once, written if the output is still usable).
//! - **Announcements.** While a session runs it forwards the server's
//!   [`Announcer`](super::Announcer) changes as legacy notifications
//!   (`notifications/*/list_changed`, `notifications/resources/updated` for
//!   subscribed URIs) once initialized, where the lifecycle allows them.
//! - **Batches (2025-03-26).** Batching is switched on for the whole transport just
//!   before the `initialize` result is sent. The items of an inbound batch are served
//!   one by one and each answer goes out as its own message (the peer's current
//!   behaviour), not as one response array.
//! - **End of the connection.** [`ServerSession::run`] returns once the transport's
//!   input has closed (stdin end of file, the peer hanging up, a read error, the
//!   HTTP session ending) and what follows is done. At that moment the peer fails
//!   every server→client request still waiting, and any made from then on
//!   (sampling, elicitation, roots) fails at once with
//!   [`ContextError::Closed`](super::ContextError::Closed): no answer can arrive
//!   any more; the handler decides what to answer then. When only the input closed
//!   and the output is still usable (stdin at end of file while stdout is open, as
//!   in `printf '%s\n' "$init" "$initialized" "$call" | server`; the other end of
//!   an in-memory pair or pipe closing its writer), **the requests already being
//!   handled go on and are answered**, for at most
//!   [`ServeOptions::drain_on_close`] (default [`DRAIN_ON_CLOSE`], 10 s; MCP
//!   2025-11-25 "Lifecycle → Shutdown": over stdio the client shuts down by
//!   closing the server's input, and "Transports → stdio"); progress and log
//!   notifications still go out meanwhile. When that grace ends, or at once for
//!   any other close (an HTTP session deleted, expired or closed: the session is
//!   gone; [`Server::serve_http`] never drains), the peer fires the cancellation
//!   token of every request still being handled (so
//!   [`ToolContext::cancelled`](super::ToolContext::cancelled) completes) and
//!   aborts those handlers at their next await: those are **not answered**.
//!   Answers already queued are written before `run` returns ([`Peer::flush`],
//!   bounded by [`FLUSH_BOUND`] for a client that stopped reading), so a program may
//!   return from `main` or exit right after it (a client that wrote its requests
//!   and closed stdin at once gets every answer produced within the grace). The
//!   output itself closes once the session's last [`Peer`] is gone (the one `run`
//!   holds is dropped when it returns; drop any clone taken with
//!   [`ServerSession::peer`] too).
//!
//! This module must not know about bytes, framing, processes or sockets (the
//! transport), about ids and deadlines (the peer), nor what a tool does (the
//! registry in [`Server`]).

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::Value;
use switchboard_protocol::jsonrpc::{code, ErrorObject, Notification, Request};
use switchboard_protocol::lifecycle::{Accepted, DualEraServer, LegacySession, LifecycleError};
use switchboard_protocol::types::{
    meta, ClientRequest, ServerNotification, ServerRequest, SubscriptionsListenRequestParams,
    NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED, SUBSCRIPTIONS_LISTEN,
};
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::http::server::{HttpSession, SessionAcceptor};
use switchboard_transport::Transport;
use tracing::Instrument;

use super::changes::{self, Change};
use super::context::{BoxFuture, ContextError, ContextSink};
use super::mrtr::{self, Round};
use super::{Server, SessionState, Started};
use crate::error::Error;
use crate::peer::{
    self, Driver, Handler, HandlerContext, HandlerFuture, Peer, PeerConfig, RequestOptions,
};

/// How [`Server::serve`] runs one connection. Every field documents its default.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The name of the session's tracing span. Default: the server's `serverInfo.name`
    /// (when left empty).
    pub name: String,
    /// How long a server→client request (sampling, elicitation, roots) waits for the
    /// client's answer. Default 60 s.
    pub request_timeout: Duration,
    /// The hard maximum of a server→client request. Default 10 min.
    pub max_timeout: Duration,
    /// The most server→client requests awaiting an answer at once. Default 1024.
    pub max_pending: usize,
    /// The most client requests handled at once; one more is answered -32603 at once.
    /// Default 64.
    pub max_concurrent_handlers: usize,
    /// How long the requests already being handled may go on, and be answered,
    /// once the client has closed the connection's input while its output is
    /// still usable (stdin at end of file over stdio); the rest are then
    /// cancelled and not answered, and [`ServerSession::run`] returns after it.
    /// Zero: cancelled at once (no answer). Never applies to an HTTP session,
    /// whose end means the session is gone. Default [`DRAIN_ON_CLOSE`] (10 s).
    /// See the module docs, "End of the connection", and
    /// [`PeerConfig::drain_on_close`]. Spec: MCP 2025-11-25 "Lifecycle →
    /// Shutdown", "Transports → stdio".
    pub drain_on_close: Duration,
}

/// The default of [`ServeOptions::drain_on_close`]: 10 s, in which the requests
/// being handled when stdin reached end of file are still answered.
pub const DRAIN_ON_CLOSE: Duration = Duration::from_secs(10);

impl Default for ServeOptions {
    fn default() -> Self {
        let peer = PeerConfig::default();
        ServeOptions {
            name: String::new(),
            request_timeout: peer.default_timeout,
            max_timeout: peer.max_timeout,
            max_pending: peer.max_pending,
            max_concurrent_handlers: peer.max_concurrent_handlers,
            drain_on_close: DRAIN_ON_CLOSE,
        }
    }
}

/// What the session's handler and its handle share.
#[derive(Debug)]
struct Shared {
    lifecycle: Mutex<DualEraServer>,
    state: SessionState,
    closed: Mutex<Option<String>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One connection being served: made by [`Server::serve`], driven by
/// [`run`](Self::run).
#[must_use = "a ServerSession does nothing until it is run"]
pub struct ServerSession {
    peer: Peer,
    driver: Driver,
    shared: Arc<Shared>,
    server: Server,
    span: tracing::Span,
}

impl std::fmt::Debug for ServerSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerSession")
            .field("driver", &self.driver)
            .field("lifecycle", &*lock(&self.shared.lifecycle))
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Serves one connection over `transport` (the server's end): answers `initialize`,
    /// `ping` and every registered feature, as the module documentation describes.
    ///
    /// `Server` is a cheap handle (clones share the registry), so one server can
    /// serve many connections at once, each with its own lifecycle and
    /// [`SessionState`]. Nothing happens until [`ServerSession::run`] is awaited.
    pub fn serve(&self, transport: Transport, options: ServeOptions) -> ServerSession {
        self.serve_as(transport, options, SessionState::new())
    }

    /// [`serve`](Self::serve) with the session's state made by the caller
    /// (its principal, for an HTTP session).
    fn serve_as(
        &self,
        transport: Transport,
        options: ServeOptions,
        state: SessionState,
    ) -> ServerSession {
        let name = if options.name.is_empty() {
            self.info().name.clone()
        } else {
            options.name
        };
        let shared = Arc::new(Shared {
            lifecycle: Mutex::new(self.lifecycle()),
            state,
            closed: Mutex::new(None),
        });
        let handler = Arc::new(ServerHandler {
            server: self.clone(),
            shared: shared.clone(),
            client_capabilities: std::sync::OnceLock::new(),
        });
        let config = PeerConfig {
            name: name.clone(),
            default_timeout: options.request_timeout,
            max_timeout: options.max_timeout,
            max_pending: options.max_pending,
            max_concurrent_handlers: options.max_concurrent_handlers,
            drain_on_close: options.drain_on_close,
        };
        let (peer, driver) = peer::connect(transport, config, handler);
        ServerSession {
            peer,
            driver,
            shared,
            server: self.clone(),
            span: tracing::info_span!("serve", server = %name),
        }
    }
}

impl Server {
    /// Serves every session of a Streamable HTTP server: each stateful
    /// [`HttpSession`] the `acceptor` yields is served with [`serve`](Self::serve)
    /// (the same `options`) in a task of its own, so sessions run concurrently; each
    /// stateless 2026-07-28 exchange ([`HttpSession::is_stateless`]) is served by a
    /// lightweight task of its own (header and `_meta` checks, the handler with
    /// MRTR, or a `subscriptions/listen` stream; no peer, no lifecycle machine).
    /// When the acceptor ends, open listen streams end with their final result. How many run at once is
    /// bounded by the HTTP server's
    /// [`max_sessions`](switchboard_transport::http::server::HttpServerConfig::max_sessions)
    /// (an `initialize` beyond gets 503), and a session's task ends when its
    /// transport closes (DELETE, idle expiry, the server shutting down): the
    /// session is gone then, so [`ServeOptions::drain_on_close`] does not apply
    /// (its requests still being handled are cancelled at once).
    ///
    /// The future completes once the acceptor ends (the
    /// [`HttpServer`](switchboard_transport::http::server::HttpServer) was dropped or
    /// shut down, which also ends every session) and every session's task has
    /// finished. Dropping the future aborts the sessions still running.
    ///
    /// ```no_run
    /// # async fn demo(server: switchboard::server::Server) -> std::io::Result<()> {
    /// use switchboard::server::ServeOptions;
    /// use switchboard_transport::http::server::{HttpServer, HttpServerConfig};
    ///
    /// let (http, acceptor) = HttpServer::bind(HttpServerConfig::default()).await?;
    /// tracing::info!(url = %http.url(), "listening");
    /// server.serve_http(acceptor, ServeOptions::default()).await;
    /// # Ok(()) }
    /// ```
    pub fn serve_http(
        &self,
        mut acceptor: SessionAcceptor,
        options: ServeOptions,
    ) -> impl Future<Output = ()> + Send + 'static {
        let server = self.clone();
        // A session's end means it is gone: nothing could carry a late answer.
        let options = ServeOptions {
            drain_on_close: Duration::ZERO,
            ..options
        };
        async move {
            let mut sessions = tokio::task::JoinSet::new();
            let (stopping, stopped) = tokio::sync::watch::channel(false);
            loop {
                tokio::select! {
                    next = acceptor.accept() => {
                        let Some(session) = next else { break };
                        if session.is_stateless() {
                            sessions.spawn(super::exchange::serve(server.clone(), session, stopped.clone()));
                            continue;
                        }
                        let HttpSession { transport, session_id, protocol_version, principal, .. } = session;
                        let span = tracing::info_span!("http_session", session = %session_id);
                        span.in_scope(|| {
                            tracing::debug!(%protocol_version, "session accepted");
                        });
                        let served = server.serve_as(transport, options.clone(), SessionState::of(principal));
                        sessions.spawn(async move {
                            served.run().instrument(span).await;
                        });
                    }
                    Some(done) = sessions.join_next(), if !sessions.is_empty() => {
                        if let Err(e) = done {
                            tracing::warn!(error = %e, "a session's task failed");
                        }
                    }
                }
            }
            stopping.send_replace(true);
            tracing::debug!(
                running = sessions.len(),
                "the acceptor ended; waiting for sessions"
            );
            while let Some(done) = sessions.join_next().await {
                if let Err(e) = done {
                    tracing::warn!(error = %e, "a session's task failed");
                }
            }
        }
    }
}

/// How long [`ServerSession::run`] waits, once the input has closed and the
/// grace of [`ServeOptions::drain_on_close`] is over, for the answers already
/// queued to be written out: 5 s.
pub const FLUSH_BOUND: std::time::Duration = std::time::Duration::from_secs(5);

impl ServerSession {
    /// The session's peer, e.g. to send `notifications/resources/updated` (see
    /// [`Server::resource_updated`]) while it runs. A clone kept past
    /// [`run`](Self::run) keeps the transport's output open.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// The session's state (`logging/setLevel` level, subscriptions).
    pub fn state(&self) -> &SessionState {
        &self.shared.state
    }

    /// The legacy session, once the `initialize` result was produced.
    pub fn legacy_session(&self) -> Option<LegacySession> {
        lock(&self.shared.lifecycle).legacy().session().cloned()
    }

    /// Serves until the transport's input closes; returns the reason it closed.
    ///
    /// What happens to requests still being handled then: see the module
    /// documentation, "End of the connection" (answered within
    /// [`ServeOptions::drain_on_close`] when only the input closed, cancelled and
    /// not answered otherwise). Returns only after that grace and after what is
    /// queued was written (at most [`FLUSH_BOUND`] more), so at most
    /// `drain_on_close + FLUSH_BOUND` after the input closed. Cancel safety:
    /// dropping the future stops reading; requests in flight keep running until
    /// they finish.
    pub async fn run(self) -> String {
        let ServerSession {
            peer,
            driver,
            shared,
            server,
            span,
        } = self;
        async move {
            tracing::info!("serving");
            let mut changes = server.announcer().subscribe();
            let announce = async {
                while let Some((number, change)) = changes::next(&mut changes).await {
                    announce_legacy(&server, &shared, &peer, number, &change).await;
                }
                std::future::pending::<()>().await
            };
            tokio::select! {
                () = driver.run() => {}
                () = announce => {}
            }
            // Answers already queued are written before `run` returns, so that
            // the program may exit right after it (bounded: a client that stopped
            // reading does not hold it).
            match tokio::time::timeout(FLUSH_BOUND, peer.flush()).await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::debug!("the output closed before queued answers were written")
                }
                Err(_) => tracing::warn!(
                    bound_ms = FLUSH_BOUND.as_millis() as u64,
                    "queued answers not written within the bound; the client is not reading"
                ),
            }
            drop(peer);
            let reason = lock(&shared.closed)
                .clone()
                .unwrap_or_else(|| "the transport ended".to_owned());
            tracing::info!(%reason, "session ended");
            reason
        }
        .instrument(span)
        .await
    }
}

/// A `subscriptions/listen` over a connection (see the module documentation).
async fn listen_over_peer(
    server: Server,
    request: Request,
    cx: HandlerContext,
) -> Result<Box<RawValue>, ErrorObject> {
    let params: SubscriptionsListenRequestParams = request.params_as().map_err(|e| {
        ErrorObject::new(code::INVALID_PARAMS, format!("subscriptions/listen: {e}"))
    })?;
    let filter = super::exchange::honoured(&server, &params.notifications);
    let id = request.id.clone();
    let subscription = serde_json::to_value(&id).unwrap_or(Value::Null);
    let mut changes = server.announcer().subscribe();
    let ack = Notification::new(
        NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED,
        &serde_json::json!({"notifications": filter,
            "_meta": { meta::SUBSCRIPTION_ID: subscription }}),
    )
    .map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))?;
    let closed = |e: Error| ErrorObject::new(code::INTERNAL_ERROR, e.to_string());
    cx.peer()
        .notify_related(ack, Some(id.clone()))
        .await
        .map_err(closed)?;
    loop {
        tokio::select! {
            change = changes::next(&mut changes) => {
                let Some((_, change)) = change else { break };
                if let Some(n) = super::exchange::listen_notification(&change, &filter, &subscription) {
                    cx.peer().notify_related(n, Some(id.clone())).await.map_err(closed)?;
                }
            }
            () = cx.cancellation().cancelled() => break,
            // The client will send nothing more: the final result, now.
            () = cx.input_closed() => break,
        }
    }
    raw(&super::exchange::listen_done(&server, &subscription))
}

/// Sends one announced change to a legacy session, if it is initialized, the
/// server declares the list's `listChanged` (or, for a resource update, the
/// session subscribed to that URI before announcement `number` was made) and the
/// lifecycle allows it now.
async fn announce_legacy(
    server: &Server,
    shared: &Shared,
    peer: &Peer,
    number: u64,
    change: &Change,
) {
    let caps = server.capabilities();
    let declared = |c: Option<Option<bool>>| c.flatten() == Some(true);
    let notification = match change {
        Change::ToolsListChanged if declared(caps.tools.as_ref().map(|t| t.list_changed)) => {
            ServerNotification::ToolListChanged(None)
        }
        Change::PromptsListChanged if declared(caps.prompts.as_ref().map(|p| p.list_changed)) => {
            ServerNotification::PromptListChanged(None)
        }
        Change::ResourcesListChanged
            if declared(caps.resources.as_ref().map(|r| r.list_changed)) =>
        {
            ServerNotification::ResourceListChanged(None)
        }
        Change::ResourceUpdated(uri) if !shared.state.hears_update(uri, number) => return,
        Change::ResourceUpdated(uri) => match server.resource_updated(&shared.state, uri) {
            Some(n) => n,
            None => return,
        },
        _ => return,
    };
    let n = notification.to_notification();
    let allowed = {
        let lifecycle = lock(&shared.lifecycle);
        lifecycle.legacy().session().is_some()
            && lifecycle
                .legacy()
                .check_send_notification(&n.method, n.params.as_deref())
                .is_ok()
    };
    if allowed {
        if let Err(e) = peer.notify_related(n, None).await {
            tracing::debug!(error = %e, "announcement not sent");
        }
    }
}

/// The server's [`Handler`]: the lifecycle's checks, then [`Server::handle`].
struct ServerHandler {
    server: Server,
    shared: Arc<Shared>,
    /// The session's client capabilities, shared by every request's context
    /// (taken from the lifecycle once; they never change after `initialize`).
    client_capabilities: std::sync::OnceLock<Arc<switchboard_protocol::types::ClientCapabilities>>,
}

fn refuse(error: ErrorObject) -> HandlerFuture {
    Box::pin(async move { Err(error) })
}

fn raw(v: &Value) -> Result<Box<RawValue>, ErrorObject> {
    serde_json::value::to_raw_value(v).map_err(|e| {
        ErrorObject::new(
            code::INTERNAL_ERROR,
            format!("result does not serialize: {e}"),
        )
    })
}

impl Handler for ServerHandler {
    fn request(&self, request: Request, cx: HandlerContext) -> HandlerFuture {
        // Runs on the driver task, in arrival order: the lifecycle sees requests in
        // the order the client sent them.
        let mut lifecycle = lock(&self.shared.lifecycle);
        let accepted = match lifecycle.recv_request(&request) {
            Ok(a) => a,
            Err(e) => {
                tracing::debug!(method = %request.method, error = %e, "refused by the lifecycle");
                return refuse(e.to_error_object());
            }
        };
        match accepted {
            Accepted::Legacy if request.method == "initialize" => {
                let answer = lifecycle.initialize_response();
                let version = lifecycle.legacy().session().map(|s| s.version);
                drop(lifecycle);
                match (answer, version) {
                    (Ok(response), Some(version)) => {
                        // Before the result is sent: a conforming client may batch
                        // from its next message on (2025-03-26 only).
                        cx.peer().set_batching(version.batching());
                        tracing::info!(%version, "initialize answered");
                        Box::pin(async move { Ok(response.result) })
                    }
                    (Err(e), _) => refuse(e.to_error_object()),
                    (Ok(_), None) => refuse(ErrorObject::new(
                        code::INTERNAL_ERROR,
                        "the lifecycle produced no session",
                    )),
                }
            }
            Accepted::Legacy if request.method == "ping" => {
                Box::pin(async { Ok(RawValue::from_string("{}".to_owned()).expect("valid JSON")) })
            }
            Accepted::Legacy => {
                let Some(session) = lifecycle.legacy().session() else {
                    // recv_request accepts other methods only once a session exists.
                    return refuse(
                        LifecycleError::NotInitialized {
                            method: request.method.clone(),
                        }
                        .to_error_object(),
                    );
                };
                let version = session.version;
                let client_capabilities = self
                    .client_capabilities
                    .get_or_init(|| Arc::new(session.client_capabilities.clone()))
                    .clone();
                drop(lifecycle);
                let sink = PeerSink {
                    cx,
                    shared: self.shared.clone(),
                    modern: false,
                };
                self.dispatch(
                    &request,
                    self.shared.state.clone(),
                    version,
                    client_capabilities,
                    sink,
                    None,
                )
            }
            Accepted::Modern(_) if request.method == SUBSCRIPTIONS_LISTEN => {
                drop(lifecycle);
                let server = self.server.clone();
                Box::pin(listen_over_peer(server, request, cx))
            }
            Accepted::Modern(ctx) => {
                drop(lifecycle);
                let sink = PeerSink {
                    cx,
                    shared: self.shared.clone(),
                    modern: true,
                };
                let round = if mrtr::allows_input_required(&request.method) {
                    let params: Option<serde_json::Map<String, Value>> = request
                        .params
                        .as_deref()
                        .and_then(|p| serde_json::from_str(p.get()).ok());
                    match Round::new(&request.method, params.as_ref(), (*ctx).clone()) {
                        Ok(r) => Some(Arc::new(r)),
                        Err(e) => return refuse(e),
                    }
                } else {
                    None
                };
                // Stateless: nothing is inferred from earlier requests.
                self.dispatch(
                    &request,
                    SessionState::new(),
                    ctx.version,
                    Arc::new(ctx.client_capabilities),
                    sink,
                    round,
                )
            }
        }
    }

    fn notification(&self, notification: Notification) {
        match lock(&self.shared.lifecycle).recv_notification(&notification) {
            Ok(()) => tracing::debug!(method = %notification.method, "notification accepted"),
            Err(e) => {
                tracing::debug!(method = %notification.method, error = %e, "notification refused; dropped")
            }
        }
    }

    fn closed(&self, reason: &str) {
        lock(&self.shared.lifecycle).close();
        *lock(&self.shared.closed) = Some(reason.to_owned());
    }
}

impl ServerHandler {
    /// Decodes the request and runs [`Server::handle`] in the returned future.
    fn dispatch(
        &self,
        request: &Request,
        state: SessionState,
        version: ProtocolVersion,
        client_capabilities: Arc<switchboard_protocol::types::ClientCapabilities>,
        sink: PeerSink,
        round: Option<Arc<Round>>,
    ) -> HandlerFuture {
        let decoded = match ClientRequest::from_request(request) {
            Ok(d) => d,
            Err(e) => return refuse(e),
        };
        let sink: Arc<dyn ContextSink> = Arc::new(sink);
        let started = self.server.start(
            &state,
            version,
            &client_capabilities,
            decoded,
            sink,
            round.clone(),
        );
        match (round, started) {
            (None, Started::Ready(answer)) => Box::pin(std::future::ready(answer)),
            (None, Started::Pending(handling)) => handling,
            (Some(round), started) => {
                let server = self.server.clone();
                Box::pin(async move { mrtr::run(&round, server.info(), started).await })
            }
        }
    }
}

/// The [`ContextSink`] of one request, over the peer.
struct PeerSink {
    cx: HandlerContext,
    shared: Arc<Shared>,
    /// A 2026-07-28 request: no session, no server→client requests (MRTR later).
    modern: bool,
}

fn lifecycle_refusal(e: LifecycleError) -> ContextError {
    match e {
        LifecycleError::Closed => ContextError::Closed,
        e => ContextError::Peer(e.to_string()),
    }
}

fn peer_error(e: Error) -> ContextError {
    if let Some(o) = e.error_object().filter(|_| e.is_protocol()) {
        ContextError::Client {
            code: o.code,
            message: o.message.clone(),
        }
    } else if e.is_closed() {
        ContextError::Closed
    } else if e.is_cancelled() {
        ContextError::Cancelled
    } else {
        ContextError::Peer(e.to_string())
    }
}

impl ContextSink for PeerSink {
    fn notify(&self, notification: ServerNotification) -> BoxFuture<'_, Result<(), ContextError>> {
        Box::pin(async move {
            let n = notification.to_notification();
            if !self.modern {
                lock(&self.shared.lifecycle)
                    .legacy()
                    .check_send_notification(&n.method, n.params.as_deref())
                    .map_err(lifecycle_refusal)?;
            }
            self.cx
                .peer()
                .notify_related(n, Some(self.cx.id().clone()))
                .await
                .map_err(peer_error)
        })
    }

    fn request(&self, request: ServerRequest) -> BoxFuture<'_, Result<Value, ContextError>> {
        Box::pin(async move {
            let method = request.method().to_owned();
            if self.modern {
                return Err(ContextError::Peer(format!(
                    "{method}: 2026-07-28 has no server-to-client requests, and this request \
                     cannot answer input_required"
                )));
            }
            // The id is the peer's; only the params are taken from this.
            let params = request.to_request(0).params;
            lock(&self.shared.lifecycle)
                .legacy()
                .check_send_request(&method, params.as_deref())
                .map_err(lifecycle_refusal)?;
            let raw = self
                .cx
                .peer()
                .request(
                    &method,
                    params,
                    RequestOptions::new().related(self.cx.id().clone()),
                )
                .await
                .map_err(peer_error)?;
            serde_json::from_str(raw.get()).map_err(|e| ContextError::InvalidResult {
                method: match request {
                    ServerRequest::CreateMessage(_) => "sampling/createMessage",
                    ServerRequest::Elicit(_) => "elicitation/create",
                    ServerRequest::ListRoots(_) => "roots/list",
                    _ => "request",
                },
                reason: e.to_string(),
            })
        })
    }

    fn is_cancelled(&self) -> bool {
        self.cx.cancellation().is_cancelled()
    }

    fn cancelled(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.cx.cancellation().cancelled())
    }

    fn close_stream(&self) -> bool {
        !self.modern && self.cx.close_stream()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use switchboard_protocol::jsonrpc::Message;
    use switchboard_protocol::types::{Implementation, Tool};
    use switchboard_transport::{memory, Inbound, TransportConfig};

    async fn within<F: Future>(f: F) -> F::Output {
        tokio::time::timeout(Duration::from_secs(20), f)
            .await
            .expect("timed out")
    }

    /// A listen over a connection (stdio works like HTTP): acknowledged, then the
    /// asked-for change, tagged; an unasked change is not sent.
    #[tokio::test]
    async fn a_listen_over_a_connection_gets_its_changes() {
        let tool: Tool =
            serde_json::from_value(json!({"name": "t", "inputSchema": {"type": "object"}}))
                .unwrap();
        let builder = Server::builder(Implementation::new("s", "1"))
            .list_changed(true)
            .tool(tool, |_, _| async {
                Ok(serde_json::from_value(json!({"content": []})).unwrap())
            });
        let announcer = builder.announcer();
        let server = builder.build().unwrap();
        let (client, server_end) = memory::pair(&TransportConfig::default());
        tokio::spawn(server.serve(server_end, ServeOptions::default()).run());
        let (tx, mut rx) = client.split();
        let listen = Request::new(
            7,
            "subscriptions/listen",
            &json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                              "io.modelcontextprotocol/clientCapabilities": {}},
                    "notifications": {"toolsListChanged": true, "promptsListChanged": true}}),
        )
        .unwrap();
        within(tx.send(Message::Request(listen))).await.unwrap();
        async fn next(rx: &mut switchboard_transport::Receiver) -> Value {
            match within(rx.recv()).await {
                Some(Inbound::Message(m)) => serde_json::from_slice::<Value>(&m.encode()).unwrap(),
                other => panic!("expected a message, got {other:?}"),
            }
        }
        let ack = next(&mut rx).await;
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        assert_eq!(
            ack["params"]["notifications"],
            json!({"toolsListChanged": true})
        );
        assert_eq!(
            ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            7
        );
        // No prompts here: the prompt list is not honoured, its change not sent.
        announcer.prompts_changed();
        assert!(announcer.tools_changed() >= 1);
        let n = next(&mut rx).await;
        assert_eq!(n["method"], "notifications/tools/list_changed");
        assert_eq!(
            n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            7
        );
    }
}
