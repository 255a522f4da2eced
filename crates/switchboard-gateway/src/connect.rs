//! The reverse direction: a stdio MCP server for a local host app (a desktop
//! client, an IDE) that forwards every message to a remote MCP server over HTTP
//! (`switchboard connect URL`).
//!
//! ```text
//! host app ──stdio──> first message
//!   initialize (a legacy client)
//!       ──> Streamable HTTP: POST initialize; the answer goes back as is and the
//!           negotiated revision sets the transport's MCP-Protocol-Version
//!       ──> on 400/404/405 without a JSON-RPC answer: legacy HTTP+SSE (GET the
//!           same URL, `endpoint` event, POSTs), initialize again
//!   a 2026-07-28 request (its _meta names the revision)
//!       ──> Streamable HTTP in the 2026-07-28 shape (headers from each body)
//!   any other request: answered here (`ping`: `{}`, else -32600); wait on
//! then every message both ways, unchanged (one downstream client: ids need no
//! remapping), except an `initialize` while relaying in the 2026-07-28 shape:
//!   the host app fell back to a legacy session (REVISIONS.md §6: re-probe,
//!   then fall back; a host app that remembered the remote as 2026-07-28 finds
//!   it is not), so the relay leaves the 2026-07-28 shape for good and opens
//!   the legacy path as for a first `initialize` (Streamable HTTP and its
//!   session, or HTTP+SSE). What was in flight on the 2026-07-28 path ends
//!   there: answers already received are relayed, every request still
//!   unanswered (a `subscriptions/listen` included) gets an error answer at
//!   once, before the initialize's answer, and its HTTP exchange is dropped
//!   once the legacy path is open (in 2026-07-28, closing the stream is the
//!   cancellation), so no answer of the old path can come after the switch or
//!   be taken for the new session's;
//!   a later `notifications/cancelled` for one of them goes to the new session,
//!   which ignores an id it never saw ("Cancellation")
//! the remote going away ends the relay with an error (an HTTP+SSE session
//! whose event stream ends cannot be resumed: 2024-11-05 has no resumption, so
//! `connect` ends and says so), after every request of the host app's still
//! unanswered got an error answer (-32000, saying why; no answer can come);
//! the host app closing stdin ends it cleanly:
//!   the host app's requests already forwarded and not yet answered are waited
//!   for (at most `drain_on_close`, 10 s by default; not one it cancelled, nor a
//!   `subscriptions/listen`, which never ends on its own), their answers (and
//!   the remote's notifications meanwhile) written to stdout; a request of the
//!   remote's then gets an error at once (no one can answer it); then the remote
//!   session is deleted (waited for, at most SESSION_END_BOUND, 3 s) and stdout
//!   flushed (at most CONNECT_FLUSH_BOUND)
//! ```
//!
//! Spec sources: MCP 2025-11-25 "Transports → Streamable HTTP → Backwards
//! compatibility" (the SSE fallback), 2026-07-28 "Transports" and REVISIONS.md §6;
//! the end of stdin: 2025-11-25 "Lifecycle → Shutdown" and "Transports → stdio"
//! (a client shuts a stdio server down by closing its input; the answers it is
//! owed still go out).
//! A legacy host app in front of a remote that speaks only 2026-07-28 gets the
//! remote's own error for `initialize` (era translation in that direction is the
//! gateway's job).
//!
//! Extra headers ([`ConnectConfig::headers`]) may not name one the HTTP
//! transports set themselves (`switchboard_transport::http::client::MANAGED_HEADERS`:
//! `Mcp-Session-Id`, `Host`, `Accept`, ...): the relay refuses them before it
//! reads anything, as the transports do.
//!
//! This module must not know what the messages mean beyond the first one, an
//! `initialize` later in the 2026-07-28 shape, and which ids of the host app's
//! requests are unanswered (for the end of stdin and for that switch); nor HTTP
//! itself (the transport crate's clients).

use crate::classify::{Notice, Route};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use switchboard_protocol::jsonrpc::{
    code, ErrorObject, ErrorResponse, Id, Message, Request, Response,
};
use switchboard_protocol::types::{meta, CancelledNotificationParams, SUBSCRIPTIONS_LISTEN};
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::http::client::{self as http_client, HttpClientConfig};
use switchboard_transport::http::sse_client::{self, SseClientConfig};
use switchboard_transport::{stdio, Inbound, Receiver, Sender, TransportConfig};
use tracing::{debug, info, warn};

