//! The run's spans (docs/telemetry.md#traces), named and filled after OpenTelemetry's GenAI
//! conventions: `invoke_agent` per run, `chat {model}` per model request, `execute_tool
//! {name}` per tool call. Content (the prompt, the model's text, arguments, observations)
//! goes out only as events of [`CONTENT_TARGET`], which the subscriber exports only with
//! `telemetry.capture_content`.

use sluice_models::{BackendError, ModelReply};
use sluice_protocol::ToolCall;
use sluice_runtime::CallStatus;
use sluice_runtime::call::observation::Observation;
use tracing::Span;
use tracing::field::Empty;

/// The tracing target of content events (`sluice_telemetry::CONTENT_TARGET`).
pub(crate) const CONTENT_TARGET: &str = "sluice::content";

/// The span of one run of session `session`.
pub(crate) fn invoke_agent(session: &str, run: &str) -> Span {
    tracing::info_span!(
        "invoke_agent",
        otel.name = "invoke_agent",
        otel.kind = "internal",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = "sluice",
        gen_ai.conversation.id = session,
        sluice.run.id = run,
        sluice.run.status = Empty,
        otel.status_code = Empty,
        error.type = Empty,
    )
}

/// Records how the run ended on its span: `status` as the API says it (`completed`,
/// `aborted`, `awaiting_approval`, `error`).
pub(crate) fn run_ended(span: &Span, status: &str) {
    span.record("sluice.run.status", status);
    if status == "error" {
        span.record("otel.status_code", "error");
        span.record("error.type", "run_error");
    }
}

/// The span of one model request to the backend named `backend` (`provider:model`, or
/// `scripted`); `retry` is the number of observations shrunk when it is the retry of a
/// context-window recovery.
pub(crate) fn chat(backend: &str, retry: Option<usize>) -> Span {
    let (provider, model) = backend.split_once(':').unwrap_or((backend, backend));
    let span = tracing::info_span!(
        "chat",
        otel.name = format!("chat {model}"),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
        gen_ai.response.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.response.finish_reasons = Empty,
        error.type = Empty,
        otel.status_code = Empty,
        sluice.recovery.rejected = Empty,
        sluice.recovery.shrunk = Empty,
        sluice.recovery.retry = Empty,
    );
    if let Some(shrunk) = retry {
        span.record(
            "sluice.recovery.shrunk",
            i64::try_from(shrunk).unwrap_or(i64::MAX),
        );
        span.record("sluice.recovery.retry", 1_i64);
    }
    span
}

/// Records a model's reply (or its failure) on its `chat` span.
pub(crate) fn replied(span: &Span, model: &str, reply: Result<&ModelReply, &BackendError>) {
    match reply {
        Ok(r) => {
            let model = model.split_once(':').map_or(model, |(_, m)| m);
            span.record("gen_ai.response.model", model);
            if let Some(usage) = &r.usage {
                span.record("gen_ai.usage.input_tokens", as_i64(usage.input_tokens));
                span.record("gen_ai.usage.output_tokens", as_i64(usage.output_tokens));
            }
            let finish = if r.tool_calls.is_empty() {
                "[\"stop\"]"
            } else {
                "[\"tool_calls\"]"
            };
            span.record("gen_ai.response.finish_reasons", finish);
            span.in_scope(|| {
                tracing::event!(
                    target: CONTENT_TARGET,
                    tracing::Level::INFO,
                    gen_ai.output.text = r.content.as_str(),
                    tool_calls = r.tool_calls.len(),
                    "gen_ai.choice"
                );
            });
        }
        Err(e) => {
            let kind = serde_json::to_value(e.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| "error".to_string());
            span.record("error.type", kind.as_str());
            span.record("otel.status_code", "error");
            if e.context_window_exceeded() {
                span.record("sluice.recovery.rejected", true);
            }
        }
    }
}

/// Emits the newest message of a request (the prompt on a run's first request) as content.
pub(crate) fn prompt(span: &Span, role: &str, text: &str) {
    span.in_scope(|| {
        tracing::event!(
            target: CONTENT_TARGET,
            tracing::Level::INFO,
            gen_ai.input.role = role,
            gen_ai.input.text = text,
            "gen_ai.input.message"
        );
    });
}

/// The span of one tool call of the loop. The runtime records its `sluice.*` fields (and
/// `error.type`) on it as the call ends.
pub(crate) fn execute_tool(call: &ToolCall) -> Span {
    sluice_runtime::tool_call_span!(
        "execute_tool",
        otel.name = format!("execute_tool {}", call.name),
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = call.name.as_str(),
        gen_ai.tool.call.id = call.id.as_str(),
        gen_ai.tool.type = "function",
    )
}

/// Emits a call's arguments as content, inside its span.
pub(crate) fn arguments(span: &Span, arguments: &str) {
    span.in_scope(|| {
        tracing::event!(
            target: CONTENT_TARGET,
            tracing::Level::INFO,
            gen_ai.tool.call.arguments = arguments,
            "gen_ai.tool.call.arguments"
        );
    });
}

/// Records a call's end on its span: the status when the tool did not return a result, and
/// the observation as content.
pub(crate) fn called(span: &Span, observation: &Observation) {
    if observation.status() != CallStatus::Ok {
        span.record("otel.status_code", "error");
    }
    span.in_scope(|| {
        tracing::event!(
            target: CONTENT_TARGET,
            tracing::Level::INFO,
            gen_ai.tool.call.result = observation.text(),
            "gen_ai.tool.call.result"
        );
    });
}

/// `n` as the exporter takes integers: tracing-opentelemetry exports an `i64` as an integer
/// attribute but a `u64` as its text.
fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
