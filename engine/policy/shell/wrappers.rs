//! Commands that run other commands: wrappers (`nice`, `env`, `xargs`, `sudo`, `find
//! -exec`…) and script runners (`eval`, `sh -c`, `trap`).
//!
//! [`analyse`] reads a simple command's words and says what it runs. Each wrapper's options
//! are listed exactly (from its manual page); an option that is not listed makes the result
//! [`Analysis::Unresolved`] rather than a guess, because a wrong guess about where the
//! wrapped command starts would let it escape the rules.

mod multiplexers;

use super::{
    EnvAssignment, Expansion, SimpleCommand, UnresolvedReason, Word, WordKind, is_variable_name,
};

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
    /// A shell that reads its script from standard input (`bash`, `sh -s`, `at`): the script
    /// is whatever a here-string, here-document or pipe feeds it.
    ReadsStdin {
        runner: String,
        transparency: Transparency,
    },
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
    /// Runs a command in a project's environment (`uv run`, `bundle exec`): an allow of the
    /// launcher covers what it runs, and deny and ask rules see both.
    Launcher,
}

/// Option syntax of one wrapper.
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

impl OptionSpec {
    /// No options at all.
    const NONE: Self = Self {
        short_flags: "",
        short_with_arg: "",
        short_optional_arg: "",
        long_flags: &[],
        long_with_arg: &[],
        long_optional_arg: &[],
        numeric_short: false,
    };
}

