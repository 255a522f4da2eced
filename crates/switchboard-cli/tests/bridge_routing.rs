//! Where the bridge sends what a shared child says, when several clients, a
//! child's restart or a cancellation are in play: answers to the child's
//! server→client requests, resource subscriptions, log levels.

mod bridge_util;
mod gateway_util;

use std::time::{Duration, Instant};

use bridge_util::*;
use serde_json::{json, Value};

/// SIGKILLs the one child recorded in `pids` and waits until the bridge has
/// started its successor and reports it ready.
async fn restart_child(c: &reqwest::Client, base: &str, pids: &std::path::Path) {
    wait_until("the child recorded its pid", || pids_in(pids).len() == 1).await;
    kill_hard(pids_in(pids)[0]);
    wait_until("the child is restarted", || pids_in(pids).len() == 2).await;
    let deadline = Instant::now() + WAIT;
    while !ready(c, base).await {
        assert!(
            Instant::now() < deadline,
            "the restarted child is never ready"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn ready(c: &reqwest::Client, base: &str) -> bool {
    match c.get(format!("{base}/readyz")).send().await {
        Ok(r) => r.status().as_u16() == 200,
        Err(_) => false,
    }
}

/// A legacy stdio server (2025-11-25) that records its pid in `argv[1]`. Its
/// tool `ask` (listed) asks `sampling/createMessage` and returns the text of the answer;
/// the ids of its own requests start at 1 in every process, as most servers'
/// do.
const ASKING_CHILD: &str = r#"
import json, sys, os, threading
open(sys.argv[1], "a").write(f"{os.getpid()}\n")
lock = threading.Lock()
def send(m):
    with lock:
        sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
waiting = {}
next_id = [0]
def ask(call_id, prompt):
    next_id[0] += 1
    ev = threading.Event(); waiting[next_id[0]] = [ev, None]
    send({"jsonrpc": "2.0", "id": next_id[0], "method": "sampling/createMessage",
          "params": {"messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                     "maxTokens": 5}})
    ev.wait(60)
    answer = waiting[next_id[0]][1] or {}
    text = (answer.get("result") or {}).get("content", {}).get("text", json.dumps(answer))
    send({"jsonrpc": "2.0", "id": call_id, "result": {"content": [{"type": "text", "text": text}]}})
for line in sys.stdin:
    m = json.loads(line)
    if "method" not in m:
        if m.get("id") in waiting:
            waiting[m["id"]][1] = m; waiting[m["id"]][0].set()
        continue
    if m["method"] == "initialize":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "asking", "version": "1"}}})
    elif m["method"] == "tools/list":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": [
              {"name": "ask", "inputSchema": {"type": "object"}}]}})
    elif m["method"] == "tools/call":
        prompt = m["params"].get("arguments", {}).get("prompt", "")
        threading.Thread(target=ask, args=(m["id"], prompt), daemon=True).start()
    elif "id" in m:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}})
"#;

fn sampled(text: &str) -> Value {
    json!({"role": "assistant", "content": {"type": "text", "text": text}, "model": "m"})
}

/// A 2026-07-28 client's call held for an `input_required` round trip when the
/// shared child dies: the child is restarted, and a second client's call makes
/// the new child ask again, under the same request id the dead child used.
/// The first client's late retry must not answer the new child's request: it
/// used to, so the second client's call completed with the first client's
/// answer (and the second client's own answer was ignored).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_meant_for_a_dead_child_never_reaches_its_successor() {
    let pids = temp_path("dead-child");
    let pid_arg = pids.to_string_lossy().into_owned();
    let bridge = BridgeProc::start(
        &["--child", "shared"],
        &["python3", "-c", ASKING_CHILD, &pid_arg],
    )
    .await;
    let c = client();
    let caps = json!({"sampling": {}});
    let call = |prompt: &str| json!({"name": "ask", "arguments": {"prompt": prompt}});

    let first = modern(
        &c,
        &bridge.url,
        json!(1),
        "tools/call",
        call("a"),
        caps.clone(),
    )
    .await;
    let a = first.response(&json!(1))["result"].clone();
    assert_eq!(a["resultType"], "input_required", "{a}");
    let a_key = first_input_key(&a);

    restart_child(&c, &bridge.base, &pids).await;

    let second = modern(
        &c,
        &bridge.url,
        json!(2),
        "tools/call",
        call("b"),
        caps.clone(),
    )
    .await;
    let b = second.response(&json!(2))["result"].clone();
    assert_eq!(b["resultType"], "input_required", "{b}");
    let b_key = first_input_key(&b);

    // The first client's retry, for the call that died with the old child.
    let late = modern(
        &c,
        &bridge.url,
        json!(3),
        "tools/call",
        json!({"name": "ask", "arguments": {"prompt": "a"}, "requestState": a["requestState"],
               "inputResponses": {a_key.clone(): sampled("answer of the first client")}}),
        caps.clone(),
    )
    .await;
    let late = late.response(&json!(3));
    assert!(late.get("error").is_some(), "the call died: {late}");

    let retry = modern(
        &c,
        &bridge.url,
        json!(4),
        "tools/call",
        json!({"name": "ask", "arguments": {"prompt": "b"}, "requestState": b["requestState"],
               "inputResponses": {b_key.clone(): sampled("answer of the second client")}}),
        caps,
    )
    .await;
    let result = &retry.response(&json!(4))["result"];
    assert_eq!(result["resultType"], "complete", "{result}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(
        text, "answer of the second client",
        "the second client's call got another client's answer: {result}"
    );
    let _ = std::fs::remove_file(&pids);
}

