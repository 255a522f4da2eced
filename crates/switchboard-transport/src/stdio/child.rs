//! The client side of stdio: a server run as a child process.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use switchboard_protocol::codec::LineDecoder;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};
use tokio::sync::{oneshot, Notify};
use tokio::task::JoinHandle;
use tokio::time::{timeout, timeout_at, Instant};
use tracing::{debug, info, info_span, warn, Instrument};

use crate::config::TransportConfig;
use crate::handle::{CloseReason, Inbound, Receiver, Sender, STDERR_TAIL_CHARS};
use crate::line::{start, ReadEnd, Role, Skipped, Started};
use crate::log_limit::{LogLimit, LogLines, Stream};

/// Default [`ShutdownConfig::stdin_close_grace`]: 5 seconds.
pub const DEFAULT_STDIN_CLOSE_GRACE: Duration = Duration::from_secs(5);

/// Default [`ShutdownConfig::sigterm_grace`]: 5 seconds.
pub const DEFAULT_SIGTERM_GRACE: Duration = Duration::from_secs(5);

/// Default [`ChildConfig::stderr_max_line_len`]: 64 KiB (65 536 bytes).
pub const DEFAULT_STDERR_MAX_LINE_LEN: usize = 64 * 1024;

/// Default [`ChildConfig::log_limit`]: a burst of 50 lines, then 10 lines per
/// second, for each of the child's stderr and stdout.
pub const DEFAULT_LOG_LIMIT: LogLimit = LogLimit::new(50, 10);

/// How long, once a child has exited, the transport waits for the rest of its
/// stdout (and, to report its last stderr line, for its stderr) before reporting
/// [`Inbound::Closed`]: 250 ms in all.
///
/// The child's stdout and stderr normally reach end of file when it exits; the
/// window only matters when a grandchild inherited them and keeps them open.
/// Stdout after the window is dropped; stderr goes on being logged.
pub const EXIT_DRAIN: Duration = Duration::from_millis(250);

/// How long, once a child has closed its stdout, the transport waits for it to
/// exit before reporting [`CloseReason::ChildStdoutClosed`] instead of
/// [`CloseReason::ChildExited`]: 2 seconds. A child that exits closes its stdout
/// a moment before its exit is seen; this keeps that ordinary case from being
/// reported as a child that lives on without output.
pub const STDOUT_EOF_EXIT_WAIT: Duration = Duration::from_secs(2);

/// How long the end of a shutdown waits for the rest of the child's stderr to be
/// logged: 1 second. It only matters when a grandchild holds stderr open.
const STDERR_DRAIN: Duration = Duration::from_secs(1);

/// How to stop a child (MCP §3 "Lifecycle", shutdown, stdio: close stdin, then
/// SIGTERM, then SIGKILL; R5 "Transports → stdio": close stdin, wait, force-kill).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShutdownConfig {
    /// How long to wait for the child to exit after its stdin is closed, before
    /// sending SIGTERM. Default [`DEFAULT_STDIN_CLOSE_GRACE`] (5 s).
    pub stdin_close_grace: Duration,
    /// How long to wait after SIGTERM before sending SIGKILL. Default
    /// [`DEFAULT_SIGTERM_GRACE`] (5 s).
    pub sigterm_grace: Duration,
}

impl Default for ShutdownConfig {
    fn default() -> Self {
        ShutdownConfig {
            stdin_close_grace: DEFAULT_STDIN_CLOSE_GRACE,
            sigterm_grace: DEFAULT_SIGTERM_GRACE,
        }
    }
}

/// Which of our environment variables a child inherits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inherit {
    /// A short set that holds no secrets, as the official SDKs' clients
    /// give: `HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM`, `USER`, `TMPDIR`
    /// and the locale (`LANG`, `LANGUAGE`, `LC_*`).
    Safe,
    /// All of them (a sidecar whose server reads the pod's environment).
    All,
    /// None: only [`ChildConfig::env`].
    Nothing,
}

impl Inherit {
    /// Whether `name` is in the [`Inherit::Safe`] set.
    pub fn is_safe(name: &OsStr) -> bool {
        const SAFE: [&str; 9] = [
            "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "TMPDIR", "LANG", "LANGUAGE",
        ];
        let Some(name) = name.to_str() else {
            return false;
        };
        SAFE.contains(&name) || name.starts_with("LC_")
    }
}

/// What to run, and how ([`spawn`]).
///
/// ```
/// use std::time::Duration;
/// use switchboard_transport::stdio::ChildConfig;
///
/// let mut config = ChildConfig::new("echo", "cat").arg("-u").env("LC_ALL", "C");
/// config.shutdown.sigterm_grace = Duration::from_secs(1);
/// assert_eq!(config.shutdown.stdin_close_grace, Duration::from_secs(5));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChildConfig {
    /// The child's name, for logs and spans (e.g. the upstream's configured name).
    pub name: String,
    /// The program: a path, or a name looked up in `PATH`.
    pub command: OsString,
    /// The arguments, without the program.
    pub args: Vec<OsString>,
    /// Variables set in the child's environment, over what it inherits
    /// ([`inherit`](Self::inherit)), in order; a later entry overrides an
    /// earlier one.
    pub env: Vec<(OsString, OsString)>,
    /// Which of our variables the child inherits. Default [`Inherit::Safe`]:
    /// a secret in our environment (a token meant for another upstream's
    /// headers) never reaches a server that was not given it.
    pub inherit: Inherit,
    /// The child's working directory; `None` (default) inherits ours.
    pub current_dir: Option<PathBuf>,
    /// The longest stderr line logged whole, in bytes; a longer line is logged as
    /// dropped, with its length. Default [`DEFAULT_STDERR_MAX_LINE_LEN`] (64 KiB).
    pub stderr_max_line_len: usize,
    /// How many log events the child's output may cause, for each stream on its
    /// own: its stderr lines (each logged at info) and its stdout lines that are
    /// not valid JSON-RPC messages (each logged at warn). Lines beyond the limit
    /// are not logged; their count (and how long the suppression lasted) is, in
    /// one event when logging resumes, at the latest every
    /// [`LOG_SUMMARY_INTERVAL`](crate::stdio::LOG_SUMMARY_INTERVAL) (5 s), and when
    /// the stream ends. Unlogged lines are still kept as the stderr tail of
    /// [`CloseReason::ChildExited`] and counted by
    /// [`ChildProcess::skipped_lines`]. Default [`DEFAULT_LOG_LIMIT`] (a burst of
    /// 50 lines, then 10 lines per second).
    pub log_limit: LogLimit,
    /// How [`ChildProcess::shutdown`] stops it.
    pub shutdown: ShutdownConfig,
    /// The Linux scheduling policy the child starts with. Default
    /// [`ChildScheduling::Inherit`].
    pub scheduling: ChildScheduling,
}

