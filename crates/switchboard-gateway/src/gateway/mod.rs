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
}

impl GatewayUpstream {
    /// An upstream named `name`, prefixed by its name, with the defaults.
    pub fn new(name: impl Into<String>, connector: Connector) -> Self {
        let name = name.into();
        GatewayUpstream {
            prefix: Some(name.clone()),
            name,
            connector,
            list_timeout: Duration::from_secs(10),
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
    /// The listener (address, limits, Host/Origin checks); `path` is replaced
    /// by the first route's and `routes` by the others'.
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
        }
    }
}

/// One upstream at work.
pub(crate) struct Member {
    pub(crate) name: String,
    pub(crate) prefix: Option<String>,
    /// Its bridge core: the upstream, its routing, its shared subscriptions,
    /// held `input_required` calls.
    pub(crate) core: Arc<Core>,
    /// Its listed entries; `None` until first listed.
    pub(crate) snapshot: watch::Sender<Option<Arc<Snapshot>>>,
    pub(crate) list_timeout: Duration,
    /// What the gateway's subscribers hold on it when it speaks 2026-07-28
    /// (asked on its listen stream, module `listen`).
    pub(crate) subscriptions: listen::Subscriptions,
    tasks: Vec<JoinHandle<()>>,
}

impl Member {
    pub(crate) fn upstream(&self) -> &Upstream {
        &self.core.shared
    }
}

/// A route at work.
pub(crate) struct RouteView {
    pub(crate) name: String,
    pub(crate) path: String,
    /// Which members it serves, by index.
    pub(crate) members: Vec<bool>,
    pub(crate) allow: Allowlist,
}

/// The kinds of list a change is announced for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListKind {
    Tools,
    Prompts,
    Resources,
}

impl ListKind {
    pub(crate) fn notification(self) -> &'static str {
        match self {
            ListKind::Tools => t::NOTIFICATION_TOOLS_LIST_CHANGED,
            ListKind::Prompts => t::NOTIFICATION_PROMPTS_LIST_CHANGED,
            ListKind::Resources => t::NOTIFICATION_RESOURCES_LIST_CHANGED,
        }
    }
}

/// What the gateway tells its sessions.
#[derive(Debug, Clone)]
pub(crate) enum GatewayNotice {
    /// A member's list of `kind` changed (after the gateway re-listed it).
    ListChanged { kind: ListKind, member: usize },
    /// `notifications/resources/updated` from a member.
    ResourceUpdated {
        member: usize,
        notification: Notification,
    },
}

/// What the gateway's tasks share.
pub(crate) struct Shared {
    pub(crate) members: Vec<Member>,
    pub(crate) routes: Vec<Arc<RouteView>>,
    merged: RwLock<Arc<Merged>>,
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
}

