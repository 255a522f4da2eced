//! The process's metrics: the OpenTelemetry MCP semantic conventions'
//! histograms (`mcp.{server,client}.{operation,session}.duration`, seconds,
//! their buckets and attribute names) and Switchboard's own series, in one
//! `prometheus-client` registry rendered for the admin listener's `/metrics`
//! (OpenMetrics, or the classic text format 0.0.4).
//!
//! Off unless [`enable`]d: every hook asks [`get`] first (one atomic load).
//! A label value a caller can choose is bounded here: a method outside MCP's
//! set, or a tool or prompt no upstream listed, becomes `_OTHER`; tokens and
//! argument values are never labels.
//!
//! This module must not know sessions, upstreams or HTTP: its callers say what
//! happened, in the spec's terms.

use std::fmt::{self, Write as _};

use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use prometheus_client::encoding::{
    EncodeLabel, EncodeLabelSet, EncodeLabelValue, LabelSetEncoder, LabelValueEncoder,
};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use switchboard_transport::http::resource::REFUSAL_REASONS;
use switchboard_transport::http::server::ServerStats;

/// The conventions' buckets for the four MCP durations, in seconds.
pub const MCP_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The buckets of the gateway's own time per call, 50 µs to 250 ms.
pub const OVERHEAD_BUCKETS: [f64; 13] = [
    0.00005, 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.25,
];

/// At most this many tool and prompt names are label values; later ones are
/// `_OTHER` (an upstream that lists a million tools makes no million series).
pub const MAX_NAMES: usize = 4096;

/// The label value of whatever is not named.
pub const OTHER: &str = "_OTHER";

static METRICS: OnceLock<Metrics> = OnceLock::new();

/// Turns metrics on for this process (idempotent) and returns them.
pub fn enable() -> &'static Metrics {
    METRICS.get_or_init(Metrics::new)
}

/// The process's metrics, when [`enable`]d.
#[inline]
pub fn get() -> Option<&'static Metrics> {
    METRICS.get()
}

/// The `name` of a request's params, for a label only (never for policy:
/// module `policy` reads it whole, duplicate keys refused): when the params
/// begin `{"name":"…"` with no escape in it, read there without a parse.
pub(crate) fn label_name(
    params: Option<&serde_json::value::RawValue>,
) -> Option<std::borrow::Cow<'_, str>> {
    let text = params?.get();
    if let Some(rest) = text.strip_prefix(r#"{"name":""#) {
        // The name's end, unless an escape comes first.
        let end = rest.bytes().position(|b| b == b'"' || b == b'\\');
        if let Some(end) = end.filter(|&e| rest.as_bytes()[e] == b'"') {
            return Some(std::borrow::Cow::Borrowed(&rest[..end]));
        }
    }
    crate::policy::params_name(params)
}

/// A shared label value (a tool, prompt or upstream name).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Name(Arc<str>);

impl Name {
    /// A name of `s`.
    pub fn new(s: &str) -> Name {
        Name(Arc::from(s))
    }

    fn other() -> Name {
        static O: OnceLock<Name> = OnceLock::new();
        O.get_or_init(|| Name::new(OTHER)).clone()
    }

    /// The name's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl EncodeLabelValue for Name {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> fmt::Result {
        encoder.write_str(&self.0)
    }
}

/// How an operation ended, as `error.type`: none, the JSON-RPC error code,
/// or `tool_error` for a `tools/call` result with `isError: true`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// A result.
    Ok,
    /// An error response with this code: one of JSON-RPC's reserved
    /// range (-32768 to -32000); any other code is [`Outcome::OtherCode`].
    Code(i64),
    /// An error response with a code outside the reserved range (a label
    /// an upstream could otherwise grow without bound).
    OtherCode,
    /// A result that says `isError: true`.
    ToolError,
    /// No answer: the client cancelled it, or its session ended first
    /// (`cancelled`; in records and spans, never in the histograms).
    Cancelled,
}

