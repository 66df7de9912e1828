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
//! Both sides use it: the file tools (`sluice-file-tools`, compiled for `wasm32-wasip2`) refuse
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
mod breaks;
mod carry;
mod cut;
mod lines;

pub use carry::{MARKER_BYTES, holds_no_marker, scan_after_clean_look_back};

pub use lines::{LineClass, classify_line, is_key_body_line, look_back_fails_closed};

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
/// optionally indented, after `\n`, `\r\n`, a lone `\r` or an escaped break such as the
/// two characters `\n`: docs/keys.md#line-breaks), and one with NUL bytes interleaved, as a
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

/// The bytes the key rules judge around a range: from `start` (a file offset) on.
#[derive(Clone, Copy, Debug)]
pub struct Window<'a> {
    /// The bytes.
    pub bytes: &'a [u8],
    /// The file offset of `bytes[0]`.
    pub start: u64,
    /// True when `start` is the start of a line: the start of the file, or just after a
    /// `\n` or `\r` (docs/keys.md#line-breaks). Then the window's first line is whole (the
    /// fail-closed rule judges it, and an armor line cut by the window's start is looked
    /// for in it only as the second part of a split one).
    pub at_line_start: bool,
}

impl<'a> Window<'a> {
    /// The window of `bytes` from file offset `start`, where `before` is the byte just
    /// before it (`None` at the start of the file): that byte tells [`Window::at_line_start`].
    pub fn new(bytes: &'a [u8], start: u64, before: Option<u8>) -> Self {
        Window {
            bytes,
            start,
            at_line_start: start == 0 || matches!(before, Some(b'\n' | b'\r')),
        }
    }
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
    ///
    /// The armor lines are those [`find_armor`] finds and, when the window does not start
    /// at the start of the file, an armor line its start cuts (docs/keys.md#cut-armor): the
    /// window starts inside its label or its `PRIVATE KEY-----`, so its marker is out of
    /// sight. Such a line counts as a BEGIN, since its kind cannot be seen.
    pub fn scan(window: Window<'_>, range: Range<u64>) -> KeyScan {
        let mut armor = find_armor(window.bytes, window.start);
        if window.start > 0
            && let Some(cut) = cut::cut_at_start(window.bytes, window.at_line_start)
        {
            armor.insert(
                0,
                Armor {
                    span: window.start + cut.start as u64..window.start + cut.end as u64,
                    begin: true,
                },
            );
        }
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
}
