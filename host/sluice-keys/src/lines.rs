//! What a line is to the fail-closed rule (docs/keys.md#key-body-and-neutral-lines), and the
//! rule itself (docs/keys.md#fail-closed).

use std::borrow::Cow;

use memchr::memmem;

use crate::armor::{SPLIT_BEGIN, SPLIT_END, is_label};
use crate::breaks;

/// What one line is to the fail-closed rule (docs/keys.md#key-body-and-neutral-lines; see
/// [`classify_line`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineClass {
    /// At least 16 characters of `A–Z a–z 0–9 + / =`, in their decoration (indentation,
    /// trailing blanks, quotes).
    KeyBody,
    /// A blank line (or only decoration), an RFC 1421 header of a traditionally encrypted
    /// key (`Proc-Type: …`, `DEK-Info: …`), an OpenPGP armor header (`Version: …`,
    /// `Comment: …`, `Hash: …`, `Charset: …`, `MessageID: …`), or either part of an armor
    /// line split across lines (`-----BEGIN RSA PRIV`, `-----END`; `KEY-----`, `--`,
    /// `  RSA PRIVATE KEY-----`): it neither clears a refusal nor counts as key body.
    Neutral,
    /// Anything else: ordinary text, which clears the fail-closed refusal.
    Ordinary,
}

/// The header names that make a line neutral (case-sensitive, as PEM and OpenPGP readers
/// match them): RFC 1421's two, and the armor headers of RFC 4880 section 6.2.
const HEADERS: &[&[u8]] = &[
    b"Proc-Type:",
    b"DEK-Info:",
    b"Version:",
    b"Comment:",
    b"Hash:",
    b"Charset:",
    b"MessageID:",
];

/// Classifies `line`, one line without its break (docs/keys.md#line-breaks). NUL bytes are
/// ignored, so the lines of a UTF-16 file are judged by their text. Its **decoration** is
/// ignored too: at its start, spaces, tabs, escaped tabs (`\t`) and quotes (`"`, `'`); at
/// its end, the same, and `\r`, `,` and `\`. So `  MIIE…`, `MIIE…  `, `"MIIE…",` and
/// `\t\tMIIE…` are key body. The header names are case-sensitive.
pub fn classify_line(line: &[u8]) -> LineClass {
    let visible: Cow<'_, [u8]> = if memchr::memchr(0, line).is_some() {
        line.iter().copied().filter(|&b| b != 0).collect()
    } else {
        line.into()
    };
    let text = undecorated(&visible);
    if text.is_empty()
        || HEADERS.iter().any(|h| text.starts_with(h))
        || is_armor_rest(text)
        || is_armor_start(&visible)
    {
        return LineClass::Neutral;
    }
    let base64 = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=');
    if text.len() >= 16 && text.iter().all(base64) {
        LineClass::KeyBody
    } else {
        LineClass::Ordinary
    }
}

/// `text` (without NUL bytes) without its decoration (see [`classify_line`]).
fn undecorated(text: &[u8]) -> &[u8] {
    let mut text = text;
    loop {
        let start = breaks::indent_end(text, 0);
        let start = start
            + text[start..]
                .iter()
                .take_while(|&&b| b == b'"' || b == b'\'')
                .count();
        if start == 0 {
            break;
        }
        text = &text[start..];
    }
    loop {
        match text.last() {
            Some(b' ' | b'\t' | b'\r' | b'"' | b'\'' | b',' | b'\\') => {
                text = &text[..text.len() - 1];
            }
            // An escaped tab: `t` after a `\` (base64 has no `\`, so this is never body).
            Some(b't') if text.len() >= 2 && text[text.len() - 2] == b'\\' => {
                text = &text[..text.len() - 2];
            }
            _ => return text,
        }
    }
}

/// True when `text` can be the second part of an armor line split across two lines, the
/// part a look-back window that starts just after the break sees alone: any end of
/// `PRIVATE KEY-----` (or `PRIVATE KEY BLOCK-----`), down to its last dash (`--`, a line
/// split inside the closing dashes), or label characters followed by all of it. Without
/// this, such a line would read as ordinary text and clear the fail-closed rule inside a
/// long key whose header is split.
fn is_armor_rest(text: &[u8]) -> bool {
    [&b"PRIVATE KEY-----"[..], b"PRIVATE KEY BLOCK-----"]
        .iter()
        .any(|full| {
            (!text.is_empty() && full.ends_with(text))
                || text
                    .strip_suffix(*full)
                    .is_some_and(|label| label.iter().all(|&b| is_label(b)))
        })
}

