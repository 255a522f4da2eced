//! The routing table of one upstream: our request ids → the calls in flight
//! (owner, order, progress token), the upstream's own server→client requests
//! handed on and not yet answered, and calls that ended lately without the
//! upstream's answer. Pure: no locks, no channels, no clock (`now` is passed
//! in), so it is table-tested without processes; what to send where is the
//! caller's. `P` is what the caller keeps per call (its channels).

use std::time::{Duration, Instant};

// foldhash, not SipHash: these tables are read on every call (ids minted here,
// so not chosen by anyone downstream).
use foldhash::HashMap;
use serde_json::value::RawValue;
use switchboard_protocol::jsonrpc::Id;

/// The owner of the gateway's own calls (list fetches, re-subscriptions): it
/// never owns or contests an upstream's request.
pub(crate) const GATEWAY_OWNER: u64 = 0;

/// How long a call that ended without the upstream's answer (cancelled by its
/// client, timed out, its session gone) still counts as its owner's when the
/// upstream's server→client requests and log messages are routed: the upstream
/// may not have read the cancellation yet and may still ask or log for that
/// call, and what it says then must not reach another owner's call. Short:
/// while it lasts, other owners' calls get no server→client requests or logs
/// either (as while two owners have calls in flight), and an upstream that
/// reads its cancellations at all reads them well within it.
pub(crate) const CANCELLED_GRACE: Duration = Duration::from_secs(5);

/// One call in flight.
#[derive(Debug)]
pub(crate) struct Entry<P> {
    /// The downstream session or exchange it belongs to.
    pub(crate) owner: u64,
    /// Its place in the order of calls (a later call has a higher one).
    seq: u64,
    /// The progress token we put upstream, and the caller's own (raw JSON).
    pub(crate) token: Option<(String, Box<RawValue>)>,
    pub(crate) payload: P,
}

/// One of the upstream's server→client requests handed on and not answered.
#[derive(Debug)]
struct Open {
    /// The upstream's own id of it.
    child: Id,
    /// The call it was routed to (our id); `None`: to the owning session.
    call: Option<u64>,
}

/// Where something the upstream sends on its own (a request, a log message)
/// goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// To this call (our id).
    Call(u64),
    /// Nothing is in flight: to the upstream's one owner, or (for a log) to
    /// every session.
    Idle,
    /// To nobody: which call it belongs to cannot be told (several owners have
    /// calls in flight, or one ended lately without an answer). Refused or
    /// dropped, never guessed.
    Unknown,
}

/// See the module's header.
#[derive(Debug)]
pub(crate) struct Router<P> {
    calls: HashMap<u64, Entry<P>>,
    tokens: HashMap<String, u64>,
    /// The upstream's open requests by its own id → the id they were handed on
    /// under (a key of `open`); for its `notifications/cancelled`.
    child_requests: HashMap<Id, u64>,
    /// Handed on under ids of ours (from the same counter as our request ids,
    /// so unique across restarts); emptied when the upstream dies, so an answer
    /// meant for a dead process never reaches its successor.
    open: HashMap<u64, Open>,
    /// Calls that ended without the upstream's answer: owner and until when
    /// they count ([`CANCELLED_GRACE`]).
    cancelled: HashMap<u64, (u64, Instant)>,
    seq: u64,
}

impl<P> Default for Router<P> {
    fn default() -> Self {
        Router {
            calls: HashMap::default(),
            tokens: HashMap::default(),
            child_requests: HashMap::default(),
            open: HashMap::default(),
            cancelled: HashMap::default(),
            seq: 0,
        }
    }
}

impl<P> Router<P> {
    /// Enters call `id` of `owner` (its progress token mapped as `token`).
    pub(crate) fn insert(
        &mut self,
        id: u64,
        owner: u64,
        token: Option<(String, Box<RawValue>)>,
        payload: P,
    ) {
        self.seq += 1;
        if let Some((ours, _)) = &token {
            self.tokens.insert(ours.clone(), id);
        }
        let entry = Entry {
            owner,
            seq: self.seq,
            token,
            payload,
        };
        self.calls.insert(id, entry);
    }

    /// The call `id`, while in flight.
    pub(crate) fn get(&self, id: u64) -> Option<&Entry<P>> {
        self.calls.get(&id)
    }

    /// Whether nothing is in flight.
    pub(crate) fn is_idle(&self) -> bool {
        self.calls.is_empty()
    }

    /// The call that progress token `token` (ours) belongs to.
    pub(crate) fn by_token(&self, token: &str) -> Option<u64> {
        self.tokens.get(token).copied()
    }

    /// Call `id` got the upstream's answer: it leaves the table (its open
    /// requests stay: the client may still answer them). `None` for a call
    /// not in flight (a cancelled one the upstream answered after all: it no
    /// longer counts as cancelled).
    pub(crate) fn complete(&mut self, id: u64) -> Option<Entry<P>> {
        match self.calls.remove(&id) {
            Some(entry) => {
                if let Some((ours, _)) = &entry.token {
                    self.tokens.remove(ours);
                }
                Some(entry)
            }
            None => {
                self.cancelled.remove(&id);
                None
            }
        }
    }

