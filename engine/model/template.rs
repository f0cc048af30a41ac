//! The `{name}` template syntax of every model-facing message (engine `messages`, budget
//! texts): rendering, and listing a template's placeholders for load-time checks. Pure
//! string functions at the bottom of the tree, so the resolved engine, the budget stage and
//! the snapshot's checks share one definition.

/// Substitutes `{name}` placeholders in one pass (a substituted value is never expanded
/// again); `{{` and `}}` stand for literal braces, and unknown placeholders stay as written.
/// The same syntax as the engine's message templates.
pub fn render(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + 64);
    let mut rest = template;
    while let Some(at) = rest.find(['{', '}']) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
            continue;
        }
        if tail.starts_with('{')
            && let Some(close) = tail.find('}')
            && let Some((_, value)) = values.iter().find(|(key, _)| *key == &tail[1..close])
        {
            out.push_str(value);
            rest = &tail[close + 1..];
            continue;
        }
        out.push_str(&tail[..1]);
        rest = &tail[1..];
    }
    out.push_str(rest);
    out
}

/// The placeholders a template uses, with their byte offsets (for load-time checks).
pub fn placeholders(template: &str) -> Vec<(usize, &str)> {
    let mut found = Vec::new();
    let bytes = template.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' if bytes.get(i + 1) == Some(&b'{') => i += 2,
            b'}' if bytes.get(i + 1) == Some(&b'}') => i += 2,
            b'{' => match template[i + 1..].find('}') {
                Some(len) => {
                    found.push((i, &template[i + 1..i + 1 + len]));
                    i += len + 2;
                }
                None => {
                    found.push((i, ""));
                    i += 1;
                }
            },
            _ => i += 1,
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_substitutes_known_placeholders_once() {
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
        let table: [Case; 7] = [
            (
                "({tool} completed)",
                &[("tool", "Bash")],
                "(Bash completed)",
            ),
            ("{a}{b}", &[("a", "{b}"), ("b", "x")], "{b}x"),
            ("{unknown} {a}", &[("a", "1")], "{unknown} 1"),
            ("{ {a} }", &[("a", "1")], "{ 1 }"),
            ("no placeholders {", &[], "no placeholders {"),
            ("{{a}} {a}", &[("a", "1")], "{a} 1"),
            ("}{", &[], "}{"),
        ];
        for (template, values, want) in table {
            assert_eq!(render(template, values), want, "{template}");
        }
    }

    #[test]
    fn placeholders_are_found_with_offsets() {
        assert_eq!(
            placeholders("a {tool} {{x}} {ms}"),
            vec![(2, "tool"), (15, "ms")]
        );
        assert_eq!(placeholders("bad {"), vec![(4, "")]);
    }
}
