//! `toolgate diff BASE HEAD`: the semantic diff of two policy sets, each change with its risk.
//!
//! Without `--git`, BASE and HEAD are policy roots (directories or files), each loaded as the
//! last layer on top of the other roots given with `--policies`/`--enforced` and the built-in
//! layer. With `--git`, BASE and HEAD are git revisions, and the `--policies` and
//! `--enforced` roots are read as they are at each revision — the review of a policy pull
//! request is `toolgate -p .toolgate/policies diff --git origin/main HEAD`.
//!
//! Formats: `human`, `markdown` (a table for a pull-request comment), `json`, `github`
//! (workflow annotations at the changed line of HEAD, warnings for high-risk changes).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::diagnostics::Diagnostic;
use crate::diagnostics::render::github::{escape_data, escape_property};
use crate::review::{Change, ChangeKind, Risk, Subject, diff};
use crate::snapshot::{Snapshot, load};

use super::GlobalOptions;

/// Output formats of `diff`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiffFormat {
    /// One line per change.
    Human,
    /// A Markdown table.
    Markdown,
    /// JSON.
    Json,
    /// GitHub workflow annotations.
    Github,
}

/// A change located in HEAD (or BASE, for removals).
#[derive(Clone, Debug, PartialEq)]
pub struct LocatedChange {
    /// The change.
    pub change: Change,
    /// `file:line:column` where HEAD (or BASE) sets it.
    pub location: Option<(String, u32, u32)>,
}

/// The diff of two sets.
#[derive(Clone, Debug, PartialEq)]
pub struct DiffReport {
    /// The changes, in a stable order.
    pub changes: Vec<LocatedChange>,
}

/// Why there is no diff.
#[derive(Debug)]
pub enum DiffError {
    /// A set does not load.
    Invalid {
        /// `base` or `head`.
        side: &'static str,
        /// Its diagnostics.
        diagnostics: Vec<Diagnostic>,
    },
    /// A git revision cannot be read.
    Git(String),
}

/// Loads both sets and diffs them.
pub fn run(
    global: &GlobalOptions,
    base: &str,
    head: &str,
    git: bool,
) -> Result<DiffReport, DiffError> {
    if git {
        let base_dir = checkout(global, base)?;
        let head_dir = checkout(global, head)?;
        let base_set = load_side(&rooted(global, base_dir.path()), "base")?;
        let head_set = load_side(&rooted(global, head_dir.path()), "head")?;
        let mut found = report(&base_set, &head_set);
        // Show the paths as they are in the repository, not in the temporary checkouts.
        for change in &mut found.changes {
            if let Some((file, _, _)) = &mut change.location {
                for dir in [base_dir.path(), head_dir.path()] {
                    let prefix = format!("{}/", dir.display());
                    if let Some(rest) = file.strip_prefix(&prefix) {
                        *file = rest.to_owned();
                    }
                }
            }
        }
        return Ok(found);
    }
    let (base_set, head_set) = {
        let with = |root: &str| {
            let mut options = global.clone();
            options.policies.push(PathBuf::from(root));
            options
        };
        (
            load_side(&with(base), "base")?,
            load_side(&with(head), "head")?,
        )
    };
    Ok(report(&base_set, &head_set))
}

/// Diffs two loaded snapshots, locating each change in the set that has it.
pub fn report(base: &Snapshot, head: &Snapshot) -> DiffReport {
    let (base_doc, head_doc) = (base.effective.value(), head.effective.value());
    let changes = diff(&base_doc, &head_doc)
        .into_iter()
        .map(|change| {
            let (side, doc) = if change.kind == ChangeKind::Removed {
                (base, &base_doc)
            } else {
                (head, &head_doc)
            };
            let location = pointer_of(doc, &change)
                .and_then(|pointer| side.sources.locate_key(&side.provenance, &pointer))
                .map(|l| (l.source.path().to_string(), l.span.line, l.span.column));
            LocatedChange { change, location }
        })
        .collect();
    DiffReport { changes }
}

fn load_side(
    global: &GlobalOptions,
    side: &'static str,
) -> Result<std::sync::Arc<Snapshot>, DiffError> {
    let outcome = load(&global.load_options(), 1);
    outcome.snapshot.ok_or(DiffError::Invalid {
        side,
        diagnostics: outcome.diagnostics,
    })
}

/// The same options with every root read under `dir` (a checkout of a revision).
fn rooted(global: &GlobalOptions, dir: &Path) -> GlobalOptions {
    let mut options = global.clone();
    options.policies = global.policies.iter().map(|p| dir.join(p)).collect();
    options.enforced = global.enforced.iter().map(|p| dir.join(p)).collect();
    options
}

