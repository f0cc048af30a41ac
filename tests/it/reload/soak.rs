//! Soak test of hot reload (issue 6): batches run without pause while the policy file is
//! rewritten a few hundred times, valid and invalid saves alternating — first reloaded
//! directly (deterministic), then through the real watcher with saves by rename and plain
//! overwrites. Checked: no call fails for a reason other than its policy, every batch runs on
//! a single generation, no reload is lost (the last valid save is in force at the end), and
//! memory does not grow across reloads.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::reload::{
    Rig, invalid_policy, probe, probe_policy, rss_bytes, save_by_rename, save_of,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolgate::ReloadOutcome;
use toolgate::ToolCall;
use toolgate::{Batch, Turn};
use toolgate::{CallStatus, Event, EventKind, EventSink};

const DIRECT_SAVES: u64 = 200;
const WATCHED_SAVES: u64 = 100;
const RUNNERS: usize = 3;

/// Checks, as events arrive, that every event of a batch carries the same generation; keeps
/// only the batches in flight, so memory does not grow with the number of batches.
#[derive(Default)]
struct GenerationCheck {
    open: Mutex<HashMap<String, u64>>,
    done: Mutex<HashMap<String, u64>>,
    mixed: Mutex<Vec<String>>,
}

impl EventSink for GenerationCheck {
    fn emit(&self, event: Event) {
        let Some(batch) = &event.batch_id else { return };
        let mut open = self.open.lock().unwrap();
        let first = *open.entry(batch.to_string()).or_insert(event.generation);
        if first != event.generation {
            self.mixed.lock().unwrap().push(format!(
                "{} of batch {batch} on generation {}, its first event on {first}",
                event.type_name(),
                event.generation
            ));
        }
        if matches!(event.kind, EventKind::ToolBatchComplete(_)) {
            open.remove(batch.as_str());
            self.done.lock().unwrap().insert(batch.to_string(), first);
        }
    }
}

/// What a runner saw.
#[derive(Default)]
struct Tally {
    batches: u64,
    ok: u64,
    denied: u64,
    generations: BTreeSet<u64>,
}

/// Runs batches until `stop`: each asks for the last valid save's token, the one before, and
/// one that no save allows. Every outcome is checked against the policy of its generation.
async fn run_batches(
    rig: Arc<Rig>,
    check: Arc<GenerationCheck>,
    runner: usize,
    last_valid: Arc<AtomicU64>,
    stop: CancellationToken,
) -> Tally {
    let mut tally = Tally::default();
    while !stop.is_cancelled() {
        tally.batches += 1;
        let k = last_valid.load(Ordering::SeqCst);
        let calls = vec![
            ToolCall::new("now", "Probe", json!({"token": k.to_string()})),
            ToolCall::new(
                "before",
                "Probe",
                json!({"token": k.saturating_sub(2).to_string()}),
            ),
            ToolCall::new("never", "Probe", json!({"token": "never"})),
        ];
        let id = format!("r{runner}-{}", tally.batches);
        let batch = Batch {
            id: Some(toolgate::BatchId::new(id.clone())),
            calls,
        };
        let outcome = match rig.engine.execute_batch(batch, &Turn::default()).await {
            Ok(outcome) => outcome,
            Err(error) => panic!("a batch could not start: {error}"),
        };
        let events_generation = check.done.lock().unwrap().remove(&id);
        assert_eq!(
            events_generation,
            Some(outcome.generation),
            "batch {id}: its events and its outcome disagree on the generation"
        );
        tally.generations.insert(outcome.generation);
        let save = rig.save_of_generation(outcome.generation);
        for result in &outcome.results {
            match result.status {
                CallStatus::Ok => {
                    assert_ne!(result.call_id.as_str(), "never", "{result:?}");
                    assert_eq!(
                        result.model_content,
                        format!("ran \"{save}\""),
                        "a call ran that save {save} does not allow: {result:?}"
                    );
                    tally.ok += 1;
                }
                CallStatus::Denied => {
                    assert_eq!(
                        result.model_content, "Permission to use Probe is denied by policy",
                        "{result:?}"
                    );
                    tally.denied += 1;
                }
                CallStatus::Error | CallStatus::TimedOut | CallStatus::Cancelled => {
                    panic!("a call failed for another reason than its policy: {result:?}")
                }
            }
        }
    }
    tally
}

/// Save `k`: valid when odd, invalid when even.
fn save_text(k: u64) -> String {
    if k % 2 == 1 {
        probe_policy(k)
    } else {
        invalid_policy(k)
    }
}

