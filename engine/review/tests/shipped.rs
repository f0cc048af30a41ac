//! Each loosening change the review must catch (issue 22), applied to the shipped policies,
//! is rated high with a reason naming its effect and shows the calls it lets through; each
//! narrowing counterpart is rated low or medium; identical, reformatted and moved sets diff
//! empty.

use std::path::{Path, PathBuf};

use crate::cli::GlobalOptions;
use crate::cli::diff::{DiffFormat, DiffOptions, render, run};
use crate::review::Risk;
use crate::review::report::Review;

/// BASE and HEAD: two copies of `policies/` in one temporary folder (also the workspace).
struct Pair {
    dir: tempfile::TempDir,
}

impl Pair {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let policies = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies");
        copy_dir(&policies, &dir.path().join("base"));
        copy_dir(&policies, &dir.path().join("head"));
        Pair { dir }
    }

    fn path(&self, side: &str) -> PathBuf {
        self.dir.path().join(side)
    }

    /// Replaces `from` (which must occur) by `to` in a HEAD file.
    fn edit(&self, file: &str, from: &str, to: &str) -> &Self {
        let path = self.path("head").join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "`{from}` is not in {file}");
        std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
        self
    }

    /// Drops a rule's `examples` in HEAD (an author changing what a rule matches updates
    /// them; BASE's examples still feed the decision diff).
    fn drop_examples(&self, rule: &str) -> &Self {
        let path = self.path("head").join("rules.yaml");
        let text = std::fs::read_to_string(&path).unwrap();
        let start = text.find(&format!("  - name: {rule}\n")).unwrap();
        let end = text[start..].find("\n\n").map_or(text.len(), |e| start + e);
        let examples = start + text[start..end].find("    examples:").unwrap();
        let edited = format!("{}{}", &text[..examples], &text[end..]);
        std::fs::write(&path, edited).unwrap();
        self
    }

    fn review(&self) -> Review {
        let global = GlobalOptions {
            no_builtin: true,
            workspace: Some(self.dir.path().to_owned()),
            ..GlobalOptions::default()
        };
        let base = self.path("base");
        let head = self.path("head");
        run(
            &global,
            base.to_str().unwrap(),
            Some(head.to_str().unwrap()),
            &DiffOptions::default(),
        )
        .unwrap_or_else(|e| match e {
            crate::cli::diff::DiffError::Invalid { side, diagnostics } => {
                let messages: Vec<&str> = diagnostics.iter().map(|d| d.message.as_str()).collect();
                panic!("{side} does not load: {messages:#?}")
            }
            other => panic!("{other:?}"),
        })
    }

    /// A rendering with the temporary folder's path replaced.
    fn rendered(&self, format: DiffFormat) -> String {
        let text = render(&self.review(), format);
        text.replace(&self.dir.path().display().to_string(), "[TMP]")
    }
}

/// The only change's risk and reason, and the calls decided differently
/// (`Read {"file_path":"certs/server.key"} deny → allow`).
fn one_change(review: &Review) -> (Risk, &str) {
    let high: Vec<&str> = review
        .changes
        .iter()
        .filter(|c| c.change.effect != crate::review::Effect::Cosmetic)
        .map(|c| c.change.reason.as_str())
        .collect();
    assert_eq!(high.len(), 1, "{high:?}");
    let change = review
        .changes
        .iter()
        .find(|c| c.change.effect != crate::review::Effect::Cosmetic)
        .unwrap();
    (change.change.risk, change.change.reason.as_str())
}

fn decisions(review: &Review) -> Vec<String> {
    review
        .decisions
        .changes
        .iter()
        .map(|d| {
            let modes = if d.modes.is_empty() {
                String::new()
            } else {
                format!(" [{}]", d.modes.join(","))
            };
            format!("{} {}{modes} {}", d.tool, d.input, d.direction)
        })
        .collect()
}

/// The calls HEAD's rules not enforced yet would change
/// (`Read {"file_path":"x"} allow → deny by rule (audit)`).
fn staged(review: &Review) -> Vec<String> {
    review
        .decisions
        .staged
        .iter()
        .map(|s| {
            format!(
                "{} {} {} → {} by {}",
                s.tool,
                s.input,
                s.decision,
                s.would,
                s.rules.join(", ")
            )
        })
        .collect()
}

fn assert_shows(review: &Review, call: &str) {
    let found = decisions(review);
    assert!(
        found.iter().any(|d| d == call),
        "`{call}` not in {found:#?}"
    );
}

const SERVER_KEY: &str = r#"Read {"file_path":"certs/server.key"} deny → allow"#;

#[test]
fn a_deny_rule_restricted_to_plan_mode_is_high_and_lets_secrets_through() {
    let pair = Pair::new();
    pair.edit(
        "rules.yaml",
        "  - name: no-secrets\n    tools: [Read, Write, Edit]\n",
        "  - name: no-secrets\n    tools: [Read, Write, Edit]\n    modes: [plan]\n",
    )
    .drop_examples("no-secrets");
    let review = pair.review();
    assert_eq!(
        one_change(&review),
        (
            Risk::High,
            "deny rule `no-secrets` no longer applies outside modes `plan`"
        )
    );
    assert_shows(&review, SERVER_KEY);
    assert_eq!(review.verdict, Some(Risk::High));
}

