//! Named admission gates (SPEC §5.3): counting semaphores declared in the `gates` section.
//!
//! A call whose contract names a gate acquires a permit before its handler starts; a handler
//! may also pass through a gate mid-call via its call context. While a call waits in the
//! queue its [`Deadline`] is paused, so a rate-limited API slows calls down without making
//! them time out. Waiting is cancellable through the call's token.

use std::fmt;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use indexmap::IndexMap;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Deadline;
use crate::model::GateName;

/// The admission gates of one snapshot, by name. Built once, shared as `Arc<Gates>`.
#[derive(Default)]
pub struct Gates {
    gates: IndexMap<GateName, Gate>,
}

struct Gate {
    permits: usize,
    semaphore: Arc<Semaphore>,
}

/// A gate declaration that cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GateConfigError {
    /// A gate with no permits would block every call forever.
    #[error("gate `{0}` has 0 permits: a gate needs at least 1")]
    ZeroPermits(GateName),
    /// More permits than a semaphore can hold.
    #[error("gate `{gate}` has {permits} permits, more than the maximum of {max}")]
    TooManyPermits {
        /// The gate.
        gate: GateName,
        /// The permits it declares.
        permits: usize,
        /// The largest accepted number.
        max: usize,
    },
    /// The same name declared twice.
    #[error("gate `{0}` is declared twice")]
    Duplicate(GateName),
}

/// Why a call did not get through a gate.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GateError {
    /// No gate of that name is declared.
    #[error("unknown gate `{0}`")]
    Unknown(GateName),
    /// The call already holds this gate (it was admitted through it).
    #[error(
        "this call already holds gate `{0}` (it was admitted through it); passing it again would wait on itself"
    )]
    Held(GateName),
    /// The call was cancelled while queued.
    #[error("cancelled while queued at gate `{gate}`")]
    Cancelled {
        /// The gate.
        gate: GateName,
        /// How long the call had been queued.
        queued: StdDuration,
    },
}

/// A permit of one gate, held until dropped.
pub struct GatePermit {
    gate: GateName,
    queued: StdDuration,
    _permit: OwnedSemaphorePermit,
}

impl GatePermit {
    /// The gate this permit belongs to.
    pub fn gate(&self) -> &GateName {
        &self.gate
    }

    /// How long the call waited for this permit (zero when one was free).
    pub fn queued(&self) -> StdDuration {
        self.queued
    }
}

impl fmt::Debug for GatePermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GatePermit")
            .field("gate", &self.gate)
            .field("queued", &self.queued)
            .finish()
    }
}

impl Gates {
    /// Builds the gates from `(name, permits)` pairs.
    pub fn new(
        gates: impl IntoIterator<Item = (GateName, usize)>,
    ) -> Result<Self, GateConfigError> {
        let mut built = IndexMap::new();
        for (name, permits) in gates {
            if permits == 0 {
                return Err(GateConfigError::ZeroPermits(name));
            }
            if permits > Semaphore::MAX_PERMITS {
                return Err(GateConfigError::TooManyPermits {
                    gate: name,
                    permits,
                    max: Semaphore::MAX_PERMITS,
                });
            }
            if built.contains_key(&name) {
                return Err(GateConfigError::Duplicate(name));
            }
            let gate = Gate {
                permits,
                semaphore: Arc::new(Semaphore::new(permits)),
            };
            built.insert(name, gate);
        }
        Ok(Self { gates: built })
    }

    /// No gates at all.
    pub fn empty() -> Self {
        Self::default()
    }

    /// Whether a gate of this name exists.
    pub fn contains(&self, name: &str) -> bool {
        self.gates.contains_key(name)
    }

    /// The declared gate names, in declaration order.
    pub fn names(&self) -> impl Iterator<Item = &GateName> {
        self.gates.keys()
    }

    /// `(free, declared)` permits of a gate, for diagnostics.
    pub fn permits(&self, name: &str) -> Option<(usize, usize)> {
        self.gates
            .get(name)
            .map(|gate| (gate.semaphore.available_permits(), gate.permits))
    }

    /// Waits for a permit of gate `name`, with `deadline` paused while queued.
    ///
    /// Cancelling `cancel` ends the wait with [`GateError::Cancelled`]. Waiters are served
    /// in arrival order (tokio's semaphore is fair).
    pub async fn acquire(
        &self,
        name: &GateName,
        deadline: &Deadline,
        cancel: &CancellationToken,
    ) -> Result<GatePermit, GateError> {
        let gate = self
            .gates
            .get(name)
            .ok_or_else(|| GateError::Unknown(name.clone()))?;
        if cancel.is_cancelled() {
            return Err(GateError::Cancelled {
                gate: name.clone(),
                queued: StdDuration::ZERO,
            });
        }
        match Arc::clone(&gate.semaphore).try_acquire_owned() {
            Ok(permit) => {
                return Ok(GatePermit {
                    gate: name.clone(),
                    queued: StdDuration::ZERO,
                    _permit: permit,
                });
            }
            // Closed cannot happen (gates are never closed); queue like NoPermits and let
            // the acquire below report it.
            Err(TryAcquireError::NoPermits | TryAcquireError::Closed) => {}
        }
        let queued_at = Instant::now();
        let _paused = deadline.pause();
        let acquired = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            permit = Arc::clone(&gate.semaphore).acquire_owned() => permit.ok(),
        };
        let queued = queued_at.elapsed();
        match acquired {
            Some(permit) => Ok(GatePermit {
                gate: name.clone(),
                queued,
                _permit: permit,
            }),
            None => Err(GateError::Cancelled {
                gate: name.clone(),
                queued,
            }),
        }
    }
}

