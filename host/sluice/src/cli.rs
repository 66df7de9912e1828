//! The command line, as clap parses it. Values are checked later, once, by
//! `sluice_config::Config::resolve`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Sluice runs an LLM agent whose tools are sandboxed WebAssembly components, and caps
/// every tool result so that no result can overflow the model's context window.
#[derive(Debug, Parser)]
#[command(name = "sluice", version, propagate_version = true)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: Global,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Flags every command takes.
#[derive(Debug, Args)]
pub(crate) struct Global {
    /// Configuration file (sluice.toml). Flags override its values, and `SLUICE_*`
    /// environment variables override it too.
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,

    /// A directory the file tools may read: `DIR` (named after its last component) or
    /// `NAME=DIR`. Repeat for more; the first is the default. Default: the current
    /// directory.
    #[arg(long = "root", global = true, value_name = "DIR|NAME=DIR")]
    pub(crate) roots: Vec<String>,

    /// The cap on every tool result stored in the transcript, in bytes (1024 to 1048576;
    /// default 65536; env SLUICE_AGENT_MAX_TOOL_RESULT_BYTES).
    #[arg(long, global = true, value_name = "BYTES")]
    pub(crate) max_tool_result_bytes: Option<String>,

    /// A directory of tool components: every `*.wasm` in it is loaded, each under its
    /// sibling `*.toml` policy, or with nothing granted when there is none.
    #[arg(long = "tools", global = true, value_name = "DIR")]
    pub(crate) tools_dir: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Call one tool and print the exact observation that would be stored in the transcript.
    ///
    /// Exits 0 when the tool ran, even if it returned a tool error (the observation says
    /// so); non-zero for bad flags or configuration.
    Call {
        /// The tool's name (see `sluice tools`).
        tool: String,
        /// The arguments as a JSON object. Default `{}`.
        args: Option<String>,
    },
    /// List the tools with the JSON schemas of their arguments.
    Tools {
        #[command(subcommand)]
        command: Option<ToolsCommand>,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum ToolsCommand {
    /// Show what a component would provide (tools and their schemas) and what it imports,
    /// before granting it anything. Does not run it.
    Inspect {
        /// The component (`*.wasm`).
        file: PathBuf,
    },
}
