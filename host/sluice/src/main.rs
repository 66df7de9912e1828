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

fn main() -> ExitCode {
    let cli = cli::parse();
    // Colour codes only for a person at a terminal: not in a file, a pipe or a CI log, and
    // never with NO_COLOR set (https://no-color.org).
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let logging = sluice_telemetry::Logging {
        // clap allows only `text` and `json`.
        format: cli.log_format.parse().unwrap_or_default(),
        filter: std::env::var("SLUICE_LOG").ok(),
        colour,
        // rmcp's own lines show only when asked for (see `sluice_mcp::logs`).
        quiet_targets: vec![(sluice_mcp::logs::RMCP_TARGET, true)],
        // Whatever SLUICE_LOG asks for, nothing that logs guests' arguments
        // (docs/observations.md#secrets-are-withheld).
        may_log: sluice_runtime::logs::may_log,
    };
    progress::start();
    match commands::run(cli, &logging) {
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
