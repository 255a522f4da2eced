//! The legacy HTTP+SSE transport, server side (MCP 2024-11-05, "Transports → HTTP
//! with SSE"; deprecated since 2025-03-26, which keeps it as the clients' last
//! fallback: REVISIONS.md §5.2 and §5.3 "Fallback to HTTP+SSE").
//!
//! Served by the same [`HttpServer`](super::server::HttpServer) as the Streamable
//! HTTP endpoint: same listener, same `Host`/`Origin` checks (403, done before a
//! request reaches this module), same session limit
//! ([`HttpServerConfig::max_sessions`] counts both kinds), same
//! [`SessionAcceptor`](super::server::SessionAcceptor), which yields each legacy
//! session as an [`HttpSession`] with [`SessionKind::LegacySse`] and
//! `protocol_version` 2024-11-05. On the wire (paths from
//! [`HttpServerConfig::sse_path`] and [`HttpServerConfig::message_path`]; for
//! each route `R` of [`HttpServerConfig::routes`], `R/sse` and `R/message`,
//! whose sessions are found there only):
//!
//! | request | answer |
//! |---|---|
//! | `GET <sse_path>` whose `Accept` allows `text/event-stream` (absent, `*/*`, `text/*` or `text/event-stream`) | 200 `text/event-stream`: a new session; the first event is `event: endpoint` with `data: <message_path>?sessionId=<id>` (a relative URI; the id is 32 lowercase hex digits from the OS's CSPRNG, as `Mcp-Session-Id`); then every message the library sends on the session's [`Sender`] as one `message` event (JSON in `data`, no event id: the transport has no resumption); an SSE comment (`: keep-alive`) every [`HttpServerConfig::sse_keep_alive`] while nothing else is sent |
//! | `GET <sse_path>` with another `Accept` | 406 |
//! | `GET <sse_path>` with [`HttpServerConfig::max_sessions`] live and none idle (a Streamable HTTP session idle the longest ends to make room; a legacy one is never idle while its stream is open), after [`HttpServer::refuse_new_sessions`](super::server::HttpServer::refuse_new_sessions), or with the acceptor dropped | 503 |
//! | `POST <message_path>` without `sessionId` | 400 |
//! | `POST <message_path>?sessionId=<id>` naming no live legacy session opened at this path's endpoint | 404 |
//! | ... whose `Content-Type` is not `application/json` | 415 |
//! | ... whose body exceeds [`HttpServerConfig::max_body_bytes`] | 413 |
//! | ... whose body is not JSON | 400, JSON-RPC -32700 with `id: null` |
//! | ... whose body is not one JSON-RPC message (a batch included) | 400, JSON-RPC -32600 (the id kept when it could be read) |
//! | ... an `initialize` request after [`HttpServer::refuse_new_sessions`](super::server::HttpServer::refuse_new_sessions) | 503, JSON-RPC -32000 under its id; the session ends |
//! | ... otherwise | 202, body `Accepted`; the message goes to the session's [`Receiver`] |
//! | another method on either path | 405 with `Allow` |
//!
//! Error bodies are a JSON-RPC error response (`application/json`), as on the
//! Streamable HTTP endpoint. A POST's reply never carries a JSON-RPC response:
//! every response, and every server request and notification, travels on the
//! session's one SSE stream, in the order the library queued them
//! ([`Sender::send_related`]'s hint is irrelevant here).
//!
//! **Batches are refused** (400, -32600) whatever revision the session
//! negotiates: 2024-11-05 defines none (its schema has no batch type;
//! REVISIONS.md §2), and the SDKs' legacy servers (TypeScript
//! `SSEServerTransport`, Python `SseServerTransport`) parse a POST body as one
//! message only. A batch the library itself sends (only possible after it switched
//! batching on for 2025-03-26) goes out as one `message` event holding the array.
//!
//! **The session's life.** It starts with the GET and is yielded to the acceptor
//! before the response starts. It ends, and its stream with it, when:
//! - the client closes the SSE stream (noticed at once when the connection
//!   closes, at the latest at the next keep-alive): the library's receiver gets
//!   [`Inbound::Closed`] with [`CloseReason::PeerClosed`];
//! - no POST arrived and no message was sent for
//!   [`HttpServerConfig::session_idle_timeout`]: [`CloseReason::SessionExpired`].
//!   (A Streamable HTTP session with an open stream never idles out; a legacy
//!   session always has one, so here only traffic counts);
//! - every [`Sender`] of the session is dropped, or the server is
//!   dropped: [`CloseReason::SessionClosed`].
//!
//! Later POSTs naming it get 404.
//!
//! **Backpressure.** The session's outbound queue is drained by one task per
//! session that writes to that session's connection through a queue of
//! [`TransportConfig::channel_capacity`](crate::TransportConfig::channel_capacity)
//! events; a client that does not read its stream fills it, and then that
//! session's [`Sender`] waits, never another session's. A POST waits
//! while the session's inbound queue is full.
//!
//! **Reuse.** A legacy session is a `Session` of `session.rs` kept in the same
//! `Registry` (so the limit, the count and server shutdown cover both kinds),
//! with its standalone stream unused: this module puts a task between the
//! library's queue and the connection (SSE `message` events without ids, the
//! `endpoint` event, keep-alives, the idle rule above). Legacy sessions are
//! registered under `registry_key`: the id prefixed with a non-ASCII marker,
//! which `HeaderValue::to_str` refuses, so no `Mcp-Session-Id` header can name a
//! legacy session on the Streamable HTTP endpoint and no `sessionId` parameter
//! can name a Streamable HTTP session here. No second registry exists.
//!
//! This module knows HTTP and SSE framing; it must not know what the messages
//! mean beyond the envelope (the library answers them), nor the Streamable HTTP
//! request routing of `server.rs`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderValue, ALLOW, CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use switchboard_protocol::codec::sse::encode_comment;
use switchboard_protocol::codec::Event;
use switchboard_protocol::jsonrpc::{
    code, decode_frame, Batching, DecodeErrorKind, ErrorObject, ErrorResponse, Frame, Message,
};
use switchboard_protocol::ProtocolVersion;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::{debug, warn, Instrument};

