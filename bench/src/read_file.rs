//! Rows 1 to 4: `read_file` per call, paging through a 1 GiB log, resuming deep in it, and
//! peak memory, each against `pager` natively.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use sluice_runtime::{EngineOptions, ToolEngine, Toolbox};

use crate::{Bench, Row, median, micros, ratio, time_median};

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
pub(crate) fn page_root(bench: &Bench) -> anyhow::Result<PathBuf> {
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
