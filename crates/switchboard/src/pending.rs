//! The pending-request table: one row per request we sent and still await an answer
//! for (id, method, deadline, hard deadline, progress token, waiter).
//!
//! Rules it keeps (spec notes §2 "Id uniqueness", §3 "Timeouts", §7 "Progress"):
//! - ids are integers from a per-session counter starting at 1 and never repeat
//!   within a session (R1–R4: never reused; R5: unique among in-flight requests);
//! - a request's deadline is `sent + timeout`; a progress notification carrying the
//!   request's progress token moves it to `now + timeout`, but never past the hard
//!   deadline `sent + max(timeout, max_total)`;
//! - [`PendingTable::expired`] removes and fails every row whose deadline has passed;
//! - [`PendingTable::fail_all`] fails every row at once when the transport closes, and
//!   every later insert fails the same way;
//! - a response for an id that is not (or no longer) in the table is ignored and
//!   logged at debug (a late answer to a cancelled or timed-out request);
//! - ids are matched exactly (JSON-RPC 2.0 §5: the same value, and so the same
//!   type), but a string id whose text is one of ours (`"1"` for `1`) is not
//!   ignored: no request of ours has a string id, so it is that request's answer
//!   under an id of the wrong type, and the row is removed and reported
//!   ([`Answered::Mistyped`]) for the caller to fail at once, instead of waiting
//!   for a timeout that says nothing of the cause.
//!
//! Time is passed in ([`tokio::time::Instant`]), so tests use a paused clock. This
//! module must not know about transports, sending, methods' meanings or the
//! lifecycle: it is a table.

// foldhash, not SipHash: ids and tokens here are minted by this side.
use foldhash::HashMap;
use std::time::Duration;

use serde_json::value::RawValue;
use switchboard_protocol::jsonrpc::Id;
use switchboard_protocol::types::ProgressToken;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::error::Error;
use crate::peer::ProgressCallback;

/// What a waiter receives: the raw `result`, or why there is none.
pub(crate) type Outcome = Result<Box<RawValue>, Error>;

/// One request awaiting its response.
pub(crate) struct Entry {
    /// The method, for logs and errors.
    pub(crate) method: String,
    /// When it was inserted.
    pub(crate) started: Instant,
    /// How far one progress notification moves the deadline.
    pub(crate) timeout: Duration,
    /// When it times out unless progress moves it.
    pub(crate) deadline: Instant,
    /// Progress never moves `deadline` past this.
    pub(crate) hard_deadline: Instant,
    /// The token put in `params._meta.progressToken`, if progress was asked for.
    pub(crate) progress_token: Option<ProgressToken>,
    /// Called for each progress notification with that token.
    pub(crate) on_progress: Option<ProgressCallback>,
    /// Whether expiry or cancellation sends `notifications/cancelled` (false for
    /// `initialize`, which MUST NOT be cancelled).
    pub(crate) notify_cancel: bool,
    waiter: oneshot::Sender<Outcome>,
}

impl Entry {
    /// Hands the outcome to whoever awaits it (nobody, if the caller went away).
    pub(crate) fn resolve(self, outcome: Outcome) {
        let _ = self.waiter.send(outcome);
    }
}

/// What the caller asks for when inserting a row.
pub(crate) struct NewRequest {
    pub(crate) method: String,
    pub(crate) timeout: Duration,
    /// The hard maximum from insertion; `max(timeout, max_total)` is used.
    pub(crate) max_total: Duration,
    pub(crate) on_progress: Option<ProgressCallback>,
    pub(crate) notify_cancel: bool,
}

/// A row that [`PendingTable::expired`] removed (its waiter already has the timeout).
pub(crate) struct Expired {
    pub(crate) id: u64,
    pub(crate) method: String,
    pub(crate) notify_cancel: bool,
    pub(crate) after: Duration,
}

/// The table. Not thread-safe by itself; the peer keeps it behind a mutex.
pub(crate) struct PendingTable {
    next_id: u64,
    max_pending: usize,
    entries: HashMap<u64, Entry>,
    tokens: HashMap<ProgressToken, u64>,
    closed: Option<String>,
}

/// The integer behind one of our ids, if `id` can be one.
pub(crate) fn our_id(id: &Id) -> Option<u64> {
    id.as_i64().and_then(|n| u64::try_from(n).ok())
}

