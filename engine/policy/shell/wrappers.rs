//! Commands that run other commands: wrappers (`nice`, `env`, `xargs`, `sudo`, `find
//! -exec`…) and script runners (`eval`, `sh -c`, `trap`).
//!
//! [`analyse`] reads a simple command's words and says what it runs. Each wrapper's options
//! are listed exactly (from its manual page); an option that is not listed makes the result
//! [`Analysis::Unresolved`] rather than a guess, because a wrong guess about where the
//! wrapped command starts would let it escape the rules.

use super::{EnvAssignment, Expansion, SimpleCommand, UnresolvedReason, Word, WordKind};

/// What a command runs besides itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Analysis {
    /// Nothing: an ordinary command.
    NotAWrapper,
    /// Other commands, given as words.
    Wraps {
        wrapper: String,
        inners: Vec<Inner>,
        transparency: Transparency,
    },
    /// A script given as a literal string.
    Script {
        runner: String,
        script: String,
        transparency: Transparency,
    },
    /// A shell that reads its script from standard input (`bash`, `sh -s`): the script is
    /// whatever a here-string, here-document or pipe feeds it.
    ReadsStdin { runner: String },
    /// Something that cannot be determined.
    Unresolved(UnresolvedReason),
}

/// A command run by a wrapper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Inner {
    pub words: Vec<Word>,
    pub assignments: Vec<EnvAssignment>,
}

/// Whether the wrapper is judged through what it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Transparency {
    /// Only changes how the command runs; an allow rule judges the wrapped command alone.
    Transparent,
    /// Changes who runs it, when, or with what side effects; both must be allowed.
    Runner,
}

/// Option syntax of one wrapper.
#[derive(Default)]
struct OptionSpec {
    /// Short options without an argument.
    short_flags: &'static str,
    /// Short options with a required argument (attached or in the next word).
    short_with_arg: &'static str,
    /// Short options with an optional argument, which must be attached (`-i{}`).
    short_optional_arg: &'static str,
    /// Long options without an argument.
    long_flags: &'static [&'static str],
    /// Long options with a required argument (`--x=v` or `--x v`).
    long_with_arg: &'static [&'static str],
    /// Long options with an optional argument, which must use `=`.
    long_optional_arg: &'static [&'static str],
    /// Whether `-N` (a number, as in `nice -10`) is an option.
    numeric_short: bool,
}

/// Parsed options: name (`-x` or `--name`) and literal argument, if any.
struct Scanned {
    options: Vec<(String, Option<String>)>,
    /// Index of the first operand in the scanned words.
    operands: usize,
}

impl Scanned {
    fn has(&self, names: &[&str]) -> bool {
        self.options
            .iter()
            .any(|(name, _)| names.contains(&name.as_str()))
    }

    /// The last of the named options given, with its argument.
    fn last(&self, names: &[&str]) -> Option<(&str, Option<&str>)> {
        self.options
            .iter()
            .rev()
            .find(|(name, _)| names.contains(&name.as_str()))
            .map(|(name, value)| (name.as_str(), value.as_deref()))
    }
}

fn unknown(wrapper: &str, option: &str) -> UnresolvedReason {
    UnresolvedReason::UnknownOption {
        wrapper: wrapper.to_owned(),
        option: option.to_owned(),
    }
}

fn malformed(wrapper: &str) -> UnresolvedReason {
    UnresolvedReason::MalformedWrapper {
        wrapper: wrapper.to_owned(),
    }
}

