//! The one exchange the benchmark drives: `tools/call` of the tool `echo` with
//! `{"text": T}`, answered (MCP 2025-11-25, "Server Features → Tools → Calling
//! Tools") by a `CallToolResult` whose only content block is
//! `{"type":"text","text":T}`.
//!
//! Knows the JSON-RPC 2.0 envelope and the MCP shapes of `initialize` and
//! `tools/call`; must not know transports (HTTP or stdio).

use serde_json::{json, Value};

/// The protocol revision the load generator asks for in `initialize`: the newest
/// stateful one (2025-11-25), which every bridge under test speaks.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// The revisions [`negotiate`] accepts (2024-11-05 to 2025-11-25, the
/// `initialize`-based ones; MCP 2025-11-25, "Lifecycle → Version Negotiation").
pub const SUPPORTED_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The version a server answers to an `initialize` that asked for `requested`:
/// the same one when supported, else the newest supported (MCP 2025-11-25,
/// "Lifecycle → Version Negotiation").
pub fn negotiate(requested: Option<&str>) -> &'static str {
    match requested {
        Some(r) => SUPPORTED_VERSIONS
            .iter()
            .find(|v| **v == r)
            .copied()
            .unwrap_or(PROTOCOL_VERSION),
        None => PROTOCOL_VERSION,
    }
}

/// The `initialize` request (JSON-RPC id `id`) of a client named
/// `switchboard-loadgen`, asking for [`PROTOCOL_VERSION`], as one JSON text.
pub fn initialize_request(id: u64) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "switchboard-loadgen", "version": env!("CARGO_PKG_VERSION")}
        }
    })
    .to_string()
}

/// The `notifications/initialized` notification, as one JSON text.
pub fn initialized_notification() -> &'static str {
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
}

/// The `tools/call` request of `echo` with argument `text` (JSON-RPC id `id`), as
/// one JSON text.
pub fn call_request(id: u64, text: &str) -> String {
    call_tool_request("echo", id, text)
}

/// The `tools/call` request of the tool `tool` (an echo tool under another name,
/// e.g. a gateway's `a__echo`) with argument `text` (JSON-RPC id `id`), as one
/// JSON text.
pub fn call_tool_request(tool: &str, id: u64, text: &str) -> String {
    let tool = serde_json::to_string(tool).expect("a string serializes");
    let text = serde_json::to_string(text).expect("a string serializes");
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":{tool},"arguments":{{"text":{text}}}}}}}"#
    )
}

/// The text a call of session `session` (0-based) with counter `counter` sends:
/// `s<session>-<counter>`, unique within a run, so a reply carrying another
/// session's (or another call's) content is caught by [`check_call_reply`].
pub fn call_text(session: usize, counter: u64) -> String {
    format!("s{session}-{counter}")
}

/// Checks the JSON text of one message of a `tools/call` reply against the
/// request: `Ok(false)` when the message is not a response (no `id`: a
/// notification the server sent first), `Ok(true)` when it is the response and
/// [`check_call_reply`] would accept it, an error when it is any other response.
/// A JSON array (batch) is searched for its first message with an `id`.
///
/// Reads the message into borrowed typed fields (nothing copied for the one text
/// block); whatever that cannot read is parsed as a `Value` and checked by
/// [`check_call_reply`], so the verdicts and the errors are the same.
pub fn check_call_reply_text(json: &str, id: u64, text: &str) -> Result<bool, String> {
    #[derive(serde::Deserialize)]
    struct Reply<'a> {
        #[serde(borrow, default)]
        id: Option<&'a serde_json::value::RawValue>,
        #[serde(borrow, default)]
        result: Option<CallResult<'a>>,
        #[serde(borrow, default)]
        error: Option<&'a serde_json::value::RawValue>,
    }
    #[derive(serde::Deserialize)]
    struct CallResult<'a> {
        #[serde(borrow)]
        content: Vec<Block<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Block<'a> {
        #[serde(rename = "type", borrow)]
        kind: std::borrow::Cow<'a, str>,
        #[serde(borrow, default)]
        text: Option<std::borrow::Cow<'a, str>>,
    }
    if let Ok(reply) = serde_json::from_str::<Reply<'_>>(json) {
        let Some(got) = reply.id else {
            return Ok(false);
        };
        if reply.error.is_none() && got.get().parse::<u64>() == Ok(id) {
            if let Some(CallResult { content }) = &reply.result {
                if let [Block {
                    kind,
                    text: Some(t),
                }] = content.as_slice()
                {
                    if kind == "text" && t == text {
                        return Ok(true);
                    }
                }
            }
        }
    }
    // Not the expected reply, or not readable that way: the exact verdict.
    let value: Value =
        serde_json::from_str(json).map_err(|e| format!("reply is not JSON ({e}): {json}"))?;
    let message = match &value {
        Value::Array(items) => match items.iter().find(|m| m.get("id").is_some()) {
            Some(m) => m,
            None => return Ok(false),
        },
        m if m.get("id").is_none() => return Ok(false),
        m => m,
    };
    check_call_reply(message, id, text).map(|()| true)
}

