//! # switchboard-gateway
//!
//! Today the bridge, a gateway with one upstream: serves one stdio MCP server
//! to HTTP clients of every era at once — the sidecar that gives a pipe-only
//! server a network endpoint:
//!
//! | client era | where | served by |
//! |---|---|---|
//! | 2024-11-05 HTTP+SSE | `GET /sse`, `POST /message?sessionId=` | a session (module `downstream::session`) |
//! | 2025-03-26 to 2025-11-25 Streamable HTTP | `/mcp` with `Mcp-Session-Id` | a session (module `downstream::session`) |
//! | 2026-07-28 stateless | `/mcp`, one POST per request | an exchange (module `downstream::exchange`) |
//!
//! ```text
//!   HTTP clients ──> HttpServer (switchboard-transport) ──> SessionAcceptor
//!        session (legacy era) ──> session::serve ──> its own child   (ChildMode::PerSession)
//!                                               └─> the shared child (ChildMode::Shared)
//!        exchange (2026-07-28) ──> exchange::serve ──> the shared child (era translation, MRTR)
//!   each child: upstream::Upstream (spawned, initialized, supervised; the shared child
//!               restarted with backoff, a session's own child not: its death ends the session)
//! ```
//!
//! A per-session child that dies is not restarted: the server state it held for
//! its session (`initialize`, subscriptions, log level) is gone, so the session
//! ends as on DELETE (its calls in flight fail at once with the reason; later
//! requests on it get 404, a legacy SSE stream closes) and the client starts a
//! new session with a fresh `initialize` (Streamable HTTP, "Session
//! Management"). The shared child belongs to the bridge and is restarted with
//! backoff.
//!
//! The shared child always runs (in per-session mode it serves the stateless
//! 2026-07-28 exchanges, which have no session to own a child, and it is what
//! [`Bridge::readiness`] and the allowlist's drift check look at).
//!
//! This crate must not know about tools' meaning, bytes or framing (the transport
//! crate), nor about the command line (the `switchboard` binary).
#![deny(missing_docs)]

pub mod audit;
mod catalog;
mod classify;
mod connect;
mod downstream;
mod error;
mod gateway;
mod gauge;
mod live_page;
pub mod metrics;
mod policy;
mod raw;
pub mod trace;
mod upstream;

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

pub use catalog::guard::{DriftCounts, DriftGuard, GuardMode, Scope, Verdicts};
pub use catalog::pin;
pub use connect::{
    connect_stdio, relay_from, ConnectConfig, ConnectEnd, CONNECT_DRAIN_ON_CLOSE,
    CONNECT_FLUSH_BOUND,
};
pub use gateway::{Gateway, GatewayConfig, GatewayReadiness, GatewayRoute, GatewayUpstream};
pub use policy::Allowlist;
use serde_json::json;
use serde_json::value::RawValue;
use switchboard_protocol::jsonrpc::{ErrorResponse, Id, Message, Request, Response};
use switchboard_protocol::types::LoggingLevel;
use switchboard_protocol::version::Supported;
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::http::server::{
    HealthProbe, HealthReport, HttpServer, HttpServerConfig, SessionKind,
};
use switchboard_transport::{Sender, TransportConfig};
use tokio::task::JoinHandle;
use tracing::{info, warn, Instrument};
pub use upstream::Connector;

use crate::downstream::exchange::Held;
use crate::upstream::{Ask, Restart, Status, Upstream, UpstreamConfig};

/// How a stdio upstream's children are given to downstream sessions: the
/// bridge's `--child`, a gateway upstream's `child` (one enum for both, and
/// the same behaviour in both). The default differs by front door and is
/// said where it is set: per session for the bridge
/// ([`BridgeConfig::new`]), shared for a gateway upstream
/// ([`GatewayUpstream::new`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChildMode {
    /// One child for everyone, initialized by the bridge or gateway; request
    /// ids and progress tokens are remapped so clients never collide;
    /// restarted with backoff when it dies.
    Shared,
    /// Each legacy session gets its own child, started with the client's own
    /// `initialize` params and ended with the session. When it dies the
    /// session ends too (its next request gets 404; the client starts over
    /// with a fresh `initialize`): the server state it held (`initialize`,
    /// subscriptions, log level) died with it (Streamable HTTP, "Session
    /// Management").
    PerSession,
    /// As [`PerSession`](Self::PerSession), but a child that dies is
    /// restarted with backoff under the session, initialized again with the
    /// client's `initialize` params, and the session goes on: the server
    /// state it held is lost without the client being told. Opt-in, for
    /// servers known to hold no state per session.
    PerSessionRespawn,
}

impl ChildMode {
    /// Every value, in the order of [`ChildMode::as_str`]'s names.
    pub const ALL: [ChildMode; 3] = [
        ChildMode::PerSession,
        ChildMode::Shared,
        ChildMode::PerSessionRespawn,
    ];

    /// Whether each session gets a child of its own.
    pub fn per_session(self) -> bool {
        !matches!(self, ChildMode::Shared)
    }

    /// Its name on the command line and in configuration files:
    /// `per-session`, `shared`, `per-session-respawn`.
    pub fn as_str(self) -> &'static str {
        match self {
            ChildMode::Shared => "shared",
            ChildMode::PerSession => "per-session",
            ChildMode::PerSessionRespawn => "per-session-respawn",
        }
    }

    /// Whether a session's own child is restarted when it dies (only
    /// [`PerSessionRespawn`](Self::PerSessionRespawn)); otherwise its death
    /// ends the session.
    pub(crate) fn session_child_restart(self) -> Restart {
        match self {
            ChildMode::PerSessionRespawn => Restart::Always,
            ChildMode::Shared | ChildMode::PerSession => Restart::Never,
        }
    }
}

impl std::fmt::Display for ChildMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ChildMode {
    type Err = String;

    /// One of [`ChildMode::as_str`]'s names; errors name the others.
    fn from_str(s: &str) -> Result<Self, String> {
        ChildMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = ChildMode::ALL.iter().map(|m| m.as_str()).collect();
                format!("unknown child mode {s:?}: one of {}", names.join(", "))
            })
    }
}

