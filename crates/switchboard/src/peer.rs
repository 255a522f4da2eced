//! The JSON-RPC peer shared by the client and the server: a cloneable handle
//! ([`Peer`]) that sends requests and notifications, and a [`Driver`] task that owns
//! the transport's receiver and routes what arrives.
//!
//! What the driver does with each inbound message (spec notes §2, §3, §7):
//! - a response or error response goes to the waiter of the pending request with that
//!   id (see the pending table); a late one is ignored (debug log);
//! - `notifications/progress` goes to the progress callback of the request whose
//!   progress token it names, and moves that request's deadline (by its timeout, never
//!   past the hard maximum);
//! - `notifications/cancelled` fires the [`CancelToken`] of the incoming request it
//!   names; the handler's future is then dropped and no response is sent (MCP
//!   "Cancellation": the receiver SHOULD NOT answer a cancelled request);
//! - any other request runs the [`Handler`], at most
//!   [`PeerConfig::max_concurrent_handlers`] at once (beyond that: -32603 at once):
//!   first in the driver's task, and when the handler has to wait (it is not ready
//!   at its first poll), on in a task of its own. A handler that finishes without
//!   waiting (a pure computation such as an echo) so costs no task and no hand-off
//!   between tasks; one that waits never holds up the driver. A handler that
//!   blocks its thread holds up its session either way: use `spawn_blocking`;
//! - any other notification goes to [`Handler::notification`];
//! - [`Inbound::Closed`] fails every pending request at once with an error naming the
//!   reason (a request of ours made from then on fails at once the same way: no
//!   answer can arrive any more) and completes [`HandlerContext::input_closed`].
//!   When the input closed while the output is still
//!   usable ([`CloseReason::StdinClosed`], [`CloseReason::PeerClosed`]: our stdin
//!   reached end of file, or the other end of a pipe or in-memory pair closed its
//!   writer) and [`PeerConfig::drain_on_close`] is not zero, the requests already
//!   being handled go on and their answers are sent, for at most that grace (MCP
//!   2025-11-25 "Lifecycle → Shutdown": over stdio the client ends the connection
//!   by closing the server's input, and "Transports → stdio"). Then every handler
//!   still running is cancelled (its token fired, its future dropped at its next
//!   await, no response sent), [`Handler::closed`] is called and the driver ends.
//!   Any other close (an HTTP session deleted, expired or closed, a child gone, a
//!   read error), or an output already closed, cancels at once.
//!
//! A request of ours ends one of four ways: its response, its deadline (the driver
//! fails it and sends `notifications/cancelled`, 2025-03-26+ "Timeouts"), its
//! [`CancelToken`] (the caller's task sends `notifications/cancelled` and fails it),
//! or the transport closing. Requests marked not cancellable (`initialize`, which MUST
//! NOT be cancelled) time out without the notification.
//!
//! **Dropping.** The driver holds the transport's sender only weakly: when the last
//! [`Peer`] (and the last running handler) is gone, the sender is dropped, which closes
//! our output; the peer then normally closes its side and the driver ends at
//! [`Inbound::Closed`]. Dropping a request's future before it completes removes the
//! request from the table and sends `notifications/cancelled` for it in the
//! background. Dropping the [`Driver`] (not running it) leaves requests to time out
//! never: run it.
//!
//! This module must not know MCP's lifecycle, capabilities or any method beyond the
//! base protocol's progress and cancellation notifications (and the `_meta.progressToken`
//! they rely on, beside which it merges the caller's own `_meta` members, checked by
//! the base protocol's key rules: [`RequestOptions::meta`]); that is the client's and
//! the server's business.

// foldhash, not SipHash: a request id is looked up on every request and
// answer (ids in the table are bounded by the handler slots).
use foldhash::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use switchboard_protocol::jsonrpc::{
    code, ErrorObject, ErrorResponse, Id, Message, Notification, Request, Response,
};
use switchboard_protocol::types::{
    CancelledNotificationParams, Meta, ProgressNotificationParams, ProgressToken,
    NOTIFICATION_CANCELLED, NOTIFICATION_PROGRESS,
};
use switchboard_transport::{
    CloseReason, DirectSink, Inbound, Outgoing, Receiver, Sender, Transport,
};
use tokio::sync::{Notify, Semaphore};
use tokio::time::Instant;
use tracing::Instrument;

use crate::error::Error;
use crate::pending::{Answered, NewRequest, PendingTable};

/// Called for each `notifications/progress` naming a request's progress token, on the
/// driver task: it must return quickly and must not block (hand work to a channel).
pub type ProgressCallback = Arc<dyn Fn(ProgressNotificationParams) + Send + Sync>;

/// The future a [`Handler`] returns for one incoming request: the raw `result`, or the
/// JSON-RPC error to answer with.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Box<RawValue>, ErrorObject>> + Send>>;

/// A future with its panics caught: a panic while polling it becomes `Err` (the
/// payload) instead of unwinding through the task that runs it. Used for request
/// handlers, in a session (here) and in a stateless 2026-07-28 exchange.
pub(crate) struct CatchUnwind<F>(pub(crate) F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn std::any::Any + Send>>;

    fn poll(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let fut = &mut self.0;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Pin::new(&mut *fut).poll(cx)
        })) {
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Ok(std::task::Poll::Ready(r)) => std::task::Poll::Ready(Ok(r)),
            Err(panic) => std::task::Poll::Ready(Err(panic)),
        }
    }
}

/// The error answer to a request whose handler panicked (-32603, "internal
/// error: the handler failed", the same in a session and in a stateless
/// exchange); the panic's message is logged (error), never sent to the peer.
pub(crate) fn handler_panicked(panic: &(dyn std::any::Any + Send)) -> ErrorObject {
    tracing::error!(error = %panic_text(panic), "handler panicked");
    ErrorObject::new(code::INTERNAL_ERROR, "internal error: the handler failed")
}

/// Runs `f`, user code called synchronously from the task that reads the
/// transport: a panic in it is logged (error) and goes no further, so the session
/// and every request pending on it go on.
fn contain(what: &str, f: impl FnOnce()) {
    if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        tracing::error!(error = %panic_text(&*panic), "the {what} panicked; the session goes on");
    }
}

/// The message of a panic's payload (`&str` or `String`), or "a panic".
fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned())
}

// ---------------------------------------------------------------------------
// Cancellation
// ---------------------------------------------------------------------------

/// A cancellation signal, cloneable; all clones share one state. Fired once, with an
/// optional reason (sent as `notifications/cancelled`'s `reason`).
#[derive(Clone, Default)]
pub struct CancelToken {
    inner: Arc<CancelInner>,
}

#[derive(Default)]
struct CancelInner {
    fired: AtomicBool,
    reason: Mutex<Option<String>>,
    notify: Notify,
}

impl CancelToken {
    /// A token not yet fired.
    pub fn new() -> Self {
        CancelToken::default()
    }

    /// Fires the token without a reason. Later calls do nothing.
    pub fn cancel(&self) {
        self.fire(None);
    }

    /// Fires the token with `reason`. Later calls do nothing (the first reason stays).
    pub fn cancel_with(&self, reason: impl Into<String>) {
        self.fire(Some(reason.into()));
    }

    fn fire(&self, reason: Option<String>) {
        {
            let mut r = lock(&self.inner.reason);
            if self.inner.fired.load(Ordering::Acquire) {
                return;
            }
            *r = reason;
            self.inner.fired.store(true, Ordering::Release);
        }
        self.inner.notify.notify_waiters();
    }

    /// Whether the token was fired.
    pub fn is_cancelled(&self) -> bool {
        self.inner.fired.load(Ordering::Acquire)
    }

    /// The reason given when it was fired.
    pub fn reason(&self) -> Option<String> {
        lock(&self.inner.reason).clone()
    }

