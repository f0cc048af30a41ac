//! One shell word, broken into quoted text, unquoted text and expansions.
//!
//! Words come from the parser as raw source text (`"a $b"'c'`); [`split_word`] parses them
//! with the parser's word grammar and removes quotes. The command splitter turns the parts
//! into a [`Word`] (literal, dynamic or opaque); the pattern compiler uses them to tell a
//! quoted `*` from a glob `*`. Command and backtick substitutions found anywhere in the word
//! (inside double quotes, parameter-expansion operands, arithmetic) are handed back as
//! source strings so the caller can split them too.

use brush_parser::ParserOptions;
use brush_parser::ast::UnexpandedArithmeticExpr;
use brush_parser::word::{
    Parameter, ParameterExpr, ParameterTransformOp, WordPiece, WordPieceWithSource,
};

use super::{Expansion, ShellParseError, Word, WordKind, name_length};

/// Parser options used for every parse. Tilde expansion is off in the word grammar because
/// its `~N` rule panics on numbers that overflow; tildes are detected on the unquoted text
/// instead (see [`unquoted_expansions`]).
pub(crate) const PARSER_OPTIONS: ParserOptions = ParserOptions {
    enable_extended_globbing: true,
    posix_mode: false,
    sh_mode: false,
    tilde_expansion_at_word_start: false,
    tilde_expansion_after_colon: false,
    parser_impl: brush_parser::ParserImpl::Peg,
};

/// Operands of parameter expansions may nest (`${a:-${b:-${c}}}`); past this depth the
/// word is refused.
const MAX_OPERAND_DEPTH: usize = 8;

/// A part of a word after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    /// Text, with whether it was quoted or escaped (quoted text is never globbed or expanded).
    Text {
        text: String,
        quoting: Quoting,
        /// Byte offset of the part in the raw word.
        start: usize,
    },
    /// An expansion.
    Expansion {
        expansion: Expansion,
        strength: Strength,
        start: usize,
    },
}

/// Whether text was written inside quotes (or escaped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quoting {
    Unquoted,
    Quoted,
}

/// How much an expansion hides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Strength {
    /// The value is unknown, but expanding it runs nothing unseen.
    Dynamic,
    /// Expanding it evaluates text that is not visible here.
    Opaque,
}

/// What a word's expansions reach besides its own value.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// The source of every command substitution.
    pub substitutions: Vec<String>,
    /// The name of every variable expanded (`$NAME`, `${NAME…}`, also inside operands).
    pub variables: Vec<String>,
}

/// Splits a raw word into parts, recording in `found` the source of every command
/// substitution and the name of every variable found in it.
pub(crate) fn split_word(raw: &str, found: &mut Found) -> Result<Vec<Part>, ShellParseError> {
    split_word_at_depth(raw, found, 0)
}

/// Whether a word is made only of characters the shell never treats specially inside a
/// word (no quoting, expansion, glob, tilde or brace characters), so that its value is its
/// text. Lets the common case skip the word grammar.
pub(crate) fn is_plain(raw: &str) -> bool {
    !raw.is_empty()
        && raw.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'-' | b'_' | b'.' | b'/' | b':' | b'=' | b'+' | b'@' | b'%' | b','
                )
        })
}

fn split_word_at_depth(
    raw: &str,
    found: &mut Found,
    depth: usize,
) -> Result<Vec<Part>, ShellParseError> {
    if is_plain(raw) {
        return Ok(vec![Part::Text {
            text: raw.to_owned(),
            quoting: Quoting::Unquoted,
            start: 0,
        }]);
    }
    if depth > MAX_OPERAND_DEPTH {
        return Err(ShellParseError::new(
            format!("expansions nested too deeply in word `{raw}`"),
            None,
        ));
    }
    let pieces = brush_parser::word::parse(raw, &PARSER_OPTIONS)
        .map_err(|err| ShellParseError::new(format!("cannot parse word `{raw}`: {err}"), None))?;
    let mut splitter = Splitter {
        parts: Vec::new(),
        found,
        depth,
    };
    splitter.pieces(&pieces, Quoting::Unquoted)?;
    Ok(splitter.parts)
}

