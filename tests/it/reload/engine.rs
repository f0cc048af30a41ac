//! Hot reload at library level: an [`Engine`] with a [`Reloader`]. A batch that is running
//! when a reload lands finishes on its generation; no call sees half of a change; each reload
//! reports what changed in effect; the watcher reacts to saves by rename and ignores files
//! that are not policies.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::reload::{Rig, probe, probe_policy, save_by_rename};
use serde_json::{Value, json};
use toolgate::ReloadOutcome;
use toolgate::ToolCall;
use toolgate::{Batch, BatchOutcome, Turn};
use toolgate::{CallContext, HandlerFuture, HandlerOutput};
use toolgate::{CallStatus, EventKind};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/reload")
            .join(name),
    )
    .unwrap()
}

/// `probe_policy(k)` plus `Hold`, a tool that runs alone and waits for the test's go-ahead.
fn hold_policy(k: u64) -> String {
    probe_policy(k).replace(
        "rules:",
        "  Hold:\n    concurrency: { concurrent_safe: false, side_effect_scope: none }\n    permission: { default: allow }\n    handler: { kind: native }\nrules:",
    )
}

fn probe_call(id: &str, token: &str) -> ToolCall {
    ToolCall::new(id, "Probe", json!({"token": token}))
}

fn batch(id: &str, calls: Vec<ToolCall>) -> Batch {
    Batch {
        id: Some(toolgate::BatchId::new(id)),
        calls,
    }
}

/// Every event of the batch carries the outcome's generation.
fn assert_one_generation(rig: &Rig, outcome: &BatchOutcome) {
    let events = rig.batch_events(outcome.batch_id.as_str());
    assert!(!events.is_empty());
    for event in &events {
        assert_eq!(
            event.generation,
            outcome.generation,
            "{} of batch {} ran on another generation",
            event.type_name(),
            outcome.batch_id
        );
    }
}

async fn reload(rig: &Rig) -> ReloadOutcome {
    let reloader = Arc::clone(&rig.reloader);
    tokio::task::spawn_blocking(move || reloader.reload())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_running_while_a_reload_lands_finishes_on_its_generation() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tools.yaml");
    std::fs::write(&file, hold_policy(1)).unwrap();
    let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel::<()>();
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let gate = Arc::clone(&release);
    let rig = Rig::new(dir.path(), move |builder| {
        builder.native("Probe", probe).native(
            "Hold",
            move |_input: Value, _ctx: CallContext| -> HandlerFuture {
                let started = started_tx.clone();
                let gate = Arc::clone(&gate);
                Box::pin(async move {
                    let _ = started.send(());
                    let _permit = gate.acquire().await;
                    Ok(HandlerOutput::text("held"))
                })
            },
        )
    });

    let engine = rig.engine.clone();
    let running = tokio::spawn(async move {
        let calls = vec![
            ToolCall::new("hold", "Hold", json!({})),
            probe_call("one", "1"),
            probe_call("two", "2"),
        ];
        engine
            .execute_batch(batch("old", calls), &Turn::default())
            .await
    });
    started.recv().await.unwrap();
    std::fs::write(&file, hold_policy(2)).unwrap();
    let ReloadOutcome::Reloaded { generation, .. } = reload(&rig).await else {
        panic!("save 2 is valid");
    };
    assert_eq!(generation, 2);
    assert_eq!(rig.engine.snapshot().generation(), 2);
    release.add_permits(1);
    let outcome = running.await.unwrap().unwrap();

    // The calls after the reload still ran under save 1: token 1 allowed, token 2 denied.
    assert_eq!(outcome.generation, 1);
    let statuses: Vec<CallStatus> = outcome.results.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [CallStatus::Ok, CallStatus::Ok, CallStatus::Denied]
    );
    assert_one_generation(&rig, &outcome);

    // The next batch runs on generation 2, where only token 2 is allowed.
    let next = rig
        .engine
        .execute_batch(
            batch("new", vec![probe_call("one", "1"), probe_call("two", "2")]),
            &Turn::default(),
        )
        .await
        .unwrap();
    assert_eq!(next.generation, 2);
    let statuses: Vec<CallStatus> = next.results.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [CallStatus::Denied, CallStatus::Ok]);
    assert_one_generation(&rig, &next);
}

