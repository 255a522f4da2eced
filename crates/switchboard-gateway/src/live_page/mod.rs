//! The live page at `/ui` of the admin listener: what the gateway (or the
//! bridge, a gateway of one upstream) serves and how it fares, sent again
//! every second as server-sent events. Its numbers are read from the
//! metrics' own text, one render a second (module `sample`); names and
//! structure (routes, allowlists, tools and their drift verdicts, eras,
//! transports) come from the caller's view; recent calls from the
//! measuring sender (module `downstream::watch`), argument values never.
//!
//! This module must not know sessions, routes or upstreams: its caller
//! hands it a view as JSON.

mod sample;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use switchboard_transport::http::admin::LivePage;

use crate::audit::Entry;
use crate::metrics::Metrics;
pub(crate) use sample::{sample, Sample};

/// The page itself: one document, nothing loaded from elsewhere.
const HTML: &str = include_str!("page.html");

/// How often the page's numbers are read and sent.
pub(crate) const EVERY: Duration = Duration::from_secs(1);

/// How many readings the chart holds: five minutes of [`EVERY`].
const HISTORY: usize = 300;

/// How many recent calls the page lists.
const RECENT: usize = 50;

/// The longest name (or URI) the page shows, in bytes: a client may send
/// one of megabytes, which every viewer would then get every second.
const NAME_SHOWN: usize = 256;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The last calls answered (`tools/call`, `prompts/get`,
/// `resources/read`), newest last, without their arguments.
#[derive(Debug, Default)]
pub(crate) struct Recent(Mutex<VecDeque<Entry>>);

static RECENT_CALLS: OnceLock<Recent> = OnceLock::new();

/// Keeps recent calls for the page, from now on (the bridge's and the
/// gateway's start, with an admin listener).
pub(crate) fn enable() {
    RECENT_CALLS.get_or_init(Recent::default);
}

/// The recent calls, when kept.
pub(crate) fn recent() -> Option<&'static Recent> {
    RECENT_CALLS.get()
}

impl Recent {
    /// `entry` was answered (its arguments, if any, are dropped here, and
    /// a name longer than [`NAME_SHOWN`] bytes is cut).
    pub(crate) fn push(&self, mut entry: Entry) {
        entry.arguments = None;
        if let Some(name) = &mut entry.name {
            crate::audit::cut(name, NAME_SHOWN);
        }
        let mut calls = lock(&self.0);
        if calls.len() == RECENT {
            calls.pop_front();
        }
        calls.push_back(entry);
    }

    /// Newest first: `{"time": ms since the epoch, "route", "subject"?,
    /// "client_id"?, "method", "name"?, "upstream"?, "outcome", "code"?,
    /// "reason"?, "drift"?: "drifted" (served in warn mode), "ms"}`.
    fn json(&self) -> Vec<Value> {
        lock(&self.0).iter().rev().map(call_json).collect()
    }
}

fn millis(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn call_json(e: &Entry) -> Value {
    let (outcome, code) = e.outcome.word();
    let mut v = json!({
        "time": millis(e.time),
        "route": e.route.as_str(),
        "method": e.method,
        "outcome": outcome,
        "ms": (e.duration.as_secs_f64() * 1e6).round() / 1e3,
    });
    let o = v.as_object_mut().expect("an object");
    let mut put = |k: &str, s: Option<&str>| {
        if let Some(s) = s {
            o.insert(k.into(), s.into());
        }
    };
    put("subject", e.subject.as_ref().map(|n| n.as_str()));
    put("client_id", e.client_id.as_ref().map(|n| n.as_str()));
    put("name", e.name.as_deref());
    put("upstream", e.upstream.as_ref().map(|n| n.as_str()));
    put("reason", e.refused.as_deref());
    if let Some(c) = code {
        o.insert("code".into(), c.into());
    }
    if e.drifted {
        o.insert("drift".into(), "drifted".into());
    }
    v
}

/// A tool as the view lists it: `{"upstream", "name" (the upstream's own),
/// "served", "drift": "approved"|"drifted"|"unpinned", "why"?, "blocked"?}`.
pub(crate) fn tool(upstream: &str, name: &str, served: bool, drift: crate::policy::Drift) -> Value {
    use crate::policy::Drift;
    let mut v = json!({"upstream": upstream, "name": name, "served": served});
    let o = v.as_object_mut().expect("an object");
    match drift {
        Drift::Unguarded => {
            o.insert("drift".into(), "unpinned".into());
        }
        Drift::Approved => {
            o.insert("drift".into(), "approved".into());
        }
        Drift::Drifted { why, block } => {
            o.insert("drift".into(), "drifted".into());
            o.insert("why".into(), why.into());
            o.insert("blocked".into(), block.into());
        }
    }
    v
}

/// One reading of the chart: when, and the totals then.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Point {
    at: u64,
    calls: u64,
    errors: u64,
    refused: u64,
}

/// The readings: the last one whole, the chart's totals.
#[derive(Debug, Default)]
struct Readings {
    last: Sample,
    points: VecDeque<Point>,
}

