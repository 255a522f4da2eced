//! A downstream session's sender, measured and traced: each request from
//! its arrival to its answer (`mcp.server.operation.duration`, `error.type`
//! from the answer; its server span, module `trace`), a forwarded call's own
//! time here (its duration less its upstream's), and the session's life
//! (open sessions, `mcp.server.session.duration`), and with an audit trail
//! or the live page, each `tools/call`, `prompts/get` and `resources/read`
//! as a record (modules `audit`, `live_page`). One for the bridge's and the gateway's sessions and exchanges
//! alike. With metrics, traces and the trail off it keeps nothing and is the
//! bare [`Sender`].
//!
//! This module must not know routes or policy, nor upstreams beyond their
//! label: the session says when a request arrived, which upstream answered
//! and what it took there; a refusal is read from its answer's
//! `data.reason`, which module `error` writes.

use std::ops::Deref;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use foldhash::HashMap;
use switchboard_protocol::jsonrpc::{Id, Message, Request};
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::http::server::SessionKind;
use switchboard_transport::{SendError, Sender};

use crate::classify::{method_label, Route};
use crate::metrics::{self, Metrics, Name, Operation, Outcome};

/// What [`Tx::new`] reads of an `HttpSession`.
pub(crate) struct Http<'a> {
    pub(crate) kind: SessionKind,
    pub(crate) protocol_version: ProtocolVersion,
    pub(crate) session_id: &'a str,
    pub(crate) path: &'a str,
    pub(crate) headers: &'a http::HeaderMap,
    pub(crate) principal: Option<&'a switchboard_transport::http::resource::Principal>,
}

/// A session's (or exchange's) sender, measured when metrics are on.
pub(crate) struct Tx {
    sender: Sender,
    watch: Option<Box<Watch>>,
}

struct Watch {
    metrics: Option<&'static Metrics>,
    tracing: Option<&'static crate::trace::Tracing>,
    audit: Option<Audited>,
    /// The session's id (a span attribute).
    session_id: Box<str>,
    /// A stateless exchange's `traceparent` and `tracestate` headers: the
    /// parent of a request whose `_meta` names none.
    headers: Option<(String, Option<String>)>,
    /// The overhead histogram of the endpoint path it came in on (a
    /// gateway route's, the bridge's), with metrics on.
    overhead: Option<prometheus_client::metrics::histogram::Histogram>,
    /// `Some` for a session (counted open until dropped); `None` for one
    /// stateless exchange.
    session: Option<&'static str>,
    version: OnceLock<&'static str>,
    started: Instant,
    open: Mutex<Table>,
}

/// The requests not answered yet, and the histogram of the last answered.
#[derive(Default)]
struct Table {
    open: HashMap<Id, Open>,
    last: metrics::Last,
}

/// What a session's records share (with an audit trail, the live page's
/// recent calls, or both).
struct Audited {
    trail: Option<&'static crate::audit::Audit>,
    recent: Option<&'static crate::live_page::Recent>,
    route: Name,
    subject: Option<Name>,
    client_id: Option<Name>,
}

impl Audited {
    /// The record of a request of `method` that ended as `outcome` after
    /// `took`, to the trail and the live page's recent calls.
    fn record(
        &self,
        method: &'static str,
        asked: Asked,
        outcome: Outcome,
        refused: Option<String>,
        took: Duration,
    ) {
        let entry = crate::audit::Entry {
            time: std::time::SystemTime::now(),
            route: self.route.clone(),
            subject: self.subject.clone(),
            client_id: self.client_id.clone(),
            method,
            name: asked.name,
            upstream: asked.upstream,
            arguments: None,
            outcome,
            refused,
            drifted: asked.drifted,
            duration: took,
        };
        keep(self.trail, self.recent, entry, asked.arguments);
    }
}

/// Hands `entry` (without arguments) to the trail, with `arguments`, and
/// to the live page's recent calls, whichever are on: copied only when
/// both are.
pub(crate) fn keep(
    trail: Option<&crate::audit::Audit>,
    recent: Option<&crate::live_page::Recent>,
    mut entry: crate::audit::Entry,
    arguments: Option<Box<serde_json::value::RawValue>>,
) {
    match (trail, recent) {
        (Some(trail), recent) => {
            if let Some(recent) = recent {
                recent.push(entry.clone());
            }
            entry.arguments = arguments;
            trail.record(entry);
        }
        (None, Some(recent)) => recent.push(entry),
        (None, None) => {}
    }
}

/// What an audited request's record takes from its arrival.
struct Asked {
    name: Option<String>,
    arguments: Option<Box<serde_json::value::RawValue>>,
    upstream: Option<Name>,
    /// Not as approved, served in warn mode.
    drifted: bool,
}

