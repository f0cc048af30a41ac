//! Source files as the loader sees them: the displayed path, the UTF-8 text, the format
//! chosen from the extension, and a line index that turns byte offsets into the 1-based
//! line and column every diagnostic shows.
//!
//! Also the [`Span`] type: a byte range with its line and column. Reading a file from disk is
//! loading's first step (`load::read_source`); built-in policies embedded with
//! `include_str!` use [`SourceFile::new`].

use std::fmt;
use std::path::Path;
use std::sync::Arc;

/// A byte range in a source file, with the 1-based line and column (in characters) of its
/// start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// Byte offset of the start.
    pub offset: usize,
    /// Length in bytes.
    pub len: usize,
    /// 1-based line of the start.
    pub line: u32,
    /// 1-based column of the start, in characters.
    pub column: u32,
}

impl Span {
    /// The byte offset just past the end.
    pub fn end(&self) -> usize {
        self.offset.saturating_add(self.len)
    }
}

/// The syntax of a policy file, chosen from its extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// YAML 1.2 (`.yaml`, `.yml`).
    Yaml,
    /// TOML 1.0 (`.toml`).
    Toml,
}

impl Format {
    /// The format for a path's extension (`.yaml`, `.yml`, `.toml`, case-insensitive), or
    /// `None` for any other file.
    pub fn from_path(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?;
        if ext.eq_ignore_ascii_case("yaml") || ext.eq_ignore_ascii_case("yml") {
            Some(Format::Yaml)
        } else if ext.eq_ignore_ascii_case("toml") {
            Some(Format::Toml)
        } else {
            None
        }
    }

