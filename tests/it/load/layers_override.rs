//! Layers (SPEC §2.3) through the binary: field-by-field override across `-p` roots (lowest
//! first), duplicates within one root versus the same name in two roots, `--no-builtin`, and
//! an enforced layer: its locks refuse to be weakened (also through a mode patch), its deny
//! rules beat a later layer's higher-priority allow, and locks outside it only warn.

// Test code: a failed expectation should abort with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::support::check::{ROOT, assert_points_at, place, toolgate};
use serde_json::Value;

const LAYERS: &str = "tests/fixtures/layers";

fn root(name: &str) -> String {
    format!("{LAYERS}/{name}")
}

/// `explain TOOL --format json` fields by name: (value, `file:line:column`).
fn explain(args: &[&str], tool: &str) -> Vec<(String, Value, String)> {
    let mut all = args.to_vec();
    all.extend(["explain", tool, "--format", "json"]);
    let run = toolgate(&all);
    assert_eq!(run.code, 0, "{}", run.transcript());
    run.json()["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let origin = match f["file"].as_str() {
                Some(file) => format!("{file}:{}:{}", f["line"], f["column"]),
                None => "default".to_owned(),
            };
            (
                f["field"].as_str().unwrap().to_owned(),
                f["value"].clone(),
                origin,
            )
        })
        .collect()
}

fn field<'a>(fields: &'a [(String, Value, String)], name: &str) -> (&'a Value, &'a str) {
    let (_, value, origin) = fields
        .iter()
        .find(|(f, _, _)| f == name)
        .unwrap_or_else(|| panic!("no field `{name}`"));
    (value, origin)
}

#[test]
fn later_roots_override_field_by_field() {
    let (base, project, local) = (root("base"), root("project"), root("local"));
    let args = [
        "--no-builtin",
        "-p",
        base.as_str(),
        "-p",
        project.as_str(),
        "-p",
        local.as_str(),
    ];
    let check = toolgate(&[&args[..], &["check"]].concat());
    assert_eq!(check.code, 0, "{}", check.transcript());

    let human = toolgate(&[&args[..], &["explain", "web"]].concat());
    insta::assert_snapshot!("explain_three_roots", human.transcript());

    let fields = explain(&args, "web");
    let expect = [
        // Set by base only.
        (
            "timeout.default",
            Value::from("30s"),
            "base/fetch.yaml:11:25",
            "30s",
        ),
        (
            "budget.overflow",
            Value::from("truncate"),
            "base/fetch.yaml:12:43",
            "truncate",
        ),
        (
            "concurrency.read_only",
            Value::from(true),
            "base/fetch.yaml:10:54",
            "true",
        ),
        // Overridden by project (TOML), then by local.
        (
            "timeout.max",
            Value::from("10m"),
            "local/fetch.yaml:4:21",
            "10m",
        ),
        // Overridden by project only.
        (
            "permission.default",
            Value::from("allow"),
            "project/fetch.toml:5:26",
            "\"allow\"",
        ),
        // Overridden by local only.
        (
            "budget.max_model",
            Value::from(20000),
            "local/fetch.yaml:5:26",
            "20000",
        ),
    ];
    for (name, value, place, text) in expect {
        let (found, origin) = field(&fields, name);
        assert_eq!(found, &value, "{name}");
        let place = format!("{LAYERS}/{place}");
        assert_eq!(origin, place, "{name}");
        assert_points_at(Path::new(ROOT), &place, text);
    }
    // The engine defaults stay loaded under `--no-builtin`.
    let (_, origin) = field(&fields, "budget.preview");
    assert!(
        origin.starts_with("builtin:policies/engine.yaml:"),
        "{origin}"
    );

    // The rule is merged by name: the project raised its priority, the base's decision stays.
    let run = toolgate(&[&args[..], &["explain", "Fetch", "--format", "json"]].concat());
    let rules = run.json()["rules"].clone();
    assert_eq!(rules[0]["name"], "fetch-docs");
    assert_eq!(rules[0]["decision"], "allow");
    assert_eq!(rules[0]["priority"], 10);
}

#[test]
fn the_order_of_roots_decides() {
    // The same roots, highest first: now the base wins every field it sets.
    let (base, local) = (root("base"), root("local"));
    let fields = explain(&["--no-builtin", "-p", &local, "-p", &base], "Fetch");
    let (max, origin) = field(&fields, "timeout.max");
    assert_eq!(max, "2m");
    assert_eq!(origin, format!("{LAYERS}/base/fetch.yaml:11:35"));
    assert_points_at(Path::new(ROOT), origin, "2m");
    assert_eq!(field(&fields, "budget.max_model").0, 10000);
}

