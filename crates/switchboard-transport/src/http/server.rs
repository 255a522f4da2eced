//! The Streamable HTTP server: the stateful shape (MCP 2025-03-26, 2025-06-18 and
//! 2025-11-25, "Transports → Streamable HTTP"; REVISIONS.md §5.3) and, on the same
//! endpoint, the stateless 2026-07-28 shape ([`super::stateless`]; REVISIONS.md
//! §5.4), so clients of every era are served at the same time.
//!
//! [`HttpServer::bind`] listens on one address and serves one endpoint
//! ([`HttpServerConfig::path`], `/mcp` by default), and as many more as
//! [`HttpServerConfig::routes`] names, each alike; a session belongs to the
//! path that opened it ([`HttpSession::path`]). Each session is created by a
//! POST carrying an `initialize` request and no `Mcp-Session-Id`, and handed to the
//! library through the [`SessionAcceptor`] as an [`HttpSession`]: a
//! [`Transport`] like any other, whose [`Receiver`](crate::Receiver) yields the
//! messages POSTed in that session and whose [`Sender`](crate::Sender) routes
//! replies to the right HTTP stream ([`Sender::send_related`](crate::Sender::send_related)).
//!
//! Per request, in this order:
//!
//! | check | answer |
//! |---|---|
//! | `Host` not allowed ([`HttpServerConfig::allowed_hosts`]) or `Origin` present and not allowed ([`HttpServerConfig::allowed_origins`]): DNS-rebinding protection | 403 |
//! | path other than [`HttpServerConfig::path`], one of [`HttpServerConfig::routes`] and the legacy paths ([`super::legacy`]) | 404 |
//! | GET or DELETE with `MCP-Protocol-Version: 2026-07-28` (a modern revision) | 405 with `Allow: POST` |
//! | a POST that is a 2026-07-28 exchange: no `Mcp-Session-Id` (or a modern `MCP-Protocol-Version`, which wins over a session id, ignored as 2026-07-28 says) and either a modern `MCP-Protocol-Version` or a body whose `params._meta` names `io.modelcontextprotocol/protocolVersion` (then even with an unsupported header version: the library answers -32022 or -32020) | after the Accept, Content-Type and size checks below: served statelessly, see [`super::stateless`] for its answers |
//! | `MCP-Protocol-Version` present and neither the revision the named session negotiated nor, older than that, one of [`HttpServerConfig::supported_versions`] (absent: 2025-03-26 assumed); checked once the session is found, so an unknown `Mcp-Session-Id` (or one of another path) is 404 first (a GET: before its `Accept` check too) | 400 |
//! | method other than POST, GET, DELETE | 405 with `Allow` |
//! | POST whose `Accept` allows neither `application/json` nor `text/event-stream`; GET whose `Accept` does not allow `text/event-stream` (RFC 9110 §12.5.1: no `Accept` allows anything, `*/*` and `type/*` match, the most specific range decides, `q=0` refuses) | 406 |
//! | POST whose `Content-Type` is not `application/json`, or with a `Content-Encoding` other than `identity` (gzip and the rest are not decoded; `Accept-Encoding: identity` in the answer) | 415 |
//! | POST body over [`HttpServerConfig::max_body_bytes`] | 413 |
//! | `Mcp-Session-Id` naming no live session opened at this path | 404 |
//! | body not JSON | 400, JSON-RPC -32700 with `id: null` |
//! | body not one JSON-RPC message (or, once the library allowed batches for 2025-03-26 with [`Sender::set_batching`](crate::Sender::set_batching), a batch) | 400, JSON-RPC -32600 |
//! | no `Mcp-Session-Id`, unless the body is an `initialize` request | 400 |
//! | `initialize` with [`HttpServerConfig::max_sessions`] live and none idle (else the least recently used idle one ends to make room), after [`HttpServer::refuse_new_sessions`], or with the acceptor dropped; a stateless exchange beyond [`HttpServerConfig::max_exchanges`]; a new stateless request (not a notification, not an `input_required` retry) after [`HttpServer::refuse_new_sessions`] | 503 |
//! | a request id already open in the session | 400 |
//! | POST of notifications and responses only | 202, no body |
//! | POST with requests, or a batch with invalid items that want an answer | 200, `text/event-stream` (or `application/json` with [`HttpServerConfig::json_response`]; whatever that says, `application/json` when it is the only type `Accept` allows, `text/event-stream` when that is; a batch is answered with an array, even of one); an invalid batch item whose id cannot be read gets its error response with `id: null` here, from the server itself |
//! | GET | 200, `text/event-stream`: the standalone stream, or a resumed one with `Last-Event-ID` (replaying what followed that event); 400 when `Last-Event-ID` names no stream kept by the session or an event it never sent; a connection still reading that stream is taken over (its body ends; a half-open one never blocks the client's new GET) |
//! | DELETE | 200, the session ends |
//!
//! Error bodies are a JSON-RPC error response with `id: null`
//! (`application/json`).
//!
//! **Backpressure.** Each outbound message is put on its stream by the task that
//! sends it ([`Sender::send`](crate::Sender::send)), which waits while the
//! target connection's queue
//! ([`TransportConfig::channel_capacity`](crate::TransportConfig::channel_capacity)
//! events) is full: a client that keeps a stream open but does not read it slows
//! down the senders to that stream (as a full pipe does on stdio), never other
//! streams or sessions. A connection that goes away is noticed at the next event
//! sent to it; its events are then only kept for replay.
//!
//! **One write per quick reply.** The SSE reply to a POST waits about
//! [`HttpServerConfig::sse_first_event_wait`] for its first message, so the head,
//! the priming event and a response ready by then leave in one write. What is
//! sent on a POST's stream while its messages are being delivered waits in the
//! session, up to the same capacity, until the POST takes it; a reply complete
//! by then (a quick handler that answered during the delivery) never gets a
//! connection queue at all. The reply
//! to the `initialize` that opens a session waits for its first message however
//! long it takes (see below).
//!
//! **Priming and polling (2025-11-25).** A stream opens with a priming event (an
//! event id, empty data; `retry` with [`HttpServerConfig::sse_retry`]) once its
//! session's `initialize` agreed on 2025-11-25 or later, or a request of it named
//! one in `MCP-Protocol-Version`; before that, none (an older client may not
//! skip an event with empty data). The reply to the `initialize` that opens a session
//! (whose POST names no revision, or not necessarily the one it ends up with) is
//! primed when the revision its answer negotiates (`result.protocolVersion`) is
//! 2025-11-25 or later: its head and priming event wait for its first message,
//! normally that answer (a message the handler sends before the answer is not
//! held back for it; the reply is then primed only if the answer was ready
//! too).
//!
//! A handler may close its call's connection mid-call
//! ([`Sender::close_stream`](crate::Sender::close_stream), SEP-1699): the call
//! goes on, and the client gets the rest with GET and `Last-Event-ID`.
//!
//! Every accepted TCP socket gets `TCP_NODELAY` (SSE replies are written in
//! pieces; without it each piece can wait for the peer's delayed ACK).

use std::convert::Infallible;
use std::fmt;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{
    HeaderValue, ACCEPT_ENCODING, ALLOW, AUTHORIZATION, CACHE_CONTROL, CONTENT_LENGTH,
    CONTENT_TYPE, WWW_AUTHENTICATE,
};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use switchboard_protocol::codec::line::encode_line;
use switchboard_protocol::jsonrpc::{
    code, decode_frame, Batching, DecodeErrorKind, ErrorObject, ErrorResponse, Frame, Id, Message,
};
use switchboard_protocol::version::Era;
use switchboard_protocol::ProtocolVersion;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

use super::clock::Clock;
use tracing::{debug, info_span, warn, Instrument};

use super::body::Body;
use super::guard;
use super::resource::{Principal, Refusal, ResourceServer};
use super::session::{first_duplicate, Limits, Registry, Session, StreamError};
use super::stateless;
use crate::config::TransportConfig;
use crate::handle::{CloseReason, Inbound, Outbound, Route, Transport};

/// The default endpoint path: `/mcp`.
pub const DEFAULT_PATH: &str = "/mcp";
/// The default largest POST body: 4 MiB (4 194 304 bytes).
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// The default number of live sessions: 1024.
pub const DEFAULT_MAX_SESSIONS: usize = 1024;
/// The default number of stateless 2026-07-28 exchanges in progress at once: 4096.
pub const DEFAULT_MAX_EXCHANGES: usize = 4096;
/// The default idle timeout of a session: 30 minutes.
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// The default number of events kept per SSE stream for replay: 256.
pub const DEFAULT_SSE_REPLAY_BUFFER: usize = 256;
/// The default wait for a POST's first message before its SSE stream's head is
/// sent alone: 2 ms.
pub const DEFAULT_SSE_FIRST_EVENT_WAIT: Duration = Duration::from_millis(2);

/// The default [`HttpServerConfig::json_reply_within`]: 1 s.
pub const DEFAULT_JSON_REPLY_WITHIN: Duration = Duration::from_secs(1);

