//! The gateway: many upstream MCP servers behind one listener, served as
//! routes (virtual servers at their own paths) to clients of every era.
//!
//! ```text
//!   HTTP clients ──> HttpServer (one listener, a path per route)
//!     session (2024-11-05 .. 2025-11-25) ──> gateway::session ─┐ by served name,
//!     exchange (2026-07-28)              ──> gateway::exchange ┤ URI or ref
//!   each upstream: a member (a bridge Core: its Upstream, ids and tokens  <─┘
//!                  remapped, restarted with backoff) + its listed catalog
//! ```
//!
//! Lists are answered from the merged catalog (module `catalog`), which a
//! task per upstream keeps (every page, at each (re)connection and each
//! `list_changed`); everything else goes to the one upstream a served name,
//! URI or completion ref names. An upstream that is down fails only its own
//! entries. This module must not know configuration files (the CLI's) nor
//! bytes on the wire (the transport's).

pub(crate) mod catalog;
mod exchange;
mod listen;
mod session;

use std::collections::BTreeSet;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use serde_json::{json, Map, Value};
use switchboard_protocol::jsonrpc::{Id, Message, Notification, Request};
use switchboard_protocol::types::{self as t, meta, ServerCapabilities};
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::http::server::{
    HealthProbe, HealthReport, HttpServer, HttpServerConfig, SessionKind,
};
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;
use tracing::{debug, info, warn, Instrument};

pub(crate) use crate::classify::ListKind;
use crate::upstream::{Status, Upstream};
use crate::{gauge, Allowlist, BridgeConfig, ChildMode, Connector, Core};
use catalog::{Merged, Snapshot};

/// One upstream of a gateway.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GatewayUpstream {
    /// Its name: 1 to 32 of `A-Z a-z 0-9 - _`, without `__`.
    pub name: String,
    /// The prefix of its served tool and prompt names (`{prefix}__{name}`);
    /// `None`: its names as they are.
    pub prefix: Option<String>,
    /// How it is reached (stdio child, Streamable HTTP, legacy SSE).
    pub connector: Connector,
    /// How long a list waits for this upstream's entries before it is served
    /// without them. Default 10 s.
    pub list_timeout: Duration,
    /// What the upstream is, compared across a reload ([`Gateway::reload`]):
    /// when it differs, the upstream is restarted. Default: the connector's
    /// `Debug` form; the command line sets the configuration file's entry
    /// with its header values as read.
    pub identity: String,
    /// A stdio upstream only: one child for every session, or each
    /// downstream session (of the legacy era) a child of its own, started at
    /// its first request there with the client's own `initialize` params and
    /// ended with the session; when it dies the session ends, or with
    /// [`ChildMode::PerSessionRespawn`] it is restarted (its state lost). The
    /// shared child serves the lists and 2026-07-28 clients in every mode.
    /// Default [`ChildMode::Shared`].
    pub child: ChildMode,
    /// The drift guard of this upstream (its entry of a lock): lists
    /// judged, entries not as approved withheld (block mode) and their calls
    /// refused, its `instructions` as approved. Kept across a reload of an
    /// unchanged upstream: reload it in place ([`crate::DriftGuard::reload`]), then
    /// [`Gateway::relist`] (which judges every kind of entry again at once,
    /// then lists again). Default none.
    pub drift_guard: Option<Arc<crate::DriftGuard>>,
}

impl GatewayUpstream {
    /// An upstream named `name`, prefixed by its name, with the defaults.
    pub fn new(name: impl Into<String>, connector: Connector) -> Self {
        let name = name.into();
        GatewayUpstream {
            prefix: Some(name.clone()),
            name,
            identity: format!("{connector:?}"),
            connector,
            list_timeout: Duration::from_secs(10),
            child: ChildMode::Shared,
            drift_guard: None,
        }
    }
}

/// One route: a virtual server at `path` with some upstreams.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GatewayRoute {
    /// Its name, for logs.
    pub name: String,
    /// Its endpoint path (`/mcp` for the default route).
    pub path: String,
    /// The upstreams it serves, by name.
    pub upstreams: Vec<String>,
    /// Its tool allowlist, as served names: the intersection with what the
    /// upstreams list, enforced on `tools/call` too.
    pub tools: Allowlist,
}

impl GatewayRoute {
    /// A route at `path` serving `upstreams`, every tool allowed.
    pub fn new(name: impl Into<String>, path: impl Into<String>, upstreams: Vec<String>) -> Self {
        GatewayRoute {
            name: name.into(),
            path: path.into(),
            upstreams,
            tools: Allowlist::All,
        }
    }
}

/// Everything [`Gateway::start`] needs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GatewayConfig {
    /// The listener (address, limits, Host/Origin checks, authorization:
    /// `route_auth` by route path); `path` is replaced by the first route's
    /// and `routes` by the others'.
    pub http: HttpServerConfig,
    /// The upstreams, in the order their entries are listed.
    pub upstreams: Vec<GatewayUpstream>,
    /// The routes; at least one.
    pub routes: Vec<GatewayRoute>,
    /// Entries per page of the gateway's own lists. Default 100.
    pub page_size: usize,
    /// How long an upstream has to answer its handshake. Default 30 s.
    pub init_timeout: Duration,
    /// How long a request may go without word from its upstream. Default 5 min.
    pub request_timeout: Duration,
    /// How long [`Gateway::shutdown`] waits for calls in flight. Default 10 s.
    pub drain_timeout: Duration,
    /// How long a call held for a 2026-07-28 client's `input_required`
    /// round trip waits for its retry ([`BridgeConfig::held_call_timeout`]).
    /// Default 5 min.
    pub held_call_timeout: Duration,
    /// The most calls in flight on one upstream connection
    /// ([`BridgeConfig::max_in_flight`]). Default 64.
    pub max_in_flight: usize,
}

impl GatewayConfig {
    /// The defaults for these upstreams and routes.
    pub fn new(upstreams: Vec<GatewayUpstream>, routes: Vec<GatewayRoute>) -> Self {
        GatewayConfig {
            http: HttpServerConfig::default(),
            upstreams,
            routes,
            page_size: 100,
            init_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(300),
            drain_timeout: Duration::from_secs(10),
            held_call_timeout: Duration::from_secs(300),
            max_in_flight: 64,
        }
    }
}