/// Everything [`Bridge::start`] needs. Every field documents its default.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BridgeConfig {
    /// The upstream server: a stdio child to run (command, args, env, working
    /// directory, shutdown graces), or a remote one over Streamable HTTP or
    /// legacy HTTP+SSE, its era found by the handshake.
    pub upstream: Connector,
    /// The HTTP side: address (default 127.0.0.1, OS port), path (`/mcp`), legacy
    /// SSE paths, limits (`max_sessions`, beyond which a new session evicts the
    /// least recently used idle one, and its child, or gets 503 when none is
    /// idle; the session idle timeout), Host/Origin allowlists.
    pub http: HttpServerConfig,
    /// Per-session children or one shared child. Default
    /// [`ChildMode::PerSession`].
    pub mode: ChildMode,
    /// Tools the clients may see and call. Default [`Allowlist::All`].
    pub allow_tools: Allowlist,
    /// The drift guard (`--lock`): tools judged against an approved lock.
    /// Default none.
    pub drift_guard: Option<Arc<DriftGuard>>,
    /// The children's pipes: queue sizes and the line limit (default 16 MiB).
    pub transport: TransportConfig,
    /// How long a child has to answer `initialize`. Default 30 s.
    pub init_timeout: Duration,
    /// How long a request waits for a (re)starting child before failing; with
    /// a drift guard, also the longest a `tools/call` or `prompts/get` is held
    /// for a list change its child announced to be re-listed and judged.
    /// Default 10 s.
    pub ready_wait: Duration,
    /// The first restart delay after the shared child dies, doubled on each
    /// failure up to [`backoff_max`](Self::backoff_max). Default 200 ms. (A
    /// session's own child is not restarted: its session ends.)
    pub backoff_initial: Duration,
    /// The longest restart delay. Default 30 s.
    pub backoff_max: Duration,
    /// How long a request may go without any word from the child (its response,
    /// or a progress or log notification, or a request of its own) before the
    /// bridge gives up on it: the client gets -32603 and the child
    /// `notifications/cancelled`. Default 5 min.
    pub request_timeout: Duration,
    /// The most requests in flight on one child at once; more wait for a free
    /// slot (up to [`request_timeout`](Self::request_timeout)) instead of reaching
    /// a child that may refuse them. Default 64.
    pub max_in_flight: usize,
    /// How long [`Bridge::shutdown`] waits for requests in flight. Default 10 s.
    pub drain_timeout: Duration,
    /// How long a call held for an `input_required` round trip waits for the
    /// client's retry before it is cancelled upstream. Default 5 min.
    pub held_call_timeout: Duration,
}

impl BridgeConfig {
    /// The defaults, for `upstream`.
    pub fn new(upstream: Connector) -> Self {
        BridgeConfig {
            upstream,
            http: HttpServerConfig::default(),
            mode: ChildMode::PerSession,
            allow_tools: Allowlist::default(),
            drift_guard: None,
            transport: TransportConfig::default(),
            init_timeout: Duration::from_secs(30),
            ready_wait: Duration::from_secs(10),
            backoff_initial: Duration::from_millis(200),
            backoff_max: Duration::from_secs(30),
            request_timeout: Duration::from_secs(300),
            max_in_flight: 64,
            drain_timeout: Duration::from_secs(10),
            held_call_timeout: Duration::from_secs(300),
        }
    }
}

/// A client's list request (`tools/list`, `prompts/list`,
/// `resources/templates/list`), kept until its answer is judged
/// ([`Core::filter_list`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ListRequest {
    /// What the list holds.
    pub(crate) kind: pin::Kind,
    /// It asked for a `cursor`.
    later_page: bool,
    /// The upstream's count of announced changes of the list
    /// ([`Upstream::list_changes`]) before the request was sent.
    changes: u64,
}

impl ListRequest {
    /// `None` for a request that lists nothing filtered. Made before the
    /// request is sent to `upstream`.
    pub(crate) fn of(
        route: classify::Route,
        params: Option<&RawValue>,
        upstream: &Upstream,
    ) -> Option<Self> {
        let kind = route.listed()?;
        let later_page = params
            .and_then(|p| raw::RawObject::parse(p.get()).ok())
            .and_then(|o| o.get("cursor").map(|c| c.get() != "null"))
            .unwrap_or(false);
        let changes = classify::ListKind::of(kind).map_or(0, |l| upstream.list_changes(l));
        Some(ListRequest {
            kind,
            later_page,
            changes,
        })
    }

    /// How it was asked, for the drift guard, now that `upstream` answered.
    pub(crate) fn asked(&self, upstream: &Upstream) -> catalog::guard::Asked {
        let now = classify::ListKind::of(self.kind).map_or(0, |l| upstream.list_changes(l));
        catalog::guard::Asked::of(self.later_page, self.changes, now)
    }
}

/// What the bridge's tasks share.
pub(crate) struct Core {
    pub(crate) mode: ChildMode,
    pub(crate) allow: Allowlist,
    pub(crate) guard: Option<Arc<DriftGuard>>,
    pub(crate) init_timeout: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) shared: Upstream,
    pub(crate) held: Mutex<HashMap<String, Held>>,
    /// The shared child's tools' `x-mcp-header` annotations, for the
    /// `Mcp-Param-*` checks of 2026-07-28 `tools/call` requests (module `catalog::tools`).
    pub(crate) tools: catalog::tools::ToolHeaders,
    /// How many of the shared child's announced list changes have been
    /// re-listed and judged: what a call with a drift guard waits for
    /// ([`Core::check_judged_request`], module `catalog::changes`). A
    /// session's own child's are counted by its session (module
    /// `downstream::session`).
    pub(crate) judged: catalog::changes::Judged,
    /// Resource subscriptions on the shared child: URI → how many downstream
    /// subscribers (legacy sessions of a shared child, 2026-07-28 listen
    /// streams) hold one ([`Core::shared_subscription`]).
    subscriptions: tokio::sync::Mutex<HashMap<String, usize>>,
    /// The shared child's restart count when it was last asked for every log
    /// message (`logging/setLevel` `debug`), plus one; 0: never
    /// ([`Core::shared_child_logs_everything`]).
    child_logs_all: AtomicU64,
    /// Open 2026-07-28 listen streams: [`Bridge::shutdown`] lets them send
    /// their final result.
    pub(crate) listens: gauge::Gauge,
    /// Downstream work that may still send an answer: each call a session
    /// forwarded (its pump) and each stateless exchange, listens included
    /// ([`Core::answering`]).
    answers: gauge::Gauge,
    /// Set by [`Bridge::shutdown`]: `/readyz` answers 503 from then on.
    draining: Arc<AtomicBool>,
    config: BridgeConfig,
    owners: AtomicU64,
    /// The sessions' own children, for the drain and the shutdown.
    live: Mutex<Live<Upstream>>,
}

/// The `/readyz` body of bridge and gateway alike: `{"ready": bool,
/// "draining"?: true, "upstreams": {NAME: {"state", "reason"?,
/// "protocolVersion"?, "restarts", "drift"?, "listed"? (gateway)}}}`, a line.
pub(crate) fn readiness_body(ready: bool, draining: bool, upstreams: serde_json::Value) -> String {
    let mut body = serde_json::json!({ "ready": ready, "upstreams": upstreams });
    if draining {
        body["draining"] = true.into();
    }
    format!("{body}\n")
}

