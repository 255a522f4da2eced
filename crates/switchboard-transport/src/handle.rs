//! The halves a library holds: [`Sender`] and [`Receiver`], and what goes through
//! them.
//!
//! The I/O itself is owned by driver tasks (a reader and a writer per transport,
//! plus a supervisor for a child process) spawned on the Tokio runtime when the
//! transport is made; the halves only talk to those tasks through bounded queues.
//! One exception: a Streamable HTTP server session, and a line transport (stdio),
//! can hand an inbound message straight to the library's [`DirectSink`] in the
//! task serving the POST or reading the line, when nothing is queued before it
//! ([`Receiver::set_direct`]).

use std::fmt;
use std::io;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use switchboard_protocol::codec::{encode_batch_line, encode_line};
use switchboard_protocol::jsonrpc::{
    Batching, DecodeError, ErrorObject, ErrorResponse, Id, Message,
};
use tokio::sync::mpsc;

use crate::stdio::child::ShutdownReport;

/// The batching rule of one transport, shared by its halves and its reader task.
#[derive(Debug, Clone)]
pub(crate) struct BatchingSwitch(Arc<AtomicBool>);

impl BatchingSwitch {
    pub(crate) fn new(batching: Batching) -> Self {
        BatchingSwitch(Arc::new(AtomicBool::new(batching == Batching::Allowed)))
    }

    pub(crate) fn get(&self) -> Batching {
        if self.0.load(Ordering::Acquire) {
            Batching::Allowed
        } else {
            Batching::Refused
        }
    }

    pub(crate) fn set(&self, batching: Batching) {
        self.0
            .store(batching == Batching::Allowed, Ordering::Release);
    }
}

/// A connected transport: the two halves a library uses.
///
/// Made by [`crate::stdio::serve`], [`crate::stdio::serve_on`],
/// [`crate::memory::pair`] and [`crate::connect`]; a child process comes as a
/// [`crate::stdio::ChildTransport`], which adds the process handle.
#[derive(Debug)]
pub struct Transport {
    /// Sends messages to the peer; cloneable.
    pub sender: Sender,
    /// Yields what the peer sent, then [`Inbound::Closed`].
    pub receiver: Receiver,
}

impl Transport {
    /// The two halves, to move them to different tasks.
    pub fn split(self) -> (Sender, Receiver) {
        (self.sender, self.receiver)
    }
}

/// The sending half: queues messages for the writer task, which writes each as one
/// line (`encode_line`; MCP "Transports → stdio", every revision).
///
/// Cloneable; all clones feed one bounded queue of
/// [`TransportConfig::channel_capacity`](crate::TransportConfig::channel_capacity)
/// messages. The Streamable HTTP server's sessions have no such queue: there the
/// sending task puts each message on its stream itself, waiting while the
/// connection reading that stream has its own queue (same capacity) full.
///
/// **Dropping.** When the last `Sender` is dropped, the writer task writes what is
/// still queued, flushes, shuts its output down (for a child: closes the child's
/// stdin; for a pipe or [`crate::memory::pair`]: the peer reads end of input) and
/// ends. The receiving side is not affected. On the server side a bad inbound line
/// is answered only while some `Sender` is alive. Dropping the last `Sender` of a
/// Streamable HTTP session ends the session (its streams close, later requests
/// get 404).
#[derive(Debug, Clone)]
pub struct Sender {
    pub(crate) out: Outlet,
    pub(crate) batching: BatchingSwitch,
    /// Requests are refused ([`SendError::is_request_refused`]): the stateless
    /// 2026-07-28 exchange, where the server never sends requests.
    pub(crate) no_requests: bool,
    /// A line transport's batches read and waiting for their answers, which
    /// [`forget`](Self::forget) tells of a request that gets none; `None` for
    /// the other transports.
    pub(crate) replies: Option<Arc<crate::line::BatchReplies>>,
}

/// Where a [`Sender`]'s messages go.
#[derive(Debug, Clone)]
pub(crate) enum Outlet {
    /// A bounded queue drained by the transport's writer task.
    Queue(mpsc::Sender<Outbound>),
    /// Straight onto the streams of a Streamable HTTP session, in the sending
    /// task (no router task in between; see [`SessionOutlet`]).
    Session(Arc<SessionOutlet>),
}

/// Why [`Outlet::try_send`] did not take a message.
enum TryFail {
    /// No room now: the message comes back, to wait with.
    Full(Outbound),
    Closed,
}

impl Outlet {
    async fn send(&self, out: Outbound) -> Result<(), ()> {
        match self {
            Outlet::Queue(tx) => tx.send(out).await.map_err(|_| ()),
            Outlet::Session(s) => s.session.route(out).await,
        }
    }

    fn try_send(&self, out: Outbound) -> Result<(), TryFail> {
        match self {
            Outlet::Queue(tx) => tx.try_send(out).map_err(|e| match e {
                mpsc::error::TrySendError::Full(out) => TryFail::Full(out),
                mpsc::error::TrySendError::Closed(_) => TryFail::Closed,
            }),
            Outlet::Session(s) => s.session.try_route(out).map_err(|full| match full {
                Some(out) => TryFail::Full(out),
                None => TryFail::Closed,
            }),
        }
    }

    fn is_closed(&self) -> bool {
        match self {
            Outlet::Queue(tx) => tx.is_closed(),
            Outlet::Session(s) => s.session.is_ended(),
        }
    }

    async fn closed(&self) {
        match self {
            Outlet::Queue(tx) => tx.closed().await,
            Outlet::Session(s) => s.session.wait_ended().await,
        }
    }
}

/// The outlet of a Streamable HTTP session, shared by all clones of its
/// [`Sender`]: when the last clone is dropped, the library is done with the
/// session and it ends ([`CloseReason::SessionClosed`]).
#[derive(Debug)]
pub(crate) struct SessionOutlet {
    pub(crate) session: Arc<crate::http::session::Session>,
}

