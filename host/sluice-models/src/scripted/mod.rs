//! The scripted model (`--model scripted`): Sluice's offline default.
//!
//! **This is not an LLM.** It does not understand language and learns nothing. It is a small,
//! deterministic state machine that reads the transcript and always investigates a directory
//! the same way, so that the real agent loop (real tools, real caps, real sessions) can run
//! with no network, no API key and no model download. Same transcript in, same turn out.
//!
//! # What it does
//!
//! The *run* is everything after the last user message (the *prompt*). From the prompt it
//! takes:
//!
//! - the **directory**: the first quoted term (`"…"`, `'…'`, `` `…` ``, `“…”`) that looks like a
//!   relative path, else the first word that does (contains a `/` or starts with `./`; letters,
//!   digits and `._-/@+` only; not absolute, no `..`, no `://`), with a leading `./` and a
//!   trailing `/` removed; else `.` (the root). So "what failed in logs/?" looks at `logs`;
//! - the **search pattern**: the first quoted term that is not a path, as a literal
//!   (regex-escaped; the tool matches case-insensitively), else [`ERROR_PATTERN`].
//!
//! Then, one tool call per turn, each step skipped when its tool is not in the request's tool
//! list:
//!
//! 1. `list_dir {"path": <directory>}` (one page);
//! 2. `grep_files {"pattern": <pattern>, "path": <directory>}` (one page);
//! 3. picks **the file**: the one with the most matches in the search result (ties: the first
//!    in walk order); with none, the largest `file` entry of the listing (ties: the first by
//!    name; directories, symlinks, others and cut names are skipped); with neither, when the
//!    listing failed, could not be read or was skipped and the prompt named a directory, the
//!    named path itself (it may be a file). Once a `read_file` or `tail_file` call is in the
//!    run, its path is the file (so a later shrink of the listing or search cannot switch it);
//! 4. `read_file {"path": <file>}`, then while the previous page has `nextOffset`,
//!    `read_file {"path", "offset": <nextOffset>, "startLine": <nextLine>}` (`startLine` only
//!    when `nextLine` was given): at most [`MAX_READ_PAGES`] pages, stopping at EOF or at a page
//!    that failed or cannot be read;
//! 5. `tail_file {"path": <file>, "lines": 20}` ([`TAIL_LINES`]);
//! 6. the **answer**: the directory's entries (up to [`MAX_LISTED_ENTRIES`]), the number of
//!    matches per file, up to [`MAX_CITED_MATCHES`] matches cited as `path:line: text`, why the
//!    file was chosen, the pages read (lines, bytes, the file's size and total lines when
//!    known) and its last lines. Quoted text is cut to [`MAX_QUOTED_CHARS`] characters.
//!
//! Each tool call comes with one sentence of text: ``Listing `logs`.``,
//! ``Searching `logs` for `…`.``, ``Reading `logs/build.log`.``,
//! ``Reading `logs/build.log` from byte 400.``, ``Reading the last 20 lines of `logs/build.log`.``.
//! The answer is plain text, one fact per line: first
//! ``Findings for `DIR` (scripted offline model: a fixed sequence of tool calls, not an LLM).``,
//! then lines starting `Listing:`, `Search:`, `Matches:` (followed by one `- path:line: text`
//! line per match), `File:`, `Read:` and ``Last N lines of `FILE`:`` (followed by the lines,
//! each indented by four spaces).
//!
//! Everything in the answer comes from the observations in the transcript (`{"ok":true,
//! "result":…}` parsed as the tools document them). A tool error is quoted; an observation that
//! is not valid JSON (cut to the observation cap, or shrunk after a context-window rejection)
//! or has an unexpected shape has its data skipped, and the answer says so. A call with no
//! observation is reported as such and not repeated.
//!
//! An **aggregation prompt** ("count errors by service", "how many ERROR lines per worker in
//! ./logs?": *count*, *how many*, *tally* or *number of*, then *by* or *per* a word) is answered
//! in code mode when `run_script` is offered: one `run_script` call whose program reads every
//! page of the directory's path (a file, or every file under a directory) inside the sandbox
//! and counts the lines matching the pattern, grouped by the word (`level`: the log level;
//! another word: the first token of the line that starts with it, so `worker` groups by
//! `worker-3`, `worker-7`, …); then the answer: `Counts for …`, `Matched: …` and one
//! `- GROUP: N` line per group (at most [`MAX_GROUPS`], the largest first).
//!
//! Tool call ids are `call_<n>`, `n` being one more than the number of tool calls already in
//! the whole transcript (skipping ids already used). Because every decision is made from the
//! transcript alone, a resumed session (or a retried request) continues exactly where it was.
//! Replies carry no usage (no tokens are counted).