/// Measures this process's memory, so it runs in a process of its own.
#[test]
fn batches_keep_running_while_the_policy_is_rewritten_hundreds_of_times() {
    if crate::support::alone::run_alone(
        module_path!(),
        "batches_keep_running_while_the_policy_is_rewritten_hundreds_of_times",
    ) {
        soak();
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn soak() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tools.yaml");
    std::fs::write(&file, probe_policy(1)).unwrap();
    let check = Arc::new(GenerationCheck::default());
    let rig = Arc::new(Rig::with_sink(
        dir.path(),
        check.clone(),
        Arc::default(),
        |b| b.native("Probe", probe),
    ));
    let first = Arc::downgrade(&rig.engine.snapshot());
    let last_valid = Arc::new(AtomicU64::new(1));
    let stop = CancellationToken::new();
    let runners: Vec<_> = (0..RUNNERS)
        .map(|runner| {
            tokio::spawn(run_batches(
                Arc::clone(&rig),
                Arc::clone(&check),
                runner,
                Arc::clone(&last_valid),
                stop.clone(),
            ))
        })
        .collect();

    // Phase 1: direct reloads. Warm up first, so allocator pools and caches settle before
    // memory is sampled.
    let mut k = 1;
    let direct = async |k: u64| {
        std::fs::write(&file, save_text(k)).unwrap();
        let reloader = Arc::clone(&rig.reloader);
        let outcome = tokio::task::spawn_blocking(move || reloader.reload())
            .await
            .unwrap();
        match (&outcome, k % 2) {
            (ReloadOutcome::Reloaded { .. }, 1) => last_valid.store(k, Ordering::SeqCst),
            (ReloadOutcome::Failed { diagnostics, .. }, 0) => {
                assert!(!diagnostics.is_empty());
                assert!(
                    diagnostics.iter().all(|d| d.location.is_some()),
                    "every diagnostic of save {k} says where: {diagnostics:?}"
                );
            }
            _ => panic!("save {k} gave {outcome:?}"),
        }
    };
    for _ in 0..40 {
        k += 1;
        direct(k).await;
    }
    let warmed_up = Arc::downgrade(&rig.reloader.current().unwrap());
    let rss_before = rss_bytes();
    let phase = Instant::now();
    for _ in 0..DIRECT_SAVES {
        k += 1;
        direct(k).await;
    }
    let rss_after_direct = rss_bytes();
    let direct_phase = phase.elapsed();
    let phase = Instant::now();
    assert_eq!(
        save_of(&rig.engine.snapshot()),
        last_valid.load(Ordering::SeqCst)
    );

    // Phase 2: the real watcher, saves by rename and plain overwrites, some within one
    // debounce window of each other, some far apart.
    let watch = rig.reloader.watch(Duration::from_millis(50)).unwrap();
    for i in 0..WATCHED_SAVES {
        k += 1;
        if i % 4 == 3 {
            std::fs::write(&file, save_text(k)).unwrap();
        } else {
            save_by_rename(&file, &save_text(k));
        }
        if k % 2 == 1 {
            last_valid.store(k, Ordering::SeqCst);
        }
        let pause = [0, 5, 20, 80][(i % 4) as usize];
        tokio::time::sleep(Duration::from_millis(pause)).await;
    }
    // End on a valid save, then let the watcher settle.
    if k % 2 == 0 {
        k += 1;
        save_by_rename(&file, &save_text(k));
        last_valid.store(k, Ordering::SeqCst);
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    while save_of(&rig.engine.snapshot()) != k {
        assert!(
            Instant::now() < deadline,
            "save {k} never came into force (in force: save {})",
            save_of(&rig.engine.snapshot())
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Nothing later overrides it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        save_of(&rig.engine.snapshot()),
        k,
        "the last valid save is in force"
    );
    assert_eq!(save_of(&rig.reloader.current().unwrap()), k);
    drop(watch);
    let watched_phase = phase.elapsed();

    stop.cancel();
    let mut total = Tally::default();
    for runner in runners {
        let tally = runner.await.unwrap();
        total.batches += tally.batches;
        total.ok += tally.ok;
        total.denied += tally.denied;
        total.generations.extend(tally.generations);
    }
    let rss_after = rss_bytes();
    let mixed = check.mixed.lock().unwrap().clone();
    assert!(mixed.is_empty(), "batches mixed generations: {mixed:#?}");
    assert!(
        total.ok > 0 && total.denied > 0,
        "ok {}, denied {}",
        total.ok,
        total.denied
    );
    assert!(
        total.generations.len() > 10,
        "batches ran on only {} generations",
        total.generations.len()
    );

    // Old generations are freed once no batch holds them, and memory stays flat.
    assert!(first.upgrade().is_none(), "generation 1 is still alive");
    assert!(
        warmed_up.upgrade().is_none(),
        "a generation replaced long ago is still alive"
    );
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let grown = rss_after_direct.saturating_sub(rss_before);
    eprintln!(
        "{k} saves, {} batches, {} generations run, rss {:.1} → {:.1} (after {DIRECT_SAVES} direct reloads) → {:.1} MiB (end); direct phase {:.1} s, watched phase {:.1} s",
        total.batches,
        total.generations.len(),
        mib(rss_before),
        mib(rss_after_direct),
        mib(rss_after),
        direct_phase.as_secs_f64(),
        watched_phase.as_secs_f64(),
    );
    assert!(
        grown < 4 << 20,
        "memory grew by {:.1} MiB over {DIRECT_SAVES} reloads",
        mib(grown)
    );
    assert!(
        rss_after.saturating_sub(rss_before) < 8 << 20,
        "memory grew by {:.1} MiB over the whole soak",
        mib(rss_after.saturating_sub(rss_before))
    );
}