#[test]
fn duplicates_within_a_root_are_errors_but_across_roots_overrides() {
    let split = root("split");
    let one_root = toolgate(&["--no-builtin", "-p", &split, "check", "--format", "json"]);
    insta::assert_snapshot!("duplicates_in_one_root", one_root.transcript());
    assert_eq!(one_root.code, 1);
    let diagnostics = one_root.diagnostics();
    assert_eq!(diagnostics.len(), 2);
    for diagnostic in &diagnostics {
        assert_eq!(diagnostic["code"], "toolgate::semantic::duplicate_name");
        assert_eq!(diagnostic["file"], format!("{split}/b/more.yaml"));
        let message = diagnostic["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("(first defined here: {split}/a/tools.yaml:")),
            "{message}"
        );
    }

    // The same two files as two roots: the second overrides the first.
    let (a, b) = (format!("{split}/a"), format!("{split}/b"));
    let two_roots = toolgate(&["--no-builtin", "-p", &a, "-p", &b, "check"]);
    assert_eq!(two_roots.code, 0, "{}", two_roots.transcript());
    let fields = explain(&["--no-builtin", "-p", &a, "-p", &b], "Lint");
    assert_eq!(field(&fields, "description").0, "again");
    let run = toolgate(&[
        "--no-builtin",
        "-p",
        &a,
        "-p",
        &b,
        "explain",
        "Lint",
        "--format",
        "json",
    ]);
    assert_eq!(run.json()["rules"][0]["decision"], "ask");
}

#[test]
fn no_builtin_drops_the_shipped_contracts_but_not_the_engine_defaults() {
    let with = toolgate(&["check"]);
    assert_eq!(with.code, 0);
    assert!(with.stdout.contains(" 10 tools, "), "{}", with.stdout);

    let without = toolgate(&["--no-builtin", "check"]);
    assert_eq!(
        without.transcript(),
        "exit: 0\n--- stdout\npolicy set OK: 2 files, 0 tools, 0 rules\n--- stderr\n"
    );

    let bash = toolgate(&["--no-builtin", "explain", "Bash"]);
    assert_eq!(bash.code, 2);
    assert!(bash.stderr.contains("no tool or alias named `Bash`"));

    // A project layer that relies on the built-in Bash contract needs the built-in layer.
    let permissive = root("permissive");
    let broken = toolgate(&["--no-builtin", "-p", &permissive, "check"]);
    assert_eq!(broken.code, 1);
    assert!(broken.stdout.contains("unknown tool `Bash`"));
}

/// The decision `plan` reports for each call of the curl batch: (id, decision, rules).
fn decisions(args: &[&str]) -> Vec<(String, String, Vec<String>)> {
    let batch = root("batches/curl.yaml");
    let mut all = args.to_vec();
    all.extend(["plan", batch.as_str(), "--format", "json"]);
    let run = toolgate(&all);
    assert_eq!(run.code, 0, "{}", run.transcript());
    run.json()["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| {
            let rules = call["reasons"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|r| r["name"].as_str().map(str::to_owned))
                .collect();
            (
                call["id"].as_str().unwrap().to_owned(),
                call["decision"].as_str().unwrap().to_owned(),
                rules,
            )
        })
        .collect()
}

#[test]
fn an_enforced_deny_beats_a_later_higher_priority_allow() {
    let (org, permissive) = (root("org"), root("permissive"));
    let enforced = decisions(&["--enforced", &org, "-p", &permissive]);
    assert_eq!(enforced[0].0, "curl");
    assert_eq!(enforced[0].1, "deny", "{enforced:?}");
    assert_eq!(enforced[0].2, ["no-curl"]);
    // Other calls are untouched.
    assert_eq!(enforced[1].1, "allow");

    // The same files without enforcement: priority decides, and the project's allow wins.
    let plain = decisions(&["-p", &org, "-p", &permissive]);
    assert_eq!(plain[0].1, "allow", "{plain:?}");
    assert_eq!(plain[0].2, ["curl-anything"]);

    // Flag order does not matter: enforced roots load right after the built-in layer.
    let reversed = decisions(&["-p", &permissive, "--enforced", &org]);
    assert_eq!(reversed[0].1, "deny");
}

/// An enforced ask holds against a later layer's allow of any priority; a later deny is
/// still a deny.
#[test]
fn an_enforced_ask_beats_a_later_higher_priority_allow() {
    let (org, permissive, strict) = (root("org_ask"), root("permissive"), root("no_curl"));
    let enforced = decisions(&["--enforced", &org, "-p", &permissive]);
    assert_eq!(enforced[0].1, "ask", "{enforced:?}");
    assert_eq!(enforced[0].2, ["ask-curl"]);
    assert_eq!(enforced[1].1, "allow");
    let plain = decisions(&["-p", &org, "-p", &permissive]);
    assert_eq!(plain[0].1, "allow", "{plain:?}");
    let stricter = decisions(&["--enforced", &org, "-p", &strict]);
    assert_eq!(stricter[0].1, "deny", "{stricter:?}");
    assert_eq!(stricter[0].2, ["project-no-curl"]);
}

