//! Tests of the `policy` module that reach into its internals (moved here from the
//! integration tests, which use the public API only).

mod fast_path;
mod paths;
mod security;
mod shell_props;
