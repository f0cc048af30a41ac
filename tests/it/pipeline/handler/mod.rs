//! Command, HTTP and native handlers.

mod command;
mod http;
mod native;