/// The configuration of an [`HttpServer`].
///
/// ```
/// use switchboard_transport::http::server::HttpServerConfig;
///
/// let mut config = HttpServerConfig::default();
/// config.max_sessions = 16;
/// assert_eq!(config.bind.to_string(), "127.0.0.1:0");
/// assert_eq!(config.path, "/mcp");
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpServerConfig {
    /// The address to listen on. Default `127.0.0.1:0`: loopback only (the spec:
    /// local servers SHOULD bind to localhost only), port chosen by the OS (read it
    /// with [`HttpServer::local_addr`]). Never widened to `0.0.0.0` by this crate.
    pub bind: SocketAddr,
    /// The MCP endpoint's path, starting with `/`. Default [`DEFAULT_PATH`].
    pub path: String,
    /// More endpoint paths ("routes", e.g. one per virtual server of a
    /// gateway), each starting with `/` and served exactly as
    /// [`path`](Self::path) is (same checks, limits and answers), on the same
    /// listener. A session belongs to the path that opened it
    /// ([`HttpSession::path`]): naming it at another path gets 404. With
    /// [`sse_path`](Self::sse_path) set, each route `R` also serves the legacy
    /// HTTP+SSE transport at `R/sse` and `R/message` (`R` without a trailing
    /// `/`). [`HttpServer::bind`] refuses ([`io::ErrorKind::InvalidInput`]) a
    /// route not starting with `/`, and one whose paths are taken: by
    /// [`path`](Self::path), the legacy paths, `/healthz` and `/readyz`
    /// (whether or not [`health`](Self::health) is set), the Protected
    /// Resource Metadata paths ([`auth`](Self::auth),
    /// [`route_auth`](Self::route_auth)), or another route.
    /// Default empty.
    pub routes: Vec<String>,
    /// `Host` header values accepted besides the defaults (DNS-rebinding
    /// protection; every revision's "Security Warning"): an entry `name` takes
    /// that name with any port or none, `name:port` that port only (names
    /// compared ignoring ASCII case; IPv6 in brackets). Anything not accepted
    /// gets 403. Default empty.
    pub allowed_hosts: Vec<String>,
    /// Whether the default `Host` values are accepted too: the loopback names
    /// `localhost`, `127.0.0.1` and `[::1]` with any port or none (only a client
    /// on this machine reaches them, and a rebinding page sends its own name),
    /// and the bound address (`ip:port`) when it is not a loopback one. `false`:
    /// only [`allowed_hosts`](Self::allowed_hosts). Default `true`.
    pub default_hosts: bool,
    /// `Origin` header values accepted besides the defaults (e.g.
    /// `https://app.example`, compared ignoring ASCII case); a request without
    /// `Origin` is accepted. A present `Origin` not accepted gets 403
    /// (2025-11-25: MUST). Default empty.
    pub allowed_origins: Vec<String>,
    /// Whether the default `Origin` values are accepted too: `http://` and
    /// `https://` with each loopback name at the bound port, and with the bound
    /// address. Default `true`.
    pub default_origins: bool,
    /// The largest POST body, in bytes; larger gets 413. Default
    /// [`DEFAULT_MAX_BODY_BYTES`] (4 MiB).
    pub max_body_bytes: usize,
    /// The most sessions live at once (both kinds). A new one beyond it ends
    /// the least recently used idle session (no open response, no request
    /// awaiting its response; [`CloseReason::SessionEvicted`], counted by
    /// [`HttpServer::evicted_sessions`] and logged), as a client that never
    /// sends DELETE leaves its session to the idle timeout otherwise; with
    /// every session busy, the new one gets 503. Default
    /// [`DEFAULT_MAX_SESSIONS`].
    pub max_sessions: usize,
    /// The most stateless 2026-07-28 exchanges ([`super::stateless`]) in progress
    /// at once (a `subscriptions/listen` counts until its stream ends); one more
    /// POST gets 503 (JSON-RPC -32000, no id). Default [`DEFAULT_MAX_EXCHANGES`].
    pub max_exchanges: usize,
    /// A session with no open stream that has seen no request for this long ends
    /// ([`CloseReason::SessionExpired`]; later requests get 404). `None`: never.
    /// Default [`DEFAULT_SESSION_IDLE_TIMEOUT`] (30 minutes).
    pub session_idle_timeout: Option<Duration>,
    /// How many events each SSE stream keeps for `Last-Event-ID` replay, and how
    /// many server messages the standalone stream holds while no GET is open
    /// (oldest dropped first). Values below 1 count as 1. Default
    /// [`DEFAULT_SSE_REPLAY_BUFFER`] (256).
    pub sse_replay_buffer: usize,
    /// Answer POSTed requests with `application/json` (only the responses; other
    /// messages related to them go to the standalone stream) instead of an SSE
    /// stream, when the client accepts both (a client whose `Accept` allows one
    /// of them only gets that one either way). Default `false`.
    pub json_response: bool,
    /// How long the SSE reply to a POST waits for its first message before the
    /// response head (and, from 2025-11-25, the priming event) go out alone.
    /// A message ready within it travels with the head in one write (one TCP
    /// segment and one client wake-up instead of two; a quick call's whole reply,
    /// final chunk included, when its response is the first message). Later
    /// messages stream as they come. Zero: the head goes out at once. Default
    /// [`DEFAULT_SSE_FIRST_EVENT_WAIT`] (2 ms). The wait is measured by one
    /// coarse clock per server ticking at half this length, so it lasts from
    /// this length to 1.5 times it. Not used for the reply to the `initialize`
    /// that opens a session, which waits for its first message however long it
    /// takes: whether it is primed depends on the revision the answer
    /// negotiates.
    pub sse_first_event_wait: Duration,
    /// A POST of one request whose client accepts both `application/json` and
    /// `text/event-stream`: when its response is the first message there is to
    /// send and comes within this, it is answered as one `application/json`
    /// body (no stream opens, so no priming event is owed); a message that
    /// streams first (progress, a request to the client, a closed stream)
    /// opens the SSE stream at once, and so does this wait running out. A
    /// large result then reaches clients that cap an SSE event (the Python
    /// SDK's 1 MiB). Zero: SSE whenever [`json_response`](Self::json_response)
    /// is off. Default [`DEFAULT_JSON_REPLY_WITHIN`] (1 s). Not used for the
    /// reply to the `initialize` that opens a session.
    pub json_reply_within: Duration,
    /// The `retry` field of the priming event that opens each SSE stream
    /// (2025-11-25 onward; whole milliseconds): how long a client waits before
    /// reconnecting with `Last-Event-ID` after the server closed the stream. Set
    /// it when handlers close streams mid-call
    /// ([`Sender::close_stream`](crate::Sender::close_stream), the "polling" of
    /// SEP-1699: after sending an event id the server may close the connection at
    /// any time, and SHOULD send `retry` first). Default `None`: no `retry` field,
    /// clients wait their own default.
    pub sse_retry: Option<Duration>,
    /// The revisions accepted in `MCP-Protocol-Version` (on a session, besides
    /// the one its `initialize` negotiated, which is always accepted there, and
    /// only those not newer than it); any other value gets 400, except on a POST whose body is a 2026-07-28 message (its `_meta` names
    /// `io.modelcontextprotocol/protocolVersion`), which is served statelessly so the
    /// library answers -32022 with the supported versions (or -32020 when header and
    /// body disagree). Default 2025-03-26, 2025-06-18, 2025-11-25 (stateful
    /// sessions) and 2026-07-28 (stateless exchanges, [`super::stateless`]).
    pub supported_versions: Vec<ProtocolVersion>,
    /// The path of the legacy HTTP+SSE stream (2024-11-05; see
    /// [`legacy`](super::legacy)): a GET there opens a legacy session. `None`
    /// turns the legacy transport off (on the [`routes`](Self::routes) too).
    /// Starts with `/` (any other value matches no request); a value equal to
    /// [`path`](Self::path) is ignored (that endpoint keeps it). Default `Some` of
    /// [`DEFAULT_SSE_PATH`](super::legacy::DEFAULT_SSE_PATH) (`/sse`).
    pub sse_path: Option<String>,
    /// The path legacy clients POST to, named by the `endpoint` event as
    /// `<message_path>?sessionId=<id>`; unused while
    /// [`sse_path`](Self::sse_path) is `None`. Default
    /// [`DEFAULT_MESSAGE_PATH`](super::legacy::DEFAULT_MESSAGE_PATH) (`/message`).
    pub message_path: String,
    /// How long an SSE stream opened by a GET (a legacy HTTP+SSE session's
    /// stream; the standalone stream of a Streamable HTTP session, or a stream
    /// resumed with `Last-Event-ID`) may stay silent before it gets a keep-alive
    /// comment (`: keep-alive`), so proxies do not cut it and a client can tell
    /// a dead connection by a much longer silence (the Streamable HTTP client's
    /// [`HttpClientConfig::sse_keep_alive`](super::client::HttpClientConfig::sse_keep_alive)).
    /// The replies to POSTs get none (no timer per call). `None`: never.
    /// Default [`DEFAULT_SSE_KEEP_ALIVE`](super::legacy::DEFAULT_SSE_KEEP_ALIVE) (15 s).
    pub sse_keep_alive: Option<Duration>,
    /// Queue capacities and the initial batching rule of each session's
    /// [`Transport`] (`max_line_len` is not used: bodies are bounded by
    /// [`max_body_bytes`](Self::max_body_bytes)).
    pub transport: TransportConfig,
    /// Health endpoints for orchestrators (e.g. Kubernetes probes): when set, a GET
    /// on `/healthz` answers 200 `ok` (the process serves HTTP), and a GET on
    /// `/readyz` answers 200 `ready` or 503 with the reason, from the probe. They
    /// are answered before the `Host`/`Origin` checks (a kubelet sends the pod's
    /// address as `Host`) and reveal nothing but readiness. Default `None` (both
    /// paths are 404 like any other).
    pub health: Option<HealthProbe>,
    /// A readiness report in JSON (e.g. each upstream of a gateway): when set
    /// with [`health`](Self::health), `/readyz` answers its body as
    /// `application/json`, 200 when it says ready and 503 when not, instead
    /// of the probe's one line. Default `None`.
    pub health_report: Option<HealthReport>,
    /// An admin listener of its own ([`super::admin`]): `/metrics`
    /// ([`metrics`](Self::metrics)) and the probes above (`/healthz` 200
    /// only without [`health`](Self::health)), off the public port. It
    /// serves nothing else, and lives as long as this server. Default `None`.
    pub admin: Option<SocketAddr>,
    /// What the admin listener's `/metrics` renders; `None`: 404 there.
    pub metrics: Option<super::admin::MetricsSource>,
    /// The admin listener's live page (`/ui`); `None`: 404 there.
    pub live: Option<super::admin::LivePage>,
    /// Told of each request [`auth`](Self::auth) refused for a token that
    /// did not pass or scopes it lacks (not for a missing token, every
    /// client's first step): the caller's audit trail. Default `None`.
    pub refusals: Option<RefusalSink>,
    /// MCP authorization ([`super::resource`]): when set, the server is an
    /// OAuth resource server. It serves Protected Resource Metadata (RFC 9728)
    /// at [`ResourceServer::metadata_paths`](super::resource::ResourceServer::metadata_paths)
    /// (GET, `application/json`), and every request to the endpoint, the
    /// [`routes`](Self::routes) and the legacy paths needs a valid bearer token
    /// (the same resource and metadata for all, but the paths
    /// [`route_auth`](Self::route_auth) names): without one 401 (with a token
    /// that is not accepted, `error="invalid_token"`), a token in the query
    /// string 400 (`invalid_request`), missing scopes 403
    /// (`insufficient_scope`), each with `WWW-Authenticate: Bearer
    /// resource_metadata="…"`; a token that cannot be checked (the issuer's
    /// keys unreachable) 503. These come after the `Host`/`Origin` checks and
    /// before the rest. A session belongs to the subject that opened it:
    /// another subject's request naming it gets 404. The `Authorization`
    /// header is taken out of the request before anything else sees it
    /// ([`HttpSession::headers`] never holds it); the caller is
    /// [`HttpSession::principal`]. Default `None`: no token is asked for and
    /// no metadata is served.
    ///
    /// [`route_auth`](Self::route_auth) overrides it path by path.
    pub auth: Option<super::resource::ResourceServerConfig>,
    /// Authorization by endpoint path ([`path`](Self::path) or one of the
    /// [`routes`](Self::routes)), overriding [`auth`](Self::auth) there:
    /// `Some(config)` makes that endpoint (and its legacy paths) a protected
    /// resource of its own, with its own issuer, resource, scopes and tool
    /// scopes, answered exactly as [`auth`](Self::auth) describes: its
    /// challenges name its own metadata, served at
    /// `/.well-known/oauth-protected-resource<path>`, at its resource's own
    /// well-known path, and at the root too when the path is `/mcp`. A token
    /// whose audience is another endpoint's resource gets 401
    /// `invalid_token`. `None` serves that endpoint without authorization
    /// (and no metadata for it). Endpoints not named here follow
    /// [`auth`](Self::auth) (sharing its one resource; its metadata is served
    /// at the main path's well-known path only when the main path follows
    /// it, and at its resource's always).
    ///
    /// [`HttpServer::bind`] refuses ([`io::ErrorKind::InvalidInput`]) a key
    /// that is no endpoint path, an invalid configuration, and two resources
    /// whose metadata would be served at the same path. Default empty.
    pub route_auth:
        std::collections::BTreeMap<String, Option<super::resource::ResourceServerConfig>>,
}

impl Default for HttpServerConfig {
    fn default() -> Self {
        HttpServerConfig {
            bind: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            path: DEFAULT_PATH.to_owned(),
            routes: Vec::new(),
            allowed_hosts: Vec::new(),
            default_hosts: true,
            allowed_origins: Vec::new(),
            default_origins: true,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_exchanges: DEFAULT_MAX_EXCHANGES,
            session_idle_timeout: Some(DEFAULT_SESSION_IDLE_TIMEOUT),
            sse_replay_buffer: DEFAULT_SSE_REPLAY_BUFFER,
            json_response: false,
            sse_first_event_wait: DEFAULT_SSE_FIRST_EVENT_WAIT,
            json_reply_within: DEFAULT_JSON_REPLY_WITHIN,
            sse_retry: None,
            supported_versions: vec![
                ProtocolVersion::V2025_03_26,
                ProtocolVersion::V2025_06_18,
                ProtocolVersion::V2025_11_25,
                ProtocolVersion::V2026_07_28,
            ],
            sse_path: Some(super::legacy::DEFAULT_SSE_PATH.to_owned()),
            message_path: super::legacy::DEFAULT_MESSAGE_PATH.to_owned(),
            sse_keep_alive: Some(super::legacy::DEFAULT_SSE_KEEP_ALIVE),
            transport: TransportConfig::default(),
            health: None,
            health_report: None,
            admin: None,
            metrics: None,
            live: None,
            refusals: None,
            auth: None,
            route_auth: std::collections::BTreeMap::new(),
        }
    }
}

