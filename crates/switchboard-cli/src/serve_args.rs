//! What `switchboard bridge` and `switchboard gateway` both take, defined once
//! with one set of defaults: the listener's `Host` and `Origin` checks, its
//! limits, the timeouts and the runtime's threads. The gateway's file may set
//! each under the flag's name with `_` (`allow_hosts`, `idle_timeout`, …); a
//! flag given wins over the file.
//!
//! Must not know MCP: these are settings, checked and resolved here.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use switchboard_transport::http::server::HttpServerConfig;

/// The flags (none set: the file's value, else the default).
#[derive(Debug, Default, Clone, clap::Args)]
pub struct ServeArgs {
    /// Also accept this `Host` header value (repeatable): `NAME` with any
    /// port or none, `NAME:PORT` with that port only. Always accepted unless
    /// `--no-default-hosts`: `localhost`, `127.0.0.1` and `[::1]` with any
    /// port or none, and the listen address. Behind a Kubernetes Service or
    /// an ingress: the name clients use (`mcp.example.com`).
    #[arg(long = "allow-host", value_name = "NAME[:PORT]")]
    pub allow_hosts: Vec<String>,
    /// Accept only the `--allow-host` values, not the loopback names and the
    /// listen address (at least one `--allow-host` is then needed).
    #[arg(long)]
    pub no_default_hosts: bool,
    /// Also accept this `Origin` (repeatable). Always accepted unless
    /// `--no-default-origins`: `http(s)://` with `localhost`, `127.0.0.1` and
    /// `[::1]` at the listen port, and with the listen address. A request
    /// without `Origin` (not from a browser) is always accepted.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origins: Vec<String>,
    /// Accept only the `--allow-origin` values as `Origin` (none: no browser
    /// page may call it).
    #[arg(long)]
    pub no_default_origins: bool,
    /// The largest request body, in bytes. Default 4194304 (4 MiB).
    #[arg(long, value_name = "BYTES")]
    pub max_body: Option<usize>,
    /// The most client sessions at once; beyond it a new session evicts the
    /// least recently used idle one (and its child), or gets 503 when none
    /// is idle. Default 1024.
    #[arg(long, value_name = "N")]
    pub max_sessions: Option<usize>,
    /// End a session (and its own child) after this long without requests:
    /// `90s`, `30m`, `2h`, or plain seconds; `0` never. Default 30m.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub idle_timeout: Option<Duration>,
    /// The reconnection delay sent in each SSE stream's priming event to
    /// clients of 2025-11-25 and later (the `retry` field): how long a client
    /// whose stream broke waits before it resumes it with `Last-Event-ID`.
    /// `0`: no `retry` field. At most `1h`. Default 1s.
    #[arg(long, value_name = "DURATION", value_parser = parse_sse_retry)]
    pub sse_retry: Option<Duration>,
    /// Give up on a request when its upstream sends nothing for it this long
    /// (the client gets an error, the upstream `notifications/cancelled`).
    /// Default 5m.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub request_timeout: Option<Duration>,
    /// How long a call held for a 2026-07-28 client's `input_required` round
    /// trip (its legacy upstream asked for sampling, elicitation or roots)
    /// waits for the client's retry before it is cancelled upstream. Shorter
    /// frees a legacy upstream sooner; longer leaves a person more time to
    /// answer. Default 5m.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub held_call_timeout: Option<Duration>,
    /// The most requests in flight on one upstream connection (child); more
    /// wait for a free slot. Default 64.
    #[arg(long, value_name = "N")]
    pub max_in_flight: Option<usize>,
    /// How long an upstream has to answer `initialize` at each (re)start.
    /// Default 30s.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub init_timeout: Option<Duration>,
    /// How long requests in flight may finish after SIGTERM. Default 10s.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub drain_timeout: Option<Duration>,
    /// Threads of the runtime. 1 (the default): everything on one thread, no
    /// cross-thread wake-ups: the lowest latency and CPU per call for a
    /// sidecar, whose stdio server is the bottleneck long before one core is
    /// (docs/benchmarks.md measures both). N > 1: a work-stealing runtime of
    /// N workers, for many sessions on a big machine.
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
}

