//! One run of a session.

use sluice_models::estimate::prompt_bytes;
use sluice_models::{BackendError, ModelReply, ModelRequest};
use sluice_protocol::{Message, SessionStatus, ToolCall, ToolSpec};
use sluice_runtime::call::observation::{DEFAULT_HINT, Observation, paging_hint, shrink_text};
use sluice_runtime::{CallOptions, CallStatus};
use sluice_store::{Decision, StoreError, StoredMessage};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::metrics::{self, Recovery};
use crate::recovery::{
    self, bytes_to_free, nothing_to_shrink, pending_calls, shrink_plan, still_too_long,
    tool_of_call, transcript,
};
use crate::spans;
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

/// A run of a session that the store has granted to this process ([`Agent::claim`]), with
/// its prompt (if any) accepted. Hand it to [`Agent::run_claimed`]; a claim that is never
/// run leaves the session `running` until a later run takes it over (after this process
/// ends) or [`sluice_store::Store::end_run`] frees it.
#[derive(Debug)]
#[must_use = "a claimed run holds its session until it is run"]
pub struct Claim {
    session: String,
    run: String,
}

impl Claim {
    /// The session claimed.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The run's id, as the store recorded it ([`sluice_store::Store::begin_run`]).
    pub fn run_id(&self) -> &str {
        &self.run
    }
}

impl Agent {
    /// Claims the run of session `session_id` and, with `prompt`, accepts the prompt for it,
    /// in one transaction of the store ([`sluice_store::Store::begin_run`]): this holds
    /// across every process that shares the store. The prompt joins the transcript when
    /// the run starts, after the results of any calls an earlier run left unanswered.
    ///
    /// # Errors
    /// [`AgentError::AwaitingApproval`] when `prompt` is given while a call of a destructive
    /// tool waits for the operator's decision (and `auto_approve` is off): nothing is
    /// claimed or stored. [`AgentError::Store`] with [`sluice_store::StoreError::Busy`] when
    /// the session has a run in progress (the prompt is not stored), or another store
    /// error (no such session).
    pub async fn claim(&self, session_id: &str, prompt: Option<&str>) -> Result<Claim, AgentError> {
        if prompt.is_some() && !self.settings.auto_approve {
            let messages = self.store.messages(session_id).await?;
            for call in pending_calls(&messages) {
                if self.tools.is_destructive(&call.name)
                    && self.store.decision(session_id, &call.id).await?.is_none()
                {
                    return Err(AgentError::AwaitingApproval {
                        session: session_id.to_string(),
                        call_id: call.id,
                        tool: call.name,
                    });
                }
            }
        }
        let run = self
            .store
            .begin_run(session_id, prompt)
            .await
            .inspect_err(|e| {
                if matches!(e, StoreError::Busy(_)) {
                    metrics::session_busy();
                }
            })?;
        Ok(Claim {
            session: session_id.to_string(),
            run,
        })
    }

    /// Runs session `session_id`: claims it with `prompt` ([`Agent::claim`]), then runs it
    /// ([`Agent::run_claimed`]).
    ///
    /// # Errors
    /// As [`Agent::claim`] and [`Agent::run_claimed`].
    pub async fn run(
        &self,
        session_id: &str,
        prompt: Option<&str>,
        cancel: &CancellationToken,
        events: &(dyn Fn(RunEvent) + Send + Sync),
    ) -> Result<Outcome, AgentError> {
        let claim = self.claim(session_id, prompt).await?;
        self.run_claimed(claim, cancel, events).await
    }

