//! What each command does, given the parsed command line.

mod run;
mod session;

pub(crate) use run::RunEnded;

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use sluice_config::{Config, Overrides, ToolConfig, ToolSource};
use sluice_runtime::{
    ComponentSpec, EngineOptions, RootGrant, Source, ToolEngine, ToolPolicy, Toolbox,
};

use crate::cli::{Cli, Command, ToolsCommand};

/// Runs the command.
pub(crate) fn run(cli: Cli) -> anyhow::Result<()> {
    let (max_turns, auto_approve, model) = match &cli.command {
        Command::Run(r) => (r.max_turns.clone(), r.auto_approve, r.model.clone()),
        _ => (None, false, None),
    };
    let overrides = Overrides {
        roots: cli.global.roots.clone(),
        max_tool_result_bytes: cli.global.max_tool_result_bytes.clone(),
        tools_dir: cli.global.tools_dir.clone(),
        max_turns,
        auto_approve,
        store: cli.global.store.clone(),
        model,
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
    let mut out = std::io::stdout().lock();
    match cli.command {
        Command::Run(args) => {
            drop(out);
            return runtime.block_on(run::run(&config, args));
        }
        Command::Session { command } => {
            drop(out);
            return session::run(&config, command);
        }
        Command::Call { tool, args } => {
            let toolbox = load_tools(&config, Some(&tool))?;
            let args = args.unwrap_or_default();
            let observation =
                runtime.block_on(toolbox.call(&tool, &args, config.agent.max_tool_result_bytes));
            writeln!(out, "{}", observation.text)?;
        }
        Command::Tools { command: None } => {
            let toolbox = load_tools(&config, None)?;
            let tools: Vec<_> = toolbox.tools().collect();
            serde_json::to_writer_pretty(&mut out, &tools)?;
            writeln!(out)?;
        }
        Command::Tools {
            command: Some(ToolsCommand::Inspect { file }),
        } => {
            let source = component_source(&file)?;
            let inspection = sluice_runtime::inspect(&engine()?, &source, &ToolPolicy::default())?;
            serde_json::to_writer_pretty(&mut out, &inspection)?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    Ok(())
}

/// Loads the configured tools. With `only` naming a built-in tool, only that one is loaded,
/// so one call compiles one component.
pub(crate) fn load_tools(config: &Config, only: Option<&str>) -> anyhow::Result<Toolbox> {
    let single = only.and_then(|name| {
        config
            .tools
            .iter()
            .find(|t| matches!(&t.source, ToolSource::Builtin(b) if b == name))
    });
    let specs = match single {
        Some(t) => vec![spec(t)?],
        None => config
            .tools
            .iter()
            .map(spec)
            .collect::<anyhow::Result<_>>()?,
    };
    Ok(Toolbox::load(Arc::new(engine()?), &specs)?)
}

fn engine() -> anyhow::Result<ToolEngine> {
    Ok(ToolEngine::new(EngineOptions {
        cache_dir: cache_dir(),
        ..EngineOptions::default()
    })?)
}

/// The runtime's view of one configured component.
fn spec(t: &ToolConfig) -> anyhow::Result<ComponentSpec> {
    let source = match &t.source {
        ToolSource::Builtin(name) => {
            let (name, _) = sluice_builtins_name(name)?;
            Source::Builtin(name)
        }
        ToolSource::Component(path) => component_source(path)?,
    };
    let mut roots: Vec<RootGrant> = t
        .read
        .iter()
        .filter(|r| !t.write.iter().any(|w| w.name == r.name))
        .map(|r| RootGrant {
            name: r.name.clone(),
            dir: r.dir.clone(),
            write: false,
        })
        .collect();
    roots.extend(t.write.iter().map(|r| RootGrant {
        name: r.name.clone(),
        dir: r.dir.clone(),
        write: true,
    }));
    let policy = ToolPolicy {
        roots,
        env: t.env.clone(),
        memory_bytes: t.memory_mib << 20,
        timeout: Duration::from_millis(t.timeout_ms),
        sha256: t.sha256.clone(),
        description: t.description.clone(),
        destructive: t.destructive,
        ..ToolPolicy::default()
    };
    Ok(ComponentSpec { source, policy })
}

/// The `'static` name of built-in tool `name`.
fn sluice_builtins_name(name: &str) -> anyhow::Result<(&'static str, &'static [u8])> {
    sluice_runtime::builtins()
        .iter()
        .find(|(n, _)| *n == name)
        .copied()
        .with_context(|| format!("there is no built-in tool called {name:?}"))
}

/// A component file as a source, named by its path.
fn component_source(path: &std::path::Path) -> anyhow::Result<Source> {
    let wasm = std::fs::read(path)
        .with_context(|| format!("failed to read the component {}", path.display()))?;
    Ok(Source::Bytes {
        name: path.display().to_string(),
        wasm: Arc::new(wasm),
    })
}

/// Where compiled components are cached: `$SLUICE_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/sluice/components`, else `$HOME/.cache/sluice/components`.
/// Empty variables count as unset.
fn cache_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("SLUICE_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    let base = var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("sluice").join("components"))
}