impl fmt::Debug for Gates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for (name, gate) in &self.gates {
            map.entry(name, &(gate.semaphore.available_permits(), gate.permits));
        }
        map.finish()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration as StdDuration;

    use tokio::time::{advance, sleep};

    use super::*;

    fn secs(value: u64) -> StdDuration {
        StdDuration::from_secs(value)
    }

    fn api() -> GateName {
        GateName::from("api")
    }

    #[test]
    fn bad_declarations_are_rejected() {
        assert_eq!(
            Gates::new([(api(), 0)]).unwrap_err(),
            GateConfigError::ZeroPermits(api())
        );
        assert_eq!(
            Gates::new([(api(), 1), (api(), 2)]).unwrap_err(),
            GateConfigError::Duplicate(api())
        );
        assert!(matches!(
            Gates::new([(api(), usize::MAX)]),
            Err(GateConfigError::TooManyPermits { .. })
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn unknown_gate_is_an_error() {
        let gates = Gates::empty();
        let err = gates
            .acquire(&api(), &Deadline::unlimited(), &CancellationToken::new())
            .await
            .unwrap_err();
        assert_eq!(err, GateError::Unknown(api()));
        assert_eq!(err.to_string(), "unknown gate `api`");
    }

    #[tokio::test(start_paused = true)]
    async fn permits_are_respected() {
        let gates = Arc::new(Gates::new([(api(), 2)]).unwrap());
        let running = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let peak = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..6 {
            let (gates, running, peak) = (gates.clone(), running.clone(), peak.clone());
            tasks.push(tokio::spawn(async move {
                let deadline = Deadline::unlimited();
                let permit = gates
                    .acquire(&api(), &deadline, &CancellationToken::new())
                    .await
                    .unwrap();
                let now = running.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                peak.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
                sleep(secs(1)).await;
                running.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                drop(permit);
                deadline.paused_total()
            }));
        }
        let mut queued = Vec::new();
        for task in tasks {
            queued.push(task.await.unwrap());
        }
        queued.sort();
        assert_eq!(peak.load(std::sync::atomic::Ordering::SeqCst), 2);
        assert_eq!(
            queued,
            vec![secs(0), secs(0), secs(1), secs(1), secs(2), secs(2)]
        );
        assert_eq!(gates.permits("api"), Some((2, 2)));
    }

    #[tokio::test(start_paused = true)]
    async fn queued_time_does_not_count_against_the_deadline() {
        let gates = Arc::new(Gates::new([(api(), 1)]).unwrap());
        let holder = gates
            .acquire(&api(), &Deadline::unlimited(), &CancellationToken::new())
            .await
            .unwrap();
        let release = tokio::spawn(async move {
            sleep(secs(10)).await;
            drop(holder);
        });

        // A call with a 5 s budget queues for 10 s, then works for 4 s: no timeout.
        let deadline = Deadline::new(Some(secs(5)));
        let work = async {
            let permit = gates
                .acquire(&api(), &deadline, &CancellationToken::new())
                .await
                .unwrap();
            assert_eq!(permit.queued(), secs(10));
            sleep(secs(4)).await;
            "done"
        };
        let outcome = tokio::select! {
            done = work => done,
            () = deadline.expired() => "timed out",
        };
        assert_eq!(outcome, "done");
        assert_eq!(deadline.paused_total(), secs(10));
        assert_eq!(deadline.remaining(), Some(secs(1)));
        release.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn cancellation_while_queued() {
        let gates = Gates::new([(api(), 1)]).unwrap();
        let _holder = gates
            .acquire(&api(), &Deadline::unlimited(), &CancellationToken::new())
            .await
            .unwrap();
        let cancel = CancellationToken::new();
        let deadline = Deadline::new(Some(secs(5)));
        let canceller = {
            let cancel = cancel.clone();
            tokio::spawn(async move {
                sleep(secs(3)).await;
                cancel.cancel();
            })
        };
        let err = gates.acquire(&api(), &deadline, &cancel).await.unwrap_err();
        assert_eq!(
            err,
            GateError::Cancelled {
                gate: api(),
                queued: secs(3)
            }
        );
        assert!(!deadline.is_paused());
        assert_eq!(deadline.remaining(), Some(secs(5)));
        canceller.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn an_already_cancelled_call_does_not_take_a_free_permit() {
        let gates = Gates::new([(api(), 1)]).unwrap();
        let cancel = CancellationToken::new();
        cancel.cancel();
        let err = gates
            .acquire(&api(), &Deadline::unlimited(), &cancel)
            .await
            .unwrap_err();
        assert!(matches!(err, GateError::Cancelled { .. }));
        assert_eq!(gates.permits("api"), Some((1, 1)));
        advance(secs(1)).await;
    }
}