    /// Runs a claimed session: the calls an earlier run left without an observation run
    /// first (awaiting approval, or cut off by a crash), then the accepted prompts join the
    /// transcript, then the loop asks the model until it answers without tool calls,
    /// `max_turns` requests were made, a destructive call waits for approval, `cancel`
    /// fires, or the model fails. `events` sees what happens, as it happens.
    ///
    /// Every message is appended as it is complete: a cancelled or crashed run leaves no
    /// half message. A run that stops before its prompt joins the transcript (cancelled
    /// first, or a destructive call waits) leaves the prompt queued for the session's next
    /// run. The session ends with status `completed`, `awaiting_approval`, `aborted` or
    /// `error`, and `lastError` says why a run stopped early.
    ///
    /// # Errors
    /// [`AgentError::Store`] when the store fails.
    pub async fn run_claimed(
        &self,
        claim: Claim,
        cancel: &CancellationToken,
        events: &(dyn Fn(RunEvent) + Send + Sync),
    ) -> Result<Outcome, AgentError> {
        let span = spans::invoke_agent(claim.session(), claim.run_id());
        let result = self
            .run_claim(claim, cancel, events)
            .instrument(span.clone())
            .await;
        let status = match &result {
            Ok(o) => o.status,
            Err(AgentError::AwaitingApproval { .. }) => SessionStatus::AwaitingApproval,
            Err(_) => SessionStatus::Error,
        };
        spans::run_ended(&span, status.as_str());
        result
    }