impl Core {
    /// Its shared upstream's part of `/readyz` ([`readiness_body`]).
    pub(crate) fn readiness(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut v = self.shared.report();
        v.insert("restarts".into(), self.shared.restarts().into());
        if let Some(guard) = &self.guard {
            v.insert("drift".into(), serde_json::json!(guard.counts()));
        }
        v
    }

    /// What the live page shows of the bridge serving at `path` (module
    /// `live_page`): a gateway of one upstream and one route, its tools as
    /// the shared child last listed them, judged by the drift guard.
    fn live_view(&self, path: &str) -> serde_json::Value {
        let up = &self.shared;
        let name = up.label();
        let mut upstream = up.report();
        upstream.insert("name".into(), name.into());
        upstream.insert("transport".into(), up.transport().into());
        let tools: Vec<serde_json::Value> = up
            .tool_names()
            .iter()
            .map(|tool| {
                let drift = self.guard.as_ref().map_or(policy::Drift::Unguarded, |g| {
                    g.drift_of(Scope::Shared, pin::Kind::Tool, tool)
                });
                let blocked = matches!(drift, policy::Drift::Drifted { block: true, .. });
                let served = self.allow.permits(tool) && !blocked;
                live_page::tool(name, tool, served, drift)
            })
            .collect();
        serde_json::json!({
            "kind": "bridge",
            "upstreams": [upstream],
            "routes": [{"name": "bridge", "path": path, "upstreams": [name], "allow": self.allow.names()}],
            "tools": tools,
        })
    }
}

/// How a request policy let through was judged ([`Core::check_request`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub(crate) enum Passed {
    /// As approved, or nothing to judge.
    Clean,
    /// Not as approved, served in warn mode: its record says so
    /// ([`downstream::watch::Tx::drifted`]).
    Drifted,
}

/// Whose announced list changes a use of an entry waits for, and how many
/// of them re-lists have judged (module `catalog::changes`): the shared
/// child's ([`Core::shared_judging`]) or a session's own child's (module
/// `downstream::session`, which keeps its own counts).
#[derive(Clone, Copy)]
pub(crate) struct Judging<'a> {
    /// The upstream whose changes are counted ([`Upstream::list_changes`]).
    pub(crate) upstream: &'a Upstream,
    /// What its re-lists have judged.
    pub(crate) judged: &'a catalog::changes::Judged,
}

impl Judging<'_> {
    /// The lists of `among` with announced changes not judged yet (a re-list
    /// failed or is under way).
    pub(crate) fn unjudged_lists(&self, among: &[classify::ListKind]) -> Vec<classify::ListKind> {
        among
            .iter()
            .copied()
            .filter(|&l| self.judged.pending(l, self.upstream.list_changes(l)))
            .collect()
    }
}

/// The smallest [`Live`] list that is pruned: 64 entries.
const LIVE_PRUNE_MIN: usize = 64;

/// A list of things that end on their own (the sessions' own children), which
/// forgets the ended ones in amortized constant time per addition: a push
/// prunes the list only once it has doubled since the last prune (and holds
/// at least [`LIVE_PRUNE_MIN`]). Pruning at every push made starting a
/// session's child cost a look at every other one, a cost that grew with the
/// sessions held (issue 21: 2,000 status checks per spawn at 2,000 sessions).
/// At most about twice as many entries as live ones are kept.
#[derive(Debug)]
pub(crate) struct Live<T> {
    items: Vec<T>,
    /// The length after the last prune.
    pruned_len: usize,
}

impl<T> Default for Live<T> {
    fn default() -> Self {
        Live {
            items: Vec::new(),
            pruned_len: 0,
        }
    }
}

impl<T> Live<T> {
    /// Adds `item`, first forgetting the entries `ended` says are over when a
    /// prune is due.
    fn push(&mut self, item: T, ended: impl Fn(&T) -> bool) {
        if self.items.len() >= (2 * self.pruned_len).max(LIVE_PRUNE_MIN) {
            self.items.retain(|i| !ended(i));
            self.pruned_len = self.items.len();
        }
        self.items.push(item);
    }

    fn iter(&self) -> std::slice::Iter<'_, T> {
        self.items.iter()
    }

    /// Takes every entry out.
    fn take(&mut self) -> Vec<T> {
        self.pruned_len = 0;
        std::mem::take(&mut self.items)
    }
}

/// Why a request is judged ([`Core::check_request`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Look {
    /// It goes, or is refused, by the outcome: a drift is logged and counted.
    Use,
    /// A look ahead at which way it will take: nothing logged or counted.
    Ahead,
}

impl Core {
    /// Whether a request may reach the upstream: for `tools/call` the
    /// allowlist, then for it and `prompts/get` the drift guard; a refusal is
    /// [`error::Error::Refused`]; let through, whether it drifted (warn mode).
    pub(crate) fn check_request(
        &self,
        scope: catalog::guard::Scope<'_>,
        route: classify::Route,
        params: Option<&RawValue>,
    ) -> Result<Passed, error::Error> {
        self.judge_request(scope, route, params, Look::Use)
    }

    /// Whether [`Core::check_request`] would let the request go, with
    /// nothing logged or counted: a look ahead at which way it will take.
    pub(crate) fn would_pass(
        &self,
        scope: catalog::guard::Scope<'_>,
        route: classify::Route,
        params: Option<&RawValue>,
    ) -> bool {
        self.judge_request(scope, route, params, Look::Ahead)
            .is_ok()
    }

    fn judge_request(
        &self,
        scope: catalog::guard::Scope<'_>,
        route: classify::Route,
        params: Option<&RawValue>,
        look: Look,
    ) -> Result<Passed, error::Error> {
        let Some(kind) = route.used() else {
            return Ok(Passed::Clean);
        };
        let allow = match kind {
            pin::Kind::Tool => &self.allow,
            _ => &Allowlist::All,
        };
        if self.guard.is_none() && !allow.is_restricted() {
            return Ok(Passed::Clean);
        }
        // Read once for the allowlist and the guard.
        let name = policy::params_name(params);
        let drift = match (&self.guard, name.as_deref()) {
            (Some(guard), Some(name)) => guard.drift_of(scope, kind, name),
            _ => policy::Drift::Unguarded,
        };
        let drifted = matches!(drift, policy::Drift::Drifted { .. });
        let decision = policy::decide(allow, kind, name.as_deref(), drift);
        if let (Look::Use, Some(guard), Some(name)) = (look, &self.guard, name.as_deref()) {
            match &decision {
                policy::Decision::Warn { why } => guard.note_drifted_use(kind, name, why),
                policy::Decision::Deny(policy::Deny::Drifted(why)) if drifted => {
                    guard.note_drifted_use(kind, name, why)
                }
                _ => {}
            }
        }
        match decision {
            policy::Decision::Allow => Ok(Passed::Clean),
            policy::Decision::Warn { .. } => Ok(Passed::Drifted),
            policy::Decision::Deny(deny) => {
                if let (Look::Use, Some(m)) = (look, metrics::get()) {
                    m.refused(self.shared.label(), deny.refusal());
                }
                Err(deny.into())
            }
        }
    }

