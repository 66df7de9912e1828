//! The JSON text of what a script returned, bounded: at most [`MAX_RESULT_BYTES`] of it are
//! kept, and the length of the whole is counted.
//!
//! A returned string is quoted here, code unit by code unit, without the whole JSON copy
//! `JSON.stringify` makes: returning a 100 MB string then costs its 100 MB and the 8 MiB
//! kept, not three copies of it, and fits the default 256 MiB of memory. Other values go
//! through `JSON.stringify` and are cut after.

use boa_engine::string::{JsStr, JsStrVariant};

use super::MAX_RESULT_BYTES;

/// A JSON text cut to at most `max` bytes (at a character) and the bytes of the whole.
pub(super) struct Bounded {
    /// The first bytes of the text, whole characters only.
    pub text: String,
    /// The bytes of the whole text.
    pub bytes: u64,
}

/// `text` kept whole up to [`MAX_RESULT_BYTES`], else cut there at a character.
pub(super) fn cut(mut text: String) -> Bounded {
    let bytes = text.len() as u64;
    if text.len() > MAX_RESULT_BYTES {
        let mut at = MAX_RESULT_BYTES;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        text.truncate(at);
    }
    Bounded { text, bytes }
}

/// `string` written as `JSON.stringify` writes a string (ECMA-262 QuoteJSONString: `"`, `\`
/// and the controls `\b \t \n \f \r` escaped by letter, other code units below U+0020 and lone
/// surrogates as `\u` and four lowercase hex digits, everything else as UTF-8), keeping at
/// most `max` bytes: the text stops before the first escape or character that would pass
/// `max`, while `bytes` counts the whole.
pub(super) fn quoted(string: JsStr<'_>, max: usize) -> Bounded {
    let mut out = Writer {
        text: String::new(),
        bytes: 0,
        max,
        full: false,
    };
    out.push_str("\"");
    match string.variant() {
        JsStrVariant::Latin1(units) => {
            for &unit in units {
                match escape(u16::from(unit)) {
                    Some(escaped) => out.push_escape(escaped),
                    None => out.push_char(char::from(unit)),
                }
            }
        }
        JsStrVariant::Utf16(units) => {
            for decoded in char::decode_utf16(units.iter().copied()) {
                match decoded {
                    Ok(c) => match u16::try_from(u32::from(c)).ok().and_then(escape) {
                        Some(escaped) => out.push_escape(escaped),
                        None => out.push_char(c),
                    },
                    Err(lone) => out.push_escape(Escape::Unit(lone.unpaired_surrogate())),
                }
            }
        }
    }
    out.push_str("\"");
    Bounded {
        text: out.text,
        bytes: out.bytes,
    }
}

/// How a code unit that JSON does not write as itself is written.
#[derive(Clone, Copy)]
enum Escape {
    /// A backslash and a letter (or `"` or `\`).
    Short(&'static str),
    /// `\u` and the unit in four lowercase hex digits.
    Unit(u16),
}

/// The escape of `unit`, when JSON escapes it (a lone surrogate is handled by the caller).
fn escape(unit: u16) -> Option<Escape> {
    Some(match unit {
        0x08 => Escape::Short("\\b"),
        0x09 => Escape::Short("\\t"),
        0x0A => Escape::Short("\\n"),
        0x0C => Escape::Short("\\f"),
        0x0D => Escape::Short("\\r"),
        0x22 => Escape::Short("\\\""),
        0x5C => Escape::Short("\\\\"),
        u if u < 0x20 => Escape::Unit(u),
        _ => return None,
    })
}

/// The text kept so far and the bytes of the whole.
struct Writer {
    text: String,
    bytes: u64,
    max: usize,
    /// Something did not fit: nothing more is kept (so the text is a prefix of the whole).
    full: bool,
}

impl Writer {
    fn push_str(&mut self, s: &str) {
        self.bytes += s.len() as u64;
        if !self.full && self.text.len() + s.len() <= self.max {
            self.text.push_str(s);
        } else {
            self.full = true;
        }
    }

    fn push_char(&mut self, c: char) {
        let mut buf = [0; 4];
        self.push_str(c.encode_utf8(&mut buf));
    }

    fn push_escape(&mut self, escape: Escape) {
        match escape {
            Escape::Short(text) => self.push_str(text),
            Escape::Unit(unit) => self.push_str(&format!("\\u{unit:04x}")),
        }
    }
}
