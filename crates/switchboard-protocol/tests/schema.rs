//! Holds the typed MCP messages (`switchboard_protocol::types`) and the JSON-RPC
//! envelope (`switchboard_protocol::jsonrpc`) to the official `schema.json` of every
//! revision, and to the 2026-07-28 examples.
//!
//! - A registry maps schema definition names to Rust types and gives each a
//!   decode → encode round trip.
//! - A deterministic, schema-driven generator builds instances of every definition
//!   (maximal: every property; minimal: only the required ones; one instance per
//!   `anyOf`/`oneOf` branch; optionally with an unknown `x-future` member in every
//!   open object). Each instance is first checked against the schema itself.
//! - Every instance of every registered definition must come back from the round
//!   trip as equal JSON and still be valid against the revision's definition.
//! - Every definition of every revision must be registered, or be on [`SKIP`] with a
//!   reason.
//!
//! Fixtures are copies under `tests/fixtures/` (schemas of the five revisions, the
//! 2026-07-28 examples); this test reads nothing outside the crate.
//!
//! A case that must be allowed to fail for a while goes in [`KNOWN_FAILURES`] with
//! its reason; the list is empty now, and an entry that no longer fails makes the
//! test fail so it gets removed.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::de::{self, DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use switchboard_protocol::jsonrpc::{
    decode_frame, encode_batch, Batching, ErrorObject, Frame, Message, Notification, Request,
};
use switchboard_protocol::types::*;

/// The revisions with a schema fixture, oldest first.
const REVISIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

// ---------------------------------------------------------------------------
// Registry
// ---------------------------------------------------------------------------

/// Decodes an instance into the Rust type(s) and encodes it back, or says why not.
type RoundTrip = fn(&Value) -> Result<Value, String>;

/// One registered definition: its name and how an instance makes a round trip.
struct Entry {
    /// The schema definition name.
    name: &'static str,
    /// How the instance is taken apart: `plain` (the value is the type);
    /// `request`, `notification`, `response` (the params/result is the type);
    /// `error_data` (`error.data` is the type); `client_request`, `server_request`,
    /// `client_notification`, `server_notification` (dispatch.rs's method sets);
    /// `message`, `batch`, `error_response` (the envelope alone).
    kind: &'static str,
    /// Decode the instance into the Rust type(s), encode back.
    roundtrip: RoundTrip,
}

/// Builds [`REGISTRY`]: `kind "Definition" => RustType;` or `kind "Definition";`
/// for the envelope kinds that need no type of their own.
macro_rules! registry {
    ($($kind:ident $name:literal $(=> $ty:ty)?;)*) => {
        const REGISTRY: &[Entry] = &[$(Entry {
            name: $name,
            kind: stringify!($kind),
            roundtrip: $kind $(::<$ty>)?,
        }),*];
    };
}

