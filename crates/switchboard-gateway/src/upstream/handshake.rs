//! The era handshake with a new upstream child, driven over its raw transport:
//! the protocol crate's machine (`lifecycle::handshake`, REVISIONS.md §6)
//! decides what to ask; this driver sends it, enforces each wait, answers
//! the child's `ping` and refuses its other requests meanwhile, and turns the
//! outcome into an [`InitInfo`].
//!
//! Ids: `initialize` goes as `0`, every other question under a negative id,
//! outside the router's (positive) upstream ids, so a late answer (the `ping`
//! of a 2026-07-28 child, a probe that timed out) is dropped as unknown,
//! never given to a call. It must not know downstream sessions or routing.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use serde_json::{Map, Value};
use switchboard_protocol::jsonrpc::{
    code, ErrorObject, ErrorResponse, Id, Message, Notification, Request, Response,
};
use switchboard_protocol::lifecycle::handshake::{
    Answer, Ask as Question, Connected, Handshake, HandshakeConfig, Next, Outgoing, Policy, Token,
};
use switchboard_protocol::types as t;
use switchboard_protocol::types::{
    ClientCapabilities, DiscoverResult, Implementation, InitializeResult,
};
use switchboard_protocol::version::Supported;
use switchboard_protocol::ProtocolVersion;
use switchboard_transport::{Inbound, Receiver, Sender};
use tokio::time::Instant;
use tracing::debug;

use super::connector::Link;
use super::{empty_object, shown, Ask, InitInfo, UpstreamConfig};
use crate::classify::Route;

/// One question in flight.
struct Open {
    id: Id,
    method: &'static str,
    wait: Duration,
    deadline: Instant,
}

/// Runs the handshake with a new child (MCP "Lifecycle": `initialize` then
/// `notifications/initialized`, 2024-11-05 to 2025-11-25; or `server/discover`,
/// 2026-07-28) by [`UpstreamConfig::first`]: [`Ask::Initialize`] asks
/// `initialize` and, after an error answer, `server/discover` with a `ping`
/// right behind it (a `ping` result first means a legacy child, which fails
/// at once with its refusal instead of after `probe_wait`); [`Ask::Discover`]
/// asks `server/discover` first (bounded by `probe_wait`), then
/// `initialize`. `initialize` carries [`UpstreamConfig::init_params`]; the
/// probe their `capabilities` and `clientInfo` in its `_meta`.
///
/// Errors: one line for `/readyz` and the callers: the refusal (e.g.
/// `initialize failed: no such version (-32602)`), the probe's failure as a
/// note after it; or why the child is gone. Unbounded as a whole: the caller
/// bounds it (`init_timeout`).
pub(super) async fn run(
    config: &UpstreamConfig,
    probe_wait: Duration,
    sender: &Sender,
    receiver: &mut Receiver,
    link: &Link,
) -> Result<InitInfo, String> {
    let init: Map<String, Value> =
        serde_json::from_str(config.init_params.get()).unwrap_or_default();
    let client_capabilities: ClientCapabilities = init
        .get("capabilities")
        .and_then(|c| serde_json::from_value(c.clone()).ok())
        .unwrap_or_default();
    let client_info: Implementation = init
        .get("clientInfo")
        .and_then(|c| serde_json::from_value(c.clone()).ok())
        .unwrap_or_else(|| Implementation::new("switchboard-bridge", "0"));
    let mut machine = Handshake::new(HandshakeConfig {
        policy: match config.first {
            Ask::Initialize => Policy::InitializeFirst,
            Ask::Discover => Policy::DiscoverFirst,
        },
        supported: Supported::default(),
        client_capabilities,
        client_info,
        probe_wait,
        answer_wait: config.init_timeout,
    });
    let mut driver = Driver::default();
    let mut next = machine.start();
    loop {
        match next {
            Next::Send(out) => {
                for o in out {
                    driver.send(o, config, sender, link).await;
                }
            }
            Next::Wait => {}
            Next::Connected(c) => return connected(c, sender).await,
            Next::Failed(f) => return Err(f.text(|t| driver.words(t))),
        }
        let (token, answer) = driver.next(receiver, sender).await?;
        next = machine.on(token, answer);
    }
}

