//! Hostile components (tests/components/hostile, needs-missing): a tool that loops, grows
//! its memory, floods its result, panics, or reaches for files, environment or network it
//! was not granted gets a tool error naming what stopped it, and the host keeps serving.
//! Every observation is within the cap.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sluice_runtime::limits::{LIFT_BYTES_PER_VALUE, MAX_LIFT_VALUES};
use sluice_runtime::{CallStatus, RootGrant, ToolPolicy};
use sluice_tests::{HOSTILE_WASM, NEEDS_MISSING_WASM, OUTSIDER_WASM, Sandbox, component_spec};

use crate::cache;

/// The cap of these tests.
const CAP: u32 = 65_536;

/// The hostile component over a read-only root `root`, its policy changed by `adjust`.
fn hostile(adjust: impl FnOnce(&mut ToolPolicy)) -> Sandbox {
    Sandbox::with_component(cache(), CAP, HOSTILE_WASM, adjust)
}

/// The host still serves calls of the same toolbox: a quick, harmless one succeeds.
fn assert_still_serving(sb: &Sandbox) {
    assert_eq!(sb.ok("big_string", &json!({"bytes": 3})), json!("xxx"));
}

#[test]
fn an_infinite_loop_times_out_and_the_host_keeps_serving() {
    let sb = hostile(|p| p.timeout = Duration::from_secs(1));
    let start = Instant::now();
    let (message, kind) = sb.err("spin", &json!({}));
    let took = start.elapsed();
    assert_eq!(kind, "timeout", "{message}");
    assert_eq!(
        message,
        "the tool ran past its timeout of 1000 ms and was stopped; raise timeout_ms in its policy (1 to 3600000 ms) if it needs longer"
    );
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(2),
        "the loop was stopped after {took:?}"
    );
    // Other functions of the same toolbox still work: every call gets a fresh instance.
    assert_still_serving(&sb);
    assert_eq!(sb.ok("env_vars", &json!({})), json!([]));
}

#[test]
fn growing_memory_towards_4_gib_hits_the_memory_limit() {
    let sb = hostile(|p| p.memory_bytes = 64 << 20);
    let (message, kind) = sb.err("grow", &json!({}));
    assert_eq!(kind, "memory-limit", "{message}");
    assert!(
        message.starts_with("the tool hit its memory limit of 64 MiB (it asked for 65 MiB)"),
        "{message}"
    );
    assert!(
        message.ends_with(
            "and was stopped; raise memory_mib in its policy (1 to 4096 MiB) if it needs more"
        ),
        "{message}"
    );
    assert_still_serving(&sb);
}

#[test]
fn a_500_mb_result_under_a_64_mib_limit_is_a_memory_limit_error() {
    let sb = hostile(|p| p.memory_bytes = 64 << 20);
    let (message, kind) = sb.err("big_string", &json!({"bytes": 500_000_000}));
    assert_eq!(kind, "memory-limit", "{message}");
    assert!(
        message.starts_with("the tool hit its memory limit of 64 MiB (it asked for "),
        "{message}"
    );
    assert_still_serving(&sb);
}

/// Set in the child process that [`a_500_mb_result_is_refused_before_the_host_copies_it`]
/// runs itself in.
const MEASURE_ALONE: &str = "SLUICE_TESTS_MEASURE_ALONE";

/// Peak resident memory of this process since [`reset_peak_rss`], in bytes (Linux).
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmHWM in /proc/self/status");
    kib << 10
}

/// Resets the peak resident memory to the current one (Linux `clear_refs` 5); where that
/// is not allowed the peak only starts higher, which makes the check more lenient.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// With memory enough to build it (768 MiB), a 500 MB string is refused before the host
/// copies it: a `result-too-large` error within the cap, and the process's peak memory
/// grows by the guest's own pages only (about 477 MiB; a host copy would add as much
/// again), below the guest's limit. The peak is measured in a child process running only
/// this test, so that other tests' memory does not blur it.
#[test]
fn a_500_mb_result_is_refused_before_the_host_copies_it() {
    const NAME: &str = "hostile::a_500_mb_result_is_refused_before_the_host_copies_it";
    if cfg!(target_os = "linux") && std::env::var_os(MEASURE_ALONE).is_none() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", NAME, "--test-threads", "1"])
            .env(MEASURE_ALONE, "1")
            .output()
            .expect("the test binary runs again");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "the measurement in a child process failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    let limit: u64 = 768 << 20;
    let sb = hostile(|p| p.memory_bytes = limit);
    reset_peak_rss();
    let before = cfg!(target_os = "linux").then(peak_rss);
    let obs = sb.checked("big_string", &json!({"bytes": 500_000_000}));
    let after = cfg!(target_os = "linux").then(peak_rss);
    assert_eq!(
        obs.text(),
        json!({
            "ok": false,
            "error": format!(
                "the tool's result is larger than the host accepts from one call: at most 16777216 bytes of the host's copy, counting {LIFT_BYTES_PER_VALUE} bytes for each list element, field or other value and the bytes of each string (so at most {MAX_LIFT_VALUES} values, or about 16 MiB of text); ask for less"
            ),
            "kind": "result-too-large"
        })
        .to_string()
    );
    assert_eq!(obs.status(), CallStatus::ToolError);
    if let (Some(before), Some(after)) = (before, after) {
        let grew = after.saturating_sub(before);
        assert!(
            grew < limit,
            "peak RSS grew by {} MiB during the call",
            grew >> 20
        );
    }
    assert_still_serving(&sb);
}

