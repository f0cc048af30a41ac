//! `toolgate trust [DIR]`, `--list`, `--revoke [DIR]`: the user's trust in projects, recorded
//! in the trust store of the configuration folder (see `snapshot::trust`).

use std::path::{Path, PathBuf};

use crate::load::ReadLimits;
use crate::snapshot::trust::{TrustError, TrustStore, project_digest, project_key};

use super::{GlobalOptions, PROJECT_DIR, find_project_root};

/// What to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrustAction {
    /// Trust the project around the folder (default: the current directory).
    Trust(Option<PathBuf>),
    /// Forget the project around the folder.
    Revoke(Option<PathBuf>),
    /// List the trusted projects.
    List,
}

/// Why the command failed.
#[derive(Debug, thiserror::Error)]
pub enum TrustCommandError {
    /// No project around the folder.
    #[error("no project at `{0}`: neither it nor a folder above it holds `.toolgate/policies`")]
    NoProject(PathBuf),
    /// The project's policy files cannot be read.
    #[error("cannot read the policies of `{root}`: {reason}")]
    Unreadable {
        /// The project root.
        root: PathBuf,
        /// Why.
        reason: String,
    },
    /// The trust store cannot be read or written.
    #[error(transparent)]
    Store(#[from] TrustError),
}

/// Runs the command; the text to print.
pub fn trust(
    global: &GlobalOptions,
    cwd: &Path,
    action: &TrustAction,
) -> Result<String, TrustCommandError> {
    let config_dir = global
        .config_dir
        .clone()
        .ok_or(TrustCommandError::Store(TrustError::NoConfigDir))?;
    let project = |dir: &Option<PathBuf>| {
        let start = dir.as_deref().unwrap_or(cwd);
        find_project_root(start).ok_or_else(|| TrustCommandError::NoProject(start.to_owned()))
    };
    match action {
        TrustAction::Trust(dir) => {
            let root = project(dir)?;
            let policies = root.join(PROJECT_DIR).join("policies");
            let digest = project_digest(&policies, &ReadLimits::DEFAULT).map_err(|reason| {
                TrustCommandError::Unreadable {
                    root: root.clone(),
                    reason,
                }
            })?;
            let shown = project_key(&root);
            TrustStore::update(&config_dir, |store| store.trust(&root, digest.clone()))?;
            Ok(format!(
                "trusted `{shown}` as its policies are now ({digest})\nany change to its `.toolgate/policies` needs `toolgate trust` again\n"
            ))
        }
        TrustAction::Revoke(dir) => {
            let root = match project(dir) {
                Ok(root) => root,
                // A project whose policies are gone can still be forgotten by its folder.
                Err(_) if dir.is_some() => dir.clone().unwrap_or_default(),
                Err(error) => return Err(error),
            };
            let shown = project_key(&root);
            let removed = TrustStore::update(&config_dir, |store| store.revoke(&root))?;
            Ok(if removed {
                format!("no longer trusted: `{shown}`\n")
            } else {
                format!("`{shown}` was not trusted\n")
            })
        }
        TrustAction::List => {
            let store = TrustStore::open(&config_dir)?;
            let mut out = String::new();
            for (root, entry) in store.entries() {
                let policies = Path::new(root).join(PROJECT_DIR).join("policies");
                let state = match project_digest(&policies, &ReadLimits::DEFAULT) {
                    Ok(digest) if digest == entry.digest => "trusted",
                    Ok(_) => "changed since trusted: not trusted until `toolgate trust` again",
                    Err(_) => "policies missing",
                };
                out.push_str(&format!("{root}  {state} (since {})\n", entry.trusted_at));
            }
            if out.is_empty() {
                out.push_str("no trusted projects\n");
            }
            Ok(out)
        }
    }
}

/// After `init` wrote the `.toolgate` folder `dir`: trusts its project when its policy folder
/// holds nothing but the file `init` wrote (the user just made those policies). A folder with
/// other policy files (a cloned project re-initialised with `--force`) is left untrusted.
pub fn trust_after_init(
    global: &GlobalOptions,
    dir: &Path,
) -> Option<Result<String, TrustCommandError>> {
    if dir.file_name() != Some(std::ffi::OsStr::new(PROJECT_DIR)) {
        return None;
    }
    let root = std::path::absolute(dir).ok()?.parent()?.to_owned();
    let (found, errors) = crate::snapshot::layer::discover(&crate::snapshot::layer::Root::Path(
        root.join(PROJECT_DIR).join("policies"),
    ));
    let only_init = errors.is_empty()
        && found.len() == 1
        && matches!(&found[0], crate::snapshot::layer::FoundFile::Disk(path) if path.ends_with("policies/project.yaml"));
    if !only_init {
        return None;
    }
    Some(trust(
        global,
        &root,
        &TrustAction::Trust(Some(root.clone())),
    ))
}
