//! The agent loop (docs/agent-loop.md#a-run): a run asks the model, stores its reply, runs
//! the tool calls it asks for in order, stores one capped observation per call, and repeats
//! until the model answers without tools, `maxTurns` runs out, the run is cancelled, or it
//! fails.
//!
//! What makes a dead session impossible:
//! - every observation is capped before it is stored ([`Tools::call`] returns capped
//!   observations; the runtime applies the key scan and the cap in one place);
//! - the system prompt travels in the request's system slot and is never stored;
//! - when the backend says the request does not fit the context window
//!   ([`sluice_models::BackendError::context_window_exceeded`]), the loop shrinks every
//!   observation over [`SHRINK_ABOVE_BYTES`] in the newest group of tool messages that has
//!   one, and, when the rejection states the prompt's size and the limit, further groups and
//!   smaller heads ([`SHRINK_FURTHER_BYTES`]) as far as the retry needs to fit; it keeps the
//!   originals in the audit and retries once ([`recovery`]). No tool runs again. The shrink
//!   persists, so later requests of the session fit too, and a session made unusable by an
//!   oversized result stored earlier recovers the same way.
//!
//! [`Outcome::requests`] counts the HTTP requests the backend reports (retries included) and
//! [`Outcome::usage`] the tokens its replies reported.
//!
//! A session has at most one run at a time, across every process sharing the store: a run
//! is claimed together with its prompt ([`Agent::claim`], [`sluice_store::Store::begin_run`])
//! before it starts, so a prompt is either accepted with its run or refused. Calls of
//! destructive tools wait for the operator's decision unless `auto_approve` is set; the next
//! run executes or denies them and stores one observation each.
//!
//! # Example
//!
//! `examples/one_run.rs` (`cargo run -p sluice-agent --example one_run`) runs the loop once,
//! offline: [`sluice_models::ScriptedModel`] (a fixed sequence of tool calls, not an LLM), a
//! [`sluice_store::SqliteStore`] in a temporary directory and the built-in file tools
//! (`sluice-builtins`, loaded into a [`sluice_runtime::Toolbox`]) over a root holding one small
//! file. It builds an [`Agent`] with [`Agent::new`], creates a session, calls [`Agent::run`]
//! with one prompt, then prints the stored transcript and the [`Outcome`]. Its steps are tested
//! in `tests/all/one_run.rs`, which asserts the answer and the observations exactly.

mod metrics;
mod model_turn;
pub mod recovery;
mod run;
mod run_context;
mod spans;
mod tool_turn;
mod tools;

use std::sync::Arc;

use sluice_models::Backend;
use sluice_protocol::SessionStatus;
use sluice_store::{Store, StoreError};

pub use recovery::{SHRINK_ABOVE_BYTES, SHRINK_FURTHER_BYTES};
pub use run::Claim;
pub use tools::Tools;

pub use sluice_protocol::limits::DEFAULT_MAX_TURNS;

/// What cancels a run ([`Agent::run`], [`Agent::run_claimed`]): tokio-util's token,
/// re-exported so a caller needs no `tokio-util` dependency of its own (nor a matching
/// version) to pass one.
pub use tokio_util::sync::CancellationToken;

/// The system prompt when none is configured.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are Sluice, an agent that answers questions about files by calling the tools provided. Every tool result is capped; the file tools return one page at a time with cursors (nextOffset, nextLine, nextCursor) to continue. Read only what you need, then answer concisely, citing files and line numbers.";

/// How a run behaves.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The system prompt, sent in each request's system slot.
    pub system_prompt: String,
    /// `agent.max_tool_result_bytes`: the cap on every observation, in bytes.
    pub max_tool_result_bytes: u32,
    /// The most model turns of one run (default 50), not counting the one retry after a
    /// context-window rejection nor HTTP retries. Running out ends the run `completed` with
    /// lastError `Reached maxTurns=<n> without a final answer.` (docs/agent-loop.md#maxturns).
    pub max_turns: u32,
    /// Run destructive tools without waiting for approval.
    pub auto_approve: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            system_prompt: DEFAULT_SYSTEM_PROMPT.to_string(),
            max_tool_result_bytes: sluice_protocol::limits::DEFAULT_MAX_TOOL_RESULT_BYTES,
            max_turns: DEFAULT_MAX_TURNS,
            auto_approve: false,
        }
    }
}

