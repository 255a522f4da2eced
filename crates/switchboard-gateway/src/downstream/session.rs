//! One downstream session of the legacy era (2024-11-05 HTTP+SSE, or Streamable
//! HTTP 2025-03-26 to 2025-11-25): the session's messages forwarded to an upstream
//! child, and the child's back.
//!
//! ```text
//! client ──initialize──> per-session: start a child initialized with the client's
//!                                     own params; answer with the child's result
//!                        shared:      answer from the shared child's result (the
//!                                     version negotiated against ours)
//! client ──request──> allowlist, lock (tools/call, prompts/get; with a lock,
//!          held in its pump task until a change of its list the child announced
//!          is judged: module `catalog::changes`; a shared child's by the
//!          bridge's follower, a session's own child's by its re-lister
//!          `follow_own`, into the session's own verdicts)
//!          ──> Upstream::call ──> pump task
//!          (started in the task serving the POST when nothing is queued before
//!          it and nothing has to wait: see `Direct`):
//!          progress / logs      ──send_related(id)──> the call's SSE stream
//!          server→client request ──as "sb-s<n>"──> client; its answer ──> child
//!          response (tools/list filtered) ──> client, with the client's own id
//! client ──notifications/cancelled──> the pump task cancels the upstream call
//! client ──ping──> answered here;  notifications/initialized ──> swallowed
//! child  ──list changes, resource updates──> every session (broadcast)
//! ```
//!
//! When the session ends (DELETE, idle timeout, the client gone) its calls are
//! cancelled upstream, the child's requests it was forwarded and not answered
//! are answered with an error, and, per session, its child is ended in the
//! spec's order. A per-session child that dies ends its session the same way
//! (it is not restarted: a new process would know nothing of the session's
//! `initialize`, subscriptions or log level): the calls in flight fail at once,
//! later requests on the session get 404 (a legacy SSE stream closes) and the
//! client starts a new session (Streamable HTTP, "Session Management").
//!
//! This module must not know how the child is spawned or supervised (that is
//! [`crate::upstream`]) nor about HTTP beyond the session transport it is given.

// foldhash, not SipHash: these tables are read on every call (ids minted here,
// or a session's own, bounded by its pending-request limit).
use foldhash::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use switchboard_protocol::jsonrpc::{
    Batching, ErrorResponse, Id, Message, Notification, Request, Response,
};
use switchboard_protocol::lifecycle::RequestContext;
use switchboard_protocol::types::meta::{
    CLIENT_CAPABILITIES, CLIENT_INFO, LOG_LEVEL, PROTOCOL_VERSION, SERVER_INFO,
};
use switchboard_protocol::types::{
    CancelledNotificationParams, InitializeRequestParams, LoggingLevel, NOTIFICATION_CANCELLED,
};
use switchboard_protocol::version::Supported;
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::{DirectSink, Inbound, Receiver, Sender};
use tokio::sync::{broadcast, oneshot, watch};
use tracing::{debug, info, warn};

use crate::catalog::tools::{follow_own, OwnJudgement};
use crate::classify::{ListKind, Notice, Route};
use crate::error::Error;
use crate::gauge::Gauge;
use crate::raw::RawObject;
use crate::upstream::{empty_object, CallEvent, Status, Step, TryCall, Upstream};
use crate::{ChildMode, Core, Judging};

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What a session's tasks share.
struct Session {
    core: Arc<Core>,
    tx: Sender,
    owner: u64,
    /// Where the session is in its life, and its upstream.
    state: Mutex<State>,
    /// Downstream request id → the cancel switch of its pump task.
    calls: Mutex<HashMap<Id, oneshot::Sender<String>>>,
    /// Our downstream id of a forwarded server→client request → where it came
    /// from.
    server_requests: Mutex<HashMap<Id, Forwarded>>,
    next_server_request: AtomicU64,
    /// Our ids of requests asked of the client for an `input_required` result,
    /// and who waits for the answer.
    input_waiters: Mutex<HashMap<Id, oneshot::Sender<Message>>>,
    /// The session's calls forwarded and not yet answered (their pump tasks).
    pumps: Gauge,
    /// Where a per-session child's requests made while no call is in flight go
    /// (e.g. `roots/list` right after the bridge's own `initialized`), and its
    /// cancellations of requests whose call is over; handed to
    /// the child's upstream as soon as it is started, before its handshake, so
    /// none of them can arrive before the route exists.
    orphan_tx: Mutex<Option<tokio::sync::mpsc::Sender<CallEvent>>>,
    /// The resources this session subscribed to on the shared child
    /// ([`Core::shared_subscription`]); `notifications/resources/updated`
    /// reaches the session only for these.
    subscribed: Mutex<std::collections::HashSet<String>>,
    /// The level this session set with `logging/setLevel` on a shared child,
    /// applied here ([`Core::shared_child_logs_everything`]); `None`: every log
    /// message the child sends.
    log_level: Mutex<Option<LoggingLevel>>,
    /// With a drift guard and a child of its own: the judgement of that
    /// child's lists, by its re-lister ([`follow_own`]). `None` otherwise (a
    /// shared child's are the core's).
    own: Option<Arc<OwnJudgement>>,
}

/// Where a session is in its life.
enum State {
    /// No `initialize` yet.
    New,
    /// `initialize` is being answered: its upstream is started (or joined) and
    /// may be getting ready.
    Initializing(Upstream),
    /// Initialized.
    Serving {
        upstream: Upstream,
        /// For a 2026-07-28-only upstream: the `_meta` each request gets (the
        /// revision, the client's capabilities and info from its `initialize`,
        /// its log level).
        meta: Option<Map<String, Value>>,
    },
    /// Its `initialize` failed: the session ends once the error is sent, so a
    /// client retrying during an outage does not fill the session limit; the
    /// upstream started for it, if any, is still to stop.
    Failed(Option<Upstream>),
    /// Over: its upstream was let go.
    Ended,
}

