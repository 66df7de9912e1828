//! The sizes a context-window rejection states.
//!
//! Most providers say how large the prompt was and what the limit is; the agent loop uses
//! the two numbers to shrink enough observations for its one retry to fit
//! (docs/agent-loop.md#context-window-recovery), instead of shrinking only the newest group
//! and failing again. [`sizes_in`] reads them from a
//! provider's message, [`Overflow`] carries them on the
//! [`BackendError`](crate::BackendError) (set by [`classify`](crate::classify())), and a
//! backend fills them from its own estimate when the provider's message has none
//! ([`Estimator::around`](crate::estimate::Estimator::around)).
//!
//! The wordings read (case-insensitive; N = prompt tokens, M = the limit, K or Y = the
//! requested output tokens):
//!
//! | provider | wording |
//! |---|---|
//! | Anthropic, Bedrock (Claude) | `prompt is too long: N tokens > M maximum` |
//! | Anthropic | ``input length and `max_tokens` exceed context limit: N + K > M`` |
//! | OpenAI, llama-cpp-python, vLLM | `maximum context length is M tokens. However, you requested T tokens (N in the messages, Y in the completion)` |
//! | OpenAI, DeepSeek | `maximum context length is M tokens. However, your messages resulted in N tokens` |
//! | vLLM | `maximum context length is M tokens. However, your request has N input tokens` |
//! | llama.cpp server | `request (N tokens) exceeds the available context size (M tokens)` (also the structured `n_prompt_tokens` / `n_ctx`) |
//! | Gemini | `input token count (N) exceeds the maximum number of tokens allowed (M)` |
//! | Bedrock | `Max input tokens: M, request input token count: N` |
//! | Bedrock Mantle | `prompt tokens (N) exceed model maximum (M)` |
//! | xAI | `maximum prompt length is M but the request contains N tokens` |
//! | Together | `The input (N tokens) is longer than the model's context length (M tokens)` |
//! | Cerebras | `Current length is N while limit is M` |
//!
//! **The output reservation.** When the provider counted the requested output in the total
//! (`N + K > M`, `N in the messages, Y in the completion`) and the prompt alone fits
//! (`N < M`), the prompt has to fit `M − K`: that is the limit reported. When the prompt alone
//! is over `M`, the limit is `M`: llama-cpp-python, for one, reports `max_tokens` in the
//! completion part but only refuses a prompt longer than its window (it lowers the output cap
//! itself). When `M − K` leaves nothing, no sizes are reported: shrinking the prompt cannot
//! help, and the loop falls back to the 2,048-byte rule
//! (docs/agent-loop.md#context-window-recovery).

use std::sync::LazyLock;

use regex::Regex;

/// The sizes of a request a provider refused as too long for its context window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Overflow {
    /// Tokens of the prompt (the provider's count, or the backend's estimate).
    pub prompt_tokens: u64,
    /// The most tokens the prompt may have (the window, less the output reservation the
    /// provider counted; see the module docs).
    pub limit_tokens: u64,
    /// True when `prompt_tokens` is the backend's estimate, not the provider's count.
    pub estimated: bool,
}

/// One wording: the regex and which groups hold N, M and the output reservation.
struct Wording {
    regex: Regex,
    prompt: usize,
    limit: usize,
    output: Option<usize>,
}

/// The wordings of the module docs, as `(pattern, N group, M group, K group)`.
const WORDINGS: &[(&str, usize, usize, Option<usize>)] = &[
    (r"(\d+) tokens > (\d+) maximum", 1, 2, None),
    (
        r"exceed context limit: (\d+) \+ (\d+) > (\d+)",
        1,
        3,
        Some(2),
    ),
    (
        r"maximum context length is (\d+) tokens.*?you requested \d+ tokens \((\d+) in the messages, (\d+|none) in the completion\)",
        2,
        1,
        Some(3),
    ),
    (
        r"maximum context length is (\d+) tokens.*?(?:resulted in|request has) (\d+) (?:input )?tokens",
        2,
        1,
        None,
    ),
    (
        r"request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)",
        1,
        2,
        None,
    ),
    (
        r"input token count \((\d+)\) exceeds the maximum number of tokens allowed \((\d+)\)",
        1,
        2,
        None,
    ),
    (
        r"max input tokens: (\d+), request input token count: (\d+)",
        2,
        1,
        None,
    ),
    (
        r"prompt tokens \((\d+)\) exceed model maximum \((\d+)\)",
        1,
        2,
        None,
    ),
    (
        r"maximum prompt length is (\d+) but the request contains (\d+) tokens",
        2,
        1,
        None,
    ),
    (
        r"the input \((\d+) tokens\) is longer than the model's context length \((\d+) tokens\)",
        1,
        2,
        None,
    ),
    (r"current length is (\d+) while limit is (\d+)", 1, 2, None),
];

