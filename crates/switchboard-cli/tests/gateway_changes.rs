//! `switchboard gateway` relaying changes, end to end (a real gateway process,
//! real upstream processes): list changes from an upstream to the sessions and
//! 2026-07-28 listen streams of the routes that have it (and to no others),
//! resource subscriptions to an upstream that speaks 2026-07-28 (which has no
//! `resources/subscribe`), and a listen stream's final result at SIGTERM.
//!
//! Not covered: a list change from a 2026-07-28 upstream. `switchboard
//! example-server` (the one 2026-07-28 server at hand) has no tool that changes
//! its lists, so nothing can make one announce a list change.
//!
//! Clients: the library [`Client`] for legacy sessions (Streamable HTTP with its
//! standalone GET stream, legacy HTTP+SSE); raw HTTP for 2026-07-28 listen
//! streams (the library's listen asks only for resource subscriptions).

mod gateway_util;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gateway_util::{
    bounded, call_text, connect, eventually, example_upstream, fixture_upstream, options, qa,
    tool_names, GatewayProc, Leg, TempDir, LIMIT,
};
use serde_json::{json, Value};
use switchboard::client::http::HttpClientConfig;
use switchboard::client::EraPolicy;
use switchboard::{Client, ClientOptions};
use switchboard_protocol::codec::{SseItem, SseParser};

/// How long a negative check waits for what must not come.
const QUIET: Duration = Duration::from_millis(500);

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The notifications a client received, as `{method, params}`.
#[derive(Clone, Default)]
struct Heard(Arc<Mutex<Vec<Value>>>);

impl Heard {
    fn all(&self) -> Vec<Value> {
        self.0.lock().unwrap().clone()
    }

    /// Those of `method`.
    fn of(&self, method: &str) -> Vec<Value> {
        self.all()
            .into_iter()
            .filter(|n| n["method"] == method)
            .collect()
    }

    fn clear(&self) {
        self.0.lock().unwrap().clear();
    }
}

/// A legacy client of `url` (Streamable HTTP with its standalone GET stream,
/// or legacy HTTP+SSE at `.../sse`) that records every notification.
async fn legacy_client(url: &str, leg: Leg) -> (Client, Heard) {
    assert_ne!(leg, Leg::Modern);
    let heard = Heard::default();
    let sink = heard.clone();
    let opts: ClientOptions = options()
        .with_era(EraPolicy::Legacy)
        .with_notifications(move |n| {
            let n = n.to_notification();
            let params = n
                .params
                .as_ref()
                .map(|p| serde_json::from_str::<Value>(p.get()).unwrap())
                .unwrap_or(Value::Null);
            sink.0
                .lock()
                .unwrap()
                .push(json!({"method": n.method, "params": params}));
        });
    let mut config = HttpClientConfig::new("");
    config.standalone_stream = true;
    let client = bounded(Client::connect_url(url, opts, config))
        .await
        .unwrap_or_else(|e| panic!("connect over {leg:?} to {url}: {e}"));
    (client, heard)
}

/// An SSE response read one JSON-RPC message at a time.
struct SseStream {
    resp: reqwest::Response,
    parser: SseParser,
    queue: std::collections::VecDeque<Value>,
}

impl SseStream {
    /// The next message within `bound`; `None` when none came in time or the
    /// stream ended.
    async fn next_within(&mut self, bound: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            if let Some(m) = self.queue.pop_front() {
                return Some(m);
            }
            let chunk = tokio::time::timeout_at(deadline, self.resp.chunk())
                .await
                .ok()?
                .ok()??;
            for item in self.parser.feed(&chunk) {
                if let Ok(SseItem::Event(e)) = item {
                    if !e.data.is_empty() {
                        self.queue
                            .push_back(serde_json::from_str(&e.data).expect("JSON"));
                    }
                }
            }
        }
    }

    /// The next message of `method`, skipping others, within [`LIMIT`].
    async fn next_of(&mut self, method: &str) -> Value {
        let deadline = Instant::now() + LIMIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let m = self
                .next_within(left)
                .await
                .unwrap_or_else(|| panic!("no {method} on the listen stream within {LIMIT:?}"));
            if m["method"] == method {
                return m;
            }
        }
    }
}

