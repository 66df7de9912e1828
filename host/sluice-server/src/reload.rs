//! Live reload of the tools for `sluice serve` and `sluice mcp`: adding, replacing or
//! removing `tools/*.wasm` (and their `*.toml` policies), or changing the components of
//! `sluice.toml`, takes effect for the calls that start afterwards, without a restart.
//!
//! How: the directories that hold the configuration file, the tools directory and the
//! configured component files are watched with `notify` (inotify on Linux: no polling, no
//! cost while nothing changes), debounced by [`DEBOUNCE`] so that a file still being
//! written is read once it is done. Each batch of changes resolves the configuration again
//! and loads a whole new [`Toolbox`](sluice_runtime::Toolbox) through the same
//! [`ToolLoader`] as at start (the same engine, the same fetch and verification of `oci://`
//! components, the same compile and import checks), then swaps it in atomically
//! ([`LiveToolbox::replace`]). Calls in flight keep the toolbox they started with. A
//! replacement that fails any check changes nothing: the current tools stay, and the
//! reason is logged (at `warn`). Without `strict`, a component that fails to load does not
//! stop a start (it is listed as unavailable); a reload is stricter about the components
//! that are serving: when one of them would become unavailable, the whole reload is
//! refused, so a broken replacement never takes a working component away. A component that
//! was unavailable already, or a new one, may fail as at start: the reload goes on without
//! it.
//!
//! Only the tools are reloaded. `roots` cannot change this way (a reload that changes them
//! is refused, as `PUT /agent/config` refuses them); a change to any other key is logged
//! as taking effect at the next start.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use notify_debouncer_mini::notify::RecursiveMode;
use notify_debouncer_mini::{DebounceEventResult, Debouncer, new_debouncer};
use sluice_config::{Config, Overrides, ToolSource};
use sluice_runtime::LiveToolbox;
use tokio::sync::mpsc;

use sluice_wiring::{Loaded, ToolLoader, WiringError};

/// How long a burst of file events is gathered before a reload (ms-scale: a copy of a
/// component is many writes).
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
    _debouncer: Debouncer<notify_debouncer_mini::notify::RecommendedWatcher>,
    task: tokio::task::JoinHandle<()>,
    watched: Vec<PathBuf>,
}

impl std::fmt::Debug for Reloader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reloader")
            .field("watched", &self.watched)
            .finish_non_exhaustive()
    }
}

impl Reloader {
    /// The directories watched.
    pub fn watched(&self) -> &[PathBuf] {
        &self.watched
    }
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
    let (tx, rx) = mpsc::unbounded_channel::<Vec<PathBuf>>();
    let mut debouncer = new_debouncer(DEBOUNCE, move |result: DebounceEventResult| match result {
        Ok(events) => {
            let _ = tx.send(events.into_iter().map(|e| e.path).collect());
        }
        Err(e) => tracing::warn!("watching the tools for changes: {e}"),
    })
    .map_err(|e| ReloadError::Watch {
        path: PathBuf::new(),
        reason: e.to_string(),
    })?;
    for dir in &relevant.dirs {
        debouncer
            .watcher()
            .watch(dir, RecursiveMode::NonRecursive)
            .map_err(|e| ReloadError::Watch {
                path: dir.clone(),
                reason: e.to_string(),
            })?;
    }
    let watched: Vec<PathBuf> = relevant.dirs.iter().cloned().collect();
    tracing::info!(dirs = ?watched, "watching the tools for changes");
    let state = State {
        boot,
        options,
        loader,
        live,
        served: loaded,
        relevant,
    };
    let task = tokio::spawn(state.run(rx));
    Ok(Reloader {
        _debouncer: debouncer,
        task,
        watched,
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
}

impl Served {
    /// What `loaded` serves.
    pub fn of(loaded: &Loaded) -> Served {
        Served {
            fingerprint: loaded.fingerprint.clone(),
            available: loaded.available.clone(),
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
}

impl State {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Vec<PathBuf>>) {
        while let Some(mut paths) = rx.recv().await {
            while let Ok(more) = rx.try_recv() {
                paths.extend(more);
            }
            let changed: BTreeSet<&PathBuf> =
                paths.iter().filter(|p| self.relevant.matters(p)).collect();
            if changed.is_empty() {
                continue;
            }
            tracing::debug!(?changed, "the tools' files changed");
            self.reload().await;
        }
    }

    /// One reload: resolve, load, swap; or log why not and keep the current tools.
    async fn reload(&mut self) {
        let started = Instant::now();
        match self.try_reload().await {
            Ok(Some((revision, summary))) => tracing::info!(
                "reloaded the tools (revision {revision}, {} ms): {summary}",
                started.elapsed().as_millis()
            ),
            Ok(None) => tracing::debug!("the tools' files changed, but not the tools"),
            Err(reason) => tracing::warn!(
                "reloading the tools failed, so the current tools stay (revision {}): {reason}",
                self.live.revision()
            ),
        }
    }

    async fn try_reload(&mut self) -> Result<Option<(u64, String)>, String> {
        let config = Config::resolve(
            self.options.config_file.as_deref(),
            &|k| std::env::var(k).ok(),
            &self.options.overrides,
        )
        .map_err(|e| e.to_string())?;
        if config.roots != self.boot.roots {
            return Err("the roots changed, and roots are read at start only: restart Sluice to change them".into());
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
        let loaded = self
            .loader
            .load_checked(&config, None)
            .await
            .map_err(|e: WiringError| e.to_string())?;
        let lost: Vec<&str> = loaded
            .unavailable
            .iter()
            .filter(|(component, _)| self.served.available.contains(*component))
            .map(|(_, why)| why.as_str())
            .collect();
        if !lost.is_empty() {
            return Err(lost.join("; "));
        }
        if loaded.fingerprint == self.served.fingerprint {
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
        let served = Served::of(&loaded);
        let revision = self.live.replace(loaded.toolbox);
        self.served = served;
        self.relevant = Relevant::of(&config, self.options.config_file.as_deref());
        Ok(Some((revision, summary)))
    }
}
