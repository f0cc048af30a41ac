//! Process groups of subprocess handlers: every command runs as the leader of its own group,
//! and the whole group is signalled so grandchildren (`sleep 100 &`) never outlive the call.
//!
//! [`ProcessGroup`] is a drop guard: however the call ends (normal exit, cancellation, output
//! cap, or the call's future being dropped mid-flight), the group gets `SIGKILL`.
//!
//! A descendant that leaves the group (`setsid`, `setpgid`) is not reached by the group's
//! signal. On Linux two more steps catch it:
//! - while the leader lives, its descendants are found through
//!   `/proc/<pid>/task/<tid>/children` and killed with the group;
//! - after [`become_subreaper`] (the `toolgate` binary calls it at start), a descendant whose
//!   parent exited is reparented to this process instead of init. When a call ends, every
//!   such orphan is killed (with its own descendants) and reaped, unless a call that is
//!   still running started before the orphan did and so may own it; the last of those calls
//!   to end kills it. Processes this program spawned itself are told apart by a registry of
//!   the live group leaders, so only handler and hook processes and what they started are
//!   affected.
//!
//! Elsewhere (and on Linux without [`become_subreaper`]) only the process group is tracked.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The process group of one spawned command; SIGKILLed when dropped.
#[derive(Debug)]
pub(crate) struct ProcessGroup {
    pgid: Pid,
    killed: bool,
}

impl ProcessGroup {
    /// The group led by the process `pid` (spawned with `process_group(0)` while
    /// `spawning` was held).
    pub(crate) fn led_by(pid: u32, spawning: &mut Spawning) -> Option<Self> {
        Self::registered(pid, spawning, true)
    }

    /// The group led by the long-lived process `pid` (an MCP server, spawned with
    /// `process_group(0)` while `spawning` was held): its own processes are never taken for
    /// orphans, and it claims no orphan of a call (it outlives calls: a call's orphans would
    /// live as long as it).
    pub(crate) fn serving(pid: u32, spawning: &mut Spawning) -> Option<Self> {
        Self::registered(pid, spawning, false)
    }

    fn registered(pid: u32, spawning: &mut Spawning, claims: bool) -> Option<Self> {
        let pid = i32::try_from(pid).ok().filter(|pid| *pid > 0)?;
        tracking::register(pid, claims, &mut spawning.0);
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
            // The leader's descendants that left the group, found while the leader lives.
            tracking::kill_leader_descendants(self.pgid.as_raw());
            self.signal(Signal::SIGKILL);
            self.killed = true;
        }
        // Orphans (reparented here) are looked for each time: a second look when the guard
        // drops catches what left the group after the first.
        tracking::kill_orphans(self.pgid.as_raw());
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
        tracking::unregister(self.pgid.as_raw());
    }
}