/// A request not answered yet.
struct Open {
    at: Instant,
    method: &'static str,
    tool: Option<Name>,
    prompt: Option<Name>,
    /// A forwarded call's time at its upstream, once answered there.
    upstream: Option<Duration>,
    span: Option<crate::trace::Span>,
    /// With an audit trail, for an audited method.
    asked: Option<Box<Asked>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Tx {
    /// `sender` of the downstream session or exchange `http` (its kind,
    /// id, version as far as known, endpoint path, headers: all but its
    /// transport, split off already).
    pub(crate) fn new(sender: Sender, http: Http<'_>) -> Tx {
        let (metrics, tracing, trail) = (metrics::get(), crate::trace::get(), crate::audit::get());
        let recent = crate::live_page::recent();
        if metrics.is_none() && tracing.is_none() && trail.is_none() && recent.is_none() {
            return Tx {
                sender,
                watch: None,
            };
        }
        let kind = http.kind;
        let session = match kind {
            SessionKind::Stateless => None,
            SessionKind::Stateful => Some("streamable_http"),
            _ => Some("sse"),
        };
        if let (Some(m), Some(s)) = (metrics, session) {
            m.session_opened(s);
        }
        let header = |name: &str| {
            http.headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let headers = (kind == SessionKind::Stateless && tracing.is_some())
            .then(|| header("traceparent").map(|p| (p, header("tracestate"))))
            .flatten();
        let version = OnceLock::new();
        if kind != SessionKind::Stateful {
            let _ = version.set(http.protocol_version.as_str());
        }
        let audit = (trail.is_some() || recent.is_some()).then(|| Audited {
            trail,
            recent,
            route: Name::new(http.path),
            subject: http.principal.map(|p| Name::new(&p.subject)),
            client_id: http
                .principal
                .and_then(|p| p.client_id.as_deref())
                .map(Name::new),
        });
        let watch = Box::new(Watch {
            metrics,
            tracing,
            audit,
            session_id: http.session_id.into(),
            headers,
            overhead: metrics.map(|m| m.overhead_of(&Name::new(http.path))),
            session,
            version,
            started: Instant::now(),
            open: Mutex::new(Table::default()),
        });
        Tx {
            sender,
            watch: Some(watch),
        }
    }

    /// The session's revision, agreed by its `initialize`.
    pub(crate) fn set_version(&self, version: ProtocolVersion) {
        if let Some(w) = &self.watch {
            let _ = w.version.set(version.as_str());
        }
    }

    /// Request `r` (of `route`) arrived: its clock starts and, with traces
    /// on, its server span, whose context `r`'s `_meta` then carries on. A
    /// request already open under its id keeps its start.
    pub(crate) fn arrived(&self, r: &mut Request, route: Route) {
        let Some(w) = &self.watch else { return };
        // One lookup: held while the span starts (it takes no lock of ours).
        let mut table = lock(&w.open);
        let std::collections::hash_map::Entry::Vacant(slot) = table.open.entry(r.id.clone()) else {
            return;
        };
        let (mut tool, mut prompt) = (None, None);
        let name = route
            .used()
            .and_then(|_| crate::metrics::label_name(r.params.as_deref()));
        if let (Some(kind), Some(m)) = (route.used(), w.metrics) {
            let label = name.as_deref().map(|n| m.name_label(n));
            match kind {
                crate::pin::Kind::Prompt => prompt = label,
                _ => tool = label,
            }
        }
        // A copy only for the span (its start rewrites `r`'s `_meta`).
        let name = name.filter(|_| w.tracing.is_some()).map(|n| n.into_owned());
        let method = method_label(&r.method);
        let span = w.tracing.map(|t| {
            let labels = crate::trace::Labels {
                method,
                target: name.as_deref(),
                version: w.version.get().copied(),
                session: (!w.session_id.is_empty()).then_some(&*w.session_id),
                transport: "tcp",
            };
            let headers = w.headers.as_ref().map(|(p, s)| (p.as_str(), s.as_deref()));
            let tool = route.used() == Some(crate::pin::Kind::Tool);
            t.server_span(r, headers, &labels, tool)
        });
        let asked = w
            .audit
            .as_ref()
            .and_then(|a| asked(method, r, a.trail.is_some()));
        slot.insert(Open {
            at: Instant::now(),
            method,
            tool,
            prompt,
            upstream: None,
            span,
            asked,
        });
    }

    /// The trace id of open request `id`, when traced and sampled (for its
    /// log lines).
    pub(crate) fn trace_id(&self, id: &Id) -> Option<String> {
        let w = self.watch.as_ref()?;
        lock(&w.open).open.get(id)?.span.as_ref()?.trace_id()
    }

    /// The forwarded call of request `id` was answered by `upstream`,
    /// after `took` there (known with metrics or traces on; `None` too for
    /// a call cancelled there).
    pub(crate) fn upstream_took(
        &self,
        id: &Id,
        upstream: &crate::upstream::Upstream,
        took: Option<Duration>,
    ) {
        let Some(w) = &self.watch else { return };
        if let Some(open) = lock(&w.open).open.get_mut(id) {
            open.upstream = took;
            if let Some(asked) = &mut open.asked {
                asked.upstream = Some(upstream.label_value());
            }
        }
    }

    /// Request `id` was let through though not as approved (warn mode):
    /// its record says `drift: drifted`.
    pub(crate) fn drifted(&self, id: &Id) {
        let Some(w) = &self.watch else { return };
        if let Some(asked) = lock(&w.open)
            .open
            .get_mut(id)
            .and_then(|o| o.asked.as_mut())
        {
            asked.drifted = true;
        }
    }

    /// Measures `message` when it answers a request.
    fn answering(&self, message: &Message) {
        let Some(w) = &self.watch else { return };
        let (Message::Response(_) | Message::Error(_)) = message else {
            return;
        };
        let Some(id) = message.id() else { return };
        let mut table = lock(&w.open);
        let Some(open) = table.open.remove(id) else {
            return;
        };
        let took = open.at.elapsed();
        let outcome = Outcome::of(message, open.method);
        if let (Some(a), Some(asked)) = (&w.audit, open.asked) {
            // Only an answer no upstream gave can be a refusal of ours.
            let refused = asked.upstream.is_none().then(|| refusal(message)).flatten();
            a.record(open.method, *asked, outcome, refused, took);
        }
        if let Some(span) = open.span {
            let initialize = open.method == switchboard_protocol::types::INITIALIZE;
            span.end(outcome, w.version.get().copied().filter(|_| initialize));
        }
        let Some(m) = w.metrics else { return };
        let op = Operation {
            method: open.method,
            tool: open.tool,
            prompt: open.prompt,
            outcome,
            version: w.version.get().copied(),
            transport: "tcp",
            upstream: None,
        };
        m.server_operation(&mut table.last, op, took);
        drop(table);
        if let (Some(upstream), Some(h)) = (open.upstream, &w.overhead) {
            Metrics::overhead(h, took.saturating_sub(upstream));
        }
    }

    /// [`Sender::send`], measured.
    /// The sender's own future, not one around it: the futures of the
    /// tasks that send stay the size they were.
    pub(crate) fn send(
        &self,
        message: Message,
    ) -> impl std::future::Future<Output = Result<(), SendError>> + Send + '_ {
        self.answering(&message);
        self.sender.send(message)
    }

    /// [`Sender::send_related`], measured.
    pub(crate) fn send_related(
        &self,
        message: Message,
        related: Option<Id>,
    ) -> impl std::future::Future<Output = Result<(), SendError>> + Send + '_ {
        self.answering(&message);
        self.sender.send_related(message, related)
    }

