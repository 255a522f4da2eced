//! The JSON-RPC 2.0 envelope: request, notification, response, error response.
//!
//! Classification reads only `jsonrpc`, `id`, `method` and which of `params`,
//! `result` and `error` are present. `params`, `result` and `error.data` stay raw JSON
//! text ([`RawValue`]), checked to be well-formed but never decoded into a tree, so a
//! proxy can forward a multi-megabyte tool result as it came. Typed decoding is a
//! second, explicit step ([`Request::params_as`], [`crate::types`]).
//!
//! Source: JSON-RPC 2.0 §4–§6; MCP base protocol "Messages" (all revisions).

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeOwned, Deserializer};
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::code;
use super::id::{Id, IdError};
use super::scan;

/// The only accepted value of the `jsonrpc` member.
pub const JSONRPC_VERSION: &str = "2.0";

/// A request: expects a response with the same [`Id`].
#[derive(Debug, Clone)]
pub struct Request {
    /// The id, exactly as received.
    pub id: Id,
    /// The method name, e.g. `tools/call`.
    pub method: String,
    /// `params` as raw JSON (an object or an array), if present.
    pub params: Option<Box<RawValue>>,
}

/// A notification: no `id`, never answered.
#[derive(Debug, Clone)]
pub struct Notification {
    /// The method name, e.g. `notifications/progress`.
    pub method: String,
    /// `params` as raw JSON (an object or an array), if present.
    pub params: Option<Box<RawValue>>,
}

/// A success response.
#[derive(Debug, Clone)]
pub struct Response {
    /// The id of the request it answers.
    pub id: Id,
    /// `result` as raw JSON.
    pub result: Box<RawValue>,
}

/// An error response. `id` is `None` when the request's id could not be read, e.g.
/// after a parse error: JSON-RPC 2.0 §5 sends `"id": null` then, and 2025-11-25 and
/// 2026-07-28 also allow leaving `id` out. A decoded message remembers which of the
/// two it was ([`ErrorResponse::id_omitted`]) so that forwarding changes nothing.
#[derive(Debug, Clone)]
pub struct ErrorResponse {
    /// The id of the request it answers, if it could be read.
    pub id: Option<Id>,
    /// The error object.
    pub error: ErrorObject,
    /// With `id: None`: `true` writes no `id` member at all (as received from a
    /// 2025-11-25+ peer), `false` writes `"id": null`. Ignored when `id` is `Some`.
    pub id_omitted: bool,
}

/// The `error` member of an error response (JSON-RPC 2.0 §5.1).
///
/// Serialized as `{"code", "message", "data"?, ...extra}`; `"data": null` is kept as
/// `Some(null)`.
#[derive(Debug, Clone)]
pub struct ErrorObject {
    /// The code; see [`code`] for the named ones.
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Extra information as raw JSON, e.g. `{"supported":[..],"requested":".."}` for
    /// -32022.
    pub data: Option<Box<RawValue>>,
    /// Members other than `code`, `message` and `data`, which no revision defines but
    /// none forbids; kept so that forwarding loses nothing.
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl ErrorObject {
    /// Reads an error object from validated JSON text.
    ///
    /// Errors: not an object, `code` missing or not an integer that fits `i64`,
    /// `message` missing or not a string, a member given twice.
    fn from_json(text: &str) -> Result<ErrorObject, String> {
        let (_, top) = scan::scan_top(text.as_bytes()).map_err(|e| e.to_string())?;
        let scan::TopLevel::Object(members) = top else {
            return Err("\"error\" must be an object".into());
        };
        let (mut code, mut message, mut data) = (None, None, None);
        let mut extra = serde_json::Map::new();
        for m in members {
            let key = member_key(&m);
            let value = &text[m.value];
            let dup = match key.as_ref() {
                "code" => code
                    .replace(
                        serde_json::from_str::<i64>(value)
                            .map_err(|_| "\"code\" must be an integer")?,
                    )
                    .is_some(),
                "message" => message
                    .replace(
                        serde_json::from_str::<String>(value)
                            .map_err(|_| "\"message\" must be a string")?,
                    )
                    .is_some(),
                "data" => data.replace(raw_of(value).to_owned()).is_some(),
                _ => extra
                    .insert(
                        key.clone().into_owned(),
                        serde_json::from_str(value).map_err(|e| e.to_string())?,
                    )
                    .is_some(),
            };
            if dup {
                return Err(format!("duplicate member {key:?} in \"error\""));
            }
        }
        Ok(ErrorObject {
            code: code.ok_or("\"error\" needs an integer \"code\"")?,
            message: message.ok_or("\"error\" needs a string \"message\"")?,
            data,
            extra,
        })
    }
}

impl Serialize for ErrorObject {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(
            2 + usize::from(self.data.is_some()) + self.extra.len(),
        ))?;
        map.serialize_entry("code", &self.code)?;
        map.serialize_entry("message", &self.message)?;
        if let Some(data) = &self.data {
            map.serialize_entry("data", data)?;
        }
        for (k, v) in &self.extra {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for ErrorObject {
    /// Works with serde_json's text deserializers (the raw `data` needs the text).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        ErrorObject::from_json(raw.get()).map_err(serde::de::Error::custom)
    }
}

impl ErrorObject {
    /// An error object without `data`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
            extra: serde_json::Map::new(),
        }
    }

    /// Adds `data`, serialized from any value. Panics never: a value that fails to
    /// serialize (only possible with non-string map keys) leaves `data` unset.
    pub fn with_data<T: Serialize>(mut self, data: &T) -> Self {
        self.data = serde_json::value::to_raw_value(data).ok();
        self
    }
}

