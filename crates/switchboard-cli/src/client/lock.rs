//! `switchboard lock`: pin what a server offers (every page of its tools,
//! prompts and resource templates, and its instructions) into a lock file, or
//! with `--check` compare what it offers now against the lock. The rules are
//! the bridge crate's `pin` module; this module connects, lists, reads and
//! writes the file, and prints.

use std::path::{Path, PathBuf};

use serde_json::Value;
use switchboard::{Client, ClientOptions};
use switchboard_gateway::pin::{
    self, compare, describe, findings, Change, Discovery, Drift, Identity, Kind, Lock, Severity,
    UpstreamLock, LOCK_VERSION,
};
use switchboard_protocol::jsonrpc::{code, ErrorObject};
use switchboard_protocol::types::ListRootsResult;

use crate::signals::{Inherited, Stop};

use super::{
    client_options, connect, list_pages, render, resolve_target, with_skipped, ConnectArgs,
    Failure, Signals, Target, Ui, EXIT_FAILURE, EXIT_OK, EXIT_TOOL_ERROR,
};

/// Writes to stdout; a closed stdout (`| head`, `>/dev/full`) is not an
/// error: what is left to print is dropped, and the command goes on (the files
/// it writes are written) and exits as it would have.
fn out(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
}

/// `print!` that does not panic on a closed stdout: [`out`].
macro_rules! say {
    ($($a:tt)*) => { out(&format!($($a)*)) };
}

/// `println!` that does not panic on a closed stdout: [`out`].
macro_rules! sayln {
    ($($a:tt)*) => { out(&format!("{}\n", format_args!($($a)*))) };
}

/// Exit status of `--check` when discovery differs from the lock (and of
/// `--strict` when a definition is suspicious).
pub const EXIT_DRIFT: u8 = EXIT_TOOL_ERROR;

/// `switchboard lock`.
#[derive(Debug, Clone, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct LockArgs {
    #[command(subcommand)]
    pub action: Option<LockAction>,
    /// The server's URL; omit it when giving `-- CMD`.
    #[arg(value_name = "URL")]
    pub url: Option<String>,
    /// The lock file.
    #[arg(long, value_name = "FILE", default_value = "switchboard.lock")]
    pub file: PathBuf,
    /// The upstream's name in the lock. Default: the only upstream of an
    /// existing lock, else a name made from the command or the URL's host.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Compare what the server offers with the lock instead of writing it: exit
    /// 0 when it matches, 1 when it drifted (each difference shown), 2 on error.
    /// Without a URL or `-- CMD`, every upstream of the lock (or `--name`'s) is
    /// checked, each reached by the identity the lock records.
    #[arg(long)]
    pub check: bool,
    /// Lock (or with --check, check) every upstream of this gateway
    /// configuration, each under its name, reached as the gateway reaches it
    /// (its command, arguments, environment and directory; its URL and
    /// headers), instead of one server.
    /// An upstream already in the lock is never re-approved by this: one
    /// whose definitions changed is reported as drifted (exit 1) and kept as
    /// approved; `--name NAME` locks (re-approves) that one upstream only.
    #[arg(long, value_name = "FILE", conflicts_with = "url")]
    pub config: Option<PathBuf>,
    /// Suspicious definitions (invisible characters, text addressed to the
    /// model, another upstream's tool named, an oversized description) fail the
    /// command with exit 1 (without --check, nothing is written).
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub common: ConnectArgs,
    /// The configuration being locked whole (`--config` without `--name`):
    /// an entry already in the lock is kept, not replaced; one that differs
    /// is reported as drifted.
    #[arg(skip)]
    pub keep_approved: Option<PathBuf>,
}

/// `switchboard lock sign|verify`.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum LockAction {
    /// Sign the lock with a secret key (from `switchboard keygen`): writes
    /// FILE.sig beside it.
    Sign {
        /// The secret key file.
        #[arg(long, value_name = "KEYFILE")]
        key: PathBuf,
        /// The lock file.
        #[arg(long, value_name = "FILE", default_value = "switchboard.lock")]
        file: PathBuf,
    },
    /// Show each difference between the lock and what its upstreams offer now
    /// (each reached by its identity in the lock) and ask whether to approve
    /// it; approved ones are written into the lock. Exit 0 when nothing is left
    /// unapproved, 1 when something is (a difference refused, or one of
    /// another entry than `UPSTREAM__NAME`'s), said as `N difference(s) left
    /// unapproved`.
    ///
    /// A difference is an entry added, changed or removed: a tool, a prompt, a
    /// resource template, or the server's instructions. Without WHICH, every
    /// upstream of the lock is reviewed. The servers are those the lock
    /// records (`-- CMD` is refused: to lock another server, run `switchboard
    /// lock -- CMD`); an upstream the lock lacks is added by `switchboard lock
    /// --config FILE --name NAME`, not here. At a terminal each difference is
    /// asked about (y/N); elsewhere --yes is required.
    ///
    /// Examples: `lock approve` (everything), `lock approve calc` (the upstream
    /// `calc`), `lock approve calc__add` (the entry `add` of `calc`, as the
    /// gateway names its tool), `lock approve --yes --strict calc`.
    Approve {
        /// Only this upstream (`UPSTREAM`) or one entry of it
        /// (`UPSTREAM__NAME`); default: every upstream of the lock.
        ///
        /// `UPSTREAM`: one upstream of the lock by its name there (every
        /// difference of it, instructions included). Or
        /// `UPSTREAM__NAME`, one entry of it: the tool, prompt or resource
        /// template (by its `uriTemplate`) named NAME, of every kind that has
        /// one by that name, in the lock or in what the server lists now.
        /// Split at the first `__` (NAME may hold more). There is no form for
        /// one kind alone (no `tool NAME`) nor for the instructions alone (use
        /// `UPSTREAM`).
        #[arg(value_name = "UPSTREAM[__NAME]")]
        which: Option<String>,
        /// Approve every difference without asking (for scripts).
        #[arg(long)]
        yes: bool,
        /// Never approve a definition with a suspicious finding (shown before
        /// each question either way): it is left unapproved.
        #[arg(long)]
        strict: bool,
        /// The lock file.
        #[arg(long, value_name = "FILE", default_value = "switchboard.lock")]
        file: PathBuf,
        /// Reach each upstream as this gateway configuration does (its
        /// environment and directory too; its headers), by its name there,
        /// instead of by the command line or URL the lock records: for
        /// upstreams with relative paths or a `cwd`. Its command line or URL
        /// must be the one the lock records.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        #[command(flatten)]
        common: ConnectArgs,
    },
    /// Check the lock's signature (FILE.sig) against a public key: exit 0, or
    /// 2 with the reason (unsigned, changed, another key).
    Verify {
        /// The public key: a file, or the key itself (`ed25519:...`).
        #[arg(long, value_name = "PUBKEY")]
        key: String,
        /// The lock file.
        #[arg(long, value_name = "FILE", default_value = "switchboard.lock")]
        file: PathBuf,
    },
}

