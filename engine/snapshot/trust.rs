//! Trust of project layers: which projects the user has reviewed and allowed to loosen
//! policy or run code, and the user's own configuration folder.
//!
//! A project's `.toolgate/policies` found from the current directory (or from a hook's
//! `cwd`) comes with the repository: cloning one must not let it allow what the user's or
//! organisation's layers deny, nor run its hooks. Until the user trusts the project
//! (`toolgate trust`), the loader lets its layer only tighten (see
//! [`super::untrusted`]). Trust is pinned to a digest of the project's policy
//! files, like `direnv allow`: any change to them needs trust again.
//!
//! ```text
//! config dir ($TOOLGATE_CONFIG_DIR, else $XDG_CONFIG_HOME/toolgate, else ~/.config/toolgate)
//!   policies/      the user layer (trusted by where it lives)
//!   trusted.json   the trust store: project root → digest of its policy files
//! ```

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use super::layer::{FoundFile, Root, discover};
use crate::load::{ReadLimits, read_source};

/// The environment variable naming the configuration folder (tests point it at a temporary
/// folder).
pub const CONFIG_DIR_ENV: &str = "TOOLGATE_CONFIG_DIR";
/// The user layer's folder inside the configuration folder.
pub const USER_POLICIES: &str = "policies";
/// The trust store's file inside the configuration folder.
pub const STORE_FILE: &str = "trusted.json";

/// The user's configuration folder: `$TOOLGATE_CONFIG_DIR`, else `$XDG_CONFIG_HOME/toolgate`,
/// else `~/.config/toolgate`; `None` when none of them is set.
pub fn config_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    if let Some(dir) = var(CONFIG_DIR_ENV) {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = var("XDG_CONFIG_HOME") {
        return Some(PathBuf::from(dir).join("toolgate"));
    }
    var("HOME").map(|home| PathBuf::from(home).join(".config").join("toolgate"))
}

/// The digest of a project's policy files: SHA-256 over each file the project layer loads,
/// in load order, as its path relative to the policy root and its text. Written
/// `sha256:<hex>`.
pub fn digest<'a>(policies: &Path, files: impl IntoIterator<Item = (&'a Path, &'a str)>) -> String {
    let mut hasher = Sha256::new();
    for (path, text) in files {
        let relative = path.strip_prefix(policies).unwrap_or(path);
        let name = relative.to_string_lossy();
        // Lengths first, so that no two different file lists hash the same bytes.
        hasher.update(format!("{}:{}\0{}:", name.len(), name, text.len()).as_bytes());
        hasher.update(text.as_bytes());
    }
    let hex: String = hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// The digest of the policy files under `policies` as the loader would read them, or why
/// they cannot be read.
pub fn project_digest(policies: &Path, limits: &ReadLimits) -> Result<String, String> {
    let (found, errors) = discover(&Root::Path(policies.to_owned()));
    if let Some(error) = errors.first() {
        return Err(format!("cannot list `{}`", error.path.display()));
    }
    let mut texts = Vec::new();
    for file in found {
        let FoundFile::Disk(path) = file else {
            continue;
        };
        let source = read_source(&path, limits).map_err(|d| d.message.clone())?;
        texts.push((path, source));
    }
    Ok(digest(
        policies,
        texts
            .iter()
            .map(|(path, source)| (path.as_path(), &**source.text())),
    ))
}

/// The key of a project in the store: its root, absolute and with symlinks resolved.
pub fn project_key(root: &Path) -> String {
    let absolute = std::path::absolute(root).unwrap_or_else(|_| root.to_owned());
    std::fs::canonicalize(&absolute)
        .unwrap_or(absolute)
        .display()
        .to_string()
}

/// One trusted project.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustEntry {
    /// The digest of its policy files when it was trusted.
    pub digest: String,
    /// When it was trusted (RFC 3339).
    pub trusted_at: String,
}

/// The file's shape.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreFile {
    version: u32,
    #[serde(default)]
    projects: BTreeMap<String, TrustEntry>,
}

