//! `sluice new`, `build`, `dev` and `test`: the tool author's kit (sluice-kit), which reads
//! no configuration of its own.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use sluice_kit::Language;
use sluice_kit::cases::{self, TestPlan};

use crate::commands::RunEnded;

/// `sluice new NAME --lang LANG [DIR]`: what was written and what to run next on stdout; a
/// `note:` on stderr for each program the build will need and this machine lacks.
pub(crate) fn new(name: &str, lang: &str, dir: Option<PathBuf>) -> anyhow::Result<()> {
    let language: Language = lang.parse()?;
    let dir = dir.unwrap_or_else(|| PathBuf::from(name));
    let created = sluice_kit::new_project(&dir, name, language)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{created}\n\nnext:\n{}", created.next_steps())?;
    out.flush()?;
    let mut err = std::io::stderr().lock();
    for missing in language.missing(None) {
        writeln!(err, "note: {missing}")?;
    }
    Ok(())
}

/// `sluice build [DIR]`: the build's own output on stderr, what it made on stdout.
pub(crate) fn build(dir: Option<PathBuf>) -> anyhow::Result<()> {
    let built = sluice_kit::build(&dir.unwrap_or_else(|| PathBuf::from(".")))?;
    writeln!(std::io::stdout().lock(), "{built}")?;
    Ok(())
}

/// `sluice test [PLAN] [--bless]`: one line per case and cap as it runs, then the summary;
/// exit code 1 when a case failed.
pub(crate) fn test(plan: Option<PathBuf>, bless: bool) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("failed to start the async runtime")?;
    let mut out = std::io::stdout().lock();
    let plan = plan.unwrap_or_else(|| PathBuf::from("."));
    let summary = run_plan(&plan, &runtime, bless, &mut out)?;
    out.flush()?;
    if summary.failed > 0 {
        return Err(RunEnded(
            1,
            format!(
                "{} of {} cases failed",
                summary.failed,
                summary.passed + summary.failed
            ),
        )
        .into());
    }
    Ok(())
}

/// `sluice dev [DIR]`: a round now, then one after every save, until Ctrl-C. A round's
/// failure (the build, the plan, a component that does not load) is printed, and the watch
/// goes on.
pub(crate) fn dev(dir: Option<PathBuf>) -> anyhow::Result<()> {
    let dir = dir.unwrap_or_else(|| PathBuf::from("."));
    let watcher = sluice_kit::dev::SourceWatcher::new(&dir)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("failed to start the async runtime")?;
    let mut out = std::io::stdout().lock();
    loop {
        round(&dir, &runtime, &mut out)?;
        writeln!(out, "watching {} for changes (Ctrl-C stops)", dir.display())?;
        out.flush()?;
        let changed = watcher.next_change()?;
        let names: Vec<String> = changed.iter().map(|p| p.display().to_string()).collect();
        writeln!(out, "\nchanged: {}", names.join(", "))?;
    }
}

/// One round of `sluice dev`: build, then the tests (when there is a tests.toml) through a
/// fresh load of the tools, so the new component is the one called.
fn round(
    dir: &Path,
    runtime: &tokio::runtime::Runtime,
    out: &mut impl Write,
) -> std::io::Result<()> {
    match sluice_kit::build(dir) {
        Ok(built) => writeln!(out, "{built}")?,
        Err(e) => return writeln!(out, "build failed: {e}"),
    }
    let plan_path = dir.join("tests.toml");
    if !plan_path.exists() {
        return writeln!(
            out,
            "no tests.toml: nothing to run (docs/authoring.md#tests)"
        );
    }
    match run_plan(&plan_path, runtime, false, out) {
        Ok(_) => Ok(()),
        Err(e) => match e.downcast::<std::io::Error>() {
            Ok(written) => Err(written),
            Err(e) => writeln!(out, "{e}"),
        },
    }
}

/// Loads the plan at `plan` (a tests.toml, or a directory holding one) and its tools, runs
/// its cases (writing the snapshots with `bless`), and writes one line per case and cap to
/// `out` as it runs, then the summary.
///
/// # Errors
/// The plan or its tools cannot be loaded (`TestsError`), or `out` cannot be written
/// (`std::io::Error`).
fn run_plan(
    plan: &Path,
    runtime: &tokio::runtime::Runtime,
    bless: bool,
    out: &mut impl Write,
) -> anyhow::Result<cases::Summary> {
    let plan = TestPlan::load(plan)?;
    let toolbox = runtime.block_on(cases::load_tools(&plan))?;
    let mut written = Ok(());
    let summary = runtime.block_on(cases::run(&plan, &toolbox, bless, |outcome| {
        if written.is_ok() {
            written = writeln!(out, "{outcome}");
        }
    }));
    written?;
    writeln!(out, "{summary}")?;
    Ok(summary)
}
