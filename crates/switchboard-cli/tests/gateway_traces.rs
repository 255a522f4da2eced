//! Traces through the gateway: the official Python SDK client calls a tool
//! with W3C trace context and a member of its own in `_meta`; an OTLP
//! receiver built on the official protobuf definitions (PyPI
//! `opentelemetry-proto`, `tests/fixtures/otlp_receiver.py`) collects the
//! spans; the stdio upstream records the request it received. One trace id
//! runs from the client to the upstream's `_meta`, each span's parent is the
//! one before it, the attributes are the conventions' names, the client's
//! other `_meta` members arrive as sent, and the JSON log lines of the call
//! carry its trace id.
//!
//! Skipped (saying so) when `SWITCHBOARD_PYTHON` is unset (`scripts/install-peers`).

mod gateway_util;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use gateway_util::{eventually, fixture, fixture_upstream, GatewayProc, TempDir, LIMIT};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const PARENT: &str = "b7ad6b7169203331";

fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trace_from_the_client_to_the_upstreams_meta() {
    let Ok(python) = std::env::var("SWITCHBOARD_PYTHON") else {
        eprintln!("skipped: SWITCHBOARD_PYTHON is not set (scripts/install-peers)");
        return;
    };
    let dir = TempDir::new("traces");
    let spans = dir.path().join("spans.jsonl");
    let requests = dir.path().join("requests.jsonl");
    let mut receiver = tokio::process::Command::new(&python)
        .arg(fixture("otlp_receiver.py"))
        .arg(&spans)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the receiver runs");
    let mut lines = BufReader::new(receiver.stdout.take().unwrap()).lines();
    let port = tokio::time::timeout(LIMIT, lines.next_line())
        .await
        .expect("the receiver says its port")
        .unwrap()
        .expect("a port line");
    let endpoint = format!("http://127.0.0.1:{}", port.trim());
    let config = fixture_upstream(
        "fx",
        &["--name", "fx", "--requests", requests.to_str().unwrap()],
        "",
    );
    let gw = GatewayProc::start_with_env(
        dir.path(),
        &config,
        &["--log-format", "json"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("RUST_LOG", "debug"),
        ],
    )
    .await;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/python_traced_call.py");
    let traceparent = format!("00-{TRACE}-{PARENT}-01");
    let out = tokio::time::timeout(
        LIMIT,
        tokio::process::Command::new(&python)
            .arg(&script)
            .args([gw.url.as_str(), "fx__echo", traceparent.as_str()])
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .expect("the client ends in time")
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "fx:echo:traced"
    );

    // The spans of the trace: the server span, child of the client's, and
    // the client span, child of the server span.
    let (server, client) = eventually(Duration::from_secs(30), "both spans exported", || {
        let spans = json_lines(&spans);
        async move {
            let of = |kind: i64| {
                spans
                    .iter()
                    .find(|s| s["trace_id"] == TRACE && s["kind"] == kind)
                    .cloned()
            };
            Some((of(2)?, of(3)?))
        }
    })
    .await;
    assert_eq!(server["parent_span_id"], PARENT, "{server}");
    assert_eq!(server["name"], "tools/call fx__echo");
    let a = &server["attributes"];
    assert_eq!(a["mcp.method.name"], "tools/call");
    assert_eq!(a["gen_ai.tool.name"], "fx__echo");
    assert_eq!(a["network.transport"], "tcp");
    assert_eq!(a["mcp.protocol.version"], "2025-11-25");
    assert!(a["mcp.session.id"].as_str().is_some_and(|s| !s.is_empty()));
    assert_eq!(client["parent_span_id"], server["span_id"], "{client}");
    assert_eq!(client["name"], "tools/call echo");
    let a = &client["attributes"];
    assert_eq!(a["gen_ai.tool.name"], "echo");
    assert_eq!(a["network.transport"], "pipe");
    assert_eq!(a["server.address"], "fx");

    // The session's initialize: a span of its own, with the revision its
    // answer agreed.
    let initialize = json_lines(&spans)
        .into_iter()
        .find(|s| s["name"] == "initialize" && s["kind"] == 2)
        .expect("the initialize span");
    let a = &initialize["attributes"];
    assert_eq!(a["mcp.protocol.version"], "2025-11-25", "{initialize}");

    // What the upstream received: the client span as its parent, the
    // client's tracestate and its own member as sent.
    let call = json_lines(&requests)
        .into_iter()
        .find(|r| r["method"] == "tools/call")
        .expect("the upstream got the call");
    let meta = &call["params"]["_meta"];
    let client_id = client["span_id"].as_str().unwrap();
    assert_eq!(meta["traceparent"], format!("00-{TRACE}-{client_id}-01"));
    assert_eq!(meta["tracestate"], "vendor=opaque");
    assert_eq!(meta["example.com/keep"], "as sent");

    // Every log line is JSON; the call's carry its trace id.
    let log = gw.log();
    let traced = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .filter(|v| {
            v["spans"]
                .as_array()
                .is_some_and(|s| s.iter().any(|s| s["trace_id"] == TRACE))
        })
        .count();
    assert!(traced > 0, "no log line names the trace: {log}");
}

