//! The token estimate of a request, and the local size check made before it is sent.
//!
//! Some servers do not refuse an over-long prompt: Ollama cuts it silently and answers `200`
//! about half a conversation. So when the model's context window is configured
//! (`context_window_tokens`), a provider backend estimates the request's tokens and, when the
//! request *surely* does not fit, fails with [`ErrorKind::ContextWindowExceeded`] without
//! sending it, as if the provider had refused it; the agent loop then shrinks observations as
//! it would after a real rejection (the error says it was refused locally, and carries the
//! estimated sizes).
//!
//! **What is measured** ([`prompt_bytes`]): the bytes the server puts into the model's prompt,
//! not the request body: the system prompt, each message's text, each tool call's name and
//! arguments, and each tool's name, description and JSON schema (compact). JSON escaping,
//! field names, ids and settings such as `max_tokens` are left out: the server decodes or
//! drops them before it tokenises.
//!
//! **The ratio** ([`Estimator`]): tokens = prompt bytes / bytes per token, rounded up. Before
//! the provider reported anything the ratio is [`UNCALIBRATED_BYTES_PER_TOKEN`], deliberately
//! low (so the estimate errs high: a request that surely does not fit is not sent). Each reply
//! whose `usage` reports its prompt tokens, and each rejection that states them, calibrates it:
//! the ratio becomes that request's prompt bytes / its tokens (the latest request is the best
//! guide to the next, which repeats most of it). A backend keeps one estimator, shared by
//! every session it serves (the ratio belongs to the model's tokenizer and the kind of text).
//! Streamed replies of servers that ignore `stream_options.include_usage` report nothing and
//! calibrate nothing.
//!
//! **Surely** means more than [`SURE_MARGIN`] (10%) over the window: a request near the
//! limit is sent and the provider decides. The requested output cap (`max_tokens`) is not
//! counted.

use std::sync::Mutex;

use crate::backend::{ModelReply, ModelRequest};
use crate::error::{BackendError, ErrorKind};
use crate::overflow::Overflow;

/// Bytes per token assumed before any usage was reported. Low on purpose: measured ratios
/// run from about 2.2 (JSON-heavy transcripts on llama.cpp's SmolLM2 tokenizer) to about 4
/// (English prose on large-vocabulary tokenizers), so 2 overestimates the tokens of almost
/// any request.
pub const UNCALIBRATED_BYTES_PER_TOKEN: f64 = 2.0;

/// How far over the window the estimate must be before the request is refused locally:
/// estimate > window × 1.1.
pub const SURE_MARGIN: f64 = 1.1;

/// The bounds a learned ratio is kept in (bytes per token), so one odd usage report (a
/// server counting cached tokens oddly, a tiny request dominated by template tokens) cannot
/// make the estimate absurd.
const RATIO_BOUNDS: (f64, f64) = (0.5, 16.0);

/// The bytes of `request` the server puts into the prompt (see the module docs).
pub fn prompt_bytes(request: &ModelRequest) -> usize {
    let messages: usize = request
        .messages
        .iter()
        .map(|m| {
            m.content.len()
                + m.tool_calls
                    .iter()
                    .map(|c| c.name.len() + c.arguments.len())
                    .sum::<usize>()
        })
        .sum();
    let tools: usize = request
        .tools
        .iter()
        .map(|t| t.name.len() + t.description.len() + t.input_schema.to_string().len())
        .sum();
    request.system.len() + messages + tools
}

/// A measured request: its prompt bytes and the tokens the provider counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Calibration {
    /// [`prompt_bytes`] of the request.
    pub prompt_bytes: usize,
    /// Its prompt tokens, as the provider counted them.
    pub prompt_tokens: u64,
}

/// The estimate of one backend, calibrated by what its provider reports (module docs).
#[derive(Debug, Default)]
pub struct Estimator {
    latest: Mutex<Option<Calibration>>,
}

impl Estimator {
    /// An estimator that has learned nothing yet.
    pub fn new() -> Estimator {
        Estimator::default()
    }