impl PartialEq for ErrorObject {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code
            && self.message == other.message
            && raw_opt_eq(&self.data, &other.data)
            && self.extra == other.extra
    }
}

/// Any one JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A success response.
    Response(Response),
    /// An error response.
    Error(ErrorResponse),
}

fn raw_eq(a: &RawValue, b: &RawValue) -> bool {
    // Equal as JSON values; text equality is the fast path.
    a.get() == b.get()
        || serde_json::from_str::<serde_json::Value>(a.get()).ok()
            == serde_json::from_str::<serde_json::Value>(b.get()).ok()
}

/// Whether two optional raw payloads are equal as JSON values.
pub(crate) fn raw_opt_eq(a: &Option<Box<RawValue>>, b: &Option<Box<RawValue>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => raw_eq(a, b),
        _ => false,
    }
}

impl PartialEq for Request {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.method == other.method
            && raw_opt_eq(&self.params, &other.params)
    }
}
impl PartialEq for Notification {
    fn eq(&self, other: &Self) -> bool {
        self.method == other.method && raw_opt_eq(&self.params, &other.params)
    }
}
impl PartialEq for Response {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && raw_eq(&self.result, &other.result)
    }
}
impl PartialEq for ErrorResponse {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.error == other.error
            && (self.id.is_some() || self.id_omitted == other.id_omitted)
    }
}

/// A borrowed view of one message, classified from its envelope without copying
/// `params`, `result` or `error`. Built by [`MessageRef::classify`]; turned into an
/// owned [`Message`] by [`MessageRef::to_owned`].
#[derive(Debug, Clone)]
pub enum MessageRef<'a> {
    /// A request.
    Request {
        /// The id's raw JSON text, already checked to be a string or an integer.
        id: &'a RawValue,
        /// The method (borrowed unless it had escapes such as `\/`).
        method: Cow<'a, str>,
        /// Raw `params`.
        params: Option<&'a RawValue>,
    },
    /// A notification.
    Notification {
        /// The method (borrowed unless it had escapes).
        method: Cow<'a, str>,
        /// Raw `params`.
        params: Option<&'a RawValue>,
    },
    /// A success response.
    Response {
        /// The id's raw JSON text.
        id: &'a RawValue,
        /// Raw `result`.
        result: &'a RawValue,
    },
    /// An error response.
    Error {
        /// The id member's raw JSON text: `None` when absent, `null` when the
        /// request's id could not be read, else a string or an integer.
        id: Option<&'a RawValue>,
        /// Raw `error` object, checked to have an integer `code` and a string `message`.
        error: &'a RawValue,
    },
}

/// What kind of bad input a [`DecodeError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// Not well-formed JSON (or not UTF-8): answered with -32700 and `id: null`.
    Parse,
    /// Well-formed JSON that is not a valid JSON-RPC message: -32600.
    InvalidRequest,
    /// A batch (a JSON array) where the negotiated revision has none: -32600.
    BatchNotAllowed,
    /// An empty batch `[]`: -32600.
    EmptyBatch,
}

/// Bad input: what was wrong and the spec's answer to it ([`DecodeError::to_response`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    kind: DecodeErrorKind,
    id: Option<Id>,
    detail: String,
    /// Whether the offending message had a `method` but no `id`: a broken
    /// notification, which per JSON-RPC 2.0 §4.1 is never answered.
    notification: bool,
}

impl DecodeError {
    fn new(kind: DecodeErrorKind, detail: impl Into<String>) -> Self {
        DecodeError {
            kind,
            id: None,
            detail: detail.into(),
            notification: false,
        }
    }

    /// The kind of bad input.
    pub fn kind(&self) -> DecodeErrorKind {
        self.kind
    }

    /// The JSON-RPC error code the spec gives for it (-32700 or -32600).
    pub fn code(&self) -> i64 {
        match self.kind {
            DecodeErrorKind::Parse => code::PARSE_ERROR,
            _ => code::INVALID_REQUEST,
        }
    }

    /// The id of the offending request, when it could be read.
    pub fn id(&self) -> Option<&Id> {
        self.id.as_ref()
    }

