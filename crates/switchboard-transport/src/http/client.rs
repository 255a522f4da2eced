//! The Streamable HTTP **client** transport: one MCP endpoint URL behind the same
//! [`Transport`] halves as every other transport.
//!
//! Sources: MCP 2025-03-26 to 2025-11-25, "Transports → Streamable HTTP" (POST, GET
//! stream, sessions, resumption; spec notes §5.3) and MCP 2026-07-28, "Transports →
//! Streamable HTTP" (POST only, no session, `Mcp-Method` / `Mcp-Name` /
//! `Mcp-Param-*` headers, closing the stream cancels; spec notes §5.4).
//!
//! ```text
//! Sender ──> driver task ──> one POST per outbound message
//!              request       -> its own task: JSON reply or SSE reply -> Receiver
//!                               (SSE cut after an event id: GET + Last-Event-ID, bounded)
//!              notification  -> POST, waits for 202 (keeps notifications in order)
//!              response      -> POST, waits for 202
//!              HTTP error    -> the body's JSON-RPC error, as the answer to the
//!                               POSTed request whatever id it names, else
//!                               Inbound::Failed (code TRANSPORT_ERROR)
//!              404 + session -> re-initialize once (replay initialize + initialized,
//!                               then the session's state: the last logging/setLevel
//!                               and each resources/subscribe still in force),
//!                               then re-send the failed message
//! optional GET stream (standalone_stream) -> Receiver
//!   ended, broken, or silent past sse_keep_alive (half-open) -> GET again,
//!   with Last-Event-ID
//! last Sender dropped -> DELETE the session (bounded), Inbound::Closed
//! ```
//!
//! **Versions.** The transport does not negotiate: the library tells it the
//! revision in force with [`HttpClientHandle::set_protocol_version`]. Before that it
//! sends no `MCP-Protocol-Version`; with a legacy revision it sends the header
//! (2025-06-18+) and the session id; with 2026-07-28 it runs the modern rules: no
//! session, no resumption, request headers computed from each body, and an outbound
//! `notifications/cancelled` is not posted but closes the named request's stream.
//! The one exception: a session that replaces a lost one (404) sends the version
//! its `initialize` result names from then on, and that result is kept for the
//! library ([`HttpClientHandle::replaced_session_result`]).
//!
//! **Cancellation.** An outbound `notifications/cancelled{requestId}` is POSTed
//! (legacy revisions) and then the named request's stream is no longer read; in
//! 2026-07-28 it is not POSTed at all and closing the stream is the cancellation.
//!
//! **Never hangs.** Every request this transport accepts ends in an event on the
//! [`Receiver`]: the server's response, or [`Inbound::Failed`] naming what went
//! wrong (connection refused, HTTP status and body excerpt, stream cut without an event
//! id, resumption failed, session lost). The only exception is a request cancelled
//! through [`HttpClientHandle::cancel`] or `notifications/cancelled`: the library
//! already gave up on it. The transport never closes on its own: while the server
//! is gone, each request fails at once (connection refused); only dropping every
//! [`Sender`] ends it.
//!
//! This module must not know about tools' meaning, the lifecycle's rules, pending
//! tables or timeouts of requests (the library's), nor parse SSE itself (it uses
//! [`SseParser`]).

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error_chain;
use bytes::Bytes;
use http::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use http::StatusCode;
use serde_json::value::RawValue;
use serde_json::Value;
use switchboard_protocol::codec::{SseError, SseItem, SseParser};
use switchboard_protocol::jsonrpc::{decode_frame, Batching, ErrorObject, Frame, Id, Message};
use switchboard_protocol::lifecycle::continuity::SessionSetup;
use switchboard_protocol::version::Era;
use switchboard_protocol::ProtocolVersion;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tracing::Instrument;

use crate::config::TransportConfig;
use crate::handle::{BatchingSwitch, CloseReason, Inbound, Outbound, Receiver, Sender, Transport};

/// The JSON-RPC error code of the failures this transport reports when the server
/// gave no JSON-RPC answer for a request ([`Inbound::Failed`]): -32000. The
/// error's `data` is `{"httpStatus": u16, "body": excerpt}` when an HTTP status was
/// received, absent otherwise.
pub use crate::handle::TRANSPORT_ERROR;

/// The most bytes of an error body kept for the error message: 512.
const BODY_EXCERPT: usize = 512;

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";
const LAST_EVENT_ID: &str = "last-event-id";

/// The request headers the HTTP client transports (this one and
/// [`sse_client`](super::sse_client)) set or leave to the HTTP stack, which a
/// configured extra header may not name (compared case-insensitively; see
/// [`managed_header`]):
///
/// - MCP's own (2025-03-26 to 2026-07-28, "Transports → Streamable HTTP"):
///   `Mcp-Session-Id` (the session the server assigned, or none before it),
///   `MCP-Protocol-Version` (the revision in force), `Mcp-Method`, `Mcp-Name`
///   (and the `Mcp-Param-*` prefix: 2026-07-28 request headers from each body),
///   `Last-Event-ID` (resumption);
/// - what the body and the exchange need: `Content-Type`, `Content-Length`,
///   `Content-Encoding`, `Transfer-Encoding`, `Accept`, `Accept-Encoding`,
///   `Cache-Control` (the SSE GET's `no-cache`);
/// - the connection's (HTTP/1.1 hop-by-hop, RFC 9110 §7.6.1, and the target's
///   authority): `Host`, `Connection`, `Keep-Alive`, `Proxy-Connection`, `TE`,
///   `Trailer`, `Upgrade`.
///
/// Everything else (`Authorization`, `Cookie`, `User-Agent`, custom `X-*`) may be
/// configured.
pub const MANAGED_HEADERS: &[&str] = &[
    "mcp-session-id",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "last-event-id",
    "content-type",
    "content-length",
    "content-encoding",
    "transfer-encoding",
    "accept",
    "accept-encoding",
    "cache-control",
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
];

/// The prefix of the 2026-07-28 `Mcp-Param-*` request headers, which the
/// transport sets from a `tools/call`'s arguments (MCP 2026-07-28, "Transports →
/// Streamable HTTP → Custom headers"): managed too.
const PARAM_HEADER_PREFIX: &str = "mcp-param-";

/// The rule every MCP endpoint URL here meets (Streamable HTTP, legacy SSE,
/// `connect`, a gateway upstream): absolute, `http` or `https`, with a host.
/// Errors: what is wrong, as a phrase that follows "the URL" (`"is not an
/// absolute http(s) URL: \"ftp://x\""`).
pub fn check_endpoint_url(url: &str) -> Result<(), String> {
    let parsed: http::Uri = url
        .parse()
        .map_err(|e| format!("{url:?} does not parse: {e}"))?;
    match parsed.scheme_str() {
        Some("http") | Some("https") if parsed.host().is_some() => Ok(()),
        _ => Err(format!("is not an absolute http(s) URL: {url:?}")),
    }
}

/// Whether `name` is a header the HTTP client transports manage themselves
/// ([`MANAGED_HEADERS`] or `Mcp-Param-*`, any case), which an extra header of
/// [`HttpClientConfig::headers`] or
/// [`SseClientConfig::headers`](super::sse_client::SseClientConfig::headers) may
/// not name. Surrounding whitespace is ignored.
pub fn managed_header(name: &str) -> bool {
    let name = name.trim();
    MANAGED_HEADERS.iter().any(|m| m.eq_ignore_ascii_case(name))
        || name
            .get(..PARAM_HEADER_PREFIX.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(PARAM_HEADER_PREFIX))
}

/// The one-line refusal of an extra header named `name` when it is a
/// [`managed_header`], for the transports' configuration checks and a command
/// line that refuses it before starting (the same words everywhere).
pub fn refuse_managed_header(name: &str) -> Result<(), String> {
    if managed_header(name) {
        return Err(managed_message(name));
    }
    Ok(())
}

/// The words of [`refuse_managed_header`] (also [`SseClientError::ManagedHeader`]'s
/// text).
///
/// [`SseClientError::ManagedHeader`]: super::sse_client::SseClientError::ManagedHeader
pub(crate) fn managed_message(name: &str) -> String {
    format!(
        "header {:?} is set by the MCP HTTP transport itself and cannot be given as an extra header",
        name.trim()
    )
}

