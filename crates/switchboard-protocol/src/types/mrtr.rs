//! Multi round-trip requests (MRTR, 2026-07-28): how a stateless server asks the
//! client for input in the middle of a request.
//!
//! Instead of sending its own request (as 2024-11-05 to 2025-11-25 servers do), the
//! server answers with an [`InputRequiredResult`] (`resultType: "input_required"`)
//! holding `inputRequests` — keyed `elicitation/create`, `sampling/createMessage`
//! or `roots/list` requests without ids — and/or an opaque `requestState`. The
//! client fulfils them and retries the original request with a new id, adding
//! `inputResponses` (same keys → results) and echoing `requestState`
//! ([`WithInputResponses`], [`retry_request`]).
//!
//! Source: 2026-07-28, "Base protocol → Multi round-trip requests" and its schema
//! (`InputRequest`, `InputRequests`, `InputResponse`, `InputResponses`,
//! `InputRequiredResult`).
//!
//! This module holds only the wire shapes; it must not know how a client gathers
//! input or how a server protects its `requestState`.

use std::collections::BTreeMap;

use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::common::{Extra, Meta, PaginatedRequestParams};
use super::elicitation::{ElicitRequestParams, ElicitResult, ELICITATION_CREATE};
use super::roots::{ListRootsResult, ROOTS_LIST};
use super::sampling::{CreateMessageRequestParams, CreateMessageResult, SAMPLING_CREATE_MESSAGE};
use crate::jsonrpc::{Id, Request};

/// One request the server needs the client to fulfil: `{method, params}` without
/// `id` or `jsonrpc` (2026-07-28, schema `InputRequest` = `CreateMessageRequest` |
/// `ListRootsRequest` | `ElicitRequest`).
///
/// Decoding dispatches on `method`; a known method with bad params is an error, an
/// unknown method is kept in [`InputRequest::Other`]. Every variant keeps the
/// object's other members (e.g. a stray `id`) in `extra`.
#[derive(Debug, Clone, PartialEq)]
pub enum InputRequest {
    /// `sampling/createMessage`.
    CreateMessage {
        /// The params (boxed: they are large).
        params: Box<CreateMessageRequestParams>,
        /// Members besides `method` and `params`.
        extra: Extra,
    },
    /// `elicitation/create` (form or URL mode).
    Elicit {
        /// The params (boxed: they are large).
        params: Box<ElicitRequestParams>,
        /// Members besides `method` and `params`.
        extra: Extra,
    },
    /// `roots/list`; its params (only `_meta`) are optional.
    ListRoots {
        /// The params, if sent.
        params: Option<PaginatedRequestParams>,
        /// Members besides `method` and `params`.
        extra: Extra,
    },
    /// A method this crate does not know, kept as sent.
    Other {
        /// The method name.
        method: String,
        /// The raw params, if sent.
        params: Option<Value>,
        /// Members besides `method` and `params`.
        extra: Extra,
    },
}

impl InputRequest {
    /// A `sampling/createMessage` input request.
    pub fn create_message(params: CreateMessageRequestParams) -> Self {
        InputRequest::CreateMessage {
            params: Box::new(params),
            extra: Extra::new(),
        }
    }

    /// An `elicitation/create` input request.
    pub fn elicit(params: ElicitRequestParams) -> Self {
        InputRequest::Elicit {
            params: Box::new(params),
            extra: Extra::new(),
        }
    }

    /// A `roots/list` input request without params.
    pub fn list_roots() -> Self {
        InputRequest::ListRoots {
            params: None,
            extra: Extra::new(),
        }
    }

    /// The method name.
    pub fn method(&self) -> &str {
        match self {
            InputRequest::CreateMessage { .. } => SAMPLING_CREATE_MESSAGE,
            InputRequest::Elicit { .. } => ELICITATION_CREATE,
            InputRequest::ListRoots { .. } => ROOTS_LIST,
            InputRequest::Other { method, .. } => method,
        }
    }

    /// The members besides `method` and `params`.
    pub fn extra(&self) -> &Extra {
        match self {
            InputRequest::CreateMessage { extra, .. }
            | InputRequest::Elicit { extra, .. }
            | InputRequest::ListRoots { extra, .. }
            | InputRequest::Other { extra, .. } => extra,
        }
    }
}

