//! Multi round-trip requests (MRTR, 2026-07-28 "Base protocol → Multi round-trip
//! requests"; REVISIONS.md §5.5): how a handler's [`ToolContext`](super::ToolContext)
//! asks (`elicit`, `create_message`, `list_roots`) are served for a 2026-07-28
//! request, with the same handler code as a legacy session's server→client requests.
//!
//! One [`Round`] per attempt of a `tools/call` or `prompts/get`:
//!
//! 1. The handler runs from the start. Each ask gets a key: the one the handler
//!    chose (`elicit_as`), else `input-<n>` where `n` counts the handler's asks from 0
//!    in the order it makes them, so a re-run handler derives the same keys.
//! 2. An ask whose key has an answer (this attempt's `params.inputResponses`, or an
//!    answer of an earlier round carried in the sealed `requestState`) that decodes as
//!    the method's result completes with it. Otherwise the ask is recorded and never
//!    completes; once the handler cannot progress ([`run`] sees it pending with asks
//!    recorded: concurrent asks, e.g. `tokio::join!`, are all recorded by then), it is
//!    dropped and the request is answered `{resultType: "input_required",
//!    inputRequests, requestState}`.
//! 3. An ask for a capability the request did not declare in `_meta` ends the request
//!    with -32021 `MissingRequiredClientCapability`
//!    (`RequestContext::check_input_request`); never asked.
//!
//! **`requestState`** is `base64url(payload) "." base64url(HMAC-SHA256(key, payload))`
//! with a per-process random 256-bit key ([`Sealer`]): the payload binds the method,
//! a SHA-256 digest of the params without `inputResponses`, `requestState` and `_meta`
//! (which legitimately changes between attempts: progress token, trace context), an
//! expiry ([`STATE_TTL`]), and the answers used so far. A state that fails any check
//! is -32602. It is not bound to a principal (this layer knows none) and not
//! encrypted: the answers it carries are the client's own.
//!
//! This module must not know transports or JSON-RPC ids.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::task::Poll;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use switchboard_protocol::jsonrpc::{code, ErrorObject};
use switchboard_protocol::lifecycle::RequestContext;
use switchboard_protocol::types::{
    Implementation, InputRequest, InputRequiredResult, InputResponse, ServerRequest,
};

use super::context::{BoxFuture, ContextError};

/// How long a `requestState` stays valid: 10 minutes.
pub const STATE_TTL: Duration = Duration::from_secs(600);

/// The methods that may answer `input_required` (2026-07-28: `tools/call`,
/// `prompts/get`, `resources/read`; this server's handlers ask only in the first two).
pub(crate) fn allows_input_required(method: &str) -> bool {
    matches!(method, "tools/call" | "prompts/get" | "resources/read")
}

/// The per-process sealing key.
struct Sealer {
    key: [u8; 32],
}

fn sealer() -> &'static Sealer {
    static SEALER: OnceLock<Sealer> = OnceLock::new();
    SEALER.get_or_init(|| {
        let mut key = [0u8; 32];
        if let Err(e) = getrandom::fill(&mut key) {
            // No OS randomness: fall back to a key nobody else can predict either
            // (time and address entropy); logged, as it is weaker.
            tracing::warn!(error = %e, "the OS random source failed; requestState key from the clock");
            let seed = format!("{:?}{:p}", SystemTime::now(), &key);
            key.copy_from_slice(&Sha256::digest(seed.as_bytes()));
        }
        Sealer { key }
    })
}

impl Sealer {
    fn mac(&self, payload: &[u8]) -> Hmac<Sha256> {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.key).expect("HMAC takes any key length");
        mac.update(payload);
        mac
    }

    fn seal(&self, payload: &Value) -> String {
        let text = URL_SAFE_NO_PAD.encode(payload.to_string());
        let tag = self.mac(text.as_bytes()).finalize().into_bytes();
        format!("{text}.{}", URL_SAFE_NO_PAD.encode(tag))
    }

    fn open(&self, state: &str) -> Option<Value> {
        let (text, tag) = state.split_once('.')?;
        let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
        self.mac(text.as_bytes()).verify_slice(&tag).ok()?;
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(text).ok()?).ok()
    }
}

