//! Shortening text for a message or a page: the one place Sluice cuts a string and marks
//! the cut with `…` (U+2026, 3 bytes in UTF-8). No dependencies, so both the host crates and
//! the guests' library (`sluice-file-tools`) use it.
//!
//! - [`cut_bytes`]: a byte budget (what a cap or a message size is counted in); the cut is
//!   at the last character boundary at or before the budget (`str::floor_char_boundary`).
//! - [`cut_chars`]: a character budget (what a person reads: a quoted path, a line).
//!
//! Both return the text unchanged (borrowed) when it fits, and never split a character.
//!
//! ```
//! assert_eq!(sluice_text::cut_bytes("héllo", 2), "h…");
//! assert_eq!(sluice_text::cut_chars("héllo", 2), "hé…");
//! assert_eq!(sluice_text::cut_chars("hé", 2), "hé");
//! ```

use std::borrow::Cow;

/// The mark appended to cut text.
pub const ELLIPSIS: char = '…';

/// `text` as is when it is at most `max_bytes` bytes long; otherwise its longest head of at
/// most `max_bytes` bytes that ends on a character boundary, followed by [`ELLIPSIS`] (so a cut
/// result is at most `max_bytes + 3` bytes).
pub fn cut_bytes(text: &str, max_bytes: usize) -> Cow<'_, str> {
    if text.len() <= max_bytes {
        return Cow::Borrowed(text);
    }
    let head = &text[..text.floor_char_boundary(max_bytes)];
    Cow::Owned(format!("{head}{ELLIPSIS}"))
}

/// `text` as is when it has at most `max_chars` characters (Unicode scalar values);
/// otherwise its first `max_chars` characters followed by [`ELLIPSIS`] (so a cut result has
/// `max_chars + 1` characters).
pub fn cut_chars(text: &str, max_chars: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        None => Cow::Borrowed(text),
        Some((at, _)) => Cow::Owned(format!("{}{ELLIPSIS}", &text[..at])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_fit_exactly() {
        assert!(matches!(cut_bytes("abc", 3), Cow::Borrowed("abc")));
        assert_eq!(cut_bytes("abcd", 3), "abc…");
        assert_eq!(cut_bytes("", 0), "");
        assert_eq!(cut_bytes("a", 0), "…");
    }

    #[test]
    fn bytes_cut_before_a_multibyte_character() {
        // "é" is 2 bytes, "€" 3 and "𝄞" 4: a budget inside one keeps none of it.
        assert_eq!(cut_bytes("aé", 2), "a…");
        assert_eq!(cut_bytes("aéb", 3), "aé…");
        assert_eq!(cut_bytes("€€", 5), "€…");
        assert_eq!(cut_bytes("𝄞x", 3), "…");
        assert_eq!(cut_bytes("𝄞x", 4), "𝄞…");
        assert_eq!(cut_bytes("𝄞", 4), "𝄞");
    }

    #[test]
    fn bytes_never_exceed_the_budget_plus_the_mark() {
        let text = "é€𝄞a".repeat(50);
        for max in 0..=text.len() + 1 {
            let cut = cut_bytes(&text, max);
            if max >= text.len() {
                assert_eq!(cut, text.as_str());
            } else {
                assert!(cut.len() <= max + ELLIPSIS.len_utf8(), "{max}: {cut}");
                assert!(cut.ends_with(ELLIPSIS));
                assert!(text.starts_with(cut.trim_end_matches(ELLIPSIS)));
            }
        }
    }

    #[test]
    fn chars_fit_exactly() {
        assert!(matches!(cut_chars("ééé", 3), Cow::Borrowed("ééé")));
        assert_eq!(cut_chars("éééé", 3), "ééé…");
        assert_eq!(cut_chars("", 0), "");
        assert_eq!(cut_chars("", 5), "");
        assert_eq!(cut_chars("x", 0), "…");
    }

    #[test]
    fn chars_count_scalar_values_not_bytes() {
        let long = "𝄞".repeat(10);
        let cut = cut_chars(&long, 4);
        assert_eq!(cut, "𝄞𝄞𝄞𝄞…");
        assert_eq!(cut.len(), 4 * 4 + 3);
        // A combining accent is a character of its own.
        assert_eq!(cut_chars("e\u{301}x", 1), "e…");
    }
}
