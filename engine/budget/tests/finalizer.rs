//! The batch finalizer (SPEC §8.3) end to end, with the memory store and a failing store:
//! tables for each rule, byte-for-byte snapshots of the cut text, and property tests for the
//! invariants (total ≤ budget, order kept, no split character, idempotence).

// Helpers outside `#[test]` functions set up fixtures; a failed setup should panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::LazyLock;

use crate::artifact::testing::FaultyArtifactStore;
use crate::budget::fit::cut_header_with;
use crate::budget::measure::{head, measure};
use crate::budget::waterfill;
use crate::budget::{
    ArtifactTarget, BatchBudget, Budgeting, ItemStatus, Persistence, Slot, SlotKind, Templates,
    finalize,
};
use crate::model::units::BudgetUnit::{self, Bytes, Chars};
use crate::{ArtifactError, ArtifactStore, MemoryArtifactStore, Retention, SessionId};
use crate::{FinalizeConfig, FinalizeItem, FinalizeOutcome, SlotText, hard_cap};
use proptest::prelude::*;
use serde_json::json;

static TEMPLATES: LazyLock<Templates> = LazyLock::new(Templates::spec_defaults);
static SESSION: LazyLock<SessionId> = LazyLock::new(|| SessionId::from("s1"));

fn config(budget: u64, unit: BudgetUnit) -> FinalizeConfig<'static> {
    FinalizeConfig {
        budget: BatchBudget::Units(budget),
        unit,
        templates: &TEMPLATES,
        retention: Retention::Session,
        max_files: None,
    }
}

fn target(store: &dyn ArtifactStore) -> Option<ArtifactTarget<'_>> {
    Some(ArtifactTarget {
        store,
        session: &SESSION,
    })
}

fn output(id: &str, text: impl Into<SlotText>) -> FinalizeItem {
    FinalizeItem::new(id, vec![Slot::new(SlotKind::Output, text)])
}

fn lengths(outcome: &FinalizeOutcome, unit: BudgetUnit) -> Vec<Vec<u64>> {
    outcome
        .items
        .iter()
        .map(|item| item.slots.iter().map(|s| s.text.len(unit)).collect())
        .collect()
}

fn text(outcome: &FinalizeOutcome, item: usize, slot: usize) -> &str {
    outcome.items[item].slots[slot].text.as_str()
}

fn snapshot(name: &str, value: &str) {
    insta::with_settings!({
        snapshot_path => "../../../tests/fixtures/budget/snapshots",
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!(name, value);
    });
}

#[tokio::test]
async fn published_examples_hold_through_the_finalizer() {
    let table: [(&[usize], u64, &[u64]); 3] = [
        (&[1000, 2], 100, &[98, 2]),
        (&[7048, 7048], 10_000, &[5000, 5000]),
        (&[4000, 4000, 4000], 3000, &[1000, 1000, 1000]),
    ];
    for (sizes, budget, want) in table {
        let batch: Vec<FinalizeItem> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| output(&format!("c{i}"), "x".repeat(n)))
            .collect();
        let outcome = finalize(&batch, &config(budget, Chars), None).await;
        let got: Vec<u64> = lengths(&outcome, Chars).into_iter().flatten().collect();
        assert_eq!(got, want, "{sizes:?} / {budget}");
        assert_eq!(outcome.total_after, budget);
    }
}

#[tokio::test]
async fn a_batch_that_fits_is_returned_as_is_and_nothing_is_written() {
    let store = MemoryArtifactStore::new();
    let batch = vec![output("a", "x".repeat(600)), output("b", "y".repeat(400))];
    for budget in [1000, 5000] {
        let outcome = finalize(&batch, &config(budget, Chars), target(&store)).await;
        assert_eq!(outcome.items, batch);
        assert!(
            outcome
                .reports
                .iter()
                .all(|r| r.status == ItemStatus::Untouched)
        );
        assert!(outcome.items.iter().all(|i| i.persisted_files.is_none()));
    }
    assert!(store.is_empty());
}

#[tokio::test]
async fn a_disabled_budget_returns_the_batch_untouched() {
    let batch = vec![output("a", "x".repeat(10_000))];
    for budget in [BatchBudget::Disabled, BatchBudget::Units(0)] {
        let config = FinalizeConfig {
            budget,
            ..config(1, Chars)
        };
        let outcome = finalize(&batch, &config, None).await;
        assert_eq!(outcome.items, batch);
        assert_eq!(hard_cap(&batch, &config).items, batch);
    }
}

