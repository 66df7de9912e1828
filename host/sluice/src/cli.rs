//! The command line, as clap parses it. Values are checked later, once, by
//! `sluice_config::Config::resolve`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// The command line of this process, parsed; exits with clap's message (and code 2) when
/// it does not parse, and prints help or the version when asked.
pub(crate) fn parse() -> Cli {
    Cli::parse()
}

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

    /// Tool calls that may run at once, on threads of their own (1 to 1024; default twice
    /// the cores; env SLUICE_RUNTIME_MAX_CONCURRENT_CALLS). A call that finds every slot taken
    /// waits up to `runtime.queue_timeout_ms`, then fails with a `busy` tool error.
    #[arg(long, global = true, value_name = "N")]
    pub(crate) max_concurrent_calls: Option<String>,

    /// Refuse to start when a tool component fails to load (`strict = true` in sluice.toml);
    /// a strict start also waits until every component has compiled. Without it, the failure
    /// is reported on stderr, `sluice tools` lists the component as unavailable with its
    /// reason, and the other tools start (while components compile in the background).
    #[arg(long, global = true)]
    pub(crate) strict: bool,

    /// The session database (SQLite). Default: `$SLUICE_STORE`, else
    /// `$XDG_DATA_HOME/sluice/sessions.db` (`~/.local/share/sluice/sessions.db`).
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) store: Option<PathBuf>,

    /// The session database in PostgreSQL, `postgres://USER:PASSWORD@HOST:PORT/DATABASE`,
    /// shared by several `sluice serve` replicas and the CLI (env SLUICE_STORE_URL; store.url
    /// in sluice.toml). Replaces the SQLite file; never shown with its password. Prefer the
    /// environment variable or the file to keep the password out of the process list.
    #[arg(long, global = true, value_name = "URL")]
    pub(crate) store_url: Option<String>,
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
    /// Run the agent on a prompt: the final answer goes to stdout, progress to stderr.
    ///
    /// With no provider configured the model is `scripted`: a deterministic, documented
    /// script that is NOT an LLM. For a prompt about a directory it lists it, greps for
    /// errors, pages through the most relevant file with the cursors, tails it, and answers
    /// with what it found, citing files and lines. It exists to run the real loop, tools and
    /// store with no network and no key.
    Run(RunArgs),
    /// Serve the operator API over HTTP: sessions, prompts and runs, event streams,
    /// cancellation, approvals, audits and run-time configuration (see docs/api.md
    /// and GET /openapi.json).
    ///
    /// On a loopback address a bearer token is optional (enforced when set); on any other
    /// address one is required (SLUICE_SERVER_TOKEN or --token-file), or Sluice refuses to
    /// start. Ctrl-C stops it: runs in progress end `aborted`.
    Serve(ServeArgs),
    /// Serve the tools over the Model Context Protocol, for MCP clients (Claude Code, Codex,
    /// goose, VS Code, …): stdio by default (stdout carries only the protocol; logs go to
    /// stderr), or Streamable HTTP at `POST /mcp` with --listen.
    ///
    /// The same configuration, roots, policies, limits, cap and key scan as `sluice call`:
    /// a `tools/call` answers with the observation `sluice call` prints, byte for byte.
    /// Destructive tools are served only with --allow-destructive (or `[mcp]
    /// allow_destructive = true`), and then run without Sluice's approval pause.
    Mcp(McpArgs),
    /// Sessions: list them, show a transcript, show the audit, resolve approvals.
    Session {
        #[command(subcommand)]
        command: SessionCommand,
    },
    /// The session store itself: `migrate` applies its schema migrations and exits.
    Store {
        #[command(subcommand)]
        command: StoreCommand,
    },
    /// Write the WIT a tool author builds against into DIR (default `wit`): the
    /// `sluice:tools` package (`sluice-tools.wit`) and the WASI 0.2 packages the host
    /// implements (`deps/*.wit`, WASI 0.2.12), so no Sluice build is needed to get them.
    ///
    /// A file already there with the same text is left as is; one with other text stops it
    /// before anything is written. Prints the paths written.
    Wit {
        /// The directory (created if missing).
        dir: Option<PathBuf>,
    },
    /// List the tools with the JSON schemas of their arguments.
    Tools {
        #[command(subcommand)]
        command: Option<ToolsCommand>,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum StoreCommand {
    /// Bring the store's schema up to this Sluice's version and say which versions it went
    /// from and to (every other command does this too, at start; run it alone before
    /// rolling out replicas of a new version). A schema newer than this Sluice knows is
    /// refused, untouched.
    Migrate,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ToolsCommand {
    /// Show what a component would provide (tools and their schemas) and what it imports,
    /// before granting it anything. Does not run it. For `oci://…`: also its digest and
    /// signature status (verified with --key; without one, how many signatures the
    /// registry holds, unchecked).
    Inspect {
        /// The component: a `*.wasm` file, or `oci://REGISTRY/REPOSITORY:TAG` (or
        /// `@sha256:…`).
        target: String,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Fetch a component from a registry into the cache, verify it (with --key), and pin
    /// its digest in sluice.lock (beside sluice.toml). Prints the digest, the pinned
    /// reference and the pull and verify times.
    Pull {
        /// `oci://REGISTRY/REPOSITORY:TAG` or `oci://REGISTRY/REPOSITORY@sha256:…`.
        reference: String,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Resolve the tags of every `oci://` component of the configuration again, fetch and
    /// verify what they name now, and rewrite sluice.lock.
    Update,
}

/// How to reach and trust a registry (for the commands that name a reference).
#[derive(Debug, Args)]
pub(crate) struct RegistryArgs {
    /// A public key (PEM, as `cosign generate-key-pair` writes cosign.pub) that must have
    /// signed the component's digest with cosign; repeat for more (any one may have
    /// signed). Keyless signatures are not checked.
    #[arg(long = "key", value_name = "FILE")]
    pub(crate) keys: Vec<PathBuf>,

    /// Speak plain HTTP to a registry that is not on this machine (loopback registries
    /// always get plain HTTP).
    #[arg(long)]
    pub(crate) insecure: bool,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The prompt. May be left out to resume a session (after an approval, or a crash).
    pub(crate) prompt: Option<String>,

    /// Continue this session instead of starting a new one. With a prompt, a session that
    /// does not exist is created under this name (1 to 64 ASCII letters, digits, `-`, `_`
    /// and `.`, starting with a letter or digit).
    #[arg(long, value_name = "ID")]
    pub(crate) session: Option<String>,

    /// The model: `openai:NAME`, `anthropic:NAME`, `bedrock:MODEL_ID`,
    /// `openai-compatible:NAME` (with `model.base_url`; also `ollama:`, `llamacpp:`, `vllm:`,
    /// `openrouter:`), `replay:FILE` (a JSONL script, for tests), or `scripted` (the offline
    /// default: a script, not an LLM). Overrides `[model]` in sluice.toml.
    #[arg(long, value_name = "PROVIDER:NAME")]
    pub(crate) model: Option<String>,

    /// Simulate a model context window of this many bytes: larger requests are rejected
    /// the way a provider rejects them (for trying out recovery offline).
    #[arg(long, value_name = "BYTES")]
    pub(crate) context_window_bytes: Option<usize>,

    /// The most model requests of this run (1 to 10000; default 50; env
    /// SLUICE_AGENT_MAX_TURNS).
    #[arg(long, value_name = "N")]
    pub(crate) max_turns: Option<String>,

    /// Run destructive tools without waiting for approval.
    #[arg(long)]
    pub(crate) auto_approve: bool,

    /// Print the run as JSON on stdout (status, answer, and the messages it added) instead
    /// of the answer alone.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The address to listen on, `IP:PORT` (port 0 picks a free one).
    #[arg(long, value_name = "IP:PORT", default_value = sluice_server::DEFAULT_LISTEN)]
    pub(crate) listen: std::net::SocketAddr,

    /// A file whose first line is the bearer token every request must carry. Default: the
    /// environment variable SLUICE_SERVER_TOKEN.
    #[arg(long, value_name = "FILE")]
    pub(crate) token_file: Option<PathBuf>,

    /// A host name (or IP address) the API answers to besides the listening address (and,
    /// on loopback, localhost); repeat for more. Requests naming any other `Host` answer
    /// 403, against DNS rebinding. Replaces `server.allowed_hosts` and env
    /// SLUICE_SERVER_ALLOWED_HOSTS (comma-separated).
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub(crate) allowed_hosts: Vec<String>,

    /// The largest request body, in bytes; larger bodies answer 413 (default 1048576).
    #[arg(long, value_name = "BYTES", default_value_t = sluice_server::DEFAULT_MAX_BODY_BYTES)]
    pub(crate) max_body_bytes: usize,

    /// The model, as for `sluice run --model` (default `scripted`, offline, not an LLM).
    #[arg(long, value_name = "PROVIDER:NAME")]
    pub(crate) model: Option<String>,

    /// The most model requests of a run (1 to 10000; default 50; env
    /// SLUICE_AGENT_MAX_TURNS); PUT /agent/config changes it while serving.
    #[arg(long, value_name = "N")]
    pub(crate) max_turns: Option<String>,

    /// Run destructive tools without waiting for approval; PUT /agent/config changes it
    /// while serving.
    #[arg(long)]
    pub(crate) auto_approve: bool,

    /// Serve destructive tools at POST /mcp too (env SLUICE_MCP_ALLOW_DESTRUCTIVE,
    /// `mcp.allow_destructive`); they then run without Sluice's approval pause, under the
    /// MCP client's own approval.
    #[arg(long)]
    pub(crate) allow_destructive: bool,

    /// Do not watch the tools directory and the configuration for changes (by default a
    /// change reloads the tools, with the same checks as at start, for the calls that
    /// start afterwards).
    #[arg(long)]
    pub(crate) no_reload: bool,
}

#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// Serve Streamable HTTP at `http://IP:PORT/mcp` instead of stdio (port 0 picks a free
    /// one). Beyond loopback a bearer token is required (SLUICE_SERVER_TOKEN or
    /// --token-file).
    #[arg(long, value_name = "IP:PORT")]
    pub(crate) listen: Option<std::net::SocketAddr>,

    /// With --listen: a file whose first line is the bearer token every request must carry.
    /// Default: the environment variable SLUICE_SERVER_TOKEN.
    #[arg(long, value_name = "FILE")]
    pub(crate) token_file: Option<PathBuf>,

    /// The largest request, in bytes: an HTTP body (413 beyond) or a stdio line (a
    /// JSON-RPC error beyond). Default 1048576.
    #[arg(long, value_name = "BYTES", default_value_t = sluice_server::DEFAULT_MAX_BODY_BYTES)]
    pub(crate) max_body_bytes: usize,

    /// Serve destructive tools (a `write` grant or `destructive = true`; env
    /// SLUICE_MCP_ALLOW_DESTRUCTIVE, `mcp.allow_destructive`). They then run without
    /// Sluice's approval pause: the MCP client's own approval applies (`destructiveHint`).
    #[arg(long)]
    pub(crate) allow_destructive: bool,

    /// On stdio: how long a write to stdout may make no progress before Sluice takes the
    /// client for gone and exits, in ms (default 30000).
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    pub(crate) write_timeout_ms: u64,

    /// Do not watch the tools directory and the configuration for changes (by default a
    /// change reloads the tools, with the same checks as at start, and clients get
    /// notifications/tools/list_changed).
    #[arg(long)]
    pub(crate) no_reload: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum SessionCommand {
    /// List sessions, newest first.
    List,
    /// Print a session's transcript as JSON.
    Show {
        /// The session.
        id: String,
    },
    /// Print the original of every message that was changed (shrunk), with when and why.
    Audit {
        /// The session.
        id: String,
    },
    /// Approve a destructive call that waits; the next `sluice run --session ID` runs it.
    Approve {
        /// The session.
        id: String,
        /// The call (as shown when the run paused).
        call_id: String,
    },
    /// Deny a destructive call that waits; the next run stores a denial as its result.
    Deny {
        /// The session.
        id: String,
        /// The call.
        call_id: String,
    },
}
