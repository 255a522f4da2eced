//! Shared helpers of the CLI's integration tests: run the `switchboard` binary with
//! a bound on its running time, and the command line of the example server.

#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The most any one run of the binary may take before the test fails.
pub const BOUND: Duration = Duration::from_secs(60);

/// `command` with SIGINT, SIGTERM and SIGHUP at their default actions in the
/// child, as a shell gives a foreground job, for a test that signals it: the test
/// run itself may have inherited them ignored (SIGINT for `./scripts/test &` in a
/// non-interactive shell, SIGHUP under `nohup`), which the client commands keep,
/// so the test's signal would never arrive.
pub fn with_default_signals(command: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec only `signal(2)` runs, which is
    // async-signal-safe; nothing is allocated.
    unsafe {
        command.pre_exec(|| {
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                if libc::signal(signal, libc::SIG_DFL) == libc::SIG_ERR {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        })
    }
}

/// Sends `signal` (e.g. `libc::SIGINT`) to process `pid`, which this test
/// started; panics if it cannot be sent. A direct `kill(2)`: no `kill` program
/// to start, which can fail on a loaded machine and leave the signal unsent.
pub fn send_signal(pid: u32, signal: i32) {
    let pid = libc::pid_t::try_from(pid).expect("a pid");
    // SAFETY: a plain system call on a process of ours, by its id.
    let sent = unsafe { libc::kill(pid, signal) };
    assert_eq!(
        sent,
        0,
        "kill({pid}, {signal}): {}",
        std::io::Error::last_os_error()
    );
}

/// The binary under test.
pub fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_switchboard")
}

/// What one run produced.
#[derive(Debug)]
pub struct Run {
    /// The exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    /// Standard output, as text.
    pub stdout: String,
    /// Standard error, as text.
    pub stderr: String,
    /// How long it ran.
    pub elapsed: Duration,
}

impl Run {
    /// stderr's lines.
    pub fn stderr_lines(&self) -> Vec<&str> {
        self.stderr.lines().collect()
    }
}

/// Runs `switchboard ARGS` with `stdin` (closed at once when `None`), failing the
/// test if it runs longer than [`BOUND`] (the child is then killed by its pid).
pub fn run_with(args: &[&str], stdin: Option<&[u8]>) -> Run {
    run_with_env(args, stdin, &[])
}

/// [`run_with`], with these environment variables set for the run.
pub fn run_with_env(args: &[&str], stdin: Option<&[u8]>, env: &[(&str, &str)]) -> Run {
    let started = Instant::now();
    let mut child = Command::new(exe())
        .args(args)
        .envs(env.iter().copied())
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn switchboard");
    let mut pipe = child.stdin.take().expect("stdin piped");
    if let Some(bytes) = stdin {
        // A run that ends before reading its input (a flag refused at start)
        // closes the pipe first: what it did is still checked below.
        if let Err(e) = pipe.write_all(bytes) {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "write stdin: {e}");
        }
    }
    drop(pipe);
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let out = child.wait_with_output();
        let _ = tx.send(());
        out
    });
    if rx.recv_timeout(BOUND).is_err() {
        // Only the child we started, by its id.
        let _ = Command::new("kill").arg(pid.to_string()).status();
        panic!("switchboard {args:?} did not finish within {BOUND:?}");
    }
    let out = waiter.join().expect("waiter").expect("output");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: started.elapsed(),
    }
}

/// Runs `switchboard ARGS` with an empty stdin.
pub fn run(args: &[&str]) -> Run {
    run_with(args, None)
}

/// `ARGS -- <switchboard> example-server`: a client command against the example
/// server over stdio.
pub fn against_example(args: &[&str]) -> Run {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--", exe(), "example-server"]);
    run(&all)
}

/// `switchboard example-server --http 127.0.0.1:0` running in the background;
/// stopped (SIGTERM, by its pid) when dropped.
pub struct HttpExample {
    /// The URL it printed on stderr.
    pub url: String,
    /// Every line it wrote on stderr so far (its log at the default level).
    log: std::sync::Arc<std::sync::Mutex<String>>,
    child: std::process::Child,
}

impl HttpExample {
    /// Starts it and waits (bounded) for the `listening on URL` line on stderr.
    pub fn start() -> HttpExample {
        HttpExample::start_with(&[])
    }

    /// [`start`](Self::start) with more `example-server` flags (e.g.
    /// `--modern-only`).
    pub fn start_with(flags: &[&str]) -> HttpExample {
        use std::io::{BufRead, BufReader};
        let mut child = Command::new(exe())
            .args(["example-server", "--http", "127.0.0.1:0"])
            .args(flags)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the HTTP example server");
        let stderr = BufReader::new(child.stderr.take().expect("stderr piped"));
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let kept = log.clone();
        // Reads to the end, so the server never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in stderr.lines() {
                let Ok(line) = line else { return };
                if let Some(url) = line.trim().strip_prefix("listening on ") {
                    let _ = tx.send(url.to_owned());
                }
                let mut log = kept.lock().unwrap_or_else(|e| e.into_inner());
                log.push_str(&line);
                log.push('\n');
            }
        });
        let url = match rx.recv_timeout(BOUND) {
            Ok(url) => url,
            Err(_) => {
                let _ = child.kill();
                panic!("the HTTP example server printed no URL within {BOUND:?}");
            }
        };
        HttpExample { url, log, child }
    }

    /// Its stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// How many times `text` occurs in its stderr so far.
    pub fn logged(&self, text: &str) -> usize {
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .matches(text)
            .count()
    }

    /// Sends SIGTERM and waits (bounded) for the exit status.
    pub fn stop(mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + BOUND;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "no exit within {BOUND:?} of SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for HttpExample {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A host app on `switchboard connect`'s stdio: JSON-RPC lines written to its
/// stdin, its stdout read (as JSON, one message per line) on a thread.
pub struct Host {
    stdin: std::process::ChildStdin,
    out: std::sync::mpsc::Receiver<serde_json::Value>,
}

impl Host {
    /// Takes `child`'s stdin and stdout.
    pub fn new(child: &mut std::process::Child) -> Host {
        use std::io::{BufRead, BufReader};
        let stdout = BufReader::new(child.stdout.take().expect("stdout piped"));
        let (tx, out) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { return };
                let m: serde_json::Value =
                    serde_json::from_str(&line).expect("only JSON-RPC on stdout");
                let _ = tx.send(m);
            }
        });
        let stdin = child.stdin.take().expect("stdin piped");
        Host { stdin, out }
    }

    /// Writes `m` as one line.
    pub fn send(&mut self, m: serde_json::Value) {
        self.stdin.write_all(format!("{m}\n").as_bytes()).unwrap();
        self.stdin.flush().unwrap();
    }

    /// The answer to request `id` (messages before it skipped), within `bound`.
    pub fn answer(&self, id: i64, bound: Duration) -> serde_json::Value {
        let deadline = Instant::now() + bound;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let m = self
                .out
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no answer to {id} within {bound:?}"));
            if m["id"] == id && m.get("method").is_none() {
                return m;
            }
        }
    }
}
