//! The live page (`/ui` on the admin listener) in a real headless Chromium
//! (Debian's; `SWITCHBOARD_CHROMIUM`), driven over the DevTools protocol
//! (`fixtures/cdp.py`): opened first, it shows the traffic, a refusal, a
//! drift and a crash provoked after it was opened; its numbers match
//! `/metrics`; argument values never reach it; a phone-sized window needs
//! no sideways scroll. Screenshots (the drift, then laptop and phone) are kept in
//! `$SWITCHBOARD_ARTIFACTS` (default `target/tmp/artifacts`).
//!
//! Skipped (saying so) without `SWITCHBOARD_CHROMIUM`, except in CI
//! (`CI` set), where its absence fails: `scripts/install-peers` installs it.

mod gateway_util;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use gateway_util::{
    bounded, connect, example_upstream, fixture, fixture_upstream, lock_config, qa, GatewayProc,
    Leg, TempDir, LIMIT,
};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// A headless Chromium behind `fixtures/cdp.py`.
struct Browser {
    _child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    profile: PathBuf,
}

impl Browser {
    async fn start(chromium: &str, profile: &Path) -> Browser {
        let mut child = tokio::process::Command::new("python3")
            .arg(fixture("cdp.py"))
            .arg(chromium)
            .arg(profile)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 runs");
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Browser {
            _child: child,
            stdin,
            lines,
            profile: profile.to_owned(),
        }
    }

    /// One command's answer; a failed one fails the test, with Chromium's log.
    async fn ask(&mut self, command: Value) -> Value {
        let line = format!("{command}\n");
        bounded(self.stdin.write_all(line.as_bytes()))
            .await
            .unwrap();
        let answer = bounded(self.lines.next_line()).await.unwrap();
        let answer: Value = match answer {
            Some(a) => serde_json::from_str(&a).unwrap(),
            None => Value::Null,
        };
        if answer.get("error").is_some() || answer.is_null() {
            let log =
                std::fs::read_to_string(self.profile.join("chromium.log")).unwrap_or_default();
            panic!("{command} failed: {answer}\nchromium's log:\n{log}");
        }
        answer
    }

    async fn open(&mut self, url: &str, width: u32, height: u32, mobile: bool) {
        self.ask(json!({"open": url, "width": width, "height": height, "mobile": mobile}))
            .await;
    }

    /// What the page shows now ([`READ`]).
    async fn read(&mut self) -> Value {
        self.ask(json!({ "eval": READ })).await["value"].take()
    }

    async fn shot(&mut self, path: &Path) {
        self.ask(json!({"shot": path})).await;
        let png = std::fs::read(path).unwrap();
        assert!(
            png.starts_with(b"\x89PNG") && png.len() > 10_000,
            "{path:?}"
        );
    }
}

