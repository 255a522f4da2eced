//! One upstream stdio server behind the bridge: a supervised child process that
//! many downstream callers share (MCP "Transports → stdio", client side; the
//! lifecycle of 2024-11-05 to 2025-11-25, which the bridge runs itself).
//!
//! ```text
//! supervise:  spawn ─> initialize (bridge's or the client's params) ─> initialized
//!               ─> Ready ─> route every line until the child's stdout ends
//!               ─> fail every call in flight at once ─> backoff ─> spawn ...
//!               (without `restart`, a per-session child: Down for good instead)
//!
//! call(request, owner) ─> the request gets an upstream id of our own (a counter),
//!     its progress token one of ours ("sb-<id>"); the Call yields what belongs to it:
//!       progress (token mapped back), logs and server→client requests made while
//!       it runs, then the response (still carrying the upstream id) or a failure.
//! ```
//!
//! Routing of what the child sends:
//! - a response: to the call with that id (ids are ours, so two downstream callers
//!   never collide);
//! - `notifications/progress`: to the call whose token it carries;
//! - a server→client request (sampling, elicitation, roots) and
//!   `notifications/message`: to the call in flight when exactly one downstream
//!   owner has calls in flight (the latest of them); a request with no such owner is
//!   refused to the child with -32603 (never guessed across owners), a log message
//!   goes to every owner only when no call is in flight at all;
//! - `notifications/cancelled` for one of the child's own open requests: with
//!   `requestId` rewritten to the id the request was handed on under, to where
//!   the request went (its call, or the owning session; a shared child's request
//!   whose call is over: to every session, where only the one holding it passes
//!   it on), and the request is forgotten; for any other id it is dropped;
//! - `ping`: answered here;
//! - every other notification (list changes, resource updates): broadcast to every
//!   owner.
//!
//! A call that ends without the child's answer (cancelled, timed out, dropped)
//! takes the child's open requests made for it along: each is answered here
//! with -32603, so the child never waits for an answer nobody will give.
//!
//! Payloads are never decoded on the way: a result is forwarded as the raw JSON it
//! arrived as; only request params that carry a progress token, and progress
//! notifications, are parsed to map the token.
//!
//! This module must not know about HTTP, sessions or the eras of downstream
//! clients.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use serde_json::{Map, Value};

mod connector;
mod handshake;
mod router;

pub use connector::Connector;
use connector::{Connection, Link};

use crate::classify::{ListKind, Notice, Route};
use crate::error::Error;
use crate::gauge::{Counted, Gauge};
use crate::raw::RawObject;
use router::{Router, Target};
use switchboard_protocol::jsonrpc::{
    code, ErrorObject, ErrorResponse, Id, Message, Notification, Request, Response,
};
use switchboard_protocol::types as t;
use switchboard_protocol::types::{meta, InitializeResult};
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::http::client::HttpClientHandle;
use switchboard_transport::{CloseReason, DirectSink, Inbound, Outgoing, Sender, TransportConfig};
use tokio::sync::{broadcast, mpsc, oneshot, watch, OwnedSemaphorePermit};
use tracing::{debug, info, warn, Instrument};

/// How many events (progress, logs, server requests) wait for one call's consumer
/// before further progress and log notifications for it are dropped.
const CALL_QUEUE: usize = 64;
/// How many broadcast notifications wait for a slow owner before it misses some.
const BROADCAST_QUEUE: usize = 256;
/// Why calls fail when a child is stopped on purpose.
const STOPPED: &str =
    "stopped on purpose (its session ended, a reload restarted it, or switchboard is shutting down)";
/// How long a child has to answer the `server/discover` probe.
const DISCOVER_PROBE: Duration = Duration::from_secs(5);
/// A child that stayed up this long resets the restart backoff.
const STABLE_AFTER: Duration = Duration::from_secs(30);

/// The handshake's first question to a new upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ask {
    /// `initialize` first, `server/discover` only if that is refused.
    Initialize,
    /// `server/discover` first (bounded: a legacy server may ignore it) and,
    /// when the upstream speaks 2026-07-28, use it that way (no `initialize`:
    /// [`InitInfo::modern`]).
    Discover,
}

/// Whether a child that exits is replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Restart {
    /// A new child, after a backoff (the shared child).
    Always,
    /// None (a per-session child, whose server state dies with it): the
    /// status stays [`Status::Down`] for good and calls fail at once; its
    /// owner ends the session.
    Never,
}

/// How one upstream child is run and restarted.
#[derive(Debug, Clone)]
pub(crate) struct UpstreamConfig {
    /// Its name, for logs and errors.
    pub name: String,
    /// How it is reached.
    pub connector: Connector,
    /// Queue sizes and the line limit of a child's pipes.
    pub transport: TransportConfig,
    /// The `initialize` params sent to every (re)started child.
    pub init_params: Box<RawValue>,
    /// Which question the handshake asks first.
    pub first: Ask,
    /// How long the child has to answer `initialize`.
    pub init_timeout: Duration,
    /// Whether a child that exits is replaced.
    pub restart: Restart,
    /// The first restart delay; doubled after each failure up to `backoff_max`.
    pub backoff_initial: Duration,
    /// The longest restart delay.
    pub backoff_max: Duration,
    /// How long a new call waits for a (re)starting child before failing.
    pub ready_wait: Duration,
    /// The most calls in flight on the child at once; more wait (in arrival
    /// order) for one to finish, up to `queue_wait`, then fail. A server has
    /// limits of its own (the switchboard library answers -32603 beyond 64
    /// concurrent requests): queueing here turns a burst into waiting, not errors.
    pub max_in_flight: usize,
    /// How long a call waits for a free slot.
    pub queue_wait: Duration,
}

/// What the child said to `initialize`.
#[derive(Debug)]
pub(crate) struct InitInfo {
    /// The result exactly as the child sent it.
    pub raw: Box<RawValue>,
    /// The same, decoded.
    pub result: InitializeResult,
    /// The child speaks only 2026-07-28: it refused `initialize` and answered
    /// `server/discover`; `raw` and `result` are made from its discover result
    /// (`protocolVersion` 2026-07-28), and every request must carry the
    /// revision and the client's capabilities in its `_meta`.
    pub modern: bool,
}

/// Where the child is in its life.
#[derive(Debug, Clone)]
pub(crate) enum Status {
    /// Being spawned or initialized.
    Starting,
    /// Initialized and serving.
    Ready(Arc<InitInfo>),
    /// Not running; restarting after a delay (for good, without
    /// [`UpstreamConfig::restart`]). The reason, for errors and `/readyz`.
    Down(String),
    /// Shut down for good.
    Stopped,
}

/// Something that belongs to one call, other than its end.
#[derive(Debug)]
pub(crate) enum CallEvent {
    /// A notification for this call: progress (with the caller's own token back),
    /// a log message, or `notifications/cancelled` for one of the requests below.
    Notification(Notification),
    /// A server→client request made while this call runs, under an id of ours
    /// (not the child's own, which a restarted child reuses): answer it with
    /// [`Upstream::respond`], under that id.
    Request(Request),
}

/// One step of a [`Call`].
#[derive(Debug)]
pub(crate) enum Step {
    /// A notification or request belonging to the call.
    Event(CallEvent),
    /// The call's response or error response, still with the upstream id.
    Done(Message),
    /// The call cannot complete: the child died, or the bridge is stopping.
    Failed(Error),
}

/// A request in flight upstream.
pub(crate) struct Call {
    upstream: Upstream,
    id: u64,
    /// Boxed: the channel's first block is allocated with the call, and 32 boxes
    /// take a tenth of the room of 32 events (most calls carry none).
    events: mpsc::Receiver<Box<CallEvent>>,
    done: oneshot::Receiver<Result<Message, String>>,
    /// Notifications taken off the queue by [`Call::try_request`], yielded first.
    stash: std::collections::VecDeque<CallEvent>,
    finished: bool,
    /// The call's slot among [`UpstreamConfig::max_in_flight`], freed on drop.
    _slot: OwnedSemaphorePermit,
    /// With metrics on: when it was sent.
    started: Option<Instant>,
}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Call {
    /// With metrics on, how long since it was sent.
    pub(crate) fn took(&self) -> Option<Duration> {
        self.started.map(|at| at.elapsed())
    }

    /// Waits up to `wait` for the call's answer, passing over its events
    /// (progress, logs, requests): `Ok(Ok(answer))` (a response or error
    /// response, still with the upstream id), `Ok(Err(why))` when the call
    /// failed ([`Step::Failed`]), `Err(())` when `wait` passed first, after which
    /// the call is cancelled upstream ("timed out in the bridge").
    pub(crate) async fn answer_within(
        mut self,
        wait: Duration,
    ) -> Result<Result<Message, Error>, ()> {
        let outcome = tokio::time::timeout(wait, async {
            loop {
                match self.next().await {
                    Step::Event(_) => continue,
                    Step::Done(m) => return Ok(m),
                    Step::Failed(why) => return Err(why),
                }
            }
        })
        .await;
        match outcome {
            Ok(answer) => Ok(answer),
            Err(_) => {
                self.cancel("timed out in the bridge").await;
                Err(())
            }
        }
    }

    /// The next thing that belongs to this call. After `Done` or `Failed` it must
    /// not be called again. Cancel safe.
    pub(crate) async fn next(&mut self) -> Step {
        if let Some(event) = self.stash.pop_front() {
            return Step::Event(event);
        }
        tokio::select! {
            biased;
            Some(event) = self.events.recv() => Step::Event(*event),
            done = &mut self.done => {
                self.finished = true;
                match done {
                    Ok(Ok(message)) => Step::Done(message),
                    Ok(Err(why)) => Step::Failed(Error::Upstream(why)),
                    Err(_) => Step::Failed(Error::Upstream("the upstream dropped the call".to_owned())),
                }
            }
        }
    }

    /// A server→client request of this call that is already queued, if any,
    /// without waiting; notifications met on the way are kept for
    /// [`next`](Self::next), in order.
    pub(crate) fn try_request(&mut self) -> Result<Request, ()> {
        while let Ok(event) = self.events.try_recv() {
            match *event {
                CallEvent::Request(r) => return Ok(r),
                other => self.stash.push_back(other),
            }
        }
        Err(())
    }

    /// Tells the child the call is cancelled (`notifications/cancelled` with our
    /// upstream id; every revision, "Utilities → Cancellation") and forgets it.
    /// The child's open requests made for this call are answered with an error
    /// ([`Upstream::forget`]).
    pub(crate) async fn cancel(mut self, reason: &str) {
        self.finished = true;
        let (removed, answers) = self.upstream.forget(self.id, reason);
        if removed {
            let params = serde_json::json!({ "requestId": self.id, "reason": reason });
            if let Ok(n) = Notification::new(t::NOTIFICATION_CANCELLED, &params) {
                self.upstream.send(Message::Notification(n)).await;
            }
        }
        for answer in answers {
            self.upstream.send(answer).await;
        }
    }
}