mod aggregate;
mod findings;
mod prompt;
mod run;
mod step;

use std::collections::HashSet;

use sluice_protocol::ToolCall;

use self::aggregate::Aggregation;
pub use self::aggregate::MAX_GROUPS;
use self::findings::Findings;
use self::run::Run;
pub use self::step::{
    ERROR_PATTERN, ERROR_WORDS, MAX_CITED_MATCHES, MAX_LISTED_ENTRIES, MAX_QUOTED_CHARS,
    MAX_READ_PAGES, TAIL_LINES,
};
use crate::backend::{Backend, ModelReply, ModelRequest};
use crate::error::BackendError;
use crate::ids::next_call_id;

/// The offline default model: a deterministic state machine over the transcript, **not an
/// LLM**. See the module docs for its exact behaviour.
#[derive(Clone, Copy, Debug, Default)]
pub struct ScriptedModel;

impl ScriptedModel {
    /// The model (it has no configuration and no state).
    pub fn new() -> Self {
        ScriptedModel
    }

    /// The next turn for `request`: one tool call, or the final answer. Pure and infallible.
    pub fn next_turn(&self, request: &ModelRequest) -> ModelReply {
        let tools: HashSet<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        let run = Run::from_transcript(&request.messages);
        if tools.contains(aggregate::RUN_SCRIPT)
            && let Some(aggregation) = aggregation_of(&run)
        {
            return aggregated(request, &run, &aggregation);
        }
        let findings = Findings::new(&run, &tools);
        let step = findings.next_step();
        let (content, call) = match step.call() {
            Some((name, arguments)) => {
                let id = next_call_id(&request.messages);
                (
                    step.announce(),
                    Some(ToolCall {
                        id,
                        name: name.to_string(),
                        arguments: arguments.to_string(),
                    }),
                )
            }
            None => (findings.answer(), None),
        };
        ModelReply {
            content,
            tool_calls: call.into_iter().collect(),
            usage: None,
            http_requests: None,
        }
    }
}

/// The aggregation the run's prompt asks for, if any (with the directory and pattern the
/// investigation would use).
fn aggregation_of(run: &Run<'_>) -> Option<Aggregation> {
    let (dir, term) = prompt::analyse_prompt(run.prompt);
    let (pattern, needles) = match term {
        Some(t) => (regex::escape(&t), vec![t.to_lowercase()]),
        None => (
            ERROR_PATTERN.to_string(),
            ERROR_WORDS.map(str::to_string).to_vec(),
        ),
    };
    Aggregation::of(run.prompt, &dir, (&pattern, needles))
}

/// The turn of an aggregation run: the one `run_script` call, then the answer.
fn aggregated(request: &ModelRequest, run: &Run<'_>, aggregation: &Aggregation) -> ModelReply {
    let (content, tool_calls) = if run.first(aggregate::RUN_SCRIPT).is_none() {
        let call = ToolCall {
            id: next_call_id(&request.messages),
            name: aggregate::RUN_SCRIPT.to_string(),
            arguments: aggregation.arguments().to_string(),
        };
        (aggregation.announce(), vec![call])
    } else {
        (aggregation.answer(run), Vec::new())
    };
    ModelReply {
        content,
        tool_calls,
        usage: None,
        http_requests: None,
    }
}

#[async_trait::async_trait]
impl Backend for ScriptedModel {
    /// `scripted`.
    fn name(&self) -> String {
        "scripted".to_string()
    }

    /// [`ScriptedModel::next_turn`]; never fails.
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, BackendError> {
        Ok(self.next_turn(request))
    }
}

#[cfg(test)]
mod tests;
