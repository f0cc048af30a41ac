//! Tests of the `budget` module that reach into its internals (moved here from the
//! integration tests, which use the public API only).

mod artifact_faults;
mod finalizer;
mod producer;