impl Serialize for InputRequest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let extra = self.extra();
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("method", self.method())?;
        match self {
            InputRequest::CreateMessage { params, .. } => m.serialize_entry("params", params)?,
            InputRequest::Elicit { params, .. } => m.serialize_entry("params", params)?,
            InputRequest::ListRoots {
                params: Some(p), ..
            } => m.serialize_entry("params", p)?,
            InputRequest::Other {
                params: Some(p), ..
            } => m.serialize_entry("params", p)?,
            InputRequest::ListRoots { params: None, .. }
            | InputRequest::Other { params: None, .. } => {}
        }
        for (k, v) in extra {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for InputRequest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut extra = Map::<String, Value>::deserialize(d)?;
        let method = match extra.remove("method") {
            Some(Value::String(s)) => s,
            Some(_) => return Err(de::Error::custom("`method` must be a string")),
            None => return Err(de::Error::missing_field("method")),
        };
        let params = extra.remove("params");
        fn typed<T: serde::de::DeserializeOwned, E: de::Error>(
            method: &str,
            params: Option<Value>,
        ) -> Result<T, E> {
            let p = params.ok_or_else(|| E::custom(format!("{method}: missing `params`")))?;
            serde_json::from_value(p).map_err(|e| E::custom(format!("{method}: {e}")))
        }
        Ok(match method.as_str() {
            SAMPLING_CREATE_MESSAGE => InputRequest::CreateMessage {
                params: typed(&method, params)?,
                extra,
            },
            ELICITATION_CREATE => InputRequest::Elicit {
                params: typed(&method, params)?,
                extra,
            },
            ROOTS_LIST => InputRequest::ListRoots {
                params: match params {
                    Some(p) => Some(typed(&method, Some(p))?),
                    None => None,
                },
                extra,
            },
            _ => InputRequest::Other {
                method,
                params,
                extra,
            },
        })
    }
}

/// `inputRequests`: key → request (2026-07-28, schema `InputRequests`). Keys are
/// chosen by the server and echoed in [`InputResponses`].
pub type InputRequests = BTreeMap<String, InputRequest>;

/// The client's answer to one [`InputRequest`] (2026-07-28, schema `InputResponse`
/// = `CreateMessageResult` | `ListRootsResult` | `ElicitResult`).
///
/// The wire value carries no method, so plain decoding guesses from the members:
/// `action` → [`InputResponse::Elicit`], `roots` → [`InputResponse::ListRoots`],
/// `model` → [`InputResponse::CreateMessage`], else [`InputResponse::Other`]. A
/// server that knows which request it sent should use
/// [`InputResponse::for_request`], which decodes strictly.
#[derive(Debug, Clone, PartialEq)]
pub enum InputResponse {
    /// A `sampling/createMessage` result (boxed: it is large).
    CreateMessage(Box<CreateMessageResult>),
    /// An `elicitation/create` result.
    Elicit(ElicitResult),
    /// A `roots/list` result.
    ListRoots(ListRootsResult),
    /// Anything else (an unknown method's result), kept as sent.
    Other(Value),
}

impl InputResponse {
    /// Decodes `value` as the result of `request`'s method.
    ///
    /// Errors: the serde error when `value` does not have that result's shape. An
    /// [`InputRequest::Other`] request yields [`InputResponse::Other`].
    pub fn for_request(request: &InputRequest, value: Value) -> Result<Self, serde_json::Error> {
        Ok(match request {
            InputRequest::CreateMessage { .. } => {
                InputResponse::CreateMessage(serde_json::from_value(value)?)
            }
            InputRequest::Elicit { .. } => InputResponse::Elicit(serde_json::from_value(value)?),
            InputRequest::ListRoots { .. } => {
                InputResponse::ListRoots(serde_json::from_value(value)?)
            }
            InputRequest::Other { .. } => InputResponse::Other(value),
        })
    }
}

impl Serialize for InputResponse {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            InputResponse::CreateMessage(r) => r.serialize(s),
            InputResponse::Elicit(r) => r.serialize(s),
            InputResponse::ListRoots(r) => r.serialize(s),
            InputResponse::Other(v) => v.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for InputResponse {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let has = |k: &str| v.get(k).is_some();
        let typed = |v: Value| -> Result<InputResponse, D::Error> {
            if has("action") {
                serde_json::from_value(v).map(InputResponse::Elicit)
            } else if has("roots") {
                serde_json::from_value(v).map(InputResponse::ListRoots)
            } else {
                serde_json::from_value(v).map(InputResponse::CreateMessage)
            }
            .map_err(de::Error::custom)
        };
        if has("action") || has("roots") || has("model") {
            typed(v.clone())
        } else {
            Ok(InputResponse::Other(v))
        }
    }
}