/// Reads the leading options of `words` (the wrapper's arguments).
fn scan_options(
    wrapper: &str,
    words: &[Word],
    spec: &OptionSpec,
) -> Result<Scanned, UnresolvedReason> {
    let mut options = Vec::new();
    let mut i = 0;
    while let Some(word) = words.get(i) {
        let Some(text) = word.literal() else {
            if word.raw.starts_with('-') {
                // An expanded word that looks like an option: its meaning is unknown.
                return Err(malformed(wrapper));
            }
            break;
        };
        if text == "--" {
            i += 1;
            break;
        }
        if !text.starts_with('-') || text == "-" {
            break;
        }
        if let Some(long) = text.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value.to_owned())),
                None => (long, None),
            };
            let option = format!("--{name}");
            if spec.long_flags.contains(&name) && value.is_none() {
                options.push((option, None));
            } else if spec.long_optional_arg.contains(&name) {
                options.push((option, value));
            } else if spec.long_with_arg.contains(&name) {
                match value {
                    Some(value) => options.push((option, Some(value))),
                    None => {
                        i += 1;
                        let argument = words.get(i).ok_or_else(|| malformed(wrapper))?;
                        options.push((option, argument.literal().map(str::to_owned)));
                    }
                }
            } else {
                return Err(unknown(wrapper, text));
            }
            i += 1;
            continue;
        }
        let cluster = &text[1..];
        if spec.numeric_short && cluster.bytes().all(|b| b.is_ascii_digit()) {
            options.push((text.to_owned(), None));
            i += 1;
            continue;
        }
        for (at, c) in cluster.char_indices() {
            let option = format!("-{c}");
            let rest = &cluster[at + c.len_utf8()..];
            if spec.short_flags.contains(c) {
                options.push((option, None));
            } else if spec.short_optional_arg.contains(c) {
                options.push((option, (!rest.is_empty()).then(|| rest.to_owned())));
                break;
            } else if spec.short_with_arg.contains(c) {
                if rest.is_empty() {
                    i += 1;
                    let argument = words.get(i).ok_or_else(|| malformed(wrapper))?;
                    options.push((option, argument.literal().map(str::to_owned)));
                } else {
                    options.push((option, Some(rest.to_owned())));
                }
                break;
            } else {
                return Err(unknown(wrapper, &option));
            }
        }
        i += 1;
    }
    Ok(Scanned {
        options,
        operands: i,
    })
}

/// Says what `command` runs besides itself.
pub(super) fn analyse(command: &SimpleCommand) -> Analysis {
    let Some(first) = command.words.first() else {
        return Analysis::NotAWrapper;
    };
    let Some(name) = first.literal() else {
        return Analysis::NotAWrapper;
    };
    // Only a bare name is the well-known program; `/tmp/x/nice` could be anything, so it is
    // still unwrapped (for deny rules) but never transparent.
    let (base, bare) = match name.rsplit_once('/') {
        Some((_, base)) => (base, false),
        None => (name, true),
    };
    let args = &command.words[1..];
    let result = match base {
        "env" => env(args),
        "command" => command_builtin(args),
        "builtin" => prefix(
            base,
            args,
            &OptionSpec::default(),
            Transparency::Transparent,
        ),
        "exec" => prefix(
            base,
            args,
            &OptionSpec {
                short_flags: "cl",
                short_with_arg: "a",
                ..OptionSpec::default()
            },
            Transparency::Transparent,
        ),
        "nohup" => prefix(
            base,
            args,
            &OptionSpec::default(),
            Transparency::Transparent,
        ),
        "nice" => prefix(
            base,
            args,
            &OptionSpec {
                short_with_arg: "n",
                long_with_arg: &["adjustment"],
                numeric_short: true,
                ..OptionSpec::default()
            },
            Transparency::Transparent,
        ),
        "timeout" => timeout(args),
        "stdbuf" => prefix(
            base,
            args,
            &OptionSpec {
                short_with_arg: "ioe",
                long_with_arg: &["input", "output", "error"],
                ..OptionSpec::default()
            },
            Transparency::Transparent,
        ),
        "time" => time(args),
        "xargs" => xargs(args),
        "sudo" => sudo(args),
        "doas" => prefix(
            base,
            args,
            &OptionSpec {
                short_flags: "nsL",
                short_with_arg: "uC",
                ..OptionSpec::default()
            },
            Transparency::Runner,
        ),
        "find" => find(args),
        "setsid" => prefix(
            base,
            args,
            &OptionSpec {
                short_flags: "cfw",
                long_flags: &["ctty", "fork", "wait"],
                ..OptionSpec::default()
            },
            Transparency::Runner,
        ),
        // `busybox APPLET args…` runs the applet; `busybox --list` and the like run nothing.
        "busybox" => match args.first().and_then(Word::literal) {
            Some(applet) if !applet.starts_with('-') => Ok(wraps(
                base,
                args.to_vec(),
                Vec::new(),
                Transparency::Transparent,
            )),
            _ => Ok(Analysis::NotAWrapper),
        },
        "eval" => eval(args),
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "yash" | "posh" => {
            shell(base, args)
        }
        "trap" => trap(args),
        _ => Ok(Analysis::NotAWrapper),
    };
    match result {
        Ok(Analysis::Wraps {
            wrapper,
            inners,
            transparency,
        }) => Analysis::Wraps {
            wrapper,
            inners,
            transparency: if bare {
                transparency
            } else {
                Transparency::Runner
            },
        },
        Ok(Analysis::Script {
            runner,
            script,
            transparency,
        }) => Analysis::Script {
            runner,
            script,
            transparency: if bare {
                transparency
            } else {
                Transparency::Runner
            },
        },
        Ok(other) => other,
        Err(reason) => Analysis::Unresolved(reason),
    }
}

