//! Placeholder templates for command arguments (`{{input.path}}`) and HTTP header values
//! (`{{env.TOKEN}}`).
//!
//! Place in the flow: the loader calls [`parse_argv`] (or [`parse_template`]) on every
//! handler so bad templates are reported at load time with byte offsets; the handler renders
//! the parsed templates against each call's input.
//!
//! Syntax:
//! - `{{input.field}}`, `{{input.a.b.0}}` (dotted path, digits index arrays),
//!   `{{input./json/pointer}}` (RFC 6901), `{{input}}` (the whole input as compact JSON);
//!   spaces inside the braces are ignored.
//! - `{{input.field?}}`: optional; allowed only when the placeholder is the whole argument,
//!   which is then dropped when the field is missing or `null`.
//! - A value that begins an argument and starts with `-` or `+` before a literal `--`, or
//!   with `@`, could be an option, a command or a file of options to the program
//!   (`--output=FILE`, `vim +!CMD`, `gcc @FILE`, which no rule judged): the call is refused,
//!   unless the placeholder is written `{{input.flags!}}` (`!?` or `?!` with `?`), where the
//!   policy lets the input choose options.
//! - `{{env.NAME}}`: an environment variable (HTTP header values only).
//! - `{{{{` is a literal `{{`. A lone `}}` is literal.
//!
//! Rendering never re-splits anything: one argument template renders to exactly one
//! argument. Strings render verbatim, numbers and booleans as JSON text, objects and arrays
//! as compact JSON. A missing or `null` field is an error naming it (unless optional).

use std::fmt;
use std::ops::Range;

use serde_json::Value;

const OPEN: &str = "{{";
const CLOSE: &str = "}}";
const ESCAPED_OPEN: &str = "{{{{";

/// A parsed template: literal text and placeholders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    text: String,
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Placeholder(Placeholder),
}

/// One `{{…}}` placeholder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placeholder {
    /// What it reads.
    pub source: Source,
    /// Written with a trailing `?`.
    pub optional: bool,
    /// Written with a trailing `!`: the value may be an option (it is passed even when it
    /// starts with `-`, `+` or `@`; see [`render_argv`]).
    pub options: bool,
    /// Byte range of the whole `{{…}}` in the template text.
    pub span: Range<usize>,
    /// The expression as written, without braces, spaces or `?` (`input.path`).
    pub expr: String,
}

/// What a placeholder reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A value of the call's input, as a JSON pointer (`""` is the whole input).
    Input {
        /// RFC 6901 pointer.
        pointer: String,
    },
    /// An environment variable of the engine's process.
    Env {
        /// The variable's name.
        name: String,
    },
}

/// A template that cannot be parsed, with the byte range it concerns.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind}")]
pub struct TemplateError {
    /// Byte offset in the template text.
    pub offset: usize,
    /// Length in bytes of the offending text.
    pub len: usize,
    /// What is wrong.
    pub kind: TemplateErrorKind,
}

/// What is wrong with a template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TemplateErrorKind {
    /// `{{` without a closing `}}`.
    Unclosed,
    /// `{{}}`.
    Empty,
    /// Neither `input` nor `env`.
    UnknownRoot(String),
    /// `{{input.}}`, `{{input.a..b}}`.
    EmptyField(String),
    /// A character that cannot appear in a dotted field path.
    BadFieldChar(String, char),
    /// A JSON pointer with a `~` not followed by `0` or `1`.
    BadPointer(String),
    /// `{{env.NAME}}` with a name that is not `[A-Za-z_][A-Za-z0-9_]*`.
    BadEnvName(String),
    /// `?` on a placeholder that is not the whole value, or on an `env` placeholder.
    MisplacedOptional(String),
    /// A placeholder of a kind the place does not accept (`env` in argv, `input` in headers).
    NotAllowed {
        /// The expression.
        expr: String,
        /// Where it was used, in words.
        place: &'static str,
    },
}

