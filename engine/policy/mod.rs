//! Permission decisions: rule compilation, argument matchers (glob, regex, equals, exists,
//! path, shell) and the combination of matching rules into a decision with its reasons.
//! Synchronous and pure.
//!
//! The argument matchers live here:
//! - [`matcher`]: a rule's `match` map ([`ArgMatcherSpec`] per selector) compiled into
//!   [`CompiledArgMatchers`], evaluated against a call's input into a [`MatchOutcome`];
//! - [`shell`]: command lines parsed and split into every simple command they would run;
//! - [`pattern`]: the token patterns of the `shell` matcher and its allow/deny semantics;
//! - [`path`]: lexical path normalisation and path globs;
//! - `glob`: glob lists, matched directly when every pattern is plain, else by `globset`.

pub mod decide;
mod glob;
pub mod matcher;
pub mod path;
pub mod pattern;
pub mod rules;
pub mod shell;

pub use matcher::{
    ArgMatcherSpec, Check, CheckDetail, CompiledArgMatchers, MatchContext, MatchMode, MatchOutcome,
    MatcherKind, ParseCache, PathCase, PatternError, PatternKind, SelectorOutcome,
};
pub use path::{NormalisedPath, PathMatcher, PathVerdict};
pub use pattern::{
    FailClosed, PatternSyntaxError, RedirectionPolicy, Refusal, RefusalReason, ShellMatcher,
    ShellPattern, ShellVerdict,
};
pub use shell::{Script, ShellParseError, SimpleCommand, parse_script};
