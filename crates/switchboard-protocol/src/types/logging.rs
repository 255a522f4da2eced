//! Logging (server feature): the eight syslog levels, `logging/setLevel` params, and
//! `notifications/message` params.
//!
//! Source: every revision's "Server features → Utilities → Logging". In 2026-07-28
//! `logging/setLevel` is gone and the level travels per request in `_meta`
//! (`io.modelcontextprotocol/logLevel`). This module knows JSON shapes only: it must
//! not filter or emit log messages.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::common::{Extra, Meta};

/// Method `logging/setLevel` (request; 2024-11-05 to 2025-11-25).
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// Method `notifications/message` (server notification; all revisions).
pub const NOTIFICATION_MESSAGE: &str = "notifications/message";

/// Severity of a log message, as in RFC 5424 (syslog); all revisions.
///
/// Ordered from least to most severe, so `level >= LoggingLevel::Warning` selects
/// warnings and worse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// `debug`.
    Debug,
    /// `info`.
    Info,
    /// `notice`.
    Notice,
    /// `warning`.
    Warning,
    /// `error`.
    Error,
    /// `critical`.
    Critical,
    /// `alert`.
    Alert,
    /// `emergency`.
    Emergency,
}

impl LoggingLevel {
    /// Every level, least severe first.
    pub const ALL: [LoggingLevel; 8] = [
        LoggingLevel::Debug,
        LoggingLevel::Info,
        LoggingLevel::Notice,
        LoggingLevel::Warning,
        LoggingLevel::Error,
        LoggingLevel::Critical,
        LoggingLevel::Alert,
        LoggingLevel::Emergency,
    ];

    /// The wire name, e.g. `"warning"`.
    pub fn as_str(self) -> &'static str {
        match self {
            LoggingLevel::Debug => "debug",
            LoggingLevel::Info => "info",
            LoggingLevel::Notice => "notice",
            LoggingLevel::Warning => "warning",
            LoggingLevel::Error => "error",
            LoggingLevel::Critical => "critical",
            LoggingLevel::Alert => "alert",
            LoggingLevel::Emergency => "emergency",
        }
    }
}

impl fmt::Display for LoggingLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that is not one of the eight level names (case-sensitive); answered
/// with -32602 (invalid params) by a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownLoggingLevel(pub String);

impl fmt::Display for UnknownLoggingLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown logging level {:?}", self.0)
    }
}

impl std::error::Error for UnknownLoggingLevel {}

impl FromStr for LoggingLevel {
    type Err = UnknownLoggingLevel;

    /// Parses a wire name; errors with [`UnknownLoggingLevel`] otherwise.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        LoggingLevel::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| UnknownLoggingLevel(s.to_owned()))
    }
}

/// Params of `logging/setLevel`: `{level, _meta?}` — the least severe level the
/// client wants (2024-11-05 to 2025-11-25). The result is empty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetLevelRequestParams {
    /// Minimum level to send.
    pub level: LoggingLevel,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `notifications/message`: `{level, logger?, data, _meta?}` (all
/// revisions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoggingMessageNotificationParams {
    /// Severity.
    pub level: LoggingLevel,
    /// Name of the logger that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The message: any JSON value (required; `null` is kept).
    pub data: Value,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip<T: serde::de::DeserializeOwned + Serialize>(v: Value) -> T {
        let t: T = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&t).unwrap(), v);
        t
    }

    #[test]
    fn example_2026_and_older() {
        let m: LoggingMessageNotificationParams = round_trip(json!({"level": "error",
            "logger": "database", "data": {"error": "Connection failed",
                "details": {"host": "localhost", "port": 5432}}}));
        assert_eq!(m.level, LoggingLevel::Error);
        let m: LoggingMessageNotificationParams = round_trip(json!({"level": "debug",
            "data": null}));
        assert_eq!(m.data, Value::Null);
        assert!(serde_json::from_value::<LoggingMessageNotificationParams>(
            json!({"level": "info"})
        )
        .is_err());
        let s: SetLevelRequestParams =
            round_trip(json!({"level": "warning", "_meta": {"progressToken": 1}, "z": 0}));
        assert_eq!(s.level, LoggingLevel::Warning);
        assert!(serde_json::from_value::<SetLevelRequestParams>(json!({"level": "WARN"})).is_err());
    }

    #[test]
    fn levels_ordered_and_named() {
        for w in LoggingLevel::ALL.windows(2) {
            assert!(w[0] < w[1]);
        }
        assert!(LoggingLevel::Emergency > LoggingLevel::Debug);
        for l in LoggingLevel::ALL {
            assert_eq!(serde_json::to_value(l).unwrap(), json!(l.as_str()));
            assert_eq!(l.as_str().parse::<LoggingLevel>(), Ok(l));
            assert_eq!(l.to_string(), l.as_str());
        }
        assert_eq!(
            "Info".parse::<LoggingLevel>(),
            Err(UnknownLoggingLevel("Info".into()))
        );
    }
}
