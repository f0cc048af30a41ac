//! The producer stage (SPEC §8.1): one table per rule, snapshots of the envelope, and the
//! fallbacks when an artifact cannot be written.

// Helpers outside `#[test]` functions set up fixtures; a failed setup should panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::LazyLock;

use crate::CallId;
use crate::artifact::testing::FaultyArtifactStore;
use crate::budget::measure::measure;
use crate::budget::{ArtifactTarget, Produced, ProducerInput, ProducerPolicy, Templates, produce};
use crate::model::contract::{Keep, Overflow};
use crate::model::units::BudgetUnit::{self, Bytes, Chars};
use crate::model::units::Size;
use crate::{ArtifactLimits as Limits, ArtifactStore, MemoryArtifactStore, Retention, SessionId};
use proptest::prelude::*;

static TEMPLATES: LazyLock<Templates> = LazyLock::new(Templates::spec_defaults);
static SESSION: LazyLock<SessionId> = LazyLock::new(|| SessionId::from("s1"));

fn policy(limit: u64, overflow: Overflow, keep: Keep) -> ProducerPolicy {
    ProducerPolicy {
        max_model: Some(Size(limit)),
        max_inline: None,
        overflow,
        keep,
        preview: Size(2000),
        unit: Chars,
        retention: Retention::Session,
    }
}

async fn run(
    output: &str,
    call_id: &str,
    policy: &ProducerPolicy,
    store: Option<&dyn ArtifactStore>,
) -> Produced {
    let call = CallId::from(call_id);
    let input = ProducerInput {
        tool: "Bash",
        call_id: &call,
        output: output.into(),
    };
    let target = store.map(|store| ArtifactTarget {
        store,
        session: &SESSION,
    });
    produce(input, policy, &TEMPLATES, target).await
}

fn numbered_lines(n: usize) -> String {
    (0..n).map(|i| format!("line {i:04}\n")).collect()
}

