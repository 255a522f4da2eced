//! The bridge in front of a remote upstream (`--upstream URL`,
//! `--upstream-sse URL`): the library's example server over Streamable HTTP
//! (of a legacy revision, and 2026-07-28 only) and over legacy HTTP+SSE,
//! reached through the bridge by clients of every era — the gateway's
//! connectors, one upstream at a time.

mod bridge_util;
mod common;

use bridge_util::*;
use common::HttpExample;
use serde_json::{json, Value};

/// A legacy Streamable HTTP session, a 2026-07-28 exchange and a legacy
/// HTTP+SSE session each call `echo` through the bridge at `bridge`.
async fn every_era_echoes(bridge: &BridgeProc, tag: &str) {
    let c = client();
    let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
    let reply = s.echo(&c, &bridge.url, 1, &format!("{tag} legacy")).await;
    let result = &reply.response(&json!(1))["result"];
    assert_eq!(
        first_text(result),
        format!("{tag} legacy"),
        "{}",
        reply.body
    );
    assert_eq!(s.delete(&c, &bridge.url).await, 200);

    let params = json!({"name": "echo", "arguments": {"text": format!("{tag} modern")}});
    let reply = modern(&c, &bridge.url, json!(2), "tools/call", params, json!({})).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let result = &reply.response(&json!(2))["result"];
    assert_eq!(
        first_text(result),
        format!("{tag} modern"),
        "{}",
        reply.body
    );
    assert_eq!(result["resultType"], "complete", "{result}");

    let mut sse = open_legacy(&c, &bridge.base).await;
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion": "2024-11-05", "capabilities": {},
        "clientInfo": {"name": "bridge-test", "version": "1"}}});
    assert_eq!(sse.send(&c, &init).await, 202);
    let answer = sse.until_response(&json!(0)).await;
    assert_eq!(
        answer.last().unwrap()["result"]["protocolVersion"],
        "2024-11-05",
        "{answer:?}"
    );
    let done = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    assert_eq!(sse.send(&c, &done).await, 202);
    let call = json!({"jsonrpc":"2.0","id":3,"method":"tools/call",
        "params":{"name":"echo","arguments":{"text": format!("{tag} sse")}}});
    assert_eq!(sse.send(&c, &call).await, 202);
    let answer = sse.until_response(&json!(3)).await;
    assert_eq!(
        first_text(&answer.last().unwrap()["result"]),
        format!("{tag} sse")
    );
}

#[tokio::test]
async fn a_streamable_http_server_is_served_to_every_era() {
    let upstream = HttpExample::start();
    for mode in ["shared", "per-session"] {
        let bridge = BridgeProc::start(&["--child", mode, "--upstream", &upstream.url], &[]).await;
        every_era_echoes(&bridge, mode).await;
    }
}

/// A server of 2026-07-28 only: legacy clients reach it through the bridge's
/// era translation, which no 2025 server needs.
#[tokio::test]
async fn a_2026_07_28_only_server_is_served_to_legacy_clients() {
    let upstream = HttpExample::start_with(&["--modern-only"]);
    for mode in ["shared", "per-session"] {
        let bridge = BridgeProc::start(&["--child", mode, "--upstream", &upstream.url], &[]).await;
        every_era_echoes(&bridge, mode).await;
    }
}

#[tokio::test]
async fn a_legacy_sse_server_is_served_to_every_era() {
    let upstream = HttpExample::start();
    let sse = upstream.url.trim_end_matches("/mcp").to_owned() + "/sse";
    for mode in ["shared", "per-session"] {
        let bridge = BridgeProc::start(&["--child", mode, "--upstream-sse", &sse], &[]).await;
        every_era_echoes(&bridge, mode).await;
    }
}