/// The readiness check behind `/readyz` ([`HttpServerConfig::health`]):
/// `Ok(())` when ready, else why not (sent as the 503 body, one line).
#[derive(Clone)]
pub struct HealthProbe(pub Arc<dyn Fn() -> Result<(), String> + Send + Sync>);

impl fmt::Debug for HealthProbe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HealthProbe")
    }
}

/// The readiness report behind a JSON `/readyz`
/// ([`HttpServerConfig::health_report`]): whether ready, and the JSON body.
#[derive(Clone)]
pub struct HealthReport(pub Arc<dyn Fn() -> (bool, String) + Send + Sync>);

impl fmt::Debug for HealthReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HealthReport")
    }
}

/// `/healthz` and `/readyz`, when [`HttpServerConfig::health`] is set.
fn health_answer(shared: &Shared, req: &Request<Incoming>) -> Option<Response<Body>> {
    let probe = shared.config.health.as_ref()?;
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return None;
    }
    probe_answer(
        req.uri().path(),
        probe,
        shared.config.health_report.as_ref(),
    )
}

/// The answer of `/healthz` (200 `ok`) or `/readyz` (200, or 503 with why:
/// `report`'s JSON when given, else `probe`'s line); `None` for another
/// path. The main listener's and the admin listener's.
pub(crate) fn probe_answer(
    path: &str,
    probe: &HealthProbe,
    report: Option<&HealthReport>,
) -> Option<Response<Body>> {
    let mut content_type = "text/plain; charset=utf-8";
    let (status, text) = match path {
        "/healthz" => (StatusCode::OK, "ok\n".to_owned()),
        "/readyz" if report.is_some() => {
            let report = report.expect("checked");
            let (ready, body) = (report.0)();
            content_type = "application/json";
            let status = if ready {
                StatusCode::OK
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            };
            (status, body)
        }
        "/readyz" => match (probe.0)() {
            Ok(()) => (StatusCode::OK, "ready\n".to_owned()),
            Err(why) => (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("not ready: {}\n", why.replace(['\n', '\r'], " ")),
            ),
        },
        _ => return None,
    };
    let mut response = Response::new(Body::full(Bytes::from(text)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    Some(response)
}

/// What a server counted since it started ([`HttpServer::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerStats {
    /// Bytes read from its connections (requests, headers included).
    pub bytes_received: u64,
    /// Bytes written to them (responses and streams, headers included).
    pub bytes_sent: u64,
    /// Idle sessions ended to make room ([`HttpServer::evicted_sessions`]).
    pub sessions_evicted: u64,
    /// Requests refused by authorization, by reason
    /// ([`REFUSAL_REASONS`](super::resource::REFUSAL_REASONS)).
    pub auth_refusals: [u64; super::resource::REFUSAL_REASONS.len()],
    /// Of those, `tools/call`s refused for the tool's own scopes.
    pub tool_scope_refusals: u64,
}

impl Shared {
    fn stats(&self) -> ServerStats {
        use std::sync::atomic::Ordering::Relaxed;
        let mut s = ServerStats {
            bytes_received: self.traffic.received.load(Relaxed),
            bytes_sent: self.traffic.sent.load(Relaxed),
            sessions_evicted: self.registry.evicted(),
            ..ServerStats::default()
        };
        // A resource server shared by several endpoints counts once.
        let mut seen: Vec<*const ResourceServer> = Vec::new();
        for auth in self.auth.iter().flatten() {
            let ptr = Arc::as_ptr(auth);
            if seen.contains(&ptr) {
                continue;
            }
            seen.push(ptr);
            let (by_reason, tool) = auth.refused();
            for (total, n) in s.auth_refusals.iter_mut().zip(by_reason) {
                *total += n;
            }
            s.tool_scope_refusals += tool;
        }
        s
    }
}

/// What an [`HttpSession`] is: a stateful session or one stateless exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionKind {
    /// A Streamable HTTP session of 2025-03-26 to 2025-11-25, opened by
    /// `initialize`, named by `Mcp-Session-Id`, living until DELETE, idle expiry or
    /// shutdown.
    Stateful,
    /// One 2026-07-28 POST ([`super::stateless`]): the receiver yields its one
    /// message and then [`Inbound::Closed`]; the sender's notifications and response
    /// go on that POST's reply; server→client requests never reach the wire.
    Stateless,
    /// A legacy HTTP+SSE session (2024-11-05, [`super::legacy`]), opened by a GET
    /// on [`HttpServerConfig::sse_path`] or a route's `R/sse` (so
    /// `protocol_version` is 2024-11-05, `headers` are the GET's and
    /// `session_id` is the `sessionId` of the endpoint URI, minted as
    /// `Mcp-Session-Id` is); the receiver's first event is whatever the client
    /// POSTs first (normally `initialize`); every message
    /// sent goes on its one SSE stream; it ends when that stream closes
    /// ([`CloseReason::PeerClosed`]), on idle expiry or shutdown.
    LegacySse,
}

/// A new session, as the [`SessionAcceptor`] yields it.
#[derive(Debug)]
#[non_exhaustive]
pub struct HttpSession {
    /// The session's halves. Stateful: the receiver's first event is the
    /// `initialize` request; it ends with [`Inbound::Closed`] when the session ends
    /// ([`CloseReason::SessionDeleted`], [`CloseReason::SessionExpired`],
    /// [`CloseReason::SessionClosed`]); dropping every [`Sender`](crate::Sender)
    /// ends the session. Stateless: see [`SessionKind::Stateless`].
    pub transport: Transport,
    /// The `Mcp-Session-Id` minted for it: 32 lowercase hex digits from the OS's
    /// CSPRNG (128 bits). Empty for a stateless exchange (2026-07-28 has no
    /// sessions).
    pub session_id: String,
    /// Stateful: the `MCP-Protocol-Version` of the `initialize` POST, or 2025-03-26
    /// when it had none (the revision actually used is negotiated by `initialize`
    /// itself). Stateless: the header's revision when it named a supported one,
    /// else 2026-07-28 (the library checks the header against the body's `_meta`).
    pub protocol_version: ProtocolVersion,
    /// All headers of the POST that opened it (e.g. `User-Agent`; for a
    /// stateless exchange `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`, which the
    /// library checks against the body), except `Authorization` when the server
    /// checks tokens ([`HttpServerConfig::auth`]: the token is consumed here,
    /// never handed on; the caller is [`principal`](Self::principal)).
    pub headers: HeaderMap,
    /// Stateful session or stateless exchange.
    pub kind: SessionKind,
    /// Who opened it, when the server checks tokens
    /// ([`HttpServerConfig::auth`]): the subject, client id and scopes of the
    /// access token of the request that opened the session (stateful, legacy)
    /// or of the exchange's one request (stateless). Later requests of a
    /// session come from the same subject (another's get 404), possibly with
    /// other tokens (a step-up). `None` when tokens are not checked.
    pub principal: Option<super::resource::Principal>,
    /// The endpoint path it came in at: [`HttpServerConfig::path`] or one of
    /// [`HttpServerConfig::routes`] (a legacy session: the route whose
    /// `R/sse` opened it, or [`HttpServerConfig::path`] for
    /// [`HttpServerConfig::sse_path`]). Its later requests are served there
    /// only.
    pub path: String,
}

impl HttpSession {
    /// Whether this is one stateless 2026-07-28 exchange
    /// ([`SessionKind::Stateless`]).
    pub fn is_stateless(&self) -> bool {
        self.kind == SessionKind::Stateless
    }
}

/// Yields each new session of an [`HttpServer`].
#[derive(Debug)]
pub struct SessionAcceptor {
    rx: mpsc::Receiver<HttpSession>,
}

impl SessionAcceptor {
    /// The next new session; `None` once the server is dropped.
    ///
    /// While nobody calls this, at most
    /// [`TransportConfig::channel_capacity`](crate::TransportConfig::channel_capacity)
    /// new sessions wait and further `initialize` POSTs wait with them. Dropping
    /// the acceptor makes later `initialize` POSTs get 503.
    ///
    /// Cancel safe.
    pub async fn accept(&mut self) -> Option<HttpSession> {
        self.rx.recv().await
    }
}

struct Shared {
    /// Bytes read and written on every connection.
    traffic: Arc<super::counted::Traffic>,
    config: HttpServerConfig,
    /// The routes' paths ([`HttpServerConfig::routes`]), checked at bind.
    mounts: Vec<Mount>,
    hosts: Vec<String>,
    origins: Vec<String>,
    registry: Arc<Registry>,
    acceptor: mpsc::Sender<HttpSession>,
    limits: Limits,
    /// Turns true when the server is dropped (stateless exchanges then end).
    stopping: watch::Receiver<bool>,
    /// One permit per stateless exchange in progress.
    exchanges: Arc<tokio::sync::Semaphore>,
    /// Ends the SSE replies' first-event waits (half the wait per tick).
    clock: Arc<Clock>,
    /// POSTs to stateful sessions being answered now (see [`answer`]).
    answering: AtomicUsize,
    /// The resource server of each endpoint ([`MAIN`], then the routes), when
    /// it has one ([`HttpServerConfig::auth`], [`HttpServerConfig::route_auth`]).
    auth: Vec<Option<super::resource::Shared>>,
    /// Each Protected Resource Metadata path and the resource it serves.
    metadata: Vec<(String, super::resource::Shared)>,
    /// Set by [`HttpServer::refuse_new_sessions`]: a new session of either
    /// kind gets 503.
    refusing: AtomicBool,
    /// How many TCP connections are open ([`HttpServer::shutdown`] waits for
    /// none).
    connections: watch::Sender<usize>,
}

/// The index of [`HttpServerConfig::path`] among the endpoints (a session's
/// `endpoint`); route `i` of [`Shared::mounts`] is `i + 1`.
const MAIN: usize = 0;

/// One route ([`HttpServerConfig::routes`]): its endpoint path and, with the
/// legacy transport on, its legacy SSE and message paths.
struct Mount {
    path: String,
    legacy: Option<(String, String)>,
}

/// What a request path names: an endpoint (by index, [`MAIN`] or a route's),
/// or a legacy path of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    Endpoint(usize),
    Legacy(super::legacy::Endpoint, usize),
}

impl Shared {
    /// Where `path` leads, if anywhere: the main path and its legacy paths
    /// first, as before routes existed, then a linear scan of the routes
    /// (no allocation).
    fn at(&self, path: &str) -> Option<At> {
        if path == self.config.path {
            return Some(At::Endpoint(MAIN));
        }
        if let Some(legacy) = super::legacy::Endpoint::of(&self.config, path) {
            return Some(At::Legacy(legacy, MAIN));
        }
        for (i, mount) in self.mounts.iter().enumerate() {
            if path == mount.path {
                return Some(At::Endpoint(i + 1));
            }
            if let Some((sse, message)) = &mount.legacy {
                if path == sse {
                    return Some(At::Legacy(super::legacy::Endpoint::Sse, i + 1));
                }
                if path == message {
                    return Some(At::Legacy(super::legacy::Endpoint::Message, i + 1));
                }
            }
        }
        None
    }

    /// The route of endpoint `endpoint`; `None` for [`MAIN`].
    fn mount(&self, endpoint: usize) -> Option<&Mount> {
        self.mounts.get(endpoint.checked_sub(1)?)
    }

    /// The path of endpoint `endpoint` ([`MAIN`] or a route's index).
    fn endpoint_path(&self, endpoint: usize) -> &str {
        self.mount(endpoint)
            .map_or(self.config.path.as_str(), |m| m.path.as_str())
    }

