//! Hot reload of the policy set.

mod engine;
mod soak;
