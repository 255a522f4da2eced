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
            r.stderr.lines().any(|l| l.trim_start().starts_with(command)),
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