    /// The resource server of endpoint `endpoint`, if it has one.
    fn auth_of(&self, endpoint: usize) -> Option<&ResourceServer> {
        self.auth.get(endpoint)?.as_deref()
    }

    /// The legacy message path of endpoint `endpoint`.
    fn message_path(&self, endpoint: usize) -> &str {
        self.mount(endpoint)
            .and_then(|m| m.legacy.as_ref())
            .map_or(self.config.message_path.as_str(), |(_, message)| {
                message.as_str()
            })
    }
}

/// The routes of `config` with their legacy paths, or the
/// [`io::ErrorKind::InvalidInput`] error for the first one that does not start
/// with `/` or whose paths are taken (see [`HttpServerConfig::routes`]).
/// `metadata`: the Protected Resource Metadata paths, when auth is on.
fn mounts(config: &HttpServerConfig, metadata: &[String]) -> io::Result<Vec<Mount>> {
    let invalid = |message: String| io::Error::new(io::ErrorKind::InvalidInput, message);
    // Taken paths and what takes them; the main ones are not checked against
    // each other (as before routes existed).
    let mut taken: Vec<(String, String)> = vec![
        (config.path.clone(), "the endpoint path".to_owned()),
        ("/healthz".to_owned(), "the health endpoint".to_owned()),
        ("/readyz".to_owned(), "the readiness endpoint".to_owned()),
    ];
    if let Some(sse) = &config.sse_path {
        taken.push((sse.clone(), "the legacy SSE path".to_owned()));
        taken.push((
            config.message_path.clone(),
            "the legacy message path".to_owned(),
        ));
    }
    for p in metadata {
        taken.push((p.clone(), "a Protected Resource Metadata path".to_owned()));
    }
    let mut mounts = Vec::with_capacity(config.routes.len());
    for route in &config.routes {
        if !route.starts_with('/') {
            return Err(invalid(format!("a route must start with '/': {route:?}")));
        }
        let legacy = config.sse_path.is_some().then(|| {
            let base = route.trim_end_matches('/');
            (format!("{base}/sse"), format!("{base}/message"))
        });
        let mut own = vec![(route.clone(), format!("route {route:?}"))];
        if let Some((sse, message)) = &legacy {
            own.push((
                sse.clone(),
                format!("the legacy SSE path of route {route:?}"),
            ));
            own.push((
                message.clone(),
                format!("the legacy message path of route {route:?}"),
            ));
        }
        for (path, what) in own {
            if let Some((_, holder)) = taken.iter().find(|(p, _)| *p == path) {
                return Err(invalid(format!(
                    "route {route:?}: {what} {path:?} is already {holder}"
                )));
            }
            taken.push((path, what));
        }
        mounts.push(Mount {
            path: route.clone(),
            legacy,
        });
    }
    Ok(mounts)
}

/// The resource server of each endpoint of `config` ([`MAIN`], then the
/// routes in order; see [`HttpServerConfig::route_auth`]) and every metadata
/// path with the resource it serves. Errors ([`io::ErrorKind::InvalidInput`]):
/// a `route_auth` key that is no endpoint path, a configuration that cannot
/// be served, two resources at one metadata path.
#[allow(clippy::type_complexity)]
fn resource_servers(
    config: &HttpServerConfig,
) -> io::Result<(
    Vec<Option<super::resource::Shared>>,
    Vec<(String, super::resource::Shared)>,
)> {
    let invalid = |message: String| io::Error::new(io::ErrorKind::InvalidInput, message);
    let endpoints: Vec<&str> = std::iter::once(config.path.as_str())
        .chain(config.routes.iter().map(String::as_str))
        .collect();
    if let Some(key) = config
        .route_auth
        .keys()
        .find(|k| !endpoints.contains(&k.as_str()))
    {
        return Err(invalid(format!(
            "route_auth names {key:?}, which is neither the endpoint path nor a route"
        )));
    }
    let build = |c: &super::resource::ResourceServerConfig, at: &[&str], what: &str| {
        ResourceServer::for_endpoints(c.clone(), at)
            .map(Arc::new)
            .map_err(|e| invalid(format!("{what}: {}", crate::error_chain(&e))))
    };
    // The shared resource: its metadata at the main path's well-known path
    // only when the main path follows it (as before routes had their own).
    let main_follows = !config.route_auth.contains_key(&config.path);
    let global = match &config.auth {
        None => None,
        Some(c) => {
            let at: &[&str] = if main_follows { &[&config.path] } else { &[] };
            Some(build(c, at, "auth")?)
        }
    };
    let mut by_endpoint = Vec::with_capacity(endpoints.len());
    for path in &endpoints {
        by_endpoint.push(match config.route_auth.get(*path) {
            None => global.clone(),
            Some(None) => None,
            Some(Some(c)) => Some(build(c, &[path], &format!("route_auth {path:?}"))?),
        });
    }
    let mut metadata: Vec<(String, super::resource::Shared)> = Vec::new();
    for rs in by_endpoint.iter().flatten() {
        if metadata.iter().any(|(_, other)| Arc::ptr_eq(other, rs)) {
            continue;
        }
        for p in rs.metadata_paths() {
            if let Some((_, other)) = metadata.iter().find(|(q, _)| q == p) {
                return Err(invalid(format!(
                    "the Protected Resource Metadata path {p:?} would serve two resources: {:?} and {:?}",
                    other.config().resource,
                    rs.config().resource
                )));
            }
            metadata.push((p.clone(), rs.clone()));
        }
    }
    Ok((by_endpoint, metadata))
}

/// Held by the task serving one connection: counts it in
/// [`Shared::connections`] while it lives.
struct OpenConnection(Arc<Shared>);

impl OpenConnection {
    fn new(shared: &Arc<Shared>) -> Self {
        shared.connections.send_modify(|n| *n += 1);
        OpenConnection(shared.clone())
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.connections.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// How the tasks serving connections learn that the server stops.
#[derive(Clone)]
struct Stop {
    /// The server is shutting down (or gone): finish the response in progress
    /// (HTTP/1.1 keep-alive off), then close.
    graceful: watch::Receiver<bool>,
    /// The grace of [`HttpServer::shutdown`] is over: close now, mid-body.
    cut: watch::Receiver<bool>,
}

/// The message of the 503 a new session gets after
/// [`HttpServer::refuse_new_sessions`].
pub(crate) const SHUTTING_DOWN: &str = "the server is shutting down; no new sessions";

/// The message of the 503 for a stateless 2026-07-28 request during a drain.
const SHUTTING_DOWN_STATELESS: &str = "the server is shutting down; no new requests";

/// The message of the 503 a new session gets when `max` are live
/// ([`HttpServerConfig::max_sessions`]).
pub(crate) fn too_many_sessions(max: usize) -> String {
    format!("too many sessions: the server's limit of {max} live sessions is reached; try again once one has ended")
}

/// The default grace of [`HttpServer::shutdown`] for open connections to
/// finish their responses: 5 s.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// A running Streamable HTTP server. Dropping it (or [`shutdown`](Self::shutdown),
/// which also waits for the connections to close)
/// stops accepting connections, ends every session
/// ([`CloseReason::SessionClosed`]) and closes open connections once their
/// current response ends.
pub struct HttpServer {
    local_addr: SocketAddr,
    /// [`HttpServerConfig::admin`], bound.
    admin: Option<super::admin::AdminServer>,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    cut: watch::Sender<bool>,
}

impl fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpServer")
            .field("local_addr", &self.local_addr)
            .field("path", &self.shared.config.path)
            .field("routes", &self.shared.config.routes)
            .finish_non_exhaustive()
    }
}

impl HttpServer {
    /// Binds [`HttpServerConfig::bind`] and starts serving on the current Tokio
    /// runtime (an accept task, and one task per connection).
    ///
    /// Errors: binding fails (address in use, permission), or
    /// [`io::ErrorKind::InvalidInput`] when [`HttpServerConfig::path`] does not
    /// start with `/`, when a route is refused (see
    /// [`HttpServerConfig::routes`]), or when [`HttpServerConfig::auth`] is
    /// invalid.
    pub async fn bind(config: HttpServerConfig) -> io::Result<(HttpServer, SessionAcceptor)> {
        if !config.path.starts_with('/') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the endpoint path must start with '/': {:?}", config.path),
            ));
        }
        let (auth, metadata) = resource_servers(&config)?;
        let metadata_paths: Vec<String> = metadata.iter().map(|(p, _)| p.clone()).collect();
        let mounts = mounts(&config, &metadata_paths)?;
        let listener = TcpListener::bind(config.bind).await?;
        let local_addr = listener.local_addr()?;
        let admin = match config.admin {
            Some(bind) => Some(
                super::admin::AdminServer::bind(super::admin::AdminConfig {
                    bind,
                    health: config
                        .health
                        .clone()
                        .unwrap_or_else(|| HealthProbe(Arc::new(|| Ok(())))),
                    report: config.health_report.clone(),
                    metrics: config.metrics.clone(),
                    live: config.live.clone(),
                })
                .await
                .map_err(|e| io::Error::new(e.kind(), format!("the admin listener {bind}: {e}")))?,
            ),
            None => None,
        };
        let mut hosts = config.allowed_hosts.clone();
        if config.default_hosts {
            hosts.extend(guard::default_hosts(local_addr));
        }
        let mut origins = config.allowed_origins.clone();
        if config.default_origins {
            origins.extend(guard::default_origins(local_addr));
        }
        let (tx, rx) = mpsc::channel(config.transport.capacity());
        let limits = Limits {
            replay: config.sse_replay_buffer.max(1),
            capacity: config.transport.capacity(),
        };
        let registry = Arc::new(Registry::new(config.max_sessions));
        if let Some(idle) = config.session_idle_timeout {
            registry.spawn_reaper(idle);
        }
        let (shutdown, shutdown_rx) = watch::channel(false);
        let (cut, cut_rx) = watch::channel(false);
        let stop = Stop {
            graceful: shutdown_rx.clone(),
            cut: cut_rx,
        };
        let shared = Arc::new(Shared {
            connections: watch::channel(0).0,
            clock: Clock::new(config.sse_first_event_wait / 2),
            answering: AtomicUsize::new(0),
            refusing: AtomicBool::new(false),
            stopping: shutdown_rx.clone(),
            exchanges: Arc::new(tokio::sync::Semaphore::new(
                config
                    .max_exchanges
                    .min(tokio::sync::Semaphore::MAX_PERMITS),
            )),
            registry,
            traffic: Default::default(),
            auth,
            metadata,
            config,
            mounts,
            hosts,
            origins,
            acceptor: tx,
            limits,
        });
        let span = info_span!("http_server", addr = %local_addr);
        tokio::spawn(accept_loop(listener, shared.clone(), stop).instrument(span));
        Ok((
            HttpServer {
                local_addr,
                admin,
                shared,
                shutdown,
                cut,
            },
            SessionAcceptor { rx },
        ))
    }

    /// The address actually bound (with the OS-chosen port when the configured
    /// port was 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// What it counted, read when called (the caller's metrics): holds the
    /// server weakly, and reads zeros once it is gone.
    pub fn stats(&self) -> impl Fn() -> ServerStats + Send + Sync + 'static {
        let shared = Arc::downgrade(&self.shared);
        move || match shared.upgrade() {
            Some(shared) => shared.stats(),
            None => ServerStats::default(),
        }
    }

    /// The admin listener's address ([`HttpServerConfig::admin`]), bound.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin.as_ref().map(|a| a.local_addr())
    }

    /// The endpoint's URL, `http://<local_addr><path>`
    /// ([`HttpServerConfig::path`]).
    pub fn url(&self) -> String {
        self.url_of(&self.shared.config.path)
    }

    /// The URL of `path` on this server, `http://<local_addr><path>` (e.g. a
    /// route's, [`HttpServerConfig::routes`]); `path` is not checked.
    pub fn url_of(&self, path: &str) -> String {
        format!("http://{}{}", self.local_addr, path)
    }

    /// How many sessions are live.
    pub fn session_count(&self) -> usize {
        self.shared.registry.len()
    }

    /// How many idle sessions were ended so far to make room for a new one
    /// when [`HttpServerConfig::max_sessions`] were live
    /// ([`CloseReason::SessionEvicted`]; each is logged, info, with this
    /// count).
    pub fn evicted_sessions(&self) -> u64 {
        self.shared.registry.evicted()
    }

    /// From now on, a request that would open a session (`initialize` on the
    /// endpoint, a GET on the legacy SSE path) and a new stateless 2026-07-28
    /// request get 503 with a JSON-RPC error (-32000, "the server is shutting
    /// down", under the request's id); live sessions are served as before, and
    /// so are the stateless messages of work in progress: notifications (a
    /// cancellation) and the retries of an `input_required` round trip (params
    /// with `inputResponses` or `requestState`). For a drain: a client behind a
    /// load balancer retries a 503 elsewhere (RFC 9110 §15.6.4), where an error
    /// inside a 200 would end its attempt. A session that was opening when
    /// this was called, whose `initialize` the library then answers with an
    /// error (a bridge that starts no more children), gets that 503 too, as
    /// does an `initialize` POSTed to a legacy HTTP+SSE session.
    pub fn refuse_new_sessions(&self) {
        self.shared.refusing.store(true, Ordering::Relaxed);
    }

    /// How many TCP connections are open now.
    pub fn connection_count(&self) -> usize {
        *self.shared.connections.borrow()
    }

    /// Stops the server, as dropping it does, and waits until its connections
    /// have closed, at most `grace` ([`DEFAULT_SHUTDOWN_GRACE`] is a fair
    /// bound). Every session ends ([`CloseReason::SessionClosed`]; stateless
    /// exchanges end as their module says), so every open SSE response (the
    /// reply to a POST, a standalone or resumed GET stream, a legacy HTTP+SSE
    /// stream) ends its body properly, the terminating zero-length chunk
    /// included, as after DELETE; then its connection closes (no keep-alive).
    /// Connections still open after `grace` (a client that does not read what
    /// it was sent) are cut. Returns how many were cut: 0 when every response
    /// ended whole.
    ///
    /// Await it before the runtime ends (a program's last step): dropping the
    /// server only starts the close, and a runtime dropped right after it
    /// drops the connections' tasks with it, mid-body, so a client sees a
    /// truncated chunked body or a reset instead of the end of its stream.
    pub async fn shutdown(self, grace: Duration) -> usize {
        let shared = self.shared.clone();
        let cut = self.cut.clone();
        drop(self);
        let mut open = shared.connections.subscribe();
        if tokio::time::timeout(grace, open.wait_for(|n| *n == 0))
            .await
            .is_ok()
        {
            return 0;
        }
        let left = *open.borrow();
        warn!(
            connections = left,
            grace_ms = grace.as_millis() as u64,
            "connections still open after the shutdown grace; cut"
        );
        cut.send_replace(true);
        // Bounded: a cut connection's task ends at its next poll.
        let _ = tokio::time::timeout(CUT_WAIT, open.wait_for(|n| *n == 0)).await;
        left
    }
}