impl Drop for SessionOutlet {
    fn drop(&mut self) {
        self.session.end(CloseReason::SessionClosed);
    }
}

/// Where a queued message should go, for transports with several outputs per
/// peer (the Streamable HTTP server); single-output transports ignore it. See
/// [`Sender::send_related`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// Not tied to any request.
    Unrelated,
    /// A request or notification sent on behalf of the inbound request with this id.
    Related(Id),
    /// The response (or error response) to the inbound request with this id.
    Response(Id),
    /// A batch holding the responses to the inbound requests with these ids (at
    /// least one).
    Responses(Vec<Id>),
    /// An error response with a `null` id that the Streamable HTTP server wrote
    /// itself, for an invalid item without a readable id in the batch of the POST
    /// whose stream has this number (JSON-RPC 2.0 §6): it goes on that stream and
    /// counts as one of its answers. Never made from a message.
    Orphan(u64),
}

impl Route {
    fn of(message: &Message, related: Option<Id>) -> Route {
        match message {
            Message::Response(r) => Route::Response(r.id.clone()),
            Message::Error(e) => match &e.id {
                Some(id) => Route::Response(id.clone()),
                None => Route::Unrelated,
            },
            _ => related.map_or(Route::Unrelated, Route::Related),
        }
    }

    fn of_batch(messages: &[Message]) -> Route {
        let ids: Vec<Id> = messages
            .iter()
            .filter_map(|m| match Route::of(m, None) {
                Route::Response(id) => Some(id),
                _ => None,
            })
            .collect();
        if ids.is_empty() {
            Route::Unrelated
        } else {
            Route::Responses(ids)
        }
    }
}

/// One queued output: the encoded line (compact JSON and `\n`) and its route; or
/// a flush barrier ([`Sender::flush`]: an empty line and `barrier`), which the
/// queue's reader answers once everything queued before it is written.
#[derive(Debug)]
pub(crate) struct Outbound {
    pub(crate) line: Vec<u8>,
    pub(crate) route: Route,
    pub(crate) barrier: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Outbound {
    pub(crate) fn new(line: Vec<u8>, route: Route) -> Self {
        Outbound {
            line,
            route,
            barrier: None,
        }
    }

    /// A flush barrier: `done` is answered when everything queued before it has
    /// been written (or handed on, for transports that do not write lines).
    fn barrier(done: tokio::sync::oneshot::Sender<()>) -> Self {
        Outbound {
            line: Vec::new(),
            route: Route::Unrelated,
            barrier: Some(done),
        }
    }

    /// For a queue's reader that writes nothing itself (HTTP): answers a flush
    /// barrier at once, since what was queued before it has been taken already;
    /// `true` when this was one (nothing else to do with it).
    pub(crate) fn pass_barrier(&mut self) -> bool {
        match self.barrier.take() {
            Some(done) => {
                let _ = done.send(());
                true
            }
            None => false,
        }
    }
}

impl Sender {
    /// Queues one message, waiting while the queue is full (backpressure). The same
    /// as [`send_related`](Self::send_related) with `related = None`.
    ///
    /// The message is encoded here, in the caller's task, as one line of compact
    /// JSON; the writer task only writes bytes. `Ok` means queued, not yet written.
    ///
    /// Errors: [`SendError::is_closed`] when the writer task has ended (the output
    /// failed, the child was shut down, the HTTP session ended, or the runtime is
    /// gone); the message comes back with [`SendError::into_inner`].
    ///
    /// Cancel safety: if the future is dropped before it completes, the message was
    /// not queued and nothing of it is written.
    pub async fn send(&self, message: Message) -> Result<(), SendError> {
        self.send_related(message, None).await
    }

    /// Queues one message with a routing hint: the id of the inbound request this
    /// message belongs to, if any. Waits while the queue is full (backpressure);
    /// encoding, errors and cancel safety as [`send`](Self::send).
    ///
    /// **The contract.** Transports with a single ordered channel (stdio, child
    /// processes, [`crate::memory`], [`crate::connect`]) ignore `related`: every
    /// message is written to the one output, in the order queued. Transports that
    /// have several channels per peer route by it. For the Streamable HTTP server
    /// ([`crate::http::server`]; MCP 2025-03-26 to 2025-11-25, "Transports →
    /// Streamable HTTP"):
    ///
    /// - A response or error response ([`Message::Response`], [`Message::Error`]
    ///   with an id) always goes on the SSE stream (or JSON reply) of the POST that
    ///   carried the request with that id, whatever `related` says; once every
    ///   request of that POST has its response, the stream ends. A response whose
    ///   id matches no open request (already answered, or never received) is
    ///   logged (warn) and dropped; an error response with a `null` id goes to
    ///   the standalone stream.
    /// - A request or notification with `related = Some(id)` goes on the stream of
    ///   the POST that carried request `id` while that stream is open (its response
    ///   not yet sent), before the response if queued before it: this is how
    ///   progress (`notifications/progress`), logging (`notifications/message`) and
    ///   server-to-client requests (`sampling/createMessage`, `elicitation/create`,
    ///   `roots/list`) made while handling a call reach the client on the call's
    ///   stream. If the POST asked for a JSON reply (server configured with
    ///   `json_response`) or its stream has already ended, the message goes where
    ///   `related = None` would send it.
    /// - Anything else (`related = None`, or an id with no open stream) goes on the
    ///   session's standalone GET stream, and is kept there in a bounded buffer
    ///   (`sse_replay_buffer` events, oldest dropped first) until a GET stream opens
    ///   if none is open.
    ///
    /// So the library should pass `Some(request_id)` for everything it sends while
    /// handling that request, and `None` for messages of its own (list-changed and
    /// resource-updated notifications, pings, requests not made on behalf of a
    /// call). Order is kept per stream; messages on different streams have no order
    /// between them.
    pub async fn send_related(
        &self,
        message: Message,
        related: Option<Id>,
    ) -> Result<(), SendError> {
        if self.no_requests && matches!(message, Message::Request(_)) {
            return Err(SendError::new(
                SendErrorKind::RequestRefused,
                Outgoing::Message(message),
            ));
        }
        let closed = |message| {
            Err(SendError::new(
                SendErrorKind::Closed,
                Outgoing::Message(message),
            ))
        };
        let out = Outbound::new(encode_line(&message), Route::of(&message, related));
        // Without waiting first: a full queue is rare, and its wait, boxed, does
        // not make the future of every send (kept in each task that sends, a
        // request handler's among them) several hundred bytes larger.
        let out = match self.out.try_send(out) {
            Ok(()) => return Ok(()),
            Err(TryFail::Closed) => return closed(message),
            Err(TryFail::Full(out)) => out,
        };
        match Box::pin(self.out.send(out)).await {
            Ok(()) => Ok(()),
            Err(()) => closed(message),
        }
    }

