//! `--audit FILE` through the gateway: each tools/call, prompts/get and
//! resources/read, and each refusal by policy, is one record of the hash
//! chain, from sessions and stateless exchanges alike; the chain's head is
//! on `/metrics` and in the checkpoint written at the end; `switchboard
//! audit verify` finds it intact (exit 0), names the first bad line of a
//! copy deleted, edited, reordered or cut off (exit 1, the cut through the
//! checkpoint), and says so of a file it cannot read (exit 2).

mod gateway_util;

use std::path::Path;
use std::process::Command;

use gateway_util::*;
use serde_json::{json, Value};

fn verify(file: &Path, checkpoint: Option<&Path>) -> (i32, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_switchboard"));
    c.args(["audit", "verify"]).arg(file);
    if let Some(cp) = checkpoint {
        c.arg("--checkpoint").arg(cp);
    }
    let out = c.output().expect("switchboard runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

fn records(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_audited_request_is_a_record_of_one_intact_chain() {
    let dir = TempDir::new("audit");
    let trail = dir.path().join("audit.jsonl");
    let config = format!(
        "{}\n[routes.agent]\npath = \"/agent\"\nupstreams = [\"ex\"]\ntools = [\"ex__echo\", \"ex__fail\"]\n",
        example_upstream("ex", &[])
    );
    let mut gw = GatewayProc::start_with_args(
        dir.path(),
        &config,
        &["--admin", "127.0.0.1:0", "--audit", trail.to_str().unwrap()],
    )
    .await;
    let agent = format!("{}/agent", gw.base);
    for leg in [Leg::Streamable, Leg::Modern] {
        let client = connect(&gw, leg).await;
        assert_eq!(
            call_text(&client, "ex__echo", json!({"text": "hi", "n": 1})).await,
            "hi"
        );
        let failed = bounded(client.call_tool("ex__fail", json!({})))
            .await
            .unwrap();
        assert_eq!(failed.is_error, Some(true));
        bounded(client.get_prompt("ex__greet", Some([("name".into(), "Ada".into())].into())))
            .await
            .unwrap();
        bounded(client.read_resource("example://readme"))
            .await
            .unwrap();
        // Not audited: lists.
        tool_names(&client).await;
    }
    // Refused by the route's allowlist, and unknown.
    let era = switchboard::client::EraPolicy::Modern;
    let client = bounded(switchboard::Client::connect_url(
        &agent,
        options().with_era(era),
        switchboard::client::http::HttpClientConfig::new(""),
    ))
    .await
    .unwrap();
    for tool in ["ex__add", "nope__x"] {
        let e = bounded(client.call_tool(tool, json!({"a": 1, "b": 2})))
            .await
            .expect_err("refused");
        let data = e.error_object().and_then(|o| o.data.clone()).expect("data");
        let reason = if tool == "ex__add" {
            "allowlist"
        } else {
            "unknown_tool"
        };
        assert_eq!(data.get(), format!(r#"{{"reason":"{reason}"}}"#));
    }

    // Cancelled by the client while the upstream works on it: no answer,
    // and a record that says so.
    let client = connect(&gw, Leg::Streamable).await;
    let token = switchboard::peer::CancelToken::new();
    let options = switchboard::CallOptions::new().cancel(token.clone());
    let call = client.call_tool_with("ex__progress", json!({"seconds": 60, "steps": 1}), options);
    let cancel = async {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        token.cancel();
    };
    let (cancelled, ()) = bounded(async { tokio::join!(call, cancel) }).await;
    assert!(cancelled.is_err(), "{cancelled:?}");

    // The head on /metrics: as many records as requests audited.
    let admin = gw.admin.clone().unwrap();
    let want = 11;
    let head = eventually(LIMIT, "all records written", || {
        let admin = admin.clone();
        async move {
            let text = reqwest::get(format!("http://{admin}/metrics"))
                .await
                .ok()?
                .text()
                .await
                .ok()?;
            let value = |name: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
                    .and_then(|v| v.trim().parse::<u64>().ok())
            };
            (value("switchboard_audit_records")? == want)
                .then(|| value("switchboard_audit_head"))?
        }
    })
    .await;
    let (_, status) = gw.terminate().await;
    assert!(status.success());

    let r = records(&trail);
    assert_eq!(r.len(), want as usize, "{r:#?}");
    // The metrics' head is the last record's hash, its first six bytes.
    let last = r.last().unwrap()["hash"].as_str().unwrap();
    assert_eq!(u64::from_str_radix(&last[..12], 16).unwrap(), head);
    let of = |method: &str, name: &str| {
        r.iter()
            .filter(|x| x["method"] == method && x["name"] == name)
            .collect::<Vec<_>>()
    };
    let echo = of("tools/call", "ex__echo");
    assert_eq!(echo.len(), 2, "one per leg");
    for e in &echo {
        assert_eq!(
            (e["kind"].as_str(), e["outcome"].as_str()),
            (Some("call"), Some("ok"))
        );
        assert_eq!(e["route"], "/mcp");
        assert_eq!(e["upstream"], "ex");
        assert!(e["duration_ms"].as_f64().is_some());
        assert!(e.get("arguments").is_none(), "{e}");
    }
    // Canonical: the same arguments hash the same from both legs.
    assert_eq!(echo[0]["arguments_sha256"], echo[1]["arguments_sha256"]);
    assert_eq!(echo[0]["arguments_sha256"].as_str().map(str::len), Some(64));
    assert!(of("tools/call", "ex__fail")
        .iter()
        .all(|e| e["outcome"] == "tool_error"));
    assert_eq!(of("prompts/get", "ex__greet").len(), 2);
    assert_eq!(of("resources/read", "example://readme").len(), 2);
    let refused = of("tools/call", "ex__add");
    assert_eq!(refused.len(), 1);
    let x = refused[0];
    assert_eq!(
        (x["kind"].as_str(), x["reason"].as_str()),
        (Some("refused"), Some("allowlist"))
    );
    assert_eq!(
        (x["route"].as_str(), x["code"].as_i64()),
        (Some("/agent"), Some(-32602))
    );
    assert!(x.get("upstream").is_none());
    assert_eq!(of("tools/call", "nope__x")[0]["reason"], "unknown_tool");
    let cancelled = of("tools/call", "ex__progress");
    assert_eq!(
        (cancelled.len(), cancelled[0]["outcome"].as_str()),
        (1, Some("cancelled"))
    );
    assert_eq!(cancelled[0]["upstream"], "ex", "{}", cancelled[0]);

    // Intact, its end against the checkpoint written at the stop.
    let (code, said) = verify(&trail, None);
    assert_eq!(code, 0, "{said}");
    assert!(
        said.contains("intact: 11 record(s)") && said.contains("checkpoint"),
        "{said}"
    );

    // Tampered copies: each names its first bad line.
    let text = std::fs::read_to_string(&trail).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let checkpoint = dir.path().join("audit.jsonl.checkpoint");
    let tampered = dir.path().join("tampered.jsonl");
    let check = |lines: Vec<String>, bad: usize, why: &str| {
        std::fs::write(&tampered, lines.join("\n") + "\n").unwrap();
        let (code, said) = verify(&tampered, Some(&checkpoint));
        assert_eq!(code, 1, "{why}: {said}");
        assert!(
            said.contains(&format!("tampered.jsonl:{bad}: ")),
            "{why}: {said}"
        );
    };
    let owned = || lines.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    let mut edited = owned();
    edited[3] = edited[3].replace("\"duration_ms\":", "\"duration_ms\":1");
    check(edited, 4, "edited");
    let mut deleted = owned();
    deleted.remove(5);
    check(deleted, 6, "deleted");
    let mut moved = owned();
    moved.swap(2, 7);
    check(moved, 3, "reordered");
    let cut = owned()[..8].to_vec();
    check(cut, 9, "cut off");
    check(owned()[2..].to_vec(), 1, "its beginning deleted");
    // Unreadable: no such file, a checkpoint that is not one.
    assert_eq!(verify(&dir.path().join("none.jsonl"), None).0, 2);
    std::fs::write(dir.path().join("bad.checkpoint"), "garbage").unwrap();
    assert_eq!(
        verify(&trail, Some(&dir.path().join("bad.checkpoint"))).0,
        2
    );

    // A restart goes on with the chain.
    let gw =
        GatewayProc::start_with_args(dir.path(), &config, &["--audit", trail.to_str().unwrap()])
            .await;
    let client = connect(&gw, Leg::Modern).await;
    call_text(&client, "ex__echo", json!({"text": "again"})).await;
    drop(client);
    let mut gw = gw;
    gw.terminate().await;
    let (code, said) = verify(&trail, None);
    assert_eq!(code, 0, "{said}");
    assert_eq!(records(&trail).last().unwrap()["seq"], 11);
}

/// A trail that is no regular file (a device, a FIFO) is refused at the
/// start, saying why, rather than spinning on writes it cannot cut back or
/// waiting for a reader.
#[test]
fn a_trail_that_is_no_regular_file_is_refused_at_the_start() {
    let dir = TempDir::new("audit-fifo");
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    for target in [Path::new("/dev/full"), fifo.as_path()] {
        let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
            .args(["bridge", "--listen", "127.0.0.1:0", "--audit"])
            .arg(target)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{target:?}: {said}");
        assert!(said.contains("not a regular file"), "{target:?}: {said}");
    }
}
