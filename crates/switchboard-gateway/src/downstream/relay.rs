//! The call relay of a downstream legacy session: one for the bridge's
//! sessions (module `session`) and the gateway's (module `gateway::session`).
//!
//! ```text
//! a call ──Upstream::call──> its pump task, until its answer:
//!   progress, logs (the session's level) ──send_related──> the call's stream
//!   server→client request ──declared? as "{prefix}<n>"──> client
//!                          (not declared: -32601 to the upstream)
//!   client's answer ──> the upstream that asked, under its own id
//!   input_required (2026-07-28 upstream) ──> asked of the client, retried
//!   response ──> the client, under its own id;  silence, failure ──> -32603
//! client's notifications/cancelled ──> the call cancelled upstream
//! a session's own child that dies ──> the session ends (`Relay::child_gone`)
//! ```
//!
//! This module must not know how a session finds the upstream of a call,
//! nor its `initialize`, lists or subscriptions.

// foldhash, not SipHash: these tables are read on every call.
use foldhash::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use super::watch::Tx;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use switchboard_protocol::jsonrpc::{code, ErrorObject, ErrorResponse, Id, Message, Notification};
use switchboard_protocol::jsonrpc::{Request, Response};
use switchboard_protocol::lifecycle::RequestContext;
use switchboard_protocol::types::meta::SERVER_INFO;
use switchboard_protocol::types::{
    CancelledNotificationParams, ClientCapabilities, NOTIFICATION_CANCELLED,
};
use switchboard_protocol::ProtocolVersion;
use tokio::sync::{mpsc, oneshot, watch};
use tracing::debug;

use crate::classify::{Ask, Notice};
use crate::error::Error;
use crate::gauge::Gauge;
use crate::raw::RawObject;
use crate::upstream::{CallEvent, Status, Step, TryCall, Upstream};

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What a session is to its relay: its calls' state, and the few choices
/// that are the session's.
pub(crate) trait Downstream: Send + Sync + 'static {
    /// Its relay.
    fn relay(&self) -> &Relay;
    /// Whether a notification of a call reaches the client (the session's
    /// log level).
    fn wants(&self, n: &Notification) -> bool;
    /// A call's final result as the client gets it (the bridge filters its
    /// lists; `list` is the call's [`Begun::list`]).
    fn finish(
        &self,
        _upstream: &Upstream,
        _list: Option<crate::ListRequest>,
        result: Box<RawValue>,
    ) -> Box<RawValue> {
        result
    }
}

/// The calls of one session: who may cancel them, and the server→client
/// requests of its upstreams sent to its client.
pub(crate) struct Relay {
    /// The session's sender.
    pub(crate) tx: Tx,
    /// Its owner id on every upstream.
    pub(crate) owner: u64,
    /// Who it is in error texts and cancellation reasons: `bridge`, `gateway`.
    front: &'static str,
    /// How long a call may go without a word from its upstream.
    request_timeout: Duration,
    /// Our ids of server→client requests are `{prefix}<n>`.
    prefix: &'static str,
    /// Downstream request id → the cancel switch of its call.
    calls: Mutex<HashMap<Id, oneshot::Sender<String>>>,
    /// Our id of a server→client request sent to the client → where it came from.
    server_requests: Mutex<HashMap<Id, Forwarded>>,
    next_server_request: AtomicU64,
    /// Our ids of requests asked of the client for an `input_required`
    /// result, and who waits for the answer.
    input_waiters: Mutex<HashMap<Id, oneshot::Sender<Message>>>,
    /// What the client declared in its `initialize` (set once).
    declared: OnceLock<ClientCapabilities>,
    /// Its calls being answered: when its own child dies, their errors go
    /// out before the session ends.
    pub(crate) pumps: Gauge,
    /// Told why when a child of the session's own that is not restarted dies.
    gone: mpsc::Sender<String>,
}

/// A server→client request sent to the client and not answered yet.
struct Forwarded {
    /// The id the upstream handed it on under ([`CallEvent::Request`]).
    upstream_id: Id,
    /// The upstream that asked.
    upstream: Upstream,
    /// The client's call it was made for; `None`: the upstream's own
    /// initiative, on the session's stream.
    call: Option<Id>,
}