/// `inputResponses`: key → result, the keys of the server's [`InputRequests`]
/// (2026-07-28, schema `InputResponses`).
pub type InputResponses = BTreeMap<String, InputResponse>;

/// The constant `"input_required"` of [`InputRequiredResult::result_type`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct InputRequiredType;

impl InputRequiredType {
    /// The wire value.
    pub const VALUE: &'static str = "input_required";
}

impl Serialize for InputRequiredType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(Self::VALUE)
    }
}

impl<'de> Deserialize<'de> for InputRequiredType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s == Self::VALUE {
            Ok(InputRequiredType)
        } else {
            Err(de::Error::invalid_value(
                de::Unexpected::Str(&s),
                &"\"input_required\"",
            ))
        }
    }
}

/// Why an [`InputRequiredResult`] cannot be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InputRequiredError {
    /// Neither `inputRequests` (non-empty) nor `requestState` was given; the spec
    /// requires at least one.
    #[error("an input_required result needs inputRequests or requestState")]
    Empty,
}

/// An interim result asking for input: `{resultType: "input_required",
/// inputRequests?, requestState?, _meta?}` (2026-07-28, schema
/// `InputRequiredResult`). At least one of `inputRequests` and `requestState` must
/// be present ([`InputRequiredResult::new`] enforces it; decoding accepts any
/// instance of the schema, and [`InputRequiredResult::check`] tells).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// Always `"input_required"`.
    pub result_type: InputRequiredType,
    /// What the client must fulfil before retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// Opaque server state to echo on the retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl InputRequiredResult {
    /// A result with the given requests and/or state. An empty map counts as absent
    /// and is not sent.
    ///
    /// Errors: [`InputRequiredError::Empty`] when both are absent.
    pub fn new(
        input_requests: Option<InputRequests>,
        request_state: Option<String>,
    ) -> Result<Self, InputRequiredError> {
        let input_requests = input_requests.filter(|m| !m.is_empty());
        let r = InputRequiredResult {
            result_type: InputRequiredType,
            input_requests,
            request_state,
            meta: None,
            extra: Extra::new(),
        };
        r.check().map(|()| r)
    }

    /// Checks the "at least one of `inputRequests` (non-empty) and `requestState`"
    /// rule.
    pub fn check(&self) -> Result<(), InputRequiredError> {
        let has_requests = self.input_requests.as_ref().is_some_and(|m| !m.is_empty());
        if has_requests || self.request_state.is_some() {
            Ok(())
        } else {
            Err(InputRequiredError::Empty)
        }
    }
}

/// A retried request's params: the original params `P` plus `inputResponses?` and
/// `requestState?` (2026-07-28, MRTR retry). Decoding splits the two MRTR members
/// off and hands the rest to `P`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WithInputResponses<P> {
    /// The original request's params.
    #[serde(flatten)]
    pub params: P,
    /// The answers to the server's `inputRequests`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The `requestState` echoed from the server's interim result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

impl<P> WithInputResponses<P> {
    /// Wraps `params` with the responses and the state to echo.
    pub fn new(
        params: P,
        input_responses: Option<InputResponses>,
        request_state: Option<String>,
    ) -> Self {
        WithInputResponses {
            params,
            input_responses,
            request_state,
        }
    }
}

