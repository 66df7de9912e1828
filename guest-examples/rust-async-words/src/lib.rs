//! `count-words`: a Sluice tool in Rust whose export is an `async func` (wit-bindgen 0.63's
//! async support, `wasm32-wasip2`). Sluice refuses it at load, naming the function
//! (docs/components.md, "Async (WASIp3) components"): a test holds it to that message.

wit_bindgen::generate!({ world: "words-async", path: "wit", generate_all });

/// The most text it counts, in bytes.
const MAX_TEXT_BYTES: usize = 1 << 20;

struct Words;

impl Guest for Words {
    async fn count_words(text: String) -> Result<u32, ToolError> {
        if text.len() > MAX_TEXT_BYTES {
            return Err(ToolError::InvalidArgument(format!(
                "text must be at most {MAX_TEXT_BYTES} bytes; got {}",
                text.len()
            )));
        }
        // Lets other tasks of the instance run first: the point of an async export.
        wit_bindgen::yield_async().await;
        Ok(u32::try_from(text.split_whitespace().count()).unwrap_or(u32::MAX))
    }
}

export!(Words);