    /// Completes once the token is fired (at once if it already was). Cancel safe.
    pub async fn cancelled(&self) {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

impl fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

// ---------------------------------------------------------------------------
// Options and configuration
// ---------------------------------------------------------------------------

/// Per-request options: timeout, hard maximum, progress callback, cancellation,
/// routing hint, `_meta` members of the caller's own.
#[derive(Clone, Default)]
pub struct RequestOptions {
    /// How long to wait for the response, and how far each progress notification
    /// moves the deadline. `None`: [`PeerConfig::default_timeout`]. Capped by the hard
    /// maximum.
    pub timeout: Option<Duration>,
    /// The hard maximum from sending, which progress never extends past. `None`:
    /// [`PeerConfig::max_timeout`].
    pub max_total: Option<Duration>,
    /// Asks for progress (`params._meta.progressToken` is set to the request's id) and
    /// receives each `notifications/progress` for it. See [`ProgressCallback`].
    pub on_progress: Option<ProgressCallback>,
    /// Fire to cancel: `notifications/cancelled{requestId, reason}` is sent and the
    /// request fails with [`Error::is_cancelled`].
    pub cancel: Option<CancelToken>,
    /// The id of the incoming request this request is made on behalf of (e.g. a
    /// sampling request made while handling a `tools/call`): passed to the
    /// transport as the routing hint of
    /// [`Sender::send_related`](switchboard_transport::Sender::send_related), so the
    /// Streamable HTTP server puts it on that call's SSE stream. `None` (default):
    /// no hint. Transports with one channel ignore it.
    pub related: Option<Id>,
    /// Members of the caller's own for the request's `params._meta`: W3C trace
    /// context (`traceparent`, `tracestate`, `baggage`), keys under a prefix of
    /// the caller's (`com.example/tenant`). `None` (default): nothing added.
    ///
    /// Merged into `params._meta` (created, and `params` with it, when absent;
    /// `params` must then be a JSON object), replacing members of the same name
    /// that `params._meta` already had; then the library adds its own members:
    /// `progressToken` when [`on_progress`](Self::on_progress) is set, and on a
    /// 2026-07-28 client the `io.modelcontextprotocol/*` members (protocol
    /// version, client capabilities, client info, log level). Every retry of the
    /// request (2026-07-28 `input_required` rounds) carries them again.
    ///
    /// Refused before anything is sent ([`Error::is_decode`], params side, the
    /// key named in the error's source), by the `_meta` rules of MCP
    /// ("General fields: `_meta`", 2025-06-18 and later; applied whatever the
    /// session's revision):
    /// - a key that is not well-formed (`meta::is_valid_key`: an optional prefix
    ///   of dot-separated labels and `/`, then a name starting and ending with an
    ///   alphanumeric);
    /// - a key under a prefix reserved for MCP, by the 2025-11-25/2026-07-28 rule
    ///   (`io.modelcontextprotocol/`, `dev.mcp/`) or the 2025-06-18 one
    ///   (`modelcontextprotocol.io/`, `mcp.dev/`): those members are the
    ///   protocol's (the library sets the ones it speaks), never the caller's;
    /// - `progressToken`: the library allocates tokens so that it can route
    ///   `notifications/progress` to [`on_progress`](Self::on_progress); a
    ///   token of the caller's own would get notifications nobody receives. Ask
    ///   for progress with `on_progress` instead.
    ///
    /// [`Peer::request`] with raw `params` that carry a `_meta` of their own is
    /// not checked this way: that is the raw escape hatch.
    pub meta: Option<Map<String, Value>>,
}

impl RequestOptions {
    /// Default options.
    pub fn new() -> Self {
        RequestOptions::default()
    }

    /// Sets [`timeout`](Self::timeout).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets [`max_total`](Self::max_total).
    pub fn max_total(mut self, max_total: Duration) -> Self {
        self.max_total = Some(max_total);
        self
    }

    /// Sets [`on_progress`](Self::on_progress).
    pub fn on_progress(
        mut self,
        f: impl Fn(ProgressNotificationParams) + Send + Sync + 'static,
    ) -> Self {
        self.on_progress = Some(Arc::new(f));
        self
    }

    /// Sets [`cancel`](Self::cancel).
    pub fn cancel(mut self, token: CancelToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Sets [`related`](Self::related).
    pub fn related(mut self, id: Id) -> Self {
        self.related = Some(id);
        self
    }

    /// Sets [`meta`](Self::meta), replacing what it held.
    pub fn meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Some(meta);
        self
    }

    /// Adds one member to [`meta`](Self::meta) (replacing one of the same key),
    /// e.g. `.meta_entry("traceparent", "00-4bf9…-00f0…-01".into())`. The key is
    /// checked when the request is sent (see [`meta`](Self::meta)).
    pub fn meta_entry(mut self, key: impl Into<String>, value: Value) -> Self {
        self.meta
            .get_or_insert_with(Map::new)
            .insert(key.into(), value);
        self
    }
}

/// Why a key of [`RequestOptions::meta`] is refused, if it is (see there).
fn refuse_meta_key(key: &str) -> Option<String> {
    use switchboard_protocol::types::meta;
    if key == meta::PROGRESS_TOKEN {
        Some(
            "RequestOptions::meta: `progressToken` is the library's (set on_progress to ask for progress)"
                .to_owned(),
        )
    } else if !meta::is_valid_key(key) {
        Some(format!(
            "RequestOptions::meta: {key:?} is not a valid _meta key (MCP 2025-06-18+ \"General fields: _meta\": optional prefix of dot-separated labels and '/', then a name that starts and ends with a letter or digit)"
        ))
    } else if meta::is_reserved(key) || meta::is_reserved_2025_06_18(key) {
        Some(format!(
            "RequestOptions::meta: {key:?} is under a prefix reserved for MCP (\"General fields: _meta\"); the library sets the protocol's members itself"
        ))
    } else {
        None
    }
}

impl fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestOptions")
            .field("timeout", &self.timeout)
            .field("max_total", &self.max_total)
            .field("on_progress", &self.on_progress.is_some())
            .field("cancel", &self.cancel)
            .field("related", &self.related)
            .field("meta", &self.meta)
            .finish()
    }
}

/// Limits and defaults of one peer. Every field documents its default.
#[derive(Debug, Clone)]
pub struct PeerConfig {
    /// A name for the session's tracing span (`session{name}`). Default `"peer"`.
    pub name: String,
    /// The timeout of a request that sets none. Default 60 s.
    pub default_timeout: Duration,
    /// The hard maximum of any request, progress included; explicit timeouts above it
    /// are cut to it. Default 10 min.
    pub max_timeout: Duration,
    /// The most requests of ours awaiting a response at once; one more fails at once
    /// with [`Error::is_limit`]. Default 1024.
    pub max_pending: usize,
    /// The most incoming requests handled at once; one more is answered -32603 at
    /// once. A request stops counting when it is answered or when its
    /// `notifications/cancelled` arrives (its handler is then being dropped).
    /// Default 64.
    pub max_concurrent_handlers: usize,
    /// The grace, once the transport's input has closed with its output still
    /// usable, during which the requests already being handled go on and their
    /// answers are sent (see the module docs). It applies only to
    /// [`CloseReason::StdinClosed`] and [`CloseReason::PeerClosed`] while the
    /// [`Sender`] is not closed, and ends early when every such request is
    /// answered or the output closes; when it ends, the handlers still running
    /// are cancelled and not answered. [`Driver::run`] returns after it. A request
    /// of ours made during it fails at once with [`Error::is_closed`]. Zero: no
    /// grace, every handler is cancelled at once. Default zero (what a client
    /// wants: a server that closed our input has normally ended); the server's
    /// sessions take theirs from `ServeOptions::drain_on_close` (10 s).
    /// Spec: MCP 2025-11-25 "Lifecycle → Shutdown" and "Transports → stdio".
    pub drain_on_close: Duration,
}

