//! Finding PEM private-key armor lines in bytes (docs/keys.md#armor), in time linear in the
//! bytes searched whatever they hold.
//!
//! An armor line is `-----BEGIN ` or `-----END `, then label characters (letters, digits,
//! spaces, `_`, `-`), then `PRIVATE KEY` and optionally ` BLOCK`, then `-----`; it is found
//! anywhere in a line and its label has no length limit. Two more forms count, because a
//! key written in them is just as readable:
//! - **split across one line break**: a line that ends in `-----BEGIN ` or `-----END ` and
//!   label characters (`-----BEGIN RSA PRIVATE`), completed by the start of the next line
//!   (`KEY-----`, optionally indented, after one line break of the key rules: `\n`,
//!   `\r\n`, a lone `\r`, or an escaped one such as the two characters `\n`; see
//!   [`crate::breaks`]), joined either directly or with one space. Two breaks or more are
//!   not followed;
//! - **with NUL bytes interleaved**, as UTF-16 and UTF-32 write ASCII text: NUL bytes are
//!   ignored, so `-\0-\0-\0-\0-\0B\0E\0G\0I\0N\0 \0…` is armor too. The tools transcode
//!   nothing (docs/paging.md#text-and-bytes), so the page of a UTF-16 file shows those bytes
//!   as they are;
//!   the key rules judge the same bytes, NULs ignored.

use std::borrow::Cow;
use std::sync::LazyLock;

use memchr::memmem;

use crate::breaks;

/// The text every armor line holds before its tail.
pub(crate) const KEY: &[u8] = b"PRIVATE KEY";
/// The marker of a BEGIN line.
pub(crate) const BEGIN: &[u8] = b"-----BEGIN ";
/// The marker of an END line.
pub(crate) const END: &[u8] = b"-----END ";
/// What the first part of a split BEGIN line starts with: the space after the keyword may
/// be the line break itself.
pub(crate) const SPLIT_BEGIN: &[u8] = b"-----BEGIN";
/// What the first part of a split END line starts with.
pub(crate) const SPLIT_END: &[u8] = b"-----END";

/// One armor line: `bytes[start..end]` is its text from the marker to the closing `-----`
/// (for a split line, from the marker on one line to the `-----` on the next).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// True for BEGIN, false for END.
    pub(crate) begin: bool,
}

/// A label character: what may stand between the marker and `PRIVATE KEY`.
pub(crate) fn is_label(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b' ' | b'_' | b'-')
}

/// `bytes` without its NUL bytes (borrowed when it has none).
pub(crate) fn visible(bytes: &[u8]) -> Cow<'_, [u8]> {
    if memchr::memchr(0, bytes).is_none() {
        Cow::Borrowed(bytes)
    } else {
        Cow::Owned(bytes.iter().copied().filter(|&b| b != 0).collect())
    }
}

/// True when `bytes` holds an armor line in any of the forms of the module docs.
pub(crate) fn any(bytes: &[u8]) -> bool {
    let v = visible(bytes);
    if !has_marker(&v) {
        return false;
    }
    Plain::new(&v).next().is_some()
        || split(&v, SPLIT_BEGIN)
            .chain(split(&v, SPLIT_END))
            .next()
            .is_some()
}

/// True when `bytes` holds a run of at least five `-` followed by `BEGIN` or `END`: every
/// form of armor starts with one ([`SPLIT_BEGIN`], [`SPLIT_END`]). One scan for `-----`,
/// so that text without armor (nearly all of it) costs a single pass instead of one per
/// marker.
pub(crate) fn has_marker(bytes: &[u8]) -> bool {
    static DASHES: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new(b"-----"));
    let mut from = 0;
    while let Some(i) = DASHES.find(&bytes[from..]) {
        // The end of this run of dashes: a marker's keyword follows its last five.
        let run = from + i + 5;
        let end = bytes[run..]
            .iter()
            .position(|&b| b != b'-')
            .map_or(bytes.len(), |k| run + k);
        let rest = &bytes[end..];
        if rest.starts_with(b"BEGIN") || rest.starts_with(b"END") {
            return true;
        }
        from = end;
    }
    false
}

/// Every armor line of `bytes`, in order and without overlaps (of two that overlap, the one
/// that starts first is kept), as positions in `bytes` itself.
///
/// Text without a marker ([`has_marker`]), nearly all of it, costs one scan for `-----`
/// instead of the three marker scans: a page of a log with its look-back (about 193 KiB)
/// is scanned on every `read_file` call.
pub(crate) fn spans(bytes: &[u8]) -> Vec<Span> {
    let v = visible(bytes);
    if !has_marker(&v) {
        return Vec::new();
    }
    let mut kept = scan(&v);
    if matches!(v, Cow::Owned(_)) {
        to_original(bytes, &mut kept);
    }
    kept
}

