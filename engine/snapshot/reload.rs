//! Hot reload (SPEC §12): the policy roots are watched; a change (including an editor's
//! save-by-rename) triggers a debounced reload of the whole set, off the execution path. A
//! valid set is swapped in atomically as a new generation; an invalid one is rejected with
//! its diagnostics and the last good snapshot stays in force. Batches already running finish
//! on the snapshot they started with (they hold an `Arc` to it). Each reload reports what
//! changed in effect, computed by the same semantic diff reviewers use.
//!
//! Directories are watched, not files: after a save-by-rename a watch on the file itself goes
//! silent. A root that is a single file is watched through its parent directory.
//!
//! A change is reloaded only once the files have stopped changing: an editor or generator
//! that writes a file in place in several steps (a valid first half, a pause, the rest) must
//! not get the half installed. After the debounce, every policy file's size, modification
//! time and content are read, and read again after the settle window
//! ([`DEFAULT_SETTLE`] unless [`Reloader::set_settle`] says otherwise, never less than the
//! debounce); the set loads only when both readings agree, otherwise the wait starts over.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwapOption;
use notify::RecursiveMode;
use notify::event::EventKind as FsEventKind;
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};

use super::layer::{FoundFile, Root, discover, is_policy_file};
use super::{LoadOptions, Snapshot, load};
use crate::diagnostics::Diagnostic;
use crate::events::{Event, EventKind, EventSink, PolicyReloadFailed, PolicyReloaded};
use crate::review::{Change, diff};

/// How long the policy files must stay unchanged before a change is loaded.
pub const DEFAULT_SETTLE: Duration = Duration::from_secs(1);

/// How many settle windows a watcher waits for files that keep changing before it gives up
/// on this change, leaving the generation in force (the next change starts a new wait).
/// Loading them anyway could install a save caught half-written.
const MAX_SETTLE_ROUNDS: usize = 30;

/// How much of a policy file is read to tell whether it changed: one byte more than the
/// loader reads of a file, so a file growing past that still looks changed.
const MAX_FINGERPRINT_BYTES: u64 = 8 * 1024 * 1024 + 1;

/// What the files of a set look like on disk: per file its path, size, modification time
/// and a hash of its content; plus what could not be listed or read.
#[derive(Debug, PartialEq, Eq)]
struct Fingerprint(Vec<(PathBuf, Option<FileState>)>, usize);

/// A file's size, modification time and content hash.
type FileState = (u64, Option<std::time::SystemTime>, u64);

/// Installs a new snapshot where it is used (an engine, a server).
pub type Install = Box<dyn Fn(Arc<Snapshot>) + Send + Sync>;

/// What one reload came to.
#[derive(Clone, Debug)]
pub enum ReloadOutcome {
    /// A new generation is in force.
    Reloaded {
        /// Its generation.
        generation: u64,
        /// The generation it replaced; `None` for the first load.
        previous: Option<u64>,
        /// What changed in effect since the previous generation (empty for the first load:
        /// there is nothing to compare with).
        changes: Vec<Change>,
        /// The files of the new set.
        files: Vec<String>,
        /// Its warnings (lints), which do not prevent a set from loading.
        warnings: Vec<Diagnostic>,
    },
    /// The new set is invalid; the previous generation stays.
    Failed {
        /// Why.
        diagnostics: Vec<Diagnostic>,
        /// The generation still in force.
        generation: u64,
    },
}

/// Reloads a policy set and installs each valid new generation.
pub struct Reloader {
    options: LoadOptions,
    current: ArcSwapOption<Snapshot>,
    next_generation: AtomicU64,
    install: Install,
    sink: Arc<dyn EventSink>,
    // INVARIANT: reloads run one at a time, so generations are installed in order and the
    // last valid save is always the one in force after the last reload.
    serial: Mutex<()>,
    /// How long files must stay unchanged before a watched change is loaded.
    settle: Mutex<Duration>,
    /// The files as the last watched reload read them: a change seen again (by two
    /// watches, or once more while the files settled) is not loaded again.
    seen: Mutex<Option<Fingerprint>>,
}

