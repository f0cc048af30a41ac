//! The pausable deadline of one call (SPEC §5.2).
//!
//! The clock starts when the pipeline creates the deadline (after permission is granted) and
//! runs while the call works. While the call is queued at an admission gate the deadline is
//! paused: the remaining time is conserved and the paused time is reported as `queued_ms`.
//! The timeout stage races the handler against [`Deadline::expired`]; gates pause the clock
//! through [`Deadline::pause`].
//!
//! The deadline is a cheap `Clone` (an `Arc`) shared by the timeout stage, the handler
//! context and the gates. All time comes from `tokio::time`, so tests with paused time are
//! deterministic.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration as StdDuration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// The running-time budget of one call, which can be paused while the call is queued.
#[derive(Clone)]
pub struct Deadline {
    inner: Arc<Inner>,
}

struct Inner {
    /// `None`: the call has no timeout (the deadline never expires, pauses are still counted).
    budget: Option<StdDuration>,
    state: Mutex<State>,
    /// Notified on every pause and resume so that waiting [`Deadline::expired`] futures
    /// recompute their sleep. (A `Notify` rather than a watch channel: one is made per call,
    /// and it costs no allocation of its own.)
    changed: Notify,
    /// Set by the first pause (before it returns), so that reading the paused time of a
    /// deadline that never paused takes no lock.
    ever_paused: AtomicBool,
}

struct State {
    /// Running time accumulated in earlier running stretches.
    spent: StdDuration,
    /// Start of the current running stretch; `None` while paused.
    // INVARIANT: `running_since.is_some()` exactly when `pauses == 0`, and
    // `paused_since.is_some()` exactly when `pauses > 0`.
    running_since: Option<Instant>,
    pauses: usize,
    paused_since: Option<Instant>,
    /// Paused time of finished pauses.
    paused_total: StdDuration,
}

impl State {
    fn spent_at(&self, now: Instant) -> StdDuration {
        match self.running_since {
            Some(since) => self.spent + now.saturating_duration_since(since),
            None => self.spent,
        }
    }

    fn paused_at(&self, now: Instant) -> StdDuration {
        match self.paused_since {
            Some(since) => self.paused_total + now.saturating_duration_since(since),
            None => self.paused_total,
        }
    }
}

impl Deadline {
    /// Starts a deadline that expires after `budget` of running time; `None` never expires.
    pub fn new(budget: Option<StdDuration>) -> Self {
        Self {
            inner: Arc::new(Inner {
                budget,
                state: Mutex::new(State {
                    spent: StdDuration::ZERO,
                    running_since: Some(Instant::now()),
                    pauses: 0,
                    paused_since: None,
                    paused_total: StdDuration::ZERO,
                }),
                changed: Notify::new(),
                ever_paused: AtomicBool::new(false),
            }),
        }
    }

    /// A deadline that never expires (for calls with `timeout: none`).
    pub fn unlimited() -> Self {
        Self::new(None)
    }

    /// The running-time budget this deadline was started with.
    pub fn budget(&self) -> Option<StdDuration> {
        self.inner.budget
    }

    /// Running time left; `None` when the deadline has no budget.
    pub fn remaining(&self) -> Option<StdDuration> {
        let budget = self.inner.budget?;
        Some(budget.saturating_sub(self.lock().spent_at(Instant::now())))
    }

    /// Running time used so far (excludes paused time).
    pub fn spent(&self) -> StdDuration {
        self.lock().spent_at(Instant::now())
    }

    /// Total time spent paused so far, including a pause in progress: the call's queued time.
    pub fn paused_total(&self) -> StdDuration {
        // A deadline that was never paused (most) is not locked.
        if !self.inner.ever_paused.load(Ordering::Acquire) {
            return StdDuration::ZERO;
        }
        let state = self.lock();
        // Only a pause in progress needs the clock.
        match state.paused_since {
            Some(_) => state.paused_at(Instant::now()),
            None => state.paused_total,
        }
    }

    /// Whether the deadline is currently paused.
    pub fn is_paused(&self) -> bool {
        self.lock().pauses > 0
    }

    /// Whether the running time is spent.
    pub fn is_expired(&self) -> bool {
        self.remaining().is_some_and(|left| left.is_zero())
    }

    /// Pauses the clock until the returned guard is dropped.
    ///
    /// Pauses nest: the clock resumes when the last guard is dropped. A deadline that has
    /// already expired stays expired.
    pub fn pause(&self) -> PauseGuard {
        let now = Instant::now();
        {
            let mut state = self.lock();
            if state.pauses == 0 {
                state.spent = state.spent_at(now);
                state.running_since = None;
                state.paused_since = Some(now);
            }
            state.pauses += 1;
        }
        self.inner.ever_paused.store(true, Ordering::Release);
        self.inner.changed.notify_waiters();
        PauseGuard {
            deadline: self.clone(),
        }
    }