impl State {
    /// The upstream requests go to, while there is one to reach.
    fn upstream(&self) -> Option<&Upstream> {
        match self {
            State::Initializing(up) | State::Serving { upstream: up, .. } => Some(up),
            State::Failed(up) => up.as_ref(),
            State::New | State::Ended => None,
        }
    }

    /// The `_meta` of a 2026-07-28-only upstream's requests.
    fn meta(&self) -> Option<&Map<String, Value>> {
        match self {
            State::Serving { meta, .. } => meta.as_ref(),
            _ => None,
        }
    }
}

impl Session {
    /// The session's upstream, if it has one.
    fn upstream(&self) -> Option<Upstream> {
        lock(&self.state).upstream().cloned()
    }

    /// The `_meta` a 2026-07-28-only upstream's requests get.
    fn modern_meta(&self) -> Option<Map<String, Value>> {
        lock(&self.state).meta().cloned()
    }

    /// Whether `initialize` failed: the session is ending.
    fn failed(&self) -> bool {
        matches!(*lock(&self.state), State::Failed(_))
    }

    /// With a drift guard, whose announced list changes this session's uses
    /// of an entry on `upstream` (the session's) wait for, and what judged
    /// them: the shared child's (the bridge's follower), or its own child's
    /// (its re-lister, [`follow_own`]). `None` without a guard.
    fn judging<'a>(&'a self, upstream: &'a Upstream) -> Option<Judging<'a>> {
        self.core.guard.as_ref()?;
        let judged = match self.core.mode.per_session() {
            false => &self.core.judged,
            true => &self.own.as_ref()?.judged,
        };
        Some(Judging { upstream, judged })
    }

    /// The list whose announced changes a request of `route` must wait for
    /// before it is checked ([`Core::unjudged`]); at once `None` without a
    /// guard.
    fn unjudged(&self, route: Route) -> Option<ListKind> {
        self.core.guard.as_ref()?;
        let upstream = self.upstream()?;
        self.core.unjudged(self.judging(&upstream)?, route)
    }

    /// Whose verdicts this session's lists and calls are judged by: its own
    /// child's, or the shared child's.
    fn guard_scope(&self) -> crate::catalog::guard::Scope<'_> {
        match &self.own {
            Some(own) => crate::catalog::guard::Scope::Own(&own.verdicts),
            None => crate::catalog::guard::Scope::Shared,
        }
    }
}

/// A server→client request of the child forwarded to the client and not
/// answered yet.
struct Forwarded {
    /// The id the upstream handed it on under ([`CallEvent::Request`]).
    upstream_id: Id,
    /// The upstream it came from.
    upstream: Upstream,
    /// The client's request (a call) it was made for; `None`: the child's own
    /// initiative, on the session's stream.
    call: Option<Id>,
}

/// Serves one legacy session until it ends.
pub(crate) async fn serve(core: Arc<Core>, tx: Sender, mut rx: Receiver) {
    let owner = core.next_owner();
    // A per-session child's requests made while no call is in flight.
    let (orphan_tx, mut orphans) = tokio::sync::mpsc::channel::<CallEvent>(16);
    let core_guarded = core.guard.is_some();
    let per_session = core.mode.per_session();
    let session = Arc::new(Session {
        core,
        tx,
        owner,
        state: Mutex::new(State::New),
        calls: Mutex::new(HashMap::default()),
        server_requests: Mutex::new(HashMap::default()),
        next_server_request: AtomicU64::new(1),
        input_waiters: Mutex::new(HashMap::default()),
        pumps: Gauge::default(),
        orphan_tx: Mutex::new(Some(orphan_tx)),
        subscribed: Mutex::new(std::collections::HashSet::new()),
        log_level: Mutex::new(None),
        own: (core_guarded && per_session).then(|| Arc::new(OwnJudgement::default())),
    });
    let mut feeds = Feeds::default();
    rx.set_direct(Arc::new(Direct(session.clone())));
    loop {
        let event = tokio::select! {
            event = rx.recv() => event,
            Some(event) = orphans.recv() => {
                match event {
                    CallEvent::Request(request) => {
                        forward_server_request(&session, request, None).await;
                    }
                    CallEvent::Notification(n) => {
                        if let Some(n) = child_cancelled(&session, n) {
                            let _ = session.tx.send(Message::Notification(n)).await;
                        }
                    }
                }
                continue;
            }
            why = child_gone(&mut feeds.child) => {
                // The spec's way for a server whose state is gone: end the
                // session (later requests get 404; the client initializes a new
                // one). The calls in flight get their errors first.
                warn!(why, "the session's own child is gone: ending the session");
                session.pumps.drained(crate::CALLS_FAIL_WITHIN).await;
                break;
            }
            n = recv_broadcast(&mut feeds.broadcasts) => {
                let n = n.filter(|n| wants(&session, n)).and_then(|n| {
                    // A shared child's cancellation of a request whose call is
                    // over: only for the session that holds the request.
                    if Notice::of(&n.method) == Notice::Cancelled {
                        child_cancelled(&session, n)
                    } else {
                        Some(n)
                    }
                });
                if let Some(n) = n {
                    let _ = session.tx.send(Message::Notification(n)).await;
                }
                continue;
            }
        };
        match event {
            None | Some(Inbound::Closed { .. }) => {
                if let Some(Inbound::Closed { reason }) = &event {
                    debug!(%reason, "downstream session ended");
                }
                break;
            }
            // A server-side transport reports no failed requests; a client's
            // failure, if one came, is an answer like any other.
            Some(Inbound::Failed { id, error }) => {
                on_message(&session, Inbound::failure_response(id, error), &mut feeds).await;
            }
            Some(Inbound::Message(m)) => {
                on_message(&session, m, &mut feeds).await;
                if session.failed() {
                    debug!("initialize failed: ending the session");
                    break;
                }
            }
            Some(Inbound::Batch(items)) => {
                for item in items {
                    match item {
                        Ok(m) => on_message(&session, m, &mut feeds).await,
                        Err(e) if e.wants_response() => {
                            let _ = session.tx.send(Message::Error(e.to_response())).await;
                        }
                        Err(_) => {}
                    }
                }
            }
        }
    }
    // No more calls start; the sink's hold on the session goes.
    rx.clear_direct();
    let cancels: Vec<_> = lock(&session.calls).drain().map(|(_, c)| c).collect();
    for cancel in cancels {
        let _ = cancel.send("the downstream session ended".to_owned());
    }
    // The child's requests still waiting for this client's answer (made for a
    // call that has finished, or on the child's own initiative) get none now:
    // the child is told, rather than left waiting.
    let forwarded: Vec<Forwarded> = lock(&session.server_requests)
        .drain()
        .map(|(_, f)| f)
        .collect();
    for f in forwarded {
        f.upstream
            .abandon(&f.upstream_id, "the downstream session ended");
    }
    let upstream = match std::mem::replace(&mut *lock(&session.state), State::Ended) {
        State::Initializing(up) | State::Serving { upstream: up, .. } => Some(up),
        State::Failed(up) => up,
        State::New | State::Ended => None,
    };
    match (upstream, session.core.mode.per_session()) {
        (Some(up), true) => up.shutdown(std::time::Duration::ZERO).await,
        (Some(up), false) => {
            // The shared child keeps serving others: give up this session's
            // subscriptions (the child is told when it was the last).
            let uris: Vec<String> = lock(&session.subscribed).drain().collect();
            for uri in uris {
                let request = Request::new(
                    Id::from(0u64),
                    switchboard_protocol::types::RESOURCES_UNSUBSCRIBE,
                    &serde_json::json!({ "uri": uri }),
                );
                let Ok(request) = request else { continue };
                let (core, owner) = (&session.core, session.owner);
                let ask = || crate::call_once(&up, request, owner, core.request_timeout);
                let _ = core.shared_subscription(&uri, false, true, ask).await;
            }
        }
        (None, _) => {}
    }
}

