//! The library's one error type, [`Error`], for everything a request or a session can
//! end with: a timeout, a cancellation, a closed transport, a transport's failure to
//! carry one request, the peer's JSON-RPC error, a local refusal by the lifecycle, a
//! result that does not decode, a limit, a tool's `structuredContent` that breaks its
//! `outputSchema`.
//!
//! Opaque on purpose (the shape of hyper's `Error`): the kind sits behind `is_*`
//! methods, `Display` prints only this level, and the cause (a decode error, a
//! lifecycle rule) is reachable through [`std::error::Error::source`]. Cloneable, so
//! that one failure (the transport closing) can be handed to every waiter at once.
//!
//! This module must not know about transports' internals, methods' meanings or how an
//! error is answered on the wire (a handler's failure is an [`ErrorObject`] built by
//! the caller; this type is what *our* requests end with).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use switchboard_protocol::jsonrpc::{ErrorObject, Id};
use switchboard_protocol::lifecycle::LifecycleError;
use switchboard_protocol::types::CallToolResult;

/// Why a request or a session failed. See the `is_*` methods for the kinds.
#[derive(Clone)]
pub struct Error {
    inner: Box<Inner>,
}

#[derive(Clone)]
struct Inner {
    kind: Kind,
    method: Option<String>,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
    /// What else the caller knows that may explain it, shown after the kind.
    note: Option<String>,
}

#[derive(Debug, Clone)]
enum Kind {
    /// No response within the deadline (MCP "Lifecycle" → "Timeouts", 2025-03-26+).
    Timeout(Duration),
    /// Cancelled by the caller; `notifications/cancelled` was sent when the request was
    /// still in flight.
    Cancelled(Option<String>),
    /// The transport closed (or was never usable); the reason as the transport gave it.
    Closed(String),
    /// The peer answered with a JSON-RPC error.
    Protocol(ErrorObject),
    /// The transport gave up on the request (no JSON-RPC answer came); its own
    /// description of the failure.
    Transport(ErrorObject),
    /// The lifecycle refused: our own request, locally (nothing was sent;
    /// `answer: false`), or the peer's answer to it (`answer: true`, e.g. an
    /// `initialize` result that does not decode or names a version we cannot speak).
    Lifecycle { error: LifecycleError, answer: bool },
    /// The result did not decode (`false`), or our params did not encode or are
    /// not acceptable (`true`).
    Decode { params: bool },
    /// A configured limit was reached (pending requests, pages of a listing).
    Limit(String),
    /// The peer answered our request under an id of another type that spells
    /// it (`"1"` for `1`): JSON-RPC 2.0 §5 asks for the same value, so it is no
    /// answer, but no other request could be meant.
    MismatchedId { sent: Id, received: Id },
    /// A `tools/call` result whose `structuredContent` breaks (or, being absent,
    /// fails) the tool's `outputSchema`; the result as received, and why.
    StructuredContent {
        result: Box<CallToolResult>,
        reason: String,
    },
}

impl Error {
    fn new(kind: Kind) -> Self {
        Error {
            inner: Box::new(Inner {
                kind,
                method: None,
                source: None,
                note: None,
            }),
        }
    }

    pub(crate) fn timeout(after: Duration) -> Self {
        Error::new(Kind::Timeout(after))
    }

    pub(crate) fn cancelled(reason: Option<String>) -> Self {
        Error::new(Kind::Cancelled(reason))
    }

    pub(crate) fn closed(reason: impl Into<String>) -> Self {
        Error::new(Kind::Closed(reason.into()))
    }

    pub(crate) fn protocol(error: ErrorObject) -> Self {
        Error::new(Kind::Protocol(error))
    }

    pub(crate) fn transport(error: ErrorObject) -> Self {
        Error::new(Kind::Transport(error))
    }

    pub(crate) fn lifecycle(error: LifecycleError) -> Self {
        let mut e = Error::new(Kind::Lifecycle {
            error: error.clone(),
            answer: false,
        });
        e.inner.source = Some(Arc::new(error));
        e
    }

    /// The lifecycle refused the peer's answer to our request (which was sent).
    pub(crate) fn refused_answer(error: LifecycleError) -> Self {
        let mut e = Error::new(Kind::Lifecycle {
            error: error.clone(),
            answer: true,
        });
        e.inner.source = Some(Arc::new(error));
        e
    }

    pub(crate) fn decode(error: serde_json::Error) -> Self {
        let mut e = Error::new(Kind::Decode { params: false });
        e.inner.source = Some(Arc::new(error));
        e
    }

    /// Our params did not encode, or are not acceptable (nothing was sent).
    pub(crate) fn encode(error: serde_json::Error) -> Self {
        let mut e = Error::new(Kind::Decode { params: true });
        e.inner.source = Some(Arc::new(error));
        e
    }