impl Shared {
    /// The merged catalog now.
    pub(crate) fn merged(&self) -> Arc<Merged> {
        self.merged
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Waits (each up to its list timeout, together) until every member of
    /// `route` has been listed once; those that are not are logged.
    pub(crate) async fn listed(&self, route: &RouteView) {
        let waits = self
            .members
            .iter()
            .enumerate()
            .filter(|(i, m)| route.members[*i] && m.snapshot.borrow().is_none())
            .map(|(_, m)| async move {
                let mut rx = m.snapshot.subscribe();
                let got = tokio::time::timeout(m.list_timeout, rx.wait_for(Option::is_some)).await;
                if got.is_err() {
                    warn!(upstream = %m.name, timeout = ?m.list_timeout, "upstream not listed in time: served without its entries");
                }
            });
        futures_join_all(waits).await;
    }

    /// The route's view of the union of its upstreams' capabilities (those
    /// ready within their list timeout): tools always, each list with
    /// `listChanged` (the gateway relays changes), resource subscriptions
    /// when any upstream has them.
    pub(crate) async fn capabilities(&self, route: &RouteView) -> ServerCapabilities {
        let mut caps = json!({ "tools": { "listChanged": true } });
        for (i, m) in self.members.iter().enumerate() {
            if !route.members[i] {
                continue;
            }
            let Ok(info) = m.upstream().ready(m.list_timeout).await else {
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

    /// Re-merges every member's snapshot, reports new clashes and names that
    /// break the rules, and the allowlists' names nobody lists.
    fn remerge(&self) {
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
        {
            let mut reported = self.reported.lock().unwrap_or_else(|p| p.into_inner());
            for name in &merged.clashes {
                if reported.insert(format!("clash:{name}")) {
                    warn!(name = %name, "two upstreams serve this name: both entries withheld (set a prefix to tell them apart)");
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

    /// Each upstream's state, as `/readyz` reports it: `{name: {"state": ..,
    /// "reason"?: .., "era"?: .., "restarts": n}}`.
    pub(crate) fn readiness(&self) -> Value {
        let mut out = Map::new();
        for m in &self.members {
            let mut v = Map::new();
            match m.upstream().status() {
                Status::Ready(info) => {
                    v.insert("state".into(), "ready".into());
                    let version = if info.modern {
                        ProtocolVersion::V2026_07_28.as_str().to_owned()
                    } else {
                        info.result.protocol_version.clone()
                    };
                    v.insert("protocolVersion".into(), version.into());
                }
                Status::Starting => {
                    v.insert("state".into(), "starting".into());
                }
                Status::Down(why) => {
                    v.insert("state".into(), "down".into());
                    v.insert("reason".into(), why.into());
                }
                Status::Stopped => {
                    v.insert("state".into(), "stopped".into());
                }
            }
            v.insert("restarts".into(), m.upstream().restarts().into());
            v.insert("listed".into(), m.snapshot.borrow().is_some().into());
            out.insert(m.name.clone(), Value::Object(v));
        }
        Value::Object(out)
    }
}

/// Awaits every future (no extra dependency for a handful of waits).
async fn futures_join_all<F: std::future::Future<Output = ()>>(futures: impl Iterator<Item = F>) {
    let mut set = Vec::new();
    for f in futures {
        set.push(Box::pin(f));
    }
    for f in set {
        f.await;
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
    drain_timeout: Duration,
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
    pub async fn start(config: GatewayConfig) -> io::Result<Gateway> {
        let invalid = |why: String| io::Error::new(io::ErrorKind::InvalidInput, why);
        let Some(first) = config.routes.first() else {
            return Err(invalid("a gateway needs at least one route".into()));
        };
        let mut routes = Vec::new();
        for r in &config.routes {
            let mut members = vec![false; config.upstreams.len()];
            for name in &r.upstreams {
                let Some(i) = config.upstreams.iter().position(|u| &u.name == name) else {
                    return Err(invalid(format!(
                        "route {}: unknown upstream {name:?}",
                        r.name
                    )));
                };
                members[i] = true;
            }
            routes.push(Arc::new(RouteView {
                name: r.name.clone(),
                path: r.path.clone(),
                members,
                allow: r.tools.clone(),
            }));
        }
        let draining = Arc::new(AtomicBool::new(false));
        let mut members = Vec::new();
        for u in &config.upstreams {
            let mut bridge = BridgeConfig::new(u.connector.clone());
            bridge.mode = ChildMode::Shared;
            bridge.init_timeout = config.init_timeout;
            bridge.request_timeout = config.request_timeout;
            bridge.drain_timeout = config.drain_timeout;
            bridge.ready_wait = u.list_timeout;
            // 2026-07-28 where the upstream speaks it: its own input_required
            // round trips and capability checks reach modern clients as they
            // are; legacy sessions get them translated (module `session`).
            let (core, tasks) = crate::start_core(
                bridge,
                u.name.clone(),
                draining.clone(),
                crate::upstream::Ask::Discover,
            );
            members.push(Member {
                name: u.name.clone(),
                prefix: u.prefix.clone(),
                core,
                snapshot: watch::Sender::new(None),
                list_timeout: u.list_timeout,
                subscriptions: listen::Subscriptions::default(),
                tasks,
            });
        }
        let (notices, _) = broadcast::channel(1024);
        let shared = Arc::new(Shared {
            members,
            routes,
            merged: RwLock::new(Arc::new(Merged::default())),
            reported: Mutex::new(BTreeSet::new()),
            notices,
            page_size: config.page_size.max(1),
            draining: draining.clone(),
            answers: gauge::Gauge::default(),
            listens: gauge::Gauge::default(),
            request_timeout: config.request_timeout,
        });
        let mut follows = Vec::new();
        for i in 0..shared.members.len() {
            follows.push(tokio::spawn(follow(Arc::downgrade(&shared), i)));
            follows.push(tokio::spawn(listen::upstream_listen(
                Arc::downgrade(&shared),
                i,
            )));
        }
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
                let body = json!({ "ready": r.ready, "upstreams": r.upstreams });
                (r.ready, format!("{body}\n"))
            }
            None => (false, "{\"ready\":false}\n".to_owned()),
        })));
        let (server, mut acceptor) = match HttpServer::bind(http).await {
            Ok(bound) => bound,
            Err(e) => {
                for f in follows {
                    f.abort();
                }
                for m in &shared.members {
                    m.upstream().shutdown(Duration::ZERO).await;
                }
                return Err(e);
            }
        };
        let accept_shared = shared.clone();
        let accept = tokio::spawn(
            async move {
                let _follows = AbortOnDrop(follows);
                while let Some(session) = acceptor.accept().await {
                    let shared = accept_shared.clone();
                    let Some(route) = shared
                        .routes
                        .iter()
                        .find(|r| r.path == session.path)
                        .cloned()
                    else {
                        debug!(path = %session.path, "a session at a path no route has");
                        continue;
                    };
                    let (tx, rx) = session.transport.split();
                    match session.kind {
                        SessionKind::Stateless => {
                            tokio::spawn(exchange::serve(shared, route, tx, rx, session.headers));
                        }
                        _ => {
                            let span = tracing::info_span!("session", id = %session.session_id, route = %route.name);
                            tokio::spawn(session::serve(shared, route, tx, rx).instrument(span));
                        }
                    }
                }
            }
            .instrument(tracing::info_span!("gateway")),
        );
        for r in &shared.routes {
            info!(route = %r.name, url = %server.url_of(&r.path), "gateway route listening");
        }
        Ok(Gateway {
            server: Some(server),
            shared,
            accept,
            drain_timeout: config.drain_timeout,
        })
    }

    /// The address bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.server.as_ref().expect("serving").local_addr()
    }

    /// The URL of the route at `path` (`http://<addr><path>`).
    pub fn url_of(&self, path: &str) -> String {
        self.server.as_ref().expect("serving").url_of(path)
    }

    /// Whether it serves, and each upstream's state.
    pub fn readiness(&self) -> GatewayReadiness {
        readiness_of(&self.shared)
    }

    /// Drains (up to the drain timeout), ends every upstream in the spec's
    /// order, then stops serving HTTP.
    pub async fn shutdown(mut self) {
        if let Some(server) = &self.server {
            server.refuse_new_sessions();
        }
        self.shared.draining.store(true, Ordering::Relaxed);
        let deadline = tokio::time::Instant::now() + self.drain_timeout;
        let _ = tokio::time::timeout_at(deadline, async {
            for m in &self.shared.members {
                m.upstream().drained(self.drain_timeout).await;
            }
        })
        .await;
        for m in &self.shared.members {
            for t in &m.tasks {
                t.abort();
            }
            m.upstream().shutdown(Duration::ZERO).await;
        }
        // Every answer but the open listens' is sent before the connections
        // close; the listens then get their final result.
        if !self
            .shared
            .answers
            .down_to(&self.shared.listens, crate::CLOSE_GRACE)
            .await
        {
            warn!("answers still unsent after the close grace");
        }
        if let Some(server) = self.server.take() {
            let cut = server.shutdown(crate::CLOSE_GRACE).await;
            if cut > 0 {
                warn!(cut, "connections cut at the end of the close grace");
            }
        }
        self.shared.answers.drained(Duration::from_secs(1)).await;
        self.accept.abort();
        info!("gateway stopped");
    }
}

fn readiness_of(shared: &Shared) -> GatewayReadiness {
    let upstreams = shared.readiness();
    let any_ready = shared
        .members
        .iter()
        .any(|m| matches!(m.upstream().status(), Status::Ready(_)));
    GatewayReadiness {
        ready: any_ready && !shared.draining.load(Ordering::Relaxed),
        upstreams,
    }
}

struct AbortOnDrop(Vec<JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}

/// The most pages of one upstream list walked: 1,000.
const MAX_PAGES: usize = 1000;

/// Keeps member `index`'s snapshot: every list at each (re)connection, one
/// list again at its `list_changed`; relays its resource updates.
async fn follow(shared: Weak<Shared>, index: usize) {
    let (mut status, mut notes) = {
        let Some(s) = shared.upgrade() else { return };
        let up = s.members[index].upstream();
        (up.watch_status(), up.subscribe())
    };
    let mut handled: Option<u64> = None;
    loop {
        let ready = matches!(&*status.borrow_and_update(), Status::Ready(_));
        {
            let Some(s) = shared.upgrade() else { return };
            let generation = s.members[index].upstream().restarts();
            if ready && handled != Some(generation) {
                handled = Some(generation);
                relist(
                    &s,
                    index,
                    &[ListKind::Tools, ListKind::Prompts, ListKind::Resources],
                )
                .await;
            }
        }
        tokio::select! {
            changed = status.changed() => if changed.is_err() { return },
            note = notes.recv() => {
                let Some(s) = shared.upgrade() else { return };
                match note {
                    Ok(n) => listen::on_upstream_notification(&s, index, n).await,
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        relist(&s, index, &[ListKind::Tools, ListKind::Prompts, ListKind::Resources]).await;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        }
    }
}

/// Lists `kinds` of member `index` again, re-merges, and tells the sessions.
pub(crate) async fn relist(shared: &Arc<Shared>, index: usize, kinds: &[ListKind]) {
    let m = &shared.members[index];
    let Ok(info) = m.upstream().ready(Duration::ZERO).await else {
        return;
    };
    let caps = &info.result.capabilities;
    let mut snap: Snapshot = m.snapshot.borrow().as_deref().cloned().unwrap_or_default();
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
        for &(method, key) in lists {
            let entries = if wanted {
                match list_all(m, info.modern, method, key).await {
                    Ok(e) => e,
                    Err(why) => {
                        warn!(upstream = %m.name, method, %why, "listing failed: its entries are left as they were");
                        continue;
                    }
                }
            } else {
                Vec::new()
            };
            match key {
                "tools" => snap.tools = entries,
                "prompts" => snap.prompts = entries,
                "resources" => snap.resources = entries,
                _ => snap.templates = entries,
            }
        }
    }
    let first = m.snapshot.borrow().is_none();
    m.snapshot.send_replace(Some(Arc::new(snap)));
    shared.remerge();
    debug!(upstream = %m.name, first, "upstream listed");
    for &kind in kinds {
        let _ = shared.notices.send(GatewayNotice::ListChanged {
            kind,
            member: index,
        });
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
                meta::CLIENT_CAPABILITIES: {},
            });
        }
        let request = Request::new(Id::from(0u64), method, &params).map_err(|e| e.to_string())?;
        let owner = m.core.next_owner();
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
