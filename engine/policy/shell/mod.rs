//! Shell command lines, split into every simple command they would run.
//!
//! The `shell` argument matcher (SPEC §7.1) needs to know what a command line such as
//! `git diff $(rm -rf /) && ls > out` would execute. This module parses the line with a real
//! shell parser ([`brush_parser`], a bash-compatible grammar) and walks the syntax tree into
//! a flat [`Script`]: every simple command, wherever it sits (after `;`, `&`, `&&`, `||`, `|`,
//! newlines; inside subshells, brace groups, `if`/`while`/`until`/`for`/`case` bodies,
//! function bodies, coprocesses; inside command substitutions `$( )` and backticks — also
//! within double quotes, assignments, arguments, redirection targets, here-documents,
//! parameter-expansion operands and arithmetic — and inside process substitutions
//! `<( )`/`>( )`), plus the commands hidden in script arguments that can be read statically
//! (`eval '…'`, `sh -c '…'`, `bash -c '…'`, `trap '…' SIG`) and in wrappers (`env`, `command`,
//! `builtin`, `exec`, `nice`, `nohup`, `timeout`, `stdbuf`, `time`, `xargs`, `sudo`, `doas`,
//! `find -exec`). It is pure and synchronous: it reads nothing but the string.
//!
//! # Words
//! Each word is kept after quote removal. A word whose value depends on run-time state is
//! [`WordKind::Dynamic`]: parameter expansion (`$X`, `${X:-…}`), command or process
//! substitution, pathname globs (`*`, `?`, `[…]`, extglobs), tilde expansion (`~` at the start
//! of a word or after `=`/`:`), brace expansion (`{a,b}`, `{1..3}`), `$"…"` translation, and
//! ANSI-C strings it cannot decode. A word that makes the shell *evaluate* text it cannot see
//! — arithmetic (`$((…))`, `${x:1:2}`, array subscripts `${a[i]}`), indirection (`${!x}`),
//! prompt expansion (`${x@P}`) — is [`WordKind::Opaque`]: bash evaluates array subscripts
//! found in variable values, so such a word can run a command hidden in a variable. A
//! command whose command word is not a literal (`$EDITOR x`, `{rm,-rf,/}`) runs a program
//! chosen at run time and is also recorded as [`Unresolved`].
//!
//! # Redirections
//! Each simple command carries its own redirections and those of every enclosing compound
//! command or function body (`{ ls; } > out` writes a file from `ls`). A redirection is a
//! file write when it opens a file for output: `>`, `>>`, `>|`, `&>`, `&>>`, `<>`, and
//! `>&word` / `<&word` forms whose target is not a file-descriptor number or `-`. Duplicating
//! or closing descriptors (`2>&1`, `>&2`, `3>&-`) is not a write. The targets `/dev/null`,
//! `/dev/stdout`, `/dev/stderr`, `/dev/tty` and `/dev/fd/1`, `/dev/fd/2` are treated as discarding or re-routing output, not as file
//! writes (they create nothing and cannot be replaced by a non-root process). A target with
//! any expansion (`> $F`) is a write.
//!
//! # Wrappers and script arguments
//! Wrappers that only change how a command runs (`env`, `command`, `builtin`, `exec`, `nice`,
//! `ionice`, `taskset`, `chrt`, `numactl`, `prlimit`, `nohup`, `timeout`, `stdbuf`, `time`,
//! `xargs`, `parallel`, `entr`, `watch`, and `eval` / `sh -c` with a literal script) are
//! [`Role::TransparentWrapper`]: the command they run is added as its own entry (origin
//! [`Origin::Wrapped`] or [`Origin::ScriptArgument`]), so an allow rule judges `nice git
//! status` by `git status`, and a deny rule sees both. Only a bare command name is
//! transparent: `/tmp/x/env git status` is judged as itself. Runners that change who runs the
//! command, where or when (`sudo`, `doas`, `su -c`, `runuser`, `sg`, `pkexec`, `setsid`,
//! `chroot`, `unshare`, `nsenter`, `systemd-run`, `flock`, `script -c`, `strace`, `find
//! -exec`, `trap`, `sh -i -c`, `tmux`, `screen`) are not transparent: the runner and what it runs
//! must both be allowed. Launchers that run a command in a project's environment (`uv run`,
//! `poetry run`, `bundle exec`, `pnpm exec`, `npx`, …) are allowed by their own rule: what they run
//! is [`Role::Launched`], judged by deny and ask rules only. A wrapper option toolgate does not know, or a script argument that
//! is not a literal, becomes an [`Unresolved`] entry: it never satisfies an allow rule and
//! always satisfies a deny rule (fail closed). The list is not exhaustive (`ssh` and
//! interpreters such as `python3 -c` are not unwrapped): a rule that allows such a command
//! with `*` allows whatever it runs.
//!
//! # Failures
//! Anything the parser rejects — unterminated quotes, syntax errors, unterminated
//! here-documents, nesting deeper than the limits below — is a [`ShellParseError`] value,
//! never a panic. The parser is also guarded against its own panics.

