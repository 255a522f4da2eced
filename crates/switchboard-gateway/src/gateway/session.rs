//! One downstream session of the legacy era (2024-11-05 HTTP+SSE, Streamable
//! HTTP 2025-03-26 to 2025-11-25) on a gateway route.
//!
//! ```text
//! initialize               answered here: the union of the route's upstreams
//! ping, */list             answered here (lists from the merged catalog, paged)
//! tools/call, prompts/get  by served name ──> its upstream, the name its own
//! resources/*              by URI (where it was listed) ──> its upstream
//! completion/complete      by its ref (prompt name or URI) ──> its upstream
//! logging/setLevel         kept here; upstreams asked for every message
//! a call's progress, logs, server→client requests ──> this session, and back
//!                          (module `downstream::relay`, the bridge's too)
//! upstream list changes, resource updates ──> this session when its route
//!                          has that upstream (updates: when subscribed)
//! ```
//!
//! This module must not know how upstreams are reached or listed.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};
use switchboard_protocol::jsonrpc::{
    Batching, ErrorObject, ErrorResponse, Id, Message, Notification, Request, Response,
};
use switchboard_protocol::types::{
    self as t, meta, ClientCapabilities, InitializeRequestParams, LoggingLevel,
};
use switchboard_protocol::version::{Era, Supported};
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::{Inbound, Receiver};
use tokio::sync::{broadcast, oneshot};
use tracing::{debug, info, warn};

use super::{GatewayNotice, Layout, Member, RouteView, Shared};
use crate::classify::{Notice, Route};
use crate::downstream::relay::{self, Begun, Downstream, Relay};
use crate::downstream::watch::Tx;
use crate::error::Error;
use crate::upstream::TryCall;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Where a session is in its life.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "phase", rename_all = "kebab-case")]
pub(crate) enum Phase {
    /// No `initialize` yet.
    New,
    /// Initialized: the revision agreed and what the client declared.
    Serving {
        #[serde(rename = "protocolVersion")]
        version: ProtocolVersion,
        #[serde(rename = "clientCapabilities")]
        capabilities: Box<ClientCapabilities>,
    },
}

/// Everything a downstream session is, in one serializable structure (issue
/// 22, §9: what a replica needs to take the session over). Its upstream
/// sessions are the gateway's own (one per upstream, shared by every
/// session: their ids and eras are in `/readyz`), so it holds none; it names
/// the upstreams it subscribed at. Calls in flight are not part of it: they
/// end with the process that runs them.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionState {
    /// The path of its route, looked up in the layout in force at each
    /// request (a reload may change what the route serves).
    pub(crate) route: String,
    /// Its owner id on every upstream.
    pub(crate) owner: u64,
    #[serde(flatten)]
    pub(crate) phase: Phase,
    /// Its `logging/setLevel`; `None`: every message.
    pub(crate) log_level: Option<LoggingLevel>,
    /// (upstream name, URI) it subscribed to.
    pub(crate) subscriptions: std::collections::BTreeSet<(String, String)>,
}

struct Session {
    gw: Arc<Shared>,
    /// This session's owner id on every upstream (also in `state`): what
    /// the upstream sends on its own while only this session has calls
    /// there is this session's.
    /// Its calls, and its upstreams' requests of the client (module
    /// `downstream::relay`).
    relay: Relay,
    state: Mutex<SessionState>,
    /// The client's `initialize` params, for children of its own.
    init_params: Mutex<Option<Box<serde_json::value::RawValue>>>,
    /// Its own children, by upstream name (upstreams with a child per
    /// session).
    own: Mutex<HashMap<String, crate::upstream::Upstream>>,
    /// With a drift guard, the judgement of each of its own children's
    /// lists, by upstream name (the child's own, not the shared child's).
    own_judged: Mutex<HashMap<String, Arc<crate::catalog::tools::OwnJudgement>>>,
}

