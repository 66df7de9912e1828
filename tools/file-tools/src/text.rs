//! Decoding text the way the tools show it: UTF-8 with U+FFFD for invalid bytes, with each
//! character's raw byte length so byte cursors stay exact.

/// One decoded character of a byte buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Decoded {
    /// The character (U+FFFD for an invalid sequence).
    pub(crate) ch: char,
    /// Raw bytes it stands for.
    pub(crate) len: usize,
    /// True when `ch` replaces invalid bytes.
    pub(crate) invalid: bool,
}

/// The characters of `bytes`; each maximal invalid sequence becomes one U+FFFD, exactly as
/// [`String::from_utf8_lossy`] does.
pub(crate) fn lossy_chars(bytes: &[u8]) -> impl Iterator<Item = Decoded> + '_ {
    bytes.utf8_chunks().flat_map(|chunk| {
        let valid = chunk.valid().chars().map(|ch| Decoded {
            ch,
            len: ch.len_utf8(),
            invalid: false,
        });
        let invalid = (!chunk.invalid().is_empty()).then(|| Decoded {
            ch: char::REPLACEMENT_CHARACTER,
            len: chunk.invalid().len(),
            invalid: true,
        });
        valid.chain(invalid)
    })
}

/// If `pos` (an index into `bytes`) falls inside a valid multi-byte character, the index
/// just past that character; otherwise `pos`.
pub(crate) fn end_of_char_at(bytes: &[u8], pos: usize) -> usize {
    if pos >= bytes.len() || (bytes[pos] & 0xC0) != 0x80 {
        return pos;
    }
    for back in 1..=3.min(pos) {
        let lead = pos - back;
        let width = match bytes[lead] {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => continue,
        };
        if width > back
            && lead + width <= bytes.len()
            && std::str::from_utf8(&bytes[lead..lead + width]).is_ok()
        {
            return lead + width;
        }
        return pos;
    }
    pos
}

/// The longest prefix of `s` whose escaped size is at most `budget` bytes, cut on a
/// character boundary.
pub(crate) fn escaped_prefix(s: &str, budget: u64) -> &str {
    let mut used = 0;
    for (i, c) in s.char_indices() {
        used += crate::budget::escaped_char_len(c);
        if used > budget {
            return &s[..i];
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lossy_matches_std() {
        let bytes = b"ab\xE9\x80cd\xFFe\xF0\x9F\x98\x80\xC3";
        let ours: String = lossy_chars(bytes).map(|d| d.ch).collect();
        assert_eq!(ours, String::from_utf8_lossy(bytes));
        assert_eq!(
            lossy_chars(bytes).map(|d| d.len).sum::<usize>(),
            bytes.len()
        );
    }

    #[test]
    fn offsets_inside_characters_move_forward() {
        let s = "aé漢😀".as_bytes(); // a(0) é(1..3) 漢(3..6) 😀(6..10)
        assert_eq!(end_of_char_at(s, 0), 0);
        assert_eq!(end_of_char_at(s, 2), 3);
        assert_eq!(end_of_char_at(s, 4), 6);
        assert_eq!(end_of_char_at(s, 5), 6);
        assert_eq!(end_of_char_at(s, 9), 10);
        // A stray continuation byte is not inside a valid character.
        assert_eq!(end_of_char_at(b"a\x80b", 1), 1);
    }

    #[test]
    fn prefix_by_escaped_size() {
        assert_eq!(escaped_prefix("ab\ncd", 3), "ab");
        assert_eq!(escaped_prefix("ab\ncd", 4), "ab\n");
        assert_eq!(escaped_prefix("漢漢", 5), "漢");
    }
}
