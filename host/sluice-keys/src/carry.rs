//! Judging a page without reading its look-back, when the page before it, in the same
//! version of the file, showed that the look-back holds no armor (docs/keys.md#sequential-pages).
//!
//! A page at `s` is judged on its look-back `W0..s` (`W0 = s - LOOK_BACK_BYTES`, or 0) and on
//! from `s` ([`crate::KeyScan::scan`]). When the bytes `W0 - 1 .. s + 10` hold no NUL byte and
//! no `-----BEGIN` or `-----END` ([`holds_no_marker`]), the scan's answer there follows from
//! little:
//! - no armor line begins in the look-back: each begins with a marker, and its first ten
//!   bytes (five dashes and `BEGIN`, or fewer) lie inside those bytes;
//! - an armor line cut by `W0` ([`crate::cut`]) is judged on the window's first two lines only;
//! - the fail-closed rule stops at the look-back's first whole ordinary line;
//! - so the armor lines that overlap the page are those that begin at `s` or after, and the
//!   search for them does not depend on the bytes before `s`.
//!
//! [`scan_after_clean_look_back`] needs the look-back's first lines (its head) and the bytes
//! from `s` on, and says when its head is too short to judge: then the caller scans the whole
//! window as always. [`holds_no_marker`] is how a page learns the condition for the next one:
//! over the union of what it read and what its own carried condition covered (the two overlap
//! by at least ten bytes, so a marker cannot hide across their seam).

use std::ops::Range;

use crate::armor::has_marker;
use crate::{KeyScan, Window, breaks, cut, find_armor, lines};

/// The longest marker, in bytes: five dashes and `BEGIN` (`-----END` is eight). Two byte
/// ranges that overlap by at least this many bytes hold a marker together only if one of
/// them holds it alone.
pub const MARKER_BYTES: u64 = 10;

/// True when `bytes` holds no NUL byte and no `-----BEGIN` or `-----END`: no armor line, in
/// any form the rules know, can begin inside it.
pub fn holds_no_marker(bytes: &[u8]) -> bool {
    memchr::memchr(0, bytes).is_none() && !has_marker(bytes)
}