/// Serves one session until it ends.
pub(crate) async fn serve(gw: Arc<Shared>, path: String, tx: Tx, mut rx: Receiver) {
    let mut notices = gw.notices.subscribe();
    let owner = gw.next_owner();
    let (relay, mut gone) = Relay::new(tx, owner, "gateway", gw.request_timeout);
    let session = Arc::new(Session {
        gw,
        relay,
        state: Mutex::new(SessionState {
            route: path,
            owner,
            phase: Phase::New,
            log_level: None,
            subscriptions: Default::default(),
        }),
        init_params: Mutex::new(None),
        own: Mutex::new(HashMap::new()),
        own_judged: Mutex::new(HashMap::new()),
    });
    loop {
        tokio::select! {
            Some(why) = gone.recv() => {
                // As the bridge does (`downstream::session`): the server
                // state the child held is gone, so the session ends (later
                // requests get 404; the client initializes a new one). The
                // calls in flight get their errors first.
                warn!(why, "the session's own child is gone: ending the session");
                session.relay.pumps.drained(crate::CALLS_FAIL_WITHIN).await;
                break;
            }
            inbound = rx.recv() => match inbound {
                Some(Inbound::Message(m)) => on_message(&session, m).await,
                Some(Inbound::Batch(items)) => {
                    for m in items.into_iter().flatten() {
                        on_message(&session, m).await;
                    }
                }
                Some(Inbound::Closed { .. }) | None => break,
                Some(_) => {}
            },
            notice = notices.recv() => match notice {
                Ok(n) => on_notice(&session, n).await,
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    for kind in [super::ListKind::Tools, super::ListKind::Prompts, super::ListKind::Resources] {
                        announce(&session, kind).await;
                    }
                }
                Err(broadcast::error::RecvError::Closed) => break,
            },
        }
    }
    end(&session).await;
}

impl Session {
    /// The layout in force and this session's route in it; `None` once a
    /// reload removed the route.
    fn route(&self) -> Option<(Arc<Layout>, Arc<RouteView>)> {
        let layout = self.gw.layout();
        let route = layout.route(&lock(&self.state).route)?.clone();
        Some((layout, route))
    }
}

impl Session {
    /// Where this session's requests to `m` go: its shared upstream, or
    /// (a child per session) this session's own child, started now when it
    /// has none. One that died after it was ready is not replaced here: it
    /// is restarted by its supervision
    /// ([`crate::ChildMode::PerSessionRespawn`]) or its death ends the
    /// session ([`crate::ChildMode::PerSession`]). Replaced, as nothing of
    /// the session's is lost with it: one that never got ready (it could
    /// not start: the session's other upstreams go on), and in respawn mode
    /// one stopped by a reload that restarted its upstream.
    fn upstream_for(self: &Arc<Self>, m: &Member) -> crate::upstream::Upstream {
        if !m.per_session() {
            return m.upstream().clone();
        }
        let mut own = lock(&self.own);
        if let Some(up) = own.get(&m.name) {
            let gone = matches!(
                up.status(),
                crate::upstream::Status::Down(_) | crate::upstream::Status::Stopped
            );
            let respawned = m.core.mode == crate::ChildMode::PerSessionRespawn;
            if !gone || (up.was_ready() && !(respawned && up.is_stopped())) {
                return up.clone();
            }
            debug!(upstream = %m.name, "this session's child never started or was stopped by a reload: a new one");
        }
        let params = lock(&self.init_params)
            .clone()
            .unwrap_or_else(crate::bridge_init_params);
        let (orphan_tx, orphans) = relay::orphans();
        let up = m.core.start_session_child(params, Some(orphan_tx));
        relay::adopt(Arc::downgrade(self), up.clone(), orphans);
        own.insert(m.name.clone(), up.clone());
        if m.core.mode == crate::ChildMode::PerSession {
            // Its end, once it held the session's state, ends the session: a
            // death, or a stop by a reload that restarted its upstream.
            self.relay.watch_child(&up);
        }
        if let Some(guard) = &m.core.guard {
            // Judged by its own lists (listed whole at its start), as a
            // bridge's session's own child is.
            let judged = Arc::new(crate::catalog::tools::OwnJudgement::default());
            tokio::spawn(crate::catalog::tools::follow_own(
                Arc::downgrade(&judged),
                guard.clone(),
                m.core.request_timeout,
                up.clone(),
                up.watch_status(),
                up.subscribe(),
            ));
            lock(&self.own_judged).insert(m.name.clone(), judged);
        }
        // Its resource updates are this session's alone (no one else's
        // child): relayed for the URIs subscribed.
        let (weak, name, mut notes) = (Arc::downgrade(self), m.name.clone(), up.subscribe());
        tokio::spawn(async move {
            while let Ok(n) = notes.recv().await {
                let Some(session) = weak.upgrade() else {
                    return;
                };
                if Notice::of(&n.method) != Notice::ResourceUpdated {
                    continue;
                }
                let uri = super::listen::updated_uri(&n).unwrap_or_default();
                let mine = lock(&session.state)
                    .subscriptions
                    .contains(&(name.clone(), uri));
                if mine {
                    let _ = session.relay.tx.send(Message::Notification(n)).await;
                }
            }
        });
        up
    }
}