/// Runs `switchboard lock`.
pub fn run(mut args: LockArgs) -> std::process::ExitCode {
    // A stdio server is started as the bridge and the gateway start it (the
    // safe environment; an upstream of `--config` as its `inherit_env` says):
    // else the definitions locked could differ from those they serve.
    args.common.child_safe_env = true;
    if let Some(action) = &args.action {
        return super::finish(signature(action));
    }
    let outcome = (|| {
        if let Some(config) = &args.config {
            return lock_config(&args, config);
        }
        if args.check && args.url.is_none() && args.common.command.is_empty() {
            return check_all(&args);
        }
        let (target, _) = resolve_target(
            args.url.iter().cloned().collect(),
            args.common.command.clone(),
            &[],
        )?;
        let discovery = runtime()?.block_on(discover_target(&target, &args.common))?;
        let mut lock = read_lock(&args.file)?;
        let decided = decide(&args, &target, discovery, &[], &mut lock)?;
        conclude(&args, lock, vec![decided])
    })();
    super::finish(outcome)
}

/// `lock --config FILE`: each upstream of the gateway configuration locked
/// (or checked) under its name, one after the other; the worst outcome wins
/// (drift over a match; an error stops, and nothing is written).
fn lock_config(args: &LockArgs, file: &Path) -> Result<u8, Failure> {
    let runtime = runtime()?;
    let mut all = Vec::new();
    let targets = config_targets(file, &args.common)?;
    if let Some(only) = &args.name {
        if !targets.iter().any(|(n, _, _)| n == only) {
            return Err(Failure::new(format!(
                "--name {only}: no such upstream in {}",
                file.display()
            )));
        }
    }
    let chosen = targets
        .into_iter()
        .filter(|(n, _, _)| args.name.as_ref().is_none_or(|only| only == n));
    for (name, target, common) in chosen {
        let discovery = runtime.block_on(discover_target(&target, &common))?;
        all.push((name, target, common, discovery));
    }
    // Every upstream's tools as listed now, so that a description naming
    // another upstream's tool is found on the first run, in any order.
    let run: Vec<(String, Vec<String>)> = all
        .iter()
        .map(|(name, target, _, discovery)| {
            let (found, _) = UpstreamLock::pin(identity(target), discovery);
            (name.clone(), found.tools.keys().cloned().collect())
        })
        .collect();
    let mut lock = read_lock(&args.file)?;
    let mut decided = Vec::new();
    for (name, target, common, discovery) in all {
        let mut one = args.clone();
        one.keep_approved = args.name.is_none().then(|| file.to_path_buf());
        one.name = Some(name);
        one.config = None;
        one.common = common;
        // A check goes on past an upstream the lock lacks: every one reported.
        match decide(&one, &target, discovery, &run, &mut lock) {
            Err(e) if args.check && e.code == EXIT_FAILURE => {
                eprintln!("switchboard: {}", e.message);
                decided.push(Decided::Checked(EXIT_FAILURE));
            }
            other => decided.push(other?),
        }
    }
    conclude(args, lock, decided)
}

/// What [`decide`] made of one upstream.
enum Decided {
    /// Checked (`--check`): the exit status.
    Checked(u8),
    /// Locked into the lock in memory: the line that says so once written.
    Locked(String),
}

/// Writes `lock` when an upstream was locked into it (once, whatever their
/// number, so that an error before leaves the file as it was), says what was
/// locked, and gives the worst exit status.
fn conclude(args: &LockArgs, lock: Option<Lock>, decided: Vec<Decided>) -> Result<u8, Failure> {
    let locked: Vec<&str> = decided
        .iter()
        .filter_map(|d| match d {
            Decided::Locked(line) => Some(line.as_str()),
            Decided::Checked(_) => None,
        })
        .collect();
    if let (false, Some(lock)) = (locked.is_empty(), &lock) {
        write_lock(&args.file, lock)?;
        for line in locked {
            sayln!("{line}");
        }
    }
    Ok(decided
        .iter()
        .map(|d| match d {
            Decided::Checked(code) => *code,
            Decided::Locked(_) => EXIT_OK,
        })
        .max()
        .unwrap_or(EXIT_OK))
}

/// Each upstream of the gateway configuration `file`: its name, and how the
/// gateway reaches it (its command line with its environment and directory,
/// or its URL with its headers), the rest of `base` kept.
fn config_targets(
    file: &Path,
    base: &ConnectArgs,
) -> Result<Vec<(String, Target, ConnectArgs)>, Failure> {
    let config = crate::config::load(file).map_err(|problems| {
        let lines: Vec<String> = problems
            .iter()
            .map(|p| format!("{}: {p}", file.display()))
            .collect();
        Failure::new(lines.join("\n"))
    })?;
    let mut out = Vec::new();
    for u in &config.upstreams {
        let mut common = base.clone();
        let target = match &u.target {
            crate::config::Target::Stdio {
                command,
                args: argv,
                env,
                cwd,
                inherit_env,
                ..
            } => {
                common.child_env = env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                common.child_cwd = cwd.clone();
                common.child_safe_env = !inherit_env;
                Target::Command(std::iter::once(command).chain(argv).cloned().collect())
            }
            crate::config::Target::Http { url, headers, .. } => {
                for (name, source) in headers {
                    let value = crate::config::header_value(source).map_err(|e| {
                        Failure::new(format!("upstreams.{}.headers.{name}: {e}", u.name))
                    })?;
                    common.header.push(format!("{name}: {value}"));
                }
                Target::Url(url.clone())
            }
        };
        out.push((u.name.clone(), target, common));
    }
    Ok(out)
}

fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::new(format!("cannot start the async runtime: {e}")))
}

/// Where the lock says an upstream is.
fn target_of(identity: &Identity) -> Target {
    match identity {
        Identity::Url { url } => Target::Url(url.clone()),
        Identity::Command { command, args } => {
            Target::Command(std::iter::once(command).chain(args).cloned().collect())
        }
    }
}

/// `lock --check` without a server: every upstream of the lock (or `--name`'s),
/// each reached by its identity. Exit 0 when all match, 1 when one drifted.
fn check_all(args: &LockArgs) -> Result<u8, Failure> {
    let lock = read_lock(&args.file)?.ok_or_else(|| {
        Failure::new(format!(
            "{}: no lock (run `switchboard lock` first)",
            args.file.display()
        ))
    })?;
    if let Some(n) = &args.name {
        if !lock.upstreams.contains_key(n) {
            return Err(Failure::new(format!(
                "{}: no upstream {n:?} in the lock",
                args.file.display()
            )));
        }
    }
    let runtime = runtime()?;
    let mut code = EXIT_OK;
    for (name, locked) in &lock.upstreams {
        if args.name.as_ref().is_some_and(|n| n != name) {
            continue;
        }
        let discovery =
            runtime.block_on(discover_target(&target_of(&locked.identity), &args.common))?;
        let (found, _) = UpstreamLock::pin(locked.identity.clone(), &discovery);
        let suspicious = report_suspicious(name, &found, &discovery, Some(&lock), &[]);
        strict_summary(args, name, suspicious);
        let drift = compare(locked, &found);
        if drift.is_empty() {
            sayln!("{name}: matches {}", args.file.display());
            if args.strict && suspicious > 0 {
                code = EXIT_DRIFT;
            }
        } else {
            say!("{}", render_drift(name, locked, &found, &drift));
            code = EXIT_DRIFT;
        }
    }
    Ok(code)
}

/// `lock sign` and `lock verify`.
fn signature(action: &LockAction) -> Result<u8, Failure> {
    let read = |path: &Path| {
        crate::files::read(path, crate::files::MAX_LOCK_BYTES)
            .map_err(|e| Failure::new(format!("{}: {e}", path.display())))
    };
    match action {
        LockAction::Sign { key, file } => {
            // A signature vouches for the lock: one that every command would
            // refuse (not JSON, a hash that is not its definition's) is not
            // signed.
            existing_lock(file)?;
            // The secret key itself given instead of its file: never echoed.
            let arg = key.to_string_lossy();
            if arg.trim().starts_with("ed25519-secret:") {
                return Err(Failure::new(
                    "the --key value: this is the secret key itself; give its file (from `switchboard keygen`)",
                ));
            }
            if arg.trim().starts_with("ed25519:") {
                return Err(Failure::new(format!("the --key value: {PUBLIC_GIVEN}")));
            }
            let secret = match crate::files::read(key, crate::files::MAX_KEY_BYTES) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(e) if looks_like_path(&arg) => {
                    return Err(Failure::new(format!("{}: {e}", key.display())))
                }
                Err(e) => {
                    return Err(Failure::new(format!(
                        "the --key value: {e} (not shown: it is not a file name and may be key material)"
                    )))
                }
            };
            if secret.trim().starts_with("ed25519:") {
                return Err(Failure::new(format!("{}: {PUBLIC_GIVEN}", key.display())));
            }
            warn_if_others_can_read(key);
            let sig = pin::sign(&read(file)?, &secret)
                .map_err(|e| Failure::new(format!("{}: {e}", key.display())))?;
            let sig_path = signature_path(file);
            std::fs::write(&sig_path, format!("{sig}\n"))
                .map_err(|e| Failure::new(format!("{}: {e}", sig_path.display())))?;
            sayln!("signed {} ({})", file.display(), sig_path.display());
            Ok(EXIT_OK)
        }
        LockAction::Approve {
            which,
            yes,
            strict,
            file,
            config,
            common,
        } => {
            let how = Approval {
                yes: *yes,
                strict: *strict,
            };
            // The server as the bridge and the gateway start it.
            let mut common = common.clone();
            common.child_safe_env = true;
            approve_all(file, which.as_deref(), how, config.as_deref(), &common)
        }
        LockAction::Verify { key, file } => {
            check_signature(file, key, "--key").map_err(Failure::new)?;
            // A well-signed lock is still refused as every command refuses it.
            existing_lock(file)?;
            sayln!("{}: signed by {key}", file.display());
            Ok(EXIT_OK)
        }
    }
}

/// `lock approve`: per upstream of the lock (or the one named), discover it
/// by its identity (or as the gateway configuration `config` reaches it),
/// then show and ask about each difference.
/// How `lock approve` decides: `yes` approves without asking; `strict`
/// never approves a suspicious definition.
#[derive(Debug, Clone, Copy)]
struct Approval {
    yes: bool,
    strict: bool,
}