/// Opens a 2026-07-28 `subscriptions/listen` (id `id`, filter `notifications`)
/// at `url` and reads its acknowledgement, which it returns with the stream.
async fn open_listen(url: &str, id: &str, notifications: Value) -> (SseStream, Value) {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
    "params": {"notifications": notifications, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "gateway-changes-test", "version": "1"}
    }}});
    let resp = bounded(
        reqwest::Client::new()
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "subscriptions/listen")
            .body(body.to_string())
            .send(),
    )
    .await
    .expect("the listen is answered");
    assert_eq!(resp.status().as_u16(), 200, "{url}");
    let mut stream = SseStream {
        resp,
        parser: SseParser::new(),
        queue: Default::default(),
    };
    let ack = stream
        .next_of("notifications/subscriptions/acknowledged")
        .await;
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], id, "{ack}");
    (stream, ack)
}

/// Waits until `client`'s tool list is exactly `want` (the upstreams are
/// listed in the background once the gateway is up).
async fn until_tools(client: &Client, want: &[&str]) {
    let want: Vec<String> = want.iter().map(|s| (*s).to_owned()).collect();
    eventually(LIMIT, "the upstreams' tools are listed", || {
        let want = want.clone();
        async move { (tool_names(client).await == want).then_some(()) }
    })
    .await;
}

/// Waits until `heard` holds a notification of `method`.
async fn until_heard(heard: &Heard, method: &str, who: &str) -> Value {
    eventually(LIMIT, &format!("{who} hears {method}"), || async {
        heard.of(method).into_iter().next()
    })
    .await
}

/// A legacy (2025-11-25) upstream's `notifications/tools/list_changed` reaches
/// every kind of client on a route that has it (a Streamable HTTP session, a
/// legacy HTTP+SSE session, a 2026-07-28 listen stream, tagged with its id),
/// the new tool is then listed under its prefix and callable, and a route
/// without that upstream hears nothing of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_upstreams_list_change_reaches_its_routes_clients_only() {
    let dir = TempDir::new("changes-legacy");
    let config = [
        fixture_upstream("a", &["--name", "a", "--grow"], ""),
        fixture_upstream("b", &["--name", "b"], ""),
        format!(
            "[routes.main]\npath = \"/mcp\"\nupstreams = {}\n",
            qa(&["a", "b"])
        ),
        format!(
            "[routes.other]\npath = \"/other\"\nupstreams = {}\n",
            qa(&["b"])
        ),
    ]
    .concat();
    let gw = GatewayProc::start(dir.path(), &config).await;
    let other_url = format!("{}/other", gw.base);

    // Connected once both upstreams are listed, the clients hear nothing of
    // the start-up listing.
    let probe = connect(&gw, Leg::Streamable).await;
    until_tools(
        &probe,
        &["a__echo", "a__grow", "a__hang", "b__echo", "b__hang"],
    )
    .await;
    let (streamable, streamable_heard) = legacy_client(&gw.url, Leg::Streamable).await;
    let (sse, sse_heard) = legacy_client(&format!("{}/sse", gw.base), Leg::LegacySse).await;
    let (other, other_heard) = legacy_client(&other_url, Leg::Streamable).await;
    until_tools(&other, &["b__echo", "b__hang"]).await;
    let (mut listen, ack) =
        open_listen(&gw.url, "main-listen", json!({"toolsListChanged": true})).await;
    assert_eq!(
        ack["params"]["notifications"]["toolsListChanged"], true,
        "{ack}"
    );
    let (mut other_listen, _) = open_listen(
        &other_url,
        "other-listen",
        json!({"toolsListChanged": true}),
    )
    .await;
    // Only what follows the grow counts.
    for heard in [&streamable_heard, &sse_heard, &other_heard] {
        heard.clear();
    }

    assert_eq!(
        call_text(&sse, "a__grow", json!({"text": "sprout"})).await,
        "a:grow:sprout"
    );

    const CHANGED: &str = "notifications/tools/list_changed";
    until_heard(&streamable_heard, CHANGED, "the Streamable HTTP session").await;
    until_heard(&sse_heard, CHANGED, "the legacy SSE session").await;
    let n = listen.next_of(CHANGED).await;
    assert_eq!(n["params"]["_meta"][SUBSCRIPTION_ID], "main-listen", "{n}");

    let want = [
        "a__echo",
        "a__grow",
        "a__hang",
        "a__sprout",
        "b__echo",
        "b__hang",
    ];
    for client in [&streamable, &sse] {
        assert_eq!(tool_names(client).await, want);
    }
    assert_eq!(
        call_text(&streamable, "a__sprout", json!({"text": "hi"})).await,
        "a:sprout:hi"
    );

    // The other route: nothing, on either kind of client.
    tokio::time::sleep(QUIET).await;
    assert_eq!(
        other_heard.of(CHANGED),
        Vec::<Value>::new(),
        "/other heard a's change"
    );
    if let Some(m) = other_listen.next_within(QUIET).await {
        panic!("/other's listen stream got {m} for a change of a");
    }
    assert_eq!(tool_names(&other).await, ["b__echo", "b__hang"]);
}

