//! What a search of a folder reads: the files below it.
//!
//! A folder searched with everything below it — by the search tool (`Grep`), or given to a
//! program as a `tree` operand (`grep -r`, `rg`, `cp -r`, `diff`) — is read file by file.
//! Each file below it that the search does not leave out is judged as a read, by the rules
//! of the read tool (`Read`): one definition of a secret for every way of reading it. A file
//! that a rule denies or asks makes the search **ask**, naming the files and the rule: the
//! search may read them (whether it does depends on its pattern, its filters and the files'
//! content, which toolgate does not model).
//!
//! What a search leaves out is data: the command table says it per program (`rg` skips
//! hidden entries and what ignore files list, unless `--hidden`, `--no-ignore`, `-u` or
//! `--glob`; `grep -r` and `git grep` skip nothing) and for the search tool
//! (`file_tools.search_skips`; a `glob` in its input limits it to the files the glob
//! matches, hidden or ignored ones included, as ripgrep's `--glob` does). The walk is ripgrep's own (the `ignore` crate), so
//! hidden and ignored mean what they mean to ripgrep.
//!
//! The walk reads at most [`MAX_ENTRIES`] entries; a folder with more asks. Links below the
//! folder are followed (`grep -R`, `rg -L` and `diff -r` read through them; a loop is
//! walked once), and each file is judged where it is named and where it lies: a link to
//! `~` below the workspace is a search of the home folder.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use ignore::WalkBuilder;
use ignore::overrides::{Override, OverrideBuilder};
use serde_json::json;

use super::disk;
use super::git_index;
use super::matcher::ParseCache;
use super::path::{Location, MatchContext, NormalisedPath, Side, listed};
use super::rule::{CallFacts, RuleReason};
use super::rules::RuleSet;
use super::shell::wildcard::{Wildcard, readings, widened};
use crate::model::command::SearchSkip;
use crate::model::resolved::ResolvedConcurrency;
use crate::model::rule::WorkspaceSide;
use crate::model::{Decision, ModeName, ToolName};

/// How many entries below a searched folder are read before the search is asked instead.
pub const MAX_ENTRIES: usize = 10_000;
/// How many files a reason names (the count says how many more).
const NAMED_FILES: usize = 3;

/// What a search reads below a folder.
pub(crate) struct Walk {
    /// What it leaves out.
    pub skips: Vec<SearchSkip>,
    /// ripgrep `--glob` patterns limiting it to the files they match, read from each of
    /// the folders they may be rooted at: a file any of them matches is searched.
    pub only: Option<Vec<Override>>,
    /// The same globs read as git pathspecs (`git grep -- GLOB`): a file any of them
    /// matches is searched too.
    pub pathspecs: Vec<Pathspec>,
    /// Whether the search prints every line of every file it searches (its pattern matches
    /// any line, and it prints lines: Gemini CLI's read-many tool, `Grep` with `.` and
    /// `output_mode: content`): it reads them, so a file a rule denies denies the search.
    pub reads_all: bool,
}

