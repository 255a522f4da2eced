//! The client's era handshake (REVISIONS.md §6) as one sans-IO state machine:
//! it says what to ask (`initialize`, `server/discover`, `ping`) and how long to
//! wait for each, the driver reports each answer, and it decides whether the
//! server is legacy (2024-11-05 to 2025-11-25) or 2026-07-28, or why neither.
//! Used by the library's `Client` and by the gateway's upstreams alike.
//!
//! It must not know transports, ids, tasks or clocks (waits are durations the
//! driver enforces), nor how `initialize` is built or checked (the driver's
//! legacy lifecycle, [`ClientLifecycle`](super::ClientLifecycle), or a bridge's
//! configured params): only which question comes next.
//!
//! ```text
//! InitializeFirst: --> initialize
//!                  <-- result        -> Legacy
//!                  <-- error answer  -> --> server/discover(v), --> ping (probe_wait each)
//!                                       <-- DiscoverResult  -> Modern
//!                                       <-- ping result first -> Failed(initialize's, note)
//!                                       <-- anything else   -> Failed(initialize's, note)
//!                  timeout, failure, closed -> Failed (no probe)
//! DiscoverFirst:   --> server/discover(v) (probe_wait)
//!                  <-- DiscoverResult -> Modern; modern error or closed -> Failed
//!                  <-- other error, timeout, failure -> --> initialize -> Legacy | Failed
//! LegacyOnly:      --> initialize -> Legacy | Failed
//! ModernOnly:      --> server/discover(v) (answer_wait) -> Modern | Failed
//! every probe:     -32022 naming a 2026-07-28 revision we share: asked again at it, once
//! ```

use std::time::Duration;

use serde_json::value::RawValue;

use crate::jsonrpc::{code, ErrorObject};
use crate::types::{
    ClientCapabilities, DiscoverResult, Implementation, INITIALIZE, PING, SERVER_DISCOVER,
};
use crate::version::{Era, ProtocolVersion, Supported};

/// How the handshake finds the era.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// `initialize` first; only after an error answer, `server/discover` with a
    /// `ping` right behind it (a 2026-07-28-only server answers a stdio
    /// `initialize` with an error of an implementation-defined code, §6). A
    /// legacy server costs one round trip.
    InitializeFirst,
    /// `server/discover` first, bounded by [`HandshakeConfig::probe_wait`], then
    /// `initialize` unless the server showed it speaks 2026-07-28 (§6, "stdio
    /// client").
    DiscoverFirst,
    /// `initialize` only.
    LegacyOnly,
    /// `server/discover` only, bounded by [`HandshakeConfig::answer_wait`].
    ModernOnly,
}

/// What the machine needs to know. Waits are durations the driver enforces
/// from the moment it sends the request.
#[derive(Debug, Clone)]
pub struct HandshakeConfig {
    /// The policy.
    pub policy: Policy,
    /// The revisions we speak: the probe asks at the newest modern one, a
    /// -32022 retry and a `supportedVersions` list are matched against it.
    /// Without a modern revision no probe is sent. Legacy answers are not
    /// checked here (the driver's lifecycle does).
    pub supported: Supported,
    /// Sent in every `server/discover`'s `_meta`
    /// (`io.modelcontextprotocol/clientCapabilities`).
    pub client_capabilities: ClientCapabilities,
    /// Sent in every `server/discover`'s `_meta` (`io.modelcontextprotocol/clientInfo`).
    pub client_info: Implementation,
    /// How long a probe (`server/discover` of `InitializeFirst` and
    /// `DiscoverFirst`, and the `ping` behind it) is waited for. A timeout means
    /// legacy (§6).
    pub probe_wait: Duration,
    /// How long `initialize`, and `ModernOnly`'s `server/discover`, are waited for.
    pub answer_wait: Duration,
}

/// Names one request the machine asked for, for the driver to report its answer
/// under. Never reused within one handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Token(u32);

/// A question to the server.
#[derive(Debug, Clone)]
pub enum Ask {
    /// `initialize`, with the driver's own params (the machine does not build
    /// them; its legacy lifecycle does).
    Initialize,
    /// `server/discover` at `version`; `params` is `{"_meta": {protocolVersion,
    /// clientCapabilities, clientInfo}}` (2026-07-28 "Lifecycle → Discovery").
    Discover {
        /// The revision asked at.
        version: ProtocolVersion,
        /// The request's params, ready to send.
        params: Box<RawValue>,
    },
    /// `ping`, no params (2024-11-05+ "Utilities → Ping": a legacy server MUST
    /// answer it, before initialization too; 2026-07-28 removed it).
    Ping,
}

impl Ask {
    /// The JSON-RPC method.
    pub fn method(&self) -> &'static str {
        match self {
            Ask::Initialize => INITIALIZE,
            Ask::Discover { .. } => SERVER_DISCOVER,
            Ask::Ping => PING,
        }
    }
}