    /// The shared child's [`Judging`]: its announced list changes, and its
    /// follower's (or a gateway's re-list's) judgement of them.
    pub(crate) fn shared_judging(&self) -> Judging<'_> {
        Judging {
            upstream: &self.shared,
            judged: &self.judged,
        }
    }

    /// The list whose announced changes a request of `route` must wait for
    /// before it is checked: with a drift guard, for a use of an entry
    /// (`tools/call`, `prompts/get`), when the upstream of `judging`
    /// announced a change of its list that no finished re-list has judged
    /// yet (module `catalog::changes`). `None` (the request goes on at once)
    /// otherwise, and always without a guard.
    pub(crate) fn unjudged(
        &self,
        judging: Judging<'_>,
        route: classify::Route,
    ) -> Option<classify::ListKind> {
        self.guard.as_ref()?;
        let list = classify::ListKind::of(route.used()?)?;
        let announced = judging.upstream.list_changes(list);
        judging.judged.pending(list, announced).then_some(list)
    }

    /// Waits until every change of `list` the upstream of `judging`
    /// announced has been re-listed and judged, at most
    /// [`BridgeConfig::ready_wait`]. Errors: not judged by then, in block
    /// mode ([`DriftGuard::unjudged_change`]).
    pub(crate) async fn wait_judged(
        &self,
        judging: Judging<'_>,
        list: classify::ListKind,
    ) -> Result<(), error::Error> {
        let announced = judging.upstream.list_changes(list);
        let wait = self.config.ready_wait;
        if judging.judged.wait(list, announced, wait).await {
            return Ok(());
        }
        match &self.guard {
            Some(guard) => guard
                .unjudged_change(list.plural(), judging.upstream.name(), wait)
                .map_err(|why| error::Error::Refused(metrics::Refusal::Drift, why)),
            None => Ok(()),
        }
    }

    /// [`Core::check_request`] of a request to the shared child
    /// (`Scope::Shared`), judged on a list that saw every change it
    /// announced (with a guard: see [`Core::unjudged`]).
    pub(crate) async fn check_judged_request(
        &self,
        route: classify::Route,
        params: Option<&RawValue>,
    ) -> Result<Passed, error::Error> {
        if let Some(list) = self.unjudged(self.shared_judging(), route) {
            self.wait_judged(self.shared_judging(), list).await?;
        }
        self.check_request(catalog::guard::Scope::Shared, route, params)
    }

    /// The `instructions` clients are served for the upstream's own: with a
    /// drift guard, its judgement ([`DriftGuard::instructions`]).
    pub(crate) fn served_instructions(&self, served: Option<&str>) -> Option<String> {
        match &self.guard {
            Some(guard) => guard.instructions(served),
            None => served.map(str::to_owned),
        }
    }

    /// An `initialize` result (raw) with the instructions clients are served:
    /// unchanged (not even parsed) without a drift guard.
    pub(crate) fn with_served_instructions(
        &self,
        result: Box<RawValue>,
    ) -> Result<Box<RawValue>, error::Error> {
        if self.guard.is_none() {
            return Ok(result);
        }
        let mut value: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(result.get())
                .map_err(|e| error::Error::Upstream(e.to_string()))?;
        let own = value
            .get("instructions")
            .and_then(|v| v.as_str())
            .map(str::to_owned);
        match self.served_instructions(own.as_deref()) {
            Some(text) => value.insert("instructions".to_owned(), serde_json::Value::String(text)),
            None => value.remove("instructions"),
        };
        serde_json::value::to_raw_value(&value).map_err(|e| error::Error::Internal(e.to_string()))
    }

    /// A list result as clients see it (`kind`: what the list holds, asked
    /// as `asked`): for each kind the drift guard's judgement, then for tools
    /// the allowlist's intersection. The guard sees the list as the upstream
    /// answered it, so that a tool left out by the allowlist is not taken
    /// for one the server no longer lists.
    pub(crate) fn filter_list(
        &self,
        scope: catalog::guard::Scope<'_>,
        kind: pin::Kind,
        result: Box<RawValue>,
        asked: catalog::guard::Asked,
    ) -> Box<RawValue> {
        let result = match &self.guard {
            Some(guard) => guard.filter_list_result(scope, kind, result, asked),
            None => result,
        };
        if kind == pin::Kind::Tool {
            self.allow.filter_list_result(result)
        } else {
            result
        }
    }

    /// Counts a task that answers a downstream request on `tx` in
    /// [`Core::answers`] while the returned value lives (and in `also`, a
    /// session's own count, when given).
    pub(crate) fn answering(&self, tx: &Sender, also: Option<&gauge::Gauge>) -> Answering {
        Answering {
            tx: tx.clone(),
            draining: self.draining.clone(),
            counted: Some((self.answers.enter(), also.map(gauge::Gauge::enter))),
        }
    }

    /// A fresh owner id for a session or exchange (from 1: 0 is
    /// [`upstream::BRIDGE_OWNER`], the bridge's own calls).
    pub(crate) fn next_owner(&self) -> u64 {
        self.owners.fetch_add(1, Ordering::Relaxed)
    }

    /// The revisions the bridge serves: all five.
    pub(crate) fn supported(&self) -> Supported {
        Supported::new(ProtocolVersion::ALL).expect("not empty")
    }

    /// Starts a session's own child, initialized with the client's params; its
    /// requests made while no call is in flight go to `orphans` (and its
    /// cancellations of those). Restarted when it dies only in
    /// [`ChildMode::PerSessionRespawn`]; otherwise the session ends instead
    /// (`downstream::session::serve`, `gateway::session::serve`).
    pub(crate) fn start_session_child(
        &self,
        init_params: Box<RawValue>,
        orphans: Option<tokio::sync::mpsc::Sender<upstream::CallEvent>>,
    ) -> Upstream {
        let name = format!("{}#{}", self.config.upstream.name(), self.next_owner());
        let up = Upstream::start(
            upstream_config(
                &self.config,
                name,
                init_params,
                Ask::Initialize,
                self.mode.session_child_restart(),
            ),
            orphans,
        );
        lock(&self.live).push(up.clone(), Upstream::is_stopped);
        up
    }

    /// Keeps `held` for a retry under `handle`; cancels it upstream if no retry
    /// takes it within the configured time.
    pub(crate) fn hold(self: &Arc<Self>, handle: String, held: Held) {
        lock(&self.held).insert(handle.clone(), held);
        let core: Weak<Core> = Arc::downgrade(self);
        let wait = self.config.held_call_timeout;
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            let Some(core) = core.upgrade() else { return };
            let expired = lock(&core.held).remove(&handle);
            if let Some(held) = expired {
                warn!(
                    "an input_required round trip was not completed in time; cancelling the call"
                );
                held.cancel().await;
            }
        });
    }

    /// One downstream subscriber's `resources/subscribe` (`subscribe`) or
    /// `resources/unsubscribe` of `uri` on the shared child, which many
    /// subscribers share: the child is asked (`ask`, whose answer is returned)
    /// only for the first subscriber and the last one leaving; otherwise the
    /// count changes here and `None` says "done, answer `{}`". `mine`: whether
    /// this subscriber holds a subscription to `uri` already. Without this,
    /// one session's `resources/unsubscribe` (or a listen stream's end) ended
    /// every other session's subscription to the same resource.
    pub(crate) async fn shared_subscription<F, Fut>(
        &self,
        uri: &str,
        subscribe: bool,
        mine: bool,
        ask: F,
    ) -> Option<Message>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Message>,
    {
        // Held while the child is asked, so that its subscribe and unsubscribe
        // for a URI reach it in the order the counts changed.
        let mut counts = self.subscriptions.lock().await;
        let count = counts.get(uri).copied().unwrap_or(0);
        match (subscribe, mine) {
            (true, true) => None,
            (true, false) if count > 0 => {
                counts.insert(uri.to_owned(), count + 1);
                None
            }
            (true, false) => {
                let answer = ask().await;
                if matches!(answer, Message::Response(_)) {
                    counts.insert(uri.to_owned(), 1);
                }
                Some(answer)
            }
            // Not this subscriber's: others' subscriptions stay.
            (false, false) if count > 0 => None,
            (false, false) => Some(ask().await),
            (false, true) if count > 1 => {
                counts.insert(uri.to_owned(), count - 1);
                None
            }
            (false, true) => {
                counts.remove(uri);
                Some(ask().await)
            }
        }
    }

    /// Asks the shared child (once per start of it) to send every log message
    /// (`logging/setLevel` `debug`): with one child for many clients, the
    /// level each asked for is applied by the bridge, per session and per
    /// 2026-07-28 request, never by the child, where the last client to set
    /// one would set it for everyone. Nothing for a child without the
    /// `logging` capability or of 2026-07-28 only.
    pub(crate) async fn shared_child_logs_everything(&self, owner: u64) {
        let Ok(info) = self.shared.ready(Duration::ZERO).await else {
            return;
        };
        if info.modern || info.result.capabilities.logging.is_none() {
            return;
        }
        let generation = self.shared.restarts() + 1;
        if self.child_logs_all.swap(generation, Ordering::Relaxed) == generation {
            return;
        }
        let Ok(request) = Request::new(
            Id::from(0u64),
            switchboard_protocol::types::LOGGING_SET_LEVEL,
            &json!({ "level": "debug" }),
        ) else {
            return;
        };
        if let Message::Error(e) =
            call_once(&self.shared, request, owner, self.request_timeout).await
        {
            warn!(error = %e.error.message, "the shared child refused logging/setLevel");
            self.child_logs_all.store(0, Ordering::Relaxed);
        }
    }

    /// Ends every session's own child in the spec's order (a gateway's
    /// upstream retiring; the bridge ends them in its shutdown).
    pub(crate) async fn stop_session_children(&self) {
        let live: Vec<Upstream> = lock(&self.live).take();
        for up in live {
            up.shutdown(Duration::ZERO).await;
        }
    }

    /// Its children: the shared one and the sessions' own.
    fn children(&self) -> Vec<Upstream> {
        std::iter::once(self.shared.clone())
            .chain(lock(&self.live).iter().cloned())
            .collect()
    }

    /// Ends its work once drained: its drift guard's counts logged (as
    /// `name`'s), its held `input_required` calls cancelled, every child
    /// ended in the spec's order.
    async fn stop(&self, name: &str) {
        if let Some(guard) = &self.guard {
            // Its shared child's and every session's own children's.
            guard.log_counts(name);
        }
        let held: Vec<Held> = lock(&self.held).drain().map(|(_, h)| h).collect();
        for h in held {
            h.cancel().await;
        }
        let live: Vec<Upstream> = lock(&self.live).take();
        let stops: Vec<_> = live
            .into_iter()
            .map(|up| tokio::spawn(async move { up.shutdown(Duration::ZERO).await }))
            .collect();
        self.shared.shutdown(Duration::ZERO).await;
        for s in stops {
            let _ = s.await;
        }
    }

    /// Calls in flight on every child.
    fn in_flight(&self) -> usize {
        let mut n = self.shared.in_flight();
        for up in lock(&self.live).iter() {
            n += up.in_flight();
        }
        n
    }
}

