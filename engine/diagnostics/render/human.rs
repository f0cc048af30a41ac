//! The human format: rustc-like reports with a source excerpt and an underline, drawn by
//! `miette`'s graphical handler, followed by a summary line (`2 errors, 1 warning`).
//!
//! The theme is fixed (Unicode box drawing; ANSI colours only when asked for) and the width
//! is fixed, so the output does not depend on the terminal and snapshots are stable.

use std::fmt;
use std::sync::Arc;

use miette::{
    GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError, MietteSpanContents,
    NamedSource, SourceCode, SourceSpan, SpanContents, ThemeCharacters, ThemeStyles,
};

use super::summary;
use crate::diagnostics::{Diagnostic, Location, Severity, SourceFile};

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
    source: Option<NamedSource<Indexed>>,
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
) -> (Option<NamedSource<Indexed>>, Option<LabeledSpan>, String) {
    if location.source.text().trim().is_empty() {
        // The message of an I/O error already names the file.
        let suffix = if message.contains(&**location.source.path()) {
            String::new()
        } else {
            format!(" (at {})", location.display())
        };
        return (None, None, suffix);
    }
    let shown = excerpt_len(location);
    if shown > MAX_EXCERPT {
        return (
            None,
            None,
            format!(
                " (at {}; the lines there hold {shown} bytes, too many to show)",
                location.display()
            ),
        );
    }
    let span = location.span;
    let source = NamedSource::new(
        location.source.path(),
        Indexed(Arc::clone(&location.source)),
    );
    let labeled = LabeledSpan::new_primary_with_span(
        label.map(str::to_owned),
        SourceSpan::new(span.offset.into(), span.len),
    );
    (Some(source), Some(labeled), String::new())
}

/// The most bytes of source an excerpt may show (the lines of the span and one line on
/// each side). A longer one (a minified file, a megabyte on one line) is left out and its
/// position given in the message, so a report stays small whatever the file holds.
const MAX_EXCERPT: usize = 4096;

/// The bytes of the lines an excerpt of `location` shows: those of its span and one more
/// on each side (the renderer's context).
fn excerpt_len(location: &Location) -> usize {
    let file = &location.source;
    let span = location.span;
    let (first, _) = file.line_col(span.offset);
    let (last, _) = file.line_col(span.offset.saturating_add(span.len.saturating_sub(1)));
    let start = file
        .line_range(first.saturating_sub(1).max(1))
        .map_or(0, |range| range.start);
    let end = file
        .line_range(last.saturating_add(1))
        .or_else(|| file.line_range(last))
        .map_or(file.text().len(), |range| range.end);
    end.saturating_sub(start)
}

/// A source file as `miette` reads it, through the file's line index.
///
/// `miette`'s own `SourceCode` for text scans from the start of the file to the span on
/// every read, so a report cost time proportional to its offset, and a check of a large
/// file with thousands of diagnostics grew with their product. Here the lines around the
/// span are found with the index built once per file, and only that window is handed to
/// `miette`'s scanner; line numbers and offsets are shifted back, so the output is the same.
struct Indexed(Arc<SourceFile>);

impl SourceCode for Indexed {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let file = &self.0;
        let text = file.text().as_bytes();
        let start = span.offset();
        let end = start
            .checked_add(span.len())
            .ok_or(MietteError::OutOfBounds)?;
        if end > text.len() {
            return text.read_span(span, context_lines_before, context_lines_after);
        }
        let (first_line, _) = file.line_col(start);
        let (last_line, _) = file.line_col(end.saturating_sub(1).max(start));
        // 1-based lines: the first line of the window, one more than the context asks for
        // (the scanner drops it again, and a span never starts the window, where the
        // scanner's arithmetic differs), and the first line past the window (one more than
        // the context asks for, so the scanner sees where the last line ends).
        let from = usize::try_from(first_line)
            .unwrap_or(1)
            .saturating_sub(context_lines_before.saturating_add(1))
            .max(1);
        let past = usize::try_from(last_line)
            .unwrap_or(usize::MAX)
            .saturating_add(context_lines_after)
            .saturating_add(2);
        let line_start = |line: usize| {
            u32::try_from(line)
                .ok()
                .and_then(|line| file.line_range(line))
                .map(|range| range.start)
        };
        let base = line_start(from).unwrap_or(0).min(start);
        let stop = line_start(past).unwrap_or(text.len()).max(end);
        let window = &text[base..stop];
        let local = SourceSpan::new((start - base).into(), span.len());
        let inner = window.read_span(&local, context_lines_before, context_lines_after)?;
        let shift = from - 1;
        Ok(Box::new(MietteSpanContents::new(
            inner.data(),
            SourceSpan::new((inner.span().offset() + base).into(), inner.span().len()),
            inner.line() + shift,
            inner.column(),
            inner.line_count() + shift,
        )))
    }
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
    fn a_line_too_long_to_show_gets_its_position_and_no_excerpt() {
        // A megabyte on one line (a minified or generated file): the report stays small.
        let long = format!("a: [{}]\nb: x\n", "1, ".repeat(350_000));
        let source = SourceFile::in_memory("big.yaml", long.as_str(), Format::Yaml);
        let diagnostic = Diagnostic::new(Code::SchemaType, "expected an integer")
            .with_location(source.location_at(long.len() - 2, 1));
        let text = render_human(&[diagnostic], &HumanOptions::default());
        insta::assert_snapshot!(text, @r"
        toolgate::schema::type

          × expected an integer (at big.yaml:2:4; the lines there hold 1050011 bytes, too many to show)

        1 error
        ");
        // A short line keeps its excerpt.
        let text = render_human(&sample()[..1], &HumanOptions::default());
        assert!(text.contains("2 │ b: x"), "{text}");
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
    fn the_indexed_source_reads_what_miette_reads_from_the_whole_text() {
        let mut text = String::new();
        for i in 0..40 {
            text.push_str(&"x".repeat(i % 7));
            text.push_str(if i % 5 == 0 { "é: 1\r\n" } else { ": 1\n" });
        }
        text.push_str("last: no newline");
        let file = SourceFile::in_memory("a.yaml", text.as_str(), Format::Yaml);
        let indexed = Indexed(Arc::clone(&file));
        let bytes = text.as_bytes();
        let mut checked = 0;
        for start in (0..bytes.len()).filter(|&i| text.is_char_boundary(i)) {
            for len in [0, 1, 3, 12] {
                if start + len > bytes.len() {
                    continue;
                }
                for (before, after) in [(0, 0), (1, 1), (2, 3)] {
                    let span = SourceSpan::new(start.into(), len);
                    let whole = bytes.read_span(&span, before, after).unwrap();
                    let window = indexed.read_span(&span, before, after).unwrap();
                    let seen = |c: &dyn SpanContents<'_>| {
                        (
                            c.data().to_vec(),
                            *c.span(),
                            c.line(),
                            c.column(),
                            c.line_count(),
                        )
                    };
                    assert_eq!(
                        seen(&*window),
                        seen(&*whole),
                        "span {start}+{len}, context {before}/{after}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 1000);
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
