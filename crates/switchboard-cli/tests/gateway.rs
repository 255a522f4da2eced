//! `switchboard gateway` under faults, with upstreams the tests control: the
//! Python fixture `tests/fixtures/gateway_upstream.py` (named tools, many tools,
//! paged lists, a `tools/list` never answered, a call never answered, a pid
//! file, a log of the calls it received) and `switchboard example-server`
//! (elicitation, sampling, echo). Each test writes the gateway's TOML
//! configuration into a temp dir, starts the binary on 127.0.0.1:0 and talks to
//! its `/mcp` route with the library client (a Streamable HTTP session, or
//! 2026-07-28 stateless requests). Every wait is bounded.

mod gateway_util;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gateway_util::{
    bounded, call_text, connect, connect_with, eventually, example_upstream, fixture,
    fixture_upstream, options, q, qa, text_of, tool_names, GatewayProc, Leg, TempDir, LEGS, LIMIT,
};
use serde_json::{json, Value};
use switchboard::Client;
use switchboard_protocol::types::{CreateMessageResult, ElicitResult};

/// `tools/call` that must be refused with a JSON-RPC error; its code and message.
async fn call_refused(client: &Client, name: &str) -> (i64, String) {
    match bounded(client.call_tool(name, json!({"text": "should not arrive"}))).await {
        Ok(r) => panic!("{name} was not refused: {r:?}"),
        Err(e) => {
            let o = e
                .error_object()
                .unwrap_or_else(|| panic!("{name}: not a JSON-RPC error: {e}"));
            (o.code, o.message.clone())
        }
    }
}

fn read_pid(path: &std::path::Path) -> Option<i32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn lines_of(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A stdio upstream killed while a call is in flight: that call fails naming
/// the upstream, the other upstream keeps answering, the killed one is
/// restarted (a new process) and its tools are listed and callable again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_stdio_upstream_fails_its_call_then_comes_back() {
    let dir = TempDir::new("killed");
    let pidfile = dir.path().join("alpha.pid");
    let calls = dir.path().join("calls.log");
    let p = pidfile.to_str().unwrap();
    let c = calls.to_str().unwrap();
    let config = [
        fixture_upstream(
            "alpha",
            &["--name", "alpha", "--pidfile", p, "--calls", c],
            "",
        ),
        fixture_upstream("beta", &["--name", "beta", "--calls", c], ""),
    ]
    .concat();
    let gw = GatewayProc::start(dir.path(), &config).await;
    let client = connect(&gw, Leg::Streamable).await;
    assert_eq!(
        tool_names(&client).await,
        ["alpha__echo", "alpha__hang", "beta__echo", "beta__hang"]
    );
    assert_eq!(
        call_text(&client, "alpha__echo", json!({"text": "before"})).await,
        "alpha:echo:before"
    );
    let first = read_pid(&pidfile).expect("alpha wrote its pid");

    let client = Arc::new(client);
    let hanging = {
        let client = client.clone();
        tokio::spawn(async move {
            tokio::time::timeout(
                LIMIT,
                client.call_tool("alpha__hang", json!({"text": "in flight"})),
            )
            .await
        })
    };
    // The call reached alpha: kill it now.
    eventually(LIMIT, "alpha received the hanging call", || async {
        lines_of(&calls)
            .iter()
            .any(|l| l == "alpha hang in flight")
            .then_some(())
    })
    .await;
    // SAFETY: a plain system call on the fixture process this test configured,
    // by the pid it wrote.
    assert_eq!(unsafe { libc::kill(first, libc::SIGKILL) }, 0);

    let outcome = hanging
        .await
        .unwrap()
        .expect("the call in flight ends once its upstream dies");
    let said = match outcome {
        Ok(r) => {
            assert!(r.is_error(), "the killed call succeeded: {r:?}");
            text_of(&r)
        }
        Err(e) => e.to_string(),
    };
    eprintln!("the killed call: {said}");
    // The upstream's name, not only the served tool name.
    assert!(
        said.replace("alpha__hang", "").contains("alpha"),
        "the error does not name the upstream: {said}"
    );

    // The other upstream is unaffected.
    assert_eq!(
        call_text(&client, "beta__echo", json!({"text": "meanwhile"})).await,
        "beta:echo:meanwhile"
    );

    // alpha comes back: a new process, answering, and listed again.
    let text = eventually(Duration::from_secs(60), "alpha answers again", || {
        let client = client.clone();
        async move {
            match client
                .call_tool("alpha__echo", json!({"text": "after"}))
                .await
            {
                Ok(r) if !r.is_error() => Some(text_of(&r)),
                _ => None,
            }
        }
    })
    .await;
    assert_eq!(text, "alpha:echo:after");
    let second = read_pid(&pidfile).expect("alpha wrote its pid again");
    assert_ne!(first, second, "alpha was not restarted");
    let names = eventually(LIMIT, "alpha's tools listed again", || {
        let client = client.clone();
        async move {
            let names = tool_names(&client).await;
            names.iter().any(|n| n == "alpha__echo").then_some(names)
        }
    })
    .await;
    assert_eq!(
        names,
        ["alpha__echo", "alpha__hang", "beta__echo", "beta__hang"]
    );
    // A fresh session sees both as well.
    let fresh = connect(&gw, Leg::Streamable).await;
    assert_eq!(tool_names(&fresh).await, names);
}

