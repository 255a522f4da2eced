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
//!          ──> Upstream::call ──> pump task (module `relay`, the gateway's too)
//!          (started in the task serving the POST when nothing is queued before
//!          it and nothing has to wait: see `Direct`);
//!          response (tools/list filtered) ──> client, with the client's own id
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

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use switchboard_protocol::jsonrpc::{Batching, Id, Message, Notification, Request, Response};
use switchboard_protocol::types::meta::{
    CLIENT_CAPABILITIES, CLIENT_INFO, LOG_LEVEL, PROTOCOL_VERSION,
};
use switchboard_protocol::types::{InitializeRequestParams, LoggingLevel};
use switchboard_protocol::version::Supported;
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::{DirectSink, Inbound, Receiver};
use tokio::sync::{broadcast, oneshot};
use tracing::{debug, info, warn};

use super::relay::{self, with_meta, Begun, Downstream, Relay};
use crate::catalog::tools::{follow_own, OwnJudgement};
use crate::classify::{ListKind, Notice, Route};
use crate::downstream::watch::Tx;
use crate::error::Error;
use crate::upstream::{empty_object, TryCall, Upstream};
use crate::{ChildMode, Core, Judging};

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What a session's tasks share.
struct Session {
    core: Arc<Core>,
    /// Its calls, and its child's requests of the client (module `relay`).
    relay: Relay,
    /// Where the session is in its life, and its upstream.
    state: Mutex<State>,
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

/// Serves one legacy session until it ends.
pub(crate) async fn serve(core: Arc<Core>, tx: Tx, mut rx: Receiver) {
    let owner = core.next_owner();
    let core_guarded = core.guard.is_some();
    let per_session = core.mode.per_session();
    let (relay, mut child_gone) = Relay::new(tx, owner, "bridge", core.request_timeout);
    let session = Arc::new(Session {
        core,
        relay,
        state: Mutex::new(State::New),
        subscribed: Mutex::new(std::collections::HashSet::new()),
        log_level: Mutex::new(None),
        own: (core_guarded && per_session).then(|| Arc::new(OwnJudgement::default())),
    });
    let mut feeds = Feeds::default();
    rx.set_direct(Arc::new(Direct(session.clone())));
    loop {
        let event = tokio::select! {
            event = rx.recv() => event,
            Some(why) = child_gone.recv() => {
                // The spec's way for a server whose state is gone: end the
                // session (later requests get 404; the client initializes a new
                // one). The calls in flight get their errors first.
                warn!(why, "the session's own child is gone: ending the session");
                session.relay.pumps.drained(crate::CALLS_FAIL_WITHIN).await;
                break;
            }
            n = recv_broadcast(&mut feeds.broadcasts) => {
                let n = n.filter(|n| wants(&session, n)).and_then(|n| {
                    // A shared child's cancellation of a request whose call is
                    // over: only for the session that holds the request.
                    match Notice::of(&n.method) {
                        Notice::Cancelled => session.relay.upstream_cancelled(&session.upstream()?, n),
                        _ => Some(n),
                    }
                });
                if let Some(n) = n {
                    let _ = session.relay.tx.send(Message::Notification(n)).await;
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
                            let _ = session.relay.tx.send(Message::Error(e.to_response())).await;
                        }
                        Err(_) => {}
                    }
                }
            }
        }
    }
    // No more calls start; the sink's hold on the session goes.
    rx.clear_direct();
    session.relay.end();
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
                let (core, owner) = (&session.core, session.relay.owner);
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
    let ask = || crate::call_once(&upstream, r, session.relay.owner, core.request_timeout);
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
    let _ = session.relay.tx.send(answer).await;
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
        answer @ (Message::Response(_) | Message::Error(_)) => session.relay.answered(answer).await,
    }
}

async fn on_notification(session: &Arc<Session>, n: Notification) {
    match Notice::of(&n.method) {
        Notice::Initialized => {}
        Notice::Cancelled => session.relay.cancelled(&n),
        _ => {
            if let Some(up) = session.upstream() {
                up.send(Message::Notification(n)).await;
            }
        }
    }
}

