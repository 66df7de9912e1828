//! The command line, as clap parses it. Values are checked later, once, by
//! `sluice_config::Config::resolve`.

mod options;
mod tools;

use std::path::PathBuf;

use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::{ArgMatches, Args, CommandFactory as _, FromArgMatches as _, Parser, Subcommand};
use sluice_config::keys;

pub(crate) use options::{CallArgs, ConfigArgs, Options, StoreArgs, TlsArgs, ToolArgs};
pub(crate) use tools::{RegistryArgs, ToolsCommand};

/// The command line of this process, parsed; exits with clap's message (and code 2) when
/// it does not parse, and prints help or the version when asked.
pub(crate) fn parse() -> Cli {
    parse_from(std::env::args_os()).unwrap_or_else(|e| e.exit())
}

/// `args` (the program's name first) parsed: the shared options given before the command
/// and after it merged into [`Cli::options`], those after it winning. An option given before
/// a command that does not take it is refused, as clap refuses it after the command.
fn parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let mut command = Cli::command();
    let matches = command.try_get_matches_from_mut(args)?;
    check_before(&mut command, &matches)?;
    let mut cli = Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut command))?;
    let before = std::mem::take(&mut cli.options);
    cli.options = cli.command.take_options().or(before);
    Ok(cli)
}

/// Refuses an option given before the command (`sluice --store FILE wit`) that the command
/// (its last subcommand) does not take: its `--help` lists what it takes.
fn check_before(command: &mut clap::Command, matches: &ArgMatches) -> Result<(), clap::Error> {
    // Propagates the options a command gives its subcommands (`session`'s to `session list`).
    command.build();
    let mut leaf: &clap::Command = command;
    let mut path = vec![leaf.get_name().to_string()];
    let mut leaf_matches = matches;
    while let Some((name, sub)) = leaf_matches.subcommand() {
        let Some(next) = leaf.find_subcommand(name) else {
            break;
        };
        leaf = next;
        leaf_matches = sub;
        path.push(name.to_string());
    }
    let refused = command.get_arguments().find(|a| {
        matches.value_source(a.get_id().as_str()) == Some(ValueSource::CommandLine)
            && !leaf.get_arguments().any(|b| b.get_id() == a.get_id())
    });
    let Some(arg) = refused else {
        return Ok(());
    };
    let message = format!(
        "`sluice {}` does not take --{}; `sluice {} --help` lists what it takes",
        path[1..].join(" "),
        arg.get_long().unwrap_or(arg.get_id().as_str()),
        path[1..].join(" "),
    );
    Err(command.error(ErrorKind::ArgumentConflict, message))
}

/// Makes an option of a command with subcommands global to them, so that `sluice session
/// list --store FILE` and `sluice session --store FILE list` both take it.
fn global(arg: clap::Arg) -> clap::Arg {
    arg.global(true)
}