    /// [`Sender::forget`]: request `id` gets no answer (cancelled), and is
    /// not measured; its record and span say `cancelled`.
    pub(crate) fn forget(&self, id: &Id) {
        if let Some(w) = &self.watch {
            let open = lock(&w.open).open.remove(id);
            if let Some(open) = open {
                let took = open.at.elapsed();
                if let (Some(a), Some(asked)) = (&w.audit, open.asked) {
                    a.record(open.method, *asked, Outcome::Cancelled, None, took);
                }
                if let Some(span) = open.span {
                    span.end(Outcome::Cancelled, None);
                }
            }
        }
        self.sender.forget(id);
    }
}

/// An audited request's name and arguments (`None`: not audited): a
/// tool's or prompt's `name` and (`arguments`: kept) `arguments`, a
/// resource's `uri`.
fn asked(method: &'static str, r: &Request, arguments: bool) -> Option<Box<Asked>> {
    use switchboard_protocol::types as t;
    let key = match method {
        t::TOOLS_CALL | t::PROMPTS_GET => "name",
        t::RESOURCES_READ => "uri",
        _ => return None,
    };
    let params = r
        .params
        .as_deref()
        .and_then(|p| crate::raw::RawObject::parse(p.get()).ok());
    let field = |k: &str| params.as_ref().and_then(|p| p.get(k));
    Some(Box::new(Asked {
        name: field(key)
            .and_then(|v| serde_json::from_str(v.get()).ok())
            .map(|mut name: String| {
                crate::audit::cut(&mut name, NAME_RECORDED);
                name
            }),
        arguments: field("arguments")
            .filter(|_| arguments)
            .map(ToOwned::to_owned),
        upstream: None,
        drifted: false,
    }))
}

/// The longest name (or URI) a record keeps, in bytes (a longer one is
/// cut, saying how long it was).
const NAME_RECORDED: usize = 4096;

/// Why policy refused a request, from its error answer's `data.reason`.
fn refusal(message: &Message) -> Option<String> {
    let Message::Error(e) = message else {
        return None;
    };
    #[derive(serde::Deserialize)]
    struct Data {
        reason: String,
    }
    let data = e.error.data.as_deref()?;
    serde_json::from_str::<Data>(data.get())
        .ok()
        .map(|d| d.reason)
}

impl Deref for Tx {
    type Target = Sender;

    fn deref(&self) -> &Sender {
        &self.sender
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let (Some(kind), Some(m)) = (self.session, self.metrics) {
            m.session_closed(kind, self.version.get().copied(), self.started.elapsed());
        }
    }
}