impl ReloadOutcome {
    /// The reload record: the `PolicyReloaded` or `PolicyReloadFailed` event this outcome
    /// emits, which `watch --format jsonl` also prints (the one place it is built).
    pub fn event_kind(&self) -> EventKind {
        match self {
            ReloadOutcome::Reloaded {
                generation,
                changes,
                files,
                previous: _,
                warnings: _,
            } => EventKind::PolicyReloaded(PolicyReloaded {
                generation: *generation,
                changes: changes
                    .iter()
                    .filter_map(|c| serde_json::to_value(c).ok())
                    .collect(),
                files: files.clone(),
            }),
            ReloadOutcome::Failed {
                diagnostics,
                generation,
            } => EventKind::PolicyReloadFailed(PolicyReloadFailed {
                generation: *generation,
                diagnostics: crate::diagnostics::render::to_json(diagnostics)
                    .get("diagnostics")
                    .and_then(serde_json::Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
            }),
        }
    }
}

impl Reloader {
    /// A reloader whose current generation is `initial` (`None` when the set has not loaded
    /// yet: the first valid reload then becomes generation 1).
    pub fn new(
        options: LoadOptions,
        initial: Option<Arc<Snapshot>>,
        install: Install,
        sink: Arc<dyn EventSink>,
    ) -> Self {
        let next = initial.as_ref().map_or(1, |s| s.generation + 1);
        Self {
            options,
            current: ArcSwapOption::new(initial),
            next_generation: AtomicU64::new(next),
            install,
            sink,
            serial: Mutex::new(()),
            settle: Mutex::new(DEFAULT_SETTLE),
            seen: Mutex::new(None),
        }
    }

    /// Sets how long the files must stay unchanged before a watched change is loaded.
    pub fn set_settle(&self, settle: Duration) {
        *self
            .settle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = settle;
    }

    fn fingerprint(&self) -> Fingerprint {
        use std::hash::{Hash, Hasher};
        let mut files = Vec::new();
        let mut errors = 0;
        for layer in self.options.layers.layers() {
            let (found, failed) = discover(&layer.root);
            errors += failed.len();
            for file in found {
                let FoundFile::Disk(path) = file else {
                    continue;
                };
                let seen = std::fs::metadata(&path).ok().and_then(|meta| {
                    // Never a plain read: a FIFO there would block the watcher for good.
                    let text = crate::policy::content::read_regular(&path, MAX_FINGERPRINT_BYTES)?;
                    let mut hasher = std::hash::DefaultHasher::new();
                    text.hash(&mut hasher);
                    Some((meta.len(), meta.modified().ok(), hasher.finish()))
                });
                files.push((path, seen));
            }
        }
        Fingerprint(files, errors)
    }

    /// Blocks until the files have stayed the same (size, modification time and content)
    /// for a whole settle window, at least `debounce` long, and says so; `false` after
    /// `MAX_SETTLE_ROUNDS` windows of files that never stop changing.
    pub fn wait_until_settled(&self, debounce: Duration) -> bool {
        let window = self
            .settle
            .lock()
            .map_or(DEFAULT_SETTLE, |settle| *settle)
            .max(debounce);
        settle(window, std::thread::sleep, || self.fingerprint())
    }

    /// The generation in force, if any set has loaded.
    pub fn current(&self) -> Option<Arc<Snapshot>> {
        self.current.load_full()
    }

    /// Reloads the whole set now, installs it if valid, and emits `PolicyReloaded` or
    /// `PolicyReloadFailed`. Blocking: call it off the async threads.
    pub fn reload(&self) -> ReloadOutcome {
        let _one_at_a_time = self
            .serial
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.reload_now()
    }

    /// [`Reloader::reload`], unless the files are as the last watched reload read them: a
    /// watched change seen twice (by two watches, or again while the files settled) is
    /// loaded, and reported, once.
    fn reload_if_changed(&self) -> Option<ReloadOutcome> {
        let _one_at_a_time = self
            .serial
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = self.fingerprint();
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if seen.as_ref() == Some(&now) {
            return None;
        }
        *seen = Some(now);
        drop(seen);
        Some(self.reload_now())
    }