mod loops;
mod walk;
pub(crate) mod wildcard;
mod word;
mod wrappers;

use std::fmt;

use thiserror::Error;

pub use walk::parse_script;
pub(crate) use walk::{byte_offset, parse_tokens, tokenize};
pub(crate) use word::{Found, Part, Quoting, is_plain, split_word, unquoted_expansions};

/// A word as one shell word that means it (and as a token of a toolgate `shell` pattern):
/// as it is when that is safe, else single-quoted.
pub(crate) fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && !word.starts_with('~')
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./:@%+,-".contains(c));
    if plain {
        word.to_owned()
    } else {
        single_quoted(word)
    }
}

/// Whether `c` may be part of a shell variable's name.
pub(crate) fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// How many name characters `text` starts with (`HOME/x` → 4).
pub(crate) fn name_length(text: &str) -> usize {
    text.find(|c: char| !name_char(c)).unwrap_or(text.len())
}

/// Whether `text` is a variable's name: name characters, the first not a digit.
pub(crate) fn is_variable_name(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') && text.chars().all(name_char)
}

/// `text` single-quoted for the shell, whatever it holds (`'` is written `'\''`).
pub(crate) fn single_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// How deep scripts may nest inside each other (substitutions, `eval`, `sh -c`, wrappers).
/// Deeper input is refused rather than half-analysed.
const MAX_SCRIPT_DEPTH: usize = 16;

/// The longest command line judged, in bytes: parsing and judging grow with its length
/// (a line of 200 000 `ls;` took 29 s), so a longer one is refused, and asked about,
/// rather than let run past an agent's hook timeout.
pub(crate) const MAX_LINE_BYTES: usize = 64 * 1024;

/// The most simple commands one line may run (its substitutions and scripts included):
/// each is judged against the rules and its files located, and relative `cd`s multiply the
/// folders each path is judged in (400 `cd a;` took 0.5 s, 2 000 took 46 s).
pub(crate) const MAX_COMMANDS: usize = 256;

/// How deep brackets and compound commands may nest within one parse. The parser is
/// recursive; this keeps its stack use far below a thread's default stack. It also bounds
/// its time: on opening parentheses that are never closed (`( ( ( …`), it backtracks in
/// time that doubles with every two more (~0.6 s at 24, far longer at 48).
const MAX_SYNTAX_DEPTH: usize = 16;

/// Everything a command line would run, as far as it can be known without running it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Script {
    /// Every simple command, in the order the shell would start them: the commands of a
    /// substitution come before the command whose words contain it, and a wrapped command
    /// right after its wrapper.
    pub commands: Vec<SimpleCommand>,
    /// Places where a command runs that cannot be determined statically.
    pub unresolved: Vec<Unresolved>,
    /// Constructs that evaluate expressions (`(( ))`, `for (( ))`, `[[ ]]`). They can run
    /// commands hidden in variables through array subscripts, so an allow rule never
    /// approves them.
    pub constructs: Vec<Construct>,
    /// The name of every variable the line expands, once each, in the order first seen.
    pub variables: Vec<String>,
    /// The variable every `for` loop and every `coproc NAME` sets, once each, with what sets
    /// it (`for HOME in …`: "a `for` loop"; `coproc PATH { …; }` makes `$PATH` a descriptor
    /// number).
    pub set_variables: Vec<(String, &'static str)>,
    /// The words of every `for` loop's list: the shell expands them (globs included: `for f
    /// in ~/.ssh/*` lists `~/.ssh`) before the body runs.
    pub loop_lists: Vec<Word>,
}

