//! [`FsArtifactStore`]: artifacts as files, one folder per session (SPEC §8.2).
//!
//! Layout: `<dir>/<session>/<stem>.txt` for `temporary` and `session` retention,
//! `<project_dir>/<session>/<stem>.txt` for `project` retention (a store configured without a
//! project directory keeps those in `<dir>` and reports `session` retention).
//!
//! How a write stays safe:
//! - The name, the per-file check and the quota reservation happen synchronously in `write`;
//!   the reservation travels with the blocking job and is kept only once the file is in place.
//! - Directories are created with mode 0700. The configured root, the session folder and the
//!   file are checked with `symlink_metadata` and a symbolic link is refused
//!   ([`ArtifactError::Symlink`]); the session folder is then opened with
//!   `O_NOFOLLOW | O_DIRECTORY` and its identity (device, inode) compared again after the
//!   temporary file is written, so a folder swapped for a link in between is caught.
//!   Ancestors of the configured root are trusted (they are the user's configuration, and on
//!   some systems `/tmp` itself is a link), except those below the workspace
//!   ([`FsStoreConfig::checked_from`]), where the agent may make links: each is checked too.
//! - The content goes to a temporary file created exclusively (`O_EXCL`, which never follows a
//!   link) in the session folder, is set to mode 0600, and is then renamed into place without
//!   replacing anything (`persist_noclobber`). Whatever sits at the target name, a planted
//!   link included, is left alone and the next free name is used.
//! - No `fsync`: artifacts are a cache of outputs the model already saw in part; a crash may
//!   lose one, never expose a half-written one under its final name.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::ledger::{Ledger, Limits, Reservation};
use super::name::{file_stem, session_folder};
use super::{ArtifactError, ArtifactRef, ArtifactRequest, ArtifactStore, Retention, SessionId};

/// How many taken names a write skips before giving up.
const MAX_NAME_ATTEMPTS: u32 = 1000;

/// Where an [`FsArtifactStore`] writes, and its limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsStoreConfig {
    /// `engine.artifacts.dir`: the root of the session folders.
    pub dir: PathBuf,
    /// The root for `project` retention; `None` keeps those artifacts under `dir`.
    pub project_dir: Option<PathBuf>,
    /// Per-file and per-session caps.
    pub limits: Limits,
    /// The allocation unit the session cap counts in: each file is charged its size rounded
    /// up to a whole number of blocks, and at least one block, so that many tiny files count
    /// what they take on disk (default 4 KiB, the block of common file systems).
    pub block_size: u64,
    /// A folder (the workspace) whose folders down to a root below it are checked for links
    /// like the root itself: the agent may make links there. Ancestors above it are trusted.
    pub checked_from: Option<PathBuf>,
}

/// The block the session cap counts in by default.
pub const DEFAULT_BLOCK_SIZE: u64 = 4096;

impl FsStoreConfig {
    /// A configuration with the SPEC's limits and no project directory.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            project_dir: None,
            limits: Limits::spec_defaults(),
            block_size: DEFAULT_BLOCK_SIZE,
            checked_from: None,
        }
    }
}

/// Artifacts as files; see the module documentation.
pub struct FsArtifactStore {
    config: FsStoreConfig,
    ledger: Arc<Ledger>,
}

/// Everything a blocking write needs, decided synchronously in `write`.
struct WriteJob {
    root: PathBuf,
    checked_from: Option<PathBuf>,
    folder: String,
    session: SessionId,
    stem: String,
    name: String,
    content: Arc<str>,
    retention: Retention,
    reservation: Reservation,
}

impl FsArtifactStore {
    /// A store writing under `config.dir`. Nothing is created until the first write.
    pub fn new(config: FsStoreConfig) -> Self {
        let ledger = Ledger::with_block(config.limits, config.block_size);
        Self { config, ledger }
    }

    /// The configuration.
    pub fn config(&self) -> &FsStoreConfig {
        &self.config
    }

    /// Bytes written or reserved in a session, each file rounded up to whole blocks.
    pub fn session_usage(&self, session: &SessionId) -> u64 {
        self.ledger.used(session)
    }

    /// Ends every session: removes all `temporary` artifacts written so far.
    pub async fn close(&self) -> Result<(), ArtifactError> {
        remove_all(self.ledger.take_all_temporaries()).await
    }