/// The scheduling policy a child process starts with (Linux `sched(7)`; on other
/// systems both are [`Inherit`](Self::Inherit)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ChildScheduling {
    /// Ours (normally `SCHED_OTHER`).
    #[default]
    Inherit,
    /// `SCHED_BATCH` instead of `SCHED_OTHER`: the same CPU share at the same
    /// nice value, but when it wakes the child does not preempt the task
    /// running on its CPU; it runs when that task sleeps, or on an idle CPU.
    /// For a server that works only when a request arrives, so that the
    /// process handing it requests (a bridge writing to many children) is not
    /// switched out for the child it just woke. The child starts in it (the
    /// thread that spawns it takes it for the length of the spawn, and a new
    /// process starts in its parent thread's policy), so every thread the
    /// child starts inherits it; no code runs between fork and exec, so the
    /// child is still started without copying our address space
    /// (`posix_spawn`). Only from `SCHED_OTHER`: when
    /// we run in another policy (`SCHED_IDLE`, a real-time one), the child
    /// inherits ours, never a class above it. When the system refuses it (it
    /// does not for an unprivileged process on Linux, but a sandbox may), the
    /// child starts with ours and a warning is logged.
    Batch,
}

impl ChildConfig {
    /// A child named `name` running `command` with no arguments, the safe set
    /// of our environment ([`Inherit::Safe`]), our working directory, and the
    /// default limits and shutdown graces.
    pub fn new(name: impl Into<String>, command: impl AsRef<OsStr>) -> Self {
        ChildConfig {
            name: name.into(),
            command: command.as_ref().to_owned(),
            args: Vec::new(),
            env: Vec::new(),
            inherit: Inherit::Safe,
            current_dir: None,
            stderr_max_line_len: DEFAULT_STDERR_MAX_LINE_LEN,
            log_limit: DEFAULT_LOG_LIMIT,
            shutdown: ShutdownConfig::default(),
            scheduling: ChildScheduling::Inherit,
        }
    }

    /// Adds one argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Adds one environment variable.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// The executable [`spawn`] would run, found by `execvp(3)`'s path search: a
    /// `command` with a `/` is a path (relative to our working directory), any
    /// other is looked up in the child's `PATH` (the last `PATH` of
    /// [`env`](Self::env), else ours). It checks that the file is an executable
    /// file, not what is in it: a script with no `#!` line passes, and then its
    /// spawn fails ("Exec format error"; unlike `execvp`, the spawn does not run
    /// such a file with `/bin/sh`). `Ok(None)` when it cannot be told
    /// beforehand (a relative path with [`current_dir`](Self::current_dir) set,
    /// or no `PATH` to search); a caller that would rather fail at once than
    /// supervise a child that can never start (a typo in a command line) calls
    /// this first.
    ///
    /// # Errors
    /// `NotFound` (no such file, or not in any `PATH` directory) or
    /// `PermissionDenied` (found, but not an executable file), with the command
    /// in the message.
    pub fn find_program(&self) -> io::Result<Option<PathBuf>> {
        use std::os::unix::fs::PermissionsExt;
        let runnable = |m: &std::fs::Metadata| m.is_file() && m.permissions().mode() & 0o111 != 0;
        let command = std::path::Path::new(&self.command);
        let shown = command.display();
        if self.command.as_encoded_bytes().contains(&b'/') {
            if command.is_relative() && self.current_dir.is_some() {
                return Ok(None);
            }
            return match std::fs::metadata(command) {
                Err(e) => Err(io::Error::new(e.kind(), format!("{shown}: {e}"))),
                Ok(m) if runnable(&m) => Ok(Some(command.to_owned())),
                Ok(_) => Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("{shown}: not an executable file"),
                )),
            };
        }
        let path = match self.env.iter().rev().find(|(k, _)| k == "PATH") {
            Some((_, v)) => Some(v.clone()),
            None if self.inherit == Inherit::Nothing => None,
            None => std::env::var_os("PATH"),
        };
        let Some(path) = path else {
            return Ok(None);
        };
        let found = std::env::split_paths(&path)
            .map(|dir| dir.join(command))
            .find(|candidate| std::fs::metadata(candidate).is_ok_and(|m| runnable(&m)));
        match found {
            Some(p) => Ok(Some(p)),
            None => Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{shown}: not found in PATH"),
            )),
        }
    }
}

/// The step of [`ChildProcess::shutdown`] at which the child was seen to exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownStep {
    /// It had already exited on its own; nothing was sent.
    AlreadyExited,
    /// After its stdin was closed, within
    /// [`ShutdownConfig::stdin_close_grace`]; no signal was sent.
    StdinClosed,
    /// After SIGTERM, within [`ShutdownConfig::sigterm_grace`].
    Sigterm,
    /// After SIGKILL.
    Sigkill,
}

/// How a child ended under [`ChildProcess::shutdown`] (or when its handle was
/// dropped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Its exit status, as reaped (`waitpid`).
    pub status: ExitStatus,
    /// The step at which it exited.
    pub step: ShutdownStep,
}

impl fmt::Display for ShutdownReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let step = match self.step {
            ShutdownStep::AlreadyExited => "had already exited",
            ShutdownStep::StdinClosed => "exited after stdin was closed",
            ShutdownStep::Sigterm => "exited after SIGTERM",
            ShutdownStep::Sigkill => "killed with SIGKILL",
        };
        write!(f, "{step} ({})", self.status)
    }
}

/// A running child: the transport's halves and the process handle.
#[derive(Debug)]
pub struct ChildTransport {
    /// Writes to the child's stdin.
    pub sender: Sender,
    /// Reads the child's stdout. Ends with [`Inbound::Closed`] carrying
    /// [`CloseReason::ChildExited`] (promptly when the child exits on its own),
    /// [`CloseReason::ChildStdoutClosed`], or [`CloseReason::ShutDown`].
    pub receiver: Receiver,
    /// Owns the process: shut it down with [`ChildProcess::shutdown`]. Dropping it
    /// shuts the child down too (in the background).
    pub process: ChildProcess,
}