impl Outcome {
    /// The outcome of `message`, the answer to a request of `method` (a
    /// label, as `classify::method_label` gives it): a result is looked into
    /// only for `tools/call`, the one whose result may say `isError`.
    pub fn of(message: &switchboard_protocol::jsonrpc::Message, method: &str) -> Outcome {
        use switchboard_protocol::jsonrpc::Message;
        match message {
            Message::Error(e) => Outcome::code(e.error.code),
            Message::Response(r) if method == switchboard_protocol::types::TOOLS_CALL => {
                Outcome::of_result(r.result.get())
            }
            _ => Outcome::Ok,
        }
    }

    /// Its word in records (`ok`, `tool_error`, `error`) and an error's code.
    pub fn word(self) -> (&'static str, Option<i64>) {
        match self {
            Outcome::Ok => ("ok", None),
            Outcome::ToolError => ("tool_error", None),
            Outcome::Code(c) => ("error", Some(c)),
            Outcome::OtherCode => ("error", None),
            Outcome::Cancelled => ("cancelled", None),
        }
    }

    /// The outcome of an error response with `code`.
    pub fn code(code: i64) -> Outcome {
        match code {
            -32768..=-32000 => Outcome::Code(code),
            _ => Outcome::OtherCode,
        }
    }

    /// The outcome of a result's JSON text: `tool_error` when it says
    /// `isError: true` (read without the rest of the result).
    pub fn of_result(json: &str) -> Outcome {
        #[derive(serde::Deserialize)]
        struct Flag {
            #[serde(rename = "isError", default)]
            is_error: bool,
        }
        // Cheap first: most results never mention it.
        static IS_ERROR: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
            std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"isError\""));
        if IS_ERROR.find(json.as_bytes()).is_none() {
            return Outcome::Ok;
        }
        match serde_json::from_str::<Flag>(json) {
            Ok(Flag { is_error: true }) => Outcome::ToolError,
            _ => Outcome::Ok,
        }
    }
}

/// One MCP operation's labels (a downstream request, or an upstream call).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Operation {
    /// `mcp.method.name`: one of MCP's, or `_OTHER`.
    pub method: &'static str,
    /// `gen_ai.tool.name` of a `tools/call`.
    pub tool: Option<Name>,
    /// `gen_ai.prompt.name` of a `prompts/get`.
    pub prompt: Option<Name>,
    /// `error.type`.
    pub outcome: Outcome,
    /// `mcp.protocol.version`, when known.
    pub version: Option<&'static str>,
    /// `network.transport`: `tcp` (HTTP) or `pipe` (stdio).
    pub transport: &'static str,
    /// Ours: the upstream of a client operation.
    pub upstream: Option<Name>,
}

fn label(e: &mut LabelSetEncoder, key: &'static str, value: &str) -> fmt::Result {
    EncodeLabel::encode(&(key, value), e.encode_label())
}

impl EncodeLabelSet for Operation {
    fn encode(&self, e: &mut LabelSetEncoder) -> fmt::Result {
        label(e, "mcp_method_name", self.method)?;
        if let Some(t) = &self.tool {
            label(e, "gen_ai_tool_name", t.as_str())?;
        }
        if let Some(p) = &self.prompt {
            label(e, "gen_ai_prompt_name", p.as_str())?;
        }
        match self.outcome {
            Outcome::Ok => {}
            Outcome::Code(c) => label(e, "error_type", itoa::Buffer::new().format(c))?,
            Outcome::ToolError => label(e, "error_type", "tool_error")?,
            Outcome::OtherCode => label(e, "error_type", OTHER)?,
            Outcome::Cancelled => label(e, "error_type", "cancelled")?,
        }
        if let Some(v) = self.version {
            label(e, "mcp_protocol_version", v)?;
        }
        label(e, "network_transport", self.transport)?;
        if let Some(u) = &self.upstream {
            label(e, "upstream", u.as_str())?;
        }
        Ok(())
    }
}

/// Labels given as `(key, value)` pairs of our own series.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pairs<const N: usize>(pub [(&'static str, Name); N]);