/// Why a request on a route a reload removed is refused.
fn gone_error() -> Error {
    Error::InvalidRequest("this route was removed by a configuration reload".into())
}

/// The answer to a request on a route a reload removed.
fn gone(id: Id) -> Message {
    gone_error().answer(id)
}

fn initialized(session: &Session) -> bool {
    matches!(lock(&session.state).phase, Phase::Serving { .. })
}

async fn announce(session: &Session, kind: super::ListKind) {
    if !initialized(session) {
        return;
    }
    if let Ok(n) = Notification::new(kind.notification(), &json!({})) {
        let _ = session.relay.tx.send(Message::Notification(n)).await;
    }
}

async fn on_notice(session: &Session, notice: GatewayNotice) {
    match notice {
        GatewayNotice::ListChanged { kind, member } => {
            if session.route().is_some_and(|(_, r)| r.serves(&member)) {
                announce(session, kind).await;
            }
        }
        GatewayNotice::Reloaded => {
            for kind in super::ListKind::ALL {
                announce(session, kind).await;
            }
        }
        GatewayNotice::ResourceUpdated {
            member,
            notification,
        } => {
            let uri = notification
                .params
                .as_ref()
                .and_then(|p| serde_json::from_str::<Map<String, Value>>(p.get()).ok())
                .and_then(|p| p.get("uri").and_then(Value::as_str).map(str::to_owned));
            let mine =
                uri.is_some_and(|u| lock(&session.state).subscriptions.contains(&(member, u)));
            if mine {
                let _ = session
                    .relay
                    .tx
                    .send(Message::Notification(notification))
                    .await;
            }
        }
    }
}

async fn on_message(session: &Arc<Session>, message: Message) {
    match message {
        Message::Request(r) => on_request(session, r).await,
        Message::Notification(n) => {
            if Notice::of(&n.method) == Notice::Cancelled {
                session.relay.cancelled(&n);
            }
            // Others (initialized, roots/list_changed) concern no one upstream:
            // the upstreams are shared by every session.
        }
        answer @ (Message::Response(_) | Message::Error(_)) => {
            session.relay.answered(answer).await;
        }
    }
}

async fn reply(session: &Session, answer: Message) {
    let _ = session.relay.tx.send(answer).await;
}

fn ok(id: Id, result: Value) -> Message {
    match Response::new(id.clone(), &result) {
        Ok(r) => Message::Response(r),
        Err(e) => Error::Internal(e.to_string()).answer(id),
    }
}

async fn on_request(session: &Arc<Session>, mut r: Request) {
    let route = Route::of(&r.method);
    session.relay.tx.arrived(&mut r, route);
    match route {
        Route::Initialize => {
            let answer = initialize(session, &r).await;
            return reply(session, answer).await;
        }
        Route::Ping => return reply(session, ok(r.id, json!({}))).await,
        _ => {}
    }
    if !initialized(session) {
        let why = Error::InvalidRequest("the session is not initialized".into());
        return reply(session, why.answer(r.id)).await;
    }
    // Lists are answered from the catalog, in their own task: a list waits
    // for upstreams not yet listed.
    if let Some(key) = route.list_key() {
        let session = session.clone();
        tokio::spawn(async move {
            let answer = match session.route() {
                Some((layout, route)) => list(&session.gw, &layout, &route, key, r).await,
                None => gone(r.id),
            };
            reply(&session, answer).await;
        });
        return;
    }
    if route == Route::SetLevel {
        let level = r
            .params_as::<Map<String, Value>>()
            .ok()
            .and_then(|p| p.get("level").and_then(Value::as_str).map(str::to_owned))
            .and_then(|l| l.parse::<LoggingLevel>().ok());
        let Some(level) = level else {
            let why = Error::InvalidParams("logging/setLevel needs a valid params.level".into());
            return reply(session, why.answer(r.id)).await;
        };
        lock(&session.state).log_level = Some(level);
        let session = session.clone();
        tokio::spawn(async move {
            let Some((layout, route)) = session.route() else {
                return reply(&session, gone(r.id)).await;
            };
            for (i, m) in layout.members.iter().enumerate() {
                if route.members[i] {
                    m.core
                        .shared_child_logs_everything(crate::upstream::BRIDGE_OWNER)
                        .await;
                }
            }
            reply(&session, ok(r.id, json!({}))).await;
        });
        return;
    }
    // Routed and forwarded in a task of its own: finding the upstream may wait
    // for it to be listed, and the drift guard for a re-list, and the
    // session's other messages (answers to an upstream's requests,
    // cancellations) must not wait behind that. Its cancel switch is in place
    // first, so a cancellation that comes at once is not missed.
    let cancel = session.relay.begin(r.id.clone());
    relay::spawn_call(
        session.relay.tx.trace_id(&r.id),
        route_and_forward(session.clone(), r, route, cancel),
    );
}

