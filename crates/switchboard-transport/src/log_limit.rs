//! A rate limit on the log events that a child's output causes: one per stderr
//! line, one per stray stdout line. A child in a loop would otherwise fill the
//! log (a debug print in a loop wrote about 150 MB of bridge log in 5 s).
//!
//! Each stream of each child has its own token bucket ([`LogLimit`]): a line is
//! logged while the bucket has a token, else it is only counted. The count is
//! logged as one summary event when logging resumes, at the latest every
//! [`LOG_SUMMARY_INTERVAL`] while lines keep being suppressed (or once that long
//! after the first of them, if the child goes quiet), and when the stream ends.
//! Nothing else about the line changes: it is still kept as a stderr tail or
//! counted as skipped by its caller.

use std::time::Duration;

use tokio::time::Instant;
use tracing::{info, warn};

/// How many log events one stream of a child's output may cause: a token bucket
/// of [`burst`](Self::burst) lines, refilled with [`per_second`](Self::per_second)
/// lines a second. Default [`DEFAULT_LOG_LIMIT`](crate::stdio::DEFAULT_LOG_LIMIT)
/// (a burst of 50 lines, then 10 lines a second).
///
/// ```
/// use switchboard_transport::stdio::{ChildConfig, LogLimit};
///
/// let mut config = ChildConfig::new("server", "my-server");
/// assert_eq!(config.log_limit, LogLimit::new(50, 10));
/// config.log_limit = LogLimit::new(500, 100);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogLimit {
    /// The bucket's size, in lines: how many lines are logged in a row before the
    /// rate applies (and how many a quiet stream saves up). 0 logs no line, only
    /// the summaries.
    pub burst: u32,
    /// The refill, in lines per second, once a burst is spent. 0: no line is
    /// logged after the first `burst`.
    pub per_second: u32,
}

impl LogLimit {
    /// A bucket of `burst` lines refilled with `per_second` lines a second.
    pub const fn new(burst: u32, per_second: u32) -> Self {
        LogLimit { burst, per_second }
    }
}

/// How often, at the latest, lines suppressed by a [`LogLimit`] are summed up in
/// one log event while suppression lasts: every 5 seconds (counted from the first
/// line suppressed since the last summary).
pub const LOG_SUMMARY_INTERVAL: Duration = Duration::from_secs(5);

const NANOS_PER_SECOND: u128 = 1_000_000_000;

/// Lines suppressed since the previous summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Suppressed {
    /// How many.
    pub(crate) lines: u64,
    /// From the first of them to the summary.
    pub(crate) over: Duration,
}

/// The token bucket and the count of what it suppressed; the clock is the
/// caller's (`now`), so that it can be tested without one.
#[derive(Debug)]
pub(crate) struct Bucket {
    limit: LogLimit,
    /// Lines that may be logged now.
    tokens: u32,
    /// The time up to which refills have been counted (whole tokens are added;
    /// the time of a fraction of one is carried to the next refill).
    refilled: Instant,
    /// Lines not logged since the last summary.
    suppressed: u64,
    /// When the first of them came.
    since: Instant,
}

impl Bucket {
    /// A full bucket.
    pub(crate) fn new(limit: LogLimit, now: Instant) -> Self {
        Bucket {
            limit,
            tokens: limit.burst,
            refilled: now,
            suppressed: 0,
            since: now,
        }
    }

    /// One line at `now`: whether to log it, and a summary of the lines
    /// suppressed before it to log first (when this one is logged, or when the
    /// suppression has lasted [`LOG_SUMMARY_INTERVAL`]).
    pub(crate) fn line(&mut self, now: Instant) -> (bool, Option<Suppressed>) {
        self.refill(now);
        if self.tokens > 0 {
            self.tokens -= 1;
            return (true, self.summary(now));
        }
        if self.suppressed == 0 {
            self.since = now;
        }
        self.suppressed += 1;
        let due = now.saturating_duration_since(self.since) >= LOG_SUMMARY_INTERVAL;
        (false, if due { self.summary(now) } else { None })
    }

    /// When the lines suppressed so far are due to be summed up, if there are any.
    pub(crate) fn due(&self) -> Option<Instant> {
        (self.suppressed > 0).then(|| self.since + LOG_SUMMARY_INTERVAL)
    }

