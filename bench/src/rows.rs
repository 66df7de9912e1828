//! The rows of the table, one function each.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use sluice_runtime::{EngineOptions, ToolEngine, Toolbox};

use crate::{Bench, Row, median, micros, millis, ratio, sibling_binary, time_median};

pub(crate) const MIB: u64 = 1 << 20;

/// The log every paging row reads: lines of a realistic log, `bytes` long, made once.
fn log(bench: &Bench, name: &str, bytes: u64) -> anyhow::Result<PathBuf> {
    let dir = bench.work.join("logs");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(name);
    if path.metadata().is_ok_and(|m| m.len() == bytes) {
        return Ok(path);
    }
    let line =
        b"2026-11-30T01:00:00.000Z INFO  worker-7 processed batch 1234 of queue ingest in 87 ms\n";
    let mut out = std::io::BufWriter::with_capacity(MIB as usize, std::fs::File::create(&path)?);
    let mut left = bytes;
    while left > 0 {
        let n = left.min(line.len() as u64) as usize;
        out.write_all(&line[..n])?;
        left -= n as u64;
    }
    out.flush()?;
    Ok(path)
}

fn big_log_bytes(bench: &Bench) -> u64 {
    if bench.quick { 64 * MIB } else { 1024 * MIB }
}

/// A directory holding `page.log`, a 4 KiB log (a page of it at the default cap is the
/// whole file).
fn page_root(bench: &Bench) -> anyhow::Result<PathBuf> {
    let root = bench.work.join("per-call");
    std::fs::create_dir_all(&root)?;
    let line = "2026-11-30T01:00:00Z INFO  worker-7 processed batch 1234 in 87 ms\n";
    std::fs::write(root.join("page.log"), line.repeat(4096 / line.len()))?;
    Ok(root)
}

/// Roots granted in row 1's many-roots measurement: the page's root and 15 empty ones.
const MANY_ROOTS: usize = 16;

/// Row 1: one `read_file` of a 4 KiB page through the component (warm `InstancePre`, fresh
/// store per call), with and without the pooling allocator, against `pager` natively; and,
/// with the pooling allocator, the same call with [`MANY_ROOTS`] roots granted against 1.
pub(crate) fn per_call(bench: &Bench) -> anyhow::Result<Vec<Row>> {
    let root = page_root(bench)?;
    let cap = 65_536;
    let calls = if bench.quick { 300 } else { 3000 };
    let ctx = sluice_file_tools::Context::new(
        sluice_file_tools::Roots::new(vec![sluice_file_tools::Root::new("root", &root)]),
        sluice_file_tools::Limits::new(cap),
    );
    let a = sluice_file_tools::ReadFileArgs {
        path: "page.log".into(),
        ..Default::default()
    };
    let native = time_median(calls, || {
        let page = sluice_file_tools::read_file(&ctx, &a).map_err(|e| anyhow::anyhow!(e))?;
        std::hint::black_box(serde_json::to_string(&page)?);
        Ok(())
    })?;
    let mut roots = vec![("root".to_string(), root.clone())];
    for i in 1..MANY_ROOTS {
        let extra = bench.work.join("per-call-roots").join(format!("r{i}"));
        std::fs::create_dir_all(&extra)?;
        roots.push((format!("r{i}"), extra));
    }
    let mut rows = Vec::new();
    for on_demand in [false, true] {
        let engine = Arc::new(ToolEngine::new(EngineOptions {
            cache_dir: Some(bench.work.join("cache")),
            on_demand_allocation: on_demand,
            ..EngineOptions::default()
        })?);
        let load = |granted: &[(String, PathBuf)]| -> anyhow::Result<Toolbox> {
            let mut policy = sluice_runtime::ToolPolicy::read_only(granted.iter().cloned());
            policy.timeout = Duration::from_secs(10);
            Ok(sluice_runtime::Toolbox::load(
                engine.clone(),
                &[sluice_runtime::ComponentSpec {
                    source: crate::builtin("read_file")?,
                    policy,
                }],
            )?)
        };
        let one = load(&roots[..1])?;
        let many = load(&roots)?;
        let args = json!({"path": "page.log"});
        for toolbox in [&one, &many] {
            for _ in 0..100 {
                bench.call(toolbox, "read_file", &args, cap)?;
            }
        }
        // The observation text is what the host stores, as the JSON text is for the native
        // call: time that, not the benchmark's own parsing of it. The two toolboxes
        // alternate, so drift in the machine's speed falls on both alike.
        let args = args.to_string();
        let (mut t_one, mut t_many) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
        for _ in 0..calls {
            for (toolbox, samples) in [(&one, &mut t_one), (&many, &mut t_many)] {
                let t = Instant::now();
                let obs = bench
                    .runtime
                    .block_on(toolbox.call("read_file", &args, cap));
                samples.push(t.elapsed());
                std::hint::black_box(obs.into_text());
            }
        }
        let (sandboxed, with_many) = (median(t_one), median(t_many));
        let allocator = if engine.pooling() {
            "pooling"
        } else {
            "on-demand"
        };
        rows.push(Row {
            what: format!("1. read_file 4 KiB page, per call ({allocator} allocator)"),
            sluice: micros(sandboxed),
            baseline: format!("{} native pager", micros(native)),
            ratio: ratio(sandboxed, native),
            target: format!(
                "overhead {} (≤ 2× native)",
                micros(sandboxed.saturating_sub(native))
            ),
        });
        if !on_demand {
            rows.push(Row {
                what: format!(
                    "1b. read_file 4 KiB page, per call, {MANY_ROOTS} roots granted vs 1 ({allocator} allocator)"
                ),
                sluice: micros(with_many),
                baseline: format!("{} with 1 root", micros(sandboxed)),
                ratio: ratio(with_many, sandboxed),
                target: "≤ 1.1× (nothing grows with the roots)".into(),
            });
        }
    }
    Ok(rows)
}

