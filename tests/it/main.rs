//! The integration tests, one binary with a module per capability (one test binary links
//! once instead of once per file). Fixtures live in `tests/fixtures/`; helpers shared by
//! several modules live in `support`.

// Test code panics on purpose: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agent;
mod budget;
mod cli;
mod docs;
mod import;
mod load;
mod mcp;
mod pipeline;
mod policy;
mod reload;
mod review;
mod serve;
mod support;
mod trust;
