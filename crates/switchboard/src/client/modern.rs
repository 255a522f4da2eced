//! The 2026-07-28 ("modern") era of the client: per-request `_meta`, the
//! `resultType` check, multi round-trip requests (MRTR) answered with the client's
//! sampling / elicitation / roots handlers, and the validation of `x-mcp-header`
//! annotations of tools.
//!
//! Sources: MCP 2026-07-28, "Base protocol → Lifecycle" (every request carries
//! `io.modelcontextprotocol/protocolVersion`, `clientCapabilities`, `clientInfo` in
//! `params._meta`), "Multi round-trip requests" (spec notes §5.5) and "Transports →
//! Streamable HTTP → Custom headers" (§5.4).
//!
//! **How input requests reach the handlers.** The handlers take a
//! [`HandlerContext`], which only the peer's driver makes for an incoming request.
//! So each `inputRequests[k]` is sent as a real JSON-RPC request over a private
//! in-memory loop (`memory::pair`, two peers): the answering end runs the same
//! dispatch as legacy server→client requests, with the same concurrency limit, and
//! dropping the outer call cancels the handler (the loop sends
//! `notifications/cancelled`). The loop never touches the server's transport.
//!
//! This module must not know about bytes, HTTP or processes (the transport), nor
//! about ids and deadlines beyond what the peer offers.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use switchboard_protocol::jsonrpc::Request;
use switchboard_protocol::lifecycle::{check_modern_send, modern_request_meta, LifecycleError};
use switchboard_protocol::types::{
    meta, ClientCapabilities, DiscoverResult, Implementation, InputRequest, InputRequests,
    InputResponse, InputResponses, LoggingLevel, ResultType, Tool,
};
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::{memory, TransportConfig};

use super::{dispatch_server_request, ClientOptions};
use crate::error::Error;
use crate::peer::{self, Handler, HandlerContext, HandlerFuture, Peer, PeerConfig, RequestOptions};

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What a modern session knows: the revision in use, the server's
/// `server/discover` answer, and what every request declares about us.
pub(crate) struct ModernState {
    version: Mutex<ProtocolVersion>,
    pub(crate) discover: DiscoverResult,
    pub(crate) server_info: Implementation,
    capabilities: ClientCapabilities,
    client_info: Implementation,
    log_level: Mutex<Option<LoggingLevel>>,
    max_rounds: usize,
    input: InputLoop,
}

impl std::fmt::Debug for ModernState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModernState")
            .field("version", &self.version())
            .field("server_info", &self.server_info)
            .finish()
    }
}

/// The server's `serverInfo` from a result's `_meta`, if present and well formed.
pub(crate) fn server_info_of(discover: &DiscoverResult) -> Option<Implementation> {
    let v = discover.meta.as_ref()?.get(meta::SERVER_INFO)?;
    serde_json::from_value(v.clone()).ok()
}

impl ModernState {
    pub(crate) fn new(
        version: ProtocolVersion,
        discover: DiscoverResult,
        options: &ClientOptions,
    ) -> Self {
        let server_info =
            server_info_of(&discover).unwrap_or_else(|| Implementation::new("unknown", ""));
        ModernState {
            version: Mutex::new(version),
            discover,
            server_info,
            capabilities: options.capabilities(),
            client_info: options.client_info.clone(),
            log_level: Mutex::new(None),
            max_rounds: options.max_input_rounds,
            input: InputLoop::new(options),
        }
    }

    pub(crate) fn version(&self) -> ProtocolVersion {
        *lock(&self.version)
    }

    pub(crate) fn set_version(&self, v: ProtocolVersion) {
        *lock(&self.version) = v;
    }

    pub(crate) fn set_log_level(&self, level: LoggingLevel) {
        *lock(&self.log_level) = Some(level);
    }

    /// May this request be sent? (`check_modern_send` with the server's discovered
    /// capabilities.)
    pub(crate) fn check(&self, method: &str, params: Option<&RawValue>) -> Result<(), Error> {
        check_modern_send(
            self.version(),
            method,
            params,
            &self.capabilities,
            Some(&self.discover.capabilities),
        )
        .map_err(|e| Error::lifecycle(e).with_method(method))
    }

    /// `params` with the per-request `_meta` merged in, and for an MRTR retry
    /// `inputResponses` and `requestState` set (or removed, so a stale value is
    /// never resent).
    pub(crate) fn params(
        &self,
        method: &str,
        params: Option<&RawValue>,
        retry: Option<&(InputResponses, Option<String>)>,
    ) -> Result<Box<RawValue>, Error> {
        request_params(
            self.version(),
            &self.capabilities,
            &self.client_info,
            *lock(&self.log_level),
            params,
            retry,
        )
        .map_err(|e| e.with_method(method))
    }