#[tokio::test]
async fn a_cut_slot_is_header_separator_head_marker_tail() {
    let store = MemoryArtifactStore::new();
    let full: String = (0..400).map(|i| format!("line {i}\n")).collect();
    let batch = vec![output("call_1", full.as_str())];
    let outcome = finalize(&batch, &config(300, Chars), target(&store)).await;
    let path = "memory/s1/call_1.txt";
    let digest = SlotText::from(full.as_str()).sha256();
    let header = format!(
        "Tool output truncated. Persisted tool-output artifact: {path}\nFull output sha256: {digest}"
    );
    // preview = 300 - len(header) - 2; content = preview - 5; head = content / 5.
    let content = 300 - header.len() - 2 - 5;
    let head_len = content / 5;
    let tail_len = content - head_len;
    let want = format!(
        "{header}\n\n{}\n...\n{}",
        &full[..head_len],
        &full[full.len() - tail_len..]
    );
    assert_eq!(text(&outcome, 0, 0), want);
    assert_eq!(measure(&want, Chars), 300);
    assert_eq!(
        outcome.items[0].persisted_files,
        Some(vec![PathBuf::from(path)])
    );
    assert_eq!(
        store.get(&PathBuf::from(path)).as_deref(),
        Some(full.as_str())
    );
    snapshot("cut_slot_one_artifact", text(&outcome, 0, 0));
}

#[tokio::test]
async fn the_header_names_every_reused_artifact_and_nothing_is_written() {
    let store = MemoryArtifactStore::new();
    let mut item = output("c", "z".repeat(2000));
    item.persisted_files = Some(vec![
        PathBuf::from("/art/s1/c.txt"),
        PathBuf::from("/art/s1/c.2.txt"),
    ]);
    let outcome = finalize(&[item], &config(400, Chars), target(&store)).await;
    assert!(store.is_empty());
    assert!(matches!(
        outcome.reports[0].persistence,
        Persistence::Reused
    ));
    let cut = text(&outcome, 0, 0);
    assert!(cut.starts_with(
        "Tool output truncated. Persisted tool-output artifacts:\n- /art/s1/c.txt\n- /art/s1/c.2.txt\nFull output sha256: "
    ));
    snapshot("cut_slot_two_artifacts", cut);
}

#[tokio::test]
async fn empty_persisted_files_mean_nothing_is_written() {
    let store = MemoryArtifactStore::new();
    let mut item = output("c", "z".repeat(2000));
    item.persisted_files = Some(Vec::new());
    let outcome = finalize(&[item], &config(400, Chars), target(&store)).await;
    assert!(store.is_empty());
    assert!(matches!(
        outcome.reports[0].persistence,
        Persistence::NothingReusable
    ));
    assert_eq!(outcome.items[0].persisted_files, Some(Vec::new()));
    let cut = text(&outcome, 0, 0);
    assert!(cut.starts_with("Tool output truncated.\nFull output sha256: "));
    snapshot("cut_slot_no_artifact", cut);
}

#[tokio::test]
async fn a_result_is_persisted_once_with_all_its_slots() {
    let store = MemoryArtifactStore::new();
    let item = FinalizeItem::new(
        "multi",
        vec![
            Slot::new(SlotKind::Error, "E".repeat(1000)),
            Slot::new(SlotKind::Text, "T".repeat(1000)),
            Slot::new(SlotKind::Output, "O".repeat(1000)),
        ],
    );
    let outcome = finalize(&[item], &config(900, Chars), target(&store)).await;
    assert_eq!(store.len(), 1);
    let path = PathBuf::from("memory/s1/multi.txt");
    let want = format!(
        "{}\n{}\n{}",
        "T".repeat(1000),
        "O".repeat(1000),
        "E".repeat(1000)
    );
    assert_eq!(store.get(&path).as_deref(), Some(want.as_str()));
    assert_eq!(outcome.items[0].persisted_files, Some(vec![path]));
    // Every cut slot names the one artifact; slot order is kept.
    let kinds: Vec<SlotKind> = outcome.items[0].slots.iter().map(|s| s.kind).collect();
    assert_eq!(kinds, [SlotKind::Error, SlotKind::Text, SlotKind::Output]);
    for slot in &outcome.items[0].slots {
        assert!(
            slot.text
                .as_str()
                .contains("artifact: memory/s1/multi.txt\n")
        );
        assert_eq!(slot.text.len(Chars), 300);
    }
}