    /// Waits until every message this transport had queued before the call has been
    /// written to its output and flushed: for line transports (stdio, a child's
    /// stdin, the in-memory pair) the bytes are in the pipe; HTTP transports, which
    /// write nothing themselves, answer once what was queued before has been taken
    /// from the queue. For a program about to exit: its runtime's shutdown would
    /// otherwise cancel the writer task with messages still queued (e.g. the answers
    /// a stdio server produced just before its input ended).
    ///
    /// Returns `false` when the output had closed first (what was still queued is
    /// lost). It waits as long as the output does not take the bytes (a reader that
    /// stopped reading): bound it with a timeout.
    pub async fn flush(&self) -> bool {
        let (done, written) = tokio::sync::oneshot::channel();
        match &self.out {
            Outlet::Queue(tx) => {
                tx.send(Outbound::barrier(done)).await.is_ok() && written.await.is_ok()
            }
            // Routed onto its streams in the sending task already.
            Outlet::Session(s) => !s.session.is_ended(),
        }
    }

    /// Like [`send`](Self::send) (no routing hint) but never waits.
    ///
    /// Errors: [`SendError::is_full`] when the queue is full, [`SendError::is_closed`]
    /// when the writer task has ended.
    pub fn try_send(&self, message: Message) -> Result<(), SendError> {
        if self.no_requests && matches!(message, Message::Request(_)) {
            return Err(SendError::new(
                SendErrorKind::RequestRefused,
                Outgoing::Message(message),
            ));
        }
        let out = Outbound::new(encode_line(&message), Route::of(&message, None));
        match self.out.try_send(out) {
            Ok(()) => Ok(()),
            Err(TryFail::Full(_)) => Err(SendError::new(
                SendErrorKind::Full,
                Outgoing::Message(message),
            )),
            Err(TryFail::Closed) => Err(SendError::new(
                SendErrorKind::Closed,
                Outgoing::Message(message),
            )),
        }
    }

    /// Queues a JSON-RPC batch as one line (a JSON array;
    /// `encode_batch_line`). On the Streamable HTTP server a batch goes to the
    /// stream of the POST whose requests its responses answer (the library answers
    /// a batch POST with one batch of responses), or to the standalone stream if it
    /// holds no response. Batches exist only in 2025-03-26 (MCP 2025-03-26,
    /// "Base protocol → Batching": MUST accept, MAY send; `initialize` is never
    /// batched, which is the library's rule to keep).
    ///
    /// Errors: [`SendError::is_batch_refused`] unless the transport's batching rule
    /// is [`Batching::Allowed`] (see [`set_batching`](Self::set_batching));
    /// [`SendError::is_empty_batch`] for an empty vector (an empty array is an
    /// invalid request, JSON-RPC 2.0 §6); otherwise as [`send`](Self::send). Cancel
    /// safety as [`send`](Self::send).
    pub async fn send_batch(&self, messages: Vec<Message>) -> Result<(), SendError> {
        if self.batching.get() == Batching::Refused {
            return Err(SendError::new(
                SendErrorKind::BatchRefused,
                Outgoing::Batch(messages),
            ));
        }
        if messages.is_empty() {
            return Err(SendError::new(
                SendErrorKind::EmptyBatch,
                Outgoing::Batch(messages),
            ));
        }
        let out = Outbound::new(encode_batch_line(&messages), Route::of_batch(&messages));
        match self.out.send(out).await {
            Ok(()) => Ok(()),
            Err(_) => Err(SendError::new(
                SendErrorKind::Closed,
                Outgoing::Batch(messages),
            )),
        }
    }

    /// The batching rule in force, for both directions.
    pub fn batching(&self) -> Batching {
        self.batching.get()
    }

    /// Changes the batching rule of the whole transport (both halves and the
    /// reader, which decodes each line with `decode_frame` under the rule in force
    /// when it takes the line, as `FrameDecoder::set_batching` does): `Allowed` once
    /// 2025-03-26 is negotiated (`ProtocolVersion::batching`).
    ///
    /// The reader applies the rule to each line as it decodes it; lines already
    /// decoded and waiting in the inbound queue keep the rule they were decoded
    /// under. So set it before sending the message that ends negotiation: the
    /// server before sending its `initialize` result, the client on receiving it,
    /// before sending `notifications/initialized`. A conforming peer cannot send a
    /// batch earlier.
    pub fn set_batching(&self, batching: Batching) {
        self.batching.set(batching);
    }

