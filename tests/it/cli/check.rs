//! The command line end to end: exit codes of `check` (0 clean, 1 problems, warnings only
//! with `--deny-warnings`, 2 usage and missing roots), `schema`, `init` (a starter set that
//! checks clean and whose policy tests hold), and bad input (non-UTF-8, empty, huge files,
//! directories, FIFOs, dangling links, link loops) — never a panic or a hang.

// Test code: a failed expectation should abort with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::support::check::{ROOT, Run, toolgate, toolgate_in};
use serde_json::{Value, json};

/// A draft 2020-12 validator of `schema` (formats are not checked: the shipped schemas'
/// own formats, `duration` and `size`, are known to the engine only).
fn draft_2020_12(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .map_err(|e| e.to_string())
}

fn check_fixture(name: &str, extra: &[&str]) -> Run {
    let dir = format!("tests/fixtures/check/{name}");
    let mut args = vec!["--no-builtin", "-p", dir.as_str(), "check"];
    args.extend(extra);
    toolgate(&args)
}

#[test]
fn a_clean_set_exits_0() {
    let run = toolgate(&["check"]);
    insta::assert_snapshot!("clean", run.transcript());
    assert_eq!(run.code, 0);
    let json = toolgate(&["check", "--format", "json"]);
    assert_eq!(json.code, 0);
    assert_eq!(json.json(), json!({"diagnostics": []}));
    for format in ["github", "sarif"] {
        assert_eq!(toolgate(&["check", "--format", format]).code, 0);
    }
    // The shipped example project is clean too.
    assert_eq!(toolgate(&["-p", "examples/policies", "check"]).code, 0);
}

#[test]
fn errors_exit_1_in_every_format() {
    for format in ["human", "json", "github", "sarif"] {
        let run = check_fixture("timeout_range", &["--format", format]);
        assert_eq!(run.code, 1, "{format}");
        assert!(run.stderr.is_empty(), "{format}: {}", run.stderr);
    }
}

#[test]
fn warnings_exit_0_unless_denied() {
    let run = check_fixture("rule_shadowed", &[]);
    assert_eq!(run.code, 0);
    assert!(
        run.stdout.contains("3 warnings\npolicy set OK: "),
        "{}",
        run.stdout
    );

    let denied = check_fixture("rule_shadowed", &["--deny-warnings"]);
    insta::assert_snapshot!("deny_warnings", denied.transcript());
    assert_eq!(denied.code, 1);
    assert!(!denied.stdout.contains("policy set OK"));

    let json = check_fixture("rule_shadowed", &["--deny-warnings", "--format", "json"]);
    assert_eq!(json.code, 1);
    for diagnostic in json.diagnostics() {
        assert_eq!(diagnostic["severity"], "error");
    }
    let github = check_fixture("rule_shadowed", &["--deny-warnings", "--format", "github"]);
    assert!(github.stdout.starts_with("::error "), "{}", github.stdout);

    // `--deny-warnings` changes nothing for a clean set.
    assert_eq!(toolgate(&["check", "--deny-warnings"]).code, 0);
}

#[test]
fn a_missing_root_exits_2() {
    let run = toolgate(&["-p", "tests/fixtures/check/no-such-root", "check"]);
    insta::assert_snapshot!("missing_root", run.transcript());
    assert_eq!(run.code, 2);
    let enforced = toolgate(&["--enforced", "no/such/org", "check", "--format", "json"]);
    assert_eq!(enforced.code, 2);
    assert_eq!(enforced.diagnostics()[0]["code"], "toolgate::io::not_found");
    // Even next to a root with errors of its own.
    let both = toolgate(&[
        "--no-builtin",
        "-p",
        "tests/fixtures/check/timeout_range",
        "-p",
        "missing",
        "check",
    ]);
    assert_eq!(both.code, 2);
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["check", "--format", "xml"][..],
        &["chek"][..],
        &["check", "--no-such-flag"][..],
        &["explain"][..],
    ] {
        let run = toolgate(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.transcript());
        assert!(run.stdout.is_empty());
        assert!(
            run.stderr.starts_with("error: "),
            "{args:?}: {}",
            run.stderr
        );
    }
}

#[test]
fn schema_lists_prints_and_refuses_unknown_names() {
    let list = toolgate(&["schema"]);
    insta::assert_snapshot!("schema_list", list.transcript());
    assert_eq!(list.code, 0);

    for (name, file) in [
        ("policy", "policy.schema.json"),
        ("batch", "batch.schema.json"),
        ("policy-test", "policy-test.schema.json"),
    ] {
        assert!(list.stdout.contains(name));
        let on_disk: Value = serde_json::from_str(
            &std::fs::read_to_string(Path::new(ROOT).join("schemas").join(file)).unwrap(),
        )
        .unwrap();
        for asked in [name, file] {
            let run = toolgate(&["schema", asked]);
            assert_eq!(run.code, 0);
            // The printed schema is the published one, and it is a draft 2020-12 schema.
            assert_eq!(run.json(), on_disk, "{asked}");
            assert_eq!(
                on_disk["$schema"],
                "https://json-schema.org/draft/2020-12/schema"
            );
            assert!(draft_2020_12(&run.json()).is_ok());
        }
    }

    let unknown = toolgate(&["schema", "polcy"]);
    insta::assert_snapshot!("schema_unknown", unknown.transcript());
    assert_eq!(unknown.code, 2);
    assert!(unknown.stdout.is_empty());
}

