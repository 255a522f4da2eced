//! The signals that stop a command: SIGINT (Ctrl-C), SIGTERM and, for the client
//! commands, SIGHUP; shared by the client commands and `bridge`.
//!
//! [`Signals::watch`] installs the handlers once, before the command starts anything
//! (a child, a listener), and the same [`Signals`] is then asked for every signal
//! until the process exits. That closes two windows in which a signal was lost or
//! fatal: one arriving before a handler installed late (the default action killed
//! the process, a child left running), and one arriving between two waits that each
//! made a handler of their own (nobody listened: the second Ctrl-C of a draining
//! bridge went unseen). [`Signals::next`] keeps a signal that arrives while nobody
//! waits for the next call.
//!
//! A command a signal ended exits with [`Stop::exit_code`]: 128 + the signal's
//! number (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP), the status a shell
//! gives a job a signal ended, so that `$?`, `make` and CI runners read it as
//! "interrupted", never as a tool's `isError` (1) or a protocol error (2).

use std::io;

use tokio::signal::unix::{signal, Signal, SignalKind};

/// Which signal stopped a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGINT: Ctrl-C on a terminal.
    Interrupt,
    /// SIGTERM: `kill`, `timeout`, systemd, a CI runner.
    Terminate,
    /// SIGHUP: the terminal went away.
    Hangup,
}

impl Stop {
    /// Every signal that stops a command, in the order [`Signals::next`] prefers
    /// them when several are pending.
    pub const ALL: [Stop; 3] = [Stop::Interrupt, Stop::Terminate, Stop::Hangup];

    /// The signal's number (`signal(7)`).
    pub fn number(self) -> i32 {
        match self {
            Stop::Interrupt => libc::SIGINT,
            Stop::Terminate => libc::SIGTERM,
            Stop::Hangup => libc::SIGHUP,
        }
    }

    /// The exit status of a command this signal ended: 128 + its number, the
    /// shell's convention (POSIX `sh`, "Exit Status for Commands").
    pub fn exit_code(self) -> u8 {
        // 128 + 1, 2 or 15: always below 256.
        128 + self.number() as u8
    }

    /// The one-line reason, as the client prints it after `switchboard: `.
    pub fn message(self) -> &'static str {
        match self {
            Stop::Interrupt => "interrupted",
            Stop::Terminate => "terminated by SIGTERM",
            Stop::Hangup => "terminated by SIGHUP",
        }
    }

    fn kind(self) -> SignalKind {
        SignalKind::from_raw(self.number())
    }
}

/// What to do with a signal whose disposition this process inherited as "ignore"
/// (`SIG_IGN`: `nohup` for SIGHUP, `trap '' SIG`, and SIGINT for a background job
/// of a non-interactive shell, e.g. `cmd &` in a script).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inherited {
    /// Left ignored, not watched: the parent asked for it (the client commands,
    /// as shell utilities do).
    Kept,
    /// Watched anyway: a server stops on SIGINT and SIGTERM however it was
    /// started (`bridge`).
    Overridden,
}

/// The handlers of the signals a command watches; see the module documentation.
pub struct Signals {
    /// One per watched signal, in [`Stop::ALL`]'s order.
    watched: Vec<(Stop, Signal)>,
}

impl Signals {
    /// Installs the handlers of `stops` (with `inherited` saying what to do with
    /// one inherited as ignored). Must run inside a Tokio runtime with signals
    /// enabled. Errors: the runtime cannot watch signals.
    pub fn watch(stops: &[Stop], inherited: Inherited) -> io::Result<Signals> {
        let mut watched = Vec::with_capacity(stops.len());
        for &stop in Stop::ALL.iter().filter(|s| stops.contains(s)) {
            if inherited == Inherited::Kept && ignored(stop.number()) {
                tracing::debug!(signal = stop.number(), "inherited as ignored: not watched");
                continue;
            }
            watched.push((stop, signal(stop.kind())?));
        }
        Ok(Signals { watched })
    }

    /// Watches `stop` too (with `inherited` for it alone), if it is not yet.
    /// Errors: as [`Signals::watch`].
    pub fn also(&mut self, stop: Stop, inherited: Inherited) -> io::Result<()> {
        if self.watched.iter().any(|(s, _)| *s == stop) {
            return Ok(());
        }
        let mut more = Signals::watch(&[stop], inherited)?;
        self.watched.append(&mut more.watched);
        let rank = |s: &Stop| Stop::ALL.iter().position(|a| a == s);
        self.watched.sort_by_key(|(s, _)| rank(s));
        Ok(())
    }

    /// The next signal; never resolves when none is watched. Cancel safe: a signal
    /// that arrives while no one waits is kept for the next call (signals of one
    /// kind that arrive before the runtime wakes count as one, as the kernel
    /// merges pending signals).
    pub async fn next(&mut self) -> Stop {
        std::future::poll_fn(|cx| {
            for (stop, signal) in &mut self.watched {
                if signal.poll_recv(cx).is_ready() {
                    return std::task::Poll::Ready(*stop);
                }
            }
            std::task::Poll::Pending
        })
        .await
    }
}

/// Whether signal `signo`'s disposition is "ignore" (`SIG_IGN`), as inherited
/// from the parent.
fn ignored(signo: i32) -> bool {
    // SAFETY: a query only (no new action is set); `old` is a valid, zeroed
    // `sigaction` for the kernel to fill in.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signo, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_shell() {
        assert_eq!(Stop::Interrupt.exit_code(), 130);
        assert_eq!(Stop::Terminate.exit_code(), 143);
        assert_eq!(Stop::Hangup.exit_code(), 129);
        for stop in Stop::ALL {
            assert!(![0, 1, 2].contains(&stop.exit_code()), "{stop:?}");
        }
    }

    /// A signal raised before anyone waits is kept for the next wait, and a
    /// signal not watched is not reported.
    #[test]
    fn a_signal_before_the_wait_is_kept() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            // SIGHUP only: the test harness's own SIGINT and SIGTERM stay as they are.
            let mut signals = Signals::watch(&[Stop::Hangup], Inherited::Overridden).unwrap();
            // SAFETY: raising a signal this process handles (installed above).
            assert_eq!(unsafe { libc::raise(libc::SIGHUP) }, 0);
            let got = tokio::time::timeout(std::time::Duration::from_secs(30), signals.next())
                .await
                .expect("the raised signal is seen");
            assert_eq!(got, Stop::Hangup);
            let again =
                tokio::time::timeout(std::time::Duration::from_millis(50), signals.next()).await;
            assert!(again.is_err(), "one signal is reported once");
        });
    }
}
