//! `sluice serve`: the operator API over HTTP, wired from the same configuration as
//! `sluice run`, with the tools reloaded live when their files change.

use std::sync::Arc;

use anyhow::Context as _;
use sluice_config::Config;
use sluice_runtime::LiveToolbox;
use sluice_server::reload::{self, ReloadOptions, Reloader};
use sluice_server::{ServeOptions, Server, oauth_verifier, token_from};
use sluice_wiring::ToolLoader;
use sluice_wiring::report::ToolCatalog;

use crate::cli::ServeArgs;

/// Serves until Ctrl-C; the address goes to stderr once listening.
pub(crate) async fn run(
    config: &Config,
    args: ServeArgs,
    reload: ReloadOptions,
) -> anyhow::Result<()> {
    // A token that is not UTF-8 reads with U+FFFD in it, which the token check refuses
    // (rather than reading as unset and serving without one).
    let token = token_from(args.token_file.as_deref(), &|k| {
        std::env::var_os(k).map(|v| v.to_string_lossy().into_owned())
    })?;
    let options = ServeOptions {
        listen: args.listen,
        token,
        max_body_bytes: args.max_body_bytes,
        tokens: config.server.tokens.clone(),
        oauth: config
            .server
            .oauth
            .as_ref()
            .map(|o| oauth_verifier(o, args.listen, config.server.tls.is_some()))
            .transpose()?,
        allowed_hosts: config.server.allowed_hosts.clone(),
        limits: config.server.limits.clone(),
        metrics: None,
        tls: None,
    };
    // Refuse a bad address/token pairing, or TLS files that cannot be served, before
    // loading anything.
    options.check()?;
    let tls = super::metrics::tls(config)?;
    let options = ServeOptions {
        metrics: super::metrics::start(config, tls.as_ref()).await?,
        tls,
        ..options
    };
    let (tools, catalog, _reloader) =
        live_tools(config, reload, !args.no_reload, args.token_file.as_deref()).await?;
    let services = sluice_wiring::services_with_tools(config, tools.clone())
        .await
        .context("failed to set up the agent")?;
    let mcp = sluice_server::mcp::mcp_server(config, tools);
    let scheme = sluice_server::tls::scheme(options.tls.as_ref());
    let bound = Server::new(services, options)?
        .with_mcp(mcp)
        .with_tool_catalog(catalog)
        .bind()
        .await?;
    let addr = bound.local_addr();
    #[allow(clippy::print_stderr)]
    {
        eprintln!(
            "sluice: serving the operator API on {scheme}://{addr} (model {}; GET /openapi.json describes it; MCP at POST /mcp; the console at {scheme}://{addr}/)",
            config.model.provider
        );
    }
    bound
        .serve(async {
            // If the signal cannot be watched, serve until killed.
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        })
        .await?;
    Ok(())
}

/// Loads the tools and, when `watch`, starts reloading them live (the reloader stops when
/// dropped); with them, their reports (`GET /tools`), which each reload that swaps the
/// tools sets anew. No tool reads `token_file` (docs/keys.md#secret-files).
pub(crate) async fn live_tools(
    config: &Config,
    reload: ReloadOptions,
    watch: bool,
    token_file: Option<&std::path::Path>,
) -> anyhow::Result<(Arc<LiveToolbox>, ToolCatalog, Option<Reloader>)> {
    let loader = ToolLoader::compiling_with(config, sluice_wiring::server_compilers(config))?
        .refusing(token_file);
    let loaded = loader
        .load_checked(config, None)
        .await
        .context("failed to load the tools")?;
    let served = reload::Served::of(&loaded);
    let catalog = served.catalog.clone();
    let live = Arc::new(LiveToolbox::new(loaded.toolbox));
    let reloader = if watch {
        Some(reload::watch(
            config.clone(),
            reload,
            loader,
            live.clone(),
            served,
        )?)
    } else {
        None
    };
    Ok((live, catalog, reloader))
}