    fn prepare(&self, request: ArtifactRequest) -> Result<WriteJob, ArtifactError> {
        let folder = session_folder(&request.session)?.to_owned();
        let stem = file_stem(request.call_id.as_str())?;
        let bytes = u64::try_from(request.content.len()).unwrap_or(u64::MAX);
        let reservation = self.ledger.reserve(&request.session, bytes)?;
        let (root, retention) = match (request.retention, &self.config.project_dir) {
            (Retention::Project, Some(project)) => (project.clone(), Retention::Project),
            (Retention::Project, None) => (self.config.dir.clone(), Retention::Session),
            (Retention::Session, _) => (self.config.dir.clone(), Retention::Session),
            (Retention::Temporary, _) => (self.config.dir.clone(), Retention::Temporary),
        };
        let name = self.ledger.next_name(&request.session, &stem);
        Ok(WriteJob {
            root,
            checked_from: self.config.checked_from.clone(),
            folder,
            session: request.session,
            stem,
            name,
            content: request.content,
            retention,
            reservation,
        })
    }
}

impl ArtifactStore for FsArtifactStore {
    fn write(&self, request: ArtifactRequest) -> BoxFuture<'_, Result<ArtifactRef, ArtifactError>> {
        let job = self.prepare(request);
        let ledger = Arc::clone(&self.ledger);
        async move {
            let job = job?;
            run_blocking(move || job.run(&ledger)).await
        }
        .boxed()
    }

    fn close_session<'a>(
        &'a self,
        session: &'a SessionId,
    ) -> BoxFuture<'a, Result<(), ArtifactError>> {
        let paths = self.ledger.take_temporaries(session);
        remove_all(paths).boxed()
    }
}

impl Drop for FsArtifactStore {
    fn drop(&mut self) {
        // Best effort: a store dropped without `close` still removes its temporary files.
        for path in self.ledger.take_all_temporaries() {
            let _ = fs::remove_file(&path);
            if let Some(parent) = path.parent() {
                let _ = fs::remove_dir(parent);
            }
        }
    }
}

impl WriteJob {
    fn run(self, ledger: &Ledger) -> Result<ArtifactRef, ArtifactError> {
        let root = ensure_root(&self.root, self.checked_from.as_deref())?;
        let dir = root.join(&self.folder);
        ensure_dir(&dir)?;
        let pinned = pin_dir(&dir)?;
        let mut temp = tempfile::Builder::new()
            .prefix(".tmp-")
            .suffix(".part")
            .permissions(fs::Permissions::from_mode(0o600))
            .tempfile_in(&dir)
            .map_err(|e| ArtifactError::io(&dir, e))?;
        let temp_path = temp.path().to_owned();
        temp.write_all(self.content.as_bytes())
            .and_then(|()| {
                temp.as_file()
                    .set_permissions(fs::Permissions::from_mode(0o600))
            })
            .map_err(|e| ArtifactError::io(&temp_path, e))?;
        check_same_dir(&dir, pinned)?;
        let mut name = self.name;
        for _ in 0..MAX_NAME_ATTEMPTS {
            let target = dir.join(&name);
            match temp.persist_noclobber(&target) {
                Ok(_) => {
                    let bytes = u64::try_from(self.content.len()).unwrap_or(u64::MAX);
                    self.reservation.keep();
                    if self.retention == Retention::Temporary {
                        ledger.record_temporary(&self.session, target.clone());
                    }
                    return Ok(ArtifactRef {
                        path: target,
                        bytes,
                        retention: self.retention,
                    });
                }
                Err(err) if err.error.kind() == io::ErrorKind::AlreadyExists => {
                    if is_symlink(&target) {
                        tracing::warn!(path = %target.display(), "symbolic link planted at an artifact path; left alone");
                    }
                    temp = err.file;
                    name = ledger.next_name(&self.session, &self.stem);
                }
                Err(err) => return Err(ArtifactError::io(&target, err.error)),
            }
        }
        Err(ArtifactError::io(
            &dir,
            io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("no free artifact name for `{}`", self.stem),
            ),
        ))
    }
}

/// Runs blocking file work on tokio's blocking pool, or inline when there is no runtime.
async fn run_blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ArtifactError> + Send + 'static,
) -> Result<T, ArtifactError> {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle.spawn_blocking(work).await.unwrap_or_else(|join| {
            Err(ArtifactError::io(
                PathBuf::new(),
                io::Error::other(format!("artifact write task failed: {join}")),
            ))
        }),
        Err(_) => work(),
    }
}