/// One simple command: assignments, words and redirections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The command as written (reconstructed from the syntax tree), for messages.
    pub text: String,
    /// Environment-assignment prefixes (`NAME=value cmd`).
    pub assignments: Vec<EnvAssignment>,
    /// The command word followed by its arguments, after quote removal.
    pub words: Vec<Word>,
    /// Redirections of this command and of every enclosing compound command.
    pub redirections: Vec<Redirection>,
    /// Where the command was found.
    pub origin: Origin,
    /// Whether the command is a transparent wrapper of another entry.
    pub role: Role,
    /// Its input is the output of the command before it in a pipeline.
    pub piped: bool,
    /// It runs another command of the script, judged on its own (a wrapper, a runner or a
    /// shell given a script: `nice cmd`, `sudo cmd`, `bash -c '…'`, `sh <<< '…'`).
    pub wraps: bool,
    /// The indices of its words that it hands to the command it runs (`cmd` and what follows
    /// in `flock FILE cmd`, the script of `script -c CMD FILE`): that command's words, judged
    /// there. The others are its own (`FILE`).
    pub passed_on: Vec<usize>,
    /// It may run after, or while, commands that follow it: in a loop's body (it runs
    /// again), a pipeline, a `&` list, a coprocess or a process substitution (they run at
    /// the same time).
    pub overlaps: bool,
}

impl SimpleCommand {
    /// The command word, if the command has one (`X=1` and `> f` alone have none).
    pub fn command_word(&self) -> Option<&Word> {
        self.words.first()
    }

    /// The redirections that write to a file.
    pub fn file_writes(&self) -> impl Iterator<Item = &Redirection> {
        self.redirections
            .iter()
            .filter(|r| matches!(r.effect, RedirectEffect::WriteFile { .. }))
    }
}

/// Where a simple command was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Directly in the command line (including its compound commands and function bodies).
    Line,
    /// Inside a command substitution `$( )` or backticks.
    CommandSubstitution,
    /// Inside a process substitution `<( )` or `>( )`.
    ProcessSubstitution,
    /// Inside a literal script argument (`eval '…'`, `sh -c '…'`, `trap '…' EXIT`).
    ScriptArgument {
        /// The command that runs the script (`eval`, `bash`, …).
        runner: String,
    },
    /// The command run by a wrapper (`nice git status` → `git status`).
    Wrapped {
        /// The wrapper's command word.
        wrapper: String,
    },
}

/// Whether a command is judged by itself or through the command it wraps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// An ordinary command: an allow rule must match it.
    Command,
    /// A wrapper that only changes how another command runs (`nice`, `timeout`, `eval`…);
    /// the wrapped command is its own entry and an allow rule judges that one instead.
    /// Its assignments and redirections are still checked.
    TransparentWrapper,
    /// A command run by a launcher whose own allow covers it (`uv run`, `poetry run`,
    /// `bundle exec`): an allow rule need not match it, but deny and ask rules still do, and
    /// its files are judged.
    Launched,
}

/// A shell word after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The word as written in the source, quotes included.
    pub raw: String,
    /// Its value, if it is known statically.
    pub kind: WordKind,
}

impl Word {
    /// The literal value, if the word has no expansion.
    pub fn literal(&self) -> Option<&str> {
        match &self.kind {
            WordKind::Literal(value) => Some(value),
            WordKind::Dynamic(_) | WordKind::Opaque(_) => None,
        }
    }

    /// Whether the shell may make several words of it (or none): an unquoted expansion is
    /// split at blanks and globbed, a brace expands to several words, and `xargs` hands the
    /// words of its input. A literal, a wholly double-quoted word, a lone tilde, find's `{}`
    /// and a word `xargs -I` puts its input into stay one word.
    pub fn may_split(&self) -> bool {
        match &self.kind {
            WordKind::Literal(_) => false,
            WordKind::Dynamic(Expansion::FoundPath) => false,
            WordKind::Dynamic(Expansion::RuntimeArguments) => self.raw == INPUT_ARGUMENTS,
            // The processor count is one number (`make -j$(nproc)`).
            WordKind::Dynamic(Expansion::CommandSubstitution)
                if matches!(self.raw.as_str(), "$(nproc)" | "`nproc`" | "\"$(nproc)\"") =>
            {
                false
            }
            // A glob's words are the names of files that are there (`--include=*.rs` is one
            // word unless a file of that name exists); one named to read as an option would
            // have to be made first.
            WordKind::Dynamic(Expansion::Glob | Expansion::LoopGlob)
                if !self.raw.contains(['$', '`']) =>
            {
                false
            }
            WordKind::Dynamic(_) | WordKind::Opaque(_) => {
                // (`"$@"`, `"${a[@]}"` and `"${!prefix@}"` are a word each of their values,
                // quoted or not.)
                let quoted = self.raw.len() >= 2
                    && self.raw.starts_with('"')
                    && self.raw.ends_with('"')
                    && !self.raw[1..self.raw.len() - 1].contains('"')
                    && !self.raw.contains("$@")
                    && !self.raw.contains("${@")
                    && !self.raw.contains("@]")
                    && !self.raw.contains("@}");
                let tilde_only = self.kind == WordKind::Dynamic(Expansion::Tilde)
                    && !self.raw.contains(['$', '`', '*', '?', '[', '{']);
                !quoted && !tilde_only
            }
        }
    }

