//! Deciding a command line part by part.
//!
//! A call whose tool has rules reading a command line (`shell` or `read_only` matchers) is
//! decided per simple command: each command of the line is decided by the rules as if it
//! were the whole line, and so are the files it reads and writes. The line is then
//!
//! - **denied** when any part is denied,
//! - **allowed** when every part is allowed (by any allow rule: `git diff | head -50` is
//!   allowed when one rule allows `git diff *` and another `head *`),
//! - **asked** otherwise,
//!
//! and the decision lists the reasons of each part. What cannot be known is asked with its
//! own reason, never decided by an unrelated rule: a line that does not parse, a command
//! chosen at run time, an expression bash evaluates (`(( ))`, `[[ ]]`), a file operand whose
//! value is only known at run time.
//!
//! # Files
//! The file operands of a command (by the command table's roles), its input redirections
//! (`< file`) and its output redirections (`>`, `>>`) are decided as calls of the table's
//! file tools (`Read` and `Write`, with the absolute path in `file_path`), against the same
//! rules that judge those tools: one definition of a secret and of the workspace. Only what
//! a rule says counts (a deny or an ask); the file tool's default does not. Words are
//! expanded as bash would: `~`, `$HOME`, `$PWD`, braces, and globs against the file system
//! (a glob that matches nothing stays as written, as in bash). `cd DIR` earlier in the line
//! adds `DIR` to the folders a relative path is taken against (a path is judged in each), and
//! after a `cd` to a folder that cannot be known, relative paths are asked.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use regex::Regex;
use serde_json::json;

use super::commands::{Analysed, CommandFacts, EffectFrom};
use super::content;
use super::disk;
use super::git_index;
use super::matcher::ParseCache;
use super::path::{Location, MatchContext, Side, lexical, listed, locate};
use super::pattern::CommandKeys;
use super::rule::{CallFacts, PartOutcome, RuleDecision, RuleReason};
use super::rules::{LinePart, RuleSet};
use super::rust_modules;
use super::search::{Below, Finding, LinkWalk, Reader, Walk, judge_below, named_files, split_glob};
use super::shell::wildcard::{
    MAX_EXPANSIONS, Wildcard, escape_glob, expand_braces, has_glob, readings, unescape_glob,
};
use super::shell::{
    Found, InputFrom, Part, Quoting, RedirectEffect, Role as ShellRole, Script, SimpleCommand,
    Word, WordKind, name_char, name_length, split_word, unquoted_expansions,
};
use crate::model::command::{Effect, Role, SearchSkip};
use crate::model::resolved::ResolvedConcurrency;
use crate::model::rule::WorkspaceSide;
use crate::model::{Decision, ToolName};

/// How many folder entries a glob may read.
const MAX_GLOB_ENTRIES: usize = 10_000;
/// Compiled glob components kept per thread (see [`with_component_glob`]).
const CACHED_GLOBS: usize = 64;

/// A tool whose rules judge the files a command line reads or writes.
#[derive(Clone, Copy, Debug)]
pub struct FileTool<'a> {
    /// The tool.
    pub tool: &'a ToolName,
    /// Its contract flags in the call's modes.
    pub flags: &'a ResolvedConcurrency,
}

/// The file tools of the command table, as far as the policy set defines them.
#[derive(Clone, Copy, Debug, Default)]
pub struct FileTools<'a> {
    /// Judges files read.
    pub read: Option<FileTool<'a>>,
    /// Judges files written.
    pub write: Option<FileTool<'a>>,
    /// Judges folders searched with everything below them.
    pub search: Option<FileTool<'a>>,
    /// Judges folders listed with everything below them.
    pub list: Option<FileTool<'a>>,
}

/// Whether a file is read, written, searched or listed with everything below it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    Read,
    Write,
    Search,
    List,
}

impl Access {
    fn verb(self) -> &'static str {
        match self {
            Access::Read => "reads",
            Access::Write => "writes",
            Access::Search => "searches",
            Access::List => "lists",
        }
    }
}

impl RuleSet {
    /// Decides a call: the matching rules of the highest precedence level, else `default`.
    /// A call with a command line that the tool's rules read is decided part by part (see
    /// the module docs); `files` are the tools that judge the files such a line reads and
    /// writes. Each command line is parsed once, however many `shell` matchers judge it.
    pub fn decide(
        &self,
        call: &CallFacts<'_>,
        ctx: &MatchContext,
        default: Decision,
        files: &FileTools<'_>,
    ) -> RuleDecision {
        disk::recorded(|| self.decide_recorded(call, ctx, default, files))
    }

    /// [`RuleSet::decide`], with the file system's answers recorded.
    fn decide_recorded(
        &self,
        call: &CallFacts<'_>,
        ctx: &MatchContext,
        default: Decision,
        files: &FileTools<'_>,
    ) -> RuleDecision {
        if let Some(line) = self.command_line(call) {
            return decide_line(self, call, ctx, default, files, line);
        }
        let mut cache = ParseCache::with_table(Arc::clone(self.commands()));
        let whole = self.decide_whole(call, ctx, default, &mut cache, None);
        // A search the rules allow still asks if it may read a file they protect, and a
        // read of a file holding a secret its name does not tell (a git config with a
        // credential, a private key).
        let below = if whole.decision == Decision::Allow {
            let mut below = search_call_below(self, call, ctx, files);
            // Where the file the call names lies, as the rules located it.
            let real = call
                .input
                .get("file_path")
                .and_then(serde_json::Value::as_str)
                .and_then(|path| cache.path(path, ctx))
                .and_then(|location| location.at(Side::Resolved))
                .map(|at| at.absolute().to_owned());
            below.extend(list_call_through_links(self, call, ctx, files));
            if let Some(real) = &real {
                below.extend(
                    read_call_of_secrets(call, ctx, files, real)
                        .map(|message| (Decision::Ask, message)),
                );
                below.extend(
                    file_call_of_linked(call, real).map(|message| (Decision::Ask, message)),
                );
            }
            below
        } else {
            Vec::new()
        };
        if below.is_empty() {
            return RuleDecision {
                decision: whole.decision,
                reasons: whole.reasons,
            };
        }
        combine(vec![whole, PartOutcome::findings(None, below)])
    }
}

/// The most folder entries a call of the list tool has looked through for links.
const MAX_LISTED_THROUGH: usize = 10_000;

/// What a call of the list tool (`Glob`) lists through links to folders its pattern reaches
/// below the folder it lists: the glob libraries agents use (node-glob, as Claude Code and
/// Gemini CLI call it, case folded) match a link to a folder as they match a folder, and
/// list its entries (`node_modules/*/*/*` listed the names below `~/.aws` through a link
/// `node_modules/foo/cfg`; `./**/*` through a link anywhere below, `**` walking past links,
/// not through them). Each such link is judged as a call of the list tool on where it leads,
/// with the rest of the pattern. The pattern's components are matched one folder at a time,
/// without case; one that the glob crate does not read as node-glob does (an extglob
/// `@(…)`, a `\` escape) matches every name. A walk that meets more than
/// [`MAX_LISTED_THROUGH`] entries (or, for `**`, more than the search walk's, ignore files
/// leaving out what they list) asks.
fn list_call_through_links(
    set: &RuleSet,
    call: &CallFacts<'_>,
    ctx: &MatchContext,
    files: &FileTools<'_>,
) -> Vec<Finding> {
    let Some(list) = files.list.filter(|list| list.tool == call.tool) else {
        return Vec::new();
    };
    let text = |field: &str| call.input.get(field).and_then(serde_json::Value::as_str);
    let Some(pattern) = text("pattern") else {
        return Vec::new();
    };
    let path = text("path").filter(|p| !p.is_empty()).unwrap_or(".");
    let start = if pattern.starts_with('/') { "/" } else { path };
    let Some(Location::Known { written, resolved }) = locate(start, ctx) else {
        return Vec::new();
    };
    let components: Vec<&str> = pattern
        .split('/')
        .filter(|c| !matches!(*c, "" | "."))
        .collect();
    let too_many = || {
        vec![(
            Decision::Ask,
            format!(
                "`{}` lists `{pattern}`, which reaches more than {MAX_LISTED_THROUGH} entries: too many to find the links it goes through",
                call.tool
            ),
        )]
    };
    let mut folders = vec![resolved.unwrap_or(written).absolute().to_owned()];
    let mut seen = 0usize;
    // Each link to a folder the pattern reaches before its last component, with the rest.
    let mut links: Vec<(String, String, &[&str])> = Vec::new();
    for (at, &component) in components.iter().enumerate() {
        let rest = &components[at + 1..];
        if rest.is_empty() {
            break;
        }
        if component == ".." {
            folders = folders
                .iter()
                .map(|folder| lexical(&format!("{folder}/..")))
                .collect();
            continue;
        }
        if component == "**" {
            for folder in &folders {
                match super::search::linked_folders(Path::new(folder), LinkWalk::Past) {
                    Ok(found) => links.extend(found.into_iter().map(|(link, real)| {
                        let (link, real) = (link.to_string_lossy(), real.to_string_lossy());
                        (link.into_owned(), real.into_owned(), rest)
                    })),
                    Err(why) => {
                        return vec![(
                            Decision::Ask,
                            format!(
                                "`{}` lists `{pattern}`, and looking through `{folder}` for the links its `**` lists met {why}",
                                call.tool
                            ),
                        )];
                    }
                }
            }
            break;
        }
        let matches = name_matcher(component);
        let mut next = Vec::new();
        for folder in &folders {
            let Ok(entries) = disk::list(folder, MAX_LISTED_THROUGH + 1) else {
                continue;
            };
            seen += entries.len();
            if seen > MAX_LISTED_THROUGH {
                return too_many();
            }
            for entry in entries.iter() {
                let name = entry.name.to_string_lossy();
                if !matches(&name) {
                    continue;
                }
                let below = format!("{}/{name}", folder.trim_end_matches('/'));
                if entry.is_dir {
                    next.push(below);
                } else if disk::symlink_metadata(&below).is_ok_and(|m| m.is_symlink())
                    && disk::is_dir(&below)
                    && let Ok(real) = disk::canonicalize(&below)
                {
                    links.push((below, real.to_string_lossy().into_owned(), rest));
                }
            }
        }
        folders = next;
    }
    let mut findings = Vec::new();
    for (link, real, rest) in links {
        let mut cache = ParseCache::with_table(Arc::clone(set.commands()));
        let listed = decide_listing(set, ctx, call, list, (&real, &rest.join("/")), &mut cache);
        if listed.by_rule
            && listed.decision != Decision::Allow
            && let Some(rule) = listed.reasons.iter().find_map(RuleReason::rule)
        {
            let verb = if listed.decision == Decision::Deny {
                "denies"
            } else {
                "asks before"
            };
            findings.push((
                listed.decision,
                format!(
                    "`{}` lists `{pattern}`, which goes through the link `{link}` to `{real}`: `{}` {verb} listing there",
                    call.tool, rule.name
                ),
            ));
        }
    }
    findings
}

/// Whether a name matches one component of a list tool's pattern, as node-glob matches it
/// with `nocase` (see [`list_call_through_links`]): every name for a component the glob
/// crate does not read so.
fn name_matcher(component: &str) -> Box<dyn Fn(&str) -> bool> {
    let extglob = ["@(", "+(", "!(", "?(", "*("]
        .iter()
        .any(|open| component.contains(open));
    if extglob || component.contains('\\') {
        return Box::new(|_| true);
    }
    match globset::GlobBuilder::new(component)
        .literal_separator(true)
        .case_insensitive(true)
        .build()
    {
        Ok(glob) => {
            let matcher = glob.compile_matcher();
            Box::new(move |name| matcher.is_match(name))
        }
        Err(_) => Box::new(|_| true),
    }
}

/// Why a call of the read tool reads a secret its file's name does not tell (see
/// [`secret_by_content`]).
fn read_call_of_secrets(
    call: &CallFacts<'_>,
    ctx: &MatchContext,
    files: &FileTools<'_>,
    real: &str,
) -> Option<String> {
    let read = files.read.filter(|read| read.tool == call.tool)?;
    let holds = secret_by_content(real, ctx)?;
    Some(format!("`{}` reads `{real}`, which {holds}", read.tool))
}

/// Why a call that names a file (`file_path`: `Read`, `Write`, `Edit`, …), lying at `real`,
/// reads or writes one with other names (see
/// [`content::other_names`](super::content::other_names)).
fn file_call_of_linked(call: &CallFacts<'_>, real: &str) -> Option<String> {
    let verb = if call.flags.read_only {
        "reads"
    } else {
        "writes"
    };
    let count = super::content::other_names(Path::new(real))?;
    Some(format!(
        "`{}` {verb} `{real}`, which {}",
        call.tool,
        super::content::other_names_reason(count)
    ))
}

/// What secret the file `path` holds by its content, where its name may not tell: a git
/// config holding a credential (see [`git_index::is_config_with_credentials`]; also a file
/// of any name that git reads by the repository's or the user's config, a config an
/// `include.path` names: `conf/remote.inc`, `~/.gitcreds`) or a private key (see
/// [`content::private_key`]).
pub(crate) fn secret_by_content(path: &str, ctx: &MatchContext) -> Option<String> {
    if git_index::config_file_with_credentials(Path::new(path), || ctx.runs_by_git(path)) {
        return Some(
            "holds a credential (a token or password in a URL or a setting, or an `extraheader`)"
                .to_owned(),
        );
    }
    content::private_key(Path::new(path)).map(|armour| format!("holds a private key (`{armour}`)"))
}

/// What a call of the search tool may read below the folder it searches (its `path`, else
/// the workspace root), limited by its `glob` (see [`search`](super::search)). A path with
/// a backslash is judged as each way an agent's tool may read it ([`readings`]).
fn search_call_below(
    set: &RuleSet,
    call: &CallFacts<'_>,
    ctx: &MatchContext,
    files: &FileTools<'_>,
) -> Vec<Finding> {
    let (Some(search), Some(read)) = (files.search, files.read) else {
        return Vec::new();
    };
    if search.tool != call.tool {
        return Vec::new();
    }
    // Agents' search tools pass the pattern to ripgrep, `git grep` or `grep` as a word of
    // its own, some without `--` or `-e` before it: a pattern that starts with `-` is then
    // an option (`--pre=PROGRAM` runs a program on every file, `-uu` searches ignored and
    // hidden files, and `git grep` failing on `--regexp=KEY` makes Gemini CLI's search fall
    // back to `grep -r`, which skips no ignored file).
    if let Some(pattern) = call
        .input
        .get("pattern")
        .and_then(serde_json::Value::as_str)
        .filter(|pattern| pattern.starts_with('-'))
    {
        return vec![(
            Decision::Ask,
            format!(
                "`{}`'s pattern `{pattern}` starts with `-`: a search tool that passes it to `rg`, `git grep` or `grep` as a word of its own runs it as an option (`--pre=PROGRAM`, `-uu`, or a failing `git grep` that falls back to `grep -r` over ignored files)",
                call.tool
            ),
        )];
    }
    let path = call
        .input
        .get("path")
        .and_then(serde_json::Value::as_str)
        .filter(|p| !p.is_empty())
        .unwrap_or(".");
    readings(path)
        .iter()
        .flat_map(|path| search_path_below(set, call, ctx, read, path))
        .collect()
}

/// A path split by [`split_glob`] whose glob climbs with `..` (`src/**/../.env`, where
/// `**` may match no folder and `..` then leaves `src`: node-glob, which Gemini CLI's
/// read-many tool uses, reads `.env`; also a component that matches `..`, `.[.]`): the files it matches lie below the folder as many
/// levels up as the glob climbs, all of which are searched.
fn climbed((folder, glob): (String, Option<String>)) -> (String, Option<String>) {
    let up = glob.as_deref().map_or(0, |glob| {
        glob.split('/')
            .filter(|c| super::shell::wildcard::may_name_parent(c))
            .count()
    });
    if up == 0 {
        return (folder, glob);
    }
    (format!("{folder}{}", "/..".repeat(up)), None)
}

/// [`search_call_below`] of one reading of its path.
fn search_path_below(
    set: &RuleSet,
    call: &CallFacts<'_>,
    ctx: &MatchContext,
    read: FileTool<'_>,
    path: &str,
) -> Vec<Finding> {
    let text = |field: &str| call.input.get(field).and_then(serde_json::Value::as_str);
    let known = |path: &str| locate(path, ctx).filter(|l| matches!(l, Location::Known { .. }));
    // A glob in a path that does not exist as written (`src/**/*.ts`, as an agent's
    // read-many tool takes; `app/[id]` may be a folder) searches the folder before it for
    // the files the glob matches.
    let literal = known(path);
    let exists = literal
        .as_ref()
        .and_then(|l| l.at(Side::Resolved))
        .is_some_and(|real| disk::exists(real.absolute()));
    let (locations, path_glob) = match literal {
        Some(literal) if exists => (vec![literal], None),
        _ => {
            let (folder, glob) = climbed(split_glob(path));
            // A folder missing as written is read where names differ only in case (Gemini
            // CLI's read-many tool matches `.ENV` and `CONFIG/*` regardless of case).
            let Some(written) = known(&folder) else {
                return Vec::new();
            };
            let variants = match written
                .at(Side::Written)
                .map(|at| same_but_case(at.absolute()))
            {
                Some(Ok(variants)) => variants,
                Some(Err(why)) => {
                    return vec![(
                        Decision::Ask,
                        format!("`{}` searches `{path}`: {why}", call.tool),
                    )];
                }
                None => Vec::new(),
            };
            let locations = variants
                .iter()
                .filter_map(|variant| known(variant))
                .collect();
            (locations, glob)
        }
    };
    let what = format!("`{}`", call.tool);
    let globs: Vec<&str> = path_glob
        .as_deref()
        .into_iter()
        .chain(text("glob"))
        .collect();
    // `no_ignore` (ripgrep's `--no-ignore`, Gemini CLI's search) and `respect_git_ignore:
    // false` (Gemini CLI's read-many tool) bring ignored files back.
    let mut skips = set.commands().search_skips.clone();
    let flag = |field: &str| call.input.get(field).and_then(serde_json::Value::as_bool);
    if flag("no_ignore") == Some(true) || flag("respect_git_ignore") == Some(false) {
        skips.retain(|skip| *skip != SearchSkip::Ignored);
    }
    // A search that may run `git grep --untracked -- GLOB` instead of ripgrep (Gemini CLI's
    // and Qwen Code's, without ripgrep) reads what git tracks, ignored or not, and reads
    // its glob as a pathspec too.
    let git_grep = text("searcher") == Some("git_grep");
    if git_grep {
        for skip in &mut skips {
            if *skip == SearchSkip::Ignored {
                *skip = SearchSkip::GitIgnored;
            }
        }
    }
    let reader = Reader {
        tool: read.tool,
        flags: read.flags,
        modes: call.modes,
    };
    let mut messages = Vec::new();
    for location in &locations {
        let Some(folder) = Below::of(location, &what) else {
            continue;
        };
        let mut walk = Walk::new(
            &skips,
            globs.iter().copied(),
            &[folder.real, ctx.workspace_root()],
        );
        walk.reads_all = prints_every_line(call);
        if git_grep {
            walk = match walk.with_pathspecs(text("glob")) {
                Ok(walk) => walk,
                Err(why) => {
                    messages.push((
                        Decision::Ask,
                        format!("{what} searches {}: {why}", folder.shown()),
                    ));
                    continue;
                }
            };
        }
        messages.extend(judge_below(set, ctx, reader, folder, &walk));
    }
    messages
}

/// Whether a call of the search tool prints every line of the files it searches: it prints
/// lines (`output_mode: content`), and its pattern matches any line (`.`, `^`, `.*`, an
/// empty one). Other patterns that match every line are not recognised: such a search asks.
fn prints_every_line(call: &CallFacts<'_>) -> bool {
    let text = |field: &str| call.input.get(field).and_then(serde_json::Value::as_str);
    text("output_mode") == Some("content")
        && matches!(
            text("pattern").map(str::trim),
            Some("" | "." | "^" | "$" | ".*" | "^.*" | ".*$" | "^.*$" | ".+")
        )
}

/// How many paths [`same_but_case`] judges at most.
const CASE_VARIANTS: usize = 16;