/// A legacy stdio server whose tool `late` sleeps for `delay` seconds (never
/// reading a cancellation meanwhile), then asks `sampling/createMessage` with
/// its `prompt` and returns; its tool `slow` answers after `delay` seconds.
const LATE_ASKING_CHILD: &str = r#"
import json, sys, threading, time
lock = threading.Lock()
def send(m):
    with lock:
        sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
def late(call_id, args):
    time.sleep(args.get("delay", 1))
    send({"jsonrpc": "2.0", "id": 1000 + call_id, "method": "sampling/createMessage",
          "params": {"messages": [{"role": "user", "content": {"type": "text", "text": args.get("prompt", "")}}],
                     "maxTokens": 5}})
    send({"jsonrpc": "2.0", "id": call_id, "result": {"content": [{"type": "text", "text": "late done"}]}})
def slow(call_id, args):
    time.sleep(args.get("delay", 1))
    send({"jsonrpc": "2.0", "id": call_id, "result": {"content": [{"type": "text", "text": "slow done"}]}})
for line in sys.stdin:
    m = json.loads(line)
    if "method" not in m:
        continue
    if m["method"] == "initialize":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {}, "logging": {}}, "serverInfo": {"name": "late", "version": "1"}}})
    elif m["method"] == "tools/call":
        tool = {"late": late, "slow": slow}[m["params"]["name"]]
        threading.Thread(target=tool, args=(m["id"], m["params"].get("arguments", {})), daemon=True).start()
    elif "id" in m:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}})
"#;

/// A 2026-07-28 client cancels its call (closes the stream) while the shared
/// child is still working on it; the child, not having read the cancellation,
/// then asks sampling for that call while another client's call is the only
/// one in flight. The request carries the first client's prompt: it must not
/// be routed to the other client's call (it was, as if it were theirs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_calls_late_request_is_not_given_to_another_client() {
    let bridge = BridgeProc::start(
        &["--child", "shared"],
        &["python3", "-c", LATE_ASKING_CHILD],
    )
    .await;
    let c = client();
    let other = open_session(&c, &bridge.url, "2025-11-25", json!({"sampling": {}})).await;

    // The first client's call, cancelled by closing its stream.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "late", "arguments": {"delay": 1.5, "prompt": "the first client's secret"},
        "_meta": modern_meta(json!({"sampling": {}}))}});
    let first = c
        .post(&bridge.url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "late")
        .body(body.to_string())
        .send();
    let _ = tokio::time::timeout(Duration::from_millis(500), first).await;

    // The other client's call is in flight when the child asks.
    let reply = other
        .request(
            &c,
            &bridge.url,
            json!(1),
            "tools/call",
            json!({"name": "slow", "arguments": {"delay": 2}}),
        )
        .await;
    assert_eq!(
        reply.response(&json!(1))["result"]["content"][0]["text"],
        "slow done",
        "{}",
        reply.body
    );
    assert!(
        !reply.body.contains("secret"),
        "another client's request reached this call: {}",
        reply.body
    );
}

/// The session's GET stream.
async fn get_stream(c: &reqwest::Client, url: &str, s: &Session) -> SseStream {
    let get = c
        .get(url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &s.id)
        .header("mcp-protocol-version", &s.version)
        .send()
        .await
        .unwrap();
    assert_eq!(get.status().as_u16(), 200);
    SseStream::new(get)
}

