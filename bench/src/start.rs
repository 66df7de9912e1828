//! Row 8: `sluice call list_dir` end to end, first start against a cached start.

use std::time::{Duration, Instant};

use crate::{Bench, Row, millis, sibling_binary};

/// Row 8: `sluice call list_dir` end to end, the first run (compiling the component) against
/// later runs (compiled component from the cache).
pub(crate) fn start(bench: &Bench) -> anyhow::Result<Vec<Row>> {
    let sluice = sibling_binary("sluice")?;
    let cache = bench.work.join("start-cache");
    let root = bench.work.join("per-call");
    std::fs::create_dir_all(&root)?;
    let run = || -> anyhow::Result<Duration> {
        let t = Instant::now();
        let out = std::process::Command::new(&sluice)
            .args(["--root", &root.display().to_string(), "call", "list_dir"])
            .env("SLUICE_CACHE_DIR", &cache)
            .output()?;
        let elapsed = t.elapsed();
        anyhow::ensure!(
            out.status.success(),
            "sluice failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(elapsed)
    };
    let (mut cold, mut warm) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let _ = std::fs::remove_dir_all(&cache);
        cold.push(run()?);
        for _ in 0..4 {
            warm.push(run()?);
        }
    }
    let (cold, warm) = (crate::median(cold), crate::median(warm));
    Ok(vec![Row {
        what: "8. `sluice call list_dir` end to end: cached start vs first start".into(),
        sluice: millis(warm),
        baseline: format!("{} first start (compiles)", millis(cold)),
        ratio: format!("{:.0}%", 100.0 * warm.as_secs_f64() / cold.as_secs_f64()),
        target: "≤ 20%".into(),
    }])
}
