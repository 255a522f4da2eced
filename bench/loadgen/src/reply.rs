//! Reading the body of a Streamable HTTP reply to a POST (MCP 2025-11-25,
//! "Transports → Streamable HTTP → Sending Messages to the Server"): either one
//! JSON-RPC message (or batch array) as `application/json`, or a
//! `text/event-stream` whose events' `data` carry the messages (events with empty
//! data, such as the 2025-11-25 priming event, carry none).
//!
//! Knows the SSE event format (WHATWG HTML, "Server-sent events", as MCP uses it)
//! and JSON; must not know HTTP connections.

use std::borrow::Cow;

use serde_json::Value;

/// The JSON-RPC messages in a reply body whose `Content-Type` is `content_type`
/// (`None`: guessed from the first byte, `{`/`[` meaning JSON). A JSON array
/// (batch) yields its elements. Errors name what could not be parsed.
pub fn messages(content_type: Option<&str>, body: &[u8]) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    if is_sse(content_type, body) {
        for data in sse_data(body)? {
            push_json(&mut out, data.as_bytes())?;
        }
    } else {
        push_json(&mut out, body)?;
    }
    Ok(out)
}

/// Whether a body with this `Content-Type` is an SSE stream (`None`: unless its
/// first non-blank byte is `{` or `[`).
fn is_sse(content_type: Option<&str>, body: &[u8]) -> bool {
    match content_type {
        Some(ct) => ct.trim_start().starts_with("text/event-stream"),
        None => !matches!(
            body.iter().find(|b| !b.is_ascii_whitespace()),
            Some(b'{' | b'[')
        ),
    }
}

fn push_json(out: &mut Vec<Value>, text: &[u8]) -> Result<(), String> {
    let value: Value = serde_json::from_slice(text)
        .map_err(|e| format!("reply is not JSON ({e}): {}", String::from_utf8_lossy(text)))?;
    match value {
        Value::Array(items) => out.extend(items),
        other => out.push(other),
    }
    Ok(())
}

/// The non-empty `data` of each event of an SSE body (lines joined with `\n`; one
/// space after `data:` removed; CRLF, LF or CR line ends). An event with a single
/// `data` line is borrowed from `body`.
pub fn sse_data(body: &[u8]) -> Result<Vec<Cow<'_, str>>, String> {
    let text = std::str::from_utf8(body).map_err(|e| format!("SSE body is not UTF-8: {e}"))?;
    let mut events: Vec<Cow<'_, str>> = Vec::new();
    let mut data: Option<Cow<'_, str>> = None;
    fn finish<'t>(events: &mut Vec<Cow<'t, str>>, data: &mut Option<Cow<'t, str>>) {
        if let Some(d) = data.take() {
            if !d.is_empty() {
                events.push(d);
            }
        }
    }
    let mut rest = text;
    while !rest.is_empty() {
        // One line and its end: CRLF, LF or a lone CR.
        let (line, next) = match rest.find(['\n', '\r']) {
            Some(i) => {
                let skip = if rest[i..].starts_with("\r\n") { 2 } else { 1 };
                (&rest[..i], &rest[i + skip..])
            }
            None => (rest, ""),
        };
        rest = next;
        if line.is_empty() {
            finish(&mut events, &mut data);
            continue;
        }
        if let Some(field) = line.strip_prefix("data") {
            let value = match field.strip_prefix(':') {
                Some(v) => v.strip_prefix(' ').unwrap_or(v),
                None if field.is_empty() => "",
                None => continue,
            };
            match data.as_mut() {
                Some(d) => {
                    let d = d.to_mut();
                    d.push('\n');
                    d.push_str(value);
                }
                None => data = Some(Cow::Borrowed(value)),
            }
        }
    }
    finish(&mut events, &mut data);
    Ok(events)
}

/// The JSON texts of the messages in a reply body whose `Content-Type` is
/// `content_type` (as [`messages`] decides it): the body itself when it is JSON,
/// else the non-empty `data` of each SSE event. Nothing is parsed as JSON.
pub fn message_texts<'a>(
    content_type: Option<&str>,
    body: &'a [u8],
) -> Result<Vec<Cow<'a, str>>, String> {
    if is_sse(content_type, body) {
        sse_data(body)
    } else {
        std::str::from_utf8(body)
            .map(|t| vec![Cow::Borrowed(t)])
            .map_err(|e| format!("reply is not UTF-8: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_with_a_priming_event_yields_only_the_message() {
        let body = b"id: 0\ndata: \n\nevent: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n";
        let got = messages(Some("text/event-stream"), body).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0]["id"], 3);
    }

    #[test]
    fn json_bodies_and_batches_are_read() {
        let got = messages(
            Some("application/json"),
            br#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        )
        .unwrap();
        assert_eq!(got[0]["id"], 1);
        let got = messages(
            None,
            br#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]"#,
        )
        .unwrap();
        assert_eq!(got.len(), 2);
        assert!(messages(Some("application/json"), b"nope").is_err());
    }

    #[test]
    fn multi_line_data_and_crlf_events_are_joined() {
        let body = b"data: {\"a\":\r\ndata: 1}\r\n\r\n";
        assert_eq!(sse_data(body).unwrap(), vec!["{\"a\":\n1}".to_owned()]);
        let body = b"data: x\rdata: y\r\rdata: z\n\n";
        assert_eq!(sse_data(body).unwrap(), vec!["x\ny", "z"]);
        let body = b"id: 0\ndata: \n\nevent: message\ndata: {}\n\n";
        let got = sse_data(body).unwrap();
        assert_eq!(got, vec!["{}"]);
        assert!(
            matches!(got[0], Cow::Borrowed(_)),
            "one data line is borrowed"
        );
    }
}
