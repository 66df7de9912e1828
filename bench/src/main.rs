//! `sluice-bench`: what the sandbox costs, and how cost grows with the work, measured side by
//! side in one run and printed as one markdown table.
//!
//! ```sh
//! cargo build --release -p sluice -p sluice-bench && ./target/release/sluice-bench
//! ```
//!
//! Every row sets a Sluice operation against its baseline (native `pager`, `cat`, ripgrep,
//! the same operation at a smaller size), measured in the same process or back to back, and
//! gives the ratio and the target from the benchmark issue. Times are medians. The rows that
//! need them build a 1 GiB log, a 100,000-entry directory and a 10,000-message session in a
//! temporary directory; the grep row searches the cargo registry's unpacked crates
//! (`~/.cargo/registry/src`, at least 200 MB) against `rg -j1` and `rg` with its default
//! threads when ripgrep is installed. `SLUICE_BENCH_PERF_MAP=1` makes wasmtime write a perf
//! map (`/tmp/perf-<pid>.map`) for `perf record`.
//! `--quick` uses smaller inputs (for a smoke run; its numbers are not the published ones).
//! `--only 1,5` measures only the rows given (numbers as in the table). `--markdown FILE`
//! also writes the printed table into FILE between its `<!-- bench:table:begin -->` and
//! `<!-- bench:table:end -->` lines (`docs/benchmarks.md`; table.rs). Rows 10 and 11 drive
//! `sluice mcp` (stdio, and Streamable HTTP with 16 concurrent clients). Rows 7b, 7c and 12
//! measure PostgreSQL when `SLUICE_TEST_POSTGRES_URL` names a server (store.rs). Row 13 holds
//! 4,000 idle event streams open on `sluice serve` (streams.rs). Row 14 asks "ERROR lines per
//! worker" of a 1 GiB log in code mode, and times a script's inner calls (code_mode.rs).
//! Row 15 times edit → `sluice build` → `sluice call` of a `sluice new` project per language,
//! and row 16 a cold `sluice mcp` to `initialize` and to each interpreter example's first call,
//! with the compile times the binary logs (authoring.rs). Row 17 measures rows 1 and 11 with
//! telemetry off, metrics on, traces exported to a local receiver, and both (telemetry.rs).
//! Row 18 sets the closest peer, microsoft/wassette, beside Sluice on the same component
//! over MCP stdio when `SLUICE_BENCH_WASSETTE` and `SLUICE_BENCH_PEER_COMPONENT` name it and
//! its example (peer.rs).

#![allow(clippy::print_stdout, clippy::print_stderr)] // A benchmark prints its table.

mod authoring;
mod code_mode;
mod compile_log;
mod grep_resume;
mod grep_vs_rg;
mod guest_examples;
mod list_dir;
mod machine;
mod mcp;
mod peer;
mod process;
mod read_file;
mod start;
mod store;
mod streams;
mod table;
mod telemetry;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_runtime::{ComponentSpec, EngineOptions, Source, ToolEngine, ToolPolicy, Toolbox};

/// One line of the table.
pub(crate) struct Row {
    pub(crate) what: String,
    pub(crate) sluice: String,
    pub(crate) baseline: String,
    pub(crate) ratio: String,
    pub(crate) target: String,
}

/// What every row shares: a tokio runtime, the engine (with a warm compiled cache), a work
/// directory, and the sizes to use.
pub(crate) struct Bench {
    pub(crate) runtime: tokio::runtime::Runtime,
    pub(crate) engine: Arc<ToolEngine>,
    pub(crate) work: PathBuf,
    pub(crate) quick: bool,
}

impl Bench {
    /// The built-in tool `name` over `root` with a timeout of `timeout`.
    pub(crate) fn toolbox(
        &self,
        name: &'static str,
        root: &Path,
        timeout: Duration,
    ) -> anyhow::Result<Toolbox> {
        let mut policy = ToolPolicy::read_only([("root".to_string(), root.to_path_buf())]);
        policy.timeout = timeout;
        Ok(Toolbox::load(
            self.engine.clone(),
            &[ComponentSpec {
                source: builtin(name)?,
                policy,
            }],
        )?)
    }

    /// Calls `tool` and returns the parsed result, failing on a tool error.
    pub(crate) fn call(
        &self,
        toolbox: &Toolbox,
        tool: &str,
        args: &serde_json::Value,
        cap: u32,
    ) -> anyhow::Result<serde_json::Value> {
        let obs = self
            .runtime
            .block_on(toolbox.call(tool, &args.to_string(), cap));
        let v: serde_json::Value = serde_json::from_str(obs.text())?;
        anyhow::ensure!(v["ok"] == true, "{tool} failed: {}", obs.text());
        Ok(v["result"].clone())
    }
}

/// The rows, numbered as in the table.
const ROWS: std::ops::RangeInclusive<usize> = 1..=18;

