//! Renderers: a list of [`Diagnostic`]s to text in one of the four output formats of
//! `toolgate check` (human source excerpts, JSON, GitHub workflow annotations, SARIF).
//!
//! Renderers are pure functions from diagnostics to a `String`; the CLI decides where the
//! text goes and which exit code follows.

pub mod github;
pub mod human;
pub mod json;
pub mod sarif;

use std::fmt;
use std::str::FromStr;

use super::diagnostic::{Diagnostic, count};

pub use github::render_github;
pub use human::{HumanOptions, render_human};
pub use json::{render_json, to_json};
pub use sarif::render_sarif;

/// An output format for diagnostics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutputFormat {
    /// Source excerpts with underlines, like rustc.
    Human,
    /// `{"diagnostics": [{"code", "severity", "message", "file", "line", "column", "help"}]}`.
    Json,
    /// GitHub workflow annotations (`::error file=…`).
    Github,
    /// SARIF 2.1.0.
    Sarif,
}

impl OutputFormat {
    /// Every format, in documentation order.
    pub const ALL: &'static [OutputFormat] = &[
        OutputFormat::Human,
        OutputFormat::Json,
        OutputFormat::Github,
        OutputFormat::Sarif,
    ];

    /// The name used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            OutputFormat::Human => "human",
            OutputFormat::Json => "json",
            OutputFormat::Github => "github",
            OutputFormat::Sarif => "sarif",
        }
    }
}

impl fmt::Display for OutputFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A format name that is not one of `human`, `json`, `github`, `sarif`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown output format `{0}`: expected `human`, `json`, `github` or `sarif`")]
pub struct UnknownFormat(pub String);

impl FromStr for OutputFormat {
    type Err = UnknownFormat;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        OutputFormat::ALL
            .iter()
            .copied()
            .find(|format| format.as_str() == s)
            .ok_or_else(|| UnknownFormat(s.to_owned()))
    }
}

/// `2 errors, 1 warning`, `1 error`, `3 warnings`, or `no problems found`.
pub fn summary(diagnostics: &[Diagnostic]) -> String {
    let (errors, warnings) = count(diagnostics);
    let part = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    match (errors, warnings) {
        (0, 0) => "no problems found".to_owned(),
        (e, 0) => part(e, "error"),
        (0, w) => part(w, "warning"),
        (e, w) => format!("{}, {}", part(e, "error"), part(w, "warning")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::Code;

    #[test]
    fn summaries_pluralise() {
        let error = Diagnostic::new(Code::SchemaType, "e");
        let warning = Diagnostic::new(Code::SemanticRuleShadowed, "w");
        let cases = [
            (vec![], "no problems found"),
            (vec![error.clone()], "1 error"),
            (vec![warning.clone(), warning.clone()], "2 warnings"),
            (vec![error.clone(), error, warning], "2 errors, 1 warning"),
        ];
        for (list, expected) in cases {
            assert_eq!(summary(&list), expected);
        }
    }

    #[test]
    fn formats_parse() {
        for &format in OutputFormat::ALL {
            assert_eq!(format.as_str().parse::<OutputFormat>(), Ok(format));
        }
        assert!("xml".parse::<OutputFormat>().is_err());
    }
}