impl fmt::Display for TemplateErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unclosed => write!(
                f,
                "`{OPEN}` is never closed with `{CLOSE}`; write `{ESCAPED_OPEN}` for a literal `{OPEN}`"
            ),
            Self::Empty => write!(f, "empty placeholder `{OPEN}{CLOSE}`"),
            Self::UnknownRoot(expr) => write!(
                f,
                "unknown placeholder `{OPEN}{expr}{CLOSE}`: write `{OPEN}input.FIELD{CLOSE}`, or `{ESCAPED_OPEN}` for a literal `{OPEN}`"
            ),
            Self::EmptyField(expr) => {
                write!(
                    f,
                    "placeholder `{OPEN}{expr}{CLOSE}` has an empty field name"
                )
            }
            Self::BadFieldChar(expr, c) => write!(
                f,
                "placeholder `{OPEN}{expr}{CLOSE}` has `{c}` in a field name; use a JSON pointer like `{OPEN}input./field{CLOSE}`"
            ),
            Self::BadPointer(expr) => write!(
                f,
                "placeholder `{OPEN}{expr}{CLOSE}` is not a valid JSON pointer: `~` must be followed by `0` or `1`"
            ),
            Self::BadEnvName(expr) => write!(
                f,
                "placeholder `{OPEN}{expr}{CLOSE}` does not name an environment variable (letters, digits and `_`)"
            ),
            Self::MisplacedOptional(expr) => write!(
                f,
                "placeholder `{OPEN}{expr}?{CLOSE}` can only be optional when it is the whole value and reads the input"
            ),
            Self::NotAllowed { expr, place } => {
                write!(
                    f,
                    "placeholder `{OPEN}{expr}{CLOSE}` cannot be used in {place}"
                )
            }
        }
    }
}

/// A bad template in a command's argv.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("argv[{index}]: {error}")]
pub struct ArgvTemplateError {
    /// Which argument.
    pub index: usize,
    /// The error, with offsets into that argument.
    pub error: TemplateError,
}

/// A template that could not be filled in for one call.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// The input has no value (or `null`) where a required placeholder points.
    #[error("missing value for `{{{{{expr}}}}}`: the input has nothing at `{pointer}`")]
    Missing {
        /// The placeholder's expression.
        expr: String,
        /// The pointer it reads.
        pointer: String,
    },
    /// The value contains a NUL byte, which no process argument can carry.
    #[error("the value for `{{{{{expr}}}}}` contains a NUL character, which cannot be passed")]
    Nul {
        /// The placeholder's expression.
        expr: String,
    },
    /// An environment variable is not set (or not allowed).
    #[error("environment variable `{name}` is not set")]
    EnvMissing {
        /// The variable.
        name: String,
    },
    /// A value that fills an argument on its own and that the program may read as something
    /// other than an operand, which the rules never judged: one starting with `-` before any
    /// `--` (an option: `--output=FILE`, `-r`), with `+` before any `--` (a command to an
    /// editor or pager: `vim +!CMD`, `less +CMD`), or with `@` anywhere (a file of more
    /// options: gcc, clang, javac, rustc, binutils and Python's argparse read `@FILE` before
    /// they parse options, `--` included).
    #[error("{}", option_like(expr, *lead))]
    OptionLike {
        /// The placeholder's expression.
        expr: String,
        /// The value's first character: `-`, `+` or `@`.
        lead: char,
    },
    /// No command is left after optional arguments were dropped.
    #[error("the command line is empty")]
    EmptyCommand,
}

/// The message of [`RenderError::OptionLike`].
fn option_like(expr: &str, lead: char) -> String {
    let (what, remedies) = match lead {
        '@' => (
            "many programs read it as a file of more options (gcc, javac, rustc, binutils, Python's argparse), even after `--`".to_owned(),
            format!("glue a prefix to it in `argv`, `./{{{{{expr}}}}}`"),
        ),
        '+' => (
            "editors and pagers run it as a command (`vim +CMD`, `less +CMD`)".to_owned(),
            format!("put a literal `--` before it in `argv` or glue a prefix to it, `./{{{{{expr}}}}}`"),
        ),
        _ => (
            "the program would read it as an option".to_owned(),
            format!(
                "put a literal `--` before it in `argv` (not for `find`, `test` and `expr`, which read it as their expression), glue it to the option that takes it, `--regexp={{{{{expr}}}}}`"
            ),
        ),
    };
    format!(
        "the value for `{{{{{expr}}}}}` starts with `{lead}`, so {what}: the call is refused (the policy can {remedies}, or, where the input may choose options, write `{{{{{expr}!}}}}`)"
    )
}