#[tokio::test]
async fn leftover_goes_to_the_earliest_slot_in_collection_order() {
    // Collection order within a result is text, output, error, whatever the listed order.
    let item = FinalizeItem::new(
        "c",
        vec![
            Slot::new(SlotKind::Error, "e".repeat(100)),
            Slot::new(SlotKind::Text, "t".repeat(100)),
        ],
    );
    let outcome = hard_cap(&[item], &config(11, Chars));
    assert_eq!(lengths(&outcome, Chars), [[5, 6]]);
}

#[tokio::test]
async fn a_failed_write_still_cuts_and_records_that_nothing_is_reusable() {
    let store = FaultyArtifactStore::always_failing();
    let batch = vec![output("a", "x".repeat(5000)), output("b", "y".repeat(5000))];
    let outcome = finalize(&batch, &config(1000, Chars), target(&store)).await;
    assert_eq!(store.attempts(), 2);
    assert!(outcome.total_after <= 1000);
    for (item, report) in outcome.items.iter().zip(&outcome.reports) {
        assert_eq!(item.persisted_files, Some(Vec::new()));
        // The model is told that the full output is gone.
        assert!(
            item.slots[0]
                .text
                .as_str()
                .starts_with("Tool output truncated. The full output could not be kept.\n"),
            "{}",
            item.slots[0].text.as_str()
        );
        assert!(matches!(report.persistence, Persistence::Failed(_)));
        assert_eq!(report.status, ItemStatus::Cut);
    }
}

#[tokio::test]
async fn many_results_under_a_small_share_name_their_artifacts_whole() {
    // 2 000 results of ~315 characters under 200 000: a share of 100 each, less than the
    // full header (path and digest), so each gets the short form with its whole path.
    let store = MemoryArtifactStore::new();
    let batch: Vec<FinalizeItem> = (0..2000)
        .map(|n| {
            output(
                &format!("call-{n:04}"),
                format!("{n:04} {}", "z".repeat(310)),
            )
        })
        .collect();
    let outcome = finalize(&batch, &config(200_000, Chars), target(&store)).await;
    assert!(outcome.total_after <= 200_000);
    for item in &outcome.items {
        let files = item.persisted_files.as_deref().unwrap();
        assert_eq!(files.len(), 1);
        let path = files[0].display().to_string();
        let text = item.slots[0].text.as_str();
        assert!(
            text.starts_with(&format!("Truncated; full output: {path}\n\n")),
            "{text}"
        );
        assert!(store.get(&files[0]).is_some());
    }
}

#[tokio::test]
async fn a_batch_writes_at_most_its_file_limit_and_the_rest_say_so() {
    let store = MemoryArtifactStore::new();
    let batch: Vec<FinalizeItem> = (0..10)
        .map(|n| output(&format!("c{n}"), "q".repeat(1000)))
        .collect();
    let config = FinalizeConfig {
        max_files: Some(3),
        ..config(2000, Chars)
    };
    let outcome = finalize(&batch, &config, target(&store)).await;
    assert_eq!(store.paths().len(), 3);
    assert!(outcome.total_after <= 2000);
    for (n, (item, report)) in outcome.items.iter().zip(&outcome.reports).enumerate() {
        if n < 3 {
            assert!(matches!(report.persistence, Persistence::Written));
        } else {
            assert!(matches!(
                report.persistence,
                Persistence::Failed(ArtifactError::BatchFiles { limit: 3 })
            ));
            assert_eq!(item.persisted_files, Some(Vec::new()));
            assert!(
                item.slots[0]
                    .text
                    .as_str()
                    .starts_with("Tool output truncated. The full output could not be kept."),
                "{}",
                item.slots[0].text.as_str()
            );
        }
    }
}

#[tokio::test]
async fn without_a_store_results_are_cut_without_paths() {
    let outcome = finalize(&[output("a", "x".repeat(5000))], &config(500, Chars), None).await;
    assert!(matches!(
        outcome.reports[0].persistence,
        Persistence::NoStore
    ));
    assert_eq!(outcome.items[0].persisted_files, Some(Vec::new()));
    assert_eq!(outcome.total_after, 500);
}

