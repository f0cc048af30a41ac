//! The path conditions of argument matchers — `path` globs, `workspace: inside|outside` and
//! `policy_files` — judged on the *locations* a path argument names, not on its spelling.
//!
//! # From a path argument to its locations
//! [`locate`] turns a path argument into a [`Location`] (SPEC §7.1):
//! - `~`, `~/…`, `$HOME` and `${HOME}` at its start expand to the home folder of the
//!   [`MatchContext`]. With no home folder known, and for `~user/…` (another user's home,
//!   `~+`, `~-`), the location is [unknown](Location::Unknown);
//! - a relative path is taken against the workspace root; repeated slashes and `.` are folded
//!   and `..` is resolved lexically (it removes the previous component; at `/` it stays at
//!   `/`). This is the *written* location. One whose `..` climbs out of the workspace is
//!   outside it;
//! - the written path is then resolved through symlinks, walked one component at a time as
//!   the kernel does: a link is replaced by its target (also a link to nothing: writing
//!   through it creates the target), `..` goes to the parent of the folder reached, and from
//!   the first component that does not exist the rest is taken as written until a `..`
//!   leads back above it. When that leads elsewhere, the argument has a *resolved* location
//!   too (`config/settings.txt` → `/ws/.env`). A `..` after a link that the kernel and a
//!   tool cleaning the path first (Node's `path.resolve`) take to different files, and a
//!   `~/…` beside an entry named `~` (a tool may not expand it), make the location unknown.
//!
//! Each location has up to three forms: absolute (`/ws/app/.env`), workspace-relative
//! (`.env`, when it lies strictly inside the workspace) and home-relative (`~/.ssh/id_rsa`,
//! when it lies under the home folder). A pattern is anchored by how it starts: `/…` matches
//! the absolute form, `~` or `~/…` (also written `$HOME/…`, `${HOME}/…`) the home form, and
//! any other pattern (`**`, `./**`, `src/**`, `**/.env`) the workspace-relative form only —
//! so a relative pattern never matches a location outside the workspace, and `/**/.env` is
//! how to say "a `.env` anywhere".
//!
//! # Two locations, one verdict
//! A rule judges both locations of an argument: a deny or ask rule ([`MatchMode::Any`])
//! holds when its condition holds for either, an allow rule ([`MatchMode::All`]) only when it
//! holds for both. A link `notes -> ../.env` is thus denied by a `**/.env`-style rule through
//! its target and not allowed by a workspace rule, since its target is outside. An unknown
//! location fails closed: it holds for deny and ask rules and never for allow rules.
//!
//! Globs are [`globset`] globs with `literal_separator`: `*` and `?` do not cross `/`, `**`
//! spans directories (`**/.env` matches `.env` and `sub/.env`; `dir/**` matches what is under
//! `dir`, not `dir` itself). Leading `./` and repeated slashes in patterns are folded like
//! paths. Matching is case-sensitive unless the context says the file system is not
//! ([`PathCase`]; by default insensitive on macOS and Windows, where `.ENV` opens `.env`).
//!
//! # What is read from the file system, and the race that remains
//! Building a [`MatchContext`] resolves the workspace root, the home folder and the policy
//! locations once. Locating a path argument reads one `lstat` per component it walks (below
//! the workspace root for a relative path) and one `readlink` per link, up to 40 links (a
//! loop leaves it without a resolved location); a path of more than [`MAX_COMPONENTS`]
//! components is not resolved but unknown (fail closed). Nothing is opened or read beyond
//! that. The check and the tool's own opening of the file are still two moments: a link
//! created or changed between them is not seen (a time-of-check/time-of-use race), and a path
//! that does not exist yet is judged by its written location and its nearest existing
//! ancestor. Path rules are a guard against mistakes and confused agents, not a sandbox:
//! confine a tool that must never reach a file with operating-system permissions or a sandbox.

use std::borrow::Cow;
use std::fmt;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use aho_corasick::AhoCorasick;

use super::disk;
use super::glob::GlobList;
use super::glob::{GlobSyntaxError, parse_globs};
use super::mode::MatchMode;
use super::shell::name_char;
use crate::diagnostics::Format;
use crate::model::rule::WorkspaceSide;

/// A path argument with more components than this is not resolved through symlinks; its
/// location is unknown, which fails closed. It bounds the `lstat` calls one argument costs
/// (one per component, plus the components of the links it follows); real paths are far
/// shorter (`PATH_MAX` is 4096 bytes).
pub const MAX_COMPONENTS: usize = 256;

/// One location of a path argument in its forms: absolute, workspace-relative when inside
/// the workspace, home-relative when under the home folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormalisedPath {
    absolute: String,
    /// Where the workspace-relative form starts in `absolute`.
    relative_at: Option<usize>,
    /// The same under a workspace root too wide to be a project (see
    /// [`MatchContext::with_home`]): read by deny and ask rules only, so that a relative
    /// pattern still denies there and never allows.
    wide_relative_at: Option<usize>,
    /// Inside the workspace: under its root, or the root itself.
    inside: bool,
    /// The home-relative form, `~` or `~/…`.
    home: Option<String>,
    /// One of the loaded policy files, or inside a loaded policy folder.
    policy_file: bool,
    /// A file git runs, by the repository's config (see [`MatchContext::with_git_runs`]).
    git_runs: bool,
}

impl NormalisedPath {
    /// The absolute form (relative only if the workspace root itself is relative).
    pub fn absolute(&self) -> &str {
        &self.absolute
    }

    /// The workspace-relative form, when the path lies strictly inside the workspace.
    pub fn relative(&self) -> Option<&str> {
        self.relative_at.and_then(|at| self.absolute.get(at..))
    }

    /// The workspace-relative form a rule judging in `mode` reads: under a root too wide to
    /// be a project, deny and ask rules ([`MatchMode::Any`]) still read it, allow rules not.
    pub fn relative_in(&self, mode: MatchMode) -> Option<&str> {
        let at = match mode {
            MatchMode::All => self.relative_at,
            MatchMode::Any => self.relative_at.or(self.wide_relative_at),
        };
        at.and_then(|at| self.absolute.get(at..))
    }

    /// The home-relative form (`~/.ssh/id_rsa`), when the path lies under the home folder.
    pub fn home(&self) -> Option<&str> {
        self.home.as_deref()
    }

    /// Which side of the workspace boundary it lies on (the root itself is inside).
    pub fn workspace_side(&self) -> WorkspaceSide {
        if self.inside {
            WorkspaceSide::Inside
        } else {
            WorkspaceSide::Outside
        }
    }

    /// Whether it is a loaded policy file or lies inside a loaded policy folder.
    pub fn is_policy_file(&self) -> bool {
        self.policy_file
    }

    /// Whether git runs it (or what lies below it), by the repository's config.
    pub fn is_git_run(&self) -> bool {
        self.git_runs
    }
}

impl fmt::Display for NormalisedPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.relative() {
            Some(relative) => write!(f, "`{relative}` (`{}`)", self.absolute),
            None => write!(f, "`{}`", self.absolute),
        }
    }
}

/// Where a path argument leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// Where the argument leads: as written, and through its symlinks when that is elsewhere.
    Known {
        /// The written location, lexically normalised.
        written: NormalisedPath,
        /// The location after resolving symlinks, when it differs from the written one.
        resolved: Option<NormalisedPath>,
    },
    /// Where the argument leads cannot be told: every path condition fails closed.
    Unknown {
        /// The argument as given.
        raw: String,
        /// Why.
        why: UnknownLocation,
    },
}

/// Why the location of a path argument cannot be told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnknownLocation {
    /// A `~` or `$HOME` path, and no home folder is known.
    NoHome,
    /// `~user/…`, `~+` or `~-`: a folder this engine does not know.
    OtherHome,
    /// More than [`MAX_COMPONENTS`] components.
    TooDeep,
    /// A NUL byte: a program in C reads the path only up to it.
    Nul,
    /// White space at either end, which a tool may trim.
    Padded,
    /// A `$` expansion other than `$HOME` (a leading `$NAME/`, or `${…}` or `$(…)`
    /// anywhere): a tool that expands `$HOME` may expand it to anything.
    Expansion,
    /// It goes through a process's view of the file system (`/proc/self/cwd`, `/dev/fd/..`,
    /// `/proc/<pid>/root`, a folder's descriptor): those name what the process running the
    /// command sees, which toolgate cannot see from its own process.
    ProcessView,
    /// It starts with `~` or `$HOME`, and the folder it is taken against holds an entry of
    /// that name: a tool that expands it (Claude Code) opens a file in the home folder, one
    /// that does not (Gemini CLI, Codex's patches) the file below that entry.
    HomeOrEntry,
    /// A `..` follows a link or a folder that does not exist: the kernel goes to the parent
    /// of where the link leads, a tool that cleans the path first (Node's `path.resolve`)
    /// drops the component, and the two reach different files.
    ParentAfterLink,
}

impl fmt::Display for UnknownLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NoHome => "no home folder is known to expand it",
            Self::OtherHome => "it names a home folder this engine does not know",
            Self::TooDeep => "it has too many components to resolve",
            Self::Nul => "it holds a NUL byte, where a program may end the path",
            Self::Padded => "it starts or ends with white space, which a tool may trim",
            Self::Expansion => "it holds a `$` expansion whose value is not known",
            Self::ProcessView => {
                "it goes through a process's own view of the file system (`/proc/…/cwd`, \
                 `/proc/…/root`, a descriptor in `/proc/…/fd`), which only the process running \
                 the command sees"
            }
            Self::HomeOrEntry => {
                "its first component is both the home folder and an entry of the folder it is \
                 taken against: which one a tool opens depends on whether it expands it"
            }
            Self::ParentAfterLink => {
                "a `..` follows a link or a missing folder, so the file it reaches depends on \
                 whether the tool cleans the path before opening it"
            }
        })
    }
}

/// Which location of a path argument a verdict is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The location as written.
    Written,
    /// The location its symlinks lead to.
    Resolved,
}