/// A request to send: what, under which token, and how long to wait for it
/// (then report [`Answer::TimedOut`]).
#[derive(Debug, Clone)]
pub struct Outgoing {
    /// Report the answer under this.
    pub token: Token,
    /// The question.
    pub ask: Ask,
    /// How long to wait for the answer.
    pub wait: Duration,
}

/// How a request ended, as the driver saw it.
#[derive(Debug, Clone)]
pub enum Answer {
    /// A JSON-RPC result.
    Result(Box<RawValue>),
    /// A JSON-RPC error answer from the server.
    Error(ErrorObject),
    /// No answer within the request's wait.
    TimedOut,
    /// The request failed otherwise, the connection still up (an answer the
    /// transport could not read, an HTTP failure, an id answered under the
    /// wrong type). Never followed by a probe after `initialize`.
    Failed,
    /// The connection is gone.
    Closed,
}

/// The era found.
#[derive(Debug, Clone)]
pub enum Connected {
    /// A legacy server: its `initialize` result, unchecked (the driver's
    /// lifecycle accepts or refuses its version), then `notifications/initialized`
    /// is the driver's to send.
    Legacy(Box<RawValue>),
    /// A 2026-07-28 server, at `version` (one we speak that its
    /// `supportedVersions` names).
    Modern {
        /// The revision to speak.
        version: ProtocolVersion,
        /// Its `server/discover` result.
        discover: Box<DiscoverResult>,
    },
}

/// Why something failed.
#[derive(Debug)]
pub enum Reason {
    /// The answer the driver reported for this request (an error answer, a
    /// timeout, a failure, the connection closed): the driver words it.
    Ask(Token),
    /// `ping` was answered with a result while `server/discover` was not: a
    /// legacy server, which leaves unknown methods unanswered.
    PingAnswered,
    /// [`HandshakeConfig::supported`] has no 2026-07-28 revision (nothing asked).
    NoModernRevision,
    /// `server/discover` answered, but its `supportedVersions` names no
    /// 2026-07-28 revision we speak.
    NoSharedRevision(Vec<String>),
    /// `server/discover`'s result is no `DiscoverResult`.
    InvalidDiscover(serde_json::Error),
}

impl Reason {
    /// The machine's words for a reason it found itself; `None` for
    /// [`Reason::Ask`], which the driver words.
    pub fn text(&self) -> Option<String> {
        Some(match self {
            Reason::Ask(_) => return None,
            Reason::PingAnswered => "no answer, but the ping sent right after it was answered: a legacy server, which leaves unknown methods unanswered".to_owned(),
            Reason::NoModernRevision => "no 2026-07-28 revision in the supported set".to_owned(),
            Reason::NoSharedRevision(_) => {
                "server/discover names no 2026-07-28 revision we speak".to_owned()
            }
            Reason::InvalidDiscover(e) => format!("server/discover: invalid result: {e}"),
        })
    }
}

/// Why the handshake failed.
#[derive(Debug)]
pub struct Failure {
    /// The failure to report: under `InitializeFirst` the `initialize` error
    /// even when a probe followed it.
    pub reason: Reason,
    /// Why the `server/discover` probe asked after a refused `initialize` did
    /// not find a 2026-07-28 server either (see [`probe_note`]).
    pub probe: Option<Reason>,
    /// `ModernOnly` found no 2026-07-28 server, and nothing says the server is
    /// not a legacy one (no modern error, the connection up): `initialize` may
    /// still connect (the HTTP rules of §6 go on from here).
    pub legacy_possible: bool,
}

impl Failure {
    /// The whole failure as one line: the reason, then the probe's note;
    /// `words` words the driver's reports ([`Reason::Ask`]).
    pub fn text(&self, words: impl Fn(Token) -> String) -> String {
        let say = |r: &Reason| match r {
            Reason::Ask(t) => words(*t),
            other => other.text().unwrap_or_default(),
        };
        match &self.probe {
            Some(p) => format!("{}; {}", say(&self.reason), probe_note(&say(p))),
            None => say(&self.reason),
        }
    }
}

/// The note on a refused `initialize` whose probe failed too, `why` being the
/// probe's failure in the driver's words.
pub fn probe_note(why: &str) -> String {
    format!(
        "server/discover, asked next in case the server speaks only 2026-07-28, failed too ({why})"
    )
}

/// What to do next.
#[derive(Debug)]
pub enum Next {
    /// Send these, in this order, and report each one's answer.
    Send(Vec<Outgoing>),
    /// Nothing to send: wait for the requests still open.
    Wait,
    /// Done: the era. Requests still open are forgotten (never cancelled).
    Connected(Connected),
    /// Done: no era. Requests still open are forgotten.
    Failed(Failure),
}