    /// Whether the word is one process substitution, `<(cmd)` or `>(cmd)`: a pipe to a
    /// command judged on its own, which the shell passes as a `/dev/fd/N` path.
    pub fn is_process_substitution(&self) -> bool {
        matches!(self.kind, WordKind::Dynamic(Expansion::ProcessSubstitution))
            && (self.raw.starts_with("<(") || self.raw.starts_with(">("))
            && self.raw.ends_with(')')
            && self.raw[2..]
                .find(')')
                .is_some_and(|at| at + 3 == self.raw.len())
    }

    pub(crate) fn literal_from(raw: &str, value: &str) -> Self {
        Self {
            raw: raw.to_owned(),
            kind: WordKind::Literal(value.to_owned()),
        }
    }

    pub(crate) fn dynamic(raw: &str, expansion: Expansion) -> Self {
        Self {
            raw: raw.to_owned(),
            kind: WordKind::Dynamic(expansion),
        }
    }
}

impl fmt::Display for Word {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

/// The word `xargs` appends for the arguments it reads from its input.
pub const INPUT_ARGUMENTS: &str = "<arguments from input>";

/// What is known about a word's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WordKind {
    /// No expansion: this is the value the command receives.
    Literal(String),
    /// The value depends on run-time state (it may even become several words or none).
    Dynamic(Expansion),
    /// Expanding the word makes the shell evaluate text that is not visible here.
    Opaque(Expansion),
}

/// The first expansion that made a word dynamic or opaque.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expansion {
    /// `$X`, `${X}`, `${X:-…}` and other parameter expansions.
    Parameter,
    /// `$( )` or backticks.
    CommandSubstitution,
    /// `<( )` or `>( )`.
    ProcessSubstitution,
    /// Unquoted `*`, `?`, `[…]` or an extglob.
    Glob,
    /// An unquoted reference to a `for` loop's variable bound to a glob written in the
    /// loop's header (`for f in src/*.rs; do wc -l $f; done`): the word is the glob, and
    /// the shell splits each match at blanks and globs it again.
    LoopGlob,
    /// `~` at the start of a word or after `=` / `:`.
    Tilde,
    /// `{a,b}` or `{1..3}`.
    Brace,
    /// An ANSI-C `$'…'` string with an escape toolgate does not decode.
    AnsiC,
    /// A `$"…"` string, translated at run time.
    Translation,
    /// Arguments a wrapper appends or substitutes at run time (`xargs`, `find -exec {}`).
    RuntimeArguments,
    /// A path `find` found, as the whole word `{}` of `find -exec`: it starts with one of
    /// find's starting points, which never start with `-` (find reads such a word as its
    /// expression), so it is never an option.
    FoundPath,
    /// `$((…))`, `$[…]`, `${x:offset}` or an array subscript: arithmetic evaluation.
    Arithmetic,
    /// `${!x}`: the value names another variable.
    Indirection,
    /// `${x@P}`: prompt expansion.
    Prompt,
    /// `${(e)x}` and other zsh parameter flags: `e` runs the command substitutions in the
    /// value.
    ZshFlags,
}

impl fmt::Display for Expansion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Parameter => "parameter expansion",
            Self::CommandSubstitution => "command substitution",
            Self::ProcessSubstitution => "process substitution",
            Self::Glob => "pathname glob",
            Self::LoopGlob => "loop variable over a glob",
            Self::Tilde => "tilde expansion",
            Self::Brace => "brace expansion",
            Self::AnsiC => "ANSI-C string",
            Self::Translation => "locale translation",
            Self::RuntimeArguments => "argument supplied at run time",
            Self::FoundPath => "path found by `find`",
            Self::Arithmetic => "arithmetic evaluation",
            Self::Indirection => "indirect expansion",
            Self::Prompt => "prompt expansion",
            Self::ZshFlags => "zsh parameter flags",
        })
    }
}

/// An environment-assignment prefix (`NAME=value`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvAssignment {
    /// The variable name (with its subscript for `a[i]=…`).
    pub name: String,
    /// The assigned value.
    pub value: Word,
}

/// One redirection and what it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirection {
    /// The redirection as written (reconstructed), for messages.
    pub text: String,
    /// Its effect.
    pub effect: RedirectEffect,
}