/// The driver's side of the handshake: the questions in flight, how each
/// one failed, the answers not yet given to the machine.
#[derive(Default)]
struct Driver {
    open: HashMap<Token, Open>,
    /// How each question failed, in the words of the error it gives.
    words: HashMap<Token, String>,
    reported: VecDeque<(Token, Answer)>,
    /// The last negative id given.
    last_negative: i64,
    /// Why the child's output ended, once it has.
    closed: Option<String>,
}

impl Driver {
    fn words(&self, t: Token) -> String {
        self.words
            .get(&t)
            .cloned()
            .unwrap_or_else(|| "no answer".to_owned())
    }

    fn fail(&mut self, t: Token, answer: Answer, words: String) {
        self.words.insert(t, words);
        self.reported.push_back((t, answer));
    }

    /// Sends one question (`initialize` under id 0 with the configured
    /// params, the others under negative ids), the HTTP client told the
    /// revision it goes under (none for `initialize`, the probe's for
    /// `server/discover`); a child already gone is reported as
    /// [`Answer::Closed`].
    async fn send(&mut self, o: Outgoing, config: &UpstreamConfig, sender: &Sender, link: &Link) {
        let method = o.ask.method();
        let (id, params) = match o.ask {
            Question::Initialize => {
                link.set_version(None);
                (Id::from(0u64), Some(config.init_params.clone()))
            }
            Question::Discover { version, params } => {
                link.set_version(Some(version));
                (self.negative(), Some(params))
            }
            Question::Ping => (self.negative(), None),
        };
        debug!(method, %id, wait = ?o.wait, "handshake: asking");
        let request = Request {
            id: id.clone(),
            method: method.to_owned(),
            params,
        };
        if let Some(why) = self.closed.clone() {
            return self.fail(o.token, Answer::Closed, why);
        }
        if sender.send(Message::Request(request)).await.is_err() {
            return self.fail(
                o.token,
                Answer::Closed,
                "the child closed its stdin".to_owned(),
            );
        }
        let deadline = Instant::now() + o.wait;
        self.open.insert(
            o.token,
            Open {
                id,
                method,
                wait: o.wait,
                deadline,
            },
        );
    }

    fn negative(&mut self) -> Id {
        self.last_negative -= 1;
        Id::from(self.last_negative)
    }

    /// The next answer for the machine: one reported already, or the next
    /// the child gives (or the first wait to run out). Meanwhile the child's
    /// `ping` is answered and its other requests refused (-32600, "not
    /// initialized yet"). Errors: nothing is left to wait for.
    async fn next(
        &mut self,
        receiver: &mut Receiver,
        sender: &Sender,
    ) -> Result<(Token, Answer), String> {
        loop {
            if let Some(answer) = self.reported.pop_front() {
                return Ok(answer);
            }
            if let Some(why) = self.closed.clone() {
                // Every question still open ends with the connection, in
                // the order asked.
                let mut tokens: Vec<Token> = self.open.keys().copied().collect();
                tokens.sort();
                if tokens.is_empty() {
                    return Err(why);
                }
                for t in tokens {
                    self.open.remove(&t);
                    self.fail(t, Answer::Closed, why.clone());
                }
                continue;
            }
            let Some(deadline) = self.open.values().map(|o| o.deadline).min() else {
                return Err("the handshake has nothing left to wait for".to_owned());
            };
            tokio::select! {
                event = receiver.recv() => self.on_inbound(event, sender).await,
                () = tokio::time::sleep_until(deadline) => self.on_deadline(),
            }
        }
    }