/// One upstream at work. Shared by the layouts it belongs to: a reload
/// keeps an unchanged upstream (its process, its sessions upstream, its
/// catalog) as it is.
pub(crate) struct Member {
    pub(crate) name: String,
    /// Its name in the errors its calls get (module `downstream::relay`).
    pub(crate) named: Arc<str>,
    pub(crate) prefix: Option<String>,
    /// What it is ([`GatewayUpstream::identity`]): a reload restarts it
    /// when this changed.
    identity: String,
    /// Its bridge core: the upstream, its routing, its shared subscriptions,
    /// held `input_required` calls.
    pub(crate) core: Arc<Core>,
    /// Its listed entries; `None` until first listed.
    pub(crate) snapshot: watch::Sender<Option<Arc<Snapshot>>>,
    /// With a drift guard: its tools, prompts and templates as last listed,
    /// before the guard's judgement (`snapshot` holds what is served), so
    /// that a reloaded lock judges them again at once ([`rejudge`]) and a
    /// call of a withheld entry is refused naming why.
    pub(crate) unjudged: Mutex<Snapshot>,
    /// The lists whose last listing failed (not answered in time, refused):
    /// listed again by its follower, sooner or later ([`Retry`]).
    ///
    /// [`Retry`]: crate::catalog::changes::Retry
    failed: Mutex<Vec<ListKind>>,
    /// When each list (by [`ListKind::index`]) was last listed whole, and
    /// whether a re-list of a client's asking runs ([`Member::refresh_stale`]).
    listed_at: Mutex<[Option<std::time::Instant>; 3]>,
    refreshing: AtomicBool,
    /// When each list's last re-list of a client's asking began: one in
    /// [`STALE`] at most, even when they fail.
    refresh_tried: Mutex<[Option<std::time::Instant>; 3]>,
    pub(crate) list_timeout: Duration,
    /// What the gateway's subscribers hold on it when it speaks 2026-07-28
    /// (asked on its listen stream, module `listen`).
    pub(crate) subscriptions: listen::Subscriptions,
    /// Its core's tasks (supervising the upstream).
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// The gateway's tasks for it (listing, listening): [`Member::watch`].
    watching: Mutex<Vec<JoinHandle<()>>>,
}

impl Member {
    pub(crate) fn upstream(&self) -> &Upstream {
        &self.core.shared
    }

    /// Whether its upstream is known to be down ([`Upstream::lapse`]): its
    /// entries are left out of lists, its calls fail at once, and no list
    /// waits for it.
    pub(crate) fn lapsed(&self) -> bool {
        self.upstream().lapse().is_some()
    }

    /// Waits until it has been listed once, up to `deadline`, or is known to
    /// be down; whether it has been listed.
    async fn wait_listed(&self, deadline: tokio::time::Instant) -> bool {
        let mut listed = self.snapshot.subscribe();
        let mut status = self.upstream().watch_status();
        let wait = async {
            loop {
                if listed.borrow_and_update().is_some() {
                    return true;
                }
                // Set before the status that goes with it.
                status.borrow_and_update();
                if self.lapsed() {
                    return false;
                }
                tokio::select! {
                    r = listed.changed() => if r.is_err() { return false },
                    r = status.changed() => if r.is_err() { return false },
                }
            }
        };
        match tokio::time::timeout_at(deadline, wait).await {
            Ok(listed) => listed,
            Err(_) => {
                warn!(upstream = %self.name, timeout = ?self.list_timeout, "upstream not listed in time: served without its entries");
                false
            }
        }
    }

    /// Whether each session gets a child of its own
    /// ([`GatewayUpstream::child`]).
    pub(crate) fn per_session(&self) -> bool {
        self.core.mode.per_session()
    }

    /// Starts upstream `u` with the gateway's timeouts (its tasks: with
    /// [`Member::watch`]).
    fn start(
        u: &GatewayUpstream,
        config: &GatewayConfig,
        draining: &Arc<AtomicBool>,
    ) -> Arc<Member> {
        let mut bridge = BridgeConfig::new(u.connector.clone());
        // Its shared child is the core's; a session's own children are
        // started and restarted (or not) as `u.child` says.
        bridge.mode = u.child;
        bridge.init_timeout = config.init_timeout;
        bridge.request_timeout = config.request_timeout;
        bridge.drain_timeout = config.drain_timeout;
        bridge.held_call_timeout = config.held_call_timeout;
        bridge.max_in_flight = config.max_in_flight;
        bridge.ready_wait = u.list_timeout;
        bridge.drift_guard = u.drift_guard.clone();
        // 2026-07-28 where the upstream speaks it: its own input_required
        // round trips and capability checks reach modern clients as they
        // are; legacy sessions get them translated (module `session`).
        let (core, tasks) = crate::start_core(
            bridge,
            u.name.clone(),
            draining.clone(),
            crate::upstream::Ask::Discover,
            // Listed, judged and marked here (`relist`), not by the core.
            false,
        );
        Member::around(u, Arc::from(u.name.as_str()), core, tasks)
    }

    /// A member of upstream `u` around `core` (its tasks: `tasks`), nothing
    /// listed yet.
    fn around(
        u: &GatewayUpstream,
        named: Arc<str>,
        core: Arc<Core>,
        tasks: Vec<JoinHandle<()>>,
    ) -> Arc<Member> {
        Arc::new(Member {
            name: u.name.clone(),
            named,
            prefix: u.prefix.clone(),
            identity: u.identity.clone(),
            core,
            snapshot: watch::Sender::new(None),
            unjudged: Mutex::new(Snapshot::default()),
            failed: Mutex::new(Vec::new()),
            listed_at: Mutex::new([None; 3]),
            refreshing: AtomicBool::new(false),
            refresh_tried: Mutex::new([None; 3]),
            list_timeout: u.list_timeout,
            subscriptions: listen::Subscriptions::default(),
            tasks: Mutex::new(tasks),
            watching: Mutex::new(Vec::new()),
        })
    }

