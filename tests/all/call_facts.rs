//! What a call cost inside its sandbox (`Observation::facts`, docs/telemetry.md#sandbox-facts):
//! how it ended, its time, peak memory and descriptors, its HTTP requests and the digest of
//! the component, for a built-in, a hostile component passing each limit, an HTTP call the
//! policy refuses, and calls that ran no guest code. The agent loop keeps them in the
//! audit: `agent_loop`'s audit test.

use std::time::Duration;

use serde_json::json;
use sluice_runtime::call::facts::CallFacts;
use sluice_runtime::component::source::sha256_hex;
use sluice_tests::{HOSTILE_WASM, HTTP_FETCH_WASM, Sandbox};

use crate::cache;

/// The cap of these tests.
const CAP: u32 = 65_536;

/// One WebAssembly page, the unit linear memories grow by.
const PAGE: u64 = 65_536;

/// `sha256:HEX` of the file at `path`.
fn digest_of(path: &str) -> String {
    format!("sha256:{}", sha256_hex(&std::fs::read(path).unwrap()))
}

#[test]
fn a_read_file_call_reports_its_outcome_memory_descriptor_and_digest() {
    let sb = Sandbox::new(cache(), CAP);
    sb.write("a.txt", "hello\n");
    let observation = sb.call("read_file", &json!({"path": "a.txt"}));
    let facts = observation.facts();
    assert_eq!(facts.outcome, "returned");
    // The file: the root's own descriptor is a preopen, not opened by the call.
    assert_eq!(facts.peak_descriptors, 1);
    assert_eq!((facts.http_requests, facts.http_denied), (0, 0));
    assert_eq!(facts.http_summary, "");
    let wasm = sluice_tests::builtin("read_file");
    assert_eq!(facts.digest, format!("sha256:{}", sha256_hex(wasm.bytes())));
    assert!(facts.peak_memory_bytes >= PAGE, "{facts:?}");
    assert!(facts.peak_memory_bytes.is_multiple_of(PAGE), "{facts:?}");
    assert!(facts.guest_us > 0, "{facts:?}");
    // The audit's JSON names each fact but the log line's summary.
    let shown = facts.to_json();
    let keys: Vec<&str> = shown
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "outcome",
            "queueWaitUs",
            "guestUs",
            "peakMemoryBytes",
            "peakDescriptors",
            "httpRequests",
            "httpDenied",
            "digest"
        ]
    );
    assert_eq!(shown["peakDescriptors"], 1);
}

#[test]
fn calls_that_run_no_guest_code_report_no_cost() {
    let sb = Sandbox::new(cache(), CAP);
    // No such tool: nothing ran, no component.
    let observation = sb.call("no_such_tool", &json!({}));
    assert_eq!(observation.facts(), &CallFacts::default());
    // Arguments that do not fit: the component is known, nothing ran.
    let observation = sb.call_raw("read_file", "{not json");
    let facts = observation.facts();
    assert_eq!(
        (
            facts.outcome.as_str(),
            facts.guest_us,
            facts.peak_memory_bytes
        ),
        ("", 0, 0)
    );
    assert_eq!(facts.digest.len(), "sha256:".len() + 64);
}

#[test]
fn a_hostile_call_reports_the_limit_it_passed() {
    let sb = Sandbox::with_component(cache(), CAP, HOSTILE_WASM, |p| {
        p.memory_bytes = 64 << 20;
        p.timeout = Duration::from_secs(1);
    });
    let grown = sb.call("grow", &json!({}));
    assert_eq!(grown.facts().outcome, "memory-limit");
    // The largest memory the host gave, never the one it refused.
    assert!(
        grown.facts().peak_memory_bytes <= 64 << 20,
        "{:?}",
        grown.facts()
    );
    assert!(
        grown.facts().peak_memory_bytes > 32 << 20,
        "{:?}",
        grown.facts()
    );
    assert_eq!(grown.facts().digest, digest_of(HOSTILE_WASM));

    let spun = sb.call("spin", &json!({}));
    assert_eq!(spun.facts().outcome, "timeout");
    assert!(spun.facts().guest_us >= 1_000_000, "{:?}", spun.facts());

    sb.write("f.txt", "x");
    let opened = sb.call("open_many", &json!({"path": "/root/f.txt", "count": 5}));
    assert_eq!(opened.text(), r#"{"ok":true,"result":5}"#);
    assert_eq!(opened.facts().outcome, "returned");
    assert_eq!(opened.facts().peak_descriptors, 5);
}

#[test]
fn a_refused_request_is_counted_as_made_and_denied() {
    let sb = Sandbox::with_component(cache(), CAP, HTTP_FETCH_WASM, |p| p.roots.clear());
    let observation = sb.call("fetch", &json!({"url": "http://127.0.0.1:9/x"}));
    let facts = observation.facts();
    assert_eq!(facts.outcome, "http-denied");
    assert_eq!((facts.http_requests, facts.http_denied), (1, 1));
    assert_eq!(
        facts.http_summary,
        "GET 127.0.0.1:9 failed: refused by the policy"
    );
    assert_eq!(facts.digest, digest_of(HTTP_FETCH_WASM));
}

#[test]
fn the_agent_loop_keeps_each_calls_facts_in_the_audit() {
    use crate::agent_loop::{agent, answer, calls, db, run, script};
    let sb = Sandbox::new(cache(), CAP);
    sb.write("a.txt", "hello\n");
    let db = db();
    let model = script(&[
        calls(&[
            ("read_file", json!({"path": "a.txt"})),
            ("no_such_tool", json!({})),
        ]),
        answer("done"),
    ]);
    let agent = agent(&db.store, model, sb.toolbox.clone(), CAP);
    let id = sb
        .block_on(sluice_store::Store::create_session(&*db.store))
        .unwrap()
        .id;
    sb.block_on(run(&agent, &id, Some("go")));
    let audit = sb
        .block_on(sluice_store::SessionAudit::read(&*db.store, &id))
        .unwrap();
    assert!(audit.audit.is_empty());
    // Messages: the prompt (1), the model's calls (2), then one observation each (3, 4).
    let seen: Vec<_> = audit
        .calls
        .iter()
        .map(|c| (c.seq, c.tool.as_str(), c.facts["outcome"].clone()))
        .collect();
    assert_eq!(
        seen,
        [
            (3, "read_file", json!("returned")),
            (4, "no_such_tool", json!(""))
        ]
    );
    let wasm = sluice_tests::builtin("read_file");
    assert_eq!(
        audit.calls[0].facts["digest"],
        json!(format!("sha256:{}", sha256_hex(wasm.bytes())))
    );
    assert_eq!(audit.calls[0].facts["peakDescriptors"], json!(1));
    assert_eq!(audit.calls[1].facts, CallFacts::default().to_json());
}