registry! {
    // --- common.rs ---
    plain "Implementation" => Implementation;
    plain "Annotations" => Annotations;
    plain "Icon" => Icon;
    plain "Role" => Role;
    plain "EmptyResult" => EmptyResult;
    plain "PaginatedRequestParams" => PaginatedRequestParams;
    // `RequestParams` ({_meta}) is served by PaginatedRequestParams (see its doc).
    plain "RequestParams" => PaginatedRequestParams;
    request "PingRequest" => PaginatedRequestParams;
    // `NotificationParams` ({_meta}): dispatch.rs reads list_changed params with it.
    plain "NotificationParams" => PaginatedRequestParams;
    plain "ResultType" => ResultType;
    plain "RequestId" => RequestId;
    plain "ProgressToken" => ProgressToken;
    plain "Cursor" => Cursor;
    // `_meta` objects are `Meta` (a map) by design (conventions: `_meta` as `Meta`).
    plain "MetaObject" => Meta;
    plain "RequestMetaObject" => Meta;
    plain "ResultMetaObject" => Meta;
    plain "NotificationMetaObject" => Meta;
    plain "SubscriptionsListenResultMetaObject" => Meta;
    // --- capabilities.rs ---
    plain "ClientCapabilities" => ClientCapabilities;
    plain "ServerCapabilities" => ServerCapabilities;
    // --- content.rs ---
    plain "TextContent" => TextContent;
    plain "ImageContent" => ImageContent;
    plain "AudioContent" => AudioContent;
    plain "ResourceLink" => ResourceLink;
    plain "EmbeddedResource" => EmbeddedResource;
    plain "TextResourceContents" => TextResourceContents;
    plain "BlobResourceContents" => BlobResourceContents;
    plain "ContentBlock" => ContentBlock;
    plain "ToolUseContent" => ToolUseContent;
    plain "ToolResultContent" => ToolResultContent;
    plain "SamplingMessageContentBlock" => SamplingMessageContentBlock;
    // --- tools.rs ---
    plain "Tool" => Tool;
    plain "ToolAnnotations" => ToolAnnotations;
    plain "ToolExecution" => ToolExecution;
    plain "ListToolsResult" => ListToolsResult;
    plain "CallToolRequestParams" => CallToolRequestParams;
    plain "CallToolResult" => CallToolResult;
    request "ListToolsRequest" => PaginatedRequestParams;
    notification "ToolListChangedNotification" => PaginatedRequestParams;
    response "ListToolsResultResponse" => ListToolsResult;
    request "CallToolRequest" => CallToolRequestParams;
    response "CallToolResultResponse" => OrInputRequired<CallToolResult>;
    // --- resources.rs ---
    plain "Resource" => Resource;
    plain "ResourceTemplate" => ResourceTemplate;
    plain "ListResourcesResult" => ListResourcesResult;
    plain "ListResourceTemplatesResult" => ListResourceTemplatesResult;
    plain "ReadResourceRequestParams" => ReadResourceRequestParams;
    plain "ReadResourceResult" => ReadResourceResult;
    plain "SubscribeRequestParams" => SubscribeRequestParams;
    plain "UnsubscribeRequestParams" => UnsubscribeRequestParams;
    plain "ResourceUpdatedNotificationParams" => ResourceUpdatedNotificationParams;
    request "ListResourcesRequest" => PaginatedRequestParams;
    notification "ResourceListChangedNotification" => PaginatedRequestParams;
    response "ListResourcesResultResponse" => ListResourcesResult;
    response "ListResourceTemplatesResultResponse" => ListResourceTemplatesResult;
    request "ListResourceTemplatesRequest" => PaginatedRequestParams;
    request "ReadResourceRequest" => ReadResourceRequestParams;
    response "ReadResourceResultResponse" => OrInputRequired<ReadResourceResult>;
    request "SubscribeRequest" => SubscribeRequestParams;
    request "UnsubscribeRequest" => UnsubscribeRequestParams;
    notification "ResourceUpdatedNotification" => ResourceUpdatedNotificationParams;
    // --- prompts.rs ---
    plain "Prompt" => Prompt;
    plain "PromptArgument" => PromptArgument;
    plain "PromptMessage" => PromptMessage;
    plain "ListPromptsResult" => ListPromptsResult;
    plain "GetPromptRequestParams" => GetPromptRequestParams;
    plain "GetPromptResult" => GetPromptResult;
    request "ListPromptsRequest" => PaginatedRequestParams;
    notification "PromptListChangedNotification" => PaginatedRequestParams;
    response "ListPromptsResultResponse" => ListPromptsResult;
    request "GetPromptRequest" => GetPromptRequestParams;
    response "GetPromptResultResponse" => OrInputRequired<GetPromptResult>;
    // --- completion.rs ---
    plain "PromptReference" => PromptReference;
    plain "ResourceTemplateReference" => ResourceTemplateReference;
    plain "ResourceReference" => ResourceReference;
    plain "CompleteRequestParams" => CompleteRequestParams;
    plain "CompleteResult" => CompleteResult;
    request "CompleteRequest" => CompleteRequestParams;
    response "CompleteResultResponse" => CompleteResult;
    // --- logging.rs ---
    plain "LoggingLevel" => LoggingLevel;
    plain "SetLevelRequestParams" => SetLevelRequestParams;
    plain "LoggingMessageNotificationParams" => LoggingMessageNotificationParams;
    request "SetLevelRequest" => SetLevelRequestParams;
    notification "LoggingMessageNotification" => LoggingMessageNotificationParams;
    // --- notifications.rs ---
    plain "ProgressNotificationParams" => ProgressNotificationParams;
    plain "CancelledNotificationParams" => CancelledNotificationParams;
    notification "ProgressNotification" => ProgressNotificationParams;
    notification "CancelledNotification" => CancelledNotificationParams;
    // --- roots.rs ---
    plain "Root" => Root;
    plain "ListRootsResult" => ListRootsResult;
    // Params of only `_meta`: PaginatedRequestParams is the crate's type for those
    // (common.rs: "ping, tools/list, server/discover and the like").
    request "ListRootsRequest" => PaginatedRequestParams;
    notification "RootsListChangedNotification" => PaginatedRequestParams;
    // --- tasks.rs (2025-11-25) ---
    plain "Task" => Task;
    plain "TaskMetadata" => TaskMetadata;
    plain "TaskStatus" => TaskStatus;
    plain "RelatedTaskMetadata" => RelatedTaskMetadata;
    plain "CreateTaskResult" => CreateTaskResult;
    plain "GetTaskResult" => GetTaskResult;
    plain "GetTaskPayloadResult" => GetTaskPayloadResult;
    plain "ListTasksResult" => ListTasksResult;
    plain "CancelTaskResult" => CancelTaskResult;
    plain "TaskStatusNotificationParams" => TaskStatusNotificationParams;
    request "GetTaskRequest" => GetTaskRequestParams;
    request "GetTaskPayloadRequest" => GetTaskPayloadRequestParams;
    request "ListTasksRequest" => PaginatedRequestParams;
    request "CancelTaskRequest" => CancelTaskRequestParams;
    notification "TaskStatusNotification" => TaskStatusNotificationParams;
    // --- listen.rs (2026-07-28) ---
    plain "SubscriptionFilter" => SubscriptionFilter;
    plain "SubscriptionsListenRequestParams" => SubscriptionsListenRequestParams;
    plain "SubscriptionsListenResult" => SubscriptionsListenResult;
    plain "SubscriptionsAcknowledgedNotificationParams" => SubscriptionsAcknowledgedNotificationParams;
    request "SubscriptionsListenRequest" => SubscriptionsListenRequestParams;
    notification "SubscriptionsAcknowledgedNotification" => SubscriptionsAcknowledgedNotificationParams;
    response "SubscriptionsListenResultResponse" => SubscriptionsListenResult;
    // --- elicitation.rs ---
    plain "ElicitRequestParams" => ElicitRequestParams;
    plain "ElicitRequestFormParams" => ElicitRequestFormParams;
    plain "ElicitRequestURLParams" => ElicitRequestURLParams;
    plain "PrimitiveSchemaDefinition" => PrimitiveSchemaDefinition;
    plain "StringSchema" => StringSchema;
    plain "NumberSchema" => NumberSchema;
    plain "BooleanSchema" => BooleanSchema;
    plain "EnumSchema" => EnumSchema;
    // The single/multi-select unions are branches of EnumSchema, the Rust union.
    plain "SingleSelectEnumSchema" => EnumSchema;
    plain "MultiSelectEnumSchema" => EnumSchema;
    plain "UntitledSingleSelectEnumSchema" => UntitledSingleSelectEnumSchema;
    plain "TitledSingleSelectEnumSchema" => TitledSingleSelectEnumSchema;
    plain "UntitledMultiSelectEnumSchema" => UntitledMultiSelectEnumSchema;
    plain "TitledMultiSelectEnumSchema" => TitledMultiSelectEnumSchema;
    plain "LegacyTitledEnumSchema" => LegacyTitledEnumSchema;
    plain "ElicitResult" => ElicitResult;
    request "ElicitRequest" => ElicitRequestParams;
    notification "ElicitationCompleteNotification" => ElicitationCompleteNotificationParams;
    // --- initialize.rs (2024-11-05 to 2025-11-25) ---
    plain "InitializeRequestParams" => InitializeRequestParams;
    plain "InitializeResult" => InitializeResult;
    request "InitializeRequest" => InitializeRequestParams;
    notification "InitializedNotification" => PaginatedRequestParams;
    // --- discover.rs (2026-07-28) ---
    plain "DiscoverResult" => DiscoverResult;
    request "DiscoverRequest" => PaginatedRequestParams;
    response "DiscoverResultResponse" => DiscoverResult;
    // --- sampling.rs ---
    plain "SamplingMessage" => SamplingMessage;
    plain "ModelPreferences" => ModelPreferences;
    plain "ModelHint" => ModelHint;
    plain "ToolChoice" => ToolChoice;
    plain "CreateMessageRequestParams" => CreateMessageRequestParams;
    plain "CreateMessageResult" => CreateMessageResult;
    request "CreateMessageRequest" => CreateMessageRequestParams;
    // --- mrtr.rs (2026-07-28) ---
    plain "InputRequest" => InputRequest;
    plain "InputRequests" => InputRequests;
    plain "InputResponse" => InputResponse;
    plain "InputResponses" => InputResponses;
    plain "InputRequiredResult" => InputRequiredResult;
    plain "InputResponseRequestParams" => WithInputResponses<PaginatedRequestParams>;
    // --- dispatch.rs: the method-set unions ---
    client_request "ClientRequest";
    server_request "ServerRequest";
    client_notification "ClientNotification";
    server_notification "ServerNotification";
    // --- the JSON-RPC envelope (src/jsonrpc) ---
    // 2025-03-26's JSONRPCMessage includes batches: decode_frame reads both.
    batch "JSONRPCMessage";
    message "JSONRPCRequest";
    message "JSONRPCNotification";
    message "JSONRPCResponse";
    message "JSONRPCResultResponse";
    message "JSONRPCError";
    message "JSONRPCErrorResponse";
    batch "JSONRPCBatchRequest";
    batch "JSONRPCBatchResponse";
    plain "Error" => ErrorObject;
    plain "ParseError" => ErrorObject;
    plain "InvalidRequestError" => ErrorObject;
    plain "MethodNotFoundError" => ErrorObject;
    plain "InvalidParamsError" => ErrorObject;
    plain "InternalError" => ErrorObject;
    // --- errors.rs: error responses with typed `error.data` ---
    error_response "HeaderMismatchError";
    error_data "UnsupportedProtocolVersionError" => UnsupportedProtocolVersionErrorData;
    error_data "MissingRequiredClientCapabilityError" => MissingRequiredClientCapabilityErrorData;
    error_data "URLElicitationRequiredError" => URLElicitationRequiredErrorData;
}