/// A legacy session's `resources/subscribe` of a resource of a 2026-07-28
/// upstream (held on the gateway's listen stream to it): `bump_counter` brings
/// the subscriber `notifications/resources/updated` for that URI, a session
/// that did not subscribe nothing, and nothing more after `resources/unsubscribe`;
/// a 2026-07-28 listen stream with `resourceSubscriptions` gets the update
/// tagged with its own subscription id.
///
/// Ignored: with no list change to ask for (example-server declares
/// `listChanged: false` everywhere) and no URI subscribed yet, the gateway's
/// upstream listen task (`upstream_listen`, gateway/listen.rs) waits for a
/// restart only, not for a subscription: no listen is ever opened upstream,
/// and no update comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_updates_of_a_2026_upstream_reach_its_subscribers_only() {
    let dir = TempDir::new("changes-resources");
    let gw = GatewayProc::start(dir.path(), &example_upstream("ex", &[])).await;
    const URI: &str = "example://counter";
    const UPDATED: &str = "notifications/resources/updated";

    let (subscriber, subscriber_heard) = legacy_client(&gw.url, Leg::Streamable).await;
    eventually(
        LIMIT,
        "the example server's resources are listed",
        || async {
            let resources = bounded(subscriber.list_resources()).await.ok()?;
            resources.iter().any(|r| r.uri == URI).then_some(())
        },
    )
    .await;
    let (bystander, bystander_heard) = legacy_client(&gw.url, Leg::Streamable).await;

    // Subscribed, then bumped at once: `resources/subscribe` is answered
    // once the subscription holds.
    bounded(subscriber.subscribe(URI))
        .await
        .expect("resources/subscribe");
    let text = call_text(&bystander, "ex__bump_counter", json!({})).await;
    assert!(text.starts_with("counter is now"), "{text}");
    let n = until_heard(&subscriber_heard, UPDATED, "the subscriber").await;
    assert_eq!(n["params"]["uri"], URI, "{n}");
    tokio::time::sleep(QUIET).await;
    assert_eq!(bystander_heard.of(UPDATED), Vec::<Value>::new());

    // A 2026-07-28 listen on the same URI: the next bump reaches both, the
    // listen's tagged with its own id.
    let (mut listen, ack) = open_listen(
        &gw.url,
        "counter-listen",
        json!({"resourceSubscriptions": [URI]}),
    )
    .await;
    assert_eq!(
        ack["params"]["notifications"]["resourceSubscriptions"],
        json!([URI]),
        "{ack}"
    );
    subscriber_heard.clear();
    call_text(&bystander, "ex__bump_counter", json!({})).await;
    let n = listen.next_of(UPDATED).await;
    assert_eq!(n["params"]["uri"], URI, "{n}");
    assert_eq!(
        n["params"]["_meta"][SUBSCRIPTION_ID], "counter-listen",
        "{n}"
    );
    until_heard(&subscriber_heard, UPDATED, "the subscriber").await;

    // Unsubscribed: the next bump reaches the listen stream (which still
    // holds the URI), and not the former subscriber.
    bounded(subscriber.unsubscribe(URI))
        .await
        .expect("resources/unsubscribe");
    subscriber_heard.clear();
    call_text(&subscriber, "ex__bump_counter", json!({})).await;
    let n = listen.next_of(UPDATED).await;
    assert_eq!(n["params"]["uri"], URI, "{n}");
    tokio::time::sleep(QUIET).await;
    assert_eq!(subscriber_heard.of(UPDATED), Vec::<Value>::new());
    assert_eq!(bystander_heard.of(UPDATED), Vec::<Value>::new());
}