/// Builds the retry of `original` after an [`InputRequiredResult`]: a new id (the
/// spec requires one), the same method, and the original params (or `{}`) with
/// `inputResponses` and `requestState` set (replaced when already there, removed
/// when `None`, so a stale value from an earlier round is not resent).
///
/// Errors: when the original params are not a JSON object, or the responses fail to
/// serialize.
pub fn retry_request(
    original: &Request,
    new_id: Id,
    input_responses: Option<&InputResponses>,
    request_state: Option<&str>,
) -> Result<Request, serde_json::Error> {
    let mut params: Map<String, Value> = match &original.params {
        Some(p) => serde_json::from_str(p.get())?,
        None => Map::new(),
    };
    match input_responses {
        Some(r) => {
            params.insert("inputResponses".into(), serde_json::to_value(r)?);
        }
        None => {
            params.remove("inputResponses");
        }
    }
    match request_state {
        Some(s) => {
            params.insert("requestState".into(), Value::String(s.to_owned()));
        }
        None => {
            params.remove("requestState");
        }
    }
    Request::new(new_id, original.method.clone(), &params)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ElicitAction, ElicitValue, Role};
    use serde_json::json;

    fn round_trip<T: serde::de::DeserializeOwned + Serialize>(v: Value) -> T {
        let t: T = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&t).unwrap(), v);
        t
    }

    fn example_requests() -> Value {
        json!({
            "github_login": {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": "Please provide your GitHub username",
                    "requestedSchema": {"type": "object",
                        "properties": {"name": {"type": "string"}}, "required": ["name"]}
                }
            },
            "capital_of_france": {
                "method": "sampling/createMessage",
                "params": {
                    "messages": [{"role": "user",
                        "content": {"type": "text", "text": "What is the capital of France?"}}],
                    "maxTokens": 100
                }
            },
            "roots": {"id": "list-roots-example", "method": "roots/list"}
        })
    }

    #[test]
    fn input_requests_dispatch_by_method() {
        let reqs: InputRequests = round_trip(example_requests());
        assert!(matches!(
            &reqs["github_login"],
            InputRequest::Elicit { params, .. } if matches!(**params, ElicitRequestParams::Form(_))
        ));
        assert!(
            matches!(&reqs["capital_of_france"], InputRequest::CreateMessage { params, .. } if params.max_tokens == 100)
        );
        let InputRequest::ListRoots { params, extra } = &reqs["roots"] else {
            panic!("roots/list")
        };
        assert!(params.is_none());
        assert_eq!(extra["id"], json!("list-roots-example"));
        assert_eq!(reqs["roots"].method(), "roots/list");
    }

    #[test]
    fn unknown_method_kept_and_bad_params_refused() {
        let r: InputRequest = round_trip(json!({"method": "x/ask", "params": {"q": 1}, "z": 2}));
        assert_eq!(r.method(), "x/ask");
        assert!(matches!(&r, InputRequest::Other { params: Some(p), .. } if p["q"] == json!(1)));
        let r: InputRequest = round_trip(json!({"method": "x/none"}));
        assert!(matches!(r, InputRequest::Other { params: None, .. }));
        let err = serde_json::from_value::<InputRequest>(
            json!({"method": "sampling/createMessage", "params": {"messages": []}}),
        )
        .unwrap_err();
        assert!(err.to_string().contains("sampling/createMessage"), "{err}");
        assert!(
            serde_json::from_value::<InputRequest>(json!({"method": "elicitation/create"}))
                .is_err()
        );
        assert!(serde_json::from_value::<InputRequest>(json!({"params": {}})).is_err());
        let r: InputRequest =
            round_trip(json!({"method": "roots/list", "params": {"_meta": {"a": 1}}}));
        assert!(matches!(
            r,
            InputRequest::ListRoots {
                params: Some(_),
                ..
            }
        ));
    }

    #[test]
    fn input_responses_guess_and_strict() {
        let resp: InputResponses = round_trip(json!({
            "github_login": {"action": "accept", "content": {"name": "octocat"}},
            "capital_of_france": {
                "role": "assistant",
                "content": {"type": "text", "text": "The capital of France is Paris."},
                "model": "claude-3-sonnet-20240307", "stopReason": "endTurn"
            },
            "roots": {"roots": [{"uri": "file:///a"}]},
            "custom": {"answer": 42}
        }));
        let InputResponse::Elicit(e) = &resp["github_login"] else {
            panic!("elicit")
        };
        assert_eq!(e.action, ElicitAction::Accept);
        assert_eq!(
            e.value("name"),
            Some(&ElicitValue::String("octocat".into()))
        );
        assert!(
            matches!(&resp["capital_of_france"], InputResponse::CreateMessage(r) if r.role == Role::Assistant)
        );
        assert!(matches!(&resp["roots"], InputResponse::ListRoots(r) if r.roots.len() == 1));
        assert!(matches!(&resp["custom"], InputResponse::Other(_)));
        // Strict decoding against the request that was sent.
        let reqs: InputRequests = serde_json::from_value(example_requests()).unwrap();
        let ok = InputResponse::for_request(&reqs["github_login"], json!({"action": "decline"}));
        assert!(matches!(ok, Ok(InputResponse::Elicit(_))));
        let bad =
            InputResponse::for_request(&reqs["capital_of_france"], json!({"action": "accept"}));
        assert!(bad.is_err());
        assert!(serde_json::from_value::<InputResponse>(json!({"action": "perhaps"})).is_err());
    }

    #[test]
    fn input_required_result_rule() {
        let v = json!({"resultType": "input_required", "inputRequests": example_requests(),
            "requestState": "eyJsb2NhdGlvbiI6Ik5ldyBZb3JrIn0"});
        let r: InputRequiredResult = round_trip(v);
        assert!(r.check().is_ok());
        let r: InputRequiredResult = round_trip(json!({"resultType": "input_required",
            "requestState": "eyJwcm9ncmVzcyI6IjUwJSJ9", "_meta": {}}));
        assert!(r.check().is_ok());
        // Decoding accepts an instance that breaks the rule; check() reports it.
        let r: InputRequiredResult = round_trip(json!({"resultType": "input_required"}));
        assert_eq!(r.check(), Err(InputRequiredError::Empty));
        // Another resultType is not this type.
        assert!(serde_json::from_value::<InputRequiredResult>(
            json!({"resultType": "complete", "requestState": "s"})
        )
        .is_err());
        // The constructor enforces the rule.
        assert_eq!(
            InputRequiredResult::new(None, None),
            Err(InputRequiredError::Empty)
        );
        assert_eq!(
            InputRequiredResult::new(Some(InputRequests::new()), None),
            Err(InputRequiredError::Empty)
        );
        let r = InputRequiredResult::new(None, Some("s".into())).unwrap();
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"resultType": "input_required", "requestState": "s"})
        );
        let mut reqs = InputRequests::new();
        reqs.insert("r".into(), InputRequest::list_roots());
        let r = InputRequiredResult::new(Some(reqs), None).unwrap();
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"resultType": "input_required", "inputRequests": {"r": {"method": "roots/list"}}})
        );
    }

    #[test]
    fn retried_params_wrapper() {
        let v = json!({
            "name": "get_weather", "arguments": {"city": "Paris"},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"},
            "inputResponses": {"github_login": {"action": "accept", "content": {"name": "octocat"}}},
            "requestState": "abc"
        });
        let p: WithInputResponses<Map<String, Value>> = round_trip(v);
        assert_eq!(p.request_state.as_deref(), Some("abc"));
        assert!(!p.params.contains_key("inputResponses"));
        assert!(!p.params.contains_key("requestState"));
        assert_eq!(p.params["name"], json!("get_weather"));
        let p: WithInputResponses<PaginatedRequestParams> = round_trip(json!({"cursor": "c"}));
        assert!(p.input_responses.is_none());
        let w = WithInputResponses::new(PaginatedRequestParams::default(), None, Some("s".into()));
        assert_eq!(
            serde_json::to_value(&w).unwrap(),
            json!({"requestState": "s"})
        );
    }

    #[test]
    fn retry_request_builds_new_id_and_params() {
        let original = Request::new(
            1,
            "tools/call",
            &json!({"name": "t", "requestState": "old", "inputResponses": {"x": {"roots": []}}}),
        )
        .unwrap();
        let mut responses = InputResponses::new();
        responses.insert(
            "k".into(),
            InputResponse::Elicit(ElicitResult::new(ElicitAction::Cancel)),
        );
        let retry = retry_request(&original, Id::from(2), Some(&responses), Some("new")).unwrap();
        assert_eq!(retry.id, Id::from(2));
        assert_eq!(retry.method, "tools/call");
        let p: Value = retry.params_as().unwrap();
        assert_eq!(
            p,
            json!({"name": "t", "requestState": "new", "inputResponses": {"k": {"action": "cancel"}}})
        );
        // None removes stale members; absent params become an object.
        let retry = retry_request(&original, Id::from("r3"), None, None).unwrap();
        assert_eq!(retry.params_as::<Value>().unwrap(), json!({"name": "t"}));
        let bare = Request {
            id: Id::from(1),
            method: "prompts/get".into(),
            params: None,
        };
        let retry = retry_request(&bare, Id::from(5), None, Some("s")).unwrap();
        assert_eq!(
            retry.params_as::<Value>().unwrap(),
            json!({"requestState": "s"})
        );
    }
}