/// Spawns the task of a downstream request's call; when it is traced
/// (`trace_id`: [`Tx::trace_id`]), in a `call` span naming its trace id,
/// which its log lines then carry.
pub(crate) fn spawn_call<F>(trace_id: Option<String>, call: F)
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    use tracing::Instrument;
    match trace_id {
        Some(trace_id) => {
            tokio::spawn(call.instrument(tracing::info_span!("call", trace_id = %trace_id)));
        }
        None => {
            tokio::spawn(call);
        }
    }
}

/// Runs `call` ([`spawn_call`]'s, in the current task).
pub(crate) async fn in_call_span<F: std::future::Future>(
    trace_id: Option<String>,
    call: F,
) -> F::Output {
    use tracing::Instrument;
    match trace_id {
        Some(trace_id) => {
            call.instrument(tracing::info_span!("call", trace_id = %trace_id))
                .await
        }
        None => call.await,
    }
}

/// One call as a session hands it to [`pump`].
pub(crate) struct Begun {
    /// The client's id of the request.
    pub(crate) down_id: Id,
    /// Started already, or still to start.
    pub(crate) start: TryCall,
    /// The request, kept for an `input_required` retry (a 2026-07-28
    /// upstream's); its result is made fit for a legacy client.
    pub(crate) original: Option<Request>,
    /// A list the session filters ([`Downstream::finish`]).
    pub(crate) list: Option<crate::ListRequest>,
    /// The upstream's name in the client's errors (a gateway's); `None`:
    /// the only one.
    pub(crate) named: Option<Arc<str>>,
    /// Counted while the call is answered (the drain, the session's end).
    pub(crate) answering: crate::Answering,
}

impl Relay {
    /// A relay for a session on `tx`, and where it hears that a child of
    /// its own is gone ([`Relay::watch_child`]).
    pub(crate) fn new(
        tx: Tx,
        owner: u64,
        front: &'static str,
        request_timeout: Duration,
    ) -> (Relay, mpsc::Receiver<String>) {
        let (gone, gone_rx) = mpsc::channel(1);
        let relay = Relay {
            tx,
            owner,
            front,
            request_timeout,
            prefix: match front {
                "gateway" => "sbg-s",
                _ => "sb-s",
            },
            calls: Mutex::new(HashMap::default()),
            server_requests: Mutex::new(HashMap::default()),
            next_server_request: AtomicU64::new(1),
            input_waiters: Mutex::new(HashMap::default()),
            declared: OnceLock::new(),
            pumps: Gauge::default(),
            gone,
        };
        (relay, gone_rx)
    }

    /// What the client declared in its `initialize`: what its upstreams'
    /// requests of it are checked against.
    pub(crate) fn declare(&self, capabilities: ClientCapabilities) {
        let _ = self.declared.set(capabilities);
    }

    /// Whether the client declared what server→client `method` needs.
    fn declares(&self, method: &str) -> bool {
        let Some(c) = self.declared.get() else {
            return false;
        };
        match Ask::of(method) {
            Ask::Sampling => c.sampling.is_some(),
            Ask::Elicitation => c.elicitation.is_some(),
            Ask::Roots => c.roots.is_some(),
            Ask::Other => true,
        }
    }

    /// A call's cancel switch, in place before the call starts: a
    /// cancellation that comes at once is not missed.
    pub(crate) fn begin(&self, down_id: Id) -> oneshot::Receiver<String> {
        let (cancel, cancelled) = oneshot::channel();
        lock(&self.calls).insert(down_id, cancel);
        cancelled
    }

    /// Forgets call `down_id`, answered otherwise (a refusal before it
    /// reached an upstream).
    pub(crate) fn forget(&self, down_id: &Id) {
        lock(&self.calls).remove(down_id);
    }