    /// Says that the inbound request `id` will get no response: it was
    /// cancelled (`notifications/cancelled`, after which the receiver SHOULD
    /// NOT respond; MCP "Utilities → Cancellation", every revision). On the
    /// Streamable HTTP server the POST that carried it stops waiting for it:
    /// its stream ends once no other request of that POST is pending (events
    /// already sent stay available for `Last-Event-ID` replay). On a line
    /// transport (stdio, a child, [`crate::memory`], [`crate::connect`]), the
    /// answer to the 2025-03-26 batch that carried it, one array, no longer
    /// waits for it (and goes out now if it was the last). A no-op otherwise.
    pub fn forget(&self, id: &Id) {
        if let Outlet::Session(s) = &self.out {
            s.session.forget(id);
        }
        if let Some(replies) = &self.replies {
            replies.forget(id);
        }
    }

    /// Closes the SSE connection that carries the stream of the inbound request
    /// `id` while the request goes on: the "polling" of MCP 2025-11-25
    /// ("Transports → Streamable HTTP", SEP-1699: after sending an event id the
    /// server may close the connection at any time). What is sent for the request
    /// afterwards (and for the other requests of its POST, when it came in a
    /// 2025-03-26 batch), its response included, waits in the stream's replay buffer
    /// (bounded by [`HttpServerConfig::sse_replay_buffer`](crate::http::server::HttpServerConfig::sse_replay_buffer))
    /// until the client reconnects with GET and `Last-Event-ID`; set
    /// [`HttpServerConfig::sse_retry`](crate::http::server::HttpServerConfig::sse_retry) to tell
    /// clients how long to wait first. Returns whether a connection was closed:
    /// `false` on every transport but a Streamable HTTP session, for a JSON reply,
    /// when the request is unknown or its client already gone, and when the
    /// client holds no event id of the stream (no request of its session named
    /// 2025-11-25 or later, so the stream had no priming event: closing would
    /// lose the response).
    pub fn close_stream(&self, id: &Id) -> bool {
        match &self.out {
            Outlet::Session(s) => s.session.close_stream(id),
            _ => false,
        }
    }

    /// Whether the writer task has ended (every later send fails).
    pub fn is_closed(&self) -> bool {
        self.out.is_closed()
    }

    /// Waits until the writer task has ended. Cancel safe.
    pub async fn closed(&self) {
        self.out.closed().await
    }
}

/// What a [`SendError`] gives back.
#[derive(Debug, Clone, PartialEq)]
pub enum Outgoing {
    /// The message of [`Sender::send`] or [`Sender::try_send`].
    Message(Message),
    /// The messages of [`Sender::send_batch`].
    Batch(Vec<Message>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SendErrorKind {
    Closed,
    Full,
    BatchRefused,
    EmptyBatch,
    RequestRefused,
}

/// A message that was not queued, and why. The message comes back with
/// [`into_inner`](Self::into_inner).
#[derive(Debug, Clone, PartialEq)]
pub struct SendError {
    kind: SendErrorKind,
    /// Boxed to keep `Result<(), SendError>` small.
    payload: Box<Outgoing>,
}

impl SendError {
    fn new(kind: SendErrorKind, payload: Outgoing) -> Self {
        SendError {
            kind,
            payload: Box::new(payload),
        }
    }

    /// The writer task has ended: the output failed or was closed. Final.
    pub fn is_closed(&self) -> bool {
        self.kind == SendErrorKind::Closed
    }

    /// The queue was full ([`Sender::try_send`] only). Transient.
    pub fn is_full(&self) -> bool {
        self.kind == SendErrorKind::Full
    }

    /// A batch on a transport whose batching rule is [`Batching::Refused`].
    pub fn is_batch_refused(&self) -> bool {
        self.kind == SendErrorKind::BatchRefused
    }

    /// A request on a sender that carries none: the [`Sender`] of a stateless
    /// 2026-07-28 exchange (MCP 2026-07-28 has no server-to-client requests; ask
    /// with an `input_required` result instead). Permanent for that sender.
    pub fn is_request_refused(&self) -> bool {
        self.kind == SendErrorKind::RequestRefused
    }

    /// An empty batch.
    pub fn is_empty_batch(&self) -> bool {
        self.kind == SendErrorKind::EmptyBatch
    }

    /// The message or batch that was not queued.
    pub fn into_inner(self) -> Outgoing {
        *self.payload
    }
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.kind {
            SendErrorKind::Closed => "transport closed: the message was not sent",
            SendErrorKind::Full => "transport queue full: the message was not sent",
            SendErrorKind::BatchRefused => {
                "batches are not allowed on this transport (only 2025-03-26 has them)"
            }
            SendErrorKind::EmptyBatch => "an empty batch is an invalid request",
            SendErrorKind::RequestRefused => {
                "a stateless 2026-07-28 exchange carries no server-to-client requests"
            }
        })
    }
}

impl std::error::Error for SendError {}

/// The sending half of the queue from a transport's tasks to its [`Receiver`].
///
/// Events travel boxed: tokio's channel allocates its slots 32 at a time, up
/// front, and an `Inbound` is about 150 bytes, so an unboxed queue would cost
/// every idle session or child about 5 KiB before its first message; boxed, it
/// costs 256 bytes, for one small allocation per message.
///
/// A queue made by [`inbound_channel_gated`] also counts the events in it, so that
/// [`InboundTx::deliver`] can hand a message straight to the receiver's
/// [`DirectSink`] when nothing is queued before it (see [`Receiver::set_direct`]).
#[derive(Debug, Clone)]
pub(crate) struct InboundTx {
    tx: mpsc::Sender<Box<Inbound>>,
    gate: Option<Arc<Gate>>,
}

/// A queue of `capacity` (at least 1) inbound events and its [`Receiver`] half.
pub(crate) fn inbound_channel(capacity: usize) -> (InboundTx, mpsc::Receiver<Box<Inbound>>) {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    (InboundTx { tx, gate: None }, rx)
}

/// Like [`inbound_channel`], with the count that lets [`InboundTx::deliver`] skip
/// the queue: the [`Receiver`] must be made with [`Receiver::gated`] and the same
/// gate.
pub(crate) fn inbound_channel_gated(
    capacity: usize,
) -> (InboundTx, mpsc::Receiver<Box<Inbound>>, Arc<Gate>) {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    let gate = Arc::new(Gate::default());
    (
        InboundTx {
            tx,
            gate: Some(gate.clone()),
        },
        rx,
        gate,
    )
}

/// What a [`Receiver`] hands inbound messages to directly, in the task that
/// received them, instead of queueing them ([`Receiver::set_direct`]).
///
/// Implemented by a library's dispatcher (in this workspace, the peer driver of
/// the crate `switchboard`, which routes a message without waiting: a request's
/// handler is started, and runs on in a task of its own if it has to wait; a
/// response goes to its waiter) and by the bridge's upstream (a child's response
/// completes its call).
pub trait DirectSink: Send + Sync + 'static {
    /// Takes one message, in arrival order: never while an earlier message is
    /// still queued or being taken, and never concurrently with itself. Must not
    /// wait or block: it runs in the transport's task (for an HTTP session, the
    /// task serving the POST that carried the message; for stdio, the task
    /// reading the input, which reads nothing more meanwhile). A message it cannot take
    /// that way (one whose handling must wait) it gives back, and the message is
    /// queued for [`Receiver::recv`] as if there were no sink.
    // The message comes back by value: boxing it would cost an allocation on the
    // path this trait exists to make cheap.
    #[allow(clippy::result_large_err)]
    fn deliver(&self, message: Message) -> Result<(), Message>;
}

