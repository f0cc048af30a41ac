//! The diagnostic value every loading stage reports: a [`Code`], a severity, a one-line
//! message, the exact place in a source file, optional advice and related places (such as
//! "first defined here" in another file).
//!
//! Diagnostics are plain values, not errors: a stage collects all of them and the renderers
//! in `render/` turn a list into human, JSON, GitHub or SARIF output. Messages follow the
//! cedar/rustc style: lowercase, no trailing period, user input in backticks, one line;
//! advice goes into `help`.

use std::fmt;
use std::sync::Arc;

use super::codes::{Code, Severity};
use super::source::{SourceFile, Span};

/// A message from another library in the diagnostic style: its first letter lower case
/// (`No such file` → `no such file`).
pub fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Collapses every run of whitespace (including newlines) into one space, trimmed: a
/// multi-line message on one line.
pub fn fold_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `c` changes how text around it is shown without being seen itself: the
/// bidirectional controls (U+202A–U+202E, U+2066–U+2069, the marks U+200E, U+200F), the
/// zero-width characters (U+200B–U+200D, U+2060, U+FEFF), and the control characters JSON
/// writes as they are (DEL, U+007F, and the C1 controls U+0080–U+009F, which a terminal may
/// act on or drop).
fn invisible(c: char) -> bool {
    matches!(c, '\u{7F}'..='\u{9F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

/// JSON (or YAML double-quoted) text with each character that could hide or reorder what a
/// person reads (see [`invisible`]) written as its `\uXXXX` escape, which means the same
/// character: an approval prompt or a generated policy shows what will run, in order.
pub fn escape_invisible(text: &str) -> String {
    escape_each(text, invisible).into_owned()
}

/// Text from a call (a tool name, a call id, a message quoting the input) as a terminal line
/// shows it: each control character (C0 with newline and tab, DEL, C1: escape sequences that
/// colour, hide, move the cursor or write the clipboard) and each character that could hide
/// or reorder what a person reads ([`invisible`]) written as its `\uXXXX` escape.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    escape_each(text, |c| c.is_control() || invisible(c))
}

/// `text` with each character `escaped` picks written as its `\uXXXX` escape.
fn escape_each(text: &str, escaped: impl Fn(char) -> bool) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(&escaped) {
        return std::borrow::Cow::Borrowed(text);
    }
    text.chars()
        .map(|c| {
            if escaped(c) {
                format!("\\u{:04x}", u32::from(c))
            } else {
                c.to_string()
            }
        })
        .collect::<String>()
        .into()
}

/// A place in a source file.
#[derive(Clone, Debug)]
pub struct Location {
    /// The file.
    pub source: Arc<SourceFile>,
    /// The span in it.
    pub span: Span,
}

impl Location {
    /// `path:line:column`.
    pub fn display(&self) -> String {
        use std::fmt::Write as _;
        // The path is copied as is, not through a formatter (this runs for every rule).
        let path = self.source.path();
        let mut text = String::with_capacity(path.len() + 12);
        text.push_str(path);
        // Writing into a `String` cannot fail.
        let _ = write!(text, ":{}:{}", self.span.line, self.span.column);
        text
    }
}

impl PartialEq for Location {
    fn eq(&self, other: &Self) -> bool {
        self.span == other.span && self.source.path() == other.source.path()
    }
}

impl Eq for Location {}

/// A secondary place a diagnostic refers to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Related {
    /// What this place is, e.g. `first defined here`.
    pub message: String,
    /// Where it is.
    pub location: Location,
}

/// The longest message a diagnostic keeps: one that quotes a huge value (a rule named with a
/// megabyte of text) is cut, so a report stays readable and small.
const MAX_MESSAGE_BYTES: usize = 4096;

/// `message`, cut at [`MAX_MESSAGE_BYTES`] with how much was left out.
fn shortened(mut message: String) -> String {
    if message.len() > MAX_MESSAGE_BYTES {
        let cut = super::source::floor_char_boundary(&message, MAX_MESSAGE_BYTES);
        let left = message.len() - cut;
        message.truncate(cut);
        message.push_str(&format!("… ({left} more bytes)"));
    }
    message
}