/// Why the trust store could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// No configuration folder is known.
    #[error("no configuration folder: set `{CONFIG_DIR_ENV}`, `XDG_CONFIG_HOME` or `HOME`")]
    NoConfigDir,
    /// Reading or writing failed.
    #[error("cannot {action} `{path}`: {reason}")]
    Io {
        /// What was attempted.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// Why it failed.
        reason: String,
    },
    /// The file is not a trust store.
    #[error("`{path}` is not a valid trust store: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// The trust store: trusted project roots with the digest of their policy files.
#[derive(Debug)]
pub struct TrustStore {
    path: PathBuf,
    projects: BTreeMap<String, TrustEntry>,
}

impl TrustStore {
    /// Reads the store of a configuration folder (empty when the file does not exist).
    pub fn open(config_dir: &Path) -> Result<Self, TrustError> {
        let path = config_dir.join(STORE_FILE);
        let projects = match std::fs::read_to_string(&path) {
            Ok(text) => {
                let file: StoreFile =
                    serde_json::from_str(&text).map_err(|err| TrustError::Invalid {
                        path: path.clone(),
                        reason: err.to_string(),
                    })?;
                if file.version != 1 {
                    return Err(TrustError::Invalid {
                        path,
                        reason: format!("unknown version `{}`", file.version),
                    });
                }
                file.projects
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(err) => {
                return Err(TrustError::Io {
                    action: "read",
                    path,
                    reason: err.to_string(),
                });
            }
        };
        Ok(Self { path, projects })
    }

    /// Whether `root` is trusted with exactly this digest of its policy files.
    pub fn is_trusted(&self, root: &Path, digest: &str) -> bool {
        self.projects
            .get(&project_key(root))
            .is_some_and(|entry| entry.digest == digest)
    }

    /// Every trusted project, by root.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &TrustEntry)> {
        self.projects
            .iter()
            .map(|(root, entry)| (root.as_str(), entry))
    }

    /// Records `root` as trusted with `digest`, replacing an older entry.
    pub fn trust(&mut self, root: &Path, digest: String) {
        let trusted_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now());
        self.projects.insert(
            project_key(root),
            TrustEntry {
                digest,
                trusted_at: trusted_at.to_string(),
            },
        );
    }

    /// Forgets `root`; whether it was trusted.
    pub fn revoke(&mut self, root: &Path) -> bool {
        self.projects.remove(&project_key(root)).is_some()
    }

    /// Writes the store atomically: a temporary file in the same folder (mode 0600), then a
    /// rename over the old one, so a reader never sees half a file. Entries written by
    /// another process since [`TrustStore::open`] are kept unless this store changed them.
    pub fn save(&self) -> Result<(), TrustError> {
        let io = |action: &'static str, path: &Path, err: std::io::Error| TrustError::Io {
            action,
            path: path.to_owned(),
            reason: err.to_string(),
        };
        let dir = self.path.parent().unwrap_or_else(|| Path::new("."));
        std::fs::create_dir_all(dir).map_err(|err| io("create", dir, err))?;
        let file = StoreFile {
            version: 1,
            projects: self.projects.clone(),
        };
        let mut text = serde_json::to_string_pretty(&file).map_err(|err| TrustError::Invalid {
            path: self.path.clone(),
            reason: err.to_string(),
        })?;
        text.push('\n');
        let mut temp =
            tempfile::NamedTempFile::new_in(dir).map_err(|err| io("create", dir, err))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            temp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(|err| io("write", temp.path(), err))?;
        }
        temp.write_all(text.as_bytes())
            .and_then(|()| temp.as_file().sync_all())
            .map_err(|err| io("write", temp.path(), err))?;
        if std::fs::symlink_metadata(&self.path).is_ok_and(|meta| meta.file_type().is_symlink()) {
            return Err(TrustError::Io {
                action: "replace",
                path: self.path.clone(),
                reason: "it is a symbolic link".into(),
            });
        }
        temp.persist(&self.path)
            .map_err(|err| io("write", &self.path, err.error))?;
        Ok(())
    }

    /// Opens the store, applies `change` and saves it, holding a lock file next to the
    /// store meanwhile so that two processes changing it at once do not lose each other's
    /// entries.
    pub fn update<T>(
        config_dir: &Path,
        change: impl FnOnce(&mut TrustStore) -> T,
    ) -> Result<T, TrustError> {
        std::fs::create_dir_all(config_dir).map_err(|err| TrustError::Io {
            action: "create",
            path: config_dir.to_owned(),
            reason: err.to_string(),
        })?;
        let _lock = StoreLock::acquire(&config_dir.join(format!("{STORE_FILE}.lock")))?;
        let mut store = Self::open(config_dir)?;
        let result = change(&mut store);
        store.save()?;
        Ok(result)
    }
}