use super::body::Body;
use super::server::{mint_session_id, HttpServerConfig, HttpSession, SessionKind};
use super::session::{Limits, Registry, Session};
use crate::handle::{CloseReason, Inbound, Outbound, Receiver, Sender, Transport};

/// The default path of the legacy SSE stream: `/sse` (as the TypeScript and
/// Python SDKs' legacy servers).
pub const DEFAULT_SSE_PATH: &str = "/sse";
/// The default path legacy clients POST to: `/message`.
pub const DEFAULT_MESSAGE_PATH: &str = "/message";
/// The default interval of keep-alive comments on a legacy SSE stream: 15 s.
pub const DEFAULT_SSE_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The marker before a legacy session's id in the shared [`Registry`]: U+00B7,
/// which no `HeaderValue::to_str` accepts (not visible ASCII), so a Streamable
/// HTTP `Mcp-Session-Id` can never name a legacy session.
const KEY_MARKER: &str = "sse\u{b7}";

/// The query parameter naming the session in the endpoint URI.
const SESSION_PARAM: &str = "sessionId";

/// The key of the legacy session `id` in the shared [`Registry`].
pub(crate) fn registry_key(id: &str) -> String {
    format!("{KEY_MARKER}{id}")
}

/// Which legacy path a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// [`HttpServerConfig::sse_path`]: GET opens a session.
    Sse,
    /// [`HttpServerConfig::message_path`]: POST delivers a message.
    Message,
}

impl Endpoint {
    /// The legacy path `path` names, if legacy is on
    /// ([`HttpServerConfig::sse_path`] is `Some`). A legacy path equal to the
    /// Streamable HTTP [`HttpServerConfig::path`] is ignored (that endpoint
    /// keeps it).
    pub(crate) fn of(config: &HttpServerConfig, path: &str) -> Option<Endpoint> {
        let sse = config.sse_path.as_deref()?;
        if path == config.path {
            None
        } else if path == sse {
            Some(Endpoint::Sse)
        } else if path == config.message_path {
            Some(Endpoint::Message)
        } else {
            None
        }
    }
}

/// What this module needs of the server: borrowed from `server.rs`'s shared
/// state for one request.
pub(crate) struct Ctx<'a> {
    /// The server's configuration.
    pub(crate) config: &'a HttpServerConfig,
    /// The endpoint whose legacy paths the request is for (a session's
    /// `endpoint`): only its sessions are found.
    pub(crate) endpoint: usize,
    /// That endpoint's path ([`HttpSession::path`]).
    pub(crate) path: &'a str,
    /// That endpoint's legacy message path, named by the `endpoint` event.
    pub(crate) message_path: &'a str,
    /// The live sessions of both kinds.
    pub(crate) registry: &'a Arc<Registry>,
    /// The limits each session runs under.
    pub(crate) limits: &'a Limits,
    /// Where new sessions go.
    pub(crate) acceptor: &'a mpsc::Sender<HttpSession>,
    /// New sessions are refused ([`super::server::HttpServer::refuse_new_sessions`]).
    pub(crate) refusing: &'a AtomicBool,
    /// Who makes the request, when the server checks tokens.
    pub(crate) principal: Option<&'a super::resource::Principal>,
    /// The resource server, when the server checks tokens (per-tool scopes).
    pub(crate) auth: Option<&'a super::resource::ResourceServer>,
}

