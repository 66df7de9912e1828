//! The runtime's limits on a hostile component (tests/components/hostile) that waits
//! inside host calls, opens a FIFO, floods the host with descriptors and pollables, asks for
//! 2^40 random bytes or hands the host pointers outside its memory. Each call ends within
//! its timeout plus 200 ms with a tool error that names the limit and has a documented kind,
//! and the next call of the same toolbox works.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use sluice_runtime::limits::{
    HostLimit, LIFT_BYTES_PER_VALUE, MAX_LIFT_BYTES, MAX_LIFT_VALUES, MAX_OPEN_DESCRIPTORS,
    MAX_RANDOM_BYTES, MAX_RESOURCES,
};
use sluice_runtime::{CallStatus, ToolPolicy};
use sluice_tests::{HOSTILE_WASM, Sandbox};

use crate::cache;

/// What the issue allows a call past its timeout.
const OVERRUN: Duration = Duration::from_millis(200);

/// Slack on top of [`OVERRUN`] for a loaded 2-core machine (other builds and tests run
/// beside these): an elapsed-time bound is the behaviour here, but the scheduler may be late.
const SLACK: Duration = Duration::from_millis(300);

/// The hostile component over a read-only root, its policy changed by `adjust`.
fn hostile(adjust: impl FnOnce(&mut ToolPolicy)) -> Sandbox {
    Sandbox::with_component(cache(), 65_536, HOSTILE_WASM, adjust)
}

/// Calls `tool` and returns how long it took and its `(error, kind)`.
fn timed_err(sb: &Sandbox, tool: &str, args: &serde_json::Value) -> (Duration, String, String) {
    let start = Instant::now();
    let (message, kind) = sb.err(tool, args);
    (start.elapsed(), message, kind)
}

/// The same toolbox serves the next call: a quick, harmless one succeeds.
fn assert_still_serving(sb: &Sandbox) {
    assert_eq!(sb.ok("big_string", &json!({"bytes": 3})), json!("xxx"));
}

/// File descriptors of this process open on `path` (other tests of the process open and
/// close their own meanwhile).
fn open_fds(path: &Path) -> usize {
    let path = path.canonicalize().expect("the file exists");
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| *target == path)
        .count()
}

#[test]
fn waiting_inside_a_host_call_ends_at_the_timeout() {
    let sb = hostile(|p| p.timeout = Duration::from_millis(1000));
    let timeout = Duration::from_millis(1000);
    for (tool, args) in [
        // std::thread::sleep: a wasi:clocks pollable polled inside the host.
        ("sleep", json!({"ms": 60_000})),
        // subscribe-duration + pollable.block.
        ("block", json!({"ms": 60_000})),
        // poll on a long list of pollables that are never ready in time.
        ("poll_many", json!({"count": 4_000, "ms": 60_000})),
    ] {
        let (took, message, kind) = timed_err(&sb, tool, &args);
        assert_eq!(kind, "timeout", "{tool}: {message}");
        assert_eq!(
            message,
            "the tool ran past its timeout of 1000 ms and was stopped; raise timeout_ms in its policy (1 to 3600000 ms) if it needs longer",
            "{tool}"
        );
        assert!(
            took >= timeout && took < timeout + OVERRUN + SLACK,
            "{tool} ended after {took:?}"
        );
        assert_still_serving(&sb);
    }
    // Guest code that never calls the host is stopped the same way.
    let (took, message, kind) = timed_err(&sb, "spin", &json!({}));
    assert_eq!(
        (kind.as_str(), message.as_str()),
        (
            "timeout",
            "the tool ran past its timeout of 1000 ms and was stopped; raise timeout_ms in its policy (1 to 3600000 ms) if it needs longer"
        )
    );
    assert!(
        took < timeout + OVERRUN + SLACK,
        "spin ended after {took:?}"
    );
    // A short wait is no failure.
    let start = Instant::now();
    assert_eq!(sb.ok("sleep", &json!({"ms": 50})), serde_json::Value::Null);
    assert!(start.elapsed() >= Duration::from_millis(50));
}

#[test]
fn opening_a_fifo_does_not_block() {
    let sb = hostile(|p| p.timeout = Duration::from_millis(2000));
    sluice_operator_files::make_fifo(&sb.root().join("fifo")).expect("a FIFO");
    // A third-party tool opens it the usual way (std::fs) and reads it: the open returns at
    // once (no writer needed), and reading the FIFO fails (WASI `io`) instead of waiting.
    let (took, message, kind) = timed_err(&sb, "read_file", &json!({"path": "/root/fifo"}));
    assert_eq!((message.as_str(), kind.as_str()), ("io", ""));
    assert!(took < Duration::from_millis(500), "the open took {took:?}");
    assert_still_serving(&sb);
    // The built-in tools refuse it by its type.
    let builtins = Sandbox::new(cache(), 65_536);
    sluice_operator_files::make_fifo(&builtins.root().join("fifo")).expect("a FIFO");
    for tool in ["read_file", "tail_file"] {
        let start = Instant::now();
        let (message, kind) = builtins.err(tool, &json!({"path": "fifo"}));
        assert_eq!(kind, "wrong-kind", "{tool}: {message}");
        assert_eq!(
            message,
            "fifo is not a regular file (a device, FIFO or socket); only regular files can be read"
        );
        assert!(start.elapsed() < Duration::from_millis(500));
    }
    let grep = builtins.ok("grep_files", &json!({"pattern": "x", "path": "fifo"}));
    assert_eq!(grep["count"], 0);
    assert_eq!(grep["skippedFiles"], 1);
}