/// Why [`Upstream::register`] did not register a call.
enum Refused {
    /// No child is running (it went down, a new one is starting): the request
    /// comes back untouched.
    Restarting(Request),
    /// It cannot be made (the params are not valid JSON-RPC params).
    Failed(String),
}

/// What [`Upstream::try_call`] did.
pub(crate) enum TryCall {
    /// Registered; queued to the child, or (the child's queue being full) with
    /// the message still to send on that sender.
    Started(Call, Option<Box<(Sender, Message)>>),
    /// It cannot be made (the child went away, the params are not an object).
    Failed(Error),
    /// It would have to wait for the child or a slot: use [`Upstream::call`].
    Later(Request),
}

impl Drop for Call {
    fn drop(&mut self) {
        if !self.finished {
            let (_, answers) = self
                .upstream
                .forget(self.id, "the call it was made for ended without an answer");
            let sender = lock(&self.upstream.inner.table).sender.clone();
            send_detached(sender, answers);
        }
    }
}

/// The owner of the bridge's own calls to the child (its `tools/list` fetches,
/// module `catalog::tools`): never the owner of a server→client request or a log of the
/// child's, and never a rival of a client's call for one. Sessions and
/// exchanges get owners from 1 (`Core::next_owner`).
pub(crate) const BRIDGE_OWNER: u64 = router::GATEWAY_OWNER;

/// What the table keeps per call besides its routing ([`router::Entry`]).
struct Slot {
    done: oneshot::Sender<Result<Message, String>>,
    events: mpsc::Sender<Box<CallEvent>>,
    /// Counted in [`Inner::in_flight`] while the slot lives; `None` for a
    /// 2026-07-28 `subscriptions/listen`, open until its client leaves, and
    /// for the gateway's own calls ([`BRIDGE_OWNER`]): not requests in
    /// flight.
    _in_flight: Option<Counted>,
    /// With metrics on: when and what was asked (`mcp.client.operation.duration`).
    timing: Option<Box<Timing>>,
}

/// A call's start and labels, for its metrics.
struct Timing {
    at: Instant,
    method: &'static str,
    tool: Option<crate::metrics::Name>,
    /// With traces on: its client span.
    span: Option<crate::trace::Span>,
}

/// The child's sender (while it runs) and the routing table.
#[derive(Default)]
struct Table {
    sender: Option<Sender>,
    router: Router<Slot>,
}

/// The error the child gets for a request of its own that nobody will answer.
fn abandoned(child: Id, why: &str) -> Message {
    Message::Error(ErrorResponse::new(
        Some(child),
        ErrorObject::new(
            code::INTERNAL_ERROR,
            format!("the bridge gave up on this request: {why}"),
        ),
    ))
}

/// Sends `messages` to the child without waiting: queued when there is room,
/// else by a task of their own (never from a synchronous caller's stack).
fn send_detached(sender: Option<Sender>, messages: Vec<Message>) {
    let Some(sender) = sender else {
        if !messages.is_empty() {
            debug!("the upstream server is not running; answers dropped");
        }
        return;
    };
    for message in messages {
        match sender.try_send(message) {
            Ok(()) => {}
            Err(e) if e.is_full() => {
                let Outgoing::Message(message) = e.into_inner() else {
                    continue;
                };
                let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                    continue;
                };
                let sender = sender.clone();
                runtime.spawn(async move {
                    let _ = sender.send(message).await;
                });
            }
            Err(_) => debug!("the upstream server went away; answer dropped"),
        }
    }
}

/// Tool name → its `x-mcp-header` (argument, header) pairs.
type ToolHeaderMap = std::collections::HashMap<String, Vec<(String, String)>>;

struct Inner {
    name: String,
    config: UpstreamConfig,
    /// Each tool's `x-mcp-header` (argument, header) pairs, for the
    /// `Mcp-Param-*` headers of a 2026-07-28 `tools/call` over Streamable
    /// HTTP ([`Upstream::set_tool_headers`]), and the client they go to
    /// while connected.
    tool_headers: Mutex<(ToolHeaderMap, Option<HttpClientHandle>)>,
    /// How many `list_changed` notifications of each list the upstream has
    /// sent ([`Upstream::list_changes`]), by [`ListKind::index`].
    list_changes: [AtomicU64; 3],
    status: watch::Sender<Status>,
    table: Mutex<Table>,
    broadcast: broadcast::Sender<Notification>,
    next_id: AtomicU64,
    stop: watch::Sender<bool>,
    stopped: Mutex<Option<tokio::task::JoinHandle<()>>>,
    restarts: AtomicU64,
    /// [`UpstreamConfig::max_in_flight`] slots.
    slots: Arc<tokio::sync::Semaphore>,
    /// Where a server→client request made while no call is in flight goes, when
    /// one downstream owns this child (a per-session child): to that session;
    /// and the child's cancellation of such a request, or of one whose call
    /// has ended.
    orphans: Option<mpsc::Sender<CallEvent>>,
    /// The child has been ready at least once ([`Upstream::ready`]).
    was_ready: std::sync::atomic::AtomicBool,
    /// Why its last start failed, while no start since has succeeded
    /// ([`Upstream::lapse`]); `lapsed` says whether it holds one, read on
    /// every call without the lock.
    lapse: Mutex<Option<String>>,
    lapsed: std::sync::atomic::AtomicBool,
    /// The calls in flight (listens excepted): what a drain waits for.
    in_flight: Gauge,
    /// [`Inner::label`] as a metric label value, made once.
    label_value: OnceLock<crate::metrics::Name>,
    /// The client operation histogram it observed into last.
    last: Mutex<crate::metrics::Last>,
    /// The tool names of its last `tools/list` page, with metrics on (the
    /// live page's).
    tool_names: Mutex<Vec<String>>,
    /// When it was made, among the upstreams of this process: a reload's
    /// new upstream of a name outranks the old one it replaces in the
    /// state series, whichever of them writes last.
    generation: u64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A lapsed upstream's state as a caller reads it: `is down: it could not
/// be started: …`, or `is starting again: …`.
fn lapsed(status: &Status, why: &str) -> String {
    let state = match status {
        Status::Starting => "starting again",
        _ => "down",
    };
    format!("the upstream server is {state}: it could not be started: {why}")
}

impl Inner {
    /// Whether [`Upstream::lapse`] holds a reason.
    fn lapse_is_set(&self) -> bool {
        self.lapsed.load(Ordering::Acquire)
    }

    /// Sets (`Some`) or clears the lapse.
    fn set_lapse(&self, why: Option<String>) {
        let mut lapse = lock(&self.lapse);
        self.lapsed.store(why.is_some(), Ordering::Release);
        *lapse = why;
    }

    /// Its name as a metric label: the upstream's, without the `#…` that
    /// tells its children apart (one series per upstream, not per session).
    fn label(&self) -> &str {
        self.name.split('#').next().unwrap_or(&self.name)
    }

    /// Whether it is an upstream's shared connection (not a session's own
    /// child): the one whose state is the upstream's.
    fn is_shared(&self) -> bool {
        self.name
            .split_once('#')
            .is_none_or(|(_, which)| which == "shared")
    }

    /// `network.transport`: `pipe` for a child's stdio, `tcp` for HTTP.
    fn network_transport(&self) -> &'static str {
        match self.config.connector {
            Connector::Stdio(_) => "pipe",
            _ => "tcp",
        }
    }
}

/// A supervised upstream child, shared by cloning.
#[derive(Clone)]
pub(crate) struct Upstream {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("name", &self.inner.name)
            .finish_non_exhaustive()
    }
}

impl Upstream {
    /// Starts supervising: spawns the child now (on the current runtime) and
    /// restarts it whenever it exits, until [`shutdown`](Self::shutdown).
    /// `orphans`: where the server→client requests the child makes while no call
    /// is in flight go (the one downstream session that owns a per-session
    /// child), in place from the first line the child writes; `None` refuses them.
    pub(crate) fn start(
        config: UpstreamConfig,
        orphans: Option<mpsc::Sender<CallEvent>>,
    ) -> Upstream {
        let config_slots = config.max_in_flight.max(1);
        let (status, _) = watch::channel(Status::Starting);
        let (broadcast, _) = broadcast::channel(BROADCAST_QUEUE);
        let (stop, stop_rx) = watch::channel(false);
        static GENERATIONS: AtomicU64 = AtomicU64::new(0);
        let inner = Arc::new(Inner {
            generation: GENERATIONS.fetch_add(1, Ordering::Relaxed),
            last: Default::default(),
            tool_names: Default::default(),
            name: config.name.clone(),
            config,
            status,
            table: Mutex::new(Table::default()),
            broadcast,
            next_id: AtomicU64::new(1),
            stop,
            stopped: Mutex::new(None),
            restarts: AtomicU64::new(0),
            orphans,
            was_ready: std::sync::atomic::AtomicBool::new(false),
            lapse: Mutex::new(None),
            lapsed: std::sync::atomic::AtomicBool::new(false),
            in_flight: Gauge::default(),
            label_value: OnceLock::new(),
            tool_headers: Mutex::new(Default::default()),
            list_changes: Default::default(),
            slots: Arc::new(tokio::sync::Semaphore::new(config_slots)),
        });
        let span = tracing::info_span!("upstream", upstream = %inner.name);
        let task = tokio::spawn(supervise(inner.clone(), stop_rx).instrument(span));
        *lock(&inner.stopped) = Some(task);
        Upstream { inner }
    }