/// Answers one request for a legacy path (after the `Host`/`Origin` checks).
pub(crate) async fn handle(
    ctx: &Ctx<'_>,
    endpoint: Endpoint,
    req: Request<Incoming>,
) -> Response<Body> {
    match (endpoint, req.method()) {
        (Endpoint::Sse, &Method::GET) => open(ctx, req.headers()).await,
        (Endpoint::Message, &Method::POST) => post(ctx, req).await,
        (Endpoint::Sse, _) => not_allowed("GET"),
        (Endpoint::Message, _) => not_allowed("POST"),
    }
}

fn not_allowed(allow: &'static str) -> Response<Body> {
    let mut response = status_only(StatusCode::METHOD_NOT_ALLOWED);
    response
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allow));
    response
}

fn status_only(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = status;
    response
}

/// A response with a JSON-RPC error body.
fn error_body(status: StatusCode, error: ErrorResponse) -> Response<Body> {
    let mut response = Response::new(Body::full(Message::Error(error).encode()));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// A response with a JSON-RPC error body, `id: null`.
fn rpc_error(status: StatusCode, code: i64, message: impl Into<String>) -> Response<Body> {
    error_body(
        status,
        ErrorResponse::new(None, ErrorObject::new(code, message)),
    )
}

/// The `sessionId` query parameter's value, if present and non-empty.
fn session_param(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(name, _)| *name == SESSION_PARAM)
        .map(|(_, value)| value)
        .filter(|value| !value.is_empty())
}

/// The time of the session's last traffic (a delivered POST or a sent message).
type Activity = Arc<Mutex<Instant>>;

fn touch(activity: &Activity) {
    *activity.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
}

fn last(activity: &Activity) -> Instant {
    *activity.lock().unwrap_or_else(|e| e.into_inner())
}

/// GET on the SSE path: a new session and its stream.
async fn open(ctx: &Ctx<'_>, headers: &HeaderMap) -> Response<Body> {
    if !super::guard::sse_acceptable(headers) {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            code::INVALID_REQUEST,
            "Accept must allow text/event-stream",
        );
    }
    let unavailable =
        |why: &str| rpc_error(StatusCode::SERVICE_UNAVAILABLE, -32000, why.to_owned());
    if ctx.refusing.load(Ordering::Relaxed) {
        return unavailable(super::server::SHUTTING_DOWN);
    }
    let id = match mint_session_id() {
        Ok(id) => id,
        Err(e) => {
            warn!(error = %e, "the OS random source failed");
            return rpc_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                code::INTERNAL_ERROR,
                "no session id",
            );
        }
    };
    let (session, inner) = Session::start(
        registry_key(&id).into(),
        ctx.endpoint,
        ctx.limits.clone(),
        Arc::downgrade(ctx.registry),
        &ctx.config.transport,
    );
    if !ctx.registry.insert(session.clone()) {
        session.end(CloseReason::SessionClosed);
        return unavailable(&super::server::too_many_sessions(ctx.config.max_sessions));
    }
    let Transport {
        sender: inner_sender,
        receiver: inner_receiver,
    } = inner;
    let capacity = ctx.config.transport.capacity();
    let batching = inner_receiver.batching.clone();
    let (out_tx, out_rx) = mpsc::channel::<Outbound>(capacity);
    let (in_tx, in_rx) = crate::handle::inbound_channel(capacity);
    let transport = Transport {
        sender: Sender {
            out: crate::handle::Outlet::Queue(out_tx),
            batching: batching.clone(),
            no_requests: false,
            replies: None,
        },
        receiver: Receiver::new(in_rx, batching),
    };
    let info = HttpSession {
        transport,
        session_id: id.clone(),
        protocol_version: ProtocolVersion::V2024_11_05,
        headers: headers.clone(),
        kind: SessionKind::LegacySse,
        principal: ctx.principal.cloned(),
        path: ctx.path.to_owned(),
    };
    if let Some(p) = ctx.principal {
        session.set_owner(&p.subject);
        tracing::info!(session = %id, subject = %p.subject, client_id = p.client_id.as_deref().unwrap_or(""), "new legacy HTTP+SSE session");
    }
    if ctx.acceptor.send(info).await.is_err() {
        session.end(CloseReason::SessionClosed);
        return unavailable("the server is not accepting sessions");
    }
    debug!(session = %id, "new legacy HTTP+SSE session");

    let activity: Activity = Arc::new(Mutex::new(Instant::now()));
    let (body_tx, body_rx) = mpsc::channel::<Bytes>(ctx.limits.capacity);
    let span = tracing::info_span!("http_session", session = %session.id);
    tokio::spawn(forward_inbound(inner_receiver, in_tx, activity.clone()).instrument(span.clone()));
    let pump = Pump {
        session: session.clone(),
        inner: inner_sender,
        queue: out_rx,
        body: body_tx,
        keep_alive: ctx.config.sse_keep_alive,
        idle: ctx.config.session_idle_timeout,
        activity,
    };
    tokio::spawn(pump.run().instrument(span));

    let endpoint = format!("{}?{SESSION_PARAM}={id}", ctx.message_path);
    let event = Event::message(endpoint)
        .with_event("endpoint")
        .encode()
        .expect("the endpoint event has no id and a one-line type");
    let mut response = Response::new(Body::stream(
        VecDeque::from([Bytes::from(event)]),
        Some(body_rx),
        session.guard(),
    ));
    let h = response.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        super::server::X_ACCEL_BUFFERING,
        HeaderValue::from_static("no"),
    );
    response
}

