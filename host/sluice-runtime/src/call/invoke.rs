//! One call of a tool, as it runs on a pool thread: a fresh [`Store`] (preopens, limits,
//! deadline), the instance, the export, and the draft observation of what came back.
//!
//! A call ends at its deadline or when it is cancelled, whatever the guest waits on: while
//! guest code runs, the epoch callback (every [`EPOCH_TICK_MS`](crate::engine::EPOCH_TICK_MS) ms) checks both and stops it;
//! while the guest waits inside the host (a sleep, a `poll`, a `block`), the call's future
//! is dropped, which drops the store.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wasmtime::component::types::Type;
use wasmtime::component::{ComponentExportIndex, InstancePre, ResourceTable, Val};
use wasmtime::{Store, UpdateDeadline};
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi_http::WasiHttpCtx;

use crate::call::facts::CallFacts;
use crate::call::failure::{Failure, explain};
use crate::call::observation::{Draft, Observation, says_more_follows};
use crate::call::value::{to_json, write_json_marking};
use crate::host::http::HttpHooks;
use crate::host::preopens::{ALLOW_BLOCKING_CURRENT_THREAD, PreopenError};
use crate::host::state::ToolCaller;
use crate::host::state::{CallBudget, CallState, MemoryLimiter};
use crate::host::stderr::{STDERR_BYTES, StderrTail};
use crate::limits::Interrupt;
use crate::limits::{MAX_LIFT_BYTES, MAX_RANDOM_BYTES, MAX_RESOURCES};
use crate::policy::{HttpGrant, ToolPolicy};

/// What one call needs, moved to its pool thread.
pub(crate) struct Call {
    pub(crate) pre: InstancePre<CallState>,
    pub(crate) policy: Arc<ToolPolicy>,
    /// The component's roots, opened when it was loaded.
    pub(crate) preopens: Arc<crate::host::preopens::Preopens>,
    /// The policy's `wasi:http` grant, shared by the tool's calls.
    pub(crate) http: Arc<HttpGrant>,
    pub(crate) key_names: Arc<sluice_keys::KeyNames>,
    pub(crate) config: Arc<crate::host::config_store::ComponentConfig>,
    /// The files none of the call's opens reaches.
    pub(crate) refused: Arc<crate::host::refused::RefusedFiles>,
    /// The component's `sluice:tools/key-carries`.
    pub(crate) key_carries: Arc<crate::host::key_carries::KeyCarries>,
    pub(crate) export: ComponentExportIndex,
    pub(crate) result: Option<Type>,
    pub(crate) params: Vec<Val>,
    /// The cap, in bytes.
    pub(crate) cap: u32,
    /// The string fields of its result shown as the JSON they hold (`@json`).
    pub(crate) json_fields: Vec<String>,
    /// What answers its `sluice:tools/tool-calls` (`run_script`'s calls), if anything.
    pub(crate) tool_caller: Option<Box<dyn ToolCaller>>,
}

impl Call {
    /// Runs the call until it returns, its timeout passes or `cancel` fires; returns its
    /// draft observation and what it cost (all but `queue_wait_us` and `digest`, which the
    /// caller knows).
    pub(crate) async fn run(mut self, cancel: CancellationToken) -> (Draft, CallFacts) {
        if cancel.is_cancelled() {
            return (failed(Failure::cancelled()), CallFacts::default());
        }
        let started = Instant::now();
        let deadline = started + self.policy.timeout;
        let tool_caller = self.tool_caller.take();
        let mut store = match self.store(deadline, &cancel, tool_caller) {
            Ok(s) => s,
            Err(e) => {
                return (
                    Observation::error(&e.to_string(), Some("io")),
                    CallFacts::default(),
                );
            }
        };
        let mut results = vec![Val::Bool(false); usize::from(self.result.is_some())];
        let (pre, export, params) = (&self.pre, self.export, &self.params);
        let outcome = {
            let store = &mut store;
            let results = &mut results;
            let call = async move {
                let instance = pre.instantiate_async(&mut *store).await?;
                let func = instance
                    .get_func(&mut *store, export)
                    .ok_or_else(|| wasmtime::Error::msg("the export is not a function"))?;
                func.call_async(&mut *store, params, results).await
            };
            tokio::select! {
                biased;
                () = cancel.cancelled() => Err(Interrupt::Cancelled),
                () = tokio::time::sleep_until(deadline.into()) => Err(Interrupt::Timeout),
                r = call => Ok(r),
            }
        };
        let (draft, outcome) = match outcome {
            Err(Interrupt::Timeout) => (failed(Failure::timeout(&self.policy)), "timeout"),
            Err(Interrupt::Cancelled) => (failed(Failure::cancelled()), "cancelled"),
            // A refused request ends the call with the host's reason, whatever the guest
            // made of its `wasi:http` error.
            _ if store.data().http.log().refusal().is_some() => {
                let log = store.data().http.log();
                let (message, kind) = log.refusal().cloned().unwrap_or_default();
                (Observation::error(&message, Some(kind)), kind)
            }
            Ok(Ok(())) => (
                lift_result(results.first(), self.result.as_ref(), &self.json_fields),
                "returned",
            ),
            Ok(Err(e)) => {
                let failure = explain(&e, store.data_mut(), &self.policy);
                // The outcome names the limit a call passed (`resource-limit`, …).
                let kind = failure.kind;
                (failed(failure), kind)
            }
        };
        let facts = self.facts(&store, started, outcome);
        (draft, facts)
    }