    /// The current status.
    pub(crate) fn status(&self) -> Status {
        self.inner.status.borrow().clone()
    }

    /// Whether it is shut down for good ([`Status::Stopped`]), without
    /// copying the status.
    pub(crate) fn is_stopped(&self) -> bool {
        matches!(*self.inner.status.borrow(), Status::Stopped)
    }

    /// Whether it was ever ready (initialized): a child that never was holds
    /// no state of its session's.
    pub(crate) fn was_ready(&self) -> bool {
        self.inner.was_ready.load(Ordering::Relaxed)
    }

    /// Why it is known to be down: its last start failed (it could not be
    /// spawned or reached, exited or went silent before it was initialized,
    /// or refused `initialize`) and no start since has succeeded. `None`
    /// while it is ready, on its first start, and while it restarts after
    /// a crash of a child that was serving. Set before the status it goes
    /// with is sent: a waiter on [`Upstream::watch_status`] sees it.
    pub(crate) fn lapse(&self) -> Option<String> {
        if !self.inner.lapse_is_set() {
            return None;
        }
        lock(&self.inner.lapse).clone()
    }

    /// [`Upstream::lapse`] as the error a call gets.
    pub(crate) fn lapsed(&self) -> Option<Error> {
        let why = self.lapse()?;
        Some(Error::Upstream(lapsed(&self.status(), &why)))
    }

    /// The status as it changes.
    pub(crate) fn watch_status(&self) -> watch::Receiver<Status> {
        self.inner.status.subscribe()
    }

    /// Its status for reports (`/readyz`, the live page): `{"state":
    /// "ready"|"starting"|"down"|"stopped", "protocolVersion"? (ready),
    /// "reason"? (down)}`.
    pub(crate) fn report(&self) -> Map<String, Value> {
        let mut v = Map::new();
        let (state, extra) = match &*self.inner.status.borrow() {
            Status::Ready(info) => {
                let version = match info.modern {
                    true => ProtocolVersion::V2026_07_28.as_str(),
                    false => &info.result.protocol_version,
                };
                ("ready", Some(("protocolVersion", version.to_owned())))
            }
            // Starting again after a start that failed: why it failed.
            Status::Starting => ("starting", self.lapse().map(|why| ("reason", why))),
            Status::Down(why) => ("down", Some(("reason", why.clone()))),
            Status::Stopped => ("stopped", None),
        };
        v.insert("state".into(), state.into());
        if let Some((key, value)) = extra {
            v.insert(key.into(), value.into());
        }
        v
    }

    /// The tool names of its last `tools/list` page, as it named them
    /// (kept with metrics on).
    pub(crate) fn tool_names(&self) -> Vec<String> {
        lock(&self.inner.tool_names).clone()
    }