type Outcome = Result<Analysis, UnresolvedReason>;

fn wraps(
    wrapper: &str,
    words: Vec<Word>,
    assignments: Vec<EnvAssignment>,
    transparency: Transparency,
) -> Analysis {
    if words.is_empty() {
        return Analysis::NotAWrapper;
    }
    Analysis::Wraps {
        wrapper: wrapper.to_owned(),
        inners: vec![Inner { words, assignments }],
        transparency,
    }
}

/// Wrappers of the form `wrapper [options] command args…`.
fn prefix(wrapper: &str, args: &[Word], spec: &OptionSpec, transparency: Transparency) -> Outcome {
    let scanned = scan_options(wrapper, args, spec)?;
    Ok(wraps(
        wrapper,
        args[scanned.operands..].to_vec(),
        Vec::new(),
        transparency,
    ))
}

/// `NAME=value` as `env` and `sudo` read it (the name must be a valid variable name).
fn as_assignment(word: &Word) -> Option<EnvAssignment> {
    let (name, value) = word.raw.split_once('=')?;
    let mut chars = name.chars();
    let valid = chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric());
    if !valid {
        return None;
    }
    let value = match &word.kind {
        WordKind::Literal(literal) => {
            let literal_value = literal.split_once('=').map_or("", |(_, v)| v);
            Word::literal_from(value, literal_value)
        }
        WordKind::Dynamic(expansion) => Word::dynamic(value, *expansion),
        WordKind::Opaque(expansion) => Word {
            raw: value.to_owned(),
            kind: WordKind::Opaque(*expansion),
        },
    };
    Some(EnvAssignment {
        name: name.to_owned(),
        value,
    })
}

/// Leading `NAME=value` operands, then the command.
fn assignments_then_command(operands: &[Word]) -> (Vec<EnvAssignment>, Vec<Word>) {
    let mut assignments = Vec::new();
    let mut rest = operands;
    while let Some((first, tail)) = rest.split_first() {
        match as_assignment(first) {
            Some(assignment) => {
                assignments.push(assignment);
                rest = tail;
            }
            None => break,
        }
    }
    (assignments, rest.to_vec())
}

fn env(args: &[Word]) -> Outcome {
    let spec = OptionSpec {
        short_flags: "i0v",
        short_with_arg: "uCS",
        long_flags: &["ignore-environment", "null", "debug"],
        long_with_arg: &["unset", "chdir", "split-string"],
        long_optional_arg: &["block-signal", "default-signal", "ignore-signal"],
        ..OptionSpec::default()
    };
    let scanned = scan_options("env", args, &spec)?;
    if scanned.has(&["-S", "--split-string"]) {
        // `-S` re-splits a string with its own quoting rules: not modelled.
        return Err(unknown("env", "-S"));
    }
    let mut operands = &args[scanned.operands..];
    if operands.first().and_then(Word::literal) == Some("-") {
        operands = &operands[1..];
    }
    let (assignments, words) = assignments_then_command(operands);
    Ok(wraps("env", words, assignments, Transparency::Transparent))
}

fn command_builtin(args: &[Word]) -> Outcome {
    let spec = OptionSpec {
        short_flags: "pvV",
        ..OptionSpec::default()
    };
    let scanned = scan_options("command", args, &spec)?;
    if scanned.has(&["-v", "-V"]) {
        // `command -v x` only describes `x`.
        return Ok(Analysis::NotAWrapper);
    }
    Ok(wraps(
        "command",
        args[scanned.operands..].to_vec(),
        Vec::new(),
        Transparency::Transparent,
    ))
}