    /// The client's `notifications/cancelled`: its call is cancelled
    /// upstream. Read as raw members: the id exactly as the client wrote it
    /// (an integer beyond 64 bits included), and its reason, which goes on.
    pub(crate) fn cancelled(&self, n: &Notification) {
        let Some(params) = n
            .params
            .as_ref()
            .and_then(|p| RawObject::parse(p.get()).ok())
        else {
            return;
        };
        let id = params
            .get("requestId")
            .and_then(|raw| Id::from_raw(raw).ok());
        let reason = params
            .get("reason")
            .and_then(|r| serde_json::from_str::<String>(r.get()).ok())
            .unwrap_or_else(|| "cancelled by the client".to_owned());
        if let Some(cancel) = id.and_then(|id| lock(&self.calls).remove(&id)) {
            let _ = cancel.send(reason);
        }
    }

    /// The client answered one of our requests: an input request's waiter
    /// gets it, or the upstream that asked, under its own id.
    pub(crate) async fn answered(&self, message: Message) {
        let Some(id) = message.id().cloned() else {
            debug!("the client sent an error without id");
            return;
        };
        if let Some(waiter) = lock(&self.input_waiters).remove(&id) {
            let _ = waiter.send(message);
            return;
        }
        let Some(f) = lock(&self.server_requests).remove(&id) else {
            debug!(%id, "an answer to no request of ours (or to one the upstream cancelled)");
            return;
        };
        let message = match message {
            Message::Response(r) => Message::Response(Response {
                id: f.upstream_id,
                result: r.result,
            }),
            Message::Error(e) => Message::Error(ErrorResponse::new(Some(f.upstream_id), e.error)),
            other => other,
        };
        f.upstream.respond(message).await;
    }

    /// Sends the client one of `upstream`'s server→client requests under an
    /// id of ours, on the stream of the call it belongs to (`call`) or the
    /// session's own; one the client did not declare the capability for is
    /// refused to the upstream (-32601) instead.
    pub(crate) async fn server_request(&self, upstream: &Upstream, req: Request, call: Option<Id>) {
        if !self.declares(&req.method) {
            let why = format!(
                "the client did not declare the capability {} needs",
                req.method
            );
            let refusal =
                ErrorResponse::new(Some(req.id), ErrorObject::new(code::METHOD_NOT_FOUND, why));
            upstream.respond(Message::Error(refusal)).await;
            return;
        }
        let ours = Id::from(format!(
            "{}{}",
            self.prefix,
            self.next_server_request.fetch_add(1, Ordering::Relaxed)
        ));
        lock(&self.server_requests).insert(
            ours.clone(),
            Forwarded {
                upstream_id: req.id,
                upstream: upstream.clone(),
                call: call.clone(),
            },
        );
        let out = Request {
            id: ours,
            method: req.method,
            params: req.params,
        };
        let _ = self.tx.send_related(Message::Request(out), call).await;
    }

    /// `upstream`'s `notifications/cancelled` of a request it sent this
    /// session (its `requestId` the id it was handed on under), under the
    /// id the client saw, the request forgotten (a late answer is dropped).
    /// `None` when that request is not open here (the client answered it).
    pub(crate) fn upstream_cancelled(
        &self,
        upstream: &Upstream,
        n: Notification,
    ) -> Option<Notification> {
        let mut params: Map<String, Value> = serde_json::from_str(n.params.as_ref()?.get()).ok()?;
        let theirs = params
            .get("requestId")
            .and_then(|v| serde_json::value::to_raw_value(v).ok())
            .and_then(|raw| Id::from_raw(&raw).ok())?;
        let ours = {
            let mut table = lock(&self.server_requests);
            let ours = table
                .iter()
                .find(|(_, f)| f.upstream_id == theirs && f.upstream.same(upstream))
                .map(|(ours, _)| ours.clone());
            if let Some(ours) = &ours {
                table.remove(ours);
            }
            ours
        };
        let Some(ours) = ours else {
            debug!(%theirs, "the upstream cancelled a request this session has not open: dropped");
            return None;
        };
        params.insert("requestId".into(), serde_json::to_value(&ours).ok()?);
        Notification::new(n.method, &params).ok()
    }

