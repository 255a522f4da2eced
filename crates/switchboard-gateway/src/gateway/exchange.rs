//! One stateless 2026-07-28 exchange on a gateway route, and the resolution
//! of a request to the one upstream it is for (shared with the sessions).
//!
//! ```text
//! server/discover, */list   answered here (the union; the merged catalog)
//! anything named            resolved to its upstream (its own name in params
//!                           and in Mcp-Name), then served by that upstream's
//!                           bridge exchange: era translation, input_required
//!                           round trips, Mcp-Param-* checks
//! ```
//!
//! This module must not know how upstreams are reached or listed.

use std::sync::Arc;

use http::{HeaderMap, HeaderValue};
use serde_json::{json, Map, Value};
use switchboard_protocol::jsonrpc::{ErrorResponse, Message, Request, Response};
use switchboard_protocol::types::{meta, CacheScope, DiscoverResult, Implementation};
use switchboard_protocol::version::Supported;
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::http::mcp_headers;
use switchboard_transport::{Inbound, Receiver};

use super::{Layout, Member, RouteView, Shared};
use crate::catalog::pin::Kind;
use crate::classify::Route;
use crate::downstream::relay::named;
use crate::downstream::watch::Tx;
use crate::error::Error;
use crate::metrics::Refusal;
use crate::raw::RawObject;

/// A request resolved to its upstream: the member's index and the request
/// as that upstream names things.
pub(crate) struct Target {
    pub(crate) member: Arc<Member>,
    pub(crate) request: Request,
    /// The upstream's own name of what the request names (for `Mcp-Name`).
    pub(crate) name: Option<String>,
}

