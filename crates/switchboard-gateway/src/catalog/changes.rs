//! The hold of the drift guard (issue 23, a "rug pull"): a definition changed
//! in the middle of a session and announced by `notifications/*/list_changed`
//! is judged before the next `tools/call` or `prompts/get` uses it.
//!
//! ```text
//! upstream ──list_changed──> Upstream::list_changes counts it (per list),
//!            then hands it on
//! re-lister (the bridge's follower, the gateway's relist, a session's
//!            follow_own for its own child) reads the count, lists, has the
//!            guard judge every entry, then marks that count judged
//!            (Judged::judged)
//! a call of an entry (with a guard: Core::unjudged) waits until the judged
//!            count of its list reaches the count announced when it came, at
//!            most the wait given, then is checked (not judged by then:
//!            refused in block mode, DriftGuard::unjudged_change)
//! a re-list that failed covers nothing; its re-lister tries again (Retry)
//! ```
//!
//! One [`Judged`] per set of verdicts: the shared child's (its
//! [`Core`](crate::Core), shared by the bridge and the gateway), and, with a
//! guard, each session's with a child of its own (module
//! `downstream::session`, dropped with the session); a
//! [`Judging`](crate::Judging) pairs it with the upstream whose changes it
//! counts. Without a guard nothing is re-listed and nothing waits: the check
//! is one test of an `Option`.
//!
//! This module must not know how lists are fetched, judged or served, nor
//! sessions, upstreams or transports: counts come in, and calls wait on them.

use std::time::Duration;

use tokio::sync::watch;

use crate::classify::ListKind;

/// When a re-list that failed (the upstream slow, refusing, or gone for a
/// while) is tried again, while the changes it was for are not judged (the
/// calls held for them are refused in block mode until one is): after 1 s,
/// then twice as long each time up to 30 s; from 1 s again once nothing is
/// left to judge.
#[derive(Debug)]
pub(crate) struct Retry(Duration);

impl Retry {
    const FIRST: Duration = Duration::from_secs(1);
    const MOST: Duration = Duration::from_secs(30);

    pub(crate) fn new() -> Self {
        Retry(Self::FIRST)
    }

    /// The wait before the next try when something is `pending` (the one
    /// after will be longer); `None`, and from the start again, otherwise.
    pub(crate) fn next(&mut self, pending: bool) -> Option<Duration> {
        if !pending {
            self.0 = Self::FIRST;
            return None;
        }
        let wait = self.0;
        self.0 = (self.0 * 2).min(Self::MOST);
        Some(wait)
    }
}

/// How many of an upstream's announced list changes of each list (by
/// [`ListKind::index`]) a finished and judged re-list has covered, plus one:
/// 0 is "never listed", which even no change announced waits for.
#[derive(Debug)]
pub(crate) struct Judged(watch::Sender<[u64; 3]>);

impl Default for Judged {
    /// Nothing announced counts as judged: the shared child's calls before
    /// its first list go on (it is listed at once, and judged by each list).
    fn default() -> Self {
        Judged(watch::Sender::new([1; 3]))
    }
}

impl Judged {
    /// Pending until a first re-list is judged, changes announced or not: a
    /// session's own child, whose uses wait for the bridge's whole list of it
    /// (a page a client reads cannot see a name listed again on another).
    pub(crate) fn before_first_list() -> Self {
        Judged(watch::Sender::new([0; 3]))
    }

    /// A re-list of `list` has been judged; it covers `covered` changes (the
    /// upstream's count of them read before its first page was asked for):
    /// the calls it holds go on.
    pub(crate) fn judged(&self, list: ListKind, covered: u64) {
        self.0.send_if_modified(|d| {
            let slot = &mut d[list.index()];
            let newer = covered + 1 > *slot;
            *slot = (*slot).max(covered + 1);
            newer
        });
    }

    /// Whether fewer than `announced` changes of `list` have been judged.
    pub(crate) fn pending(&self, list: ListKind, announced: u64) -> bool {
        self.0.borrow()[list.index()] <= announced
    }

    /// Waits until `announced` changes of `list` have been judged, at most
    /// `wait`; `false` when it gave up (the re-list failed or is slower).
    pub(crate) async fn wait(&self, list: ListKind, announced: u64, wait: Duration) -> bool {
        let mut judged = self.0.subscribe();
        let done = tokio::time::timeout(wait, judged.wait_for(|d| d[list.index()] > announced))
            .await
            .is_ok();
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_relist_is_retried_ever_later_then_from_the_start() {
        let mut r = Retry::new();
        let waits: Vec<u64> = (0..7).map(|_| r.next(true).unwrap().as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30]);
        assert_eq!(r.next(false), None);
        assert_eq!(r.next(true), Some(Duration::from_secs(1)));
    }

    /// A call waits for the re-list that covers the changes announced when
    /// it came, of its own list only; a re-list that covers fewer (begun
    /// before the last change) does not let it go; the wait is bounded.
    #[tokio::test(start_paused = true)]
    async fn a_call_waits_for_the_relist_that_covers_its_change() {
        let judged = std::sync::Arc::new(Judged::default());
        assert!(!judged.pending(ListKind::Tools, 0));
        assert!(judged.pending(ListKind::Tools, 2));
        // Another list's re-list covers nothing of this one.
        judged.judged(ListKind::Prompts, 5);
        assert!(judged.pending(ListKind::Tools, 2));
        assert!(!judged.pending(ListKind::Prompts, 5));

        let waiting = {
            let judged = judged.clone();
            tokio::spawn(async move {
                judged
                    .wait(ListKind::Tools, 2, Duration::from_secs(10))
                    .await
            })
        };
        tokio::time::sleep(Duration::from_secs(1)).await;
        judged.judged(ListKind::Tools, 1);
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(
            !waiting.is_finished(),
            "let go by a re-list that began too early"
        );
        judged.judged(ListKind::Tools, 2);
        assert!(waiting.await.unwrap(), "let go once judged");
        // A later, older re-list never takes the count back.
        judged.judged(ListKind::Tools, 1);
        assert!(!judged.pending(ListKind::Tools, 2));

        // A session's own child: pending before its first list.
        let own = Judged::before_first_list();
        assert!(own.pending(ListKind::Tools, 0));
        own.judged(ListKind::Tools, 0);
        assert!(!own.pending(ListKind::Tools, 0));
        assert!(own.pending(ListKind::Prompts, 0));

        // Never judged: given up after the wait.
        let started = tokio::time::Instant::now();
        assert!(
            !judged
                .wait(ListKind::Tools, 3, Duration::from_secs(10))
                .await
        );
        assert_eq!(started.elapsed(), Duration::from_secs(10));
    }
}
