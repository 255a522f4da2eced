//! The stateless 2026-07-28 form of the Streamable HTTP server: one POST, one
//! exchange (MCP 2026-07-28, "Transports → Streamable HTTP"; REVISIONS.md §5.4, §6).
//!
//! A 2026-07-28 POST carries exactly one request or notification and no session.
//! `exchange` hands it to the library through the same
//! [`SessionAcceptor`](super::server::SessionAcceptor) as a stateful session, as an
//! [`HttpSession`] of kind [`SessionKind::Stateless`]:
//!
//! - its [`Receiver`] yields that one message, then
//!   [`Inbound::Closed`]: with [`CloseReason::SessionClosed`] once the response was
//!   written, or before it when the [`HttpServer`](super::server::HttpServer) is
//!   being dropped (the library should then answer at once, e.g. end a
//!   `subscriptions/listen` with its final result: the reply stays open until the
//!   library sends the response or drops its senders); with
//!   [`CloseReason::PeerClosed`] when the client closed the reply stream first
//!   (2026-07-28: closing the stream cancels the request), so the library's
//!   cancellation fires;
//! - its [`Sender`] puts request-scoped notifications (progress,
//!   logging, listen notifications) and then the response on that POST's reply.
//!   The reply is `application/json` when the first thing the library sends is the
//!   response (nothing else can come: the response ends the exchange), otherwise
//!   `text/event-stream` (status 200) carrying every message as a `message` event
//!   without ids (2026-07-28 has no resumption), closed after the response. While a
//!   stream is idle a `:` keep-alive comment is written every
//!   [`KEEP_ALIVE`]; a write that fails means the client is gone.
//! - A server→client **request** never reaches the wire (2026-07-28 has none; the
//!   library asks with an `input_required` result instead): the exchange's
//!   [`Sender`] refuses it with
//!   [`SendError::is_request_refused`](crate::SendError::is_request_refused) (one
//!   queued by other means would be dropped and logged, warn).
//! - A notification POST is answered 202 at once (its exchange yields the message
//!   and ends).
//!
//! **HTTP status of a JSON reply** ([`status_for_error`]): the JSON-RPC error the
//! library answers with decides it, after REVISIONS.md §5.4 "Server validation":
//!
//! | error code | status |
//! |---|---|
//! | -32020 HeaderMismatch, -32021 MissingRequiredClientCapability, -32022 UnsupportedProtocolVersion | 400 |
//! | -32602 while the request's `_meta` lacks `io.modelcontextprotocol/protocolVersion` or `io.modelcontextprotocol/clientCapabilities` (the "required `_meta` field missing" row) | 400 |
//! | -32601 Method not found | 404 |
//! | -32600 Invalid Request, -32700 Parse error | 400 |
//! | anything else (e.g. -32602 for an unknown tool), and every result | 200 |
//!
//! This module must not know MCP methods or what the library does with the message;
//! it knows the `_meta` keys only to tell the eras apart and to pick the status.

use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderValue, CONTENT_TYPE};
use http::{HeaderMap, Response, StatusCode};
use serde_json::value::RawValue;
use switchboard_protocol::codec::Event;
use switchboard_protocol::jsonrpc::{code, Batching, Message};
use switchboard_protocol::types::meta;
use switchboard_protocol::ProtocolVersion;
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit};
use tracing::{debug, warn};

use super::body::Body;
use super::guard::ReplyShape;
use super::server::{HttpSession, SessionKind};
use crate::config::TransportConfig;
use crate::handle::{BatchingSwitch, CloseReason, Inbound, Outbound, Receiver, Sender, Transport};

/// How long an SSE reply may stay silent before a `:` keep-alive comment is
/// written: 15 seconds.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// What the era detection learned from a POST body's `params._meta`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct MetaPeek {
    /// `_meta` names `io.modelcontextprotocol/protocolVersion`: a 2026-07-28 message.
    pub(crate) modern: bool,
    /// `_meta` names both `protocolVersion` and `clientCapabilities`.
    pub(crate) complete: bool,
}