/// The same settings as a configuration file holds them (durations as text:
/// `"90s"`, `"30m"`), each optional.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct ServeFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_hosts: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_default_hosts: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_origins: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_default_origins: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_body: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sessions: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sse_retry: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_timeout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_call_timeout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_timeout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain_timeout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
}

/// The file's keys of [`ServeFile`], for "did you mean" and the schema test.
#[cfg(test)]
pub const FILE_KEYS: [&str; 14] = [
    "allow_hosts",
    "no_default_hosts",
    "allow_origins",
    "no_default_origins",
    "max_body",
    "max_sessions",
    "idle_timeout",
    "sse_retry",
    "request_timeout",
    "held_call_timeout",
    "max_in_flight",
    "init_timeout",
    "drain_timeout",
    "threads",
];

/// The settings in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Serve {
    pub allow_hosts: Vec<String>,
    pub default_hosts: bool,
    pub allow_origins: Vec<String>,
    pub default_origins: bool,
    /// Bytes.
    pub max_body: usize,
    pub max_sessions: usize,
    /// `None`: never.
    pub idle_timeout: Option<Duration>,
    /// `None`: no `retry` field.
    pub sse_retry: Option<Duration>,
    pub request_timeout: Duration,
    pub held_call_timeout: Duration,
    pub max_in_flight: usize,
    pub init_timeout: Duration,
    pub drain_timeout: Duration,
    pub threads: usize,
}

impl Default for Serve {
    /// The defaults of bridge and gateway alike.
    fn default() -> Self {
        Serve {
            allow_hosts: Vec::new(),
            default_hosts: true,
            allow_origins: Vec::new(),
            default_origins: true,
            max_body: 4 * 1024 * 1024,
            max_sessions: 1024,
            idle_timeout: Some(Duration::from_secs(30 * 60)),
            sse_retry: Some(Duration::from_secs(1)),
            request_timeout: Duration::from_secs(300),
            held_call_timeout: Duration::from_secs(300),
            max_in_flight: 64,
            init_timeout: Duration::from_secs(30),
            drain_timeout: Duration::from_secs(10),
            threads: 1,
        }
    }
}

/// A setting that cannot work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeProblem {
    /// The file's key of the setting.
    pub key: &'static str,
    /// Whether a flag set it (else the file).
    pub from_flag: bool,
    /// What is wrong with it.
    pub what: String,
}

impl std::fmt::Display for ServeProblem {
    /// `--flag: what`, or `key: what`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.from_flag {
            true => write!(f, "--{}: {}", self.key.replace('_', "-"), self.what),
            false => write!(f, "{}: {}", self.key, self.what),
        }
    }
}

