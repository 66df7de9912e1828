//! What the host gives one call: its WASI context (preopens, env, captured stderr), its
//! memory limiter, the descriptors it holds, and the interfaces it links: WASI 0.2 (with the
//! host's own non-blocking `open-at` (the private `open_at` module), and `wasi:random` bounded by
//! [`MAX_RANDOM_BYTES`], and `wasi:http` by the policy's allowlist ([`crate::http`])) and
//! the `sluice:tools` interfaces (`budget`, `key-policy`, `listing` ([`crate::listing`])).

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use wasmtime::component::{Linker, ResourceTable};
use wasmtime::{ResourceLimiter, StoreContextMut};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::http::HttpHooks;

use crate::limits::{HostLimit, MAX_RANDOM_BYTES};

/// The WASI 0.2 release wasmtime-wasi 48 implements; guests importing any 0.2.x are served
/// by it.
pub(crate) const WASI_VERSION: &str = "0.2.12";

/// File operations run on the calling thread (a pool thread) instead of a blocking-pool hop:
/// measured 4× faster for file tools. Every descriptor a call opens is made with it.
pub(crate) const ALLOW_BLOCKING_CURRENT_THREAD: bool = true;

/// The store data of one tool call.
pub struct CallState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: MemoryLimiter,
    pub(crate) budget: CallBudget,
    /// The guest's stderr, its last 64 KiB kept for error messages.
    pub(crate) stderr: crate::stderr::StderrTail,
    /// The host files behind the descriptors the call opened; a descriptor is open while
    /// its file is alive (streams share it).
    pub(crate) descriptors: Vec<Weak<std::fs::File>>,
    /// `wasi:http`: its context and the host's hooks (the policy's allowlist, the log).
    pub(crate) http_ctx: WasiHttpCtx,
    pub(crate) http: HttpHooks,
    /// What the component's `wasi:config/store` holds (shared by its calls).
    pub(crate) config: Arc<crate::secrets::ComponentConfig>,
    /// The files none of the call's opens reaches, by name and by identity
    /// ([`crate::refused`]).
    pub(crate) refused: Arc<crate::refused::RefusedFiles>,
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http_ctx,
            table: &mut self.table,
            hooks: &mut self.http,
        }
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// What `sluice:tools/budget` and `key-policy` answer during one call.
#[derive(Clone, Debug)]
pub(crate) struct CallBudget {
    /// `agent.max_tool_result_bytes`, in bytes.
    pub(crate) max_result_bytes: u32,
    /// When the search time budget (80% of the timeout) runs out.
    pub(crate) search_until: Instant,
    /// When the call's timeout runs out. Host work that could outlast it (reading a huge
    /// directory for `sluice:tools/listing`) stops there, so that the call ends with its
    /// `timeout` instead of holding its thread past the deadline.
    pub(crate) deadline: Instant,
    /// Names refused as key material.
    pub(crate) key_names: Arc<sluice_keys::KeyNames>,
}

impl CallBudget {
    /// The budget of a call with cap `max_result_bytes` and timeout `timeout` starting now.
    pub(crate) fn new(
        max_result_bytes: u32,
        timeout: Duration,
        key_names: Arc<sluice_keys::KeyNames>,
    ) -> Self {
        let now = Instant::now();
        CallBudget {
            max_result_bytes,
            search_until: now + timeout.mul_f64(SEARCH_SHARE_OF_TIMEOUT),
            deadline: now + timeout,
            key_names,
        }
    }
}

/// The share of a tool's timeout a search may use before it returns what it has: 80%
/// (docs/paging.md#grep_files-the-time-budget).
pub const SEARCH_SHARE_OF_TIMEOUT: f64 = 0.8;

/// A per-call memory limit that remembers when it refused growth, so that the error can
/// name the limit (a guest's own message after a refused `memory.grow` is often misleading).
pub(crate) struct MemoryLimiter {
    /// The limit, in bytes.
    pub(crate) limit_bytes: usize,
    /// The size the guest asked for when it was refused.
    pub(crate) refused: Option<usize>,
}

