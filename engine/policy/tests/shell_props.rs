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
            Role::Command => {}
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