/// Finds the upstream `r` is for, judges it, and runs the call there.
async fn route_and_forward(
    session: Arc<Session>,
    r: Request,
    route: Route,
    cancel: oneshot::Receiver<String>,
) {
    // Counted from here: a drain waits for its answer, refusals included.
    let _answering = crate::Answering::counted(
        &session.relay.tx,
        &session.gw.draining,
        &session.gw.answers,
        None,
    );
    let refuse = |why: Error| {
        session.relay.forget(&r.id);
        why.answer(r.id.clone())
    };
    let Some((layout, route_view)) = session.route() else {
        return reply(&session, refuse(gone_error())).await;
    };
    let target = match super::exchange::resolve_listed(&layout, &route_view, route, &r).await {
        Ok(t) => t,
        Err(why) => return reply(&session, refuse(why)).await,
    };
    if let Route::Subscribe(subscribe) = route {
        session.relay.forget(&r.id);
        return subscription(session, target.member, target.request, subscribe).await;
    }
    // The upstream's drift guard (by its own name of the entry): what is not
    // as approved is refused before the upstream sees it, judged on a list
    // that saw every change the upstream announced (`resolve_listed`; for a
    // child of this session's own, on that child's lists).
    let judged = guard_own(&session, &target.member, route)
        .await
        .and_then(|own| {
            let scope = match &own {
                Some(own) => crate::catalog::guard::Scope::Own(&own.verdicts),
                None => crate::catalog::guard::Scope::Shared,
            };
            target
                .member
                .core
                .check_request(scope, route, target.request.params.as_deref())
        });
    match judged {
        Err(why) => return reply(&session, refuse(why)).await,
        Ok(crate::Passed::Drifted) => session.relay.tx.drifted(&r.id),
        Ok(crate::Passed::Clean) => {}
    }
    ready_then_relay(session, target.member, target.request, cancel).await;
}

/// For an upstream with a guard and a child per session: this session's
/// own child's judgement (the child started now when it has none), once
/// every change of the list `route` uses that the child announced (and its
/// first list) is judged. `None` for any other upstream. Errors: not judged
/// in time, in block mode.
async fn guard_own(
    session: &Arc<Session>,
    m: &Member,
    route: Route,
) -> Result<Option<Arc<crate::catalog::tools::OwnJudgement>>, Error> {
    if !m.per_session() || m.core.guard.is_none() {
        return Ok(None);
    }
    let up = session.upstream_for(m);
    let Some(own) = lock(&session.own_judged).get(&m.name).cloned() else {
        return Ok(None);
    };
    if let Some(list) = m.core.unjudged(own.judging(&up), route) {
        m.core.wait_judged(own.judging(&up), list).await?;
    }
    Ok(Some(own))
}

/// Which members of `route` have their list `key` (tools, prompts) left
/// out of a list now: a change of it not judged within the member's list
/// timeout, in block mode ([`Member::unjudged_change`], waited for together).
async fn unjudged_members(layout: &Layout, route: &RouteView, key: &str) -> Vec<bool> {
    let mut withheld = vec![false; layout.members.len()];
    let kind = match key {
        "tools" => crate::classify::ListKind::Tools,
        "prompts" => crate::classify::ListKind::Prompts,
        _ => return withheld,
    };
    let mut waits = tokio::task::JoinSet::new();
    for (i, m) in layout.members.iter().enumerate() {
        // A lapsed one is left out anyway: nothing to wait for.
        if !route.members[i] || m.lapsed() {
            continue;
        }
        if let Some(announced) = m.unjudged_change(kind) {
            let m = m.clone();
            waits.spawn(async move { (i, m.judged_within_timeout(kind, announced).await) });
        }
    }
    while let Some(joined) = waits.join_next().await {
        if let Ok((i, false)) = joined {
            debug!(upstream = %layout.members[i].name, key, "a change not judged in time: its entries left out of this list");
            withheld[i] = true;
        }
    }
    withheld
}

