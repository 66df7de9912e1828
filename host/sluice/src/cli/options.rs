//! The options several commands share, in groups: each command flattens the groups it
//! uses, so its `--help` lists those only, and the top level flattens them all, for the
//! options given before the command.

use std::path::PathBuf;

use clap::Args;
use sluice_config::keys;

/// The options several commands share, in groups; each command takes the groups it uses.
#[derive(Debug, Default, Args)]
pub(crate) struct Options {
    #[command(flatten)]
    pub(crate) config: ConfigArgs,
    #[command(flatten)]
    pub(crate) tools: ToolArgs,
    #[command(flatten)]
    pub(crate) calls: CallArgs,
    #[command(flatten)]
    pub(crate) store: StoreArgs,
}

impl Options {
    /// These options, each taken from `before` where it was not given here.
    pub(super) fn or(self, before: Options) -> Options {
        Options {
            config: ConfigArgs {
                file: self.config.file.or(before.config.file),
            },
            tools: ToolArgs {
                roots: if self.tools.roots.is_empty() {
                    before.tools.roots
                } else {
                    self.tools.roots
                },
                tools_dir: self.tools.tools_dir.or(before.tools.tools_dir),
                strict: self.tools.strict || before.tools.strict,
            },
            calls: CallArgs {
                max_tool_result_bytes: self
                    .calls
                    .max_tool_result_bytes
                    .or(before.calls.max_tool_result_bytes),
                max_concurrent_calls: self
                    .calls
                    .max_concurrent_calls
                    .or(before.calls.max_concurrent_calls),
            },
            store: StoreArgs {
                store: self.store.store.or(before.store.store),
                store_url: self.store.store_url.or(before.store.store_url),
            },
        }
    }
}

/// The configuration file: every command but `wit`.
#[derive(Debug, Default, Args)]
pub(crate) struct ConfigArgs {
    /// Configuration file (sluice.toml). Flags override its values, and `SLUICE_*`
    /// environment variables override it too.
    #[arg(long = "config", value_name = "FILE")]
    pub(crate) file: Option<PathBuf>,
}

/// Which tools load, and what they may read: the commands that load tools (`call`, `run`,
/// `serve`, `mcp`, `tools`).
#[derive(Debug, Default, Args)]
pub(crate) struct ToolArgs {
    /// A directory the file tools may read: `DIR` (named after its last component) or
    /// `NAME=DIR`. Repeat for more; the first is the default. Default: the current
    /// directory.
    #[arg(long = "root", value_name = "DIR|NAME=DIR")]
    pub(crate) roots: Vec<String>,

    /// A directory of tool components: every `*.wasm` in it is loaded, each under its
    /// sibling `*.toml` policy, or with nothing granted when there is none.
    #[arg(long = "tools", value_name = "DIR")]
    pub(crate) tools_dir: Option<PathBuf>,

    /// Refuse to start when a tool component fails to load (`strict = true` in sluice.toml);
    /// a strict start also waits until every component has compiled. Without it, the failure
    /// is reported on stderr, `sluice tools` lists the component as unavailable with its
    /// reason, and the other tools start (while components compile in the background).
    #[arg(long)]
    pub(crate) strict: bool,
}

/// The limits of tool calls: the commands that call tools (`call`, `run`, `serve`, `mcp`).
#[derive(Debug, Default, Args)]
pub(crate) struct CallArgs {
    /// `--max-tool-result-bytes`: its help, range and default from its declaration.
    #[arg(long, value_name = "BYTES", help = keys::AGENT_MAX_TOOL_RESULT_BYTES.help(
        "The cap on every tool result stored in the transcript, in bytes"
    ))]
    pub(crate) max_tool_result_bytes: Option<String>,

    /// `--max-concurrent-calls`: its help, range and default from its declaration.
    #[arg(long, value_name = "N", help = format!(
        "{} A call that finds every slot taken waits up to `{}`, then fails with a `busy` tool error.",
        keys::RUNTIME_MAX_CONCURRENT_CALLS.help("Tool calls that may run at once, on threads of their own"),
        keys::RUNTIME_QUEUE_TIMEOUT_MS.name,
    ))]
    pub(crate) max_concurrent_calls: Option<String>,
}

/// The session store: the commands that read or write sessions (`run`, `serve`, `session`,
/// `store`).
#[derive(Debug, Default, Args)]
pub(crate) struct StoreArgs {
    /// The session database (SQLite). Default: `$SLUICE_STORE`, else
    /// `$XDG_DATA_HOME/sluice/sessions.db` (`~/.local/share/sluice/sessions.db`).
    #[arg(long, value_name = "FILE")]
    pub(crate) store: Option<PathBuf>,

    /// The session database in PostgreSQL, `postgres://USER:PASSWORD@HOST:PORT/DATABASE`,
    /// shared by several `sluice serve` replicas and the CLI (env SLUICE_STORE_URL; store.url
    /// in sluice.toml). Replaces the SQLite file; never shown with its password. Prefer the
    /// environment variable or the file to keep the password out of the process list.
    #[arg(long, value_name = "URL")]
    pub(crate) store_url: Option<String>,
}

/// HTTPS on the listener: `serve` and `mcp --listen` (and `telemetry.metrics_listen`).
#[derive(Debug, Default, Args)]
pub(crate) struct TlsArgs {
    /// Serve HTTPS with this certificate chain (PEM, the server's own certificate first),
    /// reloaded when the file changes; with --tls-key. Replaces `server.tls.cert_file`.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub(crate) tls_cert: Option<PathBuf>,

    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1). No tool may read it.
    /// Replaces `server.tls.key_file`.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub(crate) tls_key: Option<PathBuf>,
}