    /// A human-readable account of what was wrong.
    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// The error response to send back: the code, the detail as message, and the id
    /// when it was readable (`null` otherwise).
    pub fn to_response(&self) -> ErrorResponse {
        ErrorResponse::new(
            self.id.clone(),
            ErrorObject::new(self.code(), self.detail.clone()),
        )
    }

    /// Whether to answer at all. A well-formed message with a `method` and no `id`
    /// was meant as a notification; JSON-RPC 2.0 says those are never answered, even
    /// when otherwise invalid. Everything else gets [`DecodeError::to_response`].
    pub fn wants_response(&self) -> bool {
        !self.notification
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            code::name(self.code()).unwrap_or("error"),
            self.code(),
            self.detail
        )
    }
}

impl std::error::Error for DecodeError {}

/// The envelope's members, as raw JSON. Unknown members are ignored (JSON-RPC 2.0
/// defines none more; MCP adds none at this level).
#[derive(Default)]
struct Envelope<'a> {
    jsonrpc: Option<&'a RawValue>,
    id: Option<&'a RawValue>,
    method: Option<&'a RawValue>,
    params: Option<&'a RawValue>,
    result: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
}

/// Views validated JSON text as a `RawValue` without re-parsing it.
fn raw_of(text: &str) -> &RawValue {
    // SAFETY: serde_json 1.x declares `#[repr(transparent)] pub struct RawValue { json: str }`
    // (src/raw.rs) and converts `&str` to `&RawValue` with this same transmute; the layouts
    // are identical. Its invariant, that the text is one well-formed JSON value, holds
    // because every caller passes a range that `scan::scan_top` validated as a value.
    unsafe { std::mem::transmute::<&str, &RawValue>(text) }
}

/// A member's key with JSON escapes resolved (borrowed when it has none).
fn member_key<'a>(m: &scan::Member<'a>) -> Cow<'a, str> {
    if m.key_has_escape {
        // The scanner checked the escapes, so this cannot fail.
        Cow::Owned(serde_json::from_str::<String>(&format!("\"{}\"", m.key)).unwrap_or_default())
    } else {
        Cow::Borrowed(m.key)
    }
}

/// Reads a raw JSON string, borrowed when it has no escapes; `None` when the value
/// is not a string.
fn json_str(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    if inner.contains('\\') {
        serde_json::from_str::<String>(text).ok().map(Cow::Owned)
    } else {
        Some(Cow::Borrowed(inner))
    }
}

