//! `sluice cache info|prune`: the cache of compiled components.

use anyhow::Context as _;
use serde_json::Value;
use sluice_config::Config;

use crate::cli::CacheCommand;

/// Runs one `sluice cache` subcommand and returns what it prints.
pub(crate) fn run(config: &Config, command: CacheCommand) -> anyhow::Result<Value> {
    let engine = sluice_wiring::engine_for(config)?;
    let no_cache = || {
        anyhow::anyhow!(
            "there is no compiled-component cache: SLUICE_CACHE_DIR, XDG_CACHE_HOME and HOME are all unset, or the directory was refused (see the warning above)"
        )
    };
    let value = match command {
        CacheCommand::Info => serde_json::to_value(engine.cache_usage().ok_or_else(no_cache)?),
        CacheCommand::Prune { max_bytes } => {
            let bound = max_bytes
                .or(config.cache_max_bytes)
                .unwrap_or(sluice_runtime::engine::DEFAULT_MAX_CACHE_BYTES);
            serde_json::to_value(engine.prune_cache(bound).ok_or_else(no_cache)?)
        }
    };
    value.context("cannot show the cache")
}
