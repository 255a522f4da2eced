//! The audit trail's flags (`bridge`, `gateway`: `--audit FILE` and its
//! settings; the gateway file's `audit`), its start and end, and
//! `switchboard audit verify` (module `switchboard_gateway::audit`).
//!
//! This module must not know how records are made or sealed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use switchboard_gateway::audit::chain::{Checkpoint, Verifier};
use switchboard_gateway::audit::{self, AuditConfig};

/// The audit trail's flags, the same for bridge and gateway.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AuditArgs {
    /// Write an audit trail to FILE (JSON lines, appended; hash-chained,
    /// checked by `switchboard audit verify FILE`): one record per
    /// tools/call, prompts/get and resources/read, and per request refused
    /// by policy. A checkpoint of its head is kept in FILE.checkpoint.
    #[arg(long, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// Records carry the arguments themselves, not only their SHA-256.
    #[arg(long, requires = "audit")]
    pub audit_arguments: bool,
    /// The trail's file is rotated (FILE.1, FILE.2, …) past this many bytes.
    #[arg(long, value_name = "BYTES", requires = "audit")]
    pub audit_max_bytes: Option<u64>,
    /// Rotated files kept (0: all).
    #[arg(long, value_name = "N", requires = "audit")]
    pub audit_keep: Option<usize>,
    /// How often the checkpoint is written, in seconds (and at the end).
    #[arg(long, value_name = "SECONDS", requires = "audit")]
    pub audit_checkpoint_seconds: Option<u64>,
}

impl AuditArgs {
    /// The trail's settings: these flags over `file` (the gateway file's
    /// `audit`), when either names a trail.
    pub(crate) fn config(&self, file: Option<&AuditConfig>) -> Option<AuditConfig> {
        let mut c = match (&self.audit, file) {
            (Some(path), _) => {
                let mut c = file.cloned().unwrap_or_else(|| AuditConfig::new(path));
                c.path = path.clone();
                c
            }
            (None, Some(f)) => f.clone(),
            (None, None) => return None,
        };
        c.arguments |= self.audit_arguments;
        if let Some(n) = self.audit_max_bytes {
            c.max_bytes = n;
        }
        if let Some(n) = self.audit_keep {
            c.keep = n;
        }
        if let Some(s) = self.audit_checkpoint_seconds {
            c.checkpoint_every = Duration::from_secs(s.max(1));
        }
        Some(c)
    }
}

/// Starts the trail (metrics first, when the admin listener will serve
/// them, so that its head is on `/metrics` from the start). Errors: the
/// file cannot be written ([`audit::AuditError`]), for the caller's exit 2.
pub(crate) fn start(config: Option<AuditConfig>, metrics: bool) -> Result<(), audit::AuditError> {
    let Some(config) = config else { return Ok(()) };
    if metrics {
        switchboard_gateway::metrics::enable();
    }
    let path = config.path.display().to_string();
    audit::start(config)?;
    tracing::info!(file = %path, "audit trail: written");
    Ok(())
}

/// Writes what is queued and the checkpoint, within `bound`.
pub(crate) async fn stop(bound: Duration) {
    if let Some(a) = audit::get() {
        let flush = tokio::task::spawn_blocking(move || a.flush(bound));
        let _ = tokio::time::timeout(bound + Duration::from_millis(100), flush).await;
    }
}

/// `switchboard audit …`.
#[derive(Debug, clap::Subcommand)]
pub enum AuditCommand {
    /// Check a trail's hash chain: exit 0 intact, 1 broken (the first bad
    /// line named), 2 unreadable. Its rotated files (FILE.1, …) are read
    /// first; FILE.checkpoint is used unless --checkpoint names another.
    Verify {
        /// The trail (the file given to --audit).
        file: PathBuf,
        /// The checkpoint to check its end against.
        #[arg(long, value_name = "FILE")]
        checkpoint: Option<PathBuf>,
    },
}

/// Runs `switchboard audit …`.
pub fn run(command: AuditCommand) -> ExitCode {
    match command {
        AuditCommand::Verify { file, checkpoint } => verify(&file, checkpoint.as_deref()),
    }
}

fn verify(file: &Path, checkpoint: Option<&Path>) -> ExitCode {
    let unreadable = |what: &Path, e: &dyn std::fmt::Display| {
        eprintln!("switchboard: {}: {e}", what.display());
        ExitCode::from(2)
    };
    if !file.is_file() {
        return unreadable(file, &"no such file");
    }
    let given = checkpoint.map(Path::to_owned);
    let implied = AuditConfig::new(file).checkpoint_path();
    let cp_path = given
        .clone()
        .or_else(|| implied.is_file().then_some(implied));
    let cp = match &cp_path {
        None => None,
        Some(p) => match std::fs::read_to_string(p)
            .map_err(|e| e.to_string())
            .and_then(|t| Checkpoint::parse(&t).map_err(|e| e.to_string()))
        {
            Ok(c) => Some(c),
            Err(e) => return unreadable(p, &e),
        },
    };
    let files = match audit::files(file) {
        Ok(f) => f,
        Err(e) => return unreadable(file, &e),
    };
    let mut v = Verifier::new();
    for f in &files {
        let text = match std::fs::read(f) {
            Ok(t) => t,
            Err(e) => return unreadable(f, &e),
        };
        v.file(&f.display().to_string());
        // Split on newlines only: a line that is not UTF-8 is a bad line.
        let mut lines = text.split(|&b| b == b'\n').peekable();
        while let Some(line) = lines.next() {
            if line.is_empty() && lines.peek().is_none() {
                break;
            }
            let line = String::from_utf8_lossy(line);
            if let Err(broken) = v.line(&line, cp.as_ref()) {
                println!("broken: {broken}");
                return ExitCode::from(1);
            }
        }
    }
    match v.finish(cp.as_ref()) {
        // Older files are removed only after a rotation, which leaves a
        // rotated file: a lone file that starts later lost its beginning.
        Ok(intact) if intact.first > 0 && files.len() == 1 => {
            println!(
                "broken: {}:1: the trail starts at record {}, and no older file is here: its first records were deleted",
                file.display(),
                intact.first
            );
            ExitCode::from(1)
        }
        Ok(intact) => {
            // Records written after the checkpoint are as a trail still
            // written has them; only the next checkpoint vouches for them.
            let after = cp
                .as_ref()
                .map_or(0, |c| intact.head.count.saturating_sub(c.head.count));
            let against = match (&cp_path, after) {
                (Some(p), 0) => format!("its end matches {}", p.display()),
                (Some(p), n) => match (intact.head.count - n).checked_sub(1) {
                    Some(at) => format!(
                        "record {at} matches {}; the {n} after it were written after that checkpoint (none vouches for them)",
                        p.display()
                    ),
                    None => format!(
                        "{} names no record; the {n} were written after it (none vouches for them)",
                        p.display()
                    ),
                },
                (None, _) => "no checkpoint to check its end against (a cut-off end is not found)".to_owned(),
            };
            let from = match intact.first {
                0 => String::new(),
                n => format!(", from record {n} (the files before it are gone)"),
            };
            println!(
                "intact: {} record(s) in {} file(s){from}; {against}",
                intact.head.count - intact.first,
                files.len()
            );
            ExitCode::SUCCESS
        }
        Err(broken) => {
            println!("broken: {broken}");
            ExitCode::from(1)
        }
    }
}
