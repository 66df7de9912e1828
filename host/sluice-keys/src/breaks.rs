//! Line breaks as the key rules see them (docs/keys.md#line-breaks).
//!
//! A key is as readable whatever ends its lines, so the key rules break lines more eagerly
//! than paging does (docs/paging.md#text-and-bytes, where only `\n` ends a line):
//!
//! - `\n`, `\r\n` and a lone `\r`;
//! - an **escaped** break: one or more `\` followed by `n` or `r` (`\n`, `\\n`, `\r`), as a
//!   key written into one JSON, `.env` or source-code string holds its line breaks. `\`
//!   before a real break belongs to it (a line continuation). An `\r` half (escaped or
//!   not) directly followed by an `\n` half is one break, like `\r\n`. So the breaks of a
//!   text are those of its JSON-escaped form, which the host scans.
//!
//! NUL bytes are ignored throughout the key rules (docs/keys.md#armor): a real break is
//! found in UTF-16 text as it is (its NUL goes with a neighbouring line, whose text is judged
//! without it), and an escaped one may have NULs between its `\` and its letter.
//! [`indent_end`] expects text without NULs.

/// The first line break in `bytes` at or after `from`, as `(start, end)`: `bytes[start..end]`
/// is the break. Linear in the bytes it passes over, whatever they hold: a run of `\` that
/// does not end a line is passed over at once.
pub(crate) fn next_break(bytes: &[u8], mut from: usize) -> Option<(usize, usize)> {
    loop {
        let i = from + memchr::memchr3(b'\n', b'\r', b'\\', bytes.get(from..)?)?;
        match break_at(bytes, i) {
            Ok(end) => return Some((i, end)),
            Err(run_end) => from = run_end,
        }
    }
}

/// One half of a break at `bytes[at]`: a run of `\` (NULs may be interleaved, as in a
/// UTF-16 file; the run may be empty) followed by `\n` or `\r`, or a non-empty run followed by
/// the letter `n` or `r`. `Ok((end, letter))` with `letter` `b'n'` or `b'r'`, or `Err` with
/// the end of the run (the next byte to look at).
///
/// So a `\` before a real break belongs to it (a line continuation), and a text's breaks
/// are the breaks of its JSON-escaped form: escaping doubles each `\` and writes `\n`, `\r`
/// as `\n`, `\r`, which this reads as the same halves.
fn half(bytes: &[u8], at: usize) -> Result<(usize, u8), usize> {
    let run = bytes[at..].iter().take_while(|&&b| b == b'\\' || b == 0);
    let (len, slashes) = run.fold((0, 0), |(n, s), &b| (n + 1, s + usize::from(b == b'\\')));
    let run_end = at + len;
    match bytes.get(run_end) {
        Some(b'\n') => Ok((run_end + 1, b'n')),
        Some(b'\r') => Ok((run_end + 1, b'r')),
        Some(&c @ (b'n' | b'r')) if slashes > 0 => Ok((run_end + 1, c)),
        _ => Err(run_end.max(at + 1)),
    }
}

/// The break at `bytes[at]`: an `r` half directly followed by an `n` half is one break (like
/// `\r\n`), any other half is one alone. `Ok(end)`, or `Err` as [`half`].
fn break_at(bytes: &[u8], at: usize) -> Result<usize, usize> {
    let (end, letter) = half(bytes, at)?;
    match (letter, half(bytes, end)) {
        (b'r', Ok((crlf_end, b'n'))) => Ok(crlf_end),
        _ => Ok(end),
    }
}

/// The length of the line break that starts at `bytes[at]`, or 0 when none does. Looks at
/// the break alone (and a run of `\` at `at`), never further.
pub(crate) fn break_len_at(bytes: &[u8], at: usize) -> usize {
    match bytes.get(at) {
        Some(b'\n' | b'\r' | b'\\') => break_at(bytes, at).map_or(0, |end| end - at),
        _ => 0,
    }
}

