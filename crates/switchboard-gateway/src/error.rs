//! The gateway's error: why a request it was given gets no answer from an
//! upstream, and the one mapping of each kind to a JSON-RPC error (JSON-RPC
//! 2.0 §5.1; MCP "Error Handling"). Must not know sessions or transports.

use switchboard_protocol::jsonrpc::{code, ErrorObject, ErrorResponse, Id, Message};

/// Why the gateway answers a request itself with an error. The text is what
/// the client reads: it says why, never a secret (a child's stderr is logged,
/// not shown; see `upstream::shown`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Error {
    /// The upstream cannot answer: down, restarting past the wait, stopped,
    /// silent past the timeout, or its answer unreadable. -32603.
    #[error("{0}")]
    Upstream(String),
    /// Refused by policy before any upstream saw it: a tool outside the
    /// allowlist, a definition that drifted from the lock. -32602 (the name is
    /// a parameter: MCP "Tools → Error Handling", unknown tools).
    /// Its data says why (`{"reason":"allowlist"}`, …): a caller, and the
    /// audit trail, can tell the refusals apart.
    #[error("{1}")]
    Refused(crate::metrics::Refusal, String),
    /// The request's params are not what the method takes. -32602.
    #[error("{0}")]
    InvalidParams(String),
    /// Not a request this session can take now (before `initialize`, or a
    /// second one). -32600.
    #[error("{0}")]
    InvalidRequest(String),
    /// A method the gateway does not serve on this path. -32601.
    #[error("{0}")]
    Unsupported(String),
    /// The gateway's own failure (a value it could not encode). -32603.
    #[error("{0}")]
    Internal(String),
}

impl Error {
    /// The JSON-RPC error code of this kind.
    pub(crate) fn code(&self) -> i64 {
        match self {
            Error::Upstream(_) | Error::Internal(_) => code::INTERNAL_ERROR,
            Error::Refused(..) | Error::InvalidParams(_) => code::INVALID_PARAMS,
            Error::InvalidRequest(_) => code::INVALID_REQUEST,
            Error::Unsupported(_) => code::METHOD_NOT_FOUND,
        }
    }

    /// The error object of this error.
    pub(crate) fn to_object(&self) -> ErrorObject {
        let mut object = ErrorObject::new(self.code(), self.to_string());
        if let Error::Refused(why, _) = self {
            let data = format!("{{\"reason\":\"{}\"}}", why.as_str());
            object.data = serde_json::value::RawValue::from_string(data).ok();
        }
        object
    }

    /// The error response to request `id`.
    pub(crate) fn answer(&self, id: Id) -> Message {
        Message::Error(ErrorResponse::new(Some(id), self.to_object()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_json_rpc_code() {
        let cases = [
            (Error::Upstream("down".into()), -32603),
            (Error::Internal("encode".into()), -32603),
            (
                Error::Refused(crate::metrics::Refusal::Allowlist, "not allowed".into()),
                -32602,
            ),
            (Error::InvalidParams("no name".into()), -32602),
            (Error::InvalidRequest("not initialized".into()), -32600),
            (Error::Unsupported("no subscriptions".into()), -32601),
        ];
        for (error, expected) in cases {
            let Message::Error(e) = error.answer(Id::from(7u64)) else {
                panic!("an error response");
            };
            assert_eq!(e.error.code, expected, "{error:?}");
            assert_eq!(e.error.message, error.to_string());
            assert_eq!(e.id, Some(Id::from(7u64)));
        }
    }
}
