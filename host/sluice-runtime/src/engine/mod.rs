//! The wasmtime engine every tool runs on: epoch interruption with a ticker thread, the
//! pooling allocator (with a fallback to on-demand allocation), the on-disk cache of
//! compiled components ([`cache`]) and the compiles that run in the background
//! (`compile_pool`); for a server or an author's loop, a second engine with wasmtime's
//! baseline compiler (Winch), whose code serves a component's first calls while Cranelift's
//! compiles, or instead of it ([`Compilers`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use wasmtime::component::Component;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Strategy};

use crate::engine::cache::{CompiledCache, Lookup};
use crate::engine::compile_pool::{CompilePool, Tier};
use crate::error::{LoadFailure, RuntimeError};
use crate::pool::{CallPool, PoolOptions};

pub mod cache;
mod compile_pool;
pub mod progress;

pub use cache::{CacheRefused, CacheUsage, DEFAULT_MAX_CACHE_BYTES, Pruned};

/// How often the ticker thread advances the engine's epoch, in ms. A call's deadline is
/// counted in these ticks, so a timeout overshoots by at most one tick.
pub const EPOCH_TICK_MS: u64 = 10;

/// The largest linear memory any tool may be granted, in bytes (4 GiB, the wasm32 limit).
/// Each tool's own limit (its policy) is enforced per call below this.
pub const MAX_TOOL_MEMORY_BYTES: u64 = 4 << 30;

/// Component instances the pooling allocator keeps slots for, at least: more than the calls
/// that can run at once by default. With a larger `max_concurrent_calls` it keeps that many
/// plus its `max_stuck_threads` (calls left blocked in a system call hold their instance).
pub const POOLED_INSTANCES: u32 = 128;

/// A compile in flight, as the engine holds it: weakly, and of a type the engine does not
/// know.
type InFlight = std::sync::Weak<dyn std::any::Any + Send + Sync>;

/// Which of wasmtime's compilers compile a component the cache does not hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compilers {
    /// Cranelift only: optimized code, cached for the next start (one-shot commands and
    /// strict servers). The default.
    #[default]
    Optimizing,
    /// Winch first (about four times faster to compile, slower code), so a component's
    /// tools answer within seconds of a cold start; then Cranelift in the background, whose
    /// code the calls that start after it run and which alone is cached. For long-running
    /// servers (`serve`, `mcp`; `runtime.baseline_compiler`): a one-shot command would exit
    /// before the swap.
    BaselineFirst,
    /// Winch only, nothing cached: the tool author's loop (`sluice test`, `sluice dev`),
    /// where every build is a new component that a few calls try.
    BaselineOnly,
}

/// Options for [`ToolEngine::new`].
#[derive(Clone, Debug, Default)]
pub struct EngineOptions {
    /// Where compiled components are cached (`None`: no cache, every start compiles). The
    /// directory must be private to this user ([`cache`]); one that is not is not used.
    pub cache_dir: Option<PathBuf>,
    /// The most bytes of compiled components the cache keeps (`None`:
    /// [`DEFAULT_MAX_CACHE_BYTES`]).
    pub cache_max_bytes: Option<u64>,
    /// Never use the pooling allocator (it reserves a lot of virtual address space).
    pub on_demand_allocation: bool,
    /// Compiles that run at once in the background (`None`: one per core).
    pub compile_threads: Option<usize>,
    /// The call pool: calls at once (`runtime.max_concurrent_calls`) and the wait for a
    /// slot (`runtime.queue_timeout_ms`).
    pub pool: PoolOptions,
    /// Write `/tmp/perf-<pid>.map` for the code wasmtime compiles, so `perf report` names
    /// guest functions (for profiling; default false).
    pub perf_map: bool,
    /// The compilers of a component the cache does not hold (default
    /// [`Compilers::Optimizing`]). Where Winch cannot build an engine (a target it does not
    /// support), Cranelift alone compiles, with a warning.
    pub compilers: Compilers,
}