/// The integer id of ours that a string id spells exactly in decimal (`"7"` →
/// 7; not `"07"`, `"+7"`, `" 7"` or `"7.0"`): what a peer that turned the id's
/// type answers under. `None` for any other id.
pub(crate) fn spelled_id(id: &Id) -> Option<u64> {
    let Id::Str(text) = id else { return None };
    let n: u64 = text.parse().ok()?;
    (n.to_string() == *text).then_some(n)
}

/// What an answer's id found in the table ([`PendingTable::take_response`]).
pub(crate) enum Answered {
    /// The row with exactly this id, removed.
    Request(Entry),
    /// No row has this id, but it is a string spelling the id of one
    /// ([`spelled_id`]): that row, removed; `sent` is the id it was sent under.
    Mistyped { entry: Entry, sent: u64 },
    /// No row: a late answer, or not to us (logged at debug).
    Nothing,
}

impl PendingTable {
    /// An empty table holding at most `max_pending` rows.
    pub(crate) fn new(max_pending: usize) -> Self {
        PendingTable {
            next_id: 1,
            max_pending,
            entries: HashMap::default(),
            tokens: HashMap::default(),
            closed: None,
        }
    }

    /// Adds a row with the next id. Returns the id, the progress token (the id
    /// itself, when `on_progress` is set) and the receiver of the outcome.
    ///
    /// Errors: closed ([`Error::is_closed`], after [`fail_all`](Self::fail_all));
    /// full ([`Error::is_limit`], `max_pending` rows already). No id is used up then.
    pub(crate) fn insert(
        &mut self,
        req: NewRequest,
        now: Instant,
    ) -> Result<(u64, Option<ProgressToken>, oneshot::Receiver<Outcome>), Error> {
        if let Some(reason) = &self.closed {
            return Err(Error::closed(reason.clone()).with_method(&req.method));
        }
        if self.entries.len() >= self.max_pending {
            return Err(Error::limit(format!(
                "{} requests already awaiting a response",
                self.max_pending
            ))
            .with_method(&req.method));
        }
        let id = self.next_id;
        self.next_id += 1;
        let token = req.on_progress.as_ref().map(|_| Id::from(id));
        if let Some(t) = &token {
            self.tokens.insert(t.clone(), id);
        }
        let (tx, rx) = oneshot::channel();
        self.entries.insert(
            id,
            Entry {
                method: req.method,
                started: now,
                timeout: req.timeout,
                deadline: now + req.timeout,
                hard_deadline: now + req.timeout.max(req.max_total),
                progress_token: token.clone(),
                on_progress: req.on_progress,
                notify_cancel: req.notify_cancel,
                waiter: tx,
            },
        );
        Ok((id, token, rx))
    }

    /// Removes the row `id` (cancellation, a send that failed, a response).
    pub(crate) fn remove(&mut self, id: u64) -> Option<Entry> {
        let entry = self.entries.remove(&id)?;
        if let Some(t) = &entry.progress_token {
            self.tokens.remove(t);
        }
        Some(entry)
    }

    /// The row a response with `id` answers, removed ([`Answered::Request`]); the
    /// row whose id a string `id` spells ([`Answered::Mistyped`], logged at
    /// warn); [`Answered::Nothing`] (logged at debug) for an id we never sent or
    /// no longer await: a late response is ignored.
    pub(crate) fn take_response(&mut self, id: &Id) -> Answered {
        if let Some(entry) = our_id(id).and_then(|n| self.remove(n)) {
            return Answered::Request(entry);
        }
        if let Some((sent, entry)) = spelled_id(id).and_then(|n| Some((n, self.remove(n)?))) {
            tracing::warn!(%id, sent, method = %entry.method, "answer under a string id spelling the id of a pending request");
            return Answered::Mistyped { entry, sent };
        }
        tracing::debug!(%id, "response to no pending request (late or unknown); ignored");
        Answered::Nothing
    }

    /// A progress notification for `token` arrived at `now`: moves that row's deadline
    /// to `min(now + timeout, hard_deadline)` and returns its callback. `None` for a
    /// token no pending request carries.
    pub(crate) fn progress(
        &mut self,
        token: &ProgressToken,
        now: Instant,
    ) -> Option<ProgressCallback> {
        let id = *self.tokens.get(token)?;
        let entry = self.entries.get_mut(&id)?;
        entry.deadline = entry
            .deadline
            .max((now + entry.timeout).min(entry.hard_deadline));
        entry.on_progress.clone()
    }

