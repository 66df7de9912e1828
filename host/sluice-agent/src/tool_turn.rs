//! The tools' turn of a run: the calls the model asked for, in order, one capped observation
//! stored for each (docs/agent-loop.md#a-run), destructive calls waiting for the operator's
//! decision, and cancellation reaching the call in progress.

use sluice_protocol::{Message, ToolCall, ToolSpec};
use sluice_runtime::call::observation::{DEFAULT_HINT, Observation, paging_hint};
use sluice_runtime::{CallOptions, CallStatus};
use sluice_store::Decision;
use tracing::Instrument as _;

use crate::recovery::pending_calls;
use crate::run_context::{Run, Stop, now};
use crate::spans;
use crate::{Agent, AgentError, RunEvent};

impl Agent {
    /// Runs the calls of the last assistant message that have no observation yet, in order.
    /// A destructive call without a decision stops the run (`awaiting_approval`); a prompt
    /// accepted with the run stays queued until a later run gets past it.
    ///
    /// Cancellation reaches the call in progress (it stops within milliseconds and its
    /// observation is a `cancelled` tool error). A cancelled run leaves no call of the turn
    /// without an observation: the calls it did not start get a `cancelled` one too, so the
    /// transcript stays one a provider accepts (every tool call id of an assistant turn has
    /// its result) and the next prompt follows them directly.
    pub(crate) async fn run_pending(&self, run: &Run<'_>) -> Result<Option<Stop>, AgentError> {
        let id = run.session;
        let messages = self.store.messages(id).await?;
        let pending = pending_calls(&messages);
        for (i, call) in pending.iter().enumerate() {
            if run.cancel.is_cancelled() {
                self.not_started(run, &pending[i..]).await?;
                return Ok(Some(Stop::Aborted));
            }
            let observation =
                if self.tools.is_destructive(&call.name) && !self.settings.auto_approve {
                    match self.store.decision(id, &call.id).await? {
                        None => {
                            run.emit(RunEvent::AwaitingApproval {
                                call_id: call.id.clone(),
                                name: call.name.clone(),
                            });
                            return Ok(Some(Stop::AwaitingApproval));
                        }
                        Some(Decision::Deny) => self.denied(call),
                        Some(Decision::Approve) => self.call(run, call).await,
                    }
                } else {
                    self.call(run, call).await
                };
            let cancelled = observation.status() == CallStatus::Cancelled;
            self.store_observation(run, call, &observation).await?;
            if cancelled {
                self.not_started(run, &pending[i + 1..]).await?;
                return Ok(Some(Stop::Aborted));
            }
        }
        Ok(None)
    }

    /// Appends `observation` as the result of `call` and reports it.
    async fn store_observation(
        &self,
        run: &Run<'_>,
        call: &ToolCall,
        observation: &Observation,
    ) -> Result<(), AgentError> {
        let id = run.session;
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
        run.emit(RunEvent::ToolFinished {
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
    async fn not_started(&self, run: &Run<'_>, calls: &[ToolCall]) -> Result<(), AgentError> {
        for call in calls {
            let observation = Observation::cancelled(
                "the run was cancelled before this call started; the tool did not run",
            )
            .finish(
                &call.name,
                self.settings.max_tool_result_bytes as usize,
                &hint_of(&self.tools.specs(), &call.name),
            );
            self.store_observation(run, call, &observation).await?;
        }
        Ok(())
    }

    /// Runs `call` in its sandbox under the run's cancellation, capped at
    /// `max_tool_result_bytes`.
    async fn call(&self, run: &Run<'_>, call: &ToolCall) -> Observation {
        run.emit(RunEvent::ToolStarted {
            call_id: call.id.clone(),
            name: call.name.clone(),
        });
        // A script (run_script) may call destructive tools only when nothing here would ask.
        let options = CallOptions::new(self.settings.max_tool_result_bytes)
            .with_cancel(run.cancel.clone())
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

    /// The observation of `call` when the operator denied it: a tool error, capped.
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
pub(crate) fn hint_of(tools: &[ToolSpec], name: &str) -> String {
    tools.iter().find(|t| t.name == name).map_or_else(
        || DEFAULT_HINT.to_string(),
        |t| paging_hint(&t.input_schema),
    )
}
