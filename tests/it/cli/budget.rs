//! `toolgate run` and result budgets, through the real binary: the `BatchFinalized` record
//! holds exactly the text SPEC §8.3 defines (computed independently in `support::budget`), the
//! full outputs are in 0600 files the metadata names, retention is honoured when the run
//! ends, and the human summary says per call how much was cut and where the full output
//! lives.

// Test helpers panic on purpose: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::budget::{self as spec, Unit};
use serde_json::{Value, json};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/budget/engine/tools.yaml")
}

/// A workspace with the fixture policies, an overlay and a batch file.
struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    fn new(overlay: &str, calls: Value) -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("overlay.yaml"),
            format!("version: 1\n{overlay}"),
        )
        .unwrap();
        // JSON is YAML: no escaping questions for multi-byte text.
        fs::write(
            dir.path().join("batch.json"),
            serde_json::to_string_pretty(&json!({ "calls": calls })).unwrap(),
        )
        .unwrap();
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Runs `toolgate run` with extra arguments; returns (exit code, stdout, stderr).
    fn run(&self, extra: &[&str]) -> (i32, String, String) {
        let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .arg("--no-builtin")
            .arg("-p")
            .arg(fixture())
            .arg("-p")
            .arg(self.path().join("overlay.yaml"))
            .arg("--workspace")
            .arg(self.path())
            .arg("--color")
            .arg("never")
            .arg("run")
            .arg(self.path().join("batch.json"))
            .args(extra)
            // `~` in artifact paths must not escape the test's folder.
            .env("HOME", self.path())
            .output()
            .unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8(output.stdout).unwrap(),
            String::from_utf8(output.stderr).unwrap(),
        )
    }

    /// The `BatchFinalized` record of a jsonl run (its last line), after checking that every
    /// line is one JSON event.
    fn finalized(&self) -> Value {
        let (code, stdout, stderr) = self.run(&["--format", "jsonl"]);
        assert_eq!(code, 0, "stderr: {stderr}");
        let lines: Vec<Value> = stdout
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert!(lines.iter().all(|l| l["type"].is_string()));
        let last = lines.last().unwrap().clone();
        assert_eq!(last["type"], "BatchFinalized");
        last
    }
}

fn overlay(budget: &str, unit: Unit, extra: &str) -> String {
    format!(
        "engine:\n  batch_budget: {budget}\n  budget_unit: {}\n{extra}",
        unit.name()
    )
}

fn seq(n: usize) -> String {
    (1..=n).map(|i| format!("{i}\n")).collect()
}

fn result<'a>(finalized: &'a Value, id: &str) -> &'a Value {
    finalized["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["call_id"] == id)
        .unwrap_or_else(|| panic!("no result for `{id}`"))
}