    fn reload_now(&self) -> ReloadOutcome {
        let generation = self.next_generation.load(Ordering::SeqCst);
        let loaded = load(&self.options, generation);
        let previous = self.current.load_full();
        let outcome = match loaded.snapshot {
            Some(snapshot) => {
                self.next_generation.fetch_add(1, Ordering::SeqCst);
                // In force first; what changed is only reported, so it can wait.
                self.current.store(Some(Arc::clone(&snapshot)));
                (self.install)(Arc::clone(&snapshot));
                let changes = previous
                    .as_ref()
                    .map(|p| diff(&p.effective.value(), &snapshot.effective.value()))
                    .unwrap_or_default();
                let warnings = snapshot.warnings.clone();
                let files = snapshot
                    .sources
                    .files
                    .iter()
                    .map(|f| f.source.path().to_string())
                    .collect();
                ReloadOutcome::Reloaded {
                    generation,
                    previous: previous.as_ref().map(|p| p.generation),
                    changes,
                    files,
                    warnings,
                }
            }
            None => ReloadOutcome::Failed {
                diagnostics: loaded.diagnostics,
                generation: previous.as_ref().map_or(0, |p| p.generation),
            },
        };
        self.emit(&outcome);
        outcome
    }

    fn emit(&self, outcome: &ReloadOutcome) {
        let generation = match outcome {
            ReloadOutcome::Reloaded { generation, .. }
            | ReloadOutcome::Failed { generation, .. } => *generation,
        };
        self.sink
            .emit(Event::now(None, None, generation, outcome.event_kind()));
    }

    /// The directories to watch for this set's roots, and the files that matter in each
    /// (`None`: every policy file below it).
    pub fn watch_targets(&self) -> Vec<(PathBuf, Option<PathBuf>)> {
        self.options
            .layers
            .layers()
            .into_iter()
            .filter_map(|layer| match layer.root {
                Root::Embedded(_) => None,
                Root::Path(path) => Some(path),
            })
            .map(|path| {
                let absolute = std::path::absolute(&path).unwrap_or(path);
                if absolute.is_dir() {
                    (absolute, None)
                } else {
                    let parent = absolute
                        .parent()
                        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
                    (parent, Some(absolute))
                }
            })
            .collect()
    }

    /// Watches the roots and reloads, debounced by `debounce`, on every relevant change.
    /// Dropping the returned handle stops watching. Blocking, like [`Reloader::watch_with`].
    pub fn watch(self: &Arc<Self>, debounce: Duration) -> Result<WatchHandle, notify::Error> {
        self.watch_with(debounce, |_| {})
    }

    /// Whether the files on disk differ from the generation in force: a policy file added,
    /// removed or changed since it was loaded (or no generation yet). Reads every file.
    pub fn is_stale(&self) -> bool {
        let Some(current) = self.current() else {
            return true;
        };
        let loaded: HashMap<&str, &str> = current
            .sources
            .files
            .iter()
            .map(|f| (&**f.source.path(), &**f.source.text()))
            .collect();
        let mut seen = 0;
        for layer in self.options.layers.layers() {
            let (found, errors) = discover(&layer.root);
            if !errors.is_empty() {
                return true;
            }
            for file in found {
                match file {
                    // Embedded files never change.
                    FoundFile::Embedded(_) => seen += 1,
                    FoundFile::Disk(path) => {
                        let Some(text) = loaded.get(path.display().to_string().as_str()) else {
                            return true;
                        };
                        match std::fs::read_to_string(&path) {
                            Ok(disk) if disk.strip_prefix('\u{feff}').unwrap_or(&disk) == *text => {
                                seen += 1;
                            }
                            _ => return true,
                        }
                    }
                }
            }
        }
        seen != current.sources.files.len()
    }