/// Definitions deliberately not in the registry, each with the reason. Only pure
/// aliases of JSON and abstract bases/unions realised by the envelope belong here.
const SKIP: &[(&str, &str)] = &[
    // Abstract bases: every concrete request/notification/result is registered.
    (
        "Request",
        "abstract base of every request; realised by jsonrpc::Request",
    ),
    (
        "Notification",
        "abstract base of every notification; realised by jsonrpc::Notification",
    ),
    (
        "Result",
        "abstract base of every result; realised by jsonrpc::Response",
    ),
    (
        "PaginatedRequest",
        "abstract base of the list requests; each concrete one is registered",
    ),
    (
        "PaginatedResult",
        "abstract base of the list results; each concrete one is registered",
    ),
    (
        "Annotated",
        "2024-11-05 abstract base ({annotations}) of the content types, all registered",
    ),
    (
        "CacheableResult",
        "2026-07-28 abstract base (cacheScope, ttlMs) of the list/read results, all registered",
    ),
    (
        "BaseMetadata",
        "abstract base (name/title) flattened into Tool, Prompt, Resource, ...",
    ),
    (
        "ResourceRequestParams",
        "abstract base of the params of resources/read, subscribe, unsubscribe",
    ),
    (
        "TaskAugmentedRequestParams",
        "abstract base: `task` flattened into the task-augmentable params",
    ),
    (
        "Icons",
        "abstract base: `icons` flattened into Implementation, Tool, Prompt, ...",
    ),
    (
        "ResourceContents",
        "abstract base {uri, mimeType} of Text/BlobResourceContents (both registered); the Rust ResourceContents is their union",
    ),
    (
        "ClientResult",
        "union of results: a result is typed by the request it answers (Response::result_as), there is no method to dispatch on; every member is registered",
    ),
    (
        "ServerResult",
        "union of results: a result is typed by the request it answers (Response::result_as), there is no method to dispatch on; every member is registered",
    ),
    // Pure JSON aliases: serde_json::Value / Map is the type.
    ("JSONValue", "any JSON value: serde_json::Value"),
    ("JSONObject", "any JSON object: serde_json::Map"),
    ("JSONArray", "any JSON array: Vec<serde_json::Value>"),
];

/// Round-trip failures still expected: (definitions separated by `|`, or `*`;
/// revision, `*`, or `examples` for a failure seen only in a 2026-07-28 example;
/// reason; a substring the failure message must contain). Only
/// failures matching an entry are excused, and an entry that excuses nothing fails
/// the test. It is empty: every failure found so far was fixed.
const KNOWN_FAILURES: &[(&str, &str, &str, &str)] = &[];

fn registry() -> &'static BTreeMap<&'static str, &'static Entry> {
    static R: OnceLock<BTreeMap<&'static str, &'static Entry>> = OnceLock::new();
    R.get_or_init(|| {
        let mut m = BTreeMap::new();
        for e in REGISTRY {
            assert!(m.insert(e.name, e).is_none(), "{} registered twice", e.name);
        }
        m
    })
}

/// Whether a KNOWN_FAILURES definition field (`A|B|C` or `*`) names `def`.
fn def_matches(field: &str, def: &str) -> bool {
    field == "*" || field.split('|').any(|d| d == def)
}

/// The KNOWN_FAILURES entry (its index) that excuses this failure, if any.
fn known_failure(f: &Failure) -> Option<usize> {
    KNOWN_FAILURES.iter().position(|(d, r, _, pat)| {
        def_matches(d, &f.def)
            && (*r == f.rev || *r == "*" || (*r == "examples" && f.example))
            && f.what.contains(pat)
    })
}

// --- round-trip functions, one per kind ---

fn to_text(v: &Value) -> String {
    serde_json::to_string(v).expect("a Value always serializes")
}

fn reparse(text: &[u8]) -> Result<Value, String> {
    serde_json::from_slice(text).map_err(|e| format!("output is not JSON: {e}"))
}

/// The value is an instance of `T`.
fn plain<T: DeserializeOwned + Serialize>(v: &Value) -> Result<Value, String> {
    let t: T = serde_json::from_str(&to_text(v)).map_err(|e| format!("decode: {e}"))?;
    let out = serde_json::to_string(&t).map_err(|e| format!("encode: {e}"))?;
    reparse(out.as_bytes())
}

/// Round-trips the member `key` (when present) of `obj` through `T`.
fn member<T: DeserializeOwned + Serialize>(
    obj: &Map<String, Value>,
    key: &str,
) -> Result<Map<String, Value>, String> {
    let mut out = obj.clone();
    if let Some(p) = obj.get(key) {
        out.insert(
            key.into(),
            plain::<T>(p).map_err(|e| format!("{key}: {e}"))?,
        );
    }
    Ok(out)
}

/// A JSON-RPC message through the envelope: decode, re-encode.
fn message(v: &Value) -> Result<Value, String> {
    let m = Message::decode(to_text(v).as_bytes()).map_err(|e| format!("envelope: {e}"))?;
    reparse(&m.encode())
}

/// A 2025-03-26 batch (or a single message) through `decode_frame`.
fn batch(v: &Value) -> Result<Value, String> {
    match decode_frame(to_text(v).as_bytes(), Batching::Allowed)
        .map_err(|e| format!("frame: {e}"))?
    {
        Frame::Single(m) => reparse(&m.encode()),
        Frame::Batch(items) => {
            let msgs = items
                .into_iter()
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("batch item: {e}"))?;
            reparse(&encode_batch(&msgs))
        }
    }
}

/// An error response through the envelope (`error` must classify as an error).
fn error_response(v: &Value) -> Result<Value, String> {
    let m = Message::decode(to_text(v).as_bytes()).map_err(|e| format!("envelope: {e}"))?;
    if !matches!(m, Message::Error(_)) {
        return Err("not classified as an error response".into());
    }
    reparse(&m.encode())
}

