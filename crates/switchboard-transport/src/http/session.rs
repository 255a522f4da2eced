//! One Streamable HTTP session: its streams, their replay buffers, the routing of
//! each message the library sends ([`Sender`](crate::Sender)) onto the stream it
//! belongs to (done in the sending task: no router task per session), the
//! registry of live sessions and its idle reaper.
//!
//! Source: MCP 2025-03-26 to 2025-11-25, "Transports → Streamable HTTP" →
//! "Session Management", "Listening for Messages from the Server", "Resumability
//! and Redelivery".
//!
//! Streams are numbered per session: 0 is the standalone stream (GET), 1, 2, ...
//! are the streams of POSTs that carried requests. Each SSE event's id is
//! `<stream>-<seq>` ([`guard::event_id`]); seq 0 is the priming event, messages
//! count from 1.

use std::collections::{HashSet, VecDeque};

// foldhash, not SipHash: every POST looks its session, stream and request ids
// up several times (keys are minted here, or bounded per session).
use foldhash::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use bytes::Bytes;
use switchboard_protocol::jsonrpc::Id;
use switchboard_protocol::ProtocolVersion;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::guard;
use crate::config::TransportConfig;
use crate::handle::{
    BatchingSwitch, CloseReason, Inbound, Outbound, Outlet, Receiver, Route, Sender, SessionOutlet,
    Transport,
};

/// The standalone (GET) stream's number.
pub(crate) const STANDALONE: u64 = 0;

/// How many finished POST streams whose response was not handed to a live
/// connection (the client had gone) are kept per session for resumption; the
/// oldest is dropped first.
pub(crate) const MAX_RETAINED_STREAMS: usize = 32;

/// The limits a session runs under.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    /// Events kept per SSE stream for replay (at least 1).
    pub(crate) replay: usize,
    /// Capacity of each connection's event queue and of the session's queues.
    pub(crate) capacity: usize,
}

/// The live sessions of one server, by id.
#[derive(Debug)]
pub(crate) struct Registry {
    sessions: Mutex<HashMap<Arc<str>, Arc<Session>>>,
    max: usize,
    /// Sessions ended so far to make room for a new one ([`Self::insert`]).
    evicted: std::sync::atomic::AtomicU64,
}

/// Of the sessions `(id, idle since)` (`None`: not idle), the one idle the
/// longest: the least recently used, to end when the table is full.
fn least_recently_used<'a>(
    sessions: impl Iterator<Item = (&'a Arc<str>, Option<Instant>)>,
) -> Option<&'a Arc<str>> {
    sessions
        .filter_map(|(id, since)| since.map(|t| (t, id)))
        .min_by_key(|(t, _)| *t)
        .map(|(_, id)| id)
}

impl Registry {
    pub(crate) fn new(max: usize) -> Self {
        Registry {
            sessions: Mutex::new(HashMap::default()),
            max,
            evicted: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Arc<str>, Arc<Session>>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.lock().get(id).cloned()
    }

    /// Adds a session. When `max` are live, the least recently used idle one
    /// (no open response, no request awaiting its response: a client that
    /// left without DELETE, as the TypeScript SDK's v1 client does) is taken
    /// out to make room, ended with [`CloseReason::SessionEvicted`] (its
    /// client's next request gets 404 and it starts a new session) and counted
    /// in the log; `false` (not added) when every live session is busy.
    pub(crate) fn insert(&self, session: Arc<Session>) -> bool {
        let mut map = self.lock();
        let mut evicted = None;
        if map.len() >= self.max {
            let lru = least_recently_used(map.iter().map(|(id, s)| (id, s.idle_since())));
            let Some(id) = lru.cloned() else {
                return false;
            };
            evicted = map.remove(&id);
        }
        map.insert(session.id.clone(), session);
        drop(map);
        if let Some(old) = evicted {
            let total = self
                .evicted
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                + 1;
            let idle = old.idle_since().map(|t| t.elapsed().as_secs());
            info!(
                session = %old.id,
                idle_secs = idle,
                evicted_total = total,
                max_sessions = self.max,
                "session table full: ended the least recently used idle session to make room"
            );
            old.end(CloseReason::SessionEvicted);
        }
        true
    }

    /// How many sessions [`Self::insert`] has ended to make room.
    pub(crate) fn evicted(&self) -> u64 {
        self.evicted.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(crate) fn remove(&self, id: &str) {
        self.lock().remove(id);
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Takes every session out (server shutdown).
    pub(crate) fn drain(&self) -> Vec<Arc<Session>> {
        self.lock().drain().map(|(_, s)| s).collect()
    }

    /// Ends, every `idle / 8` (between 10 ms and 1 s), the sessions that have
    /// had no open response and no request for `idle`
    /// ([`CloseReason::SessionExpired`]). Stops once the registry is gone (the
    /// server was dropped).
    pub(crate) fn spawn_reaper(self: &Arc<Self>, idle: Duration) {
        let registry = Arc::downgrade(self);
        let period = (idle / 8).clamp(Duration::from_millis(10), Duration::from_secs(1));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(registry) = registry.upgrade() else {
                    break;
                };
                let now = Instant::now();
                let expired: Vec<Arc<Session>> = registry
                    .lock()
                    .values()
                    .filter(|s| s.idle_expired(idle, now))
                    .cloned()
                    .collect();
                drop(registry);
                for session in expired {
                    debug!(session = %session.id, "idle timeout; ending the session");
                    session.end(CloseReason::SessionExpired);
                }
            }
        });
    }
}

/// One SSE stream (or, in JSON-reply mode, the channel of one POST's reply).
#[derive(Debug)]
struct Stream {
    /// A POST answered with `application/json`: only responses go here, unframed,
    /// nothing is kept for replay.
    json: bool,
    /// Requests of this POST still without a response.
    pending: usize,
    /// Where the stream's events go now: (generation, outlet); `None` while no
    /// connection reads it.
    live: Option<(u64, Live)>,
    /// The last events, for replay: (seq, encoded event).
    buffer: VecDeque<(u64, Bytes)>,
    next_seq: u64,
    /// The highest seq handed to a live connection (at least: an event counts
    /// once it is on a connection's queue, and a replayed stream counts whole).
    /// No event id beyond it was ever sent.
    delivered: u64,
    /// Seq 0, the priming event that opens a POST's stream, was sent (the
    /// standalone stream never sends it: its priming events take fresh seqs).
    sent_zero: bool,
    /// The client holds an event id of this stream (a priming event was sent, or
    /// it resumed with `Last-Event-ID`), so it can come back after the server
    /// closes the connection ([`Session::close_stream`]).
    primed: bool,
    /// Its POST answers with `application/json` if the response comes first
    /// and completes the stream: that event is then queued as the message
    /// itself, not an SSE event (see `commit`). Cleared when the POST opens
    /// the stream ([`Session::stream_it`]).
    late_json: bool,
}

impl Stream {
    fn new(json: bool, pending: usize, primed: bool) -> Self {
        Stream {
            late_json: false,
            json,
            pending,
            live: None,
            buffer: VecDeque::new(),
            next_seq: 1,
            delivered: 0,
            sent_zero: primed,
            primed,
        }
    }