#[tokio::test]
async fn repeated_call_ids_get_distinct_artifacts() {
    let store = MemoryArtifactStore::new();
    let batch = vec![
        output("dup", "a".repeat(3000)),
        output("dup", "b".repeat(3000)),
        output("d/up", "c".repeat(3000)),
    ];
    let outcome = finalize(&batch, &config(1500, Chars), target(&store)).await;
    let paths: Vec<PathBuf> = outcome
        .items
        .iter()
        .flat_map(|i| i.persisted_files.clone().unwrap_or_default())
        .collect();
    assert_eq!(
        paths,
        [
            "memory/s1/dup.txt",
            "memory/s1/dup.2.txt",
            "memory/s1/d_up.txt"
        ]
        .map(PathBuf::from)
    );
    assert_eq!(
        store.get(&paths[1]).as_deref(),
        Some("b".repeat(3000).as_str())
    );
}

#[tokio::test]
async fn exempt_results_are_neither_counted_nor_shortened() {
    let mut plan = output("plan", "P".repeat(10_000));
    plan.budgeting = Budgeting::Exempt;
    let small = vec![plan.clone(), output("a", "x".repeat(500))];
    let outcome = finalize(&small, &config(1000, Chars), None).await;
    assert_eq!(outcome.items, small);
    assert_eq!(outcome.reports[0].status, ItemStatus::Exempt);

    let large = vec![output("a", "x".repeat(5000)), plan.clone()];
    let outcome = finalize(&large, &config(1000, Chars), None).await;
    assert_eq!(outcome.items[1], plan);
    assert_eq!(outcome.total_after, 1000);
    assert_eq!(outcome.reports[1].status, ItemStatus::Exempt);
}

#[tokio::test]
async fn non_text_parts_are_kept_and_not_counted() {
    let mut item = output("img", "x".repeat(900));
    item.non_text = vec![json!({"type": "image", "data": "A".repeat(100_000)})];
    let batch = vec![item];
    let outcome = finalize(&batch, &config(1000, Chars), None).await;
    assert_eq!(outcome.items, batch);
    let outcome = finalize(&batch, &config(100, Chars), None).await;
    assert_eq!(outcome.items[0].non_text, batch[0].non_text);
}

#[tokio::test]
async fn the_input_is_not_mutated() {
    let store = MemoryArtifactStore::new();
    let batch = vec![output("a", "x".repeat(5000)), output("b", "y".repeat(5000))];
    let before = batch.clone();
    let outcome = finalize(&batch, &config(1000, Chars), target(&store)).await;
    assert_eq!(batch, before);
    assert!(batch.iter().all(|i| i.persisted_files.is_none()));
    assert_ne!(outcome.items, batch);
}

#[tokio::test]
async fn the_hard_cap_writes_nothing_and_names_existing_artifacts() {
    let mut item = output("a", "x".repeat(5000));
    item.persisted_files = Some(vec![PathBuf::from("/p/a.txt")]);
    let plain = output("b", "y".repeat(5000));
    let outcome = hard_cap(&[item, plain], &config(1000, Chars));
    assert_eq!(outcome.total_after, 1000);
    assert!(text(&outcome, 0, 0).contains("Persisted tool-output artifact: /p/a.txt\n"));
    assert!(text(&outcome, 1, 0).starts_with("Tool output truncated.\nFull output sha256:"));
    assert_eq!(outcome.items[1].persisted_files, None);
}

#[tokio::test]
async fn weights_and_minimum_shares_shape_the_allocation() {
    let mut heavy = output("heavy", "h".repeat(5000));
    heavy.weight = 3;
    let light = output("light", "l".repeat(5000));
    let outcome = hard_cap(&[heavy, light.clone()], &config(2000, Chars));
    assert_eq!(lengths(&outcome, Chars), [[1500], [500]]);

    let mut floor = output("floor", "f".repeat(5000));
    floor.min_share = 1500;
    let outcome = hard_cap(&[floor, light.clone(), light.clone()], &config(2100, Chars));
    assert_eq!(lengths(&outcome, Chars), [[1500], [300], [300]]);
}