/// The `CallToolResult` of the echo tool for `text` (what the upstreams send).
pub fn call_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

/// Checks the reply `message` to the call with JSON-RPC id `id` and text `text`:
/// Ok when it is a response with that id whose result's content is exactly one
/// text block carrying exactly `text`; Err with a short description otherwise (an
/// error response, another id, or other content).
pub fn check_call_reply(message: &Value, id: u64, text: &str) -> Result<(), String> {
    if message.get("id").and_then(Value::as_u64) != Some(id) {
        return Err(format!("reply id {:?}, expected {id}", message.get("id")));
    }
    if let Some(error) = message.get("error") {
        return Err(format!("error response: {error}"));
    }
    let content = message
        .pointer("/result/content")
        .and_then(Value::as_array)
        .ok_or_else(|| "reply has no result.content".to_owned())?;
    match content.as_slice() {
        [block] if block.get("type").and_then(Value::as_str) == Some("text") => {
            match block.get("text").and_then(Value::as_str) {
                Some(t) if t == text => Ok(()),
                other => Err(format!("reply text {other:?}, expected {text:?}")),
            }
        }
        _ => Err(format!(
            "reply content is not one text block: {}",
            Value::from(content.clone())
        )),
    }
}

/// The `initialize` result (protocol version `version`, capability `tools`) that
/// the echo servers of this crate send.
pub fn initialize_result(version: &str, server_name: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": server_name, "version": env!("CARGO_PKG_VERSION")}
    })
}

/// The `tools/list` result of the echo servers: one tool `echo` taking a string
/// `text`.
pub fn tools_list_result() -> Value {
    json!({
        "tools": [{
            "name": "echo",
            "description": "Returns its text argument.",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"]
            }
        }]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_of_another_tool_names_it() {
        let got: Value = serde_json::from_str(&call_tool_request("a__echo", 3, "x")).unwrap();
        assert_eq!(
            got,
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                   "params": {"name": "a__echo", "arguments": {"text": "x"}}})
        );
    }

    #[test]
    fn a_call_request_is_the_json_it_says() {
        let got: Value = serde_json::from_str(&call_request(9, "a\"b")).unwrap();
        assert_eq!(
            got,
            json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                   "params": {"name": "echo", "arguments": {"text": "a\"b"}}})
        );
    }

    #[test]
    fn the_text_check_gives_the_value_checks_verdicts() {
        let ok = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"s1-2"}]}}"#;
        assert_eq!(check_call_reply_text(ok, 7, "s1-2"), Ok(true));
        assert!(check_call_reply_text(ok, 8, "s1-2").is_err(), "another id");
        assert!(
            check_call_reply_text(ok, 7, "s2-2").is_err(),
            "another text"
        );
        let escaped = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"s\u00311-2"}]}}"#;
        assert_eq!(check_call_reply_text(escaped, 7, "s11-2"), Ok(true));
        let two = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a"},{"type":"text","text":"a"}]}}"#;
        assert!(check_call_reply_text(two, 7, "a").is_err(), "two blocks");
        let string_id =
            r#"{"jsonrpc":"2.0","id":"7","result":{"content":[{"type":"text","text":"a"}]}}"#;
        assert!(
            check_call_reply_text(string_id, 7, "a").is_err(),
            "a string id"
        );
        let error = r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"no"}}"#;
        assert!(check_call_reply_text(error, 7, "a")
            .unwrap_err()
            .contains("error response"));
        let note = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#;
        assert_eq!(check_call_reply_text(note, 7, "a"), Ok(false));
        let batch = format!("[{note},{ok}]");
        assert_eq!(check_call_reply_text(&batch, 7, "s1-2"), Ok(true));
        assert!(check_call_reply_text("nope", 7, "a").is_err());
    }

    #[test]
    fn a_reply_with_its_own_text_passes_and_any_other_fails() {
        let ok = json!({"jsonrpc": "2.0", "id": 7, "result": call_result("s1-2")});
        assert_eq!(check_call_reply(&ok, 7, "s1-2"), Ok(()));
        assert!(check_call_reply(&ok, 8, "s1-2").is_err(), "another id");
        assert!(
            check_call_reply(&ok, 7, "s2-2").is_err(),
            "another session's text"
        );
        let two = json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [
            {"type": "text", "text": "s1-2"}, {"type": "text", "text": "s1-2"}]}});
        assert!(check_call_reply(&two, 7, "s1-2").is_err(), "two blocks");
        let err = json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32603, "message": "x"}});
        assert!(check_call_reply(&err, 7, "s1-2").is_err());
    }

    #[test]
    fn negotiation_echoes_a_supported_version_and_falls_back_to_the_newest() {
        assert_eq!(negotiate(Some("2025-03-26")), "2025-03-26");
        assert_eq!(negotiate(Some("2099-01-01")), PROTOCOL_VERSION);
        assert_eq!(negotiate(None), PROTOCOL_VERSION);
    }
}