    /// How it is reached: `stdio`, `streamable_http` or `sse`.
    pub(crate) fn transport(&self) -> &'static str {
        match self.inner.config.connector {
            Connector::Stdio(_) => "stdio",
            Connector::StreamableHttp(_) | Connector::Auto(..) => "streamable_http",
            Connector::Sse(..) => "sse",
        }
    }

    /// How many times the child has been started after the first time.
    pub(crate) fn restarts(&self) -> u64 {
        self.inner.restarts.load(Ordering::Relaxed)
    }

    /// Waits up to `wait` for the child to be initialized; its `initialize` result,
    /// or why it is not there. While its last start failed ([`Upstream::lapse`]:
    /// the command cannot be started, it exits or refuses `initialize`, its URL
    /// refuses connections) it fails at once, naming its state and that
    /// reason, rather than after `wait` (a restart seldom mends a missing
    /// command or bad arguments). A child that crashed while serving is waited
    /// for through its restart.
    pub(crate) async fn ready(&self, wait: Duration) -> Result<Arc<InitInfo>, Error> {
        self.wait_ready(wait).await.map_err(Error::Upstream)
    }

    async fn wait_ready(&self, wait: Duration) -> Result<Arc<InitInfo>, String> {
        // The common case, without a timer.
        if let Status::Ready(info) = &*self.inner.status.borrow() {
            return Ok(info.clone());
        }
        let mut rx = self.inner.status.subscribe();
        let outcome = tokio::time::timeout(wait, async {
            loop {
                {
                    let status = rx.borrow_and_update();
                    match &*status {
                        Status::Ready(info) => return Ok(info.clone()),
                        Status::Stopped => {
                            return Err("the upstream server was shut down".to_owned())
                        }
                        // Set before the status that goes with it.
                        _ if self.inner.lapse_is_set() => {
                            return Err(lapsed(&status, &self.lapse().unwrap_or_default()))
                        }
                        // Not restarted: nothing to wait for.
                        Status::Down(why) if self.inner.config.restart == Restart::Never => {
                            return Err(format!("the upstream server is gone: {why}"))
                        }
                        _ => {}
                    }
                }
                if rx.changed().await.is_err() {
                    return Err("the upstream server was shut down".to_owned());
                }
            }
        })
        .await;
        match outcome {
            Ok(r) => r,
            Err(_) => Err(match self.status() {
                Status::Down(why) => format!("the upstream server is not running: {why}"),
                _ => format!("the upstream server did not become ready within {wait:?}"),
            }),
        }
    }

    /// Its name as a metric label (the upstream's, not a session child's).
    pub(crate) fn label(&self) -> &str {
        self.inner.label()
    }

    /// [`Upstream::label`] as a shared label value, made once.
    pub(crate) fn label_value(&self) -> crate::metrics::Name {
        let inner = &self.inner;
        inner
            .label_value
            .get_or_init(|| crate::metrics::Name::new(inner.label()))
            .clone()
    }

    /// Notifications not tied to any call (list changes, resource updates, logs
    /// while idle). A receiver that falls more than 256 behind misses the oldest.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Notification> {
        self.inner.broadcast.subscribe()
    }

    /// Sends `n` to every [`subscribe`](Self::subscribe)r as if the server
    /// had (a list the drift guard now serves differently).
    pub(crate) fn announce(&self, n: Notification) {
        let _ = self.inner.broadcast.send(n);
    }

    /// Sends `request` upstream under an id of ours, for `owner` (a downstream
    /// session or exchange; used only to route server→client requests and logs).
    ///
    /// Errors (as text for the downstream error response): the child is not ready
    /// within [`UpstreamConfig::ready_wait`], or it went away.
    pub(crate) async fn call(&self, request: Request, owner: u64) -> Result<Call, Error> {
        self.open_call(request, owner)
            .await
            .map_err(Error::Upstream)
    }

    /// [`call`](Self::call), failing with the reason's text.
    async fn open_call(&self, mut request: Request, owner: u64) -> Result<Call, String> {
        let ready_by = Instant::now() + self.inner.config.ready_wait;
        loop {
            self.wait_ready(ready_by.saturating_duration_since(Instant::now()))
                .await?;
            let wait = self.inner.config.queue_wait;
            let slot = match self.inner.slots.clone().try_acquire_owned() {
                Ok(slot) => Ok(Ok(slot)),
                // Full (or closed): wait in line, bounded.
                Err(_) => {
                    tokio::time::timeout(wait, self.inner.slots.clone().acquire_owned()).await
                }
            };
            let slot = match slot {
                Ok(Ok(slot)) => slot,
                Ok(Err(_)) => return Err("the upstream server was shut down".to_owned()),
                Err(_) => {
                    return Err(format!(
                        "the upstream server is busy: {} calls in flight for over {wait:?}",
                        self.inner.config.max_in_flight
                    ))
                }
            };
            match self.register(request, owner, slot) {
                Ok((call, sender, message)) => {
                    if sender.send(message).await.is_err() {
                        return Err("the upstream server went away".to_owned());
                    }
                    return Ok(call);
                }
                // The child went down while this call waited for a slot: it never
                // reached the child, so it waits for the restart (within
                // `ready_wait` of the call's start) instead of failing.
                Err(Refused::Restarting(r)) => {
                    request = r;
                    // Never a busy loop, whatever the status says.
                    tokio::task::yield_now().await;
                }
                Err(Refused::Failed(why)) => return Err(why),
            }
        }
    }

    /// [`call`](Self::call) when it needs no waiting: the child is ready and a
    /// slot is free. The request is then registered and, when the child's queue
    /// has room, queued. [`TryCall::Later`] gives the request back untouched.
    pub(crate) fn try_call(&self, request: Request, owner: u64) -> TryCall {
        if !matches!(&*self.inner.status.borrow(), Status::Ready(_)) {
            return TryCall::Later(request);
        }
        let Ok(slot) = self.inner.slots.clone().try_acquire_owned() else {
            return TryCall::Later(request);
        };
        let (call, sender, message) = match self.register(request, owner, slot) {
            Ok(registered) => registered,
            Err(Refused::Restarting(request)) => return TryCall::Later(request),
            Err(Refused::Failed(why)) => return TryCall::Failed(Error::Upstream(why)),
        };
        match sender.try_send(message) {
            Ok(()) => TryCall::Started(call, None),
            Err(e) if e.is_full() => match e.into_inner() {
                Outgoing::Message(message) => {
                    TryCall::Started(call, Some(Box::new((sender, message))))
                }
                Outgoing::Batch(_) => {
                    TryCall::Failed(Error::Internal("a request came back as a batch".to_owned()))
                }
            },
            Err(_) => TryCall::Failed(Error::Upstream("the upstream server went away".to_owned())),
        }
    }

    /// Gives `request` our id, maps its progress token and enters it in the
    /// table; returns the call, the sender to the child and the message to send.
    fn register(
        &self,
        mut request: Request,
        owner: u64,
        slot: OwnedSemaphorePermit,
    ) -> Result<(Call, Sender, Message), Refused> {
        let (done_tx, done_rx) = oneshot::channel();
        let (events_tx, events_rx) = mpsc::channel(CALL_QUEUE);
        // One lock: the child's sender is checked before the request is touched,
        // so a refused request comes back as it was.
        let mut table = lock(&self.inner.table);
        let Some(sender) = table.sender.clone() else {
            return Err(Refused::Restarting(request));
        };
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        request.id = Id::from(id);
        let token = match map_progress_token(&mut request.params, id) {
            Ok(t) => t,
            Err(e) => return Err(Refused::Failed(format!("invalid params: {e}"))),
        };
        // What a drain waits for: requests of downstream clients. A listen
        // stays open until its client leaves; the gateway's own calls (its
        // lists of the upstream) answer nobody downstream, and one the
        // upstream never answers must not hold a shutdown for the drain time.
        let route = Route::of(&request.method);
        let listen = route == Route::Listen;
        let counted = !listen && owner != BRIDGE_OWNER;
        let timing = self.timing(&mut request, route);
        let started = timing.as_ref().map(|t| t.at);
        let slot_of_call = Slot {
            done: done_tx,
            events: events_tx,
            _in_flight: counted.then(|| self.inner.in_flight.enter()),
            timing,
        };
        table.router.insert(id, owner, token, slot_of_call);
        drop(table);
        let call = Call {
            upstream: self.clone(),
            id,
            events: events_rx,
            done: done_rx,
            stash: std::collections::VecDeque::new(),
            finished: false,
            _slot: slot,
            started,
        };
        Ok((call, sender, Message::Request(request)))
    }

    /// With metrics or traces on, a call's start, labels and client span
    /// (whose context `request`'s `_meta` then carries).
    fn timing(&self, request: &mut Request, route: Route) -> Option<Box<Timing>> {
        let (metrics, tracing) = (crate::metrics::get(), crate::trace::get());
        if metrics.is_none() && tracing.is_none() {
            return None;
        }
        let tool = route == Route::Use(crate::pin::Kind::Tool);
        let name = route
            .used()
            .and_then(|_| crate::metrics::label_name(request.params.as_deref()));
        let label = metrics
            .zip(name.as_deref().filter(|_| tool))
            .map(|(m, n)| m.name_label(n));
        // A copy only for the span (its start rewrites the `_meta`).
        let name = name.filter(|_| tracing.is_some()).map(|n| n.into_owned());
        let method = crate::classify::method_label(&request.method);
        let span = tracing.and_then(|t| {
            let labels = crate::trace::Labels {
                method,
                target: name.as_deref(),
                version: None,
                session: None,
                transport: self.inner.network_transport(),
            };
            t.client_span(request, self.inner.label(), &labels, tool)
        });
        if metrics.is_none() && span.is_none() {
            return None;
        }
        Some(Box::new(Timing {
            at: Instant::now(),
            method,
            tool: label,
            span,
        }))
    }

    /// Sends a message that needs no answer routing (a notification from a
    /// downstream client, or the answer to one of the child's requests). Dropped
    /// with a debug log when the child is not running.
    pub(crate) async fn send(&self, message: Message) {
        let sender = lock(&self.inner.table).sender.clone();
        match sender {
            Some(s) => {
                if s.send(message).await.is_err() {
                    debug!("the upstream server went away; message dropped");
                }
            }
            None => debug!("the upstream server is not running; message dropped"),
        }
    }

    /// Whether the child's server→client request handed on under `ours` (see
    /// [`CallEvent::Request`]) is still open: not answered, not cancelled by
    /// the child (`notifications/cancelled`, however that was routed), not
    /// made by a child that has since died, not answered here because its
    /// call ended.
    pub(crate) fn is_open(&self, ours: &Id) -> bool {
        let table = lock(&self.inner.table);
        upstream_id(ours).is_some_and(|n| table.router.is_open(n))
    }

    /// Answers one of the child's server→client requests (its own id). An answer
    /// to a request the running child did not make (it was made by a child
    /// that has since died and been restarted, or it was answered already) is
    /// dropped: the new process may be using the same id for a request of its
    /// own, for another caller.
    ///
    /// `message` carries the id the request was handed on under (see
    /// [`CallEvent::Request`]); it goes to the child under the child's own id.
    pub(crate) async fn respond(&self, mut message: Message) {
        let Some(ours) = message.id().cloned() else {
            return;
        };
        let child_id = {
            let mut table = lock(&self.inner.table);
            upstream_id(&ours).and_then(|n| table.router.take_open(n))
        };
        let Some(child_id) = child_id else {
            debug!(id = %ours, "an answer to a request the running child did not make (it was restarted, or it was answered already); dropped");
            return;
        };
        match &mut message {
            Message::Response(r) => r.id = child_id,
            Message::Error(e) => e.id = Some(child_id),
            _ => return,
        }
        self.send(message).await;
    }

    /// Forgets the call whose upstream id is `id`, which ends without the
    /// child's answer (`why`: cancelled, timed out, its session gone); whether it
    /// was in flight. Also returns the answers owed to the child for its open
    /// requests made for that call: nobody downstream will answer them now, and
    /// a child waiting for an answer (a tool blocked on sampling) would wait
    /// forever. They leave the tables here; the caller sends the answers.
    fn forget(&self, id: u64, why: &str) -> (bool, Vec<Message>) {
        let (entry, owed) = lock(&self.inner.table).router.forget(id, Instant::now());
        let why = format!("the call it was made for is over ({why})");
        let answers = owed
            .into_iter()
            .map(|child| abandoned(child, &why))
            .collect();
        (entry.is_some(), answers)
    }

    /// Gives up on one of the child's server→client requests, handed on under
    /// `ours` (see [`CallEvent::Request`]) and not answered: the child gets a
    /// -32603 error saying `why`, and the request leaves the tables. Nothing
    /// when it is not open (answered already, or made by a child that has since
    /// died). Never waits.
    pub(crate) fn abandon(&self, ours: &Id, why: &str) {
        let (child, sender) = {
            let mut table = lock(&self.inner.table);
            let child = upstream_id(ours).and_then(|n| table.router.take_open(n));
            (child, table.sender.clone())
        };
        if let Some(child) = child {
            debug!(id = %ours, why, "answering the child's request ourselves");
            send_detached(sender, vec![abandoned(child, why)]);
        }
    }

    /// Whether `other` is this very upstream (a clone of it).
    pub(crate) fn same(&self, other: &Upstream) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Its name, for logs.
    pub(crate) fn name(&self) -> &str {
        &self.inner.name
    }

    /// How many `list_changed` notifications of `list` the upstream has sent
    /// so far (counted as each arrives, before it is handed on; across
    /// restarts).
    pub(crate) fn list_changes(&self, list: ListKind) -> u64 {
        self.inner.list_changes[list.index()].load(Ordering::SeqCst)
    }

    /// The upstream's tools' `x-mcp-header` pairs (tool name → its
    /// (argument, header) pairs, from its `tools/list`): a 2026-07-28
    /// `tools/call` to it over Streamable HTTP carries the `Mcp-Param-*`
    /// headers they name (2026-07-28 "Transports"), from now on and at each
    /// reconnection. Nothing for other transports.
    pub(crate) fn set_tool_headers(&self, map: ToolHeaderMap) {
        let mut headers = lock(&self.inner.tool_headers);
        if let Some(http) = &headers.1 {
            http.set_tool_headers(map.clone());
        }
        headers.0 = map;
    }

    /// How many calls are in flight.
    /// Listen streams (2026-07-28 `subscriptions/listen`) are not counted: they
    /// last until their client leaves, and a drain waiting for them would always
    /// wait its whole time; nor are the gateway's own calls.
    pub(crate) fn in_flight(&self) -> usize {
        self.inner.in_flight.get()
    }

    /// Waits up to `wait` for the calls in flight to end; `true` when they did.
    pub(crate) async fn drained(&self, wait: Duration) -> bool {
        self.inner.in_flight.drained(wait).await
    }

    /// Stops the child: waits up to `drain` for the calls in flight to finish,
    /// then ends the child in the spec's order (close stdin, SIGTERM, SIGKILL) and
    /// fails what is left. Idempotent.
    pub(crate) async fn shutdown(&self, drain: Duration) {
        self.drained(drain).await;
        self.inner.stop.send_replace(true);
        let task = lock(&self.inner.stopped).take();
        if let Some(task) = task {
            let _ = task.await;
        }
        // A child that is not restarted may have ended its supervision already,
        // leaving `Down`.
        set_status(&self.inner, Status::Stopped);
    }
}

/// Replaces `params._meta.progressToken` (when present) with `"sb-<id>"`; returns
/// (ours, the caller's, as its raw JSON text). Params without the member are not
/// parsed beyond a substring check; those with it are edited as raw members
/// ([`RawObject`]), so every other value reaches the child as the client wrote it.
fn map_progress_token(
    params: &mut Option<Box<RawValue>>,
    id: u64,
) -> Result<Option<(String, Box<RawValue>)>, serde_json::Error> {
    let Some(raw) = params.as_ref() else {
        return Ok(None);
    };
    if !raw.get().contains("progressToken") {
        return Ok(None);
    }
    let Ok(mut obj) = RawObject::parse(raw.get()) else {
        return Ok(None); // not an object: the child will answer -32602
    };
    let Some(mut meta) = obj.get_object("_meta") else {
        return Ok(None);
    };
    let Some(original) = meta.get("progressToken").map(ToOwned::to_owned) else {
        return Ok(None);
    };
    let ours = format!("sb-{id}");
    meta.insert("progressToken", serde_json::value::to_raw_value(&ours)?);
    obj.insert("_meta", meta.to_raw());
    *params = Some(obj.to_raw());
    Ok(Some((ours, original)))
}

