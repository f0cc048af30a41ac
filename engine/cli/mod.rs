//! The command-line interface: one library function per command returning a report;
//! [`command`] parses arguments, calls it, renders and maps to an exit code (the binary,
//! `main.rs`, only calls `command::main`).
//!
//! Exit codes are the same for every command: 0 success; 1 the command ran and found
//! problems (invalid policies, failed policy tests, failed calls where asked to fail); 2 a
//! usage or I/O error; 128 + the signal's number when SIGINT, SIGTERM or SIGHUP stopped `run`
//! or `serve` (130, 143, 129), after the cancelled calls were reported.

pub mod batch_file;
pub mod check;
pub mod command;
pub mod diff;
pub mod explain;
pub mod hook;
pub mod hook_server;
pub mod import;
pub mod init;
pub mod mcp;
pub mod mcp_check;
pub mod mcp_import;
pub mod mcp_serve;
pub mod plan;
pub mod prompt;
pub mod run;
pub mod schema;
pub mod signals;
pub mod test;
pub mod trust;
pub mod watch;

// What `command` names besides the subcommands, from other modules.
pub use crate::import::Agent as ImportAgent;
pub use crate::model::Duration;
pub use crate::model::agent::AgentProtocol;
pub use crate::review::Risk;

use std::path::{Path, PathBuf};

use crate::snapshot::{LayerOptions, LoadOptions, ProjectLayer};

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
    /// `--workspace`: the workspace root (default: the project root, else the current
    /// directory).
    pub workspace: Option<PathBuf>,
    /// The project root found by [`find_project_root`], if any: `toolgate test` looks for
    /// its tests under it.
    pub project_root: Option<PathBuf>,
    /// The project's policy folder when it was found rather than named with `--policies`
    /// (it is then also the last of `policies`): its layer is trusted only once the user
    /// trusts the project (`toolgate trust`).
    pub found_project: Option<PathBuf>,
    /// The user's own policy folder (`~/.config/toolgate/policies`), loaded when no
    /// `--policies` is given and the folder exists.
    pub user_policies: Option<PathBuf>,
    /// The user's configuration folder (trust store, user policies); see
    /// `snapshot::trust::config_dir`.
    pub config_dir: Option<PathBuf>,
}

/// The folder `toolgate init` writes, and whose parent is the project root.
pub const PROJECT_DIR: &str = ".toolgate";

/// The project root for `start`: the nearest of `start` and its ancestors that holds a
/// `.toolgate/policies` folder (what `toolgate init` writes), found the way git finds `.git`.
/// A `.toolgate` folder without `policies` (such as the artifact store `~/.toolgate`) does
/// not make a project.
pub fn find_project_root(start: &Path) -> Option<PathBuf> {
    let start = std::path::absolute(start).unwrap_or_else(|_| start.to_owned());
    start
        .ancestors()
        .find(|dir| dir.join(PROJECT_DIR).join("policies").is_dir())
        .map(Path::to_owned)
}

impl GlobalOptions {
    /// Fills in what the user's configuration and the project around `cwd` give when the
    /// flags do not say. With no `--policies`: the user's own policies
    /// (`~/.config/toolgate/policies`, when it exists) form the user layer, and the
    /// project's `.toolgate/policies` is the policy root — subject to trust, as it was found
    /// rather than named. With no `--workspace`, the project root is the workspace (so path
    /// rules and relative handler paths are taken against it wherever the command runs).
    pub fn with_project_defaults(mut self, cwd: &Path) -> Self {
        if self.config_dir.is_none() {
            self.config_dir = crate::snapshot::trust::config_dir();
        }
        let explicit = !self.policies.is_empty();
        if !explicit && self.user_policies.is_none() {
            self.user_policies = self
                .config_dir
                .as_ref()
                .map(|dir| dir.join(crate::snapshot::trust::USER_POLICIES))
                .filter(|dir| dir.is_dir());
        }
        let Some(root) = find_project_root(cwd) else {
            return self;
        };
        if !explicit {
            let policies = root.join(PROJECT_DIR).join("policies");
            self.policies.push(policies.clone());
            self.found_project = Some(policies);
        }
        if self.workspace.is_none() {
            self.workspace = Some(root.clone());
        }
        self.project_root = Some(root);
        self
    }

    /// The flags with every relative path taken against `cwd` (for a command run on behalf
    /// of a process in another folder: the hook server's clients).
    pub fn taken_against(mut self, cwd: &Path) -> Self {
        let join = |path: &mut PathBuf| {
            if path.is_relative() {
                *path = cwd.join(&*path);
            }
        };
        self.policies.iter_mut().for_each(join);
        self.enforced.iter_mut().for_each(join);
        if let Some(workspace) = self.workspace.as_mut() {
            join(workspace);
        }
        self
    }

    /// The load options these flags describe. A found project's policy folder is the
    /// project layer (subject to trust) as long as it is still the last policy root.
    pub fn load_options(&self) -> LoadOptions {
        let mut policies = self.policies.clone();
        let project = match (&self.found_project, &self.project_root) {
            (Some(found), Some(root)) if policies.last() == Some(found) => {
                policies.pop();
                Some(ProjectLayer {
                    root: root.clone(),
                    policies: found.clone(),
                })
            }
            _ => None,
        };
        let mut options = LoadOptions::new(LayerOptions {
            no_builtin: self.no_builtin,
            enforced: self.enforced.clone(),
            user: self.user_policies.clone(),
            policies,
            project,
        });
        options.config_dir = self.config_dir.clone();
        if let Some(workspace) = &self.workspace {
            options.workspace_root =
                std::path::absolute(workspace).unwrap_or_else(|_| workspace.clone());
        }
        options
    }
}

/// `n` and the noun, in the singular for one: `1 call`, `2 calls`. `plural` is the plural
/// form (`calls`, `properties`).
pub fn count(n: usize, singular: &str, plural: &str) -> String {
    if n == 1 {
        format!("1 {singular}")
    } else {
        format!("{n} {plural}")
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