/// The final result of a listen stream the server ends (2026-07-28
/// `subscriptions/listen`: `{resultType: "complete", _meta: {subscriptionId}}`
/// under the listen request's id).
pub(crate) fn listen_final_result(id: &Id) -> Message {
    let sub_id = serde_json::to_value(id).unwrap_or(serde_json::Value::Null);
    let done = json!({
        "resultType": "complete",
        "_meta": { switchboard_protocol::types::meta::SUBSCRIPTION_ID: sub_id },
    });
    match Response::new(id.clone(), &done) {
        Ok(r) => Message::Response(r),
        Err(e) => error::Error::Internal(e.to_string()).answer(id.clone()),
    }
}

/// Whether log message `n` (`notifications/message`) is at least as severe as
/// `min`; a message whose level cannot be read is let through.
pub(crate) fn log_at_least(
    n: &switchboard_protocol::jsonrpc::Notification,
    min: LoggingLevel,
) -> bool {
    let level = n
        .params
        .as_ref()
        .and_then(|p| {
            serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(p.get()).ok()
        })
        .and_then(|p| {
            p.get("level")
                .and_then(|l| l.as_str())
                .and_then(|l| l.parse::<LoggingLevel>().ok())
        });
    level.is_none_or(|l| l >= min)
}

/// Sends `request` to `up` for `owner` and waits (up to `wait`) for its final
/// answer, returned under `request`'s own id; what the call yields on the way
/// (progress, logs) is dropped. A failure is a -32603 error.
pub(crate) async fn call_once(
    up: &Upstream,
    request: Request,
    owner: u64,
    wait: Duration,
) -> Message {
    let id = request.id.clone();
    let failed = |why: String| error::Error::Upstream(why).answer(id.clone());
    let call = match up.call(request, owner).await {
        Ok(c) => c,
        Err(why) => return why.answer(id),
    };
    match call.answer_within(wait).await {
        Ok(Ok(Message::Response(r))) => Message::Response(Response {
            id,
            result: r.result,
        }),
        Ok(Ok(Message::Error(e))) => Message::Error(ErrorResponse::new(Some(id), e.error)),
        Ok(Ok(_)) => failed("an unexpected answer from the upstream server".to_owned()),
        Ok(Err(why)) => why.answer(id),
        Err(()) => failed(format!(
            "the upstream server did not answer within {wait:?}"
        )),
    }
}

