//! The client side of stdio with real child processes (`cat` and `sh`, which
//! every Debian machine has).

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::sys::wait::{waitpid, WaitPidFlag};
use nix::unistd::Pid;
use switchboard_protocol::jsonrpc::{Batching, Message};
use switchboard_transport::stdio::{self, ChildConfig, ShutdownStep};
use switchboard_transport::{CloseReason, Inbound, TransportConfig};

fn sh(name: &str, script: &str) -> ChildConfig {
    ChildConfig::new(name, "sh").arg("-c").arg(script)
}

/// Small graces so that escalation tests stay short.
fn quick(mut config: ChildConfig) -> ChildConfig {
    config.shutdown.stdin_close_grace = Duration::from_millis(200);
    config.shutdown.sigterm_grace = Duration::from_millis(200);
    config
}

/// The pid is no child of ours any more (reaped, no zombie) and no process.
fn assert_reaped(pid: u32) {
    let pid = Pid::from_raw(pid as i32);
    assert_eq!(
        waitpid(pid, Some(WaitPidFlag::WNOHANG)),
        Err(Errno::ECHILD),
        "{pid} is still our child (running or zombie)"
    );
    assert_eq!(kill(pid, None), Err(Errno::ESRCH), "{pid} still exists");
}

#[tokio::test]
async fn cat_echoes_messages_and_batches() {
    let child = stdio::spawn(ChildConfig::new("echo", "cat"), &TransportConfig::default()).unwrap();
    let (tx, mut rx, process) = (child.sender, child.receiver, child.process);
    assert_eq!(process.name(), "echo");
    let messages = [
        request(1, "tools/list"),
        notification("n"),
        response("r"),
        error(4),
    ];
    for m in &messages {
        within("send", tx.send(m.clone())).await.unwrap();
    }
    for m in &messages {
        assert_eq!(&next_message(&mut rx).await, m);
    }
    tx.set_batching(Batching::Allowed);
    within("batch", tx.send_batch(messages.to_vec()))
        .await
        .unwrap();
    match next(&mut rx).await {
        Inbound::Batch(items) => {
            let items: Vec<Message> = items.into_iter().map(Result::unwrap).collect();
            assert_eq!(items, messages);
        }
        other => panic!("expected a batch, got {other:?}"),
    }

    let pid = process.pid();
    let report = within("shutdown", process.shutdown()).await.unwrap();
    assert_eq!(report.step, ShutdownStep::StdinClosed);
    assert!(report.status.success());
    match next(&mut rx).await {
        Inbound::Closed {
            reason: CloseReason::ShutDown(r),
        } => assert_eq!(r, report),
        other => panic!("expected Closed, got {other:?}"),
    }
    assert!(within("end", rx.recv()).await.is_none());
    assert_reaped(pid);
    // The child's stdin is closed: sends fail.
    assert!(within("send", tx.send(request(9, "x")))
        .await
        .unwrap_err()
        .is_closed());
}

#[tokio::test]
async fn a_banner_on_stdout_is_logged_and_skipped() {
    capture_logs();
    let name = "banner-child";
    let child = stdio::spawn(
        sh(name, "echo 'Server v1.2 starting...'; exec cat"),
        &TransportConfig::default(),
    )
    .unwrap();
    let (tx, mut rx) = (child.sender, child.receiver);
    within("send", tx.send(request(1, "ping"))).await.unwrap();
    // The banner came first, but the first event is the echoed request.
    assert_eq!(next_message(&mut rx).await, request(1, "ping"));
    let warned = log_lines_with("not a valid JSON-RPC message");
    assert!(
        warned
            .iter()
            .any(|l| l.contains("WARN") && l.contains(name) && l.contains("Server v1.2 starting")),
        "no warning naming the child: {warned:?}"
    );
    within("shutdown", child.process.shutdown()).await.unwrap();
}

#[tokio::test]
async fn stderr_is_logged_with_the_childs_name() {
    capture_logs();
    let name = "stderr-child";
    let child = stdio::spawn(
        sh(name, "echo oops-on-stderr >&2; exec cat"),
        &TransportConfig::default(),
    )
    .unwrap();
    let pid = child.process.pid();
    // A round trip, so the child is surely past its echo.
    within("send", child.sender.send(request(1, "ping")))
        .await
        .unwrap();
    let mut rx = child.receiver;
    next_message(&mut rx).await;
    within("shutdown", child.process.shutdown()).await.unwrap();
    let lines = log_lines_with("stderr: oops-on-stderr");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains(name), "{lines:?}");
    assert!(
        lines[0].contains(&format!("pid={pid}")),
        "no pid in the span: {lines:?}"
    );
}