    /// A fresh seq for a priming event of a connection that starts with nothing
    /// to replay: unique in the session, after every event sent so far, and
    /// counted as delivered (it goes to the live connection first).
    fn priming_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.delivered = seq;
        self.primed = true;
        seq
    }

    fn live_open(&self) -> bool {
        match &self.live {
            Some((_, Live::Queue(tx))) => !tx.is_closed(),
            Some((_, Live::Early(_))) => true,
            Some((_, Live::Closing(..))) | None => false,
        }
    }

    /// A POST stream whose POST has not taken its events yet ([`Live::Early`],
    /// [`Live::Closing`]): it ends when the POST takes them or goes.
    fn is_early(&self) -> bool {
        matches!(self.live, Some((_, Live::Early(_) | Live::Closing(..))))
    }

    /// The generation of the connection that takes the stream's next events:
    /// `None` when none does (a closing POST takes no more).
    fn reader(&self) -> Option<u64> {
        match &self.live {
            Some((g, Live::Early(_) | Live::Queue(_))) => Some(*g),
            Some((_, Live::Closing(..))) | None => None,
        }
    }
}

/// Where the events of a stream with a reader go.
#[derive(Debug)]
enum Live {
    /// The POST that opened the stream is still delivering its messages and has
    /// not taken its events yet ([`Session::attach`]): they wait here, in order,
    /// at most [`Limits::capacity`] of them. A reply complete by then (a handler
    /// that answered while its request was delivered, the usual quick tool) goes
    /// out without a queue ever being made for it.
    Early(VecDeque<Bytes>),
    /// Early events whose connection [`Session::close_stream`] closed before its
    /// POST took them, and the seq of the last: the POST still sends them, then
    /// its body ends; later events only wait for a resumption.
    Closing(VecDeque<Bytes>, u64),
    /// The queue of the connection reading the stream.
    Queue(mpsc::Sender<Bytes>),
}

#[derive(Debug)]
struct State {
    ended: bool,
    next_stream: u64,
    next_gen: u64,
    /// Open requests: id → the stream of the POST that carried it.
    requests: HashMap<Id, u64>,
    streams: HashMap<u64, Stream>,
    /// Finished POST streams kept for resumption, oldest first.
    retained: VecDeque<u64>,
    last_activity: Instant,
    connections: usize,
    /// The `initialize` request that opened the session, until it is answered
    /// (or forgotten): its response names the negotiated revision.
    initialize: Option<Id>,
    /// The revision the response to that `initialize` named
    /// (`result.protocolVersion`), once it was sent; `None` before, and when the
    /// answer named none this crate knows (an error, say).
    negotiated: Option<ProtocolVersion>,
    /// The response to that `initialize` was an error response: the session was
    /// never established ([`Session::initialize_failed`]).
    initialize_failed: bool,
}

/// Why a stream could not be opened or resumed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StreamError {
    /// The session has ended (404).
    Ended,
    /// A request id of the POST is already open in this session (400).
    DuplicateId(Id),
    /// The event id names no stream kept here (400).
    UnknownStream,
    /// The event id names a kept stream but an event it never sent to a
    /// connection (its sequence number is beyond the last one sent, or it is a
    /// seq 0 the stream never had): the client cannot hold it (400; the stream is
    /// left as it was).
    NeverSent,
}

/// What a new or resumed SSE connection gets: events to send first, then the
/// live queue (absent for a finished stream), and the seq of the priming event
/// to send before them, when one was asked for and there is nothing to replay
/// (a replayed event carries an id already; a priming event then would repeat
/// one, and event ids are unique within a session).
pub(crate) struct Opened {
    pub(crate) prefix: VecDeque<Bytes>,
    pub(crate) rx: Option<mpsc::Receiver<Bytes>>,
    pub(crate) priming: Option<u64>,
}

/// One session.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) id: Arc<str>,
    /// The endpoint it was opened at: 0 for
    /// [`HttpServerConfig::path`](super::server::HttpServerConfig::path), `i`
    /// for the `i`th of [`HttpServerConfig::routes`](super::server::HttpServerConfig::routes)
    /// (counted from 1). Requests naming it at another endpoint get 404.
    pub(crate) endpoint: usize,
    /// `None` once [`Inbound::Closed`] was queued; the lock orders deliveries
    /// before it.
    inbound: tokio::sync::Mutex<Option<crate::handle::InboundTx>>,
    pub(crate) batching: BatchingSwitch,
    state: Mutex<State>,
    ended: watch::Sender<bool>,
    limits: Limits,
    registry: Weak<Registry>,
    /// A request of this session named 2025-11-25 or later in
    /// `MCP-Protocol-Version`: its client knows priming events ([`Self::primes`]).
    primes: std::sync::atomic::AtomicBool,
    /// Woken when a POST takes its early events or goes without them, for
    /// senders that found those at capacity ([`Live::Early`]), and when a new
    /// connection takes a stream over from another ([`Self::new_live`]), for
    /// senders waiting for room on the old one's full queue.
    attached: tokio::sync::Notify,
    /// The subject that opened it, when the server checks tokens
    /// ([`HttpServerConfig::auth`](super::server::HttpServerConfig::auth)):
    /// only that subject's requests may name it.
    owner: std::sync::OnceLock<Arc<str>>,
}

/// Held by each open HTTP response of a session (in its body): the session is
/// not idle while one exists.
#[derive(Debug)]
pub(crate) struct ConnGuard {
    session: Arc<Session>,
}

impl Drop for ConnGuard {
    fn drop(&mut self) {
        let mut st = self.session.lock();
        st.connections = st.connections.saturating_sub(1);
        st.last_activity = Instant::now();
    }
}

impl Session {
    /// Records the subject that opened the session (once; later calls are
    /// ignored).
    pub(crate) fn set_owner(&self, subject: &str) {
        let _ = self.owner.set(subject.into());
    }

    /// Whether a request made as `principal` may use this session: always
    /// when it has no owner (tokens are not checked), else only its owner's.
    pub(crate) fn owned_by(&self, principal: Option<&super::resource::Principal>) -> bool {
        match self.owner.get() {
            None => true,
            Some(owner) => principal.is_some_and(|p| *p.subject == **owner),
        }
    }