/// Whether a condition holds for a path argument, and the location that decided it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Judgement {
    /// Whether the condition holds in the rule's mode.
    pub holds: bool,
    /// The location that decided: for [`MatchMode::Any`] the one that matched (the written
    /// one when neither did), for [`MatchMode::All`] the one that failed (the written one
    /// when both held).
    pub side: Side,
}

impl Location {
    /// The location of `side`: the resolved one falls back to the written one when the
    /// links lead nowhere else.
    pub fn at(&self, side: Side) -> Option<&NormalisedPath> {
        match (self, side) {
            (Self::Known { written, .. }, Side::Written) => Some(written),
            (Self::Known { written, resolved }, Side::Resolved) => {
                Some(resolved.as_ref().unwrap_or(written))
            }
            (Self::Unknown { .. }, _) => None,
        }
    }

    /// Judges a condition on both locations: with [`MatchMode::Any`] it holds when it holds
    /// for either, with [`MatchMode::All`] only when it holds for both. An unknown location
    /// holds for `Any` and not for `All` (fail closed).
    pub fn judge(
        &self,
        mode: MatchMode,
        mut holds_at: impl FnMut(&NormalisedPath) -> bool,
    ) -> Judgement {
        let (written, resolved) = match self {
            Self::Unknown { .. } => {
                return Judgement {
                    holds: mode == MatchMode::Any,
                    side: Side::Written,
                };
            }
            Self::Known { written, resolved } => (written, resolved.as_ref()),
        };
        let on_written = holds_at(written);
        let side = match (mode, on_written) {
            // Decided by the written location alone.
            (MatchMode::Any, true) | (MatchMode::All, false) => Side::Written,
            // The resolved location decides, when there is one.
            (MatchMode::Any, false) | (MatchMode::All, true) => match resolved.map(&mut holds_at) {
                Some(on_resolved) if on_resolved != on_written => Side::Resolved,
                Some(_) | None => Side::Written,
            },
        };
        let holds = match side {
            Side::Written => on_written,
            Side::Resolved => !on_written,
        };
        Judgement { holds, side }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Known { written, resolved } => {
                write!(f, "{written}")?;
                match resolved {
                    Some(resolved) => write!(f, " → {resolved}"),
                    None => Ok(()),
                }
            }
            Self::Unknown { raw, why } => write!(f, "`{raw}`, whose location is unknown ({why})"),
        }
    }
}

/// Folds `.`, `..` and repeated slashes of a `/`-separated path, lexically.
pub(crate) fn lexical(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut folded = String::with_capacity(path.len() + 1);
    push_components(&mut folded, path, absolute);
    finish_components(folded, absolute)
}

/// Appends the components of `path` to `out`, each as `/component`, folding `.`, `..` and
/// empty components against what `out` already holds. One buffer, no intermediate list:
/// every permission check of a path argument goes through here.
fn push_components(out: &mut String, path: &str, absolute: bool) {
    for component in path.split('/') {
        match component {
            "" | "." => {}
            ".." => match out.rfind('/') {
                Some(last) if &out[last + 1..] != ".." => out.truncate(last),
                // `/..` is `/`; a relative path keeps leading `..`.
                _ if absolute => {}
                _ => out.push_str("/.."),
            },
            other => {
                out.push('/');
                out.push_str(other);
            }
        }
    }
}

/// The path [`push_components`] built: `/` when an absolute path folded to nothing, and
/// without the leading `/` of the first component when the path is relative.
fn finish_components(mut folded: String, absolute: bool) -> String {
    if absolute {
        if folded.is_empty() {
            folded.push('/');
        }
    } else if !folded.is_empty() {
        folded.remove(0);
    }
    folded
}

/// `raw` folded lexically, taken against `root` when relative (`root` is folded already).
fn fold_against(raw: &str, root: &str) -> String {
    // `raw` when it is absolute, else `root/raw`, folded in one buffer.
    let mut folded = String::with_capacity(root.len() + raw.len() + 2);
    let absolute = if raw.starts_with('/') {
        push_components(&mut folded, raw, true);
        true
    } else {
        let absolute = root.starts_with('/');
        // Most relative paths are folded already (`src/main.rs`): those are appended as they
        // are, without splitting.
        match root {
            "/" | "." => {}
            _ if absolute => folded.push_str(root),
            _ => {
                folded.push('/');
                folded.push_str(root);
            }
        }
        if is_folded_relative(raw) {
            folded.push('/');
            folded.push_str(raw);
        } else {
            push_components(&mut folded, raw, absolute);
        }
        absolute
    };
    finish_components(folded, absolute)
}

/// Whether `path` is relative and has nothing to fold: no empty, `.` or `..` component.
fn is_folded_relative(path: &str) -> bool {
    !path.is_empty()
        && path
            .as_bytes()
            .split(|&byte| byte == b'/')
            .all(|component| !matches!(component, b"" | b"." | b".."))
}

/// The part of a path argument after a leading `~`, `$HOME` or `${HOME}` (empty or starting
/// with `/`); an error for `~user`, `~+` and `~-`; `None` when it does not start with one.
fn after_home(raw: &str) -> Option<Result<&str, UnknownLocation>> {
    for prefix in ["~", "$HOME", "${HOME}"] {
        if let Some(rest) = raw.strip_prefix(prefix)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            return Some(Ok(rest));
        }
    }
    raw.starts_with('~')
        .then_some(Err(UnknownLocation::OtherHome))
}

/// Why the location of the path `raw` cannot be known from its text, if it cannot.
fn unreadable(raw: &str) -> Option<UnknownLocation> {
    if raw.contains('\0') {
        return Some(UnknownLocation::Nul);
    }
    if raw.starts_with(char::is_whitespace) || raw.ends_with(char::is_whitespace) {
        return Some(UnknownLocation::Padded);
    }
    let rest = match after_home(raw) {
        Some(Ok(rest)) => rest,
        _ => raw,
    };
    // A variable that is a whole leading component (`$OLDPWD/x`), or any `${…}` or `$(…)`.
    // A `$` inside a name stays a character (`routes/posts.$id.tsx`).
    let leading = rest.strip_prefix('$').is_some_and(|name| {
        let end = name.find('/').unwrap_or(name.len());
        end > 0 && name[..end].chars().all(name_char)
    });
    let expands = leading || rest.contains("${") || rest.contains("$(");
    expands.then_some(UnknownLocation::Expansion)
}

/// `raw` with a leading `~`, `$HOME` or `${HOME}` expanded (see [`after_home`]).
fn expand_home<'r>(raw: &'r str, ctx: &MatchContext) -> Result<Cow<'r, str>, UnknownLocation> {
    if let Some(why) = unreadable(raw) {
        return Err(why);
    }
    match after_home(raw) {
        None => Ok(Cow::Borrowed(raw)),
        Some(Err(why)) => Err(why),
        Some(Ok(rest)) => {
            let first = &raw[..raw.len() - rest.len()];
            let folder = ctx.folder();
            if folder.starts_with('/')
                && disk::symlink_metadata(format!("{}/{first}", folder.trim_end_matches('/')))
                    .is_ok()
            {
                return Err(UnknownLocation::HomeOrEntry);
            }
            match &ctx.home {
                None => Err(UnknownLocation::NoHome),
                Some(home) => Ok(Cow::Owned(format!("{}{rest}", home.written))),
            }
        }
    }
}

#[cfg(test)]
/// Normalises a path argument to its written location: `~` and `$HOME` expanded, taken
/// against the workspace root, folded lexically. Nothing is read from the file system.
/// `None` for an empty path (which names no file) and for a path whose location is unknown
/// (see [`locate`]).
pub fn normalise(raw: &str, ctx: &MatchContext) -> Option<NormalisedPath> {
    if raw.is_empty() {
        return None;
    }
    let expanded = expand_home(raw, ctx).ok()?;
    Some(ctx.place(fold_against(&expanded, ctx.folder())))
}

/// The locations a path argument names: written and resolved through symlinks (see the
/// module docs). `None` for an empty path, which names no file.
pub fn locate(raw: &str, ctx: &MatchContext) -> Option<Location> {
    if raw.is_empty() {
        return None;
    }
    let unknown = |why| {
        Some(Location::Unknown {
            raw: raw.to_owned(),
            why,
        })
    };
    let expanded = match expand_home(raw, ctx) {
        Ok(expanded) => expanded,
        Err(why) => return unknown(why),
    };
    let root = ctx.folder();
    if count_components(&expanded) + count_components(root) > MAX_COMPONENTS {
        return unknown(UnknownLocation::TooDeep);
    }
    let written = ctx.place(fold_against(&expanded, root));
    let resolved = if written.inside && !ctx.workspace.exists {
        // Nothing exists below a workspace root that does not exist: only the root's own
        // links can lead elsewhere (no file system access for such a root, as in tests).
        ctx.workspace
            .resolved
            .as_ref()
            .map(|resolved_root| match written.relative() {
                Some(relative) => format!("{resolved_root}/{relative}"),
                None => resolved_root.clone(),
            })
    } else if let Some((anchor, rest)) = walked_from(&expanded, ctx) {
        // The anchor was resolved when the context was made: walk only what is below it.
        match resolve_either_way(anchor.real(), rest) {
            Ok(resolved) => resolved,
            Err(why) => return unknown(why),
        }
    } else if expanded.starts_with('/') {
        match resolve_either_way(String::new(), &expanded) {
            Ok(resolved) => resolved,
            Err(why) => return unknown(why),
        }
    } else {
        // A relative root: nothing is resolved (see `MatchContext::new`).
        None
    };
    let resolved = resolved
        .filter(|resolved| *resolved != written.absolute)
        .map(|resolved| ctx.place(resolved));
    Some(Location::Known { written, resolved })
}