/// Parsed options: name (`-x` or `--name`) and literal argument, if any.
struct Scanned {
    options: Vec<(String, Option<String>)>,
    /// Index of the first operand in the scanned words.
    operands: usize,
    /// Whether the options ended with `--` (everything after it is an operand).
    ended_by_dashes: bool,
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

/// Whether `word` names the standard input as a file (`bash /dev/stdin`, `. /dev/fd/0`).
fn names_stdin(word: &Word) -> bool {
    matches!(
        word.literal(),
        Some("/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0")
    )
}

/// Reads the leading options of `words` (the wrapper's arguments).
fn scan_options(
    wrapper: &str,
    words: &[Word],
    spec: &OptionSpec,
) -> Result<Scanned, UnresolvedReason> {
    let mut options = Vec::new();
    let mut ended_by_dashes = false;
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
            ended_by_dashes = true;
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
        ended_by_dashes,
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
        "timeout" => timeout(args),
        "time" => time(args),
        "xargs" => xargs(args),
        "sudo" => sudo(args),
        "find" => find(args),
        // `busybox APPLET args…` runs the applet; `busybox --list` and the like run nothing.
        "busybox" | "toybox" => match args.first().and_then(Word::literal) {
            Some(applet) if !applet.starts_with('-') => Ok(wraps(
                base,
                args.to_vec(),
                Vec::new(),
                Transparency::Transparent,
            )),
            _ => Ok(Analysis::NotAWrapper),
        },
        "eval" => eval(args),
        // `source /dev/stdin <<< '…'` runs what it is fed, as `eval` runs its words.
        "source" | "." => Ok(match args.first() {
            Some(file) if names_stdin(file) => Analysis::ReadsStdin {
                runner: base.to_owned(),
                transparency: Transparency::Transparent,
            },
            _ => Analysis::NotAWrapper,
        }),
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "yash" | "posh" => {
            shell(base, args)
        }
        "trap" => trap(args),
        "at" | "batch" => at(base, args),
        "watch" => watch(args),
        "tmux" => multiplexers::tmux_analyse(args),
        "screen" => multiplexers::screen_analyse(args),
        "parallel" => parallel(args),
        "entr" => entr(args),
        "npx" => npx(args),
        // `npm exec` and `npm x` are `npx`; npm's own options before them ask.
        "npm" => match args.first().and_then(Word::literal) {
            Some("exec" | "x") => npx(&args[1..]),
            Some(first)
                if first.starts_with('-')
                    && args
                        .iter()
                        .any(|w| matches!(w.literal(), Some("exec" | "x"))) =>
            {
                Err(unknown("npm", first))
            }
            _ => Ok(Analysis::NotAWrapper),
        },
        "flock" => flock(args),
        "su" | "runuser" => switch_user(base, args),
        "sg" => sg(args),
        "script" => script(args),
        "strace" => strace(args),
        "faketime" => faketime(args),
        _ if is_python(base) => python_module(base, args),
        "uv" | "poetry" | "pipenv" | "pdm" | "bundle" | "pnpm" | "conda" | "mise" => {
            launcher(base, args)
        }
        _ => match PREFIXES.iter().find(|p| p.name == base) {
            Some(wrapper) => wrapper.analyse(args),
            None => Ok(Analysis::NotAWrapper),
        },
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

/// Operands a [`Prefix`] wrapper takes before the command.
#[derive(Clone, Copy)]
enum Leading {
    None,
    /// One operand (`taskset MASK`, `chroot NEWROOT`, `faketime TIMESTAMP`).
    One,
    /// A priority that may be left out (`chrt [PRIORITY] command`): skipped when it is a
    /// number.
    Number,
}

/// A wrapper of the form `wrapper [options] [leading operand] command args…`, described by
/// its manual page's options.
struct Prefix {
    name: &'static str,
    options: OptionSpec,
    leading: Leading,
    /// Options with which it runs no command but acts on a process (`ionice -p PID`).
    inspecting: &'static [&'static str],
    transparency: Transparency,
}

impl Prefix {
    fn analyse(&self, args: &[Word]) -> Outcome {
        let scanned = scan_options(self.name, args, &self.options)?;
        if scanned.has(self.inspecting) {
            return Ok(Analysis::NotAWrapper);
        }
        let mut rest = &args[scanned.operands..];
        match self.leading {
            Leading::None => {}
            Leading::One => match rest.split_first() {
                Some((first, tail)) if first.literal().is_some() => rest = tail,
                Some(_) => return Err(malformed(self.name)),
                None => return Ok(Analysis::NotAWrapper),
            },
            Leading::Number => {
                if let Some((first, tail)) = rest.split_first() {
                    match first.literal() {
                        // Read as `strtol` reads it: white space before the number.
                        Some(text) if text.trim_start().parse::<u32>().is_ok() => rest = tail,
                        Some(_) => {}
                        None => return Err(malformed(self.name)),
                    }
                }
            }
        }
        Ok(wraps(
            self.name,
            rest.to_vec(),
            Vec::new(),
            self.transparency,
        ))
    }
}

/// Wrappers of the form `wrapper [options] command args…`. Transparent ones only change how
/// the command is scheduled or buffered; runners change who runs it, where, or what it can
/// reach (another root, namespaces, a proxy, a privileged user).
const PREFIXES: &[Prefix] = &[
    Prefix {
        name: "builtin",
        options: OptionSpec::NONE,
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Transparent,
    },
    Prefix {
        name: "exec",
        options: OptionSpec {
            short_flags: "cl",
            short_with_arg: "a",
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Transparent,
    },
    Prefix {
        name: "nohup",
        options: OptionSpec::NONE,
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Transparent,
    },
    Prefix {
        name: "nice",
        options: OptionSpec {
            short_with_arg: "n",
            long_with_arg: &["adjustment"],
            numeric_short: true,
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Transparent,
    },
    Prefix {
        name: "stdbuf",
        options: OptionSpec {
            short_with_arg: "ioe",
            long_with_arg: &["input", "output", "error"],
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Transparent,
    },
    Prefix {
        name: "ionice",
        options: OptionSpec {
            short_flags: "t",
            short_with_arg: "cnpPu",
            long_flags: &["ignore"],
            long_with_arg: &["class", "classdata", "pid", "pgid", "uid"],
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &["-p", "--pid", "-P", "--pgid", "-u", "--uid"],
        transparency: Transparency::Transparent,
    },
    Prefix {
        name: "taskset",
        options: OptionSpec {
            short_flags: "acp",
            long_flags: &["all-tasks", "cpu-list", "pid"],
            ..OptionSpec::NONE
        },
        leading: Leading::One,
        inspecting: &["-p", "--pid"],
        transparency: Transparency::Transparent,
    },
    Prefix {
        name: "chrt",
        options: OptionSpec {
            short_flags: "abdefimoprRv",
            short_with_arg: "TPD",
            long_flags: &[
                "all-tasks",
                "batch",
                "deadline",
                "ext",
                "fifo",
                "idle",
                "max",
                "other",
                "pid",
                "rr",
                "reset-on-fork",
                "verbose",
            ],
            long_with_arg: &["sched-runtime", "sched-period", "sched-deadline"],
            ..OptionSpec::NONE
        },
        leading: Leading::Number,
        inspecting: &["-p", "--pid", "-m", "--max"],
        transparency: Transparency::Transparent,
    },
    Prefix {
        name: "numactl",
        options: OptionSpec {
            short_flags: "alsHb",
            short_with_arg: "imNCpPw",
            long_flags: &["all", "localalloc", "show", "hardware", "balancing"],
            long_with_arg: &[
                "interleave",
                "membind",
                "cpunodebind",
                "physcpubind",
                "preferred",
                "preferred-many",
                "weighted-interleave",
            ],
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &["-s", "--show", "-H", "--hardware"],
        transparency: Transparency::Transparent,
    },
    Prefix {
        name: "prlimit",
        options: OptionSpec {
            short_with_arg: "po",
            short_optional_arg: "cdefilmnqrstuvxy",
            long_flags: &["noheadings", "raw", "verbose"],
            long_with_arg: &["pid", "output"],
            long_optional_arg: &[
                "core",
                "data",
                "nice",
                "fsize",
                "sigpending",
                "memlock",
                "rss",
                "nofile",
                "msgqueue",
                "rtprio",
                "stack",
                "cpu",
                "nproc",
                "as",
                "locks",
                "rttime",
            ],
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &["-p", "--pid"],
        transparency: Transparency::Transparent,
    },
    Prefix {
        name: "caffeinate",
        options: OptionSpec {
            short_flags: "disum",
            short_with_arg: "tw",
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Transparent,
    },
    Prefix {
        name: "unbuffer",
        options: OptionSpec {
            short_flags: "p",
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Transparent,
    },
    Prefix {
        name: "catchsegv",
        options: OptionSpec::NONE,
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Transparent,
    },
    // Runners that run a command under a tool of their own (its files, its environment):
    // the runner must be allowed itself, and deny rules see what it runs.
    Prefix {
        name: "fakeroot",
        options: OptionSpec {
            short_flags: "uhvb",
            short_with_arg: "lis",
            long_flags: &["unknown-is-real", "help", "version"],
            long_with_arg: &["lib", "faked", "fd-base"],
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Runner,
    },
    Prefix {
        name: "chronic",
        options: OptionSpec {
            short_flags: "ev",
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Runner,
    },
    Prefix {
        name: "ifne",
        options: OptionSpec {
            short_flags: "n",
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Runner,
    },
    Prefix {
        name: "cgexec",
        options: OptionSpec {
            short_flags: "h",
            short_with_arg: "g",
            long_flags: &["sticky"],
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Runner,
    },
    Prefix {
        name: "dbus-run-session",
        options: OptionSpec {
            long_with_arg: &["config-file", "dbus-daemon"],
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Runner,
    },
    Prefix {
        name: "ltrace",
        options: OptionSpec {
            short_flags: "LbcCfhirStTV",
            short_with_arg: "eopsunaADFlwx",
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &["-p"],
        transparency: Transparency::Runner,
    },
    Prefix {
        name: "valgrind",
        options: OptionSpec {
            short_flags: "qv",
            long_flags: &["quiet", "verbose"],
            long_with_arg: &[
                "tool",
                "leak-check",
                "show-leak-kinds",
                "track-origins",
                "trace-children",
                "error-exitcode",
                "num-callers",
                "log-file",
                "log-fd",
                "suppressions",
                "gen-suppressions",
                "xml",
                "xml-file",
            ],
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Runner,
    },
    Prefix {
        name: "ssh-agent",
        options: OptionSpec {
            short_flags: "cDdsk",
            short_with_arg: "aEOPt",
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &["-k"],
        transparency: Transparency::Transparent,
    },
    Prefix {
        name: "doas",
        options: OptionSpec {
            short_flags: "nsL",
            short_with_arg: "uC",
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Runner,
    },
    Prefix {
        name: "pkexec",
        options: OptionSpec {
            long_flags: &["disable-internal-agent", "keep-cwd"],
            long_with_arg: &["user"],
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Runner,
    },
    Prefix {
        name: "setsid",
        options: OptionSpec {
            short_flags: "cfw",
            long_flags: &["ctty", "fork", "wait"],
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Runner,
    },
    Prefix {
        name: "chroot",
        options: OptionSpec {
            long_flags: &["skip-chdir"],
            long_with_arg: &["userspec", "groups"],
            ..OptionSpec::NONE
        },
        leading: Leading::One,
        inspecting: &[],
        transparency: Transparency::Runner,
    },
    Prefix {
        name: "unshare",
        options: OptionSpec {
            short_flags: "frcl",
            short_with_arg: "RwSG",
            short_optional_arg: "muinpUCT",
            long_flags: &["fork", "map-root-user", "map-current-user", "map-auto"],
            long_with_arg: &[
                "root",
                "wd",
                "setuid",
                "setgid",
                "propagation",
                "setgroups",
                "map-user",
                "map-group",
                "map-users",
                "map-groups",
                "monotonic",
                "boottime",
            ],
            long_optional_arg: &[
                "mount",
                "uts",
                "ipc",
                "net",
                "pid",
                "user",
                "cgroup",
                "time",
                "kill-child",
                "mount-proc",
            ],
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Runner,
    },
    Prefix {
        name: "nsenter",
        options: OptionSpec {
            short_flags: "aFWZ",
            short_with_arg: "tSG",
            short_optional_arg: "muinpUCTrw",
            long_flags: &["all", "no-fork", "preserve-credentials", "follow-context"],
            long_with_arg: &["target", "setuid", "setgid"],
            long_optional_arg: &[
                "mount", "uts", "ipc", "net", "pid", "user", "cgroup", "time", "root", "wd",
            ],
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Runner,
    },
    Prefix {
        name: "setpriv",
        options: OptionSpec {
            long_flags: &[
                "clear-groups",
                "keep-groups",
                "init-groups",
                "reset-env",
                "no-new-privs",
            ],
            long_with_arg: &[
                "reuid",
                "regid",
                "ruid",
                "euid",
                "rgid",
                "egid",
                "groups",
                "inh-caps",
                "ambient-caps",
                "bounding-set",
                "securebits",
                "pdeathsig",
                "selinux-label",
                "apparmor-profile",
            ],
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Runner,
    },
    Prefix {
        name: "systemd-run",
        options: OptionSpec {
            short_flags: "rqtPGSd",
            short_with_arg: "HMupE",
            long_flags: &[
                "user",
                "system",
                "scope",
                "remain-after-exit",
                "quiet",
                "pty",
                "pipe",
                "collect",
                "shell",
                "same-dir",
                "no-block",
                "wait",
                "no-ask-password",
                "send-sighup",
            ],
            long_with_arg: &[
                "host",
                "machine",
                "unit",
                "property",
                "description",
                "slice",
                "uid",
                "gid",
                "nice",
                "working-directory",
                "setenv",
                "service-type",
                "on-active",
                "on-boot",
                "on-startup",
                "on-unit-active",
                "on-unit-inactive",
                "on-calendar",
            ],
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Runner,
    },
    Prefix {
        name: "torsocks",
        options: OptionSpec {
            short_flags: "idq",
            short_with_arg: "upaP",
            long_flags: &["isolate", "debug", "quiet"],
            long_with_arg: &["user", "pass", "address", "port"],
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Runner,
    },
    Prefix {
        name: "proxychains",
        options: OptionSpec {
            short_flags: "q",
            short_with_arg: "f",
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Runner,
    },
    // Runs a command under a virtual X server; `-e FILE` writes the server's errors.
    Prefix {
        name: "xvfb-run",
        options: OptionSpec {
            short_flags: "adl",
            short_with_arg: "efnpsw",
            long_flags: &["auto-servernum", "auto-display", "listen-tcp"],
            long_with_arg: &[
                "error-file",
                "auth-file",
                "server-num",
                "xauth-protocol",
                "server-args",
                "wait",
            ],
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Runner,
    },
    Prefix {
        name: "dbus-launch",
        options: OptionSpec {
            long_flags: &[
                "sh-syntax",
                "csh-syntax",
                "auto-syntax",
                "binary-syntax",
                "close-stderr",
                "exit-with-session",
                "exit-with-x11",
            ],
            long_with_arg: &["config-file", "autolaunch"],
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Runner,
    },
    // A sandbox whose profile decides what the command may reach; an option not listed
    // here asks.
    Prefix {
        name: "firejail",
        options: OptionSpec {
            long_flags: &[
                "quiet",
                "noprofile",
                "private",
                "private-tmp",
                "private-dev",
                "noroot",
                "nosound",
                "novideo",
                "no3d",
                "nonewprivs",
                "seccomp",
            ],
            long_with_arg: &[
                "net",
                "profile",
                "whitelist",
                "blacklist",
                "read-only",
                "name",
                "caps.drop",
            ],
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Runner,
    },
    Prefix {
        name: "proxychains4",
        options: OptionSpec {
            short_flags: "q",
            short_with_arg: "f",
            ..OptionSpec::NONE
        },
        leading: Leading::None,
        inspecting: &[],
        transparency: Transparency::Runner,
    },
];

/// Reads options anywhere among the words, as GNU `getopt` does unless told otherwise
/// (`su root -c CMD`); the operands are returned in order. Stops at `--`.
fn scan_permuted<'w>(
    wrapper: &str,
    words: &'w [Word],
    spec: &OptionSpec,
) -> Result<(Scanned, Vec<&'w Word>), UnresolvedReason> {
    let mut options = Vec::new();
    let mut operands = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let scanned = scan_options(wrapper, &words[i..], spec)?;
        options.extend(scanned.options);
        i += scanned.operands;
        if scanned.ended_by_dashes {
            operands.extend(&words[i..]);
            break;
        }
        if let Some(operand) = words.get(i) {
            operands.push(operand);
            i += 1;
        }
    }
    let scanned = Scanned {
        options,
        operands: 0,
        ended_by_dashes: true,
    };
    Ok((scanned, operands))
}

/// `watch [options] command…`: the words are joined with spaces and run by `sh -c`, or run
/// as they are with `-x`.
fn watch(args: &[Word]) -> Outcome {
    let spec = OptionSpec {
        short_flags: "bcCegprtwx",
        short_with_arg: "nq",
        short_optional_arg: "d",
        long_flags: &[
            "beep", "color", "no-color", "errexit", "chgexit", "precise", "no-rerun", "no-title",
            "no-wrap", "exec",
        ],
        long_with_arg: &["interval", "equexit"],
        long_optional_arg: &["differences"],
        ..OptionSpec::NONE
    };
    let scanned = scan_options("watch", args, &spec)?;
    let words = &args[scanned.operands..];
    if words.is_empty() {
        return Ok(Analysis::NotAWrapper);
    }
    if scanned.has(&["-x", "--exec"]) {
        return Ok(wraps(
            "watch",
            words.to_vec(),
            Vec::new(),
            Transparency::Transparent,
        ));
    }
    Ok(Analysis::Script {
        runner: "watch".to_owned(),
        script: literal_script("watch", words)?,
        transparency: Transparency::Transparent,
    })
}

/// How many commands `parallel` may be judged as: one per combination of its arguments.
const MAX_PARALLEL_JOBS: usize = 64;

/// `parallel [options] [command [args…]] ::: arguments…`: GNU parallel runs the command
/// through the shell once for each argument (or combination of arguments from several
/// `:::` sources), with the argument quoted in place of `{}` or appended. Arguments it reads
/// at run time (standard input, `::::` and `-a` files), other replacement strings
/// (`{.}`, `{1}`, `{= … =}`), remote hosts and result files ask.
fn parallel(args: &[Word]) -> Outcome {
    let spec = OptionSpec {
        short_flags: "0kqvXmurt",
        short_with_arg: "jPnNdE",
        long_flags: &[
            "null",
            "keep-order",
            "quote",
            "verbose",
            "dry-run",
            "xargs",
            "ungroup",
            "group",
            "line-buffer",
            "lb",
            "bar",
            "progress",
            "eta",
            "tag",
            "no-notice",
            "will-cite",
            "shuf",
            "no-run-if-empty",
            "pipe",
            "halt-on-error",
        ],
        long_with_arg: &[
            "jobs",
            "max-procs",
            "max-args",
            "delimiter",
            "halt",
            "timeout",
            "retries",
            "delay",
            "memfree",
            "load",
            "nice",
            "block",
            "block-size",
        ],
        ..OptionSpec::NONE
    };
    let scanned = scan_options("parallel", args, &spec)?;
    let mut words = Vec::new();
    for word in &args[scanned.operands..] {
        words.push(
            word.literal()
                .ok_or_else(|| UnresolvedReason::DynamicScript {
                    runner: "parallel".to_owned(),
                })?,
        );
    }
    let template_end = words
        .iter()
        .position(|w| w.starts_with(":::"))
        .unwrap_or(words.len());
    let (template, sources) = words.split_at(template_end);
    if scanned.has(&["--pipe"]) {
        // The input is given to the command on its standard input.
        return match (template, sources) {
            ([], _) | (_, [_, ..]) => Err(malformed("parallel")),
            _ => Ok(Analysis::Script {
                runner: "parallel".to_owned(),
                script: template.join(" "),
                transparency: Transparency::Transparent,
            }),
        };
    }
    // The argument sources, each a list of literal arguments.
    let mut groups: Vec<Vec<&str>> = Vec::new();
    for word in sources {
        match *word {
            ":::" => groups.push(Vec::new()),
            // `::::` reads files; `:::+` and `::::+` pair sources up.
            _ if word.starts_with(":::") => return Err(malformed("parallel")),
            argument => match groups.last_mut() {
                Some(group) => group.push(argument),
                None => return Err(malformed("parallel")),
            },
        }
    }
    let placeholder = |w: &&str| w.contains('{') && w.contains('}');
    let substitutes = template.iter().any(|w| w.contains("{}"));
    if groups.is_empty()
        || template
            .iter()
            .any(|w| placeholder(&w.replace("{}", "").as_str()))
    {
        // Arguments read at run time, or a replacement string not modelled here.
        return Err(malformed("parallel"));
    }
    let mut jobs: Vec<Vec<&str>> = vec![Vec::new()];
    for group in &groups {
        if jobs.len() * group.len() > MAX_PARALLEL_JOBS {
            return Err(malformed("parallel"));
        }
        jobs = jobs
            .iter()
            .flat_map(|job| {
                group.iter().map(move |argument| {
                    let mut job = job.clone();
                    job.push(argument);
                    job
                })
            })
            .collect();
    }
    let quote_command = scanned.has(&["-q", "--quote"]);
    let inners = jobs
        .iter()
        .map(|job| {
            // Without a command, the arguments are the command.
            let script = if template.is_empty() {
                job.join(" ")
            } else {
                let arguments = job
                    .iter()
                    .map(|a| super::single_quoted(a))
                    .collect::<Vec<_>>()
                    .join(" ");
                let mut command: Vec<String> = template
                    .iter()
                    .map(|w| {
                        if quote_command {
                            super::single_quoted(w)
                        } else {
                            (*w).to_owned()
                        }
                    })
                    .map(|w| w.replace("{}", &arguments))
                    .collect();
                if !substitutes {
                    command.push(arguments);
                }
                command.join(" ")
            };
            Inner {
                words: ["sh", "-c", script.as_str()]
                    .iter()
                    .map(|w| Word::literal_from(w, w))
                    .collect(),
                assignments: Vec::new(),
            }
        })
        .collect();
    Ok(Analysis::Wraps {
        wrapper: "parallel".to_owned(),
        inners,
        transparency: Transparency::Transparent,
    })
}

/// `entr [-acdnprsz] utility [args…]`: runs the utility whenever a file it watches changes,
/// with `/_` standing for the file that changed; with `-s` the utility is a script run by
/// the shell.
fn entr(args: &[Word]) -> Outcome {
    let spec = OptionSpec {
        short_flags: "acdnprsz",
        ..OptionSpec::NONE
    };
    let scanned = scan_options("entr", args, &spec)?;
    let words = &args[scanned.operands..];
    if scanned.has(&["-s"]) {
        return match words {
            [script] => option_script("entr", script.literal(), Transparency::Transparent),
            _ => Err(malformed("entr")),
        };
    }
    let words = words
        .iter()
        .map(|word| match word.literal() {
            Some("/_") => Word::dynamic(&word.raw, Expansion::RuntimeArguments),
            _ => word.clone(),
        })
        .collect();
    Ok(wraps("entr", words, Vec::new(), Transparency::Transparent))
}

/// `npx [options] [--] package[@version] [args…]` and `npx -c 'script'`: npm runs a
/// package's program (fetching the package when the project does not have it) or a script
/// in the shell, with the project's programs on its path. A launcher: an allow of `npx`
/// covers what it runs, which deny and ask rules still see.
fn npx(args: &[Word]) -> Outcome {
    let spec = OptionSpec {
        short_flags: "yq",
        short_with_arg: "pcw",
        long_flags: &[
            "yes",
            "no",
            "quiet",
            "silent",
            "offline",
            "prefer-offline",
            "prefer-online",
            "ignore-scripts",
            "workspaces",
            "include-workspace-root",
        ],
        long_with_arg: &["package", "call", "workspace", "loglevel"],
        ..OptionSpec::NONE
    };
    let scanned = scan_options("npx", args, &spec)?;
    if let Some((_, script)) = scanned.last(&["-c", "--call"]) {
        return option_script("npx", script, Transparency::Launcher);
    }
    let mut words = args[scanned.operands..].to_vec();
    if let Some(program) = words.first().and_then(Word::literal) {
        // `eslint@9` runs `eslint`; a scoped package keeps its leading `@`.
        if let Some((name, _version)) = program
            .rsplit_once('@')
            .filter(|(name, _)| !name.is_empty())
        {
            words[0] = Word::literal_from(name, name);
        }
    }
    Ok(wraps("npx", words, Vec::new(), Transparency::Launcher))
}

/// `flock [options] FILE command…`, `flock [options] FILE -c script`, `flock [options] FD`.
/// The lock file is created when it is missing, so `flock` is a runner.
fn flock(args: &[Word]) -> Outcome {
    let spec = OptionSpec {
        short_flags: "sexnouFhV",
        short_with_arg: "wEc",
        long_flags: &[
            "shared",
            "exclusive",
            "unlock",
            "nonblock",
            "nb",
            "close",
            "no-fork",
            "verbose",
        ],
        long_with_arg: &["timeout", "wait", "conflict-exit-code", "command"],
        ..OptionSpec::NONE
    };
    let scanned = scan_options("flock", args, &spec)?;
    let Some((_file, rest)) = args[scanned.operands..].split_first() else {
        return Ok(Analysis::NotAWrapper);
    };
    let command = match rest.first().and_then(Word::literal) {
        Some("-c" | "--command") => Some(rest.get(1).ok_or_else(|| malformed("flock"))?),
        _ => None,
    };
    if let Some(script) = command {
        return Ok(Analysis::Script {
            runner: "flock".to_owned(),
            script: literal_script("flock", std::slice::from_ref(script))?,
            transparency: Transparency::Runner,
        });
    }
    if let Some((_, script)) = scanned.last(&["-c", "--command"]) {
        // `-c` before the file: GNU flock rejects it, but a script is a script.
        return option_script("flock", script, Transparency::Runner);
    }
    Ok(wraps(
        "flock",
        rest.to_vec(),
        Vec::new(),
        Transparency::Runner,
    ))
}

/// `su [options] [-] [user [args…]]` and `runuser`: `-c script` runs a script in the user's
/// shell; `runuser -u user command…` runs a command. Options may come after the user.
fn switch_user(runner: &str, args: &[Word]) -> Outcome {
    let spec = OptionSpec {
        short_flags: "flmpPT",
        short_with_arg: "cgGswu",
        long_flags: &["fast", "login", "preserve-environment", "pty"],
        long_with_arg: &[
            "command",
            "session-command",
            "group",
            "supp-group",
            "shell",
            "whitelist-environment",
            "user",
        ],
        ..OptionSpec::NONE
    };
    if runner == "runuser" {
        let scanned = scan_options(runner, args, &spec)?;
        if scanned.has(&["-u", "--user"]) && !scanned.has(&["-c", "--command"]) {
            return Ok(wraps(
                runner,
                args[scanned.operands..].to_vec(),
                Vec::new(),
                Transparency::Runner,
            ));
        }
    }
    let (scanned, operands) = scan_permuted(runner, args, &spec)?;
    if scanned.has(&["-s", "--shell"]) {
        // Another shell reads the script, with its own start-up files.
        return Err(unknown(runner, "--shell"));
    }
    let mut operands = operands.as_slice();
    if operands.first().and_then(|w| w.literal()) == Some("-") {
        operands = &operands[1..];
    }
    let script = scanned
        .last(&["-c", "--command", "--session-command"])
        .map(|(_, script)| option_script(runner, script, Transparency::Runner))
        .transpose()?;
    if operands.len() > 1 {
        // The operands after the user are given to the user's shell; with `-c` they are the
        // script's own arguments, among which a second `-c` is not told apart here.
        return Err(malformed(runner));
    }
    Ok(script.unwrap_or(Analysis::NotAWrapper))
}

/// The script an option gives (`-c SCRIPT`), run by `runner`; one given by an expansion
/// cannot be judged.
fn option_script(runner: &str, script: Option<&str>, transparency: Transparency) -> Outcome {
    let script = script.ok_or_else(|| UnresolvedReason::DynamicScript {
        runner: runner.to_owned(),
    })?;
    Ok(Analysis::Script {
        runner: runner.to_owned(),
        script: script.to_owned(),
        transparency,
    })
}

/// `sg [-] [group [-c] command]`: the command is run by `sh -c`.
fn sg(args: &[Word]) -> Outcome {
    let mut rest = args;
    if rest.first().and_then(Word::literal) == Some("-") {
        rest = &rest[1..];
    }
    let Some((_group, rest)) = rest.split_first() else {
        return Ok(Analysis::NotAWrapper);
    };
    let rest = match rest.first().and_then(Word::literal) {
        Some("-c") => &rest[1..],
        _ => rest,
    };
    if rest.is_empty() {
        return Ok(Analysis::NotAWrapper);
    }
    Ok(Analysis::Script {
        runner: "sg".to_owned(),
        script: literal_script("sg", rest)?,
        transparency: Transparency::Runner,
    })
}

/// `script [options] [file]`: `-c script` runs a script in a shell, and the session is
/// written to the file (`typescript` by default), so `script` is a runner. Without `-c` it
/// starts an interactive shell. BSD `script` takes a command after the file.
fn script(args: &[Word]) -> Outcome {
    let spec = OptionSpec {
        short_flags: "aefqhV",
        short_with_arg: "cBIOTmoE",
        short_optional_arg: "t",
        long_flags: &["append", "return", "flush", "force", "quiet"],
        long_with_arg: &[
            "command",
            "log-io",
            "log-in",
            "log-out",
            "log-timing",
            "logging-format",
            "output-limit",
            "echo",
        ],
        long_optional_arg: &["timing"],
        ..OptionSpec::NONE
    };
    let (scanned, operands) = scan_permuted("script", args, &spec)?;
    if operands.len() > 1 {
        return Err(malformed("script"));
    }
    match scanned.last(&["-c", "--command"]) {
        Some((_, script)) => option_script("script", script, Transparency::Runner),
        None => Ok(Analysis::NotAWrapper),
    }
}

/// Launchers that run a command in a project's environment (`uv run`, `poetry run`,
/// `pipenv run`, `pdm run`, `bundle exec`, `pnpm exec`, `conda run`, `mise exec`): what they
/// run is judged by deny and ask rules, and an allow of the launcher covers it. Their other
/// subcommands run nothing seen here; a launcher's own option before its subcommand, or one
/// that is not listed, asks.
fn launcher(program: &str, args: &[Word]) -> Outcome {
    let subcommands: &[&str] = match program {
        "bundle" => &["exec"],
        "pnpm" => &["exec", "dlx"],
        "mise" => &["exec", "x"],
        _ => &["run"],
    };
    let Some((first, rest)) = args.split_first() else {
        return Ok(Analysis::NotAWrapper);
    };
    let Some(first) = first.literal() else {
        return Err(malformed(program));
    };
    if !subcommands.contains(&first) {
        let launches_later = args
            .iter()
            .any(|w| w.literal().is_some_and(|t| subcommands.contains(&t)));
        return if first.starts_with('-') && launches_later {
            Err(unknown(program, first))
        } else {
            Ok(Analysis::NotAWrapper)
        };
    }
    let spec = match program {
        "uv" => OptionSpec {
            short_flags: "qvnUs",
            short_with_arg: "pPfCim",
            long_flags: &[
                "no-project",
                "isolated",
                "no-sync",
                "locked",
                "frozen",
                "no-dev",
                "dev",
                "all-extras",
                "no-default-groups",
                "all-groups",
                "only-dev",
                "no-editable",
                "exact",
                "active",
                "no-active",
                "script",
                "gui-script",
                "offline",
                "no-cache",
                "refresh",
                "upgrade",
                "reinstall",
                "compile-bytecode",
                "no-build",
                "no-binary",
                "no-build-isolation",
                "no-progress",
                "no-config",
                "no-env-file",
                "no-python-downloads",
                "managed-python",
                "no-managed-python",
                "preview",
                "quiet",
                "verbose",
                "native-tls",
                "no-sources",
                "all-packages",
            ],
            long_with_arg: &[
                "with",
                "with-editable",
                "with-requirements",
                "extra",
                "group",
                "only-group",
                "no-group",
                "package",
                "python",
                "env-file",
                "directory",
                "project",
                "index",
                "index-url",
                "default-index",
                "extra-index-url",
                "find-links",
                "upgrade-package",
                "reinstall-package",
                "refresh-package",
                "index-strategy",
                "keyring-provider",
                "resolution",
                "prerelease",
                "exclude-newer",
                "link-mode",
                "config-setting",
                "python-platform",
                "cache-dir",
                "config-file",
                "color",
                "allow-insecure-host",
                "module",
            ],
            ..OptionSpec::NONE
        },
        "poetry" => OptionSpec {
            short_flags: "qvn",
            short_with_arg: "CP",
            long_flags: &[
                "quiet",
                "verbose",
                "no-interaction",
                "ansi",
                "no-ansi",
                "no-plugins",
                "no-cache",
            ],
            long_with_arg: &["directory", "project"],
            ..OptionSpec::NONE
        },
        "pdm" => OptionSpec {
            short_flags: "sgvq",
            short_with_arg: "p",
            long_flags: &["site-packages", "recreate", "global", "verbose", "quiet"],
            long_with_arg: &["project", "venv"],
            ..OptionSpec::NONE
        },
        "bundle" => OptionSpec {
            long_flags: &["keep-file-descriptors"],
            long_with_arg: &["gemfile"],
            ..OptionSpec::NONE
        },
        "pnpm" => OptionSpec {
            short_flags: "rcw",
            short_with_arg: "C",
            long_flags: &[
                "recursive",
                "parallel",
                "shell-mode",
                "workspace-root",
                "report-summary",
            ],
            long_with_arg: &["filter", "dir", "resume-from"],
            ..OptionSpec::NONE
        },
        "conda" => OptionSpec {
            short_flags: "v",
            short_with_arg: "np",
            long_flags: &[
                "no-capture-output",
                "live-stream",
                "dev",
                "debug-wrapper-scripts",
            ],
            long_with_arg: &["name", "prefix", "cwd"],
            ..OptionSpec::NONE
        },
        "mise" => OptionSpec {
            short_with_arg: "Cjc",
            long_flags: &["raw", "fresh-env"],
            long_with_arg: &["cd", "jobs", "command"],
            ..OptionSpec::NONE
        },
        _ => OptionSpec::NONE,
    };
    let name = format!("{program} {first}");
    let scanned = scan_options(&name, rest, &spec)?;
    let mut words = rest[scanned.operands..].to_vec();
    let shell_text = match program {
        "pnpm" => scanned.has(&["-c", "--shell-mode"]),
        "mise" => scanned.has(&["-c", "--command"]),
        _ => false,
    };
    if program == "mise" {
        if let Some((_, script)) = scanned.last(&["-c", "--command"]) {
            return option_script(&name, script, Transparency::Launcher);
        }
        // `mise exec TOOL@VERSION… -- command…`: the command follows `--`.
        if !scanned.ended_by_dashes {
            let dashes = words.iter().position(|w| w.literal() == Some("--"));
            match dashes {
                Some(at) => words = words[at + 1..].to_vec(),
                None if words.is_empty() => return Ok(Analysis::NotAWrapper),
                None => return Err(malformed(&name)),
            }
        }
    }
    if shell_text {
        return Ok(Analysis::Script {
            script: literal_script(&name, &words)?,
            runner: name,
            transparency: Transparency::Launcher,
        });
    }
    if let Some((_, module)) = scanned.last(&["-m", "--module"]) {
        // `uv run -m MODULE args…` runs `python -m MODULE args…`.
        let module = module.ok_or_else(|| malformed(&name))?;
        let mut python = vec![
            Word::literal_from("python", "python"),
            Word::literal_from("-m", "-m"),
            Word::literal_from(module, module),
        ];
        python.extend(words);
        words = python;
    }
    Ok(wraps(&name, words, Vec::new(), Transparency::Launcher))
}

/// Whether `base` names a Python interpreter (`python`, `python3`, `python3.12`).
fn is_python(base: &str) -> bool {
    base.strip_prefix("python")
        .is_some_and(|version| version.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// `python [options] -m MODULE args…` runs the module as a program (`python3 -m pytest -x`
/// is `pytest -x`): a launcher of it, so the command table judges the module's options and
/// files. Python's own options before `-m` are flags (`-B`, `-u`, clustered as `-Bu`) and
/// `-W`/`-X` with a value; any other (`-c`, a script) leaves it no wrapper, and an unknown
/// option asks.
fn python_module(base: &str, args: &[Word]) -> Outcome {
    const FLAGS: &str = "bBdEiIOPqsSuvV";
    let mut rest = args;
    while let Some((first, tail)) = rest.split_first() {
        let Some(text) = first.literal() else {
            return Err(malformed(base));
        };
        let Some(cluster) = text.strip_prefix('-').filter(|c| !c.is_empty()) else {
            // A script (or nothing known): not a module run.
            return Ok(Analysis::NotAWrapper);
        };
        // Prints and exits before anything runs.
        if matches!(text, "--version" | "--help") {
            return Ok(Analysis::NotAWrapper);
        }
        rest = tail;
        for (at, letter) in cluster.char_indices() {
            let attached = &cluster[at + letter.len_utf8()..];
            match letter {
                _ if FLAGS.contains(letter) => continue,
                'W' | 'X' => {
                    if attached.is_empty() {
                        rest = rest.get(1..).ok_or_else(|| malformed(base))?;
                    }
                    break;
                }
                'm' => {
                    let (module, inner) = if attached.is_empty() {
                        let (module, inner) = rest.split_first().ok_or_else(|| malformed(base))?;
                        (module.clone(), inner)
                    } else {
                        (Word::literal_from(attached, attached), rest)
                    };
                    let mut words = vec![module];
                    words.extend(inner.iter().cloned());
                    return Ok(wraps(
                        &format!("{base} -m"),
                        words,
                        Vec::new(),
                        Transparency::Launcher,
                    ));
                }
                'c' => return Ok(Analysis::NotAWrapper),
                _ => return Err(unknown(base, text)),
            }
        }
    }
    Ok(Analysis::NotAWrapper)
}

/// `faketime [-m] [-f] [--exclude-monotonic] [--disable-shm] TIMESTAMP command…`: its options
/// are compared whole, one a word, with no `--` (`faketime -- cat x` runs `cat` at the time
/// `--`); anything else that looks like an option asks.
fn faketime(args: &[Word]) -> Outcome {
    let mut rest = args;
    while let Some((first, tail)) = rest.split_first() {
        match first.literal() {
            Some("-m" | "-f" | "--exclude-monotonic" | "--disable-shm") => rest = tail,
            Some(text) if text.starts_with('-') => return Err(unknown("faketime", text)),
            Some(_) => break,
            None => return Err(malformed("faketime")),
        }
    }
    match rest.split_first() {
        Some((_timestamp, command)) => Ok(wraps(
            "faketime",
            command.to_vec(),
            Vec::new(),
            Transparency::Transparent,
        )),
        None => Ok(Analysis::NotAWrapper),
    }
}

/// `strace [options] command…`: a runner (it can write its log anywhere with `-o`, and
/// `-o '|cmd'` pipes the log to a command).
fn strace(args: &[Word]) -> Outcome {
    let spec = OptionSpec {
        short_flags: "cCdDfFhiknqrtTvVwxyzZ",
        short_with_arg: "abeEIoOpPsSuUX",
        ..OptionSpec::NONE
    };
    let scanned = scan_options("strace", args, &spec)?;
    if let Some((_, output)) = scanned.last(&["-o"]) {
        match output {
            Some(file) if !file.starts_with(['|', '!']) => {}
            _ => return Err(unknown("strace", "-o")),
        }
    }
    Ok(wraps(
        "strace",
        args[scanned.operands..].to_vec(),
        Vec::new(),
        Transparency::Runner,
    ))
}

/// `NAME=value` as `env` and `sudo` read it (the name must be a valid variable name).
fn as_assignment(word: &Word) -> Option<EnvAssignment> {
    let (name, value) = word.raw.split_once('=')?;
    if !is_variable_name(name) {
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
        ..OptionSpec::NONE
    };
    let scanned = scan_options("env", args, &spec)?;
    let split = ["-S", "--split-string"];
    if scanned.has(&split) {
        // `-S STRING` splits the string into arguments (its own quotes, `\` escapes,
        // `${VAR}`, `#` comments) that take its place: read here when it is the last option
        // and holds no escape or variable, else not judged.
        let last = scanned
            .options
            .last()
            .filter(|(name, _)| split.contains(&name.as_str()));
        let words = last
            .filter(|_| {
                scanned
                    .options
                    .iter()
                    .filter(|(n, _)| split.contains(&n.as_str()))
                    .count()
                    == 1
            })
            .and_then(|(_, value)| split_string(value.as_deref()?))
            .ok_or_else(|| unknown("env", "-S"))?;
        let mut rest: Vec<Word> = words
            .iter()
            .map(|word| Word::literal_from(&super::shell_word(word), word))
            .collect();
        rest.extend(args[scanned.operands..].iter().cloned());
        return env(&rest);
    }
    let mut operands = &args[scanned.operands..];
    if operands.first().and_then(Word::literal) == Some("-") {
        operands = &operands[1..];
    }
    let (assignments, words) = assignments_then_command(operands);
    Ok(wraps("env", words, assignments, Transparency::Transparent))
}

/// The arguments `env -S` splits `text` into, for a string without `\` escapes or `$`
/// variables: words split at blanks, quotes grouping, a `#` starting a word ending the string.
/// `None` for an unterminated quote.
fn split_string(text: &str) -> Option<Vec<String>> {
    if text.contains(['\\', '$']) {
        return None;
    }
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote = None;
    for c in text.chars() {
        match (quote, c) {
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (Some(open), _) if c == open => quote = None,
            (Some(_), _) => word.get_or_insert_with(String::new).push(c),
            (None, _) if c.is_ascii_whitespace() || c == '\x0b' => words.extend(word.take()),
            (None, '#') if word.is_none() => break,
            (None, _) => word.get_or_insert_with(String::new).push(c),
        }
    }
    if quote.is_some() {
        return None;
    }
    words.extend(word);
    Some(words)
}

fn command_builtin(args: &[Word]) -> Outcome {
    let spec = OptionSpec {
        short_flags: "pvV",
        ..OptionSpec::NONE
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
        ..OptionSpec::NONE
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
        ..OptionSpec::NONE
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
        ..OptionSpec::NONE
    };
    let scanned = scan_options("xargs", args, &spec)?;
    if scanned.has(&["--process-slot-var"]) {
        // Sets a variable of the caller's choosing (`BASH_ENV`, `GIT_CONFIG_GLOBAL`) in
        // every command it runs.
        return Err(unknown("xargs", "--process-slot-var"));
    }
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
            super::INPUT_ARGUMENTS,
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
        ..OptionSpec::NONE
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
        // Starting points read from a file (`-files0-from`) may start with `-`.
        let listed_starts = args
            .iter()
            .any(|w| w.literal().is_some_and(|v| v.starts_with("-files0-from")));
        let words: Vec<Word> = args[start..end]
            .iter()
            .map(|w| {
                if w.literal() == Some("{}") && !listed_starts {
                    Word::dynamic(&w.raw, Expansion::FoundPath)
                } else if holds_placeholder(w, "{}") {
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
                // A login shell runs the start-up files (`~/.profile`, `~/.zprofile`), which
                // the built-in rules keep agents from writing (`no-shell-startup-writes`):
                // what the person set up, as in the agent's own shell.
                "login" => {}
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
        let mut named = 0;
        for c in cluster.chars() {
            match c {
                'c' => command_mode = true,
                // An interactive shell reads `~/.bashrc` and expands aliases and history
                // in what it runs.
                'i' => transparency = Transparency::Runner,
                // A login shell: as `--login`.
                'l' => {}
                // `-o NAME` and `-O NAME` take the option's name from the next words.
                'o' | 'O' => {
                    named += 1;
                    let name = args.get(i + named).and_then(Word::literal);
                    let known = match c {
                        'o' => SAFE_SET_OPTIONS,
                        _ => SAFE_SHOPT_OPTIONS,
                    };
                    match name {
                        Some(name) if known.contains(&name) => {}
                        Some(name) => return Err(unknown(runner, &format!("-{c} {name}"))),
                        None => return Err(malformed(runner)),
                    }
                }
                // `-k` puts every `NAME=value` word in the command's environment.
                // (`-H`, history expansion, rewrites lines after they were judged.)
                'b' | 'e' | 'f' | 'h' | 'm' | 'n' | 'p' | 't' | 'u' | 'v' | 'x' | 'B' | 'C'
                | 'E' | 'P' | 'T' | 'r' | 's' => {}
                _ => return Err(unknown(runner, &format!("-{c}"))),
            }
        }
        i += 1 + named;
    }
    if !command_mode {
        // `bash script.sh` runs a file, which cannot be seen: the shell is judged as an
        // ordinary command. `bash` alone (or `bash -s args…`) reads its script from standard
        // input, which the walker can often see.
        let reads_stdin = args.get(i).is_none_or(names_stdin)
            || args[..i].iter().any(|w| {
                w.literal()
                    .is_some_and(|t| t.starts_with('-') && !t.starts_with("--") && t.contains('s'))
            });
        return Ok(if reads_stdin {
            Analysis::ReadsStdin {
                runner: runner.to_owned(),
                transparency,
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

/// The `set -o` options a shell given a script may be started with: none changes which
/// commands run or where (`keyword`, bash's `-k`, puts `NAME=value` words in a command's
/// environment, and `allexport`, `-a`, exports every variable the script sets: neither is
/// among them).
const SAFE_SET_OPTIONS: &[&str] = &[
    "braceexpand",
    "errexit",
    "errtrace",
    "functrace",
    "hashall",
    "ignoreeof",
    "monitor",
    "noclobber",
    "noexec",
    "noglob",
    "notify",
    "nounset",
    "physical",
    "pipefail",
    "posix",
    "verbose",
    "xtrace",
];

/// The `shopt` options likewise (`cdable_vars`, `autocd`, `expand_aliases` and the like
/// change what a word means and are not among them).
const SAFE_SHOPT_OPTIONS: &[&str] = &[
    "dotglob",
    "extglob",
    "failglob",
    "globasciiranges",
    "globstar",
    "inherit_errexit",
    "lastpipe",
    "nocaseglob",
    "nocasematch",
    "nullglob",
    "xpg_echo",
];

/// `at [options] TIME` and `batch [options]`: the commands they read from standard input
/// run later, as a script, so both the scheduling and the script are decided. With `-f
/// FILE` the script is a file that cannot be seen; `-l`, `-r`, `-d` and `-c` list, remove
/// or show jobs and run nothing.
fn at(runner: &str, args: &[Word]) -> Outcome {
    let spec = OptionSpec {
        short_flags: "VmMlrdbcv",
        short_with_arg: "qft",
        ..OptionSpec::NONE
    };
    let scanned = scan_options(runner, args, &spec)?;
    if scanned.has(&["-l", "-r", "-d", "-c", "-f"]) {
        return Ok(Analysis::NotAWrapper);
    }
    Ok(Analysis::ReadsStdin {
        runner: runner.to_owned(),
        transparency: Transparency::Runner,
    })
}

/// `trap [-lp] [action] [signal…]`: the action runs later, as a script.
fn trap(args: &[Word]) -> Outcome {
    let spec = OptionSpec {
        short_flags: "lp",
        ..OptionSpec::NONE
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
            piped: false,
            wraps: false,
            passed_on: Vec::new(),
            overlaps: false,
        }
    }

    /// Renders an analysis compactly: `T:git status` (transparent), `R:rm -rf /` (runner),
    /// `S:script`, `U:reason`, `-` (not a wrapper).
    fn render(analysis: &Analysis) -> String {
        let tag = |t: &Transparency| match t {
            Transparency::Transparent => "T",
            Transparency::Runner => "R",
            Transparency::Launcher => "L",
        };
        match analysis {
            Analysis::NotAWrapper => "-".to_owned(),
            Analysis::ReadsStdin {
                runner,
                transparency,
            } => format!("I{}:{runner}", tag(transparency)),
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
            (&["source", "/dev/stdin"], "IT:source"),
            (&[".", "/dev/fd/0"], "IT:."),
            (&["source", "x.sh"], "-"),
            (&["bash", "/dev/stdin"], "IT:bash"),
            (&["env", "-S", "rm -rf /"], "T:rm -rf /"),
            (&["env", "-S'rm -rf' /x"], "T:rm -rf /x"),
            (
                &["env", "--split-string=A=1 'rm' -rf # x", "/y"],
                "T:A=1 rm -rf /y",
            ),
            (&["env", "-S", "-i rm -rf /"], "T:rm -rf /"),
            (
                &["env", "-S", "rm\\_-rf /"],
                "U:`env` option `-S` is not understood",
            ),
            (
                &["env", "-S", "rm ${X}"],
                "U:`env` option `-S` is not understood",
            ),
            (
                &["env", "-S", "'rm -rf"],
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
            (&["bash", "-lc", "rm x"], "TS:rm x"),
            (&["bash", "--login", "-c", "rm x"], "TS:rm x"),
            (&["bash", "-ic", "rm x"], "RS:rm x"),
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
            (&["ionice", "-c", "3", "rm", "-rf", "/"], "T:rm -rf /"),
            (
                &["xvfb-run", "-a", "-s", "-screen 0 1x1x8", "rm", "x"],
                "R:rm x",
            ),
            (&["bash"], "IT:bash"),
            (&["at", "now"], "IR:at"),
            (&["at", "-q", "b", "-m", "now"], "IR:at"),
            (&["batch"], "IR:batch"),
            (&["at", "-l"], "-"),
            (&["at", "-f", "job.sh", "now"], "-"),
            (&["dbus-launch", "--exit-with-session", "rm", "x"], "R:rm x"),
            (&["firejail", "--net=none", "--quiet", "rm", "x"], "R:rm x"),
            (
                &["firejail", "--join=1", "rm", "x"],
                "U:`firejail` option `--join=1` is not understood",
            ),
            (&["ionice", "-p", "42"], "-"),
            (&["taskset", "-c", "0-2", "rm", "x"], "T:rm x"),
            (&["taskset", "-p", "0x3", "42"], "-"),
            (
                &["taskset", "$MASK", "rm"],
                "U:cannot tell which command `taskset` runs",
            ),
            (&["chrt", "-f", "10", "rm", "x"], "T:rm x"),
            (&["chrt", "--idle", "rm", "x"], "T:rm x"),
            (&["chrt", "-m"], "-"),
            (&["numactl", "--interleave=all", "rm"], "T:rm"),
            (&["numactl", "-N", "0", "-m", "0", "rm"], "T:rm"),
            (&["prlimit", "--nofile=1024", "rm"], "T:rm"),
            (&["faketime", "2020-01-01", "rm", "x"], "T:rm x"),
            (&["faketime", "-f", "-m", "+1d", "rm", "x"], "T:rm x"),
            (
                &["faketime", "--", "cat", "echo", ".env"],
                "U:`faketime` option `--` is not understood",
            ),
            (
                &["faketime", "-mf", "x", "rm"],
                "U:`faketime` option `-mf` is not understood",
            ),
            (&["chrt", "-o", " 0", "rm"], "T:rm"),
            (
                &["xargs", "--process-slot-var=BASH_ENV", "bash"],
                "U:`xargs` option `--process-slot-var` is not understood",
            ),
            (
                &["bash", "-k", "-c", "git status X=1"],
                "U:`bash` option `-k` is not understood",
            ),
            (
                &["bash", "-o", "keyword", "-c", "x"],
                "U:`bash` option `-o keyword` is not understood",
            ),
            (
                &["bash", "-O", "cdable_vars", "-c", "x"],
                "U:`bash` option `-O cdable_vars` is not understood",
            ),
            (
                &["bash", "-eo", "pipefail", "-O", "extglob", "-c", "rm x"],
                "TS:rm x",
            ),
            (&["unbuffer", "-p", "rm"], "T:rm"),
            // Terminal multiplexers: one word is a script, several are the command.
            (&["tmux", "new", "-d", "rm -rf /"], "R:sh -c rm -rf /"),
            (
                &["tmux", "new-session", "-d", "-s", "x", "rm", "-rf", "/"],
                "R:rm -rf /",
            ),
            (
                &["tmux", "new", "-d", "-c", "/tmp", "-e", "A=1", "rm x"],
                "R:env -C /tmp A=1 sh -c rm x",
            ),
            (&["tmux", "run-s", "rm x"], "R:sh -c rm x"),
            (&["tmux", "-c", "rm x"], "R:sh -c rm x"),
            (
                &["tmux", "new", "-d", "a", ";", "splitw", "b;", "neww", "c"],
                "R:sh -c a | R:sh -c b | R:sh -c c",
            ),
            (&["tmux", "new", "-d", "echo a\\;"], "R:sh -c echo a;"),
            (&["tmux", "ls"], "-"),
            (&["tmux", "kill-server"], "-"),
            (&["tmux", "new", "-d", "-s", "x"], "-"),
            (
                &["tmux", "send-keys", "-t", "x", "rm x", "Enter"],
                "U:cannot tell which command `tmux send-keys` runs",
            ),
            (
                &["tmux", "ls", ";", "source", "f"],
                "U:cannot tell which command `tmux source-file` runs",
            ),
            (
                &["tmux", "display", "-p", "#(rm x)"],
                "U:cannot tell which command `tmux` runs",
            ),
            (
                &["tmux", "new", "-d", "-c", "#{pane_current_path}", "rm x"],
                "U:cannot tell which command `tmux new` runs",
            ),
            (
                &["tmux", "run", "-C", "kill-server"],
                "U:cannot tell which command `tmux run` runs",
            ),
            (
                &["tmux", "-f", "x.conf", "ls"],
                "U:`tmux` option `-f` is not understood",
            ),
            (
                &["tmux", "new", "-Z", "x"],
                "U:`tmux new` option `-Z` is not understood",
            ),
            (
                &["tmux", "s", "x"],
                "U:cannot tell which command `tmux s` runs",
            ),
            (
                &["tmux", "-C", "new"],
                "U:`tmux` option `-C` is not understood",
            ),
            (
                &["tmux", "new", "-d", "-e", "PROMPT_COMMAND=x"],
                "U:cannot tell which command `tmux new` runs",
            ),
            (
                &["tmux", "showenv", "-g"],
                "U:cannot tell which command `tmux show-environment` runs",
            ),
            (&["npm", "exec", "--", "eslint", "."], "L:eslint ."),
            (&["npm", "x", "-c", "rm x"], "LS:rm x"),
            (
                &["npm", "--prefix", "x", "exec", "rm"],
                "U:`npm` option `--prefix` is not understood",
            ),
            (&["npm", "test"], "-"),
            (&["pnpm", "dlx", "cowsay", "hi"], "L:cowsay hi"),
            (&["screen", "-dmS", "x", "rm", "-rf", "/"], "R:rm -rf /"),
            (&["screen", "-d", "-m", "-S", "x", "rm"], "R:rm"),
            (&["screen", "rm", "x"], "R:rm x"),
            (&["screen", "-r", "x"], "-"),
            (&["screen", "-ls"], "-"),
            (
                &["screen", "-r", "x", "rm"],
                "U:cannot tell which command `screen` runs",
            ),
            (
                &["screen", "-X", "stuff", "rm x"],
                "U:`screen` option `-X` is not understood",
            ),
            (
                &["screen", "-c", "rc", "rm"],
                "U:`screen` option `-c` is not understood",
            ),
            // GNU parallel: once per argument, through the shell, quoted in place of `{}`.
            (
                &["parallel", "rm", "-rf", ":::", "/", "x"],
                "T:sh -c rm -rf '/' | T:sh -c rm -rf 'x'",
            ),
            (
                &["parallel", "-j4", "cat {}", ":::", "a b"],
                "T:sh -c cat 'a b'",
            ),
            (
                &["parallel", ":::", "rm x", "ls"],
                "T:sh -c rm x | T:sh -c ls",
            ),
            (
                &["parallel", "rm", ":::", "-rf", ":::", "/"],
                "T:sh -c rm '-rf' '/'",
            ),
            (&["parallel", "-q", "rm", ":::", "x"], "T:sh -c 'rm' 'x'"),
            (&["parallel", "--pipe", "wc", "-l"], "TS:wc -l"),
            (
                &["parallel", "wc"],
                "U:cannot tell which command `parallel` runs",
            ),
            (
                &["parallel", "cat", "{.}", ":::", "x"],
                "U:cannot tell which command `parallel` runs",
            ),
            (
                &["parallel", "cat", "::::", "f"],
                "U:cannot tell which command `parallel` runs",
            ),
            (
                &["parallel", "-S", "host", "rm", ":::", "x"],
                "U:`parallel` option `-S` is not understood",
            ),
            (&["entr", "-r", "rm", "x"], "T:rm x"),
            (&["entr", "cat", "/_"], "T:cat </_>"),
            (&["entr", "-s", "rm x"], "TS:rm x"),
            (&["npx", "eslint@9", "."], "L:eslint ."),
            (
                &["npx", "-y", "--", "@scope/tool@1", "x"],
                "L:@scope/tool x",
            ),
            (&["npx", "-c", "rm x"], "LS:rm x"),
            (
                &["npx", "--node-options=x", "y"],
                "U:`npx` option `--node-options=x` is not understood",
            ),
            (&["caffeinate", "-i", "-t", "60", "rm"], "T:rm"),
            (&["ssh-agent", "bash", "-c", "rm"], "T:bash -c rm"),
            (&["pkexec", "--user", "root", "rm"], "R:rm"),
            (&["chroot", "/srv/root", "rm", "-rf", "/"], "R:rm -rf /"),
            (&["chroot", "--userspec=1:1", "/srv/root"], "-"),
            (&["unshare", "-r", "--mount", "-f", "rm"], "R:rm"),
            (&["unshare", "--net=/run/ns", "rm"], "R:rm"),
            (&["nsenter", "-t", "1", "-m", "rm"], "R:rm"),
            (&["setpriv", "--reuid=0", "--init-groups", "rm"], "R:rm"),
            (&["systemd-run", "--user", "-p", "X=1", "rm"], "R:rm"),
            (&["torsocks", "rm"], "R:rm"),
            (&["proxychains4", "-q", "-f", "p.conf", "rm"], "R:rm"),
            (&["strace", "-f", "-o", "log", "rm"], "R:rm"),
            (
                &["strace", "-o", "|sh", "rm"],
                "U:`strace` option `-o` is not understood",
            ),
            (&["watch", "-n", "1", "rm -rf /"], "TS:rm -rf /"),
            (&["watch", "rm", "-rf", "/"], "TS:rm -rf /"),
            (&["watch", "-x", "rm", "x"], "T:rm x"),
            (
                &["watch", "$X"],
                "U:the script given to `watch` is not a literal",
            ),
            (&["flock", "/tmp/l", "rm", "x"], "R:rm x"),
            (&["flock", "-n", "/tmp/l", "-c", "rm -rf /"], "RS:rm -rf /"),
            (&["flock", "9"], "-"),
            (&["su", "-c", "rm -rf /"], "RS:rm -rf /"),
            (&["su", "root", "-c", "rm -rf /"], "RS:rm -rf /"),
            (&["su", "-", "root", "--command=rm x"], "RS:rm x"),
            (&["su", "root"], "-"),
            (
                &["su", "root", "--", "-c", "rm"],
                "U:cannot tell which command `su` runs",
            ),
            (
                &["runuser", "-u", "nobody", "--", "rm", "-rf", "/"],
                "R:rm -rf /",
            ),
            (&["runuser", "-l", "nobody", "-c", "rm x"], "RS:rm x"),
            (&["sg", "wheel", "rm -rf /"], "RS:rm -rf /"),
            (&["sg", "-", "wheel", "-c", "rm x"], "RS:rm x"),
            (&["script", "-qc", "rm -rf /", "/dev/null"], "RS:rm -rf /"),
            (&["script", "/dev/null", "-c", "rm x"], "RS:rm x"),
            (&["script", "out.log"], "-"),
            (
                &["script", "/dev/null", "rm", "x"],
                "U:cannot tell which command `script` runs",
            ),
            (&["uv", "run", "pytest", "-x"], "L:pytest -x"),
            (
                &["uv", "run", "--frozen", "--with", "rich", "rm", "-rf", "/"],
                "L:rm -rf /",
            ),
            (
                &["uv", "run", "-m", "pytest", "tests"],
                "L:python -m pytest tests",
            ),
            (&["uv", "pip", "install", "x"], "-"),
            (
                &["uv", "--quiet", "run", "rm"],
                "U:`uv` option `--quiet` is not understood",
            ),
            (
                &["uv", "run", "--bogus", "rm"],
                "U:`uv run` option `--bogus` is not understood",
            ),
            (&["poetry", "run", "rm", "x"], "L:rm x"),
            (&["pipenv", "run", "rm", "x"], "L:rm x"),
            (&["bundle", "exec", "--gemfile=G", "rake"], "L:rake"),
            (&["pnpm", "exec", "rm", "x"], "L:rm x"),
            (&["pnpm", "exec", "-c", "rm -rf /"], "LS:rm -rf /"),
            (&["conda", "run", "-n", "env", "rm"], "L:rm"),
            (&["mise", "exec", "node@20", "--", "rm", "x"], "L:rm x"),
            (&["mise", "x", "-c", "rm x"], "LS:rm x"),
            (
                &["mise", "exec", "node@20", "rm"],
                "U:cannot tell which command `mise exec` runs",
            ),
            (&["/tmp/uv", "run", "rm"], "R:rm"),
            // `python -m MODULE` runs the module as a program.
            (&["python3", "-m", "pytest", "-x"], "L:pytest -x"),
            (&["python", "-Bm", "pytest"], "L:pytest"),
            (
                &["python3.12", "-X", "dev", "-mpytest", "tests"],
                "L:pytest tests",
            ),
            (
                &["python3", "-W", "error", "-m", "http.server"],
                "L:http.server",
            ),
            (&["python3", "script.py", "-m", "x"], "-"),
            (&["python3", "-c", "print(1)"], "-"),
            (&["python3", "--version"], "-"),
            (
                &["python3", "-Q", "-m", "pytest"],
                "U:`python3` option `-Q` is not understood",
            ),
            (&["pythonista", "-m", "x"], "-"),
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