#[test]
fn an_enforced_layer_refuses_to_be_weakened() {
    let (org, weaken, bypass) = (root("org"), root("weaken"), root("mode_bypass"));
    for (name, later) in [("weaken", &weaken), ("mode_bypass", &bypass)] {
        let human = toolgate(&["--enforced", &org, "-p", later, "check"]);
        insta::assert_snapshot!(format!("enforced_{name}"), human.transcript());
        assert_eq!(human.code, 1);
    }
    let json = toolgate(&[
        "--enforced",
        &org,
        "-p",
        &weaken,
        "check",
        "--format",
        "json",
    ]);
    let diagnostics = json.diagnostics();
    let places: Vec<(String, String)> = diagnostics
        .iter()
        .map(|d| (place(d), d["message"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(places.len(), 2, "{places:?}");
    // The change, with the lock it breaks.
    assert_eq!(places[0].0, format!("{weaken}/bash.yaml:4:21"));
    assert!(
        places[0]
            .1
            .contains(&format!("(locked here: {org}/org.yaml:5:14)"))
    );
    assert_points_at(Path::new(ROOT), &places[0].0, "1h");
    assert_points_at(
        Path::new(ROOT),
        &format!("{org}/org.yaml:5:14"),
        "timeout.max",
    );
    // Disabling an enforced rule, with the rule's definition.
    assert_eq!(places[1].0, format!("{weaken}/bash.yaml:6:5"));
    assert!(
        places[1]
            .1
            .contains(&format!("(defined here: {org}/org.yaml:7:5)"))
    );

    // Writing the locked value itself, or another field, is fine.
    let same = root("same");
    let ok = toolgate(&["--enforced", &org, "-p", &same, "check"]);
    assert_eq!(ok.code, 0, "{}", ok.transcript());
    let fields = explain(&["--enforced", &org, "-p", &same], "Bash");
    assert_eq!(field(&fields, "timeout.max").0, "10m");
    assert_eq!(field(&fields, "timeout.default").0, "1m");
}

#[test]
fn locks_outside_an_enforced_layer_warn() {
    let org = root("org");
    let run = toolgate(&["-p", &org, "check"]);
    insta::assert_snapshot!("lock_not_enforced", run.transcript());
    assert_eq!(run.code, 0);
    let json = toolgate(&["-p", &org, "check", "--format", "json"]);
    let diagnostics = json.diagnostics();
    assert_eq!(diagnostics.len(), 1);
    assert_eq!(diagnostics[0]["code"], "toolgate::semantic::invalid_lock");
    assert_eq!(diagnostics[0]["severity"], "warning");
    let denied = toolgate(&["-p", &org, "check", "--deny-warnings"]);
    assert_eq!(denied.code, 1);

    let enforced = toolgate(&["--enforced", &org, "check"]);
    assert_eq!(enforced.code, 0);
    assert!(!enforced.stdout.contains("warning"), "{}", enforced.stdout);
}

/// A later layer cannot change how an agent's calls map onto toolgate tools, or the command
/// table, once an enforced layer is loaded: remapping Claude Code's `Bash` onto a tool that
/// allows everything, switching its `Read` mapping off, or declaring `cat`'s operands text
/// would step around the organisation's rules. Without an enforced layer the same files load.
#[test]
fn agent_maps_and_the_command_table_hold_against_layers_after_an_enforced_one() {
    let (org, remap) = (root("org"), root("step_around"));
    let human = toolgate(&["--enforced", &org, "-p", &remap, "check"]);
    insta::assert_snapshot!("enforced_step_around", human.transcript());
    assert_eq!(human.code, 1);
    let json = toolgate(&[
        "--enforced",
        &org,
        "-p",
        &remap,
        "check",
        "--format",
        "json",
    ]);
    let places: Vec<String> = json.diagnostics().iter().map(place).collect();
    assert_eq!(
        places,
        [
            format!("{remap}/agents.yaml:13:21"),
            format!("{remap}/agents.yaml:14:25"),
            format!("{remap}/agents.yaml:22:22"),
        ]
    );
    assert_points_at(Path::new(ROOT), &places[0], "Shell2");

    // The hook does not answer from a set that failed to load: the organisation's deny holds.
    let call = br#"{"session_id":"s","hook_event_name":"PreToolUse","cwd":"/tmp","tool_name":"Bash","tool_input":{"command":"curl https://example.com"}}"#;
    let hook = |args: &[&str]| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
        command
            .args(args)
            .args(["hook", "claude"])
            .current_dir(ROOT)
            .env("TOOLGATE_CONFIG_DIR", crate::support::check::NO_CONFIG);
        crate::support::check::run_with_stdin(&mut command, call)
    };
    let answer = hook(&["--enforced", &org, "-p", &remap]).json();
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "deny",
        "{answer}"
    );

    let plain = toolgate(&["-p", &org, "-p", &remap, "check"]);
    assert_eq!(plain.code, 0, "{}", plain.transcript());
}
