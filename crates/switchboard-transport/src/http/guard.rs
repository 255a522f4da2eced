//! Checks of request headers, as pure functions (MCP 2025-03-26 to 2025-11-25,
//! "Transports → Streamable HTTP" → "Security Warning", "Sending Messages to the
//! Server", "Protocol Version Header", "Resumability and Redelivery"; RFC 9110
//! §7.2 `Host`, §12.5.1 `Accept`).

use std::net::SocketAddr;

use http::header::{
    AsHeaderName, HeaderName, ACCEPT, CONTENT_ENCODING, CONTENT_TYPE, HOST, ORIGIN,
};
use http::HeaderMap;
use switchboard_protocol::ProtocolVersion;

/// The loopback host names, accepted in `Host` with any port or none by default:
/// only a client on this machine can reach them, and a DNS-rebinding page sends
/// its own name, never one of these.
pub(crate) const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// The default `Host` entries ([`host_ok`]): each loopback name (any port or
/// none), plus the bound address itself (`ip:port`, IPv6 in brackets) when it is
/// not a loopback one.
pub(crate) fn default_hosts(bound: SocketAddr) -> Vec<String> {
    let mut hosts: Vec<String> = LOOPBACK_NAMES.iter().map(|&n| n.to_owned()).collect();
    if !bound.ip().is_loopback() {
        hosts.push(bound.to_string());
    }
    hosts
}

/// The default `Origin` values: `http://` and `https://` with each loopback name
/// at the bound port, and with the bound address itself.
pub(crate) fn default_origins(bound: SocketAddr) -> Vec<String> {
    let port = bound.port();
    let mut hosts: Vec<String> = LOOPBACK_NAMES
        .iter()
        .map(|name| format!("{name}:{port}"))
        .collect();
    let own = bound.to_string();
    if !hosts.contains(&own) {
        hosts.push(own);
    }
    hosts
        .into_iter()
        .flat_map(|h| [format!("http://{h}"), format!("https://{h}")])
        .collect()
}

/// Splits a `Host` value (or an allowlist entry) into its name and port text:
/// `name`, `name:port`, `[v6]`, `[v6]:port`. The port is `None` when absent.
fn split_host(host: &str) -> (&str, Option<&str>) {
    let host = host.trim();
    if host.starts_with('[') {
        return match host.find(']') {
            Some(end) => {
                let (name, rest) = host.split_at(end + 1);
                (name, rest.strip_prefix(':'))
            }
            None => (host, None),
        };
    }
    match host.rsplit_once(':') {
        Some((name, port)) => (name, Some(port)),
        None => (host, None),
    }
}

/// Whether a `Host` value matches one allowlist entry: an entry `name` takes
/// that name with any port or none, an entry `name:port` that port only (names
/// compared ignoring ASCII case).
fn host_matches(host: &str, entry: &str) -> bool {
    let (name, port) = split_host(host);
    let (allowed, allowed_port) = split_host(entry);
    name.eq_ignore_ascii_case(allowed)
        && match allowed_port {
            None => port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())),
            Some(p) => port == Some(p),
        }
}

/// Whether the `Host` header matches one of `allowed` ([`host_matches`]). A
/// missing or non-text `Host` fails.
pub(crate) fn host_ok(headers: &HeaderMap, allowed: &[String]) -> bool {
    match headers.get(HOST).and_then(|v| v.to_str().ok()) {
        Some(host) => allowed.iter().any(|a| host_matches(host, a)),
        None => false,
    }
}

/// Whether the `Origin` header is absent (a non-browser client) or one of
/// `allowed` (ASCII case-insensitive). `Origin: null` and unreadable values fail.
pub(crate) fn origin_ok(headers: &HeaderMap, allowed: &[String]) -> bool {
    match headers.get(ORIGIN) {
        None => true,
        Some(v) => match v.to_str() {
            Ok(origin) => allowed
                .iter()
                .any(|a| a.eq_ignore_ascii_case(origin.trim())),
            Err(_) => false,
        },
    }
}