/// A request through a method-set enum of dispatch.rs: `decode` reads the
/// params by method, the enum encodes them back. With `jsonrpc` through
/// [`Message::decode`]; a bare `{method, params}` (2024-11-05 to 2025-06-18) is
/// wrapped in a request with a placeholder id and unwrapped again.
fn via_request(
    v: &Value,
    f: fn(&Request) -> Result<Request, ErrorObject>,
) -> Result<Value, String> {
    let obj = v.as_object().ok_or("not an object")?;
    if obj.contains_key("jsonrpc") {
        let m = Message::decode(to_text(v).as_bytes()).map_err(|e| format!("envelope: {e}"))?;
        let Message::Request(r) = m else {
            return Err("not classified as a request".into());
        };
        let out = f(&r).map_err(|e| format!("dispatch: {}", e.message))?;
        return reparse(&Message::Request(out).encode());
    }
    let method = obj
        .get("method")
        .and_then(Value::as_str)
        .ok_or("no method")?;
    let r = Request {
        id: RequestId::from(0),
        method: method.into(),
        params: obj.get("params").map(raw),
    };
    let out = f(&r).map_err(|e| format!("dispatch: {}", e.message))?;
    unwrap_bare(obj, out.method, out.params)
}

/// Like [`via_request`], for notifications.
fn via_notification(
    v: &Value,
    f: fn(&Notification) -> Result<Notification, ErrorObject>,
) -> Result<Value, String> {
    let obj = v.as_object().ok_or("not an object")?;
    if obj.contains_key("jsonrpc") {
        let m = Message::decode(to_text(v).as_bytes()).map_err(|e| format!("envelope: {e}"))?;
        let Message::Notification(n) = m else {
            return Err("not classified as a notification".into());
        };
        let out = f(&n).map_err(|e| format!("dispatch: {}", e.message))?;
        return reparse(&Message::Notification(out).encode());
    }
    let method = obj
        .get("method")
        .and_then(Value::as_str)
        .ok_or("no method")?;
    let n = Notification {
        method: method.into(),
        params: obj.get("params").map(raw),
    };
    let out = f(&n).map_err(|e| format!("dispatch: {}", e.message))?;
    unwrap_bare(obj, out.method, out.params)
}

/// The bare `{method, params}` object again, other members as they were.
fn unwrap_bare(
    obj: &Map<String, Value>,
    method: String,
    params: Option<Box<RawValue>>,
) -> Result<Value, String> {
    let mut out = obj.clone();
    out.insert("method".into(), Value::String(method));
    match params {
        Some(p) => {
            out.insert("params".into(), reparse(p.get().as_bytes())?);
        }
        None => {
            out.remove("params");
        }
    }
    Ok(Value::Object(out))
}

fn raw(v: &Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(v).expect("a Value always serializes")
}

fn client_request(v: &Value) -> Result<Value, String> {
    via_request(v, |r| {
        ClientRequest::from_request(r).map(|c| c.to_request(r.id.clone()))
    })
}

fn server_request(v: &Value) -> Result<Value, String> {
    via_request(v, |r| {
        ServerRequest::from_request(r).map(|c| c.to_request(r.id.clone()))
    })
}

fn client_notification(v: &Value) -> Result<Value, String> {
    via_notification(v, |n| {
        ClientNotification::from_notification(n).map(|c| c.to_notification())
    })
}

fn server_notification(v: &Value) -> Result<Value, String> {
    via_notification(v, |n| {
        ServerNotification::from_notification(n).map(|c| c.to_notification())
    })
}

/// `InputRequiredResult | T`, the `result` of 2026-07-28's `CallToolResultResponse`,
/// `GetPromptResultResponse` and `ReadResourceResultResponse`, told apart by
/// `resultType` as a client does. Test-side: the crate has no such union (yet).
#[derive(Serialize)]
#[serde(untagged)]
enum OrInputRequired<T> {
    Input(Box<InputRequiredResult>),
    Done(T),
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for OrInputRequired<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        if v.get("resultType").and_then(Value::as_str) == Some("input_required") {
            serde_json::from_value(v)
                .map(OrInputRequired::Input)
                .map_err(de::Error::custom)
        } else {
            serde_json::from_value(v)
                .map(OrInputRequired::Done)
                .map_err(de::Error::custom)
        }
    }
}

/// An error response whose `error.data` (when present) is a `D`.
fn error_data<D: DeserializeOwned + Serialize>(v: &Value) -> Result<Value, String> {
    let m = Message::decode(to_text(v).as_bytes()).map_err(|e| format!("envelope: {e}"))?;
    let Message::Error(mut e) = m else {
        return Err("not classified as an error response".into());
    };
    if let Some(data) = &e.error.data {
        let typed: D = serde_json::from_str(data.get()).map_err(|e| format!("data: {e}"))?;
        e.error.data =
            Some(serde_json::value::to_raw_value(&typed).map_err(|e| format!("data: {e}"))?);
    }
    reparse(&Message::Error(e).encode())
}

/// A request: with `jsonrpc` through [`Message::decode`] and `params` as `P`;
/// without (the `{method, params}` definitions of 2024-11-05 to 2025-06-18 and
/// 2026-07-28 `InputRequest`s), `params` as `P` directly.
fn request<P: DeserializeOwned + Serialize>(v: &Value) -> Result<Value, String> {
    let obj = v.as_object().ok_or("not an object")?;
    if !obj.contains_key("jsonrpc") {
        if !obj.contains_key("params") {
            plain::<P>(&json!({})).map_err(|e| format!("absent params as {{}}: {e}"))?;
        }
        return member::<P>(obj, "params").map(Value::Object);
    }
    let m = Message::decode(to_text(v).as_bytes()).map_err(|e| format!("envelope: {e}"))?;
    let Message::Request(mut r) = m else {
        return Err("not classified as a request".into());
    };
    match &r.params {
        Some(p) => {
            let typed: P = serde_json::from_str(p.get()).map_err(|e| format!("params: {e}"))?;
            r.params =
                Some(serde_json::value::to_raw_value(&typed).map_err(|e| format!("params: {e}"))?);
        }
        None => {
            r.params_as::<P>()
                .map_err(|e| format!("absent params as {{}}: {e}"))?;
        }
    }
    reparse(&Message::Request(r).encode())
}