/// With `--log-format json`, even the lines of a start that fails (a broken
/// file, a port taken) are JSON lines at level ERROR, and the exit is 2;
/// in text they stay the plain lines they were.
#[test]
fn a_failed_start_is_logged_in_the_format_asked_for() {
    let dir = TempDir::new("json-start");
    let file = dir.path().join("gateway.toml");
    std::fs::write(&file, "listen = 3\n[upstreams.a]\n").unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().to_string();
    let bin = env!("CARGO_BIN_EXE_switchboard");
    let gateway = |format: &str| {
        let f = file.to_str().unwrap();
        std::process::Command::new(bin)
            .args(["gateway", "--log-format", format, "--config", f])
            .output()
            .unwrap()
    };
    let bridge = |format: &str| {
        std::process::Command::new(bin)
            .args([
                "bridge",
                "--log-format",
                format,
                "--listen",
                &port,
                "--",
                "cat",
            ])
            .output()
            .unwrap()
    };
    for (what, out, lines) in [
        ("gateway", gateway("json"), 2),
        ("bridge", bridge("json"), 1),
    ] {
        assert_eq!(out.status.code(), Some(2), "{what}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        let events: Vec<Value> = stderr
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{what}: {e}: {l}")))
            .collect();
        assert_eq!(events.len(), lines, "{what}: {stderr}");
        for e in &events {
            assert_eq!(e["level"], "ERROR", "{what}: {e}");
        }
        let last = events[lines - 1]["fields"]["message"].as_str().unwrap();
        let expected = if what == "gateway" {
            "1 problem"
        } else {
            "cannot listen on"
        };
        assert!(last.contains(expected), "{what}: {last}");
    }
    let text = String::from_utf8(gateway("text").stderr).unwrap();
    assert!(
        text.ends_with(": 1 problem\n") && text.starts_with(file.to_str().unwrap()),
        "{text}"
    );
    let text = String::from_utf8(bridge("text").stderr).unwrap();
    assert!(text.starts_with("switchboard: cannot listen on "), "{text}");
}

/// A collector that cannot be reached: the exports fail, the gateway says
/// so once (a warning naming why), and its calls go on as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_is_down_is_said_once_and_calls_go_on() {
    let dir = TempDir::new("traces-down");
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let gw = GatewayProc::start_with_env(
        dir.path(),
        &gateway_util::example_upstream("ex", &[]),
        &["--log-format", "json"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_BSP_SCHEDULE_DELAY", "50"),
        ],
    )
    .await;
    let client = gateway_util::connect(&gw, gateway_util::Leg::Streamable).await;
    let failed = |log: &str| {
        log.lines()
            .filter(|l| l.contains("trace export failed"))
            .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect::<Vec<_>>()
    };
    for round in 0..3 {
        let text = round.to_string();
        let echoed =
            gateway_util::call_text(&client, "ex__echo", serde_json::json!({"text": text})).await;
        assert_eq!(echoed, text);
        // Each round's spans are exported (and fail) before the next.
        eventually(LIMIT, "a failed export", || {
            let n = failed(&gw.log()).len();
            async move { (n > 0).then_some(()) }
        })
        .await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let said = failed(&gw.log());
    assert_eq!(said.len(), 1, "said once: {said:?}");
    assert_eq!(said[0]["level"], "WARN");
    assert!(
        said[0]["fields"]["reason"]
            .as_str()
            .is_some_and(|r| !r.is_empty()),
        "{}",
        said[0]
    );
}
