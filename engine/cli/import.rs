//! `toolgate import claude|codex|gemini PATH…`: writes a reviewable policy file from an
//! agent's own rule files (see the crate-private `import` module).

use std::path::{Path, PathBuf};

use crate::import::{Agent, ImportError, import};

/// Where the output goes.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// The policy file (`-o`); standard output when absent.
    pub output: Option<PathBuf>,
    /// The enforced policy file (`--enforced-output`), for organisation rules.
    pub enforced_output: Option<PathBuf>,
}

/// What the command prints.
#[derive(Clone, Debug, Default)]
pub struct ImportReport {
    /// For standard output: the policy, unless written to a file.
    pub stdout: String,
    /// For standard error: every entry not imported exactly, and the files written.
    pub stderr: String,
}

/// Why the command failed.
#[derive(Debug, thiserror::Error)]
pub enum ImportCommandError {
    /// Reading or translating failed.
    #[error(transparent)]
    Import(#[from] ImportError),
    /// The sources hold organisation rules and no file was named for them.
    #[error(
        "the files hold organisation rules (managed settings or admin policies), which belong in an enforced layer: pass `--enforced-output FILE`"
    )]
    EnforcedWithoutOutput,
    /// Writing failed.
    #[error("cannot write `{path}`: {reason}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// Imports and writes.
pub fn run(
    agent: Agent,
    paths: &[PathBuf],
    options: &ImportOptions,
) -> Result<ImportReport, ImportCommandError> {
    let imported = import(agent, paths)?;
    let mut report = ImportReport::default();
    for note in &imported.notes {
        report.stderr.push_str(&format!("warning: {note}\n"));
    }
    let write = |path: &Path, text: &str| {
        std::fs::write(path, text).map_err(|err| ImportCommandError::Write {
            path: path.to_owned(),
            reason: err.to_string(),
        })
    };
    match (&imported.enforced, &options.enforced_output) {
        (Some(_), None) => return Err(ImportCommandError::EnforcedWithoutOutput),
        (Some(text), Some(path)) => {
            write(path, text)?;
            report.stderr.push_str(&format!(
                "wrote the enforced rules to {} (load it with `--enforced`)\n",
                path.display()
            ));
        }
        (None, _) => {}
    }
    match &options.output {
        Some(path) => {
            write(path, &imported.policy)?;
            report
                .stderr
                .push_str(&format!("wrote {}\n", path.display()));
        }
        None => report.stdout = imported.policy,
    }
    Ok(report)
}