impl Walk {
    /// A walk that leaves out `skips`, or, given globs, one limited to the files they match,
    /// hidden and ignored ones included (exclusions, `!target`, are not read: they only
    /// leave files out). A glob may hold several, separated by white space
    /// (U+FEFF too) or by commas outside braces (`*.rs,.env`), as Claude Code's search tool
    /// splits them.
    /// Globs that cannot be read limit nothing and leave nothing out.
    pub fn new<'g>(
        skips: &[SearchSkip],
        globs: impl IntoIterator<Item = &'g str>,
        roots: &[&str],
    ) -> Self {
        // JavaScript's `\s`, which Claude Code splits at, is white space and U+FEFF.
        let globs: Vec<&str> = globs
            .into_iter()
            .flat_map(|glob| glob.split(|c: char| c.is_whitespace() || c == '\u{feff}'))
            .filter(|glob| !glob.is_empty())
            .flat_map(|glob| {
                if glob.contains('{') && glob.contains('}') {
                    vec![glob]
                } else {
                    glob.split(',').filter(|g| !g.is_empty()).collect()
                }
            })
            // An exclusion (`!target`) only leaves files out: it brings nothing back, and
            // judging the files it leaves out too only judges more.
            .filter(|glob| !glob.starts_with('!') || glob.starts_with("!("))
            .collect();
        if globs.is_empty() {
            return Self {
                skips: skips.to_vec(),
                only: None,
                pathspecs: Vec::new(),
                reads_all: false,
            };
        }
        // Matching more files than ripgrep would only judges more of them: case is
        // ignored, the glob is widened to what an agent's glob library may read in it
        // (brackets, extglobs, a backslash as an escape or as a separator), and it is
        // rooted both at the folder searched and where the search runs (ripgrep roots a
        // `--glob` with a `/` at its working folder).
        let globs: Vec<String> = globs
            .iter()
            .flat_map(|glob| readings(glob))
            .map(|glob| widened(&glob))
            .collect();
        let only = roots
            .iter()
            .map(|root| {
                let mut builder = OverrideBuilder::new(root);
                let _ = builder.case_insensitive(true);
                globs
                    .iter()
                    .try_for_each(|glob| builder.add(glob).map(drop))
                    .ok()
                    .and_then(|()| builder.build().ok())
            })
            .collect();
        Self {
            skips: Vec::new(),
            only,
            pathspecs: Vec::new(),
            reads_all: false,
        }
    }

    /// The walk with its globs also read as git pathspecs, relative to the folder searched
    /// (`git grep --untracked -- GLOB`, which an agent's search tool may run instead of
    /// ripgrep): a file either reading matches is searched. `Err` says why a pathspec's
    /// files cannot be told.
    pub fn with_pathspecs<'g>(
        mut self,
        globs: impl IntoIterator<Item = &'g str>,
    ) -> Result<Self, String> {
        for glob in globs {
            self.pathspecs.push(Pathspec::new(glob)?);
        }
        Ok(self)
    }

    /// Whether the file at `relative` (below the folder searched) is searched, as the
    /// walk's globs and pathspecs limit it.
    fn includes(&self, path: &Path, relative: &str) -> bool {
        let Some(only) = &self.only else {
            return true;
        };
        only.iter().any(|o| o.matched(path, false).is_whitelist())
            || self.pathspecs.iter().any(|spec| spec.matches(relative))
    }
}

/// A git pathspec without magic, as `git grep` reads it relative to the folder it runs in:
/// one with no wildcard names a file or a folder with everything below it (`src`, `.`,
/// `src/..`); one with a wildcard matches whole paths, its `*` crossing `/` (`s*env` matches
/// `src/sub/.env`), after the folders written before its first wildcard.
#[derive(Debug)]
pub(crate) struct Pathspec {
    /// The folder (or file) it starts at, relative to the folder searched; empty for that
    /// folder.
    folder: String,
    /// What the paths below `folder` must match; `None`: every one.
    pattern: Option<Wildcard>,
}

impl Pathspec {
    /// `spec` read as a pathspec. `Err` for one whose files cannot be told: git's magic
    /// (`:/`, `:!x`, `:(icase)x`, which may reach the whole repository or any case), one
    /// leaving the folder searched (`../x`), or a pattern toolgate cannot read.
    pub(crate) fn new(spec: &str) -> Result<Self, String> {
        if spec.starts_with(':') {
            return Err(format!(
                "`{spec}` is a git pathspec with magic, whose files cannot be told"
            ));
        }
        let literal_end = spec.find(['*', '?', '[', '\\']).unwrap_or(spec.len());
        let (written_folder, pattern) = if literal_end == spec.len() {
            (spec, None)
        } else {
            match spec[..literal_end].rfind('/') {
                Some(slash) => (&spec[..slash], Some(&spec[slash + 1..])),
                None => ("", Some(spec)),
            }
        };
        let mut folder: Vec<&str> = Vec::new();
        for component in written_folder.split('/') {
            match component {
                "" | "." => {}
                ".." => {
                    if folder.pop().is_none() {
                        return Err(format!(
                            "`{spec}` names files outside the folder searched, which are not judged with it"
                        ));
                    }
                }
                name => folder.push(name),
            }
        }
        Ok(Self {
            folder: folder.join("/"),
            pattern: pattern.map(Wildcard::new).transpose()?,
        })
    }