/// Follows `nextOffset` through the whole file at cap `cap` through the component; returns
/// the time and the number of pages.
fn page_through_component(bench: &Bench, path: &Path, cap: u32) -> anyhow::Result<(Duration, u64)> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let toolbox = bench.toolbox("read_file", dir, Duration::from_secs(60))?;
    let t = Instant::now();
    let (mut offset, mut pages) = (0u64, 0u64);
    loop {
        let args = json!({"path": name, "offset": offset}).to_string();
        let obs = bench
            .runtime
            .block_on(toolbox.call("read_file", &args, cap));
        anyhow::ensure!(
            obs.text().starts_with(r#"{"ok":true"#),
            "read_file failed: {}",
            obs.text()
        );
        pages += 1;
        match next_offset(obs.text()) {
            Some(next) => offset = next,
            None => break,
        }
    }
    Ok((t.elapsed(), pages))
}

/// The `nextOffset` of a `read_file` observation, read without parsing the page: in JSON
/// text a `"` inside a string is escaped, so `"nextOffset":` can only be the key. (The
/// native side reads the field from the struct; parsing a 1 MiB page here would time the
/// benchmark, not Sluice.)
fn next_offset(observation: &str) -> Option<u64> {
    const KEY: &str = r#""nextOffset":"#;
    let at = observation.rfind(KEY)? + KEY.len();
    let digits = &observation[at..];
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    digits[..end].parse().ok()
}

/// The same pages through `pager` natively.
fn page_through_native(path: &Path, cap: u32) -> anyhow::Result<(Duration, u64)> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ctx = sluice_file_tools::Context::new(
        sluice_file_tools::Roots::new(vec![sluice_file_tools::Root::new("root", dir)]),
        sluice_file_tools::Limits::new(cap),
    );
    let t = Instant::now();
    let (mut offset, mut pages) = (0u64, 0u64);
    loop {
        let page = sluice_file_tools::read_file(
            &ctx,
            &sluice_file_tools::ReadFileArgs {
                path: name.clone(),
                offset: Some(offset),
                ..Default::default()
            },
        )
        .map_err(|e| anyhow::anyhow!(e))?;
        std::hint::black_box(serde_json::to_string(&page)?);
        pages += 1;
        match page.next_offset {
            Some(next) => offset = next,
            None => break,
        }
    }
    Ok((t.elapsed(), pages))
}

fn throughput(bytes: u64, d: Duration) -> String {
    format!("{:.0} MB/s", bytes as f64 / 1e6 / d.as_secs_f64())
}