/// A wasmtime [`Engine`] set up for tools, and the thread that ticks its epoch.
///
/// Dropping it stops the ticker.
pub struct ToolEngine {
    engine: Engine,
    /// The baseline compiler's engine (on-demand allocation), unless the compilers are
    /// [`Compilers::Optimizing`].
    baseline: Option<Engine>,
    /// The compilers, as used: [`Compilers::Optimizing`] when there is no baseline engine.
    compilers: Compilers,
    cache: Option<CompiledCache>,
    /// The components of this engine's toolboxes, by the SHA-256 of their bytes, for as long
    /// as some toolbox holds them: a reload of an unchanged component, or a second toolbox
    /// over it, shares its code instead of mapping another copy; a component no toolbox
    /// holds any more is freed.
    in_use: std::sync::Mutex<std::collections::HashMap<String, std::sync::Weak<Component>>>,
    /// What waits for the background compiles in flight, by the SHA-256 of the component:
    /// a load of a component already compiling waits for that compile instead of starting
    /// another. Opaque here (the call wing's slot, `crate::call`).
    in_flight: std::sync::Mutex<std::collections::HashMap<String, InFlight>>,
    /// Compiles started by [`ToolEngine::compile_in_background`].
    compiles: CompilePool,
    pooling: bool,
    /// Components loaded from the cache / compiled, since the engine started.
    cache_hits: std::sync::atomic::AtomicUsize,
    compiled: std::sync::atomic::AtomicUsize,
    /// Components compiled by the baseline compiler, since the engine started.
    baseline_compiled: std::sync::atomic::AtomicUsize,
    /// The threads calls run on.
    pool: CallPool,
    /// Kept for its `Drop`, which stops the thread.
    _ticker: Ticker,
}

impl std::fmt::Debug for ToolEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolEngine")
            .field("cache", &self.cache)
            .field("pooling", &self.pooling)
            .field("pool", &self.pool)
            .finish_non_exhaustive()
    }
}

impl ToolEngine {
    /// Builds the engine. Tries the pooling allocator first (it halves instantiation time)
    /// and falls back to on-demand allocation when the address space for its slots cannot be
    /// reserved.
    ///
    /// # Errors
    /// [`RuntimeError::Engine`] when no engine can be built at all.
    pub fn new(options: EngineOptions) -> Result<Self, RuntimeError> {
        let pooled = if options.on_demand_allocation {
            None
        } else {
            match Engine::new(&config(Some(&options.pool), options.perf_map)) {
                Ok(engine) => Some(engine),
                Err(e) => {
                    tracing::warn!(error = %e, "pooling allocator unavailable; using on-demand allocation");
                    None
                }
            }
        };
        let pooling = pooled.is_some();
        let engine = match pooled {
            Some(engine) => engine,
            None => Engine::new(&config(None, options.perf_map))
                .map_err(|e| RuntimeError::Engine(e.to_string()))?,
        };
        let baseline = (options.compilers != Compilers::Optimizing)
            .then(|| baseline_engine(options.perf_map))
            .flatten();
        let compilers = match baseline {
            Some(_) => options.compilers,
            None => Compilers::Optimizing,
        };
        let ticked = std::iter::once(engine.clone()).chain(baseline.clone());
        let ticker = Ticker::start(ticked.collect()).map_err(|e| {
            RuntimeError::Engine(format!("could not start the epoch ticker thread: {e}"))
        })?;
        let cache = options.cache_dir.and_then(|dir| {
            let max = options.cache_max_bytes.unwrap_or(DEFAULT_MAX_CACHE_BYTES);
            CompiledCache::open(dir, &engine, max)
                .inspect_err(|e| tracing::warn!("{e}"))
                .ok()
        });
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Ok(ToolEngine {
            engine,
            baseline,
            compilers,
            cache,
            in_use: Default::default(),
            in_flight: Default::default(),
            compiles: CompilePool::new(options.compile_threads.unwrap_or(cores)),
            pooling,
            cache_hits: Default::default(),
            compiled: Default::default(),
            baseline_compiled: Default::default(),
            pool: CallPool::new(options.pool),
            _ticker: ticker,
        })
    }