async fn remove_all(paths: Vec<PathBuf>) -> Result<(), ArtifactError> {
    if paths.is_empty() {
        return Ok(());
    }
    run_blocking(move || {
        let mut first_error = None;
        for path in &paths {
            match fs::remove_file(path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    first_error.get_or_insert(ArtifactError::io(path, e));
                }
            }
            // Leave the session folder when other artifacts remain in it.
            if let Some(parent) = path.parent() {
                let _ = fs::remove_dir(parent);
            }
        }
        first_error.map_or(Ok(()), Err)
    })
    .await
}

/// Creates the root (and missing ancestors) with mode 0700 and checks it is a real folder;
/// below `checked_from`, every folder on the way is created or checked the same way (a link
/// the agent made in the workspace, `target` → elsewhere, is refused, not followed).
fn ensure_root(root: &Path, checked_from: Option<&Path>) -> Result<PathBuf, ArtifactError> {
    if let Some(base) = checked_from
        && let Ok(below) = root.strip_prefix(base)
    {
        let mut current = base.to_owned();
        for component in below.components() {
            current.push(component);
            ensure_dir(&current)?;
        }
        return Ok(root.to_owned());
    }
    match fs::symlink_metadata(root) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(root)
                .map_err(|e| ArtifactError::io(root, e))?;
            restrict(root)?;
        }
        Err(e) => return Err(ArtifactError::io(root, e)),
        Ok(_) => {}
    }
    check_real_dir(root)?;
    Ok(root.to_owned())
}

/// Creates one folder with mode 0700 unless it exists; refuses links and non-folders.
fn ensure_dir(dir: &Path) -> Result<(), ArtifactError> {
    let created = match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => true,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => false,
        Err(e) => return Err(ArtifactError::io(dir, e)),
    };
    check_real_dir(dir)?;
    if created {
        restrict(dir)?;
    }
    Ok(())
}

/// Sets a folder the store created to 0700 whatever the umask made of it, through a handle
/// opened without following links (so a folder swapped for a link is not what changes mode).
fn restrict(dir: &Path) -> Result<(), ArtifactError> {
    open_no_follow(dir)?
        .set_permissions(fs::Permissions::from_mode(0o700))
        .map_err(|e| ArtifactError::io(dir, e))
}

fn check_real_dir(dir: &Path) -> Result<(), ArtifactError> {
    let meta = fs::symlink_metadata(dir).map_err(|e| ArtifactError::io(dir, e))?;
    if meta.file_type().is_symlink() {
        return Err(ArtifactError::Symlink {
            path: dir.to_owned(),
        });
    }
    if !meta.is_dir() {
        return Err(ArtifactError::NotADirectory {
            path: dir.to_owned(),
        });
    }
    Ok(())
}

/// Opens a folder with `O_NOFOLLOW | O_DIRECTORY`: a link in its place is refused.
fn open_no_follow(dir: &Path) -> Result<File, ArtifactError> {
    OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_DIRECTORY)
        .open(dir)
        .map_err(|e| match e.raw_os_error() {
            Some(code) if code == nix::libc::ELOOP => ArtifactError::Symlink {
                path: dir.to_owned(),
            },
            Some(code) if code == nix::libc::ENOTDIR => ArtifactError::NotADirectory {
                path: dir.to_owned(),
            },
            _ => ArtifactError::io(dir, e),
        })
}

/// Opens the folder without following a link and returns its identity.
fn pin_dir(dir: &Path) -> Result<(u64, u64), ArtifactError> {
    identity(&open_no_follow(dir)?, dir)
}

fn identity(handle: &File, dir: &Path) -> Result<(u64, u64), ArtifactError> {
    let meta = handle.metadata().map_err(|e| ArtifactError::io(dir, e))?;
    Ok((meta.dev(), meta.ino()))
}

/// Fails when the folder at `dir` is no longer the one pinned before the write.
fn check_same_dir(dir: &Path, pinned: (u64, u64)) -> Result<(), ArtifactError> {
    let meta = fs::symlink_metadata(dir).map_err(|e| ArtifactError::io(dir, e))?;
    if meta.file_type().is_symlink() || (meta.dev(), meta.ino()) != pinned {
        return Err(ArtifactError::Symlink {
            path: dir.to_owned(),
        });
    }
    Ok(())
}

fn is_symlink(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink())
}