impl<'a> MessageRef<'a> {
    /// Classifies one JSON object as a message, reading only the envelope.
    ///
    /// Errors: [`DecodeErrorKind::Parse`] for malformed JSON or invalid UTF-8,
    /// [`DecodeErrorKind::InvalidRequest`] for well-formed JSON that breaks the
    /// envelope rules (not an object, `jsonrpc` not `"2.0"`, `id` null or of another
    /// type, a method that is not a string, `params` neither object nor array, both or
    /// neither of `result`/`error`, `method` together with `result`/`error`).
    ///
    /// Member names and string values may use JSON escapes (`"tools\/list"` is
    /// `tools/list`); only then is the method copied.
    pub fn classify(bytes: &'a [u8]) -> Result<MessageRef<'a>, DecodeError> {
        let (text, top) = scan::scan_top(bytes)
            .map_err(|e| DecodeError::new(DecodeErrorKind::Parse, format!("invalid JSON: {e}")))?;
        let scan::TopLevel::Object(members) = top else {
            return Err(DecodeError::new(
                DecodeErrorKind::InvalidRequest,
                "a JSON-RPC message must be a JSON object",
            ));
        };
        let mut env = Envelope::default();
        for m in members {
            let key = member_key(&m);
            let slot = match key.as_ref() {
                "jsonrpc" => &mut env.jsonrpc,
                "id" => &mut env.id,
                "method" => &mut env.method,
                "params" => &mut env.params,
                "result" => &mut env.result,
                "error" => &mut env.error,
                _ => continue,
            };
            if slot.is_some() {
                return Err(DecodeError::new(
                    DecodeErrorKind::InvalidRequest,
                    format!("duplicate member {key:?}"),
                ));
            }
            *slot = Some(raw_of(&text[m.value]));
        }
        Self::from_envelope(env)
    }

    fn from_envelope(env: Envelope<'a>) -> Result<MessageRef<'a>, DecodeError> {
        let invalid = |detail: &str| DecodeError::new(DecodeErrorKind::InvalidRequest, detail);
        // Read the id first so an invalid request can still be answered with it.
        let id = match env.id {
            None => None,
            Some(raw) => match Id::from_raw(raw) {
                Ok(id) => Some((raw, id)),
                Err(IdError::Null) => {
                    // `"id": null` is allowed only on an error response whose
                    // request id could not be read.
                    if env.error.is_some() && env.method.is_none() && env.result.is_none() {
                        None
                    } else {
                        return Err(invalid("\"id\" must not be null (a request with a null id is not a notification)"));
                    }
                }
                Err(IdError::NotStringOrInteger) => {
                    return Err(invalid("\"id\" must be a string or an integer"))
                }
                Err(IdError::BadString) => {
                    return Err(invalid(
                        "\"id\" is a string with a lone UTF-16 surrogate escape (\\ud800 to \\udfff without its pair), which no Unicode string holds",
                    ))
                }
            },
        };
        let with_id = |mut e: DecodeError| {
            e.id = id.as_ref().map(|(_, id)| id.clone());
            // Meant as a notification only when it names a method properly (JSON-RPC 2.0
            // §7 answers `{"jsonrpc":"2.0","method":1,"params":"bar"}` with -32600).
            e.notification = env.id.is_none() && env.method.and_then(json_str).is_some();
            e
        };
        match env.jsonrpc {
            Some(v) if json_str(v).as_deref() == Some(JSONRPC_VERSION) => {}
            Some(_) => return Err(with_id(invalid("\"jsonrpc\" must be \"2.0\""))),
            None => return Err(with_id(invalid("missing \"jsonrpc\": \"2.0\""))),
        }
        if let Some(method) = env.method {
            let Some(name) = json_str(method) else {
                return Err(with_id(invalid("\"method\" must be a string")));
            };
            if env.result.is_some() || env.error.is_some() {
                return Err(with_id(invalid(
                    "a message with \"method\" must not carry \"result\" or \"error\"",
                )));
            }
            if let Some(p) = env.params {
                if !matches!(p.get().as_bytes().first(), Some(b'{') | Some(b'[')) {
                    return Err(with_id(invalid("\"params\" must be an object or an array")));
                }
            }
            return Ok(match id {
                Some((raw, _)) => MessageRef::Request {
                    id: raw,
                    method: name,
                    params: env.params,
                },
                None => MessageRef::Notification {
                    method: name,
                    params: env.params,
                },
            });
        }
        if env.params.is_some() {
            return Err(with_id(invalid("\"params\" without \"method\"")));
        }
        match (env.result, env.error) {
            (Some(_), Some(_)) => Err(with_id(invalid(
                "a response carries \"result\" or \"error\", never both",
            ))),
            (Some(result), None) => match id {
                Some((raw, _)) => Ok(MessageRef::Response { id: raw, result }),
                None => Err(invalid("a success response needs an \"id\"")),
            },
            (None, Some(error)) => {
                if let Err(detail) = ErrorObject::from_json(error.get()) {
                    return Err(with_id(invalid(&detail)));
                }
                Ok(MessageRef::Error { id: env.id, error })
            }
            (None, None) => Err(with_id(invalid(
                "neither \"method\", \"result\" nor \"error\"",
            ))),
        }
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            MessageRef::Request { method, .. } | MessageRef::Notification { method, .. } => {
                Some(method)
            }
            _ => None,
        }
    }

    /// The id of a request or response, decoded.
    pub fn id(&self) -> Option<Id> {
        let raw = match self {
            MessageRef::Request { id, .. } | MessageRef::Response { id, .. } => *id,
            MessageRef::Error { id, .. } => (*id)?,
            MessageRef::Notification { .. } => return None,
        };
        Id::from_raw(raw).ok()
    }

    /// Copies the view into an owned [`Message`]; the payload is copied as text, not
    /// decoded.
    pub fn to_owned(&self) -> Message {
        let own = |raw: &RawValue| -> Box<RawValue> { raw.to_owned() };
        let id = |raw: &RawValue| Id::from_raw(raw).expect("checked by classify");
        match *self {
            MessageRef::Request {
                id: i,
                ref method,
                params,
            } => Message::Request(Request {
                id: id(i),
                method: method.clone().into_owned(),
                params: params.map(own),
            }),
            MessageRef::Notification { ref method, params } => {
                Message::Notification(Notification {
                    method: method.clone().into_owned(),
                    params: params.map(own),
                })
            }
            MessageRef::Response { id: i, result } => Message::Response(Response {
                id: id(i),
                result: own(result),
            }),
            MessageRef::Error { id: i, error } => {
                let error =
                    ErrorObject::from_json(error.get()).expect("error object checked by classify");
                Message::Error(ErrorResponse {
                    id: i.and_then(|raw| Id::from_raw(raw).ok()),
                    error,
                    id_omitted: i.is_none(),
                })
            }
        }
    }
}

impl Message {
    /// Decodes one message (not a batch) from JSON bytes; see [`MessageRef::classify`]
    /// for the errors.
    pub fn decode(bytes: &[u8]) -> Result<Message, DecodeError> {
        MessageRef::classify(bytes).map(|m| m.to_owned())
    }

