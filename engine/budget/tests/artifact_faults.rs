//! Artifact store faults (SPEC §8.2, issue 4): unwritable folder, full disk, planted
//! symbolic links, invalid ids, caps reached mid-batch and under 100 parallel writes. A
//! failed write must never fail a call nor break the batch budget.

// Helpers outside `#[test]` functions set up fixtures; a failed setup should panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

use crate::BudgetUnit;
use crate::artifact::testing::{FaultPlan, FaultyArtifactStore};
use crate::budget::{
    ArtifactTarget, BatchBudget, Persistence, Slot, SlotKind, Templates, finalize,
};
use crate::{
    ArtifactError, ArtifactLimits as Limits, ArtifactRequest, ArtifactStore, FsArtifactStore,
    FsStoreConfig, Retention, SessionId,
};
use crate::{FinalizeConfig, FinalizeItem};

static TEMPLATES: LazyLock<Templates> = LazyLock::new(Templates::spec_defaults);
static SESSION: LazyLock<SessionId> = LazyLock::new(|| SessionId::from("s1"));

fn request(call_id: &str, content: &str) -> ArtifactRequest {
    ArtifactRequest {
        session: SESSION.clone(),
        call_id: call_id.into(),
        content: Arc::from(content),
        retention: Retention::Session,
    }
}

fn config(budget: u64) -> FinalizeConfig<'static> {
    FinalizeConfig {
        budget: BatchBudget::Units(budget),
        unit: BudgetUnit::Chars,
        templates: &TEMPLATES,
        retention: Retention::Session,
        max_files: None,
    }
}

fn big_batch(n: usize, size: usize) -> Vec<FinalizeItem> {
    (0..n)
        .map(|i| {
            FinalizeItem::new(
                format!("call_{i}"),
                vec![Slot::new(SlotKind::Output, "x".repeat(size))],
            )
        })
        .collect()
}

async fn finalize_with(
    store: &dyn ArtifactStore,
    batch: &[FinalizeItem],
    budget: u64,
) -> crate::FinalizeOutcome {
    let target = ArtifactTarget {
        store,
        session: &SESSION,
    };
    finalize(batch, &config(budget), Some(target)).await
}

/// Files (not folders) under `dir`, recursively.
fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                out.extend(files(&path));
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Whether file permissions stop this process: as root (or with CAP_DAC_OVERRIDE) a 0500
/// folder is still writable, so the read-only test can only check weaker properties.
fn permissions_are_enforced(dir: &Path) -> bool {
    let probe_dir = dir.join("probe");
    fs::create_dir(&probe_dir).unwrap();
    fs::set_permissions(&probe_dir, fs::Permissions::from_mode(0o500)).unwrap();
    let enforced = fs::write(probe_dir.join("x"), "x").is_err();
    fs::set_permissions(&probe_dir, fs::Permissions::from_mode(0o700)).unwrap();
    fs::remove_dir_all(&probe_dir).unwrap();
    enforced
}

