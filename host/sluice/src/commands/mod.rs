//! What each command does, given the parsed command line.

mod mcp;
mod run;
mod serve;
mod session;
mod store;
mod tools;

pub(crate) use run::RunEnded;

use std::io::Write;

use anyhow::Context as _;
use sluice_config::{Config, Overrides};
use sluice_server::reload::ReloadOptions;

use crate::cli::{Cli, Command};

/// Runs the command.
pub(crate) fn run(cli: Cli) -> anyhow::Result<()> {
    let (max_turns, auto_approve, model, allowed_hosts) = match &cli.command {
        Command::Run(r) => (
            r.max_turns.clone(),
            r.auto_approve,
            r.model.clone(),
            Vec::new(),
        ),
        Command::Serve(s) => (
            s.max_turns.clone(),
            s.auto_approve,
            s.model.clone(),
            s.allowed_hosts.clone(),
        ),
        _ => (None, false, None, Vec::new()),
    };
    let allow_destructive = match &cli.command {
        Command::Serve(s) => s.allow_destructive,
        Command::Mcp(m) => m.allow_destructive,
        _ => false,
    };
    let overrides = Overrides {
        roots: cli.global.roots.clone(),
        max_tool_result_bytes: cli.global.max_tool_result_bytes.clone(),
        tools_dir: cli.global.tools_dir.clone(),
        max_turns,
        auto_approve,
        store: cli.global.store.clone(),
        store_url: cli.global.store_url.clone(),
        model,
        max_concurrent_calls: cli.global.max_concurrent_calls.clone(),
        allowed_hosts,
        allow_destructive,
        strict: cli.global.strict,
    };
    sluice_config::check_environment(&|k| std::env::var_os(k))?;
    let config = Config::resolve(
        cli.global.config.as_deref(),
        &|k| std::env::var(k).ok(),
        &overrides,
    )?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("failed to start the async runtime")?;
    let reload = ReloadOptions {
        config_file: cli.global.config.clone(),
        overrides,
    };
    let mut out = std::io::stdout().lock();
    match cli.command {
        Command::Run(args) => {
            drop(out);
            return runtime.block_on(run::run(&config, args));
        }
        Command::Serve(args) => {
            drop(out);
            return runtime.block_on(serve::run(&config, args, reload));
        }
        Command::Mcp(args) => {
            drop(out);
            let result = runtime.block_on(mcp::run(&config, args, reload));
            // A guest still running when the client left ends at its own timeout; do not
            // keep the process for it.
            runtime.shutdown_background();
            return result;
        }
        Command::Session { command } => {
            drop(out);
            return runtime.block_on(session::run(&config, command));
        }
        Command::Store { command } => {
            drop(out);
            return runtime.block_on(store::run(&config, command));
        }
        Command::Call { tool, args } => {
            let toolbox = runtime.block_on(sluice_wiring::load_tools(&config, Some(&tool)))?;
            let args = args.unwrap_or_default();
            let observation =
                runtime.block_on(toolbox.call(&tool, &args, config.agent.max_tool_result_bytes));
            writeln!(out, "{}", observation.text())?;
        }
        Command::Wit { dir } => {
            let dir = dir.unwrap_or_else(|| "wit".into());
            for path in sluice_builtins::wit::write_wit(&dir)? {
                writeln!(out, "{}", path.display())?;
            }
        }
        Command::Tools { command: None } => {
            let toolbox = runtime.block_on(sluice_wiring::load_tools(&config, None))?;
            let mut tools: Vec<_> = toolbox
                .tools()
                .map(serde_json::to_value)
                .collect::<Result<_, _>>()?;
            // Components that failed to load: listed after the tools, with their reason.
            tools.extend(toolbox.unavailable().iter().map(|u| {
                serde_json::json!({"source": u.source, "unavailable": true, "reason": u.reason})
            }));
            serde_json::to_writer_pretty(&mut out, &tools)?;
            writeln!(out)?;
        }
        Command::Tools {
            command: Some(command),
        } => {
            let value = runtime.block_on(tools::run(&config, command))?;
            serde_json::to_writer_pretty(&mut out, &value)?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    Ok(())
}
