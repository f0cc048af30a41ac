//! toolgate: a declarative policy engine and executor for the tool calls of AI coding agents.
//!
//! Everything an agent runtime usually hard-codes about its tools (which calls may run in
//! parallel, how long each may run, who must approve it, how much of its output the model
//! may see) is read from YAML or TOML policy files, checked against JSON Schemas and
//! hot-reloaded.

// No unsafe code in the library (the package lint is `deny` only so that a bench can count
// allocations with a wrapping allocator).
#![forbid(unsafe_code)]

pub mod approval;
pub mod artifact;
pub mod assess;
pub mod budget;
pub mod cli;
pub mod diagnostics;
pub mod events;
pub mod executor;
pub mod handler;
pub mod hooks;
pub mod load;
pub mod model;
pub mod pipeline;
pub mod policy;
pub mod report;
pub mod review;
pub mod schedule;
pub mod serve;
pub mod snapshot;
pub mod timeout;