    /// The most MRTR rounds one call may take.
    pub(crate) fn max_rounds(&self) -> usize {
        self.max_rounds
    }

    /// Answers the server's `inputRequests` with the configured handlers.
    pub(crate) async fn answer(&self, requests: InputRequests) -> Result<InputResponses, Error> {
        self.input.answer(requests, &self.capabilities).await
    }
}

/// Builds the params of a modern request (see [`ModernState::params`]).
pub(crate) fn request_params(
    version: ProtocolVersion,
    capabilities: &ClientCapabilities,
    client_info: &Implementation,
    log_level: Option<LoggingLevel>,
    params: Option<&RawValue>,
    retry: Option<&(InputResponses, Option<String>)>,
) -> Result<Box<RawValue>, Error> {
    let mut obj: Map<String, Value> = match params {
        Some(p) => match serde_json::from_str::<Value>(p.get()).map_err(Error::encode)? {
            Value::Object(m) => m,
            _ => {
                return Err(Error::encode(serde::de::Error::custom(
                    "a 2026-07-28 request's params must be a JSON object",
                )))
            }
        },
        None => Map::new(),
    };
    let ours = modern_request_meta(version, capabilities, Some(client_info), log_level);
    let mut m = match obj.remove("_meta") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    for (k, v) in ours {
        m.insert(k, v);
    }
    obj.insert("_meta".into(), Value::Object(m));
    obj.remove("inputResponses");
    obj.remove("requestState");
    if let Some((responses, state)) = retry {
        obj.insert(
            "inputResponses".into(),
            serde_json::to_value(responses).map_err(Error::encode)?,
        );
        if let Some(s) = state {
            obj.insert("requestState".into(), Value::String(s.clone()));
        }
    }
    serde_json::value::to_raw_value(&obj).map_err(Error::encode)
}

/// What a modern result is, by its `resultType` (missing: complete, as from a
/// legacy server; spec notes §2).
#[derive(Debug)]
pub(crate) enum Outcome {
    Complete,
    InputRequired(switchboard_protocol::types::InputRequiredResult),
}

/// Reads `resultType`; an unknown value is an error (the client MUST reject it).
pub(crate) fn outcome(method: &str, raw: &RawValue) -> Result<Outcome, Error> {
    #[derive(serde::Deserialize)]
    struct Peek {
        #[serde(default, rename = "resultType")]
        result_type: Option<ResultType>,
    }
    let peek: Peek =
        serde_json::from_str(raw.get()).map_err(|e| Error::decode(e).with_method(method))?;
    match peek.result_type {
        None | Some(ResultType::Complete) => Ok(Outcome::Complete),
        Some(ResultType::InputRequired) => serde_json::from_str(raw.get())
            .map(Outcome::InputRequired)
            .map_err(|e| Error::decode(e).with_method(method)),
        Some(other) => Err(Error::decode(serde::de::Error::custom(format!(
            "unknown resultType {other:?}"
        )))
        .with_method(method)),
    }
}

// ---------------------------------------------------------------------------
// The input loop
// ---------------------------------------------------------------------------

/// The asking end refuses whatever the answering end might send.
struct Refuse;

impl Handler for Refuse {
    fn request(&self, request: Request, _cx: HandlerContext) -> HandlerFuture {
        let e = peer::method_not_found(&request.method);
        Box::pin(async move { Err(e) })
    }
}

/// The answering end: the client's handlers.
struct Answer {
    options: ClientOptions,
}

impl Handler for Answer {
    fn request(&self, request: Request, cx: HandlerContext) -> HandlerFuture {
        dispatch_server_request(&self.options, &request, cx)
    }
}

/// Two peers joined in memory; see the module docs.
struct InputLoop {
    asker: Peer,
    _answerer: Peer,
}

impl InputLoop {
    fn new(options: &ClientOptions) -> Self {
        let (a, b) = memory::pair(&TransportConfig::default());
        let config = PeerConfig {
            name: format!("{} (input requests)", options.client_info.name),
            default_timeout: options.max_timeout,
            max_timeout: options.max_timeout,
            max_pending: options.max_pending,
            max_concurrent_handlers: options.max_concurrent_handlers,
            // A server that closed our input has normally ended: the client's
            // handlers (sampling, elicitation, roots) are cancelled at once.
            drain_on_close: std::time::Duration::ZERO,
        };
        let (asker, d1) = peer::connect(a, config.clone(), Arc::new(Refuse));
        let (answerer, d2) = peer::connect(
            b,
            config,
            Arc::new(Answer {
                options: options.clone(),
            }),
        );
        tokio::spawn(d1.run());
        tokio::spawn(d2.run());
        InputLoop {
            asker,
            _answerer: answerer,
        }
    }