/// Resolves a named request (`tools/call`, `prompts/get`, `resources/read`,
/// `resources/(un)subscribe`, `completion/complete`) to the upstream of
/// `route` that serves what it names. Errors: -32602 for a name the route
/// does not serve (unknown, withheld, outside the allowlist: the call never
/// reaches an upstream), -32601 for a method the gateway does not route.
/// `kind`: `r`'s route, classified once by the caller.
pub(crate) fn resolve(
    layout: &Layout,
    route: &RouteView,
    kind: Route,
    r: &Request,
) -> Result<Target, Error> {
    let merged = layout.merged();
    let mut params = match r.params.as_deref() {
        None => RawObject::default(),
        Some(p) => RawObject::parse(p.get())
            .map_err(|_| Error::InvalidParams("params must be an object".into()))?,
    };
    let text = |params: &RawObject, key: &str| -> Option<String> {
        params
            .get(key)
            .and_then(|v| serde_json::from_str::<String>(v.get()).ok())
    };
    // A URI nobody listed goes to the route's one upstream with resources, if
    // one: it answers its own "not found".
    let only_resources = {
        let mut with = layout.members.iter().enumerate().filter(|(i, m)| {
            route.members[*i]
                && matches!(m.upstream().status(), crate::upstream::Status::Ready(info) if info.result.capabilities.resources.is_some())
        });
        match (with.next(), with.next()) {
            (Some((i, _)), None) => Some(i),
            _ => None,
        }
    };
    let by_uri = |uri: &str| -> Result<usize, Error> {
        merged
            .resource_owner(uri)
            .filter(|&m| route.members[m])
            .or(only_resources)
            .ok_or_else(|| {
                Error::InvalidParams(format!(
                    "resource {uri:?} is not listed by any upstream of this route"
                ))
            })
    };
    let (member, name) = match kind {
        Route::Use(used @ (Kind::Tool | Kind::Prompt)) => {
            let tool = used == Kind::Tool;
            let what = if tool { "tool" } else { "prompt" };
            let served = text(&params, "name")
                .ok_or_else(|| Error::InvalidParams(format!("{} needs params.name", r.method)))?;
            let entry = if tool {
                merged.tool(&served)
            } else {
                merged.prompt(&served)
            };
            let in_route = entry.filter(|e| route.members[e.member]);
            let entry = in_route
                .filter(|_| !tool || route.allow.permits(&served))
                .ok_or_else(|| match withheld(layout, route, &served, tool) {
                    Some((_, why)) => Error::Refused(
                        Refusal::Drift,
                        format!("{what} {served} is withheld: {why}"),
                    ),
                    // Listed, outside the allowlist: to the caller, as unknown.
                    None if in_route.is_some() => {
                        Error::Refused(Refusal::Allowlist, format!("unknown {what}: {served}"))
                    }
                    None => match down_owner(layout, route, &served, tool) {
                        Some((m, why)) => named(Some(&m.name), why),
                        None => Error::Refused(
                            Refusal::UnknownTool,
                            format!("unknown {what}: {served}"),
                        ),
                    },
                })?;
            // Its upstream known down: at once, naming it and its state.
            let member = &layout.members[entry.member];
            if let Some(why) = member.upstream().lapsed() {
                return Err(named(Some(&member.name), why));
            }
            let original = entry.original.clone();
            params.insert("name", to_raw(&original));
            (entry.member, Some(original))
        }
        Route::Read | Route::Subscribe(_) => {
            let uri = text(&params, "uri")
                .ok_or_else(|| Error::InvalidParams(format!("{} needs params.uri", r.method)))?;
            (by_uri(&uri)?, Some(uri))
        }
        Route::Complete => {
            let mut reference = params.get_object("ref").ok_or_else(|| {
                Error::InvalidParams("completion/complete needs params.ref".into())
            })?;
            let kind = text(&reference, "type");
            let member = match kind.as_deref() {
                Some("ref/prompt") => {
                    let served = text(&reference, "name")
                        .ok_or_else(|| Error::InvalidParams("a ref/prompt needs a name".into()))?;
                    let entry = merged
                        .prompt(&served)
                        .filter(|e| route.members[e.member])
                        .ok_or_else(|| match down_owner(layout, route, &served, false) {
                            Some((m, why)) => named(Some(&m.name), why),
                            None => Error::InvalidParams(format!("unknown prompt: {served}")),
                        })?;
                    let member = &layout.members[entry.member];
                    if let Some(why) = member.upstream().lapsed() {
                        return Err(named(Some(&member.name), why));
                    }
                    reference.insert("name", to_raw(&entry.original));
                    entry.member
                }
                Some("ref/resource") => {
                    let uri = text(&reference, "uri")
                        .ok_or_else(|| Error::InvalidParams("a ref/resource needs a uri".into()))?;
                    by_uri(&uri)?
                }
                _ => return Err(Error::InvalidParams("unknown completion ref type".into())),
            };
            params.insert("ref", reference.to_raw());
            (member, None)
        }
        _ => {
            return Err(Error::Unsupported(format!(
                "method not found: {} (not served by the gateway)",
                r.method
            )))
        }
    };
    Ok(Target {
        member: layout.members[member].clone(),
        request: Request {
            id: r.id.clone(),
            method: r.method.clone(),
            params: Some(params.to_raw()),
        },
        name,
    })
}

/// [`resolve`], and when what the request names is not known while an
/// upstream of the route has not been listed yet (it is starting), again
/// once it has been (each waited for up to its list timeout). A call or get
/// refused as withheld is counted by the drift guard that withholds it
/// ([`DriftCounts`](crate::DriftCounts)), once.
pub(crate) async fn resolve_listed(
    layout: &Layout,
    route: &RouteView,
    kind: Route,
    r: &Request,
) -> Result<Target, Error> {
    let resolved = resolve_waiting(layout, route, kind, r).await;
    if let (Err(Error::Refused(..)), Route::Use(used @ (Kind::Tool | Kind::Prompt))) =
        (&resolved, kind)
    {
        let served = r
            .params
            .as_deref()
            .and_then(|p| RawObject::parse(p.get()).ok())
            .and_then(|p| serde_json::from_str::<String>(p.get("name")?.get()).ok());
        let tool = used == Kind::Tool;
        let withheld = served
            .as_deref()
            .and_then(|s| withheld(layout, route, s, tool));
        if let Some((guard, _)) = &withheld {
            guard.count_use();
        }
        if let Some(m) = crate::metrics::get() {
            use crate::metrics::Refusal;
            // Served by one of the route's upstreams, outside its allowlist.
            let listed = served
                .as_deref()
                .filter(|s| tool && !route.allow.permits(s))
                .and_then(|s| layout.merged().tool(s).map(|e| e.member))
                .filter(|&i| route.members[i]);
            let (upstream, why) = match (&withheld, listed) {
                (Some((guard, _)), _) => (guard.upstream_label(), Refusal::Drift),
                (None, Some(i)) => (layout.members[i].name.as_str(), Refusal::Allowlist),
                (None, None) => ("", Refusal::UnknownTool),
            };
            m.refused(upstream, why);
        }
    }
    if let (Err(Error::InvalidParams(_)), Route::Use(_), Some(m)) =
        (&resolved, kind, crate::metrics::get())
    {
        m.refused("", crate::metrics::Refusal::BadInput);
    }
    resolved
}