impl<const N: usize> EncodeLabelSet for Pairs<N> {
    fn encode(&self, e: &mut LabelSetEncoder) -> fmt::Result {
        for (k, v) in &self.0 {
            label(e, k, v.as_str())?;
        }
        Ok(())
    }
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// An [`Operation`] as the cache's key: its label values by address, not
/// text (no string is hashed or compared per call). Methods and versions
/// are `'static`, and names come from one table ([`Metrics::name_label`],
/// an upstream's one [`Name`]), so the same labels come back at the same
/// addresses; the key holds its names, so no address is reused while it is
/// cached. One text at two addresses makes two keys of the one series (the
/// family is keyed by text), never a wrong series.
struct Key(Operation);

fn addr(s: &str) -> usize {
    s.as_ptr() as usize
}

fn name_addr(n: &Option<Name>) -> usize {
    n.as_ref().map_or(0, |n| addr(&n.0))
}

impl Key {
    fn parts(&self) -> [usize; 7] {
        let o = &self.0;
        let (tag, code) = match o.outcome {
            Outcome::Ok => (0, 0),
            Outcome::Code(c) => (1, c as usize),
            Outcome::OtherCode => (2, 0),
            Outcome::ToolError => (3, 0),
            Outcome::Cancelled => (4, 0),
        };
        [
            addr(o.method) ^ tag,
            name_addr(&o.tool),
            name_addr(&o.prompt),
            code,
            o.version.map_or(0, addr),
            addr(o.transport),
            name_addr(&o.upstream),
        ]
    }
}

impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.parts().hash(h);
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.parts() == other.parts() && self.0.outcome == other.0.outcome
    }
}

impl Eq for Key {}

type Cache = RwLock<foldhash::HashMap<Key, Histogram>>;

/// The histogram one caller (a session, an upstream) observed into last,
/// and its labels: a call like the one before skips the shared cache.
#[derive(Default)]
pub struct Last(Option<(Key, Histogram)>);

/// Observes `took` into `op`'s histogram of `family`, found through `last`
/// or else `cache`.
fn observe(
    cache: &Cache,
    family: &Histograms<Operation>,
    last: &mut Last,
    op: Operation,
    took: Duration,
) {
    let secs = took.as_secs_f64();
    let key = Key(op);
    if let Some((k, h)) = &last.0 {
        if *k == key {
            h.observe(secs);
            return;
        }
    }
    let cached = cache
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(&key)
        .cloned();
    let h = match cached {
        Some(h) => h,
        None => {
            let h = family.get_or_create_owned(&key.0);
            let mut cache = cache.write().unwrap_or_else(|p| p.into_inner());
            cache.insert(Key(key.0.clone()), h.clone());
            h
        }
    };
    h.observe(secs);
    last.0 = Some((key, h));
}

fn mcp_histogram() -> Histogram {
    Histogram::new(MCP_BUCKETS)
}

fn overhead_histogram() -> Histogram {
    Histogram::new(OVERHEAD_BUCKETS)
}

/// Why a request was refused before any upstream saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Outside the route's tool allowlist.
    Allowlist,
    /// Its definition drifted from the lock (block mode).
    Drift,
    /// The caller's token lacks the tool's scopes.
    Scope,
    /// No upstream serves that name.
    UnknownTool,
    /// Malformed (no `params.name`, ...).
    BadInput,
}

impl Refusal {
    /// Its label value (and an error's `data.reason`).
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Allowlist => "allowlist",
            Refusal::Drift => "drift",
            Refusal::Scope => "scope",
            Refusal::UnknownTool => "unknown_tool",
            Refusal::BadInput => "bad_input",
        }
    }
}

/// What happened to an upstream's child process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildEvent {
    /// Spawned for the first time.
    Started,
    /// Spawned again after one before it ended.
    Restarted,
    /// Ended without being asked to.
    Crashed,
}