/// Reads `params._meta` of a request or notification (without decoding the rest of
/// the params into a tree).
pub(crate) fn peek_meta(message: &Message) -> MetaPeek {
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(default, rename = "_meta", borrow)]
        meta: Option<&'a RawValue>,
    }
    let params = match message {
        Message::Request(r) => r.params.as_deref(),
        Message::Notification(n) => n.params.as_deref(),
        _ => None,
    };
    let Some(params) = params else {
        return MetaPeek::default();
    };
    let Ok(Params { meta: Some(raw) }) = serde_json::from_str::<Params<'_>>(params.get()) else {
        return MetaPeek::default();
    };
    // Owned keys: a key written with escapes cannot be borrowed.
    let Ok(map) =
        serde_json::from_str::<std::collections::HashMap<String, serde::de::IgnoredAny>>(raw.get())
    else {
        return MetaPeek::default();
    };
    let modern = map.contains_key(meta::PROTOCOL_VERSION);
    MetaPeek {
        modern,
        complete: modern && map.contains_key(meta::CLIENT_CAPABILITIES),
    }
}

/// The HTTP status of a stateless JSON reply carrying JSON-RPC error `code` (see
/// the module table; REVISIONS.md §5.4 "Server validation"). `meta_complete`: the
/// request's `_meta` named both `protocolVersion` and `clientCapabilities`.
pub fn status_for_error(code: i64, meta_complete: bool) -> StatusCode {
    match code {
        -32022..=-32020 => StatusCode::BAD_REQUEST,
        code::INVALID_PARAMS if !meta_complete => StatusCode::BAD_REQUEST,
        code::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        code::INVALID_REQUEST | code::PARSE_ERROR => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

fn json_reply(status: StatusCode, body: Vec<u8>) -> Response<Body> {
    let mut response = Response::new(Body::full(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn sse_event(line: &[u8]) -> Bytes {
    let data = String::from_utf8_lossy(line).into_owned();
    Bytes::from(
        Event::message(data)
            .encode()
            .expect("an event without id always encodes"),
    )
}

/// Strips the line codec's trailing newline.
fn trim(mut line: Vec<u8>) -> Vec<u8> {
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    line
}

/// One outbound message, classified.
enum Out {
    /// The response (or error response) to the exchange's request; the error code
    /// if it is an error.
    Response(Vec<u8>, Option<i64>),
    /// A notification to put on the stream.
    Notification(Vec<u8>),
    /// Something that must not reach the wire (a request).
    Dropped,
}

fn classify(mut out: Outbound) -> Out {
    if out.pass_barrier() {
        return Out::Dropped;
    }
    let line = trim(out.line);
    match Message::decode(&line) {
        Ok(Message::Response(_)) => Out::Response(line, None),
        Ok(Message::Error(e)) => Out::Response(line, Some(e.error.code)),
        Ok(Message::Notification(_)) => Out::Notification(line),
        Ok(Message::Request(r)) => {
            warn!(method = %r.method, "a server-to-client request on a stateless 2026-07-28 exchange; dropped (2026-07-28 has none: use input_required)");
            Out::Dropped
        }
        Err(e) => {
            warn!(error = %e, "the library sent something that does not decode; dropped");
            Out::Dropped
        }
    }
}

/// Serves one stateless POST whose body decoded to `message` (see the module
/// documentation). `version`: the revision to report in the [`HttpSession`];
/// `permit` is held until the exchange ends (the reply written or the client
/// gone); `stopping` turns true when the server is dropped; `shape`: what the
/// client's `Accept` allows (JSON only: notifications before the response are
/// not sent, and the response is one JSON body; SSE only: a response sent first
/// is an SSE stream of one event).
pub(crate) async fn exchange(
    acceptor: &mpsc::Sender<HttpSession>,
    (mut stopping, permit): (watch::Receiver<bool>, OwnedSemaphorePermit),
    config: &TransportConfig,
    (headers, principal, path): (HeaderMap, Option<super::resource::Principal>, String),
    version: ProtocolVersion,
    message: Message,
    (peek, shape): (MetaPeek, ReplyShape),
) -> Response<Body> {
    if matches!(message, Message::Response(_) | Message::Error(_)) {
        return json_reply(
            StatusCode::BAD_REQUEST,
            Message::Error(switchboard_protocol::jsonrpc::ErrorResponse::new(
                None,
                switchboard_protocol::jsonrpc::ErrorObject::new(
                    code::INVALID_REQUEST,
                    "a 2026-07-28 POST carries one request or notification, never a response",
                ),
            ))
            .encode(),
        );
    }
    let is_request = matches!(message, Message::Request(_));
    let (out_tx, mut out_rx) = mpsc::channel::<Outbound>(config.capacity());
    let (in_tx, in_rx) = crate::handle::inbound_channel(2);
    let batching = BatchingSwitch::new(Batching::Refused);
    let transport = Transport {
        sender: Sender {
            out: crate::handle::Outlet::Queue(out_tx),
            batching: batching.clone(),
            no_requests: true,
            replies: None,
        },
        receiver: Receiver::new(in_rx, batching),
    };
    // Capacity 2: the message and the close always fit.
    let _ = in_tx.try_send(Inbound::Message(message));
    if !is_request {
        let _ = in_tx.try_send(Inbound::Closed {
            reason: CloseReason::SessionClosed,
        });
    }
    let session = HttpSession {
        transport,
        session_id: String::new(),
        protocol_version: version,
        headers,
        kind: SessionKind::Stateless,
        principal,
        path,
    };
    if acceptor.send(session).await.is_err() {
        return json_reply(
            StatusCode::SERVICE_UNAVAILABLE,
            Message::Error(switchboard_protocol::jsonrpc::ErrorResponse::new(
                None,
                switchboard_protocol::jsonrpc::ErrorObject::new(
                    -32000,
                    "the server is not accepting requests",
                ),
            ))
            .encode(),
        );
    }
    if !is_request {
        return Response::builder()
            .status(StatusCode::ACCEPTED)
            .body(Body::empty())
            .expect("a valid response");
    }
    // The first message decides the reply's shape.
    let mut told = false;
    let first = loop {
        tokio::select! {
            out = out_rx.recv() => match out {
                None => break None,
                Some(out) => match classify(out) {
                    Out::Dropped => continue,
                    Out::Notification(_) if shape == ReplyShape::Json => {
                        debug!("a notification on a stateless exchange whose client accepts only JSON; not sent");
                        continue;
                    }
                    other => break Some(other),
                },
            },
            () = stopped(&mut stopping), if !told => {
                told = true;
                let _ = in_tx.try_send(Inbound::Closed { reason: CloseReason::SessionClosed });
            }
        }
    };
    match first {
        None => {
            let _ = in_tx.try_send(Inbound::Closed {
                reason: CloseReason::SessionClosed,
            });
            json_reply(
                StatusCode::INTERNAL_SERVER_ERROR,
                Message::Error(switchboard_protocol::jsonrpc::ErrorResponse::new(
                    None,
                    switchboard_protocol::jsonrpc::ErrorObject::new(
                        code::INTERNAL_ERROR,
                        "the request ended without a response",
                    ),
                ))
                .encode(),
            )
        }
        Some(Out::Response(line, error)) if shape != ReplyShape::Sse => {
            let _ = in_tx.try_send(Inbound::Closed {
                reason: CloseReason::SessionClosed,
            });
            let status = error.map_or(StatusCode::OK, |c| status_for_error(c, peek.complete));
            json_reply(status, line)
        }
        Some(Out::Response(line, _)) => {
            // A client that accepts only SSE: the response as a stream of one
            // event (status 200, as every SSE reply).
            let _ = in_tx.try_send(Inbound::Closed {
                reason: CloseReason::SessionClosed,
            });
            sse_reply(std::collections::VecDeque::from([sse_event(&line)]), None)
        }
        Some(Out::Notification(line)) => {
            let (body_tx, body_rx) = mpsc::channel::<Bytes>(config.capacity());
            let first = sse_event(&line);
            tokio::spawn(async move {
                forward(out_rx, body_tx, in_tx, stopping, told).await;
                drop(permit);
            });
            sse_reply(std::collections::VecDeque::from([first]), Some(body_rx))
        }
        Some(Out::Dropped) => unreachable!("skipped above"),
    }
}

/// An SSE reply (200) of `first`, then what comes on `rest`.
fn sse_reply(
    first: std::collections::VecDeque<Bytes>,
    rest: Option<mpsc::Receiver<Bytes>>,
) -> Response<Body> {
    let mut response = Response::new(Body::stream_owned(first, rest));
    let h = response.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache"),
    );
    h.insert(
        super::server::X_ACCEL_BUFFERING,
        HeaderValue::from_static("no"),
    );
    response
}

/// Moves the library's messages onto the SSE reply until the response went out
/// (or the library dropped its senders), or the client went away; then closes the
/// exchange's receiver with the matching reason.
async fn forward(
    mut out_rx: mpsc::Receiver<Outbound>,
    body_tx: mpsc::Sender<Bytes>,
    in_tx: crate::handle::InboundTx,
    mut stopping: watch::Receiver<bool>,
    mut told: bool,
) {
    let reason = loop {
        tokio::select! {
            () = stopped(&mut stopping), if !told => {
                // The server is stopping: tell the library, keep forwarding until
                // it answers or drops its senders.
                told = true;
                let _ = in_tx.try_send(Inbound::Closed { reason: CloseReason::SessionClosed });
            }
            out = out_rx.recv() => {
                let Some(out) = out else { break CloseReason::SessionClosed };
                let (line, last) = match classify(out) {
                    Out::Dropped => continue,
                    Out::Notification(line) => (line, false),
                    Out::Response(line, _) => (line, true),
                };
                if body_tx.send(sse_event(&line)).await.is_err() {
                    break CloseReason::PeerClosed;
                }
                if last {
                    break CloseReason::SessionClosed;
                }
            }
            () = body_tx.closed() => break CloseReason::PeerClosed,
            () = tokio::time::sleep(KEEP_ALIVE) => {
                if body_tx.send(Bytes::from_static(b":\n\n")).await.is_err() {
                    break CloseReason::PeerClosed;
                }
            }
        }
    };
    debug!(%reason, "stateless exchange ended");
    if !told || matches!(reason, CloseReason::PeerClosed) {
        let _ = in_tx.try_send(Inbound::Closed { reason });
    }
}

/// Completes once the server is stopping (the flag set, or the server gone).
async fn stopped(stopping: &mut watch::Receiver<bool>) {
    let _ = stopping.wait_for(|s| *s).await.map(|_| ());
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_protocol::jsonrpc::Request;

    fn request(params: serde_json::Value) -> Message {
        Message::Request(Request::new(1, "tools/list", &params).unwrap())
    }

    #[test]
    fn meta_peek_tells_the_eras_apart() {
        let modern = request(serde_json::json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}));
        assert_eq!(
            peek_meta(&modern),
            MetaPeek {
                modern: true,
                complete: true
            }
        );
        let partial = request(serde_json::json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}));
        assert_eq!(
            peek_meta(&partial),
            MetaPeek {
                modern: true,
                complete: false
            }
        );
        let escaped: Message = Message::decode(
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol\/protocolVersion":"2026-07-28"}}}"#,
        )
        .unwrap();
        assert!(peek_meta(&escaped).modern);
        let legacy = request(serde_json::json!({"_meta": {"progressToken": 1}}));
        assert_eq!(peek_meta(&legacy), MetaPeek::default());
        assert_eq!(
            peek_meta(&request(serde_json::json!({}))),
            MetaPeek::default()
        );
    }

    #[test]
    fn statuses_follow_the_validation_table() {
        assert_eq!(status_for_error(-32020, true), StatusCode::BAD_REQUEST);
        assert_eq!(status_for_error(-32021, true), StatusCode::BAD_REQUEST);
        assert_eq!(status_for_error(-32022, true), StatusCode::BAD_REQUEST);
        assert_eq!(status_for_error(-32602, false), StatusCode::BAD_REQUEST);
        assert_eq!(status_for_error(-32602, true), StatusCode::OK);
        assert_eq!(status_for_error(-32601, true), StatusCode::NOT_FOUND);
        assert_eq!(status_for_error(-32603, true), StatusCode::OK);
    }
}
