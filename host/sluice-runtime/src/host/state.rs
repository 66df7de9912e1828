//! What the host holds for one call (its store's data): the WASI context (preopens, env,
//! captured stderr), the memory limiter, the budget the `sluice:tools` interfaces answer
//! from, the descriptors it holds, its `wasi:http` hooks, its configuration, and what
//! answers its `sluice:tools/tool-calls` (`ToolCaller`).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::host::http::HttpHooks;

/// The WASI 0.2 release wasmtime-wasi 48 implements; guests importing any 0.2.x are served
/// by it.
pub(crate) const WASI_VERSION: &str = "0.2.12";

/// The store data of one tool call.
pub struct CallState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: MemoryLimiter,
    pub(crate) budget: CallBudget,
    /// The guest's stderr, its last 64 KiB kept for error messages.
    pub(crate) stderr: crate::host::stderr::StderrTail,
    /// The host files behind the descriptors the call opened; a descriptor is open while
    /// its file is alive (streams share it).
    pub(crate) descriptors: Vec<Weak<std::fs::File>>,
    /// The most of `descriptors` open at once during the call (its sandbox facts).
    pub(crate) peak_descriptors: usize,
    /// `wasi:http`: its context and the host's hooks (the policy's allowlist, the log).
    pub(crate) http_ctx: WasiHttpCtx,
    pub(crate) http: HttpHooks,
    /// What the component's `wasi:config/store` holds (shared by its calls).
    pub(crate) config: Arc<crate::host::config_store::ComponentConfig>,
    /// The files none of the call's opens reaches, by name and by identity
    /// ([`crate::host::refused`]).
    pub(crate) refused: Arc<crate::host::refused::RefusedFiles>,
    /// The component's `sluice:tools/key-carries` (shared by its calls).
    pub(crate) key_carries: Arc<crate::host::key_carries::KeyCarries>,
    /// The call's `sluice:tools/whole-files` read-ahead, once the tool announced files.
    pub(crate) read_ahead: Option<crate::host::whole_files::ReadAhead>,
    /// What answers `sluice:tools/tool-calls` for this call (`run_script`'s), if anything.
    pub(crate) tool_caller: Option<Box<dyn ToolCaller>>,
}

/// What answers one call's `tool-calls.call`: the caller's toolbox, under the script's
/// limits. Implemented by the call wing (`crate::call::script`).
pub(crate) trait ToolCaller: Send {
    /// Calls tool `name` with the JSON text `arguments` and returns the observation's JSON
    /// text; an error ends the calling tool (a limit it passed).
    fn call<'a>(
        &'a mut self,
        name: String,
        arguments: String,
    ) -> Pin<Box<dyn Future<Output = wasmtime::Result<String>> + Send + 'a>>;
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
    /// The largest size, in bytes, a linear memory of the call was given (at its creation
    /// or a growth): the call's peak memory in its sandbox facts.
    pub(crate) peak_bytes: usize,
}

impl MemoryLimiter {
    pub(crate) fn new(limit_bytes: u64) -> Self {
        MemoryLimiter {
            limit_bytes: usize::try_from(limit_bytes).unwrap_or(usize::MAX),
            refused: None,
            peak_bytes: 0,
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
        self.peak_bytes = self.peak_bytes.max(desired);
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