impl ServeArgs {
    /// The settings: each flag given, else the file's value, else the
    /// default. Errors: each setting that cannot work (a bad duration, a zero
    /// that cannot work, `no_default_hosts` with no host allowed).
    pub fn resolve(&self, file: &ServeFile) -> Result<Serve, Vec<ServeProblem>> {
        let d = Serve::default();
        let mut problems = Vec::new();
        let mut bad = |key: &'static str, from_flag: bool, what: String| {
            problems.push(ServeProblem {
                key,
                from_flag,
                what,
            })
        };
        // A duration: the flag's, else the file's text; `positive`: not 0.
        let mut duration = |flag: Option<Duration>,
                            text: &Option<String>,
                            key: &'static str,
                            positive: bool|
         -> Option<Duration> {
            let (value, from_flag) = match (flag, text.as_deref()) {
                (Some(v), _) => (v, true),
                (None, Some(t)) => {
                    let parsed = match key {
                        "sse_retry" => parse_sse_retry(t),
                        _ => parse_duration(t),
                    };
                    match parsed {
                        Ok(v) => (v, false),
                        Err(e) => {
                            bad(key, false, e.to_string());
                            return None;
                        }
                    }
                }
                (None, None) => return None,
            };
            if positive && value.is_zero() {
                bad(key, from_flag, "must be more than 0".into());
                return None;
            }
            Some(value)
        };
        let idle_timeout = duration(self.idle_timeout, &file.idle_timeout, "idle_timeout", false)
            .map_or(d.idle_timeout, Some);
        let sse_retry =
            duration(self.sse_retry, &file.sse_retry, "sse_retry", false).map_or(d.sse_retry, Some);
        let request_timeout = duration(
            self.request_timeout,
            &file.request_timeout,
            "request_timeout",
            true,
        )
        .unwrap_or(d.request_timeout);
        let held_call_timeout = duration(
            self.held_call_timeout,
            &file.held_call_timeout,
            "held_call_timeout",
            true,
        )
        .unwrap_or(d.held_call_timeout);
        let init_timeout = duration(self.init_timeout, &file.init_timeout, "init_timeout", true)
            .unwrap_or(d.init_timeout);
        let drain_timeout = duration(
            self.drain_timeout,
            &file.drain_timeout,
            "drain_timeout",
            false,
        )
        .unwrap_or(d.drain_timeout);
        let mut count = |flag: Option<usize>, file: Option<usize>, key: &'static str, default| {
            let v = flag.or(file).unwrap_or(default);
            if v == 0 {
                bad(key, flag.is_some(), "must be at least 1".into());
            }
            v
        };
        let max_body = count(self.max_body, file.max_body, "max_body", d.max_body);
        let max_sessions = count(
            self.max_sessions,
            file.max_sessions,
            "max_sessions",
            d.max_sessions,
        );
        let max_in_flight = count(
            self.max_in_flight,
            file.max_in_flight,
            "max_in_flight",
            d.max_in_flight,
        );
        let threads = count(self.threads, file.threads, "threads", d.threads);
        // A list given as flags replaces the file's.
        let (allow_hosts, hosts_flag) = match &file.allow_hosts {
            _ if !self.allow_hosts.is_empty() => (self.allow_hosts.clone(), true),
            Some(listed) => (listed.clone(), false),
            None => (Vec::new(), false),
        };
        let allow_origins = match &file.allow_origins {
            _ if !self.allow_origins.is_empty() => self.allow_origins.clone(),
            Some(listed) => listed.clone(),
            None => Vec::new(),
        };
        let no_default_hosts = self.no_default_hosts || file.no_default_hosts == Some(true);
        let no_default_origins = self.no_default_origins || file.no_default_origins == Some(true);
        if let Some(empty) = allow_hosts.iter().find(|h| h.trim().is_empty()) {
            bad(
                "allow_host",
                hosts_flag,
                format!("needs a host name, got {empty:?}"),
            );
        }
        if no_default_hosts && allow_hosts.is_empty() {
            bad(
                "no_default_hosts",
                self.no_default_hosts,
                "needs at least one allowed host (--allow-host, allow_hosts): else every request gets 403".into(),
            );
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(Serve {
            allow_hosts,
            default_hosts: !no_default_hosts,
            allow_origins,
            default_origins: !no_default_origins,
            max_body,
            max_sessions,
            // 0: never, and no `retry` field.
            idle_timeout: idle_timeout.filter(|t| !t.is_zero()),
            sse_retry: sse_retry.filter(|t| !t.is_zero()),
            request_timeout,
            held_call_timeout,
            max_in_flight,
            init_timeout,
            drain_timeout,
            threads,
        })
    }
}

