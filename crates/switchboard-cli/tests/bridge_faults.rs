//! The bridge when things go wrong: a child killed mid-call, a child that prints
//! a banner, a child that never answers, a client that goes away mid-stream,
//! DELETE ending a session's child, SIGTERM draining requests in flight.

mod bridge_util;

use std::time::{Duration, Instant};

use bridge_util::*;
use serde_json::{json, Value};

/// POSTs `body` on session `s` in a task of its own: the reply and how long it
/// took, once it comes.
fn spawn_post(
    c: &reqwest::Client,
    url: &str,
    s: &Session,
    body: Value,
) -> tokio::task::JoinHandle<(Reply, Duration)> {
    let (c, url) = (c.clone(), url.to_owned());
    let headers: Vec<(String, String)> = s
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    tokio::spawn(async move {
        let h: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let started = Instant::now();
        let reply = post(&c, &url, &h, &body).await;
        (reply, started.elapsed())
    })
}

/// `sh` running the example server after recording its pid in `pids`.
fn recorded_example(pids: &std::path::Path) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        "echo $$ >> \"$0\"; exec \"$1\" example-server".into(),
        pids.to_string_lossy().into_owned(),
        BIN.into(),
    ]
}

fn alive(pid: i32) -> bool {
    std::process::Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

async fn wait_until_async<F: std::future::Future<Output = bool>>(
    what: &str,
    mut f: impl FnMut() -> F,
) {
    let deadline = Instant::now() + WAIT;
    while !f().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The shared child (the bridge's, not a session's) killed mid-call: the call
/// fails fast, the child is restarted and the next call on the same session
/// works. (A session's own child is not restarted: see
/// [`a_per_session_childs_death_ends_its_session`].)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_killed_mid_call_fails_the_call_fast_and_is_restarted() {
    let pids = temp_path("killed");
    let cmd = recorded_example(&pids);
    let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let bridge = BridgeProc::start(&["--child", "shared"], &cmd).await;
    let c = client();
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    // A call that takes 20 s unless its child dies first.
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","arguments":{"seconds":20,"steps":2}}});
    let call = spawn_post(&c, &bridge.url, &s, body);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let first = *pids_in(&pids).last().expect("the child recorded its pid");
    kill_hard(first);
    let (reply, took) = call.await.unwrap();
    let error = &reply.response(&json!(1))["error"];
    assert_eq!(error["code"], -32603, "{}", reply.body);
    assert!(
        error["message"].as_str().unwrap().contains("exited"),
        "a clear error: {error}"
    );
    assert!(
        took < Duration::from_secs(10),
        "failed fast, not after the tool's 20 s: {took:?}"
    );
    // The next call works on a restarted child.
    let ok = s.echo(&c, &bridge.url, 2, "again").await;
    assert_eq!(
        first_text(&ok.response(&json!(2))["result"]),
        "again",
        "{}",
        ok.body
    );
    assert!(pids_in(&pids).len() >= 2, "a new child was started");
    let _ = std::fs::remove_file(&pids);
}

/// A bridge (`args`, its children's pids recorded in `pids`) and a session
/// whose own child is killed during a 20 s call: the call fails fast with a
/// clear -32603. The bridge, the client, the shared child's pids, the session.
async fn own_child_killed_mid_call(
    pids: &std::path::Path,
    args: &[&str],
) -> (BridgeProc, reqwest::Client, Vec<i32>, Session) {
    let cmd = recorded_example(pids);
    let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let bridge = BridgeProc::start(args, &cmd).await;
    let c = client();
    wait_until("the shared child started", || !pids_in(pids).is_empty()).await;
    let shared = pids_in(pids);
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let own = *pids_in(pids).last().unwrap();
    assert!(!shared.contains(&own), "the session has a child of its own");
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","arguments":{"seconds":20,"steps":2}}});
    let call = spawn_post(&c, &bridge.url, &s, body);
    tokio::time::sleep(Duration::from_millis(500)).await;
    kill_hard(own);
    let (reply, took) = call.await.unwrap();
    let error = &reply.response(&json!(1))["error"];
    assert_eq!(error["code"], -32603, "{}", reply.body);
    assert!(
        error["message"].as_str().unwrap().contains("exited"),
        "a clear error: {error}"
    );
    assert!(took < Duration::from_secs(10), "failed fast: {took:?}");
    (bridge, c, shared, s)
}

/// A session's own child (`--child per-session`, the default) killed mid-call:
/// the call fails fast with a clear error, as with the shared child, but the
/// child is not restarted under the session (a new process would know nothing
/// of the session's `initialize`, subscriptions or log level, and the client
/// could not tell): the session ends, its next request gets 404, and a new
/// session (a fresh `initialize`) gets a new child and works. A legacy
/// HTTP+SSE session's stream closes, and its message endpoint answers 404.
/// The session used to be kept, silently served by a restarted child it had
/// never initialized.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_session_childs_death_ends_its_session() {
    let pids = temp_path("session-child-dies");
    let (bridge, c, shared, s) = own_child_killed_mid_call(&pids, &[]).await;
    // The session is over: 404 (at once, or after the errors of requests
    // that raced the session's end; never a result from a new child).
    let deadline = Instant::now() + WAIT;
    let mut n = 2;
    loop {
        let next = s
            .request(&c, &bridge.url, json!(n), "tools/list", json!({}))
            .await;
        if next.status == 404 {
            break;
        }
        assert!(
            next.response(&json!(n)).get("error").is_some(),
            "no answer but an error or 404 on a session whose child died: {}",
            next.body
        );
        assert!(Instant::now() < deadline, "the session ended in time");
        n += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        pids_in(&pids).len(),
        shared.len() + 1,
        "no child is restarted for the session that ended"
    );
    // The client starts over: a new session, a new child.
    let again = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let ok = again.echo(&c, &bridge.url, 1, "again").await;
    assert_eq!(first_text(&ok.response(&json!(1))["result"]), "again");
    assert_eq!(pids_in(&pids).len(), shared.len() + 2, "a new child");

    // A legacy HTTP+SSE session: its stream closes, its endpoint answers 404.
    let mut legacy = open_legacy(&c, &bridge.base).await;
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"old","version":"1"}}});
    assert_eq!(legacy.send(&c, &init).await, 202);
    legacy.until_response(&json!(0)).await;
    let own = *pids_in(&pids).last().unwrap();
    kill_hard(own);
    let ended = tokio::time::timeout(WAIT, async {
        while legacy.stream.next_message().await.is_some() {}
    })
    .await;
    assert!(ended.is_ok(), "the legacy session's stream closed");
    let list = json!({"jsonrpc":"2.0","id":1,"method":"tools/list"});
    assert_eq!(legacy.send(&c, &list).await, 404);
    let _ = std::fs::remove_file(&pids);
}