    /// The latest measurement, if any.
    pub fn calibration(&self) -> Option<Calibration> {
        // A poisoned lock only means another thread panicked mid-write of a Copy value.
        *self.latest.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes per token: learned from the latest measurement, else
    /// [`UNCALIBRATED_BYTES_PER_TOKEN`].
    pub fn bytes_per_token(&self) -> f64 {
        self.calibration()
            .map_or(UNCALIBRATED_BYTES_PER_TOKEN, |c| {
                c.prompt_bytes as f64 / c.prompt_tokens as f64
            })
            .clamp(RATIO_BOUNDS.0, RATIO_BOUNDS.1)
    }

    /// The estimated prompt tokens of `request`: [`prompt_bytes`] /
    /// [`bytes_per_token`](Estimator::bytes_per_token), rounded up.
    pub fn tokens(&self, request: &ModelRequest) -> u64 {
        (prompt_bytes(request) as f64 / self.bytes_per_token()).ceil() as u64
    }

    /// Learns from a request of `prompt_bytes` bytes that the provider counted as
    /// `prompt_tokens` tokens (ignored when either is zero).
    pub fn learn(&self, prompt_bytes: usize, prompt_tokens: u64) {
        if prompt_bytes == 0 || prompt_tokens == 0 {
            return;
        }
        *self.latest.lock().unwrap_or_else(|e| e.into_inner()) = Some(Calibration {
            prompt_bytes,
            prompt_tokens,
        });
    }

    /// Refuses `request` when its estimate is more than [`SURE_MARGIN`] over `window_tokens`
    /// (no window: never refuses).
    ///
    /// # Errors
    /// A [`ErrorKind::ContextWindowExceeded`] error that was not sent (`http_requests` is
    /// `Some(0)`), whose message says the request was estimated locally and not sent, and
    /// whose [`overflow`](BackendError::overflow) holds the estimate and the window.
    pub fn check(
        &self,
        request: &ModelRequest,
        window_tokens: Option<u64>,
    ) -> Result<(), BackendError> {
        let Some(window) = window_tokens else {
            return Ok(());
        };
        let estimate = self.tokens(request);
        if (estimate as f64) <= (window as f64) * SURE_MARGIN {
            return Ok(());
        }
        let bytes = prompt_bytes(request);
        let ratio = self.bytes_per_token();
        let basis = match self.calibration() {
            Some(_) => "learned from the provider's count of an earlier request",
            None => "assumed before the provider reported any count",
        };
        Err(BackendError::new(
            ErrorKind::ContextWindowExceeded,
            format!(
                "the request was not sent: Sluice estimated it at {estimate} tokens ({bytes} prompt bytes at {ratio:.2} bytes per token, {basis}), more than 10% over the model's context window of {window} tokens (model.context_window_tokens)"
            ),
        )
        .with_overflow(Some(Overflow {
            prompt_tokens: estimate,
            limit_tokens: window,
            estimated: true,
        }))
        .with_requests(0))
    }

    /// Sends `request` with `send`, guarded and measured: refused first when it surely does
    /// not fit `window_tokens` ([`check`](Estimator::check)); a reply's reported prompt
    /// tokens and a rejection's stated sizes calibrate the estimator; a context-window
    /// rejection that states no sizes gets the estimate and the window, when the window is
    /// configured (marked `estimated`).
    ///
    /// # Errors
    /// The refusal of [`check`](Estimator::check), or what `send` returned.
    pub async fn around(
        &self,
        request: &ModelRequest,
        window_tokens: Option<u64>,
        send: impl Future<Output = Result<ModelReply, BackendError>>,
    ) -> Result<ModelReply, BackendError> {
        self.check(request, window_tokens)?;
        let bytes = prompt_bytes(request);
        match send.await {
            Ok(reply) => {
                if let Some(usage) = reply.usage {
                    self.learn(bytes, usage.input_tokens);
                }
                Ok(reply)
            }
            Err(mut error) if error.context_window_exceeded() => {
                match error.overflow {
                    Some(sizes) if !sizes.estimated => self.learn(bytes, sizes.prompt_tokens),
                    Some(_) => {}
                    None => {
                        error.overflow = window_tokens.map(|window| Overflow {
                            prompt_tokens: self.tokens(request),
                            limit_tokens: window,
                            estimated: true,
                        });
                    }
                }
                Err(error)
            }
            Err(error) => Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use sluice_protocol::{Message, ToolCall, ToolSpec};

    use super::*;
    use crate::backend::Usage;

    fn request(text: &str) -> ModelRequest {
        ModelRequest {
            system: "sys".into(),
            messages: vec![Message::user(text, "t")],
            tools: vec![],
        }
    }

    #[test]
    fn prompt_bytes_count_the_text_not_the_json() {
        let r = ModelRequest {
            system: "abc".into(),
            messages: vec![
                Message::user("say \"hi\"\n", "t"),
                Message::assistant(
                    "ok",
                    vec![ToolCall {
                        id: "call_1".into(),
                        name: "read".into(),
                        arguments: r#"{"p":"a"}"#.into(),
                    }],
                    "t",
                ),
                Message::tool("call_1", "{\"ok\":true}", "t"),
            ],
            tools: vec![ToolSpec {
                name: "read".into(),
                description: "Reads.".into(),
                input_schema: json!({"type": "object"}),
            }],
        };
        // 3 + 9 + 2 + (4 + 9) + 11 + (4 + 6 + 17): escapes, ids and roles are not counted.
        assert_eq!(prompt_bytes(&r), 65);
    }

    #[test]
    fn uncalibrated_then_learned() {
        let e = Estimator::new();
        let r = request(&"x".repeat(997)); // 1,000 prompt bytes
        assert_eq!(e.calibration(), None);
        assert_eq!(e.tokens(&r), 500);
        e.learn(1000, 250);
        assert_eq!(e.bytes_per_token(), 4.0);
        assert_eq!(e.tokens(&r), 250);
        // Zero counts teach nothing; absurd ratios are bounded.
        e.learn(0, 10);
        e.learn(10, 0);
        assert_eq!(e.bytes_per_token(), 4.0);
        e.learn(1000, 1);
        assert_eq!(e.bytes_per_token(), 16.0);
    }

    #[test]
    fn refuses_only_when_surely_over() {
        let e = Estimator::new();
        let r = request(&"x".repeat(2197)); // 2,200 bytes: 1,100 tokens at 2 bytes per token
        assert!(e.check(&r, None).is_ok());
        assert!(e.check(&r, Some(1000)).is_ok());
        let r = request(&"x".repeat(2198));
        let err = e.check(&r, Some(1000)).unwrap_err();
        assert!(err.context_window_exceeded());
        assert!(err.refused_locally());
        assert_eq!(err.status, None);
        assert_eq!(
            err.overflow,
            Some(Overflow {
                prompt_tokens: 1101,
                limit_tokens: 1000,
                estimated: true
            })
        );
        assert_eq!(
            err.message,
            "the request was not sent: Sluice estimated it at 1101 tokens (2201 prompt bytes at 2.00 bytes per token, assumed before the provider reported any count), more than 10% over the model's context window of 1000 tokens (model.context_window_tokens)"
        );
        // Calibrated at 4 bytes per token, the same request is sent.
        e.learn(4000, 1000);
        assert!(e.check(&r, Some(1000)).is_ok());
    }

    #[tokio::test]
    async fn around_learns_from_replies_and_rejections() {
        let e = Estimator::new();
        let r = request(&"x".repeat(997));
        let reply = ModelReply {
            usage: Some(Usage {
                input_tokens: 400,
                output_tokens: 3,
            }),
            ..ModelReply::default()
        };
        e.around(&r, None, async { Ok(reply) }).await.unwrap();
        assert_eq!(e.bytes_per_token(), 2.5);
        // A rejection stating sizes calibrates too.
        let stated = crate::classify::classify(
            400,
            &[],
            r#"{"error":{"message":"This model's maximum context length is 300 tokens. However, your messages resulted in 500 tokens.","code":"context_length_exceeded"}}"#,
        );
        let err = e.around(&r, None, async { Err(stated) }).await.unwrap_err();
        assert_eq!(err.overflow.map(|o| o.estimated), Some(false));
        assert_eq!(e.bytes_per_token(), 2.0);
        // One without sizes gets the estimate and the configured window.
        let bare = crate::classify::classify(
            400,
            &[],
            r#"{"message":"Input is too long for requested model."}"#,
        );
        let bare = crate::error::BackendError {
            kind: ErrorKind::ContextWindowExceeded,
            ..bare
        };
        let err = e
            .around(&r, Some(450), async { Err(bare.clone()) })
            .await
            .unwrap_err();
        assert_eq!(
            err.overflow,
            Some(Overflow {
                prompt_tokens: 500,
                limit_tokens: 450,
                estimated: true
            })
        );
        let err = e.around(&r, None, async { Err(bare) }).await.unwrap_err();
        assert_eq!(err.overflow, None);
    }
}