/// A notification; like [`request`].
fn notification<P: DeserializeOwned + Serialize>(v: &Value) -> Result<Value, String> {
    let obj = v.as_object().ok_or("not an object")?;
    if !obj.contains_key("jsonrpc") {
        if !obj.contains_key("params") {
            plain::<P>(&json!({})).map_err(|e| format!("absent params as {{}}: {e}"))?;
        }
        return member::<P>(obj, "params").map(Value::Object);
    }
    let m = Message::decode(to_text(v).as_bytes()).map_err(|e| format!("envelope: {e}"))?;
    let Message::Notification(mut n) = m else {
        return Err("not classified as a notification".into());
    };
    match &n.params {
        Some(p) => {
            let typed: P = serde_json::from_str(p.get()).map_err(|e| format!("params: {e}"))?;
            n.params =
                Some(serde_json::value::to_raw_value(&typed).map_err(|e| format!("params: {e}"))?);
        }
        None => {
            n.params_as::<P>()
                .map_err(|e| format!("absent params as {{}}: {e}"))?;
        }
    }
    reparse(&Message::Notification(n).encode())
}

/// A success response (`*ResultResponse`, 2026-07-28): `result` as `R`.
fn response<R: DeserializeOwned + Serialize>(v: &Value) -> Result<Value, String> {
    let m = Message::decode(to_text(v).as_bytes()).map_err(|e| format!("envelope: {e}"))?;
    let Message::Response(mut r) = m else {
        return Err("not classified as a success response".into());
    };
    let typed: R = r.result_as().map_err(|e| format!("result: {e}"))?;
    r.result = serde_json::value::to_raw_value(&typed).map_err(|e| format!("result: {e}"))?;
    reparse(&Message::Response(r).encode())
}

// ---------------------------------------------------------------------------
// Schemas and validators
// ---------------------------------------------------------------------------

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// One revision's schema document.
struct Rev {
    name: &'static str,
    doc: Value,
    /// `definitions` (draft-07) or `$defs` (2020-12).
    defs_key: &'static str,
}

impl Rev {
    fn defs(&self) -> &Map<String, Value> {
        self.doc[self.defs_key]
            .as_object()
            .expect("definitions object")
    }

    /// A validator for `{"$ref": "#/<defs>/<name>"}` against the whole document.
    fn validator(&self, name: &str) -> jsonschema::Validator {
        let mut schema = self.doc.clone();
        schema
            .as_object_mut()
            .unwrap()
            .insert("$ref".into(), json!(format!("#/{}/{name}", self.defs_key)));
        jsonschema::options()
            .should_validate_formats(true)
            .build(&schema)
            .unwrap_or_else(|e| panic!("{} {name}: schema does not compile: {e}", self.name))
    }
}

fn revisions() -> &'static [Rev] {
    static R: OnceLock<Vec<Rev>> = OnceLock::new();
    R.get_or_init(|| {
        REVISIONS
            .iter()
            .map(|&name| {
                let path = fixtures().join(format!("schema/{name}.json"));
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let doc: Value = serde_json::from_str(&text).expect("schema is JSON");
                let defs_key = if doc.get("$defs").is_some() {
                    "$defs"
                } else {
                    "definitions"
                };
                Rev {
                    name,
                    doc,
                    defs_key,
                }
            })
            .collect()
    })
}

fn validation_errors(v: &jsonschema::Validator, instance: &Value) -> Option<String> {
    let errs: Vec<String> = v
        .iter_errors(instance)
        .take(3)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    (!errs.is_empty()).then(|| errs.join("; "))
}

// ---------------------------------------------------------------------------
// Instance generator
// ---------------------------------------------------------------------------

/// Past this depth the generator stops filling optional members.
const FULL_DEPTH: usize = 7;
/// Past this depth a union picks a non-recursive branch where it can.
const HARD_DEPTH: usize = 12;

/// Members the schema leaves as a plain `string` but the spec's prose fixes for a
/// definition: (definition, member, value). 2026-07-28 "Multi round-trip requests":
/// an InputRequiredResult is the result whose `resultType` is `"input_required"`.
const FIXED_BY_PROSE: &[(&str, &str, &str)] =
    &[("InputRequiredResult", "resultType", "input_required")];

/// The definition a `{"$ref": ...}` schema names, if it is one.
fn ref_name(s: &Value) -> Option<&str> {
    s.get("$ref")?.as_str()?.rsplit('/').next()
}

/// A deterministic, schema-driven instance generator for one revision.
struct Gen<'a> {
    rev: &'a Rev,
    /// Every property, or only the required ones.
    maximal: bool,
    /// Add `"x-future"` to every open object (not to the JSON-RPC envelope itself).
    future: bool,
    /// Which branch of each union (offset by the position in the instance).
    variant: usize,
    /// The widest union met so far: how many variants are worth generating.
    widest: usize,
}

fn x_future() -> Value {
    json!({"nested": [1, "two", null, {"deep": true}], "note": "sent by a newer peer"})
}