fn approve_all(
    file: &Path,
    which: Option<&str>,
    how: Approval,
    config: Option<&Path>,
    common: &ConnectArgs,
) -> Result<u8, Failure> {
    let Approval { yes, strict } = how;
    use std::io::IsTerminal;
    // Approving what another server offers would keep an identity in the
    // lock that no longer says what was approved.
    if !common.command.is_empty() {
        return Err(Failure::new(
            "approve reaches each upstream by the identity the lock records (or as `--config FILE` does), not `-- CMD`: to lock another server, run `switchboard lock -- CMD`",
        ));
    }
    let mut lock = read_lock(file)?.ok_or_else(|| {
        Failure::new(format!(
            "{}: no lock (run `switchboard lock` first)",
            file.display()
        ))
    })?;
    let (only_upstream, only_entry) = match which {
        None => (None, None),
        Some(w) => match w.split_once("__") {
            Some((u, e)) => (Some(u), Some(e)),
            None => (Some(w), None),
        },
    };
    if let Some(u) = only_upstream {
        if !lock.upstreams.contains_key(u) {
            return Err(Failure::new(format!(
                "{}: no upstream {u:?} in the lock",
                file.display()
            )));
        }
    }
    if !yes && !std::io::stdin().is_terminal() {
        return Err(Failure::new(
            "approve asks at a terminal; in a script pass --yes to approve every difference",
        ));
    }
    let configured = match config {
        Some(c) => Some(config_targets(c, common)?),
        None => None,
    };
    let runtime = runtime()?;
    let names: Vec<String> = lock
        .upstreams
        .keys()
        .filter(|n| only_upstream.is_none_or(|u| u == n.as_str()))
        .cloned()
        .collect();
    let (mut approved, mut left) = (0usize, 0usize);
    // An upstream of the configuration the lock lacks is not approved here:
    // `lock --config` locks it (and the gateway refuses to start without).
    if let (Some(all), Some(c), None) = (&configured, config, only_upstream) {
        for (n, _, _) in all
            .iter()
            .filter(|(n, _, _)| !lock.upstreams.contains_key(n))
        {
            sayln!(
                "{n}: not in {} (lock it: `switchboard lock --config {} --file {} --name {n}`)",
                file.display(),
                c.display(),
                file.display()
            );
            left += 1;
        }
    }
    for name in names {
        let locked = lock.upstreams.get_mut(&name).expect("listed above");
        let (target, reach) = match (&configured, config) {
            (Some(all), Some(c)) => {
                let Some((_, target, reach)) = all.iter().find(|(n, _, _)| *n == name) else {
                    return Err(Failure::new(format!(
                        "{}: no upstream {name:?} (locked in {})",
                        c.display(),
                        file.display()
                    )));
                };
                // Approving definitions of another server than the locked one
                // would keep an identity that no longer says what was approved.
                if identity(target) != locked.identity {
                    return Err(Failure::new(format!(
                        "{name}: {} reaches {}, the lock records {}: lock it again (`switchboard lock --config {} --file {} --name {name}`)",
                        c.display(),
                        show_identity(&identity(target)),
                        show_identity(&locked.identity),
                        c.display(),
                        file.display()
                    )));
                }
                (target.clone(), reach.clone())
            }
            _ => (target_of(&locked.identity), common.clone()),
        };
        let discovery = runtime.block_on(discover_target(&target, &reach))?;
        let (found, _) = UpstreamLock::pin(locked.identity.clone(), &discovery);
        if let Some(e) = only_entry {
            let known = |u: &UpstreamLock| {
                u.tools.contains_key(e)
                    || u.prompts.contains_key(e)
                    || u.resource_templates.contains_key(e)
            };
            if !known(locked) && !known(&found) {
                return Err(Failure::new(format!(
                    "{name}: no entry {e:?} in the lock or in what the server lists"
                )));
            }
        }
        let drift: Vec<Drift> = compare(locked, &found)
            .into_iter()
            .filter(|d| only_entry.is_none_or(|e| e == d.name))
            .collect();
        if !drift.is_empty() {
            sayln!("{name}: {} difference(s)", drift.len());
        }
        let others = other_tools(&name, Some(&lock), &[]);
        let others: Vec<&str> = others.iter().map(String::as_str).collect();
        let locked = lock.upstreams.get_mut(&name).expect("listed above");
        for d in &drift {
            say!("{}", visible(&render_one(d)));
            // What a reviewer must see before approving it.
            let suspicious = match &d.change {
                Change::Added { now } | Change::Changed { now, .. } => findings(now, &others),
                Change::Removed { .. } => Vec::new(),
            };
            for f in &suspicious {
                print_finding(&name, d.kind, &d.name, f);
            }
            if strict && !suspicious.is_empty() {
                sayln!("  not approved: suspicious (--strict)");
                continue;
            }
            if yes || ask("approve this change?")? {
                pin::approve(locked, &found, d);
                approved += 1;
            }
        }
        // What is still not as approved: refused, or another entry than the
        // one named.
        let remaining = compare(locked, &found).len();
        if remaining == 0 {
            if drift.is_empty() {
                sayln!("{name}: matches {}", file.display());
            }
        } else {
            sayln!("{name}: {remaining} difference(s) left unapproved");
            left += remaining;
        }
    }
    if approved > 0 {
        write_lock(file, &lock)?;
        sayln!("{approved} change(s) approved into {}", file.display());
        if signature_path(file).exists() {
            eprintln!(
                "switchboard: {} no longer matches its signature: sign it again (`switchboard lock sign`)",
                file.display()
            );
        }
    }
    Ok(if left > 0 { EXIT_DRIFT } else { EXIT_OK })
}

/// Asks a yes/no question at the terminal; anything but `y`/`yes` is no.
fn ask(question: &str) -> Result<bool, Failure> {
    use std::io::Write;
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .map_err(|e| Failure::new(format!("cannot read the answer: {e}")))?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

/// Where a lock's signature is kept: `FILE.sig`.
pub fn signature_path(lock: &Path) -> PathBuf {
    let mut name = lock.as_os_str().to_owned();
    name.push(".sig");
    PathBuf::from(name)
}

/// Checks the lock at `file` against its `FILE.sig` and the public key `key`
/// (a file, or the key text itself), given as `flag` (`--key`, `--lock-key`).
/// Errors: one line naming what is wrong (the key's file or "the FLAG value",
/// the lock, or its signature) and why; key material is never printed.
pub fn check_signature(file: &Path, key: &str, flag: &str) -> Result<(), String> {
    let public = public_key(key, flag)?;
    let lock = crate::files::read(file, crate::files::MAX_LOCK_BYTES)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let sig_path = signature_path(file);
    let sig = match crate::files::read_text(&sig_path, crate::files::MAX_KEY_BYTES) {
        Ok(s) => Some(s),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{}: {e}", sig_path.display())),
    };
    pin::verify(&lock, sig.as_deref(), &public).map_err(|e| match e {
        // The key was checked above: what is malformed is the signature.
        pin::SignatureError::Malformed(_) => format!("{}: {e}", sig_path.display()),
        _ => format!("{}: {e}", file.display()),
    })
}

/// What to say of a public key given where the secret key belongs.
const PUBLIC_GIVEN: &str = "this is a public key, which verifies; a lock is signed with the secret key's file (FILE.key from `switchboard keygen`)";

/// Says so on stderr when the secret key `path` may be read by others than
/// its owner (`keygen` writes it 0600); signing goes on, as a key mounted
/// from a secret store may well be shared read-only on purpose.
fn warn_if_others_can_read(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(path) {
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            eprintln!(
                "switchboard: warning: {} is a secret key others may read (mode {mode:o}): `chmod 600 {}`",
                path.display(),
                path.display()
            );
        }
    }
}