/// Parses one template (an argument or a header value).
pub fn parse_template(text: &str) -> Result<Template, TemplateError> {
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut index = 0;
    while let Some(rest) = text.get(index..).filter(|rest| !rest.is_empty()) {
        if rest.starts_with(ESCAPED_OPEN) {
            literal.push_str(OPEN);
            index += ESCAPED_OPEN.len();
        } else if rest.starts_with(OPEN) {
            let body_start = index + OPEN.len();
            let Some(body_len) = text[body_start..].find(CLOSE) else {
                return Err(TemplateError {
                    offset: index,
                    len: text.len() - index,
                    kind: TemplateErrorKind::Unclosed,
                });
            };
            let end = body_start + body_len + CLOSE.len();
            let placeholder =
                parse_placeholder(&text[body_start..body_start + body_len]).map_err(|kind| {
                    TemplateError {
                        offset: index,
                        len: end - index,
                        kind,
                    }
                })?;
            if !literal.is_empty() {
                parts.push(Part::Literal(std::mem::take(&mut literal)));
            }
            parts.push(Part::Placeholder(Placeholder {
                span: index..end,
                ..placeholder
            }));
            index = end;
        } else {
            let c = rest.chars().next().unwrap_or_default();
            literal.push(c);
            index += c.len_utf8();
        }
    }
    if !literal.is_empty() {
        parts.push(Part::Literal(literal));
    }
    let template = Template {
        text: text.to_owned(),
        parts,
    };
    if template.parts.len() > 1
        && let Some(optional) = template.placeholders().find(|p| p.optional)
    {
        return Err(TemplateError {
            offset: optional.span.start,
            len: optional.span.len(),
            kind: TemplateErrorKind::MisplacedOptional(optional.expr.clone()),
        });
    }
    Ok(template)
}

/// Parses the body between `{{` and `}}`; the span is filled in by the caller.
fn parse_placeholder(body: &str) -> Result<Placeholder, TemplateErrorKind> {
    let mut expr = body.trim();
    let (mut optional, mut options) = (false, false);
    // `?` and `!`, in either order.
    for _ in 0..2 {
        if let Some(rest) = expr.strip_suffix('?') {
            (expr, optional) = (rest.trim_end(), true);
        } else if let Some(rest) = expr.strip_suffix('!') {
            (expr, options) = (rest.trim_end(), true);
        }
    }
    if expr.is_empty() {
        return Err(TemplateErrorKind::Empty);
    }
    let owned = || expr.to_owned();
    let (root, path) = match expr.split_once('.') {
        Some((root, path)) => (root, Some(path)),
        None => (expr, None),
    };
    let source = match (root, path) {
        ("input", None) => Source::Input {
            pointer: String::new(),
        },
        ("input", Some(path)) => Source::Input {
            pointer: input_pointer(expr, path)?,
        },
        ("env", Some(name)) => {
            let mut chars = name.chars();
            let valid = chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(TemplateErrorKind::BadEnvName(owned()));
            }
            if optional || options {
                return Err(TemplateErrorKind::MisplacedOptional(owned()));
            }
            Source::Env {
                name: name.to_owned(),
            }
        }
        ("env", None) => return Err(TemplateErrorKind::BadEnvName(owned())),
        _ => return Err(TemplateErrorKind::UnknownRoot(owned())),
    };
    Ok(Placeholder {
        source,
        optional,
        options,
        span: 0..0,
        expr: owned(),
    })
}

