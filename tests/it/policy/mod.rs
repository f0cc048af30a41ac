//! Rule matchers: path and argument matching, shell command patterns.

mod security;
mod shell_props;