/// How the client transport connects. Every field documents its default.
#[derive(Debug, Clone)]
pub struct HttpClientConfig {
    /// The MCP endpoint, e.g. `http://127.0.0.1:8080/mcp`.
    pub url: String,
    /// Extra headers sent on every HTTP request (e.g. `Authorization: Bearer …`).
    /// Default none. A name the transport manages itself ([`MANAGED_HEADERS`],
    /// any case, and `Mcp-Param-*`) is refused by [`connect`]: the transport sets
    /// those from the protocol's state, and a configured one would replace
    /// them or go out beside them.
    pub headers: Vec<(String, String)>,
    /// Open the standalone GET stream for server-initiated messages once
    /// `notifications/initialized` has been posted (legacy revisions only; a 405
    /// means the server offers none). It is kept open for as long as the
    /// session lasts: reopened with `Last-Event-ID` when it ends, breaks or
    /// goes silent (see [`sse_keep_alive`](Self::sse_keep_alive)), and tried
    /// again, backing off up to 30 s, while it is refused. Default `false`.
    pub standalone_stream: bool,
    /// The keep-alive interval expected on the standalone GET stream: a server
    /// writes a comment (`: keep-alive`) on it after this much silence (this
    /// crate's server: [`HttpServerConfig::sse_keep_alive`], the same default).
    /// A stream silent for [`silence_limit`] of it (no event, no comment) is
    /// taken for dead, as a half-open connection (the server's host vanished, a
    /// NAT forgot the flow) never ends by itself: the client drops it and
    /// reconnects with `Last-Event-ID`, so what the server sent meanwhile is
    /// replayed. Against a server that sends no keep-alives this costs one
    /// reconnect per silence. `None`: wait forever. Default 15 s
    /// ([`DEFAULT_SSE_KEEP_ALIVE`]), so the limit is 30 s.
    ///
    /// [`HttpServerConfig::sse_keep_alive`]: super::server::HttpServerConfig::sse_keep_alive
    /// [`DEFAULT_SSE_KEEP_ALIVE`]: super::legacy::DEFAULT_SSE_KEEP_ALIVE
    pub sse_keep_alive: Option<Duration>,
    /// How many times in a row a broken SSE stream is resumed (GET with
    /// `Last-Event-ID`) before the requests on it fail. Default 3.
    pub max_resume_attempts: u32,
    /// How long to wait before resuming when the stream set no `retry:`. Default
    /// 500 ms.
    pub default_retry: Duration,
    /// The TCP connect timeout of each HTTP request. Default 10 s.
    pub connect_timeout: Duration,
    /// The bound on the `DELETE` of the session when the transport closes.
    /// Default 2 s.
    pub delete_timeout: Duration,
    /// The largest JSON reply body or SSE event accepted, in bytes. Default 16 MiB.
    pub max_body_bytes: usize,
    /// Queue sizes of the halves. Default [`TransportConfig::default`].
    pub transport: TransportConfig,
    /// MCP authorization (module [`auth`](super::auth)): an OAuth client that
    /// answers a 401 or a 403 `insufficient_scope` (discovery, registration,
    /// authorization, token) after which the request is sent again with
    /// `Authorization: Bearer`, which then goes on every request (replacing a
    /// configured `Authorization` header). Default none: a 401 fails the request.
    pub auth: Option<Arc<super::auth::OAuthClient>>,
}

impl HttpClientConfig {
    /// The configuration for the MCP endpoint `url` (e.g.
    /// `http://127.0.0.1:8080/mcp`), every other field at its default: no extra
    /// `headers`, `standalone_stream: false`, `sse_keep_alive` 15 s,
    /// `max_resume_attempts: 3`,
    /// `default_retry` 500 ms, `connect_timeout` 10 s, `delete_timeout` 2 s,
    /// `max_body_bytes` 16 MiB (`codec::DEFAULT_MAX_FRAME_LEN`), `transport`
    /// [`TransportConfig::default`], no `auth`. Change fields after, or add headers with
    /// [`header`](Self::header).
    ///
    /// There is no `Default`: the endpoint has none (an empty URL would only fail
    /// at connect time), so it is this constructor's one argument. The URL is not
    /// checked here; connecting to one that does not parse fails then.
    pub fn new(url: impl Into<String>) -> Self {
        HttpClientConfig {
            url: url.into(),
            headers: Vec::new(),
            standalone_stream: false,
            sse_keep_alive: Some(super::legacy::DEFAULT_SSE_KEEP_ALIVE),
            max_resume_attempts: 3,
            default_retry: Duration::from_millis(500),
            connect_timeout: Duration::from_secs(10),
            delete_timeout: Duration::from_secs(2),
            max_body_bytes: switchboard_protocol::codec::DEFAULT_MAX_FRAME_LEN,
            transport: TransportConfig::default(),
            auth: None,
        }
    }

    /// Adds a header sent on every HTTP request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// Control of a running client transport, beside its [`Transport`] halves.
/// Cloneable; all clones act on the same transport.
#[derive(Clone)]
pub struct HttpClientHandle {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for HttpClientHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = lock(&self.inner.state);
        f.debug_struct("HttpClientHandle")
            .field("url", &self.inner.url)
            .field("session_id", &st.session_id)
            .field("version", &st.version)
            .finish()
    }
}

/// A tool's `Mcp-Param-*` headers: (argument name, header name suffix) pairs, from
/// the `x-mcp-header` annotations of its `inputSchema` (MCP 2026-07-28,
/// "Transports → Streamable HTTP → Custom headers").
pub type ToolHeaders = Vec<(String, String)>;

struct State {
    session_id: Option<String>,
    /// Bumped each time a new session replaces a lost one.
    generation: u64,
    /// The `initialize` result of the session that last replaced a lost one.
    replacement: Option<Box<RawValue>>,
    version: Option<ProtocolVersion>,
    /// The body of the `initialize` request, replayed to start a new session.
    initialize: Option<Bytes>,
    /// The body of `notifications/initialized`, replayed after it.
    initialized: Option<Bytes>,
    /// What the session's client set up on the server, replayed on a new
    /// session after those two (the protocol crate says what that is).
    setup: SessionSetup,
    tool_headers: HashMap<String, ToolHeaders>,
    last_error_status: Option<u16>,
    standalone: Option<AbortHandle>,
    /// [`HttpClientHandle::open_standalone_stream`] was called: a new session
    /// opens the stream too, as with `standalone_stream`.
    standalone_wanted: bool,
    /// In-flight POSTs of requests, by request id.
    in_flight: HashMap<Id, AbortHandle>,
    /// The inbound queue; `None` once closed.
    inbound: Option<crate::handle::InboundTx>,
}

struct Inner {
    url: String,
    headers: HeaderMap,
    http: reqwest::Client,
    config: HttpClientConfig,
    state: Mutex<State>,
    /// Held while a new session is being started (one at a time).
    recovery: tokio::sync::Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts a client transport for `config.url`: spawns its driver task on the
/// current Tokio runtime. No HTTP request is made until the first message is sent.
///
/// Errors (`io::ErrorKind::InvalidInput`): the URL is not an absolute `http` or
/// `https` URL, or a configured header is not a valid HTTP header or names one
/// the transport manages ([`managed_header`]); any other error of building the
/// HTTP client.
///
/// Panics outside a Tokio runtime.
pub fn connect(config: HttpClientConfig) -> io::Result<(Transport, HttpClientHandle)> {
    let invalid = |m: String| io::Error::new(io::ErrorKind::InvalidInput, m);
    check_endpoint_url(&config.url).map_err(|e| invalid(format!("the MCP URL {e}")))?;
    let mut headers = HeaderMap::new();
    for (name, value) in &config.headers {
        refuse_managed_header(name).map_err(invalid)?;
        let n = HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| invalid(format!("bad header name {name:?}: {e}")))?;
        let v = HeaderValue::from_str(value)
            .map_err(|e| invalid(format!("bad value for header {name:?}: {e}")))?;
        headers.append(n, v);
    }
    // TCP_NODELAY, bounded connect, same-origin redirects only (shared with the
    // legacy HTTP+SSE client).
    let http = super::sse_client::http_client(config.connect_timeout).map_err(io::Error::other)?;
    let capacity = config.transport.channel_capacity.max(1);
    let (out_tx, out_rx) = mpsc::channel(capacity);
    let (in_tx, in_rx) = crate::handle::inbound_channel(capacity);
    let batching = BatchingSwitch::new(config.transport.batching);
    let inner = Arc::new(Inner {
        url: config.url.clone(),
        headers,
        http,
        config,
        state: Mutex::new(State {
            session_id: None,
            generation: 0,
            replacement: None,
            version: None,
            initialize: None,
            initialized: None,
            setup: SessionSetup::default(),
            tool_headers: HashMap::new(),
            last_error_status: None,
            standalone: None,
            standalone_wanted: false,
            in_flight: HashMap::new(),
            inbound: Some(in_tx),
        }),
        recovery: tokio::sync::Mutex::new(()),
    });
    let span = tracing::info_span!("http_client", url = %inner.url);
    tokio::spawn(run(inner.clone(), out_rx, batching.clone()).instrument(span));
    let transport = Transport {
        sender: Sender {
            out: crate::handle::Outlet::Queue(out_tx),
            batching: batching.clone(),
            no_requests: false,
            replies: None,
        },
        receiver: Receiver::new(in_rx, batching),
    };
    Ok((transport, HttpClientHandle { inner }))
}