/// Sessions of a shared child subscribe to the same resource: one session's
/// `resources/unsubscribe`, and a 2026-07-28 listen stream on it that ends,
/// leave the others' subscriptions alone (each went to the child as is, so the
/// first to leave ended everyone's, and the others never heard of the change),
/// and a session that never subscribed is not told of updates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_subscriber_leaving_keeps_the_others_subscriptions() {
    let bridge = BridgeProc::start(&["--child", "shared"], &[]).await;
    let c = client();
    let uri = "example://counter";
    let a = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let b = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let bystander = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let mut a_stream = get_stream(&c, &bridge.url, &a).await;
    let mut bystander_stream = get_stream(&c, &bridge.url, &bystander).await;
    for (s, method) in [
        (&a, "resources/subscribe"),
        (&b, "resources/subscribe"),
        (&b, "resources/unsubscribe"),
    ] {
        let r = s
            .request(&c, &bridge.url, json!(1), method, json!({ "uri": uri }))
            .await;
        assert!(r.response(&json!(1)).get("result").is_some(), "{}", r.body);
    }
    // A listen stream subscribed to it, acknowledged, then closed.
    let body = json!({"jsonrpc": "2.0", "id": "listen", "method": "subscriptions/listen",
        "params": {"notifications": {"resourceSubscriptions": [uri]}, "_meta": modern_meta(json!({}))}});
    let mut listen = open_listen(&c, &bridge.url, &body).await;
    let ack = listen.next_message().await.expect("the acknowledgement");
    assert_eq!(
        ack["params"]["notifications"]["resourceSubscriptions"][0], uri,
        "{ack}"
    );
    drop(listen);
    tokio::time::sleep(Duration::from_millis(500)).await;

    let bump = b
        .request(
            &c,
            &bridge.url,
            json!(2),
            "tools/call",
            json!({"name": "bump_counter", "arguments": {}}),
        )
        .await;
    assert!(bump.response(&json!(2)).get("result").is_some());
    let updated = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let m = a_stream
                .next_message()
                .await
                .expect("the GET stream goes on");
            if m["method"] == "notifications/resources/updated" {
                return m;
            }
        }
    })
    .await
    .expect("the subscribed session is told of the update");
    assert_eq!(updated["params"]["uri"], uri);
    let told = tokio::time::timeout(Duration::from_millis(500), async {
        loop {
            match bystander_stream.next_message().await {
                Some(m) if m["method"] == "notifications/resources/updated" => return m,
                Some(_) => continue,
                None => std::future::pending::<()>().await,
            }
        }
    })
    .await;
    assert!(
        told.is_err(),
        "a session that never subscribed was told: {told:?}"
    );
}

/// A legacy client in front of a 2026-07-28-only child is asked for sampling
/// (the child's `input_required` turned into a real request on the call's
/// stream) and cancels the call instead of answering: the call ends at once,
/// with no response (the spec's SHOULD NOT), as any cancelled call does. The
/// cancellation used to be ignored until the client's answer was given up on
/// (`--request-timeout`, 5 min by default), and the client then got an error
/// for the call it had cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cancelled_while_its_client_is_asked_for_input_ends_at_once() {
    let bridge = BridgeProc::start(
        &["--child", "shared", "--request-timeout", "20s"],
        &[BIN, "example-server", "--modern-only"],
    )
    .await;
    let c = client();
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({"sampling": {}})).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "sample", "arguments": {"prompt": "hi"}}});
    let mut stream = post_streaming(&c, &bridge.url, &s.headers(), &body).await;
    loop {
        let m = stream.next_message().await.expect("the sampling request");
        if m["method"] == "sampling/createMessage" {
            break;
        }
    }
    let started = Instant::now();
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "changed my mind"}});
    assert_eq!(
        post(&c, &bridge.url, &s.headers(), &cancel).await.status,
        202
    );
    let rest = tokio::time::timeout(Duration::from_secs(5), async {
        let mut rest = Vec::new();
        while let Some(m) = stream.next_message().await {
            rest.push(m);
        }
        rest
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "the cancelled call's stream is still open after {:?}",
            started.elapsed()
        )
    });
    assert!(
        rest.iter().all(|m| m.get("id") != Some(&json!(1))),
        "a response to the cancelled call: {rest:?}"
    );
    // The session goes on.
    let echo = s
        .request(
            &c,
            &bridge.url,
            json!(2),
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "still here"}}),
        )
        .await;
    assert_eq!(
        first_text(&echo.response(&json!(2))["result"]),
        "still here",
        "{}",
        echo.body
    );
}