/// Passes the session's inbound events to the library, noting the time of each.
/// Ends after [`Inbound::Closed`], or when the library drops its receiver (then
/// the session's next delivery fails and its POST gets 404).
async fn forward_inbound(mut from: Receiver, to: crate::handle::InboundTx, activity: Activity) {
    while let Some(event) = from.recv().await {
        touch(&activity);
        if to.send(event).await.is_err() {
            debug!("the library dropped the session's receiver");
            break;
        }
    }
}

/// The task between the library's outbound queue and the session's connection.
struct Pump {
    session: Arc<Session>,
    /// The session's own sender: held so the session stays up (dropping the
    /// last one ends it); closed once the session has ended.
    inner: Sender,
    queue: mpsc::Receiver<Outbound>,
    body: mpsc::Sender<Bytes>,
    keep_alive: Option<Duration>,
    idle: Option<Duration>,
    activity: Activity,
}

/// Waits for `deadline`, or forever without one.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

impl Pump {
    async fn run(mut self) {
        let comment = Bytes::from(encode_comment("keep-alive"));
        let mut next_ping = self.keep_alive.map(|d| Instant::now() + d);
        let reason = loop {
            let idle_at = self.idle.map(|d| last(&self.activity) + d);
            tokio::select! {
                () = self.inner.closed() => break None,
                () = self.body.closed() => {
                    debug!("the client closed the SSE stream");
                    break Some(CloseReason::PeerClosed);
                }
                out = self.queue.recv() => match out {
                    None => {
                        debug!("every sender dropped; ending the session");
                        break Some(CloseReason::SessionClosed);
                    }
                    Some(mut out) => {
                        if out.pass_barrier() {
                            continue;
                        }
                        touch(&self.activity);
                        let event = message_event(out.line);
                        tokio::select! {
                            sent = self.body.send(event) => if sent.is_err() {
                                debug!("the client closed the SSE stream");
                                break Some(CloseReason::PeerClosed);
                            },
                            () = self.inner.closed() => break None,
                        }
                        next_ping = self.keep_alive.map(|d| Instant::now() + d);
                    }
                },
                () = sleep_until(next_ping) => {
                    // A full queue means the client is behind anyway: skip.
                    let _ = self.body.try_send(comment.clone());
                    next_ping = self.keep_alive.map(|d| Instant::now() + d);
                }
                () = sleep_until(idle_at) => {
                    if self.idle.is_some_and(|d| Instant::now() >= last(&self.activity) + d) {
                        debug!("idle timeout; ending the session");
                        break Some(CloseReason::SessionExpired);
                    }
                }
            }
        };
        if let Some(reason) = reason {
            self.session.end(reason);
        }
        // Dropping `body` ends the SSE response.
    }
}

/// One outbound line as a `message` event (no id).
fn message_event(mut line: Vec<u8>) -> Bytes {
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    let data = String::from_utf8(line)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    Bytes::from(
        Event::message(data)
            .encode()
            .expect("a message event without id always encodes"),
    )
}

