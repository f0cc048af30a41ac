//! `toolgate diff BASE HEAD`: the review of a policy change — every change rated by its effect
//! on decisions, and the calls decided differently (the rules' examples, the policy tests given
//! with `--tests`, a decision log given with `--replay`, and probes built from the changed
//! rules' patterns). The review itself is the crate-private `review` module; this file loads the two sets.
//!
//! Without `--git`, BASE and HEAD are policy roots (directories or files), each loaded as the
//! last layer on top of the other roots given with `--policies`/`--enforced` and the built-in
//! layer. With `--git`, BASE and HEAD are git revisions (`--git BASE..HEAD` works too), and the
//! `--policies` and `--enforced` roots are read as they are at each revision; without HEAD
//! (`--git origin/main`, `--git origin/main..`) they are read from the work tree — the review
//! of a policy pull request is `toolgate -p .toolgate/policies diff --git origin/main..HEAD`.
//!
//! Formats: `human`, `markdown` (a pull-request comment), `json` (`toolgate schema diff`),
//! `github` (workflow annotations at the changed line of HEAD).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::Value;

use crate::diagnostics::Diagnostic;
use crate::review::decisions::{
    CorpusCall, Origin, changed_modes, decision_diff, examples, known_tools, probes,
};
use crate::review::report::{LocatedChange, Review};
use crate::review::{Change, ChangeKind, Subject, diff};
use crate::snapshot::{Snapshot, load};

use super::GlobalOptions;

/// Output formats of `diff`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiffFormat {
    /// One block per change, then the changed calls.
    Human,
    /// A pull-request comment.
    Markdown,
    /// JSON.
    Json,
    /// GitHub workflow annotations.
    Github,
}

/// What to compare and which calls to decide.
#[derive(Clone, Debug, Default)]
pub struct DiffOptions {
    /// BASE and HEAD are git revisions.
    pub git: bool,
    /// Policy test files or folders whose calls are decided under both sets.
    pub tests: Vec<PathBuf>,
    /// A decision log (JSON Lines) whose calls are decided under both sets.
    pub replay: Option<PathBuf>,
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
    /// A test file or the decision log cannot be read (exit 2).
    Corpus(Vec<Diagnostic>),
    /// BASE or HEAD (without `--git`) names no file or folder (exit 2).
    MissingRoot {
        /// `base` or `head`.
        side: &'static str,
        /// The root as given.
        root: String,
    },
}

impl DiffError {
    /// The process exit code: 2 for usage and I/O problems (a missing root, a bad revision),
    /// 1 for a set that does not load.
    pub fn exit(&self) -> super::Exit {
        match self {
            DiffError::Invalid { diagnostics, .. } if !super::is_io_problem(diagnostics) => {
                super::Exit::Problems
            }
            _ => super::Exit::Usage,
        }
    }
}