/// What `switchboard connect` needs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConnectConfig {
    /// The remote MCP endpoint (`http://` or `https://`).
    pub url: String,
    /// Extra headers for every HTTP request, e.g. `("Authorization", "Bearer …")`.
    /// A name the transports manage (`Mcp-Session-Id`, `MCP-Protocol-Version`,
    /// `Host`, `Content-Type`, `Accept`, ...:
    /// `switchboard_transport::http::client::managed_header`) or an invalid
    /// name or value makes [`connect_stdio`] fail at once, before anything is
    /// read or sent.
    pub headers: Vec<(String, String)>,
    /// How long the remote has to answer the first message. Default 30 s.
    pub first_answer_timeout: Duration,
    /// Once the host app has closed stdin, how long the answers to its requests
    /// already forwarded to the remote are still waited for and written to
    /// stdout (not for a request it cancelled, nor a `subscriptions/listen`);
    /// the relay then ends (the requests still unanswered get none).
    /// Zero: the relay ends at once. Default [`CONNECT_DRAIN_ON_CLOSE`] (10 s).
    /// Spec: MCP 2025-11-25 "Lifecycle → Shutdown", "Transports → stdio".
    pub drain_on_close: Duration,
    /// MCP authorization for the Streamable HTTP transports
    /// ([`HttpClientConfig::auth`]). Default none.
    pub auth: Option<std::sync::Arc<switchboard_transport::http::auth::OAuthClient>>,
}

/// The default of [`ConnectConfig::drain_on_close`]: 10 s (as the library
/// server's `DRAIN_ON_CLOSE`).
pub const CONNECT_DRAIN_ON_CLOSE: Duration = Duration::from_secs(10);

impl ConnectConfig {
    /// The defaults, for `url`.
    pub fn new(url: impl Into<String>) -> Self {
        ConnectConfig {
            url: url.into(),
            headers: Vec::new(),
            first_answer_timeout: Duration::from_secs(30),
            drain_on_close: CONNECT_DRAIN_ON_CLOSE,
            auth: None,
        }
    }
}

/// Serves our stdin/stdout as an MCP server that relays to `config.url` until
/// either side ends. When the host app closes stdin, the answers to its requests
/// already forwarded are relayed first (at most
/// [`ConnectConfig::drain_on_close`]). Before it returns, what is queued for the
/// host app is written to stdout, waiting at most [`CONNECT_FLUSH_BOUND`].
///
/// Errors (as text for the command line, one line): a header is invalid or one
/// the transport manages (before anything is read), the URL is invalid, the
/// remote cannot be reached in any era (each attempt's failure named), or it
/// went away during the relay.
pub async fn connect_stdio(config: ConnectConfig) -> Result<ConnectEnd, String> {
    let down = stdio::serve(&TransportConfig::default());
    let (down_tx, down_rx) = down.split();
    let out = down_tx.clone();
    let signalled = Arc::new(AtomicI32::new(0));
    let stop = {
        let signalled = signalled.clone();
        Box::pin(async move { signalled.store(stop_signal().await, Ordering::Relaxed) })
    };
    let outcome = relay_until(config, down_tx, down_rx, stop).await;
    // What is queued for the host app (an answer to its last request, the error
    // answer to its `initialize`) is written before the process ends; bounded, as
    // a host app that stopped reading would hold it forever.
    let _ = tokio::time::timeout(CONNECT_FLUSH_BOUND, out.flush()).await;
    outcome.map(|()| match signalled.load(Ordering::Relaxed) {
        0 => ConnectEnd::Closed,
        n => ConnectEnd::Signal(n),
    })
}

/// How [`connect_stdio`] ended, when not in error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectEnd {
    /// Either side closed: the host app's stdin, or the remote's session.
    Closed,
    /// A signal (its number: SIGINT, SIGTERM or SIGHUP) stopped it, after the
    /// remote session was ended.
    Signal(i32),
}

/// How long [`connect_stdio`] waits, once the relay has ended, for what is queued
/// for the host app to be written to stdout.
pub const CONNECT_FLUSH_BOUND: Duration = Duration::from_secs(5);

/// [`connect_stdio`] over any downstream transport halves (tests use a pipe).
pub async fn relay_from(
    config: ConnectConfig,
    down_tx: Sender,
    down_rx: Receiver,
) -> Result<(), String> {
    relay_until(config, down_tx, down_rx, Box::pin(std::future::pending())).await
}