/// `--child per-session-respawn` (issue 30, one child policy, opt-in): a
/// session's own child killed mid-call fails that call fast, is restarted
/// under the session (initialized again with the client's params), and the
/// same session's next calls work, with no 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_session_respawn_child_is_restarted_under_its_session() {
    let pids = temp_path("session-child-respawn");
    let (bridge, c, shared, s) =
        own_child_killed_mid_call(&pids, &["--child", "per-session-respawn"]).await;
    // The same session goes on, served by a restarted child.
    let deadline = Instant::now() + WAIT;
    let mut n = 2;
    loop {
        let next = s.echo(&c, &bridge.url, n, "again").await;
        assert_ne!(next.status, 404, "the session was kept: {}", next.body);
        let response = next.response(&json!(n));
        if response.get("result").is_some() {
            assert_eq!(first_text(&response["result"]), "again");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no answer in time: {}",
            next.body
        );
        n += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let now = pids_in(&pids);
    assert_eq!(now.len(), shared.len() + 2, "one child restarted: {now:?}");
    let _ = std::fs::remove_file(&pids);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_banner_on_the_childs_stdout_is_skipped() {
    let script =
        "echo 'Welcome to my MCP server v1.0!'; echo '*** ready ***'; exec \"$0\" example-server";
    let bridge = BridgeProc::start(&[], &["sh", "-c", script, BIN]).await;
    let c = client();
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let reply = s.echo(&c, &bridge.url, 1, "through").await;
    assert_eq!(first_text(&reply.response(&json!(1))["result"]), "through");
    assert_eq!(
        reply.messages.len(),
        1,
        "nothing of the banner is forwarded: {:?}",
        reply.messages
    );
}

/// Answers `initialize` (id 0, as the bridge sends it) and then never anything.
const MUTE_SERVER: &str = r#"read line; echo '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"mute","version":"1"}}}'; while read -r line; do :; done"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_never_answers_times_out() {
    let bridge = BridgeProc::start(
        &["--child", "shared", "--request-timeout", "1s"],
        &["sh", "-c", MUTE_SERVER],
    )
    .await;
    let c = client();
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let started = Instant::now();
    let reply = s
        .request(&c, &bridge.url, json!(1), "tools/list", json!({}))
        .await;
    let error = &reply.response(&json!(1))["error"];
    assert_eq!(error["code"], -32603, "{}", reply.body);
    assert!(
        error["message"].as_str().unwrap().contains("within"),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    // The same for a 2026-07-28 client.
    let reply = modern(
        &c,
        &bridge.url,
        json!(2),
        "tools/list",
        json!({}),
        json!({}),
    )
    .await;
    assert_eq!(
        reply.response(&json!(2))["error"]["code"],
        -32603,
        "{}",
        reply.body
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_gone_mid_stream_does_not_hurt_its_session_or_others() {
    let bridge = BridgeProc::start(&[], &[]).await;
    let c = client();
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let other = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{
        "name":"progress","arguments":{"seconds":2,"steps":4},"_meta":{"progressToken":"p"}}});
    let mut stream = post_streaming(&c, &bridge.url, &s.headers(), &body).await;
    let first = stream
        .next_message()
        .await
        .expect("a progress notification");
    assert_eq!(first["method"], "notifications/progress");
    drop(stream);
    // A 2026-07-28 client closing its stream cancels its call; the bridge goes on.
    let mut params = json!({"name":"progress","arguments":{"seconds":2,"steps":4},"_meta":{"progressToken":"m"}});
    for (k, v) in modern_meta(json!({})).as_object().unwrap() {
        params["_meta"][k] = v.clone();
    }
    let modern_body = json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":params});
    let mut modern_stream = post_streaming(
        &c,
        &bridge.url,
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "progress"),
        ],
        &modern_body,
    )
    .await;
    let _ = modern_stream.next_message().await;
    drop(modern_stream);
    for (session, id) in [(&s, 2), (&other, 3)] {
        let reply = session.echo(&c, &bridge.url, id, "still here").await;
        assert_eq!(
            first_text(&reply.response(&json!(id))["result"]),
            "still here"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_ends_the_sessions_own_child() {
    let pids = temp_path("delete");
    let cmd = recorded_example(&pids);
    let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let bridge = BridgeProc::start(&[], &cmd).await;
    let c = client();
    // The shared child starts with the bridge; the session's own child at initialize.
    wait_until("the shared child started", || !pids_in(&pids).is_empty()).await;
    let before = pids_in(&pids);
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let after = pids_in(&pids);
    let own: Vec<i32> = after
        .iter()
        .filter(|p| !before.contains(p))
        .copied()
        .collect();
    assert_eq!(
        own.len(),
        1,
        "one child for the session: {before:?} -> {after:?}"
    );
    assert!(alive(own[0]));
    assert_eq!(s.delete(&c, &bridge.url).await, 200);
    wait_until("the session's child has exited", || !alive(own[0])).await;
    assert!(
        before.iter().all(|p| alive(*p)),
        "the shared child lives on"
    );
    let _ = std::fs::remove_file(&pids);
}

/// SIGTERM: the call in flight completes, `/readyz` turns 503, and a new session
/// of either kind gets 503 (`HttpServer::refuse_new_sessions`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_requests_in_flight_then_exits() {
    let mut bridge = BridgeProc::start(&["--child", "shared"], &[]).await;
    let c = client();
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","arguments":{"seconds":3,"steps":3}}});
    let call = spawn_post(&c, &bridge.url, &s, body);
    tokio::time::sleep(Duration::from_millis(400)).await;
    bridge.terminate();
    // Draining: not ready, and no new session starts.
    let readyz = format!("{}/readyz", bridge.base);
    wait_until_async("the bridge reports draining", || {
        let c = c.clone();
        let readyz = readyz.clone();
        async move { c.get(&readyz).send().await.is_ok_and(|r| r.status() == 503) }
    })
    .await;
    let init = json!({"jsonrpc":"2.0","id":9,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},
        "clientInfo":{"name":"late","version":"0"}}});
    let late = post(&c, &bridge.url, &[], &init).await;
    // 503, which a load balancer retries elsewhere; an error inside a 200
    // would end the client's attempt.
    assert_eq!(late.status, 503, "{}", late.body);
    assert!(
        late.messages[0]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("shutting down")),
        "a new session during the drain is refused: {}",
        late.body
    );
    let legacy = c
        .get(format!("{}/sse", bridge.base))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(legacy.status(), 503, "a new legacy session too");
    assert!(legacy.text().await.unwrap().contains("shutting down"));
    let (reply, _) = call.await.unwrap();
    let result: &Value = &reply.response(&json!(1))["result"];
    assert!(
        result["content"].is_array(),
        "the call in flight completed: {}",
        reply.body
    );
    let status = tokio::time::timeout(WAIT, bridge.child.wait())
        .await
        .expect("the bridge exits")
        .unwrap();
    assert!(status.success(), "{status:?}");
}

