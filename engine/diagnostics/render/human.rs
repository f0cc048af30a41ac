//! The human format: rustc-like reports with a source excerpt and an underline, drawn by
//! `miette`'s graphical handler, followed by a summary line (`2 errors, 1 warning`).
//!
//! The theme is fixed (Unicode box drawing; ANSI colours only when asked for) and the width
//! is fixed, so the output does not depend on the terminal and snapshots are stable.

use std::fmt;
use std::sync::Arc;

use miette::{
    GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceCode, SourceSpan,
    ThemeCharacters, ThemeStyles,
};

use super::summary;
use crate::diagnostics::{Diagnostic, Location, Severity};

/// Options of the human renderer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HumanOptions {
    /// Use ANSI colours.
    pub color: bool,
    /// Wrap width in columns.
    pub width: usize,
}

impl Default for HumanOptions {
    fn default() -> Self {
        Self {
            color: false,
            width: 100,
        }
    }
}

/// Renders every diagnostic as a report, then the summary line.
pub fn render_human(diagnostics: &[Diagnostic], options: &HumanOptions) -> String {
    let theme = GraphicalTheme {
        characters: ThemeCharacters::unicode(),
        styles: if options.color {
            ThemeStyles::ansi()
        } else {
            ThemeStyles::none()
        },
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_width(options.width)
        .with_links(false)
        .with_context_lines(1)
        .with_wrap_lines(false)
        .without_syntax_highlighting();
    let mut out = String::new();
    for diagnostic in diagnostics {
        let report = Report::new(diagnostic);
        let mut text = String::new();
        if handler.render_report(&mut text, &report).is_err() {
            // Rendering into a `String` does not fail; keep the plain form just in case.
            text = format!("{diagnostic}\n");
        }
        out.push_str(&text);
        if !text.ends_with('\n') {
            out.push('\n');
        }
        out.push('\n');
    }
    out.push_str(&summary(diagnostics));
    out.push('\n');
    out
}

/// One diagnostic (or a related place) in the shape `miette` renders.
struct Report<'a> {
    message: String,
    code: Option<&'a str>,
    severity: miette::Severity,
    help: Option<&'a str>,
    source: Option<NamedSource<Arc<str>>>,
    labels: Vec<LabeledSpan>,
    related: Vec<Report<'a>>,
}

impl<'a> Report<'a> {
    fn new(diagnostic: &'a Diagnostic) -> Self {
        let (source, mut labels, message) = match &diagnostic.location {
            Some(location) => {
                let (source, label, suffix) = place(location, None, &diagnostic.message);
                (
                    source,
                    label.into_iter().collect::<Vec<_>>(),
                    format!("{}{suffix}", diagnostic.message),
                )
            }
            None => (None, Vec::new(), diagnostic.message.clone()),
        };
        let primary_path = diagnostic
            .location
            .as_ref()
            .filter(|_| source.is_some())
            .map(|location| location.source.path());
        let mut related = Vec::new();
        for item in &diagnostic.related {
            let (item_source, label, suffix) =
                place(&item.location, Some(&item.message), &item.message);
            // A place in the same file is drawn in the same excerpt.
            if primary_path == Some(item.location.source.path())
                && let Some(label) = label
            {
                labels.push(LabeledSpan::new_with_span(
                    label.label().map(str::to_owned),
                    *label.inner(),
                ));
                continue;
            }
            related.push(Report {
                message: format!("{}{suffix}", item.message),
                code: None,
                severity: miette::Severity::Advice,
                help: None,
                source: item_source,
                labels: label.into_iter().collect(),
                related: Vec::new(),
            });
        }
        Report {
            message,
            code: Some(diagnostic.code.as_str()),
            severity: match diagnostic.severity {
                Severity::Error => miette::Severity::Error,
                Severity::Warning => miette::Severity::Warning,
            },
            help: diagnostic.help.as_deref(),
            source,
            labels,
            related,
        }
    }
}

/// The source and label for a location; a file without text (unreadable, empty) gets no
/// excerpt, and its position goes into the message instead.
fn place(
    location: &Location,
    label: Option<&str>,
    message: &str,
) -> (Option<NamedSource<Arc<str>>>, Option<LabeledSpan>, String) {
    if location.source.text().trim().is_empty() {
        // The message of an I/O error already names the file.
        let suffix = if message.contains(&**location.source.path()) {
            String::new()
        } else {
            format!(" (at {})", location.display())
        };
        return (None, None, suffix);
    }
    let span = location.span;
    let source = NamedSource::new(location.source.path(), Arc::clone(location.source.text()));
    let labeled = LabeledSpan::new_primary_with_span(
        label.map(str::to_owned),
        SourceSpan::new(span.offset.into(), span.len),
    );
    (Some(source), Some(labeled), String::new())
}

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Report<'_> {}

impl miette::Diagnostic for Report<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.code
            .map(|code| Box::new(code) as Box<dyn fmt::Display>)
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(self.severity)
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.help
            .map(|help| Box::new(help) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.source.as_ref().map(|source| source as &dyn SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        if self.labels.is_empty() {
            None
        } else {
            Some(Box::new(self.labels.iter().cloned()))
        }
    }

    fn related<'b>(&'b self) -> Option<Box<dyn Iterator<Item = &'b dyn miette::Diagnostic> + 'b>> {
        if self.related.is_empty() {
            None
        } else {
            Some(Box::new(
                self.related.iter().map(|r| r as &dyn miette::Diagnostic),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::Code;
    use crate::diagnostics::{Format, SourceFile};

    fn sample() -> Vec<Diagnostic> {
        let source = SourceFile::in_memory("a.yaml", "a: 1\nb: x\n", Format::Yaml);
        vec![
            Diagnostic::new(Code::SchemaType, "expected an integer, found a string `x`")
                .with_location(source.location_at(8, 1))
                .with_help("write a number"),
            Diagnostic::new(Code::SemanticRuleShadowed, "no location"),
        ]
    }

    #[test]
    fn plain_output_has_code_position_help_and_summary() {
        let text = render_human(&sample(), &HumanOptions::default());
        assert!(!text.contains('\u{1b}'), "{text}");
        for needle in [
            "toolgate::schema::type",
            "expected an integer, found a string `x`",
            "a.yaml:2:4",
            "help: write a number",
            "toolgate::semantic::rule_shadowed",
            "1 error, 1 warning",
        ] {
            assert!(text.contains(needle), "{needle} missing in:\n{text}");
        }
    }

    #[test]
    fn related_places_in_other_files_get_their_own_excerpt() {
        let first = SourceFile::in_memory("org/tools.yaml", "tools:\n  Bash: {}\n", Format::Yaml);
        let second =
            SourceFile::in_memory("project/tools.yaml", "tools:\n  Bash: {}\n", Format::Yaml);
        let diagnostic =
            Diagnostic::new(Code::SemanticDuplicateName, "tool `Bash` is defined twice")
                .with_location(second.location_at(9, 4))
                .with_related("first defined here", first.location_at(9, 4));
        let text = render_human(&[diagnostic], &HumanOptions::default());
        assert!(text.contains("project/tools.yaml:2:3"), "{text}");
        assert!(text.contains("org/tools.yaml:2:3"), "{text}");
        assert!(text.contains("first defined here"), "{text}");
    }

    #[test]
    fn colour_is_opt_in() {
        let options = HumanOptions {
            color: true,
            ..HumanOptions::default()
        };
        assert!(render_human(&sample(), &options).contains('\u{1b}'));
    }
}
