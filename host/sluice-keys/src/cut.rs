//! An armor line cut by the start of a window (docs/keys.md#cut-armor).
//!
//! A window that starts inside an armor line does not see its marker (`-----BEGIN `), so
//! [`crate::armor`] does not find it; yet what follows it may be a key. That happens when
//! the look-back starts inside a BEGIN line, and on every page of a label longer than the
//! look-back. The window's first line is read as the rest of an armor line when it starts
//! with
//!
//! - label characters (none of them a whole marker) and then `PRIVATE KEY-----` or
//!   `PRIVATE KEY BLOCK-----`, or
//! - the last [`MIN_CUT_TAIL`] or more characters of `PRIVATE KEY-----` or
//!   `PRIVATE KEY BLOCK-----` (`IVATE KEY-----`, `Y-----`),
//!
//! or, when the window starts inside a line that is all label characters, when that line
//! and the start of the next one, joined as a split armor line is (directly or with one
//! space), start so. A window that starts at a line start is judged only on its first line,
//! as the second part of a split armor line. The marker is out of sight, so the kind is not
//! known; the caller counts the line as a BEGIN.

use std::borrow::Cow;

use memchr::memmem;

use crate::armor::{BEGIN, END, KEY, Span, is_label, to_original, visible};
use crate::breaks;

/// The fewest characters of the tail that count: `Y-----`, the first with a letter. Fewer
/// (`-----`) are too common in text (a rule drawn with dashes) to be read as armor; a window
/// that starts in them is left to the fail-closed rule.
pub(crate) const MIN_CUT_TAIL: usize = 6;

/// The tails every armor line ends with.
const TAILS: [&[u8]; 2] = [b"PRIVATE KEY-----", b"PRIVATE KEY BLOCK-----"];

/// The armor line cut by the start of `window`, if there is one: its span in `window`, from
/// 0 to the end of its closing `-----`. `at_line_start` says whether the byte before
/// `window` ends a line. Looks at the window's first two lines only, once.
pub(crate) fn cut_at_start(window: &[u8], at_line_start: bool) -> Option<Span> {
    // The first line, and the second (a split armor line's second part), with their NULs.
    let (first_end, second_start) =
        breaks::next_break(window, 0).unwrap_or((window.len(), window.len()));
    let second_end = breaks::next_break(window, second_start).map_or(window.len(), |(s, _)| s);
    let raw = &window[..second_end];
    let v = visible(raw);
    let had_nuls = matches!(v, Cow::Owned(_));
    let nuls_before = |i: usize| raw[..i].iter().filter(|&&b| b == 0).count();
    let (first_end, second_start) = if had_nuls {
        (
            first_end - nuls_before(first_end),
            second_start - nuls_before(second_start),
        )
    } else {
        (first_end, second_start)
    };
    let first = &v[..first_end];
    let end = if at_line_start {
        let indent = breaks::indent_end(first, 0);
        tail_at_start(&first[indent..]).map(|e| indent + e)
    } else {
        tail_at_start(first).or_else(|| joined_tail(first, &v[second_start..], second_start))
    }?;
    let mut span = [Span {
        start: 0,
        end,
        begin: true,
    }];
    if had_nuls {
        to_original(raw, &mut span);
    }
    Some(span[0])
}

/// When `first` (a partial line) is all label characters, the end (in the text whose
/// `second` starts at `second_start`) of the armor tail that `first` joined to the start of
/// `second` begins with, if it ends in `second`.
fn joined_tail(first: &[u8], second: &[u8], second_start: usize) -> Option<usize> {
    if !first.iter().all(|&b| is_label(b)) {
        return None;
    }
    let mut first = first;
    while let Some(rest) = first.strip_suffix(b" ") {
        first = rest;
    }
    let head = breaks::indent_end(second, 0);
    let head_end = head + second[head..].iter().take_while(|&&b| is_label(b)).count();
    let second_part = &second[head..head_end];
    [&b""[..], b" "].iter().find_map(|joint| {
        let cut = first.len() + joint.len();
        let end = tail_at_start(&[first, joint, second_part].concat())?;
        (end > cut).then(|| second_start + head + (end - cut))
    })
}

