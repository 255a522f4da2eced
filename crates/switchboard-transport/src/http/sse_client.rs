//! The legacy HTTP+SSE transport, client side (MCP 2024-11-05, "Transports → HTTP
//! with SSE"; the last step of a Streamable HTTP client's fallback, REVISIONS.md
//! §5.3 "Fallback to HTTP+SSE" and §6).
//!
//! [`connect`] opens the server's SSE stream (`GET` with
//! `Accept: text/event-stream` and the configured extra headers, e.g.
//! `Authorization`), waits ([`SseClientConfig::endpoint_timeout`]) for the
//! `endpoint` event, resolves its data against the stream's URL and refuses it
//! unless it has the same origin (scheme, host and port: a server must not be
//! able to send the client's messages, and its credentials, elsewhere), then
//! hands back a [`Transport`]:
//!
//! - each message queued on its [`Sender`] is POSTed to the endpoint
//!   (`Content-Type: application/json`, the extra headers, one message per POST,
//!   one POST at a time so the server sees them in order; the routing hint of
//!   [`Sender::send_related`] is irrelevant, and no `MCP-Protocol-Version` or
//!   `Mcp-Session-Id` header is sent: the session is named by the endpoint URI);
//! - each `message` event of the stream is decoded and yielded by its
//!   [`Receiver`]; events with empty data are skipped; other event types (and a
//!   repeated `endpoint`) are logged and skipped; data that is not JSON-RPC is
//!   logged (warn) and skipped, as a client treats a peer's bad output; comments
//!   (keep-alives) are ignored. While the library does not read, the stream is
//!   not read either (bounded queue of
//!   [`TransportConfig::channel_capacity`](crate::TransportConfig::channel_capacity)).
//!
//! **A POST answered non-2xx** (or failing: connection refused, timeout
//! [`SseClientConfig::post_timeout`]) is logged (warn); [`Sender::send`] has
//! already returned `Ok` (it only queues). If the message was a request, the
//! [`Receiver`] also yields [`Inbound::Failed`] for it (code [`TRANSPORT_ERROR`],
//! message naming the HTTP status, `data: {"httpStatus": N}` when there was one), so
//! the caller's pending request fails at once instead of timing out.
//!
//! **The end.** When the stream ends, the receiver yields [`Inbound::Closed`]
//! with [`CloseReason::PeerClosed`] (the server closed it) or
//! [`CloseReason::Io`] (reading failed). When the last [`Sender`] is dropped, the
//! messages still queued are POSTed, then the stream is closed (which ends the
//! session on the server) and the receiver yields [`Inbound::Closed`] with
//! [`CloseReason::SessionClosed`]. Dropping the [`Receiver`] closes the stream
//! too; later POSTs then fail (logged).
//!
//! `http://` and `https://` URLs (rustls; certificates checked against the
//! bundled Mozilla roots and the platform's store, which `SSL_CERT_FILE` or
//! `SSL_CERT_DIR` replace when set).
//! Redirects are followed only within the same origin (at most 10).
//!
//! Helpers for the Streamable HTTP client (`client.rs`), `pub(crate)`:
//! `http_client` (a reqwest client with `TCP_NODELAY` and same-origin
//! redirects), `same_origin`, `EventStream` (an SSE response body → events
//! through `codec::sse::SseParser`) and `decode_data` (an event's data →
//! [`Inbound`], client-side bad-input policy).
//!
//! This module knows HTTP and SSE framing; it must not know what the messages
//! mean beyond the envelope, nor pending requests (the library's), nor the
//! Streamable HTTP client's negotiation.

use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderValue, ACCEPT, CACHE_CONTROL, CONTENT_TYPE};
use http::HeaderMap;
use reqwest::Url;
use switchboard_protocol::codec::sse::{SseItem, SseParser};
use switchboard_protocol::codec::{Event, DEFAULT_MAX_FRAME_LEN};
use switchboard_protocol::jsonrpc::{decode_frame, Batching, ErrorObject, Frame, Message};
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, info_span, warn, Instrument};

use crate::config::TransportConfig;
use crate::handle::{
    BatchingSwitch, CloseReason, Inbound, Outbound, Receiver, Sender, Transport, TRANSPORT_ERROR,
};