/// SIGTERM while a 2026-07-28 listen stream is open: the stream gets its final
/// result (`resultType: "complete"`, for its id) and the gateway exits 0
/// within a few seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_an_open_listen_with_its_final_result() {
    let dir = TempDir::new("changes-sigterm");
    let config = fixture_upstream("a", &["--name", "a", "--grow"], "");
    let mut gw = GatewayProc::start(dir.path(), &config).await;
    let (mut listen, _) =
        open_listen(&gw.url, "to-the-end", json!({"toolsListChanged": true})).await;
    // Read the stream while the gateway stops.
    let reader = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(m) = listen.next_within(LIMIT).await {
            let last = m.get("id").is_some();
            seen.push(m);
            if last {
                break;
            }
        }
        seen
    });
    let (took, status) = gw.terminate().await;
    assert!(status.success(), "{status:?}: {}", gw.log());
    assert!(took < Duration::from_secs(5), "took {took:?}: {}", gw.log());
    let seen = bounded(reader).await.unwrap();
    let last = seen
        .last()
        .unwrap_or_else(|| panic!("nothing on the stream: {}", gw.log()));
    assert_eq!(last["id"], "to-the-end", "{seen:?}");
    assert_eq!(last["result"]["resultType"], "complete", "{seen:?}");
}