#[tokio::test]
async fn bytes_mode_counts_utf8_bytes_and_never_splits() {
    let batch = vec![
        output("a", "日本語🙂".repeat(500)),
        output("b", "é".repeat(10)),
    ];
    let outcome = finalize(&batch, &config(1000, Bytes), None).await;
    assert!(outcome.total_after <= 1000);
    assert_eq!(outcome.items[1], batch[1]);
    assert!(text(&outcome, 0, 0).ends_with("🙂"));
}

// ---------------------------------------------------------------------------------------
// Properties.

fn mixed_text(max_pieces: usize) -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "a",
        "b",
        "Z",
        " ",
        "\n",
        "é",
        "ß",
        "ñ",
        "日",
        "本",
        "語",
        "🙂",
        "👩\u{200d}💻",
        "e\u{301}",
        "a\u{308}\u{323}",
        "\u{10ffff}",
        "line\n",
    ]);
    prop::collection::vec(pieces, 0..max_pieces).prop_map(|parts| parts.concat())
}

fn item_strategy() -> impl Strategy<Value = FinalizeItem> {
    let kind = prop::sample::select(vec![SlotKind::Text, SlotKind::Output, SlotKind::Error]);
    let slots = prop::collection::vec((kind, mixed_text(600)), 0..3);
    let persisted = prop_oneof![
        3 => Just(None),
        1 => Just(Some(Vec::new())),
        1 => Just(Some(vec![PathBuf::from("/prev/artifact.txt")])),
    ];
    let budgeting = prop_oneof![8 => Just(Budgeting::Counted), 1 => Just(Budgeting::Exempt)];
    (
        "[a-z0-9]{1,4}",
        slots,
        persisted,
        budgeting,
        1u32..4,
        prop_oneof![3 => Just(0u64), 1 => 0u64..500],
    )
        .prop_map(
            |(id, slots, persisted_files, budgeting, weight, min_share)| FinalizeItem {
                call_id: id.into(),
                slots: slots
                    .into_iter()
                    .map(|(kind, text)| Slot::new(kind, text))
                    .collect(),
                non_text: vec![json!({"type": "image"})],
                persisted_files,
                budgeting,
                weight,
                min_share,
            },
        )
}

fn batch_strategy() -> impl Strategy<Value = Vec<FinalizeItem>> {
    prop::collection::vec(item_strategy(), 0..6)
}

fn unit_strategy() -> impl Strategy<Value = BudgetUnit> {
    prop_oneof![Just(Chars), Just(Bytes)]
}

fn counted_total(items: &[FinalizeItem], unit: BudgetUnit) -> u64 {
    items
        .iter()
        .filter(|i| i.budgeting == Budgeting::Counted)
        .flat_map(|i| &i.slots)
        .map(|s| s.text.len(unit))
        .sum()
}

fn run<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

