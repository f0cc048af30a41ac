//! Property tests of the shell matcher: random command lines built from a grammar of words,
//! operators, quotes, substitutions and redirections, plus raw random strings.
//!
//! Properties:
//! - the splitter and the matcher never panic, and the parser's panic barrier never fires;
//! - whenever an allow ([`MatchMode::All`]) matcher holds, every simple command the splitter
//!   returns matches one of the patterns (checked here independently of the matcher), has
//!   no file-writing redirection and no assignment, and nothing is unresolved;
//! - an allow implies the deny mode ([`MatchMode::Any`]) holds too.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::policy::mode::MatchMode;
use crate::policy::pattern::{RedirectionPolicy, ShellMatcher};
use crate::policy::shell::parse_script;
use crate::policy::shell::{Role, WordKind};
use proptest::prelude::*;

fn allow() -> ShellMatcher {
    let patterns = ["git status", "git diff *", "ls *"].map(String::from);
    ShellMatcher::compile(&patterns, RedirectionPolicy::Forbidden).unwrap()
}

/// The allow patterns, restated without the matcher: `git status` exactly, `git diff`
/// followed by anything, `ls` followed by anything.
fn independently_allowed(words: &[WordKind]) -> bool {
    let literal = |i: usize| match words.get(i) {
        Some(WordKind::Literal(value)) => Some(value.as_str()),
        _ => None,
    };
    if words.iter().any(|w| matches!(w, WordKind::Opaque(_))) {
        return false;
    }
    match (literal(0), literal(1)) {
        (Some("git"), Some("status")) => words.len() == 2,
        (Some("git"), Some("diff")) => true,
        (Some("ls"), _) => true,
        _ => false,
    }
}

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "git", "status", "diff", "ls", "-la", "rm", "-rf", "/", "HEAD~1", "--", "x", "sh", "bash",
            "-c", "eval", "nice", "env", "sudo", "xargs", "find", "-exec", "{}", "\\;", "timeout", "5",
            "echo", "cat", "curl", "if", "then", "fi", "do", "done", "!", "{", "}", "time",
        ])
        .prop_map(String::from),
        2 => prop::sample::select(vec![
            "'my dir'", "\"q\"", "$X", "\"$X\"", "*.rs", "~", "a\\ b", "X=1", "$((1+2))", "${x:-y}",
            "${a[i]}", "'git'", "\"status\"", "$'\\x72m'", "{a,b}", "''", "\\", "'", "\"", "`", "$(",
            "#", "\\\n",
        ])
        .prop_map(String::from),
        1 => "[a-z]{1,6}",
    ]
}

fn redirection() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        ">out",
        ">>out",
        "2>&1",
        ">/dev/null",
        "<in",
        "&>f",
        "<<<x",
        "2>err",
        ">&2",
        ">|f",
        "<>f",
        "<<EOF\n$(rm)\nEOF\n",
        "<<'EOF'\nx\nEOF\n",
        ">$(rm x)",
    ])
    .prop_map(String::from)
}

/// A command that an allow pattern covers, at least before its arguments are looked at.
fn allowed_prefix() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("git status".to_owned()),
        prop::collection::vec(word(), 0..3).prop_map(|args| format!("git diff {}", args.join(" "))),
        prop::collection::vec(word(), 0..3).prop_map(|args| format!("ls {}", args.join(" "))),
    ]
}

fn simple_command() -> impl Strategy<Value = String> {
    (
        prop::option::weighted(0.1, "[A-Z]{1,3}=[a-z]{0,3}"),
        prop_oneof![
            3 => allowed_prefix(),
            2 => prop::collection::vec(word(), 1..5).prop_map(|words| words.join(" ")),
        ],
        prop::option::weighted(0.2, redirection()),
    )
        .prop_map(|(assignment, command, redirect)| {
            let mut parts: Vec<String> = assignment.into_iter().collect();
            parts.push(command);
            parts.extend(redirect);
            parts.join(" ")
        })
}

fn operator() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["; ", " && ", " || ", " | ", " & ", "\n", " |& ", ";"])
}