/// The default wait for the `endpoint` event, connecting included: 10 s.
pub const DEFAULT_ENDPOINT_TIMEOUT: Duration = Duration::from_secs(10);
/// The default limit of one POST, answer included: 30 s.
pub const DEFAULT_POST_TIMEOUT: Duration = Duration::from_secs(30);
/// The default limit of opening a TCP connection: 10 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How much of an error answer's body is kept for the log: 1 KiB.
const ERROR_BODY_LIMIT: usize = 1024;
/// How much of a successful POST's answer is read (and dropped) to keep the
/// connection reusable: 64 KiB; a longer body is cut by dropping the connection.
const DRAIN_LIMIT: usize = 64 * 1024;

/// The configuration of [`connect`].
///
/// ```
/// use switchboard_transport::http::sse_client::SseClientConfig;
///
/// let mut config = SseClientConfig::default();
/// config
///     .headers
///     .insert("authorization", "Bearer t0ken".parse().unwrap());
/// assert_eq!(config.endpoint_timeout.as_secs(), 10);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SseClientConfig {
    /// Extra headers sent on the GET and on every POST (e.g. `Authorization`).
    /// Default none. A name the transport manages itself
    /// ([`client::MANAGED_HEADERS`](super::client::MANAGED_HEADERS), and
    /// `Mcp-Param-*`) is refused by [`connect`]
    /// ([`SseClientError::ManagedHeader`]), as the Streamable HTTP client refuses
    /// it.
    pub headers: HeaderMap,
    /// How long [`connect`] waits for the `endpoint` event, from the start of
    /// connecting. Default [`DEFAULT_ENDPOINT_TIMEOUT`] (10 s).
    pub endpoint_timeout: Duration,
    /// How long opening each TCP connection may take. Default
    /// [`DEFAULT_CONNECT_TIMEOUT`] (10 s).
    pub connect_timeout: Duration,
    /// How long each POST may take, answer included; `None`: unbounded. Default
    /// `Some(`[`DEFAULT_POST_TIMEOUT`]`)` (30 s).
    pub post_timeout: Option<Duration>,
    /// The largest SSE event accepted, in bytes of field lines; a larger one is
    /// logged and skipped. Default 16 MiB (`codec::DEFAULT_MAX_FRAME_LEN`).
    pub max_event_bytes: usize,
    /// Queue capacities and the initial batching rule of the [`Transport`]
    /// (`max_line_len` is not used: events are bounded by
    /// [`max_event_bytes`](Self::max_event_bytes)).
    pub transport: TransportConfig,
}

impl Default for SseClientConfig {
    fn default() -> Self {
        SseClientConfig {
            headers: HeaderMap::new(),
            endpoint_timeout: DEFAULT_ENDPOINT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            post_timeout: Some(DEFAULT_POST_TIMEOUT),
            max_event_bytes: DEFAULT_MAX_FRAME_LEN,
            transport: TransportConfig::default(),
        }
    }
}

/// Why [`connect`] failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum SseClientError {
    /// The URL is not an absolute `http://` or `https://` URL.
    InvalidUrl(String),
    /// An extra header of [`SseClientConfig::headers`] names one the transport
    /// manages ([`client::managed_header`](super::client::managed_header)); its
    /// name. Nothing was sent.
    ManagedHeader(String),
    /// The GET could not be sent or its answer not read (connection refused,
    /// DNS, TLS unavailable, ...).
    Http(reqwest::Error),
    /// The GET was answered with a non-2xx status; `body` holds its first KiB
    /// (lossy UTF-8). A Streamable-HTTP-only server typically answers 404/405.
    Status {
        /// The HTTP status code.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The GET was answered 2xx without `Content-Type: text/event-stream`; the
    /// value seen (empty when absent).
    NotEventStream(String),
    /// No `endpoint` event within [`SseClientConfig::endpoint_timeout`].
    EndpointTimeout(Duration),
    /// The stream ended (or failed) before the `endpoint` event.
    NoEndpoint,
    /// The `endpoint` event's data does not resolve to a URL against the
    /// stream's URL.
    BadEndpoint(String),
    /// The `endpoint` event names another origin (scheme, host or port) than the
    /// stream's URL: refused, so messages and credentials go nowhere else.
    CrossOriginEndpoint(String),
}

