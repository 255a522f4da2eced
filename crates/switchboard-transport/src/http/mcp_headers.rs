//! The request-header checks of a stateless 2026-07-28 exchange, shared by every
//! server of one (the library's `Server`, the bridge): MCP 2026-07-28 "Transports →
//! Streamable HTTP → Request headers", "Header value encoding", "Server
//! validation" (REVISIONS.md §5.4).
//!
//! ```text
//! check_exchange_headers   in the order of the validation table:
//!   -32601  a method removed in 2026-07-28 (initialize, ping, ...)
//!   -32602  `_meta` or its protocol version missing or malformed
//!   -32020  MCP-Protocol-Version ≠ _meta's version; Mcp-Method ≠ method;
//!           Mcp-Name ≠ params.name (tools/call, prompts/get) or params.uri
//!           (resources/read); each missing or malformed
//!   -32022 / -32602 / -32601 / ...  the rest of `check_modern_request`
//! check_param_headers      tools/call only, after the above, with the called
//!   -32020  tool's `x-mcp-header` pairs (`tool_header_params` of its inputSchema):
//!           every argument that is present and not null must be mirrored in
//!           Mcp-Param-{Name}, no such header for an absent or null argument
//! ```
//!
//! Values are compared after trimming spaces and tabs (RFC 9110 §5.5) and
//! decoding `=?base64?<standard base64, padded>?=` (a value without both the
//! prefix and the suffix is literal); integers compare numerically, booleans as
//! `true`/`false`. Header names are case-insensitive, values case-sensitive.
//!
//! This module knows the header rules only: not what a tool does, nor where its
//! schema comes from (the caller looks the tool up, in its own registry or in a
//! child's `tools/list`), nor HTTP statuses ([`super::stateless::status_for_error`]
//! maps -32020 to 400).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use http::HeaderMap;
use serde_json::{Map, Value};
use switchboard_protocol::jsonrpc::{code, ErrorObject, Request};
use switchboard_protocol::lifecycle::{check_modern_request, removed_in_modern, RequestContext};
use switchboard_protocol::types::{meta, ServerCapabilities};
use switchboard_protocol::version::Supported;

fn mismatch(message: String) -> ErrorObject {
    ErrorObject::new(code::HEADER_MISMATCH, message)
}

/// A header's value as the spec encodes it: `None` when absent; `Some(None)`
/// when it cannot be decoded (not visible ASCII, bad base64, not UTF-8).
fn header_value(headers: &HeaderMap, name: &str) -> Option<Option<String>> {
    let raw = headers.get(name)?;
    Some(raw.to_str().ok().and_then(decode_header_value))
}

/// Decodes one header value in the 2026-07-28 encoding ("Header value
/// encoding"): trimmed of spaces and tabs, then `=?base64?…?=` decoded as
/// standard, padded base64 of UTF-8; any other text is taken literally.
/// `None`: the base64 or the UTF-8 inside is invalid.
pub fn decode_header_value(text: &str) -> Option<String> {
    let text = text.trim_matches([' ', '\t']);
    match text
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    {
        Some(b64) => {
            let bytes = STANDARD.decode(b64).ok()?;
            String::from_utf8(bytes).ok()
        }
        None => Some(text.to_owned()),
    }
}

/// `_meta["io.modelcontextprotocol/protocolVersion"]` of `params`, if a string.
fn meta_version(params: Option<&Map<String, Value>>) -> Option<&str> {
    params?.get("_meta")?.get(meta::PROTOCOL_VERSION)?.as_str()
}

/// Whether an argument's value matches a header's decoded text.
fn value_matches(value: &Value, text: &str) -> bool {
    match value {
        Value::String(s) => s == text,
        Value::Bool(b) => text == if *b { "true" } else { "false" },
        Value::Number(n) => match (n.as_i64(), text.parse::<i64>()) {
            (Some(a), Ok(b)) => a == b,
            _ => n.to_string() == text,
        },
        _ => false,
    }
}

/// The `x-mcp-header` annotations of a tool's `inputSchema`, as (argument name,
/// header name suffix) pairs: top-level `properties` only (2026-07-28
/// "Valid `x-mcp-header`": annotations elsewhere are not reachable through
/// `properties` alone and are not mirrored). Empty when there are none.
pub fn tool_header_params(input_schema: &Map<String, Value>) -> Vec<(String, String)> {
    let Some(Value::Object(props)) = input_schema.get("properties") else {
        return Vec::new();
    };
    props
        .iter()
        .filter_map(|(name, p)| {
            p.get("x-mcp-header")
                .and_then(Value::as_str)
                .map(|h| (name.clone(), h.to_owned()))
        })
        .collect()
}