/// [`resolve_listed`] without the count.
async fn resolve_waiting(
    layout: &Layout,
    route: &RouteView,
    kind: Route,
    r: &Request,
) -> Result<Target, Error> {
    let first = match resolve(layout, route, kind, r) {
        Err(_) if !layout.all_listed(route) => {
            layout.listed(route).await;
            resolve(layout, route, kind, r)
        }
        other => other,
    };
    // A tool or prompt of an upstream with a drift guard is resolved on lists
    // that saw every change its upstream announced ([`Member::relisted`]), so
    // that one rewritten, added or removed mid-session is judged (withheld,
    // refused) at the very next call, before any upstream sees it.
    if !matches!(kind, Route::Use(Kind::Tool | Kind::Prompt)) {
        return first;
    }
    match &first {
        // Its upstream's change not judged in time: refused (block mode).
        Ok(target) if target.member.core.guard.is_some() => target.member.relisted(kind).await?,
        Ok(_) => return first,
        Err(_) => {
            // An unknown name stays unknown, whatever a re-list that failed
            // would have said: it reaches no upstream.
            let mut waited = false;
            for (i, m) in layout.members.iter().enumerate() {
                if route.members[i] && m.core.guard.is_some() && !m.lapsed() {
                    let _ = m.relisted(kind).await;
                    waited = true;
                }
            }
            if !waited {
                return first;
            }
        }
    }
    resolve(layout, route, kind, r)
}

fn to_raw(s: &str) -> Box<serde_json::value::RawValue> {
    serde_json::value::to_raw_value(s).expect("a string is JSON")
}

/// The known-down upstream of `route` ([`Member::lapsed`]) that may serve
/// `served`, a name the merged lists lack, and its error: the one whose
/// prefix it bears, or else one without a prefix that listed it last or was
/// never listed. A tool outside the route's allowlist stays unknown.
fn down_owner<'a>(
    layout: &'a Layout,
    route: &RouteView,
    served: &str,
    tool: bool,
) -> Option<(&'a Arc<Member>, Error)> {
    if tool && !route.allow.permits(served) {
        return None;
    }
    let down = layout
        .members
        .iter()
        .enumerate()
        .filter(|(i, _)| route.members[*i])
        .filter_map(|(_, m)| Some((m, m.upstream().lapsed()?)));
    let (mut prefixed, mut plain) = (None, None);
    for (m, why) in down {
        match &m.prefix {
            Some(p) => {
                let bears = served
                    .strip_prefix(p.as_str())
                    .is_some_and(|rest| rest.starts_with(super::catalog::SEPARATOR));
                if bears && prefixed.is_none() {
                    prefixed = Some((m, why));
                }
            }
            None if plain.is_none() => {
                let listed = m.snapshot.borrow().as_deref().map(|s| {
                    let list = if tool { &s.tools } else { &s.prompts };
                    list.iter().any(|e| e["name"].as_str() == Some(served))
                });
                if listed != Some(false) {
                    plain = Some((m, why));
                }
            }
            None => {}
        }
    }
    prefixed.or(plain)
}