impl HttpClientHandle {
    /// The MCP endpoint URL.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// Sets the revision in force (`None`: none yet). The library calls it after
    /// negotiation (legacy: from the `initialize` result, before sending
    /// `notifications/initialized`) or before its first 2026-07-28 request. A
    /// legacy revision from 2025-06-18 on is sent as `MCP-Protocol-Version` on
    /// every later HTTP request (spec notes §5.3); 2026-07-28 switches the
    /// transport to the modern rules (module docs; §5.4).
    pub fn set_protocol_version(&self, version: Option<ProtocolVersion>) {
        lock(&self.inner.state).version = version;
    }

    /// The revision in force, as last set.
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        lock(&self.inner.state).version
    }

    /// Replaces the per-tool `Mcp-Param-*` map (tool name → its
    /// [`ToolHeaders`]), used for `tools/call` in 2026-07-28. The library builds it
    /// from `tools/list` (after dropping tools with invalid annotations).
    pub fn set_tool_headers(&self, map: HashMap<String, ToolHeaders>) {
        lock(&self.inner.state).tool_headers = map;
    }

    /// The session id the server assigned (`Mcp-Session-Id` of the `initialize`
    /// reply), if any.
    pub fn session_id(&self) -> Option<String> {
        lock(&self.inner.state).session_id.clone()
    }

    /// How many times a new session has replaced a lost one so far (a 404 on a
    /// request of a session, then a replayed `initialize`: module docs; MCP
    /// 2025-03-26+ "Session Management"). 0 while the first session lasts, and
    /// always in 2026-07-28 (no sessions). A caller that keeps what a session's
    /// server told it (the tools of its `tools/list`) compares this count to
    /// know the server may have changed under it.
    pub fn sessions_replaced(&self) -> u64 {
        lock(&self.inner.state).generation
    }

    /// The `initialize` result of the session that last replaced a lost one
    /// (404, then the replayed `initialize`: module docs), with
    /// [`sessions_replaced`](Self::sessions_replaced) as it was then; `None`
    /// while the first session lasts. The server behind the URL may have
    /// changed (a new deployment): its version, capabilities, `serverInfo` and
    /// `instructions` are this result's, not the first `initialize`'s. The
    /// transport already sends the version it names (when it is a legacy
    /// revision this crate knows) as `MCP-Protocol-Version`; whether the
    /// client can speak it is the caller's to check.
    pub fn replaced_session_result(&self) -> Option<(u64, Box<RawValue>)> {
        let st = lock(&self.inner.state);
        st.replacement.clone().map(|r| (st.generation, r))
    }

    /// The HTTP status of the latest POST answered with a non-2xx status, if any
    /// (the era fallback of MCP 2026-07-28 §6 looks at it).
    pub fn last_error_status(&self) -> Option<u16> {
        lock(&self.inner.state).last_error_status
    }

    /// Opens the standalone GET stream now, as
    /// [`HttpClientConfig::standalone_stream`] would have after
    /// `notifications/initialized`, and for every session that replaces this one
    /// (404). For a client that turns out to need the server's unrelated messages
    /// (`notifications/resources/updated` after `resources/subscribe`, list
    /// changes), which a legacy server sends only there. Returns whether a stream
    /// was started: `false` when one already runs (or the server refused one with
    /// 405), before `notifications/initialized` was sent (it then opens after it),
    /// in 2026-07-28 (no sessions) and once the transport is closed.
    pub fn open_standalone_stream(&self) -> bool {
        let start = {
            let mut st = lock(&self.inner.state);
            st.standalone_wanted = true;
            st.standalone.is_none() && st.initialized.is_some() && st.inbound.is_some()
        };
        let start = start && !self.inner.modern();
        if start {
            start_standalone(&self.inner);
        }
        start
    }

    /// Cancels the request with `id` by dropping its HTTP exchange (2026-07-28:
    /// closing the stream is the cancellation). Nothing more is delivered for it.
    /// Returns whether a request with that id was in flight.
    pub fn cancel(&self, id: &Id) -> bool {
        self.inner.cancel(id)
    }
}

impl Inner {
    fn cancel(&self, id: &Id) -> bool {
        match lock(&self.state).in_flight.remove(id) {
            Some(task) => {
                task.abort();
                tracing::debug!(%id, "request cancelled: its stream is closed");
                true
            }
            None => false,
        }
    }

    fn modern(&self) -> bool {
        matches!(lock(&self.state).version, Some(v) if v.era() == Era::Modern)
    }

    async fn deliver(&self, event: Inbound) {
        let tx = lock(&self.state).inbound.clone();
        if let Some(tx) = tx {
            let _ = tx.send(event).await;
        }
    }

    /// Delivers a decoded frame (a JSON body or one SSE event's data).
    async fn deliver_frame(&self, bytes: &[u8], batching: Batching) -> Option<Vec<Id>> {
        match decode_frame(bytes, batching) {
            Ok(Frame::Single(m)) => {
                let ids = response_id(&m).into_iter().collect();
                self.deliver(Inbound::Message(m)).await;
                Some(ids)
            }
            Ok(Frame::Batch(items)) => {
                let ids = items
                    .iter()
                    .filter_map(|m| m.as_ref().ok().and_then(response_id))
                    .collect();
                self.deliver(Inbound::Batch(items)).await;
                Some(ids)
            }
            Err(e) => {
                tracing::warn!(error = %e, "the server sent a malformed message; ignored");
                None
            }
        }
    }