impl Readings {
    /// Takes `sample`, read at `at` (ms since the epoch).
    fn read(&mut self, at: u64, sample: Sample) {
        if self.points.len() == HISTORY {
            self.points.pop_front();
        }
        self.points.push_back(Point {
            at,
            calls: sample.calls,
            errors: sample.errors,
            refused: sample.refused + sample.auth_failures,
        });
        self.last = sample;
    }

    /// `[[ms, calls, errors, refused], …]`, oldest first.
    fn series(&self) -> Value {
        self.points
            .iter()
            .map(|p| json!([p.at, p.calls, p.errors, p.refused]))
            .collect()
    }
}

/// What the page shows, for one server.
struct Live {
    metrics: &'static Metrics,
    view: Box<dyn Fn() -> Value + Send + Sync>,
    readings: Mutex<Readings>,
    /// The state as last read: every viewer gets this one.
    state: Mutex<Arc<str>>,
}

impl Live {
    /// Reads the metrics, the view and the recent calls at once, into the
    /// state: `{"time", "view": the caller's, "metrics": this reading
    /// ([`Sample`]), "series": the chart's readings, "calls": the recent
    /// calls}`. Once a second, however many watch.
    fn read(&self, now: SystemTime) {
        let sample = sample(&self.metrics.render(false).0);
        let view = (self.view)();
        let mut readings = lock(&self.readings);
        readings.read(millis(now), sample);
        let state = json!({
            "time": millis(now),
            "every_ms": EVERY.as_millis() as u64,
            "view": view,
            "metrics": readings.last,
            "series": readings.series(),
            "calls": recent().map(Recent::json).unwrap_or_default(),
        })
        .to_string();
        drop(readings);
        *lock(&self.state) = state.into();
    }

    fn state(&self) -> String {
        lock(&self.state).to_string()
    }
}

/// The live page of a server whose `view` gives its names and structure:
/// `{"kind": "gateway"|"bridge", "upstreams": [{"name", "state",
/// "reason"?, "era"?, "transport", "prefix"?}], "routes": [{"name",
/// "path", "upstreams": [..], "allow": null | [..]}], "tools": [{"upstream",
/// "name", "served", "drift": "approved"|"drifted"|"unpinned", "why"?}]}`.
/// Reads the metrics every [`EVERY`] from now until the page is dropped.
pub(crate) fn page(
    metrics: &'static Metrics,
    view: impl Fn() -> Value + Send + Sync + 'static,
) -> LivePage {
    let live = Arc::new(Live {
        metrics,
        view: Box::new(view),
        readings: Mutex::default(),
        state: Mutex::new(Arc::from("{}")),
    });
    live.read(SystemTime::now());
    let weak: Weak<Live> = Arc::downgrade(&live);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            match weak.upgrade() {
                Some(live) => live.read(SystemTime::now()),
                None => break,
            }
        }
    });
    LivePage::new(HTML, EVERY, move || live.state())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Name, Outcome};

    fn entry(name: &str, outcome: Outcome) -> Entry {
        Entry {
            time: UNIX_EPOCH + Duration::from_millis(1_700_000_000_123),
            route: Name::new("/mcp"),
            subject: Some(Name::new("alice")),
            client_id: None,
            method: "tools/call",
            name: Some(name.into()),
            upstream: Some(Name::new("time")),
            arguments: Some(
                serde_json::value::RawValue::from_string(r#"{"secret":"s3cr3t"}"#.into()).unwrap(),
            ),
            outcome,
            refused: None,
            drifted: false,
            duration: Duration::from_micros(1500),
        }
    }

    #[test]
    fn recent_calls_are_bounded_newest_first_and_never_hold_arguments() {
        let r = Recent::default();
        for i in 0..RECENT + 7 {
            r.push(entry(&format!("t{i}"), Outcome::Ok));
        }
        r.push(entry("last", Outcome::code(-32602)));
        let calls = r.json();
        assert_eq!(calls.len(), RECENT);
        assert_eq!(
            calls[0],
            json!({"time": 1_700_000_000_123u64, "route": "/mcp", "subject": "alice",
                   "method": "tools/call", "name": "last", "upstream": "time",
                   "outcome": "error", "code": -32602, "ms": 1.5})
        );
        assert_eq!(calls[1]["name"], "t56");
        assert!(!format!("{calls:?}").contains("s3cr3t"));
    }

    #[test]
    fn long_names_are_cut_saying_how_long() {
        let mut s = "é".repeat(200);
        crate::audit::cut(&mut s, 255);
        assert_eq!(s, format!("{}…[400 bytes]", "é".repeat(127)));
        let mut short = "abc".to_owned();
        crate::audit::cut(&mut short, 3);
        assert_eq!(short, "abc");
    }

    #[test]
    fn readings_keep_five_minutes() {
        let mut r = Readings::default();
        for i in 0..HISTORY as u64 + 3 {
            let s = Sample {
                calls: i * 10,
                errors: i,
                refused: 1,
                auth_failures: 2,
                ..Sample::default()
            };
            r.read(i * 1000, s);
        }
        let series = r.series();
        let points = series.as_array().unwrap();
        assert_eq!(points.len(), HISTORY);
        assert_eq!(points[0], json!([3000, 30, 3, 3]));
        assert_eq!(r.last.calls, (HISTORY as u64 + 2) * 10);
    }
}
