//! Timeouts, the pausable deadline and admission gates (SPEC §5).
//!
//! Place in the flow: after permission is granted the pipeline [`resolve`](fn@resolve)s the call's
//! timeout from its contract and input (a pure function), starts a [`Deadline`] with the
//! resolved budget (the cleanup grace comes after it, for the handler to wind down), and hands it to the handler through the call context. Before the handler
//! starts (contract `admission.gate`) and whenever a handler asks mid-call, [`Gates::acquire`]
//! waits for a permit with the deadline paused, so time queued at a gate never counts against
//! the call's timeout.
//!
//! ```text
//! use toolgate::model::{Duration, GateName};
//! use toolgate::timeout::{resolve, Deadline, Gates, TimeoutPolicy};
//! use tokio_util::sync::CancellationToken;
//!
//! let params = TimeoutPolicy {
//!     default: Some(Duration::from_millis(120_000)),
//!     max: Some(Duration::from_millis(600_000)),
//!     override_field: Some("timeout".into()),
//!     cleanup_grace: Duration::from_millis(6_000),
//!     ..TimeoutPolicy::default()
//! };
//! let resolved = resolve(&params, &serde_json::json!({ "timeout": 900_000 }))?
//!     .expect("a timeout applies");
//! assert_eq!(resolved.budget.as_millis(), 600_000); // capped at max: the deadline
//! assert_eq!(resolved.total.as_millis(), 606_000); // plus the grace: killed by then
//!
//! let gates = Gates::new([(GateName::from("api"), 2)])?;
//! let deadline = Deadline::new(Some(resolved.budget));
//! let permit = gates
//!     .acquire(&GateName::from("api"), &deadline, &CancellationToken::new())
//!     .await?;
//! assert!(permit.queued().is_zero());
//! ```

mod deadline;
mod gate;
mod resolve;

pub use deadline::{Deadline, PauseGuard};
pub use gate::{GateConfigError, GateError, GatePermit, Gates};
pub use resolve::{ResolvedTimeout, resolve};

/// The module documentation's example, as a test (the module is crate-private, so rustdoc
/// cannot run it).
#[cfg(test)]
mod doc_example {
    #[tokio::test(flavor = "current_thread")]
    async fn a_timeout_is_capped_and_a_gate_admits() -> Result<(), Box<dyn std::error::Error>> {
        use crate::model::resolved::TimeoutPolicy;
        use crate::model::{Duration, GateName};
        use crate::timeout::{Deadline, Gates, resolve};
        use tokio_util::sync::CancellationToken;

        let params = TimeoutPolicy {
            default: Some(Duration::from_millis(120_000)),
            max: Some(Duration::from_millis(600_000)),
            override_field: Some("timeout".into()),
            cleanup_grace: Duration::from_millis(6_000),
            ..TimeoutPolicy::default()
        };
        let resolved = resolve(&params, &serde_json::json!({ "timeout": 900_000 }))?
            .expect("a timeout applies");
        assert_eq!(resolved.budget.as_millis(), 600_000); // capped at max: the deadline
        assert_eq!(resolved.total.as_millis(), 606_000); // plus the grace: killed by then

        let gates = Gates::new([(GateName::from("api"), 2)])?;
        let deadline = Deadline::new(Some(resolved.budget));
        let permit = gates
            .acquire(&GateName::from("api"), &deadline, &CancellationToken::new())
            .await?;
        assert!(permit.queued().is_zero());
        Ok(())
    }
}