fn command_line() -> impl Strategy<Value = String> {
    let leaf = simple_command();
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            (inner.clone(), operator(), inner.clone()).prop_map(|(a, op, b)| format!("{a}{op}{b}")),
            inner.clone().prop_map(|c| format!("( {c} )")),
            inner.clone().prop_map(|c| format!("{{ {c}; }}")),
            inner.clone().prop_map(|c| format!("ls $({c})")),
            inner.clone().prop_map(|c| format!("git diff \"`{c}`\"")),
            inner.clone().prop_map(|c| format!("ls <({c})")),
            inner.clone().prop_map(|c| format!("if {c}; then ls; fi")),
            inner.clone().prop_map(|c| format!("eval '{c}'")),
            inner.clone().prop_map(|c| format!("sh -c '{c}'")),
            inner.clone().prop_map(|c| format!("nice {c}")),
            inner.prop_map(|c| format!("for x in a; do {c}; done")),
        ]
    })
}

fn any_line() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => command_line(),
        2 => "[a-z $'\"`;&|()<>{}\\\\\n*?~=#!0-9-]{0,60}",
        1 => any::<String>(),
    ]
}

fn check_line(line: &str) -> Result<(), TestCaseError> {
    let matcher = allow();
    let parsed = parse_script(line);
    if let Err(err) = &parsed {
        prop_assert!(
            !err.message.contains("the shell parser failed"),
            "the parser panicked on {line:?}"
        );
    }
    let verdict = matcher.evaluate_script(&parsed, MatchMode::All);
    let deny_verdict = matcher.evaluate_script(&parsed, MatchMode::Any);
    if !verdict.holds() {
        return Ok(());
    }
    let script = parsed.expect("an allowed line parses");
    prop_assert!(
        script.unresolved.is_empty(),
        "allowed with unresolved commands: {line:?}"
    );
    prop_assert!(
        script.constructs.is_empty(),
        "allowed with constructs: {line:?}"
    );
    prop_assert!(
        !script.commands.is_empty(),
        "allowed an empty line: {line:?}"
    );
    for command in &script.commands {
        prop_assert!(
            command.file_writes().next().is_none(),
            "allowed a file write in {:?} of {line:?}",
            command.text
        );
        match command.role {
            Role::TransparentWrapper => continue,
            Role::Command | Role::Launched => {}
        }
        prop_assert!(
            command.assignments.is_empty(),
            "allowed an assignment in {:?} of {line:?}",
            command.text
        );
        let kinds: Vec<WordKind> = command.words.iter().map(|w| w.kind.clone()).collect();
        prop_assert!(
            independently_allowed(&kinds),
            "allowed {:?} of {line:?}, which no pattern covers",
            command.text
        );
    }
    prop_assert!(
        deny_verdict.holds(),
        "allowed but the deny mode does not hold: {line:?}"
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn allow_implies_every_command_matched(line in any_line()) {
        check_line(&line)?;
    }
}

#[test]
fn known_lines_satisfy_the_properties() {
    for line in [
        "git status",
        "git status; ls -la | ls",
        "nice git status",
        "eval 'git diff HEAD~1'",
        "ls $(git status)",
        "git status; rm -rf /",
        "ls > out",
    ] {
        check_line(line).unwrap();
    }
    // The allowed ones are really allowed (the properties are not vacuous).
    assert!(allow().evaluate("nice git status", MatchMode::All).holds());
    assert!(allow().evaluate("ls $(git status)", MatchMode::All).holds());
}

/// A few programs, spelled as in `policies/commands.yaml`, so that patterns also match by
/// meaning (`rm -r -f` for `rm -rf *`, `git -C x push` for `git push *`).
fn table() -> crate::policy::commands::CommandTable {
    let section: crate::model::command::CommandsSection =
        serde_json::from_value(serde_json::json!({
            "program_folders": ["/bin", "/usr/bin"],
            "programs": {
                "rm": {"effects": ["write"], "operands": "write", "options": {
                    "-r": {"aliases": ["-R", "--recursive"]}, "-f": {"aliases": ["--force"]}}},
                "git": {"options": {"-C": {"value": "dir"}}, "subcommands": {
                    "status": {"read_only": true},
                    "diff": {"read_only": true, "operands": "revision_or_path"},
                    "push": {"effects": ["network"], "options": {"-f": {"aliases": ["--force"]}}}}},
                "ls": {"read_only": true, "operands": "read", "options": {"-l": {}, "-a": {}}},
                "cat": {"read_only": true, "operands": "read"},
                "find": {"read_only": true, "option_style": "words", "operands": "read",
                    "options": {"-exec": {"effects": ["exec"]}}}
            }
        }))
        .unwrap();
    crate::policy::commands::CommandTable::new(&section)
}

/// Patterns of every shape the cheap test distinguishes: literal command words (with and
/// without a table entry), a path as command word, globs, `*` first, assignments.
const PATTERNS: &[&str] = &[
    "git status",
    "git diff *",
    "git push *",
    "rm -rf *",
    "rm *",
    "ls *",
    "/bin/ls *",
    "cat *",
    "find * -exec *",
    "g?t *",
    "* status",
    "*",
    "RUST_BACKTRACE=1 git *",
    "sudo *",
    "sh -c *",
    "curl *",
];

/// The cheap test that lets a compound line's parts skip rules
/// ([`ShellMatcher::may_match`]) is sound: whenever it says a pattern cannot match one
/// command, the matcher does not hold, in either mode, for a line of that command alone.
fn check_ruled_out(line: &str) -> Result<(), TestCaseError> {
    use crate::policy::commands::Analysed;
    use crate::policy::pattern::CommandKeys;
    use crate::policy::shell::Script;
    let table = table();
    let analysed = Analysed::new(line, &table);
    for (command, facts) in analysed.commands() {
        let alone = Analysed {
            script: Ok(Script {
                commands: vec![command.clone()],
                ..Script::default()
            }),
            facts: vec![facts.clone()],
        };
        let keys = CommandKeys::of(command, facts);
        for pattern in PATTERNS {
            let matcher =
                ShellMatcher::compile(&[(*pattern).to_owned()], RedirectionPolicy::Allowed)
                    .unwrap();
            if matcher.may_match(&keys, &table) {
                continue;
            }
            for mode in [MatchMode::All, MatchMode::Any] {
                prop_assert!(
                    !matcher.evaluate_analysed(&alone, &table, mode).holds(),
                    "`{pattern}` was ruled out for `{}` of {line:?} but holds in {mode:?}",
                    command.text
                );
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn a_pattern_ruled_out_for_a_command_never_matches_it(line in any_line()) {
        check_ruled_out(&line)?;
    }
}

#[test]
fn the_cheap_test_keeps_what_matches_by_path_or_meaning() {
    use crate::policy::commands::Analysed;
    use crate::policy::pattern::CommandKeys;
    let table = table();
    // (pattern, command line, whether the pattern may match): by the written word, its last
    // path component, the program by the table; ruled out only when none can agree.
    for (pattern, line, may) in [
        ("git status", "git status", true),
        ("git status", "/usr/bin/git status", true),
        ("rm -rf *", "rm -r -f /", true),
        ("rm -rf *", "/bin/rm --recursive --force /", true),
        ("git push *", "git -C x push -f", true),
        ("/bin/ls *", "ls -la", true),
        // A path outside the program folders runs that file, not `ls`.
        ("/tmp/ls *", "ls -la", false),
        ("g?t *", "ls", true),
        ("* status", "ls", true),
        ("git status", "ls -la", false),
        ("rm -rf *", "ls -la", false),
        ("sudo *", "git status", false),
    ] {
        let analysed = Analysed::new(line, &table);
        let (command, facts) = analysed.commands().next().unwrap();
        let matcher =
            ShellMatcher::compile(&[pattern.to_owned()], RedirectionPolicy::Allowed).unwrap();
        assert_eq!(
            matcher.may_match(&CommandKeys::of(command, facts), &table),
            may,
            "`{pattern}` for `{line}`"
        );
    }
    // Lines that match a pattern whose word is not the one written (the properties are not
    // vacuous): the cheap test must keep them.
    check_ruled_out("/bin/rm -R -f / ; git -C x push --force; /usr/bin/git status").unwrap();
}
