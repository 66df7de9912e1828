//! Opening a SQLite store: for writing ([`SqliteStore::open`], which creates and migrates
//! it), and for reading only ([`SqliteStore::open_for_reading`]), which reads a store on a
//! read-only mount or without write permission as it is (docs/storage.md#read-only-stores).

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OpenFlags};

use super::{BUSY_TIMEOUT, Inner, SqliteStore};
use crate::StoreError;
use crate::queue::EventQueue;
use crate::signals::Signals;
use crate::sqlite::schema::{
    check_file, check_not_foreign, create_private_dir_all, create_whole, migrate,
};

impl SqliteStore {
    /// Opens the store at `path`, creating the file and its parent directories if missing
    /// (directories this creates are private to the user on Unix: mode 0700), and brings
    /// its schema up to [`SqliteStore::SCHEMA_VERSION`].
    ///
    /// A missing file is created whole: the database is made under a temporary name
    /// beside it and linked into place, so a file at `path` is always either a complete
    /// store or not one of Sluice's, even when several processes create it at once. An
    /// existing file that is not a SQLite database, or a SQLite database that Sluice did
    /// not make, is refused before anything is written to it.
    ///
    /// Errors: [`StoreError::NotAStore`] for a directory, an empty file, a file that is not
    /// a SQLite database, or another program's database; [`StoreError::TooNew`] when a
    /// newer Sluice wrote the schema; [`StoreError::ReadOnly`] when the file or its
    /// directory cannot be written (a read-only mount, no permission; the reason says
    /// which); [`StoreError::Database`] when the directory cannot be created, or WAL mode is
    /// not available (for example on a file system without shared memory support).
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let shown = path.display().to_string();
        let fail = |what: &str, e: &dyn std::fmt::Display| StoreError::Database {
            path: shown.clone(),
            message: format!("{what}: {e}"),
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            create_private_dir_all(parent)
                .map_err(|e| fail(&format!("cannot create directory {}", parent.display()), &e))?;
        }
        check_file(path, &shown)?;
        if let Some(reason) = not_writable(path) {
            return Err(StoreError::ReadOnly {
                path: shown,
                reason,
            });
        }
        if !path.exists() {
            create_whole(path, &shown)?;
        }
        check_file(path, &shown)?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn =
            Connection::open_with_flags(path, flags).map_err(|e| fail("cannot open", &e))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| fail("cannot set the busy timeout", &e))?;
        check_not_foreign(&conn, &shown)?;
        let mode = wal_journal_mode(&conn).map_err(|e| fail("cannot use WAL journal mode", &e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(fail(
                "cannot use WAL journal mode",
                &format!("SQLite kept journal mode {mode:?}"),
            ));
        }
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| fail("cannot set synchronous = NORMAL", &e))?;
        conn.pragma_update(None, "foreign_keys", true)
            .map_err(|e| fail("cannot enable foreign keys", &e))?;
        migrate(&mut conn, &shown)?;
        SqliteStore::over(shown, conn, None)
    }

    /// Opens (creating or migrating) the store at `path` as [`SqliteStore::open`] does, for
    /// `sluice store migrate`, and returns the schema version before and after.
    ///
    /// # Errors
    /// As [`SqliteStore::open`].
    pub fn migrate(path: &Path) -> Result<(i64, i64), StoreError> {
        let shown = path.display().to_string();
        check_file(path, &shown)?;
        let before = if path.exists() {
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
                .and_then(|c| c.pragma_query_value(None, "user_version", |row| row.get(0)))
                .map_err(|e| StoreError::Database {
                    path: shown.clone(),
                    message: format!("cannot read the schema version: {e}"),
                })?
        } else {
            0
        };
        Self::open(path)?;
        Ok((before, Self::SCHEMA_VERSION))
    }

    /// Opens the store at `path` for commands that only read it (`sluice session list`,
    /// `show`, `audit`): as [`SqliteStore::open`] does when the file and its directory can
    /// be written; otherwise (a read-only mount, no write permission) for reading only,
    /// without creating, migrating or writing anything. Its `-wal` file, when there is one,
    /// is read too; without one, the file is read as immutable (SQLite then needs no `-shm`
    /// file, which could not be made). Every write through a store opened so fails with
    /// [`StoreError::ReadOnly`].
    ///
    /// # Errors
    /// As [`SqliteStore::open`] for a writable store. For a read-only one:
    /// [`StoreError::ReadOnly`] when there is no file (it cannot be created), or its
    /// schema is older than this build's (it cannot be migrated); [`StoreError::NotAStore`]
    /// and [`StoreError::TooNew`] as for [`SqliteStore::open`]; [`StoreError::Database`]
    /// when it cannot be read.
    pub fn open_for_reading(path: &Path) -> Result<SqliteStore, StoreError> {
        let shown = path.display().to_string();
        check_file(path, &shown)?;
        let Some(reason) = not_writable(path) else {
            return Self::open(path);
        };
        if !path.exists() {
            return Err(StoreError::ReadOnly {
                path: shown,
                reason: format!("{reason}, and there is no store there to read"),
            });
        }
        let fail = |e: rusqlite::Error| StoreError::Database {
            path: shown.clone(),
            message: format!("cannot open it for reading: {e}"),
        };
        let mut wal = path.as_os_str().to_os_string();
        wal.push("-wal");
        let has_wal = std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0);
        let mut uri = url::Url::from_file_path(std::path::absolute(path).map_err(|e| {
            StoreError::Database {
                path: shown.clone(),
                message: format!("cannot resolve its path: {e}"),
            }
        })?)
        .map_err(|()| StoreError::Database {
            path: shown.clone(),
            message: "cannot name it as a file: URI".into(),
        })?;
        uri.set_query(Some(if has_wal {
            "mode=ro"
        } else {
            "mode=ro&immutable=1"
        }));
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(uri.as_str(), flags).map_err(fail)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
        check_not_foreign(&conn, &shown)?;
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(fail)?;
        if version > Self::SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                path: shown,
                found: version,
                known: Self::SCHEMA_VERSION,
            });
        }
        if version < Self::SCHEMA_VERSION {
            return Err(StoreError::ReadOnly {
                path: shown,
                reason: format!(
                    "{reason}, and its schema (version {version}) is older than this Sluice reads (version {}): run `sluice store migrate` where it can be written",
                    Self::SCHEMA_VERSION
                ),
            });
        }
        SqliteStore::over(shown, conn, Some(reason))
    }

    /// A store over an open connection, with its thread started.
    fn over(
        path: String,
        conn: Connection,
        read_only: Option<String>,
    ) -> Result<SqliteStore, StoreError> {
        let worker = super::worker::Worker::start(&path)?;
        let inner = Arc::new(Inner {
            path,
            conn: Mutex::new(conn),
            worker,
            signals: Signals::default(),
            read_only,
        });
        Ok(SqliteStore {
            queue: EventQueue::new(inner.clone()),
            inner,
            watcher: super::worker::Watcher::default(),
        })
    }
}