    /// Like [`Reloader::watch`], also handing every reload's outcome to `report`.
    ///
    /// Once the watches are in place, the files are compared with the generation in force
    /// and the set is reloaded if they differ, so a save that landed between the last load
    /// and the start of watching is not lost. Blocking (it reads every file, and may reload):
    /// call it off the async threads.
    pub fn watch_with(
        self: &Arc<Self>,
        debounce: Duration,
        report: impl Fn(ReloadOutcome) + Send + Sync + 'static,
    ) -> Result<WatchHandle, notify::Error> {
        let targets = self.watch_targets();
        let reloader = Arc::clone(self);
        let report: Arc<dyn Fn(ReloadOutcome) + Send + Sync> = Arc::new(report);
        let catch_up = {
            let report = Arc::clone(&report);
            move |outcome| report(outcome)
        };
        let report_again = Arc::clone(&report);
        let filter = targets.clone();
        // A folder root removed and made again (`rm -rf pol && mkdir pol`, a branch switch)
        // is a new folder the watch on the old one never sees: its parent is watched too,
        // and a root made again is watched again.
        let (rearm, rearm_requests) = std::sync::mpsc::channel::<PathBuf>();
        let folders: Vec<PathBuf> = targets
            .iter()
            .filter(|(_, file)| file.is_none())
            .map(|(dir, _)| dir.clone())
            .collect();
        let made_again = folders.clone();
        let debouncer = new_debouncer(debounce, None, move |result: DebounceEventResult| {
            let Ok(events) = result else { return };
            for event in &events {
                for path in &event.paths {
                    if made_again.contains(path) && path.is_dir() {
                        let _ = rearm.send(path.clone());
                    }
                }
            }
            let relevant = events.iter().any(|event| {
                !matches!(event.kind, FsEventKind::Access(_))
                    && event.paths.iter().any(|path| is_relevant(path, &filter))
            });
            if relevant {
                if reloader.wait_until_settled(debounce) {
                    // (Events that came while the files settled find them loaded already.)
                    if let Some(outcome) = reloader.reload_if_changed() {
                        report(outcome);
                    }
                } else {
                    // A save caught mid-write must never be installed: the generation in
                    // force stays; the writer's next change starts a new wait.
                    tracing::warn!(
                        "the policy files kept changing for {MAX_SETTLE_ROUNDS} settle windows; \
                         the generation in force stays until they stop"
                    );
                }
            }
        })
        .map_err(|error| notify::Error::generic(&error.to_string()))?;
        let debouncer = Arc::new(Mutex::new(debouncer));
        let mut watching = debouncer
            .lock()
            .map_err(|_| notify::Error::generic("the policy watcher's lock is poisoned"))?;
        for (dir, file) in &targets {
            let mode = if file.is_some() {
                RecursiveMode::NonRecursive
            } else {
                // A root too large to be a folder of policy files (`-p /`) is not watched
                // folder by folder either.
                let (_, errors) = discover(&Root::Path(dir.clone()));
                if errors
                    .iter()
                    .any(|e| matches!(e.kind, super::layer::DiscoveryErrorKind::TooLarge))
                {
                    return Err(notify::Error::generic(&format!(
                        "`{}` holds more than {} entries below it: it is not a folder of policy files",
                        dir.display(),
                        super::layer::MAX_ENTRIES
                    )));
                }
                RecursiveMode::Recursive
            };
            watching.watch(dir, mode)?;
        }
        for dir in &folders {
            if let Some(parent) = dir.parent().filter(|parent| parent.is_dir()) {
                watching.watch(parent, RecursiveMode::NonRecursive)?;
            }
        }
        drop(watching);
        // Re-arms a root made again, then loads what was written in it before its watch
        // was in place. Ends when the watch is dropped (its sender goes with it).
        let weak = Arc::downgrade(&debouncer);
        let again = Arc::clone(self);
        std::thread::Builder::new()
            .name("toolgate-rewatch".to_owned())
            .spawn(move || {
                while let Ok(dir) = rearm_requests.recv() {
                    let Some(debouncer) = weak.upgrade() else {
                        break;
                    };
                    let watched = match debouncer.lock() {
                        Ok(mut watching) => watching.watch(&dir, RecursiveMode::Recursive),
                        Err(_) => break,
                    };
                    drop(debouncer);
                    if let Err(error) = watched {
                        tracing::warn!("`{}` made again, but not watched: {error}", dir.display());
                    }
                    if again.wait_until_settled(debounce)
                        && let Some(outcome) = again.reload_if_changed()
                    {
                        report_again(outcome);
                    }
                }
            })
            .map_err(|error| notify::Error::generic(&error.to_string()))?;
        *self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(self.fingerprint());
        if self.is_stale() {
            catch_up(self.reload());
        }
        Ok(WatchHandle {
            _debouncer: debouncer,
        })
    }
}

/// Whether a changed path can affect the set: a policy file of a watched root, or a folder
/// inside a directory root (a whole folder may have been moved in or out).
fn is_relevant(path: &Path, targets: &[(PathBuf, Option<PathBuf>)]) -> bool {
    targets.iter().any(|(dir, file)| match file {
        Some(file) => path == file,
        None => path.starts_with(dir) && (is_policy_file(path) || path.extension().is_none()),
    })
}

/// Keeps a watch alive.
pub struct WatchHandle {
    _debouncer: Arc<Mutex<Debouncer<notify::RecommendedWatcher, RecommendedCache>>>,
}

impl std::fmt::Debug for WatchHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WatchHandle")
    }
}