/// A second SIGTERM while the bridge drains stops it at once: no more drain,
/// no graces for a child that ignores SIGTERM (it is killed), exit 143 (128 +
/// SIGTERM, the shell's convention; not 1, a tool's `isError`). With one
/// signal this stop takes the drain (here 60 s) and then 5 s + 5 s of graces.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_sigterm_stops_the_bridge_at_once() {
    second_signal_stops_the_bridge_at_once("second-term", libc::SIGTERM, 143).await;
}

/// The same with Ctrl-C (SIGINT) as the second signal: exit 130.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ctrl_c_after_sigterm_stops_the_bridge_at_once_with_130() {
    second_signal_stops_the_bridge_at_once("second-int", libc::SIGINT, 130).await;
}

/// SIGTERM, then `second` while the bridge drains a minute-long call; the
/// bridge must exit `code` at once and its child be killed.
async fn second_signal_stops_the_bridge_at_once(name: &str, second_signal: i32, code: i32) {
    let pids = temp_path(name);
    // The example server with SIGTERM ignored (kept across exec); it answers the
    // calls in flight for up to 10 s after its stdin closes.
    let cmd = [
        "sh".to_owned(),
        "-c".to_owned(),
        "trap '' TERM; echo $$ >> \"$0\"; exec \"$1\" example-server".to_owned(),
        pids.to_string_lossy().into_owned(),
        BIN.to_owned(),
    ];
    let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let mut bridge =
        BridgeProc::start(&["--child", "shared", "--drain-timeout", "60s"], &cmd).await;
    wait_until("the shared child started", || !pids_in(&pids).is_empty()).await;
    let child = pids_in(&pids)[0];
    let c = client();
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","arguments":{"seconds":60,"steps":60}}});
    let call = spawn_post(&c, &bridge.url, &s, body);
    tokio::time::sleep(Duration::from_millis(400)).await;
    bridge.terminate();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        bridge.child.try_wait().unwrap().is_none(),
        "one SIGTERM drains: the call is in flight for a minute"
    );
    let second = Instant::now();
    bridge.signal(second_signal);
    let status = tokio::time::timeout(Duration::from_secs(5), bridge.child.wait())
        .await
        .expect("the bridge exits at once on the second signal")
        .unwrap();
    assert_eq!(status.code(), Some(code), "{status:?}");
    // Killed, not left to ignore SIGTERM: gone or a zombie awaiting its reaper.
    let gone = || {
        std::fs::read_to_string(format!("/proc/{child}/stat")).map_or(true, |stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
    };
    wait_until("the child that ignores SIGTERM is killed", gone).await;
    assert!(
        second.elapsed() < Duration::from_secs(5),
        "{:?}",
        second.elapsed()
    );
    call.abort();
    let _ = std::fs::remove_file(&pids);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_readiness_follow_the_child() {
    let pids = temp_path("ready");
    let cmd = recorded_example(&pids);
    let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let bridge = BridgeProc::start(&["--child", "shared"], &cmd).await;
    let c = client();
    let get = |path: &'static str| {
        let c = c.clone();
        let url = format!("{}{path}", bridge.base);
        async move {
            // A kubelet's Host is the pod's address: probes must not depend on it.
            let r = c
                .get(url)
                .header("host", "10.1.2.3:8080")
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    assert_eq!(get("/healthz").await.0, 200);
    let deadline = Instant::now() + WAIT;
    while get("/readyz").await.0 != 200 {
        assert!(Instant::now() < deadline, "ready in time");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Kill the child: not ready until it is back.
    let first = *pids_in(&pids).last().unwrap();
    kill_hard(first);
    let mut saw_not_ready = false;
    let deadline = Instant::now() + WAIT;
    loop {
        let (status, body) = get("/readyz").await;
        if status == 503 {
            // The gateway's format: each upstream's state, why it is down.
            let v: Value = serde_json::from_str(&body).expect("a JSON /readyz");
            assert_eq!(v["ready"], false, "{body}");
            let upstreams = v["upstreams"].as_object().expect("upstreams");
            assert_eq!(upstreams.len(), 1, "{body}");
            let (_, up) = upstreams.iter().next().unwrap();
            assert_ne!(up["state"], "ready", "{body}");
            assert!(up["restarts"].is_u64(), "{body}");
            saw_not_ready = true;
        }
        if saw_not_ready && status == 200 {
            break;
        }
        if !saw_not_ready && pids_in(&pids).len() >= 2 && status == 200 {
            // Restarted faster than we looked: fine, as long as it was restarted.
            break;
        }
        assert!(Instant::now() < deadline, "ready again in time");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(get("/healthz").await.0, 200);
    let _ = std::fs::remove_file(&pids);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_ends_with_its_child() {
    let pids = temp_path("idle");
    let cmd = recorded_example(&pids);
    let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let bridge = BridgeProc::start(&["--idle-timeout", "1s"], &cmd).await;
    let c = client();
    wait_until("the shared child started", || !pids_in(&pids).is_empty()).await;
    let s1 = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let _s2 = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let children: Vec<i32> = pids_in(&pids)[1..].to_vec();
    assert_eq!(children.len(), 2, "one child per session");
    // Idle past the timeout: both sessions end, and their children with them.
    for pid in &children {
        let pid = *pid;
        wait_until("an idle session's child has exited", || !alive(pid)).await;
    }
    let gone = s1
        .request(&c, &bridge.url, json!(1), "tools/list", json!({}))
        .await;
    assert_eq!(gone.status, 404, "an expired session is 404: {}", gone.body);
    let s3 = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let ok = s3
        .request(&c, &bridge.url, json!(1), "tools/list", json!({}))
        .await;
    assert!(ok.response(&json!(1))["result"]["tools"].is_array());
    let _ = std::fs::remove_file(&pids);
}

/// `--max-sessions` reached: a new session ends the least recently used idle
/// one and its child (a client that never sends DELETE, as the TypeScript
/// SDK's v1 client, does not lock others out for the idle timeout); only when
/// every session has a call in flight is the new one refused, 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_bridge_evicts_the_least_recently_used_idle_session() {
    let pids = temp_path("evict");
    let cmd = recorded_example(&pids);
    let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let bridge = BridgeProc::start(&["--max-sessions", "2"], &cmd).await;
    let c = client();
    wait_until("the shared child started", || !pids_in(&pids).is_empty()).await;
    let s1 = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let s2 = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let s3 = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let children: Vec<i32> = pids_in(&pids)[1..].to_vec();
    assert_eq!(children.len(), 3, "one child per session");
    let first = children[0];
    wait_until("the evicted session's child has exited", || !alive(first)).await;
    let gone = s1
        .request(&c, &bridge.url, json!(1), "tools/list", json!({}))
        .await;
    assert_eq!(
        gone.status, 404,
        "the evicted session is 404: {}",
        gone.body
    );
    for s in [&s2, &s3] {
        let r = s.echo(&c, &bridge.url, 2, "still here").await;
        assert_eq!(first_text(&r.response(&json!(2))["result"]), "still here");
    }
    // Both busy: a call in flight on each, so none can be evicted.
    // Long enough to be in flight still when the fourth comes (each head is
    // out at its first progress, a second in).
    let call = json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"progress","arguments":{"seconds":30,"steps":30}}});
    let busy2 = post_streaming(&c, &bridge.url, &s2.headers(), &call).await;
    let busy3 = post_streaming(&c, &bridge.url, &s3.headers(), &call).await;
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fourth","version":"1"}}});
    let fourth = post(&c, &bridge.url, &[], &init).await;
    assert_eq!(fourth.status, 503, "{}", fourth.body);
    assert!(fourth.body.contains("sessions"), "{}", fourth.body);
    drop((busy2, busy3));
    let _ = std::fs::remove_file(&pids);
}

/// A stdio server that asks `roots/list` on its own right after initialization and
/// reports the answer it got in its one tool's description.
const ASKING_SERVER: &str = r#"
import json, sys
seen = None
for line in sys.stdin:
    m = json.loads(line)
    def send(x):
        sys.stdout.write(json.dumps(x) + "\n"); sys.stdout.flush()
    if m.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": m["params"]["protocolVersion"],
              "capabilities": {"tools": {}}, "serverInfo": {"name": "asking", "version": "1"}}})
    elif m.get("method") == "notifications/initialized":
        send({"jsonrpc": "2.0", "id": "r1", "method": "roots/list"})
    elif m.get("id") == "r1" and "method" not in m:
        seen = m.get("result")
    elif m.get("method") == "tools/list":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": [{"name": "seen",
              "description": json.dumps(seen), "inputSchema": {"type": "object"}}]}})
    elif "id" in m and "method" in m:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}})
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_session_childs_own_request_reaches_its_session() {
    let bridge = BridgeProc::start(&[], &["python3", "-c", ASKING_SERVER]).await;
    let c = client();
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({"roots": {}})).await;
    // The child's roots/list, made while no call is in flight, waits on the
    // session's GET stream.
    let get = c
        .get(&bridge.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &s.id)
        .header("mcp-protocol-version", &s.version)
        .send()
        .await
        .unwrap();
    assert_eq!(get.status().as_u16(), 200);
    let mut stream = SseStream::new(get);
    let ask = loop {
        let m = stream.next_message().await.expect("the child's request");
        if m["method"] == "roots/list" {
            break m;
        }
    };
    let answer = json!({"jsonrpc":"2.0","id":ask["id"],"result":{"roots":[{"uri":"file:///work","name":"work"}]}});
    assert_eq!(
        post(&c, &bridge.url, &s.headers(), &answer).await.status,
        202
    );
    let deadline = Instant::now() + WAIT;
    loop {
        let list = s
            .request(&c, &bridge.url, json!(1), "tools/list", json!({}))
            .await;
        let description = list.response(&json!(1))["result"]["tools"][0]["description"]
            .as_str()
            .unwrap()
            .to_owned();
        if description.contains("file:///work") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the child got the answer: {description}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_initialize_leaves_no_session_behind() {
    let program = unspawnable_program("failed-init");
    let bridge = BridgeProc::start(
        &["--max-sessions", "2", "--init-timeout", "1s"],
        &[program.as_str()],
    )
    .await;
    let c = client();
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"retry","version":"1"}}});
    // A client retrying through an outage: each attempt gets an error, none is
    // refused for "too many sessions".
    for attempt in 0..4 {
        let reply = post(&c, &bridge.url, &[], &init).await;
        assert_ne!(reply.status, 503, "attempt {attempt}: {}", reply.body);
        let error = &reply.response(&json!(0))["error"];
        assert_eq!(error["code"], -32603, "attempt {attempt}: {}", reply.body);
        if let Some(id) = reply.headers.get("mcp-session-id") {
            // The session is gone once the error is out.
            let id = id.to_str().unwrap().to_owned();
            let deadline = Instant::now() + WAIT;
            loop {
                let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/list"});
                let after = post(
                    &c,
                    &bridge.url,
                    &[
                        ("mcp-session-id", &id),
                        ("mcp-protocol-version", "2025-11-25"),
                    ],
                    &body,
                )
                .await;
                if after.status == 404 {
                    break;
                }
                assert!(Instant::now() < deadline, "the failed session ended");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

/// Calls waiting for a free slot (`--max-in-flight 1`) when the child dies never
/// reached it: they wait for the restarted child and succeed, while the call the
/// child was running fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_queued_for_a_slot_survive_the_childs_death() {
    let pids = temp_path("queued");
    let cmd = recorded_example(&pids);
    let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let bridge = BridgeProc::start(&["--child", "shared", "--max-in-flight", "1"], &cmd).await;
    let c = client();
    let call = |id: i64, name: &str, arguments: Value| {
        let c = c.clone();
        let url = bridge.url.clone();
        let body = json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":name,"arguments":arguments}});
        tokio::spawn(async move {
            let s = open_session(&c, &url, "2025-11-25", json!({})).await;
            post(&c, &url, &s.headers(), &body).await
        })
    };
    let slow = call(1, "progress", json!({"seconds": 20, "steps": 2}));
    wait_until("the slow call's child is up", || !pids_in(&pids).is_empty()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let queued: Vec<_> = (0..3)
        .map(|i| call(10 + i, "echo", json!({"text": format!("queued {i}")})))
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let first = *pids_in(&pids).last().expect("the child recorded its pid");
    kill_hard(first);
    let reply = slow.await.unwrap();
    assert_eq!(
        reply.response(&json!(1))["error"]["code"],
        -32603,
        "{}",
        reply.body
    );
    for (i, q) in queued.into_iter().enumerate() {
        let reply = q.await.unwrap();
        let id = json!(10 + i as i64);
        assert_eq!(
            first_text(&reply.response(&id)["result"]),
            format!("queued {i}"),
            "a queued call waits for the restart: {}",
            reply.body
        );
    }
    assert!(pids_in(&pids).len() >= 2, "a new child was started");
    let _ = std::fs::remove_file(&pids);
}

/// A call waiting for a free slot (`--max-in-flight 1`) that the client cancels
/// ends at once, with no response, without waiting for the slot; the call in
/// flight is not disturbed, and the next call gets the slot after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cancelled_while_waiting_for_a_slot_ends_at_once() {
    let bridge = BridgeProc::start(&["--child", "shared", "--max-in-flight", "1"], &[]).await;
    let c = client();
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let call = |id: i64, name: &str, arguments: Value| {
        let c = c.clone();
        let url = bridge.url.clone();
        let headers: Vec<(String, String)> = s
            .headers()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let body = json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":name,"arguments":arguments}});
        tokio::spawn(async move {
            let headers: Vec<(&str, &str)> = headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let started = Instant::now();
            let reply = post(&c, &url, &headers, &body).await;
            (reply, started.elapsed())
        })
    };
    let slow = call(1, "progress", json!({"seconds": 3, "steps": 2}));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let waiting = call(2, "echo", json!({"text": "never"}));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cancel = post(
        &c,
        &bridge.url,
        &s.headers(),
        &json!({"jsonrpc":"2.0","method":"notifications/cancelled",
            "params":{"requestId":2,"reason":"changed my mind"}}),
    )
    .await;
    assert_eq!(cancel.status, 202, "{}", cancel.body);
    let (reply, took) = waiting.await.unwrap();
    assert!(
        took < Duration::from_millis(2500),
        "the cancelled call ended after {took:?}, as if it waited for the slot"
    );
    assert!(
        reply
            .messages
            .iter()
            .all(|m| m.get("id") != Some(&json!(2))),
        "no response for a cancelled call: {}",
        reply.body
    );
    let (slow, _) = slow.await.unwrap();
    assert!(
        slow.response(&json!(1)).get("result").is_some(),
        "the call in flight finishes: {}",
        slow.body
    );
    let (next, _) = call(3, "echo", json!({"text": "after"})).await.unwrap();
    assert_eq!(first_text(&next.response(&json!(3))["result"]), "after");
}

/// A command that cannot be started fails a client's requests with the reason
/// as soon as the start has failed, in both child modes and both eras, instead
/// of after the whole `--init-timeout` (left at its default of 30 s here: the
/// bound below is a sixth of it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_cannot_start_fails_requests_at_once() {
    for mode in ["per-session", "shared"] {
        let program = unspawnable_program(&format!("cannot-start-{mode}"));
        let bridge = BridgeProc::start(&["--child", mode], &[program.as_str()]).await;
        let c = client();
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
        let discover = json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{
            "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                     "io.modelcontextprotocol/clientCapabilities":{}}}});
        for (body, id, headers) in [
            (&init, 0, vec![]),
            (
                &discover,
                1,
                vec![
                    ("mcp-protocol-version", "2026-07-28"),
                    ("mcp-method", "server/discover"),
                ],
            ),
        ] {
            let started = Instant::now();
            let reply = post(&c, &bridge.url, &headers, body).await;
            let error = &reply.response(&json!(id))["error"];
            assert!(
                error["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("could not be started")),
                "{mode}: {}",
                reply.body
            );
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{mode}: the error took {:?}",
                started.elapsed()
            );
        }
        bridge.terminate();
    }
}

/// A child that exits at once is reported by its exit status (on `/readyz` and
/// in a 2026-07-28 client's error). Per session, the shared child is first asked
/// `server/discover`; the child's exit then ended that probe, and the
/// `initialize` tried after it failed with "the child closed its stdin" (or "the
/// child's output ended"), which named neither the exit nor its status. What the
/// child wrote to stderr (here a made-up secret) reaches the bridge's log, never
/// its HTTP clients.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_exits_at_once_is_reported_with_its_exit_status() {
    let bridge = BridgeProc::start(
        &[],
        &[
            "sh",
            "-c",
            "echo 'cannot reach db://admin:hunter2@db' >&2; exit 3",
        ],
    )
    .await;
    let c = client();
    let readyz = format!("{}/readyz", bridge.base);
    let deadline = Instant::now() + WAIT;
    let body = loop {
        let r = c.get(&readyz).send().await.unwrap();
        assert_eq!(r.status(), 503, "never ready");
        let body = r.text().await.unwrap();
        if !body.contains("starting") {
            break body;
        }
        assert!(Instant::now() < deadline, "down in time: {body}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(body.contains("exit status: 3"), "{body}");
    let discover = json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                 "io.modelcontextprotocol/clientCapabilities":{}}}});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "server/discover"),
    ];
    let reply = post(&c, &bridge.url, &headers, &discover).await;
    let message = reply.response(&json!(1))["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(message.contains("exit status: 3"), "{}", reply.body);
    for text in [&body, &reply.body] {
        assert!(
            !text.contains("hunter2"),
            "the child's stderr leaked: {text}"
        );
    }
    bridge.terminate();
}

