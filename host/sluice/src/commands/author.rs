//! `sluice new`, `sluice build` and `sluice test`: the tool author's kit (sluice-kit), which
//! reads no configuration of its own.

use std::io::Write as _;
use std::path::PathBuf;

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
    let plan = TestPlan::load(&plan.unwrap_or_else(|| PathBuf::from(".")))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("failed to start the async runtime")?;
    let toolbox = runtime.block_on(cases::load_tools(&plan))?;
    let mut out = std::io::stdout().lock();
    let mut written = Ok(());
    let summary = runtime.block_on(cases::run(&plan, &toolbox, bless, |outcome| {
        if written.is_ok() {
            written = writeln!(out, "{outcome}");
        }
    }));
    written?;
    writeln!(out, "{summary}")?;
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