    /// The same upstream under `u`'s prefix, its child kept: this member's
    /// core and its tasks move to the new one, the gateway's tasks for this
    /// one end. The new one lists its upstream afresh once
    /// [`watch`](Member::watch)ed.
    fn renamed(&self, u: &GatewayUpstream) -> Arc<Member> {
        for t in std::mem::take(&mut *self.watching.lock().unwrap_or_else(|p| p.into_inner())) {
            t.abort();
        }
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(|p| p.into_inner()));
        // `u` is this upstream (same name, identity and timeout) but for
        // its prefix.
        Member::around(u, self.named.clone(), self.core.clone(), tasks)
    }

    /// Starts the gateway's tasks for this member: listing it, and listening
    /// to it when it speaks 2026-07-28.
    fn watch(self: &Arc<Self>, shared: &Arc<Shared>) {
        let follow = tokio::spawn(follow(Arc::downgrade(shared), Arc::downgrade(self)));
        let listen = tokio::spawn(listen::upstream_listen(
            Arc::downgrade(shared),
            Arc::downgrade(self),
        ));
        let mut watching = self.watching.lock().unwrap_or_else(|p| p.into_inner());
        watching.push(follow);
        watching.push(listen);
    }

    /// With a drift guard: waits until every change of the list `method`
    /// uses (`tools/call`, `prompts/get`) that its upstream announced has been
    /// re-listed and judged ([`Core::wait_judged`](crate::Core)), so that a
    /// definition changed in the middle of a session is judged before the
    /// next call uses it. At once without a guard, or for another method.
    /// Errors: not judged in time, in block mode.
    pub(crate) async fn relisted(
        &self,
        route: crate::classify::Route,
    ) -> Result<(), crate::error::Error> {
        let judging = self.core.shared_judging();
        match self.core.unjudged(judging, route) {
            Some(list) => self.core.wait_judged(judging, list).await,
            None => Ok(()),
        }
    }

    /// With a drift guard: when a client lists `list` (tools, prompts) and
    /// this upstream's was last listed [`STALE`] ago or more, lists it again
    /// in the background, as the bridge's clients' lists reach its server:
    /// a definition the server changed without a `list_changed` is then
    /// judged (withheld, its calls refused, the sessions told when what they
    /// are served changed). One such re-list at a time, and one begun in
    /// [`STALE`] at most (an upstream whose lists fail is not asked at each
    /// client's list).
    pub(crate) fn refresh_stale(self: &Arc<Self>, shared: &Arc<Shared>, list: ListKind) {
        if self.core.guard.is_none() {
            return;
        }
        let at = self.listed_at.lock().unwrap_or_else(|p| p.into_inner())[list.index()];
        if at.is_some_and(|t| t.elapsed() < STALE) {
            return;
        }
        {
            let mut tried = self.refresh_tried.lock().unwrap_or_else(|p| p.into_inner());
            let recent = tried[list.index()].is_some_and(|t| t.elapsed() < STALE);
            if recent || self.refreshing.swap(true, Ordering::SeqCst) {
                return;
            }
            tried[list.index()] = Some(std::time::Instant::now());
        }
        let (m, shared) = (self.clone(), shared.clone());
        tokio::spawn(async move {
            relist_with(&shared, &m, &[list], Announce::IfChanged).await;
            m.refreshing.store(false, Ordering::SeqCst);
        });
    }

    /// With a drift guard in block mode, the changes of its `list` (tools,
    /// prompts) its upstream announced when one is still to be judged: its
    /// entries may be the changed ones, and its calls wait for the judgement
    /// ([`Member::relisted`]). `None` otherwise.
    pub(crate) fn unjudged_change(&self, list: ListKind) -> Option<u64> {
        let guard = self.core.guard.as_ref()?;
        let announced = self.upstream().list_changes(list);
        (guard.mode() == crate::GuardMode::Block && self.core.judged.pending(list, announced))
            .then_some(announced)
    }

    /// Whether `announced` changes of its `list` are judged within its list
    /// timeout ([`Member::unjudged_change`]).
    pub(crate) async fn judged_within_timeout(&self, list: ListKind, announced: u64) -> bool {
        self.core
            .judged
            .wait(list, announced, self.list_timeout)
            .await
    }

    /// Drains its calls (up to `drain`), then ends it in the spec's order.
    async fn retire(&self, drain: Duration) {
        self.upstream().drained(drain).await;
        let mut tasks: Vec<JoinHandle<()>> =
            std::mem::take(&mut *self.tasks.lock().unwrap_or_else(|p| p.into_inner()));
        tasks.append(&mut self.watching.lock().unwrap_or_else(|p| p.into_inner()));
        for t in tasks {
            t.abort();
        }
        self.core.stop_session_children().await;
        self.upstream().shutdown(Duration::ZERO).await;
    }
}

/// A route at work.
pub(crate) struct RouteView {
    pub(crate) name: String,
    pub(crate) path: String,
    /// Which members of its layout it serves, by index.
    pub(crate) members: Vec<bool>,
    /// The same, by name.
    names: BTreeSet<String>,
    pub(crate) allow: Allowlist,
}

impl RouteView {
    /// Whether it serves the upstream named `name`.
    pub(crate) fn serves(&self, name: &str) -> bool {
        self.names.contains(name)
    }
}

/// What the gateway tells its sessions.
#[derive(Debug, Clone)]
pub(crate) enum GatewayNotice {
    /// The upstream named `member` changed its list of `kind` (re-listed).
    ListChanged { kind: ListKind, member: String },
    /// `notifications/resources/updated` from the upstream named `member`.
    ResourceUpdated {
        member: String,
        notification: Notification,
    },
    /// A reload changed the routes or their upstreams: every list may differ.
    Reloaded,
}

/// The upstreams and routes in force, and their merged catalog. Replaced
/// whole by a reload; a request works on the one it started with.
pub(crate) struct Layout {
    pub(crate) members: Vec<Arc<Member>>,
    pub(crate) routes: Vec<Arc<RouteView>>,
    merged: RwLock<Arc<Merged>>,
}

impl Layout {
    /// The layout of `config`'s routes over `members` (in `config`'s order).
    /// Errors: a route naming an upstream not there.
    fn new(members: Vec<Arc<Member>>, routes: &[GatewayRoute]) -> Result<Layout, String> {
        let mut views = Vec::new();
        for r in routes {
            let mut on = vec![false; members.len()];
            for name in &r.upstreams {
                let Some(i) = members.iter().position(|m| &m.name == name) else {
                    return Err(format!("route {}: unknown upstream {name:?}", r.name));
                };
                on[i] = true;
            }
            views.push(Arc::new(RouteView {
                name: r.name.clone(),
                path: r.path.clone(),
                members: on,
                names: r.upstreams.iter().cloned().collect(),
                allow: r.tools.clone(),
            }));
        }
        Ok(Layout {
            members,
            routes: views,
            merged: RwLock::new(Arc::new(Merged::default())),
        })
    }

    /// No upstreams and no routes: the gateway's until it has bound its
    /// listener.
    fn empty() -> Layout {
        Layout {
            members: Vec::new(),
            routes: Vec::new(),
            merged: RwLock::new(Arc::new(Merged::default())),
        }
    }

    /// The route at `path`.
    pub(crate) fn route(&self, path: &str) -> Option<&Arc<RouteView>> {
        self.routes.iter().find(|r| r.path == path)
    }