async fn on_request(session: &Arc<Session>, mut r: Request, feeds: &mut Feeds) {
    let route = Route::of(&r.method);
    session.relay.tx.arrived(&mut r, route);
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
                        session.relay.watch_child(up);
                    }
                }
            }
            let _ = session.relay.tx.send(answer).await;
            return;
        }
        Route::Ping => {
            let pong = Message::Response(Response {
                id: r.id,
                result: empty_object(),
            });
            let _ = session.relay.tx.send(pong).await;
            return;
        }
        Route::Use(_) => {
            // With a drift guard, a change of its list the session's child
            // (shared or its own) announced and no re-list judged yet:
            // checked by its pump once judged (module `catalog::changes`),
            // without holding up the session's task meanwhile.
            held = session.unjudged(route);
            let checked = match held {
                Some(_) => Ok(crate::Passed::Clean),
                None => {
                    session
                        .core
                        .check_request(session.guard_scope(), route, r.params.as_deref())
                }
            };
            match checked {
                Err(why) => {
                    let _ = session.relay.tx.send(why.answer(r.id)).await;
                    return;
                }
                Ok(crate::Passed::Drifted) => session.relay.tx.drifted(&r.id),
                Ok(crate::Passed::Clean) => {}
            }
        }
        _ => {}
    }
    let Some(upstream) = session.upstream() else {
        let _ = session
            .relay
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
                let _ = session.relay.tx.send(done).await;
                return;
            }
            Route::Subscribe(_) => {
                let why = "resource subscriptions through the bridge to a 2026-07-28-only server are not supported";
                let _ = session
                    .relay
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
                    .relay
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
                    .relay
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
                    .shared_child_logs_everything(session.relay.owner)
                    .await;
                let done = Message::Response(Response {
                    id: r.id,
                    result: empty_object(),
                });
                let _ = session.relay.tx.send(done).await;
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
    let cancel = session.relay.begin(r.id.clone());
    let trace_id = session.relay.tx.trace_id(&r.id);
    let call = begun(session, &upstream, route, r, held);
    relay::spawn_call(
        trace_id,
        judge_then_relay(session.clone(), upstream, call, held, cancel),
    );
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
        let Message::Request(mut r) = message else {
            return Err(message);
        };
        let route = Route::of(&r.method);
        session.relay.tx.arrived(&mut r, route);
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
            || match session
                .core
                .check_request(session.guard_scope(), route, r.params.as_deref())
            {
                Ok(crate::Passed::Drifted) => {
                    session.relay.tx.drifted(&r.id);
                    true
                }
                Ok(crate::Passed::Clean) => true,
                Err(_) => false,
            };
        match upstream {
            Some(up) if judged => {
                forward(session, up, route, r, None);
                Ok(())
            }
            _ => Err(Message::Request(r)),
        }
    }
}

/// A call as the session's task hands it to its pump task, started on the
/// spot when nothing has to wait, so that the request is queued to the child
/// before the pump task is first polled (one task hand-off less between the
/// client's POST and the child's stdin). `held`: not started until the
/// changes of this list the session's child announced are judged
/// ([`judged`]).
fn begun(
    session: &Session,
    upstream: &Upstream,
    route: Route,
    r: Request,
    held: Option<ListKind>,
) -> Begun {
    let down_id = r.id.clone();
    let list = crate::ListRequest::of(route, r.params.as_deref(), upstream);
    // Only a 2026-07-28-only child's calls may need an input_required retry.
    let original = lock(&session.state).meta().is_some().then(|| r.clone());
    let start = match held {
        Some(_) => TryCall::Later(r),
        None => upstream.try_call(r, session.relay.owner),
    };
    Begun {
        down_id,
        start,
        original,
        list,
        named: None,
        answering: session
            .core
            .answering(&session.relay.tx, Some(&session.relay.pumps)),
    }
}

/// Runs one call: held first when `held` says so ([`judged`]), then relayed.
async fn judge_then_relay(
    session: Arc<Session>,
    upstream: Upstream,
    mut begun: Begun,
    held: Option<ListKind>,
    mut cancel: oneshot::Receiver<String>,
) {
    if let Some(held) = held {
        // Rare (a guard, a change not judged yet): boxed, to keep the
        // pump's future (copied on spawn) small.
        let start = std::mem::replace(
            &mut begun.start,
            TryCall::Failed(Error::Internal(String::new())),
        );
        let judged = Box::pin(judged(
            &session,
            &upstream,
            &begun.down_id,
            held,
            start,
            &mut cancel,
        ));
        match judged.await {
            Some(start) => begun.start = start,
            None => return,
        }
    }
    relay::pump(session, upstream, begun, cancel).await;
}

impl Downstream for Session {
    fn relay(&self) -> &Relay {
        &self.relay
    }

    fn wants(&self, n: &Notification) -> bool {
        wants_log(self, n)
    }

    /// A list filtered by the allowlist and the drift guard.
    fn finish(
        &self,
        upstream: &Upstream,
        list: Option<crate::ListRequest>,
        result: Box<RawValue>,
    ) -> Box<RawValue> {
        match list {
            Some(l) => self
                .core
                .filter_list(self.guard_scope(), l.kind, result, l.asked(upstream)),
            None => result,
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
    // Known before a child of its own can ask anything of the client (a
    // `roots/list` right after its `initialized`): what those requests are
    // checked against (module `relay`).
    session.relay.declare(params.capabilities.clone());
    let upstream = match core.mode.per_session() {
        true => {
            let Some(raw) = r.params.clone() else {
                return Error::InvalidParams("initialize needs params".into()).answer(r.id.clone());
            };
            let (orphan_tx, orphans) = relay::orphans();
            let up = core.start_session_child(raw, Some(orphan_tx));
            relay::adopt(Arc::downgrade(session), up.clone(), orphans);
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
        session.relay.tx.set_batching(Batching::Allowed);
    }
    if let Some(v) = negotiated {
        session.relay.tx.set_version(v);
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
            session.relay.tx.forget(down_id);
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
        session.relay.fail(down_id.clone(), why).await;
        return None;
    }
    let route = Route::of(&r.method);
    match session
        .core
        .check_request(session.guard_scope(), route, r.params.as_deref())
    {
        Ok(passed) => {
            if passed == crate::Passed::Drifted {
                session.relay.tx.drifted(down_id);
            }
            Some(TryCall::Later(r))
        }
        Err(why) => {
            session.relay.fail(down_id.clone(), why).await;
            None
        }
    }
}