    /// The lines suppressed since the last summary, if any; the count starts
    /// again from zero.
    pub(crate) fn summary(&mut self, now: Instant) -> Option<Suppressed> {
        if self.suppressed == 0 {
            return None;
        }
        let lines = std::mem::take(&mut self.suppressed);
        Some(Suppressed {
            lines,
            over: now.saturating_duration_since(self.since),
        })
    }

    fn refill(&mut self, now: Instant) {
        if self.tokens >= self.limit.burst || self.limit.per_second == 0 {
            self.refilled = now;
            return;
        }
        let rate = u128::from(self.limit.per_second);
        let elapsed = now.saturating_duration_since(self.refilled).as_nanos();
        let earned = elapsed * rate / NANOS_PER_SECOND;
        if earned == 0 {
            return;
        }
        let room = u128::from(self.limit.burst - self.tokens);
        if earned >= room {
            self.tokens = self.limit.burst;
            self.refilled = now;
        } else {
            // `earned < room <= u32::MAX`; the time those tokens took (rounded
            // down: the fraction of a nanosecond goes to the next refill) is at
            // most `elapsed`, so it fits in a u64 of nanoseconds.
            self.tokens += earned as u32;
            let spent = earned * NANOS_PER_SECOND / rate;
            self.refilled += Duration::from_nanos(spent as u64);
        }
    }
}

/// Which stream a [`LogLines`] limits, for its summaries.
#[derive(Debug)]
pub(crate) enum Stream {
    /// The child's stderr; its lines are logged at info with `child`.
    Stderr {
        /// The child's name.
        child: String,
    },
    /// The server's stdout, read in the client role; its stray lines are logged
    /// at warn with `peer`.
    Stdout {
        /// The server's name.
        peer: String,
    },
}

/// A [`Bucket`] on the clock, which logs its own summaries at the level of the
/// lines it stands for, the last one when it is dropped (the stream ended, or its
/// task was ended).
#[derive(Debug)]
pub(crate) struct LogLines {
    bucket: Bucket,
    stream: Stream,
}

impl LogLines {
    pub(crate) fn new(limit: LogLimit, stream: Stream) -> Self {
        LogLines {
            bucket: Bucket::new(limit, Instant::now()),
            stream,
        }
    }

    /// Whether the caller may log one more line (after a summary of the ones
    /// suppressed before it, when one is due).
    pub(crate) fn admit(&mut self) -> bool {
        let (log, summary) = self.bucket.line(Instant::now());
        if let Some(summary) = summary {
            self.report(summary);
        }
        log
    }

    /// When a summary is due if no line comes before (see [`Bucket::due`]).
    pub(crate) fn due(&self) -> Option<Instant> {
        self.bucket.due()
    }

    /// Logs the summary of the lines suppressed so far, if any.
    pub(crate) fn flush(&mut self) {
        if let Some(summary) = self.bucket.summary(Instant::now()) {
            self.report(summary);
        }
    }

    /// Logs a summary under the target of the lines it stands for (the module
    /// that logs them), so that a filter that lets them through lets it through.
    fn report(&self, Suppressed { lines, over }: Suppressed) {
        let LogLimit { burst, per_second } = self.bucket.limit;
        match &self.stream {
            Stream::Stderr { child } => info!(
                target: "switchboard_transport::stdio::child",
                child = %child,
                suppressed = lines,
                over = ?over,
                "stderr: {lines} more lines not logged in {over:.1?} (log limit: a burst of {burst}, then {per_second} a second)"
            ),
            Stream::Stdout { peer } => warn!(
                target: "switchboard_transport::line",
                peer = %peer,
                suppressed = lines,
                over = ?over,
                "the server wrote {lines} more lines that are not valid JSON-RPC messages in {over:.1?}, skipped and not logged (log limit: a burst of {burst}, then {per_second} a second)"
            ),
        }
    }
}

impl Drop for LogLines {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Feeds `n` lines at `at`; how many were admitted, and the summaries.
    fn feed(b: &mut Bucket, n: u64, at: Instant) -> (u64, Vec<Suppressed>) {
        let mut logged = 0;
        let mut summaries = Vec::new();
        for _ in 0..n {
            let (log, summary) = b.line(at);
            logged += u64::from(log);
            summaries.extend(summary);
        }
        (logged, summaries)
    }