/// Save `k` split over two files: the input schema (tools.yaml) accepts only token `k`, the
/// rule (rules.yaml) allows only token `k`. A call that saw one file's save and the other's
/// older save would be denied, which no consistent generation ever does.
fn write_split(dir: &Path, k: u64) {
    std::fs::write(
        dir.join("tools.yaml"),
        format!(
            r#"version: 1
tools:
  Probe:
    description: "save {k}"
    input_schema:
      type: object
      required: [token]
      properties:
        token: {{ enum: ["{k}"] }}
    concurrency: {{ concurrent_safe: true, read_only: true, side_effect_scope: none }}
    permission: {{ default: deny }}
    handler: {{ kind: native }}
"#
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("rules.yaml"),
        format!(
            r#"version: 1
rules:
  - name: allow-current
    tools: [Probe]
    match:
      token: {{ equals: "{k}" }}
    decision: allow
"#
        ),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_call_ever_sees_a_half_applied_change() {
    let dir = tempfile::tempdir().unwrap();
    write_split(dir.path(), 1);
    let rig = Arc::new(Rig::new(dir.path(), |b| b.native("Probe", probe)));
    let written = Arc::new(std::sync::atomic::AtomicU64::new(1));
    let done = tokio_util::sync::CancellationToken::new();

    let mut runners = Vec::new();
    for runner in 0..3 {
        let rig = Arc::clone(&rig);
        let written = Arc::clone(&written);
        let done = done.clone();
        runners.push(tokio::spawn(async move {
            let mut outcomes = Vec::new();
            let mut n = 0;
            while !done.is_cancelled() {
                n += 1;
                let k = written.load(std::sync::atomic::Ordering::SeqCst);
                let calls = (k.saturating_sub(2)..=k + 1)
                    .map(|t| probe_call(&format!("t{t}"), &t.to_string()))
                    .collect();
                let outcome = rig
                    .engine
                    .execute_batch(batch(&format!("r{runner}-{n}"), calls), &Turn::default())
                    .await
                    .unwrap();
                outcomes.push(outcome);
            }
            outcomes
        }));
    }
    for k in 2..=60 {
        write_split(dir.path(), k);
        written.store(k, std::sync::atomic::Ordering::SeqCst);
        let outcome = reload(&rig).await;
        assert!(
            matches!(outcome, ReloadOutcome::Reloaded { .. }),
            "{outcome:?}"
        );
    }
    done.cancel();
    let saves = rig.saves.lock().unwrap().clone();
    let mut checked = 0;
    for runner in runners {
        for outcome in runner.await.unwrap() {
            let save = saves[&outcome.generation];
            for result in &outcome.results {
                let token = &result.call_id.as_str()[1..];
                if token == save.to_string() {
                    assert_eq!(result.status, CallStatus::Ok, "{result:?}");
                } else {
                    assert_eq!(
                        result.status,
                        CallStatus::Error,
                        "call {} under save {save}: {result:?}",
                        result.call_id
                    );
                    assert!(result.model_content.contains("InputValidationError"));
                }
                checked += 1;
            }
            assert_one_generation(&rig, &outcome);
        }
    }
    assert!(checked > 0);
    assert_eq!(rig.engine.snapshot().generation(), 60);
}

#[tokio::test]
async fn the_diff_reports_tools_rules_and_values_with_before_and_after() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("policy.yaml");
    std::fs::write(&file, fixture("diff/v1.yaml")).unwrap();
    let rig = Rig::new(dir.path(), |b| b);

    std::fs::write(&file, fixture("diff/v2.yaml")).unwrap();
    let ReloadOutcome::Reloaded {
        generation,
        previous,
        changes,
        files,
        warnings,
    } = reload(&rig).await
    else {
        panic!("v2 is valid");
    };
    assert_eq!(generation, 2);
    assert_eq!(previous, Some(1));
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        files.len(),
        3,
        "the engine defaults, the review table and policy.yaml: {files:?}"
    );
    assert!(files.iter().any(|f| f.ends_with("policy.yaml")));
    let described: Vec<String> = changes.iter().map(|c| c.describe()).collect();
    assert_eq!(
        described,
        [
            "tool `Read`: permission.default allow → ask",
            "tool `Read`: timeout.max 1m → 5m",
            "tool `Legacy` removed",
            "tool `Fetch` added",
            "rule `no-secrets`: decision deny → ask",
            "rule `old-rule` removed",
            "rule `fetch-docs` added",
        ]
    );
    let timeout = &changes[1];
    assert_eq!(timeout.before, Some(json!("1m")));
    assert_eq!(timeout.after, Some(json!("5m")));
    let removed = &changes[2];
    assert_eq!(
        removed.before.as_ref().unwrap()["permission"]["default"],
        "ask"
    );
    assert_eq!(removed.after, None);
    let added_rule = &changes[6];
    assert_eq!(added_rule.after.as_ref().unwrap()["decision"], "allow");

    // The event carries the same changes, serialised.
    let events = rig.events.lock().unwrap().clone();
    let reloaded = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::PolicyReloaded(r) => Some((e.generation, r.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(reloaded.0, 2);
    assert_eq!(reloaded.1.generation, 2);
    assert_eq!(
        Value::Array(reloaded.1.changes.clone()),
        serde_json::to_value(&changes).unwrap()
    );
    assert_eq!(reloaded.1.changes[1]["kind"], "changed");
    assert_eq!(reloaded.1.changes[1]["field"], "timeout.max");
    // 1m → 5m raises the cap past the review table's factor of 2.
    assert_eq!(reloaded.1.changes[1]["risk"], "high");
    assert_eq!(reloaded.1.changes[1]["effect"], "limit_raised");

    // A reload that changes nothing is a new generation with no change in effect.
    let ReloadOutcome::Reloaded { changes, .. } = reload(&rig).await else {
        panic!("v2 is still valid");
    };
    assert!(changes.is_empty(), "{changes:?}");
}

#[tokio::test]
async fn an_invalid_save_keeps_the_last_good_generation_and_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("policy.yaml");
    std::fs::write(&file, fixture("diff/v1.yaml")).unwrap();
    let rig = Rig::new(dir.path(), |b| b);
    std::fs::write(&file, fixture("diff/invalid.yaml")).unwrap();
    let ReloadOutcome::Failed {
        diagnostics,
        generation,
    } = reload(&rig).await
    else {
        panic!("invalid.yaml is invalid");
    };
    assert_eq!(generation, 1);
    assert_eq!(rig.engine.snapshot().generation(), 1);
    assert_eq!(rig.reloader.current().unwrap().generation(), 1);
    assert!(rig.engine.snapshot().has_tool("Legacy"));
    assert!(!diagnostics.is_empty());

    let events = rig.events.lock().unwrap().clone();
    let failed = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::PolicyReloadFailed(f) => Some((e.generation, f.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(failed.0, 1);
    assert_eq!(failed.1.generation, 1);
    let first = &failed.1.diagnostics[0];
    assert!(
        first["file"].as_str().unwrap().ends_with("policy.yaml"),
        "{first}"
    );
    assert_eq!(
        first["line"], 10,
        "the line of `decision: perhaps`: {first}"
    );
    assert_eq!(first["column"], 15, "{first}");
    assert!(
        first["code"].as_str().unwrap().starts_with("toolgate::"),
        "{first}"
    );

    // The next valid save is generation 2: a failed reload does not use up a generation.
    std::fs::write(&file, fixture("diff/v2.yaml")).unwrap();
    let ReloadOutcome::Reloaded {
        generation,
        changes,
        ..
    } = reload(&rig).await
    else {
        panic!("v2 is valid");
    };
    assert_eq!(generation, 2);
    // Compared with the generation in force (v1), not with the rejected save.
    assert!(
        changes
            .iter()
            .any(|c| c.describe() == "tool `Legacy` removed")
    );
}

/// Polls until `done` holds (or fails after 20 s).
fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn the_watcher_follows_saves_by_rename_new_and_deleted_files_and_ignores_other_files() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tools.yaml");
    std::fs::write(&file, probe_policy(1)).unwrap();
    let rig = Rig::new(dir.path(), |b| b.native("Probe", probe));
    let _watch = rig.reloader.watch(Duration::from_millis(50)).unwrap();
    let generation = || rig.engine.snapshot().generation();
    let save = || crate::support::reload::save_of(&rig.engine.snapshot());

    save_by_rename(&file, &probe_policy(2));
    eventually("save 2 is in force", || save() == 2);
    let after_rename = generation();

    // A file that is not a policy changes nothing.
    std::fs::write(dir.path().join("notes.txt"), "not a policy").unwrap();
    std::fs::write(dir.path().join("tools.yaml.bak"), "junk").unwrap();
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(
        generation(),
        after_rename,
        "a non-policy file triggered a reload"
    );

    // A new policy file joins the set; deleting it leaves it again.
    let extra = dir.path().join("extra.yaml");
    std::fs::write(&extra, "version: 1\ngates:\n  api: { permits: 2 }\n").unwrap();
    eventually("the new file is loaded", || {
        rig.engine.snapshot().has_gate("api")
    });
    std::fs::remove_file(&extra).unwrap();
    eventually("the deleted file is gone", || {
        !rig.engine.snapshot().has_gate("api")
    });

    // Plain overwrite.
    std::fs::write(&file, probe_policy(3)).unwrap();
    eventually("save 3 is in force", || save() == 3);
}

/// A folder root removed and made again (`rm -rf pol && mkdir pol`, a branch switch) is a
/// new folder: it is watched again, and what is saved in it is loaded (the watch on the old
/// folder never saw it, and the old generation stayed in force for good).
#[test]
fn a_root_folder_removed_and_made_again_is_watched_again() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("pol");
    std::fs::create_dir(&dir).unwrap();
    let file = dir.join("tools.yaml");
    std::fs::write(&file, probe_policy(1)).unwrap();
    let rig = Rig::new(&dir, |b| b.native("Probe", probe));
    let _watch = rig.reloader.watch(Duration::from_millis(50)).unwrap();
    let save = || crate::support::reload::save_of(&rig.engine.snapshot());
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(&file, probe_policy(2)).unwrap();
    eventually("save 2 is in force", || save() == 2);
    std::fs::write(&file, probe_policy(3)).unwrap();
    eventually("save 3 in the new folder is in force", || save() == 3);
}

#[test]
fn a_single_file_root_is_watched_through_its_folder() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("policy.yaml");
    std::fs::write(&file, probe_policy(1)).unwrap();
    let rig = Rig::new(&file, |b| b.native("Probe", probe));
    assert_eq!(
        rig.reloader.watch_targets(),
        [(dir.path().to_path_buf(), Some(file.clone()))]
    );
    let _watch = rig.reloader.watch(Duration::from_millis(50)).unwrap();
    save_by_rename(&file, &probe_policy(2));
    eventually("save 2 is in force", || {
        crate::support::reload::save_of(&rig.engine.snapshot()) == 2
    });
    let generation = rig.engine.snapshot().generation();
    // Another policy file next to it is not part of the root.
    std::fs::write(dir.path().join("other.yaml"), probe_policy(9)).unwrap();
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(rig.engine.snapshot().generation(), generation);
}

#[test]
fn a_save_made_before_watching_starts_is_caught_up() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tools.yaml");
    std::fs::write(&file, probe_policy(1)).unwrap();
    let rig = Rig::new(dir.path(), |b| b.native("Probe", probe));
    assert!(!rig.reloader.is_stale());
    // Saved after the load, before the watch: no event will ever report it.
    save_by_rename(&file, &probe_policy(2));
    assert!(rig.reloader.is_stale());
    // A debounce far longer than the test: the watch's own catch-up is what is tested, and
    // the saves below must not be reloaded behind the staleness checks' back.
    let _watch = rig.reloader.watch(Duration::from_secs(60)).unwrap();
    assert_eq!(crate::support::reload::save_of(&rig.engine.snapshot()), 2);
    assert!(!rig.reloader.is_stale());
    // A new file, and a deleted one, make the set stale too.
    std::fs::write(dir.path().join("more.yaml"), "version: 1\n").unwrap();
    assert!(rig.reloader.is_stale());
    std::fs::remove_file(dir.path().join("more.yaml")).unwrap();
    assert!(!rig.reloader.is_stale());
    std::fs::remove_file(&file).unwrap();
    assert!(rig.reloader.is_stale());
}