/// A `tools/call` that must fail with a JSON-RPC error: its code and message.
/// A script in `dir` found and executable whose interpreter is not there:
/// every spawn of it fails (checked at load, it passes).
fn unstartable(dir: &std::path::Path) -> std::path::PathBuf {
    let missing = dir.join("missing.sh");
    std::fs::write(&missing, "#!/nonexistent/interpreter\n").unwrap();
    std::fs::set_permissions(
        &missing,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    missing
}

async fn call_error(client: &Client, name: &str) -> (i64, String) {
    match bounded(client.call_tool(name, json!({"text": "must not arrive"}))).await {
        Ok(r) => panic!("{name} did not fail: {r:?}"),
        Err(e) => {
            let o = e
                .error_object()
                .unwrap_or_else(|| panic!("{name}: not a JSON-RPC error: {e}"));
            (o.code, o.message.clone())
        }
    }
}

/// Upstreams known to be down (a command that cannot be started, a `cwd`
/// that is not there, a server that exits before it is initialized, a URL that
/// refuses connections), each with a list timeout of a minute: lists are
/// answered at once without them (within [`LIMIT`], half that minute), their
/// calls fail at once naming them and their state, none of them is ever
/// sent a list or a call, and their lapse is logged once, not per list. When
/// one comes back, its sessions are told and its tools are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn known_down_upstreams_are_left_out_at_once_and_told_when_back() {
    let dir = TempDir::new("changes-down");
    let flag = dir.path().join("flaky.ok");
    let heard_by_flaky = dir.path().join("flaky.log");
    // Logs what it is sent, and exits before answering, until `flag` exists;
    // from then on it is a real server.
    let flaky = dir.path().join("flaky.py");
    std::fs::write(
        &flaky,
        format!(
            r#"import json, os, sys
if os.path.exists({flag}):
    os.execvp("python3", ["python3", {upstream}, "--name", "flaky"])
line = sys.stdin.readline()
with open({log}, "a") as f:
    f.write(json.loads(line).get("method", "?") + "\n")
sys.exit(3)
"#,
            flag = gateway_util::q(flag.to_str().unwrap()),
            upstream = gateway_util::q(&gateway_util::fixture("gateway_upstream.py")),
            log = gateway_util::q(heard_by_flaky.to_str().unwrap()),
        ),
    )
    .unwrap();
    let missing = unstartable(dir.path());
    let refusing = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let gone = dir.path().join("gone");
    std::fs::create_dir(&gone).unwrap();
    let minute = "timeout = \"60s\"\n";
    let config = [
        fixture_upstream("good", &["--name", "good"], ""),
        format!(
            "[upstreams.missing]\ncommand = {}\n{minute}",
            gateway_util::q(missing.to_str().unwrap())
        ),
        // Its directory exists at start (a missing one is the file's problem,
        // refused at load); the child removes it and exits, and every restart
        // then fails on it.
        format!(
            "[upstreams.badcwd]\ncommand = \"/bin/sh\"\nargs = [\"-c\", \"cd / && rmdir {gone}; exit 3\"]\ncwd = {gone_q}\n{minute}",
            gone = gone.display(),
            gone_q = gateway_util::q(gone.to_str().unwrap()),
        ),
        format!(
            "[upstreams.flaky]\ncommand = \"python3\"\nargs = {}\n{minute}",
            qa(&[flaky.to_str().unwrap()])
        ),
        format!(
            "[upstreams.refused]\nurl = \"http://127.0.0.1:{refusing}/mcp\"\ntransport = \"streamable-http\"\n{minute}"
        ),
    ]
    .concat();
    let gw = GatewayProc::start(dir.path(), &config).await;
    let down = ["missing", "badcwd", "flaky", "refused"];
    // /readyz knows: each of them down (or starting again) with a reason.
    eventually(LIMIT, "/readyz names every broken upstream", || async {
        let (_, body) = gw.readyz().await;
        let v: Value = serde_json::from_str(&body).ok()?;
        down.iter()
            .all(|n| v["upstreams"][n]["reason"].is_string())
            .then_some(())
    })
    .await;

    // Not listed while down (its last list, if any, is left out).
    let (_, body) = gw.readyz().await;
    let v: Value = serde_json::from_str(&body).unwrap();
    for n in down {
        assert_eq!(v["upstreams"][n]["listed"], false, "{n}: {body}");
    }
    assert_eq!(v["upstreams"]["good"]["listed"], true, "{body}");

    let (client, heard) = legacy_client(&gw.url, Leg::Streamable).await;
    let modern = connect(&gw, Leg::Modern).await;

    for _ in 0..3 {
        // Bounded by half the broken ones' list timeout: not waited for.
        assert_eq!(tool_names(&client).await, ["good__echo", "good__hang"]);
        assert_eq!(tool_names(&modern).await, ["good__echo", "good__hang"]);
    }
    for (c, leg) in [(&client, "streamable"), (&modern, "modern")] {
        for name in down {
            let (code, message) = call_error(c, &format!("{name}__echo")).await;
            assert_eq!(code, -32603, "{leg}: {name}: {message}");
            assert!(
                message.contains(&format!("upstream server {name} is "))
                    && message.contains("could not be started"),
                "{leg}: {name}: {message}"
            );
        }
        assert_eq!(
            call_text(c, "good__echo", json!({"text": leg})).await,
            format!("good:echo:{leg}")
        );
    }
    // `switchboard tools call` sends the call of a tool not listed and shows
    // the gateway's answer (before: its own "unknown tool", never sent).
    let out = bounded(
        tokio::process::Command::new(gateway_util::BIN)
            .args(["tools", "call", &gw.url, "missing__echo", "--arg", "text=x"])
            .stdin(std::process::Stdio::null())
            .output(),
    )
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("upstream server missing is down")
            && stderr.contains("is not listed; the server offers: good__echo"),
        "{stderr}"
    );
    // Whatever it was sent, it never was a list or a call.
    let sent = std::fs::read_to_string(&heard_by_flaky).unwrap_or_default();
    assert!(!sent.is_empty(), "flaky was started");
    for method in sent.lines() {
        assert!(
            matches!(method, "initialize" | "server/discover"),
            "flaky was sent {method}: {sent}"
        );
    }
    let log = gw.log();
    for name in down {
        let lapses = log
            .lines()
            .filter(|l| l.contains("left out of lists") && l.contains(&format!("upstream={name}")))
            .count();
        assert_eq!(lapses, 1, "{name}'s lapse logged once:\n{log}");
    }

    // Back: its sessions are told, and its tools are listed and called.
    heard.clear();
    std::fs::write(&flag, "").unwrap();
    until_heard(&heard, "notifications/tools/list_changed", "the session").await;
    let names = eventually(LIMIT, "flaky's tools listed", || async {
        let names = tool_names(&client).await;
        names.contains(&"flaky__echo".to_owned()).then_some(names)
    })
    .await;
    assert_eq!(
        names,
        ["flaky__echo", "flaky__hang", "good__echo", "good__hang"]
    );
    assert_eq!(
        call_text(&client, "flaky__echo", json!({"text": "back"})).await,
        "flaky:echo:back"
    );
    assert!(gw.log().contains("upstream back"), "{}", gw.log());
}