/// bash 5.3's (and ksh93's and mksh's) `${ cmd; }` and `${| cmd; }`, which run `cmd` in the
/// current shell (`${|…}` then expands `$REPLY`): where each starts in `text` and the
/// commands inside, as a `$(…)` would give them. The parser reads them as parameter
/// expansions, and its words lose the blank that tells them apart (bash 5.2 refuses them
/// as a bad substitution, so the line does not run there): they are found in the text
/// itself, quotes or not (`'${ x; }'` is judged too: reading quotes here could fall out of
/// step with bash's, `$'\''` holds a quote, and miss one).
pub(crate) fn function_substitutions(text: &str) -> Vec<(usize, String)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            // `\${` is text.
            b'\\' => at += 1,
            b'$' if bytes.get(at + 1) == Some(&b'{') => {
                let body = at + 2;
                if bytes
                    .get(body)
                    .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'|'))
                {
                    let mut depth = 1;
                    let mut end = body;
                    while end < bytes.len() && depth > 0 {
                        match bytes[end] {
                            b'{' => depth += 1,
                            b'}' => depth -= 1,
                            _ => {}
                        }
                        end += 1;
                    }
                    let inner = text[body..end - usize::from(depth == 0)].trim_start_matches('|');
                    found.push((at, inner.to_owned()));
                    // The ones inside are found when the body is walked: finding them here
                    // too would walk each nested one again from every level around it.
                    at = end;
                    continue;
                }
            }
            _ => {}
        }
        at += 1;
    }
    found
}

/// Whether text right after a parameter is a zsh modifier (`:h`, `:s/…/`, `:&`) or
/// subscript (`[2,3]`).
pub(super) fn zsh_modified(text: &str) -> bool {
    text.starts_with('[')
        || text
            .strip_prefix(':')
            .and_then(|rest| rest.chars().next())
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '&')
}

/// Scans a here-document body (expanded like a double-quoted string, without quote
/// removal) for command substitutions and variables.
pub(crate) fn scan_heredoc(
    body: &str,
    found: &mut Found,
) -> Result<Option<Expansion>, ShellParseError> {
    let pieces = brush_parser::word::parse_heredoc(body, &PARSER_OPTIONS)
        .map_err(|err| ShellParseError::new(format!("cannot parse here-document: {err}"), None))?;
    let mut splitter = Splitter {
        parts: Vec::new(),
        found,
        depth: 0,
    };
    for piece in &pieces {
        splitter.piece(piece, Quoting::Quoted)?;
    }
    Ok(splitter.parts.iter().find_map(|part| match part {
        Part::Expansion {
            expansion,
            strength: Strength::Opaque,
            ..
        } => Some(*expansion),
        _ => None,
    }))
}

/// How much an arithmetic expression hides: bash evaluates the value of every name in it
/// (and of every `$x`) as arithmetic again, which evaluates array subscripts, so an
/// expression with a name can run a command hidden in a variable. One of numbers (in any
/// base: `0x1f`, `16#ff`), operators and expansions that are always numbers (`$#`, `$?`,
/// `$$`, `$!`, a length `${#name}`) evaluates nothing unseen.
fn arithmetic_strength(expr: &UnexpandedArithmeticExpr) -> Strength {
    if numbers_only(&expr.value) {
        Strength::Dynamic
    } else {
        Strength::Opaque
    }
}

/// Whether the arithmetic `text` holds numbers and operators only (see
/// [`arithmetic_strength`]).
fn numbers_only(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(&b) = bytes.get(at) {
        at += match b {
            // A number: its base's digits may be letters, `@` and `_` (`64#_@`).
            b'0'..=b'9' => bytes[at..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'#' | b'@' | b'_'))
                .count(),
            b'$' => match bytes.get(at + 1) {
                Some(b'#' | b'?' | b'$' | b'!') => 2,
                Some(b'{') if bytes.get(at + 2) == Some(&b'#') => {
                    let rest = &text[at + 3..];
                    let Some(end) = rest.find('}') else {
                        return false;
                    };
                    if !super::is_variable_name(&rest[..end]) {
                        return false;
                    }
                    end + 4
                }
                _ => return false,
            },
            _ if b.is_ascii_whitespace() || b"+-*/%()<>=!&|^~?:,".contains(&b) => 1,
            _ => return false,
        };
    }
    true
}

/// Scans free text that the shell expands (an arithmetic expression) for substitutions.
pub(crate) fn scan_text(text: &str, found: &mut Found) -> Result<(), ShellParseError> {
    if text.trim().is_empty() {
        return Ok(());
    }
    split_word(text, found).map(|_| ())
}

struct Splitter<'n> {
    parts: Vec<Part>,
    found: &'n mut Found,
    depth: usize,
}

