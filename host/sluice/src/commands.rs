//! What each command does, given the parsed command line.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use sluice_config::{Config, Overrides};
use sluice_runtime::{ComponentSpec, EngineOptions, Source, ToolEngine, ToolPolicy, Toolbox};

use crate::cli::{Cli, Command};

/// The built-in tools, in the order they are offered.
const BUILTIN_TOOLS: [&str; 4] = ["read_file", "tail_file", "grep_files", "list_dir"];

/// Runs the command.
pub(crate) fn run(cli: Cli) -> anyhow::Result<()> {
    let overrides = Overrides {
        roots: cli.global.roots.clone(),
        max_tool_result_bytes: cli.global.max_tool_result_bytes.clone(),
    };
    let config = Config::resolve(
        cli.global.config.as_deref(),
        &|k| std::env::var(k).ok(),
        &overrides,
    )?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("failed to start the async runtime")?;
    match cli.command {
        Command::Call { tool, args } => {
            let toolbox = builtin_toolbox(&config, Some(&tool))?;
            let args = args.unwrap_or_default();
            let observation =
                runtime.block_on(toolbox.call(&tool, &args, config.agent.max_tool_result_bytes));
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", observation.text)?;
            out.flush()?;
        }
        Command::Tools => {
            let toolbox = builtin_toolbox(&config, None)?;
            let tools: Vec<_> = toolbox.tools().collect();
            let mut out = std::io::stdout().lock();
            serde_json::to_writer_pretty(&mut out, &tools)?;
            writeln!(out)?;
        }
    }
    Ok(())
}

/// The built-in tools over the configured roots. With `only`, just that tool is loaded, so
/// one call compiles one component (a name that is no tool loads none, and the call answers
/// with an unknown-tool observation).
fn builtin_toolbox(config: &Config, only: Option<&str>) -> anyhow::Result<Toolbox> {
    let engine = Arc::new(ToolEngine::new(EngineOptions {
        cache_dir: cache_dir(),
        ..EngineOptions::default()
    })?);
    let policy =
        ToolPolicy::read_only(config.roots.iter().map(|r| (r.name.clone(), r.dir.clone())));
    let specs: Vec<ComponentSpec> = BUILTIN_TOOLS
        .iter()
        .filter(|name| only.is_none_or(|o| o == **name))
        .map(|name| ComponentSpec {
            source: Source::Builtin(name),
            policy: policy.clone(),
        })
        .collect();
    Ok(Toolbox::load(engine, &specs)?)
}

/// Where compiled components are cached: `$SLUICE_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/sluice/components`, else `$HOME/.cache/sluice/components`.
fn cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("SLUICE_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("sluice").join("components"))
}