    /// The wasmtime engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The threads tool calls run on.
    pub fn pool(&self) -> &CallPool {
        &self.pool
    }

    /// True when instances come from the pooling allocator.
    pub fn pooling(&self) -> bool {
        self.pooling
    }

    /// How many components were loaded from the cache and how many were compiled (by
    /// Cranelift), since this engine started: `(cached, compiled)`.
    pub fn compile_counts(&self) -> (usize, usize) {
        (
            self.cache_hits.load(Ordering::Relaxed),
            self.compiled.load(Ordering::Relaxed),
        )
    }

    /// How many components the baseline compiler compiled since this engine started (0
    /// with [`Compilers::Optimizing`]).
    pub fn baseline_compiles(&self) -> usize {
        self.baseline_compiled.load(Ordering::Relaxed)
    }

    /// The compilers of a component not in the cache: [`EngineOptions::compilers`], or
    /// [`Compilers::Optimizing`] where Winch cannot build an engine.
    pub fn compilers(&self) -> Compilers {
        self.compilers
    }

    /// The baseline compiler's engine, unless the compilers are [`Compilers::Optimizing`].
    pub(crate) fn baseline_engine(&self) -> Option<&Engine> {
        self.baseline.as_ref()
    }

    /// `wasm` compiled by the baseline compiler, never cached nor shared (with
    /// [`Compilers::BaselineFirst`] its code serves only until Cranelift's is ready). `what`
    /// names it in errors and the log.
    ///
    /// # Errors
    /// [`RuntimeError::Load`] without a baseline engine, or when Winch cannot compile it.
    pub(crate) fn compile_baseline(
        &self,
        what: &str,
        wasm: &[u8],
    ) -> Result<Arc<Component>, RuntimeError> {
        let engine = self.baseline.as_ref().ok_or_else(|| RuntimeError::Load {
            what: what.to_string(),
            reason: LoadFailure::NoBaselineCompiler,
        })?;
        let component = compile_on(
            engine,
            what,
            wasm,
            (true, "winch"),
            "compiled by the baseline compiler (Winch)",
        )?;
        self.baseline_compiled.fetch_add(1, Ordering::Relaxed);
        Ok(Arc::new(component))
    }

    /// What the cache of compiled components holds (`None` without a cache, or when the
    /// directory was refused).
    pub fn cache_usage(&self) -> Option<CacheUsage> {
        self.cache.as_ref().map(CompiledCache::usage)
    }

    /// Prunes the cache of compiled components (`sluice cache prune`): removes the
    /// artifacts other engines wrote and orphan digest records, then those used longest ago
    /// until at most `max_bytes` are left (`0` empties it). `None` without a cache.
    pub fn prune_cache(&self, max_bytes: u64) -> Option<Pruned> {
        self.cache.as_ref().map(|c| c.prune(max_bytes))
    }

    /// The component whose bytes have SHA-256 `sha256`, from the cache, when this engine
    /// compiled it before and the artifact passes the cache's checks ([`cache`]); `what`
    /// names it in the log.
    pub fn cached(&self, what: &str, sha256: &str) -> Option<Arc<Component>> {
        if let Some(component) = self.in_use(sha256) {
            self.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Some(component);
        }
        match self.cache.as_ref()?.load(&self.engine, sha256) {
            Lookup::Hit(component) => {
                self.cache_hits.fetch_add(1, Ordering::Relaxed);
                Some(self.share(sha256, component))
            }
            Lookup::Miss => None,
            // Older Sluice versions wrote artifacts without records: not worth a warning.
            Lookup::Unrecorded(why) => {
                tracing::debug!(
                    component = what,
                    "recompiling: the compiled component {why}"
                );
                None
            }
            Lookup::Rejected(why) => {
                tracing::warn!(
                    component = what,
                    "recompiling: the compiled component {why}"
                );
                None
            }
        }
    }