    /// The headers of one HTTP request: configured ones, `Accept`, the session
    /// and version headers as the mode says, and for a POST body in 2026-07-28
    /// the `Mcp-*` headers.
    fn request_headers(&self, accept: &'static str, body: Option<&Message>) -> HeaderMap {
        let st = lock(&self.state);
        let mut h = self.headers.clone();
        h.insert(ACCEPT, HeaderValue::from_static(accept));
        if body.is_some() {
            h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        if let Some(bearer) = self.config.auth.as_ref().and_then(|a| a.authorization()) {
            h.insert(AUTHORIZATION, bearer);
        }
        let modern = matches!(st.version, Some(v) if v.era() == Era::Modern);
        if let Some(v) = st.version {
            if v.has_version_header() || modern {
                h.insert(VERSION_HEADER, HeaderValue::from_static(v.as_str()));
            }
        }
        if !modern {
            if let Some(s) = st
                .session_id
                .as_deref()
                .and_then(|s| HeaderValue::from_str(s).ok())
            {
                h.insert(SESSION_HEADER, s);
            }
        } else if let Some(Message::Request(r)) = body {
            modern_headers(&mut h, r, &st.tool_headers);
        }
        if let Some(Message::Request(r)) = body {
            trace_headers(&mut h, r);
        }
        h
    }

    /// POSTs `body`, returning the response or the transport error text.
    async fn post(
        &self,
        body: Bytes,
        message: Option<&Message>,
    ) -> Result<reqwest::Response, String> {
        let mut headers = self.request_headers("application/json, text/event-stream", message);
        // Every POST carries a JSON-RPC message, replayed ones included.
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        self.http
            .post(&self.url)
            .headers(headers)
            .body(body)
            .send()
            .await
            .map_err(|e| format!("HTTP POST to {} failed: {}", self.url, error_chain(&e)))
    }

    async fn get_stream(&self, last_event_id: Option<&str>) -> Result<reqwest::Response, String> {
        let mut headers = self.request_headers("text/event-stream", None);
        if let Some(id) = last_event_id.and_then(|s| HeaderValue::from_str(s).ok()) {
            headers.insert(LAST_EVENT_ID, id);
        }
        self.http
            .get(&self.url)
            .headers(headers)
            .send()
            .await
            .map_err(|e| format!("HTTP GET of {} failed: {}", self.url, error_chain(&e)))
    }

    /// Reports each of `ids` as failed in the transport ([`Inbound::Failed`]).
    async fn fail(&self, ids: &[Id], message: &str, status: Option<(u16, &str)>) {
        for id in ids {
            let mut error = ErrorObject::new(TRANSPORT_ERROR, message.to_owned());
            if let Some((code, body)) = status {
                error = error.with_data(&serde_json::json!({"httpStatus": code, "body": body}));
            }
            tracing::debug!(%id, %message, "request failed in the transport");
            self.deliver(Inbound::Failed {
                id: id.clone(),
                error,
            })
            .await;
        }
    }
}

fn response_id(m: &Message) -> Option<Id> {
    match m {
        Message::Response(r) => Some(r.id.clone()),
        Message::Error(e) => e.id.clone(),
        _ => None,
    }
}

/// The ids of the requests in a decoded outbound frame.
fn request_ids(frame: &Frame) -> Vec<Id> {
    match frame {
        Frame::Single(Message::Request(r)) => vec![r.id.clone()],
        Frame::Single(_) => Vec::new(),
        Frame::Batch(items) => items
            .iter()
            .filter_map(|m| match m {
                Ok(Message::Request(r)) => Some(r.id.clone()),
                _ => None,
            })
            .collect(),
    }
}

// ---------------------------------------------------------------------------
// 2026-07-28 request headers
// ---------------------------------------------------------------------------

/// The sentinel form of a header value that cannot travel as is:
/// `=?base64?<base64 of the UTF-8 bytes>?=` (MCP 2026-07-28, "Header value
/// encoding").
pub fn encode_header_value(value: &str) -> String {
    let plain = !value.is_empty()
        && value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && !value.starts_with(' ')
        && !value.ends_with(' ')
        && !value.starts_with("=?base64?");
    if plain || value.is_empty() {
        value.to_owned()
    } else {
        format!("=?base64?{}?=", base64(value.as_bytes()))
    }
}

fn base64(bytes: &[u8]) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.len();
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let v = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= n {
                out.push(TABLE[((v >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The header form of a `Mcp-Param-*` argument: strings (encoded as needed),
/// integers in decimal, booleans; `None` for `null`, absent or other types (the
/// spec allows the annotation only on string, integer and boolean properties).
fn param_header_value(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(encode_header_value(s)),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

/// W3C Trace Context over HTTP: a request whose `params._meta` carries a
/// `traceparent` (and a `tracestate`; the keys MCP reserves there) carries
/// them as headers too, for the proxies and servers that read only those.
/// A value that is not a valid header is left out.
fn trace_headers(h: &mut HeaderMap, r: &switchboard_protocol::jsonrpc::Request) {
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(rename = "_meta", borrow, default)]
        meta: Option<Meta<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Meta<'a> {
        #[serde(borrow, default)]
        traceparent: Option<std::borrow::Cow<'a, str>>,
        #[serde(borrow, default)]
        tracestate: Option<std::borrow::Cow<'a, str>>,
    }
    let Some(params) = r.params.as_deref() else {
        return;
    };
    // Cheap first: most requests carry none.
    if !params.get().contains("\"traceparent\"") {
        return;
    }
    let Ok(Params { meta: Some(meta) }) = serde_json::from_str::<Params<'_>>(params.get()) else {
        return;
    };
    let Some(parent) = meta
        .traceparent
        .and_then(|p| HeaderValue::from_str(&p).ok())
    else {
        return;
    };
    h.insert(http::HeaderName::from_static("traceparent"), parent);
    if let Some(state) = meta.tracestate.and_then(|s| HeaderValue::from_str(&s).ok()) {
        h.insert(http::HeaderName::from_static("tracestate"), state);
    }
}

/// Adds `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` for request `r`.
fn modern_headers(
    h: &mut HeaderMap,
    r: &switchboard_protocol::jsonrpc::Request,
    tools: &HashMap<String, ToolHeaders>,
) {
    if let Ok(v) = HeaderValue::from_str(&encode_header_value(&r.method)) {
        h.insert(METHOD_HEADER, v);
    }
    let name_key = match r.method.as_str() {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return,
    };
    let params: Value = match &r.params {
        Some(p) => serde_json::from_str(p.get()).unwrap_or(Value::Null),
        None => Value::Null,
    };
    if let Some(name) = params.get(name_key).and_then(Value::as_str) {
        if let Ok(v) = HeaderValue::from_str(&encode_header_value(name)) {
            h.insert(NAME_HEADER, v);
        }
        if r.method == "tools/call" {
            for (arg, header) in tools.get(name).map(Vec::as_slice).unwrap_or(&[]) {
                let value = params
                    .get("arguments")
                    .and_then(|a| a.get(arg))
                    .and_then(param_header_value);
                let (Some(value), Ok(n)) = (
                    value,
                    HeaderName::from_bytes(format!("mcp-param-{header}").as_bytes()),
                ) else {
                    continue;
                };
                if let Ok(v) = HeaderValue::from_str(&value) {
                    h.insert(n, v);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// The driver
// ---------------------------------------------------------------------------

async fn run(inner: Arc<Inner>, mut out: mpsc::Receiver<Outbound>, batching: BatchingSwitch) {
    while let Some(mut ob) = out.recv().await {
        if ob.pass_barrier() {
            continue;
        }
        let mut line = ob.line;
        while matches!(line.last(), Some(b'\n' | b'\r')) {
            line.pop();
        }
        let body = Bytes::from(line);
        let frame = match decode_frame(&body, Batching::Allowed) {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(error = %e, "an outbound message did not decode; dropped");
                continue;
            }
        };
        let ids = request_ids(&frame);
        let message = match &frame {
            Frame::Single(m) => Some(m.clone()),
            Frame::Batch(_) => None,
        };
        let mut cancelled: Option<Id> = None;
        if let Some(Message::Notification(n)) = &message {
            if n.method == "notifications/cancelled" {
                cancelled = n
                    .params
                    .as_ref()
                    .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
                    .and_then(|p| p.get("requestId").cloned())
                    .and_then(|v| serde_json::from_value::<Id>(v).ok());
                if inner.modern() {
                    // 2026-07-28 over HTTP: closing the stream is the cancellation;
                    // the notification itself is not sent.
                    if let Some(id) = &cancelled {
                        inner.cancel(id);
                    }
                    continue;
                }
            }
        }
        if ids.is_empty() {
            // Notifications and responses: posted in order, each answered 202.
            let is_initialized = matches!(&message,
                Some(Message::Notification(n)) if n.method == "notifications/initialized");
            if is_initialized {
                lock(&inner.state).initialized = Some(body.clone());
            }
            let ok = post_one(&inner, body, message, Vec::new(), &batching).await;
            let wanted = inner.config.standalone_stream || lock(&inner.state).standalone_wanted;
            if ok && is_initialized && wanted && !inner.modern() {
                start_standalone(&inner);
            }
            if let Some(id) = cancelled {
                // Legacy: the server was told; stop reading the request's stream
                // (it SHOULD send nothing more for it).
                inner.cancel(&id);
            }
            continue;
        }
        let is_initialize = matches!(&message,
            Some(Message::Request(r)) if r.method == "initialize");
        if is_initialize {
            lock(&inner.state).initialize = Some(body.clone());
        } else if let Some(Message::Request(r)) = &message {
            if !inner.modern() {
                lock(&inner.state).setup.note(r);
            }
        }
        let task_inner = inner.clone();
        let task_ids = ids.clone();
        let b = batching.clone();
        // The task starts once its abort handle is registered, so a cancellation
        // can always find it and a finished task never leaves an entry behind.
        let (go, gate) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(
            async move {
                if gate.await.is_err() {
                    return;
                }
                post_one(&task_inner, body, message, task_ids.clone(), &b).await;
                let mut st = lock(&task_inner.state);
                for id in &task_ids {
                    st.in_flight.remove(id);
                }
            }
            .in_current_span(),
        );
        {
            let mut st = lock(&inner.state);
            for id in ids {
                st.in_flight.insert(id, task.abort_handle());
            }
        }
        let _ = go.send(());
    }
    // Every Sender is gone: end the session.
    let (session, standalone, in_flight) = {
        let mut st = lock(&inner.state);
        let modern = matches!(st.version, Some(v) if v.era() == Era::Modern);
        let session = if modern { None } else { st.session_id.take() };
        (
            session,
            st.standalone.take(),
            std::mem::take(&mut st.in_flight),
        )
    };
    if let Some(s) = standalone {
        s.abort();
    }
    for (_, task) in in_flight {
        task.abort();
    }
    let reason = match session {
        Some(s) => {
            let mut headers = inner.request_headers("application/json, text/event-stream", None);
            if let Ok(v) = HeaderValue::from_str(&s) {
                headers.insert(SESSION_HEADER, v);
            }
            let delete = inner.http.delete(&inner.url).headers(headers).send();
            match tokio::time::timeout(inner.config.delete_timeout, delete).await {
                Ok(Ok(r)) => tracing::debug!(status = %r.status(), "session deleted"),
                Ok(Err(e)) => tracing::debug!(error = %e, "DELETE of the session failed"),
                Err(_) => tracing::debug!("DELETE of the session timed out"),
            }
            CloseReason::SessionDeleted
        }
        None => CloseReason::PeerClosed,
    };
    inner.deliver(Inbound::Closed { reason }).await;
    lock(&inner.state).inbound = None;
}

/// POSTs one outbound frame and handles its reply; `ids` are the requests in it.
/// Returns whether the server accepted it (2xx).
async fn post_one(
    inner: &Arc<Inner>,
    body: Bytes,
    message: Option<Message>,
    ids: Vec<Id>,
    batching: &BatchingSwitch,
) -> bool {
    let is_initialize = matches!(&message, Some(Message::Request(r)) if r.method == "initialize");
    let mut resent = false;
    let mut authorizations = 0u32;
    loop {
        // Wait while a new session is being started (404 recovery), so nothing is
        // sent without the session it needs.
        drop(inner.recovery.lock().await);
        let generation = lock(&inner.state).generation;
        let had_session = lock(&inner.state).session_id.is_some();
        let tokens = inner.config.auth.as_ref().map(|a| a.generation());
        let resp = match inner.post(body.clone(), message.as_ref()).await {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!(error = %e, "POST failed");
                inner.fail(&ids, &e, None).await;
                return false;
            }
        };
        let status = resp.status();
        if status == StatusCode::NOT_FOUND
            && had_session
            && !resent
            && !is_initialize
            && !inner.modern()
        {
            tracing::info!("the session ended (404); starting a new one");
            match renew_session(inner, generation).await {
                Ok(()) => {
                    resent = true;
                    continue;
                }
                Err(e) => {
                    let msg = format!(
                        "the HTTP session ended (404) and a new one could not be started: {e}"
                    );
                    inner.fail(&ids, &msg, Some((404, ""))).await;
                    return false;
                }
            }
        }
        if let (Some(auth), Some(sent)) = (&inner.config.auth, tokens) {
            // MCP authorization: answer the challenge, then send again (bounded).
            if super::auth::is_challenge(status, resp.headers())
                && authorizations < auth.config().max_authorizations
            {
                authorizations += 1;
                match auth.answer(&inner.url, status, resp.headers(), sent).await {
                    Ok(()) => continue,
                    Err(e) => {
                        lock(&inner.state).last_error_status = Some(status.as_u16());
                        let msg = format!("HTTP {status} from {}; {e}", inner.url);
                        inner.fail(&ids, &msg, Some((status.as_u16(), ""))).await;
                        return false;
                    }
                }
            }
        }
        if !status.is_success() {
            http_error(inner, resp, &ids).await;
            return false;
        }
        if is_initialize {
            take_session_id(inner, resp.headers());
        }
        read_reply(inner, resp, ids, batching.get()).await;
        return true;
    }
}

fn take_session_id(inner: &Inner, headers: &HeaderMap) {
    if let Some(s) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
        tracing::debug!(session = %s, "session assigned");
        lock(&inner.state).session_id = Some(s.to_owned());
    }
}

/// A non-2xx answer to a POST is the failure of the request(s) it carried,
/// whatever its body says: a JSON-RPC error in the body is the server's answer
/// to them, delivered under the request's id ([`error_answer_id`]), else
/// [`Inbound::Failed`] names the status and an excerpt of the body.
async fn http_error(inner: &Inner, resp: reqwest::Response, ids: &[Id]) {
    let status = resp.status();
    lock(&inner.state).last_error_status = Some(status.as_u16());
    let body = read_limited(resp, inner.config.max_body_bytes.min(1024 * 1024)).await;
    if let Ok(Message::Error(mut e)) = Message::decode(&body) {
        if let Some(id) = error_answer_id(e.id.as_ref(), ids) {
            if e.id.as_ref() != Some(&id) {
                tracing::debug!(%status, body_id = ?e.id, request_id = %id, "HTTP error whose JSON-RPC error names another id; taken as the request's answer");
            }
            tracing::debug!(%status, code = e.error.code, "HTTP error with a JSON-RPC error body");
            e.id = Some(id.clone());
            inner.deliver(Inbound::Message(Message::Error(e))).await;
            let rest: Vec<Id> = ids.iter().filter(|i| **i != id).cloned().collect();
            if !rest.is_empty() {
                let msg = format!(
                    "HTTP {status} from {} for the batch holding this request",
                    inner.url
                );
                inner.fail(&rest, &msg, Some((status.as_u16(), ""))).await;
            }
            return;
        }
    }
    let text = String::from_utf8_lossy(&body);
    let excerpt: String = text.chars().take(BODY_EXCERPT).collect();
    let msg = if excerpt.trim().is_empty() {
        format!("HTTP {status} from {}", inner.url)
    } else {
        format!("HTTP {status} from {}: {}", inner.url, excerpt.trim())
    };
    if ids.is_empty() {
        tracing::warn!(%msg, "the server refused a notification or response");
    }
    inner
        .fail(ids, &msg, Some((status.as_u16(), excerpt.trim())))
        .await;
}

/// Which of the POSTed requests `ids` a JSON-RPC error in the body of a non-2xx
/// answer is the answer to: the one it names, else (no id, `null`, or an id the
/// POST did not carry, such as the Python SDK 1.x's `"server-error"` for a
/// request without a session) the POST's only request. `None` for a batch the
/// error names no request of, and for a POST without requests: the HTTP status
/// is then the answer ([`Inbound::Failed`] for each request).
///
/// The status answers the POST, so its body cannot answer a request the POST did
/// not carry: relayed under a foreign id, it would leave the request unanswered
/// until a timeout (MCP 2025-03-26+ "Transports → Streamable HTTP": an HTTP error
/// status on a POSTed request is that request's failure).
fn error_answer_id(body_id: Option<&Id>, ids: &[Id]) -> Option<Id> {
    match (body_id, ids) {
        (Some(id), _) if ids.contains(id) => Some(id.clone()),
        (_, [only]) => Some(only.clone()),
        _ => None,
    }
}

async fn read_limited(resp: reqwest::Response, limit: usize) -> Vec<u8> {
    read_body(resp, limit).await.0
}

/// Reads a body, keeping at most `limit` bytes; also tells whether there was more
/// (the body was cut at the limit).
async fn read_body(mut resp: reqwest::Response, limit: usize) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        let room = limit.saturating_sub(out.len());
        if chunk.len() > room {
            out.extend_from_slice(&chunk[..room]);
            return (out, true);
        }
        out.extend_from_slice(&chunk);
    }
    (out, false)
}

fn is_sse(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("text/event-stream")
        })
}

/// Reads a 2xx reply: JSON or SSE. Every id in `ids` ends answered.
async fn read_reply(inner: &Arc<Inner>, resp: reqwest::Response, ids: Vec<Id>, batching: Batching) {
    if is_sse(resp.headers()) {
        read_sse(inner, resp, ids, batching).await;
        return;
    }
    let status = resp.status();
    let content_type = super::guard::header_text(resp.headers(), CONTENT_TYPE)
        .unwrap_or("none")
        .to_owned();
    let limit = inner.config.max_body_bytes;
    let (body, cut) = read_body(resp, limit).await;
    if cut {
        // Cut at our limit: the JSON is incomplete, and saying so beats "not a
        // JSON-RPC message".
        if !ids.is_empty() {
            let msg = format!(
                "the server's reply (HTTP {status}, Content-Type {content_type}) from {} exceeds max_body_bytes ({limit} bytes); not read",
                inner.url
            );
            inner.fail(&ids, &msg, None).await;
        }
        return;
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        if !ids.is_empty() {
            let msg = format!("the server answered a request with HTTP {status} and no response");
            inner.fail(&ids, &msg, Some((status.as_u16(), ""))).await;
        }
        return;
    }
    let Some(answered) = inner.deliver_frame(&body, batching).await else {
        // Not JSON-RPC at all (an HTML page, a proxy's error text): say what came.
        if !ids.is_empty() {
            let text = String::from_utf8_lossy(&body);
            let excerpt: String = text.chars().take(BODY_EXCERPT).collect();
            let msg = format!(
                "the server's reply is not a JSON-RPC message (HTTP {status}, Content-Type {content_type}) from {}: {}",
                inner.url,
                excerpt.trim()
            );
            inner.fail(&ids, &msg, None).await;
        }
        return;
    };
    let missing: Vec<Id> = ids.into_iter().filter(|i| !answered.contains(i)).collect();
    if !missing.is_empty() {
        inner
            .fail(
                &missing,
                "the server's JSON reply held no response for this request",
                None,
            )
            .await;
    }
}

/// Feeds one SSE chunk; removes answered ids from `pending`; sets `dropped_after`
/// to the last event id before an event over the parser's limit that was dropped.
/// Returns whether an event was dispatched.
async fn feed_sse(
    inner: &Inner,
    parser: &mut SseParser,
    chunk: &[u8],
    pending: &mut Vec<Id>,
    batching: Batching,
    dropped_after: &mut Option<String>,
) -> bool {
    let items: Vec<_> = parser.feed(chunk).collect();
    let mut progressed = false;
    for item in items {
        match item {
            Ok(SseItem::Event(e)) => {
                progressed = true;
                if e.event != "message" || e.data.trim().is_empty() {
                    continue;
                }
                if let Some(ids) = inner.deliver_frame(e.data.as_bytes(), batching).await {
                    pending.retain(|p| !ids.contains(p));
                }
            }
            Ok(SseItem::Comment(_)) => {}
            Err(e) => {
                tracing::warn!(error = %e, "SSE event dropped");
                let SseError::EventTooLarge { after, .. } = e;
                *dropped_after = Some(after);
            }
        }
    }
    progressed
}

/// Reads an SSE reply until every id in `ids` is answered, resuming a broken
/// stream with GET + `Last-Event-ID` (legacy revisions, bounded attempts).
async fn read_sse(
    inner: &Arc<Inner>,
    mut resp: reqwest::Response,
    ids: Vec<Id>,
    batching: Batching,
) {
    let mut parser = SseParser::with_max_event_len(inner.config.max_body_bytes);
    let mut pending = ids;
    let mut attempts = 0u32;
    // The last event id before the latest event dropped as over max_body_bytes.
    let mut dropped_after: Option<String> = None;
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                if feed_sse(
                    inner,
                    &mut parser,
                    &chunk,
                    &mut pending,
                    batching,
                    &mut dropped_after,
                )
                .await
                {
                    attempts = 0;
                }
                if pending.is_empty() {
                    return;
                }
                continue;
            }
            Ok(None) => tracing::debug!("the SSE reply ended"),
            Err(e) => tracing::debug!(error = %error_chain(&e), "the SSE reply broke"),
        }
        parser.finish();
        if pending.is_empty() {
            return;
        }
        // Resume (legacy revisions only; 2026-07-28 has no resumption).
        let last = parser.last_event_id().to_owned();
        let mut why = if dropped_after.as_deref() == Some(last.as_str()) {
            // Resuming from here would replay the same event (no later event
            // moved the last event id past it).
            format!(
                "the SSE stream ended before the response, after an event over max_body_bytes ({} bytes) was dropped",
                inner.config.max_body_bytes
            )
        } else if last.is_empty() {
            "the SSE stream ended before the response (no event id to resume from)".to_owned()
        } else if inner.modern() {
            "the SSE stream ended before the response (2026-07-28 has no resumption)".to_owned()
        } else {
            String::new()
        };
        let mut resumed = None;
        while why.is_empty() {
            if attempts >= inner.config.max_resume_attempts {
                why = format!(
                    "the SSE stream ended before the response; {attempts} resumption attempts failed"
                );
                if dropped_after.is_some() {
                    why.push_str(&format!(
                        " (an event over max_body_bytes, {} bytes, was dropped on the way)",
                        inner.config.max_body_bytes
                    ));
                }
                break;
            }
            attempts += 1;
            let wait = parser
                .retry()
                .map(Duration::from_millis)
                .unwrap_or(inner.config.default_retry);
            tokio::time::sleep(wait).await;
            tracing::debug!(last_event_id = %last, attempt = attempts, "resuming the SSE stream");
            match inner.get_stream(Some(&last)).await {
                Ok(r) if r.status().is_success() && is_sse(r.headers()) => {
                    resumed = Some(r);
                    break;
                }
                Ok(r)
                    if r.status() == StatusCode::METHOD_NOT_ALLOWED
                        || r.status() == StatusCode::NOT_FOUND =>
                {
                    why = format!(
                        "the SSE stream ended before the response and could not be resumed (HTTP {})",
                        r.status()
                    );
                }
                Ok(r) => tracing::debug!(status = %r.status(), "resumption refused; retrying"),
                Err(e) => tracing::debug!(error = %e, "resumption failed; retrying"),
            }
        }
        match resumed {
            Some(r) => resp = r,
            None => {
                inner.fail(&pending, &why, None).await;
                return;
            }
        }
    }
}

