//! A count of work in progress (calls in flight, answers still to send, open
//! listen streams) that a drain waits on reaching zero, instead of polling
//! with sleeps. Must not know what is counted.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

/// The count; clones share it.
#[derive(Debug, Clone)]
pub(crate) struct Gauge(Arc<watch::Sender<usize>>);

/// One unit of a [`Gauge`], given back when dropped.
#[derive(Debug)]
pub(crate) struct Counted(Gauge);

impl Default for Gauge {
    fn default() -> Self {
        Gauge(Arc::new(watch::Sender::new(0)))
    }
}

impl Gauge {
    /// Counts one more until the returned value is dropped.
    pub(crate) fn enter(&self) -> Counted {
        self.0.send_modify(|n| *n += 1);
        Counted(self.clone())
    }

    /// The count now.
    pub(crate) fn get(&self) -> usize {
        *self.0.borrow()
    }

    /// Waits up to `wait` for the count to be zero; `true` when it is.
    pub(crate) async fn drained(&self, wait: Duration) -> bool {
        let mut rx = self.0.subscribe();
        let zero = tokio::time::timeout(wait, rx.wait_for(|n| *n == 0)).await;
        zero.is_ok()
    }
}

impl Gauge {
    /// Waits up to `wait` for this count to be at most `floor`'s (the work
    /// counted here that is not also counted there has ended); `true` when it
    /// is.
    pub(crate) async fn down_to(&self, floor: &Gauge, wait: Duration) -> bool {
        let mut mine = self.0.subscribe();
        let mut theirs = floor.0.subscribe();
        let settled = async {
            loop {
                if *mine.borrow_and_update() <= *theirs.borrow_and_update() {
                    return;
                }
                // Neither sender goes while `self` and `floor` live.
                tokio::select! {
                    _ = mine.changed() => {}
                    _ = theirs.changed() => {}
                }
            }
        };
        tokio::time::timeout(wait, settled).await.is_ok()
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0 .0.send_modify(|n| *n -= 1);
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