#[tokio::test]
async fn a_child_that_exits_on_stdin_close_gets_no_sigterm() {
    capture_logs();
    let name = "polite-child";
    let child = stdio::spawn(
        sh(
            name,
            "trap 'echo got-term >&2' TERM; cat; echo stdin-ended >&2",
        ),
        &TransportConfig::default(),
    )
    .unwrap();
    let pid = child.process.pid();
    let report = within("shutdown", child.process.shutdown()).await.unwrap();
    assert_eq!(report.step, ShutdownStep::StdinClosed);
    assert_eq!(report.status.code(), Some(0));
    assert_reaped(pid);
    let mine: Vec<String> = log_lines_with(name);
    assert!(
        mine.iter().any(|l| l.contains("stderr: stdin-ended")),
        "{mine:?}"
    );
    assert!(
        !mine.iter().any(|l| l.contains("stderr: got-term")),
        "{mine:?}"
    );
}

#[tokio::test]
async fn a_child_that_ignores_stdin_close_gets_sigterm() {
    capture_logs();
    let name = "term-child";
    let child = stdio::spawn(
        quick(sh(
            name,
            "trap 'echo got-term >&2; exit 143' TERM; while :; do sleep 0.05; done",
        )),
        &TransportConfig::default(),
    )
    .unwrap();
    let pid = child.process.pid();
    let mut rx = child.receiver;
    let report = within("shutdown", child.process.shutdown()).await.unwrap();
    assert_eq!(report.step, ShutdownStep::Sigterm);
    assert_eq!(report.status.code(), Some(143));
    assert_reaped(pid);
    assert!(log_lines_with(name)
        .iter()
        .any(|l| l.contains("stderr: got-term")));
    assert!(matches!(
        next(&mut rx).await,
        Inbound::Closed {
            reason: CloseReason::ShutDown(_)
        }
    ));
}

#[tokio::test]
async fn a_child_that_ignores_sigterm_is_killed_and_reaped() {
    use std::os::unix::process::ExitStatusExt;
    let child = stdio::spawn(
        quick(sh("stubborn", "trap '' TERM; while :; do sleep 0.1; done")),
        &TransportConfig::default(),
    )
    .unwrap();
    let pid = child.process.pid();
    let report = within("shutdown", child.process.shutdown()).await.unwrap();
    assert_eq!(report.step, ShutdownStep::Sigkill);
    assert_eq!(report.status.signal(), Some(9));
    assert_reaped(pid);
}