impl Default for PeerConfig {
    fn default() -> Self {
        PeerConfig {
            name: "peer".to_owned(),
            default_timeout: Duration::from_secs(60),
            max_timeout: Duration::from_secs(600),
            max_pending: 1024,
            max_concurrent_handlers: 64,
            drain_on_close: Duration::ZERO,
        }
    }
}

// ---------------------------------------------------------------------------
// Handlers of incoming traffic
// ---------------------------------------------------------------------------

/// What the client or server layer supplies: the answer to each incoming request
/// (other than progress and cancellation, which the driver handles) and what to do
/// with incoming notifications.
pub trait Handler: Send + Sync + 'static {
    /// Answers one request. Runs in a task of its own; the future is dropped (and no
    /// response sent) when the peer cancels the request, or when the transport
    /// closes and the grace of [`PeerConfig::drain_on_close`] (if it applies) has
    /// ended without an answer. A panic is answered -32603.
    fn request(&self, request: Request, cx: HandlerContext) -> HandlerFuture;

    /// One incoming notification (not `notifications/progress` or
    /// `notifications/cancelled`), on the driver task: return quickly. Default: logged
    /// at debug and dropped.
    fn notification(&self, notification: Notification) {
        tracing::debug!(method = %notification.method, "notification dropped (no handler)");
    }

    /// The transport closed for `reason`; called once, on the driver task, after
    /// the grace of [`PeerConfig::drain_on_close`] (when it applies) and after the
    /// handlers still running were cancelled.
    fn closed(&self, reason: &str) {
        let _ = reason;
    }
}

/// A handler that answers every request -32601 (method not found).
#[derive(Debug, Clone, Copy, Default)]
pub struct MethodNotFound;

impl Handler for MethodNotFound {
    fn request(&self, request: Request, _cx: HandlerContext) -> HandlerFuture {
        Box::pin(async move { Err(method_not_found(&request.method)) })
    }
}

/// The -32601 error object for `method`.
pub fn method_not_found(method: &str) -> ErrorObject {
    ErrorObject::new(
        code::METHOD_NOT_FOUND,
        format!("method not found: {method}"),
    )
}

/// What a handler knows about the request it answers.
#[derive(Clone)]
pub struct HandlerContext {
    id: Id,
    method: String,
    cancel: CancelToken,
    progress_token: Option<ProgressToken>,
    peer: Peer,
}

impl HandlerContext {
    /// The request's id.
    pub fn id(&self) -> &Id {
        &self.id
    }

    /// The request's method.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// Fired when the peer sends `notifications/cancelled` for this request, or
    /// when the transport closes and the grace of [`PeerConfig::drain_on_close`]
    /// (if it applies) ends before this request is answered.
    pub fn cancellation(&self) -> &CancelToken {
        &self.cancel
    }

    /// Completes once the transport's input has closed (at once if it already
    /// has): the peer will send nothing more, neither `notifications/cancelled`
    /// nor an answer to a request of ours. For a handler that would otherwise
    /// wait on the peer forever (a `subscriptions/listen` stream): it should
    /// finish now, as its answer can still be written within
    /// [`PeerConfig::drain_on_close`]. Cancel safe.
    pub async fn input_closed(&self) {
        self.peer.core().input_closed.cancelled().await
    }

    /// The request's `params._meta.progressToken`, if it asked for progress.
    pub fn progress_token(&self) -> Option<&ProgressToken> {
        self.progress_token.as_ref()
    }

    /// The peer, to send requests or notifications while answering.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// Closes the Streamable HTTP connection that carries this request's SSE
    /// stream while the request goes on (MCP 2025-11-25 polling, SEP-1699): what
    /// is sent for it afterwards, the response included, reaches the client when
    /// it reconnects with `Last-Event-ID`. `false` (nothing done) on other
    /// transports, for a JSON reply, or when no connection is open; see
    /// [`Sender::close_stream`](switchboard_transport::Sender::close_stream).
    pub fn close_stream(&self) -> bool {
        self.peer.shared.sender.close_stream(&self.id)
    }

    /// Sends `notifications/progress{progressToken, progress, total?, message?}` when
    /// the request asked for progress; does nothing otherwise. `progress` must
    /// increase from call to call (spec §7 "Progress"; not checked here).
    ///
    /// Errors: [`Error::is_closed`] when the transport is closed; [`Error::is_decode`]
    /// for a NaN or infinite value.
    pub async fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), Error> {
        let Some(token) = &self.progress_token else {
            return Ok(());
        };
        let mut p = ProgressNotificationParams::new(token.clone(), progress).ok_or_else(|| {
            Error::encode(serde::de::Error::custom("progress is not a finite number"))
        })?;
        if let Some(t) = total {
            p = p.with_total(t);
        }
        p.message = message.map(str::to_owned);
        let n = Notification::new(NOTIFICATION_PROGRESS, &p).map_err(Error::encode)?;
        self.peer.notify_related(n, Some(self.id.clone())).await
    }
}

impl fmt::Debug for HandlerContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandlerContext")
            .field("id", &self.id)
            .field("method", &self.method)
            .field("progress_token", &self.progress_token)
            .finish()
    }
}

// ---------------------------------------------------------------------------
// The handle
// ---------------------------------------------------------------------------

/// One request being handled by this peer.
struct Running {
    cancel: CancelToken,
    /// Its slot among [`PeerConfig::max_concurrent_handlers`]; `None` once freed
    /// by a cancellation (the handler is being dropped; its request is over).
    slot: Option<tokio::sync::OwnedSemaphorePermit>,
}

/// Counts one handler in [`Core::active`] from its start until it is dropped.
struct Active(Arc<Core>);

impl Active {
    fn new(core: Arc<Core>) -> Self {
        core.active.fetch_add(1, Ordering::AcqRel);
        Active(core)
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        if self.0.active.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.settled.notify_waiters();
        }
    }
}

/// State the handle and the driver share.
struct Core {
    table: Mutex<PendingTable>,
    /// Requests being handled: their cancel switch and their handler slot (the
    /// slot is freed when the request is answered or cancelled, whichever comes
    /// first).
    incoming: Mutex<HashMap<Id, Running>>,
    /// Wakes the driver to recompute the next deadline after an insert.
    wake: Notify,
    handlers: Arc<Semaphore>,
    /// Handlers whose future has not ended yet (their answer, if any, is queued
    /// on the transport when they end): what the drain waits for.
    active: AtomicUsize,
    /// Notified (every waiter) when `active` drops to zero.
    settled: Notify,
    /// Fired when the transport's input closes, before the drain
    /// ([`HandlerContext::input_closed`]).
    input_closed: CancelToken,
    config: PeerConfig,
    span: tracing::Span,
}

/// What only the handles hold strongly (the driver holds it weakly): the sender.
struct Shared {
    sender: Sender,
    core: Arc<Core>,
}

/// The handle to a JSON-RPC session: send requests and notifications. Cloneable and
/// cheap to clone; see the module docs for what dropping the last one does.
#[derive(Clone)]
pub struct Peer {
    shared: Arc<Shared>,
}

impl fmt::Debug for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Peer")
            .field("name", &self.shared.core.config.name)
            .field("closed", &self.closed_reason())
            .finish()
    }
}

/// The task that owns the transport's receiver: run it (e.g. `tokio::spawn(driver.run())`).
#[must_use = "the driver must run for responses to arrive"]
pub struct Driver {
    dispatch: Arc<Dispatch>,
    receiver: Receiver,
}

/// What routes an inbound message: the driver's task runs it for what the
/// transport queued, and the transport runs it itself, in the task that received
/// a message, when nothing was queued before it ([`DirectSink`]).
struct Dispatch {
    core: Arc<Core>,
    shared: Weak<Shared>,
    handler: Arc<dyn Handler>,
}

impl DirectSink for Dispatch {
    /// Takes every message (routing never waits).
    fn deliver(&self, message: Message) -> Result<(), Message> {
        let _entered = self.core.span.enter();
        self.on_message(message);
        Ok(())
    }
}

