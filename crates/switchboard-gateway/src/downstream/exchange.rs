//! One stateless 2026-07-28 exchange (one POST) served by a legacy stdio server
//! (MCP 2026-07-28 "Transports → Streamable HTTP", "Multi round-trip requests";
//! the design note ERA-TRANSLATION.md, "Modern client → legacy server").
//!
//! ```text
//! server/discover        answered here from the child's initialize result:
//!                        supportedVersions = the versions the bridge serves,
//!                        capabilities/instructions/serverInfo = the child's
//! any other request      the library's checks (the transport's `mcp_headers`, in
//!                        the order of the validation table): MCP-Protocol-Version,
//!                        Mcp-Method, Mcp-Name against the body (-32020), the _meta
//!                        check (version first, then capabilities), and for
//!                        tools/call Mcp-Param-* against the arguments the tool's
//!                        inputSchema annotates with x-mcp-header (-32020; the
//!                        schemas from the child's tools/list, module `catalog::tools`);
//!                        then the allowlist and the lock (tools/call, prompts/get;
//!                        with a lock, after a change of its list the child announced
//!                        is judged: module `catalog::changes`);
//!                        the 2026 _meta members removed, the rest (progressToken,
//!                        traceparent, ...) kept; forwarded to the shared child
//! child asks sampling / elicitation / roots while the call runs
//!                        declared by the request's clientCapabilities:
//!                          the call is held open, the client gets
//!                          {resultType:"input_required", inputRequests:{k:{method,params}},
//!                           requestState: <random handle>}
//!                          its retry (new id, same method and params, inputResponses[k],
//!                          requestState) hands the answer to the child and goes on
//!                          waiting for the held call's result; a request the
//!                          child cancels (notifications/cancelled) before it is
//!                          answered is dropped: not asked (again), an answer to
//!                          it ignored, and with nothing else left to answer the
//!                          retry just goes on waiting; a retry whose method
//!                          or params differ (compared as decoded JSON, `_meta`
//!                          aside) is -32602 and the held call stays as it was;
//!                        not declared: the child's request is answered -32601
//! result                 resultType "complete" added (a splice into the raw JSON;
//!                        the payload is not decoded); -32002 becomes -32602
//! the client closes the stream before the result: the call is cancelled upstream
//! subscriptions/listen   acknowledged with the subset the child can honour, then the
//!                        child's list-changed / resource-updated notifications
//!                        tagged with the subscription id, until the client closes
//! ```
//!
//! A held call that is not resumed within the configured time is cancelled
//! upstream. The `requestState` handle is 128 random bits naming the held call; it
//! is bound to the method and params of the original request (2026-07-28 "Multi
//! round-trip requests": the client retries "the same method and params"; bind
//! `requestState` to them) and used once.
//!
//! This module must not know how the child is spawned or supervised, nor about
//! legacy sessions.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use http::HeaderMap;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::sync::atomic::Ordering;
use switchboard_protocol::jsonrpc::{
    code, ErrorObject, ErrorResponse, Id, Message, Notification, Request, Response,
};
use switchboard_protocol::lifecycle::RequestContext;
use switchboard_protocol::types::{meta, CacheScope, DiscoverResult};
use switchboard_transport::http::mcp_headers;
use switchboard_transport::{CloseReason, Inbound, Receiver};
use tracing::{debug, warn};

use crate::catalog::pin::Kind;
use crate::classify::{Notice, Route};
use crate::downstream::watch::Tx;
use crate::error::Error;
use crate::raw::RawObject;
use crate::upstream::{Call, CallEvent, Step, Upstream};
use crate::Core;
use switchboard_protocol::types as t;

/// How long `server/discover` results may be cached by clients: 60 s.
const DISCOVER_TTL_MS: u64 = 60_000;

/// A call held open while its client answers an `input_required` result.
pub(crate) struct Held {
    call: Call,
    upstream: Upstream,
    /// The child's pending server→client requests, by the key the client got;
    /// one the child cancels is dropped (`drop_cancelled`).
    pending: HashMap<String, Request>,
    method: String,
    name: Option<String>,
    /// A list the allowlist and the drift guard filter.
    list: Option<crate::ListRequest>,
    /// The request's params without `_meta`, `inputResponses` and
    /// `requestState`: what a retry must repeat (empty for a 2026-07-28 child,
    /// whose own `requestState` binds its retries).
    params: Map<String, Value>,
    context: RequestContext,
}

