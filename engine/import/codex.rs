//! Codex `.rules` files → toolgate rules.
//!
//! A `.rules` file is Starlark; Codex's execpolicy reads `prefix_rule(pattern=[…],
//! decision=…, justification=…, match=[…], not_match=[…])` and `host_executable(name=…,
//! paths=[…])` calls. A pattern is a list of words matched in order as a prefix of the
//! command; a word may be a list of alternatives. Decisions: `allow` (the default),
//! `prompt`, `forbidden`; the strictest matching rule wins.
//!
//! This module reads that subset with a small parser of its own rather than a full Starlark
//! interpreter (the `starlark` crate is large and would evaluate code; these files are data):
//! calls with keyword or positional arguments whose values are strings, lists, `True`,
//! `False`, `None` and integers, `#` comments. Anything else — variables, loops, other
//! functions — is an error at its line and column, so nothing is skipped unseen.
//!
//! Each rule becomes a `shell` rule on `Bash` matching the prefix alone and followed by
//! anything (one pattern per combination of alternatives); `forbidden` gets priority 100,
//! `prompt` 1 and `allow` 0, so that the strictest wins as in Codex and no imported allow
//! outranks a built-in deny. `match`/`not_match` become the rule's `examples`, so toolgate
//! checks them on every load.

use std::path::PathBuf;

use serde_json::json;

use super::{ImportError, Origin, Rule, Translation, bash_call, prefix_patterns, shell_word};

/// The most combinations of alternatives one pattern may expand to.
const MAX_COMBINATIONS: usize = 256;
/// The deepest nesting of lists.
const MAX_DEPTH: usize = 8;

/// A parsed value.
#[derive(Clone, Debug, PartialEq)]
enum Expr {
    Str(String),
    List(Vec<(Expr, Pos)>),
    Bool(bool),
    None,
    Int(i64),
}

/// A 1-based line and column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pos {
    line: usize,
    column: usize,
}

/// One call: `name(args…)`.
#[derive(Clone, Debug)]
struct Call {
    name: String,
    at: Pos,
    /// The call's source text.
    text: String,
    positional: Vec<(Expr, Pos)>,
    keywords: Vec<(String, Expr, Pos)>,
}