fn timeout(args: &[Word]) -> Outcome {
    let spec = OptionSpec {
        short_flags: "v",
        short_with_arg: "sk",
        long_flags: &["preserve-status", "foreground", "verbose"],
        long_with_arg: &["signal", "kill-after"],
        ..OptionSpec::default()
    };
    let scanned = scan_options("timeout", args, &spec)?;
    // The first operand is the duration.
    let rest = args
        .get(scanned.operands + 1..)
        .ok_or_else(|| malformed("timeout"))?;
    if rest.is_empty() {
        return Err(malformed("timeout"));
    }
    Ok(wraps(
        "timeout",
        rest.to_vec(),
        Vec::new(),
        Transparency::Transparent,
    ))
}

fn time(args: &[Word]) -> Outcome {
    let spec = OptionSpec {
        short_flags: "pvqa",
        short_with_arg: "fo",
        long_flags: &["portability", "verbose", "quiet", "append"],
        long_with_arg: &["format", "output"],
        ..OptionSpec::default()
    };
    let scanned = scan_options("time", args, &spec)?;
    // `-o FILE` writes a file, so `time` must then be allowed itself.
    let transparency = if scanned.has(&["-o", "--output"]) {
        Transparency::Runner
    } else {
        Transparency::Transparent
    };
    Ok(wraps(
        "time",
        args[scanned.operands..].to_vec(),
        Vec::new(),
        transparency,
    ))
}

fn xargs(args: &[Word]) -> Outcome {
    let spec = OptionSpec {
        short_flags: "0prtxo",
        short_with_arg: "adEILnPs",
        short_optional_arg: "eil",
        long_flags: &[
            "null",
            "no-run-if-empty",
            "verbose",
            "interactive",
            "exit",
            "open-tty",
            "show-limits",
        ],
        long_with_arg: &[
            "arg-file",
            "delimiter",
            "max-args",
            "max-procs",
            "max-chars",
            "process-slot-var",
        ],
        long_optional_arg: &["max-lines", "replace", "eof"],
        ..OptionSpec::default()
    };
    let scanned = scan_options("xargs", args, &spec)?;
    let mut words = args[scanned.operands..].to_vec();
    if words.is_empty() {
        words.push(Word::literal_from("echo", "echo"));
    }
    // With a replacement string, input is substituted into the words that contain it;
    // without, it is appended as extra arguments.
    let replace = scanned
        .last(&["-I", "-i", "--replace"])
        .map(|(name, value)| match value {
            Some(value) => Replacement::Known(value.to_owned()),
            None if name == "-I" => Replacement::Unknown,
            None => Replacement::Known("{}".to_owned()),
        });
    match replace {
        Some(Replacement::Unknown) => {
            for word in words.iter_mut().skip(1) {
                *word = Word::dynamic(&word.raw, Expansion::RuntimeArguments);
            }
        }
        Some(Replacement::Known(replace)) => {
            for word in &mut words {
                // The string is found in what xargs is given, after quotes are removed
                // (`X""X` is `XX`); a word known only when it runs may hold it too.
                if !replace.is_empty() && holds_placeholder(word, &replace) {
                    *word = Word::dynamic(&word.raw, Expansion::RuntimeArguments);
                }
            }
        }
        None => words.push(Word::dynamic(
            "<arguments from input>",
            Expansion::RuntimeArguments,
        )),
    }
    Ok(wraps("xargs", words, Vec::new(), Transparency::Transparent))
}

/// Whether `word`, as the program receives it, may hold `placeholder`: its value after quote
/// removal does, or its value is only known when it runs.
fn holds_placeholder(word: &Word, placeholder: &str) -> bool {
    word.literal()
        .is_none_or(|value| value.contains(placeholder))
}

/// The replacement string of `xargs -I`.
enum Replacement {
    Known(String),
    /// Given by an expansion.
    Unknown,
}

