//! Serving one stateless 2026-07-28 HTTP exchange: a POSTed request, its checks,
//! its handler (with MRTR), its notifications and its response; or a
//! `subscriptions/listen` stream (MCP 2026-07-28 "Transports → Streamable HTTP",
//! "Server features → Subscriptions"; REVISIONS.md §5.4, §5.5).
//!
//! ```text
//! HttpSession { kind: Stateless }  one Request, then Closed
//!   check_headers + check_modern_request      (in the order of the validation table:
//!     -32601 removed method, -32602 `_meta`, -32020 headers, -32022 version,
//!     -32602 other `_meta` members, -32601 undeclared server capability,
//!     -32020 `Mcp-Param-*`)
//!   subscriptions/listen  -> listen(): acknowledged, then announcements, then (on
//!                            shutdown) the final result; ends when the client closes
//!   anything else         -> Server::handle_with (+ mrtr::run for tools/call,
//!                            prompts/get, resources/read); progress and logs go on the
//!                            reply stream; the client closing it fires the handler's
//!                            cancellation (the handler gets CANCEL_GRACE to notice)
//! ```
//!
//! Cost per exchange: no peer, no pending table, no lifecycle machine; one task,
//! the checks, the handler.
//!
//! **Header checks** (`Server::check_exchange`, with the rules of
//! `switchboard_transport::http::mcp_headers`, which the bridge shares;
//! REVISIONS.md §5.4 "Request headers", "Header value encoding"): `MCP-Protocol-Version` must equal `_meta`'s protocol version;
//! `Mcp-Method` must equal the body's `method`; `Mcp-Name` must equal `params.name`
//! (`tools/call`, `prompts/get`) or `params.uri` (`resources/read`); for `tools/call`
//! every argument whose `inputSchema` property (reached through `properties` only)
//! carries `"x-mcp-header": "N"` and is present and not null must be mirrored in
//! `Mcp-Param-N`, and no such header may be sent for an absent or null argument.
//! Values are compared after trimming spaces and tabs (RFC 9110 §5.5) and decoding
//! `=?base64?…?=` (standard, padded base64); integers compare numerically, booleans as `true`/`false`. Any
//! failure is -32020 `HeaderMismatch` (HTTP 400).
//!
//! This module must not know bytes, sockets or HTTP statuses (the transport maps
//! the error codes), nor what a tool does.

use std::sync::Arc;
use std::time::Duration;

use http::HeaderMap;
use serde_json::{json, Map, Value};
use switchboard_protocol::jsonrpc::{
    code, ErrorObject, ErrorResponse, Id, Message, Notification, Request, Response,
};
use switchboard_protocol::lifecycle::RequestContext;
use switchboard_protocol::types::{
    meta, ClientRequest, ServerNotification, ServerRequest, SubscriptionFilter,
    SubscriptionsListenRequestParams, NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED,
    SUBSCRIPTIONS_LISTEN,
};
use switchboard_transport::http::mcp_headers;
use switchboard_transport::http::server::HttpSession;
use switchboard_transport::{CloseReason, Inbound, Receiver, Sender};
use tokio::sync::watch;

use super::changes::{self, Change};
use super::context::{BoxFuture, ContextError, ContextSink};
use super::mrtr::{self, Round};
use super::{Server, SessionState, Started};
use crate::peer::{handler_panicked, CancelToken, CatchUnwind};

/// How long a cancelled handler may run on after the client closed its stream, to
/// notice [`ToolContext::cancelled`](super::ToolContext::cancelled): 5 seconds.
/// Its result is discarded either way.
pub const CANCEL_GRACE: Duration = Duration::from_secs(5);

impl Server {
    /// The checks of one 2026-07-28 HTTP request (see the module documentation),
    /// in the order of REVISIONS.md §5.4's validation table; the header rules are
    /// the transport's ([`mcp_headers`], shared with the bridge), the called
    /// tool's `x-mcp-header` annotations this server's own.
    pub(crate) fn check_exchange(
        &self,
        request: &Request,
        params: Option<&Map<String, Value>>,
        headers: &HeaderMap,
    ) -> Result<RequestContext, ErrorObject> {
        let ctx = mcp_headers::check_exchange_headers(
            self.supported(),
            self.capabilities(),
            request,
            params,
            headers,
        )?;
        if request.method == "tools/call" {
            let name = params.and_then(|p| p.get("name")).and_then(Value::as_str);
            // An unknown tool: -32602 from the dispatch, no header to check.
            let pairs = name
                .and_then(|n| self.inner.tools.iter().find(|t| t.tool.name == n))
                .map(|t| mcp_headers::tool_header_params(&t.tool.input_schema))
                .unwrap_or_default();
            mcp_headers::check_param_headers(&pairs, params, headers)?;
        }
        Ok(ctx)
    }
}

/// The [`ContextSink`] of an exchange: notifications on the reply stream, no
/// server→client requests (asks go through the MRTR [`Round`]).
struct ExchangeSink {
    sender: Sender,
    id: Id,
    cancel: CancelToken,
}