/// Starts a new session after a 404 (MCP 2025-03-26+, "Session Management": the
/// client MUST start a new session by sending `initialize` without a session id).
/// Only the first caller of a generation does it; later callers find it done.
async fn renew_session(inner: &Arc<Inner>, generation: u64) -> Result<(), String> {
    let _guard = inner.recovery.lock().await;
    let (init, initialized) = {
        let mut st = lock(&inner.state);
        if st.generation != generation {
            return Ok(());
        }
        st.session_id = None;
        if let Some(s) = st.standalone.take() {
            s.abort();
        }
        (st.initialize.clone(), st.initialized.clone())
    };
    let init = init.ok_or("no initialize request to replay")?;
    let resp = inner.post(init, None).await?;
    if !resp.status().is_success() {
        return Err(format!("initialize was answered HTTP {}", resp.status()));
    }
    take_session_id(inner, resp.headers());
    // The new session's initialize result: the library learns it from
    // `replaced_session_result` (its version, capabilities and serverInfo may
    // differ from the lost session's); the version header follows it at once,
    // for what is sent on the new session from here on.
    let result = swallow_reply(inner, resp)
        .await
        .map_err(|()| "the initialize reply brought no result".to_owned())?;
    let version = negotiated_version(&result);
    {
        let mut st = lock(&inner.state);
        if let Some(v) = version {
            if st.version != Some(v) {
                tracing::info!(old = ?st.version.map(|v| v.as_str()), new = v.as_str(), "the new session negotiated another version");
            }
            st.version = Some(v);
        }
        st.replacement = Some(result);
    }
    if let Some(n) = initialized {
        let resp = inner.post(n, None).await?;
        if !resp.status().is_success() {
            return Err(format!(
                "notifications/initialized was answered HTTP {}",
                resp.status()
            ));
        }
    }
    // The session's state, made again; a refusal is logged, not fatal (the
    // server may no longer have that resource).
    let setup = lock(&inner.state).setup.replay();
    for request in setup {
        let body = Bytes::from(Message::Request(request).encode());
        // Bounded: every other message waits for this recovery to end.
        let replay = async {
            match inner.post(body.clone(), None).await {
                Ok(resp) if resp.status().is_success() => {
                    swallow_reply(inner, resp).await.map(drop)
                }
                Ok(_) | Err(_) => Err(()),
            }
        };
        let refused = !matches!(tokio::time::timeout(REPLAY_WAIT, replay).await, Ok(Ok(())));
        if refused {
            tracing::warn!(request = %String::from_utf8_lossy(&body), "the new session did not take a request that set up the old one");
        }
    }
    let standalone = {
        let mut st = lock(&inner.state);
        st.generation += 1;
        inner.config.standalone_stream || st.standalone_wanted
    };
    if standalone {
        start_standalone(inner);
    }
    tracing::info!(session = ?inner.state.lock().ok().and_then(|s| s.session_id.clone()), "new session started");
    Ok(())
}