/// Extracts the policy roots as they are at `revision` into a temporary folder.
fn checkout(global: &GlobalOptions, revision: &str) -> Result<tempfile::TempDir, DiffError> {
    let git_error = |message: String| DiffError::Git(message);
    let dir = tempfile::tempdir()
        .map_err(|e| git_error(format!("cannot create a temporary folder: {e}")))?;
    let toplevel = Command::new("git")
        .args(["rev-parse", "--show-prefix"])
        .output()
        .map_err(|e| git_error(format!("cannot run git: {e}")))?;
    if !toplevel.status.success() {
        return Err(git_error("not inside a git repository".into()));
    }
    let prefix = String::from_utf8_lossy(&toplevel.stdout).trim().to_owned();
    let verify = Command::new("git")
        .args([
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{revision}^{{commit}}"),
        ])
        .output();
    if !matches!(verify, Ok(out) if out.status.success()) {
        return Err(git_error(format!("`{revision}` is not a git revision")));
    }
    for root in global.policies.iter().chain(&global.enforced) {
        let spec = format!("{revision}:{prefix}{}", root.display()).replace("/./", "/");
        let kind = Command::new("git").args(["cat-file", "-t", &spec]).output();
        let kind = match kind {
            Ok(out) if out.status.success() => {
                String::from_utf8_lossy(&out.stdout).trim().to_owned()
            }
            // The root does not exist at this revision: it counts as an empty root.
            _ => {
                std::fs::create_dir_all(dir.path().join(root))
                    .map_err(|e| git_error(e.to_string()))?;
                continue;
            }
        };
        let target = dir.path().join(root);
        if kind == "blob" {
            let out = Command::new("git")
                .args(["show", &spec])
                .output()
                .map_err(|e| git_error(e.to_string()))?;
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(|e| git_error(e.to_string()))?;
            }
            std::fs::write(&target, out.stdout).map_err(|e| git_error(e.to_string()))?;
            continue;
        }
        let listing = Command::new("git")
            .args(["ls-tree", "-r", "--name-only", &spec])
            .output()
            .map_err(|e| git_error(e.to_string()))?;
        for file in String::from_utf8_lossy(&listing.stdout).lines() {
            let out = Command::new("git")
                .args(["show", &format!("{spec}/{file}")])
                .output()
                .map_err(|e| git_error(e.to_string()))?;
            let path = target.join(file);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| git_error(e.to_string()))?;
            }
            std::fs::write(&path, out.stdout).map_err(|e| git_error(e.to_string()))?;
        }
    }
    Ok(dir)
}

/// The effective pointer of the item (and field) a change is about, in the effective
/// document that has it.
fn pointer_of(effective: &Value, change: &Change) -> Option<String> {
    use crate::load::spans::join_pointer;
    let item = match change.subject {
        Subject::Engine => "/engine".to_owned(),
        Subject::Tool => join_pointer("/tools", &change.name),
        Subject::Gate => join_pointer("/gates", &change.name),
        Subject::Mode => join_pointer("/modes", &change.name),
        Subject::Rule | Subject::Hook => {
            let section = if change.subject == Subject::Rule {
                "rules"
            } else {
                "hooks"
            };
            let index = effective
                .get(section)?
                .as_array()?
                .iter()
                .position(|item| {
                    item.get("name").and_then(Value::as_str) == Some(change.name.as_str())
                })?;
            format!("/{section}/{index}")
        }
    };
    Some(match &change.field {
        Some(field) => field
            .split('.')
            .fold(item, |pointer, part| join_pointer(&pointer, part)),
        None => item,
    })
}

fn risk_name(risk: Risk) -> &'static str {
    match risk {
        Risk::Low => "low",
        Risk::Medium => "medium",
        Risk::High => "high",
    }
}

impl DiffReport {
    /// Whether any change is high risk.
    pub fn has_high_risk(&self) -> bool {
        self.changes.iter().any(|c| c.change.risk == Risk::High)
    }

    /// Renders the report.
    pub fn render(&self, format: DiffFormat) -> String {
        let at = |c: &LocatedChange| {
            c.location
                .as_ref()
                .map(|(f, l, col)| format!("{f}:{l}:{col}"))
        };
        match format {
            DiffFormat::Human => {
                if self.changes.is_empty() {
                    return "no change in effect\n".into();
                }
                let mut out = String::new();
                for c in &self.changes {
                    let place = at(c).map(|p| format!("  ({p})")).unwrap_or_default();
                    out.push_str(&format!(
                        "{:<6} {}{place}\n",
                        risk_name(c.change.risk),
                        c.change.describe()
                    ));
                }
                let high = self
                    .changes
                    .iter()
                    .filter(|c| c.change.risk == Risk::High)
                    .count();
                out.push_str(&format!(
                    "{} changes, {high} high risk\n",
                    self.changes.len()
                ));
                out
            }
            DiffFormat::Markdown => {
                if self.changes.is_empty() {
                    return "No change in effect.\n".into();
                }
                let mut out = String::from("| risk | change | where |\n| --- | --- | --- |\n");
                for c in &self.changes {
                    let text = c.change.describe().replace('|', "\\|");
                    out.push_str(&format!(
                        "| {} | {text} | {} |\n",
                        risk_name(c.change.risk),
                        at(c).unwrap_or_default()
                    ));
                }
                out
            }
            DiffFormat::Json => {
                let changes: Vec<Value> = self
                    .changes
                    .iter()
                    .map(|c| {
                        let mut value = serde_json::to_value(&c.change).unwrap_or(Value::Null);
                        if let (Value::Object(map), Some((file, line, column))) =
                            (&mut value, &c.location)
                        {
                            map.insert("file".into(), json!(file));
                            map.insert("line".into(), json!(line));
                            map.insert("column".into(), json!(column));
                        }
                        value
                    })
                    .collect();
                format!(
                    "{}\n",
                    serde_json::to_string_pretty(&json!({"changes": changes})).unwrap_or_default()
                )
            }
            DiffFormat::Github => {
                let mut out = String::new();
                for c in &self.changes {
                    let level = if c.change.risk == Risk::High {
                        "warning"
                    } else {
                        "notice"
                    };
                    let title = escape_property(&format!(
                        "toolgate diff: {} risk",
                        risk_name(c.change.risk)
                    ));
                    let place = match &c.location {
                        Some((file, line, column)) => {
                            format!(" file={},line={line},col={column},", escape_property(file))
                        }
                        None => " ".to_owned(),
                    };
                    out.push_str(&format!(
                        "::{level}{place}title={title}::{}\n",
                        escape_data(&c.change.describe())
                    ));
                }
                out
            }
        }
    }
}