impl ContextSink for ExchangeSink {
    fn notify(&self, notification: ServerNotification) -> BoxFuture<'_, Result<(), ContextError>> {
        Box::pin(async move {
            self.sender
                .send_related(
                    Message::Notification(notification.to_notification()),
                    Some(self.id.clone()),
                )
                .await
                .map_err(|_| ContextError::Closed)
        })
    }

    fn request(&self, request: ServerRequest) -> BoxFuture<'_, Result<Value, ContextError>> {
        let method = request.method().to_owned();
        Box::pin(async move {
            Err(ContextError::Peer(format!(
                "{method}: 2026-07-28 has no server-to-client requests, and this request \
                 cannot answer input_required"
            )))
        })
    }

    fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    fn cancelled(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.cancel.cancelled())
    }
}

/// `value` as a result's JSON text.
fn raw_result(value: &Value) -> Result<Box<serde_json::value::RawValue>, ErrorObject> {
    serde_json::value::to_raw_value(value)
        .map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))
}

async fn answer(
    sender: &Sender,
    id: Id,
    outcome: Result<Box<serde_json::value::RawValue>, ErrorObject>,
) {
    let message = match outcome {
        Ok(result) => Message::Response(Response {
            id: id.clone(),
            result,
        }),
        Err(e) => Message::Error(ErrorResponse::new(Some(id.clone()), e)),
    };
    if sender.send_related(message, Some(id)).await.is_err() {
        tracing::debug!("the exchange ended before its response");
    }
}

/// Waits for the end of the exchange's input and says why: the client closed the
/// stream ([`CloseReason::PeerClosed`]), or (before the response) the server is
/// stopping.
async fn closed(receiver: &mut Receiver) -> CloseReason {
    while let Some(event) = receiver.recv().await {
        if let Inbound::Closed { reason } = event {
            tracing::debug!(%reason, "exchange input closed");
            return reason;
        }
    }
    CloseReason::PeerClosed
}

/// Serves one stateless exchange (see the module documentation). `shutdown`
/// turns true when the server stops (listen streams then end with their result).
pub(crate) async fn serve(
    server: Server,
    session: HttpSession,
    mut shutdown: watch::Receiver<bool>,
) {
    let HttpSession {
        transport,
        headers,
        principal,
        ..
    } = session;
    let (sender, mut receiver) = transport.split();
    let request = match receiver.recv().await {
        Some(Inbound::Message(Message::Request(r))) => r,
        Some(Inbound::Message(Message::Notification(n))) => {
            // 2026-07-28 defines no client→server notification over HTTP.
            tracing::debug!(method = %n.method, "a 2026-07-28 notification over HTTP; ignored");
            return;
        }
        _ => return,
    };
    let id = request.id.clone();
    let params: Option<Map<String, Value>> = request
        .params
        .as_deref()
        .and_then(|p| serde_json::from_str(p.get()).ok());
    let ctx = match server.check_exchange(&request, params.as_ref(), &headers) {
        Ok(ctx) => ctx,
        Err(e) => {
            tracing::debug!(method = %request.method, code = e.code, "refused");
            return answer(&sender, id, Err(e)).await;
        }
    };
    if request.method == SUBSCRIPTIONS_LISTEN {
        return listen(&server, &sender, &mut receiver, &request, &mut shutdown).await;
    }
    let decoded = match ClientRequest::from_request(&request) {
        Ok(d) => d,
        Err(e) => return answer(&sender, id, Err(e)).await,
    };
    let round = if mrtr::allows_input_required(&request.method) {
        match Round::new(&request.method, params.as_ref(), ctx.clone()) {
            Ok(r) => Some(Arc::new(r)),
            Err(e) => return answer(&sender, id, Err(e)).await,
        }
    } else {
        None
    };
    let cancel = CancelToken::new();
    let sink: Arc<dyn ContextSink> = Arc::new(ExchangeSink {
        sender: sender.clone(),
        id: id.clone(),
        cancel: cancel.clone(),
    });
    let state = SessionState::of(principal);
    let client_capabilities = Arc::new(ctx.client_capabilities.clone());
    // The handler is called in here: a panic in its synchronous part is answered
    // like one in its future.
    let started = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        server.start(
            &state,
            ctx.version,
            &client_capabilities,
            decoded,
            sink,
            round.clone(),
        )
    }))
    .unwrap_or_else(|panic| Started::Ready(Err(handler_panicked(&*panic))));
    let run = async {
        match (&round, started) {
            (Some(r), started) => mrtr::run(r, server.info(), started).await,
            (None, Started::Ready(answer)) => answer,
            (None, Started::Pending(handling)) => handling.await,
        }
    };
    tokio::pin!(run);
    tokio::select! {
        // A panicking handler is answered as in a session, and logged.
        outcome = CatchUnwind(run.as_mut()) => {
            let outcome = outcome.unwrap_or_else(|panic| Err(handler_panicked(&*panic)));
            answer(&sender, id, outcome).await
        }
        _ = closed(&mut receiver) => {
            tracing::debug!(method = %request.method, "the client closed the stream; cancelling");
            cancel.cancel_with("the client closed the stream");
            // It runs on for the grace period; a panic then is caught too.
            if let Ok(Err(panic)) = tokio::time::timeout(CANCEL_GRACE, CatchUnwind(run.as_mut())).await {
                let _ = handler_panicked(&*panic);
            }
        }
    }
}