/// One problem found while loading.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The stable code.
    pub code: Code,
    /// Error or warning.
    pub severity: Severity,
    /// One line, lowercase, no trailing period, user input in backticks.
    pub message: String,
    /// The exact place it is about, when there is one.
    pub location: Option<Location>,
    /// Advice: what to do about it.
    pub help: Option<String>,
    /// Other places that explain it.
    pub related: Vec<Related>,
}

impl Diagnostic {
    /// A diagnostic with the code's default severity and no location.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            severity: code.default_severity(),
            message: shortened(message.into()),
            location: None,
            help: None,
            related: Vec::new(),
        }
    }

    /// Sets the location.
    #[must_use]
    pub fn with_location(mut self, location: Location) -> Self {
        self.location = Some(location);
        self
    }

    /// Sets the location to a span of a file.
    #[must_use]
    pub fn at(self, source: &Arc<SourceFile>, span: Span) -> Self {
        self.with_location(source.location(span))
    }

    /// Sets the help text.
    #[must_use]
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Adds a related location.
    #[must_use]
    pub fn with_related(mut self, message: impl Into<String>, location: Location) -> Self {
        self.related.push(Related {
            message: message.into(),
            location,
        });
        self
    }

    /// Sets the severity (e.g. to report a lint as an error).
    #[must_use]
    pub fn with_severity(mut self, severity: Severity) -> Self {
        self.severity = severity;
        self
    }

    /// Whether this is an error.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The message with the related places folded in, for formats that have no room for
    /// them (JSON, GitHub annotations): `duplicate key `a` (first defined here: a.yaml:1:1)`.
    pub fn flat_message(&self) -> String {
        let mut message = self.message.clone();
        for related in &self.related {
            message.push_str(&format!(
                " ({}: {})",
                related.message,
                related.location.display()
            ));
        }
        message
    }

    /// The sort key: file, then offset, then code and message for a stable order.
    fn sort_key(&self) -> (bool, Option<&str>, usize, Code, &str) {
        (
            self.location.is_none(),
            self.location.as_ref().map(|l| &**l.source.path()),
            self.location.as_ref().map_or(0, |l| l.span.offset),
            self.code,
            &self.message,
        )
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}]: {}", self.severity, self.code, self.message)?;
        if let Some(location) = &self.location {
            write!(f, " at {}", location.display())?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostic {}

/// A list of diagnostics with the helpers a loader and a CLI need.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics(Vec<Diagnostic>);

impl Diagnostics {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one.
    pub fn push(&mut self, diagnostic: Diagnostic) {
        self.0.push(diagnostic);
    }

    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.0.iter().any(Diagnostic::is_error)
    }

    /// The errors.
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter().filter(|d| d.severity == Severity::Error)
    }

    /// The warnings.
    pub fn warnings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter().filter(|d| d.severity == Severity::Warning)
    }

    /// The number of errors and of warnings.
    pub fn counts(&self) -> (usize, usize) {
        count(&self.0)
    }

    /// Sorts by file, then position, then code; diagnostics without a location come last.
    pub fn sort(&mut self) {
        sort(&mut self.0);
    }

    /// Turns every warning into an error (`--deny-warnings`).
    pub fn deny_warnings(&mut self) {
        for diagnostic in &mut self.0 {
            diagnostic.severity = Severity::Error;
        }
    }

    /// The diagnostics as a slice.
    pub fn as_slice(&self) -> &[Diagnostic] {
        &self.0
    }

    /// The diagnostics as a vector.
    pub fn into_vec(self) -> Vec<Diagnostic> {
        self.0
    }

    /// Iterates over the diagnostics.
    pub fn iter(&self) -> std::slice::Iter<'_, Diagnostic> {
        self.0.iter()
    }

    /// The number of diagnostics.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Sorts diagnostics by file, then position, then code; those without a location last.
pub fn sort(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
}

