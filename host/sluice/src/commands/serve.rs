//! `sluice serve`: the operator API over HTTP, wired from the same configuration as
//! `sluice run`.

use std::sync::Arc;

use anyhow::Context as _;
use sluice_config::Config;
use sluice_server::{ServeOptions, Server, token_from, wiring};

use crate::cli::ServeArgs;

/// Serves until Ctrl-C; the address goes to stderr once listening.
pub(crate) async fn run(config: &Config, args: ServeArgs) -> anyhow::Result<()> {
    // A token that is not UTF-8 reads with U+FFFD in it, which the token check refuses
    // (rather than reading as unset and serving without one).
    let token = token_from(args.token_file.as_deref(), &|k| {
        std::env::var_os(k).map(|v| v.to_string_lossy().into_owned())
    })?;
    let options = ServeOptions {
        listen: args.listen,
        token,
        max_body_bytes: args.max_body_bytes,
        allowed_hosts: config.server.allowed_hosts.clone(),
    };
    // Refuse a bad address/token pairing before loading anything.
    options.check()?;
    let tools = Arc::new(wiring::load_tools(config, None).context("failed to load the tools")?);
    let services = wiring::services_with_tools(config, tools.clone())
        .await
        .context("failed to set up the agent")?;
    let mcp = wiring::mcp_server(config, tools);
    let bound = Server::new(services, options)?.with_mcp(mcp).bind().await?;
    #[allow(clippy::print_stderr)]
    {
        eprintln!(
            "sluice: serving the operator API on http://{} (model {}; GET /openapi.json describes it; MCP at POST /mcp)",
            bound.local_addr(),
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