    /// Forgets the upstream's requests forwarded for call `down_id`, which
    /// ended without their answers: the client is told each is cancelled
    /// (with `reason`, on the call's stream while it is open; every
    /// revision's "Cancellation"), so it stops working on them.
    async fn cancel_forwarded(&self, down_id: &Id, reason: &str) {
        let cancelled: Vec<Id> = {
            let mut forwarded = lock(&self.server_requests);
            let mine: Vec<Id> = forwarded
                .iter()
                .filter(|(_, f)| f.call.as_ref() == Some(down_id))
                .map(|(id, _)| id.clone())
                .collect();
            for id in &mine {
                forwarded.remove(id);
            }
            mine
        };
        for id in cancelled {
            let params = CancelledNotificationParams {
                request_id: Some(id),
                reason: Some(reason.to_owned()),
                ..Default::default()
            };
            if let Ok(n) = Notification::new(NOTIFICATION_CANCELLED, &params) {
                let _ = self
                    .tx
                    .send_related(Message::Notification(n), Some(down_id.clone()))
                    .await;
            }
        }
    }

    /// Answers call `down_id` with `why` (and the error code of its kind),
    /// and forgets it.
    pub(crate) async fn fail(&self, down_id: Id, why: Error) {
        lock(&self.calls).remove(&down_id);
        self.cancel_forwarded(&down_id, "the call it was made for failed")
            .await;
        let _ = self.tx.send(why.answer(down_id)).await;
    }

    /// Ends the session's side of its child `up` (one of its own, not
    /// restarted): its death once it was ready, or its stop by a reload,
    /// ends the session ([`Relay::new`]'s receiver is told why).
    pub(crate) fn watch_child(&self, up: &Upstream) {
        let (gone, child, mut status) = (self.gone.clone(), up.clone(), up.watch_status());
        tokio::spawn(async move {
            loop {
                let why = match &*status.borrow_and_update() {
                    Status::Down(why) => Some(why.clone()),
                    Status::Stopped => Some("it was stopped (its upstream was restarted)".into()),
                    _ => None,
                };
                if let Some(why) = why {
                    if child.was_ready() {
                        let _ = gone.try_send(why);
                    }
                    return;
                }
                if status.changed().await.is_err() {
                    return;
                }
            }
        });
    }

    /// The session is over: its calls cancelled upstream, the upstreams'
    /// requests waiting for this client's answer answered with an error
    /// (the upstream is told rather than left waiting).
    pub(crate) fn end(&self) {
        let calls: Vec<_> = lock(&self.calls).drain().map(|(_, c)| c).collect();
        for cancel in calls {
            let _ = cancel.send("the downstream session ended".to_owned());
        }
        let forwarded: Vec<Forwarded> = lock(&self.server_requests)
            .drain()
            .map(|(_, f)| f)
            .collect();
        for f in forwarded {
            f.upstream
                .abandon(&f.upstream_id, "the downstream session ended");
        }
        lock(&self.input_waiters).clear();
    }

    /// Asks the client each input request of an `input_required` result
    /// (only what it declared; module `input`) and builds the retry's params.
    async fn gather_input(
        &self,
        down_id: &Id,
        result: &RawValue,
        original: &Request,
    ) -> Result<Box<RawValue>, String> {
        let declared = RequestContext {
            version: ProtocolVersion::V2026_07_28,
            client_capabilities: self.declared.get().cloned().unwrap_or_default(),
            client_info: None,
            log_level: None,
        };
        let asker = super::input::Asker {
            tx: &self.tx,
            waiters: &self.input_waiters,
            next_id: &self.next_server_request,
            prefix: self.prefix,
            timeout: self.request_timeout,
        };
        super::input::gather(asker, down_id, result, original, |method, params| {
            declared.check_input_request(method, params).map_err(|e| {
                format!(
                    "the server asked for input this client cannot give: {e} (not declared in its initialize)"
                )
            })
        })
        .await
    }
}

