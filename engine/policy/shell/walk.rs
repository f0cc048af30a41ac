//! Parsing a command line and walking its syntax tree into a flat [`Script`].
//!
//! [`parse_program`] runs the parser behind guards (nesting limits, a check for the
//! file-descriptor numbers the parser cannot hold, and a panic barrier), so no input can
//! crash or overflow the stack. The walker visits every node that can run a command and
//! recurses into the sources of substitutions and literal script arguments, up to
//! [`MAX_SCRIPT_DEPTH`](super::MAX_SCRIPT_DEPTH) levels.

use std::panic::{AssertUnwindSafe, catch_unwind};

use brush_parser::ast::{
    self, AndOr, Command, CommandPrefixOrSuffixItem, CompoundCommand, ExtendedTestExpr,
    IoFileRedirectKind, IoFileRedirectTarget, IoRedirect,
};
use brush_parser::{ParseError, Token, TokenizerError};

use super::loops::{self, Loops};
use super::wildcard::expand_braces;
use super::word::{
    Found, PARSER_OPTIONS, function_substitutions, is_plain, scan_heredoc, scan_text, split_word,
    word_from_parts,
};
use super::wrappers::{self, Analysis, Transparency};
use super::{
    Construct, ConstructKind, EnvAssignment, Expansion, InputFrom, MAX_COMMANDS, MAX_LINE_BYTES,
    MAX_SCRIPT_DEPTH, MAX_SYNTAX_DEPTH, Origin, RedirectEffect, Redirection, Role, Script,
    ShellParseError, SimpleCommand, Unresolved, UnresolvedReason, Word, WordKind, is_variable_name,
    name_length,
};

/// Parses `line` and returns every simple command it would run.
///
/// # Errors
/// A [`ShellParseError`] when the line (or a script nested in it) cannot be parsed.
///
/// ```text
/// use toolgate::policy::shell::parse_script;
///
/// let script = parse_script("git status && echo \"$(rm -rf /)\"").unwrap();
/// let words: Vec<Vec<&str>> = script
///     .commands
///     .iter()
///     .map(|c| c.words.iter().filter_map(|w| w.literal()).collect())
///     .collect();
/// // The substitution runs before the command that uses its output.
/// assert_eq!(words, [vec!["git", "status"], vec!["rm", "-rf", "/"], vec!["echo"]]);
/// ```
pub fn parse_script(line: &str) -> Result<Script, ShellParseError> {
    if line.len() > MAX_LINE_BYTES {
        return Err(ShellParseError::new(
            format!(
                "the command is {} bytes long, more than the {MAX_LINE_BYTES} judged (write a long script to a file and review it)",
                line.len()
            ),
            None,
        ));
    }
    let mut script = Script::default();
    let mut loops = Loops::default();
    walk_source(line, Origin::Line, 0, &mut script, &mut loops)?;
    if !loops.used.is_empty() && !loops::bindings_hold(line, &script, &loops.used) {
        // Something may set a loop's variable: its values are not known after all.
        script = Script::default();
        loops = Loops::default();
        loops.disabled = true;
        walk_source(line, Origin::Line, 0, &mut script, &mut loops)?;
    }
    export_to_later_commands(&mut script);
    Ok(script)
}

/// Gives the commands after an `export NAME=VALUE` (or `declare -x`, `typeset -x`) the
/// variables it exports: `export GCONV_PATH=.; git log` runs `git log` as
/// `GCONV_PATH=. git log` does. `export NAME` exports a value set earlier: unknown here.
fn export_to_later_commands(script: &mut Script) {
    let mut exported: Vec<EnvAssignment> = Vec::new();
    for command in &mut script.commands {
        if !exported.is_empty() {
            let mut assignments = exported.clone();
            assignments.append(&mut command.assignments);
            command.assignments = assignments;
        }
        exported.extend(exports(command));
    }
}

/// The variables a command exports to the commands after it.
fn exports(command: &SimpleCommand) -> Vec<EnvAssignment> {
    let Some((program, arguments)) = command.words.split_first() else {
        return Vec::new();
    };
    let exporting = match program.literal() {
        Some("export") => true,
        Some("declare" | "typeset" | "local" | "readonly") => arguments
            .iter()
            .map_while(|w| w.literal().filter(|o| o.starts_with('-')))
            .any(|option| option.contains('x')),
        _ => false,
    };
    // `export -n` removes the export, `-f` exports functions, `-p` prints.
    let other_meaning = arguments
        .iter()
        .filter_map(Word::literal)
        .any(|w| w.starts_with('-') && w.contains(['n', 'f', 'p']) && !w.contains('x'));
    if !exporting || other_meaning {
        return Vec::new();
    }
    arguments
        .iter()
        .filter(|w| !w.literal().is_some_and(|o| o.starts_with('-')))
        .map(|word| match word.raw.split_once('=') {
            Some((name, value)) => EnvAssignment {
                name: name.trim_end_matches('+').to_owned(),
                value: match word.literal().and_then(|l| l.split_once('=')) {
                    Some((_, value)) => Word::literal_from(value, value),
                    None => Word::dynamic(value, Expansion::Parameter),
                },
            },
            None => EnvAssignment {
                name: word.raw.clone(),
                value: Word::dynamic(&format!("${}", word.raw), Expansion::Parameter),
            },
        })
        .collect()
}

/// Parses `source` and adds what it runs to `script`.
fn walk_source(
    source: &str,
    origin: Origin,
    depth: usize,
    script: &mut Script,
    loops: &mut Loops,
) -> Result<(), ShellParseError> {
    if depth > MAX_SCRIPT_DEPTH {
        return Err(ShellParseError::new(
            format!("scripts nested more than {MAX_SCRIPT_DEPTH} levels deep"),
            None,
        ));
    }
    let program = parse_program(source).map_err(|err| {
        if depth == 0 {
            err
        } else {
            // Offsets inside a nested script do not point into the line: name the context.
            ShellParseError::new(
                format!("in nested script `{source}`: {}", err.message),
                None,
            )
        }
    })?;
    // Another shell, or code run later, does not see the values of the loops around it.
    let hidden = matches!(origin, Origin::ScriptArgument { .. }).then(|| loops.hide());
    let mut walker = Walker {
        stdin: None,
        script,
        loops,
        depth,
        origin,
    };
    let walked = program
        .complete_commands
        .iter()
        .try_for_each(|list| walker.list(list, &[]))
        .and_then(|()| {
            // bash 5.3's `${ cmd; }`, which the parser reads as a parameter expansion.
            function_substitutions(source)
                .into_iter()
                .try_for_each(|(_, body)| walker.nested(&body, Origin::CommandSubstitution))
        });
    if let Some(bound) = hidden {
        walker.loops.restore(bound);
    }
    walked
}

/// Parses a program behind the guards described in the module docs.
pub(crate) fn parse_program(text: &str) -> Result<ast::Program, ShellParseError> {
    let tokens = tokenize(text)?;
    parse_tokens(text, &tokens)
}

/// Tokenizes `text` behind the guards (bracket depth, panic barrier).
pub(crate) fn tokenize(text: &str) -> Result<Vec<Token>, ShellParseError> {
    check_bracket_depth(text)?;
    guarded(text, || {
        brush_parser::uncached_tokenize_str(text, &PARSER_OPTIONS.tokenizer_options())
    })?
    .map_err(|err| tokenizer_error(text, &err))
}

