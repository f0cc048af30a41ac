//! Process groups of subprocess handlers: every command runs as the leader of its own group,
//! and the whole group is signalled so grandchildren (`sleep 100 &`) never outlive the call.
//!
//! [`ProcessGroup`] is a drop guard: however the call ends (normal exit, cancellation, output
//! cap, or the call's future being dropped mid-flight), the group gets `SIGKILL`.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The process group of one spawned command; SIGKILLed when dropped.
#[derive(Debug)]
pub(crate) struct ProcessGroup {
    pgid: Pid,
    killed: bool,
}

impl ProcessGroup {
    /// The group led by the process `pid` (spawned with `process_group(0)`).
    pub(crate) fn led_by(pid: u32) -> Option<Self> {
        let pid = i32::try_from(pid).ok().filter(|pid| *pid > 0)?;
        Some(Self {
            pgid: Pid::from_raw(pid),
            killed: false,
        })
    }

    /// Sends `signal` to every process of the group.
    pub(crate) fn signal(&self, signal: Signal) {
        // ESRCH (the group is already gone) is the expected outcome late in a call; any
        // other error (EPERM) cannot be acted on either, the drop guard tries again.
        let _ = killpg(self.pgid, signal);
    }

    /// SIGKILLs the whole group, once.
    ///
    /// Sent as soon as the call ends, while a member may still keep the group id alive; a
    /// group id is only reused after every member is gone.
    pub(crate) fn kill(&mut self) {
        if !self.killed {
            self.signal(Signal::SIGKILL);
            self.killed = true;
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The conventional name of a signal number (`SIGKILL`), or `signal N` for unknown ones.
pub(crate) fn signal_name(number: i32) -> String {
    Signal::try_from(number).map_or_else(|_| format!("signal {number}"), |s| s.as_str().to_owned())
}
