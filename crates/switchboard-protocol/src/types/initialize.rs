//! The legacy handshake: `initialize`, `notifications/initialized`, and `ping`.
//!
//! Source: "Base protocol → Lifecycle" and "Utilities → Ping" of 2024-11-05 to
//! 2025-11-25. The client sends `initialize` with the version it wants, its
//! capabilities and its `clientInfo`; the server answers with the version it will
//! speak, its capabilities, its `serverInfo` and optional `instructions`; the client
//! then sends `notifications/initialized`. 2026-07-28 has no handshake (only a
//! dual-era server still answers `initialize`) and no `ping`.
//!
//! This module holds only the wire shapes; version choice lives in
//! [`crate::version`], the state machine in the lifecycle module. It must not know
//! about transports or sessions.

use serde::{Deserialize, Serialize};

use super::capabilities::{ClientCapabilities, ServerCapabilities};
use super::common::{Extra, Implementation, Meta};
use crate::version::ProtocolVersion;

/// `initialize` (client→server, 2024-11-05 to 2025-11-25): params
/// [`InitializeRequestParams`], result [`InitializeResult`]. Never cancellable.
pub const INITIALIZE: &str = "initialize";

/// `notifications/initialized` (client→server, 2024-11-05 to 2025-11-25): sent after
/// the `initialize` result arrives; params are only `_meta`.
pub const NOTIFICATION_INITIALIZED: &str = "notifications/initialized";

/// `ping` (either direction, 2024-11-05 to 2025-11-25; removed in 2026-07-28): params
/// are only `_meta`, the result is `{}` ([`crate::types::EmptyResult`]).
pub const PING: &str = "ping";

/// Params of `initialize`: `{protocolVersion, capabilities, clientInfo, _meta?}`
/// (schema `InitializeRequestParams` in 2025-11-25, inline
/// `InitializeRequest.params` before).
///
/// `protocol_version` is kept as a string: a client may offer a revision this crate
/// does not know, and the server must then answer with one it supports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequestParams {
    /// The revision the client wants (normally its latest).
    pub protocol_version: String,
    /// The client's capabilities.
    pub capabilities: ClientCapabilities,
    /// The client's name and version.
    pub client_info: Implementation,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl InitializeRequestParams {
    /// Params offering `version` with the given capabilities and client info.
    pub fn new(
        version: impl Into<String>,
        capabilities: ClientCapabilities,
        client_info: Implementation,
    ) -> Self {
        InitializeRequestParams {
            protocol_version: version.into(),
            capabilities,
            client_info,
            meta: None,
            extra: Extra::new(),
        }
    }

    /// The requested revision, if this crate knows it.
    pub fn known_version(&self) -> Option<ProtocolVersion> {
        ProtocolVersion::parse(&self.protocol_version)
    }
}

/// The server's answer to `initialize`: `{protocolVersion, capabilities, serverInfo,
/// instructions?, _meta?}` (schema `InitializeResult`, 2024-11-05 to 2025-11-25).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The revision the server will speak (the requested one if it supports it).
    pub protocol_version: String,
    /// The server's capabilities.
    pub capabilities: ServerCapabilities,
    /// The server's name and version.
    pub server_info: Implementation,
    /// How to use the server, e.g. for a model's system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// `_meta`.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl InitializeResult {
    /// A result answering `version`.
    pub fn new(
        version: impl Into<String>,
        capabilities: ServerCapabilities,
        server_info: Implementation,
    ) -> Self {
        InitializeResult {
            protocol_version: version.into(),
            capabilities,
            server_info,
            instructions: None,
            meta: None,
            extra: Extra::new(),
        }
    }

    /// The answered revision, if this crate knows it.
    pub fn known_version(&self) -> Option<ProtocolVersion> {
        ProtocolVersion::parse(&self.protocol_version)
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
    fn request_2024_11_05() {
        let p: InitializeRequestParams = round_trip(json!({
            "protocolVersion": "2024-11-05",
            "capabilities": {"roots": {"listChanged": true}, "sampling": {}},
            "clientInfo": {"name": "ExampleClient", "version": "1.0.0"}
        }));
        assert_eq!(p.known_version(), Some(ProtocolVersion::V2024_11_05));
        assert_eq!(p.client_info.name, "ExampleClient");
        assert!(p.capabilities.supports_sampling());
    }

    #[test]
    fn request_2025_11_25_with_meta_and_unknown_version() {
        let p: InitializeRequestParams = round_trip(json!({
            "protocolVersion": "2099-01-01",
            "capabilities": {"elicitation": {"form": {}, "url": {}}, "tasks": {"list": {}}},
            "clientInfo": {"name": "c", "version": "2", "title": "C", "websiteUrl": "https://c.example"},
            "_meta": {"progressToken": 1},
            "futureField": true
        }));
        assert_eq!(p.protocol_version, "2099-01-01");
        assert_eq!(p.known_version(), None);
        assert_eq!(p.extra["futureField"], json!(true));
        assert!(
            serde_json::from_value::<InitializeRequestParams>(
                json!({"protocolVersion": "2025-06-18", "capabilities": {}})
            )
            .is_err(),
            "clientInfo is required"
        );
    }

    #[test]
    fn results() {
        let r: InitializeResult = round_trip(json!({
            "protocolVersion": "2025-03-26",
            "capabilities": {"logging": {}, "completions": {}, "tools": {"listChanged": true}},
            "serverInfo": {"name": "ExampleServer", "version": "1.0.0"},
            "instructions": "Use the tools."
        }));
        assert_eq!(r.known_version(), Some(ProtocolVersion::V2025_03_26));
        assert_eq!(r.instructions.as_deref(), Some("Use the tools."));
        let r: InitializeResult = round_trip(json!({
            "protocolVersion": "2025-11-25", "capabilities": {},
            "serverInfo": {"name": "s", "version": "1"}, "_meta": {"a": 1}
        }));
        assert!(r.instructions.is_none());
    }

    #[test]
    fn constructors_emit_minimal_shapes() {
        let p = InitializeRequestParams::new(
            ProtocolVersion::V2025_11_25.as_str(),
            ClientCapabilities::default(),
            Implementation::new("c", "1"),
        );
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "c", "version": "1"}})
        );
        let r = InitializeResult::new(
            "2025-06-18",
            ServerCapabilities::default(),
            Implementation::new("s", "1"),
        );
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "serverInfo": {"name": "s", "version": "1"}})
        );
        assert_eq!(
            [INITIALIZE, NOTIFICATION_INITIALIZED, PING],
            ["initialize", "notifications/initialized", "ping"]
        );
    }
}