/// What to say of a secret key given where the public key belongs.
const SECRET_GIVEN: &str = "this is a secret key; give the public key (FILE.pub or ed25519:…)";

/// The public key text of the argument `key` of `flag`: the key itself
/// (`ed25519:…`) or a file holding it. Errors name the file, or "the FLAG
/// value", never the key's text; a secret key is told as such.
fn public_key(key: &str, flag: &str) -> Result<String, String> {
    let value = format!("the {flag} value");
    let given = key.trim();
    if given.starts_with("ed25519-secret:") {
        return Err(format!("{value}: {SECRET_GIVEN}"));
    }
    let (text, whose) = if given.starts_with("ed25519:") {
        (given.to_owned(), value)
    } else {
        match crate::files::read_text(Path::new(key), crate::files::MAX_KEY_BYTES) {
            Ok(text) => (text, key.to_owned()),
            Err(e) if looks_like_path(key) => return Err(format!("{key}: {e}")),
            Err(e) => {
                return Err(format!(
                    "{value}: {e} (not shown: it is not a file name and may be key material)"
                ))
            }
        }
    };
    if text.trim().starts_with("ed25519-secret:") {
        return Err(format!("{whose}: {SECRET_GIVEN}"));
    }
    pin::check_public(&text).map_err(|e| format!("{whose}: {e}"))?;
    Ok(text)
}

/// Whether a key argument that is no readable file may be named in an error:
/// a file name (no spaces, controls or `:`, and not a long run of base64,
/// which a pasted key is).
fn looks_like_path(arg: &str) -> bool {
    let base64ish = arg.len() >= 32
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
    !arg.is_empty()
        && arg.len() <= 4096
        && !base64ish
        && !arg
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == ':')
}

/// `switchboard keygen`.
#[derive(Debug, clap::Args)]
pub struct KeygenArgs {
    /// Write PREFIX.key (the secret key, readable by you alone) and PREFIX.pub.
    #[arg(long, value_name = "PREFIX", default_value = "switchboard")]
    pub out: PathBuf,
    /// Replace PREFIX.key and PREFIX.pub if they exist (without it, an
    /// existing one is refused). The old key is lost: a lock it signed no
    /// longer verifies against the new PREFIX.pub.
    #[arg(long)]
    pub force: bool,
}

/// Why `keygen` does not replace `existing` (a key file it would write):
/// names it and the flag that would.
fn key_exists(existing: &Path) -> Failure {
    Failure::new(format!(
        "{}: File exists: not replaced (--force replaces it; the old key is then lost, and a lock it signed no longer verifies)",
        existing.display()
    ))
}

/// Runs `switchboard keygen`: a new Ed25519 key pair for signing locks; an
/// existing key file (secret or public) is refused, unless `--force`, which
/// replaces both.
pub fn keygen(args: KeygenArgs) -> std::process::ExitCode {
    let outcome = (|| {
        let with = |ext: &str| {
            let mut p = args.out.as_os_str().to_owned();
            p.push(ext);
            PathBuf::from(p)
        };
        let (secret_path, public_path) = (with(".key"), with(".pub"));
        let fail = |p: &Path, e: std::io::Error| Failure::new(format!("{}: {e}", p.display()));
        // Checked before anything is written: neither file is replaced
        // without --force (a dangling link counts as existing).
        let exists = |path: &Path| match std::fs::symlink_metadata(path) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(fail(path, e)),
        };
        for path in [&secret_path, &public_path] {
            if exists(path)? && !args.force {
                return Err(key_exists(path));
            }
        }
        let (secret, public) =
            pin::generate().map_err(|e| Failure::new(format!("no randomness: {e}")))?;
        for path in [&secret_path, &public_path] {
            if args.force && exists(path)? {
                // Removed, then created anew: the key 0600, neither written
                // through a link.
                std::fs::remove_file(path).map_err(|e| fail(path, e))?;
            }
        }
        {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&secret_path)
                .map_err(|e| match e.kind() {
                    // Created meanwhile by another.
                    std::io::ErrorKind::AlreadyExists => key_exists(&secret_path),
                    _ => fail(&secret_path, e),
                })?;
            writeln!(f, "{secret}").map_err(|e| fail(&secret_path, e))?;
        }
        std::fs::write(&public_path, format!("{public}\n")).map_err(|e| fail(&public_path, e))?;
        if let Err(e) = crate::to_stdout(format!("{public}\n").as_bytes()) {
            eprintln!(
                "switchboard: the public key was not printed (stdout: {e}); it is in {}",
                public_path.display()
            );
        }
        eprintln!(
            "switchboard: wrote {} (secret: keep it out of the repository) and {}",
            secret_path.display(),
            public_path.display()
        );
        Ok(EXIT_OK)
    })();
    super::finish(outcome)
}

/// The CLI's options, declaring the client capabilities a bridge or gateway
/// declares to its upstreams ([`switchboard_gateway::relayed_capabilities`]):
/// a server that offers tools by its client's capabilities offers the lock
/// what it offers them. The lock only lists: it refuses sampling and
/// elicitation, and has no roots.
fn lock_options(common: &ConnectArgs, ui: &std::sync::Arc<Ui>) -> ClientOptions {
    let refused = |method: &str| {
        let why = format!("switchboard lock only lists: it does not answer {method}");
        ErrorObject::new(code::INTERNAL_ERROR, why)
    };
    let mut options = client_options(common, ui)
        .with_sampling(move |_, _| {
            let e = refused("sampling/createMessage");
            async move { Err(e) }
        })
        .with_elicitation(move |_, _| {
            let e = refused("elicitation/create");
            async move { Err(e) }
        })
        .with_roots(|_| async {
            Ok(ListRootsResult {
                roots: Vec::new(),
                meta: None,
                extra: Default::default(),
            })
        });
    options.elicitation_url = true;
    options
}