#[test]
fn a_descriptor_flood_stops_at_the_limit() {
    let sb = hostile(|_| {});
    let file = sb.write("f.txt", "x");
    assert_eq!(open_fds(&file), 0);
    let (took, message, kind) = timed_err(
        &sb,
        "open_many",
        &json!({"path": "/root/f.txt", "count": 100_000}),
    );
    assert_eq!(kind, "resource-limit", "{message}");
    assert_eq!(message, HostLimit::Descriptors.to_string());
    assert_eq!(
        message,
        format!(
            "the tool held {MAX_OPEN_DESCRIPTORS} open files, directories and HTTP requests at once and tried to open another; one call may hold at most {MAX_OPEN_DESCRIPTORS} (close what it no longer reads)"
        )
    );
    assert!(took < Duration::from_secs(2), "{took:?}");
    // Every descriptor went with the call.
    assert_eq!(open_fds(&file), 0);
    // Up to the limit (the root's preopen is not counted) is fine.
    assert_eq!(
        sb.ok(
            "open_many",
            &json!({"path": "/root/f.txt", "count": MAX_OPEN_DESCRIPTORS})
        ),
        json!(MAX_OPEN_DESCRIPTORS)
    );
    assert_still_serving(&sb);
}

#[test]
fn a_pollable_flood_stops_at_the_limit() {
    let sb = hostile(|p| p.timeout = Duration::from_secs(60));
    let (took, message, kind) = timed_err(&sb, "pollables", &json!({"count": 10_000_000}));
    assert_eq!(kind, "resource-limit", "{message}");
    // Each clock pollable is two resources (the pollable and its timer); the component
    // never asked for its preopens.
    assert_eq!(
        message,
        format!(
            "the tool held {MAX_RESOURCES} host resources at once ({} pollables, 0 files and directories, {} other) and asked for another; one call may hold at most {MAX_RESOURCES} (drop what it no longer uses)",
            MAX_RESOURCES / 2,
            MAX_RESOURCES / 2
        )
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(sb.ok("pollables", &json!({"count": 1000})), json!(1000));
    assert_still_serving(&sb);
}

#[test]
fn huge_random_buffers_are_refused_naming_the_limit() {
    let sb = hostile(|_| {});
    let (_, message, kind) = timed_err(&sb, "random_bytes", &json!({"len": 1u64 << 40}));
    assert_eq!(kind, "resource-limit");
    assert_eq!(
        message,
        "the tool asked the host for 1099511627776 random bytes in one call; one wasi:random call may ask for at most 1048576 bytes (1 MiB)"
    );
    let (_, message, _) = timed_err(&sb, "random_bytes", &json!({"len": MAX_RANDOM_BYTES + 1}));
    assert_eq!(
        message,
        HostLimit::RandomBytes {
            asked: MAX_RANDOM_BYTES + 1
        }
        .to_string()
    );
    assert_eq!(
        sb.ok("random_bytes", &json!({"len": MAX_RANDOM_BYTES})),
        json!(MAX_RANDOM_BYTES)
    );
    assert_still_serving(&sb);
}

#[test]
fn pointers_outside_the_guest_memory_are_abi_errors() {
    let sb = hostile(|_| {});
    let (_, message, kind) = timed_err(&sb, "bad_realloc", &json!({}));
    assert_eq!(kind, "trap", "{message}");
    assert_eq!(
        message,
        "the tool broke the component ABI during a host call: realloc return: beyond end of memory (it handed the host a pointer or length outside its linear memory) and was stopped"
    );
    let (_, message, kind) = timed_err(&sb, "bad_return", &json!({}));
    assert_eq!(kind, "trap", "{message}");
    assert_eq!(
        message,
        "the tool broke the component ABI in its result: string pointer/length out of bounds of memory (it handed the host a pointer or length outside its linear memory) and was stopped"
    );
    assert_still_serving(&sb);
}

/// The limit on a result counts values, not bytes of JSON: exactly [`MAX_LIFT_VALUES`]
/// booleans are accepted (and capped), one more is refused with a message that says so.
#[test]
fn the_result_limit_is_counted_in_values() {
    assert_eq!(MAX_LIFT_BYTES, 16 << 20);
    assert_eq!(MAX_LIFT_VALUES, MAX_LIFT_BYTES / LIFT_BYTES_PER_VALUE);
    let sb = hostile(|_| {});
    let obs = sb.checked("bools", &json!({"count": MAX_LIFT_VALUES}));
    assert_eq!(obs.status(), CallStatus::Ok);
    assert!(obs.truncated());
    // `[true,false,…]`: half `true`, half `false`, commas between, in the success envelope.
    let n = MAX_LIFT_VALUES;
    let list = 4 * (n / 2) + 5 * (n / 2) + (n - 1) + 2;
    assert_eq!(obs.full_bytes(), r#"{"ok":true,"result":"#.len() + list + 1);
    let (_, message, kind) = timed_err(&sb, "bools", &json!({"count": MAX_LIFT_VALUES + 1}));
    assert_eq!(kind, "result-too-large");
    // The issue's 500,000 booleans are past it, and the message says why.
    assert_eq!(
        sb.err("bools", &json!({"count": 500_000})),
        (message.clone(), kind)
    );
    assert_eq!(
        message,
        format!(
            "the tool's result is larger than the host accepts from one call: at most {MAX_LIFT_BYTES} bytes of the host's copy, counting {LIFT_BYTES_PER_VALUE} bytes for each list element, field or other value and the bytes of each string (so at most {MAX_LIFT_VALUES} values, or about 16 MiB of text); ask for less"
        )
    );
    assert_still_serving(&sb);
}
