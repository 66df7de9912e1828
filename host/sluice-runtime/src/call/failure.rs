//! What a failed call tells the model: which limit it hit, or what went wrong, with a
//! documented kind (`docs/observations.md#error-kinds`). A guest failure is never shown as
//! wasmtime's backtrace header or as an operating-system error number.

use wasmtime::component::ResourceTable;
use wasmtime::{Trap, WasmBacktrace};
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::p2::DynPollable;

use crate::host::state::CallState;
use crate::limits::{
    HostLimit, Interrupt, LIFT_BYTES_PER_VALUE, MAX_LIFT_BYTES, MAX_LIFT_VALUES, MAX_RESOURCES,
};
use crate::policy::ToolPolicy;
use crate::secrets::Cut;
use sluice_protocol::limits::{MAX_TOOL_MEMORY_MIB, MAX_TOOL_TIMEOUT_MS};

/// The kind and message of a failed call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Failure {
    /// What happened, and the limit if one was hit.
    pub(crate) message: String,
    /// The documented kind (`timeout`, `cancelled`, `memory-limit`, `resource-limit`,
    /// `result-too-large`, `trap`, `host-error`).
    pub(crate) kind: &'static str,
}

impl Failure {
    fn new(message: String, kind: &'static str) -> Self {
        Failure { message, kind }
    }

    /// The call ran past its timeout: names it in ms and the policy key that raises it, with
    /// its range.
    pub(crate) fn timeout(policy: &ToolPolicy) -> Self {
        Failure::new(
            format!(
                "the tool ran past its timeout of {} ms and was stopped; raise {} (1 to {MAX_TOOL_TIMEOUT_MS} ms) if it needs longer",
                policy.timeout.as_millis(),
                key_at(policy, "timeout_ms")
            ),
            "timeout",
        )
    }

    /// The guest asked for `asked` bytes of linear memory past its limit of `limit` bytes:
    /// names both in MiB and the policy key that raises the limit, with its range.
    pub(crate) fn memory(limit: usize, asked: usize, policy: &ToolPolicy) -> Self {
        let key = key_at(policy, "memory_mib");
        Failure::new(
            format!(
                "the tool hit its memory limit of {} MiB (it asked for {} MiB) and was stopped; raise {key} (1 to {MAX_TOOL_MEMORY_MIB} MiB) if it needs more",
                limit >> 20,
                asked.div_ceil(1 << 20)
            ),
            "memory-limit",
        )
    }

    /// The call was cancelled while it ran.
    pub(crate) fn cancelled() -> Self {
        Failure::new(crate::pool::CANCELLED_WHILE_RUNNING.into(), "cancelled")
    }
}

/// Where policy key `key` of `policy` is set, in words (`memory_mib in its policy` when the
/// policy came from no file).
fn key_at(policy: &ToolPolicy, key: &str) -> String {
    policy
        .origin
        .as_ref()
        .map_or_else(|| format!("{key} in its policy"), |o| o.key_at(key))
}

/// Names what stopped a call that failed with `e`.
pub(crate) fn explain(e: &wasmtime::Error, state: &mut CallState, policy: &ToolPolicy) -> Failure {
    if let Some(asked) = state.limiter.refused {
        return Failure::memory(state.limiter.limit_bytes, asked, policy);
    }
    match e.downcast_ref::<Interrupt>() {
        Some(Interrupt::Timeout) => return Failure::timeout(policy),
        Some(Interrupt::Cancelled) => return Failure::cancelled(),
        None => {}
    }
    if let Some(limit) = e.downcast_ref::<HostLimit>() {
        return Failure::new(limit.to_string(), "resource-limit");
    }
    if let Some(wasmtime::component::ResourceTableError::Full) =
        e.downcast_ref::<wasmtime::component::ResourceTableError>()
    {
        return Failure::new(
            format!(
                "the tool held {MAX_RESOURCES} host resources at once ({}) and asked for another; one call may hold at most {MAX_RESOURCES} (drop what it no longer uses)",
                census(&mut state.table)
            ),
            "resource-limit",
        );
    }
    // Where it happened: a host call has the guest's frames below it; the lift of the
    // result, after the guest returned, has none.
    let in_host_call = e
        .downcast_ref::<WasmBacktrace>()
        .is_some_and(|b| !b.frames().is_empty());
    let cause = e.root_cause().to_string();
    if cause.contains("fuel allocated for hostcalls has been exhausted") {
        return if in_host_call {
            Failure::new(
                format!(
                    "the tool passed more data to one host call than the host accepts: at most {MAX_LIFT_BYTES} bytes of the host's copy ({LIFT_BYTES_PER_VALUE} bytes for each list element, field or other value, and the bytes of each string)"
                ),
                "resource-limit",
            )
        } else {
            Failure::new(
                format!(
                    "the tool's result is larger than the host accepts from one call: at most {MAX_LIFT_BYTES} bytes of the host's copy, counting {LIFT_BYTES_PER_VALUE} bytes for each list element, field or other value and the bytes of each string (so at most {MAX_LIFT_VALUES} values, or about 16 MiB of text); ask for less"
                ),
                "result-too-large",
            )
        };
    }
    if is_abi_violation(&cause) {
        let when = if in_host_call {
            "during a host call"
        } else {
            "in its result"
        };
        return Failure::new(
            format!(
                "the tool broke the component ABI {when}: {cause} (it handed the host a pointer or length outside its linear memory) and was stopped"
            ),
            "trap",
        );
    }
    // Secrets are withheld before the tail is cut, so that the cut cannot leave a part of
    // one that the observation's scan would not recognise; where the stderr buffer itself
    // dropped older bytes, a part of a secret at its start is withheld too.
    let (raw, cut) = state.stderr.contents();
    let (stderr, _) = state.config.secrets.withhold_cut(
        &String::from_utf8_lossy(&raw),
        Cut {
            start: cut,
            end: false,
        },
    );
    let stderr = stderr.trim();
    let with_stderr = |what: String| {
        if stderr.is_empty() {
            what
        } else {
            format!("{what}; its stderr ends: {}", tail_chars(stderr, 500))
        }
    };
    if let Some(trap) = e.downcast_ref::<Trap>() {
        return Failure::new(with_stderr(format!("the tool crashed: {trap}")), "trap");
    }
    // A host function refused the call without a more specific type: its own words.
    Failure::new(
        with_stderr(format!(
            "a host call of the tool failed and the tool was stopped: {cause}"
        )),
        "host-error",
    )
}

/// True for wasmtime's refusals of pointers and lengths a guest hands the host (canonical
/// ABI checks while lifting arguments or results, or the guest's `cabi_realloc` answer).
fn is_abi_violation(cause: &str) -> bool {
    [
        "out of bounds of memory",
        "beyond end of memory",
        "not aligned",
        "realloc return",
    ]
    .iter()
    .any(|p| cause.contains(p))
}

/// What fills a resource table, for the message: `9998 pollables, 2 descriptors, 0 other`.
fn census(table: &mut ResourceTable) -> String {
    let (mut pollables, mut descriptors, mut other) = (0usize, 0usize, 0usize);
    for entry in table.iter_mut() {
        if entry.is::<DynPollable>() {
            pollables += 1;
        } else if entry.is::<Descriptor>() {
            descriptors += 1;
        } else {
            other += 1;
        }
    }
    format!("{pollables} pollables, {descriptors} files and directories, {other} other")
}

fn tail_chars(s: &str, n: usize) -> &str {
    let count = s.chars().count();
    match s.char_indices().nth(count.saturating_sub(n)) {
        Some((i, _)) => &s[i..],
        None => s,
    }
}