fn sudo(args: &[Word]) -> Outcome {
    let spec = OptionSpec {
        short_flags: "AbEHiKklnPSsVv",
        short_with_arg: "CDghpRrTtUu",
        long_flags: &[
            "askpass",
            "background",
            "set-home",
            "login",
            "remove-timestamp",
            "reset-timestamp",
            "list",
            "non-interactive",
            "preserve-groups",
            "stdin",
            "shell",
            "version",
            "validate",
        ],
        long_with_arg: &[
            "close-from",
            "chdir",
            "group",
            "host",
            "prompt",
            "chroot",
            "role",
            "type",
            "command-timeout",
            "other-user",
            "user",
        ],
        long_optional_arg: &["preserve-env"],
        ..OptionSpec::default()
    };
    let scanned = scan_options("sudo", args, &spec)?;
    let (assignments, words) = assignments_then_command(&args[scanned.operands..]);
    if scanned.has(&["-s", "--shell", "-i", "--login"]) && !words.is_empty() {
        // The shell runs the operands as a command line (`sudo -s 'rm -rf /'`).
        let literal: Option<Vec<&str>> = words.iter().map(Word::literal).collect();
        let script = literal.ok_or_else(|| UnresolvedReason::DynamicScript {
            runner: "sudo".to_owned(),
        })?;
        return Ok(Analysis::Script {
            runner: "sudo".to_owned(),
            script: script.join(" "),
            transparency: Transparency::Runner,
        });
    }
    Ok(wraps("sudo", words, assignments, Transparency::Runner))
}

/// `find … -exec cmd args… ;` (also `-execdir`, `-ok`, `-okdir`, and `+` terminators).
fn find(args: &[Word]) -> Outcome {
    let mut inners = Vec::new();
    let mut i = 0;
    while let Some(word) = args.get(i) {
        i += 1;
        if !matches!(
            word.literal(),
            Some("-exec" | "-execdir" | "-ok" | "-okdir")
        ) {
            continue;
        }
        let start = i;
        let end = args[start..]
            .iter()
            .position(|w| matches!(w.literal(), Some(";" | "+")))
            .map(|offset| start + offset)
            .ok_or_else(|| malformed("find"))?;
        let words: Vec<Word> = args[start..end]
            .iter()
            .map(|w| {
                if holds_placeholder(w, "{}") {
                    Word::dynamic(&w.raw, Expansion::RuntimeArguments)
                } else {
                    w.clone()
                }
            })
            .collect();
        if words.is_empty() {
            return Err(malformed("find"));
        }
        inners.push(Inner {
            words,
            assignments: Vec::new(),
        });
        i = end + 1;
    }
    if inners.is_empty() {
        return Ok(Analysis::NotAWrapper);
    }
    Ok(Analysis::Wraps {
        wrapper: "find".to_owned(),
        inners,
        transparency: Transparency::Runner,
    })
}

/// Joins literal words into a script, as `eval` does.
fn literal_script(runner: &str, words: &[Word]) -> Result<String, UnresolvedReason> {
    let mut parts = Vec::with_capacity(words.len());
    for word in words {
        parts.push(
            word.literal()
                .ok_or_else(|| UnresolvedReason::DynamicScript {
                    runner: runner.to_owned(),
                })?,
        );
    }
    Ok(parts.join(" "))
}

fn eval(args: &[Word]) -> Outcome {
    let args = match args.first().and_then(Word::literal) {
        Some("--") => &args[1..],
        _ => args,
    };
    if args.is_empty() {
        return Ok(Analysis::NotAWrapper);
    }
    Ok(Analysis::Script {
        runner: "eval".to_owned(),
        script: literal_script("eval", args)?,
        transparency: Transparency::Transparent,
    })
}