/// A list from the merged catalog, paged under the gateway's cursor.
pub(crate) async fn list(
    gw: &Arc<Shared>,
    layout: &Layout,
    route: &RouteView,
    key: &str,
    r: Request,
) -> Message {
    let page_size = gw.page_size;
    let cursor = r
        .params_as::<Map<String, Value>>()
        .ok()
        .and_then(|p| p.get("cursor").and_then(Value::as_str).map(str::to_owned));
    layout.listed(route).await;
    // A client's first page: what a guarded upstream lists is listed again
    // when stale (in the background; this list is served as judged now).
    let kind = match key {
        "tools" => Some(crate::classify::ListKind::Tools),
        "prompts" => Some(crate::classify::ListKind::Prompts),
        _ => None,
    };
    if let (Some(kind), None) = (kind, &cursor) {
        for (i, m) in layout.members.iter().enumerate() {
            if route.members[i] {
                m.refresh_stale(gw, kind);
            }
        }
    }
    let mut withheld = unjudged_members(layout, route, key).await;
    // A known-down upstream's entries are left out until it is back (its
    // sessions are told both ways: `follow`).
    for (i, m) in layout.members.iter().enumerate() {
        withheld[i] |= m.lapsed();
    }
    let merged = layout.merged();
    let entries: Vec<&Value> = match key {
        "tools" => merged
            .tools
            .iter()
            .filter(|e| route.members[e.member] && !withheld[e.member])
            .filter(|e| {
                route
                    .allow
                    .permits(e.value["name"].as_str().unwrap_or_default())
            })
            .map(|e| &e.value)
            .collect(),
        "prompts" => merged
            .prompts
            .iter()
            .filter(|e| route.members[e.member] && !withheld[e.member])
            .map(|e| &e.value)
            .collect(),
        "resources" => merged
            .resources
            .iter()
            .filter(|e| route.members[e.member] && !withheld[e.member])
            .map(|e| &e.value)
            .collect(),
        _ => merged
            .templates
            .iter()
            .filter(|e| route.members[e.member] && !withheld[e.member])
            .map(|e| &e.value)
            .collect(),
    };
    match super::catalog::page(&entries, cursor.as_deref(), page_size) {
        Ok((page, next)) => ok(
            r.id,
            super::catalog::list_result(key, page.iter().copied(), next),
        ),
        Err(why) => Error::InvalidParams(why).answer(r.id),
    }
}

async fn initialize(session: &Arc<Session>, r: &Request) -> Message {
    if session.gw.draining.load(Ordering::Relaxed) {
        return Error::Upstream("the gateway is shutting down: no new sessions".into())
            .answer(r.id.clone());
    }
    if initialized(session) {
        return Error::InvalidRequest("the session is already initialized".into())
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
            .filter(|v| v.era() == Era::Legacy),
    )
    .expect("there are legacy versions");
    let Some(version) = legacy.negotiate_initialize(&params.protocol_version) else {
        return Error::InvalidParams("no protocol version in common".into()).answer(r.id.clone());
    };
    let Some((layout, route)) = session.route() else {
        return gone(r.id.clone());
    };
    let capabilities = layout.capabilities(&route).await;
    let mut result = json!({
        "protocolVersion": version.as_str(),
        "capabilities": capabilities,
        "serverInfo": { "name": "switchboard-gateway", "version": env!("CARGO_PKG_VERSION") },
    });
    if let Some(text) = layout.instructions(&route) {
        result["instructions"] = Value::String(text);
    }
    if version == ProtocolVersion::V2025_03_26 {
        session.relay.tx.set_batching(Batching::Allowed);
    }
    session.relay.tx.set_version(version);
    *lock(&session.init_params) = r.params.clone();
    lock(&session.state).phase = Phase::Serving {
        version,
        capabilities: Box::new(params.capabilities.clone()),
    };
    session.relay.declare(params.capabilities);
    info!(client = %params.client_info.name, version = version.as_str(), "downstream session initialized");
    ok(r.id.clone(), result)
}