#[test]
fn init_writes_a_set_that_checks_clean() {
    let dir = tempfile::tempdir().unwrap();
    let run = toolgate_in(dir.path(), &["init", "starter"]);
    insta::assert_snapshot!("init", run.transcript());
    assert_eq!(run.code, 0);

    // Clean, without a single warning, as its own root and as the policies folder.
    for root in ["starter/policies", "starter"] {
        let check = toolgate_in(dir.path(), &["-p", root, "check", "--deny-warnings"]);
        assert_eq!(check.code, 0, "{root}: {}", check.transcript());
        assert!(!check.stdout.contains("warning"), "{}", check.stdout);
    }
    // The schemas next to it are the published ones (editors resolve the `$schema` comments).
    let written: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("starter/policy.schema.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(written, toolgate(&["schema", "policy"]).json());
    let project =
        std::fs::read_to_string(dir.path().join("starter/policies/project.yaml")).unwrap();
    assert!(project.starts_with("# yaml-language-server: $schema=../policy.schema.json\n"));

    // Its policy tests are valid against their schema, and hold under `plan`.
    let tests_text =
        std::fs::read_to_string(dir.path().join("starter/tests/project.test.yaml")).unwrap();
    let tests = crate::support::yaml::parse("project.test.yaml", &tests_text);
    let checker = draft_2020_12(&toolgate(&["schema", "policy-test"]).json()).unwrap();
    assert!(checker.is_valid(&tests));
    let cases = tests["tests"].as_array().unwrap();
    let calls: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(i, case)| {
            json!({"id": format!("t{i}"), "tool": case["call"]["tool"], "input": case["call"]["input"]})
        })
        .collect();
    std::fs::write(
        dir.path().join("batch.json"),
        json!({"calls": calls}).to_string(),
    )
    .unwrap();
    let plan = toolgate_in(
        dir.path(),
        &[
            "-p",
            "starter/policies",
            "plan",
            "batch.json",
            "--format",
            "json",
        ],
    );
    assert_eq!(plan.code, 0, "{}", plan.transcript());
    let planned = plan.json()["calls"].as_array().unwrap().clone();
    for (case, call) in cases.iter().zip(&planned) {
        let expect = &case["expect"];
        assert_eq!(call["decision"], expect["decision"], "{}", case["name"]);
        if let Some(rule) = expect.get("rule") {
            let rules: Vec<&Value> = call["reasons"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| &r["name"])
                .collect();
            assert!(rules.contains(&rule), "{}: {rules:?}", case["name"]);
        }
        if let Some(timeout) = expect.get("timeout_ms") {
            assert_eq!(&call["timeout_ms"], timeout, "{}", case["name"]);
        }
    }

    // A second run refuses to overwrite; `--force` does.
    let again = toolgate_in(dir.path(), &["init", "starter"]);
    insta::assert_snapshot!("init_exists", again.transcript());
    assert_eq!(again.code, 2);
    std::fs::write(dir.path().join("starter/policies/project.yaml"), "edited").unwrap();
    let forced = toolgate_in(dir.path(), &["init", "starter", "--force"]);
    assert_eq!(forced.code, 0);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("starter/policies/project.yaml")).unwrap(),
        project
    );
}