fn persisted(result: &Value) -> Option<Vec<PathBuf>> {
    result["metadata"].get("persisted_files").map(|files| {
        files
            .as_array()
            .unwrap()
            .iter()
            .map(|p| PathBuf::from(p.as_str().unwrap()))
            .collect()
    })
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                out.extend(files(&path));
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The session folder the run wrote to: `s` and 32 hex digits, under `root`.
fn session_folder(path: &Path, root: &Path) -> String {
    let folder = path.parent().unwrap();
    assert_eq!(folder.parent().unwrap(), root, "{path:?} is under {root:?}");
    let name = folder.file_name().unwrap().to_str().unwrap().to_owned();
    assert!(
        name.len() == 33
            && name.starts_with('s')
            && name[1..].chars().all(|c| c.is_ascii_hexdigit()),
        "{name}"
    );
    name
}

/// The producer's head envelope for `seq 500` with a 100-unit preview: the first 100 units
/// are `1`…`36` and the first digit of `37`, so the preview stops at the newline after `36`.
fn seq_500_envelope(path: &Path, unit: Unit) -> String {
    let preview: Vec<String> = (1..=36).map(|i| i.to_string()).collect();
    let preview = preview.join("\n");
    assert_eq!(preview.len(), 98);
    format!(
        "<persisted-output>\nOutput too large (1892 {u}). Full output saved to: {}\n\nPreview (first 98 {u}):\n{preview}\n...\n</persisted-output>",
        path.display(),
        u = unit.name()
    )
}

fn batch_calls(multi: &str) -> Value {
    json!([
        { "id": "seq", "tool": "Seq", "input": { "n": 2000 } },
        { "id": "multi", "tool": "Printf", "input": { "text": multi } },
        { "id": "ok", "tool": "Printf", "input": { "text": "ok" } },
        { "id": "spill", "tool": "SeqSpill", "input": { "n": 500 } },
    ])
}

#[test]
fn run_jsonl_finalizes_exactly_as_the_spec_defines() {
    for unit in [Unit::Chars, Unit::Bytes] {
        let multi = spec::mixed_text("m", 1500);
        let ws = Workspace::new(&overlay("800", unit, ""), batch_calls(&multi));
        let finalized = ws.finalized();
        let root = ws.path().join("artifacts");

        let spill_files = persisted(result(&finalized, "spill")).unwrap();
        assert_eq!(spill_files.len(), 1);
        let session = session_folder(&spill_files[0], &root);
        let dir = root.join(&session);
        assert_eq!(spill_files[0], dir.join("spill.txt"));

        // What the finalizer saw: the outputs, and the producer's envelope for `spill`.
        let envelope = seq_500_envelope(&spill_files[0], unit);
        let full_seq = seq(2000);
        let fulls: [(&str, &str, u64); 4] = [
            ("seq", &full_seq, spec::len(&full_seq, unit)),
            ("multi", &multi, spec::len(&multi, unit)),
            ("ok", "ok", 2),
            ("spill", &envelope, 1892),
        ];
        let lengths: Vec<u64> = fulls.iter().map(|(_, t, _)| spec::len(t, unit)).collect();
        let allocs = spec::water_fill(&lengths, 800);
        let mut total = 0;
        for ((id, full, original), alloc) in fulls.iter().zip(&allocs) {
            let r = result(&finalized, id);
            let cut = spec::len(full, unit) > *alloc;
            assert_eq!(
                cut,
                *id != "ok",
                "{unit:?}: the batch must cut all but `ok`"
            );
            let named = match *id {
                "ok" => Vec::new(),
                _ => vec![dir.join(format!("{id}.txt"))],
            };
            let shown: Vec<String> = named.iter().map(|p| p.display().to_string()).collect();
            let expected = spec::cut_slot(full, *alloc, unit, &shown);
            assert_eq!(
                r["model_content"].as_str().unwrap(),
                expected,
                "{unit:?} `{id}`"
            );
            let meta = &r["metadata"];
            assert_eq!(meta["truncated"], cut, "{unit:?} `{id}`");
            assert_eq!(meta["original_size"], *original, "{unit:?} `{id}`");
            assert_eq!(
                meta["final_size"],
                spec::len(&expected, unit),
                "{unit:?} `{id}`"
            );
            assert_eq!(meta["unit"], unit.name());
            match *id {
                "ok" => assert_eq!(persisted(r), None),
                _ => assert_eq!(persisted(r), Some(named.clone())),
            }
            total += spec::len(&expected, unit);
        }
        assert!(total <= 800, "{unit:?}: {total}");

        // The full outputs, 0600, exactly; the producer's artifact is not written twice.
        let written = [
            ("multi", multi.clone()),
            ("seq", full_seq.clone()),
            ("spill", seq(500)),
        ];
        assert_eq!(
            files(&root),
            written
                .iter()
                .map(|(id, _)| dir.join(format!("{id}.txt")))
                .collect::<Vec<_>>()
        );
        for (id, content) in written {
            let path = dir.join(format!("{id}.txt"));
            assert_eq!(fs::read_to_string(&path).unwrap(), content, "{id}");
            assert_eq!(
                fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
    }
}

#[test]
fn a_batch_that_fits_is_returned_as_produced_and_only_the_producer_wrote() {
    let multi = spec::mixed_text("m", 1500);
    let ws = Workspace::new(&overlay("100000", Unit::Chars, ""), batch_calls(&multi));
    let finalized = ws.finalized();
    assert_eq!(result(&finalized, "seq")["model_content"], seq(2000));
    assert_eq!(result(&finalized, "multi")["model_content"], multi);
    for id in ["seq", "multi", "ok"] {
        let r = result(&finalized, id);
        assert_eq!(r["metadata"]["truncated"], false);
        assert_eq!(persisted(r), None, "`{id}`: no persistence decision");
    }
    let spill = persisted(result(&finalized, "spill")).unwrap();
    assert_eq!(files(&ws.path().join("artifacts")), spill);
}

#[test]
fn a_disabled_batch_budget_cuts_nothing() {
    let multi = spec::mixed_text("m", 1500);
    for budget in ["none", "0"] {
        let ws = Workspace::new(&overlay(budget, Unit::Chars, ""), batch_calls(&multi));
        let finalized = ws.finalized();
        assert_eq!(result(&finalized, "seq")["model_content"], seq(2000));
        assert_eq!(result(&finalized, "seq")["metadata"]["truncated"], false);
    }
}

#[test]
fn temporary_artifacts_are_removed_when_the_run_ends_and_others_stay() {
    // The finalizer writes with `engine.artifacts.retention`; a contract's
    // `budget.retention` decides for the producer's artifact.
    let calls = json!([
        { "id": "seq", "tool": "Seq", "input": { "n": 2000 } },
        { "id": "spill", "tool": "SeqSpill", "input": { "n": 500 } },
        { "id": "temp", "tool": "SeqSpillTemporary", "input": { "n": 500 } },
        { "id": "proj", "tool": "SeqSpillProject", "input": { "n": 500 } },
    ]);
    let extra = "  artifacts: { retention: temporary }\n";
    let ws = Workspace::new(&overlay("3000", Unit::Chars, extra), calls);
    let finalized = ws.finalized();
    let root = ws.path().join("artifacts");
    let project = ws.path().join("project-artifacts");
    let path = |id: &str| persisted(result(&finalized, id)).unwrap()[0].clone();

    let session = session_folder(&path("seq"), &root);
    assert_eq!(path("seq"), root.join(&session).join("seq.txt"));
    assert_eq!(path("spill"), root.join(&session).join("spill.txt"));
    assert_eq!(path("temp"), root.join(&session).join("temp.txt"));
    assert_eq!(path("proj"), project.join(&session).join("proj.txt"));
    // Gone: the finalizer's (temporary by engine setting) and the temporary contract's.
    assert!(!path("seq").exists());
    assert!(!path("temp").exists());
    // Kept: `session` and `project`.
    assert_eq!(fs::read_to_string(path("spill")).unwrap(), seq(500));
    assert_eq!(fs::read_to_string(path("proj")).unwrap(), seq(500));
    assert_eq!(files(&root), vec![path("spill")]);
    assert_eq!(files(&project), vec![path("proj")]);
}

#[test]
fn project_retention_puts_the_finalizers_artifacts_under_the_project() {
    let calls = json!([{ "id": "seq", "tool": "Seq", "input": { "n": 2000 } }]);
    let extra = "  artifacts: { retention: project }\n";
    let ws = Workspace::new(&overlay("500", Unit::Chars, extra), calls);
    let finalized = ws.finalized();
    let files = persisted(result(&finalized, "seq")).unwrap();
    let project = ws.path().join("project-artifacts");
    let session = session_folder(&files[0], &project);
    assert_eq!(files, vec![project.join(session).join("seq.txt")]);
    assert_eq!(fs::read_to_string(&files[0]).unwrap(), seq(2000));
}

/// The human summary, from its first line on, with the workspace and session normalised.
fn summary(ws: &Workspace, code: i32, stdout: &str, stderr: &str) -> String {
    let start = stdout.find("\nsummary:").expect("a summary");
    let mut text = format!(
        "exit code: {code}\n--- stdout (summary) ---{}--- stderr ---\n{stderr}",
        &stdout[start..]
    );
    let workspace = ws.path().display().to_string();
    text = text.replace(&workspace, "[WS]");
    // Session folders are `s` + 32 hex digits.
    while let Some(at) = text.find("artifacts/s") {
        let from = at + "artifacts/".len();
        let end = from + 33;
        if text.len() < end || !text[from + 1..end].chars().all(|c| c.is_ascii_hexdigit()) {
            break;
        }
        text.replace_range(from..end, "[SESSION]");
    }
    text
}

#[test]
fn the_human_summary_says_what_was_cut_and_where_the_full_output_is() {
    let calls = json!([
        { "id": "seq", "tool": "Seq", "input": { "n": 2000 } },
        { "id": "ok", "tool": "Printf", "input": { "text": "ok" } },
        { "id": "spill", "tool": "SeqSpill", "input": { "n": 500 } },
        { "id": "trunc", "tool": "SeqTrunc", "input": { "n": 100 } },
        { "id": "fail", "tool": "Seq", "input": { "n": "many" } },
    ]);
    // 694 = 2 + 92 + 100 (the three that fit) + 2 × 250: `seq` and the envelope of `spill`
    // (longer than 250 whatever the temporary folder's name) get 250 each, so the numbers do
    // not depend on the length of the workspace path.
    let ws = Workspace::new(&overlay("694", Unit::Chars, ""), calls);
    let (code, stdout, stderr) = ws.run(&[]);
    insta::with_settings!({
        snapshot_path => "../../fixtures/budget/snapshots",
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!("cli_run_human_summary", summary(&ws, code, &stdout, &stderr));
    });
}