/// The levels of the log messages (`notifications/message`) among `messages`.
fn log_levels(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .map(|m| m["params"]["level"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Sessions of a shared child set their own log levels: each gets the log
/// messages of its calls at its own level, and a 2026-07-28 request at the
/// level in its `_meta`. `logging/setLevel` used to go to the child as is, so
/// the last session to set a level set it for every session (here the second
/// session's `error` silenced the first's `debug`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_session_of_a_shared_child_gets_logs_at_its_own_level() {
    let bridge = BridgeProc::start(&["--child", "shared"], &[]).await;
    let c = client();
    let verbose = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let quiet = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    for (s, level) in [(&verbose, "debug"), (&quiet, "error")] {
        let r = s
            .request(
                &c,
                &bridge.url,
                json!(1),
                "logging/setLevel",
                json!({ "level": level }),
            )
            .await;
        assert!(r.response(&json!(1)).get("result").is_some(), "{}", r.body);
    }
    let call = json!({"name": "log", "arguments": {"message": "m"}});
    let r = verbose
        .request(&c, &bridge.url, json!(2), "tools/call", call.clone())
        .await;
    assert_eq!(
        log_levels(&r.messages),
        ["debug", "info", "notice", "warning"],
        "{}",
        r.body
    );
    let r = quiet
        .request(&c, &bridge.url, json!(2), "tools/call", call.clone())
        .await;
    assert!(r.response(&json!(2)).get("result").is_some(), "{}", r.body);
    assert_eq!(log_levels(&r.messages), Vec::<String>::new(), "{}", r.body);

    let mut params = call;
    params["_meta"] = json!({"io.modelcontextprotocol/logLevel": "warning"});
    let r = modern(&c, &bridge.url, json!(3), "tools/call", params, json!({})).await;
    assert!(r.response(&json!(3)).get("result").is_some(), "{}", r.body);
    assert_eq!(log_levels(&r.messages), ["warning"], "{}", r.body);
}

/// A session of a shared child subscribed to a resource keeps being told of
/// its updates after the child died and was restarted: the bridge subscribes
/// the new process again (it used to know nothing of the old one's
/// subscriptions, so the session silently got no more updates).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_survive_a_restart_of_the_shared_child() {
    let pids = temp_path("resubscribe");
    let pid_arg = pids.to_string_lossy().into_owned();
    let bridge = BridgeProc::start(
        &["--child", "shared"],
        &[
            "sh",
            "-c",
            "echo $$ >> \"$0\"; exec \"$1\" example-server",
            &pid_arg,
            BIN,
        ],
    )
    .await;
    let c = client();
    let uri = "example://counter";
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let mut stream = get_stream(&c, &bridge.url, &s).await;
    let r = s
        .request(
            &c,
            &bridge.url,
            json!(1),
            "resources/subscribe",
            json!({ "uri": uri }),
        )
        .await;
    assert!(r.response(&json!(1)).get("result").is_some(), "{}", r.body);

    restart_child(&c, &bridge.base, &pids).await;

    // The subscription is restored in the background, right after the restart.
    let updated = tokio::time::timeout(Duration::from_secs(10), async {
        let mut n = 2;
        loop {
            let bump = s
                .request(
                    &c,
                    &bridge.url,
                    json!(n),
                    "tools/call",
                    json!({"name": "bump_counter", "arguments": {}}),
                )
                .await;
            assert!(bump.response(&json!(n)).get("result").is_some());
            n += 1;
            let next = tokio::time::timeout(Duration::from_millis(500), async {
                loop {
                    let m = stream.next_message().await.expect("the GET stream goes on");
                    if m["method"] == "notifications/resources/updated" {
                        return m;
                    }
                }
            })
            .await;
            if let Ok(m) = next {
                return m;
            }
        }
    })
    .await
    .expect("the session is told of updates after the restart");
    assert_eq!(updated["params"]["uri"], uri);
    let _ = std::fs::remove_file(&pids);
}

/// A legacy stdio server (2025-11-25) that appends every response it gets (to
/// its own `sampling/createMessage` requests) to the file `argv[1]`, one JSON
/// line each. Its tools, each asking `sampling/createMessage` under an id of
/// its own (`<letter><n>`, never one the bridge would pick):
/// - `ask_then_cancel` asks, cancels that request 0.3 s later
///   (`notifications/cancelled`), cancels `"zz"` (never asked), and 1.5 s
///   later returns the answers it got to the cancelled request (JSON text);
/// - `ask_and_wait` asks and waits (up to 30 s) for the answer;
/// - `ask_and_return` asks and returns at once, the request still open;
/// - `ask_cancel_ask` asks, cancels that request 0.3 s later, asks again and
///   waits (up to 30 s) for the answer to the second request, then returns
///   the answers it got to both (`{"cancelled": [...], "answered": [...]}`).
const CANCELLING_CHILD: &str = r#"
import json, sys, threading, time
log = sys.argv[1]
lock = threading.Lock()
def send(m):
    with lock:
        sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
got = {}
events = {}
count = [0]
def ask(letter):
    count[0] += 1
    i = f"{letter}{count[0]}"
    events[i] = threading.Event()
    send({"jsonrpc": "2.0", "id": i, "method": "sampling/createMessage",
          "params": {"messages": [{"role": "user", "content": {"type": "text", "text": i}}],
                     "maxTokens": 5}})
    return i
def done(call_id, text):
    send({"jsonrpc": "2.0", "id": call_id, "result": {"content": [{"type": "text", "text": text}]}})
def ask_then_cancel(call_id):
    i = ask("q")
    time.sleep(0.3)
    send({"jsonrpc": "2.0", "method": "notifications/cancelled",
          "params": {"requestId": i, "reason": "no longer needed"}})
    send({"jsonrpc": "2.0", "method": "notifications/cancelled",
          "params": {"requestId": "zz", "reason": "never asked"}})
    time.sleep(1.5)
    done(call_id, json.dumps(got.get(i, [])))
def ask_and_wait(call_id):
    i = ask("w")
    events[i].wait(30)
    done(call_id, json.dumps(got.get(i, [])))
def ask_and_return(call_id):
    ask("r")
    done(call_id, "asked")
def ask_cancel_ask(call_id):
    i = ask("a")
    time.sleep(0.3)
    send({"jsonrpc": "2.0", "method": "notifications/cancelled",
          "params": {"requestId": i, "reason": "asked the wrong thing"}})
    j = ask("b")
    events[j].wait(30)
    done(call_id, json.dumps({"cancelled": got.get(i, []), "answered": got.get(j, [])}))
def ask_return_cancel(call_id):
    i = ask("c")
    done(call_id, "asked")
    time.sleep(0.5)
    send({"jsonrpc": "2.0", "method": "notifications/cancelled",
          "params": {"requestId": i, "reason": "changed its mind"}})
for line in sys.stdin:
    m = json.loads(line)
    if "method" not in m:
        with open(log, "a") as f:
            f.write(json.dumps(m) + "\n")
        got.setdefault(m.get("id"), []).append(m)
        if m.get("id") in events:
            events[m["id"]].set()
        continue
    if m["method"] == "initialize":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "cancelling", "version": "1"}}})
    elif m["method"] == "tools/call":
        tool = {"ask_then_cancel": ask_then_cancel, "ask_and_wait": ask_and_wait,
                "ask_and_return": ask_and_return,
                "ask_return_cancel": ask_return_cancel,
                "ask_cancel_ask": ask_cancel_ask}[m["params"]["name"]]
        threading.Thread(target=tool, args=(m["id"],), daemon=True).start()
    elif "id" in m:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}})