/// POST on the message path: one message for a session.
async fn post(ctx: &Ctx<'_>, req: Request<Incoming>) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let Some(id) = session_param(parts.uri.query()) else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            code::INVALID_REQUEST,
            "the sessionId query parameter is required",
        );
    };
    let found = ctx.registry.get(&registry_key(id));
    // Another subject's session, or one of another endpoint, is not found for
    // this request, and left as it is.
    let Some(session) = found.filter(|s| s.endpoint == ctx.endpoint && s.owned_by(ctx.principal))
    else {
        return rpc_error(
            StatusCode::NOT_FOUND,
            code::INVALID_REQUEST,
            "session not found",
        );
    };
    let headers = &parts.headers;
    let bytes = match super::server::read_json_body(headers, body, ctx.config.max_body_bytes).await
    {
        Ok(bytes) => bytes,
        Err(response) => return *response,
    };
    let message = match decode_frame(&bytes, Batching::Refused) {
        Ok(Frame::Single(message)) => message,
        Ok(Frame::Batch(_)) => unreachable!("batches are refused by the decoder"),
        Err(e) => {
            let status = StatusCode::BAD_REQUEST;
            return match e.kind() {
                DecodeErrorKind::Parse => rpc_error(status, code::PARSE_ERROR, e.detail()),
                _ => error_body(status, e.to_response()),
            };
        }
    };
    let at = (ctx.config, ctx.path);
    if let Some(refusal) = super::server::tool_scopes_refusal(at, ctx.auth, ctx.principal, &message)
    {
        return refusal;
    }
    if ctx.refusing.load(Ordering::Relaxed) {
        if let Message::Request(r) = &message {
            if r.method == "initialize" {
                // A drain: the MCP session this `initialize` would open is
                // refused as a new Streamable HTTP one is (503), and the
                // legacy session, which has nothing else to do, ends.
                session.end(CloseReason::SessionClosed);
                return super::server::shutting_down(r.id.clone());
            }
        }
    }
    session.touch();
    match session.deliver(Inbound::Message(message), false).await {
        Ok(()) => {
            let mut response = Response::new(Body::full("Accepted"));
            *response.status_mut() = StatusCode::ACCEPTED;
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
            response
        }
        Err(()) => {
            // The session ended meanwhile, or the library dropped its receiver.
            session.end(CloseReason::SessionClosed);
            rpc_error(
                StatusCode::NOT_FOUND,
                code::INVALID_REQUEST,
                "session not found",
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_follow_the_config() {
        let mut config = HttpServerConfig::default();
        assert_eq!(Endpoint::of(&config, "/sse"), Some(Endpoint::Sse));
        assert_eq!(Endpoint::of(&config, "/message"), Some(Endpoint::Message));
        assert_eq!(Endpoint::of(&config, "/mcp"), None);
        assert_eq!(Endpoint::of(&config, "/other"), None);
        config.message_path = "/mcp".into();
        assert_eq!(
            Endpoint::of(&config, "/mcp"),
            None,
            "the Streamable endpoint keeps its path"
        );
        config.sse_path = None;
        assert_eq!(Endpoint::of(&config, "/sse"), None, "legacy off");
    }

    #[test]
    fn session_parameter() {
        assert_eq!(session_param(Some("sessionId=ab12")), Some("ab12"));
        assert_eq!(session_param(Some("x=1&sessionId=ab12&y")), Some("ab12"));
        assert_eq!(session_param(Some("sessionId=")), None);
        assert_eq!(session_param(Some("session_id=ab12")), None);
        assert_eq!(session_param(None), None);
    }

    /// The legacy stream takes the Streamable endpoint's GET rule.
    #[test]
    fn accept_rules() {
        let with = |values: &[&'static str]| {
            let mut h = HeaderMap::new();
            for v in values {
                h.append(http::header::ACCEPT, HeaderValue::from_static(v));
            }
            crate::http::guard::sse_acceptable(&h)
        };
        assert!(with(&[]));
        assert!(with(&["text/event-stream"]));
        assert!(with(&["application/json", "Text/Event-Stream; q=0.5"]));
        assert!(with(&["*/*"]));
        assert!(with(&["text/*"]));
        assert!(!with(&["application/json"]));
        assert!(!with(&["text/event-stream;q=0"]));
        assert!(!with(&["*/*", "text/event-stream; q=0.0"]));
        assert!(with(&["text/*;q=0.1"]));
        assert!(!with(&["*/*;q=0"]));
    }

    #[test]
    fn legacy_keys_cannot_come_from_a_header() {
        let key = registry_key("0123456789abcdef0123456789abcdef");
        // Even sent as raw bytes, the header value is not readable as text, so
        // the Streamable endpoint's lookup cannot find it.
        let value = HeaderValue::from_bytes(key.as_bytes()).unwrap();
        assert!(value.to_str().is_err());
    }

    #[test]
    fn message_events_have_no_id() {
        let event = message_event(b"{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n".to_vec());
        assert_eq!(
            &event[..],
            b"data: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n"
        );
    }
}