    pub(crate) fn limit(what: impl Into<String>) -> Self {
        Error::new(Kind::Limit(what.into()))
    }

    /// The peer answered the request sent under `sent` with the id `received`,
    /// which only spells it.
    pub(crate) fn mismatched_id(sent: Id, received: Id) -> Self {
        Error::new(Kind::MismatchedId { sent, received })
    }

    pub(crate) fn structured_content(result: CallToolResult, reason: String) -> Self {
        Error::new(Kind::StructuredContent {
            result: Box::new(result),
            reason,
        })
    }

    /// Names the method the error belongs to (shown in `Display`).
    pub(crate) fn with_method(mut self, method: &str) -> Self {
        self.inner.method = Some(method.to_owned());
        self
    }

    /// Adds what may explain the failure (`Display` shows it after `; `, after
    /// the notes added before it).
    pub(crate) fn with_note(mut self, note: String) -> Self {
        self.inner.note = Some(match self.inner.note.take() {
            Some(earlier) => format!("{earlier}; {note}"),
            None => note,
        });
        self
    }

    /// No response arrived before the request's deadline (its timeout, as extended by
    /// progress notifications, capped by the hard maximum). `notifications/cancelled`
    /// was sent (MCP 2025-03-26+ "Lifecycle" → "Timeouts").
    pub fn is_timeout(&self) -> bool {
        matches!(self.inner.kind, Kind::Timeout(_))
    }

    /// The caller cancelled the request (MCP "Cancellation");
    /// `notifications/cancelled` was sent if the request was in flight.
    pub fn is_cancelled(&self) -> bool {
        matches!(self.inner.kind, Kind::Cancelled(_))
    }

    /// The transport closed before an answer came, or the session is closed. Final:
    /// every later request fails the same way.
    pub fn is_closed(&self) -> bool {
        matches!(self.inner.kind, Kind::Closed(_))
    }

    /// The peer answered with a JSON-RPC error; [`error_object`](Self::error_object)
    /// has it.
    pub fn is_protocol(&self) -> bool {
        matches!(self.inner.kind, Kind::Protocol(_))
    }

    /// The transport gave up on the request: it could not be sent, or no JSON-RPC
    /// answer to it came back (an HTTP error status without a JSON-RPC body, a
    /// connection that failed, an SSE stream cut before the response and not
    /// resumed), or its answer was longer than a line transport's limit (stdio,
    /// `TransportConfig::max_line_len`) and was dropped unread. Over HTTP the peer
    /// may or may not have received it. Not final: the next
    /// request may go through. [`error_object`](Self::error_object) has the
    /// transport's description: code -32000 (`TRANSPORT_ERROR` of
    /// switchboard-transport), a message naming the failure, and `data`
    /// `{"httpStatus": u16, "body": excerpt}` when an HTTP status was received.
    /// A server's own error response, whatever its code, is
    /// [`is_protocol`](Self::is_protocol) instead.
    pub fn is_transport(&self) -> bool {
        matches!(self.inner.kind, Kind::Transport(_))
    }

    /// The JSON-RPC error object (code, message, data): the peer's, when
    /// [`is_protocol`](Self::is_protocol); the transport's description of its
    /// failure, when [`is_transport`](Self::is_transport).
    pub fn error_object(&self) -> Option<&ErrorObject> {
        match &self.inner.kind {
            Kind::Protocol(e) | Kind::Transport(e) => Some(e),
            _ => None,
        }
    }

    /// The request was refused locally by a lifecycle or capability rule (e.g. the
    /// server did not declare the capability the method needs; nothing was sent
    /// for it), or the handshake's answer was (its version was not acceptable, or
    /// it did not decode; the request was sent, and `Display` says so).
    pub fn is_local_refusal(&self) -> bool {
        matches!(self.inner.kind, Kind::Lifecycle { .. })
    }

