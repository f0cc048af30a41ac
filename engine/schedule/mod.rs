//! Batch scheduling: the pure grouping of a batch into groups that run concurrently, and
//! the execution of those groups one after another.

pub mod grouping;
pub mod run;

pub use grouping::{Concurrency, group};