/// How long a new session waits for the answer to each request of the old
/// one's state that it replays ([`SessionSetup`]), before going on without it.
const REPLAY_WAIT: Duration = Duration::from_secs(10);

/// The legacy revision an `initialize` result names (`protocolVersion`), if it
/// is one this crate knows; `None` otherwise (the library then refuses it).
fn negotiated_version(result: &RawValue) -> Option<ProtocolVersion> {
    #[derive(serde::Deserialize)]
    struct Peek {
        #[serde(rename = "protocolVersion")]
        protocol_version: String,
    }
    let peek: Peek = serde_json::from_str(result.get()).ok()?;
    ProtocolVersion::parse(&peek.protocol_version).filter(|v| v.era() == Era::Legacy)
}

/// Reads the reply to a POST the transport made itself (a replay): a JSON
/// body, or an SSE stream up to its response; returns the response's
/// `result`. `Err` when the reply ended without one, or it is an error
/// response.
async fn swallow_reply(inner: &Inner, mut resp: reqwest::Response) -> Result<Box<RawValue>, ()> {
    if !is_sse(resp.headers()) {
        let body = read_limited(resp, inner.config.max_body_bytes).await;
        return match Message::decode(&body) {
            Ok(Message::Response(r)) => Ok(r.result),
            Ok(_) | Err(_) => Err(()),
        };
    }
    let mut parser = SseParser::new();
    loop {
        let Ok(Some(chunk)) = resp.chunk().await else {
            return Err(());
        };
        for item in parser.feed(&chunk) {
            if let Ok(SseItem::Event(e)) = item {
                match Message::decode(e.data.as_bytes()) {
                    Ok(Message::Response(r)) => return Ok(r.result),
                    Ok(Message::Error(_)) => return Err(()),
                    _ => {}
                }
            }
        }
    }
}