    /// Call `id` ends without the upstream's answer (cancelled, timed out, its
    /// owner gone) at `now`: it leaves the table and counts as cancelled for
    /// [`CANCELLED_GRACE`]. Returns the entry (if it was in flight) and the
    /// upstream's own ids of the requests it made for that call, which nobody
    /// will answer now: the caller answers them with an error.
    pub(crate) fn forget(&mut self, id: u64, now: Instant) -> (Option<Entry<P>>, Vec<Id>) {
        let mine: Vec<u64> = self
            .open
            .iter()
            .filter(|(_, open)| open.call == Some(id))
            .map(|(ours, _)| *ours)
            .collect();
        let owed = mine
            .into_iter()
            .filter_map(|ours| self.take_open(ours))
            .collect();
        let entry = self.calls.remove(&id);
        if let Some(entry) = &entry {
            if let Some((ours, _)) = &entry.token {
                self.tokens.remove(ours);
            }
            self.cancelled.retain(|_, (_, until)| *until > now);
            if entry.owner != GATEWAY_OWNER {
                self.cancelled
                    .insert(id, (entry.owner, now + CANCELLED_GRACE));
            }
        }
        (entry, owed)
    }

    /// The call something the upstream sends on its own at `now` belongs to:
    /// the latest call of the only owner with calls in flight, unless another
    /// owner's call ended lately without an answer (the upstream may be asking
    /// for that one).
    pub(crate) fn target(&self, now: Instant) -> Target {
        let mut owner = None;
        let mut best: Option<(u64, u64)> = None;
        for (id, entry) in self.calls.iter().filter(|(_, e)| e.owner != GATEWAY_OWNER) {
            match owner {
                None => owner = Some(entry.owner),
                Some(o) if o != entry.owner => return Target::Unknown,
                Some(_) => {}
            }
            if best.is_none_or(|(_, seq)| entry.seq > seq) {
                best = Some((*id, entry.seq));
            }
        }
        match (owner, best) {
            (Some(owner), Some((id, _))) if !self.cancelled_other(Some(owner), now) => {
                Target::Call(id)
            }
            (Some(_), _) => Target::Unknown,
            (None, _) if self.calls.is_empty() => Target::Idle,
            // Only the gateway's own calls: nobody downstream to ask.
            (None, _) => Target::Unknown,
        }
    }

    /// Where a log message the upstream sends at `now` goes. Idle, it goes to
    /// every session unless a call ended lately without an answer (the log may
    /// be about it); with one owner (`owned`, a per-session upstream) it is
    /// that owner's anyway.
    pub(crate) fn log_target(&self, now: Instant, owned: bool) -> Target {
        match self.target(now) {
            Target::Idle if owned || !self.cancelled_other(None, now) => Target::Idle,
            Target::Idle => Target::Unknown,
            other => other,
        }
    }

    /// Whether a call of an owner other than `owner` (of any owner, for
    /// `None`) ended without an answer within [`CANCELLED_GRACE`] of `now`.
    fn cancelled_other(&self, owner: Option<u64>, now: Instant) -> bool {
        self.cancelled
            .values()
            .any(|(o, until)| *until > now && Some(*o) != owner)
    }

    /// The upstream's request `child` was handed on under `ours`, to `call`
    /// (or to the owning session, `None`).
    pub(crate) fn open(&mut self, ours: u64, child: Id, call: Option<u64>) {
        self.child_requests.insert(child.clone(), ours);
        self.open.insert(ours, Open { child, call });
    }

    /// Whether the request handed on under `ours` is still open.
    pub(crate) fn is_open(&self, ours: u64) -> bool {
        self.open.contains_key(&ours)
    }

    /// The request handed on under `ours` is over (answered, abandoned): it
    /// leaves the tables; the upstream's own id of it.
    pub(crate) fn take_open(&mut self, ours: u64) -> Option<Id> {
        let open = self.open.remove(&ours)?;
        if self.child_requests.get(&open.child) == Some(&ours) {
            self.child_requests.remove(&open.child);
        }
        Some(open.child)
    }

    /// The upstream cancelled its request `child`: it is over. Returns the id
    /// it was handed on under and the call it went to; `None` when it is not
    /// open (answered already, or never made).
    pub(crate) fn child_cancelled(&mut self, child: &Id) -> Option<(u64, Option<u64>)> {
        let ours = self.child_requests.get(child).copied()?;
        let call = self.open.get(&ours).and_then(|open| open.call);
        self.take_open(ours);
        Some((ours, call))
    }

    /// The upstream is gone: everything is forgotten; the calls that were in
    /// flight are returned, to be failed.
    pub(crate) fn clear(&mut self) -> Vec<Entry<P>> {
        self.tokens.clear();
        self.child_requests.clear();
        self.open.clear();
        self.cancelled.clear();
        self.calls.drain().map(|(_, e)| e).collect()
    }

    /// Whether no request of the upstream is open (for tests).
    #[cfg(test)]
    pub(crate) fn nothing_open(&self) -> bool {
        self.open.is_empty() && self.child_requests.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router() -> Router<&'static str> {
        Router::default()
    }