type ShutdownReply = oneshot::Sender<io::Result<ShutdownReport>>;

/// The handle that owns a child process.
///
/// **Dropping** it starts the same shutdown as [`shutdown`](Self::shutdown) in
/// the background, on the runtime: close stdin, wait, SIGTERM, wait, SIGKILL,
/// reap. If the runtime itself shuts down before that is done, the child's
/// process group is killed (SIGKILL) and Tokio reaps the child on a best-effort
/// basis. Either way the child does not outlive us running. The child runs in a
/// process group of its own, and the signals go to that group: a server started
/// through a wrapper (`sh -c`, `npx`, `uvx`) is stopped with the wrapper; once
/// the child is reaped the group gets a last SIGTERM, for processes it left
/// behind, and SIGKILL if some are still there after the SIGTERM grace.
///
/// Keep it bound (`let ChildTransport { sender, receiver, process } = ...`):
/// destructuring with `..` drops it, and with it the child.
#[derive(Debug)]
#[must_use = "dropping the ChildProcess shuts the child down"]
pub struct ChildProcess {
    name: String,
    pid: u32,
    skipped: Arc<Skipped>,
    control: Option<oneshot::Sender<ShutdownReply>>,
    hurry: Arc<Notify>,
}

/// Kills a child at once, skipping the graces of the spec's shutdown order: a
/// program whose user asks a second time to quit (Ctrl-C again while the child
/// is being shut down) has waited long enough. From
/// [`ChildProcess::kill_switch`]; cloneable, usable after the [`ChildProcess`]
/// was moved into [`shutdown`](ChildProcess::shutdown).
#[derive(Debug, Clone)]
pub struct KillSwitch {
    hurry: Arc<Notify>,
}

impl KillSwitch {
    /// Has the child's supervisor send SIGKILL to the child's process group now.
    /// During a [`shutdown`](ChildProcess::shutdown) the grace being waited out
    /// ends at once and the report says [`ShutdownStep::Sigkill`]; before one,
    /// the child dies and the [`Receiver`] gets [`Inbound::Closed`] with
    /// [`CloseReason::ChildExited`] (killed by signal 9), as for any exit. The
    /// child is still reaped by its supervisor. Once it has been reaped this does
    /// nothing (no signal goes to a pid that may have been reused).
    pub fn kill(&self) {
        self.hurry.notify_one();
    }
}

impl ChildProcess {
    /// The lines of the child's stdout skipped so far because they are not valid
    /// JSON-RPC messages (a banner, a stray print; each is logged, warn, as it
    /// comes, within [`ChildConfig::log_limit`]; every one is counted), and the
    /// latest of them, cut to 200 characters. A caller whose request timed out
    /// can tell its user that the server writes something else than MCP.
    pub fn skipped_lines(&self) -> (u64, Option<String>) {
        self.skipped.get()
    }

    /// A handle that kills the child at once ([`KillSwitch::kill`]), for a caller
    /// that must be able to cut a [`shutdown`](Self::shutdown) short.
    pub fn kill_switch(&self) -> KillSwitch {
        KillSwitch {
            hurry: self.hurry.clone(),
        }
    }

    /// The child's configured name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The child's process id (valid until it is reaped; do not signal it
    /// yourself).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Stops the child in the spec's order and reaps it (MCP §3 "Lifecycle",
    /// stdio shutdown):
    ///
    /// 1. if it has already exited, reap it and report
    ///    [`ShutdownStep::AlreadyExited`];
    /// 2. close its stdin (messages still queued by [`Sender`]s are dropped, later
    ///    sends fail) and wait up to [`ShutdownConfig::stdin_close_grace`];
    /// 3. send SIGTERM and wait up to [`ShutdownConfig::sigterm_grace`];
    /// 4. send SIGKILL and wait for it to exit.
    ///
    /// A [`KillSwitch::kill`] during steps 2 and 3 skips to step 4.
    ///
    /// Then the rest of its stdout is read for up to [`EXIT_DRAIN`] (its stderr for
    /// up to 1 s more, after `Closed`), the
    /// [`Receiver`] gets [`Inbound::Closed`] with [`CloseReason::ShutDown`] (unless it
    /// had already got a `Closed`), and the report is returned. No zombie is left.
    ///
    /// Errors: waiting for the child failed (`waitpid`), or the supervising task is
    /// gone (the runtime is shutting down).
    ///
    /// Cancel safety: once called, the shutdown goes on to the end even if this
    /// future is dropped.
    pub async fn shutdown(mut self) -> io::Result<ShutdownReport> {
        let (reply_tx, reply_rx) = oneshot::channel();
        let gone = || io::Error::other("the child's supervisor task is gone");
        let control = self.control.take().ok_or_else(gone)?;
        control.send(reply_tx).map_err(|_| gone())?;
        reply_rx.await.map_err(|_| gone())?
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if self.control.is_some() {
            debug!(name = %self.name, pid = self.pid, "child handle dropped; shutting the child down");
        }
    }
}

/// The scheduling policy the thread that spawns a child should take for the
/// length of the spawn, given the one it runs in (`ours`, as
/// `sched_getscheduler` reports it): `SCHED_BATCH` for
/// [`ChildScheduling::Batch`] from `SCHED_OTHER` only, never from another
/// policy (`SCHED_IDLE`, a real-time one, or with `SCHED_RESET_ON_FORK`), which
/// the child then inherits as is; `None`: leave it.
#[cfg(target_os = "linux")]
fn spawn_policy(scheduling: ChildScheduling, ours: libc::c_int) -> Option<libc::c_int> {
    match scheduling {
        ChildScheduling::Batch if ours == libc::SCHED_OTHER => Some(libc::SCHED_BATCH),
        ChildScheduling::Batch | ChildScheduling::Inherit => None,
    }
}