/// Where a session's own child's requests made while none of the
/// session's calls is in flight go (`roots/list` right after its
/// `initialized`, say), and its cancellations of them: the sender is handed
/// to the child's upstream as it is started, before its handshake, so that
/// none of them can come before the route exists; the receiver to
/// [`adopt`].
pub(crate) fn orphans() -> (mpsc::Sender<CallEvent>, mpsc::Receiver<CallEvent>) {
    mpsc::channel(16)
}

/// Relays `up`'s requests made outside any call ([`orphans`]) to the client
/// of `session`, on the session's own stream, until the session or the
/// child is gone.
pub(crate) fn adopt<S: Downstream>(
    session: Weak<S>,
    up: Upstream,
    mut orphans: mpsc::Receiver<CallEvent>,
) {
    let mut status = up.watch_status();
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                event = orphans.recv() => event,
                () = stopped(&mut status) => None,
            };
            let (Some(event), Some(session)) = (event, session.upgrade()) else {
                return;
            };
            let relay = session.relay();
            match event {
                CallEvent::Request(r) => relay.server_request(&up, r, None).await,
                CallEvent::Notification(n) => {
                    if let Some(n) = relay.upstream_cancelled(&up, n) {
                        let _ = relay.tx.send(Message::Notification(n)).await;
                    }
                }
            }
        }
    });
}

/// Resolves once the watched upstream is stopped for good.
async fn stopped(status: &mut watch::Receiver<Status>) {
    loop {
        if matches!(&*status.borrow_and_update(), Status::Stopped) {
            return;
        }
        if status.changed().await.is_err() {
            return;
        }
    }
}

/// An upstream's failure as the client reads it: naming the upstream once
/// when there are several.
pub(crate) fn named(name: Option<&str>, why: Error) -> Error {
    let Some(name) = name else { return why };
    let text = why.to_string();
    if text.contains(&format!("upstream server {name}")) {
        return why;
    }
    Error::Upstream(match text.strip_prefix("the upstream server ") {
        Some(rest) => format!("the upstream server {name} {rest}"),
        None => format!("the upstream server {name}: {text}"),
    })
}

/// The most `input_required` rounds one call may take.
const MAX_INPUT_ROUNDS: u32 = 16;