/// A result the host accepts but the cap does not is cut to the cap with the marker.
#[test]
fn a_1_mb_result_is_capped() {
    let sb = Sandbox::with_component(cache(), 4096, HOSTILE_WASM, |_| {});
    let obs = sb.checked("big_string", &json!({"bytes": 1_000_000}));
    assert_eq!(obs.status(), CallStatus::Ok);
    assert!(obs.truncated());
    assert_eq!(obs.full_bytes(), 1_000_023);
    assert!(obs.text().starts_with(r#"{"ok":true,"result":"xxxx"#));
    assert!(
        obs.text().ends_with(
            "x…[truncated; full result is 1000023 bytes. Ask for less: a narrower query]"
        ),
        "{}",
        obs.text()
    );
    // The head fills the cap exactly (`x` is one byte).
    assert_eq!(obs.text().len(), 4096);
}

/// A sandbox whose root holds `inside.txt`, with `secret.txt` (`TOPSECRET`) beside the root
/// and symlinks in the root that point at it.
fn hostile_with_secrets(adjust: impl FnOnce(&mut ToolPolicy)) -> Sandbox {
    let sb = hostile(adjust);
    sb.write("inside.txt", "fine\n");
    std::fs::write(sb.outside("secret.txt"), "TOPSECRET\n").unwrap();
    sb.symlink("../secret.txt", "rel_link");
    sb.symlink(sb.outside("secret.txt"), "abs_link");
    sb.symlink("..", "up_link");
    sb.symlink("inside.txt", "ok_link");
    sb
}

/// Asserts that `tool` with `args` fails with the guest's `error` (no kind), and that
/// neither the secret nor `/etc/passwd` leaks.
fn assert_refused(sb: &Sandbox, tool: &str, args: &Value, error: &str) {
    let obs = sb.checked(tool, args);
    assert!(
        !obs.text().contains("TOPSECRET") && !obs.text().contains("root:"),
        "{tool} {args}: {}",
        obs.text()
    );
    assert_eq!(obs.status(), CallStatus::ToolError, "{tool} {args}");
    assert_eq!(
        obs.text(),
        json!({"ok": false, "error": error}).to_string(),
        "{tool} {args}"
    );
}

/// WASI's answer for a path that resolves outside every preopen (the hostile component
/// reports WASI error codes by name).
const NOT_PERMITTED: &str = "not-permitted";
/// WASI's answer for a path under no preopen at all.
const NOT_FOUND: &str = "no-entry";

#[test]
fn files_outside_the_roots_are_refused() {
    let sb = hostile_with_secrets(|_| {});
    // Granted: the root, and a symlink that stays inside it.
    assert_eq!(
        sb.ok("read_file", &json!({"path": "/root/inside.txt"})),
        json!("fine\n")
    );
    assert_eq!(
        sb.ok("read_file", &json!({"path": "/root/ok_link"})),
        json!("fine\n")
    );
    assert_eq!(
        sb.ok("list_dir", &json!({"path": "/root"})),
        json!(["abs_link", "inside.txt", "ok_link", "rel_link", "up_link"])
    );
    // The guest's `/` is no directory: only the preopened roots exist.
    assert_refused(&sb, "list_dir", &json!({"path": "/"}), NOT_FOUND);
    for path in ["/etc/passwd", "/etc", "/proc/self/environ", "etc/passwd"] {
        assert_refused(&sb, "read_file", &json!({"path": path}), NOT_FOUND);
    }
    for path in [
        "/root/../etc/passwd",
        "/root/../../../../etc/passwd",
        "/root/../secret.txt",
        "/root/rel_link",
        "/root/abs_link",
        "/root/up_link/secret.txt",
    ] {
        assert_refused(&sb, "read_file", &json!({"path": path}), NOT_PERMITTED);
    }
    for path in ["/root/up_link", "/root/.."] {
        assert_refused(&sb, "list_dir", &json!({"path": path}), NOT_PERMITTED);
    }
}

#[test]
fn the_environment_is_empty_unless_granted() {
    assert!(
        std::env::var_os("PATH").is_some(),
        "the host has an environment to leak"
    );
    let sb = hostile(|_| {});
    assert_eq!(sb.ok("env_vars", &json!({})), json!([]));
    let sb = hostile(|p| {
        p.env = vec![
            ("GREETING".into(), "hello world".into()),
            ("SLUICE_MODE".into(), "test".into()),
        ];
    });
    assert_eq!(
        sb.ok("env_vars", &json!({})),
        json!(["GREETING=hello world", "SLUICE_MODE=test"])
    );
}

#[test]
fn sockets_are_refused() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let sb = hostile(|_| {});
    // Refused by the host's socket policy (WASI `access-denied`, which the guest's libc
    // reports as the errno of `access`), never attempted.
    for (target, error) in [
        (addr.to_string(), "access"),
        // Name lookup is not granted either.
        (
            format!("localhost:{}", addr.port()),
            "failed to lookup address information: Non-recoverable error",
        ),
    ] {
        let (message, kind) = sb.err("connect", &json!({"addr": target}));
        assert_eq!(kind, "", "{target}: {message}");
        assert_eq!(message, error, "{target}");
    }
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        Ok((_, peer)) => panic!("the guest connected to the listener from {peer}"),
        Err(e) => panic!("accept failed: {e}"),
    }
}