/// A cut slot is built from the header and a prefix and a suffix of the original text; its
/// notice shows every path it names whole, and only paths of persisted files.
fn check_cut_slot(
    original: &SlotText,
    cut: &str,
    paths: &[PathBuf],
    lost: bool,
    unit: BudgetUnit,
) -> Result<(), TestCaseError> {
    // The full header; when it does not fit, the short form naming the first artifact
    // whole, or the header's opening words (no path, no digest).
    let full = cut_header_with(original, paths, lost, &TEMPLATES);
    let short = paths
        .first()
        .map(|p| format!("Truncated; full output: {}", p.display()));
    let bare = if lost {
        "Tool output truncated. The full output could not be kept."
    } else {
        "Tool output truncated."
    };
    let header = [Some(full), short, Some(bare.to_owned())]
        .into_iter()
        .flatten()
        .find(|header| cut.starts_with(header.as_str()));
    let Some(header) = header else {
        // Only a part of the opening words fitted.
        prop_assert!(
            bare.starts_with(cut),
            "a notice shows part of a path or digest: {cut:?}"
        );
        prop_assert_eq!(cut, head(bare, measure(cut, unit), unit));
        return Ok(());
    };
    let Some(preview) = cut[header.len()..].strip_prefix("\n\n") else {
        prop_assert_eq!(cut, header.as_str());
        return Ok(());
    };
    let full = original.as_str();
    match preview.find("\n...\n") {
        Some(_) if !full.starts_with(preview) => {
            // head + marker + tail: some split point must work.
            let ok = preview.match_indices("\n...\n").any(|(at, _)| {
                full.starts_with(&preview[..at]) && full.ends_with(&preview[at + 5..])
            });
            prop_assert!(ok, "preview is not a head and a tail of the text");
        }
        Some(_) | None => prop_assert!(full.starts_with(preview)),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn finalized_batches_hold_every_invariant(
        batch in batch_strategy(),
        budget in prop_oneof![0u64..200, 0u64..4000],
        unit in unit_strategy(),
        failing in any::<bool>(),
    ) {
        let memory = MemoryArtifactStore::new();
        let faulty = FaultyArtifactStore::always_failing();
        let store: &dyn ArtifactStore = if failing { &faulty } else { &memory };
        let config = config(budget, unit);
        let before = batch.clone();
        let outcome = run(finalize(&batch, &config, target(store)));

        // The input is not mutated.
        prop_assert_eq!(&batch, &before);
        // The budget holds (0 disables).
        let total_after = counted_total(&outcome.items, unit);
        prop_assert_eq!(total_after, outcome.total_after);
        if budget > 0 {
            prop_assert!(total_after <= budget);
        } else {
            prop_assert_eq!(&outcome.items, &batch);
        }
        // Order, kinds, non-text parts and exempt results are kept.
        prop_assert_eq!(outcome.items.len(), batch.len());
        for (after, before) in outcome.items.iter().zip(&batch) {
            prop_assert_eq!(&after.call_id, &before.call_id);
            prop_assert_eq!(&after.non_text, &before.non_text);
            let kinds = |i: &FinalizeItem| i.slots.iter().map(|s| s.kind).collect::<Vec<_>>();
            prop_assert_eq!(kinds(after), kinds(before));
            if before.budgeting == Budgeting::Exempt {
                prop_assert_eq!(after, before);
            }
            // Every changed slot is a cut of the original, never splitting a character.
            for (a, b) in after.slots.iter().zip(&before.slots) {
                if a.text != b.text {
                    let paths = after.persisted_files.as_deref().unwrap_or(&[]);
                    let lost = failing && before.persisted_files.is_none();
                    check_cut_slot(&b.text, a.text.as_str(), paths, lost, unit)?;
                    prop_assert!(a.text.len(unit) < b.text.len(unit));
                }
            }
            // Persistence is decided at most once, from the metadata.
            match (&before.persisted_files, &after.persisted_files) {
                (Some(b), a) => prop_assert_eq!(Some(b), a.as_ref()),
                (None, None) => {}
                (None, Some(paths)) => prop_assert!(paths.len() <= 1),
            }
        }
        // A slot no longer than the smallest allocation is untouched.
        if budget > 0 {
            let counted: Vec<(usize, usize, u64)> = batch
                .iter()
                .enumerate()
                .filter(|(_, i)| i.budgeting == Budgeting::Counted && i.weight == 1 && i.min_share == 0)
                .flat_map(|(n, i)| i.slots.iter().enumerate().map(move |(k, s)| (n, k, s.text.len(unit))))
                .collect();
            if counted.len() == batch.iter().filter(|i| i.budgeting == Budgeting::Counted).map(|i| i.slots.len()).sum::<usize>() {
                let lens: Vec<u64> = counted.iter().map(|c| c.2).collect();
                let alloc = waterfill::allocate(&lens, budget);
                if let Some(&smallest) = alloc.iter().min() {
                    for &(n, k, len) in &counted {
                        if len <= smallest {
                            prop_assert_eq!(&outcome.items[n].slots[k], &batch[n].slots[k]);
                        }
                    }
                }
            }
        }
        // Idempotence: finalizing (or hard-capping) a finalized batch changes nothing.
        let again = run(finalize(&outcome.items, &config, target(store)));
        prop_assert_eq!(&again.items, &outcome.items);
        prop_assert_eq!(&hard_cap(&outcome.items, &config).items, &outcome.items);
    }

    #[test]
    fn the_hard_cap_alone_holds_the_budget(
        batch in batch_strategy(),
        budget in 1u64..3000,
        unit in unit_strategy(),
    ) {
        let config = config(budget, unit);
        let outcome = hard_cap(&batch, &config);
        prop_assert!(counted_total(&outcome.items, unit) <= budget);
        for (after, before) in outcome.items.iter().zip(&batch) {
            prop_assert_eq!(&after.persisted_files, &before.persisted_files);
        }
    }
}
