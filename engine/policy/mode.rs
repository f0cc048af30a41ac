//! How a rule's matchers combine with what an input holds: every element (allow rules) or
//! any element (deny and ask rules). Shared by the argument matchers and the shell patterns.

/// How a rule's matchers combine with what the input holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatchMode {
    /// For allow rules: every simple command of a shell line, and every element of an array,
    /// must match; anything that cannot be analysed does not match.
    All,
    /// For deny and ask rules: one matching command or element suffices; anything that
    /// cannot be analysed matches (fail closed).
    Any,
}