impl<'a> Gen<'a> {
    fn resolve(&self, s: &'a Value) -> &'a Value {
        let mut s = s;
        for _ in 0..16 {
            match s.get("$ref").and_then(Value::as_str) {
                Some(r) => {
                    let name = r.rsplit('/').next().expect("a $ref names a definition");
                    s = &self.rev.defs()[name];
                }
                None => return s,
            }
        }
        s
    }

    fn pick(&mut self, n: usize, salt: usize) -> usize {
        self.widest = self.widest.max(n);
        (self.variant + salt) % n
    }

    fn any(&mut self, salt: usize) -> Value {
        match self.pick(4, salt) {
            0 if self.maximal => json!({"any": [1, "two", true, null, 2.5, {"k": "v"}]}),
            0 => json!({}),
            1 => json!("any value"),
            2 => json!(12),
            _ => Value::Null,
        }
    }

    /// A branch that does not lead back into a union or object, if any.
    fn shallow_branch(&self, branches: &'a [Value]) -> Option<&'a Value> {
        branches.iter().find(|b| {
            let b = self.resolve(b);
            b.get("anyOf").is_none()
                && b.get("oneOf").is_none()
                && b.get("properties").is_none()
                && b.get("items").is_none()
        })
    }

    fn gen(&mut self, s: &'a Value, depth: usize, salt: usize, name: &str) -> Value {
        let target = ref_name(s);
        let s = self.resolve(s);
        if let Some(def) = target {
            if let Some((_, prop, value)) = FIXED_BY_PROSE.iter().find(|(d, _, _)| *d == def) {
                let mut v = self.gen(s, depth, salt, name);
                if let Some(o) = v.as_object_mut() {
                    o.insert((*prop).into(), json!(value));
                }
                return v;
            }
        }
        let Some(obj) = s.as_object() else {
            // `true` (anything); `false` never occurs in these schemas.
            return self.any(salt);
        };
        if let Some(c) = obj.get("const") {
            return c.clone();
        }
        if let Some(Value::Array(options)) = obj.get("enum") {
            let i = self.pick(options.len(), salt);
            return options[i].clone();
        }
        if let Some(Value::Array(parts)) = obj.get("allOf") {
            let mut out = Value::Null;
            for p in parts {
                let v = self.gen(p, depth, salt, name);
                merge(&mut out, v);
            }
            return out;
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = obj.get(key) {
                if depth > HARD_DEPTH {
                    if let Some(b) = self.shallow_branch(branches) {
                        return self.gen(b, depth + 1, salt, name);
                    }
                }
                let i = self.pick(branches.len(), salt);
                return self.gen(&branches[i], depth + 1, salt, name);
            }
        }
        let ty = match obj.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(Value::Array(ts)) => {
                let i = self.pick(ts.len(), salt);
                ts[i].as_str().expect("type names are strings")
            }
            _ if obj.contains_key("properties") || obj.contains_key("additionalProperties") => {
                "object"
            }
            _ if obj.contains_key("items") => "array",
            _ => return self.any(salt),
        };
        match ty {
            "object" => self.object(obj, depth, salt),
            "array" => self.array(obj, depth, salt, name),
            "string" => self.string(obj, salt, name),
            "integer" => self.integer(obj, salt),
            "number" => self.number(obj),
            "boolean" => json!((self.variant + salt) % 2 == 0),
            "null" => Value::Null,
            other => panic!("{}: unknown type {other}", self.rev.name),
        }
    }

    fn object(&mut self, s: &'a Map<String, Value>, depth: usize, salt: usize) -> Value {
        let props: Vec<(&'a String, &'a Value)> = s
            .get("properties")
            .and_then(Value::as_object)
            .map(|m| m.iter().collect())
            .unwrap_or_default();
        let required: BTreeSet<&str> = s
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let full = self.maximal && depth <= FULL_DEPTH;
        let mut out = Map::new();
        let has_jsonrpc = props.iter().any(|(k, _)| k.as_str() == "jsonrpc");
        for (i, &(name, ps)) in props.iter().enumerate() {
            if required.contains(name.as_str()) || full {
                let v = self.gen(ps, depth + 1, salt + i, name);
                out.insert(name.clone(), v);
            }
        }
        // `additionalProperties`: absent, `true` and `{}` leave the object open; a
        // schema with content makes a map of that schema.
        let ap = s.get("additionalProperties");
        let open = match ap {
            None | Some(Value::Bool(true)) => true,
            Some(Value::Object(m)) => m.is_empty(),
            _ => false,
        };
        if let Some(ap @ Value::Object(m)) = ap {
            if !m.is_empty() && full {
                for k in 0..2 {
                    let v = self.gen(ap, depth + 1, salt + k, "entry");
                    out.insert(format!("entry-{k}"), v);
                }
            }
        }
        if open && props.is_empty() && full {
            out.insert("key".into(), self.any(salt + 1));
        }
        if open && self.future && !has_jsonrpc {
            out.insert("x-future".into(), x_future());
        }
        Value::Object(out)
    }

    fn array(&mut self, s: &'a Map<String, Value>, depth: usize, salt: usize, name: &str) -> Value {
        if !(self.maximal && depth <= FULL_DEPTH) {
            return json!([]);
        }
        let item = s.get("items").unwrap_or(&Value::Bool(true));
        // One item per branch of an item union, so a content array shows every kind.
        let r = self.resolve(item);
        let branches = ["anyOf", "oneOf"]
            .iter()
            .find_map(|k| r.get(*k).and_then(Value::as_array))
            .map_or(1, Vec::len);
        let mut n = branches.max(2);
        if let Some(max) = s.get("maxItems").and_then(Value::as_u64) {
            n = n.min(max as usize);
        }
        (0..n)
            .map(|i| self.gen(item, depth + 1, salt + i, name))
            .collect()
    }

    fn string(&mut self, s: &Map<String, Value>, salt: usize, name: &str) -> Value {
        let text = match s.get("format").and_then(Value::as_str) {
            Some("uri") => format!("https://example.com/{name}/{salt}?q=%20x#frag"),
            Some("uri-template") => "https://example.com/{path}{?query}".into(),
            Some("byte") => "aGVsbG8sIHdvcmxkIQ==".into(),
            Some("date-time") => "2025-01-02T03:04:05Z".into(),
            Some("email") => "someone@example.com".into(),
            // Method names of every revision are plain ASCII, and the envelope
            // refuses a `method` written with JSON escapes (src/jsonrpc/message.rs).
            _ if name == "method" => format!("x-vendor/method-{salt}"),
            _ => match self.pick(3, salt) {
                0 => format!("{name}-{salt}"),
                1 => format!("{name} \"quoted\" \\ \n\t é ✓ 🦀"),
                _ => String::new(),
            },
        };
        Value::String(text)
    }

    fn integer(&mut self, s: &Map<String, Value>, salt: usize) -> Value {
        let min = s.get("minimum").and_then(Value::as_i64);
        let max = s.get("maximum").and_then(Value::as_i64);
        let candidates = [42_i64, 9_007_199_254_740_991, -7, 0];
        let i = self.pick(candidates.len(), salt);
        let mut v = candidates[i];
        if let Some(min) = min {
            v = v.max(min);
        }
        if let Some(max) = max {
            v = v.min(max);
        }
        json!(v)
    }

    fn number(&mut self, s: &Map<String, Value>) -> Value {
        let min = s.get("minimum").and_then(Value::as_f64);
        let max = s.get("maximum").and_then(Value::as_f64);
        let v = match (min, max) {
            (Some(a), Some(b)) => (a + b) / 2.0,
            (Some(a), None) => a + 1.5,
            (None, Some(b)) => b - 1.5,
            (None, None) => 2.5,
        };
        json!(v)
    }
}

/// `allOf`: objects merge member-wise (recursively), anything else is replaced.
fn merge(into: &mut Value, v: Value) {
    match (into, v) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, vb) in b {
                match a.get_mut(&k) {
                    Some(va) => merge(va, vb),
                    None => {
                        a.insert(k, vb);
                    }
                }
            }
        }
        (slot, v) => *slot = v,
    }
}

/// The generated instances of one definition: maximal and minimal, each union
/// branch in turn, with and without `x-future`; duplicates removed.
fn instances(rev: &Rev, def: &str) -> Vec<(String, Value)> {
    let schema = json!({"$ref": format!("#/{}/{def}", rev.defs_key)});
    let mut out: Vec<(String, Value)> = Vec::new();
    let mut seen = BTreeSet::new();
    for (maximal, future) in [(true, false), (false, false), (true, true), (false, true)] {
        let mut variant = 0;
        let mut widest = 1;
        while variant < widest.max(4) && variant < 32 {
            let mut g = Gen {
                rev,
                maximal,
                future,
                variant,
                widest: 1,
            };
            let v = g.gen(&schema, 0, 0, def);
            widest = widest.max(g.widest);
            let label = format!(
                "{}{}#{variant}",
                if maximal { "maximal" } else { "minimal" },
                if future { "+x-future" } else { "" }
            );
            if seen.insert(to_text(&v)) {
                out.push((label, v));
            }
            variant += 1;
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Comparison
// ---------------------------------------------------------------------------

/// Equality of JSON values in JSON's data model: numbers compare by value (`7` and
/// `7.0` are the same number), everything else structurally; member order is free.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y || (x.as_f64().is_some() && x.as_f64() == y.as_f64())
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Where two JSON values first differ, as `path: expected → got` lines.
fn diff(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    if out.len() >= 6 || json_eq(a, b) {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) => diff(&format!("{path}/{k}"), v, w, out),
                    None => out.push(format!("{path}/{k}: dropped (was {})", short(v))),
                }
            }
            for (k, w) in y {
                if !x.contains_key(k) {
                    out.push(format!("{path}/{k}: added {}", short(w)));
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                diff(&format!("{path}/{i}"), v, w, out);
            }
        }
        _ => out.push(format!("{path}: {} became {}", short(a), short(b))),
    }
}