/// Row 2: paging a 1 GiB log from start to end with `read_file` at caps 65,536 and
/// 1,048,576, against the same pages natively and against `cat`.
pub(crate) fn paging(bench: &Bench) -> anyhow::Result<Vec<Row>> {
    let bytes = big_log_bytes(bench);
    let path = log(bench, "big.log", bytes)?;
    let cat = time_median(3, || {
        let status = std::process::Command::new("cat")
            .arg(&path)
            .stdout(std::process::Stdio::null())
            .status()?;
        anyhow::ensure!(status.success(), "cat failed");
        Ok(())
    })?;
    let mut rows = Vec::new();
    for cap in [65_536u32, 1_048_576] {
        let (native, pages) = page_through_native(&path, cap)?;
        let (sandboxed, sandboxed_pages) = page_through_component(bench, &path, cap)?;
        anyhow::ensure!(
            pages == sandboxed_pages,
            "page counts differ: {pages} vs {sandboxed_pages}"
        );
        rows.push(Row {
            what: format!(
                "2. page through {} MiB, cap {cap} ({pages} pages)",
                bytes / MIB
            ),
            sluice: throughput(bytes, sandboxed),
            baseline: format!(
                "{} native pager; {} cat",
                throughput(bytes, native),
                throughput(bytes, cat)
            ),
            ratio: format!(
                "{:.0}% of native",
                100.0 * native.as_secs_f64() / sandboxed.as_secs_f64()
            ),
            target: if cap == 1_048_576 {
                "≥ 50% of native".into()
            } else {
                "—".into()
            },
        });
    }
    Ok(rows)
}