/// The calling thread in the policy of [`spawn_policy`] while it lives, and in
/// its own again once dropped. On Linux `sched_setscheduler(0, ..)` sets the
/// calling thread only, and a process starts in the policy of the thread that
/// made it (`sched(7)`), so a child spawned meanwhile starts in it without any
/// code of ours between fork and exec: std then uses `posix_spawn`. Switching
/// between `SCHED_OTHER` and `SCHED_BATCH` keeps the nice value and needs no
/// privilege; a refusal leaves the thread (and the child) as they were, and
/// the caller's check after the spawn reports it.
#[cfg(target_os = "linux")]
struct SpawnPolicy {
    /// The thread's own policy, to restore; `None` when it was not changed.
    restore: Option<libc::c_int>,
}

#[cfg(target_os = "linux")]
impl SpawnPolicy {
    fn enter(scheduling: ChildScheduling) -> Self {
        // SAFETY: reads the calling thread's policy; no memory is passed.
        let ours = unsafe { libc::sched_getscheduler(0) };
        let Some(policy) = spawn_policy(scheduling, ours) else {
            return SpawnPolicy { restore: None };
        };
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: sets the calling thread's policy; `param` lives across the call.
        let set = unsafe { libc::sched_setscheduler(0, policy, &param) };
        SpawnPolicy {
            restore: (set == 0).then_some(ours),
        }
    }
}

#[cfg(target_os = "linux")]
impl Drop for SpawnPolicy {
    fn drop(&mut self) {
        let Some(ours) = self.restore else { return };
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: sets the calling thread's policy; `param` lives across the call.
        if unsafe { libc::sched_setscheduler(0, ours, &param) } != 0 {
            let error = io::Error::last_os_error();
            warn!(%error, policy = ours, "could not give the thread that spawned a child its scheduling policy back");
        }
    }
}

/// Starts `config.command` as a child process speaking MCP over its stdin and
/// stdout (MCP "Transports → stdio", client side), in the [`Role::Client`] role:
/// a line of its stdout that is not a valid message is logged (warn, with the
/// child's name) and skipped.
///
/// The child's stdin, stdout and stderr are pipes. Its stderr is read line by line
/// and each line logged with `tracing` at `info` (lines longer than
/// [`ChildConfig::stderr_max_line_len`] or not UTF-8 are logged as dropped); it
/// never reaches our stdout. Both logs are rate limited
/// ([`ChildConfig::log_limit`]); what is not logged is counted in a summary. All
/// tasks run in a `stdio_child` span with the fields `name` and `pid`.
///
/// When the child exits on its own, the [`Receiver`] gets [`Inbound::Closed`] with
/// [`CloseReason::ChildExited`] and the status as soon as the exit is seen (after
/// at most [`EXIT_DRAIN`] to read its last output), so the library can fail every
/// pending request at once.
///
/// Errors: the process could not be started (e.g. the program is not found); the
/// error's message names the child and the command.
///
/// Panics if called outside a Tokio runtime.
pub fn spawn(config: ChildConfig, transport: &TransportConfig) -> io::Result<ChildTransport> {
    // A program looked up in `PATH` with the environment rewritten makes the
    // standard library fork (posix_spawnp would search our own `PATH`),
    // write-protecting all our memory for the child's exec: looked up here
    // instead, the spawn stays a vfork-like posix_spawn.
    let program = match (
        config.inherit,
        config.command.as_encoded_bytes().contains(&b'/'),
    ) {
        (Inherit::All, _) | (_, true) => None,
        _ => config.find_program().ok().flatten(),
    };
    let mut cmd = Command::new(
        program
            .as_deref()
            .map_or(config.command.as_os_str(), |p| p.as_os_str()),
    );
    cmd.args(&config.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        // Its own process group (pgid = its pid), so shutdown signals reach what it
        // started too, and a terminal's Ctrl-C reaches only us (we stop it in order).
        .process_group(0);
    match config.inherit {
        Inherit::All => {}
        Inherit::Safe => {
            cmd.env_clear();
            cmd.envs(std::env::vars_os().filter(|(k, _)| Inherit::is_safe(k)));
        }
        Inherit::Nothing => {
            cmd.env_clear();
        }
    }
    cmd.envs(config.env.iter().map(|(k, v)| (k, v)));
    if let Some(dir) = &config.current_dir {
        cmd.current_dir(dir);
    }
    // No `pre_exec`: without one, std starts the child with `posix_spawn`
    // (a `vfork`-style clone that shares our memory until the exec) instead of
    // `fork`, which copies our page tables and descriptor table, a cost that
    // grows with every session a bridge holds. The scheduling policy reaches the
    // child through the thread that spawns it (see `SpawnPolicy`).
    #[cfg(target_os = "linux")]
    let policy = SpawnPolicy::enter(config.scheduling);
    let spawned = cmd.spawn();
    #[cfg(target_os = "linux")]
    drop(policy);
    let mut child = spawned.map_err(|e| {
        // The OS says ENOENT for a missing working directory as for a missing
        // program: name the one that is missing.
        let gone = |d: &PathBuf| e.kind() == io::ErrorKind::NotFound && !d.is_dir();
        let what = match &config.current_dir {
            Some(dir) if gone(dir) => {
                format!("its working directory {} does not exist", dir.display())
            }
            _ => e.to_string(),
        };
        io::Error::new(
            e.kind(),
            format!(
                "cannot start child {:?} ({:?}): {what}",
                config.name, config.command
            ),
        )
    })?;
    let pid = child
        .id()
        .ok_or_else(|| io::Error::other("the child exited before its pid was read"))?;
    #[cfg(target_os = "linux")]
    if config.scheduling == ChildScheduling::Batch {
        let pid_t = libc::pid_t::try_from(pid).unwrap_or(0);
        // SAFETY: reads the policy of this thread and of a process we just
        // started; no memory is passed.
        let (ours, policy) =
            unsafe { (libc::sched_getscheduler(0), libc::sched_getscheduler(pid_t)) };
        // -1: the child is already gone (its exit is reported as usual).
        if ours == libc::SCHED_OTHER && policy != libc::SCHED_BATCH && policy != -1 {
            warn!(name = %config.name, pid, policy, "the system refused SCHED_BATCH for the child: it runs with our scheduling policy");
        }
    }
    let span = info_span!("stdio_child", child = %config.name, pid);
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        unreachable!("all three streams were piped");
    };
    info!(parent: &span, command = ?config.command, args = ?config.args, "child started");

    let Started {
        transport,
        skipped,
        reader,
        writer,
        events,
    } = start(
        stdout,
        stdin,
        Role::Client {
            peer: config.name.clone(),
        },
        transport,
        config.log_limit,
        span.clone(),
    );
    let stderr_tail = Arc::new(Mutex::new(None));
    let stderr_task = tokio::spawn(
        log_stderr(
            stderr,
            config.name.clone(),
            config.stderr_max_line_len,
            config.log_limit,
            stderr_tail.clone(),
        )
        .instrument(span.clone()),
    );
    let (control_tx, control_rx) = oneshot::channel();
    let hurry = Arc::new(Notify::new());
    let supervisor = Supervisor {
        child,
        pid,
        hurry: hurry.clone(),
        hurried: false,
        shutdown: config.shutdown.clone(),
        reader: Some(reader),
        writer: Some(writer),
        stderr: Some(stderr_task),
        stderr_tail,
        events: Some(events),
    };
    tokio::spawn(supervisor.run(control_rx).instrument(span));
    Ok(ChildTransport {
        sender: transport.sender,
        receiver: transport.receiver,
        process: ChildProcess {
            name: config.name,
            pid,
            skipped,
            control: Some(control_tx),
            hurry,
        },
    })
}