    /// Whether the file at `relative` (below the folder searched, `/`-separated) matches.
    fn matches(&self, relative: &str) -> bool {
        let below = if self.folder.is_empty() {
            Some(relative)
        } else if relative == self.folder {
            Some("")
        } else {
            relative
                .strip_prefix(self.folder.as_str())
                .and_then(|rest| rest.strip_prefix('/'))
        };
        match (below, &self.pattern) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(below), Some(pattern)) => pattern.matches(below),
        }
    }
}

/// A path that may hold glob characters, split into the folder before the first component
/// that holds one and the glob after it (`src/**/*.ts` → `src`, `**/*.ts`); the path itself
/// when it holds none.
pub(crate) fn split_glob(path: &str) -> (String, Option<String>) {
    let path = widened(path);
    let components: Vec<&str> = path.split('/').collect();
    let Some(at) = components
        .iter()
        .position(|c| c.contains(['*', '?', '[', '{']))
    else {
        return (path, None);
    };
    let folder = match components[..at].join("/") {
        folder if folder.is_empty() && path.starts_with('/') => "/".to_owned(),
        folder if folder.is_empty() => ".".to_owned(),
        folder => folder,
    };
    (folder, Some(components[at..].join("/")))
}

/// The read tool whose rules judge each file below a searched folder.
#[derive(Clone, Copy)]
pub(crate) struct Reader<'a> {
    pub tool: &'a ToolName,
    pub flags: &'a ResolvedConcurrency,
    pub modes: &'a [ModeName],
}

/// Whether `dir` holds a `.gitignore` that is a link.
fn linked_gitignore(dir: &Path) -> bool {
    dir.join(".gitignore")
        .symlink_metadata()
        .is_ok_and(|meta| meta.file_type().is_symlink())
}

/// Whether a folder above `folder`, up to its repository's root, holds a `.gitignore` that
/// is a link.
fn linked_gitignore_above(folder: &Path) -> bool {
    for dir in folder.ancestors().skip(1) {
        if linked_gitignore(dir) {
            return true;
        }
        if disk::exists(dir.join(".git")) {
            return false;
        }
    }
    false
}

/// What a search decides, and why.
pub(crate) type Finding = (Decision, String);