/// How a child of this bridge is run: `config`'s command, limits and timeouts,
/// under `name`, handshaken with `init_params`, restarted when it dies or not.
fn upstream_config(
    config: &BridgeConfig,
    name: String,
    init_params: Box<RawValue>,
    first: Ask,
    restart: Restart,
) -> UpstreamConfig {
    UpstreamConfig {
        connector: config.upstream.named(&name),
        name,
        transport: config.transport.clone(),
        init_params,
        first,
        restart,
        max_in_flight: config.max_in_flight,
        queue_wait: config.request_timeout,
        init_timeout: config.init_timeout,
        backoff_initial: config.backoff_initial,
        backoff_max: config.backoff_max,
        ready_wait: config.ready_wait,
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The client capabilities the bridge and the gateway declare to a shared
/// upstream, in its `initialize` and in the `_meta` of their own 2026-07-28
/// lists: those they can relay (sampling, elicitation in both modes, roots),
/// to the downstream call in flight, or refused. `switchboard lock` declares
/// the same, so that a server offering tools by capability offers the lock
/// what it offers the bridge.
pub fn relayed_capabilities() -> serde_json::Value {
    json!({
        "sampling": {},
        "elicitation": { "form": {}, "url": {} },
        "roots": {}
    })
}

/// The `initialize` params the bridge sends a shared child: the newest legacy
/// revision, and the [`relayed_capabilities`].
pub(crate) fn bridge_init_params() -> Box<RawValue> {
    serde_json::value::to_raw_value(&json!({
        "protocolVersion": ProtocolVersion::LATEST_LEGACY.as_str(),
        "capabilities": relayed_capabilities(),
        "clientInfo": { "name": "switchboard-bridge", "version": env!("CARGO_PKG_VERSION") }
    }))
    .expect("static JSON")
}

/// Starts one upstream as a shared child under `name`, and the core that
/// serves it: the bridge's, or one upstream of a gateway's. Also returned: the
/// tasks that keep its subscriptions across restarts ([`resubscribe`]) and,
/// with `follow` (the bridge's), its lists: the tools, and with a drift guard
/// the prompts, judged, their changes marked judged (module
/// `catalog::tools`). A gateway lists its upstreams itself (the lists it
/// serves come from there), through [`Core::tools`] too: one list, not two.
/// With an admin listener asked for ([`HttpServerConfig::admin`]): metrics
/// on for the process ([`metrics::enable`]), rendered at its `/metrics`. The
/// bridge's start and the gateway's, before any upstream starts.
pub(crate) fn with_metrics(http: &mut HttpServerConfig) {
    if http.admin.is_some() && http.metrics.is_none() {
        let m = metrics::enable();
        live_page::enable();
        http.metrics = Some(switchboard_transport::http::admin::MetricsSource(Arc::new(
            move |classic| m.render(classic),
        )));
    }
}

/// Has the HTTP server tell each request its authorization refused (a
/// token that did not pass, scopes it lacks) to the audit trail and the
/// live page, when either is on then: a record of kind `refused`, its
/// `reason` the authorization's (`invalid_token`, `insufficient_scope`),
/// its method unknown unless a tool's scopes refused a `tools/call`. The
/// bridge's start and the gateway's.
pub(crate) fn with_refusals(http: &mut HttpServerConfig) {
    use switchboard_transport::http::server::{RefusalSink, Refused};
    http.refusals = Some(RefusalSink(Arc::new(|r: &Refused<'_>| {
        let (trail, recent) = (audit::get(), live_page::recent());
        if trail.is_none() && recent.is_none() {
            return;
        }
        let entry = audit::Entry {
            time: std::time::SystemTime::now(),
            route: metrics::Name::new(r.path),
            subject: r.principal.map(|p| metrics::Name::new(&p.subject)),
            client_id: r
                .principal
                .and_then(|p| p.client_id.as_deref())
                .map(metrics::Name::new),
            method: match r.tool {
                Some(_) => switchboard_protocol::types::TOOLS_CALL,
                None => "",
            },
            name: r.tool.map(str::to_owned),
            upstream: None,
            arguments: None,
            outcome: metrics::Outcome::code(switchboard_protocol::jsonrpc::code::INVALID_REQUEST),
            refused: Some(r.reason.to_owned()),
            drifted: false,
            duration: Duration::ZERO,
        };
        downstream::watch::keep(trail, recent, entry, None);
    })));
}

/// Has the process's metrics, when on, read `server`'s counts (traffic,
/// evictions, authorization refusals). The bridge's start and the
/// gateway's, once bound.
pub(crate) fn watch_server(server: &HttpServer) {
    if let Some(m) = metrics::get() {
        m.watch_server(server.stats());
    }
}

pub(crate) fn start_core(
    config: BridgeConfig,
    name: String,
    draining: Arc<AtomicBool>,
    first: Ask,
    follow: bool,
) -> (Arc<Core>, Vec<JoinHandle<()>>) {
    if let Some(guard) = &config.drift_guard {
        guard.guards(name.split('#').next().unwrap_or(&name));
    }
    let shared = Upstream::start(
        upstream_config(&config, name, bridge_init_params(), first, Restart::Always),
        None,
    );
    let core = Arc::new(Core {
        mode: config.mode,
        allow: config.allow_tools.clone(),
        guard: config.drift_guard.clone(),
        init_timeout: config.init_timeout,
        request_timeout: config.request_timeout,
        shared,
        held: Mutex::new(HashMap::new()),
        tools: catalog::tools::ToolHeaders::default(),
        judged: catalog::changes::Judged::default(),
        subscriptions: tokio::sync::Mutex::new(HashMap::new()),
        child_logs_all: AtomicU64::new(0),
        listens: gauge::Gauge::default(),
        answers: gauge::Gauge::default(),
        draining,
        config,
        owners: AtomicU64::new(1),
        live: Mutex::new(Live::default()),
    });
    let mut tasks = vec![tokio::spawn(resubscribe(
        Arc::downgrade(&core),
        core.shared.watch_status(),
    ))];
    if follow {
        // Subscribed before the child can be ready: no list change is missed.
        tasks.push(tokio::spawn(catalog::tools::follow(
            Arc::downgrade(&core),
            core.shared.watch_status(),
            core.shared.subscribe(),
        )));
    }
    (core, tasks)
}

/// Whether the bridge and its shared child are up ([`Bridge::readiness`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Readiness {
    /// The shared child is initialized and serving.
    Ready,
    /// The child is starting or restarting; why, when known.
    NotReady(String),
}

