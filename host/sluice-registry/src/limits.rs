//! What Sluice reads from a registry, at most, and for how long: every body is read up to a
//! bound (a manifest's limit, a blob's descriptor size, a token's and an error body's
//! fixed caps) and every request has a deadline, so a registry that sends too much, or
//! sends it slowly, costs a bounded amount of memory and time (`docs/configuration.md#registry`).
//! What a registry says that goes into a message or a log line is [`quoted`]: escaped and
//! cut, so it cannot forge lines.

use std::time::Duration;

pub use sluice_registry_terms::limits::{
    DEFAULT_MAX_COMPONENT_BYTES, DEFAULT_MAX_MANIFEST_BYTES, DEFAULT_TIMEOUT,
    KEY_MAX_COMPONENT_BYTES, KEY_MAX_MANIFEST_BYTES, KEY_TIMEOUT_SECS, Limits,
};

/// The largest cosign signature payload read, in bytes (64 KiB; cosign's are ~250 bytes).
pub const MAX_SIGNATURE_PAYLOAD_BYTES: u64 = 64 << 10;

/// The largest token response read from a registry's token service, in bytes (1 MiB;
/// tokens are a few KiB).
pub const MAX_TOKEN_BYTES: u64 = 1 << 20;

/// How much of an error response's body is read, in bytes (the rest is not).
pub const MAX_ERROR_BODY_BYTES: u64 = 4 << 10;

/// How many characters of a registry's text (an error body, a header) a message or a log
/// line shows, after escaping, before `…`.
pub const MAX_QUOTED_CHARS: usize = 200;

/// `text` as a message or a log line may show it: lossy UTF-8, between double quotes, with
/// control characters, quotes and backslashes escaped (`\n`, `\"`, `\u{1b}`), cut after
/// [`MAX_QUOTED_CHARS`] characters with `…` when longer. The result is one line.
pub fn quoted(text: &[u8]) -> String {
    let text = String::from_utf8_lossy(text);
    let mut out = String::with_capacity(text.len().min(MAX_QUOTED_CHARS) + 8);
    out.push('"');
    for (shown, c) in text.chars().enumerate() {
        if shown == MAX_QUOTED_CHARS {
            out.push('…');
            break;
        }
        out.extend(c.escape_debug());
    }
    out.push('"');
    out
}

/// `d` as messages show it: `60 s`, `0.25 s`.
pub(crate) fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_text_is_one_escaped_line_cut_at_the_bound() {
        assert_eq!(
            quoted(b"oops\nERROR forged \"x\"\x1b[31m"),
            r#""oops\nERROR forged \"x\"\u{1b}[31m""#
        );
        let long = vec![b'a'; 1000];
        let q = quoted(&long);
        assert_eq!(q, format!("\"{}…\"", "a".repeat(MAX_QUOTED_CHARS)));
        assert_eq!(quoted(b"\xff\r"), "\"\u{fffd}\\r\"");
        assert_eq!(seconds(Duration::from_millis(250)), "0.25 s");
        assert_eq!(seconds(DEFAULT_TIMEOUT), "60 s");
    }
}
