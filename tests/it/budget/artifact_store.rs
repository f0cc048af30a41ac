//! The artifact stores (SPEC §8.2) on the happy path: layout, modes, names, retention.
//! Failure cases are in `artifact_faults.rs`.

// Helpers outside `#[test]` functions set up fixtures; a failed setup should panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::future::Future;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use toolgate::{
    ArtifactRef, ArtifactRequest, ArtifactStore, FsArtifactStore, FsStoreConfig,
    MemoryArtifactStore, Retention, SessionId,
};

fn request(session: &str, call_id: &str, content: &str, retention: Retention) -> ArtifactRequest {
    ArtifactRequest {
        session: SessionId::from(session),
        call_id: call_id.into(),
        content: Arc::from(content),
        retention,
    }
}

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
}

fn leftovers(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".tmp-"))
        .collect()
}

#[tokio::test]
async fn files_are_0600_in_0700_session_folders() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("artifacts");
    let store = FsArtifactStore::new(FsStoreConfig::new(&root));
    let written = store
        .write(request("s1", "toolu_01", "full output", Retention::Session))
        .await
        .unwrap();
    assert_eq!(
        written,
        ArtifactRef {
            path: root.join("s1/toolu_01.txt"),
            bytes: 11,
            retention: Retention::Session,
        }
    );
    assert_eq!(fs::read_to_string(&written.path).unwrap(), "full output");
    assert_eq!(mode(&written.path), 0o600);
    assert_eq!(mode(&root.join("s1")), 0o700);
    assert_eq!(mode(&root), 0o700);
    assert!(leftovers(&root.join("s1")).is_empty());
    // Counted in whole disk blocks.
    assert_eq!(store.session_usage(&SessionId::from("s1")), 4096);
}

#[tokio::test]
async fn names_are_normalised_and_repeats_get_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FsArtifactStore::new(FsStoreConfig::new(tmp.path()));
    let mut names = Vec::new();
    for id in ["c/1", "c_1", "c_1", "-x"] {
        let written = store
            .write(request("s", id, id, Retention::Session))
            .await
            .unwrap();
        names.push(
            written
                .path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned(),
        );
    }
    assert_eq!(names, ["c_1.txt", "c_1.2.txt", "c_1.3.txt", "_x.txt"]);
    assert_eq!(
        fs::read_to_string(tmp.path().join("s/c_1.2.txt")).unwrap(),
        "c_1"
    );
}

#[tokio::test]
async fn a_file_left_by_an_earlier_process_is_never_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    fs::create_dir(tmp.path().join("s")).unwrap();
    fs::write(tmp.path().join("s/c.txt"), "earlier").unwrap();
    let store = FsArtifactStore::new(FsStoreConfig::new(tmp.path()));
    let written = store
        .write(request("s", "c", "new", Retention::Session))
        .await
        .unwrap();
    assert_eq!(written.path, tmp.path().join("s/c.2.txt"));
    assert_eq!(
        fs::read_to_string(tmp.path().join("s/c.txt")).unwrap(),
        "earlier"
    );
}

#[tokio::test]
async fn temporary_artifacts_are_removed_when_the_session_ends() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FsArtifactStore::new(FsStoreConfig::new(tmp.path()));
    let temp = store
        .write(request("s", "t", "temp", Retention::Temporary))
        .await
        .unwrap();
    let kept = store
        .write(request("s", "k", "kept", Retention::Session))
        .await
        .unwrap();
    let other = store
        .write(request("other", "t", "temp", Retention::Temporary))
        .await
        .unwrap();
    assert_eq!(temp.retention, Retention::Temporary);
    store.close_session(&SessionId::from("s")).await.unwrap();
    assert!(!temp.path.exists());
    assert!(kept.path.exists());
    assert!(other.path.exists());
    store.close().await.unwrap();
    assert!(!other.path.exists());
    // The emptied folder of `other` is gone; `s` still holds a kept artifact.
    assert!(!tmp.path().join("other").exists());
    assert!(tmp.path().join("s").exists());
}

#[tokio::test]
async fn temporary_artifacts_are_removed_when_the_store_is_dropped() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FsArtifactStore::new(FsStoreConfig::new(tmp.path()));
    let temp = store
        .write(request("s", "t", "temp", Retention::Temporary))
        .await
        .unwrap();
    assert!(temp.path.exists());
    drop(store);
    assert!(!temp.path.exists());
}

#[tokio::test]
async fn project_artifacts_go_under_the_project_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let mut config = FsStoreConfig::new(tmp.path().join("home"));
    config.project_dir = Some(tmp.path().join("project"));
    let store = FsArtifactStore::new(config);
    let written = store
        .write(request("s", "p", "x", Retention::Project))
        .await
        .unwrap();
    assert_eq!(written.path, tmp.path().join("project/s/p.txt"));
    assert_eq!(written.retention, Retention::Project);

    // Without a project directory the artifact is kept with the session, and says so.
    let store = FsArtifactStore::new(FsStoreConfig::new(tmp.path().join("home")));
    let written = store
        .write(request("s", "p", "x", Retention::Project))
        .await
        .unwrap();
    assert_eq!(written.path, tmp.path().join("home/s/p.txt"));
    assert_eq!(written.retention, Retention::Session);
}

#[test]
fn the_file_store_works_without_a_runtime() {
    let tmp = tempfile::tempdir().unwrap();
    let store = FsArtifactStore::new(FsStoreConfig::new(tmp.path()));
    let mut future = pin!(store.write(request("s", "c", "x", Retention::Session)));
    let mut cx = Context::from_waker(Waker::noop());
    match future.as_mut().poll(&mut cx) {
        Poll::Ready(result) => assert_eq!(result.unwrap().path, tmp.path().join("s/c.txt")),
        Poll::Pending => panic!("the write should finish inline without a runtime"),
    }
}

#[tokio::test]
async fn the_memory_store_follows_the_same_rules() {
    let store = MemoryArtifactStore::new();
    let a = store
        .write(request("s", "c/1", "one", Retention::Session))
        .await
        .unwrap();
    let b = store
        .write(request("s", "c_1", "two", Retention::Temporary))
        .await
        .unwrap();
    assert_eq!(a.path, PathBuf::from("memory/s/c_1.txt"));
    assert_eq!(b.path, PathBuf::from("memory/s/c_1.2.txt"));
    assert_eq!(store.get(&b.path).as_deref(), Some("two"));
    store.close_session(&SessionId::from("s")).await.unwrap();
    assert_eq!(store.paths(), [a.path]);
    assert_eq!(store.session_usage(&SessionId::from("s")), 6);
}