impl fmt::Debug for Driver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Driver")
            .field("name", &self.dispatch.core.config.name)
            .finish()
    }
}

/// A session over `transport`: the handle and the driver (which must be run).
/// `handler` answers incoming requests and takes incoming notifications.
pub fn connect(
    transport: Transport,
    config: PeerConfig,
    handler: Arc<dyn Handler>,
) -> (Peer, Driver) {
    let (sender, receiver) = transport.split();
    let span = tracing::info_span!("session", peer = %config.name);
    let core = Arc::new(Core {
        table: Mutex::new(PendingTable::new(config.max_pending)),
        incoming: Mutex::new(HashMap::default()),
        wake: Notify::new(),
        handlers: Arc::new(Semaphore::new(config.max_concurrent_handlers)),
        active: AtomicUsize::new(0),
        settled: Notify::new(),
        input_closed: CancelToken::new(),
        config,
        span,
    });
    let shared = Arc::new(Shared {
        sender,
        core: core.clone(),
    });
    let driver = Driver {
        dispatch: Arc::new(Dispatch {
            core,
            shared: Arc::downgrade(&shared),
            handler,
        }),
        receiver,
    };
    (Peer { shared }, driver)
}

impl Peer {
    fn core(&self) -> &Core {
        &self.shared.core
    }

    /// Sends a request and waits for its result, as raw JSON.
    ///
    /// `params`, when given, must be a JSON object if progress is asked for (the
    /// progress token goes into its `_meta`).
    ///
    /// Errors: [`Error::is_protocol`] (the peer's error response),
    /// [`Error::is_transport`] (the transport gave up on this request, e.g. an HTTP
    /// error without a JSON-RPC body), [`Error::is_timeout`],
    /// [`Error::is_cancelled`], [`Error::is_closed`],
    /// [`Error::is_limit`] (too many pending requests), [`Error::is_decode`] (params
    /// that cannot take a progress token).
    ///
    /// Cancel safety: dropping the future removes the request and sends
    /// `notifications/cancelled` for it in the background.
    pub async fn request(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
        options: RequestOptions,
    ) -> Result<Box<RawValue>, Error> {
        self.request_with(method, options, true, move |_| Ok(params))
            .await
    }

    /// [`request`](Self::request) with the result decoded as `R`.
    ///
    /// Errors: as `request`, and [`Error::is_decode`] when the result is not an `R`.
    pub async fn request_as<R: DeserializeOwned>(
        &self,
        method: &str,
        params: Option<Box<RawValue>>,
        options: RequestOptions,
    ) -> Result<R, Error> {
        let raw = self.request(method, params, options).await?;
        serde_json::from_str(raw.get()).map_err(|e| Error::decode(e).with_method(method))
    }

    /// The general form: `build` receives the id the request will carry and returns
    /// its params (the lifecycle builds `initialize` this way). `cancellable: false`
    /// sends no `notifications/cancelled` on timeout or cancellation (for
    /// `initialize`, which MUST NOT be cancelled).
    ///
    /// Errors: as [`request`](Self::request), and whatever `build` returns (nothing is
    /// sent then).
    pub async fn request_with(
        &self,
        method: &str,
        options: RequestOptions,
        cancellable: bool,
        build: impl FnOnce(Id) -> Result<Option<Box<RawValue>>, Error>,
    ) -> Result<Box<RawValue>, Error> {
        let core = self.core();
        let max_total = options.max_total.unwrap_or(core.config.max_timeout);
        let timeout = options
            .timeout
            .unwrap_or(core.config.default_timeout)
            .min(max_total);
        let (n, token, rx) = lock(&core.table).insert(
            NewRequest {
                method: method.to_owned(),
                timeout,
                max_total,
                on_progress: options.on_progress.clone(),
                notify_cancel: cancellable,
            },
            Instant::now(),
        )?;
        core.wake.notify_one();
        let id = Id::from(n);
        let span = tracing::debug_span!(parent: &core.span, "request", method, id = n);
        let guard = PendingGuard {
            peer: self.clone(),
            id: n,
            sent: false,
            armed: true,
        };
        async move {
            let mut guard = guard;
            let params = build(id.clone())?;
            let params = add_meta(params, options.meta.as_ref(), token.as_ref())
                .map_err(|e| e.with_method(method))?;
            let request = Request {
                id: id.clone(),
                method: method.to_owned(),
                params,
            };
            tracing::debug!("sending");
            if self
                .shared
                .sender
                .send_related(Message::Request(request), options.related.clone())
                .await
                .is_err()
            {
                let reason = self
                    .closed_reason()
                    .unwrap_or_else(|| "the transport's writer has ended".to_owned());
                return Err(Error::closed(reason).with_method(method));
            }
            guard.sent = true;
            let mut rx = rx;
            let cancel = options.cancel.unwrap_or_default();
            let outcome = tokio::select! {
                r = &mut rx => {
                    guard.armed = false;
                    r.unwrap_or_else(|_| Err(Error::closed("the peer's driver has ended").with_method(method)))
                }
                _ = cancel.cancelled() => {
                    guard.armed = false;
                    let entry = lock(&self.core().table).remove(n);
                    match entry {
                        Some(entry) => {
                            let reason = cancel.reason();
                            if entry.notify_cancel {
                                self.send_cancelled(n, reason.clone()).await;
                            }
                            tracing::debug!(?reason, "cancelled by the caller");
                            Err(Error::cancelled(reason).with_method(method))
                        }
                        // The response (or the deadline) won the race.
                        None => rx.await.unwrap_or_else(|_| {
                            Err(Error::closed("the peer's driver has ended").with_method(method))
                        }),
                    }
                }
            };
            match &outcome {
                Ok(_) => tracing::debug!("answered"),
                Err(e) => tracing::debug!(error = %e, "failed"),
            }
            outcome
        }
        .instrument(span)
        .await
    }

    /// Sends a notification (no routing hint; see
    /// [`notify_related`](Self::notify_related)).
    ///
    /// Errors: [`Error::is_closed`] when the transport's writer has ended.
    pub async fn notify(&self, notification: Notification) -> Result<(), Error> {
        self.notify_related(notification, None).await
    }

    /// Sends a notification that belongs to the incoming request `related` (progress
    /// or log messages sent while handling it): the id is the routing hint of
    /// [`Sender::send_related`](switchboard_transport::Sender::send_related), so the
    /// Streamable HTTP server puts the notification on that request's SSE stream
    /// while it is open. Transports with one channel (stdio, memory) ignore it.
    ///
    /// Errors: [`Error::is_closed`] when the transport's writer has ended.
    pub async fn notify_related(
        &self,
        notification: Notification,
        related: Option<Id>,
    ) -> Result<(), Error> {
        let method = notification.method.clone();
        self.shared
            .sender
            .send_related(Message::Notification(notification), related)
            .await
            .map_err(|_| {
                Error::closed(
                    self.closed_reason()
                        .unwrap_or_else(|| "the transport's writer has ended".to_owned()),
                )
                .with_method(&method)
            })
    }

    /// Sends `notifications/cancelled{requestId, reason}`; errors are only logged.
    async fn send_cancelled(&self, id: u64, reason: Option<String>) {
        if let Some(n) = cancelled_notification(id, reason) {
            if let Err(e) = self.notify(n).await {
                tracing::debug!(error = %e, "could not send notifications/cancelled");
            }
        }
    }

    /// Changes the transport's batching rule (both directions); see
    /// `switchboard_transport::Sender::set_batching`.
    pub fn set_batching(&self, batching: switchboard_protocol::jsonrpc::Batching) {
        self.shared.sender.set_batching(batching);
    }

    /// Why the session closed, once the transport has closed.
    pub fn closed_reason(&self) -> Option<String> {
        lock(&self.core().table).closed_reason().map(str::to_owned)
    }

    /// Waits until every message queued on the transport before the call has been
    /// written out (see switchboard-transport's `Sender::flush`); `false` when the
    /// output had closed first. Unbounded: a reader that stopped reading holds it.
    pub async fn flush(&self) -> bool {
        self.shared.sender.flush().await
    }