    /// Makes a session, opened at `endpoint` ([`Self::endpoint`]), and its
    /// [`Transport`]. Idle expiry is the registry's reaper's
    /// ([`Registry::spawn_reaper`]).
    pub(crate) fn start(
        id: Arc<str>,
        endpoint: usize,
        limits: Limits,
        registry: Weak<Registry>,
        config: &TransportConfig,
    ) -> (Arc<Session>, Transport) {
        let (in_tx, in_rx, gate) = crate::handle::inbound_channel_gated(config.capacity());
        let batching = BatchingSwitch::new(config.batching);
        let mut streams = HashMap::default();
        streams.insert(STANDALONE, Stream::new(false, 0, false));
        let session = Arc::new(Session {
            id: id.clone(),
            endpoint,
            inbound: tokio::sync::Mutex::new(Some(in_tx)),
            batching: batching.clone(),
            state: Mutex::new(State {
                ended: false,
                next_stream: STANDALONE + 1,
                next_gen: 0,
                requests: HashMap::default(),
                streams,
                retained: VecDeque::new(),
                last_activity: Instant::now(),
                connections: 0,
                initialize: None,
                negotiated: None,
                initialize_failed: false,
            }),
            ended: watch::channel(false).0,
            limits,
            registry,
            primes: std::sync::atomic::AtomicBool::new(false),
            attached: tokio::sync::Notify::new(),
            owner: std::sync::OnceLock::new(),
        });
        let transport = Transport {
            sender: Sender {
                out: Outlet::Session(Arc::new(SessionOutlet {
                    session: session.clone(),
                })),
                batching: batching.clone(),
                no_requests: false,
                replies: None,
            },
            receiver: Receiver::gated(in_rx, batching, gate),
        };
        (session, transport)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records activity (any request of the session).
    pub(crate) fn touch(&self) {
        self.lock().last_activity = Instant::now();
    }

    /// A guard for one open response of this session.
    pub(crate) fn guard(self: &Arc<Self>) -> ConnGuard {
        let mut st = self.lock();
        st.connections += 1;
        st.last_activity = Instant::now();
        drop(st);
        ConnGuard {
            session: self.clone(),
        }
    }

    /// A new connection reads `stream` from now on: its queue. A connection
    /// that read it until now is taken over: its queue is dropped, so its body
    /// ends once it has written what was queued (a half-open connection, which
    /// the server cannot tell from a slow one, no longer holds the stream), and
    /// senders waiting for room on it go to the new one. What the old connection
    /// may not have delivered is replayed from `Last-Event-ID` by the caller.
    fn new_live(&self, st: &mut State, stream: u64) -> mpsc::Receiver<Bytes> {
        let (tx, rx) = mpsc::channel(self.limits.capacity);
        st.next_gen += 1;
        let generation = st.next_gen;
        let old = st
            .streams
            .get_mut(&stream)
            .and_then(|s| s.live.replace((generation, Live::Queue(tx))));
        if let Some((_, Live::Queue(_))) = old {
            debug!(session = %self.id, stream, "a new connection takes the stream over");
            self.attached.notify_waiters();
        }
        rx
    }

    /// Whether an SSE stream opened now, by a request naming `version` in
    /// `MCP-Protocol-Version`, starts with a priming event (2025-11-25 onward): when
    /// `version` is 2025-11-25 or later, or an earlier request of the session
    /// named one, or its `initialize` answer agreed on one. A client that has shown it speaks 2025-11-25 gets its priming
    /// events even on a request whose header names an older revision (the
    /// conformance suite's polling scenario sends such requests on a 2025-11-25
    /// session); a client that never did gets none (an older client may not skip
    /// an event with empty data). Not for the `initialize` that opens the
    /// session, which names no revision in its header (2025-03-26 is assumed):
    /// its reply is primed by the revision it negotiates ([`Self::negotiated`]).
    pub(crate) fn primes(&self, version: ProtocolVersion) -> bool {
        use std::sync::atomic::Ordering;
        if version >= ProtocolVersion::V2025_11_25 {
            // Written once: later requests only read the shared flag.
            if !self.primes.load(Ordering::Relaxed) {
                self.primes.store(true, Ordering::Relaxed);
            }
            true
        } else {
            self.primes.load(Ordering::Relaxed)
        }
    }

    /// Marks `id` as the `initialize` request that opens the session, before it is
    /// delivered: its response, when sent, records the negotiated revision
    /// ([`Self::negotiated`]).
    pub(crate) fn negotiates(&self, id: &Id) {
        self.lock().initialize = Some(id.clone());
    }

    /// The revision the session's `initialize` response named, once it was
    /// sent (see [`Self::negotiates`]).
    pub(crate) fn negotiated(&self) -> Option<ProtocolVersion> {
        self.lock().negotiated
    }

    /// Whether the session's `initialize` was answered with an error response
    /// (see [`Self::negotiates`]): the session was not established, so its id
    /// must not be handed out (2025-03-26+, "Session Management": the id comes
    /// with the response carrying the `InitializeResult`).
    pub(crate) fn initialize_failed(&self) -> bool {
        self.lock().initialize_failed
    }

    /// POST stream `stream`, opened unprimed, gets its priming event (seq 0)
    /// after all, ahead of everything sent on it so far (none of which has
    /// reached the client yet): the reply to the `initialize` that opens the
    /// session, once its answer shows the revision. Nothing when the stream has
    /// already ended and is not kept.
    pub(crate) fn primed_late(&self, stream: u64) {
        if let Some(s) = self.lock().streams.get_mut(&stream) {
            s.sent_zero = true;
            s.primed = true;
        }
    }

    /// Opens the stream of a POST carrying the requests `ids` (unique: the caller
    /// checks) and `orphans` invalid batch items without a readable id (answered
    /// on it with [`Route::Orphan`]; at least one of the two is non-zero), before
    /// they are delivered, so no response can miss it. `primed`: the caller sends
    /// a priming event (seq 0) first.
    ///
    /// Events of the stream wait in the session until the POST takes them with
    /// [`attach`](Self::attach) (or gives up, [`detach`](Self::detach)), which it
    /// does once its messages are delivered; `(stream, generation)` names them.
    pub(crate) fn open_request_stream(
        &self,
        ids: &[Id],
        orphans: usize,
        (json, late_json): (bool, bool),
        primed: bool,
    ) -> Result<(u64, u64), StreamError> {
        let mut st = self.lock();
        if st.ended {
            return Err(StreamError::Ended);
        }
        if let Some(id) = ids.iter().find(|id| st.requests.contains_key(*id)) {
            return Err(StreamError::DuplicateId(id.clone()));
        }
        let stream = st.next_stream;
        st.next_stream += 1;
        let mut opened = Stream::new(json, ids.len() + orphans, primed);
        opened.late_json = late_json && !json;
        st.streams.insert(stream, opened);
        for id in ids {
            st.requests.insert(id.clone(), stream);
        }
        st.next_gen += 1;
        let generation = st.next_gen;
        if let Some(s) = st.streams.get_mut(&stream) {
            s.live = Some((generation, Live::Early(VecDeque::new())));
        }
        Ok((stream, generation))
    }

    /// The POST that opened `stream` (as `generation`) takes its events: those
    /// sent so far, and the queue of those to come unless the stream is complete
    /// already (every response sent: the body is then whole, and no queue is
    /// made). Nothing, and no queue, when the stream went meanwhile (the session
    /// ended, or [`close_stream`](Self::close_stream) closed this connection:
    /// its events wait for a resumption).
    pub(crate) fn attach(
        &self,
        stream: u64,
        generation: u64,
    ) -> (VecDeque<Bytes>, Option<mpsc::Receiver<Bytes>>) {
        let taken = self.take_early(stream, generation);
        // Senders that found the early events full wait for this, whatever came
        // of it (a queue, or the stream's end).
        self.attached.notify_waiters();
        taken
    }

    /// [`attach`](Self::attach) under the lock.
    fn take_early(
        &self,
        stream: u64,
        generation: u64,
    ) -> (VecDeque<Bytes>, Option<mpsc::Receiver<Bytes>>) {
        let mut st = self.lock();
        let Some(s) = st.streams.get_mut(&stream) else {
            return (VecDeque::new(), None);
        };
        let (events, closing) = match &mut s.live {
            Some((g, Live::Early(events))) if *g == generation => (std::mem::take(events), false),
            Some((g, Live::Closing(events, last))) if *g == generation => {
                s.delivered = *last;
                (std::mem::take(events), true)
            }
            _ => return (VecDeque::new(), None),
        };
        if closing {
            // Its connection was closed: what came after the events it takes
            // waits for a resumption.
            s.live = None;
            if s.pending == 0 {
                let keep = !s.json && s.next_seq - 1 > s.delivered;
                finish_stream(&mut st, stream, keep);
            }
            return (events, None);
        }
        s.delivered = s.next_seq - 1;
        if s.pending == 0 {
            finish_stream(&mut st, stream, false);
            return (events, None);
        }
        let (tx, rx) = mpsc::channel(self.limits.capacity);
        s.live = Some((generation, Live::Queue(tx)));
        (events, Some(rx))
    }

    /// The POST that opened `stream` (as `generation`) goes without taking its
    /// events (its connection closed): the stream has no reader from now on, as
    /// when a connection goes, so its events wait in its replay buffer for a
    /// resumption. Nothing when the POST has attached already.
    pub(crate) fn detach(&self, stream: u64, generation: u64) {
        let mut st = self.lock();
        let Some(s) = st.streams.get_mut(&stream) else {
            return;
        };
        if !matches!(&s.live, Some((g, Live::Early(_) | Live::Closing(..))) if *g == generation) {
            return;
        }
        s.live = None;
        if s.pending == 0 {
            let keep = !s.json && s.next_seq - 1 > s.delivered;
            finish_stream(&mut st, stream, keep);
        }
        drop(st);
        self.attached.notify_waiters();
    }

    /// Forgets a stream whose requests were never delivered.
    pub(crate) fn cancel_stream(&self, stream: u64) {
        let mut st = self.lock();
        st.streams.remove(&stream);
        st.requests.retain(|_, s| *s != stream);
        drop(st);
        self.attached.notify_waiters();
    }

    /// Opens the standalone stream for a GET without `Last-Event-ID`: events
    /// buffered and not yet handed to any connection come first. A connection
    /// still reading it is taken over ([`Self::new_live`]): a client only opens
    /// a second one when it has given the first up (a half-open connection
    /// looks open here until a write to it fails, which can take many minutes).
    pub(crate) fn open_standalone(&self, prime: bool) -> Result<Opened, StreamError> {
        let mut st = self.lock();
        if st.ended {
            return Err(StreamError::Ended);
        }
        let s = st.streams.get(&STANDALONE).expect("the standalone stream");
        let after = s.delivered;
        let prefix: VecDeque<Bytes> = s
            .buffer
            .iter()
            .filter(|(seq, _)| *seq > after)
            .map(|(_, e)| e.clone())
            .collect();
        let rx = self.new_live(&mut st, STANDALONE);
        let s = st
            .streams
            .get_mut(&STANDALONE)
            .expect("the standalone stream");
        s.delivered = s.next_seq - 1;
        let priming = (prime && prefix.is_empty()).then(|| s.priming_seq());
        Ok(Opened {
            prefix,
            rx: Some(rx),
            priming,
        })
    }

    /// Resumes `stream` after event `after` (GET with `Last-Event-ID`): replays the
    /// kept events after it, then goes on live if the stream is still open (the
    /// standalone stream always is; a POST stream until its last response). A
    /// connection still reading the stream is taken over ([`Self::new_live`]).
    ///
    /// [`StreamError::NeverSent`] when `after` names an event the stream never
    /// sent (beyond the last one handed to a connection, or a seq 0 it never
    /// had): a client only holds ids it was sent, and replaying from a guess
    /// would lose or repeat messages. Nothing changes then: the stream keeps its
    /// events, its connection and its place among the kept streams.
    pub(crate) fn resume(
        &self,
        stream: u64,
        after: u64,
        prime: bool,
    ) -> Result<Opened, StreamError> {
        let mut st = self.lock();
        if st.ended {
            return Err(StreamError::Ended);
        }
        let Some(s) = st.streams.get(&stream) else {
            return Err(StreamError::UnknownStream);
        };
        if s.json {
            return Err(StreamError::UnknownStream);
        }
        // A POST stream not taken by its POST yet has sent nothing at all, not
        // even its priming event.
        if after > s.delivered || (after == 0 && !s.sent_zero) || s.is_early() {
            return Err(StreamError::NeverSent);
        }
        let prefix: VecDeque<Bytes> = s
            .buffer
            .iter()
            .filter(|(seq, _)| *seq > after)
            .map(|(_, e)| e.clone())
            .collect();
        let open = stream == STANDALONE || s.pending > 0;
        if open {
            let rx = self.new_live(&mut st, stream);
            let s = st.streams.get_mut(&stream).expect("present");
            s.delivered = s.next_seq - 1;
            // The client resumed with an id: it can come back again.
            s.primed = true;
            let priming = (prime && prefix.is_empty()).then(|| s.priming_seq());
            Ok(Opened {
                prefix,
                rx: Some(rx),
                priming,
            })
        } else {
            st.streams.remove(&stream);
            st.retained.retain(|s| *s != stream);
            Ok(Opened {
                prefix,
                rx: None,
                priming: None,
            })
        }
    }

    /// Delivers an inbound event to the library. With `direct`, a message goes
    /// straight to the receiver's direct sink when it has one and nothing is
    /// queued before it ([`Receiver::set_direct`](crate::Receiver::set_direct)),
    /// in the calling task; otherwise through the queue. The inbound lock, held
    /// meanwhile, keeps the session's deliveries one at a time and before its
    /// `Closed`. `Err` when the session has ended or the library dropped its
    /// [`Receiver`].
    pub(crate) async fn deliver(&self, event: Inbound, direct: bool) -> Result<(), ()> {
        let inbound = self.inbound.lock().await;
        match inbound.as_ref() {
            Some(tx) if direct => tx.deliver(event).await.map_err(|_| ()),
            Some(tx) => tx.send(event).await.map_err(|_| ()),
            None => Err(()),
        }
    }

    /// Ends the session (idempotent): every open stream is closed, the session
    /// leaves the registry (later requests get 404), later sends fail as closed
    /// and the library's receiver gets [`Inbound::Closed`] with `reason`.
    pub(crate) fn end(self: &Arc<Self>, reason: CloseReason) {
        {
            let mut st = self.lock();
            if st.ended {
                return;
            }
            st.ended = true;
            // A reply complete before the session ended still goes to its POST,
            // which is about to take it (as one already queued on a connection
            // still goes out).
            st.streams.retain(|_, s| s.is_early() && s.pending == 0);
            st.requests.clear();
            st.retained.clear();
        }
        self.attached.notify_waiters();
        debug!(session = %self.id, %reason, "session ended");
        self.ended.send_replace(true);
        if let Some(registry) = self.registry.upgrade() {
            registry.remove(&self.id);
        }
        let session = self.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let tx = session.inbound.lock().await.take();
                if let Some(tx) = tx {
                    let _ = tx.send(Inbound::Closed { reason }).await;
                }
            });
        }
    }

    /// Since when the session has been idle (its last activity) when it is:
    /// not ended, no open response, no request awaiting its response; `None`
    /// otherwise.
    pub(crate) fn idle_since(&self) -> Option<Instant> {
        let st = self.lock();
        (!st.ended && st.connections == 0 && st.requests.is_empty()).then_some(st.last_activity)
    }

    /// Whether the session has had no open response and no request for `idle`.
    fn idle_expired(&self, idle: Duration, now: Instant) -> bool {
        let st = self.lock();
        !st.ended && st.connections == 0 && now >= st.last_activity + idle
    }

    /// Whether the session has ended (every later send fails).
    pub(crate) fn is_ended(&self) -> bool {
        *self.ended.borrow()
    }

    /// Waits until the session has ended.
    pub(crate) async fn wait_ended(&self) {
        is_ended(&mut self.ended.subscribe()).await
    }

    /// The request `id` will get no response ([`Sender::forget`]): its POST's
    /// stream no longer waits for it, and ends (kept for replay if its last
    /// events were not delivered) when nothing else of that POST is pending.
    pub(crate) fn forget(&self, id: &Id) {
        let mut st = self.lock();
        if st.initialize.as_ref() == Some(id) {
            st.initialize = None;
        }
        let Some(target) = st.requests.remove(id) else {
            return;
        };
        let Some(s) = st.streams.get_mut(&target) else {
            return;
        };
        s.pending = s.pending.saturating_sub(1);
        if s.pending > 0 || s.is_early() {
            // An early stream ends when its POST takes its events.
            return;
        }
        let keep = !s.json && s.next_seq - 1 > s.delivered;
        finish_stream(&mut st, target, keep);
    }

    /// The POST of `stream` answers with an SSE stream after all: every
    /// event of it is an SSE event from now on (none was queued unframed yet,
    /// or the POST has it and answers JSON).
    pub(crate) fn stream_it(&self, stream: u64) {
        if let Some(s) = self.lock().streams.get_mut(&stream) {
            s.late_json = false;
        }
    }

    /// Closes the connection reading the SSE stream of request `id`, which goes on
    /// ([`Sender::close_stream`](crate::Sender::close_stream)): later events of
    /// the stream, its response included, wait in its replay buffer for a GET
    /// with `Last-Event-ID`. `false` when no such connection is open (the request
    /// is unknown or answered, its POST is a JSON reply, or the client is already
    /// away), and when the client holds no event id of the stream to resume from
    /// (it has not shown it speaks 2025-11-25, so its stream had no priming
    /// event; before 2025-11-25 a server SHOULD NOT close a stream before its
    /// response).
    pub(crate) fn close_stream(&self, id: &Id) -> bool {
        let mut st = self.lock();
        let Some(&target) = st.requests.get(id) else {
            return false;
        };
        let closed = match st.streams.get_mut(&target) {
            Some(s) if !s.json && s.primed && s.live_open() => {
                // Resumed with `Last-Event-ID`: SSE events only.
                s.late_json = false;
                s.live = match s.live.take() {
                    // The events its POST has not taken yet still go out on it:
                    // they are the connection's, as those on its queue would be.
                    Some((g, Live::Early(events))) => {
                        Some((g, Live::Closing(events, s.next_seq - 1)))
                    }
                    _ => None,
                };
                true
            }
            _ => false,
        };
        drop(st);
        if closed {
            // Senders waiting for room among early events: there is no reader now.
            self.attached.notify_waiters();
        }
        closed
    }

    /// Puts one outbound message on its stream (see
    /// [`Sender::send_related`](crate::Sender::send_related)), in the caller's
    /// task, waiting while the connection reading that stream has no room.
    /// `Err` once the session has ended.
    ///
    /// Room is reserved on the connection's queue first, without the lock; the
    /// event's sequence number, its replay-buffer entry and its place in the
    /// queue are then taken together under the lock, so the events of a stream
    /// reach its connection in the order of their ids whichever tasks send them.
    pub(crate) async fn route(&self, out: Outbound) -> Result<(), ()> {
        let Outbound {
            mut line, route, ..
        } = out;
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        loop {
            let queue = {
                let mut st = self.lock();
                if st.ended {
                    return Err(());
                }
                let now = self.room_now(&st, &route);
                let attached = match now {
                    Now::Room(room) => match self.commit(&mut st, &route, &mut line, room) {
                        Commit::Done => return Ok(()),
                        Commit::Ended => return Err(()),
                        Commit::Again => continue,
                    },
                    Now::Queue(generation, tx) => Ok((generation, tx)),
                    // Registered under the lock, so the wake-up cannot be missed.
                    Now::EarlyFull => {
                        let mut attached = Box::pin(self.attached.notified());
                        attached.as_mut().enable();
                        Err(attached)
                    }
                };
                attached
            };
            let (generation, tx) = match queue {
                Ok(queue) => queue,
                Err(attached) => {
                    // Wait until the POST takes its early events (or goes).
                    // Boxed, as the wait for a full queue below.
                    let mut ended = self.ended.subscribe();
                    let wait = Box::pin(async move {
                        tokio::select! {
                            () = attached => true,
                            () = is_ended(&mut ended) => false,
                        }
                    });
                    if !wait.await {
                        return Err(());
                    }
                    continue;
                }
            };
            let room = match tx.try_reserve_owned() {
                Ok(permit) => Room::Reserved(generation, permit),
                Err(mpsc::error::TrySendError::Closed(_)) => Room::Gone(generation),
                Err(mpsc::error::TrySendError::Full(tx)) => {
                    // Boxed: the rare wait would otherwise make every send's
                    // future (copied into each task that sends) several times
                    // larger.
                    let mut ended = self.ended.subscribe();
                    // A new connection may take the stream over from this full
                    // one (a half-open connection is never read again): then
                    // the wait is for the new one. Registered before the check,
                    // so a takeover right after it is not missed.
                    let mut moved = Box::pin(self.attached.notified());
                    moved.as_mut().enable();
                    if self.reader_of(&route) != Some(generation) {
                        continue;
                    }
                    let wait = Box::pin(async move {
                        tokio::select! {
                            r = tx.reserve_owned() => Some(Some(match r {
                                Ok(permit) => Room::Reserved(generation, permit),
                                Err(_) => Room::Gone(generation),
                            })),
                            () = moved => Some(None),
                            () = is_ended(&mut ended) => None,
                        }
                    });
                    match wait.await {
                        Some(Some(room)) => room,
                        // Woken: look again at who reads the stream now.
                        Some(None) => continue,
                        None => return Err(()),
                    }
                }
            };
            let mut st = self.lock();
            match self.commit(&mut st, &route, &mut line, room) {
                Commit::Done => return Ok(()),
                Commit::Ended => return Err(()),
                // The stream's connection changed while room was reserved.
                Commit::Again => continue,
            }
        }
    }

    /// The generation of the connection that takes the next events of the
    /// stream `route` resolves to, if any ([`Stream::reader`]).
    fn reader_of(&self, route: &Route) -> Option<u64> {
        let st = self.lock();
        resolve(&st, route).and_then(|t| st.streams.get(&t).and_then(Stream::reader))
    }

    /// Under the lock: the room there is now for a message routed by `route`,
    /// or the connection queue to reserve room on.
    fn room_now(&self, st: &State, route: &Route) -> Now {
        let live =
            resolve(st, route).and_then(|t| st.streams.get(&t).and_then(|s| s.live.as_ref()));
        match live {
            None => Now::Room(Room::None),
            Some((generation, Live::Early(events))) if events.len() < self.limits.capacity => {
                Now::Room(Room::Early(*generation))
            }
            Some((_, Live::Early(_))) => Now::EarlyFull,
            Some((_, Live::Closing(..))) => Now::Room(Room::None),
            Some((generation, Live::Queue(tx))) => Now::Queue(*generation, tx.clone()),
        }
    }

    /// [`route`](Self::route) without waiting: `Err(Some(out))`, the message
    /// given back, when the connection's queue is full; `Err(None)` once the
    /// session has ended.
    pub(crate) fn try_route(&self, out: Outbound) -> Result<(), Option<Outbound>> {
        let Outbound {
            mut line,
            route,
            barrier,
        } = out;
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        let mut st = self.lock();
        if st.ended {
            return Err(None);
        }
        let full = || {
            Err(Some(Outbound {
                line: std::mem::take(&mut line),
                route: route.clone(),
                barrier,
            }))
        };
        let room = match self.room_now(&st, &route) {
            Now::Room(room) => room,
            Now::EarlyFull => return full(),
            Now::Queue(generation, tx) => match tx.try_reserve_owned() {
                Ok(permit) => Room::Reserved(generation, permit),
                Err(mpsc::error::TrySendError::Closed(_)) => Room::Gone(generation),
                Err(mpsc::error::TrySendError::Full(_)) => return full(),
            },
        };
        match self.commit(&mut st, &route, &mut line, room) {
            Commit::Done => Ok(()),
            Commit::Ended | Commit::Again => Err(None),
        }
    }

    /// Under the lock: takes the message's place on its stream (consuming the
    /// request it answers, if any), buffers it for replay and hands it to the
    /// reserved room. [`Commit::Again`] when the room belongs to a connection
    /// that is no longer the stream's.
    fn commit(&self, st: &mut State, route: &Route, line: &mut Vec<u8>, room: Room) -> Commit {
        if st.ended {
            return Commit::Ended;
        }
        let Some(target) = resolve(st, route) else {
            match route {
                Route::Responses(_) => {
                    warn!("a batch of responses to no open request of this session; dropped")
                }
                Route::Response(id) => {
                    warn!(id = %id, "a response to no open request of this session; dropped")
                }
                _ => {}
            }
            return Commit::Done;
        };
        let current = st.streams.get(&target).and_then(Stream::reader);
        if current != room.generation() {
            return Commit::Again;
        }
        if let Route::Response(id) = route {
            if st.initialize.as_ref() == Some(id) {
                // Before the event is queued: whoever reads it finds the revision.
                st.initialize = None;
                st.negotiated = answered_version(line);
                st.initialize_failed = is_error_response(line);
                // A session that agreed on 2025-11-25 or later speaks it: its
                // streams are primed from now on, whatever a request's header
                // names, and whichever of its requests comes first (a client
                // may send its next request before the POST of its
                // `notifications/initialized`, which names the revision, is
                // read).
                if st
                    .negotiated
                    .is_some_and(|v| v >= ProtocolVersion::V2025_11_25)
                {
                    self.primes
                        .store(true, std::sync::atomic::Ordering::Relaxed);
                }
            }
        }
        let answered = match route {
            Route::Response(id) => usize::from(st.requests.remove(id).is_some()),
            Route::Responses(ids) => ids
                .iter()
                .filter(|id| st.requests.remove(*id).is_some())
                .count(),
            Route::Orphan(_) => 1,
            Route::Related(_) | Route::Unrelated => 0,
        };
        let replay = self.limits.replay.max(1);
        let Some(s) = st.streams.get_mut(&target) else {
            return Commit::Done;
        };
        s.pending = s.pending.saturating_sub(answered);
        let done = answered > 0 && s.pending == 0;
        let mut line = std::mem::take(line);
        // The response first, and the last, for the POST that waits for it
        // (not a closed stream's replay): its POST answers it as JSON.
        let taken = matches!(room, Room::Reserved(..) | Room::Early(..));
        let lone = std::mem::take(&mut s.late_json) && done && s.next_seq == 1 && taken;
        if lone && line.last() == Some(&b'\n') {
            line.pop();
        }
        let (item, seq) = if s.json || lone {
            (Bytes::from(line), 0)
        } else {
            let seq = s.next_seq;
            s.next_seq += 1;
            let event = Bytes::from(guard::message_event(target, seq, &line));
            s.buffer.push_back((seq, event.clone()));
            while s.buffer.len() > replay {
                s.buffer.pop_front();
            }
            (event, seq)
        };
        let delivered = match room {
            Room::Reserved(_, permit) => {
                permit.send(item);
                true
            }
            Room::Early(_) => {
                if let Some((_, Live::Early(events))) = &mut s.live {
                    events.push_back(item);
                }
                // Handed to the connection when its POST takes it (attach).
                false
            }
            Room::Gone(_) => {
                // The connection went away: keep buffering for a resumption.
                s.live = None;
                false
            }
            Room::None => false,
        };
        if delivered {
            s.delivered = s.delivered.max(seq);
        }
        if done && !s.is_early() {
            // The last response of the stream: its connection's queue is
            // dropped with it, so the body ends right after this event. (An
            // early stream ends when its POST takes its events.)
            let keep = !delivered && !s.json;
            finish_stream(st, target, keep);
        }
        Commit::Done
    }
}