/// Turns the part after `input.` into a JSON pointer.
fn input_pointer(expr: &str, path: &str) -> Result<String, TemplateErrorKind> {
    if path.starts_with('/') {
        let mut chars = path.chars();
        while let Some(c) = chars.next() {
            if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
                return Err(TemplateErrorKind::BadPointer(expr.to_owned()));
            }
        }
        return Ok(path.to_owned());
    }
    let mut pointer = String::with_capacity(path.len() + 1);
    for segment in path.split('.') {
        if segment.is_empty() {
            return Err(TemplateErrorKind::EmptyField(expr.to_owned()));
        }
        if let Some(bad) = segment
            .chars()
            .find(|c| c.is_whitespace() || matches!(c, '{' | '}' | '?'))
        {
            return Err(TemplateErrorKind::BadFieldChar(expr.to_owned(), bad));
        }
        pointer.push('/');
        pointer.push_str(&segment.replace('~', "~0").replace('/', "~1"));
    }
    Ok(pointer)
}

impl Template {
    /// The template as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The placeholders, in order.
    pub fn placeholders(&self) -> impl Iterator<Item = &Placeholder> {
        self.parts.iter().filter_map(|part| match part {
            Part::Placeholder(placeholder) => Some(placeholder),
            Part::Literal(_) => None,
        })
    }

    /// Fills the template in; `lookup` gives each placeholder's text, `None` when missing.
    ///
    /// Returns `Ok(None)` when the template is a single optional placeholder whose value is
    /// missing (the argument or header is dropped).
    pub fn render(
        &self,
        mut lookup: impl FnMut(&Placeholder) -> Result<Option<String>, RenderError>,
    ) -> Result<Option<String>, RenderError> {
        let mut out = String::with_capacity(self.text.len());
        for part in &self.parts {
            match part {
                Part::Literal(text) => out.push_str(text),
                Part::Placeholder(placeholder) => match lookup(placeholder)? {
                    Some(text) => out.push_str(&text),
                    // INVARIANT: parse_template allows `?` only on a template that is a
                    // single placeholder, so dropping here drops the whole value.
                    None if placeholder.optional => return Ok(None),
                    None => return Err(missing(placeholder)),
                },
            }
        }
        Ok(Some(out))
    }

    /// Fills the template in from a call's input (`env` placeholders count as missing).
    pub fn render_input(&self, input: &Value) -> Result<Option<String>, RenderError> {
        self.render(|placeholder| match &placeholder.source {
            Source::Input { pointer } => Ok(input.pointer(pointer).and_then(value_text)),
            Source::Env { .. } => Ok(None),
        })
    }
}

fn missing(placeholder: &Placeholder) -> RenderError {
    match &placeholder.source {
        Source::Input { pointer } => RenderError::Missing {
            expr: placeholder.expr.clone(),
            pointer: if pointer.is_empty() {
                "/".to_owned()
            } else {
                pointer.clone()
            },
        },
        Source::Env { name } => RenderError::EnvMissing { name: name.clone() },
    }
}

/// The text a JSON value renders to; `null` counts as missing.
fn value_text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(text) => Some(text.clone()),
        Value::Bool(_) | Value::Number(_) | Value::Array(_) | Value::Object(_) => {
            Some(value.to_string())
        }
    }
}

/// Parses every argument of a command line; `env` placeholders are refused (the child's
/// environment is the place for variables).
pub fn parse_argv(argv: &[String]) -> Result<Vec<Template>, ArgvTemplateError> {
    argv.iter()
        .enumerate()
        .map(|(index, arg)| {
            let template =
                parse_template(arg).map_err(|error| ArgvTemplateError { index, error })?;
            if let Some(env) = template
                .placeholders()
                .find(|p| matches!(p.source, Source::Env { .. }))
            {
                return Err(ArgvTemplateError {
                    index,
                    error: TemplateError {
                        offset: env.span.start,
                        len: env.span.len(),
                        kind: TemplateErrorKind::NotAllowed {
                            expr: env.expr.clone(),
                            place: "a command line (pass variables with `env_allow` or `env`)",
                        },
                    },
                });
            }
            Ok(template)
        })
        .collect()
}