    /// Whether the transport has closed (every request now fails at once).
    pub fn is_closed(&self) -> bool {
        self.closed_reason().is_some() || self.shared.sender.is_closed()
    }

    /// The configuration in force.
    pub fn config(&self) -> &PeerConfig {
        &self.core().config
    }
}

fn cancelled_notification(id: u64, reason: Option<String>) -> Option<Notification> {
    let params = CancelledNotificationParams {
        request_id: Some(Id::from(id)),
        reason,
        ..Default::default()
    };
    Notification::new(NOTIFICATION_CANCELLED, &params).ok()
}

/// Removes a request from the table when its future is dropped early, and sends
/// `notifications/cancelled` for it if it was sent.
struct PendingGuard {
    peer: Peer,
    id: u64,
    sent: bool,
    armed: bool,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let entry = lock(&self.peer.core().table).remove(self.id);
        let Some(entry) = entry else { return };
        if !(self.sent && entry.notify_cancel) {
            return;
        }
        let Some(n) = cancelled_notification(self.id, Some("request dropped by the caller".into()))
        else {
            return;
        };
        // Queued now when there is room, so that it goes out before anything the
        // caller sends or flushes after dropping the request (a program that
        // cancels, then flushes and closes, must not lose it); a full queue is
        // waited on in the background.
        let n = match self.peer.shared.sender.try_send(Message::Notification(n)) {
            Ok(()) => return,
            Err(e) if e.is_full() => match e.into_inner() {
                Outgoing::Message(m) => m,
                Outgoing::Batch(_) => return,
            },
            Err(_) => return,
        };
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let sender = self.peer.shared.sender.clone();
            rt.spawn(async move {
                let _ = sender.send(n).await;
            });
        }
    }
}

/// Merges the caller's [`RequestOptions::meta`] (each key checked first, see
/// there), then `progressToken`, into `params._meta` (`params`: an object, or
/// absent). With neither, `params` is returned untouched (no decode).
fn add_meta(
    params: Option<Box<RawValue>>,
    caller: Option<&Map<String, Value>>,
    token: Option<&ProgressToken>,
) -> Result<Option<Box<RawValue>>, Error> {
    let caller = caller.filter(|m| !m.is_empty());
    if caller.is_none() && token.is_none() {
        return Ok(params);
    }
    if let Some(why) = caller.and_then(|m| m.keys().find_map(|k| refuse_meta_key(k))) {
        return Err(Error::encode(serde::de::Error::custom(why)));
    }
    let mut map: Map<String, Value> = match &params {
        None => Map::new(),
        Some(p) => serde_json::from_str(p.get()).map_err(Error::encode)?,
    };
    let meta = map
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(meta) = meta else {
        return Err(Error::encode(serde::de::Error::custom(
            "params._meta is not an object",
        )));
    };
    if let Some(caller) = caller {
        for (k, v) in caller {
            meta.insert(k.clone(), v.clone());
        }
    }
    if let Some(token) = token {
        meta.insert(
            "progressToken".to_owned(),
            serde_json::to_value(token).map_err(Error::encode)?,
        );
    }
    serde_json::value::to_raw_value(&map)
        .map(Some)
        .map_err(Error::encode)
}

// ---------------------------------------------------------------------------
// The driver
// ---------------------------------------------------------------------------

/// `params._meta`, as far as the driver needs it.
#[derive(Deserialize)]
struct MetaPeek {
    #[serde(default, rename = "_meta")]
    meta: Option<Meta>,
}

impl Driver {
    /// Runs until the transport closes: routes every inbound message, times requests
    /// out, and at the end fails whatever is still pending, lets the requests being
    /// handled finish within [`PeerConfig::drain_on_close`] when it applies (see the
    /// module docs) and cancels the rest; returns after that. Cancel safe only in the
    /// sense that dropping it stops routing (pending requests then wait for their own
    /// cancellation).
    pub async fn run(mut self) {
        let span = self.dispatch.core.span.clone();
        // Messages that find nothing queued before them are routed by the
        // transport itself (HTTP sessions, stdio); the rest come through here.
        self.receiver.set_direct(self.dispatch.clone());
        async move {
            tracing::debug!("driver started");
            loop {
                let deadline = lock(&self.dispatch.core.table).next_deadline();
                let sleep = async move {
                    match deadline {
                        Some(d) => tokio::time::sleep_until(d).await,
                        None => std::future::pending::<()>().await,
                    }
                };
                tokio::select! {
                    event = self.receiver.recv() => match event {
                        Some(Inbound::Message(m)) => self.dispatch.on_message(m),
                        Some(Inbound::Batch(items)) => {
                            for item in items {
                                match item {
                                    Ok(m) => self.dispatch.on_message(m),
                                    // JSON-RPC 2.0 §6: an invalid item gets its own error
                                    // response (none for a broken notification). Sent
                                    // one by one; the transport puts the answers to a
                                    // batch in one array.
                                    Err(e) => {
                                        tracing::warn!(error = %e, "bad item in a batch");
                                        self.dispatch.send_in_background(
                                            e.wants_response().then(|| Message::Error(e.to_response())),
                                        );
                                    }
                                }
                            }
                        }
                        Some(Inbound::Failed { id, error }) => self.dispatch.on_failed(&id, error),
                        Some(Inbound::Closed { reason }) => {
                            self.receiver.clear_direct();
                            self.dispatch.close(Some(&reason)).await;
                            break;
                        }
                        None => {
                            self.receiver.clear_direct();
                            self.dispatch.close(None).await;
                            break;
                        }
                    },
                    _ = sleep => self.dispatch.sweep(),
                    _ = self.dispatch.core.wake.notified() => {}
                }
            }
            tracing::debug!("driver ended");
        }
        .instrument(span)
        .await
    }
}

/// Fails the request `entry`, sent under `sent`, that the peer answered under
/// `received`, an id that only spells it ([`Error::is_mismatched_id`]); an error
/// answer's message is added as a note.
fn mistyped(entry: crate::pending::Entry, sent: u64, received: Id, error: Option<&ErrorObject>) {
    let method = entry.method.clone();
    let mut e = Error::mismatched_id(Id::from(sent), received).with_method(&method);
    if let Some(error) = error {
        e = e.with_note(format!(
            "it was an error answer ({}: {})",
            error.code, error.message
        ));
    }
    entry.resolve(Err(e));
}

impl Dispatch {
    fn sweep(&self) {
        let expired = lock(&self.core.table).expired(Instant::now());
        for e in expired {
            tracing::info!(method = %e.method, id = e.id, after_ms = e.after.as_millis() as u64, "request timed out");
            if e.notify_cancel {
                let reason = format!("timed out after {} ms", e.after.as_millis());
                self.send_in_background(
                    cancelled_notification(e.id, Some(reason)).map(Message::Notification),
                );
            }
        }
    }

    /// Sends without blocking the driver (a full outbound queue must not stop reading).
    fn send_in_background(&self, message: Option<Message>) {
        let (Some(message), Some(shared)) = (message, self.shared.upgrade()) else {
            return;
        };
        // Queued at once when there is room, so that it is ahead of anything
        // queued later (a flush barrier included); a task waits for room only
        // when the queue is full.
        let message = match shared.sender.try_send(message) {
            Ok(()) => return,
            Err(e) if e.is_full() => match e.into_inner() {
                switchboard_transport::Outgoing::Message(m) => m,
                switchboard_transport::Outgoing::Batch(_) => return,
            },
            Err(_) => return,
        };
        let sender = shared.sender.clone();
        drop(shared);
        tokio::spawn(async move {
            let _ = sender.send(message).await;
        });
    }