/// A running bridge. Dropping it stops serving at once (children are ended in
/// the background); [`shutdown`](Self::shutdown) drains first.
pub struct Bridge {
    server: Option<HttpServer>,
    core: Arc<Core>,
    accept: JoinHandle<()>,
    /// Keep the shared child's tool list (module `catalog::tools`, which logs
    /// drift) and its subscriptions across restarts ([`start_core`]).
    tasks: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Bridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bridge")
            .field("server", &self.server)
            .field("mode", &self.core.mode)
            .finish_non_exhaustive()
    }
}

impl Bridge {
    /// Binds the HTTP side, starts the shared child, and serves until shut down.
    ///
    /// Errors: binding failed (address in use, bad path). A child that cannot be
    /// started is not an error here: it is retried with backoff and reported by
    /// [`readiness`](Self::readiness) and in each request's error.
    pub async fn start(mut config: BridgeConfig) -> io::Result<Bridge> {
        with_metrics(&mut config.http);
        with_refusals(&mut config.http);
        // 2026-07-28 exchanges come to the same endpoint.
        if !config
            .http
            .supported_versions
            .contains(&ProtocolVersion::V2026_07_28)
        {
            config
                .http
                .supported_versions
                .push(ProtocolVersion::V2026_07_28);
        }
        let shared_name = format!("{}#shared", config.upstream.name());
        let draining = Arc::new(AtomicBool::new(false));
        let http = config.http.clone();
        // Per session, legacy sessions have children of their own, so the shared
        // child serves only 2026-07-28 exchanges: speak that to it when it can (no
        // translation). Shared, legacy sessions need it initialized.
        let first = match config.mode.per_session() {
            true => Ask::Discover,
            false => Ask::Initialize,
        };
        let (core, tasks) = start_core(config, shared_name, draining.clone(), first, true);
        // /healthz and /readyz: ready when the shared child is initialized.
        let probe_upstream = core.shared.clone();
        let probe_draining = draining.clone();
        let mut http = http;
        let report = Arc::downgrade(&core);
        http.health_report = Some(HealthReport(Arc::new(move || match report.upgrade() {
            Some(core) => {
                let draining = draining.load(Ordering::Relaxed);
                let ready = !draining && matches!(core.shared.status(), Status::Ready(_));
                let mut upstreams = serde_json::Map::new();
                upstreams.insert(
                    core.shared.label().to_owned(),
                    serde_json::Value::Object(core.readiness()),
                );
                (ready, readiness_body(ready, draining, upstreams.into()))
            }
            None => (false, readiness_body(false, true, serde_json::json!({}))),
        })));
        http.health = Some(HealthProbe(Arc::new(move || {
            match probe_upstream.status() {
                _ if probe_draining.load(Ordering::Relaxed) => {
                    Err("the bridge is draining (SIGTERM)".to_owned())
                }
                Status::Ready(_) => Ok(()),
                Status::Starting => Err("the upstream server is starting".to_owned()),
                Status::Down(why) => Err(why),
                Status::Stopped => Err("the bridge is stopping".to_owned()),
            }
        })));
        if let (Some(m), Some(_)) = (metrics::get(), http.admin) {
            let view = Arc::downgrade(&core);
            let path = http.path.clone();
            http.live = Some(live_page::page(m, move || match view.upgrade() {
                Some(core) => core.live_view(&path),
                None => serde_json::Value::Null,
            }));
        }
        let (server, mut acceptor) = match HttpServer::bind(http).await {
            Ok(bound) => bound,
            Err(e) => {
                for t in &tasks {
                    t.abort();
                }
                core.shared.shutdown(Duration::ZERO).await;
                return Err(e);
            }
        };
        watch_server(&server);
        let accept_core = core.clone();
        let accept = tokio::spawn(
            async move {
                while let Some(session) = acceptor.accept().await {
                    let core = accept_core.clone();
                    let (tx, rx) = session.transport.split();
                    let tx = downstream::watch::Tx::new(
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
                            tokio::spawn(downstream::exchange::serve(
                                core,
                                tx,
                                rx,
                                session.headers,
                            ));
                        }
                        _ => {
                            let span = tracing::info_span!("session", id = %session.session_id);
                            tokio::spawn(downstream::session::serve(core, tx, rx).instrument(span));
                        }
                    }
                }
            }
            .instrument(tracing::info_span!("bridge")),
        );
        info!(url = %server.url(), "bridge listening");
        Ok(Bridge {
            server: Some(server),
            core,
            accept,
            tasks,
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

    /// The Streamable HTTP endpoint, `http://<addr><path>`.
    pub fn url(&self) -> String {
        self.server.as_ref().expect("serving").url()
    }

    /// Whether the shared child is up and initialized (what `/readyz` reports;
    /// `/healthz` is 200 while the bridge serves HTTP at all).
    pub fn readiness(&self) -> Readiness {
        match self.core.shared.status() {
            Status::Ready(_) => Readiness::Ready,
            Status::Starting => Readiness::NotReady("the upstream server is starting".into()),
            Status::Down(why) => Readiness::NotReady(why),
            Status::Stopped => Readiness::NotReady("the bridge is stopping".into()),
        }
    }

    /// How many times the shared child has been restarted.
    pub fn restarts(&self) -> u64 {
        self.core.shared.restarts()
    }

    /// Requests in flight upstream, on every child.
    pub fn in_flight(&self) -> usize {
        self.core.in_flight()
    }

    /// Drains and stops: waits up to [`BridgeConfig::drain_timeout`] for the
    /// requests in flight, ends every child in the spec's order (close stdin,
    /// SIGTERM, SIGKILL), then stops serving HTTP: every session ends, and
    /// every open SSE response (a POST's, a standalone GET stream, a legacy
    /// `/sse` stream) ends its body properly, as on DELETE, before its
    /// connection closes; connections still open after [`CLOSE_GRACE`] are
    /// cut ([`HttpServer::shutdown`]).
    pub async fn shutdown(mut self) {
        let front = Front {
            name: "bridge",
            server: self.server.take(),
            accept: self.accept,
            draining: self.core.draining.clone(),
            answers: self.core.answers.clone(),
            listens: self.core.listens.clone(),
        };
        let name = self.core.config.upstream.name().to_owned();
        let drain = self.core.config.drain_timeout;
        front
            .stop(
                drain,
                &[(&name, &self.core)],
                std::mem::take(&mut self.tasks),
            )
            .await;
    }
}

/// What a front door (the bridge, the gateway) stops ([`Front::stop`]).
pub(crate) struct Front {
    /// `bridge` or `gateway`, for logs.
    pub(crate) name: &'static str,
    pub(crate) server: Option<HttpServer>,
    /// Its accept loop.
    pub(crate) accept: JoinHandle<()>,
    /// Set here: `/readyz` answers 503 and `initialize` is refused from then on.
    pub(crate) draining: Arc<AtomicBool>,
    /// Downstream work that may still send an answer ([`Answering`]).
    pub(crate) answers: gauge::Gauge,
    /// Of those, the open 2026-07-28 listen streams.
    pub(crate) listens: gauge::Gauge,
}

impl Front {
    /// The one stop of bridge and gateway: waits up to `drain` for the
    /// requests in flight on every child of `cores` (each named for its
    /// drift guard's counts), ends `tasks`, the held `input_required` calls
    /// and every child in the spec's order (close stdin, SIGTERM, SIGKILL),
    /// then stops serving HTTP: every session ends, and every open SSE
    /// response ends its body properly, as on DELETE, before its connection
    /// closes; connections still open after [`CLOSE_GRACE`] are cut
    /// ([`HttpServer::shutdown`]).
    pub(crate) async fn stop(
        mut self,
        drain: Duration,
        cores: &[(&str, &Arc<Core>)],
        tasks: Vec<JoinHandle<()>>,
    ) {
        // Orchestrators stop sending traffic once /readyz says so; a new
        // session that comes meanwhile gets 503, to be retried elsewhere.
        // The transport refuses first: a session already opening whose
        // `initialize` then meets `draining` (and is refused by its session)
        // gets that 503 too, never an error inside a 200.
        if let Some(server) = &self.server {
            server.refuse_new_sessions();
        }
        self.draining.store(true, Ordering::Relaxed);
        let deadline = tokio::time::Instant::now() + drain;
        let children: Vec<Upstream> = cores.iter().flat_map(|(_, c)| c.children()).collect();
        let _ = tokio::time::timeout_at(deadline, async {
            for up in &children {
                up.drained(drain).await;
            }
        })
        .await;
        let left: usize = cores.iter().map(|(_, c)| c.in_flight()).sum();
        if left > 0 {
            warn!(left, "requests still in flight after the drain timeout");
        }
        for t in tasks {
            t.abort();
        }
        // End the children first, while HTTP still serves: a call still in
        // flight gets a JSON-RPC error on its stream rather than a cut
        // connection.
        for (name, core) in cores {
            core.stop(name).await;
        }
        // Let those errors (and the final results of listen streams on a
        // 2026-07-28 child) reach the transport before the connections
        // close: every answer but the open listens' is sent and flushed.
        if !self.answers.down_to(&self.listens, CLOSE_GRACE).await {
            warn!("answers still unsent after the close grace");
        }
        if let Some(server) = self.server.take() {
            // Awaited: the runtime may end right after this returns (the
            // binary's does), which would cut every body not yet finished.
            let cut = server.shutdown(CLOSE_GRACE).await;
            if cut > 0 {
                warn!(cut, "connections cut at the end of the close grace");
            }
        }
        // Listen streams on a legacy child end when told the server is
        // stopping: let them send (and flush) their final result.
        self.answers.drained(Duration::from_secs(1)).await;
        self.accept.abort();
        info!("{} stopped", self.name);
    }
}

/// A task answering a downstream request, counted while it lives
/// ([`Core::answering`]). Held by the task (not wrapped around its future,
/// which would copy the future on every spawn); when it ends during a drain,
/// what it sent is flushed to the transport before the count goes, so that
/// [`Bridge::shutdown`] waits for the answers themselves rather than sleeps.
pub(crate) struct Answering {
    tx: Sender,
    draining: Arc<AtomicBool>,
    counted: Option<(gauge::Counted, Option<gauge::Counted>)>,
}

impl Answering {
    /// Counts a task answering on `tx` in `gauge` while it lives (a gateway's
    /// sessions and exchanges), and in `also`, a session's own count, when
    /// given.
    pub(crate) fn counted(
        tx: &Sender,
        draining: &Arc<AtomicBool>,
        gauge: &gauge::Gauge,
        also: Option<&gauge::Gauge>,
    ) -> Self {
        Answering {
            tx: tx.clone(),
            draining: draining.clone(),
            counted: Some((gauge.enter(), also.map(gauge::Gauge::enter))),
        }
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        if !self.draining.load(Ordering::Relaxed) {
            return;
        }
        let (tx, counted) = (self.tx.clone(), self.counted.take());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                tx.flush().await;
                drop(counted);
            });
        }
    }
}