/// The paths that exist whose names differ from those of `absolute` (which does not exist
/// as written) only in ASCII case: `/w/.ENV` → `/w/.env`. Each missing name is looked up in
/// its folder's listing. `Err` when a folder has more entries than a glob may read
/// ([`MAX_GLOB_ENTRIES`]) or the path names more than [`CASE_VARIANTS`] paths: what it
/// reads cannot all be judged.
fn same_but_case(absolute: &str) -> Result<Vec<String>, String> {
    let mut found = vec![String::new()];
    for name in absolute.split('/').filter(|name| !name.is_empty()) {
        let mut next = Vec::new();
        for base in &found {
            let folder = if base.is_empty() { "/" } else { base.as_str() };
            let exact = format!("{base}/{name}");
            if disk::symlink_metadata(&exact).is_ok() {
                next.push(exact);
                continue;
            }
            let Ok(entries) = std::fs::read_dir(folder) else {
                continue;
            };
            for (read, entry) in entries.flatten().enumerate() {
                if read >= MAX_GLOB_ENTRIES {
                    return Err(format!(
                        "`{folder}` has more than {MAX_GLOB_ENTRIES} entries to look for `{name}` in any case, so what it reads cannot be judged"
                    ));
                }
                if let Ok(entry) = entry.file_name().into_string()
                    && entry.eq_ignore_ascii_case(name)
                {
                    next.push(format!("{base}/{entry}"));
                }
            }
        }
        if next.len() > CASE_VARIANTS {
            return Err(format!(
                "more than {CASE_VARIANTS} paths differ from it only in case, so what it reads cannot all be judged"
            ));
        }
        found = next;
        if found.is_empty() {
            break;
        }
    }
    Ok(found)
}

/// Decides a call by the parts of its command line (see the module docs).
fn decide_line(
    set: &RuleSet,
    call: &CallFacts<'_>,
    ctx: &MatchContext,
    default: Decision,
    files: &FileTools<'_>,
    line: &str,
) -> RuleDecision {
    let table = Arc::clone(set.commands());
    let Analysed { script, facts } = Analysed::new(line, &table);
    let mut cache = ParseCache::with_table(Arc::clone(&table));
    let mut script = match script {
        Ok(script) => script,
        Err(err) => {
            // The rules that do not read the line still decide (a regex, plan mode); the
            // parse failure asks in place of the default.
            cache.seed(line, Arc::new(Analysed::of(Ok(Script::default()), &table)));
            let whole = set.decide_whole(call, ctx, default, &mut cache, None);
            let failure = PartOutcome::analysis(
                None,
                format!("the command could not be parsed: {}", parse_message(&err)),
            );
            let parts = if whole.by_rule {
                vec![whole, failure]
            } else {
                vec![failure]
            };
            return combine(parts);
        }
    };
    let home = ctx.home();
    let mut folders = Folders::new(ctx.workspace_root(), ctx.folder());
    let mut parts = Vec::new();
    // The files of every part are judged as calls of the file tools, which share where each
    // path leads.
    let mut file_cache = ParseCache::with_table(Arc::clone(&table));
    let single = script.commands.len() == 1;
    // A line that may change files (it holds a command that is not read-only) may change
    // what a search of it leaves out (`echo > .gitignore; rg KEY`): its searches are judged
    // as reading everything.
    let changes_files = facts.iter().any(|facts| !facts.read_only);
    let dotfiles = if turns_on_dotglob(line, &script) {
        Dotfiles::Matched
    } else {
        Dotfiles::Explicit
    };
    // The start points of the last `find`: what `{}` stands for in the command it runs.
    let mut find_starts: Option<Vec<Word>> = None;
    // Per command, in a line with a program that may make links: the locations it may make
    // links at, and those it reads or writes.
    let may_link = facts.iter().any(|facts| {
        facts.writes_links || matches!(facts.program.as_deref(), Some("ln" | "cp" | "mv" | "rsync"))
    });
    let mut linked: Vec<Vec<String>> = Vec::new();
    let mut reached: Vec<Vec<String>> = Vec::new();
    // Each command is judged as a line of its own.
    let alone: Vec<Arc<Analysed>> = std::mem::take(&mut script.commands)
        .into_iter()
        .zip(facts)
        .map(|(command, facts)| {
            let script = Script {
                commands: vec![command],
                ..Script::default()
            };
            Arc::new(Analysed {
                script: Ok(script),
                facts: vec![facts],
            })
        })
        .collect();
    let commands: Vec<_> = alone.iter().map(|part| part.commands().next()).collect();
    // Per command, whether one before it may have written a file (a patch it reads), changed
    // the file system at all (`mkdir` too), or changed what its repository's index lists.
    let written = done_before(&commands, writes_content);
    let changed = done_before(&commands, may_change_files);
    let index_changed = done_before(&commands, changes_index);
    for (at, part) in alone.iter().enumerate() {
        let Some((command, facts)) = part.commands().next() else {
            continue;
        };
        let (written_before, changed_before) = (written[at], changed[at]);
        cache.seed(line, Arc::clone(part));
        let part = LinePart {
            label: (!single).then_some(command.text.as_str()),
            line,
            keys: CommandKeys::of(command, facts),
        };
        let mut outcome = set.decide_whole(call, ctx, default, &mut cache, Some(&part));
        // A wrapper is judged through the command it runs, and a command that hides what it
        // runs through its unresolved entry (below): only a deny or ask aimed at it counts.
        // A launcher's allow covers what it runs, but not an option or a script that writes
        // or runs code beyond the program (`uv run sed '1e id' x`): that needs its own allow.
        let launched_plainly = command.role == ShellRole::Launched
            && !facts
                .effects
                .iter()
                .any(|e| matches!(e.from, EffectFrom::Option(_) | EffectFrom::Content));
        let judged_elsewhere = command.role == ShellRole::TransparentWrapper
            || launched_plainly
            || script.unresolved.iter().any(|u| u.text == command.text);
        if judged_elsewhere && !(outcome.by_rule && outcome.decision != Decision::Allow) {
            outcome = PartOutcome::neutral();
        }
        folders.enter(command, facts, home);
        if runs_folder_code(facts)
            && let Some(folder) = folders.outside(ctx)
        {
            outcome.add_analysis(
                &command.text,
                format!(
                    "`{}` runs in {folder}, outside the workspace, whose configuration can run code (git's `core.fsmonitor` and hooks, package scripts, build scripts)",
                    command.text
                ),
            );
        }
        if let Some(why) = prints_secrets(command, &table) {
            outcome.add_analysis(&command.text, why);
        }
        if let Some(why) = prints_remote_credentials(facts, &folders, home) {
            outcome.add_analysis(&command.text, format!("`{}` {why}", command.text));
        }
        if let Some(why) = exports_everything(command) {
            outcome.add_analysis(&command.text, why);
        }
        if facts.program.as_deref() == Some("git") {
            if let Some(repository) = folders.bare_repository() {
                outcome.add_analysis(
                    &command.text,
                    format!(
                        "`{}` would open `{repository}` as a repository: its `config` can run code, and only `.git/` folders are kept from writes",
                        command.text
                    ),
                );
            } else if let Some(folder) = folders.without_repository()
                && (written_before || (changed_before && holds_head(folder, ctx.workspace_root())))
            {
                outcome.add_analysis(
                    &command.text,
                    format!(
                        "`{}` runs in `{folder}`, which a command before it in the line may lay out as a repository (moved, copied, linked or unpacked there): its `config` can run code",
                        command.text
                    ),
                );
            }
        }
        let found_by_find = find_starts
            .as_deref()
            .filter(|_| matches!(&command.origin, super::shell::Origin::Wrapped { wrapper } if wrapper == "find"));
        let no_index = no_index_operands(facts, &folders, home);
        judge_files(
            set,
            call,
            ctx,
            files,
            (command, no_index.as_ref().unwrap_or(facts)),
            (&SearchScope::of(facts, changes_files), found_by_find),
            &folders,
            dotfiles,
            &mut file_cache,
            &mut outcome,
        );
        judge_text_globs(
            (set, ctx, call, files),
            (command, facts),
            (&folders, dotfiles),
            &mut file_cache,
            &mut outcome,
        );
        if facts.program.as_deref() == Some("find") {
            find_starts = starting_points(command);
        }
        if facts.prints_tracked
            && let Some(read) = files.read
        {
            let judged = (set, ctx, call, read);
            let before = (changed_before, index_changed[at]);
            for message in judge_tracked(judged, (command, facts), &folders, before) {
                outcome.add_analysis(&command.text, message);
            }
        }
        if facts.follows_modules {
            judge_modules(
                (set, ctx, call, files),
                command,
                &mut file_cache,
                &mut outcome,
            );
        }
        if let Some(write) = files.write {
            let judged = (set, ctx, call, write);
            let before = (written_before, &folders, home);
            judge_patches(
                judged,
                (command, facts),
                before,
                &mut file_cache,
                &mut outcome,
            );
            judge_unpacked(
                judged,
                (command, facts),
                before,
                &mut file_cache,
                &mut outcome,
            );
        }
        if may_link {
            let made: Vec<&String> = linked.iter().flatten().collect();
            linked.push(makes_links(facts, &folders, &made));
            // A glob counts as written (`g*`: bash expands it when the link is there).
            let written = |word: &Word| match word.kind {
                WordKind::Dynamic(super::shell::Expansion::Glob) => {
                    Some(word.raw.replace(['"', '\''], ""))
                }
                _ => word.literal().map(str::to_owned),
            };
            reached.push(
                file_words(command, facts)
                    .iter()
                    .filter_map(|(_, word, _, _)| written(word))
                    .flat_map(|value| folders.resolve(&value))
                    .collect(),
            );
        }
        folders.follow(command, facts, home);
        parts.push(outcome);
    }
    // A path through a link another command of the line may make (`ln -s .git/hooks h &&
    // cp x h/`) leads where the link does, which is not known when the line is judged. (Any
    // other command: in a loop or a pipeline, one after it may run first.)
    for (at, paths) in reached.iter().enumerate() {
        let through = paths.iter().find_map(|path| {
            linked
                .iter()
                .enumerate()
                .filter(|(by, _)| *by != at)
                .find_map(|(by, links)| {
                    links
                        .iter()
                        .find(|link| passes_through(path, link))
                        .map(|link| (path, link, by))
                })
        });
        if let (Some((path, link, by)), Some(part)) = (through, parts.get_mut(at))
            && let (Some((command, _)), Some((maker, _))) = (
                alone.get(at).and_then(|p| p.commands().next()),
                alone.get(by).and_then(|p| p.commands().next()),
            )
        {
            let writes_tree = alone
                .get(by)
                .is_some_and(|maker| maker.facts.iter().any(|facts| facts.writes_links));
            let through = if writes_tree {
                format!(" in `{link}`, where")
            } else if path == link {
                ", which".to_owned()
            } else {
                format!(" through `{link}`, which")
            };
            let makes = if writes_tree {
                "may write links (a revision's, a package's)"
            } else {
                "may make a link"
            };
            part.add_analysis(
                &command.text,
                format!(
                    "`{}` reaches `{path}`{through} `{}` in the same line {makes}: where it leads is not known when the line is judged",
                    command.text, maker.text
                ),
            );
        }
    }
    // The lists of `for` loops, which the shell expands before the body runs (`for f in
    // ~/.ssh/*` lists `~/.ssh`), taken from where the line starts.
    if let Some(read) = files.read
        && !script.loop_lists.is_empty()
    {
        let start = Folders::new(ctx.workspace_root(), ctx.folder());
        let mut outcome = PartOutcome::neutral();
        for word in &script.loop_lists {
            let judged = (set, ctx, call, read);
            let part = format!("for … in {}", word.raw);
            judge_globbed_word(
                judged,
                word,
                &part,
                (&start, dotfiles),
                &mut file_cache,
                &mut outcome,
            );
        }
        if outcome.decision != Decision::Allow && !outcome.reasons.is_empty() {
            parts.push(outcome);
        }
    }
    // A glob kept in a variable is expanded where the variable is, unquoted (`x=~/.ssh/*;
    // echo $x`), and one in an array's list when the array is made (`a=(~/.ssh/*)`): the
    // folders they list are not known where they are expanded, so such a line asks.
    let mut globbed: Vec<&str> = Vec::new();
    for (command, _) in commands.iter().flatten() {
        for assignment in &command.assignments {
            let value = &assignment.value.raw;
            if !unquoted_glob_character(&without_array_keys(value)) {
                continue;
            }
            if value.starts_with('(') {
                parts.push(PartOutcome::analysis(
                    Some(&command.text),
                    format!(
                        "`{}` expands a glob into an array: the folders it lists are not judged",
                        command.text
                    ),
                ));
            } else {
                globbed.push(assignment.name.as_str());
            }
        }
    }
    let expands = |word: &Word| {
        globbed.iter().any(|name| {
            word.raw.contains(&format!("${name}")) || word.raw.contains(&format!("${{{name}"))
        })
    };
    for (command, _) in commands.iter().flatten() {
        if command.words.iter().any(expands) {
            parts.push(PartOutcome::analysis(
                Some(&command.text),
                format!(
                    "`{}` expands a variable holding a glob: the folders it lists are not judged",
                    command.text
                ),
            ));
        }
    }
    if let Some(word) = script.loop_lists.iter().find(|word| expands(word)) {
        parts.push(PartOutcome::analysis(
            None,
            format!(
                "a `for` loop over `{}` expands a variable holding a glob: the folders it lists are not judged",
                word.raw
            ),
        ));
    }
    for unresolved in &script.unresolved {
        parts.push(PartOutcome::analysis(
            Some(&unresolved.text),
            format!("`{}`: {}", unresolved.text, unresolved.reason),
        ));
    }
    for (name, setter) in &script.set_variables {
        if table.effective_env(name) {
            parts.push(PartOutcome::analysis(
                None,
                format!(
                    "{setter} sets `{name}`, which changes what later commands do (`env` in the command table)"
                ),
            ));
        }
    }
    for name in &script.variables {
        if table.secret_env(name) {
            parts.push(PartOutcome::analysis(
                None,
                format!(
                    "the line expands `${name}`, which holds a secret (`env` in the command table)"
                ),
            ));
        }
    }
    for construct in &script.constructs {
        parts.push(PartOutcome::analysis(
            Some(&construct.text),
            format!(
                "`{}`: {} can run commands hidden in variables",
                construct.text, construct.kind
            ),
        ));
    }
    if let Some(key) = line_editing_key(line) {
        // Bash reads it as a character of a word; typed into a terminal (Codex's
        // `write_stdin`), its line editor acts on it.
        parts.push(PartOutcome::analysis(
            None,
            format!(
                "the command holds the control character U+{:04X}, which a terminal's line editor acts on if the text is typed into one (`^U` erases what was typed before it, DEL the character before it): what runs may not be what the text spells",
                u32::from(key)
            ),
        ));
    }
    if parts.is_empty() {
        parts.push(PartOutcome::analysis(
            None,
            "the command line runs nothing".to_owned(),
        ));
    }
    combine(parts)
}

/// A control character of `line` a terminal's line editor acts on: any but a tab and a line
/// break, and a carriage return only where it does not end a line (`\r\n` line endings end
/// lines either way; `echo x\rcat .env` typed is two commands).
fn line_editing_key(line: &str) -> Option<char> {
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let ends_line = c == '\r' && matches!(chars.peek(), None | Some('\n'));
        if c.is_control() && !matches!(c, '\n' | '\t') && !ends_line {
            return Some(c);
        }
    }
    None
}

fn parse_message(err: &super::shell::ShellParseError) -> String {
    match err.offset {
        Some(offset) => format!("{} (at byte {offset})", err.message),
        None => err.message.clone(),
    }
}

/// The strictest part decides; the reasons of the parts that decide come first.
fn combine(parts: Vec<PartOutcome>) -> RuleDecision {
    let parts: Vec<PartOutcome> = parts.into_iter().filter(|p| !p.neutral).collect();
    let decision = parts
        .iter()
        .map(|p| p.decision)
        .max()
        .unwrap_or(Decision::Ask);
    let mut reasons: Vec<RuleReason> = Vec::new();
    for part in parts.iter().filter(|p| p.decision == decision) {
        reasons.extend(part.reasons.iter().cloned());
    }
    for part in parts.iter().filter(|p| p.decision != decision) {
        reasons.extend(part.reasons.iter().cloned());
    }
    RuleDecision { decision, reasons }
}

/// The folders relative paths may be taken against, as `cd` moves through the line.
struct Folders {
    /// The workspace root.
    root: String,
    candidates: Vec<String>,
    /// A `cd` went somewhere that cannot be known.
    lost: Option<String>,
    /// Each candidate looked up by [`Self::bare_repository`], with what was found.
    repositories: Vec<(String, Option<String>)>,
}

impl Folders {
    /// The folders of a line started in `start` (the workspace root, or a handler's `cwd`).
    fn new(root: &str, start: &str) -> Self {
        Self {
            root: root.to_owned(),
            candidates: vec![start.to_owned()],
            lost: None,
            repositories: Vec::new(),
        }
    }

    /// A folder laid out as a bare repository that git would open from one of the
    /// candidates ([`bare_repository`]); each candidate is looked up once a line.
    fn bare_repository(&mut self) -> Option<String> {
        for folder in &self.candidates {
            let found = match self.repositories.iter().find(|(f, _)| f == folder) {
                Some((_, found)) => found.clone(),
                None => {
                    let found = bare_repository(folder, &self.root);
                    self.repositories.push((folder.clone(), found.clone()));
                    found
                }
            };
            if found.is_some() {
                return found;
            }
        }
        None
    }

    /// A folder the command may run in, other than the workspace root, that holds no
    /// `.git`: git would open it as a repository if it were laid out as one.
    fn without_repository(&self) -> Option<&str> {
        self.candidates
            .iter()
            .find(|folder| {
                folder.trim_end_matches('/') != self.root.trim_end_matches('/')
                    && !disk::exists(Path::new(folder).join(".git"))
            })
            .map(String::as_str)
    }

    /// After `cd DIR` (or `pushd DIR`), relative paths are also taken in `DIR`. A `cd` is
    /// followed wherever it stands — wrapped (`command cd`), in `eval '…'`, in a script given
    /// to a shell (`bash -c 'cd ~ && …'`) or a substitution — since folders only add to where
    /// a path is judged.
    fn follow(&mut self, command: &SimpleCommand, facts: &CommandFacts, home: Option<&str>) {
        let program = match facts.program.as_deref() {
            Some(program @ ("cd" | "pushd" | "popd")) => program,
            _ => return,
        };
        // `cd -`, `popd` and `pushd` without a folder (or with `+N`/`-N`) go to a folder of
        // the shell's history or stack, which the line does not show; in zsh, `cd OLD NEW`
        // goes to the current folder with `OLD` in its path replaced by `NEW` (bash refuses
        // it).
        let target = match (program, facts.operands.first()) {
            ("popd", _) | ("pushd", None) => Err(()),
            _ if facts.operands.len() > 1 => Err(()),
            (_, None) => home.map(|h| vec![h.to_owned()]).ok_or(()),
            (_, Some(word))
                if word.literal() == Some("-")
                    || (program == "pushd"
                        && word.literal().is_some_and(|w| w.starts_with(['+', '-']))) =>
            {
                Err(())
            }
            // (A glob's hidden matches too, whether the line turns `dotglob` on or not.)
            (_, Some(word)) => word_values(word, home, &self.candidates, Dotfiles::Matched)
                .map(|values| values.into_iter().flat_map(cd_targets).collect())
                .map_err(|_| ()),
        };
        self.add(command, target);
    }

    /// A command whose option names the folder it works in (a value of role `dir`: `git -C
    /// DIR`, `env -C DIR`, `cargo -C DIR`) takes its relative paths there, and so may what
    /// it runs; so does one given a project file (role `manifest`: `cargo --manifest-path
    /// F`, pytest's test paths), in that file's folder. `cd` is followed on its own.
    fn enter(&mut self, command: &SimpleCommand, facts: &CommandFacts, home: Option<&str>) {
        if matches!(facts.program.as_deref(), Some("cd" | "pushd" | "popd")) {
            return;
        }
        for role_word in &facts.roles {
            let values = || {
                word_values(&role_word.word, home, &self.candidates, Dotfiles::Matched)
                    .map_err(|_| ())
            };
            let target = match role_word.role {
                Role::Dir => values(),
                // The folder of the project file.
                Role::Manifest => {
                    values().map(|files| files.iter().map(|f| folder_of(f)).collect())
                }
                _ => continue,
            };
            self.add(command, target);
        }
    }