/// How long [`HttpServer::shutdown`] waits for the connections it cut to go.
const CUT_WAIT: Duration = Duration::from_secs(1);

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
        for session in self.shared.registry.drain() {
            session.end(CloseReason::SessionClosed);
        }
    }
}

/// Waits until the server is shut down (the flag set, or the [`HttpServer`] gone).
async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|s| *s).await.map(|_| ());
}

/// Waits until the shutdown's grace is over; never, when the server was only
/// dropped (no grace was given).
async fn cut_off(cut: &mut watch::Receiver<bool>) {
    if cut.wait_for(|c| *c).await.is_err() {
        std::future::pending::<()>().await;
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, stop: Stop) {
    let mut shutdown = stop.graceful.clone();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    if let Err(e) = stream.set_nodelay(true) {
                        warn!(%peer, error = %e, "could not set TCP_NODELAY");
                    }
                    let span = info_span!("http_connection", %peer);
                    // Counted before the task runs, so a shutdown right now
                    // waits for it too.
                    let open = OpenConnection::new(&shared);
                    tokio::spawn(
                        serve_connection(stream, shared.clone(), stop.clone(), open)
                            .instrument(span),
                    );
                }
                Err(e) => {
                    // E.g. out of file descriptors: wait a little rather than spin.
                    warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            () = stopped(&mut shutdown) => break,
        }
    }
    debug!("the server stopped accepting connections");
}

/// Serves one connection; `_open` counts it until it closes.
async fn serve_connection(
    stream: TcpStream,
    shared: Arc<Shared>,
    stop: Stop,
    _open: OpenConnection,
) {
    let Stop {
        graceful: mut shutdown,
        mut cut,
    } = stop;
    let traffic = shared.traffic.clone();
    let service = service_fn(move |req: Request<Incoming>| {
        let shared = shared.clone();
        async move { Ok::<_, Infallible>(handle(&shared, req).await) }
    });
    let stream = super::counted::Counted {
        inner: stream,
        traffic: traffic.clone(),
    };
    let conn = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(e) = result {
                debug!(error = %e, "connection ended with an error");
            }
        }
        () = stopped(&mut shutdown) => {
            // The response in progress is finished (the session's end ends an
            // SSE body with its last chunk), then the connection closes.
            conn.as_mut().graceful_shutdown();
            tokio::select! {
                _ = conn.as_mut() => {}
                () = cut_off(&mut cut) => debug!("connection cut: the shutdown grace is over"),
            }
        }
    }
}

/// A request the resource server refused ([`HttpServerConfig::refusals`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct Refused<'a> {
    /// The endpoint path it came in at.
    pub path: &'a str,
    /// Why: one of [`REFUSAL_REASONS`](super::resource::REFUSAL_REASONS).
    pub reason: &'static str,
    /// The HTTP status it got (401, 403).
    pub status: u16,
    /// Whose token it was, when it passed (a refusal for scopes).
    pub principal: Option<&'a Principal>,
    /// The `tools/call`'s tool, refused for the tool's own scopes.
    pub tool: Option<&'a str>,
}

/// Where refusals are told ([`HttpServerConfig::refusals`]).
#[derive(Clone)]
pub struct RefusalSink(pub Arc<dyn Fn(&Refused<'_>) + Send + Sync>);

impl fmt::Debug for RefusalSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RefusalSink")
    }
}

/// Tells `config`'s sink of `refusal` of a request at `path` (not of a
/// missing token, nor of a token that could not be checked).
fn tell_refused(
    config: &HttpServerConfig,
    path: &str,
    refusal: &Refusal,
    principal: Option<&Principal>,
    tool: Option<&str>,
) {
    let Some(sink) = &config.refusals else { return };
    if matches!(refusal, Refusal::NoToken | Refusal::Unavailable(_)) {
        return;
    }
    (sink.0)(&Refused {
        path,
        reason: refusal.reason(),
        status: refusal.status(),
        principal,
        tool,
    });
}

/// The answer to a request the resource server refused: its status, a
/// JSON-RPC error body (`id: null`; -32000 for a 503, else -32600) and the
/// `WWW-Authenticate` challenge. The one place a [`Refusal`] becomes a
/// response.
fn refused(auth: &ResourceServer, refusal: &Refusal) -> Response<Body> {
    auth.count(refusal, false);
    refused_answer(auth, refusal)
}

/// [`refused`]'s answer, without counting it.
fn refused_answer(auth: &ResourceServer, refusal: &Refusal) -> Response<Body> {
    let status = StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::UNAUTHORIZED);
    let why = crate::error_chain(refusal);
    let mut response = if status == StatusCode::SERVICE_UNAVAILABLE {
        warn!(reason = %why, "a token could not be checked");
        rpc_error(
            status,
            -32000,
            "the access token could not be checked; try again later",
        )
    } else {
        debug!(status = status.as_u16(), reason = %why, "request refused");
        rpc_error(status, code::INVALID_REQUEST, why)
    };
    if let Some(challenge) = auth
        .challenge(refusal)
        .and_then(|c| HeaderValue::from_str(&c).ok())
    {
        response.headers_mut().insert(WWW_AUTHENTICATE, challenge);
    }
    response
}