/// The [`KeyScan`] of `range` (file offsets), when the bytes from one before the look-back's
/// start to [`MARKER_BYTES`] past `range.start` hold no marker ([`holds_no_marker`], which
/// the caller knows from an earlier page of the same file version).
///
/// `head` is the look-back's first bytes: from `range.start - LOOK_BACK_BYTES` (its
/// `at_line_start` from the byte before), or, when the look-back reaches the start of the
/// file, anything (it is not looked at). `page` is the bytes from `range.start` on, as far
/// as the full scan's window would reach.
///
/// `None` when `head` cannot judge: its first two lines do not end inside it, or it holds no
/// whole ordinary line (so the fail-closed rule would need more of the look-back). The
/// caller then scans the whole window with [`KeyScan::scan`]; so this never answers
/// differently from it.
pub fn scan_after_clean_look_back(
    head: Window<'_>,
    page: &[u8],
    range: Range<u64>,
) -> Option<KeyScan> {
    let look_back_start = range.start.saturating_sub(crate::LOOK_BACK_BYTES);
    if look_back_start > 0 {
        if head.start != look_back_start {
            return None;
        }
        let look_back_len = (range.start - head.start) as usize;
        // The head as far as the bytes after it cannot move its line breaks.
        let head_bytes = breaks::settled(head.bytes.get(..look_back_len.min(head.bytes.len()))?);
        // The cut-armor rule reads the window's first two lines: both must end in the head.
        let (_, second) = breaks::next_break(head_bytes, 0)?;
        breaks::next_break(head_bytes, second)?;
        if cut::cut_at_start(head_bytes, head.at_line_start).is_some() {
            return None;
        }
        // The fail-closed rule is false once a whole ordinary line is seen; anything else
        // needs the whole look-back.
        if !lines::has_whole_ordinary_line(head_bytes, head.at_line_start) {
            return None;
        }
    }
    let armor = find_armor(page, range.start);
    Some(KeyScan {
        overlaps: armor
            .iter()
            .any(|a| a.span.start < range.end && a.span.end > range.start),
        starts_inside: false,
        ends_inside: armor.last().is_some_and(|a| a.begin),
        fail_closed: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LOOK_BACK_BYTES;

    /// Ordinary log text of `len` bytes, in lines of up to 60.
    fn log_text(len: usize, seed: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 64);
        let mut n = seed;
        while out.len() < len {
            out.extend_from_slice(
                format!("2026-12-07 12:00:{:02} request {n} served\n", n % 60).as_bytes(),
            );
            n += 1;
        }
        out.truncate(len);
        out
    }

    fn window(bytes: &[u8], start: usize) -> Window<'_> {
        Window::new(
            &bytes[start..],
            start as u64,
            start.checked_sub(1).map(|i| bytes[i]),
        )
    }

    #[test]
    fn a_page_of_a_log_is_judged_from_the_head_alone() {
        let bytes = log_text(200_000, 0);
        let s = 150_000usize;
        let w0 = s - LOOK_BACK_BYTES as usize;
        let range = s as u64..s as u64 + 30_000;
        let full = KeyScan::scan(window(&bytes, w0), range.clone());
        let head = &bytes[..w0 + 4096];
        let carried = scan_after_clean_look_back(window(head, w0), &bytes[s..], range);
        assert_eq!(carried, Some(full));
        assert_eq!(carried, Some(KeyScan::default()));
    }

    #[test]
    fn a_head_that_cannot_judge_says_so() {
        let mut bytes = log_text(200_000, 0);
        let s = 150_000usize;
        let w0 = s - LOOK_BACK_BYTES as usize;
        // Key-body lines only in the head: the fail-closed rule needs the whole look-back.
        for line in bytes[w0..w0 + 4096].chunks_mut(64) {
            line.fill(b'A');
            line[63] = b'\n';
        }
        let head = &bytes[..w0 + 4096];
        let range = s as u64..s as u64 + 100;
        assert_eq!(
            scan_after_clean_look_back(window(head, w0), &bytes[s..], range.clone()),
            None
        );
        // A head that starts in a cut armor line: the full scan counts it as a BEGIN.
        let mut bytes = log_text(200_000, 0);
        bytes[w0..w0 + 20].copy_from_slice(b"A PRIVATE KEY-----\nx");
        let head = &bytes[..w0 + 4096];
        assert!(KeyScan::scan(window(&bytes, w0), range.clone()).starts_inside);
        assert_eq!(
            scan_after_clean_look_back(window(head, w0), &bytes[s..], range),
            None
        );
    }

    /// Pieces of text the key rules treat specially, none of them a marker.
    fn tricky() -> impl proptest::strategy::Strategy<Value = &'static str> {
        proptest::sample::select(vec![
            "PRIVATE KEY-----",
            "Y-----",
            "RSA PRIVATE\nKEY-----",
            "EC PRIV",
            "ATE KEY BLOCK-----",
            "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n",
            "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY",
            "\n",
            "\r",
            "\r\n",
            "\\",
            "\\n",
            "\\\\r",
            "\\r\\n",
            "  \t",
            "label-chars_",
            "\"",
            "-----",
            "n",
            "r",
            "ordinary words here\n",
            "Proc-Type: 4,ENCRYPTED\n",
        ])
    }

    /// Pieces that may begin armor, for after the page start.
    fn any_piece() -> impl proptest::strategy::Strategy<Value = &'static str> {
        proptest::prop_oneof![
            tricky(),
            proptest::sample::select(vec![
                "-----BEGIN RSA PRIVATE KEY-----\n",
                "-----END EC PRIVATE KEY-----",
                "-----BEGIN ",
                "-----BEGIN\n",
                "-\0-\0-\0-\0-\0B\0E\0G\0I\0N\0 \0",
                "\0",
                "--------END PRIVATE KEY-----",
            ]),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 1000,
            max_global_rejects: 20_000,
            ..Default::default()
        })]

        /// Wherever the look-back (and ten bytes past the page start) holds no marker, the
        /// scan from the head and the page alone answers as the full scan does, or not at all.
        #[test]
        fn the_carried_scan_answers_as_the_full_scan(
            pre in 0usize..300,
            head in proptest::collection::vec(tricky(), 0..12),
            at in 0usize..400,
            back in 0usize..24,
            page in proptest::collection::vec(any_piece(), 0..12),
            range_len in 1u64..600,
            seed in 0usize..1000,
        ) {
            let mut bytes = log_text(pre, seed);
            bytes.extend(head.concat().into_bytes());
            let w0 = at.min(bytes.len());
            let s = w0 + LOOK_BACK_BYTES as usize;
            let fill = (s - back).saturating_sub(bytes.len());
            bytes.extend(log_text(fill, seed + 7));
            bytes.truncate(s - back);
            bytes.extend(page.concat().into_bytes());
            bytes.extend(log_text(200, seed + 3));
            let range = s as u64..(s as u64 + range_len).min(bytes.len() as u64);
            let clean_from = w0.saturating_sub(1);
            let clean_to = (s + MARKER_BYTES as usize).min(bytes.len());
            proptest::prop_assume!(holds_no_marker(&bytes[clean_from..clean_to]));
            let full = KeyScan::scan(window(&bytes, w0), range.clone());
            let head = &bytes[..(w0 + 4096).min(s)];
            let carried = scan_after_clean_look_back(window(head, w0), &bytes[s..], range);
            proptest::prop_assert!(carried.is_none() || carried.as_ref() == Some(&full), "{carried:?} vs {full:?}");
        }
    }
}