/// The checks of one 2026-07-28 HTTP request but `Mcp-Param-*` (see the module
/// documentation for the order), then `check_modern_request` against the
/// server's `supported` revisions and `capabilities`.
///
/// `params`: the request's params, decoded (`None` when absent or not an
/// object). Ok: the request's context (`_meta`'s client capabilities, log level,
/// ...). Errors: -32020 (`HeaderMismatch`) for a header, else the
/// [`LifecycleError`](switchboard_protocol::lifecycle::LifecycleError)'s error
/// (-32601, -32602, -32022, ...).
pub fn check_exchange_headers(
    supported: &Supported,
    capabilities: &ServerCapabilities,
    request: &Request,
    params: Option<&Map<String, Value>>,
    headers: &HeaderMap,
) -> Result<RequestContext, ErrorObject> {
    let method = request.method.as_str();
    let raw = request.params.as_deref();
    if removed_in_modern(method) {
        return check_modern_request(supported, capabilities, method, raw)
            .map_err(ErrorObject::from);
    }
    let Some(body_version) = meta_version(params) else {
        // -32602: `_meta` or its protocol version is missing or malformed.
        return check_modern_request(supported, capabilities, method, raw)
            .map_err(ErrorObject::from);
    };
    match header_value(headers, "mcp-protocol-version") {
        Some(Some(v)) if v == body_version => {}
        Some(Some(v)) => {
            return Err(mismatch(format!(
                "MCP-Protocol-Version {v:?} does not match _meta protocolVersion {body_version:?}"
            )))
        }
        _ => {
            return Err(mismatch(
                "MCP-Protocol-Version header missing or malformed".into(),
            ))
        }
    }
    match header_value(headers, "mcp-method") {
        Some(Some(m)) if m == method => {}
        Some(Some(m)) => {
            return Err(mismatch(format!(
                "Mcp-Method {m:?} does not match the body's method {method:?}"
            )))
        }
        _ => return Err(mismatch("Mcp-Method header missing or malformed".into())),
    }
    let named = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    };
    if let Some(member) = named {
        let body = params.and_then(|p| p.get(member)).and_then(Value::as_str);
        match (header_value(headers, "mcp-name"), body) {
            (Some(Some(h)), Some(b)) if h == b => {}
            (Some(Some(h)), Some(b)) => {
                return Err(mismatch(format!(
                    "Mcp-Name {h:?} does not match params.{member} {b:?}"
                )))
            }
            (Some(Some(h)), None) => {
                return Err(mismatch(format!(
                    "Mcp-Name {h:?} given, but the body has no params.{member}"
                )))
            }
            _ => return Err(mismatch("Mcp-Name header missing or malformed".into())),
        }
    }
    check_modern_request(supported, capabilities, method, raw).map_err(ErrorObject::from)
}