impl fmt::Display for SseClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SseClientError::InvalidUrl(url) => write!(f, "not an http(s) URL: {url:?}"),
            SseClientError::ManagedHeader(name) => {
                f.write_str(&super::client::managed_message(name))
            }
            SseClientError::Http(e) => write!(f, "the SSE request failed: {e}"),
            SseClientError::Status { status, body } => {
                write!(f, "the SSE request was answered HTTP {status}: {body:?}")
            }
            SseClientError::NotEventStream(ct) => {
                write!(
                    f,
                    "the SSE request was answered with Content-Type {ct:?}, not text/event-stream"
                )
            }
            SseClientError::EndpointTimeout(d) => {
                write!(f, "no endpoint event within {d:?}")
            }
            SseClientError::NoEndpoint => {
                f.write_str("the SSE stream ended before the endpoint event")
            }
            SseClientError::BadEndpoint(data) => write!(f, "unusable endpoint event: {data:?}"),
            SseClientError::CrossOriginEndpoint(url) => {
                write!(f, "the endpoint event names another origin: {url}")
            }
        }
    }
}

impl std::error::Error for SseClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SseClientError::Http(e) => Some(e),
            _ => None,
        }
    }
}

/// A reqwest client for MCP over HTTP: `TCP_NODELAY` on every connection (SSE
/// and small POSTs are written in pieces; see `peers/NOTES.md`), `connect`
/// bounded by `connect_timeout`, no overall timeout (SSE streams are
/// long-lived; bound each request instead), redirects followed only within the
/// origin of the first URL (at most 10).
///
/// Errors: reqwest cannot build the client (its TLS setup or the system's
/// resolver configuration failed).
pub(crate) fn http_client(connect_timeout: Duration) -> reqwest::Result<reqwest::Client> {
    let redirects = reqwest::redirect::Policy::custom(|attempt| {
        let first = attempt.previous().first().cloned();
        if attempt.previous().len() > 10 {
            attempt.error("too many redirects")
        } else if first.is_some_and(|f| same_origin(&f, attempt.url())) {
            attempt.follow()
        } else {
            attempt.stop()
        }
    });
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .connect_timeout(connect_timeout)
        .redirect(redirects)
        .build()
}

/// Whether two URLs have the same origin: scheme, host and port (the scheme's
/// default port when none is written).
pub(crate) fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

/// The events of an SSE response body, parsed with `codec::sse::SseParser`.
pub(crate) struct EventStream {
    response: reqwest::Response,
    parser: SseParser,
}

impl EventStream {
    /// Reads `response`'s body as an event stream whose events hold at most
    /// `max_event_bytes` bytes of field lines.
    pub(crate) fn new(response: reqwest::Response, max_event_bytes: usize) -> Self {
        EventStream {
            response,
            parser: SseParser::with_max_event_len(max_event_bytes),
        }
    }

    /// The next event; `Ok(None)` at the end of the body (an unfinished last
    /// event is dropped, logged at debug); `Err` when reading failed. An event over
    /// the size limit is logged (warn) and skipped. Cancel safe: a chunk is
    /// either fully parsed or not taken.
    pub(crate) async fn next_event(&mut self) -> reqwest::Result<Option<Event>> {
        loop {
            while let Some(item) = self.parser.next_item() {
                match item {
                    Ok(SseItem::Event(event)) => return Ok(Some(event)),
                    Ok(SseItem::Comment(_)) => {}
                    Err(e) => warn!(error = %e, "SSE event skipped"),
                }
            }
            match self.response.chunk().await? {
                Some(chunk) => self.parser.push(&chunk),
                None => {
                    if self.parser.finish() {
                        debug!("the SSE stream ended inside an event; it was dropped");
                    }
                    return Ok(None);
                }
            }
        }
    }
}

/// The data of a `message` event as an inbound event, decoded under `batching`;
/// `None` (logged at warn) when it is not JSON-RPC: a client skips a server's
/// bad output and goes on.
pub(crate) fn decode_data(data: &str, batching: Batching) -> Option<Inbound> {
    match decode_frame(data.as_bytes(), batching) {
        Ok(Frame::Single(message)) => Some(Inbound::Message(message)),
        Ok(Frame::Batch(items)) => {
            for e in items.iter().filter_map(|i| i.as_ref().err()) {
                warn!(error = %e, "an invalid item in the server's batch");
            }
            Some(Inbound::Batch(items))
        }
        Err(e) => {
            warn!(error = %e, "the server sent an event that is not a JSON-RPC message; skipped");
            None
        }
    }
}