/// Where the armor tail that `text` starts with ends (see the module docs), if it starts
/// with one.
fn tail_at_start(text: &[u8]) -> Option<usize> {
    let run = &text[..text.iter().take_while(|&&b| is_label(b)).count()];
    for key in memmem::find_iter(run, KEY) {
        let rest = &run[key + KEY.len()..];
        let tail = if rest.starts_with(b"-----") {
            5
        } else if rest.starts_with(b" BLOCK-----") {
            11
        } else {
            continue;
        };
        let before = &run[..key];
        // A whole marker before it: a whole armor line, which the armor scan finds.
        if memmem::find(before, BEGIN).is_some() || memmem::find(before, END).is_some() {
            return None;
        }
        return Some(key + KEY.len() + tail);
    }
    TAILS.iter().find_map(|full| {
        (MIN_CUT_TAIL..full.len())
            .rev()
            .find(|&n| text.starts_with(&full[full.len() - n..]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(text: &[u8], at_line_start: bool) -> Option<(usize, usize)> {
        cut_at_start(text, at_line_start).map(|s| (s.start, s.end))
    }

    #[test]
    fn the_rest_of_an_armor_line() {
        let begin = "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: x\n";
        // Every start inside the line down to `Y BLOCK-----` finds the line's end (37).
        for at in 1..=(37 - MIN_CUT_TAIL) {
            assert_eq!(
                cut(&begin.as_bytes()[at..], false),
                Some((0, 37 - at)),
                "{at}"
            );
        }
        for at in (37 - MIN_CUT_TAIL + 1)..37 {
            assert_eq!(cut(&begin.as_bytes()[at..], false), None, "{at}");
        }
        // Text after the tail on the same line (a quoted value).
        assert_eq!(cut(b"SA PRIVATE KEY-----\"\nx", false), Some((0, 19)));
        // A long label.
        let label = format!("{} PRIVATE KEY-----\nMIIE\n", "A".repeat(200_000));
        assert_eq!(cut(label.as_bytes(), false), Some((0, 200_017)));
        // A whole armor line in the first line is not cut (the scan finds it).
        assert_eq!(cut(b"x -----BEGIN RSA PRIVATE KEY-----\n", false), None);
        assert_eq!(cut(b"x -----END RSA PRIVATE KEY-----\n", false), None);
        // Ordinary text and dashes are not; a window with no line break at all may be.
        assert_eq!(cut(b"an ordinary line\nand another", false), None);
        assert_eq!(cut(b"-----\n", false), None);
        assert_eq!(cut(b"E KEY-----", false), Some((0, 10)));
        // Lone `\r` and escaped breaks end the first line too.
        assert_eq!(cut(b"E KEY-----\rMIIE", false), Some((0, 10)));
        assert_eq!(cut(br"E KEY-----\nMIIE", false), Some((0, 10)));
    }

    #[test]
    fn split_lines_and_line_starts() {
        // Inside the first part of a split line, completed by the next line.
        assert_eq!(cut(b"SA PRIV\n  ATE KEY-----\n", false), Some((0, 22)));
        assert_eq!(cut(b"SA PRIVATE \r\nKEY-----\r\n", false), Some((0, 21)));
        assert_eq!(cut(br"SA PRIVATE\nKEY-----\n", false), Some((0, 20)));
        assert_eq!(cut(b"SA\nPRIVATE\nKEY-----\n", false), None);
        // At a line start, only the line itself is read, after its indentation.
        assert_eq!(cut(b"  RSA PRIVATE KEY-----\nx\n", true), Some((0, 22)));
        assert_eq!(cut(b"SA PRIV\nATE KEY-----\n", true), None);
        assert_eq!(cut(b"-----\nx\n", true), None);
    }

    #[test]
    fn nul_bytes_are_ignored() {
        let utf16: Vec<u8> = "E KEY-----\nMIIE\n"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        // `E\0 \0…-\0`: the last `-` is byte 18.
        assert_eq!(cut(&utf16, false), Some((0, 19)));
    }
}