/// Room for one event on the queue of the connection reading a stream.
enum Room {
    /// No connection reads the stream: the event is only buffered.
    None,
    /// The connection of this generation is gone.
    Gone(u64),
    /// Room reserved on the queue of the connection of this generation.
    Reserved(u64, mpsc::OwnedPermit<Bytes>),
    /// Room among the early events of this generation (taken under the lock
    /// that commits the event).
    Early(u64),
}

impl Room {
    fn generation(&self) -> Option<u64> {
        match self {
            Room::None => None,
            Room::Gone(g) | Room::Reserved(g, _) | Room::Early(g) => Some(*g),
        }
    }
}

/// What [`Session::room_now`] found.
enum Now {
    Room(Room),
    /// The early events are at capacity: wait for their POST.
    EarlyFull,
    /// The connection queue to reserve room on, and its generation.
    Queue(u64, mpsc::Sender<Bytes>),
}

/// What [`Session::commit`] did.
enum Commit {
    Done,
    Ended,
    Again,
}

/// Ends POST stream `target` (nothing of it is pending any more): its
/// connection's queue is dropped, so the body ends; the stream is kept for
/// `Last-Event-ID` replay when `keep` (events not handed to a live connection),
/// the oldest kept stream beyond [`MAX_RETAINED_STREAMS`] going first, else
/// forgotten.
fn finish_stream(st: &mut State, target: u64, keep: bool) {
    if !keep {
        st.streams.remove(&target);
        return;
    }
    if let Some(s) = st.streams.get_mut(&target) {
        s.live = None;
    }
    st.retained.push_back(target);
    while st.retained.len() > MAX_RETAINED_STREAMS {
        if let Some(old) = st.retained.pop_front() {
            st.streams.remove(&old);
        }
    }
}