/// `sh [options] -c script [name [args…]]` and its relatives.
fn shell(runner: &str, args: &[Word]) -> Outcome {
    const LONG_FLAGS: &[&str] = &[
        "norc",
        "noprofile",
        "posix",
        "noediting",
        "restricted",
        "verbose",
        "version",
        "help",
        "debugger",
        "dump-strings",
        "dump-po-strings",
        "pretty-print",
    ];
    let mut command_mode = false;
    let mut transparency = Transparency::Transparent;
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let Some(text) = word.literal() else {
            if word.raw.starts_with(['-', '+']) {
                return Err(malformed(runner));
            }
            break;
        };
        if text == "--" || text == "-" {
            i += 1;
            break;
        }
        if let Some(long) = text.strip_prefix("--") {
            match long {
                "login" => transparency = Transparency::Runner,
                "rcfile" | "init-file" => {
                    transparency = Transparency::Runner;
                    i += 1;
                }
                _ if LONG_FLAGS.contains(&long) => {}
                _ => return Err(unknown(runner, text)),
            }
            i += 1;
            continue;
        }
        let Some(cluster) = text.strip_prefix(['-', '+']) else {
            break;
        };
        for c in cluster.chars() {
            match c {
                'c' => command_mode = true,
                // Interactive and login shells read start-up files that are not visible.
                'i' | 'l' => transparency = Transparency::Runner,
                'o' | 'O' => i += 1,
                'a' | 'b' | 'e' | 'f' | 'h' | 'k' | 'm' | 'n' | 'p' | 't' | 'u' | 'v' | 'x'
                | 'B' | 'C' | 'E' | 'H' | 'P' | 'T' | 'r' | 's' => {}
                _ => return Err(unknown(runner, &format!("-{c}"))),
            }
        }
        i += 1;
    }
    if !command_mode {
        // `bash script.sh` runs a file, which cannot be seen: the shell is judged as an
        // ordinary command. `bash` alone (or `bash -s args…`) reads its script from standard
        // input, which the walker can often see.
        let reads_stdin = args.get(i).is_none()
            || args[..i].iter().any(|w| {
                w.literal()
                    .is_some_and(|t| t.starts_with('-') && !t.starts_with("--") && t.contains('s'))
            });
        return Ok(if reads_stdin {
            Analysis::ReadsStdin {
                runner: runner.to_owned(),
            }
        } else {
            Analysis::NotAWrapper
        });
    }
    let script = args.get(i).ok_or_else(|| malformed(runner))?;
    let script = script
        .literal()
        .ok_or_else(|| UnresolvedReason::DynamicScript {
            runner: runner.to_owned(),
        })?
        .to_owned();
    Ok(Analysis::Script {
        runner: runner.to_owned(),
        script,
        transparency,
    })
}