    /// What the call cost: how it ended (`returned`, `timeout`, `cancelled`, or the kind of
    /// its failure: `resource-limit`, `trap`, …), its time, peak memory and descriptors,
    /// and its HTTP requests (`METHOD host:port STATUS BYTES`, see [`crate::host::http`],
    /// the component's secrets withheld from them: the guest chose each request's method
    /// and authority), each counted in `sluice_http_requests_total`.
    fn facts(&self, store: &Store<CallState>, started: Instant, outcome: &str) -> CallFacts {
        let state = store.data();
        let log = state.http.log();
        let (requests, denied, credentials) = log.counts();
        for (host, denied) in log.egress() {
            let decision = if denied { "denied" } else { "allowed" };
            let (host, _) = self.config.secrets.withhold(host);
            metrics::counter!("sluice_http_requests_total", "host" => host, "decision" => decision)
                .increment(1);
        }
        let http_summary = if log.is_empty() {
            String::new()
        } else {
            self.config.secrets.withhold(&log.summary()).0
        };
        CallFacts {
            outcome: outcome.to_string(),
            queue_wait_us: 0,
            guest_us: started.elapsed().as_micros() as u64,
            peak_memory_bytes: state.limiter.peak_bytes as u64,
            peak_descriptors: state.peak_descriptors as u32,
            http_requests: requests as u32,
            http_denied: denied as u32,
            http_credentials: credentials as u32,
            digest: String::new(),
            http_summary,
        }
    }

    /// A fresh store for the call: preopens, limits, deadline, lift bound.
    fn store(
        &self,
        deadline: Instant,
        cancel: &CancellationToken,
        tool_caller: Option<Box<dyn ToolCaller>>,
    ) -> Result<Store<CallState>, PreopenError> {
        let policy = &self.policy;
        let mut wasi = WasiCtxBuilder::new();
        wasi.allow_blocking_current_thread(ALLOW_BLOCKING_CURRENT_THREAD);
        wasi.max_random_size(MAX_RANDOM_BYTES);
        for (k, v) in &policy.env {
            wasi.env(k, v);
        }
        let stderr = StderrTail::new(STDERR_BYTES);
        wasi.stderr(stderr.clone());
        if tool_caller.is_some() {
            // A script sees no wall clock: it reads the Unix epoch (docs/code-mode.md).
            wasi.wall_clock(EpochWallClock);
        }
        let mut wasi = wasi.build();
        *wasi.filesystem() = self.preopens.filesystem()?;
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_RESOURCES);
        let state = CallState {
            wasi,
            table,
            limiter: MemoryLimiter::new(policy.memory_bytes),
            budget: CallBudget::new(self.cap, policy.timeout, self.key_names.clone()),
            stderr,
            descriptors: Vec::new(),
            peak_descriptors: 0,
            http_ctx: WasiHttpCtx::new(),
            http: HttpHooks::new(
                self.http.clone(),
                policy.http_recordings.clone(),
                self.config.credentials.clone(),
                deadline,
            ),
            config: self.config.clone(),
            refused: self.refused.clone(),
            key_carries: self.key_carries.clone(),
            read_ahead: None,
            tool_caller,
        };
        let mut store = Store::new(self.pre.engine(), state);
        store.limiter(|s| &mut s.limiter);
        // Checked at every epoch tick while guest code runs.
        let cancel = cancel.clone();
        store.epoch_deadline_callback(move |_| {
            if cancel.is_cancelled() {
                Err(Interrupt::Cancelled.into())
            } else if Instant::now() >= deadline {
                Err(Interrupt::Timeout.into())
            } else {
                Ok(UpdateDeadline::Continue(1))
            }
        });
        store.set_epoch_deadline(1);
        store.set_hostcall_fuel(MAX_LIFT_BYTES);
        Ok(store)
    }
}

