//! What one call cost inside its sandbox ([`CallFacts`]), as the audit keeps it beside the
//! observation and the report of the call shows it (`report`, docs/telemetry.md).

use serde::Serialize;

/// What one call cost inside its sandbox, as the audit keeps it beside the observation
/// (`sluice session audit`, `GET /sessions/{id}/audit`) and its span and log line show it.
/// Sizes in bytes, times in microseconds. A call that ran no guest code (an unknown tool,
/// arguments that do not fit, a full pool) has zeros and an empty `outcome` (and the
/// component's `digest`, when there is a component).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallFacts {
    /// How the guest's run ended: `returned`, `timeout`, `cancelled`, or the kind of the
    /// failure that stopped it (`resource-limit`, `trap`, `http-denied`, …); empty when no
    /// guest code ran.
    pub outcome: String,
    /// Time waiting for a slot of the call pool, µs.
    pub queue_wait_us: u64,
    /// Time from the call's store to its result, µs: instantiation and the export's run,
    /// the host functions it called included.
    pub guest_us: u64,
    /// The largest linear memory of the call, in bytes (as created or grown; the limit is
    /// the policy's `memory_mib`).
    pub peak_memory_bytes: u64,
    /// The most files and directories the call had open at once (the limit is
    /// [`MAX_OPEN_DESCRIPTORS`](crate::limits::MAX_OPEN_DESCRIPTORS)).
    pub peak_descriptors: u32,
    /// Outgoing HTTP requests the guest made (`wasi:http`).
    pub http_requests: u32,
    /// Of those, the ones the host refused (allowlist, method, address, recording).
    pub http_denied: u32,
    /// Of those, the ones that carried a credential of the policy's `http_credentials`
    /// (docs/configuration.md#credentials-the-tool-never-holds); in the audit only when not
    /// zero.
    #[serde(skip_serializing_if = "is_zero")]
    pub http_credentials: u32,
    /// `sha256:HEX` of the component that ran; empty for an unknown tool.
    pub digest: String,
    /// The requests for the log line, `METHOD host:port STATUS BYTES; …`, the component's
    /// secrets withheld; not kept in the audit.
    #[serde(skip)]
    pub http_summary: String,
}

impl CallFacts {
    /// The facts as the audit keeps them: a JSON object of the serialized fields
    /// (`outcome`, `queueWaitUs`, `guestUs`, `peakMemoryBytes`, `peakDescriptors`,
    /// `httpRequests`, `httpDenied`, `httpCredentials` when not zero, `digest`).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// True when `n` is zero (a count the audit leaves out then).
fn is_zero(n: &u32) -> bool {
    *n == 0
}
