//! `toolgate init [DIR]`: a commented starter policy set that checks clean, with the JSON
//! Schemas next to it so editors give completion and hover docs without network access.

use std::path::{Path, PathBuf};

/// The files `init` writes, relative to its folder.
pub fn files() -> Vec<(&'static str, String)> {
    let schema = |name: &str| crate::cli::schema::schema(name).unwrap_or_default();
    vec![
        ("policy.schema.json", schema("policy")),
        ("policy-test.schema.json", schema("policy-test")),
        ("batch.schema.json", schema("batch")),
        ("policies/project.yaml", include_str!("templates/project.yaml").to_owned()),
        ("tests/project.test.yaml", include_str!("templates/project.test.yaml").to_owned()),
    ]
}

/// What `init` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InitReport {
    /// The files written.
    pub written: Vec<PathBuf>,
}

/// Why `init` could not run.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// A file would be overwritten.
    #[error("`{0}` already exists; pass `--force` to overwrite it")]
    Exists(PathBuf),
    /// Writing failed.
    #[error("cannot write `{path}`: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Writes the starter set into `dir`. Existing files are never overwritten unless `force`.
pub fn init(dir: &Path, force: bool) -> Result<InitReport, InitError> {
    let files = files();
    if !force {
        for (name, _) in &files {
            let path = dir.join(name);
            if path.exists() {
                return Err(InitError::Exists(path));
            }
        }
    }
    let mut written = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| InitError::Io { path: parent.to_owned(), source })?;
        }
        std::fs::write(&path, text).map_err(|source| InitError::Io { path: path.clone(), source })?;
        written.push(path);
    }
    Ok(InitReport { written })
}