async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// Sets the upstream's status, and with metrics on, its state series (a
/// shared connection's: a session's own child is not the upstream's state).
fn set_status(inner: &Inner, status: Status) {
    if let Some(m) = crate::metrics::get().filter(|_| inner.is_shared()) {
        let state = match &status {
            Status::Starting => "starting",
            Status::Ready(_) => "ready",
            Status::Down(_) => "down",
            Status::Stopped => "stopped",
        };
        m.upstream_state(inner.label(), inner.generation, state);
    }
    inner.status.send_replace(status);
}

async fn supervise(inner: Arc<Inner>, mut stop: watch::Receiver<bool>) {
    let mut backoff = inner.config.backoff_initial;
    // The reason last warned of: a server failing the same way at each
    // retry is warned of once (then debug), again when the reason changes.
    let mut warned: Option<String> = None;
    let mut first = true;
    loop {
        if *stop.borrow() {
            break;
        }
        if !first {
            inner.restarts.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(m) = crate::metrics::get() {
            let event = match first {
                true => crate::metrics::ChildEvent::Started,
                false => crate::metrics::ChildEvent::Restarted,
            };
            m.child(inner.label(), event);
        }
        first = false;
        set_status(&inner, Status::Starting);
        let started = Instant::now();
        let connect = inner.config.connector.connect(&inner.config.transport);
        let connected = tokio::select! {
            c = tokio::time::timeout(inner.config.init_timeout, connect) => c.unwrap_or_else(|_| {
                Err(format!("could not connect within {:?}", inner.config.init_timeout))
            }),
            () = stopped(&mut stop) => Err(STOPPED.to_owned()),
        };
        let why = match connected {
            Err(why) => {
                if why != STOPPED {
                    inner.set_lapse(Some(why.clone()));
                }
                why
            }
            Ok(connection) => run_child(&inner, connection, &mut stop).await,
        };
        fail_all(&inner, &why);
        if *stop.borrow() {
            break;
        }
        if let Some(m) = crate::metrics::get().filter(|_| why != STOPPED) {
            m.child(inner.label(), crate::metrics::ChildEvent::Crashed);
        }
        if inner.config.restart == Restart::Never {
            // A per-session child: its server state (initialize, subscriptions,
            // log level) is gone with it; a new one would serve a session it
            // knows nothing of. Down for good: its owner ends the session.
            warn!(reason = %why, "the upstream server is down; not restarted (its session ends)");
            set_status(&inner, Status::Down(why));
            return;
        }
        // A child that ran long enough starts the backoff over; the delay
        // logged is the one waited.
        if started.elapsed() >= STABLE_AFTER {
            backoff = inner.config.backoff_initial;
            warned = None;
        }
        if warned.as_deref() == Some(why.as_str()) {
            debug!(reason = %why, retry_in = ?backoff, "the upstream server is down");
        } else {
            warn!(reason = %why, retry_in = ?backoff, "the upstream server is down (retried with backoff; said again when the reason changes)");
            warned = Some(why.clone());
        }
        set_status(&inner, Status::Down(why));
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            () = stopped(&mut stop) => break,
        }
        backoff = (backoff * 2).min(inner.config.backoff_max);
    }
    fail_all(&inner, STOPPED);
    set_status(&inner, Status::Stopped);
}

/// Runs one child from spawn to exit; returns why it ended.
async fn run_child(
    inner: &Arc<Inner>,
    connection: Connection,
    stop: &mut watch::Receiver<bool>,
) -> String {
    let pid = connection.pid();
    let mut connection = connection;
    // Why Streamable HTTP failed, when the legacy transport was tried next.
    let mut refused_first: Option<String> = None;
    let (
        outcome,
        Connection {
            sender,
            mut receiver,
            link,
        },
    ) = loop {
        let Connection {
            sender,
            mut receiver,
            link,
        } = connection;
        let handshake = tokio::time::timeout(
            inner.config.init_timeout,
            initialize(inner, &sender, &mut receiver, &link),
        );
        let outcome = tokio::select! {
            r = handshake => match r {
                Ok(Ok(info)) => Ok(info),
                Ok(Err(why)) => Err(why),
                Err(_) => Err(format!("no answer to initialize within {:?}", inner.config.init_timeout)),
            },
            () = stopped(stop) => Err(STOPPED.to_owned()),
        };
        let done = Connection {
            sender,
            receiver,
            link,
        };
        // A URL of unknown transport that refused the Streamable HTTP POST
        // (400, 404, 405: MCP 2025-03-26 "Backwards Compatibility"): the
        // legacy HTTP+SSE transport at the same URL, in this same start.
        let sse = match (&inner.config.connector, &outcome) {
            (Connector::Auto(_, sse), Err(_)) => done
                .link
                .http()
                .and_then(HttpClientHandle::last_error_status)
                .filter(|status| matches!(status, 400 | 404 | 405))
                .map(|_| sse.clone()),
            _ => None,
        };
        let Some((url, config)) = sse else {
            break (outcome, done);
        };
        done.close().await;
        debug!(%url, "Streamable HTTP refused: trying the legacy HTTP+SSE transport");
        // Both attempts failing: both said (the first is the likelier typo).
        if let Err(why) = &outcome {
            refused_first = Some(why.clone());
        }
        match Connector::Sse(url, config)
            .connect(&inner.config.transport)
            .await
        {
            Ok(next) => connection = next,
            Err(why) => {
                let why = both_refused(refused_first.as_deref(), why);
                inner.set_lapse(Some(why.clone()));
                set_status(inner, Status::Down(why.clone()));
                return why;
            }
        }
    };
    let outcome = outcome.map_err(|why| match why.as_str() {
        STOPPED => why,
        _ => both_refused(refused_first.as_deref(), why),
    });
    let why = match outcome {
        // A start that failed: known down until one succeeds.
        Err(why) => {
            if why != STOPPED {
                inner.set_lapse(Some(why.clone()));
            }
            why
        }
        Ok(info) => {
            info!(pid, server = %info.result.server_info.name, version = %info.result.protocol_version, "upstream server ready");
            let version = if info.modern {
                Some(ProtocolVersion::V2026_07_28)
            } else {
                ProtocolVersion::parse(&info.result.protocol_version)
            };
            if version.is_some() {
                link.set_version(version);
            }
            {
                let mut headers = lock(&inner.tool_headers);
                headers.1 = link.http().cloned();
                if let Some(http) = &headers.1 {
                    http.set_tool_headers(headers.0.clone());
                }
            }
            lock(&inner.table).sender = Some(sender.clone());
            inner.was_ready.store(true, Ordering::Relaxed);
            inner.set_lapse(None);
            set_status(inner, Status::Ready(Arc::new(info)));
            receiver.set_direct(Arc::new(Responses(inner.clone())));
            let ready_at = Instant::now();
            let why = tokio::select! {
                why = route(inner, &mut receiver, &link) => why,
                () = stopped(stop) => STOPPED.to_owned(),
            };
            receiver.clear_direct();
            if let Some(m) = crate::metrics::get() {
                m.client_session(inner.label(), inner.network_transport(), ready_at.elapsed());
            }
            why
        }
    };
    // The calls in flight fail before anyone is told the child is down (a
    // session whose own child died ends on that news, and its calls' errors
    // go out first).
    fail_all(inner, &why);
    // Not ready before the sender goes, so that nobody sees the child ready with
    // no way to reach it (a call waiting for it would retry at once).
    set_status(
        inner,
        if why == STOPPED {
            Status::Stopped
        } else {
            Status::Down(why.clone())
        },
    );
    lock(&inner.table).sender = None;
    Connection {
        sender,
        receiver,
        link,
    }
    .close()
    .await;
    why
}

/// Runs the era handshake with a new child (module `handshake`: `initialize`
/// or `server/discover` first by [`UpstreamConfig::first`], each probe
/// bounded by [`DISCOVER_PROBE`]); a 2026-07-28-only server is then served
/// with each request's `_meta` instead of a session ([`InitInfo::modern`]).
async fn initialize(
    inner: &Arc<Inner>,
    sender: &Sender,
    receiver: &mut switchboard_transport::Receiver,
    link: &Link,
) -> Result<InitInfo, String> {
    handshake::run(&inner.config, DISCOVER_PROBE, sender, receiver, link).await
}

/// Why the child's transport closed, as the bridge tells it to HTTP clients
/// (errors of the calls it fails, `/readyz`): without the child's last stderr
/// line, which may hold what no remote client should read (a token in a URL, a
/// path). That line is logged here (warn), for the operator.
fn shown(reason: &CloseReason) -> String {
    match reason {
        CloseReason::ChildExited(status, Some(_)) => {
            warn!(%reason, "the upstream server exited");
            CloseReason::ChildExited(*status, None).to_string()
        }
        _ => reason.to_string(),
    }
}

pub(crate) fn empty_object() -> Box<RawValue> {
    RawValue::from_string("{}".to_owned()).expect("{} is JSON")
}

/// Takes the child's responses in the transport's reader task, when nothing read
/// before them is still queued for [`route`]: a response only completes its call
/// ([`complete`] never waits), so it skips the hand-off to the routing task.
/// Requests and notifications go back to the queue (their routing may wait).
struct Responses(Arc<Inner>);

impl DirectSink for Responses {
    fn deliver(&self, message: Message) -> Result<(), Message> {
        let id = match &message {
            Message::Response(r) => r.id.clone(),
            Message::Error(e) => match &e.id {
                Some(id) => id.clone(),
                None => return Err(message),
            },
            _ => return Err(message),
        };
        complete(&self.0, &id, Ok(message));
        Ok(())
    }
}