/// Loads both sets and reviews the change.
pub fn run(
    global: &GlobalOptions,
    base: &str,
    head: Option<&str>,
    options: &DiffOptions,
) -> Result<Review, DiffError> {
    // A range, as git reads it: `A..B` (a side left out is `HEAD`, but `A..` compares with
    // the work tree, as `A` alone does), `A...B` from where `A` and `B` forked.
    let forked;
    let (base, head) = match (options.git, head) {
        (true, None) => match base
            .split_once("...")
            .map(|range| (range, true))
            .or_else(|| base.split_once("..").map(|range| (range, false)))
        {
            Some(((b, h), three_dots)) => {
                let b = if b.is_empty() { "HEAD" } else { b };
                let h = (!h.is_empty()).then_some(h);
                if three_dots {
                    forked = merge_base(b, h.unwrap_or("HEAD"))?;
                    (forked.as_str(), h)
                } else {
                    (b, h)
                }
            }
            None => (base, head),
        },
        _ => (base, head),
    };
    if options.git {
        let base_dir = checkout(global, base)?;
        let head_dir = match head {
            Some(head) => Some(checkout(global, head)?),
            None => None,
        };
        let base_set = load_side(&rooted(global, base_dir.path()), "base")?;
        let head_set = match &head_dir {
            Some(dir) => load_side(&rooted(global, dir.path()), "head")?,
            // The work tree: the roots as they are on disk, read whole as the base's are (a
            // found project's allow rules count before it is trusted: they are the change).
            None => load_side(&read_whole(global), "head")?,
        };
        let mut found = review(&base_set, &head_set, options)?;
        // Show the paths as they are in the repository, not in the temporary checkouts.
        let dirs: Vec<&Path> = std::iter::once(base_dir.path())
            .chain(head_dir.as_ref().map(|d| d.path()))
            .collect();
        for change in &mut found.changes {
            if let Some(file) = &mut change.file {
                for dir in &dirs {
                    let prefix = format!("{}/", dir.display());
                    if let Some(rest) = file.strip_prefix(&prefix) {
                        *file = match rest.strip_prefix("abs/") {
                            Some(absolute) => format!("/{absolute}"),
                            None => rest.to_owned(),
                        };
                    }
                }
            }
        }
        return Ok(found);
    }
    let Some(head) = head else {
        return Err(DiffError::MissingRoot {
            side: "head",
            root: String::new(),
        });
    };
    for (side, root) in [("base", base), ("head", head)] {
        if !Path::new(root).exists() {
            return Err(DiffError::MissingRoot {
                side,
                root: root.to_owned(),
            });
        }
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
    review(&base_set, &head_set, options)
}

/// Reviews two loaded sets: the changes located, and the decision diff over the rules'
/// examples, the given tests and log, and the probes of the changed rules.
pub fn review(
    base: &Snapshot,
    head: &Snapshot,
    options: &DiffOptions,
) -> Result<Review, DiffError> {
    let (base_doc, head_doc) = (base.effective.value(), head.effective.value());
    let changes = diff(&base_doc, &head_doc);
    let mut corpus = examples(&base_doc);
    corpus.extend(examples(&head_doc));
    corpus.extend(test_calls(&options.tests, base, head)?);
    let mut skipped = 0;
    if let Some(log) = &options.replay {
        let text = std::fs::read_to_string(log).map_err(|error| {
            DiffError::Corpus(vec![Diagnostic::new(
                crate::diagnostics::Code::IoNotFound,
                format!("cannot read the decision log `{}`: {error}", log.display()),
            )])
        })?;
        let replayed = crate::review::replay::read_log(&text);
        skipped = replayed.skipped;
        corpus.extend(replayed.calls);
    }
    corpus.extend(probes(&changes, &base_doc, &head_doc));
    let corpus = known_tools(corpus, base, head);
    let decisions = decision_diff(base, head, corpus, &changed_modes(&changes));
    let located = locate(changes, base, head, &base_doc, &head_doc);
    let mut review = Review::new(located, decisions);
    review.replay_skipped = skipped;
    Ok(review)
}

/// The calls of the policy test files, read against HEAD (or BASE, for tests that name what
/// HEAD removed).
fn test_calls(
    paths: &[PathBuf],
    base: &Snapshot,
    head: &Snapshot,
) -> Result<Vec<CorpusCall>, DiffError> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let found = super::test::discover(paths).map_err(DiffError::Corpus)?;
    let mut calls = Vec::new();
    for path in &found {
        let file = super::test::load_test_file(path, head)
            .or_else(|_| super::test::load_test_file(path, base))
            .map_err(DiffError::Corpus)?;
        for (test, _) in &file.tests {
            calls.push(CorpusCall {
                tool: test.call.tool.clone(),
                input: test.call.input.clone(),
                modes: test.modes.clone().unwrap_or_default(),
                origin: Origin::Test {
                    name: test.name.clone(),
                },
            });
        }
    }
    Ok(calls)
}

/// Locates each change in the set that has it.
fn locate(
    changes: Vec<Change>,
    base: &Snapshot,
    head: &Snapshot,
    base_doc: &Value,
    head_doc: &Value,
) -> Vec<LocatedChange> {
    changes
        .into_iter()
        .map(|change| {
            let (side, doc) = if change.kind == ChangeKind::Removed {
                (base, base_doc)
            } else {
                (head, head_doc)
            };
            let location = pointer_of(doc, &change)
                .and_then(|pointer| side.sources.locate_key(&side.provenance, &pointer));
            LocatedChange {
                file: location.as_ref().map(|l| l.source.path().to_string()),
                line: location.as_ref().map(|l| l.span.line),
                column: location.as_ref().map(|l| l.span.column),
                change,
            }
        })
        .collect()
}

fn load_side(global: &GlobalOptions, side: &'static str) -> Result<Arc<Snapshot>, DiffError> {
    let outcome = load(&global.load_options(), 1);
    outcome.snapshot.ok_or(DiffError::Invalid {
        side,
        diagnostics: outcome.diagnostics,
    })
}