/// The Protected Resource Metadata (RFC 9728 §3.2): 200 `application/json`
/// to GET (and HEAD), readable from any origin (it is public, and browser
/// clients fetch it); 405 otherwise.
fn metadata_answer(auth: &ResourceServer, method: &Method) -> Response<Body> {
    if *method != Method::GET && *method != Method::HEAD {
        let mut response = status_only(StatusCode::METHOD_NOT_ALLOWED);
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let mut response = Response::new(Body::full(Bytes::copy_from_slice(auth.metadata_document())));
    let h = response.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    h.insert(
        http::header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    response
}

/// 403 `insufficient_scope` for a `tools/call` of a tool whose own scopes
/// ([`ResourceServerConfig::tool_scopes`](super::resource::ResourceServerConfig::tool_scopes))
/// the caller's token lacks; `None` to go on.
pub(crate) fn tool_scopes_refusal(
    (config, path): (&HttpServerConfig, &str),
    auth: Option<&ResourceServer>,
    principal: Option<&Principal>,
    message: &Message,
) -> Option<Response<Body>> {
    let (auth, principal) = (auth?, principal?);
    if auth.config().tool_scopes.is_empty() {
        return None;
    }
    let Message::Request(r) = message else {
        return None;
    };
    if r.method != "tools/call" {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Call<'a> {
        #[serde(borrow)]
        name: std::borrow::Cow<'a, str>,
    }
    let call: Call<'_> = serde_json::from_str(r.params.as_deref()?.get()).ok()?;
    let required = auth.tool_scopes(&call.name)?;
    let refusal = auth.check_scopes(principal, &required).err()?;
    auth.count(&refusal, true);
    tell_refused(config, path, &refusal, Some(principal), Some(&call.name));
    Some(refused_answer(auth, &refusal))
}

/// A response with a JSON-RPC error body (`id: null`).
fn rpc_error(status: StatusCode, code: i64, message: impl Into<String>) -> Response<Body> {
    error_body(
        status,
        ErrorResponse::new(None, ErrorObject::new(code, message)),
    )
}

fn error_body(status: StatusCode, error: ErrorResponse) -> Response<Body> {
    let body = Message::Error(error).encode();
    let mut response = Response::new(Body::full(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn status_only(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = status;
    response
}

fn sse_response(body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    let h = response.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(X_ACCEL_BUFFERING, HeaderValue::from_static("no"));
    response
}

/// `X-Accel-Buffering: no` asks nginx-style proxies not to buffer the stream. A
/// constant: a header name given as text is copied on every insert.
pub(crate) const X_ACCEL_BUFFERING: http::HeaderName =
    http::HeaderName::from_static("x-accel-buffering");

fn session_not_found() -> Response<Body> {
    rpc_error(
        StatusCode::NOT_FOUND,
        code::INVALID_REQUEST,
        "session not found",
    )
}

fn session_required() -> Response<Body> {
    rpc_error(
        StatusCode::BAD_REQUEST,
        code::INVALID_REQUEST,
        "Mcp-Session-Id header is required",
    )
}

/// The session a request at `endpoint` names: `Ok(None)` without the header,
/// `Err(404)` when it names no live session opened at that endpoint.
fn find_session(
    shared: &Shared,
    headers: &HeaderMap,
    (endpoint, principal): (usize, Option<&Principal>),
) -> Result<Option<Arc<Session>>, Box<Response<Body>>> {
    match headers.get(&guard::SESSION_ID) {
        None => Ok(None),
        Some(value) => {
            // Another subject's session, or one of another endpoint, is not
            // found for this request (indistinguishable from a session that
            // does not exist), and left as it is.
            let found = value
                .to_str()
                .ok()
                .and_then(|id| shared.registry.get(id))
                .filter(|s| s.endpoint == endpoint && s.owned_by(principal));
            match found {
                Some(session) => {
                    session.touch();
                    Ok(Some(session))
                }
                None => Err(Box::new(session_not_found())),
            }
        }
    }
}

async fn handle(shared: &Arc<Shared>, mut req: Request<Incoming>) -> Response<Body> {
    if let Some(response) = health_answer(shared, &req) {
        return response;
    }
    let headers = req.headers();
    if !guard::host_ok(headers, &shared.hosts) {
        debug!(host = ?headers.get(http::header::HOST), "Host not allowed");
        return rpc_error(
            StatusCode::FORBIDDEN,
            code::INVALID_REQUEST,
            "Host not allowed",
        );
    }
    if !guard::origin_ok(headers, &shared.origins) {
        debug!(origin = ?headers.get(http::header::ORIGIN), "Origin not allowed");
        return rpc_error(
            StatusCode::FORBIDDEN,
            code::INVALID_REQUEST,
            "Origin not allowed",
        );
    }
    let path = req.uri().path();
    if let Some((_, auth)) = shared.metadata.iter().find(|(p, _)| p == path) {
        return metadata_answer(auth, req.method());
    }
    let at = shared.at(path);
    let auth = match at {
        Some(At::Endpoint(e) | At::Legacy(_, e)) => shared.auth_of(e),
        None => None,
    };
    let principal = match auth {
        None => None,
        Some(auth) => {
            let found = {
                let values: Vec<&[u8]> = req
                    .headers()
                    .get_all(AUTHORIZATION)
                    .iter()
                    .map(HeaderValue::as_bytes)
                    .collect();
                auth.authenticate(&values, req.uri().query()).await
            };
            // Nothing past this point sees the token (MCP: no passthrough).
            req.headers_mut().remove(AUTHORIZATION);
            match found {
                Ok(principal) => {
                    debug!(subject = %principal.subject, client_id = principal.client_id.as_deref().unwrap_or(""), "authorized");
                    Some(principal)
                }
                Err(refusal) => {
                    let path = match at {
                        Some(At::Endpoint(e) | At::Legacy(_, e)) => shared.endpoint_path(e),
                        None => "",
                    };
                    tell_refused(&shared.config, path, &refusal, None, None);
                    return refused(auth, &refusal);
                }
            }
        }
    };
    let principal = principal.as_ref();
    let headers = req.headers();
    let endpoint = match at {
        None => return status_only(StatusCode::NOT_FOUND),
        Some(At::Endpoint(endpoint)) => endpoint,
        Some(At::Legacy(legacy, endpoint)) => {
            let ctx = super::legacy::Ctx {
                endpoint,
                path: shared.endpoint_path(endpoint),
                message_path: shared.message_path(endpoint),
                principal,
                auth: shared.auth_of(endpoint),
                config: &shared.config,
                registry: &shared.registry,
                limits: &shared.limits,
                acceptor: &shared.acceptor,
                refusing: &shared.refusing,
            };
            return super::legacy::handle(&ctx, legacy, req).await;
        }
    };
    let version = guard::protocol_version(headers, &shared.config.supported_versions);
    let modern_header = matches!(version, Ok(v) if v.era() == Era::Modern);
    if modern_header && matches!(*req.method(), Method::GET | Method::DELETE) {
        // 2026-07-28: POST only; GET and DELETE SHOULD get 405.
        let mut response = status_only(StatusCode::METHOD_NOT_ALLOWED);
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("POST"));
        return response;
    }
    if *req.method() == Method::POST {
        return post(shared, req, version, (endpoint, principal)).await;
    }
    match *req.method() {
        Method::GET => get(shared, req.headers(), (endpoint, principal)),
        Method::DELETE => delete(shared, req.headers(), (endpoint, principal)),
        _ => {
            let mut response = status_only(StatusCode::METHOD_NOT_ALLOWED);
            response
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
            response
        }
    }
}

/// The revision a stateful request speaks: its `MCP-Protocol-Version` against
/// the revision its session negotiated, if any ([`guard::session_version`]);
/// the `Err` is the 400 answer.
fn session_version(
    shared: &Shared,
    headers: &HeaderMap,
    session: Option<&Session>,
) -> Result<ProtocolVersion, Box<Response<Body>>> {
    let negotiated = session.and_then(Session::negotiated);
    guard::session_version(
        guard::version_header(headers),
        negotiated,
        &shared.config.supported_versions,
    )
    .map_err(|refusal| Box::new(version_refused(shared, &refusal, negotiated)))
}

/// 400 for an `MCP-Protocol-Version` the request may not name (stateful
/// shape): one the server does not speak and its session did not negotiate,
/// or one newer than the session's.
fn version_refused(
    shared: &Shared,
    refusal: &guard::VersionRefusal,
    negotiated: Option<ProtocolVersion>,
) -> Response<Body> {
    let message = match refusal {
        guard::VersionRefusal::Unsupported(text) => {
            let supported: Vec<&str> = shared
                .config
                .supported_versions
                .iter()
                .map(|v| v.as_str())
                .collect();
            let session = negotiated
                .map(|n| format!("; this session negotiated {n}"))
                .unwrap_or_default();
            format!(
                "unsupported MCP-Protocol-Version {text:?} (supported: {}{session})",
                supported.join(", ")
            )
        }
        guard::VersionRefusal::NotNegotiated { header, negotiated } => format!(
            "MCP-Protocol-Version {header} is newer than {negotiated}, the revision this session negotiated"
        ),
    };
    rpc_error(StatusCode::BAD_REQUEST, code::INVALID_REQUEST, message)
}

/// A 128-bit session id from the OS's CSPRNG, as 32 lowercase hex digits
/// (visible ASCII, as every revision requires).
pub(crate) fn mint_session_id() -> io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| io::Error::other(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Takes out of a batch its orphans: invalid items that want an answer but
/// whose id could not be read (`[1]`, `[{"id":{}}]`). JSON-RPC 2.0 §6 answers
/// each with an error response whose id is `null`; the session could only send
/// that to its standalone stream (nothing routes a `null` id to a POST), so the
/// server writes them itself, on the POST's own stream (MCP 2025-03-26, the one
/// revision with batches: the POST's reply carries the batch's responses).
/// Returns the frame without them and their encoded error responses.
fn take_orphans(frame: Frame) -> (Frame, Vec<Vec<u8>>) {
    let Frame::Batch(items) = frame else {
        return (frame, Vec::new());
    };
    let mut orphans = Vec::new();
    let items = items
        .into_iter()
        .filter(|item| match item {
            Err(e) if e.wants_response() && e.id().is_none() => {
                orphans.push(encode_line(&Message::Error(e.to_response())));
                false
            }
            _ => true,
        })
        .collect();
    (Frame::Batch(items), orphans)
}

/// The ids a frame's answer must carry: requests, and invalid batch items that
/// want an answer and whose id could be read.
fn request_ids(frame: &Frame) -> Vec<Id> {
    match frame {
        Frame::Single(Message::Request(r)) => vec![r.id.clone()],
        Frame::Single(_) => Vec::new(),
        Frame::Batch(items) => items
            .iter()
            .filter_map(|item| match item {
                Ok(Message::Request(r)) => Some(r.id.clone()),
                Err(e) if e.wants_response() => e.id().cloned(),
                _ => None,
            })
            .collect(),
    }
}

/// A POST's JSON body: `Content-Type` must be `application/json` and no
/// `Content-Encoding` other than `identity` may be named (else 415), and
/// the body at most `max` bytes, by its declared length and as read (else 413,
/// sent once the rest of the body is read and thrown away, see [`DRAIN_BYTES`]);
/// a body that cannot be read is 400. The answer for a refused body comes back as
/// the `Err` (a JSON-RPC error without id). Shared by the Streamable HTTP and the
/// legacy HTTP+SSE endpoints.
pub(crate) async fn read_json_body(
    headers: &HeaderMap,
    body: Incoming,
    max: usize,
) -> Result<Bytes, Box<Response<Body>>> {
    if !guard::content_type_ok(headers) {
        return Err(Box::new(rpc_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            code::INVALID_REQUEST,
            "Content-Type must be application/json",
        )));
    }
    if !guard::content_encoding_ok(headers) {
        // RFC 9110 §15.5.16: an unsupported content coding is 415, with
        // `Accept-Encoding` naming what would do (none but identity).
        let mut refused = rpc_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            code::INVALID_REQUEST,
            "Content-Encoding is not supported: send the body as is",
        );
        refused
            .headers_mut()
            .insert(ACCEPT_ENCODING, HeaderValue::from_static("identity"));
        return Err(Box::new(refused));
    }
    let too_large = || {
        Box::new(rpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            code::INVALID_REQUEST,
            format!("the body exceeds {max} bytes"),
        ))
    };
    let mut body = body;
    let declared = guard::header_text(headers, CONTENT_LENGTH).and_then(|v| v.parse::<u64>().ok());
    if let Some(n) = declared.filter(|&n| n > max as u64) {
        // Not read at all when the client waits for `100 Continue` before sending
        // it (reading would tell it to go on), nor when it is too big to be read
        // within the bound anyway (the connection is reset either way).
        let expects_continue = headers
            .get(http::header::EXPECT)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
        if !expects_continue && n <= max.saturating_add(DRAIN_BYTES) as u64 {
            drain(&mut body).await;
        }
        return Err(too_large());
    }
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut len = 0usize;
    while let Some(frame) = body.frame().await {
        let data = match frame {
            Ok(frame) => match frame.into_data() {
                Ok(data) => data,
                Err(_trailers) => continue,
            },
            Err(e) => {
                debug!(error = %e, "reading the body failed");
                return Err(Box::new(rpc_error(
                    StatusCode::BAD_REQUEST,
                    code::INVALID_REQUEST,
                    "could not read the body",
                )));
            }
        };
        len += data.len();
        if len > max {
            drain(&mut body).await;
            return Err(too_large());
        }
        chunks.push(data);
    }
    Ok(match chunks.len() {
        0 => Bytes::new(),
        1 => chunks.pop().unwrap_or_default(),
        _ => Bytes::from(chunks.concat()),
    })
}

/// At most this much of a body over the limit is read and thrown away before the
/// 413 is sent, for at most [`DRAIN_TIME`]. A server that answers while the client
/// is still writing closes the connection with unread bytes, which resets it: the
/// client then sees "broken pipe" or "connection reset" instead of the 413.
/// Past either bound the 413 is sent anyway. A body whose declared length is over
/// the limit is not read at all when the request asks for `Expect: 100-continue`
/// (the client sends nothing before it is told to, RFC 9110 §10.1.1) or when that
/// length is over the limit plus this bound.
const DRAIN_BYTES: usize = 32 << 20;

/// See [`DRAIN_BYTES`].
const DRAIN_TIME: Duration = Duration::from_secs(5);

/// Reads and discards what is left of `body`, within [`DRAIN_BYTES`] and
/// [`DRAIN_TIME`]; a read error ends it.
async fn drain(body: &mut Incoming) {
    let read = async {
        let mut left = DRAIN_BYTES;
        while let Some(Ok(frame)) = body.frame().await {
            let n = frame.data_ref().map_or(0, Bytes::len);
            if n >= left {
                return;
            }
            left -= n;
        }
    };
    if tokio::time::timeout(DRAIN_TIME, read).await.is_err() {
        debug!("the rest of a body over the limit did not come in time");
    }
}

async fn post(
    shared: &Arc<Shared>,
    req: Request<Incoming>,
    header_version: Result<ProtocolVersion, String>,
    (endpoint, principal): (usize, Option<&Principal>),
) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let headers = &parts.headers;
    let Some(shape) = guard::post_reply(headers) else {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            code::INVALID_REQUEST,
            "Accept must allow application/json or text/event-stream (MCP clients list both)",
        );
    };
    let bytes = match read_json_body(headers, body, shared.config.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(response) => return *response,
    };
    let modern_header = matches!(header_version, Ok(v) if v.era() == Era::Modern);
    let has_session = headers.contains_key(&guard::SESSION_ID);
    if modern_header || !has_session || header_version.is_err() {
        // Maybe stateless: a 2026-07-28 header, or a body whose `_meta` names a
        // protocol version (REVISIONS.md §6, "Telling the eras apart"). A body that
        // is not one message gets the stateful checks' answer below.
        if let Ok(Frame::Single(message)) = decode_frame(&bytes, Batching::Refused) {
            let peek = stateless::peek_meta(&message);
            if modern_header || peek.modern {
                let version = match header_version {
                    Ok(v) if v.era() == Era::Modern => v,
                    _ => ProtocolVersion::LATEST,
                };
                if shared.refusing.load(Ordering::Relaxed)
                    && !switchboard_protocol::lifecycle::continuity::continues_work(&message)
                {
                    // A drain: a stateless request may go to any server, so a
                    // new one is sent elsewhere as a new session is. What the
                    // work in progress needs still comes in: notifications (a
                    // cancellation) and the retries of an `input_required`
                    // round trip.
                    return error_body(
                        StatusCode::SERVICE_UNAVAILABLE,
                        ErrorResponse::new(
                            message.id().cloned(),
                            ErrorObject::new(-32000, SHUTTING_DOWN_STATELESS),
                        ),
                    );
                }
                let at = (&shared.config, shared.endpoint_path(endpoint));
                if let Some(refusal) =
                    tool_scopes_refusal(at, shared.auth_of(endpoint), principal, &message)
                {
                    return refusal;
                }
                let Ok(permit) = shared.exchanges.clone().try_acquire_owned() else {
                    return rpc_error(
                        StatusCode::SERVICE_UNAVAILABLE,
                        -32000,
                        "too many requests in progress",
                    );
                };
                return stateless::exchange(
                    &shared.acceptor,
                    (shared.stopping.clone(), permit),
                    &shared.config.transport,
                    (
                        parts.headers,
                        principal.cloned(),
                        shared.endpoint_path(endpoint).to_owned(),
                    ),
                    version,
                    message,
                    (peek, shape),
                )
                .await;
            }
        }
    }
    let session = match find_session(shared, headers, (endpoint, principal)) {
        Ok(s) => s,
        Err(response) => return *response,
    };
    let version = match session_version(shared, headers, session.as_deref()) {
        Ok(v) => v,
        Err(response) => return *response,
    };
    let batching = session
        .as_ref()
        .map_or(Batching::Refused, |s| s.batching.get());
    let frame = match decode_frame(&bytes, batching) {
        Ok(frame) => frame,
        Err(e) => {
            let status = StatusCode::BAD_REQUEST;
            return match e.kind() {
                DecodeErrorKind::Parse => rpc_error(status, code::PARSE_ERROR, e.detail()),
                _ => error_body(status, e.to_response()),
            };
        }
    };
    let messages: Vec<&Message> = match &frame {
        Frame::Single(message) => vec![message],
        Frame::Batch(items) => items.iter().filter_map(|i| i.as_ref().ok()).collect(),
    };
    for message in messages {
        let at = (&shared.config, shared.endpoint_path(endpoint));
        if let Some(refusal) = tool_scopes_refusal(at, shared.auth_of(endpoint), principal, message)
        {
            return refusal;
        }
    }
    let (session, created) = match session {
        Some(s) => (s, None),
        None => {
            let initialize = match &frame {
                Frame::Single(Message::Request(r)) if r.method == "initialize" => r.id.clone(),
                _ => return session_required(),
            };
            match create_session(
                shared,
                (headers, endpoint, principal),
                version,
                initialize.clone(),
            )
            .await
            {
                Ok(s) => {
                    let id = s.id.clone();
                    (s, Some((id, initialize)))
                }
                Err(response) => return *response,
            }
        }
    };
    let opening = created.is_some();
    // The client that goes before the answer to its `initialize` (a timeout, a
    // child slow to start) never learns the session's id: nobody can use or
    // DELETE the session, which would hold a `max_sessions` slot (and a
    // bridge's child) until the idle timeout. Ended when this is dropped armed.
    let mut unclaimed = Unclaimed(opening.then(|| session.clone()));
    let json = shape.json(shared.config.json_response);
    let late_json = !json && matches!(shape, guard::ReplyShape::Either);
    let mut response = answer(shared, &session, frame, (version, json, late_json), opening).await;
    unclaimed.0 = None;
    if let Some((id, initialize)) = created {
        if session.initialize_failed() {
            // The error answer is in the reply already; the session that was
            // never established goes, and its id is not handed out.
            debug!(session = %session.id, "initialize failed; session ended");
            session.end(CloseReason::SessionClosed);
            if shared.refusing.load(Ordering::Relaxed) {
                // A drain began while the session was opening, and the
                // library refused it (a bridge that no longer starts
                // children): refused as every new session is now, with the
                // 503 a load balancer retries elsewhere, not an error inside
                // a 200 that would end the client's attempt.
                return shutting_down(initialize);
            }
        } else if let Ok(value) = HeaderValue::from_str(&id) {
            response.headers_mut().insert(guard::SESSION_ID, value);
        }
    }
    response
}

