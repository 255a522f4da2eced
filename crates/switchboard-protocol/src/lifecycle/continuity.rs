//! What carries work across a break, for the HTTP transport: the state a
//! client's requests set up in a Streamable HTTP session, replayed on a new
//! session when the server lost the old one (404), and whether a stateless
//! 2026-07-28 request continues work already begun (an `input_required`
//! retry), which a draining server still lets in. Sans-IO: the transport
//! asks; this module knows the methods, the transport none.

use std::collections::HashMap;

use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::jsonrpc::{Id, Message, Request};
use crate::types as t;

/// The state a client's requests set up in a Streamable HTTP session, which a
/// server that lost the session (404) has lost too: the log level
/// (`logging/setLevel`, 2025-03-26 to 2025-11-25 "Utilities → Logging") and the
/// resource subscriptions (`resources/subscribe` not undone by
/// `resources/unsubscribe`, "Server Features → Resources → Subscriptions"). A
/// host app behind `connect` never sees the session change, so without a replay
/// its subscriptions would go silent and its log level would fall back to the
/// server's default.
#[derive(Debug, Default)]
pub struct SessionSetup {
    /// The `params` of the last `logging/setLevel`.
    log_level: Option<Box<RawValue>>,
    /// `uri` → the `params` of its `resources/subscribe`, in the order made.
    subscriptions: Vec<(String, Box<RawValue>)>,
    /// Numbers the replayed requests' ids (`switchboard-replay-N`).
    replays: u64,
}

impl SessionSetup {
    /// Notes what an outbound request sets up, if anything.
    pub fn note(&mut self, request: &Request) {
        let Some(params) = &request.params else {
            return;
        };
        let uri = || {
            serde_json::from_str::<Value>(params.get())
                .ok()
                .and_then(|p| p.get("uri")?.as_str().map(str::to_owned))
        };
        match request.method.as_str() {
            t::LOGGING_SET_LEVEL => self.log_level = Some(params.clone()),
            t::RESOURCES_SUBSCRIBE => {
                if let Some(uri) = uri() {
                    self.subscriptions.retain(|(u, _)| *u != uri);
                    self.subscriptions.push((uri, params.clone()));
                }
            }
            t::RESOURCES_UNSUBSCRIBE => {
                if let Some(uri) = uri() {
                    self.subscriptions.retain(|(u, _)| *u != uri);
                }
            }
            _ => {}
        }
    }

    /// The requests that set it all up again (the level, then each
    /// subscription in the order made), under ids of their own
    /// (`switchboard-replay-N`), never reused.
    pub fn replay(&mut self) -> Vec<Request> {
        let mut made = Vec::new();
        let level = self.log_level.iter().map(|p| (t::LOGGING_SET_LEVEL, p));
        let subs = self
            .subscriptions
            .iter()
            .map(|(_, p)| (t::RESOURCES_SUBSCRIBE, p));
        for (method, params) in level.chain(subs) {
            self.replays += 1;
            made.push(Request {
                id: Id::from(format!("switchboard-replay-{}", self.replays)),
                method: method.to_owned(),
                params: Some(params.clone()),
            });
        }
        made
    }
}

/// Whether a stateless 2026-07-28 message belongs to work already in progress,
/// which a drain still lets in: a notification (`notifications/cancelled` for
/// a request in flight, say), or the retry of an `input_required` round trip:
/// a `tools/call`, `prompts/get` or `resources/read` (the methods that have
/// one) whose params carry a `requestState` or a non-empty `inputResponses`
/// (2026-07-28 "Multi round-trip requests"). An empty `inputResponses` answers
/// nothing, so it does not make a new request a retry.
pub fn continues_work(message: &Message) -> bool {
    let Message::Request(r) = message else {
        return true;
    };
    if !matches!(
        r.method.as_str(),
        t::TOOLS_CALL | t::PROMPTS_GET | t::RESOURCES_READ
    ) {
        return false;
    }
    let Some(params) = r.params.as_deref() else {
        return false;
    };
    let Ok(members) = serde_json::from_str::<HashMap<String, &RawValue>>(params.get()) else {
        return false;
    };
    members.contains_key("requestState")
        || members.get("inputResponses").is_some_and(|r| {
            serde_json::from_str::<HashMap<String, IgnoredAny>>(r.get())
                .is_ok_and(|m| !m.is_empty())
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(method: &str, params: Value) -> Request {
        Request::new(Id::from(1u64), method, &params).unwrap()
    }

    #[test]
    fn the_setup_replayed_is_the_last_level_and_the_live_subscriptions() {
        let mut setup = SessionSetup::default();
        setup.note(&request("logging/setLevel", json!({"level": "info"})));
        setup.note(&request("resources/subscribe", json!({"uri": "a"})));
        setup.note(&request("resources/subscribe", json!({"uri": "b"})));
        setup.note(&request("resources/unsubscribe", json!({"uri": "a"})));
        setup.note(&request("logging/setLevel", json!({"level": "debug"})));
        setup.note(&request("tools/call", json!({"name": "x"})));
        let replay = setup.replay();
        let seen: Vec<(String, String, String)> = replay
            .iter()
            .map(|r| {
                (
                    serde_json::to_string(&r.id).unwrap(),
                    r.method.clone(),
                    r.params.as_ref().unwrap().get().to_owned(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                (
                    "\"switchboard-replay-1\"".into(),
                    "logging/setLevel".into(),
                    r#"{"level":"debug"}"#.into()
                ),
                (
                    "\"switchboard-replay-2\"".into(),
                    "resources/subscribe".into(),
                    r#"{"uri":"b"}"#.into()
                ),
            ]
        );
        // Ids never repeat across replays.
        assert_eq!(
            serde_json::to_string(&setup.replay()[0].id).unwrap(),
            "\"switchboard-replay-3\""
        );
    }

    #[test]
    fn only_a_retry_with_answers_or_state_continues_work() {
        let table = [
            (
                "tools/call",
                json!({"name": "t", "requestState": "s"}),
                true,
            ),
            (
                "prompts/get",
                json!({"name": "p", "inputResponses": {"k": {}}}),
                true,
            ),
            (
                "resources/read",
                json!({"uri": "u", "requestState": "s"}),
                true,
            ),
            (
                "tools/call",
                json!({"name": "t", "inputResponses": {}}),
                false,
            ),
            ("tools/call", json!({"name": "t"}), false),
            (
                "tools/list",
                json!({"requestState": "s", "inputResponses": {"k": {}}}),
                false,
            ),
        ];
        for (method, params, retry) in table {
            let m = Message::Request(request(method, params.clone()));
            assert_eq!(continues_work(&m), retry, "{method} {params}");
        }
        let cancel = crate::jsonrpc::Notification::new("notifications/cancelled", &json!({}));
        assert!(continues_work(&Message::Notification(cancel.unwrap())));
    }
}
