//! Permission decisions: rule compilation, argument matchers (glob, regex, equals, exists,
//! path, workspace, policy_files, shell) and the combination of matching rules into a
//! decision with its reasons.
//! Synchronous; pure but for the symlinks a path condition resolves (see [`path`]) and the
//! folders a search reads (module `search`).
//!
//! The argument matchers live here:
//! - [`matcher`]: a rule's `match` map (a model `ArgMatcher` per selector) compiled into
//!   [`CompiledArgMatchers`], evaluated against a call's input into a [`MatchOutcome`];
//! - [`shell`]: command lines parsed and split into every simple command they would run;
//! - [`pattern`]: the token patterns of the `shell` matcher and its allow/deny semantics;
//! - [`path`]: path arguments as locations (home expanded, normalised against the workspace,
//!   resolved through symlinks), path globs, the workspace and policy-file conditions, and the
//!   [`MatchContext`] (workspace root, home, policy files, path case) they are judged in;
//! - [`mode`]: whether every element or any element must match;
//! - `glob`: glob parsing (with error offsets) and glob lists, matched directly when every
//!   pattern is plain, else by `globset`;
//! - `groups`: the rules of a tool that are each one `regex` or `glob` list over the same
//!   field, matched as one automaton per decision.
//!
//! Deciding: [`rule`] is one compiled rule and the decision it gives; [`rules`] indexes them
//! by tool (`groups` match some together) and decides a call as one whole; `search` judges
//! the files below a searched folder through that index; [`parts`] decides a call with a
//! command line part by part through it; [`decide`] adds the hooks' votes.
//!
//! Asking the file system: `disk` keeps what one decision has been told (a path's metadata,
//! a link's target, a resolved path) for the rest of that decision; every module below
//! asks through it.
//!
//! `rust_modules` finds where a workspace's Rust modules lead off the command line
//! (`#[path]`, linked `.rs` files) for the programs that follow them (`parts` judges those
//! files).
//!
//! Reading files without running git: `content` (a file's first bytes) ← `git_config` (where
//! a repository is, its config and what that makes git run) ← `git_index` (the files it
//! tracks, configs holding a token) ← `search`, `parts`.
//!
//! Dependencies run one way: `glob` ← `path` ← `matcher`; `mode` ← `path`, `pattern` ←
//! `matcher`; `rule` ← `groups` ← `rules` ← `search` ← `parts`.

pub mod commands;
pub(crate) mod content;
pub mod decide;
mod disk;
pub(crate) mod git_config;
mod git_index;
mod glob;
mod groups;
pub mod matcher;
pub mod mode;
pub mod parts;
pub mod path;
pub mod pattern;
pub mod rule;
pub mod rules;
mod rust_modules;
mod search;
pub mod shell;

pub use path::MatchContext;

#[cfg(test)]
mod tests;