/// Reads the child's output until it ends; returns why.
async fn route(
    inner: &Arc<Inner>,
    receiver: &mut switchboard_transport::Receiver,
    link: &Link,
) -> String {
    while let Some(event) = receiver.recv().await {
        match event {
            Inbound::Message(m) => dispatch(inner, m).await,
            // The child did answer, but the transport could not read the
            // answer (over the line limit): a failure of the bridge's, which
            // its callers answer with -32603 as every other, not an answer of
            // the child's to pass on (the transport's -32000).
            Inbound::Failed { id, error } => {
                warn!(%id, error = %error.message, "the upstream server's answer could not be read; its call fails");
                let why = format!("the upstream server {}: {}", inner.name, error.message);
                complete(inner, &id, Err(why));
                // A remote server that gave no HTTP answer at all is not
                // there: reconnect (with backoff) rather than stay ready.
                if link.unreachable(&error) {
                    return format!("unreachable: {}", error.message);
                }
            }
            Inbound::Batch(items) => {
                for m in items.into_iter().flatten() {
                    dispatch(inner, m).await;
                }
            }
            Inbound::Closed { reason } => return shown(&reason),
        }
    }
    "the child's output ended".to_owned()
}

fn upstream_id(id: &Id) -> Option<u64> {
    id.as_i64().and_then(|n| u64::try_from(n).ok())
}

async fn dispatch(inner: &Arc<Inner>, message: Message) {
    match message {
        Message::Response(ref r) => complete(inner, &r.id.clone(), Ok(message)),
        Message::Error(ref e) => match e.id.clone() {
            Some(id) => complete(inner, &id, Ok(message)),
            None => {
                warn!(error = %e.error.message, code = e.error.code, "the upstream server sent an error without id")
            }
        },
        Message::Request(r) => {
            if Route::of(&r.method) == Route::Ping {
                let pong = Message::Response(Response {
                    id: r.id,
                    result: empty_object(),
                });
                let sender = lock(&inner.table).sender.clone();
                if let Some(s) = sender {
                    let _ = s.send(pong).await;
                }
                return;
            }
            // Handed on under an id of ours, never the child's own (see
            // `router::Router::open`); entered as open before it is sent, so
            // that an answer coming at once finds it.
            let ours = inner.next_id.fetch_add(1, Ordering::Relaxed);
            let handed = Request {
                id: Id::from(ours),
                method: r.method.clone(),
                params: r.params.clone(),
            };
            let destination = {
                let mut table = lock(&inner.table);
                let destination = match table.router.target(Instant::now()) {
                    Target::Call(call) => table
                        .router
                        .get(call)
                        .map(|e| (Some(call), Ok(e.payload.events.clone()))),
                    // Nothing in flight: the child's own initiative (e.g. `roots/list`
                    // after initialize). To its one owner, if it has one.
                    Target::Idle => inner.orphans.clone().map(|tx| (None, Err(tx))),
                    Target::Unknown => None,
                };
                if let Some((call, _)) = &destination {
                    table.router.open(ours, r.id.clone(), *call);
                }
                destination
            };
            // Some(true): delivered; Some(false): the receiver is not keeping up;
            // None: nobody to give it to.
            let routed = destination.map(|(_, to)| match to {
                Ok(call) => call.try_send(Box::new(CallEvent::Request(handed))).is_ok(),
                Err(owner) => owner.try_send(CallEvent::Request(handed)).is_ok(),
            });
            if routed == Some(false) {
                lock(&inner.table).router.take_open(ours);
            }
            let refused = match routed {
                Some(true) => None,
                Some(false) => Some("the downstream caller is not keeping up"),
                None => Some("no single downstream call in flight to route this request to"),
            };
            if let Some(why) = refused {
                // server-filesystem and server-everything ask for the roots
                // as they start, before any call: expected, not a warning.
                if routed.is_none() && r.method == "roots/list" {
                    debug!(method = %r.method, why, "refusing the upstream server's request");
                } else {
                    warn!(method = %r.method, why, "refusing the upstream server's request");
                }
                let answer = Message::Error(ErrorResponse::new(
                    Some(r.id),
                    ErrorObject::new(code::INTERNAL_ERROR, why),
                ));
                let sender = lock(&inner.table).sender.clone();
                if let Some(s) = sender {
                    let _ = s.send(answer).await;
                }
            }
        }
        Message::Notification(n) => notify(inner, n),
    }
}

/// Ends the call with upstream id `id`: with the child's answer (`Ok`, a
/// response or error response, the call's [`Step::Done`]) or with why it
/// cannot have one (`Err`, [`Step::Failed`]: the callers answer -32603).
fn complete(inner: &Arc<Inner>, id: &Id, outcome: Result<Message, String>) {
    // The child's open requests made for it stay open: the client may still
    // answer them. A cancelled call the child answered after all: it is done
    // with it.
    let entry = upstream_id(id).and_then(|n| lock(&inner.table).router.complete(n));
    match entry {
        Some(mut entry) => {
            if let Some(timing) = entry.payload.timing.take() {
                measure(inner, *timing, &outcome);
            }
            let _ = entry.payload.done.send(outcome);
        }
        None => debug!(%id, "a response for no call in flight (cancelled or unknown)"),
    }
}

/// A call's metrics: its duration, and for a list its size and names.
fn measure(inner: &Inner, timing: Timing, outcome: &Result<Message, String>) {
    let kind = match outcome {
        Ok(message) => crate::metrics::Outcome::of(message, timing.method),
        Err(_) => {
            crate::metrics::Outcome::Code(switchboard_protocol::jsonrpc::code::INTERNAL_ERROR)
        }
    };
    if let Some(span) = timing.span {
        span.end(kind, None);
    }
    let Some(m) = crate::metrics::get() else {
        return;
    };
    let upstream = inner
        .label_value
        .get_or_init(|| crate::metrics::Name::new(inner.label()));
    let op = crate::metrics::Operation {
        method: timing.method,
        tool: timing.tool,
        prompt: None,
        outcome: kind,
        version: None,
        transport: inner.network_transport(),
        upstream: Some(upstream.clone()),
    };
    m.client_operation(&mut lock(&inner.last), op, timing.at.elapsed());
    let (Ok(Message::Response(r)), Some(list)) = (outcome, Route::of(timing.method).list_key())
    else {
        return;
    };
    #[derive(serde::Deserialize)]
    struct Entry<'a> {
        #[serde(borrow, default)]
        name: Option<std::borrow::Cow<'a, str>>,
    }
    let Ok(mut page) =
        serde_json::from_str::<std::collections::HashMap<&str, &RawValue>>(r.result.get())
    else {
        return;
    };
    let Some(entries) = page
        .remove(list)
        .and_then(|e| serde_json::from_str::<Vec<Entry<'_>>>(e.get()).ok())
    else {
        return;
    };
    m.list_size(upstream.as_str(), list, r.result.get().len(), entries.len());
    if list == "tools" {
        let names = entries.iter().filter_map(|e| e.name.as_deref());
        *lock(&inner.tool_names) = names.map(str::to_owned).collect();
    }
    if matches!(list, "tools" | "prompts") {
        m.listed(entries.iter().filter_map(|e| e.name.as_deref()));
    }
}

fn notify(inner: &Arc<Inner>, mut n: Notification) {
    if let Notice::ListChanged(kind) = Notice::of(&n.method) {
        // Counted before anyone hears of it: a caller that must not use a
        // stale list (the drift guard) waits for a re-list that saw it
        // (module `catalog::changes`).
        inner.list_changes[ListKind::changed(kind).index()].fetch_add(1, Ordering::SeqCst);
    }
    let now = Instant::now();
    let table = lock(&inner.table);
    let target = match Notice::of(&n.method) {
        Notice::Progress => {
            let Some(mut params) = n
                .params
                .as_ref()
                .and_then(|p| RawObject::parse(p.get()).ok())
            else {
                return;
            };
            let Some(token) = params
                .get("progressToken")
                .and_then(|t| serde_json::from_str::<String>(t.get()).ok())
            else {
                return;
            };
            let Some(call) = table.router.by_token(&token) else {
                debug!(token, "progress for no call in flight");
                return;
            };
            let Some(entry) = table.router.get(call) else {
                return;
            };
            if let Some((_, original)) = &entry.token {
                params.insert("progressToken", original.clone());
            }
            n.params = Some(params.to_raw());
            Target::Call(call)
        }
        Notice::Cancelled => {
            drop(table);
            child_cancelled(inner, n);
            return;
        }
        // A 2026-07-28 listen stream's notification: to the listen call
        // (`_meta.subscriptionId` is the listen request's id, ours).
        _ if subscription_of(&n).is_some_and(|id| table.router.get(id).is_some()) => {
            subscription_of(&n).map_or(Target::Idle, Target::Call)
        }
        Notice::Log => match table.router.log_target(now, inner.orphans.is_some()) {
            Target::Unknown if table.router.is_idle() => {
                debug!("a log message soon after a call was cancelled: not routed");
                return;
            }
            Target::Unknown => {
                debug!("a log message while several downstream owners have calls in flight: not routed");
                return;
            }
            target => target,
        },
        _ => Target::Idle,
    };
    // Sent once the table is let go.
    let call = match target {
        Target::Call(call) => table
            .router
            .get(call)
            .map(|e| (call, e.payload.events.clone())),
        _ => None,
    };
    drop(table);
    match (target, call) {
        (Target::Call(_), Some((call, events))) => {
            if events
                .try_send(Box::new(CallEvent::Notification(n)))
                .is_err()
            {
                debug!(
                    call,
                    "a call's consumer is not keeping up: notification dropped"
                );
            }
        }
        (Target::Call(_), None) => {}
        _ => {
            let _ = inner.broadcast.send(n);
        }
    }
}

