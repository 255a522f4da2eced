//! The stdio transport (MCP "Transports → stdio", every revision; summary in the
//! project's spec notes §5.1): JSON-RPC on the server's stdin and stdout, one
//! message per line, stderr free for logs.
//!
//! - Server side: [`serve`] (the process's own stdin/stdout) and [`serve_on`] (any
//!   pipe pair, for tests and sockets).
//! - Client side: [`spawn`] starts a server as a child process and returns a
//!   [`ChildTransport`]; its [`ChildProcess`] handle shuts it down in the spec's
//!   order (close stdin, SIGTERM, SIGKILL; §3 "Lifecycle", shutdown), and its
//!   [`KillSwitch`] cuts that order short.

pub(crate) mod child;

use tokio::io::{AsyncRead, AsyncWrite};
use tracing::info_span;

pub use crate::log_limit::{LogLimit, LOG_SUMMARY_INTERVAL};
pub use child::{
    spawn, ChildConfig, ChildProcess, ChildScheduling, ChildTransport, Inherit, KillSwitch,
    ShutdownConfig, ShutdownReport, ShutdownStep, DEFAULT_LOG_LIMIT, DEFAULT_SIGTERM_GRACE,
    DEFAULT_STDERR_MAX_LINE_LEN, DEFAULT_STDIN_CLOSE_GRACE, EXIT_DRAIN, STDOUT_EOF_EXIT_WAIT,
};

use crate::config::TransportConfig;
use crate::handle::{CloseReason, Transport};
use crate::line::{connect_with_eof, HangupCheck, Role};

/// Serves over the process's own stdin and stdout ([`tokio::io::stdin`],
/// [`tokio::io::stdout`]), as [`serve_on`] does; in addition, once stdin has
/// ended, stdout is checked every 100 ms for a reader that is gone (a pipe whose
/// read end was closed, a socket the client shut: `poll` reports `POLLERR` or
/// `POLLHUP`): a client killed in the middle of a call closes both, and the
/// output then closes too ([`Sender::closed`](crate::Sender::closed) completes),
/// so the library stops waiting to answer no one.
///
/// stdout belongs to the protocol: this crate writes nothing else there and
/// installs no logger (its logs go through `tracing`; the binary decides where
/// they go, which must be stderr in this mode).
///
/// Caveat (Tokio's): stdin is read on a blocking thread. If the process wants to
/// exit while stdin is still open, a read in progress can delay the runtime's
/// shutdown; exit the process (or use `Runtime::shutdown_timeout`) rather than
/// wait for it. But first let the writer task write what is queued: it writes in
/// the background, so exiting (or returning from `main`) with messages still
/// queued loses them; [`Sender::flush`](crate::Sender::flush) waits until they
/// are written (the `switchboard` crate's `ServerSession::run` does so before it
/// returns).
///
/// Panics if called outside a Tokio runtime.
pub fn serve(config: &TransportConfig) -> Transport {
    serve_watched(
        tokio::io::stdin(),
        tokio::io::stdout(),
        config,
        Some(stdout_hung_up),
    )
}

/// Whether our stdout's reader is gone: `poll(2)` on fd 1, without waiting,
/// reports `POLLERR` (a pipe whose read end is closed) or `POLLHUP` (a socket
/// or terminal hung up). A file never does.
fn stdout_hung_up() -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let stdout = std::io::stdout();
    let mut fds = [PollFd::new(stdout.as_fd(), PollFlags::empty())];
    matches!(poll(&mut fds, PollTimeout::ZERO), Ok(n) if n > 0)
        && fds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLERR | PollFlags::POLLHUP))
}

/// Serves over `input` (what the client writes: our stdin) and `output` (what
/// the client reads: our stdout), in the [`Role::Server`] role:
///
/// - each message sent is one line (`encode_line`);
/// - each bad inbound line is answered on `output` with the spec's error
///   (-32700 `id: null`; -32600 with the id when readable; nothing for a broken
///   notification), and the next line is served;
/// - end of `input` yields [`crate::Inbound::Closed`] with
///   [`CloseReason::StdinClosed`] ("stdin closed"); the output stays usable, so
///   answers still in flight can be written before the library drops its
///   [`crate::Sender`]s.
///
/// The tasks run in a `stdio_server` span with the fields `name` ("stdio") and
/// `pid` (this process).
///
/// Panics if called outside a Tokio runtime.
pub fn serve_on<R, W>(input: R, output: W, config: &TransportConfig) -> Transport
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_watched(input, output, config, None)
}

/// [`serve_on`], with a check for a gone reader of `output` once `input` ended.
fn serve_watched<R, W>(
    input: R,
    output: W,
    config: &TransportConfig,
    hangup: Option<HangupCheck>,
) -> Transport
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let span = info_span!("stdio_server", pid = std::process::id());
    connect_with_eof(
        input,
        output,
        Role::Server,
        config,
        span,
        CloseReason::StdinClosed,
        hangup,
    )
}