/// The same options with a project found from the current folder read whole, as a root named
/// with `-p` is: a review compares what the files say, whether the project is trusted or not.
fn read_whole(global: &GlobalOptions) -> GlobalOptions {
    let mut options = global.clone();
    options.found_project = None;
    options
}

/// The same options with every root read under `dir` (a checkout of a revision).
fn rooted(global: &GlobalOptions, dir: &Path) -> GlobalOptions {
    let mut options = global.clone();
    options.policies = global
        .policies
        .iter()
        .map(|p| dir.join(in_checkout(p)))
        .collect();
    options.enforced = global
        .enforced
        .iter()
        .map(|p| dir.join(in_checkout(p)))
        .collect();
    options
}

/// Where a root lands inside a checkout folder: relative roots as they are, absolute ones
/// (the project's `.toolgate/policies` found from a subfolder) under `abs/`.
fn in_checkout(root: &Path) -> PathBuf {
    match root.strip_prefix("/") {
        Ok(rest) => Path::new("abs").join(rest),
        Err(_) => root.to_owned(),
    }
}

/// The commit where `base` and `head` forked (`git merge-base`), for `base...head`.
fn merge_base(base: &str, head: &str) -> Result<String, DiffError> {
    if let Some(option) = [base, head].into_iter().find(|r| r.starts_with('-')) {
        return Err(DiffError::Git(format!("`{option}` is not a git revision")));
    }
    let found = Command::new("git")
        .args(["merge-base", base, head])
        .output()
        .map_err(|e| DiffError::Git(format!("cannot run git: {e}")))?;
    let commit = String::from_utf8_lossy(&found.stdout).trim().to_owned();
    if !found.status.success() || commit.is_empty() {
        return Err(DiffError::Git(format!(
            "`{base}...{head}`: `{base}` and `{head}` have no commit in common (or one is not a git revision)"
        )));
    }
    Ok(commit)
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
    let worktree = Command::new("git")
        .args(["rev-parse", "--show-toplevel"])
        .output()
        .map_err(|e| git_error(format!("cannot run git: {e}")))?;
    let worktree = PathBuf::from(String::from_utf8_lossy(&worktree.stdout).trim());
    let worktree = std::fs::canonicalize(&worktree).unwrap_or(worktree);
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
        // An absolute root is read at its place in the repository.
        let in_repo = match root.is_absolute() {
            true => std::fs::canonicalize(root)
                .ok()
                .and_then(|r| r.strip_prefix(&worktree).ok().map(Path::to_owned))
                .map(|r| r.display().to_string()),
            false => None,
        };
        let spec = match in_repo {
            Some(path) => format!("{revision}:{path}"),
            None => format!("{revision}:{prefix}{}", root.display()).replace("/./", "/"),
        };
        let root = &in_checkout(root);
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
        // A link in the policy root (a folder of rules kept elsewhere, `shared -> ../../docs`)
        // is followed when policies load, but git keeps only its target's name: written out
        // as a file, what it links would drop out of the comparison unseen.
        let in_repo_path = spec.split_once(':').map_or("", |(_, path)| path);
        let entries = Command::new("git")
            .args(["ls-tree", "-r", "-z", revision, "--", in_repo_path])
            .output()
            .map_err(|e| git_error(e.to_string()))?;
        for entry in entries.stdout.split(|&b| b == 0) {
            let entry = String::from_utf8_lossy(entry);
            let Some((meta, path)) = entry.split_once('\t') else {
                continue;
            };
            if meta.starts_with("120000 ") || meta.starts_with("160000 ") {
                return Err(git_error(format!(
                    "`{path}` is a symbolic link or a submodule at `{revision}`: the policies it leads to cannot be read at that revision; compare the work tree (`toolgate diff --git {revision}`) or replace the link with the files"
                )));
            }
        }
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
        Subject::McpServer => join_pointer("/mcp_servers", &change.name),
        Subject::Commands => "/commands".to_owned(),
        Subject::Agents => "/agents".to_owned(),
        Subject::Review => "/review".to_owned(),
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

/// Renders a review in a format.
pub fn render(review: &Review, format: DiffFormat) -> String {
    match format {
        DiffFormat::Human => review.render_human(),
        DiffFormat::Markdown => review.render_markdown(),
        DiffFormat::Json => review.render_json(),
        DiffFormat::Github => review.render_github(),
    }
}
