//! The newline-delimited JSON driver over any byte pipe: the reader and writer
//! tasks behind every transport of this crate.
//!
//! Source: MCP "Transports → stdio" (every revision): one JSON-RPC message (in
//! 2025-03-26, or one batch) per line, no embedded newlines; R5 adds that TCP and
//! Unix-socket transports SHOULD reuse this framing, hence [`connect`] over any
//! [`AsyncRead`]/[`AsyncWrite`] pair.
//!
//! A batch read (2025-03-26) is answered with one line too: the answers to its
//! requests are gathered into one array, written once the last is in
//! ([`BatchReplies`]; JSON-RPC 2.0 §6).

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use foldhash::HashMap;

use switchboard_protocol::codec::{encode_line, LineDecoder, LineError, PEEK_BYTES};
use switchboard_protocol::jsonrpc::{
    decode_frame, peek, peek_tail, DecodeError, ErrorObject, ErrorResponse, Frame, Id, Message,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Notify};
use tokio::task::JoinHandle;
use tracing::{debug, trace, warn, Instrument, Span};

use crate::config::TransportConfig;
use crate::handle::{
    BatchingSwitch, CloseReason, Inbound, Outbound, Receiver, Route, Sender, Transport,
};
use crate::log_limit::{LogLimit, LogLines, Stream};
use crate::stdio::DEFAULT_LOG_LIMIT;

/// How many bytes one read asks for (64 KiB). Independent of the line limit: the
/// line decoder assembles lines across reads.
const READ_CHUNK: usize = 64 * 1024;

/// Which end of the conversation this transport is, which decides what happens to
/// bad input (a line that is not a valid JSON-RPC frame).
///
/// Source: JSON-RPC 2.0 §4.2 and §5.1 (the error objects), MCP
/// "Transports → stdio" (every revision; the peer's stdout carries only messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// We are the server, reading what a client wrote (e.g. our own stdin). A bad
    /// line is answered on our output with the spec's error response
    /// (`LineError::to_response`): -32700 with `id: null` for malformed JSON or
    /// non-UTF-8; -32700 for a line over the limit, with the request's id when the
    /// line's ends show it (`null` otherwise); -32600 with the request's id when it
    /// could be read (`null` otherwise). A broken notification (a `method` and no
    /// `id`) gets no answer (`LineError::wants_response`), nor does an answer
    /// that cannot be read (over the limit, nested too deep, an invalid
    /// envelope) whose id is seen: its request fails instead
    /// ([`Inbound::Failed`]), in both roles. The stream goes on with the next line. Each bad line is also
    /// logged (warn).
    Server,
    /// We are the client, reading what a server wrote (e.g. a child's stdout). A
    /// bad line (a banner, a stray print, an invalid envelope) is the server's
    /// fault: it is logged (warn, with `peer`) and skipped; nothing is sent back and
    /// the session goes on. These warnings are rate limited (a burst of 50, then
    /// 10 a second: [`DEFAULT_LOG_LIMIT`], or
    /// [`ChildConfig::log_limit`](crate::stdio::ChildConfig::log_limit) for a
    /// child); the lines beyond are skipped the same way and summed up in one
    /// warning when logging resumes, at the latest every
    /// [`LOG_SUMMARY_INTERVAL`](crate::stdio::LOG_SUMMARY_INTERVAL), and at the end
    /// of the input. Except a request of the server's over the line limit
    /// whose id its ends show: it is answered with -32700 and that id, so the
    /// server does not wait for its timeout.
    Client {
        /// The peer's name, for the logs (e.g. the child's configured name).
        peer: String,
    },
}

/// How the reader task ended.
#[derive(Debug)]
pub(crate) enum ReadEnd {
    /// End of input.
    Eof,
    /// Reading failed.
    Failed(io::Error),
    /// The [`Receiver`] was dropped.
    ReceiverGone,
}

/// The pieces of a started transport, for callers that supervise the tasks
/// themselves (the child process).
pub(crate) struct Started {
    pub(crate) transport: Transport,
    /// The lines the reader skipped in the client role (see [`Skipped`]).
    pub(crate) skipped: Arc<Skipped>,
    pub(crate) reader: JoinHandle<ReadEnd>,
    pub(crate) writer: JoinHandle<()>,
    pub(crate) events: crate::handle::InboundTx,
}

/// Starts a newline-delimited JSON transport over `input` and `output`: spawns a
/// reader task and a writer task on the current Tokio runtime, both inside `span`.
///
/// - Outbound: each message [`Sender::send`] queues is written as one line
///   (`encode_line`) and flushed when the queue runs empty.
/// - Inbound: lines of at most
///   [`TransportConfig::max_line_len`](TransportConfig::max_line_len) bytes are
///   decoded with `decode_frame` under the transport's batching rule; bad lines are
///   handled as `role` says. At end of input the [`Receiver`] gets
///   [`Inbound::Closed`] with [`CloseReason::PeerClosed`]; on a read error, with
///   [`CloseReason::Io`].
/// - A write error is logged (warn) and ends the writer task: later sends fail
///   with [`SendError::is_closed`](crate::SendError::is_closed).
///
/// Dropping the halves: see [`Sender`] and [`Receiver`]. When both are dropped
/// both tasks end (the reader at its next line or at end of input), dropping
/// `input` and `output`.
///
/// Panics if called outside a Tokio runtime.
pub fn connect<R, W>(
    input: R,
    output: W,
    role: Role,
    config: &TransportConfig,
    span: Span,
) -> Transport
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    connect_with_eof(
        input,
        output,
        role,
        config,
        span,
        CloseReason::PeerClosed,
        None,
    )
}

/// Tells whether the reader of a transport's output is gone (a pipe whose read
/// end was closed, a socket the peer shut), which an idle writer cannot see until
/// its next write fails. Checked every [`HANGUP_CHECK`] once the input has ended:
/// a client killed mid-call closes both ends, and the server, waiting for its
/// handlers to answer, would otherwise wait out its whole grace.
pub(crate) type HangupCheck = fn() -> bool;

/// How often a [`HangupCheck`] runs once the input has ended: 100 ms.
pub(crate) const HANGUP_CHECK: std::time::Duration = std::time::Duration::from_millis(100);