/// The anchor a path is walked from and the rest of the path: a relative path from the
/// call's folder (the workspace root unless a handler's `cwd` gave another), an absolute one
/// that starts with the workspace root as written from that root (a line's paths are made
/// absolute against the folders it runs in). `None` for another absolute path (walked from
/// `/`), and for any path when the anchor is relative (nothing is resolved, see
/// [`MatchContext::new`]).
fn walked_from<'c, 'p>(path: &'p str, ctx: &'c MatchContext) -> Option<(&'c Anchor, &'p str)> {
    if path.starts_with('/') {
        let root = &ctx.workspace;
        if !root.written.starts_with('/') || root.written == "/" {
            return None;
        }
        let rest = path
            .strip_prefix(root.written.as_str())
            .filter(|rest| rest.is_empty() || rest.starts_with('/'))?;
        Some((root, rest))
    } else {
        let anchor = ctx.folder.as_ref().unwrap_or(&ctx.workspace);
        anchor.written.starts_with('/').then_some((anchor, path))
    }
}

/// The location of a file found by listing folders: named `written` (absolute, folded),
/// lying at `real` with no link on the way (the listing followed none). Nothing is read
/// from the file system.
pub fn listed(written: String, real: String, ctx: &MatchContext) -> Location {
    let resolved = (real != written).then(|| ctx.place(real));
    Location::Known {
        written: ctx.place(written),
        resolved,
    }
}

fn count_components(path: &str) -> usize {
    path.split('/').filter(|c| !c.is_empty()).count()
}

/// Symlinks followed while resolving one path before it is given up on (the limit of Linux's
/// `ELOOP`); a link loop leaves the path without a resolved location.
const MAX_LINKS: usize = 40;

/// Where an absolute path leads through its symlinks (see [`resolve_below`]).
fn resolve(absolute: &str) -> Result<Option<String>, UnknownLocation> {
    resolve_below(String::new(), absolute)
}

/// Where `rest` leads from the folder `real` (see [`resolve_below`]), the same whether it is
/// walked as the kernel walks it or cleaned first as Node's `path.resolve` cleans it (Claude
/// Code and Gemini CLI do before they open a file): with a `..` after a link the two reach
/// different files (`src/x/../y/config`, `src/x` a link elsewhere and `src/y` one to
/// `.git`), and the location is unknown.
fn resolve_either_way(real: String, rest: &str) -> Result<Option<String>, UnknownLocation> {
    let walked = resolve_below(real.clone(), rest)?;
    if !rest.split('/').any(|component| component == "..") {
        return Ok(walked);
    }
    // Folded as a path relative to `real` (a leading `..` leaves it).
    let cleaned = resolve_below(real, &lexical(rest.trim_start_matches('/')))?;
    if cleaned == walked {
        Ok(walked)
    } else {
        Err(UnknownLocation::ParentAfterLink)
    }
}

/// Whether `folder` (absolute, no link in it) is a process's folder in `/proc`: its own
/// links (`cwd`, `root`, `fd/N`) are that process's, not toolgate's.
fn is_process_folder(folder: &str) -> bool {
    let Some(rest) = folder.strip_prefix("/proc/") else {
        return false;
    };
    let number = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    let mut components = rest.split('/');
    let first = components.next().unwrap_or_default();
    let process = matches!(first, "self" | "thread-self") || number(first);
    match (components.next(), components.next(), components.next()) {
        (None, _, _) => process,
        (Some("task"), Some(thread), None) => process && number(thread),
        _ => false,
    }
}

/// Where `rest` (components separated by `/`, `..` kept) leads from the folder `real` (an
/// absolute path with no symlink in it; empty for `/`), walked one component at a time as
/// the kernel does: a link is replaced by its target — also a link to nothing, whose target
/// a write would create — and `..` goes to the parent of the folder reached. From the first
/// component that does not exist, the rest is appended as written (folded: nothing below a
/// missing folder can redirect it) until a `..` climbs back above it, from where the walk
/// goes on (as it does once the folder is made). One `lstat` per component walked; `None`
/// after more than [`MAX_LINKS`] links (a loop).
///
/// A process's own links in `/proc` are not followed: `cwd` (the shell may have changed
/// folder), `root` and `map_files` of another process, and a descriptor in `fd` with more
/// components after it (a folder the process holds open) make the location unknown; a
/// descriptor at the end (`/dev/stdin`) is the stream it is, taken as written; `/proc/self/root`
/// is `/`.
fn resolve_below(mut real: String, rest: &str) -> Result<Option<String>, UnknownLocation> {
    // The components still to walk, the next one last.
    let push = |pending: &mut Vec<String>, path: &str| {
        let components = path.split('/').rev().filter(|c| !matches!(*c, "" | "."));
        pending.extend(components.map(str::to_owned));
    };
    let mut pending = Vec::new();
    push(&mut pending, rest);
    let mut links = 0;
    // How many components below the last folder that exists `real` holds: a `..` back to
    // that folder walks on from it (`missing/../src/x` reaches where the link `src/x` leads,
    // as after `mkdir -p missing`).
    let mut missing = 0usize;
    while let Some(component) = pending.pop() {
        if component == ".." {
            real.truncate(real.rfind('/').unwrap_or(0));
            missing = missing.saturating_sub(1);
            continue;
        }
        // `/proc/self` is a link to toolgate's own process: keep it as written.
        if real == "/proc" && matches!(component.as_str(), "self" | "thread-self") {
            real = format!("/proc/{component}");
            continue;
        }
        if is_process_folder(&real) {
            match component.as_str() {
                "root" if real == "/proc/self" || real == "/proc/thread-self" => {
                    real.clear();
                    continue;
                }
                "cwd" | "root" | "map_files" => return Err(UnknownLocation::ProcessView),
                _ => {}
            }
        }
        let descriptor = real.strip_suffix("/fd").is_some_and(is_process_folder);
        if descriptor {
            if pending.last().is_some_and(|next| next != "..") {
                return Err(UnknownLocation::ProcessView);
            }
            real = format!("{real}/{component}");
            continue;
        }
        let next = format!("{real}/{component}");
        if missing > 0 {
            missing += 1;
            real = next;
            continue;
        }
        match disk::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                let Some(target) = disk::read_link(&next).ok().filter(|_| links <= MAX_LINKS)
                else {
                    return Ok(None);
                };
                let target = target.to_string_lossy();
                if target.starts_with('/') {
                    real.clear();
                }
                push(&mut pending, &target);
            }
            Ok(_) => real = next,
            Err(_) => {
                missing = 1;
                real = next;
            }
        }
    }
    if real.is_empty() {
        real.push('/');
    }
    Ok(Some(real))
}

/// Folds a pattern like a path (leading `./`, repeated slashes), keeping its glob syntax, and
/// writes a leading `$HOME` or `${HOME}` as `~`.
fn fold_pattern(pattern: &str) -> String {
    let mut folded = pattern.to_owned();
    while folded.contains("//") {
        folded = folded.replace("//", "/");
    }
    while let Some(rest) = folded.strip_prefix("./") {
        folded = rest.to_owned();
    }
    for prefix in ["$HOME", "${HOME}"] {
        if let Some(rest) = folded.strip_prefix(prefix)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            folded = format!("~{rest}");
        }
    }
    folded
}

/// Which form of a location a pattern is matched against, by how the pattern starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Anchoring {
    /// `/…`: the absolute form.
    Absolute,
    /// `~` or `~/…`: the home-relative form.
    Home,
    /// Anything else: the workspace-relative form.
    Workspace,
}

impl Anchoring {
    fn of(folded: &str) -> Self {
        if folded.starts_with('/') {
            Self::Absolute
        } else if folded == "~" || folded.starts_with("~/") {
            Self::Home
        } else {
            Self::Workspace
        }
    }
}

/// Whether path comparison ignores case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PathCase {
    /// `.ENV` and `.env` are different files.
    Sensitive,
    /// `.ENV` and `.env` are the same file (default file systems of macOS and Windows).
    Insensitive,
}

impl PathCase {
    /// The usual behaviour of the platform this was built for.
    pub fn native() -> Self {
        if cfg!(any(target_os = "macos", target_os = "windows")) {
            Self::Insensitive
        } else {
            Self::Sensitive
        }
    }

    /// How the file system holding `folder` compares names, asked of it: the folder (or its
    /// nearest ancestor whose name has a letter) is looked up with the case of its name
    /// swapped, and the same file found there means case is ignored (a case-folding ext4
    /// folder, exFAT or NTFS on Linux; APFS and NTFS by default). [`Self::native`] when that
    /// cannot be asked (nothing there, no letter in any name).
    pub fn of_folder(folder: &Path) -> Self {
        let Some(named) = folder.ancestors().find(|a| {
            a.file_name()
                .is_some_and(|n| n.to_string_lossy().chars().any(|c| c.is_ascii_alphabetic()))
        }) else {
            return Self::native();
        };
        let (Some(parent), Some(name)) = (named.parent(), named.file_name()) else {
            return Self::native();
        };
        let swapped: String = name
            .to_string_lossy()
            .chars()
            .map(|c| {
                if c.is_ascii_lowercase() {
                    c.to_ascii_uppercase()
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect();
        let (Ok(original), Ok(other)) = (
            disk::symlink_metadata(named),
            disk::symlink_metadata(parent.join(swapped)),
        ) else {
            return if disk::symlink_metadata(named).is_ok() {
                Self::Sensitive
            } else {
                Self::native()
            };
        };
        if same_file(&original, &other) {
            Self::Insensitive
        } else {
            Self::Sensitive
        }
    }
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(_: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    // Without inode numbers, a name found with its case swapped is taken as the same file.
    true
}

/// A folder or file the context places locations against, as given (lexically normalised)
/// and as resolved through symlinks when that differs.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Anchor {
    // INVARIANT: lexically normalised (no `.`, `..` after the first component, no trailing
    // or doubled slash); `.` for an empty path.
    written: String,
    resolved: Option<String>,
    /// Whether something exists there (when the anchor was made).
    exists: bool,
}

impl Anchor {
    /// An anchor at `path`, taken against `root` when relative. Reads the file system once,
    /// to resolve it.
    fn new(path: &Path, root: &str) -> Self {
        let mut written = fold_against(&path.to_string_lossy(), root);
        if written.is_empty() {
            written.push('.');
        }
        let resolved = (written.starts_with('/') && count_components(&written) <= MAX_COMPONENTS)
            .then(|| resolve(&written).ok().flatten())
            .flatten()
            .filter(|resolved| *resolved != written);
        let exists = disk::metadata(&written).is_ok();
        Self {
            written,
            resolved,
            exists,
        }
    }

    /// The anchor's resolved form (its written one when no link leads elsewhere), with no
    /// `/` at its end (empty for `/`): where a walk below it starts.
    fn real(&self) -> String {
        self.resolved
            .as_deref()
            .unwrap_or(&self.written)
            .trim_end_matches('/')
            .to_owned()
    }

    /// Whether the folder `folder` (absolute, folded) holds `anchor`, in its written or its
    /// resolved form.
    fn holds(folder: &str, anchor: &Anchor, case: PathCase) -> bool {
        std::iter::once(anchor.written.as_str())
            .chain(anchor.resolved.as_deref())
            .any(|place| strip_anchor(place, folder, case).is_some_and(|rest| !rest.is_empty()))
    }

    /// Whether `location` is the anchor or lies under it, in its written or resolved form.
    fn contains(&self, location: &str, case: PathCase) -> bool {
        self.strip(location, case).is_some()
    }

    /// What follows the anchor in `location` (empty for the anchor itself), when `location`
    /// is the anchor or lies under it, in its written or its resolved form.
    fn strip<'l>(&self, location: &'l str, case: PathCase) -> Option<&'l str> {
        std::iter::once(self.written.as_str())
            .chain(self.resolved.as_deref())
            .find_map(|anchor| strip_anchor(location, anchor, case))
    }
}

fn strip_anchor<'l>(location: &'l str, anchor: &str, case: PathCase) -> Option<&'l str> {
    if anchor == "/" {
        return location.strip_prefix('/');
    }
    let head = location.get(..anchor.len())?;
    let same = match case {
        PathCase::Sensitive => head == anchor,
        PathCase::Insensitive => head.eq_ignore_ascii_case(anchor),
    };
    if !same {
        return None;
    }
    let rest = &location[anchor.len()..];
    if rest.is_empty() {
        Some(rest)
    } else {
        rest.strip_prefix('/')
    }
}

