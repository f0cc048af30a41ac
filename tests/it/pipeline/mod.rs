//! The call pipeline: the executor, handlers, hooks and permission.

mod decision_agreement;
mod decision_log;
mod executor;
mod handler;
mod hooks;
mod permission;