/// The `data.supported` list of a -32022 `UnsupportedProtocolVersion` error
/// (2026-07-28 "Error codes"), when it has one.
pub fn unsupported_version_list(e: &ErrorObject) -> Option<Vec<String>> {
    if e.code != code::UNSUPPORTED_PROTOCOL_VERSION {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Data {
        supported: Vec<String>,
    }
    let data: Data = serde_json::from_str(e.data.as_ref()?.get()).ok()?;
    Some(data.supported)
}

/// Whether an error is one only a 2026-07-28 server sends (§2): -32020
/// `HeaderMismatch`, -32021 `MissingRequiredClientCapability`, or -32022 with
/// `data.supported`. Such a server is never asked `initialize` (§6).
pub fn is_modern_error(e: &ErrorObject) -> bool {
    e.code == code::HEADER_MISMATCH
        || e.code == code::MISSING_REQUIRED_CLIENT_CAPABILITY
        || unsupported_version_list(e).is_some()
}

/// The open probe.
#[derive(Debug)]
struct Probe {
    discover: Token,
    version: ProtocolVersion,
    retried: bool,
    /// The `ping` behind it (after a refused `initialize`), while unanswered.
    ping: Option<Token>,
    /// The refused `initialize`, when the probe follows one.
    refused: Option<Token>,
}

#[derive(Debug)]
enum State {
    Idle,
    Initializing { token: Token, probed: bool },
    Probing(Probe),
    Done,
}

/// What one probe answer means.
enum Probed {
    Again(ProtocolVersion),
    Modern(ProtocolVersion, Box<DiscoverResult>),
    /// Not a 2026-07-28 server (as far as this answer shows).
    NotModern(Reason),
    /// A 2026-07-28 server's error, or the connection gone: never `initialize`.
    Final(Reason),
}

/// The handshake. [`start`](Self::start) once, then [`on`](Self::on) for each
/// answer until it returns [`Next::Connected`] or [`Next::Failed`]; after that
/// every answer is ignored ([`Next::Wait`]).
#[derive(Debug)]
pub struct Handshake {
    config: HandshakeConfig,
    state: State,
    next_token: u32,
}

impl Handshake {
    /// A handshake by `config`.
    pub fn new(config: HandshakeConfig) -> Self {
        Handshake {
            config,
            state: State::Idle,
            next_token: 0,
        }
    }

    /// Whether it has connected or failed.
    pub fn is_done(&self) -> bool {
        matches!(self.state, State::Done)
    }

    /// The first requests. A second call is [`Next::Wait`].
    pub fn start(&mut self) -> Next {
        if !matches!(self.state, State::Idle) {
            return Next::Wait;
        }
        match self.config.policy {
            Policy::InitializeFirst | Policy::LegacyOnly => self.initialize(false),
            Policy::DiscoverFirst | Policy::ModernOnly => {
                match self.config.supported.latest_modern() {
                    Some(v) => self.probe(v, None, false),
                    None => self.not_modern(Reason::NoModernRevision),
                }
            }
        }
    }

    /// The answer to the request `token`. An unknown or finished token is
    /// [`Next::Wait`].
    pub fn on(&mut self, token: Token, answer: Answer) -> Next {
        match std::mem::replace(&mut self.state, State::Done) {
            State::Initializing { token: t, probed } if t == token => {
                self.on_initialize(token, probed, answer)
            }
            State::Probing(mut p) if p.ping == Some(token) => {
                p.ping = None;
                if matches!(answer, Answer::Result(_)) {
                    // Only a legacy server answers ping with a result; an
                    // error (a 2026-07-28 server's), a timeout, a failure
                    // decides nothing: the probe's own answer will.
                    return self.failed(
                        Reason::Ask(p.refused.unwrap_or(p.discover)),
                        Some(Reason::PingAnswered),
                        false,
                    );
                }
                self.state = State::Probing(p);
                Next::Wait
            }
            State::Probing(p) if p.discover == token => self.on_probe(p, token, answer),
            other => {
                self.state = other;
                Next::Wait
            }
        }
    }

    fn token(&mut self) -> Token {
        let t = Token(self.next_token);
        self.next_token += 1;
        t
    }

    fn initialize(&mut self, probed: bool) -> Next {
        let token = self.token();
        self.state = State::Initializing { token, probed };
        Next::Send(vec![Outgoing {
            token,
            ask: Ask::Initialize,
            wait: self.config.answer_wait,
        }])
    }

    fn discover(&mut self, version: ProtocolVersion) -> Outgoing {
        let meta = super::modern_request_meta(
            version,
            &self.config.client_capabilities,
            Some(&self.config.client_info),
            None,
        );
        let params = serde_json::value::to_raw_value(&serde_json::json!({ "_meta": meta }))
            .expect("a JSON object serializes");
        let wait = match self.config.policy {
            Policy::ModernOnly => self.config.answer_wait,
            _ => self.config.probe_wait,
        };
        Outgoing {
            token: self.token(),
            ask: Ask::Discover { version, params },
            wait,
        }
    }

    /// Sends `server/discover` at `version` (and, after a refused
    /// `initialize`, `ping` right behind it).
    fn probe(&mut self, version: ProtocolVersion, refused: Option<Token>, retried: bool) -> Next {
        let discover = self.discover(version);
        let mut send = vec![];
        let token = discover.token;
        send.push(discover);
        let ping = refused.map(|_| {
            let t = self.token();
            send.push(Outgoing {
                token: t,
                ask: Ask::Ping,
                wait: self.config.probe_wait,
            });
            t
        });
        self.state = State::Probing(Probe {
            discover: token,
            version,
            retried,
            ping,
            refused,
        });
        Next::Send(send)
    }

    fn on_initialize(&mut self, token: Token, probed: bool, answer: Answer) -> Next {
        match answer {
            Answer::Result(raw) => self.done(Next::Connected(Connected::Legacy(raw))),
            Answer::Error(_) if self.config.policy == Policy::InitializeFirst && !probed => {
                match self.config.supported.latest_modern() {
                    Some(v) => self.probe(v, Some(token), false),
                    None => self.failed(Reason::Ask(token), None, false),
                }
            }
            _ => self.failed(Reason::Ask(token), None, false),
        }
    }

    fn on_probe(&mut self, mut p: Probe, token: Token, answer: Answer) -> Next {
        match self.judge(&p, token, answer) {
            Probed::Again(v) => {
                let discover = self.discover(v);
                p.discover = discover.token;
                p.version = v;
                p.retried = true;
                self.state = State::Probing(p);
                Next::Send(vec![discover])
            }
            Probed::Modern(version, discover) => {
                self.done(Next::Connected(Connected::Modern { version, discover }))
            }
            Probed::NotModern(why) | Probed::Final(why) if p.refused.is_some() => {
                let refused = p.refused.expect("checked");
                self.failed(Reason::Ask(refused), Some(why), false)
            }
            Probed::NotModern(why) => self.not_modern(why),
            Probed::Final(why) => self.failed(why, None, false),
        }
    }

    /// The probe found no 2026-07-28 server (and no sign against a legacy one).
    fn not_modern(&mut self, why: Reason) -> Next {
        match self.config.policy {
            Policy::DiscoverFirst => self.initialize(true),
            _ => self.failed(why, None, true),
        }
    }

    /// What one answer to `server/discover` means (§6: a result or a
    /// recognised modern error means modern; any other error, or a timeout,
    /// legacy; the decision does not hinge on one error code).
    fn judge(&self, p: &Probe, token: Token, answer: Answer) -> Probed {
        let supported = &self.config.supported;
        match answer {
            Answer::Result(raw) => {
                let d: DiscoverResult = match serde_json::from_str(raw.get()) {
                    Ok(d) => d,
                    Err(e) => return Probed::NotModern(Reason::InvalidDiscover(e)),
                };
                let mut version = p.version;
                if !d.supported_versions.iter().any(|s| s == version.as_str()) {
                    match supported.pick_from(&d.supported_versions) {
                        Some(v) if v.era() == Era::Modern => version = v,
                        _ => {
                            return Probed::NotModern(Reason::NoSharedRevision(
                                d.supported_versions,
                            ))
                        }
                    }
                }
                Probed::Modern(version, Box::new(d))
            }
            Answer::Error(e) => {
                if let Some(list) = unsupported_version_list(&e) {
                    // Retry once with one of `list`, even the version just
                    // refused; a second refusal is the server's error.
                    return match supported.pick_from(&list) {
                        Some(v) if v.era() == Era::Modern && !p.retried => Probed::Again(v),
                        // A dual-era server that speaks only legacy revisions we share.
                        Some(v) if v.era() == Era::Legacy => Probed::NotModern(Reason::Ask(token)),
                        _ => Probed::Final(Reason::Ask(token)),
                    };
                }
                if is_modern_error(&e) {
                    Probed::Final(Reason::Ask(token))
                } else {
                    Probed::NotModern(Reason::Ask(token))
                }
            }
            Answer::Closed => Probed::Final(Reason::Ask(token)),
            Answer::TimedOut | Answer::Failed => Probed::NotModern(Reason::Ask(token)),
        }
    }

    fn failed(&mut self, reason: Reason, probe: Option<Reason>, legacy_possible: bool) -> Next {
        self.done(Next::Failed(Failure {
            reason,
            probe,
            legacy_possible,
        }))
    }

    fn done(&mut self, next: Next) -> Next {
        self.state = State::Done;
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PROBE: Duration = Duration::from_secs(5);
    const ANSWER: Duration = Duration::from_secs(60);

    fn config(policy: Policy, supported: Supported) -> HandshakeConfig {
        HandshakeConfig {
            policy,
            supported,
            client_capabilities: ClientCapabilities::default(),
            client_info: Implementation::new("t", "1"),
            probe_wait: PROBE,
            answer_wait: ANSWER,
        }
    }

    fn raw(v: serde_json::Value) -> Box<RawValue> {
        serde_json::value::to_raw_value(&v).unwrap()
    }

    fn result(v: serde_json::Value) -> Answer {
        Answer::Result(raw(v))
    }

    fn error(code: i64, data: Option<serde_json::Value>) -> Answer {
        let mut e = ErrorObject::new(code, "no");
        if let Some(d) = data {
            e = e.with_data(&d);
        }
        Answer::Error(e)
    }

    fn discovered(versions: &[&str]) -> Answer {
        result(json!({"supportedVersions": versions, "capabilities": {}}))
    }

    fn init_result() -> Answer {
        result(json!({"protocolVersion": "2025-11-25", "capabilities": {},
                      "serverInfo": {"name": "s", "version": "1"}}))
    }

    fn unsupported(list: &[&str]) -> Answer {
        error(
            -32022,
            Some(json!({"supported": list, "requested": "2026-07-28"})),
        )
    }

    /// Drives a handshake: answers go to the latest request of that method
    /// still unanswered; records what was sent and how it ended.
    struct Run {
        hs: Handshake,
        sent: Vec<Outgoing>,
        answered: Vec<Token>,
        end: Option<Next>,
    }

    impl Run {
        fn new(policy: Policy, supported: Supported) -> Run {
            let mut hs = Handshake::new(config(policy, supported));
            let first = hs.start();
            let mut run = Run {
                hs,
                sent: vec![],
                answered: vec![],
                end: None,
            };
            run.take(first);
            run
        }

        fn take(&mut self, next: Next) {
            match next {
                Next::Send(out) => self.sent.extend(out),
                Next::Wait => {}
                end => {
                    assert!(self.end.is_none(), "ended twice");
                    self.end = Some(end);
                }
            }
        }

        fn answer(&mut self, method: &str, answer: Answer) {
            let token = self
                .sent
                .iter()
                .rev()
                .find(|o| o.ask.method() == method && !self.answered.contains(&o.token))
                .unwrap_or_else(|| panic!("no open {method} in {:?}", self.methods()))
                .token;
            self.answered.push(token);
            let next = self.hs.on(token, answer);
            self.take(next);
        }

        fn methods(&self) -> Vec<&'static str> {
            self.sent.iter().map(|o| o.ask.method()).collect()
        }

        fn method_of(&self, t: Token) -> &'static str {
            self.sent
                .iter()
                .find(|o| o.token == t)
                .unwrap()
                .ask
                .method()
        }

        /// The end in short: `legacy`, `modern <v>`, or `failed <reason>
        /// [probe <reason>] [legacy possible]`; `open` while not ended.
        fn outcome(&self) -> String {
            let reason = |r: &Reason| match r {
                Reason::Ask(t) => self.method_of(*t).to_owned(),
                Reason::PingAnswered => "ping-answered".to_owned(),
                Reason::NoModernRevision => "no-modern-revision".to_owned(),
                Reason::NoSharedRevision(_) => "no-shared-revision".to_owned(),
                Reason::InvalidDiscover(_) => "invalid-discover".to_owned(),
            };
            match &self.end {
                None => "open".to_owned(),
                Some(Next::Connected(Connected::Legacy(_))) => "legacy".to_owned(),
                Some(Next::Connected(Connected::Modern { version, .. })) => {
                    format!("modern {version}")
                }
                Some(Next::Failed(f)) => {
                    let mut s = format!("failed {}", reason(&f.reason));
                    if let Some(p) = &f.probe {
                        s += &format!(" probe {}", reason(p));
                    }
                    if f.legacy_possible {
                        s += " legacy-possible";
                    }
                    s
                }
                Some(other) => panic!("not an end: {other:?}"),
            }
        }
    }

    fn all() -> Supported {
        Supported::default()
    }

    fn legacy_only() -> Supported {
        Supported::new([ProtocolVersion::V2024_11_05, ProtocolVersion::V2025_11_25]).unwrap()
    }

    type Script = Vec<(&'static str, Answer)>;

    /// A row: its name, the policy, the revisions we speak, the server's
    /// answers, the methods sent, the outcome.
    type Row = (
        &'static str,
        Policy,
        Supported,
        Script,
        Vec<&'static str>,
        &'static str,
    );

    /// Every path: the policy, the revisions we speak, the server's answers in
    /// order, then the methods sent and the outcome.
    #[test]
    fn every_path() {
        use Policy::*;
        let d = "server/discover";
        let i = "initialize";
        let p = "ping";
        let rows: Vec<Row> = vec![
            // InitializeFirst
            (
                "legacy server",
                InitializeFirst,
                all(),
                vec![(i, init_result())],
                vec![i],
                "legacy",
            ),
            (
                "refusal then discover result",
                InitializeFirst,
                all(),
                vec![(i, error(-32000, None)), (d, discovered(&["2026-07-28"]))],
                vec![i, d, p],
                "modern 2026-07-28",
            ),
            (
                "refusal then discover refused",
                InitializeFirst,
                all(),
                vec![(i, error(-32602, None)), (d, error(-32601, None))],
                vec![i, d, p],
                "failed initialize probe server/discover",
            ),
            (
                "ping result first means legacy",
                InitializeFirst,
                all(),
                vec![(i, error(-32602, None)), (p, result(json!({})))],
                vec![i, d, p],
                "failed initialize probe ping-answered",
            ),
            (
                "ping error decides nothing",
                InitializeFirst,
                all(),
                vec![
                    (i, error(-32000, None)),
                    (p, error(-32601, None)),
                    (d, discovered(&["2026-07-28"])),
                ],
                vec![i, d, p],
                "modern 2026-07-28",
            ),
            (
                "ping error leaves the wait open",
                InitializeFirst,
                all(),
                vec![(i, error(-32000, None)), (p, error(-32601, None))],
                vec![i, d, p],
                "open",
            ),
            (
                "ping timeout, failure, closed decide nothing",
                InitializeFirst,
                all(),
                vec![
                    (i, error(-32000, None)),
                    (p, Answer::TimedOut),
                    (d, Answer::TimedOut),
                ],
                vec![i, d, p],
                "failed initialize probe server/discover",
            ),
            (
                "ping closed decides nothing",
                InitializeFirst,
                all(),
                vec![
                    (i, error(-32000, None)),
                    (p, Answer::Closed),
                    (d, Answer::Closed),
                ],
                vec![i, d, p],
                "failed initialize probe server/discover",
            ),
            (
                "ping result after the probe failed: ignored",
                InitializeFirst,
                all(),
                vec![
                    (i, error(-32000, None)),
                    (d, Answer::Failed),
                    (p, result(json!({}))),
                ],
                vec![i, d, p],
                "failed initialize probe server/discover",
            ),
            (
                "initialize timeout: no probe",
                InitializeFirst,
                all(),
                vec![(i, Answer::TimedOut)],
                vec![i],
                "failed initialize",
            ),
            (
                "initialize failure: no probe",
                InitializeFirst,
                all(),
                vec![(i, Answer::Failed)],
                vec![i],
                "failed initialize",
            ),
            (
                "initialize closed: no probe",
                InitializeFirst,
                all(),
                vec![(i, Answer::Closed)],
                vec![i],
                "failed initialize",
            ),
            (
                "no modern revision: no probe",
                InitializeFirst,
                legacy_only(),
                vec![(i, error(-32000, None))],
                vec![i],
                "failed initialize",
            ),
            (
                "-32022 retried once",
                InitializeFirst,
                all(),
                vec![
                    (i, error(-32000, None)),
                    (d, unsupported(&["2026-07-28"])),
                    (d, discovered(&["2026-07-28"])),
                ],
                vec![i, d, p, d],
                "modern 2026-07-28",
            ),
            (
                "-32022 twice: the server's error",
                InitializeFirst,
                all(),
                vec![
                    (i, error(-32000, None)),
                    (d, unsupported(&["2026-07-28"])),
                    (d, unsupported(&["2026-07-28"])),
                ],
                vec![i, d, p, d],
                "failed initialize probe server/discover",
            ),
            (
                "ping result after a -32022 retry",
                InitializeFirst,
                all(),
                vec![
                    (i, error(-32000, None)),
                    (d, unsupported(&["2026-07-28"])),
                    (p, result(json!({}))),
                ],
                vec![i, d, p, d],
                "failed initialize probe ping-answered",
            ),
            (
                "modern error after refusal",
                InitializeFirst,
                all(),
                vec![(i, error(-32000, None)), (d, error(-32021, None))],
                vec![i, d, p],
                "failed initialize probe server/discover",
            ),
            (
                "discover result naming no shared revision",
                InitializeFirst,
                all(),
                vec![(i, error(-32000, None)), (d, discovered(&["2099-01-01"]))],
                vec![i, d, p],
                "failed initialize probe no-shared-revision",
            ),
            // DiscoverFirst
            (
                "probe answered",
                DiscoverFirst,
                all(),
                vec![(d, discovered(&["2026-07-28"]))],
                vec![d],
                "modern 2026-07-28",
            ),
            (
                "probe refused, then initialize",
                DiscoverFirst,
                all(),
                vec![(d, error(-32601, None)), (i, init_result())],
                vec![d, i],
                "legacy",
            ),
            (
                "probe timeout, then initialize",
                DiscoverFirst,
                all(),
                vec![(d, Answer::TimedOut), (i, init_result())],
                vec![d, i],
                "legacy",
            ),
            (
                "probe failure, then initialize",
                DiscoverFirst,
                all(),
                vec![(d, Answer::Failed), (i, init_result())],
                vec![d, i],
                "legacy",
            ),
            (
                "probe invalid result, then initialize",
                DiscoverFirst,
                all(),
                vec![(d, result(json!([]))), (i, init_result())],
                vec![d, i],
                "legacy",
            ),
            (
                "probe with legacy versions only, then initialize",
                DiscoverFirst,
                all(),
                vec![(d, discovered(&["2025-11-25"])), (i, init_result())],
                vec![d, i],
                "legacy",
            ),
            (
                "initialize refused after the probe: no second probe",
                DiscoverFirst,
                all(),
                vec![(d, error(-32601, None)), (i, error(-32602, None))],
                vec![d, i],
                "failed initialize",
            ),
            (
                "-32020 never falls back",
                DiscoverFirst,
                all(),
                vec![(d, error(-32020, None))],
                vec![d],
                "failed server/discover",
            ),
            (
                "-32021 never falls back",
                DiscoverFirst,
                all(),
                vec![(d, error(-32021, None))],
                vec![d],
                "failed server/discover",
            ),
            (
                "-32022 naming nothing shared never falls back",
                DiscoverFirst,
                all(),
                vec![(d, unsupported(&["2099-01-01"]))],
                vec![d],
                "failed server/discover",
            ),
            (
                "-32022 retried, then answered",
                DiscoverFirst,
                all(),
                vec![
                    (d, unsupported(&["2026-07-28"])),
                    (d, discovered(&["2026-07-28"])),
                ],
                vec![d, d],
                "modern 2026-07-28",
            ),
            (
                "-32022 twice never falls back",
                DiscoverFirst,
                all(),
                vec![
                    (d, unsupported(&["2026-07-28"])),
                    (d, unsupported(&["2026-07-28"])),
                ],
                vec![d, d],
                "failed server/discover",
            ),
            (
                "-32022 naming a shared legacy revision: initialize",
                DiscoverFirst,
                all(),
                vec![(d, unsupported(&["2025-11-25"])), (i, init_result())],
                vec![d, i],
                "legacy",
            ),
            (
                "-32022 without data: not a modern error",
                DiscoverFirst,
                all(),
                vec![(d, error(-32022, None)), (i, init_result())],
                vec![d, i],
                "legacy",
            ),
            (
                "closed during the probe: no initialize",
                DiscoverFirst,
                all(),
                vec![(d, Answer::Closed)],
                vec![d],
                "failed server/discover",
            ),
            (
                "no modern revision: initialize at once",
                DiscoverFirst,
                legacy_only(),
                vec![(i, init_result())],
                vec![i],
                "legacy",
            ),
            // LegacyOnly
            (
                "legacy only, answered",
                LegacyOnly,
                all(),
                vec![(i, init_result())],
                vec![i],
                "legacy",
            ),
            (
                "legacy only, refused: no probe",
                LegacyOnly,
                all(),
                vec![(i, error(-32000, None))],
                vec![i],
                "failed initialize",
            ),
            // ModernOnly
            (
                "modern only, answered",
                ModernOnly,
                all(),
                vec![(d, discovered(&["2026-07-28"]))],
                vec![d],
                "modern 2026-07-28",
            ),
            (
                "modern only, refused",
                ModernOnly,
                all(),
                vec![(d, error(-32601, None))],
                vec![d],
                "failed server/discover legacy-possible",
            ),
            (
                "modern only, timeout",
                ModernOnly,
                all(),
                vec![(d, Answer::TimedOut)],
                vec![d],
                "failed server/discover legacy-possible",
            ),
            (
                "modern only, modern error",
                ModernOnly,
                all(),
                vec![(d, error(-32020, None))],
                vec![d],
                "failed server/discover",
            ),
            (
                "modern only, closed",
                ModernOnly,
                all(),
                vec![(d, Answer::Closed)],
                vec![d],
                "failed server/discover",
            ),
            (
                "modern only, no shared revision",
                ModernOnly,
                all(),
                vec![(d, discovered(&["2025-11-25"]))],
                vec![d],
                "failed no-shared-revision legacy-possible",
            ),
            (
                "modern only, -32022 retried",
                ModernOnly,
                all(),
                vec![
                    (d, unsupported(&["2026-07-28"])),
                    (d, discovered(&["2026-07-28"])),
                ],
                vec![d, d],
                "modern 2026-07-28",
            ),
            (
                "modern only, no modern revision: nothing sent",
                ModernOnly,
                legacy_only(),
                vec![],
                vec![],
                "failed no-modern-revision legacy-possible",
            ),
        ];
        for (name, policy, supported, script, sent, outcome) in rows {
            let mut run = Run::new(policy, supported);
            for (method, answer) in script {
                // An answer after the end is ignored (the outcome stays).
                run.answer(method, answer);
            }
            assert_eq!(run.methods(), sent, "{name}: sent");
            assert_eq!(run.outcome(), outcome, "{name}: outcome");
        }
    }

    #[test]
    fn waits_and_params() {
        let mut run = Run::new(Policy::InitializeFirst, all());
        assert_eq!(run.sent[0].wait, ANSWER, "initialize: the answer wait");
        run.answer("initialize", error(-32000, None));
        let discover = &run.sent[1];
        assert_eq!(discover.wait, PROBE);
        assert_eq!(run.sent[2].wait, PROBE, "the ping: the probe's wait");
        let Ask::Discover { version, params } = &discover.ask else {
            panic!("discover second")
        };
        assert_eq!(*version, ProtocolVersion::V2026_07_28);
        let p: serde_json::Value = serde_json::from_str(params.get()).unwrap();
        assert_eq!(
            p,
            json!({"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            }})
        );
        let run = Run::new(Policy::ModernOnly, all());
        assert_eq!(run.sent[0].wait, ANSWER, "modern only: the answer wait");
        let run = Run::new(Policy::DiscoverFirst, all());
        assert_eq!(run.sent[0].wait, PROBE, "discover first: the probe wait");
    }

    #[test]
    fn tokens_are_unique_and_answers_after_the_end_are_ignored() {
        let mut run = Run::new(Policy::InitializeFirst, all());
        run.answer("initialize", error(-32000, None));
        run.answer("server/discover", unsupported(&["2026-07-28"]));
        let mut tokens: Vec<Token> = run.sent.iter().map(|o| o.token).collect();
        tokens.sort();
        tokens.dedup();
        assert_eq!(tokens.len(), run.sent.len());
        // The first discover's token is stale now.
        let stale = run.sent[1].token;
        assert!(matches!(
            run.hs.on(stale, discovered(&["2026-07-28"])),
            Next::Wait
        ));
        run.answer("server/discover", discovered(&["2026-07-28"]));
        assert!(run.hs.is_done());
        let ping = run.sent[2].token;
        assert!(matches!(run.hs.on(ping, result(json!({}))), Next::Wait));
        assert!(matches!(run.hs.start(), Next::Wait), "start once");
        assert_eq!(run.outcome(), "modern 2026-07-28");
    }

    #[test]
    fn the_modern_result_is_the_servers() {
        let mut run = Run::new(Policy::DiscoverFirst, all());
        run.answer(
            "server/discover",
            result(
                json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                          "instructions": "hi"}),
            ),
        );
        let Some(Next::Connected(Connected::Modern { discover, .. })) = &run.end else {
            panic!("modern")
        };
        assert_eq!(discover.instructions.as_deref(), Some("hi"));
        assert!(discover.capabilities.tools.is_some());
        let mut run = Run::new(Policy::InitializeFirst, all());
        run.answer("initialize", result(json!({"anything": 1})));
        let Some(Next::Connected(Connected::Legacy(raw))) = &run.end else {
            panic!("legacy")
        };
        assert_eq!(raw.get(), r#"{"anything":1}"#, "passed on unchecked");
    }

    #[test]
    fn a_failure_reads_as_one_line() {
        let mut run = Run::new(Policy::InitializeFirst, all());
        run.answer("initialize", error(-32602, None));
        run.answer("ping", result(json!({})));
        let Some(Next::Failed(f)) = &run.end else {
            panic!("failed")
        };
        assert_eq!(
            f.text(|_| "initialize failed: no (-32602)".to_owned()),
            "initialize failed: no (-32602); server/discover, asked next in case the server \
             speaks only 2026-07-28, failed too (no answer, but the ping sent right after it \
             was answered: a legacy server, which leaves unknown methods unanswered)"
        );
        let mut run = Run::new(Policy::LegacyOnly, all());
        run.answer("initialize", Answer::TimedOut);
        let Some(Next::Failed(f)) = &run.end else {
            panic!("failed")
        };
        assert_eq!(f.text(|_| "late".to_owned()), "late");
    }

    #[test]
    fn modern_errors_are_recognised() {
        let e = |code, data: Option<serde_json::Value>| {
            let mut o = ErrorObject::new(code, "x");
            if let Some(d) = data {
                o = o.with_data(&d);
            }
            o
        };
        assert!(is_modern_error(&e(-32020, None)));
        assert!(is_modern_error(&e(-32021, None)));
        assert!(is_modern_error(&e(-32022, Some(json!({"supported": []})))));
        assert!(
            !is_modern_error(&e(-32022, None)),
            "-32022 without its data"
        );
        assert!(!is_modern_error(&e(
            -32022,
            Some(json!({"supported": "x"}))
        )));
        assert!(!is_modern_error(&e(-32601, None)));
        assert_eq!(
            unsupported_version_list(&e(-32022, Some(json!({"supported": ["a"]})))),
            Some(vec!["a".to_owned()])
        );
    }
}
