//! Sluice's key rules (docs/keys.md): which names are key material, and where PEM
//! private-key armor is.
//!
//! - [`KeyNames`] (a [`KeyNamePolicy`]): the deny list of key-material names
//!   ([`DEFAULT_DENIED_NAMES`] by default), globs matched case-insensitively on one path
//!   component; [`is_key_path`] applies it to a path.
//! - [`has_armor`], [`find_armor`], [`redact_armor`]: armor lines in bytes, in each form the
//!   rules know (one line, split over one line break, NUL bytes interleaved), in time linear
//!   in the bytes; [`KeyScan`] and [`classify_line`] for the file tools' page rules.
//!
//! Both sides use it: the file tools (`sluice-pager`, compiled for `wasm32-wasip2`) refuse
//! key material before answering, and the host (`sluice-runtime`) answers the components'
//! `key-policy` from [`KeyNames`] and scans every observation with [`has_armor`] as a last
//! check. It depends on `globset` and `memchr` only.
//!
//! ```
//! use sluice_keys::{KeyNamePolicy, KeyNames, has_armor, redact_armor};
//!
//! assert!(has_armor(b"x\n-----BEGIN RSA PRIVATE KEY-----\nMIIE"));
//! assert!(!has_armor(b"-----BEGIN CERTIFICATE-----"));
//! assert_eq!(redact_armor("a -----END EC PRIVATE KEY----- b"), "a [PEM armor] b");
//! let names = KeyNames::default();
//! assert!(names.is_key_file("ID_RSA") && !names.is_key_file("id_rsa.pub"));
//! ```

mod armor;

use std::ops::Range;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// How far before a page start the tools look for a BEGIN line, in bytes (128 KiB).
pub const LOOK_BACK_BYTES: u64 = 128 * 1024;

/// The default deny list of key-material names. A pattern ending in `/` names a directory:
/// anything under it is key material.
pub const DEFAULT_DENIED_NAMES: &[&str] = &[
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    ".ssh/",
    "keys/",
    "ssh/",
];

/// Which names are key material. [`KeyNames`] implements it from glob patterns; inside a
/// component the host answers (`sluice:tools/key-policy`), so the patterns are compiled
/// once, not on every call.
pub trait KeyNamePolicy: Send + Sync + std::fmt::Debug {
    /// True when a file called `name` is key material.
    fn is_key_file(&self, name: &str) -> bool;

    /// True when a directory called `name` holds key material (nothing under it is read).
    fn is_key_dir(&self, name: &str) -> bool;
}

/// True when the path with components `parts` is key material under `policy`: a directory
/// component is a key directory, or the last component is a key file (or, when
/// `last_is_dir`, a key directory).
pub fn is_key_path<S: AsRef<str>>(
    policy: &dyn KeyNamePolicy,
    parts: &[S],
    last_is_dir: bool,
) -> bool {
    let Some((last, dirs)) = parts.split_last() else {
        return false;
    };
    dirs.iter().any(|d| policy.is_key_dir(d.as_ref()))
        || policy.is_key_file(last.as_ref())
        || (last_is_dir && policy.is_key_dir(last.as_ref()))
}

/// The compiled deny list of key-material names, matched case-insensitively.
#[derive(Clone, Debug)]
pub struct KeyNames {
    files: GlobSet,
    dirs: GlobSet,
}

impl Default for KeyNames {
    // Infallible: the patterns are the constant DEFAULT_DENIED_NAMES, compiled by the
    // `key_names` test (and the crate's doctest).
    #[allow(clippy::expect_used)]
    fn default() -> Self {
        KeyNames::new(DEFAULT_DENIED_NAMES).expect("the default key-name patterns are valid globs")
    }
}

impl KeyNames {
    /// Compiles `patterns` (globs on one name; a trailing `/` marks a directory name).
    ///
    /// # Errors
    /// The glob that does not parse, with the parser's reason.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<Self, globset::Error> {
        let mut files = GlobSetBuilder::new();
        let mut dirs = GlobSetBuilder::new();
        for p in patterns {
            let p = p.as_ref();
            let (set, glob) = match p.strip_suffix('/') {
                Some(dir) => (&mut dirs, dir),
                None => (&mut files, p),
            };
            set.add(
                GlobBuilder::new(glob)
                    .case_insensitive(true)
                    .literal_separator(true)
                    .build()?,
            );
        }
        Ok(KeyNames {
            files: files.build()?,
            dirs: dirs.build()?,
        })
    }
}

impl KeyNamePolicy for KeyNames {
    fn is_key_file(&self, name: &str) -> bool {
        self.files.is_match(name)
    }