/// What a session's task listens to besides its client, once initialized.
#[derive(Default)]
struct Feeds {
    /// The child's notifications for everyone (list changes, ...).
    broadcasts: Option<broadcast::Receiver<Notification>>,
    /// A per-session child's status: its end ends the session.
    child: Option<watch::Receiver<Status>>,
}

/// Resolves (with why) once the watched child has died (a per-session child
/// is not restarted). Never without a child to watch, nor for a child stopped
/// on purpose (the session ending, or the bridge: the session ends by those
/// means already).
async fn child_gone(child: &mut Option<watch::Receiver<Status>>) -> String {
    let Some(rx) = child.as_mut() else {
        return std::future::pending().await;
    };
    loop {
        if let Status::Down(why) = &*rx.borrow_and_update() {
            return why.clone();
        }
        if rx.changed().await.is_err() {
            return std::future::pending().await;
        }
    }
}

/// The child's `notifications/cancelled` for one of its requests this session
/// was forwarded (its `requestId` already the upstream's id of it): made fit
/// for the client, with `requestId` the id the client saw, and the request
/// forgotten (a late answer is dropped). `None` when the request is not one
/// this session has open (the client answered it meanwhile).
fn child_cancelled(session: &Session, n: Notification) -> Option<Notification> {
    let mut params = n
        .params
        .as_ref()
        .and_then(|p| serde_json::from_str::<Map<String, Value>>(p.get()).ok())?;
    let upstream_id = params
        .get("requestId")
        .and_then(|v| serde_json::value::to_raw_value(v).ok())
        .and_then(|raw| Id::from_raw(&raw).ok())?;
    let down = {
        let mut forwarded = lock(&session.server_requests);
        let down = forwarded
            .iter()
            .find(|(_, f)| f.upstream_id == upstream_id)
            .map(|(down, _)| down.clone());
        if let Some(down) = &down {
            forwarded.remove(down);
        }
        down
    };
    let Some(down) = down else {
        debug!(%upstream_id, "the child cancelled a request this session has not open: dropped");
        return None;
    };
    params.insert(
        "requestId".to_owned(),
        serde_json::to_value(&down).unwrap_or(Value::Null),
    );
    Notification::new(n.method, &params).ok()
}

/// Forgets the child's requests forwarded for the client's call `down_id`,
/// which ended without the child's answer (cancelled, timed out, failed): the
/// upstream has answered them to the child already (or the child is gone), so
/// the client's late answers would go nowhere. The client is told that each is
/// cancelled (`notifications/cancelled` with `reason`, on the call's stream
/// while it is open; every revision's "Cancellation": either side may cancel a
/// request it sent), so it stops working on them (a sampling dialog, say).
async fn cancel_forwarded(session: &Session, down_id: &Id, reason: &str) {
    let cancelled: Vec<Id> = {
        let mut forwarded = lock(&session.server_requests);
        let mine = forwarded
            .iter()
            .filter(|(_, f)| f.call.as_ref() == Some(down_id))
            .map(|(id, _)| id.clone())
            .collect::<Vec<_>>();
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
            let _ = session
                .tx
                .send_related(Message::Notification(n), Some(down_id.clone()))
                .await;
        }
    }
}

/// Whether a broadcast notification is for this session: everything but
/// `notifications/resources/updated` of a shared child, which only the
/// resource's subscribers get (a per-session child tracks that itself).
fn wants(session: &Session, n: &Notification) -> bool {
    if !wants_log(session, n) {
        return false;
    }
    if session.core.mode != ChildMode::Shared || Notice::of(&n.method) != Notice::ResourceUpdated {
        return true;
    }
    let uri = n
        .params
        .as_ref()
        .and_then(|p| serde_json::from_str::<Map<String, Value>>(p.get()).ok())
        .and_then(|p| p.get("uri").and_then(Value::as_str).map(str::to_owned));
    uri.is_some_and(|u| lock(&session.subscribed).contains(&u))
}

