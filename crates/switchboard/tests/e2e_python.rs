//! Interop with the official MCP Python SDK: `tests/interop/python_client.py` (a
//! stdio client from the `mcp` package) against the example server binary.
//!
//! The interpreter is `SWITCHBOARD_PYTHON` when set — `scripts/test` sets it to the
//! virtualenv that `scripts/install-peers` fills with the pinned `mcp` — and then the
//! test is required to run. Without it, `python3` is tried, and the test prints why
//! and passes when that has no `mcp` or the example was not built (see
//! `e2e_stdio.rs` for where it is found). Nothing is installed by the test.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(60);

fn example_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe
        .parent()?
        .parent()?
        .join("examples")
        .join(format!("echo_server{}", std::env::consts::EXE_SUFFIX));
    path.is_file().then_some(path)
}

/// The interpreter, and whether the environment requires this test to run.
fn python() -> (String, bool) {
    match std::env::var("SWITCHBOARD_PYTHON") {
        Ok(p) if !p.is_empty() => (p, true),
        _ => ("python3".to_owned(), false),
    }
}

fn python_has_mcp(python: &str) -> bool {
    Command::new(python)
        .args(["-c", "import mcp"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

#[test]
fn the_python_sdk_client_calls_echo_with_progress() {
    let (python, required) = python();
    if !python_has_mcp(&python) {
        assert!(!required, "SWITCHBOARD_PYTHON={python} cannot import mcp");
        eprintln!("SKIPPED: `{python} -c 'import mcp'` failed (scripts/install-peers installs it)");
        return;
    }
    let Some(server) = example_binary() else {
        assert!(!required, "the echo_server example is not built");
        eprintln!(
            "SKIPPED: the echo_server example is not built (cargo build --example echo_server)"
        );
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/python_client.py");
    let child = Command::new(&python)
        .arg(&script)
        .arg(&server)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 starts");
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
        panic!("the Python client did not finish within {BOUND:?}");
    }
    let out = waiter.join().unwrap().expect("python3 output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "python client failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    assert!(stdout.contains("python interop ok"), "{stdout}");
}