/// [`connect`], with the reason to report at end of input, and a check for a
/// gone reader of `output` that runs once the input has ended (when it says
/// gone, the writer ends: [`Sender::closed`] completes, sends fail).
pub(crate) fn connect_with_eof<R, W>(
    input: R,
    output: W,
    role: Role,
    config: &TransportConfig,
    span: Span,
    eof: CloseReason,
    hangup: Option<HangupCheck>,
) -> Transport
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (input_ended, ended) = tokio::sync::watch::channel(false);
    let watch = hangup.map(|check| Hangup { check, ended });
    let started = start_watched(
        input,
        output,
        role,
        config,
        DEFAULT_LOG_LIMIT,
        span.clone(),
        watch,
    );
    let Started {
        transport,
        reader,
        writer: _,
        events,
        ..
    } = started;
    tokio::spawn(
        async move {
            let end = reader.await;
            let _ = input_ended.send(true);
            let reason = match end {
                Ok(ReadEnd::Eof) => eof,
                Ok(ReadEnd::Failed(e)) => CloseReason::Io(Arc::new(e)),
                Ok(ReadEnd::ReceiverGone) => return,
                Err(e) => CloseReason::Io(Arc::new(io::Error::other(e))),
            };
            debug!(%reason, "input ended");
            let _ = events.send(Inbound::Closed { reason }).await;
        }
        .instrument(span),
    );
    transport
}

/// Spawns the reader and writer tasks; the reader does not send
/// [`Inbound::Closed`] (the caller does, from [`Started::events`]). In the client
/// role, the warnings about bad lines are limited by `log_limit`.
pub(crate) fn start<R, W>(
    input: R,
    output: W,
    role: Role,
    config: &TransportConfig,
    log_limit: LogLimit,
    span: Span,
) -> Started
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    start_watched(input, output, role, config, log_limit, span, None)
}

/// [`start`], the writer also ending when `hangup` says the output's reader is
/// gone.
fn start_watched<R, W>(
    input: R,
    output: W,
    role: Role,
    config: &TransportConfig,
    log_limit: LogLimit,
    span: Span,
    hangup: Option<Hangup>,
) -> Started
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out_tx, out_rx) = mpsc::channel::<Outbound>(config.capacity());
    let (in_tx, in_rx, gate) = crate::handle::inbound_channel_gated(config.capacity());
    let batching = BatchingSwitch::new(config.batching);
    let decoder = LineDecoder::with_max_line_len(config.max_line_len);
    let skipped = Arc::new(Skipped::default());
    let replies = Arc::new(BatchReplies::default());
    let limit = match &role {
        Role::Client { peer } => Some(LogLines::new(
            log_limit,
            Stream::Stdout { peer: peer.clone() },
        )),
        Role::Server => None,
    };
    let reader = ReaderTask {
        role,
        limit,
        skipped: skipped.clone(),
        events: in_tx.clone(),
        replies: out_tx.downgrade(),
        batching: batching.clone(),
        decoder,
        batch_replies: replies.clone(),
    };
    let reader = tokio::spawn(reader.run(input).instrument(span.clone()));
    let writer = tokio::spawn(write_loop(output, out_rx, hangup, replies.clone()).instrument(span));
    Started {
        transport: Transport {
            sender: Sender {
                out: crate::handle::Outlet::Queue(out_tx),
                batching: batching.clone(),
                no_requests: false,
                replies: Some(replies),
            },
            receiver: Receiver::gated(in_rx, batching, gate),
        },
        skipped,
        reader,
        writer,
        events: in_tx,
    }
}

/// What the reader skipped in the client role: lines of the server's that are
/// not valid JSON-RPC messages (a banner, a stray print). Kept so that a caller
/// whose request times out can be told why the server may not be answering.
#[derive(Debug, Default)]
pub(crate) struct Skipped {
    count: AtomicU64,
    /// The latest, cut to [`EXCERPT_CHARS`] characters.
    last: std::sync::Mutex<Option<String>>,
}

impl Skipped {
    fn record(&self, line: &str) {
        self.count.fetch_add(1, Ordering::Relaxed);
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(line.to_owned());
    }

    /// How many lines were skipped, and the latest (cut).
    pub(crate) fn get(&self) -> (u64, Option<String>) {
        let last = self.last.lock().unwrap_or_else(|e| e.into_inner()).clone();
        (self.count.load(Ordering::Relaxed), last)
    }
}

/// At most this many bytes (64 KiB, a Linux pipe's default capacity) of queued
/// lines go out in one write: lines queued behind the first are appended to it
/// while they fit, so a busy transport (many sessions over one child) makes one
/// write, and wakes its peer once, for several messages. A longer line goes out
/// alone, uncopied.
const WRITE_BATCH: usize = 64 * 1024;

/// A [`HangupCheck`] and whether the input has ended (when the checks start).
struct Hangup {
    check: HangupCheck,
    ended: tokio::sync::watch::Receiver<bool>,
}

impl Hangup {
    /// Completes when the input has ended and then the check says gone.
    async fn gone(&mut self) {
        if self.ended.wait_for(|ended| *ended).await.is_err() {
            // The input's task is gone without saying: never.
            return std::future::pending().await;
        }
        loop {
            if (self.check)() {
                return;
            }
            tokio::time::sleep(HANGUP_CHECK).await;
        }
    }
}