/// Writes `v` with object keys sorted, so equal params digest equally whatever
/// their member order.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The SHA-256 digest (base64url) of `params` without the MRTR members and `_meta`.
fn params_digest(params: &Map<String, Value>) -> String {
    let mut p = params.clone();
    p.remove("inputResponses");
    p.remove("requestState");
    p.remove("_meta");
    let mut text = String::new();
    canonical(&Value::Object(p), &mut text);
    URL_SAFE_NO_PAD.encode(Sha256::digest(text.as_bytes()))
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn invalid_state(why: &str) -> ErrorObject {
    ErrorObject::new(code::INVALID_PARAMS, format!("requestState refused: {why}"))
}

/// One attempt of a 2026-07-28 request that may answer `input_required`.
#[derive(Debug)]
pub(crate) struct Round {
    method: String,
    digest: String,
    context: RequestContext,
    /// Answers offered: the state's, then this attempt's `inputResponses` (which win).
    answers: BTreeMap<String, Value>,
    /// Answers the handler took, carried into the next state.
    used: Mutex<BTreeMap<String, Value>>,
    next: AtomicUsize,
    asks: Mutex<BTreeMap<String, InputRequest>>,
    fatal: Mutex<Option<ErrorObject>>,
}

impl Round {
    /// Reads the attempt's `inputResponses` and verifies its `requestState`.
    ///
    /// Errors (-32602): a `requestState` that is not a string, fails its HMAC, names
    /// another method or other params, or has expired; `inputResponses` that is
    /// neither absent, `null` nor an object.
    pub(crate) fn new(
        method: &str,
        params: Option<&Map<String, Value>>,
        context: RequestContext,
    ) -> Result<Round, ErrorObject> {
        let empty = Map::new();
        let params = params.unwrap_or(&empty);
        let digest = params_digest(params);
        let mut answers = BTreeMap::new();
        match params.get("requestState") {
            None | Some(Value::Null) => {}
            Some(Value::String(state)) => {
                let payload = sealer()
                    .open(state)
                    .ok_or_else(|| invalid_state("integrity check failed"))?;
                if payload["m"] != json!(method) || payload["d"] != json!(digest) {
                    return Err(invalid_state(
                        "it was issued for another request (method or params differ)",
                    ));
                }
                if payload["e"].as_u64().is_none_or(|e| e < now_secs()) {
                    return Err(invalid_state("it has expired"));
                }
                if let Some(Value::Object(a)) = payload.get("a") {
                    answers.extend(a.iter().map(|(k, v)| (k.clone(), v.clone())));
                }
            }
            Some(_) => return Err(invalid_state("it must be a string")),
        }
        match params.get("inputResponses") {
            None | Some(Value::Null) => {}
            Some(Value::Object(r)) => {
                answers.extend(r.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            Some(_) => {
                return Err(ErrorObject::new(
                    code::INVALID_PARAMS,
                    "inputResponses must be an object",
                ))
            }
        }
        Ok(Round {
            method: method.to_owned(),
            digest,
            context,
            answers,
            used: Mutex::new(BTreeMap::new()),
            next: AtomicUsize::new(0),
            asks: Mutex::new(BTreeMap::new()),
            fatal: Mutex::new(None),
        })
    }

    fn blocked(&self) -> bool {
        !lock(&self.asks).is_empty() || lock(&self.fatal).is_some()
    }

    /// A handler's ask (see the module documentation): the answer, or a future that
    /// never completes.
    pub(crate) fn ask(
        &self,
        key: Option<String>,
        request: ServerRequest,
    ) -> BoxFuture<'static, Result<Value, ContextError>> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let key = key.unwrap_or_else(|| format!("input-{n}"));
        let params = request.to_request(0).params;
        if let Err(e) = self
            .context
            .check_input_request(request.method(), params.as_deref())
        {
            lock(&self.fatal).get_or_insert_with(|| e.to_error_object());
            return Box::pin(std::future::pending());
        }
        let input = match request {
            ServerRequest::CreateMessage(p) => InputRequest::create_message(*p),
            ServerRequest::Elicit(p) => InputRequest::elicit(*p),
            ServerRequest::ListRoots(_) => InputRequest::list_roots(),
            other => {
                let method = other.method().to_owned();
                return Box::pin(async move {
                    Err(ContextError::Peer(format!(
                        "{method} cannot be asked in an input_required result"
                    )))
                });
            }
        };
        if let Some(answer) = self.answers.get(&key) {
            if InputResponse::for_request(&input, answer.clone()).is_ok() {
                lock(&self.used).insert(key, answer.clone());
                let answer = answer.clone();
                return Box::pin(async move { Ok(answer) });
            }
            tracing::debug!(%key, "an input response that does not fit its request; asking again");
        }
        lock(&self.asks).insert(key, input);
        Box::pin(std::future::pending())
    }

    /// The `input_required` result of a blocked attempt, or the error that ended it.
    fn interim(&self) -> Result<Value, ErrorObject> {
        if let Some(e) = lock(&self.fatal).take() {
            return Err(e);
        }
        let asks = std::mem::take(&mut *lock(&self.asks));
        let used = lock(&self.used).clone();
        let payload = json!({
            "m": self.method,
            "d": self.digest,
            "e": now_secs() + STATE_TTL.as_secs(),
            "a": used,
        });
        let state = sealer().seal(&payload);
        let result = InputRequiredResult::new(Some(asks), Some(state))
            .map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))?;
        serde_json::to_value(result)
            .map_err(|e| ErrorObject::new(code::INTERNAL_ERROR, e.to_string()))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs the request's answer under `round` (`started`, from
/// [`Server::start`](super::Server::start)): its outcome if it completes, else,
/// as soon as it is pending with asks recorded, the `input_required` result
/// (with `_meta["io.modelcontextprotocol/serverInfo"]` = `server_info`) or the
/// error that ended it.
pub(crate) async fn run(
    round: &Round,
    server_info: &Implementation,
    started: super::Started,
) -> Result<Box<serde_json::value::RawValue>, ErrorObject> {
    match started {
        super::Started::Ready(answer) => answer,
        super::Started::Pending(handling) => run_pending(round, server_info, handling).await,
    }
}

/// [`run`] for a handler still running; `handling` is boxed, so it can be
/// dropped (the handler stopped) before the answer is built.
async fn run_pending(
    round: &Round,
    server_info: &Implementation,
    mut handling: BoxFuture<'_, Result<Box<serde_json::value::RawValue>, ErrorObject>>,
) -> Result<Box<serde_json::value::RawValue>, ErrorObject> {
    let outcome = std::future::poll_fn(|cx| match handling.as_mut().poll(cx) {
        Poll::Ready(r) => Poll::Ready(Some(r)),
        Poll::Pending if round.blocked() => Poll::Ready(None),
        Poll::Pending => Poll::Pending,
    })
    .await;
    match outcome {
        Some(r) => r,
        None => {
            drop(handling);
            let mut v = round.interim()?;
            if let Value::Object(m) = &mut v {
                m.insert(
                    "_meta".into(),
                    json!({ switchboard_protocol::types::meta::SERVER_INFO: server_info }),
                );
            }
            serde_json::value::to_raw_value(&v).map_err(|e| {
                ErrorObject::new(
                    switchboard_protocol::jsonrpc::code::INTERNAL_ERROR,
                    format!("result does not serialize: {e}"),
                )
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchboard_protocol::types::{ClientCapabilities, ElicitRequestParams};
    use switchboard_protocol::ProtocolVersion;

    fn context(caps: Value) -> RequestContext {
        RequestContext {
            version: ProtocolVersion::V2026_07_28,
            client_capabilities: serde_json::from_value::<ClientCapabilities>(caps).unwrap(),
            client_info: None,
            log_level: None,
        }
    }

    fn elicit() -> ServerRequest {
        let p: ElicitRequestParams = serde_json::from_value(json!({"message": "name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}))
        .unwrap();
        ServerRequest::Elicit(Box::new(p))
    }

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    async fn handler(round: &Round) -> Result<Value, ErrorObject> {
        let raw = run_pending(
            round,
            &Implementation::new("t", "1"),
            Box::pin(async {
                let a = round.ask(Some("user_name".into()), elicit()).await;
                let b = round.ask(None, elicit()).await;
                Ok(
                    serde_json::value::to_raw_value(&json!({"a": a.unwrap(), "b": b.unwrap()}))
                        .unwrap(),
                )
            }),
        )
        .await?;
        Ok(serde_json::from_str(raw.get()).unwrap())
    }

    #[tokio::test]
    async fn rounds_carry_answers_in_the_sealed_state() {
        let caps = json!({"elicitation": {}});
        let p1 = params(json!({"name": "t", "arguments": {"x": 1}}));
        let r1 = Round::new("tools/call", Some(&p1), context(caps.clone())).unwrap();
        let out = handler(&r1).await.unwrap();
        assert_eq!(out["resultType"], "input_required");
        assert!(out["inputRequests"]["user_name"].is_object());
        let state = out["requestState"].as_str().unwrap().to_owned();

        let accept = json!({"action": "accept", "content": {"name": "A"}});
        let p2 = params(json!({"name": "t", "arguments": {"x": 1},
            "inputResponses": {"user_name": accept}, "requestState": state}));
        let r2 = Round::new("tools/call", Some(&p2), context(caps.clone())).unwrap();
        let out = handler(&r2).await.unwrap();
        // The second ask's default key is input-1 (the second ask of the handler).
        assert!(out["inputRequests"]["input-1"].is_object(), "{out}");
        let state = out["requestState"].as_str().unwrap().to_owned();

        let p3 = params(json!({"name": "t", "arguments": {"x": 1},
            "inputResponses": {"input-1": accept}, "requestState": state}));
        let r3 = Round::new("tools/call", Some(&p3), context(caps.clone())).unwrap();
        let out = handler(&r3).await.unwrap();
        assert_eq!(out["a"], accept);
        assert_eq!(out["b"], accept);

        // The same state for other arguments, a tampered state, another method.
        let p4 =
            params(json!({"name": "t", "arguments": {"x": 2}, "requestState": p3["requestState"]}));
        assert_eq!(
            Round::new("tools/call", Some(&p4), context(caps.clone()))
                .unwrap_err()
                .code,
            code::INVALID_PARAMS
        );
        let tampered = format!("{}x", p3["requestState"].as_str().unwrap());
        let p5 = params(json!({"name": "t", "arguments": {"x": 1}, "requestState": tampered}));
        assert!(Round::new("tools/call", Some(&p5), context(caps.clone())).is_err());
        assert!(Round::new("prompts/get", Some(&p3), context(caps)).is_err());
    }

    #[tokio::test]
    async fn an_undeclared_capability_ends_the_request_with_32021() {
        let r = Round::new("tools/call", None, context(json!({}))).unwrap();
        let e = handler(&r).await.unwrap_err();
        assert_eq!(e.code, -32021);
    }

    #[tokio::test]
    async fn an_answer_of_the_wrong_shape_is_asked_again() {
        let p = params(json!({"name": "t", "inputResponses": {"user_name": 12345}}));
        let r = Round::new("tools/call", Some(&p), context(json!({"elicitation": {}}))).unwrap();
        let out = handler(&r).await.unwrap();
        assert!(out["inputRequests"]["user_name"].is_object());
    }

    #[test]
    fn digests_ignore_member_order_and_mrtr_members() {
        let a = params(json!({"name": "t", "arguments": {"a": 1, "b": [1, {"c": 2, "d": 3}]}}));
        let b = params(
            json!({"arguments": {"b": [1, {"d": 3, "c": 2}], "a": 1}, "name": "t",
            "requestState": "x", "inputResponses": {}, "_meta": {"progressToken": 1}}),
        );
        assert_eq!(params_digest(&a), params_digest(&b));
        let c = params(json!({"name": "t", "arguments": {"a": 2}}));
        assert_ne!(params_digest(&a), params_digest(&c));
    }
}