/// The process's metrics ([`enable`]).
pub struct Metrics {
    registry: Registry,
    server_operation: Histograms<Operation>,
    client_operation: Histograms<Operation>,
    server_session: Histograms<Pairs<2>>,
    client_session: Histograms<Pairs<2>>,
    overhead: Histograms<Pairs<1>>,
    refused: Family<Pairs<2>, Counter>,
    drift: Family<Pairs<2>, Counter>,
    auth_failures: Family<Pairs<1>, Counter>,
    sessions_open: Family<Pairs<1>, Gauge>,
    sessions_evicted: Counter,
    children: Family<Pairs<2>, Counter>,
    upstream_up: Family<Pairs<2>, Gauge>,
    relists: Family<Pairs<2>, Counter>,
    list_bytes: Family<Pairs<2>, Gauge>,
    list_entries: Family<Pairs<2>, Gauge>,
    bytes: Family<Pairs<1>, Counter>,
    /// Tool and prompt names some upstream or route listed (label values).
    names: RwLock<foldhash::HashSet<Name>>,
    /// The histograms of the operations seen, by labels: looked up on every
    /// call, with a faster hash than the registry's own.
    server_cache: Cache,
    client_cache: Cache,
    /// The HTTP servers whose counts are read at each render, with what
    /// was read last ([`Metrics::watch_server`]).
    servers: std::sync::Mutex<Vec<(ServerSource, ServerStats)>>,
    /// The newest generation of each upstream name that set its state.
    generations: std::sync::Mutex<foldhash::HashMap<String, u64>>,
    /// The audit trail's head, read together ([`AuditHead`]).
    audit: std::sync::Arc<AuditHead>,
    audit_lost: Counter,
}

/// The audit trail's head as written: its record count and the first six
/// bytes of its last hash, as an integer (exact in a float), one pair read
/// under one lock, so that a scrape never pairs one record's count with
/// another's hash. A verifier compares them with the trail's record
/// `count - 1`.
#[derive(Debug, Default)]
struct AuditHead(std::sync::Mutex<Option<(u64, u64)>>);

impl prometheus_client::collector::Collector for AuditHead {
    fn encode(
        &self,
        mut encoder: prometheus_client::encoding::DescriptorEncoder,
    ) -> Result<(), fmt::Error> {
        use prometheus_client::encoding::EncodeMetric;
        use prometheus_client::metrics::gauge::ConstGauge;
        let Some((count, head)) = *self.0.lock().unwrap_or_else(|p| p.into_inner()) else {
            return Ok(());
        };
        for (name, help, value) in [
            (
                "switchboard_audit_records",
                "Records in the audit trail's chain, as written",
                count,
            ),
            (
                "switchboard_audit_head",
                "The first 6 bytes of the audit trail's last record hash, as an integer",
                head,
            ),
        ] {
            let g = ConstGauge::new(value as i64);
            let e = encoder.encode_descriptor(name, help, None, g.metric_type())?;
            g.encode(e)?;
        }
        Ok(())
    }
}