/// Why a drift guard withholds the tool (`tool`) or prompt a client calls by
/// its served name `served`: its upstream (one of `route`'s) listed it last
/// and its guard refuses it (new, or not as approved). `None` when no
/// upstream listed it, its guard lets it be served (it is then unknown for
/// another reason: a name claimed twice), or it is a tool outside the
/// route's allowlist. With the guard.
fn withheld<'a>(
    layout: &'a Layout,
    route: &RouteView,
    served: &str,
    tool: bool,
) -> Option<(&'a crate::DriftGuard, String)> {
    // A tool outside the route's allowlist is unknown there, drifted or not:
    // nothing of it (its upstream, the lock) is told.
    if tool && !route.allow.permits(served) {
        return None;
    }
    let kind = if tool { Kind::Tool } else { Kind::Prompt };
    layout
        .members
        .iter()
        .enumerate()
        .filter(|(i, _)| route.members[*i])
        .find_map(|(_, m)| {
            let guard = m.core.guard.as_ref()?;
            let name = match &m.prefix {
                Some(p) => served
                    .strip_prefix(p.as_str())?
                    .strip_prefix(super::catalog::SEPARATOR)?,
                None => served,
            };
            let unjudged = m.unjudged.lock().unwrap_or_else(|p| p.into_inner());
            let listed = if tool {
                &unjudged.tools
            } else {
                &unjudged.prompts
            };
            let why = listed
                .iter()
                .any(|e| e.get("name").and_then(Value::as_str) == Some(name))
                .then(|| guard.refusal(crate::catalog::guard::Scope::Shared, kind, name))??;
            Some((guard.as_ref(), why))
        })
}

/// Serves one exchange: its one request, then the answer.
pub(crate) async fn serve(
    gw: Arc<Shared>,
    path: String,
    tx: Tx,
    mut rx: Receiver,
    headers: HeaderMap,
) {
    let _answering = crate::Answering::counted(&tx, &gw.draining, &gw.answers, None);
    let Some(Inbound::Message(Message::Request(mut r))) = rx.recv().await else {
        return;
    };
    let route = crate::classify::Route::of(&r.method);
    tx.arrived(&mut r, route);
    let layout = gw.layout();
    let Some(route) = layout.route(&path).cloned() else {
        let gone = Error::InvalidRequest("this route was removed by a configuration reload".into());
        let _ = tx.send(gone.answer(r.id)).await;
        return;
    };
    let traced = tx.trace_id(&r.id);
    let handled = handle(&gw, &layout, &route, &tx, &mut rx, r, &headers);
    if let Some(answer) = crate::downstream::relay::in_call_span(traced, handled).await {
        let _ = tx.send(as_gateway(answer)).await;
    }
}

async fn handle(
    gw: &Arc<Shared>,
    layout: &Layout,
    route: &RouteView,
    tx: &Tx,
    rx: &mut Receiver,
    r: Request,
    headers: &HeaderMap,
) -> Option<Message> {
    let supported = Supported::new(ProtocolVersion::ALL).expect("not empty");
    let kind = Route::of(&r.method);
    let list_key = kind.list_key();
    if kind == Route::Discover || list_key.is_some() {
        let caps = layout.capabilities(route).await;
        let decoded: Option<Map<String, Value>> = r
            .params
            .as_deref()
            .and_then(|p| serde_json::from_str(p.get()).ok());
        if let Err(e) =
            mcp_headers::check_exchange_headers(&supported, &caps, &r, decoded.as_ref(), headers)
        {
            return Some(Message::Error(ErrorResponse::new(Some(r.id), e)));
        }
        if kind == Route::Discover {
            let info: Implementation = serde_json::from_value(json!({
                "name": "switchboard-gateway",
                "version": env!("CARGO_PKG_VERSION"),
            }))
            .expect("a valid Implementation");
            let mut result = DiscoverResult::new(
                supported
                    .wire_strings()
                    .into_iter()
                    .map(str::to_owned)
                    .collect(),
                caps,
                60_000,
                CacheScope::Public,
                Some(&info),
            );
            result.instructions = layout.instructions(route);
            return Some(match Response::new(r.id.clone(), &result) {
                Ok(resp) => Message::Response(resp),
                Err(e) => Error::Internal(e.to_string()).answer(r.id),
            });
        }
        let key = list_key.expect("checked");
        let answer = super::session::list(gw, layout, route, key, r).await;
        return Some(complete(answer));
    }
    if kind == Route::Listen {
        super::listen::serve(gw, layout, route, tx, rx, r).await;
        return None;
    }
    // Not methods of 2026-07-28 (its changes come by subscriptions/listen).
    if matches!(
        kind,
        Route::SetLevel | Route::Initialize | Route::Subscribe(_)
    ) {
        return Some(Error::Unsupported(format!("method not found: {}", r.method)).answer(r.id));
    }
    let target = match resolve_listed(layout, route, kind, &r).await {
        Ok(t) => t,
        Err(why) => return Some(why.answer(r.id)),
    };
    let member = &target.member;
    // Down (restarting after a backoff): fail fast, naming it.
    if let crate::upstream::Status::Down(why) = member.upstream().status() {
        let why = Error::Upstream(format!("the upstream server {}: {why}", member.name));
        return Some(why.answer(target.request.id));
    }
    // The upstream's exchange checks Mcp-Name against the body: both now name
    // the upstream's own entry, when the client's header named the served one
    // (else it is left as sent, and refused there as a mismatch: -32020).
    let mut headers = headers.clone();
    let served = crate::policy::params_name(r.params.as_deref());
    let matches = headers
        .get("mcp-name")
        .and_then(|h| h.to_str().ok())
        .is_some_and(|h| Some(h) == served.as_deref());
    if let (Some(name), Route::Use(Kind::Tool | Kind::Prompt), true) = (&target.name, kind, matches)
    {
        if let Ok(v) = HeaderValue::from_str(name) {
            headers.insert("mcp-name", v);
        }
    }
    crate::downstream::exchange::handle(&member.core, tx, rx, target.request, &headers).await
}