/// `line` without the timestamp a server's logger starts it with (ours
/// stamps each line already): `2026-12-07T23:47:07.532Z`, Python's
/// `2026-12-07 23:47:07,532`, `23:47:07.532`, or any of them (or rich's
/// `12/07/26 23:47:07`) in brackets; then the separator after it (spaces, a
/// `|` or a `-`). A line that does not start with one is kept whole.
fn without_timestamp(line: &str) -> &str {
    let b = line.as_bytes();
    let digits =
        |at: usize, n: usize| b.len() >= at + n && b[at..at + n].iter().all(u8::is_ascii_digit);
    // HH:MM:SS, then a fraction: the end.
    let time = |at: usize| -> Option<usize> {
        if !(digits(at, 2)
            && b.get(at + 2) == Some(&b':')
            && digits(at + 3, 2)
            && b.get(at + 5) == Some(&b':')
            && digits(at + 6, 2))
        {
            return None;
        }
        let mut end = at + 8;
        if matches!(b.get(end), Some(b'.' | b',')) && digits(end + 1, 1) {
            end += 1;
            while b.get(end).is_some_and(u8::is_ascii_digit) {
                end += 1;
            }
        }
        Some(end)
    };
    // A date (YYYY-MM-DD or MM/DD/YY[YY]), a `T` or a space, a time, a zone.
    let stamp = |at: usize| -> Option<usize> {
        let after_date = if digits(at, 4)
            && b.get(at + 4) == Some(&b'-')
            && digits(at + 5, 2)
            && b.get(at + 7) == Some(&b'-')
            && digits(at + 8, 2)
        {
            Some(at + 10)
        } else if digits(at, 2)
            && b.get(at + 2) == Some(&b'/')
            && digits(at + 3, 2)
            && b.get(at + 5) == Some(&b'/')
            && digits(at + 6, 2)
        {
            Some(if digits(at + 6, 4) { at + 10 } else { at + 8 })
        } else {
            None
        };
        let mut end = match after_date {
            Some(d) if matches!(b.get(d), Some(b'T' | b' ')) => time(d + 1)?,
            Some(_) => return None,
            None => time(at)?,
        };
        if b.get(end) == Some(&b'Z') {
            end += 1;
        } else if matches!(b.get(end), Some(b'+' | b'-')) && digits(end + 1, 2) {
            end += 3;
            if b.get(end) == Some(&b':') {
                end += 1;
            }
            if digits(end, 2) {
                end += 2;
            }
        }
        Some(end)
    };
    let end = match b.first() {
        Some(b'[') => match stamp(1) {
            Some(e) if b.get(e) == Some(&b']') => e + 1,
            _ => return line,
        },
        _ => match stamp(0) {
            Some(e) => e,
            None => return line,
        },
    };
    // A stamp runs into text only through a separator.
    match b.get(end) {
        None => "",
        Some(b' ' | b'\t' | b'|' | b'-' | b':') => {
            line[end..].trim_start_matches([' ', '\t', '|', '-', ':'])
        }
        Some(_) => line,
    }
}

/// Logs each stderr line of the child until end of file, within `limit` (the
/// lines beyond it counted in summaries instead), and keeps the last non-empty
/// one in `tail` (cut to [`STDERR_TAIL_CHARS`] characters), logged or not.
async fn log_stderr<R: AsyncRead + Unpin>(
    mut stderr: R,
    name: String,
    max: usize,
    limit: LogLimit,
    tail: Arc<Mutex<Option<Arc<str>>>>,
) {
    let mut lines = LineDecoder::with_max_line_len(max);
    let mut buf = vec![0u8; 8 * 1024];
    // Dropped with this task (at end of file, or when it is ended): the last
    // summary.
    let mut limit = LogLines::new(
        limit,
        Stream::Stderr {
            child: name.clone(),
        },
    );
    let log = |line: Result<String, _>, limit: &mut LogLines| match line {
        Ok(text) => {
            if limit.admit() {
                info!(child = %name, "stderr: {}", without_timestamp(&text));
            }
            let text = text.trim();
            if !text.is_empty() {
                let cut = match text.char_indices().nth(STDERR_TAIL_CHARS) {
                    Some((end, _)) => format!("{}…", &text[..end]),
                    None => text.to_owned(),
                };
                *tail.lock().unwrap_or_else(|e| e.into_inner()) = Some(cut.into());
            }
        }
        Err(e) => {
            if limit.admit() {
                info!(child = %name, "stderr line dropped: {e}");
            }
        }
    };
    loop {
        let read = match limit.due() {
            None => stderr.read(&mut buf).await,
            // Lines were suppressed: their summary is due then, even if the
            // child falls silent. (`read` is cancel safe.)
            Some(due) => tokio::select! {
                read = stderr.read(&mut buf) => read,
                () = tokio::time::sleep_until(due) => {
                    limit.flush();
                    continue;
                }
            },
        };
        match read {
            Ok(0) => break,
            Ok(n) => {
                for line in lines.feed(&buf[..n]) {
                    log(line, &mut limit);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                debug!(error = %e, "reading the child's stderr failed");
                break;
            }
        }
    }
    for line in lines.finish() {
        log(line, &mut limit);
    }
}

/// Waits for an optional task; never resolves for `None`.
async fn join<T>(task: &mut Option<JoinHandle<T>>) -> Option<T> {
    match task {
        Some(handle) => {
            let out = handle.await.ok();
            *task = None;
            out
        }
        None => std::future::pending().await,
    }
}

/// Waits up to `window` for a task to end, then aborts it.
async fn drain<T>(task: &mut Option<JoinHandle<T>>, window: Duration) {
    if let Some(mut handle) = task.take() {
        if timeout(window, &mut handle).await.is_err() {
            handle.abort();
            let _ = handle.await;
        }
    }
}

/// Ends a task now (dropping what it owns, e.g. the child's stdin).
async fn stop<T>(task: &mut Option<JoinHandle<T>>) {
    if let Some(handle) = task.take() {
        handle.abort();
        let _ = handle.await;
    }
}

/// Owns the child: reports its exit, runs the shutdown sequence, reaps it.
struct Supervisor {
    child: Child,
    pid: u32,
    /// [`KillSwitch::kill`]: SIGKILL now.
    hurry: Arc<Notify>,
    /// A kill was asked for during the shutdown sequence.
    hurried: bool,
    shutdown: ShutdownConfig,
    reader: Option<JoinHandle<ReadEnd>>,
    writer: Option<JoinHandle<()>>,
    stderr: Option<JoinHandle<()>>,
    /// The child's last non-empty stderr line, kept by the stderr task.
    stderr_tail: Arc<Mutex<Option<Arc<str>>>>,
    /// `None` once [`Inbound::Closed`] was sent: dropping it lets the
    /// [`Receiver`] end.
    events: Option<crate::handle::InboundTx>,
}

impl Drop for Supervisor {
    /// The task is dropped before it reaped the child: the runtime is shutting
    /// down in the middle (a handle dropped, or a shutdown begun, just before the
    /// program ended). Tokio's `kill_on_drop` kills the child alone; a server
    /// behind a wrapper (`sh -c`, `npx`) would leave its real process running, so
    /// the whole group gets SIGKILL. Not reaped yet, so the pid (and group id) is
    /// still the child's.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.signal(Signal::SIGKILL);
        }
    }
}