impl Splitter<'_> {
    fn text(&mut self, text: &str, quoting: Quoting, start: usize) {
        self.parts.push(Part::Text {
            text: text.to_owned(),
            quoting,
            start,
        });
    }

    /// Text, in which bash leaves zsh's own parameter forms as they are. zsh reads `$~NAME`,
    /// `$^NAME`, `$=NAME` (and `${~NAME}`…) as `$NAME`, and evaluates the value under the
    /// flags of `${(e)…}` (`e` runs the `$(…)` in it): such text is the expansion zsh makes.
    fn zsh_text(&mut self, text: &str, quoting: Quoting, start: usize) {
        if !text.contains('$') {
            return self.text(text, quoting, start);
        }
        let push_text = |splitter: &mut Self, text: &str, at: usize| {
            if !text.is_empty() {
                splitter.text(text, quoting, at);
            }
        };
        let mut rest = text;
        let mut at = start;
        while let Some(found) = rest.find('$') {
            let after = &rest[found + 1..];
            let braced = after.strip_prefix('{');
            let form = braced.unwrap_or(after);
            if braced.is_some() && form.starts_with('(') {
                push_text(self, &rest[..found], at);
                self.expansion(Expansion::ZshFlags, Strength::Opaque, at + found);
                push_text(self, &rest[found..], at + found);
                return;
            }
            let name = form
                .strip_prefix(['~', '^', '='])
                .map(|name| &name[..name_length(name)])
                .filter(|name| !name.is_empty());
            let closed = |length: usize| match braced {
                Some(inner) => inner[1 + length..].starts_with('}').then_some(length + 3),
                None => Some(length + 1),
            };
            let Some((name, length)) = name.and_then(|name| Some((name, closed(name.len())?)))
            else {
                push_text(self, &rest[..=found], at);
                at += found + 1;
                rest = after;
                continue;
            };
            push_text(self, &rest[..found], at);
            self.expansion(Expansion::Parameter, Strength::Dynamic, at + found);
            self.found.variables.push(name.to_owned());
            let end = found + 1 + length;
            at += end;
            rest = &rest[end..];
        }
        push_text(self, rest, at);
    }

    fn expansion(&mut self, expansion: Expansion, strength: Strength, start: usize) {
        self.parts.push(Part::Expansion {
            expansion,
            strength,
            start,
        });
    }

    /// Splits pieces, reading adjacent text pieces as one (the parser splits `${(e)x}` into
    /// `$` and `{(e)x}`).
    fn pieces(
        &mut self,
        pieces: &[WordPieceWithSource],
        quoting: Quoting,
    ) -> Result<(), ShellParseError> {
        let mut rest = pieces;
        while let Some(piece) = rest.first() {
            let texts = rest
                .iter()
                .take_while(|p| matches!(p.piece, WordPiece::Text(_)))
                .count();
            if texts == 0 {
                self.piece(piece, quoting)?;
                rest = &rest[1..];
                // zsh applies a modifier (`$PWD:h`, `$f:s/a/b/`) or a subscript (`$f[2,3]`)
                // written right after a parameter, which bash leaves as text: the value is
                // then not what bash would make of it.
                if matches!(piece.piece, WordPiece::ParameterExpansion(_))
                    && let Some(WordPiece::Text(next)) = rest.first().map(|p| &p.piece)
                    && zsh_modified(next)
                {
                    self.expansion(Expansion::ZshFlags, Strength::Dynamic, piece.end_index);
                }
                continue;
            }
            let text: String = rest[..texts]
                .iter()
                .filter_map(|p| match &p.piece {
                    WordPiece::Text(text) => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            self.zsh_text(&text, quoting, piece.start_index);
            rest = &rest[texts..];
        }
        Ok(())
    }

    fn piece(
        &mut self,
        piece: &WordPieceWithSource,
        quoting: Quoting,
    ) -> Result<(), ShellParseError> {
        let start = piece.start_index;
        match &piece.piece {
            WordPiece::Text(text) => self.zsh_text(text, quoting, start),
            WordPiece::SingleQuotedText(text) => self.text(text, Quoting::Quoted, start),
            WordPiece::AnsiCQuotedText(text) => match decode_ansi_c(text) {
                Some(decoded) => self.text(&decoded, Quoting::Quoted, start),
                None => self.expansion(Expansion::AnsiC, Strength::Dynamic, start),
            },
            WordPiece::DoubleQuotedSequence(inner) => {
                // An empty "" still produces an (empty) argument.
                self.text("", Quoting::Quoted, start);
                self.pieces(inner, Quoting::Quoted)?;
            }
            WordPiece::GettextDoubleQuotedSequence(inner) => {
                self.expansion(Expansion::Translation, Strength::Dynamic, start);
                for inner_piece in inner {
                    self.piece(inner_piece, Quoting::Quoted)?;
                }
            }
            WordPiece::TildeExpansion(_) => {
                self.expansion(Expansion::Tilde, Strength::Dynamic, start)
            }
            WordPiece::ParameterExpansion(expr) => {
                // An opaque expansion records its specific reason (arithmetic, indirection…).
                match self.parameter_expr(expr)? {
                    (strength, None) => self.expansion(Expansion::Parameter, strength, start),
                    (strength, Some(reason)) => self.expansion(reason, strength, start),
                }
            }
            WordPiece::CommandSubstitution(source) => {
                self.found.substitutions.push(source.clone());
                self.expansion(Expansion::CommandSubstitution, Strength::Dynamic, start);
            }
            WordPiece::BackquotedCommandSubstitution(source) => {
                let source = unescape_backquoted(source, quoting == Quoting::Quoted);
                self.found.substitutions.push(source);
                self.expansion(Expansion::CommandSubstitution, Strength::Dynamic, start);
            }
            WordPiece::EscapeSequence(sequence) => {
                // `\x` stands for `x`; a backslash-newline is a line continuation.
                let escaped: String = sequence.chars().skip(1).collect();
                let value = if escaped == "\n" {
                    ""
                } else {
                    escaped.as_str()
                };
                self.text(value, Quoting::Quoted, start);
            }
            WordPiece::ArithmeticExpression(expr) => {
                self.arithmetic(expr)?;
                self.expansion(Expansion::Arithmetic, arithmetic_strength(expr), start);
            }
        }
        Ok(())
    }

    /// Scans an arithmetic expression for substitutions.
    fn arithmetic(&mut self, expr: &UnexpandedArithmeticExpr) -> Result<(), ShellParseError> {
        self.operand(&expr.value).map(|_| ())
    }

    /// Scans an operand word (default value, pattern, index…) for substitutions; returns
    /// whether it holds opaque expansions.
    fn operand(&mut self, operand: &str) -> Result<Strength, ShellParseError> {
        if operand.is_empty() {
            return Ok(Strength::Dynamic);
        }
        let parts = split_word_at_depth(operand, self.found, self.depth + 1)?;
        Ok(parts
            .iter()
            .filter_map(|part| match part {
                Part::Expansion { strength, .. } => Some(*strength),
                Part::Text { .. } => None,
            })
            .max()
            .unwrap_or(Strength::Dynamic))
    }

    fn optional_operand(&mut self, operand: Option<&String>) -> Result<Strength, ShellParseError> {
        match operand {
            Some(operand) => self.operand(operand),
            None => Ok(Strength::Dynamic),
        }
    }

    /// Classifies a parameter expression; the second value names the reason when opaque.
    fn parameter_expr(
        &mut self,
        expr: &ParameterExpr,
    ) -> Result<(Strength, Option<Expansion>), ShellParseError> {
        let (parameter, indirect, operands): (&Parameter, bool, [Option<&String>; 2]) = match expr {
            ParameterExpr::Parameter {
                parameter,
                indirect,
            }
            | ParameterExpr::ParameterLength {
                parameter,
                indirect,
            } => (parameter, *indirect, [None, None]),
            ParameterExpr::UseDefaultValues {
                parameter,
                indirect,
                default_value: value,
                ..
            }
            | ParameterExpr::AssignDefaultValues {
                parameter,
                indirect,
                default_value: value,
                ..
            }
            | ParameterExpr::IndicateErrorIfNullOrUnset {
                parameter,
                indirect,
                error_message: value,
                ..
            }
            | ParameterExpr::UseAlternativeValue {
                parameter,
                indirect,
                alternative_value: value,
                ..
            }
            | ParameterExpr::RemoveSmallestSuffixPattern {
                parameter,
                indirect,
                pattern: value,
            }
            | ParameterExpr::RemoveLargestSuffixPattern {
                parameter,
                indirect,
                pattern: value,
            }
            | ParameterExpr::RemoveSmallestPrefixPattern {
                parameter,
                indirect,
                pattern: value,
            }
            | ParameterExpr::RemoveLargestPrefixPattern {
                parameter,
                indirect,
                pattern: value,
            }
            | ParameterExpr::UppercaseFirstChar {
                parameter,
                indirect,
                pattern: value,
            }
            | ParameterExpr::UppercasePattern {
                parameter,
                indirect,
                pattern: value,
            }
            | ParameterExpr::LowercaseFirstChar {
                parameter,
                indirect,
                pattern: value,
            }
            | ParameterExpr::LowercasePattern {
                parameter,
                indirect,
                pattern: value,
            } => (parameter, *indirect, [value.as_ref(), None]),
            ParameterExpr::ReplaceSubstring {
                parameter,
                indirect,
                pattern,
                replacement,
                ..
            } => (parameter, *indirect, [Some(pattern), replacement.as_ref()]),
            ParameterExpr::Substring {
                parameter,
                indirect,
                offset,
                length,
            } => {
                let named = self.parameter(parameter)?;
                self.arithmetic(offset)?;
                if let Some(length) = length {
                    self.arithmetic(length)?;
                }
                // `${s:1:2}` evaluates numbers only; `${s:y}` evaluates `y`'s value.
                let strength = std::iter::once(offset)
                    .chain(length)
                    .map(arithmetic_strength)
                    .max()
                    .unwrap_or(Strength::Dynamic);
                return Ok(match named {
                    _ if *indirect => (Strength::Opaque, Some(Expansion::Indirection)),
                    Some(expansion) => (Strength::Opaque, Some(expansion)),
                    None => (strength, Some(Expansion::Arithmetic)),
                });
            }
            ParameterExpr::Transform {
                parameter,
                indirect,
                op,
            } => {
                let prompt = match op {
                    ParameterTransformOp::PromptExpand => true,
                    ParameterTransformOp::CapitalizeInitial
                    | ParameterTransformOp::ExpandEscapeSequences
                    | ParameterTransformOp::PossiblyQuoteWithArraysExpanded { .. }
                    | ParameterTransformOp::Quoted
                    | ParameterTransformOp::ToAssignmentLogic
                    | ParameterTransformOp::ToAttributeFlags
                    | ParameterTransformOp::ToLowerCase
                    | ParameterTransformOp::ToUpperCase => false,
                };
                if prompt {
                    self.parameter(parameter)?;
                    return Ok((Strength::Opaque, Some(Expansion::Prompt)));
                }
                (parameter, *indirect, [None, None])
            }
            ParameterExpr::VariableNames { .. } | ParameterExpr::MemberKeys { .. } => {
                return Ok((Strength::Dynamic, None));
            }
        };
        let mut result = (Strength::Dynamic, None);
        if let Some(expansion) = self.parameter(parameter)? {
            result = (Strength::Opaque, Some(expansion));
        }
        if indirect {
            result = (Strength::Opaque, Some(Expansion::Indirection));
        }
        for operand in operands {
            if self.optional_operand(operand)? == Strength::Opaque && result.1.is_none() {
                result = (Strength::Opaque, Some(Expansion::Arithmetic));
            }
        }
        Ok(result)
    }

    /// Returns the reason a parameter reference is opaque, if it is (a non-numeric array
    /// subscript is evaluated arithmetically).
    fn parameter(&mut self, parameter: &Parameter) -> Result<Option<Expansion>, ShellParseError> {
        match parameter {
            Parameter::Positional(_) | Parameter::Special(_) => Ok(None),
            Parameter::Named(name) | Parameter::NamedWithAllIndices { name, .. } => {
                self.found.variables.push(name.clone());
                Ok(None)
            }
            Parameter::NamedWithIndex { index, name } => {
                self.found.variables.push(name.clone());
                if !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()) {
                    Ok(None)
                } else {
                    self.operand(index)?;
                    Ok(Some(Expansion::Arithmetic))
                }
            }
        }
    }
}

