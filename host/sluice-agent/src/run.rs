//! One run of a session.

use std::collections::HashMap;

use sluice_backends::estimate::prompt_bytes;
use sluice_backends::{BackendError, ModelReply, ModelRequest};
use sluice_protocol::{Message, SessionStatus, ToolCall, ToolSpec};
use sluice_runtime::observation::{Observation, paging_hint, shrink_text};
use sluice_store::{Decision, StoredMessage};
use tokio_util::sync::CancellationToken;

use crate::recovery::{
    bytes_to_free, nothing_to_shrink, pending_calls, shrink_plan, still_too_long, tool_of_call,
    transcript,
};
use crate::{Agent, AgentError, Outcome, RunEvent, RunUsage};

/// How a step of the run ended when it ends the run.
enum Stop {
    Completed(Option<String>),
    Aborted,
    AwaitingApproval,
    Failed(String),
}

/// The model's answer to one request, or why there is none.
enum Asked {
    Reply(ModelReply),
    Cancelled,
    Failed(BackendError),
}

impl Agent {
    /// Runs session `session_id`: appends `prompt` (if any) as a user message, then loops
    /// until the model answers without tool calls, `max_turns` requests were made, a
    /// destructive call waits for approval, `cancel` fires, or the model fails. Calls left
    /// without an observation by an earlier run (awaiting approval, or cut off by a crash)
    /// run first. `events` sees what happens, as it happens.
    ///
    /// Every message is appended as it is complete: a cancelled or crashed run leaves no
    /// half message. The session ends with status `completed`, `awaiting_approval`,
    /// `aborted` or `error`, and `lastError` says why a run stopped early.
    ///
    /// # Errors
    /// [`AgentError`] when the run cannot start (no such session, a run in progress, a
    /// pending approval and a new prompt) or the store fails.
    pub async fn run(
        &self,
        session_id: &str,
        prompt: Option<&str>,
        cancel: &CancellationToken,
        events: &(dyn Fn(RunEvent) + Send + Sync),
    ) -> Result<Outcome, AgentError> {
        self.store.begin_run(session_id)?;
        let mut tally = Tally::default();
        let result = self
            .run_started(session_id, prompt, cancel, events, &mut tally)
            .await;
        let (status, last_error, answer) = match &result {
            Ok(Stop::Completed(answer)) => (SessionStatus::Completed, None, answer.clone()),
            Ok(Stop::Aborted) => (
                SessionStatus::Aborted,
                Some("the run was cancelled".to_string()),
                None,
            ),
            Ok(Stop::AwaitingApproval) => (SessionStatus::AwaitingApproval, None, None),
            Ok(Stop::Failed(e)) => (SessionStatus::Error, Some(e.clone()), None),
            // Not a failed run: the session still waits for the operator.
            Err(AgentError::AwaitingApproval { .. }) => {
                (SessionStatus::AwaitingApproval, None, None)
            }
            Err(e) => (SessionStatus::Error, Some(e.to_string()), None),
        };
        // `maxTurns` completes the run but says why it stopped (SPEC section 5: the
        // transcript is whole and the session goes on with the next prompt; only the final
        // answer is missing, and lastError says so).
        let last_error = match (&result, last_error) {
            (Ok(Stop::Completed(None)), None) => Some(format!(
                "Reached maxTurns={} without a final answer.",
                self.settings.max_turns
            )),
            (_, e) => e,
        };
        self.store
            .end_run(session_id, status, last_error.as_deref())?;
        result?;
        Ok(Outcome {
            session_id: session_id.to_string(),
            status,
            last_error,
            answer,
            requests: tally.requests,
            usage: tally.usage,
        })
    }