    /// Encodes the message as compact JSON (no newline), payloads written as received.
    pub fn encode(&self) -> Vec<u8> {
        // Sized for the payload up front: a large result (a 10 MiB tool result
        // passed through) is copied once, not regrown from 128 bytes by doubling.
        let payload = match self {
            Message::Request(r) => r.method.len() + r.params.as_ref().map_or(0, |p| p.get().len()),
            Message::Notification(n) => {
                n.method.len() + n.params.as_ref().map_or(0, |p| p.get().len())
            }
            Message::Response(r) => r.result.get().len(),
            Message::Error(e) => e.error.message.len(),
        };
        // The envelope (`{"jsonrpc":"2.0","id":...,"method":...}`), an id, and a
        // newline that encode_line adds.
        let mut out = Vec::with_capacity(payload + 96);
        // Serializing a message cannot fail: ids, strings and raw values are all valid.
        serde_json::to_writer(&mut out, self).expect("a JSON-RPC message always serializes");
        out
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            _ => None,
        }
    }

    /// The id of a request or response (`None` for a notification, or an error
    /// response with a null id).
    pub fn id(&self) -> Option<&Id> {
        match self {
            Message::Request(r) => Some(&r.id),
            Message::Response(r) => Some(&r.id),
            Message::Error(e) => e.id.as_ref(),
            Message::Notification(_) => None,
        }
    }
}

/// Decodes `params` (or `{}` when absent) into a typed value.
fn decode_params<T: DeserializeOwned>(
    params: &Option<Box<RawValue>>,
) -> Result<T, serde_json::Error> {
    match params {
        Some(p) => serde_json::from_str(p.get()),
        None => serde_json::from_str("{}"),
    }
}

impl Request {
    /// A request with `params` serialized from a value.
    ///
    /// Errors: only if `params` fails to serialize (non-string map keys).
    pub fn new<P: Serialize>(
        id: impl Into<Id>,
        method: impl Into<String>,
        params: &P,
    ) -> Result<Self, serde_json::Error> {
        Ok(Request {
            id: id.into(),
            method: method.into(),
            params: Some(serde_json::value::to_raw_value(params)?),
        })
    }

    /// The typed, second decoding step: `params` (or `{}` when absent) as `T`.
    /// A failure is what a server answers with -32602 (invalid params).
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        decode_params(&self.params)
    }
}

impl Notification {
    /// A notification with `params` serialized from a value.
    ///
    /// Errors: only if `params` fails to serialize.
    pub fn new<P: Serialize>(
        method: impl Into<String>,
        params: &P,
    ) -> Result<Self, serde_json::Error> {
        Ok(Notification {
            method: method.into(),
            params: Some(serde_json::value::to_raw_value(params)?),
        })
    }

    /// `params` (or `{}` when absent) decoded as `T`.
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        decode_params(&self.params)
    }
}

impl Response {
    /// A success response with `result` serialized from a value.
    ///
    /// Errors: only if `result` fails to serialize.
    pub fn new<R: Serialize>(id: Id, result: &R) -> Result<Self, serde_json::Error> {
        Ok(Response {
            id,
            result: serde_json::value::to_raw_value(result)?,
        })
    }

    /// `result` decoded as `T`.
    pub fn result_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.result.get())
    }
}

impl ErrorResponse {
    /// An error response to the request with `id`.
    pub fn new(id: Option<Id>, error: ErrorObject) -> Self {
        ErrorResponse {
            id,
            error,
            id_omitted: false,
        }
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Message::Request(r) => {
                let mut st = s.serialize_struct("Request", 4)?;
                st.serialize_field("jsonrpc", JSONRPC_VERSION)?;
                st.serialize_field("id", &r.id)?;
                st.serialize_field("method", &r.method)?;
                if let Some(p) = &r.params {
                    st.serialize_field("params", p)?;
                }
                st.end()
            }
            Message::Notification(n) => {
                let mut st = s.serialize_struct("Notification", 3)?;
                st.serialize_field("jsonrpc", JSONRPC_VERSION)?;
                st.serialize_field("method", &n.method)?;
                if let Some(p) = &n.params {
                    st.serialize_field("params", p)?;
                }
                st.end()
            }
            Message::Response(r) => {
                let mut st = s.serialize_struct("Response", 3)?;
                st.serialize_field("jsonrpc", JSONRPC_VERSION)?;
                st.serialize_field("id", &r.id)?;
                st.serialize_field("result", &r.result)?;
                st.end()
            }
            Message::Error(e) => {
                let mut st = s.serialize_struct("ErrorResponse", 3)?;
                st.serialize_field("jsonrpc", JSONRPC_VERSION)?;
                if e.id.is_some() || !e.id_omitted {
                    st.serialize_field("id", &e.id)?;
                }
                st.serialize_field("error", &e.error)?;
                st.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Message {
    /// Deserializes through the envelope rules of [`MessageRef::classify`]. Works for
    /// serde_json's text deserializers (raw JSON is needed to keep payloads undecoded).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        MessageRef::classify(raw.get().as_bytes())
            .map(|m| m.to_owned())
            .map_err(serde::de::Error::custom)
    }
}

impl From<Request> for Message {
    fn from(r: Request) -> Self {
        Message::Request(r)
    }
}
impl From<Notification> for Message {
    fn from(n: Notification) -> Self {
        Message::Notification(n)
    }
}
impl From<Response> for Message {
    fn from(r: Response) -> Self {
        Message::Response(r)
    }
}
impl From<ErrorResponse> for Message {
    fn from(e: ErrorResponse) -> Self {
        Message::Error(e)
    }
}

/// Whether a JSON array of messages (a batch) is acceptable on this connection.
/// Batches exist only in 2025-03-26 (MUST accept; `initialize` never batched); see
/// [`crate::ProtocolVersion::allows_batches`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Batching {
    /// Accept arrays (2025-03-26).
    Allowed,
    /// Refuse arrays with -32600 (every other revision).
    Refused,
}

/// One frame of input: a single message, or a batch whose items were each classified
/// on their own (an invalid item does not spoil the others; JSON-RPC 2.0 §6).
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// One message.
    Single(Message),
    /// A non-empty batch, in order. Each invalid item carries the error response
    /// the spec gives it.
    Batch(Vec<Result<Message, DecodeError>>),
}

