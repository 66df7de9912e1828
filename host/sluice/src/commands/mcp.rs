//! `sluice mcp`: the tools over MCP, on stdio or (with `--listen`) Streamable HTTP.

use sluice_config::Config;
use sluice_mcp::StdioOptions;
use sluice_server::reload::ReloadOptions;
use sluice_server::{ServeOptions, oauth_verifier, token_from};

use crate::cli::McpArgs;

/// Serves until stdin ends (stdio) or Ctrl-C (HTTP).
pub(crate) async fn run(
    config: &Config,
    args: McpArgs,
    reload: ReloadOptions,
) -> anyhow::Result<()> {
    let options = match args.listen {
        Some(listen) => {
            let options = ServeOptions {
                listen,
                // As `serve` reads it: a token that is not UTF-8 is refused, not unset.
                token: token_from(args.token_file.as_deref(), &|k| {
                    std::env::var_os(k).map(|v| v.to_string_lossy().into_owned())
                })?,
                max_body_bytes: args.max_body_bytes,
                tokens: config.server.tokens.clone(),
                oauth: config
                    .server
                    .oauth
                    .as_ref()
                    .map(|o| oauth_verifier(o, listen, config.server.tls.is_some()))
                    .transpose()?,
                allowed_hosts: config.server.allowed_hosts.clone(),
                limits: config.server.limits.clone(),
                metrics: None,
                tls: None,
            };
            // Refuse a bad address/token pairing before loading anything.
            options.check()?;
            Some(options)
        }
        None if args.tls.tls_cert.is_some() => {
            anyhow::bail!(
                "--tls-cert and --tls-key apply to `sluice mcp --listen IP:PORT` only (stdio has no listener)"
            )
        }
        None => None,
    };
    // TLS files that cannot be served stop the start before the tools load.
    let tls = super::metrics::tls(config)?;
    // Over stdio only `telemetry.metrics_listen` serves them.
    let metrics = super::metrics::start(config, tls.as_ref()).await?;
    let options = options.map(|o| ServeOptions {
        metrics,
        tls: tls.clone(),
        ..o
    });
    let (toolbox, _catalog, _reloader) =
        super::serve::live_tools(config, reload, !args.no_reload, args.token_file.as_deref())
            .await?;
    let server = sluice_server::mcp::mcp_server(config, toolbox);
    tracing::info!(tools = ?server.tool_names(), "serving MCP");
    match options {
        None => {
            let stdio = StdioOptions {
                max_request_bytes: args.max_body_bytes,
                write_timeout: std::time::Duration::from_millis(args.write_timeout_ms.max(1)),
                ..StdioOptions::default()
            };
            sluice_mcp::serve_stdio(server, stdio).await?;
        }
        Some(options) => {
            let scheme = sluice_server::tls::scheme(options.tls.as_ref());
            sluice_server::mcp::serve_mcp(
                server,
                options,
                |addr| {
                    #[allow(clippy::print_stderr)]
                    {
                        eprintln!("sluice: serving MCP on {scheme}://{addr}/mcp (Streamable HTTP)");
                    }
                },
                async {
                    if tokio::signal::ctrl_c().await.is_err() {
                        std::future::pending::<()>().await;
                    }
                },
            )
            .await?;
        }
    }
    Ok(())
}