    /// Resolves when the running time is spent; never resolves for a deadline without budget.
    ///
    /// Cancel-safe; any number of these futures may wait on the same deadline.
    pub async fn expired(&self) {
        let Some(budget) = self.inner.budget else {
            return std::future::pending().await;
        };
        loop {
            // Register for the next pause or resume before reading the state, so one that
            // lands after the read wakes the wait below instead of being lost.
            let changed = self.inner.changed.notified();
            let mut changed = std::pin::pin!(changed);
            changed.as_mut().enable();
            let (running, remaining) = {
                let state = self.lock();
                let remaining = budget.saturating_sub(state.spent_at(Instant::now()));
                (state.running_since.is_some(), remaining)
            };
            if remaining.is_zero() {
                return;
            }
            if running {
                tokio::select! {
                    () = tokio::time::sleep(remaining) => {}
                    () = changed => {}
                }
            } else {
                changed.await;
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is a few plain numbers updated atomically under the lock, so it is
        // consistent even if a holder panicked.
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn resume(&self) {
        let now = Instant::now();
        {
            let mut state = self.lock();
            state.pauses = state.pauses.saturating_sub(1);
            if state.pauses == 0 {
                state.paused_total = state.paused_at(now);
                state.paused_since = None;
                state.running_since = Some(now);
            }
        }
        self.inner.changed.notify_waiters();
    }
}

impl fmt::Debug for Deadline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Deadline")
            .field("budget", &self.inner.budget)
            .field("remaining", &self.remaining())
            .field("paused", &self.is_paused())
            .field("paused_total", &self.paused_total())
            .finish()
    }
}

/// Keeps a [`Deadline`] paused; the clock resumes when the last guard is dropped.
#[must_use = "the deadline resumes as soon as the guard is dropped"]
pub struct PauseGuard {
    deadline: Deadline,
}

impl Drop for PauseGuard {
    fn drop(&mut self) {
        self.deadline.resume();
    }
}

impl fmt::Debug for PauseGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PauseGuard").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::pin::pin;
    use std::task::Poll;

    use tokio::time::{advance, sleep};

    use super::*;

    fn secs(value: u64) -> StdDuration {
        StdDuration::from_secs(value)
    }

    /// Whether the future is ready right now, without advancing time.
    fn ready<F: std::future::Future>(future: std::pin::Pin<&mut F>) -> bool {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        matches!(future.poll(&mut cx), Poll::Ready(_))
    }

    #[tokio::test(start_paused = true)]
    async fn expires_at_the_budget() {
        let start = Instant::now();
        let deadline = Deadline::new(Some(secs(5)));
        deadline.expired().await;
        assert_eq!(start.elapsed(), secs(5));
        assert!(deadline.is_expired());
        assert_eq!(deadline.remaining(), Some(StdDuration::ZERO));
    }

    #[tokio::test(start_paused = true)]
    async fn pause_conserves_the_remaining_time() {
        let start = Instant::now();
        let deadline = Deadline::new(Some(secs(5)));
        advance(secs(2)).await;
        let guard = deadline.pause();
        advance(secs(10)).await;
        assert_eq!(deadline.remaining(), Some(secs(3)));
        assert!(!deadline.is_expired());
        drop(guard);
        deadline.expired().await;
        assert_eq!(start.elapsed(), secs(15));
        assert_eq!(deadline.paused_total(), secs(10));
        assert_eq!(deadline.spent(), secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_expiry_follows_pause_and_resume() {
        let start = Instant::now();
        let deadline = Deadline::new(Some(secs(5)));
        let pauser = {
            let deadline = deadline.clone();
            tokio::spawn(async move {
                sleep(secs(1)).await;
                let guard = deadline.pause();
                sleep(secs(7)).await;
                drop(guard);
            })
        };
        deadline.expired().await;
        assert_eq!(start.elapsed(), secs(12));
        assert_eq!(deadline.paused_total(), secs(7));
        pauser.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn nested_pauses_resume_with_the_last_guard() {
        let deadline = Deadline::new(Some(secs(5)));
        let outer = deadline.pause();
        let inner = deadline.pause();
        advance(secs(3)).await;
        drop(outer);
        assert!(deadline.is_paused());
        advance(secs(3)).await;
        assert_eq!(deadline.remaining(), Some(secs(5)));
        drop(inner);
        assert!(!deadline.is_paused());
        advance(secs(1)).await;
        assert_eq!(deadline.remaining(), Some(secs(4)));
        assert_eq!(deadline.paused_total(), secs(6));
    }

    #[tokio::test(start_paused = true)]
    async fn paused_total_counts_a_pause_in_progress() {
        let deadline = Deadline::new(None);
        advance(secs(1)).await;
        let guard = deadline.pause();
        advance(secs(4)).await;
        assert_eq!(deadline.paused_total(), secs(4));
        drop(guard);
        advance(secs(4)).await;
        assert_eq!(deadline.paused_total(), secs(4));
        assert_eq!(deadline.spent(), secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn without_budget_it_never_expires() {
        let deadline = Deadline::unlimited();
        let expired = tokio::time::timeout(secs(1_000_000), deadline.expired()).await;
        assert!(expired.is_err());
        assert_eq!(deadline.remaining(), None);
        assert!(!deadline.is_expired());
    }

    #[tokio::test(start_paused = true)]
    async fn a_paused_deadline_does_not_expire() {
        let deadline = Deadline::new(Some(secs(1)));
        let _guard = deadline.pause();
        let mut expired = pin!(deadline.expired());
        assert!(!ready(expired.as_mut()));
        advance(secs(100)).await;
        assert!(!ready(expired.as_mut()));
    }

    #[tokio::test(start_paused = true)]
    async fn an_expired_deadline_stays_expired_when_paused() {
        let deadline = Deadline::new(Some(secs(1)));
        advance(secs(2)).await;
        let _guard = deadline.pause();
        let mut expired = pin!(deadline.expired());
        assert!(ready(expired.as_mut()));
    }
}
