//! The hold of the drift guard (issue 23, a "rug pull"): a definition changed
//! in the middle of a session and announced by `notifications/*/list_changed`
//! is judged before the next `tools/call` or `prompts/get` uses it.
//!
//! ```text
//! upstream ──list_changed──> Upstream counts it (per list), then hands it on
//! re-lister (the bridge's follower, the gateway's) reads the count, lists,
//!            has the guard judge every entry, then marks that count judged
//! a call of an entry (shared verdicts, with a guard): waits until the judged
//!            count of its list reaches the count announced when it came,
//!            at most the wait given (logged when it gives up), then is checked
//! ```
//!
//! One [`Judged`] per upstream (its [`Core`](crate::Core)), shared by the
//! bridge and the gateway. Without a guard nothing waits: the check is one
//! test of an `Option`.
//!
//! This module must not know how lists are fetched or served, nor sessions
//! or transports.

use std::time::Duration;

use tokio::sync::watch;
use tracing::warn;

use crate::classify::ListKind;
use crate::upstream::Upstream;

/// How many of an upstream's announced list changes of each list (by
/// [`ListKind::index`]) a finished and judged re-list has covered.
#[derive(Debug)]
pub(crate) struct Judged(watch::Sender<[u64; 3]>);

impl Default for Judged {
    fn default() -> Self {
        Judged(watch::Sender::new([0; 3]))
    }
}

impl Judged {
    /// The changes of `list` a re-list of `up` that starts now covers: read
    /// it before the first page is asked for.
    pub(crate) fn covering(up: &Upstream, list: ListKind) -> u64 {
        up.list_changes(list)
    }

    /// A re-list of `list` covering `covered` changes (from
    /// [`Judged::covering`]) has been judged: the calls it holds go on.
    pub(crate) fn judged(&self, list: ListKind, covered: u64) {
        self.0.send_if_modified(|d| {
            let slot = &mut d[list.index()];
            let newer = covered > *slot;
            *slot = (*slot).max(covered);
            newer
        });
    }

    /// Whether a change of `list` announced by `up` has not been judged yet.
    pub(crate) fn pending(&self, up: &Upstream, list: ListKind) -> bool {
        self.0.borrow()[list.index()] < up.list_changes(list)
    }

    /// Waits until every change of `list` that `up` announced so far has
    /// been re-listed and judged, at most `wait`; when it gives up (the
    /// re-list failed or is slower), says so in the log and returns: the call
    /// is then judged on the last verdicts.
    pub(crate) async fn wait(&self, up: &Upstream, list: ListKind, wait: Duration) {
        let announced = up.list_changes(list);
        let mut judged = self.0.subscribe();
        if tokio::time::timeout(wait, judged.wait_for(|d| d[list.index()] >= announced))
            .await
            .is_err()
        {
            warn!(upstream = %up.name(), ?list, ?wait, "a list change not re-listed in time: the call goes on the last judgement");
        }
    }
}