/// SIGTERM with a 2026-07-28 `subscriptions/listen` stream open: the stream is
/// not a request in flight, so the bridge does not wait the whole drain time
/// for it (it did: 10 s with a dual-era child, to which the listen is
/// forwarded as a call), and the stream ends with the spec's final result
/// (`resultType` `complete`, `_meta.subscriptionId`), not with an error (with
/// a dual-era child) or a cut connection (with a legacy child). Both children:
/// per session (the shared child, spoken to in 2026-07-28) and shared (spoken
/// to in 2025-11-25, the listen served by the bridge).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_listen_streams_with_their_final_result_at_once() {
    for mode in ["per-session", "shared"] {
        let mut bridge = BridgeProc::start(&["--child", mode], &[]).await;
        let c = client();
        let body = json!({"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen",
            "params": {"notifications": {"toolsListChanged": true},
                       "_meta": modern_meta(json!({}))}});
        let mut listen = open_listen(&c, &bridge.url, &body).await;
        let ack = listen.next_message().await.expect("the acknowledgement");
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        let started = Instant::now();
        bridge.terminate();
        let last = tokio::time::timeout(Duration::from_secs(5), async {
            let mut last = None;
            while let Some(m) = listen.next_message().await {
                last = Some(m);
            }
            last
        })
        .await
        .unwrap_or_else(|_| panic!("{mode}: the listen stream is still open after 5 s"))
        .unwrap_or_else(|| panic!("{mode}: the listen stream ended without a final result"));
        assert_eq!(last["id"], "sub-1", "{mode}: {last}");
        assert_eq!(last["result"]["resultType"], "complete", "{mode}: {last}");
        assert_eq!(
            last["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "sub-1",
            "{mode}: {last}"
        );
        let status = tokio::time::timeout(WAIT, bridge.child.wait())
            .await
            .expect("the bridge exits")
            .unwrap();
        assert!(status.success(), "{mode}: {status:?}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{mode}: the bridge waited {:?} for a listen stream",
            started.elapsed()
        );
    }
}