/// Waits `window` at a time until two observations in a row are equal (`true`), or gives
/// up after [`MAX_SETTLE_ROUNDS`] windows (`false`).
fn settle<F: PartialEq>(
    window: Duration,
    mut wait: impl FnMut(Duration),
    mut observe: impl FnMut() -> F,
) -> bool {
    let mut before = observe();
    for _ in 0..MAX_SETTLE_ROUNDS {
        wait(window);
        let after = observe();
        if after == before {
            return true;
        }
        before = after;
    }
    false
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::events::NullSink;
    use crate::snapshot::LayerOptions;

    /// Files that never stop changing are not declared settled (the watcher then loads
    /// nothing); before, the wait gave up and the set was loaded as it was, which installed
    /// a save caught between its two halves (the `serve` soak, issue 19 defect 6).
    #[test]
    fn files_that_never_stop_changing_are_not_settled() {
        let dir = tempfile::tempdir().unwrap();
        let policy = dir.path().join("p.yaml");
        std::fs::write(&policy, "version: 1\n").unwrap();
        let options = LoadOptions::new(LayerOptions {
            no_builtin: true,
            policies: vec![policy.clone()],
            ..LayerOptions::default()
        });
        let reloader = Reloader::new(options, None, Box::new(|_| {}), Arc::new(NullSink));
        reloader.set_settle(Duration::from_millis(20));
        // The file changes during every window: the writer runs in place of the wait, so
        // the test does not depend on how threads are scheduled.
        let mut n = 0u64;
        let settled = settle(
            Duration::from_millis(1),
            |_| {
                n += 1;
                std::fs::write(&policy, format!("version: 1\n# {n}\n")).unwrap();
            },
            || reloader.fingerprint(),
        );
        assert!(
            !settled,
            "a file rewritten during every settle window was declared settled"
        );
        assert_eq!(n, MAX_SETTLE_ROUNDS as u64);
        assert!(reloader.wait_until_settled(Duration::from_millis(20)));
    }

    /// A FIFO that appears in a policy folder is never opened and waited on: the watcher's
    /// wait for the files to settle read it, blocked, and no change was ever loaded again.
    #[test]
    fn a_fifo_in_a_policy_folder_never_blocks_the_wait_for_settled_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("p.yaml"), "version: 1\n").unwrap();
        nix::unistd::mkfifo(&dir.path().join("q.yaml"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let options = LoadOptions::new(LayerOptions {
            no_builtin: true,
            policies: vec![dir.path().to_path_buf()],
            ..LayerOptions::default()
        });
        let reloader = Reloader::new(options, None, Box::new(|_| {}), Arc::new(NullSink));
        reloader.set_settle(Duration::from_millis(20));
        assert!(reloader.wait_until_settled(Duration::from_millis(20)));
    }
}
