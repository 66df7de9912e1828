//! Live reload of the tools for `sluice serve` and `sluice mcp`: adding, replacing or
//! removing `tools/*.wasm` (and their `*.toml` policies), or changing the components of
//! `sluice.toml`, takes effect for the calls that start afterwards, without a restart
//! (docs/configuration.md#live-reload).
//!
//! How: the directories that hold the configuration file, the tools directory and the
//! configured component files are watched with `notify` (inotify on Linux: no polling, no
//! cost while nothing changes). Only changes of content count (a file created, written and closed, renamed or deleted), never an open, a read or a
//! change of metadata, so the reload's own reads of every component and policy do not
//! start another reload. A burst of such changes is gathered until [`DEBOUNCE`] passes
//! without one, so that a file still being written is read once it is done. Each burst
//! resolves the configuration again and loads a whole new
//! [`Toolbox`](sluice_runtime::Toolbox) through the same [`ToolLoader`] as at start (the
//! same engine, the same fetch and verification of `oci://` components, the same compile
//! and import checks), then swaps it in atomically ([`LiveToolbox::replace`]), after setting
//! the new report in [`Served::catalog`] (what `GET /tools` lists). Calls in flight keep
//! the toolbox they started with.
//!
//! A replacement that fails any check changes nothing: the current tools stay, and the
//! reason is logged once (at `warn`; the same reason again, after a later change, only at
//! `debug`); the first reload that works after a failure logs that it works again (at
//! `info`). Nothing is retried until the next change. Without `strict`, a component that
//! fails to load, or whose policy is wrong, does not stop a start (it is listed as
//! unavailable); a reload is stricter about the components that are serving: when one of
//! them would become unavailable, the whole reload is refused, so a broken replacement
//! never takes a working component away. A component that was unavailable already, or a
//! new one (a FIFO, a directory or an oversized file named `*.wasm` included), may fail as
//! at start: the reload goes on without it.
//!
//! Only the tools are reloaded. `roots` cannot change this way (a reload that changes them
//! is refused, as `PUT /agent/config` refuses them); a change to any other key is logged
//! as taking effect at the next start.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode, EventKind, ModifyKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher as _};
use sluice_config::{Config, ConfigError, Overrides, ToolSource};
use sluice_runtime::LiveToolbox;
use tokio::sync::mpsc;

use sluice_wiring::report::ToolCatalog;
use sluice_wiring::{Loaded, ToolLoader, WiringError};

/// How long the watched files must stay unchanged before a burst of changes is reloaded
/// (ms-scale: a copy of a component is many writes).
pub const DEBOUNCE: Duration = Duration::from_millis(150);

/// What the reloader re-reads.
#[derive(Clone, Debug, Default)]
pub struct ReloadOptions {
    /// The configuration file (`--config`), if any.
    pub config_file: Option<PathBuf>,
    /// The command line's values, applied again at each reload.
    pub overrides: Overrides,
}

/// A running reloader; dropping it stops watching.
pub struct Reloader {
    _watcher: RecommendedWatcher,
    task: tokio::task::JoinHandle<()>,
    watched: Vec<PathBuf>,
    reloads: Arc<AtomicU64>,
}

impl std::fmt::Debug for Reloader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reloader")
            .field("watched", &self.watched)
            .field("reloads", &self.reloads())
            .finish_non_exhaustive()
    }
}

impl Reloader {
    /// The directories watched.
    pub fn watched(&self) -> &[PathBuf] {
        &self.watched
    }

    /// How many reloads have finished since the start: bursts of changes to the tools'
    /// files that were reloaded, whatever the outcome (a swap, the same tools, a refusal).
    /// It stays put while nothing changes the watched files' content.
    pub fn reloads(&self) -> u64 {
        self.reloads.load(Ordering::SeqCst)
    }
}

/// True when an event of `kind` may have changed what a watched file holds: a file
/// created, removed or renamed, its data modified, or a handle that wrote it closed. An
/// open, a read, a close after reading and a change of metadata (`touch` without writing,
/// `chmod`, access times) are not: a reload reads every component and policy, and those
/// reads must not start the next one.
fn is_content_change(kind: &EventKind) -> bool {
    match kind {
        EventKind::Create(_) | EventKind::Remove(_) => true,
        EventKind::Modify(ModifyKind::Metadata(_)) => false,
        EventKind::Modify(_) => true,
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) | EventKind::Any | EventKind::Other => false,
    }
}