/// The number of errors and of warnings in a list.
pub fn count(diagnostics: &[Diagnostic]) -> (usize, usize) {
    diagnostics
        .iter()
        .fold((0, 0), |(errors, warnings), d| match d.severity {
            Severity::Error => (errors + 1, warnings),
            Severity::Warning => (errors, warnings + 1),
        })
}

impl From<Vec<Diagnostic>> for Diagnostics {
    fn from(list: Vec<Diagnostic>) -> Self {
        Self(list)
    }
}

impl Extend<Diagnostic> for Diagnostics {
    fn extend<T: IntoIterator<Item = Diagnostic>>(&mut self, iter: T) {
        self.0.extend(iter);
    }
}

impl FromIterator<Diagnostic> for Diagnostics {
    fn from_iter<T: IntoIterator<Item = Diagnostic>>(iter: T) -> Self {
        Self(iter.into_iter().collect())
    }
}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a Diagnostics {
    type Item = &'a Diagnostic;
    type IntoIter = std::slice::Iter<'a, Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl std::ops::Deref for Diagnostics {
    type Target = [Diagnostic];
    fn deref(&self) -> &[Diagnostic] {
        &self.0
    }
}

// The constructors of a location live with `Location`, so that `source` (below diagnostics)
// does not depend on it.
impl SourceFile {
    /// A location in this file.
    pub fn location(self: &Arc<Self>, span: Span) -> Location {
        Location {
            source: Arc::clone(self),
            span,
        }
    }

    /// A location covering `len` bytes from `offset`.
    pub fn location_at(self: &Arc<Self>, offset: usize, len: usize) -> Location {
        self.location(self.span(offset, len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::source::Format;

    #[test]
    fn invisible_and_control_characters_are_written_as_escapes() {
        assert_eq!(
            escape_invisible("a\u{202E}b\u{7F}c\u{85}d\u{9F}e\u{A0}f\u{7E}"),
            "a\\u202eb\\u007fc\\u0085d\\u009fe\u{A0}f~"
        );
    }

    fn at(path: &str, offset: usize, code: Code) -> Diagnostic {
        let source = SourceFile::in_memory(path, "abcdef\nghijkl\n", Format::Yaml);
        Diagnostic::new(code, "m").with_location(source.location_at(offset, 1))
    }

    #[test]
    fn sorting_is_by_file_then_offset() {
        let mut list = Diagnostics::from(vec![
            Diagnostic::new(Code::BatchEmpty, "no location"),
            at("b.yaml", 1, Code::SchemaType),
            at("a.yaml", 9, Code::SchemaType),
            at("a.yaml", 2, Code::SchemaRange),
            at("a.yaml", 2, Code::SchemaType),
        ]);
        list.sort();
        let order: Vec<_> = list
            .iter()
            .map(|d| {
                d.location
                    .as_ref()
                    .map(|l| format!("{}@{}:{}", l.source.path(), l.span.offset, d.code))
                    .unwrap_or_default()
            })
            .collect();
        assert_eq!(
            order,
            [
                "a.yaml@2:toolgate::schema::type",
                "a.yaml@2:toolgate::schema::range",
                "a.yaml@9:toolgate::schema::type",
                "b.yaml@1:toolgate::schema::type",
                ""
            ]
        );
    }

    #[test]
    fn deny_warnings_promotes() {
        let mut list = Diagnostics::from(vec![
            at("a.yaml", 0, Code::SemanticRuleShadowed),
            at("a.yaml", 1, Code::SchemaType),
        ]);
        assert_eq!(list.counts(), (1, 1));
        assert!(list.has_errors());
        list.deny_warnings();
        assert_eq!(list.counts(), (2, 0));
        assert_eq!(list.warnings().count(), 0);
    }

    #[test]
    fn flat_message_folds_related_places() {
        let first = at("a.yaml", 7, Code::SchemaType).location.unwrap();
        let diagnostic =
            at("b.yaml", 0, Code::SyntaxDuplicateKey).with_related("first defined here", first);
        assert_eq!(
            diagnostic.flat_message(),
            "m (first defined here: a.yaml:2:1)"
        );
    }
}
