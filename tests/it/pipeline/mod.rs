//! The call pipeline: the executor, handlers, hooks and permission.

mod executor;
mod handler;
mod hooks;
mod permission;
