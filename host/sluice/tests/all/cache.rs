//! `sluice cache info|prune` through the binary, over a cache of the test's own: a call
//! compiles a built-in into it, `info` counts it, a prune removes another version's
//! artifacts at once and this version's down to the bound, and `cache.max_bytes` is the
//! bound a write keeps (docs/components.md#compiled-components).

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// `sluice ARGS` with the cache at `cache`, from `dir`.
fn sluice(dir: &Path, cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .current_dir(dir)
        .env("SLUICE_CACHE_DIR", cache)
        .env_remove("SLUICE_AGENT_MAX_TOOL_RESULT_BYTES")
        .env_remove("SLUICE_LOG")
        .output()
        .expect("sluice runs")
}

fn json(dir: &Path, cache: &Path, args: &[&str]) -> Value {
    let out = sluice(dir, cache, args);
    assert!(
        out.status.success(),
        "sluice {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn info_counts_what_a_call_compiled_and_prune_removes_stale_then_oldest() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
    let d = dir.path();
    // One built-in only: its component is compiled once, into the cache.
    let out = sluice(
        d,
        &cache,
        &["--root", ".", "call", "read_file", r#"{"path":"a.txt"}"#],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let info = json(d, &cache, &["cache", "info"]);
    assert_eq!(info["dir"], cache.display().to_string());
    assert_eq!(info["maxBytes"], 512 << 20);
    assert_eq!(info["staleArtifacts"], 0);
    let artifacts = info["artifacts"].as_u64().unwrap();
    let bytes = info["bytes"].as_u64().unwrap();
    assert!(artifacts >= 1, "{info}");
    let on_disk: u64 = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .map(|p| p.metadata().unwrap().len())
        .sum();
    assert_eq!(bytes, on_disk);

    // An artifact another engine wrote, and a record left without its artifact.
    let stale = cache.join(format!("{}-00000000deadbeef.cwasm", "0".repeat(64)));
    std::fs::write(&stale, vec![0u8; 1000]).unwrap();
    std::fs::write(cache.join("ffff-00000000deadbeef.cwasm.sha256"), "x\n").unwrap();
    let info = json(d, &cache, &["cache", "info"]);
    assert_eq!(
        (info["staleArtifacts"].as_u64(), info["staleBytes"].as_u64()),
        (Some(1), Some(1000))
    );

    // The default bound keeps this version's artifacts; the stale one and the orphan go.
    let pruned = json(d, &cache, &["cache", "prune"]);
    assert_eq!(pruned["removed"], 1);
    assert_eq!(pruned["freedBytes"], 1000);
    assert_eq!(pruned["orphanRecords"], 1);
    assert_eq!(pruned["left"]["artifacts"], artifacts);
    assert_eq!(pruned["left"]["bytes"], bytes);
    assert!(!stale.exists());

    // --max-bytes 0 empties it; the next call compiles again and works.
    let pruned = json(d, &cache, &["cache", "prune", "--max-bytes", "0"]);
    assert_eq!(pruned["removed"], artifacts);
    assert_eq!(pruned["freedBytes"], bytes);
    assert_eq!(pruned["left"]["artifacts"], 0);
    let out = sluice(
        d,
        &cache,
        &["--root", ".", "call", "read_file", r#"{"path":"a.txt"}"#],
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("hello"));
}

#[test]
fn the_configured_bound_is_shown_and_refused_out_of_range() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let d = dir.path();
    std::fs::write(d.join("sluice.toml"), "[cache]\nmax_bytes = 1000\n").unwrap();
    let info = json(d, &cache, &["--config", "sluice.toml", "cache", "info"]);
    assert_eq!(info["maxBytes"], 1000);
    std::fs::write(d.join("sluice.toml"), "[cache]\nmax_bytes = -1\n").unwrap();
    let out = sluice(d, &cache, &["--config", "sluice.toml", "cache", "info"]);
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("cache.max_bytes must be an integer from 0 to 1099511627776 (bytes); got -1"),
        "{e}"
    );
}