/// What matching needs to know about the environment: the workspace root, the home folder,
/// the loaded policy files and folders, and whether paths compare with case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchContext {
    workspace: Anchor,
    /// The workspace root holds the home folder (it is `/`, the home folder or above it):
    /// too wide to mean a project, so no path is inside it (see [`Self::with_home`]).
    wide: bool,
    home: Option<Anchor>,
    policy_locations: Vec<Anchor>,
    policy_folders: Vec<Anchor>,
    git_runs: Vec<Anchor>,
    path_case: PathCase,
    /// The folder relative paths are taken in when it is not the workspace root (the `cwd`
    /// of the handler a call runs).
    folder: Option<Anchor>,
}

impl MatchContext {
    /// A context for a workspace root, which should be absolute (a relative root is used as
    /// given, and then so are the "absolute" forms of paths, and nothing is resolved through
    /// symlinks). No home folder is known (see [`Self::with_home`]) and no policy location
    /// (see [`Self::with_policy_locations`]). Path case is the root's file system's
    /// ([`PathCase::of_folder`]). Reads the file system to resolve the root's symlinks.
    pub fn new(workspace_root: impl AsRef<Path>) -> Self {
        let workspace = Anchor::new(workspace_root.as_ref(), ".");
        Self {
            wide: workspace.contains("/", PathCase::Sensitive),
            workspace,
            home: None,
            policy_locations: Vec::new(),
            policy_folders: Vec::new(),
            git_runs: Vec::new(),
            path_case: PathCase::of_folder(workspace_root.as_ref()),
            folder: None,
        }
    }

    /// The same context taking relative paths in `folder` (relative: against the workspace
    /// root) — where a handler with a `cwd` runs, which reads its relative paths there. What
    /// is inside the workspace does not change. Reads the file system to resolve the
    /// folder's symlinks.
    #[must_use]
    pub fn in_folder(&self, folder: &Path) -> Self {
        let folder = Anchor::new(folder, &self.workspace.written);
        Self {
            folder: (folder.written != self.workspace.written).then_some(folder),
            ..self.clone()
        }
    }

    /// The folder relative paths are taken in: the workspace root unless
    /// [`Self::in_folder`] gave another.
    pub fn folder(&self) -> &str {
        self.folder
            .as_ref()
            .unwrap_or(&self.workspace)
            .written
            .as_str()
    }

    /// The same context with a home folder: `~` and `$HOME` in patterns and paths stand for
    /// it. Without one, a path starting with `~` has an unknown location (fail closed).
    ///
    /// A workspace root that holds the home folder (an agent started in `~` or `/`) is too
    /// wide to mean a project: no path is inside it, so relative patterns allow nothing (deny
    /// and ask rules still read them, [`NormalisedPath::relative_in`]) and `workspace:
    /// inside` never holds (every write asks as one outside the workspace).
    #[must_use]
    pub fn with_home(mut self, home: impl AsRef<Path>) -> Self {
        let home = Anchor::new(home.as_ref(), &self.workspace.written);
        let case = self.path_case;
        self.wide |= std::iter::once(home.written.as_str())
            .chain(home.resolved.as_deref())
            .any(|location| self.workspace.contains(location, case));
        self.home = Some(home);
        self
    }

    /// The same context with the loaded policy files and folders (absolute; a relative one is
    /// taken against the workspace root), which `policy_files: true` matches.
    #[must_use]
    pub fn with_policy_locations<P: AsRef<Path>>(
        mut self,
        locations: impl IntoIterator<Item = P>,
    ) -> Self {
        self.policy_locations = locations
            .into_iter()
            .map(|location| Anchor::new(location.as_ref(), &self.workspace.written))
            .collect();
        self
    }

    /// The same context with folders whose every file `policy_files: true` matches, whatever
    /// its extension (the folder of a script a hook runs, which loads what lies beside it;
    /// the configuration folder with the trust store).
    #[must_use]
    pub fn with_policy_folders<P: AsRef<Path>>(
        mut self,
        folders: impl IntoIterator<Item = P>,
    ) -> Self {
        self.policy_folders = folders
            .into_iter()
            .map(|folder| Anchor::new(folder.as_ref(), &self.workspace.written))
            .collect();
        self
    }

    /// Whether git runs the file at the absolute location `absolute` (or what lies below
    /// it), by the workspace repository's config or the user's: an included config, the
    /// hooks folder, a command setting's script (see [`Self::with_git_runs`]).
    pub fn runs_by_git(&self, absolute: &str) -> bool {
        let case = self.path_case;
        self.git_runs.iter().any(|location| {
            location.strip(absolute, case).is_some() || Anchor::holds(absolute, location, case)
        })
    }

    /// The same context with the files and folders git runs by the repository's config
    /// (included configs, the hooks folder, the scripts of command settings), which
    /// `git_runs: true` matches: each, everything below one, and a folder holding one.
    #[must_use]
    pub fn with_git_runs<P: AsRef<Path>>(mut self, locations: impl IntoIterator<Item = P>) -> Self {
        self.git_runs = locations
            .into_iter()
            .map(|location| Anchor::new(location.as_ref(), &self.workspace.written))
            .collect();
        self
    }

    /// The same context with another path-case behaviour.
    #[must_use]
    #[cfg(test)]
    pub fn with_path_case(mut self, path_case: PathCase) -> Self {
        self.path_case = path_case;
        self
    }

    /// The normalised workspace root.
    pub fn workspace_root(&self) -> &str {
        &self.workspace.written
    }

    /// The normalised home folder, when known.
    pub fn home(&self) -> Option<&str> {
        self.home.as_ref().map(|home| home.written.as_str())
    }

    /// How paths compare.
    pub fn path_case(&self) -> PathCase {
        self.path_case
    }

    /// The forms of an absolute (folded) location.
    fn place(&self, absolute: String) -> NormalisedPath {
        let case = self.path_case;
        let under_root = self.workspace.strip(&absolute, case);
        let relative_at = under_root
            .filter(|rest| !rest.is_empty())
            .map(|rest| absolute.len() - rest.len());
        let (in_workspace, relative_at, wide_relative_at) = if self.wide {
            (None, None, relative_at)
        } else {
            (under_root, relative_at, None)
        };
        let home = self
            .home
            .as_ref()
            .and_then(|home| home.strip(&absolute, case))
            .map(|rest| {
                if rest.is_empty() {
                    "~".to_owned()
                } else {
                    format!("~/{rest}")
                }
            });
        // A policy location itself, a file in a policy folder that would be loaded (by its
        // extension), or a folder that holds a policy location (deleting it deletes them).
        // Other files in a policy folder are not: `-p .` makes the workspace a policy folder.
        let policy_file = self.policy_locations.iter().any(|location| {
            location
                .strip(&absolute, case)
                .is_some_and(|rest| rest.is_empty() || Format::from_path(Path::new(rest)).is_some())
                || Anchor::holds(&absolute, location, case)
        }) || self.policy_folders.iter().any(|folder| {
            folder.strip(&absolute, case).is_some() || Anchor::holds(&absolute, folder, case)
        });
        let git_runs = self.runs_by_git(&absolute);
        NormalisedPath {
            inside: in_workspace.is_some(),
            absolute,
            relative_at,
            wide_relative_at,
            home,
            policy_file,
            git_runs,
        }
    }
}

/// The compiled `path` matcher of one argument.
///
/// Compiling validates every pattern (syntax errors are reported with their offsets); the
/// glob automaton for a path case is built the first time a context with that case asks,
/// since building automata is most of the cost of a rule and most rules of a large policy
/// set are never consulted by a given process. [`PathMatcher::build`] builds it up front.
#[derive(Debug, Clone)]
pub struct PathMatcher {
    folded: Vec<String>,
    sensitive: OnceLock<Result<AnchoredSets, String>>,
    insensitive: OnceLock<Result<AnchoredSets, String>>,
}