    async fn on_inbound(&mut self, event: Option<Inbound>, sender: &Sender) {
        let message = match event {
            None => {
                self.closed = Some("the child's output ended".to_owned());
                return;
            }
            Some(Inbound::Closed { reason }) => {
                self.closed = Some(format!("before initializing: {}", shown(&reason)));
                return;
            }
            // Its answer could not be read (over the line limit).
            Some(Inbound::Failed { id, error }) => {
                if let Some((t, _)) = take(&mut self.open, &id) {
                    let words = format!("its answer could not be read: {}", error.message);
                    self.fail(t, Answer::Failed, words);
                }
                return;
            }
            Some(Inbound::Batch(_)) => return,
            Some(Inbound::Message(m)) => m,
        };
        match message {
            Message::Response(r) => match take(&mut self.open, &r.id) {
                Some((t, _)) => self.reported.push_back((t, Answer::Result(r.result))),
                None => debug!(id = %r.id, "an answer to no question of the handshake"),
            },
            Message::Error(e) => match e.id.as_ref().and_then(|id| take(&mut self.open, id)) {
                Some((t, o)) => {
                    let words = format!(
                        "{} failed: {} ({})",
                        o.method, e.error.message, e.error.code
                    );
                    self.fail(t, Answer::Error(e.error), words);
                }
                None => {
                    debug!(error = %e.error.message, "an error for no question of the handshake")
                }
            },
            Message::Request(r) => {
                let answer = if Route::of(&r.method) == Route::Ping {
                    Message::Response(Response {
                        id: r.id,
                        result: empty_object(),
                    })
                } else {
                    Message::Error(ErrorResponse::new(
                        Some(r.id),
                        ErrorObject::new(code::INVALID_REQUEST, "not initialized yet"),
                    ))
                };
                let _ = sender.send(answer).await;
            }
            other => debug!(?other, "ignored before initialization"),
        }
    }

    /// Every question whose wait has run out, in the order asked.
    fn on_deadline(&mut self) {
        let now = Instant::now();
        let mut late: Vec<Token> = self
            .open
            .iter()
            .filter(|(_, o)| o.deadline <= now)
            .map(|(t, _)| *t)
            .collect();
        late.sort();
        for t in late {
            let o = self.open.remove(&t).expect("listed");
            debug!(method = o.method, id = %o.id, "handshake: no answer in time");
            let words = format!("no answer to {} within {:?}", o.method, o.wait);
            self.fail(t, Answer::TimedOut, words);
        }
    }
}

/// The open question asked under `id`, taken out.
fn take(open: &mut HashMap<Token, Open>, id: &Id) -> Option<(Token, Open)> {
    let t = *open.iter().find(|(_, o)| &o.id == id)?.0;
    open.remove(&t).map(|o| (t, o))
}

/// The era found, as an [`InitInfo`]: a legacy child's `initialize` result
/// (then `notifications/initialized` is sent), or a 2026-07-28 child's
/// discover result in the shape of one (`protocolVersion` the revision
/// chosen, its capabilities, `serverInfo` from `_meta`, `instructions`).
async fn connected(c: Connected, sender: &Sender) -> Result<InitInfo, String> {
    match c {
        Connected::Legacy(raw) => {
            let result: InitializeResult = serde_json::from_str(raw.get())
                .map_err(|e| format!("invalid initialize result: {e}"))?;
            let initialized = Notification {
                method: t::NOTIFICATION_INITIALIZED.to_owned(),
                params: None,
            };
            sender
                .send(Message::Notification(initialized))
                .await
                .map_err(|_| "the child closed its stdin".to_owned())?;
            Ok(InitInfo {
                raw,
                result,
                modern: false,
            })
        }
        Connected::Modern { version, discover } => synthesized(version, &discover),
    }
}