/// A session whose `initialize` POST is still waiting for its answer: ended if
/// the POST's future is dropped (its connection closed) before it answers.
struct Unclaimed(Option<Arc<Session>>);

impl Drop for Unclaimed {
    fn drop(&mut self) {
        if let Some(session) = self.0.take() {
            debug!(session = %session.id, "the client went before the answer to initialize; session ended");
            session.end(CloseReason::PeerClosed);
        }
    }
}

/// The 503 a new session gets after [`HttpServer::refuse_new_sessions`]: a
/// JSON-RPC error (-32000, [`SHUTTING_DOWN`]) under the `initialize`'s id.
pub(crate) fn shutting_down(initialize: Id) -> Response<Body> {
    error_body(
        StatusCode::SERVICE_UNAVAILABLE,
        ErrorResponse::new(Some(initialize), ErrorObject::new(-32000, SHUTTING_DOWN)),
    )
}

/// A new session at `endpoint` for the `initialize` request whose id is
/// `initialize`; when none can be had, the 503 answers that request under its
/// id.
async fn create_session(
    shared: &Arc<Shared>,
    (headers, endpoint, principal): (&HeaderMap, usize, Option<&Principal>),
    version: ProtocolVersion,
    initialize: Id,
) -> Result<Arc<Session>, Box<Response<Body>>> {
    let unavailable = |why: String| {
        let error = ErrorObject::new(-32000, why);
        error_body(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorResponse::new(Some(initialize.clone()), error),
        )
    };
    let full = || too_many_sessions(shared.config.max_sessions);
    if shared.refusing.load(Ordering::Relaxed) {
        return Err(Box::new(shutting_down(initialize)));
    }
    let id = mint_session_id().map_err(|e| {
        warn!(error = %e, "the OS random source failed");
        Box::new(rpc_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            code::INTERNAL_ERROR,
            "no session id",
        ))
    })?;
    let (session, transport) = Session::start(
        id.as_str().into(),
        endpoint,
        shared.limits.clone(),
        Arc::downgrade(&shared.registry),
        &shared.config.transport,
    );
    if let Some(p) = principal {
        session.set_owner(&p.subject);
    }
    if !shared.registry.insert(session.clone()) {
        session.end(CloseReason::SessionClosed);
        return Err(Box::new(unavailable(full())));
    }
    let info = HttpSession {
        transport,
        session_id: id,
        protocol_version: version,
        headers: headers.clone(),
        kind: SessionKind::Stateful,
        principal: principal.cloned(),
        path: shared.endpoint_path(endpoint).to_owned(),
    };
    if shared.acceptor.send(info).await.is_err() {
        session.end(CloseReason::SessionClosed);
        return Err(Box::new(unavailable(
            "the server is not accepting sessions".to_owned(),
        )));
    }
    match principal {
        Some(p) => {
            tracing::info!(session = %session.id, subject = %p.subject, client_id = p.client_id.as_deref().unwrap_or(""), "new session")
        }
        None => debug!(session = %session.id, "new session"),
    }
    Ok(session)
}

/// Counts a POST being answered ([`Shared::answering`]) while it lives.
struct Answering<'a>(&'a AtomicUsize);

impl<'a> Answering<'a> {
    /// Counts one more; also whether it is the only one.
    fn enter(count: &'a AtomicUsize) -> (Self, bool) {
        let before = count.fetch_add(1, Ordering::Relaxed);
        (Answering(count), before == 0)
    }
}

impl Drop for Answering<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Delivers a decoded POST body to the session and answers it. `opening`: the
/// body is the `initialize` request that created the session.
///
/// When this is the only POST the server is answering at this moment, the
/// message may go straight to the library's direct sink, in this task
/// (`Session::deliver`): one client calling tools one after another (the usual
/// agent) then pays for no hand-off between tasks (measured with the library
/// benchmark at one session: about a quarter less latency and CPU per call).
/// While other POSTs are being answered it goes through the session's queue, the
/// path every message took before direct delivery existed: with direct delivery
/// always on, A/B runs at 64 sessions read a few percent fewer calls/s, within
/// this machine's noise, so the proven path is kept wherever POSTs overlap. A
/// reply that is ready at once ends its POST's count quickly, so many clients
/// calling quick tools still mostly go direct.
async fn answer(
    shared: &Arc<Shared>,
    session: &Arc<Session>,
    frame: Frame,
    (version, json, late_json): (ProtocolVersion, bool, bool),
    opening: bool,
) -> Response<Body> {
    let (_answering, alone) = Answering::enter(&shared.answering);
    let batch = matches!(frame, Frame::Batch(_));
    // A lone request whose client takes either: JSON if its response comes
    // first ([`HttpServerConfig::json_reply_within`]).
    let late_json = late_json && !batch && !opening && !shared.config.json_reply_within.is_zero();
    let (frame, orphans) = take_orphans(frame);
    let ids = request_ids(&frame);
    // A batch whose every item was an orphan leaves nothing for the session.
    let event = match frame {
        Frame::Single(m) => Some(Inbound::Message(m)),
        Frame::Batch(items) if items.is_empty() => None,
        Frame::Batch(items) => Some(Inbound::Batch(items)),
    };
    if ids.is_empty() && orphans.is_empty() {
        let Some(event) = event else {
            return status_only(StatusCode::ACCEPTED);
        };
        return match session.deliver(event, alone).await {
            Ok(()) => status_only(StatusCode::ACCEPTED),
            Err(()) => gone(session),
        };
    }
    if let Some(id) = first_duplicate(&ids) {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            code::INVALID_REQUEST,
            format!("request id {id} appears twice in the batch"),
        );
    }
    // The `initialize` that opens a session names no revision in its header
    // (2025-03-26 assumed) or not necessarily the one it negotiates: its reply
    // is primed below, by its answer.
    let primed = !json && !opening && session.primes(version);
    let (stream, generation) =
        match session.open_request_stream(&ids, orphans.len(), (json, late_json), primed) {
            Ok(opened) => opened,
            Err(StreamError::DuplicateId(id)) => {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    code::INVALID_REQUEST,
                    format!("request id {id} is already in use in this session"),
                )
            }
            Err(_) => return session_not_found(),
        };
    // Dropped before it takes the stream's events (the client went while its
    // messages were delivered): they wait for a resumption.
    let attaching = Attaching {
        session,
        stream,
        generation,
    };
    if opening {
        session.negotiates(&ids[0]);
    }
    let guard = session.guard();
    if !orphans.is_empty() {
        // Rare (a client's bug), so off this task: the stream's queue may be
        // shorter than the batch, and it is read only below.
        let session = session.clone();
        tokio::spawn(async move {
            for line in orphans {
                if session
                    .route(Outbound::new(line, Route::Orphan(stream)))
                    .await
                    .is_err()
                {
                    break;
                }
            }
        });
    }
    if let Some(event) = event {
        if session.deliver(event, alone).await.is_err() {
            session.cancel_stream(stream);
            return gone(session);
        }
    }
    // What was sent while the messages were delivered (all of it, for a quick
    // handler that answered meanwhile), and the queue of the rest, if any.
    let (mut prefix, rx) = attaching.attach();
    if json {
        let mut items = Vec::from(prefix);
        if let Some(mut rx) = rx {
            while let Some(item) = rx.recv().await {
                items.push(item);
            }
        }
        drop(guard);
        if items.is_empty() {
            // Nothing to answer: the session ended (404), or every request of
            // the POST was cancelled and will get no response (202, as for a
            // POST of notifications).
            return if session.is_ended() {
                session_not_found()
            } else {
                status_only(StatusCode::ACCEPTED)
            };
        }
        // A batch is answered with an array (JSON-RPC 2.0 §6), even of one.
        let body = if !batch && items.len() == 1 {
            items.pop().expect("one item")
        } else {
            merge_json_arrays(&items)
        };
        return json_reply(body);
    }
    let waiting = prefix.is_empty();
    if !opening {
        let mut rx = match rx {
            Some(rx) if waiting => {
                first_events(
                    &mut prefix,
                    rx,
                    &shared.clock,
                    shared.config.sse_first_event_wait,
                )
                .await
            }
            rx => rx,
        };
        if late_json {
            if let Some(r) = rx.take() {
                // Nothing yet: the rest of the window, on a timer of its own
                // (only calls slower than the first wait arm one).
                rx = match prefix.is_empty() {
                    true => {
                        let rest = shared
                            .config
                            .json_reply_within
                            .saturating_sub(shared.config.sse_first_event_wait);
                        first_event_within(&mut prefix, r, rest).await
                    }
                    false => Some(r),
                };
            }
            if !lone_response(&prefix, &rx) {
                // SSE after all; a response that came meanwhile, first and
                // last, is still answered as JSON (nothing was sent yet).
                session.stream_it(stream);
                if let Some(r) = rx.take() {
                    rx = take_ready(&mut prefix, r);
                }
            }
            if lone_response(&prefix, &rx) {
                drop(guard);
                return json_reply(prefix.pop_front().expect("one event"));
            }
        }
        if primed {
            prefix.push_front(priming(stream, 0, shared.config.sse_retry));
        }
        return sse_response(Body::stream(prefix, rx, guard));
    }
    if primed {
        prefix.push_front(priming(stream, 0, shared.config.sse_retry));
    }
    // The reply to the `initialize` that opens the session: nothing goes out
    // before its first message (normally the answer, which records the
    // negotiated revision before it is queued), so that the priming event, when
    // the revision is 2025-11-25 or later, can still come first. Only the first
    // message is waited for: one sent before the answer (a related ping, say)
    // is never held back, and the reply is then primed only if the answer is
    // already queued behind it (nothing has been written yet either way).
    let rx = match rx {
        Some(mut rx) if waiting => match rx.recv().await {
            Some(event) => {
                prefix.push_back(event);
                take_ready(&mut prefix, rx)
            }
            None => None,
        },
        rx => rx,
    };
    if session
        .negotiated()
        .is_some_and(|v| v >= ProtocolVersion::V2025_11_25)
    {
        session.primed_late(stream);
        prefix.push_front(priming(stream, 0, shared.config.sse_retry));
    }
    sse_response(Body::stream(prefix, rx, guard))
}

