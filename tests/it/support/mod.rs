//! Helpers shared by the test modules.

pub mod alone;
pub mod batch;
pub mod budget;
pub mod check;
pub mod executor;
pub mod hooks;
pub mod lines;
pub mod node;
pub mod reload;
pub mod serve;
