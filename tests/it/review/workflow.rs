//! The CI workflow of `examples/ci/policies.yml`, run as a pull request would run it: a git
//! repository with a base commit and a head commit that loosens the policy, and every step
//! of the workflow that runs toolgate, in order, through bash with the workflow's `env`. The
//! steps that need GitHub (installing from the network, posting the comment) are not run;
//! their commands are checked by the docs test like every workflow in the docs.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const BASE_POLICY: &str = r#"version: 1
rules:
  - name: no-customer-data
    tools: [Read]
    match:
      file_path: { path: ["**/customers/*.csv"] }
    decision: deny
    reason: customer data stays out of the model's context
    examples:
      match:
        - { tool: Read, input: { file_path: customers/export.csv } }
"#;

/// The head commit restricts the deny rule to plan mode: outside it, the keys can be read.
const HEAD_POLICY: &str = r#"version: 1
rules:
  - name: no-customer-data
    tools: [Read]
    modes: [plan]
    match:
      file_path: { path: ["**/customers/*.csv"] }
    decision: deny
    reason: customer data stays out of the model's context
    examples:
      match:
        - { tool: Read, input: { file_path: customers/export.csv }, modes: [plan] }
"#;

const TESTS: &str = r#"version: 1
tests:
  - name: sources are readable
    call: { tool: Read, input: { file_path: src/main.rs } }
    expect: { decision: allow }
"#;

fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(output.status.success(), "git {args:?}");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// A step of the workflow: its name and the script of its `run`.
struct Step {
    name: String,
    run: String,
}

fn workflow() -> (Vec<(String, String)>, Vec<Step>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/ci/policies.yml");
    let text = std::fs::read_to_string(&path).unwrap();
    let parsed = crate::support::yaml::parse("examples/ci/policies.yml", &text);
    let job = &parsed["jobs"]["policies"];
    let env = job["env"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
        .collect();
    let steps = job["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|step| {
            Some(Step {
                name: step.get("name").and_then(Value::as_str)?.to_owned(),
                run: step.get("run").and_then(Value::as_str)?.to_owned(),
            })
        })
        .collect();
    (env, steps)
}

#[test]
fn the_example_workflow_fails_a_loosening_pull_request_with_a_review_comment() {
    let (env, steps) = workflow();
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    std::fs::create_dir_all(repo.join(".toolgate/policies")).unwrap();
    std::fs::create_dir_all(repo.join(".toolgate/tests")).unwrap();
    std::fs::write(repo.join(".toolgate/policies/project.yaml"), BASE_POLICY).unwrap();
    std::fs::write(repo.join(".toolgate/tests/project.test.yaml"), TESTS).unwrap();
    git(repo, &["init", "-q"]);
    git(repo, &["add", "."]);
    git(repo, &["commit", "-qm", "base"]);
    let base = git(repo, &["rev-parse", "HEAD"]);
    std::fs::write(repo.join(".toolgate/policies/project.yaml"), HEAD_POLICY).unwrap();
    git(
        repo,
        &["commit", "-qam", "head: the deny rule only in plan mode"],
    );

    let bin = Path::new(env!("CARGO_BIN_EXE_toolgate")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output_file = repo.join("github-output");
    let mut ran = Vec::new();
    for step in &steps {
        // Installing from the network and posting to GitHub are not run here.
        if step.run.starts_with("cargo install") || step.run.starts_with("gh ") {
            continue;
        }
        if step.name == "fail on a high-risk change" {
            let outputs = std::fs::read_to_string(&output_file).unwrap();
            assert_eq!(
                outputs.trim(),
                "status=1",
                "the review step recorded its exit"
            );
            ran.push(step.name.clone());
            continue;
        }
        let mut command = Command::new("bash");
        command
            .args(["-e", "-o", "pipefail", "-c", &step.run])
            .current_dir(repo)
            .env("PATH", &path)
            .env("GITHUB_OUTPUT", &output_file)
            .env("NO_COLOR", "1");
        for (key, value) in &env {
            let value = if key == "BASE" { &base } else { value };
            command.env(key, value);
        }
        let out = command.output().unwrap();
        assert!(
            out.status.success(),
            "step `{}` failed:\n{}{}",
            step.name,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        ran.push(step.name.clone());
    }
    assert_eq!(
        ran,
        [
            "check the policies",
            "run the policy tests with rule coverage",
            "review the change",
            "fail on a high-risk change",
        ]
    );
    // The tests pass and cover the one project rule through its example.
    let junit = std::fs::read_to_string(repo.join("policy-tests.xml")).unwrap();
    assert!(junit.contains("failures=\"0\""), "{junit}");
    assert!(junit.contains("name=\"minimum coverage 80 %\""), "{junit}");
    // The comment says the change is high risk and which call now gets through.
    let review = std::fs::read_to_string(repo.join("review.md")).unwrap();
    assert!(review.contains("no-customer-data"), "{review}");
    assert!(review.to_lowercase().contains("high"), "{review}");
    assert!(review.contains("customers/export.csv"), "{review}");
    assert!(review.contains("deny → allow"), "{review}");
}