/// Renders a command line for one call: one template, at most one argument. A value that
/// begins an argument and that the program may read as an option — `-` or `+` before any
/// literal `--`, `@` anywhere — is refused ([`RenderError::OptionLike`]): a deny rule on the
/// field never judged it as one.
pub fn render_argv(argv: &[Template], input: &Value) -> Result<Vec<String>, RenderError> {
    let mut out = Vec::with_capacity(argv.len());
    // After a literal `--`, programs read every argument as an operand (a file of options,
    // `@FILE`, is read before options are parsed).
    let mut operands_only = false;
    // After a shell's `-c SCRIPT`, every argument is one of the script's positional
    // parameters, which the shell reads as nothing else.
    let mut parameters = false;
    let mut script_next = false;
    for template in argv {
        let Some(arg) = template.render_input(input)? else {
            continue;
        };
        let leading = template
            .placeholders()
            .next()
            .filter(|placeholder| placeholder.span.start == 0 && !placeholder.options);
        let lead = arg.chars().next().filter(|lead| match lead {
            '-' | '+' => !operands_only,
            '@' => true,
            _ => false,
        });
        if let (Some(placeholder), Some(lead)) = (leading, lead)
            && !parameters
            && !out.is_empty()
        {
            return Err(RenderError::OptionLike {
                expr: placeholder.expr.clone(),
                lead,
            });
        }
        let literal = template.placeholders().next().is_none();
        // The program's file name (the first argument).
        let program = out
            .first()
            .map(|first: &String| first.rsplit('/').next().unwrap_or(first.as_str()));
        // `find`, `test` and `expr` read `-…` after `--` too, as their expression
        // (`find -- {{input.dir}}` given `-delete` deleted the workspace).
        let expression = program.is_some_and(|name| matches!(name, "find" | "test" | "[" | "expr"));
        if literal && template.text() == "--" && !expression {
            operands_only = true;
        }
        if script_next {
            parameters = true;
        }
        script_next = literal
            && template.text() == "-c"
            && program.is_some_and(|name| matches!(name, "sh" | "bash" | "zsh" | "dash" | "ksh"));
        if arg.contains('\0') {
            let expr = template
                .placeholders()
                .next()
                .map_or_else(|| template.text().to_owned(), |p| p.expr.clone());
            return Err(RenderError::Nul { expr });
        }
        out.push(arg);
    }
    if out.is_empty() {
        return Err(RenderError::EmptyCommand);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn argv(args: &[&str]) -> Vec<Template> {
        let owned: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        parse_argv(&owned).unwrap()
    }

    /// A value starting with `-` that begins an argument is an option to the program: refused
    /// unless a literal `--` comes before it or the template glues it to its option.
    #[test]
    fn option_like_values_are_refused_where_the_program_reads_options() {
        let input = json!({"pattern": "-r", "rev": "--output=/tmp/x", "n": -5, "path": "src"});
        for args in [
            &["grep", "{{input.pattern}}", "{{input.path}}"][..],
            &["git", "log", "--oneline", "{{input.rev}}"],
            &["head", "{{input.n}}"],
            // find reads `-…` after `--` as its expression (`-delete`).
            &["find", "--", "{{input.pattern}}", "-name", "*.txt"],
            &["/usr/bin/find", "--", "{{input.pattern}}"],
        ] {
            let error = render_argv(&argv(args), &input).unwrap_err();
            assert!(
                matches!(error, RenderError::OptionLike { .. }),
                "{args:?}: {error}"
            );
            assert!(error.to_string().contains("starts with `-`"), "{error}");
        }
        for (args, rendered) in [
            (
                &["grep", "--", "{{input.pattern}}", "{{input.path}}"][..],
                &["grep", "--", "-r", "src"][..],
            ),
            (
                &["grep", "--regexp={{input.pattern}}"],
                &["grep", "--regexp=-r"],
            ),
            (&["grep", "-e{{input.pattern}}"], &["grep", "-e-r"]),
            (&["ls", "{{input.path}}"], &["ls", "src"]),
            // A shell script's positional parameters; a placeholder that may be an option.
            (
                &["bash", "-c", "echo \"$1\"", "x", "{{input.pattern}}"],
                &["bash", "-c", "echo \"$1\"", "x", "-r"],
            ),
            (
                &["grep", "{{input.pattern!}}", "src"],
                &["grep", "-r", "src"],
            ),
        ] {
            assert_eq!(render_argv(&argv(args), &input).unwrap(), rendered);
        }
    }

    /// A value starting with `@` is a file of more options to gcc, javac, rustc, binutils and
    /// argparse, read before options are parsed (`--` does not stop it), and one starting
    /// with `+` a command to vim, less and more: `@src/opts.rsp` made a compile tool run
    /// `-wrapper sh,-c,…`, `+!CMD` made a viewing tool run CMD.
    #[test]
    fn response_files_and_editor_commands_are_refused() {
        let input = json!({"src": "@src/opts.rsp", "file": "+!touch x", "pkg": "@types/node"});
        for (args, lead) in [
            (&["gcc", "-fsyntax-only", "{{input.src}}"][..], '@'),
            (&["objdump", "-d", "--", "{{input.src}}"], '@'),
            (&["vim", "-es", "{{input.file}}", "+%p"], '+'),
            (&["less", "{{input.file}}"], '+'),
        ] {
            let error = render_argv(&argv(args), &input).unwrap_err();
            assert!(
                matches!(error, RenderError::OptionLike { lead: l, .. } if l == lead),
                "{args:?}: {error}"
            );
            assert!(
                error.to_string().contains(&format!("starts with `{lead}`")),
                "{error}"
            );
        }
        for (args, rendered) in [
            (
                &["vim", "--", "{{input.file}}"][..],
                &["vim", "--", "+!touch x"][..],
            ),
            (&["gcc", "./{{input.src}}"], &["gcc", "./@src/opts.rsp"]),
            (
                &["npm", "view", "{{input.pkg!}}"],
                &["npm", "view", "@types/node"],
            ),
            (
                &["sh", "-c", "echo \"$1\"", "x", "{{input.src}}"],
                &["sh", "-c", "echo \"$1\"", "x", "@src/opts.rsp"],
            ),
        ] {
            assert_eq!(render_argv(&argv(args), &input).unwrap(), rendered);
        }
    }

    #[test]
    fn rendering_table() {
        let input = json!({
            "path": "a b; rm -rf /",
            "n": 3,
            "flag": true,
            "obj": {"k": [1, "x"]},
            "nested": {"list": ["zero", "one"]},
            "none": null,
            "a/b": "slash",
            "quote": "it's \"quoted\"\nnext line",
        });
        let table: &[(&str, Option<&str>)] = &[
            ("{{input.path}}", Some("a b; rm -rf /")),
            ("--path={{input.path}}", Some("--path=a b; rm -rf /")),
            ("{{ input.path }}", Some("a b; rm -rf /")),
            ("{{input.n}}", Some("3")),
            ("{{input.flag}}", Some("true")),
            ("{{input.obj}}", Some(r#"{"k":[1,"x"]}"#)),
            ("{{input.nested.list.1}}", Some("one")),
            ("{{input./nested/list/0}}", Some("zero")),
            ("{{input./a~1b}}", Some("slash")),
            ("{{input.quote}}", Some("it's \"quoted\"\nnext line")),
            ("{{input.n}}-{{input.flag}}", Some("3-true")),
            ("{{input.missing?}}", None),
            ("{{input.none?}}", None),
            ("{{ input.path ? }}", Some("a b; rm -rf /")),
            ("{{{{input.path}}", Some("{{input.path}}")),
            ("}}", Some("}}")),
            ("plain", Some("plain")),
            ("", Some("")),
            ("{{input}}", Some(&*input.to_string())),
        ];
        for (template, expected) in table {
            let parsed = parse_template(template).unwrap_or_else(|e| panic!("{template}: {e}"));
            let rendered = parsed.render_input(&input).unwrap();
            assert_eq!(rendered.as_deref(), *expected, "{template}");
        }
    }

    #[test]
    fn parse_errors_carry_offsets() {
        let table: &[(&str, usize, usize, TemplateErrorKind)] = &[
            ("x{{input.a", 1, 9, TemplateErrorKind::Unclosed),
            ("{{}}", 0, 4, TemplateErrorKind::Empty),
            (
                "--a={{inptu.a}}",
                4,
                11,
                TemplateErrorKind::UnknownRoot("inptu.a".into()),
            ),
            (
                "{{input.}}",
                0,
                10,
                TemplateErrorKind::EmptyField("input.".into()),
            ),
            (
                "{{input.a..b}}",
                0,
                14,
                TemplateErrorKind::EmptyField("input.a..b".into()),
            ),
            (
                "{{input.a b}}",
                0,
                13,
                TemplateErrorKind::BadFieldChar("input.a b".into(), ' '),
            ),
            (
                "{{input./a~2}}",
                0,
                14,
                TemplateErrorKind::BadPointer("input./a~2".into()),
            ),
            (
                "--x={{input.a?}}",
                4,
                12,
                TemplateErrorKind::MisplacedOptional("input.a".into()),
            ),
            (
                "{{env.1X}}",
                0,
                10,
                TemplateErrorKind::BadEnvName("env.1X".into()),
            ),
            (
                "{{env.X?}}",
                0,
                10,
                TemplateErrorKind::MisplacedOptional("env.X".into()),
            ),
        ];
        for (template, offset, len, kind) in table {
            let err = parse_template(template).unwrap_err();
            assert_eq!(
                err,
                TemplateError {
                    offset: *offset,
                    len: *len,
                    kind: kind.clone()
                },
                "{template}"
            );
        }
    }

    #[test]
    fn error_messages() {
        let err = parse_template("{{inptu.a}}").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown placeholder `{{inptu.a}}`: write `{{input.FIELD}}`, or `{{{{` for a literal `{{`"
        );
        let err = render_argv(&argv(&["cat", "{{input.path}}"]), &json!({})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "missing value for `{{input.path}}`: the input has nothing at `/path`"
        );
    }

    #[test]
    fn argv_refuses_env_and_reports_the_argument() {
        let args = vec!["curl".to_owned(), "-H{{env.TOKEN}}".to_owned()];
        let err = parse_argv(&args).unwrap_err();
        assert_eq!(err.index, 1);
        assert_eq!(err.error.offset, 2);
        assert!(
            err.to_string()
                .starts_with("argv[1]: placeholder `{{env.TOKEN}}`")
        );
    }

    #[test]
    fn argv_rendering_keeps_one_argument_per_template() {
        let templates = argv(&["grep", "{{input.flags?!}}", "--", "{{input.pattern}}"]);
        let out = render_argv(&templates, &json!({"pattern": "a b\nc"})).unwrap();
        assert_eq!(out, ["grep", "--", "a b\nc"]);
        let out = render_argv(&templates, &json!({"pattern": "x", "flags": "-i"})).unwrap();
        assert_eq!(out, ["grep", "-i", "--", "x"]);
    }

    #[test]
    fn nul_and_empty_command_are_errors() {
        let templates = argv(&["echo", "{{input.s}}"]);
        let err = render_argv(&templates, &json!({"s": "a\u{0}b"})).unwrap_err();
        assert_eq!(
            err,
            RenderError::Nul {
                expr: "input.s".into()
            }
        );
        let templates = argv(&["{{input.cmd?}}"]);
        assert_eq!(
            render_argv(&templates, &json!({})).unwrap_err(),
            RenderError::EmptyCommand
        );
    }

    #[test]
    fn env_placeholders_render_through_the_lookup() {
        let template = parse_template("Bearer {{env.TOKEN}}").unwrap();
        let rendered = template
            .render(|p| match &p.source {
                Source::Env { name } if name == "TOKEN" => Ok(Some("s3cret".into())),
                Source::Env { .. } | Source::Input { .. } => Ok(None),
            })
            .unwrap();
        assert_eq!(rendered.as_deref(), Some("Bearer s3cret"));
        let err = template.render(|_| Ok(None)).unwrap_err();
        assert_eq!(
            err,
            RenderError::EnvMissing {
                name: "TOKEN".into()
            }
        );
    }
}
