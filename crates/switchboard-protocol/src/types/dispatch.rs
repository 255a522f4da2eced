//! The typed method sets: every request and notification of every revision, per
//! direction, as one enum each, decoded from (and encoded back to) the JSON-RPC
//! envelope.
//!
//! - [`ClientRequest`]: client→server requests (2024-11-05 to 2026-07-28).
//! - [`ServerRequest`]: server→client requests (2024-11-05 to 2025-11-25; 2026-07-28
//!   has none, see [`crate::types::InputRequest`]).
//! - [`ClientNotification`], [`ServerNotification`]: notifications per direction.
//!
//! Each enum has one variant per method holding its typed params, and an `Other`
//! variant for any method it does not know, keeping the method name and the raw
//! params: an unknown method is not an error here (whether to answer -32601 is the
//! caller's decision, e.g. per revision). A known method with bad params is an
//! [`ErrorObject`] with code -32602 naming the method and serde's reason. Methods
//! whose params are optional in the schema hold an `Option`, so a message without
//! `params` is re-encoded without them.
//!
//! Sources: the `ClientRequest`, `ServerRequest`, `ClientNotification` and
//! `ServerNotification` unions of each revision's schema. This module must not know
//! which methods a revision or a peer's capabilities allow; that is the caller's.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;

use super::common::PaginatedRequestParams;
use super::completion::{CompleteRequestParams, COMPLETION_COMPLETE};
use super::discover::SERVER_DISCOVER;
use super::elicitation::{
    ElicitRequestParams, ElicitationCompleteNotificationParams, ELICITATION_CREATE,
    NOTIFICATION_ELICITATION_COMPLETE,
};
use super::initialize::{InitializeRequestParams, INITIALIZE, NOTIFICATION_INITIALIZED, PING};
use super::listen::{
    SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenRequestParams,
    NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED, SUBSCRIPTIONS_LISTEN,
};
use super::logging::{
    LoggingMessageNotificationParams, SetLevelRequestParams, LOGGING_SET_LEVEL,
    NOTIFICATION_MESSAGE,
};
use super::notifications::{
    CancelledNotificationParams, ProgressNotificationParams, NOTIFICATION_CANCELLED,
    NOTIFICATION_PROGRESS,
};
use super::prompts::{
    GetPromptRequestParams, NOTIFICATION_PROMPTS_LIST_CHANGED, PROMPTS_GET, PROMPTS_LIST,
};
use super::resources::{
    ReadResourceRequestParams, ResourceUpdatedNotificationParams, SubscribeRequestParams,
    UnsubscribeRequestParams, NOTIFICATION_RESOURCES_LIST_CHANGED, NOTIFICATION_RESOURCES_UPDATED,
    RESOURCES_LIST, RESOURCES_READ, RESOURCES_SUBSCRIBE, RESOURCES_TEMPLATES_LIST,
    RESOURCES_UNSUBSCRIBE,
};
use super::roots::{NOTIFICATION_ROOTS_LIST_CHANGED, ROOTS_LIST};
use super::sampling::{CreateMessageRequestParams, SAMPLING_CREATE_MESSAGE};
use super::tasks::{
    CancelTaskRequestParams, GetTaskPayloadRequestParams, GetTaskRequestParams,
    TaskStatusNotificationParams, NOTIFICATION_TASKS_STATUS, TASKS_CANCEL, TASKS_GET, TASKS_LIST,
    TASKS_RESULT,
};
use super::tools::{
    CallToolRequestParams, NOTIFICATION_TOOLS_LIST_CHANGED, TOOLS_CALL, TOOLS_LIST,
};
use crate::jsonrpc::{code, raw_opt_eq, ErrorObject, Id, Notification, Request};

/// The -32602 answer for `method` whose params failed to decode.
fn invalid_params(method: &str, reason: &dyn std::fmt::Display) -> ErrorObject {
    ErrorObject::new(
        code::INVALID_PARAMS,
        format!("invalid params for {method}: {reason}"),
    )
}