/// Whether a notification passes the session's own log level (a shared child's
/// log messages; everything else passes).
fn wants_log(session: &Session, n: &Notification) -> bool {
    if session.core.mode != ChildMode::Shared || Notice::of(&n.method) != Notice::Log {
        return true;
    }
    let min = *lock(&session.log_level);
    min.is_none_or(|min| crate::log_at_least(n, min))
}

/// `resources/subscribe` or `resources/unsubscribe` of a session on the shared
/// child, which other sessions share: counted in [`Core::shared_subscription`],
/// answered by the child or here.
/// `subscribe`: which of the two.
async fn shared_subscription(
    session: Arc<Session>,
    upstream: Upstream,
    r: Request,
    subscribe: bool,
) {
    let uri = r
        .params_as::<Map<String, Value>>()
        .ok()
        .and_then(|p| p.get("uri").and_then(Value::as_str).map(str::to_owned));
    let Some(uri) = uri else {
        // Malformed: the child says what is wrong.
        forward(&session, upstream, Route::Subscribe(subscribe), r, None);
        return;
    };
    let mine = lock(&session.subscribed).contains(&uri);
    let id = r.id.clone();
    let core = session.core.clone();
    let ask = || crate::call_once(&upstream, r, session.owner, core.request_timeout);
    let answer = core
        .shared_subscription(&uri, subscribe, mine, ask)
        .await
        .unwrap_or_else(|| {
            Message::Response(Response {
                id,
                result: empty_object(),
            })
        });
    {
        let mut subscribed = lock(&session.subscribed);
        if !subscribe {
            subscribed.remove(&uri);
        } else if matches!(answer, Message::Response(_)) {
            subscribed.insert(uri);
        }
    }
    let _ = session.tx.send(answer).await;
}

async fn recv_broadcast(
    rx: &mut Option<broadcast::Receiver<Notification>>,
) -> Option<Notification> {
    let Some(r) = rx.as_mut() else {
        return std::future::pending().await;
    };
    loop {
        match r.recv().await {
            Ok(n) => return Some(n),
            Err(broadcast::error::RecvError::Lagged(k)) => {
                warn!(missed = k, "a slow session missed upstream notifications");
            }
            Err(broadcast::error::RecvError::Closed) => {
                *rx = None;
                return std::future::pending().await;
            }
        }
    }
}

async fn on_message(session: &Arc<Session>, message: Message, feeds: &mut Feeds) {
    match message {
        Message::Request(r) => on_request(session, r, feeds).await,
        Message::Notification(n) => on_notification(session, n).await,
        Message::Response(ref r) => answer_server_request(session, &r.id.clone(), message).await,
        Message::Error(ref e) => match e.id.clone() {
            Some(id) => answer_server_request(session, &id, message).await,
            None => debug!(error = %e.error.message, "the client sent an error without id"),
        },
    }
}

/// The client answered one of the child's requests: give it back under the
/// child's id.
async fn answer_server_request(session: &Arc<Session>, id: &Id, message: Message) {
    if let Some(waiter) = lock(&session.input_waiters).remove(id) {
        let _ = waiter.send(message);
        return;
    }
    let Some(Forwarded {
        upstream_id: child_id,
        upstream,
        ..
    }) = lock(&session.server_requests).remove(id)
    else {
        debug!(%id, "an answer to no request of ours (or to one the child cancelled)");
        return;
    };
    let message = match message {
        Message::Response(r) => Message::Response(Response {
            id: child_id,
            result: r.result,
        }),
        Message::Error(e) => Message::Error(ErrorResponse::new(Some(child_id), e.error)),
        other => other,
    };
    upstream.respond(message).await;
}

async fn on_notification(session: &Arc<Session>, n: Notification) {
    match Notice::of(&n.method) {
        Notice::Initialized => {}
        Notice::Cancelled => {
            // Read as raw members: the id exactly as the client wrote it (an
            // integer beyond 64 bits included), and its reason, which goes on
            // to the child.
            let params = n
                .params
                .as_ref()
                .and_then(|p| RawObject::parse(p.get()).ok());
            let Some(params) = params else { return };
            let id = params
                .get("requestId")
                .and_then(|raw| Id::from_raw(raw).ok());
            let reason = params
                .get("reason")
                .and_then(|r| serde_json::from_str::<String>(r.get()).ok())
                .unwrap_or_else(|| "cancelled by the client".to_owned());
            if let Some(cancel) = id.and_then(|id| lock(&session.calls).remove(&id)) {
                let _ = cancel.send(reason);
            }
        }
        _ => {
            if let Some(up) = session.upstream() {
                up.send(Message::Notification(n)).await;
            }
        }
    }
}

