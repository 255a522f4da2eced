//! A stdio server as the client's own child process: [`Client::spawn`] starts
//! it, connects, and keeps its [`ChildProcess`] handle, so that
//! [`Client::close`] ends it in the spec's order (MCP 2025-11-25 "Lifecycle →
//! Shutdown → stdio": close its stdin, wait, SIGTERM, wait, SIGKILL) and reaps
//! it, however the server behaves.
//!
//! This module must not know how a process is started, signalled or reaped
//! (the transport's `stdio` module does that); it only holds the handle.

use std::sync::{Arc, Mutex};

use switchboard_transport::stdio::{self, ChildConfig, ChildProcess, ChildTransport};
use switchboard_transport::{Transport, TransportConfig};

use super::{lock, Client, ClientOptions};
use crate::error::Error;

/// The child a [`Client`] owns; taken out by the first [`Client::close`].
pub(super) type OwnedChild = Arc<Mutex<Option<ChildProcess>>>;

impl Client {
    /// Starts `config`'s command as a stdio MCP server (MCP "Transports →
    /// stdio", client side; the child's stderr is logged with its name, a line of
    /// its stdout that is not JSON-RPC is logged and skipped, both within
    /// `config.log_limit`, the rest counted) and opens a session
    /// with it as [`Client::connect`] does, the era by [`ClientOptions::era`]
    /// (default [`EraPolicy::LegacyFirst`](super::EraPolicy::LegacyFirst):
    /// `initialize`, then `server/discover` only if the server answers it with
    /// an error, so a server that speaks only 2026-07-28 connects too).
    ///
    /// The client owns the child: [`close`](Self::close) shuts it down in the
    /// spec's order with `config.shutdown`'s graces (5 s each by default) and
    /// reaps it, even when the server ignores the end of its stdin or SIGTERM;
    /// dropping the last clone of the client starts the same shutdown in the
    /// background. Use [`Client::connect`] with `switchboard_transport::stdio::spawn`
    /// to keep the [`ChildProcess`] handle yourself.
    ///
    /// Errors: [`Error::is_closed`] when the command cannot be started (the
    /// message names the child, the command and the OS error) or when the child
    /// exits before the handshake ends (with its exit status and its last stderr
    /// line); otherwise as [`Client::connect`]. When the child wrote lines on
    /// stdout that are not JSON-RPC (skipped), the error's text ends with how
    /// many and the latest. The child is shut down before an error is returned.
    ///
    /// Panics outside a Tokio runtime.
    pub async fn spawn(config: ChildConfig, options: ClientOptions) -> Result<Client, Error> {
        let ChildTransport {
            sender,
            receiver,
            process,
        } = stdio::spawn(config, &TransportConfig::default())
            .map_err(|e| Error::closed(e.to_string()))?;
        match Client::connect(Transport { sender, receiver }, options).await {
            Ok(mut client) => {
                client.child = Some(Arc::new(Mutex::new(Some(process))));
                Ok(client)
            }
            Err(e) => {
                // A server that prints to stdout what is not MCP (a banner, logs)
                // fails in ways its exit status does not explain.
                let e = match process.skipped_lines() {
                    (0, _) => e,
                    (n, last) => e.with_note(format!(
                        "the server wrote {n} line{} on stdout that {} not JSON-RPC (the latest: {:?})",
                        if n == 1 { "" } else { "s" },
                        if n == 1 { "is" } else { "are" },
                        last.unwrap_or_default()
                    )),
                };
                let _ = process.shutdown().await;
                Err(e)
            }
        }
    }

    /// The process id of the server child that [`Client::spawn`] started, while
    /// it has not been closed; `None` for a client over any other transport.
    pub fn child_pid(&self) -> Option<u32> {
        let child = self.child.as_ref()?;
        let pid = lock(child).as_ref().map(ChildProcess::pid);
        pid
    }
}

/// Shuts an owned child down (the spec's order) and reaps it; a failure to
/// wait for it is logged.
pub(super) async fn shut_down(child: ChildProcess) {
    match child.shutdown().await {
        Ok(report) => tracing::debug!(%report, "the server process ended"),
        Err(e) => tracing::warn!(error = %e, "shutting the server process down failed"),
    }
}