/// `trap [-lp] [action] [signal…]`: the action runs later, as a script.
fn trap(args: &[Word]) -> Outcome {
    let spec = OptionSpec {
        short_flags: "lp",
        ..OptionSpec::default()
    };
    let scanned = scan_options("trap", args, &spec)?;
    if scanned.has(&["-l", "-p"]) {
        return Ok(Analysis::NotAWrapper);
    }
    let operands = &args[scanned.operands..];
    if operands.len() < 2 {
        return Ok(Analysis::NotAWrapper);
    }
    let action = literal_script("trap", &operands[..1])?;
    if action.is_empty() || action == "-" {
        return Ok(Analysis::NotAWrapper);
    }
    Ok(Analysis::Script {
        runner: "trap".to_owned(),
        script: action,
        transparency: Transparency::Runner,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::super::{Origin, Role};
    use super::*;

    fn command(words: &[&str]) -> SimpleCommand {
        SimpleCommand {
            text: words.join(" "),
            assignments: Vec::new(),
            words: words
                .iter()
                .map(|w| {
                    if w.starts_with('$') {
                        Word::dynamic(w, Expansion::Parameter)
                    } else {
                        Word::literal_from(w, w)
                    }
                })
                .collect(),
            redirections: Vec::new(),
            origin: Origin::Line,
            role: Role::Command,
        }
    }

    /// Renders an analysis compactly: `T:git status` (transparent), `R:rm -rf /` (runner),
    /// `S:script`, `U:reason`, `-` (not a wrapper).
    fn render(analysis: &Analysis) -> String {
        let tag = |t: &Transparency| match t {
            Transparency::Transparent => "T",
            Transparency::Runner => "R",
        };
        match analysis {
            Analysis::NotAWrapper => "-".to_owned(),
            Analysis::ReadsStdin { runner } => format!("I:{runner}"),
            Analysis::Wraps {
                inners,
                transparency,
                ..
            } => inners
                .iter()
                .map(|inner| {
                    let assignments: Vec<String> = inner
                        .assignments
                        .iter()
                        .map(|a| format!("{}={}", a.name, a.value.raw))
                        .collect();
                    let words: Vec<String> = inner
                        .words
                        .iter()
                        .map(|w| match w.literal() {
                            Some(l) => l.to_owned(),
                            None => format!("<{}>", w.raw),
                        })
                        .collect();
                    format!(
                        "{}:{}",
                        tag(transparency),
                        assignments
                            .into_iter()
                            .chain(words)
                            .collect::<Vec<_>>()
                            .join(" ")
                    )
                })
                .collect::<Vec<_>>()
                .join(" | "),
            Analysis::Script {
                script,
                transparency,
                ..
            } => format!("{}S:{script}", tag(transparency)),
            Analysis::Unresolved(reason) => format!("U:{reason}"),
        }
    }

    #[test]
    fn unwraps() {
        let table: &[(&[&str], &str)] = &[
            (&["ls", "-la"], "-"),
            (&["nice", "git", "status"], "T:git status"),
            (&["nice", "-n", "5", "git", "status"], "T:git status"),
            (&["nice", "-10", "rm", "x"], "T:rm x"),
            (&["nohup", "rm", "x"], "T:rm x"),
            (&["timeout", "10", "rm", "-rf", "/"], "T:rm -rf /"),
            (&["timeout", "-k", "5", "10", "rm", "x"], "T:rm x"),
            (&["timeout", "-sKILL", "10", "rm"], "T:rm"),
            (
                &["timeout", "10"],
                "U:cannot tell which command `timeout` runs",
            ),
            (
                &["timeout", "--bogus", "10", "rm"],
                "U:`timeout` option `--bogus` is not understood",
            ),
            (&["env", "rm", "x"], "T:rm x"),
            (&["env", "-i", "A=1", "B=2", "rm"], "T:A=1 B=2 rm"),
            (&["env", "-u", "HOME", "rm"], "T:rm"),
            (&["env"], "-"),
            (
                &["env", "-S", "rm -rf /"],
                "U:`env` option `-S` is not understood",
            ),
            (&["command", "rm", "x"], "T:rm x"),
            (&["command", "-v", "rm"], "-"),
            (&["builtin", "cd", "/"], "T:cd /"),
            (&["exec", "-a", "name", "rm"], "T:rm"),
            (&["exec"], "-"),
            (&["stdbuf", "-oL", "rm"], "T:rm"),
            (&["time", "-p", "rm"], "T:rm"),
            (&["time", "-o", "f", "rm"], "R:rm"),
            (&["xargs", "rm"], "T:rm <<arguments from input>>"),
            (
                &["xargs", "-0", "-n", "1", "rm", "-f"],
                "T:rm -f <<arguments from input>>",
            ),
            (&["xargs", "-I", "{}", "mv", "{}", "x"], "T:mv <{}> x"),
            (&["xargs"], "T:echo <<arguments from input>>"),
            (
                &["xargs", "--bogus", "rm"],
                "U:`xargs` option `--bogus` is not understood",
            ),
            (&["sudo", "rm", "x"], "R:rm x"),
            (
                &["sudo", "-u", "root", "-E", "PATH=/x", "rm"],
                "R:PATH=/x rm",
            ),
            (&["doas", "-u", "root", "rm"], "R:rm"),
            (&["find", ".", "-name", "x"], "-"),
            (&["find", ".", "-exec", "rm", "{}", ";"], "R:rm <{}>"),
            (
                &[
                    "find", ".", "-exec", "rm", "{}", "+", "-ok", "cat", "x", ";",
                ],
                "R:rm <{}> | R:cat x",
            ),
            (
                &["find", ".", "-exec", "rm"],
                "U:cannot tell which command `find` runs",
            ),
            (&["eval", "rm", "-rf", "/"], "TS:rm -rf /"),
            (
                &["eval", "$X"],
                "U:the script given to `eval` is not a literal",
            ),
            (&["sh", "-c", "rm -rf /"], "TS:rm -rf /"),
            (&["bash", "-ec", "rm x", "name", "arg"], "TS:rm x"),
            (&["bash", "-o", "pipefail", "-c", "rm x"], "TS:rm x"),
            (&["bash", "-lc", "rm x"], "RS:rm x"),
            (&["bash", "--login", "-c", "rm x"], "RS:rm x"),
            (
                &["bash", "-c", "$X"],
                "U:the script given to `bash` is not a literal",
            ),
            (&["bash", "-c"], "U:cannot tell which command `bash` runs"),
            (&["bash", "script.sh"], "-"),
            (
                &["bash", "--bogus", "-c", "x"],
                "U:`bash` option `--bogus` is not understood",
            ),
            (&["trap", "rm -rf /", "EXIT"], "RS:rm -rf /"),
            (&["trap", "-", "EXIT"], "-"),
            (&["trap", "-p"], "-"),
            (&["/usr/bin/nice", "rm"], "R:rm"),
            (&["/bin/sh", "-c", "rm"], "RS:rm"),
            (&["nice", "timeout", "5", "rm"], "T:timeout 5 rm"),
        ];
        for (words, expected) in table {
            assert_eq!(
                render(&analyse(&command(words))),
                *expected,
                "words {words:?}"
            );
        }
    }
}