/// The count of events queued or being handled by the [`Receiver`], and its
/// direct sink: a message may skip the queue only when the count is zero, which
/// keeps every session's messages in arrival order.
#[derive(Default)]
pub(crate) struct Gate(std::sync::Mutex<GateState>);

#[derive(Default)]
struct GateState {
    /// Events in the queue, plus the one the receiver is handling (from its
    /// `recv` until its next one).
    queued: usize,
    sink: Option<Arc<dyn DirectSink>>,
}

impl fmt::Debug for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.lock();
        f.debug_struct("Gate")
            .field("queued", &st.queued)
            .field("direct", &st.sink.is_some())
            .finish()
    }
}

impl Gate {
    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn add(&self) {
        self.lock().queued += 1;
    }

    fn done(&self) {
        let mut st = self.lock();
        st.queued = st.queued.saturating_sub(1);
    }
}

/// One event counted in a [`Gate`] on its way into the queue: the count goes
/// back down on drop unless [`Counted::keep`] says the event was queued.
struct Counted<'a>(Option<&'a Gate>);

impl<'a> Counted<'a> {
    fn new(gate: &'a Gate) -> Self {
        gate.add();
        Counted(Some(gate))
    }

    /// The event is in the queue: it stays counted until the receiver is done.
    fn keep(mut self) {
        self.0 = None;
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        if let Some(g) = self.0 {
            g.done();
        }
    }
}

impl InboundTx {
    /// Queues `event`, waiting while the queue is full. `Err` (with the event)
    /// when the receiver is gone.
    pub(crate) async fn send(&self, event: Inbound) -> Result<(), Box<Inbound>> {
        // Counted before it is queued (no later message may skip ahead of it),
        // and uncounted if it never is: refused, or this call dropped while the
        // queue was full (a POST whose client went away).
        let counted = self.gate.as_deref().map(Counted::new);
        match self.tx.send(Box::new(event)).await {
            Ok(()) => {
                if let Some(c) = counted {
                    c.keep();
                }
                Ok(())
            }
            Err(e) => Err(e.0),
        }
    }

    /// Queues `event` if there is room now. `Err` (with the event) when the
    /// queue is full or the receiver is gone.
    pub(crate) fn try_send(&self, event: Inbound) -> Result<(), Box<Inbound>> {
        if let Some(g) = &self.gate {
            g.add();
        }
        self.tx.try_send(Box::new(event)).map_err(|e| {
            if let Some(g) = &self.gate {
                g.done();
            }
            e.into_inner()
        })
    }

    /// Delivers `event`: a message goes straight to the receiver's
    /// [`DirectSink`] when it has one and nothing is queued or being handled
    /// before it; anything else is queued as by [`send`](Self::send). `Err` (with
    /// the event) when the receiver is gone.
    ///
    /// Callers must not deliver concurrently on one queue (the HTTP session holds
    /// its inbound lock), so no two messages reach the sink at once.
    pub(crate) async fn deliver(&self, event: Inbound) -> Result<(), Box<Inbound>> {
        if let (Some(g), Inbound::Message(_)) = (&self.gate, &event) {
            let sink = {
                let st = g.lock();
                if st.queued == 0 {
                    st.sink.clone()
                } else {
                    None
                }
            };
            if let Some(sink) = sink {
                let Inbound::Message(message) = event else {
                    unreachable!("checked above")
                };
                return match sink.deliver(message) {
                    Ok(()) => Ok(()),
                    Err(message) => self.send(Inbound::Message(message)).await,
                };
            }
        }
        self.send(event).await
    }

    /// Waits until the receiver is gone.
    pub(crate) async fn closed(&self) {
        self.tx.closed().await
    }

    /// A handle that does not keep the queue open.
    pub(crate) fn downgrade(&self) -> InboundWeak {
        InboundWeak {
            tx: self.tx.downgrade(),
            gate: self.gate.clone(),
        }
    }
}

/// A weak [`InboundTx`]: the queue closes when only these remain.
#[derive(Debug, Clone)]
pub(crate) struct InboundWeak {
    tx: mpsc::WeakSender<Box<Inbound>>,
    gate: Option<Arc<Gate>>,
}

impl InboundWeak {
    /// The sender, if the queue is still open.
    pub(crate) fn upgrade(&self) -> Option<InboundTx> {
        self.tx.upgrade().map(|tx| InboundTx {
            tx,
            gate: self.gate.clone(),
        })
    }
}

