//! `switchboard decode` end to end: the built-in sample, stdin, and the batching rule.

use std::io::Write;
use std::process::{Command, Stdio};

fn run(args: &[&str], stdin: Option<&[u8]>) -> (Vec<serde_json::Value>, String, bool) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn switchboard");
    let mut pipe = child.stdin.take().unwrap();
    if let Some(bytes) = stdin {
        pipe.write_all(bytes).unwrap();
    }
    drop(pipe);
    let out = child.wait_with_output().unwrap();
    let lines = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every output line is JSON"))
        .collect();
    (
        lines,
        String::from_utf8(out.stderr).unwrap(),
        out.status.success(),
    )
}

#[test]
fn built_in_sample_round_trips_and_answers_bad_lines() {
    let (out, err, ok) = run(&["decode"], None);
    assert!(ok, "{err}");
    assert_eq!(out.len(), 11, "8 messages and 3 error responses");
    // The id beyond 2^64 comes back as the same literal.
    assert!(err.contains("id=123456789012345678901234567890"), "{err}");
    let codes: Vec<_> = out
        .iter()
        .filter_map(|m| m["error"]["code"].as_i64())
        .collect();
    assert_eq!(codes, [-32022, -32600, -32700, -32600]);
    assert!(out[8]["id"].is_null() && out[9]["id"].is_null());
}

#[test]
fn stdin_and_batches_in_2025_03_26() {
    let input = b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"},{\"jsonrpc\":\"1.0\",\"method\":\"x\"}]\n\
                  {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}";
    let (out, err, ok) = run(&["decode", "-", "--revision", "2025-03-26"], Some(input));
    assert!(ok, "{err}");
    assert_eq!(out.len(), 2, "a batch is answered as one array line");
    let batch = out[0].as_array().expect("array");
    assert_eq!(batch.len(), 2, "the broken notification gets no answer");
    assert_eq!(batch[0]["id"], 1);
    assert_eq!(batch[1]["error"]["code"], -32600);
    assert_eq!(
        out[1]["id"], 2,
        "a last line without a newline is still read"
    );
    assert!(err.contains("2 bad inputs, 1 answered"), "{err}");
    let (out, _, _) = run(&["decode", "-", "--revision", "2025-06-18"], Some(input));
    assert_eq!(
        out[0]["error"]["code"], -32600,
        "no batches after 2025-03-26"
    );
}

#[test]
fn unreadable_file_is_exit_2() {
    let (_, err, ok) = run(&["decode", "/nonexistent/file.jsonl"], None);
    assert!(!ok);
    assert!(err.contains("opening /nonexistent/file.jsonl"), "{err}");
}