fn short(v: &Value) -> String {
    let t = to_text(v);
    if t.chars().count() > 120 {
        format!("{}…", t.chars().take(120).collect::<String>())
    } else {
        t
    }
}

// ---------------------------------------------------------------------------
// Checking
// ---------------------------------------------------------------------------

/// One failed check.
#[derive(Debug)]
struct Failure {
    /// Found in a 2026-07-28 example file (not a generated instance).
    example: bool,
    def: String,
    rev: String,
    instance: String,
    what: String,
}

/// Round-trips `instance` through `entry` and checks equality and validity.
fn check(entry: &Entry, v: &jsonschema::Validator, instance: &Value) -> Result<(), String> {
    let out = (entry.roundtrip)(instance)?;
    if !json_eq(instance, &out) {
        let mut d = Vec::new();
        diff("", instance, &out, &mut d);
        return Err(format!("not equal after the round trip: {}", d.join("; ")));
    }
    if let Some(e) = validation_errors(v, &out) {
        return Err(format!("output invalid: {e}"));
    }
    Ok(())
}

/// Splits failures into expected (KNOWN_FAILURES) and unexpected, reports both,
/// and panics on unexpected ones and on KNOWN_FAILURES entries that now pass.
/// `owns_entry` says which KNOWN_FAILURES entries (by revision field) this check is
/// responsible for keeping fresh: the generated-instance check owns every entry
/// except those of revision `examples`, which the examples check owns.
fn settle(
    title: &str,
    checked: usize,
    failures: Vec<Failure>,
    scope: &[(String, String)],
    owns_entry: fn(&str) -> bool,
) {
    let mut unexpected = String::new();
    // Entry index → (failures excused, the definitions and revisions they hit).
    let mut known = BTreeMap::<usize, (usize, BTreeSet<String>)>::new();
    for f in &failures {
        match known_failure(f) {
            Some(i) => {
                let e = known.entry(i).or_default();
                e.0 += 1;
                e.1.insert(format!("{} ({})", f.def, f.rev));
            }
            None => {
                let _ = writeln!(
                    unexpected,
                    "- {} ({}) [{}]: {}",
                    f.def, f.rev, f.instance, f.what
                );
            }
        }
    }
    println!(
        "{title}: {checked} checks, {} failures ({} known)",
        failures.len(),
        known.values().map(|(n, _)| n).sum::<usize>()
    );
    for (i, (n, hits)) in &known {
        let (d, r, why, _) = KNOWN_FAILURES[*i];
        println!("  known failure {d} ({r}) x{n}: {why}");
        println!(
            "    in: {}",
            hits.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    // An entry whose definition this check covered but which excused nothing is
    // stale.
    let stale: Vec<String> = KNOWN_FAILURES
        .iter()
        .enumerate()
        .filter(|(i, (d, r, _, _))| {
            owns_entry(r)
                && !known.contains_key(i)
                && scope.iter().any(|(sd, sr)| {
                    def_matches(d, sd) && (*r == "*" || *r == "examples" || sr == r)
                })
        })
        .map(|(_, (d, r, _, pat))| format!("{d} ({r}) {pat:?}"))
        .collect();
    assert!(
        unexpected.is_empty(),
        "{title}: unexpected failures:\n{unexpected}"
    );
    assert!(
        stale.is_empty(),
        "{title}: KNOWN_FAILURES entries that now pass (remove them): {stale:?}"
    );
}

/// (c), (f): every generated instance of every registered definition of every
/// revision survives the round trip and stays valid.
#[test]
fn typed_round_trip_of_generated_instances() {
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut scope = Vec::new();
    let mut generator_bugs = String::new();
    for rev in revisions() {
        let mut per_rev = 0;
        for def in rev.defs().keys() {
            let Some(entry) = registry().get(def.as_str()) else {
                continue;
            };
            scope.push((def.clone(), rev.name.to_string()));
            let v = rev.validator(def);
            for (label, inst) in instances(rev, def) {
                if inst == json!([]) && entry.kind == "batch" {
                    // The schema has no minItems, but JSON-RPC 2.0 §6 makes an empty
                    // batch an invalid request; the envelope answers it with -32600.
                    continue;
                }
                if let Some(e) = validation_errors(&v, &inst) {
                    let _ = writeln!(
                        generator_bugs,
                        "- {def} ({}) [{label}]: {e}\n  {}",
                        rev.name,
                        short(&inst)
                    );
                    continue;
                }
                checked += 1;
                per_rev += 1;
                if let Err(what) = check(entry, &v, &inst) {
                    failures.push(Failure {
                        example: false,
                        def: def.clone(),
                        rev: rev.name.into(),
                        instance: format!("{label} {}", short(&inst)),
                        what,
                    });
                }
            }
        }
        println!("{}: {per_rev} instances checked", rev.name);
    }
    assert!(
        generator_bugs.is_empty(),
        "the generator built invalid instances:\n{generator_bugs}"
    );
    settle("generated instances", checked, failures, &scope, |r| {
        r != "examples"
    });
}

/// (d): every definition of every revision is registered or skipped with a reason.
#[test]
fn every_definition_is_covered() {
    let skip: BTreeMap<&str, &str> = SKIP.iter().copied().collect();
    for (name, _) in SKIP {
        assert!(
            !registry().contains_key(name),
            "{name} is both registered and skipped"
        );
    }
    let mut missing = String::new();
    for rev in revisions() {
        let defs: Vec<&String> = rev.defs().keys().collect();
        let covered = defs
            .iter()
            .filter(|d| registry().contains_key(d.as_str()))
            .count();
        let skipped: Vec<&&String> = defs
            .iter()
            .filter(|d| skip.contains_key(d.as_str()))
            .collect();
        let absent: Vec<&&String> = defs
            .iter()
            .filter(|d| !registry().contains_key(d.as_str()) && !skip.contains_key(d.as_str()))
            .collect();
        println!(
            "{}: {} definitions, {covered} covered, {} skipped, {} missing",
            rev.name,
            defs.len(),
            skipped.len(),
            absent.len()
        );
        for s in &skipped {
            println!("  skipped {s}: {}", skip[s.as_str()]);
        }
        for a in &absent {
            println!("  MISSING {a}");
            let _ = writeln!(missing, "{} {a}", rev.name);
        }
    }
    // A name registered or skipped that no revision defines is a typo.
    let all: BTreeSet<&str> = revisions()
        .iter()
        .flat_map(|r| r.defs().keys().map(String::as_str))
        .collect();
    for name in registry().keys().chain(skip.keys()) {
        assert!(all.contains(name), "{name} is in no revision's schema");
    }
    assert!(
        missing.is_empty(),
        "definitions neither registered nor skipped:\n{missing}"
    );
}

/// (e): every 2026-07-28 example decodes into the type its folder names, comes back
/// equal, and is valid against the 2026-07-28 schema.
#[test]
fn examples_2026_07_28_round_trip() {
    let rev = revisions()
        .iter()
        .find(|r| r.name == "2026-07-28")
        .expect("2026-07-28 schema");
    let root = fixtures().join("examples/2026-07-28");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("examples fixture")
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    let mut failures = Vec::new();
    let mut unregistered = Vec::new();
    let mut scope = Vec::new();
    let mut checked = 0;
    for dir in dirs {
        let def = dir.file_name().unwrap().to_string_lossy().into_owned();
        let v = rev.validator(&def);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        scope.push((def.clone(), rev.name.to_string()));
        for file in files {
            let fname = file.file_name().unwrap().to_string_lossy().into_owned();
            let inst: Value = serde_json::from_slice(&std::fs::read(&file).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            if let Some(e) = validation_errors(&v, &inst) {
                panic!("example {def}/{fname} is not valid against the schema: {e}");
            }
            let Some(entry) = registry().get(def.as_str()) else {
                unregistered.push(format!("{def}/{fname}"));
                continue;
            };
            checked += 1;
            if let Err(what) = check(entry, &v, &inst) {
                failures.push(Failure {
                    example: true,
                    def: def.clone(),
                    rev: rev.name.into(),
                    instance: fname,
                    what,
                });
            }
        }
    }
    println!(
        "examples: {checked} checked, {} without a registered type",
        unregistered.len()
    );
    for u in &unregistered {
        println!("  unregistered example {u}");
    }
    settle("2026-07-28 examples", checked, failures, &scope, |r| {
        r == "examples"
    });
    assert!(
        unregistered.is_empty(),
        "examples whose folder names no registered type: {unregistered:?}"
    );
}

/// (f): every `JSONRPC*` definition's instances decode through the envelope and
/// re-encode to equal JSON, whatever the registry says.
#[test]
fn envelope_definitions_round_trip() {
    let mut failures = Vec::new();
    let mut scope = Vec::new();
    let mut checked = 0;
    for rev in revisions() {
        for def in rev.defs().keys().filter(|d| d.starts_with("JSONRPC")) {
            let v = rev.validator(def);
            let entry = Entry {
                name: "envelope",
                kind: "message",
                // decode_frame reads a batch (2025-03-26) or a single message.
                roundtrip: if def.contains("Batch") || def == "JSONRPCMessage" {
                    batch
                } else {
                    message
                },
            };
            scope.push((def.clone(), rev.name.to_string()));
            for (label, inst) in instances(rev, def) {
                if validation_errors(&v, &inst).is_some() {
                    continue; // reported by typed_round_trip_of_generated_instances
                }
                if inst == json!([]) {
                    // The schema has no minItems, but JSON-RPC 2.0 §6 makes an empty
                    // batch an invalid request; the envelope answers it with -32600.
                    continue;
                }
                checked += 1;
                if let Err(what) = check(&entry, &v, &inst) {
                    failures.push(Failure {
                        example: false,
                        def: def.clone(),
                        rev: rev.name.into(),
                        instance: format!("{label} {} {}", entry.name, short(&inst)),
                        what,
                    });
                }
            }
        }
    }
    settle("envelope definitions", checked, failures, &scope, |_| false);
}

/// The generator itself: deterministic, and maximal instances carry every property.
#[test]
fn generator_is_deterministic_and_maximal() {
    let rev = &revisions()[0];
    let a = instances(rev, "Tool");
    let b = instances(rev, "Tool");
    assert_eq!(a, b);
    let (_, max) = &a[0];
    let props = rev.defs()["Tool"]["properties"].as_object().unwrap();
    for p in props.keys() {
        assert!(max.get(p).is_some(), "maximal Tool lacks {p}");
    }
    let min = a
        .iter()
        .find(|(l, _)| l.starts_with("minimal#"))
        .map(|(_, v)| v)
        .unwrap();
    let req: BTreeSet<&str> = rev.defs()["Tool"]["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let keys: BTreeSet<&str> = min
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, req);
    // The validators are not vacuous in either draft: `{}` lacks Implementation's
    // required name and version in every revision.
    for rev in revisions() {
        let v = rev.validator("Implementation");
        assert!(
            validation_errors(&v, &json!({})).is_some(),
            "{}: the validator accepts anything",
            rev.name
        );
        assert!(validation_errors(&v, &json!({"name": "n", "version": "1"})).is_none());
    }
    // The registry's kinds are the ones the round-trip functions implement.
    for e in REGISTRY {
        assert!(
            [
                "plain",
                "request",
                "notification",
                "response",
                "message",
                "batch",
                "error_response",
                "error_data",
                "client_request",
                "server_request",
                "client_notification",
                "server_notification"
            ]
            .contains(&e.kind),
            "{}: kind {}",
            e.name,
            e.kind
        );
    }
}

/// The harness can fail: a type that drops unknown members, or that writes `null`
/// for an absent member, is caught on generated instances.
#[test]
fn harness_catches_lossy_types() {
    #[derive(Serialize, Deserialize)]
    struct DropsUnknown {
        name: String,
        version: String,
    }
    #[derive(Serialize, Deserialize)]
    struct WritesNull {
        name: String,
        version: String,
        title: Option<String>,
        #[serde(flatten)]
        extra: Map<String, Value>,
    }
    let rev = revisions()
        .iter()
        .find(|r| r.name == "2025-11-25")
        .expect("2025-11-25 schema");
    let v = rev.validator("Implementation");
    let lossy: [(&str, RoundTrip); 2] = [
        ("drops unknown members", plain::<DropsUnknown>),
        ("writes null for absent title", plain::<WritesNull>),
    ];
    for (what, roundtrip) in lossy {
        let entry = Entry {
            name: "Implementation",
            kind: "plain",
            roundtrip,
        };
        let caught = instances(rev, "Implementation")
            .iter()
            .filter(|(_, inst)| check(&entry, &v, inst).is_err())
            .count();
        assert!(caught > 0, "a type that {what} went unnoticed");
    }
    // The real type passes the same instances.
    let real = registry()["Implementation"];
    for (label, inst) in instances(rev, "Implementation") {
        check(real, &v, &inst).unwrap_or_else(|e| panic!("{label}: {e}"));
    }
}