async fn on_request(session: &Arc<Session>, r: Request, feeds: &mut Feeds) {
    let route = Route::of(&r.method);
    let mut held = None;
    match route {
        Route::Initialize => {
            let was_new = matches!(*lock(&session.state), State::New);
            let answer = initialize(session, &r).await;
            {
                let mut state = lock(&session.state);
                if was_new && matches!(answer, Message::Error(_)) {
                    *state = match std::mem::replace(&mut *state, State::Ended) {
                        State::Initializing(up) => State::Failed(Some(up)),
                        _ => State::Failed(None),
                    };
                }
                if let Some(up) = state.upstream() {
                    feeds.broadcasts = Some(up.subscribe());
                    let failed = matches!(*state, State::Failed(_));
                    // Its death ends the session, unless it is restarted.
                    if session.core.mode == ChildMode::PerSession && !failed {
                        feeds.child = Some(up.watch_status());
                    }
                }
            }
            let _ = session.tx.send(answer).await;
            return;
        }
        Route::Ping => {
            let pong = Message::Response(Response {
                id: r.id,
                result: empty_object(),
            });
            let _ = session.tx.send(pong).await;
            return;
        }
        Route::Use(_) => {
            // With a drift guard, a change of its list the session's child
            // (shared or its own) announced and no re-list judged yet:
            // checked by its pump once judged (module `catalog::changes`),
            // without holding up the session's task meanwhile.
            held = session.unjudged(route);
            let checked = match held {
                Some(_) => Ok(()),
                None => {
                    session
                        .core
                        .check_request(session.guard_scope(), route, r.params.as_deref())
                }
            };
            if let Err(why) = checked {
                let _ = session.tx.send(why.answer(r.id)).await;
                return;
            }
        }
        _ => {}
    }
    let Some(upstream) = session.upstream() else {
        let _ = session
            .tx
            .send(Error::InvalidRequest("the session is not initialized".into()).answer(r.id))
            .await;
        return;
    };
    let mut r = r;
    if let Some(meta) = session.modern_meta() {
        // A 2026-07-28-only child: no session methods; every request carries _meta.
        match route {
            Route::SetLevel => {
                let level = r
                    .params_as::<Map<String, Value>>()
                    .ok()
                    .and_then(|p| p.get("level").cloned());
                if let State::Serving { meta: Some(m), .. } = &mut *lock(&session.state) {
                    match level {
                        Some(level) => m.insert(LOG_LEVEL.to_owned(), level),
                        None => m.remove(LOG_LEVEL),
                    };
                }
                let done = Message::Response(Response {
                    id: r.id,
                    result: empty_object(),
                });
                let _ = session.tx.send(done).await;
                return;
            }
            Route::Subscribe(_) => {
                let why = "resource subscriptions through the bridge to a 2026-07-28-only server are not supported";
                let _ = session
                    .tx
                    .send(Error::Unsupported(why.into()).answer(r.id))
                    .await;
                return;
            }
            _ => {}
        }
        match with_meta(r.params.as_deref(), &meta) {
            Ok(params) => r.params = Some(params),
            Err(why) => {
                let _ = session
                    .tx
                    .send(Error::InvalidParams(why).answer(r.id))
                    .await;
                return;
            }
        }
    }
    if session.core.mode == ChildMode::Shared && route == Route::SetLevel {
        let logs = upstream
            .ready(std::time::Duration::ZERO)
            .await
            .is_ok_and(|info| !info.modern && info.result.capabilities.logging.is_some());
        if logs {
            let level = r
                .params_as::<Map<String, Value>>()
                .ok()
                .and_then(|p| p.get("level").and_then(Value::as_str).map(str::to_owned))
                .and_then(|l| l.parse::<LoggingLevel>().ok());
            let Some(level) = level else {
                let why = "logging/setLevel needs a valid params.level";
                let _ = session
                    .tx
                    .send(Error::InvalidParams(why.into()).answer(r.id))
                    .await;
                return;
            };
            *lock(&session.log_level) = Some(level);
            let session = session.clone();
            tokio::spawn(async move {
                session
                    .core
                    .shared_child_logs_everything(session.owner)
                    .await;
                let done = Message::Response(Response {
                    id: r.id,
                    result: empty_object(),
                });
                let _ = session.tx.send(done).await;
            });
            return;
        }
    }
    if let (false, Route::Subscribe(subscribe)) = (session.core.mode.per_session(), route) {
        tokio::spawn(shared_subscription(session.clone(), upstream, r, subscribe));
        return;
    }
    forward(session, upstream, route, r, held);
}

/// Forwards a request to the child: starts the call (on the spot when nothing
/// has to wait) and spawns its pump task. `held`: a use of an entry whose
/// list changed and was not judged yet, to be checked by the pump once it is
/// ([`Session::unjudged`]).
fn forward(
    session: &Arc<Session>,
    upstream: Upstream,
    route: Route,
    r: Request,
    held: Option<ListKind>,
) {
    let (cancel_tx, cancel_rx) = oneshot::channel();
    lock(&session.calls).insert(r.id.clone(), cancel_tx);
    let call = Begun::new(session, &upstream, route, r, held);
    tokio::spawn(pump(session.clone(), upstream, call, cancel_rx));
}

/// The session's direct way in ([`DirectSink`]): a request that [`on_request`]
/// would only forward (the session is initialized, the allowlist lets it through,
/// the child is not 2026-07-28-only) is forwarded in the task serving its POST,
/// without the hand-off to the session's task. Anything else is given back, to
/// be queued for the session's task in order.
struct Direct(Arc<Session>);

impl DirectSink for Direct {
    fn deliver(&self, message: Message) -> Result<(), Message> {
        let session = &self.0;
        let Message::Request(r) = message else {
            return Err(message);
        };
        let route = Route::of(&r.method);
        let plain = match route {
            Route::Initialize | Route::Ping => false,
            Route::Subscribe(_) | Route::SetLevel => session.core.mode != ChildMode::Shared,
            // A use held for a list change not judged yet waits in the
            // session's task's way ([`on_request`]).
            Route::Use(_) => {
                session.unjudged(route).is_none()
                    && session
                        .core
                        .would_pass(session.guard_scope(), route, r.params.as_deref())
            }
            Route::Discover
            | Route::List(_)
            | Route::ListResources
            | Route::Read
            | Route::Complete
            | Route::Listen
            | Route::Forward => true,
        };
        // Initializing or serving a legacy upstream; nothing else is plain.
        let upstream = match &*lock(&session.state) {
            State::Initializing(up)
            | State::Serving {
                upstream: up,
                meta: None,
            } if plain => Some(up.clone()),
            _ => None,
        };
        // A use goes on its judgement, looked ahead at above (in block mode
        // that is all: one let through is as approved); in warn mode one not
        // as approved is served, and logged and counted here.
        let warns = session
            .core
            .guard
            .as_ref()
            .is_some_and(|g| g.mode() == crate::GuardMode::Warn);
        let judged = upstream.is_none()
            || !warns
            || !matches!(route, Route::Use(_))
            || session
                .core
                .check_request(session.guard_scope(), route, r.params.as_deref())
                .is_ok();
        match upstream {
            Some(up) if judged => {
                forward(session, up, route, r, None);
                Ok(())
            }
            _ => Err(Message::Request(r)),
        }
    }
}