/// The script of a `` `…` `` substitution as bash runs it: a backslash before `$`, `` ` ``
/// or `\\` (and before `"` inside double quotes) is removed first (`` `cat \$HOME/x` ``
/// reads `$HOME/x`); other backslashes stay.
fn unescape_backquoted(source: &str, in_double_quotes: bool) -> String {
    let mut script = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('$' | '`' | '\\') => {}
                Some('"') if in_double_quotes => {}
                _ => script.push(c),
            }
            if let Some(next) = chars.next() {
                script.push(next);
            }
            continue;
        }
        script.push(c);
    }
    script
}

/// Positions of expansions that are visible only in unquoted text: pathname globs, tilde and
/// brace expansion. Each is the byte offset (in the raw word) of the first occurrence.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct UnquotedExpansions {
    pub glob: Option<usize>,
    pub tilde: Option<usize>,
    pub brace: Option<usize>,
}

/// Finds globs, tildes and brace expansions in the unquoted text of a word.
pub(crate) fn unquoted_expansions(parts: &[Part]) -> UnquotedExpansions {
    // The word's "shape": unquoted characters as written, everything else as a placeholder
    // that is not special, each with its byte offset in the raw word.
    let mut shape: Vec<(char, usize)> = Vec::new();
    for part in parts {
        match part {
            Part::Text {
                text,
                quoting: Quoting::Unquoted,
                start,
            } => shape.extend(text.char_indices().map(|(i, c)| (c, start + i))),
            Part::Text { start, .. } | Part::Expansion { start, .. } => shape.push(('\0', *start)),
        }
    }
    let mut found = UnquotedExpansions::default();
    for (i, &(c, offset)) in shape.iter().enumerate() {
        let previous = i.checked_sub(1).and_then(|p| shape.get(p)).map(|&(p, _)| p);
        match c {
            '*' | '?' | '(' => {
                found.glob.get_or_insert(offset);
            }
            // `[` starts a bracket expression only if a `]` follows (`[ -f x ]` is a command).
            '[' if shape[i + 1..].iter().any(|&(c, _)| c == ']') => {
                found.glob.get_or_insert(offset);
            }
            '~' if matches!(previous, None | Some('=' | ':')) => {
                found.tilde.get_or_insert(offset);
            }
            '{' if found.brace.is_none() && brace_expansion_at(&shape[i + 1..]) => {
                found.brace = Some(offset);
            }
            _ => {}
        }
    }
    found
}

