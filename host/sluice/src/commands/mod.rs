//! What each command does, given the parsed command line.

mod author;
mod cache;
mod doctor;
mod mcp;
mod metrics;
mod run;
mod serve;
mod session;
mod store;
mod token;
mod tools;

pub(crate) use run::RunEnded;

use std::io::Write;

use anyhow::Context as _;
use sluice_config::{Config, Overrides};
use sluice_server::reload::ReloadOptions;

use crate::cli::{Cli, Command, Options};

/// Runs the command.
pub(crate) fn run(cli: Cli, logging: &sluice_telemetry::Logging) -> anyhow::Result<()> {
    // The commands that read no configuration log (and export spans, by the OTEL_*
    // variables alone) from the start; the others from when the configuration is resolved
    // (`configured`), so that `telemetry.otlp_endpoint` of the file applies.
    let _telemetry = match &cli.command {
        Command::Wit { .. }
        | Command::Token { .. }
        | Command::New { .. }
        | Command::Build { .. }
        | Command::Dev { .. }
        | Command::Test { .. }
        | Command::Tools {
            command: Some(crate::cli::ToolsCommand::Keygen { .. }),
            ..
        } => Some(sluice_telemetry::install(
            logging,
            &sluice_telemetry::Traces::default(),
        )?),
        _ => None,
    };
    match cli.command {
        // The commands that read no configuration.
        Command::Wit { dir } => wit(dir),
        Command::Token { command } => token::run(command),
        Command::New { name, lang, dir } => author::new(&name, &lang, dir),
        Command::Build { dir } => author::build(dir),
        Command::Dev { dir } => author::dev(dir),
        Command::Test { plan, bless } => author::test(plan, bless),
        Command::Tools {
            command: Some(crate::cli::ToolsCommand::Keygen { output_key_prefix }),
            ..
        } => {
            let value = tools::keygen(&output_key_prefix)?;
            let mut out = std::io::stdout().lock();
            serde_json::to_writer_pretty(&mut out, &value)?;
            writeln!(out)?;
            Ok(())
        }
        command @ Command::Doctor(_) => {
            let overrides = overrides(&cli.options, &command);
            let Command::Doctor(args) = command else {
                unreachable!("matched above")
            };
            doctor::run(cli.options.config.file.as_deref(), &overrides, args.json)
        }
        command => configured(cli.options, command, logging),
    }
}

/// `sluice wit [DIR]`: prints the paths written.
fn wit(dir: Option<std::path::PathBuf>) -> anyhow::Result<()> {
    let dir = dir.unwrap_or_else(|| "wit".into());
    let mut out = std::io::stdout().lock();
    for path in sluice_builtins::wit::write_wit(&dir)? {
        writeln!(out, "{}", path.display())?;
    }
    out.flush()?;
    Ok(())
}

/// The flags of `command` and the shared `options` that override the configuration.
fn overrides(options: &Options, command: &Command) -> Overrides {
    let (max_turns, auto_approve, model, allowed_hosts) = match command {
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
        Command::Doctor(d) => (
            d.max_turns.clone(),
            d.auto_approve,
            d.model.clone(),
            d.allowed_hosts.clone(),
        ),
        _ => (None, false, None, Vec::new()),
    };
    let allow_destructive = match command {
        Command::Serve(s) => s.allow_destructive,
        Command::Mcp(m) => m.allow_destructive,
        Command::Doctor(d) => d.allow_destructive,
        _ => false,
    };
    let tls = match command {
        Command::Serve(s) => Some(&s.tls),
        Command::Mcp(m) => Some(&m.tls),
        _ => None,
    };
    Overrides {
        roots: options.tools.roots.clone(),
        max_tool_result_bytes: options.calls.max_tool_result_bytes.clone(),
        tools_dir: options.tools.tools_dir.clone(),
        max_turns,
        auto_approve,
        store: options.store.store.clone(),
        store_url: options.store.store_url.clone(),
        model,
        max_concurrent_calls: options.calls.max_concurrent_calls.clone(),
        allowed_hosts,
        tls_cert: tls.and_then(|t| t.tls_cert.clone()),
        tls_key: tls.and_then(|t| t.tls_key.clone()),
        allow_destructive,
        strict: options.tools.strict,
    }
}

/// Runs a command that resolves the configuration first.
fn configured(
    options: Options,
    command: Command,
    logging: &sluice_telemetry::Logging,
) -> anyhow::Result<()> {
    let overrides = overrides(&options, &command);
    sluice_config::check_environment(&|k| std::env::var_os(k))?;
    let config = Config::resolve(
        options.config.file.as_deref(),
        &|k| std::env::var(k).ok(),
        &overrides,
    )?;
    // Dropped after the runtime (declared before it): the spans of the command are all
    // ended, and are exported before the process exits.
    let _telemetry = sluice_telemetry::install(
        logging,
        &sluice_telemetry::Traces {
            otlp_endpoint: config.telemetry.otlp_endpoint.clone(),
            capture_content: config.telemetry.capture_content,
        },
    )?;
    // `sluice mcp` on stdio serves one client on one pipe: one thread for the protocol (the
    // calls run on the call pool's threads either way). A second worker only moved each
    // answer to another thread before it was written: a futex wake per call (docs/benchmarks.md,
    // row 10).
    let one_client = matches!(&command, Command::Mcp(m) if m.listen.is_none());
    let runtime = if one_client {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    }
    .enable_all()
    .build()
    .context("failed to start the async runtime")?;
    let reload = ReloadOptions {
        config_file: options.config.file,
        overrides,
    };
    let mut out = std::io::stdout().lock();
    match command {
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
        Command::Session { command, .. } => {
            drop(out);
            return runtime.block_on(session::run(&config, command));
        }
        Command::Store { command, .. } => {
            drop(out);
            return runtime.block_on(store::run(&config, command));
        }
        Command::Call { tool, args, .. } => {
            let toolbox = runtime.block_on(sluice_wiring::load_tools(&config, Some(&tool)))?;
            let args = args.unwrap_or_default();
            let observation =
                runtime.block_on(toolbox.call(&tool, &args, config.agent.max_tool_result_bytes));
            writeln!(out, "{}", observation.text())?;
        }
        Command::Wit { dir } => return wit(dir),
        Command::Doctor(_) => unreachable!("run() handles doctor"),
        Command::New { .. }
        | Command::Token { .. }
        | Command::Build { .. }
        | Command::Dev { .. }
        | Command::Test { .. } => {
            unreachable!("run() handles the commands that read no configuration")
        }
        Command::Cache { command, .. } => {
            let value = cache::run(&config, command)?;
            serde_json::to_writer_pretty(&mut out, &value)?;
            writeln!(out)?;
        }
        Command::Tools { command: None, .. } => {
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
            ..
        } => {
            let value = runtime.block_on(tools::run(&config, command))?;
            serde_json::to_writer_pretty(&mut out, &value)?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    Ok(())
}