/// Reads at most `limit` bytes of a response body.
async fn read_limited(response: &mut reqwest::Response, limit: usize) -> Vec<u8> {
    let mut out = Vec::new();
    while out.len() < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => out.extend_from_slice(&chunk[..chunk.len().min(limit - out.len())]),
            _ => break,
        }
    }
    out
}

/// Opens a legacy HTTP+SSE session with the server whose SSE endpoint is `url`
/// (e.g. `http://127.0.0.1:8080/sse`) and returns the connected [`Transport`];
/// see the module documentation for what each half does. The MCP handshake
/// (`initialize`) is the library's next step.
///
/// Must be called within a Tokio runtime (it spawns the reader and writer tasks).
///
/// Errors: [`SseClientError`]: a bad URL, an extra header the transport manages,
/// the GET failing or refused (non-2xx,
/// not `text/event-stream`), no `endpoint` event within
/// [`SseClientConfig::endpoint_timeout`], or an endpoint that does not resolve or
/// names another origin.
pub async fn connect(url: &str, config: SseClientConfig) -> Result<Transport, SseClientError> {
    let base = Url::parse(url).map_err(|_| SseClientError::InvalidUrl(url.to_owned()))?;
    if !matches!(base.scheme(), "http" | "https") || base.host_str().is_none() {
        return Err(SseClientError::InvalidUrl(url.to_owned()));
    }
    if let Some(name) = config
        .headers
        .keys()
        .find(|n| super::client::managed_header(n.as_str()))
    {
        return Err(SseClientError::ManagedHeader(name.as_str().to_owned()));
    }
    let client = http_client(config.connect_timeout).map_err(SseClientError::Http)?;
    let limit = config.endpoint_timeout;
    let (stream, endpoint, early) = tokio::time::timeout(limit, open(&client, &base, &config))
        .await
        .map_err(|_| SseClientError::EndpointTimeout(limit))??;
    debug!(%endpoint, "legacy HTTP+SSE session open");

    let capacity = config.transport.capacity();
    let batching = BatchingSwitch::new(config.transport.batching);
    let (out_tx, out_rx) = mpsc::channel::<Outbound>(capacity);
    let (in_tx, in_rx) = crate::handle::inbound_channel(capacity);
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let span = info_span!("sse_client", url = %base);
    let writer = Writer {
        client,
        endpoint,
        headers: config.headers.clone(),
        post_timeout: config.post_timeout,
        inbound: in_tx.downgrade(),
    };
    tokio::spawn(writer.run(out_rx, stop_tx).instrument(span.clone()));
    let reader = read_loop(stream, early, in_tx, batching.clone(), stop_rx);
    tokio::spawn(reader.instrument(span));
    Ok(Transport {
        sender: Sender {
            out: crate::handle::Outlet::Queue(out_tx),
            batching: batching.clone(),
            no_requests: false,
            replies: None,
        },
        receiver: Receiver::new(in_rx, batching),
    })
}