    /// Compiles `wasm` (whose SHA-256 is `sha256`), or loads it from the cache when this
    /// engine compiled the same bytes before; a compiled component is cached. `what` names
    /// the component in errors and the log.
    ///
    /// # Errors
    /// [`RuntimeError::Load`] when the bytes are not a valid component.
    pub fn compile(
        &self,
        what: &str,
        wasm: &[u8],
        sha256: &str,
    ) -> Result<Arc<Component>, RuntimeError> {
        self.compile_shown(what, wasm, sha256, true)
    }

    /// [`ToolEngine::compile`]; with `shown` false the compile stays off the compile display
    /// ([`progress`]): Cranelift's compile of a component that already runs Winch's code,
    /// which nobody waits for.
    pub(crate) fn compile_shown(
        &self,
        what: &str,
        wasm: &[u8],
        sha256: &str,
        shown: bool,
    ) -> Result<Arc<Component>, RuntimeError> {
        if let Some(component) = self.cached(what, sha256) {
            return Ok(component);
        }
        if let Some(reason) = sluice_operator_files::not_a_component(wasm) {
            return Err(RuntimeError::Load {
                what: what.to_string(),
                reason: LoadFailure::NotAComponent(reason),
            });
        }
        let component = compile_on(&self.engine, what, wasm, (shown, "cranelift"), "compiled")?;
        self.compiled.fetch_add(1, Ordering::Relaxed);
        if let Some(cache) = &self.cache
            && let Err(e) = cache.store(sha256, &component)
        {
            tracing::warn!(dir = %cache.dir().display(), error = %e, "could not cache a compiled component");
        }
        Ok(self.share(sha256, component))
    }

    /// The component of SHA-256 `sha256` if a toolbox of this engine holds it.
    fn in_use(&self, sha256: &str) -> Option<Arc<Component>> {
        let in_use = self
            .in_use
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        in_use.get(sha256).and_then(std::sync::Weak::upgrade)
    }

    /// `component` (of SHA-256 `sha256`), shared: found again by [`ToolEngine::cached`]
    /// while anyone holds it. Forgets the components nobody holds any more.
    fn share(&self, sha256: &str, component: Component) -> Arc<Component> {
        let component = Arc::new(component);
        let mut in_use = self
            .in_use
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        in_use.retain(|_, c| c.strong_count() > 0);
        in_use.insert(sha256.to_string(), Arc::downgrade(&component));
        component
    }

    /// The slot of the compile of the component of SHA-256 `sha256` in flight, or the one
    /// `start` makes (then started with [`ToolEngine::compile_in_background`] by the
    /// caller), and whether it is new. Slots are held weakly: one nobody waits for is gone.
    pub(crate) fn compile_slot<T: Send + Sync + 'static>(
        &self,
        sha256: &str,
        start: impl FnOnce() -> Arc<T>,
    ) -> (Arc<T>, bool) {
        let mut in_flight = self
            .in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        in_flight.retain(|_, slot| slot.strong_count() > 0);
        if let Some(slot) = in_flight
            .get(sha256)
            .and_then(std::sync::Weak::upgrade)
            .and_then(|slot| slot.downcast::<T>().ok())
        {
            return (slot, false);
        }
        let slot = start();
        let erased: Arc<dyn std::any::Any + Send + Sync> = slot.clone();
        in_flight.insert(sha256.to_string(), Arc::downgrade(&erased));
        (slot, true)
    }

    /// Runs `job` (a compile) on one of the engine's compile threads, at most one per core
    /// at once, in the order submitted, before any job of
    /// [`ToolEngine::compile_after_first_tiers`].
    pub fn compile_in_background(&self, job: impl FnOnce() + Send + 'static) {
        self.compiles.submit(Tier::First, job);
    }

    /// Runs `job` (Cranelift's compile of a component that has Winch's code) on one of the
    /// engine's compile threads once no job of [`ToolEngine::compile_in_background`] waits.
    pub fn compile_after_first_tiers(&self, job: impl FnOnce() + Send + 'static) {
        self.compiles.submit(Tier::Later, job);
    }
}