/// One message from the watcher to the reloader.
#[derive(Debug)]
enum Change {
    /// The content of the file at this path may have changed.
    Path(PathBuf),
    /// Events were lost (the kernel's queue overflowed): anything may have changed.
    Rescan,
}

impl Drop for Reloader {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Why watching could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReloadError {
    /// The file watcher could not be set up.
    #[error("cannot watch {path} for changes to the tools: {reason}")]
    Watch {
        /// The directory.
        path: PathBuf,
        /// Why, in the watcher's words.
        reason: String,
    },
}

/// Starts watching for changes to the tools of `boot` (the configuration the process
/// started with, whose tools `live` serves; `loaded` is what that load reported) and
/// reloading them into `live` through `loader`. Must be called inside a tokio runtime.
///
/// # Errors
/// [`ReloadError::Watch`] when a directory cannot be watched.
pub fn watch(
    boot: Config,
    options: ReloadOptions,
    loader: ToolLoader,
    live: Arc<LiveToolbox>,
    loaded: Served,
) -> Result<Reloader, ReloadError> {
    let relevant = Relevant::of(&boot, options.config_file.as_deref());
    let (tx, rx) = mpsc::unbounded_channel::<Change>();
    let mut watcher =
        notify::recommended_watcher(move |result: notify::Result<notify::Event>| match result {
            Ok(event) if event.need_rescan() => {
                let _ = tx.send(Change::Rescan);
            }
            Ok(event) if is_content_change(&event.kind) => {
                for path in event.paths {
                    let _ = tx.send(Change::Path(path));
                }
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("watching the tools for changes: {e}"),
        })
        .map_err(|e| ReloadError::Watch {
            path: PathBuf::new(),
            reason: e.to_string(),
        })?;
    for dir in &relevant.dirs {
        watcher
            .watch(dir, RecursiveMode::NonRecursive)
            .map_err(|e| ReloadError::Watch {
                path: dir.clone(),
                reason: e.to_string(),
            })?;
    }
    let watched: Vec<PathBuf> = relevant.dirs.iter().cloned().collect();
    tracing::info!(dirs = ?watched, "watching the tools for changes");
    let reloads = Arc::new(AtomicU64::new(0));
    let state = State {
        boot,
        options,
        loader,
        live,
        served: loaded,
        relevant,
        failing: None,
        reloads: reloads.clone(),
    };
    let task = tokio::spawn(state.run(rx));
    Ok(Reloader {
        _watcher: watcher,
        task,
        watched,
        reloads,
    })
}

/// Which paths matter.
struct Relevant {
    dirs: BTreeSet<PathBuf>,
    files: BTreeSet<PathBuf>,
    tools_dir: Option<PathBuf>,
    lock_file: PathBuf,
}

impl Relevant {
    fn of(config: &Config, config_file: Option<&Path>) -> Relevant {
        let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        let mut files = BTreeSet::new();
        if let Some(f) = config_file {
            files.insert(absolute(f));
        }
        for t in &config.tools {
            match &t.source {
                ToolSource::Component(p) => {
                    files.insert(absolute(p));
                }
                ToolSource::Oci(o) => files.extend(o.keys.iter().map(|k| absolute(k))),
                ToolSource::Builtin(_) => {}
            }
        }
        let tools_dir = config.tools_dir.as_deref().map(absolute);
        let mut dirs: BTreeSet<PathBuf> = files
            .iter()
            .filter_map(|f| f.parent().map(Path::to_path_buf))
            .collect();
        dirs.extend(tools_dir.clone());
        dirs.retain(|d| d.is_dir());
        Relevant {
            dirs,
            files,
            tools_dir,
            lock_file: absolute(&config.lock_file),
        }
    }

    /// True when a change to `path` may change the tools: the configuration file, a
    /// configured component or key file, or a `*.wasm` or `*.toml` in the tools directory.
    /// The lock file (which reloads write) and temporary files are not.
    fn matters(&self, path: &Path) -> bool {
        if path == self.lock_file {
            return false;
        }
        if self.files.contains(path) {
            return true;
        }
        let in_tools_dir = self
            .tools_dir
            .as_deref()
            .is_some_and(|d| path.parent() == Some(d));
        in_tools_dir && path.extension().is_some_and(|x| x == "wasm" || x == "toml")
    }
}

/// What the toolbox being served was loaded from (from [`Loaded`]).
#[derive(Clone, Debug, Default)]
pub struct Served {
    /// [`Loaded::fingerprint`].
    pub fingerprint: Vec<(String, String, sluice_runtime::ToolPolicy)>,
    /// [`Loaded::available`].
    pub available: BTreeSet<String>,
    /// [`Loaded::report`], shared with whoever shows it (`GET /tools`:
    /// [`Server::with_tool_catalog`](crate::Server::with_tool_catalog)). A reload that swaps
    /// the toolbox sets the new report first; one that fails leaves it as it was.
    pub catalog: ToolCatalog,
}

impl Served {
    /// What `loaded` serves, with a new catalog of its report.
    pub fn of(loaded: &Loaded) -> Served {
        Served {
            fingerprint: loaded.fingerprint.clone(),
            available: loaded.available.clone(),
            catalog: ToolCatalog::new(loaded.report.clone()),
        }
    }
}

struct State {
    boot: Config,
    options: ReloadOptions,
    loader: ToolLoader,
    live: Arc<LiveToolbox>,
    served: Served,
    relevant: Relevant,
    /// Why the last reload failed, while no reload has worked since.
    failing: Option<String>,
    reloads: Arc<AtomicU64>,
}

impl State {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Change>) {
        loop {
            // Wait for a change that matters, then for DEBOUNCE without another one.
            let mut changed = BTreeSet::new();
            while changed.is_empty() {
                match rx.recv().await {
                    Some(change) => self.note(change, &mut changed),
                    None => return,
                }
            }
            loop {
                match tokio::time::timeout(DEBOUNCE, rx.recv()).await {
                    Ok(Some(change)) => self.note(change, &mut changed),
                    Ok(None) => return,
                    Err(_) => break,
                }
            }
            tracing::debug!(?changed, "the tools' files changed");
            self.reload().await;
            self.reloads.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Adds the path of `change` to `changed` when it matters (a rescan matters always).
    fn note(&self, change: Change, changed: &mut BTreeSet<PathBuf>) {
        match change {
            Change::Path(path) if self.relevant.matters(&path) => {
                changed.insert(path);
            }
            Change::Path(_) => {}
            Change::Rescan => {
                changed.insert(PathBuf::from("(events were lost: everything)"));
            }
        }
    }

    /// One reload: resolve, load, swap; or log why not and keep the current tools. A
    /// failure is logged once; the reload that works after it says so.
    async fn reload(&mut self) {
        let started = Instant::now();
        let outcome = self.try_reload().await.map_err(|e| e.to_string());
        crate::metrics::reload_ended(&outcome);
        if outcome.is_ok()
            && let Some(reason) = self.failing.take()
        {
            tracing::info!("reloading the tools works again (it failed before: {reason})");
        }
        match outcome {
            Ok(Some((revision, summary))) => tracing::info!(
                "reloaded the tools (revision {revision}, {} ms): {summary}",
                started.elapsed().as_millis()
            ),
            Ok(None) => tracing::debug!("the tools' files changed, but not the tools"),
            Err(reason) if self.failing.as_ref() == Some(&reason) => tracing::debug!(
                "reloading the tools still fails, so the current tools stay (revision {}): {reason}",
                self.live.revision()
            ),
            Err(reason) => {
                tracing::warn!(
                    "reloading the tools failed, so the current tools stay (revision {}): {reason}",
                    self.live.revision()
                );
                self.failing = Some(reason);
            }
        }
    }

    async fn try_reload(&mut self) -> Result<Option<(u64, String)>, ReloadFailure> {
        let config = Config::resolve(
            self.options.config_file.as_deref(),
            &|k| std::env::var(k).ok(),
            &self.options.overrides,
        )?;
        if config.roots != self.boot.roots {
            return Err(ReloadFailure::RootsChanged);
        }
        let restart_only: Vec<&str> = [
            ("agent", config.agent != self.boot.agent),
            ("store", config.store != self.boot.store),
            ("model", config.model != self.boot.model),
            ("server", config.server != self.boot.server),
            ("mcp", config.mcp != self.boot.mcp),
            ("runtime", config.runtime != self.boot.runtime),
        ]
        .into_iter()
        .filter_map(|(k, changed)| changed.then_some(k))
        .collect();
        if !restart_only.is_empty() {
            tracing::warn!(
                "[{}] changed in the configuration; only the tools are reloaded, the rest takes effect at the next start",
                restart_only.join("], [")
            );
        }
        let loaded = self.loader.load_checked(&config, None).await?;
        let lost: Vec<&str> = loaded
            .unavailable
            .iter()
            .filter(|(component, _)| self.served.available.contains(*component))
            .map(|(_, why)| why.as_str())
            .collect();
        if !lost.is_empty() {
            return Err(ReloadFailure::Lost(lost.join("; ")));
        }
        if loaded.fingerprint == self.served.fingerprint {
            // The same tools; what is said of the components that did not load may differ.
            if *self.served.catalog.get() != loaded.report {
                self.served.catalog.set(loaded.report);
            }
            return Ok(None);
        }
        let before: BTreeSet<String> = self
            .live
            .current()
            .tools()
            .map(|t| t.name.clone())
            .collect();
        let after: BTreeSet<String> = loaded.toolbox.tools().map(|t| t.name.clone()).collect();
        let summary = format!(
            "{} tool(s) (added: [{}], removed: [{}])",
            after.len(),
            after
                .difference(&before)
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
            before
                .difference(&after)
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
        );
        // The report first, then the tools: once the new tools answer calls, `GET /tools`
        // lists them.
        self.served.catalog.set(loaded.report);
        let revision = self.live.replace(loaded.toolbox);
        self.served.fingerprint = loaded.fingerprint;
        self.served.available = loaded.available;
        self.relevant = Relevant::of(&config, self.options.config_file.as_deref());
        Ok(Some((revision, summary)))
    }
}

/// Why a reload failed, so the current tools stay.
#[derive(Debug, thiserror::Error)]
enum ReloadFailure {
    /// The configuration does not resolve.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// `[roots]` changed, which only a start reads.
    #[error("the roots changed, and roots are read at start only: restart Sluice to change them")]
    RootsChanged,
    /// The tools do not load.
    #[error(transparent)]
    Load(#[from] WiringError),
    /// Components that serve tools now would not: why each, `; `-separated.
    #[error("{0}")]
    Lost(String),
}

#[cfg(test)]
mod tests {
    use notify::event::{CreateKind, DataChange, MetadataKind, RemoveKind, RenameMode};

    use super::*;

    /// What inotify reports for a `touch`, a `cat`, a copy, a rename and a `rm`: only the
    /// events that can change a file's bytes start a reload.
    #[test]
    fn only_changes_of_content_count() {
        let counts = [
            (EventKind::Access(AccessKind::Open(AccessMode::Any)), false),
            (
                EventKind::Access(AccessKind::Close(AccessMode::Read)),
                false,
            ),
            (EventKind::Access(AccessKind::Read), false),
            (
                EventKind::Modify(ModifyKind::Metadata(MetadataKind::Any)),
                false,
            ),
            (EventKind::Any, false),
            (EventKind::Other, false),
            (
                EventKind::Access(AccessKind::Close(AccessMode::Write)),
                true,
            ),
            (EventKind::Create(CreateKind::File), true),
            (EventKind::Modify(ModifyKind::Data(DataChange::Any)), true),
            (EventKind::Modify(ModifyKind::Name(RenameMode::To)), true),
            (EventKind::Remove(RemoveKind::File), true),
        ];
        for (kind, expected) in counts {
            assert_eq!(is_content_change(&kind), expected, "{kind:?}");
        }
    }
}