/// Connects to `target`, lists everything, disconnects.
async fn discover_target(target: &Target, common: &ConnectArgs) -> Result<Discovery, Failure> {
    let ui = Ui::new(true);
    let mut signals = Signals::watch(&Stop::ALL, Inherited::Kept)
        .map_err(|e| Failure::new(format!("cannot watch signals: {e}")))?;
    let connection = connect(target, lock_options(common, &ui), common, &mut signals).await?;
    let outcome = tokio::select! {
        biased;
        r = discover(&connection.client) => r,
        stop = signals.next() => Err(Failure::stopped(stop)),
    };
    let outcome = match (outcome, &connection.child) {
        (Err(failure), Some(child)) => Err(with_skipped(failure, child)),
        (outcome, _) => outcome,
    };
    connection.close(&mut signals).await;
    outcome
}

/// Every page of each list the server declares.
async fn discover(client: &Client) -> Result<Discovery, Failure> {
    let caps = client.server_capabilities();
    let mut d = Discovery {
        instructions: client.instructions(),
        ..Discovery::default()
    };
    if caps.tools.is_some() {
        d.tools = list_pages(client, "tools/list", "tools").await?.1;
    }
    if caps.prompts.is_some() {
        d.prompts = list_pages(client, "prompts/list", "prompts").await?.1;
    }
    if caps.resources.is_some() {
        d.resource_templates = list_pages(client, "resources/templates/list", "resourceTemplates")
            .await?
            .1;
    }
    Ok(d)
}