/// The draft of a failed call.
fn failed(failure: Failure) -> Draft {
    if failure.kind == "cancelled" {
        Observation::cancelled(&failure.message)
    } else {
        Observation::error(&failure.message, Some(failure.kind))
    }
}

/// Turns what the guest returned into an observation draft: `result<T, E>` becomes ok or
/// error, anything else is the result. A result is written straight to the observation's
/// JSON text ([`write_json`]).
fn lift_result(val: Option<&Val>, ty: Option<&Type>, json_fields: &[String]) -> Draft {
    let success = |v: &Val, t: &Type| {
        Observation::success_written(
            |out| write_json_marking(v, t, json_fields, out),
            is_paged(v),
        )
    };
    match (val, ty) {
        (Some(Val::Result(Ok(v))), Some(Type::Result(r))) => match (v, r.ok()) {
            (Some(v), Some(t)) => success(v, &t),
            _ => Observation::success(&Value::Null),
        },
        (Some(Val::Result(Err(e))), Some(Type::Result(r))) => {
            let (message, kind) = match (e, r.err()) {
                (Some(e), Some(t)) => error_message(e, &t),
                _ => (
                    "the tool reported an error without a message".to_string(),
                    None,
                ),
            };
            Observation::error(&message, kind.as_deref())
        }
        (Some(v), Some(t)) => success(v, t),
        _ => Observation::success(&Value::Null),
    }
}

/// Whether a result says more can be had ([`says_more_follows`] over the fields its JSON
/// shows: an absent option is left out of the JSON, so it says nothing).
fn is_paged(val: &Val) -> bool {
    let Val::Record(fields) = val else {
        return false;
    };
    fields.iter().any(|(name, v)| {
        let v = match v {
            Val::Option(None) => return false,
            Val::Option(Some(v)) => v.as_ref(),
            v => v,
        };
        says_more_follows(
            &crate::component::schema::json_name(name),
            matches!(v, Val::Bool(true)),
        )
    })
}

/// The message and kind of a tool's error value: a string is the message; a variant case
/// carrying a string is that string with the case as kind; an enum case is both; a record
/// with a `message` string field is that message (and its `kind` string field, if any);
/// anything else is its compact JSON.
fn error_message(val: &Val, ty: &Type) -> (String, Option<String>) {
    match val {
        Val::String(s) => (s.clone(), None),
        Val::Variant(case, Some(payload)) => match payload.as_ref() {
            Val::String(s) => (s.clone(), Some(case.clone())),
            other => {
                let payload_ty = match ty {
                    Type::Variant(v) => v.cases().find(|c| c.name == case).and_then(|c| c.ty),
                    _ => None,
                };
                let text =
                    payload_ty.map_or_else(|| case.clone(), |t| to_json(other, &t).to_string());
                (text, Some(case.clone()))
            }
        },
        Val::Variant(case, None) | Val::Enum(case) => (case.clone(), Some(case.clone())),
        Val::Record(fields) => {
            let text = |name: &str| {
                fields.iter().find_map(|(n, v)| match v {
                    Val::String(s) if n == name => Some(s.clone()),
                    _ => None,
                })
            };
            match text("message") {
                Some(m) => (m, text("kind")),
                None => (to_json(val, ty).to_string(), None),
            }
        }
        other => (to_json(other, ty).to_string(), None),
    }
}

/// The wall clock of a component that calls tools (`run_script`): always the Unix epoch, so a
/// script cannot tell the time (its timeout runs on the host's clock, and the monotonic clock
/// is the usual one).
struct EpochWallClock;

impl wasmtime_wasi::HostWallClock for EpochWallClock {
    fn resolution(&self) -> std::time::Duration {
        std::time::Duration::from_secs(1)
    }

    fn now(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }
}