/// Judges the files at or below `folder` that a search reads: why it asks — the files the
/// read tool's rules deny or ask (one finding per rule), or a folder too large to check.
/// Every finding asks, but a rule's deny of files a search prints whole
/// ([`Walk::reads_all`]), which denies. Empty when nothing there is protected, or nothing
/// exists there.
pub(crate) fn judge_below(
    set: &RuleSet,
    ctx: &MatchContext,
    reader: Reader<'_>,
    folder: Below<'_>,
    walk: &Walk,
) -> Vec<Finding> {
    let skips = |skip| walk.skips.contains(&skip);
    let (ignored, git_ignored) = (skips(SearchSkip::Ignored), skips(SearchSkip::GitIgnored));
    // git reads no `.gitignore` that is a link (it warns), where ripgrep's walker follows
    // it: meeting one (here, or in a folder above up to the repository's), a search by git
    // is walked again with no `.gitignore` read.
    let mut git_ignore_files =
        ignored || (git_ignored && !linked_gitignore_above(Path::new(folder.real)));
    // The ignore files the walk reads must be regular files: a FIFO would block it for ever,
    // a device would be read. Those of the folder and the folders above are read when it
    // starts; those of each folder below when the walk enters it, which a filter looks at
    // first (the walker reads a folder's ignore files before it hands the folder out).
    let ignore_files: &'static [&'static str] = match (ignored, git_ignored) {
        (true, _) => &[".gitignore", ".ignore", ".rgignore"],
        (false, true) => &[".gitignore"],
        (false, false) => &[],
    };
    // The bytes of ignore files the walk reads, those of the folders above it included.
    let ignore_bytes = Arc::new(AtomicU64::new(0));
    let unreadable = |(file, why): &(PathBuf, &str)| {
        vec![ask(format!(
            "{} searches {}, where `{}` {why}: what the search leaves out cannot be told",
            folder.what,
            folder.shown(),
            file.display()
        ))]
    };
    if !ignore_files.is_empty()
        && let Some(odd) = Path::new(folder.real)
            .ancestors()
            .take(64)
            .find_map(|dir| odd_ignore_file(dir, ignore_files, &ignore_bytes))
    {
        return unreadable(&odd);
    }
    let (protected, credentials, keys, linked) = 'walks: loop {
        let mut builder = WalkBuilder::new(folder.real);
        builder
            .standard_filters(false)
            .hidden(skips(SearchSkip::Hidden))
            .parents(ignored || git_ignored)
            .ignore(ignored)
            .git_ignore(git_ignore_files)
            .git_global(ignored || git_ignored)
            .git_exclude(ignored || git_ignored)
            .follow_links(true);
        if ignored {
            builder.add_custom_ignore_filename(".rgignore");
        }
        // (git's own search never reads its repository's `.git`.)
        let read = Arc::clone(&ignore_bytes);
        let odd_below = refuse_odd_ignore_files(&mut builder, ignore_files, read, git_ignored);

        // Per rule (by name), the files it protects: the rule's decision and reason, the files.
        let mut protected: BTreeMap<String, (Decision, String, Vec<String>)> = BTreeMap::new();
        // Git configs that hold a credential (a token in a remote URL).
        let mut credentials: Vec<String> = Vec::new();
        // Files holding a private key under a name no rule lists.
        let mut keys: Vec<String> = Vec::new();
        // Files with other names (hard links), by identity: their names, and how many
        // they have. One whose names are not all below the folder (they were all judged
        // here) may be a protected file elsewhere (`~/.aws/credentials`); a build's copies
        // of one file (cargo's `target/`) are not.
        let mut linked: BTreeMap<(u64, u64), (BTreeMap<String, String>, u64)> = BTreeMap::new();
        let mut judge = |relative: &str, real: Option<&Path>| {
            // The folder itself may be a file (`Grep` over one file).
            let written = folder.written.absolute();
            let path = if relative.is_empty() {
                written.to_owned()
            } else {
                format!("{}/{relative}", written.trim_end_matches('/'))
            };
            // Each file is a call of its own, with a cache of its own (a cache is searched
            // one entry at a time: it is made for the few strings of one call). Where a file
            // reached through no link lies is known from the listing: no `lstat` per component.
            let mut cache = ParseCache::with_table(Arc::clone(set.commands()));
            if let Some(real) = real {
                let real = real.to_string_lossy().into_owned();
                cache.seed_path(&path, listed(path.clone(), real, ctx));
            }
            // A git config holding a credential, where the file is named or where a link
            // leads (`src/gc` → `.git/config`); a config the repository's or the user's
            // includes, whatever its name, too.
            let lies = cache
                .path(&path, ctx)
                .and_then(|location| location.at(Side::Resolved))
                .map(|resolved| resolved.absolute().to_owned());
            let holds_credential = |file: &str| {
                git_index::config_file_with_credentials(Path::new(file), || ctx.runs_by_git(file))
            };
            if holds_credential(&path)
                || lies
                    .as_deref()
                    .is_some_and(|l| l != path && holds_credential(l))
            {
                credentials.push(path.clone());
            } else if super::content::private_key(Path::new(&path)).is_some() {
                keys.push(path.clone());
            }
            if let Some((id, names)) = super::content::hard_linked(Path::new(&path)) {
                // Counted where it lies: a symbolic link to a name is not another name.
                let (found, _) = linked.entry(id).or_insert((BTreeMap::new(), names));
                found.insert(lies.clone().unwrap_or_else(|| path.clone()), path.clone());
            }
            let input = json!({ "file_path": path });
            let read = CallFacts {
                tool: reader.tool,
                input: &input,
                modes: reader.modes,
                flags: reader.flags,
            };
            let outcome = set.decide_whole(&read, ctx, Decision::Allow, &mut cache, None);
            if !outcome.by_rule || outcome.decision == Decision::Allow {
                return;
            }
            let Some(rule) = outcome.reasons.iter().find_map(RuleReason::rule) else {
                return;
            };
            let (_, _, files) = protected.entry(rule.name.as_str().to_owned()).or_insert((
                rule.decision,
                rule.reason.clone().unwrap_or_default(),
                Vec::new(),
            ));
            files.push(if relative.is_empty() {
                path
            } else {
                relative.to_owned()
            });
        };
        // A search of tracked files only (`git grep`) reads what the index lists (outside a
        // repository, every file counts).
        if skips(SearchSkip::Untracked) {
            match tracked_below(folder) {
                Ok(Some(tracked)) => {
                    for (path, relative) in tracked {
                        if walk.includes(&path, &relative) {
                            // Where it lies is looked up: a component may be a link.
                            judge(&relative, None);
                        }
                    }
                    break (protected, credentials, keys, linked);
                }
                Ok(None) => {}
                Err(finding) => return vec![finding],
            }
        }
        let mut entries = 0usize;
        // The links walked through, below which a path is not where the file lies.
        let mut links: Vec<PathBuf> = Vec::new();
        // The files walked, when the files the repository tracks are searched too.
        let mut walked: HashSet<PathBuf> = HashSet::new();
        for entry in builder.build().flatten() {
            entries += 1;
            if entries > MAX_ENTRIES {
                return vec![ask(too_many(folder))];
            }
            if !disk::walked(1) {
                return vec![ask(format!(
                    "{} searches {}: {}",
                    folder.what,
                    folder.shown(),
                    disk::walked_too_much()
                ))];
            }
            let through_link =
                entry.path_is_symlink() || links.iter().any(|link| entry.path().starts_with(link));
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            if is_dir {
                if git_ignore_files && git_ignored && linked_gitignore(entry.path()) {
                    git_ignore_files = false;
                    continue 'walks;
                }
                if entry.path_is_symlink() {
                    links.push(entry.path().to_path_buf());
                }
                continue;
            }
            let Ok(relative) = entry.path().strip_prefix(folder.real) else {
                continue;
            };
            let relative = relative.to_string_lossy();
            if !walk.includes(entry.path(), &relative) {
                continue;
            }
            if git_ignored {
                walked.insert(entry.path().to_path_buf());
            }
            judge(&relative, (!through_link).then(|| entry.path()));
        }
        if let Some(odd) = odd_below.get() {
            return unreadable(odd);
        }
        if git_ignored {
            // git searches what its repository tracks, ignored or not.
            let tracked = match tracked_below(folder) {
                Ok(tracked) => tracked.unwrap_or_default(),
                Err(finding) => return vec![finding],
            };
            for (path, relative) in tracked {
                if !walked.contains(&path) {
                    // Where it lies is looked up: a component of it may be a link.
                    judge(&relative, None);
                }
            }
        }
        break (protected, credentials, keys, linked);
    };
    let credentials = credentials.into_iter().map(|config| {
        ask(format!(
            "{} searches {}, which holds `{config}`, a git config holding a credential (a token or password in a URL or a setting, or an `extraheader`); the search may read it",
            folder.what,
            folder.shown()
        ))
    });
    let keys = (!keys.is_empty()).then(|| {
        ask(format!(
            "{} searches {}, which holds private keys by their content: {}; the search may read them",
            folder.what,
            folder.shown(),
            named_files(&keys)
        ))
    });
    let linked: Vec<String> = linked
        .into_values()
        .filter(|(found, names)| (found.len() as u64) < *names)
        .flat_map(|(found, _)| found.into_values())
        .collect();
    let linked = (!linked.is_empty()).then(|| {
        ask(format!(
            "{} searches {}, which holds files with other names (hard links): {}; one may be a protected file (a secret, `.git/config`) under a name no rule protects, and the search may read it",
            folder.what,
            folder.shown(),
            named_files(&linked)
        ))
    });
    protected
        .into_iter()
        .map(|(name, (decision, reason, mut files))| {
            // Named in order, whatever order the folders list them in.
            files.sort_unstable();
            let verb = if decision == Decision::Deny {
                "denies"
            } else {
                "asks before"
            };
            let reason = if reason.is_empty() {
                String::new()
            } else {
                format!(" ({reason})")
            };
            let them = if files.len() == 1 { "it" } else { "them" };
            let (decided, reads) = if walk.reads_all && decision == Decision::Deny {
                (Decision::Deny, "reads")
            } else {
                (Decision::Ask, "may read")
            };
            (
                decided,
                format!(
                    "{} searches {}, which holds files the rule `{name}` {verb} reading{reason}: {}; the search {reads} {them}",
                    folder.what,
                    folder.shown(),
                    named_files(&files)
                ),
            )
        })
        .chain(credentials)
        .chain(keys)
        .chain(linked)
        .collect()
}

