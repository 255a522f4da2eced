//! Change streams, both ways, for the gateway:
//!
//! - upstream: a 2026-07-28 upstream sends list changes and resource updates
//!   only on a `subscriptions/listen` stream, so the gateway keeps one open
//!   on each such upstream while it is ready ([`upstream_listen`]), asking
//!   for every list change its capabilities offer and the resources the
//!   gateway's subscribers hold there ([`Subscriptions`]: a 2026-07-28
//!   upstream has no `resources/subscribe`); what comes is handled as a
//!   legacy upstream's own notifications are (re-listed, relayed);
//! - downstream: a 2026-07-28 client's `subscriptions/listen` on a route
//!   ([`serve`]): acknowledged with what the route can honour, then the
//!   route's changes tagged with the listen's id, until the client leaves.
//!
//! This module must not know how upstreams are reached or listed.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::{json, Map, Value};
use switchboard_protocol::jsonrpc::{Id, Message, Notification, Request};
use switchboard_protocol::types::{self as t, meta};
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::{CloseReason, Inbound, Receiver, Sender};
use tokio::sync::{broadcast, watch};
use tracing::{debug, warn};

use super::{GatewayNotice, Layout, ListKind, Member, RouteView, Shared};
use crate::catalog::pin::Kind;
use crate::classify::Notice;
use crate::upstream::{CallEvent, Status, Step};

/// The resources gateway subscribers hold on one 2026-07-28 upstream: URI →
/// how many hold it. A change of the set re-opens the upstream's listen.
#[derive(Default)]
pub(crate) struct Subscriptions {
    counts: Mutex<HashMap<String, usize>>,
    /// Bumped at each change of the set of URIs.
    changed: watch::Sender<u64>,
    /// The last generation of `changed` the upstream acknowledged on a
    /// listen (`notifications/subscriptions/acknowledged`).
    acked: watch::Sender<u64>,
}

impl Subscriptions {
    /// One subscriber's subscribe (`true`) or unsubscribe of `uri`; `mine`:
    /// whether it holds one already. The listen is re-opened when the set of
    /// URIs changed.
    pub(crate) fn update(&self, uri: &str, subscribe: bool, mine: bool) -> u64 {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let before = counts.len();
        match (subscribe, mine) {
            (true, false) => *counts.entry(uri.to_owned()).or_default() += 1,
            (false, true) => {
                if let Some(n) = counts.get_mut(uri) {
                    *n -= 1;
                    if *n == 0 {
                        counts.remove(uri);
                    }
                }
            }
            _ => {}
        }
        if counts.len() != before {
            self.changed.send_modify(|g| *g += 1);
        }
        *self.changed.borrow()
    }