/// Translates the `.rules` files.
pub fn translate(sources: &[(PathBuf, String)]) -> Result<Translation, ImportError> {
    let mut out = Translation::default();
    for (path, text) in sources {
        let file = path.display().to_string();
        let calls = Parser::new(text)
            .file()
            .map_err(|(at, message)| ImportError::Syntax {
                file: file.clone(),
                line: at.line,
                column: at.column,
                message,
            })?;
        for call in calls {
            let from = Origin {
                file: file.clone(),
                place: format!("line {}", call.at.line),
                text: one_line(&call.text),
            };
            match call.name.as_str() {
                "prefix_rule" => match prefix_rule(&call, from.clone()) {
                    Ok(rule) => out.rules.push(rule),
                    Err((at, message)) => {
                        return Err(ImportError::Syntax {
                            file,
                            line: at.line,
                            column: at.column,
                            message,
                        });
                    }
                },
                "host_executable" => out.skip(
                    from,
                    "toolgate matches a command word as written (and, for deny and ask rules, by its last path component); it keeps no list of trusted executable paths",
                ),
                other => {
                    return Err(ImportError::Syntax {
                        file,
                        line: call.at.line,
                        column: call.at.column,
                        message: format!(
                            "`{other}` is not a Codex policy function (`prefix_rule`, `host_executable`)"
                        ),
                    });
                }
            }
        }
    }
    Ok(out)
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

type Failure = (Pos, String);

fn prefix_rule(call: &Call, from: Origin) -> Result<Rule, Failure> {
    let mut pattern = None;
    let mut decision = "allow";
    let mut reason = None;
    let mut examples = Vec::new();
    if let Some((expr, at)) = call.positional.first() {
        pattern = Some((expr.clone(), *at));
    }
    if call.positional.len() > 1 {
        return Err((
            call.positional[1].1,
            "`prefix_rule` takes one positional argument (the pattern)".into(),
        ));
    }
    for (key, value, at) in &call.keywords {
        match key.as_str() {
            "pattern" => pattern = Some((value.clone(), *at)),
            "decision" => {
                decision = match value {
                    Expr::Str(s) if s == "allow" => "allow",
                    Expr::Str(s) if s == "prompt" => "ask",
                    Expr::Str(s) if s == "forbidden" => "deny",
                    _ => {
                        return Err((
                            *at,
                            "`decision` is one of `allow`, `prompt`, `forbidden`".into(),
                        ));
                    }
                }
            }
            "justification" => match value {
                Expr::Str(s) => reason = Some(s.clone()),
                _ => return Err((*at, "`justification` is a string".into())),
            },
            "match" | "not_match" => {
                let Expr::List(items) = value else {
                    return Err((*at, format!("`{key}` is a list of examples")));
                };
                for (item, at) in items {
                    let command = example(item).ok_or((
                        *at,
                        "an example is a string or a list of strings".to_owned(),
                    ))?;
                    examples.push((key == "match", bash_call(&command)));
                }
            }
            other => {
                return Err((*at, format!("`prefix_rule` has no argument `{other}`")));
            }
        }
    }
    let (pattern, at) = pattern.ok_or((call.at, "`prefix_rule` needs a `pattern`".to_owned()))?;
    let Expr::List(words) = pattern else {
        return Err((at, "`pattern` is a list of words".into()));
    };
    if words.is_empty() {
        return Err((at, "`pattern` is empty".into()));
    }
    let mut combinations: Vec<Vec<String>> = vec![Vec::new()];
    for (word, at) in &words {
        let alternatives: Vec<String> = match word {
            Expr::Str(s) => vec![s.clone()],
            Expr::List(items) => items
                .iter()
                .map(|(item, at)| match item {
                    Expr::Str(s) => Ok(s.clone()),
                    _ => Err((*at, "an alternative is a string".to_owned())),
                })
                .collect::<Result<_, _>>()?,
            _ => {
                return Err((
                    *at,
                    "a pattern word is a string or a list of strings".into(),
                ));
            }
        };
        if alternatives.is_empty() {
            return Err((*at, "a list of alternatives is empty".into()));
        }
        if combinations.len() * alternatives.len() > MAX_COMBINATIONS {
            return Err((
                *at,
                format!("the alternatives expand to more than {MAX_COMBINATIONS} patterns"),
            ));
        }
        combinations = combinations
            .iter()
            .flat_map(|prefix| {
                alternatives.iter().map(move |alternative| {
                    let mut next = prefix.clone();
                    next.push(alternative.clone());
                    next
                })
            })
            .collect();
    }
    let patterns: Vec<String> = combinations
        .iter()
        .flat_map(|words| prefix_patterns(words))
        .collect();
    let hint = combinations
        .first()
        .map(|w| w.join(" "))
        .unwrap_or_default();
    // Codex's shell tool, as `toolgate hook codex` decides it.
    let shell = super::agent_tools("codex")
        .get("Bash")
        .cloned()
        .unwrap_or_else(|| "Bash".to_owned());
    let mut rule = Rule::new(hint, vec![shell], decision, from);
    rule.matchers = vec![("command".into(), json!({ "shell": patterns }))];
    rule.priority = match decision {
        "deny" => 100,
        "ask" => 1,
        _ => 0,
    };
    rule.reason = reason;
    rule.examples = examples;
    Ok(rule)
}

/// An example: a command string (kept as written) or a list of words (quoted back into one).
fn example(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Str(s) => Some(s.clone()),
        Expr::List(items) => {
            let words: Option<Vec<String>> = items
                .iter()
                .map(|(item, _)| match item {
                    Expr::Str(s) => Some(shell_word(s)),
                    _ => None,
                })
                .collect();
            words.map(|w| w.join(" "))
        }
        _ => None,
    }
}