    fn is_key_dir(&self, name: &str) -> bool {
        self.dirs.is_match(name)
    }
}

/// One armor line found in a byte window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Armor {
    /// Where the armor text starts and ends, in file offsets.
    pub span: Range<u64>,
    /// True for BEGIN, false for END.
    pub begin: bool,
}

/// True when `bytes` holds an armor line anywhere: written on one line, split across one
/// line break, or with NUL bytes interleaved (UTF-16); see [`find_armor`].
///
/// The host runs this over every observation as a last check. It is a backstop against
/// accidents, not against a malicious tool: a tool that lowercases the armor, splits it
/// over more lines or interleaves other characters gets past it. The file tools never
/// return key material because of the rules they apply before answering, not because of
/// this scan.
pub fn has_armor(bytes: &[u8]) -> bool {
    armor::any(bytes)
}

/// `text` with every armor line replaced by `[PEM armor]`, for messages that repeat input.
/// The result holds no armor ([`has_armor`] is false for it).
///
/// Armor lines can share their dashes (`…KEY-----BEGIN PRIVATE KEY-----`), and the scan
/// reports them without overlaps, so one pass can leave an armor line whose opening dashes
/// ended the one before; passes repeat until none is left. Each pass removes at least five
/// `-`, so there are at most `text.len() / 5` of them.
pub fn redact_armor(text: &str) -> String {
    let mut out = redact_once(text);
    while has_armor(out.as_bytes()) {
        out = redact_once(&out);
    }
    out
}

/// One pass of [`redact_armor`]: each span the scan reports, replaced.
fn redact_once(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for s in armor::spans(text.as_bytes()) {
        // Armor starts and ends with `-` (ASCII), so both ends fall on character
        // boundaries.
        out.push_str(&text[last..s.start]);
        out.push_str("[PEM armor]");
        last = s.end;
    }
    out.push_str(&text[last..]);
    out
}

/// Every armor line in `window`, whose first byte is at file offset `window_start`, in
/// order and without overlaps.
///
/// An armor line (docs/keys.md#armor) is `-----BEGIN ` or `-----END `, then label characters
/// (letters, digits, spaces, `_`, `-`; any number of them), then `PRIVATE KEY`, optionally
/// ` BLOCK`, then `-----`, anywhere in a line, case-sensitive. Also armor: one split
/// across one line break (`-----BEGIN RSA PRIVATE` then `KEY-----` on the next line,
/// optionally indented, after `\n` or `\r\n`), and one with NUL bytes interleaved, as a
/// UTF-16 file holds it (NUL bytes are ignored throughout the key rules). The work is
/// linear in the window's length.
pub fn find_armor(window: &[u8], window_start: u64) -> Vec<Armor> {
    armor::spans(window)
        .into_iter()
        .map(|s| Armor {
            span: window_start + s.start as u64..window_start + s.end as u64,
            begin: s.begin,
        })
        .collect()
}

/// What one whole line is to the fail-closed rule (docs/keys.md#key-body-and-neutral-lines;
/// see [`classify_line`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineClass {
    /// 16–100 characters of `A–Z a–z 0–9 + / =`, optionally indented.
    KeyBody,
    /// An empty (or blank) line, an RFC 1421 header line of a traditionally encrypted key
    /// (`Proc-Type: …`, `DEK-Info: …`), or the second part of an armor line split across
    /// lines (`KEY-----`, `  RSA PRIVATE KEY-----`): it neither clears a refusal nor counts
    /// as text.
    Neutral,
    /// Anything else: ordinary text, which clears the fail-closed refusal.
    Ordinary,
}

/// Classifies `line`, a whole line without its `\n` (a trailing `\r` is ignored, as are NUL
/// bytes, so the lines of a UTF-16 file are judged by their text). Blank means only spaces
/// and tabs; the header names are case-sensitive, as PEM readers match them, and may be
/// indented like body lines.
pub fn classify_line(line: &[u8]) -> LineClass {
    let visible: std::borrow::Cow<'_, [u8]> = if memchr::memchr(0, line).is_some() {
        line.iter().copied().filter(|&b| b != 0).collect()
    } else {
        line.into()
    };
    let line = visible.strip_suffix(b"\r").unwrap_or(&visible);
    let start = line
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(line.len());
    let text = &line[start..];
    if text.is_empty()
        || text.starts_with(b"Proc-Type:")
        || text.starts_with(b"DEK-Info:")
        || is_armor_rest(text)
    {
        return LineClass::Neutral;
    }
    let base64 = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=');
    if (16..=100).contains(&text.len()) && text.iter().all(base64) {
        LineClass::KeyBody
    } else {
        LineClass::Ordinary
    }
}

