//! `toolgate watch`: check the policy set, then re-check on every change of its files.
//!
//! `--format human` prints the diagnostics like `check` and, for every new generation, the
//! changes in effect with their risk; `--format jsonl` prints one `PolicyReloaded` or
//! `PolicyReloadFailed` record per (re)load, the first one for the initial load.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::diagnostics::render::{HumanOptions, render_human, to_json};
use crate::events::NullSink;
use crate::review::Risk;
use crate::snapshot::reload::{ReloadOutcome, Reloader};

use super::{Exit, GlobalOptions};

/// Output format of `watch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchFormat {
    /// Diagnostics and change lists for humans.
    Human,
    /// One JSON record per (re)load.
    Jsonl,
}

/// Renders one outcome.
pub fn render(outcome: &ReloadOutcome, format: WatchFormat, color: bool) -> String {
    let human = HumanOptions {
        color,
        ..HumanOptions::default()
    };
    match format {
        WatchFormat::Jsonl => {
            let kind = outcome.event_kind();
            let mut record = Map::new();
            record.insert("type".into(), kind.type_name().into());
            if let Ok(Value::Object(fields)) = serde_json::to_value(&kind) {
                record.extend(fields);
            }
            if let ReloadOutcome::Reloaded { warnings, .. } = outcome
                && !warnings.is_empty()
            {
                record.insert("warnings".into(), to_json(warnings)["diagnostics"].clone());
            }
            format!("{}\n", Value::Object(record))
        }
        WatchFormat::Human => match outcome {
            ReloadOutcome::Reloaded {
                generation,
                previous,
                changes,
                files,
                warnings,
            } => {
                let mut out = format!(
                    "generation {generation} in force ({})",
                    super::count(files.len(), "file", "files")
                );
                if previous.is_none() {
                    out.push('\n');
                } else if changes.is_empty() {
                    out.push_str(": no change in effect\n");
                } else {
                    out.push_str(&format!(
                        ": {} change{}\n",
                        changes.len(),
                        if changes.len() == 1 { "" } else { "s" }
                    ));
                    for change in changes {
                        let risk = match change.risk {
                            Risk::Low => "low",
                            Risk::Medium => "medium",
                            Risk::High => "high",
                        };
                        out.push_str(&format!("  {risk:<6} {}\n", change.describe()));
                    }
                }
                if !warnings.is_empty() {
                    out.push_str(&render_human(warnings, &human));
                }
                out
            }
            ReloadOutcome::Failed {
                diagnostics,
                generation,
            } => {
                let mut out = render_human(diagnostics, &human);
                if *generation > 0 {
                    out.push_str(&format!(
                        "rejected: generation {generation} stays in force\n"
                    ));
                } else {
                    out.push_str("rejected: no valid policy set yet\n");
                }
                out
            }
        },
    }
}

/// Watches until interrupted (Ctrl-C, SIGTERM or SIGHUP). Reports go to `out`; a failure to start
/// (no signal handler, no file watcher) goes to stderr, so that `out` stays one JSON object
/// per line in `jsonl` format.
pub async fn watch(
    global: &GlobalOptions,
    format: WatchFormat,
    color: bool,
    debounce: Duration,
    out: &mut (dyn Write + Send),
) -> Exit {
    // Listen before printing anything: a signal that arrives while no `recv()` is pending
    // is kept for the next one, which `tokio::signal::ctrl_c()` re-created in the loop
    // would lose. SIGINT, SIGTERM and SIGHUP all stop watching (exit 0: stopping is how
    // `watch` ends).
    // A root that does not exist would be watched through its parent folder (`/` for
    // `/nonexistent`): refuse it instead.
    if let Some(missing) = global
        .enforced
        .iter()
        .chain(&global.policies)
        .find(|root| !root.exists())
    {
        eprintln!(
            "error: policy root `{}` does not exist\nhelp: check the -p/--policies and --enforced paths; a root is a folder or a single policy file",
            missing.display()
        );
        return Exit::Usage;
    }
    let mut termination = match super::signals::Termination::listen() {
        Ok(termination) => termination,
        Err(error) => {
            eprintln!("error: cannot listen for Ctrl-C: {error}");
            return Exit::Usage;
        }
    };
    let options = global.load_options();
    let reloader = Arc::new(Reloader::new(
        options,
        None,
        Box::new(|_| {}),
        Arc::new(NullSink),
    ));
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let first = {
        let reloader = Arc::clone(&reloader);
        tokio::task::spawn_blocking(move || reloader.reload()).await
    };
    if let Ok(first) = first {
        let _ = out.write_all(render(&first, format, color).as_bytes());
    }
    let started = {
        let reloader = Arc::clone(&reloader);
        tokio::task::spawn_blocking(move || {
            reloader.watch_with(debounce, move |outcome| {
                let _ = sender.send(outcome);
            })
        })
        .await
    };
    let handle = match started
        .unwrap_or_else(|error| Err(notify::Error::generic(&error.to_string())))
    {
        Ok(handle) => handle,
        Err(error) => {
            eprintln!(
                "error: cannot watch the policy roots: {error}\nhelp: check that every -p/--enforced path exists and is readable, and the system's inotify limits (fs.inotify.max_user_watches)"
            );
            return Exit::Usage;
        }
    };
    if format == WatchFormat::Human {
        let roots: Vec<String> = reloader
            .watch_targets()
            .iter()
            .map(|(dir, _)| dir.display().to_string())
            .collect();
        let _ = writeln!(
            out,
            "watching {} (Ctrl-C to stop)",
            if roots.is_empty() {
                "nothing: no --policies root".to_owned()
            } else {
                roots.join(", ")
            }
        );
    }
    let _ = out.flush();
    loop {
        tokio::select! {
            outcome = receiver.recv() => match outcome {
                Some(outcome) => {
                    let _ = out.write_all(render(&outcome, format, color).as_bytes());
                    let _ = out.flush();
                }
                None => break,
            },
            _ = termination.recv() => break,
        }
    }
    drop(handle);
    Exit::Success
}