    /// Removes every row whose deadline is at or before `now`, hands each waiter a
    /// timeout error, and returns what was removed (so the caller can send
    /// `notifications/cancelled`).
    pub(crate) fn expired(&mut self, now: Instant) -> Vec<Expired> {
        let ids: Vec<u64> = self
            .entries
            .iter()
            .filter(|(_, e)| e.deadline <= now)
            .map(|(id, _)| *id)
            .collect();
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let Some(entry) = self.remove(id) else {
                continue;
            };
            let after = now.saturating_duration_since(entry.started);
            let expired = Expired {
                id,
                method: entry.method.clone(),
                notify_cancel: entry.notify_cancel,
                after,
            };
            let method = entry.method.clone();
            entry.resolve(Err(Error::timeout(after).with_method(&method)));
            out.push(expired);
        }
        out
    }

    /// The earliest deadline of any row.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.entries.values().map(|e| e.deadline).min()
    }

    /// The transport closed: every waiter gets a closed error naming `reason`, the
    /// table empties, and every later [`insert`](Self::insert) fails. Returns how many
    /// rows were failed.
    pub(crate) fn fail_all(&mut self, reason: &str) -> usize {
        self.closed.get_or_insert_with(|| reason.to_owned());
        self.tokens.clear();
        let n = self.entries.len();
        for (_, entry) in self.entries.drain() {
            let method = entry.method.clone();
            let _ = entry
                .waiter
                .send(Err(Error::closed(reason).with_method(&method)));
        }
        n
    }

    /// Why the table is closed, if it is.
    pub(crate) fn closed_reason(&self) -> Option<&str> {
        self.closed.as_deref()
    }

    /// How many rows there are.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn req(method: &str, timeout_ms: u64, max_ms: u64, progress: bool) -> NewRequest {
        let on_progress: Option<ProgressCallback> = if progress {
            Some(Arc::new(|_| {}))
        } else {
            None
        };
        NewRequest {
            method: method.to_owned(),
            timeout: Duration::from_millis(timeout_ms),
            max_total: Duration::from_millis(max_ms),
            on_progress,
            notify_cancel: true,
        }
    }

    const MS: Duration = Duration::from_millis(1);

    #[tokio::test(start_paused = true)]
    async fn ids_count_up_and_never_repeat() {
        let mut t = PendingTable::new(4);
        let now = Instant::now();
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            let (id, token, _rx) = t.insert(req("ping", 10, 10, false), now).unwrap();
            assert!(token.is_none());
            assert!(seen.insert(id), "id {id} repeated");
            assert!(matches!(
                t.take_response(&Id::from(id)),
                Answered::Request(_)
            ));
        }
        assert_eq!(t.len(), 0);
        // A full table refuses without using up an id.
        let ids: Vec<u64> = (0..4)
            .map(|_| t.insert(req("ping", 10, 10, false), now).unwrap().0)
            .collect();
        assert_eq!(ids, vec![1001, 1002, 1003, 1004]);
        let e = t.insert(req("ping", 10, 10, false), now).expect_err("full");
        assert!(e.is_limit());
        t.remove(1001);
        assert_eq!(t.insert(req("ping", 10, 10, false), now).unwrap().0, 1005);
    }

    #[tokio::test(start_paused = true)]
    async fn late_and_foreign_responses_are_ignored() {
        let mut t = PendingTable::new(8);
        let (id, _, _rx) = t
            .insert(req("tools/call", 10, 10, false), Instant::now())
            .unwrap();
        assert!(
            matches!(t.take_response(&Id::from("2")), Answered::Nothing),
            "a string id that spells no pending id is not ours"
        );
        assert!(matches!(t.take_response(&Id::from(-1)), Answered::Nothing));
        assert!(matches!(
            t.take_response(&Id::from(id)),
            Answered::Request(_)
        ));
        assert!(
            matches!(t.take_response(&Id::from(id)), Answered::Nothing),
            "second answer ignored"
        );
    }

    /// A string id spelling a pending integer id takes that row (the peer
    /// turned the id's type); other spellings and integers of another value
    /// do not.
    #[tokio::test(start_paused = true)]
    async fn a_string_spelling_a_pending_id_is_its_mistyped_answer() {
        let mut t = PendingTable::new(8);
        let (id, _, _rx) = t
            .insert(req("initialize", 10, 10, false), Instant::now())
            .unwrap();
        assert_eq!(id, 1);
        for other in ["01", "+1", " 1", "1.0", "1e0", "one", ""] {
            assert!(
                matches!(t.take_response(&Id::from(other)), Answered::Nothing),
                "{other:?}"
            );
        }
        match t.take_response(&Id::from("1")) {
            Answered::Mistyped { entry, sent } => {
                assert_eq!(sent, 1);
                assert_eq!(entry.method, "initialize");
            }
            _ => panic!("\"1\" spells the pending id 1"),
        }
        assert_eq!(t.len(), 0, "the row is gone");
        assert!(matches!(t.take_response(&Id::from("1")), Answered::Nothing));
        assert_eq!(
            spelled_id(&Id::from("18446744073709551615")),
            Some(u64::MAX)
        );
        assert_eq!(
            spelled_id(&Id::from(1)),
            None,
            "an integer is not a spelling"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn progress_extends_the_deadline_up_to_the_hard_maximum() {
        let mut t = PendingTable::new(8);
        let t0 = Instant::now();
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        let mut r = req("tools/call", 100, 250, false);
        r.on_progress = Some(Arc::new(move |_| {
            c.fetch_add(1, Ordering::SeqCst);
        }));
        let (id, token, mut rx) = t.insert(r, t0).unwrap();
        let token = token.unwrap();
        assert_eq!(token, Id::from(id));
        assert_eq!(t.next_deadline(), Some(t0 + 100 * MS));

        // Progress at 80 ms moves the deadline to 180 ms.
        let cb = t.progress(&token, t0 + 80 * MS).unwrap();
        cb(serde_json::from_str(r#"{"progressToken":1,"progress":1}"#).unwrap());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(t.next_deadline(), Some(t0 + 180 * MS));
        assert!(t.expired(t0 + 179 * MS).is_empty());
        // Progress at 170 ms would give 270 ms; the hard maximum is 250 ms.
        t.progress(&token, t0 + 170 * MS).unwrap();
        assert_eq!(t.next_deadline(), Some(t0 + 250 * MS));
        // A token nobody carries.
        assert!(t.progress(&Id::from(999), t0).is_none());

        let gone = t.expired(t0 + 250 * MS);
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].id, id);
        assert_eq!(gone[0].after, 250 * MS);
        assert!(gone[0].notify_cancel);
        let e = rx.try_recv().unwrap().unwrap_err();
        assert!(e.is_timeout(), "{e}");
        assert_eq!(e.method(), Some("tools/call"));
        // The token is gone with the row.
        assert!(t.progress(&token, t0 + 251 * MS).is_none());
        assert_eq!(t.next_deadline(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn expired_takes_only_what_is_due() {
        let mut t = PendingTable::new(8);
        let t0 = Instant::now();
        let (a, _, _ra) = t.insert(req("a", 10, 10, false), t0).unwrap();
        let (_b, _, mut rb) = t.insert(req("b", 30, 30, false), t0).unwrap();
        let gone = t.expired(t0 + 10 * MS);
        assert_eq!(gone.iter().map(|e| e.id).collect::<Vec<_>>(), vec![a]);
        assert_eq!(t.len(), 1);
        assert!(rb.try_recv().is_err(), "b still waits");
        assert_eq!(t.next_deadline(), Some(t0 + 30 * MS));
    }

    #[tokio::test(start_paused = true)]
    async fn fail_all_fails_everyone_at_once_and_closes_the_table() {
        let mut t = PendingTable::new(8);
        let now = Instant::now();
        let mut rxs: Vec<_> = (0..5)
            .map(|i| {
                t.insert(req(&format!("m{i}"), 10, 10, i % 2 == 0), now)
                    .unwrap()
                    .2
            })
            .collect();
        assert_eq!(t.fail_all("peer closed the connection"), 5);
        for (i, rx) in rxs.iter_mut().enumerate() {
            let e = rx.try_recv().unwrap().unwrap_err();
            assert!(e.is_closed());
            assert_eq!(e.method(), Some(format!("m{i}").as_str()));
            assert!(e.to_string().contains("peer closed the connection"), "{e}");
        }
        let e = t.insert(req("x", 10, 10, false), now).expect_err("closed");
        assert!(e.is_closed());
        assert_eq!(t.closed_reason(), Some("peer closed the connection"));
        assert_eq!(t.fail_all("again"), 0);
        assert_eq!(t.closed_reason(), Some("peer closed the connection"));
    }
}
