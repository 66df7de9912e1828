//! The `sluice` binary: parses the command line, resolves the configuration once, wires the
//! libraries together, and reports errors. It is the only place that prints an error or
//! picks an exit code.
//!
//! Stdout carries only the command's output (an observation, the tool list); progress and
//! logs go to stderr.

mod cli;
mod commands;
mod progress;

use std::io::IsTerminal;
use std::process::ExitCode;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

fn main() -> ExitCode {
    let cli = cli::parse();
    // Colour codes only for a person at a terminal: not in a file, a pipe or a CI log, and
    // never with NO_COLOR set (https://no-color.org).
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    // Whatever SLUICE_LOG asks for, nothing that logs guests' arguments (docs/observations.md#secrets-are-withheld).
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(colour)
        .with_env_filter(
            // rmcp's own lines show only when asked for (see `sluice_mcp::logs`).
            std::env::var("SLUICE_LOG")
                .ok()
                .and_then(|spec| {
                    tracing_subscriber::EnvFilter::try_new(sluice_mcp::logs::quiet_rmcp(&spec)).ok()
                })
                .unwrap_or_else(|| sluice_mcp::logs::quiet_rmcp("warn").into()),
        )
        .finish()
        .with(tracing_subscriber::filter::filter_fn(
            sluice_runtime::logs::may_log,
        ))
        .init();
    progress::start();
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        // The run already said how it ended (on stderr); only the exit code is left.
        Err(e) if e.downcast_ref::<commands::RunEnded>().is_some() => {
            ExitCode::from(e.downcast_ref::<commands::RunEnded>().map_or(1, |r| r.0))
        }
        Err(e) => {
            #[allow(clippy::print_stderr)]
            {
                eprintln!("sluice: error: {e:#}");
            }
            ExitCode::from(2)
        }
    }
}

/// True when stdout was closed early (`sluice … | head`): not an error.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        let kind = c
            .downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
            .or_else(|| {
                c.downcast_ref::<serde_json::Error>()
                    .and_then(serde_json::Error::io_error_kind)
            });
        kind == Some(std::io::ErrorKind::BrokenPipe)
    })
}