    /// [`Agent::run_claimed`] inside the run's span.
    async fn run_claim(
        &self,
        claim: Claim,
        cancel: &CancellationToken,
        events: &(dyn Fn(RunEvent) + Send + Sync),
    ) -> Result<Outcome, AgentError> {
        let session_id = claim.session.as_str();
        let active = metrics::ActiveRun::start();
        let mut tally = Tally::default();
        let result = self
            .run_started(session_id, cancel, events, &mut tally)
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
        metrics::run_ended(status);
        drop(active);
        // `maxTurns` completes the run but says why it stopped (docs/agent-loop.md#maxturns: the
        // transcript is whole and the session goes on with the next prompt; only the final
        // answer is missing, and lastError says so).
        let last_error = match (&result, last_error) {
            (Ok(Stop::Completed(None)), None) => Some(format!(
                "Reached maxTurns={} without a final answer.",
                self.settings.max_turns
            )),
            (_, e) => e,
        };
        let end = sluice_store::RunEnd {
            status,
            last_error: last_error.clone(),
            answer: answer.clone(),
            requests: Some(tally.requests),
        };
        self.store.end_run(session_id, &end).await?;
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
        cancel: &CancellationToken,
        events: &(dyn Fn(RunEvent) + Send + Sync),
        tally: &mut Tally,
    ) -> Result<Stop, AgentError> {
        // Calls an earlier run left without observations come first: a provider needs the
        // results right after the assistant message that asked for them. Then the prompts
        // the claim accepted.
        if let Some(stop) = self.run_pending(id, cancel, events).await? {
            return Ok(stop);
        }
        self.store.append_queued_prompts(id).await?;
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
            let messages = self.store.messages(id).await?;
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
            self.store
                .append(
                    id,
                    &Message::assistant(reply.content.clone(), reply.tool_calls, now()),
                )
                .await?;
            if done {
                return Ok(Stop::Completed(Some(reply.content)));
            }
            if let Some(stop) = self.run_pending(id, cancel, events).await? {
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
        let span = spans::chat(&self.backend.name(), None);
        self.ask_in(span, messages, tools, cancel, events, tally)
            .await
    }

    /// [`Agent::ask`] in `span` (a `chat` span, [`spans::chat`]), which it fills in.
    async fn ask_in(
        &self,
        span: tracing::Span,
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
        if let Some(last) = request.messages.last() {
            spans::prompt(&span, last.role.as_str(), &last.content);
        }
        let asked = self
            .send(&request, cancel, tally)
            .instrument(span.clone())
            .await;
        let name = self.backend.name();
        match &asked {
            Asked::Reply(r) => spans::replied(&span, &name, Ok(r)),
            Asked::Failed(e) => spans::replied(&span, &name, Err(e)),
            Asked::Cancelled => {}
        }
        asked
    }

    /// Sends `request`; cancellation drops it.
    async fn send(
        &self,
        request: &ModelRequest,
        cancel: &CancellationToken,
        tally: &mut Tally,
    ) -> Asked {
        tokio::select! {
            biased;
            () = cancel.cancelled() => {
                tally.requests += 1;
                Asked::Cancelled
            }
            reply = self.backend.complete(request) => match reply {
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

    /// After a context-window rejection: shrinks observations ([`shrink_plan`]: the
    /// 2,048-byte rule of docs/agent-loop.md#context-window-recovery, and as far as needed for
    /// the retry to fit when the rejection's sizes are known), keeping the originals in the
    /// audit, and retries once. `Ok(Err(stop))` ends the run.
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
            metrics::recovery(Recovery::Cancelled);
            return Ok(Err(Stop::Aborted));
        }
        let need = rejection
            .overflow
            .map(|sizes| bytes_to_free(prompt_bytes(&self.request(messages, tools)), &sizes));
        let cuts = shrink_plan(messages, need);
        if cuts.is_empty() {
            metrics::recovery(Recovery::NothingToShrink);
            return Ok(Err(Stop::Failed(nothing_to_shrink(rejection))));
        }
        let reason = format!("{}: {}", recovery::SHRINK_REASON, rejection.message);
        // A result shrunk by an earlier recovery is cut again from its original, so its
        // marker keeps saying how large the result really was (a script's note in the audit
        // is no result: only shrinks count).
        let mut originals = recovery::results_before_shrinking(self.store.audit(id).await?);
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
            let shrunk = shrink_text(original, cut.limit_bytes, &hint_of(tools, tool));
            from_bytes += m.message.content.len();
            to_bytes += shrunk.len();
            self.store
                .replace_content(id, m.seq, &shrunk, &reason)
                .await?;
        }
        events(RunEvent::Shrunk {
            seqs: cuts.iter().map(|c| c.seq).collect(),
            from_bytes,
            to_bytes,
        });
        let messages = self.store.messages(id).await?;
        let span = spans::chat(&self.backend.name(), Some(cuts.len()));
        let retried = self
            .ask_in(span, &messages, tools, cancel, events, tally)
            .await;
        let (recovery, retried) = match retried {
            Asked::Reply(r) => (Recovery::Recovered, Ok(r)),
            Asked::Cancelled => (Recovery::Cancelled, Err(Stop::Aborted)),
            Asked::Failed(e) if e.context_window_exceeded() => (
                Recovery::StillTooLong,
                Err(Stop::Failed(still_too_long(&e))),
            ),
            Asked::Failed(e) => (Recovery::Failed, Err(Stop::Failed(e.message))),
        };
        metrics::recovery(recovery);
        Ok(retried)
    }

    /// Runs the calls of the last assistant message that have no observation yet, in order.
    /// A destructive call without a decision stops the run (`awaiting_approval`); a prompt
    /// accepted with the run stays queued until a later run gets past it.
    ///
    /// Cancellation reaches the call in progress (it stops within milliseconds and its
    /// observation is a `cancelled` tool error). A cancelled run leaves no call of the turn
    /// without an observation: the calls it did not start get a `cancelled` one too, so the
    /// transcript stays one a provider accepts (every tool call id of an assistant turn has
    /// its result) and the next prompt follows them directly.
    async fn run_pending(
        &self,
        id: &str,
        cancel: &CancellationToken,
        events: &(dyn Fn(RunEvent) + Send + Sync),
    ) -> Result<Option<Stop>, AgentError> {
        let messages = self.store.messages(id).await?;
        let pending = pending_calls(&messages);
        for (i, call) in pending.iter().enumerate() {
            if cancel.is_cancelled() {
                self.not_started(id, &pending[i..], events).await?;
                return Ok(Some(Stop::Aborted));
            }
            let observation =
                if self.tools.is_destructive(&call.name) && !self.settings.auto_approve {
                    match self.store.decision(id, &call.id).await? {
                        None => {
                            events(RunEvent::AwaitingApproval {
                                call_id: call.id.clone(),
                                name: call.name.clone(),
                            });
                            return Ok(Some(Stop::AwaitingApproval));
                        }
                        Some(Decision::Deny) => self.denied(call),
                        Some(Decision::Approve) => self.call(call, cancel, events).await,
                    }
                } else {
                    self.call(call, cancel, events).await
                };
            let cancelled = observation.status() == CallStatus::Cancelled;
            self.store_observation(id, call, &observation, events)
                .await?;
            if cancelled {
                self.not_started(id, &pending[i + 1..], events).await?;
                return Ok(Some(Stop::Aborted));
            }
        }
        Ok(None)
    }

    /// Appends `observation` as the result of `call` and reports it.
    async fn store_observation(
        &self,
        id: &str,
        call: &ToolCall,
        observation: &Observation,
        events: &(dyn Fn(RunEvent) + Send + Sync),
    ) -> Result<(), AgentError> {
        let seq = self
            .store
            .append(
                id,
                &Message::tool(call.id.clone(), observation.text().to_string(), now()),
            )
            .await?;
        // What the call cost in its sandbox, beside it (docs/telemetry.md#sandbox-facts).
        let facts = observation.facts().to_json();
        self.store.record_call(id, seq, &call.name, &facts).await?;
        // A script's program and tool calls go to the audit; the transcript keeps only its
        // observation (docs/code-mode.md#the-audit).
        if let Some(script) = observation.script() {
            let note = script.to_json();
            let reason = format!(
                "{}: its program and its {} tool calls (the transcript keeps only the script's observation)",
                call.name,
                script.calls.len()
            );
            self.store.annotate(id, seq, &reason, &note).await?;
        }
        events(RunEvent::ToolFinished {
            call_id: call.id.clone(),
            name: call.name.clone(),
            bytes: observation.text().len(),
            full_bytes: observation.full_bytes(),
            truncated: observation.truncated(),
            paged: observation.paged(),
            error: observation.status() != CallStatus::Ok,
        });
        Ok(())
    }

    /// Stores a `cancelled` observation for each of `calls`, which the cancelled run did not
    /// start.
    async fn not_started(
        &self,
        id: &str,
        calls: &[ToolCall],
        events: &(dyn Fn(RunEvent) + Send + Sync),
    ) -> Result<(), AgentError> {
        for call in calls {
            let observation = Observation::cancelled(
                "the run was cancelled before this call started; the tool did not run",
            )
            .finish(
                &call.name,
                self.settings.max_tool_result_bytes as usize,
                &hint_of(&self.tools.specs(), &call.name),
            );
            self.store_observation(id, call, &observation, events)
                .await?;
        }
        Ok(())
    }

    async fn call(
        &self,
        call: &ToolCall,
        cancel: &CancellationToken,
        events: &(dyn Fn(RunEvent) + Send + Sync),
    ) -> Observation {
        events(RunEvent::ToolStarted {
            call_id: call.id.clone(),
            name: call.name.clone(),
        });
        // A script (run_script) may call destructive tools only when nothing here would ask.
        let options = CallOptions::new(self.settings.max_tool_result_bytes)
            .with_cancel(cancel.clone())
            .with_destructive_allowed(self.settings.auto_approve);
        let span = spans::execute_tool(call);
        spans::arguments(&span, &call.arguments);
        let observation = self
            .tools
            .call(&call.name, &call.arguments, &options)
            .instrument(span.clone())
            .await;
        spans::called(&span, &observation);
        observation
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
            &hint_of(&self.tools.specs(), &call.name),
        )
    }
}

/// The paging hint of tool `name` among `tools`, from its argument schema
/// ([`paging_hint`]); `a narrower query` for a tool it does not know.
fn hint_of(tools: &[ToolSpec], name: &str) -> String {
    tools.iter().find(|t| t.name == name).map_or_else(
        || DEFAULT_HINT.to_string(),
        |t| paging_hint(&t.input_schema),
    )
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