/// An upstream's answer as the gateway's own: a `serverInfo` in the
/// result's `_meta` (2026-07-28 servers may name themselves on each result)
/// names the gateway, whom the client talks to. Untouched (not parsed) when
/// it has none.
fn as_gateway(answer: Message) -> Message {
    let Message::Response(mut r) = answer else {
        return answer;
    };
    if !r.result.get().contains(meta::SERVER_INFO) {
        return Message::Response(r);
    }
    let Ok(mut result) = RawObject::parse(r.result.get()) else {
        return Message::Response(r);
    };
    if let Some(mut m) = result.get_object("_meta") {
        if m.get(meta::SERVER_INFO).is_some() {
            let ours =
                json!({ "name": "switchboard-gateway", "version": env!("CARGO_PKG_VERSION") });
            if let Ok(v) = serde_json::value::to_raw_value(&ours) {
                m.insert(meta::SERVER_INFO, v);
                result.insert("_meta", m.to_raw());
                r.result = result.to_raw();
            }
        }
    }
    Message::Response(r)
}

/// A gateway-made result as 2026-07-28 has it: `resultType: "complete"`.
fn complete(answer: Message) -> Message {
    match answer {
        Message::Response(r) => {
            let mut v: Map<String, Value> =
                serde_json::from_str(r.result.get()).unwrap_or_default();
            v.insert("resultType".into(), json!("complete"));
            // Required on 2026-07-28 list results; a route's lists change
            // with its upstreams, and may differ by caller: not cached.
            v.insert("ttlMs".into(), json!(0));
            v.insert("cacheScope".into(), json!("private"));
            match Response::new(r.id.clone(), &v) {
                Ok(resp) => Message::Response(resp),
                Err(e) => Error::Internal(e.to_string()).answer(r.id),
            }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::raw;
    use switchboard_protocol::jsonrpc::Id;

    /// An upstream's `serverInfo` in a result's `_meta` is replaced by the
    /// gateway's, the rest kept as written; a result without one is untouched.
    #[test]
    fn an_upstreams_server_info_becomes_the_gateways() {
        let with = raw(
            r#"{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"},"x":1e400}}"#,
        );
        let Message::Response(r) = as_gateway(Message::Response(Response {
            id: Id::from(1u64),
            result: with,
        })) else {
            panic!("a response")
        };
        let text = r.result.get();
        assert!(text.contains(r#""name":"switchboard-gateway""#), "{text}");
        assert!(!text.contains(r#""up""#), "{text}");
        assert!(
            text.contains("1e400"),
            "other members kept as written: {text}"
        );
        let without =
            r#"{"content":[{"type":"text","text":"io.modelcontextprotocol/serverInfo"}]}"#;
        let Message::Response(r) = as_gateway(Message::Response(Response {
            id: Id::from(2u64),
            result: raw(without),
        })) else {
            panic!("a response")
        };
        assert_eq!(r.result.get(), without);
    }
}
