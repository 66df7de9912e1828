//! The compiled-component cache the test processes of one test binary share, warmed once
//! with each built-in's optimized code.
//!
//! Why: a `sluice` process that finds no compiled code for a built-in compiles it (Cranelift,
//! in the background for `serve` and `mcp`). Tests run in parallel; from an empty cache
//! each process they start compiles every built-in at once, and on CI's 2 cores an answer
//! then waited past two minutes. Warming compiles each built-in once, one after another,
//! before any test process starts.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Once;

/// The shared cache directory (`TARGET_TMPDIR/warm-cache`, the test's
/// `$CARGO_TARGET_TMPDIR`), warmed on the first call of this test binary by `sluice call` of
/// each built-in with the binary `sluice` (later calls wait for it).
///
/// # Panics
/// If a warming call fails (its stderr is in the message).
pub fn warm_cache(sluice: &Path, target_tmpdir: &Path) -> PathBuf {
    static WARM: Once = Once::new();
    let dir = target_tmpdir.join("warm-cache");
    WARM.call_once(|| {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("f.txt"), "one\n").unwrap();
        let root_flag = format!("root={}", root.path().display());
        for (tool, args) in [
            ("read_file", r#"{"path":"f.txt"}"#),
            ("tail_file", r#"{"path":"f.txt"}"#),
            ("grep_files", r#"{"pattern":"one"}"#),
            ("list_dir", "{}"),
            ("run_script", r#"{"script":"return 1"}"#),
        ] {
            let out = Command::new(sluice)
                .args(["--root", &root_flag, "call", tool, args])
                .env("SLUICE_CACHE_DIR", &dir)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "warming the cache with {tool}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    });
    dir
}