/// SIGTERM, SIGINT or SIGHUP (their numbers: 15, 2, 1): a host app that stops
/// `connect` with a signal instead of closing stdin (Node's `child.kill()` sends
/// SIGTERM) ends the remote session too, which would otherwise be left for its
/// idle timeout. Resolves to the signal's number.
async fn stop_signal() -> i32 {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
            signal(SignalKind::hangup()),
        ) {
            return tokio::select! {
                _ = term.recv() => 15,
                _ = int.recv() => 2,
                _ = hup.recv() => 1,
            };
        }
    }
    std::future::pending::<i32>().await
}

type Stop = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// [`relay_from`] until `stop` too: then the remote session is ended at once
/// (no drain: the host app is going) and the relay returns `Ok`.
async fn relay_until(
    config: ConnectConfig,
    down_tx: Sender,
    mut down_rx: Receiver,
    mut stop: Stop,
) -> Result<(), String> {
    check_headers(&config.headers)?;
    check_url(&config.url)?;
    let first = loop {
        let event = tokio::select! {
            event = down_rx.recv() => event,
            () = &mut stop => return Ok(()),
        };
        match event {
            // A 2026-aware host app probes with `server/discover` and, when the
            // remote refuses it (a server of 2025-11-25 or older), falls back
            // to `initialize`: the probe is one exchange of its own, and a
            // refusal leaves the era open.
            Some(Inbound::Message(Message::Request(r)))
                if Route::of(&r.method) == Route::Discover && is_modern(&r) =>
            {
                if let Some((up_tx, up_rx)) = probe_modern(&config, r, &down_tx).await? {
                    let ends = Relay::new(config, Shape::Modern, down_tx, up_tx);
                    return ends.run(down_rx, up_rx, stop).await;
                }
            }
            Some(Inbound::Message(Message::Request(r)))
                if Route::of(&r.method) == Route::Initialize || is_modern(&r) =>
            {
                break r
            }
            // Nothing to relay to yet: answered here, and the host app may go on.
            Some(Inbound::Message(Message::Request(r))) => {
                if down_tx.send(before_the_first(r)).await.is_err() {
                    return Ok(());
                }
            }
            Some(Inbound::Message(other)) => debug!(?other, "ignored before the first request"),
            Some(Inbound::Failed { id, .. }) => debug!(%id, "ignored before the first request"),
            Some(Inbound::Batch(_)) => warn!("a batch before initialize: ignored"),
            Some(Inbound::Closed { .. }) | None => return Ok(()),
        }
    };
    if Route::of(&first.method) == Route::Initialize {
        let (up_tx, up_rx, shape) = open_legacy(&config, first, &down_tx).await?;
        let ends = Relay::new(config, shape, down_tx, up_tx);
        return ends.run(down_rx, up_rx, stop).await;
    }
    // A 2026-07-28 first request is forwarded, not answered, before the relay.
    let (up_tx, up_rx) = open_modern(&config).await?;
    let mut ends = Relay::new(config, Shape::Modern, down_tx, up_tx);
    ends.up(Message::Request(first)).await?;
    ends.run(down_rx, up_rx, stop).await
}

/// Refuses, before anything is read or sent, a URL that is not an absolute
/// `http://` or `https://` URL with a host (the rule the HTTP client transports
/// apply when they start, which would otherwise only show at the host app's
/// first message).
fn check_url(url: &str) -> Result<(), String> {
    http_client::check_endpoint_url(url).map_err(|e| format!("the URL {e}"))
}

/// Refuses, before anything is read or sent, an extra header that is not a
/// valid HTTP header or that names one the transports set themselves
/// (`Mcp-Session-Id`, `Host`, `Accept`, ...; the transport crate's
/// `managed_header`, whose refusal this is too).
fn check_headers(headers: &[(String, String)]) -> Result<(), String> {
    for (name, value) in headers {
        http_client::refuse_managed_header(name)?;
        HeaderName::try_from(name.as_str()).map_err(|e| format!("header {name:?}: {e}"))?;
        HeaderValue::try_from(value.as_str()).map_err(|e| format!("header {name:?}: {e}"))?;
    }
    Ok(())
}

/// Which transport the relay forwards over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Stateless 2026-07-28 requests over Streamable HTTP (headers from each
    /// body, no session).
    Modern,
    /// A Streamable HTTP session (2025-03-26 to 2025-11-25), or the Streamable
    /// HTTP transport whose `initialize` the remote answered with an error.
    Streamable,
    /// A legacy HTTP+SSE session (2024-11-05): it lasts as long as its event
    /// stream, which cannot be resumed.
    Sse,
}

