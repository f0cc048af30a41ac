//! The call pipeline: the executor, handlers, hooks and permission.

mod decision_agreement;
mod executor;
mod handler;
mod hooks;
mod permission;