    /// Fulfils each input request with the matching handler. A request for a
    /// capability this client did not declare, or an unknown method, is refused
    /// locally (the server MUST NOT ask for it); a handler's error fails the call.
    async fn answer(
        &self,
        requests: InputRequests,
        capabilities: &ClientCapabilities,
    ) -> Result<InputResponses, Error> {
        let mut out = BTreeMap::new();
        for (key, request) in requests {
            let declared = match &request {
                InputRequest::CreateMessage { .. } => capabilities.sampling.is_some(),
                InputRequest::Elicit { .. } => capabilities.elicitation.is_some(),
                InputRequest::ListRoots { .. } => capabilities.roots.is_some(),
                InputRequest::Other { .. } => false,
            };
            let method = request.method().to_owned();
            if !declared {
                return Err(
                    Error::lifecycle(LifecycleError::MissingRequiredClientCapability {
                        method: method.clone(),
                        capability: match &request {
                            InputRequest::CreateMessage { .. } => {
                                switchboard_protocol::lifecycle::ClientCapability::Sampling
                            }
                            InputRequest::Elicit { .. } => {
                                switchboard_protocol::lifecycle::ClientCapability::ElicitationForm
                            }
                            _ => switchboard_protocol::lifecycle::ClientCapability::Roots,
                        },
                    })
                    .with_method(&method),
                );
            }
            let params = serde_json::to_value(&request)
                .map_err(Error::decode)?
                .get("params")
                .map(serde_json::value::to_raw_value)
                .transpose()
                .map_err(Error::decode)?;
            let raw = self
                .asker
                .request(&method, params, RequestOptions::default())
                .await?;
            let value: Value = serde_json::from_str(raw.get()).map_err(Error::decode)?;
            let response = InputResponse::for_request(&request, value)
                .map_err(|e| Error::decode(e).with_method(&method))?;
            out.insert(key, response);
        }
        Ok(out)
    }
}

// ---------------------------------------------------------------------------
// x-mcp-header
// ---------------------------------------------------------------------------

/// RFC 9110 `tchar`.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

const FORBIDDEN_PARENTS: &[&str] = &[
    "items",
    "prefixItems",
    "additionalProperties",
    "patternProperties",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "$defs",
    "definitions",
    "dependentSchemas",
    "contains",
];

/// Finds every `x-mcp-header` below `schema`; `path_ok` says whether the current
/// schema is reached from the root through `properties` only.
fn collect(
    schema: &Value,
    path_ok: bool,
    top: bool,
    arg: Option<&str>,
    found: &mut Vec<(Option<String>, String, bool, Value)>,
) {
    let Value::Object(obj) = schema else { return };
    if let Some(h) = obj.get("x-mcp-header") {
        let ok_path = path_ok && !top;
        found.push((
            arg.map(str::to_owned),
            h.as_str().unwrap_or("").to_owned(),
            ok_path && h.is_string(),
            obj.get("type").cloned().unwrap_or(Value::Null),
        ));
    }
    for (k, v) in obj {
        if k == "properties" {
            if let Value::Object(props) = v {
                for (name, sub) in props {
                    // Only top-level arguments can be mirrored as headers here.
                    let a = if top { Some(name.as_str()) } else { None };
                    collect(sub, path_ok, false, a.or(arg), found);
                }
            }
        } else if FORBIDDEN_PARENTS.contains(&k.as_str()) || k == "$ref" {
            match v {
                Value::Array(items) => {
                    for i in items {
                        collect(i, false, false, arg, found);
                    }
                }
                Value::Object(m)
                    if k == "patternProperties"
                        || k == "$defs"
                        || k == "definitions"
                        || k == "dependentSchemas" =>
                {
                    for sub in m.values() {
                        collect(sub, false, false, arg, found);
                    }
                }
                other => collect(other, false, false, arg, found),
            }
        }
    }
}