/// A call as the session's task hands it to its pump task.
struct Begun {
    /// The client's id of the request.
    down_id: Id,
    /// A list the allowlist and the drift guard filter.
    list: Option<crate::ListRequest>,
    /// The request, kept for an `input_required` retry, which only a
    /// 2026-07-28-only child sends; other calls skip the copy.
    original: Option<Request>,
    /// Started already, or still to start.
    start: TryCall,
    /// Held until the changes of this list the session's child (shared or
    /// its own) announced are judged, then checked ([`forward`]); not
    /// started until then.
    held: Option<ListKind>,
    /// Counted while the call is answered (the bridge's drain, the
    /// session's end wait for it).
    answering: crate::Answering,
}

impl Begun {
    /// Starts the call on the spot when nothing has to wait, so that the request
    /// is queued to the child before the pump task is first polled (one task
    /// hand-off less between the client's POST and the child's stdin).
    fn new(
        session: &Session,
        upstream: &Upstream,
        route: Route,
        r: Request,
        held: Option<ListKind>,
    ) -> Self {
        let down_id = r.id.clone();
        let list = crate::ListRequest::of(route, r.params.as_deref(), upstream);
        let original = lock(&session.state).meta().is_some().then(|| r.clone());
        let start = match held {
            Some(_) => TryCall::Later(r),
            None => upstream.try_call(r, session.owner),
        };
        Begun {
            down_id,
            list,
            original,
            start,
            held,
            answering: session.core.answering(&session.tx, Some(&session.pumps)),
        }
    }
}

/// The `initialize` answer for this session.
async fn initialize(session: &Arc<Session>, r: &Request) -> Message {
    let core = &session.core;
    if core.draining.load(Ordering::Relaxed) {
        // SIGTERM: requests in flight finish, no new session starts (nor a child
        // for it); the failed initialize ends this one.
        return Error::Upstream("the bridge is shutting down: no new sessions".into())
            .answer(r.id.clone());
    }
    let params: InitializeRequestParams = match r.params_as() {
        Ok(p) => p,
        Err(e) => {
            return Error::InvalidParams(format!("invalid initialize params: {e}"))
                .answer(r.id.clone())
        }
    };
    let legacy = Supported::new(
        ProtocolVersion::ALL
            .into_iter()
            .filter(|v| v.era() == switchboard_protocol::version::Era::Legacy),
    )
    .expect("there are legacy versions");
    // One `initialize` per session, whatever the child mode (a shared child's
    // session used to take a second one, and renegotiate its revision).
    if !matches!(*lock(&session.state), State::New) {
        return Error::InvalidRequest("the session is already initialized".into())
            .answer(r.id.clone());
    }
    let upstream = match core.mode.per_session() {
        true => {
            let Some(raw) = r.params.clone() else {
                return Error::InvalidParams("initialize needs params".into()).answer(r.id.clone());
            };
            let orphans = lock(&session.orphan_tx).take();
            let up = core.start_session_child(raw, orphans);
            if let (Some(own), Some(guard)) = (&session.own, &core.guard) {
                // Subscribed before the child can announce anything.
                tokio::spawn(follow_own(
                    Arc::downgrade(own),
                    guard.clone(),
                    core.request_timeout,
                    up.clone(),
                    up.watch_status(),
                    up.subscribe(),
                ));
            }
            *lock(&session.state) = State::Initializing(up.clone());
            up
        }
        false => {
            let up = core.shared.clone();
            *lock(&session.state) = State::Initializing(up.clone());
            up
        }
    };
    let info = match upstream.ready(core.init_timeout).await {
        Ok(info) => info,
        Err(why) => return why.answer(r.id.clone()),
    };
    let mut meta = None;
    if info.modern {
        let mut modern = Map::new();
        modern.insert(
            PROTOCOL_VERSION.to_owned(),
            Value::String(ProtocolVersion::V2026_07_28.as_str().to_owned()),
        );
        modern.insert(
            CLIENT_CAPABILITIES.to_owned(),
            serde_json::to_value(&params.capabilities)
                .unwrap_or_else(|_| Value::Object(Map::new())),
        );
        if let Ok(v) = serde_json::to_value(&params.client_info) {
            modern.insert(CLIENT_INFO.to_owned(), v);
        }
        meta = Some(modern);
    }
    let result = match (core.mode.per_session(), info.modern) {
        // The child negotiated with the client's own params: its answer is the answer.
        (true, false) => match core.with_served_instructions(info.raw.clone()) {
            Ok(raw) => raw,
            Err(e) => return e.answer(r.id.clone()),
        },
        // One shared child, or a 2026-07-28-only child: the version is ours to agree.
        _ => {
            let Some(version) = legacy.negotiate_initialize(&params.protocol_version) else {
                return Error::InvalidParams("no protocol version in common".into())
                    .answer(r.id.clone());
            };
            let mut value: serde_json::Map<String, Value> =
                match serde_json::from_str(info.raw.get()) {
                    Ok(v) => v,
                    Err(e) => return Error::Upstream(e.to_string()).answer(r.id.clone()),
                };
            value.insert(
                "protocolVersion".to_owned(),
                Value::String(version.as_str().to_owned()),
            );
            let own = value.get("instructions").and_then(Value::as_str);
            match core.served_instructions(own) {
                Some(text) => value.insert("instructions".to_owned(), Value::String(text)),
                None => value.remove("instructions"),
            };
            match serde_json::value::to_raw_value(&value) {
                Ok(raw) => raw,
                Err(e) => return Error::Internal(e.to_string()).answer(r.id.clone()),
            }
        }
    };
    let negotiated = serde_json::from_str::<serde_json::Map<String, Value>>(result.get())
        .ok()
        .and_then(|m| {
            m.get("protocolVersion")
                .and_then(Value::as_str)
                .and_then(ProtocolVersion::parse)
        });
    if negotiated == Some(ProtocolVersion::V2025_03_26) {
        session.tx.set_batching(Batching::Allowed);
    }
    *lock(&session.state) = State::Serving { upstream, meta };
    info!(client = %params.client_info.name, version = ?negotiated.map(|v| v.as_str()), "downstream session initialized");
    Message::Response(Response {
        id: r.id.clone(),
        result,
    })
}