    /// The merged catalog now.
    pub(crate) fn merged(&self) -> Arc<Merged> {
        self.merged
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Waits until every member of `route` has been listed once or is known
    /// to be down ([`Member::lapsed`]: never waited for), each up to its list
    /// timeout from now (together: the deadlines run at once); those not
    /// listed in time are logged.
    pub(crate) async fn listed(&self, route: &RouteView) {
        let start = tokio::time::Instant::now();
        for (i, m) in self.members.iter().enumerate() {
            if !route.members[i] || m.snapshot.borrow().is_some() {
                continue;
            }
            m.wait_listed(start + m.list_timeout).await;
        }
    }

    /// Whether every upstream of `route` has been listed once.
    pub(crate) fn all_listed(&self, route: &RouteView) -> bool {
        self.members
            .iter()
            .enumerate()
            .all(|(i, m)| !route.members[i] || m.snapshot.borrow().is_some())
    }

    /// The route's view of the union of its upstreams' capabilities (those
    /// ready within their list timeout from now, together): tools always,
    /// each list with `listChanged` (the gateway relays changes), resource
    /// subscriptions when any upstream has them.
    pub(crate) async fn capabilities(&self, route: &RouteView) -> ServerCapabilities {
        let start = tokio::time::Instant::now();
        let mut caps = json!({ "tools": { "listChanged": true } });
        for (i, m) in self.members.iter().enumerate() {
            if !route.members[i] {
                continue;
            }
            let left =
                (start + m.list_timeout).saturating_duration_since(tokio::time::Instant::now());
            let Ok(info) = m.upstream().ready(left).await else {
                continue;
            };
            let c = &info.result.capabilities;
            if c.prompts.is_some() {
                caps["prompts"] = json!({ "listChanged": true });
            }
            if let Some(r) = &c.resources {
                let subscribe = r.subscribe == Some(true)
                    || caps["resources"]["subscribe"].as_bool() == Some(true);
                caps["resources"] = json!({ "listChanged": true, "subscribe": subscribe });
            }
            if c.logging.is_some() {
                caps["logging"] = json!({});
            }
            if c.completions.is_some() {
                caps["completions"] = json!({});
            }
        }
        serde_json::from_value(caps).unwrap_or_default()
    }

    /// Every upstream's `instructions`, each under its name (`## name`).
    pub(crate) fn instructions(&self, route: &RouteView) -> Option<String> {
        let mut parts = Vec::new();
        for (i, m) in self.members.iter().enumerate() {
            if !route.members[i] {
                continue;
            }
            if let Status::Ready(info) = m.upstream().status() {
                if let Some(text) = m
                    .core
                    .served_instructions(info.result.instructions.as_deref())
                {
                    parts.push(format!("## {}\n{}", m.name, text.trim_end()));
                }
            }
        }
        (!parts.is_empty()).then(|| parts.join("\n\n"))
    }

    /// Re-merges every member's snapshot; reports (once each, in `reported`)
    /// new clashes, names that break the rules, and allowed names nobody
    /// lists.
    fn remerge(&self, reported: &Mutex<BTreeSet<String>>) {
        let snaps: Vec<Option<Arc<Snapshot>>> = self
            .members
            .iter()
            .map(|m| m.snapshot.borrow().clone())
            .collect();
        let inputs: Vec<(Option<&str>, Option<&Snapshot>)> = self
            .members
            .iter()
            .zip(&snaps)
            .map(|(m, s)| (m.prefix.as_deref(), s.as_deref()))
            .collect();
        let merged = catalog::merge(&inputs);
        if let Some(m) = crate::metrics::get() {
            // Served names are label values too (their upstreams' own
            // names are known from their lists).
            let served = merged.tools.iter().chain(&merged.prompts);
            m.listed(served.filter_map(|e| e.value["name"].as_str()));
        }
        {
            let mut reported = reported.lock().unwrap_or_else(|p| p.into_inner());
            for (name, members) in &merged.clashes {
                if reported.insert(format!("clash:{name}")) {
                    let upstreams: Vec<&str> = members
                        .iter()
                        .map(|&i| self.members[i].name.as_str())
                        .collect();
                    let upstreams = upstreams.join(" and ");
                    warn!(name = %name, %upstreams, "two upstreams serve this name: both entries withheld (set a prefix to tell them apart)");
                }
            }
            for uri in &merged.shared_uris {
                if reported.insert(format!("uri:{uri}")) {
                    warn!(uri = %uri, "more than one upstream lists this resource: it is read from the first");
                }
            }
            for tool in &merged.tools {
                let name = tool.value["name"].as_str().unwrap_or_default();
                if let Some(problem) = catalog::name_problem(name) {
                    if reported.insert(format!("name:{name}")) {
                        warn!(name, upstream = %self.members[tool.member].name, %problem, "a served tool name breaks the naming rules");
                    }
                }
            }
            for route in &self.routes {
                let all_listed = snaps
                    .iter()
                    .enumerate()
                    .all(|(i, s)| !route.members[i] || s.is_some());
                if !all_listed || !route.allow.is_restricted() {
                    continue;
                }
                let reported_names: BTreeSet<String> = merged
                    .tools
                    .iter()
                    .filter(|t| route.members[t.member])
                    .filter_map(|t| t.value["name"].as_str().map(str::to_owned))
                    .collect();
                for missing in route.allow.drift(&reported_names) {
                    if reported.insert(format!("drift:{}:{missing}", route.path)) {
                        warn!(route = %route.name, tool = missing, "allowed tool reported by no upstream (drift)");
                    }
                }
            }
        }
        *self.merged.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(merged);
    }

    /// Each upstream's state, as `/readyz` reports it: `{name: {"state":
    /// "ready"|"starting"|"down"|"stopped", "protocolVersion"?, "reason"?,
    /// "restarts": n, "listed": bool, "drift"?: {"found": n, "refused": n,
    /// "served": n}}}` (`drift` with a lock: [`DriftCounts`](crate::DriftCounts)).
    pub(crate) fn readiness(&self) -> Value {
        let mut out = Map::new();
        for m in &self.members {
            let mut v = m.core.readiness();
            // Its entries in lists now: listed, and not known down.
            let listed = m.snapshot.borrow().is_some() && m.upstream().lapse().is_none();
            v.insert("listed".into(), listed.into());
            out.insert(m.name.clone(), Value::Object(v));
        }
        Value::Object(out)
    }
}

impl Layout {
    /// What the live page shows of it (module `live_page`): its upstreams,
    /// routes and tools, each tool as its upstream last listed it, judged
    /// by the upstream's drift guard (`unpinned` without one) and `served`
    /// when some route may list it.
    pub(crate) fn live_view(&self) -> Value {
        let merged = self
            .merged
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut upstreams = Vec::new();
        let mut tools = Vec::new();
        for (i, m) in self.members.iter().enumerate() {
            let mut v = m.upstream().report();
            v.insert("name".into(), m.name.as_str().into());
            v.insert("transport".into(), m.upstream().transport().into());
            if let Some(p) = &m.prefix {
                v.insert("prefix".into(), p.as_str().into());
            }
            upstreams.push(Value::Object(v));
            let listed: Vec<String> = match &m.core.guard {
                Some(_) => m
                    .unjudged
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .tools
                    .iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_owned))
                    .collect(),
                None => merged
                    .tools
                    .iter()
                    .filter(|t| t.member == i)
                    .map(|t| t.original.clone())
                    .collect(),
            };
            for name in listed {
                let served = catalog::served(m.prefix.as_deref(), &name);
                let listed_by = self
                    .routes
                    .iter()
                    .any(|r| r.members[i] && r.allow.permits(&served));
                let served = merged.tool(&served).is_some_and(|t| t.member == i) && listed_by;
                let drift = m
                    .core
                    .guard
                    .as_ref()
                    .map_or(crate::policy::Drift::Unguarded, |g| {
                        g.drift_of(crate::Scope::Shared, crate::pin::Kind::Tool, &name)
                    });
                tools.push(crate::live_page::tool(&m.name, &name, served, drift));
            }
        }
        let routes: Vec<Value> = self
            .routes
            .iter()
            .map(|r| {
                let members: Vec<&str> = self
                    .members
                    .iter()
                    .zip(&r.members)
                    .filter(|(_, on)| **on)
                    .map(|(m, _)| m.name.as_str())
                    .collect();
                json!({"name": r.name, "path": r.path, "upstreams": members, "allow": r.allow.names()})
            })
            .collect();
        json!({"kind": "gateway", "upstreams": upstreams, "routes": routes, "tools": tools})
    }
}