/// A POST's stream until the POST takes its events ([`Session::attach`]);
/// dropped before that, it leaves them for a resumption ([`Session::detach`]).
struct Attaching<'a> {
    session: &'a Session,
    stream: u64,
    generation: u64,
}

impl Attaching<'_> {
    fn attach(
        self,
    ) -> (
        std::collections::VecDeque<Bytes>,
        Option<mpsc::Receiver<Bytes>>,
    ) {
        let taken = self.session.attach(self.stream, self.generation);
        std::mem::forget(self);
        taken
    }
}

impl Drop for Attaching<'_> {
    fn drop(&mut self) {
        self.session.detach(self.stream, self.generation);
    }
}

/// Waits up to `wait` for the first event of a POST's stream and appends it,
/// and every event already queued behind it, to `prefix`. The receiver comes
/// back unless the stream already ended (every response sent), in which case
/// the body is complete and goes out in one write.
///
/// The wait is measured by the server's [`Clock`] rather than a timer of its
/// own (it lasts `wait` to 1.5 `wait`): arming and cancelling a timer on every
/// POST made the runtime write its wake-up `eventfd` on nearly every call.
async fn first_events(
    prefix: &mut std::collections::VecDeque<Bytes>,
    mut rx: mpsc::Receiver<Bytes>,
    clock: &Arc<Clock>,
    wait: Duration,
) -> Option<mpsc::Receiver<Bytes>> {
    if wait.is_zero() {
        return Some(rx);
    }
    let first = match rx.try_recv() {
        Ok(event) => Some(Some(event)),
        Err(mpsc::error::TryRecvError::Disconnected) => Some(None),
        Err(mpsc::error::TryRecvError::Empty) => {
            tokio::select! {
                biased;
                event = rx.recv() => Some(event),
                () = clock.wait(wait) => None,
            }
        }
    };
    match first {
        None => Some(rx),
        Some(None) => None,
        Some(Some(event)) => {
            prefix.push_back(event);
            take_ready(prefix, rx)
        }
    }
}

/// [`first_events`] on a timer: waits up to `wait` for the first event.
async fn first_event_within(
    prefix: &mut std::collections::VecDeque<Bytes>,
    mut rx: mpsc::Receiver<Bytes>,
    wait: Duration,
) -> Option<mpsc::Receiver<Bytes>> {
    match tokio::time::timeout(wait, rx.recv()).await {
        Err(_) => Some(rx),
        Ok(None) => None,
        Ok(Some(event)) => {
            prefix.push_back(event);
            take_ready(prefix, rx)
        }
    }
}

/// Whether a POST's stream holds just its response, as the message itself
/// (the session queues it so when it came first and completed the stream,
/// [`Session::open_request_stream`]'s `late_json`), and ended.
fn lone_response(
    prefix: &std::collections::VecDeque<Bytes>,
    rx: &Option<mpsc::Receiver<Bytes>>,
) -> bool {
    rx.is_none() && prefix.len() == 1 && prefix[0].first() == Some(&b'{')
}

/// A `200 application/json` reply of `body`.
fn json_reply(body: Bytes) -> Response<Body> {
    let mut response = Response::new(Body::full(body));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// Appends every event already queued on `rx` to `prefix`; the receiver comes
/// back unless the stream ended.
fn take_ready(
    prefix: &mut std::collections::VecDeque<Bytes>,
    mut rx: mpsc::Receiver<Bytes>,
) -> Option<mpsc::Receiver<Bytes>> {
    loop {
        match rx.try_recv() {
            Ok(event) => prefix.push_back(event),
            Err(mpsc::error::TryRecvError::Empty) => return Some(rx),
            Err(mpsc::error::TryRecvError::Disconnected) => return None,
        }
    }
}

/// The session is gone, or the library dropped its receiver: end it, 404.
fn gone(session: &Arc<Session>) -> Response<Body> {
    session.end(CloseReason::SessionClosed);
    session_not_found()
}

/// Joins JSON objects and arrays into one array (a batch reply).
fn merge_json_arrays(items: &[Bytes]) -> Bytes {
    let mut out = Vec::with_capacity(items.iter().map(Bytes::len).sum::<usize>() + 2);
    out.push(b'[');
    let mut first = true;
    for item in items {
        let inner: &[u8] = if item.starts_with(b"[") && item.ends_with(b"]") {
            &item[1..item.len() - 1]
        } else {
            item
        };
        if inner.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        out.extend_from_slice(inner);
    }
    out.push(b']');
    Bytes::from(out)
}

/// The priming event of `stream` (2025-11-25 "Transports → Streamable HTTP"):
/// event id `stream-seq` (seq 0 opens a POST's stream; a resumed or reopened
/// stream gets a fresh seq) and empty data, with `retry` when configured
/// ([`HttpServerConfig::sse_retry`]).
fn priming(stream: u64, seq: u64, retry: Option<Duration>) -> Bytes {
    let millis = retry.map(|wait| u64::try_from(wait.as_millis()).unwrap_or(u64::MAX));
    Bytes::from(guard::priming_event(stream, seq, millis))
}

fn get(
    shared: &Arc<Shared>,
    headers: &HeaderMap,
    at: (usize, Option<&Principal>),
) -> Response<Body> {
    let session = match find_session(shared, headers, at) {
        Ok(Some(s)) => s,
        Ok(None) => return session_required(),
        Err(response) => return *response,
    };
    let version = match session_version(shared, headers, Some(&session)) {
        Ok(v) => v,
        Err(response) => return *response,
    };
    if !guard::sse_acceptable(headers) {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            code::INVALID_REQUEST,
            "Accept must allow text/event-stream",
        );
    }
    let last = guard::header_text(headers, &guard::LAST_EVENT_ID);
    if last.is_none() && headers.contains_key(&guard::LAST_EVENT_ID) {
        // Present but not text: not an id of ours (and not a request for the
        // standalone stream either).
        return rpc_error(
            StatusCode::BAD_REQUEST,
            code::INVALID_REQUEST,
            "unknown Last-Event-ID",
        );
    }
    let prime = session.primes(version);
    let (stream, opened) = match last {
        Some(text) => {
            let Some((stream, seq)) = guard::parse_event_id(text) else {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    code::INVALID_REQUEST,
                    "unknown Last-Event-ID",
                );
            };
            (stream, session.resume(stream, seq, prime))
        }
        None => (super::session::STANDALONE, session.open_standalone(prime)),
    };
    let opened = match opened {
        Ok(o) => o,
        Err(StreamError::UnknownStream) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                code::INVALID_REQUEST,
                "Last-Event-ID names no stream kept by this session",
            )
        }
        Err(StreamError::NeverSent) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                code::INVALID_REQUEST,
                "Last-Event-ID names an event this session has not sent",
            )
        }
        Err(_) => return session_not_found(),
    };
    let mut prefix = opened.prefix;
    match (opened.priming, shared.config.sse_retry) {
        // Nothing to replay: a priming event with a fresh id (2025-11-25), so a
        // client whose stream is closed again before anything new is sent still
        // has an id to come back with.
        (Some(seq), retry) => prefix.push_front(priming(stream, seq, retry)),
        // Replayed events carry their ids; `retry` still goes first, alone (an
        // SSE block with no data dispatches no event).
        (None, Some(retry)) if prime && opened.rx.is_some() => {
            prefix.push_front(Bytes::from(format!("retry: {}\n\n", retry.as_millis())))
        }
        _ => {}
    }
    let body = Body::stream(prefix, opened.rx, session.guard());
    sse_response(body.with_keep_alive(shared.config.sse_keep_alive))
}

fn delete(
    shared: &Arc<Shared>,
    headers: &HeaderMap,
    at: (usize, Option<&Principal>),
) -> Response<Body> {
    match find_session(shared, headers, at) {
        Ok(Some(session)) => {
            if let Err(response) = session_version(shared, headers, Some(&session)) {
                return *response;
            }
            session.end(CloseReason::SessionDeleted);
            status_only(StatusCode::OK)
        }
        Ok(None) => session_required(),
        Err(response) => *response,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_visible_ascii_and_distinct() {
        let a = mint_session_id().unwrap();
        let b = mint_session_id().unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| (0x21..=0x7e).contains(&c)));
        assert_ne!(a, b);
    }

    #[test]
    fn json_batches_merge() {
        let items = [
            Bytes::from_static(b"{\"a\":1}"),
            Bytes::from_static(b"[{\"b\":2},{\"c\":3}]"),
        ];
        assert_eq!(
            &merge_json_arrays(&items)[..],
            b"[{\"a\":1},{\"b\":2},{\"c\":3}]"
        );
    }
}