/// The command line of a run (the child modes of rows 4 and 17 are read before it).
#[derive(clap::Parser)]
#[command(
    name = "sluice-bench",
    version,
    about = "What the sandbox costs, as one table"
)]
struct Args {
    /// Smaller inputs, for a smoke run (its numbers are not the published ones).
    #[arg(long)]
    quick: bool,
    /// Measure only these rows, like `--only 1,5`.
    #[arg(long, value_name = "ROWS", value_delimiter = ',', value_parser = row_number)]
    only: Option<Vec<usize>>,
    /// Also write the table into FILE between its `<!-- bench:table:begin -->` and
    /// `<!-- bench:table:end -->` lines (`docs/benchmarks.md`).
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
}

/// A row number of `--only`.
fn row_number(n: &str) -> Result<usize, String> {
    n.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| ROWS.contains(n))
        .ok_or_else(|| {
            format!(
                "--only takes row numbers {} to {}; got {n:?}",
                ROWS.start(),
                ROWS.end()
            )
        })
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Child mode for the memory row: page through a file, then report peak memory.
    if let [mode, file, cap] = args.as_slice()
        && mode == "--page-through"
    {
        return read_file::page_through_child(Path::new(file), cap.parse()?);
    }
    // Child mode for row 17: row 1's call with one telemetry mode installed.
    if let Some(("--per-call-telemetry", rest)) = args.split_first().map(|(a, r)| (a.as_str(), r)) {
        return telemetry::per_call_child(rest);
    }
    let Args {
        quick,
        only,
        markdown,
    } = <Args as clap::Parser>::parse();
    // A page without its markers fails now, not after the run.
    if let Some(page) = &markdown {
        let text = std::fs::read_to_string(page)
            .map_err(|e| anyhow::anyhow!("reading {}: {e}", page.display()))?;
        table::splice(&text, "", &page.display().to_string())?;
    }
    let work = tempfile::tempdir()?;
    let bench = Bench {
        runtime: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
        engine: Arc::new(ToolEngine::new(EngineOptions {
            cache_dir: Some(work.path().join("cache")),
            // `SLUICE_BENCH_PERF_MAP=1`: name guest functions for `perf record`.
            perf_map: std::env::var_os("SLUICE_BENCH_PERF_MAP").is_some_and(|v| v == "1"),
            ..EngineOptions::default()
        })?),
        work: work.path().to_path_buf(),
        quick,
    };
    let mut table = Vec::new();
    type RowFn = fn(&Bench) -> anyhow::Result<Vec<Row>>;
    let all: [(&str, RowFn); *ROWS.end()] = [
        ("per-call overhead", read_file::per_call),
        ("sequential paging", read_file::paging),
        ("resume cost", read_file::resume),
        ("memory", read_file::memory),
        ("grep vs ripgrep", grep_resume::rows),
        ("list_dir", list_dir::list_dir),
        ("session store", store::appends),
        ("start", start::start),
        ("guest examples", guest_examples::guest_examples),
        ("MCP stdio round trip", mcp::stdio_round_trip),
        ("MCP Streamable HTTP", mcp::http_concurrent),
        ("replicas", store::replicas),
        ("idle event streams", streams::idle_streams),
        ("code mode", code_mode::rows),
        ("edit to first call", authoring::edit_to_call),
        ("cold MCP start", authoring::cold_mcp),
        ("telemetry", telemetry::rows),
        ("the peer (wassette)", peer::rows),
    ];
    for (row, (name, f)) in (1..).zip(all) {
        if only.as_ref().is_some_and(|o| !o.contains(&row)) {
            continue;
        }
        eprintln!("measuring {name} …");
        match f(&bench) {
            Ok(r) => table.extend(r),
            Err(e) => table.push(Row {
                what: name.to_string(),
                sluice: "—".into(),
                baseline: "—".into(),
                ratio: "—".into(),
                target: format!("not measured: {e:#}"),
            }),
        }
    }
    let text = table::render(&machine::describe(), &table);
    print!("{text}");
    if let Some(page) = &markdown {
        table::write_into(page, &text)?;
        eprintln!("wrote the table into {}", page.display());
    }
    Ok(())
}

/// The built-in tool `name` as this build embeds it ([`sluice_builtins::BUILTINS`]).
pub(crate) fn builtin(name: &str) -> anyhow::Result<Source> {
    let (name, wasm) = sluice_builtins::BUILTINS
        .iter()
        .find(|(n, _)| *n == name)
        .copied()
        .ok_or_else(|| anyhow::anyhow!("no built-in tool called {name:?}"))?;
    Ok(Source::Builtin { name, wasm })
}

/// The median of `samples`.
pub(crate) fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Times `f` `n` times and returns the median.
pub(crate) fn time_median(
    n: usize,
    mut f: impl FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<Duration> {
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        f()?;
        samples.push(t.elapsed());
    }
    Ok(median(samples))
}

pub(crate) fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

pub(crate) fn millis(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

pub(crate) fn ratio(a: Duration, b: Duration) -> String {
    format!("{:.2}×", a.as_secs_f64() / b.as_secs_f64())
}

/// A binary built next to this one (`cargo build --release -p sluice -p sluice-bench`).
pub(crate) fn sibling_binary(name: &str) -> anyhow::Result<PathBuf> {
    let path = std::env::current_exe()?.with_file_name(name);
    anyhow::ensure!(
        path.exists(),
        "{} not found: build it with `cargo build --release -p {name}`",
        path.display()
    );
    Ok(path)
}