/// One line of text (what the command line prints): line breaks and runs of
/// whitespace in a remote's error body become one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The answer to a request that comes before the host app has chosen an era
/// (neither `initialize` nor a 2026-07-28 request): `ping` gets its empty result
/// (allowed before initialization in every revision, "Lifecycle"), anything else
/// -32600 saying what to send first. The relay goes on waiting for that.
fn before_the_first(r: Request) -> Message {
    if Route::of(&r.method) == Route::Ping {
        return Message::Response(Response {
            id: r.id,
            result: crate::upstream::empty_object(),
        });
    }
    warn!(method = %r.method, "a request before initialize: refused");
    Message::Error(ErrorResponse::new(
        Some(r.id),
        ErrorObject::new(
            code::INVALID_REQUEST,
            format!(
                "{:?} before initialize: send initialize first (2024-11-05 to 2025-11-25), or a request whose _meta names 2026-07-28",
                r.method
            ),
        ),
    ))
}

/// Whether the host app is owed an answer to `r` when it closes stdin: not for
/// a `subscriptions/listen`, which never ends on its own (a client closes it).
fn owed(r: &Request) -> bool {
    r.method != SUBSCRIPTIONS_LISTEN
}

fn is_modern(r: &Request) -> bool {
    r.params
        .as_ref()
        .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
        .and_then(|p| {
            p.get("_meta")?
                .get(meta::PROTOCOL_VERSION)?
                .as_str()
                .map(str::to_owned)
        })
        .and_then(|v| ProtocolVersion::parse(&v))
        .is_some_and(|v| v == ProtocolVersion::V2026_07_28)
}

fn http_config(config: &ConnectConfig) -> HttpClientConfig {
    let mut c = HttpClientConfig::new(config.url.clone());
    c.headers = config.headers.clone();
    c.standalone_stream = true;
    c.auth = config.auth.clone();
    c
}

/// Whether the transport's failure to get an answer to `initialize` says "not this
/// transport": an HTTP 400/404/405 without a JSON-RPC body, or no HTTP answer at
/// all.
fn wrong_transport(failure: &ErrorObject) -> bool {
    let status = failure
        .data
        .as_ref()
        .and_then(|d| serde_json::from_str::<Value>(d.get()).ok())
        .and_then(|d| d.get("httpStatus").and_then(Value::as_u64));
    // No status at all: the remote could not be reached; SSE is the last try.
    matches!(status, None | Some(400 | 404 | 405))
}

/// Sends `initialize` on `tx` and waits for its answer (`Ok(Err(_))`: the
/// transport's failure to get one), forwarding anything else that arrives first to
/// the host app.
async fn first_answer(
    config: &ConnectConfig,
    tx: &Sender,
    rx: &mut Receiver,
    init: &Request,
    down_tx: &Sender,
) -> Result<Result<Message, ErrorObject>, String> {
    tx.send(Message::Request(init.clone()))
        .await
        .map_err(|_| "the connection to the remote closed".to_owned())?;
    let wait = config.first_answer_timeout;
    tokio::time::timeout(wait, async {
        loop {
            match rx.recv().await {
                Some(Inbound::Message(m)) if m.id() == Some(&init.id) && m.method().is_none() => {
                    return Ok(Ok(m))
                }
                Some(Inbound::Failed { id, error }) if id == init.id => return Ok(Err(error)),
                Some(Inbound::Message(m)) => {
                    let _ = down_tx.send(m).await;
                }
                Some(Inbound::Failed { id, error }) => {
                    let _ = down_tx.send(Inbound::failure_response(id, error)).await;
                }
                Some(Inbound::Batch(_)) => {}
                Some(Inbound::Closed { .. }) | None => {
                    return Err("the remote closed the connection".to_owned())
                }
            }
        }
    })
    .await
    .map_err(|_| format!("the remote did not answer {} within {wait:?}", init.method))?
}