/// What the gateway's tasks share.
pub(crate) struct Shared {
    layout: RwLock<Arc<Layout>>,
    /// Served names already reported (a clash, a name breaking the rules).
    reported: Mutex<BTreeSet<String>>,
    pub(crate) notices: broadcast::Sender<GatewayNotice>,
    pub(crate) page_size: usize,
    pub(crate) draining: Arc<AtomicBool>,
    pub(crate) answers: gauge::Gauge,
    /// Open 2026-07-28 listen streams (counted in `answers` too): a shutdown
    /// lets them send their final result.
    pub(crate) listens: gauge::Gauge,
    pub(crate) request_timeout: Duration,
    /// Owner ids of sessions (one per session, for every upstream): above
    /// the members' own counters, which number their exchanges.
    owners: std::sync::atomic::AtomicU64,
}

impl Shared {
    /// A fresh owner id for a session.
    pub(crate) fn next_owner(&self) -> u64 {
        self.owners.fetch_add(1, Ordering::Relaxed)
    }

    /// The layout in force.
    pub(crate) fn layout(&self) -> Arc<Layout> {
        self.layout
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Re-merges the layout in force.
    fn remerge(&self) {
        self.layout().remerge(&self.reported);
    }
}

/// Whether gateway is ready ([`Gateway::readiness`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct GatewayReadiness {
    /// Serving: not draining, and at least one upstream ready.
    pub ready: bool,
    /// Each upstream's state (see [`Gateway::readiness`]).
    pub upstreams: Value,
}

/// A running gateway.
pub struct Gateway {
    server: Option<HttpServer>,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
    /// The configuration in force (its HTTP side as bound).
    config: GatewayConfig,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// Starts every upstream, binds the listener and serves until shut down.
    ///
    /// Errors: no route, a route naming an unknown upstream, binding failed.
    /// An upstream that cannot be reached is not an error: it is retried with
    /// backoff and its entries are missing meanwhile.
    pub async fn start(mut config: GatewayConfig) -> io::Result<Gateway> {
        crate::with_metrics(&mut config.http);
        crate::with_refusals(&mut config.http);
        let invalid = |why: String| io::Error::new(io::ErrorKind::InvalidInput, why);
        let Some(first) = config.routes.first() else {
            return Err(invalid("a gateway needs at least one route".into()));
        };
        let draining = Arc::new(AtomicBool::new(false));
        // Checked before anything starts: a route naming no upstream.
        for r in &config.routes {
            if let Some(name) = r
                .upstreams
                .iter()
                .find(|n| !config.upstreams.iter().any(|u| &u.name == *n))
            {
                return Err(invalid(format!(
                    "route {}: unknown upstream {name:?}",
                    r.name
                )));
            }
        }
        let (notices, _) = broadcast::channel(1024);
        // No upstream until the listener is bound (a port in use starts none).
        let shared = Arc::new(Shared {
            layout: RwLock::new(Arc::new(Layout::empty())),
            reported: Mutex::new(BTreeSet::new()),
            notices,
            page_size: config.page_size.max(1),
            draining: draining.clone(),
            answers: gauge::Gauge::default(),
            listens: gauge::Gauge::default(),
            request_timeout: config.request_timeout,
            owners: std::sync::atomic::AtomicU64::new(1 << 48),
        });
        let mut http = config.http.clone();
        http.path = first.path.clone();

        http.routes = config.routes[1..].iter().map(|r| r.path.clone()).collect();
        // Clients may reconnect to a stream the gateway closed (SEP-1699).
        http.sse_retry.get_or_insert(Duration::from_secs(1));
        if !http
            .supported_versions
            .contains(&ProtocolVersion::V2026_07_28)
        {
            http.supported_versions.push(ProtocolVersion::V2026_07_28);
        }
        let probe = Arc::downgrade(&shared);
        http.health = Some(HealthProbe(Arc::new(move || match probe.upgrade() {
            Some(shared) if readiness_of(&shared).ready => Ok(()),
            Some(_) => Err("no upstream is ready, or the gateway is draining".into()),
            None => Err("the gateway is stopping".into()),
        })));
        let report = Arc::downgrade(&shared);
        http.health_report = Some(HealthReport(Arc::new(move || match report.upgrade() {
            Some(shared) => {
                let r = readiness_of(&shared);
                let draining = shared.draining.load(Ordering::Relaxed);
                (
                    r.ready,
                    crate::readiness_body(r.ready, draining, r.upstreams),
                )
            }
            None => (false, crate::readiness_body(false, true, json!({}))),
        })));
        if let (Some(m), Some(_)) = (crate::metrics::get(), http.admin) {
            let view = Arc::downgrade(&shared);
            http.live = Some(crate::live_page::page(m, move || match view.upgrade() {
                Some(shared) => shared.layout().live_view(),
                None => Value::Null,
            }));
        }
        let (server, mut acceptor) = HttpServer::bind(http).await?;
        let members: Vec<Arc<Member>> = config
            .upstreams
            .iter()
            .map(|u| Member::start(u, &config, &draining))
            .collect();
        let layout = Layout::new(members, &config.routes).map_err(invalid)?;
        *shared.layout.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(layout);
        for m in &shared.layout().members {
            m.watch(&shared);
        }
        crate::watch_server(&server);
        let accept_shared = shared.clone();
        let accept = tokio::spawn(
            async move {
                while let Some(session) = acceptor.accept().await {
                    let shared = accept_shared.clone();
                    let (tx, rx) = session.transport.split();
                    let tx = crate::downstream::watch::Tx::new(
                        tx,
                        crate::downstream::watch::Http {
                            kind: session.kind,
                            protocol_version: session.protocol_version,
                            session_id: &session.session_id,
                            path: &session.path,
                            headers: &session.headers,
                            principal: session.principal.as_ref(),
                        },
                    );
                    match session.kind {
                        SessionKind::Stateless => {
                            tokio::spawn(exchange::serve(shared, session.path, tx, rx, session.headers));
                        }
                        _ => {
                            let span = tracing::info_span!("session", id = %session.session_id, path = %session.path);
                            tokio::spawn(session::serve(shared, session.path, tx, rx).instrument(span));
                        }
                    }
                }
            }
            .instrument(tracing::info_span!("gateway")),
        );
        for r in &shared.layout().routes {
            info!(route = %r.name, url = %server.url_of(&r.path), "gateway route listening");
        }
        Ok(Gateway {
            server: Some(server),
            shared,
            accept,
            config,
        })
    }

