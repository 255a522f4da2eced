//! Typed `error.data` payloads of the MCP-specific JSON-RPC errors.
//!
//! | code | name | `data` | revisions |
//! |---|---|---|---|
//! | -32042 | `URLElicitationRequiredError` | [`URLElicitationRequiredErrorData`] | 2025-11-25 |
//! | -32020 | `HeaderMismatchError` | none defined | 2026-07-28 |
//! | -32021 | `MissingRequiredClientCapabilityError` | [`MissingRequiredClientCapabilityErrorData`] | 2026-07-28 |
//! | -32022 | `UnsupportedProtocolVersionError` | [`UnsupportedProtocolVersionErrorData`] | 2026-07-28 |
//!
//! The legacy `initialize` version error (-32602, 2025-11-25 "Version Negotiation"
//! example) uses the same `{supported, requested}` data as -32022.
//!
//! Sources: the schemas' `*Error` definitions and [`crate::jsonrpc::code`]. This
//! module only converts between these payloads and [`ErrorObject`]; it must not
//! decide when an error is sent.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::capabilities::ClientCapabilities;
use super::common::Extra;
use super::elicitation::ElicitRequestURLParams;
use crate::jsonrpc::{code, ErrorObject};

/// A typed `error.data` payload tied to one error code.
pub trait ErrorData: Serialize + DeserializeOwned {
    /// The JSON-RPC error code this payload belongs to.
    const CODE: i64;

    /// An error object with [`Self::CODE`], `message` and `self` as `data`.
    fn to_error(&self, message: impl Into<String>) -> ErrorObject {
        ErrorObject::new(Self::CODE, message).with_data(self)
    }

    /// The payload of `err`, when its code is [`Self::CODE`] and its `data` has this
    /// shape; `None` otherwise (another code, no `data`, or a malformed one).
    fn from_error(err: &ErrorObject) -> Option<Self> {
        if err.code != Self::CODE {
            return None;
        }
        serde_json::from_str(err.data.as_ref()?.get()).ok()
    }
}

/// `data` of -32022 `UnsupportedProtocolVersion`: `{supported, requested}`
/// (2026-07-28, schema `UnsupportedProtocolVersionError`). `supported` lists the
/// server's revisions; the client SHOULD retry with one of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnsupportedProtocolVersionErrorData {
    /// The revisions the server accepts, as wire strings.
    pub supported: Vec<String>,
    /// The revision the client asked for.
    pub requested: String,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl UnsupportedProtocolVersionErrorData {
    /// Data for a request that asked for `requested`.
    pub fn new(supported: Vec<String>, requested: impl Into<String>) -> Self {
        UnsupportedProtocolVersionErrorData {
            supported,
            requested: requested.into(),
            extra: Extra::new(),
        }
    }

    /// The same payload as a legacy `initialize` error: code -32602 (2025-11-25,
    /// "Lifecycle → Version Negotiation" example).
    pub fn to_initialize_error(&self, message: impl Into<String>) -> ErrorObject {
        ErrorObject::new(code::INVALID_PARAMS, message).with_data(self)
    }
}

impl ErrorData for UnsupportedProtocolVersionErrorData {
    const CODE: i64 = code::UNSUPPORTED_PROTOCOL_VERSION;
}

/// `data` of -32021 `MissingRequiredClientCapability`: `{requiredCapabilities}`, a
/// `ClientCapabilities` object listing what the request needs (2026-07-28, schema
/// `MissingRequiredClientCapabilityError`), e.g. `{"elicitation": {}}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MissingRequiredClientCapabilityErrorData {
    /// The capabilities the client must declare.
    pub required_capabilities: ClientCapabilities,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl MissingRequiredClientCapabilityErrorData {
    /// Data naming the required capabilities.
    pub fn new(required_capabilities: ClientCapabilities) -> Self {
        MissingRequiredClientCapabilityErrorData {
            required_capabilities,
            extra: Extra::new(),
        }
    }
}

impl ErrorData for MissingRequiredClientCapabilityErrorData {
    const CODE: i64 = code::MISSING_REQUIRED_CLIENT_CAPABILITY;
}