/// The JSON-RPC error code of [`Inbound::Failed`]: -32000, in the
/// implementation-defined range (JSON-RPC 2.0 §5.1; MCP 2026-07-28 gives
/// -32000..-32019 no meaning). A relay answering for a failed request uses it.
pub const TRANSPORT_ERROR: i64 = -32000;

/// One inbound event.
#[derive(Debug)]
pub enum Inbound {
    /// One message from the peer.
    Message(Message),
    /// A JSON-RPC batch (2025-03-26 only), each item decoded on its own
    /// (JSON-RPC 2.0 §6: an invalid item does not spoil the others). Invalid items
    /// whose id could be read are passed on, not answered by the transport: the
    /// library answers each (`DecodeError::to_response`, unless `wants_response`
    /// is false; on the client side they have also been logged, warn). Those
    /// whose id could not be read are answered by the transport itself and not
    /// passed on. The answers to the batch's requests, sent one by one, go out
    /// as the batch's one array: on the POST's reply over Streamable HTTP, and
    /// as one line, once the last is sent or forgotten ([`Sender::forget`]),
    /// over a line transport.
    Batch(Vec<Result<Message, DecodeError>>),
    /// A request of ours that the transport gave up on. Over HTTP (client side):
    /// it could not be sent, or no JSON-RPC answer to it came back (an HTTP error
    /// status without a JSON-RPC body, a connection that failed, an SSE stream cut
    /// before the response and not resumed). Over a line transport (stdio, either
    /// side): its answer was longer than the line limit and was dropped unread
    /// (its id read from the line's ends). No response from the peer will come for
    /// it; over HTTP the peer may or may not have received it.
    ///
    /// Distinct from a [`Message::Error`] so that a library can tell "the server
    /// answered with an error" from "the transport failed", whatever code the
    /// server uses. A relay that must answer in the peer's place sends `error` as
    /// an error response to `id`: code [`TRANSPORT_ERROR`] (-32000), a message
    /// naming the failure, and `data` `{"httpStatus": u16, "body": excerpt}` when
    /// an HTTP status was received.
    Failed {
        /// The id of the request that failed.
        id: Id,
        /// The transport's description of the failure, in JSON-RPC form.
        error: ErrorObject,
    },
    /// The last event: no more input will come. After it, [`Receiver::recv`]
    /// returns `None`.
    Closed {
        /// Why.
        reason: CloseReason,
    },
}

impl Inbound {
    /// For a relay, which answers in the peer's place: the error response that
    /// stands for [`Inbound::Failed`] `{ id, error }` (JSON-RPC 2.0 §5, `id` kept).
    pub fn failure_response(id: Id, error: ErrorObject) -> Message {
        Message::Error(ErrorResponse::new(Some(id), error))
    }
}

/// How much of a child's last stderr line [`CloseReason::ChildExited`] keeps:
/// 300 characters (the rest is cut, marked with `…`).
pub const STDERR_TAIL_CHARS: usize = 300;

/// Why a transport's input ended ([`Inbound::Closed`]).
///
/// The library should fail every request still awaiting a response when it sees
/// this (MCP R5 "Transports → stdio": after an unexpected exit the client SHOULD
/// restart, retry lost requests and re-open listens).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum CloseReason {
    /// Server side: our own stdin reached end of file. The spec's servers SHOULD
    /// exit then (R5 "Transports → stdio"). Displayed as "stdin closed".
    StdinClosed,
    /// The peer closed its side of a pipe or of an in-memory pair.
    PeerClosed,
    /// Reading the input (or waiting for a child) failed.
    Io(Arc<io::Error>),
    /// A child process exited on its own: its status, and the last non-empty line
    /// it wrote to stderr, if any (at most [`STDERR_TAIL_CHARS`] characters), which
    /// usually says why (a missing argument, a path that does not exist).
    /// Displayed as "child exited (exit status: 1); its last stderr line: ...".
    ChildExited(ExitStatus, Option<Arc<str>>),
    /// A child process closed its stdout but did not exit within
    /// [`crate::stdio::STDOUT_EOF_EXIT_WAIT`]; it can no longer answer. It keeps running
    /// until [`crate::stdio::ChildProcess::shutdown`] or the handle is dropped.
    ChildStdoutClosed,
    /// A child process was shut down at our request; how it ended.
    ShutDown(ShutdownReport),
    /// HTTP server: the client ended the session with `DELETE` (MCP 2025-03-26 to
    /// 2025-11-25, "Streamable HTTP" → "Session Management").
    SessionDeleted,
    /// HTTP server: the session saw no request and had no open stream for the
    /// configured idle timeout
    /// ([`HttpServerConfig::session_idle_timeout`](crate::http::server::HttpServerConfig::session_idle_timeout)).
    SessionExpired,
    /// HTTP server: the session was idle (no open response, no request
    /// awaiting its response) and the least recently used one when a new
    /// session came with every slot taken
    /// ([`HttpServerConfig::max_sessions`](crate::http::server::HttpServerConfig::max_sessions)):
    /// it was ended to make room.
    SessionEvicted,
    /// HTTP server: the session was ended on this side: the
    /// [`HttpServer`](crate::http::server::HttpServer) was dropped, or every
    /// [`Sender`] of the session was dropped.
    SessionClosed,
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CloseReason::StdinClosed => f.write_str("stdin closed"),
            CloseReason::PeerClosed => f.write_str("peer closed the connection"),
            CloseReason::Io(e) => write!(f, "I/O error: {e}"),
            CloseReason::ChildExited(status, None) => write!(f, "child exited ({status})"),
            CloseReason::ChildExited(status, Some(line)) => {
                write!(f, "child exited ({status}); its last stderr line: {line}")
            }
            CloseReason::ChildStdoutClosed => {
                f.write_str("child closed its stdout but is still running")
            }
            CloseReason::ShutDown(report) => write!(f, "child shut down: {report}"),
            CloseReason::SessionDeleted => f.write_str("the client deleted the HTTP session"),
            CloseReason::SessionExpired => f.write_str("the HTTP session expired (idle)"),
            CloseReason::SessionEvicted => {
                f.write_str("the HTTP session was evicted (idle, and the session table full)")
            }
            CloseReason::SessionClosed => f.write_str("the HTTP session was closed by the server"),
        }
    }
}