/// The stream a message goes to, without changing anything: a response's
/// request's stream; a related message's request's stream while it is open and
/// not a JSON reply, else the standalone stream; `None` for a response to no
/// open request.
fn resolve(st: &State, route: &Route) -> Option<u64> {
    match route {
        Route::Response(id) => st.requests.get(id).copied(),
        Route::Responses(ids) => ids.iter().find_map(|id| st.requests.get(id).copied()),
        Route::Related(id) => Some(match st.requests.get(id) {
            Some(&s) if st.streams.get(&s).is_some_and(|s| !s.json) => s,
            _ => STANDALONE,
        }),
        Route::Unrelated => Some(STANDALONE),
        Route::Orphan(stream) => st.streams.contains_key(stream).then_some(*stream),
    }
}

/// The revision an `initialize` response names (`result.protocolVersion`), if
/// this crate knows it.
fn answered_version(line: &[u8]) -> Option<ProtocolVersion> {
    let answer: serde_json::Value = serde_json::from_slice(line).ok()?;
    ProtocolVersion::parse(answer.get("result")?.get("protocolVersion")?.as_str()?)
}

/// Whether `line` is a JSON-RPC error response (it has an `error` member).
fn is_error_response(line: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Peek<'a> {
        #[serde(borrow, default)]
        error: Option<&'a serde_json::value::RawValue>,
    }
    serde_json::from_slice::<Peek<'_>>(line).is_ok_and(|p| p.error.is_some())
}