/// A client that gives up on its `initialize` before the answer (a child slow
/// to start, a client's timeout) never learns the session's id, so nobody can
/// use or DELETE that session: it held a `--max-sessions` slot and its child
/// until the idle timeout (30 min by default), and with the slots full every
/// new client got 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_initialize_abandoned_before_its_answer_frees_its_session() {
    let script = "sleep 1; exec \"$0\" example-server";
    let bridge = BridgeProc::start(&["--max-sessions", "1"], &["sh", "-c", script, BIN]).await;
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name":"impatient","version":"1"}}});
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let gave_up = impatient
        .post(&bridge.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(init.to_string())
        .send()
        .await;
    assert!(gave_up.is_err(), "the child answers after 1 s: {gave_up:?}");
    // The slot is free again: the next client gets its session.
    let c = client();
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let reply = s.echo(&c, &bridge.url, 1, "a slot").await;
    assert_eq!(first_text(&reply.response(&json!(1))["result"]), "a slot");
}

/// A server whose tool `big` answers with a line of 17 MiB (over the bridge's
/// 16 MiB line limit for its children) and `small` with a short text.
const BIG_ANSWER_SERVER: &str = r#"
import json, sys
tool = {"inputSchema": {"type": "object"}}
for line in sys.stdin:
    m = json.loads(line)
    method = m.get("method")
    if "id" not in m or method is None:
        continue
    if method == "initialize":
        r = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
             "serverInfo": {"name": "big", "version": "1"}}
    elif method == "tools/list":
        r = {"tools": [dict(tool, name="big"), dict(tool, name="small")]}
    elif method == "tools/call":
        big = m["params"]["name"] == "big"
        r = {"content": [{"type": "text", "text": "x" * (17 << 20) if big else "small"}]}
    else:
        r = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\n")
    sys.stdout.flush()