enum Event {
    Exited(io::Result<ExitStatus>),
    Shutdown(Option<ShutdownReply>),
}

impl Supervisor {
    async fn run(mut self, mut control: oneshot::Receiver<ShutdownReply>) {
        let event = loop {
            tokio::select! {
                status = self.child.wait() => break Event::Exited(status),
                request = &mut control => break Event::Shutdown(request.ok()),
                () = self.hurry.notified() => {
                    // Not reaped yet (this task is the only reaper): the pid is
                    // still the child's. Its exit is then reported as any other.
                    info!("killing the child at once (SIGKILL), as asked");
                    self.kill_now();
                }
                end = join(&mut self.reader) => {
                    if matches!(end, Some(ReadEnd::ReceiverGone)) {
                        debug!("the receiver was dropped; the child's stdout is no longer read");
                        continue;
                    }
                    debug!(end = ?end, "the child's stdout ended");
                    match timeout(STDOUT_EOF_EXIT_WAIT, self.child.wait()).await {
                        Ok(status) => break Event::Exited(status),
                        Err(_) => {
                            warn!("the child closed its stdout but is still running");
                            self.close(CloseReason::ChildStdoutClosed).await;
                        }
                    }
                }
            }
        };
        match event {
            Event::Exited(status) => {
                let window = Instant::now() + EXIT_DRAIN;
                let reason = match &status {
                    Ok(status) => {
                        info!(%status, "the child exited");
                        // Its last words on stderr are in the pipe already; read
                        // them (bounded: a grandchild may hold stderr open). The
                        // stdout reader runs meanwhile; `finish` waits for it
                        // within the same window.
                        if let Some(handle) = self.stderr.as_mut() {
                            if timeout_at(window, handle).await.is_ok() {
                                self.stderr = None;
                            }
                        }
                        let tail = self
                            .stderr_tail
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .clone();
                        CloseReason::ChildExited(*status, tail)
                    }
                    Err(e) => {
                        warn!(error = %e, "waiting for the child failed");
                        CloseReason::Io(Arc::new(io::Error::new(e.kind(), e.to_string())))
                    }
                };
                self.finish(reason, window).await;
                let reply = control.await.ok();
                let report = status.map(|status| ShutdownReport {
                    status,
                    step: ShutdownStep::AlreadyExited,
                });
                self.end(reply, report).await;
            }
            Event::Shutdown(reply) => {
                let report = self.shutdown_sequence().await;
                if report.is_ok() {
                    self.sweep_group().await;
                }
                match &report {
                    Ok(report) => {
                        info!(%report, "the child was shut down");
                        self.finish(CloseReason::ShutDown(*report), Instant::now() + EXIT_DRAIN)
                            .await;
                    }
                    Err(e) => {
                        warn!(error = %e, "shutting the child down failed");
                        let e = io::Error::new(e.kind(), e.to_string());
                        self.finish(CloseReason::Io(Arc::new(e)), Instant::now() + EXIT_DRAIN)
                            .await;
                    }
                }
                self.end(reply, report).await;
            }
        }
    }

    /// Sends [`Inbound::Closed`] once.
    async fn close(&mut self, reason: CloseReason) {
        if let Some(events) = self.events.take() {
            let _ = events.send(Inbound::Closed { reason }).await;
        }
    }

    /// After the exit: drains stdout until `window` ends, closes stdin, then
    /// reports `Closed`.
    async fn finish(&mut self, reason: CloseReason, window: Instant) {
        drain(
            &mut self.reader,
            window.saturating_duration_since(Instant::now()),
        )
        .await;
        stop(&mut self.writer).await;
        self.close(reason).await;
    }

    /// Drains stderr and answers a shutdown request.
    async fn end(&mut self, reply: Option<ShutdownReply>, report: io::Result<ShutdownReport>) {
        drain(&mut self.stderr, STDERR_DRAIN).await;
        if let Some(reply) = reply {
            let _ = reply.send(report);
        }
    }

    fn report(status: ExitStatus, step: ShutdownStep) -> io::Result<ShutdownReport> {
        Ok(ShutdownReport { status, step })
    }