    /// Waits (up to `wait`) until the upstream acknowledged a listen asking
    /// for the URIs of `generation` or later; whether it did.
    pub(crate) async fn acknowledged(&self, generation: u64, wait: Duration) -> bool {
        let mut acked = self.acked.subscribe();
        tokio::time::timeout(wait, acked.wait_for(|g| *g >= generation))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    fn uris(&self) -> Vec<String> {
        let counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        counts.keys().cloned().collect()
    }
}

/// How long a failed listen waits before it is opened again: 1 s.
const REOPEN_AFTER: Duration = Duration::from_secs(1);

/// Keeps a listen stream open on member `index` while it is ready and speaks
/// 2026-07-28.
pub(crate) async fn upstream_listen(shared: Weak<Shared>, member: Weak<Member>) {
    let (mut status, mut changed) = {
        let Some(m) = member.upgrade() else { return };
        (
            m.upstream().watch_status(),
            m.subscriptions.changed.subscribe(),
        )
    };
    loop {
        let info = match &*status.borrow_and_update() {
            Status::Ready(info) if info.modern => Some(info.clone()),
            _ => None,
        };
        let Some(info) = info else {
            if status.changed().await.is_err() {
                return;
            }
            continue;
        };
        let (up, request, generation) = {
            let Some(m) = member.upgrade() else { return };
            changed.borrow_and_update();
            let caps = &info.result.capabilities;
            let mut asked = Map::new();
            if caps
                .tools
                .as_ref()
                .is_some_and(|c| c.list_changed == Some(true))
            {
                asked.insert("toolsListChanged".into(), json!(true));
            }
            if caps
                .prompts
                .as_ref()
                .is_some_and(|c| c.list_changed == Some(true))
            {
                asked.insert("promptsListChanged".into(), json!(true));
            }
            if let Some(r) = &caps.resources {
                if r.list_changed == Some(true) {
                    asked.insert("resourcesListChanged".into(), json!(true));
                }
                let uris = m.subscriptions.uris();
                if r.subscribe == Some(true) && !uris.is_empty() {
                    asked.insert("resourceSubscriptions".into(), json!(uris));
                }
            }
            if asked.is_empty() {
                // Nothing to listen for yet: wait for a restart (new
                // capabilities) or a first subscription.
                let generation = *changed.borrow();
                m.subscriptions.acked.send_replace(generation);
                drop(m);
                tokio::select! {
                    s = status.changed() => if s.is_err() { return },
                    c = changed.changed() => if c.is_err() { return },
                }
                continue;
            }
            let params = json!({
                "_meta": {
                    meta::PROTOCOL_VERSION: ProtocolVersion::V2026_07_28.as_str(),
                    meta::CLIENT_CAPABILITIES: {},
                },
                "notifications": asked,
            });
            let Ok(request) = Request::new(Id::from(0u64), t::SUBSCRIPTIONS_LISTEN, &params) else {
                return;
            };
            (m.upstream().clone(), request, *changed.borrow_and_update())
        };
        let mut call = match up.call(request, crate::upstream::BRIDGE_OWNER).await {
            Ok(c) => c,
            Err(why) => {
                debug!(%why, "could not open a listen on the upstream");
                tokio::time::sleep(REOPEN_AFTER).await;
                continue;
            }
        };
        loop {
            tokio::select! {
                step = call.next() => match step {
                    Step::Event(CallEvent::Notification(n)) => {
                        let (Some(s), Some(m)) = (shared.upgrade(), member.upgrade()) else { return };
                        if Notice::of(&n.method) == Notice::Acknowledged {
                            m.subscriptions.acked.send_replace(generation);
                        }
                        on_upstream_notification(&s, &m, n).await;
                    }
                    Step::Event(CallEvent::Request(_)) => {}
                    Step::Done(_) | Step::Failed(_) => {
                        tokio::time::sleep(REOPEN_AFTER).await;
                        break;
                    }
                },
                c = changed.changed() => {
                    if c.is_err() {
                        return;
                    }
                    call.cancel("the gateway's subscriptions changed").await;
                    break;
                }
                s = status.changed() => {
                    if s.is_err() {
                        return;
                    }
                    call.cancel("the upstream restarted").await;
                    break;
                }
            }
        }
    }
}

/// A change an upstream announced (on its own, or on the gateway's listen):
/// lists re-fetched, resource updates relayed.
pub(crate) async fn on_upstream_notification(shared: &Arc<Shared>, m: &Member, n: Notification) {
    match Notice::of(&n.method) {
        Notice::ListChanged(Some(Kind::Tool)) => super::relist(shared, m, &[ListKind::Tools]).await,
        Notice::ListChanged(Some(_)) => super::relist(shared, m, &[ListKind::Prompts]).await,
        Notice::ListChanged(None) => super::relist(shared, m, &[ListKind::Resources]).await,
        Notice::ResourceUpdated => {
            // Without the upstream listen's id: each subscriber tags its own.
            let mut params: Map<String, Value> = n
                .params
                .as_ref()
                .and_then(|p| serde_json::from_str(p.get()).ok())
                .unwrap_or_default();
            if let Some(Value::Object(m)) = params.get_mut("_meta") {
                m.remove(meta::SUBSCRIPTION_ID);
                if m.is_empty() {
                    params.remove("_meta");
                }
            }
            let Ok(notification) = Notification::new(&n.method, &params) else {
                return;
            };
            let _ = shared.notices.send(GatewayNotice::ResourceUpdated {
                member: m.name.clone(),
                notification,
            });
        }
        _ => {}
    }
}

/// The URI of a `notifications/resources/updated`.
pub(crate) fn updated_uri(n: &Notification) -> Option<String> {
    n.params
        .as_ref()
        .and_then(|p| serde_json::from_str::<Map<String, Value>>(p.get()).ok())
        .and_then(|p| p.get("uri").and_then(Value::as_str).map(str::to_owned))
}

/// A 2026-07-28 client's `subscriptions/listen` on `route`, served until it
/// leaves (or the gateway stops: then its final result).
pub(crate) async fn serve(
    gw: &Arc<Shared>,
    layout: &Layout,
    route: &RouteView,
    tx: &Sender,
    rx: &mut Receiver,
    r: Request,
) {
    let mut notices = gw.notices.subscribe();
    let params: Map<String, Value> = r
        .params
        .as_ref()
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or_default();
    let asked = params
        .get("notifications")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let flag = |k: &str| asked.get(k).and_then(Value::as_bool).unwrap_or(false);
    let caps = layout.capabilities(route).await;
    let tools = flag("toolsListChanged");
    let prompts = flag("promptsListChanged") && caps.prompts.is_some();
    let resources = flag("resourcesListChanged") && caps.resources.is_some();
    // Each URI subscribed at the upstream that listed it.
    let mut held: Vec<(Arc<Member>, String)> = Vec::new();
    let merged = layout.merged();
    for uri in asked
        .get("resourceSubscriptions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        let Some(member) = merged.resource_owner(uri).filter(|&m| route.members[m]) else {
            continue;
        };
        let member = &layout.members[member];
        if super::session::subscribe_at(gw, member, uri, true, false)
            .await
            .is_ok()
        {
            held.push((member.clone(), uri.to_owned()));
        }
    }
    let uris: BTreeSet<&str> = held.iter().map(|(_, u)| u.as_str()).collect();
    let mut honoured = Map::new();
    if tools {
        honoured.insert("toolsListChanged".into(), json!(true));
    }
    if prompts {
        honoured.insert("promptsListChanged".into(), json!(true));
    }
    if resources {
        honoured.insert("resourcesListChanged".into(), json!(true));
    }
    if !uris.is_empty() {
        honoured.insert("resourceSubscriptions".into(), json!(uris));
    }
    let sub_id = serde_json::to_value(&r.id).unwrap_or(Value::Null);
    let tag = |method: &str, params: Option<&serde_json::value::RawValue>| {
        let mut p: Map<String, Value> = params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or_default();
        let m = p.entry("_meta").or_insert_with(|| json!({}));
        if let Value::Object(m) = m {
            m.insert(meta::SUBSCRIPTION_ID.to_owned(), sub_id.clone());
        }
        Notification::new(method, &p).ok()
    };
    let ack = json!({ "notifications": honoured });
    let ack = tag(
        t::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED,
        serde_json::value::to_raw_value(&ack).ok().as_deref(),
    );
    let mut open = true;
    if let Some(ack) = ack {
        open = tx
            .send_related(Message::Notification(ack), Some(r.id.clone()))
            .await
            .is_ok();
    }
    let _listening = gw.listens.enter();
    while open {
        tokio::select! {
            event = rx.recv() => match event {
                Some(Inbound::Closed { reason: CloseReason::SessionClosed }) => {
                    let _ = tx.send(crate::listen_final_result(&r.id)).await;
                    break;
                }
                None | Some(Inbound::Closed { .. }) => break,
                Some(_) => {}
            },
            notice = notices.recv() => {
                let out = match notice {
                    Ok(GatewayNotice::ListChanged { kind, member }) if route.serves(&member) => {
                        let wanted = match kind {
                            ListKind::Tools => tools,
                            ListKind::Prompts => prompts,
                            ListKind::Resources => resources,
                        };
                        if wanted { tag(kind.notification(), None) } else { None }
                    }
                    Ok(GatewayNotice::ResourceUpdated { member, notification }) => {
                        let mine = updated_uri(&notification)
                            .is_some_and(|u| held.iter().any(|(m, h)| m.name == member && *h == u));
                        if mine { tag(&notification.method, notification.params.as_deref()) } else { None }
                    }
                    // Lists may differ after a reload: all three.
                    Ok(GatewayNotice::Reloaded) => {
                        for kind in ListKind::ALL {
                            let wanted = match kind {
                                ListKind::Tools => tools,
                                ListKind::Prompts => prompts,
                                ListKind::Resources => resources,
                            };
                            if let (true, Some(n)) = (wanted, tag(kind.notification(), None)) {
                                open = tx.send_related(Message::Notification(n), Some(r.id.clone())).await.is_ok();
                            }
                        }
                        None
                    }
                    Ok(_) => None,
                    Err(broadcast::error::RecvError::Lagged(k)) => {
                        warn!(missed = k, "a listen stream missed changes");
                        None
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                };
                if let Some(n) = out {
                    open = tx.send_related(Message::Notification(n), Some(r.id.clone())).await.is_ok();
                }
            }
        }
    }
    for (member, uri) in held {
        let _ = super::session::subscribe_at(gw, &member, &uri, false, true).await;
    }
}