/// A call held by the drift guard ([`Begun::held`]): waits until the changes
/// of list `held` its `upstream` (the shared child, or the session's own)
/// announced are re-listed and judged (bounded:
/// [`Core::wait_judged`](crate::Core::wait_judged)), then checks it on those
/// verdicts; refused, it is answered here and never reaches the child.
/// `None`: answered (refused) or cancelled meanwhile.
async fn judged(
    session: &Arc<Session>,
    upstream: &Upstream,
    down_id: &Id,
    held: ListKind,
    start: TryCall,
    cancel: &mut oneshot::Receiver<String>,
) -> Option<TryCall> {
    // Always `Later`: a held call is not started ([`Begun::new`]).
    let TryCall::Later(r) = start else {
        return Some(start);
    };
    let waited = tokio::select! {
        biased;
        reason = &mut *cancel => {
            debug!(id = %down_id, reason = ?reason.ok(), "cancelled while held for a list change");
            session.tx.forget(down_id);
            return None;
        }
        waited = async {
            // Always a judging: a call is held only with a guard.
            match session.judging(upstream) {
                Some(judging) => session.core.wait_judged(judging, held).await,
                None => Ok(()),
            }
        } => waited,
    };
    if let Err(why) = waited {
        fail(session, down_id.clone(), why).await;
        return None;
    }
    let route = Route::of(&r.method);
    match session
        .core
        .check_request(session.guard_scope(), route, r.params.as_deref())
    {
        Ok(()) => Some(TryCall::Later(r)),
        Err(why) => {
            fail(session, down_id.clone(), why).await;
            None
        }
    }
}

/// Answers the client's request `down_id` with -32603 and `why`, and forgets it.
async fn fail(session: &Arc<Session>, down_id: Id, why: Error) {
    lock(&session.calls).remove(&down_id);
    cancel_forwarded(session, &down_id, "the call it was made for failed").await;
    let _ = session.tx.send(why.answer(down_id)).await;
}

/// Runs one call upstream and forwards what belongs to it.
async fn pump(
    session: Arc<Session>,
    upstream: Upstream,
    begun: Begun,
    mut cancel: oneshot::Receiver<String>,
) {
    let Begun {
        down_id,
        list,
        original,
        start,
        held,
        answering: _answering,
    } = begun;
    let start = match held {
        // Rare (a guard, a change not judged yet): boxed, as below.
        Some(held) => match Box::pin(judged(
            &session,
            &upstream,
            &down_id,
            held,
            start,
            &mut cancel,
        ))
        .await
        {
            Some(start) => start,
            None => return,
        },
        None => start,
    };
    let mut rounds = 0;
    let call = match start {
        TryCall::Started(call, None) => Ok(call),
        TryCall::Started(call, Some(unsent)) => match unsent.0.send(unsent.1).await {
            Ok(()) => Ok(call),
            Err(_) => Err(Error::Upstream("the upstream server went away".to_owned())),
        },
        TryCall::Failed(why) => Err(why),
        // Rare paths are boxed to keep the pump's future (copied on spawn) small.
        TryCall::Later(r) => {
            let start = Box::pin(upstream.call(r, session.owner));
            tokio::select! {
                // A call that got its slot (and so reached the child's queue) in
                // the same poll as its cancellation is cancelled upstream below.
                biased;
                started = start => started,
                reason = &mut cancel => {
                    // It never reached the child (waiting for it to be ready,
                    // for a slot, or for room in its queue; dropping the wait
                    // gives back what it held): nothing to cancel upstream, and
                    // the client gets no response.
                    debug!(id = %down_id, reason = ?reason.ok(), "cancelled before it reached the child");
                    session.tx.forget(&down_id);
                    return;
                }
            }
        }
    };
    let mut call = match call {
        Ok(c) => c,
        Err(why) => {
            fail(&session, down_id, why).await;
            return;
        }
    };
    loop {
        let step = tokio::select! {
            step = tokio::time::timeout(session.core.request_timeout, call.next()) => match step {
                Ok(step) => step,
                Err(_) => {
                    let why = format!(
                        "the upstream server sent nothing for this request within {:?}",
                        session.core.request_timeout
                    );
                    call.cancel("timed out in the bridge").await;
                    fail(&session, down_id, Error::Upstream(why)).await;
                    return;
                }
            },
            reason = &mut cancel => {
                let reason = reason.unwrap_or_else(|_| "cancelled".to_owned());
                call.cancel(&reason).await;
                cancel_forwarded(&session, &down_id, "the call it was made for was cancelled").await;
                // The client gets no response (it cancelled, or its session
                // ended): its POST stops waiting for one.
                session.tx.forget(&down_id);
                return;
            }
        };
        match step {
            Step::Event(CallEvent::Notification(n)) => {
                if !wants_log(&session, &n) {
                    continue;
                }
                let n = if Notice::of(&n.method) == Notice::Cancelled {
                    match child_cancelled(&session, n) {
                        Some(n) => n,
                        None => continue,
                    }
                } else {
                    n
                };
                let _ = session
                    .tx
                    .send_related(Message::Notification(n), Some(down_id.clone()))
                    .await;
            }
            Step::Event(CallEvent::Request(req)) => {
                Box::pin(forward_server_request(&session, req, Some(down_id.clone()))).await;
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
                    // The client may cancel the call (or its session end) while
                    // it is being asked: nothing then waits for its answer.
                    let gather = Box::pin(gather_input(&session, &down_id, &resp.result, original));
                    tokio::select! {
                        retry = gather => retry,
                        reason = &mut cancel => {
                            debug!(id = %down_id, reason = ?reason.ok(), "cancelled while the client was asked for input");
                            // The round trip's waiters whose wait just ended.
                            lock(&session.input_waiters).retain(|_, w| !w.is_closed());
                            session.tx.forget(&down_id);
                            return;
                        }
                    }
                };
                match retry {
                    Ok(params) => {
                        let again = Request {
                            id: down_id.clone(),
                            method: original.method.clone(),
                            params: Some(params),
                        };
                        match Box::pin(upstream.call(again, session.owner)).await {
                            Ok(c) => {
                                call = c;
                                continue;
                            }
                            Err(why) => {
                                fail(&session, down_id, why).await;
                                return;
                            }
                        }
                    }
                    Err(why) => {
                        fail(&session, down_id, Error::Upstream(why)).await;
                        return;
                    }
                }
            }
            Step::Done(message) => {
                lock(&session.calls).remove(&down_id);
                let out = match message {
                    Message::Response(resp) => {
                        let result = match list {
                            Some(l) => session.core.filter_list(
                                session.guard_scope(),
                                l.kind,
                                resp.result,
                                l.asked(&upstream),
                            ),
                            None => resp.result,
                        };
                        // Only a 2026-07-28-only child keeps the original.
                        let result = if original.is_some() {
                            legacy_result(result)
                        } else {
                            result
                        };
                        Message::Response(Response {
                            id: down_id,
                            result,
                        })
                    }
                    Message::Error(e) => Message::Error(ErrorResponse::new(Some(down_id), e.error)),
                    other => other,
                };
                let _ = session.tx.send(out).await;
                return;
            }
            Step::Failed(why) => {
                fail(&session, down_id, why).await;
                return;
            }
        }
    }
}