    async fn shutdown_sequence(&mut self) -> io::Result<ShutdownReport> {
        if let Some(status) = self.child.try_wait()? {
            return Self::report(status, ShutdownStep::AlreadyExited);
        }
        let grace = self.shutdown.stdin_close_grace;
        debug!(?grace, "closing the child's stdin");
        stop(&mut self.writer).await;
        if let Some(status) = self.wait_within(grace).await {
            return Self::report(status?, ShutdownStep::StdinClosed);
        }
        // Not reaped yet (we are its only reaper), so the pid is still this child.
        if let Some(status) = self.child.try_wait()? {
            return Self::report(status, ShutdownStep::StdinClosed);
        }
        if !self.hurried {
            let grace = self.shutdown.sigterm_grace;
            debug!(?grace, "sending SIGTERM");
            self.signal(Signal::SIGTERM);
            if let Some(status) = self.wait_within(grace).await {
                return Self::report(status?, ShutdownStep::Sigterm);
            }
            if let Some(status) = self.child.try_wait()? {
                return Self::report(status, ShutdownStep::Sigterm);
            }
        }
        debug!("sending SIGKILL");
        self.kill_now();
        let status = self.child.wait().await?;
        Self::report(status, ShutdownStep::Sigkill)
    }

    /// The child's exit within `grace`; `None` when the grace ran out or a
    /// [`KillSwitch::kill`] cut it short (then `hurried` is set).
    async fn wait_within(&mut self, grace: Duration) -> Option<io::Result<ExitStatus>> {
        if self.hurried {
            return None;
        }
        let hurry = self.hurry.clone();
        tokio::select! {
            waited = timeout(grace, self.child.wait()) => waited.ok(),
            () = hurry.notified() => {
                info!("killing the child at once (SIGKILL), as asked");
                self.hurried = true;
                None
            }
        }
    }

    /// SIGKILL to the child's process group and to the child itself. Only
    /// before the child is reaped (the caller's duty).
    fn kill_now(&mut self) {
        self.signal(Signal::SIGKILL);
        if let Err(e) = self.child.start_kill() {
            debug!(error = %e, "SIGKILL failed");
        }
    }

    /// Signals the child's process group (the child and what it started), or the
    /// child alone if that fails.
    fn signal(&self, signal: Signal) {
        let Ok(pid) = i32::try_from(self.pid) else {
            return;
        };
        if killpg(Pid::from_raw(pid), signal).is_ok() {
            return;
        }
        if let Err(e) = kill(Pid::from_raw(pid), signal) {
            debug!(error = %e, ?signal, "sending the signal failed");
        }
    }