/// The child cancels one of its own server→client requests (every revision,
/// "Utilities → Cancellation"). The request was handed on under an id of ours
/// (and from there under the session's own), so the notification's `requestId`
/// (the child's id) is rewritten to ours, and it goes where the request went:
/// to its call while that is in flight, else to the owning session (a
/// per-session child), never to anyone else. The request is over: it leaves
/// the tables, and a late answer from the client is dropped. A cancellation of
/// a request that is not open (answered already, or never made) is dropped.
fn child_cancelled(inner: &Arc<Inner>, n: Notification) {
    let Some(mut params) = n
        .params
        .as_ref()
        .and_then(|p| serde_json::from_str::<Map<String, Value>>(p.get()).ok())
    else {
        debug!("a cancellation from the child without params: dropped");
        return;
    };
    let child = params
        .get("requestId")
        .and_then(|v| serde_json::value::to_raw_value(v).ok())
        .and_then(|raw| Id::from_raw(&raw).ok());
    let (cancelled, events) = {
        let mut table = lock(&inner.table);
        let cancelled = child
            .as_ref()
            .and_then(|id| table.router.child_cancelled(id));
        let events = cancelled
            .and_then(|(_, call)| call)
            .and_then(|c| table.router.get(c))
            .map(|e| e.payload.events.clone());
        (cancelled, events)
    };
    let Some((ours, _)) = cancelled else {
        debug!(
            request = ?child.map(|id| id.to_string()),
            "the child cancelled a request it has not open (answered already, or unknown): dropped"
        );
        return;
    };
    params.insert("requestId".to_owned(), Value::from(ours));
    let Ok(n) = Notification::new(n.method, &params) else {
        return;
    };
    let event = Box::new(CallEvent::Notification(n));
    let event = match events {
        Some(events) => match events.try_send(event) {
            Ok(()) => return,
            Err(e) => e.into_inner(),
        },
        None => event,
    };
    match (&inner.orphans, *event) {
        (Some(tx), event) => {
            if tx.try_send(event).is_err() {
                debug!(
                    id = ours,
                    "the child cancelled a request whose session is not keeping up: dropped"
                );
            }
        }
        // A shared child: the request's call is over, and which session holds
        // the request is the sessions' to know. To every session; only the one
        // that was handed the request passes it on (under the id it used).
        (None, CallEvent::Notification(n)) => {
            let _ = inner.broadcast.send(n);
        }
        (None, CallEvent::Request(_)) => {}
    }
}

/// `params._meta["io.modelcontextprotocol/subscriptionId"]` as one of our
/// upstream ids (2026-07-28 `subscriptions/listen`).
fn subscription_of(n: &Notification) -> Option<u64> {
    let params = n.params.as_ref()?;
    if !params.get().contains(meta::SUBSCRIPTION_ID) {
        return None;
    }
    let p: Map<String, Value> = serde_json::from_str(params.get()).ok()?;
    p.get("_meta")?.get(meta::SUBSCRIPTION_ID)?.as_u64()
}

fn fail_all(inner: &Arc<Inner>, why: &str) {
    let slots = lock(&inner.table).router.clear();
    if !slots.is_empty() {
        warn!(
            calls = slots.len(),
            reason = why,
            "failing every call in flight"
        );
    }
    let text = format!("the upstream server {}: {why}", inner.name);
    for slot in slots {
        let _ = slot.payload.done.send(Err(text.clone()));
    }
}

/// Why an upstream of unknown transport could not be reached: the legacy
/// transport's failure, and the Streamable HTTP one before it when that
/// was tried first.
fn both_refused(first: Option<&str>, then: String) -> String {
    match first {
        Some(first) => format!("Streamable HTTP: {first}; then legacy HTTP+SSE: {then}"),
        None => then,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_transport::stdio::ChildConfig;

    #[test]
    fn progress_tokens_are_replaced_and_kept() {
        let mut params = Some(
            RawValue::from_string(
                r#"{"name":"x","_meta":{"progressToken":7,"traceparent":"t"}}"#.to_owned(),
            )
            .unwrap(),
        );
        let (ours, original) = map_progress_token(&mut params, 42).unwrap().unwrap();
        assert_eq!(ours, "sb-42");
        assert_eq!(original.get(), "7");
        let v: Value = serde_json::from_str(params.unwrap().get()).unwrap();
        assert_eq!(v["_meta"]["progressToken"], "sb-42");
        assert_eq!(
            v["_meta"]["traceparent"], "t",
            "other _meta members are kept"
        );
    }

    #[test]
    fn params_without_token_are_untouched() {
        let text = r#"{"name":"x","arguments":{"a":1}}"#;
        let mut params = Some(RawValue::from_string(text.to_owned()).unwrap());
        assert!(map_progress_token(&mut params, 1).unwrap().is_none());
        assert_eq!(params.unwrap().get(), text);
    }

    /// A child that answers `initialize`, then never reads its stdin again.
    const STUCK_CHILD: &str = r#"
import json, sys, time
req = json.loads(sys.stdin.readline())
print(json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": {
    "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
    "serverInfo": {"name": "stuck", "version": "1"}}}), flush=True)
time.sleep(60)
"#;

    fn request(id: i64, text: &str) -> Request {
        Request {
            id: Id::from(id),
            method: "tools/call".to_owned(),
            params: Some(
                serde_json::value::to_raw_value(
                    &serde_json::json!({"name": "echo", "arguments": {"text": text}}),
                )
                .unwrap(),
            ),
        }
    }

    /// `try_call` starts a call only when nothing has to wait: before the child
    /// is ready the request comes back untouched; once it is, calls are queued
    /// until the child's queue is full, and then handed back registered, with
    /// the message still to send (under our id), for the caller to wait on.
    #[tokio::test]
    async fn try_call_starts_only_what_needs_no_waiting() {
        let mut transport = TransportConfig::default();
        transport.channel_capacity = 4;
        let mut child = ChildConfig::new("stuck", "python3")
            .arg("-c")
            .arg(STUCK_CHILD);
        // It never reads, so it never sees its stdin close: go to SIGTERM at once.
        child.shutdown.stdin_close_grace = Duration::ZERO;
        let up = Upstream::start(
            test_config(child, transport, serde_json::json!({}), 10_000),
            None,
        );
        match up.try_call(request(1, "early"), 1) {
            TryCall::Later(r) => {
                assert_eq!(r.id, Id::from(1), "the client's id, not ours");
                assert_eq!(
                    r.params.unwrap().get(),
                    request(1, "early").params.unwrap().get()
                );
            }
            _ => panic!("the child is not ready yet: the request must come back"),
        }
        up.ready(Duration::from_secs(10)).await.expect("ready");
        // 64 KiB of text per call: the pipe and the writer's batch fill at once.
        let text = "x".repeat(64 * 1024);
        let mut calls = Vec::new();
        let unsent = loop {
            assert!(calls.len() < 64, "the child's queue never filled");
            match up.try_call(request(calls.len() as i64, &text), 1) {
                TryCall::Started(call, None) => calls.push(call),
                TryCall::Started(call, Some(unsent)) => break (call, unsent.1),
                TryCall::Failed(why) => panic!("{why}"),
                TryCall::Later(_) => panic!("ready, with free slots: nothing to wait for"),
            }
            // Let the writer take what it can.
            tokio::task::yield_now().await;
        };
        let (call, message) = unsent;
        let Message::Request(r) = message else {
            panic!("a request")
        };
        assert_eq!(r.id, Id::from(call.id), "registered under our id");
        assert!(lock(&up.inner.table).router.get(call.id).is_some());
        up.shutdown(Duration::ZERO).await;
    }

    /// A child whose tool `ask` asks `sampling/createMessage` (id `"c1"`) and
    /// waits; `cancel` asks (id `"c2"`), cancels that request, cancels `"zz"`
    /// (never asked), then answers the call; `report` answers with every
    /// response the child got, as JSON text.
    const ASKING_CHILD: &str = r#"
import json, sys
got = []
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
def ask(i):
    send({"jsonrpc": "2.0", "id": i, "method": "sampling/createMessage",
          "params": {"messages": [], "maxTokens": 1}})
def cancelled(i):
    send({"jsonrpc": "2.0", "method": "notifications/cancelled",
          "params": {"requestId": i, "reason": "not needed"}})
for line in sys.stdin:
    m = json.loads(line)
    if "method" not in m:
        got.append(m); continue
    if m["method"] == "initialize":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "asking", "version": "1"}}})
    elif m["method"] == "tools/call":
        name = m["params"]["name"]
        if name == "ask":
            ask("c1")
        elif name == "cancel":
            ask("c2"); cancelled("c2"); cancelled("zz")
            send({"jsonrpc": "2.0", "id": m["id"], "result": {"content": []}})
        else:
            send({"jsonrpc": "2.0", "id": m["id"], "result": {"content": [
                  {"type": "text", "text": json.dumps(got)}]}})
