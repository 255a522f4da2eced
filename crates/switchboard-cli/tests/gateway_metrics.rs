//! The admin listener's metrics, read back through a real Prometheus (Debian's,
//! `SWITCHBOARD_PROMETHEUS`; `promtool` beside it): calls of known outcomes
//! through the gateway (ok, `isError`, a protocol error, refused by the
//! allowlist, refused by drift, unknown) and an upstream that crashes at once;
//! each series Prometheus scraped is checked against the calls made, and
//! `promtool check metrics` is clean on the classic text rendering.
//!
//! Skipped (saying so) when `SWITCHBOARD_PROMETHEUS` is unset; `scripts/test`
//! sets it (`scripts/install-peers` installs the package).

mod gateway_util;

use std::process::Stdio;
use std::time::Duration;

use gateway_util::{
    bounded, connect, eventually, example_upstream, fixture_upstream, lock_config, qa, GatewayProc,
    Leg, TempDir, LIMIT,
};
use serde_json::{json, Value};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One PromQL instant query's single value (`None`: no series yet).
async fn query(http: &reqwest::Client, prometheus: &str, promql: &str) -> Option<f64> {
    let url = format!("{prometheus}/api/v1/query");
    let body = http
        .get(url)
        .query(&[("query", promql)])
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    let body: Value = serde_json::from_str(&body).ok()?;
    let result = body["data"]["result"].as_array()?;
    let value = result.first()?["value"][1].as_str()?;
    value.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_reads_what_the_gateway_did() {
    let Ok(prometheus_bin) = std::env::var("SWITCHBOARD_PROMETHEUS") else {
        eprintln!("skipped: SWITCHBOARD_PROMETHEUS is not set (scripts/install-peers)");
        return;
    };
    let promtool = std::env::var("SWITCHBOARD_PROMTOOL").expect("SWITCHBOARD_PROMTOOL beside it");
    let dir = TempDir::new("metrics");
    let lock_file = dir.path().join("switchboard.lock");
    lock_config(
        dir.path(),
        &format!(
            "{}{}",
            example_upstream("ex", &[]),
            fixture_upstream("fx", &["--name", "fx", "--tool", "t1"], "")
        ),
        &lock_file,
    );
    // fx's t1 drifted since its lock.
    let config = format!(
        "{}{}\n[routes.default]\npath = \"/mcp\"\nupstreams = {}\ntools = {}\n",
        example_upstream("ex", &[]),
        fixture_upstream(
            "fx",
            &["--name", "fx", "--tool", "t1", "--drift", "description:t1"],
            ""
        ),
        qa(&["ex", "fx"]),
        qa(&["ex__echo", "ex__fail", "fx__t1", "fx__echo"]),
    );
    // A second gateway, whose only upstream exits at once (no lock can
    // hold it); Prometheus scrapes both.
    let crashing_dir = TempDir::new("metrics-crash");
    let crashing = GatewayProc::start_with_args(
        crashing_dir.path(),
        "[upstreams.bad]\ncommand = \"false\"\n",
        &["--admin", "127.0.0.1:0"],
    )
    .await;
    let crashing_admin = crashing.admin.clone().expect("its admin listener");
    let gw = GatewayProc::start_with_args(
        dir.path(),
        &config,
        &[
            "--admin",
            "127.0.0.1:0",
            "--lock",
            lock_file.to_str().unwrap(),
        ],
    )
    .await;
    let admin = gw.admin.clone().expect("its admin listener");
    let client = connect(&gw, Leg::Streamable).await;
    // Wait for ex's tools (the catalog listed).
    eventually(LIMIT, "ex__echo listed", || async {
        let tools = client.list_tools().await.ok()?;
        tools.iter().any(|t| t.name == "ex__echo").then_some(())
    })
    .await;
    for _ in 0..3 {
        let r = bounded(client.call_tool("ex__echo", json!({"text": "hi"})))
            .await
            .expect("echo");
        assert!(!r.is_error());
    }
    for _ in 0..2 {
        let r = bounded(client.call_tool("ex__fail", json!({})))
            .await
            .expect("fail answers");
        assert!(r.is_error());
    }
    // Arguments its schema refuses: a tool error too (2025-11-25).
    let bad_args = bounded(client.call_tool("ex__echo", json!({}))).await;
    assert!(bad_args.is_ok_and(|r| r.is_error()));
    for (name, what) in [
        ("ex__add", "outside the allowlist"),
        ("fx__t1", "drifted"),
        ("nosuch", "unknown"),
    ] {
        let r = bounded(client.call_tool(name, json!({"a": 1, "b": 2}))).await;
        assert!(r.is_err(), "{name} ({what}) was not refused: {r:?}");
    }

    // The classic text is what promtool checks.
    let http = reqwest::Client::new();
    let classic = http
        .get(format!("http://{admin}/metrics"))
        .send()
        .await
        .unwrap();
    assert!(classic.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
    let text = classic.text().await.unwrap();
    let mut check = tokio::process::Command::new(&promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs");
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = check.stdin.take().unwrap();
        stdin.write_all(text.as_bytes()).await.unwrap();
    }
    let checked = bounded(check.wait_with_output()).await.unwrap();
    assert!(
        checked.status.success() && checked.stdout.is_empty() && checked.stderr.is_empty(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
    let open_metrics = http
        .get(format!("http://{admin}/metrics"))
        .header("accept", "application/openmetrics-text; version=1.0.0")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        open_metrics.ends_with("# EOF\n"),
        "OpenMetrics ends with # EOF"
    );

    // A real Prometheus scrapes the admin listener.
    let prom_yml = dir.path().join("prometheus.yml");
    std::fs::write(
        &prom_yml,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: switchboard\n    \
             static_configs:\n      - targets: ['{admin}', '{crashing_admin}']\n"
        ),
    )
    .unwrap();
    // Its port is chosen before it binds it: one another process took
    // meanwhile ends it at once, and another port is tried.
    let mut tries = 0;
    let (_prometheus, prometheus) = loop {
        tries += 1;
        let web = format!("127.0.0.1:{}", free_port());
        let mut child = tokio::process::Command::new(&prometheus_bin)
            .arg(format!("--config.file={}", prom_yml.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={web}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("prometheus.log")).unwrap())
            .kill_on_drop(true)
            .spawn()
            .expect("prometheus runs");
        let url = format!("http://{web}");
        let mut ready = None;
        for _ in 0..300 {
            if child.try_wait().ok().flatten().is_some() {
                ready = Some(false);
                break;
            }
            let answered = http.get(format!("{url}/-/ready")).send().await;
            if answered.is_ok_and(|r| r.status().is_success()) {
                ready = Some(true);
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        match ready {
            Some(true) => break (child, url),
            Some(false) if tries < 5 => continue,
            _ => panic!("prometheus did not start in {tries} tries"),
        }
    };
    let server = |tool: &str, error: &str| {
        format!(
            "sum(mcp_server_operation_duration_seconds_count{{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"{tool}\",error_type=\"{error}\"}})"
        )
    };
    let want: Vec<(String, f64)> = vec![
        (server("ex__echo", ""), 3.0),
        (server("ex__fail", "tool_error"), 2.0),
        (server("ex__echo", "tool_error"), 1.0),
        // The three refused below: protocol errors, named or not.
        (
            "sum(mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",error_type=~\"-.*\"})".into(),
            3.0,
        ),
        (
            "sum(mcp_client_operation_duration_seconds_count{upstream=\"ex\",mcp_method_name=\"tools/call\",network_transport=\"pipe\"})".into(),
            6.0,
        ),
        (
            "sum(switchboard_requests_refused_total{reason=\"allowlist\"})".into(),
            1.0,
        ),
        (
            "sum(switchboard_requests_refused_total{reason=\"drift\"})".into(),
            1.0,
        ),
        (
            "sum(switchboard_requests_refused_total{reason=\"unknown_tool\"})".into(),
            1.0,
        ),
        (
            "sum(switchboard_sessions_open{transport=\"streamable_http\"})".into(),
            1.0,
        ),
        (
            "switchboard_upstream_state{upstream=\"ex\",state=\"ready\"}".into(),
            1.0,
        ),
    ];
    for (promql, value) in &want {
        let http = &http;
        let prometheus = &prometheus;
        eventually(Duration::from_secs(60), promql, || async move {
            let got = query(http, prometheus, promql).await?;
            assert!(got <= *value, "{promql}: {got}, more than the {value} made");
            (got == *value).then_some(())
        })
        .await;
    }
    // At least: the upstream that exits at once crashed, fx drifted, and
    // bytes came and went.
    for promql in [
        "sum(switchboard_children_total{upstream=\"bad\",event=\"crashed\"})",
        "sum(switchboard_drift_events_total{upstream=\"fx\"})",
        "sum(switchboard_transport_bytes_total{direction=\"in\"})",
        "sum(switchboard_transport_bytes_total{direction=\"out\"})",
    ] {
        let http = &http;
        let prometheus = &prometheus;
        eventually(Duration::from_secs(60), promql, || async move {
            (query(http, prometheus, promql).await? >= 1.0).then_some(())
        })
        .await;
    }
    drop(client);
}