/// Decodes params that must be a JSON object; absent params are read as `{}`.
fn decode_required<T: DeserializeOwned>(
    method: &str,
    params: Option<&RawValue>,
) -> Result<Box<T>, ErrorObject> {
    let text = params.map_or("{}", RawValue::get);
    if !text.trim_start().starts_with('{') {
        return Err(invalid_params(method, &"params must be an object"));
    }
    serde_json::from_str(text)
        .map(Box::new)
        .map_err(|e| invalid_params(method, &e))
}

/// Decodes optional params; absent params stay `None`.
fn decode_optional<T: DeserializeOwned>(
    method: &str,
    params: Option<&RawValue>,
) -> Result<Option<T>, ErrorObject> {
    match params {
        None => Ok(None),
        Some(p) => decode_required(method, Some(p)).map(|b| Some(*b)),
    }
}

/// Serializes params. The crate's params types are JSON objects with string keys,
/// for which serialization cannot fail; should it ever, `{}` is sent.
fn encode<T: Serialize>(params: &T) -> Box<RawValue> {
    serde_json::value::to_raw_value(params)
        .unwrap_or_else(|_| RawValue::from_string("{}".to_owned()).expect("`{}` is valid JSON"))
}

/// Generates a method-set enum: one variant per method (`required` params are boxed,
/// `optional` ones are an `Option`), an `Other` catch-all, `method()`, a decoder
/// matching the method string once, a params encoder and `PartialEq`.
macro_rules! method_set {
    (
        $(#[$doc:meta])*
        pub enum $name:ident {
            $(
                $(#[$vdoc:meta])*
                $variant:ident = $method:ident => $kind:ident $params:ty,
            )*
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub enum $name {
            $(
                $(#[$vdoc])*
                $variant(method_set!(@ty $kind $params)),
            )*
            /// A method not in this set, kept as received.
            Other {
                /// The method name.
                method: String,
                /// The raw params, if any.
                params: Option<Box<RawValue>>,
            },
        }

        impl $name {
            /// The method name, e.g. `tools/call`.
            pub fn method(&self) -> &str {
                match self {
                    $( $name::$variant(_) => $method, )*
                    $name::Other { method, .. } => method,
                }
            }

            /// Whether this is the catch-all [`Self::Other`] variant.
            pub fn is_other(&self) -> bool {
                matches!(self, $name::Other { .. })
            }

            fn decode(method: &str, params: Option<&RawValue>) -> Result<Self, ErrorObject> {
                match method {
                    $( $method => method_set!(@decode $kind, method, params).map($name::$variant), )*
                    _ => Ok($name::Other {
                        method: method.to_owned(),
                        params: params.map(ToOwned::to_owned),
                    }),
                }
            }

            fn encode_params(&self) -> Option<Box<RawValue>> {
                match self {
                    $( $name::$variant(p) => method_set!(@encode $kind, p), )*
                    $name::Other { params, .. } => params.clone(),
                }
            }
        }

        impl PartialEq for $name {
            /// Typed params compare by value; raw params of `Other` compare as JSON.
            fn eq(&self, other: &Self) -> bool {
                match (self, other) {
                    $( ($name::$variant(a), $name::$variant(b)) => a == b, )*
                    (
                        $name::Other { method: m1, params: p1 },
                        $name::Other { method: m2, params: p2 },
                    ) => m1 == m2 && raw_opt_eq(p1, p2),
                    _ => false,
                }
            }
        }
    };
    (@ty required $t:ty) => { Box<$t> };
    (@ty optional $t:ty) => { Option<$t> };
    (@decode required, $m:expr, $p:expr) => { decode_required($m, $p) };
    (@decode optional, $m:expr, $p:expr) => { decode_optional($m, $p) };
    (@encode required, $p:expr) => { Some(encode(&**$p)) };
    (@encode optional, $p:expr) => { $p.as_ref().map(encode) };
}

method_set! {
    /// A client→server request of any revision, with typed params (schema
    /// `ClientRequest` of 2024-11-05 to 2026-07-28).
    pub enum ClientRequest {
        /// `initialize` (2024-11-05 to 2025-11-25).
        Initialize = INITIALIZE => required InitializeRequestParams,
        /// `ping` (2024-11-05 to 2025-11-25); params optional.
        Ping = PING => optional PaginatedRequestParams,
        /// `tools/list`; params optional (required, with `_meta`, in 2026-07-28).
        ListTools = TOOLS_LIST => optional PaginatedRequestParams,
        /// `tools/call`.
        CallTool = TOOLS_CALL => required CallToolRequestParams,
        /// `resources/list`; params optional before 2026-07-28.
        ListResources = RESOURCES_LIST => optional PaginatedRequestParams,
        /// `resources/templates/list`; params optional before 2026-07-28.
        ListResourceTemplates = RESOURCES_TEMPLATES_LIST => optional PaginatedRequestParams,
        /// `resources/read`.
        ReadResource = RESOURCES_READ => required ReadResourceRequestParams,
        /// `resources/subscribe` (2024-11-05 to 2025-11-25).
        Subscribe = RESOURCES_SUBSCRIBE => required SubscribeRequestParams,
        /// `resources/unsubscribe` (2024-11-05 to 2025-11-25).
        Unsubscribe = RESOURCES_UNSUBSCRIBE => required UnsubscribeRequestParams,
        /// `prompts/list`; params optional before 2026-07-28.
        ListPrompts = PROMPTS_LIST => optional PaginatedRequestParams,
        /// `prompts/get`.
        GetPrompt = PROMPTS_GET => required GetPromptRequestParams,
        /// `completion/complete`.
        Complete = COMPLETION_COMPLETE => required CompleteRequestParams,
        /// `logging/setLevel` (2024-11-05 to 2025-11-25).
        SetLevel = LOGGING_SET_LEVEL => required SetLevelRequestParams,
        /// `tasks/get` (2025-11-25).
        GetTask = TASKS_GET => required GetTaskRequestParams,
        /// `tasks/result` (2025-11-25).
        GetTaskPayload = TASKS_RESULT => required GetTaskPayloadRequestParams,
        /// `tasks/list` (2025-11-25); params optional.
        ListTasks = TASKS_LIST => optional PaginatedRequestParams,
        /// `tasks/cancel` (2025-11-25).
        CancelTask = TASKS_CANCEL => required CancelTaskRequestParams,
        /// `server/discover` (2026-07-28); params are only `_meta`.
        Discover = SERVER_DISCOVER => optional PaginatedRequestParams,
        /// `subscriptions/listen` (2026-07-28).
        SubscriptionsListen = SUBSCRIPTIONS_LISTEN => required SubscriptionsListenRequestParams,
    }
}

method_set! {
    /// A server→client request of any revision, with typed params (schema
    /// `ServerRequest` of 2024-11-05 to 2025-11-25).
    pub enum ServerRequest {
        /// `ping`; params optional.
        Ping = PING => optional PaginatedRequestParams,
        /// `sampling/createMessage`.
        CreateMessage = SAMPLING_CREATE_MESSAGE => required CreateMessageRequestParams,
        /// `elicitation/create` (2025-06-18+).
        Elicit = ELICITATION_CREATE => required ElicitRequestParams,
        /// `roots/list`; params optional.
        ListRoots = ROOTS_LIST => optional PaginatedRequestParams,
        /// `tasks/get` (2025-11-25).
        GetTask = TASKS_GET => required GetTaskRequestParams,
        /// `tasks/result` (2025-11-25).
        GetTaskPayload = TASKS_RESULT => required GetTaskPayloadRequestParams,
        /// `tasks/list` (2025-11-25); params optional.
        ListTasks = TASKS_LIST => optional PaginatedRequestParams,
        /// `tasks/cancel` (2025-11-25).
        CancelTask = TASKS_CANCEL => required CancelTaskRequestParams,
    }
}

method_set! {
    /// A client→server notification of any revision, with typed params (schema
    /// `ClientNotification`; 2026-07-28 lists none, but a stdio client still sends
    /// `notifications/cancelled`).
    pub enum ClientNotification {
        /// `notifications/cancelled`.
        Cancelled = NOTIFICATION_CANCELLED => required CancelledNotificationParams,
        /// `notifications/progress` (client→server until 2025-11-25).
        Progress = NOTIFICATION_PROGRESS => required ProgressNotificationParams,
        /// `notifications/initialized` (2024-11-05 to 2025-11-25); params optional.
        Initialized = NOTIFICATION_INITIALIZED => optional PaginatedRequestParams,
        /// `notifications/roots/list_changed` (2024-11-05 to 2025-11-25); params
        /// optional.
        RootsListChanged = NOTIFICATION_ROOTS_LIST_CHANGED => optional PaginatedRequestParams,
        /// `notifications/tasks/status` (2025-11-25).
        TaskStatus = NOTIFICATION_TASKS_STATUS => required TaskStatusNotificationParams,
    }
}

method_set! {
    /// A server→client notification of any revision, with typed params (schema
    /// `ServerNotification` of 2024-11-05 to 2026-07-28).
    pub enum ServerNotification {
        /// `notifications/cancelled`.
        Cancelled = NOTIFICATION_CANCELLED => required CancelledNotificationParams,
        /// `notifications/progress`.
        Progress = NOTIFICATION_PROGRESS => required ProgressNotificationParams,
        /// `notifications/message` (logging).
        LoggingMessage = NOTIFICATION_MESSAGE => required LoggingMessageNotificationParams,
        /// `notifications/resources/updated`.
        ResourceUpdated = NOTIFICATION_RESOURCES_UPDATED => required ResourceUpdatedNotificationParams,
        /// `notifications/resources/list_changed`; params optional.
        ResourceListChanged = NOTIFICATION_RESOURCES_LIST_CHANGED => optional PaginatedRequestParams,
        /// `notifications/tools/list_changed`; params optional.
        ToolListChanged = NOTIFICATION_TOOLS_LIST_CHANGED => optional PaginatedRequestParams,
        /// `notifications/prompts/list_changed`; params optional.
        PromptListChanged = NOTIFICATION_PROMPTS_LIST_CHANGED => optional PaginatedRequestParams,
        /// `notifications/tasks/status` (2025-11-25).
        TaskStatus = NOTIFICATION_TASKS_STATUS => required TaskStatusNotificationParams,
        /// `notifications/elicitation/complete` (2025-11-25).
        ElicitationComplete = NOTIFICATION_ELICITATION_COMPLETE => required ElicitationCompleteNotificationParams,
        /// `notifications/subscriptions/acknowledged` (2026-07-28).
        SubscriptionsAcknowledged = NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED => required SubscriptionsAcknowledgedNotificationParams,
    }
}

impl ClientRequest {
    /// Decodes a request's params by its method.
    ///
    /// Errors: -32602 (invalid params) naming the method and serde's reason, when
    /// the method is known and its params do not fit. An unknown method is
    /// [`ClientRequest::Other`], not an error.
    pub fn from_request(req: &Request) -> Result<ClientRequest, ErrorObject> {
        Self::decode(&req.method, req.params.as_deref())
    }

    /// The request with id `id`, this method and these params.
    pub fn to_request(&self, id: impl Into<Id>) -> Request {
        Request {
            id: id.into(),
            method: self.method().to_owned(),
            params: self.encode_params(),
        }
    }
}

impl ServerRequest {
    /// Decodes a request's params by its method.
    ///
    /// Errors: -32602 naming the method and serde's reason, when the method is known
    /// and its params do not fit. An unknown method is [`ServerRequest::Other`].
    pub fn from_request(req: &Request) -> Result<ServerRequest, ErrorObject> {
        Self::decode(&req.method, req.params.as_deref())
    }

    /// The request with id `id`, this method and these params.
    pub fn to_request(&self, id: impl Into<Id>) -> Request {
        Request {
            id: id.into(),
            method: self.method().to_owned(),
            params: self.encode_params(),
        }
    }
}

impl ClientNotification {
    /// Decodes a notification's params by its method.
    ///
    /// Errors: -32602 naming the method and serde's reason, when the method is known
    /// and its params do not fit (a notification is never answered, but the error
    /// says what was wrong). An unknown method is [`ClientNotification::Other`].
    pub fn from_notification(n: &Notification) -> Result<ClientNotification, ErrorObject> {
        Self::decode(&n.method, n.params.as_deref())
    }

    /// The notification with this method and these params.
    pub fn to_notification(&self) -> Notification {
        Notification {
            method: self.method().to_owned(),
            params: self.encode_params(),
        }
    }
}

impl ServerNotification {
    /// Decodes a notification's params by its method.
    ///
    /// Errors: -32602 naming the method and serde's reason, when the method is known
    /// and its params do not fit. An unknown method is [`ServerNotification::Other`].
    pub fn from_notification(n: &Notification) -> Result<ServerNotification, ErrorObject> {
        Self::decode(&n.method, n.params.as_deref())
    }

    /// The notification with this method and these params.
    pub fn to_notification(&self) -> Notification {
        Notification {
            method: self.method().to_owned(),
            params: self.encode_params(),
        }
    }
}

/// `Serialize` and `Deserialize` for a notification set, as the JSON-RPC
/// notification it stands for: `{"jsonrpc": "2.0", "method": …, "params"?: …}`,
/// the shape of each member of the schema's `ClientNotification` /
/// `ServerNotification` union (every revision; `jsonrpc` is required from
/// 2025-11-25 and allowed before).
macro_rules! notification_serde {
    ($name:ident, $what:literal) => {
        impl Serialize for $name {
            /// Writes `{"jsonrpc": "2.0", "method", "params"?}`, as
            #[doc = concat!("[`", stringify!($name), "::to_notification`]")]
            /// gives it.
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                crate::jsonrpc::Message::Notification(self.to_notification()).serialize(s)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            /// Reads a JSON-RPC notification (the envelope's rules, then
            #[doc = concat!("[`", stringify!($name), "::from_notification`]")]
            /// ). Errors: anything that is not a notification (a request, a
            /// response, a bad envelope), or a known method whose params do not fit
            /// (serde's custom error with the -32602 message). An unknown method
            /// is `Other`, not an error. Needs a self-describing text format
            /// (serde_json), as the params are kept as raw JSON.
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                use serde::de::Error as _;
                match crate::jsonrpc::Message::deserialize(d)? {
                    crate::jsonrpc::Message::Notification(n) => {
                        $name::from_notification(&n).map_err(|e| D::Error::custom(e.message))
                    }
                    _ => Err(D::Error::custom(concat!(
                        "not a JSON-RPC notification (a ",
                        $what,
                        " has no id, result or error)"
                    ))),
                }
            }
        }
    };
}

notification_serde!(ClientNotification, "client notification");
notification_serde!(ServerNotification, "server notification");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::Message;
    use serde_json::{json, Value};

    fn request(v: Value) -> Request {
        match Message::decode(v.to_string().as_bytes()).unwrap() {
            Message::Request(r) => r,
            other => panic!("not a request: {other:?}"),
        }
    }

    fn notification(v: Value) -> Notification {
        match Message::decode(v.to_string().as_bytes()).unwrap() {
            Message::Notification(n) => n,
            other => panic!("not a notification: {other:?}"),
        }
    }

    fn params_json(p: &Option<Box<RawValue>>) -> Option<Value> {
        p.as_ref().map(|r| serde_json::from_str(r.get()).unwrap())
    }

    /// Decodes, checks the method, re-encodes and compares with the input.
    fn client_round_trip(v: Value) -> ClientRequest {
        let req = request(v);
        let typed = ClientRequest::from_request(&req).unwrap();
        assert_eq!(typed.method(), req.method);
        let back = typed.to_request(req.id.clone());
        assert_eq!(back.method, req.method);
        assert_eq!(
            params_json(&back.params),
            params_json(&req.params),
            "{}",
            req.method
        );
        typed
    }

    #[test]
    fn client_requests_of_every_revision() {
        let init = client_round_trip(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"}}}));
        assert!(
            matches!(&init, ClientRequest::Initialize(p) if p.protocol_version == "2024-11-05")
        );
        let ping = client_round_trip(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
        assert_eq!(ping, ClientRequest::Ping(None));
        let list = client_round_trip(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list",
            "params": {"cursor": "c1"}}));
        assert!(
            matches!(&list, ClientRequest::ListTools(Some(p)) if p.cursor.as_deref() == Some("c1"))
        );
        let call = client_round_trip(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
            "params": {"name": "get_weather", "arguments": {"city": "Paris"},
                "task": {"ttl": 1000},
                "inputResponses": {"k": {"action": "accept"}}, "requestState": "s"}}));
        assert!(matches!(&call, ClientRequest::CallTool(p) if p.name == "get_weather"));
        client_round_trip(
            json!({"jsonrpc": "2.0", "id": 5, "method": "resources/read",
            "params": {"uri": "file:///a"}}),
        );
        client_round_trip(
            json!({"jsonrpc": "2.0", "id": 6, "method": "resources/subscribe",
            "params": {"uri": "file:///a"}}),
        );
        client_round_trip(json!({"jsonrpc": "2.0", "id": 7, "method": "prompts/get",
            "params": {"name": "p", "arguments": {"a": "b"}}}));
        client_round_trip(
            json!({"jsonrpc": "2.0", "id": 8, "method": "completion/complete",
            "params": {"ref": {"type": "ref/prompt", "name": "p"},
                "argument": {"name": "a", "value": "x"}}}),
        );
        client_round_trip(
            json!({"jsonrpc": "2.0", "id": 9, "method": "logging/setLevel",
            "params": {"level": "info"}}),
        );
        let t = client_round_trip(json!({"jsonrpc": "2.0", "id": 10, "method": "tasks/result",
            "params": {"taskId": "t1"}}));
        assert!(matches!(&t, ClientRequest::GetTaskPayload(p) if p.task_id == "t1"));
        let d = client_round_trip(json!({"jsonrpc": "2.0", "id": "discover-1",
            "method": "server/discover", "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}}}));
        assert!(matches!(d, ClientRequest::Discover(Some(_))));
        let l = client_round_trip(json!({"jsonrpc": "2.0", "id": "listen-1",
            "method": "subscriptions/listen", "params": {"_meta": {},
                "notifications": {"toolsListChanged": true}}}));
        assert!(matches!(&l, ClientRequest::SubscriptionsListen(p)
            if p.notifications.tools_list_changed == Some(true)));
    }

    #[test]
    fn unknown_method_is_kept_not_refused() {
        let v = json!({"jsonrpc": "2.0", "id": 1, "method": "x/custom", "params": [1, {"a": 2}]});
        let typed = client_round_trip(v.clone());
        assert!(typed.is_other());
        assert_eq!(typed.method(), "x/custom");
        // A server-only method sent by a client is "other" for ClientRequest.
        let typed = client_round_trip(json!({"jsonrpc": "2.0", "id": 1, "method": "roots/list"}));
        assert!(matches!(typed, ClientRequest::Other { params: None, .. }));
        let s = ServerRequest::from_request(&request(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        ))
        .unwrap();
        assert!(s.is_other());
    }

    #[test]
    fn bad_params_are_invalid_params_naming_the_method() {
        for (v, needle) in [
            (
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"arguments": {}}}),
                "name",
            ),
            (
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call"}),
                "name",
            ),
            (
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": ["2025-06-18"]}),
                "object",
            ),
            (
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"cursor": 5}}),
                "expected a string",
            ),
            (
                json!({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {}}),
                "level",
            ),
        ] {
            let req = request(v);
            let err = ClientRequest::from_request(&req).unwrap_err();
            assert_eq!(err.code, code::INVALID_PARAMS);
            assert!(err.message.contains(&req.method), "{}", err.message);
            assert!(
                err.message.contains(needle),
                "{} lacks {needle}",
                err.message
            );
        }
    }

    #[test]
    fn server_requests() {
        let cases = [
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {}}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                "maxTokens": 10}}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "elicitation/create", "params": {
                "mode": "url", "message": "m", "url": "https://x", "elicitationId": "e"}}),
            json!({"jsonrpc": "2.0", "id": 4, "method": "roots/list"}),
            json!({"jsonrpc": "2.0", "id": 5, "method": "tasks/cancel", "params": {"taskId": "t"}}),
            json!({"jsonrpc": "2.0", "id": 6, "method": "tasks/list"}),
        ];
        let mut kinds = Vec::new();
        for v in cases {
            let req = request(v);
            let typed = ServerRequest::from_request(&req).unwrap();
            assert!(!typed.is_other(), "{}", req.method);
            let back = typed.to_request(req.id.clone());
            assert_eq!(back, req);
            kinds.push(typed);
        }
        assert_eq!(
            kinds[0],
            ServerRequest::Ping(Some(PaginatedRequestParams::default()))
        );
        assert!(matches!(&kinds[2], ServerRequest::Elicit(p) if p.is_url()));
        assert_eq!(kinds[3], ServerRequest::ListRoots(None));
        let err = ServerRequest::from_request(&request(json!({"jsonrpc": "2.0", "id": 7,
            "method": "elicitation/create", "params": {"mode": "url", "message": "m"}})))
        .unwrap_err();
        assert_eq!(err.code, -32602);
        assert!(err.message.contains("elicitation/create"));
    }

    #[test]
    fn notifications_both_ways() {
        let client = [
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 3, "reason": "timeout"}}),
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": "p", "progress": 0.5}}),
            json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed", "params": {}}),
        ];
        for v in client {
            let n = notification(v);
            let typed = ClientNotification::from_notification(&n).unwrap();
            assert!(!typed.is_other(), "{}", n.method);
            assert_eq!(typed.to_notification(), n);
        }
        let server = [
            json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": {"x": 1}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                "params": {"uri": "file:///a"}}),
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}),
            json!({"jsonrpc": "2.0", "method": "notifications/elicitation/complete",
                "params": {"elicitationId": "e"}}),
            json!({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": {
                "taskId": "t", "status": "completed", "createdAt": "a",
                "lastUpdatedAt": "b", "ttl": null}}),
            json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                "params": {"notifications": {"toolsListChanged": true}}}),
        ];
        for v in server {
            let n = notification(v);
            let typed = ServerNotification::from_notification(&n).unwrap();
            assert!(!typed.is_other(), "{}", n.method);
            assert_eq!(typed.to_notification(), n);
        }
        let n = notification(
            json!({"jsonrpc": "2.0", "method": "notifications/x", "params": {"a": 1}}),
        );
        let typed = ServerNotification::from_notification(&n).unwrap();
        assert!(typed.is_other());
        assert_eq!(typed.to_notification(), n);
        let bad = notification(json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "loud", "data": 1}}));
        let err = ServerNotification::from_notification(&bad).unwrap_err();
        assert_eq!(err.code, -32602);
        assert!(err.message.contains("notifications/message"));
    }

    /// `ServerNotification` and `ClientNotification` serialize as the JSON-RPC
    /// notification and deserialize back to an equal value.
    #[test]
    fn notifications_serialize_as_json_rpc_and_round_trip() {
        let server = [
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": "p", "progress": 1, "total": 2, "message": "half"}}),
            json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "logger": "l", "data": {"x": [1, 2]}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                "params": {"uri": "file:///a", "_meta": {"com.example/k": 1}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/vendor", "params": {"a": 1}}),
        ];
        for v in server {
            let typed: ServerNotification = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(serde_json::to_value(&typed).unwrap(), v);
            let text = serde_json::to_string(&typed).unwrap();
            let back: ServerNotification = serde_json::from_str(&text).unwrap();
            assert_eq!(back, typed, "{text}");
        }
        let built = ServerNotification::ToolListChanged(None);
        assert_eq!(
            serde_json::to_value(&built).unwrap(),
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        );
        let client = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 7, "reason": "r"}});
        let typed: ClientNotification = serde_json::from_value(client.clone()).unwrap();
        assert!(matches!(typed, ClientNotification::Cancelled(_)));
        assert_eq!(serde_json::to_value(&typed).unwrap(), client);
        // Not notifications, or params that do not fit: errors.
        for bad in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "notifications/progress"}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
            json!({"method": "notifications/progress", "params": {}}),
            json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "loud", "data": 1}}),
        ] {
            assert!(
                serde_json::from_value::<ServerNotification>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn equality_of_other_compares_json() {
        let a = ClientRequest::Other {
            method: "m".into(),
            params: Some(RawValue::from_string(r#"{"a":1,"b":2}"#.into()).unwrap()),
        };
        let b = ClientRequest::Other {
            method: "m".into(),
            params: Some(RawValue::from_string(r#"{ "b": 2, "a": 1 }"#.into()).unwrap()),
        };
        assert_eq!(a, b);
        assert_ne!(
            a,
            ClientRequest::Other {
                method: "m".into(),
                params: None
            }
        );
        assert_ne!(a, ClientRequest::Ping(None));
    }
}
