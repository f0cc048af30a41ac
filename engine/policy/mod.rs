//! Permission decisions: rule compilation, argument matchers (glob, regex, equals, exists,
//! path, shell) and the combination of matching rules into a decision with its reasons.
//! Synchronous and pure.
//!
//! The argument matchers live here:
//! - [`matcher`]: a rule's `match` map ([`ArgMatcherSpec`] per selector) compiled into
//!   [`CompiledArgMatchers`], evaluated against a call's input into a [`MatchOutcome`];
//! - [`shell`]: command lines parsed and split into every simple command they would run;
//! - [`pattern`]: the token patterns of the `shell` matcher and its allow/deny semantics;
//! - [`path`]: lexical path normalisation, path globs and the [`MatchContext`] (workspace
//!   root, path case) they are matched in;
//! - [`mode`]: whether every element or any element must match;
//! - `glob`: glob parsing (with error offsets) and glob lists, matched directly when every
//!   pattern is plain, else by `globset`.
//!
//! Dependencies run one way: `glob` ← `path` ← `matcher`; `mode` ← `pattern` ← `matcher`.

pub mod commands;
pub mod decide;
mod glob;
pub mod matcher;
pub mod mode;
pub mod parts;
pub mod path;
pub mod pattern;
pub mod rules;
pub mod shell;

pub use matcher::{
    ArgMatcherSpec, Check, CheckDetail, CompiledArgMatchers, MatchOutcome, MatcherKind, ParseCache,
    PatternError, PatternKind, SelectorOutcome,
};
pub use mode::MatchMode;
pub use path::{MatchContext, NormalisedPath, PathCase, PathMatcher, PathVerdict};
pub use pattern::{
    FailClosed, PatternSyntaxError, RedirectionPolicy, Refusal, RefusalReason, ShellMatcher,
    ShellPattern, ShellVerdict,
};
pub use shell::{Script, ShellParseError, SimpleCommand, parse_script};