/// The armor lines of `v` (text without NUL bytes), in order and without overlaps, found
/// by the three marker scans.
fn scan(v: &[u8]) -> Vec<Span> {
    let mut all: Vec<Span> = Plain::new(v)
        .chain(split(v, SPLIT_BEGIN))
        .chain(split(v, SPLIT_END))
        .collect();
    // Stable: of two spans starting at one marker, the plain one comes first.
    all.sort_by_key(|s| s.start);
    let mut kept: Vec<Span> = Vec::with_capacity(all.len());
    for s in all {
        if kept.last().is_none_or(|k| s.start >= k.end) {
            kept.push(s);
        }
    }
    kept
}

/// Moves `spans`, found in `bytes` with its NUL bytes left out, to positions in `bytes`.
pub(crate) fn to_original(bytes: &[u8], spans: &mut [Span]) {
    // Every span start and every span end − 1 is the index of a visible byte, and over
    // ordered spans without overlaps those indices never decrease: one pass finds them all.
    let mut positions = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b != 0)
        .map(|(i, _)| i);
    let (mut seen, mut at) = (0usize, 0usize);
    let mut original = |visible_index: usize| {
        while seen <= visible_index {
            at = positions.next().unwrap_or(bytes.len());
            seen += 1;
        }
        at
    };
    for s in spans {
        s.start = original(s.start);
        s.end = original(s.end - 1) + 1;
    }
}

/// The armor lines written on one line, in order, without overlaps.
///
/// Each `PRIVATE KEY` followed by `-----` or ` BLOCK-----` is a candidate; the run of label
/// characters before it (stopping at the end of the previous armor line) must hold a
/// marker, and the last marker in it decides BEGIN or END. A run that held no marker is
/// remembered, so a later candidate in the same run looks only at what follows it: every
/// byte is scanned back over at most once, however long the run.
struct Plain<'a> {
    bytes: &'a [u8],
    candidates: memmem::FindIter<'a, 'static>,
    /// Where the previous armor line ended: nothing before it is looked at again.
    after_last: usize,
    /// A run of label characters known to hold no marker (`start..end`, `end` the
    /// position of the candidate that looked at it).
    clean: Option<(usize, usize)>,
}

impl<'a> Plain<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Plain {
            bytes,
            candidates: memmem::find_iter(bytes, KEY),
            after_last: 0,
            clean: None,
        }
    }
}

impl Iterator for Plain<'_> {
    type Item = Span;

    fn next(&mut self) -> Option<Span> {
        let bytes = self.bytes;
        for key in self.candidates.by_ref() {
            if key < self.after_last {
                continue;
            }
            let rest = &bytes[key + KEY.len()..];
            let tail = if rest.starts_with(b"-----") {
                5
            } else if rest.starts_with(b" BLOCK-----") {
                11
            } else {
                continue;
            };
            // Scan back over label characters, to the previous armor line at most, or to
            // the end of the clean run this one continues.
            let floor = self.clean.map_or(self.after_last, |(_, end)| end);
            let mut start = key;
            while start > floor && is_label(bytes[start - 1]) {
                start -= 1;
            }
            let (run_start, search_from) = match self.clean {
                // The run reaches back into the clean run: only markers that end after
                // its start can be new.
                Some((clean_start, clean_end)) if start == clean_end => (
                    clean_start,
                    clean_end.saturating_sub(BEGIN.len() - 1).max(clean_start),
                ),
                _ => (start, start),
            };
            let label = &bytes[search_from..key];
            let (at, begin) = match (memmem::rfind(label, BEGIN), memmem::rfind(label, END)) {
                (Some(b), Some(e)) if b > e => (b, true),
                (Some(b), None) => (b, true),
                (_, Some(e)) => (e, false),
                (None, None) => {
                    self.clean = Some((run_start, key));
                    continue;
                }
            };
            let end = key + KEY.len() + tail;
            self.after_last = end;
            self.clean = None;
            return Some(Span {
                start: search_from + at,
                end,
                begin,
            });
        }
        None
    }
}

