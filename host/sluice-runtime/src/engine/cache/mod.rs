//! The on-disk cache of compiled components (docs/components.md#compiled-components).
//!
//! A compiled component (`.cwasm`) is native code that wasmtime maps and runs without
//! checking it, so the cache trusts nothing it did not write itself:
//!
//! - **Keyed by what it was compiled from**: `<sha256 of the component>-<engine>.cwasm`,
//!   `<engine>` a hash of the engine's compatibility hash (its version, target and
//!   settings). A component's pin (`sha256`) is checked on the component's own bytes, never on
//!   the artifact.
//! - **A private directory**: the cache directory must belong to this user and be writable by
//!   no one else (Sluice creates it with mode 0700 and tightens a directory it owns to 0700);
//!   one that another user owns or may write into is not used at all, and every component
//!   is compiled instead (with one warning naming the directory and the fix).
//! - **Each artifact's own digest, checked before use**: beside every `.cwasm` a
//!   `.cwasm.sha256` records the SHA-256 of the artifact as written. A load reads the
//!   artifact into memory, hashes those bytes and deserializes the same bytes only when the
//!   digest matches; any mismatch, a missing record, or an artifact wasmtime refuses is
//!   removed and the component is compiled again.
//! - **Bounded**: at most [`DEFAULT_MAX_CACHE_BYTES`] of artifacts; after a write, the
//!   artifacts used longest ago are removed until the rest fit (a load marks its artifact as
//!   used).

use std::fs;
use std::hash::{Hash, Hasher};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

mod upkeep;

pub use upkeep::{CacheUsage, Pruned};

/// The most bytes of compiled artifacts the cache keeps (512 MiB); older ones are removed.
pub const DEFAULT_MAX_CACHE_BYTES: u64 = 512 << 20;

/// The largest artifact the cache reads back (1 GiB): a larger file is not one it wrote.
const MAX_ARTIFACT_BYTES: u64 = 1 << 30;

/// The suffix of a compiled artifact.
const ARTIFACT: &str = "cwasm";

/// Why a cache directory is not used.
#[derive(Debug, thiserror::Error)]
pub enum CacheRefused {
    /// The directory could not be created or examined.
    #[error("the compiled-component cache {dir} cannot be used: {source}")]
    Io {
        /// The directory.
        dir: PathBuf,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
    /// Another user owns the directory.
    #[error(
        "the compiled-component cache {dir} belongs to user {owner}, not to this user ({me}); compiling every component instead (remove it, or set SLUICE_CACHE_DIR to a directory of your own)"
    )]
    NotOwned {
        /// The directory.
        dir: PathBuf,
        /// Its owner's user id.
        owner: u32,
        /// This process's effective user id.
        me: u32,
    },
    /// Others may write into the directory (or its parent, without the sticky bit), so its
    /// artifacts may not be Sluice's.
    #[error(
        "the compiled-component cache {dir} can be written by other users (mode {mode:o}); compiling every component instead (make it private with `chmod 700 {dir}` after removing its files, or set SLUICE_CACHE_DIR)"
    )]
    Shared {
        /// The directory that others may write into.
        dir: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
}

/// A private directory of compiled components; see the module docs.
#[derive(Debug)]
pub(crate) struct CompiledCache {
    dir: PathBuf,
    max_bytes: u64,
    /// Names artifacts for this engine: a hash of its compatibility hash.
    engine_key: u64,
}

/// What a load found.
#[derive(Debug)]
pub(crate) enum Lookup {
    /// The artifact, checked and deserialized.
    Hit(Component),
    /// No artifact for this component and engine.
    Miss,
    /// An artifact with no digest record (one an older Sluice wrote, or one put there
    /// without Sluice); it was removed. The reason, for the log.
    Unrecorded(String),
    /// An artifact that does not match its record or that wasmtime refuses; it was
    /// removed. The reason, for the log.
    Rejected(String),
}