    /// The lifecycle rule that refused, when [`is_local_refusal`](Self::is_local_refusal).
    pub fn lifecycle_error(&self) -> Option<&LifecycleError> {
        match &self.inner.kind {
            Kind::Lifecycle { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The peer answered the request under an id that matches it only by its
    /// text: a string where the request's id was an integer (`"1"` for `1`).
    /// JSON-RPC 2.0 §5 and MCP ("Base protocol → Responses") ask for the
    /// request's id, of the same type, so the answer is not taken; the request
    /// fails at once with this error instead of waiting for its timeout.
    /// `Display` names both ids. A peer bug: the next request fails the same way.
    pub fn is_mismatched_id(&self) -> bool {
        matches!(self.inner.kind, Kind::MismatchedId { .. })
    }

    /// A result did not decode into the expected type, or params did not encode.
    pub fn is_decode(&self) -> bool {
        matches!(self.inner.kind, Kind::Decode { .. })
    }

    /// A configured limit was reached (too many pending requests, too many pages).
    pub fn is_limit(&self) -> bool {
        matches!(self.inner.kind, Kind::Limit(_))
    }

    /// A `tools/call` answered a successful result whose `structuredContent` does
    /// not validate against the tool's `outputSchema` (as the client's last
    /// `tools/list` gave it), or that has no `structuredContent` although the
    /// tool declares an `outputSchema`. MCP 2025-06-18+ "Tools → Output Schema":
    /// servers MUST provide structured results that conform, clients SHOULD
    /// validate them. `Display` gives the validation messages (at most 10, each
    /// `instance path: message`); [`call_tool_result`](Self::call_tool_result)
    /// has the result as received. See [`Client::call_tool_with`](crate::Client::call_tool_with).
    pub fn is_invalid_structured_content(&self) -> bool {
        matches!(self.inner.kind, Kind::StructuredContent { .. })
    }

    /// The result as received, when
    /// [`is_invalid_structured_content`](Self::is_invalid_structured_content):
    /// its content blocks are still there for a caller that wants them.
    pub fn call_tool_result(&self) -> Option<&CallToolResult> {
        match &self.inner.kind {
            Kind::StructuredContent { result, .. } => Some(result),
            _ => None,
        }
    }

    /// The method of the request that failed, when known.
    pub fn method(&self) -> Option<&str> {
        self.inner.method.as_deref()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(m) = &self.inner.method {
            write!(f, "{m}: ")?;
        }
        match &self.inner.kind {
            Kind::Timeout(d) => write!(f, "timed out after {} ms", d.as_millis()),
            Kind::Cancelled(None) => f.write_str("cancelled"),
            Kind::Cancelled(Some(r)) => write!(f, "cancelled: {r}"),
            Kind::Closed(r) => write!(f, "transport closed: {r}"),
            Kind::Protocol(e) => write!(f, "peer answered error {}: {}", e.code, e.message),
            Kind::Transport(e) => write!(f, "transport failed: {}", e.message),
            Kind::Lifecycle { answer: false, .. } => f.write_str("refused locally, nothing sent"),
            Kind::Lifecycle { answer: true, .. } => f.write_str("refused the server's answer"),
            Kind::Decode { params: false } => f.write_str("result did not decode"),
            Kind::Decode { params: true } => f.write_str("params did not encode"),
            Kind::Limit(w) => write!(f, "limit reached: {w}"),
            Kind::MismatchedId { sent, received } => write!(
                f,
                "the answer's id is {received} ({}), the request's is {sent} ({}): ids must match exactly, type included",
                id_type(received),
                id_type(sent)
            ),
            Kind::StructuredContent { reason, .. } => f.write_str(reason),
        }?;
        match &self.inner.note {
            Some(note) => write!(f, "; {note}"),
            None => Ok(()),
        }
    }
}

/// "a string" or "an integer", for [`Kind::MismatchedId`]'s `Display`.
fn id_type(id: &Id) -> &'static str {
    match id {
        Id::Str(_) => "a string",
        Id::Int(_) => "an integer",
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.inner.kind);
        if let Some(m) = &self.inner.method {
            d.field("method", m);
        }
        if let Some(s) = &self.inner.source {
            d.field("source", &s.to_string());
        }
        d.finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner
            .source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_display() {
        let e = Error::timeout(Duration::from_millis(1500)).with_method("tools/call");
        assert!(e.is_timeout() && !e.is_closed());
        assert_eq!(e.to_string(), "tools/call: timed out after 1500 ms");
        let e = Error::protocol(ErrorObject::new(-32601, "nope"));
        assert_eq!(e.error_object().unwrap().code, -32601);
        assert!(e.is_protocol());
        let e = Error::lifecycle(LifecycleError::Closed);
        assert!(e.is_local_refusal());
        assert!(std::error::Error::source(&e).is_some());
        assert_eq!(
            Error::closed("peer closed the connection").to_string(),
            "transport closed: peer closed the connection"
        );
    }

    #[test]
    fn a_mismatched_id_names_both_ids_and_their_types() {
        let e = Error::mismatched_id(Id::from(1), Id::from("1")).with_method("initialize");
        assert!(e.is_mismatched_id() && !e.is_protocol() && !e.is_timeout());
        assert_eq!(
            e.to_string(),
            "initialize: the answer's id is \"1\" (a string), the request's is 1 (an integer): ids must match exactly, type included"
        );
    }

    #[test]
    fn notes_add_up_in_order() {
        let e = Error::protocol(ErrorObject::new(-32602, "no"))
            .with_method("initialize")
            .with_note("first".into())
            .with_note("second".into());
        assert_eq!(
            e.to_string(),
            "initialize: peer answered error -32602: no; first; second"
        );
    }
}