    /// The lowercase name: `yaml` or `toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Yaml => "yaml",
            Format::Toml => "toml",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One loaded file: its path as displayed, its text and a line index.
///
/// A leading byte-order mark is dropped from the text, so offsets, lines and columns count
/// from the first character after it.
#[derive(Debug)]
pub struct SourceFile {
    path: Arc<str>,
    text: Arc<str>,
    format: Format,
    /// Byte offset of the start of every line; the first entry is always 0.
    // INVARIANT: sorted ascending, each entry is 0 or follows a `\n` in `text`.
    line_starts: Vec<usize>,
    /// Whether `text` is pure ASCII, so that columns can be computed without decoding.
    ascii: bool,
}

impl SourceFile {
    /// Builds a source file from text already in memory (e.g. an embedded built-in policy).
    pub fn new(path: impl Into<Arc<str>>, text: impl Into<Arc<str>>, format: Format) -> Self {
        let mut text: Arc<str> = text.into();
        if let Some(rest) = text.strip_prefix('\u{feff}') {
            text = Arc::from(rest);
        }
        // Policy files run 20–40 bytes a line: reserve for that rather than grow.
        let mut line_starts = Vec::with_capacity(text.len() / 24 + 1);
        line_starts.push(0);
        line_starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|index| index + 1));
        let ascii = text.is_ascii();
        Self {
            path: path.into(),
            text,
            format,
            line_starts,
            ascii,
        }
    }

    /// Builds a shared source file from text already in memory.
    pub fn in_memory(
        path: impl Into<Arc<str>>,
        text: impl Into<Arc<str>>,
        format: Format,
    ) -> Arc<Self> {
        Arc::new(Self::new(path, text, format))
    }

    /// An empty stand-in for a file that could not be read, so that the diagnostic about it
    /// still names the file.
    pub(crate) fn placeholder(path: &Arc<str>, format: Format) -> Arc<Self> {
        Arc::new(Self::new(Arc::clone(path), "", format))
    }

    /// The path as it is displayed in diagnostics.
    pub fn path(&self) -> &Arc<str> {
        &self.path
    }

    /// The text (without a leading byte-order mark).
    pub fn text(&self) -> &Arc<str> {
        &self.text
    }

    /// The syntax of the file.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The number of lines (a file without a final newline still counts its last line).
    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// The 1-based line and 1-based column (in characters, like rustc) of a byte offset.
    ///
    /// Offsets past the end are clamped to the end; an offset inside a multi-byte character
    /// is moved back to the start of that character.
    pub fn line_col(&self, offset: usize) -> (u32, u32) {
        let offset = self.clamp(offset);
        let line_index = self.line_of(offset);
        (to_u32(line_index + 1), self.column_on(line_index, offset))
    }

    /// The 1-based column of `offset` (clamped) on the 0-based line `line_index`.
    fn column_on(&self, line_index: usize, offset: usize) -> u32 {
        let line_start = self.line_starts.get(line_index).copied().unwrap_or(0);
        let column = if self.ascii {
            offset.saturating_sub(line_start)
        } else {
            self.text
                .get(line_start..offset)
                .map_or(0, |prefix| prefix.chars().count())
        };
        to_u32(column + 1)
    }

    /// Like [`SourceFile::line_col`], continuing from where `cursor` was left (it is left at
    /// `offset`): a walk over increasing offsets costs time linear in the text it passes
    /// (lines skipped, and characters within a line), instead of a binary search and a count
    /// from the start of the line per offset. Any cursor gives the same answer.
    pub fn line_col_near(&self, offset: usize, cursor: &mut LineCursor) -> (u32, u32) {
        let offset = self.clamp(offset);
        let at_or_before = |index: usize| {
            self.line_starts
                .get(index)
                .is_some_and(|&start| start <= offset)
        };
        let behind = offset < cursor.offset || !at_or_before(cursor.line);
        let mut line = cursor.line;
        if behind {
            // Behind the cursor: search the whole index.
            line = self.line_of(offset);
        } else {
            while at_or_before(line + 1) {
                line += 1;
            }
        }
        if behind || line != cursor.line {
            *cursor = LineCursor {
                line,
                offset: self.line_starts.get(line).copied().unwrap_or(0),
                column: 0,
            };
        }
        let passed = if self.ascii {
            offset - cursor.offset
        } else {
            self.text
                .get(cursor.offset..offset)
                .map_or(0, |between| between.chars().count())
        };
        cursor.offset = offset;
        cursor.column += passed;
        (to_u32(line + 1), to_u32(cursor.column + 1))
    }

    /// The 0-based line of a (clamped) offset, by binary search.
    fn line_of(&self, offset: usize) -> usize {
        self.line_starts
            .partition_point(|&start| start <= offset)
            .saturating_sub(1)
    }

    /// A span of `len` bytes starting at byte `offset`, with its line and column.
    ///
    /// Both ends are clamped into the text and onto character boundaries.
    pub fn span(&self, offset: usize, len: usize) -> Span {
        let start = self.clamp(offset);
        let end = self.clamp(start.saturating_add(len)).max(start);
        let (line, column) = self.line_col(start);
        Span {
            offset: start,
            len: end - start,
            line,
            column,
        }
    }

    /// The span of the byte range `start..end` (clamped like [`SourceFile::span`]).
    pub fn span_of(&self, start: usize, end: usize) -> Span {
        self.span(start, end.saturating_sub(start))
    }

    /// The span of a node that starts at `start` and ends at `end`, cut at the end of the
    /// line it starts on and without trailing blanks.
    ///
    /// Collections and multi-line strings would otherwise underline many lines, and parsers'
    /// end positions for block nodes point past trailing blank lines and comments.
    pub fn first_line_span(&self, start: usize, end: usize) -> Span {
        let start = self.clamp(start);
        // One search of the line index serves both the line's end and the position.
        let line_index = self.line_of(start);
        let line_end = self
            .line_range(to_u32(line_index + 1))
            .map_or(self.text.len(), |range| range.end);
        let end = end.min(line_end).max(start);
        let trimmed = self
            .text
            .get(start..end)
            .map_or(0, |slice| slice.trim_end_matches([' ', '\t']).len());
        Span {
            offset: start,
            len: trimmed,
            line: to_u32(line_index + 1),
            column: self.column_on(line_index, start),
        }
    }

    /// The byte range of a 1-based line, without its line break.
    pub fn line_range(&self, line: u32) -> Option<std::ops::Range<usize>> {
        let index = usize::try_from(line).ok()?.checked_sub(1)?;
        let start = *self.line_starts.get(index)?;
        let end = self
            .line_starts
            .get(index + 1)
            .map_or(self.text.len(), |&next| next - 1);
        let end = if self.text.as_bytes().get(end.wrapping_sub(1)) == Some(&b'\r') && end > start {
            end - 1
        } else {
            end
        };
        Some(start..end)
    }

    /// The byte offset where the line holding `offset` ends (before `\r\n` or `\n`).
    pub fn line_end(&self, offset: usize) -> usize {
        let (line, _) = self.line_col(offset);
        self.line_range(line)
            .map_or(self.text.len(), |range| range.end)
    }

    /// Clamps an offset into the text and back onto a character boundary.
    fn clamp(&self, offset: usize) -> usize {
        floor_char_boundary(&self.text, offset)
    }
}

/// Where [`SourceFile::line_col_near`] left off: a 0-based line, and an offset on it with
/// its 0-based column in characters.
#[derive(Clone, Copy, Debug, Default)]
pub struct LineCursor {
    line: usize,
    offset: usize,
    column: usize,
}