/// Row 3: a page at byte 900 MiB (with `offset`) against a page at byte 0.
pub(crate) fn resume(bench: &Bench) -> anyhow::Result<Vec<Row>> {
    let bytes = big_log_bytes(bench);
    let path = log(bench, "big.log", bytes)?;
    let toolbox = bench.toolbox(
        "read_file",
        path.parent().unwrap_or(Path::new(".")),
        Duration::from_secs(60),
    )?;
    let far = bytes * 900 / 1024;
    let calls = if bench.quick { 50 } else { 300 };
    // The two positions alternate, so drift in the machine's speed falls on both alike; each
    // call's time is that of the observation the host stores, as in row 1.
    let call = |offset: u64| -> anyhow::Result<Duration> {
        let args = json!({"path": "big.log", "offset": offset}).to_string();
        let t = Instant::now();
        let obs = bench
            .runtime
            .block_on(toolbox.call("read_file", &args, 65_536));
        let took = t.elapsed();
        anyhow::ensure!(
            obs.text().starts_with(r#"{"ok":true"#),
            "read_file failed: {}",
            obs.text()
        );
        Ok(took)
    };
    let (mut near, mut deep) = (Vec::new(), Vec::new());
    for _ in 0..calls {
        near.push(call(0)?);
        deep.push(call(far)?);
    }
    let (start, end) = (median(near), median(deep));
    Ok(vec![Row {
        what: format!(
            "3. read_file page at byte {} MiB with offset vs at byte 0",
            far / MIB
        ),
        sluice: micros(end),
        baseline: format!("{} at byte 0", micros(start)),
        ratio: ratio(end, start),
        target: "≤ 1.5".into(),
    }])
}

/// The child side of row 4: pages through `file` at `cap` and prints its peak resident set
/// size (VmHWM) in KiB.
pub(crate) fn page_through_child(file: &Path, cap: u32) -> anyhow::Result<()> {
    let cache = std::env::var_os("SLUICE_BENCH_CACHE").map(PathBuf::from);
    let bench = Bench {
        runtime: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
        engine: Arc::new(ToolEngine::new(EngineOptions {
            cache_dir: cache,
            ..EngineOptions::default()
        })?),
        work: PathBuf::new(),
        quick: false,
    };
    page_through_component(&bench, file, cap)?;
    let status = std::fs::read_to_string("/proc/self/status")?;
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .map(|v| v.trim().trim_end_matches(" kB").trim().to_string())
        .ok_or_else(|| anyhow::anyhow!("no VmHWM in /proc/self/status"))?;
    println!("{hwm}");
    Ok(())
}

/// Row 4: peak memory of paging through a 1 GiB file against a 1 MiB file (each in its own
/// process, at cap 1,048,576).
pub(crate) fn memory(bench: &Bench) -> anyhow::Result<Vec<Row>> {
    let big = log(bench, "big.log", big_log_bytes(bench))?;
    let small = log(bench, "small.log", MIB)?;
    let me = std::env::current_exe()?;
    let peak = |file: &Path| -> anyhow::Result<u64> {
        let out = std::process::Command::new(&me)
            .args(["--page-through", &file.display().to_string(), "1048576"])
            .env("SLUICE_BENCH_CACHE", bench.work.join("cache"))
            .output()?;
        anyhow::ensure!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(String::from_utf8_lossy(&out.stdout).trim().parse()?)
    };
    let (b, s) = (peak(&big)?, peak(&small)?);
    Ok(vec![Row {
        what: format!(
            "4. peak RSS paging {} MiB vs 1 MiB (cap 1 MiB)",
            big_log_bytes(bench) / MIB
        ),
        sluice: format!("{:.1} MiB", b as f64 / 1024.0),
        baseline: format!("{:.1} MiB for 1 MiB", s as f64 / 1024.0),
        ratio: format!("{:.2}×", b as f64 / s as f64),
        target: "≤ 1.2".into(),
    }])
}

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

/// Row 6: `list_dir` pages cost a page (issue 19): the last page of a 100,000-entry
/// directory against a page of a 1,000-entry one; the first page, cold (the directory read
/// and sorted) and warm; the whole listing against one `ls -f`; and, with
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

/// Row 9: one call of each guest example (Python, JavaScript, C, and `head` in all four
/// languages with Rust; built by `guest-examples/build.sh`) on its sample, against the built-in `read_file` (Rust) on a
/// 4 KiB page: what a tool's language costs per call. Fresh instance, call, lift and cap,
/// like every call; the component is loaded from the warm cache first.
pub(crate) fn guest_examples(bench: &Bench) -> anyhow::Result<Vec<Row>> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let examples = [
        (
            "Python",
            "python-csv-summary",
            "csv_summary",
            "summarize_table",
            json!({"path": "sales.csv"}),
            128,
        ),
        (
            "JavaScript",
            "js-json-query",
            "json_query",
            "query_json",
            json!({"path": "shop.json", "query": "$..name"}),
            256,
        ),
        (
            "C",
            "c-wc",
            "wc",
            "wc",
            json!({"paths": ["poem.txt", "notes.txt"]}),
            16,
        ),
        (
            "Python",
            "py-head",
            "py_head",
            "head",
            json!({"path": "/data/poem.txt"}),
            128,
        ),
        (
            "JavaScript",
            "js-head",
            "js_head",
            "head",
            json!({"path": "/data/poem.txt"}),
            64,
        ),
        (
            "C",
            "c-head",
            "c_head",
            "head",
            json!({"path": "/data/poem.txt"}),
            16,
        ),
        (
            "Rust",
            "rust-head",
            "rust_head",
            "head",
            json!({"path": "/data/poem.txt"}),
            16,
        ),
    ];
    let calls = if bench.quick { 10 } else { 50 };
    let root = page_root(bench)?;
    let builtin = bench.toolbox("read_file", &root, Duration::from_secs(10))?;
    let page = json!({"path": "page.log"}).to_string();
    let rust = time_median(calls, || {
        std::hint::black_box(
            bench
                .runtime
                .block_on(builtin.call("read_file", &page, 65_536)),
        );
        Ok(())
    })?;
    let mut rows = Vec::new();
    for (language, example, stem, tool, args, memory_mib) in examples {
        let what = format!("9. {tool} ({language} guest example), per call");
        let wasm_path = repo
            .join("target/guest-examples")
            .join(format!("{stem}.wasm"));
        let Ok(wasm) = std::fs::read(&wasm_path) else {
            rows.push(Row {
                what,
                sluice: "—".into(),
                baseline: "—".into(),
                ratio: "—".into(),
                target: "not measured: build it with guest-examples/install-toolchains.sh && guest-examples/build.sh".into(),
            });
            continue;
        };
        let mut policy = sluice_runtime::ToolPolicy::read_only([(
            "data".to_string(),
            repo.join("guest-examples").join(example).join("sample"),
        )]);
        policy.memory_bytes = memory_mib << 20;
        let spec = sluice_runtime::ComponentSpec {
            source: sluice_runtime::Source::Bytes {
                name: wasm_path.display().to_string(),
                wasm: Arc::new(wasm),
            },
            policy,
        };
        // The first load compiles and caches; the second is what a restart costs.
        sluice_runtime::Toolbox::load(bench.engine.clone(), std::slice::from_ref(&spec))?;
        let t = Instant::now();
        let toolbox = sluice_runtime::Toolbox::load(bench.engine.clone(), &[spec])?;
        let load = t.elapsed();
        let args = args.to_string();
        let first = bench.runtime.block_on(toolbox.call(tool, &args, 65_536));
        anyhow::ensure!(
            first.text().starts_with(r#"{"ok":true"#),
            "{tool} failed: {}",
            first.text()
        );
        let took = time_median(calls, || {
            std::hint::black_box(bench.runtime.block_on(toolbox.call(tool, &args, 65_536)));
            Ok(())
        })?;
        rows.push(Row {
            what,
            sluice: micros(took),
            baseline: format!("{} read_file (Rust)", micros(rust)),
            ratio: ratio(took, rust),
            target: format!("none (load from cache {})", millis(load)),
        });
    }
    Ok(rows)
}
