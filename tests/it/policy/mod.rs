//! Rule matchers: path and argument matching (paths as locations on a real workspace), shell
//! command patterns.

mod semantics;
