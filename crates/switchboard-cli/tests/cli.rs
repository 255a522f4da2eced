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

/// `keygen` over an existing key file refuses, naming it and `--force`, and
/// leaves both files as they were; `--force` replaces the pair (the secret
/// key readable by its owner alone).
#[test]
fn keygen_refuses_an_existing_key_unless_forced() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("sb-cli-keygen-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let prefix = dir.join("k").display().to_string();
    let (key, public) = (format!("{prefix}.key"), format!("{prefix}.pub"));
    let read = |p: &str| std::fs::read_to_string(p).unwrap();

    let r = run(&["keygen", "--out", &prefix]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let (first_key, first_pub) = (read(&key), read(&public));
    assert_eq!(r.stdout, first_pub);

    let r = run(&["keygen", "--out", &prefix]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with(&format!("switchboard: {key}: File exists: not replaced")),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("--force replaces it"), "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert_eq!(
        (read(&key), read(&public)),
        (first_key.clone(), first_pub.clone())
    );

    // The public key alone is not replaced either.
    std::fs::remove_file(&key).unwrap();
    let r = run(&["keygen", "--out", &prefix]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(
        r.stderr
            .starts_with(&format!("switchboard: {public}: File exists")),
        "{}",
        r.stderr
    );
    assert!(!std::path::Path::new(&key).exists(), "nothing written");
    assert_eq!(read(&public), first_pub);

    std::fs::write(&key, &first_key).unwrap();
    let r = run(&["keygen", "--out", &prefix, "--force"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let (second_key, second_pub) = (read(&key), read(&public));
    assert_ne!(second_key, first_key);
    assert_ne!(second_pub, first_pub);
    assert_eq!(r.stdout, second_pub);
    let mode = std::fs::metadata(&key).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `lock approve --help` says what WHICH takes: an upstream, or one entry of
/// it as `UPSTREAM__NAME` (a tool, prompt or resource template), and no more.
#[test]
fn lock_approve_help_says_what_it_takes() {
    let r = run(&["lock", "approve", "--help"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    for text in [
        "[UPSTREAM[__NAME]]",
        "every upstream of the lock",
        "the tool, prompt or resource template (by its `uriTemplate`) named NAME",
        "Split at the first `__`",
        "no `tool NAME`",
        "instructions",
        "`-- CMD` is refused",
        "--yes is required",
        "lock approve calc__add",
    ] {
        assert!(r.stdout.contains(text), "{text:?} in: {}", r.stdout);
    }
    let r = run(&["lock", "approve", "-h"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(
        r.stdout.contains(
            "Only this upstream (`UPSTREAM`) or one entry of it (`UPSTREAM__NAME`); default: every upstream of the lock"
        ),
        "{}",
        r.stdout
    );
}