/// The weight, in thousandths (0 to 1000), the `Accept` headers give the media
/// type `media` (`type/subtype`), after RFC 9110 §12.5.1: the most specific range
/// that matches it decides (`type/subtype`, then `type/*`, then `*/*`; the
/// highest weight among equally specific ones), a type no range matches gets 0,
/// and no `Accept` header at all accepts any type (1000). Items are split at
/// commas across every `Accept` header; types compared ignoring ASCII case; a
/// weight that does not parse counts as 1. One pass over the bytes, allocating
/// nothing: it runs for every POST.
fn weight(headers: &HeaderMap, media: &[u8]) -> u16 {
    let mut values = headers.get_all(ACCEPT).iter().peekable();
    if values.peek().is_none() {
        return 1000;
    }
    let slash = media.iter().position(|&b| b == b'/').unwrap_or(media.len());
    let kind = &media[..slash];
    // (specificity, weight) of the best match so far: 3 exact, 2 `type/*`,
    // 1 `*/*`, 0 none.
    let mut best: (u8, u16) = (0, 0);
    for value in values {
        for item in value.as_bytes().split(|&b| b == b',') {
            let (range, q) = media_range(item);
            let specificity = if range.eq_ignore_ascii_case(media) {
                3
            } else if range.len() == kind.len() + 2
                && range[..kind.len()].eq_ignore_ascii_case(kind)
                && &range[kind.len()..] == b"/*"
            {
                2
            } else if range == b"*/*" {
                1
            } else {
                0
            };
            if specificity > best.0 || (specificity == best.0 && specificity > 0 && q > best.1) {
                best = (specificity, q);
            }
        }
    }
    best.1
}

/// The media range of one `Accept` item (`type/subtype;param=value...`), trimmed,
/// and its weight `q` in thousandths (RFC 9110 §12.4.2: `0[.ddd]` or
/// `1[.000]`; absent or not parsable: 1000; 0 means "not acceptable").
pub(crate) fn media_range(item: &[u8]) -> (&[u8], u16) {
    let mut parts = item.split(|&b| b == b';');
    let media = parts.next().unwrap_or_default().trim_ascii();
    for param in parts {
        let Some(eq) = param.iter().position(|&b| b == b'=') else {
            continue;
        };
        let (name, value) = (param[..eq].trim_ascii(), param[eq + 1..].trim_ascii());
        if name.eq_ignore_ascii_case(b"q") {
            return (media, qvalue(value).unwrap_or(1000));
        }
    }
    (media, 1000)
}

/// A qvalue in thousandths: `0`, `0.5`, `0.001`, `1`, `1.000`.
fn qvalue(text: &[u8]) -> Option<u16> {
    let (&whole, rest) = text.split_first()?;
    let fraction = match rest {
        [] => &[][..],
        [b'.', digits @ ..] if digits.len() <= 3 && digits.iter().all(u8::is_ascii_digit) => digits,
        _ => return None,
    };
    let mut thousandths: u16 = 0;
    for i in 0..3 {
        thousandths = thousandths * 10 + fraction.get(i).map_or(0, |d| u16::from(d - b'0'));
    }
    match whole {
        b'0' => Some(thousandths),
        b'1' if thousandths == 0 => Some(1000),
        _ => None,
    }
}

/// What a POST's reply may be, by its `Accept` (RFC 9110 §12.5.1, wildcards and
/// `q=0` included). Every Streamable HTTP revision says the client MUST list
/// both `application/json` and `text/event-stream`; clients that list one, or
/// `*/*`, exist, and get a type they accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReplyShape {
    /// Both are acceptable: the server's own choice.
    Either,
    /// Only `application/json`: one JSON body (related notifications go
    /// elsewhere or, on a stateless exchange, are not sent).
    Json,
    /// Only `text/event-stream`: an SSE stream, even for a lone response.
    Sse,
}

impl ReplyShape {
    /// Whether the reply is `application/json`, when the server would rather
    /// send JSON (`prefer_json`) or not.
    pub(crate) fn json(self, prefer_json: bool) -> bool {
        match self {
            ReplyShape::Either => prefer_json,
            ReplyShape::Json => true,
            ReplyShape::Sse => false,
        }
    }
}

