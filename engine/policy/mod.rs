//! Permission decisions: rule compilation, argument matchers (glob, regex, equals, exists,
//! path, shell) and the combination of matching rules into a decision with its reasons.
//! Synchronous and pure.

pub mod shell;
