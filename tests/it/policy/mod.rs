//! Rule matchers: path and argument matching, shell command patterns.

mod security;
mod semantics;
mod shell_props;