    async fn run_started(
        &self,
        id: &str,
        prompt: Option<&str>,
        cancel: &CancellationToken,
        events: &(dyn Fn(RunEvent) + Send + Sync),
        tally: &mut Tally,
    ) -> Result<Stop, AgentError> {
        // Calls an earlier run left without observations come first: a provider needs the
        // results right after the assistant message that asked for them.
        if let Some(stop) = self
            .run_pending(id, prompt.is_some(), cancel, events)
            .await?
        {
            return Ok(stop);
        }
        if let Some(prompt) = prompt {
            self.store.append(id, &Message::user(prompt, now()))?;
        }
        let tools = self.tools.specs();
        let mut turns = 0;
        loop {
            if turns == self.settings.max_turns {
                return Ok(Stop::Completed(None));
            }
            if cancel.is_cancelled() {
                return Ok(Stop::Aborted);
            }
            turns += 1;
            let messages = self.store.messages(id)?;
            let reply = match self.ask(&messages, &tools, cancel, events, tally).await {
                Asked::Reply(r) => r,
                Asked::Cancelled => return Ok(Stop::Aborted),
                Asked::Failed(e) if e.context_window_exceeded() => {
                    match self
                        .recover(id, &messages, &tools, &e, cancel, events, tally)
                        .await?
                    {
                        Ok(r) => r,
                        Err(stop) => return Ok(stop),
                    }
                }
                Asked::Failed(e) => return Ok(Stop::Failed(e.message)),
            };
            events(RunEvent::ModelReply {
                tool_calls: reply.tool_calls.len(),
            });
            let done = reply.tool_calls.is_empty();
            self.store.append(
                id,
                &Message::assistant(reply.content.clone(), reply.tool_calls, now()),
            )?;
            if done {
                return Ok(Stop::Completed(Some(reply.content)));
            }
            if let Some(stop) = self.run_pending(id, false, cancel, events).await? {
                return Ok(stop);
            }
        }
    }

    /// The request built from `messages`.
    fn request(&self, messages: &[StoredMessage], tools: &[ToolSpec]) -> ModelRequest {
        ModelRequest {
            system: self.settings.system_prompt.clone(),
            messages: transcript(messages),
            tools: tools.to_vec(),
        }
    }

    /// Sends one request built from `messages`; cancellation drops it. The tally counts the
    /// HTTP requests the backend reports (retries included; none for a request its pre-send
    /// estimate refused; one for a model that makes no HTTP request, or a cancelled one) and
    /// the usage the reply reports.
    async fn ask(
        &self,
        messages: &[StoredMessage],
        tools: &[ToolSpec],
        cancel: &CancellationToken,
        events: &(dyn Fn(RunEvent) + Send + Sync),
        tally: &mut Tally,
    ) -> Asked {
        let request = self.request(messages, tools);
        events(RunEvent::ModelRequest {
            bytes: request.json_bytes(),
        });
        tokio::select! {
            biased;
            () = cancel.cancelled() => {
                tally.requests += 1;
                Asked::Cancelled
            }
            reply = self.backend.complete(&request) => match reply {
                Ok(r) => {
                    tally.requests += r.http_requests.unwrap_or(1);
                    match r.usage {
                        Some(usage) => {
                            tally.usage.input_tokens += usage.input_tokens;
                            tally.usage.output_tokens += usage.output_tokens;
                        }
                        None => tally.usage.unreported_replies += 1,
                    }
                    Asked::Reply(r)
                }
                Err(e) => {
                    tally.requests += e.http_requests.unwrap_or(1);
                    Asked::Failed(e)
                }
            },
        }
    }