/// Runs one call upstream and relays what belongs to it, until its answer
/// or its cancellation (then the client gets no response).
pub(crate) async fn pump<S: Downstream>(
    session: Arc<S>,
    upstream: Upstream,
    begun: Begun,
    mut cancel: oneshot::Receiver<String>,
) {
    let relay = session.relay();
    let Begun {
        down_id,
        start,
        original,
        list,
        named: name,
        answering: _answering,
    } = begun;
    let name = name.as_deref();
    let call = match start {
        TryCall::Started(call, None) => Ok(call),
        TryCall::Started(call, Some(unsent)) => match unsent.0.send(unsent.1).await {
            Ok(()) => Ok(call),
            Err(_) => Err(Error::Upstream("the upstream server went away".to_owned())),
        },
        TryCall::Failed(why) => Err(why),
        // Rare paths are boxed to keep the pump's future (copied on spawn) small.
        TryCall::Later(r) => {
            let start = Box::pin(upstream.call(r, relay.owner));
            tokio::select! {
                // A call that got its slot (and so reached the upstream's
                // queue) in the same poll as its cancellation is cancelled
                // upstream below.
                biased;
                started = start => started,
                reason = &mut cancel => {
                    // It never reached the upstream (waiting for it to be
                    // ready, for a slot, or for room in its queue): nothing to
                    // cancel there.
                    debug!(id = %down_id, reason = ?reason.ok(), "cancelled before it reached the upstream");
                    relay.tx.forget(&down_id);
                    return;
                }
            }
        }
    };
    let mut call = match call {
        Ok(c) => c,
        Err(why) => return relay.fail(down_id, named(name, why)).await,
    };
    let mut rounds = 0;
    loop {
        let step = tokio::select! {
            step = tokio::time::timeout(relay.request_timeout, call.next()) => match step {
                Ok(step) => step,
                Err(_) => {
                    let why = format!(
                        "the upstream server{} sent nothing for this request within {:?}",
                        name.map(|n| format!(" {n}")).unwrap_or_default(),
                        relay.request_timeout
                    );
                    call.cancel(&format!("timed out in the {}", relay.front)).await;
                    return relay.fail(down_id, Error::Upstream(why)).await;
                }
            },
            reason = &mut cancel => {
                let reason = reason.unwrap_or_else(|_| "cancelled".to_owned());
                call.cancel(&reason).await;
                relay.cancel_forwarded(&down_id, "the call it was made for was cancelled").await;
                // The client gets no response (it cancelled, or its session
                // ended): its POST stops waiting for one. Its record names
                // the upstream that had it.
                relay.tx.upstream_took(&down_id, &upstream, None);
                relay.tx.forget(&down_id);
                return;
            }
        };
        match step {
            Step::Event(CallEvent::Notification(n)) => {
                if !session.wants(&n) {
                    continue;
                }
                let n = match Notice::of(&n.method) {
                    Notice::Cancelled => match relay.upstream_cancelled(&upstream, n) {
                        Some(n) => n,
                        None => continue,
                    },
                    _ => n,
                };
                let _ = relay
                    .tx
                    .send_related(Message::Notification(n), Some(down_id.clone()))
                    .await;
            }
            Step::Event(CallEvent::Request(req)) => {
                Box::pin(relay.server_request(&upstream, req, Some(down_id.clone()))).await;
            }
            Step::Done(Message::Response(resp))
                if original.is_some() && is_input_required(&resp.result) =>
            {
                let original = original.as_ref().expect("checked by the match guard");
                rounds += 1;
                let retry = if rounds > MAX_INPUT_ROUNDS {
                    Err(format!(
                        "the server asked for input more than {MAX_INPUT_ROUNDS} times"
                    ))
                } else {
                    // The client may cancel the call (or its session end)
                    // while it is being asked: nothing then waits for it.
                    let gather = Box::pin(relay.gather_input(&down_id, &resp.result, original));
                    tokio::select! {
                        retry = gather => retry,
                        reason = &mut cancel => {
                            debug!(id = %down_id, reason = ?reason.ok(), "cancelled while the client was asked for input");
                            lock(&relay.input_waiters).retain(|_, w| !w.is_closed());
                            relay.tx.forget(&down_id);
                            return;
                        }
                    }
                };
                let again = match retry {
                    Ok(params) => Request {
                        id: down_id.clone(),
                        method: original.method.clone(),
                        params: Some(params),
                    },
                    Err(why) => {
                        let why = named(name, Error::Upstream(why));
                        return relay.fail(down_id, why).await;
                    }
                };
                match Box::pin(upstream.call(again, relay.owner)).await {
                    Ok(c) => call = c,
                    Err(why) => return relay.fail(down_id, named(name, why)).await,
                }
            }
            Step::Done(message) => {
                lock(&relay.calls).remove(&down_id);
                relay.tx.upstream_took(&down_id, &upstream, call.took());
                let out = match message {
                    Message::Response(resp) => {
                        let result = session.finish(&upstream, list, resp.result);
                        // Only a 2026-07-28 upstream's call keeps the original.
                        let result = match original {
                            Some(_) => legacy_result(result),
                            None => result,
                        };
                        Message::Response(Response {
                            id: down_id,
                            result,
                        })
                    }
                    Message::Error(e) => Message::Error(ErrorResponse::new(Some(down_id), e.error)),
                    other => other,
                };
                debug!("call answered");
                let _ = relay.tx.send(out).await;
                return;
            }
            Step::Failed(why) => return relay.fail(down_id, named(name, why)).await,
        }
    }
}

