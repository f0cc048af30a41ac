//! The `toolgate` command line.

mod budget;
mod check;
mod check_diagnostics;
mod descendants;
mod diff;
mod explain_provenance;
mod plan_run;
mod project;
mod signals;
mod test;
mod watch;