/// POST: the shape a reply may take, or `None` when neither
/// `application/json` nor `text/event-stream` is acceptable (406).
pub(crate) fn post_reply(headers: &HeaderMap) -> Option<ReplyShape> {
    // What the SDK clients send, read at a glance.
    let mut values = headers.get_all(ACCEPT).iter();
    if let (Some(only), None) = (values.next(), values.next()) {
        if only.as_bytes() == b"application/json, text/event-stream" {
            return Some(ReplyShape::Either);
        }
    }
    match (
        weight(headers, b"application/json") > 0,
        weight(headers, b"text/event-stream") > 0,
    ) {
        (true, true) => Some(ReplyShape::Either),
        (true, false) => Some(ReplyShape::Json),
        (false, true) => Some(ReplyShape::Sse),
        (false, false) => None,
    }
}

/// GET (a stream): whether `text/event-stream` is acceptable.
pub(crate) fn sse_acceptable(headers: &HeaderMap) -> bool {
    weight(headers, b"text/event-stream") > 0
}

/// POST: `Content-Type` must be `application/json` (parameters such as `charset`
/// allowed).
pub(crate) fn content_type_ok(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// POST: no `Content-Encoding` but `identity` (RFC 9110 §8.4): the body is read
/// as it comes, never decompressed.
pub(crate) fn content_encoding_ok(headers: &HeaderMap) -> bool {
    headers.get_all(CONTENT_ENCODING).iter().all(|v| {
        v.as_bytes()
            .split(|&b| b == b',')
            .map(<[u8]>::trim_ascii)
            .all(|c| c.is_empty() || c.eq_ignore_ascii_case(b"identity"))
    })
}

// Header names as `HeaderName`s, not text: a lookup by `&str` parses the name
// on every call.
/// The `MCP-Protocol-Version` header (2025-06-18 onward).
pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// The `Mcp-Session-Id` header (`MCP-Session-Id` in 2025-11-25; names are
/// case-insensitive).
pub(crate) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// The `Last-Event-ID` header (SSE resumption).
pub(crate) const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// The `MCP-Protocol-Version` header: `Ok(None)` when absent, `Err(text)` when
/// it names no revision this crate knows (or is not text).
pub(crate) fn version_header(headers: &HeaderMap) -> Result<Option<ProtocolVersion>, String> {
    let Some(value) = headers.get(PROTOCOL_VERSION) else {
        return Ok(None);
    };
    let text = value.to_str().map_err(|_| "(not text)".to_owned())?;
    ProtocolVersion::parse(text.trim())
        .map(Some)
        .ok_or_else(|| text.to_owned())
}

/// The revision the request claims: the `MCP-Protocol-Version` header, or
/// [`ProtocolVersion::HTTP_DEFAULT`] (2025-03-26) when absent (2025-06-18,
/// "Protocol Version Header": the server SHOULD assume it).
///
/// Errors: the header's text when it is not one of `supported` (or not text).
pub(crate) fn protocol_version(
    headers: &HeaderMap,
    supported: &[ProtocolVersion],
) -> Result<ProtocolVersion, String> {
    match version_header(headers) {
        Ok(None) => Ok(ProtocolVersion::HTTP_DEFAULT),
        Ok(Some(v)) if supported.contains(&v) => Ok(v),
        Ok(Some(v)) => Err(v.as_str().to_owned()),
        Err(text) => Err(text),
    }
}

/// Why a request's `MCP-Protocol-Version` is refused (400).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum VersionRefusal {
    /// A revision neither supported by the server nor negotiated on the
    /// session, or text naming none: the header's text.
    Unsupported(String),
    /// A revision newer than the one the session negotiated.
    NotNegotiated {
        /// The header's revision.
        header: ProtocolVersion,
        /// The session's.
        negotiated: ProtocolVersion,
    },
}