/// The -32020 `HeaderMismatch` error (2026-07-28, schema `HeaderMismatchError`):
/// the schema defines no `data` for it, so it carries only a message naming the
/// header, e.g. "Mcp-Name header value 'foo' does not match body value 'bar'".
pub fn header_mismatch_error(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(code::HEADER_MISMATCH, message)
}

/// `data` of -32042 `URLElicitationRequiredError`: `{elicitations}`, the URL-mode
/// elicitations the client must complete before retrying (2025-11-25 only, schema
/// `URLElicitationRequiredError`; 2026-07-28 MUST NOT send it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct URLElicitationRequiredErrorData {
    /// The pending URL-mode elicitations (each with `elicitationId` in 2025-11-25).
    pub elicitations: Vec<ElicitRequestURLParams>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl URLElicitationRequiredErrorData {
    /// Data listing `elicitations`.
    pub fn new(elicitations: Vec<ElicitRequestURLParams>) -> Self {
        URLElicitationRequiredErrorData {
            elicitations,
            extra: Extra::new(),
        }
    }
}

impl ErrorData for URLElicitationRequiredErrorData {
    const CODE: i64 = code::URL_ELICITATION_REQUIRED;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn data_json(err: &ErrorObject) -> Value {
        serde_json::from_str(err.data.as_ref().unwrap().get()).unwrap()
    }

    fn error_from(v: Value) -> ErrorObject {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn unsupported_version() {
        let err = error_from(json!({
            "code": -32022, "message": "Unsupported protocol version",
            "data": {"supported": ["2026-07-28", "2025-11-25"], "requested": "1900-01-01"}
        }));
        let d = UnsupportedProtocolVersionErrorData::from_error(&err).unwrap();
        assert_eq!(d.supported, ["2026-07-28", "2025-11-25"]);
        assert_eq!(d.requested, "1900-01-01");
        let back = d.to_error("Unsupported protocol version");
        assert_eq!(back, err);
        let legacy = d.to_initialize_error("Unsupported protocol version");
        assert_eq!(legacy.code, -32602);
        assert_eq!(data_json(&legacy), data_json(&err));
        // Another code, or no data, is not this error.
        assert!(UnsupportedProtocolVersionErrorData::from_error(&legacy).is_none());
        let bare = ErrorObject::new(-32022, "x");
        assert!(UnsupportedProtocolVersionErrorData::from_error(&bare).is_none());
    }

    #[test]
    fn missing_capability() {
        let err = error_from(json!({
            "code": -32021,
            "message": "Server requires the elicitation capability for this request",
            "data": {"requiredCapabilities": {"elicitation": {}}}
        }));
        let d = MissingRequiredClientCapabilityErrorData::from_error(&err).unwrap();
        assert!(d.required_capabilities.supports_elicitation());
        assert!(!d.required_capabilities.supports_sampling());
        assert_eq!(d.to_error(err.message.clone()), err);
        let malformed = error_from(json!({"code": -32021, "message": "m", "data": {"x": 1}}));
        assert!(MissingRequiredClientCapabilityErrorData::from_error(&malformed).is_none());
    }

    #[test]
    fn header_mismatch_has_no_data() {
        let e = header_mismatch_error("Header mismatch: Mcp-Name");
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"code": -32020, "message": "Header mismatch: Mcp-Name"})
        );
    }

    #[test]
    fn url_elicitation_required() {
        let err = error_from(json!({
            "code": -32042,
            "message": "This request requires more information.",
            "data": {
                "elicitations": [{
                    "mode": "url", "elicitationId": "550e8400",
                    "url": "https://mcp.example.com/connect?elicitationId=550e8400",
                    "message": "Authorization is required."
                }],
                "retryAfter": 5
            }
        }));
        let d = URLElicitationRequiredErrorData::from_error(&err).unwrap();
        assert_eq!(
            d.elicitations[0].elicitation_id.as_deref(),
            Some("550e8400")
        );
        assert_eq!(d.extra["retryAfter"], json!(5));
        assert_eq!(d.to_error(err.message.clone()), err);
        // A form-mode entry is not a URL elicitation.
        let bad = error_from(json!({"code": -32042, "message": "m",
            "data": {"elicitations": [{"message": "m", "requestedSchema": {"type": "object", "properties": {}}}]}}));
        assert!(URLElicitationRequiredErrorData::from_error(&bad).is_none());
    }
}