/// A 2026-07-28 result made fit for a legacy session: the members no earlier
/// revision has are removed (`resultType`, and the cache hints `ttlMs` and
/// `cacheScope`, REVISIONS.md §6), as is `_meta["io.modelcontextprotocol/serverInfo"]`
/// (the session's `initialize` result named the server already); everything
/// else is kept as the upstream wrote it. A result naming none of them passes
/// untouched, without being parsed; one that does (every 2026-07-28 result has a
/// `resultType`) is parsed and written again, the price of translation.
pub(crate) fn legacy_result(result: Box<RawValue>) -> Box<RawValue> {
    const MODERN_ONLY: [&str; 3] = ["resultType", "ttlMs", "cacheScope"];
    let text = result.get();
    if !MODERN_ONLY.iter().any(|k| text.contains(k)) && !text.contains(SERVER_INFO) {
        return result;
    }
    // Edited as raw members: every other value stays as the upstream wrote it.
    let Ok(mut fields) = RawObject::parse(text) else {
        return result;
    };
    for k in MODERN_ONLY {
        fields.remove(k);
    }
    if let Some(mut m) = fields.get_object("_meta") {
        m.remove(SERVER_INFO);
        if m.is_empty() {
            fields.remove("_meta");
        } else {
            fields.insert("_meta", m.to_raw());
        }
    }
    fields.to_raw()
}

/// `params` with `_meta` members added (kept when the client set them itself),
/// edited as raw members: every other value stays as the client wrote it.
pub(crate) fn with_meta(
    params: Option<&RawValue>,
    meta: &Map<String, Value>,
) -> Result<Box<RawValue>, String> {
    let mut p = match params {
        None => RawObject::default(),
        Some(raw) => RawObject::parse(raw.get()).map_err(|_| "params must be an object")?,
    };
    let mut m = match p.get("_meta") {
        None => RawObject::default(),
        Some(_) => p
            .get_object("_meta")
            .ok_or("params._meta must be an object")?,
    };
    for (k, v) in meta {
        if m.get(k).is_none() {
            m.insert(
                k,
                serde_json::value::to_raw_value(v).map_err(|e| e.to_string())?,
            );
        }
    }
    p.insert("_meta", m.to_raw());
    Ok(p.to_raw())
}

/// Whether a result is a 2026-07-28 `input_required` (MRTR) result.
pub(crate) fn is_input_required(result: &RawValue) -> bool {
    result.get().contains("input_required")
        && serde_json::from_str::<Map<String, Value>>(result.get())
            .is_ok_and(|m| m.get("resultType").and_then(Value::as_str) == Some("input_required"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::raw;

    /// The 2026-07-28 members go; the rest stays as the child wrote it.
    #[test]
    fn a_legacy_result_keeps_the_childs_text() {
        let text = r#"{"content":[{"type":"text","text":"\u00e9"}],"structuredContent":{"n":123456789012345678901234567890,"z":-0,"f":1.50,"e":1e400},"resultType":"complete","ttlMs":5,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s"},"k":1.0}}"#;
        assert_eq!(
            legacy_result(raw(text)).get(),
            r#"{"content":[{"type":"text","text":"\u00e9"}],"structuredContent":{"n":123456789012345678901234567890,"z":-0,"f":1.50,"e":1e400},"_meta":{"k":1.0}}"#
        );
        let only = r#"{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{}}}"#;
        assert_eq!(legacy_result(raw(only)).get(), "{}");
        let untouched = r#"{"content":[] ,"x":1.50}"#;
        assert_eq!(legacy_result(raw(untouched)).get(), untouched);
    }

    /// Members added to `_meta` only where the client set none; every value of
    /// the client's kept as written.
    #[test]
    fn with_meta_adds_members_and_keeps_the_clients_text() {
        let mut meta = Map::new();
        meta.insert("a".into(), Value::from(1));
        meta.insert("progressToken".into(), Value::from("ours"));
        let p = raw(
            r#"{"arguments":{"n":123456789012345678901234567890,"z":-0},"_meta":{"progressToken":1e400}}"#,
        );
        assert_eq!(
            with_meta(Some(&p), &meta).unwrap().get(),
            r#"{"arguments":{"n":123456789012345678901234567890,"z":-0},"_meta":{"progressToken":1e400,"a":1}}"#
        );
        assert_eq!(
            with_meta(None, &meta).unwrap().get(),
            r#"{"_meta":{"a":1,"progressToken":"ours"}}"#
        );
        assert!(with_meta(Some(&raw("[1]")), &meta).is_err());
        assert!(with_meta(Some(&raw(r#"{"_meta":3}"#)), &meta).is_err());
    }
}
