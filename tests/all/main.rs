//! Sluice's end-to-end tests: the real components in the real runtime.
//!
//! Every module builds its inputs in a temporary root, calls tools through
//! `sluice_runtime::Toolbox` exactly as a session does, and asserts the observation.
//! Row and case names (R1, T3, C10, …) are anchors of `docs/regressions.md`
//! (`docs/regressions.md#c10`), which gives each its source and its tests.

// Test code: a panic is the assertion. clippy.toml lets `#[test]` functions unwrap; this
// lets the helpers they share do so too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agent_backends; // The real agent loop over the real backends against the fake provider: P12, llama-like sessions.
mod agent_cases; // The reference scenario (1 MB log, 300 KB / 45 KB windows) and cases C5–C6.
mod agent_loop; // Rows P1–P11: the agent loop with a replay model, caps, recovery, cancel, approvals.
mod agent_metrics; // The loop's metrics: runs, model requests, context-window rejections and recoveries, busy refusals.
mod bad_input; // Wrong types, bounds, unknown and missing arguments, bad JSON, unknown tools.
mod baseline; // A server's cold start: Winch's code first, under the same limits; Cranelift's swapped in and cached.
mod call_facts; // What a call cost in its sandbox: outcome, time, memory, descriptors, HTTP, digest.
mod cancel; // Cancelling a run stops the tool call in progress; the transcript stays valid.
mod cap; // Every observation within the cap: pages of tricky text tile files under several caps.
mod cases; // Cases C1–C4 and C7–C13 from real bug reports, at CAP 8192.
mod code_mode; // run_script: scripts over the real tools, their limits, the record of their calls.
mod code_mode_props; // Generated programs over generated files: the observation within the cap, no inner observation.
mod cold_start; // An empty cache: tools listed at once, code compiled in the background; planted artifacts.
mod config_secrets; // wasi:config values and secrets; secrets withheld everywhere.
mod docs_links; // Every relative link of the README and docs/ resolves; every docs/…#anchor the code cites exists.
mod drop_in; // Drop-in components: names, prefixes and collisions, load failures, hints of third-party tools.
mod equivalence; // The component's JSON equals sluice_file_tools's native serde, byte for byte.
mod fifo_race; // A file swapped for a FIFO while the built-in tools read it: no call hangs.
mod grep_files; // Rows G1–G4, grep paging, the walk's skip rules.
mod guest_examples; // The example tools of guest-examples/ (Python, JavaScript, C, Rust) and the author's guide.
mod host_limits; // Waits in host calls, FIFOs, descriptor/pollable floods, bad pointers.
mod hostile; // Hostile components: loops, memory, floods, panics, escapes, missing imports.
mod hostile_serve; // `sluice serve` stays responsive while hostile calls run; cancel reaches them.
mod http; // wasi:http by allowlist: listed, unlisted, private, body limit, timeout.
mod http_credentials; // Credentials the host adds to requests; the guest never reads them.
mod http_open; // Open wasi:http requests: bounded per call, closed when the call ends (descriptors).
mod keys; // Rows K1–K3 and the key-material look-back rules.
mod keys_and_paging_edges; // Rows I7–I11: keys in UTF-16, encrypted, split; paging edges; deep trees.
mod keys_deep; // Keys the look-back does not see whole: long labels, lone `\r`, PGP headers, escaped lines.
mod list_dir; // Row L1, entry kinds, list paging and name cutting.
mod live; // A call on a replaced LiveToolbox keeps it, and cancellation reaches it.
mod read_file; // Rows R1–R9: read_file pages, cursors and the page budget.
mod refinements; // A policy's refinements of arguments: the schema, refused calls, load errors.
mod sandbox; // Escapes from the root (`..`, absolute, symlinks) and named roots.
mod secret_files; // The configuration's secret files: refused by name and by identity in every tool.
mod shapes; // Key order, integers as strings and beyond 64 bits, the root as a file, unknown tools.
mod tail_file; // Rows T1–T5: tail_file windows.
mod third_party; // A third-party component (own WIT, no Sluice import): schema, results, bad args.

use std::path::Path;

use serde_json::json;
use sluice_tests::Sandbox;

/// CAP of the cases in `docs/regressions.md`.
const CASE_CAP: u32 = 8192;

/// The compiled-component cache shared by every test process.
fn cache() -> &'static Path {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
}

#[test]
fn smoke_read_file_through_the_component() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("f.txt", "one\r\ntwo\nthree");
    let r = sb.ok("read_file", &json!({"path": "f.txt"}));
    assert_eq!(
        r,
        json!({"path":"f.txt","size":14,"offset":0,"contentBytes":14,"content":"one\r\ntwo\nthree","startLine":1,"endLine":3,"totalLines":3})
    );
}