/// True when `line` (without NUL bytes) can be the first part of an armor line split across
/// two lines, the part a window that ends before the second part's end sees alone: it ends
/// (trailing spaces and a `\r` left out) with `-----BEGIN` or `-----END` and then nothing,
/// or a space and label characters, that does not end in five dashes (`-----END`,
/// `-----BEGIN RSA PRIV`, `KEY="-----BEGIN`). Without this, the line would read as ordinary
/// text and clear the fail-closed rule on the pages inside the second part of a split
/// armor line whose label is longer than the window, which no armor rule recognises there.
/// A complete line of other armor (`-----END CERTIFICATE-----`) ends in five dashes: it
/// stays ordinary, so a bundle of certificates is served.
fn is_armor_start(line: &[u8]) -> bool {
    let mut line = line.strip_suffix(b"\r").unwrap_or(line);
    while let Some(rest) = line.strip_suffix(b" ") {
        line = rest;
    }
    if line.ends_with(b"-----") {
        return false;
    }
    // The marker is made of label characters: it lies in the run of them ending the line.
    let run = &line[line.len() - line.iter().rev().take_while(|&&b| is_label(b)).count()..];
    let marker_end = |marker: &[u8]| memmem::rfind(run, marker).map(|at| at + marker.len());
    let Some(end) = marker_end(SPLIT_BEGIN).max(marker_end(SPLIT_END)) else {
        return false;
    };
    matches!(run.get(end), None | Some(b' '))
}

/// True for a key-body line (docs/keys.md#key-body-and-neutral-lines): see
/// [`classify_line`].
pub fn is_key_body_line(line: &[u8]) -> bool {
    classify_line(line) == LineClass::KeyBody
}

/// The fail-closed rule (docs/keys.md#fail-closed): `look_back` is the bytes just before a
/// page (or window) start, it holds no armor line, and it does not reach the start of the
/// file. True when it holds at least one key-body line and no whole ordinary line
/// ([`classify_line`]).
///
/// Lines end at every line break of the key rules (docs/keys.md#line-breaks: `\n`, `\r\n`,
/// a lone `\r`, and escaped ones such as `\n` written as two characters). A whole line is
/// one that ends with a break inside `look_back`. Two lines are partial: the one the page
/// starts in (after the last break), and the first when `look_back` starts inside it
/// (`at_line_start` says whether the byte before `look_back` ends a line, in which case its
/// first line is whole). A partial line counts as key body when it is key body (so a
/// look-back that is one unbroken run of base64 fails closed), and never as ordinary text
/// (it may be the end of a BEGIN line).
pub fn look_back_fails_closed(look_back: &[u8], at_line_start: bool) -> bool {
    let mut body = false;
    // Most text fails on its first or second line, so stop at the first ordinary one.
    for (class, whole) in look_back_lines(look_back, at_line_start) {
        match class {
            LineClass::KeyBody => body = true,
            LineClass::Ordinary if whole => return false,
            LineClass::Ordinary | LineClass::Neutral => {}
        }
    }
    body
}

/// The lines of the look-back `bytes` (`at_line_start` as in [`look_back_fails_closed`]):
/// each line's class, and whether it is whole (it ends with a break inside `bytes`, and
/// the first only when the byte before `bytes` ends a line).
fn look_back_lines(bytes: &[u8], at_line_start: bool) -> impl Iterator<Item = (LineClass, bool)> {
    breaks::lines(bytes)
        .enumerate()
        .map(move |(i, (line, terminated))| {
            (classify_line(line), terminated && (i > 0 || at_line_start))
        })
}