/// The patterns of one case variant, one set per anchoring, each tried against its form.
#[derive(Debug, Clone)]
struct AnchoredSets {
    absolute: Option<AnchoredSet>,
    home: Option<AnchoredSet>,
    workspace: Option<AnchoredSet>,
}

/// The patterns of one anchoring.
#[derive(Debug, Clone)]
struct AnchoredSet {
    set: GlobList,
    /// Index in the rule's list of each pattern of the set (increasing).
    indices: Box<[usize]>,
    /// The runs of characters of the patterns (per pattern, one that every path it matches
    /// contains, see [`required_literal`]), searched for all at once; `None` when some
    /// pattern has none, or for case-insensitive sets. A form containing none of them
    /// matches no pattern, so the automaton is not run: most paths a rule sees match none
    /// of its patterns.
    literals: Option<AhoCorasick>,
}

impl AnchoredSets {
    fn build(folded: &[String], case_insensitive: bool) -> Result<Self, String> {
        let of = |anchoring| {
            let (indices, patterns): (Vec<usize>, Vec<String>) = folded
                .iter()
                .enumerate()
                .filter(|(_, pattern)| Anchoring::of(pattern) == anchoring)
                .map(|(index, pattern)| (index, pattern.clone()))
                .unzip();
            AnchoredSet::build(patterns, indices, case_insensitive)
        };
        Ok(Self {
            absolute: of(Anchoring::Absolute)?,
            home: of(Anchoring::Home)?,
            workspace: of(Anchoring::Workspace)?,
        })
    }

    /// The first pattern (by index in the rule's list) one location matches, each pattern
    /// tried against the form its anchoring names.
    fn first_match(&self, path: &NormalisedPath, mode: MatchMode) -> Option<usize> {
        [
            (&self.absolute, Some(path.absolute())),
            (&self.home, path.home()),
            (&self.workspace, path.relative_in(mode)),
        ]
        .into_iter()
        .filter_map(|(set, form)| set.as_ref()?.first_match(form?))
        .min()
    }
}

impl AnchoredSet {
    fn build(
        patterns: Vec<String>,
        indices: Vec<usize>,
        case_insensitive: bool,
    ) -> Result<Option<Self>, String> {
        if patterns.is_empty() {
            return Ok(None);
        }
        let literals = if case_insensitive {
            None
        } else {
            patterns
                .iter()
                .map(|pattern| required_literal(pattern))
                .collect::<Option<Vec<_>>>()
                // Only a prefilter: a set too large to build one for runs every form
                // through the automaton.
                .and_then(|literals| AhoCorasick::new(literals).ok())
        };
        Ok(Some(Self {
            set: GlobList::build(&patterns, true, case_insensitive)?,
            indices: indices.into(),
            literals,
        }))
    }

    /// The first pattern (by index in the rule's list) `form` matches.
    fn first_match(&self, form: &str) -> Option<usize> {
        let may_match = self
            .literals
            .as_ref()
            .is_none_or(|literals| literals.is_match(form));
        if !may_match {
            return None;
        }
        self.set
            .first_match(form)
            .and_then(|index| self.indices.get(index).copied())
    }
}

/// The longest run of literal characters of a glob: characters outside wildcards (`*`,
/// `?`), classes (`[…]`), alternations (`{…}`) and escapes, not crossing a `/` (a `**/`
/// may match nothing, so the separators around it are not required). A path the glob
/// matches contains the run. `None` when there is no such run, or when the pattern cannot
/// be scanned (an unterminated class or alternation, which the glob parser refuses anyway,
/// or a class inside an alternation).
fn required_literal(pattern: &str) -> Option<&str> {
    let bytes = pattern.as_bytes();
    let mut best: &str = "";
    let mut start = 0;
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        let next = match byte {
            b'*' | b'?' | b'/' => i + 1,
            // The escaped character (possibly several bytes long) is skipped too.
            b'\\' => {
                let escaped = pattern.get(i + 1..)?.chars().next()?;
                i + 1 + escaped.len_utf8()
            }
            b'[' => {
                // `]` right after `[`, `[!` or `[^` is a member, not the end.
                let mut j = i + 1;
                if matches!(bytes.get(j), Some(b'!' | b'^')) {
                    j += 1;
                }
                if bytes.get(j) == Some(&b']') {
                    j += 1;
                }
                j + bytes.get(j..)?.iter().position(|&b| b == b']')? + 1
            }
            b'{' => {
                let mut depth = 0usize;
                let mut j = i;
                loop {
                    match bytes.get(j)? {
                        b'{' => depth += 1,
                        b'}' => {
                            depth -= 1;
                            if depth == 0 {
                                break j + 1;
                            }
                        }
                        b'\\' => j += 1,
                        // A class inside an alternation may hold `}` or `,`: too rare to
                        // scan, so such a pattern gets no prefilter.
                        b'[' => return None,
                        _ => {}
                    }
                    j += 1;
                }
            }
            _ => {
                i += 1;
                continue;
            }
        };
        let run = pattern.get(start..i)?;
        if run.len() > best.len() {
            best = run;
        }
        i = next;
        start = next;
    }
    let run = pattern.get(start..)?;
    if run.len() > best.len() {
        best = run;
    }
    (!best.is_empty()).then_some(best)
}

/// What a [`PathMatcher`] found for one path argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathVerdict {
    /// Whether the matcher holds in the rule's mode (see [`Location::judge`]).
    pub holds: bool,
    /// The first pattern (by index) the deciding location matched, if any.
    pub pattern: Option<usize>,
    /// The location that decided.
    pub side: Side,
    /// Where the argument leads (`None` for an empty path), shared with the call's cache.
    pub path: Option<Arc<Location>>,
}

impl PathMatcher {
    /// Compiles the patterns (both case variants, so the context can choose).
    ///
    /// # Errors
    /// Every pattern that does not compile, with its index and best offset.
    pub fn compile(patterns: &[String]) -> Result<Self, Vec<(usize, GlobSyntaxError)>> {
        // Validate as written, so offsets point into what the author wrote; folding only
        // removes `./` and doubled slashes and writes `$HOME` as `~`, which cannot make a
        // valid glob invalid.
        parse_globs(patterns, true, false)?;
        Ok(Self {
            folded: patterns.iter().map(|p| fold_pattern(p)).collect(),
            sensitive: OnceLock::new(),
            insensitive: OnceLock::new(),
        })
    }

    /// Builds the automaton for `case` now (it is otherwise built on first use).
    ///
    /// # Errors
    /// Why it cannot be built: the patterns parse, but the automaton exceeds a size limit.
    pub fn build(&self, case: PathCase) -> Result<(), String> {
        self.sets(case).map(|_| ())
    }

    /// Drops the built sets; they are built again on first use.
    pub fn release(&mut self) {
        self.sensitive.take();
        self.insensitive.take();
    }

    /// The sets for `case`, built on first use.
    fn sets(&self, case: PathCase) -> Result<&AnchoredSets, String> {
        let cell = match case {
            PathCase::Sensitive => &self.sensitive,
            PathCase::Insensitive => &self.insensitive,
        };
        cell.get_or_init(|| AnchoredSets::build(&self.folded, case == PathCase::Insensitive))
            .as_ref()
            .map_err(Clone::clone)
    }

    #[cfg(any(test, feature = "fuzzing"))]
    /// Locates `raw` and matches it as a deny or ask rule would ([`MatchMode::Any`]: the
    /// written or the resolved location).
    ///
    /// ```
    /// use toolgate::policy::MatchContext;
    /// use toolgate::policy::path::PathMatcher;
    ///
    /// let ctx = MatchContext::new("/work/app").with_home("/home/dev");
    /// let m = PathMatcher::compile(&["**/.env".into(), "~/.ssh/**".into()]).unwrap();
    /// assert_eq!(m.matches("./a/../.env", &ctx).pattern, Some(0));
    /// assert_eq!(m.matches("/work/app/.env", &ctx).pattern, Some(0));
    /// assert_eq!(m.matches("/elsewhere/.env", &ctx).pattern, None, "relative patterns stay in the workspace");
    /// assert_eq!(m.matches("/home/dev/.ssh/id_rsa", &ctx).pattern, Some(1));
    /// assert_eq!(m.matches("$HOME/.ssh/config", &ctx).pattern, Some(1));
    /// assert_eq!(m.matches(".envrc", &ctx).pattern, None);
    /// ```
    pub fn matches(&self, raw: &str, ctx: &MatchContext) -> PathVerdict {
        self.judge(locate(raw, ctx).map(Arc::new), ctx, MatchMode::Any)
    }

    /// Judges a located argument in `mode` (see [`Location::judge`]). A matcher whose
    /// automaton cannot be built matches no location (callers that must fail closed ask
    /// [`PathMatcher::build`] first).
    pub fn judge(
        &self,
        path: Option<Arc<Location>>,
        ctx: &MatchContext,
        mode: MatchMode,
    ) -> PathVerdict {
        let Some(location) = path.as_deref() else {
            return PathVerdict {
                holds: false,
                pattern: None,
                side: Side::Written,
                path,
            };
        };
        let Judgement { holds, side } = location.judge(mode, |place| {
            self.matches_normalised(place, ctx, mode).is_some()
        });
        PathVerdict {
            holds,
            pattern: location
                .at(side)
                .and_then(|place| self.matches_normalised(place, ctx, mode)),
            side,
            path,
        }
    }