/// `wasm` compiled by `engine` (`compiler`: `cranelift` or `winch`), on the compile display
/// when `shown` ([`progress`]), logged at `info` with `logged` (the message), its size and
/// the time taken, and counted in `sluice_component_compiles_total{compiler,outcome}`;
/// `what` names it.
///
/// # Errors
/// [`RuntimeError::Load`] when the engine cannot compile it.
fn compile_on(
    engine: &Engine,
    what: &str,
    wasm: &[u8],
    (shown, compiler): (bool, &'static str),
    logged: &'static str,
) -> Result<Component, RuntimeError> {
    let started = Instant::now();
    let registered = shown.then(|| progress::register(what, wasm.len()));
    let compiled = Component::new(engine, wasm);
    let outcome = if compiled.is_ok() { "ok" } else { "failed" };
    metrics::counter!("sluice_component_compiles_total", "compiler" => compiler, "outcome" => outcome)
        .increment(1);
    let component = compiled.map_err(|e| RuntimeError::Load {
        what: what.to_string(),
        reason: LoadFailure::Wasmtime(e),
    })?;
    drop(registered);
    tracing::info!(
        component = what,
        bytes = wasm.len(),
        ms = started.elapsed().as_millis() as u64,
        "{logged}"
    );
    Ok(component)
}

/// Bytes of each pooled linear memory kept resident between calls (see [`config`]).
const KEEP_RESIDENT_BYTES: usize = 2 << 20;

/// The wasmtime configuration: components, epochs, (given the call pool's sizes) pooled
/// instances, and with `perf_map` a perf map of compiled code.
fn config(pooling: Option<&PoolOptions>, perf_map: bool) -> Config {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    if perf_map {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    if let Some(calls) = pooling {
        let instances = POOLED_INSTANCES.max(
            (calls.max_concurrent_calls + calls.max_stuck_threads)
                .try_into()
                .unwrap_or(u32::MAX),
        );
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(instances)
            .total_core_instances(instances * 16)
            .max_core_instances_per_component(64)
            .total_memories(instances * 2)
            .max_memories_per_component(8)
            .total_tables(instances * 8)
            .max_tables_per_component(16)
            .max_memory_size(MAX_TOOL_MEMORY_BYTES as usize)
            .max_component_instance_size(4 << 20)
            .max_core_instance_size(4 << 20)
            // A freed slot keeps its low pages resident and is reset by writing them back
            // (only the pages the call touched, where the kernel can say which): a warm call
            // then takes no page faults and makes no `madvise` call for them.
            .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
            .table_keep_resident(64 << 10)
            .pagemap_scan(wasmtime::Enabled::Auto);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    config
}

/// The baseline compiler's engine: [`config`] with Winch and on-demand allocation (it runs
/// only a cold server's first calls), or `None`, with a warning, where Winch cannot build
/// one.
fn baseline_engine(perf_map: bool) -> Option<Engine> {
    let mut config = config(None, perf_map);
    config.strategy(Strategy::Winch);
    Engine::new(&config)
        .inspect_err(|e| {
            tracing::warn!(error = %format!("{e:#}"), "no baseline compiler (Winch) here; a cold start compiles with Cranelift only");
        })
        .ok()
}

/// The thread that advances the epoch of its engines every [`EPOCH_TICK_MS`].
struct Ticker {
    stop: Arc<AtomicBool>,
}

impl Ticker {
    /// Starts the thread. Without it no deadline would ever fire, so failing to start it is
    /// an error, not a warning.
    fn start(engines: Vec<Engine>) -> std::io::Result<Ticker> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        std::thread::Builder::new()
            .name("sluice-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(EPOCH_TICK_MS));
                    for engine in &engines {
                        engine.increment_epoch();
                    }
                }
            })?;
        Ok(Ticker { stop })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
