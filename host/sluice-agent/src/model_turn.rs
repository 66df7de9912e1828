//! The model's turn of a run: the request built from the transcript, sent with cancellation,
//! counted in the run's tally, and the one retry after a context-window rejection
//! (docs/agent-loop.md#context-window-recovery).

use sluice_models::estimate::prompt_bytes;
use sluice_models::{BackendError, ModelReply, ModelRequest};
use sluice_protocol::ToolSpec;
use sluice_runtime::call::observation::shrink_text;
use sluice_store::StoredMessage;
use tracing::Instrument as _;

use crate::metrics::{self, Recovery};
use crate::recovery::{
    self, bytes_to_free, nothing_to_shrink, shrink_plan, still_too_long, tool_of_call, transcript,
};
use crate::run_context::{Run, Stop};
use crate::spans;
use crate::tool_turn::hint_of;
use crate::{Agent, AgentError, RunEvent};

/// The model's answer to one request, or why there is none.
pub(crate) enum Asked {
    /// The model answered.
    Reply(ModelReply),
    /// The run was cancelled while the request was in flight; it was dropped.
    Cancelled,
    /// The backend failed (after its own retries).
    Failed(BackendError),
}

impl Agent {
    /// The request built from `messages`.
    fn request(&self, messages: &[StoredMessage], tools: &[ToolSpec]) -> ModelRequest {
        ModelRequest {
            system: self.settings.system_prompt.clone(),
            messages: transcript(messages),
            tools: tools.to_vec(),
        }
    }

    /// Sends one request built from `messages`; cancellation drops it. The run's tally
    /// counts the HTTP requests the backend reports (retries included; none for a request
    /// its pre-send estimate refused; one for a model that makes no HTTP request, or a
    /// cancelled one) and the usage the reply reports.
    pub(crate) async fn ask(
        &self,
        run: &mut Run<'_>,
        messages: &[StoredMessage],
        tools: &[ToolSpec],
    ) -> Asked {
        let span = spans::chat(&self.backend.name(), None);
        self.ask_in(run, span, messages, tools).await
    }

    /// [`Agent::ask`] in `span` (a `chat` span, [`spans::chat`]), which it fills in.
    async fn ask_in(
        &self,
        run: &mut Run<'_>,
        span: tracing::Span,
        messages: &[StoredMessage],
        tools: &[ToolSpec],
    ) -> Asked {
        let request = self.request(messages, tools);
        run.emit(RunEvent::ModelRequest {
            bytes: request.json_bytes(),
        });
        if let Some(last) = request.messages.last() {
            spans::prompt(&span, last.role.as_str(), &last.content);
        }
        let asked = self.send(run, &request).instrument(span.clone()).await;
        let name = self.backend.name();
        match &asked {
            Asked::Reply(r) => spans::replied(&span, &name, Ok(r)),
            Asked::Failed(e) => spans::replied(&span, &name, Err(e)),
            Asked::Cancelled => {}
        }
        asked
    }

    /// Sends `request`; the run's cancellation drops it.
    async fn send(&self, run: &mut Run<'_>, request: &ModelRequest) -> Asked {
        let cancel = run.cancel;
        let tally = &mut run.tally;
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
    pub(crate) async fn recover(
        &self,
        run: &mut Run<'_>,
        messages: &[StoredMessage],
        tools: &[ToolSpec],
        rejection: &BackendError,
    ) -> Result<Result<ModelReply, Stop>, AgentError> {
        if run.cancel.is_cancelled() {
            metrics::recovery(Recovery::Cancelled);
            return Ok(Err(Stop::Aborted));
        }
        let id = run.session;
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
        run.emit(RunEvent::Shrunk {
            seqs: cuts.iter().map(|c| c.seq).collect(),
            from_bytes,
            to_bytes,
        });
        let messages = self.store.messages(id).await?;
        let span = spans::chat(&self.backend.name(), Some(cuts.len()));
        let retried = self.ask_in(run, span, &messages, tools).await;
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
}
