//! The shared child's tools as far as the bridge must know them: their
//! `x-mcp-header` annotations, for the `Mcp-Param-*` checks of 2026-07-28
//! `tools/call` requests (MCP 2026-07-28 "Transports → Streamable HTTP →
//! Request headers"; REVISIONS.md §5.4), and their names, for the allowlist's
//! drift log; with a drift guard, the tools (and, for the bridge, the
//! prompts) as listed, for the guard to judge.
//!
//! ```text
//! ToolHeaders     tool name → (argument, header) pairs, from the child's tools/list
//!                 (every page), as `mcp_headers::tool_header_params` reads an
//!                 inputSchema; tagged with the child's start (restart count)
//! follow          fetches it when the shared child is ready, again after each
//!                 restart and on each notifications/tools/list_changed; logs drift;
//!                 with a guard, has it judged; for the bridge the prompts too
//!                 (on each notifications/prompts/list_changed), and marks the
//!                 changes each list covered judged (module `catalog::changes`)
//! rejudge         the guard's re-list of one list (tools or prompts) of any
//!                 upstream into any verdicts: the follower's prompts, and a
//!                 session's own child's lists (module `downstream::session`)
//! ToolHeaders::of_tool   what a tools/call is checked against (see below)
//! ```
//!
//! **Until the list is known** a 2026-07-28 `tools/call` waits for it: one that
//! finds no list of the running child (not fetched yet, the child restarted
//! since, or past the `ttlMs` a 2026-07-28 child gave, at least
//! [`MIN_REFETCH`]) fetches it before its header checks, and one that comes
//! while a fetch is in progress waits for that fetch. A call is never checked
//! against the list of an earlier child, nor let through unchecked because the
//! list is not known yet. A call naming a tool the list lacks fetches it once
//! more (at most once per [`MIN_REFETCH`]): a child without `listChanged` may
//! have added the tool since; still missing, the tool is unknown and has no
//! headers to check (the child answers the call with its own error, as the
//! library's server does for an unknown tool).
//!
//! A child without the `tools` capability, or one that answers `tools/list` with
//! an error, declares no annotations: there is nothing to mirror (its clients
//! cannot learn any either). A fetch that fails otherwise (the child died, or
//! answered nothing within the request timeout) fails the call with -32603: the
//! headers cannot be checked, so the call is not forwarded.
//!
//! A fetch is a call of the bridge's own on the shared child
//! ([`BRIDGE_OWNER`](crate::upstream::BRIDGE_OWNER)): it never owns a
//! server→client request or a log of the child's, nor competes for one with a
//! client's call in flight (a fetch at start-up would otherwise make the first
//! client's sampling request ambiguous, and refused).
//!
//! This module must not know the header rules (the transport's `mcp_headers`).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use switchboard_protocol::jsonrpc::{Id, Message, Request};
use switchboard_protocol::types::meta;
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::http::mcp_headers::tool_header_params;
use tokio::sync::{broadcast, watch};
use tracing::{debug, info, warn};

use crate::catalog::changes::Judged;
use crate::catalog::guard::{DriftGuard, Scope};
use crate::catalog::pin::Kind;
use crate::classify::{ListKind, Notice};
use crate::upstream::{Status, Upstream};
use crate::Core;

/// The shortest time a fetched list is used before a call may fetch it again
/// (for a tool it lacks, or past a 2026-07-28 child's `ttlMs`): 1 s.
pub(crate) const MIN_REFETCH: Duration = Duration::from_secs(1);

/// The most `tools/list` pages followed: 1,000, as a gateway's lists.
const MAX_PAGES: usize = 1000;

/// (argument name, header name suffix) pairs of one tool.
pub(crate) type HeaderParams = Vec<(String, String)>;

/// One fetched list.
struct Known {
    /// [`Upstream::restarts`] when it was fetched: the child it belongs to.
    generation: u64,
    fetched: Instant,
    /// Past this, fetch again (a 2026-07-28 child's `ttlMs`, at least
    /// [`MIN_REFETCH`]); `None`: until a list change or a restart.
    expires: Option<Instant>,
    tools: HashMap<String, HeaderParams>,
}