/// Decodes one frame: a message, or a batch where `batching` allows one.
///
/// Errors: [`DecodeErrorKind::Parse`] for malformed JSON (the whole frame),
/// [`DecodeErrorKind::EmptyBatch`] for `[]`, [`DecodeErrorKind::BatchNotAllowed`] for an
/// array under [`Batching::Refused`], and the errors of [`MessageRef::classify`].
pub fn decode_frame(bytes: &[u8], batching: Batching) -> Result<Frame, DecodeError> {
    let first = bytes
        .iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    if first != Some(&b'[') {
        return Message::decode(bytes).map(Frame::Single);
    }
    let (_, top) = scan::scan_top(bytes)
        .map_err(|e| DecodeError::new(DecodeErrorKind::Parse, format!("invalid JSON: {e}")))?;
    let scan::TopLevel::Array(ranges) = top else {
        unreachable!("input starting with '[' scans as an array")
    };
    if batching == Batching::Refused {
        return Err(DecodeError::new(
            DecodeErrorKind::BatchNotAllowed,
            "JSON-RPC batches are not supported in this protocol revision (only 2025-03-26 has them)",
        ));
    }
    if ranges.is_empty() {
        return Err(DecodeError::new(
            DecodeErrorKind::EmptyBatch,
            "an empty batch is an invalid request",
        ));
    }
    let items = ranges
        .into_iter()
        .map(|r| Message::decode(&bytes[r]))
        .collect();
    Ok(Frame::Batch(items))
}