#[test]
fn a_read_only_root_refuses_writes() {
    let sb = hostile_with_secrets(|_| {});
    for path in ["/root/pwned.txt", "/root/inside.txt", "/root/sub/new.txt"] {
        assert_refused(
            &sb,
            "write_file",
            &json!({"path": path, "contents": "pwned"}),
            NOT_PERMITTED,
        );
    }
    assert_refused(
        &sb,
        "write_file",
        &json!({"path": "/pwned.txt", "contents": "pwned"}),
        NOT_FOUND,
    );
    assert!(!sb.root().join("pwned.txt").exists());
    assert!(!sb.root().join("sub").exists());
    assert_eq!(
        std::fs::read_to_string(sb.root().join("inside.txt")).unwrap(),
        "fine\n"
    );
}

#[test]
fn a_writable_root_takes_writes_inside_it_only() {
    let rw = tempfile::tempdir().unwrap();
    let rw_root = rw.path().join("rw");
    std::fs::create_dir(&rw_root).unwrap();
    std::os::unix::fs::symlink(rw.path(), rw_root.join("up_link")).unwrap();
    let sb = hostile(|p| {
        p.roots.push(RootGrant {
            name: "rw".into(),
            dir: rw_root.clone(),
            write: true,
        });
    });
    assert_eq!(
        sb.ok("list_dir", &json!({"path": "/rw"})),
        json!(["up_link"])
    );
    // Arguments that do not match never reach the guest, writable root or not.
    let (message, kind) = sb.err("write_file", &json!({"path": "/rw/new.txt", "contents": 5}));
    assert_eq!(kind, "invalid-argument");
    assert_eq!(message, "contents must be a string; got 5");
    assert!(!rw_root.join("new.txt").exists());
    // A write inside the writable root lands.
    assert_eq!(
        sb.ok(
            "write_file",
            &json!({"path": "/rw/new.txt", "contents": "written"})
        ),
        Value::Null
    );
    assert_eq!(
        std::fs::read_to_string(rw_root.join("new.txt")).unwrap(),
        "written"
    );
    // Out of it, by `..` or a symlink, or into the read-only root: refused.
    for path in [
        "/rw/../escaped.txt",
        "/rw/up_link/escaped.txt",
        "/root/x.txt",
    ] {
        assert_refused(
            &sb,
            "write_file",
            &json!({"path": path, "contents": "pwned"}),
            NOT_PERMITTED,
        );
    }
    assert!(!rw.path().join("escaped.txt").exists());
    assert!(!sb.root().join("x.txt").exists());
}

#[test]
fn a_panic_is_a_trap_with_its_message() {
    let sb = hostile(|_| {});
    let (message, kind) = sb.err("crash", &json!({}));
    assert_eq!(kind, "trap", "{message}");
    assert!(
        message.starts_with(
            "the tool crashed: wasm trap: wasm `unreachable` instruction executed; its stderr ends: "
        ),
        "{message}"
    );
    assert!(
        message.contains("hostile crash: deliberate panic for the trap test"),
        "{message}"
    );
    assert_still_serving(&sb);
}

#[test]
fn a_component_importing_a_missing_interface_does_not_load() {
    let error = sluice_tests::load_component(cache(), NEEDS_MISSING_WASM, ToolPolicy::default())
        .expect_err("a component importing acme:missing/clock must not load");
    let message = error.to_string();
    assert!(
        message.starts_with("failed to load sluice_test_needs_missing.wasm: "),
        "{message}"
    );
    assert!(message.contains("acme:missing/clock"), "{message}");
    // With other components, the whole set fails to load.
    let error = sluice_runtime::Toolbox::load(
        sluice_tests::engine(cache()),
        &[
            component_spec(OUTSIDER_WASM, ToolPolicy::default()),
            component_spec(NEEDS_MISSING_WASM, ToolPolicy::default()),
        ],
    )
    .expect_err("the set must not load");
    assert!(error.to_string().contains("acme:missing/clock"), "{error}");
}
