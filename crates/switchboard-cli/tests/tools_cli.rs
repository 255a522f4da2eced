//! `switchboard tools call` (and `prompts get`) end to end: `--args @FILE` and
//! `--args -`, the local checks of a listed tool's arguments against its
//! `inputSchema`, and the hint a 404 from a URL without `/mcp` gives.

mod common;

use std::path::{Path, PathBuf};

use common::{exe, run, run_with};
use serde_json::{json, Value};

/// A directory of this test's own, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("sb-tools-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn file(&self, name: &str, text: &str) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `ARGS -- switchboard example-server`, with `stdin`.
fn example_with(args: &[&str], stdin: Option<&[u8]>) -> common::Run {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--", exe(), "example-server"]);
    run_with(&all, stdin)
}

#[test]
fn args_are_read_from_a_file_or_from_stdin() {
    let dir = Dir::new("args");
    let file = dir.file("add.json", "{\n  \"a\": 40,\n  \"b\": 2\n}\n");
    let at = format!("@{file}");
    let r = example_with(&["tools", "call", "add", "--args", &at, "--json"], None);
    assert_eq!(r.code, Some(0), "{r:?}");
    let v: Value = serde_json::from_str(r.stdout.trim_end()).unwrap();
    assert_eq!(v["structuredContent"]["sum"], 42);

    // From stdin, and a --arg still overrides a key of it.
    let r = example_with(
        &[
            "tools", "call", "add", "--args", "-", "--arg", "b=5", "--json",
        ],
        Some(br#"{"a": 1, "b": 2}"#),
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    let v: Value = serde_json::from_str(r.stdout.trim_end()).unwrap();
    assert_eq!(v["structuredContent"]["sum"], 6);

    // Large arguments: a 1 MiB string through a file.
    let big = "x".repeat(1 << 20);
    let file = dir.file("big.json", &json!({ "text": big }).to_string());
    let at = format!("@{file}");
    let r = example_with(&["tools", "call", "echo", "--args", &at], None);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.trim_end().len(), big.len());

    // prompts get takes them too.
    let file = dir.file("greet.json", r#"{"name": "File"}"#);
    let at = format!("@{file}");
    let r = example_with(&["prompts", "get", "greet", "--args", &at], None);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stdout.contains("greeting for File."), "{}", r.stdout);
}

#[test]
fn bad_args_files_are_named_with_what_is_wrong() {
    let dir = Dir::new("bad-args");
    let fails = |args: &[&str], stdin: Option<&[u8]>, expected: &str| {
        let r = example_with(args, stdin);
        assert_eq!(r.code, Some(2), "{args:?}: {r:?}");
        assert_eq!(r.stderr, format!("switchboard: {expected}\n"), "{args:?}");
        assert!(r.stdout.is_empty(), "{args:?}: {}", r.stdout);
    };
    let missing = dir.0.join("nope.json").display().to_string();
    fails(
        &["tools", "call", "add", "--args", &format!("@{missing}")],
        None,
        &format!("--args @{missing}: cannot read it: No such file or directory (os error 2)"),
    );
    let broken = dir.file("broken.json", "{\n  \"a\": 1,\n  \"b\": 2,\n}\n");
    fails(
        &["tools", "call", "add", "--args", &format!("@{broken}")],
        None,
        &format!("--args @{broken}: not JSON at line 4, column 1: trailing comma"),
    );
    let list = dir.file("list.json", "[1, 2]");
    fails(
        &["tools", "call", "add", "--args", &format!("@{list}")],
        None,
        &format!("--args @{list}: expected a JSON object, not an array"),
    );
    fails(
        &["tools", "call", "add", "--args", "-"],
        Some(b"{\"a\": 1"),
        "--args - (stdin): not JSON at line 1, column 7: EOF while parsing an object",
    );
    fails(
        &["tools", "call", "add", "--args", "-"],
        Some(b""),
        "--args - (stdin): empty; expected a JSON object",
    );
    fails(
        &["tools", "call", "add", "--args", "{\"a\": }"],
        None,
        "--args: not JSON at line 1, column 7: expected value",
    );
}

#[test]
fn arguments_are_checked_against_the_listed_schema_before_sending() {
    // A required argument missing: refused here, naming it.
    let r = example_with(&["tools", "call", "add", "--arg", "a=1"], None);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert_eq!(
        r.stderr,
        "switchboard: tool \"add\" needs the argument \"b\" (its required arguments: a, b): not sent\n"
    );
    assert!(r.stdout.is_empty());

    // One the schema does not declare (and does not forbid): a warning, and
    // the call is sent.
    let r = example_with(
        &[
            "tools",
            "call",
            "add",
            "--args",
            r#"{"a": 1, "b": 2, "c": 3}"#,
        ],
        None,
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(
        r.stderr,
        "switchboard: warning: tool \"add\" has no argument \"c\" (its arguments: a, b)\n"
    );
    assert_eq!(r.stdout, "{\n  \"sum\": 3\n}\n");
}

fn scripted_server() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/scripted_server.py")
        .display()
        .to_string()
}

#[test]
fn a_forbidden_argument_is_not_sent_and_an_unlisted_tool_is_not_checked() {
    let dir = Dir::new("closed");
    let defs = dir.file(
        "defs.json",
        &json!({"tools": [{"name": "strict", "inputSchema": {"type": "object",
            "properties": {"path": {"type": "string"}}, "required": ["path"],
            "additionalProperties": false}}]})
        .to_string(),
    );
    let calls = dir.0.join("calls");
    let server = scripted_server();
    let call = |args: &[&str]| {
        let mut all = vec!["tools", "call"];
        all.extend(args);
        all.extend(["--timeout", "30", "--", "python3", &server, &defs]);
        // The scripted server records each call that reaches it.
        common::run_with_env(&all, None, &[("SCRIPTED_CALLS", calls.to_str().unwrap())])
    };
    let reached = || std::fs::read_to_string(&calls).unwrap_or_default();

    let r = call(&["strict", "--arg", "path=/tmp/x", "--arg", "recursive=true"]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert_eq!(
        r.stderr,
        "switchboard: tool \"strict\" has no argument \"recursive\" (its arguments: path; \
         its inputSchema allows no others): not sent\n"
    );
    assert_eq!(reached(), "", "nothing was sent");

    let r = call(&["strict", "--arg", "path=/tmp/x"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(r.stdout, "called strict\n");
    assert!(r.stderr.is_empty(), "{}", r.stderr);
    assert_eq!(reached(), "strict\n");

    // Not listed: sent as it is, no checks (the server answers for itself).
    let r = call(&["ghost", "--arg", "anything=1"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(r.stdout, "called ghost\n");
    assert!(r.stderr.is_empty(), "{}", r.stderr);
    assert_eq!(reached(), "strict\nghost\n");
}

#[test]
fn a_404_from_a_url_without_mcp_hints_at_it() {
    let server = common::HttpExample::start();
    let base = server
        .url
        .strip_suffix("/mcp")
        .expect("the example server serves /mcp")
        .to_owned();
    for url in [base.clone(), format!("{base}/")] {
        let r = run(&["tools", "list", &url, "--timeout", "10"]);
        assert_eq!(r.code, Some(2), "{r:?}");
        assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
        assert!(r.stderr.contains("404 Not Found"), "{}", r.stderr);
        assert!(
            r.stderr
                .trim_end()
                .ends_with(&format!("(did you mean {base}/mcp?)")),
            "{}",
            r.stderr
        );
    }
    // Another path gets the guess with /mcp under it.
    let r = run(&["ping", &format!("{base}/review"), "--timeout", "10"]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(
        r.stderr
            .trim_end()
            .ends_with(&format!("(did you mean {base}/review/mcp?)")),
        "{}",
        r.stderr
    );
    // The right URL works; a path with an mcp segment gets no guess.
    assert_eq!(run(&["ping", &server.url]).code, Some(0));
    let r = run(&["ping", &format!("{base}/mcp/extra"), "--timeout", "10"]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("404 Not Found"), "{}", r.stderr);
    assert!(!r.stderr.contains("did you mean"), "{}", r.stderr);
    assert!(server.stop().success());
}