/// True when `text` can be the second part of an armor line split across two lines, the
/// part a look-back window that starts just after the break sees alone: the end of
/// `PRIVATE KEY-----` (or `PRIVATE KEY BLOCK-----`) from its dashes on, or label
/// characters followed by all of it. Without this, such a line would read as ordinary
/// text and clear the fail-closed rule inside a long key whose header is split.
fn is_armor_rest(text: &[u8]) -> bool {
    [&b"PRIVATE KEY-----"[..], b"PRIVATE KEY BLOCK-----"]
        .iter()
        .any(|full| {
            (text.len() >= 5 && full.ends_with(text))
                || text.strip_suffix(*full).is_some_and(|label| {
                    label
                        .iter()
                        .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b' ' | b'_' | b'-'))
                })
        })
}

/// True for a key-body line (docs/keys.md#key-body-and-neutral-lines): see
/// [`classify_line`].
pub fn is_key_body_line(line: &[u8]) -> bool {
    classify_line(line) == LineClass::KeyBody
}

/// The fail-closed rule (docs/keys.md#fail-closed): `look_back` is the bytes just before a
/// page (or window) start, it holds no armor line, and it does not reach the start of the
/// file. True when it holds at least one whole key-body line and every whole line in it is
/// a key-body or a neutral line ([`classify_line`]).
///
/// Whole lines are those that end with `\n` inside `look_back`. The line the page starts in
/// (after the last `\n`) is not whole, and neither is the first line when `look_back` starts
/// inside it: `at_line_start` says whether the byte before `look_back` is a `\n`, in which
/// case its first line is whole and judged like the others.
pub fn look_back_fails_closed(look_back: &[u8], at_line_start: bool) -> bool {
    let Some(last_newline) = memchr::memrchr(b'\n', look_back) else {
        return false;
    };
    let mut lines = look_back[..last_newline].split(|&b| b == b'\n');
    if !at_line_start {
        lines.next();
    }
    let mut body = false;
    // Most text fails on its first line, so stop at the first ordinary one.
    for line in lines {
        match classify_line(line) {
            LineClass::KeyBody => body = true,
            LineClass::Neutral => {}
            LineClass::Ordinary => return false,
        }
    }
    body
}

/// The bytes the key rules judge around a range: from `start` (a file offset) on.
#[derive(Clone, Copy, Debug)]
pub struct Window<'a> {
    /// The bytes.
    pub bytes: &'a [u8],
    /// The file offset of `bytes[0]`.
    pub start: u64,
    /// True when `start` is the start of a line: the start of the file, or just after a
    /// `\n`. Then the window's first line is whole (the fail-closed rule judges it).
    pub at_line_start: bool,
}

/// What the armor around a range says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyScan {
    /// An armor line overlaps the range (whole or cut at either edge).
    pub overlaps: bool,
    /// The last armor line that begins before the range start is a BEGIN.
    pub starts_inside: bool,
    /// The last armor line in the whole window is a BEGIN.
    pub ends_inside: bool,
    /// No armor line begins in the look-back (the window before the range), the window
    /// does not reach the file start, and the look-back fails closed
    /// ([`look_back_fails_closed`]). Armor after the range start does not matter: an END
    /// line after the start does not clear it.
    pub fail_closed: bool,
}