/// What the child leaves behind in its process group gets the spec's order too:
/// here the child (a wrapper) ends at stdin's end, but its own child ignores
/// SIGTERM; after the SIGTERM grace it gets SIGKILL (it used to be left running).
#[tokio::test]
async fn a_grandchild_that_ignores_sigterm_is_killed_after_the_grace() {
    let pids = std::env::temp_dir().join(format!("sb-grandchild-{}", std::process::id()));
    let _ = std::fs::remove_file(&pids);
    let script = format!(
        "trap '' TERM; sleep 1000 & echo $! > '{}'; cat > /dev/null",
        pids.display()
    );
    let child = stdio::spawn(quick(sh("wrapper", &script)), &TransportConfig::default()).unwrap();
    let grandchild = within("the grandchild's pid", async {
        loop {
            if let Some(pid) = std::fs::read_to_string(&pids)
                .ok()
                .and_then(|t| t.trim().parse::<i32>().ok())
            {
                break pid;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let report = within("shutdown", child.process.shutdown()).await.unwrap();
    assert_eq!(report.step, ShutdownStep::StdinClosed);
    // Killed: gone, or a zombie until its new parent reaps it (a SIGKILL just
    // sent takes a moment to land; with none it runs for 1,000 s).
    let stat = || std::fs::read_to_string(format!("/proc/{grandchild}/stat")).unwrap_or_default();
    let runs = |state: &str| {
        state
            .rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while runs(&stat()) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let state = stat();
    let running = runs(&state);
    if running {
        let _ = kill(Pid::from_raw(grandchild), nix::sys::signal::Signal::SIGKILL);
    }
    let _ = std::fs::remove_file(&pids);
    assert!(!running, "the grandchild outlived the shutdown: {state}");
}

/// A kill switch cuts the spec's shutdown order short: a child that ignores
/// both stdin's end and SIGTERM, with graces of a minute each, is killed and
/// reaped at once when asked, the shutdown reporting SIGKILL.
#[tokio::test]
async fn the_kill_switch_cuts_a_shutdown_short() {
    use std::os::unix::process::ExitStatusExt;
    let mut config = sh("stubborn", "trap '' TERM; while :; do sleep 0.1; done");
    config.shutdown.stdin_close_grace = Duration::from_secs(60);
    config.shutdown.sigterm_grace = Duration::from_secs(60);
    let child = stdio::spawn(config, &TransportConfig::default()).unwrap();
    let pid = child.process.pid();
    let switch = child.process.kill_switch();
    let shutdown = tokio::spawn(child.process.shutdown());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !shutdown.is_finished(),
        "the child should still be in its grace"
    );
    let asked = std::time::Instant::now();
    switch.kill();
    let report = within("shutdown", shutdown).await.unwrap().unwrap();
    assert!(
        asked.elapsed() < Duration::from_secs(3),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(report.step, ShutdownStep::Sigkill);
    assert_eq!(report.status.signal(), Some(9));
    assert_reaped(pid);
    // Once reaped, the switch does nothing.
    switch.kill();
}

/// Before any shutdown, the kill switch kills the child, whose end is reported
/// like any exit (killed by signal 9); the later shutdown finds it exited.
#[tokio::test]
async fn the_kill_switch_kills_a_running_child() {
    use std::os::unix::process::ExitStatusExt;
    let child = stdio::spawn(sh("sleeper", "exec sleep 60"), &TransportConfig::default()).unwrap();
    let mut rx = child.receiver;
    child.process.kill_switch().kill();
    match next(&mut rx).await {
        Inbound::Closed {
            reason: CloseReason::ChildExited(status, _),
        } => assert_eq!(status.signal(), Some(9)),
        other => panic!("expected Closed, got {other:?}"),
    }
    let pid = child.process.pid();
    let report = within("shutdown", child.process.shutdown()).await.unwrap();
    assert_eq!(report.step, ShutdownStep::AlreadyExited);
    assert_reaped(pid);
}

#[tokio::test]
async fn a_child_that_exits_reports_its_status_promptly() {
    let child = stdio::spawn(sh("quitter", "exit 3"), &TransportConfig::default()).unwrap();
    let mut rx = child.receiver;
    match next(&mut rx).await {
        Inbound::Closed {
            reason: CloseReason::ChildExited(status, _),
        } => {
            assert_eq!(status.code(), Some(3))
        }
        other => panic!("expected Closed, got {other:?}"),
    }
    assert!(within("end", rx.recv()).await.is_none());
    let pid = child.process.pid();
    let report = within("shutdown", child.process.shutdown()).await.unwrap();
    assert_eq!(report.step, ShutdownStep::AlreadyExited);
    assert_eq!(report.status.code(), Some(3));
    assert_reaped(pid);
}

/// A child that exits says why on stderr: the close reason carries its last
/// non-empty stderr line (what a user needs to see, e.g. a bad argument), and
/// none when it wrote nothing there.
#[tokio::test]
async fn a_child_that_exits_reports_its_last_stderr_line() {
    let child = stdio::spawn(
        sh(
            "complainer",
            "echo 'starting' >&2; echo 'error: no such repository: /nope' >&2; echo >&2; exit 1",
        ),
        &TransportConfig::default(),
    )
    .unwrap();
    let mut rx = child.receiver;
    match next(&mut rx).await {
        Inbound::Closed { reason } => {
            let CloseReason::ChildExited(status, tail) = &reason else {
                panic!("expected ChildExited, got {reason:?}")
            };
            assert_eq!(status.code(), Some(1));
            assert_eq!(tail.as_deref(), Some("error: no such repository: /nope"));
            assert_eq!(
                reason.to_string(),
                "child exited (exit status: 1); its last stderr line: error: no such repository: /nope"
            );
        }
        other => panic!("expected Closed, got {other:?}"),
    }
    let _ = within("shutdown", child.process.shutdown()).await;
    let child = stdio::spawn(sh("silent", "exit 4"), &TransportConfig::default()).unwrap();
    let mut rx = child.receiver;
    match next(&mut rx).await {
        Inbound::Closed {
            reason: CloseReason::ChildExited(status, tail),
        } => {
            assert_eq!((status.code(), tail), (Some(4), None));
        }
        other => panic!("expected Closed, got {other:?}"),
    }
    let _ = within("shutdown", child.process.shutdown()).await;
}

/// Lines of the child's stdout that are not JSON-RPC are skipped, counted and the
/// latest kept (cut), for a caller to explain a timeout.
#[tokio::test]
async fn skipped_lines_are_counted() {
    let long = "x".repeat(500);
    let child = stdio::spawn(
        sh("chatty", &format!("echo hello; echo '{long}'; exit 0")),
        &TransportConfig::default(),
    )
    .unwrap();
    let mut rx = child.receiver;
    assert!(matches!(next(&mut rx).await, Inbound::Closed { .. }));
    let (count, last) = child.process.skipped_lines();
    assert_eq!(count, 2);
    assert_eq!(last.as_deref(), Some("x".repeat(200).as_str()));
    let _ = within("shutdown", child.process.shutdown()).await;
}

/// Everything logged at INFO and above in this thread while the guard lives: a
/// `#[tokio::test]` runs on a current-thread runtime, so the child's tasks log
/// here too, and nothing of the other tests does.
fn capture_this_threads_logs() -> (tracing::subscriber::DefaultGuard, Arc<Mutex<Vec<u8>>>) {
    #[derive(Clone)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let logs = Arc::new(Mutex::new(Vec::new()));
    let buffer = Buffer(logs.clone());
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_writer(move || buffer.clone())
        .finish();
    (tracing::subscriber::set_default(subscriber), logs)
}

/// Of the captured log lines that contain `needle`: how many, and the sum of
/// their `suppressed=` fields.
fn count_and_suppressed(logs: &Mutex<Vec<u8>>, needle: &str) -> (u64, u64) {
    let logs = logs.lock().unwrap();
    let text = String::from_utf8_lossy(&logs);
    let mut count = 0;
    let mut suppressed = 0;
    for line in text.lines().filter(|l| l.contains(needle)) {
        count += 1;
        if let Some((_, rest)) = line.split_once("suppressed=") {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            suppressed += digits.parse::<u64>().unwrap();
        }
    }
    (count, suppressed)
}

/// A child in a debug loop (100,000 stderr lines and 10,000 stdout lines that
/// are not JSON-RPC) does not flood the log: each stream logs its burst and then
/// about its rate; the rest is counted in summaries, exactly. The stderr tail
/// and the skipped count still see every line, and the session goes on: the
/// request sent before the flood is answered.
#[tokio::test]
async fn a_flooding_child_is_logged_within_its_limit() {
    let (_guard, logs) = capture_this_threads_logs();
    let started = std::time::Instant::now();
    let script = "seq 1 100000 | sed 's/^/debug line /' >&2 &
        seq 1 10000 | sed 's/^/not json /'
        wait
        read request
        echo '{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"ok\":true}}'
        exit 3";
    let config = sh("flooder", script);
    assert_eq!(config.log_limit, stdio::DEFAULT_LOG_LIMIT);
    let stdio::LogLimit {
        burst, per_second, ..
    } = config.log_limit;
    let child = stdio::spawn(config, &TransportConfig::default()).unwrap();
    let mut rx = child.receiver;
    within("send", child.sender.send(request(1, "tools/list")))
        .await
        .unwrap();
    match next_message(&mut rx).await {
        Message::Response(r) => {
            assert_eq!(r.id, 1.into());
            assert_eq!(r.result.get(), r#"{"ok":true}"#);
        }
        other => panic!("expected the answer to request 1, got {other:?}"),
    }
    // The last stderr line is the real last one, logged or not.
    match next(&mut rx).await {
        Inbound::Closed {
            reason: CloseReason::ChildExited(status, tail),
        } => {
            assert_eq!(status.code(), Some(3));
            assert_eq!(tail.as_deref(), Some("debug line 100000"));
        }
        other => panic!("expected the child's exit, got {other:?}"),
    }
    assert_eq!(
        child.process.skipped_lines(),
        (10_000, Some("not json 10000".to_owned()))
    );
    within("shutdown", child.process.shutdown()).await.unwrap();
    let elapsed = started.elapsed().as_secs_f64();

    // Per stream: the lines logged plus those summed up are every line, and the
    // lines logged are the burst and the refill over the run, no more.
    let bound = u64::from(burst) + (f64::from(per_second) * elapsed).ceil() as u64 + 1;
    for (stream, line, summary, total, target) in [
        (
            "stderr",
            "stderr: debug line",
            "more lines not logged",
            100_000,
            "switchboard_transport::stdio::child:",
        ),
        (
            "stdout",
            "not a valid JSON-RPC message; skipped",
            "more lines that are not valid JSON-RPC messages",
            10_000,
            "switchboard_transport::line:",
        ),
    ] {
        // The summaries go where the lines go: the same target.
        let text = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
        for l in text
            .lines()
            .filter(|l| l.contains(line) || l.contains(summary))
        {
            assert!(l.contains(target), "{stream}: not under {target}: {l}");
        }
        let (logged, _) = count_and_suppressed(&logs, line);
        let (summaries, suppressed) = count_and_suppressed(&logs, summary);
        assert!(
            (u64::from(burst)..=bound).contains(&logged),
            "{stream}: {logged} lines logged in {elapsed:.1} s (at most {bound} expected)"
        );
        assert!(summaries >= 1, "{stream}: no summary");
        assert!(
            summaries <= logged - u64::from(burst) + 2 + (elapsed / 5.0) as u64,
            "{stream}: {summaries} summaries"
        );
        assert_eq!(
            logged + suppressed,
            total,
            "{stream}: {logged} logged, {suppressed} summed up"
        );
    }
}

#[tokio::test]
async fn a_child_that_dies_mid_session_closes_the_receiver() {
    let child = stdio::spawn(sh("reader", "read x; exit 7"), &TransportConfig::default()).unwrap();
    let mut rx = child.receiver;
    within("send", child.sender.send(request(1, "tools/call")))
        .await
        .unwrap();
    match next(&mut rx).await {
        Inbound::Closed { reason } => {
            assert!(
                matches!(reason, CloseReason::ChildExited(s, _) if s.code() == Some(7)),
                "{reason}"
            );
            assert!(reason.to_string().contains('7'), "{reason}");
        }
        other => panic!("expected Closed, got {other:?}"),
    }
    // Its stdin is gone: sends fail (possibly after one that raced the exit).
    let pid = child.process.pid();
    within("shutdown", child.process.shutdown()).await.unwrap();
    assert!(within("send", child.sender.send(request(2, "x")))
        .await
        .unwrap_err()
        .is_closed());
    assert_reaped(pid);
}

#[tokio::test]
async fn output_written_just_before_exit_arrives_before_closed() {
    let line = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"bye"}}"#;
    let child = stdio::spawn(
        sh("last-words", &format!("echo '{line}'; exit 0")),
        &TransportConfig::default(),
    )
    .unwrap();
    let mut rx = child.receiver;
    assert_eq!(
        next_message(&mut rx).await.method(),
        Some("notifications/message")
    );
    assert!(matches!(
        next(&mut rx).await,
        Inbound::Closed { reason: CloseReason::ChildExited(s, _) } if s.success()
    ));
    within("shutdown", child.process.shutdown()).await.unwrap();
}

#[tokio::test]
async fn a_child_that_closes_stdout_but_lives_is_reported() {
    let child = stdio::spawn(sh("mute", "exec 1>&-; read x"), &TransportConfig::default()).unwrap();
    let mut rx = child.receiver;
    assert!(matches!(
        next(&mut rx).await,
        Inbound::Closed {
            reason: CloseReason::ChildStdoutClosed
        }
    ));
    let pid = child.process.pid();
    let report = within("shutdown", child.process.shutdown()).await.unwrap();
    assert_eq!(report.step, ShutdownStep::StdinClosed);
    assert!(within("end", rx.recv()).await.is_none(), "only one Closed");
    assert_reaped(pid);
}

#[tokio::test]
async fn dropping_the_process_handle_shuts_the_child_down() {
    let child = stdio::spawn(
        quick(ChildConfig::new("dropped", "cat")),
        &TransportConfig::default(),
    )
    .unwrap();
    let pid = child.process.pid();
    let mut rx = child.receiver;
    drop(child.process);
    match next(&mut rx).await {
        Inbound::Closed {
            reason: CloseReason::ShutDown(report),
        } => {
            assert_eq!(report.step, ShutdownStep::StdinClosed)
        }
        other => panic!("expected Closed, got {other:?}"),
    }
    // Closed is sent after the reap.
    assert_reaped(pid);
}

#[tokio::test]
async fn dropping_every_sender_closes_the_childs_stdin() {
    let child = stdio::spawn(ChildConfig::new("eof", "cat"), &TransportConfig::default()).unwrap();
    let mut rx = child.receiver;
    drop(child.sender);
    assert!(matches!(
        next(&mut rx).await,
        Inbound::Closed { reason: CloseReason::ChildExited(s, _) } if s.success()
    ));
    let report = within("shutdown", child.process.shutdown()).await.unwrap();
    assert_eq!(report.step, ShutdownStep::AlreadyExited);
}

#[tokio::test]
async fn environment_and_working_directory_are_applied() {
    let mut config = sh(
        "env",
        r#"printf '{"jsonrpc":"2.0","method":"m","params":{"v":"%s","d":"%s","h":"%s"}}\n' "$SB_TEST_VAR" "$(pwd)" "${HOME:-unset}"; exec cat"#,
    )
    .env("SB_TEST_VAR", "hello");
    config.inherit = stdio::Inherit::Nothing;
    config = config.env("PATH", std::env::var_os("PATH").unwrap());
    config.current_dir = Some("/".into());
    let child = stdio::spawn(config, &TransportConfig::default()).unwrap();
    let mut rx = child.receiver;
    let Message::Notification(n) = next_message(&mut rx).await else {
        panic!()
    };
    let params: serde_json::Value = n.params_as().unwrap();
    assert_eq!(
        params,
        serde_json::json!({"v": "hello", "d": "/", "h": "unset"})
    );
    within("shutdown", child.process.shutdown()).await.unwrap();
}

#[tokio::test]
async fn a_missing_program_is_an_error_naming_the_child() {
    let err = stdio::spawn(
        ChildConfig::new("ghost", "/nonexistent/switchboard-test-program"),
        &TransportConfig::default(),
    )
    .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    assert!(err.to_string().contains("ghost"), "{err}");
}

/// A child started through a wrapper (`sh -c`) is stopped with what it started:
/// the signals go to its process group.
#[tokio::test]
async fn shutdown_reaches_the_childs_own_children() {
    let pidfile = std::env::temp_dir().join(format!("sb-grandchild-{}", std::process::id()));
    let _ = std::fs::remove_file(&pidfile);
    // The wrapper starts a grandchild that ignores stdin's end, and waits for it.
    let script = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
    let mut config = ChildConfig::new("wrapper", "sh").arg("-c").arg(script);
    config.shutdown.stdin_close_grace = std::time::Duration::from_millis(100);
    config.shutdown.sigterm_grace = std::time::Duration::from_secs(2);
    let child = switchboard_transport::stdio::spawn(config, &TransportConfig::default()).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let grandchild: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the grandchild started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let report = tokio::time::timeout(std::time::Duration::from_secs(15), child.process.shutdown())
        .await
        .unwrap()
        .unwrap();
    assert_ne!(
        report.step,
        switchboard_transport::stdio::ShutdownStep::AlreadyExited
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let alive = std::process::Command::new("kill")
            .args(["-0", &grandchild.to_string()])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !alive {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the grandchild {grandchild} was stopped too"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let _ = std::fs::remove_file(&pidfile);
}

/// Whether `pid` is gone: no such process, or a zombie (killed; its reaper,
/// init here, may be slow).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

/// A handle dropped just before the runtime shuts down (a program leaving
/// `main`): the background shutdown is cut off, and the whole process group is
/// killed, not only the child. A wrapper (`sh`) whose real server ignores stdin
/// EOF and SIGTERM used to leave that server running.
#[test]
fn a_runtime_ending_mid_shutdown_kills_the_whole_group() {
    let dir = std::env::temp_dir().join(format!("sb-group-kill-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pid_file = dir.join("server.pid");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (wrapper, server) = runtime.block_on(async {
        let script = format!(
            "trap '' TERM; sleep 300 & echo $! > '{}'; wait",
            pid_file.display()
        );
        let child = stdio::spawn(sh("wrapper", &script), &TransportConfig::default()).unwrap();
        let server = loop {
            if let Some(p) = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|s| s.trim().parse::<u32>().ok())
            {
                break p;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let wrapper = child.process.pid();
        // Dropped: its shutdown starts in the background (5 s of stdin grace).
        drop(child);
        tokio::time::sleep(Duration::from_millis(100)).await;
        (wrapper, server)
    });
    assert!(!gone(server), "the server should still be in its grace");
    drop(runtime);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !(gone(wrapper) && gone(server)) {
        assert!(
            std::time::Instant::now() < deadline,
            "left running: wrapper {wrapper} gone {}, server {server} gone {}",
            gone(wrapper),
            gone(server)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