impl Held {
    /// Gives up on the held call: cancelled upstream.
    pub(crate) async fn cancel(self) {
        self.call.cancel("the client did not retry in time").await;
    }
}

/// The child's capabilities as `server/discover` tells them to a 2026-07-28
/// client: without `tasks`, the 2025-11-25 (experimental) task capability, which
/// 2026-07-28's `ServerCapabilities` does not have (tasks became the
/// `io.modelcontextprotocol/tasks` extension, and the `tasks/*` methods it
/// promises answer -32601 in 2026-07-28). Everything else as the child said.
fn discover_capabilities(
    child: &switchboard_protocol::types::ServerCapabilities,
) -> switchboard_protocol::types::ServerCapabilities {
    let mut caps = child.clone();
    caps.tasks = None;
    caps
}

/// Serves one exchange: its one inbound message, then the answer.
pub(crate) async fn serve(core: Arc<Core>, tx: Tx, mut rx: Receiver, headers: HeaderMap) {
    let _answering = core.answering(&tx, None);
    let first = match rx.recv().await {
        Some(Inbound::Message(m)) => m,
        _ => return,
    };
    let Message::Request(mut r) = first else {
        // Notifications (none are defined for 2026-07-28 over HTTP) were answered
        // 202 by the transport; nothing goes upstream.
        return;
    };
    let route = crate::classify::Route::of(&r.method);
    tx.arrived(&mut r, route);
    let traced = tx.trace_id(&r.id);
    let handled = handle(&core, &tx, &mut rx, r, &headers);
    if let Some(answer) = crate::downstream::relay::in_call_span(traced, handled).await {
        let _ = tx.send(answer).await;
    }
}