/// The revision a request of a stateful session speaks, from its
/// `MCP-Protocol-Version` header (`header`, as [`version_header`] read it) and
/// the revision its `initialize` negotiated (`negotiated`, `None` while not
/// known):
///
/// - no header: [`ProtocolVersion::HTTP_DEFAULT`] (2025-06-18, "Protocol
///   Version Header");
/// - the negotiated revision: accepted whether or not the server lists it in
///   `supported` (a version negotiated on a session is supported for that
///   session: a 2024-11-05 answer from a server behind the bridge, say);
/// - an older revision that `supported` lists: accepted (the conformance
///   suite's polling scenario names 2025-03-26 on a 2025-11-25 session);
/// - a newer one: refused, [`VersionRefusal::NotNegotiated`] (the client MUST
///   send the negotiated revision);
/// - before a revision is negotiated: one of `supported`, else refused.
pub(crate) fn session_version(
    header: Result<Option<ProtocolVersion>, String>,
    negotiated: Option<ProtocolVersion>,
    supported: &[ProtocolVersion],
) -> Result<ProtocolVersion, VersionRefusal> {
    let v = match header {
        Ok(None) => return Ok(ProtocolVersion::HTTP_DEFAULT),
        Ok(Some(v)) => v,
        Err(text) => return Err(VersionRefusal::Unsupported(text)),
    };
    match negotiated {
        Some(n) if v == n => Ok(v),
        Some(n) if v > n => Err(VersionRefusal::NotNegotiated {
            header: v,
            negotiated: n,
        }),
        _ if supported.contains(&v) => Ok(v),
        _ => Err(VersionRefusal::Unsupported(v.as_str().to_owned())),
    }
}

/// An SSE event id of this server: `<stream>-<seq>` in decimal, stream 0 being the
/// standalone GET stream, seq 0 the priming event.
pub(crate) fn event_id(stream: u64, seq: u64) -> String {
    let mut out = Vec::with_capacity(41);
    push_event_id(&mut out, stream, seq);
    String::from_utf8(out).expect("decimal digits and '-'")
}

/// Appends [`event_id`]`(stream, seq)` to `out` (digits written directly: this
/// runs for every event).
fn push_event_id(out: &mut Vec<u8>, stream: u64, seq: u64) {
    let mut digits = itoa::Buffer::new();
    out.extend_from_slice(digits.format(stream).as_bytes());
    out.push(b'-');
    out.extend_from_slice(digits.format(seq).as_bytes());
}

/// The SSE event that carries one encoded message (`data`, one line of JSON) as
/// event [`event_id`]`(stream, seq)` of the default type: `id: S-Q`, `data: ...`
/// and a blank line; with empty `data`, the priming event (`id: S-Q`, `data:`).
/// The same bytes as `Event::message(data).with_id(event_id(stream, seq)).encode()`
/// in one allocation, for the path every response takes; text with line breaks
/// or that is not UTF-8 goes through [`Event`](switchboard_protocol::codec::Event)
/// (split into `data:` lines, or made valid).
///
/// Source: WHATWG HTML "Server-sent events" (the event stream format); MCP
/// 2025-11-25 "Transports → Streamable HTTP" (event ids, the priming event).
pub(crate) fn message_event(stream: u64, seq: u64, data: &[u8]) -> Vec<u8> {
    use switchboard_protocol::codec::Event;
    let plain =
        !data.iter().any(|&b| b == b'\n' || b == b'\r') && std::str::from_utf8(data).is_ok();
    if !plain {
        let text = String::from_utf8_lossy(data).into_owned();
        return Event::message(text)
            .with_id(event_id(stream, seq))
            .encode()
            .expect("a numeric event id is always valid");
    }
    // "id: " + two u64s + "-" + "\ndata: " + data + "\n\n".
    let mut out = Vec::with_capacity(data.len() + 56);
    out.extend_from_slice(b"id: ");
    push_event_id(&mut out, stream, seq);
    out.extend_from_slice(b"\ndata:");
    if !data.is_empty() {
        out.push(b' ');
        out.extend_from_slice(data);
    }
    out.extend_from_slice(b"\n\n");
    out
}