/// One subscriber's `resources/subscribe` (`subscribe`) or unsubscribe of
/// `uri` at member `member` (`mine`: whether it holds one already), counted
/// across every subscriber: on a legacy upstream by its core
/// ([`crate::Core::shared_subscription`]: asked for the first and the last),
/// on a 2026-07-28 one by the gateway's listen stream there (module
/// `listen`). Errors: the upstream's refusal.
pub(crate) async fn subscribe_at(
    gw: &Shared,
    m: &Member,
    uri: &str,
    subscribe: bool,
    mine: bool,
) -> Result<(), ErrorObject> {
    let modern =
        matches!(m.upstream().status(), crate::upstream::Status::Ready(info) if info.modern);
    if modern {
        // Answered once the upstream's listen asks for it (bounded): an
        // update right after the answer is not missed.
        let generation = m.subscriptions.update(uri, subscribe, mine);
        if subscribe
            && !m
                .subscriptions
                .acknowledged(
                    generation,
                    gw.request_timeout.min(std::time::Duration::from_secs(5)),
                )
                .await
        {
            debug!(upstream = %m.name, uri, "the upstream's listen did not acknowledge the subscription in time");
        }
        return Ok(());
    }
    let method = if subscribe {
        t::RESOURCES_SUBSCRIBE
    } else {
        t::RESOURCES_UNSUBSCRIBE
    };
    let request = Request::new(Id::from(0u64), method, &json!({ "uri": uri }))
        .map_err(|e| Error::Internal(e.to_string()).to_object())?;
    let ask = || {
        let owner = crate::upstream::BRIDGE_OWNER;
        crate::call_once(m.upstream(), request, owner, gw.request_timeout)
    };
    match m.core.shared_subscription(uri, subscribe, mine, ask).await {
        None | Some(Message::Response(_)) => Ok(()),
        Some(Message::Error(e)) => Err(e.error),
        Some(_) => Err(Error::Upstream("an unexpected answer".into()).to_object()),
    }
}

/// A session's `resources/subscribe` or `resources/unsubscribe`.
async fn subscription(session: Arc<Session>, member: Arc<Member>, r: Request, subscribe: bool) {
    let uri = r
        .params_as::<Map<String, Value>>()
        .ok()
        .and_then(|p| p.get("uri").and_then(Value::as_str).map(str::to_owned));
    let Some(uri) = uri else {
        let why = Error::InvalidParams("params.uri is required".into());
        return reply(&session, why.answer(r.id)).await;
    };
    let key = (member.name.clone(), uri.clone());
    let mine = lock(&session.state).subscriptions.contains(&key);
    let outcome = if member.per_session() {
        // Its own child: nobody else to count with.
        let up = session.upstream_for(&member);
        match crate::call_once(
            &up,
            r.clone(),
            session.relay.owner,
            session.gw.request_timeout,
        )
        .await
        {
            Message::Error(e) => Err(e.error),
            _ => Ok(()),
        }
    } else {
        subscribe_at(&session.gw, &member, &uri, subscribe, mine).await
    };
    let answer = match outcome {
        Ok(()) => {
            if subscribe {
                lock(&session.state).subscriptions.insert(key);
            } else {
                lock(&session.state).subscriptions.remove(&key);
            }
            ok(r.id, json!({}))
        }
        Err(e) => Message::Error(ErrorResponse::new(Some(r.id), e)),
    };
    reply(&session, answer).await;
}