/// The children of process `parent` whose command line contains `needle`.
fn children_of(parent: u32, needle: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`: comm may hold spaces, so after the last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if ppid == Some(parent) && String::from_utf8_lossy(&cmdline).contains(needle) {
            out.push(pid);
        }
    }
    out
}

/// The same for a 2026-07-28-only upstream (`kappa`: `example-server --modern-only`,
/// found by its parent and command line): a Streamable HTTP session's and a
/// 2026-07-28 client's calls in flight (`progress` over 30 s) fail naming it
/// when it is killed, the other upstream keeps answering, and it is
/// restarted and serves again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_2026_upstream_fails_its_calls_then_comes_back() {
    let dir = TempDir::new("killed-modern");
    let config = [
        example_upstream("kappa", &["--modern-only"]),
        fixture_upstream("beta", &["--name", "beta"], ""),
    ]
    .concat();
    let gw = GatewayProc::start(dir.path(), &config).await;
    let gateway_pid = gw.child.id().expect("running");
    let legacy = Arc::new(connect(&gw, Leg::Streamable).await);
    let modern = Arc::new(connect(&gw, Leg::Modern).await);
    for client in [&legacy, &modern] {
        assert_eq!(
            call_text(client, "kappa__echo", json!({"text": "before"})).await,
            "before"
        );
    }
    let first = children_of(gateway_pid, "--modern-only");
    assert_eq!(first.len(), 1, "one shared child: {first:?}");
    let (progressed_tx, mut progressed) = tokio::sync::mpsc::unbounded_channel();
    let in_flight: Vec<_> = [("legacy", legacy.clone()), ("modern", modern.clone())]
        .into_iter()
        .map(|(tag, client)| {
            let tx = progressed_tx.clone();
            let options = switchboard::CallOptions::new().on_progress(move |_| {
                let _ = tx.send(tag);
            });
            tokio::spawn(async move {
                let r = tokio::time::timeout(
                    LIMIT,
                    client.call_tool_with(
                        "kappa__progress",
                        json!({"seconds": 30, "steps": 300}),
                        options,
                    ),
                )
                .await;
                (tag, r)
            })
        })
        .collect();
    // Both calls are running in the upstream (each had a progress report).
    let mut seen = BTreeSet::new();
    while seen.len() < 2 {
        let tag = bounded(progressed.recv()).await.expect("progress");
        seen.insert(tag);
    }
    // SAFETY: a plain system call on the upstream child this test configured,
    // by the pid its parent's /proc entry gave.
    assert_eq!(unsafe { libc::kill(first[0], libc::SIGKILL) }, 0);
    for task in in_flight {
        let (tag, outcome) = task.await.unwrap();
        let said = match outcome.expect("the call in flight ends once its upstream dies") {
            Ok(r) => {
                assert!(r.is_error(), "{tag}: the killed call succeeded: {r:?}");
                text_of(&r)
            }
            Err(e) => e.to_string(),
        };
        assert!(
            said.replace("kappa__progress", "").contains("kappa"),
            "{tag}: the error does not name the upstream: {said}"
        );
    }
    assert_eq!(
        call_text(&legacy, "beta__echo", json!({"text": "meanwhile"})).await,
        "beta:echo:meanwhile"
    );
    for (tag, client) in [("legacy", &legacy), ("modern", &modern)] {
        let text = eventually(Duration::from_secs(60), "kappa answers again", || {
            let client = Arc::clone(client);
            async move {
                match client
                    .call_tool("kappa__echo", json!({"text": "after"}))
                    .await
                {
                    Ok(r) if !r.is_error() => Some(text_of(&r)),
                    _ => None,
                }
            }
        })
        .await;
        assert_eq!(text, "after", "{tag}");
    }
    let second = children_of(gateway_pid, "--modern-only");
    assert_eq!(second.len(), 1, "{second:?}");
    assert_ne!(first, second, "kappa was not restarted");
    assert!(tool_names(&modern)
        .await
        .contains(&"kappa__echo".to_owned()));
}

/// An upstream that never answers `tools/list` (its `timeout` 1s): a list
/// through the gateway answers in about that time with the other upstream's
/// tools only, for every kind of client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_never_answered_is_left_out_after_the_upstream_timeout() {
    let dir = TempDir::new("hang-list");
    let calls = dir.path().join("calls.log");
    let config = [
        fixture_upstream(
            "mute",
            &[
                "--name",
                "mute",
                "--hang-list",
                "--calls",
                calls.to_str().unwrap(),
            ],
            "timeout = \"1s\"",
        ),
        fixture_upstream("talky", &["--name", "talky", "--tool", "extra"], ""),
    ]
    .concat();
    let gw = GatewayProc::start(dir.path(), &config).await;
    for leg in LEGS {
        let client = connect(&gw, leg).await;
        let start = Instant::now();
        let names = tool_names(&client).await;
        let took = start.elapsed();
        assert_eq!(
            names,
            ["talky__echo", "talky__extra", "talky__hang"],
            "{leg:?}"
        );
        // 1 s timeout; the 10 s default would exceed this.
        assert!(
            took < Duration::from_secs(5),
            "{leg:?}: tools/list took {took:?}"
        );
        assert_eq!(
            call_text(&client, "talky__extra", json!({"text": leg_tag(leg)})).await,
            format!("talky:extra:{}", leg_tag(leg))
        );
        // A name of the mute upstream was never listed: not served.
        let (code, message) = call_refused(&client, "mute__echo").await;
        assert_eq!(code, -32602, "{leg:?}: {message}");
    }
    assert_eq!(lines_of(&calls), Vec::<String>::new());
}

/// SIGTERM drains calls in flight (up to 10 s) and stops: with no downstream
/// request in flight it stops at once, even when an upstream never answered
/// the gateway's own `tools/list` (which its 1 s list timeout gave up on).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_at_once_when_an_upstream_never_answered_its_list() {
    let dir = TempDir::new("hang-list-stop");
    let config = [
        fixture_upstream(
            "mute",
            &["--name", "mute", "--hang-list"],
            "timeout = \"1s\"",
        ),
        fixture_upstream("talky", &["--name", "talky"], ""),
    ]
    .concat();
    let mut gw = GatewayProc::start(dir.path(), &config).await;
    let client = connect(&gw, Leg::Streamable).await;
    assert_eq!(tool_names(&client).await, ["talky__echo", "talky__hang"]);
    client.close().await;
    let (took, status) = gw.terminate().await;
    assert!(status.success(), "{status}");
    assert!(
        took < Duration::from_secs(5),
        "the gateway took {took:?} to stop with nothing in flight: {}",
        gw.log()
    );
}

/// The same with every upstream answering: the baseline of the test above.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_at_once_with_nothing_in_flight() {
    let dir = TempDir::new("stop");
    let config = [
        fixture_upstream("one", &["--name", "one"], ""),
        fixture_upstream("two", &["--name", "two"], ""),
    ]
    .concat();
    let mut gw = GatewayProc::start(dir.path(), &config).await;
    let client = connect(&gw, Leg::Streamable).await;
    assert_eq!(tool_names(&client).await.len(), 4);
    client.close().await;
    let (took, status) = gw.terminate().await;
    assert!(status.success(), "{status}");
    assert!(
        took < Duration::from_secs(5),
        "the gateway took {took:?} to stop with nothing in flight"
    );
}

fn leg_tag(leg: Leg) -> &'static str {
    match leg {
        Leg::Streamable => "streamable",
        Leg::Modern => "modern",
        Leg::LegacySse => "sse",
    }
}

/// Two upstreams with `prefix = ""` both serving `shared` (and the fixture's
/// `echo` and `hang`): the clashing names are withheld from both and logged, a
/// call to one is -32602 and reaches neither, the other names are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_two_unprefixed_upstreams_claim_is_withheld() {
    let dir = TempDir::new("clash");
    let calls = dir.path().join("calls.log");
    let c = calls.to_str().unwrap();
    let config = [
        fixture_upstream(
            "xx",
            &[
                "--name", "xx", "--tool", "shared", "--tool", "only_x", "--calls", c,
            ],
            "prefix = \"\"",
        ),
        fixture_upstream(
            "yy",
            &[
                "--name", "yy", "--tool", "shared", "--tool", "only_y", "--calls", c,
            ],
            "prefix = \"\"",
        ),
    ]
    .concat();
    let gw = GatewayProc::start(dir.path(), &config).await;
    for leg in LEGS {
        let client = connect(&gw, leg).await;
        assert_eq!(tool_names(&client).await, ["only_x", "only_y"], "{leg:?}");
        for name in ["shared", "echo"] {
            let (code, message) = call_refused(&client, name).await;
            assert_eq!(code, -32602, "{leg:?} {name}: {message}");
        }
        assert_eq!(
            call_text(&client, "only_x", json!({"text": "1"})).await,
            "xx:only_x:1"
        );
        assert_eq!(
            call_text(&client, "only_y", json!({"text": "2"})).await,
            "yy:only_y:2"
        );
    }
    assert_eq!(
        lines_of(&calls),
        ["xx only_x 1", "yy only_y 2"].repeat(3),
        "a withheld name reached an upstream"
    );
    let log = gw.log();
    assert!(
        log.lines().any(|l| l.contains("withheld")
            && l.contains("name=shared")
            && l.contains("upstreams=xx and yy")),
        "the clash on `shared` was not logged naming both upstreams: {log}"
    );
}

/// An unprefixed upstream offering `pre__echo` and an upstream named `pre`
/// (served as `pre__echo` and `pre__hang`) claim the same served name: it is
/// withheld from both and a call to it reaches neither; `pre__hang` is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_name_claimed_through_a_prefix_and_without_one_is_withheld() {
    let dir = TempDir::new("clash-prefix");
    let calls = dir.path().join("calls.log");
    let c = calls.to_str().unwrap();
    let config = [
        fixture_upstream(
            "bare",
            &["--name", "bare", "--tool", "pre__echo", "--calls", c],
            "prefix = \"\"",
        ),
        fixture_upstream("pre", &["--name", "pre", "--calls", c], ""),
    ]
    .concat();
    let gw = GatewayProc::start(dir.path(), &config).await;
    for leg in LEGS {
        let client = connect(&gw, leg).await;
        assert_eq!(
            tool_names(&client).await,
            ["echo", "hang", "pre__hang"],
            "{leg:?}"
        );
        let (code, message) = call_refused(&client, "pre__echo").await;
        assert_eq!(code, -32602, "{leg:?}: {message}");
        assert_eq!(
            call_text(&client, "echo", json!({"text": leg_tag(leg)})).await,
            format!("bare:echo:{}", leg_tag(leg))
        );
    }
    assert_eq!(
        lines_of(&calls),
        ["bare echo streamable", "bare echo modern", "bare echo sse"],
        "a withheld name reached an upstream"
    );
}

/// The `/mcp` route's tool allowlist: only the allowed tools that the upstreams
/// list are offered (an allowed name nobody lists is not); a call to a tool an
/// upstream lists but the route does not allow is -32602 and never reaches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_route_allowlist_limits_lists_and_calls() {
    let dir = TempDir::new("allow");
    let calls = dir.path().join("calls.log");
    let c = calls.to_str().unwrap();
    let config = [
        fixture_upstream(
            "pp",
            &["--name", "pp", "--tool", "secret", "--calls", c],
            "",
        ),
        fixture_upstream("qq", &["--name", "qq", "--calls", c], ""),
        format!(
            "[routes.default]\npath = \"/mcp\"\nupstreams = {}\ntools = {}\n",
            qa(&["pp", "qq"]),
            qa(&["pp__echo", "qq__echo", "qq__nobody_lists_this"])
        ),
    ]
    .concat();
    let gw = GatewayProc::start(dir.path(), &config).await;
    for leg in LEGS {
        let client = connect(&gw, leg).await;
        assert_eq!(
            tool_names(&client).await,
            ["pp__echo", "qq__echo"],
            "{leg:?}"
        );
        for name in ["pp__secret", "pp__hang", "qq__nobody_lists_this"] {
            let (code, message) = call_refused(&client, name).await;
            assert_eq!(code, -32602, "{leg:?} {name}: {message}");
        }
        let tag = leg_tag(leg);
        assert_eq!(
            call_text(&client, "pp__echo", json!({"text": tag})).await,
            format!("pp:echo:{tag}")
        );
    }
    assert_eq!(
        lines_of(&calls),
        ["pp echo streamable", "pp echo modern", "pp echo sse"],
        "a call outside the allowlist reached an upstream"
    );
}

/// Three upstreams of 250 tools each, each listing 60 per page: walking the
/// gateway's `nextCursor` yields all 750 exactly once, at most 100 a page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_across_three_upstreams_yield_every_tool_once() {
    let dir = TempDir::new("pages");
    let names = ["u1", "u2", "u3"];
    // 248 numbered tools plus the fixture's echo and hang: 250 each.
    let config: String = names
        .iter()
        .map(|n| fixture_upstream(n, &["--name", n, "--tools", "248", "--page", "60"], ""))
        .collect();
    let gw = GatewayProc::start(dir.path(), &config).await;
    let mut want = BTreeSet::new();
    for n in names {
        want.insert(format!("{n}__echo"));
        want.insert(format!("{n}__hang"));
        for i in 0..248 {
            want.insert(format!("{n}__t{i:03}"));
        }
    }
    assert_eq!(want.len(), 750);
    for leg in LEGS {
        let client = connect(&gw, leg).await;
        let mut seen = Vec::new();
        let mut cursor = None;
        let mut pages = 0;
        loop {
            let page = bounded(client.list_tools_page(cursor.clone()))
                .await
                .unwrap_or_else(|e| panic!("{leg:?}: page {pages}: {e}"));
            pages += 1;
            assert!(
                page.tools.len() <= 100,
                "{leg:?}: page {pages} has {} tools",
                page.tools.len()
            );
            seen.extend(page.tools.into_iter().map(|t| t.name));
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
            assert!(pages < 50, "{leg:?}: the cursor never ends");
        }
        let unique: BTreeSet<String> = seen.iter().cloned().collect();
        assert_eq!(seen.len(), 750, "{leg:?}: {pages} pages");
        assert_eq!(unique, want, "{leg:?}");
        assert_eq!(pages, 8, "{leg:?}");
        // A cursor the gateway never gave is refused (the spec's SHOULD).
        let e = bounded(client.list_tools_page(Some("not-a-cursor".into())))
            .await
            .expect_err("a made-up cursor is refused");
        assert_eq!(
            e.error_object().map(|o| o.code),
            Some(-32602),
            "{leg:?}: {e}"
        );
        // The library's own walk agrees.
        assert_eq!(tool_names(&client).await.len(), 750, "{leg:?}");
        // A tool from the last upstream's last page is callable.
        assert_eq!(
            call_text(&client, "u3__t247", json!({"text": "last"})).await,
            "u3:t247:last"
        );
    }
}

/// Client options for session `who`: elicitation answers `{name: who}`, sampling
/// answers `model of {who}`; with `pair`, each handler first waits for the
/// other session's (both calls are then in flight when either is answered).
fn answering_as(
    who: &'static str,
    pair: Option<(Arc<tokio::sync::Barrier>, Arc<tokio::sync::Barrier>)>,
) -> switchboard::ClientOptions {
    let (e, s) = match pair {
        Some((e, s)) => (Some(e), Some(s)),
        None => (None, None),
    };
    options()
        .with_elicitation(move |_p, _cx| {
            let e = e.clone();
            async move {
                if let Some(e) = e {
                    e.wait().await;
                }
                Ok(serde_json::from_value::<ElicitResult>(
                    json!({"action": "accept", "content": {"name": who}}),
                )
                .unwrap())
            }
        })
        .with_sampling(move |_p, _cx| {
            let s = s.clone();
            async move {
                if let Some(s) = s {
                    s.wait().await;
                }
                Ok(serde_json::from_value::<CreateMessageResult>(json!({
                    "role": "assistant",
                    "content": {"type": "text", "text": format!("model of {who}")},
                    "model": "test",
                }))
                .unwrap())
            }
        })
}

/// `tools/call` of `name` by each client at once; each `(who, text)`.
async fn call_each(
    clients: &[(&'static str, Client)],
    name: &str,
    arguments: Value,
) -> Vec<(&'static str, String)> {
    let runs = clients.iter().map(|(who, client)| {
        let arguments = arguments.clone();
        async move {
            let r = bounded(client.call_tool(name, arguments))
                .await
                .unwrap_or_else(|e| panic!("{who}: {name}: {e}"));
            assert!(!r.is_error(), "{who}: {name}: {r:?}");
            (*who, text_of(&r))
        }
    });
    futures_join(runs).await
}

fn expected(items: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    items.iter().map(|(w, t)| (*w, (*t).to_owned())).collect()
}

/// Two clients on `leg`, each answering as itself, call `ex__elicit` then
/// `ex__sample` of `example-server --modern-only` at once: each request reaches
/// the client whose call caused it (the upstream binds them to their call with
/// 2026-07-28 `input_required`), and each result carries its own client's
/// answer.
async fn two_clients_answer_their_own_calls(leg: Leg) {
    let dir = TempDir::new("elicit");
    let config = [
        example_upstream("ex", &["--modern-only"]),
        example_upstream("other", &[]),
    ]
    .concat();
    let gw = GatewayProc::start(dir.path(), &config).await;
    let pair = (
        Arc::new(tokio::sync::Barrier::new(2)),
        Arc::new(tokio::sync::Barrier::new(2)),
    );
    let mut clients = Vec::new();
    for who in ["alice", "bob"] {
        let opts = answering_as(who, Some(pair.clone()));
        clients.push((who, connect_with(&gw, leg, opts).await));
    }
    assert_eq!(
        call_each(&clients, "ex__elicit", json!({})).await,
        expected(&[("alice", "hello, alice"), ("bob", "hello, bob")])
    );
    assert_eq!(
        call_each(&clients, "ex__sample", json!({"prompt": "hi"})).await,
        expected(&[
            ("alice", "the model said: model of alice"),
            ("bob", "the model said: model of bob")
        ])
    );
}

/// Concurrent elicitation and sampling, 2026-07-28 clients.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_elicitation_and_sampling_reach_the_client_of_their_call() {
    two_clients_answer_their_own_calls(Leg::Modern).await;
}

/// Concurrent elicitation and sampling, Streamable HTTP sessions (2025-11-25):
/// the gateway must turn the upstream's `input_required` into requests on
/// each session's call stream, as `switchboard bridge` does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_elicitation_and_sampling_reach_the_session_of_their_call() {
    two_clients_answer_their_own_calls(Leg::Streamable).await;
}

/// A shared 2025-11-25 stdio upstream (`example-server`): its elicitation and
/// sampling requests, sent during a call of one client while others are
/// connected, reach the client of that call, alternating between a Streamable
/// HTTP session, a legacy HTTP+SSE session and a 2026-07-28 client (for which
/// the gateway turns the request into `input_required`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_and_sampling_from_a_legacy_upstream_reach_the_calling_session() {
    let dir = TempDir::new("elicit-legacy");
    let config = [example_upstream("ex", &[]), example_upstream("other", &[])].concat();
    let gw = GatewayProc::start(dir.path(), &config).await;
    let mut clients = Vec::new();
    for (who, leg) in [
        ("alice", Leg::Streamable),
        ("bob", Leg::LegacySse),
        ("carol", Leg::Modern),
    ] {
        clients.push((who, connect_with(&gw, leg, answering_as(who, None)).await));
    }
    for round in 0..2 {
        for (who, client) in &clients {
            assert_eq!(
                call_text(client, "ex__elicit", json!({})).await,
                format!("hello, {who}"),
                "round {round}"
            );
            assert_eq!(
                call_text(client, "ex__sample", json!({"prompt": "hi"})).await,
                format!("the model said: model of {who}"),
                "round {round}"
            );
        }
    }
}

/// Runs futures concurrently on this task, keeping their order.
async fn futures_join<F: std::future::Future>(futures: impl Iterator<Item = F>) -> Vec<F::Output> {
    let handles: Vec<_> = futures.map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = handles.iter().map(|_| None).collect();
    let mut handles: Vec<Option<_>> = handles.into_iter().map(Some).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, slot) in handles.iter_mut().enumerate() {
            if let Some(f) = slot {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => {
                        outputs[i] = Some(v);
                        *slot = None;
                    }
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().map(Option::unwrap).collect()
}

/// 200 concurrent clients (100 Streamable HTTP sessions, 50 legacy HTTP+SSE
/// sessions, 50 2026-07-28) over
/// three shared `example-server` upstreams, each calling `echo` on every
/// upstream three times with text unique to it: every reply arrives once, to
/// its caller, with its own text.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_concurrent_sessions_get_their_own_replies() {
    let dir = TempDir::new("many");
    let config = [
        example_upstream("e1", &[]),
        example_upstream("e2", &[]),
        example_upstream("e3", &[]),
    ]
    .concat();
    let gw = Arc::new(GatewayProc::start(dir.path(), &config).await);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..200 {
        let gw = gw.clone();
        tasks.push(tokio::spawn(async move {
            let leg = match i % 4 {
                2 => Leg::LegacySse,
                3 => Leg::Modern,
                _ => Leg::Streamable,
            };
            let client = connect(&gw, leg).await;
            let mut texts = Vec::new();
            for round in 0..3 {
                for up in ["e1", "e2", "e3"] {
                    let text = format!("client {i} {leg:?} {up} round {round}");
                    let got =
                        call_text(&client, &format!("{up}__echo"), json!({"text": text})).await;
                    assert_eq!(got, text, "client {i}: a reply not its own");
                    texts.push(got);
                }
            }
            client.close().await;
            texts
        }));
    }
    let mut all = BTreeSet::new();
    for t in tasks {
        let texts = tokio::time::timeout(Duration::from_secs(180), t)
            .await
            .expect("every client finishes in time")
            .expect("no client panicked");
        assert_eq!(texts.len(), 9);
        all.extend(texts);
    }
    assert_eq!(all.len(), 1800, "replies lost or duplicated");
    eprintln!("200 clients x 9 calls in {:?}", started.elapsed());
    let (status, body) = gw.readyz().await;
    assert_eq!(status, 200, "{body}");
}

/// `/readyz` with an upstream whose command exits at once: 200 while the other
/// one is ready (its tools served, the dead one's refused), and 503 when only
/// the broken one is configured; either way a JSON body (`application/json`)
/// saying whether ready and each upstream's state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_reports_a_dead_upstream() {
    let dir = TempDir::new("readyz");
    let dead = format!(
        "[upstreams.dead]\ncommand = \"python3\"\nargs = {}\n",
        qa(&["-c", "import sys; sys.exit(3)"])
    );
    let config = [
        dead.clone(),
        fixture_upstream("fine", &["--name", "fine"], ""),
    ]
    .concat();
    let gw = GatewayProc::start(dir.path(), &config).await;
    let report = eventually(LIMIT, "/readyz 200, dead down", || async {
        let (status, content_type, body) = readyz(&gw).await;
        if status != 200 {
            return None;
        }
        assert_eq!(content_type, "application/json", "{body}");
        let v: Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("/readyz body is not JSON ({e}): {body}"));
        (v["upstreams"]["dead"]["state"] == "down").then_some(v)
    })
    .await;
    assert_eq!(report["ready"], true, "{report}");
    assert_eq!(report["upstreams"]["fine"]["state"], "ready", "{report}");
    assert_eq!(report["upstreams"]["fine"]["listed"], true, "{report}");
    assert!(
        report["upstreams"]["dead"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("exit status: 3")),
        "{report}"
    );
    let client = connect(&gw, Leg::Streamable).await;
    assert_eq!(tool_names(&client).await, ["fine__echo", "fine__hang"]);
    assert_eq!(
        call_text(&client, "fine__echo", json!({"text": "up"})).await,
        "fine:echo:up"
    );
    // Known down: at once, naming it (not an unknown tool).
    let (code, message) = call_refused(&client, "dead__echo").await;
    assert_eq!(code, -32603, "{message}");
    assert!(message.contains("upstream server dead is"), "{message}");
    drop(client);
    drop(gw);

    let dir2 = TempDir::new("readyz-down");
    let gw = GatewayProc::start(dir2.path(), &dead).await;
    let report = eventually(LIMIT, "/readyz names dead as down", || async {
        let (status, content_type, body) = readyz(&gw).await;
        assert_eq!(status, 503, "{body}");
        assert_eq!(content_type, "application/json", "{body}");
        let v: Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("/readyz body is not JSON ({e}): {body}"));
        (v["upstreams"]["dead"]["state"] == "down").then_some(v)
    })
    .await;
    assert_eq!(report["ready"], false, "{report}");
    assert_eq!(
        report["upstreams"].as_object().unwrap().len(),
        1,
        "{report}"
    );
}

/// `GET /readyz`: status, content type (without parameters) and body.
async fn readyz(gw: &GatewayProc) -> (u16, String, String) {
    let c = reqwest::Client::builder().timeout(LIMIT).build().unwrap();
    let r = bounded(c.get(format!("{}/readyz", gw.base)).send())
        .await
        .expect("/readyz answers");
    let status = r.status().as_u16();
    let content_type = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned();
    (status, content_type, r.text().await.unwrap())
}

/// A reload under load (issue 22, "Reload"): while sessions of every leg call
/// the unchanged upstream `keep` without pause, the file is rewritten to
/// remove `gone` and add `fresh` (then SIGHUP, and once by the file watch
/// alone): no call of `keep` fails, the open sessions see the new lists and
/// are told they changed, `keep`'s process is the same one, and a broken file
/// afterwards is refused with the running configuration kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_under_load_drops_no_call_of_an_unchanged_upstream() {
    let dir = TempDir::new("reload");
    let pidfile = dir.path().join("keep.pid");
    let p = pidfile.to_str().unwrap();
    let keep = fixture_upstream("keep", &["--name", "keep", "--pidfile", p], "");
    let config = [keep.clone(), example_upstream("gone", &[])].concat();
    let mut gw = GatewayProc::start(dir.path(), &config).await;
    let mut clients = Vec::new();
    for leg in LEGS {
        clients.push(Arc::new(connect(&gw, leg).await));
    }
    eventually(LIMIT, "both upstreams listed", || {
        let c = clients[0].clone();
        async move {
            let names = tool_names(&c).await;
            (names.contains(&"keep__echo".to_owned()) && names.contains(&"gone__echo".to_owned()))
                .then_some(())
        }
    })
    .await;
    let pid_before = read_pid(&pidfile).expect("keep wrote its pid");
    // Load: every client calls keep__echo until told to stop; each reply checked.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut load = Vec::new();
    for (i, c) in clients.iter().enumerate() {
        let (c, stop) = (c.clone(), stop.clone());
        load.push(tokio::spawn(async move {
            let mut n = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let text = format!("c{i}-{n}");
                let got = call_text(&c, "keep__echo", json!({ "text": text })).await;
                assert!(got.contains(&text), "{text}: {got}");
                n += 1;
            }
            n
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Reload by SIGHUP: `gone` out, `fresh` in, `keep` as it was.
    let file = dir.path().join("gateway.toml");
    std::fs::write(
        &file,
        [keep.clone(), example_upstream("fresh", &[])].concat(),
    )
    .unwrap();
    let pid = libc::pid_t::try_from(gw.child.id().unwrap()).unwrap();
    // SAFETY: a plain system call on the gateway this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGHUP) }, 0);
    for c in &clients {
        let c = c.clone();
        eventually(LIMIT, "the new upstreams in every session's list", || {
            let c = c.clone();
            async move {
                let names = tool_names(&c).await;
                (names.contains(&"fresh__echo".to_owned())
                    && !names.iter().any(|n| n.starts_with("gone__")))
                .then_some(())
            }
        })
        .await;
    }
    let (code, _) = call_refused(&clients[0], "gone__echo").await;
    assert_eq!(
        code, -32602,
        "a removed upstream's tool is no longer served"
    );
    // A second reload by the file watch alone (no signal): `fresh` goes too.
    std::fs::write(&file, keep.clone()).unwrap();
    eventually(LIMIT, "the file watch applies the change", || {
        let c = clients[1].clone();
        async move {
            let names = tool_names(&c).await;
            (!names.iter().any(|n| n.starts_with("fresh__"))).then_some(())
        }
    })
    .await;
    // A broken file: refused, the running configuration kept.
    std::fs::write(&file, "[upstreams.keep\n").unwrap();
    eventually(LIMIT, "the broken file refused", || {
        let log = gw.log();
        async move { log.contains("reload refused").then_some(()) }
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut calls = 0;
    for l in load {
        calls += bounded(l).await.expect("no call of keep failed");
    }
    assert!(calls > 0);
    assert_eq!(
        read_pid(&pidfile),
        Some(pid_before),
        "keep was not restarted"
    );
    assert!(tool_names(&clients[2])
        .await
        .contains(&"keep__echo".to_owned()));
    let log = gw.log();
    assert!(
        log.contains(
            "reloaded: added [fresh], removed [gone], restarted [], prefix changed [], kept [keep]"
        ),
        "{log}"
    );
    let (_, status) = gw.terminate().await;
    assert!(status.success());
}

/// A reload that changes only an upstream's prefix serves its tools under
/// the new one from the same child: not restarted (its state kept), the
/// sessions' lists renamed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_prefix_alone_keeps_the_child() {
    let dir = TempDir::new("reprefix");
    let pidfile = dir.path().join("keep.pid");
    let p = pidfile.to_str().unwrap();
    let mut gw = GatewayProc::start(
        dir.path(),
        &fixture_upstream("keep", &["--name", "keep", "--pidfile", p], ""),
    )
    .await;
    let c = connect(&gw, Leg::Streamable).await;
    eventually(LIMIT, "keep listed", || {
        let c = &c;
        async move {
            tool_names(c)
                .await
                .contains(&"keep__echo".to_owned())
                .then_some(())
        }
    })
    .await;
    let pid_before = read_pid(&pidfile).expect("keep wrote its pid");
    std::fs::write(
        dir.path().join("gateway.toml"),
        fixture_upstream(
            "keep",
            &["--name", "keep", "--pidfile", p],
            "prefix = \"kept\"",
        ),
    )
    .unwrap();
    eventually(LIMIT, "the new prefix in the session's list", || {
        let c = &c;
        async move {
            let names = tool_names(c).await;
            (names.contains(&"kept__echo".to_owned())
                && !names.iter().any(|n| n.starts_with("keep__")))
            .then_some(())
        }
    })
    .await;
    assert!(call_text(&c, "kept__echo", json!({"text": "x"}))
        .await
        .contains("keep:echo:x"));
    assert_eq!(
        read_pid(&pidfile),
        Some(pid_before),
        "the child was not restarted"
    );
    let log = gw.log();
    assert!(
        log.contains("restarted [], prefix changed [keep], kept []"),
        "{log}"
    );
    let (_, status) = gw.terminate().await;
    assert!(status.success());
}

/// `child = "per-session"` (issue 22, "Upstreams"): each legacy session gets a
/// child of its own at its first request there, the same call from two
/// sessions reaches two processes, a 2026-07-28 client is served by the shared
/// one, and a session's child ends with the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_per_session_is_started_for_each_session_and_ended_with_it() {
    let dir = TempDir::new("per-session");
    let config = fixture_upstream("own", &["--name", "own"], "child = \"per-session\"");
    let gw = GatewayProc::start(dir.path(), &config).await;
    let gateway_pid = gw.child.id().unwrap();
    let count = || children_of(gateway_pid, "gateway_upstream.py").len();
    let modern = connect(&gw, Leg::Modern).await;
    eventually(LIMIT, "the shared child lists", || {
        let m = &modern;
        async move {
            tool_names(m)
                .await
                .contains(&"own__echo".to_owned())
                .then_some(())
        }
    })
    .await;
    assert!(call_text(&modern, "own__echo", json!({"text": "m"}))
        .await
        .contains("own:echo:m"));
    assert_eq!(count(), 1, "2026-07-28 clients use the shared child");
    let a = connect(&gw, Leg::Streamable).await;
    let b = connect(&gw, Leg::LegacySse).await;
    assert!(call_text(&a, "own__echo", json!({"text": "a"}))
        .await
        .contains("own:echo:a"));
    assert!(call_text(&b, "own__echo", json!({"text": "b"}))
        .await
        .contains("own:echo:b"));
    // And again: each session keeps its child.
    assert!(call_text(&a, "own__echo", json!({"text": "a2"}))
        .await
        .contains("a2"));
    assert_eq!(count(), 3, "the shared child and one per session");
    bounded(a.close()).await;
    eventually(LIMIT, "the closed session's child ends", || async {
        (count() == 2).then_some(())
    })
    .await;
    assert!(call_text(&b, "own__echo", json!({"text": "b2"}))
        .await
        .contains("b2"));
}

/// SIGKILL to `pid`.
fn kill_hard(pid: i32) {
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
}

/// A gateway in `dir` with one fixture upstream `own` of child mode `mode`,
/// and one session whose own child of it answered: the gateway, its
/// configuration, the shared child's pids, the session, its child's pid.
async fn own_child_session(
    dir: &TempDir,
    mode: &str,
) -> (GatewayProc, String, Vec<i32>, RawSession, i32) {
    let config = fixture_upstream("own", &["--name", "own"], &format!("child = {}", q(mode)));
    let gw = GatewayProc::start(dir.path(), &config).await;
    let gateway_pid = gw.child.id().unwrap();
    let children = || children_of(gateway_pid, "gateway_upstream.py");
    let shared = eventually(LIMIT, "the shared child starts", || async {
        let found = children();
        (found.len() == 1).then_some(found)
    })
    .await;
    let mut s = RawSession::open(&gw.url).await;
    echo_within(&mut s, "own__echo", "a").await;
    let own = new_child(&shared, &children());
    (gw, config, shared, s, own)
}

/// `s.echo(name, text)` until it succeeds (within [`LIMIT`]): its text.
async fn echo_within(s: &mut RawSession, name: &str, text: &str) -> String {
    let deadline = Instant::now() + LIMIT;
    loop {
        match s.echo(name, text).await {
            Ok(said) => return said,
            Err(why) => assert!(Instant::now() < deadline, "{name} never answered: {why}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The pid of a child in `after` that is not in `before` (the highest: a
/// process that is still ending may show beside its successor for a moment).
fn new_child(before: &[i32], after: &[i32]) -> i32 {
    let new = after.iter().copied().filter(|p| !before.contains(p)).max();
    new.unwrap_or_else(|| panic!("a new child: {before:?} then {after:?}"))
}

/// `child = "per-session"` (issue 30, one child policy): a session whose own
/// child dies ends, as the bridge's does (its next request gets 404, never a
/// result from a child it never initialized); no child is started for it
/// again, and a new session gets a new child and works. The gateway used to
/// start a new child under the same session at its next request, the
/// session's server state silently lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_session_childs_death_ends_its_gateway_session() {
    let dir = TempDir::new("per-session-dies");
    let (gw, config, shared, s, own) = own_child_session(&dir, "per-session").await;
    let children = || children_of(gw.child.id().unwrap(), "gateway_upstream.py");
    kill_hard(own);
    // Errors may come first (requests that raced the child's end); then 404.
    let deadline = Instant::now() + LIMIT;
    loop {
        let (reply, _) = s
            .post_raw(json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
                "params": {"name": "own__echo", "arguments": {"text": "b"}}}))
            .await;
        if reply.status == 404 {
            break;
        }
        let response = reply.response.expect("a JSON-RPC answer or 404");
        assert!(
            response.get("error").is_some(),
            "no result on a session whose child died: {response}"
        );
        assert!(Instant::now() < deadline, "the session ended in time");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        children(),
        shared,
        "no child is started for the ended session"
    );
    let mut again = RawSession::open(&gw.url).await;
    assert_eq!(again.echo("own__echo", "c").await.unwrap(), "own:echo:c");
    assert_eq!(children().len(), 2, "the new session's own child");
    // A reload that restarts the upstream stops the session's child, its
    // state with it: the session ends too (it used to be left calling a
    // stopped child, every call failing, for good).
    reload_with_env(&gw, dir.path(), &config);
    let deadline = Instant::now() + LIMIT;
    loop {
        let (reply, _) = again
            .post_raw(json!({"jsonrpc": "2.0", "id": 98, "method": "tools/list"}))
            .await;
        if reply.status == 404 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the session ended after the reload: {reply:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut fresh = RawSession::open(&gw.url).await;
    assert_eq!(
        echo_within(&mut fresh, "own__echo", "d").await,
        "own:echo:d"
    );
}

/// A session's own child that never started (its command failed) held none
/// of the session's state: the call that needed it fails, but the session
/// goes on (its other upstreams answer; no 404), and its next request to
/// that upstream starts the child again. (Ending the session for it ended
/// every upstream's work in it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_child_that_never_started_leaves_the_session_alive() {
    let dir = TempDir::new("per-session-never-started");
    let flag = dir.path().join("fail");
    let script = format!(
        "test -e {} && exit 3; exec python3 {} --name flaky",
        flag.display(),
        fixture("gateway_upstream.py")
    );
    let config = format!(
        "[upstreams.flaky]\ncommand = \"sh\"\nargs = {}\nchild = \"per-session\"\n{}",
        qa(&["-c", &script]),
        fixture_upstream("other", &["--name", "other"], "")
    );
    let gw = GatewayProc::start(dir.path(), &config).await;
    let mut s = RawSession::open(&gw.url).await;
    // Listed by the shared child (started before the flag).
    echo_within(&mut s, "other__echo", "up").await;
    eventually(LIMIT, "flaky is listed", || {
        let url = gw.url.clone();
        async move {
            let mut probe = RawSession::open(&url).await;
            probe
                .tool_names()
                .await
                .contains(&"flaky__echo".to_owned())
                .then_some(())
        }
    })
    .await;
    std::fs::write(&flag, "").unwrap();
    let failed = s.echo("flaky__echo", "a").await;
    assert!(failed.is_err(), "its child could not start: {failed:?}");
    // `request` asserts no 404: the session lives on.
    assert_eq!(s.echo("other__echo", "b").await.unwrap(), "other:echo:b");
    std::fs::remove_file(&flag).unwrap();
    assert_eq!(
        echo_within(&mut s, "flaky__echo", "c").await,
        "flaky:echo:c"
    );
}

/// Rewrites the gateway's file as `config` with an `env` added to its one
/// upstream (so a reload restarts it), and sends SIGHUP.
fn reload_with_env(gw: &GatewayProc, dir: &std::path::Path, config: &str) {
    std::fs::write(
        dir.join("gateway.toml"),
        format!("{config}env = {{ RELOADED = \"1\" }}\n"),
    )
    .unwrap();
    let pid = libc::pid_t::try_from(gw.child.id().unwrap()).unwrap();
    // SAFETY: a plain system call on the gateway this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGHUP) }, 0);
}

/// `child = "per-session-respawn"`: a session's own child that dies is
/// restarted under the session (initialized again with the client's params),
/// and the same session's calls work again, with no 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_session_respawn_child_is_restarted_under_its_session() {
    let dir = TempDir::new("per-session-respawn");
    let (gw, config, shared, mut s, first) = own_child_session(&dir, "per-session-respawn").await;
    let children = || children_of(gw.child.id().unwrap(), "gateway_upstream.py");
    kill_hard(first);
    // `request` asserts no 404 on the way.
    let text = echo_within(&mut s, "own__echo", "b").await;
    assert_eq!(text, "own:echo:b");
    let second = new_child(&shared, &children());
    assert_ne!(second, first, "a new process under the same session");
    // A reload that restarts the upstream stops the session's child: a new
    // one is started under the same session at its next call.
    reload_with_env(&gw, dir.path(), &config);
    let deadline = Instant::now() + LIMIT;
    loop {
        let now = children();
        if !now.contains(&second) && !now.contains(&shared[0]) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the reload restarted the upstream"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(echo_within(&mut s, "own__echo", "c").await, "own:echo:c");
}

/// A stdio server (2025-11-25) with one tool, `where`, whose `region`
/// argument carries `x-mcp-header: Region`; `where` answers its arguments as
/// JSON text.
const HEADER_SERVER: &str = r#"
import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    if "method" not in m or "id" not in m:
        continue
    method, p = m["method"], m.get("params") or {}
    if method == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "headers", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "where", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}}}}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": json.dumps(p.get("arguments"))}]}
    else:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}})
        continue
    send({"jsonrpc": "2.0", "id": m["id"], "result": result})
"#;

/// A 2026-07-28 upstream over Streamable HTTP whose tool annotates an
/// argument with `x-mcp-header` (a bridge in front of `HEADER_SERVER`, which
/// checks `Mcp-Param-*` as a 2026-07-28 server must): the gateway's calls to
/// it, from a session and from a 2026-07-28 client, carry `Mcp-Param-Region`
/// (without it the upstream answers -32020).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_to_a_2026_http_upstream_carry_its_param_headers() {
    use tokio::io::AsyncBufReadExt;
    let dir = TempDir::new("param-headers");
    let script = dir.path().join("headers.py");
    std::fs::write(&script, HEADER_SERVER).unwrap();
    let mut bridge = tokio::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args([
            "bridge",
            "--listen",
            "127.0.0.1:0",
            "--child",
            "shared",
            "--",
        ])
        .arg("python3")
        .arg(&script)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(bridge.stdout.take().unwrap()).lines();
    let url = bounded(async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(url) = line.strip_prefix("route /mcp: ") {
                return url.trim().to_owned();
            }
        }
        panic!("the bridge printed no URL");
    })
    .await;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let config = format!("[upstreams.hd]\nurl = \"{url}\"\n");
    let gw = GatewayProc::start(dir.path(), &config).await;
    for leg in [Leg::Streamable, Leg::Modern] {
        let client = connect(&gw, leg).await;
        eventually(LIMIT, "hd listed", || {
            let c = &client;
            async move {
                tool_names(c)
                    .await
                    .contains(&"hd__where".to_owned())
                    .then_some(())
            }
        })
        .await;
        let text = call_text(&client, "hd__where", json!({"region": "eu-west"})).await;
        assert!(text.contains("eu-west"), "{leg:?}: {text}");
    }
    let ready = gw.readyz().await.1;
    assert!(
        ready.contains("\"protocolVersion\":\"2026-07-28\""),
        "the upstream is spoken to in 2026-07-28: {ready}"
    );
}

/// A call that comes while its upstream is still starting (not listed yet)
/// waits for its first list (up to the list timeout) instead of being
/// refused as an unknown tool; one for a name nobody lists is still refused
/// once every upstream has been listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_during_an_upstreams_start_waits_for_its_list() {
    let dir = TempDir::new("slow-start");
    let config = fixture_upstream("slow", &["--name", "slow", "--slow-start", "1.5"], "");
    let gw = GatewayProc::start(dir.path(), &config).await;
    // A bare 2026-07-28 tools/call first thing: no discover, no initialize
    // (each of which waits for the upstreams) before it.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "slow__echo", "arguments": {"text": "early"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let reply = bounded(
        reqwest::Client::new()
            .post(&gw.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "slow__echo")
            .body(body.to_string())
            .send(),
    )
    .await
    .unwrap();
    let text = bounded(reply.text()).await.unwrap();
    assert!(text.contains("slow:echo:early"), "{text}");
    for leg in [Leg::Streamable, Leg::Modern] {
        let client = connect(&gw, leg).await;
        let text = call_text(&client, "slow__echo", json!({"text": "later"})).await;
        assert!(text.contains("slow:echo:later"), "{leg:?}: {text}");
        let (code, _) = call_refused(&client, "slow__nothing").await;
        assert_eq!(code, -32602, "{leg:?}");
    }
}

/// `switchboard example-server --http ADDR ARGS`, once it printed `listening on
/// http://ADDR/mcp` (it and the URL returned; killed on drop), or `Err` with
/// its stderr when it ended without listening (the address still taken).
async fn http_example(
    addr: &str,
    args: &[&str],
) -> Result<(tokio::process::Child, String), String> {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(gateway_util::BIN)
        .args(["example-server", "--http", addr])
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the switchboard binary runs");
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut said = String::new();
    let url = bounded(async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some((_, rest)) = line.split_once("listening on ") {
                return Some(rest.trim().to_owned());
            }
            said.push_str(&line);
            said.push('\n');
        }
        None
    })
    .await;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    match url {
        Some(url) => Ok((child, url)),
        None => Err(said),
    }
}

