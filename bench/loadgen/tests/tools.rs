//! The benchmark's binaries end to end, briefly (well under a second of load
//! each): `loadgen` against `bare-hyper` over Streamable HTTP and against
//! `echo-upstream` over stdio gets only correct replies and a process sample; a
//! URL with nothing listening yields errors, not a result.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const LOADGEN: &str = env!("CARGO_BIN_EXE_loadgen");
const BARE_HYPER: &str = env!("CARGO_BIN_EXE_bare-hyper");
const ECHO_UPSTREAM: &str = env!("CARGO_BIN_EXE_echo-upstream");

/// Runs loadgen with `args` (bounded: 30 s) and parses its report.
fn loadgen(args: &[&str]) -> Value {
    let mut child = Command::new(LOADGEN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("loadgen starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if child.try_wait().expect("loadgen status").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("loadgen did not finish in 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("loadgen output");
    assert!(
        output.status.success(),
        "loadgen failed: {:?}",
        output.status
    );
    serde_json::from_slice(&output.stdout).expect("one JSON report")
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn streamable_sessions_against_bare_hyper_get_only_their_own_replies() {
    let mut server = Server(
        Command::new(BARE_HYPER)
            .stdout(Stdio::piped())
            .spawn()
            .expect("bare-hyper starts"),
    );
    let pid = server.0.id().to_string();
    let mut line = String::new();
    BufReader::new(server.0.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the URL line");
    let url = line.trim();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    let report = loadgen(&[
        "--url",
        url,
        "--sessions",
        "4",
        "--duration",
        "0.5",
        "--warmup",
        "0.1",
        "--pid",
        &pid,
    ]);
    assert_eq!(report["errors"], 0, "{report}");
    assert_eq!(report["sessions_ready"], 4, "{report}");
    assert!(report["requests"].as_u64().unwrap() > 0, "{report}");
    assert!(
        report["latency"]["p50_ms"].as_f64().unwrap() > 0.0,
        "{report}"
    );
    assert!(
        report["server"]["peak_rss_mib"].as_f64().unwrap() > 0.0,
        "{report}"
    );
}

#[test]
fn stdio_mode_drives_the_upstream_over_its_pipes() {
    let report = loadgen(&[
        "--mode",
        "stdio",
        "--sessions",
        "3",
        "--duration",
        "0.5",
        "--warmup",
        "0.1",
        "--",
        ECHO_UPSTREAM,
    ]);
    assert_eq!(report["errors"], 0, "{report}");
    assert!(report["requests"].as_u64().unwrap() > 0, "{report}");
    assert!(report["server"]["pid"].as_u64().is_some(), "{report}");
}

#[test]
fn a_url_with_nothing_listening_counts_errors() {
    // A port that was free a moment ago: bind, note, release.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let report = loadgen(&[
        "--url",
        &url,
        "--sessions",
        "2",
        "--duration",
        "0.2",
        "--warmup",
        "0",
    ]);
    assert_eq!(report["sessions_ready"], 0, "{report}");
    assert_eq!(report["errors"], 2, "{report}");
    assert_eq!(report["requests"], 0, "{report}");
}