/// Waits until the session has ended.
async fn is_ended(ended: &mut watch::Receiver<bool>) {
    let _ = ended.wait_for(|e| *e).await.map(|_| ());
}

/// Collects the ids of `ids` that occur more than once.
pub(crate) fn first_duplicate(ids: &[Id]) -> Option<Id> {
    if ids.len() < 2 {
        return None;
    }
    let mut seen = HashSet::new();
    ids.iter().find(|id| !seen.insert(*id)).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(capacity: usize) -> (Arc<Session>, Transport) {
        let limits = Limits {
            replay: 16,
            capacity,
        };
        Session::start(
            "s".into(),
            0,
            limits,
            Weak::new(),
            &TransportConfig::default(),
        )
    }

    /// Opens the primed SSE stream of a POST carrying request `id`: (stream,
    /// generation).
    fn open_post(s: &Session, id: i64) -> (u64, u64) {
        s.open_request_stream(&[Id::from(id)], 0, (false, false), true)
            .unwrap()
    }

    fn response(id: i64) -> Outbound {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
        Outbound::new(line.into_bytes(), Route::Response(Id::from(id)))
    }

    fn progress(id: i64, n: u64) -> Outbound {
        let line = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":"t","progress":{n}}}}}"#
        );
        Outbound::new(line.into_bytes(), Route::Related(Id::from(id)))
    }

    /// The `data:` lines of SSE events, in order.
    fn data(events: &VecDeque<Bytes>) -> Vec<String> {
        events
            .iter()
            .flat_map(|e| {
                std::str::from_utf8(e)
                    .unwrap()
                    .lines()
                    .filter_map(|l| l.strip_prefix("data: ").map(str::to_owned))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// A session whose `initialize` answer agreed on 2025-11-25 primes its
    /// streams even for a request whose header names an older revision, and
    /// before any request named 2025-11-25 (the conformance suite's polling
    /// scenario sent its call ahead of `notifications/initialized` once, and
    /// got no priming event); one that agreed on 2025-06-18 does not.
    #[test]
    fn a_session_that_agreed_on_2025_11_25_is_primed_from_its_answer() {
        for (agreed, primed) in [("2025-11-25", true), ("2025-06-18", false)] {
            let (s, _t) = session(4);
            let (stream, generation) = open_post(&s, 1);
            s.negotiates(&Id::from(1));
            assert!(
                !s.primes(ProtocolVersion::V2025_03_26),
                "nothing agreed yet"
            );
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"protocolVersion":"{agreed}","capabilities":{{}},"serverInfo":{{"name":"s","version":"1"}}}}}}"#
            );
            s.try_route(Outbound::new(
                line.into_bytes(),
                Route::Response(Id::from(1)),
            ))
            .unwrap();
            let _ = s.attach(stream, generation);
            assert_eq!(s.negotiated().map(|v| v.as_str()), Some(agreed));
            assert_eq!(s.primes(ProtocolVersion::V2025_03_26), primed, "{agreed}");
        }
    }

    /// A reply complete before its POST takes its events goes out whole, with no
    /// queue made, and its stream is forgotten (everything reached the POST).
    #[test]
    fn a_reply_complete_before_its_post_attaches_needs_no_queue() {
        let (s, _t) = session(4);
        let (stream, generation) = open_post(&s, 1);
        s.try_route(progress(1, 1)).unwrap();
        s.try_route(response(1)).unwrap();
        let (events, rx) = s.attach(stream, generation);
        assert!(rx.is_none());
        let data = data(&events);
        assert_eq!(data.len(), 2);
        assert!(data[0].contains("notifications/progress"));
        assert!(data[1].contains(r#""id":1"#));
        assert_eq!(
            s.resume(stream, 2, false).err(),
            Some(StreamError::UnknownStream)
        );
    }

    /// An unfinished reply: the events so far, then a queue for the rest.
    #[tokio::test]
    async fn an_unfinished_reply_gets_a_queue_for_the_rest() {
        let (s, _t) = session(4);
        let (stream, generation) = open_post(&s, 1);
        s.try_route(progress(1, 1)).unwrap();
        let (events, rx) = s.attach(stream, generation);
        assert_eq!(data(&events).len(), 1);
        let mut rx = rx.expect("a queue");
        s.try_route(response(1)).unwrap();
        let last = rx.recv().await.unwrap();
        assert!(data(&VecDeque::from([last]))[0].contains(r#""id":1"#));
        assert!(
            rx.recv().await.is_none(),
            "the stream ends with its response"
        );
    }

    /// Past the capacity, senders wait for the POST to take the early events,
    /// and nothing is lost or reordered.
    #[tokio::test]
    async fn senders_wait_while_the_early_events_are_at_capacity() {
        let (s, _t) = session(2);
        let (stream, generation) = open_post(&s, 1);
        s.try_route(progress(1, 1)).unwrap();
        s.try_route(progress(1, 2)).unwrap();
        let back = s.try_route(progress(1, 3)).expect_err("at capacity");
        assert!(back.is_some(), "full, not ended: the message comes back");
        let sender = {
            let s = s.clone();
            tokio::spawn(async move {
                s.route(progress(1, 3)).await.unwrap();
                s.route(response(1)).await.unwrap();
            })
        };
        tokio::task::yield_now().await;
        assert!(!sender.is_finished(), "waits for the POST");
        let (events, rx) = s.attach(stream, generation);
        let mut all = data(&events);
        let mut rx = rx.expect("a queue");
        while let Some(e) = rx.recv().await {
            all.extend(data(&VecDeque::from([e])));
        }
        sender.await.unwrap();
        assert_eq!(all.len(), 4, "{all:?}");
        for (i, n) in [1, 2, 3].iter().enumerate() {
            assert!(all[i].contains(&format!(r#""progress":{n}"#)), "{all:?}");
        }
        assert!(all[3].contains(r#""id":1"#));
    }

    /// A POST that goes before taking its events (its client went) leaves them
    /// for a resumption, as a connection that goes does: later events are only
    /// buffered, and none waits for a reader that will not come.
    #[test]
    fn a_post_that_goes_before_attaching_leaves_its_events_for_resumption() {
        let (s, _t) = session(2);
        let (stream, generation) = open_post(&s, 1);
        s.try_route(progress(1, 1)).unwrap();
        s.detach(stream, generation);
        for n in 2..=5 {
            s.try_route(progress(1, n))
                .expect("no reader: buffered, never full");
        }
        s.try_route(response(1)).unwrap();
        // Attaching after going takes nothing.
        let (events, rx) = s.attach(stream, generation);
        assert!(events.is_empty() && rx.is_none());
        let opened = s.resume(stream, 0, false).expect("kept for resumption");
        assert!(opened.rx.is_none(), "complete");
        let data = data(&opened.prefix);
        assert_eq!(data.len(), 6, "{data:?}");
        assert!(data[5].contains(r#""id":1"#));
    }

    /// Closing the connection of a stream before its POST attached: the POST
    /// still sends what was sent before (it was that connection's), and its
    /// body ends there; the rest waits for the client's resumption, even with
    /// a replay buffer shorter than what the POST took.
    #[test]
    fn a_stream_closed_before_its_post_attaches_sends_what_came_before() {
        let limits = Limits {
            replay: 2,
            capacity: 8,
        };
        let (s, _t) = Session::start(
            "s".into(),
            0,
            limits,
            Weak::new(),
            &TransportConfig::default(),
        );
        let (stream, generation) = open_post(&s, 1);
        for n in 1..=5 {
            s.try_route(progress(1, n)).unwrap();
        }
        assert!(s.close_stream(&Id::from(1)));
        assert_eq!(
            s.resume(stream, 0, false).err(),
            Some(StreamError::NeverSent),
            "nothing was sent on it yet"
        );
        s.try_route(progress(1, 6)).unwrap();
        let (events, rx) = s.attach(stream, generation);
        assert!(rx.is_none(), "the connection ends after them");
        let sent = data(&events);
        assert_eq!(sent.len(), 5, "{sent:?}");
        for (i, d) in sent.iter().enumerate() {
            assert!(d.contains(&format!(r#""progress":{}"#, i + 1)), "{sent:?}");
        }
        s.try_route(response(1)).unwrap();
        let opened = s.resume(stream, 5, false).expect("kept for resumption");
        let rest = data(&opened.prefix);
        assert_eq!(rest.len(), 2, "{rest:?}");
        assert!(rest[0].contains(r#""progress":6"#));
        assert!(rest[1].contains(r#""id":1"#));
    }

    /// A stream whose POST may answer JSON queues its response unframed only
    /// for that POST: once the stream is closed (SEP-1699) it is an SSE event,
    /// kept for the resumption.
    #[test]
    fn a_late_json_response_of_a_closed_stream_is_an_event_for_the_resumption() {
        let (s, _t) = session(4);
        let (stream, generation) = s
            .open_request_stream(&[Id::from(1)], 0, (false, true), true)
            .unwrap();
        assert!(s.close_stream(&Id::from(1)));
        let (events, rx) = s.attach(stream, generation);
        assert!(events.is_empty() && rx.is_none());
        s.try_route(response(1)).unwrap();
        let opened = s.resume(stream, 0, false).expect("kept for resumption");
        let rest = data(&opened.prefix);
        assert_eq!(rest.len(), 1, "{rest:?}");
        assert!(rest[0].contains(r#""id":1"#));
        // Not closed: its POST gets the message itself.
        let (stream, generation) = s
            .open_request_stream(&[Id::from(2)], 0, (false, true), true)
            .unwrap();
        s.try_route(response(2)).unwrap();
        let (events, rx) = s.attach(stream, generation);
        assert!(rx.is_none());
        assert_eq!(events.len(), 1);
        assert!(
            events[0].starts_with(br#"{"jsonrpc":"2.0","id":2"#),
            "{:?}",
            events[0]
        );
    }

    /// A sender waiting for room among the early events is let go when the
    /// stream's connection is closed before its POST takes them: its event
    /// waits for the resumption instead.
    #[tokio::test]
    async fn closing_the_stream_lets_a_waiting_sender_go() {
        let (s, _t) = session(2);
        let (stream, generation) = open_post(&s, 1);
        s.try_route(progress(1, 1)).unwrap();
        s.try_route(progress(1, 2)).unwrap();
        let sender = {
            let s = s.clone();
            tokio::spawn(async move { s.route(progress(1, 3)).await })
        };
        tokio::task::yield_now().await;
        assert!(!sender.is_finished(), "waits for room");
        assert!(s.close_stream(&Id::from(1)));
        tokio::time::timeout(Duration::from_secs(5), sender)
            .await
            .expect("the sender went on")
            .unwrap()
            .unwrap();
        let (events, rx) = s.attach(stream, generation);
        assert_eq!(data(&events).len(), 2);
        assert!(rx.is_none());
        s.try_route(response(1)).unwrap();
        let rest = data(&s.resume(stream, 2, false).expect("kept").prefix);
        assert_eq!(rest.len(), 2, "{rest:?}");
        assert!(rest[0].contains(r#""progress":3"#));
    }

    /// A reply complete before the session ended still reaches its POST, as one
    /// already on a connection's queue does; an unfinished one does not.
    #[test]
    fn a_complete_early_reply_outlives_the_end_of_its_session() {
        let (s, _t) = session(4);
        let (done, done_gen) = open_post(&s, 1);
        let (open, open_gen) = open_post(&s, 2);
        s.try_route(response(1)).unwrap();
        s.try_route(progress(2, 1)).unwrap();
        s.end(CloseReason::SessionClosed);
        assert!(s.try_route(response(2)).is_err());
        let (events, rx) = s.attach(done, done_gen);
        assert_eq!(data(&events).len(), 1);
        assert!(rx.is_none());
        let (events, rx) = s.attach(open, open_gen);
        assert!(events.is_empty() && rx.is_none());
    }

    /// The session idle the longest goes first; busy ones (`None`) never.
    #[test]
    fn the_least_recently_used_idle_session_is_chosen() {
        let now = Instant::now();
        let ids: Vec<Arc<str>> = ["a", "b", "c", "d"].iter().map(|&s| s.into()).collect();
        let at = |secs: u64| Some(now + Duration::from_secs(secs));
        let sessions = [
            (&ids[0], at(5)),
            (&ids[1], None),
            (&ids[2], at(2)),
            (&ids[3], at(9)),
        ];
        assert_eq!(
            least_recently_used(sessions.iter().copied()).map(|id| &**id),
            Some("c")
        );
        let busy = [(&ids[0], None), (&ids[1], None)];
        assert_eq!(least_recently_used(busy.iter().copied()), None);
        assert_eq!(least_recently_used(std::iter::empty()), None);
    }

    fn unrelated(n: u64) -> Outbound {
        let line = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","data":{n}}}}}"#
        );
        Outbound::new(line.into_bytes(), Route::Unrelated)
    }

    /// A new GET takes the standalone stream over from a connection that
    /// still holds it, and a sender waiting for room on that connection's full
    /// queue (a half-open connection is never read again) goes on to the new
    /// one: its message arrives there, nothing waits for the old one.
    #[tokio::test]
    async fn a_takeover_frees_a_sender_waiting_on_the_old_connection() {
        let (s, _t) = session(1);
        let old = s.open_standalone(false).expect("opened");
        let _never_read = old.rx.expect("a queue");
        s.try_route(unrelated(1)).expect("room for one");
        let sender = {
            let s = s.clone();
            tokio::spawn(async move { s.route(unrelated(2)).await })
        };
        tokio::task::yield_now().await;
        assert!(
            !sender.is_finished(),
            "waits for room on the old connection"
        );
        let new = s.open_standalone(false).expect("taken over, not refused");
        assert!(new.prefix.is_empty(), "1 went to the old connection");
        tokio::time::timeout(Duration::from_secs(5), sender)
            .await
            .expect("the sender went on")
            .unwrap()
            .unwrap();
        let mut rx = new.rx.expect("a queue");
        let got = rx.recv().await.expect("the message");
        assert!(data(&VecDeque::from([got]))[0].contains(r#""data":2"#));
        // Resuming after event 1 replays 2, taking the stream over again.
        let resumed = s.resume(STANDALONE, 1, false).expect("resumed");
        assert_eq!(data(&resumed.prefix).len(), 1);
        assert!(rx.recv().await.is_none(), "the taken-over queue ends");
    }

    #[test]
    fn an_error_response_is_told_from_a_result() {
        assert!(is_error_response(
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no"}}"#
        ));
        assert!(!is_error_response(
            br#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"}}"#
        ));
        assert!(!is_error_response(b"not json"));
    }

    #[test]
    fn the_answered_version_is_the_results_protocol_version() {
        let answer = |text: &str| answered_version(text.as_bytes());
        assert_eq!(
            answer(
                r#"{"jsonrpc":"2.0","id":1,"result":{"capabilities":{},"protocolVersion":"2025-11-25"}}"#
            ),
            Some(ProtocolVersion::V2025_11_25)
        );
        assert_eq!(
            answer(r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"}}"#),
            Some(ProtocolVersion::V2025_06_18)
        );
        for none in [
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unsupported"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2099-01-01"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":20251125}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            "not json",
        ] {
            assert_eq!(answer(none), None, "{none}");
        }
    }
}
