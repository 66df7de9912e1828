//! Row 6: `list_dir` over directories of 1,000 to 2,000,000 entries.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;
use sluice_runtime::Toolbox;

use crate::{Bench, Row, median, millis, ratio, time_median};

/// A directory of `n` empty files `entry-0000000.txt` …, made once under the bench's work
/// directory; returns it and how long making it took (`None` when it already existed). A
/// new directory is left alone for `sluice_runtime::host::listing::RACY_SECONDS` (the host does
/// not keep a listing of a directory that changed more recently), as a real one would be.
fn entries_dir(bench: &Bench, n: u64) -> anyhow::Result<(PathBuf, Option<Duration>)> {
    let dir = bench.work.join(format!("dir-{n}"));
    if dir.exists() {
        return Ok((dir, None));
    }
    let t = Instant::now();
    let partial = bench.work.join(format!("dir-{n}.partial"));
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir_all(&partial)?;
    for i in 0..n {
        std::fs::File::create(partial.join(format!("entry-{i:07}.txt")))?;
    }
    std::fs::rename(&partial, &dir)?;
    let made = t.elapsed();
    std::thread::sleep(Duration::from_secs(
        sluice_runtime::host::listing::RACY_SECONDS as u64 + 1,
    ));
    Ok((dir, Some(made)))
}

/// Pages through the whole of `toolbox`'s root at the default cap; returns the pages read.
fn list_all(bench: &Bench, toolbox: &Toolbox, n: u64) -> anyhow::Result<u64> {
    let (mut offset, mut pages, mut seen) = (0u64, 0u64, 0u64);
    loop {
        let page = bench.call(toolbox, "list_dir", &json!({"offset": offset}), 65_536)?;
        pages += 1;
        seen += page["entries"].as_array().map_or(0, |e| e.len() as u64);
        match page["nextOffset"].as_u64() {
            Some(next) => offset = next,
            None => break,
        }
    }
    anyhow::ensure!(seen == n, "listed {seen} of {n} entries");
    Ok(pages)
}

/// Row 6: a `list_dir` page costs a page (docs/paging.md#list_dir-the-result): the last page
/// of a 100,000-entry directory against a page of a 1,000-entry one; the first page, cold
/// (the directory read and sorted) and warm; the whole listing against one `ls -f`; and, with
/// `SLUICE_BENCH_DIR_2M=1`, the first page of a 2,000,000-entry directory at the default
/// timeout.
pub(crate) fn list_dir(bench: &Bench) -> anyhow::Result<Vec<Row>> {
    let n = if bench.quick { 10_000 } else { 100_000 };
    let runs = if bench.quick { 5 } else { 15 };
    let (small_dir, _) = entries_dir(bench, 1_000)?;
    let (dir, _) = entries_dir(bench, n)?;
    let small = bench.toolbox("list_dir", &small_dir, Duration::from_secs(60))?;
    let toolbox = bench.toolbox("list_dir", &dir, Duration::from_secs(60))?;
    let page = |t: &Toolbox, offset: u64| {
        bench
            .call(t, "list_dir", &json!({"offset": offset}), 65_536)
            .map(drop)
    };
    // The first call of a directory reads and sorts it.
    let t = Instant::now();
    let first_page = bench.call(&toolbox, "list_dir", &json!({}), 65_536)?;
    let cold = t.elapsed();
    anyhow::ensure!(first_page["total"] == n, "unexpected listing: {first_page}");
    let small_t = time_median(runs, || page(&small, 0))?;
    let first_t = time_median(runs, || page(&toolbox, 0))?;
    let last_t = time_median(runs, || page(&toolbox, n - 100))?;
    let (mut whole, mut ls, mut pages) = (Vec::new(), Vec::new(), 0);
    for _ in 0..3 {
        let t = Instant::now();
        pages = list_all(bench, &toolbox, n)?;
        whole.push(t.elapsed());
        let t = Instant::now();
        let out = std::process::Command::new("ls")
            .arg("-f")
            .arg(&dir)
            .stdout(std::process::Stdio::null())
            .status()?;
        ls.push(t.elapsed());
        anyhow::ensure!(out.success(), "ls -f failed: {out}");
    }
    let (whole, ls) = (median(whole), median(ls));
    let mut rows = vec![
        Row {
            what: format!("6. list_dir: last page of {n} entries vs a page of 1,000"),
            sluice: millis(last_t),
            baseline: format!("{} page of 1,000", millis(small_t)),
            ratio: ratio(last_t, small_t),
            target: "≤ 2×".into(),
        },
        Row {
            what: format!(
                "6. list_dir: first page of {n} entries, warm (cold: {})",
                millis(cold)
            ),
            sluice: millis(first_t),
            baseline: format!("{} page of 1,000", millis(small_t)),
            ratio: ratio(first_t, small_t),
            target: "≤ 2×".into(),
        },
        Row {
            what: format!("6. list_dir: all {n} entries ({pages} pages) vs one `ls -f`"),
            sluice: millis(whole),
            baseline: format!("{} ls -f", millis(ls)),
            ratio: ratio(whole, ls),
            target: "≤ 10×".into(),
        },
    ];
    if std::env::var_os("SLUICE_BENCH_DIR_2M").is_some() {
        let big = 2_000_000;
        let (big_dir, made) = entries_dir(bench, big)?;
        let timeout =
            sluice_runtime::ToolPolicy::read_only([("root".to_string(), big_dir.clone())]).timeout;
        let toolbox = bench.toolbox("list_dir", &big_dir, timeout)?;
        let t = Instant::now();
        let first = bench.call(&toolbox, "list_dir", &json!({}), 65_536)?;
        let cold = t.elapsed();
        anyhow::ensure!(first["total"] == big, "unexpected listing: {first}");
        let warm = time_median(3, || page(&toolbox, big - 100))?;
        rows.push(Row {
            what: format!(
                "6. list_dir: first page of {big} entries, cold (made in {}); last page warm {}",
                made.map_or_else(
                    || "an earlier run".into(),
                    |d| format!("{:.0} s", d.as_secs_f64())
                ),
                millis(warm)
            ),
            sluice: millis(cold),
            baseline: format!("{:.0} s timeout", timeout.as_secs_f64()),
            ratio: ratio(cold, timeout),
            target: "< 1×".into(),
        });
    }
    Ok(rows)
}
