//! `switchboard connect URL` when the host app closes stdin: what it still waits
//! for, and that the remote session is deleted before it exits.

mod common;

use std::time::{Duration, Instant};

use common::{run_with, HttpExample};
use serde_json::{json, Value};

/// The remote's log line for a session its client deleted.
const DELETED: &str = "session ended reason=the client deleted the HTTP session";

fn lines(ms: &[Value]) -> Vec<u8> {
    ms.iter()
        .map(|m| format!("{m}\n"))
        .collect::<String>()
        .into_bytes()
}

fn init() -> [Value; 2] {
    [
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    ]
}

fn modern_meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28",
           "io.modelcontextprotocol/clientCapabilities":{}})
}

/// README: "the answers to the requests it already sent are still written to
/// stdout (for up to 10 s) before the remote session is deleted". The session
/// is deleted every time, not only when the background `DELETE` happens to win
/// the race with the process's exit.
#[test]
fn connect_deletes_the_remote_session_when_the_host_app_closes_stdin() {
    let remote = HttpExample::start();
    for round in 1..=5 {
        let run = run_with(&["connect", &remote.url], Some(&lines(&init())));
        assert_eq!(run.code, Some(0), "{run:?}");
        let deadline = Instant::now() + Duration::from_secs(3);
        while remote.logged(DELETED) < round && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            remote.logged(DELETED),
            round,
            "round {round}: the remote session was not deleted; remote's log:\n{}",
            remote.log()
        );
    }
}

/// A request the host app cancelled is not answered (MCP "Cancellation": the
/// receiver should not respond), so it is not owed: closing stdin right after
/// does not hold `connect` for the whole 10 s grace.
#[test]
fn a_cancelled_request_does_not_hold_the_end_of_stdin() {
    let remote = HttpExample::start();
    let [i, n] = init();
    let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
        "params":{"name":"progress","arguments":{"seconds":30}}});
    let cancel = json!({"jsonrpc":"2.0","method":"notifications/cancelled",
        "params":{"requestId":1,"reason":"the user gave up"}});
    let run = run_with(
        &["connect", &remote.url],
        Some(&lines(&[i, n, call, cancel])),
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.elapsed < Duration::from_secs(5), "{run:?}");

    // 2026-07-28: the cancelled call is the first request.
    let mut params = json!({"name":"progress","arguments":{"seconds":30}});
    params["_meta"] = modern_meta();
    let call = json!({"jsonrpc":"2.0","id":"m","method":"tools/call","params":params});
    let cancel = json!({"jsonrpc":"2.0","method":"notifications/cancelled",
        "params":{"requestId":"m"}});
    let run = run_with(&["connect", &remote.url], Some(&lines(&[call, cancel])));
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.elapsed < Duration::from_secs(5), "{run:?}");
}

/// A 2026-07-28 host app keeps a `subscriptions/listen` open for the whole
/// session; it never ends on its own, so it must not hold the end of stdin for
/// the whole grace (the library's own stdio server ends a listen at once there,
/// 7f8e7ec). The other calls in flight are still answered.
#[test]
fn an_open_listen_does_not_hold_the_end_of_stdin() {
    let remote = HttpExample::start();
    let listen = json!({"jsonrpc":"2.0","id":"l","method":"subscriptions/listen",
        "params":{"_meta":modern_meta(),"notifications":{"toolsListChanged":true}}});
    let mut params = json!({"name":"progress","arguments":{"seconds":0.5}});
    params["_meta"] = modern_meta();
    let call = json!({"jsonrpc":"2.0","id":"c","method":"tools/call","params":params});
    let run = run_with(&["connect", &remote.url], Some(&lines(&[listen, call])));
    assert_eq!(run.code, Some(0), "{run:?}");
    let answered = run.stdout.lines().any(|l| {
        let m: Value = serde_json::from_str(l).expect("only JSON-RPC on stdout");
        m["id"] == "c" && m.get("result").is_some()
    });
    assert!(answered, "{run:?}");
    assert!(run.elapsed < Duration::from_secs(5), "{run:?}");
}

/// A host app that stops `connect` with SIGTERM instead of closing stdin (Node's
/// `child.kill()`, a supervisor) ends the remote session too: `connect` used to
/// die at once, leaving the session (and, behind a bridge, its child) for the
/// remote's idle timeout.
#[test]
fn sigterm_deletes_the_remote_session() {
    use std::io::{BufRead, BufReader, Write};
    let remote = HttpExample::start();
    let mut child = std::process::Command::new(common::exe())
        .args(["connect", &remote.url])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&lines(&init())).unwrap();
    stdin.flush().unwrap();
    // Its answer says the session is open; stdin stays open.
    let mut answer = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut answer)
        .unwrap();
    assert!(answer.contains("\"result\""), "{answer}");
    let pid = child.id().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(5);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = child.try_wait().unwrap();
    let _ = child.kill();
    assert!(status.is_some(), "connect ends on SIGTERM");
    // 128 + 15, as a shell reports a job SIGTERM ended.
    assert_eq!(status.unwrap().code(), Some(143));
    let deadline = Instant::now() + Duration::from_secs(3);
    while remote.logged(DELETED) < 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        remote.logged(DELETED),
        1,
        "the remote session was not deleted; remote's log:\n{}",
        remote.log()
    );
    drop(stdin);
}

/// The host app closes stdin while a request of the remote's (the `elicit`
/// tool's `elicitation/create`) is still unanswered: no answer can come, so
/// `connect` refuses it at once and the tool's own answer is relayed, instead of
/// the call waiting out the whole 10 s grace and ending unanswered.
#[test]
fn an_unanswered_request_of_the_remote_is_refused_when_stdin_closes() {
    use std::io::{BufRead, BufReader, Write};
    let remote = HttpExample::start();
    let mut child = std::process::Command::new(common::exe())
        .args(["connect", &remote.url])
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let [mut i, n] = init();
    i["params"]["capabilities"] = json!({"elicitation":{}});
    let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
        "params":{"name":"elicit","arguments":{}}});
    stdin.write_all(&lines(&[i, n, call])).unwrap();
    stdin.flush().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    // Read until the remote's elicitation/create has reached the host app.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        assert!(Instant::now() < deadline, "no elicitation/create");
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "stdout ended early");
        let m: Value = serde_json::from_str(&line).expect("only JSON-RPC on stdout");
        if m["method"] == "elicitation/create" {
            break;
        }
    }
    let closed = Instant::now();
    drop(stdin);
    let rest: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).expect("only JSON-RPC on stdout"))
        .collect();
    let status = child.wait().unwrap();
    let elapsed = closed.elapsed();
    assert!(status.success(), "{status:?}");
    assert!(
        rest.iter()
            .any(|m| m["id"] == 1 && m.get("method").is_none()),
        "the tools/call got no answer: {rest:?}"
    );
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
}