/// Whether the text after an unquoted `{` makes it a brace expansion: an unquoted `,` or
/// `..` before the matching `}`. Over-approximates (treats some literal braces as
/// expansions), which only ever makes a word dynamic.
fn brace_expansion_at(rest: &[(char, usize)]) -> bool {
    let mut depth = 0usize;
    let mut previous = '\0';
    for &(c, _) in rest {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return false,
            '}' => depth -= 1,
            ',' => return true,
            '.' if previous == '.' => return true,
            _ => {}
        }
        previous = c;
    }
    false
}

/// Builds a [`Word`] from its parts.
pub(crate) fn word_from_parts(raw: &str, parts: &[Part]) -> Word {
    let mut value = String::new();
    let mut strongest: Option<(Strength, Expansion)> = None;
    for part in parts {
        match part {
            Part::Text { text, .. } => value.push_str(text),
            Part::Expansion {
                expansion,
                strength,
                ..
            } => {
                if strongest.is_none_or(|(s, _)| *strength > s) {
                    strongest = Some((*strength, *expansion));
                }
            }
        }
    }
    if strongest.is_none() {
        let unquoted = unquoted_expansions(parts);
        let first = [
            (unquoted.glob, Expansion::Glob),
            (unquoted.tilde, Expansion::Tilde),
            (unquoted.brace, Expansion::Brace),
        ]
        .into_iter()
        .filter_map(|(offset, expansion)| offset.map(|o| (o, expansion)))
        .min_by_key(|(o, _)| *o);
        if let Some((_, expansion)) = first {
            strongest = Some((Strength::Dynamic, expansion));
        }
    }
    let kind = match strongest {
        None => WordKind::Literal(value),
        Some((Strength::Dynamic, expansion)) => WordKind::Dynamic(expansion),
        Some((Strength::Opaque, expansion)) => WordKind::Opaque(expansion),
    };
    Word {
        raw: raw.to_owned(),
        kind,
    }
}