    /// The address bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.server.as_ref().expect("serving").local_addr()
    }

    /// The admin listener's address ([`HttpServerConfig::admin`]).
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.server.as_ref().and_then(|s| s.admin_addr())
    }

    /// The URL of the route at `path` (`http://<addr><path>`).
    pub fn url_of(&self, path: &str) -> String {
        self.server.as_ref().expect("serving").url_of(path)
    }

    /// Whether it serves, and each upstream's state.
    pub fn readiness(&self) -> GatewayReadiness {
        readiness_of(&self.shared)
    }

    /// Applies a new configuration: upstreams added start, removed ones drain
    /// (up to the drain timeout) and end, changed ones (another
    /// [`identity`](GatewayUpstream::identity), list timeout, child mode or
    /// drift guard) are replaced the same way; one whose prefix alone changed
    /// keeps its child and lists afresh; unchanged ones, and every session,
    /// carry on.
    /// Every session is told its lists may have changed. Returns what
    /// changed, one line.
    ///
    /// Errors (the configuration in force is kept): a route naming an
    /// unknown upstream, route paths that differ from those bound (a new
    /// path needs a restart), or authorization settings
    /// ([`HttpServerConfig::auth`], [`HttpServerConfig::route_auth`]) that
    /// differ from those bound (the same: the resource servers are built at
    /// bind). The rest of `config.http` is not read.
    pub fn reload(&mut self, mut config: GatewayConfig) -> Result<String, String> {
        let old_paths: BTreeSet<&str> =
            self.config.routes.iter().map(|r| r.path.as_str()).collect();
        let new_paths: BTreeSet<&str> = config.routes.iter().map(|r| r.path.as_str()).collect();
        if old_paths != new_paths {
            return Err(format!(
                "the route paths changed ({old_paths:?} to {new_paths:?}): serving new paths needs a restart"
            ));
        }
        let bound = &self.config.http;
        if config.http.auth != bound.auth || config.http.route_auth != bound.route_auth {
            let mut changed: Vec<String> = Vec::new();
            if config.http.auth != bound.auth {
                changed.push("the global settings".into());
            }
            let paths: BTreeSet<&String> = config
                .http
                .route_auth
                .keys()
                .chain(bound.route_auth.keys())
                .collect();
            for p in paths {
                if config.http.route_auth.get(p) != bound.route_auth.get(p) {
                    changed.push(format!("route {p}"));
                }
            }
            return Err(format!(
                "the authorization settings changed ({}): applying them needs a restart",
                changed.join(", ")
            ));
        }
        for r in &config.routes {
            let unknown = r
                .upstreams
                .iter()
                .find(|n| !config.upstreams.iter().any(|u| &u.name == *n));
            if let Some(name) = unknown {
                return Err(format!("route {}: unknown upstream {name:?}", r.name));
            }
        }
        let old = self.shared.layout();
        // The same child: all but the prefix as it was.
        let same_child = |m: &Member, u: &GatewayUpstream| {
            m.identity == u.identity
                && m.list_timeout == u.list_timeout
                && m.core.mode == u.child
                && same_guard(&m.core.guard, &u.drift_guard)
        };
        let (mut added, mut changed, mut kept) = (Vec::new(), Vec::new(), Vec::new());
        let mut renamed = Vec::new();
        let members: Vec<Arc<Member>> = config
            .upstreams
            .iter()
            .map(|u| match old.members.iter().find(|m| m.name == u.name) {
                Some(m) if same_child(m, u) && m.prefix == u.prefix => {
                    kept.push(u.name.clone());
                    m.clone()
                }
                Some(m) if same_child(m, u) => {
                    renamed.push(u.name.clone());
                    let m = m.renamed(u);
                    m.watch(&self.shared);
                    m
                }
                found => {
                    if found.is_some() {
                        changed.push(u.name.clone());
                    } else {
                        added.push(u.name.clone());
                    }
                    let m = Member::start(u, &config, &self.shared.draining);
                    m.watch(&self.shared);
                    m
                }
            })
            .collect();
        let layout = Layout::new(members, &config.routes).expect("routes checked above");
        layout.remerge(&self.shared.reported);
        let retired: Vec<Arc<Member>> = old
            .members
            .iter()
            .filter(|m| !layout.members.iter().any(|n| Arc::ptr_eq(m, n)))
            // A renamed one's child serves on under its new prefix.
            .filter(|m| !renamed.contains(&m.name))
            .cloned()
            .collect();
        let removed: Vec<String> = retired
            .iter()
            .filter(|m| !changed.contains(&m.name))
            .map(|m| m.name.clone())
            .collect();
        *self
            .shared
            .layout
            .write()
            .unwrap_or_else(|p| p.into_inner()) = Arc::new(layout);
        let _ = self.shared.notices.send(GatewayNotice::Reloaded);
        let drain = config.drain_timeout;
        for m in retired {
            tokio::spawn(async move { m.retire(drain).await });
        }
        // The HTTP side stays as bound.
        config.http = self.config.http.clone();
        self.config = config;
        Ok(format!(
            "added [{}], removed [{}], restarted [{}], prefix changed [{}], kept [{}]",
            added.join(", "),
            removed.join(", "),
            changed.join(", "),
            renamed.join(", "),
            kept.join(", ")
        ))
    }

    /// After a drift guard's lock was reloaded: every upstream's last
    /// tools, prompts and templates judged again at once (withheld or served
    /// as the new lock says, before anything is asked of an upstream that
    /// may be slow or down), then every upstream listed again.
    pub async fn relist(&self) {
        let layout = self.shared.layout();
        for m in &layout.members {
            rejudge(&self.shared, m);
        }
        for m in &layout.members {
            relist(&self.shared, m, &ListKind::ALL).await;
        }
    }

    /// Drains (up to the drain timeout), ends every upstream in the spec's
    /// order, then stops serving HTTP.
    pub async fn shutdown(mut self) {
        let front = crate::Front {
            name: "gateway",
            server: self.server.take(),
            accept: self.accept,
            draining: self.shared.draining.clone(),
            answers: self.shared.answers.clone(),
            listens: self.shared.listens.clone(),
        };
        let members = self.shared.layout().members.clone();
        let mut tasks = Vec::new();
        for m in &members {
            tasks.append(&mut m.tasks.lock().unwrap_or_else(|p| p.into_inner()));
            tasks.append(&mut m.watching.lock().unwrap_or_else(|p| p.into_inner()));
        }
        let cores: Vec<(&str, &Arc<Core>)> =
            members.iter().map(|m| (m.name.as_str(), &m.core)).collect();
        front.stop(self.config.drain_timeout, &cores, tasks).await;
    }
}

