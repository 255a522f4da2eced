//! `subscriptions/listen` (2026-07-28): the client opens a long-lived request whose
//! stream carries the list-changed and resource-updated notifications it opted in
//! to.
//!
//! The server first sends `notifications/subscriptions/acknowledged` with the filter
//! it honours, then the chosen notifications, each tagged with
//! `_meta["io.modelcontextprotocol/subscriptionId"]` (the listen request's id), and
//! finally, when the stream ends, a [`SubscriptionsListenResult`].
//!
//! Source: 2026-07-28, "Server features → Subscriptions" and its schema. Replaces
//! `resources/subscribe`/`unsubscribe` and unsolicited list-changed notifications of
//! 2024-11-05 to 2025-11-25.
//!
//! This module holds only the wire shapes; it must not know how streams are kept
//! open or which notifications a server emits.

use serde::{Deserialize, Serialize};

use super::common::{meta, Extra, Meta, RequestId, ResultType};

/// `subscriptions/listen` (2026-07-28, client→server): params
/// [`SubscriptionsListenRequestParams`], final result [`SubscriptionsListenResult`].
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";

/// `notifications/subscriptions/acknowledged` (2026-07-28, server→client, first
/// message of a listen stream): params [`SubscriptionsAcknowledgedNotificationParams`].
pub const NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED: &str =
    "notifications/subscriptions/acknowledged";

/// Which notifications a listen stream carries (2026-07-28, schema
/// `SubscriptionFilter`). Every member is optional; an absent flag means "not
/// wanted".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// Deliver `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// Deliver `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// Deliver `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// Resource URIs whose `notifications/resources/updated` are wanted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `subscriptions/listen`: `{notifications, _meta}` (2026-07-28, schema
/// `SubscriptionsListenRequestParams`). `_meta` is required on the wire (it carries
/// the per-request protocol version and capabilities) but kept optional here so a
/// malformed request can still be decoded and answered with -32602.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsListenRequestParams {
    /// The requested filter.
    pub notifications: SubscriptionFilter,
    /// `_meta` (required by 2026-07-28).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The final result of a listen stream: `{resultType, _meta}` with
/// `_meta["io.modelcontextprotocol/subscriptionId"]` required (2026-07-28, schema
/// `SubscriptionsListenResult`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsListenResult {
    /// `resultType` (required by the schema; `complete`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// `_meta` with the subscription id and optionally the server info.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl SubscriptionsListenResult {
    /// A complete result closing the stream opened by the listen request `id`.
    pub fn new(subscription_id: &RequestId) -> Self {
        let mut m = Meta::new();
        if let Ok(v) = serde_json::to_value(subscription_id) {
            m.insert(meta::SUBSCRIPTION_ID.to_owned(), v);
        }
        SubscriptionsListenResult {
            result_type: Some(ResultType::Complete),
            meta: Some(m),
            extra: Extra::new(),
        }
    }

    /// `_meta["io.modelcontextprotocol/subscriptionId"]`, when present and a string
    /// or an integer.
    pub fn subscription_id(&self) -> Option<RequestId> {
        subscription_id_of(self.meta.as_ref())
    }
}

/// Params of `notifications/subscriptions/acknowledged`: `{notifications, _meta?}`
/// where `notifications` is the filter the server will honour (2026-07-28, schema
/// `SubscriptionsAcknowledgedNotificationParams`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsAcknowledgedNotificationParams {
    /// The accepted filter.
    pub notifications: SubscriptionFilter,
    /// `_meta`, carrying the subscription id.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl SubscriptionsAcknowledgedNotificationParams {
    /// `_meta["io.modelcontextprotocol/subscriptionId"]`, when present and valid.
    pub fn subscription_id(&self) -> Option<RequestId> {
        subscription_id_of(self.meta.as_ref())
    }
}

fn subscription_id_of(m: Option<&Meta>) -> Option<RequestId> {
    m?.get(meta::SUBSCRIPTION_ID)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn round_trip<T: serde::de::DeserializeOwned + Serialize>(v: Value) -> T {
        let t: T = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&t).unwrap(), v);
        t
    }

    #[test]
    fn listen_request_params() {
        let p: SubscriptionsListenRequestParams = round_trip(json!({
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            },
            "notifications": {
                "toolsListChanged": true,
                "resourceSubscriptions": ["file:///project/config.json"]
            }
        }));
        assert_eq!(p.notifications.tools_list_changed, Some(true));
        assert_eq!(p.notifications.prompts_list_changed, None);
        assert_eq!(
            p.notifications.resource_subscriptions.as_deref(),
            Some(&["file:///project/config.json".to_owned()][..])
        );
        assert!(serde_json::from_value::<SubscriptionsListenRequestParams>(json!({})).is_err());
    }

    #[test]
    fn acknowledged_and_result_carry_subscription_id() {
        let n: SubscriptionsAcknowledgedNotificationParams = round_trip(json!({
            "_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"},
            "notifications": {"promptsListChanged": false, "resourcesListChanged": true, "x": 1}
        }));
        assert_eq!(n.subscription_id(), Some(RequestId::Str("listen-1".into())));
        assert_eq!(n.notifications.extra["x"], json!(1));
        let r: SubscriptionsListenResult = round_trip(json!({
            "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/subscriptionId": 7}
        }));
        assert_eq!(r.subscription_id(), Some(RequestId::from(7)));
        assert_eq!(r.result_type, Some(ResultType::Complete));
    }

    #[test]
    fn result_constructor() {
        let r = SubscriptionsListenResult::new(&RequestId::Str("listen-1".into()));
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"}})
        );
        assert_eq!(SubscriptionsListenResult::default().subscription_id(), None);
    }
}
