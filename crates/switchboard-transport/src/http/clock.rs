//! A coarse clock for short waits that are usually cut short: the wait of an SSE
//! reply for its first event ([`HttpServerConfig::sse_first_event_wait`]).
//!
//! One tokio timer per wait would be armed and cancelled on every POST, and each
//! arming writes the runtime's wake-up `eventfd` when it is the earliest timer
//! (tokio unparks its driver then, even from the driver's own thread): one
//! system call, and one needless return from `epoll_wait`, per call. Here one
//! task per server ticks every `tick` while waits are pending and for one tick
//! after; a wait ends at the first tick at or after its deadline, so it lasts
//! between the asked length and that plus one tick. Starting a wait takes a lock
//! and a queue push.
//!
//! The ticks come from two timers a tick apart, each re-armed two ticks ahead
//! when it fires. Tokio unparks its driver when a timer is armed earlier than
//! every other pending one, and right after a timer fires there may be no other:
//! a single timer re-armed from the task it woke wrote the `eventfd` on nearly
//! every tick. With two, the one re-armed is always later than the other.
//!
//! This module must not know HTTP, sessions or MCP; it only ends waits.
//!
//! [`HttpServerConfig::sse_first_event_wait`]: super::server::HttpServerConfig::sse_first_event_wait

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::time::Instant;

/// Ends waits of one length, at a granularity of `tick` (see the module
/// documentation). Cheap to share behind an `Arc`.
#[derive(Debug)]
pub(crate) struct Clock {
    tick: Duration,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Pending waits, in deadline order (every wait has the same length, so
    /// arrival order).
    queue: VecDeque<(Instant, Arc<Flag>)>,
    /// The ticking task is running.
    running: bool,
    /// A wait started since the last tick (the task then ticks once more).
    fresh: bool,
}

impl Clock {
    /// A clock ticking every `tick` (at least 100 µs) while waits are pending.
    pub(crate) fn new(tick: Duration) -> Arc<Self> {
        Arc::new(Clock {
            tick: tick.max(Duration::from_micros(100)),
            state: Mutex::new(State::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A wait of `length` from now: a future that completes at the first tick at
    /// or after the deadline. Dropping it gives the wait up (the clock forgets it
    /// at that tick). Must be called within a tokio runtime (the ticking task is
    /// spawned on it when not running).
    pub(crate) fn wait(self: &Arc<Self>, length: Duration) -> Wait {
        let flag = Arc::new(Flag::default());
        let deadline = Instant::now() + length;
        let start = {
            let mut st = self.lock();
            st.queue.push_back((deadline, flag.clone()));
            st.fresh = true;
            !std::mem::replace(&mut st.running, true)
        };
        if start {
            tokio::spawn(tick(self.clone()));
        }
        Wait { flag }
    }
}

/// The ticking task: ends every wait whose deadline has passed, each `tick`,
/// until a tick finds nothing pending and nothing new. The ticks alternate
/// between two timers (see the module documentation).
async fn tick(clock: Arc<Clock>) {
    let start = Instant::now();
    let mut timers = [
        Box::pin(tokio::time::sleep_until(start + clock.tick)),
        Box::pin(tokio::time::sleep_until(start + 2 * clock.tick)),
    ];
    let mut turn = 0;
    loop {
        timers[turn].as_mut().await;
        let now = Instant::now();
        let mut ended = Vec::new();
        {
            let mut st = clock.lock();
            while st
                .queue
                .front()
                .is_some_and(|(deadline, _)| *deadline <= now)
            {
                if let Some((_, flag)) = st.queue.pop_front() {
                    ended.push(flag);
                }
            }
            if st.queue.is_empty() && !st.fresh {
                st.running = false;
                drop(st);
                for flag in ended {
                    flag.set();
                }
                return;
            }
            st.fresh = false;
        }
        for flag in ended {
            flag.set();
        }
        let other = 1 - turn;
        if timers[other].deadline() <= now {
            // This tick came over a tick late: the pair starts again from now
            // (re-arming both may take the `eventfd` once).
            timers[other].as_mut().reset(now + clock.tick);
            timers[turn].as_mut().reset(now + 2 * clock.tick);
        } else {
            // Two ticks after this timer's own deadline: the other timer, due
            // one tick after it, stays the earlier of the two.
            let next = timers[turn].deadline() + 2 * clock.tick;
            timers[turn].as_mut().reset(next);
        }
        turn = other;
    }
}

/// Set once; wakes whoever waits on it.
#[derive(Debug, Default)]
struct Flag {
    set: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Flag {
    fn set(&self) {
        self.set.store(true, Ordering::Release);
        let waker = self
            .waker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// One wait of a [`Clock`]: completes when the clock ends it.
#[derive(Debug)]
pub(crate) struct Wait {
    flag: Arc<Flag>,
}

impl Future for Wait {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.flag.set.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        let mut slot = self
            .flag
            .waker
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Checked again under the lock: `set` stores before it takes the waker.
        if self.flag.set.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        match slot.as_ref() {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => *slot = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_wait_ends_within_one_tick_after_its_length() {
        let clock = Clock::new(Duration::from_millis(1));
        let start = Instant::now();
        clock.wait(Duration::from_millis(2)).await;
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(2) && took <= Duration::from_millis(3),
            "{took:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn waits_end_in_order_and_the_clock_stops_when_idle() {
        let clock = Clock::new(Duration::from_millis(1));
        let first = clock.wait(Duration::from_millis(2));
        tokio::time::sleep(Duration::from_micros(1500)).await;
        let mut second = std::pin::pin!(clock.wait(Duration::from_millis(2)));
        first.await;
        assert!(
            futures_poll_once(second.as_mut()).is_pending(),
            "the later wait is not over"
        );
        second.await;
        // Given up waits are forgotten, and the task stops after an idle tick.
        drop(clock.wait(Duration::from_millis(2)));
        tokio::time::sleep(Duration::from_millis(10)).await;
        {
            let st = clock.lock();
            assert!(st.queue.is_empty() && !st.running, "{st:?}");
        }
        // And starts again for the next wait.
        let start = Instant::now();
        clock.wait(Duration::from_millis(2)).await;
        assert!(start.elapsed() <= Duration::from_millis(3));
    }

    /// A tick that comes late (both timers overdue) starts the pair again:
    /// the waits due end at once, and later waits end on time, not in a burst
    /// of catch-up ticks.
    #[tokio::test(start_paused = true)]
    async fn a_late_tick_ends_what_is_due_and_the_ticks_go_on() {
        let clock = Clock::new(Duration::from_millis(1));
        let mut late = std::pin::pin!(clock.wait(Duration::from_millis(2)));
        assert!(futures_poll_once(late.as_mut()).is_pending());
        // The runtime was busy for 10 ms: no tick ran in between.
        tokio::time::advance(Duration::from_millis(10)).await;
        late.await;
        for _ in 0..5 {
            let start = Instant::now();
            clock.wait(Duration::from_millis(2)).await;
            let took = start.elapsed();
            assert!(
                took >= Duration::from_millis(2) && took <= Duration::from_millis(3),
                "{took:?}"
            );
        }
    }

    fn futures_poll_once<F: Future>(f: Pin<&mut F>) -> Poll<F::Output> {
        let mut cx = Context::from_waker(Waker::noop());
        f.poll(&mut cx)
    }
}