"#;

/// A bridge (`--child mode`) in front of [`CANCELLING_CHILD`], and the file the
/// child logs the answers it gets to (`name` in the temporary folder).
async fn cancelling_bridge(mode: &str, name: &str) -> (BridgeProc, std::path::PathBuf) {
    let log = temp_path(&format!("{name}-{mode}"));
    let log_arg = log.to_string_lossy().into_owned();
    let bridge = BridgeProc::start(
        &["--child", mode],
        &["python3", "-c", CANCELLING_CHILD, &log_arg],
    )
    .await;
    (bridge, log)
}

/// The responses the child of [`CANCELLING_CHILD`] logged to `file`.
fn responses_in(file: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The next message on `stream` that is `method`'s (`None`: the stream ended).
async fn next_with_method(stream: &mut SseStream, method: &str) -> Option<Value> {
    while let Some(m) = stream.next_message().await {
        if m["method"] == method {
            return Some(m);
        }
    }
    None
}

/// The child cancels its own `sampling/createMessage` (made for the client's
/// call): the client gets that `notifications/cancelled` with the `requestId`
/// it saw (the bridge's id of the request, not the child's own, which it used
/// to pass on as is, naming nothing the client knew), on that call's stream;
/// the client's answer sent anyway is not passed to the child (the request is
/// over); and the child's cancellation of a request it never made reaches
/// nobody. Both child modes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_cancellation_of_its_request_names_the_id_the_client_saw() {
    for mode in ["per-session", "shared"] {
        let (bridge, log) = cancelling_bridge(mode, "child-cancels").await;
        let c = client();
        let s = open_session(&c, &bridge.url, "2025-11-25", json!({"sampling": {}})).await;
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "ask_then_cancel", "arguments": {}}});
        let mut stream = post_streaming(&c, &bridge.url, &s.headers(), &body).await;
        let asked = next_with_method(&mut stream, "sampling/createMessage")
            .await
            .unwrap_or_else(|| panic!("{mode}: the child's request"));
        let cancelled = next_with_method(&mut stream, "notifications/cancelled")
            .await
            .unwrap_or_else(|| panic!("{mode}: the child's cancellation"));
        assert_eq!(
            cancelled["params"]["requestId"], asked["id"],
            "{mode}: the id the client saw: {cancelled} for {asked}"
        );
        assert_eq!(cancelled["params"]["reason"], "no longer needed", "{mode}");
        // The client answers anyway (the notification raced its answer).
        let answer = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {
            "role": "assistant", "content": {"type": "text", "text": "late"}, "model": "m"}});
        assert_eq!(
            post(&c, &bridge.url, &s.headers(), &answer).await.status,
            202
        );
        let mut rest = Vec::new();
        while let Some(m) = stream.next_message().await {
            let last = m["id"] == 1 && m.get("method").is_none();
            rest.push(m);
            if last {
                break;
            }
        }
        let done = rest.last().expect("the call's response");
        assert_eq!(
            first_text(&done["result"]),
            "[]",
            "{mode}: the answer to a cancelled request reached the child"
        );
        assert!(
            rest.iter()
                .all(|m| m["method"] != "notifications/cancelled"),
            "{mode}: the cancellation of a request never made was passed on: {rest:?}"
        );
        bridge.terminate();
        let _ = std::fs::remove_file(&log);
    }
}