/// A parser for the call subset of Starlark described in the module docs.
struct Parser<'a> {
    text: &'a str,
    offset: usize,
    line: usize,
    column: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            offset: 0,
            line: 1,
            column: 1,
        }
    }

    fn pos(&self) -> Pos {
        Pos {
            line: self.line,
            column: self.column,
        }
    }

    fn peek(&self) -> Option<char> {
        self.text[self.offset..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.offset += c.len_utf8();
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    /// Skips whitespace, newlines, `;` (with `statements`) and comments.
    fn skip(&mut self, statements: bool) {
        while let Some(c) = self.peek() {
            if c.is_whitespace() || (statements && c == ';') {
                self.bump();
            } else if c == '#' {
                while self.peek().is_some_and(|c| c != '\n') {
                    self.bump();
                }
            } else {
                break;
            }
        }
    }

    fn expect(&mut self, want: char) -> Result<(), Failure> {
        self.skip(false);
        let at = self.pos();
        match self.bump() {
            Some(c) if c == want => Ok(()),
            Some(c) => Err((at, format!("expected `{want}`, found `{c}`"))),
            None => Err((at, format!("expected `{want}`, found the end of the file"))),
        }
    }

    fn identifier(&mut self) -> Option<String> {
        let start = self.offset;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            self.bump();
        }
        (self.offset > start).then(|| self.text[start..self.offset].to_owned())
    }

    fn file(&mut self) -> Result<Vec<Call>, Failure> {
        let mut calls = Vec::new();
        loop {
            self.skip(true);
            if self.peek().is_none() {
                return Ok(calls);
            }
            calls.push(self.call()?);
        }
    }

    fn call(&mut self) -> Result<Call, Failure> {
        let at = self.pos();
        let start = self.offset;
        let Some(name) = self
            .identifier()
            .filter(|n| !n.starts_with(|c: char| c.is_ascii_digit()))
        else {
            let found = self
                .peek()
                .map_or("the end of the file".to_owned(), |c| format!("`{c}`"));
            return Err((
                at,
                format!("expected a call such as `prefix_rule(...)`, found {found}"),
            ));
        };
        self.expect('(')?;
        let mut positional = Vec::new();
        let mut keywords = Vec::new();
        loop {
            self.skip(false);
            if self.peek() == Some(')') {
                self.bump();
                break;
            }
            let arg_at = self.pos();
            // A keyword argument is `name = value`; look ahead for the `=`.
            let save = (self.offset, self.line, self.column);
            let keyword = match self.identifier() {
                Some(key) => {
                    self.skip(false);
                    if self.peek() == Some('=') {
                        self.bump();
                        Some(key)
                    } else {
                        (self.offset, self.line, self.column) = save;
                        None
                    }
                }
                None => None,
            };
            let value = self.expr(0)?;
            match keyword {
                Some(key) => {
                    if keywords.iter().any(|(k, _, _)| *k == key) {
                        return Err((arg_at, format!("argument `{key}` is given twice")));
                    }
                    keywords.push((key, value, arg_at));
                }
                None if keywords.is_empty() => positional.push((value, arg_at)),
                None => {
                    return Err((
                        arg_at,
                        "a positional argument after a keyword argument".into(),
                    ));
                }
            }
            self.skip(false);
            match self.peek() {
                Some(',') => {
                    self.bump();
                }
                Some(')') => {}
                _ => {
                    let at = self.pos();
                    return Err((at, "expected `,` or `)` after an argument".into()));
                }
            }
        }
        Ok(Call {
            name,
            at,
            text: self.text[start..self.offset].to_owned(),
            positional,
            keywords,
        })
    }

    fn expr(&mut self, depth: usize) -> Result<Expr, Failure> {
        self.skip(false);
        let at = self.pos();
        match self.peek() {
            Some('[') => {
                if depth >= MAX_DEPTH {
                    return Err((at, format!("lists nested more than {MAX_DEPTH} deep")));
                }
                self.bump();
                let mut items = Vec::new();
                loop {
                    self.skip(false);
                    if self.peek() == Some(']') {
                        self.bump();
                        return Ok(Expr::List(items));
                    }
                    let item_at = self.pos();
                    items.push((self.expr(depth + 1)?, item_at));
                    self.skip(false);
                    match self.peek() {
                        Some(',') => {
                            self.bump();
                        }
                        Some(']') => {}
                        _ => {
                            let at = self.pos();
                            return Err((at, "expected `,` or `]` in a list".into()));
                        }
                    }
                }
            }
            Some('"' | '\'') => self.string(false),
            Some('r')
                if matches!(
                    self.text[self.offset + 1..].chars().next(),
                    Some('"' | '\'')
                ) =>
            {
                self.bump();
                self.string(true)
            }
            Some(c) if c.is_ascii_digit() || c == '-' => {
                let start = self.offset;
                self.bump();
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.bump();
                }
                self.text[start..self.offset]
                    .parse()
                    .map(Expr::Int)
                    .map_err(|_| (at, "not an integer".to_owned()))
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let word = self.identifier().unwrap_or_default();
                match word.as_str() {
                    "True" => Ok(Expr::Bool(true)),
                    "False" => Ok(Expr::Bool(false)),
                    "None" => Ok(Expr::None),
                    other => Err((
                        at,
                        format!(
                            "`{other}`: only literal values (strings, lists, True, False, None, integers) are supported"
                        ),
                    )),
                }
            }
            Some(c) => Err((at, format!("unexpected `{c}`"))),
            None => Err((at, "unexpected end of the file".into())),
        }
    }

    fn string(&mut self, raw: bool) -> Result<Expr, Failure> {
        let at = self.pos();
        let quote = self.bump().unwrap_or('"');
        let triple = self.text[self.offset..].starts_with(&format!("{quote}{quote}"));
        if triple {
            self.bump();
            self.bump();
        }
        let mut value = String::new();
        loop {
            let Some(c) = self.bump() else {
                return Err((at, "unterminated string".into()));
            };
            if c == quote {
                if !triple {
                    break;
                }
                if self.text[self.offset..].starts_with(&format!("{quote}{quote}")) {
                    self.bump();
                    self.bump();
                    break;
                }
                value.push(c);
            } else if c == '\n' && !triple {
                return Err((at, "unterminated string".into()));
            } else if c == '\\' && !raw {
                let escape_at = self.pos();
                match self.bump() {
                    Some('n') => value.push('\n'),
                    Some('t') => value.push('\t'),
                    Some('r') => value.push('\r'),
                    Some('0') => value.push('\0'),
                    Some('\n') => {}
                    Some(c @ ('\\' | '\'' | '"')) => value.push(c),
                    Some(c) => {
                        return Err((escape_at, format!("unsupported escape `\\{c}`")));
                    }
                    None => return Err((at, "unterminated string".into())),
                }
            } else {
                value.push(c);
            }
        }
        Ok(Expr::Str(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_parse_with_comments_lists_and_escapes() {
        let text = "# policy\nprefix_rule(\n  pattern = [\"git\", [\"status\", 'log']],  # alts\n  decision = \"prompt\",\n  match = [[\"git\", \"status\"], r\"git log -1\"],\n)\nhost_executable(name = \"git\", paths = [\"/usr/bin/git\"])\n";
        let calls = Parser::new(text).file().unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].name, "prefix_rule");
        assert_eq!(calls[0].at, Pos { line: 2, column: 1 });
        assert_eq!(calls[0].keywords.len(), 3);
        assert_eq!(calls[1].name, "host_executable");
    }

    #[test]
    fn errors_point_at_their_line_and_column() {
        for (text, line, column, message) in [
            (
                "prefix_rule(pattern = x)",
                1,
                23,
                "`x`: only literal values",
            ),
            (
                "prefix_rule(\n  pattern = [\"a\",\n",
                3,
                1,
                "unexpected end of the file",
            ),
            (
                "prefix_rule(pattern = ['a'] decision = 'allow')",
                1,
                29,
                "expected `,` or `)`",
            ),
            ("x = 1", 1, 3, "expected `(`"),
            (
                "prefix_rule(pattern = [\"a\\q\"])",
                1,
                27,
                "unsupported escape",
            ),
        ] {
            let (at, got) = Parser::new(text).file().unwrap_err();
            assert_eq!((at.line, at.column), (line, column), "{text}: {got}");
            assert!(got.contains(message), "{text}: {got}");
        }
        let mut deep = "prefix_rule(pattern = ".to_owned();
        deep.push_str(&"[".repeat(20));
        let (_, message) = Parser::new(&deep).file().unwrap_err();
        assert!(message.contains("nested"), "{message}");
    }
}