/// The receiving half: yields what the peer sent, in order, then
/// [`Inbound::Closed`].
///
/// The reader task splits lines (`LineDecoder`, with the transport's line limit),
/// decodes each (`decode_frame`, with the transport's batching rule) and queues the result; at most
/// [`TransportConfig::channel_capacity`](crate::TransportConfig::channel_capacity)
/// events wait here, after which the reader stops reading (backpressure).
///
/// **Dropping.** The reader task ends at its next event and stops reading its
/// input: a peer that keeps writing blocks once the pipe is full. The sending side
/// is not affected; a child process is not stopped (that is
/// [`crate::stdio::ChildProcess`]'s job).
#[derive(Debug)]
pub struct Receiver {
    rx: mpsc::Receiver<Box<Inbound>>,
    pub(crate) batching: BatchingSwitch,
    /// Set for a transport that can deliver directly ([`Receiver::set_direct`]).
    gate: Option<Arc<Gate>>,
    /// An event from this queue was yielded and is still counted in the gate: it
    /// is being handled until the next `recv`.
    held: bool,
}

impl Receiver {
    /// A receiver of `rx`, with no direct delivery.
    pub(crate) fn new(rx: mpsc::Receiver<Box<Inbound>>, batching: BatchingSwitch) -> Self {
        Receiver {
            rx,
            batching,
            gate: None,
            held: false,
        }
    }

    /// A receiver of a queue made by [`inbound_channel_gated`], with its gate.
    pub(crate) fn gated(
        rx: mpsc::Receiver<Box<Inbound>>,
        batching: BatchingSwitch,
        gate: Arc<Gate>,
    ) -> Self {
        Receiver {
            rx,
            batching,
            gate: Some(gate),
            held: false,
        }
    }

    /// The next event. `None` after [`Inbound::Closed`] has been yielded, or if
    /// the driver tasks are gone without one (the runtime shut down).
    ///
    /// With a [`DirectSink`] set, an event yielded here counts as being handled
    /// until the next call (or until the receiver is dropped): no message goes to
    /// the sink meanwhile, so the two ways in keep arrival order.
    ///
    /// Cancel safe: if the future is dropped before it completes, no event is lost.
    pub async fn recv(&mut self) -> Option<Inbound> {
        self.release();
        let event = self.rx.recv().await;
        self.held = event.is_some() && self.gate.is_some();
        event.map(|e| *e)
    }

    /// The next event if one is waiting; never waits. `None` when nothing is
    /// waiting or the stream has ended.
    pub fn try_recv(&mut self) -> Option<Inbound> {
        self.release();
        let event = self.rx.try_recv().ok();
        self.held = event.is_some() && self.gate.is_some();
        event.map(|e| *e)
    }

    /// Lets the transport hand each message straight to `sink`, in the task that
    /// received it, whenever no earlier event is queued or being handled (see
    /// [`recv`](Self::recv)); batches and [`Inbound::Closed`] are always queued.
    /// This saves the hand-off between tasks per message. Returns whether this
    /// transport does it: the Streamable HTTP server's sessions (a POST's
    /// message then reaches the sink in the task serving the POST) and the
    /// line transports, stdio both ways (a line's message reaches it in the task
    /// reading the input); elsewhere everything is queued as before.
    ///
    /// The sink is dropped by [`clear_direct`](Self::clear_direct) and when the
    /// receiver is dropped.
    pub fn set_direct(&self, sink: Arc<dyn DirectSink>) -> bool {
        match &self.gate {
            Some(g) => {
                g.lock().sink = Some(sink);
                true
            }
            None => false,
        }
    }

    /// Stops direct delivery: every later message is queued.
    pub fn clear_direct(&self) {
        if let Some(g) = &self.gate {
            g.lock().sink = None;
        }
    }

    /// Ends the count of the event last yielded.
    fn release(&mut self) {
        if std::mem::take(&mut self.held) {
            if let Some(g) = &self.gate {
                g.done();
            }
        }
    }

    /// The batching rule in force ([`Sender::batching`]).
    pub fn batching(&self) -> Batching {
        self.batching.get()
    }

