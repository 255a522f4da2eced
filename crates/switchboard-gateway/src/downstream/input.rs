//! The `input_required` round trip of a 2026-07-28 upstream (MRTR) asked of a
//! legacy client: each input request of the result sent to the client as a
//! real server→client request on the call's stream, its answer awaited, and
//! the retry's params built (2026-07-28 "Multi round-trip requests";
//! ERA-TRANSLATION.md, "Legacy client → modern server"). One helper for the
//! bridge's legacy sessions (module `session`) and the gateway's.
//!
//! This module must not know a session's state, its upstreams, nor how the
//! client's answers reach it (the caller's waiter table, [`Asker::waiters`]).

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use switchboard_protocol::jsonrpc::{Id, Message, Request};
use switchboard_transport::Sender;
use tokio::sync::oneshot;

/// The session a round trip asks its client through.
pub(crate) struct Asker<'a, S> {
    /// The session's sender.
    pub(crate) tx: &'a Sender,
    /// Where the session hands the client's answers over, by our id (taken
    /// out of it by the session when an answer comes).
    pub(crate) waiters: &'a Mutex<HashMap<Id, oneshot::Sender<Message>, S>>,
    /// The session's counter of server→client request ids.
    pub(crate) next_id: &'a AtomicU64,
    /// Our ids are `{prefix}{n}`.
    pub(crate) prefix: &'a str,
    /// How long the client has to answer each request.
    pub(crate) timeout: Duration,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Asks the client each input request of `result` (an `input_required`
/// result) on the stream of its call `down_id`, and builds the retry's
/// params: `original`'s, with `inputResponses` and the echoed
/// `requestState`. `declared` says, for each request's method and params,
/// whether the client declared what it needs (`Err`: the call's failure,
/// whole); every request is checked before the client is asked anything.
pub(crate) async fn gather<S: BuildHasher>(
    asker: Asker<'_, S>,
    down_id: &Id,
    result: &RawValue,
    original: &Request,
    declared: impl Fn(&str, Option<&RawValue>) -> Result<(), String>,
) -> Result<Box<RawValue>, String> {
    let result: Map<String, Value> =
        serde_json::from_str(result.get()).map_err(|e| e.to_string())?;
    let mut responses = Map::new();
    if let Some(Value::Object(requests)) = result.get("inputRequests") {
        for request in requests.values() {
            let method = request.get("method").and_then(Value::as_str).unwrap_or("");
            let params = request
                .get("params")
                .and_then(|p| serde_json::value::to_raw_value(p).ok());
            declared(method, params.as_deref())?;
        }
        for (key, request) in requests {
            let method = request
                .get("method")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("input request {key:?} has no method"))?
                .to_owned();
            let params = request
                .get("params")
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new()));
            let ours = Id::from(format!(
                "{}{}",
                asker.prefix,
                asker.next_id.fetch_add(1, Ordering::Relaxed)
            ));
            let (tx, rx) = oneshot::channel();
            lock(asker.waiters).insert(ours.clone(), tx);
            let ask =
                Request::new(ours.clone(), method.clone(), &params).map_err(|e| e.to_string())?;
            if asker
                .tx
                .send_related(Message::Request(ask), Some(down_id.clone()))
                .await
                .is_err()
            {
                lock(asker.waiters).remove(&ours);
                return Err("the client went away".to_owned());
            }
            let answer = tokio::time::timeout(asker.timeout, rx).await;
            lock(asker.waiters).remove(&ours);
            match answer {
                Ok(Ok(Message::Response(r))) => {
                    let v: Value =
                        serde_json::from_str(r.result.get()).map_err(|e| e.to_string())?;
                    responses.insert(key.clone(), v);
                }
                Ok(Ok(Message::Error(e))) => {
                    return Err(format!(
                        "the client refused {method}: {} ({})",
                        e.error.message, e.error.code
                    ))
                }
                Ok(_) => return Err(format!("no answer to {method}")),
                Err(_) => return Err(format!("the client did not answer {method} in time")),
            }
        }
    }
    let mut params: Map<String, Value> = match original.params.as_deref() {
        None => Map::new(),
        Some(raw) => serde_json::from_str(raw.get()).map_err(|e| e.to_string())?,
    };
    params.insert("inputResponses".to_owned(), Value::Object(responses));
    match result.get("requestState") {
        Some(state) => params.insert("requestState".to_owned(), state.clone()),
        None => params.remove("requestState"),
    };
    serde_json::value::to_raw_value(&params).map_err(|e| e.to_string())
}