/// A policy with an `Open` tool allowed by default and, when `with_rule`, an enforced-style
/// deny rule for the token `bad`; its `description` carries the save number.
fn guarded_policy(k: u64) -> String {
    format!(
        "version: 1\ntools:\n  Open:\n    description: \"save {k}\"\n    input_schema:\n      type: object\n      properties:\n        token: {{ type: string }}\n    concurrency: {{ concurrent_safe: true, read_only: true, side_effect_scope: none }}\n    permission: {{ default: allow }}\n    handler: {{ kind: native }}\nrules:\n  - name: no-bad\n    tools: [Open]\n    match:\n      token: {{ equals: bad }}\n    decision: deny\n"
    )
}

#[test]
fn a_file_written_in_place_in_two_steps_is_installed_only_whole() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tools.yaml");
    std::fs::write(&file, guarded_policy(1)).unwrap();
    let rig = Rig::new(dir.path(), |b| b.native("Open", probe));
    // A settle window far longer than the writer's pause: the half can only be installed
    // if the reloader does not wait for the file to stop changing.
    rig.reloader.set_settle(Duration::from_secs(3));
    let installed: Arc<std::sync::Mutex<Vec<Value>>> = Arc::default();
    let seen = Arc::clone(&installed);
    let reloader = Arc::clone(&rig.reloader);
    let _watch = rig
        .reloader
        .watch_with(Duration::from_millis(50), move |outcome| {
            if let ReloadOutcome::Reloaded { .. } = outcome {
                let snapshot = reloader.current().unwrap();
                seen.lock().unwrap().push(snapshot.effective());
            }
        })
        .unwrap();

    // The save, in place: the first half is a valid policy without the deny rule.
    let text = guarded_policy(2);
    let (first, rest) = text.split_at(text.find("rules:").unwrap());
    let mut writer = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&file)
        .unwrap();
    writer.write_all(first.as_bytes()).unwrap();
    writer.flush().unwrap();
    // The pause the test controls: longer than the debounce, shorter than the settle window.
    std::thread::sleep(Duration::from_millis(400));
    writer.write_all(rest.as_bytes()).unwrap();
    writer.flush().unwrap();
    drop(writer);

    // The outcome is reported after the generation is in force: wait for both (checking the
    // list as soon as the engine had save 2 raced the report).
    eventually("save 2 is in force and reported", || {
        rig.engine.snapshot().effective()["tools"]["Open"]["description"] == "save 2"
            && !installed.lock().unwrap().is_empty()
    });
    let installed = installed.lock().unwrap();
    for effective in installed.iter() {
        assert_eq!(
            effective["rules"][0]["name"], "no-bad",
            "a generation without the deny rule was installed: {effective}"
        );
    }
}
