//! One run of a session: the claim and its loop, which
//! alternates the model's turn ([`crate::model_turn`]) and the tools' turn
//! ([`crate::tool_turn`]).

use sluice_protocol::{Message, SessionStatus};
use sluice_store::StoreError;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::metrics;
use crate::model_turn::Asked;
use crate::recovery::pending_calls;
use crate::run_context::{Run, Stop, Tally, now};
use crate::spans;
use crate::{Agent, AgentError, Outcome, RunEvent};

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
        let mut run = Run {
            session: session_id,
            cancel,
            events,
            tally: Tally::default(),
        };
        let result = self.run_started(&mut run).await;
        let tally = run.tally;
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

    /// The loop of a claimed run: the calls an earlier run left first, then the queued
    /// prompts, then model turns and tool turns until one of them ends the run.
    async fn run_started(&self, run: &mut Run<'_>) -> Result<Stop, AgentError> {
        let id = run.session;
        // Calls an earlier run left without observations come first: a provider needs the
        // results right after the assistant message that asked for them. Then the prompts
        // the claim accepted.
        if let Some(stop) = self.run_pending(run).await? {
            return Ok(stop);
        }
        self.store.append_queued_prompts(id).await?;
        let tools = self.tools.specs();
        let mut turns = 0;
        loop {
            if turns == self.settings.max_turns {
                return Ok(Stop::Completed(None));
            }
            if run.cancel.is_cancelled() {
                return Ok(Stop::Aborted);
            }
            turns += 1;
            let messages = self.store.messages(id).await?;
            let reply = match self.ask(run, &messages, &tools).await {
                Asked::Reply(r) => r,
                Asked::Cancelled => return Ok(Stop::Aborted),
                Asked::Failed(e) if e.context_window_exceeded() => {
                    match self.recover(run, &messages, &tools, &e).await? {
                        Ok(r) => r,
                        Err(stop) => return Ok(stop),
                    }
                }
                Asked::Failed(e) => return Ok(Stop::Failed(e.message)),
            };
            run.emit(RunEvent::ModelReply {
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
            if let Some(stop) = self.run_pending(run).await? {
                return Ok(stop);
            }
        }
    }
}