    /// The first pattern (by index) one location matches, each pattern against the form its
    /// anchoring names as a rule judging in `mode` reads it ([`NormalisedPath::relative_in`]);
    /// `None` also when the automaton cannot be built (see [`PathMatcher::build`]).
    pub fn matches_normalised(
        &self,
        path: &NormalisedPath,
        ctx: &MatchContext,
        mode: MatchMode,
    ) -> Option<usize> {
        self.sets(ctx.path_case()).ok()?.first_match(path, mode)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::policy::glob::build_glob_set;
    use globset::GlobBuilder;

    /// The file system is asked how it compares names: a name found again with its case
    /// swapped, as the same file, means case is ignored (a hard link stands in for a
    /// case-folding file system here).
    #[cfg(unix)]
    #[test]
    fn path_case_is_asked_of_the_file_system() {
        let dir = tempfile::tempdir().unwrap();
        let named = dir.path().join("Project");
        std::fs::write(&named, "").unwrap();
        assert_eq!(PathCase::of_folder(&named), PathCase::Sensitive);
        std::fs::hard_link(&named, dir.path().join("pROJECT")).unwrap();
        assert_eq!(PathCase::of_folder(&named), PathCase::Insensitive);
        // A link whose name differs only in case is another file.
        let linked = dir.path().join("Other");
        std::fs::create_dir(&linked).unwrap();
        std::os::unix::fs::symlink(&linked, dir.path().join("oTHER")).unwrap();
        assert_eq!(PathCase::of_folder(&linked), PathCase::Sensitive);
        assert_eq!(
            PathCase::of_folder(&dir.path().join("missing")),
            PathCase::native()
        );
    }

    #[test]
    fn folds_lexically() {
        let table = [
            ("/a/b/../c", "/a/c"),
            ("/a//b/./c/", "/a/b/c"),
            ("/..", "/"),
            ("/../../x", "/x"),
            ("a/../../b", "../b"),
            ("./x", "x"),
            ("", ""),
        ];
        for (input, expected) in table {
            assert_eq!(lexical(input), expected, "path {input}");
        }
    }

    /// The folding rules stated on components: a stack where `..` pops a name, is dropped
    /// at the root of an absolute path, and is kept at the start of a relative one.
    fn lexical_model(path: &str) -> String {
        let absolute = path.starts_with('/');
        let mut stack: Vec<&str> = Vec::new();
        for component in path.split('/') {
            match component {
                "" | "." => {}
                ".." if stack.last().is_some_and(|last| *last != "..") => {
                    stack.pop();
                }
                ".." if absolute => {}
                other => stack.push(other),
            }
        }
        let joined = stack.join("/");
        if absolute {
            format!("/{joined}")
        } else {
            joined
        }
    }

    #[test]
    fn finds_the_literal_a_glob_requires() {
        let table: &[(&str, Option<&str>)] = &[
            ("**/.env", Some(".env")),
            ("**/secrets/**", Some("secrets")),
            ("src/**/*.rs", Some("src")),
            ("lib/**/*.toml", Some(".toml")),
            ("docs/**/*.md", Some("docs")),
            ("*", None),
            ("**", None),
            ("[abc]x", Some("x")),
            ("[]abc]", None),
            ("[!]x]yz", Some("yz")),
            ("{alpha,beta}.txt", Some(".txt")),
            ("{a,{bb,cc}}", None),
            ("{x,[}]}yz", None),
            ("[{]yz", Some("yz")),
            ("\\*star", Some("star")),
            ("é\\éxy", Some("é")),
            ("unclosed[ab", None),
        ];
        for (pattern, expected) in table {
            assert_eq!(required_literal(pattern), *expected, "pattern {pattern}");
        }
    }

    /// Glob pieces, each with texts it may match (so that generated paths often match).
    const PIECES: &[(&str, &[&str])] = &[
        ("a", &["a"]),
        ("b", &["b"]),
        ("é", &["é"]),
        (".env", &[".env"]),
        ("secrets", &["secrets"]),
        ("*", &["", "a", "xé"]),
        ("**", &["", "a/b", "c"]),
        ("?", &["q", "é"]),
        ("/", &["/"]),
        ("[ab]", &["a", "b"]),
        ("[!a]", &["b", "-"]),
        ("[]a]", &["]", "a"]),
        ("{a,b}", &["a", "b"]),
        ("{a,}", &["a", ""]),
        ("{x,[}]}", &["x", "}"]),
        ("{[ab],c}", &["a", "c"]),
        ("[{]", &["{"]),
        ("[,}]", &[",", "}"]),
        ("\\*", &["*"]),
        ("\\a", &["a"]),
        ("-", &["-"]),
    ];

    proptest::proptest! {
        /// The prefilter never hides a match: a path a glob matches contains the glob's
        /// required literal. Paths are drawn from what each piece of the pattern may match
        /// (most match), with some pieces replaced by an arbitrary one (most do not).
        #[test]
        fn a_matching_path_contains_the_required_literal(
            pieces in proptest::collection::vec(
                (0..PIECES.len(), 0usize..3, proptest::option::weighted(0.1, 0..PIECES.len())),
                1..7,
            ),
        ) {
            let pattern: String = pieces.iter().map(|&(piece, _, _)| PIECES[piece].0).collect();
            let path: String = pieces
                .iter()
                .map(|&(piece, choice, other)| {
                    let texts = PIECES[other.unwrap_or(piece)].1;
                    texts[choice % texts.len()]
                })
                .collect();
            let Ok(glob) = GlobBuilder::new(&pattern)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
            else {
                return Ok(());
            };
            if glob.compile_matcher().is_match(&path)
                && let Some(literal) = required_literal(&pattern)
            {
                proptest::prop_assert!(
                    path.contains(literal),
                    "{pattern} matches {path} without {literal}"
                );
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn folds_like_the_component_model(
            absolute in proptest::bool::ANY,
            parts in proptest::collection::vec(
                proptest::sample::select(vec!["", ".", "..", "a", "b", "..a", ".b", "c d"]),
                0..10,
            ),
            relative in proptest::collection::vec(
                proptest::sample::select(vec!["", ".", "..", "x", "..."]),
                0..6,
            ),
        ) {
            let path = format!("{}{}", if absolute { "/" } else { "" }, parts.join("/"));
            proptest::prop_assert_eq!(lexical(&path), lexical_model(&path));
            // `normalise` folds `root/raw` without building that string first.
            let raw = relative.join("/");
            let ctx = MatchContext::new(&path);
            let root = ctx.workspace_root().to_owned();
            if let Some(normalised) = normalise(&raw, &ctx) {
                let expected = if raw.starts_with('/') {
                    lexical_model(&raw)
                } else {
                    lexical_model(&format!("{root}/{raw}"))
                };
                proptest::prop_assert_eq!(normalised.absolute(), expected);
            }
        }
    }

    /// [`normalise`] as it was before its shortcuts: every component of the root and of the
    /// path folded one by one.
    fn normalise_by_components(raw: &str, ctx: &MatchContext) -> Option<NormalisedPath> {
        if raw.is_empty() {
            return None;
        }
        let root = ctx.workspace_root();
        let mut folded = String::new();
        let absolute = if raw.starts_with('/') {
            push_components(&mut folded, raw, true);
            true
        } else {
            let absolute = root.starts_with('/');
            push_components(&mut folded, root, absolute);
            push_components(&mut folded, raw, absolute);
            absolute
        };
        Some(ctx.place(finish_components(folded, absolute)))
    }

    proptest::proptest! {
        #[test]
        fn normalising_takes_folded_parts_as_they_are(
            raw in "[ab./]{0,12}",
            root in proptest::sample::select(vec!["/", "/ws/app", "/ws/../x", ".", "", "rel/dir", "../up", "a/../..", "//ws//"]),
        ) {
            let ctx = MatchContext::new(root);
            proptest::prop_assert_eq!(normalise(&raw, &ctx), normalise_by_components(&raw, &ctx));
        }
    }

    #[test]
    fn normalises_against_the_workspace() {
        let ctx = MatchContext::new("/ws/app/");
        type Expected<'a> = Option<(&'a str, Option<&'a str>)>;
        let table: &[(&str, Expected<'_>)] = &[
            (".env", Some(("/ws/app/.env", Some(".env")))),
            ("./.env", Some(("/ws/app/.env", Some(".env")))),
            (".//.env", Some(("/ws/app/.env", Some(".env")))),
            ("a/../.env", Some(("/ws/app/.env", Some(".env")))),
            (
                "/ws/app/sub/.env",
                Some(("/ws/app/sub/.env", Some("sub/.env"))),
            ),
            ("../other/.env", Some(("/ws/other/.env", None))),
            ("/ws/application/x", Some(("/ws/application/x", None))),
            (".", Some(("/ws/app", None))),
            ("/etc/passwd", Some(("/etc/passwd", None))),
            ("", None),
        ];
        for (raw, expected) in table {
            let actual = normalise(raw, &ctx);
            let actual = actual.as_ref().map(|p| (p.absolute(), p.relative()));
            assert_eq!(actual, *expected, "path {raw:?}");
        }
        // A root that holds the home folder is no project: nothing is inside it.
        let root = MatchContext::new("/");
        let x = normalise("x/y", &root).unwrap();
        assert_eq!((x.absolute(), x.relative()), ("/x/y", None));
        assert_eq!(x.workspace_side(), WorkspaceSide::Outside);
        for (workspace, home) in [("/home/dev", "/home/dev"), ("/home", "/home/dev")] {
            let ctx = MatchContext::new(workspace).with_home(home);
            let bashrc = normalise("~/.cargo/env", &ctx).unwrap();
            assert_eq!(bashrc.relative(), None, "{workspace}");
            assert_eq!(
                bashrc.workspace_side(),
                WorkspaceSide::Outside,
                "{workspace}"
            );
        }
        let project = MatchContext::new("/home/dev/app").with_home("/home/dev");
        let main = normalise("src/main.rs", &project).unwrap();
        assert_eq!(main.relative(), Some("src/main.rs"));
    }

    #[test]
    fn matches_with_literal_separators() {
        let ctx = MatchContext::new("/ws").with_path_case(PathCase::Sensitive);
        let m = PathMatcher::compile(&[
            "**/.env".into(),
            "**/secrets/**".into(),
            "./docs/*.md".into(),
        ])
        .unwrap();
        let table: &[(&str, Option<usize>)] = &[
            (".env", Some(0)),
            ("./.env", Some(0)),
            ("a/../.env", Some(0)),
            (".//.env", Some(0)),
            ("/ws/.env", Some(0)),
            ("sub/.env", Some(0)),
            ("foo/./secrets/x", Some(1)),
            ("secrets/a/b", Some(1)),
            ("docs/a.md", Some(2)),
            ("docs/sub/a.md", None),
            (".envrc", None),
            ("docs/env.txt", None),
            (".ENV", None),
            ("secrets", None),
            // Relative patterns are anchored at the workspace root.
            ("/elsewhere/.env", None),
            ("../ws2/.env", None),
            ("/elsewhere/secrets/x", None),
        ];
        for (raw, expected) in table {
            assert_eq!(m.matches(raw, &ctx).pattern, *expected, "path {raw:?}");
        }
        let insensitive = MatchContext::new("/ws").with_path_case(PathCase::Insensitive);
        assert_eq!(m.matches(".ENV", &insensitive).pattern, Some(0));
        assert_eq!(m.matches("/WS/.ENV", &insensitive).pattern, Some(0));
    }

    /// The anchoring of every pattern, told by how it starts after folding.
    #[test]
    fn patterns_are_anchored_by_how_they_start() {
        let table = [
            ("/etc/**", Anchoring::Absolute),
            ("//etc", Anchoring::Absolute),
            ("/**/.env", Anchoring::Absolute),
            ("~", Anchoring::Home),
            ("~/.ssh/**", Anchoring::Home),
            ("$HOME/.aws/**", Anchoring::Home),
            ("${HOME}", Anchoring::Home),
            ("$HOMEDIR/x", Anchoring::Workspace),
            ("~user/x", Anchoring::Workspace),
            ("**", Anchoring::Workspace),
            ("./**", Anchoring::Workspace),
            ("**/*", Anchoring::Workspace),
            ("src/**", Anchoring::Workspace),
            ("{/etc,src}/**", Anchoring::Workspace),
        ];
        for (pattern, expected) in table {
            assert_eq!(Anchoring::of(&fold_pattern(pattern)), expected, "{pattern}");
        }
    }

    /// Home expansion in paths, and the locations that stay unknown.
    #[test]
    fn expands_the_home_folder() {
        let ctx = MatchContext::new("/ws/app")
            .with_home("/home/dev")
            .with_path_case(PathCase::Sensitive);
        type Expected<'a> = Result<(&'a str, Option<&'a str>), UnknownLocation>;
        let table: &[(&str, Expected<'_>)] = &[
            ("~", Ok(("/home/dev", Some("~")))),
            ("~/", Ok(("/home/dev", Some("~")))),
            (
                "~/.ssh/id_rsa",
                Ok(("/home/dev/.ssh/id_rsa", Some("~/.ssh/id_rsa"))),
            ),
            (
                "$HOME/.aws/credentials",
                Ok(("/home/dev/.aws/credentials", Some("~/.aws/credentials"))),
            ),
            ("${HOME}/.netrc", Ok(("/home/dev/.netrc", Some("~/.netrc")))),
            ("~/../../etc/passwd", Ok(("/etc/passwd", None))),
            (
                "/home/dev/.bashrc",
                Ok(("/home/dev/.bashrc", Some("~/.bashrc"))),
            ),
            ("/home/developer/x", Ok(("/home/developer/x", None))),
            // Another variable: a tool that expands `$HOME` may expand it too.
            ("$HOMEX/y", Err(UnknownLocation::Expansion)),
            ("a/$(id)/b", Err(UnknownLocation::Expansion)),
            ("cost$.txt", Ok(("/ws/app/cost$.txt", None))),
            (
                "routes/posts.$id.tsx",
                Ok(("/ws/app/routes/posts.$id.tsx", None)),
            ),
            ("x\0/.env", Err(UnknownLocation::Nul)),
            ("src/a.rs ", Err(UnknownLocation::Padded)),
            ("a/~/b", Ok(("/ws/app/a/~/b", None))),
            ("~root/.ssh/id_rsa", Err(UnknownLocation::OtherHome)),
            ("~+/x", Err(UnknownLocation::OtherHome)),
        ];
        for (raw, expected) in table {
            let actual = match locate(raw, &ctx).unwrap() {
                Location::Known { written, .. } => Ok((
                    written.absolute().to_owned(),
                    written.home().map(str::to_owned),
                )),
                Location::Unknown { why, .. } => Err(why),
            };
            let expected = expected.map(|(a, h)| (a.to_owned(), h.map(str::to_owned)));
            assert_eq!(actual, expected, "path {raw:?}");
        }
        let homeless = MatchContext::new("/ws/app");
        for raw in ["~", "~/.ssh/id_rsa", "$HOME/x", "${HOME}"] {
            assert!(
                matches!(
                    locate(raw, &homeless),
                    Some(Location::Unknown {
                        why: UnknownLocation::NoHome,
                        ..
                    })
                ),
                "{raw}"
            );
        }
        assert_eq!(locate("", &ctx), None);
    }

    #[test]
    fn tells_inside_from_outside() {
        let ctx = MatchContext::new("/ws/app").with_path_case(PathCase::Sensitive);
        let table = [
            (".", WorkspaceSide::Inside),
            ("./src/x", WorkspaceSide::Inside),
            ("/ws/app", WorkspaceSide::Inside),
            ("/ws/app/", WorkspaceSide::Inside),
            ("src/../../app/x", WorkspaceSide::Inside),
            ("..", WorkspaceSide::Outside),
            ("../other/.git/config", WorkspaceSide::Outside),
            ("/ws/application", WorkspaceSide::Outside),
            ("/etc/passwd", WorkspaceSide::Outside),
            ("/", WorkspaceSide::Outside),
        ];
        for (raw, expected) in table {
            let path = normalise(raw, &ctx).unwrap();
            assert_eq!(path.workspace_side(), expected, "path {raw:?}");
        }
    }

    #[test]
    fn policy_locations_cover_their_files_and_folders() {
        let ctx = MatchContext::new("/ws")
            .with_policy_locations(["/ws/.toolgate/policies", "/etc/org/policy.yaml", "team"])
            .with_path_case(PathCase::Sensitive);
        let table = [
            (".toolgate/policies", true),
            (".toolgate/policies/rules.yaml", true),
            ("/ws/.toolgate/policies/new/x.yaml", true),
            ("/etc/org/policy.yaml", true),
            ("team/a.toml", true),
            // A folder that holds policies: removing it removes them.
            (".toolgate", true),
            (".", true),
            ("/etc/org", true),
            // Files a policy folder would not load, and neighbours.
            (".toolgate/policies/notes.txt", false),
            (".toolgate/policies-old/x", false),
            ("/etc/org/policy.yaml.bak", false),
            ("src/main.rs", false),
        ];
        for (raw, expected) in table {
            let path = normalise(raw, &ctx).unwrap();
            assert_eq!(path.is_policy_file(), expected, "path {raw:?}");
        }
    }

    #[test]
    fn a_process_view_of_the_file_system_is_an_unknown_location() {
        let ws = tempfile::tempdir().unwrap();
        let ctx = MatchContext::new(ws.path()).with_path_case(PathCase::Sensitive);
        let why = |raw: &str| match locate(raw, &ctx).unwrap() {
            Location::Unknown { why, .. } => Some(why),
            Location::Known { .. } => None,
        };
        // A `cd` earlier in the line moves the shell, not toolgate: its `cwd` is not ours.
        for raw in [
            "/proc/self/cwd/.aws/credentials",
            "/proc/thread-self/cwd/x",
            "/dev/fd/../cwd/.ssh/id_rsa",
            "/proc/self/task/1/cwd/x",
            "/proc/999999/root/home/dev/.ssh/id_rsa",
            "/proc/1/cwd",
            "/proc/self/fd/3/id_rsa",
            "/dev/fd/3/x",
            "/proc/self/map_files/x",
        ] {
            assert_eq!(why(raw), Some(UnknownLocation::ProcessView), "{raw}");
        }
        // A descriptor at the end is the stream it is; our own root is `/`.
        let written = |raw: &str| match locate(raw, &ctx).unwrap() {
            Location::Known { written, resolved } => {
                resolved.unwrap_or(written).absolute().to_owned()
            }
            Location::Unknown { raw, why } => panic!("{raw}: {why}"),
        };
        assert_eq!(written("/dev/stdin"), "/proc/self/fd/0");
        assert_eq!(written("/proc/self/fd/1"), "/proc/self/fd/1");
        assert_eq!(written("/proc/self/root/etc/shadow"), "/etc/shadow");
        assert_eq!(written("/proc/cpuinfo"), "/proc/cpuinfo");
        assert_eq!(written("/proc/self/status"), "/proc/self/status");
    }

    #[test]
    fn resolves_symlinks_of_the_deepest_existing_ancestor() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let base_text = base.to_string_lossy().into_owned();
        std::fs::create_dir_all(base.join("ws/src")).unwrap();
        std::fs::create_dir_all(base.join("other/deep")).unwrap();
        std::os::unix::fs::symlink(base.join("other/deep"), base.join("ws/link")).unwrap();
        std::os::unix::fs::symlink("loop", base.join("ws/loop")).unwrap();
        std::os::unix::fs::symlink("../other/new.txt", base.join("ws/dangling")).unwrap();
        std::os::unix::fs::symlink(base.join("other/deep/gone"), base.join("ws/dangling-abs"))
            .unwrap();
        let ctx = MatchContext::new(base.join("ws")).with_path_case(PathCase::Sensitive);
        let resolved = |raw: &str| match locate(raw, &ctx).unwrap() {
            Location::Known { resolved, .. } => {
                resolved.map(|r| r.absolute().replace(&base_text, "<base>"))
            }
            Location::Unknown { why, .. } => panic!("{raw}: {why}"),
        };
        let table: &[(&str, Option<&str>)] = &[
            ("src/main.rs", None),
            ("link/new/file.txt", Some("<base>/other/deep/new/file.txt")),
            ("loop/x", None),
            ("missing/../src", None),
            // A link to nothing leads where a write through it would create a file.
            ("dangling", Some("<base>/other/new.txt")),
            ("dangling-abs/x", Some("<base>/other/deep/gone/x")),
            ("link/../../ws/src", None),
            // A missing folder and its `..` lead back to where the walk was: the links after
            // them are followed (as after `mkdir -p missing`, and as a tool that cleans the
            // path finds them).
            ("missing/../link/x", Some("<base>/other/deep/x")),
            ("missing/deeper/../../link", Some("<base>/other/deep")),
        ];
        for (raw, expected) in table {
            assert_eq!(resolved(raw).as_deref(), *expected, "path {raw:?}");
        }
        // An absolute path below the workspace is walked from it: its `..` leaves it.
        assert_eq!(resolved(&format!("{base_text}/ws/../ws/src")), None);
        // The kernel follows `link` before `..` (`<base>/other/x`), a tool that cleans the
        // path first does not (`ws/x`): where it leads is unknown.
        for raw in ["link/../x", "src/../link/../x"] {
            assert!(
                matches!(
                    locate(raw, &ctx),
                    Some(Location::Unknown {
                        why: UnknownLocation::ParentAfterLink,
                        ..
                    })
                ),
                "{raw}"
            );
        }
        let deep = "a/".repeat(MAX_COMPONENTS);
        assert!(matches!(
            locate(&deep, &ctx),
            Some(Location::Unknown {
                why: UnknownLocation::TooDeep,
                ..
            })
        ));
    }

    /// For a path that exists, the walk reaches what the C library's `realpath` reaches,
    /// whatever links (relative, absolute, chained, to folders) and `..` it goes through.
    #[test]
    fn resolving_an_existing_path_is_canonicalising_it() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        for folder in ["a/b/c", "d/e"] {
            std::fs::create_dir_all(base.join(folder)).unwrap();
        }
        std::fs::write(base.join("a/b/c/f"), "").unwrap();
        let links: &[(&str, String)] = &[
            ("a/up", "..".to_owned()),
            ("a/b/to-d", "../../d".to_owned()),
            ("d/e/abs", base.join("a/b").to_string_lossy().into_owned()),
            ("d/chain", "e/abs".to_owned()),
            ("d/file", "../a/b/c/f".to_owned()),
        ];
        for (link, target) in links {
            std::os::unix::fs::symlink(target, base.join(link)).unwrap();
        }
        let names = [
            "a", "b", "c", "f", "d", "e", "up", "to-d", "abs", "chain", "file", "..",
        ];
        let linked_root = base.join("a/b/to-d");
        let ctx = MatchContext::new(&linked_root);
        let mut compared = 0;
        // Every path of up to four of these names below `base` that exists.
        let mut paths = vec![String::new()];
        for _ in 0..4 {
            let mut longer = Vec::new();
            for path in &paths {
                for name in names {
                    longer.push(format!("{path}/{name}"));
                }
            }
            for path in &longer {
                let absolute = format!("{}{path}", base.to_string_lossy());
                if let Ok(real) = std::fs::canonicalize(&absolute) {
                    compared += 1;
                    assert_eq!(
                        resolve(&absolute).ok().flatten().as_deref(),
                        Some(real.to_string_lossy().as_ref()),
                        "path {path}"
                    );
                }
                // The same path below a workspace root written through a link: walked from
                // the root's resolved form.
                let below = format!("{}{path}", linked_root.to_string_lossy());
                if let Ok(real) = std::fs::canonicalize(&below)
                    && let Some(Location::Known { written, resolved }) = locate(&below, &ctx)
                {
                    let reached = resolved.as_ref().unwrap_or(&written).absolute().to_owned();
                    assert_eq!(
                        reached,
                        real.to_string_lossy(),
                        "path {path} below the root"
                    );
                }
            }
            paths = longer;
        }
        assert!(compared > 50, "only {compared} paths exist");
    }

    #[test]
    fn judges_both_locations_by_mode() {
        let place = |absolute: &str| MatchContext::new("/ws").place(absolute.to_owned());
        let linked = Location::Known {
            written: place("/ws/notes"),
            resolved: Some(place("/ws/.env")),
        };
        let plain = Location::Known {
            written: place("/ws/notes"),
            resolved: None,
        };
        let unknown = Location::Unknown {
            raw: "~/x".to_owned(),
            why: UnknownLocation::NoHome,
        };
        let is_env = |p: &NormalisedPath| p.absolute().ends_with(".env");
        let is_notes = |p: &NormalisedPath| p.absolute().ends_with("notes");
        let table = [
            (
                &linked,
                MatchMode::Any,
                is_env as fn(&NormalisedPath) -> bool,
                true,
                Side::Resolved,
            ),
            (&linked, MatchMode::All, is_env, false, Side::Written),
            (&linked, MatchMode::Any, is_notes, true, Side::Written),
            (&linked, MatchMode::All, is_notes, false, Side::Resolved),
            (
                &linked,
                MatchMode::All,
                |_: &NormalisedPath| true,
                true,
                Side::Written,
            ),
            (&plain, MatchMode::Any, is_env, false, Side::Written),
            (&plain, MatchMode::All, is_notes, true, Side::Written),
            (&unknown, MatchMode::Any, is_env, true, Side::Written),
            (
                &unknown,
                MatchMode::All,
                |_: &NormalisedPath| true,
                false,
                Side::Written,
            ),
        ];
        for (location, mode, condition, holds, side) in table {
            assert_eq!(
                location.judge(mode, condition),
                Judgement { holds, side },
                "{location} {mode:?}"
            );
        }
    }

    /// A reference for one location: each pattern compiled alone by `globset` and tried
    /// against the form its anchoring names.
    fn reference_match(
        patterns: &[String],
        path: &NormalisedPath,
        case: PathCase,
    ) -> Option<usize> {
        patterns.iter().position(|pattern| {
            let folded = fold_pattern(pattern);
            let form = match Anchoring::of(&folded) {
                Anchoring::Absolute => Some(path.absolute()),
                Anchoring::Home => path.home(),
                Anchoring::Workspace => path.relative_in(MatchMode::Any),
            };
            let set = build_glob_set(&[folded], true, case == PathCase::Insensitive).unwrap();
            form.is_some_and(|form| set.is_match(form))
        })
    }

    #[test]
    fn both_cases_match_like_each_pattern_on_its_own_form() {
        let patterns: Vec<String> = [
            "/abs/**",
            "**/x",
            "*/x",
            "{/ws,src}/**",
            "?ws/**",
            "[/]ws/x",
            "\\/ws/x",
            "src/**",
            "x",
            "*",
            "**",
            "/ws",
            "./src/*.rs",
            "//ws//x",
            "~/x",
            "$HOME/**",
            "/**/x",
        ]
        .map(String::from)
        .to_vec();
        let matcher = PathMatcher::compile(&patterns).unwrap();
        for case in [PathCase::Sensitive, PathCase::Insensitive] {
            let ctx = MatchContext::new("/ws")
                .with_home("/h")
                .with_path_case(case);
            for raw in [
                "x",
                "src/x",
                "src/a.rs",
                "/ws/x",
                "/abs/x",
                "/x",
                "a/x",
                "/ws",
                "ws/x",
                ".",
                "../x",
                "/elsewhere/src/x",
                "SRC/A.RS",
                "~/x",
                "/h/a/x",
            ] {
                let path = normalise(raw, &ctx).unwrap();
                assert_eq!(
                    matcher.matches_normalised(&path, &ctx, MatchMode::Any),
                    reference_match(&patterns, &path, case),
                    "{raw:?} {case:?}"
                );
            }
        }
    }

    proptest::proptest! {
        /// With the literal prefilter on (case-sensitive, every pattern has a literal), the
        /// matcher finds what each pattern alone finds on its form, whatever the root.
        #[test]
        fn prefiltered_matching_is_matching_each_form(
            raw in "(/?(ws|src|\\.env|secrets|a\\.rs|\\.\\.|x|~)){1,5}",
            root in proptest::sample::select(vec!["/", "/ws", "/ws/src", "ws", "."]),
        ) {
            let patterns: Vec<String> = [
                "**/.env", "**/secrets/**", "src/*.rs", "/ws/s*/x", "ws/x", "~/s*/x", "/**/.env",
            ]
            .map(String::from)
            .to_vec();
            let matcher = PathMatcher::compile(&patterns).unwrap();
            let ctx = MatchContext::new(root).with_home("/ws/src").with_path_case(PathCase::Sensitive);
            if let Some(path) = normalise(&raw, &ctx) {
                proptest::prop_assert_eq!(
                    matcher.matches_normalised(&path, &ctx, MatchMode::Any),
                    reference_match(&patterns, &path, PathCase::Sensitive)
                );
            }
        }

        /// Whatever the path, the relative patterns `**`, `./**` and `**/*` never match a
        /// location outside the workspace for an allow rule (deny and ask rules still read a
        /// relative form under a root too wide to be a project).
        #[test]
        fn relative_patterns_never_match_outside_the_workspace(
            raw in "(/|~/|\\$HOME/)?((\\.\\.|\\.|ws|app|x|~|/)/?){0,8}",
            root in proptest::sample::select(vec!["/", "/ws", "/ws/app", "/ws/app/x"]),
        ) {
            let matcher =
                PathMatcher::compile(&["**".into(), "./**".into(), "**/*".into()]).unwrap();
            let ctx = MatchContext::new(root).with_home("/ws").with_path_case(PathCase::Sensitive);
            if let Some(location) = locate(&raw, &ctx) {
                for side in [Side::Written, Side::Resolved] {
                    if let Some(place) = location.at(side)
                        && matcher.matches_normalised(place, &ctx, MatchMode::All).is_some()
                    {
                        let absolute = place.absolute();
                        proptest::prop_assert!(
                            root == "/" || absolute.starts_with(&format!("{root}/")),
                            "{raw:?} ({absolute}) matched outside {root}"
                        );
                        proptest::prop_assert_eq!(place.workspace_side(), WorkspaceSide::Inside);
                    }
                }
            }
        }
    }

    #[test]
    fn reports_glob_errors_with_offsets() {
        let errors =
            PathMatcher::compile(&["ok/**".into(), "a/[bc".into(), "x{a,b".into()]).unwrap_err();
        let summary: Vec<(usize, Option<usize>)> =
            errors.iter().map(|(i, e)| (*i, e.offset)).collect();
        assert_eq!(summary, [(1, Some(2)), (2, Some(1))]);
    }
}