impl KeyScan {
    /// Scans `window` around `range` (file offsets), which lies inside it.
    pub fn scan(window: Window<'_>, range: Range<u64>) -> KeyScan {
        let armor = find_armor(window.bytes, window.start);
        let overlaps = armor
            .iter()
            .any(|a| a.span.start < range.end && a.span.end > range.start);
        let last_before = armor.iter().rfind(|a| a.span.start < range.start);
        let starts_inside = last_before.is_some_and(|a| a.begin);
        let ends_inside = armor.last().is_some_and(|a| a.begin);
        let fail_closed = last_before.is_none() && window.start > 0 && {
            let look_back_end = (range.start - window.start) as usize;
            let look_back = window.bytes.get(..look_back_end).unwrap_or(window.bytes);
            look_back_fails_closed(look_back, window.at_line_start)
        };
        KeyScan {
            overlaps,
            starts_inside,
            ends_inside,
            fail_closed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Armor lines that share their dashes are all redacted, however they chain (found by
    /// the runtime's observation property test: one pass left the third of these).
    #[test]
    fn armor_lines_sharing_dashes_are_all_redacted() {
        let chained =
            "-----BEGIN \nPRIVATE KEY-----BEGIN PRIVATE KEY-----BEGIN PRIVATE KEY-----BEGIN ";
        let redacted = redact_armor(chained);
        assert!(!has_armor(redacted.as_bytes()), "{redacted:?}");
        assert_eq!(redacted, "[PEM armor]BEGIN PRIVATE KEY[PEM armor]BEGIN ");
    }

    #[test]
    fn armor_lines() {
        for yes in [
            "-----BEGIN RSA PRIVATE KEY-----",
            "-----BEGIN PRIVATE KEY-----",
            "-----END EC PRIVATE KEY-----",
            "-----BEGIN OPENSSH PRIVATE KEY-----",
            "-----BEGIN ENCRYPTED PRIVATE KEY-----",
            "-----BEGIN PGP PRIVATE KEY BLOCK-----",
            "-----BEGIN ML-DSA-65 PRIVATE KEY-----",
            "TLS_KEY=\"-----BEGIN EC PRIVATE KEY-----",
        ] {
            assert!(has_armor(yes.as_bytes()), "{yes}");
        }
        for no in [
            "-----BEGIN CERTIFICATE-----",
            "-----BEGIN PUBLIC KEY-----",
            "-----BEGIN RSA PUBLIC KEY-----",
            "-----begin rsa private key-----",
            "PRIVATE KEY",
        ] {
            assert!(!has_armor(no.as_bytes()), "{no}");
        }
    }

    #[test]
    fn key_names() {
        let k = KeyNames::default();
        let denied = |p: &str| is_key_path(&k, &p.split('/').collect::<Vec<_>>(), false);
        for yes in [
            "a.pem",
            "x/B.KEY",
            "id_ed25519",
            "keys/x",
            ".ssh/config",
            "a/ssh/b",
            "c.P12",
            "d.pfx",
            "ID_RSA",
        ] {
            assert!(denied(yes), "{yes}");
        }
        for no in [
            "id_ed25519.pub",
            "keys",
            "monkeys/x",
            "notes.txt",
            "a/keyship/b",
        ] {
            assert!(!denied(no), "{no}");
        }
        assert!(is_key_path(&k, &["a", "keys"], true));
    }

    #[test]
    fn key_body_lines() {
        assert!(is_key_body_line(b"MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"));
        assert!(is_key_body_line(b"  MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\r"));
        assert!(!is_key_body_line(b"short"));
        assert!(!is_key_body_line(b"this is ordinary text, not base64"));
        assert!(!is_key_body_line(&[b'A'; 101]));
    }

    #[test]
    fn line_classes() {
        use LineClass::*;
        for (line, class) in [
            (&b""[..], Neutral),
            (b"\r", Neutral),
            (b"  \t ", Neutral),
            (b"Proc-Type: 4,ENCRYPTED", Neutral),
            (
                b"DEK-Info: AES-128-CBC,0123456789ABCDEF0123456789ABCDEF\r",
                Neutral,
            ),
            (b"  DEK-Info: DES-EDE3-CBC,01234567", Neutral),
            (b"KEY-----", Neutral),
            (b"  RSA PRIVATE KEY-----\r", Neutral),
            (b"-----", Neutral),
            (b"ATE KEY BLOCK-----", Neutral),
            (b"---", Ordinary),
            (b"-----END CERTIFICATE-----", Ordinary),
            (b"KEY-----\"", Ordinary),
            (b"proc-type: 4,ENCRYPTED", Ordinary),
            (b"Proc-Type 4,ENCRYPTED", Ordinary),
            (b"MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", KeyBody),
            (
                b"M\0I\0I\0E\0v\0Q\0I\0B\0A\0D\0A\0N\0B\0g\0k\0q\0\r\0",
                KeyBody,
            ),
            (b"hello world", Ordinary),
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
        // Only partial lines: nothing to judge.
        assert!(!fails("QUJDREVGR0hJSktMTU5PUFFSU1RVVldY", false));
        assert!(!fails("QUJDREVG\nR0hJSktMTU5PUFFSU1RVVldY", false));
        // Neutral lines neither clear it nor count as body.
        let headers = "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00FF\n\n";
        assert!(fails(
            &format!("-----BEGIN RSA P{headers}{body}{body}"),
            false
        ));
        assert!(fails(&format!("x\n{headers}{body}"), false));
        assert!(!fails(&format!("x\n{headers}"), false));
        assert!(!fails("x\n\n\n\n", false));
        // The first line is whole when the look-back starts at a line start.
        let ordinary_first = format!("an ordinary line\n{body}{body}");
        assert!(fails(&ordinary_first, false));
        assert!(!fails(&ordinary_first, true));
        assert!(fails(&format!("{body}{body}"), true));
    }
}
