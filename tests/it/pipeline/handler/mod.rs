//! Command, HTTP and native handlers.