/// A priming event (id `stream-seq`, empty data; 2025-11-25 "Transports →
/// Streamable HTTP") with `retry: millis` when given, in one allocation; the
/// same bytes as `Event::priming(..).with_retry(..)`.
pub(crate) fn priming_event(stream: u64, seq: u64, retry_millis: Option<u64>) -> Vec<u8> {
    let mut out = Vec::with_capacity(72);
    out.extend_from_slice(b"id: ");
    push_event_id(&mut out, stream, seq);
    out.push(b'\n');
    if let Some(ms) = retry_millis {
        out.extend_from_slice(b"retry: ");
        out.extend_from_slice(itoa::Buffer::new().format(ms).as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"data:\n\n");
    out
}

/// Parses an event id made by [`event_id`].
pub(crate) fn parse_event_id(text: &str) -> Option<(u64, u64)> {
    let (stream, seq) = text.trim().split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

/// One header's value as text, if present and readable.
pub(crate) fn header_text(headers: &HeaderMap, name: impl AsHeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

#[cfg(test)]
mod tests {

    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn host_and_origin_defaults() {
        let bound: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        let hosts = default_hosts(bound);
        let origins = default_origins(bound);
        assert!(host_ok(&headers(&[("host", "localhost:4000")]), &hosts));
        assert!(host_ok(&headers(&[("host", "LOCALHOST:4000")]), &hosts));
        assert!(host_ok(&headers(&[("host", "[::1]:4000")]), &hosts));
        assert!(!host_ok(&headers(&[("host", "evil.example:4000")]), &hosts));
        assert!(!host_ok(&headers(&[]), &hosts));
        assert!(origin_ok(&headers(&[]), &origins));
        assert!(origin_ok(
            &headers(&[("origin", "http://127.0.0.1:4000")]),
            &origins
        ));
        assert!(!origin_ok(&headers(&[("origin", "null")]), &origins));
        assert!(!origin_ok(
            &headers(&[("origin", "http://evil.example")]),
            &origins
        ));
    }

    /// The loopback names pass with any port or none (a proxy or a client that
    /// leaves out the default port); other names only as listed, an entry
    /// without a port taking any port, one with a port that port only.
    #[test]
    fn loopback_hosts_pass_with_any_port_or_none() {
        let hosts = default_hosts("127.0.0.1:4000".parse().unwrap());
        for host in [
            "localhost",
            "localhost:4001",
            "127.0.0.1",
            "127.0.0.1:80",
            "[::1]",
            "[::1]:9",
            " Localhost ",
        ] {
            assert!(host_ok(&headers(&[("host", host)]), &hosts), "{host}");
        }
        for host in [
            "localhost.evil.example",
            "evil.example",
            "127.0.0.2",
            "[::2]:4000",
            "localhost:",
            "localhost:x",
            "[::1",
        ] {
            assert!(!host_ok(&headers(&[("host", host)]), &hosts), "{host}");
        }
        // A non-loopback bound address is a default too, at its port.
        let wide = default_hosts("192.0.2.7:4000".parse().unwrap());
        assert!(host_ok(&headers(&[("host", "192.0.2.7:4000")]), &wide));
        assert!(!host_ok(&headers(&[("host", "192.0.2.7:4001")]), &wide));
        assert!(host_ok(&headers(&[("host", "localhost")]), &wide));
        let listed = vec!["mcp.example".to_owned(), "pinned.example:443".to_owned()];
        assert!(host_ok(&headers(&[("host", "MCP.example:8443")]), &listed));
        assert!(host_ok(&headers(&[("host", "mcp.example")]), &listed));
        assert!(host_ok(
            &headers(&[("host", "pinned.example:443")]),
            &listed
        ));
        assert!(!host_ok(&headers(&[("host", "pinned.example")]), &listed));
        assert!(!host_ok(
            &headers(&[("host", "pinned.example:80")]),
            &listed
        ));
        assert!(!host_ok(&headers(&[("host", "localhost")]), &listed));
    }

    fn reply(accept: &[&'static str]) -> Option<ReplyShape> {
        let pairs: Vec<(&'static str, &'static str)> =
            accept.iter().map(|a| ("accept", *a)).collect();
        post_reply(&headers(&pairs))
    }

    #[test]
    fn accept_rules() {
        use ReplyShape::{Either, Json, Sse};
        assert_eq!(
            reply(&["application/json, text/event-stream"]),
            Some(Either)
        );
        assert_eq!(
            reply(&["application/json;q=0.9", "Text/Event-Stream"]),
            Some(Either)
        );
        assert_eq!(
            reply(&["text/event-stream ;q=0.5,\tAPPLICATION/JSON "]),
            Some(Either)
        );
        // One type alone: that type.
        assert_eq!(reply(&["application/json"]), Some(Json));
        assert_eq!(reply(&["text/event-stream"]), Some(Sse));
        // Wildcards (RFC 9110 §12.5.1), and no Accept at all: anything.
        assert_eq!(reply(&["*/*"]), Some(Either));
        assert_eq!(reply(&[]), Some(Either));
        assert_eq!(reply(&["application/*"]), Some(Json));
        assert_eq!(reply(&["text/*"]), Some(Sse));
        assert_eq!(
            reply(&["application/json-seq, text/event-streams, application/*"]),
            Some(Json)
        );
        // A weight of zero refuses the type (RFC 9110 §12.4.2), and the most
        // specific range decides.
        assert_eq!(
            reply(&["application/json, text/event-stream;q=0"]),
            Some(Json)
        );
        assert_eq!(
            reply(&["application/json; Q = 0.000, text/event-stream"]),
            Some(Sse)
        );
        assert_eq!(reply(&["*/*, text/event-stream;q=0"]), Some(Json));
        assert_eq!(reply(&["*/*;q=0, application/json"]), Some(Json));
        assert_eq!(reply(&["text/*;q=0, */*"]), Some(Json));
        assert_eq!(reply(&["application/*;q=0.5, application/json;q=0"]), None);
        assert_eq!(
            reply(&["application/json;q=0.001, text/event-stream;q=1"]),
            Some(Either)
        );
        // Nothing the server sends is acceptable: 406.
        assert_eq!(reply(&["text/html"]), None);
        assert_eq!(reply(&["application/json text/event-stream"]), None);
        assert_eq!(reply(&["*/*;q=0"]), None);
        assert_eq!(
            reply(&["application/json;q=0, text/event-stream;q=0.000"]),
            None
        );
        assert!(!sse_acceptable(&headers(&[(
            "accept",
            "text/event-stream;level=1;q=0.0"
        )])));
        assert!(sse_acceptable(&headers(&[("accept", "text/event-stream")])));
        assert!(sse_acceptable(&headers(&[("accept", "*/*")])));
        assert!(sse_acceptable(&headers(&[])));
        assert!(!sse_acceptable(&headers(&[("accept", "application/json")])));
        assert_eq!(qvalue(b"0.5"), Some(500));
        assert_eq!(qvalue(b"1"), Some(1000));
        assert_eq!(qvalue(b"1.001"), None);
        assert_eq!(qvalue(b"0.0001"), None);
        assert!(ReplyShape::Either.json(true) && !ReplyShape::Either.json(false));
        assert!(ReplyShape::Json.json(false) && !ReplyShape::Sse.json(true));
        assert!(content_encoding_ok(&headers(&[])));
        assert!(content_encoding_ok(&headers(&[(
            "content-encoding",
            "Identity"
        )])));
        assert!(!content_encoding_ok(&headers(&[(
            "content-encoding",
            "gzip"
        )])));
        assert!(!content_encoding_ok(&headers(&[(
            "content-encoding",
            "identity, br"
        )])));
        assert!(content_type_ok(&headers(&[(
            "content-type",
            "application/json; charset=utf-8"
        )])));
        assert!(!content_type_ok(&headers(&[(
            "content-type",
            "text/plain"
        )])));
    }

    #[test]
    fn versions_and_event_ids() {
        let supported = [ProtocolVersion::V2025_03_26, ProtocolVersion::V2025_11_25];
        assert_eq!(
            protocol_version(&headers(&[]), &supported),
            Ok(ProtocolVersion::V2025_03_26)
        );
        assert_eq!(
            protocol_version(
                &headers(&[("mcp-protocol-version", "2025-11-25")]),
                &supported
            ),
            Ok(ProtocolVersion::V2025_11_25)
        );
        assert!(protocol_version(
            &headers(&[("mcp-protocol-version", "2025-06-18")]),
            &supported
        )
        .is_err());
        assert!(protocol_version(
            &headers(&[("mcp-protocol-version", "1999-01-01")]),
            &supported
        )
        .is_err());
        assert_eq!(parse_event_id(&event_id(3, 17)), Some((3, 17)));
        assert_eq!(parse_event_id("x-1"), None);
        assert_eq!(parse_event_id("12"), None);
    }

    /// A session speaks the revision it negotiated, supported by the server
    /// or not (2024-11-05 behind a bridge), or an older supported one; never a
    /// newer one than it negotiated.
    #[test]
    fn a_session_speaks_its_negotiated_revision() {
        use ProtocolVersion::*;
        let supported = [V2025_03_26, V2025_06_18, V2025_11_25];
        let header = |v: ProtocolVersion| Ok(Some(v));
        assert_eq!(
            session_version(header(V2024_11_05), Some(V2024_11_05), &supported),
            Ok(V2024_11_05)
        );
        assert_eq!(
            session_version(header(V2024_11_05), None, &supported),
            Err(VersionRefusal::Unsupported("2024-11-05".into()))
        );
        assert_eq!(
            session_version(header(V2024_11_05), Some(V2025_11_25), &supported),
            Err(VersionRefusal::Unsupported("2024-11-05".into()))
        );
        assert_eq!(
            session_version(header(V2025_06_18), Some(V2025_03_26), &supported),
            Err(VersionRefusal::NotNegotiated {
                header: V2025_06_18,
                negotiated: V2025_03_26
            })
        );
        assert_eq!(
            session_version(header(V2025_03_26), Some(V2025_11_25), &supported),
            Ok(V2025_03_26)
        );
        assert_eq!(
            session_version(header(V2025_06_18), None, &supported),
            Ok(V2025_06_18)
        );
        assert_eq!(
            session_version(Ok(None), Some(V2024_11_05), &supported),
            Ok(V2025_03_26)
        );
        assert_eq!(
            session_version(Err("x".into()), Some(V2025_11_25), &supported),
            Err(VersionRefusal::Unsupported("x".into()))
        );
    }

    /// The one-allocation event writer gives the bytes of the general encoder.
    #[test]
    fn priming_event_matches_the_general_encoder() {
        use switchboard_protocol::codec::Event;
        for retry in [None, Some(0), Some(500), Some(u64::MAX)] {
            let mut general = Event::priming(event_id(3, 9));
            if let Some(ms) = retry {
                general = general.with_retry(ms);
            }
            assert_eq!(priming_event(3, 9, retry), general.encode().unwrap());
        }
    }

    #[test]
    fn message_event_matches_the_general_encoder() {
        use switchboard_protocol::codec::Event;
        let cases: [&[u8]; 6] = [
            br#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            b"",
            b"two\nlines",
            b"cr\r\nlf",
            b"caf\xc3\xa9",
            b"bad \xff byte",
        ];
        for data in cases {
            let general = Event::message(String::from_utf8_lossy(data).into_owned())
                .with_id(event_id(7, u64::MAX))
                .encode()
                .unwrap();
            assert_eq!(
                message_event(7, u64::MAX, data),
                general,
                "{}",
                String::from_utf8_lossy(data)
            );
        }
        assert_eq!(message_event(3, 0, b""), b"id: 3-0\ndata:\n\n");
        assert_eq!(
            message_event(3, 0, b""),
            Event::priming(event_id(3, 0)).encode().unwrap()
        );
    }
}
