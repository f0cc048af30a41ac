//! Trust of a cloned repository's policies: until the user runs `toolgate trust`, a project
//! found from the current directory may only tighten — its allow rule for `rm -rf *` is
//! ignored and its hook never runs — and the decisions say how to trust it. Every command
//! runs as a real process from inside the project, with the configuration folder (trust
//! store, user layer) in a temporary folder.

use crate::support::copy_dir;
use std::path::{Path, PathBuf};

use crate::support::check::{Run, toolgate_with_config};

/// A copy of the cloned-repository fixture and a configuration folder, both temporary.
struct Clone {
    _dir: tempfile::TempDir,
    project: PathBuf,
    config: PathBuf,
}

impl Clone {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let project = root.join("cloned");
        copy_dir(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/trust/cloned"),
            &project,
        );
        let config = root.join("config");
        Self {
            _dir: dir,
            project,
            config,
        }
    }

    /// Runs `toolgate ARGS` from the project's `src` folder (the project is found upwards).
    fn run(&self, args: &[&str]) -> Run {
        let sub = self.project.join("src");
        std::fs::create_dir_all(&sub).unwrap();
        toolgate_with_config(&sub, &self.config, args)
    }

    /// The transcript with the temporary folders and times replaced.
    fn transcript(&self, run: &Run) -> String {
        let text = run
            .transcript()
            .replace(&self.config.display().to_string(), "[CONFIG]")
            .replace(&self.project.display().to_string(), "[PROJECT]");
        regex::Regex::new(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
            .unwrap()
            .replace_all(&text, "[TIME]")
            .into_owned()
    }

    fn decisions(&self) -> Vec<(String, String)> {
        let run = self.run(&["plan", "../batch.yaml", "--format", "json"]);
        assert_eq!(run.code, 0, "{}", run.transcript());
        run.json()["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|call| {
                (
                    call["id"].as_str().unwrap().to_owned(),
                    call["decision"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }

    /// Runs a call that the project's hook would see, and says whether the hook ran.
    fn hook_runs(&self) -> bool {
        let marker = self.project.join("hook-ran");
        let _ = std::fs::remove_file(&marker);
        let run = self.run(&["run", "../look.yaml", "--approve", "deny"]);
        assert_eq!(run.code, 0, "{}", run.transcript());
        marker.exists()
    }
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

#[test]
fn a_cloned_project_only_tightens_until_trusted_and_again_after_any_change() {
    let clone = Clone::new();

    // Untrusted: the allow rule is ignored (the built-in default asks), the deny rule holds,
    // the hook does not run, and the decision says how to trust the project.
    assert_eq!(
        clone.decisions(),
        pairs(&[("clean", "ask"), ("fetch", "deny"), ("look", "allow")])
    );
    let plan = clone.run(&["plan", "../batch.yaml"]);
    insta::assert_snapshot!("untrusted_plan", clone.transcript(&plan));
    // A kept rule still points at its own text, though the ignored rule before it is gone.
    let json = clone
        .run(&["plan", "../batch.yaml", "--format", "json"])
        .json();
    let reasons = json["calls"][1]["reasons"].to_string();
    assert!(
        reasons.contains("/.toolgate/policies/project.yaml:11:5"),
        "{reasons}"
    );
    assert!(plan.stdout.contains("toolgate trust "), "{}", plan.stdout);
    assert!(!clone.hook_runs(), "an untrusted project's hook ran");
    let check = clone.run(&["check"]);
    insta::assert_snapshot!("untrusted_check", clone.transcript(&check));
    let explain = clone.run(&["explain", "Bash"]);
    assert!(
        explain
            .stdout
            .contains("/.toolgate/policies (not trusted: it may only tighten)"),
        "{}",
        explain.stdout
    );

    // Trusted: everything applies.
    let trust = clone.run(&["trust"]);
    insta::assert_snapshot!("trust", clone.transcript(&trust));
    assert_eq!(
        clone.decisions(),
        pairs(&[("clean", "allow"), ("fetch", "deny"), ("look", "allow")])
    );
    assert!(clone.hook_runs(), "a trusted project's hook did not run");
    let check = clone.run(&["check"]);
    assert_eq!(check.stderr, "", "{}", check.transcript());
    assert!(!check.stdout.contains("not trusted"), "{}", check.stdout);

    // Any change to a policy file needs trust again.
    let policy = clone.project.join(".toolgate/policies/project.yaml");
    let text = std::fs::read_to_string(&policy).unwrap();
    std::fs::write(&policy, text.replace("rm -rf *", "rm -rf * ")).unwrap();
    assert_eq!(
        clone.decisions(),
        pairs(&[("clean", "ask"), ("fetch", "deny"), ("look", "allow")])
    );
    assert!(!clone.hook_runs(), "a changed project's hook ran");
    let list = clone.run(&["trust", "--list"]);
    insta::assert_snapshot!("list_changed", clone.transcript(&list));
    // A new file counts as a change too.
    clone.run(&["trust"]);
    assert_eq!(clone.decisions()[0].1, "allow");
    std::fs::write(
        clone.project.join(".toolgate/policies/zz-more.yaml"),
        "version: 1\n",
    )
    .unwrap();
    assert_eq!(clone.decisions()[0].1, "ask");

    // Revoking forgets the project; the list says so.
    clone.run(&["trust"]);
    assert_eq!(clone.decisions()[0].1, "allow");
    let revoke = clone.run(&["trust", "--revoke"]);
    insta::assert_snapshot!("revoke", clone.transcript(&revoke));
    assert_eq!(clone.decisions()[0].1, "ask");
    let list = clone.run(&["trust", "--list"]);
    insta::assert_snapshot!("list_empty", clone.transcript(&list));
}

#[test]
fn explicitly_named_policies_are_trusted() {
    let clone = Clone::new();
    let run = clone.run(&["-p", "../.toolgate/policies", "plan", "../batch.yaml"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(!run.stdout.contains("not trusted"), "{}", run.stdout);
    assert!(
        run.stdout.contains("allow  by rule:clean-everything"),
        "{}",
        run.stdout
    );
}

#[test]
fn trusting_a_project_keeps_the_other_entries_of_the_store() {
    let one = Clone::new();
    let two = Clone::new();
    // Both projects share one configuration folder.
    let run =
        |clone: &Clone, args: &[&str]| toolgate_with_config(&clone.project, &one.config, args);
    assert_eq!(run(&one, &["trust"]).code, 0);
    assert_eq!(run(&two, &["trust"]).code, 0);
    let list = run(&one, &["trust", "--list"]);
    assert_eq!(list.stdout.lines().count(), 2, "{}", list.stdout);
    assert_eq!(run(&two, &["trust", "--revoke"]).code, 0);
    let list = run(&one, &["trust", "--list"]);
    assert_eq!(list.stdout.lines().count(), 1, "{}", list.stdout);
    assert!(
        list.stdout
            .contains(&format!("{}  trusted", one.project.display())),
        "{}",
        list.stdout
    );
}

#[test]
fn the_user_layer_applies_without_flags_and_shows_in_explain() {
    let clone = Clone::new();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/trust/user"),
        &clone.config.join("policies"),
    );
    std::fs::write(
        clone.project.join("wget.yaml"),
        "calls:\n  - { id: get, tool: Bash, input: { command: \"wget https://example.com\" } }\n",
    )
    .unwrap();
    let plan = clone.run(&["plan", "../wget.yaml"]);
    assert!(
        plan.stdout.contains("deny   by rule:user-no-wget"),
        "{}",
        plan.transcript()
    );
    let explain = clone.run(&["explain", "Bash"]);
    assert!(
        explain.stdout.contains(&format!(
            "layers: defaults, builtin, user {}",
            clone.config.join("policies").display()
        )),
        "{}",
        explain.stdout
    );
    // With `-p`, the command line names the whole set: no user layer.
    let plan = clone.run(&["-p", "../.toolgate/policies", "plan", "../wget.yaml"]);
    assert!(!plan.stdout.contains("user-no-wget"), "{}", plan.stdout);
}

#[test]
fn a_trust_outside_any_project_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    let run = toolgate_with_config(dir.path(), &config, &["trust"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(run.stderr.contains("no project at"), "{}", run.stderr);
}