/// The child cancels its `sampling/createMessage` after the call it was made
/// for has returned: the session that was handed the request gets the
/// `notifications/cancelled` (on its GET stream, with the id it saw), and no
/// other session does. Both child modes (with a shared child the cancellation
/// used to be dropped, and the request stayed open for the client).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_cancellation_after_its_call_returned_reaches_the_session_that_holds_it() {
    for mode in ["per-session", "shared"] {
        let (bridge, log) = cancelling_bridge(mode, "late-cancel").await;
        let c = client();
        let asker = open_session(&c, &bridge.url, "2025-11-25", json!({"sampling": {}})).await;
        let other = open_session(&c, &bridge.url, "2025-11-25", json!({"sampling": {}})).await;
        let mut asker_stream = get_stream(&c, &bridge.url, &asker).await;
        let mut other_stream = get_stream(&c, &bridge.url, &other).await;
        let returned = asker
            .request(
                &c,
                &bridge.url,
                json!(1),
                "tools/call",
                json!({"name": "ask_return_cancel", "arguments": {}}),
            )
            .await;
        assert_eq!(first_text(&returned.response(&json!(1))["result"]), "asked");
        let asked = returned
            .messages
            .iter()
            .find(|m| m["method"] == "sampling/createMessage")
            .unwrap_or_else(|| panic!("{mode}: the child's request: {:?}", returned.messages))
            .clone();
        let told = tokio::time::timeout(
            Duration::from_secs(10),
            next_with_method(&mut asker_stream, "notifications/cancelled"),
        )
        .await
        .unwrap_or_else(|_| panic!("{mode}: the cancellation never came"))
        .unwrap_or_else(|| panic!("{mode}: the GET stream ended"));
        assert_eq!(told["params"]["requestId"], asked["id"], "{mode}: {told}");
        assert_eq!(told["params"]["reason"], "changed its mind", "{mode}");
        let leaked = tokio::time::timeout(
            Duration::from_millis(700),
            next_with_method(&mut other_stream, "notifications/cancelled"),
        )
        .await;
        assert!(
            leaked.is_err(),
            "{mode}: another session was told: {leaked:?}"
        );
        bridge.terminate();
        let _ = std::fs::remove_file(&log);
    }
}