/// The legacy path for the host app's `initialize`: Streamable HTTP, and on a
/// failure that says "not this transport" ([`wrong_transport`]) HTTP+SSE, with
/// the answer relayed to the host app (an error answer when neither transport
/// answered, which is then also the `Err`, naming each attempt's failure).
async fn open_legacy(
    config: &ConnectConfig,
    init: Request,
    down_tx: &Sender,
) -> Result<(Sender, Receiver, Shape), String> {
    let (transport, handle) =
        http_client::connect(http_config(config)).map_err(|e| e.to_string())?;
    let (tx, mut rx) = transport.split();
    let mut streamable_failure = String::new();
    let answer = match first_answer(config, &tx, &mut rx, &init, down_tx).await? {
        Ok(answer) => Some(answer),
        Err(failure) if wrong_transport(&failure) => {
            streamable_failure = failure.message.clone();
            None
        }
        Err(failure) => Some(Inbound::failure_response(init.id.clone(), failure)),
    };
    if let Some(answer) = answer {
        if let Message::Response(_) = &answer {
            let version = negotiated(&answer);
            handle.set_protocol_version(version);
            info!(url = %config.url, version = ?version.map(|v| v.as_str()), "connected over Streamable HTTP");
        }
        allow_batches(down_tx, &answer);
        let _ = down_tx.send(answer).await;
        return Ok((tx, rx, Shape::Streamable));
    }
    drop((tx, rx));
    info!(url = %config.url, "Streamable HTTP refused initialize; trying the legacy HTTP+SSE transport");
    let mut sse = SseClientConfig::default();
    let mut headers = HeaderMap::new();
    for (k, v) in &config.headers {
        let name = HeaderName::try_from(k.as_str()).map_err(|e| format!("header {k:?}: {e}"))?;
        let value = HeaderValue::try_from(v.as_str()).map_err(|e| format!("header {k:?}: {e}"))?;
        // Appended, as the Streamable HTTP client sends a repeated one.
        headers.append(name, value);
    }
    sse.headers = headers;
    let transport = match sse_client::connect(&config.url, sse).await {
        Ok(t) => t,
        Err(e) => {
            let why = one_line(&format!(
                "{}: neither transport answered initialize: Streamable HTTP: {}; then HTTP+SSE: {}",
                config.url,
                streamable_failure,
                switchboard_transport::error_chain(&e)
            ));
            // The host app gets an answer to its initialize, never silence.
            let refusal = Message::Error(ErrorResponse::new(
                Some(init.id.clone()),
                ErrorObject::new(code::INTERNAL_ERROR, why.clone()),
            ));
            let _ = down_tx.send(refusal).await;
            return Err(why);
        }
    };
    let (tx, mut rx) = transport.split();
    let answer = first_answer(config, &tx, &mut rx, &init, down_tx)
        .await?
        .unwrap_or_else(|failure| Inbound::failure_response(init.id.clone(), failure));
    info!(url = %config.url, "connected over HTTP+SSE");
    allow_batches(down_tx, &answer);
    let _ = down_tx.send(answer).await;
    Ok((tx, rx, Shape::Sse))
}

/// The `protocolVersion` an `initialize` answer negotiated, if it is a result
/// naming one we know.
fn negotiated(answer: &Message) -> Option<ProtocolVersion> {
    let Message::Response(r) = answer else {
        return None;
    };
    serde_json::from_str::<Value>(r.result.get())
        .ok()
        .and_then(|v| {
            v.get("protocolVersion")?
                .as_str()
                .and_then(ProtocolVersion::parse)
        })
}

/// Sets the host app's batching rule from the `initialize` answer before it is
/// relayed: a 2025-03-26 session takes JSON-RPC batches on stdio (MCP
/// 2025-03-26, "Base protocol → Batching": MUST accept), as the library's own
/// stdio server does; the items are relayed to the remote one by one.
fn allow_batches(down_tx: &Sender, answer: &Message) {
    if let Some(version) = negotiated(answer) {
        down_tx.set_batching(version.batching());
    }
}

/// The host app's `server/discover` probe, sent as a 2026-07-28 request and its
/// answer relayed: `Some` (the 2026-07-28 relay's ends) when the remote answered
/// it with a result, `None` when it refused it (the host app got the refusal and
/// may go on with `initialize`).
async fn probe_modern(
    config: &ConnectConfig,
    probe: Request,
    down_tx: &Sender,
) -> Result<Option<(Sender, Receiver)>, String> {
    let (transport, handle) =
        http_client::connect(http_config(config)).map_err(|e| e.to_string())?;
    handle.set_protocol_version(Some(ProtocolVersion::V2026_07_28));
    let (tx, mut rx) = transport.split();
    let answer = first_answer(config, &tx, &mut rx, &probe, down_tx)
        .await?
        .unwrap_or_else(|failure| Inbound::failure_response(probe.id.clone(), failure));
    let accepted = matches!(answer, Message::Response(_));
    let _ = down_tx.send(answer).await;
    if accepted {
        info!(url = %config.url, "relaying 2026-07-28 requests");
        return Ok(Some((tx, rx)));
    }
    info!(url = %config.url, "the remote refused server/discover; waiting for initialize");
    Ok(None)
}