/// Held while a handler process is spawned and registered: the registry of live group
/// leaders, locked, so that no sweep for orphans runs in between.
pub(crate) struct Spawning(std::sync::MutexGuard<'static, Vec<Leader>>);

/// Locks the registry for a spawn.
pub(crate) fn spawning() -> Spawning {
    Spawning(
        LEADERS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    )
}

/// Whether [`become_subreaper`] succeeded.
static SUBREAPER: AtomicBool = AtomicBool::new(false);

/// Makes this process a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`): descendants of
/// handler and hook processes whose parent exits are reparented here, and each call kills
/// those it left behind when it ends. Returns whether the setting took effect (always
/// `false` on other systems).
///
/// Process-wide: call it once at start, in a program that spawns no other long-lived
/// children of its own that could exit and leave orphans (this program reaps the orphans
/// it kills; other orphans would be reparented here and stay as zombies).
pub fn become_subreaper() -> bool {
    #[cfg(target_os = "linux")]
    {
        if nix::sys::prctl::set_child_subreaper(true).is_ok() {
            SUBREAPER.store(true, Ordering::SeqCst);
            return true;
        }
    }
    false
}

#[cfg(target_os = "linux")]
mod tracking {
    use std::collections::HashSet;

    use nix::sys::signal::{Signal, kill};
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    use nix::unistd::Pid;

    use super::{LEADERS, Leader, Ordering, SUBREAPER};

    /// Records a live group leader, when it started and whether it may own orphans (in the
    /// locked registry).
    pub(super) fn register(pid: i32, claims: bool, leaders: &mut Vec<Leader>) {
        let started = start_time(pid).unwrap_or(0);
        leaders.push(Leader {
            pid,
            started,
            claims,
        });
    }

    pub(super) fn unregister(pid: i32) {
        lock().retain(|leader| leader.pid != pid);
    }

    fn lock() -> std::sync::MutexGuard<'static, Vec<Leader>> {
        LEADERS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// SIGKILLs every descendant of the registered leader `pid`, if it is still the process
    /// that was registered (not a reaped leader's reused pid).
    pub(super) fn kill_leader_descendants(pid: i32) {
        let registered = lock()
            .iter()
            .find(|leader| leader.pid == pid)
            .map(|leader| leader.started);
        if registered.is_some() && registered == start_time(pid) {
            kill_descendants(pid);
        }
    }

    /// SIGKILLs every descendant of `pid` (not `pid` itself).
    fn kill_descendants(pid: i32) {
        for descendant in descendants(pid) {
            let _ = kill(Pid::from_raw(descendant), Signal::SIGKILL);
        }
    }

    /// Kills and reaps the orphans reparented to this process that the call led by
    /// `leader` may have left, as the module documentation says.
    pub(super) fn kill_orphans(leader: i32) {
        if !SUBREAPER.load(Ordering::SeqCst) {
            return;
        }
        let me = std::process::id() as i32;
        // The registry stays locked for the sweep: no handler process is spawned meanwhile,
        // so every child not in it is an orphan.
        let leaders = lock();
        // Up to a few rounds: killing an orphan's subtree reparents its children here.
        for _ in 0..4 {
            let known: HashSet<i32> = leaders.iter().map(|known| known.pid).collect();
            let mut found = false;
            for orphan in children(me) {
                if known.contains(&orphan) {
                    continue;
                }
                let Some(started) = start_time(orphan) else {
                    continue;
                };
                // A call still running that started no later than the orphan may own it.
                let claimed = leaders
                    .iter()
                    .any(|other| other.claims && other.pid != leader && other.started <= started);
                if claimed {
                    continue;
                }
                found = true;
                kill_descendants(orphan);
                let _ = kill(Pid::from_raw(orphan), Signal::SIGKILL);
                reap(orphan);
            }
            if !found {
                break;
            }
        }
    }

    /// Waits briefly for a SIGKILLed child to be reaped (it is gone within microseconds
    /// unless stuck in the kernel; a later sweep reaps a zombie left here).
    fn reap(pid: i32) {
        for _ in 0..50 {
            match waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => {
                    std::thread::sleep(std::time::Duration::from_millis(1))
                }
                _ => return,
            }
        }
    }

    /// Every descendant of `pid`, parents before children.
    fn descendants(pid: i32) -> Vec<i32> {
        let mut found = Vec::new();
        let mut queue = vec![pid];
        while let Some(next) = queue.pop() {
            for child in children(next) {
                if !found.contains(&child) {
                    found.push(child);
                    queue.push(child);
                }
            }
        }
        found
    }

    /// The children of `pid`, from `/proc/<pid>/task/<tid>/children`.
    fn children(pid: i32) -> Vec<i32> {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for task in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
                found.extend(
                    text.split_whitespace()
                        .filter_map(|n| n.parse::<i32>().ok()),
                );
            }
        }
        found
    }

    /// When `pid` started, in clock ticks since boot (`/proc/<pid>/stat` field 22).
    fn start_time(pid: i32) -> Option<u64> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (_, rest) = stat.rsplit_once(')')?;
        rest.split_whitespace().nth(19)?.parse().ok()
    }
}

#[cfg(not(target_os = "linux"))]
mod tracking {
    pub(super) fn register(_pid: i32, _claims: bool, _leaders: &mut Vec<super::Leader>) {}
    pub(super) fn unregister(_pid: i32) {}
    pub(super) fn kill_leader_descendants(_pid: i32) {}
    pub(super) fn kill_orphans(_leader: i32) {}
}

/// A live group leader this program spawned.
pub(crate) struct Leader {
    pid: i32,
    /// When it started, in clock ticks since boot.
    started: u64,
    /// Whether orphans that started after it may be its own (a call's, not a server's).
    claims: bool,
}

/// The live group leaders.
static LEADERS: Mutex<Vec<Leader>> = Mutex::new(Vec::new());

/// The conventional name of a signal number (`SIGKILL`), or `signal N` for unknown ones.
pub(crate) fn signal_name(number: i32) -> String {
    Signal::try_from(number).map_or_else(|_| format!("signal {number}"), |s| s.as_str().to_owned())
}