/// Waits (up to 10 s) until the child of [`CANCELLING_CHILD`] logged an error
/// response to its request `child_id`, and returns it.
async fn error_answer(log: &std::path::Path, child_id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(r) = responses_in(log).into_iter().find(|r| r["id"] == child_id) {
            return r;
        }
        assert!(
            Instant::now() < deadline,
            "the child never got an answer to {child_id}: {:?}",
            responses_in(log)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The child waits for the answer to its `sampling/createMessage`, made for a
/// call that the client then cancels: the bridge answers the child's request
/// itself (-32603, saying why) instead of leaving the child waiting until it
/// is restarted, and tells the client the request is cancelled. Both child
/// modes. With the shared child, which outlives the
/// session, the same when the session ends (DELETE) with a call's request
/// open, or with a request still open after its call returned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_request_is_answered_when_its_call_or_session_ends() {
    for mode in ["per-session", "shared"] {
        let (bridge, log) = cancelling_bridge(mode, "abandoned").await;
        let c = client();
        let s = open_session(&c, &bridge.url, "2025-11-25", json!({"sampling": {}})).await;
        let ask = |id: i64, tool: &str| {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": tool, "arguments": {}}})
        };
        let mut stream =
            post_streaming(&c, &bridge.url, &s.headers(), &ask(1, "ask_and_wait")).await;
        let asked = next_with_method(&mut stream, "sampling/createMessage")
            .await
            .unwrap_or_else(|| panic!("{mode}: the child's request"));
        let child_id = asked["params"]["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 1, "reason": "changed my mind"}});
        assert_eq!(
            post(&c, &bridge.url, &s.headers(), &cancel).await.status,
            202
        );
        let answer = error_answer(&log, &child_id).await;
        assert_eq!(answer["error"]["code"], -32603, "{mode}: {answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("changed my mind") || m.contains("cancelled")),
            "{mode}: the error says why: {answer}"
        );
        // And the client is told the request it was asked is cancelled, on the
        // call's stream, before that stream ends.
        let told = next_with_method(&mut stream, "notifications/cancelled")
            .await
            .unwrap_or_else(|| panic!("{mode}: the client is told its request is over"));
        assert_eq!(told["params"]["requestId"], asked["id"], "{mode}: {told}");
        if mode == "shared" {
            // A call in flight with its request open, and a request whose call
            // has returned, when the session ends.
            let mut stream =
                post_streaming(&c, &bridge.url, &s.headers(), &ask(2, "ask_and_wait")).await;
            let waiting = next_with_method(&mut stream, "sampling/createMessage")
                .await
                .expect("the child's second request");
            let returned = s
                .request(
                    &c,
                    &bridge.url,
                    json!(3),
                    "tools/call",
                    json!({"name": "ask_and_return", "arguments": {}}),
                )
                .await;
            assert_eq!(first_text(&returned.response(&json!(3))["result"]), "asked");
            let open = returned
                .messages
                .iter()
                .find(|m| m["method"] == "sampling/createMessage")
                .expect("the request of the call that returned")
                .clone();
            assert_eq!(s.delete(&c, &bridge.url).await, 200);
            for request in [waiting, open] {
                let child_id = request["params"]["messages"][0]["content"]["text"]
                    .as_str()
                    .unwrap();
                let answer = error_answer(&log, child_id).await;
                assert_eq!(answer["error"]["code"], -32603, "{answer}");
                assert!(
                    answer["error"]["message"]
                        .as_str()
                        .is_some_and(|m| m.contains("session ended")),
                    "the error says why: {answer}"
                );
            }
        }
        bridge.terminate();
        let _ = std::fs::remove_file(&log);
    }
}

/// The text of the first message of an `input_required` result's only input
/// request (the child's id of its `sampling/createMessage`), and its key.
fn only_input_request(result: &Value) -> (String, String) {
    let requests = result["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{result}");
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "sampling/createMessage", "{result}");
    let text = request["params"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    (key.clone(), text)
}

/// A 2026-07-28 client's call is held for `input_required` while the child
/// (2025-11-25, shared) cancels the `sampling/createMessage` it asked for: the
/// retry does not ask for that request again. With nothing else to answer,
/// the retry resumes the call (whether its `inputResponses` are empty or
/// answer the cancelled request, whose answer never reaches the child), and
/// when the child asks something else instead, only that is asked. The bridge
/// used to keep the cancelled request pending and ask the client for it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_the_child_cancels_while_its_call_is_held_is_not_asked_again() {
    let (bridge, log) = cancelling_bridge("shared", "held-cancel").await;
    let c = client();
    let caps = json!({"sampling": {}});
    let answer =
        json!({"role": "assistant", "content": {"type": "text", "text": "late"}, "model": "m"});
    let mut id = 0;
    let mut call = |name: &'static str, extra: Value| {
        id += 1;
        let mut params = json!({"name": name, "arguments": {}});
        if let Value::Object(m) = extra {
            params.as_object_mut().unwrap().extend(m);
        }
        let (c, url, caps) = (c.clone(), bridge.url.clone(), caps.clone());
        async move {
            let reply = modern(&c, &url, json!(id), "tools/call", params, caps).await;
            assert_eq!(reply.status, 200, "{}", reply.body);
            reply.response(&json!(id))["result"].clone()
        }
    };

    // ask_then_cancel: asks, cancels 0.3 s later, returns 1.5 s after that
    // the answers it got to the cancelled request. Retried once with no
    // answer, once with an answer to the cancelled request.
    for responses in [json!({}), json!(null)] {
        let result = call("ask_then_cancel", json!({})).await;
        assert_eq!(result["resultType"], "input_required", "{result}");
        let (key, _) = only_input_request(&result);
        let state = result["requestState"].clone();
        // The child cancels its request meanwhile.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let responses = if responses.is_null() {
            json!({ key: answer.clone() })
        } else {
            responses
        };
        let result = call(
            "ask_then_cancel",
            json!({"requestState": state, "inputResponses": responses}),
        )
        .await;
        assert_eq!(
            result["resultType"], "complete",
            "asked again for the request the child cancelled ({responses}): {result}"
        );
        assert_eq!(
            first_text(&result),
            "[]",
            "the answer to a cancelled request reached the child"
        );
    }

    // ask_cancel_ask: the second request, asked while the call is held, is
    // the only one asked on the retry; its answer reaches the child.
    let result = call("ask_cancel_ask", json!({})).await;
    let (_, first) = only_input_request(&result);
    assert!(first.starts_with('a'), "{result}");
    let state = result["requestState"].clone();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let result = call(
        "ask_cancel_ask",
        json!({"requestState": state, "inputResponses": {}}),
    )
    .await;
    assert_eq!(result["resultType"], "input_required", "{result}");
    let (key, second) = only_input_request(&result);
    assert!(
        second.starts_with('b'),
        "asked again for the request the child cancelled ({first}): {result}"
    );
    let state = result["requestState"].clone();
    let result = call(
        "ask_cancel_ask",
        json!({"requestState": state, "inputResponses": { key: answer.clone() }}),
    )
    .await;
    assert_eq!(result["resultType"], "complete", "{result}");
    let got: Value = serde_json::from_str(first_text(&result)).unwrap();
    assert_eq!(got["cancelled"], json!([]), "{got}");
    assert_eq!(got["answered"].as_array().map(Vec::len), Some(1), "{got}");
    assert_eq!(
        got["answered"][0]["result"]["content"]["text"], "late",
        "{got}"
    );
    bridge.terminate();
    let _ = std::fs::remove_file(&log);
}

/// A stdio server (2025-11-25) that asks `roots/list` on its own
/// initiative half a second after it is initialized (no call in flight
/// then), and whose tool `roots` (listed) answers at once with the last
/// answer to it as text (`null` before one came).
const ROOTS_LATER_CHILD: &str = r#"
import json, sys, threading
lock = threading.Lock()
def send(m):
    with lock:
        sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
