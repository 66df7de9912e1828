//! Row 5: `grep_files` over a real source tree against ripgrep (its resume rows are in
//! `grep_resume.rs`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::{Bench, Row, median, millis, ratio};

/// Row 5: `grep_files` over a real source tree (the cargo registry's unpacked crates) against
/// `rg -j1` (row 5) and `rg` with its default threads (row 5t) with the same pattern, counting matching lines the same way (case-sensitive,
/// hidden files, `.gitignore` without a repository, files over 5 MiB skipped).
pub(crate) fn grep(bench: &Bench) -> anyhow::Result<Vec<Row>> {
    let tree = std::env::var_os("SLUICE_BENCH_TREE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo/registry/src")))
        .ok_or_else(|| anyhow::anyhow!("set SLUICE_BENCH_TREE to a source tree"))?;
    let rg = which("rg").ok_or_else(|| {
        anyhow::anyhow!("ripgrep (rg) is not installed (apt-get install ripgrep)")
    })?;
    let pattern = "unsafe impl Sync";
    let tree_bytes = du(&tree);
    let toolbox = bench.toolbox("grep_files", &tree, Duration::from_secs(3600))?;
    let sluice_search = || -> anyhow::Result<(u64, u64)> {
        let (mut count, mut cursor, mut calls) = (0u64, None::<String>, 0);
        loop {
            let mut args = json!({"pattern": pattern, "caseSensitive": true, "maxResults": 500});
            if let Some(c) = &cursor {
                args["cursor"] = json!(c);
            }
            let r = bench.call(&toolbox, "grep_files", &args, 1_048_576)?;
            calls += 1;
            count += r["count"].as_u64().unwrap_or(0);
            match r["nextCursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => return Ok((count, calls)),
            }
        }
    };
    // `threads`: `-j1`, or `None` for ripgrep's default (one thread per core).
    let rg_search = |threads: Option<&str>| -> anyhow::Result<u64> {
        let out = std::process::Command::new(&rg)
            .args(threads)
            .args([
                "--no-require-git",
                "--hidden",
                "--max-filesize",
                "5M",
                "-c",
                "-s",
                pattern,
            ])
            .arg(&tree)
            .output()?;
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.rsplit(':').next()?.parse::<u64>().ok())
            .sum())
    };
    // One untimed search first, so that neither side pays for reading the tree from disk;
    // then the three alternate, three times each.
    rg_search(Some("-j1"))?;
    let (mut sluice_times, mut rg_times, mut rg_all_times) = (Vec::new(), Vec::new(), Vec::new());
    let (mut count, mut calls, mut rg_count, mut rg_all_count) = (0, 0, 0, 0);
    for _ in 0..3 {
        let t = Instant::now();
        (count, calls) = sluice_search()?;
        sluice_times.push(t.elapsed());
        let t = Instant::now();
        rg_count = rg_search(Some("-j1"))?;
        rg_times.push(t.elapsed());
        let t = Instant::now();
        rg_all_count = rg_search(None)?;
        rg_all_times.push(t.elapsed());
    }
    let (sluice, ripgrep, ripgrep_all) =
        (median(sluice_times), median(rg_times), median(rg_all_times));
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    Ok(vec![
        Row {
            what: format!(
                "5. grep_files `{pattern}` over {} MB of crates ({count} matches, {calls} calls, one instance) vs rg -j1 ({rg_count} matches)",
                tree_bytes / 1_000_000
            ),
            sluice: millis(sluice),
            baseline: format!("{} rg -j1", millis(ripgrep)),
            ratio: ratio(sluice, ripgrep),
            target: "≤ 1.0×".into(),
        },
        Row {
            what: format!(
                "5t. the same vs rg with its default threads ({cores} cores; {rg_all_count} matches)"
            ),
            sluice: millis(sluice),
            baseline: format!("{} rg", millis(ripgrep_all)),
            ratio: ratio(sluice, ripgrep_all),
            target: "≤ 1.0×".into(),
        },
    ])
}

/// The path of program `name` on `PATH`.
fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// Bytes of the regular files under `dir` (symlinks not followed).
fn du(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(t) if t.is_file() => total += e.metadata().map_or(0, |m| m.len()),
                _ => {}
            }
        }
    }
    total
}