#[tokio::test]
async fn a_read_only_folder_fails_the_write_but_not_the_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let enforced = permissions_are_enforced(tmp.path());
    let root = tmp.path().join("artifacts");
    fs::create_dir(&root).unwrap();
    fs::set_permissions(&root, fs::Permissions::from_mode(0o500)).unwrap();
    let store = FsArtifactStore::new(FsStoreConfig::new(&root));

    let result = store.write(request("c", "content")).await;
    if enforced {
        assert!(
            matches!(result, Err(ArtifactError::Io { .. })),
            "{result:?}"
        );
        assert_eq!(store.session_usage(&SESSION), 0, "reservation released");
        assert!(files(&root).is_empty());
    } else {
        // Running as root: the mode does not stop us, so the write succeeds; it must still
        // produce a proper 0600 file and count against the session.
        let written = result.unwrap();
        assert_eq!(
            fs::metadata(&written.path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // One 4 KiB block.
        assert_eq!(store.session_usage(&SESSION), 4096);
    }

    // Either way the finalizer keeps the budget and reports what happened.
    let outcome = finalize_with(&store, &big_batch(3, 5000), 1200).await;
    assert!(outcome.total_after <= 1200);
    for (item, report) in outcome.items.iter().zip(&outcome.reports) {
        match (&report.persistence, enforced) {
            (Persistence::Failed(_), true) => assert_eq!(item.persisted_files, Some(Vec::new())),
            (Persistence::Written, false) => {
                assert_eq!(item.persisted_files.as_ref().map(Vec::len), Some(1))
            }
            (other, _) => panic!("unexpected persistence {other:?} (enforced: {enforced})"),
        }
    }
    fs::set_permissions(&root, fs::Permissions::from_mode(0o700)).unwrap();
}

/// A full disk, simulated by a wrapper that fails with ENOSPC after the first write. (A tiny
/// tmpfs would need mount privileges the test cannot assume.)
#[tokio::test]
async fn a_full_disk_mid_batch_keeps_the_budget_and_the_first_artifact() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FaultyArtifactStore::new(
        FsArtifactStore::new(FsStoreConfig::new(tmp.path())),
        FaultPlan::AfterWrites(1),
    );
    let outcome = finalize_with(&store, &big_batch(3, 5000), 1500).await;
    assert!(outcome.total_after <= 1500);
    assert!(matches!(
        outcome.reports[0].persistence,
        Persistence::Written
    ));
    for report in &outcome.reports[1..] {
        match &report.persistence {
            Persistence::Failed(ArtifactError::Io { source, .. }) => {
                assert_eq!(source.kind(), std::io::ErrorKind::StorageFull)
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(files(tmp.path()), [tmp.path().join("s1/call_0.txt")]);
    assert!(outcome.items[1].slots[0].text.as_str().starts_with(
        "Tool output truncated. The full output could not be kept.\nFull output sha256: "
    ));
}

#[tokio::test]
async fn a_symlink_planted_at_the_artifact_path_is_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let victim = tmp.path().join("victim");
    fs::write(&victim, "precious").unwrap();
    let root = tmp.path().join("artifacts");
    fs::create_dir_all(root.join("s1")).unwrap();
    symlink(&victim, root.join("s1/c.txt")).unwrap();

    let store = FsArtifactStore::new(FsStoreConfig::new(&root));
    let written = store
        .write(request("c", "attacker-controlled"))
        .await
        .unwrap();
    assert_eq!(written.path, root.join("s1/c.2.txt"));
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
    assert!(
        fs::symlink_metadata(root.join("s1/c.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let meta = fs::symlink_metadata(&written.path).unwrap();
    assert!(meta.file_type().is_file());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
}

/// A link the agent made in the workspace above the artifact folder (`target` → elsewhere,
/// with `dir: target/arts`) is refused, not followed (the spill went outside the workspace).
#[tokio::test]
async fn a_symlink_in_the_workspace_above_the_root_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let workspace = tmp.path().join("ws");
    let elsewhere = tmp.path().join("elsewhere");
    fs::create_dir_all(&workspace).unwrap();
    fs::create_dir(&elsewhere).unwrap();
    symlink(&elsewhere, workspace.join("target")).unwrap();
    let store = FsArtifactStore::new(FsStoreConfig {
        checked_from: Some(workspace.clone()),
        ..FsStoreConfig::new(workspace.join("target/arts"))
    });
    let result = store.write(request("c", "x")).await;
    assert!(
        matches!(result, Err(ArtifactError::Symlink { ref path }) if *path == workspace.join("target")),
        "{result:?}"
    );
    assert!(files(&elsewhere).is_empty());
    // Without the link, the folders are made.
    fs::remove_file(workspace.join("target")).unwrap();
    let written = store.write(request("c", "x")).await.unwrap();
    assert!(written.path.starts_with(workspace.join("target/arts")));
}

#[tokio::test]
async fn a_symlink_planted_at_the_session_folder_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let elsewhere = tmp.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    let root = tmp.path().join("artifacts");
    fs::create_dir(&root).unwrap();
    symlink(&elsewhere, root.join("s1")).unwrap();

    let store = FsArtifactStore::new(FsStoreConfig::new(&root));
    let result = store.write(request("c", "x")).await;
    assert!(
        matches!(result, Err(ArtifactError::Symlink { ref path }) if *path == root.join("s1")),
        "{result:?}"
    );
    assert!(files(&elsewhere).is_empty());
    assert_eq!(store.session_usage(&SESSION), 0);
}

#[tokio::test]
async fn a_symlinked_root_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("real");
    fs::create_dir(&real).unwrap();
    let root = tmp.path().join("artifacts");
    symlink(&real, &root).unwrap();
    let store = FsArtifactStore::new(FsStoreConfig::new(&root));
    let result = store.write(request("c", "x")).await;
    assert!(
        matches!(result, Err(ArtifactError::Symlink { .. })),
        "{result:?}"
    );
    assert!(files(&real).is_empty());
}

#[tokio::test]
async fn a_file_where_the_session_folder_belongs_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("s1"), "not a folder").unwrap();
    let store = FsArtifactStore::new(FsStoreConfig::new(tmp.path()));
    let result = store.write(request("c", "x")).await;
    assert!(
        matches!(result, Err(ArtifactError::NotADirectory { .. })),
        "{result:?}"
    );
}