/// The GET, up to and including the `endpoint` event: the stream, the resolved
/// endpoint, and any `message` data that came before it (out of spec; kept).
async fn open(
    client: &reqwest::Client,
    base: &Url,
    config: &SseClientConfig,
) -> Result<(EventStream, Url, Vec<String>), SseClientError> {
    let response = client
        .get(base.clone())
        .headers(config.headers.clone())
        .header(ACCEPT, HeaderValue::from_static("text/event-stream"))
        .header(CACHE_CONTROL, HeaderValue::from_static("no-cache"))
        .send()
        .await
        .map_err(SseClientError::Http)?;
    let status = response.status();
    if !status.is_success() {
        let mut response = response;
        let body = read_limited(&mut response, ERROR_BODY_LIMIT).await;
        return Err(SseClientError::Status {
            status: status.as_u16(),
            body: String::from_utf8_lossy(&body).into_owned(),
        });
    }
    let content_type = super::guard::header_text(response.headers(), CONTENT_TYPE)
        .unwrap_or("")
        .to_owned();
    let media = content_type.split(';').next().unwrap_or("").trim();
    if !media.eq_ignore_ascii_case("text/event-stream") {
        return Err(SseClientError::NotEventStream(content_type));
    }
    let mut stream = EventStream::new(response, config.max_event_bytes);
    let mut early = Vec::new();
    loop {
        let event = match stream.next_event().await {
            Ok(Some(event)) => event,
            Ok(None) => return Err(SseClientError::NoEndpoint),
            Err(e) => {
                debug!(error = %e, "the SSE stream failed before the endpoint event");
                return Err(SseClientError::NoEndpoint);
            }
        };
        match event.event.as_str() {
            "endpoint" => {
                let data = event.data.trim();
                let endpoint = base
                    .join(data)
                    .map_err(|_| SseClientError::BadEndpoint(data.to_owned()))?;
                if !same_origin(base, &endpoint) {
                    return Err(SseClientError::CrossOriginEndpoint(endpoint.to_string()));
                }
                return Ok((stream, endpoint, early));
            }
            "message" if !event.data.is_empty() => {
                warn!("a message event before the endpoint event; kept");
                early.push(event.data);
            }
            other => debug!(event = other, "an event before the endpoint event; skipped"),
        }
    }
}

/// Reads the stream until it ends, the library drops the receiver, or the
/// writer says every sender is gone.
async fn read_loop(
    mut stream: EventStream,
    early: Vec<String>,
    inbound: crate::handle::InboundTx,
    batching: BatchingSwitch,
    mut stop: oneshot::Receiver<()>,
) {
    for data in early {
        if let Some(event) = decode_data(&data, batching.get()) {
            if inbound.send(event).await.is_err() {
                return;
            }
        }
    }
    let reason = loop {
        let next = tokio::select! {
            next = stream.next_event() => next,
            () = inbound.closed() => {
                debug!("the receiver was dropped; closing the SSE stream");
                return;
            }
            _ = &mut stop => {
                debug!("every sender dropped; closing the SSE stream");
                break CloseReason::SessionClosed;
            }
        };
        let event = match next {
            Ok(Some(event)) => event,
            Ok(None) => {
                debug!("the server closed the SSE stream");
                break CloseReason::PeerClosed;
            }
            Err(e) => {
                debug!(error = %e, "reading the SSE stream failed");
                break CloseReason::Io(Arc::new(io::Error::other(e)));
            }
        };
        match event.event.as_str() {
            "message" if event.data.is_empty() => {}
            "message" => {
                let Some(message) = decode_data(&event.data, batching.get()) else {
                    continue;
                };
                if inbound.send(message).await.is_err() {
                    return;
                }
            }
            "endpoint" => warn!("a second endpoint event; ignored"),
            other => debug!(event = other, "an SSE event of unknown type; skipped"),
        }
    };
    drop(stream);
    let _ = inbound.send(Inbound::Closed { reason }).await;
}

/// POSTs each queued message to the endpoint, in order.
struct Writer {
    client: reqwest::Client,
    endpoint: Url,
    headers: HeaderMap,
    post_timeout: Option<Duration>,
    /// Where an error response to a request whose POST failed goes; weak, so
    /// the receiver still sees its channel end after [`Inbound::Closed`].
    inbound: crate::handle::InboundWeak,
}

impl Writer {
    async fn run(self, mut queue: mpsc::Receiver<Outbound>, stop: oneshot::Sender<()>) {
        while let Some(mut out) = queue.recv().await {
            if out.pass_barrier() {
                continue;
            }
            let mut line = out.line;
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            self.post(Bytes::from(line)).await;
        }
        let _ = stop.send(());
    }

    async fn post(&self, body: Bytes) {
        let mut request = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(body.clone());
        if let Some(limit) = self.post_timeout {
            request = request.timeout(limit);
        }
        let failure = match request.send().await {
            Ok(mut response) if response.status().is_success() => {
                read_limited(&mut response, DRAIN_LIMIT).await;
                return;
            }
            Ok(mut response) => {
                let status = response.status().as_u16();
                let text = read_limited(&mut response, ERROR_BODY_LIMIT).await;
                warn!(
                    status,
                    body = %String::from_utf8_lossy(&text),
                    "the server refused a POSTed message"
                );
                (
                    format!("the server refused the message: HTTP {status}"),
                    Some(status),
                )
            }
            Err(e) => {
                warn!(error = %e, "POSTing a message failed");
                (format!("sending the message failed: {e}"), None)
            }
        };
        self.fail_request(&body, failure).await;
    }

