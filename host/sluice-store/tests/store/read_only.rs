//! A store on a read-only mount (docs/storage.md#read-only-stores): the reading commands'
//! open reads it as it is, a copy with its `-wal` and `-shm` included; every write is
//! refused naming the path and that it is read-only. Before, opening it failed with `cannot
//! read the schema: unable to open database file`.
//!
//! The tests run as root, which file modes do not stop: the store is made on a tmpfs of its
//! own that is then remounted read-only (root may mount here and in CI). Where mounting is
//! not allowed, a user who is not root gets a directory of mode 0555 instead; root without
//! mount prints `skipped:` (and fails under `CI=true`).

use std::path::{Path, PathBuf};
use std::process::Command;

use sluice_store::{SqliteStore, Store, StoreError};

use crate::harness::user;

/// A directory that can be made read-only; mounted on a tmpfs of its own when root.
struct Place {
    dir: tempfile::TempDir,
    mounted: bool,
}

impl Place {
    /// A writable place, or `None` (said on stderr) when none can be made read-only here.
    fn new(test: &str) -> Option<Place> {
        let dir = tempfile::tempdir().unwrap();
        if !rustix::process::geteuid().is_root() {
            return Some(Place {
                dir,
                mounted: false,
            });
        }
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=16m", "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Some(Place { dir, mounted: true });
        }
        sluice_test_support::skip_or_fail(&format!(
            "{test}: root cannot mount a tmpfs here to make a read-only store"
        ));
        None
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Makes the place read-only: a read-only remount, or mode 0555 for a user.
    fn freeze(&self) {
        if self.mounted {
            let status = Command::new("mount")
                .args(["-o", "remount,ro"])
                .arg(self.path())
                .status()
                .unwrap();
            assert!(status.success());
        } else {
            use std::os::unix::fs::PermissionsExt as _;
            for entry in std::fs::read_dir(self.path()).unwrap() {
                let path = entry.unwrap().path();
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
            }
            std::fs::set_permissions(self.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Command::new("umount").arg(self.dir.path()).status();
        } else {
            use std::os::unix::fs::PermissionsExt as _;
            let _ =
                std::fs::set_permissions(self.dir.path(), std::fs::Permissions::from_mode(0o755));
        }
    }
}

fn read_only_error(e: &StoreError, path: &Path) -> String {
    let StoreError::ReadOnly { path: p, reason } = e else {
        panic!("not ReadOnly: {e:?}");
    };
    assert_eq!(p, &path.display().to_string());
    let text = e.to_string();
    assert!(
        text.starts_with(&format!("session store {} is read-only (", path.display())),
        "{text}"
    );
    assert!(
        text.ends_with("); this needs to write to it. `sluice session list`, `show` and `audit` can read it as it is; to write, give --store (SLUICE_STORE, store.path) a file on a writable file system"),
        "{text}"
    );
    reason.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_on_a_read_only_mount_is_read_and_not_written() {
    let Some(place) = Place::new("a_store_on_a_read_only_mount_is_read_and_not_written") else {
        return;
    };
    let path: PathBuf = place.path().join("sessions.db");
    let id = {
        let store = SqliteStore::open(&path).unwrap();
        let s = store.create_session().await.unwrap();
        store.append(&s.id, &user("kept")).await.unwrap();
        s.id
    };
    place.freeze();
    // Writing: refused by name, before anything is opened.
    let e = SqliteStore::open(&path).unwrap_err();
    let reason = read_only_error(&e, &path);
    if place.mounted {
        assert_eq!(
            reason,
            format!(
                "the file cannot be written: Read-only file system (os error {})",
                rustix::io::Errno::ROFS.raw_os_error()
            )
        );
    }
    // Reading: the store as it is.
    let store = SqliteStore::open_for_reading(&path).unwrap();
    let sessions = store.list_sessions().await.unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].id, id);
    assert_eq!(sessions[0].message_count, 1);
    let messages = store.messages(&id).await.unwrap();
    assert_eq!(messages[0].message.content, "kept");
    assert!(store.ping().await.is_ok());
    // And every write through it is refused the same way.
    read_only_error(&store.create_session().await.unwrap_err(), &path);
    read_only_error(&store.append(&id, &user("no")).await.unwrap_err(), &path);
    // Nothing was made beside it.
    let mut names: Vec<String> = std::fs::read_dir(place.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["sessions.db"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_copy_with_its_wal_is_read_whole() {
    let Some(place) = Place::new("a_read_only_copy_with_its_wal_is_read_whole") else {
        return;
    };
    let source = tempfile::tempdir().unwrap();
    let original = source.path().join("sessions.db");
    let store = SqliteStore::open(&original).unwrap();
    let s = store.create_session().await.unwrap();
    store.append(&s.id, &user("in the wal")).await.unwrap();
    // Copied while the writer has it open: the last append is in the -wal file only.
    for suffix in ["", "-wal", "-shm"] {
        std::fs::copy(
            source.path().join(format!("sessions.db{suffix}")),
            place.path().join(format!("sessions.db{suffix}")),
        )
        .unwrap();
    }
    place.freeze();
    let path = place.path().join("sessions.db");
    let copy = SqliteStore::open_for_reading(&path).unwrap();
    let messages = copy.messages(&s.id).await.unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].message.content, "in the wal");
    drop(store);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writable_store_opened_for_reading_is_an_ordinary_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = SqliteStore::open_for_reading(&path).unwrap();
    let s = store.create_session().await.unwrap();
    assert_eq!(store.session(&s.id).await.unwrap().id, s.id);
}