impl CompiledCache {
    /// Opens (creating it, mode 0700) the cache at `dir` for `engine`, keeping at most
    /// `max_bytes` of artifacts.
    ///
    /// # Errors
    /// [`CacheRefused`] when the directory cannot be created or is not private to this
    /// user.
    pub(crate) fn open(
        dir: PathBuf,
        engine: &Engine,
        max_bytes: u64,
    ) -> Result<CompiledCache, CacheRefused> {
        let io = |source| CacheRefused::Io {
            dir: dir.clone(),
            source,
        };
        if let Some(parent) = dir.parent() {
            fs::create_dir_all(parent).map_err(io)?;
        }
        match fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io(e)),
        }
        let meta = fs::symlink_metadata(&dir).map_err(io)?;
        if !meta.is_dir() {
            return Err(io(io::Error::other("it is not a directory")));
        }
        let me = rustix::process::geteuid().as_raw();
        if meta.uid() != me {
            return Err(CacheRefused::NotOwned {
                dir,
                owner: meta.uid(),
                me,
            });
        }
        let mode = meta.mode() & 0o7777;
        if mode & 0o022 != 0 {
            return Err(CacheRefused::Shared { dir, mode });
        }
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            let parent_meta = fs::metadata(parent).map_err(io)?;
            let parent_mode = parent_meta.mode() & 0o7777;
            // Whoever may rename entries of the parent may put another directory here.
            let sticky = parent_mode & 0o1000 != 0;
            if parent_mode & 0o022 != 0 && !sticky {
                return Err(CacheRefused::Shared {
                    dir: parent.to_path_buf(),
                    mode: parent_mode,
                });
            }
        }
        if mode & 0o077 != 0 {
            fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).map_err(io)?;
        }
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Ok(CompiledCache {
            dir,
            max_bytes,
            engine_key: hasher.finish(),
        })
    }

    /// The directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// `<dir>/<source sha256>-<engine>.cwasm`.
    fn artifact(&self, source_sha256: &str) -> PathBuf {
        self.dir.join(format!(
            "{source_sha256}-{:016x}.{ARTIFACT}",
            self.engine_key
        ))
    }

    /// The record of `artifact`: `<artifact>.sha256`.
    fn record(artifact: &Path) -> PathBuf {
        let mut name = artifact.as_os_str().to_owned();
        name.push(".sha256");
        PathBuf::from(name)
    }

    /// The artifact compiled from the component whose SHA-256 is `source_sha256`, checked
    /// against its record and deserialized for `engine`.
    pub(crate) fn load(&self, engine: &Engine, source_sha256: &str) -> Lookup {
        let path = self.artifact(source_sha256);
        let bytes = match read_bounded(&path) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Lookup::Miss,
            Err(e) => return self.reject(&path, format!("cannot be read: {e}")),
        };
        let recorded = match fs::read_to_string(Self::record(&path)) {
            Ok(text) => text.trim().to_string(),
            Err(e) => {
                let _ = fs::remove_file(&path);
                return Lookup::Unrecorded(format!(
                    "{} has no digest record ({e})",
                    path.display()
                ));
            }
        };
        let actual = hex(&Sha256::digest(&bytes));
        if recorded != actual {
            return self.reject(
                &path,
                format!("does not match its digest record (sha256 {actual}, recorded {recorded})"),
            );
        }
        // SAFETY: these bytes are the ones just hashed, and their digest is the one Sluice
        // recorded when it wrote them from `Component::serialize` into this directory, which
        // only this user may write (checked when the cache was opened). wasmtime checks the
        // header (version, target, settings) itself and refuses a mismatch.
        #[allow(unsafe_code)]
        match unsafe { Component::deserialize(engine, &bytes) } {
            Ok(component) => {
                touch(&path);
                Lookup::Hit(component)
            }
            Err(e) => self.reject(&path, format!("was refused by wasmtime: {e}")),
        }
    }

    /// Removes the artifact at `path` and its record, and says why.
    fn reject(&self, path: &Path, why: String) -> Lookup {
        let _ = fs::remove_file(path);
        let _ = fs::remove_file(Self::record(path));
        Lookup::Rejected(format!("{} {why}", path.display()))
    }

    /// Writes `component` (compiled from the component whose SHA-256 is `source_sha256`)
    /// and its digest record, each through a temporary file and a rename, then removes the
    /// artifacts used longest ago while the cache holds more than its bound.
    ///
    /// # Errors
    /// The operating system's error, or wasmtime's when the component cannot be serialized.
    pub(crate) fn store(&self, source_sha256: &str, component: &Component) -> io::Result<()> {
        let bytes = component.serialize().map_err(io::Error::other)?;
        let path = self.artifact(source_sha256);
        // The record first: an artifact without one is refused, so a crash between the two
        // writes leaves nothing a later load trusts.
        write_atomically(
            &Self::record(&path),
            format!("{}\n", hex(&Sha256::digest(&bytes))).as_bytes(),
        )?;
        write_atomically(&path, &bytes)?;
        self.evict(Some(&path), self.max_bytes);
        Ok(())
    }
}

