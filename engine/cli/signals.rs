//! The signals that stop a command: SIGINT (Ctrl-C), SIGTERM (what supervisors, `timeout`,
//! containers and CI send) and SIGHUP (the terminal went away). `run`, `serve` and `watch`
//! treat all three alike: running calls are cancelled, their processes killed, and the final
//! result is still reported.

use nix::sys::signal::Signal;
use tokio::signal::unix::{SignalKind, signal};

/// Listeners for SIGINT, SIGTERM and SIGHUP, installed when created.
///
/// Create it before starting work: from then on none of the three kills the process, and a
/// signal that arrives while nobody awaits [`Termination::recv`] is kept for the next call.
pub struct Termination {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
    hangup: tokio::signal::unix::Signal,
}

impl Termination {
    /// Installs the listeners (needs a running tokio runtime).
    pub fn listen() -> std::io::Result<Self> {
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    /// Waits for the next of the three signals and returns its number.
    pub async fn recv(&mut self) -> i32 {
        tokio::select! {
            _ = self.interrupt.recv() => Signal::SIGINT as i32,
            _ = self.terminate.recv() => Signal::SIGTERM as i32,
            _ = self.hangup.recv() => Signal::SIGHUP as i32,
        }
    }
}