    /// Same as [`Sender::set_batching`].
    pub fn set_batching(&self, batching: Batching) {
        self.batching.set(batching);
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(g) = &self.gate {
            let mut st = g.lock();
            st.sink = None;
            if self.held {
                st.queued = st.queued.saturating_sub(1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_protocol::jsonrpc::Request;

    fn ping() -> Message {
        Message::Request(Request::new(1, "ping", &serde_json::json!({})).unwrap())
    }

    fn pair(capacity: usize) -> (Sender, mpsc::Receiver<Outbound>) {
        let (tx, rx) = mpsc::channel(capacity);
        let sender = Sender {
            out: Outlet::Queue(tx),
            batching: BatchingSwitch::new(Batching::Refused),
            no_requests: false,
            replies: None,
        };
        (sender, rx)
    }

    /// A sink that records the ids of the requests it takes.
    #[derive(Default)]
    struct Recording(std::sync::Mutex<Vec<Id>>);

    impl DirectSink for Recording {
        /// Takes requests; gives back anything else.
        fn deliver(&self, message: Message) -> Result<(), Message> {
            match message {
                Message::Request(r) => {
                    self.0.lock().unwrap().push(r.id);
                    Ok(())
                }
                other => Err(other),
            }
        }
    }

    fn request(id: i64) -> Inbound {
        Inbound::Message(Message::Request(
            Request::new(id, "ping", &serde_json::json!({})).unwrap(),
        ))
    }

    fn id_of(event: Option<Inbound>) -> Id {
        match event {
            Some(Inbound::Message(Message::Request(r))) => r.id,
            other => panic!("expected a request, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_message_skips_the_queue_only_when_nothing_is_before_it() {
        let (tx, rx, gate) = inbound_channel_gated(4);
        let mut receiver = Receiver::gated(rx, BatchingSwitch::new(Batching::Refused), gate);
        let sink = Arc::new(Recording::default());
        assert!(receiver.set_direct(sink.clone()));

        // Nothing queued: straight to the sink.
        tx.deliver(request(1)).await.unwrap();
        assert_eq!(*sink.0.lock().unwrap(), vec![Id::from(1)]);

        // A queued event (as `send` queues a close) holds back later messages
        // until the receiver has taken it and asked for the next one.
        tx.send(request(2)).await.unwrap();
        tx.deliver(request(3)).await.unwrap();
        assert_eq!(sink.0.lock().unwrap().len(), 1, "3 waits behind 2");
        assert_eq!(id_of(receiver.try_recv()), Id::from(2));
        // 2 is being handled (until the next recv): 4 is queued behind 3.
        tx.deliver(request(4)).await.unwrap();
        assert_eq!(id_of(receiver.try_recv()), Id::from(3));
        assert_eq!(id_of(receiver.try_recv()), Id::from(4));
        assert!(receiver.try_recv().is_none());
        // All taken and handled: direct again.
        tx.deliver(request(5)).await.unwrap();
        assert_eq!(*sink.0.lock().unwrap(), vec![Id::from(1), Id::from(5)]);

        // A message the sink gives back is queued, and holds back the next.
        let note = Message::Notification(
            switchboard_protocol::jsonrpc::Notification::new("n", &serde_json::json!({})).unwrap(),
        );
        tx.deliver(Inbound::Message(note)).await.unwrap();
        tx.deliver(request(8)).await.unwrap();
        assert!(matches!(
            receiver.try_recv(),
            Some(Inbound::Message(Message::Notification(_)))
        ));
        assert_eq!(id_of(receiver.try_recv()), Id::from(8));
        assert!(receiver.try_recv().is_none());

        // A batch is always queued.
        tx.deliver(Inbound::Batch(vec![])).await.unwrap();
        assert!(matches!(receiver.try_recv(), Some(Inbound::Batch(_))));
        assert!(receiver.try_recv().is_none());

        // No sink, no direct delivery; dropping the receiver drops the sink.
        receiver.clear_direct();
        tx.deliver(request(6)).await.unwrap();
        assert_eq!(id_of(receiver.try_recv()), Id::from(6));
        assert!(receiver.set_direct(sink.clone()));
        drop(receiver);
        assert_eq!(
            Arc::strong_count(&sink),
            1,
            "the receiver let go of the sink"
        );
        assert!(
            tx.deliver(request(7)).await.is_err(),
            "the receiver is gone"
        );
        assert_eq!(sink.0.lock().unwrap().len(), 2);
    }

    /// A send given up while the queue is full (its caller dropped) leaves the
    /// count as it was: direct delivery resumes once the queue is drained.
    #[tokio::test]
    async fn a_send_given_up_on_a_full_queue_is_not_counted() {
        let (tx, rx, gate) = inbound_channel_gated(1);
        let mut receiver = Receiver::gated(rx, BatchingSwitch::new(Batching::Refused), gate);
        let sink = Arc::new(Recording::default());
        assert!(receiver.set_direct(sink.clone()));
        tx.send(request(1)).await.unwrap();
        let blocked =
            tokio::time::timeout(std::time::Duration::from_millis(20), tx.send(request(2))).await;
        assert!(blocked.is_err(), "the queue is full: the send waits");
        assert_eq!(id_of(receiver.try_recv()), Id::from(1));
        assert!(receiver.try_recv().is_none());
        tx.deliver(request(3)).await.unwrap();
        assert_eq!(*sink.0.lock().unwrap(), vec![Id::from(3)]);
    }

    #[test]
    fn a_receiver_without_a_gate_has_no_direct_delivery() {
        let (_tx, rx) = inbound_channel(1);
        let receiver = Receiver::new(rx, BatchingSwitch::new(Batching::Refused));
        assert!(!receiver.set_direct(Arc::new(Recording::default())));
    }

    #[test]
    fn the_switch_is_shared_by_every_holder() {
        let (sender, _rx) = pair(1);
        let clone = sender.clone();
        assert_eq!(clone.batching(), Batching::Refused);
        sender.set_batching(Batching::Allowed);
        assert_eq!(clone.batching(), Batching::Allowed);
    }

    #[test]
    fn try_send_reports_full_then_closed_and_gives_the_message_back() {
        let (sender, mut rx) = pair(1);
        sender.try_send(ping()).unwrap();
        let e = sender.try_send(ping()).unwrap_err();
        assert!(e.is_full() && !e.is_closed(), "{e}");
        assert_eq!(e.into_inner(), Outgoing::Message(ping()));
        // What was queued is one encoded line.
        let line = rx.try_recv().unwrap().line;
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(Message::decode(&line[..line.len() - 1]).unwrap(), ping());
        drop(rx);
        let e = sender.try_send(ping()).unwrap_err();
        assert!(e.is_closed(), "{e}");
        assert!(sender.is_closed());
        assert_eq!(e.to_string(), "transport closed: the message was not sent");
    }

    #[test]
    fn close_reasons_read_well() {
        assert_eq!(CloseReason::StdinClosed.to_string(), "stdin closed");
        assert_eq!(
            CloseReason::PeerClosed.to_string(),
            "peer closed the connection"
        );
        let io = CloseReason::Io(Arc::new(io::Error::other("boom")));
        assert_eq!(io.to_string(), "I/O error: boom");
    }
}