type ServerSource = Box<dyn Fn() -> ServerStats + Send + Sync>;

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// A registry with every series of ours (those with labels appear once
    /// observed).
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let h = || Histograms::new_with_constructor(mcp_histogram as fn() -> Histogram);
        let m = Metrics {
            server_operation: h(),
            client_operation: h(),
            server_session: Histograms::new_with_constructor(mcp_histogram),
            client_session: Histograms::new_with_constructor(mcp_histogram),
            overhead: Histograms::new_with_constructor(overhead_histogram),
            refused: Family::default(),
            drift: Family::default(),
            auth_failures: Family::default(),
            sessions_open: Family::default(),
            sessions_evicted: Counter::default(),
            children: Family::default(),
            upstream_up: Family::default(),
            relists: Family::default(),
            list_bytes: Family::default(),
            list_entries: Family::default(),
            bytes: Family::default(),
            names: RwLock::default(),
            servers: std::sync::Mutex::new(Vec::new()),
            generations: Default::default(),
            audit: Default::default(),
            audit_lost: Counter::default(),
            server_cache: RwLock::default(),
            client_cache: RwLock::default(),
            registry: Registry::default(),
        };
        let r = &mut registry;
        let s = Unit::Seconds;
        r.register_with_unit(
            "mcp_server_operation_duration",
            "Duration of each MCP request a client made of this server (OpenTelemetry mcp.server.operation.duration)",
            s.clone(),
            m.server_operation.clone(),
        );
        r.register_with_unit(
            "mcp_client_operation_duration",
            "Duration of each MCP request this process made of an upstream (OpenTelemetry mcp.client.operation.duration)",
            s.clone(),
            m.client_operation.clone(),
        );
        r.register_with_unit(
            "mcp_server_session_duration",
            "Duration of each downstream MCP session (OpenTelemetry mcp.server.session.duration)",
            s.clone(),
            m.server_session.clone(),
        );
        r.register_with_unit(
            "mcp_client_session_duration",
            "Duration of each upstream MCP session (OpenTelemetry mcp.client.session.duration)",
            s.clone(),
            m.client_session.clone(),
        );
        r.register_with_unit(
            "switchboard_call_overhead",
            "Time a forwarded call spent in this process: its downstream duration less its upstream one",
            s,
            m.overhead.clone(),
        );
        r.register(
            "switchboard_requests_refused",
            "Requests refused before any upstream saw them, by upstream and reason (allowlist, drift, scope, unknown_tool, bad_input)",
            m.refused.clone(),
        );
        r.register(
            "switchboard_drift_events",
            "Definitions found changed against the approved lock, by upstream and kind",
            m.drift.clone(),
        );
        r.register(
            "switchboard_auth_failures",
            "Requests refused by authorization, by reason",
            m.auth_failures.clone(),
        );
        r.register(
            "switchboard_sessions_open",
            "Downstream sessions open, by transport",
            m.sessions_open.clone(),
        );
        r.register(
            "switchboard_sessions_evicted",
            "Idle downstream sessions ended to make room for new ones",
            m.sessions_evicted.clone(),
        );
        r.register(
            "switchboard_children",
            "Upstream child processes started, restarted and crashed, by upstream",
            m.children.clone(),
        );
        r.register(
            "switchboard_upstream_state",
            "Each upstream's state (1 for its current one: starting, ready, down, stopped)",
            m.upstream_up.clone(),
        );
        r.register(
            "switchboard_upstream_relists",
            "Lists fetched again from an upstream after it announced a change, by list",
            m.relists.clone(),
        );
        r.register_with_unit(
            "switchboard_upstream_list_size",
            "Size of an upstream's last list result, by list (the token footprint a model is handed)",
            Unit::Bytes,
            m.list_bytes.clone(),
        );
        r.register(
            "switchboard_upstream_list_entries",
            "Entries in an upstream's last list result, by list",
            m.list_entries.clone(),
        );
        r.register_with_unit(
            "switchboard_transport",
            "MCP message bytes received from and sent to downstream clients",
            Unit::Bytes,
            m.bytes.clone(),
        );
        r.register(
            "switchboard_audit_lost",
            "Audit records lost (a full queue, a failed write), each said by a gap record",
            m.audit_lost.clone(),
        );
        r.register_collector(Box::new(m.audit.clone()));
        Metrics { registry, ..m }
    }

    /// The audit trail's head as written: `count` records, the last `hash`.
    pub fn audit_head(&self, count: u64, hash: &[u8; 32]) {
        let mut six = [0u8; 8];
        six[2..].copy_from_slice(&hash[..6]);
        *self.audit.0.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((count, u64::from_be_bytes(six)));
    }

    /// `n` audit records lost.
    pub fn audit_lost(&self, n: u64) {
        self.audit_lost.inc_by(n);
    }

    /// Reads an HTTP server's counts (traffic, evictions, authorization
    /// refusals) into these metrics at each render, until it is gone.
    pub fn watch_server(&self, source: impl Fn() -> ServerStats + Send + Sync + 'static) {
        let mut servers = self.servers.lock().unwrap_or_else(|p| p.into_inner());
        servers.push((Box::new(source), ServerStats::default()));
    }

    /// Adds what the watched servers counted since the last render.
    fn read_servers(&self) {
        let mut servers = self.servers.lock().unwrap_or_else(|p| p.into_inner());
        for (source, last) in servers.iter_mut() {
            let now = source();
            let delta = |now: u64, then: u64| now.saturating_sub(then);
            self.bytes
                .get_or_create(&Pairs([("direction", Name::new("in"))]))
                .inc_by(delta(now.bytes_received, last.bytes_received));
            self.bytes
                .get_or_create(&Pairs([("direction", Name::new("out"))]))
                .inc_by(delta(now.bytes_sent, last.bytes_sent));
            self.sessions_evicted
                .inc_by(delta(now.sessions_evicted, last.sessions_evicted));
            for (i, reason) in REFUSAL_REASONS.iter().enumerate() {
                let n = delta(now.auth_refusals[i], last.auth_refusals[i]);
                if n > 0 {
                    self.auth_failures
                        .get_or_create(&Pairs([("reason", Name::new(reason))]))
                        .inc_by(n);
                }
            }
            let scope = delta(now.tool_scope_refusals, last.tool_scope_refusals);
            if scope > 0 {
                let labels = Pairs([
                    ("upstream", Name::new("")),
                    ("reason", Name::new(Refusal::Scope.as_str())),
                ]);
                self.refused.get_or_create(&labels).inc_by(scope);
            }
            *last = now;
        }
    }

    /// The metrics as text: OpenMetrics (`classic: false`) or the classic
    /// Prometheus format 0.0.4, with its content type.
    pub fn render(&self, classic: bool) -> (String, &'static str) {
        self.read_servers();
        let mut out = String::with_capacity(16 * 1024);
        if classic {
            let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry);
            (
                out,
                prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
            )
        } else {
            let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
            (
                out,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )
        }
    }

    /// A tool or prompt name as a label value: itself when some upstream or
    /// route listed it, else `_OTHER`.
    pub fn name_label(&self, name: &str) -> Name {
        let names = self.names.read().unwrap_or_else(|p| p.into_inner());
        names.get(name).cloned().unwrap_or_else(Name::other)
    }

    /// Names a list showed (a tool or prompt list of an upstream, or a
    /// route's served names): label values from now on, up to [`MAX_NAMES`].
    pub fn listed<'a>(&self, names: impl IntoIterator<Item = &'a str>) {
        let mut known = self.names.write().unwrap_or_else(|p| p.into_inner());
        for n in names {
            if known.len() >= MAX_NAMES {
                break;
            }
            if !known.contains(n) {
                known.insert(Name::new(n));
            }
        }
    }

    /// One downstream request answered; `last`: the caller's memo.
    pub fn server_operation(&self, last: &mut Last, op: Operation, took: Duration) {
        observe(&self.server_cache, &self.server_operation, last, op, took);
    }

    /// One upstream request answered (or failed); `last`: the caller's memo.
    pub fn client_operation(&self, last: &mut Last, op: Operation, took: Duration) {
        observe(&self.client_cache, &self.client_operation, last, op, took);
    }

    /// The overhead histogram of `route`, to observe with
    /// [`Metrics::overhead`] (looked up once per session).
    pub fn overhead_of(&self, route: &Name) -> Histogram {
        self.overhead
            .get_or_create_owned(&Pairs([("route", route.clone())]))
    }

    /// A downstream session opened (`kind`: `streamable_http`, `sse`).
    pub fn session_opened(&self, kind: &'static str) {
        self.sessions_open
            .get_or_create(&Pairs([("transport", Name::new(kind))]))
            .inc();
    }

    /// A downstream session of `kind` ended after `took`, on `version`.
    pub fn session_closed(
        &self,
        kind: &'static str,
        version: Option<&'static str>,
        took: Duration,
    ) {
        self.sessions_open
            .get_or_create(&Pairs([("transport", Name::new(kind))]))
            .dec();
        let labels = Pairs([
            ("mcp_protocol_version", Name::new(version.unwrap_or(""))),
            ("network_transport", Name::new("tcp")),
        ]);
        self.server_session
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    /// An upstream session ended after `took`.
    pub fn client_session(&self, upstream: &str, transport: &'static str, took: Duration) {
        let labels = Pairs([
            ("upstream", Name::new(upstream)),
            ("network_transport", Name::new(transport)),
        ]);
        self.client_session
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    /// A forwarded call's time in this process, into its route's
    /// histogram ([`Metrics::overhead_of`]).
    pub fn overhead(histogram: &Histogram, took: Duration) {
        histogram.observe(took.as_secs_f64());
    }

    /// A request refused by policy, meant for `upstream` (`""` when no
    /// upstream serves what it names).
    pub fn refused(&self, upstream: &str, why: Refusal) {
        let labels = Pairs([
            ("upstream", Name::new(upstream)),
            ("reason", Name::new(why.as_str())),
        ]);
        self.refused.get_or_create(&labels).inc();
    }

    /// A definition found drifted (`kind`: `tool`, `prompt`, ...).
    pub fn drift(&self, upstream: &str, kind: &str) {
        let labels = Pairs([("upstream", Name::new(upstream)), ("kind", Name::new(kind))]);
        self.drift.get_or_create(&labels).inc();
    }

    /// An upstream's child started, restarted or crashed.
    pub fn child(&self, upstream: &str, event: ChildEvent) {
        let event = match event {
            ChildEvent::Started => "started",
            ChildEvent::Restarted => "restarted",
            ChildEvent::Crashed => "crashed",
        };
        let labels = Pairs([
            ("upstream", Name::new(upstream)),
            ("event", Name::new(event)),
        ]);
        self.children.get_or_create(&labels).inc();
    }

    /// An upstream's state now: its series for `state` is 1, the others 0.
    /// `generation` orders the upstreams of one name (a reload's new one
    /// is higher): a state from an older one than has written is dropped.
    pub fn upstream_state(&self, upstream: &str, generation: u64, state: &'static str) {
        let mut latest = self.generations.lock().unwrap_or_else(|p| p.into_inner());
        let last = latest.entry(upstream.to_owned()).or_insert(generation);
        if generation < *last {
            return;
        }
        *last = generation;
        let up = Name::new(upstream);
        for s in ["starting", "ready", "down", "stopped"] {
            let labels = Pairs([("upstream", up.clone()), ("state", Name::new(s))]);
            self.upstream_up
                .get_or_create(&labels)
                .set(i64::from(s == state));
        }
    }

    /// An upstream's list fetched again after a change it announced.
    pub fn relisted(&self, upstream: &str, list: &str) {
        let labels = Pairs([("upstream", Name::new(upstream)), ("list", Name::new(list))]);
        self.relists.get_or_create(&labels).inc();
    }

    /// An upstream's list result: its size in bytes and entries.
    pub fn list_size(&self, upstream: &str, list: &str, bytes: usize, entries: usize) {
        let labels = Pairs([("upstream", Name::new(upstream)), ("list", Name::new(list))]);
        self.list_bytes
            .get_or_create(&labels)
            .set(i64::try_from(bytes).unwrap_or(i64::MAX));
        self.list_entries
            .get_or_create(&labels)
            .set(i64::try_from(entries).unwrap_or(i64::MAX));
    }
}

impl std::borrow::Borrow<str> for Name {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_a_label_only_once_listed_and_within_the_bound() {
        let m = Metrics::new();
        assert_eq!(m.name_label("echo").as_str(), OTHER);
        m.listed(["echo"]);
        assert_eq!(m.name_label("echo").as_str(), "echo");
        let many: Vec<String> = (0..MAX_NAMES + 10).map(|i| format!("t{i}")).collect();
        m.listed(many.iter().map(String::as_str));
        assert_eq!(m.names.read().unwrap().len(), MAX_NAMES);
        assert_eq!(m.name_label(&format!("t{}", MAX_NAMES + 5)).as_str(), OTHER);
    }

    #[test]
    fn error_codes_outside_the_reserved_range_are_one_label() {
        assert_eq!(Outcome::code(-32602), Outcome::Code(-32602));
        assert_eq!(Outcome::code(-32768), Outcome::Code(-32768));
        assert_eq!(Outcome::code(-32000), Outcome::Code(-32000));
        for other in [1, 7, -1, -31999, -32769, i64::MAX] {
            assert_eq!(Outcome::code(other), Outcome::OtherCode, "{other}");
        }
    }

    #[test]
    fn error_type_is_the_code_or_tool_error() {
        assert_eq!(Outcome::of_result(r#"{"content":[]}"#), Outcome::Ok);
        assert_eq!(
            Outcome::of_result(r#"{"content":[],"isError":false}"#),
            Outcome::Ok
        );
        assert_eq!(
            Outcome::of_result(r#"{"isError":true,"content":[]}"#),
            Outcome::ToolError
        );
        // Only the result's own member counts.
        let nested = r#"{"content":[{"type":"text","text":"\"isError\":true"}]}"#;
        assert_eq!(Outcome::of_result(nested), Outcome::Ok);
    }

    #[test]
    fn both_formats_carry_the_conventions_names_and_buckets() {
        let m = Metrics::new();
        let op = Operation {
            method: "tools/call",
            tool: Some(Name::new("echo")),
            prompt: None,
            outcome: Outcome::Code(-32602),
            version: Some("2025-06-18"),
            transport: "tcp",
            upstream: None,
        };
        m.server_operation(&mut Last::default(), op, Duration::from_millis(30));
        let (open, kind) = m.render(false);
        assert!(kind.starts_with("application/openmetrics-text"));
        assert!(open.ends_with("# EOF\n"));
        let (classic, kind) = m.render(true);
        assert!(kind.starts_with("text/plain; version=0.0.4"));
        let line = r#"mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",gen_ai_tool_name="echo",error_type="-32602",mcp_protocol_version="2025-06-18",network_transport="tcp",le="0.05"} 1"#;
        assert!(classic.contains(line), "{classic}");
        assert!(classic.contains(r#"le="0.02"} 0"#));
        assert!(!classic.contains("# EOF"));
    }

    #[test]
    fn the_cache_by_address_keeps_one_series_per_text() {
        let m = Metrics::new();
        let op = |tool: &str, outcome| Operation {
            method: "tools/call",
            tool: Some(Name::new(tool)),
            prompt: None,
            outcome,
            version: None,
            transport: "pipe",
            upstream: None,
        };
        let mut last = Last::default();
        // One text at two addresses: two keys, one series of two.
        m.client_operation(&mut last, op("echo", Outcome::Ok), Duration::from_millis(1));
        m.client_operation(&mut last, op("echo", Outcome::Ok), Duration::from_millis(1));
        // Other texts and outcomes: series of their own.
        m.client_operation(&mut last, op("add", Outcome::Ok), Duration::from_millis(1));
        m.client_operation(
            &mut last,
            op("echo", Outcome::Code(-32602)),
            Duration::from_millis(1),
        );
        m.client_operation(
            &mut last,
            op("echo", Outcome::Code(-32601)),
            Duration::from_millis(1),
        );
        m.client_operation(
            &mut last,
            op("echo", Outcome::ToolError),
            Duration::from_millis(1),
        );
        let (text, _) = m.render(true);
        let count = |labels: &str| {
            let head = format!("mcp_client_operation_duration_seconds_count{{{labels}}} ");
            let line = text.lines().find(|l| l.starts_with(&head));
            line.unwrap_or_else(|| panic!("{head} in {text}"))[head.len()..].to_owned()
        };
        let tool = r#"mcp_method_name="tools/call",gen_ai_tool_name="#;
        let pipe = r#"network_transport="pipe""#;
        assert_eq!(count(&format!(r#"{tool}"echo",{pipe}"#)), "2");
        assert_eq!(count(&format!(r#"{tool}"add",{pipe}"#)), "1");
        for e in ["-32602", "-32601", "tool_error"] {
            assert_eq!(
                count(&format!(r#"{tool}"echo",error_type="{e}",{pipe}"#)),
                "1"
            );
        }
        let series = text
            .matches("mcp_client_operation_duration_seconds_count{")
            .count();
        assert_eq!(series, 5, "{text}");
    }

    #[test]
    fn an_upstream_replaced_by_a_reload_cannot_overwrite_its_successors_state() {
        let m = Metrics::new();
        let state = |m: &Metrics, s: &str| {
            let (text, _) = m.render(true);
            let head = format!("switchboard_upstream_state{{upstream=\"a\",state=\"{s}\"}} ");
            let line = text.lines().find(|l| l.starts_with(&head));
            line.unwrap_or_else(|| panic!("{head} in {text}"))[head.len()..].to_owned()
        };
        m.upstream_state("a", 1, "ready");
        // The reload's new "a" (generation 2) is ready; the old one then stops.
        m.upstream_state("a", 2, "starting");
        m.upstream_state("a", 2, "ready");
        m.upstream_state("a", 1, "stopped");
        assert_eq!(state(&m, "ready"), "1");
        assert_eq!(state(&m, "stopped"), "0");
        // The new one's own changes still land.
        m.upstream_state("a", 2, "down");
        assert_eq!(
            (state(&m, "down"), state(&m, "ready")),
            ("1".into(), "0".into())
        );
        // Another name is its own.
        m.upstream_state("b", 0, "stopped");
        assert_eq!(state(&m, "down"), "1");
    }
}