/// How a walk for links below a folder goes (see [`linked_folders`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LinkWalk {
    /// Through the links it meets, as a listing that follows them does (`find -L`): every
    /// link below, at any depth.
    Following,
    /// Past the links it meets, leaving out what ignore files list and `.git`, as the
    /// agents' glob tools walk `**` (node-glob lists a linked folder's entries but does not
    /// walk it).
    Past,
}

/// The folders that links below `folder` lead to (see [`LinkWalk`]): each link to a folder,
/// with the real folder it leads to (a loop is walked once). `Err` when the walk meets more
/// than [`MAX_ENTRIES`] entries.
pub(crate) fn linked_folders(
    folder: &Path,
    walk: LinkWalk,
) -> Result<Vec<(PathBuf, PathBuf)>, String> {
    let mut builder = WalkBuilder::new(folder);
    let past = walk == LinkWalk::Past;
    builder
        .standard_filters(false)
        .hidden(false)
        .parents(past)
        .ignore(past)
        .git_ignore(past)
        .git_exclude(past)
        .follow_links(!past);
    // The ignore files the walk reads (those of the folders above too) must be regular
    // files, and not too large to read (see [`odd_ignore_file`]).
    let ignore_files: &'static [&'static str] = if past {
        &[".gitignore", ".ignore"]
    } else {
        &[]
    };
    let read = Arc::new(AtomicU64::new(0));
    let odd = |(path, why): (PathBuf, &str)| format!("`{}`, which {why}", path.display());
    if let Some(found) = folder
        .ancestors()
        .take(64)
        .find_map(|dir| odd_ignore_file(dir, ignore_files, &read))
    {
        return Err(odd(found));
    }
    // (The agents' glob tools leave git's own folder out.)
    let odd_below = refuse_odd_ignore_files(&mut builder, ignore_files, read, past);
    let mut linked = Vec::new();
    for (entries, entry) in builder.build().flatten().enumerate() {
        if entries >= MAX_ENTRIES {
            return Err(format!(
                "more than {MAX_ENTRIES} entries, too many to look through for links"
            ));
        }
        if !disk::walked(1) {
            return Err(disk::walked_too_much());
        }
        let to_folder = if past {
            entry.path_is_symlink() && disk::is_dir(entry.path())
        } else {
            entry.path_is_symlink() && entry.file_type().is_some_and(|t| t.is_dir())
        };
        if entry.depth() > 0
            && to_folder
            && let Ok(real) = disk::canonicalize(entry.path())
        {
            linked.push((entry.into_path(), real));
        }
    }
    match odd_below.get() {
        Some(found) => Err(odd(found.clone())),
        None => Ok(linked),
    }
}