/// Encodes a batch of messages as one JSON array (2025-03-26 only).
pub fn encode_batch(messages: &[Message]) -> Vec<u8> {
    serde_json::to_vec(messages).expect("a JSON-RPC message always serializes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn decode(s: &str) -> Result<Message, DecodeError> {
        Message::decode(s.as_bytes())
    }

    fn reencode(s: &str) -> Value {
        serde_json::from_slice(&decode(s).unwrap().encode()).unwrap()
    }

    /// A request whose id is a whole number written `1.0` or `1e3` (an
    /// integer to JSON Schema, and so to the schemas' `RequestId`) is a
    /// request, and its response carries the id as it was written.
    #[test]
    fn whole_number_ids_in_other_forms_are_answered_as_written() {
        for id in ["1.0", "1e3", "-2.50E+1"] {
            let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            let Ok(Message::Request(r)) = decode(&text) else {
                panic!("{text} is a request")
            };
            let answer = Response::new(r.id, &json!({})).unwrap();
            let out = String::from_utf8(Message::from(answer).encode()).unwrap();
            assert!(out.contains(&format!(r#""id":{id}"#)), "{out}");
        }
        let e = decode(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#).unwrap_err();
        assert_eq!(e.code(), code::INVALID_REQUEST);
    }

    /// A number in an error object's unknown members (kept as a
    /// `serde_json::Value`) survives decode → encode → decode: an integer too
    /// wide for 64 bits becomes the nearest double, whose shortest text reads
    /// back as the same double (serde_json's `float_roundtrip`, which the
    /// workspace now asks for itself). Found by the envelope fuzz target, whose
    /// build is a workspace of its own: there, without the feature (which other
    /// crates of this workspace already turn on), the second read was one unit in
    /// the last place off.
    #[test]
    fn wide_numbers_in_error_members_round_trip() {
        let text = r#"{"jsonrpc":"2.0","error":{"code":-326,"message":"m","n":-327777777777777777777777777777777777777777777777777,"f":1.0000000000000002e-300}}"#;
        let first = decode(text).unwrap();
        let again = Message::decode(&first.encode()).unwrap();
        assert_eq!(again, first);
        assert_eq!(again.encode(), first.encode());
    }

    #[test]
    fn a_lone_surrogate_string_id_is_named_as_such() {
        let e = decode(r#"{"jsonrpc":"2.0","id":"\ud800","method":"ping"}"#).unwrap_err();
        assert_eq!(e.code(), code::INVALID_REQUEST);
        assert!(e.to_string().contains("lone UTF-16 surrogate"), "{e}");
    }

    #[test]
    fn classifies_the_four_kinds() {
        assert!(matches!(
            decode(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Ok(Message::Request(_))
        ));
        assert!(matches!(
            decode(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Message::Notification(_))
        ));
        assert!(matches!(
            decode(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#),
            Ok(Message::Response(_))
        ));
        assert!(matches!(
            decode(r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"nope"}}"#),
            Ok(Message::Error(_))
        ));
        let e = decode(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}"#)
            .unwrap();
        assert_eq!(e.id(), None);
    }

    #[test]
    fn ids_survive_a_round_trip_exactly() {
        for id in [
            "0",
            "\"0\"",
            "9007199254740993",
            "-5",
            "123456789012345678901234567890",
            "\"\"",
        ] {
            let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            let out = String::from_utf8(decode(&text).unwrap().encode()).unwrap();
            assert_eq!(out, text);
        }
    }

    #[test]
    fn null_id_request_is_invalid_not_a_notification() {
        let e = decode(r#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#).unwrap_err();
        assert_eq!(e.code(), code::INVALID_REQUEST);
        assert!(e.wants_response());
        assert_eq!(e.to_response().id, None);
    }

    #[test]
    fn parse_error_gets_32700_with_null_id() {
        for bad in [
            r#"{"jsonrpc":"2.0","id":1,"method":"#,
            "",
            "\u{0}",
            "{]",
            "[1,",
        ] {
            let e = decode(bad).unwrap_err();
            assert_eq!(e.kind(), DecodeErrorKind::Parse, "{bad:?}");
            let resp = Message::Error(e.to_response());
            let v: Value = serde_json::from_slice(&resp.encode()).unwrap();
            assert_eq!(v["id"], Value::Null);
            assert_eq!(v["error"]["code"], -32700);
        }
        let e = Message::decode(b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}").unwrap_err();
        assert_eq!(e.kind(), DecodeErrorKind::Parse);
    }

    #[test]
    fn invalid_envelopes_get_32600_with_id_when_readable() {
        let cases = [
            (
                r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#,
                Some(json!(3)),
            ),
            (r#"{"id":3,"method":"ping"}"#, Some(json!(3))),
            (r#"{"jsonrpc":"2.0","id":3,"method":7}"#, Some(json!(3))),
            (
                r#"{"jsonrpc":"2.0","id":"x","method":"a","params":3}"#,
                Some(json!("x")),
            ),
            (
                r#"{"jsonrpc":"2.0","id":4,"result":1,"error":{"code":1,"message":"m"}}"#,
                Some(json!(4)),
            ),
            (r#"{"jsonrpc":"2.0","id":4}"#, Some(json!(4))),
            (
                r#"{"jsonrpc":"2.0","id":4,"method":"a","result":{}}"#,
                Some(json!(4)),
            ),
            (
                r#"{"jsonrpc":"2.0","id":4,"error":{"code":"x","message":"m"}}"#,
                Some(json!(4)),
            ),
            (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, None),
            (r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#, None),
            (r#"{"jsonrpc":"2.0","result":{}}"#, None),
            (r#"[]"#, None),
            (r#"42"#, None),
            (r#""str""#, None),
            (r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#, None),
        ];
        for (text, id) in cases {
            let e = decode(text).unwrap_err();
            assert_eq!(e.code(), code::INVALID_REQUEST, "{text}");
            let v: Value =
                serde_json::from_slice(&Message::Error(e.to_response()).encode()).unwrap();
            assert_eq!(v["id"], id.unwrap_or(Value::Null), "{text}");
        }
    }

    #[test]
    fn broken_notifications_are_not_answered() {
        let e = decode(r#"{"jsonrpc":"1.0","method":"notifications/initialized"}"#).unwrap_err();
        assert_eq!(e.code(), code::INVALID_REQUEST);
        assert!(!e.wants_response());
    }

    #[test]
    fn payloads_are_forwarded_verbatim() {
        let text = r#"{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"a\u00e9\n"}],"z":1.50,"a":[]}}"#;
        let msg = decode(text).unwrap();
        let Message::Response(r) = &msg else { panic!() };
        assert_eq!(
            r.result.get(),
            r#"{"content":[{"type":"text","text":"a\u00e9\n"}],"z":1.50,"a":[]}"#
        );
        assert_eq!(String::from_utf8(msg.encode()).unwrap(), text);
    }

    #[test]
    fn unknown_envelope_members_are_ignored_and_order_is_free() {
        let v = reencode(r#"{"method":"ping","x":1,"id":1,"jsonrpc":"2.0"}"#);
        assert_eq!(v, json!({"jsonrpc":"2.0","id":1,"method":"ping"}));
    }

    #[test]
    fn escaped_methods_and_versions_are_read() {
        let m = decode(r#"{"jsonrpc":"2\u002e0","id":1,"method":"tools\/list"}"#).unwrap();
        assert_eq!(m.method(), Some("tools/list"));
        let n = decode(r#"{"jsonrpc":"2.0","method":"notifications\/initialized"}"#).unwrap();
        assert_eq!(n.method(), Some("notifications/initialized"));
    }

    #[test]
    fn json_rpc_section_7_invalid_request_is_answered() {
        let e = decode(r#"{"jsonrpc":"2.0","method":1,"params":"bar"}"#).unwrap_err();
        assert_eq!(e.code(), code::INVALID_REQUEST);
        assert!(e.wants_response());
        assert_eq!(e.to_response().id, None);
    }

    #[test]
    fn escaped_member_names_are_read() {
        let m = decode(r#"{"json\u0072pc":"2.0","\u0069d":5,"method":"ping"}"#).unwrap();
        assert_eq!(m.id(), Some(&Id::from(5)));
        let e = decode(r#"{"jsonrpc":"2.0","id":1,"\u0069d":2,"method":"ping"}"#).unwrap_err();
        assert_eq!(
            e.code(),
            code::INVALID_REQUEST,
            "duplicate id through an escape"
        );
    }

    #[test]
    fn error_ids_absent_and_null_stay_apart() {
        for text in [
            r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"m"}}"#,
        ] {
            assert_eq!(
                String::from_utf8(decode(text).unwrap().encode()).unwrap(),
                text
            );
        }
    }

    #[test]
    fn error_object_members_beyond_the_spec_are_kept() {
        let text = r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":[1],"x-future":{"a":null}}}"#;
        assert_eq!(
            String::from_utf8(decode(text).unwrap().encode()).unwrap(),
            text
        );
        let e = decode(r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","code":2}}"#)
            .unwrap_err();
        assert_eq!(e.code(), code::INVALID_REQUEST);
    }

    #[test]
    fn error_data_null_is_kept() {
        let text = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"m","data":null}}"#;
        assert_eq!(
            String::from_utf8(decode(text).unwrap().encode()).unwrap(),
            text
        );
    }

    #[test]
    fn error_data_is_kept() {
        let text = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"m","data":{"supported":["2026-07-28"],"requested":"1999-01-01"}}}"#;
        assert_eq!(reencode(text), serde_json::from_str::<Value>(text).unwrap());
    }

    #[test]
    fn typed_second_step() {
        #[derive(Deserialize)]
        struct P {
            name: String,
        }
        let Message::Request(r) =
            decode(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#)
                .unwrap()
        else {
            panic!()
        };
        assert_eq!(r.params_as::<P>().unwrap().name, "echo");
        let Message::Request(r) =
            decode(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#).unwrap()
        else {
            panic!()
        };
        assert!(r.params_as::<P>().is_err());
    }

    #[test]
    fn batches_only_where_allowed() {
        let batch = br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x"},{"bad":1},3]"#;
        let e = decode_frame(batch, Batching::Refused).unwrap_err();
        assert_eq!(e.kind(), DecodeErrorKind::BatchNotAllowed);
        assert_eq!(e.code(), code::INVALID_REQUEST);
        let Frame::Batch(items) = decode_frame(batch, Batching::Allowed).unwrap() else {
            panic!()
        };
        assert_eq!(items.len(), 4);
        assert!(matches!(items[0], Ok(Message::Request(_))));
        assert!(matches!(items[1], Ok(Message::Notification(_))));
        assert_eq!(items[2].as_ref().unwrap_err().code(), code::INVALID_REQUEST);
        assert_eq!(items[3].as_ref().unwrap_err().code(), code::INVALID_REQUEST);
        let e = decode_frame(b" [ ] ", Batching::Allowed).unwrap_err();
        assert_eq!(e.kind(), DecodeErrorKind::EmptyBatch);
        let e = decode_frame(b"[{\"jsonrpc\":", Batching::Allowed).unwrap_err();
        assert_eq!(e.kind(), DecodeErrorKind::Parse);
        let single = decode_frame(
            br#" {"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            Batching::Refused,
        )
        .unwrap();
        assert!(matches!(single, Frame::Single(Message::Request(_))));
    }

    #[test]
    fn batch_encoding() {
        let msgs = vec![
            Message::Request(Request::new(1, "ping", &json!({})).unwrap()),
            Message::Notification(
                Notification::new("notifications/initialized", &json!({})).unwrap(),
            ),
        ];
        let bytes = encode_batch(&msgs);
        let Frame::Batch(items) = decode_frame(&bytes, Batching::Allowed).unwrap() else {
            panic!()
        };
        let back: Vec<Message> = items.into_iter().map(Result::unwrap).collect();
        assert_eq!(back, msgs);
    }
}