#[test]
fn a_tool_removed_from_a_deny_rule_is_high() {
    let pair = Pair::new();
    pair.edit(
        "rules.yaml",
        "  - name: no-secrets\n    tools: [Read, Write, Edit]\n",
        "  - name: no-secrets\n    tools: [Write, Edit]\n",
    )
    .drop_examples("no-secrets");
    let review = pair.review();
    assert_eq!(
        one_change(&review),
        (
            Risk::High,
            "deny rule `no-secrets` no longer applies to tool `Read`"
        )
    );
    assert_shows(&review, SERVER_KEY);
}

#[test]
fn a_narrowed_deny_pattern_is_high_with_a_witness() {
    let pair = Pair::new();
    pair.edit("rules.yaml", "          - \"/**/.env.*\"\n", "")
        .drop_examples("no-secrets");
    let review = pair.review();
    assert_eq!(
        one_change(&review),
        (
            Risk::High,
            "deny rule `no-secrets` no longer matches calls it matched, e.g. `file_path` = `/a/.env.x`"
        )
    );
    assert_shows(
        &review,
        r#"Read {"file_path":"../other-repo/.env.production"} deny → allow"#,
    );
}

#[test]
fn a_disabled_or_removed_deny_rule_or_a_lowered_one_is_high() {
    for (from, to, reason) in [
        (
            "    decision: deny\n    priority: 100\n    reason: secrets are off limits\n    examples:\n      match:\n        - { tool: Read, input: { file_path: app/.env } }",
            "    decision: deny\n    disabled: true\n    priority: 100\n    reason: secrets are off limits\n    examples:\n      match:\n        - { tool: Read, input: { file_path: app/.env } }",
            "deny rule `no-secrets` disabled: the calls it matched fall to lower rules",
        ),
        (
            "    decision: deny\n    priority: 100\n    reason: secrets are off limits\n    examples:\n      match:\n        - { tool: Read, input: { file_path: app/.env } }",
            "    decision: allow\n    priority: 100\n    reason: secrets are off limits\n    examples:\n      match:\n        - { tool: Read, input: { file_path: app/.env } }",
            "rule `no-secrets` now decides `allow` instead of `deny`",
        ),
    ] {
        let pair = Pair::new();
        pair.edit("rules.yaml", from, to);
        let review = pair.review();
        assert_eq!(one_change(&review), (Risk::High, reason));
        assert_shows(&review, SERVER_KEY);
    }
}

#[test]
fn widened_allow_patterns_are_high_and_show_the_commands_they_let_through() {
    for (to, reason, call) in [
        (
            r#"command: { shell: ["git status", "git status *", "git diff *", "git log *", "git show *", "git branch", "git rev-parse *", "rm -r *"] }"#,
            "allow rule `git-read-only` now matches calls it did not match, e.g. `command` = `rm -r x`",
            r#"Bash {"command":"rm -r x"} ask → allow"#,
        ),
        (
            r#"command: { shell: ["git status", "git status *", "git diff *", "git log *", "git show *", "git branch", "git rev-parse *"], allow_redirection: true }"#,
            "allow rule `git-read-only` now lets commands in `command` redirect output to files",
            r#"Bash {"command":"git status > out.txt"} ask → allow"#,
        ),
    ] {
        let pair = Pair::new();
        pair.edit(
            "rules.yaml",
            r#"command: { shell: ["git status", "git status *", "git diff *", "git log *", "git show *", "git branch", "git rev-parse *"] }"#,
            to,
        )
        .drop_examples("git-read-only");
        let review = pair.review();
        assert_eq!(one_change(&review), (Risk::High, reason));
        assert_shows(&review, call);
    }
}

#[test]
fn a_concurrent_bash_is_high_and_shows_its_group_change() {
    let pair = Pair::new();
    pair.edit(
        "tools/bash.yaml",
        "concurrency: { concurrent_safe: false, side_effect_scope: workspace }",
        "concurrency: { concurrent_safe: true, side_effect_scope: workspace }",
    );
    let review = pair.review();
    assert_eq!(
        one_change(&review),
        (
            Risk::High,
            "tool `Bash` (side effects on the `workspace`) may now run concurrently with other calls"
        )
    );
    let change = review
        .decisions
        .changes
        .iter()
        .find(|d| d.tool == "Bash")
        .expect("a Bash call changes group");
    assert_eq!(
        (change.before.group.as_str(), change.after.group.as_str()),
        ("alone", "shared")
    );
}

#[test]
fn a_deny_rule_put_on_audit_is_high_and_lists_what_it_would_still_deny() {
    let pair = Pair::new();
    pair.edit(
        "rules.yaml",
        "  - name: no-secrets\n    tools: [Read, Write, Edit]\n",
        "  - name: no-secrets\n    tools: [Read, Write, Edit]\n    enforcement: audit\n",
    );
    let review = pair.review();
    assert_eq!(
        one_change(&review),
        (
            Risk::High,
            "deny rule `no-secrets` no longer enforced (`audit`): the calls it denied or asked about fall to lower rules"
        )
    );
    assert_shows(&review, SERVER_KEY);
    let staged = staged(&review);
    assert!(
        staged.contains(
            &r#"Read {"file_path":"certs/server.key"} allow → deny by no-secrets (audit)"#
                .to_owned()
        ),
        "{staged:#?}"
    );
}