/// A 2026-07-28 result made fit for this legacy session: the members no earlier
/// revision has are removed (`resultType`, and the cache hints `ttlMs` and
/// `cacheScope`, REVISIONS.md §6), as is `_meta["io.modelcontextprotocol/serverInfo"]`
/// (the session's `initialize` result named the server already); everything
/// else is kept as the child wrote it. A result naming none of them passes
/// untouched, without being parsed; one that does (every 2026-07-28 result has a
/// `resultType`) is parsed and written again, the price of translation.
pub(crate) fn legacy_result(result: Box<RawValue>) -> Box<RawValue> {
    const MODERN_ONLY: [&str; 3] = ["resultType", "ttlMs", "cacheScope"];
    let text = result.get();
    if !MODERN_ONLY.iter().any(|k| text.contains(k)) && !text.contains(SERVER_INFO) {
        return result;
    }
    // Edited as raw members: every other value stays as the child wrote it.
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

/// The most `input_required` rounds one call may take.
const MAX_INPUT_ROUNDS: u32 = 16;

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

/// Asks the legacy client each of an `input_required` result's input requests as a
/// real server→client request on the call's stream, and builds the retry's params:
/// the original params with `inputResponses` and the echoed `requestState`
/// (2026-07-28 "Multi round-trip requests"; ERA-TRANSLATION.md, "Legacy client →
/// modern server").
async fn gather_input(
    session: &Arc<Session>,
    down_id: &Id,
    result: &RawValue,
    original: &Request,
) -> Result<Box<RawValue>, String> {
    // Only for capabilities the client declared (2026-07-28 "MRTR": the
    // server puts input requests in only for what the request declared,
    // and the bridge declared the client's own on its behalf). A child that
    // asks for more fails the call before the client is asked anything.
    let declared = declared_context(session);
    let asker = super::input::Asker {
        tx: &session.tx,
        waiters: &session.input_waiters,
        next_id: &session.next_server_request,
        prefix: "sb-s",
        timeout: session.core.request_timeout,
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

/// What a 2026-07-28-only child was told about this legacy client (the
/// `_meta` of its requests): its capabilities from `initialize`, as a request
/// context to check the child's input requests against. No capabilities when
/// the session has no such `_meta`.
fn declared_context(session: &Session) -> RequestContext {
    let client_capabilities = lock(&session.state)
        .meta()
        .and_then(|m| m.get(CLIENT_CAPABILITIES))
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    RequestContext {
        version: ProtocolVersion::V2026_07_28,
        client_capabilities,
        client_info: None,
        log_level: None,
    }
}

/// Forwards one of the child's server→client requests to the client under an id
/// of ours (`sb-s<n>`), on the stream of the call it belongs to (`related`), or on
/// the session's own stream; the answer goes back under the child's id
/// ([`answer_server_request`]).
async fn forward_server_request(session: &Arc<Session>, req: Request, related: Option<Id>) {
    let Some(upstream) = session.upstream() else {
        return;
    };
    let ours = Id::from(format!(
        "sb-s{}",
        session.next_server_request.fetch_add(1, Ordering::Relaxed)
    ));
    lock(&session.server_requests).insert(
        ours.clone(),
        Forwarded {
            upstream_id: req.id.clone(),
            upstream,
            call: related.clone(),
        },
    );
    let forwarded = Request {
        id: ours,
        method: req.method,
        params: req.params,
    };
    let _ = session
        .tx
        .send_related(Message::Request(forwarded), related)
        .await;
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