    fn token(ours: &str) -> Option<(String, Box<RawValue>)> {
        Some((
            ours.to_owned(),
            RawValue::from_string("\"theirs\"".to_owned()).unwrap(),
        ))
    }

    #[test]
    fn the_latest_call_of_the_only_owner_is_the_target() {
        let t0 = Instant::now();
        let mut r = router();
        assert_eq!(r.target(t0), Target::Idle);
        r.insert(1, 7, None, "a");
        r.insert(2, 7, None, "b");
        assert_eq!(r.target(t0), Target::Call(2));
        // Another owner's call: the upstream's request could be for either.
        r.insert(3, 8, None, "c");
        assert_eq!(r.target(t0), Target::Unknown);
        assert_eq!(r.complete(3).map(|e| e.payload), Some("c"));
        assert_eq!(r.target(t0), Target::Call(2));
        // The gateway's own call contests nothing.
        r.insert(4, GATEWAY_OWNER, None, "own");
        assert_eq!(r.target(t0), Target::Call(2));
        r.complete(1);
        r.complete(2);
        assert_eq!(r.target(t0), Target::Unknown, "only the gateway's call");
        r.complete(4);
        assert_eq!(r.target(t0), Target::Idle);
    }

    #[test]
    fn a_cancelled_call_counts_for_its_owner_for_the_grace_only() {
        let t0 = Instant::now();
        let mut r = router();
        r.insert(1, 7, None, "a");
        r.insert(2, 8, None, "b");
        let (entry, owed) = r.forget(1, t0);
        assert!(entry.is_some() && owed.is_empty());
        // Owner 7's call ended without an answer: owner 8's call is not the
        // sure target until the grace is over.
        assert_eq!(r.target(t0), Target::Unknown);
        assert_eq!(r.target(t0 + CANCELLED_GRACE), Target::Call(2));
        r.complete(2);
        // Idle: a log goes everywhere only once the grace is over, or when
        // the upstream has one owner.
        assert_eq!(r.log_target(t0, false), Target::Unknown);
        assert_eq!(r.log_target(t0, true), Target::Idle);
        assert_eq!(r.log_target(t0 + CANCELLED_GRACE, false), Target::Idle);
        // The upstream answering the cancelled call after all ends its grace.
        assert!(r.complete(1).is_none());
        assert_eq!(r.log_target(t0, false), Target::Idle);
    }

    #[test]
    fn forgetting_a_call_owes_the_upstream_answers_to_its_requests() {
        let t0 = Instant::now();
        let mut r = router();
        r.insert(1, 7, token("sb-1"), "a");
        r.insert(2, 7, None, "b");
        r.open(100, Id::from(0u64), Some(1));
        r.open(101, Id::from("x"), Some(2));
        r.open(102, Id::from(1u64), None);
        assert_eq!(r.by_token("sb-1"), Some(1));
        let (entry, owed) = r.forget(1, t0);
        assert_eq!(entry.map(|e| e.payload), Some("a"));
        assert_eq!(owed, vec![Id::from(0u64)]);
        assert_eq!(r.by_token("sb-1"), None);
        assert!(!r.is_open(100) && r.is_open(101) && r.is_open(102));
        // Forgetting what is not in flight changes nothing.
        let (entry, owed) = r.forget(1, t0);
        assert!(entry.is_none() && owed.is_empty());
    }

    #[test]
    fn an_upstream_cancellation_closes_its_request_once() {
        let mut r = router();
        r.insert(1, 7, None, "a");
        r.open(100, Id::from(5u64), Some(1));
        assert_eq!(r.child_cancelled(&Id::from(5u64)), Some((100, Some(1))));
        assert_eq!(r.child_cancelled(&Id::from(5u64)), None);
        assert!(!r.is_open(100));
        assert_eq!(r.take_open(100), None, "an answer after it is dropped");
        assert!(r.nothing_open());
    }

    /// A restarted upstream reuses its own ids: a newer request under the
    /// same child id replaces the older one's index, and taking the older one
    /// leaves the newer one's alone.
    #[test]
    fn a_reused_child_id_keeps_the_newer_request() {
        let mut r = router();
        r.open(100, Id::from(0u64), None);
        r.open(101, Id::from(0u64), None);
        assert_eq!(r.take_open(100), Some(Id::from(0u64)));
        assert_eq!(r.child_cancelled(&Id::from(0u64)), Some((101, None)));
    }

    #[test]
    fn clearing_returns_the_calls_and_forgets_everything() {
        let t0 = Instant::now();
        let mut r = router();
        r.insert(1, 7, token("sb-1"), "a");
        r.insert(2, 8, None, "b");
        r.forget(2, t0);
        r.open(100, Id::from(0u64), Some(1));
        let mut failed: Vec<_> = r.clear().into_iter().map(|e| e.payload).collect();
        failed.sort();
        assert_eq!(failed, vec!["a"]);
        assert!(r.is_idle() && r.nothing_open());
        assert_eq!(r.by_token("sb-1"), None);
        assert_eq!(r.log_target(t0, false), Target::Idle, "no grace left");
    }
}