/// Runs call `r` (already in its upstream's names) on upstream `m`: its
/// upstream ready (a down one fails at once, naming it), the `_meta` of a
/// 2026-07-28 upstream added, then relayed until its answer or its
/// cancellation (module `downstream::relay`).
async fn ready_then_relay(
    session: Arc<Session>,
    m: Arc<Member>,
    mut r: Request,
    cancel: oneshot::Receiver<String>,
) {
    let answering = crate::Answering::counted(
        &session.relay.tx,
        &session.gw.draining,
        &session.gw.answers,
        Some(&session.relay.pumps),
    );
    let up = session.upstream_for(&m);
    let down_id = r.id.clone();
    // Down (restarting after a backoff): fail fast, naming it; starting:
    // wait for it, up to its list timeout.
    let wait = match up.status() {
        crate::upstream::Status::Down(_) => std::time::Duration::ZERO,
        _ => m.list_timeout,
    };
    let info = match up.ready(wait).await {
        Ok(info) => info,
        Err(why) => {
            let why = relay::named(Some(&m.name), why);
            return session.relay.fail(down_id, why).await;
        }
    };
    // A 2026-07-28 upstream: the revision, this client's capabilities and
    // log level in `_meta`; the request kept for input_required retries.
    let mut original = None;
    if info.modern {
        let mut extra = Map::new();
        extra.insert(
            meta::PROTOCOL_VERSION.into(),
            ProtocolVersion::V2026_07_28.as_str().into(),
        );
        let caps = match &lock(&session.state).phase {
            Phase::Serving { capabilities, .. } => {
                serde_json::to_value(capabilities).unwrap_or_else(|_| json!({}))
            }
            Phase::New => json!({}),
        };
        extra.insert(meta::CLIENT_CAPABILITIES.into(), caps);
        // A legacy server logs what it likes until `logging/setLevel`; a
        // 2026-07-28 one only at the level asked: everything, until the
        // client sets one.
        let level = lock(&session.state)
            .log_level
            .unwrap_or(LoggingLevel::Debug);
        if let Ok(v) = serde_json::to_value(level) {
            extra.insert(meta::LOG_LEVEL.into(), v);
        }
        match relay::with_meta(r.params.as_deref(), &extra) {
            Ok(p) => r.params = Some(p),
            Err(why) => return session.relay.fail(down_id, Error::InvalidParams(why)).await,
        }
        original = Some(r.clone());
    }
    let begun = Begun {
        down_id,
        start: TryCall::Later(r),
        original,
        list: None,
        named: Some(m.named.clone()),
        answering,
    };
    relay::pump(session, up, begun, cancel).await;
}

impl Downstream for Session {
    fn relay(&self) -> &Relay {
        &self.relay
    }

    /// Log messages at the session's level or above.
    fn wants(&self, n: &Notification) -> bool {
        if Notice::of(&n.method) != Notice::Log {
            return true;
        }
        match lock(&self.state).log_level {
            Some(min) => crate::log_at_least(n, min),
            None => true,
        }
    }
}

/// The session is over: its calls cancelled, its subscriptions given back.
async fn end(session: &Arc<Session>) {
    session.relay.end();
    let subscribed = std::mem::take(&mut lock(&session.state).subscriptions);
    let layout = session.gw.layout();
    for (name, uri) in subscribed {
        // An upstream a reload removed has ended, its subscriptions with it.
        // (A child of this session's own ends with it, subscriptions and all.)
        if let Some(member) = layout
            .members
            .iter()
            .find(|m| m.name == name && !m.per_session())
        {
            let _ = subscribe_at(&session.gw, member, &uri, false, true).await;
        }
    }
    let own: Vec<crate::upstream::Upstream> =
        lock(&session.own).drain().map(|(_, up)| up).collect();
    for up in own {
        up.shutdown(std::time::Duration::ZERO).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session's state goes out and comes back whole, in a shape a
    /// replica (or a person) reads: phase, revision, capabilities, level,
    /// subscriptions by upstream name.
    #[test]
    fn a_session_state_round_trips_through_json() {
        let capabilities: ClientCapabilities =
            serde_json::from_value(json!({ "elicitation": { "form": {} }, "roots": {} })).unwrap();
        let state = SessionState {
            route: "/review/mcp".into(),
            owner: 1 << 48,
            phase: Phase::Serving {
                version: ProtocolVersion::V2025_06_18,
                capabilities: Box::new(capabilities),
            },
            log_level: Some(LoggingLevel::Warning),
            subscriptions: [("calc".to_owned(), "example://counter".to_owned())].into(),
        };
        let text = serde_json::to_value(&state).unwrap();
        assert_eq!(text["route"], "/review/mcp");
        assert_eq!(text["phase"], "serving");
        assert_eq!(text["protocolVersion"], "2025-06-18");
        assert_eq!(text["clientCapabilities"]["roots"], json!({}));
        assert_eq!(text["logLevel"], "warning");
        assert_eq!(
            text["subscriptions"],
            json!([["calc", "example://counter"]])
        );
        let back: SessionState = serde_json::from_value(text).unwrap();
        assert_eq!(back, state);
        let new = SessionState {
            phase: Phase::New,
            log_level: None,
            subscriptions: Default::default(),
            ..state
        };
        let back: SessionState =
            serde_json::from_str(&serde_json::to_string(&new).unwrap()).unwrap();
        assert_eq!(back, new);
    }
}
