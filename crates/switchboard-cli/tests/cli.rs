//! The command line itself: what `switchboard` does with no command, and its shell
//! completions.

mod common;

use common::run;

/// No command prints the usage (every command, the options) on stderr and exits
/// 2, as a usage error; nothing runs (it decoded a built-in sample to stdout).
#[test]
fn no_command_prints_the_usage() {
    let r = run(&[]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stdout.is_empty(), "nothing runs: {}", r.stdout);
    assert!(r.stderr.contains("Usage: switchboard"), "{}", r.stderr);
    for command in ["decode", "tools", "ping", "bridge", "connect"] {
        assert!(
            r.stderr
                .lines()
                .any(|l| l.trim_start().starts_with(command)),
            "{command} listed: {}",
            r.stderr
        );
    }
    // A global flag alone is no command either.
    let r = run(&["-v"]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert!(r.stderr.contains("Usage: switchboard"), "{}", r.stderr);
}

/// `completions SHELL` prints a script generated from the command line's
/// definition for each shell; the bash one, loaded into bash, completes commands,
/// subcommands and flags.
#[test]
fn completions_for_each_shell() {
    for (shell, marker) in [
        ("bash", "_switchboard()"),
        ("zsh", "#compdef switchboard"),
        ("fish", "complete -c switchboard"),
        ("powershell", "Register-ArgumentCompleter"),
        ("elvish", "edit:completion:arg-completer[switchboard]"),
    ] {
        let r = run(&["completions", shell]);
        assert_eq!(r.code, Some(0), "{shell}: {r:?}");
        assert!(r.stdout.contains(marker), "{shell}: {}", r.stdout);
        for word in ["example-server", "allow-tool", "timeout"] {
            assert!(r.stdout.contains(word), "{shell} has {word}");
        }
    }
    let r = run(&["completions", "tcsh"]);
    assert_eq!(r.code, Some(2), "an unknown shell is a usage error: {r:?}");

    // bash itself: what `switchboard to<TAB>`, `switchboard tools <TAB>` and
    // `switchboard bridge --ch<TAB>` complete to.
    let script = run(&["completions", "bash"]).stdout;
    let complete = |words: &str| -> String {
        let program = format!(
            "{script}\nCOMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}; \
             _switchboard switchboard \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             echo \"${{COMPREPLY[*]}}\""
        );
        let out = std::process::Command::new("bash")
            .args(["--norc", "--noprofile", "-c", &program])
            .output()
            .expect("bash runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    assert_eq!(complete("switchboard to"), "tools");
    let tools: Vec<String> = complete("switchboard tools ''")
        .split(' ')
        .map(str::to_owned)
        .collect();
    assert!(
        tools.contains(&"list".to_owned()) && tools.contains(&"call".to_owned()),
        "{tools:?}"
    );
    assert!(
        complete("switchboard bridge --ch")
            .split(' ')
            .any(|w| w == "--child"),
        "bridge flags"
    );
}

/// `--version` names the commit the binary was built from (the checkout's
/// HEAD, when built from one), and the help names the gateway and the lock.
#[test]
fn the_version_names_the_commit_and_the_help_the_gateway() {
    let r = run(&["--version"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let line = r.stdout.trim();
    assert!(
        line.starts_with(&format!("switchboard {} (", env!("CARGO_PKG_VERSION"))),
        "{line}"
    );
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8(o.stdout).unwrap().trim().to_owned());
    match head {
        Some(head) => assert!(line.ends_with(&format!("({head})")), "{line}, HEAD {head}"),
        None => assert!(line.ends_with("(unknown)"), "{line}"),
    }
    let r = run(&["--help"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    for word in ["gateway", "lock", "bridge"] {
        assert!(
            r.stdout.lines().next().unwrap_or("").contains(word),
            "{word}: {}",
            r.stdout
        );
    }
}