/// What a fetch learnt, beside the list kept.
pub(crate) enum Listed {
    /// Every tool the child reports: the names, and the tools as listed (for
    /// the drift guard).
    Tools {
        names: BTreeSet<String>,
        tools: Vec<Value>,
    },
    /// The child has no tools capability or refused `tools/list` (why).
    Refused(String),
}

/// The shared child's tools' `x-mcp-header` annotations (see the module
/// documentation).
#[derive(Default)]
pub(crate) struct ToolHeaders {
    /// Held while fetching: one fetch at a time, and callers wait for it.
    known: tokio::sync::Mutex<Option<Known>>,
}

impl ToolHeaders {
    /// The (argument, header) pairs of tool `name` on `up` (the shared child),
    /// fetching the list first when it is not known for the running child (see
    /// the module documentation). Empty for a tool without annotations or an
    /// unknown one. Errors (for a -32603): the list could not be fetched.
    pub(crate) async fn of_tool(
        &self,
        up: &Upstream,
        name: &str,
        wait: Duration,
    ) -> Result<HeaderParams, String> {
        let mut known = self.known.lock().await;
        let generation = up.restarts();
        let now = Instant::now();
        let current = known
            .as_ref()
            .filter(|k| k.generation == generation && k.expires.is_none_or(|e| now < e));
        let usable = current
            .is_some_and(|k| k.tools.contains_key(name) || k.fetched.elapsed() < MIN_REFETCH);
        if !usable {
            *known = Some(fetch(up, wait).await?.0);
        }
        let k = known.as_ref().expect("fetched above when not usable");
        Ok(k.tools.get(name).cloned().unwrap_or_default())
    }

    /// Fetches the list again now (a list change, a restart); what it learnt.
    /// On failure the list is forgotten, so that the next call fetches it.
    pub(crate) async fn refresh(&self, up: &Upstream, wait: Duration) -> Result<Listed, String> {
        let mut known = self.known.lock().await;
        match fetch(up, wait).await {
            Ok((k, listed)) => {
                *known = Some(k);
                Ok(listed)
            }
            Err(why) => {
                *known = None;
                Err(why)
            }
        }
    }
}

/// Lists every tool of `up` (following `nextCursor`, at most [`MAX_PAGES`]
/// pages), each page within `wait`.
async fn fetch(up: &Upstream, wait: Duration) -> Result<(Known, Listed), String> {
    let generation = up.restarts();
    let info = up.ready(wait).await.map_err(|e| e.to_string())?;
    let mut known = Known {
        generation,
        fetched: Instant::now(),
        expires: None,
        tools: HashMap::new(),
    };
    if info.result.capabilities.tools.is_none() {
        let why = "the upstream server has no tools capability".to_owned();
        return Ok((known, Listed::Refused(why)));
    }
    let mut names = BTreeSet::new();
    let mut listed = Vec::new();
    let mut ttl: Option<u64> = None;
    let mut cursor: Option<String> = None;
    for page_number in 0.. {
        if page_number == MAX_PAGES {
            warn!("more than {MAX_PAGES} pages of tools/list: the rest left out");
            break;
        }
        let params = list_params(cursor.as_deref(), info.modern);
        let request = Request::new(
            Id::from(0u64),
            switchboard_protocol::types::TOOLS_LIST,
            &params,
        )
        .map_err(|e| e.to_string())?;
        let page = match page(up, request, wait).await? {
            Ok(page) => page,
            Err(refused) => {
                debug!(%refused, "the upstream server refused tools/list: no x-mcp-header to check");
                return Ok((known, Listed::Refused(refused)));
            }
        };
        if let Some(t) = page.get("ttlMs").and_then(Value::as_u64) {
            ttl = Some(ttl.map_or(t, |old| old.min(t)));
        }
        for tool in page
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            let pairs = tool
                .get("inputSchema")
                .and_then(Value::as_object)
                .map(tool_header_params)
                .unwrap_or_default();
            names.insert(name.to_owned());
            known.tools.insert(name.to_owned(), pairs);
            listed.push(tool.clone());
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(c) if !c.is_empty() => cursor = Some(c.to_owned()),
            _ => break,
        }
    }
    if info.modern {
        let ttl = Duration::from_millis(ttl.unwrap_or(0)).max(MIN_REFETCH);
        known.expires = Some(known.fetched + ttl);
        // What a tools/call to it over Streamable HTTP carries as Mcp-Param-*.
        up.set_tool_headers(
            known
                .tools
                .iter()
                .filter(|(_, pairs)| !pairs.is_empty())
                .map(|(name, pairs)| (name.clone(), pairs.clone()))
                .collect(),
        );
    }
    Ok((
        known,
        Listed::Tools {
            names,
            tools: listed,
        },
    ))
}