    /// After a context-window rejection: shrinks observations ([`shrink_plan`]: the SPEC
    /// rule, and as far as needed for the retry to fit when the rejection's sizes are known),
    /// keeping the originals in the audit, and retries once. `Ok(Err(stop))` ends the run.
    #[allow(clippy::too_many_arguments)]
    async fn recover(
        &self,
        id: &str,
        messages: &[StoredMessage],
        tools: &[ToolSpec],
        rejection: &BackendError,
        cancel: &CancellationToken,
        events: &(dyn Fn(RunEvent) + Send + Sync),
        tally: &mut Tally,
    ) -> Result<Result<ModelReply, Stop>, AgentError> {
        if cancel.is_cancelled() {
            return Ok(Err(Stop::Aborted));
        }
        let need = rejection
            .overflow
            .map(|sizes| bytes_to_free(prompt_bytes(&self.request(messages, tools)), &sizes));
        let cuts = shrink_plan(messages, need);
        if cuts.is_empty() {
            return Ok(Err(Stop::Failed(nothing_to_shrink(rejection))));
        }
        let reason = format!(
            "a request including this result exceeded the model's context window: {}",
            rejection.message
        );
        // A result shrunk by an earlier recovery is cut again from its original, so its
        // marker keeps saying how large the result really was.
        let mut originals: HashMap<u64, String> = HashMap::new();
        for entry in self.store.audit(id)? {
            originals.entry(entry.seq).or_insert(entry.original);
        }
        let (mut from_bytes, mut to_bytes) = (0, 0);
        for cut in &cuts {
            let Some(m) = messages.iter().find(|m| m.seq == cut.seq) else {
                continue;
            };
            let tool = m
                .message
                .tool_call_id
                .as_deref()
                .and_then(|c| tool_of_call(messages, c))
                .unwrap_or("");
            let original = originals
                .remove(&m.seq)
                .unwrap_or_else(|| m.message.content.clone());
            let shrunk = shrink_text(original, cut.limit_bytes, paging_hint(tool));
            from_bytes += m.message.content.len();
            to_bytes += shrunk.len();
            self.store.replace_content(id, m.seq, &shrunk, &reason)?;
        }
        events(RunEvent::Shrunk {
            seqs: cuts.iter().map(|c| c.seq).collect(),
            from_bytes,
            to_bytes,
        });
        let messages = self.store.messages(id)?;
        Ok(
            match self.ask(&messages, tools, cancel, events, tally).await {
                Asked::Reply(r) => Ok(r),
                Asked::Cancelled => Err(Stop::Aborted),
                Asked::Failed(e) if e.context_window_exceeded() => {
                    Err(Stop::Failed(still_too_long(&e)))
                }
                Asked::Failed(e) => Err(Stop::Failed(e.message)),
            },
        )
    }

    /// Runs the calls of the last assistant message that have no observation yet, in order.
    /// A destructive call without a decision stops the run (`awaiting_approval`) — or, when
    /// a new prompt is waiting to be added, fails it.
    async fn run_pending(
        &self,
        id: &str,
        new_prompt: bool,
        cancel: &CancellationToken,
        events: &(dyn Fn(RunEvent) + Send + Sync),
    ) -> Result<Option<Stop>, AgentError> {
        let messages = self.store.messages(id)?;
        for call in pending_calls(&messages) {
            if cancel.is_cancelled() {
                return Ok(Some(Stop::Aborted));
            }
            let observation =
                if self.tools.is_destructive(&call.name) && !self.settings.auto_approve {
                    match self.store.decision(id, &call.id)? {
                        None if new_prompt => {
                            return Err(AgentError::AwaitingApproval {
                                session: id.to_string(),
                                call_id: call.id,
                                tool: call.name,
                            });
                        }
                        None => {
                            events(RunEvent::AwaitingApproval {
                                call_id: call.id,
                                name: call.name,
                            });
                            return Ok(Some(Stop::AwaitingApproval));
                        }
                        Some(Decision::Deny) => self.denied(&call),
                        Some(Decision::Approve) => self.call(&call, events).await,
                    }
                } else {
                    self.call(&call, events).await
                };
            self.store.append(
                id,
                &Message::tool(call.id.clone(), observation.text.clone(), now()),
            )?;
            events(RunEvent::ToolFinished {
                call_id: call.id,
                name: call.name,
                bytes: observation.text.len(),
                full_bytes: observation.full_bytes,
                truncated: observation.truncated,
                paged: observation.paged,
                error: observation.status != sluice_runtime::CallStatus::Ok,
            });
        }
        Ok(None)
    }

    async fn call(
        &self,
        call: &ToolCall,
        events: &(dyn Fn(RunEvent) + Send + Sync),
    ) -> Observation {
        events(RunEvent::ToolStarted {
            call_id: call.id.clone(),
            name: call.name.clone(),
        });
        self.tools
            .call(
                &call.name,
                &call.arguments,
                self.settings.max_tool_result_bytes,
            )
            .await
    }

    fn denied(&self, call: &ToolCall) -> Observation {
        Observation::error(
            &format!(
                "the operator denied this call of {}; do not retry it",
                call.name
            ),
            Some("denied"),
        )
        .finish(
            &call.name,
            self.settings.max_tool_result_bytes as usize,
            paging_hint(&call.name),
        )
    }
}

/// What a run counts as it goes.
#[derive(Default)]
struct Tally {
    requests: u32,
    usage: RunUsage,
}

/// Now, RFC 3339 UTC with milliseconds (the store's clock, so times sort as text).
pub(crate) fn now() -> String {
    sluice_store::now_rfc3339()
}
