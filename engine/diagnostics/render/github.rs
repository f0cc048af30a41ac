//! GitHub workflow annotations: one `::error file=…,line=…,col=…,title=<code>::<message>`
//! line per diagnostic (`::warning` for warnings), so `toolgate check` in a workflow marks
//! the offending lines in the pull request.
//!
//! Escaping follows the runner's rules: `%`, CR and LF in the message; additionally `:` and
//! `,` in property values.

use crate::diagnostics::{Diagnostic, Severity};

/// One annotation line per diagnostic.
pub fn render_github(diagnostics: &[Diagnostic]) -> String {
    let mut out = String::new();
    for diagnostic in diagnostics {
        let command = match diagnostic.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let mut properties = Vec::new();
        if let Some(location) = &diagnostic.location {
            properties.push(format!("file={}", escape_property(location.source.path())));
            properties.push(format!("line={}", location.span.line));
            properties.push(format!("col={}", location.span.column));
        }
        properties.push(format!(
            "title={}",
            escape_property(diagnostic.code.as_str())
        ));
        let mut message = diagnostic.flat_message();
        if let Some(help) = &diagnostic.help {
            message.push_str("\nhelp: ");
            message.push_str(help);
        }
        out.push_str(&format!(
            "::{command} {}::{}\n",
            properties.join(","),
            escape_data(&message)
        ));
    }
    out
}

/// Escapes a message (`%`, CR, LF).
pub fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a property value (`%`, CR, LF, `:`, `,`).
pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::Code;
    use crate::diagnostics::{Format, SourceFile};

    #[test]
    fn escapes_data_and_properties() {
        assert_eq!(escape_data("50% a\r\nb"), "50%25 a%0D%0Ab");
        assert_eq!(escape_property("a:b,c%"), "a%3Ab%2Cc%25");
    }

    #[test]
    fn one_line_per_diagnostic() {
        let source = SourceFile::in_memory("dir/a,b.yaml", "x: 1\n", Format::Yaml);
        let list = [
            Diagnostic::new(Code::SchemaType, "bad `x`: 100%")
                .with_location(source.location_at(3, 1))
                .with_help("fix it"),
            Diagnostic::new(Code::SemanticRuleShadowed, "w"),
        ];
        assert_eq!(
            render_github(&list),
            "::error file=dir/a%2Cb.yaml,line=1,col=4,title=toolgate%3A%3Aschema%3A%3Atype::bad `x`: 100%25%0Ahelp: fix it\n\
             ::warning title=toolgate%3A%3Asemantic%3A%3Arule_shadowed::w\n"
        );
    }
}