roots = None
for line in sys.stdin:
    m = json.loads(line)
    if "method" not in m:
        if m.get("id") == "roots-1":
            roots = m.get("result") or m.get("error")
        continue
    if m["method"] == "initialize":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "roots", "version": "1"}}})
    elif m["method"] == "notifications/initialized":
        ask = {"jsonrpc": "2.0", "id": "roots-1", "method": "roots/list"}
        threading.Timer(0.5, send, args=(ask,)).start()
    elif m["method"] == "tools/list":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": [
              {"name": "roots", "inputSchema": {"type": "object"}}]}})
    elif m["method"] == "tools/call":
        text = json.dumps(roots)
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"content": [{"type": "text", "text": text}]}})
    elif "id" in m:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}})
"#;

/// A gateway of one upstream `name` running `script` (Python) with `args`,
/// a child per session; its directory.
async fn gateway_of_own_children(
    tag: &str,
    name: &str,
    script: &str,
    args: &[&str],
) -> (gateway_util::TempDir, gateway_util::GatewayProc) {
    let dir = gateway_util::TempDir::new(tag);
    let mut argv = vec!["-c", script];
    argv.extend_from_slice(args);
    let config = format!(
        "[upstreams.{name}]\ncommand = \"python3\"\nargs = {}\nchild = \"per-session\"\n",
        gateway_util::qa(&argv)
    );
    let gw = gateway_util::GatewayProc::start(dir.path(), &config).await;
    (dir, gw)
}

/// The call relay is one for bridge and gateway (issue 30): a gateway
/// session's own child asks `sampling/createMessage` for a call, the client
/// answers, and the answer reaches that child (the gateway used to hand it
/// to the upstream's shared child, which had asked nothing: the call then
/// hung until its timeout).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_sessions_own_child_gets_the_answer_to_its_sampling_request() {
    let pids = temp_path("gw-own-asks");
    let pid_arg = pids.to_string_lossy().into_owned();
    let (_dir, gw) = gateway_of_own_children("own-asks", "ask", ASKING_CHILD, &[&pid_arg]).await;
    let c = client();
    let s = open_session(&c, &gw.url, "2025-11-25", json!({"sampling": {}})).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "ask__ask", "arguments": {"prompt": "hi"}}});
    let mut stream = post_streaming(&c, &gw.url, &s.headers(), &body).await;
    let asked = loop {
        let m = tokio::time::timeout(WAIT, stream.next_message())
            .await
            .expect("the sampling request in time")
            .expect("the sampling request");
        if m["method"] == "sampling/createMessage" {
            break m;
        }
    };
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"], "result": sampled("from the client")});
    assert_eq!(post(&c, &gw.url, &s.headers(), &answer).await.status, 202);
    let done = tokio::time::timeout(WAIT, async {
        while let Some(m) = stream.next_message().await {
            if m.get("id") == Some(&json!(1)) {
                return Some(m);
            }
        }
        None
    })
    .await
    .expect("the call is answered in time")
    .expect("the call's answer");
    assert_eq!(first_text(&done["result"]), "from the client", "{done}");
}

/// A gateway session's own child that asks `roots/list` on its own
/// initiative (no call in flight) reaches the client on the session's
/// standalone stream, and the answer reaches the child: as a bridge
/// session's does (the gateway used to refuse such requests of a session's
/// own child).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_sessions_own_child_asks_its_client_outside_any_call() {
    let (_dir, gw) = gateway_of_own_children("own-roots", "r", ROOTS_LATER_CHILD, &[]).await;
    let c = client();
    let s = open_session(&c, &gw.url, "2025-11-25", json!({"roots": {}})).await;
    let mut get = c.get(&gw.url).header("accept", "text/event-stream");
    for (k, v) in s.headers() {
        get = get.header(k, v);
    }
    let resp = get.send().await.expect("the standalone stream opens");
    assert_eq!(resp.status().as_u16(), 200);
    let mut standalone = SseStream::new(resp);
    let roots_text =
        |reply: &Reply, id: i64| first_text(&reply.response(&json!(id))["result"]).to_owned();
    // The session's first call there starts its child.
    let first = s
        .request(
            &c,
            &gw.url,
            json!(1),
            "tools/call",
            json!({"name": "r__roots"}),
        )
        .await;
    assert_eq!(roots_text(&first, 1), "null", "{}", first.body);
    let asked = loop {
        let m = tokio::time::timeout(WAIT, standalone.next_message())
            .await
            .expect("the roots request in time")
            .expect("the roots request");
        if m["method"] == "roots/list" {
            break m;
        }
    };
    let roots = json!({"roots": [{"uri": "file:///work", "name": "work"}]});
    let answer = json!({"jsonrpc": "2.0", "id": asked["id"], "result": roots});
    assert_eq!(post(&c, &gw.url, &s.headers(), &answer).await.status, 202);
    let deadline = Instant::now() + WAIT;
    loop {
        let reply = s
            .request(
                &c,
                &gw.url,
                json!(2),
                "tools/call",
                json!({"name": "r__roots"}),
            )
            .await;
        let text = roots_text(&reply, 2);
        if text != "null" {
            let said: Value = serde_json::from_str(&text).expect("the roots as JSON");
            assert_eq!(said, roots, "{}", reply.body);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the child never got the client's roots"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