/// Reads the page every 200 ms until `done` says so, for at most [`LIMIT`].
async fn until(browser: &mut Browser, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let start = std::time::Instant::now();
    loop {
        let page = browser.read().await;
        if done(&page) {
            return page;
        }
        assert!(
            start.elapsed() < LIMIT,
            "not within {LIMIT:?}: {what}\n{page:#}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What the page shows, as its reader would: the tiles, each table's rows
/// by their key, the chart's lines, and whether it overflows sideways.
const READ: &str = r#"(() => {
  const t = (id) => document.getElementById(id).textContent;
  const rows = (id) => [...document.querySelectorAll('#' + id + ' tbody tr')];
  const f = (row, k) => { const c = row.querySelector('[data-field="' + k + '"]'); return c ? c.textContent : null; };
  return {
    updates: Number(document.body.dataset.updates), link: t('link'), calls: t('calls'),
    errors: t('errors'), refused: t('refused'), sessions: t('sessions'), ready: t('ready'), audit: t('audit'),
    upstreams: Object.fromEntries(rows('upstreams').filter((r) => r.dataset.upstream).map((r) => [r.dataset.upstream,
      {state: f(r, 'state'), restarts: f(r, 'restarts'), crashes: f(r, 'crashes'), tools: f(r, 'tools'), drift: f(r, 'drift')}])),
    tools: Object.fromEntries(rows('tools').filter((r) => r.dataset.tool).map((r) => [r.dataset.tool,
      {served: f(r, 'served'), drift: f(r, 'drift')}])),
    routes: Object.fromEntries(rows('routes').filter((r) => r.dataset.route).map((r) => [r.dataset.route, f(r, 'allow')])),
    recent: rows('recent').map((r) => [...r.cells].map((c) => c.textContent)),
    lines: document.querySelectorAll('#chart polyline').length,
    text: document.body.innerText,
    overflow: document.documentElement.scrollWidth > window.innerWidth,
  };
})()"#;

fn number(v: &Value) -> u64 {
    v.as_str()
        .unwrap_or_default()
        .replace(',', "")
        .parse()
        .unwrap_or(u64::MAX)
}

/// The sum of `mcp_server_operation_duration_seconds_count` on `/metrics`.
async fn answered(admin: &str) -> u64 {
    let text = reqwest::get(format!("http://{admin}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .filter(|l| l.starts_with("mcp_server_operation_duration_seconds_count"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_shows_what_happens_while_it_is_open() {
    let Ok(chromium) = std::env::var("SWITCHBOARD_CHROMIUM") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "SWITCHBOARD_CHROMIUM is unset in CI (scripts/install-peers installs Chromium)"
        );
        eprintln!("skipped: SWITCHBOARD_CHROMIUM is not set (scripts/install-peers)");
        return;
    };
    let dir = TempDir::new("live-page");
    let lock_file = dir.path().join("switchboard.lock");
    let fx = ["--name", "fx", "--tool", "t1", "--grow"];
    lock_config(
        dir.path(),
        &format!(
            "{}{}",
            example_upstream("ex", &[]),
            fixture_upstream("fx", &fx, "")
        ),
        &lock_file,
    );
    let pidfile = dir.path().join("fx.pid");
    let mut with_pid = fx.to_vec();
    with_pid.extend(["--pidfile", pidfile.to_str().unwrap()]);
    let config = format!(
        "{}{}\n[routes.default]\npath = \"/mcp\"\nupstreams = {}\ntools = {}\n",
        example_upstream("ex", &[]),
        fixture_upstream("fx", &with_pid, ""),
        qa(&["ex", "fx"]),
        qa(&["ex__echo", "ex__fail", "fx__t1", "fx__grow"]),
    );
    let trail = dir.path().join("audit.jsonl");
    let gw = GatewayProc::start_with_args(
        dir.path(),
        &config,
        &[
            "--admin",
            "127.0.0.1:0",
            "--lock",
            lock_file.to_str().unwrap(),
            "--audit",
            trail.to_str().unwrap(),
        ],
    )
    .await;
    let admin = gw.admin.clone().expect("its admin listener");

    let artifacts = std::env::var_os("SWITCHBOARD_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("artifacts"));
    std::fs::create_dir_all(&artifacts).unwrap();
    // Opened first, before any traffic.
    let profile = TempDir::new("live-page-chromium");
    let mut browser = Browser::start(&chromium, profile.path()).await;
    let url = format!("http://{admin}/ui");
    browser.open(&url, 1280, 1600, false).await;
    let first = until(&mut browser, "both upstreams ready on the page", |page| {
        let ready = |u: &str| page["upstreams"][u]["state"] == "ready";
        page["link"] == "live" && ready("ex") && ready("fx")
    })
    .await;
    assert_eq!(first["ready"], "2 / 2");
    assert_eq!(first["audit"], "0");
    assert_eq!(
        first["routes"]["/mcp"],
        "ex__echo, ex__fail, fx__grow, fx__t1"
    );
    assert_eq!(first["tools"]["fx/t1"]["drift"], "approved");
    assert_eq!(first["tools"]["fx/t1"]["served"], "yes");
    // Listed by ex, outside the allowlist: not served.
    assert_eq!(first["tools"]["ex/add"]["served"], "no");
    assert_eq!(first["recent"][0][0], "no call yet");

    // Traffic: answers of each outcome, and a refusal.
    let client = connect(&gw, Leg::Streamable).await;
    for _ in 0..3 {
        let r = bounded(client.call_tool("ex__echo", json!({"text": "s3cr3t-argument"})))
            .await
            .expect("echo");
        assert!(!r.is_error());
    }
    let r = bounded(client.call_tool("ex__fail", json!({})))
        .await
        .expect("fail");
    assert!(r.is_error());
    assert!(
        bounded(client.call_tool("ex__add", json!({"a": 1, "b": 2})))
            .await
            .is_err()
    );
    // The calls are listed as answered; the numbers are read once a second.
    let page = until(&mut browser, "the calls on the page", |page| {
        page["recent"].as_array().is_some_and(|r| r.len() == 5)
            && number(&page["refused"]) == 1
            && number(&page["errors"]) == 2
            && page["sessions"] == "1"
    })
    .await;
    let recent: Vec<(String, String)> = page["recent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r[4].as_str().unwrap().to_owned(),
                r[6].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        recent,
        [
            ("ex__add", "refused: allowlist"),
            ("ex__fail", "tool_error"),
            ("ex__echo", "ok"),
            ("ex__echo", "ok"),
            ("ex__echo", "ok"),
        ]
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
    assert_eq!(page["recent"][0][5], "", "no upstream answered the refusal");
    assert_eq!(page["recent"][1][5], "ex");
    assert_eq!(page["recent"][1][2], "–", "no principal without tokens");

    // A drift: fx rewrites t1 under the same name and says its list changed.
    let r = bounded(client.call_tool("fx__grow", json!({"text": "rewrite:t1"})))
        .await
        .expect("grow");
    assert!(!r.is_error());
    let page = until(&mut browser, "the drift on the page", |page| {
        page["tools"]["fx/t1"]["drift"] == "drifted"
            && number(&page["upstreams"]["fx"]["drift"]) >= 1
    })
    .await;
    assert_eq!(
        page["tools"]["fx/t1"]["served"], "no",
        "withheld in block mode"
    );
    browser.shot(&artifacts.join("live-page-drift.png")).await;

    // A crash: fx is killed, and restarted.
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: a plain system call on the upstream this test's gateway started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let page = until(
        &mut browser,
        "the crash and the restart on the page",
        |page| {
            let fx = &page["upstreams"]["fx"];
            fx["crashes"] == "1" && fx["restarts"] == "1" && fx["state"] == "ready"
        },
    )
    .await;
    assert_eq!(page["upstreams"]["ex"]["restarts"], "0");

    // Honest: the tile is the metrics' own count, once traffic is still.
    let start = std::time::Instant::now();
    loop {
        let page = browser.read().await;
        let metrics = answered(&admin).await;
        if number(&page["calls"]) == metrics && metrics > 0 {
            break;
        }
        assert!(
            start.elapsed() < LIMIT,
            "the page says {} requests answered, /metrics {metrics}",
            page["calls"]
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Live: it keeps updating while open, and draws the chart.
    let before = browser.read().await["updates"].as_u64().unwrap();
    let page = until(&mut browser, "two more updates", |page| {
        page["updates"].as_u64().unwrap() >= before + 2
    })
    .await;
    assert_eq!(page["lines"], 3, "calls, errors and refused lines");
    assert!(number(&page["audit"]) >= 6, "{}", page["audit"]);
    let state = reqwest::get(format!("http://{admin}/ui/state"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    // A web page that rebinds its own name to this address gets nothing.
    let rebound = reqwest::Client::new()
        .get(format!("http://{admin}/ui/state"))
        .header("host", "evil.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status(), 403);
    for shown in [page["text"].as_str().unwrap(), &state] {
        assert!(
            !shown.contains("s3cr3t-argument"),
            "an argument value shown"
        );
    }

    browser.shot(&artifacts.join("live-page-laptop.png")).await;
    // A phone: readable without scrolling sideways (wide tables scroll
    // inside their section).
    browser.open(&url, 390, 844, true).await;
    let phone = until(&mut browser, "the page on a phone", |page| {
        page["updates"].as_u64() >= Some(1)
    })
    .await;
    assert_eq!(phone["overflow"], false);
    browser.shot(&artifacts.join("live-page-phone.png")).await;
    eprintln!("screenshots: {}", artifacts.display());
    drop(client);
}
