//! Hot reload (SPEC §12): the policy roots are watched; a change (including an editor's
//! save-by-rename) triggers a debounced reload of the whole set, off the execution path. A
//! valid set is swapped in atomically as a new generation; an invalid one is rejected with
//! its diagnostics and the last good snapshot stays in force. Batches already running finish
//! on the snapshot they started with (they hold an `Arc` to it). Each reload reports what
//! changed in effect, computed by the same semantic diff reviewers use.
//!
//! Directories are watched, not files: after a save-by-rename a watch on the file itself goes
//! silent. A root that is a single file is watched through its parent directory.

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
        }
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
        let report = Arc::new(report);
        let catch_up = {
            let report = Arc::clone(&report);
            move |outcome| report(outcome)
        };
        let filter = targets.clone();
        let mut debouncer = new_debouncer(debounce, None, move |result: DebounceEventResult| {
            let Ok(events) = result else { return };
            let relevant = events.iter().any(|event| {
                !matches!(event.kind, FsEventKind::Access(_))
                    && event.paths.iter().any(|path| is_relevant(path, &filter))
            });
            if relevant {
                report(reloader.reload());
            }
        })
        .map_err(|error| notify::Error::generic(&error.to_string()))?;
        for (dir, file) in &targets {
            let mode = if file.is_some() {
                RecursiveMode::NonRecursive
            } else {
                RecursiveMode::Recursive
            };
            debouncer.watch(dir, mode)?;
        }
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
    _debouncer: Debouncer<notify::RecommendedWatcher, RecommendedCache>,
}

impl std::fmt::Debug for WatchHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WatchHandle")
    }
}