/// A 2026-07-28 child's discover result as an `initialize` result.
fn synthesized(version: ProtocolVersion, d: &DiscoverResult) -> Result<InitInfo, String> {
    let server_info = d
        .server_info()
        .unwrap_or_else(|| Implementation::new("unknown", "0"));
    let mut value = serde_json::json!({
        "protocolVersion": version.as_str(),
        "capabilities": d.capabilities,
        "serverInfo": server_info,
    });
    if let Some(text) = &d.instructions {
        value["instructions"] = Value::String(text.clone());
    }
    let raw = serde_json::value::to_raw_value(&value).map_err(|e| e.to_string())?;
    let result: InitializeResult = serde_json::from_value(value).map_err(|e| e.to_string())?;
    Ok(InitInfo {
        raw,
        result,
        modern: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::connector::Connection;
    use crate::upstream::{Connector, Restart};
    use switchboard_transport::stdio::ChildConfig;
    use switchboard_transport::TransportConfig;

    /// A probe wait no test reaches: an outcome that needed it would show as
    /// the `within` bound failing, never as a pass.
    const LONG: Duration = Duration::from_secs(600);

    fn config(script: &str, first: Ask) -> UpstreamConfig {
        UpstreamConfig {
            name: "hs".to_owned(),
            connector: Connector::Stdio(ChildConfig::new("hs", "python3").arg("-c").arg(script)),
            transport: TransportConfig::default(),
            init_params: serde_json::value::to_raw_value(&serde_json::json!({
                "protocolVersion": "2025-11-25", "capabilities": {"sampling": {}},
                "clientInfo": {"name": "t", "version": "1"}}))
            .unwrap(),
            first,
            init_timeout: LONG,
            restart: Restart::Never,
            backoff_initial: Duration::from_millis(100),
            backoff_max: Duration::from_secs(1),
            ready_wait: Duration::from_secs(10),
            max_in_flight: 8,
            queue_wait: Duration::from_secs(10),
        }
    }

    /// Runs the handshake with `script` as the child, bounded by 30 s.
    async fn handshake(script: &str, first: Ask) -> Result<InitInfo, String> {
        let config = config(script, first);
        let Connection {
            sender,
            mut receiver,
            link,
        } = config
            .connector
            .connect(&config.transport)
            .await
            .expect("python3 starts");
        let outcome = tokio::time::timeout(
            Duration::from_secs(30),
            run(&config, LONG, &sender, &mut receiver, &link),
        )
        .await
        .expect("the handshake ends without waiting out a probe");
        Connection {
            sender,
            receiver,
            link,
        }
        .close()
        .await;
        outcome
    }

    /// A legacy child that refuses `initialize` and leaves `server/discover`
    /// unanswered (no -32601) but answers `ping`: the `ping` sent right behind
    /// the probe decides at once, with the child's own refusal, instead of
    /// after the probe's wait (5 s in the bridge, unbounded here).
    #[tokio::test]
    async fn a_legacy_child_that_ignores_discover_fails_at_its_ping() {
        let child = r#"
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    method = m.get("method")
    if method == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"],
              "error": {"code": -32602, "message": "no such version"}}), flush=True)
    elif method == "ping":
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {}}), flush=True)
"#;
        let why = handshake(child, Ask::Initialize)
            .await
            .expect_err("the child refused initialize");
        assert!(
            why.starts_with("initialize failed: no such version (-32602); server/discover"),
            "{why}"
        );
        assert!(
            why.contains("the ping sent right after it was answered"),
            "decided by the ping, not a timeout: {why}"
        );
    }

    /// A 2026-07-28-only child: it refuses `initialize` and `ping`, answers
    /// `server/discover` (asked under a negative id, with the init params'
    /// capabilities and clientInfo in `_meta`); its result becomes the
    /// `InitInfo`.
    #[tokio::test]
    async fn a_modern_child_is_found_after_its_refusal() {
        let child = r#"
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    method = m.get("method")
    if method == "server/discover":
        meta = m["params"]["_meta"]
        ok = (meta["io.modelcontextprotocol/clientInfo"]["name"] == "t"
              and meta["io.modelcontextprotocol/clientCapabilities"] == {"sampling": {}}
              and m["id"] < 0)
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {
            "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
            "instructions": "ok" if ok else "bad request: " + json.dumps(m),
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "2"}}}}),
            flush=True)
    elif "id" in m:
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"],
              "error": {"code": -32601, "message": "2026-07-28 only"}}), flush=True)
"#;
        let info = handshake(child, Ask::Initialize).await.expect("modern");
        assert!(info.modern);
        assert_eq!(info.result.protocol_version, "2026-07-28");
        assert_eq!(info.result.server_info.name, "modern");
        assert_eq!(info.result.instructions.as_deref(), Some("ok"));
        assert!(info.result.capabilities.tools.is_some());
    }

    /// `Ask::Discover` against a legacy child that refuses the probe: then
    /// `initialize`, under id 0 (the child names itself "wrong id" otherwise),
    /// whose result is the `InitInfo`.
    #[tokio::test]
    async fn discover_first_falls_back_to_initialize() {
        let child = r#"
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    method = m.get("method")
    if method == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "serverInfo": {"name": "legacy" if m["id"] == 0 else "wrong id", "version": "1"}}}),
            flush=True)
    elif "id" in m:
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"],
              "error": {"code": -32601, "message": "unknown"}}), flush=True)
"#;
        let info = handshake(child, Ask::Discover).await.expect("legacy");
        assert!(!info.modern);
        assert_eq!(info.result.server_info.name, "legacy");
        assert_eq!(info.result.protocol_version, "2025-11-25");
    }
}