/// The Streamable HTTP transport in the 2026-07-28 shape (nothing sent yet).
async fn open_modern(config: &ConnectConfig) -> Result<(Sender, Receiver), String> {
    let (transport, handle) =
        http_client::connect(http_config(config)).map_err(|e| e.to_string())?;
    handle.set_protocol_version(Some(ProtocolVersion::V2026_07_28));
    info!(url = %config.url, "relaying 2026-07-28 requests");
    Ok(transport.split())
}

/// How long the end of the relay waits for the remote session to be ended (its
/// `DELETE` sent and answered: the HTTP client's own bound is 2 s) before the
/// process may exit, which would abandon it.
const SESSION_END_BOUND: Duration = Duration::from_secs(3);

/// Ends the remote session: drops our last sender (the transport then deletes
/// the session) and waits, at most [`SESSION_END_BOUND`], until the transport
/// says it is closed.
async fn end_session(up_tx: Sender, mut up_rx: Receiver) {
    drop(up_tx);
    let closed = tokio::time::timeout(SESSION_END_BOUND, async {
        loop {
            match up_rx.recv().await {
                Some(Inbound::Closed { reason }) => {
                    debug!(%reason, "the remote session ended");
                    return;
                }
                None => return,
                Some(_) => {}
            }
        }
    })
    .await;
    if closed.is_err() {
        debug!("the remote session did not end in time");
    }
}

/// The relay's two senders and the ids of the host app's requests forwarded to
/// the remote and not answered yet.
struct Relay {
    /// For opening the legacy path when an `initialize` comes in the 2026-07-28
    /// shape.
    config: ConnectConfig,
    shape: Shape,
    down_tx: Sender,
    up_tx: Sender,
    /// The host app's requests forwarded and not answered yet that it is owed
    /// an answer to when it closes stdin ([`owed`]).
    unanswered: HashSet<Id>,
    /// Its `subscriptions/listen` requests still open (2026-07-28): not owed at
    /// the end of stdin, but ended with an error when the relay leaves the
    /// 2026-07-28 shape.
    listens: HashSet<Id>,
    /// The ids of the remote's requests relayed to the host app and not answered
    /// by it yet: when the host app closes stdin, each gets an error at once (no
    /// answer can come), so a call of the host app's that waits on one (a tool
    /// asking for elicitation) can still end within the grace.
    asked: HashMap<Id, String>,
    drain: Duration,
}

impl Relay {
    fn new(config: ConnectConfig, shape: Shape, down_tx: Sender, up_tx: Sender) -> Relay {
        Relay {
            drain: config.drain_on_close,
            config,
            shape,
            down_tx,
            up_tx,
            unanswered: HashSet::new(),
            listens: HashSet::new(),
            asked: HashMap::new(),
        }
    }

    /// Forwards one message of the host app's to the remote, noting a request's id.
    async fn up(&mut self, m: Message) -> Result<(), String> {
        match &m {
            Message::Request(r) if owed(r) => {
                self.unanswered.insert(r.id.clone());
            }
            Message::Request(r) => {
                self.listens.insert(r.id.clone());
            }
            // The host app's answer to a request of the remote's.
            Message::Response(_) | Message::Error(_) => {
                if let Some(id) = m.id() {
                    self.asked.remove(id);
                }
            }
            // A cancelled request is not answered (MCP "Cancellation"): not owed.
            Message::Notification(n) if Notice::of(&n.method) == Notice::Cancelled => {
                let cancelled = n
                    .params
                    .as_ref()
                    .and_then(|p| serde_json::from_str::<CancelledNotificationParams>(p.get()).ok())
                    .and_then(|p| p.request_id);
                if let Some(id) = cancelled {
                    self.unanswered.remove(&id);
                    self.listens.remove(&id);
                }
            }
            _ => {}
        }
        self.up_tx
            .send(m)
            .await
            .map_err(|_| "the connection to the remote closed".to_owned())
    }

    /// Forwards one message of the remote's to the host app, striking an answer's
    /// id off.
    async fn down(&mut self, m: Message) {
        match &m {
            Message::Request(r) => {
                self.asked.insert(r.id.clone(), r.method.clone());
            }
            _ if m.method().is_none() => {
                if let Some(id) = m.id() {
                    self.unanswered.remove(id);
                    self.listens.remove(id);
                }
            }
            _ => {}
        }
        let _ = self.down_tx.send(m).await;
    }