#[tokio::test]
async fn invalid_ids_and_oversized_outputs_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FsArtifactStore::new(FsStoreConfig {
        limits: Limits {
            max_file: 10,
            max_session: 100,
        },
        ..FsStoreConfig::new(tmp.path())
    });
    for id in ["", "../..", "🙂", "..."] {
        let result = store.write(request(id, "x")).await;
        assert!(
            matches!(result, Err(ArtifactError::InvalidCallId { .. })),
            "{id:?}"
        );
    }
    let mut bad_session = request("c", "x");
    bad_session.session = SessionId::from("../etc");
    assert!(matches!(
        store.write(bad_session).await,
        Err(ArtifactError::InvalidSessionId { .. })
    ));
    assert!(matches!(
        store.write(request("c", "01234567890")).await,
        Err(ArtifactError::TooLarge {
            bytes: 11,
            limit: 10
        })
    ));
    assert!(files(tmp.path()).is_empty());
    assert_eq!(store.session_usage(&SESSION), 0);
}

#[tokio::test]
async fn the_session_cap_counts_disk_blocks_so_tiny_files_cannot_flood_the_disk() {
    let tmp = tempfile::tempdir().unwrap();
    // 40 KiB of session: room for ten files however small they are.
    let store = FsArtifactStore::new(FsStoreConfig {
        limits: Limits {
            max_file: 10_000,
            max_session: 10 * 4096,
        },
        ..FsStoreConfig::new(tmp.path())
    });
    let mut written = 0;
    for n in 0..50 {
        if store.write(request(&format!("c{n}"), "tiny")).await.is_ok() {
            written += 1;
        }
    }
    assert_eq!(written, 10);
    assert_eq!(store.session_usage(&SESSION), 10 * 4096);
    assert_eq!(files(tmp.path()).len(), 10);
}

#[tokio::test]
async fn the_session_cap_reached_mid_batch_keeps_earlier_artifacts() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FsArtifactStore::new(FsStoreConfig {
        limits: Limits {
            max_file: 10_000,
            max_session: 12_000,
        },
        // Counted in bytes here, to test the cap itself.
        block_size: 1,
        ..FsStoreConfig::new(tmp.path())
    });
    let outcome = finalize_with(&store, &big_batch(4, 5000), 2000).await;
    assert!(outcome.total_after <= 2000);
    let written: Vec<bool> = outcome
        .reports
        .iter()
        .map(|r| matches!(r.persistence, Persistence::Written))
        .collect();
    assert_eq!(written, [true, true, false, false]);
    assert!(matches!(
        outcome.reports[2].persistence,
        Persistence::Failed(ArtifactError::SessionFull { .. })
    ));
    assert_eq!(store.session_usage(&SESSION), 10_000);
    assert_eq!(files(tmp.path()).len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_writes_never_overshoot_the_session_cap() {
    const SIZE: usize = 1000;
    const CAP: u64 = 10 * SIZE as u64;
    let tmp = tempfile::tempdir().unwrap();
    let store = Arc::new(FsArtifactStore::new(FsStoreConfig {
        limits: Limits {
            max_file: CAP,
            max_session: CAP,
        },
        block_size: 1,
        ..FsStoreConfig::new(tmp.path())
    }));

    // A watcher samples the usage while the writes run.
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (store, done) = (Arc::clone(&store), Arc::clone(&done));
        tokio::spawn(async move {
            let mut max_seen = 0;
            while !done.load(Ordering::SeqCst) {
                max_seen = max_seen.max(store.session_usage(&SESSION));
                tokio::task::yield_now().await;
            }
            max_seen
        })
    };
    let content: Arc<str> = Arc::from("y".repeat(SIZE));
    let tasks: Vec<_> = (0..100)
        .map(|i| {
            let store = Arc::clone(&store);
            let mut req = request(&format!("call_{i}"), "");
            req.content = Arc::clone(&content);
            tokio::spawn(async move { store.write(req).await })
        })
        .collect();
    let mut ok = 0;
    let mut full = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(_) => ok += 1,
            Err(ArtifactError::SessionFull { .. }) => full += 1,
            Err(other) => panic!("unexpected {other}"),
        }
    }
    done.store(true, Ordering::SeqCst);
    let max_seen = watcher.await.unwrap();

    assert_eq!((ok, full), (10, 90));
    assert!(max_seen <= CAP, "usage reached {max_seen}");
    assert_eq!(store.session_usage(&SESSION), CAP);
    let written = files(tmp.path());
    assert_eq!(written.len(), 10);
    let on_disk: u64 = written.iter().map(|p| fs::metadata(p).unwrap().len()).sum();
    assert_eq!(on_disk, CAP);
    for path in &written {
        assert_eq!(
            fs::metadata(path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}