"#;

/// A child's answer over the line limit reaches the client as -32603, as every
/// other failure of the bridge's (it came as the transport's -32000), for a
/// session's own child and for a 2026-07-28 client on the shared child; the
/// session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_answer_over_the_line_limit_is_a_32603() {
    let bridge = BridgeProc::start(&[], &["python3", "-c", BIG_ANSWER_SERVER]).await;
    let c = client();
    let call = |name: &str| json!({"name": name, "arguments": {}});
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let reply = s
        .request(&c, &bridge.url, json!(1), "tools/call", call("big"))
        .await;
    let error = &reply.response(&json!(1))["error"];
    assert_eq!(error["code"], -32603, "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("line limit"),
        "{error}"
    );
    let reply = s
        .request(&c, &bridge.url, json!(2), "tools/call", call("small"))
        .await;
    assert_eq!(first_text(&reply.response(&json!(2))["result"]), "small");
    // A 2026-07-28 client, through the shared child.
    let reply = modern(
        &c,
        &bridge.url,
        json!(3),
        "tools/call",
        call("big"),
        json!({}),
    )
    .await;
    let error = &reply.response(&json!(3))["error"];
    assert_eq!(error["code"], -32603, "{}", reply.body);
    assert!(
        error["message"].as_str().unwrap().contains("line limit"),
        "{error}"
    );
    let reply = modern(
        &c,
        &bridge.url,
        json!(4),
        "tools/call",
        call("small"),
        json!({}),
    )
    .await;
    assert_eq!(first_text(&reply.response(&json!(4))["result"]), "small");
}

/// Without `--lock`, SIGHUP (the terminal went away) stops the bridge as
/// SIGTERM does: the call in flight completes and the bridge exits 0, its
/// child ended; before, the default action killed it at once and left the
/// child running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_without_a_lock_drains_like_sigterm() {
    let mut bridge = BridgeProc::start(&["--child", "shared"], &[]).await;
    let c = client();
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","arguments":{"seconds":2,"steps":2}}});
    let call = spawn_post(&c, &bridge.url, &s, body);
    tokio::time::sleep(Duration::from_millis(400)).await;
    bridge.signal(libc::SIGHUP);
    let (reply, _) = call.await.unwrap();
    assert!(
        reply.response(&json!(1))["result"]["content"].is_array(),
        "the call in flight completed: {}",
        reply.body
    );
    let status = tokio::time::timeout(WAIT, bridge.child.wait())
        .await
        .expect("the bridge exits")
        .unwrap();
    assert!(status.success(), "{status:?}");
}