    /// After the child was reaped: SIGTERM to what is left of its process group
    /// (e.g. a grandchild that outlived a wrapper that ended at stdin's end), then,
    /// if some of it is still there after the SIGTERM grace (it ignores SIGTERM),
    /// SIGKILL: the spec's order, for the whole group. Nothing left is the common
    /// case, and costs one `killpg`. The group's id cannot be taken by another
    /// process while a member lives, and the wait stops as soon as none does.
    /// The kill switch, pulled before or during the grace, ends it at once.
    async fn sweep_group(&self) {
        let Ok(pid) = i32::try_from(self.pid) else {
            return;
        };
        let group = Pid::from_raw(pid);
        if killpg(group, Signal::SIGTERM).is_err() {
            return;
        }
        debug!("signalled processes the child left behind (SIGTERM)");
        let left = || killpg(group, None).is_ok();
        let grace = if self.hurried {
            Duration::ZERO
        } else {
            self.shutdown.sigterm_grace
        };
        let deadline = Instant::now() + grace;
        while left() && Instant::now() < deadline {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(20)) => {}
                () = self.hurry.notified() => break,
            }
        }
        if left() && killpg(group, Signal::SIGKILL).is_ok() {
            info!("processes the child left behind outlived SIGTERM: killed (SIGKILL)");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn defaults_are_documented_values() {
        let c = ChildConfig::new("n", "cmd").args(["a", "b"]).env("K", "V");
        assert_eq!(c.shutdown.stdin_close_grace, Duration::from_secs(5));
        assert_eq!(c.shutdown.sigterm_grace, Duration::from_secs(5));
        assert_eq!(c.stderr_max_line_len, 65_536);
        assert_eq!(c.log_limit, LogLimit::new(50, 10));
        assert_eq!(c.log_limit, DEFAULT_LOG_LIMIT);
        assert_eq!(c.inherit, Inherit::Safe);
        for safe in ["HOME", "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR"] {
            assert!(Inherit::is_safe(OsStr::new(safe)), "{safe}");
        }
        for secret in [
            "GW_SECRET",
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_TOKEN",
            "LD_PRELOAD",
            "PATHX",
        ] {
            assert!(!Inherit::is_safe(OsStr::new(secret)), "{secret}");
        }
        assert_eq!(c.current_dir, None);
        assert_eq!(c.args, ["a", "b"]);
        assert_eq!(c.env, [("K".into(), "V".into())]);
        assert_eq!(c.scheduling, ChildScheduling::Inherit);
    }

    #[test]
    fn a_servers_own_timestamp_is_left_out_of_our_line() {
        for (line, kept) in [
            ("2026-12-07T23:47:07.532Z INFO started", "INFO started"),
            (
                "2026-12-07 23:47:07,532 - mcp.server - INFO - ready",
                "mcp.server - INFO - ready",
            ),
            (
                "[12/07/26 23:47:07] INFO     Processing request",
                "INFO     Processing request",
            ),
            ("[2026-12-07T23:47:07+01:00] listening", "listening"),
            ("23:47:07.5 | debug", "debug"),
            ("2026-12-07T23:47:07.532+0000: x", "x"),
            // Not a stamp at the start: kept whole.
            (
                "Secure MCP Filesystem Server running on stdio",
                "Secure MCP Filesystem Server running on stdio",
            ),
            ("2026-12-07 was a Monday", "2026-12-07 was a Monday"),
            ("12:30:00pm meeting", "12:30:00pm meeting"),
            ("[INFO] 23:47:07 started", "[INFO] 23:47:07 started"),
            ("", ""),
        ] {
            assert_eq!(without_timestamp(line), kept, "{line:?}");
        }
    }

    /// A missing working directory is named as such, not blamed on the
    /// program (the OS says ENOENT for both).
    #[tokio::test]
    async fn a_missing_working_directory_is_named() {
        let mut config = ChildConfig::new("gone", "/bin/cat");
        config.current_dir = Some(PathBuf::from("/nonexistent-switchboard-dir"));
        let Err(e) = spawn(config, &TransportConfig::default()) else {
            panic!("started in a missing directory");
        };
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert_eq!(
            e.to_string(),
            "cannot start child \"gone\" (\"/bin/cat\"): its working directory \
             /nonexistent-switchboard-dir does not exist"
        );
    }

    /// `Batch` starts the child in `SCHED_BATCH` (set before exec: the program
    /// runs in it from its first instruction); `Inherit` leaves ours.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn batch_scheduling_is_set_before_exec() {
        for (scheduling, want) in [
            (ChildScheduling::Batch, libc::SCHED_BATCH),
            (ChildScheduling::Inherit, libc::SCHED_OTHER),
        ] {
            let mut config = ChildConfig::new("sched", "cat");
            config.scheduling = scheduling;
            let child = spawn(config, &TransportConfig::default()).unwrap();
            let pid = libc::pid_t::try_from(child.process.pid()).unwrap();
            // SAFETY: reads the policy of our child; no memory is passed.
            let policy = unsafe { libc::sched_getscheduler(pid) };
            assert_eq!(policy, want, "{scheduling:?}");
            // SAFETY: reads this thread's policy; no memory is passed.
            let ours = unsafe { libc::sched_getscheduler(0) };
            assert_eq!(ours, libc::SCHED_OTHER, "the spawning thread's is back");
            let _ = child.process.shutdown().await;
        }
    }

    /// The spawning thread's policy for the length of a spawn: `SCHED_BATCH`
    /// from `SCHED_OTHER` only.
    #[cfg(target_os = "linux")]
    #[test]
    fn spawn_policy_is_batch_only_from_other() {
        let reset = libc::SCHED_RESET_ON_FORK;
        for (scheduling, ours, want) in [
            (
                ChildScheduling::Batch,
                libc::SCHED_OTHER,
                Some(libc::SCHED_BATCH),
            ),
            (ChildScheduling::Batch, libc::SCHED_BATCH, None),
            (ChildScheduling::Batch, libc::SCHED_IDLE, None),
            (ChildScheduling::Batch, libc::SCHED_FIFO, None),
            (ChildScheduling::Batch, libc::SCHED_RR, None),
            (ChildScheduling::Batch, libc::SCHED_OTHER | reset, None),
            (ChildScheduling::Inherit, libc::SCHED_OTHER, None),
            (ChildScheduling::Inherit, libc::SCHED_IDLE, None),
        ] {
            assert_eq!(
                spawn_policy(scheduling, ours),
                want,
                "{scheduling:?} {ours}"
            );
        }
    }

    /// From a thread in `SCHED_IDLE`, `Batch` does not raise the child to
    /// `SCHED_BATCH`: it keeps the idle policy it inherits.
    #[cfg(target_os = "linux")]
    #[test]
    fn batch_scheduling_never_raises_an_idle_parents_child() {
        let policy = std::thread::spawn(|| {
            let param = libc::sched_param { sched_priority: 0 };
            // SAFETY: sets this (test) thread's own policy; `param` lives across the call.
            let set = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
            assert_eq!(set, 0, "SCHED_IDLE for this thread");
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let mut config = ChildConfig::new("sched", "cat");
                config.scheduling = ChildScheduling::Batch;
                let child = spawn(config, &TransportConfig::default()).unwrap();
                let pid = libc::pid_t::try_from(child.process.pid()).unwrap();
                // SAFETY: reads the policy of our child; no memory is passed.
                let policy = unsafe { libc::sched_getscheduler(pid) };
                let _ = child.process.shutdown().await;
                policy
            })
        })
        .join()
        .unwrap();
        assert_eq!(policy, libc::SCHED_IDLE);
    }

    #[test]
    fn find_program_finds_what_spawn_would_run() {
        // In PATH, by name.
        let sh = ChildConfig::new("n", "sh").find_program().unwrap().unwrap();
        assert!(sh.ends_with("sh"), "{sh:?}");
        // By path.
        let exe = std::env::current_exe().unwrap();
        let c = ChildConfig::new("n", &exe);
        assert_eq!(c.find_program().unwrap(), Some(exe.clone()));
        // Missing, by path and by name.
        let e = ChildConfig::new("n", "/nonexistent/cmd")
            .find_program()
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(e.to_string().contains("/nonexistent/cmd"), "{e}");
        let e = ChildConfig::new("n", "no-such-command-anywhere")
            .find_program()
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(e.to_string().contains("not found in PATH"), "{e}");
        // A file that is not executable, and a directory.
        let dir = std::env::temp_dir().join(format!("sb-find-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let plain = dir.join("plain");
        std::fs::write(&plain, "x").unwrap();
        for p in [&plain, &dir] {
            let e = ChildConfig::new("n", p).find_program().unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{p:?}: {e}");
        }
        // The child's own PATH is the one searched.
        let in_dir =
            ChildConfig::new("n", exe.file_name().unwrap()).env("PATH", exe.parent().unwrap());
        assert!(in_dir.find_program().unwrap().is_some());
        let elsewhere = ChildConfig::new("n", "sh").env("PATH", &dir);
        assert!(elsewhere.find_program().is_err());
        // What cannot be told beforehand is left to spawn.
        let mut relative = ChildConfig::new("n", "./server");
        relative.current_dir = Some(dir.clone());
        assert_eq!(relative.find_program().unwrap(), None);
        let mut cleared = ChildConfig::new("n", "sh");
        cleared.inherit = Inherit::Nothing;
        assert_eq!(cleared.find_program().unwrap(), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn reports_say_how_the_child_ended() {
        let killed = ShutdownReport {
            status: ExitStatus::from_raw(9),
            step: ShutdownStep::Sigkill,
        };
        assert!(killed.to_string().starts_with("killed with SIGKILL"));
        let closed = CloseReason::ShutDown(killed);
        assert!(closed.to_string().contains("SIGKILL"), "{closed}");
        let exited = CloseReason::ChildExited(ExitStatus::from_raw(3 << 8), None);
        assert!(exited.to_string().contains('3'), "{exited}");
        let exited = CloseReason::ChildExited(
            ExitStatus::from_raw(1 << 8),
            Some("fatal: no such repository".into()),
        );
        assert_eq!(
            exited.to_string(),
            "child exited (exit status: 1); its last stderr line: fatal: no such repository"
        );
    }
}