/// Sets `journal_mode = WAL` on `conn` and returns the mode SQLite reports. Moving a file
/// from its rollback journal to WAL needs the file alone; when another connection is
/// opening it at the same moment, SQLite answers `SQLITE_BUSY` at once, without waiting in
/// the busy handler (the two would otherwise wait for each other), so that is retried
/// here, every 10 ms for up to [`BUSY_TIMEOUT`].
///
/// # Errors
/// SQLite's error, or `SQLITE_BUSY` still after [`BUSY_TIMEOUT`].
fn wal_journal_mode(conn: &Connection) -> rusqlite::Result<String> {
    let until = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0)) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < until =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            result => return result,
        }
    }
}

/// Why the store at `path` cannot be written, if it cannot: the file itself (when it exists)
/// or its directory, where SQLite makes the `-wal` and `-shm` files, is on a read-only file
/// system or may not be written (`access(2)` with `W_OK`, which sees read-only mounts and
/// immutable files even for root).
pub(crate) fn not_writable(path: &Path) -> Option<String> {
    use rustix::fs::{Access, access};
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let refused = |e: rustix::io::Errno| {
        matches!(
            e,
            rustix::io::Errno::ROFS | rustix::io::Errno::ACCESS | rustix::io::Errno::PERM
        )
    };
    if path.exists()
        && let Err(e) = access(path, Access::WRITE_OK)
        && refused(e)
    {
        return Some(format!(
            "the file cannot be written: {}",
            std::io::Error::from(e)
        ));
    }
    match access(dir, Access::WRITE_OK) {
        Err(e) if refused(e) => Some(format!(
            "its directory {} cannot be written (SQLite keeps the -wal and -shm files there): {}",
            dir.display(),
            std::io::Error::from(e)
        )),
        _ => None,
    }
}