    /// If `body` was a request, reports it as failed in the transport
    /// ([`Inbound::Failed`], code [`TRANSPORT_ERROR`]).
    async fn fail_request(&self, body: &[u8], (text, status): (String, Option<u16>)) {
        let Ok(Message::Request(request)) = Message::decode(body) else {
            return;
        };
        let mut error = ErrorObject::new(TRANSPORT_ERROR, text);
        if let Some(status) = status {
            error = error.with_data(&std::collections::BTreeMap::from([("httpStatus", status)]));
        }
        if let Some(inbound) = self.inbound.upgrade() {
            let _ = inbound
                .send(Inbound::Failed {
                    id: request.id,
                    error,
                })
                .await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An extra header the transport manages is refused before anything is
    /// sent: on the GET a configured `Content-Type` went out and `Accept`
    /// went out twice. `Authorization` is not refused (here the GET then fails
    /// to connect, which is what it gets to).
    #[tokio::test]
    async fn a_managed_header_is_refused() {
        for name in [
            "accept",
            "content-type",
            "host",
            "mcp-session-id",
            "last-event-id",
        ] {
            let mut config = SseClientConfig::default();
            config.headers.insert(
                http::HeaderName::from_static(name),
                HeaderValue::from_static("x"),
            );
            let e = connect("http://127.0.0.1:1/sse", config)
                .await
                .expect_err("refused");
            assert!(
                matches!(&e, SseClientError::ManagedHeader(n) if n == name),
                "{e}"
            );
            assert!(e.to_string().contains(name), "{e}");
        }
        let mut config = SseClientConfig::default();
        config.headers.insert(
            http::header::AUTHORIZATION,
            HeaderValue::from_static("Bearer x"),
        );
        let e = connect("http://127.0.0.1:1/sse", config)
            .await
            .expect_err("nothing listens there");
        assert!(matches!(e, SseClientError::Http(_)), "{e}");
    }

    #[test]
    fn origins() {
        let u = |s: &str| Url::parse(s).unwrap();
        assert!(same_origin(
            &u("http://127.0.0.1:80/sse"),
            &u("http://127.0.0.1/m?x=1")
        ));
        assert!(same_origin(
            &u("http://LOCALHOST:9/a"),
            &u("http://localhost:9/b")
        ));
        assert!(!same_origin(
            &u("http://127.0.0.1:8/a"),
            &u("http://127.0.0.1:9/a")
        ));
        assert!(!same_origin(
            &u("http://a.example/a"),
            &u("https://a.example/a")
        ));
        assert!(!same_origin(
            &u("http://a.example/a"),
            &u("http://b.example/a")
        ));
    }

    #[test]
    fn endpoint_resolution() {
        let base = Url::parse("http://127.0.0.1:9000/mcp/sse").unwrap();
        let rel = base.join("/message?sessionId=ab").unwrap();
        assert_eq!(rel.as_str(), "http://127.0.0.1:9000/message?sessionId=ab");
        assert!(same_origin(&base, &rel));
        let sibling = base.join("messages?sessionId=ab").unwrap();
        assert_eq!(
            sibling.as_str(),
            "http://127.0.0.1:9000/mcp/messages?sessionId=ab"
        );
        let elsewhere = base.join("//evil.example/message").unwrap();
        assert!(!same_origin(&base, &elsewhere));
    }

    #[test]
    fn event_data_decoding() {
        let ok = decode_data(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, Batching::Refused);
        assert!(matches!(ok, Some(Inbound::Message(Message::Response(_)))));
        assert!(decode_data("not json", Batching::Refused).is_none());
        let batch = r#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0"}]"#;
        assert!(decode_data(batch, Batching::Refused).is_none());
        match decode_data(batch, Batching::Allowed) {
            Some(Inbound::Batch(items)) => {
                assert!(items[0].is_ok());
                assert!(items[1].is_err());
            }
            other => panic!("{other:?}"),
        }
    }
}