    /// Adds the folders `target` names, or marks the folder unknown after `command`.
    fn add(&mut self, command: &SimpleCommand, target: Result<Vec<String>, ()>) {
        match target {
            Ok(values) => {
                let mut next = self.candidates.clone();
                for value in values {
                    for written in self.resolve(&value) {
                        // A glob names the folders it matches (`cd evil[5]` enters `evil5`),
                        // as bash expands it; one too wide to list leaves the folder unknown.
                        let Ok(folders) = expand_glob(&written, Dotfiles::Explicit) else {
                            self.lost = Some(command.text.clone());
                            continue;
                        };
                        for folder in folders {
                            if !next.contains(&folder) {
                                next.push(folder);
                            }
                        }
                    }
                }
                self.candidates = next;
            }
            Err(()) => self.lost = Some(command.text.clone()),
        }
    }

    /// A folder the command may run in that lies outside the workspace, as written or
    /// through its links (or cannot be located), or the `cd` after which the folder is not
    /// known.
    fn outside(&self, ctx: &MatchContext) -> Option<String> {
        if let Some(cd) = &self.lost {
            return Some(format!("the folder `{cd}` leads to"));
        }
        self.candidates
            .iter()
            .filter(|folder| **folder != self.root)
            .find(|folder| outside_workspace(folder, ctx))
            .map(|folder| format!("`{folder}`"))
    }

    /// `value` taken against every candidate folder.
    fn resolve(&self, value: &str) -> Vec<String> {
        if value.starts_with('/') {
            return vec![value.to_owned()];
        }
        self.candidates
            .iter()
            .map(|folder| format!("{}/{value}", folder.trim_end_matches('/')))
            .collect()
    }
}

/// The folders `cd VALUE` (a glob, as [`word_values`] gives it) may enter besides `VALUE`
/// itself, by the shell's settings that the
/// agent's environment (which toolgate's hook runs in) may hold: a relative name (not `./x`,
/// `../x`) below each folder of an exported `CDPATH`, which bash and zsh try first; and, for
/// a name that is a variable's (`cd HOME`, and in zsh `cd HOME/x`), the variable's value,
/// where bash's `cdable_vars` and zsh's `cdablevars` (options the user's shell may set, which
/// the agent's shell then copies) go when no such folder is there.
fn cd_targets(value: String) -> Vec<String> {
    let mut targets = Vec::new();
    let relative = !value.starts_with('/')
        && !matches!(value.split('/').next(), Some("." | ".."))
        && !value.is_empty();
    if relative && let Some(cd_path) = std::env::var_os("CDPATH") {
        for folder in cd_path.to_string_lossy().split(':') {
            if !folder.is_empty() && folder != "." {
                targets.push(format!(
                    "{}/{value}",
                    escape_glob(folder.trim_end_matches('/'))
                ));
            }
        }
    }
    // (zsh's `cdablevars` reads the first folder so: `cd HOME/.config` is `~HOME/.config`.)
    let (first, rest) = value.split_once('/').unwrap_or((value.as_str(), ""));
    if let Some(set) = super::shell::is_variable_name(first)
        .then(|| std::env::var_os(first))
        .flatten()
        .filter(|set| !set.is_empty())
    {
        let set = escape_glob(&set.to_string_lossy());
        targets.push(match rest {
            "" => set,
            rest => format!("{}/{rest}", set.trim_end_matches('/')),
        });
    }
    targets.insert(0, value);
    targets
}

/// The locations where the command may make a link, or put one it copies or moves (in the
/// folders it works in, lexically resolved): what `ln` creates; what `cp` writes when it
/// makes links (`-s`, `-l`, any option it may read so) or copies links as they are (`-r`,
/// `-a`, `-d`, `-P`) from a source that is or holds one; what `mv` and `rsync` write when a
/// source is or holds a link — one there now, or one a command before it in the line may
/// make (`made`).
fn makes_links(facts: &CommandFacts, folders: &Folders, made: &[&String]) -> Vec<String> {
    if facts.writes_links {
        // Anywhere in the work tree of the repository it works in.
        return folders
            .candidates
            .iter()
            .map(|folder| {
                super::git_index::work_tree(Path::new(folder)).map_or_else(
                    || folder.clone(),
                    |root| root.to_string_lossy().into_owned(),
                )
            })
            .map(|root| lexical(&root))
            .collect();
    }
    let makes_new = facts.options.iter().any(|o| {
        let name = o.canonical.as_str();
        // (In any abbreviation: `--sym`, `--lin`.)
        (name.len() > 3
            && ["--symbolic-link", "--link"]
                .iter()
                .any(|l| l.starts_with(name)))
            || (!name.starts_with("--") && name.contains(['s', 'l']))
    });
    // A source only known when it runs may be one.
    let holds_a_link = |word: &Word| {
        word.literal().is_none_or(|value| {
            folders.resolve(value).iter().any(|path| {
                holds_links(Path::new(path))
                    || made.iter().any(|link| passes_through(link, &lexical(path)))
            })
        })
    };
    let sources: &[Word] = match &facts.copies {
        Some(copies) => &copies.sources,
        None => &facts.operands,
    };
    let makes = match facts.program.as_deref() {
        Some("ln") => true,
        Some("cp") => makes_new || sources.iter().any(holds_a_link),
        Some("mv" | "rsync") => sources.iter().any(holds_a_link),
        _ => false,
    };
    if !makes {
        return Vec::new();
    }
    facts
        .roles
        .iter()
        .filter(|r| r.role == Role::Write)
        .filter_map(|r| r.word.literal())
        .flat_map(|value| folders.resolve(value))
        .map(|path| lexical(&path))
        .collect()
}

/// Whether `path` is a link or a folder holding one (up to 10 000 entries are looked at; a
/// larger folder counts as holding one).
fn holds_links(path: &Path) -> bool {
    let Ok(meta) = disk::symlink_metadata(path) else {
        return false;
    };
    if meta.file_type().is_symlink() {
        return true;
    }
    if !meta.is_dir() {
        return false;
    }
    let mut pending = vec![path.to_path_buf()];
    let mut seen = 0usize;
    while let Some(folder) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > 10_000 {
                return true;
            }
            match entry.file_type() {
                Ok(kind) if kind.is_symlink() => return true,
                Ok(kind) if kind.is_dir() => pending.push(entry.path()),
                _ => {}
            }
        }
    }
    false
}

/// Whether `path` is `location` or lies below it (both [`lexical`]).
fn below_or_at(path: &str, location: &str) -> bool {
    path.strip_prefix(location)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        || location == "/"
}

/// Whether `path`, read one component at a time as the system reads it, passes through
/// `location` ([`lexical`]): reaches it or something below it at any step, so that a later
/// `..` (`g/../config`, which is `.git/config` when `g` leads to `.git/hooks`) does not hide
/// it; a component with a glob (`g*`) may be any name there, the link's too.
fn passes_through(path: &str, location: &str) -> bool {
    let mut at: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => continue,
            ".." => {
                at.pop();
                continue;
            }
            part if part.contains(['*', '?', '[']) => {
                let parent = format!("/{}", at.join("/"));
                let above = location.rsplit_once('/').map(|(above, _)| match above {
                    "" => "/",
                    above => above,
                });
                if above == Some(parent.as_str()) {
                    return true;
                }
                at.push(part);
            }
            part => at.push(part),
        }
        if below_or_at(&format!("/{}", at.join("/")), location) {
            return true;
        }
    }
    false
}

/// The starting points of a `find` command: the words before its expression (after `-H`,
/// `-L`, `-P`, `-D …`, `-O…`), or `.` when it names none. None when it reads them from a
/// file or its input (`-files0-from`).
fn starting_points(command: &SimpleCommand) -> Option<Vec<Word>> {
    if command
        .words
        .iter()
        .any(|w| w.literal().is_some_and(|v| v.starts_with("-files0-from")))
    {
        return None;
    }
    let mut words = command.words.iter().skip(1).peekable();
    while let Some(option) = words.peek().and_then(|w| w.literal()) {
        match option {
            "-H" | "-L" | "-P" => {}
            "-D" => {
                words.next();
            }
            _ if option.starts_with("-O") => {}
            // `find -- ~`: the starting points follow.
            "--" => {
                words.next();
                break;
            }
            _ => break,
        }
        words.next();
    }
    let starts: Vec<Word> = words
        .take_while(|w| {
            !w.literal()
                .is_some_and(|v| v.starts_with('-') || matches!(v, "(" | "!" | ")" | ","))
        })
        .cloned()
        .collect();
    if starts.is_empty() {
        Some(vec![Word::literal_from(".", ".")])
    } else {
        Some(starts)
    }
}

/// The folder git would open as a bare repository when run in `folder`: the first, from
/// `folder` up, that holds a `HEAD` beside `objects` and `refs` (or beside a `commondir`
/// file, which points to them elsewhere) — unless one with a `.git` comes first. Any kind of
/// entry counts, links to nothing included: git asks only that `objects` and `refs` can be
/// entered, which an executable file passes, and reads a `HEAD` link without following it.
/// A `.git` file naming such a folder outside any `.git` folder (`gitdir: ../x`) counts too.
/// Anyone who can write files can lay one out, and git runs commands its `config` names
/// (`core.fsmonitor`, `core.pager`, hooks). Inside the workspace the walk stops at its
/// `root`: above it an agent writes nothing unasked.
fn bare_repository(folder: &str, root: &str) -> Option<String> {
    let mut current = std::path::Path::new(folder);
    let stop = current
        .starts_with(root)
        .then(|| std::path::Path::new(root));
    // A `.git` file names the repository's folder (`gitdir: …`, as worktrees and submodules
    // write it, inside a `.git` folder): one naming a folder elsewhere, where files may be
    // written, is opened the same way.
    let named_by = |file: &Path| {
        let text = content::read_regular(file, 4096)?;
        let named = text.trim().strip_prefix("gitdir:")?.trim().to_owned();
        // Where it leads as the system resolves it: `.git/../evil` is no `.git` folder.
        let git_dir = file.parent()?.join(named);
        let git_dir = disk::canonicalize(&git_dir).unwrap_or(git_dir);
        (!git_dir.components().any(|c| c.as_os_str() == ".git"))
            .then(|| git_dir.display().to_string())
    };
    // `git --git-dir=FILE` reads FILE as such a `.git` file.
    if folder.trim_end_matches('/') != root.trim_end_matches('/') && disk::is_file(current) {
        return named_by(current);
    }
    loop {
        let dot_git = current.join(".git");
        if let Ok(meta) = disk::symlink_metadata(&dot_git) {
            return meta.is_file().then(|| named_by(&dot_git)).flatten();
        }
        // A linked layout (`commondir` naming another folder, as worktrees use) counts too.
        let has = |name: &str| disk::symlink_metadata(current.join(name)).is_ok();
        if has("HEAD") && ((has("objects") && has("refs")) || has("commondir")) {
            return Some(current.display().to_string());
        }
        if Some(current) == stop {
            return None;
        }
        current = current.parent()?;
    }
}

/// Why a git command that prints the remotes' URLs (`git remote -v`, `get-url`, `show`)
/// prints a credential: the repository's config holds a URL with a user and token in it
/// (see [`git_index::config_with_credentials`]).
fn prints_remote_credentials(
    facts: &CommandFacts,
    folders: &Folders,
    home: Option<&str>,
) -> Option<String> {
    // The words after the subcommand, as written (a subcommand the table does not list
    // keeps them as operands).
    let words: Vec<String> = facts
        .operands
        .iter()
        .chain(facts.options.iter().filter_map(|o| o.value.as_ref()))
        .filter_map(|w| w.literal().map(str::to_ascii_lowercase))
        .chain(facts.options.iter().map(|o| o.canonical.clone()))
        .collect();
    let prints_urls = match facts.subcommand.as_deref() {
        Some("remote") => facts
            .options
            .iter()
            .any(|o| matches!(o.canonical.as_str(), "-v" | "--verbose")),
        Some("remote get-url" | "remote show") => true,
        // Every setting (`--list`, a regular expression), or one a credential lives in.
        Some("config") => words.iter().any(|word| {
            matches!(
                word.as_str(),
                "-l" | "--list" | "list" | "--get-regexp" | "get-regexp" | "--get-urlmatch"
            ) || (!word.starts_with('-')
                && (word.starts_with("remote.")
                    || word.starts_with("url.")
                    || word.starts_with("http.")
                    || word.contains("extraheader")
                    || word.contains("insteadof")))
        }),
        Some("var") => words.iter().any(|word| word == "-l"),
        Some("ls-remote") => words.iter().any(|word| word.starts_with("--get-url")),
        _ => false,
    };
    if facts.program.as_deref() != Some("git") || !prints_urls {
        return None;
    }
    let config = folders
        .candidates
        .iter()
        .find_map(|folder| git_index::config_with_credentials(Path::new(folder)))
        .or_else(|| git_index::user_config_with_credentials(home.map(Path::new)))?;
    Some(format!(
        "prints the remotes' URLs (or the settings that hold them), and `{}` holds a credential (a token or password in a URL or a setting, or an `extraheader`)",
        config.display()
    ))
}

/// `git diff` compares two paths as `--no-index` does (every file below a folder, tracked or
/// not) when one of them lies outside the repository it runs in, or when it runs in none:
/// `git diff ~ src` prints the home folder's files. Its facts with such operands read as
/// trees, as `--no-index`'s are; `None` when nothing changes. A word naming nothing on disk
/// is a revision.
///
/// In a repository git does so only when given exactly two words after its options, so
/// other counts of words that are one word each are not looked up there. Outside one, any
/// count is looked up: git takes an option's value from the next word, and an option
/// unknown to the command table would leave one operand too many here.
fn no_index_operands(
    facts: &CommandFacts,
    folders: &Folders,
    home: Option<&str>,
) -> Option<CommandFacts> {
    if facts.program.as_deref() != Some("git") || facts.subcommand.as_deref() != Some("diff") {
        return None;
    }
    let real = |path: &Path| disk::canonicalize(path).ok();
    // Each folder the command may run in, with the real root of its repository, looked up
    // once and only when needed.
    let repositories = std::cell::OnceCell::new();
    let repositories = || {
        repositories.get_or_init(|| {
            let root = |folder: &str| {
                git_index::work_tree(Path::new(folder)).map(|root| real(&root).unwrap_or(root))
            };
            let found: Vec<(&str, Option<PathBuf>)> = folders
                .candidates
                .iter()
                .map(|folder| (folder.as_str(), root(folder)))
                .collect();
            found
        })
    };
    let operands = facts
        .roles
        .iter()
        .filter(|r| r.role == Role::RevisionOrPath);
    let two = operands.clone().count() == 2;
    let counted = operands.clone().all(|r| r.word.literal().is_some());
    if !two && counted && repositories().iter().all(|(_, root)| root.is_some()) {
        return None;
    }
    let outside = |word: &Word| {
        let Ok(values) = word_values(word, home, &folders.candidates, Dotfiles::Matched) else {
            return false;
        };
        repositories().iter().any(|(folder, root)| {
            let paths = values.iter().flat_map(|value| {
                let written = if value.starts_with('/') {
                    value.clone()
                } else {
                    format!("{}/{value}", folder.trim_end_matches('/'))
                };
                expand_glob(&written, Dotfiles::Matched).unwrap_or_default()
            });
            // A word naming nothing is a revision.
            let mut real_paths = paths.filter_map(|path| real(Path::new(&path))).peekable();
            match root {
                None => real_paths.peek().is_some(),
                Some(root) => real_paths.any(|path| !path.starts_with(root)),
            }
        })
    };
    let mut changed: Option<CommandFacts> = None;
    for (index, role_word) in facts.roles.iter().enumerate() {
        if role_word.role == Role::RevisionOrPath && outside(&role_word.word) {
            changed.get_or_insert_with(|| facts.clone()).roles[index].role = Role::Tree;
        }
    }
    changed
}

/// The files a command reads and writes, with where each was named.
fn file_words<'c>(
    command: &'c SimpleCommand,
    facts: &'c CommandFacts,
) -> Vec<(Access, &'c Word, String, Named)> {
    let mut found = Vec::new();
    // A program that writes in any case writes the paths it is given too (`git checkout REV
    // -- FILE`, `git restore FILE`).
    let program_writes = facts
        .effects
        .iter()
        .any(|e| e.effect == Effect::Write && e.from == EffectFrom::Program);
    // `find`'s starting points are the words before its expression: what follows (the
    // command `-exec` runs) is not listed.
    let find_starts = (facts.program.as_deref() == Some("find"))
        .then(|| starting_points(command))
        .flatten();
    for role_word in &facts.roles {
        let access = match role_word.role {
            Role::RevisionOrPath if program_writes => {
                found.push((
                    Access::Write,
                    &role_word.word,
                    role_word.source.clone(),
                    Named::File,
                ));
                Access::Read
            }
            Role::Read
            | Role::Dir
            | Role::Manifest
            | Role::RevisionOrPath
            | Role::Patch
            | Role::Unpack
            // mikefarah's yq reads its first word as the file to print when one is there
            // (`yq secrets/creds`).
            | Role::YqProgram
            | Role::ManPage => Access::Read,
            Role::Write | Role::Archive => Access::Write,
            Role::Target => {
                found.push((
                    Access::Write,
                    &role_word.word,
                    role_word.source.clone(),
                    Named::Maybe,
                ));
                continue;
            }
            Role::Tree => {
                found.push((
                    Access::Read,
                    &role_word.word,
                    role_word.source.clone(),
                    Named::File,
                ));
                Access::Search
            }
            Role::Listing
                if find_starts
                    .as_ref()
                    .is_some_and(|starts| !starts.contains(&role_word.word)) =>
            {
                Access::Read
            }
            Role::Listing => {
                found.push((
                    Access::Read,
                    &role_word.word,
                    role_word.source.clone(),
                    Named::File,
                ));
                Access::List
            }
            Role::Text
            | Role::Clock
            | Role::Exec
            | Role::SedScript
            | Role::AwkProgram
            | Role::JqProgram
            | Role::Network
            | Role::Download
            | Role::SearchGlob
            | Role::Variable
            | Role::Arithmetic
            | Role::Data
            | Role::Suffix => continue,
        };
        found.push((
            access,
            &role_word.word,
            role_word.source.clone(),
            Named::File,
        ));
    }
    for role_word in &facts.unlisted {
        found.push((
            Access::Read,
            &role_word.word,
            role_word.source.clone(),
            Named::Maybe,
        ));
    }
    for redirection in &command.redirections {
        match &redirection.effect {
            RedirectEffect::WriteFile { target } => {
                found.push((Access::Write, target, redirection.text.clone(), Named::File));
            }
            RedirectEffect::Input {
                from: InputFrom::File(target),
            } => found.push((Access::Read, target, redirection.text.clone(), Named::File)),
            RedirectEffect::Input { .. }
            | RedirectEffect::Discard
            | RedirectEffect::DuplicateFd
            | RedirectEffect::ProcessSubstitution => {}
        }
    }
    found
}