/// One list call (`tools/list`, `prompts/list`): Ok(Ok(result)), Ok(Err(the
/// child's error message)), or Err(the call failed: child gone, nothing within
/// `wait`).
async fn page(
    up: &Upstream,
    request: Request,
    wait: Duration,
) -> Result<Result<Map<String, Value>, String>, String> {
    let method = request.method.clone();
    // The bridge's own call: it never owns or contests a child's request.
    let call = up
        .call(request, crate::upstream::BRIDGE_OWNER)
        .await
        .map_err(|e| e.to_string())?;
    match call.answer_within(wait).await {
        Ok(Ok(Message::Response(r))) => serde_json::from_str(r.result.get())
            .map(Ok)
            .map_err(|e| format!("the upstream server's {method} result is not an object: {e}")),
        Ok(Ok(Message::Error(e))) => Ok(Err(e.error.message)),
        Ok(Ok(_)) => Err(format!("an unexpected answer to {method}")),
        Ok(Err(why)) => Err(why.to_string()),
        Err(()) => Err(format!(
            "the upstream server did not answer {method} within {wait:?}"
        )),
    }
}

/// Keeps [`Core::tools`] current: fetches the shared child's tool list when it
/// is ready, after each restart and on each `notifications/tools/list_changed`
/// (a lagging receiver fetches too: it may have missed one); with an allowlist,
/// logs the allowed names the child does not report (drift) when they differ
/// from the last ones logged (a child may say its list changed when it did not,
/// many times over). With a drift guard each list is judged, and so are the
/// child's prompts, listed at the same times and on each
/// `notifications/prompts/list_changed`; each list judged lets the calls
/// held for the changes it covers go on (module `catalog::changes`). The
/// bridge's alone: a gateway lists its upstreams itself.
pub(crate) async fn follow(
    core: Weak<Core>,
    mut status: watch::Receiver<Status>,
    mut changes: broadcast::Receiver<switchboard_protocol::jsonrpc::Notification>,
) {
    let mut listed: Option<u64> = None;
    let mut logged: Option<Vec<String>> = None;
    let mut retry = crate::catalog::changes::Retry::new();
    let mut reloads = match core.upgrade() {
        Some(c) => c.guard.as_ref().map(|g| g.reloads()),
        None => return,
    };
    loop {
        let ready = matches!(&*status.borrow_and_update(), Status::Ready(_));
        let Some(strong) = core.upgrade() else { return };
        let generation = strong.shared.restarts();
        if ready && listed != Some(generation) {
            listed = Some(generation);
            refresh(&strong, &mut logged).await;
            judge_prompts(&strong).await;
        }
        // A re-list for the guard that failed is tried again while its
        // changes are not judged.
        let unjudged = match &strong.guard {
            Some(_) if ready => strong
                .shared_judging()
                .unjudged_lists(&[ListKind::Tools, ListKind::Prompts]),
            _ => Vec::new(),
        };
        let wait = retry.next(!unjudged.is_empty());
        drop(strong);
        tokio::select! {
            changed = status.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            () = tokio::time::sleep(wait.unwrap_or_default()), if wait.is_some() => {
                let Some(strong) = core.upgrade() else { return };
                for list in unjudged {
                    match list {
                        ListKind::Tools => refresh(&strong, &mut logged).await,
                        _ => judge_prompts(&strong).await,
                    }
                }
            }
            n = changes.recv() => {
                let lists: &[ListKind] = match n {
                    Ok(n) => match Notice::of(&n.method) {
                        Notice::ListChanged(Some(Kind::Tool)) => &[ListKind::Tools],
                        Notice::ListChanged(Some(Kind::Prompt)) => &[ListKind::Prompts],
                        _ => continue,
                    },
                    Err(broadcast::error::RecvError::Lagged(_)) => &[ListKind::Tools, ListKind::Prompts],
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                let Some(strong) = core.upgrade() else { return };
                for list in lists {
                    if let Some(m) = crate::metrics::get() {
                        m.relisted(strong.shared.label(), list.plural());
                    }
                    match list {
                        ListKind::Tools => refresh(&strong, &mut logged).await,
                        _ => judge_prompts(&strong).await,
                    }
                }
            }
            // A reloaded lock: the child listed whole again, so that what
            // it now lists is judged by the new lock.
            () = reloaded(&mut reloads) => {
                let Some(strong) = core.upgrade() else { return };
                if matches!(&*status.borrow(), Status::Ready(_)) {
                    refresh(&strong, &mut logged).await;
                    judge_prompts(&strong).await;
                    announce_reload(&strong).await;
                }
            }
        }
    }
}

/// After a reload listed again: the sessions told of each list the guard
/// now serves differently (`list_changed`, for the kinds the child declared
/// it for: a client expects none otherwise); of none when nothing changed.
async fn announce_reload(core: &Arc<Core>) {
    let Some(guard) = &core.guard else { return };
    let kinds = guard.take_unannounced();
    if kinds.is_empty() {
        return;
    }
    let Ok(info) = core.shared.ready(Duration::ZERO).await else {
        return;
    };
    let caps = &info.result.capabilities;
    for kind in kinds {
        let (declared, method) = match kind {
            Kind::Tool => (
                caps.tools.as_ref().and_then(|c| c.list_changed),
                "notifications/tools/list_changed",
            ),
            Kind::Prompt => (
                caps.prompts.as_ref().and_then(|c| c.list_changed),
                "notifications/prompts/list_changed",
            ),
            Kind::ResourceTemplate => (
                caps.resources.as_ref().and_then(|c| c.list_changed),
                "notifications/resources/list_changed",
            ),
            Kind::Instructions => continue,
        };
        if declared == Some(true) {
            info!(method, "the lock changed what is served: sessions told");
            core.shared
                .announce(switchboard_protocol::jsonrpc::Notification {
                    method: method.to_owned(),
                    params: None,
                });
        }
    }
}

/// The next [`DriftGuard::reload`] seen by `reloads`; never without a guard
/// (or once its guard is gone).
async fn reloaded(reloads: &mut Option<tokio::sync::watch::Receiver<u64>>) {
    if let Some(r) = reloads {
        if r.changed().await.is_ok() {
            return;
        }
    }
    *reloads = None;
    std::future::pending::<()>().await;
}

/// One refresh of [`Core::tools`], with the drift log: written when the missing
/// names differ from `logged`, the ones last written about (then updated).
/// The list, judged by the drift guard (when there is one), lets the calls
/// held for the tool list changes it covers go on; a fetch that failed
/// covers none.
async fn refresh(core: &Arc<Core>, logged: &mut Option<Vec<String>>) {
    // The changes this list covers: those announced before it is asked for.
    let covered = core.shared.list_changes(ListKind::Tools);
    let outcome = core.tools.refresh(&core.shared, core.request_timeout).await;
    if let (Some(guard), Ok(Listed::Tools { tools, .. })) = (&core.guard, &outcome) {
        guard.observe(Kind::Tool, tools);
    }
    // A list refused covers nothing, like one that failed: the calls held
    // for its changes wait for a retry (`follow`).
    if matches!(outcome, Ok(Listed::Tools { .. })) {
        core.judged.judged(ListKind::Tools, covered);
    }
    match outcome {
        Ok(Listed::Tools { names, .. }) if core.allow.is_restricted() => {
            let missing = core.allow.drift(&names);
            let now: Vec<String> = missing.iter().map(|n| (*n).to_owned()).collect();
            if logged.as_ref() == Some(&now) {
                return;
            }
            *logged = Some(now);
            if missing.is_empty() {
                info!(
                    tools = names.len(),
                    "every allowed tool is reported by the upstream server"
                );
            } else {
                warn!(
                    ?missing,
                    "drift: allowed tools the upstream server does not report"
                );
            }
        }
        Ok(Listed::Refused(why)) if core.allow.is_restricted() || core.guard.is_some() => {
            warn!(
                why,
                "the upstream server refused tools/list: its tools are not checked against the allowlist or the lock until it lists them"
            )
        }
        Ok(_) => {}
        Err(why) => warn!(
            why,
            "could not list the upstream's tools (x-mcp-header annotations, drift check)"
        ),
    }
}

/// With a drift guard: lists the shared child's prompts (every page)
/// and has the guard judge them, so that a `prompts/get` is judged on a list
/// that saw every change the child announced; then lets the calls held for
/// those changes go on ([`rejudge`]). Nothing at all without a guard.
async fn judge_prompts(core: &Arc<Core>) {
    let Some(guard) = core.guard.as_ref() else {
        return;
    };
    let (up, wait) = (&core.shared, core.request_timeout);
    let judged = &core.judged;
    if let Err(why) = rejudge(guard, Scope::Shared, up, ListKind::Prompts, judged, wait).await {
        warn!(
            why,
            "could not list the upstream's prompts for the drift guard"
        );
    }
}

/// A session's own child's judgement (a child per session, with a drift
/// guard): the verdicts on that child's lists, and how many of its announced
/// list changes its re-lister ([`follow_own`]) has judged, what the
/// session's uses of an entry wait for. Dropped with the session (the
/// bridge's, or the gateway's, one per upstream).
#[derive(Debug)]
pub(crate) struct OwnJudgement {
    pub(crate) verdicts: crate::catalog::guard::Verdicts,
    pub(crate) judged: Judged,
}

impl Default for OwnJudgement {
    /// Not judged until the re-lister's first list ([`Judged::before_first_list`]).
    fn default() -> Self {
        OwnJudgement {
            verdicts: Default::default(),
            judged: Judged::before_first_list(),
        }
    }
}

impl OwnJudgement {
    /// Its judging of changes `up` (its child) announces.
    pub(crate) fn judging<'a>(&'a self, up: &'a Upstream) -> crate::Judging<'a> {
        crate::Judging {
            upstream: up,
            judged: &self.judged,
        }
    }
}

/// With a drift guard, the re-lister of a session's own child (the shared
/// child's is [`follow`]): lists it whole at its start, and whenever the
/// child has announced changes of its tools or prompts that are not judged
/// yet (`notifications/{tools,prompts}/list_changed`, counted by
/// [`Upstream::list_changes`]), as calls of the bridge's own (it never owns
/// a request of the child's), and has `guard` judge them into `own`'s
/// verdicts, which lets the session's uses held for them go on. The first
/// list is what a session's first uses wait for: a client that reads one
/// page cannot tell that another lists the same name again. A re-list that
/// failed is tried again (`Retry`); a reloaded lock lists both again.
/// `wait`: for each page. Ends with the
/// child (stopped with its session, or dead) or `own` (the session).
pub(crate) async fn follow_own(
    own: Weak<OwnJudgement>,
    guard: Arc<DriftGuard>,
    wait: Duration,
    up: Upstream,
    mut status: watch::Receiver<Status>,
    mut changes: broadcast::Receiver<switchboard_protocol::jsonrpc::Notification>,
) {
    let lists = [ListKind::Tools, ListKind::Prompts];
    let mut retry = crate::catalog::changes::Retry::new();
    let mut reloads = Some(guard.reloads());
    // After a reload: both lists, judged or not.
    let mut every = false;
    loop {
        let unjudged = {
            let Some(own) = own.upgrade() else { return };
            let due = match std::mem::take(&mut every) {
                true => lists.to_vec(),
                false => own.judging(&up).unjudged_lists(&lists),
            };
            for list in due {
                let scope = Scope::Own(&own.verdicts);
                if let Err(why) = rejudge(&guard, scope, &up, list, &own.judged, wait).await {
                    warn!(
                        why,
                        ?list,
                        "could not list the session's own child for the drift guard"
                    );
                }
            }
            // Whatever woke it, the counts say what is left to judge (a
            // lagging receiver included).
            !own.judging(&up).unjudged_lists(&lists).is_empty()
        };
        // The child's start, which the attempt waited for, wakes no second
        // attempt at once: a failed one is retried after the pause.
        status.borrow_and_update();
        let pause = retry.next(unjudged);
        tokio::select! {
            () = tokio::time::sleep(pause.unwrap_or_default()), if pause.is_some() => {}
            changed = status.changed() => {
                let over = matches!(&*status.borrow(), Status::Stopped | Status::Down(_));
                if changed.is_err() || over {
                    return;
                }
            }
            n = changes.recv() => {
                if matches!(n, Err(broadcast::error::RecvError::Closed)) {
                    return;
                }
            }
            () = reloaded(&mut reloads) => every = true,
        }
    }
}

/// The drift guard's re-list of `list` (tools or prompts) on `up`: lists
/// every entry (every page, each within `wait`, as a call of the bridge's
/// own) and has `guard` judge them into `scope`'s verdicts, then marks the
/// changes of `list` the upstream announced before the first page was asked
/// for judged in `judged`, letting the calls held for them go on (module
/// `catalog::changes`). An upstream without the list's capability lists
/// nothing: every approved entry is gone. A list that failed (the upstream
/// gone, too slow, or refusing it) covers none, to be tried again: why, for
/// the log.
pub(crate) async fn rejudge(
    guard: &DriftGuard,
    scope: Scope<'_>,
    up: &Upstream,
    list: ListKind,
    judged: &Judged,
    wait: Duration,
) -> Result<(), String> {
    let kind = match list {
        ListKind::Tools => Kind::Tool,
        ListKind::Prompts => Kind::Prompt,
        ListKind::Resources => Kind::ResourceTemplate,
    };
    // The changes this list covers: those announced before it is asked for.
    let covered = up.list_changes(list);
    // Not offered (no such capability): every approved entry is gone.
    let entries = list_entries(up, kind, wait).await?.unwrap_or_default();
    guard.observe_in(scope, kind, &entries);
    judged.judged(list, covered);
    Ok(())
}

/// Every tool or prompt (`kind`) of `up` (following `nextCursor`, at most
/// [`MAX_PAGES`] pages), each page within `wait`; `None`: it has no such
/// capability. Errors: a page not answered in time, or refused. (Resource
/// templates are not re-listed: nothing that uses one is held.)
async fn list_entries(
    up: &Upstream,
    kind: Kind,
    wait: Duration,
) -> Result<Option<Vec<Value>>, String> {
    let info = up.ready(wait).await.map_err(|e| e.to_string())?;
    let caps = &info.result.capabilities;
    let (method, member, capable) = match kind {
        Kind::Prompt => (
            switchboard_protocol::types::PROMPTS_LIST,
            "prompts",
            caps.prompts.is_some(),
        ),
        Kind::Tool => (
            switchboard_protocol::types::TOOLS_LIST,
            "tools",
            caps.tools.is_some(),
        ),
        _ => return Ok(None),
    };
    if !capable {
        return Ok(None);
    }
    let mut entries = Vec::new();
    let mut cursor: Option<String> = None;
    for page_number in 0.. {
        if page_number == MAX_PAGES {
            warn!("more than {MAX_PAGES} pages of {method}: the rest left out");
            break;
        }
        let params = list_params(cursor.as_deref(), info.modern);
        let request = Request::new(Id::from(0u64), method, &params).map_err(|e| e.to_string())?;
        let page = match page(up, request, wait).await? {
            Ok(page) => page,
            Err(refused) => return Err(format!("the upstream server refused {method}: {refused}")),
        };
        if let Some(Value::Array(items)) = page.get(member) {
            entries.extend(items.iter().cloned());
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(c) if !c.is_empty() => cursor = Some(c.to_owned()),
            _ => break,
        }
    }
    Ok(Some(entries))
}

/// The params of one list page: its `cursor`, and for a 2026-07-28 upstream
/// the `_meta` every request of that revision carries.
fn list_params(cursor: Option<&str>, modern: bool) -> Value {
    let mut params = match cursor {
        Some(c) => json!({ "cursor": c }),
        None => json!({}),
    };
    if modern {
        params["_meta"] = json!({
            meta::PROTOCOL_VERSION: ProtocolVersion::V2026_07_28.as_str(),
            meta::CLIENT_CAPABILITIES: crate::relayed_capabilities(),
        });
    }
    params
}
