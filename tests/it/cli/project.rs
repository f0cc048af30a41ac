//! Inside a project made by `toolgate init`, every command finds `.toolgate/policies`, the
//! workspace and the tests from the project root, wherever in the project it runs.

use std::path::Path;

use crate::support::check::{Run, toolgate_with_config};

/// The configuration folder of the tests below (inside the project's temporary folder).
fn config(dir: &Path) -> std::path::PathBuf {
    dir.join(".config-for-test")
}

/// Runs `toolgate ARGS` in `dir` with the project's test configuration folder.
fn toolgate_in(dir: &Path, args: &[&str]) -> Run {
    let mut project = dir;
    while !project.join(".toolgate").is_dir() && project.parent().is_some() {
        project = project.parent().unwrap();
    }
    toolgate_with_config(dir, &config(project), args)
}

/// A fresh `toolgate init` project (which `init` trusts) with a `src/deep` subfolder and a
/// batch file.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let init = toolgate_with_config(dir.path(), &config(dir.path()), &["init"]);
    assert_eq!(init.code, 0, "{}", init.transcript());
    assert!(
        init.stdout
            .contains("next: toolgate check && toolgate test"),
        "{}",
        init.stdout
    );
    std::fs::create_dir_all(dir.path().join("src/deep")).unwrap();
    std::fs::write(
        dir.path().join("batch.yaml"),
        "calls:\n\
         - { id: tests, tool: Bash, input: { command: \"cargo test\" } }\n\
         - { id: other, tool: Bash, input: { command: \"curl https://example.com\" } }\n\
         - { id: secret, tool: Read, input: { file_path: .env } }\n\
         - { id: where, tool: Bash, input: { command: pwd } }\n",
    )
    .unwrap();
    dir
}

/// Runs `args` from the project root and from `src/deep`, and returns both runs.
fn both(dir: &Path, args: &[&str]) -> (Run, Run) {
    (
        toolgate_in(dir, args),
        toolgate_in(&dir.join("src/deep"), args),
    )
}

#[test]
fn toolgate_test_passes_in_a_fresh_init_project_from_the_root_and_a_subfolder() {
    let dir = project();
    let (root, sub) = both(dir.path(), &["test"]);
    assert_eq!(root.code, 0, "{}", root.transcript());
    assert!(
        root.stdout.contains("3 passed; 0 failed"),
        "{}",
        root.stdout
    );
    assert_eq!(root.stdout, sub.stdout);
    assert_eq!(sub.code, 0);
}

#[test]
fn check_loads_the_project_policies_without_flags() {
    let dir = project();
    let (root, sub) = both(dir.path(), &["check"]);
    assert_eq!(root.code, 0, "{}", root.transcript());
    assert_eq!(root.stdout, sub.stdout);
    // A broken project file is found from anywhere in the project.
    std::fs::write(
        dir.path().join(".toolgate/policies/broken.yaml"),
        "version: 1\nrules: [ { name: x, decision: nope } ]\n",
    )
    .unwrap();
    let (root, sub) = both(dir.path(), &["check", "--format", "json"]);
    assert_eq!(root.code, 1, "{}", root.transcript());
    assert!(root.stdout.contains("broken.yaml"), "{}", root.stdout);
    assert_eq!(sub.code, 1, "{}", sub.transcript());
    assert_eq!(root.stdout, sub.stdout);
}

#[test]
fn plan_decides_the_same_from_the_root_and_a_subfolder() {
    let dir = project();
    let batch = dir.path().join("batch.yaml");
    let batch = batch.to_str().unwrap();
    let (root, sub) = both(dir.path(), &["plan", batch, "--format", "json"]);
    assert_eq!(root.code, 0, "{}", root.transcript());
    assert_eq!(root.stdout, sub.stdout);
    // The project's `run-tests` rule allows `cargo test`; a secret path is denied whichever
    // folder the command runs from.
    let plan = root.json();
    let text = plan.to_string();
    assert!(text.contains("run-tests"), "{text}");
}

#[test]
fn explain_shows_the_project_layer_from_a_subfolder() {
    let dir = project();
    let (root, sub) = both(dir.path(), &["explain", "Bash"]);
    assert_eq!(root.code, 0, "{}", root.transcript());
    assert!(root.stdout.contains("project.yaml"), "{}", root.stdout);
    assert_eq!(root.stdout, sub.stdout);
}

#[test]
fn run_takes_the_workspace_from_the_project_root() {
    let dir = project();
    std::fs::write(
        dir.path().join("pwd.yaml"),
        "calls:\n- { id: where, tool: Bash, input: { command: pwd } }\n",
    )
    .unwrap();
    let batch = dir.path().join("pwd.yaml");
    let batch = batch.to_str().unwrap();
    let args = ["run", batch, "--approve", "allow", "--format", "jsonl"];
    let (root, sub) = both(dir.path(), &args);
    assert_eq!(root.code, 0, "{}", root.transcript());
    assert_eq!(sub.code, 0, "{}", sub.transcript());
    let real = std::fs::canonicalize(dir.path()).unwrap();
    let want = format!("{}\\n", real.display());
    let last = |run: &Run| run.stdout.lines().last().unwrap_or_default().to_owned();
    assert!(
        last(&root).contains(&want),
        "runs in the project root:\n{}",
        root.stdout
    );
    assert!(
        last(&sub).contains(&want),
        "runs in the project root from a subfolder too:\n{}",
        sub.stdout
    );
}

#[test]
fn a_dot_toolgate_without_policies_is_not_a_project() {
    // `~/.toolgate` holds the artifact store: it must not turn the home folder into a project.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".toolgate/artifacts")).unwrap();
    let run = toolgate_in(dir.path(), &["test"]);
    assert_eq!(run.code, 2, "no tests folder: {}", run.transcript());
}
