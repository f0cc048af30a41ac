//! The command-line interface: one library function per command returning a report; the
//! binary (`main.rs`) parses arguments, calls it, renders and maps to an exit code.
//!
//! Exit codes are the same for every command: 0 success; 1 the command ran and found
//! problems (invalid policies, failed policy tests, failed calls where asked to fail); 2 a
//! usage or I/O error; 128 + the signal's number when SIGINT, SIGTERM or SIGHUP stopped `run`
//! or `serve` (130, 143, 129), after the cancelled calls were reported.

pub mod batch_file;
mod batch_json;
pub mod check;
pub mod diff;
pub mod explain;
pub mod init;
pub mod plan;
pub mod prompt;
pub mod run;
pub mod schema;
pub mod signals;
pub mod test;
pub mod watch;

use std::path::PathBuf;

use crate::snapshot::{LayerOptions, LoadOptions};

/// Options every command shares: which policy roots make up the set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GlobalOptions {
    /// `--policies` roots, lowest layer first.
    pub policies: Vec<PathBuf>,
    /// `--enforced` roots, lowest layer first (they load right after the built-in layer).
    pub enforced: Vec<PathBuf>,
    /// `--no-builtin`: drop the built-in contracts, rules, gates and modes (the engine
    /// defaults stay).
    pub no_builtin: bool,
    /// `--workspace`: the workspace root (default: the current directory).
    pub workspace: Option<PathBuf>,
}

impl GlobalOptions {
    /// The load options these flags describe.
    pub fn load_options(&self) -> LoadOptions {
        let mut options = LoadOptions::new(LayerOptions {
            no_builtin: self.no_builtin,
            enforced: self.enforced.clone(),
            policies: self.policies.clone(),
        });
        if let Some(workspace) = &self.workspace {
            options.workspace_root =
                std::path::absolute(workspace).unwrap_or_else(|_| workspace.clone());
        }
        options
    }
}

/// How a command ended, as a process exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// 0: success.
    Success,
    /// 1: the command ran and found problems.
    Problems,
    /// 2: usage or I/O error.
    Usage,
    /// 128 + the signal's number: stopped by this signal (running calls were cancelled and
    /// reported first).
    Signalled(i32),
}

impl Exit {
    /// The process exit code.
    pub fn code(self) -> i32 {
        match self {
            Exit::Success => 0,
            Exit::Problems => 1,
            Exit::Usage => 2,
            Exit::Signalled(signal) => 128 + signal,
        }
    }
}

/// Whether any diagnostic is an I/O problem with the inputs themselves (exit 2 rather than 1).
pub fn is_io_problem(diagnostics: &[crate::diagnostics::Diagnostic]) -> bool {
    diagnostics
        .iter()
        .any(|d| matches!(d.code, crate::diagnostics::Code::IoNotFound) && d.location.is_none())
}