fn readiness_of(shared: &Shared) -> GatewayReadiness {
    let layout = shared.layout();
    let upstreams = layout.readiness();
    let any_ready = layout
        .members
        .iter()
        .any(|m| matches!(m.upstream().status(), Status::Ready(_)));
    GatewayReadiness {
        ready: any_ready && !shared.draining.load(Ordering::Relaxed),
        upstreams,
    }
}

/// The most pages of one upstream list walked: 1,000.
const MAX_PAGES: usize = 1000;

/// Keeps `member`'s snapshot: every list at each (re)connection, one list
/// again at its `list_changed`; relays its resource updates.
async fn follow(shared: Weak<Shared>, member: Weak<Member>) {
    let (mut status, mut notes) = {
        let Some(m) = member.upgrade() else { return };
        (m.upstream().watch_status(), m.upstream().subscribe())
    };
    let mut handled: Option<u64> = None;
    let mut retry = crate::catalog::changes::Retry::new();
    let mut lapsed = false;
    loop {
        let ready = matches!(&*status.borrow_and_update(), Status::Ready(_));
        {
            let (Some(s), Some(m)) = (shared.upgrade(), member.upgrade()) else {
                return;
            };
            // Known down: left out of lists, the sessions told once; back:
            // told by the re-list below.
            let now = m.upstream().lapse();
            if now.is_some() != lapsed {
                lapsed = now.is_some();
                if let Some(why) = now {
                    warn!(upstream = %m.name, reason = %why, "upstream down: its entries are left out of lists until it is back");
                    for kind in ListKind::ALL {
                        let _ = s.notices.send(GatewayNotice::ListChanged {
                            kind,
                            member: m.name.clone(),
                        });
                    }
                } else {
                    info!(upstream = %m.name, "upstream back: its entries are listed again");
                }
            }
            let generation = m.upstream().restarts();
            if ready && handled != Some(generation) {
                handled = Some(generation);
                relist(&s, &m, &ListKind::ALL).await;
            }
        }
        // A listing that failed is tried again (the start-up one included),
        // as is one for the guard while its changes are not judged.
        let again = match member.upgrade() {
            Some(m) if ready => {
                let mut again = m.failed.lock().unwrap_or_else(|p| p.into_inner()).clone();
                if m.core.guard.is_some() {
                    for k in m.core.shared_judging().unjudged_lists(&ListKind::ALL) {
                        if !again.contains(&k) {
                            again.push(k);
                        }
                    }
                }
                again
            }
            _ => Vec::new(),
        };
        let wait = retry.next(!again.is_empty());
        tokio::select! {
            changed = status.changed() => if changed.is_err() { return },
            () = tokio::time::sleep(wait.unwrap_or_default()), if wait.is_some() => {
                let (Some(s), Some(m)) = (shared.upgrade(), member.upgrade()) else { return };
                relist(&s, &m, &again).await;
            }
            note = notes.recv() => {
                let (Some(s), Some(m)) = (shared.upgrade(), member.upgrade()) else { return };
                match note {
                    Ok(n) => listen::on_upstream_notification(&s, &m, n).await,
                    Err(broadcast::error::RecvError::Lagged(_)) => relist(&s, &m, &ListKind::ALL).await,
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        }
    }
}

/// How long a list listed whole is taken as current when a client lists
/// ([`Member::refresh_stale`]): 5 s.
pub(crate) const STALE: Duration = Duration::from_secs(5);

/// When a re-list tells the sessions their lists may have changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Announce {
    /// Always (the upstream said so, or it was (re)connected).
    Always,
    /// Only when what they are served changed (a re-list of a client's asking).
    IfChanged,
}

/// Lists `kinds` of member `m` again, re-merges, and tells the sessions.
pub(crate) async fn relist(shared: &Arc<Shared>, m: &Member, kinds: &[ListKind]) {
    relist_with(shared, m, kinds, Announce::Always).await;
}

/// [`relist`], telling the sessions as `announce` says.
async fn relist_with(shared: &Arc<Shared>, m: &Member, kinds: &[ListKind], announce: Announce) {
    let Ok(info) = m.upstream().ready(Duration::ZERO).await else {
        return;
    };
    let caps = &info.result.capabilities;
    // The changes this re-list covers: those announced before it began.
    let covered: Vec<(ListKind, u64)> = kinds
        .iter()
        .map(|&k| (k, m.upstream().list_changes(k)))
        .collect();
    let mut fetched: Vec<(&str, Vec<Value>)> = Vec::new();
    let mut failed: Vec<ListKind> = Vec::new();
    for &kind in kinds {
        let wanted = match kind {
            ListKind::Tools => caps.tools.is_some(),
            ListKind::Prompts => caps.prompts.is_some(),
            ListKind::Resources => caps.resources.is_some(),
        };
        let lists: &[(&str, &str)] = match kind {
            ListKind::Tools => &[(t::TOOLS_LIST, "tools")],
            ListKind::Prompts => &[(t::PROMPTS_LIST, "prompts")],
            ListKind::Resources => &[
                (t::RESOURCES_LIST, "resources"),
                (t::RESOURCES_TEMPLATES_LIST, "resourceTemplates"),
            ],
        };
        if let Some(metrics) = crate::metrics::get().filter(|_| m.snapshot.borrow().is_some()) {
            // Listed before: a re-list.
            metrics.relisted(&m.name, kind.plural());
        }
        for &(method, key) in lists {
            let entries = if wanted {
                let listed = match kind {
                    // Through the core's tool list, which keeps the
                    // x-mcp-header pairs its calls carry: known before the
                    // tools are served.
                    ListKind::Tools => list_tools(m).await,
                    _ => list_all(m, info.modern, method, key).await,
                };
                match listed {
                    Ok(e) => e,
                    Err(why) => {
                        warn!(upstream = %m.name, method, %why, "listing failed: its entries are left as they were");
                        failed.push(kind);
                        continue;
                    }
                }
            } else {
                Vec::new()
            };
            fetched.push((key, entries));
        }
    }
    let first = m.snapshot.borrow().is_none();
    let mut changed: Vec<ListKind> = Vec::new();
    {
        // Judged and written under `unjudged`'s lock, as `rejudge` does: the
        // judgement served is by the lock in force once both are done, even
        // when a reload comes in the middle of this re-list.
        let mut unjudged = m.unjudged.lock().unwrap_or_else(|p| p.into_inner());
        let mut snap: Snapshot = m.snapshot.borrow().as_deref().cloned().unwrap_or_default();
        for (key, entries) in fetched {
            let kind = match key {
                "tools" => ListKind::Tools,
                "prompts" => ListKind::Prompts,
                _ => ListKind::Resources,
            };
            // The drift guard's judgement: in block mode, what is not as
            // approved is withheld (and its calls refused by the core).
            let entries = match (&m.core.guard, key) {
                (Some(_), "tools" | "prompts" | "resourceTemplates") => {
                    *unjudged.list_mut(key) = entries.clone();
                    judged(m, key, entries)
                }
                _ => entries,
            };
            if first || snap.list(key) != &entries {
                changed.push(kind);
            }
            *snap.list_mut(key) = entries;
        }
        m.snapshot.send_replace(Some(Arc::new(snap)));
    }
    {
        let mut last = m.failed.lock().unwrap_or_else(|p| p.into_inner());
        last.retain(|k| !kinds.contains(k));
        last.extend(failed.iter().copied());
        let mut at = m.listed_at.lock().unwrap_or_else(|p| p.into_inner());
        for k in kinds.iter().filter(|k| !failed.contains(k)) {
            at[k.index()] = Some(std::time::Instant::now());
        }
    }
    // The calls a drift guard held for these changes go on; not those of a
    // listing that failed (its entries left as they were): they wait for a
    // retry (`follow`), refused in block mode when none comes in time.
    for (kind, covered) in covered {
        if !failed.contains(&kind) {
            m.core.judged.judged(kind, covered);
        }
    }
    shared.remerge();
    debug!(upstream = %m.name, first, "upstream listed");
    for &kind in kinds {
        if announce == Announce::IfChanged && !changed.contains(&kind) {
            continue;
        }
        let _ = shared.notices.send(GatewayNotice::ListChanged {
            kind,
            member: m.name.clone(),
        });
    }
}

/// Judges `m`'s last listed tools, prompts and templates again (its drift
/// guard's lock was reloaded), re-merges, and tells the sessions; nothing
/// when it has no guard or was never listed.
fn rejudge(shared: &Arc<Shared>, m: &Member) {
    if m.core.guard.is_none() {
        return;
    }
    {
        let unjudged = m.unjudged.lock().unwrap_or_else(|p| p.into_inner());
        let Some(mut snap) = m.snapshot.borrow().as_deref().cloned() else {
            return;
        };
        snap.tools = judged(m, "tools", unjudged.tools.clone());
        snap.prompts = judged(m, "prompts", unjudged.prompts.clone());
        snap.templates = judged(m, "resourceTemplates", unjudged.templates.clone());
        m.snapshot.send_replace(Some(Arc::new(snap)));
    }
    shared.remerge();
    debug!(upstream = %m.name, "judged again by the reloaded lock");
    for kind in ListKind::ALL {
        let _ = shared.notices.send(GatewayNotice::ListChanged {
            kind,
            member: m.name.clone(),
        });
    }
}

/// `entries` of list `key` as `m`'s drift guard lets them be served.
fn judged(m: &Member, key: &str, entries: Vec<Value>) -> Vec<Value> {
    let kind = match key {
        "prompts" => crate::catalog::pin::Kind::Prompt,
        "resourceTemplates" => crate::catalog::pin::Kind::ResourceTemplate,
        _ => crate::catalog::pin::Kind::Tool,
    };
    let mut result = Map::new();
    result.insert(key.to_owned(), Value::Array(entries));
    let Ok(raw) = serde_json::value::to_raw_value(&result) else {
        return Vec::new();
    };
    // Every page, so a whole list: approved entries it lacks are gone.
    let kept = m.core.filter_list(
        crate::catalog::guard::Scope::Shared,
        kind,
        raw,
        crate::catalog::guard::Asked::FirstPage,
    );
    serde_json::from_str::<Map<String, Value>>(kept.get())
        .ok()
        .and_then(|mut r| match r.remove(key) {
            Some(Value::Array(a)) => Some(a),
            _ => None,
        })
        .unwrap_or_default()
}

/// Whether two optional guards are the same one.
fn same_guard(a: &Option<Arc<crate::DriftGuard>>, b: &Option<Arc<crate::DriftGuard>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// Every tool of `m` (every page, each within its list timeout), through
/// [`Core::tools`](crate::Core): a refusal is an error here.
async fn list_tools(m: &Member) -> Result<Vec<Value>, String> {
    match m.core.tools.refresh(m.upstream(), m.list_timeout).await? {
        crate::catalog::tools::Listed::Tools { tools, .. } => Ok(tools),
        crate::catalog::tools::Listed::Refused(why) => Err(why),
    }
}

/// Every page of `method` on `m` (each within its list timeout), the entries
/// under `key`.
async fn list_all(m: &Member, modern: bool, method: &str, key: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let mut params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        if modern {
            params["_meta"] = json!({
                meta::PROTOCOL_VERSION: ProtocolVersion::V2026_07_28.as_str(),
                meta::CLIENT_CAPABILITIES: crate::relayed_capabilities(),
            });
        }
        let request = Request::new(Id::from(0u64), method, &params).map_err(|e| e.to_string())?;
        // The gateway's own: never an owner of an upstream's log or request.
        let owner = crate::upstream::BRIDGE_OWNER;
        let page = match crate::call_once(m.upstream(), request, owner, m.list_timeout).await {
            Message::Response(r) => serde_json::from_str::<Map<String, Value>>(r.result.get())
                .map_err(|e| format!("an unreadable {method} result: {e}"))?,
            Message::Error(e) => return Err(e.error.message),
            _ => return Err("an unexpected answer".into()),
        };
        if let Some(Value::Array(items)) = page.get(key) {
            out.extend(items.iter().cloned());
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(c) if !c.is_empty() => cursor = Some(c.to_owned()),
            _ => return Ok(out),
        }
    }
    warn!(upstream = %m.name, method, "more than {MAX_PAGES} pages: the rest left out");
    Ok(out)
}
