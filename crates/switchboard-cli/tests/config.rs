//! `switchboard config check|schema`, as a user runs them.

use std::process::Command;

fn switchboard(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(args)
        .output()
        .expect("run switchboard");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sb-config-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_valid_file_is_summarised_and_exits_0() {
    let path = temp_file(
        "ok.yaml",
        "upstreams:\n  time:\n    command: mcp-server-time\nroutes:\n  r:\n    path: /r/mcp\n    tools: [time__get_current_time]\n",
    );
    let (code, out, err) = switchboard(&["config", "check", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("upstream  time  prefix time__  stdio (shared): mcp-server-time"),
        "{out}"
    );
    assert!(
        out.contains("route  /r/mcp  upstreams time  1 allowed tool(s)"),
        "{out}"
    );
    assert!(
        out.contains("route  /mcp  upstreams time  every tool"),
        "{out}"
    );
    let (code, out, _) = switchboard(&["config", "check", "--json", path.to_str().unwrap()]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["upstreams"][0]["target"]["command"], "mcp-server-time");
}

#[test]
fn a_bad_file_gets_one_line_per_problem_in_file_order_and_exits_2() {
    let path = temp_file("bad.toml", "[upstreams.x]\ncomand = \"a\"\nargs = 3\n");
    let (code, out, err) = switchboard(&["config", "check", path.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(out.is_empty(), "{out}");
    let file = path.display().to_string();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        [
            format!("{file}:2:10: upstreams.x.comand: unknown key"),
            format!("{file}:3:8: upstreams.x.args: 3 is not of type \"array\""),
            format!("switchboard: {file}: 2 problems"),
        ]
    );
}

#[test]
fn the_schema_is_printed_as_json() {
    let (code, out, _) = switchboard(&["config", "schema"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["title"], "Switchboard gateway configuration");
}