/// The subset of `wanted` this server honours: list-changed flags only for lists
/// it declares with `listChanged`, resource URIs only with `resources.subscribe`.
pub(crate) fn honoured(server: &Server, wanted: &SubscriptionFilter) -> SubscriptionFilter {
    let caps = server.capabilities();
    let yes =
        |asked: Option<bool>, declared: bool| (asked == Some(true) && declared).then_some(true);
    SubscriptionFilter {
        tools_list_changed: yes(
            wanted.tools_list_changed,
            caps.tools.as_ref().and_then(|t| t.list_changed) == Some(true),
        ),
        prompts_list_changed: yes(
            wanted.prompts_list_changed,
            caps.prompts.as_ref().and_then(|p| p.list_changed) == Some(true),
        ),
        resources_list_changed: yes(
            wanted.resources_list_changed,
            caps.resources.as_ref().and_then(|r| r.list_changed) == Some(true),
        ),
        resource_subscriptions: wanted
            .resource_subscriptions
            .clone()
            .filter(|uris| !uris.is_empty() && caps.supports_resource_subscribe()),
        extra: Default::default(),
    }
}

/// The notification for `change` on a listen stream with `filter`, tagged with
/// `subscription`; `None` when the filter did not ask for it.
pub(crate) fn listen_notification(
    change: &Change,
    filter: &SubscriptionFilter,
    subscription: &Value,
) -> Option<Notification> {
    let tag = json!({ meta::SUBSCRIPTION_ID: subscription });
    let (method, params) = match change {
        Change::ToolsListChanged if filter.tools_list_changed == Some(true) => {
            ("notifications/tools/list_changed", json!({"_meta": tag}))
        }
        Change::PromptsListChanged if filter.prompts_list_changed == Some(true) => {
            ("notifications/prompts/list_changed", json!({"_meta": tag}))
        }
        Change::ResourcesListChanged if filter.resources_list_changed == Some(true) => (
            "notifications/resources/list_changed",
            json!({"_meta": tag}),
        ),
        Change::ResourceUpdated(uri)
            if filter
                .resource_subscriptions
                .as_ref()
                .is_some_and(|u| u.contains(uri)) =>
        {
            (
                "notifications/resources/updated",
                json!({"uri": uri, "_meta": tag}),
            )
        }
        _ => return None,
    };
    Notification::new(method, &params).ok()
}

/// The final result of a listen stream: `{resultType: "complete",
/// _meta{subscriptionId, serverInfo}}`.
pub(crate) fn listen_done(server: &Server, subscription: &Value) -> Value {
    json!({
        "resultType": "complete",
        "_meta": { meta::SUBSCRIPTION_ID: subscription, meta::SERVER_INFO: server.info() },
    })
}

/// Completes once `shutdown` is true (or its sender is gone).
async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|s| *s).await.map(|_| ());
}

/// Serves `subscriptions/listen` (2026-07-28 "Subscriptions"): the acknowledgement
/// with the honoured filter first, then each announced change it asked for, until
/// the client closes the stream; on server shutdown the final result
/// `{resultType: "complete", _meta{subscriptionId}}`.
async fn listen(
    server: &Server,
    sender: &Sender,
    receiver: &mut Receiver,
    request: &Request,
    shutdown: &mut watch::Receiver<bool>,
) {
    let id = request.id.clone();
    let params: SubscriptionsListenRequestParams = match request.params_as() {
        Ok(p) => p,
        Err(e) => {
            let e = ErrorObject::new(code::INVALID_PARAMS, format!("subscriptions/listen: {e}"));
            return answer(sender, id, Err(e)).await;
        }
    };
    let filter = honoured(server, &params.notifications);
    let subscription = serde_json::to_value(&id).unwrap_or(Value::Null);
    // Subscribe before acknowledging: no change after the ack is missed.
    let mut changes = server.announcer().subscribe();
    let ack = Notification::new(
        NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED,
        &json!({"notifications": filter, "_meta": { meta::SUBSCRIPTION_ID: subscription }}),
    );
    let Ok(ack) = ack else { return };
    if sender
        .send_related(Message::Notification(ack), Some(id.clone()))
        .await
        .is_err()
    {
        return;
    }
    loop {
        tokio::select! {
            change = changes::next(&mut changes) => {
                let Some((_, change)) = change else { break };
                if let Some(n) = listen_notification(&change, &filter, &subscription) {
                    if sender.send_related(Message::Notification(n), Some(id.clone())).await.is_err() {
                        break;
                    }
                }
            }
            reason = closed(receiver) => {
                if matches!(reason, CloseReason::PeerClosed) {
                    break;
                }
                // The server is stopping.
                answer(sender, id, raw_result(&listen_done(server, &subscription))).await;
                break;
            }
            () = stopped(shutdown) => {
                answer(sender, id, raw_result(&listen_done(server, &subscription))).await;
                break;
            }
        }
    }
}