/// The decision on `path` as a call of the file tool that does `access` to it (allowed when
/// no rule decides).
fn decide_file(
    set: &RuleSet,
    ctx: &MatchContext,
    call: &CallFacts<'_>,
    (tool, access): (FileTool<'_>, Access),
    path: &str,
    cache: &mut ParseCache,
) -> PartOutcome {
    let input = match access {
        Access::Read => json!({ "file_path": path }),
        Access::Write => json!({ "file_path": path, "content": "" }),
        Access::Search => json!({ "path": path, "pattern": "" }),
        Access::List => json!({ "path": path, "pattern": "**" }),
    };
    decide_as(set, ctx, call, tool, &input, cache)
}

/// The decision on a call of the file tool `tool` with `input`, in the modes of `call`
/// (allowed when no rule decides).
fn decide_as(
    set: &RuleSet,
    ctx: &MatchContext,
    call: &CallFacts<'_>,
    tool: FileTool<'_>,
    input: &serde_json::Value,
    cache: &mut ParseCache,
) -> PartOutcome {
    let pseudo = CallFacts {
        tool: tool.tool,
        input,
        modes: call.modes,
        flags: tool.flags,
    };
    set.decide_whole(&pseudo, ctx, Decision::Allow, cache, None)
}

/// Judges the words no file role judges that the shell expands as globs (`echo ~/.ssh/*`,
/// `basename -a ~/.ssh/*`, a loop over `~/.ssh/*`): bash lists their folders to expand
/// them and the command is given the names (see [`judge_globbed_word`]).
fn judge_text_globs(
    (set, ctx, call, files): (&RuleSet, &MatchContext, &CallFacts<'_>, &FileTools<'_>),
    (command, facts): (&SimpleCommand, &CommandFacts),
    (folders, dotfiles): (&Folders, Dotfiles),
    cache: &mut ParseCache,
    outcome: &mut PartOutcome,
) {
    let Some(read) = files.read else {
        return;
    };
    let judged: Vec<&Word> = file_words(command, facts)
        .into_iter()
        .map(|(_, word, _, _)| word)
        .collect();
    for word in command.words.iter().skip(1) {
        if word.literal().is_some() || judged.contains(&word) {
            continue;
        }
        let judged = (set, ctx, call, read);
        judge_globbed_word(
            judged,
            word,
            &command.text,
            (folders, dotfiles),
            cache,
            outcome,
        );
    }
}

/// Judges `word`, if the shell expands a glob in it: the folders it lists to expand it (the
/// one before its last component, each match of a glob there: `~/.s*/id*` lists `~/.ssh`)
/// are each judged as read, as `ls -a FOLDER` is (`echo ~/.ssh/*` is denied where `ls
/// ~/.ssh` is; `echo ~/.*` is allowed as `ls -a ~` is). A glob whose folder cannot be told
/// (`${x:-~/.ssh/*}`, `~/.ss${x}h/*`) asks. `part` names the command or loop.
fn judge_globbed_word(
    (set, ctx, call, read): (&RuleSet, &MatchContext, &CallFacts<'_>, FileTool<'_>),
    word: &Word,
    part: &str,
    (folders, dotfiles): (&Folders, Dotfiles),
    cache: &mut ParseCache,
    outcome: &mut PartOutcome,
) {
    // A loop variable bound to a glob stands for the glob (its word is the glob).
    let looped = word.kind == WordKind::Dynamic(super::shell::Expansion::LoopGlob);
    let glob = looped.then(|| Word::dynamic(&word.raw, super::shell::Expansion::Glob));
    let values = match word_values(
        glob.as_ref().unwrap_or(word),
        ctx.home(),
        &folders.candidates,
        dotfiles,
    ) {
        Ok(values) => values,
        Err(why) => {
            let arithmetic = matches!(
                word.kind,
                WordKind::Dynamic(super::shell::Expansion::Arithmetic)
                    | WordKind::Opaque(super::shell::Expansion::Arithmetic)
            );
            if !arithmetic && unquoted_glob_character(&word.raw) {
                outcome.add_analysis(
                    part,
                    format!(
                        "`{part}` expands a glob in `{}`, whose folder cannot be told: {why}",
                        word.raw
                    ),
                );
            }
            return;
        }
    };
    for value in values.iter().filter(|value| has_glob(value)) {
        for path in folders.resolve(value) {
            let parent = match path.rfind('/') {
                Some(0) => "/",
                Some(cut) => &path[..cut],
                None => continue,
            };
            let listed = if has_glob(parent) {
                match expand_glob(parent, dotfiles) {
                    Ok(found) => found,
                    Err(why) => {
                        outcome
                            .add_analysis(part, format!("`{part}` expands `{}`: {why}", word.raw));
                        continue;
                    }
                }
            } else {
                vec![unescape_glob(parent)]
            };
            for folder in listed {
                let file = decide_file(set, ctx, call, (read, Access::Read), &folder, cache);
                if file.decision != Decision::Allow {
                    let how = format!(
                        "`{part}` lists `{folder}` to expand `{}` (judged as `{}`)",
                        word.raw, read.tool
                    );
                    outcome.add_file_outcome(part, file, how);
                }
            }
        }
    }
}

/// Whether `raw` holds `*`, `?` or `[` outside quotes and not escaped, where the shell may
/// expand a glob.
/// An array's list without the keys of its elements (`([0]=x [1]=y)`: `(x y)`), which are
/// subscripts, not globs; any other value as it is.
fn without_array_keys(value: &str) -> String {
    if !value.starts_with('(') {
        return value.to_owned();
    }
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    let mut element_start = false;
    while let Some(c) = rest.chars().next() {
        if element_start
            && c == '['
            && let Some(close) = rest.find("]=")
            && !rest[..close].contains([' ', '\t', '\n'])
        {
            rest = &rest[close + 2..];
            element_start = false;
            continue;
        }
        element_start = c == '(' || c.is_whitespace();
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// (A subscript after a name, `${a[1]}`, `${a[*]}`, is no glob.)
fn unquoted_glob_character(raw: &str) -> bool {
    let (mut quote, mut escaped, mut subscript, mut previous) = (None, false, false, ' ');
    for c in raw.chars() {
        match (quote, escaped, c) {
            (_, true, _) => escaped = false,
            (Some('\''), _, '\'') | (Some('"'), _, '"') => quote = None,
            (Some('\''), _, _) => {}
            (_, _, '\\') => escaped = true,
            (None, _, '\'' | '"') => quote = Some(c),
            (None, _, '[') if previous.is_alphanumeric() || previous == '_' => subscript = true,
            (None, _, ']') if subscript => subscript = false,
            (None, _, '*' | '?' | '[') if !subscript => return true,
            _ => {}
        }
        previous = c;
    }
    false
}

/// The decision on listing the folder `path` with the names below it that match `pattern`,
/// as a call of the list tool (allowed when no rule decides).
fn decide_listing(
    set: &RuleSet,
    ctx: &MatchContext,
    call: &CallFacts<'_>,
    tool: FileTool<'_>,
    (path, pattern): (&str, &str),
    cache: &mut ParseCache,
) -> PartOutcome {
    let input = json!({ "path": path, "pattern": pattern });
    decide_as(set, ctx, call, tool, &input, cache)
}

/// Judges the folders a listing of `folder` that follows links reaches through the links
/// below it (`find -L src`, `tree -l src`), each as listed with `pattern`: a link
/// `src/keys` to `~/.ssh` lists the names below `~/.ssh`. A folder too large to look
/// through for links asks.
fn judge_linked_folders(
    (set, ctx, call): (&RuleSet, &MatchContext, &CallFacts<'_>),
    command: &SimpleCommand,
    (tool, pattern): (FileTool<'_>, &str),
    folder: &str,
    cache: &mut ParseCache,
    outcome: &mut PartOutcome,
) {
    if !disk::is_dir(folder) {
        return;
    }
    let linked = match super::search::linked_folders(Path::new(folder), LinkWalk::Following) {
        Ok(linked) => linked,
        Err(why) => {
            let message = format!(
                "`{}` lists `{folder}` following the links below it, and looking through it met {why}",
                command.text
            );
            outcome.add_analysis(&command.text, message);
            return;
        }
    };
    for (link, real) in linked {
        let real = real.to_string_lossy();
        let listed = decide_listing(set, ctx, call, tool, (&real, pattern), cache);
        if listed.by_rule && listed.decision != Decision::Allow {
            let how = format!(
                "`{}` lists `{real}` through the link `{}` (judged as `{}`)",
                command.text,
                link.display(),
                tool.tool
            );
            outcome.add_file_outcome(&command.text, listed, how);
        }
    }
}

/// The names below its folders a listing command prints, as a glob: `**` (every name),
/// narrowed to `**/NAME` for a `find` whose tests all hold together (no `-o`, `!`, `,` or
/// parentheses) and include `-name NAME` (`find / -name libssl.so` lists no key's name).
fn listed_names(facts: &CommandFacts) -> String {
    let every = "**".to_owned();
    if facts.program.as_deref() != Some("find") {
        return every;
    }
    // Operators, and actions that print or run something for every file they reach (one
    // before `-name` prints every name; `-exec`'s command may hold a `-name` of its own).
    let joined = [
        "-o", "-or", "!", "-not", ",", "(", ")", "-print", "-print0", "-printf", "-fprint",
        "-fprint0", "-fprintf", "-ls", "-fls", "-exec", "-execdir", "-ok", "-okdir", "-delete",
        "-prune", "-quit",
    ];
    if facts.operands.iter().any(|word| match word.literal() {
        Some(text) => joined.contains(&text),
        // A word only known when it runs may be an operator (`~` is not).
        None => word.raw.contains(['$', '`']),
    }) || facts
        .options
        .iter()
        .any(|option| joined.contains(&option.canonical.as_str()))
    {
        return every;
    }
    facts
        .options
        .iter()
        .find(|option| option.canonical == "-name")
        .and_then(|option| option.value.as_ref())
        .and_then(|value| value.literal())
        .filter(|name| !name.is_empty() && !name.contains('/'))
        .map_or(every, |name| format!("**/{name}"))
}

/// What a glob (`*`) that skips names starting with `.`, as bash does by default, reaches
/// when the shell's `dotglob` (zsh's `GLOB_DOTS`) is on, and the rules keep from `access`:
/// the user's shell options may be on in the agent's shell (Claude Code copies them into
/// it), so such a name asks, saying which rule keeps it. `shown` are the matches without
/// those names. `None` when every further name is allowed, or the glob cannot be expanded.
fn hidden_matches(
    set: &RuleSet,
    ctx: &MatchContext,
    call: &CallFacts<'_>,
    (tool, access): (FileTool<'_>, Access),
    glob: &str,
    shown: &[String],
    cache: &mut ParseCache,
) -> Option<String> {
    if !has_glob(glob) {
        return None;
    }
    let hidden = expand_glob(glob, Dotfiles::Matched)
        .ok()?
        .into_iter()
        .filter(|path| !shown.contains(path))
        .collect();
    hidden_kept(set, ctx, call, (tool, access), hidden, cache)
}

/// The words a loop's glob gives its variable when `dotglob` is on, besides `shown` (see
/// [`hidden_matches`]): `for f in cfg/*; do cat $f; done` reads `cfg/.env` then.
fn hidden_loop_values(
    judged: (&RuleSet, &MatchContext, &CallFacts<'_>),
    (tool, access): (FileTool<'_>, Access),
    (word, home, folders): (&Word, Option<&str>, &[String]),
    shown: &[String],
    cache: &mut ParseCache,
) -> Option<String> {
    let (set, ctx, call) = judged;
    if word.kind != WordKind::Dynamic(super::shell::Expansion::LoopGlob) {
        return None;
    }
    let hidden = word_values(word, home, folders, Dotfiles::Matched)
        .ok()?
        .into_iter()
        .filter(|value| !shown.contains(value))
        .map(|value| unescape_glob(&value))
        .collect();
    hidden_kept(set, ctx, call, (tool, access), hidden, cache)
}

/// Which of `hidden` (paths) the rules keep from `access`, said as [`hidden_matches`] says it.
fn hidden_kept(
    set: &RuleSet,
    ctx: &MatchContext,
    call: &CallFacts<'_>,
    (tool, access): (FileTool<'_>, Access),
    hidden: Vec<String>,
    cache: &mut ParseCache,
) -> Option<String> {
    let kept: Vec<(String, String)> = hidden
        .into_iter()
        .filter_map(|path| {
            let file = decide_file(set, ctx, call, (tool, access), &path, cache);
            if !file.by_rule || file.decision == Decision::Allow {
                return None;
            }
            let rule = file
                .reasons
                .iter()
                .find_map(RuleReason::rule)?
                .name
                .to_string();
            Some((path, rule))
        })
        .collect();
    let (path, rule) = kept.first()?;
    let more = match kept.len() {
        1 => String::new(),
        n => format!(" and {} more", n - 1),
    };
    Some(format!(
        "`{path}`{more} when the shell's `dotglob` (zsh's `GLOB_DOTS`) is on, as the user's shell settings may make it in the agent's shell: `{rule}` keeps it"
    ))
}

/// The name of a file a program might create in a folder it is given: with a policy
/// file's extension, so that a policy folder keeps it out.
const NEW_FILE: &str = "new-file.yaml";

/// Whether a word names a file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Named {
    /// It does (the command table says so, or a redirection).
    File,
    /// It may: a word given to a program the table does not know. It is judged as a file
    /// when [spelled like one or naming one](named_like_a_file).
    Maybe,
}

/// Whether `value` (at `path` where the command runs) is spelled like a file (`.env`,
/// `~/x`, `a/b`, a glob) or names one that is there: `bat .env` reads it, while the word
/// `secrets` in `kubectl get secrets` names no file.
fn named_like_a_file(value: &str, path: &str) -> bool {
    value.contains(['/', '.', '~', '*', '?', '['])
        || disk::symlink_metadata(unescape_glob(path)).is_ok()
}

#[allow(clippy::too_many_arguments)]
fn judge_files(
    set: &RuleSet,
    call: &CallFacts<'_>,
    ctx: &MatchContext,
    files: &FileTools<'_>,
    (command, facts): (&SimpleCommand, &CommandFacts),
    (scope, found_by_find): (&SearchScope<'_>, Option<&[Word]>),
    folders: &Folders,
    dotfiles: Dotfiles,
    cache: &mut ParseCache,
    outcome: &mut PartOutcome,
) {
    let home = ctx.home();
    let mut words = file_words(command, facts);
    if let Some(starts) = found_by_find {
        // In the command `find -exec` runs, `{}` is each file found below the starting
        // points: reading it is a search of them, everything below included.
        words = words
            .into_iter()
            .flat_map(|(access, word, source, named)| {
                let found = matches!(access, Access::Read | Access::Search)
                    && word.raw == "{}"
                    && matches!(
                        word.kind,
                        WordKind::Dynamic(
                            super::shell::Expansion::RuntimeArguments
                                | super::shell::Expansion::FoundPath
                        )
                    );
                if found {
                    starts
                        .iter()
                        .map(|start| (Access::Search, start, source.clone(), Named::File))
                        .collect()
                } else {
                    vec![(access, word, source, named)]
                }
            })
            .collect();
    }
    // git reads its operands as revisions and pathspecs (`git show HEAD:x`, `git grep K --
    // ':(icase).ENV'`).
    let revision_paths = facts.roles.iter().any(|r| {
        r.role == Role::RevisionOrPath
            || (r.role == Role::Tree && facts.program.as_deref() == Some("git"))
    });
    // git matches its pathspecs itself, reaching hidden names too.
    let dotfiles = if revision_paths {
        Dotfiles::Matched
    } else {
        dotfiles
    };
    let recursive = !facts.unlisted.is_empty() && asks_for_recursion(command);
    for (access, word, source, named) in words {
        let Some(tool) = (match access {
            Access::Read => files.read,
            Access::Write => files.write,
            Access::Search => files.search,
            Access::List => files.list,
        }) else {
            continue;
        };
        if word.literal().is_some_and(|v| v.is_empty() || v == "-") {
            continue;
        }
        // `<(cmd)` and `>(cmd)` are a pipe to a command judged on its own, not a file.
        if word.is_process_substitution() {
            continue;
        }
        let values = match word_values(word, home, &folders.candidates, dotfiles) {
            Ok(values) => values,
            Err(why) => {
                outcome.add_analysis(
                    &command.text,
                    format!("`{}` {} `{}`: {why}", command.text, access.verb(), word.raw),
                );
                continue;
            }
        };
        if dotfiles == Dotfiles::Explicit
            && let Some(why) = hidden_loop_values(
                (set, ctx, call),
                (tool, access),
                (word, home, &folders.candidates),
                &values,
                cache,
            )
        {
            outcome.add_analysis(
                &command.text,
                format!("`{}` {} {why}", command.text, access.verb()),
            );
        }
        // git searching a revision (`git grep KEY HEAD~1`, `HEAD~1:dir`) reads its committed
        // files, which are not on disk to judge.
        let git_search = access == Access::Search && facts.program.as_deref() == Some("git");
        if git_search
            && values.iter().any(|value| {
                (!value.starts_with(':') && value.contains(':'))
                    || !value.contains(['*', '?', '[', ':'])
                        && folders
                            .resolve(&unescape_glob(value))
                            .iter()
                            .all(|path| disk::symlink_metadata(path).is_err())
            })
        {
            outcome.add_analysis(
                &command.text,
                format!(
                    "`{}` searches `{}`, which names no file here: a revision, whose files cannot be judged",
                    command.text, word.raw
                ),
            );
            continue;
        }
        let values = values.into_iter().flat_map(|value| {
            if revision_paths {
                git_paths(&value)
            } else if named == Named::Maybe {
                unlisted_pieces(&value, home)
            } else {
                vec![value]
            }
        });
        for value in values {
            if value.is_empty() {
                continue;
            }
            if !value.starts_with('/')
                && !value.starts_with('~')
                && let Some(cd) = &folders.lost
            {
                outcome.add_analysis(
                    &command.text,
                    format!(
                        "`{}` {} `{value}` in a folder only known when it runs (after `{cd}`)",
                        command.text,
                        access.verb()
                    ),
                );
                continue;
            }
            for path in folders.resolve(&value) {
                if named == Named::Maybe && !named_like_a_file(&value, &path) {
                    continue;
                }
                let paths = match expand_glob(&path, dotfiles) {
                    Ok(paths) => paths,
                    Err(why) => {
                        outcome.add_analysis(
                            &command.text,
                            format!("`{}` {} `{}`: {why}", command.text, access.verb(), word.raw),
                        );
                        continue;
                    }
                };
                // A glob the word starts with expands to names as written: one starting with
                // `-` is an option to the program (`touch ./-R; ls * ~` listed `~` with
                // everything below it; `rm *` beside a file named `-rf`).
                if value.starts_with(['*', '?', '['])
                    && let Some(at) = path.find(['*', '?', '['])
                    && let Some(option) = paths
                        .iter()
                        .find(|found| found.get(at..).is_some_and(|name| name.starts_with('-')))
                {
                    outcome.add_analysis(
                        &command.text,
                        format!(
                            "`{}` expands `{}` to `{}`, a name starting with `-`: the program reads it as an option",
                            command.text,
                            word.raw,
                            &option[at..]
                        ),
                    );
                }
                if dotfiles == Dotfiles::Explicit
                    && let Some(why) =
                        hidden_matches(set, ctx, call, (tool, access), &path, &paths, cache)
                {
                    outcome.add_analysis(
                        &command.text,
                        format!("`{}` {} {why}", command.text, access.verb()),
                    );
                }
                for path in paths {
                    // A folder a copy goes into stays: what lands in it is judged (see
                    // `judge_copies`), not the folder (`cp x .` with the policies below `.`).
                    if access == Access::Write
                        && facts
                            .copies
                            .as_ref()
                            .is_some_and(|copies| copies.into.raw == word.raw)
                        && disk::is_dir(&path)
                    {
                        continue;
                    }
                    let file = if access == Access::List {
                        let pattern = listed_names(facts);
                        if facts.follows_links {
                            let listing = (tool, pattern.as_str());
                            let judged = (set, ctx, call);
                            judge_linked_folders(judged, command, listing, &path, cache, outcome);
                        }
                        decide_listing(set, ctx, call, tool, (&path, &pattern), cache)
                    } else {
                        decide_file(set, ctx, call, (tool, access), &path, cache)
                    };
                    // A file read is judged by its content where it leads: a link named
                    // `notes` to `.git/config` or a key.
                    let real = (access == Access::Read).then(|| {
                        cache
                            .path(&path, ctx)
                            .and_then(|location| location.at(Side::Resolved))
                            .map_or_else(|| path.clone(), |at| at.absolute().to_owned())
                    });
                    if let Some(real) = real
                        && let Some(holds) = secret_by_content(&real, ctx)
                    {
                        let leads = if real == path {
                            String::new()
                        } else {
                            format!(" (a link to `{real}`)")
                        };
                        outcome.add_analysis(
                            &command.text,
                            format!("`{}` reads `{path}`{leads}, which {holds}", command.text),
                        );
                    }
                    if matches!(access, Access::Read | Access::Write)
                        && let Some(count) = super::content::other_names(Path::new(&path))
                    {
                        outcome.add_analysis(
                            &command.text,
                            format!(
                                "`{}` {} `{path}`, which {}",
                                command.text,
                                access.verb(),
                                super::content::other_names_reason(count)
                            ),
                        );
                    }
                    if named == Named::Maybe
                        && (recursive || outside_workspace(&path, ctx))
                        && disk::is_dir(&path)
                    {
                        // A folder such a program may read and rewrite with everything below
                        // it (`gzip -rc ~`, `tool -r .claude`): what a rule keeps from reads
                        // or writes below it asks.
                        let judged = (set, ctx, call, files);
                        for message in judge_unlisted_folder(judged, &path, scope, command, cache) {
                            outcome.add_analysis(&command.text, message);
                        }
                    }
                    if named == Named::Maybe
                        && let Some(write) = files.write
                    {
                        // Such a program may write what it is given too: a location a
                        // rule keeps from writes is asked about (not denied: it may only
                        // read it). A folder counts when a file written in it would be
                        // kept out (`.git`, a policy folder), not because a protected
                        // location lies somewhere below it (`docker build .`).
                        // A compressed file's name without its last extension is what
                        // unpacking it writes (`gzip -d .claude/settings.json.gz`).
                        let targets = if disk::is_dir(&path) {
                            vec![format!("{}/{NEW_FILE}", path.trim_end_matches('/'))]
                        } else {
                            let unpacked = Path::new(&path)
                                .extension()
                                .and_then(|_| path.rsplit_once('.'))
                                .map(|(stem, _)| stem.to_owned());
                            std::iter::once(path.clone()).chain(unpacked).collect()
                        };
                        for target in targets {
                            let written =
                                decide_file(set, ctx, call, (write, Access::Write), &target, cache);
                            if let Some(rule) = denying_rule(&written) {
                                outcome.add_analysis(
                                    &command.text,
                                    format!(
                                        "`{}` may write `{target}`: the command table does not know the program, and `{rule}` denies writing there",
                                        command.text
                                    ),
                                );
                            }
                        }
                    }
                    if file.by_rule && file.decision != Decision::Allow {
                        let how = format!(
                            "`{}` {} `{path}` (judged as `{}` via `{source}`)",
                            command.text,
                            access.verb(),
                            tool.tool
                        );
                        outcome.add_file_outcome(&command.text, file, how);
                    } else if access == Access::Search
                        && let Some(read) = files.read
                    {
                        // The folder is allowed: the files below it may not be.
                        let below = search_below(set, ctx, read, call.modes, &path, scope, command);
                        for message in below {
                            outcome.add_analysis(&command.text, message);
                        }
                    }
                }
            }
        }
    }
    if let (Some(copies), Some(write)) = (&facts.copies, files.write) {
        let judged = (set, ctx, call, write);
        // A backup of what is replaced is written beside it with this suffix (`-b -S`).
        let suffix = facts
            .options
            .iter()
            .filter(|o| o.canonical == "-S")
            .find_map(|o| o.value.as_ref().and_then(Word::literal));
        let how = (home, folders, dotfiles, suffix);
        judge_copies(judged, command, copies, how, cache, outcome);
    }
}

/// The files `cp`, `mv`, `ln` or `install` writes into a folder (its last operand or `-t`):
/// each source under its own name (`cp x/.bashrc ~` writes `~/.bashrc`), and for a source
/// folder every file below it, both inside a folder of its name and in place of the
/// target (`cp -r x .claude` makes `.claude` a copy of `x` when `.claude` does not exist;
/// `cp -rT`, `rsync x/ dest`). A source only known when it runs, or a folder too large to
/// list, asks.
fn judge_copies(
    (set, ctx, call, write): (&RuleSet, &MatchContext, &CallFacts<'_>, FileTool<'_>),
    command: &SimpleCommand,
    copies: &super::commands::Copies,
    (home, folders, dotfiles, suffix): (Option<&str>, &Folders, Dotfiles, Option<&str>),
    cache: &mut ParseCache,
    outcome: &mut PartOutcome,
) {
    let paths = |word: &Word| -> Result<Vec<String>, String> {
        let mut paths = Vec::new();
        for value in word_values(word, home, &folders.candidates, dotfiles)? {
            for path in folders.resolve(&value) {
                paths.extend(expand_glob(&path, dotfiles)?);
            }
        }
        Ok(paths)
    };
    let unknown = |outcome: &mut PartOutcome, word: &Word, why: String| {
        outcome.add_analysis(
            &command.text,
            format!(
                "`{}` writes `{}` into another folder: {why}",
                command.text, word.raw
            ),
        );
    };
    let Ok(targets) = paths(&copies.into) else {
        // Judged, and asked about, as the written operand itself.
        return;
    };
    let mut written = Vec::new();
    for source in &copies.sources {
        let sources = match paths(source) {
            Ok(sources) => sources,
            Err(why) => {
                unknown(outcome, source, why);
                continue;
            }
        };
        for source_path in sources {
            let source_path = source_path.trim_end_matches('/');
            // `cp -r x/. dest` copies what is in `x`, under no name of its own.
            let name = source_path
                .rsplit('/')
                .next()
                .filter(|name| !matches!(*name, "" | "." | ".."));
            let below = match files_below(source_path) {
                Ok(below) => below,
                Err(why) => {
                    unknown(outcome, source, why);
                    continue;
                }
            };
            for target in &targets {
                let target = target.trim_end_matches('/');
                if let Some(name) = name {
                    written.push(format!("{target}/{name}"));
                }
                for relative in &below {
                    if let Some(name) = name {
                        written.push(format!("{target}/{name}/{relative}"));
                    }
                    written.push(format!("{target}/{relative}"));
                }
            }
        }
    }
    if let Some(suffix) = suffix {
        let backups: Vec<String> = written
            .iter()
            .chain(&targets)
            .map(|path| format!("{}{suffix}", path.trim_end_matches('/')))
            .collect();
        written.extend(backups);
    }
    let judged = (set, ctx, call, write);
    judge_writes(
        judged,
        command,
        written,
        "a copy into a folder",
        cache,
        outcome,
    );
}

/// Whether a command that may print tracked files prints no content of them: names and
/// counts only (`git diff --stat`, `git show --name-only HEAD`, `-s`) with no option that
/// asks for the patch back, or files outside the repository (`--no-index`).
fn prints_no_content(facts: &CommandFacts) -> bool {
    let spelled = |o: &super::commands::UsedOption, names: &[&str]| {
        names.iter().any(|name| {
            o.canonical == *name
                || o.canonical
                    .strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with('='))
        })
    };
    const NAMES_ONLY: &[&str] = &[
        "--stat",
        "--name-only",
        "--name-status",
        "--numstat",
        "--shortstat",
        "--dirstat",
        "--summary",
        "--raw",
        "--compact-summary",
        "-s",
        "--no-patch",
    ];
    if facts.options.iter().any(|o| o.canonical == "--no-index") {
        return true;
    }
    let names_only = facts.options.iter().any(|o| spelled(o, NAMES_ONLY));
    // An option the table marks as printing file contents (`-p`, `-U5`, `--cc`), or one it
    // does not know, may bring the patch back.
    let patch = facts
        .options
        .iter()
        .any(|o| !spelled(o, NAMES_ONLY) && o.info.as_ref().is_none_or(|info| info.prints_tracked));
    names_only && !patch
}

/// Why a command that prints file contents from commits reaches files no index lists: a
/// stash made with `-u` or `-a` keeps the untracked files (a `.env` never committed) in a
/// commit of their own, which `git show stash^3`, `git log -p stash`, `git stash show -u
/// -p` and every patch of `--all`, `--reflog`, `-g` or `--glob` print (`--glob='st*'`
/// matches `refs/stash`), as may those of refs no index follows (`--bisect`, another
/// repository's through `--alternate-refs`) and of a commit found by its message (`:/WIP`,
/// searched from every ref; after `--` such a word is a path). Which files those commits
/// hold is not read here (git's objects are compressed, often packed).
fn beyond_the_index(command: &SimpleCommand, facts: &CommandFacts) -> Option<String> {
    // Either end of a range too (`HEAD..stash`, `..stash^3`, `HEAD...stash`).
    let stashed = |word: &Word| {
        word.literal().is_some_and(|value| {
            value.split("..").any(|end| {
                let end = end.trim_start_matches('.').trim_start_matches("refs/");
                end == "stash"
                    || ["stash@", "stash^", "stash~", "stash:"]
                        .iter()
                        .any(|p| end.starts_with(p))
            })
        })
    };
    let untracked_stash = facts.subcommand.as_deref() == Some("stash show")
        && facts.options.iter().any(|o| {
            matches!(
                o.canonical.as_str(),
                "--include-untracked" | "--only-untracked"
            )
        });
    // (`--glob=PATTERN` or `--glob PATTERN`.)
    let every_ref = facts.options.iter().any(|o| {
        matches!(
            o.canonical
                .split_once('=')
                .map_or(o.canonical.as_str(), |(name, _)| name),
            "--all"
                | "--reflog"
                | "-g"
                | "--walk-reflogs"
                | "--glob"
                | "--bisect"
                | "--alternate-refs"
        )
    });
    let names_stash =
        facts.subcommand.as_deref() != Some("stash show") && facts.operands.iter().any(stashed);
    let found_by_message = command
        .words
        .iter()
        .take_while(|word| word.literal() != Some("--"))
        .any(|word| {
            word.literal()
                .is_some_and(|value| value.len() > 2 && value.starts_with(":/"))
        });
    (untracked_stash || every_ref || names_stash || found_by_message).then(|| {
        format!(
            "`{}` prints files from commits no index lists (stashed untracked files, commits only reflogs reach), whose content cannot be judged here",
            command.text
        )
    })
}

/// Whether `facts` is a plain `git diff`: the work tree against the index, with no revision,
/// pathspec or option that compares anything else (`--cached`, `--staged`, `--merge-base`,
/// `--no-index`, in any abbreviation) or that looks for copies (`-C`, `--find-copies`,
/// `--find-copies-harder`: an unchanged file is then printed as the source of a copy), so
/// that it prints only files that changed since they were added. It must also use the work
/// tree, repository and index read here: one chosen by `--work-tree`, `--git-dir`,
/// `GIT_WORK_TREE`, `GIT_DIR` or `GIT_INDEX_FILE` on its command line is compared in their
/// place (`git --work-tree=src diff` prints every tracked file outside `src` as deleted).
fn compares_work_tree_with_index(command: &SimpleCommand, facts: &CommandFacts) -> bool {
    let other_side = |option: &str| {
        let name = option.split_once('=').map_or(option, |(name, _)| name);
        // (`-C` in a cluster too: `-BC`.)
        (!name.starts_with("--") && name.starts_with('-') && name.contains('C'))
            || spells_one_of(
                option,
                &[
                    "--cached",
                    "--staged",
                    "--merge-base",
                    "--no-index",
                    "--find-copies",
                    "--find-copies-harder",
                ],
            )
    };
    let elsewhere =
        facts.options.iter().any(|o| {
            o.before_subcommand && spells_one_of(&o.canonical, &["--work-tree", "--git-dir"])
        }) || command.assignments.iter().any(|a| {
            matches!(
                a.name.as_str(),
                "GIT_WORK_TREE" | "GIT_DIR" | "GIT_INDEX_FILE"
            )
        });
    facts.program.as_deref() == Some("git")
        && facts.subcommand.as_deref() == Some("diff")
        && facts.roles.iter().all(|r| r.role != Role::RevisionOrPath)
        && facts.operands.is_empty()
        && !facts.options.iter().any(|o| other_side(&o.canonical))
        && !elsewhere
}

/// Judges the module files a command that follows a Rust package's modules reads (and,
/// without `--check`, rewrites) where the sources' `#[path]` attributes lead them (see
/// [`rust_modules`]), each as the file tools' call; what cannot be followed asks.
fn judge_modules(
    (set, ctx, call, files): (&RuleSet, &MatchContext, &CallFacts<'_>, &FileTools<'_>),
    command: &SimpleCommand,
    cache: &mut ParseCache,
    outcome: &mut PartOutcome,
) {
    let checks = command
        .words
        .iter()
        .any(|word| word.literal() == Some("--check"));
    let accesses = [
        files.read.map(|read| (read, Access::Read)),
        files
            .write
            .filter(|_| !checks)
            .map(|write| (write, Access::Write)),
    ];
    for lead in rust_modules::module_paths(Path::new(ctx.workspace_root())) {
        let (declared_in, target) = match lead {
            rust_modules::Lead::Unknown(why) => {
                outcome.add_analysis(&command.text, why);
                continue;
            }
            rust_modules::Lead::Path {
                declared_in,
                target,
            } => (declared_in, target.to_string_lossy().into_owned()),
        };
        for (tool, access) in accesses.into_iter().flatten() {
            let file = decide_file(set, ctx, call, (tool, access), &target, cache);
            if file.decision != Decision::Allow {
                let how = format!(
                    "`{}` {} `{target}`, the module a `#[path]` attribute in `{}` names (judged as `{}`)",
                    command.text,
                    access.verb(),
                    declared_in.display(),
                    tool.tool
                );
                outcome.add_file_outcome(&command.text, file, how);
            }
        }
    }
}

/// Why a command that prints the content of its repository's tracked files
/// ([`CommandFacts::prints_tracked`]: `git show HEAD`, `git log -p`) asks: the tracked files
/// below the folders its operands name (all of them when it names no file) that the read
/// tool's rules deny or ask reading, one message per rule — a `.env` committed once is in
/// every `git show` of that commit, whatever the work tree holds. Files it names are judged
/// as its operands already; a folder named in a revision (`HEAD:src`, `HEAD:`, a tree)
/// stands for the files below it, or for every file when it is compared with the index or
/// the work tree, and one the index lists neither as a file nor as a folder asks. So does
/// any but those when a git command before it in the line may change what the index lists
/// (`index_changed`): the index is read when the line is judged, and `git add -f . && git
/// diff --cached` prints what the first command adds. After any command that may change
/// files (`changed_before`), the work tree is not taken as it is now either.
fn judge_tracked(
    (set, ctx, call, read): (&RuleSet, &MatchContext, &CallFacts<'_>, FileTool<'_>),
    (command, facts): (&SimpleCommand, &CommandFacts),
    folders: &Folders,
    (changed_before, index_changed): (bool, bool),
) -> Vec<String> {
    if prints_no_content(facts) {
        return Vec::new();
    }
    if let Some(why) = beyond_the_index(command, facts) {
        return vec![why];
    }
    // The pathspecs: a file named, a folder named (its files are printed), or one that
    // cannot be told (a word only known when it runs, git's `:(…)` and `:!` magic), which
    // may print any tracked file. A word naming nothing here is a revision.
    let (mut named_file, mut below, mut anywhere) = (false, Vec::new(), false);
    // Words naming an object by its path in a revision (`HEAD:src/main.rs`, `HEAD:src`),
    // with that path: a file's is judged as the word's operand, a folder's (a tree) below.
    let mut objects = Vec::new();
    let mut others = 0;
    for role_word in facts
        .roles
        .iter()
        .filter(|r| r.role == Role::RevisionOrPath)
    {
        let Some(value) = role_word.word.literal() else {
            anywhere = true;
            continue;
        };
        if let Some((revision, path)) = value.split_once(':')
            && !revision.is_empty()
            && !has_glob(value)
            && !value.starts_with('-')
        {
            objects.push((value, path));
            continue;
        }
        others += 1;
        if value.starts_with(':') && !value.starts_with(":/") || has_glob(value) {
            anywhere = true;
            continue;
        }
        for path in folders.resolve(value.trim_start_matches(":/")) {
            match disk::metadata(&path) {
                // As git reads it: `src/..` is the folder above `src`.
                Ok(meta) if meta.is_dir() => {
                    below.push(disk::canonicalize(&path).unwrap_or_else(|_| path.into()));
                }
                Ok(_) => named_file = true,
                Err(_) => {}
            }
        }
    }
    // The repositories the command may run in (each once, however many folders it may run
    // in), with the folders it may run in there.
    let mut repositories: Vec<(git_index::Tracked, PathBuf)> = Vec::new();
    let mut runs_in = Vec::new();
    for folder in &folders.candidates {
        let tracked = match git_index::tracked_files(Path::new(folder)) {
            Ok(Some(tracked)) => tracked,
            Ok(None) => continue,
            Err(why) => {
                return vec![format!(
                    "`{}` prints files its repository tracks, which cannot be told: {why}",
                    command.text
                )];
            }
        };
        let at = match repositories
            .iter()
            .position(|(r, _)| r.root == tracked.root)
        {
            Some(at) => at,
            None => {
                let real_root = disk::canonicalize(&tracked.root).unwrap_or(tracked.root.clone());
                repositories.push((tracked, real_root));
                repositories.len() - 1
            }
        };
        runs_in.push((folder.as_str(), at));
    }
    // The folders the objects name, in every repository the command may run in (each
    // looked up among every tracked path: a few words' worth).
    const MAX_OBJECTS: usize = 64;
    if objects.len() > MAX_OBJECTS {
        return vec![format!(
            "`{}` names more than {MAX_OBJECTS} `REV:path` objects, too many to tell files from folders",
            command.text
        )];
    }
    let mut trees = Vec::new();
    for (word, path) in &objects {
        for (folder, at) in &runs_in {
            let (tracked, real_root) = &repositories[*at];
            match object_in_index(path, folder, tracked) {
                Some(Object::File) => {}
                Some(Object::Folder(relative)) => trees.push(real_root.join(relative)),
                None => {
                    return vec![format!(
                        "`{}` names `{word}`, whose path its repository's index lists neither as a file nor as a folder: it may be a folder (a tree), every file below which may be printed",
                        command.text
                    )];
                }
            }
        }
    }
    if !trees.is_empty() {
        // Trees compared with each other print the files below them; a tree alone is
        // compared with the index or the work tree (`git diff HEAD:src`, `git diff-index
        // HEAD:src`), which prints every tracked file, and so is one beside a revision or a
        // pathspec. `git show` and `git cat-file` print a tree's names only.
        let names_only = matches!(facts.subcommand.as_deref(), Some("show" | "cat-file"));
        if others == 0 && !anywhere && (objects.len() > 1 || names_only) {
            below = trees;
        } else {
            anywhere = true;
        }
    } else if !objects.is_empty() && others == 0 && !anywhere {
        // Files only, each judged as its word's operand.
        return Vec::new();
    }
    // `--full-diff` prints every file of a commit that touches the pathspecs.
    anywhere |= facts.options.iter().any(|o| o.canonical == "--full-diff");
    if named_file && below.is_empty() && !anywhere {
        return Vec::new();
    }
    if index_changed {
        return vec![format!(
            "`{}` prints files its repository tracks, which a git command before it in the line may change (`git add`, `git commit`, `git stash`): they are read when the line is judged, not when it runs",
            command.text
        )];
    }
    let within = |path: &Path| {
        anywhere || below.is_empty() || below.iter().any(|folder| path.starts_with(folder))
    };
    let against_index = !changed_before && compares_work_tree_with_index(command, facts);
    let work_tree = prints_work_tree(facts);
    let mut protected: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    // Files of the work tree with other names (hard links), which it may print.
    let mut linked = Vec::new();
    for (tracked, real_root) in &repositories {
        if tracked.paths.len() > git_index::MAX_TRACKED {
            return vec![format!(
                "`{}` prints files its repository tracks: more than {}, too many to check for files the rules protect",
                command.text,
                git_index::MAX_TRACKED
            )];
        }
        for (at, relative) in tracked.paths.iter().enumerate() {
            if !within(&real_root.join(relative)) {
                continue;
            }
            let path = tracked.root.join(relative).to_string_lossy().into_owned();
            // A cache of its own per file (a cache is made for the few strings of one call).
            // What is printed is the committed file, wherever a link on disk leads: its
            // location is as written.
            let mut cache = ParseCache::with_table(Arc::clone(set.commands()));
            cache.seed_path(&path, listed(path.clone(), path.clone(), ctx));
            let file = decide_file(set, ctx, call, (read, Access::Read), &path, &mut cache);
            if let Some(rule) = file
                .reasons
                .iter()
                .filter_map(RuleReason::rule)
                .find(|rule| file.by_rule && rule.decision != Decision::Allow)
                && !(against_index && tracked.unchanged_in_work_tree(at))
            {
                protected
                    .entry(rule.name.to_string())
                    .or_default()
                    .push(relative.clone());
            }
            if work_tree && super::content::other_names(Path::new(&path)).is_some() {
                linked.push(relative.clone());
            }
        }
    }
    let linked = (!linked.is_empty()).then(|| {
        format!(
            "`{}` may print files of the work tree with other names (hard links): {}; one may be a protected file (a secret, `.git/config`) under a name no rule protects",
            command.text,
            named_files(&linked)
        )
    });
    protected
        .into_iter()
        .map(|(rule, files)| {
            format!(
                "`{}` may print files its repository tracks that the rule `{rule}` keeps from reads: {}",
                command.text,
                named_files(&files)
            )
        })
        .chain(linked)
        .collect()
}

/// What the path of a `REV:path` word names, as its repository's index lists its files.
enum Object {
    /// A file: git prints that file (a blob).
    File,
    /// A folder (relative to the work tree, empty for its top): git reads a tree, which
    /// stands for every file below it.
    Folder(String),
}

/// What `path` (of a `REV:path` word given to a command run in `folder`) names in the
/// repository `tracked`: taken from the top of the work tree, or from `folder` when it
/// starts with `./` or `../`, as git takes it. The index is read for the revision's tree,
/// which git's objects alone would tell: `None` when it lists the path neither as a file
/// nor as a folder (removed since, or never added), or when the path leaves the work tree.
fn object_in_index(path: &str, folder: &str, tracked: &git_index::Tracked) -> Option<Object> {
    let relative = if path.starts_with("./") || path.starts_with("../") {
        let root = tracked.root.to_string_lossy();
        let absolute = lexical(&format!("{folder}/{path}"));
        match absolute.strip_prefix(root.trim_end_matches('/')) {
            Some("") => String::new(),
            Some(rest) => rest.strip_prefix('/')?.to_owned(),
            None => return None,
        }
    } else {
        match lexical(path) {
            relative if relative == ".." || relative.starts_with("../") => return None,
            relative => relative,
        }
    };
    if relative.is_empty() {
        return Some(Object::Folder(relative));
    }
    let mut kind = None;
    for tracked in &tracked.paths {
        match tracked.strip_prefix(relative.as_str()) {
            Some("") => kind = Some(Object::File),
            Some(rest) if rest.starts_with('/') => return Some(Object::Folder(relative)),
            _ => {}
        }
    }
    kind
}

/// Whether `facts` may print files of the work tree (not only committed ones): `git diff`
/// but with `--cached`, `--staged` or `--no-index` (in any abbreviation), and `git status`
/// (`-v -v` prints the work tree's changes).
fn prints_work_tree(facts: &CommandFacts) -> bool {
    let committed_only = ["--cached", "--staged", "--no-index"];
    facts.program.as_deref() == Some("git")
        && match facts.subcommand.as_deref() {
            Some("diff") => !facts
                .options
                .iter()
                .any(|o| spells_one_of(&o.canonical, &committed_only)),
            Some("status") => true,
            _ => false,
        }
}

/// Whether `option` (its `=value` aside) is one of the long options `long`, or an
/// abbreviation git takes for one (`--stag` for `--staged`).
fn spells_one_of(option: &str, long: &[&str]) -> bool {
    let name = option.split_once('=').map_or(option, |(name, _)| name);
    name.len() > 2 && long.iter().any(|full| full.starts_with(name))
}

/// Judges each of `paths` as written by `command` (`why`: how it writes it), adding what a
/// rule denies or asks to `outcome`.
fn judge_writes(
    (set, ctx, call, write): (&RuleSet, &MatchContext, &CallFacts<'_>, FileTool<'_>),
    command: &SimpleCommand,
    mut paths: Vec<String>,
    why: &str,
    cache: &mut ParseCache,
    outcome: &mut PartOutcome,
) {
    paths.sort();
    paths.dedup();
    for path in paths {
        let file = decide_file(set, ctx, call, (write, Access::Write), &path, cache);
        if file.by_rule && file.decision != Decision::Allow {
            let how = format!(
                "`{}` writes `{path}` (judged as `{}`: {why})",
                command.text, write.tool
            );
            outcome.add_file_outcome(&command.text, file, how);
        }
    }
}

/// The rule that denies `outcome`, when a rule does.
fn denying_rule(outcome: &PartOutcome) -> Option<String> {
    if !outcome.by_rule {
        return None;
    }
    outcome
        .reasons
        .iter()
        .filter_map(RuleReason::rule)
        .find(|rule| rule.decision == Decision::Deny)
        .map(|rule| rule.name.to_string())
}

/// Whether `path` (absolute) lies outside the workspace, as written or where it leads.
fn outside_workspace(path: &str, ctx: &MatchContext) -> bool {
    match locate(path, ctx) {
        Some(Location::Known { written, resolved }) => {
            written.workspace_side() == WorkspaceSide::Outside
                || resolved
                    .as_ref()
                    .is_some_and(|r| r.workspace_side() == WorkspaceSide::Outside)
        }
        Some(Location::Unknown { .. }) | None => true,
    }
}

/// What a program the table does not know may do to `folder` with everything below it:
/// each file a rule keeps from reads (as a search of it finds them) or from writes, said as
/// a reason to ask (it may do neither). A folder too large to look through asks.
fn judge_unlisted_folder(
    (set, ctx, call, files): (&RuleSet, &MatchContext, &CallFacts<'_>, &FileTools<'_>),
    folder: &str,
    scope: &SearchScope<'_>,
    command: &SimpleCommand,
    cache: &mut ParseCache,
) -> Vec<String> {
    let mut messages = Vec::new();
    if let Some(read) = files.read {
        messages.extend(search_below(
            set, ctx, read, call.modes, folder, scope, command,
        ));
    }
    if let Some(write) = files.write {
        let below = match files_below(folder) {
            Ok(below) => below,
            Err(why) => {
                return [
                    messages,
                    vec![format!("`{}` may rewrite {why}", command.text)],
                ]
                .concat();
            }
        };
        for relative in below {
            let path = format!("{}/{relative}", folder.trim_end_matches('/'));
            let written = decide_file(set, ctx, call, (write, Access::Write), &path, cache);
            if let Some(rule) = denying_rule(&written) {
                messages.push(format!(
                    "`{}` may rewrite `{path}`: the command table does not know the program, and `{rule}` denies writing there",
                    command.text
                ));
                // One is reason enough.
                break;
            }
        }
    }
    messages
}

/// Whether a program the table does not know is told to work recursively: `-r`, `-R`,
/// `--recursive`, or a cluster of short options holding one of them (`gzip -rc`).
fn asks_for_recursion(command: &SimpleCommand) -> bool {
    command
        .words
        .iter()
        .skip(1)
        .filter_map(Word::literal)
        .any(|word| {
            word == "--recursive"
                || word.strip_prefix('-').is_some_and(|cluster| {
                    !cluster.starts_with('-')
                        && cluster.chars().all(|c| c.is_ascii_alphanumeric())
                        && cluster.contains(['r', 'R'])
                })
        })
}

/// The largest patch read to find the files it writes; a larger one asks.
const MAX_PATCH_BYTES: u64 = 8 << 20;

/// The files the patches a command applies write (`patch`, `git apply`, `git am`: a word of
/// role `patch`, `-` for standard input): every path the patch names, with each number of
/// leading folders stripped (as `-p` would), in the folders the command works in. A patch
/// only known when it runs — piped from another command, given by an expansion, missing,
/// written earlier in the line, or too large — asks.
fn judge_patches(
    (set, ctx, call, write): (&RuleSet, &MatchContext, &CallFacts<'_>, FileTool<'_>),
    (command, facts): (&SimpleCommand, &CommandFacts),
    (written_before, folders, home): (bool, &Folders, Option<&str>),
    cache: &mut ParseCache,
    outcome: &mut PartOutcome,
) {
    let mut unknown = |why: String| {
        outcome.add_analysis(
            &command.text,
            format!(
                "`{}` writes the files a patch names, and {why}",
                command.text
            ),
        );
    };
    // Options that only look at the patch write nothing.
    let inspects = |o: &&super::commands::UsedOption| {
        matches!(
            o.canonical.as_str(),
            "--check" | "--stat" | "--numstat" | "--summary" | "--dry-run"
        )
    };
    if facts.options.iter().any(|o| inspects(&o))
        && !facts.options.iter().any(|o| o.canonical == "--apply")
    {
        return;
    }
    let mut texts = Vec::new();
    for role_word in facts.roles.iter().filter(|r| r.role == Role::Patch) {
        // Codex's `apply_patch` takes the patch itself as its operand.
        if facts.program.as_deref() == Some("apply_patch")
            && let Some(text) = role_word
                .word
                .literal()
                .filter(|t| t.contains("*** Begin Patch"))
        {
            texts.push(text.to_owned());
            continue;
        }
        if role_word.word.literal() == Some("-") {
            if command
                .redirections
                .iter()
                .any(|r| r.effect == RedirectEffect::ProcessSubstitution)
            {
                return unknown("the patch is another command's output".to_owned());
            }
            // Standard input: a file or text the line gives it, or another command's output.
            let input = command
                .redirections
                .iter()
                .rev()
                .find_map(|r| match &r.effect {
                    RedirectEffect::Input { from } => Some(from),
                    _ => None,
                });
            match input {
                Some(InputFrom::Text(Some(text))) => texts.push(text.clone()),
                Some(InputFrom::Text(None)) => {
                    return unknown("the text it is given is only known when it runs".to_owned());
                }
                Some(InputFrom::File(word)) => {
                    match read_patch(word, folders, home, written_before) {
                        Ok(text) => texts.push(text),
                        Err(why) => return unknown(why),
                    }
                }
                None if command.piped => {
                    return unknown("the patch is another command's output".to_owned());
                }
                None => {}
            }
            continue;
        }
        match read_patch(&role_word.word, folders, home, written_before) {
            Ok(text) => texts.push(text),
            Err(why) => return unknown(why),
        }
    }
    for text in &texts {
        // A link the patch creates may be written through by a later file of it, and a
        // mail's encoded body hides its paths.
        let lowered = text.to_ascii_lowercase();
        if lowered.contains("mode 120000") {
            return unknown(
                "the patch creates a link, through which it may write anywhere".to_owned(),
            );
        }
        if lowered.contains("content-transfer-encoding: base64")
            || lowered.contains("content-transfer-encoding: quoted-printable")
        {
            return unknown(
                "the mail's body is encoded, which hides the paths it names".to_owned(),
            );
        }
    }
    // Backups are written beside each file (`-B` prefix, `-Y` name prefix, `-z` suffix).
    let value = |name: &str| {
        facts
            .options
            .iter()
            .filter(|o| o.canonical == name)
            .find_map(|o| o.value.as_ref().and_then(Word::literal))
    };
    let (prefix, name_prefix, suffix) = (value("-B"), value("-Y"), value("-z"));
    let written: Vec<String> = texts
        .iter()
        .flat_map(|text| patch_paths(text))
        .flat_map(|path| stripped(&path))
        .flat_map(|path| {
            let (folder, name) = match path.rsplit_once('/') {
                Some((folder, name)) => (format!("{folder}/"), name.to_owned()),
                None => (String::new(), path.clone()),
            };
            let backups = [
                prefix.map(|p| format!("{p}{path}")),
                name_prefix.map(|y| format!("{folder}{y}{name}")),
                suffix.map(|z| format!("{path}{z}")),
            ];
            std::iter::once(path.clone()).chain(backups.into_iter().flatten())
        })
        .flat_map(|path| folders.resolve(&path))
        .collect();
    let judged = (set, ctx, call, write);
    judge_writes(
        judged,
        command,
        written,
        "a file its patch names",
        cache,
        outcome,
    );
}

/// Where `word` leads in each folder the command may run in (a glob as written, its escapes
/// removed); `Err` says why its value is only known when it runs.
fn word_locations(
    word: &Word,
    folders: &Folders,
    home: Option<&str>,
) -> Result<Vec<String>, String> {
    let values = word_values(word, home, &folders.candidates, Dotfiles::Matched)
        .map_err(|why| format!("`{}`: {why}", word.raw))?;
    Ok(values
        .iter()
        .flat_map(|value| folders.resolve(&unescape_glob(value)))
        .collect())
}

/// The text of the patch file `word` names.
fn read_patch(
    word: &Word,
    folders: &Folders,
    home: Option<&str>,
    written_before: bool,
) -> Result<String, String> {
    if written_before {
        return Err("a command before it may change the patch".to_owned());
    }
    // Each folder the command may run in is tried; every patch found there is judged.
    let mut text = String::new();
    let mut found = false;
    for path in word_locations(word, folders, home)? {
        let Ok(meta) = disk::metadata(&path) else {
            continue;
        };
        if meta.len() > MAX_PATCH_BYTES {
            return Err(format!(
                "its patch `{path}` is larger than {MAX_PATCH_BYTES} bytes"
            ));
        }
        // Only a regular file is read, and no more of it than the limit: a FIFO would keep
        // the decision waiting, a device (`/dev/zero`) would fill the memory.
        match content::read_regular(Path::new(&path), MAX_PATCH_BYTES + 1) {
            Some(read) if read.len() as u64 <= MAX_PATCH_BYTES => text.push_str(&read),
            Some(_) => {
                return Err(format!(
                    "its patch `{path}` is larger than {MAX_PATCH_BYTES} bytes"
                ));
            }
            None => {
                return Err(format!(
                    "its patch `{path}` cannot be read as a regular file (a FIFO, a device, or unreadable)"
                ));
            }
        }
        text.push('\n');
        found = true;
    }
    if !found {
        return Err(format!("its patch `{}` is not there to read", word.raw));
    }
    Ok(text)
}

/// The most entries of an archive judged one by one; a larger one asks.
const MAX_ARCHIVE_ENTRIES: usize = 10_000;

/// The files an archive a command unpacks writes (`unzip`, `7z x`: a word of role
/// `unpack`): every entry of the zip's directory, in the folders the command works in (its
/// `-d` folder), with `\` as a separator too, in lower case with `-L`, and under its own
/// name alone with `-j` (`7z e`). unzip's listing, testing and printing (`-l`, `-v`, `-t`,
/// `-Z`, `-p`, `-c`, `-z`) write nothing. An archive whose entries cannot be listed — not a
/// zip, missing, given by an expansion, written earlier in the line, holding a link through
/// which later entries would write, or too large — or an option the table does not know
/// asks.
fn judge_unpacked(
    judged: (&RuleSet, &MatchContext, &CallFacts<'_>, FileTool<'_>),
    (command, facts): (&SimpleCommand, &CommandFacts),
    (written_before, folders, home): (bool, &Folders, Option<&str>),
    cache: &mut ParseCache,
    outcome: &mut PartOutcome,
) {
    let archives: Vec<&Word> = facts
        .roles
        .iter()
        .filter(|r| r.role == Role::Unpack)
        .map(|r| &r.word)
        .collect();
    let used = |name: &str| {
        facts
            .options
            .iter()
            .any(|o| o.canonical == name && o.info.is_some())
    };
    if archives.is_empty() {
        return;
    }
    // An option the table does not know may change where or how entries are written
    // (7z's `-spf` keeps absolute paths, `-snl` makes links).
    let unknown_option = facts.options.iter().find(|o| o.info.is_none());
    let lists_only = facts.program.as_deref() == Some("unzip")
        && ["-l", "-v", "-t", "-Z", "-p", "-c", "-z"]
            .iter()
            .any(|o| used(o));
    if unknown_option.is_none() && lists_only {
        return;
    }
    let mut unknown = |why: String| {
        outcome.add_analysis(
            &command.text,
            format!(
                "`{}` writes the files its archive holds, and {why}",
                command.text
            ),
        );
    };
    if let Some(option) = unknown_option {
        return unknown(format!(
            "its option `{}` is not in the command table",
            option.canonical
        ));
    }

    let mut written = Vec::new();
    for word in archives {
        if written_before {
            return unknown("a command before it may change the archive".to_owned());
        }
        let paths = match word_locations(word, folders, home) {
            Ok(paths) => paths,
            Err(why) => return unknown(why),
        };
        let mut found = false;
        for path in paths {
            // `unzip x` also tries `x.zip`.
            let Some(path) = [path.clone(), format!("{path}.zip")]
                .into_iter()
                .find(|p| disk::is_file(p))
            else {
                continue;
            };
            match zip_entries(&path) {
                Ok(entries) => written.extend(entries),
                Err(why) => return unknown(format!("its archive `{path}` {why}")),
            }
            found = true;
        }
        if !found {
            return unknown(format!("its archive `{}` is not there to read", word.raw));
        }
    }
    let junk_paths = used("-j") || facts.subcommand.as_deref() == Some("e");
    // unzip reads `\` as a folder separator in archives made on DOS or Windows, and `-L`
    // writes names in lower case.
    let lower_case = used("-L");
    let written: Vec<String> = written
        .iter()
        .flat_map(|entry| {
            let slashed = entry.replace('\\', "/");
            let lowered = lower_case.then(|| slashed.to_lowercase());
            [Some(entry.clone()), Some(slashed), lowered]
                .into_iter()
                .flatten()
        })
        .flat_map(|entry| {
            let name = entry.rsplit('/').next().unwrap_or(&entry).to_owned();
            let junked = junk_paths.then_some(name);
            std::iter::once(entry).chain(junked)
        })
        .flat_map(|path| folders.resolve(&path))
        .collect();
    judge_writes(
        judged,
        command,
        written,
        "a file its archive holds",
        cache,
        outcome,
    );
}

/// The names of the entries of the zip archive at `path`; `Err` says why they cannot be
/// known.
fn zip_entries(path: &str) -> Result<Vec<String>, String> {
    let file = content::open_regular(Path::new(path))
        .ok_or_else(|| "cannot be read as a regular file".to_owned())?;
    let mut archive = zip::ZipArchive::new(std::io::BufReader::new(file))
        .map_err(|error| format!("is not a zip archive whose entries can be listed ({error})"))?;
    if archive.len() > MAX_ARCHIVE_ENTRIES {
        return Err(format!("holds more than {MAX_ARCHIVE_ENTRIES} entries"));
    }
    let mut entries = Vec::with_capacity(archive.len());
    for index in 0..archive.len() {
        let entry = archive
            .by_index_raw(index)
            .map_err(|error| format!("has an entry that cannot be read ({error})"))?;
        if entry.is_symlink() {
            return Err("holds a link, through which later entries may write anywhere".to_owned());
        }
        // The name as stored, and the Unicode one an extra field may give (`unzip -UU`
        // uses the first).
        let stored = String::from_utf8_lossy(entry.name_raw()).into_owned();
        let name = entry
            .name()
            .map_err(|error| format!("has an entry whose name cannot be read ({error})"))?;
        for name in [stored.as_str(), &name] {
            let name = name.trim_end_matches('/').to_owned();
            if !entries.contains(&name) {
                entries.push(name);
            }
        }
    }
    Ok(entries)
}

/// The paths a patch names: its `---` and `+++` lines (up to a tab), git's `diff --git`
/// names (split at every space, as a name may hold one), renames and copies, `Index:` and
/// context diffs' `***` lines, and Codex's `*** Add File:`, `*** Update File:`, `*** Delete
/// File:` and `*** Move to:` headers. C-quoted names (`"a/\056git/config"`) are unquoted as
/// git writes them; `/dev/null` names nothing.
fn patch_paths(text: &str) -> Vec<String> {
    let mut paths = Vec::new();
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        // Codex's format (`*** Add File: x`, read after the line's leading blanks).
        let codex = [
            "*** Add File:",
            "*** Update File:",
            "*** Delete File:",
            "*** Move to:",
        ]
        .iter()
        .find_map(|header| line.trim_start().strip_prefix(header));
        if let Some(path) = codex.map(str::trim).filter(|p| !p.is_empty()) {
            paths.push(path.to_owned());
            continue;
        }
        if let Some(names) = line.strip_prefix("diff --git ") {
            if names.starts_with('"') {
                let (first, rest) = c_unquoted(names);
                paths.push(first);
                paths.push(c_unquoted(rest.trim_start()).0);
            } else {
                for (at, _) in names.match_indices(' ') {
                    paths.push(names[..at].to_owned());
                    paths.push(names[at + 1..].to_owned());
                }
            }
            continue;
        }
        let named = [
            "--- ",
            "+++ ",
            "*** ",
            "Index: ",
            "rename from ",
            "rename to ",
            "copy from ",
            "copy to ",
        ]
        .iter()
        .find_map(|prefix| line.strip_prefix(prefix));
        let Some(name) = named else { continue };
        if line.starts_with("*** ") && line.ends_with("****") {
            // A context diff's hunk line (`*** 1,5 ****`).
            continue;
        }
        let name = if name.starts_with('"') {
            c_unquoted(name).0
        } else {
            name.split('\t')
                .next()
                .unwrap_or(name)
                .trim_end()
                .to_owned()
        };
        if !name.is_empty() && name != "/dev/null" {
            paths.push(name);
        }
    }
    paths
}

/// A C-quoted name at the start of `text` (as git quotes one), and what follows it.
fn c_unquoted(text: &str) -> (String, &str) {
    let Some(body) = text.strip_prefix('"') else {
        return (text.to_owned(), "");
    };
    let mut bytes = Vec::new();
    let mut chars = body.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => {
                return (
                    String::from_utf8_lossy(&bytes).into_owned(),
                    &body[at + 1..],
                );
            }
            '\\' => match chars.next().map(|(_, c)| c) {
                Some(d @ '0'..='7') => {
                    let mut value = d.to_digit(8).unwrap_or(0);
                    for _ in 0..2 {
                        match chars.clone().next() {
                            Some((_, d @ '0'..='7')) => {
                                chars.next();
                                value = value * 8 + d.to_digit(8).unwrap_or(0);
                            }
                            _ => break,
                        }
                    }
                    bytes.push(value as u8);
                }
                Some('n') => bytes.push(b'\n'),
                Some('t') => bytes.push(b'\t'),
                Some(other) => {
                    let mut buffer = [0; 4];
                    bytes.extend(other.encode_utf8(&mut buffer).as_bytes());
                }
                None => {}
            },
            other => {
                let mut buffer = [0; 4];
                bytes.extend(other.encode_utf8(&mut buffer).as_bytes());
            }
        }
    }
    (String::from_utf8_lossy(&bytes).into_owned(), "")
}

/// `path` with each number of its leading folders stripped (`a/.git/config`,
/// `.git/config`, `config`), as `-p` chooses: every one is judged.
fn stripped(path: &str) -> Vec<String> {
    let mut found = vec![path.to_owned()];
    let mut rest = path.trim_start_matches('/');
    while let Some((_, tail)) = rest.split_once('/') {
        rest = tail.trim_start_matches('/');
        if !rest.is_empty() {
            found.push(rest.to_owned());
        }
    }
    found
}

/// The paths below `folder`, relative to it (none when it is not a folder), without
/// following links; `Err` past [`MAX_GLOB_ENTRIES`] entries.
fn files_below(folder: &str) -> Result<Vec<String>, String> {
    let mut found = Vec::new();
    if !disk::is_dir(folder) {
        return Ok(found);
    }
    let mut folders = vec![String::new()];
    while let Some(relative) = folders.pop() {
        let listed = if relative.is_empty() {
            folder.to_owned()
        } else {
            format!("{folder}/{relative}")
        };
        let Ok(entries) = std::fs::read_dir(&listed) else {
            continue;
        };
        for entry in entries.flatten() {
            if found.len() >= MAX_GLOB_ENTRIES {
                return Err(format!(
                    "`{folder}` holds more than {MAX_GLOB_ENTRIES} entries, so what is written cannot all be judged"
                ));
            }
            if !disk::walked(1) {
                return Err(disk::walked_too_much());
            }
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let below = if relative.is_empty() {
                name.to_owned()
            } else {
                format!("{relative}/{name}")
            };
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                folders.push(below.clone());
            }
            found.push(below);
        }
    }
    Ok(found)
}

/// What `command` may read below `folder` (an absolute path), a folder it searches with
/// everything below it leaving out `skips` (see [`search`](super::search)).
#[allow(clippy::too_many_arguments)]
fn search_below(
    set: &RuleSet,
    ctx: &MatchContext,
    read: FileTool<'_>,
    modes: &[crate::model::ModeName],
    folder: &str,
    scope: &SearchScope<'_>,
    command: &SimpleCommand,
) -> Vec<String> {
    // A file operand is judged as a read already.
    if !disk::is_dir(folder) {
        return Vec::new();
    }
    let Some(location) = locate(folder, ctx) else {
        return Vec::new();
    };
    let what = format!("`{}`", command.text);
    let Some(below) = Below::of(&location, &what) else {
        return Vec::new();
    };
    let walk = Walk::new(
        scope.skips,
        scope.globs.iter().copied(),
        &[below.real, ctx.workspace_root()],
    );
    let reader = Reader {
        tool: read.tool,
        flags: read.flags,
        modes,
    };
    // A command's search is not known to print every line: each finding asks.
    judge_below(set, ctx, reader, below, &walk)
        .into_iter()
        .map(|(_, message)| message)
        .collect()
}

/// What a command's searches of folders leave out, and the globs they are limited to.
struct SearchScope<'a> {
    skips: &'a [SearchSkip],
    globs: Vec<&'a str>,
}

impl<'a> SearchScope<'a> {
    /// The scope of `facts`' searches: what the program leaves out (nothing when the line
    /// may change files first) and its `search_glob` values.
    fn of(facts: &'a CommandFacts, changes_files: bool) -> Self {
        let globs: Option<Vec<&str>> = facts
            .roles
            .iter()
            .filter(|r| r.role == Role::SearchGlob)
            .map(|r| r.word.literal())
            .collect();
        match globs {
            Some(globs) => Self {
                skips: if changes_files {
                    &[]
                } else {
                    &facts.search_skips
                },
                globs,
            },
            // A glob only known at run time limits nothing and may bring anything back.
            None => Self {
                skips: &[],
                globs: Vec::new(),
            },
        }
    }
}

/// Whether a command runs code it finds in the folder it runs in: git (its repository's
/// `config`), or a program whose table entry runs code (`npm test`, `cargo build`).
fn runs_folder_code(facts: &CommandFacts) -> bool {
    facts.program.as_deref() == Some("git")
        || facts
            .effects
            .iter()
            .any(|e| e.effect == Effect::Exec && e.from == EffectFrom::Program)
}

/// The files a git `revision_or_path` operand may read: [`git_path`], and the text after
/// its last `:` as well, which is the file of a `log -L` range however the range is
/// written (`-L/re/,+1:file`, `-L:func:file`).
fn git_paths(value: &str) -> Vec<String> {
    let path = git_path(value);
    let mut paths = match value.rsplit_once(':') {
        Some((_, last)) if !last.is_empty() && last != path => vec![path, last.to_owned()],
        _ => vec![path],
    };
    // `:(icase)` in lower case as well, as the rules name files (`:(icase)**/.ENV`).
    if let Some(rest) = value.strip_prefix(":(")
        && let Some((magic, path)) = rest.split_once(')')
        && magic.split(',').any(|word| word.trim() == "icase")
    {
        paths.push(unescape_glob(path).to_lowercase());
    }
    paths
}

/// The file a git `revision_or_path` operand reads, from its value as [`word_values`] gives
/// it: `REV:path` and `:N:path` name `path` in a revision or in the index, exactly as
/// written; anything else is a pathspec (or a revision, judged as a path all the same),
/// whose magic (`:(glob)`, `:(top)`, `:/`) is dropped and whose wildcards git expands
/// itself, quoted or not (`'.e[n]v'` is `.env`) — but for `:(literal)`. `:(icase)` matches
/// any case (`:(icase).ENV` is `.env`), and an exclusion (`:!src`, `:(exclude)src`) leaves
/// everything else: the folder it runs in.
fn git_path(value: &str) -> String {
    let Some(rest) = value.strip_prefix(':') else {
        return match value.split_once(':') {
            Some((_, path)) if !value.starts_with('/') => path.to_owned(),
            _ => unescape_glob(value),
        };
    };
    if let Some(rest) = rest.strip_prefix('(') {
        let (magic, path) = rest.split_once(')').unwrap_or(("", rest));
        let has = |name: &str| magic.split(',').any(|word| word.trim() == name);
        return if has("exclude") || path.is_empty() {
            // `:(top)`, `:(attr:…)` alone: every file.
            ".".to_owned()
        } else if has("literal") {
            path.to_owned()
        } else if has("icase") {
            any_case(&unescape_glob(path))
        } else {
            unescape_glob(path)
        };
    }
    match rest.split_once(':') {
        Some((stage, path)) if stage.len() == 1 && stage.chars().all(|c| c.is_ascii_digit()) => {
            path.to_owned()
        }
        _ if rest.starts_with(['!', '^']) => ".".to_owned(),
        // `:/` alone is the top of the repository.
        _ => match unescape_glob(rest.trim_start_matches('/')) {
            path if path.is_empty() => ".".to_owned(),
            path => path,
        },
    }
}

/// A path as a glob of every component (globs are expanded ignoring case): each component
/// without a wildcard has its first character put in brackets (`.ENV` is `[.]ENV`).
fn any_case(path: &str) -> String {
    path.split('/')
        .map(|component| {
            let mut chars = component.chars();
            match chars.next() {
                Some(first)
                    if !has_glob(component) && !matches!(first, '\\' | ']' | '-' | '!' | '^') =>
                {
                    format!("[{first}]{}", chars.as_str())
                }
                _ => component.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The folder a file path names lies in (`.` for a bare name).
fn folder_of(file: &str) -> String {
    match file.rsplit_once('/') {
        Some(("", _)) => "/".to_owned(),
        Some((folder, _)) => folder.to_owned(),
        None => ".".to_owned(),
    }
}

/// The values a word takes, as bash would expand it: `~`, `$HOME`, `$PWD`, braces; globs are
/// left for [`expand_glob`] (kept with their unquoted glob characters, quoted ones escaped).
/// `Err` says why the value cannot be known.
fn word_values(
    word: &Word,
    home: Option<&str>,
    folders: &[String],
    dotfiles: Dotfiles,
) -> Result<Vec<String>, String> {
    if let Some(value) = word.literal() {
        return Ok(vec![escape_glob(value)]);
    }
    if word.kind == WordKind::Dynamic(super::shell::Expansion::LoopGlob) {
        return loop_glob_values(word, home, folders, dotfiles);
    }
    if let WordKind::Opaque(expansion) | WordKind::Dynamic(expansion) = word.kind
        && matches!(
            expansion,
            super::shell::Expansion::CommandSubstitution
                | super::shell::Expansion::ProcessSubstitution
                | super::shell::Expansion::RuntimeArguments
                | super::shell::Expansion::FoundPath
        )
    {
        return Err(format!(
            "its {expansion} is only known when it runs, so the file cannot be judged"
        ));
    }
    let mut values = Vec::new();
    for raw in expand_braces(&word.raw)? {
        let mut found = Found::default();
        let parts = split_word(&raw, &mut found).map_err(|e| e.message)?;
        if !found.substitutions.is_empty() {
            return Err(
                "its command substitution is only known when it runs, so the file cannot be judged"
                    .to_owned(),
            );
        }
        let tilde_at = unquoted_expansions(&parts).tilde;
        let mut value = String::new();
        for (index, part) in parts.iter().enumerate() {
            match part {
                Part::Text {
                    text,
                    quoting: Quoting::Unquoted,
                    start,
                } => {
                    if index == 0 && tilde_at == Some(*start) {
                        let rest = &text[1..];
                        // `~+` is `$PWD`: the folder the command runs in.
                        if let Some(after) = rest.strip_prefix('+')
                            && (after.is_empty() || after.starts_with('/'))
                        {
                            match folders {
                                [folder] => value.push_str(folder),
                                _ => value.push('.'),
                            }
                            value.push_str(after);
                            continue;
                        }
                        if !(rest.is_empty() || rest.starts_with('/')) {
                            return Err(format!("`{text}` names another user's home"));
                        }
                        value.push_str(home.ok_or("the home folder is not known")?);
                        value.push_str(rest);
                    } else {
                        value.push_str(text);
                    }
                }
                Part::Text { text, .. } => value.push_str(&escape_glob(text)),
                Part::Expansion { start, .. } => {
                    let name = parameter_name(&raw[*start..]).ok_or_else(|| {
                        format!("`{raw}` is expanded when it runs, so the file cannot be judged")
                    })?;
                    match name {
                        "HOME" => value.push_str(home.ok_or("the home folder is not known")?),
                        // With several candidate folders, `$PWD` is each of them: a relative
                        // value stands for it.
                        "PWD" if folders.len() == 1 => value.push_str(&folders[0]),
                        "PWD" => value.push('.'),
                        other => {
                            return Err(format!(
                                "`${other}` is only known when it runs, so the file cannot be judged"
                            ));
                        }
                    }
                }
            }
        }
        values.push(value);
    }
    Ok(values)
}

/// The name of a plain parameter reference at the start of `text` (`$NAME`, `${NAME}`, and
/// zsh's `$~NAME`, `$^NAME`, `$=NAME`, which expand it too).
fn parameter_name(text: &str) -> Option<&str> {
    let rest = text.strip_prefix('$')?;
    let (name, _) = match rest.strip_prefix('{') {
        Some(inner) => {
            let inner = inner.strip_prefix(['~', '^', '=']).unwrap_or(inner);
            let end = inner.find('}')?;
            (&inner[..end], ())
        }
        None => {
            let rest = rest.strip_prefix(['~', '^', '=']).unwrap_or(rest);
            (&rest[..name_length(rest)], ())
        }
    };
    (!name.is_empty() && name.chars().all(name_char)).then_some(name)
}

/// Whether the line may make wildcards reach names that start with `.`: bash's `dotglob`
/// (`shopt -s dotglob`, `bash -O dotglob`), a `GLOBIGNORE` or zsh's `GLOB_DOTS` (`setopt
/// globdots`; zsh ignores case and `_` in option names, so any case and `_` between the
/// letters count), named anywhere in it, also as a word's value after quote removal
/// (`dotgl""ob`) or an assigned value.
fn turns_on_dotglob(line: &str, script: &Script) -> bool {
    static NAMES: LazyLock<Option<Regex>> = LazyLock::new(|| {
        let spelled = |name: &str| {
            name.chars()
                .map(String::from)
                .collect::<Vec<_>>()
                .join("_*")
        };
        let names = ["dotglob", "globdots", "globignore"].map(spelled).join("|");
        Regex::new(&format!("(?i){names}")).ok()
    });
    // (A pattern that did not build would find the names everywhere.)
    let names = |text: &str| NAMES.as_ref().is_none_or(|names| names.is_match(text));
    // A word only known when it runs may name it, given to what sets shell options
    // (`shopt -s d{o,o}tglob`, `setopt $(echo globdots)`, `bash -O "$X"`).
    let sets_options = |command: &&crate::policy::shell::SimpleCommand| {
        command
            .command_word()
            .and_then(Word::literal)
            .is_some_and(|name| {
                let name = name.rsplit('/').next().unwrap_or(name);
                matches!(
                    name,
                    "shopt" | "set" | "setopt" | "unsetopt" | "emulate" | "bash" | "sh" | "zsh"
                )
            })
    };
    names(line)
        || script.commands.iter().any(|command| {
            command
                .words
                .iter()
                .chain(command.assignments.iter().map(|a| &a.value))
                .filter_map(Word::literal)
                .any(names)
        })
        || script
            .commands
            .iter()
            .filter(sets_options)
            .any(|command| command.words.iter().any(|w| w.literal().is_none()))
}

/// Whether a glob's wildcards reach names that start with `.`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Dotfiles {
    /// Only a `.` written there reaches them, as in bash without `dotglob`: `*` does not
    /// reach `.env`, `.e*` does.
    Explicit,
    /// Wildcards reach them too (bash's `dotglob`, git's pathspecs).
    Matched,
}

/// Whether `folder`, or a folder above it below `root`, holds a `HEAD`: the start of a
/// repository's layout, which `mkdir` of `refs/` or `objects/` completes.
fn holds_head(folder: &str, root: &str) -> bool {
    Path::new(folder)
        .ancestors()
        .take_while(|dir| *dir != Path::new(root))
        .any(|dir| disk::symlink_metadata(dir.join("HEAD")).is_ok())
}

/// Whether a command may write content a later command reads as a patch, an archive or a
/// repository: any that is not read-only but `mkdir` and `touch` (which may still complete
/// a repository's layout of folders, see [`holds_head`]).
fn writes_content(command: &SimpleCommand, facts: &CommandFacts) -> bool {
    may_change_files(command, facts) && !matches!(facts.program.as_deref(), Some("mkdir" | "touch"))
}

/// Whether a command may change the file system: any that is not read-only, but a wrapper
/// (`timeout`, `nice`), whose command is judged as its own entry.
fn may_change_files(command: &SimpleCommand, facts: &CommandFacts) -> bool {
    !facts.read_only && command.role != ShellRole::TransparentWrapper
}

/// Whether a command may change what its repository's index lists: git's commands that
/// are not read-only (`git add`, `git commit`, `git stash`, `git reset`, `git checkout`).
fn changes_index(command: &SimpleCommand, facts: &CommandFacts) -> bool {
    facts.program.as_deref() == Some("git") && may_change_files(command, facts)
}

/// Per command of a line (`commands`, in order; `None` for a part with none), whether
/// another that may run before it does what `does` says: one before it in the line, or,
/// for a command in a loop's body, a pipeline or a `&` list, any other such command (it
/// may run after, or while, it) and any after it (one in a `&` list runs while the
/// commands after it do).
fn done_before(
    commands: &[Option<(&SimpleCommand, &CommandFacts)>],
    does: fn(&SimpleCommand, &CommandFacts) -> bool,
) -> Vec<bool> {
    let each: Vec<(bool, bool)> = commands
        .iter()
        .map(|part| part.map_or((false, false), |(c, f)| (c.overlaps, does(c, f))))
        .collect();
    let overlapping = each
        .iter()
        .filter(|(overlaps, done)| *overlaps && *done)
        .count();
    let mut later = vec![false; each.len()];
    let mut after = false;
    for (at, (_, done)) in each.iter().enumerate().rev() {
        later[at] = after;
        after |= done;
    }
    let mut before = false;
    each.iter()
        .zip(later)
        .map(|(&(overlaps, done), later)| {
            let here = before || (overlaps && (later || overlapping > usize::from(done)));
            before |= done;
            here
        })
        .collect()
}

/// Why `command` may turn on `allexport` (`set -a`, `set -o allexport`, or a word only
/// known when it runs): every variable set after it (by `read`, a `for` loop, `NAME=…`) is
/// then exported to the commands after it, unseen. `keyword` (`set -k`) does the same
/// with every `NAME=value` word of a later command, and history expansion (`set -H`, `-o
/// history`) rewrites later lines (`!!:$` pastes the last word of the line before, quotes
/// and all) after they were judged.
fn exports_everything(command: &SimpleCommand) -> Option<String> {
    if command.command_word()?.literal()? != "set" {
        return None;
    }
    // Options end at `--`; what follows sets the positional parameters.
    let words: Vec<&Word> = command.words[1..]
        .iter()
        .take_while(|w| w.literal() != Some("--"))
        .collect();
    let turns_on = words
        .iter()
        .enumerate()
        .any(|(at, word)| match word.literal() {
            // A word only known when it runs may be `-a`.
            None => true,
            // `-o NAME`, also at the end of a cluster (`-euo allexport`).
            Some(option) if option.starts_with('-') && !option.starts_with("--") => {
                option.contains(['a', 'k', 'H'])
                    || (option.ends_with('o')
                        && words.get(at + 1).is_some_and(|next| {
                            matches!(
                                next.literal(),
                                None | Some("allexport" | "keyword" | "histexpand" | "history")
                            )
                        }))
            }
            Some(_) => false,
        });
    turns_on.then(|| {
        format!(
            "`{}` may export every variable set after it (`allexport`, `keyword`) or expand history in later lines (`histexpand`), which changes what later commands do",
            command.text
        )
    })
}

/// Why `command` prints variables the command table calls secret, as `echo $GITHUB_TOKEN`
/// would: the whole environment (`env`, `printenv`, `set`, `export -p`, `declare -p`, `make
/// -p`, `npm run env`) or
/// a secret one by name (`printenv GITHUB_TOKEN`, `declare -p API_KEY`); or the token gh
/// signs in with (`gh auth token`, `gh auth status --show-token`).
fn prints_secrets(
    command: &SimpleCommand,
    table: &super::commands::CommandTable,
) -> Option<String> {
    let name = command.command_word()?.literal()?;
    let args: Vec<&str> = command.words[1..]
        .iter()
        .filter_map(Word::literal)
        .collect();
    if args.len() + 1 < command.words.len() {
        // An argument only known when it runs may name a secret, or be nothing at all
        // (`printenv $(true)` prints every variable).
        let prints = match name {
            "printenv" | "set" | "export" | "declare" | "typeset" | "readonly" => true,
            "env" => !command.wraps,
            // (`gh auth token`, or a subcommand only known when it runs.)
            "gh" => command
                .words
                .get(1)
                .and_then(Word::literal)
                .is_none_or(|first| first == "auth"),
            _ => false,
        };
        return prints.then(|| {
            format!(
                "`{}` prints what a word only known when it runs names: every variable, or a secret one (`env` in the command table)",
                command.text
            )
        });
    }
    let operands: Vec<&str> = args
        .iter()
        .copied()
        .filter(|a| !a.starts_with('-'))
        .collect();
    let gh_token = name == "gh"
        && match operands.as_slice() {
            ["auth", "token", ..] => true,
            ["auth", "status", ..] => args.iter().any(|a| {
                *a == "--show-token"
                    || (a.starts_with('-') && !a.starts_with("--") && a.contains('t'))
            }),
            _ => false,
        };
    if gh_token {
        return Some(format!(
            "`{}` prints the token gh signs in with, a secret",
            command.text
        ));
    }
    let dumps = match name {
        // `env` with nothing to run prints the environment (its assignments included).
        "env" => !command.wraps && operands.iter().all(|o| o.contains('=')),
        "printenv" => operands.is_empty(),
        "set" => args.is_empty(),
        // (`declare -f` and `-F` print functions.)
        "export" | "declare" | "typeset" | "readonly" => {
            operands.is_empty()
                && !args
                    .iter()
                    .any(|a| a.starts_with('-') && a.contains(['f', 'F']))
        }
        // make's database (`-p`) holds every variable of the environment.
        // (Any unambiguous prefix of a long option is that option: `--print-data`.)
        "make" => args.iter().any(|a| {
            (a.len() >= "--print-da".len() && "--print-data-base".starts_with(a))
                || (a.starts_with('-') && !a.starts_with("--") && a.contains('p'))
        }),
        // npm's built-in `env` script.
        "npm" => matches!(
            operands.as_slice(),
            [run, "env", ..] if matches!(*run, "run" | "run-script" | "rum" | "urn")
        ),
        _ => return None,
    };
    let named = match name {
        "printenv" | "declare" | "typeset" => operands.iter().find(|o| table.secret_env(o)),
        _ => None,
    };
    if dumps {
        Some(format!(
            "`{}` prints every variable, the secret ones among them (`env` in the command table)",
            command.text
        ))
    } else {
        named.map(|name| {
            format!(
                "`{}` prints `{name}`, which holds a secret (`env` in the command table)",
                command.text
            )
        })
    }
}

/// The files a word given to a program the table does not know may name: the word, each
/// part of it joined by `:` or `,` (`-v ~/.ssh:/root/.ssh`, `PATH`-like lists,
/// `a.txt,b.txt`), what follows a `NAME=` in each (`--x=$HOME/.aws/credentials`, `--mount
/// type=bind,src=…`), and a file named with a leading `@` (`body=@.env`, which curl, gh and
/// HTTPie read). A `~` these leave is judged as the home folder: many programs expand it
/// themselves.
fn unlisted_pieces(value: &str, home: Option<&str>) -> Vec<String> {
    let mut pieces = vec![value.to_owned()];
    let parts = value.split([':', ',']).filter(|part| !part.is_empty());
    for part in std::iter::once(value).chain(parts) {
        let after_name = part.split_once('=').map(|(_, after)| after);
        for piece in std::iter::once(part).chain(after_name) {
            let unprefixed = piece.strip_prefix('@');
            for piece in std::iter::once(piece).chain(unprefixed) {
                let at_home = home.and_then(|home| match piece.strip_prefix('~')? {
                    "" => Some(home.to_owned()),
                    rest if rest.starts_with('/') => Some(format!("{home}{rest}")),
                    _ => None,
                });
                for piece in std::iter::once(piece.to_owned()).chain(at_home) {
                    if !piece.is_empty() && !pieces.contains(&piece) {
                        pieces.push(piece);
                    }
                }
            }
        }
    }
    pieces
}

/// The values of an unquoted loop variable bound to a glob (`for f in src/*.rs; do wc -l
/// $f; done`): each match, in each folder the command may run in, as the shell leaves it
/// after splitting it at blanks and globbing it again — itself, unless it holds a blank or a
/// glob character, which makes other words of it (`src/x .env` is `src/x` and `.env`):
/// then `Err`.
fn loop_glob_values(
    word: &Word,
    home: Option<&str>,
    folders: &[String],
    dotfiles: Dotfiles,
) -> Result<Vec<String>, String> {
    let glob = Word::dynamic(&word.raw, super::shell::Expansion::Glob);
    let mut values = Vec::new();
    for pattern in word_values(&glob, home, folders, dotfiles)? {
        let bases: Vec<&str> = if pattern.starts_with('/') {
            vec![""]
        } else {
            folders.iter().map(String::as_str).collect()
        };
        for base in bases {
            let path = if base.is_empty() {
                pattern.clone()
            } else {
                format!("{}/{pattern}", base.trim_end_matches('/'))
            };
            for matched in expand_glob(&path, dotfiles)? {
                let value = matched
                    .strip_prefix(base)
                    .map_or(matched.as_str(), |rest| rest.trim_start_matches('/'));
                if value.contains([' ', '\t', '\n', '*', '?', '[', '(', '\\']) {
                    return Err(format!(
                        "`{value}`, which `{}` gives the loop's variable, is split and globbed again where the variable stands unquoted, into words only known when it runs",
                        word.raw
                    ));
                }
                values.push(escape_glob(&matched));
            }
        }
    }
    Ok(values)
}

/// The files a (possibly glob) path names now, as bash would expand it; the path itself
/// (unescaped) when it has no glob or matches nothing. A path ending in `/` names folders
/// only (`*/`). `Err` when the glob reaches more than can be looked at (it is then asked,
/// never judged by its spelling).
fn expand_glob(path: &str, dotfiles: Dotfiles) -> Result<Vec<String>, String> {
    if !has_glob(path) {
        return Ok(vec![unescape_glob(path)]);
    }
    let too_many = || {
        Err(format!(
            "the glob reaches more than {MAX_EXPANSIONS} files or {MAX_GLOB_ENTRIES} folder entries, so its files cannot all be judged"
        ))
    };
    let mut bases = vec![String::new()];
    let mut read = 0usize;
    let components: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    for (at, &component) in components.iter().enumerate() {
        let mut next = Vec::new();
        if component == "**" {
            // Any depth, as with bash's `globstar` and in zsh (without `globstar` bash reads
            // it as `*`, which reaches less): the folder itself and every folder below it,
            // and as the last component every file below it too.
            let last = at + 1 == components.len();
            for base in &bases {
                if !last {
                    next.push(base.clone());
                }
                let mut folders = vec![base.clone()];
                while let Some(folder) = folders.pop() {
                    let listed = if folder.is_empty() {
                        "/"
                    } else {
                        folder.as_str()
                    };
                    let Ok(entries) = disk::list(listed, MAX_GLOB_ENTRIES + 1) else {
                        continue;
                    };
                    for entry in entries.iter() {
                        read += 1;
                        if read > MAX_GLOB_ENTRIES || next.len() > MAX_EXPANSIONS {
                            return too_many();
                        }
                        if !disk::walked(1) {
                            return Err(disk::walked_too_much());
                        }
                        let Some(name) = entry.name.to_str() else {
                            continue;
                        };
                        if dotfiles == Dotfiles::Explicit && name.starts_with('.') {
                            continue;
                        }
                        let below = format!("{folder}/{name}");
                        // Links to folders are not followed, as bash does not.
                        if entry.is_dir {
                            folders.push(below.clone());
                            next.push(below);
                        } else if last {
                            next.push(below);
                        }
                    }
                }
            }
        } else if has_glob(component) {
            let hidden_reached = dotfiles == Dotfiles::Matched
                || component.starts_with('.')
                || component.starts_with("\\.");
            // A pattern written with a leading `.` matches `.` and `..` in POSIX sh (dash),
            // bash before 5.2 and bash with `globskipdots` off: `.*/.*/.aws` leaves the
            // workspace.
            let dot_entries: &[&str] = if component.starts_with('.') || component.starts_with("\\.")
            {
                &[".", ".."]
            } else {
                &[]
            };
            let listed = with_component_glob(component, |matcher| {
                for base in &bases {
                    let folder = if base.is_empty() { "/" } else { base.as_str() };
                    let Ok(entries) = disk::list(folder, MAX_GLOB_ENTRIES + 1) else {
                        continue;
                    };
                    for dots in dot_entries {
                        if matcher.matches(dots) {
                            next.push(format!("{base}/{dots}"));
                        }
                    }
                    for entry in entries.iter() {
                        read += 1;
                        // (Past the line's budget of walked entries too.)
                        if read > MAX_GLOB_ENTRIES
                            || next.len() > MAX_EXPANSIONS
                            || !disk::walked(1)
                        {
                            return false;
                        }
                        let Some(name) = entry.name.to_str() else {
                            continue;
                        };
                        if matcher.matches(name) && (hidden_reached || !name.starts_with('.')) {
                            next.push(format!("{base}/{name}"));
                        }
                    }
                }
                true
            });
            match listed {
                Err(why) => return Err(why),
                Ok(false) => return too_many(),
                Ok(true) => {}
            }
        } else {
            let plain = unescape_glob(component);
            next = bases.iter().map(|base| format!("{base}/{plain}")).collect();
        }
        if next.len() > MAX_EXPANSIONS {
            return too_many();
        }
        bases = next;
        if bases.is_empty() {
            // Nothing matches: bash passes the word as written.
            return Ok(vec![unescape_glob(path)]);
        }
    }
    if path.ends_with('/') {
        bases.retain(|base| disk::is_dir(base));
        if bases.is_empty() {
            return Ok(vec![unescape_glob(path)]);
        }
    }
    Ok(bases)
}

/// Runs `with` on the matcher of one glob component (see [`Wildcard`]); `Err` when it
/// cannot be read. Compiling one costs more than judging the rest of a line, and models run
/// the same globs again and again (`*.rs`), so the last [`CACHED_GLOBS`] compiled on this
/// thread are kept.
fn with_component_glob<T>(component: &str, with: impl FnOnce(&Wildcard) -> T) -> Result<T, String> {
    thread_local! {
        static COMPILED: RefCell<HashMap<String, Wildcard>> = RefCell::new(HashMap::new());
    }
    COMPILED.with_borrow_mut(|compiled| {
        if let Some(wildcard) = compiled.get(component) {
            return Ok(with(wildcard));
        }
        let wildcard = Wildcard::new(component)?;
        let result = with(&wildcard);
        if compiled.len() >= CACHED_GLOBS {
            compiled.clear();
        }
        compiled.insert(component.to_owned(), wildcard);
        Ok(result)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::shell::parse_script;

    /// A searched path whose glob climbs searches everything below where it may climb to.
    #[test]
    fn a_glob_climbing_out_of_a_wildcard_searches_above_it() {
        for (path, folder) in [
            ("src/**/../.e*", "src/.."),
            ("src/**/.[.]/.e*", "src/.."),
            ("src/*/../../x/*", "src/../.."),
        ] {
            assert_eq!(
                climbed(crate::policy::search::split_glob(path)),
                (folder.to_owned(), None),
                "{path}"
            );
        }
        let plain = crate::policy::search::split_glob("src/**/*.rs");
        assert_eq!(climbed(plain.clone()), plain);
    }

    fn values(raw: &str) -> Result<Vec<String>, String> {
        let script = parse_script(&format!("cat {raw}")).expect("parses");
        let word = &script.commands.last().expect("a command").words[1];
        word_values(
            word,
            Some("/home/dev"),
            &["/ws".to_owned()],
            Dotfiles::Explicit,
        )
        .map(|v| v.into_iter().map(|s| unescape_glob(&s)).collect())
    }

    /// Sequence expressions as bash 5 writes them (`echo /etc/shado{w..w..1}` is
    /// `/etc/shadow`); one too long to write out is refused, never judged as written.
    #[test]
    fn braces_expand_as_bash_expands_them() {
        let table: &[(&str, &[&str])] = &[
            ("/etc/shado{w..w..1}", &["/etc/shadow"]),
            ("{1..10..3}", &["1", "4", "7", "10"]),
            ("{5..1..2}", &["5", "3", "1"]),
            ("{01..3}", &["01", "02", "03"]),
            ("{-01..2}", &["-01", "000", "001", "002"]),
            ("{-3..3..2}", &["-3", "-1", "1", "3"]),
            ("{a..e..2}", &["a", "c", "e"]),
            ("{1..3..0}", &["1", "2", "3"]),
            ("{+..0}", &["{+..0}"]),
            ("{1..3..x}", &["{1..3..x}"]),
            ("x{a,b}{1..2}", &["xa1", "xa2", "xb1", "xb2"]),
        ];
        for (raw, expected) in table {
            let expected: Vec<String> = expected.iter().map(|v| (*v).to_owned()).collect();
            assert_eq!(expand_braces(raw), Ok(expected), "{raw}");
        }
        for raw in [
            "/proc/{1..9999}/root/etc/shadow",
            "{a..z}{a..z}",
            "{0..100000..2}",
        ] {
            assert!(expand_braces(raw).is_err(), "{raw}");
        }
    }

    #[test]
    fn set_may_turn_on_allexport() {
        let turns_on = |line: &str| {
            let script = parse_script(line).expect("parses");
            exports_everything(&script.commands[0]).is_some()
        };
        for line in [
            "set -a",
            "set -ea",
            "set -o allexport",
            "set -euo allexport",
            "set -o \"$X\"",
            "set $OPTS",
        ] {
            assert!(turns_on(line), "{line}");
        }
        for line in [
            "set -e",
            "set -euo pipefail",
            "set -x",
            "set -- -a",
            "set +o allexport",
        ] {
            assert!(!turns_on(line), "{line}");
        }
    }

    #[test]
    fn git_pathspecs_name_the_files_git_reads() {
        for (value, paths) in [
            ("HEAD:.env", vec![".env"]),
            (":0:.env", vec![".env"]),
            (":(glob)**/.env", vec!["**/.env"]),
            (":(literal)*.env", vec!["*.env"]),
            (":(icase).ENV", vec!["[.]ENV", ".env"]),
            (
                ":(icase)DEPLOY/*.PEM",
                vec!["[D]EPLOY/*.PEM", "deploy/*.pem"],
            ),
            (":!src", vec!["."]),
            (":^src", vec!["."]),
            (":(exclude)src", vec!["."]),
            (":/src", vec!["src"]),
        ] {
            let got = git_paths(value);
            for path in paths {
                assert!(
                    got.iter().any(|p| p == path),
                    "{value}: {got:?} lacks {path}"
                );
            }
        }
    }

    #[test]
    fn words_expand_as_bash_would() {
        assert_eq!(values("~/.ssh/id_rsa").unwrap(), ["/home/dev/.ssh/id_rsa"]);
        assert_eq!(
            values("$HOME/.ssh/id_rsa").unwrap(),
            ["/home/dev/.ssh/id_rsa"]
        );
        assert_eq!(values("\"${HOME}/x\"").unwrap(), ["/home/dev/x"]);
        assert_eq!(values("\"$PWD/.env\"").unwrap(), ["/ws/.env"]);
        assert_eq!(values("~+/.env").unwrap(), ["/ws/.env"]);
        assert_eq!(values(".e{n,}v").unwrap(), [".env", ".ev"]);
        assert_eq!(values("f{1..3}").unwrap(), ["f1", "f2", "f3"]);
        assert_eq!(values("'~/x'").unwrap(), ["~/x"]);
        assert!(values("$SECRET_FILE").is_err());
        assert!(values("$(echo x)").is_err());
        assert!(values("~root/x").is_err());
    }

    #[test]
    fn a_patch_names_the_files_it_writes() {
        let patch = "From: x\n\
            diff --git a/src/x y.rs b/src/x y.rs\n\
            --- a/src/x y.rs\t2024-01-01\n\
            +++ b/src/x y.rs\t2024-01-01\n\
            @@ -1 +1 @@\n\
            diff --git \"a/\\056git/config\" \"b/\\056git/config\"\n\
            rename from old.txt\n\
            rename to .claude/settings.json\n\
            --- /dev/null\n\
            *** 1,5 ****\n\
            Index: notes.md\n";
        let mut paths = patch_paths(patch);
        paths.sort();
        paths.dedup();
        assert_eq!(
            paths,
            [
                ".claude/settings.json",
                "a/.git/config",
                "a/src/x",
                "a/src/x y.rs",
                "a/src/x y.rs b/src/x",
                "b/.git/config",
                "b/src/x y.rs",
                "notes.md",
                "old.txt",
                "y.rs",
                "y.rs b/src/x y.rs",
            ]
        );
        assert_eq!(
            stripped("b/.git/config"),
            ["b/.git/config", ".git/config", "config"]
        );
        assert_eq!(stripped("/etc//x"), ["/etc//x", "x"]);
        assert_eq!(
            c_unquoted("\"a\\tb\\303\\251\" rest"),
            ("a\tbé".to_owned(), " rest")
        );
    }

    #[test]
    fn words_of_unknown_programs_are_split_where_files_hide() {
        let pieces = |value| unlisted_pieces(value, Some("/home/dev"));
        assert_eq!(pieces("README.md"), ["README.md"]);
        assert_eq!(
            pieces("~/.ssh:/root/.ssh"),
            [
                "~/.ssh:/root/.ssh",
                "/home/dev/.ssh:/root/.ssh",
                "~/.ssh",
                "/home/dev/.ssh",
                "/root/.ssh"
            ]
        );
        assert_eq!(
            pieces("--x=/home/dev/.aws/credentials"),
            [
                "--x=/home/dev/.aws/credentials",
                "/home/dev/.aws/credentials"
            ]
        );
        assert_eq!(
            pieces("type=bind,src=~/.ssh,dst=/k"),
            [
                "type=bind,src=~/.ssh,dst=/k",
                "bind,src=~/.ssh,dst=/k",
                "type=bind",
                "bind",
                "src=~/.ssh",
                "~/.ssh",
                "/home/dev/.ssh",
                "dst=/k",
                "/k",
            ]
        );
        assert_eq!(pieces("body=@.env"), ["body=@.env", "@.env", ".env"]);
        assert_eq!(pieces("@.env"), ["@.env", ".env"]);
    }

    /// As in bash without `dotglob`: a name's leading `.` is reached only by a `.` written
    /// there, and a glob ending in `/` names folders.
    #[test]
    fn wildcards_reach_hidden_names_only_when_told() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let root = dir.path().to_string_lossy().into_owned();
        std::fs::write(dir.path().join(".env"), "x").expect("write");
        std::fs::write(dir.path().join("a.txt"), "x").expect("write");
        std::fs::create_dir(dir.path().join("src")).expect("mkdir");
        std::fs::write(dir.path().join("src/main.rs"), "x").expect("write");
        std::fs::write(dir.path().join("src/.env.local"), "x").expect("write");
        let expand = |glob: &str, dotfiles| {
            let mut paths = expand_glob(&format!("{root}/{glob}"), dotfiles).expect("small");
            paths.sort();
            paths
                .into_iter()
                .map(|p| p[root.len() + 1..].to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(expand("*", Dotfiles::Explicit), ["a.txt", "src"]);
        assert_eq!(expand("*", Dotfiles::Matched), [".env", "a.txt", "src"]);
        assert_eq!(expand(".e*", Dotfiles::Explicit), [".env"]);
        assert_eq!(expand("\\.e*", Dotfiles::Explicit), [".env"]);
        assert_eq!(expand("?env", Dotfiles::Explicit), ["?env"]);
        assert_eq!(expand("[.]env", Dotfiles::Explicit), ["[.]env"]);
        assert_eq!(expand("*/", Dotfiles::Explicit), ["src"]);
        // `**` is any depth (bash's `globstar`, zsh): `**/.e*` reaches `.env` here and below.
        assert_eq!(
            expand("**/.e*", Dotfiles::Explicit),
            [".env", "src/.env.local"]
        );
        assert_eq!(
            expand("**", Dotfiles::Explicit),
            ["a.txt", "src", "src/main.rs"]
        );
        assert_eq!(expand("**/*.rs", Dotfiles::Explicit), ["src/main.rs"]);
    }

    #[test]
    fn globs_expand_against_the_file_system() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let root = dir.path().to_string_lossy().into_owned();
        std::fs::write(dir.path().join(".env"), "x").expect("write");
        std::fs::write(dir.path().join("a.txt"), "x").expect("write");
        let expand = |glob: String| expand_glob(&glob, Dotfiles::Matched).expect("a small folder");
        assert_eq!(expand(format!("{root}/.en?")), [format!("{root}/.env")]);
        assert_eq!(expand(format!("{root}/.e[n]v")), [format!("{root}/.env")]);
        assert_eq!(
            expand(format!("{root}/nothing*")),
            [format!("{root}/nothing*")]
        );
        assert_eq!(expand(format!("{root}/a\\*")), [format!("{root}/a*")]);
        // Compiled components are kept per thread: the same glob again, and more distinct
        // globs than are kept, expand the same way.
        for _ in 0..2 {
            for k in 0..=CACHED_GLOBS {
                let glob = format!("{root}/none{k}*");
                assert_eq!(expand(glob.clone()), [glob]);
                assert_eq!(expand(format!("{root}/[.]e?v")), [format!("{root}/.env")]);
            }
        }
        // Brackets as bash reads them: a negated one is matched with case too (`[!N]`
        // reaches `n`), a `[` without its `]` is a name, and one whose matches depend on the
        // locale cannot be judged.
        assert_eq!(expand(format!("{root}/.e[!N]v")), [format!("{root}/.env")]);
        assert_eq!(
            expand(format!("{root}/.e[![:upper:]]v")),
            [format!("{root}/.env")]
        );
        assert_eq!(expand(format!("{root}/[a")), [format!("{root}/[a")]);
        assert!(
            expand_glob(&format!("{root}/.e[[.n.]]v"), Dotfiles::Matched).is_err(),
            "a collating symbol"
        );
        for i in 0..=MAX_EXPANSIONS {
            std::fs::write(dir.path().join(format!("f{i}")), "").expect("write");
        }
        assert!(
            expand_glob(&format!("{root}/f*"), Dotfiles::Matched).is_err(),
            "too many to judge"
        );
    }
}