    #[test]
    fn a_burst_then_nothing_until_the_refill() {
        let t0 = Instant::now();
        let mut b = Bucket::new(LogLimit::new(50, 10), t0);
        let (logged, summaries) = feed(&mut b, 1000, t0);
        assert_eq!(logged, 50);
        assert!(summaries.is_empty(), "{summaries:?}");
        assert_eq!(b.due(), Some(t0 + LOG_SUMMARY_INTERVAL));
        // 99 ms later: not a whole token yet.
        assert_eq!(feed(&mut b, 1, t0 + ms(99)).0, 0);
        // At 100 ms, one; and the summary of the 951 before it comes with it.
        let (log, summary) = b.line(t0 + ms(100));
        assert!(log);
        assert_eq!(
            summary,
            Some(Suppressed {
                lines: 951,
                over: ms(100)
            })
        );
        assert_eq!(b.due(), None);
        assert_eq!(feed(&mut b, 10, t0 + ms(150)).0, 0);
    }

    #[test]
    fn the_refill_keeps_its_fractions_and_stops_at_the_burst() {
        let t0 = Instant::now();
        let mut b = Bucket::new(LogLimit::new(5, 3), t0);
        assert_eq!(feed(&mut b, 5, t0).0, 5);
        // Lines every 100 ms for 10 s at 3 a second: 30 logged, not 10 (as it
        // would be if each refill dropped its fraction of a token).
        let mut logged = 0;
        for i in 1..=100 {
            logged += feed(&mut b, 1, t0 + ms(100 * i)).0;
        }
        assert_eq!(logged, 30);
        // A quiet minute saves up one burst, no more.
        let later = t0 + Duration::from_secs(70);
        assert_eq!(feed(&mut b, 100, later).0, 5);
        // No refill at all: the burst, then nothing.
        let mut none = Bucket::new(LogLimit::new(2, 0), t0);
        assert_eq!(feed(&mut none, 10, t0).0, 2);
        assert_eq!(feed(&mut none, 10, later).0, 0);
        // No burst: only summaries.
        let mut zero = Bucket::new(LogLimit::new(0, 10), t0);
        assert_eq!(feed(&mut zero, 10, later).0, 0);
        // A rate above one a nanosecond does not overflow.
        let mut fast = Bucket::new(LogLimit::new(u32::MAX, u32::MAX), t0);
        assert_eq!(feed(&mut fast, 1000, later).0, 1000);
    }

    /// Every line is either logged or in exactly one summary; while suppression
    /// lasts a summary comes every LOG_SUMMARY_INTERVAL.
    #[test]
    fn summaries_count_every_suppressed_line_once() {
        let t0 = Instant::now();
        let mut b = Bucket::new(LogLimit::new(50, 10), t0);
        let mut logged = 0;
        let mut summaries = Vec::new();
        // 1000 lines a second for 12 s.
        for i in 0..12_000 {
            let (n, s) = feed(&mut b, 1, t0 + ms(i));
            logged += n;
            summaries.extend(s);
        }
        summaries.extend(b.summary(t0 + ms(12_000)));
        let suppressed: u64 = summaries.iter().map(|s| s.lines).sum();
        assert_eq!(logged + suppressed, 12_000);
        // The burst and about 10 a second after it.
        assert!((165..=172).contains(&logged), "{logged} logged");
        // Logging resumes every 100 ms, each time with the summary of the lines
        // in between: none lasts longer than the interval.
        assert!(summaries.iter().all(|s| s.over <= LOG_SUMMARY_INTERVAL));
        assert!(summaries.len() > 100, "{}", summaries.len());
        assert_eq!(b.summary(t0 + ms(12_000)), None);

        // Without refill, suppression lasts: a summary every 5 s.
        let mut b = Bucket::new(LogLimit::new(1, 0), t0);
        let mut summaries = Vec::new();
        for i in 0..12_000 {
            summaries.extend(feed(&mut b, 1, t0 + ms(i)).1);
        }
        assert_eq!(
            summaries,
            [
                Suppressed {
                    lines: 5001,
                    over: ms(5000)
                },
                Suppressed {
                    lines: 5001,
                    over: ms(5000)
                }
            ]
        );
        // The rest, at the end of the stream.
        assert_eq!(b.due(), Some(t0 + ms(10_003) + LOG_SUMMARY_INTERVAL));
        assert_eq!(
            b.summary(t0 + ms(12_000)),
            Some(Suppressed {
                lines: 1997,
                over: ms(1997)
            })
        );
    }
}