/// The next line to write: a batch's array that [`Sender::forget`] completed,
/// else the next queued item; `None` when every [`Sender`] is gone or the
/// output's reader is (see [`HangupCheck`]).
async fn next_queued(
    queue: &mut mpsc::Receiver<Outbound>,
    hangup: &mut Option<Hangup>,
    replies: &BatchReplies,
) -> Option<Outbound> {
    loop {
        // Registered before the check, so a completion between the two wakes us.
        let ready = replies.ready.notified();
        if let Some(array) = replies.take_completed() {
            return Some(Outbound::new(array, Route::Unrelated));
        }
        let gone = async {
            match hangup.as_mut() {
                Some(watch) => watch.gone().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            out = queue.recv() => return out,
            () = ready => continue,
            () = gone => {
                warn!("the reader of the transport's output is gone; closing the output");
                return None;
            }
        }
    }
}

/// Writes queued lines until every [`Sender`] is gone (or the output's reader,
/// when `hangup` watches for that), then flushes and shuts the output down. Lines
/// already queued are gathered into one write (up to [`WRITE_BATCH`] bytes); the
/// output is flushed whenever the queue runs empty, and before a flush barrier
/// ([`Sender::flush`]) is answered. An answer to a request of a batch read is
/// not written but given to `replies`, and the batch's array goes out in its
/// place once complete; when the writer ends, the arrays of batches still
/// waiting go out with the answers they have.
async fn write_loop<W: AsyncWrite + Unpin>(
    mut output: W,
    mut queue: mpsc::Receiver<Outbound>,
    mut hangup: Option<Hangup>,
    replies: Arc<BatchReplies>,
) {
    // An item taken from the queue that did not fit in the previous write (a line,
    // or a barrier, which ends a batch).
    let mut held: Option<Outbound> = None;
    loop {
        let first = match held.take() {
            Some(out) => out,
            None => match next_queued(&mut queue, &mut hangup, &replies).await {
                Some(out) => out,
                None => break,
            },
        };
        if let Some(done) = first.barrier {
            // Everything before it was written; flushed when the queue ran empty
            // or here.
            if let Err(e) = output.flush().await {
                warn!(error = %e, "flush failed; the transport's output is closed");
                return;
            }
            let _ = done.send(());
            continue;
        }
        let Some(mut batch) = replies.admit(first) else {
            // An answer kept for its batch's array: nothing to write yet.
            continue;
        };
        let mut lines = 1;
        while batch.len() < WRITE_BATCH {
            let Ok(out) = queue.try_recv() else {
                break;
            };
            if out.barrier.is_some() || batch.len() + out.line.len() > WRITE_BATCH {
                held = Some(out);
                break;
            }
            let Some(line) = replies.admit(out) else {
                continue;
            };
            if batch.len() + line.len() > WRITE_BATCH {
                // A batch's array, completed by this answer, that does not fit.
                held = Some(Outbound::new(line, Route::Unrelated));
                break;
            }
            batch.extend_from_slice(&line);
            lines += 1;
        }
        trace!(bytes = batch.len(), lines, "writing");
        if let Err(e) = output.write_all(&batch).await {
            // The peer went (a child that exited): said where its exit is.
            debug!(error = %e, "write failed; the transport's output is closed");
            return;
        }
        if held.is_none() && queue.is_empty() {
            if let Err(e) = output.flush().await {
                warn!(error = %e, "flush failed; the transport's output is closed");
                return;
            }
        }
    }
    debug!("every sender dropped; closing the output");
    for array in replies.close() {
        if output.write_all(&array).await.is_err() {
            break;
        }
    }
    let _ = output.flush().await;
    let _ = output.shutdown().await;
}

/// The answers to the batches a line transport read, gathered into one array
/// each (JSON-RPC 2.0 §6: the answer to a batch is an array of the responses
/// to its requests, sent once all are processed; MCP 2025-03-26, the one
/// revision with batches, "Transports → stdio": a line is one message or one
/// batch). Shared by the three parts of a transport:
///
/// - the reader [`open`](Self::open)s a batch before it hands the batch's items
///   on: the ids it waits for (its requests, and its invalid items that want
///   an answer and whose id could be read), and the answers the transport
///   gives itself (the error responses, `id: null`, to invalid items whose id
///   could not be read, which nothing else could place in the array);
/// - the writer [`admit`](Self::admit)s every queued line: a response or error
///   response to a request the batch waits for is kept instead of written,
///   and the array goes out (one line) in place of the last answer; when the
///   writer ends, the batches still waiting go out with what they have;
/// - [`Sender::forget`] says a request will get no answer (it was cancelled):
///   its batch no longer waits for it, and goes out if that was the last (no
///   line at all if it has no answer).
///
/// A batch of notifications and responses only has no answer; an id already
/// waited for (repeated in a batch, or pending in an earlier one) is waited
/// for once, so its second answer goes out on its own line.
#[derive(Debug, Default)]
pub(crate) struct BatchReplies {
    state: Mutex<BatchState>,
    /// Wakes the writer when [`forget`](Self::forget) completed a batch.
    ready: Notify,
}

#[derive(Debug, Default)]
struct BatchState {
    /// Each id waited for, and the key of its batch.
    due: HashMap<Id, u64>,
    /// The batches waiting, by key.
    open: HashMap<u64, OpenBatch>,
    next_key: u64,
    /// Arrays completed by `forget`, each one line, not yet written.
    completed: VecDeque<Vec<u8>>,
}

#[derive(Debug, Default)]
struct OpenBatch {
    /// How many of its ids are still due.
    waiting: usize,
    /// The answers in so far, each compact JSON without the line break.
    answers: Vec<Vec<u8>>,
}

/// One line holding `answers` (JSON texts) as one array.
fn array_line(answers: &[Vec<u8>]) -> Vec<u8> {
    let mut line = Vec::with_capacity(answers.iter().map(|a| a.len() + 1).sum::<usize>() + 2);
    line.push(b'[');
    for (i, answer) in answers.iter().enumerate() {
        if i > 0 {
            line.push(b',');
        }
        line.extend_from_slice(answer);
    }
    line.extend_from_slice(b"]\n");
    line
}

/// What a batch read needs from [`BatchReplies::open`]: the ids its answer
/// waits for, and the error responses (encoded, without line break) of its
/// invalid items whose id could not be read, taken out of `items`.
fn batch_answers(items: &mut Vec<Result<Message, DecodeError>>) -> (Vec<Id>, Vec<Vec<u8>>) {
    let mut orphans = Vec::new();
    items.retain(|item| match item {
        Err(e) if e.wants_response() && e.id().is_none() => {
            let mut line = encode_line(&Message::Error(e.to_response()));
            line.pop();
            orphans.push(line);
            false
        }
        _ => true,
    });
    let ids = items
        .iter()
        .filter_map(|item| match item {
            Ok(Message::Request(r)) => Some(r.id.clone()),
            Err(e) if e.wants_response() => e.id().cloned(),
            _ => None,
        })
        .collect();
    (ids, orphans)
}

impl BatchReplies {
    fn lock(&self) -> std::sync::MutexGuard<'_, BatchState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A batch read: its answer waits for `ids` and starts with `orphans`
    /// (see [`batch_answers`]). With no id to wait for, the orphans' array is
    /// complete at once (written by the writer when it next looks).
    fn open(&self, ids: Vec<Id>, orphans: Vec<Vec<u8>>) {
        let mut st = self.lock();
        let key = st.next_key;
        let mut waiting = 0;
        for id in ids {
            if let std::collections::hash_map::Entry::Vacant(e) = st.due.entry(id) {
                e.insert(key);
                waiting += 1;
            }
        }
        if waiting == 0 {
            if !orphans.is_empty() {
                st.completed.push_back(array_line(&orphans));
                drop(st);
                self.ready.notify_one();
            }
            return;
        }
        st.next_key += 1;
        st.open.insert(
            key,
            OpenBatch {
                waiting,
                answers: orphans,
            },
        );
    }

    /// What the writer writes for `out`: its line, unless it answers a request
    /// a batch waits for; then `None` while the batch waits for others, and the
    /// batch's array once this was the last.
    fn admit(&self, out: Outbound) -> Option<Vec<u8>> {
        let Route::Response(id) = &out.route else {
            return Some(out.line);
        };
        let mut st = self.lock();
        let Some(key) = st.due.remove(id) else {
            return Some(out.line);
        };
        let batch = st.open.get_mut(&key).expect("a due id's batch is open");
        let mut line = out.line;
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        batch.answers.push(line);
        batch.waiting -= 1;
        if batch.waiting > 0 {
            return None;
        }
        let batch = st.open.remove(&key).expect("open");
        Some(array_line(&batch.answers))
    }

    /// The request `id` will get no answer: its batch stops waiting for it.
    pub(crate) fn forget(&self, id: &Id) {
        let mut st = self.lock();
        let Some(key) = st.due.remove(id) else {
            return;
        };
        let batch = st.open.get_mut(&key).expect("a due id's batch is open");
        batch.waiting -= 1;
        if batch.waiting > 0 {
            return;
        }
        let batch = st.open.remove(&key).expect("open");
        if batch.answers.is_empty() {
            return;
        }
        st.completed.push_back(array_line(&batch.answers));
        drop(st);
        self.ready.notify_one();
    }

    /// An array [`forget`](Self::forget) completed, if any.
    fn take_completed(&self) -> Option<Vec<u8>> {
        self.lock().completed.pop_front()
    }

    /// At the writer's end: the arrays still to write, the completed ones first,
    /// then each batch still waiting with the answers it has (none for one
    /// without any), in the order they were read.
    fn close(&self) -> Vec<Vec<u8>> {
        let mut st = self.lock();
        st.due.clear();
        let mut open: Vec<(u64, OpenBatch)> = st.open.drain().collect();
        open.sort_by_key(|(key, _)| *key);
        let mut arrays: Vec<Vec<u8>> = st.completed.drain(..).collect();
        arrays.extend(
            open.iter()
                .filter(|(_, b)| !b.answers.is_empty())
                .map(|(_, b)| array_line(&b.answers)),
        );
        arrays
    }
}

struct ReaderTask {
    role: Role,
    /// The client role's limit on warnings about the server's bad lines; its last
    /// summary is logged when the task ends (it is dropped).
    limit: Option<LogLines>,
    skipped: Arc<Skipped>,
    events: crate::handle::InboundTx,
    /// For answering bad lines (server role) without keeping the writer alive.
    replies: mpsc::WeakSender<Outbound>,
    batching: BatchingSwitch,
    /// Lines are decoded with `decode_frame` under the switch's rule as each is
    /// taken: the same as `FrameDecoder` with `set_batching` before every
    /// `next_frame`, but the line's text stays at hand for the client's logs.
    decoder: LineDecoder,
    /// Where a batch's answer is gathered (opened here, before its items are
    /// handed on).
    batch_replies: Arc<BatchReplies>,
}

/// At most [`EXCERPT_CHARS`] characters of `text`, for a log.
fn excerpt(text: &str) -> &str {
    match text.char_indices().nth(EXCERPT_CHARS) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// How much of a bad line the client's warning quotes: 200 characters.
const EXCERPT_CHARS: usize = 200;

/// The receiver is gone.
struct Gone;

/// Whether one more warning about the server's lines may be logged (always
/// without a limit).
fn admit(limit: &mut Option<LogLines>) -> bool {
    limit.as_mut().is_none_or(LogLines::admit)
}

impl ReaderTask {
    async fn run<R: AsyncRead + Unpin>(mut self, mut input: R) -> ReadEnd {
        let mut buf = vec![0u8; READ_CHUNK];
        loop {
            let read = match self.limit.as_ref().and_then(LogLines::due) {
                None => input.read(&mut buf).await,
                // Warnings were suppressed: their summary is due then, even if
                // the server falls silent. (`read` is cancel safe.)
                Some(due) => tokio::select! {
                    read = input.read(&mut buf) => read,
                    () = tokio::time::sleep_until(due) => {
                        if let Some(limit) = self.limit.as_mut() {
                            limit.flush();
                        }
                        continue;
                    }
                },
            };
            let n = match read {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    warn!(error = %e, "read failed");
                    return ReadEnd::Failed(e);
                }
            };
            self.decoder.push(&buf[..n]);
            while let Some(line) = self.decoder.next_line() {
                if self.handle(line).await.is_err() {
                    return ReadEnd::ReceiverGone;
                }
            }
        }
        let rest: Vec<_> = self.decoder.finish().collect();
        for item in rest {
            if self.handle(item).await.is_err() {
                return ReadEnd::ReceiverGone;
            }
        }
        ReadEnd::Eof
    }

    async fn handle(&mut self, line: Result<String, LineError>) -> Result<(), Gone> {
        let item = match line {
            Ok(text) => decode_frame(text.as_bytes(), self.batching.get())
                .map_err(|e| (LineError::Decode(e), Some(text))),
            Err(e) => Err((e, None)),
        };
        let event = match item {
            Ok(Frame::Single(message)) => {
                trace!(method = message.method(), "received a message");
                Inbound::Message(message)
            }
            Ok(Frame::Batch(mut items)) => {
                if let Role::Client { peer } = &self.role {
                    for e in items.iter().filter_map(|i| i.as_ref().err()) {
                        if admit(&mut self.limit) {
                            warn!(peer = %peer, error = %e, "invalid batch item from the server");
                        }
                    }
                }
                // Opened before the items are handed on, so that no answer
                // to them can reach the writer first.
                let (ids, orphans) = batch_answers(&mut items);
                self.batch_replies.open(ids, orphans);
                if items.is_empty() {
                    // Every item was answered here.
                    return Ok(());
                }
                Inbound::Batch(items)
            }
            Err((e, text)) => return self.bad_line(e, text.as_deref()).await,
        };
        // Straight to the receiver's direct sink when it has one and nothing is
        // queued before this message (one reader: never concurrently).
        self.events.deliver(event).await.map_err(|_| Gone)
    }

    async fn bad_line(&mut self, e: LineError, text: Option<&str>) -> Result<(), Gone> {
        // The answer to one of our requests, too long to read or not a valid
        // message (nested past the decoder's depth, an invalid envelope): that
        // request fails now, rather than wait for its timeout.
        let answer_to = match (&e, text) {
            (LineError::LineTooLong { peeked, .. }, _) => peeked.answer_to().cloned(),
            (LineError::Decode(_), Some(text)) => {
                let b = text.as_bytes();
                let mut peeked = peek(&b[..b.len().min(PEEK_BYTES)]);
                if peeked.id.is_none() {
                    peeked.id = peek_tail(&b[b.len().saturating_sub(PEEK_BYTES)..]);
                }
                peeked.answer_to().cloned()
            }
            _ => None,
        };
        if let Some(id) = answer_to {
            warn!(%id, error = %e, "an answer that cannot be read; its request fails");
            let why = match &e {
                LineError::LineTooLong { .. } => format!("{e} (the transport's line limit)"),
                _ => e.to_string(),
            };
            let error = ErrorObject::new(
                crate::handle::TRANSPORT_ERROR,
                format!("the answer could not be read: {why}"),
            );
            return self
                .events
                .deliver(Inbound::Failed { id, error })
                .await
                .map_err(|_| Gone);
        }
        let server_request_too_long = matches!(
            &e,
            LineError::LineTooLong { peeked, .. } if peeked.request_id().is_some()
        );
        match &self.role {
            // A request of the server's too long to read, whose id is known: it
            // gets its error like a client's would, so the server need not wait
            // for its timeout.
            Role::Client { peer } if server_request_too_long => {
                if admit(&mut self.limit) {
                    warn!(peer = %peer, error = %e, "the server's request is too long to read; answering with an error");
                }
                self.answer(e.to_response()).await;
            }
            Role::Client { peer } => {
                let line = text.map(excerpt).unwrap_or_default();
                if admit(&mut self.limit) {
                    warn!(peer = %peer, error = %e, line, "the server wrote a line that is not a valid JSON-RPC message; skipped");
                }
                if line.is_empty() {
                    self.skipped.record(&e.to_string());
                } else {
                    self.skipped.record(line);
                }
            }
            Role::Server if !e.wants_response() => {
                warn!(error = %e, "invalid notification; not answered (JSON-RPC 2.0 §4.1)");
            }
            Role::Server => {
                let answer = e.to_response();
                warn!(code = answer.error.code, error = %e, "bad input; answering with an error");
                self.answer(answer).await;
            }
        }
        Ok(())
    }

    /// Writes an error response on our output (it does not go through the
    /// library).
    async fn answer(&self, answer: ErrorResponse) {
        let line = encode_line(&Message::Error(answer));
        match self.replies.upgrade() {
            Some(tx) => {
                if tx
                    .send(Outbound::new(line, Route::Unrelated))
                    .await
                    .is_err()
                {
                    debug!("output closed; the error answer was not sent");
                }
            }
            None => debug!("no sender left; the error answer was not sent"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log_limit::LOG_SUMMARY_INTERVAL;
    use std::time::Duration;
    use switchboard_protocol::jsonrpc::{Id, Request};
    use tokio::io::{duplex, split, AsyncReadExt, AsyncWriteExt};

    fn ping(id: i64) -> Message {
        Message::Request(Request::new(id, "ping", &serde_json::json!({})).unwrap())
    }

    #[test]
    fn excerpt_cuts_at_a_character_boundary() {
        assert_eq!(excerpt("short"), "short");
        let long = "é".repeat(EXCERPT_CHARS + 10);
        assert_eq!(excerpt(&long).chars().count(), EXCERPT_CHARS);
    }

    /// A client-role transport over an in-memory pipe, with the peer's halves:
    /// what we write (read it from the first) and what we read (write to the
    /// second).
    fn client_over_duplex() -> (
        Transport,
        tokio::io::ReadHalf<tokio::io::DuplexStream>,
        tokio::io::WriteHalf<tokio::io::DuplexStream>,
    ) {
        client_over_pipe(4096, &TransportConfig::default())
    }

    /// [`client_over_duplex`] with a pipe of `buffer` bytes and `config`.
    fn client_over_pipe(
        buffer: usize,
        config: &TransportConfig,
    ) -> (
        Transport,
        tokio::io::ReadHalf<tokio::io::DuplexStream>,
        tokio::io::WriteHalf<tokio::io::DuplexStream>,
    ) {
        let (peer, ours) = duplex(buffer);
        let (our_in, our_out) = split(ours);
        let (peer_out, peer_in) = split(peer);
        let t = connect(
            our_in,
            our_out,
            Role::Client {
                peer: "p".to_owned(),
            },
            config,
            Span::none(),
        );
        (t, peer_out, peer_in)
    }

    /// Everything logged at INFO and above in this thread (the tests run on a
    /// current-thread runtime: the transport's tasks too) while the guard lives.
    fn capture_logs() -> (
        tracing::subscriber::DefaultGuard,
        Arc<std::sync::Mutex<Vec<u8>>>,
    ) {
        #[derive(Clone)]
        struct Buffer(Arc<std::sync::Mutex<Vec<u8>>>);
        impl io::Write for Buffer {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let logs = Arc::new(std::sync::Mutex::new(Vec::new()));
        let buffer = Buffer(logs.clone());
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_writer(move || buffer.clone())
            .finish();
        (tracing::subscriber::set_default(subscriber), logs)
    }

    fn lines_with(logs: &std::sync::Mutex<Vec<u8>>, needle: &str) -> Vec<String> {
        String::from_utf8_lossy(&logs.lock().unwrap())
            .lines()
            .filter(|l| l.contains(needle))
            .map(str::to_owned)
            .collect()
    }

    /// A server's stray lines are warned about within the limit; the rest are
    /// summed up once the summary is due, though the server has fallen silent
    /// and its output is still open. Every line is counted as skipped, nothing
    /// is answered, and the session goes on. (Paused time: the clock moves only
    /// when every task waits.)
    #[tokio::test(start_paused = true)]
    async fn stray_lines_beyond_the_log_limit_are_counted_not_logged() {
        let (_guard, logs) = capture_logs();
        let (peer, ours) = duplex(64 * 1024);
        let (our_in, our_out) = split(ours);
        let (mut peer_out, mut peer_in) = split(peer);
        let started = start(
            our_in,
            our_out,
            Role::Client {
                peer: "looping".to_owned(),
            },
            &TransportConfig::default(),
            LogLimit::new(50, 10),
            Span::none(),
        );
        let Transport {
            sender,
            mut receiver,
        } = started.transport;
        let mut noise = String::new();
        for i in 1..=1000 {
            noise.push_str(&format!("debug {i}\n"));
        }
        peer_in.write_all(noise.as_bytes()).await.unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let warned = "not a valid JSON-RPC message; skipped";
        let summed = "more lines that are not valid JSON-RPC messages";
        assert_eq!(lines_with(&logs, warned).len(), 50);
        assert!(lines_with(&logs, summed).is_empty());
        assert_eq!(started.skipped.get(), (1000, Some("debug 1000".to_owned())));
        // Five seconds after the first suppressed line: its summary.
        tokio::time::sleep(LOG_SUMMARY_INTERVAL).await;
        let summary = lines_with(&logs, summed);
        assert_eq!(summary.len(), 1, "{summary:?}");
        assert!(
            summary[0].contains("suppressed=950") && summary[0].contains("in 5.0s"),
            "{summary:?}"
        );
        assert!(summary[0].contains("looping"), "{summary:?}");
        // The bucket has refilled meanwhile; a message still gets through.
        peer_in.write_all(b"one more\n").await.unwrap();
        peer_in.write_all(&encode_line(&ping(7))).await.unwrap();
        match tokio::time::timeout(Duration::from_secs(5), receiver.recv()).await {
            Ok(Some(Inbound::Message(m))) => assert_eq!(m, ping(7)),
            other => panic!("expected ping 7, got {other:?}"),
        }
        assert_eq!(lines_with(&logs, warned).len(), 51);
        assert_eq!(started.skipped.get().0, 1001);
        peer_in.shutdown().await.unwrap();
        assert!(matches!(started.reader.await, Ok(ReadEnd::Eof)));
        assert_eq!(lines_with(&logs, summed).len(), 1, "nothing left to sum up");
        // Nothing was written back.
        drop((sender, receiver, started.events));
        let mut written = Vec::new();
        peer_out.read_to_end(&mut written).await.unwrap();
        assert!(written.is_empty(), "{}", String::from_utf8_lossy(&written));
    }

    /// In the client role, a request of the server's over the line limit is
    /// answered with its id; an answer over the limit fails our request
    /// ([`Inbound::Failed`]); the session goes on.
    #[tokio::test]
    async fn lines_over_the_limit_in_the_client_role() {
        let config = TransportConfig {
            max_line_len: 64,
            ..TransportConfig::default()
        };
        let (mut t, mut peer_out, mut peer_in) = client_over_pipe(4096, &config);
        let big = "a".repeat(200);
        let lines = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"sampling/createMessage\",\"params\":{{\"x\":\"{big}\"}}}}\n\
             {{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{{\"x\":\"{big}\"}}}}\n\
             {{\"jsonrpc\":\"2.0\",\"id\":10,\"result\":{{}}}}\n"
        );
        peer_in.write_all(lines.as_bytes()).await.unwrap();
        let mut buf = vec![0u8; 1024];
        let n = tokio::time::timeout(Duration::from_secs(5), peer_out.read(&mut buf))
            .await
            .expect("the server's request is answered")
            .unwrap();
        let answer: serde_json::Value = serde_json::from_slice(&buf[..n]).unwrap();
        assert_eq!(answer["id"], 4);
        assert_eq!(answer["error"]["code"], -32700);
        match tokio::time::timeout(Duration::from_secs(5), t.receiver.recv()).await {
            Ok(Some(Inbound::Failed { id, error })) => {
                assert_eq!(id, Id::from(9));
                assert_eq!(error.code, crate::TRANSPORT_ERROR);
            }
            other => panic!("expected the failure of request 9, got {other:?}"),
        }
        match tokio::time::timeout(Duration::from_secs(5), t.receiver.recv()).await {
            Ok(Some(Inbound::Message(Message::Response(r)))) => assert_eq!(r.id, Id::from(10)),
            other => panic!("expected the response to 10, got {other:?}"),
        }
    }

    /// A server-role transport over an in-memory pipe with batches allowed,
    /// with the peer's halves: the lines we write (read them from the first)
    /// and what we read (write to the second).
    fn server_with_batches() -> (
        Transport,
        tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
        tokio::io::WriteHalf<tokio::io::DuplexStream>,
    ) {
        use tokio::io::AsyncBufReadExt;
        let (peer, ours) = duplex(64 * 1024);
        let (our_in, our_out) = split(ours);
        let (peer_out, peer_in) = split(peer);
        let config = TransportConfig {
            batching: switchboard_protocol::jsonrpc::Batching::Allowed,
            ..TransportConfig::default()
        };
        let t = connect(our_in, our_out, Role::Server, &config, Span::none());
        (t, tokio::io::BufReader::new(peer_out).lines(), peer_in)
    }

    /// The next line we wrote, as JSON, within 5 s.
    async fn written<R: tokio::io::AsyncBufRead + Unpin>(
        lines: &mut tokio::io::Lines<R>,
    ) -> serde_json::Value {
        let line = tokio::time::timeout(Duration::from_secs(5), lines.next_line())
            .await
            .expect("a line within 5 s")
            .unwrap()
            .expect("a line, not the end");
        serde_json::from_str(&line).unwrap()
    }

    async fn next_batch(rx: &mut Receiver) -> Vec<Result<Message, DecodeError>> {
        match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
            Ok(Some(Inbound::Batch(items))) => items,
            other => panic!("expected a batch, got {other:?}"),
        }
    }

    fn pong(id: i64) -> Message {
        Message::Response(switchboard_protocol::jsonrpc::Response {
            id: Id::from(id),
            result: serde_json::value::RawValue::from_string("{}".to_owned()).unwrap(),
        })
    }

    /// A batch's answers, sent one by one in any order, go out as one line: an
    /// array with the error of an invalid item whose id cannot be read (answered
    /// by the transport, not passed on), then the answers as they were sent,
    /// once the last request is answered; a message that answers nothing goes
    /// out on its own meanwhile; a broken notification gets nothing (JSON-RPC
    /// 2.0 §6, MCP 2025-03-26 "Transports → stdio").
    #[tokio::test]
    async fn a_batchs_answers_go_out_as_one_array() {
        let (t, mut lines, mut peer_in) = server_with_batches();
        let (tx, mut rx) = t.split();
        let batch = concat!(
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}},"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"ping"},"#,
            r#"{"jsonrpc":"2.0","id":3,"method":7},"#,
            r#"{"jsonrpc":"1.0","method":"x"},"#,
            r#"7]"#,
            "\n"
        );
        peer_in.write_all(batch.as_bytes()).await.unwrap();
        let items = next_batch(&mut rx).await;
        assert_eq!(
            items.len(),
            5,
            "the item without an id is answered here: {items:?}"
        );
        tx.send(pong(2)).await.unwrap();
        let log = Message::Notification(
            switchboard_protocol::jsonrpc::Notification::new(
                "notifications/message",
                &serde_json::json!({"level": "info", "data": "meanwhile"}),
            )
            .unwrap(),
        );
        tx.send(log).await.unwrap();
        let Some(Err(invalid)) = items.iter().find(|i| i.is_err()) else {
            panic!("the invalid item with id 3 is passed on: {items:?}")
        };
        tx.send(Message::Error(invalid.to_response()))
            .await
            .unwrap();
        assert_eq!(
            written(&mut lines).await["params"]["data"],
            "meanwhile",
            "what answers nothing is not held"
        );
        tx.send(pong(1)).await.unwrap();
        let array = written(&mut lines).await;
        let array = array.as_array().expect("one array");
        assert_eq!(array.len(), 4, "{array:?}");
        assert_eq!(array[0]["id"], serde_json::Value::Null);
        assert_eq!(array[0]["error"]["code"], -32600);
        assert_eq!(
            array[1],
            serde_json::json!({"jsonrpc": "2.0", "id": 2, "result": {}})
        );
        assert_eq!(array[2]["id"], 3);
        assert_eq!(array[2]["error"]["code"], -32600);
        assert_eq!(array[3]["id"], 1);
        // A response to no batch's request goes out alone.
        tx.send(pong(9)).await.unwrap();
        assert_eq!(written(&mut lines).await["id"], 9);
    }

    /// A request of a batch that gets no answer (cancelled: `Sender::forget`)
    /// no longer holds the others back; a batch with nothing left to answer
    /// writes nothing; one with only items without a readable id is answered
    /// by the transport alone; and at the writer's end a batch still waiting
    /// goes out with the answers it has.
    #[tokio::test]
    async fn a_forgotten_request_does_not_hold_its_batch() {
        let (t, mut lines, mut peer_in) = server_with_batches();
        let (tx, mut rx) = t.split();
        let two = concat!(
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"ping"}]"#,
            "\n"
        );
        peer_in.write_all(two.as_bytes()).await.unwrap();
        next_batch(&mut rx).await;
        tx.send(pong(1)).await.unwrap();
        tx.forget(&Id::from(2));
        assert_eq!(
            written(&mut lines).await,
            serde_json::json!([{"jsonrpc": "2.0", "id": 1, "result": {}}])
        );
        // Nothing answered: no line.
        peer_in
            .write_all(b"[{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}]\n")
            .await
            .unwrap();
        next_batch(&mut rx).await;
        tx.forget(&Id::from(5));
        // Only items the transport answers: nothing is passed on.
        peer_in.write_all(b"[1,2]\n").await.unwrap();
        let array = written(&mut lines).await;
        assert_eq!(array.as_array().map(Vec::len), Some(2), "{array}");
        assert_eq!(array[1]["error"]["code"], -32600, "{array}");
        // At the end, what a batch has goes out.
        peer_in.write_all(two.as_bytes()).await.unwrap();
        next_batch(&mut rx).await;
        tx.send(pong(2)).await.unwrap();
        drop((tx, rx));
        assert_eq!(
            written(&mut lines).await,
            serde_json::json!([{"jsonrpc": "2.0", "id": 2, "result": {}}])
        );
        let end = tokio::time::timeout(Duration::from_secs(5), lines.next_line()).await;
        assert!(matches!(end, Ok(Ok(None))), "then the output ends: {end:?}");
    }

    /// `flush` returns once everything queued before it is in the output, and not
    /// before: with a pipe of 64 bytes, it waits for the peer to read.
    #[tokio::test]
    async fn flush_waits_until_what_was_queued_is_written() {
        let (t, mut peer_out, _peer_in) = client_over_pipe(64, &TransportConfig::default());
        for id in 1..=4 {
            t.sender.send(ping(id)).await.unwrap();
        }
        let flush = t.sender.flush();
        tokio::pin!(flush);
        // Four lines of about 45 bytes do not fit in the pipe: not written yet.
        assert!(
            tokio::time::timeout(Duration::from_millis(100), flush.as_mut())
                .await
                .is_err(),
            "flush returned before the lines were written"
        );
        let mut seen = Vec::new();
        let reading = async {
            let mut buf = [0u8; 256];
            while seen.iter().filter(|b| **b == b'\n').count() < 4 {
                let n = peer_out.read(&mut buf).await.unwrap();
                seen.extend_from_slice(&buf[..n]);
            }
        };
        let (flushed, ()) = tokio::time::timeout(Duration::from_secs(5), async {
            tokio::join!(flush, reading)
        })
        .await
        .expect("flush returns once the peer has read");
        assert!(flushed);
        let lines: Vec<&[u8]> = seen
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(Message::decode(lines[3]).unwrap(), ping(4));
        // Messages sent after a flush still go out.
        t.sender.send(ping(5)).await.unwrap();
        assert!(t.sender.flush().await);
        // Once the output is gone, flush says so instead of waiting.
        drop(peer_out);
        drop(_peer_in);
        let _ = t.sender.send(ping(6)).await;
        assert!(
            !tokio::time::timeout(Duration::from_secs(5), t.sender.flush())
                .await
                .expect("flush returns when the output is closed")
        );
    }

    /// An answer that is not a valid message but shows its id (nested past
    /// the decoder's depth, id first or last; both `result` and `error`)
    /// fails its request at once instead of leaving it to its timeout; a
    /// line that shows no answer's id is skipped as before.
    #[tokio::test]
    async fn an_unreadable_answer_fails_its_request() {
        let (t, _peer_out, mut peer_in) = client_over_duplex();
        let (_tx, mut rx) = t.split();
        let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
        let lines = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":\"deep\",\"result\":{{\"x\":{deep}}}}}\n\
             {{\"jsonrpc\":\"2.0\",\"result\":{{\"x\":{deep}}},\"id\":8}}\n\
             {{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{{}},\"error\":{{\"code\":1,\"message\":\"m\"}}}}\n\
             {{\"jsonrpc\":\"2.0\",\"result\":{{\"x\":{deep}}}}}\n"
        );
        peer_in.write_all(lines.as_bytes()).await.unwrap();
        peer_in.write_all(&encode_line(&ping(2))).await.unwrap();
        for want in [Id::from("deep".to_owned()), Id::from(8), Id::from(9)] {
            match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
                Ok(Some(Inbound::Failed { id, error })) => {
                    assert_eq!(id, want);
                    assert_eq!(error.code, crate::TRANSPORT_ERROR);
                    assert!(
                        error.message.starts_with("the answer could not be read: "),
                        "{}",
                        error.message
                    );
                }
                other => panic!("expected the failure of {want:?}, got {other:?}"),
            }
        }
        match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
            Ok(Some(Inbound::Message(m))) => assert_eq!(m, ping(2)),
            other => panic!("expected the ping, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn the_client_role_answers_nothing_and_goes_on() {
        let (t, mut peer_out, mut peer_in) = client_over_duplex();
        let (tx, mut rx) = t.split();
        peer_in
            .write_all(b"banner\n{\"jsonrpc\":\"1.0\",\"id\":1}\n[]\n")
            .await
            .unwrap();
        peer_in.write_all(&encode_line(&ping(2))).await.unwrap();
        peer_in.shutdown().await.unwrap();
        match rx.recv().await {
            Some(Inbound::Message(m)) => assert_eq!(m, ping(2)),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            rx.recv().await,
            Some(Inbound::Closed {
                reason: CloseReason::PeerClosed
            })
        ));
        // Nothing was written back: our output ends empty when the sender goes.
        drop(tx);
        let mut written = Vec::new();
        peer_out.read_to_end(&mut written).await.unwrap();
        assert!(written.is_empty(), "{}", String::from_utf8_lossy(&written));
    }

    /// With a queue of one event and nobody receiving, the reader stops reading
    /// and the peer's writes block: memory stays bounded. (Paused time: the
    /// timeout fires only once every task is blocked.)
    #[tokio::test(start_paused = true)]
    async fn a_full_inbound_queue_stops_the_reader() {
        let (peer, ours) = duplex(1024);
        let (our_in, our_out) = split(ours);
        let (_peer_out, mut peer_in) = split(peer);
        let config = TransportConfig {
            channel_capacity: 1,
            ..TransportConfig::default()
        };
        let t = connect(our_in, our_out, Role::Server, &config, Span::none());
        let (_tx, mut rx) = t.split();
        let mut bytes = Vec::new();
        for i in 0..10_000 {
            bytes.extend(encode_line(&ping(i)));
        }
        let total = bytes.len();
        let writer = tokio::spawn(async move {
            peer_in.write_all(&bytes).await.unwrap();
            peer_in
        });
        tokio::pin!(writer);
        assert!(
            tokio::time::timeout(Duration::from_secs(1), &mut writer)
                .await
                .is_err(),
            "{total} bytes were taken in while nobody received"
        );
        for i in 0..10_000 {
            match rx.recv().await {
                Some(Inbound::Message(m)) => assert_eq!(m, ping(i)),
                other => panic!("{other:?}"),
            }
        }
        writer.await.unwrap();
    }

    /// An output that keeps what it is given and the size of every write.
    #[derive(Clone, Default)]
    struct Recorder {
        bytes: Arc<std::sync::Mutex<Vec<u8>>>,
        writes: Arc<std::sync::Mutex<Vec<usize>>>,
    }

    impl AsyncWrite for Recorder {
        fn poll_write(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<io::Result<usize>> {
            self.writes.lock().unwrap().push(buf.len());
            self.bytes.lock().unwrap().extend_from_slice(buf);
            std::task::Poll::Ready(Ok(buf.len()))
        }
        fn poll_flush(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
        fn poll_shutdown(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
    }

    /// Lines queued together leave in few writes of at most WRITE_BATCH bytes, in
    /// order and intact; a line longer than WRITE_BATCH goes out alone.
    #[tokio::test]
    async fn queued_lines_are_gathered_into_few_writes_in_order() {
        let (tx, rx) = mpsc::channel(4096);
        let mut expected = Vec::new();
        let mut sizes = Vec::new();
        for i in 0..3000 {
            // Every 1000th line is bigger than a whole batch.
            let line = if i % 1000 == 999 {
                let big = "x".repeat(WRITE_BATCH + 10);
                encode_line(&Message::Request(
                    Request::new(i, "ping", &serde_json::json!({ "pad": big })).unwrap(),
                ))
            } else {
                encode_line(&ping(i))
            };
            sizes.push(line.len());
            expected.extend_from_slice(&line);
            tx.send(Outbound::new(line, Route::Unrelated))
                .await
                .unwrap();
        }
        drop(tx);
        let recorder = Recorder::default();
        write_loop(recorder.clone(), rx, None, Arc::default()).await;
        let written = recorder.bytes.lock().unwrap().clone();
        assert!(
            written == expected,
            "the bytes written differ from the lines queued"
        );
        let writes = recorder.writes.lock().unwrap().clone();
        // 3000 lines in: a few dozen writes out, none over a batch but the big lines.
        assert!(writes.len() < 100, "{} writes for 3000 lines", writes.len());
        for w in &writes {
            assert!(
                *w <= WRITE_BATCH || sizes.contains(w),
                "a write of {w} bytes mixes a big line with others"
            );
        }
        assert_eq!(
            writes.iter().filter(|w| **w > WRITE_BATCH).count(),
            3,
            "each big line goes out alone"
        );
    }

    /// A sink that takes responses (recording their ids) and gives back the rest.
    #[derive(Default)]
    struct Responses(std::sync::Mutex<Vec<i64>>);

    impl crate::DirectSink for Responses {
        fn deliver(&self, message: Message) -> Result<(), Message> {
            match message {
                Message::Response(r) => {
                    self.0.lock().unwrap().push(r.id.as_i64().unwrap());
                    Ok(())
                }
                other => Err(other),
            }
        }
    }

    fn response(id: i64) -> Vec<u8> {
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{}}}}\n").into_bytes()
    }

    /// With a direct sink set, a line's message reaches it in the reader task
    /// only when nothing read before it is queued or being handled: a response
    /// read behind a queued request waits its turn in the queue, so the two ways
    /// in keep the input's order.
    #[tokio::test]
    async fn a_line_skips_the_queue_only_when_nothing_is_before_it() {
        let (t, _peer_out, mut peer_in) = client_over_duplex();
        let (_tx, mut rx) = t.split();
        let sink = Arc::new(Responses::default());
        assert!(
            rx.set_direct(sink.clone()),
            "a line transport delivers directly"
        );
        let taken = || sink.0.lock().unwrap().clone();
        let wait_for = async |n: usize| {
            for _ in 0..500 {
                if taken().len() >= n {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            panic!("the sink got {:?}, expected {n} responses", taken());
        };

        peer_in.write_all(&response(1)).await.unwrap();
        wait_for(1).await;
        // A request goes to the queue; the response behind it follows it there.
        peer_in.write_all(&encode_line(&ping(2))).await.unwrap();
        peer_in.write_all(&response(3)).await.unwrap();
        match rx.recv().await {
            Some(Inbound::Message(m)) => assert_eq!(m, ping(2)),
            other => panic!("{other:?}"),
        }
        match rx.recv().await {
            Some(Inbound::Message(Message::Response(r))) => assert_eq!(r.id.as_i64(), Some(3)),
            other => panic!("{other:?}"),
        }
        assert_eq!(taken(), vec![1]);
        // Once the queue is empty again, and the last event handled (the next
        // `recv` is waiting), responses skip it again.
        let next = tokio::spawn(async move { rx.recv().await.map(|e| format!("{e:?}")) });
        tokio::time::sleep(Duration::from_millis(20)).await;
        peer_in.write_all(&response(4)).await.unwrap();
        wait_for(2).await;
        assert_eq!(taken(), vec![1, 4]);
        assert!(!next.is_finished(), "{:?}", next.await);
        next.abort();
    }
}