/// A lock file held while the store is read, changed and written: created exclusively,
/// removed on drop. A lock older than a minute is left by a process that died and is taken
/// over.
struct StoreLock {
    path: PathBuf,
}

impl StoreLock {
    fn acquire(path: &Path) -> Result<Self, TrustError> {
        const STALE: std::time::Duration = std::time::Duration::from_secs(60);
        let started = std::time::Instant::now();
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
            {
                Ok(_) => {
                    return Ok(Self {
                        path: path.to_owned(),
                    });
                }
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                    let stale = std::fs::metadata(path)
                        .and_then(|meta| meta.modified())
                        .ok()
                        .and_then(|modified| modified.elapsed().ok())
                        .is_some_and(|age| age > STALE);
                    if stale || started.elapsed() > STALE {
                        let _ = std::fs::remove_file(path);
                        continue;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(err) => {
                    return Err(TrustError::Io {
                        action: "lock",
                        path: path.to_owned(),
                        reason: err.to_string(),
                    });
                }
            }
        }
    }
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_changes_with_any_name_or_content() {
        let root = Path::new("/p");
        let a = digest(
            root,
            [(Path::new("/p/a.yaml"), "x"), (Path::new("/p/b.yaml"), "y")],
        );
        assert!(a.starts_with("sha256:"));
        assert_eq!(
            a,
            digest(
                root,
                [(Path::new("/p/a.yaml"), "x"), (Path::new("/p/b.yaml"), "y")]
            )
        );
        for other in [
            digest(
                root,
                [(Path::new("/p/a.yaml"), "x"), (Path::new("/p/b.yaml"), "z")],
            ),
            digest(
                root,
                [(Path::new("/p/a.yaml"), "x"), (Path::new("/p/c.yaml"), "y")],
            ),
            digest(root, [(Path::new("/p/a.yaml"), "xy")]),
            digest(root, [(Path::new("/p/a.yaml"), "x")]),
        ] {
            assert_ne!(a, other);
        }
    }

    #[test]
    fn saving_keeps_other_entries_and_revoking_removes_one() {
        let dir = tempfile::tempdir().unwrap();
        TrustStore::update(dir.path(), |store| {
            store.trust(Path::new("/one"), "sha256:1".into())
        })
        .unwrap();
        TrustStore::update(dir.path(), |store| {
            store.trust(Path::new("/two"), "sha256:2".into())
        })
        .unwrap();
        let store = TrustStore::open(dir.path()).unwrap();
        assert!(store.is_trusted(Path::new("/one"), "sha256:1"));
        assert!(store.is_trusted(Path::new("/two"), "sha256:2"));
        assert!(!store.is_trusted(Path::new("/two"), "sha256:1"));
        let removed =
            TrustStore::update(dir.path(), |store| store.revoke(Path::new("/one"))).unwrap();
        assert!(removed);
        let store = TrustStore::open(dir.path()).unwrap();
        assert_eq!(store.entries().count(), 1);
        assert!(!dir.path().join(format!("{STORE_FILE}.lock")).exists());
    }

    #[test]
    fn concurrent_updates_lose_no_entry() {
        let dir = tempfile::tempdir().unwrap();
        std::thread::scope(|scope| {
            for i in 0..8 {
                let dir = dir.path();
                scope.spawn(move || {
                    TrustStore::update(dir, |store| {
                        store.trust(Path::new(&format!("/p{i}")), format!("sha256:{i}"))
                    })
                    .unwrap();
                });
            }
        });
        assert_eq!(TrustStore::open(dir.path()).unwrap().entries().count(), 8);
    }

    #[test]
    fn a_broken_store_is_an_error_not_an_empty_store() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(STORE_FILE), "{not json").unwrap();
        assert!(matches!(
            TrustStore::open(dir.path()),
            Err(TrustError::Invalid { .. })
        ));
    }
}