/// The `Mcp-Param-*` headers of `tool` (argument → header name), or why the tool
/// must be dropped (MCP 2026-07-28, "Custom headers": a non-empty RFC 9110 token,
/// unique ignoring case, only on `string` / `integer` / `boolean` properties,
/// reachable through `properties` only).
pub(crate) fn tool_headers(tool: &Tool) -> Result<Vec<(String, String)>, String> {
    let schema = Value::Object(tool.input_schema.clone());
    let mut found = Vec::new();
    collect(&schema, true, true, None, &mut found);
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (arg, header, path_ok, ty) in found {
        if !path_ok {
            return Err(format!(
                "x-mcp-header {header:?} is not reachable through `properties` only"
            ));
        }
        if !is_token(&header) {
            return Err(format!("x-mcp-header {header:?} is not an HTTP token"));
        }
        if !seen.insert(header.to_ascii_lowercase()) {
            return Err(format!("x-mcp-header {header:?} is used twice"));
        }
        if !matches!(ty.as_str(), Some("string" | "integer" | "boolean")) {
            return Err(format!(
                "x-mcp-header {header:?} is on a property of type {ty}, not string, integer or boolean"
            ));
        }
        match arg {
            Some(a) => out.push((a, header)),
            None => {
                tracing::warn!(tool = %tool.name, %header, "x-mcp-header on a nested property is not mirrored")
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(schema: Value) -> Tool {
        serde_json::from_value(json!({"name": "t", "inputSchema": schema})).unwrap()
    }

    #[test]
    fn valid_annotations_become_headers() {
        let t = tool(json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "Count"},
            "plain": {"type": "string"}
        }}));
        let mut h = tool_headers(&t).unwrap();
        h.sort();
        assert_eq!(
            h,
            vec![
                ("n".to_owned(), "Count".to_owned()),
                ("region".to_owned(), "Region".to_owned())
            ]
        );
    }

    #[test]
    fn invalid_annotations_drop_the_tool() {
        for schema in [
            json!({"type": "object", "properties": {"x": {"type": "number", "x-mcp-header": "X"}}}),
            json!({"type": "object", "properties": {"x": {"type": "string", "x-mcp-header": "a b"}}}),
            json!({"type": "object", "properties": {"x": {"type": "string", "x-mcp-header": ""}}}),
            json!({"type": "object", "properties": {
                "x": {"type": "string", "x-mcp-header": "Dup"},
                "y": {"type": "string", "x-mcp-header": "dup"}}}),
            json!({"type": "object", "properties": {"x": {"type": "array",
                "items": {"type": "string", "x-mcp-header": "Item"}}}}),
            json!({"type": "object", "properties": {"x": {"anyOf": [
                {"type": "string", "x-mcp-header": "Any"}]}}}),
        ] {
            assert!(tool_headers(&tool(schema.clone())).is_err(), "{schema}");
        }
    }

    #[test]
    fn meta_is_merged_and_stale_mrtr_fields_are_removed() {
        let caps = ClientCapabilities::default();
        let info = Implementation::new("c", "1");
        let p = serde_json::value::to_raw_value(&json!({
            "name": "x", "_meta": {"progressToken": 3}, "requestState": "old"
        }))
        .unwrap();
        let out = request_params(
            ProtocolVersion::V2026_07_28,
            &caps,
            &info,
            Some(LoggingLevel::Info),
            Some(&p),
            None,
        )
        .unwrap();
        let v: Value = serde_json::from_str(out.get()).unwrap();
        assert_eq!(v["name"], "x");
        assert_eq!(v["_meta"]["progressToken"], 3);
        assert_eq!(v["_meta"][meta::PROTOCOL_VERSION], "2026-07-28");
        assert_eq!(v["_meta"][meta::CLIENT_CAPABILITIES], json!({}));
        assert_eq!(v["_meta"][meta::CLIENT_INFO]["name"], "c");
        assert_eq!(v["_meta"][meta::LOG_LEVEL], "info");
        assert!(v.get("requestState").is_none());
    }

    #[test]
    fn unknown_result_types_are_rejected() {
        let raw = RawValue::from_string(r#"{"resultType":"weird"}"#.into()).unwrap();
        assert!(outcome("tools/call", &raw).unwrap_err().is_decode());
        let raw = RawValue::from_string(r#"{"content":[]}"#.into()).unwrap();
        assert!(matches!(outcome("tools/call", &raw), Ok(Outcome::Complete)));
        let raw =
            RawValue::from_string(r#"{"resultType":"input_required","requestState":"s"}"#.into())
                .unwrap();
        assert!(matches!(
            outcome("tools/call", &raw),
            Ok(Outcome::InputRequired(r)) if r.request_state.as_deref() == Some("s")
        ));
    }
}