/// `None` when the answer was already sent (or the client is gone).
pub(crate) async fn handle(
    core: &Arc<Core>,
    tx: &Tx,
    rx: &mut Receiver,
    r: Request,
    headers: &HeaderMap,
) -> Option<Message> {
    let upstream = core.shared.clone();
    let info = match upstream.ready(core.init_timeout).await {
        Ok(info) => info,
        Err(why) => return Some(why.answer(r.id)),
    };
    let supported = core.supported();
    // Decoded once for the checks; `None` when absent or not an object.
    let decoded: Option<Map<String, Value>> = r
        .params
        .as_deref()
        .and_then(|p| serde_json::from_str(p.get()).ok());
    // The library's own checks (the transport's `mcp_headers`), in the order of
    // the validation table, against the child's capabilities.
    let context = match mcp_headers::check_exchange_headers(
        &supported,
        &info.result.capabilities,
        &r,
        decoded.as_ref(),
        headers,
    ) {
        Ok(c) => c,
        Err(e) => return Some(Message::Error(ErrorResponse::new(Some(r.id), e))),
    };
    let route = Route::of(&r.method);
    if route == Route::Use(Kind::Tool) {
        if let Err(e) = check_param_headers(core, decoded.as_ref(), headers).await {
            return Some(Message::Error(ErrorResponse::new(Some(r.id), e)));
        }
    }
    if route == Route::Discover {
        let mut result = DiscoverResult::new(
            supported
                .wire_strings()
                .into_iter()
                .map(str::to_owned)
                .collect(),
            discover_capabilities(&info.result.capabilities),
            DISCOVER_TTL_MS,
            CacheScope::Public,
            Some(&info.result.server_info),
        );
        result.instructions = core.served_instructions(info.result.instructions.as_deref());
        return Some(match Response::new(r.id.clone(), &result) {
            Ok(resp) => Message::Response(resp),
            Err(e) => Error::Internal(e.to_string()).answer(r.id),
        });
    }
    // With a drift guard, judged on a list that saw every change the child
    // announced (module `catalog::changes`).
    match core.check_judged_request(route, r.params.as_deref()).await {
        Err(why) => return Some(why.answer(r.id)),
        Ok(crate::Passed::Drifted) => tx.drifted(&r.id),
        Ok(crate::Passed::Clean) => {}
    }
    if info.modern {
        // The child speaks 2026-07-28 itself: forward the request as it is (its
        // _meta, inputResponses and requestState included) and its answers back.
        let name = params_object(r.params.as_deref()).ok().and_then(|p| {
            p.get("name")
                .or_else(|| p.get("uri"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        let method = r.method.clone();
        let id = r.id.clone();
        let list = crate::ListRequest::of(route, r.params.as_deref(), &upstream);
        let call = match upstream.call(r, core.next_owner()).await {
            Ok(c) => c,
            Err(why) => return Some(why.answer(id)),
        };
        let held = Held {
            call,
            upstream,
            pending: HashMap::new(),
            method,
            name,
            list,
            params: Map::new(),
            context,
        };
        return run(core, tx, rx, id, held).await;
    }
    if route == Route::Listen {
        listen(core, &upstream, tx, rx, r).await;
        return None;
    }
    let mut params = match (decoded, &r.params) {
        (Some(p), _) => p,
        (None, None) => Map::new(),
        (None, Some(p)) => {
            // An object this bridge cannot decode (a number beyond a 64-bit
            // float, say) is not "not an object": say what went wrong.
            let why = match serde_json::from_str::<Map<String, Value>>(p.get()) {
                Err(e) if p.get().starts_with('{') => format!("params could not be read: {e}"),
                _ => "params must be an object".to_owned(),
            };
            return Some(Error::InvalidParams(why).answer(r.id));
        }
    };
    let name = params
        .get("name")
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let input_responses = params.remove("inputResponses");
    let request_state = params.remove("requestState");
    // What a held call is compared by: the params without `_meta`, which a retry
    // may change (a new progress token). The child gets `legacy_params` below.
    params.remove("_meta");
    if let Some(state) = request_state {
        let Some(state) = state.as_str() else {
            return Some(Error::InvalidParams("requestState must be a string".into()).answer(r.id));
        };
        // The retry repeats the request's method and params (2026-07-28
        // "Multi round-trip requests": the same method and params, a new id,
        // plus inputResponses and requestState; `_meta` may change, e.g. a new
        // progress token). Compared as decoded JSON: member order and
        // whitespace do not matter.
        let held = {
            let mut table = core.held.lock().unwrap_or_else(|p| p.into_inner());
            match table.get(state) {
                None => None,
                // A mismatched retry leaves the held call as it is (it expires
                // as it would have): it must not destroy the right one's state.
                Some(h) if h.method != r.method || h.name != name || h.params != params => {
                    return Some(Error::InvalidParams(format!(
                            "requestState was issued for another request: a retry must repeat the \
                             method ({}) and params (name and arguments) of the request that got \
                             input_required; only inputResponses, requestState and _meta may change",
                            h.method
                        )).answer(r.id));
                }
                Some(_) => table.remove(state),
            }
        };
        let Some(held) = held else {
            return Some(Error::InvalidParams("unknown or expired requestState (the held call is gone; send the request again without it)".into()).answer(r.id));
        };
        return resume(core, tx, rx, r.id, held, input_responses).await;
    }
    // What the legacy child gets: the client's params without the 2026 members,
    // every other value as the client wrote it (not `params`, which went
    // through `serde_json::Value` and its number model).
    let Some(raw_params) = legacy_params(r.params.as_deref()) else {
        return Some(Error::InvalidParams("params must be an object".into()).answer(r.id));
    };
    let method = r.method.clone();
    let list = crate::ListRequest::of(route, r.params.as_deref(), &upstream);
    let forwarded = Request {
        id: r.id.clone(),
        method: r.method,
        params: Some(raw_params),
    };
    let owner = core.next_owner();
    if context.log_level.is_some() {
        // The level is applied here, per request: the child sends them all.
        core.shared_child_logs_everything(owner).await;
    }
    let call = match upstream.call(forwarded, owner).await {
        Ok(c) => c,
        Err(why) => return Some(why.answer(r.id)),
    };
    run(
        core,
        tx,
        rx,
        r.id,
        Held {
            call,
            upstream,
            pending: HashMap::new(),
            method,
            name,
            list,
            params,
            context,
        },
    )
    .await
}

/// A 2026-07-28 request's params for a legacy child, edited as raw members
/// ([`RawObject`]): `inputResponses` and `requestState` removed, and from
/// `_meta` the 2026 members (`_meta` itself when nothing else is left); `{}`
/// when absent, `None` when not an object.
fn legacy_params(params: Option<&RawValue>) -> Option<Box<RawValue>> {
    let Some(params) = params else {
        return Some(crate::upstream::empty_object());
    };
    let mut p = RawObject::parse(params.get()).ok()?;
    p.remove("inputResponses");
    p.remove("requestState");
    if let Some(mut m) = p.get_object("_meta") {
        for key in [
            meta::PROTOCOL_VERSION,
            meta::CLIENT_CAPABILITIES,
            meta::CLIENT_INFO,
            meta::LOG_LEVEL,
        ] {
            m.remove(key);
        }
        if m.is_empty() {
            p.remove("_meta");
        } else {
            p.insert("_meta", m.to_raw());
        }
    }
    Some(p.to_raw())
}

/// The request's params as an object (`{}` when absent).
fn params_object(params: Option<&RawValue>) -> Result<Map<String, Value>, String> {
    match params {
        None => Ok(Map::new()),
        Some(p) => serde_json::from_str(p.get()).map_err(|_| "params must be an object".to_owned()),
    }
}

/// The `Mcp-Param-*` check of a 2026-07-28 `tools/call` (after
/// `check_exchange_headers`): the called tool's `x-mcp-header` annotations come
/// from the shared child's `tools/list` (module `catalog::tools`, which fetches it first
/// when it is not known for the running child). A tool outside the allowlist is
/// checked as an unknown one (no annotations: its -32602 comes next, and its
/// schema is not revealed). Errors: -32020 (a header), -32603 (the list could
/// not be fetched).
async fn check_param_headers(
    core: &Core,
    params: Option<&Map<String, Value>>,
    headers: &HeaderMap,
) -> Result<(), ErrorObject> {
    let name = params
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .filter(|n| core.allow.permits(n));
    let pairs = match name {
        Some(name) => core
            .tools
            .of_tool(&core.shared, name, core.request_timeout)
            .await
            .map_err(|why| {
                ErrorObject::new(
                    code::INTERNAL_ERROR,
                    format!(
                        "cannot check the Mcp-Param-* headers: the upstream server's tools/list failed: {why}"
                    ),
                )
            })?,
        None => Vec::new(),
    };
    mcp_headers::check_param_headers(&pairs, params, headers)
}

/// A random handle for a held call: 128 bits from the OS's CSPRNG, as hex.
fn new_handle() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // Without randomness a handle could be guessed: refuse by making it unusable.
        return String::new();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Answers the held call's pending requests with the client's `inputResponses`,
/// then goes on running it.
async fn resume(
    core: &Arc<Core>,
    tx: &Tx,
    rx: &mut Receiver,
    id: Id,
    mut held: Held,
    responses: Option<Value>,
) -> Option<Message> {
    let mut responses = match responses {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    // The child may have cancelled some of its requests while the call was
    // held: those are over, not to be answered or asked again (an answer in
    // `inputResponses` for one is ignored, as for any key not asked).
    drop_cancelled(&mut held);
    let keys: Vec<String> = held.pending.keys().cloned().collect();
    for key in keys {
        if let Some(answer) = responses.remove(&key) {
            let request = held.pending.remove(&key).expect("key listed");
            let result = match serde_json::value::to_raw_value(&answer) {
                Ok(r) => r,
                Err(e) => return Some(Error::InvalidParams(e.to_string()).answer(id)),
            };
            held.upstream
                .respond(Message::Response(Response {
                    id: request.id,
                    result,
                }))
                .await;
        }
    }
    if !held.pending.is_empty() {
        // Some answers are missing: ask again for those (MRTR: SHOULD ask again).
        return Some(input_required(core, id, held));
    }
    // Nothing left to answer (all answered, or cancelled by the child): the
    // call goes on, to its next request or its result.
    run(core, tx, rx, id, held).await
}

/// Drops the pending requests the child no longer has open: it cancelled them
/// (`notifications/cancelled`; the upstream forgot them, whether it routed the
/// notification to this call's queue, which `run` then passes over, or, the
/// call having returned meanwhile, out with the broadcasts), or it died.
fn drop_cancelled(held: &mut Held) {
    let upstream = &held.upstream;
    held.pending.retain(|key, request| {
        let open = upstream.is_open(&request.id);
        if !open {
            debug!(key, method = %request.method, "the child cancelled a request it had asked the client for: dropped from the held call");
        }
        open
    });
}

/// Forwards the call's progress and logs to the exchange until it ends or needs
/// input from the client.
async fn run(
    core: &Arc<Core>,
    tx: &Tx,
    rx: &mut Receiver,
    id: Id,
    mut held: Held,
) -> Option<Message> {
    // A listen stream is quiet by nature: only requests time out.
    let listen = Route::of(&held.method) == Route::Listen;
    let wait = if listen {
        Duration::from_secs(365 * 24 * 3600)
    } else {
        core.request_timeout
    };
    let _open = listen.then(|| core.listens.enter());
    loop {
        let step = tokio::select! {
            step = tokio::time::timeout(wait, held.call.next()) => match step {
                Ok(step) => step,
                Err(_) => {
                    held.call.cancel("timed out in the bridge").await;
                    return Some(Error::Upstream(format!("the upstream server sent nothing for this request within {:?}", core.request_timeout)).answer(id));
                }
            },
            event = rx.recv() => {
                if listen {
                    if let Some(Inbound::Closed { reason: CloseReason::SessionClosed }) = event {
                        // The bridge is stopping: the spec's final result.
                        held.call.cancel("the bridge is stopping").await;
                        return Some(crate::listen_final_result(&id));
                    }
                }
                if matches!(event, None | Some(Inbound::Closed { .. })) {
                    // Closing the stream cancels the request (2026-07-28).
                    held.call.cancel("the client closed the stream").await;
                    return None;
                }
                continue;
            }
        };
        match step {
            Step::Event(CallEvent::Notification(mut n)) => {
                if Notice::of(&n.method) == Notice::Cancelled {
                    // The child cancelled one of its requests for this call. A
                    // 2026-07-28 client got it as an input request, under a key,
                    // never an id: nothing to tell it. The upstream has
                    // forgotten the request, so a pending one is dropped
                    // (`drop_cancelled`) before input_required goes out or when
                    // the retry comes; one whose answer the retry already
                    // handed on is over anyway (the upstream dropped that
                    // answer if it came too late).
                    debug!("the child cancelled one of its requests: not forwarded to a 2026-07-28 client");
                    continue;
                }
                if listen {
                    n.params = n.params.map(|p| with_subscription_id(p, &id));
                }
                if Notice::of(&n.method) == Notice::Log
                    && !held
                        .context
                        .log_level
                        .is_some_and(|min| crate::log_at_least(&n, min))
                {
                    // 2026-07-28: no log messages unless the request asked for
                    // them, and only at its level or above.
                    continue;
                }
                let _ = tx
                    .send_related(Message::Notification(n), Some(id.clone()))
                    .await;
            }
            Step::Event(CallEvent::Request(request)) => {
                match held
                    .context
                    .check_input_request(&request.method, request.params.as_deref())
                {
                    Ok(()) => {
                        let key = format!("sb-{}", held.pending.len());
                        held.pending.insert(key, request);
                        // Collect requests the child made at the same moment.
                        while let Ok(more) = held.call.try_request() {
                            if held
                                .context
                                .check_input_request(&more.method, more.params.as_deref())
                                .is_ok()
                            {
                                let key = format!("sb-{}", held.pending.len());
                                held.pending.insert(key, more);
                            } else {
                                refuse(&held.upstream, more).await;
                            }
                        }
                        // The child may already have cancelled some of them:
                        // never ask the client for those. None left: the call
                        // goes on.
                        drop_cancelled(&mut held);
                        if held.pending.is_empty() {
                            continue;
                        }
                        return Some(input_required(core, id, held));
                    }
                    Err(_) => {
                        // The client did not declare what the child asks for. A
                        // legacy child's request carries no link to the call (it
                        // may be its own initiative, e.g. `roots/list` on a list
                        // change): refuse it to the child and let the call go on;
                        // never fail the client's call for it.
                        refuse(&held.upstream, request).await;
                    }
                }
            }
            Step::Done(message) => {
                tx.upstream_took(&id, &held.upstream, held.call.took());
                let message = match held.list {
                    Some(l) => filter_list(core, l.kind, l.asked(&held.upstream), message),
                    None => message,
                };
                let message = match message {
                    Message::Response(mut r) if listen => {
                        r.result = with_subscription_id(r.result, &id);
                        Message::Response(r)
                    }
                    other => other,
                };
                return Some(translate_final(id, &held.method, message));
            }
            // The bridge stopped the child under a listen stream: the
            // stream ends as the spec has a server end it, not with an error.
            Step::Failed(_) if listen && core.draining.load(Ordering::Relaxed) => {
                return Some(crate::listen_final_result(&id))
            }
            Step::Failed(why) => return Some(why.answer(id)),
        }
    }
}

/// Answers a child's request the client cannot take (capability not declared).
async fn refuse(upstream: &Upstream, request: Request) {
    debug!(method = %request.method, "the client did not declare the capability this request needs");
    upstream
        .respond(
            Error::Unsupported(format!(
                "the client did not declare the capability {} needs",
                request.method
            ))
            .answer(request.id),
        )
        .await;
}

/// Holds the call and builds the `input_required` result for the client.
fn input_required(core: &Arc<Core>, id: Id, held: Held) -> Message {
    let mut requests = Map::new();
    for (key, request) in &held.pending {
        let params: Value = request
            .params
            .as_ref()
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or_else(|| json!({}));
        requests.insert(
            key.clone(),
            json!({"method": request.method, "params": params}),
        );
    }
    let handle = new_handle();
    if handle.is_empty() {
        return Error::Upstream("no random source for requestState".into()).answer(id);
    }
    let result = json!({
        "resultType": "input_required",
        "inputRequests": requests,
        "requestState": handle,
    });
    core.hold(handle, held);
    match Response::new(id.clone(), &result) {
        Ok(r) => Message::Response(r),
        Err(e) => Error::Internal(e.to_string()).answer(id),
    }
}

/// `_meta["io.modelcontextprotocol/subscriptionId"]` set to the client's own
/// listen id (the child saw ours), when present.
fn with_subscription_id(raw: Box<RawValue>, id: &Id) -> Box<RawValue> {
    if !raw.get().contains(meta::SUBSCRIPTION_ID) {
        return raw;
    }
    let Ok(mut obj) = serde_json::from_str::<Map<String, Value>>(raw.get()) else {
        return raw;
    };
    if let Some(Value::Object(m)) = obj.get_mut("_meta") {
        if m.contains_key(meta::SUBSCRIPTION_ID) {
            if let Ok(v) = serde_json::to_value(id) {
                m.insert(meta::SUBSCRIPTION_ID.to_owned(), v);
            }
        }
    }
    serde_json::value::to_raw_value(&obj).unwrap_or(raw)
}

/// A list answer as clients see it: narrowed to the allowlist (tools) and
/// judged by the drift guard.
fn filter_list(
    core: &Core,
    kind: crate::catalog::pin::Kind,
    asked: crate::catalog::guard::Asked,
    message: Message,
) -> Message {
    match message {
        Message::Response(r) => Message::Response(Response {
            id: r.id,
            result: core.filter_list(crate::catalog::guard::Scope::Shared, kind, r.result, asked),
        }),
        other => other,
    }
}

/// The child's final answer in 2026-07-28 shape, under the client's id.
fn translate_final(id: Id, method: &str, message: Message) -> Message {
    match message {
        Message::Response(r) => Message::Response(Response {
            id,
            result: complete_result(r.result, Route::of(method).cacheable()),
        }),
        Message::Error(mut e) => {
            if e.error.code == -32002 {
                // Resource not found: -32002 before 2026-07-28, -32602 since.
                e.error.code = code::INVALID_PARAMS;
            }
            Message::Error(ErrorResponse::new(Some(id), e.error))
        }
        other => other,
    }
}

/// The cache hints the bridge gives a legacy child's results: none to reuse
/// (`ttlMs` 0), and private to the requester (the child's answer may depend on
/// who asked).
const CACHE_HINTS: &str = "\"ttlMs\":0,\"cacheScope\":\"private\",";

/// Adds `"resultType":"complete"` (and, with `cache_hints`, `ttlMs`/`cacheScope`)
/// to a result object that lacks them, by splicing the raw text (the payload is
/// not decoded). A result that already has `resultType` at the top level is left
/// as it is.
pub(crate) fn complete_result(raw: Box<RawValue>, cache_hints: bool) -> Box<RawValue> {
    let text = raw.get();
    let trimmed = text.trim_start();
    if !trimmed.starts_with('{') {
        return raw;
    }
    if text.contains("\"resultType\"") {
        // Maybe at the top level, maybe inside the payload: look properly.
        let top: Result<Map<String, Value>, _> = serde_json::from_str(text);
        if top.is_ok_and(|m| m.contains_key("resultType")) {
            return raw;
        }
    }
    let body = trimmed[1..].trim_start();
    let mut s = String::with_capacity(text.len() + 64);
    s.push_str("{\"resultType\":\"complete\",");
    if cache_hints && !text.contains("\"ttlMs\"") {
        s.push_str(CACHE_HINTS);
    }
    if body.starts_with('}') {
        s.pop(); // the trailing comma
        s.push('}');
    } else {
        s.push_str(body);
    }
    RawValue::from_string(s).unwrap_or(raw)
}

/// `subscriptions/listen` (2026-07-28): acknowledged, then the child's
/// notifications of the requested kinds, tagged with the subscription id.
async fn listen(core: &Arc<Core>, upstream: &Upstream, tx: &Tx, rx: &mut Receiver, r: Request) {
    let info = match upstream.ready(core.init_timeout).await {
        Ok(i) => i,
        Err(why) => {
            let _ = tx.send(why.answer(r.id)).await;
            return;
        }
    };
    let params = params_object(r.params.as_deref()).unwrap_or_default();
    let asked = params
        .get("notifications")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let caps = &info.result.capabilities;
    let flag = |key: &str| asked.get(key).and_then(Value::as_bool).unwrap_or(false);
    let tools = flag("toolsListChanged")
        && caps
            .tools
            .as_ref()
            .is_some_and(|t| t.list_changed == Some(true));
    let prompts = flag("promptsListChanged")
        && caps
            .prompts
            .as_ref()
            .is_some_and(|p| p.list_changed == Some(true));
    let resources_list = flag("resourcesListChanged")
        && caps
            .resources
            .as_ref()
            .is_some_and(|p| p.list_changed == Some(true));
    let can_subscribe = caps
        .resources
        .as_ref()
        .is_some_and(|p| p.subscribe == Some(true));
    let uris: BTreeSet<String> = if can_subscribe {
        asked
            .get("resourceSubscriptions")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    } else {
        BTreeSet::new()
    };
    let mut honoured = Map::new();
    if tools {
        honoured.insert("toolsListChanged".into(), json!(true));
    }
    if prompts {
        honoured.insert("promptsListChanged".into(), json!(true));
    }
    if resources_list {
        honoured.insert("resourcesListChanged".into(), json!(true));
    }
    if !uris.is_empty() {
        honoured.insert("resourceSubscriptions".into(), json!(uris));
    }
    let sub_id = serde_json::to_value(&r.id).unwrap_or(Value::Null);
    let mut notifications = upstream.subscribe();
    let owner = core.next_owner();
    let mut held = Vec::new();
    for uri in &uris {
        if subscribe(core, upstream, owner, true, uri).await {
            held.push(uri.clone());
        }
    }
    let ack = json!({
        "notifications": honoured,
        "_meta": { meta::SUBSCRIPTION_ID: sub_id.clone() },
    });
    if let Ok(n) = Notification::new(t::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED, &ack) {
        if tx
            .send_related(Message::Notification(n), Some(r.id.clone()))
            .await
            .is_err()
        {
            return;
        }
    }
    let _open = core.listens.enter();
    loop {
        tokio::select! {
            event = rx.recv() => {
                if let Some(Inbound::Closed { reason: CloseReason::SessionClosed }) = event {
                    // The bridge is stopping: the spec's final result.
                    let _ = tx.send(crate::listen_final_result(&r.id)).await;
                    break;
                }
                if matches!(event, None | Some(Inbound::Closed { .. })) {
                    break;
                }
            }
            n = notifications.recv() => match n {
                Ok(n) => {
                    let wanted = match Notice::of(&n.method) {
                        Notice::ListChanged(Some(Kind::Tool)) => tools,
                        Notice::ListChanged(Some(Kind::Prompt)) => prompts,
                        Notice::ListChanged(None) => resources_list,
                        Notice::ResourceUpdated => params_object(n.params.as_deref())
                            .ok()
                            .and_then(|p| p.get("uri").and_then(Value::as_str).map(|u| uris.contains(u)))
                            .unwrap_or(false),
                        _ => false,
                    };
                    if !wanted {
                        continue;
                    }
                    let mut p = params_object(n.params.as_deref()).unwrap_or_default();
                    let meta_obj = p.entry("_meta").or_insert_with(|| json!({}));
                    if let Value::Object(m) = meta_obj {
                        m.insert(meta::SUBSCRIPTION_ID.to_owned(), sub_id.clone());
                    }
                    let Ok(tagged) = Notification::new(n.method.clone(), &p) else { continue };
                    if tx.send_related(Message::Notification(tagged), Some(r.id.clone())).await.is_err() {
                        break;
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(k)) => {
                    warn!(missed = k, "a listen stream missed upstream notifications");
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                    let done = json!({"resultType": "complete", "_meta": { meta::SUBSCRIPTION_ID: sub_id.clone() }});
                    if let Ok(resp) = Response::new(r.id.clone(), &done) {
                        let _ = tx.send(Message::Response(resp)).await;
                    }
                    break;
                }
            }
        }
    }
    for uri in &held {
        subscribe(core, upstream, owner, false, uri).await;
    }
}

/// A listen stream's subscription to `uri` on the shared child (`subscribe`),
/// or its end; counted with every other subscriber's
/// ([`Core::shared_subscription`]), so that one stream's end does not end
/// another's, or a legacy session's, subscription. Whether it went through.
async fn subscribe(
    core: &Core,
    upstream: &Upstream,
    owner: u64,
    subscribe: bool,
    uri: &str,
) -> bool {
    let method = if subscribe {
        t::RESOURCES_SUBSCRIBE
    } else {
        t::RESOURCES_UNSUBSCRIBE
    };
    let Ok(request) = Request::new(Id::from(0u64), method, &json!({ "uri": uri })) else {
        return false;
    };
    let ask = || crate::call_once(upstream, request, owner, Duration::from_secs(30));
    // A listen stream subscribes once per URI, and ends what it started.
    match core
        .shared_subscription(uri, subscribe, !subscribe, ask)
        .await
    {
        Some(Message::Error(e)) => {
            warn!(uri, error = %e.error.message, "{method} failed upstream");
            false
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::raw;

    #[test]
    fn discover_drops_the_2025_11_25_tasks_capability() {
        let child: switchboard_protocol::types::ServerCapabilities =
            serde_json::from_value(json!({
                "tools": {"listChanged": true},
                "resources": {"subscribe": true},
                "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
                "extensions": {"com.example/x": {}}
            }))
            .unwrap();
        let told = serde_json::to_value(discover_capabilities(&child)).unwrap();
        assert_eq!(
            told,
            json!({
                "tools": {"listChanged": true},
                "resources": {"subscribe": true},
                "extensions": {"com.example/x": {}}
            })
        );
    }

    #[test]
    fn result_type_is_spliced_without_decoding() {
        assert_eq!(
            complete_result(raw("{}"), false).get(),
            r#"{"resultType":"complete"}"#
        );
        assert_eq!(
            complete_result(raw("{ }"), true).get(),
            r#"{"resultType":"complete","ttlMs":0,"cacheScope":"private"}"#
        );
        assert_eq!(
            complete_result(raw(r#"{"content":[]}"#), false).get(),
            r#"{"resultType":"complete","content":[]}"#
        );
        assert_eq!(
            complete_result(raw(r#"{"tools":[]}"#), true).get(),
            r#"{"resultType":"complete","ttlMs":0,"cacheScope":"private","tools":[]}"#
        );
        let has = r#"{"resultType":"input_required","x":1}"#;
        assert_eq!(complete_result(raw(has), true).get(), has);
        // "resultType" inside the payload only: still added at the top.
        let inner = r#"{"content":[{"type":"text","text":"\"resultType\""}]}"#;
        let out: Value = serde_json::from_str(complete_result(raw(inner), false).get()).unwrap();
        assert_eq!(out["resultType"], "complete");
        assert_eq!(out["content"][0]["text"], "\"resultType\"");
    }
}