/// Decodes the body of an ANSI-C string (`$'…'`) as bash does. Returns `None` for an escape
/// it does not decode exactly (the word is then treated as dynamic, never guessed).
pub(crate) fn decode_ansi_c(body: &str) -> Option<String> {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let escape = chars.next()?;
        let decoded = match escape {
            'a' => '\u{07}',
            'b' => '\u{08}',
            'e' | 'E' => '\u{1b}',
            'f' => '\u{0c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\u{0b}',
            '\\' | '\'' | '"' | '?' => escape,
            '0'..='7' => {
                let mut value = escape.to_digit(8)?;
                for _ in 0..2 {
                    match chars.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            value = value * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                // Bash emits the low byte; only ASCII maps to a character unambiguously.
                let byte = u8::try_from(value & 0xff).ok()?;
                if !byte.is_ascii() {
                    return None;
                }
                char::from(byte)
            }
            'x' => {
                let value = hex_digits(&mut chars, 2)?;
                let byte = u8::try_from(value).ok()?;
                if !byte.is_ascii() {
                    return None;
                }
                char::from(byte)
            }
            'u' => char::from_u32(hex_digits(&mut chars, 4)?)?,
            'U' => char::from_u32(hex_digits(&mut chars, 8)?)?,
            _ => return None,
        };
        if decoded == '\0' {
            // Bash ends the quoted string at a NUL byte (`$'.env\0junk'` is `.env`, and
            // `x$'\0'y` is `xy`).
            return Some(out);
        }
        out.push(decoded);
    }
    Some(out)
}

