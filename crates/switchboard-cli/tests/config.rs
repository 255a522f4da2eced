//! `switchboard config check|schema`, as a user runs them.

use std::process::Command;

fn switchboard(args: &[&str]) -> (i32, String, String) {
    switchboard_with_path(args, &std::env::var("PATH").unwrap_or_default())
}

fn switchboard_with_path(args: &[&str], path: &str) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(args)
        .env("PATH", path)
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
    // The gateway's start checks run: the command must be found in PATH.
    let (code, _, err) =
        switchboard_with_path(&["config", "check", path.to_str().unwrap()], "/nonexistent");
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.lines().next().unwrap(),
        format!(
            "{}:3:14: upstreams.time.command: cannot be run: mcp-server-time: not found in PATH",
            path.display()
        ),
        "only the real problem, not the route's allowlist beside it: {err}"
    );
    assert_eq!(err.lines().count(), 2, "{err}");
    let bin = path.parent().unwrap().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let program = bin.join("mcp-server-time");
    std::fs::write(&program, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let with_bin = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let switchboard = |args: &[&str]| switchboard_with_path(args, &with_bin);
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
            format!("{file}:2:10: upstreams.x.comand: unknown key (did you mean `command`?)"),
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

/// VS Code's file as VS Code writes it: comments, trailing commas, its
/// variables; relative paths against the workspace (the folder holding
/// `.vscode`); a name with a space served by a valid one, said in a note.
#[test]
fn a_vs_code_file_is_read_as_vs_code_means_it() {
    let root = std::env::temp_dir().join(format!("sb-config-vscode-{}", std::process::id()));
    let vscode = root.join(".vscode");
    std::fs::create_dir_all(vscode.join("..").join("srv")).unwrap();
    std::fs::create_dir_all(&vscode).unwrap();
    let script = root.join("srv").join("run.sh");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let file = vscode.join("mcp.json");
    std::fs::write(
        &file,
        r#"// written by VS Code
{
  "inputs": [{"type": "promptString", "id": "key", "password": true}],
  "servers": {
    "local tools": {"command": "${workspaceFolder}/srv/run.sh", "args": ["${userHome}"],},
    "rel": {"command": "./run.sh", "cwd": "srv"},
  },
}
"#,
    )
    .unwrap();
    let (code, out, err) = switchboard(&["config", "check", "--json", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let root = std::fs::canonicalize(&root).unwrap_or(root);
    let want = root.join("srv").join("run.sh");
    assert_eq!(v["upstreams"][0]["name"], "local-tools");
    assert_eq!(
        v["upstreams"][0]["target"]["command"],
        want.to_str().unwrap()
    );
    assert_eq!(
        v["upstreams"][0]["target"]["args"][0],
        std::env::var("HOME").unwrap()
    );
    assert_eq!(
        v["upstreams"][1]["target"]["command"],
        want.to_str().unwrap()
    );
    assert_eq!(
        v["upstreams"][1]["target"]["cwd"],
        root.join("srv").to_str().unwrap()
    );
    assert!(
        err.contains(r#"note: servers."local tools" is served as upstream "local-tools""#),
        "{err}"
    );
    // An input and a missing directory: each said once, at its place.
    std::fs::write(
        &file,
        r#"{"servers": {"a": {"command": "sh", "env": {"K": "${input:key}"}},
  "b": {"command": "./run.sh", "cwd": "nowhere"}}}"#,
    )
    .unwrap();
    let (code, _, err) = switchboard(&["config", "check", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(
        lines[0].contains(":1:50: servers.a.env.K: `${input:key}` asks the user"),
        "{err}"
    );
    assert!(
        lines[1].contains(":2:39: servers.b.cwd: the working directory "),
        "{err}"
    );
    assert!(
        lines[1].ends_with("nowhere cannot be used: No such file or directory (os error 2)"),
        "{err}"
    );
}
