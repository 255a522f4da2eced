//! Cross-feature notifications: progress (`notifications/progress`) and
//! cancellation (`notifications/cancelled`).
//!
//! Source: every revision's "Base protocol → Utilities → Progress" and
//! "→ Cancellation". This module knows JSON shapes only: it must not track which
//! requests are in flight or whether progress increases.

use serde::{Deserialize, Serialize};
use serde_json::Number;

use super::common::{Extra, Meta, ProgressToken, RequestId};

/// Method `notifications/progress` (either direction; all revisions).
pub const NOTIFICATION_PROGRESS: &str = "notifications/progress";
/// Method `notifications/cancelled` (either direction; all revisions).
pub const NOTIFICATION_CANCELLED: &str = "notifications/cancelled";

/// Params of `notifications/progress`: `{progressToken, progress, total?, message?,
/// _meta?}`.
///
/// Source: all revisions; `message` from 2025-03-26. `progress` and `total` are JSON
/// numbers (may be fractional; `progress` must increase per token) kept as
/// [`Number`] so that `50` and `50.0` are sent back exactly as received; use
/// [`progress_f64`](Self::progress_f64) and [`total_f64`](Self::total_f64) to compute.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressNotificationParams {
    /// The token from the request's `_meta.progressToken`.
    pub progress_token: ProgressToken,
    /// Progress so far (unitless).
    pub progress: Number,
    /// Total, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<Number>,
    /// Human-readable description of the current step (2025-03-26+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A JSON number for `v`: an integer when `v` is whole and exactly representable,
/// else a float; `None` for NaN or infinity (not representable in JSON).
fn number_from_f64(v: f64) -> Option<Number> {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if v.fract() == 0.0 && v.abs() <= EXACT {
        Some(Number::from(v as i64))
    } else {
        Number::from_f64(v)
    }
}

impl ProgressNotificationParams {
    /// Progress for `token` with no total or message. Whole values are written as
    /// integers. Returns `None` when `progress` is NaN or infinite.
    pub fn new(progress_token: ProgressToken, progress: f64) -> Option<Self> {
        Some(ProgressNotificationParams {
            progress_token,
            progress: number_from_f64(progress)?,
            total: None,
            message: None,
            meta: None,
            extra: Extra::new(),
        })
    }

    /// Sets `total`; a NaN or infinite value clears it.
    pub fn with_total(mut self, total: f64) -> Self {
        self.total = number_from_f64(total);
        self
    }

    /// `progress` as a float.
    pub fn progress_f64(&self) -> f64 {
        self.progress.as_f64().unwrap_or(f64::NAN)
    }

    /// `total` as a float, when given.
    pub fn total_f64(&self) -> Option<f64> {
        self.total.as_ref().and_then(Number::as_f64)
    }
}

/// Params of `notifications/cancelled`: `{requestId?, reason?, _meta?}`.
///
/// Source: all revisions. `requestId` is required in every revision except
/// 2025-11-25, where it is optional (a task is cancelled with `tasks/cancel`
/// instead); hence `Option` here.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledNotificationParams {
    /// The id of the request to cancel (a request the sender issued earlier).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<RequestId>,
    /// Why, for logs or display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl CancelledNotificationParams {
    /// Cancels `request_id`, with an optional reason.
    pub fn new(request_id: RequestId, reason: Option<String>) -> Self {
        CancelledNotificationParams {
            request_id: Some(request_id),
            reason,
            ..Default::default()
        }
    }
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
    fn progress_example_2026_and_numbers_kept() {
        let p: ProgressNotificationParams = round_trip(json!({"progressToken": "oivaizmir",
            "progress": 50, "total": 100, "message": "Reticulating splines..."}));
        assert_eq!(p.progress_f64(), 50.0);
        assert_eq!(p.total_f64(), Some(100.0));
        // Floats stay floats, integers stay integers; integer tokens work.
        let p: ProgressNotificationParams =
            round_trip(json!({"progressToken": 7, "progress": 50.0, "total": 0.5}));
        assert_eq!(p.progress_token, ProgressToken::from(7));
        assert_eq!(p.total_f64(), Some(0.5));
        // 2024-11-05: no message; unknown members kept.
        let p: ProgressNotificationParams =
            round_trip(json!({"progressToken": "t", "progress": 0.25, "later": [1]}));
        assert_eq!(p.extra["later"], json!([1]));
        assert!(serde_json::from_value::<ProgressNotificationParams>(
            json!({"progressToken": 1.5, "progress": 1})
        )
        .is_err());
        assert!(serde_json::from_value::<ProgressNotificationParams>(
            json!({"progressToken": "t", "progress": "1"})
        )
        .is_err());
    }

    #[test]
    fn progress_constructor() {
        let p = ProgressNotificationParams::new(ProgressToken::from(1), 3.0)
            .unwrap()
            .with_total(4.5);
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({"progressToken": 1, "progress": 3, "total": 4.5})
        );
        assert!(ProgressNotificationParams::new(ProgressToken::from(1), f64::NAN).is_none());
        let p = ProgressNotificationParams::new(ProgressToken::from(1), 0.1).unwrap();
        assert_eq!(p.progress_f64(), 0.1);
    }

    #[test]
    fn cancelled() {
        let c: CancelledNotificationParams = round_trip(json!({"requestId": "123",
            "reason": "User requested cancellation"}));
        assert_eq!(c.request_id, Some(RequestId::Str("123".into())));
        // 2025-11-25: requestId may be absent.
        let c: CancelledNotificationParams = round_trip(json!({"reason": "task"}));
        assert!(c.request_id.is_none());
        let c: CancelledNotificationParams = round_trip(json!({"requestId": 5,
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t"}}}));
        assert_eq!(c.request_id, Some(RequestId::from(5)));
        assert_eq!(
            serde_json::to_value(CancelledNotificationParams::new(RequestId::from(2), None))
                .unwrap(),
            json!({"requestId": 2})
        );
    }
}