fn hex_digits(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, max: usize) -> Option<u32> {
    let mut value = 0u32;
    let mut count = 0;
    while count < max {
        match chars.peek().and_then(|d| d.to_digit(16)) {
            Some(d) => {
                value = value.checked_mul(16)?.checked_add(d)?;
                chars.next();
                count += 1;
            }
            None => break,
        }
    }
    (count > 0).then_some(value)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn word(raw: &str) -> (WordKind, Vec<String>) {
        let mut found = Found::default();
        let parts = split_word(raw, &mut found).unwrap();
        (word_from_parts(raw, &parts).kind, found.substitutions)
    }

    fn lit(s: &str) -> WordKind {
        WordKind::Literal(s.to_owned())
    }

    #[test]
    fn classifies_words() {
        let table: &[(&str, WordKind)] = &[
            ("git", lit("git")),
            ("'my dir'", lit("my dir")),
            ("\"my dir\"", lit("my dir")),
            ("a\\ b", lit("a b")),
            ("g\"i\"t", lit("git")),
            ("\\rm", lit("rm")),
            ("''", lit("")),
            ("HEAD~1", lit("HEAD~1")),
            ("$'\\x72m'", lit("rm")),
            ("$'a\\nb'", lit("a\nb")),
            ("'*'", lit("*")),
            ("\\*", lit("*")),
            ("[", lit("[")),
            ("a,b", lit("a,b")),
            ("{}", lit("{}")),
            ("\"$x\"", WordKind::Dynamic(Expansion::Parameter)),
            ("$x", WordKind::Dynamic(Expansion::Parameter)),
            ("${x:-a}", WordKind::Dynamic(Expansion::Parameter)),
            ("*.rs", WordKind::Dynamic(Expansion::Glob)),
            ("a[12]", WordKind::Dynamic(Expansion::Glob)),
            ("~", WordKind::Dynamic(Expansion::Tilde)),
            ("~/x", WordKind::Dynamic(Expansion::Tilde)),
            ("a=~/x", WordKind::Dynamic(Expansion::Tilde)),
            ("'~'", lit("~")),
            ("{rm,-rf,/}", WordKind::Dynamic(Expansion::Brace)),
            ("{1..3}", WordKind::Dynamic(Expansion::Brace)),
            ("$(id)", WordKind::Dynamic(Expansion::CommandSubstitution)),
            ("$\"hello\"", WordKind::Dynamic(Expansion::Translation)),
            ("$((1+2))", WordKind::Dynamic(Expansion::Arithmetic)),
            ("$((x+2))", WordKind::Opaque(Expansion::Arithmetic)),
            ("$(( $x ))", WordKind::Opaque(Expansion::Arithmetic)),
            // Numbers in any base, and expansions that are always numbers.
            (
                "$(( 0x1f + 16#ff ))",
                WordKind::Dynamic(Expansion::Arithmetic),
            ),
            (
                "$(( $# + ${#s} + $? ))",
                WordKind::Dynamic(Expansion::Arithmetic),
            ),
            ("$(( 10#$x ))", WordKind::Opaque(Expansion::Arithmetic)),
            ("$(( ${#a[i]} ))", WordKind::Opaque(Expansion::Arithmetic)),
            ("$(( ${#x} + y ))", WordKind::Opaque(Expansion::Arithmetic)),
            ("${s:1:2}", WordKind::Dynamic(Expansion::Arithmetic)),
            ("${s:i}", WordKind::Opaque(Expansion::Arithmetic)),
            ("${s:1:n}", WordKind::Opaque(Expansion::Arithmetic)),
            ("${a[i]}", WordKind::Opaque(Expansion::Arithmetic)),
            ("${a[0]}", WordKind::Dynamic(Expansion::Parameter)),
            ("${!x}", WordKind::Opaque(Expansion::Indirection)),
            ("${x@P}", WordKind::Opaque(Expansion::Prompt)),
            ("${x:i:2}", WordKind::Opaque(Expansion::Arithmetic)),
            ("$'\\q'", WordKind::Dynamic(Expansion::AnsiC)),
            // zsh's own forms, which bash leaves as text.
            ("${(e)x}", WordKind::Opaque(Expansion::ZshFlags)),
            ("\"a${(e):-x}\"", WordKind::Opaque(Expansion::ZshFlags)),
            ("$~HOME/x", WordKind::Dynamic(Expansion::Parameter)),
            ("\"${^HOME}\"", WordKind::Dynamic(Expansion::Parameter)),
            ("$=x", WordKind::Dynamic(Expansion::Parameter)),
            ("a$~", lit("a$~")),
            ("${~}", lit("${~}")),
            ("$PWD:h/x", WordKind::Dynamic(Expansion::Parameter)),
        ];
        for (raw, expected) in table {
            assert_eq!(&word(raw).0, expected, "word {raw}");
        }
    }

    #[test]
    fn finds_nested_substitutions() {
        let table: &[(&str, &[&str])] = &[
            ("$(id)", &["id"]),
            ("`id`", &["id"]),
            ("\"a `id` b\"", &["id"]),
            ("\"$(rm -rf /)\"", &["rm -rf /"]),
            ("${x:-$(id)}", &["id"]),
            ("${x%$(id)}", &["id"]),
            ("${x/$(a)/$(b)}", &["a", "b"]),
            ("$(( $(id) + 1 ))", &["id"]),
            ("${a[$(id)]}", &["id"]),
            ("x=$(id)", &["id"]),
            ("'$(id)'", &[]),
        ];
        for (raw, expected) in table {
            assert_eq!(word(raw).1, *expected, "word {raw}");
        }
    }

    #[test]
    fn plain_words_need_no_grammar() {
        for raw in [
            "git",
            "--stat",
            "HEAD~1",
            "a=b",
            "x.rs",
            "src/main.rs",
            "-n1",
            "a,b",
            "100%",
        ] {
            let pieces = brush_parser::word::parse(raw, &PARSER_OPTIONS).unwrap();
            let via_grammar: String = pieces
                .iter()
                .map(|p| match &p.piece {
                    WordPiece::Text(t) => t.clone(),
                    other => panic!("{raw}: unexpected piece {other:?}"),
                })
                .collect();
            assert_eq!(via_grammar, raw);
            if is_plain(raw) {
                assert_eq!(word(raw).0, WordKind::Literal(raw.to_owned()), "word {raw}");
            }
            let mut found = Found::default();
            split_word(raw, &mut found).unwrap();
            assert!(found.substitutions.is_empty());
        }
        for raw in [
            "", "a b", "~x", "*", "a?", "[a]", "{a,b}", "$x", "'a'", "\\a", "`a`", "@(a)", "é",
        ] {
            assert!(!is_plain(raw), "word {raw:?}");
        }
    }

    #[test]
    fn backquoted_scripts_lose_the_backslashes_bash_removes() {
        let substitutions = |raw: &str| {
            let mut found = Found::default();
            split_word(raw, &mut found).unwrap();
            found.substitutions
        };
        assert_eq!(substitutions(r"`cat \$HOME/x`"), [r"cat $HOME/x"]);
        assert_eq!(substitutions(r"`cat \\.env`"), [r"cat \.env"]);
        assert_eq!(substitutions(r#""`cat \".env\"`""#), [r#"cat ".env""#]);
        assert_eq!(substitutions(r#"`cat \"x\"`"#), [r#"cat \"x\""#]);
        assert_eq!(substitutions(r"`echo \n`"), [r"echo \n"]);
        assert_eq!(substitutions(r"$(cat \$HOME)"), [r"cat \$HOME"]);
    }

    #[test]
    fn decodes_ansi_c() {
        let table: &[(&str, Option<&str>)] = &[
            ("abc", Some("abc")),
            ("\\x41\\102\\u00e9", Some("ABé")),
            ("\\t\\'", Some("\t'")),
            ("\\x", None),
            ("\\0", Some("")),
            (".env\\x00junk", Some(".env")),
            ("--force\\0", Some("--force")),
            ("\\xff", None),
            ("\\cA", None),
            ("\\", None),
        ];
        for (body, expected) in table {
            assert_eq!(decode_ansi_c(body).as_deref(), *expected, "body {body}");
        }
    }
}