/// Checks `lock` (the lock file's, `None` without one), or locks the
/// upstream into it (in memory: [`conclude`] writes it); prints what a
/// reviewer reads. `run`: the tool names of each upstream locked in this run
/// (`--config`), besides the lock's.
fn decide(
    args: &LockArgs,
    target: &Target,
    discovery: Discovery,
    run: &[(String, Vec<String>)],
    lock: &mut Option<Lock>,
) -> Result<Decided, Failure> {
    let existing = lock.as_ref();
    let name = match (&args.name, existing) {
        (Some(n), _) => n.clone(),
        (None, Some(lock)) if lock.upstreams.len() == 1 => {
            lock.upstreams.keys().next().cloned().unwrap_or_default()
        }
        (None, _) => default_name(target),
    };
    // `approve UPSTREAM__NAME` splits at the first `__`: a name must not hold one.
    let valid = (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && !name.contains("__");
    if !valid {
        return Err(Failure::new(format!(
            "--name {name:?}: 1 to 32 letters, digits, '-' or '_', without \"__\""
        )));
    }
    let (mut found, malformed) = UpstreamLock::pin(identity(target), &discovery);
    let suspicious = report_suspicious(&name, &found, &discovery, existing, run);
    if args.check {
        strict_summary(args, &name, suspicious);
        let Some(locked) = existing.and_then(|l| l.upstreams.get(&name)) else {
            let why = match existing {
                None => "no lock".to_owned(),
                Some(_) => format!("no upstream {name:?} in the lock"),
            };
            return Err(Failure::new(format!(
                "{}: {why} (run `switchboard lock` first)",
                args.file.display()
            )));
        };
        let drift = compare(locked, &found);
        let identity_changed = locked.identity != found.identity;
        // An entry listed twice (or nameless) is not as approved, whichever
        // copy the lock's table kept: the bridge serves neither.
        if !malformed.is_empty() {
            sayln!("{name}: drifted (the server's lists are malformed)");
            for m in &malformed {
                sayln!("  ! {}", visible(&m.message));
            }
            return Ok(Decided::Checked(EXIT_DRIFT));
        }
        if drift.is_empty() && !identity_changed {
            sayln!("{name}: matches {}", args.file.display());
            return Ok(Decided::Checked(if args.strict && suspicious > 0 {
                EXIT_DRIFT
            } else {
                EXIT_OK
            }));
        }
        say!("{}", render_drift(&name, locked, &found, &drift));
        return Ok(Decided::Checked(EXIT_DRIFT));
    }
    if !malformed.is_empty() {
        let what: Vec<&str> = malformed.iter().map(|m| m.message.as_str()).collect();
        return Err(Failure::new(format!(
            "{name}: the server's lists are malformed ({}): {} not written",
            what.join("; "),
            args.file.display()
        )));
    }
    if args.strict && suspicious > 0 {
        return Err(Failure {
            code: EXIT_DRIFT,
            message: format!(
                "{suspicious} suspicious definition(s) (--strict): {} not written",
                args.file.display()
            ),
        });
    }
    // Locking again over an entry that differs replaces an approval: say what
    // changes, and that a signature no longer holds. Not when locking a whole
    // configuration (adding an upstream must not re-approve the others).
    if let Some(old) = existing.and_then(|l| l.upstreams.get(&name)) {
        let drift = compare(old, &found);
        let differs = !drift.is_empty() || old.identity != found.identity;
        if let Some(config) = &args.keep_approved {
            if !differs {
                sayln!("{name}: matches {}", args.file.display());
                return Ok(Decided::Checked(EXIT_OK));
            }
            say!("{}", render_drift(&name, old, &found, &drift));
            sayln!(
                "{name}: kept as approved; to approve what it offers now: `switchboard lock --config {} --file {} --name {name}`",
                config.display(),
                args.file.display()
            );
            return Ok(Decided::Checked(EXIT_DRIFT));
        }
        if differs {
            say!(
                "{}",
                render_drift(&name, old, &found, &drift).replacen("drifted", "replaced", 1)
            );
            if signature_path(&args.file).exists() {
                eprintln!(
                    "switchboard: {} no longer matches its signature: sign it again (`switchboard lock sign`)",
                    args.file.display()
                );
            }
        }
    }
    let lock = lock.get_or_insert_with(|| Lock {
        version: LOCK_VERSION,
        upstreams: Default::default(),
    });
    let counts = format!(
        "{} tools, {} prompts, {} resource templates",
        found.tools.len(),
        found.prompts.len(),
        found.resource_templates.len()
    );
    // The operator's word (annotations, risk) stays on the entries it was on.
    if let Some(old) = lock.upstreams.get(&name) {
        found.keep_operator(old);
    }
    if let Some(what) = credential_in(target) {
        eprintln!(
            "switchboard: warning: {name}: the URL carries {what}, which the lock records as written (and a signature vouches for, and replicas share): give it in a header instead (`--header`, or the configuration's `headers`)"
        );
    }
    lock.upstreams.insert(name.clone(), found);
    Ok(Decided::Locked(format!(
        "{name}: {counts} locked in {}",
        args.file.display()
    )))
}

/// With `--strict`, a check's reason to fail besides drift, on stderr as the
/// write mode says it: `NAME: N suspicious definition(s) (--strict)`.
fn strict_summary(args: &LockArgs, name: &str, suspicious: usize) {
    if args.strict && suspicious > 0 {
        eprintln!("switchboard: {name}: {suspicious} suspicious definition(s) (--strict)");
    }
}

/// Prints each suspicious finding on stderr; returns how many definitions had
/// one. Names of the other upstreams' tools, in the lock and in this run
/// (`run`: each upstream's tool names as listed now), are what a description
/// must not name.
fn report_suspicious(
    name: &str,
    found: &UpstreamLock,
    discovery: &Discovery,
    lock: Option<&Lock>,
    run: &[(String, Vec<String>)],
) -> usize {
    let others = other_tools(name, lock, run);
    let others: Vec<&str> = others.iter().map(String::as_str).collect();
    let mut entries: Vec<(Kind, &str, &Value)> = Vec::new();
    if let Some(i) = &found.instructions {
        entries.push((Kind::Instructions, "", &i.definition));
    }
    for (kind, table, listed) in [
        (Kind::Tool, &found.tools, &discovery.tools),
        (Kind::Prompt, &found.prompts, &discovery.prompts),
        (
            Kind::ResourceTemplate,
            &found.resource_templates,
            &discovery.resource_templates,
        ),
    ] {
        for (n, p) in table {
            entries.push((kind, n, &p.definition));
        }
        // The lock keeps no `_meta`, but a host may show its text: read it
        // as listed.
        for entry in listed.iter().filter(|e| e.get("_meta").is_some()) {
            let n = entry.get(kind.key()).and_then(Value::as_str).unwrap_or("");
            entries.push((kind, n, entry));
        }
    }
    let mut flagged = 0;
    let mut seen = std::collections::BTreeSet::new();
    for (kind, entry, definition) in entries {
        let mut list = findings(definition, &others);
        if definition.get("_meta").is_some() {
            // The listed entry again: only what its `_meta` holds.
            list.retain(|f| f.at.starts_with("/_meta"));
        }
        if !list.is_empty() && seen.insert((kind.noun(), entry)) {
            flagged += 1;
        }
        for f in list {
            print_finding(name, kind, entry, &f);
        }
    }
    flagged
}

/// One suspicious finding, on stderr: `suspicious: UPSTREAM: KIND ENTRY
/// POINTER: RULE: DETAIL`.
fn print_finding(name: &str, kind: Kind, entry: &str, f: &pin::Finding) {
    let what = if entry.is_empty() {
        kind.noun().to_owned()
    } else {
        format!("{} {}", kind.noun(), render::one_line(entry))
    };
    eprintln!(
        "{}",
        visible(&format!(
            "suspicious: {name}: {what} {}: {}: {}",
            if f.at.is_empty() { "/" } else { &f.at },
            f.rule.label(),
            f.detail
        ))
    );
}

/// The tool names a description of upstream `name` must not name: the other
/// upstreams' (in the lock, and in this run: `run`), by their own and their
/// served names.
fn other_tools(name: &str, lock: Option<&Lock>, run: &[(String, Vec<String>)]) -> Vec<String> {
    let locked = lock
        .iter()
        .flat_map(|l| l.upstreams.iter())
        .map(|(n, u)| (n, u.tools.keys().collect::<Vec<_>>()));
    let now = run.iter().map(|(n, tools)| (n, tools.iter().collect()));
    let mut others: Vec<String> = Vec::new();
    for (n, tools) in locked.chain(now) {
        if n != name {
            for t in tools {
                others.push(t.clone());
                others.push(format!("{n}__{t}"));
            }
        }
    }
    others.sort();
    others.dedup();
    others
}

/// The drift report: one heading, a line per entry, the details indented; a
/// claim of more safety marked `!`.
fn render_drift(
    name: &str,
    locked: &UpstreamLock,
    found: &UpstreamLock,
    drift: &[Drift],
) -> String {
    let mut out = String::new();
    let n = drift.len() + usize::from(locked.identity != found.identity);
    out.push_str(&format!("{name}: drifted ({n} difference(s))\n"));
    if locked.identity != found.identity {
        out.push_str(&format!(
            "  the server is not the one locked: {} → {}\n",
            show_identity(&locked.identity),
            show_identity(&found.identity)
        ));
    }
    for d in drift {
        out.push_str(&render_one(d));
    }
    visible(&out)
}

/// One difference: a line, the details indented.
fn render_one(d: &Drift) -> String {
    let mut out = String::new();
    let what = if d.name.is_empty() {
        d.kind.noun().to_owned()
    } else {
        format!("{} {}", d.kind.noun(), render::one_line(&d.name))
    };
    match &d.change {
        Change::Added { .. } => out.push_str(&format!("  + {what}: new, not approved\n")),
        Change::Removed { .. } => out.push_str(&format!("  - {what}: gone\n")),
        Change::Changed { was, now } => {
            out.push_str(&format!("  ~ {what}: changed\n"));
            for line in describe(was, now) {
                let mark = match line.severity {
                    Severity::Warning => "!",
                    Severity::Notice => " ",
                };
                out.push_str(&format!("    {mark} {}\n", line.text));
            }
        }
    }
    out
}

/// A server's text as a reviewer must see it: [`render::printable`], and
/// besides, the characters no terminal shows (`pin::invisible`: Unicode tag
/// characters, zero-width and other invisible characters) as `\u{..}` escapes.
fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in render::printable(text).chars() {
        if pin::invisible(c).is_some() {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

fn show_identity(i: &Identity) -> String {
    match i {
        Identity::Command { command, args } => {
            format!(
                "`{}`",
                std::iter::once(command)
                    .chain(args)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        }
        Identity::Url { url } => url.clone(),
    }
}

fn identity(target: &Target) -> Identity {
    match target {
        Target::Url(url) => Identity::Url { url: url.clone() },
        Target::Command(c) => Identity::Command {
            command: c[0].clone(),
            args: c[1..].to_vec(),
        },
    }
}

/// What in a URL target looks like a credential (userinfo, or a query
/// parameter named like one), which a lock would record as written.
fn credential_in(target: &Target) -> Option<String> {
    const SECRET_WORDS: &[&str] = &[
        "token",
        "key",
        "secret",
        "pass",
        "pwd",
        "auth",
        "sig",
        "credential",
        "session",
        "code",
    ];
    let Target::Url(url) = target else {
        return None;
    };
    let url = url::Url::parse(url).ok()?;
    let mut found = Vec::new();
    if url.password().is_some() || !url.username().is_empty() {
        found.push("credentials before its host (user:password@)".to_owned());
    }
    let mut names: Vec<String> = url
        .query_pairs()
        .map(|(k, _)| k.into_owned())
        .filter(|k| {
            let k = k.to_ascii_lowercase();
            SECRET_WORDS.iter().any(|w| k.contains(w))
        })
        .collect();
    names.dedup();
    found.extend(names.iter().map(|k| format!("the query parameter {k:?}")));
    (!found.is_empty()).then(|| found.join(" and "))
}

/// A name for an upstream nobody named: the URL's host, or the program (or,
/// for a launcher such as `npx` or `uvx`, the package it runs), in letters,
/// digits, `-` and `_`.
fn default_name(target: &Target) -> String {
    const LAUNCHERS: &[&str] = &[
        "npx", "uvx", "uv", "pipx", "bunx", "node", "python", "python3", "deno", "bun",
    ];
    let raw = match target {
        Target::Url(url) => url
            .parse::<http::Uri>()
            .ok()
            .and_then(|u| u.host().map(str::to_owned))
            .unwrap_or_default(),
        Target::Command(c) => {
            let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_owned();
            let program = base(&c[0]);
            if LAUNCHERS.contains(&program.as_str()) {
                c[1..]
                    .iter()
                    .find(|a| !a.starts_with('-') && *a != "run")
                    .map(|a| base(a.split('@').find(|p| !p.is_empty()).unwrap_or(a)))
                    .unwrap_or(program)
            } else {
                program
            }
        }
    };
    let mut name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(32)
        .collect();
    while name.contains("__") {
        name = name.replace("__", "_");
    }
    if name.is_empty() {
        "server".to_owned()
    } else {
        name
    }
}

/// The lock at `path`, checked as [`read_lock`] does; no file is an error.
fn existing_lock(path: &Path) -> Result<Lock, Failure> {
    read_lock(path)?.ok_or_else(|| {
        Failure::new(format!(
            "{}: no lock (run `switchboard lock` first)",
            path.display()
        ))
    })
}

/// The lock at `path`, `None` when there is no file.
fn read_lock(path: &Path) -> Result<Option<Lock>, Failure> {
    let text = match crate::files::read_text(path, crate::files::MAX_LOCK_BYTES) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Failure::new(format!("{}: {e}", path.display()))),
    };
    Lock::parse(&text)
        .map(Some)
        .map_err(|e| Failure::new(format!("{}: {e}", path.display())))
}

/// Writes the lock (pretty JSON, members in order, a final newline) through a
/// temporary file renamed over the old one, so a reader never sees half a lock.
fn write_lock(path: &Path, lock: &Lock) -> Result<(), Failure> {
    let fail = |e: std::io::Error| Failure {
        code: EXIT_FAILURE,
        message: format!("{}: {e}", path.display()),
    };
    let mut text = serde_json::to_string_pretty(lock).expect("plain data");
    text.push('\n');
    let tmp = path.with_extension("lock.tmp");
    std::fs::write(&tmp, text).map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server's entry name with a line break cannot start a line of the
    /// report (a forged `matches` line).
    #[test]
    fn an_entry_name_stays_on_its_line() {
        let d = Drift {
            kind: Kind::Tool,
            name: "new\nfiles: matches switchboard.lock\r".into(),
            change: Change::Added {
                now: serde_json::json!({}),
            },
        };
        assert_eq!(
            render_one(&d),
            "  + tool new\\u{a}files: matches switchboard.lock\\u{d}: new, not approved\n"
        );
    }

    #[test]
    fn the_lock_declares_what_the_bridge_declares_to_its_upstreams() {
        use clap::Parser;
        #[derive(Parser)]
        struct Args {
            #[command(flatten)]
            common: ConnectArgs,
        }
        let args = Args::parse_from(["lock"]);
        let options = lock_options(&args.common, &Ui::new(true));
        assert_eq!(
            serde_json::to_value(options.capabilities()).unwrap(),
            switchboard_gateway::relayed_capabilities()
        );
    }

    #[test]
    fn credentials_in_a_url_are_found() {
        let found = |u: &str| credential_in(&Target::Url(u.to_owned()));
        assert!(found("https://u:p@h/mcp")
            .unwrap()
            .contains("user:password@"));
        assert!(found("https://tok@h/mcp").is_some());
        assert_eq!(
            found("https://u:p@h/mcp?token=1&Sig=2").unwrap(),
            "credentials before its host (user:password@) and the query parameter \"token\" and the query parameter \"Sig\""
        );
        for q in [
            "api_key=1",
            "access_token=x",
            "X-Amz-Signature=s",
            "sessionid=1",
            "Password=2",
        ] {
            assert!(found(&format!("https://h/mcp?a=1&{q}")).is_some(), "{q}");
        }
        // Must not be flagged: no query, ordinary parameters, a command.
        assert_eq!(found("https://h/mcp"), None);
        assert_eq!(found("http://127.0.0.1:8080/mcp?region=eu&limit=5"), None);
        assert_eq!(credential_in(&Target::Command(vec!["npx".into()])), None);
    }

    #[test]
    fn default_names() {
        let cmd = |s: &str| Target::Command(s.split(' ').map(str::to_owned).collect());
        assert_eq!(
            default_name(&cmd("/usr/bin/mcp-server-time --x")),
            "mcp-server-time"
        );
        assert_eq!(
            default_name(&cmd(
                "npx -y @modelcontextprotocol/server-everything@2026.8.31"
            )),
            "server-everything"
        );
        assert_eq!(default_name(&cmd("uvx mcp-server-git")), "mcp-server-git");
        assert_eq!(
            default_name(&Target::Url("http://127.0.0.1:3001/mcp".into())),
            "127-0-0-1"
        );
    }
}