/// An upstream that is gone: the call that finds it gone fails with an error
/// naming why, and `/readyz` says the upstream is down while the bridge
/// reconnects with backoff.
#[tokio::test]
async fn a_remote_upstream_that_is_gone_fails_calls_and_readiness() {
    let upstream = HttpExample::start();
    let url = upstream.url.clone();
    let bridge = BridgeProc::start(&["--child", "shared", "--upstream", &url], &[]).await;
    let c = client();
    let params = json!({"name": "echo", "arguments": {"text": "up"}});
    let reply = modern(
        &c,
        &bridge.url,
        json!(1),
        "tools/call",
        params.clone(),
        json!({}),
    )
    .await;
    assert_eq!(first_text(&reply.response(&json!(1))["result"]), "up");
    let readyz = c
        .get(format!("{}/readyz", bridge.base))
        .send()
        .await
        .unwrap();
    assert_eq!(readyz.status().as_u16(), 200);
    assert!(upstream.stop().success());
    let reply = modern(&c, &bridge.url, json!(2), "tools/call", params, json!({})).await;
    let answer: &Value = reply.response(&json!(2));
    assert_eq!(answer["error"]["code"], -32603, "{}", reply.body);
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("Connection refused"), "{message}");
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let readyz = c
            .get(format!("{}/readyz", bridge.base))
            .send()
            .await
            .unwrap();
        if readyz.status().as_u16() == 503 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "/readyz never said down"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[test]
fn bad_upstream_flags_are_refused_with_exit_2() {
    for (args, says) in [
        (vec!["bridge", "--upstream", "ftp://x/mcp"], "--upstream"),
        (
            vec![
                "bridge",
                "--upstream",
                "http://127.0.0.1:1/mcp",
                "--upstream-header",
                "nocolon",
            ],
            "NAME: VALUE",
        ),
        (
            vec![
                "bridge",
                "--upstream",
                "http://127.0.0.1:1/mcp",
                "--upstream-header",
                "Mcp-Session-Id: x",
            ],
            "--upstream-header",
        ),
        (
            vec!["bridge", "--upstream-header", "X-Key: 1", "--", "true"],
            "needs --upstream",
        ),
    ] {
        let run = common::run(&args);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{args:?}: {}", run.stderr);
    }
}

/// What reaches a remote upstream: the `--upstream-header` credentials on
/// every request, and never a client's own `Authorization` (the bridge
/// forwards messages, not headers). The upstream records the headers of each
/// request it gets.
#[tokio::test]
async fn upstream_headers_reach_the_upstream_and_client_credentials_never_do() {
    use std::io::{BufRead, BufReader};
    let dir = std::env::temp_dir().join(format!("sb-upstream-headers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("headers.jsonl");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/header_recording_server.py");
    let mut server = std::process::Command::new("python3")
        .arg(&script)
        .arg(&log)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    BufReader::new(server.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .expect("its URL")
        .to_owned();
    for mode in ["shared", "per-session"] {
        let bridge = BridgeProc::start(
            &[
                "--child",
                mode,
                "--upstream",
                &url,
                "--upstream-header",
                "X-Api-Key: k1",
            ],
            &[],
        )
        .await;
        let c = client();
        let s = open_session(&c, &bridge.url, "2025-11-25", json!({})).await;
        let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
            "params":{"name":"echo","arguments":{"text":"hi"}}});
        let mut headers = s.headers();
        headers.push(("authorization", "Bearer client-token"));
        headers.push(("x-api-key", "client-key"));
        let reply = post(&c, &bridge.url, &headers, &body).await;
        assert_eq!(
            first_text(&reply.response(&json!(1))["result"]),
            "hi",
            "{mode}"
        );
        let reply = modern(
            &c,
            &bridge.url,
            json!(2),
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "there"}}),
            json!({}),
        )
        .await;
        assert_eq!(
            first_text(&reply.response(&json!(2))["result"]),
            "there",
            "{mode}"
        );
    }
    let _ = server.kill();
    let _ = server.wait();
    let recorded: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(recorded.len() >= 6, "{recorded:?}");
    for headers in &recorded {
        assert_eq!(headers["x-api-key"], "k1", "{headers}");
        assert!(headers.get("authorization").is_none(), "{headers}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