/// The file at `path`, or `None` when there is none; a file over [`MAX_ARTIFACT_BYTES`], or
/// anything but a regular file, is an error.
fn read_bounded(path: &Path) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read as _;
    let file = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other("it is not a regular file"));
    }
    if meta.len() > MAX_ARTIFACT_BYTES {
        return Err(io::Error::other(format!(
            "it is {} bytes, over the {MAX_ARTIFACT_BYTES} an artifact may have",
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_ARTIFACT_BYTES + 1).read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

/// Marks `path` as used now (its modification time), for the eviction order.
fn touch(path: &Path) {
    if let Ok(file) = fs::File::options().append(true).open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename, so
/// a reader never sees half a file.
fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    io::Write::write_all(&mut tmp, bytes)?;
    tmp.persist(path).map(drop).map_err(|e| e.error)
}

/// Lowercase hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine() -> Engine {
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true);
        Engine::new(&config).unwrap()
    }

    const EMPTY_COMPONENT: &[u8] = &[0, b'a', b's', b'm', 0x0d, 0, 1, 0];

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().mode() & 0o777
    }

    #[test]
    fn a_new_cache_directory_is_private_and_an_owned_loose_one_is_tightened() {
        let tmp = tempfile::tempdir().unwrap();
        let engine = engine();
        let dir = tmp.path().join("a/b/components");
        CompiledCache::open(dir.clone(), &engine, 1 << 20).unwrap();
        assert_eq!(mode(&dir), 0o700);
        let loose = tmp.path().join("loose");
        fs::create_dir(&loose).unwrap();
        fs::set_permissions(&loose, fs::Permissions::from_mode(0o755)).unwrap();
        CompiledCache::open(loose.clone(), &engine, 1 << 20).unwrap();
        assert_eq!(mode(&loose), 0o700);
    }

    #[test]
    fn a_directory_others_may_write_is_refused_naming_it_and_its_mode() {
        let tmp = tempfile::tempdir().unwrap();
        let shared = tmp.path().join("shared");
        fs::create_dir(&shared).unwrap();
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o777)).unwrap();
        let err = CompiledCache::open(shared.clone(), &engine(), 1 << 20).unwrap_err();
        assert!(
            matches!(err, CacheRefused::Shared { mode: 0o777, .. }),
            "{err}"
        );
        assert!(
            err.to_string().contains(&shared.display().to_string()),
            "{err}"
        );
        // A directory under a parent others may write (without the sticky bit).
        let parent = tmp.path().join("open");
        fs::create_dir(&parent).unwrap();
        fs::set_permissions(&parent, fs::Permissions::from_mode(0o777)).unwrap();
        let err = CompiledCache::open(parent.join("c"), &engine(), 1 << 20).unwrap_err();
        assert!(
            matches!(err, CacheRefused::Shared { mode: 0o777, ref dir } if *dir == parent),
            "{err}"
        );
        // With the sticky bit (as /tmp), others cannot rename what is not theirs.
        let sticky = tmp.path().join("sticky");
        fs::create_dir(&sticky).unwrap();
        fs::set_permissions(&sticky, fs::Permissions::from_mode(0o1777)).unwrap();
        CompiledCache::open(sticky.join("c"), &engine(), 1 << 20).unwrap();
    }

    #[test]
    fn an_artifact_is_used_only_with_its_record_and_a_swapped_one_is_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let engine = engine();
        let cache = CompiledCache::open(tmp.path().join("c"), &engine, 1 << 30).unwrap();
        let component = Component::new(&engine, EMPTY_COMPONENT).unwrap();
        assert!(matches!(cache.load(&engine, "aa"), Lookup::Miss));
        cache.store("aa", &component).unwrap();
        assert!(matches!(cache.load(&engine, "aa"), Lookup::Hit(_)));
        assert_eq!(cache.usage().artifacts, 1);

        // Another artifact under the name: its bytes do not match the record.
        let path = cache.artifact("aa");
        let mut other = fs::read(&path).unwrap();
        other.push(0);
        fs::write(&path, &other).unwrap();
        match cache.load(&engine, "aa") {
            Lookup::Rejected(why) => {
                assert!(why.contains("does not match its digest record"), "{why}")
            }
            other => panic!("{other:?}"),
        }
        assert!(!path.exists());
        assert!(!CompiledCache::record(&path).exists());

        // An artifact without a record.
        cache.store("bb", &component).unwrap();
        fs::remove_file(CompiledCache::record(&cache.artifact("bb"))).unwrap();
        match cache.load(&engine, "bb") {
            Lookup::Unrecorded(why) => assert!(why.contains("has no digest record"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_cache_keeps_its_bound_removing_the_artifacts_used_longest_ago() {
        let tmp = tempfile::tempdir().unwrap();
        let engine = engine();
        let component = Component::new(&engine, EMPTY_COMPONENT).unwrap();
        let one = component.serialize().unwrap().len() as u64;
        // Room for two artifacts.
        let cache = CompiledCache::open(tmp.path().join("c"), &engine, 2 * one + one / 2).unwrap();
        let at = |secs| SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs);
        cache.store("a1", &component).unwrap();
        fs::File::options()
            .append(true)
            .open(cache.artifact("a1"))
            .unwrap()
            .set_modified(at(1000))
            .unwrap();
        cache.store("a2", &component).unwrap();
        fs::File::options()
            .append(true)
            .open(cache.artifact("a2"))
            .unwrap()
            .set_modified(at(2000))
            .unwrap();
        // a1 is used: it is now the newest of the two.
        assert!(matches!(cache.load(&engine, "a1"), Lookup::Hit(_)));
        cache.store("a3", &component).unwrap();
        let usage = cache.usage();
        assert_eq!((usage.artifacts, usage.bytes), (2, 2 * one));
        assert!(cache.artifact("a1").exists());
        assert!(!cache.artifact("a2").exists());
        assert!(!CompiledCache::record(&cache.artifact("a2")).exists());
        assert!(cache.artifact("a3").exists());
    }
}
