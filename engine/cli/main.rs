//! The `toolgate` binary: the command line is in the library (`cli::command`).

#![forbid(unsafe_code)]

use std::process::ExitCode;

// Deciding `shell` rules parses command lines, which allocates many small values.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    toolgate::cli_main()
}