/// Where the indentation starting at `bytes[at]` ends: spaces, tabs and escaped tabs (one
/// or more `\` followed by `t`, as in a string literal, or by a tab, which is the same once
/// JSON-escaped).
pub(crate) fn indent_end(bytes: &[u8], mut at: usize) -> usize {
    loop {
        match bytes.get(at) {
            Some(b' ' | b'\t') => at += 1,
            Some(b'\\') => {
                let run_end = at + bytes[at..].iter().take_while(|&&b| b == b'\\').count();
                if !matches!(bytes.get(run_end), Some(b't' | b'\t')) {
                    return at;
                }
                at = run_end + 1;
            }
            _ => return at,
        }
    }
}

/// `bytes` up to and including its last byte that can be no part of a line break (any but
/// `\\`, `\n`, `\r`, `n`, `r` and NUL): the breaks, and so the lines, of what it returns are
/// the same whatever bytes follow it, since a break is made of those bytes only.
pub(crate) fn settled(bytes: &[u8]) -> &[u8] {
    let end = bytes
        .iter()
        .rposition(|b| !matches!(b, b'\\' | b'\n' | b'\r' | b'n' | b'r' | 0))
        .map_or(0, |i| i + 1);
    &bytes[..end]
}

/// The lines of `bytes` split at every [`next_break`], each with whether a break ends it
/// (only the last can be unterminated; an empty `bytes` has no line).
pub(crate) fn lines(bytes: &[u8]) -> impl Iterator<Item = (&[u8], bool)> {
    let mut from = Some(0);
    std::iter::from_fn(move || {
        let start = from?;
        match next_break(bytes, start) {
            Some((b, e)) => {
                from = Some(e);
                Some((&bytes[start..b], true))
            }
            None => {
                from = None;
                (start < bytes.len()).then(|| (&bytes[start..], false))
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Vec<(String, bool)> {
        lines(text.as_bytes())
            .map(|(l, t)| (String::from_utf8_lossy(l).into_owned(), t))
            .collect()
    }

    #[test]
    fn real_and_escaped_breaks() {
        let v = |pairs: &[(&str, bool)]| -> Vec<(String, bool)> {
            pairs.iter().map(|(s, t)| (s.to_string(), *t)).collect()
        };
        assert_eq!(
            split("a\nb\r\nc\rd"),
            v(&[("a", true), ("b", true), ("c", true), ("d", false)])
        );
        assert_eq!(
            split(r"a\nb\r\nc\rd\\ne"),
            v(&[
                ("a", true),
                ("b", true),
                ("c", true),
                ("d", true),
                ("e", false)
            ])
        );
        // A `\` before anything else is text.
        assert_eq!(split(r"C:\temp\x\\y\"), v(&[(r"C:\temp\x\\y\", false)]));
        assert_eq!(split("a\n"), v(&[("a", true)]));
        assert_eq!(split("\n\n"), v(&[("", true), ("", true)]));
        assert_eq!(split(""), v(&[]));
        // An `\r` half and an `\n` half, escaped or not, are one break; `\n` then `\r` two.
        assert_eq!(split("a\r\\nb"), v(&[("a", true), ("b", false)]));
        assert_eq!(split("a\\r\nb"), v(&[("a", true), ("b", false)]));
        assert_eq!(
            split("a\\n\rb"),
            v(&[("a", true), ("", true), ("b", false)])
        );
        // A `\` before a real break belongs to it (a line continuation).
        assert_eq!(
            split("a\\\nb\\\\\r\nc"),
            v(&[("a", true), ("b", true), ("c", false)])
        );
        // UTF-16: `\r\0\n\0` is one break.
        assert_eq!(break_len_at(b"\r\0\n\0", 0), 3);
        assert_eq!(break_len_at(br"x\\r\n", 1), 5);
        assert_eq!(break_len_at(b"x\r\n", 1), 2);
        assert_eq!(break_len_at(br"x\t", 1), 0);
        assert_eq!(break_len_at(b"x\n", 0), 0);
    }

    #[test]
    fn long_runs_of_backslashes_are_passed_once() {
        let text = format!("{}x{}n", "\\".repeat(100_000), "\\".repeat(3));
        assert_eq!(next_break(text.as_bytes(), 0), Some((100_001, 100_005)));
    }
}
