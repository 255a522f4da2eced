//! A count of work in progress (calls in flight, answers still to send, open
//! listen streams) that a drain waits on reaching zero, instead of polling
//! with sleeps. Must not know what is counted.

use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

/// The count; clones share it. Counting costs two atomic operations; only a
/// unit given back while someone waits wakes anyone.
#[derive(Debug, Clone, Default)]
pub(crate) struct Gauge(Arc<Shared>);

#[derive(Debug, Default)]
struct Shared {
    count: AtomicUsize,
    /// Waiters registered: a unit given back wakes them only then.
    waiting: AtomicUsize,
    changed: Notify,
}

/// One unit of a [`Gauge`], given back when dropped.
#[derive(Debug)]
pub(crate) struct Counted(Gauge);

impl Gauge {
    /// Counts one more until the returned value is dropped.
    pub(crate) fn enter(&self) -> Counted {
        self.0.count.fetch_add(1, SeqCst);
        Counted(self.clone())
    }

    /// The count now.
    pub(crate) fn get(&self) -> usize {
        self.0.count.load(SeqCst)
    }

    /// Waits up to `wait` for the count to be zero; `true` when it is.
    pub(crate) async fn drained(&self, wait: Duration) -> bool {
        self.settle(None, wait).await
    }

    /// Waits up to `wait` for this count to be at most `floor`'s (the work
    /// counted here that is not also counted there has ended); `true` when it
    /// is.
    pub(crate) async fn down_to(&self, floor: &Gauge, wait: Duration) -> bool {
        self.settle(Some(floor), wait).await
    }

    /// Waits up to `wait` until this count is at most `floor`'s (zero without
    /// one). A waiter registers first, then arms its wake-ups, then looks, so
    /// a unit given back between the look and the wait still wakes it.
    async fn settle(&self, floor: Option<&Gauge>, wait: Duration) -> bool {
        let gauges = [Some(self), floor];
        for g in gauges.iter().flatten() {
            g.0.waiting.fetch_add(1, SeqCst);
        }
        let settled = async {
            loop {
                let mut mine = pin!(self.0.changed.notified());
                mine.as_mut().enable();
                let mut theirs = floor.map(|f| Box::pin(f.0.changed.notified()));
                if let Some(t) = theirs.as_mut() {
                    t.as_mut().enable();
                }
                if self.get() <= floor.map_or(0, Gauge::get) {
                    return;
                }
                match theirs {
                    Some(t) => {
                        tokio::select! {
                            () = mine => {}
                            () = t => {}
                        }
                    }
                    None => mine.await,
                }
            }
        };
        let done = tokio::time::timeout(wait, settled).await.is_ok();
        for g in gauges.iter().flatten() {
            g.0.waiting.fetch_sub(1, SeqCst);
        }
        done
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        let shared = &self.0 .0;
        shared.count.fetch_sub(1, SeqCst);
        if shared.waiting.load(SeqCst) > 0 {
            shared.changed.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_drain_ends_when_the_last_unit_goes_and_not_before() {
        let gauge = Gauge::default();
        assert!(gauge.drained(Duration::ZERO).await, "nothing counted");
        let a = gauge.enter();
        let b = gauge.enter();
        assert_eq!(gauge.get(), 2);
        assert!(!gauge.drained(Duration::from_millis(50)).await);
        drop(a);
        let waiter = tokio::spawn({
            let gauge = gauge.clone();
            async move { gauge.drained(Duration::from_secs(60)).await }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!waiter.is_finished(), "one unit is still counted");
        drop(b);
        assert!(waiter.await.unwrap());
        assert_eq!(gauge.get(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn down_to_waits_for_the_work_not_counted_in_the_floor() {
        let all = Gauge::default();
        let listens = Gauge::default();
        let _listen = (all.enter(), listens.enter());
        let call = all.enter();
        assert!(!all.down_to(&listens, Duration::from_millis(50)).await);
        let waiter = tokio::spawn({
            let (all, listens) = (all.clone(), listens.clone());
            async move { all.down_to(&listens, Duration::from_secs(60)).await }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!waiter.is_finished());
        drop(call);
        assert!(waiter.await.unwrap(), "only the listen is left");
    }
}
