//! `toolgate check`: validate the policy set and report every problem.

use std::sync::Arc;

use crate::diagnostics::render::{
    HumanOptions, OutputFormat, render_github, render_human, render_json, render_sarif,
};
use crate::diagnostics::{Diagnostic, Severity};
use crate::snapshot::{Snapshot, load};

use super::{Exit, GlobalOptions, is_io_problem};

/// The result of a check.
#[derive(Clone, Debug)]
pub struct CheckReport {
    /// Every diagnostic, in file and position order.
    pub diagnostics: Vec<Diagnostic>,
    /// The snapshot, when the set loaded.
    pub snapshot: Option<Arc<Snapshot>>,
}

impl CheckReport {
    /// The numbers of files, tools and rules of the set; all 0 when it did not load.
    pub fn counts(&self) -> (usize, usize, usize) {
        self.snapshot.as_ref().map_or((0, 0, 0), |s| {
            (s.sources.files.len(), s.tools.len(), s.rules.rules().len())
        })
    }

    /// The exit status: 2 when a root does not exist, 1 on errors (or warnings with
    /// `deny_warnings`), else 0.
    pub fn exit(&self) -> Exit {
        if is_io_problem(&self.diagnostics) {
            Exit::Usage
        } else if self.diagnostics.iter().any(Diagnostic::is_error) {
            Exit::Problems
        } else {
            Exit::Success
        }
    }

    /// Renders the report in a format.
    pub fn render(&self, format: OutputFormat, color: bool) -> String {
        match format {
            OutputFormat::Human => {
                let mut out = if self.diagnostics.is_empty() {
                    String::new()
                } else {
                    render_human(
                        &self.diagnostics,
                        &HumanOptions {
                            color,
                            ..HumanOptions::default()
                        },
                    )
                };
                if !self.diagnostics.iter().any(Diagnostic::is_error) {
                    let (files, tools, rules) = self.counts();
                    out.push_str(&format!(
                        "policy set OK: {files} files, {tools} tools, {rules} rules\n"
                    ));
                }
                out
            }
            OutputFormat::Json => render_json(&self.diagnostics),
            OutputFormat::Github => render_github(&self.diagnostics),
            OutputFormat::Sarif => render_sarif(&self.diagnostics),
        }
    }
}

/// Loads and checks the policy set. With `deny_warnings`, warnings count as errors.
///
/// Unlike a load for running batches, every rule's glob and regex automata are built, so
/// that one exceeding a size limit is reported here rather than failing closed at run time.
pub fn check(global: &GlobalOptions, deny_warnings: bool) -> CheckReport {
    let mut options = global.load_options();
    options.build_all_matchers = true;
    let outcome = load(&options, 1);
    let mut diagnostics = outcome.diagnostics;
    if deny_warnings {
        for diagnostic in &mut diagnostics {
            diagnostic.severity = Severity::Error;
        }
    }
    CheckReport {
        diagnostics,
        snapshot: outcome.snapshot,
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn global(root: &str) -> GlobalOptions {
        GlobalOptions {
            policies: vec![PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(root)],
            ..GlobalOptions::default()
        }
    }

    #[test]
    fn a_clean_set_keeps_its_snapshot_and_counts_from_it() {
        let report = check(&global("examples/policies"), false);
        assert_eq!(report.exit(), Exit::Success, "{:?}", report.diagnostics);
        let snapshot = report.snapshot.as_ref().expect("the set loads");
        let (files, tools, rules) = report.counts();
        assert_eq!(tools, snapshot.tools.len());
        assert_eq!(rules, snapshot.rules.rules().len());
        assert_eq!(files, snapshot.sources.files.len());
        assert!(tools > 0 && rules > 0);
    }

    #[test]
    fn a_set_with_errors_has_no_snapshot() {
        let report = check(&global("tests/fixtures/check/duplicate_name"), false);
        assert_eq!(report.exit(), Exit::Problems);
        assert!(report.snapshot.is_none());
        assert_eq!(report.counts(), (0, 0, 0));
    }
}