/// Parses tokens of `text` behind the guards (keyword depth, descriptor numbers, panic
/// barrier).
pub(crate) fn parse_tokens(text: &str, tokens: &[Token]) -> Result<ast::Program, ShellParseError> {
    check_tokens(text, tokens)?;
    guarded(text, || brush_parser::parse_tokens(tokens, &PARSER_OPTIONS))?.map_err(
        |err| match err {
            ParseError::ParsingNear(position) => {
                let offset = byte_offset(text, position.index);
                let near: String = text[offset..].chars().take(12).collect();
                ShellParseError::new(format!("syntax error near `{near}`"), Some(offset))
            }
            ParseError::ParsingAtEndOfInput => {
                ShellParseError::new("unexpected end of input", Some(text.len()))
            }
            ParseError::Tokenizing { inner, position } => ShellParseError::new(
                inner.to_string(),
                position.map(|p| byte_offset(text, p.index)),
            ),
        },
    )
}

/// Byte offset of the character at `char_index` (the parser counts characters).
pub(crate) fn byte_offset(text: &str, char_index: usize) -> usize {
    text.char_indices()
        .nth(char_index)
        .map_or(text.len(), |(b, _)| b)
}

/// Converts a tokenizer error, replacing the tokenizer's line,column with a byte offset.
fn tokenizer_error(text: &str, err: &TokenizerError) -> ShellParseError {
    let at = |what: &str, position: &brush_parser::SourcePosition| {
        ShellParseError::new(
            format!("unterminated {what}"),
            Some(byte_offset(text, position.index)),
        )
    };
    match err {
        TokenizerError::UnterminatedSingleQuote(position) => at("single quote", position),
        TokenizerError::UnterminatedAnsiCQuote(position) => at("ANSI-C quote", position),
        TokenizerError::UnterminatedDoubleQuote(position) => at("double quote", position),
        TokenizerError::UnterminatedBackquote(position) => at("backquote", position),
        TokenizerError::UnterminatedExtendedGlob(position) => at("extended glob", position),
        TokenizerError::UnterminatedHereDocuments(tags, _) => ShellParseError::new(
            format!("unterminated here-document `{tags}`"),
            Some(text.len()),
        ),
        other => ShellParseError::new(other.to_string(), Some(text.len())),
    }
}

/// Runs a parser call; a panic inside the parser becomes an error instead of unwinding.
fn guarded<T>(text: &str, f: impl FnOnce() -> T) -> Result<T, ShellParseError> {
    catch_unwind(AssertUnwindSafe(f))
        .map_err(|_| ShellParseError::new(format!("the shell parser failed on `{text}`"), None))
}