"#;

    fn python_upstream(script: &str) -> Upstream {
        Upstream::start(python_config(script), None)
    }

    fn python_config(script: &str) -> UpstreamConfig {
        let child = ChildConfig::new("asking", "python3").arg("-c").arg(script);
        test_config(
            child,
            TransportConfig::default(),
            serde_json::json!({"sampling": {}}),
            64,
        )
    }

    /// A child's configuration for these tests: initialized in 2025-11-25 with
    /// `capabilities`, restarted after 100 ms (backoff up to 1 s), 10 s waits.
    fn test_config(
        child: ChildConfig,
        transport: TransportConfig,
        capabilities: serde_json::Value,
        max_in_flight: usize,
    ) -> UpstreamConfig {
        UpstreamConfig {
            name: child.name.clone(),
            connector: Connector::Stdio(child),
            transport,
            init_params: serde_json::value::to_raw_value(&serde_json::json!({
                    "protocolVersion": "2025-11-25", "capabilities": capabilities,
                    "clientInfo": {"name": "t", "version": "1"}}))
            .unwrap(),
            first: Ask::Initialize,
            restart: Restart::Always,
            init_timeout: Duration::from_secs(10),
            backoff_initial: Duration::from_millis(100),
            backoff_max: Duration::from_secs(1),
            ready_wait: Duration::from_secs(10),
            max_in_flight,
            queue_wait: Duration::from_secs(10),
        }
    }

    /// A child without `restart` (a session's own) that dies stays down: no
    /// new process is started (it would not know its session's state), and a
    /// call fails at once instead of waiting for one.
    #[tokio::test]
    async fn a_child_without_restart_stays_down() {
        // ASKING_CHILD, exiting 0.3 s after it starts.
        let exits = ASKING_CHILD.replace(
            "for line in sys.stdin:",
            "import os, threading\nthreading.Timer(0.3, lambda: os._exit(0)).start()\nfor line in sys.stdin:",
        );
        let mut config = python_config(&exits);
        config.restart = Restart::Never;
        let up = Upstream::start(config, None);
        up.ready(Duration::from_secs(10)).await.expect("ready");
        let mut status = up.watch_status();
        tokio::time::timeout(
            Duration::from_secs(10),
            status.wait_for(|s| matches!(s, Status::Down(_))),
        )
        .await
        .expect("down in time")
        .expect("watching");
        // Several backoff periods (100 ms) later: still down, never restarted.
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(matches!(up.status(), Status::Down(_)));
        assert_eq!(up.restarts(), 0);
        let started = Instant::now();
        let Err(why) = up.call(tool("report"), 1).await else {
            panic!("a call on a child that is gone")
        };
        assert!(why.to_string().contains("gone"), "{why}");
        assert!(started.elapsed() < Duration::from_secs(2), "failed at once");
        up.shutdown(Duration::ZERO).await;
        assert!(matches!(up.status(), Status::Stopped));
    }

    fn tool(name: &str) -> Request {
        Request::new(
            Id::from(7u64),
            "tools/call",
            &serde_json::json!({"name": name}),
        )
        .unwrap()
    }

    async fn next_step(call: &mut Call) -> Step {
        tokio::time::timeout(Duration::from_secs(10), call.next())
            .await
            .expect("a step in time")
    }

    /// What the child's `report` tool says it got.
    fn reported(r: &Response) -> Value {
        let result: Value = serde_json::from_str(r.result.get()).unwrap();
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap()
    }

    fn open_tables_are_empty(up: &Upstream) -> bool {
        lock(&up.inner.table).router.nothing_open()
    }

    /// The child cancels its own request: the call gets the cancellation under
    /// the id the request was handed on under (never the child's own), the
    /// request is forgotten (an answer is not passed on), and a cancellation
    /// of a request the child never made is dropped.
    #[tokio::test]
    async fn a_childs_cancellation_names_the_request_as_it_was_handed_on() {
        let up = python_upstream(ASKING_CHILD);
        up.ready(Duration::from_secs(10)).await.expect("ready");
        let mut call = up.call(tool("cancel"), 1).await.expect("started");
        let Step::Event(CallEvent::Request(asked)) = next_step(&mut call).await else {
            panic!("the child's request first")
        };
        assert!(
            upstream_id(&asked.id).is_some(),
            "handed on under ours: {}",
            asked.id
        );
        let Step::Event(CallEvent::Notification(n)) = next_step(&mut call).await else {
            panic!("then its cancellation")
        };
        assert_eq!(n.method, "notifications/cancelled");
        let params: Value = serde_json::from_str(n.params.unwrap().get()).unwrap();
        assert_eq!(
            params["requestId"],
            serde_json::to_value(&asked.id).unwrap(),
            "the id the request was handed on under: {params}"
        );
        assert_eq!(params["reason"], "not needed", "the rest is kept");
        assert!(
            matches!(next_step(&mut call).await, Step::Done(Message::Response(_))),
            "nothing for the unknown request \"zz\""
        );
        assert!(
            open_tables_are_empty(&up),
            "the cancelled request is forgotten"
        );
        // A late answer is not given to the child.
        up.respond(Message::Response(Response {
            id: asked.id,
            result: empty_object(),
        }))
        .await;
        let mut report = up.call(tool("report"), 1).await.expect("started");
        let Step::Done(Message::Response(r)) = next_step(&mut report).await else {
            panic!("the report")
        };
        assert_eq!(
            reported(&r),
            serde_json::json!([]),
            "the child got no answer"
        );
        up.shutdown(Duration::ZERO).await;
    }

    /// A call cancelled while the child waits for the answer to its request
    /// made for that call: the child gets an error for it at once, and the
    /// request leaves the tables.
    #[tokio::test]
    async fn a_cancelled_calls_open_request_is_answered_to_the_child() {
        let up = python_upstream(ASKING_CHILD);
        up.ready(Duration::from_secs(10)).await.expect("ready");
        let mut call = up.call(tool("ask"), 1).await.expect("started");
        let Step::Event(CallEvent::Request(_)) = next_step(&mut call).await else {
            panic!("the child's request")
        };
        assert!(!open_tables_are_empty(&up));
        call.cancel("cancelled by the client").await;
        assert!(open_tables_are_empty(&up), "no request left behind");
        let mut report = up.call(tool("report"), 1).await.expect("started");
        let Step::Done(Message::Response(r)) = next_step(&mut report).await else {
            panic!("the report")
        };
        let got = reported(&r);
        assert_eq!(got[0]["id"], "c1", "{got}");
        assert_eq!(got[0]["error"]["code"], -32603, "{got}");
        assert!(
            got[0]["error"]["message"]
                .as_str()
                .unwrap()
                .contains("cancelled by the client"),
            "{got}"
        );
        // A call dropped unfinished does the same.
        let mut call = up.call(tool("ask"), 1).await.expect("started");
        let Step::Event(CallEvent::Request(_)) = next_step(&mut call).await else {
            panic!("the child's request")
        };
        drop(call);
        assert!(open_tables_are_empty(&up), "no request left behind");
        up.shutdown(Duration::ZERO).await;
    }

    /// A call of the bridge's own in flight (its `tools/list` fetch) is no rival
    /// for the child's request: the client's call in flight beside it gets the
    /// request. It used to count as a second owner, and the request was refused
    /// (the first sampling call after the bridge started could fail so).
    #[tokio::test]
    async fn the_bridges_own_call_does_not_contest_a_childs_request() {
        let up = python_upstream(ASKING_CHILD);
        up.ready(Duration::from_secs(10)).await.expect("ready");
        // Never answered: the child asks instead (a request nobody owns).
        let _own = up.call(tool("ask"), BRIDGE_OWNER).await.expect("started");
        let mut call = up.call(tool("ask"), 1).await.expect("started");
        let step = tokio::time::timeout(Duration::from_secs(10), next_step(&mut call))
            .await
            .expect("a step within 10 s");
        assert!(
            matches!(step, Step::Event(CallEvent::Request(_))),
            "the child's request goes to the client's call: {step:?}"
        );
        up.shutdown(Duration::ZERO).await;
    }

    /// The child's answer over the transport's line limit fails its call as
    /// the bridge's other failures do ([`Step::Failed`], which callers answer
    /// with -32603), not as an error answer of the child's (the transport's
    /// -32000); the next call on the child works.
    #[tokio::test]
    async fn an_answer_over_the_line_limit_fails_its_call() {
        let big = r#"
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        r = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
             "serverInfo": {"name": "big", "version": "1"}}
    elif m.get("method") == "tools/call":
        text = "x" * 10000 if m["params"]["name"] == "big" else "small"
        r = {"content": [{"type": "text", "text": text}]}
    else:
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
"#;
        let mut config = python_config(big);
        config.transport.max_line_len = 4096;
        let up = Upstream::start(config, None);
        up.ready(Duration::from_secs(10)).await.expect("ready");
        let mut call = up.call(tool("big"), 1).await.expect("started");
        match next_step(&mut call).await {
            Step::Failed(why) => {
                assert!(why.to_string().contains("line limit"), "{why}");
                assert!(
                    why.to_string().contains("asking"),
                    "names the upstream: {why}"
                );
            }
            other => panic!("expected the call to fail, got {other:?}"),
        }
        let mut call = up.call(tool("small"), 1).await.expect("started");
        assert!(
            matches!(next_step(&mut call).await, Step::Done(Message::Response(_))),
            "the child goes on"
        );
        assert!(
            lock(&up.inner.table).router.is_idle(),
            "no call left behind"
        );
        up.shutdown(Duration::ZERO).await;
    }

    /// A child that refuses `initialize` and ignores the `server/discover` asked
    /// then (a legacy server that drops unknown requests) fails its start with
    /// its own refusal within [`DISCOVER_PROBE`]; the probe was unbounded there,
    /// so a session's first request waited the whole `init_timeout` (30 s in the
    /// bridge) and got "no answer to initialize" instead of the child's reason.
    #[tokio::test]
    async fn a_refused_initialize_fails_fast_with_the_childs_reason() {
        let refuses = r#"
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"],
              "error": {"code": -32602, "message": "no such version"}}), flush=True)
"#;
        let mut config = python_config(refuses);
        config.restart = Restart::Never;
        config.init_timeout = Duration::from_secs(20);
        let up = Upstream::start(config, None);
        let started = Instant::now();
        let why = up
            .ready(Duration::from_secs(30))
            .await
            .expect_err("the child refused initialize");
        assert!(
            why.to_string()
                .contains("initialize failed: no such version (-32602)"),
            "{why}"
        );
        assert!(
            started.elapsed() < DISCOVER_PROBE + Duration::from_secs(3),
            "failed after {:?}",
            started.elapsed()
        );
        up.shutdown(Duration::ZERO).await;
    }
}