    async fn run(
        mut self,
        mut down_rx: Receiver,
        mut up_rx: Receiver,
        mut stop: Stop,
    ) -> Result<(), String> {
        loop {
            tokio::select! {
                () = &mut stop => {
                    info!("stopped by a signal; ending the remote session");
                    end_session(self.up_tx, up_rx).await;
                    return Ok(());
                }
                event = down_rx.recv() => match event {
                    Some(Inbound::Message(Message::Request(r)))
                        if self.shape == Shape::Modern && Route::of(&r.method) == Route::Initialize =>
                    {
                        up_rx = self.leave_modern(r, up_rx).await?;
                    }
                    Some(Inbound::Message(m)) => self.up(m).await?,
                    // The host app's answer to a remote request was too long to read:
                    // the remote gets an error for it, not silence.
                    Some(Inbound::Failed { id, error }) => {
                        self.up(Inbound::failure_response(id, error)).await?;
                    }
                    Some(Inbound::Batch(items)) => {
                        for item in items {
                            match item {
                                Ok(m) => {
                                    let _ = self.up(m).await;
                                }
                                // JSON-RPC 2.0 §6: an invalid item gets its own
                                // error response (none for a broken notification).
                                Err(e) if e.wants_response() => {
                                    let _ = self.down_tx.send(Message::Error(e.to_response())).await;
                                }
                                Err(_) => {}
                            }
                        }
                    }
                    Some(Inbound::Closed { .. }) | None => {
                        debug!("the host app closed stdin");
                        let outcome = self.drain(&mut up_rx).await;
                        // Then the remote session is deleted, before we exit.
                        end_session(self.up_tx, up_rx).await;
                        return outcome;
                    }
                },
                event = up_rx.recv() => self.on_remote(event, false).await?,
            }
        }
    }

    /// The host app's `initialize` while relaying in the 2026-07-28 shape: it
    /// fell back to a legacy session (REVISIONS.md §6), so the 2026-07-28 path
    /// is left for good. What the remote already answered there is relayed;
    /// every request of the host app's still unanswered on it (listens
    /// included) gets an error answer now, as nothing of that path will be
    /// read later; `init` opens the legacy path as a first `initialize` would
    /// ([`open_legacy`]); then the old path's last sender is dropped, which
    /// drops its HTTP exchanges still open (2026-07-28: closing the stream is
    /// the cancellation). Returns the new path's receiver. Errors: as
    /// [`open_legacy`]'s (the relay then ends).
    async fn leave_modern(
        &mut self,
        init: Request,
        mut up_rx: Receiver,
    ) -> Result<Receiver, String> {
        while let Some(event) = up_rx.try_recv() {
            if matches!(event, Inbound::Closed { .. }) {
                break;
            }
            self.on_remote(Some(event), false).await?;
        }
        let abandoned: Vec<Id> = self
            .unanswered
            .drain()
            .chain(self.listens.drain())
            .collect();
        info!(
            abandoned = abandoned.len(),
            "initialize while relaying 2026-07-28 requests: switching to the legacy transport"
        );
        for id in abandoned {
            let error = ErrorResponse::new(
                Some(id),
                ErrorObject::new(
                    code::INTERNAL_ERROR,
                    "abandoned: the client sent initialize, so this 2026-07-28 request's exchange was closed and the relay switched to a legacy session",
                ),
            );
            let _ = self.down_tx.send(Message::Error(error)).await;
        }
        // 2026-07-28 has no server→client requests; any noted belong to the old
        // path, which can no longer take their answers.
        self.asked.clear();
        drop(up_rx);
        let (up_tx, up_rx, shape) = open_legacy(&self.config, init, &self.down_tx).await?;
        // The old path's last sender: its exchanges still open are dropped.
        drop(std::mem::replace(&mut self.up_tx, up_tx));
        self.shape = shape;
        Ok(up_rx)
    }

    /// One event of the remote's: its messages go to the host app (once the host
    /// app has closed stdin, `draining`, a request of the remote's is refused at
    /// once instead: no answer can come); the host app gets an answer for a
    /// request the transport gave up on; the remote's end is an error (for an
    /// HTTP+SSE session, saying it cannot be resumed).
    async fn on_remote(&mut self, event: Option<Inbound>, draining: bool) -> Result<(), String> {
        let when = if draining { " before answering" } else { "" };
        let why = match event {
            Some(Inbound::Message(m)) => {
                self.for_host(m, draining).await;
                return Ok(());
            }
            Some(Inbound::Failed { id, error }) => {
                self.down(Inbound::failure_response(id, error)).await;
                return Ok(());
            }
            Some(Inbound::Batch(items)) => {
                for m in items.into_iter().flatten() {
                    self.for_host(m, draining).await;
                }
                return Ok(());
            }
            Some(Inbound::Closed { reason }) => format!(" ({reason})"),
            None => String::new(),
        };
        let end = if self.shape == Shape::Sse {
            one_line(&format!(
                "the remote closed the event stream of the legacy HTTP+SSE session{when}{why}; a legacy HTTP+SSE session cannot be resumed (2024-11-05 has no resumption), so connect ends"
            ))
        } else {
            one_line(&format!("the remote went away{when}{why}"))
        };
        self.fail_unanswered(&end).await;
        Err(end)
    }