/// Something that happened during a run, for progress displays and event streams. As JSON:
/// `type` the variant in snake_case, the fields in camelCase (`{"type":"tool_finished",
/// "callId":…}`), as the operator API streams them.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum RunEvent {
    /// A request went to the model.
    ModelRequest {
        /// Size of the request, in bytes of its JSON.
        bytes: usize,
    },
    /// The model answered.
    ModelReply {
        /// Tool calls it asked for.
        tool_calls: usize,
    },
    /// A tool call is about to run.
    ToolStarted {
        /// The call's id.
        call_id: String,
        /// The tool.
        name: String,
    },
    /// A tool call's observation was stored.
    ToolFinished {
        /// The call's id.
        call_id: String,
        /// The tool.
        name: String,
        /// Bytes stored.
        bytes: usize,
        /// Bytes before the cap.
        full_bytes: usize,
        /// The cap cut it.
        truncated: bool,
        /// The result said more can be had (a page with a cursor).
        paged: bool,
        /// The observation is an error.
        error: bool,
    },
    /// Observations were shrunk after a context-window rejection.
    Shrunk {
        /// Positions of the shrunk messages.
        seqs: Vec<u64>,
        /// Bytes before and after, summed.
        from_bytes: usize,
        /// Bytes after.
        to_bytes: usize,
    },
    /// A destructive call waits for the operator.
    AwaitingApproval {
        /// The call's id.
        call_id: String,
        /// The tool.
        name: String,
    },
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    /// The session.
    pub session_id: String,
    /// Its status after the run.
    pub status: SessionStatus,
    /// Why it stopped early or failed, if it did.
    pub last_error: Option<String>,
    /// The model's final answer, when it gave one.
    pub answer: Option<String>,
    /// Requests sent to the model: for provider backends the HTTP requests, retries of
    /// rate limits, overload and transient failures included, as is the unstreamed re-send of
    /// an empty streamed answer and the retry after a context-window rejection; a request the
    /// pre-send estimate refused was not sent and is not counted. A model that makes no HTTP
    /// request (scripted, replay) counts one per request.
    pub requests: u32,
    /// The tokens the provider reported for the run's replies.
    pub usage: RunUsage,
}

/// The tokens a run's replies reported, summed.
///
/// Not every reply reports them: a streamed reply carries usage only when the server honours
/// `stream_options.include_usage` (OpenAI does; llama-cpp-python's server ignores it, so a
/// streamed run against it reports no tokens at all: set `stream = false` in `[model]` to
/// get them). `unreported_replies` counts the replies that had none, so a zero is never
/// mistaken for a count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunUsage {
    /// Prompt tokens, summed over the replies that reported them.
    pub input_tokens: u64,
    /// Output tokens, summed over the replies that reported them.
    pub output_tokens: u64,
    /// Replies that reported no token counts.
    pub unreported_replies: u32,
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The store failed (or the session does not exist, or is busy).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A destructive call waits for a decision; a new prompt cannot be added before it.
    #[error(
        "session {session} waits for approval of call {call_id} ({tool}); run `sluice session approve {session} {call_id}` or `deny` first"
    )]
    AwaitingApproval {
        /// The session.
        session: String,
        /// The call.
        call_id: String,
        /// Its tool.
        tool: String,
    },
}

/// The loop, wired to a store, a model and tools.
pub struct Agent {
    store: Arc<dyn Store>,
    backend: Arc<dyn Backend>,
    tools: Arc<dyn Tools>,
    settings: Settings,
}

impl Agent {
    /// An agent over `store`, `backend` and `tools`.
    pub fn new(
        store: Arc<dyn Store>,
        backend: Arc<dyn Backend>,
        tools: Arc<dyn Tools>,
        settings: Settings,
    ) -> Self {
        Agent {
            store,
            backend: Arc::new(metrics::Metered::new(backend)),
            tools,
            settings,
        }
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }
}
