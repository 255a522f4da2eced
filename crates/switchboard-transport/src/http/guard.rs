//! Checks of request headers, as pure functions (MCP 2025-03-26 to 2025-11-25,
//! "Transports → Streamable HTTP" → "Security Warning", "Sending Messages to the
//! Server", "Protocol Version Header", "Resumability and Redelivery").

use std::net::SocketAddr;

use http::header::{
    AsHeaderName, HeaderName, ACCEPT, CONTENT_ENCODING, CONTENT_TYPE, HOST, ORIGIN,
};
use http::HeaderMap;
use switchboard_protocol::ProtocolVersion;

/// The host names a local server answers to by default.
const LOCAL_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// The default `Host` values: each local name with the bound port, plus the bound
/// address itself (`ip:port`, IPv6 in brackets).
pub(crate) fn default_hosts(bound: SocketAddr) -> Vec<String> {
    let port = bound.port();
    let mut hosts: Vec<String> = LOCAL_NAMES
        .iter()
        .map(|name| format!("{name}:{port}"))
        .collect();
    let own = bound.to_string();
    if !hosts.contains(&own) {
        hosts.push(own);
    }
    hosts
}

/// The default `Origin` values: `http://` and `https://` with each default host.
pub(crate) fn default_origins(bound: SocketAddr) -> Vec<String> {
    default_hosts(bound)
        .into_iter()
        .flat_map(|h| [format!("http://{h}"), format!("https://{h}")])
        .collect()
}

/// Whether the `Host` header is one of `allowed` (ASCII case-insensitive, exact
/// otherwise). A missing or non-text `Host` fails.
pub(crate) fn host_ok(headers: &HeaderMap, allowed: &[String]) -> bool {
    match headers.get(HOST).and_then(|v| v.to_str().ok()) {
        Some(host) => allowed.iter().any(|a| a.eq_ignore_ascii_case(host.trim())),
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

/// Which of `application/json` and `text/event-stream` the `Accept` headers
/// list, in that order (media types compared ASCII case-insensitively,
/// parameters such as `q` ignored, items split at commas across every `Accept`
/// header). One pass over the bytes, allocating nothing: it runs for every POST.
fn accepted(headers: &HeaderMap) -> (bool, bool) {
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(ACCEPT) {
        // What the SDK clients send, read at a glance.
        if value.as_bytes() == b"application/json, text/event-stream" {
            return (true, true);
        }
        for item in value.as_bytes().split(|&b| b == b',') {
            let (media, refused) = media_range(item);
            if refused {
                continue;
            }
            json |= media.eq_ignore_ascii_case(b"application/json");
            sse |= media.eq_ignore_ascii_case(b"text/event-stream");
        }
    }
    (json, sse)
}

/// The media range of one `Accept` item (`type/subtype;param=value...`), trimmed,
/// and whether its weight is zero, `q=0` (RFC 9110 §12.4.2: "not acceptable").
pub(crate) fn media_range(item: &[u8]) -> (&[u8], bool) {
    let mut parts = item.split(|&b| b == b';');
    let media = parts.next().unwrap_or_default().trim_ascii();
    for param in parts {
        let Some(eq) = param.iter().position(|&b| b == b'=') else {
            continue;
        };
        let (name, value) = (param[..eq].trim_ascii(), param[eq + 1..].trim_ascii());
        // A qvalue is `0[.ddd]` or `1[.000]`: zero when it starts with 0 and
        // every digit after the point is 0.
        if name.eq_ignore_ascii_case(b"q")
            && value.first() == Some(&b'0')
            && value[1..]
                .strip_prefix(b".")
                .unwrap_or(&value[1..])
                .iter()
                .all(|&b| b == b'0')
        {
            return (media, true);
        }
    }
    (media, false)
}

/// POST: `Accept` must list both `application/json` and `text/event-stream`
/// (every Streamable HTTP revision: the client MUST).
pub(crate) fn post_accept_ok(headers: &HeaderMap) -> bool {
    accepted(headers) == (true, true)
}

/// GET: `Accept` must list `text/event-stream`.
pub(crate) fn get_accept_ok(headers: &HeaderMap) -> bool {
    accepted(headers).1
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

/// The revision the request claims: the `MCP-Protocol-Version` header, or
/// [`ProtocolVersion::HTTP_DEFAULT`] (2025-03-26) when absent (2025-06-18,
/// "Protocol Version Header": the server SHOULD assume it).
///
/// Errors: the header's text when it is not one of `supported` (or not text), to
/// be answered with 400.
pub(crate) fn protocol_version(
    headers: &HeaderMap,
    supported: &[ProtocolVersion],
) -> Result<ProtocolVersion, String> {
    let Some(value) = headers.get(PROTOCOL_VERSION) else {
        return Ok(ProtocolVersion::HTTP_DEFAULT);
    };
    let text = value.to_str().map_err(|_| "(not text)".to_owned())?;
    match ProtocolVersion::parse(text.trim()) {
        Some(v) if supported.contains(&v) => Ok(v),
        _ => Err(text.to_owned()),
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
        assert!(!host_ok(&headers(&[("host", "localhost:4001")]), &hosts));
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

    #[test]
    fn accept_rules() {
        assert!(post_accept_ok(&headers(&[(
            "accept",
            "application/json, text/event-stream"
        )])));
        assert!(post_accept_ok(&headers(&[
            ("accept", "application/json;q=0.9"),
            ("accept", "Text/Event-Stream")
        ])));
        assert!(!post_accept_ok(&headers(&[("accept", "application/json")])));
        assert!(post_accept_ok(&headers(&[(
            "accept",
            "text/event-stream ;q=0.5,\tAPPLICATION/JSON "
        )])));
        assert!(!post_accept_ok(&headers(&[(
            "accept",
            "application/json-seq, text/event-streams, application/*"
        )])));
        assert!(!post_accept_ok(&headers(&[(
            "accept",
            "application/json text/event-stream"
        )])));
        assert!(!post_accept_ok(&headers(&[])));
        // A weight of zero refuses the type (RFC 9110 §12.4.2).
        assert!(!post_accept_ok(&headers(&[(
            "accept",
            "application/json, text/event-stream;q=0"
        )])));
        assert!(!post_accept_ok(&headers(&[(
            "accept",
            "application/json; Q = 0.000, text/event-stream"
        )])));
        assert!(post_accept_ok(&headers(&[(
            "accept",
            "application/json;q=0.001, text/event-stream;q=1"
        )])));
        assert!(!get_accept_ok(&headers(&[(
            "accept",
            "text/event-stream;level=1;q=0.0"
        )])));
        assert!(get_accept_ok(&headers(&[("accept", "text/event-stream")])));
        assert!(!get_accept_ok(&headers(&[("accept", "application/json")])));
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