/// The `Mcp-Param-*` check of a `tools/call` (run after
/// [`check_exchange_headers`]): `tool_params` are the called tool's
/// (argument, header) pairs ([`tool_header_params`] of its `inputSchema`;
/// empty for an unknown tool, which is the dispatch's -32602, not a header
/// error); `params` the request's params, whose `arguments` are compared.
///
/// Errors: -32020 (`HeaderMismatch`) when a present, non-null argument has no
/// `Mcp-Param-{Name}` header, a header that does not match it or cannot be
/// decoded, or a header for an absent or null argument.
pub fn check_param_headers(
    tool_params: &[(String, String)],
    params: Option<&Map<String, Value>>,
    headers: &HeaderMap,
) -> Result<(), ErrorObject> {
    let args = params
        .and_then(|p| p.get("arguments"))
        .and_then(Value::as_object);
    for (property, header) in tool_params {
        let value = args.and_then(|a| a.get(property)).filter(|v| !v.is_null());
        let header_name = format!("mcp-param-{header}");
        match (value, header_value(headers, &header_name)) {
            (None, None) => {}
            (Some(v), Some(Some(text))) if value_matches(v, &text) => {}
            (Some(v), Some(Some(text))) => {
                return Err(mismatch(format!(
                    "Mcp-Param-{header} {text:?} does not match argument {property} = {v}"
                )))
            }
            (Some(_), None) => {
                return Err(mismatch(format!(
                    "Mcp-Param-{header} is required: argument {property} is present"
                )))
            }
            (None, Some(_)) => {
                return Err(mismatch(format!(
                    "Mcp-Param-{header} sent but argument {property} is absent or null"
                )))
            }
            (Some(_), Some(None)) => {
                return Err(mismatch(format!(
                    "Mcp-Param-{header} is not a valid header value"
                )))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use switchboard_protocol::jsonrpc::Id;
    use switchboard_protocol::ProtocolVersion;

    #[test]
    fn header_values_decode() {
        assert_eq!(decode_header_value("  plain\t").unwrap(), "plain");
        assert_eq!(decode_header_value("=?base64?w6l0w6k=?=").unwrap(), "été");
        assert!(decode_header_value("=?base64?***?=").is_none());
        // Unpadded: refused (the conformance suite's "invalid padding" case).
        assert!(decode_header_value("=?base64?SGVsbG8?=").is_none());
        // Without the suffix: literal.
        assert_eq!(
            decode_header_value("=?base64?SGVsbG8=").unwrap(),
            "=?base64?SGVsbG8="
        );
    }

    #[test]
    fn arguments_compare_with_their_encoding() {
        assert!(value_matches(&json!("a b"), "a b"));
        assert!(value_matches(&json!(42), "42"));
        assert!(value_matches(&json!(42), "042"));
        assert!(!value_matches(&json!(42), "43"));
        assert!(value_matches(&json!(true), "true"));
        assert!(!value_matches(&json!(false), "true"));
    }

    #[test]
    fn header_params_are_top_level_properties_only() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "nested": {"type": "object", "properties": {"x": {"type": "string", "x-mcp-header": "X"}}},
            "plain": {"type": "string"}}});
        assert_eq!(
            tool_header_params(schema.as_object().unwrap()),
            vec![("region".to_owned(), "Region".to_owned())]
        );
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn standard_headers_must_match_the_body() {
        let supported = Supported::new(ProtocolVersion::ALL).unwrap();
        let caps: ServerCapabilities = serde_json::from_value(json!({"tools": {}})).unwrap();
        let params = json!({"name": "echo", "arguments": {}, "_meta": {
            meta::PROTOCOL_VERSION: "2026-07-28",
            meta::CLIENT_CAPABILITIES: {},
        }});
        let r = Request::new(Id::from(1u64), "tools/call", &params).unwrap();
        let p = params.as_object();
        let check = |h: &HeaderMap| check_exchange_headers(&supported, &caps, &r, p, h);
        let mut h = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", " echo "),
        ]);
        assert!(check(&h).is_ok());
        h.insert("mcp-name", "other".parse().unwrap());
        assert_eq!(check(&h).unwrap_err().code, code::HEADER_MISMATCH);
        h.remove("mcp-name");
        assert!(check(&h).unwrap_err().message.contains("Mcp-Name"));
        h.insert("mcp-name", "echo".parse().unwrap());
        h.insert("mcp-method", "tools/list".parse().unwrap());
        assert!(check(&h).unwrap_err().message.contains("Mcp-Method"));
        h.insert("mcp-method", "tools/call".parse().unwrap());
        h.remove("mcp-protocol-version");
        assert!(check(&h)
            .unwrap_err()
            .message
            .contains("MCP-Protocol-Version"));
    }

    #[test]
    fn param_headers_mirror_present_arguments() {
        let pairs = vec![
            ("region".to_owned(), "Region".to_owned()),
            ("n".to_owned(), "Count".to_owned()),
        ];
        let params = json!({"name": "t", "arguments": {"region": "été", "n": 3}});
        let p = params.as_object();
        let ok = headers(&[
            ("mcp-param-region", "=?base64?w6l0w6k=?="),
            ("mcp-param-count", "3"),
        ]);
        assert!(check_param_headers(&pairs, p, &ok).is_ok());
        let wrong = headers(&[("mcp-param-region", "eu"), ("mcp-param-count", "3")]);
        assert_eq!(
            check_param_headers(&pairs, p, &wrong).unwrap_err().code,
            code::HEADER_MISMATCH
        );
        let missing = headers(&[("mcp-param-count", "3")]);
        assert!(check_param_headers(&pairs, p, &missing)
            .unwrap_err()
            .message
            .contains("required"));
        let absent = json!({"name": "t", "arguments": {"n": null}});
        let extra = headers(&[("mcp-param-count", "3")]);
        assert!(check_param_headers(&pairs, absent.as_object(), &extra).is_err());
        assert!(check_param_headers(&pairs, absent.as_object(), &HeaderMap::new()).is_ok());
        // An unknown tool has no pairs: nothing to check here.
        assert!(check_param_headers(&[], p, &HeaderMap::new()).is_ok());
    }
}
