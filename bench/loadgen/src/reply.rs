//! Reading the body of a Streamable HTTP reply to a POST (MCP 2025-11-25,
//! "Transports → Streamable HTTP → Sending Messages to the Server"): either one
//! JSON-RPC message (or batch array) as `application/json`, or a
//! `text/event-stream` whose events' `data` carry the messages (events with empty
//! data, such as the 2025-11-25 priming event, carry none).
//!
//! Knows the SSE event format (WHATWG HTML, "Server-sent events", as MCP uses it)
//! and JSON; must not know HTTP connections.

use serde_json::Value;

/// The JSON-RPC messages in a reply body whose `Content-Type` is `content_type`
/// (`None`: guessed from the first byte, `{`/`[` meaning JSON). A JSON array
/// (batch) yields its elements. Errors name what could not be parsed.
pub fn messages(content_type: Option<&str>, body: &[u8]) -> Result<Vec<Value>, String> {
    let sse = match content_type {
        Some(ct) => ct.trim_start().starts_with("text/event-stream"),
        None => !matches!(
            body.iter().find(|b| !b.is_ascii_whitespace()),
            Some(b'{' | b'[')
        ),
    };
    let mut out = Vec::new();
    if sse {
        for data in sse_data(body)? {
            push_json(&mut out, data.as_bytes())?;
        }
    } else {
        push_json(&mut out, body)?;
    }
    Ok(out)
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
/// space after `data:` removed; CRLF, LF or CR line ends).
pub fn sse_data(body: &[u8]) -> Result<Vec<String>, String> {
    let text = std::str::from_utf8(body).map_err(|e| format!("SSE body is not UTF-8: {e}"))?;
    let mut events = Vec::new();
    let mut data: Option<String> = None;
    let mut finish = |data: &mut Option<String>| {
        if let Some(d) = data.take() {
            if !d.is_empty() {
                events.push(d);
            }
        }
    };
    let text = text.replace("\r\n", "\n");
    for line in text.split(['\n', '\r']) {
        if line.is_empty() {
            finish(&mut data);
            continue;
        }
        if let Some(rest) = line.strip_prefix("data") {
            let value = match rest.strip_prefix(':') {
                Some(v) => v.strip_prefix(' ').unwrap_or(v),
                None if rest.is_empty() => "",
                None => continue,
            };
            match data.as_mut() {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => data = Some(value.to_owned()),
            }
        }
    }
    finish(&mut data);
    Ok(events)
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
    }
}