/// True when `bytes`, the start of a look-back (`at_line_start` as in
/// [`look_back_fails_closed`]), holds a whole ordinary line: then the fail-closed rule is false
/// for every look-back that starts with `bytes`. The caller passes bytes whose breaks the
/// bytes after them cannot change ([`breaks::settled`]).
pub(crate) fn has_whole_ordinary_line(bytes: &[u8], at_line_start: bool) -> bool {
    look_back_lines(bytes, at_line_start)
        .any(|(class, whole)| whole && class == LineClass::Ordinary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_body_lines() {
        assert!(is_key_body_line(b"MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"));
        assert!(is_key_body_line(b"  MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\r"));
        assert!(!is_key_body_line(b"short"));
        assert!(!is_key_body_line(b"this is ordinary text, not base64"));
        // No upper bound: an unwrapped body is one long line.
        assert!(is_key_body_line(&[b'A'; 100_000]));
        assert!(!is_key_body_line(&[b'A'; 15]));
    }

    #[test]
    fn line_classes() {
        use LineClass::*;
        for (line, class) in [
            (&b""[..], Neutral),
            (b"\r", Neutral),
            (b"  \t ", Neutral),
            (b"\",", Neutral),
            (b"Proc-Type: 4,ENCRYPTED", Neutral),
            (
                b"DEK-Info: AES-128-CBC,0123456789ABCDEF0123456789ABCDEF\r",
                Neutral,
            ),
            (b"  DEK-Info: DES-EDE3-CBC,01234567", Neutral),
            (b"Version: GnuPG v2", Neutral),
            (b"Comment: https://gnupg.org and anything else", Neutral),
            (b"  Hash: SHA256", Neutral),
            (b"Charset: UTF-8", Neutral),
            (b"MessageID: 0123456789abcdef", Neutral),
            (b"KEY-----", Neutral),
            (b"  RSA PRIVATE KEY-----\r", Neutral),
            (b"-----", Neutral),
            (b"ATE KEY BLOCK-----", Neutral),
            (b"KEY-----\"", Neutral),
            // The first part of a split armor line, whatever stands before its marker.
            (b"-----END", Neutral),
            (b"-----BEGIN", Neutral),
            (b"  -----END  ", Neutral),
            (b"-----BEGIN RSA PRIV", Neutral),
            (b"KEY=\"-----BEGIN", Neutral),
            (b"x -----END EC PRIVATE KEY----", Neutral),
            (b"-\0-\0-\0-\0-\0E\0N\0D\0", Neutral),
            // The end of the closing dashes, split off the line.
            (b"---", Neutral),
            (b"  -", Neutral),
            (b"------", Ordinary),
            (b"-----END CERTIFICATE-----", Ordinary),
            (b"-----BEGIN PUBLIC KEY-----  ", Ordinary),
            (b"-----BEGINNING", Ordinary),
            (b"-----END.", Ordinary),
            (b"-----END\t", Ordinary),
            (b"----END", Ordinary),
            (b"proc-type: 4,ENCRYPTED", Ordinary),
            (b"version: GnuPG v2", Ordinary),
            (b"Proc-Type 4,ENCRYPTED", Ordinary),
            (b"MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", KeyBody),
            (b"MIIEvQIBADANBgkqhkiG9w0BAQEFAASC  \t", KeyBody),
            (b"  \"MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\",", KeyBody),
            (b"'MIIEvQIBADANBgkqhkiG9w0BAQEFAASC'", KeyBody),
            (br"\t\tMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\", KeyBody),
            (br"MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\t", KeyBody),
            (
                b"M\0I\0I\0E\0v\0Q\0I\0B\0A\0D\0A\0N\0B\0g\0k\0q\0\r\0",
                KeyBody,
            ),
            (b"hello world", Ordinary),
            (b"MIIEvQIBADANBgkq hkiG9w0BAQEFAASC", Ordinary),
        ] {
            assert_eq!(
                classify_line(line),
                class,
                "{:?}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn look_back_rule() {
        let body = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY\n";
        let fails =
            |text: &str, at_line_start| look_back_fails_closed(text.as_bytes(), at_line_start);
        assert!(fails(&format!("partial{body}{body}par"), false));
        assert!(!fails(&format!("partial{body}hello world\n{body}"), false));
        // Partial lines count as body, never as ordinary text.
        assert!(fails("QUJDREVGR0hJSktMTU5PUFFSU1RVVldY", false));
        assert!(fails("QUJDREVG\nR0hJSktMTU5PUFFSU1RVVldY", false));
        assert!(!fails("QUJDREVG\nR0hJSktM", false));
        assert!(!fails("an ordinary partial line", false));
        assert!(fails(
            &format!("E KEY-----\n{body}a partial, ordinary line"),
            false
        ));
        // Neutral lines neither clear it nor count as body.
        let headers = "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00FF\n\n";
        assert!(fails(
            &format!("-----BEGIN RSA P{headers}{body}{body}"),
            false
        ));
        assert!(fails(&format!("x\n{headers}{body}"), false));
        assert!(!fails(&format!("x\n{headers}"), false));
        assert!(!fails("x\n\n\n\n", false));
        // The first part of a split armor line is neutral; a line of other armor is not.
        assert!(fails(&format!("x\n{body}{body}-----END\n CCCC"), false));
        assert!(!fails(
            &format!("x\n{body}-----END CERTIFICATE-----\n{body}"),
            false
        ));
        let pgp = "Version: GnuPG v2\nComment: made for a test\n\n";
        assert!(fails(&format!("Y BLOCK-----\n{pgp}{body}{body}"), false));
        // The first line is whole when the look-back starts at a line start.
        let ordinary_first = format!("an ordinary line\n{body}{body}");
        assert!(fails(&ordinary_first, false));
        assert!(!fails(&ordinary_first, true));
        assert!(fails(&format!("{body}{body}"), true));
        // Every line break of the key rules ends a line: `\r\n`, a lone `\r`, escaped ones.
        for nl in ["\r\n", "\r", "\\n", "\\r\\n", "\\\\n"] {
            let b = body.replace('\n', nl);
            assert!(fails(&format!("xx{nl}  {b}  {b}xx"), false), "{nl:?}");
            assert!(
                !fails(&format!("xx{nl}{b}hello world{nl}{b}"), false),
                "{nl:?}"
            );
        }
    }
}