#[allow(clippy::expect_used)] // Constant patterns: see the comment inside.
static COMPILED: LazyLock<Vec<Wording>> = LazyLock::new(|| {
    WORDINGS
        .iter()
        .map(|&(source, prompt, limit, output)| Wording {
            // Infallible: constant patterns, all compiled by the `every_wording_reads` test.
            regex: Regex::new(&format!("(?is){source}")).expect("a valid regex"),
            prompt,
            limit,
            output,
        })
        .collect()
});

/// The sizes `text` states, if it uses one of the wordings of the module docs.
pub fn sizes_in(text: &str) -> Option<Overflow> {
    COMPILED.iter().find_map(|w| {
        let caps = w.regex.captures(text)?;
        let number = |i: usize| caps.get(i).and_then(|m| m.as_str().parse::<u64>().ok());
        let prompt = number(w.prompt)?;
        let window = number(w.limit)?;
        let output = w.output.and_then(number).unwrap_or(0);
        sizes(prompt, window, output)
    })
}

/// The sizes for a prompt of `prompt` tokens, a window of `window` tokens and an output
/// reservation of `output` tokens the provider counted (see the module docs); `None` when
/// the numbers say nothing useful (an empty window, or no room left beside the output).
pub fn sizes(prompt: u64, window: u64, output: u64) -> Option<Overflow> {
    let limit = if prompt >= window {
        window
    } else {
        window.checked_sub(output)?
    };
    (limit > 0 && prompt > 0).then_some(Overflow {
        prompt_tokens: prompt,
        limit_tokens: limit,
        estimated: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Option<(u64, u64)> {
        sizes_in(text).map(|o| (o.prompt_tokens, o.limit_tokens))
    }

    #[test]
    fn every_wording_reads() {
        assert_eq!(COMPILED.len(), WORDINGS.len());
        let cases: &[(&str, (u64, u64))] = &[
            (
                "prompt is too long: 210000 tokens > 200000 maximum",
                (210_000, 200_000),
            ),
            (
                "The model returned the following errors: prompt is too long: 205000 tokens > 200000 maximum",
                (205_000, 200_000),
            ),
            // The prompt fits; the output reservation does not: the prompt must fit M − K.
            (
                "input length and `max_tokens` exceed context limit: 180000 + 64000 > 200000, decrease input length or `max_tokens` and try again",
                (180_000, 136_000),
            ),
            // llama-cpp-python 0.3.36's own wording (the prompt alone is over the window).
            (
                "This model's maximum context length is 2048 tokens. However, you requested 6654 tokens (2558 in the messages, 4096 in the completion). Please reduce the length of the messages or completion.",
                (2558, 2048),
            ),
            (
                "This model's maximum context length is 2048 tokens. However, you requested 2558 tokens (2558 in the messages, None in the completion). Please reduce the length of the messages or completion.",
                (2558, 2048),
            ),
            (
                "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
                (131_072, 128_000),
            ),
            (
                "This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens. Please reduce the length of the input messages.",
                (5000, 4096),
            ),
            (
                "request (8193 tokens) exceeds the available context size (8192 tokens), try increasing it",
                (8193, 8192),
            ),
            (
                "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
                (1_200_000, 1_048_576),
            ),
            (
                "400 Bad Request: Too many input tokens. Max input tokens: 8192, request input token count: 9000",
                (9000, 8192),
            ),
            (
                "prompt tokens (140000) exceed model maximum (131072)",
                (140_000, 131_072),
            ),
            (
                "This model's maximum prompt length is 131072 but the request contains 150000 tokens.",
                (150_000, 131_072),
            ),
            (
                "The input (40000 tokens) is longer than the model's context length (32768 tokens).",
                (40_000, 32_768),
            ),
            ("Current length is 9000 while limit is 8192", (9000, 8192)),
        ];
        for (text, expected) in cases {
            assert_eq!(read(text), Some(*expected), "{text}");
        }
    }

    #[test]
    fn no_numbers_no_sizes() {
        assert_eq!(read("Input is too long for requested model."), None);
        assert_eq!(read("prompt is too long"), None);
        assert_eq!(
            read("Your input exceeds the context window of this model."),
            None
        );
        // Only the output reservation is over, and nothing is left beside it.
        assert_eq!(
            read("input length and `max_tokens` exceed context limit: 1000 + 200000 > 200000"),
            None
        );
        assert_eq!(sizes(0, 10, 0), None);
        assert_eq!(sizes(10, 0, 0), None);
    }
}