/// Armor lines split across one line break whose first part starts with `marker`
/// ([`SPLIT_BEGIN`] or [`SPLIT_END`]; see the module docs).
fn split<'a>(bytes: &'a [u8], marker: &'static [u8]) -> impl Iterator<Item = Span> + 'a {
    // The end of the label run of the previous marker: a marker inside it is in the same
    // run, whose line break that marker already judged.
    let mut run_end = 0;
    memmem::find_iter(bytes, marker).filter_map(move |p| {
        if p < run_end {
            return None;
        }
        let q = bytes[p..]
            .iter()
            .position(|&b| !is_label(b))
            .map_or(bytes.len(), |i| p + i);
        run_end = q;
        let head = match breaks::break_len_at(bytes, q) {
            0 => return None,
            n => breaks::indent_end(bytes, q + n),
        };
        let head_end = bytes[head..]
            .iter()
            .position(|&b| !is_label(b))
            .map_or(bytes.len(), |i| head + i);
        if head_end == head {
            return None;
        }
        let mut first = &bytes[p..q];
        while let Some(rest) = first.strip_suffix(b" ") {
            first = rest;
        }
        let second = &bytes[head..head_end];
        for joint in [&b""[..], b" "] {
            let joined = [first, joint, second].concat();
            let cut = first.len() + joint.len();
            // Only armor that starts on the first line and ends on the second: armor within
            // one line is found by `Plain`.
            if let Some(s) = Plain::new(&joined).find(|s| s.start < first.len() && s.end > cut) {
                return Some(Span {
                    start: p + s.start,
                    end: head + (s.end - cut),
                    begin: s.begin,
                });
            }
        }
        None
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &[u8]) -> Vec<(usize, usize, bool)> {
        spans(text)
            .into_iter()
            .map(|s| (s.start, s.end, s.begin))
            .collect()
    }

    #[test]
    fn plain_lines_and_their_kind() {
        let t = b"x -----BEGIN RSA PRIVATE KEY----- y -----END RSA PRIVATE KEY-----";
        assert_eq!(found(t), [(2, 33, true), (36, 65, false)]);
        // The last marker before PRIVATE KEY decides.
        let t = b"-----END -----BEGIN PRIVATE KEY-----";
        assert_eq!(found(t), [(9, 36, true)]);
        let t = b"-----BEGIN PGP PRIVATE KEY BLOCK-----";
        assert_eq!(found(t), [(0, t.len(), true)]);
    }

    #[test]
    fn labels_of_any_length() {
        for n in [1000, 1100, 5000, 100_000] {
            let t = format!("-----BEGIN {} PRIVATE KEY-----", "A".repeat(n));
            assert_eq!(found(t.as_bytes()), [(0, t.len(), true)], "{n}");
        }
        // Many candidates in one long run without a marker, then one with a marker: each
        // found, none missed.
        let t = format!(
            "{}-----BEGIN X PRIVATE KEY-----",
            "A PRIVATE KEY-----".repeat(10_000)
        );
        assert_eq!(found(t.as_bytes()), [(180_000, t.len(), true)]);
    }

    #[test]
    fn split_across_one_line_break() {
        for (text, start, end) in [
            ("-----BEGIN RSA PRIVATE\r\nKEY-----\n", 0, 32),
            ("-----BEGIN RSA PRIVATE \nKEY-----", 0, 32),
            ("a -----BEGIN RSA\n  PRIVATE KEY-----", 2, 35),
            ("-----BEGIN RSA PRIV\nATE KEY-----", 0, 32),
            ("-----BEGIN RSA PRIVATE KEY\n-----", 0, 32),
            ("-----BEGIN\nPRIVATE KEY-----", 0, 27),
            // A lone `\r`, escaped breaks, a `\` before a break, escaped indentation.
            ("-----BEGIN RSA PRIVATE\rKEY-----", 0, 31),
            ("-----BEGIN RSA PRIVATE\\nKEY-----", 0, 32),
            ("-----BEGIN RSA PRIVATE\\\\r\\nKEY-----", 0, 35),
            ("-----BEGIN RSA PRIVATE\\\nKEY-----", 0, 32),
            ("-----BEGIN RSA PRIVATE\\n\\tKEY-----", 0, 34),
        ] {
            assert_eq!(found(text.as_bytes()), [(start, end, true)], "{text:?}");
        }
        assert_eq!(found(b"-----END EC PRIVATE\nKEY-----"), [(0, 28, false)]);
        // Two breaks, or something else between the parts, are not followed.
        for text in [
            "-----BEGIN RSA\nPRIVATE\nKEY-----",
            "-----BEGIN RSA PRIVATE\n\nKEY-----",
            "-----BEGIN RSA PRIVATE.\nKEY-----",
            "-----BEGIN RSA PRIVATE\nKEY",
            "-----BEGIN CERTIFICATE\n-----",
            "-----BEGIN RSA PRIVATE\\xKEY-----",
            "-----BEGIN RSA PRIVATE\\n\\nKEY-----",
        ] {
            assert_eq!(found(text.as_bytes()), [], "{text:?}");
        }
    }

    #[test]
    fn any_agrees_with_spans() {
        for text in [
            "",
            "-----",
            "------BEGIN RSA PRIVATE KEY-----",
            "---------- END\n-----BEGIN EC PRIVATE KEY-----",
            "-----BEGIN CERTIFICATE-----",
            "a ----- b ------ c -----END RSA PRIVATE KEY-----",
            "---- BEGIN RSA PRIVATE KEY----",
            "-----BEGIN RSA PRIVATE\nKEY-----",
            "-----END",
            "x -----BEGINRSA PRIVATE KEY-----",
        ] {
            let b = text.as_bytes();
            assert_eq!(any(b), !spans(b).is_empty(), "{text:?}");
            assert!(has_marker(b) || scan(b).is_empty(), "{text:?}");
        }
        assert!(any(b"------BEGIN RSA PRIVATE KEY-----"));
        assert!(!any(b"----- BEGIN RSA PRIVATE KEY-----"));
        assert!(!has_marker(b"----- BEGIN -----x ----"));
        assert!(has_marker(b"--- -------END"));
    }

    /// Text built from the pieces armor is made of: a marker of 5–7 dashes, a keyword, a
    /// label, `PRIVATE KEY` split or not, a tail, between runs of other pieces. Most of it
    /// holds armor (plain, split across a line break, chained); some is near armor.
    fn armor_like() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let junk = proptest::collection::vec(
            proptest::sample::select(vec![
                "-", "-----", "BEGIN", "END", " ", "PRIVATE", " KEY", "\n", "\r\n", "x", "\\", "\r",
            ]),
            0..6,
        )
        .prop_map(|p| p.concat());
        (
            junk.clone(),
            5..8usize,
            proptest::sample::select(vec!["BEGIN", "END", "BEGI", "ENDX"]),
            proptest::sample::select(vec![" ", "", "\n", "\r\n", "  ", "\\\n", "\\n", "\n\t"]),
            proptest::sample::select(vec!["RSA ", "EC ", "", "OPENSSH ", "A-B_C "]),
            proptest::sample::select(vec!["PRIVATE", "PRIV\nATE", "PRIVATE\n"]),
            proptest::sample::select(vec![" KEY", "\nKEY", " \nKEY", "KEY", " KEY\n"]),
            proptest::sample::select(vec!["-----", " BLOCK-----", "\n-----", "----", ""]),
            junk,
        )
            .prop_map(|(pre, dashes, kw, sep, label, private, key, tail, post)| {
                format!(
                    "{pre}{}{kw}{sep}{label}{private}{key}{tail}{post}",
                    "-".repeat(dashes)
                )
            })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

        /// The prefilter never hides armor: wherever the marker scans find an armor line,
        /// [`has_marker`] is true (so [`spans`] may skip them when it is false).
        #[test]
        fn has_marker_is_a_sound_prefilter(parts in proptest::collection::vec(armor_like(), 1..4)) {
            let text = parts.concat();
            let found = scan(text.as_bytes());
            proptest::prop_assert!(found.is_empty() || has_marker(text.as_bytes()), "{text:?}: {found:?}");
        }
    }

    /// `text` as JSON writes it in a string, without the quotes (serde_json's escapes).
    fn json_escaped(text: &str) -> String {
        let mut out = String::new();
        for c in text.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

        /// JSON-escaping a text adds no armor: the host scans an observation's JSON text,
        /// and redacts what it repeats before escaping it, so armor must not appear in the
        /// escaped form of a text that holds none (docs/keys.md#line-breaks).
        #[test]
        fn json_escaping_adds_no_armor(
            parts in proptest::collection::vec(
                (armor_like(), proptest::sample::select(vec!["", "\\", "\\\\", "\t", "\"", "\0", "\\n", "\\r", "\r", "\\t"])),
                1..4,
            ),
        ) {
            let text: String = parts.iter().flat_map(|(a, b)| [a.as_str(), b]).collect();
            let escaped = json_escaped(&text);
            proptest::prop_assert!(!any(escaped.as_bytes()) || any(text.as_bytes()), "{text:?} -> {escaped:?}");
            let redacted = crate::redact_armor(&text);
            proptest::prop_assert!(!any(json_escaped(&redacted).as_bytes()), "{redacted:?}");
        }
    }

    #[test]
    fn nul_bytes_are_ignored() {
        let utf16: Vec<u8> = "ab\n-----BEGIN EC PRIVATE KEY-----\n"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        // 'a' 0 'b' 0 '\n' 0, then the marker from byte 6 to the last '-' at byte 64.
        assert_eq!(found(&utf16), [(6, 65, true)]);
        assert!(any(&utf16));
        let be: Vec<u8> = "-----END EC PRIVATE KEY-----"
            .encode_utf16()
            .flat_map(u16::to_be_bytes)
            .collect();
        assert_eq!(found(&be), [(1, 56, false)]);
    }
}