/// The largest character boundary at or below `offset` (clamped to the text).
// `str::floor_char_boundary` is newer than the crate's minimum Rust version.
pub(crate) fn floor_char_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// Converts a count to `u32`, saturating (files are far smaller than 4 GiB lines).
fn to_u32(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;

    /// Text of ASCII and non-ASCII pieces, blanks and both kinds of line break.
    fn text() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            proptest::sample::select(vec!["a", "bc", " ", "\n", "\r\n", "é", "日本", "\t"]),
            0..40,
        )
        .prop_map(|pieces| pieces.concat())
    }

    proptest::proptest! {
        /// Walking offsets in any order with one cursor gives the lines and columns of the
        /// binary search, on ASCII and non-ASCII text, with `\n` and `\r\n` breaks.
        #[test]
        fn the_cursor_agrees_with_the_line_index(
            text in text(),
            offsets in proptest::collection::vec(0usize..200, 1..30),
        ) {
            let source = SourceFile::in_memory("t.yaml", text, Format::Yaml);
            let mut cursor = LineCursor::default();
            for offset in offsets {
                proptest::prop_assert_eq!(
                    source.line_col_near(offset, &mut cursor),
                    source.line_col(offset),
                    "offset {}", offset
                );
            }
        }
    }

    proptest::proptest! {
        /// A first-line span is the span of the range cut at the end of its start's line,
        /// without trailing blanks; and the line index holds every line's start.
        #[test]
        fn first_line_spans_cut_at_the_line_end(
            text in text(),
            ranges in proptest::collection::vec((0usize..200, 0usize..200), 1..30),
        ) {
            let source = SourceFile::in_memory("t.yaml", text.clone(), Format::Yaml);
            let starts: Vec<usize> = std::iter::once(0)
                .chain(text.match_indices('\n').map(|(index, _)| index + 1))
                .collect();
            proptest::prop_assert_eq!(&source.line_starts, &starts);
            for (start, end) in ranges {
                let clamped = source.clamp(start);
                let cut = end.min(source.line_end(clamped)).max(clamped);
                let trimmed = text.get(clamped..cut).map_or(0, |slice| slice.trim_end_matches([' ', '\t']).len());
                proptest::prop_assert_eq!(
                    source.first_line_span(start, end),
                    source.span(clamped, trimmed),
                    "range {}..{}", start, end
                );
            }
        }
    }

    #[test]
    fn formats_come_from_extensions() {
        let table = [
            ("a.yaml", Some(Format::Yaml)),
            ("a.yml", Some(Format::Yaml)),
            ("A.YML", Some(Format::Yaml)),
            ("dir/a.toml", Some(Format::Toml)),
            ("a.json", None),
            ("yaml", None),
        ];
        for (path, format) in table {
            assert_eq!(Format::from_path(Path::new(path)), format, "{path}");
        }
    }

    #[test]
    fn line_and_column_count_characters() {
        let source = SourceFile::new("t.yaml", "ab\nçé: x\n\nlast", Format::Yaml);
        let table = [
            (0, (1, 1)),
            (1, (1, 2)),
            (2, (1, 3)),
            (3, (2, 1)),
            (5, (2, 2)),
            (7, (2, 3)),
            (9, (2, 5)),
            (11, (3, 1)),
            (12, (4, 1)),
            (15, (4, 4)),
            (100, (4, 5)),
        ];
        for (offset, expected) in table {
            assert_eq!(source.line_col(offset), expected, "offset {offset}");
        }
        // Inside `ç` (bytes 3..5): moved back to its start.
        assert_eq!(source.line_col(4), (2, 1));
    }

    #[test]
    fn crlf_lines_and_ranges() {
        let source = SourceFile::new("t.yaml", "a: 1\r\nb: 2\r\n", Format::Yaml);
        assert_eq!(source.line_col(6), (2, 1));
        assert_eq!(source.line_range(1), Some(0..4));
        assert_eq!(source.line_range(2), Some(6..10));
        assert_eq!(source.line_end(7), 10);
        assert_eq!(source.line_range(9), None);
    }

    #[test]
    fn byte_order_mark_is_dropped() {
        let source = SourceFile::new("t.yaml", "\u{feff}a: 1", Format::Yaml);
        assert_eq!(&**source.text(), "a: 1");
        assert_eq!(source.line_col(0), (1, 1));
    }

    #[test]
    fn spans_are_clamped_to_the_text() {
        let source = SourceFile::new("t.yaml", "é", Format::Yaml);
        let span = source.span(1, 10);
        assert_eq!((span.offset, span.len), (0, 2));
        let span = source.span(5, 10);
        assert_eq!((span.offset, span.len), (2, 0));
    }
}