/// Sluice runs an LLM agent whose tools are sandboxed WebAssembly components, and caps
/// every tool result so that no result can overflow the model's context window.
#[derive(Debug, Parser)]
#[command(
    name = "sluice",
    version,
    propagate_version = true,
    after_help = "An option given before COMMAND applies to it when it takes it (`sluice COMMAND --help` lists what it takes); given both before and after COMMAND, the one after wins."
)]
pub(crate) struct Cli {
    /// The shared options: as given before the command, until [`parse_from`] merges in
    /// those given after it; from then on, every one given, wherever.
    #[command(flatten)]
    pub(crate) options: Options,
    /// The format of log lines on stderr: `text`, or `json` (one object a line, with the
    /// fields of the spans around each event). See docs/telemetry.md.
    #[arg(
        long,
        global = true,
        value_name = "FORMAT",
        env = "SLUICE_LOG_FORMAT",
        default_value = "text",
        value_parser = ["text", "json"],
    )]
    pub(crate) log_format: String,
    #[command(subcommand)]
    pub(crate) command: Command,
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
        #[command(flatten)]
        config: ConfigArgs,
        #[command(flatten)]
        tools: ToolArgs,
        #[command(flatten)]
        calls: CallArgs,
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
    #[command(mut_args = global)]
    Session {
        #[command(subcommand)]
        command: SessionCommand,
        #[command(flatten)]
        config: ConfigArgs,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// The session store itself: `migrate` applies its schema migrations and exits.
    #[command(mut_args = global)]
    Store {
        #[command(subcommand)]
        command: StoreCommand,
        #[command(flatten)]
        config: ConfigArgs,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// The cache of compiled components: `info` shows what it holds, `prune` removes what
    /// this Sluice cannot use and the artifacts used longest ago.
    #[command(mut_args = global)]
    Cache {
        #[command(subcommand)]
        command: CacheCommand,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Write a new tool project into DIR (default NAME): the WIT, a starter tool that pages a
    /// text file, its build script and `tool.toml`, a policy (`sluice.toml`), `tests.toml`
    /// and a README. Prints what to run next. See docs/authoring.md.
    New {
        /// The tool's name: lowercase words joined by `-` (`line-pager`); the model calls it
        /// with `_` (`line_pager`).
        name: String,
        /// The language: rust, python, js or c.
        #[arg(long, value_name = "LANG")]
        lang: String,
        /// Where to write it (missing or empty). Default: NAME.
        dir: Option<PathBuf>,
    },
    /// Build the tool project in DIR (default `.`): run the `[build]` command of `tool.toml` (its
    /// output on stderr) and check that it made a component. Prints its path, size and the
    /// build's time.
    Build {
        /// The project directory.
        dir: Option<PathBuf>,
    },
    /// Build and test the tool project in DIR (default `.`) now and again on every save of
    /// one of its sources: each round builds it, loads the new component and runs its
    /// tests.toml, printing each case's observation size and shape (whole, paged or cut).
    /// Ctrl-C stops it.
    Dev {
        /// The project directory.
        dir: Option<PathBuf>,
    },
    /// Run a tool's tests: each case of PLAN (default `tests.toml`; a directory means its
    /// tests.toml) called as the model would call it, at each cap, its observation checked.
    /// Prints one line per case and cap, then `N passed, N failed`; exits 1 when one failed.
    Test {
        /// The plan file, or a directory holding tests.toml.
        plan: Option<PathBuf>,
        /// Write each case's snapshot file instead of comparing it.
        #[arg(long)]
        bless: bool,
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
    /// Show the effective configuration, each value with its source (`default`,
    /// `FILE:LINE`, a `SLUICE_*` variable or a flag), every tool with its source, digest,
    /// signature, grants, limits and annotations, the components that did not load and why,
    /// and warnings. A configuration that does not resolve is reported with its error (exit
    /// 2). See docs/configuration.md#sluice-doctor.
    Doctor(DoctorArgs),
    /// Bearer tokens of named principals for `sluice serve` and `sluice mcp --listen`:
    /// `create` makes one. See docs/api.md#principals-and-scopes.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// List the tools with the JSON schemas of their arguments.
    // Its options are the listing's: its subcommands take their own.
    #[command(args_conflicts_with_subcommands = true)]
    Tools {
        #[command(subcommand)]
        command: Option<ToolsCommand>,
        #[command(flatten)]
        config: ConfigArgs,
        #[command(flatten)]
        tools: ToolArgs,
    },
}

impl Command {
    /// The shared options given after the command's name, moved out (the rest default).
    fn take_options(&mut self) -> Options {
        use std::mem::take;
        match self {
            Command::Call {
                config,
                tools,
                calls,
                ..
            } => Options {
                config: take(config),
                tools: take(tools),
                calls: take(calls),
                ..Options::default()
            },
            Command::Run(RunArgs {
                config,
                tools,
                calls,
                store,
                ..
            })
            | Command::Serve(ServeArgs {
                config,
                tools,
                calls,
                store,
                ..
            })
            | Command::Doctor(DoctorArgs {
                config,
                tools,
                calls,
                store,
                ..
            }) => Options {
                config: take(config),
                tools: take(tools),
                calls: take(calls),
                store: take(store),
            },
            Command::Mcp(McpArgs {
                config,
                tools,
                calls,
                ..
            }) => Options {
                config: take(config),
                tools: take(tools),
                calls: take(calls),
                ..Options::default()
            },
            Command::Session { config, store, .. } | Command::Store { config, store, .. } => {
                Options {
                    config: take(config),
                    store: take(store),
                    ..Options::default()
                }
            }
            Command::Cache { config, .. } => Options {
                config: take(config),
                ..Options::default()
            },
            Command::Wit { .. }
            | Command::Token { .. }
            | Command::New { .. }
            | Command::Build { .. }
            | Command::Dev { .. }
            | Command::Test { .. } => Options::default(),
            Command::Tools {
                command: None,
                config,
                tools,
            } => Options {
                config: take(config),
                tools: take(tools),
                ..Options::default()
            },
            Command::Tools {
                command:
                    Some(
                        ToolsCommand::Inspect { config, .. }
                        | ToolsCommand::Pull { config, .. }
                        | ToolsCommand::Update { config }
                        | ToolsCommand::Push { config, .. }
                        | ToolsCommand::Sign { config, .. },
                    ),
                ..
            } => Options {
                config: take(config),
                ..Options::default()
            },
            Command::Tools {
                command: Some(ToolsCommand::Keygen { .. }),
                ..
            } => Options::default(),
        }
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum CacheCommand {
    /// Print the cache's directory, its artifacts and bytes (this Sluice's, and the stale
    /// ones other versions or settings wrote) and its bound (`cache.max_bytes`).
    Info,
    /// Remove the stale artifacts and orphan digest records, then the artifacts used
    /// longest ago until at most --max-bytes are left. Prints what was removed and what is
    /// left. A running Sluice loses nothing: it compiles a removed component again.
    Prune {
        /// Keep at most this many bytes (0 empties the cache). Default: `cache.max_bytes`
        /// (512 MiB unless set).
        #[arg(long, value_name = "BYTES")]
        max_bytes: Option<u64>,
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

    /// `--max-turns`: its help, range and default from its declaration.
    #[arg(long, value_name = "N", help = keys::AGENT_MAX_TURNS.help("The most model requests of this run"))]
    pub(crate) max_turns: Option<String>,

    /// Run destructive tools without waiting for approval.
    #[arg(long)]
    pub(crate) auto_approve: bool,

    /// Print the run as JSON on stdout (status, answer, and the messages it added) instead
    /// of the answer alone.
    #[arg(long)]
    pub(crate) json: bool,

    #[command(flatten)]
    pub(crate) config: ConfigArgs,
    #[command(flatten)]
    pub(crate) tools: ToolArgs,
    #[command(flatten)]
    pub(crate) calls: CallArgs,
    #[command(flatten)]
    pub(crate) store: StoreArgs,
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

    /// `--max-turns`: its help, range and default from its declaration.
    #[arg(long, value_name = "N", help = format!(
        "{} PUT /agent/config changes it while serving.",
        keys::AGENT_MAX_TURNS.help("The most model requests of a run"),
    ))]
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

    #[command(flatten)]
    pub(crate) tls: TlsArgs,
    #[command(flatten)]
    pub(crate) config: ConfigArgs,
    #[command(flatten)]
    pub(crate) tools: ToolArgs,
    #[command(flatten)]
    pub(crate) calls: CallArgs,
    #[command(flatten)]
    pub(crate) store: StoreArgs,
}

#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// Print JSON (`settings`, `tools`, `warnings`, or `error`) instead of text.
    #[arg(long)]
    pub(crate) json: bool,

    /// The model, as for `sluice run --model`.
    #[arg(long, value_name = "PROVIDER:NAME")]
    pub(crate) model: Option<String>,

    /// The most model requests of a run, as for `sluice run --max-turns`.
    #[arg(long, value_name = "N")]
    pub(crate) max_turns: Option<String>,

    /// As for `sluice run --auto-approve`.
    #[arg(long)]
    pub(crate) auto_approve: bool,

    /// As for `sluice serve --allowed-host` (repeatable).
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub(crate) allowed_hosts: Vec<String>,

    /// As for `sluice mcp --allow-destructive`.
    #[arg(long)]
    pub(crate) allow_destructive: bool,

    #[command(flatten)]
    pub(crate) config: ConfigArgs,
    #[command(flatten)]
    pub(crate) tools: ToolArgs,
    #[command(flatten)]
    pub(crate) calls: CallArgs,
    #[command(flatten)]
    pub(crate) store: StoreArgs,
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

    #[command(flatten)]
    pub(crate) tls: TlsArgs,
    #[command(flatten)]
    pub(crate) config: ConfigArgs,
    #[command(flatten)]
    pub(crate) tools: ToolArgs,
    #[command(flatten)]
    pub(crate) calls: CallArgs,
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

/// `sluice token …`.
#[derive(Debug, Subcommand)]
pub(crate) enum TokenCommand {
    /// Make a token for principal NAME with the scopes given. The token goes to stderr, once;
    /// stdout gets the `[[server.tokens]]` entry for sluice.toml, which holds only the token's
    /// SHA-256 (so `sluice token create ci-bot --scopes sessions:read >> sluice.toml` is safe).
    Create {
        /// The principal's name: 1 to 64 of A-Z, a-z, 0-9, `_` and `-` (not `admin`). It owns
        /// the sessions the token creates and is the actor the audit records.
        name: String,
        /// Comma-separated scopes: sessions:read, sessions:write, approvals, config,
        /// tools:call, metrics, admin, or tools:call:TOOL for one tool.
        #[arg(long, value_delimiter = ',', required = true, value_name = "SCOPES")]
        scopes: Vec<String>,
    },
}
