//! Diagnostics every stage reports through: the source files they point into (with their
//! line index and [`Span`]s), the stable [`Code`]s, the [`Diagnostic`] value, and the
//! renderers (human, JSON, GitHub annotations, SARIF).
//!
//! Below loading, so that loading, the snapshot's semantic checks, policy tests and batch
//! files report the same way. Inside, dependencies run one way:
//! `source` ← `codes` ← `diagnostic` ← `render`.
//!
//! ```text
//! use std::sync::Arc;
//! use toolgate::diagnostics::{Code, Diagnostic, Format, SourceFile};
//!
//! let source = Arc::new(SourceFile::new("p.yaml", "version: 2\n", Format::Yaml));
//! let diagnostic = Diagnostic::new(Code::SchemaType, "bad version")
//!     .with_location(source.location_at(9, 1));
//! let span = diagnostic.location.unwrap().span;
//! assert_eq!((span.line, span.column), (1, 10));
//! ```

pub mod codes;
pub mod diagnostic;
pub mod render;
pub mod source;
pub mod suggest;

pub use codes::{Code, Severity};
pub use diagnostic::{
    Diagnostic, Location, escape_controls, escape_invisible, fold_whitespace, lowercase_first,
};
pub use source::{Format, LineCursor, SourceFile, Span};
pub use suggest::closest;

/// The module documentation's example, as a test (the module is crate-private, so rustdoc
/// cannot run it).
#[cfg(test)]
mod doc_example {
    #[test]
    fn locations_are_one_based() {
        use crate::diagnostics::{Code, Diagnostic, Format, SourceFile};
        use std::sync::Arc;

        let source = Arc::new(SourceFile::new("p.yaml", "version: 2\n", Format::Yaml));
        let diagnostic = Diagnostic::new(Code::SchemaType, "bad version")
            .with_location(source.location_at(9, 1));
        let span = diagnostic.location.unwrap().span;
        assert_eq!((span.line, span.column), (1, 10));
    }
}