/// Refuses text whose brackets nest deeper than the parser can recurse safely. Counts every
/// bracket, quoted or not: over-counting only refuses absurd input.
fn check_bracket_depth(text: &str) -> Result<(), ShellParseError> {
    let mut depth = 0usize;
    for (offset, c) in text.char_indices() {
        match c {
            '(' | '{' | '[' => {
                depth += 1;
                if depth > MAX_SYNTAX_DEPTH {
                    return Err(ShellParseError::new(
                        format!("brackets nested more than {MAX_SYNTAX_DEPTH} levels deep"),
                        Some(offset),
                    ));
                }
            }
            ')' | '}' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Token-level guards: keyword nesting depth, and redirection numbers the parser would
/// overflow on (`99999999999>x`).
fn check_tokens(text: &str, tokens: &[Token]) -> Result<(), ShellParseError> {
    let mut depth = 0usize;
    for (i, token) in tokens.iter().enumerate() {
        let offset = || byte_offset(text, token.location().start.index);
        match token {
            Token::Word(word, location) => {
                match word.as_str() {
                    "if" | "case" | "for" | "while" | "until" | "select" | "function" | "[[" => {
                        depth += 1;
                        if depth > MAX_SYNTAX_DEPTH {
                            return Err(ShellParseError::new(
                                format!(
                                    "compound commands nested more than {MAX_SYNTAX_DEPTH} levels deep"
                                ),
                                Some(offset()),
                            ));
                        }
                    }
                    "fi" | "esac" | "done" | "]]" => depth = depth.saturating_sub(1),
                    _ => {}
                }
                let next_is_redirect = tokens.get(i + 1).is_some_and(|next| {
                    matches!(next, Token::Operator(op, _) if op.starts_with(['<', '>']))
                        && next.location().start.index == location.end.index
                });
                if next_is_redirect
                    && word.bytes().all(|b| b.is_ascii_digit())
                    && word.parse::<i32>().is_err()
                {
                    return Err(ShellParseError::new(
                        format!("file descriptor `{word}` is out of range"),
                        Some(offset()),
                    ));
                }
            }
            Token::Operator(..) => {}
        }
    }
    Ok(())
}

type Walked = Result<(), ShellParseError>;

struct Walker<'s> {
    script: &'s mut Script,
    loops: &'s mut Loops,
    depth: usize,
    origin: Origin,
    /// What a pipe feeds the command being walked: `None` when it is not piped into,
    /// `Some(None)` when the text cannot be known.
    stdin: Option<Option<String>>,
}

impl Walker<'_> {
    fn nested(&mut self, source: &str, origin: Origin) -> Walked {
        walk_source(source, origin, self.depth + 1, self.script, self.loops)
    }

    fn list(&mut self, list: &ast::CompoundList, inherited: &[Redirection]) -> Walked {
        for item in &list.0 {
            let walk = |walker: &mut Self| {
                let and_or = &item.0;
                walker.pipeline(&and_or.first, inherited)?;
                for next in &and_or.additional {
                    match next {
                        AndOr::And(pipeline) | AndOr::Or(pipeline) => {
                            walker.pipeline(pipeline, inherited)?
                        }
                    }
                }
                Ok(())
            };
            match item.1 {
                ast::SeparatorOperator::Async => self.overlapping(walk)?,
                ast::SeparatorOperator::Sequence => walk(self)?,
            }
        }
        Ok(())
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline, inherited: &[Redirection]) -> Walked {
        if pipeline.seq.len() > 1 {
            return self.overlapping(|walker| walker.pipeline_commands(pipeline, inherited));
        }
        self.pipeline_commands(pipeline, inherited)
    }

    fn pipeline_commands(&mut self, pipeline: &ast::Pipeline, inherited: &[Redirection]) -> Walked {
        let mut piped = None;
        for command in &pipeline.seq {
            let before = self.script.commands.len();
            self.stdin = piped.take();
            let walked = self.command(command, inherited);
            self.stdin = None;
            walked?;
            piped = Some(match command {
                Command::Simple(_) => self.script.commands[before..]
                    .iter()
                    .find(|c| c.origin == self.origin)
                    .and_then(printed_text),
                Command::Compound(..) | Command::Function(_) | Command::ExtendedTest(..) => None,
            });
        }
        Ok(())
    }

    /// Adds a compound command's own redirections to those it inherits.
    fn with_redirects(
        &mut self,
        inherited: &[Redirection],
        list: Option<&ast::RedirectList>,
    ) -> Result<Vec<Redirection>, ShellParseError> {
        let mut all = Vec::with_capacity(inherited.len());
        if let Some(list) = list {
            for redirect in &list.0 {
                all.push(self.redirect(redirect)?);
            }
        }
        all.extend(inherited.iter().cloned());
        Ok(all)
    }

    fn command(&mut self, command: &Command, inherited: &[Redirection]) -> Walked {
        match command {
            Command::Simple(simple) => self.simple(simple, inherited),
            Command::Compound(compound, redirects) => {
                let inherited = self.with_redirects(inherited, redirects.as_ref())?;
                self.compound(compound, &inherited)
            }
            Command::Function(definition) => {
                let body = &definition.body;
                let inherited = self.with_redirects(inherited, body.1.as_ref())?;
                self.compound(&body.0, &inherited)
            }
            Command::ExtendedTest(test, redirects) => {
                self.construct(ConstructKind::ExtendedTest, command.to_string());
                self.with_redirects(inherited, redirects.as_ref())?;
                self.test_expr(&test.expr)
            }
        }
    }

    fn construct(&mut self, kind: ConstructKind, text: String) {
        self.script.constructs.push(Construct { text, kind });
    }

    fn compound(&mut self, compound: &CompoundCommand, inherited: &[Redirection]) -> Walked {
        match compound {
            CompoundCommand::Arithmetic(arithmetic) => {
                self.construct(ConstructKind::Arithmetic, compound.to_string());
                self.text(&arithmetic.expr.value)
            }
            CompoundCommand::ArithmeticForClause(clause) => {
                self.construct(ConstructKind::ArithmeticFor, compound.to_string());
                for expr in [&clause.initializer, &clause.condition, &clause.updater]
                    .into_iter()
                    .flatten()
                {
                    self.text(&expr.value)?;
                }
                self.overlapping(|walker| walker.list(&clause.body.list, inherited))
            }
            CompoundCommand::BraceGroup(group) => self.list(&group.list, inherited),
            CompoundCommand::Subshell(subshell) => self.list(&subshell.list, inherited),
            CompoundCommand::ForClause(clause) => {
                self.sets(&clause.variable_name, "a `for` loop");
                for value in clause.values.iter().flatten() {
                    self.expanded(value)?;
                }
                self.overlapping(|walker| walker.for_body(clause, inherited))
            }
            CompoundCommand::CaseClause(clause) => {
                self.expanded(&clause.value)?;
                for item in &clause.cases {
                    for pattern in &item.patterns {
                        self.expanded(pattern)?;
                    }
                    if let Some(body) = &item.cmd {
                        self.list(body, inherited)?;
                    }
                }
                Ok(())
            }
            CompoundCommand::IfClause(clause) => {
                self.list(&clause.condition, inherited)?;
                self.list(&clause.then, inherited)?;
                for branch in clause.elses.iter().flatten() {
                    if let Some(condition) = &branch.condition {
                        self.list(condition, inherited)?;
                    }
                    self.list(&branch.body, inherited)?;
                }
                Ok(())
            }
            CompoundCommand::WhileClause(clause) | CompoundCommand::UntilClause(clause) => self
                .overlapping(|walker| {
                    walker.list(&clause.0, inherited)?;
                    walker.list(&clause.1.list, inherited)
                }),
            CompoundCommand::Coprocess(coprocess) => {
                if let Some(name) = &coprocess.name {
                    self.word(name)?;
                    // `coproc NAME` sets NAME (to the descriptors) and NAME_PID.
                    let name = name.value.clone();
                    self.sets(&format!("{name}_PID"), "a coprocess");
                    self.sets(&name, "a coprocess");
                }
                // A coprocess runs while the commands after it do.
                self.overlapping(|walker| walker.command(&coprocess.body, inherited))
            }
        }
    }

    /// Records that a construct (`setter`) sets the variable `name`.
    fn sets(&mut self, name: &str, setter: &'static str) {
        if !self.script.set_variables.iter().any(|(set, _)| set == name) {
            self.script.set_variables.push((name.to_owned(), setter));
        }
    }

    /// Walks a loop's body, a pipeline, a `&` list, a coprocess or a process substitution:
    /// what it runs may run again after, or at the same time as, what follows it.
    fn overlapping(&mut self, walk: impl FnOnce(&mut Self) -> Walked) -> Walked {
        self.loops.overlapping += 1;
        let walked = walk(self);
        self.loops.overlapping -= 1;
        walked
    }

    /// Walks a `for` loop's body once per value when the values are written out (see
    /// [`loops`]), else once with the variable unknown. Commands that come out the same in
    /// every walk are kept once.
    fn for_body(&mut self, clause: &ast::ForClauseCommand, inherited: &[Redirection]) -> Walked {
        // (Read as a word only: what its substitutions run is walked with the loop.)
        for value in clause.values.iter().flatten() {
            let mut found = super::word::Found::default();
            if let Ok(parts) = super::word::split_word(&value.value, &mut found) {
                let word = super::word::word_from_parts(&value.value, &parts);
                self.script.loop_lists.push(word);
            }
        }
        let written: Option<Vec<String>> = clause
            .values
            .as_ref()
            .map(|values| values.iter().map(|v| v.value.clone()).collect());
        let Some(values) = self.loops.values(&clause.variable_name, written.as_deref()) else {
            self.loops.enter(&clause.variable_name, None, 1);
            let walked = self.list(&clause.body.list, inherited);
            self.loops.leave();
            return walked;
        };
        let first_command = self.script.commands.len();
        let first_unresolved = self.script.unresolved.len();
        let first_construct = self.script.constructs.len();
        let walks = values.len();
        for value in values {
            self.loops.enter(&clause.variable_name, Some(value), walks);
            let walked = self.list(&clause.body.list, inherited);
            self.loops.leave();
            walked?;
        }
        keep_first(&mut self.script.commands, first_command);
        keep_first(&mut self.script.unresolved, first_unresolved);
        keep_first(&mut self.script.constructs, first_construct);
        Ok(())
    }

    fn test_expr(&mut self, expr: &ExtendedTestExpr) -> Walked {
        match expr {
            ExtendedTestExpr::And(left, right) | ExtendedTestExpr::Or(left, right) => {
                self.test_expr(left)?;
                self.test_expr(right)
            }
            ExtendedTestExpr::Not(inner) | ExtendedTestExpr::Parenthesized(inner) => {
                self.test_expr(inner)
            }
            ExtendedTestExpr::UnaryTest(_, word) => self.word(word).map(|_| ()),
            ExtendedTestExpr::BinaryTest(_, left, right) => {
                self.word(left)?;
                self.word(right).map(|_| ())
            }
        }
    }

    /// Scans expanded free text (arithmetic) for substitutions.
    fn text(&mut self, text: &str) -> Walked {
        let mut found = Found::default();
        scan_text(text, &mut found)?;
        self.found(found)
    }

    /// Records the variables a word expands and walks its command substitutions.
    fn found(&mut self, found: Found) -> Walked {
        for name in found.variables {
            if !self.script.variables.contains(&name) {
                self.script.variables.push(name);
            }
        }
        for source in found.substitutions {
            self.nested(&source, Origin::CommandSubstitution)?;
        }
        Ok(())
    }

    /// Classifies a word and walks the substitutions inside it.
    fn word(&mut self, word: &ast::Word) -> Result<Word, ShellParseError> {
        self.raw_word(&word.value)
    }

    /// [`Self::word`] for a word that is not a command's argument: one whose expansion
    /// evaluates a variable's value is recorded as a construct (see
    /// [`ConstructKind::Evaluated`]); a command's arguments are judged by the rules.
    fn expanded(&mut self, word: &ast::Word) -> Result<Word, ShellParseError> {
        let word = self.word(word)?;
        if let WordKind::Opaque(expansion) = word.kind {
            self.construct(ConstructKind::Evaluated(expansion), word.raw.clone());
        }
        Ok(word)
    }

    /// Records an array subscript of `assignment` that is not a number (`a[y]=1`,
    /// `a=([y]=1)`): bash evaluates it as arithmetic, and so `y`'s value.
    fn subscript(&mut self, index: Option<&str>, assignment: &ast::Assignment) {
        if !index.is_some_and(|index| index.bytes().all(|b| b.is_ascii_digit())) {
            self.construct(
                ConstructKind::Evaluated(Expansion::Arithmetic),
                assignment.to_string(),
            );
        }
    }

    fn raw_word(&mut self, raw: &str) -> Result<Word, ShellParseError> {
        if is_plain(raw) {
            return Ok(Word::literal_from(raw, raw));
        }
        if let Some(glob) = self.loops.unquoted_glob(raw) {
            let word = self.raw_word(&glob)?;
            return Ok(Word::dynamic(&word.raw, Expansion::LoopGlob));
        }
        if let Some(substituted) = self.loops.substitute(raw) {
            return self.raw_word(&substituted);
        }
        let mut found = Found::default();
        let parts = split_word(raw, &mut found)?;
        found.variables.extend(brace_built_names(raw));
        self.found(found)?;
        Ok(word_from_parts(raw, &parts))
    }

    fn process_substitution(
        &mut self,
        kind: &ast::ProcessSubstitutionKind,
        subshell: &ast::SubshellCommand,
    ) -> Result<Word, ShellParseError> {
        if self.depth + 1 > MAX_SCRIPT_DEPTH {
            return Err(ShellParseError::new(
                format!("scripts nested more than {MAX_SCRIPT_DEPTH} levels deep"),
                None,
            ));
        }
        let mut inner = Walker {
            stdin: None,
            script: self.script,
            loops: self.loops,
            depth: self.depth + 1,
            origin: Origin::ProcessSubstitution,
        };
        // A process substitution runs while the command it is given to, and those after
        // it, do.
        inner.overlapping(|walker| walker.list(&subshell.list, &[]))?;
        Ok(Word::dynamic(
            &format!("{kind}{subshell}"),
            Expansion::ProcessSubstitution,
        ))
    }

    fn redirect(&mut self, redirect: &IoRedirect) -> Result<Redirection, ShellParseError> {
        let effect = match redirect {
            IoRedirect::File(_, kind, target) => match target {
                IoFileRedirectTarget::ProcessSubstitution(kind, subshell) => {
                    self.process_substitution(kind, subshell)?;
                    RedirectEffect::ProcessSubstitution
                }
                IoFileRedirectTarget::Fd(_) => RedirectEffect::DuplicateFd,
                IoFileRedirectTarget::Filename(word) | IoFileRedirectTarget::Duplicate(word) => {
                    let target = self.expanded(word)?;
                    match kind {
                        IoFileRedirectKind::Read => RedirectEffect::Input {
                            from: InputFrom::File(target),
                        },
                        IoFileRedirectKind::Write
                        | IoFileRedirectKind::Append
                        | IoFileRedirectKind::Clobber
                        | IoFileRedirectKind::ReadAndWrite => output_effect(target),
                        IoFileRedirectKind::DuplicateInput => {
                            if is_fd_operand(&target) {
                                RedirectEffect::DuplicateFd
                            } else {
                                RedirectEffect::Input {
                                    from: InputFrom::File(target),
                                }
                            }
                        }
                        // `>&word` with a non-number word sends stdout and stderr to a file.
                        IoFileRedirectKind::DuplicateOutput => {
                            if is_fd_operand(&target) {
                                RedirectEffect::DuplicateFd
                            } else {
                                output_effect(target)
                            }
                        }
                    }
                }
            },
            IoRedirect::OutputAndError(word, _) => output_effect(self.expanded(word)?),
            IoRedirect::HereDocument(_, document) => {
                let text = if document.requires_expansion {
                    let mut found = Found::default();
                    if let Some(expansion) = scan_heredoc(&document.doc.value, &mut found)? {
                        self.construct(
                            ConstructKind::Evaluated(expansion),
                            document.doc.value.trim_end().to_owned(),
                        );
                    }
                    let literal =
                        found.substitutions.is_empty() && !document.doc.value.contains('$');
                    self.found(found)?;
                    literal.then(|| document.doc.value.clone())
                } else {
                    Some(document.doc.value.clone())
                };
                RedirectEffect::Input {
                    from: InputFrom::Text(text),
                }
            }
            IoRedirect::HereString(_, word) => {
                let word = self.expanded(word)?;
                RedirectEffect::Input {
                    from: InputFrom::Text(word.literal().map(str::to_owned)),
                }
            }
        };
        Ok(Redirection {
            text: redirect.to_string().trim().to_owned(),
            effect,
        })
    }

    fn simple(&mut self, simple: &ast::SimpleCommand, inherited: &[Redirection]) -> Walked {
        let mut parts = Parts::default();
        for item in simple.prefix.iter().flat_map(|p| p.0.iter()) {
            self.item(item, Position::Prefix, &mut parts)?;
        }
        if let Some(name) = &simple.word_or_name {
            let word = self.word(name)?;
            parts.push_text(&word.raw);
            parts.words.push(word);
        }
        for item in simple.suffix.iter().flat_map(|s| s.0.iter()) {
            self.item(item, Position::Suffix, &mut parts)?;
        }
        // Bash expands braces before anything else, the command word's too: `{rm,-rf,/x}`
        // runs `rm -rf /x`, which deny rules see. No allow rule approves a command so spelt
        // (it stays unresolved): what it runs rests on this expansion being bash's.
        if parts
            .words
            .first()
            .is_some_and(|w| w.kind == WordKind::Dynamic(Expansion::Brace))
        {
            parts.words = self.brace_expanded(std::mem::take(&mut parts.words))?;
            self.script.unresolved.push(Unresolved {
                text: parts.text.clone(),
                reason: UnresolvedReason::DynamicCommandWord,
            });
        }
        parts.redirections.extend(inherited.iter().cloned());
        self.add_command(SimpleCommand {
            text: parts.text,
            assignments: parts.assignments,
            words: parts.words,
            redirections: parts.redirections,
            origin: self.origin.clone(),
            role: Role::Command,
            piped: self.stdin.is_some(),
            wraps: false,
            passed_on: Vec::new(),
            overlaps: self.loops.overlapping > 0,
        })
    }

    /// `words` with each word whose first expansion is a brace group, and that expands no
    /// parameter or command, replaced by the words it expands to.
    fn brace_expanded(&mut self, words: Vec<Word>) -> Result<Vec<Word>, ShellParseError> {
        let mut expanded = Vec::with_capacity(words.len());
        for word in words {
            if word.kind != WordKind::Dynamic(Expansion::Brace) || word.raw.contains(['$', '`']) {
                expanded.push(word);
                continue;
            }
            let pieces = expand_braces(&word.raw).map_err(|e| ShellParseError::new(e, None))?;
            for piece in pieces {
                expanded.push(self.raw_word(&piece)?);
            }
        }
        Ok(expanded)
    }

    fn item(
        &mut self,
        item: &CommandPrefixOrSuffixItem,
        position: Position,
        parts: &mut Parts,
    ) -> Walked {
        match item {
            CommandPrefixOrSuffixItem::IoRedirect(redirect) => {
                let redirection = self.redirect(redirect)?;
                parts.push_text(&redirection.text);
                parts.redirections.push(redirection);
            }
            CommandPrefixOrSuffixItem::Word(word) => {
                let word = self.word(word)?;
                parts.push_text(&word.raw);
                parts.words.push(word);
            }
            CommandPrefixOrSuffixItem::AssignmentWord(assignment, word) => {
                parts.push_text(&word.value);
                match position {
                    Position::Prefix => {
                        let assignment = self.assignment(assignment)?;
                        parts.assignments.push(assignment);
                    }
                    // After the command word, `X=1` is an ordinary argument (`export X=1`).
                    Position::Suffix => {
                        let word = self.word(word)?;
                        parts.words.push(word);
                    }
                }
            }
            CommandPrefixOrSuffixItem::ProcessSubstitution(kind, subshell) => {
                let word = self.process_substitution(kind, subshell)?;
                parts.push_text(&word.raw);
                parts.words.push(word);
            }
        }
        Ok(())
    }

    fn assignment(
        &mut self,
        assignment: &ast::Assignment,
    ) -> Result<EnvAssignment, ShellParseError> {
        if let ast::AssignmentName::ArrayElementName(_, index) = &assignment.name {
            self.subscript(Some(index), assignment);
        }
        let value = match &assignment.value {
            ast::AssignmentValue::Scalar(word) => self.expanded(word)?,
            ast::AssignmentValue::Array(elements) => {
                for (key, value) in elements {
                    if let Some(key) = key {
                        // An indexed array's key is evaluated after its quotes are removed,
                        // so even `['$(cmd)']` runs `cmd` (an associative array's is not,
                        // but which one `a` is cannot be told here).
                        let key = self.expanded(key)?;
                        self.subscript(key.literal(), assignment);
                    }
                    self.expanded(value)?;
                }
                Word::dynamic(&assignment.value.to_string(), Expansion::Parameter)
            }
        };
        Ok(EnvAssignment {
            name: assignment.name.to_string(),
            value,
        })
    }

    /// Gives the commands from `first` on the assignments of the command that runs them as a
    /// script (`HOME=/x bash -c 'cat ~/y'`: the script's commands run with that `HOME`).
    fn inherit(&mut self, first: usize, assignments: &[EnvAssignment]) {
        if assignments.is_empty() {
            return;
        }
        for inner in &mut self.script.commands[first..] {
            let mut inherited = assignments.to_vec();
            inherited.append(&mut inner.assignments);
            inner.assignments = inherited;
        }
    }

    /// Marks the commands from `first` on as run by a launcher: everything it runs, however
    /// deep, is covered by the launcher's allow.
    fn launched(&mut self, first: usize) {
        for inner in &mut self.script.commands[first..] {
            if inner.role == Role::Command {
                inner.role = Role::Launched;
            }
        }
    }

    /// A script run by a shell that may be a POSIX one other than bash (`sh` is dash on
    /// Debian; `watch` and `at` run theirs with `sh`) is read as bash reads it, which is how
    /// a POSIX shell reads it too, except for `$'…'`: dash reads `$'\' ; cmd ; echo '\'` as
    /// three commands, bash as one `echo`. Such a script is unresolved.
    fn posix_quoting(&mut self, command: &SimpleCommand, runner: &str, script: &str) {
        let posix = matches!(
            runner,
            "sh" | "dash" | "ash" | "posh" | "yash" | "watch" | "at" | "batch"
        );
        if posix && script.contains("$'") {
            self.script.unresolved.push(Unresolved {
                text: command.text.clone(),
                reason: UnresolvedReason::PosixQuoting {
                    runner: runner.to_owned(),
                },
            });
        }
    }

    /// Records a simple command and whatever it runs in turn.
    fn add_command(&mut self, command: SimpleCommand) -> Walked {
        if self.script.commands.len() >= MAX_COMMANDS {
            return Err(ShellParseError::new(
                format!(
                    "the line runs more than {MAX_COMMANDS} commands, more than are judged one by one"
                ),
                None,
            ));
        }
        // `{a[$(cmd)]}<file`: bash evaluates the subscript of the variable that receives the
        // descriptor (the parser reads the `{…}` as a word; quotes do not stop it).
        if !command.redirections.is_empty()
            && command
                .words
                .iter()
                .any(|w| w.raw.starts_with('{') && w.raw.ends_with('}') && w.raw.contains('['))
        {
            self.script.constructs.push(Construct {
                text: command.text.clone(),
                kind: ConstructKind::NamedDescriptor,
            });
        }
        // `{HOME}>&2`: bash stores the new descriptor's number in the variable, for the rest of
        // the line (`HOME=10`: `~` is then the folder `10`). A `{NAME}` word in a command with
        // redirections is taken as one, whether or not it touches its redirection.
        if !command.redirections.is_empty() {
            for word in &command.words {
                if let Some(name) = word.raw.strip_prefix('{').and_then(|w| w.strip_suffix('}'))
                    && is_variable_name(name)
                {
                    self.sets(name, "a `{NAME}` redirection");
                }
            }
        }
        if command
            .command_word()
            .is_some_and(|w| w.literal().is_none())
        {
            self.script.unresolved.push(Unresolved {
                text: command.text.clone(),
                reason: UnresolvedReason::DynamicCommandWord,
            });
        }
        let analysis = wrappers::analyse(&command);
        let mut command = command;
        let transparent = |transparency: Transparency| match transparency {
            Transparency::Transparent => Role::TransparentWrapper,
            Transparency::Runner | Transparency::Launcher => Role::Command,
        };
        // Only what a wrapper needs is copied: most commands wrap nothing.
        match analysis {
            Analysis::NotAWrapper => {
                self.script.commands.push(command);
                Ok(())
            }
            Analysis::Unresolved(reason) => {
                let text = command.text.clone();
                self.script.commands.push(command);
                self.script.unresolved.push(Unresolved { text, reason });
                Ok(())
            }
            Analysis::ReadsStdin {
                runner,
                transparency,
            } => {
                let redirected = command
                    .redirections
                    .iter()
                    .rev()
                    .find_map(|r| match &r.effect {
                        RedirectEffect::Input { from } => Some(from),
                        RedirectEffect::WriteFile { .. }
                        | RedirectEffect::Discard
                        | RedirectEffect::DuplicateFd
                        | RedirectEffect::ProcessSubstitution => None,
                    });
                let fed = match redirected {
                    Some(InputFrom::Text(text)) => Some(text.clone()),
                    Some(InputFrom::File(_)) => Some(None),
                    None => self.stdin.clone(),
                };
                match fed {
                    // Nothing is fed to it that the line shows: an ordinary command.
                    None => {
                        self.script.commands.push(command);
                        Ok(())
                    }
                    Some(Some(script)) => {
                        command.role = transparent(transparency);
                        command.wraps = true;
                        let assignments = command.assignments.clone();
                        self.posix_quoting(&command, &runner, &script);
                        self.script.commands.push(command);
                        let first_inner = self.script.commands.len();
                        self.nested(&script, Origin::ScriptArgument { runner })?;
                        self.inherit(first_inner, &assignments);
                        Ok(())
                    }
                    Some(None) => {
                        let text = command.text.clone();
                        self.script.commands.push(command);
                        self.script.unresolved.push(Unresolved {
                            text,
                            reason: UnresolvedReason::DynamicScript { runner },
                        });
                        Ok(())
                    }
                }
            }
            Analysis::Script {
                runner,
                script,
                transparency,
            } => {
                command.role = transparent(transparency);
                command.wraps = true;
                command.passed_on = command
                    .words
                    .iter()
                    .enumerate()
                    .filter(|(_, word)| word.literal() == Some(script.as_str()))
                    .map(|(at, _)| at)
                    .collect();
                let assignments = command.assignments.clone();
                self.posix_quoting(&command, &runner, &script);
                self.script.commands.push(command);
                let first_inner = self.script.commands.len();
                self.nested(&script, Origin::ScriptArgument { runner })?;
                self.inherit(first_inner, &assignments);
                if transparency == Transparency::Launcher {
                    self.launched(first_inner);
                }
                Ok(())
            }
            Analysis::Wraps {
                wrapper,
                inners,
                transparency,
            } => {
                command.role = transparent(transparency);
                command.wraps = true;
                // The commands it runs are the words it ends with (`flock FILE cmd …`).
                for inner in &inners {
                    let count = inner.words.len();
                    let start = command.words.len().saturating_sub(count);
                    let suffix = command.words.get(start..).unwrap_or_default();
                    if count > 0
                        && start > 0
                        && suffix.iter().zip(&inner.words).all(|(a, b)| a.raw == b.raw)
                    {
                        command.passed_on.extend(start..command.words.len());
                    }
                }
                let outer_assignments = command.assignments.clone();
                let outer_redirections = command.redirections.clone();
                self.script.commands.push(command);
                if self.depth + 1 > MAX_SCRIPT_DEPTH {
                    return Err(ShellParseError::new(
                        format!("wrappers nested more than {MAX_SCRIPT_DEPTH} levels deep"),
                        None,
                    ));
                }
                let first_inner = self.script.commands.len();
                for inner in inners {
                    let mut assignments = outer_assignments.clone();
                    assignments.extend(inner.assignments);
                    let words: Vec<String> = inner.words.iter().map(|w| w.raw.clone()).collect();
                    let mut walker = Walker {
                        stdin: self.stdin.clone(),
                        script: self.script,
                        loops: self.loops,
                        depth: self.depth + 1,
                        origin: Origin::Wrapped {
                            wrapper: wrapper.clone(),
                        },
                    };
                    walker.add_command(SimpleCommand {
                        text: words.join(" "),
                        assignments,
                        words: inner.words,
                        redirections: outer_redirections.clone(),
                        origin: walker.origin.clone(),
                        role: Role::Command,
                        piped: walker.stdin.is_some(),
                        wraps: false,
                        passed_on: Vec::new(),
                        overlaps: walker.loops.overlapping > 0,
                    })?;
                }
                if transparency == Transparency::Launcher {
                    self.launched(first_inner);
                }
                Ok(())
            }
        }
    }
}

/// Removes the entries from `first` on that equal an earlier one from `first` on.
fn keep_first<T: PartialEq>(entries: &mut Vec<T>, first: usize) {
    let mut kept = first;
    for at in first..entries.len() {
        if !entries[first..kept].contains(&entries[at]) {
            entries.swap(kept, at);
            kept += 1;
        }
    }
    entries.truncate(kept);
}

/// The variable names a brace expansion right after `$NAME` builds: bash expands braces
/// first, so `$GITHUB_{TOKEN,}` expands `$GITHUB_TOKEN` and `$GITHUB_`.
fn brace_built_names(raw: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (at, _) in raw.match_indices('$') {
        let rest = &raw[at + 1..];
        let name_end = name_length(rest);
        let Some(braces) = rest[name_end..].strip_prefix('{') else {
            continue;
        };
        if name_end == 0 {
            continue;
        }
        let Some(close) = braces.find('}') else {
            continue;
        };
        for alternative in braces[..close].split([',', '.']) {
            let tail = &alternative[..name_length(alternative)];
            names.push(format!("{}{tail}", &rest[..name_end]));
        }
    }
    names
}

/// The text a command prints, when it is known: `echo` and `printf` of literal words.
/// This is what a pipe feeds a shell (`echo 'rm -rf /' | sh`). An `echo` of a backslash is
/// not known: dash's `echo` (`sh` on Debian) and bash's with `xpg_echo` read escapes
/// (`\0156` is `n`, `\0012` a new line).
fn printed_text(command: &SimpleCommand) -> Option<String> {
    let words: Option<Vec<&str>> = command.words.iter().map(Word::literal).collect();
    let words = words?;
    if command.redirections.iter().any(|r| {
        matches!(
            r.effect,
            RedirectEffect::WriteFile { .. } | RedirectEffect::Discard
        )
    }) {
        return None;
    }
    match words.as_slice() {
        ["echo", args @ ..]
            if !args.first().is_some_and(|a| a.starts_with('-'))
                && !args.iter().any(|a| a.contains('\\')) =>
        {
            Some(args.join(" "))
        }
        ["printf", format] if !format.contains(['%', '\\']) => Some((*format).to_owned()),
        _ => None,
    }
}

/// Where an item sits in a simple command.
#[derive(Clone, Copy)]
enum Position {
    Prefix,
    Suffix,
}

/// The pieces of a simple command being collected.
#[derive(Default)]
struct Parts {
    /// The command as written: its items' texts joined by single spaces, in order.
    text: String,
    assignments: Vec<EnvAssignment>,
    words: Vec<Word>,
    redirections: Vec<Redirection>,
}

impl Parts {
    fn push_text(&mut self, item: &str) {
        if !self.text.is_empty() && !item.is_empty() {
            self.text.push(' ');
        }
        self.text.push_str(item);
    }
}

/// `N`, `N-` or `-`: a file-descriptor operand of `>&` / `<&`.
fn is_fd_operand(target: &Word) -> bool {
    target.literal().is_some_and(|t| {
        let digits = t.strip_suffix('-').unwrap_or(t);
        t == "-" || (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// Output to a target: a file write unless it is one of the discarding devices.
fn output_effect(target: Word) -> RedirectEffect {
    match target.literal() {
        // (The terminal, and the command's own output by its descriptor, are its output.)
        Some(
            "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty" | "/dev/fd/1" | "/dev/fd/2",
        ) => RedirectEffect::Discard,
        _ => RedirectEffect::WriteFile { target },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::super::WordKind;
    use super::*;

    /// The variables a line expands are those bash expands: in double quotes, operands,
    /// here-documents, substitutions and scripts given to a shell, not in single quotes.
    #[test]
    fn records_the_variables_a_line_expands() {
        let variables = |line: &str| parse_script(line).expect("parses").variables;
        assert_eq!(variables("echo $A \"${B:-$C}\" '$D' \\$E"), ["A", "B", "C"]);
        assert_eq!(variables("cat <<EOF\n$F ${G[1]}\nEOF"), ["F", "G"]);
        assert_eq!(variables("cat <<'EOF'\n$H\nEOF"), Vec::<String>::new());
        assert_eq!(variables("echo $(echo $I) && sh -c 'echo $J'"), ["I", "J"]);
        assert_eq!(variables("echo $1 $@ $? ${#K[@]}"), ["K"]);
        assert_eq!(
            variables("echo $GITHUB_{TOKEN,} $A{1..2}"),
            ["GITHUB_", "GITHUB_TOKEN", "A", "A1", "A2"]
        );
    }

    /// Renders a script compactly, one entry per command: origin tag (`L` line, `C` command
    /// substitution, `P` process substitution, `S` script argument, `W` wrapped), `*` for a
    /// transparent wrapper, then assignments, words (`<dynamic>`, `<<opaque>>`) and
    /// redirections (`>file`, `>null`, `>&`, `<`, `<()`). Unresolved entries and constructs
    /// follow as `?reason` and `#kind`.
    fn render(line: &str) -> Vec<String> {
        let script = match parse_script(line) {
            Ok(script) => script,
            Err(err) => return vec![format!("error: {} @ {:?}", err.message, err.offset)],
        };
        let mut out: Vec<String> = script
            .commands
            .iter()
            .map(|c| {
                let mut parts = vec![format!(
                    "{}{}",
                    match c.origin {
                        Origin::Line => "L",
                        Origin::CommandSubstitution => "C",
                        Origin::ProcessSubstitution => "P",
                        Origin::ScriptArgument { .. } => "S",
                        Origin::Wrapped { .. } => "W",
                    },
                    match c.role {
                        Role::Command => "",
                        Role::TransparentWrapper => "*",
                        Role::Launched => "~",
                    }
                )];
                parts.extend(
                    c.assignments
                        .iter()
                        .map(|a| format!("{}={}", a.name, a.value.raw)),
                );
                parts.extend(c.words.iter().map(|w| match &w.kind {
                    WordKind::Literal(l) => l.clone(),
                    WordKind::Dynamic(_) => format!("<{}>", w.raw),
                    WordKind::Opaque(_) => format!("<<{}>>", w.raw),
                }));
                parts.extend(c.redirections.iter().map(|r| match &r.effect {
                    RedirectEffect::WriteFile { target } => format!(">{}", target.raw),
                    RedirectEffect::Discard => ">null".to_owned(),
                    RedirectEffect::DuplicateFd => ">&".to_owned(),
                    RedirectEffect::Input { .. } => "<".to_owned(),
                    RedirectEffect::ProcessSubstitution => "<()".to_owned(),
                }));
                parts.join(" ")
            })
            .collect();
        out.extend(script.unresolved.iter().map(|u| format!("?{}", u.reason)));
        out.extend(script.constructs.iter().map(|c| format!("#{}", c.kind)));
        out
    }

    #[test]
    fn splits_every_simple_command() {
        let table: &[(&str, &[&str])] = &[
            ("git status", &["L git status"]),
            ("git status; rm -rf /", &["L git status", "L rm -rf /"]),
            (
                "a && b || c | d & e\nf",
                &["L a", "L b", "L c", "L d", "L e", "L f"],
            ),
            ("ls |& cat", &["L ls >&", "L cat"]),
            ("(a; b)", &["L a", "L b"]),
            ("{ a; b; }", &["L a", "L b"]),
            (
                "if a; then b; elif c; then d; else e; fi",
                &["L a", "L b", "L c", "L d", "L e"],
            ),
            (
                "while a; do b; done; until c; do d; done",
                &["L a", "L b", "L c", "L d"],
            ),
            ("for x in $(a); do b; done", &["C a", "L b"]),
            (
                "for f in a 'b c'; do cat \"$f\" $f; ls; done",
                &["L cat a a", "L ls", "L cat b c <$f>"],
            ),
            ("for f in *.rs; do cat \"$f\"; done", &["L cat <*.rs>"]),
            (
                "for f in a; do read f; cat \"$f\"; done",
                &["L read f", "L cat <\"$f\">"],
            ),
            (
                "for f in a; do cat \"$(echo \"$f\")\"; done",
                &["C echo a", "L cat <\"$(echo \"$f\")\">"],
            ),
            ("case $(a) in $(b)) c;; esac", &["C a", "C b", "L c"]),
            ("f() { a; }; function g { b; }", &["L a", "L b"]),
            ("coproc a", &["L a"]),
            ("! a; time b", &["L a", "L b"]),
            ("ls # ; rm -rf /", &["L ls"]),
            ("ls \\\n -la", &["L ls -la"]),
            (
                "git diff $(rm -rf /)",
                &["C rm -rf /", "L git diff <$(rm -rf /)>"],
            ),
            (
                "git diff \"$(rm -rf /)\"",
                &["C rm -rf /", "L git diff <\"$(rm -rf /)\">"],
            ),
            ("echo \"`id`\"", &["C id", "L echo <\"`id`\">"]),
            (
                "echo $(a $(b))",
                &["C b", "C a <$(b)>", "L echo <$(a $(b))>"],
            ),
            ("X=$(id) ls", &["C id", "L X=$(id) ls"]),
            ("export X=$(id)", &["C id", "L export <X=$(id)>"]),
            ("a=(x $(id))", &["C id", "L a=(x $(id))"]),
            ("ls > $(id)", &["C id", "L ls >$(id)"]),
            (
                "cat <(ls) >(wc -l)",
                &["P ls", "P wc -l", "L cat <<( ls )> <>( wc -l )>"],
            ),
            ("ls > >(tee x)", &["P tee x", "L ls <()"]),
            (
                "echo ${x:-$(id)} $((1 + $(id)))",
                &["C id", "C id", "L echo <${x:-$(id)}> <<$((1 + $(id)))>>"],
            ),
            ("ls > out", &["L ls >out"]),
            (
                "ls >> out; ls >| out; ls &> out; ls &>> out; ls <> out; ls >&out",
                &[
                    "L ls >out",
                    "L ls >out",
                    "L ls >out",
                    "L ls >out",
                    "L ls >out",
                    "L ls >out",
                ],
            ),
            ("ls 2>out", &["L ls >out"]),
            (
                "ls 2>&1 >/dev/null 3>&- 4>&2- 2>/dev/stderr",
                &["L ls >& >null >& >& >null"],
            ),
            ("ls < in <&3", &["L ls < >&"]),
            ("ls > \"$F\"", &["L ls >\"$F\""]),
            ("{ ls; } > out", &["L ls >out"]),
            ("{ ls > a; } 2> b", &["L ls >a >b"]),
            ("f() { ls; } > out", &["L ls >out"]),
            ("cat <<EOF\nhi $(id)\nEOF\n", &["C id", "L cat <"]),
            ("cat <<'EOF'\nhi $(id)\nEOF\n", &["L cat <"]),
            ("cat <<< $(id)", &["C id", "L cat <"]),
            ("eval 'rm -rf /'", &["L* eval rm -rf /", "S rm -rf /"]),
            (
                "eval \"$X\"",
                &[
                    "L eval <\"$X\">",
                    "?the script given to `eval` is not a literal",
                ],
            ),
            (
                "sh -c 'a; b | c'",
                &["L* sh -c a; b | c", "S a", "S b", "S c"],
            ),
            (
                "bash -c \"echo \\$(id)\"",
                &["L* bash -c echo $(id)", "C id", "S echo <$(id)>"],
            ),
            (
                "nice -n 5 git status",
                &["L* nice -n 5 git status", "W git status"],
            ),
            (
                "X=1 nice git status",
                &["L* X=1 nice git status", "W X=1 git status"],
            ),
            (
                "nice git status > f",
                &["L* nice git status >f", "W git status >f"],
            ),
            ("sudo rm -rf /", &["L sudo rm -rf /", "W rm -rf /"]),
            (
                "find . -exec rm {} \\;",
                &["L find . -exec rm {} ;", "W rm <{}>"],
            ),
            (
                "ls | xargs rm",
                &["L ls", "L* xargs rm", "W rm <<arguments from input>>"],
            ),
            (
                "nice sh -c 'rm x'",
                &["L* nice sh -c rm x", "W* sh -c rm x", "S rm x"],
            ),
            (
                "$CMD x",
                &[
                    "L <$CMD> x",
                    "?the command word is expanded at run time, so the program is unknown",
                ],
            ),
            (
                "{rm,-rf,/}",
                &[
                    "L rm -rf /",
                    "?the command word is expanded at run time, so the program is unknown",
                ],
            ),
            ("X=1", &["L X=1"]),
            ("> out", &["L >out"]),
            (
                "(( x = $(id) ))",
                &["C id", "#an arithmetic command `(( ))`"],
            ),
            ("[[ -f $(id) ]] && ls", &["C id", "L ls", "#a `[[ ]]` test"]),
            (
                "for ((i=0; i<3; i++)); do ls; done",
                &["L ls", "#an arithmetic `for (( ))` loop"],
            ),
            (
                "ls 'my dir' a\\ b ~ HEAD~1 *.rs",
                &["L ls my dir a b <~> HEAD~1 <*.rs>"],
            ),
            ("", &[]),
        ];
        let mut failures = Vec::new();
        for (line, expected) in table {
            let actual = render(line);
            if actual != *expected {
                failures.push(format!(
                    "line {line:?}\n  actual:   {actual:?}\n  expected: {expected:?}"
                ));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn commands_that_may_run_after_later_ones_overlap() {
        let script =
            parse_script("while a; do b $(c); done; for x in 1; do d; done; e; f | g; h & i")
                .unwrap();
        let overlaps: Vec<(String, bool)> = script
            .commands
            .iter()
            .map(|c| (c.text.clone(), c.overlaps))
            .collect();
        let expected = [
            ("a", true),
            ("c", true),
            ("b $(c)", true),
            ("d", true),
            ("e", false),
            ("f", true),
            ("g", true),
            ("h", true),
            ("i", false),
        ];
        assert_eq!(overlaps, expected.map(|(t, r)| (t.to_owned(), r)).to_vec());
    }

    #[test]
    fn later_commands_run_with_what_a_line_exports() {
        let assignments = |line: &str| -> Vec<Vec<String>> {
            parse_script(line)
                .unwrap()
                .commands
                .iter()
                .map(|c| {
                    c.assignments
                        .iter()
                        .map(|a| format!("{}={}", a.name, a.value.raw))
                        .collect()
                })
                .collect()
        };
        assert_eq!(
            assignments("export A=1 B=\"$X\"; git log; X=2 ls"),
            [
                vec![],
                vec!["A=1", "B=\"$X\""],
                vec!["A=1", "B=\"$X\"", "X=2"]
            ]
        );
        assert_eq!(
            assignments("declare -gx C; sh -c 'ls'"),
            [vec![], vec!["C=$C"], vec!["C=$C"]]
        );
        for line in ["export -n A; ls", "declare -r A=1; ls", "export -p; ls"] {
            assert!(assignments(line).iter().all(Vec::is_empty), "{line}");
        }
    }

    #[test]
    fn keeps_each_command_as_written() {
        let texts = |line: &str| -> Vec<String> {
            parse_script(line)
                .unwrap()
                .commands
                .into_iter()
                .map(|c| c.text)
                .collect()
        };
        // Items are joined by one space; redirections and process substitutions are
        // printed by the parser.
        assert_eq!(
            texts("A=1  B='x y' git   diff \"$(date)\" 2>&1 >/dev/null | tee <(cat) out"),
            [
                "date",
                "A=1 B='x y' git diff \"$(date)\" 2>& 1 > /dev/null",
                "cat",
                "tee <( cat ) out",
            ]
        );
        // A wrapped command is its words; redirections alone are a command too.
        assert_eq!(
            texts("nice -n 5 ls -la; > out"),
            ["nice -n 5 ls -la", "ls -la", "> out"]
        );
    }

    #[test]
    fn refuses_what_it_cannot_parse() {
        let table: &[(&str, &str)] = &[
            (
                "echo 'unterminated",
                "error: unterminated single quote @ Some(5)",
            ),
            (
                "echo \"unterminated",
                "error: unterminated double quote @ Some(5)",
            ),
            (
                "echo `unterminated",
                "error: unterminated backquote @ Some(5)",
            ),
            ("ls (", "error: unexpected end of input @ Some(4)"),
            ("ls )", "error: syntax error near `)` @ Some(3)"),
            (
                "if true; then ls",
                "error: unexpected end of input @ Some(16)",
            ),
            (
                "ls 99999999999>x",
                "error: file descriptor `99999999999` is out of range @ Some(3)",
            ),
            (
                "cat <<EOF\nunterminated",
                "error: unterminated here-document `EOF` @ Some(22)",
            ),
            (
                "echo $(ls 'x)",
                "error: unterminated single quote @ Some(10)",
            ),
            ("echo $(ls", "error: unterminated expansion @ Some(9)"),
            ("echo \"$(ls)", "error: unterminated double quote @ Some(5)"),
        ];
        for (line, expected) in table {
            assert_eq!(render(line), [*expected], "line {line:?}");
        }
    }

    #[test]
    fn refuses_deep_nesting() {
        let deep_brackets = format!("{}ls{}", "(".repeat(200), ")".repeat(200));
        assert!(render(&deep_brackets)[0].starts_with("error: brackets nested more than"));
        let deep_ifs = format!("{}ls{}", "if true; then ".repeat(100), "; fi".repeat(100));
        assert!(render(&deep_ifs)[0].starts_with("error: compound commands nested more than"));
        let deep_evals = format!("{}ls", "eval ".repeat(40));
        assert!(render(&deep_evals)[0].starts_with("error: scripts nested more than 16"));
        // Within the limits, nesting is followed.
        let nested = format!("{}ls{}", "$(".repeat(10), ")".repeat(10));
        assert_eq!(render(&nested).first().map(String::as_str), Some("C ls"));
    }

    /// Found by the fuzz smoke: unclosed parentheses made the parser backtrack in time that
    /// doubles with every two more (a line of 48 would run for hours); more than the limit
    /// is refused before the parser runs.
    #[test]
    fn many_unclosed_parentheses_are_refused_before_the_parser() {
        for line in [
            "(".repeat(40),
            format!("cat {}n", "( ".repeat(40)),
            format!("{}*\ns=* *", "(".repeat(24)),
        ] {
            let err = parse_script(&line).expect_err("refused");
            assert!(
                err.message
                    .starts_with("brackets nested more than 16 levels deep"),
                "{line:?}: {}",
                err.message
            );
        }
    }

    #[test]
    fn nesting_at_the_limits_fits_a_small_stack() {
        // A thread with a quarter of the usual 2 MiB: the limits must keep the recursive
        // parser far from the end of the stack, even unoptimised.
        let half = MAX_SYNTAX_DEPTH / 2;
        let lines = [
            format!(
                "{}ls{}",
                "(".repeat(MAX_SYNTAX_DEPTH),
                ")".repeat(MAX_SYNTAX_DEPTH)
            ),
            format!(
                "{}ls{}",
                "{ ".repeat(MAX_SYNTAX_DEPTH),
                "; }".repeat(MAX_SYNTAX_DEPTH)
            ),
            format!(
                "{}ls{}",
                "if true; then ".repeat(MAX_SYNTAX_DEPTH),
                "; fi".repeat(MAX_SYNTAX_DEPTH)
            ),
            format!(
                "{}{}ls{}{}",
                "(".repeat(half),
                "while true; do ".repeat(half),
                "; done".repeat(half),
                ")".repeat(half)
            ),
            format!(
                "{}ls{}",
                "$(".repeat(MAX_SYNTAX_DEPTH),
                ")".repeat(MAX_SYNTAX_DEPTH)
            ),
            format!("{}ls", "eval ".repeat(MAX_SCRIPT_DEPTH)),
        ];
        let handle = std::thread::Builder::new()
            .stack_size(512 * 1024)
            .spawn(move || {
                lines
                    .iter()
                    .map(|line| parse_script(line).is_ok())
                    .collect::<Vec<_>>()
            })
            .unwrap();
        // Every line is at the limits (substitutions nest as scripts too: at most
        // `MAX_SCRIPT_DEPTH`, the same 16), so every one parses.
        assert_eq!(handle.join().unwrap(), [true, true, true, true, true, true]);
    }

    #[test]
    fn survives_inputs_that_crash_the_parser() {
        // Each of these panics inside the parser's own code when used naively.
        for line in [
            "ls 99999999999>x",
            "ls 99999999999999999999999<x",
            "ls ~99999999999999999999999",
            "ls ~+99999999999999999999999 ~-99999999999999999999999",
            "echo ${x:-~99999999999999999999}",
            "echo {1..99999999999999999999999}",
            "echo $((99999999999999999999999))",
        ] {
            if let Err(err) = parse_script(line) {
                assert!(
                    !err.message.contains("the shell parser failed"),
                    "line {line:?}: {err}"
                );
            }
        }
    }
}

/// The module documentation's example, as a test (the module is crate-private, so rustdoc
/// cannot run it).
#[cfg(test)]
mod doc_example {
    #[test]
    fn a_substitution_runs_before_its_command() {
        use crate::policy::shell::parse_script;

        let script = parse_script("git status && echo \"$(rm -rf /)\"").unwrap();
        let words: Vec<Vec<&str>> = script
            .commands
            .iter()
            .map(|c| c.words.iter().filter_map(|w| w.literal()).collect())
            .collect();
        // The substitution runs before the command that uses its output.
        assert_eq!(
            words,
            [vec!["git", "status"], vec!["rm", "-rf", "/"], vec!["echo"]]
        );
    }
}