/// Makes `builder`'s walk leave out, below its folder, `.git` when `skip_git`, and every
/// folder whose ignore files [`odd_ignore_file`] refuses (counting their bytes in `read`);
/// the first refused is kept in what it returns, for the walk to say why it stopped.
fn refuse_odd_ignore_files(
    builder: &mut WalkBuilder,
    names: &'static [&'static str],
    read: Arc<AtomicU64>,
    skip_git: bool,
) -> Arc<OnceLock<(PathBuf, &'static str)>> {
    let odd_below: Arc<OnceLock<(PathBuf, &'static str)>> = Arc::default();
    let found = Arc::clone(&odd_below);
    builder.filter_entry(move |entry| {
        if skip_git && entry.depth() > 0 && entry.file_name() == ".git" {
            return false;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        match is_dir
            .then(|| odd_ignore_file(entry.path(), names, &read))
            .flatten()
        {
            Some(odd) => {
                let _ = found.set(odd);
                false
            }
            None => true,
        }
    });
    odd_below
}

/// The most bytes of ignore files one walk reads, all together: a planted `.gitignore` of
/// 300 000 globs took seconds and gigabytes to compile, for every search of the folder.
const MAX_IGNORE_BYTES: u64 = 1 << 20;

/// The ignore file of the folder `dir` (one of `names`) that a walk must not read, and why:
/// one that is not a regular file (a FIFO would block the walk for ever, a device would be
/// read), or one that brings the bytes of ignore files the walk reads (`read`, counted
/// here) past [`MAX_IGNORE_BYTES`].
fn odd_ignore_file(
    dir: &Path,
    names: &[&str],
    read: &AtomicU64,
) -> Option<(PathBuf, &'static str)> {
    for name in names {
        let path = dir.join(name);
        let Ok(meta) = disk::metadata(&path) else {
            continue;
        };
        if !meta.is_file() {
            return Some((path, "is not a regular file (a FIFO or a device)"));
        }
        let total = read.fetch_add(meta.len(), Ordering::Relaxed) + meta.len();
        if total > MAX_IGNORE_BYTES {
            return Some((
                path,
                "brings the ignore files the walk reads past 1 MiB, more than can be read in time",
            ));
        }
    }
    None
}

fn ask(message: String) -> Finding {
    (Decision::Ask, message)
}

/// The files the repository of `folder` tracks at or below it: each file's path and its path
/// relative to the folder. `Ok(None)` outside a repository; `Err` the finding that asks when
/// they cannot be told or are too many to judge.
fn tracked_below(folder: Below<'_>) -> Result<Option<Vec<(PathBuf, String)>>, Finding> {
    let tracked = git_index::tracked_files(Path::new(folder.real)).map_err(|why| {
        ask(format!(
            "{} searches {}, whose repository's tracked files cannot be told: {why}",
            folder.what,
            folder.shown()
        ))
    })?;
    let Some(tracked) = tracked else {
        return Ok(None);
    };
    if tracked.paths.len() > git_index::MAX_TRACKED {
        return Err(ask(too_many(folder)));
    }
    let below = tracked
        .paths
        .iter()
        .map(|path| tracked.root.join(path))
        .filter_map(|path| {
            let relative = path
                .strip_prefix(folder.real)
                .ok()?
                .to_string_lossy()
                .into_owned();
            Some((path, relative))
        })
        .collect();
    Ok(Some(below))
}

/// The first few of `files`, quoted, and how many more there are: `` `a`, `b`, `c`, 2 more ``.
pub(crate) fn named_files(files: &[String]) -> String {
    let mut named: Vec<String> = files
        .iter()
        .take(NAMED_FILES)
        .map(|file| format!("`{file}`"))
        .collect();
    if files.len() > NAMED_FILES {
        named.push(format!("{} more", files.len() - NAMED_FILES));
    }
    named.join(", ")
}

/// Why a search of `folder` asks when it holds too many entries to check.
fn too_many(folder: Below<'_>) -> String {
    format!(
        "{} searches {}, which has more than {MAX_ENTRIES} entries below it: too many to check for files the rules protect",
        folder.what,
        folder.shown()
    )
}

/// A searched folder.
#[derive(Clone, Copy)]
pub(crate) struct Below<'a> {
    /// Its written location, which the files below it are named by.
    pub written: &'a NormalisedPath,
    /// Its real location (links resolved), which is walked.
    pub real: &'a str,
    /// The search, for reasons (`` `rg KEY` ``, `` `Grep` ``).
    pub what: &'a str,
}

impl<'a> Below<'a> {
    /// The folder at `location`, searched by `what`; `None` when where it leads cannot be
    /// told.
    pub fn of(location: &'a Location, what: &'a str) -> Option<Self> {
        Some(Self {
            written: location.at(Side::Written)?,
            real: location.at(Side::Resolved)?.absolute(),
            what,
        })
    }

    /// The folder as reasons name it: workspace-relative, `.` for the root, else from `~`
    /// or absolute.
    pub(crate) fn shown(&self) -> String {
        let written = self.written;
        let shown = match (written.relative(), written.workspace_side(), written.home()) {
            (Some(relative), _, _) => relative,
            (None, WorkspaceSide::Inside, _) => ".",
            (None, WorkspaceSide::Outside, Some(home)) => home,
            (None, WorkspaceSide::Outside, None) => written.absolute(),
        };
        format!("`{shown}`")
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{Pathspec, split_glob};
    use crate::policy::shell::wildcard::widened;

    const GLOB: [char; 4] = ['*', '?', '[', '{'];

    proptest! {
        /// The folder holds no glob character, the glob starts at a component that holds
        /// one, and the two make the path (widened) again.
        #[test]
        fn a_split_path_joins_again(path in "/?([a-z.]{1,3}[*?{\\[]?/){0,4}[a-z*?.]{0,3}") {
            let (folder, glob) = split_glob(&path);
            let path = widened(&path);
            match glob {
                None => {
                    prop_assert!(!path.contains(GLOB));
                    prop_assert_eq!(folder, path);
                }
                Some(glob) => {
                    prop_assert!(!folder.contains(GLOB));
                    let first = glob.split('/').next().unwrap_or_default();
                    prop_assert!(first.contains(GLOB));
                    let joined = match folder.as_str() {
                        // `*.md` and `./*.md` alike.
                        "." if !path.starts_with("./") => glob.clone(),
                        "/" => format!("/{glob}"),
                        _ => format!("{folder}/{glob}"),
                    };
                    prop_assert_eq!(joined, path);
                }
            }
        }
    }

    /// Which files of a tree a pathspec matches, as `git grep --untracked -l KEY -- SPEC`
    /// (git 2.47) listed them (run at the tree's top, and in `src` for the last rows).
    #[test]
    fn pathspecs_match_what_git_grep_reads() {
        let files = ["src/sub/.env", "src/a.rs", "top.rs", ".env"];
        for (spec, matched) in [
            ("s?c", &[][..]),
            ("sr*", &["src/sub/.env", "src/a.rs"][..]),
            ("*.rs", &["src/a.rs", "top.rs"]),
            ("src", &["src/sub/.env", "src/a.rs"]),
            ("src/", &["src/sub/.env", "src/a.rs"]),
            (".", &files),
            ("src/..", &files),
            ("*env", &["src/sub/.env", ".env"]),
            ("s*env", &["src/sub/.env"]),
            ("src/s?b", &[]),
            ("src/*", &["src/sub/.env", "src/a.rs"]),
            ("*/a.rs", &["src/a.rs"]),
            ("src\\/a.rs", &["src/a.rs"]),
            ("**/.env", &["src/sub/.env"]),
            ("a.rs", &[]),
        ] {
            let pathspec = Pathspec::new(spec).unwrap();
            let got: Vec<&str> = files
                .iter()
                .copied()
                .filter(|file| pathspec.matches(file))
                .collect();
            assert_eq!(got, matched, "{spec}");
        }
        for spec in [
            ":/",
            ":(icase).ENV",
            ":!*.rs",
            "../x",
            "src/../../x",
            "[[=a=]]",
        ] {
            assert!(Pathspec::new(spec).is_err(), "{spec}");
        }
    }

    #[test]
    fn a_path_splits_at_its_first_glob() {
        for (path, folder, glob) in [
            ("src", "src", None),
            ("src/**/*.ts", "src", Some("**/*.ts")),
            ("*.md", ".", Some("*.md")),
            ("/etc/*/x", "/etc", Some("*/x")),
            ("/*", "/", Some("*")),
            ("a/b{c,d}/e", "a", Some("b{c,d}/e")),
            ("~/.ssh/id_*", "~/.ssh", Some("id_*")),
        ] {
            assert_eq!(
                split_glob(path),
                (folder.to_owned(), glob.map(str::to_owned)),
                "{path}"
            );
        }
    }
}