    /// The remote went away (`why`): every request of the host app's still
    /// unanswered (a `subscriptions/listen` included) gets an error answer
    /// (code `TRANSPORT_ERROR`, -32000, the transport's code for "no answer
    /// came"; message `why`) before the relay ends, as no answer can come any
    /// more (MCP "Lifecycle → Timeouts": a request is answered or fails, it
    /// does not hang). [`connect_stdio`] then writes them out before exiting.
    async fn fail_unanswered(&mut self, why: &str) {
        let owed: Vec<Id> = self
            .unanswered
            .drain()
            .chain(self.listens.drain())
            .collect();
        if !owed.is_empty() {
            info!(
                unanswered = owed.len(),
                "the remote went away; failing the requests in flight"
            );
        }
        for id in owed {
            let error = ErrorResponse::new(
                Some(id),
                ErrorObject::new(
                    switchboard_transport::TRANSPORT_ERROR,
                    format!("no answer: {why}"),
                ),
            );
            let _ = self.down_tx.send(Message::Error(error)).await;
        }
        self.asked.clear();
    }

    /// A message of the remote's for the host app (see [`Self::on_remote`]).
    async fn for_host(&mut self, m: Message, draining: bool) {
        match m {
            Message::Request(r) if draining => self.refuse(r.id, &r.method).await,
            m => self.down(m).await,
        }
    }

    /// Answers a request of the remote's with an error: the host app closed
    /// stdin, so no answer can come.
    async fn refuse(&self, id: Id, method: &str) {
        let refusal = ErrorResponse::new(
            Some(id),
            ErrorObject::new(
                code::INTERNAL_ERROR,
                format!("{method}: the client closed its input; no answer can come"),
            ),
        );
        let _ = self.up_tx.send(Message::Error(refusal)).await;
    }

    /// The host app closed stdin: relays the remote's messages until every request
    /// forwarded is answered, the grace ends or stdout closes. A request of the
    /// remote's is refused at once (the host app can no longer answer it).
    async fn drain(&mut self, up_rx: &mut Receiver) -> Result<(), String> {
        if self.unanswered.is_empty() || self.drain.is_zero() {
            return Ok(());
        }
        // The remote's requests the host app got and did not answer will never
        // be answered now: refused at once, or the calls waiting on them (a
        // tool asking for elicitation) would hold the whole grace and end
        // unanswered.
        for (id, method) in std::mem::take(&mut self.asked) {
            self.refuse(id, &method).await;
        }
        info!(
            waiting = self.unanswered.len(),
            grace_ms = self.drain.as_millis() as u64,
            "the host app closed stdin; relaying the answers still owed"
        );
        let grace = self.drain;
        let out = self.down_tx.clone();
        // The whole wait is bounded, writes to a host app that stopped reading
        // included.
        let relayed = tokio::time::timeout(grace, async {
            while !self.unanswered.is_empty() {
                tokio::select! {
                    () = out.closed() => {
                        debug!("stdout closed while answers were owed");
                        return Ok(());
                    }
                    event = up_rx.recv() => self.on_remote(event, true).await?,
                }
            }
            debug!("every request forwarded was answered");
            Ok(())
        })
        .await;
        relayed.unwrap_or_else(|_| {
            warn!(
                unanswered = self.unanswered.len(),
                "the host app's requests still unanswered when the grace ended"
            );
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_absolute_http_urls_are_taken() {
        assert!(check_url("http://127.0.0.1:8080/mcp").is_ok());
        assert!(check_url("https://example.com/mcp").is_ok());
        for bad in [
            "ftp://x/mcp",
            "/mcp",
            "127.0.0.1:8080/mcp",
            "http://",
            "not a url",
            "",
        ] {
            let e = check_url(bad).expect_err(bad);
            assert!(e.contains("URL"), "{bad}: {e}");
        }
    }
}