/// A completion of a known-down upstream's prompt names the upstream and
/// its state, as its calls do (it said "unknown prompt").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completion_of_a_down_upstreams_prompt_names_it() {
    let dir = TempDir::new("down-complete");
    let missing = unstartable(dir.path());
    let config = [
        gateway_util::example_upstream("ex", &[]),
        format!(
            "[upstreams.missing]\ncommand = {}\ntimeout = \"60s\"\n",
            gateway_util::q(missing.to_str().unwrap())
        ),
    ]
    .concat();
    let gw = GatewayProc::start(dir.path(), &config).await;
    eventually(LIMIT, "missing known down", || async {
        let (_, body) = gw.readyz().await;
        let v: Value = serde_json::from_str(&body).ok()?;
        v["upstreams"]["missing"]["reason"]
            .is_string()
            .then_some(())
    })
    .await;
    let client = connect(&gw, Leg::Streamable).await;
    eventually(LIMIT, "ex listed", || async {
        tool_names(&client)
            .await
            .iter()
            .any(|n| n.starts_with("ex__"))
            .then_some(())
    })
    .await;
    let params = serde_json::value::to_raw_value(&json!({
        "ref": {"type": "ref/prompt", "name": "missing__greet"},
        "argument": {"name": "style", "value": "f"}
    }))
    .unwrap();
    let e = bounded(client.request("completion/complete", Some(params), Default::default()))
        .await
        .expect_err("a down upstream completes nothing");
    let o = e.error_object().unwrap_or_else(|| panic!("{e}"));
    assert_eq!(o.code, -32603, "{}", o.message);
    assert!(
        o.message.contains("upstream server missing is down"),
        "{}",
        o.message
    );
    // The live one still completes.
    let params = serde_json::value::to_raw_value(&json!({
        "ref": {"type": "ref/prompt", "name": "ex__greet"},
        "argument": {"name": "style", "value": "f"}
    }))
    .unwrap();
    bounded(client.request("completion/complete", Some(params), Default::default()))
        .await
        .expect("ex completes");
}

/// A URL of unknown transport where neither Streamable HTTP nor the legacy
/// HTTP+SSE transport answers: its reason says both (it said only the
/// legacy transport's, hiding the likelier typo).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auto_url_that_refuses_both_transports_says_both() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = TempDir::new("auto-both");
    // Every request: 404.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let _ = s
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    )
                    .await;
            });
        }
    });
    let config = [
        gateway_util::example_upstream("ex", &[]),
        format!("[upstreams.nowhere]\nurl = \"http://127.0.0.1:{port}/mpc\"\ntimeout = \"60s\"\n"),
    ]
    .concat();
    let gw = GatewayProc::start(dir.path(), &config).await;
    let reason = eventually(LIMIT, "nowhere known down", || async {
        let (_, body) = gw.readyz().await;
        let v: Value = serde_json::from_str(&body).ok()?;
        v["upstreams"]["nowhere"]["reason"]
            .as_str()
            .map(str::to_owned)
    })
    .await;
    assert!(
        reason.contains("Streamable HTTP: ") && reason.contains("then legacy HTTP+SSE: "),
        "{reason}"
    );
}
