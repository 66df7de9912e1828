//! The page budget (docs/paging.md#page-budget) and the escaped size of text
//! (docs/observations.md#terms).

use std::time::{Duration, Instant};

use crate::error::{ErrorKind, Result, ToolError};

/// Bytes of every result kept for the envelope (`{"ok":true,"result":{...}}`) and the
/// numeric fields, in bytes. Enough for all fields with numbers of up to 13 digits (files
/// under 10 TB): `read_file`'s, the most, take 253 bytes then.
pub const ENVELOPE_RESERVE_BYTES: u64 = 256;

/// The smallest page a file tool will fill, in escaped bytes; below it the tool fails.
pub const MIN_PAGE_BYTES: u64 = 320;

/// The cap's floor, ceiling and default (`agent.max_tool_result_bytes`), in bytes: the
/// host's numbers (`sluice_protocol::limits`).
pub use sluice_protocol::limits::{
    DEFAULT_MAX_TOOL_RESULT_BYTES as DEFAULT_MAX_RESULT_BYTES,
    MAX_MAX_TOOL_RESULT_BYTES as MAX_MAX_RESULT_BYTES,
    MIN_MAX_TOOL_RESULT_BYTES as MIN_MAX_RESULT_BYTES,
};

/// The escaped size of one character: its length inside a JSON string literal as serde_json
/// writes it. `"` `\` and `\b \f \n \r \t` cost 2, other C0 controls cost 6 (`\u0001`),
/// everything else its UTF-8 length.
#[inline]
pub fn escaped_char_len(c: char) -> u64 {
    match c {
        '"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
        '\u{0}'..='\u{1f}' => 6,
        _ => c.len_utf8() as u64,
    }
}

/// The escaped size of `s`: its byte length once written as a JSON string literal, minus
/// the two quotes.
pub fn escaped_len(s: &str) -> u64 {
    // Fast path: most bytes are printable ASCII other than `"` and `\`.
    s.bytes()
        .map(|b| match b {
            b'"' | b'\\' | 0x08 | 0x0c | b'\n' | b'\r' | b'\t' => 2,
            0x00..=0x1f => 6,
            _ => 1,
        })
        .sum()
}

/// The compact JSON size of `value` in bytes, as serde_json writes it.
pub fn json_len<T: serde::Serialize + ?Sized>(value: &T) -> u64 {
    struct Counter(u64);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Serialising our own plain structs into a counting writer cannot fail.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// The page budget of a result that shows `path`, in escaped bytes:
/// `min(floor(cap / 2), cap - escaped(path) - 256)`, or `None` when that is below
/// [`MIN_PAGE_BYTES`] (docs/paging.md#page-budget). `cap` is `agent.max_tool_result_bytes`
/// in bytes.
pub fn page_bytes(cap: u32, path: &str) -> Option<u64> {
    let cap = u64::from(cap);
    let room = cap
        .checked_sub(escaped_len(path))?
        .checked_sub(ENVELOPE_RESERVE_BYTES)?;
    let page = (cap / 2).min(room);
    (page >= MIN_PAGE_BYTES).then_some(page)
}

/// What the host grants one call: the cap and the time a search may take.
#[derive(Clone, Debug)]
pub struct Limits {
    /// `agent.max_tool_result_bytes` for this call, in bytes.
    pub max_result_bytes: u32,
    /// When a search should stop and return what it has (grep_files only).
    pub deadline: Option<Instant>,
}

impl Limits {
    /// Limits with the cap `max_result_bytes` and no deadline.
    pub fn new(max_result_bytes: u32) -> Self {
        Limits {
            max_result_bytes,
            deadline: None,
        }
    }

    /// The same limits with a search deadline `budget` from now.
    pub fn with_time_budget(mut self, budget: Duration) -> Self {
        self.deadline = Some(Instant::now() + budget);
        self
    }

    /// The page budget for a result showing `path`, or the `page-too-small` error that
    /// names `agent.max_tool_result_bytes`.
    pub fn page_for(&self, path: &str) -> Result<u64> {
        page_bytes(self.max_result_bytes, path).ok_or_else(|| {
            ToolError::new(
                ErrorKind::PageTooSmall,
                format!(
                    "the result cannot fit: agent.max_tool_result_bytes is {} bytes, which leaves less than {MIN_PAGE_BYTES} bytes for a page once the {}-byte path and {ENVELOPE_RESERVE_BYTES} bytes of fields are counted; raise agent.max_tool_result_bytes or use a shorter path",
                    self.max_result_bytes,
                    escaped_len(path),
                ),
            )
        })
    }

    /// True when the search deadline has passed.
    pub fn out_of_time(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_len_matches_serde_json() {
        let s = "a\"b\\c\u{1}\u{8}\u{c}\n\r\t\u{7f}é漢😀";
        let json = serde_json::to_string(s).unwrap();
        assert_eq!(escaped_len(s), json.len() as u64 - 2);
        assert_eq!(s.chars().map(escaped_char_len).sum::<u64>(), escaped_len(s));
    }

    #[test]
    fn page_rule() {
        assert_eq!(page_bytes(65_536, "f.txt"), Some(32_768));
        assert_eq!(page_bytes(2048, "f.txt"), Some(1024));
        // 1024 - 5 - 256 = 763 > 512.
        assert_eq!(page_bytes(1024, "f.txt"), Some(512));
        let long = "d".repeat(400);
        // 1024 - 400 - 256 = 368.
        assert_eq!(page_bytes(1024, &long), Some(368));
        let longer = "d".repeat(449);
        assert_eq!(page_bytes(1024, &longer), None);
        assert_eq!(page_bytes(1024, &"d".repeat(900)), None);
    }
}