fn notice(original: u64, limit: u64, unit: BudgetUnit) -> String {
    format!("[Tool output truncated by resultBudget: {original} → {limit} {unit}]")
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
async fn empty_output_becomes_the_placeholder() {
    for output in ["", "  \n\t"] {
        let got = run(
            output,
            "c",
            &policy(100, Overflow::Truncate, Keep::Head),
            None,
        )
        .await;
        assert_eq!(got.content.as_str(), "(Bash completed with no output)");
        assert!(!got.meta.truncated);
        assert_eq!(got.meta.persisted_files, None);
        assert_eq!(got.meta.final_size, 31);
    }
}

#[tokio::test]
async fn output_within_the_smaller_limit_passes_unchanged() {
    let output = "x".repeat(100);
    let mut p = policy(100, Overflow::Artifact, Keep::Head);
    let store = MemoryArtifactStore::new();
    let got = run(&output, "c", &p, Some(&store)).await;
    assert_eq!(got.content.as_str(), output);
    assert!(!got.meta.truncated);
    assert_eq!(got.meta.persisted_files, None);
    assert!(store.is_empty());

    // max_inline below max_model is the effective limit.
    p.max_model = Some(Size(1000));
    p.max_inline = Some(Size(99));
    p.overflow = Overflow::Truncate;
    let got = run(&output, "c", &p, None).await;
    assert!(got.meta.truncated);
    assert_eq!(got.meta.policy.limit, Some(99));
    assert_eq!(got.meta.final_size, 99);
}

#[tokio::test]
async fn truncation_keeps_head_tail_or_both_and_the_notice_fits_the_limit() {
    let output: String = ('a'..='z').cycle().take(500).collect();
    let n = notice(500, 120, Chars);
    let room = 120 - measure(&n, Chars) as usize;
    let table = [
        (Keep::Head, format!("{}\n{n}", &output[..room - 1])),
        (Keep::Tail, format!("{n}\n{}", &output[500 - (room - 1)..])),
        (
            Keep::Both,
            format!(
                "{}\n{n}\n{}",
                &output[..(room - 2) / 5],
                &output[500 - (room - 2 - (room - 2) / 5)..]
            ),
        ),
    ];
    for (keep, want) in table {
        let got = run(&output, "c", &policy(120, Overflow::Truncate, keep), None).await;
        assert_eq!(got.content.as_str(), want, "{keep:?}");
        assert_eq!(got.meta.final_size, 120, "{keep:?}");
        assert!(got.meta.truncated);
        assert_eq!(got.meta.original_size, 500);
        assert_eq!(got.meta.persisted_files, Some(Vec::new()));
        assert_eq!(got.meta.policy.overflow, Overflow::Truncate);
        assert_eq!(got.meta.policy.keep, keep);
    }
}

#[tokio::test]
async fn a_limit_smaller_than_the_notice_gets_the_notice_cut() {
    let got = run(
        &"x".repeat(500),
        "c",
        &policy(10, Overflow::Truncate, Keep::Head),
        None,
    )
    .await;
    assert_eq!(got.content.as_str(), "[Tool outp");
}

#[tokio::test]
async fn artifact_overflow_writes_once_and_returns_the_envelope() {
    let store = MemoryArtifactStore::new();
    let output = numbered_lines(1000);
    for (keep, name) in [
        (Keep::Head, "envelope_head"),
        (Keep::Tail, "envelope_tail"),
        (Keep::Both, "envelope_both"),
    ] {
        let mut p = policy(5000, Overflow::Artifact, keep);
        p.preview = Size(100);
        let got = run(&output, "call_9", &p, Some(&store)).await;
        let path = got.meta.persisted_files.clone().unwrap().remove(0);
        assert_eq!(store.get(&path).as_deref(), Some(output.as_str()));
        assert!(got.meta.truncated);
        assert_eq!(got.meta.policy.overflow, Overflow::Artifact);
        assert!(got.meta.final_size <= 5000);
        snapshot(name, got.content.as_str());
    }
    // One write per call: three calls, three artifacts.
    assert_eq!(store.len(), 3);
}

#[tokio::test]
async fn the_head_preview_is_cut_at_the_last_newline_in_its_second_half() {
    let store = MemoryArtifactStore::new();
    let output = numbered_lines(1000); // lines of 10 characters
    let mut p = policy(5000, Overflow::Artifact, Keep::Head);
    p.preview = Size(95);
    let got = run(&output, "c", &p, Some(&store)).await;
    let want = format!(
        "<persisted-output>\nOutput too large (10000 chars). Full output saved to: memory/s1/c.txt\n\nPreview (first 89 chars):\n{}\n...\n</persisted-output>",
        &output[..89]
    );
    assert_eq!(got.content.as_str(), want);
}

#[tokio::test]
async fn the_envelope_shrinks_its_preview_to_fit_a_small_limit() {
    let store = MemoryArtifactStore::new();
    let output = "y".repeat(10_000);
    let p = policy(300, Overflow::Artifact, Keep::Both);
    let got = run(&output, "c", &p, Some(&store)).await;
    // Within the limit; only the digits of the label can leave a unit or two unused.
    assert!(
        (295..=300).contains(&got.meta.final_size),
        "{}",
        got.meta.final_size
    );
    assert!(got.content.as_str().starts_with("<persisted-output>\n"));
    assert!(got.content.as_str().ends_with("\n</persisted-output>"));
}

#[tokio::test]
async fn a_failed_write_falls_back_to_truncation_and_never_fails_the_call() {
    let store = FaultyArtifactStore::always_failing();
    let output = "z".repeat(500);
    let got = run(
        &output,
        "c",
        &policy(100, Overflow::Artifact, Keep::Head),
        Some(&store),
    )
    .await;
    assert_eq!(store.attempts(), 1);
    assert!(got.artifact_error.is_some());
    assert_eq!(got.meta.persisted_files, Some(Vec::new()));
    assert_eq!(got.meta.policy.overflow, Overflow::Truncate);
    // The model is told the full output is gone.
    assert!(
        got.content.as_str().ends_with(&format!(
            "{} The full output could not be kept.",
            notice(500, 100, Chars)
        )),
        "{}",
        got.content.as_str()
    );
    assert_eq!(got.meta.final_size, 100);
}

#[tokio::test]
async fn invalid_call_ids_and_oversized_files_show_their_stub() {
    let output = "z".repeat(500);
    let p = policy(150, Overflow::Artifact, Keep::Head);
    let store = MemoryArtifactStore::new();
    let got = run(&output, "../..", &p, Some(&store)).await;
    assert!(
        got.content
            .as_str()
            .ends_with(&format!("{} (invalid call id)", notice(500, 150, Chars)))
    );
    assert_eq!(got.meta.final_size, 150);

    let small = MemoryArtifactStore::with_limits(Limits {
        max_file: 100,
        max_session: 1000,
    });
    let got = run(&output, "c", &p, Some(&small)).await;
    assert!(got.content.as_str().ends_with(&format!(
        "{} (file too large to persist)",
        notice(500, 150, Chars)
    )));
    assert!(store.is_empty() && small.is_empty());
}

#[tokio::test]
async fn without_a_store_artifact_overflow_truncates() {
    let got = run(
        &"z".repeat(500),
        "c",
        &policy(100, Overflow::Artifact, Keep::Tail),
        None,
    )
    .await;
    assert!(got.artifact_error.is_none());
    assert!(got.content.as_str().starts_with(&notice(500, 100, Chars)));
    assert_eq!(got.meta.persisted_files, Some(Vec::new()));
}

#[tokio::test]
async fn retention_reaches_the_store() {
    let store = MemoryArtifactStore::new();
    let mut p = policy(10, Overflow::Artifact, Keep::Head);
    p.retention = Retention::Project;
    let got = run(&"z".repeat(500), "c", &p, Some(&store)).await;
    assert_eq!(
        got.meta.persisted_files,
        Some(vec![PathBuf::from("memory/project/s1/c.txt")])
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn content_never_exceeds_the_limit_nor_splits_a_character(
        output in prop::collection::vec(
            prop::sample::select(vec!["a", "\n", "é", "日本", "🙂", "e\u{301}"]), 0..400,
        ).prop_map(|p| p.concat()),
        limit in 0u64..600,
        preview in 0u64..300,
        unit in prop_oneof![Just(Chars), Just(Bytes)],
        keep in prop_oneof![Just(Keep::Head), Just(Keep::Tail), Just(Keep::Both)],
        overflow in prop_oneof![Just(Overflow::Artifact), Just(Overflow::Truncate)],
    ) {
        let store = MemoryArtifactStore::new();
        let mut p = policy(limit, overflow, keep);
        p.preview = Size(preview);
        p.unit = unit;
        let got = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(run(&output, "c", &p, Some(&store)));
        prop_assert_eq!(got.meta.final_size, got.content.len(unit));
        if output.trim().is_empty() {
            prop_assert_eq!(got.content.as_str(), "(Bash completed with no output)");
        } else {
            prop_assert!(got.meta.final_size <= limit);
            prop_assert_eq!(got.meta.truncated, got.meta.original_size > limit);
        }
    }
}
