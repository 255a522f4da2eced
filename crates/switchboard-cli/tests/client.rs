//! The CLI client (`switchboard tools|resources|prompts|ping`) end to end against
//! `switchboard example-server` over stdio: tables and `--json`, every kind of tool
//! result, exit statuses 0 / 1 / 2 with one stderr line, timeouts, progress and log
//! lines.

mod common;

use common::{against_example, exe, run};
use serde_json::Value;

fn json_line(stdout: &str) -> Value {
    assert_eq!(stdout.lines().count(), 1, "one JSON line: {stdout}");
    serde_json::from_str(stdout.trim_end()).expect("stdout is JSON")
}

const TOOLS: [&str; 11] = [
    "echo",
    "add",
    "image",
    "audio",
    "embedded_resource",
    "progress",
    "log",
    "fail",
    "sample",
    "elicit",
    "bump_counter",
];

#[test]
fn tools_list_prints_a_table() {
    let r = against_example(&["tools", "list"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(lines[0].starts_with("NAME"), "{}", r.stdout);
    assert!(lines[0].contains("ARGUMENTS") && lines[0].contains("DESCRIPTION"));
    assert_eq!(lines.len(), TOOLS.len() + 1, "{}", r.stdout);
    for name in TOOLS {
        assert!(
            lines
                .iter()
                .any(|l| l.split_whitespace().next() == Some(name)),
            "{name} missing: {}",
            r.stdout
        );
    }
    let add = lines.iter().find(|l| l.starts_with("add ")).unwrap();
    assert!(add.contains("a*: integer, b*: integer"), "{add}");
    // Columns line up: DESCRIPTION starts at the same offset on every row.
    let col = lines[0].find("DESCRIPTION").unwrap();
    assert!(add[..col].ends_with("  "), "{add}");
    assert!(r.stderr.is_empty(), "{}", r.stderr);
}

#[test]
fn tools_list_json_is_the_raw_result() {
    let r = against_example(&["tools", "list", "--json"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let v = json_line(&r.stdout);
    let names: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, TOOLS);
    assert_eq!(
        v["tools"][1]["outputSchema"]["properties"]["sum"]["type"],
        "integer"
    );
}

#[test]
fn text_arguments_stay_strings() {
    let r = against_example(&["tools", "call", "echo", "--arg", "text=007"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(r.stdout, "007\n");
}

#[test]
fn structured_output_and_typed_arguments() {
    let r = against_example(&["tools", "call", "add", "--arg", "a=2", "--arg", "b=40"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    // The text block is the structured content serialized: shown once.
    assert_eq!(r.stdout, "{\n  \"sum\": 42\n}\n");
    // --arg overrides a key of --args.
    let r = against_example(&[
        "tools",
        "call",
        "add",
        "--args",
        r#"{"a": 1, "b": 2}"#,
        "--arg",
        "b=5",
        "--json",
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(json_line(&r.stdout)["structuredContent"]["sum"], 6);
}

#[test]
fn a_value_that_does_not_fit_the_schema_is_refused() {
    let r = against_example(&["tools", "call", "add", "--arg", "a=two", "--arg", "b=1"]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("--arg a=two: expected integer"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty());
}

#[test]
fn image_audio_and_embedded_resources_print_readably() {
    let r = against_example(&["tools", "call", "image"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let line = r.stdout.trim_end();
    let bytes: usize = line
        .strip_prefix("[image image/png, ")
        .and_then(|s| s.strip_suffix(" bytes]"))
        .unwrap_or_else(|| panic!("{line}"))
        .parse()
        .unwrap();
    assert!(bytes > 8, "a PNG has at least its signature: {line}");

    let r = against_example(&["tools", "call", "audio"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    // 44-byte RIFF header + a quarter second of 8 kHz 8-bit mono samples.
    assert_eq!(r.stdout, "[audio audio/wav, 2044 bytes]\n");

    let r = against_example(&["tools", "call", "embedded_resource"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(
        r.stdout.starts_with(
            "[resource example://readme (text/markdown)]\n# Switchboard example server"
        ),
        "{}",
        r.stdout
    );

    let r = against_example(&["tools", "call", "image", "--json"]);
    let v = json_line(&r.stdout);
    assert_eq!(v["content"][0]["type"], "image");
    assert_eq!(v["content"][0]["mimeType"], "image/png");
}

#[test]
fn a_tool_error_exits_1_with_one_line() {
    let r = against_example(&[
        "tools",
        "call",
        "fail",
        "--arg",
        "message=broken on purpose",
    ]);
    assert_eq!(r.code, Some(1), "{r:?}");
    // The error's text once: on stdout, as the result; stderr says only that
    // it was an error.
    assert_eq!(r.stdout, "broken on purpose\n");
    assert_eq!(
        r.stderr,
        "switchboard: tool \"fail\" returned an error (isError; its content is on stdout)\n"
    );
    let r = against_example(&["tools", "call", "fail", "--json"]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert_eq!(json_line(&r.stdout)["isError"], true);
    assert!(!r.stderr.contains("always fails"), "{}", r.stderr);
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
}

#[test]
fn sampling_is_not_declared_so_the_tool_fails() {
    let r = against_example(&["tools", "call", "sample", "--arg", "prompt=hi"]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stdout.contains("sampling"), "{}", r.stdout);
    let r = against_example(&["tools", "call", "elicit"]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stdout.contains("elicitation"), "{}", r.stdout);
}

#[test]
fn an_unknown_tool_is_called_and_its_refusal_shown_in_one_line() {
    let r = against_example(&["tools", "call", "no_such_tool"]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
    // Called all the same: the server's own refusal, then what it lists.
    assert!(
        r.stderr.starts_with(
            "switchboard: tools/call: peer answered error -32602: unknown tool \"no_such_tool\" \
             (\"no_such_tool\" is not listed; the server offers: echo, add"
        ),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty());
}

#[test]
fn a_dead_command_exits_2_with_one_line() {
    let r = run(&["tools", "list", "--", "false"]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with("switchboard: cannot connect to `false`"),
        "{}",
        r.stderr
    );
    let r = run(&["ping", "--", "/nonexistent/mcp-server"]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("/nonexistent/mcp-server"), "{}", r.stderr);
}

/// A command that echoes its input (`cat`) sends our `initialize` back; the
/// client refused it and took its own refusal, echoed, as the server's answer:
/// "peer answered error -32600: \"initialize\" is not allowed before
/// initialization completes", which blamed a handshake rule. The error must
/// say what happened.
#[test]
fn a_command_that_echoes_its_input_is_named_as_such() {
    let r = run(&["ping", "--timeout", "5", "--", "cat"]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("echo"), "{}", r.stderr);
    assert!(!r.stderr.contains("not allowed before"), "{}", r.stderr);
}

/// A stdio server that answers `initialize` (id 1) under the id `"1"`: the
/// command fails at once (exit 2, one line) naming the mismatch, instead of
/// waiting its whole default timeout (60 s) to say "initialize: timed out".
#[test]
fn an_answer_under_a_string_id_is_named_at_once() {
    let answer = r#"{"jsonrpc":"2.0","id":"1","result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#;
    let script = format!("read line; printf '%s\\n' '{answer}'; cat >/dev/null");
    let r = run(&["tools", "list", "--", "sh", "-c", &script]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "initialize: the answer's id is \"1\" (a string), the request's is 1 (an integer)"
        ),
        "{}",
        r.stderr
    );
    // Well before the 60 s default timeout (the close takes a few seconds at most).
    assert!(r.elapsed.as_secs() < 30, "{:?}", r.elapsed);
}

#[test]
fn a_hanging_server_times_out_with_exit_2() {
    let r = run(&["ping", "--timeout", "1", "--", "sleep", "30"]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with("switchboard: cannot connect to `sleep 30`: initialize: timed out"),
        "{}",
        r.stderr
    );
    // 1 s of timeout, then stdin closed (2 s grace) and SIGTERM: well before 30 s.
    assert!(r.elapsed.as_secs() < 15, "{:?}", r.elapsed);
}

#[test]
fn a_slow_tool_call_times_out_with_exit_2() {
    let r = against_example(&[
        "tools",
        "call",
        "progress",
        "--arg",
        "seconds=20",
        "--arg",
        "steps=1",
        "--timeout",
        "0.5",
    ]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("tools/call: timed out"), "{}", r.stderr);
    assert!(r.elapsed.as_secs() < 15, "{:?}", r.elapsed);
}

#[test]
fn progress_is_one_line_per_notification_off_a_terminal() {
    let r = against_example(&[
        "tools",
        "call",
        "progress",
        "--arg",
        "seconds=0.3",
        "--arg",
        "steps=3",
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(r.stdout, "done: 3 steps in 0.3 s\n");
    assert_eq!(
        r.stderr_lines(),
        [
            "progress: 1/3 step 1 of 3",
            "progress: 2/3 step 2 of 3",
            "progress: 3/3 step 3 of 3"
        ]
    );
    // Progress moves the deadline: six steps of 0.3 s (1.8 s in all) under a 1.5 s
    // timeout.
    let r = against_example(&[
        "tools",
        "call",
        "progress",
        "--arg",
        "seconds=1.8",
        "--arg",
        "steps=6",
        "--timeout",
        "1.5",
        "--quiet",
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stderr.is_empty(), "--quiet: {}", r.stderr);
}

#[test]
fn server_logs_go_to_stderr_with_their_level() {
    let r = against_example(&["tools", "call", "log", "--arg", "message=hi"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(
        r.stderr_lines(),
        [
            "[debug] debug: hi",
            "[info] info: hi",
            "[notice] notice: hi",
            "[warning] warning: hi"
        ]
    );
    let r = against_example(&[
        "tools",
        "call",
        "log",
        "--arg",
        "message=hi",
        "--log-level",
        "notice",
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(
        r.stderr_lines(),
        ["[notice] notice: hi", "[warning] warning: hi"]
    );
    assert!(r.stdout.starts_with("sent 2 log messages"), "{}", r.stdout);
}

#[test]
fn resources_list_templates_and_read() {
    let r = against_example(&["resources", "list"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(lines[0].starts_with("URI") && lines[0].contains("MIME TYPE"));
    for uri in [
        "example://readme",
        "example://logo.png",
        "example://counter",
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with(uri)),
            "{uri}: {}",
            r.stdout
        );
    }

    let r = against_example(&["resources", "templates", "--json"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(
        json_line(&r.stdout)["resourceTemplates"][0]["uriTemplate"],
        "example://greeting/{name}"
    );

    let r = against_example(&["resources", "read", "example://readme"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(
        r.stdout.starts_with("# Switchboard example server\n"),
        "{}",
        r.stdout
    );

    let r = against_example(&["resources", "read", "example://logo.png"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(
        r.stdout
            .starts_with("[blob example://logo.png (image/png), "),
        "{}",
        r.stdout
    );
    let r = against_example(&["resources", "read", "example://logo.png", "--json"]);
    let blob = json_line(&r.stdout)["contents"][0]["blob"].clone();
    assert!(blob.as_str().is_some_and(|b| !b.is_empty()), "{}", r.stdout);

    let r = against_example(&["resources", "read", "example://greeting/ada"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(r.stdout, "Hello, ada!\n");

    let r = against_example(&["resources", "read", "example://nowhere"]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("resources/read"), "{}", r.stderr);
}

#[test]
fn prompts_list_and_get_with_arguments() {
    let r = against_example(&["prompts", "list"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(
        r.stdout.contains("greet        name*, style"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("review_code  code*, language"),
        "{}",
        r.stdout
    );

    let r = against_example(&[
        "prompts",
        "get",
        "greet",
        "--arg",
        "name=Ada",
        "--arg",
        "style=formal",
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(
        r.stdout,
        "# A formal greeting\nuser: Write a formal greeting for Ada.\n"
    );

    let r = against_example(&[
        "prompts",
        "get",
        "review_code",
        "--args",
        r#"{"code": "x = 1"}"#,
        "--json",
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let v = json_line(&r.stdout);
    assert_eq!(v["messages"][1]["role"], "assistant");
    // Without the optional `language`, no gap where it would be (it read
    // "Please review this  code:").
    assert_eq!(
        v["messages"][0]["content"]["text"],
        "Please review this code:\n\nx = 1"
    );
    let r = against_example(&[
        "prompts",
        "get",
        "review_code",
        "--arg",
        "code=x = 1",
        "--arg",
        "language=Python",
        "--json",
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let v = json_line(&r.stdout);
    assert_eq!(
        v["messages"][0]["content"]["text"],
        "Please review this Python code:\n\nx = 1"
    );

    // A required argument missing: the server's -32602, exit 2.
    let r = against_example(&["prompts", "get", "greet"]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("-32602"), "{}", r.stderr);
}

#[test]
fn ping_reports_the_server() {
    let r = against_example(&["ping"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(
        r.stdout.starts_with("pong from switchboard-example "),
        "{}",
        r.stdout
    );
    let r = against_example(&["ping", "--json"]);
    assert_eq!(json_line(&r.stdout), serde_json::json!({}));
}

#[test]
fn targets_must_be_a_url_or_a_command() {
    let r = run(&["tools", "list"]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("no server given"), "{}", r.stderr);
    let r = run(&["tools", "call", "echo"]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("not an http(s):// URL"), "{}", r.stderr);
    let r = run(&[
        "tools",
        "call",
        "http://127.0.0.1:9/mcp",
        "echo",
        "--",
        exe(),
    ]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("not both"), "{}", r.stderr);
}

#[test]
fn the_client_over_http() {
    let server = common::HttpExample::start();
    let url = server.url.clone();
    let url = url.as_str();
    let r = run(&["tools", "list", url, "--json"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(
        json_line(&r.stdout)["tools"].as_array().unwrap().len(),
        TOOLS.len()
    );

    let r = run(&[
        "tools",
        "call",
        url,
        "progress",
        "--arg",
        "seconds=0.3",
        "--arg",
        "steps=3",
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(r.stdout, "done: 3 steps in 0.3 s\n");
    assert_eq!(r.stderr_lines().len(), 3, "{}", r.stderr);
    assert!(
        r.stderr.starts_with("progress: 1/3 step 1 of 3\n"),
        "{}",
        r.stderr
    );

    let r = run(&["tools", "call", url, "log", "--arg", "message=web"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stderr.contains("[warning] warning: web"), "{}", r.stderr);

    let r = run(&["tools", "call", url, "fail"]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);

    let r = run(&["resources", "read", url, "example://greeting/web"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(r.stdout, "Hello, web!\n");

    let r = run(&["prompts", "get", url, "greet", "--arg", "name=Web"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stdout.contains("greeting for Web."), "{}", r.stdout);

    let r = run(&["ping", url]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(
        r.stdout.starts_with("pong from switchboard-example"),
        "{}",
        r.stdout
    );

    assert!(server.stop().success());

    // Nothing listens there any more: exit 2, one line.
    let r = run(&["ping", url, "--timeout", "5"]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with("switchboard: cannot connect to http://"),
        "{}",
        r.stderr
    );
}

#[test]
fn read_output_writes_the_decoded_bytes() {
    let dir = std::env::temp_dir().join(format!("switchboard-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let png = dir.join("logo.png");
    let r = against_example(&[
        "resources",
        "read",
        "example://logo.png",
        "--output",
        png.to_str().unwrap(),
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "the PNG signature");
    // The same length the summary line reports from the base64 text.
    let r = against_example(&["resources", "read", "example://logo.png"]);
    assert!(
        r.stdout.contains(&format!(", {} bytes]", bytes.len())),
        "{}",
        r.stdout
    );
    let text = dir.join("readme.md");
    let r = against_example(&[
        "resources",
        "read",
        "example://readme",
        "-o",
        text.to_str().unwrap(),
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(std::fs::read_to_string(&text)
        .unwrap()
        .starts_with("# Switchboard example server"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_modern_era_over_stdio() {
    let r = against_example(&["ping", "--era", "modern"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stdout.contains("(protocol 2026-07-28)"), "{}", r.stdout);
    // 2026-07-28 sends logs only when a request names a level: the client asks for all.
    let r = against_example(&[
        "tools",
        "call",
        "log",
        "--era",
        "modern",
        "--arg",
        "message=m",
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(r.stderr_lines().len(), 4, "{}", r.stderr);
    let r = against_example(&[
        "tools",
        "call",
        "progress",
        "--era",
        "modern",
        "--arg",
        "seconds=0.2",
        "--arg",
        "steps=2",
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(
        r.stderr_lines(),
        ["progress: 1/2 step 1 of 2", "progress: 2/2 step 2 of 2"]
    );
    let r = against_example(&["ping", "--era", "legacy"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stdout.contains("(protocol 2025-11-25)"), "{}", r.stdout);
}

/// A stdio server that speaks only 2026-07-28 (`example-server --modern-only`,
/// which refuses `initialize` with an error) works without `--era`: the client
/// asks `server/discover` after the refusal. `--era legacy` still means
/// `initialize` only, and fails with the server's refusal.
#[test]
fn a_2026_07_28_only_stdio_server_works_without_era() {
    let server = ["--", exe(), "example-server", "--modern-only"];
    let r = run(&[&["tools", "list"][..], &server[..]].concat());
    assert_eq!(r.code, Some(0), "{r:?}");
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(lines[0].starts_with("NAME"), "{}", r.stdout);
    assert_eq!(lines.len(), TOOLS.len() + 1, "{}", r.stdout);
    for name in TOOLS {
        assert!(
            lines
                .iter()
                .any(|l| l.split_whitespace().next() == Some(name)),
            "{name} missing: {}",
            r.stdout
        );
    }
    assert!(r.stderr.is_empty(), "{}", r.stderr);

    let r = run(&[&["ping"][..], &server[..]].concat());
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stdout.contains("(protocol 2026-07-28)"), "{}", r.stdout);

    let r = run(&[&["tools", "list", "--era", "legacy"][..], &server[..]].concat());
    assert_eq!(r.code, Some(2), "{r:?}");
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("initialize"), "{}", r.stderr);
    assert!(!r.stderr.contains("server/discover"), "{}", r.stderr);

    let r = run(&[&["tools", "list", "--era", "legacy-first"][..], &server[..]].concat());
    assert_eq!(r.code, Some(0), "{r:?}");
}

/// The default for a stdio command still speaks a legacy revision to a server
/// that speaks both (`initialize` is answered, nothing is probed).
#[test]
fn a_dual_era_stdio_server_is_spoken_to_in_a_legacy_revision_by_default() {
    let r = against_example(&["ping"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stdout.contains("(protocol 2025-11-25)"), "{}", r.stdout);
}

#[test]
fn ctrl_c_cancels_the_call_and_exits_130() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut child = common::with_default_signals(&mut Command::new(exe()))
        .args([
            "tools",
            "call",
            "progress",
            "--arg",
            "seconds=30",
            "--arg",
            "steps=30",
            "--",
        ])
        .args([exe(), "example-server"])
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines() {
            let Ok(line) = line else { return };
            let _ = tx.send(line);
        }
    });
    let first = rx.recv_timeout(common::BOUND).expect("a progress line");
    assert!(first.starts_with("progress: 1/30"), "{first}");
    let started = std::time::Instant::now();
    common::send_signal(pid, libc::SIGINT);
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done_tx.send(child.wait());
    });
    let status = done_rx
        .recv_timeout(common::BOUND)
        .expect("exits after SIGINT")
        .unwrap();
    assert_eq!(status.code(), Some(130), "{status}");
    assert!(started.elapsed().as_secs() < 15, "{:?}", started.elapsed());
    // Every remaining line, until stderr closes (bounded).
    let mut rest = Vec::new();
    loop {
        match rx.recv_timeout(common::BOUND) {
            Ok(line) => rest.push(line),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(e) => panic!("stderr still open: {e}"),
        }
    }
    assert_eq!(
        rest.last().map(String::as_str),
        Some("switchboard: interrupted"),
        "{rest:?}"
    );
}

/// Ctrl-C on a call to a stdio server sends it `notifications/cancelled` for that
/// call before its stdin closes (the only way to cancel over stdio): the
/// server's input, copied to a file by `tee` in front of it, ends with it.
#[test]
fn ctrl_c_sends_the_stdio_server_a_cancellation_for_the_call() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let log = std::env::temp_dir().join(format!("sb-cli-cancel-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let mut child = common::with_default_signals(&mut Command::new(exe()))
        .args([
            "tools",
            "call",
            "progress",
            "--arg",
            "seconds=30",
            "--arg",
            "steps=30",
        ])
        .args(["--", "sh", "-c", "tee \"$0\" | \"$1\" example-server"])
        .arg(&log)
        .arg(exe())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).expect("a progress line");
    assert!(first.starts_with("progress: 1/30"), "{first}");
    common::send_signal(pid, libc::SIGINT);
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done_tx.send(child.wait());
    });
    let status = done_rx
        .recv_timeout(common::BOUND)
        .expect("exits after SIGINT")
        .unwrap();
    assert_eq!(status.code(), Some(130), "{status}");
    let sent = std::fs::read_to_string(&log).expect("the server's input");
    let _ = std::fs::remove_file(&log);
    let messages: Vec<Value> = sent
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let call = messages
        .iter()
        .find(|m| m["method"] == "tools/call")
        .unwrap_or_else(|| panic!("no tools/call in {sent}"));
    let last = messages.last().expect("messages");
    assert_eq!(last["method"], "notifications/cancelled", "{sent}");
    assert_eq!(last["params"]["requestId"], call["id"], "{sent}");
}

/// A minimal legacy Streamable HTTP server on 127.0.0.1:0 (one thread per
/// connection, keep-alive): `initialize` gets a session id, `ping` an empty
/// result, another request the result `results` gives for its method, notifications
/// 202, anything else (the 2026-07-28 probe, GET) 400 or 405. Every request's
/// method and JSON-RPC method go to the returned channel.
fn recording_server(
    results: impl Fn(&str) -> Option<Value> + Send + Sync + 'static,
) -> (String, std::sync::mpsc::Receiver<String>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let results = std::sync::Arc::new(results);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let tx = tx.clone();
            let results = results.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut stream = stream;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let verb = line.split(' ').next().unwrap_or_default().to_owned();
                    let mut length = 0;
                    loop {
                        let mut h = String::new();
                        if reader.read_line(&mut h).unwrap_or(0) == 0 {
                            return;
                        }
                        if h.trim().is_empty() {
                            break;
                        }
                        if let Some((k, v)) = h.split_once(':') {
                            if k.eq_ignore_ascii_case("content-length") {
                                length = v.trim().parse().unwrap_or(0);
                            }
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let method = msg["method"].as_str().unwrap_or_default().to_owned();
                    let _ = tx.send(format!("{verb} {method}").trim().to_owned());
                    let (status, extra, reply) = match (verb.as_str(), method.as_str()) {
                        ("POST", "initialize") => (
                            "200 OK",
                            "Mcp-Session-Id: s1\r\n",
                            serde_json::json!({"jsonrpc": "2.0", "id": msg["id"], "result": {
                                "protocolVersion": "2025-11-25",
                                "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
                                "serverInfo": {"name": "recorder", "version": "1"}}})
                            .to_string(),
                        ),
                        ("POST", "ping") => (
                            "200 OK",
                            "",
                            serde_json::json!({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
                                .to_string(),
                        ),
                        ("POST", m) if results(m).is_some() => (
                            "200 OK",
                            "",
                            serde_json::json!({"jsonrpc": "2.0", "id": msg["id"], "result": results(m)})
                                .to_string(),
                        ),
                        ("POST", m) if m.starts_with("notifications/") => {
                            ("202 Accepted", "", String::new())
                        }
                        ("DELETE", _) => ("200 OK", "", String::new()),
                        ("POST", _) => ("400 Bad Request", "", String::new()),
                        _ => ("405 Method Not Allowed", "", String::new()),
                    };
                    let head = format!(
                        "HTTP/1.1 {status}\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                        reply.len()
                    );
                    if stream.write_all(head.as_bytes()).is_err()
                        || stream.write_all(reply.as_bytes()).is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    (url, rx)
}

#[test]
fn a_url_session_is_deleted_before_the_command_exits() {
    let (url, seen) = recording_server(|_| None);
    let r = run(&["ping", &url, "--era", "legacy"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let requests: Vec<String> = seen.try_iter().collect();
    assert_eq!(
        requests.last().map(String::as_str),
        Some("DELETE"),
        "the session is deleted before exit: {requests:?}"
    );
}

#[test]
fn a_malformed_result_is_a_protocol_error_not_an_empty_success() {
    let (url, _seen) = recording_server(|method| match method {
        "tools/list" => Some(serde_json::json!({"tools": [
            {"name": "t", "inputSchema": {"type": "object"}}]})),
        "tools/call" => Some(serde_json::json!({"content": "not an array"})),
        "resources/list" | "resources/read" | "prompts/list" | "prompts/get" => {
            Some(serde_json::json!({}))
        }
        _ => None,
    });
    let url = url.as_str();
    for args in [
        &["tools", "call", url, "t"][..],
        &["tools", "call", url, "t", "--json"],
        &["resources", "list", url],
        &["resources", "read", url, "x://y"],
        &["resources", "read", url, "x://y", "--json"],
        &["prompts", "list", url, "--json"],
        &["prompts", "get", url, "p"],
    ] {
        let mut all = args.to_vec();
        all.extend(["--era", "legacy"]);
        let r = run(&all);
        assert_eq!(r.code, Some(2), "{args:?}: {r:?}");
        assert_eq!(r.stdout, "", "{args:?}");
        assert_eq!(r.stderr_lines().len(), 1, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("malformed") || r.stderr.contains("not a CallToolResult"),
            "{args:?}: {}",
            r.stderr
        );
    }
}

/// A result whose `structuredContent` breaks the tool's `outputSchema` (or
/// that has none for a tool with one) is shown as the server sent it, then the
/// command exits 2 with one line naming the mismatch (2025-06-18+: clients
/// SHOULD validate); one that fits exits 0.
#[test]
fn structured_content_that_breaks_the_output_schema_exits_2() {
    let cases = [
        (serde_json::json!({"n": "three"}), Some(2), "three"),
        (serde_json::Value::Null, Some(2), "plain"),
        (serde_json::json!({"n": 3}), Some(0), "3"),
    ];
    for (structured, code, shown) in cases {
        let mut result = serde_json::json!({
            "content": [{"type": "text", "text": "plain"}]});
        if !structured.is_null() {
            result["structuredContent"] = structured.clone();
        }
        let (url, _seen) = recording_server(move |method| match method {
            "tools/list" => Some(serde_json::json!({"tools": [
                {"name": "t", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object",
                    "required": ["n"], "properties": {"n": {"type": "integer"}}}}]})),
            "tools/call" => Some(result.clone()),
            _ => None,
        });
        for json in [false, true] {
            let mut args = vec!["tools", "call", url.as_str(), "t", "--era", "legacy"];
            if json {
                args.push("--json");
            }
            let r = run(&args);
            assert_eq!(r.code, code, "{structured}: {r:?}");
            assert!(r.stdout.contains(shown), "the result is shown: {r:?}");
            if code == Some(2) {
                assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
                assert!(r.stderr.contains("outputSchema"), "{}", r.stderr);
            }
        }
    }
}

/// Ctrl-C while the server has not answered `initialize` yet: exit 130 (128 +
/// SIGINT, the shell's convention) with one line, and the stdio child (in its own
/// process group, so a terminal's Ctrl-C does not reach it) is shut down, not
/// left running.
#[test]
fn ctrl_c_while_connecting_exits_130_and_ends_the_child() {
    let (code, stderr, still_running, _) = signal_while_connecting(&["INT"], None, false);
    assert_eq!(code, Some(130), "{stderr}");
    assert_eq!(stderr, "switchboard: interrupted\n");
    assert!(!still_running, "the stdio server was left running");
}

/// SIGTERM (`timeout`, a CI runner, systemd) and SIGHUP (the terminal closed)
/// end the command as Ctrl-C does, with the shell's status for each (143, 129).
/// They killed the process outright (no message), leaving a stdio server that
/// does not exit on stdin EOF running in its own process group.
#[test]
fn sigterm_and_sighup_while_connecting_end_the_child() {
    for (signal, name, status) in [("TERM", "SIGTERM", 143), ("HUP", "SIGHUP", 129)] {
        let (code, stderr, still_running, _) = signal_while_connecting(&[signal], None, false);
        assert_eq!(code, Some(status), "{signal}: {stderr}");
        assert_eq!(stderr, format!("switchboard: terminated by {name}\n"));
        assert!(
            !still_running,
            "{signal}: the stdio server was left running"
        );
    }
}

/// A signal the client inherits as ignored (`nohup`, `trap '' HUP`) stays
/// ignored: SIGHUP then does not end the command; SIGTERM still does.
#[test]
fn an_inherited_ignored_signal_stays_ignored() {
    let (code, stderr, still_running, _) =
        signal_while_connecting(&["HUP", "TERM"], Some("HUP"), false);
    assert_eq!(code, Some(143), "{stderr}");
    assert_eq!(stderr, "switchboard: terminated by SIGTERM\n");
    assert!(!still_running, "the stdio server was left running");
}

/// A second Ctrl-C while the client shuts down a stdio server that ignores both
/// the end of its stdin and SIGTERM kills the server at once, where the spec's
/// order alone takes two graces of 2 s: a user pressing Ctrl-C again wants out.
#[test]
fn a_second_ctrl_c_kills_a_server_that_ignores_its_shutdown() {
    let (code, stderr, still_running, after_last) =
        signal_while_connecting(&["INT", "INT"], None, true);
    assert_eq!(code, Some(130), "{stderr}");
    assert_eq!(stderr, "switchboard: interrupted\n");
    assert!(!still_running, "the stdio server was left running");
    assert!(
        after_last < std::time::Duration::from_millis(1500),
        "the client took {after_last:?} to exit after the second Ctrl-C"
    );
}

/// A second Ctrl-C while the client is still writing to a stdio server what it
/// queued (the interrupted call, then its `notifications/cancelled`; here the
/// server stopped reading, so that write waits its bound of 1 s) kills the
/// server at once too: that signal was taken by the write's wait and the
/// shutdown then waited for a third, running the spec's two graces of 2 s.
#[test]
fn a_second_ctrl_c_while_writing_to_the_server_kills_it() {
    // Answers initialize and tools/list (one tool), then reads nothing more.
    let reply = |result: &str| {
        format!(
            "read -r line; id=${{line#*\\\"id\\\":}}; id=${{id%%[!0-9]*}}; \
             printf '{{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{result}}}\\n' \"$id\"; "
        )
    };
    let serve = format!(
        "{}read -r line; {}",
        reply(
            "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"tools\":{}},\
             \"serverInfo\":{\"name\":\"deaf\",\"version\":\"1\"}}"
        ),
        reply("{\"tools\":[{\"name\":\"big\",\"inputSchema\":{\"type\":\"object\"}}]}")
    );
    // More than a pipe holds (64 KiB), less than one argument may be (128 KiB).
    let args = format!("{{\"data\":\"{}\"}}", "x".repeat(120_000));
    let (code, stderr, still_running, after_last) = signal_during(
        &["tools", "call", "big", "--args", &args],
        &serve,
        &["INT", "INT"],
        None,
        true,
    );
    assert_eq!(code, Some(130), "{stderr}");
    assert_eq!(stderr, "switchboard: interrupted\n");
    assert!(!still_running, "the stdio server was left running");
    assert!(
        after_last < std::time::Duration::from_millis(1500),
        "the client took {after_last:?} to exit after the second Ctrl-C"
    );
}

/// Starts `ping -- sh -c '...; exec sleep 300'` (a server that ignores stdin EOF
/// and never answers; `stubborn`: SIGTERM too), with SIG`ignored` ignored in the
/// client when given (as `trap '' SIG` before `exec` leaves it), sends each of
/// `signals` to the client once the server runs (300 ms apart), and returns the
/// client's exit code, its stderr, whether the server was still running after
/// the client exited (it is then ended here), and how long the client took to
/// exit after the last signal. Panics if the client exits before the last
/// signal.
fn signal_while_connecting(
    signals: &[&str],
    ignored: Option<&str>,
    stubborn: bool,
) -> (Option<i32>, String, bool, std::time::Duration) {
    signal_during(&["ping"], "", signals, ignored, stubborn)
}

/// [`signal_while_connecting`] for the client command `cli` (then `-- sh -c
/// SCRIPT`) with a server that first runs `serve` (shell commands that answer
/// what the client sends) and only then counts as running.
fn signal_during(
    cli: &[&str],
    serve: &str,
    signals: &[&str],
    ignored: Option<&str>,
    stubborn: bool,
) -> (Option<i32>, String, bool, std::time::Duration) {
    let signal = signals.join("-");
    use std::process::{Command, Stdio};
    // One directory per call: tests sending the same signals run side by side.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir =
        std::env::temp_dir().join(format!("sb-signal-{signal}-{}-{call}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pid_file = dir.join("child.pid");
    let _ = std::fs::remove_file(&pid_file);
    let script = format!(
        "{}{serve}echo $$ > '{}'; exec sleep 300",
        if stubborn { "trap '' TERM; " } else { "" },
        pid_file.display()
    );
    let exe = exe();
    let mut command = match ignored {
        Some(sig) => {
            let mut c = Command::new("sh");
            c.args(["-c", &format!("trap '' {sig}; exec \"$0\" \"$@\""), exe]);
            c
        }
        None => Command::new(exe),
    };
    let mut child = common::with_default_signals(&mut command)
        .args(cli)
        .args(["--", "sh", "-c", &script])
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let deadline = std::time::Instant::now() + common::BOUND;
    let server_pid = loop {
        if let Some(p) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
        {
            break p;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the server never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // Give the client time to send initialize, then signal it.
    let mut last = std::time::Instant::now();
    for (i, signal) in signals.iter().enumerate() {
        std::thread::sleep(std::time::Duration::from_millis(300));
        if i > 0 {
            assert!(
                child.try_wait().unwrap().is_none(),
                "the client exited before SIG{signal}"
            );
        }
        last = std::time::Instant::now();
        let number = match *signal {
            "INT" => libc::SIGINT,
            "TERM" => libc::SIGTERM,
            "HUP" => libc::SIGHUP,
            other => panic!("no such signal here: {other}"),
        };
        common::send_signal(pid, number);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let out = child.wait_with_output();
        let _ = tx.send((out, last.elapsed()));
    });
    let (out, after_last) = rx
        .recv_timeout(common::BOUND)
        .expect("exits after the signal");
    let out = out.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let alive = || {
        Command::new("kill")
            .args(["-0", &server_pid.to_string()])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let still_running = alive();
    if still_running {
        // Only the process this test started, by its id.
        let _ = Command::new("kill").arg(server_pid.to_string()).status();
    }
    let _ = std::fs::remove_dir_all(&dir);
    (out.status.code(), stderr, still_running, after_last)
}

/// `--timeout` bounds the 2026-07-28 probe too: against a URL that accepts
/// connections and never answers, `--timeout 1` fails in seconds (the probe took a
/// fixed 10 s before the initialize attempt).
#[test]
fn timeout_bounds_the_era_probe() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let r = run(&["ping", &url, "--timeout", "1"]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("timed out"), "{}", r.stderr);
    assert!(
        r.elapsed < std::time::Duration::from_secs(8),
        "took {:?}",
        r.elapsed
    );
}

/// A TLS-terminating proxy on `listener` with the test certificate of
/// `tests/fixtures/tls` (for `localhost` and `127.0.0.1`), forwarding each
/// connection's bytes to `upstream`, as a reverse proxy in front of a bridge
/// would. Runs until the test ends.
fn tls_proxy(listener: std::net::TcpListener, upstream: std::net::SocketAddr) {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    use std::sync::Arc;
    use tokio_rustls::rustls;

    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tls");
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(format!("{dir}/server.pem"))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
    let key = PrivateKeyDer::from_pem_file(format!("{dir}/server.key")).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    // A client that refuses the certificate ends the handshake.
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    if let Ok(mut plain) = tokio::net::TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                    }
                });
            }
        });
    });
}

/// `https://` targets (issue 4: "TARGET is an http(s):// URL"), through a TLS
/// proxy in front of the bridge (which accepts the proxy's `Host`): the
/// certificate is checked against the built-in and platform roots plus
/// `SSL_CERT_FILE` (here the test CA), in both eras; a certificate nobody
/// vouches for is a transport error, exit 2 with one line.
#[test]
fn the_client_over_https() {
    use std::io::BufRead;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut bridge = std::process::Command::new(exe())
        .args(["bridge", "--listen", "127.0.0.1:0"])
        .args(["--allow-host", &format!("localhost:{port}")])
        .args(["--allow-host", &format!("127.0.0.1:{port}")])
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(bridge.stdout.take().unwrap()).lines();
    let url = lines
        .find_map(|l| l.unwrap().strip_prefix("route /mcp: ").map(str::to_owned))
        .expect("the bridge prints its URL");
    std::thread::spawn(move || lines.for_each(drop));
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap());
    tls_proxy(listener, authority.parse().unwrap());

    let ca = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tls/ca.pem");
    let trusted = [("SSL_CERT_FILE", ca)];
    for host in ["localhost", "127.0.0.1"] {
        let url = format!("https://{host}:{port}{path}");
        let r = common::run_with_env(
            &["tools", "call", &url, "echo", "--arg", "text=over tls"],
            None,
            &trusted,
        );
        assert_eq!(r.code, Some(0), "{url}: {r:?}");
        assert_eq!(r.stdout, "over tls\n");
        let r = common::run_with_env(&["ping", &url, "--era", "legacy"], None, &trusted);
        assert_eq!(r.code, Some(0), "{url}: {r:?}");
    }

    // The test CA not trusted: refused, one line, exit 2.
    let url = format!("https://localhost:{port}{path}");
    let r = common::run_with_env(
        &["ping", &url, "--timeout", "10"],
        None,
        &[("SSL_CERT_FILE", "/dev/null")],
    );
    let _ = std::process::Command::new("kill")
        .arg(bridge.id().to_string())
        .status();
    let _ = bridge.wait();
    assert_eq!(r.code, Some(2), "{r:?}");
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
    assert!(
        r.stderr.to_lowercase().contains("certificate"),
        "{}",
        r.stderr
    );
}

/// `--header` with a stdio target is refused (it used to be ignored silently).
#[test]
fn a_header_for_a_stdio_target_is_refused() {
    let r = against_example(&["ping", "--header", "Authorization: Bearer x"]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("--header"), "{}", r.stderr);
}

/// A stdio server that writes something else than JSON-RPC on stdout (a banner,
/// logs) and never answers: the one-line error says so, quoting the latest such
/// line, instead of a bare timeout (the lines are skipped, logged only with -v).
/// A server that answers despite a banner is not blamed for it.
#[test]
fn a_server_writing_no_json_rpc_is_named_in_the_timeout() {
    let r = run(&[
        "ping",
        "--timeout",
        "2",
        "--",
        "sh",
        "-c",
        "echo 'Starting...'; echo 'Server ready on stdio'; exec sleep 300",
    ]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("timed out"), "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "2 lines on stdout that are not JSON-RPC (the latest: \"Server ready on stdio\")"
        ),
        "{}",
        r.stderr
    );
    let banner = format!(
        "echo 'hello from the server'; exec {} example-server",
        exe()
    );
    let r = run(&[
        "tools", "call", "echo", "--arg", "text=hi", "--", "sh", "-c", &banner,
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(!r.stderr.contains("JSON-RPC"), "{}", r.stderr);
}
