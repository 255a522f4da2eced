//! A downstream session's sender, measured: each request from its arrival
//! to its answer (`mcp.server.operation.duration`, with `error.type` from the
//! answer), a forwarded call's own time here (its duration less its
//! upstream's), and the session's life (open sessions, `mcp.server.session.duration`).
//! One for the bridge's and the gateway's sessions and exchanges alike. With
//! metrics off ([`crate::metrics::get`]) it keeps nothing and is the bare
//! [`Sender`].
//!
//! This module must not know routes, upstreams or policy: the session says
//! when a request arrived and what an upstream took.

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

/// A session's (or exchange's) sender, measured when metrics are on.
pub(crate) struct Tx {
    sender: Sender,
    watch: Option<Box<Watch>>,
}

struct Watch {
    metrics: &'static Metrics,
    /// The endpoint path it came in on (a gateway route's, the bridge's).
    route: Name,
    /// `Some` for a session (counted open until dropped); `None` for one
    /// stateless exchange.
    session: Option<&'static str>,
    version: OnceLock<&'static str>,
    started: Instant,
    open: Mutex<HashMap<Id, Open>>,
}

/// A request not answered yet.
struct Open {
    at: Instant,
    method: &'static str,
    tool: Option<Name>,
    prompt: Option<Name>,
    /// A forwarded call's time at its upstream, once answered there.
    upstream: Option<Duration>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Tx {
    /// `sender` of a downstream session or exchange of `kind`, on `route`
    /// (its endpoint path), speaking `version` as far as known.
    pub(crate) fn new(
        sender: Sender,
        kind: SessionKind,
        version: ProtocolVersion,
        route: &str,
    ) -> Tx {
        let watch = metrics::get().map(|m| {
            let session = match kind {
                SessionKind::Stateless => None,
                SessionKind::Stateful => Some("streamable_http"),
                _ => Some("sse"),
            };
            if let Some(s) = session {
                m.session_opened(s);
            }
            let version_known = OnceLock::new();
            if kind != SessionKind::Stateful {
                let _ = version_known.set(version.as_str());
            }
            Box::new(Watch {
                metrics: m,
                route: Name::new(route),
                session,
                version: version_known,
                started: Instant::now(),
                open: Mutex::new(HashMap::default()),
            })
        });
        Tx { sender, watch }
    }

    /// The session's revision, agreed by its `initialize`.
    pub(crate) fn set_version(&self, version: ProtocolVersion) {
        if let Some(w) = &self.watch {
            let _ = w.version.set(version.as_str());
        }
    }

    /// Request `r` (of `route`) arrived: its clock starts.
    pub(crate) fn arrived(&self, r: &Request, route: Route) {
        let Some(w) = &self.watch else { return };
        let (mut tool, mut prompt) = (None, None);
        if let Some(kind) = route.used() {
            let name = crate::policy::params_name(r.params.as_deref());
            let label = name.map(|n| w.metrics.name_label(&n));
            match kind {
                crate::pin::Kind::Prompt => prompt = label,
                _ => tool = label,
            }
        }
        let open = Open {
            at: Instant::now(),
            method: method_label(&r.method),
            tool,
            prompt,
            upstream: None,
        };
        lock(&w.open).insert(r.id.clone(), open);
    }

    /// The forwarded call of request `id` took `took` at its upstream.
    pub(crate) fn upstream_took(&self, id: &Id, took: Duration) {
        let Some(w) = &self.watch else { return };
        if let Some(open) = lock(&w.open).get_mut(id) {
            open.upstream = Some(took);
        }
    }

    /// Measures `message` when it answers a request.
    fn answering(&self, message: &Message) {
        let Some(w) = &self.watch else { return };
        let (Message::Response(_) | Message::Error(_)) = message else {
            return;
        };
        let Some(id) = message.id() else { return };
        let Some(open) = lock(&w.open).remove(id) else {
            return;
        };
        let took = open.at.elapsed();
        let op = Operation {
            method: open.method,
            tool: open.tool,
            prompt: open.prompt,
            outcome: Outcome::of(message),
            version: w.version.get().copied(),
            transport: "tcp",
            upstream: None,
        };
        w.metrics.server_operation(&op, took);
        if let Some(upstream) = open.upstream {
            w.metrics
                .overhead(w.route.as_str(), took.saturating_sub(upstream));
        }
    }

    /// [`Sender::send`], measured.
    pub(crate) async fn send(&self, message: Message) -> Result<(), SendError> {
        self.answering(&message);
        self.sender.send(message).await
    }

    /// [`Sender::send_related`], measured.
    pub(crate) async fn send_related(
        &self,
        message: Message,
        related: Option<Id>,
    ) -> Result<(), SendError> {
        self.answering(&message);
        self.sender.send_related(message, related).await
    }

    /// [`Sender::forget`]: request `id` gets no answer (cancelled), and is
    /// not measured.
    pub(crate) fn forget(&self, id: &Id) {
        if let Some(w) = &self.watch {
            lock(&w.open).remove(id);
        }
        self.sender.forget(id);
    }
}

impl Deref for Tx {
    type Target = Sender;

    fn deref(&self) -> &Sender {
        &self.sender
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(kind) = self.session {
            self.metrics
                .session_closed(kind, self.version.get().copied(), self.started.elapsed());
        }
    }
}