impl MemoryLimiter {
    pub(crate) fn new(limit_bytes: u64) -> Self {
        MemoryLimiter {
            limit_bytes: usize::try_from(limit_bytes).unwrap_or(usize::MAX),
            refused: None,
        }
    }
}

/// Most table elements one instance may have (tables hold function references; real tools
/// use a few thousand).
const MAX_TABLE_ELEMENTS: usize = 1 << 20;

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.limit_bytes {
            self.refused = Some(desired);
            // Trap rather than return -1: the guest stops here, and the error names the limit.
            return Err(wasmtime::Error::msg(format!(
                "memory limit of {} bytes reached (asked for {desired} bytes)",
                self.limit_bytes
            )));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}

/// Adds WASI 0.2 (`wasi:http` included, sent by [`HttpHooks`]), `wasi:config/store` and the
/// `sluice:tools` host interfaces to `linker`.
///
/// # Errors
/// wasmtime's error when an interface is defined twice.
pub(crate) fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_async(linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)?;
    wasmtime_wasi_config::add_to_linker(linker, |s: &mut CallState| {
        wasmtime_wasi_config::WasiConfig::from(&s.config.vars)
    })?;
    crate::open_at::shadow(linker)?;
    crate::http_open::shadow(linker)?;
    shadow_random(linker)?;
    crate::bindings::add_to_linker(linker)?;
    Ok(())
}

/// `sluice:tools/budget`: the call's cap, page budget and search time left.
impl crate::bindings::budget::Host for CallState {
    fn max_result_bytes(&mut self) -> u32 {
        self.budget.max_result_bytes
    }

    fn page_bytes(&mut self, path: String) -> u32 {
        sluice_pager::budget::page_bytes(self.budget.max_result_bytes, &path)
            .map_or(0, |p| p as u32)
    }

    fn time_budget_ms(&mut self) -> u32 {
        let left = self
            .budget
            .search_until
            .saturating_duration_since(Instant::now());
        u32::try_from(left.as_millis()).unwrap_or(u32::MAX)
    }
}

/// `sluice:tools/key-policy`: the component's key-material name patterns, and the names of
/// the files it may not read ([`crate::refused`]).
impl crate::bindings::key_policy::Host for CallState {
    fn is_key_name(&mut self, name: String, directory: bool) -> bool {
        use sluice_keys::KeyNamePolicy;
        let names = &self.budget.key_names;
        if directory {
            names.is_key_dir(&name)
        } else {
            // A secret's or key's source the configuration names is refused as a key file.
            names.is_key_file(&name) || self.refused.is_refused_name(&name)
        }
    }
}

/// Replaces `get-random-bytes` and `get-insecure-random-bytes` of `wasi:random` with
/// wasmtime-wasi's own, behind a check of [`MAX_RANDOM_BYTES`] that stops the call with
/// [`HostLimit::RandomBytes`] (wasmtime-wasi's own limit, 64 MiB, traps with an error of
/// no type).
fn shadow_random(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    use wasmtime_wasi::p2::bindings::random::{insecure, random};
    fn check(len: u64) -> wasmtime::Result<()> {
        if len > MAX_RANDOM_BYTES {
            return Err(HostLimit::RandomBytes { asked: len }.into());
        }
        Ok(())
    }
    linker.allow_shadowing(true);
    linker
        .instance(&format!("wasi:random/random@{WASI_VERSION}"))?
        .func_wrap(
            "get-random-bytes",
            |mut store: StoreContextMut<'_, CallState>, (len,): (u64,)| {
                check(len)?;
                Ok((random::Host::get_random_bytes(
                    store.data_mut().wasi.random(),
                    len,
                )?,))
            },
        )?;
    linker
        .instance(&format!("wasi:random/insecure@{WASI_VERSION}"))?
        .func_wrap(
            "get-insecure-random-bytes",
            |mut store: StoreContextMut<'_, CallState>, (len,): (u64,)| {
                check(len)?;
                Ok((insecure::Host::get_insecure_random_bytes(
                    store.data_mut().wasi.random(),
                    len,
                )?,))
            },
        )?;
    linker.allow_shadowing(false);
    Ok(())
}