/// The effect of a redirection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedirectEffect {
    /// Opens a file for writing (creating or truncating it).
    WriteFile {
        /// The file.
        target: Word,
    },
    /// Output to `/dev/null`, `/dev/stdout`, `/dev/stderr`, `/dev/tty`, `/dev/fd/1` or
    /// `/dev/fd/2`.
    Discard,
    /// Duplicates or closes a file descriptor (`2>&1`, `3>&-`).
    DuplicateFd,
    /// Reads input: `<`, here-documents, here-strings.
    Input {
        /// Where the input comes from.
        from: InputFrom,
    },
    /// Connects to a process substitution (whose commands are entries of their own).
    ProcessSubstitution,
}

/// Where a command's standard input comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputFrom {
    /// A file (`< file`, `<&file`).
    File(Word),
    /// Text: a here-string or here-document, with its value when it is known statically.
    Text(Option<String>),
}

/// A place where a command runs that cannot be determined statically.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unresolved {
    /// The command that hides it, as written.
    pub text: String,
    /// Why it cannot be resolved.
    pub reason: UnresolvedReason,
}

/// Why a command cannot be resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnresolvedReason {
    /// The command word has an expansion: the program is chosen at run time.
    DynamicCommandWord,
    /// A script argument (`eval`, `sh -c`, `trap`) is not a literal.
    DynamicScript {
        /// The runner.
        runner: String,
    },
    /// A wrapper option whose meaning toolgate does not know.
    UnknownOption {
        /// The wrapper.
        wrapper: String,
        /// The option.
        option: String,
    },
    /// A wrapper whose command or operand is missing or malformed.
    MalformedWrapper {
        /// The wrapper.
        wrapper: String,
    },
    /// A script for a POSIX shell that may not be bash (`sh` is dash on Debian) written with
    /// `$'…'`, which such a shell reads as `$` and a single-quoted string: where its
    /// commands begin and end cannot be told.
    PosixQuoting {
        /// The runner.
        runner: String,
    },
}

impl fmt::Display for UnresolvedReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DynamicCommandWord => {
                f.write_str("the command word is expanded at run time, so the program is unknown")
            }
            Self::DynamicScript { runner } => {
                write!(f, "the script given to `{runner}` is not a literal")
            }
            Self::UnknownOption { wrapper, option } => {
                write!(f, "`{wrapper}` option `{option}` is not understood")
            }
            Self::MalformedWrapper { wrapper } => {
                write!(f, "cannot tell which command `{wrapper}` runs")
            }
            Self::PosixQuoting { runner } => write!(
                f,
                "the script given to `{runner}` uses `$'…'`, which a POSIX shell such as dash (`sh` on Debian) reads as `$` and a quoted string: its commands cannot be told"
            ),
        }
    }
}

/// A construct that evaluates expressions rather than running a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Construct {
    /// The construct as written (reconstructed).
    pub text: String,
    /// Its kind.
    pub kind: ConstructKind,
}

/// Kinds of [`Construct`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConstructKind {
    /// `(( expr ))`.
    Arithmetic,
    /// `for (( init; cond; step ))`.
    ArithmeticFor,
    /// `[[ expr ]]`.
    ExtendedTest,
    /// `{a[expr]}>file`: bash puts the descriptor it opens in the variable named, and
    /// evaluates the subscript.
    NamedDescriptor,
    /// A word bash expands outside a command's arguments (an assignment's value or
    /// subscript, a `for` list, a `case` word or pattern, a redirection's target, a
    /// here-string, an unquoted here-document's body) with an expansion that evaluates a
    /// variable's value (`x=${y@P}`, `for i in ${!y}`, `cat <<< $((y))`): the value may
    /// hold a command (`y='$(cat .env)'`).
    Evaluated(Expansion),
}

impl fmt::Display for ConstructKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Arithmetic => "an arithmetic command `(( ))`",
            Self::ArithmeticFor => "an arithmetic `for (( ))` loop",
            Self::ExtendedTest => "a `[[ ]]` test",
            Self::NamedDescriptor => {
                "a redirection into a named descriptor with a subscript `{a[…]}>`"
            }
            Self::Evaluated(expansion) => {
                return write!(f, "its {expansion}");
            }
        })
    }
}

/// A command line (or pattern) the parser cannot read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct ShellParseError {
    /// What went wrong (lowercase, no trailing period).
    pub message: String,
    /// Byte offset in the parsed string, when known. Errors inside nested scripts
    /// (substitutions, `eval`) carry the offset of nothing: their message names the context.
    pub offset: Option<usize>,
}

impl ShellParseError {
    pub(crate) fn new(message: impl Into<String>, offset: Option<usize>) -> Self {
        Self {
            message: message.into(),
            offset,
        }
    }
}