/// How long the standalone GET stream may stay silent (no byte at all) before
/// the client takes it for dead, for a server that keeps it alive every
/// `keep_alive` ([`HttpClientConfig::sse_keep_alive`]): the interval plus as
/// much again, at least 1 s more (a keep-alive late on a loaded server, or
/// one whose interval is a little longer than expected, is not a dead
/// connection).
pub fn silence_limit(keep_alive: Duration) -> Duration {
    keep_alive.saturating_add(keep_alive.max(Duration::from_secs(1)))
}

/// The longest wait between two attempts to open the standalone stream: 30 s.
const MAX_STANDALONE_BACKOFF: Duration = Duration::from_secs(30);

/// The wait before the next attempt to open the standalone stream after
/// `failures` attempts in a row that failed (refused, unreachable): `retry`
/// (the stream's SSE `retry`, else [`HttpClientConfig::default_retry`]) at
/// first, doubled by each failure, at most [`MAX_STANDALONE_BACKOFF`] (or
/// `retry`, if longer). A refusal can last (a server that still counts a dead
/// connection as the stream's reader answers 409 until it notices), so the
/// client keeps trying, less often, rather than give the stream up.
fn standalone_backoff(failures: u32, retry: Duration) -> Duration {
    let doubled = retry.saturating_mul(1u32 << failures.saturating_sub(1).min(16));
    doubled.min(MAX_STANDALONE_BACKOFF.max(retry))
}

