//! `sluice doctor`: the effective configuration with the source of every value, every tool
//! with what it may do, the components that did not load, and warnings
//! (docs/configuration.md#sluice-doctor).

use std::io::Write as _;
use std::path::Path;

use anyhow::Context as _;
use serde_json::json;
use sluice_config::{Config, Explained, Overrides, ProviderName};
use sluice_wiring::report::ToolReport;

/// The share of `cache.max_bytes` past which the cache is "near its limit".
const CACHE_NEAR_PERCENT: u64 = 90;

/// Prints the report; a configuration that does not resolve is an error (exit 2), printed
/// as `{"error": …}` with `json`.
pub(crate) fn run(file: Option<&Path>, overrides: &Overrides, json: bool) -> anyhow::Result<()> {
    let explained = sluice_config::check_environment(&|k| std::env::var_os(k)).and_then(|()| {
        Config::explain(
            file,
            &|k| std::env::var(k).ok(),
            overrides,
            &sluice_store::redact_url,
        )
    });
    let explained = match explained {
        Ok(e) => e,
        Err(e) if json => {
            let mut out = std::io::stdout().lock();
            serde_json::to_writer_pretty(&mut out, &json!({"error": e.to_string()}))?;
            writeln!(out)?;
            return Err(e.into());
        }
        Err(e) => return Err(e.into()),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("failed to start the async runtime")?;
    let config = &explained.config;
    let loader =
        sluice_wiring::ToolLoader::compiling_with(config, sluice_wiring::server_compilers(config))?;
    let loaded = runtime
        .block_on(loader.load_checked(config, None))
        .context("failed to load the tools")?;
    let cache = loader.engine().cache_usage();
    let warnings = warnings(config, &loaded.report, cache.as_ref(), &|k| {
        std::env::var_os(k).is_some_and(|v| !v.is_empty())
    });
    let mut out = std::io::stdout().lock();
    if json {
        let value = json!({
            "configFile": file.map(|f| f.display().to_string()),
            "settings": explained.settings,
            "tools": loaded.report,
            "warnings": warnings,
        });
        serde_json::to_writer_pretty(&mut out, &value)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", text(file, &explained, &loaded.report, &warnings))?;
    }
    out.flush()?;
    Ok(())
}

/// The report as text: one line per key, a block per tool, then the warnings.
fn text(
    file: Option<&Path>,
    explained: &Explained,
    tools: &[ToolReport],
    warnings: &[String],
) -> String {
    let mut s = String::new();
    let file = file.map_or("no configuration file".to_string(), |f| {
        f.display().to_string()
    });
    s.push_str(&format!("configuration ({file}):\n"));
    let width = explained
        .settings
        .iter()
        .map(|x| x.key.len() + x.value.len() + 3)
        .max()
        .unwrap_or(0)
        .min(72);
    for x in &explained.settings {
        let line = format!("{} = {}", x.key, x.value);
        s.push_str(&format!("  {line:<width$}  ({})\n", x.origin));
    }
    s.push_str("\ntools:\n");
    for t in tools {
        let none = |v: &[String]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        if !t.available {
            s.push_str(&format!(
                "  {} ({} {}): unavailable: {}\n",
                t.name,
                t.source,
                t.component,
                t.reason.as_deref().unwrap_or("")
            ));
            continue;
        }
        let annotation = match (t.annotations.destructive, t.annotations.read_only) {
            (true, _) => "destructive",
            (false, true) => "read-only",
            (false, false) => "not destructive",
        };
        s.push_str(&format!(
            "  {} ({} {}) {}, signature: {}, {annotation}{}\n",
            t.name,
            t.source,
            t.component,
            t.digest.as_deref().unwrap_or("no digest"),
            t.signature,
            if t.annotations.open_world {
                ", open world"
            } else {
                ""
            },
        ));
        s.push_str(&format!(
            "    read: {}; write: {}; http: {}{}{}\n",
            none(&t.grants.read),
            none(&t.grants.write),
            none(&t.grants.http),
            if t.grants.http.is_empty() {
                String::new()
            } else if t.grants.http_methods.is_empty() {
                " (any method)".to_string()
            } else {
                format!(" ({})", t.grants.http_methods.join(", "))
            },
            if t.grants.tool_calls {
                "; calls the other tools"
            } else {
                ""
            },
        ));
        s.push_str(&format!(
            "    limits: memory {} MiB, timeout {} ms, HTTP response {} bytes\n",
            t.limits.memory_mib, t.limits.timeout_ms, t.limits.http_max_response_bytes
        ));
    }
    s.push_str("\nwarnings:\n");
    if warnings.is_empty() {
        s.push_str("  none\n");
    }
    for w in warnings {
        s.push_str(&format!("  - {w}\n"));
    }
    s
}

/// What an operator should look at: tools that may reach the network or write, roots that
/// do not exist, components that did not load, a cache near its bound, a model without its
/// key. `key_set` says whether an environment variable is set (and not empty).
fn warnings(
    config: &Config,
    tools: &[ToolReport],
    cache: Option<&sluice_runtime::engine::CacheUsage>,
    key_set: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let mut w = Vec::new();
    for r in &config.roots {
        if !r.dir.is_dir() {
            w.push(format!(
                "root {} ({}) does not exist or is not a directory",
                r.name,
                r.dir.display()
            ));
        }
    }
    for t in tools.iter().filter(|t| t.available) {
        if !t.grants.http.is_empty() {
            w.push(format!(
                "tool {} may send HTTP requests to {} (http in its policy)",
                t.name,
                t.grants.http.join(", ")
            ));
        }
        if !t.grants.write.is_empty() {
            w.push(format!(
                "tool {} may write {} (write in its policy)",
                t.name,
                t.grants.write.join(", ")
            ));
        }
    }
    for t in tools.iter().filter(|t| !t.available) {
        w.push(format!(
            "{} ({}) did not load: its tools are not offered",
            t.name, t.component
        ));
    }
    if let Some(c) = cache
        && c.max_bytes > 0
        && c.bytes.saturating_mul(100) >= c.max_bytes.saturating_mul(CACHE_NEAR_PERCENT)
    {
        w.push(format!(
            "the compiled-component cache ({}) holds {} of its {} bytes (cache.max_bytes): the components used longest ago are being evicted; raise cache.max_bytes or run `sluice cache prune`",
            c.dir.display(),
            c.bytes,
            c.max_bytes
        ));
    }
    let m = &config.model;
    if m.provider != ProviderName::Scripted && m.provider != ProviderName::Replay {
        let var = m
            .api_key_env
            .as_deref()
            .or_else(|| m.provider.default_key_env());
        match (&m.api_key_file, var) {
            (Some(f), _) if !f.is_file() => w.push(format!(
                "model {}: its key file {} (model.api_key_file) does not exist",
                m.provider,
                f.display()
            )),
            (None, Some(var)) if !key_set(var) => w.push(format!(
                "model {}: no API key: {var} is not set (model.api_key_env, model.api_key_file)",
                m.provider
            )),
            _ => {}
        }
    }
    w
}