    fn on_message(&self, message: Message) {
        match message {
            Message::Response(r) => {
                let answered = lock(&self.core.table).take_response(&r.id);
                match answered {
                    Answered::Request(entry) => entry.resolve(Ok(r.result)),
                    Answered::Mistyped { entry, sent } => mistyped(entry, sent, r.id, None),
                    Answered::Nothing => {}
                }
            }
            Message::Error(e) => match &e.id {
                Some(id) => {
                    let answered = lock(&self.core.table).take_response(id);
                    match answered {
                        Answered::Request(entry) => {
                            let method = entry.method.clone();
                            entry.resolve(Err(Error::protocol(e.error).with_method(&method)));
                        }
                        Answered::Mistyped { entry, sent } => {
                            mistyped(entry, sent, id.clone(), Some(&e.error))
                        }
                        Answered::Nothing => {}
                    }
                }
                None => tracing::warn!(
                    code = e.error.code,
                    message = %e.error.message,
                    "error response without an id; cannot route it"
                ),
            },
            Message::Request(r) => self.on_request(r),
            Message::Notification(n) => self.on_notification(n),
        }
    }

    /// The transport gave up on our request `id` ([`Inbound::Failed`]).
    fn on_failed(&self, id: &Id, error: ErrorObject) {
        let answered = lock(&self.core.table).take_response(id);
        if let Answered::Request(entry) | Answered::Mistyped { entry, .. } = answered {
            let method = entry.method.clone();
            entry.resolve(Err(Error::transport(error).with_method(&method)));
        }
    }

    fn on_notification(&self, n: Notification) {
        match n.method.as_str() {
            NOTIFICATION_PROGRESS => {
                let params = match n.params_as::<ProgressNotificationParams>() {
                    Ok(p) => p,
                    Err(e) => {
                        tracing::debug!(error = %e, "malformed progress notification; ignored");
                        return;
                    }
                };
                let cb = lock(&self.core.table).progress(&params.progress_token, Instant::now());
                match cb {
                    Some(cb) => contain("progress callback", || cb(params)),
                    None => {
                        tracing::debug!(token = %params.progress_token, "progress for no pending request; ignored")
                    }
                }
            }
            NOTIFICATION_CANCELLED => {
                let params = match n.params_as::<CancelledNotificationParams>() {
                    Ok(p) => p,
                    Err(e) => {
                        tracing::debug!(error = %e, "malformed cancelled notification; ignored");
                        return;
                    }
                };
                let Some(id) = params.request_id else { return };
                // The request is over for the peer: its slot is free now, not
                // when the handler's task next runs and drops it, so a request
                // sent right after the cancellation is not refused for it.
                let token = lock(&self.core.incoming).get_mut(&id).map(|r| {
                    r.slot = None;
                    r.cancel.clone()
                });
                match token {
                    Some(t) => {
                        tracing::debug!(%id, reason = ?params.reason, "peer cancelled its request");
                        match params.reason {
                            Some(r) => t.cancel_with(r),
                            None => t.cancel(),
                        }
                    }
                    None => tracing::debug!(%id, "cancellation of no running request; ignored"),
                }
            }
            _ => contain("notification handler", || self.handler.notification(n)),
        }
    }

    fn answer_now(&self, id: Id, error: ErrorObject) {
        self.send_in_background(Some(Message::Error(ErrorResponse::new(Some(id), error))));
    }