#[test]
fn init_defaults_to_a_dot_toolgate_folder() {
    let dir = tempfile::tempdir().unwrap();
    let run = toolgate_in(dir.path(), &["init"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(dir.path().join(".toolgate/policies/project.yaml").is_file());
    let check = toolgate_in(dir.path(), &["-p", ".toolgate/policies", "check"]);
    assert_eq!(check.code, 0, "{}", check.transcript());
}

/// A policy root with one bad entry of each kind.
fn bad_root(dir: &Path) {
    let root = dir.join("policies");
    std::fs::create_dir_all(root.join("nested.yaml")).unwrap();
    // A folder named like a policy file is walked like any folder.
    std::fs::write(
        root.join("nested.yaml/ok.yaml"),
        "version: 1\ntools:\n  Ok: {}\n",
    )
    .unwrap();
    std::fs::write(root.join("empty.yaml"), "").unwrap();
    std::fs::write(root.join("empty.toml"), "# nothing here\n").unwrap();
    std::fs::write(
        root.join("latin1.yaml"),
        b"version: 1\ntools:\n  Caf\xe9: {}\n",
    )
    .unwrap();
    std::fs::write(root.join("bom.yaml"), "\u{feff}version: 1\n").unwrap();
    let huge = format!("version: 1\n# {}\n", "x".repeat(9 * 1024 * 1024));
    std::fs::write(root.join("huge.yaml"), huge).unwrap();
    std::os::unix::fs::symlink("does-not-exist.yaml", root.join("dangling.yaml")).unwrap();
    std::os::unix::fs::symlink("does-not-exist", root.join("dangling-notes.md")).unwrap();
    std::os::unix::fs::symlink("..", root.join("nested.yaml/up")).unwrap();
    let fifo = std::process::Command::new("mkfifo")
        .arg(root.join("fifo.yaml"))
        .status()
        .unwrap();
    assert!(fifo.success());
    std::fs::write(root.join("binary.toml"), b"v\xff\xfe\x80 = 1\n").unwrap();
}

/// A root that holds more entries than any folder of policy files (`-p /`, `-p ~`) is
/// refused after 10 000 entries, with what to pass instead, rather than listed for minutes.
#[test]
fn a_root_too_large_to_be_a_policy_folder_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("home");
    for folder in 0..11 {
        let folder = root.join(format!("d{folder}"));
        std::fs::create_dir_all(&folder).unwrap();
        for file in 0..1000 {
            std::fs::write(folder.join(format!("f{file}.yaml")), "").unwrap();
        }
    }
    let run = toolgate_in(dir.path(), &["--no-builtin", "-p", "home", "check"]);
    insta::assert_snapshot!("too_large_root", run.transcript());
    assert_eq!(run.code, 1);
}

#[test]
fn bad_input_is_reported_with_positions_and_never_hangs() {
    let dir = tempfile::tempdir().unwrap();
    bad_root(dir.path());
    let run = toolgate_in(dir.path(), &["--no-builtin", "-p", "policies", "check"]);
    insta::assert_snapshot!("bad_input_human", run.transcript());
    assert_eq!(run.code, 1);

    let json = toolgate_in(
        dir.path(),
        &[
            "--no-builtin",
            "-p",
            "policies",
            "check",
            "--format",
            "json",
        ],
    );
    insta::assert_snapshot!("bad_input_json", json.transcript());
    let found: Vec<(String, String, Value, Value)> = json
        .diagnostics()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_owned(),
                d["file"].as_str().unwrap_or_default().to_owned(),
                d["line"].clone(),
                d["column"].clone(),
            )
        })
        .collect();
    let expect = |code: &str, file: &str, line: u32, column: u32| {
        assert!(
            found.contains(&(
                format!("toolgate::{code}"),
                format!("policies/{file}"),
                line.into(),
                column.into()
            )),
            "{code} at policies/{file}:{line}:{column} missing from {found:#?}"
        );
    };
    expect("syntax::empty", "empty.yaml", 1, 1);
    expect("syntax::empty", "empty.toml", 1, 1);
    // At the first invalid byte.
    expect("syntax::encoding", "latin1.yaml", 3, 6);
    expect("syntax::encoding", "binary.toml", 1, 2);
    expect("syntax::too_large", "huge.yaml", 1, 1);
    expect("io::read", "fifo.yaml", 1, 1);
    let messages = json.stdout.clone();
    assert!(messages.contains("dangling.yaml"));
    assert!(!messages.contains("dangling-notes.md"));
    assert!(messages.contains("symbolic link loop"));
    // The good files still load: the BOM is dropped, the nested folder is walked.
    assert!(!messages.contains("bom.yaml"));
    assert!(!messages.contains("ok.yaml"));
}

#[test]
fn a_file_root_with_an_unknown_extension_or_a_directory_entry() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "version: 1\n").unwrap();
    let run = toolgate_in(dir.path(), &["--no-builtin", "-p", "notes.txt", "check"]);
    insta::assert_snapshot!("unknown_extension", run.transcript());
    assert_eq!(run.code, 1);

    // An empty folder is an empty layer.
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let empty = toolgate_in(dir.path(), &["--no-builtin", "-p", "empty", "check"]);
    assert_eq!(empty.code, 0, "{}", empty.transcript());
}

/// A root given by name that is a FIFO or a device is refused as not a regular file, at its
/// name (it was listed as a folder: "Not a directory (os error 20)", with the wrong advice).
#[test]
fn a_root_that_is_a_fifo_or_a_device_is_not_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    nix::unistd::mkfifo(&dir.path().join("p.yaml"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    for root in ["p.yaml", "/dev/null"] {
        let run = toolgate_in(dir.path(), &["--no-builtin", "-p", root, "check"]);
        let shown = run.transcript();
        assert!(
            shown.contains(&format!("`{root}` is not a regular file")),
            "{shown}"
        );
        assert!(!shown.contains("Not a directory"), "{shown}");
    }
}