/// Opens the standalone GET stream (MCP 2025-03-26+, "Listening for Messages from
/// the Server") in a task; a 405 means the server offers none, and so does a
/// 404 before the stream was ever opened; a 404 after that means the session
/// is gone: a new one is started ([`renew_session`]), with its own stream. A
/// stream that ends, breaks or stays silent past [`silence_limit`] is opened
/// again with `Last-Event-ID` (the last event id seen on it, if any); failed
/// attempts are retried for as long as the session lasts
/// ([`standalone_backoff`]).
fn start_standalone(inner: &Arc<Inner>) {
    let task_inner = inner.clone();
    let task = tokio::spawn(
        async move {
            let inner = task_inner;
            let mut parser = SseParser::with_max_event_len(inner.config.max_body_bytes);
            let mut failures = 0u32;
            // The server has opened the stream for this session at least once.
            let mut served = false;
            let mut none = Vec::new();
            loop {
                let last = parser.last_event_id().to_owned();
                let last = (!last.is_empty()).then_some(last);
                match inner.get_stream(last.as_deref()).await {
                    Ok(r) if r.status() == StatusCode::METHOD_NOT_ALLOWED => {
                        tracing::debug!("the server offers no standalone stream (405)");
                        return;
                    }
                    Ok(mut r) if r.status().is_success() && is_sse(r.headers()) => {
                        served = true;
                        let batching = Batching::Refused;
                        let silence = inner.config.sse_keep_alive.map(silence_limit);
                        loop {
                            let next = match silence {
                                Some(limit) => match tokio::time::timeout(limit, r.chunk()).await {
                                    Ok(next) => next,
                                    Err(_) => {
                                        tracing::info!(
                                            silent_ms = limit.as_millis() as u64,
                                            "the standalone stream went silent past its keep-alive; taken for dead, reconnecting"
                                        );
                                        break;
                                    }
                                },
                                None => r.chunk().await,
                            };
                            let Ok(Some(chunk)) = next else { break };
                            if feed_sse(&inner, &mut parser, &chunk, &mut none, batching, &mut None)
                                .await
                            {
                                failures = 0;
                            }
                        }
                        // The connection is closed here (a dead one too).
                        drop(r);
                        parser.finish();
                    }
                    Ok(r) if r.status() == StatusCode::NOT_FOUND => {
                        if !served {
                            // Never opened for this session: a server that
                            // answers GET with 404 for "no stream" (405 is
                            // the spec's); a new session would do the same.
                            tracing::debug!("the server offers no standalone stream (404)");
                            return;
                        }
                        // The session is gone (a restarted server): a new one
                        // is started now, as after a POST's 404 (the spec's
                        // MUST for any request that named the session), and
                        // opens its own stream. A client that only listens
                        // would otherwise hear nothing more until it sends.
                        // In a task of its own: it replaces (aborts) this one.
                        tracing::info!("the standalone stream's session is gone (404); starting a new one");
                        let generation = lock(&inner.state).generation;
                        let renewing = inner.clone();
                        tokio::spawn(
                            async move {
                                if let Err(e) = renew_session(&renewing, generation).await {
                                    tracing::warn!(error = %e, "the lost session could not be replaced; the next request tries again");
                                }
                            }
                            .in_current_span(),
                        );
                        return;
                    }
                    Ok(r) => {
                        tracing::debug!(status = %r.status(), "standalone stream refused");
                        failures += 1;
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "standalone stream failed");
                        failures += 1;
                    }
                }
                if failures == inner.config.max_resume_attempts.saturating_add(1) {
                    tracing::warn!(
                        failures,
                        "the standalone stream could not be opened again; still trying, less often"
                    );
                }
                let retry = parser
                    .retry()
                    .map(Duration::from_millis)
                    .unwrap_or(inner.config.default_retry);
                tokio::time::sleep(standalone_backoff(failures, retry)).await;
            }
        }
        .in_current_span(),
    );
    if let Some(old) = lock(&inner.state).standalone.replace(task.abort_handle()) {
        old.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_protocol::jsonrpc::Request;

    /// `HttpClientConfig::new` gives the defaults its doc lists.
    #[test]
    fn new_gives_the_documented_defaults() {
        let c = HttpClientConfig::new("http://127.0.0.1:1/mcp").header("a", "b");
        assert_eq!(c.url, "http://127.0.0.1:1/mcp");
        assert_eq!(c.headers, vec![("a".to_owned(), "b".to_owned())]);
        assert!(!c.standalone_stream);
        assert_eq!(c.sse_keep_alive, Some(Duration::from_secs(15)));
        assert_eq!(c.max_resume_attempts, 3);
        assert_eq!(c.default_retry, Duration::from_millis(500));
        assert_eq!(c.connect_timeout, Duration::from_secs(10));
        assert_eq!(c.delete_timeout, Duration::from_secs(2));
        assert_eq!(c.max_body_bytes, 16 * 1024 * 1024);
    }

    /// The body of an HTTP error answers the request the POST carried, whatever
    /// id it names; in a batch, only the request it names.
    #[test]
    fn an_http_error_body_answers_the_posted_request() {
        let one = [Id::from(1)];
        assert_eq!(error_answer_id(None, &one), Some(Id::from(1)));
        assert_eq!(error_answer_id(Some(&Id::from(1)), &one), Some(Id::from(1)));
        assert_eq!(
            error_answer_id(Some(&Id::from("server-error")), &one),
            Some(Id::from(1)),
            "the Python SDK 1.x's id for a request without a session"
        );
        let two = [Id::from(1), Id::from(2)];
        assert_eq!(error_answer_id(Some(&Id::from(2)), &two), Some(Id::from(2)));
        assert_eq!(error_answer_id(Some(&Id::from(3)), &two), None);
        assert_eq!(error_answer_id(None, &two), None);
        assert_eq!(error_answer_id(Some(&Id::from(1)), &[]), None);
    }

    /// The silence limit is the keep-alive interval and as much again, at
    /// least 1 s more: 30 s for the default 15 s.
    #[test]
    fn the_silence_limit_leaves_slack_past_the_keep_alive() {
        let ms = Duration::from_millis;
        assert_eq!(
            silence_limit(Duration::from_secs(15)),
            Duration::from_secs(30)
        );
        assert_eq!(silence_limit(ms(100)), ms(1100));
        assert_eq!(silence_limit(Duration::ZERO), Duration::from_secs(1));
        assert_eq!(silence_limit(Duration::MAX), Duration::MAX);
    }

    /// Failed attempts to open the standalone stream back off from `retry`,
    /// doubling, up to 30 s (or `retry` when that is longer).
    #[test]
    fn the_standalone_stream_backs_off_to_thirty_seconds() {
        let ms = Duration::from_millis;
        let waits: Vec<Duration> = (0..5).map(|f| standalone_backoff(f, ms(500))).collect();
        assert_eq!(waits, [ms(500), ms(500), ms(1000), ms(2000), ms(4000)]);
        assert_eq!(standalone_backoff(7, ms(500)), ms(32_000).min(ms(30_000)));
        assert_eq!(standalone_backoff(u32::MAX, ms(500)), ms(30_000));
        assert_eq!(standalone_backoff(3, ms(60_000)), ms(60_000));
    }

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (plain, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), enc);
        }
    }

    #[test]
    fn header_values_are_encoded_only_when_needed() {
        assert_eq!(encode_header_value("us-west1"), "us-west1");
        assert_eq!(encode_header_value("a b"), "a b");
        assert_eq!(encode_header_value(" lead"), "=?base64?IGxlYWQ=?=");
        assert_eq!(encode_header_value("日本"), "=?base64?5pel5pys?=");
        assert_eq!(
            encode_header_value("line\nbreak"),
            "=?base64?bGluZQpicmVhaw==?="
        );
        assert_eq!(
            encode_header_value("=?base64?x?="),
            format!("=?base64?{}?=", base64(b"=?base64?x?="))
        );
        assert_eq!(
            param_header_value(&serde_json::json!(42)),
            Some("42".into())
        );
        assert_eq!(
            param_header_value(&serde_json::json!(true)),
            Some("true".into())
        );
        assert_eq!(param_header_value(&serde_json::json!(null)), None);
        assert_eq!(param_header_value(&serde_json::json!(1.5)), None);
    }

    #[test]
    fn a_requests_trace_context_goes_in_its_headers_too() {
        let request = |params: &str| Request {
            id: Id::from(1u64),
            method: "tools/call".into(),
            params: Some(serde_json::value::RawValue::from_string(params.into()).unwrap()),
        };
        let mut h = HeaderMap::new();
        let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        trace_headers(
            &mut h,
            &request(&format!(
                r#"{{"name":"x","_meta":{{"traceparent":"{parent}","tracestate":"a=b","other":1}}}}"#
            )),
        );
        assert_eq!(h["traceparent"], parent);
        assert_eq!(h["tracestate"], "a=b");
        for none in [
            r#"{"name":"x"}"#,
            r#"{"name":"x","arguments":{"traceparent":"00-1-2-01"}}"#,
            r#"{"_meta":{"traceparent":"bad\nvalue"}}"#,
        ] {
            let mut h = HeaderMap::new();
            trace_headers(&mut h, &request(none));
            assert!(h.get("traceparent").is_none(), "{none}");
        }
    }

    #[test]
    fn modern_headers_come_from_the_body_and_the_tool_map() {
        let r = Request::new(
            7,
            "tools/call",
            &serde_json::json!({"name": "deploy", "arguments": {"region": "eu", "n": 3, "skip": null}}),
        )
        .unwrap();
        let mut tools = HashMap::new();
        tools.insert(
            "deploy".to_owned(),
            vec![
                ("region".to_owned(), "Region".to_owned()),
                ("n".to_owned(), "Count".to_owned()),
                ("skip".to_owned(), "Skip".to_owned()),
            ],
        );
        let mut h = HeaderMap::new();
        modern_headers(&mut h, &r, &tools);
        assert_eq!(h["mcp-method"], "tools/call");
        assert_eq!(h["mcp-name"], "deploy");
        assert_eq!(h["mcp-param-region"], "eu");
        assert_eq!(h["mcp-param-count"], "3");
        assert!(h.get("mcp-param-skip").is_none());

        let r = Request::new(
            8,
            "resources/read",
            &serde_json::json!({"uri": "file:///a b"}),
        )
        .unwrap();
        let mut h = HeaderMap::new();
        modern_headers(&mut h, &r, &tools);
        assert_eq!(h["mcp-name"], "file:///a b");
        let r = Request::new(9, "tools/list", &serde_json::json!({})).unwrap();
        let mut h = HeaderMap::new();
        modern_headers(&mut h, &r, &tools);
        assert_eq!(h["mcp-method"], "tools/list");
        assert!(h.get("mcp-name").is_none());
    }

    #[tokio::test]
    async fn a_relative_url_is_refused() {
        let e = connect(HttpClientConfig::new("/mcp")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        let e = connect(HttpClientConfig::new("http://127.0.0.1:1/mcp").header("bad name", "x"))
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }

    /// A configured header may not name one the transport sets itself: it used
    /// to go out on `initialize` (`Mcp-Session-Id`) or replace the target's
    /// `Host`. `Authorization` and custom headers stay allowed.
    #[tokio::test]
    async fn a_managed_header_is_refused() {
        for name in [
            "Mcp-Session-Id",
            "mcp-protocol-version",
            "MCP-METHOD",
            "Mcp-Name",
            "Mcp-Param-Region",
            "Last-Event-ID",
            "Host",
            "Content-Type",
            "content-length",
            "Accept",
            "Transfer-Encoding",
            "Connection",
        ] {
            let config = HttpClientConfig::new("http://127.0.0.1:1/mcp").header(name, "x");
            let e = connect(config).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{name}");
            assert!(e.to_string().contains(name), "{name}: {e}");
        }
        for name in ["Authorization", "X-Api-Key", "User-Agent", "Mcp-Params"] {
            let config = HttpClientConfig::new("http://127.0.0.1:1/mcp").header(name, "x");
            assert!(connect(config).is_ok(), "{name}");
        }
    }
}