    fn on_request(&self, request: Request) {
        let Some(shared) = self.shared.upgrade() else {
            tracing::debug!(method = %request.method, "request after every handle was dropped; not answered");
            return;
        };
        let id = request.id.clone();
        let method = request.method.clone();
        let permit = match self.core.handlers.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                tracing::warn!(%method, %id, "too many concurrent requests; refused");
                self.answer_now(
                    id,
                    ErrorObject::new(
                        code::INTERNAL_ERROR,
                        format!(
                            "too many concurrent requests (limit {})",
                            self.core.config.max_concurrent_handlers
                        ),
                    ),
                );
                return;
            }
        };
        let cancel = CancelToken::new();
        {
            let mut incoming = lock(&self.core.incoming);
            if incoming.contains_key(&id) {
                drop(incoming);
                self.answer_now(
                    id,
                    ErrorObject::new(
                        code::INVALID_REQUEST,
                        "a request with this id is still being handled",
                    ),
                );
                return;
            }
            incoming.insert(
                id.clone(),
                Running {
                    cancel: cancel.clone(),
                    slot: Some(permit),
                },
            );
        }
        let progress_token = request
            .params
            .as_deref()
            // Most requests carry no `_meta`: the filter spares them a decode.
            .filter(|p| switchboard_protocol::jsonrpc::may_have_member(p.get(), "_meta"))
            .and_then(|p| serde_json::from_str::<MetaPeek>(p.get()).ok())
            .and_then(|m| m.meta)
            .and_then(|m| switchboard_protocol::types::meta::progress_token(&m));
        let peer = Peer { shared };
        let cx = HandlerContext {
            id: id.clone(),
            method: method.clone(),
            cancel: cancel.clone(),
            progress_token,
            peer: peer.clone(),
        };
        // The handler's synchronous part runs on the transport's reader task (or
        // the driver's): a panic there is contained like one in its future.
        let fut = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.handler.request(request, cx)
        }))
        .unwrap_or_else(|panic| -> HandlerFuture {
            Box::pin(async move { std::panic::resume_unwind(panic) })
        });
        let core = self.core.clone();
        let span = tracing::debug_span!(parent: &self.core.span, "incoming", %method, %id);
        let active = Active::new(core.clone());
        let mut run = Box::pin(
            async move {
                // Counts this handler until its answer is queued (or it is
                // dropped): the drain at the input's end waits for it.
                let _active = active;
                // The handler runs here, a panic in it is caught at each poll, and
                // cancellation drops it. Cancellation is polled first: a handler
                // that finishes because it saw the cancellation itself sends
                // nothing either.
                let result = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => None,
                    r = CatchUnwind(fut) => Some(r),
                };
                // Frees the handler's slot, before the response can reach the
                // peer.
                lock(&core.incoming).remove(&id);
                let Some(result) = result else {
                    tracing::debug!("cancelled; no response sent");
                    // No response will come: a Streamable HTTP POST stops
                    // waiting for one.
                    peer.shared.sender.forget(&id);
                    return;
                };
                let message = match result {
                    Ok(Ok(result)) => Message::Response(Response { id, result }),
                    Ok(Err(error)) => Message::Error(ErrorResponse::new(Some(id), error)),
                    Err(panic) => {
                        Message::Error(ErrorResponse::new(Some(id), handler_panicked(&*panic)))
                    }
                };
                // Without waiting when there is room, as nearly always: only a
                // full queue's wait is awaited, boxed, so this future, one per
                // request, stays a few hundred bytes.
                let sent = match peer.shared.sender.try_send(message) {
                    Err(e) if e.is_full() => match e.into_inner() {
                        Outgoing::Message(message) => {
                            Box::pin(peer.shared.sender.send(message)).await
                        }
                        Outgoing::Batch(_) => unreachable!("one message was sent"),
                    },
                    sent => sent,
                };
                if sent.is_err() {
                    tracing::debug!("transport closed before the response could be sent");
                }
            }
            .instrument(span),
        );
        // The first poll, here: most handlers finish at once. The waker is a no-op
        // because a future that is not ready goes to a task of its own, which
        // polls it again at once with that task's waker (a future registers the
        // waker of its latest poll), so no wake-up is lost.
        let mut first = std::task::Context::from_waker(std::task::Waker::noop());
        if run.as_mut().poll(&mut first).is_pending() {
            tokio::spawn(run);
        }
    }

    /// The transport's input closed (`None`: it ended without a reason): fails
    /// our pending requests (and closes the table to new ones), drains the
    /// requests being handled when that applies, cancels the rest, then tells the
    /// handler.
    async fn close(&self, reason: Option<&CloseReason>) {
        let text = reason.map_or_else(
            || "the transport ended without a reason".to_owned(),
            CloseReason::to_string,
        );
        let failed = lock(&self.core.table).fail_all(&text);
        self.core.input_closed.cancel_with(text.clone());
        self.drain(reason).await;
        let running: Vec<CancelToken> = lock(&self.core.incoming)
            .drain()
            .map(|(_, r)| r.cancel)
            .collect();
        for t in &running {
            t.cancel_with(format!("transport closed: {text}"));
        }
        tracing::info!(reason = %text, failed, handlers_cancelled = running.len(), "transport closed");
        contain("close handler", || self.handler.closed(&text));
    }

    /// Waits, at most [`PeerConfig::drain_on_close`], until every handler has
    /// ended (its answer queued) or the output closes; returns at once when the
    /// grace is zero, the reason is not a closed input with a usable output, or
    /// nothing is being handled.
    async fn drain(&self, reason: Option<&CloseReason>) {
        let grace = self.core.config.drain_on_close;
        let input_only = matches!(
            reason,
            Some(CloseReason::StdinClosed | CloseReason::PeerClosed)
        );
        if grace.is_zero() || !input_only {
            return;
        }
        // A clone for the wait only: the handlers hold the handle while they run.
        let Some(sender) = self.shared.upgrade().map(|s| s.sender.clone()) else {
            return;
        };
        if sender.is_closed() {
            return;
        }
        let running = self.core.active.load(Ordering::Acquire);
        if running == 0 {
            return;
        }
        tracing::info!(
            running,
            grace_ms = grace.as_millis() as u64,
            "input closed; answering the requests being handled"
        );
        let settled = async {
            loop {
                let notified = self.core.settled.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if self.core.active.load(Ordering::Acquire) == 0 {
                    return;
                }
                notified.await;
            }
        };
        tokio::select! {
            () = settled => tracing::debug!("every request being handled was answered"),
            () = tokio::time::sleep(grace) => tracing::info!(
                left = self.core.active.load(Ordering::Acquire),
                grace_ms = grace.as_millis() as u64,
                "the grace after the input closed ended; cancelling the rest"
            ),
            () = sender.closed() => tracing::debug!("the output closed during the grace"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_token_goes_into_meta() {
        let token = Id::from(7);
        let p = add_meta(None, None, Some(&token)).unwrap().unwrap();
        assert_eq!(p.get(), r#"{"_meta":{"progressToken":7}}"#);
        let raw = serde_json::value::to_raw_value(&serde_json::json!({"name":"t","_meta":{"x":1}}))
            .unwrap();
        let p = add_meta(Some(raw), None, Some(&token)).unwrap().unwrap();
        let v: Value = serde_json::from_str(p.get()).unwrap();
        assert_eq!(v["_meta"], serde_json::json!({"x":1,"progressToken":7}));
        let bad = serde_json::value::to_raw_value(&serde_json::json!([1])).unwrap();
        assert!(add_meta(Some(bad), None, Some(&token))
            .unwrap_err()
            .is_decode());
        let bad = serde_json::value::to_raw_value(&serde_json::json!({"_meta": 1})).unwrap();
        assert!(add_meta(Some(bad), None, Some(&token))
            .unwrap_err()
            .is_decode());
    }

    /// The caller's `RequestOptions::meta` is merged into `params._meta` (over a
    /// member of the same name there), the library's `progressToken` after it;
    /// a reserved, malformed or `progressToken` key is refused, nothing built.
    #[test]
    fn caller_meta_is_merged_and_checked() {
        let token = Id::from(7);
        let mut caller = Map::new();
        caller.insert("traceparent".into(), Value::from("00-ab-cd-01"));
        caller.insert("com.example/tenant".into(), Value::from("t1"));
        caller.insert("x".into(), Value::from(2));
        let p = add_meta(None, Some(&caller), None).unwrap().unwrap();
        let v: Value = serde_json::from_str(p.get()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"_meta": {"traceparent": "00-ab-cd-01", "com.example/tenant": "t1", "x": 2}})
        );
        let raw =
            serde_json::value::to_raw_value(&serde_json::json!({"name":"t","_meta":{"x":1,"y":1}}))
                .unwrap();
        let p = add_meta(Some(raw), Some(&caller), Some(&token))
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(p.get()).unwrap();
        assert_eq!(v["name"], "t");
        assert_eq!(
            v["_meta"],
            serde_json::json!({"x": 2, "y": 1, "traceparent": "00-ab-cd-01",
                "com.example/tenant": "t1", "progressToken": 7})
        );
        // An empty map is no map: params untouched, not even re-encoded.
        let raw = RawValue::from_string(r#"{ "name" : "t" }"#.to_owned()).unwrap();
        let p = add_meta(Some(raw), Some(&Map::new()), None)
            .unwrap()
            .unwrap();
        assert_eq!(p.get(), r#"{ "name" : "t" }"#);
        for key in [
            "progressToken",
            "io.modelcontextprotocol/protocolVersion",
            "io.modelcontextprotocol/clientInfo",
            "io.modelcontextprotocol/logLevel",
            "dev.mcp/x",
            "modelcontextprotocol.io/x",
            "mcp.dev/x",
            "-bad",
            "a b",
            "1abc.com/x",
        ] {
            let mut m = Map::new();
            m.insert(key.to_owned(), Value::from(1));
            let e = add_meta(None, Some(&m), Some(&token)).unwrap_err();
            assert!(e.is_decode(), "{key}");
            let why = std::error::Error::source(&e).unwrap().to_string();
            assert!(why.contains("RequestOptions::meta"), "{key}: {why}");
        }
        // Not reserved: the second label is not modelcontextprotocol/mcp (2025-11-25)
        // and mcp is not followed by a label (2025-06-18).
        let mut m = Map::new();
        m.insert("com.example.mcp/x".into(), Value::from(1));
        m.insert("baggage".into(), Value::from("k=v"));
        assert!(add_meta(None, Some(&m), None).is_ok());
    }

    /// `notify_related` and `RequestOptions::related` reach the transport as routing
    /// hints: over the Streamable HTTP server, a notification and a request made
    /// while handling a POSTed request arrive on that POST's SSE stream, before its
    /// response (which carries the client's answer to the request).
    #[tokio::test]
    async fn related_messages_travel_on_the_call_stream() {
        use switchboard_protocol::codec::{SseItem, SseParser};
        use switchboard_transport::http::server::{HttpServer, HttpServerConfig};

        struct Work;
        impl Handler for Work {
            fn request(&self, request: Request, cx: HandlerContext) -> HandlerFuture {
                Box::pin(async move {
                    if request.method == "initialize" {
                        return Ok(RawValue::from_string("{}".to_owned()).unwrap());
                    }
                    let n =
                        Notification::new("notifications/message", &serde_json::json!({"data": 1}))
                            .unwrap();
                    cx.peer()
                        .notify_related(n, Some(cx.id().clone()))
                        .await
                        .unwrap();
                    let options = RequestOptions::new()
                        .related(cx.id().clone())
                        .timeout(Duration::from_secs(10));
                    cx.peer()
                        .request("ask", None, options)
                        .await
                        .map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))
                })
            }
        }

        let limit = Duration::from_secs(20);
        tokio::time::timeout(limit, async {
            let (server, mut acceptor) =
                HttpServer::bind(HttpServerConfig::default()).await.unwrap();
            let url = server.url();
            tokio::spawn(async move {
                while let Some(session) = acceptor.accept().await {
                    let (_peer, driver) =
                        connect(session.transport, PeerConfig::default(), Arc::new(Work));
                    tokio::spawn(async move {
                        let _peer = _peer;
                        driver.run().await
                    });
                }
            });
            let c = reqwest::Client::builder().timeout(limit).build().unwrap();
            let post = |session: Option<&str>, body: Value| {
                let mut b = c
                    .post(&url)
                    .header("accept", "application/json, text/event-stream")
                    .header("content-type", "application/json")
                    .body(body.to_string());
                if let Some(s) = session {
                    b = b.header("mcp-session-id", s);
                }
                b
            };
            let init = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"}}});
            let resp = post(None, init).send().await.unwrap();
            assert_eq!(resp.status(), 200);
            let sid = resp.headers()["mcp-session-id"]
                .to_str()
                .unwrap()
                .to_owned();
            drop(resp.bytes().await.unwrap());

            let work = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "work"});
            let mut resp = post(Some(&sid), work).send().await.unwrap();
            assert_eq!(resp.status(), 200);
            let mut parser = SseParser::new();
            let mut got: Vec<Value> = Vec::new();
            while got.len() < 3 {
                let Some(chunk) = resp.chunk().await.unwrap() else {
                    break;
                };
                for item in parser.feed(&chunk) {
                    if let SseItem::Event(e) = item.unwrap() {
                        if e.data.is_empty() {
                            continue;
                        }
                        let v: Value = serde_json::from_str(&e.data).unwrap();
                        if v["method"] == "ask" {
                            let answer = serde_json::json!({"jsonrpc": "2.0", "id": v["id"],
                                "result": {"answered": true}});
                            let r = post(Some(&sid), answer).send().await.unwrap();
                            assert_eq!(r.status(), 202);
                        }
                        got.push(v);
                    }
                }
            }
            assert_eq!(got.len(), 3, "{got:?}");
            assert_eq!(got[0]["method"], "notifications/message");
            assert_eq!(got[1]["method"], "ask");
            assert_eq!(got[2]["id"], 2);
            assert_eq!(got[2]["result"], serde_json::json!({"answered": true}));
        })
        .await
        .expect("test timed out");
    }

    /// A cancelled request's handler slot is free at once: a request sent right
    /// behind the cancellation, with the limit reached, is served, not refused
    /// because the cancelled handler's task has not run yet.
    #[tokio::test]
    async fn a_cancelled_requests_slot_is_free_for_the_next_request() {
        struct Hold;
        impl Handler for Hold {
            fn request(&self, request: Request, _cx: HandlerContext) -> HandlerFuture {
                Box::pin(async move {
                    if request.method == "hold" {
                        std::future::pending::<()>().await;
                    }
                    Ok(RawValue::from_string("{}".to_owned()).unwrap())
                })
            }
        }
        tokio::time::timeout(Duration::from_secs(20), async {
            let (a, b) = switchboard_transport::memory::pair(&Default::default());
            let config = PeerConfig {
                max_concurrent_handlers: 1,
                ..PeerConfig::default()
            };
            let (_server, driver) = connect(a, config, Arc::new(Hold));
            tokio::spawn(driver.run());
            let (tx, mut rx) = b.split();
            let request = |id: i64, method: &str| {
                Message::Request(Request::new(id, method, &serde_json::json!({})).unwrap())
            };
            tx.send(request(1, "hold")).await.unwrap();
            // On this one-thread runtime the driver takes all three in a row,
            // before the held handler's task can run again.
            let cancel = Notification::new(
                NOTIFICATION_CANCELLED,
                &serde_json::json!({"requestId": 1, "reason": "enough"}),
            )
            .unwrap();
            tx.send(Message::Notification(cancel)).await.unwrap();
            tx.send(request(2, "next")).await.unwrap();
            match rx.recv().await {
                Some(switchboard_transport::Inbound::Message(Message::Response(r))) => {
                    assert_eq!(r.id, Id::from(2));
                }
                other => panic!("expected the answer to 2, got {other:?}"),
            }
        })
        .await
        .expect("test timed out");
    }

    /// A handler runs first in the driver's task; one that has to wait goes on in
    /// a task of its own, wakes up when it should (its first poll had no real
    /// waker) and holds up neither the driver nor later requests.
    #[tokio::test]
    async fn a_handler_that_waits_goes_on_in_its_own_task() {
        struct Gatekeeper(Arc<Notify>);
        impl Handler for Gatekeeper {
            fn request(&self, request: Request, _cx: HandlerContext) -> HandlerFuture {
                let gate = self.0.clone();
                Box::pin(async move {
                    match request.method.as_str() {
                        "wait" => gate.notified().await,
                        "yield" => tokio::task::yield_now().await,
                        "release" => gate.notify_one(),
                        _ => {}
                    }
                    Ok(RawValue::from_string(format!("\"{}\"", request.method)).unwrap())
                })
            }
        }
        tokio::time::timeout(Duration::from_secs(20), async {
            let (a, b) = switchboard_transport::memory::pair(&Default::default());
            let (_server, driver) = connect(
                a,
                PeerConfig::default(),
                Arc::new(Gatekeeper(Arc::new(Notify::new()))),
            );
            tokio::spawn(driver.run());
            let (tx, mut rx) = b.split();
            let request = |id: i64, method: &str| {
                Message::Request(Request::new(id, method, &serde_json::json!({})).unwrap())
            };
            tx.send(request(1, "wait")).await.unwrap();
            tx.send(request(2, "yield")).await.unwrap();
            async fn next(rx: &mut Receiver) -> (Id, String) {
                match rx.recv().await {
                    Some(switchboard_transport::Inbound::Message(Message::Response(r))) => {
                        (r.id, r.result.get().to_owned())
                    }
                    other => panic!("expected a response, got {other:?}"),
                }
            }
            let mut order = vec![next(&mut rx).await];
            tx.send(request(3, "release")).await.unwrap();
            order.push(next(&mut rx).await);
            order.push(next(&mut rx).await);
            assert_eq!(order[0], (Id::from(2), "\"yield\"".to_owned()));
            order[1..].sort_by_key(|(id, _)| id.to_string());
            assert_eq!(
                order[1..],
                [
                    (Id::from(1), "\"wait\"".to_owned()),
                    (Id::from(3), "\"release\"".to_owned())
                ]
            );
        })
        .await
        .expect("test timed out");
    }

    /// A handler that panics, at its first poll or a later one, answers its
    /// request with -32603; the peer goes on serving the next request.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panicking_handler_answers_internal_error_and_the_peer_goes_on() {
        struct Panicky;
        impl Handler for Panicky {
            fn request(&self, request: Request, _cx: HandlerContext) -> HandlerFuture {
                Box::pin(async move {
                    match request.method.as_str() {
                        "boom" => panic!("boom at once"),
                        "later" => {
                            tokio::task::yield_now().await;
                            panic!("boom after a yield")
                        }
                        _ => Ok(RawValue::from_string("{}".to_owned()).unwrap()),
                    }
                })
            }
        }
        tokio::time::timeout(Duration::from_secs(20), async {
            let (a, b) = switchboard_transport::memory::pair(&Default::default());
            let (_server, server_driver) = connect(a, PeerConfig::default(), Arc::new(Panicky));
            let (client, client_driver) =
                connect(b, PeerConfig::default(), Arc::new(MethodNotFound));
            tokio::spawn(server_driver.run());
            tokio::spawn(client_driver.run());
            for method in ["boom", "later"] {
                let e = client
                    .request(method, None, RequestOptions::new())
                    .await
                    .unwrap_err();
                let object = e.error_object().expect("a JSON-RPC error");
                assert_eq!(object.code, code::INTERNAL_ERROR, "{method}");
                assert!(
                    object.message.contains("handler failed"),
                    "{}",
                    object.message
                );
                let ok = client
                    .request("fine", None, RequestOptions::new())
                    .await
                    .unwrap();
                assert_eq!(ok.get(), "{}");
            }
        })
        .await
        .expect("test timed out");
    }

    #[tokio::test]
    async fn cancel_token_fires_once() {
        let t = CancelToken::new();
        let t2 = t.clone();
        let waiter = tokio::spawn(async move { t2.cancelled().await });
        t.cancel_with("first");
        t.cancel_with("second");
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap();
        assert!(t.is_cancelled());
        assert_eq!(t.reason().as_deref(), Some("first"));
        // Already fired: completes at once.
        tokio::time::timeout(Duration::from_secs(5), t.cancelled())
            .await
            .unwrap();
    }
}