/// One downstream Streamable HTTP session driven by hand (raw JSON-RPC over
/// HTTP), so that nothing can replace it behind the test's back: every request
/// carries the `Mcp-Session-Id` the gateway gave at `initialize`, and a lost
/// session would show as a 404.
struct RawSession {
    http: reqwest::Client,
    url: String,
    session: String,
    next_id: u64,
}

/// One answer of the gateway to a raw request: HTTP status, and the JSON-RPC
/// response when there was one (from a JSON body or an SSE stream).
#[derive(Debug)]
struct RawReply {
    status: u16,
    response: Option<Value>,
    body: String,
}

impl RawSession {
    async fn open(url: &str) -> RawSession {
        let http = reqwest::Client::builder().timeout(LIMIT).build().unwrap();
        let mut s = RawSession {
            http,
            url: url.to_owned(),
            session: String::new(),
            next_id: 1,
        };
        let (reply, session) = s
            .post_raw(json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "raw-session", "version": "0.1.0"},
                },
            }))
            .await;
        assert_eq!(reply.status, 200, "initialize: {reply:?}");
        s.session = session.expect("the gateway gives an Mcp-Session-Id");
        let (reply, _) = s
            .post_raw(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(reply.status, 202, "notifications/initialized: {reply:?}");
        s
    }

    async fn post_raw(&self, body: Value) -> (RawReply, Option<String>) {
        let id = body["id"].clone();
        let mut req = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body.to_string());
        if !self.session.is_empty() {
            req = req
                .header("mcp-session-id", &self.session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        let r = bounded(req.send()).await.expect("the gateway answers");
        let status = r.status().as_u16();
        let session = r
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = bounded(r.text()).await.expect("a body");
        let response = if body.trim_start().starts_with('{') {
            serde_json::from_str(body.trim()).ok()
        } else {
            body.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|m| m.get("id") == Some(&id) && m.get("method").is_none())
        };
        (
            RawReply {
                status,
                response,
                body,
            },
            session,
        )
    }

    /// A request in the session; the reply must not say the session is gone.
    async fn request(&mut self, method: &str, params: Value) -> RawReply {
        let id = self.next_id;
        self.next_id += 1;
        let (reply, _) = self
            .post_raw(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        assert_ne!(
            reply.status, 404,
            "the gateway lost the downstream session: {reply:?}"
        );
        reply
    }

    /// `tools/call NAME {text}`: `Ok(text)` of a successful result, or
    /// `Err(what was said)` for a JSON-RPC error, an `isError` result or an
    /// HTTP error.
    async fn echo(&mut self, name: &str, text: &str) -> Result<String, String> {
        let reply = self
            .request(
                "tools/call",
                json!({"name": name, "arguments": {"text": text}}),
            )
            .await;
        let Some(response) = reply.response else {
            return Err(format!("HTTP {}: {}", reply.status, reply.body));
        };
        if let Some(error) = response.get("error") {
            return Err(error.to_string());
        }
        let result = &response["result"];
        let said: String = result["content"]
            .as_array()
            .map(|blocks| blocks.iter().filter_map(|b| b["text"].as_str()).collect())
            .unwrap_or_default();
        if result["isError"] == true {
            return Err(format!("isError: {said}"));
        }
        Ok(said)
    }

    /// Every tool name of one `tools/list` (first page; the lists here are
    /// short).
    async fn tool_names(&mut self) -> Vec<String> {
        let reply = self.request("tools/list", json!({})).await;
        let response = reply
            .response
            .unwrap_or_else(|| panic!("tools/list: {}", reply.body));
        response["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("tools/list: {response}"))
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    }
}

/// An HTTP upstream restarted (killed, then a new process on the same port)
/// so that every session it had is gone: one downstream session, driven by
/// hand so that it cannot be silently replaced, calls `web__echo` before;
/// with `call_while_down`, a call while the upstream is down fails naming
/// `web` (and `beta` still answers); without it the new process starts at
/// once, so the gateway's next request to it may carry the old
/// `Mcp-Session-Id` (a 404 there). After the restart the same session's calls
/// succeed again within a bounded retry (the gateway retries a down upstream
/// after a backoff of 100 ms to 1 s, failing calls at once meanwhile), with
/// no 404 and no new `initialize` from the client. Run against an upstream
/// with sessions (`--protocol-version 2025-11-25`) and a default one (every
/// revision, so the gateway speaks 2026-07-28 to it, which has no sessions),
/// `version` being what the gateway must speak to it (`/readyz`). Checks too
/// that the case did what it is for: `/readyz` counts one restart of `web`
/// after a call found it down and none when it came back at once, and a
/// 2025-11-25 upstream restarted at once answered the gateway's old session id
/// with 404 (the gateway's log).
async fn a_restarted_http_upstream_is_transparent(
    tag: &str,
    upstream_args: &[&str],
    version: &str,
    call_while_down: bool,
) {
    let dir = TempDir::new(tag);
    let (web, url) = http_example("127.0.0.1:0", upstream_args)
        .await
        .expect("example-server listens");
    let addr = url
        .strip_prefix("http://")
        .and_then(|r| r.strip_suffix("/mcp"))
        .unwrap_or_else(|| panic!("unexpected URL {url}"))
        .to_owned();
    let config = [
        format!("[upstreams.web]\nurl = \"{url}\"\n"),
        fixture_upstream("beta", &["--name", "beta"], ""),
    ]
    .concat();
    let gw = GatewayProc::start(dir.path(), &config).await;
    let mut session = RawSession::open(&gw.url).await;
    let first_session = session.session.clone();
    let start = Instant::now();
    loop {
        let names = session.tool_names().await;
        if names.contains(&"web__echo".to_owned()) && names.contains(&"beta__echo".to_owned()) {
            break;
        }
        assert!(
            start.elapsed() < LIMIT,
            "{tag}: web and beta not listed: {names:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        session.echo("web__echo", "before").await.as_deref(),
        Ok("before"),
        "{tag}"
    );
    let ready: Value = serde_json::from_str(&gw.readyz().await.1).unwrap();
    assert_eq!(
        ready["upstreams"]["web"]["protocolVersion"], version,
        "{tag}: {ready}"
    );

    // Down: killed, its port closed.
    let mut web = web;
    web.kill().await.unwrap();
    if call_while_down {
        let down = session.echo("web__echo", "while down").await;
        let said = down.expect_err("a call to a dead upstream failed");
        assert!(
            said.replace("web__echo", "").contains("web"),
            "{tag}: the error does not name the upstream: {said}"
        );
        eprintln!("{tag}: while down: {said}");
        assert_eq!(
            session.echo("beta__echo", "meanwhile").await.as_deref(),
            Ok("beta:echo:meanwhile"),
            "{tag}"
        );
    }

    // Up again on the same port: a new process, none of the old sessions.
    let start = Instant::now();
    let _web = loop {
        match http_example(&addr, upstream_args).await {
            Ok((child, again)) => {
                assert_eq!(again, url, "{tag}");
                break child;
            }
            Err(said) => {
                assert!(
                    start.elapsed() < LIMIT,
                    "{tag}: cannot listen on {addr} again: {said}"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    let start = Instant::now();
    let mut failures = Vec::new();
    loop {
        match session.echo("web__echo", "after").await {
            Ok(text) => {
                assert_eq!(text, "after", "{tag}");
                break;
            }
            Err(said) => failures.push(said),
        }
        assert!(
            start.elapsed() < Duration::from_secs(30) && failures.len() < 50,
            "{tag}: web__echo never succeeded after the restart: {failures:#?}\ngateway log:\n{}",
            gw.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!(
        "{tag}: after the restart: {} failed call(s) before success in {:?}: {failures:?}",
        failures.len(),
        start.elapsed()
    );
    // Stays so, in the same downstream session.
    for i in 0..3 {
        let text = format!("again {i}");
        assert_eq!(
            session.echo("web__echo", &text).await.as_deref(),
            Ok(text.as_str()),
            "{tag}"
        );
    }
    assert!(session.tool_names().await.contains(&"web__echo".to_owned()));
    assert_eq!(session.session, first_session, "{tag}");
    let after: Value = serde_json::from_str(&gw.readyz().await.1).unwrap();
    let restarts = if call_while_down { 1 } else { 0 };
    assert_eq!(
        after["upstreams"]["web"]["restarts"], restarts,
        "{tag}: {after}"
    );
    assert_eq!(
        after["upstreams"]["web"]["protocolVersion"], version,
        "{tag}"
    );
    if version == "2025-11-25" && !call_while_down {
        // What this case is for: the gateway's request carried the old
        // session's id and the new process answered 404.
        assert!(
            gw.log().contains("the session ended (404)"),
            "{tag}: the upstream's 404 was not met:\n{}",
            gw.log()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_2025_http_upstream_whose_sessions_are_gone_is_transparent() {
    let args = ["--protocol-version", "2025-11-25"];
    a_restarted_http_upstream_is_transparent("restart-2025-down", &args, "2025-11-25", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_http_upstream_restarted_at_once_is_transparent() {
    let args = ["--protocol-version", "2025-11-25"];
    a_restarted_http_upstream_is_transparent("restart-2025-at-once", &args, "2025-11-25", false)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_http_upstream_of_every_revision_is_transparent() {
    a_restarted_http_upstream_is_transparent("restart-any-down", &[], "2026-07-28", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_upstream_of_every_revision_restarted_at_once_is_transparent() {
    a_restarted_http_upstream_is_transparent("restart-any-at-once", &[], "2026-07-28", false).await;
}

/// A call that waits for its upstream (still starting, not listed yet) does
/// not hold up the session's other requests: a call to another upstream,
/// sent after it on the same session, is answered first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waiting_for_its_upstream_does_not_hold_up_the_session() {
    let dir = TempDir::new("no-head-of-line");
    let config = [
        fixture_upstream(
            "slow",
            &["--name", "slow", "--slow-start", "4"],
            "timeout = \"1500ms\"",
        ),
        fixture_upstream("fast", &["--name", "fast"], ""),
    ]
    .concat();
    let gw = GatewayProc::start(dir.path(), &config).await;
    let client = Arc::new(connect(&gw, Leg::Streamable).await);
    eventually(LIMIT, "fast listed", || {
        let c = client.clone();
        async move {
            tool_names(&c)
                .await
                .contains(&"fast__echo".to_owned())
                .then_some(())
        }
    })
    .await;
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (c, o) = (client.clone(), order.clone());
    // Waits for `slow` to be listed (up to its 1.5 s), then is refused.
    let slow = tokio::spawn(async move {
        let _ = bounded(c.call_tool("slow__echo", json!({"text": "s"}))).await;
        o.lock().unwrap().push("slow");
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let got = call_text(&client, "fast__echo", json!({"text": "f"})).await;
    order.lock().unwrap().push("fast");
    assert!(got.contains("fast:echo:f"));
    bounded(slow).await.unwrap();
    assert_eq!(*order.lock().unwrap(), ["fast", "slow"]);
}

/// A 2026-07-28 `tools/call` whose `Mcp-Name` header does not name the tool
/// its body calls is refused (-32020, 400) as the library refuses it, though
/// the gateway rewrites both to the upstream's own name when they agree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mismatched_mcp_name_is_refused_through_the_gateway() {
    let dir = TempDir::new("mcp-name");
    let gw = GatewayProc::start(dir.path(), &fixture_upstream("fx", &["--name", "fx"], "")).await;
    let client = connect(&gw, Leg::Modern).await;
    eventually(LIMIT, "fx listed", || {
        let c = &client;
        async move {
            tool_names(c)
                .await
                .contains(&"fx__echo".to_owned())
                .then_some(())
        }
    })
    .await;
    let post = |header: &'static str| {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "fx__echo", "arguments": {"text": "t"},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}});
        reqwest::Client::new()
            .post(&gw.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", header)
            .body(body.to_string())
            .send()
    };
    let wrong = bounded(post("fx__hang")).await.unwrap();
    let status = wrong.status().as_u16();
    let text = bounded(wrong.text()).await.unwrap();
    assert!(text.contains("-32020"), "{status}: {text}");
    let right = bounded(post("fx__echo")).await.unwrap();
    let text = bounded(right.text()).await.unwrap();
    assert!(text.contains("fx:echo:t"), "{text}");
}

/// An upstream that refuses its first lists (both at the gateway's start)
/// is listed again (after 1 s, then longer) until it answers, with no
/// `list_changed` and no lock: its tools are then served and called.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_whose_first_lists_failed_is_listed_again() {
    let dir = TempDir::new("first-list-fails");
    let config = fixture_upstream("fx", &["--name", "fx", "--refuse-first", "3"], "");
    let gw = GatewayProc::start(dir.path(), &config).await;
    let client = connect(&gw, Leg::Streamable).await;
    eventually(LIMIT, "fx listed again", || async {
        tool_names(&client)
            .await
            .contains(&"fx__echo".to_owned())
            .then_some(())
    })
    .await;
    let text = call_text(&client, "fx__echo", json!({"text": "late"})).await;
    assert!(text.contains("fx:echo:late"), "{text}");
}

/// An upstream is listed once at its start: its tools through the core that
/// keeps their `x-mcp-header` pairs, not a second time by the gateway (which
/// doubled the list load, and let a stalled second list hide the answered
/// first until a retry).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_is_listed_once_at_its_start() {
    let dir = TempDir::new("listed-once");
    let lists = dir.path().join("lists.txt");
    let path = lists.to_str().unwrap();
    let args = ["--name", "fx", "--prompt", "hello", "--lists", path];
    let config = fixture_upstream("fx", &args, "");
    let gw = GatewayProc::start(dir.path(), &config).await;
    let client = connect(&gw, Leg::Streamable).await;
    eventually(LIMIT, "fx listed", || async {
        tool_names(&client)
            .await
            .contains(&"fx__echo".to_owned())
            .then_some(())
    })
    .await;
    // A call answered: whatever the start sent was sent well before.
    let text = call_text(&client, "fx__echo", json!({"text": "once"})).await;
    assert!(text.contains("fx:echo:once"), "{text}");
    let mut sent: Vec<String> = std::fs::read_to_string(&lists)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    sent.sort();
    assert_eq!(
        sent,
        ["prompts/list", "tools/list"],
        "lists sent at the start"
    );
}

/// An `initialize` POSTed to the gateway's `/mcp` with `host` as its `Host`
/// header and `body_pad` bytes of padding in its params: the status.
async fn initialize_as(gw: &GatewayProc, host: &str, body_pad: usize) -> u16 {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "host-test", "version": "1"},
        "_meta": {"pad": "x".repeat(body_pad)}}});
    let r = bounded(
        reqwest::Client::new()
            .post(&gw.url)
            .header("host", host)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string())
            .send(),
    )
    .await
    .unwrap();
    r.status().as_u16()
}

/// The bridge's listener settings, as the gateway's file keys and flags: a
/// `Host` behind an ingress is served when `allow_hosts` names it (before:
/// 403 whatever the file said), another gets 403; a body over `max_body`
/// gets 413; a flag's hosts replace the file's; a reload that changes
/// `listen` or one of these settings is refused and the gateway serves on as
/// it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bridges_listener_settings_are_the_gateways_keys_and_flags() {
    let dir = TempDir::new("listener");
    let upstream = fixture_upstream("a", &["--name", "a"], "");
    let config = format!("allow_hosts = [\"mcp.example.com\"]\nmax_body = 2000\n{upstream}");
    let gw = GatewayProc::start(dir.path(), &config).await;
    assert_eq!(initialize_as(&gw, "mcp.example.com", 0).await, 200);
    assert_eq!(initialize_as(&gw, "mcp.example.com:443", 0).await, 200);
    assert_eq!(
        initialize_as(&gw, "localhost", 0).await,
        200,
        "the defaults stay"
    );
    assert_eq!(initialize_as(&gw, "evil.example.com", 0).await, 403);
    assert_eq!(initialize_as(&gw, "mcp.example.com", 4000).await, 413);

    // A changed setting: refused, named (a changed `listen` likewise, in
    // the unit tests: here `--listen` wins over the file's).
    let file = dir.path().join("gateway.toml");
    let pid = libc::pid_t::try_from(gw.child.id().unwrap()).unwrap();
    for (changed, key) in [(config.replace("2000", "3000"), "max_body changed")] {
        let before = gw.log().matches("reload refused").count();
        std::fs::write(&file, &changed).unwrap();
        // SAFETY: a plain system call on the gateway this test started.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGHUP) }, 0);
        let log = eventually(LIMIT, "the reload refused", || async {
            let log = gw.log();
            (log.matches("reload refused").count() > before).then_some(log)
        })
        .await;
        assert!(
            log.contains(key) && log.contains("a restart applies it"),
            "{log}"
        );
        assert_eq!(initialize_as(&gw, "mcp.example.com", 0).await, 200);
        assert_eq!(
            initialize_as(&gw, "mcp.example.com", 2500).await,
            413,
            "as it was"
        );
    }
    drop(gw);

    let dir = TempDir::new("listener-flags");
    let gw = GatewayProc::start_with_args(
        dir.path(),
        &config,
        &[
            "--allow-host",
            "gw.internal",
            "--no-default-hosts",
            "--max-body",
            "100000",
        ],
    )
    .await;
    assert_eq!(initialize_as(&gw, "gw.internal", 4000).await, 200);
    assert_eq!(
        initialize_as(&gw, "mcp.example.com", 0).await,
        403,
        "replaced"
    );
    assert_eq!(initialize_as(&gw, "localhost", 0).await, 403, "no defaults");
}

/// A stdio upstream's environment: by default only the safe set and its own
/// `env` (a secret of the gateway's, or a token meant for another
/// upstream's headers, is not there: before, every child inherited it);
/// `inherit_env = true` gives it everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_upstream_gets_the_safe_environment_unless_it_inherits() {
    let dir = TempDir::new("env");
    let config = [
        fixture_upstream(
            "plain",
            &["--name", "plain", "--tool", "env"],
            "env = { GIVEN = \"yes\" }",
        ),
        fixture_upstream(
            "sidecar",
            &["--name", "sidecar", "--tool", "env"],
            "inherit_env = true",
        ),
    ]
    .concat();
    let gw = GatewayProc::start_with_env(
        dir.path(),
        &config,
        &[],
        &[("GW_SECRET", "s3cret"), ("LC_TIME", "C")],
    )
    .await;
    let client = connect(&gw, Leg::Streamable).await;
    let env = |upstream: &'static str, var: &'static str| {
        let client = &client;
        async move { call_text(client, &format!("{upstream}__env"), json!({"text": var})).await }
    };
    assert_eq!(
        env("plain", "GW_SECRET").await,
        "plain:env:GW_SECRET=(unset)"
    );
    assert_eq!(env("plain", "GIVEN").await, "plain:env:GIVEN=yes");
    assert_eq!(
        env("plain", "LC_TIME").await,
        "plain:env:LC_TIME=C",
        "the locale"
    );
    assert_ne!(env("plain", "PATH").await, "plain:env:PATH=(unset)");
    assert_eq!(
        env("sidecar", "GW_SECRET").await,
        "sidecar:env:GW_SECRET=s3cret"
    );
}

/// A URL upstream without a `transport` whose server speaks only the legacy
/// HTTP+SSE transport (here another gateway's `/sse`, which refuses a POST
/// with 405): found as such, its tools listed and called (before: a POST
/// refused and retried forever).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_of_unknown_transport_falls_back_to_legacy_sse() {
    let back_dir = TempDir::new("sse-back");
    let back = GatewayProc::start(
        back_dir.path(),
        &fixture_upstream("a", &["--name", "a"], ""),
    )
    .await;
    let dir = TempDir::new("sse-front");
    let front = GatewayProc::start(
        dir.path(),
        &format!("[upstreams.x]\nurl = \"{}/sse\"\n", back.base),
    )
    .await;
    for leg in [Leg::Streamable, Leg::Modern] {
        let client = connect(&front, leg).await;
        let names = eventually(LIMIT, "x's tools listed", || async {
            let names = tool_names(&client).await;
            (!names.is_empty()).then_some(names)
        })
        .await;
        assert_eq!(names, ["x__a__echo", "x__a__hang"], "{leg:?}");
        assert_eq!(
            call_text(&client, "x__a__echo", json!({"text": "via sse"})).await,
            "a:echo:via sse"
        );
    }
    let (_, ready) = front.readyz().await;
    assert!(ready.contains("\"state\":\"ready\""), "{ready}");
}

/// A gateway whose port is taken binds first and fails there: exit 2, and
/// no upstream was started (a second instance used to start every upstream,
/// then fail).
#[test]
fn a_busy_port_fails_before_any_upstream_starts() {
    let dir = TempDir::new("busy-port");
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let marker = dir.path().join("started");
    let config = format!(
        "[upstreams.a]\ncommand = \"/bin/sh\"\nargs = [\"-c\", \"touch {}; exec cat\"]\n",
        marker.display()
    );
    let file = dir.path().join("gateway.toml");
    std::fs::write(&file, config).unwrap();
    let mut gw = std::process::Command::new(gateway_util::BIN)
        .args([
            "gateway",
            "--listen",
            &addr,
            "--config",
            file.to_str().unwrap(),
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + LIMIT;
    while gw.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = gw.kill();
            panic!("the gateway kept running on a busy port");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = gw.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot listen on {addr}")),
        "{stderr}"
    );
    // Give a child that was started (it would be) the time to touch its file.
    std::thread::sleep(Duration::from_millis(300));
    assert!(!marker.exists(), "an upstream was started: {stderr}");
}
