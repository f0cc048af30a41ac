//! Files to validated model: syntax (YAML/TOML with a span for every node), JSON Schema
//! validation and typed deserialisation. Every stage reports through
//! [`crate::diagnostics`].
//!
//! The flow for one file:
//!
//! ```text
//! path ──read_source──▶ SourceFile ──parse_document──▶ ParsedDocument { value, spans }
//!                                                           │
//!                               SchemaChecker::check ◀──────┘   (every violation, exact spans)
//! ```
//!
//! Every stage reports [`Diagnostic`]s (a [`Code`], a message, the exact
//! [`Span`](crate::diagnostics::Span)) rather than stopping at the first problem;
//! [`crate::diagnostics::render`] turns them into human, JSON, GitHub or SARIF output.
//!
//! ```text
//! use toolgate::diagnostics::{Format, SourceFile};
//! use toolgate::load::parse_document;
//!
//! let source = SourceFile::in_memory("p.yaml", "version: 1\ntools: {}\n", Format::Yaml);
//! let doc = parse_document(source).unwrap();
//! assert_eq!(doc.value["version"], 1);
//! let span = doc.spans.get("/tools").unwrap().key.unwrap();
//! assert_eq!((span.line, span.column), (2, 1));
//! ```

pub mod json;
pub mod read;
pub mod schema_check;
pub mod spans;
pub mod toml;
pub mod yaml;

use std::sync::Arc;

use serde_json::Value;

pub use read::{ReadLimits, read_source};
pub use schema_check::SchemaChecker;
pub use spans::SpanTable;

use crate::diagnostics::{Code, Diagnostic, Format, SourceFile};

/// The longest string a policy file may hold (YAML or TOML): 1 MiB.
pub const MAX_STRING_BYTES: usize = 1024 * 1024;

/// Structural limits applied while parsing, so that hostile or broken files cannot exhaust
/// the stack or memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseLimits {
    /// Maximum nesting of collections. Policy files nest a handful of levels (input schemas
    /// a few more); the limit keeps recursive consumers (schema validation, drop) safe.
    pub max_depth: usize,
    /// Maximum number of nodes YAML aliases may expand to across a document ("billion
    /// laughs" guard).
    pub max_alias_nodes: usize,
    /// Maximum bytes of text YAML aliases may copy across a document: an alias of a large
    /// string is one node but a whole copy of it (a 1 MiB string aliased 1 000 times asked
    /// for gigabytes).
    pub max_alias_bytes: usize,
    /// Maximum length of one line of YAML, in bytes. The YAML parser's time on a flow
    /// collection (`[a, b, ...]`, `{a: 1, ...}`) grows with the square of its line's length
    /// (seconds for a megabyte on one line); the limit bounds it (a 256 KiB line parses in
    /// well under a second) and says how to write the file instead.
    pub max_line_bytes: usize,
}

impl ParseLimits {
    /// The defaults: 128 levels, 100 000 alias-expanded nodes copying at most 16 MiB of
    /// text, lines of 256 KiB.
    pub const DEFAULT: ParseLimits = ParseLimits {
        max_depth: 128,
        max_alias_nodes: 100_000,
        max_alias_bytes: 16 * 1024 * 1024,
        max_line_bytes: 256 * 1024,
    };
}

impl Default for ParseLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// A file after the syntax stage: its JSON value and the span of every node.
#[derive(Debug, Clone)]
pub struct ParsedDocument {
    /// The file.
    pub source: Arc<SourceFile>,
    /// Its content as JSON.
    pub value: Value,
    /// Where each node of `value` is in the file.
    pub spans: SpanTable,
}

/// Parses a file into a JSON value with spans, dispatching on its format, with the default
/// [`ParseLimits`].
pub fn parse_document(source: Arc<SourceFile>) -> Result<ParsedDocument, Vec<Diagnostic>> {
    parse_document_with(source, &ParseLimits::DEFAULT)
}

/// Parses a file into a JSON value with spans, with explicit limits.
pub fn parse_document_with(
    source: Arc<SourceFile>,
    limits: &ParseLimits,
) -> Result<ParsedDocument, Vec<Diagnostic>> {
    let (value, spans) = match source.format() {
        Format::Yaml => yaml::parse_yaml(&source, limits)?,
        Format::Toml => toml::parse_toml(&source, limits)?,
    };
    Ok(ParsedDocument {
        source,
        value,
        spans,
    })
}

/// The diagnostic for a file with no content.
fn empty_file(source: &Arc<SourceFile>) -> Diagnostic {
    let help = match source.format() {
        Format::Yaml => "add `version: 1`",
        Format::Toml => "add `version = 1`",
    };
    Diagnostic::new(Code::SyntaxEmpty, "the file is empty")
        .at(source, source.span(0, 0))
        .with_help(help)
}

#[cfg(test)]
mod tests {
    // Moved from the integration tests: they exercise this module's internals.
    mod diagnostics;
    mod equivalence;
    mod fuzz;
    mod schemas;

    use super::*;

    #[test]
    fn shared_types_are_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<SourceFile>();
        assert_send_sync::<SpanTable>();
        assert_send_sync::<ParsedDocument>();
        assert_send_sync::<Diagnostic>();
        assert_send_sync::<SchemaChecker>();
    }

    #[test]
    fn dispatches_on_the_format() {
        let yaml = SourceFile::in_memory("a.yaml", "version: 1\n", Format::Yaml);
        let toml = SourceFile::in_memory("a.toml", "version = 1\n", Format::Toml);
        let yaml = parse_document(yaml).unwrap();
        let toml = parse_document(toml).unwrap();
        assert_eq!(yaml.value, toml.value);
        // The same text in the wrong format is a syntax error of that format.
        let wrong = SourceFile::in_memory("a.toml", "version: 1\n", Format::Toml);
        let errors = parse_document(wrong).unwrap_err();
        assert_eq!(errors[0].code, Code::SyntaxToml);
    }
}

/// The module documentation's example, as a test (the module is crate-private, so rustdoc
/// cannot run it).
#[cfg(test)]
mod doc_example {
    #[test]
    fn a_document_parses_with_its_spans() {
        use crate::diagnostics::{Format, SourceFile};
        use crate::load::parse_document;

        let source = SourceFile::in_memory("p.yaml", "version: 1\ntools: {}\n", Format::Yaml);
        let doc = parse_document(source).unwrap();
        assert_eq!(doc.value["version"], 1);
        let span = doc.spans.get("/tools").unwrap().key.unwrap();
        assert_eq!((span.line, span.column), (2, 1));
    }
}