/// How long a session whose own child died waits for its calls in flight to
/// get their errors out before it ends (they fail at once; this only bounds
/// it). Bridge and gateway sessions alike.
pub(crate) const CALLS_FAIL_WITHIN: Duration = Duration::from_secs(2);

/// How long [`Bridge::shutdown`] lets open HTTP connections finish their
/// responses once every session has ended: 2 s (a client that reads what it
/// is sent needs a few milliseconds; one that does not is then cut).
pub const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// Subscribes a restarted shared child again to every resource its downstream
/// subscribers hold ([`Core::shared_subscription`]): a new process knows none
/// of the old one's subscriptions, and without this they silently got no more
/// `notifications/resources/updated` (2026-07-28 "stdio": after an unexpected
/// exit, a client re-opens what it had open).
async fn resubscribe(core: Weak<Core>, mut status: tokio::sync::watch::Receiver<Status>) {
    let mut handled: Option<u64> = None;
    loop {
        let ready = matches!(&*status.borrow_and_update(), Status::Ready(_));
        // Holds the bridge only while it works (a dropped bridge ends this).
        let Some(core) = core.upgrade() else { return };
        let generation = core.shared.restarts();
        if ready && handled != Some(generation) {
            handled = Some(generation);
            let counts = core.subscriptions.lock().await;
            for uri in counts.keys() {
                let params = json!({ "uri": uri });
                let Ok(request) = Request::new(
                    Id::from(0u64),
                    switchboard_protocol::types::RESOURCES_SUBSCRIBE,
                    &params,
                ) else {
                    continue;
                };
                let owner = core.next_owner();
                if let Message::Error(e) =
                    call_once(&core.shared, request, owner, core.request_timeout).await
                {
                    warn!(uri, error = %e.error.message, "could not subscribe the restarted upstream server again");
                }
            }
        }
        drop(core);
        if status.changed().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// Adding to a [`Live`] list looks at the entries in amortized constant
    /// time, however many are held, and still forgets the ended ones: 10,000
    /// pushes (every even one ended) look at fewer than 3 entries each, where a
    /// prune at every push looked at all of them (some 25 million looks).
    #[test]
    fn a_live_list_prunes_in_amortized_constant_time() {
        let looks = Cell::new(0usize);
        let ended = |i: &usize| {
            looks.set(looks.get() + 1);
            i % 2 == 0
        };
        let mut live = Live::default();
        for i in 0..10_000 {
            live.push(i, ended);
        }
        assert!(
            looks.get() < 3 * 10_000,
            "{} looks for 10,000 pushes",
            looks.get()
        );
        let held = live.iter().count();
        assert!(held < 2 * 5_000, "{held} held for 5,000 live");
        assert!(live.iter().any(|i| i % 2 == 1));
        assert_eq!(live.take().len(), held);
        assert_eq!(live.iter().count(), 0);
    }
}