impl Serve {
    /// Writes the listener's part into `http`.
    pub fn apply(&self, http: &mut HttpServerConfig) {
        http.max_sessions = self.max_sessions;
        http.max_body_bytes = self.max_body;
        http.session_idle_timeout = self.idle_timeout;
        http.sse_retry = self.sse_retry;
        http.allowed_hosts = self.allow_hosts.clone();
        http.default_hosts = self.default_hosts;
        http.allowed_origins = self.allow_origins.clone();
        http.default_origins = self.default_origins;
    }

    /// The runtime these settings ask for: one thread, or a work-stealing
    /// runtime of [`Serve::threads`] workers.
    pub fn runtime(&self) -> std::io::Result<tokio::runtime::Runtime> {
        let mut builder = if self.threads <= 1 {
            tokio::runtime::Builder::new_current_thread()
        } else {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(self.threads);
            b
        };
        builder.enable_all().build()
    }
}

/// The warnings for listeners other hosts can reach (not loopback): `listen`
/// while `open` paths serve MCP without authorization (the legacy HTTP+SSE
/// ones included), and an `admin` listener, whose metrics and live page name
/// callers, upstreams and tools and take no credentials. Empty when there is
/// nothing to warn of.
pub fn exposure_warnings(
    listen: std::net::SocketAddr,
    open: &[&str],
    admin: Option<std::net::SocketAddr>,
) -> Vec<String> {
    let mut out = Vec::new();
    if !listen.ip().is_loopback() && !open.is_empty() {
        out.push(format!(
            "listening on {listen}, which other hosts can reach, with no authorization on {}: \
             anyone who reaches it may call every tool (give the --auth-* flags or an auth \
             table, or listen on 127.0.0.1)",
            open.join(", ")
        ));
    }
    if let Some(admin) = admin.filter(|a| !a.ip().is_loopback()) {
        out.push(format!(
            "the admin listener on {admin} is reachable by other hosts: its metrics and \
             live page (/ui) show callers, upstreams and tools to anyone who reaches it, \
             with no credentials (keep it on 127.0.0.1, or behind a network policy)"
        ));
    }
    out
}

/// Why a duration was refused ([`parse_duration`], [`parse_sse_retry`]);
/// each says what was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not a number before the unit.
    #[error("{0:?} is not a duration: write e.g. \"5s\", \"30m\", \"2h\" or \"250ms\"")]
    NotANumber(String),
    /// A unit other than `ms`, `s`, `m`, `h`.
    #[error("unknown unit {unit:?} in {text:?}: write e.g. \"5s\", \"30m\", \"2h\" or \"250ms\"")]
    UnknownUnit { unit: String, text: String },
    /// More seconds than a `u64` holds.
    #[error("{0:?} is too long a duration")]
    TooLong(String),
    /// An SSE `retry` over an hour.
    #[error("{0:?} is longer than the most, 1h")]
    OverAnHour(String),
}

/// A duration: `250ms`, `90s`, `30m`, `2h`, or plain seconds (`12`).
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let n: u64 = number
        .parse()
        .map_err(|_| DurationError::NotANumber(text.to_owned()))?;
    let secs = |factor: u64| {
        n.checked_mul(factor)
            .map(Duration::from_secs)
            .ok_or_else(|| DurationError::TooLong(text.to_owned()))
    };
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" => secs(1),
        "m" => secs(60),
        "h" => secs(3600),
        _ => Err(DurationError::UnknownUnit {
            unit: unit.to_owned(),
            text: text.to_owned(),
        }),
    }
}