#[test]
fn a_rule_added_on_audit_decides_nothing_and_lists_what_it_would_deny() {
    let pair = Pair::new();
    let path = pair.path("head").join("rules.yaml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(
        "\n  - name: audit-git-status\n    tools: [Bash]\n    match:\n      command: { shell: [\"git status\"] }\n    decision: deny\n    enforcement: audit\n    reason: trying a stricter git policy\n    examples:\n      match:\n        - { tool: Bash, input: { command: git status } }\n",
    );
    std::fs::write(&path, text).unwrap();
    let review = pair.review();
    assert!(
        review.decisions.changes.is_empty(),
        "{:#?}",
        review.decisions.changes
    );
    let reasons: Vec<&str> = review
        .changes
        .iter()
        .map(|c| c.change.reason.as_str())
        .collect();
    assert_eq!(
        reasons,
        ["rule `audit-git-status` (`audit`, not enforced) added: it decides nothing"]
    );
    assert_eq!(review.verdict, Some(Risk::Low));
    let staged = staged(&review);
    assert!(
        staged.contains(
            &r#"Bash {"command":"git status"} allow → deny by audit-git-status (audit)"#.to_owned()
        ),
        "{staged:#?}"
    );
    insta::assert_snapshot!(pair.rendered(DiffFormat::Markdown));
}

#[test]
fn narrowing_counterparts_are_low_or_medium() {
    let git = r#"command: { shell: ["git status", "git status *", "git diff *", "git log *", "git show *", "git branch", "git rev-parse *"] }"#;
    let cases: [(&str, &str, &str); 5] = [
        // A deny rule matching more.
        (
            "rules.yaml",
            "          - \"/**/.env.*\"\n",
            "          - \"/**/.env.*\"\n          - \"/**/*.p12\"\n",
        ),
        // A deny rule ranked higher.
        (
            "rules.yaml",
            "    decision: deny\n    priority: 100\n    reason: secrets are off limits\n    examples:\n      match:\n        - { tool: Read, input: { file_path: app/.env } }",
            "    decision: deny\n    priority: 200\n    reason: secrets are off limits\n    examples:\n      match:\n        - { tool: Read, input: { file_path: app/.env } }",
        ),
        // An allow rule matching less.
        (
            "rules.yaml",
            git,
            r#"command: { shell: ["git status", "git status *", "git diff *", "git log *", "git show *", "git rev-parse *"] }"#,
        ),
        // A shorter timeout cap.
        ("tools/bash.yaml", "      max: 10m", "      max: 5m"),
        // A deny rule applying to one more tool.
        (
            "rules.yaml",
            "  - name: no-secrets-search\n    tools: [Grep, Glob]",
            "  - name: no-secrets-search\n    tools: [Grep, Glob, Read]",
        ),
    ];
    for (file, from, to) in cases {
        let pair = Pair::new();
        pair.edit(file, from, to);
        let review = pair.review();
        assert!(
            matches!(review.verdict, Some(Risk::Low | Risk::Medium)),
            "{to}: {}",
            review.render_human()
        );
        assert_eq!(review.decisions.loosened(), 0, "{}", review.render_human());
    }
}

#[test]
fn identical_reformatted_and_moved_sets_have_no_change() {
    let pair = Pair::new();
    assert_eq!(pair.review().verdict, None);
    // Reformatted: a flow list written as a block list.
    pair.edit(
        "rules.yaml",
        "  - name: no-secrets\n    tools: [Read, Write, Edit]\n",
        "  - name: no-secrets\n    tools:\n      - Read\n      - Write\n      - Edit\n",
    );
    // Moved: a rule into a file of its own.
    let rules = pair.path("head").join("rules.yaml");
    let text = std::fs::read_to_string(&rules).unwrap();
    let start = text.find("  - name: no-network-devices\n").unwrap();
    std::fs::write(&rules, &text[..start]).unwrap();
    std::fs::write(
        pair.path("head").join("zz-network.yaml"),
        format!("version: 1\nrules:\n{}", &text[start..]),
    )
    .unwrap();
    let review = pair.review();
    assert_eq!(review.verdict, None, "{}", review.render_human());
    assert_eq!(review.render_human(), "no change in effect\n");
}

#[test]
fn markdown_of_a_loosening_pull_request() {
    let pair = Pair::new();
    pair.edit(
        "rules.yaml",
        "  - name: no-secrets\n    tools: [Read, Write, Edit]\n",
        "  - name: no-secrets\n    tools: [Write, Edit]\n",
    )
    .drop_examples("no-secrets");
    insta::assert_snapshot!(pair.rendered(DiffFormat::Markdown));
}

/// Copies a folder tree (files and folders only).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