/// `--sse-retry`: a duration of at most an hour. A longer reconnection delay is
/// a mistake, and clients would misread one: browsers' `EventSource` keeps it in
/// a timer that overflows past 2^31 - 1 ms and then fires at once.
pub fn parse_sse_retry(text: &str) -> Result<Duration, DurationError> {
    const MAX: Duration = Duration::from_secs(3600);
    let d = parse_duration(text)?;
    if d > MAX {
        return Err(DurationError::OverAnHour(text.to_owned()));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units_or_plain_seconds() {
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("30m").unwrap(), Duration::from_secs(1800));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("12").unwrap(), Duration::from_secs(12));
        for bad in ["soon", "5d", "s", "18446744073709551615h"] {
            let e = parse_duration(bad).unwrap_err().to_string();
            assert!(e.contains("\"5s\"") || e.contains("too long"), "{bad}: {e}");
        }
        assert_eq!(parse_sse_retry("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_sse_retry("1h").unwrap(), Duration::from_secs(3600));
        for bad in ["61m", "2h"] {
            assert!(parse_sse_retry(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_an_open_path_on_a_reachable_address_is_warned_of() {
        let any: std::net::SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let local: std::net::SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let v6: std::net::SocketAddr = "[::1]:8080".parse().unwrap();
        let warned = exposure_warnings(any, &["/mcp", "/sse", "/message"], None);
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert!(warned[0].contains("0.0.0.0:8080") && warned[0].contains("/mcp, /sse, /message"));
        assert!(
            exposure_warnings(any, &[], None).is_empty(),
            "every path protected"
        );
        assert!(exposure_warnings(local, &["/mcp"], None).is_empty());
        assert!(exposure_warnings(v6, &["/mcp"], None).is_empty());
        // An admin listener other hosts reach: warned of, even when the MCP
        // listener is loopback or protected.
        let admin: std::net::SocketAddr = "0.0.0.0:9464".parse().unwrap();
        let warned = exposure_warnings(local, &["/mcp"], Some(admin));
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert!(
            warned[0].starts_with("the admin listener on 0.0.0.0:9464"),
            "{warned:?}"
        );
        assert!(exposure_warnings(any, &[], Some(local)).is_empty());
    }

    #[test]
    fn nothing_given_is_the_defaults() {
        let s = ServeArgs::default().resolve(&ServeFile::default()).unwrap();
        assert_eq!(s, Serve::default());
    }

    #[test]
    fn a_flag_wins_over_the_file_which_wins_over_the_default() {
        let file = ServeFile {
            allow_hosts: Some(vec!["mcp.example.com".into()]),
            max_sessions: Some(50),
            idle_timeout: Some("0".into()),
            drain_timeout: Some("3s".into()),
            threads: Some(4),
            ..ServeFile::default()
        };
        let s = ServeArgs::default().resolve(&file).unwrap();
        assert_eq!(s.allow_hosts, ["mcp.example.com"]);
        assert_eq!(s.max_sessions, 50);
        assert_eq!(s.idle_timeout, None, "0: never");
        assert_eq!(s.drain_timeout, Duration::from_secs(3));
        assert_eq!(s.threads, 4);
        assert_eq!(s.max_body, Serve::default().max_body);
        let flags = ServeArgs {
            allow_hosts: vec!["gw.internal".into()],
            max_sessions: Some(7),
            ..ServeArgs::default()
        };
        let s = flags.resolve(&file).unwrap();
        assert_eq!(s.allow_hosts, ["gw.internal"]);
        assert_eq!(s.max_sessions, 7);
        assert_eq!(s.threads, 4);
    }

    #[test]
    fn settings_that_cannot_work_are_named_as_written() {
        let file = ServeFile {
            max_body: Some(0),
            request_timeout: Some("0s".into()),
            idle_timeout: Some("soon".into()),
            no_default_hosts: Some(true),
            ..ServeFile::default()
        };
        let flags = ServeArgs {
            threads: Some(0),
            ..ServeArgs::default()
        };
        let problems = flags.resolve(&file).unwrap_err();
        let all: Vec<String> = problems.iter().map(ToString::to_string).collect();
        let all = all.join("\n");
        for expected in [
            "idle_timeout: \"soon\" is not a duration",
            "request_timeout: must be more than 0",
            "max_body: must be at least 1",
            "--threads: must be at least 1",
            "no_default_hosts: needs at least one allowed host",
        ] {
            assert!(all.contains(expected), "{expected:?} in:\n{all}");
        }
    }
}
