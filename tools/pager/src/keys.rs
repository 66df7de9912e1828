//! Key material: refused names and PEM private-key armor (SPEC sections 3 and 8).

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

/// The longest run of label characters (`[A-Za-z0-9 _-]`) looked at before `PRIVATE KEY`,
/// in bytes: far longer than any real armor label, and a bound on the work per occurrence.
pub const MAX_ARMOR_LABEL_BYTES: usize = 1024;

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

/// True when `bytes` holds an armor line anywhere.
pub fn has_armor(bytes: &[u8]) -> bool {
    armor_lines(bytes).next().is_some()
}

/// `text` with every armor line replaced by `[PEM armor]`, for messages that repeat input.
pub fn redact_armor(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (start, end, _) in armor_lines(text.as_bytes()) {
        // Armor is ASCII, so both ends fall on character boundaries.
        out.push_str(&text[last..start]);
        out.push_str("[PEM armor]");
        last = end;
    }
    out.push_str(&text[last..]);
    out
}

/// Every armor line in `window`, whose first byte is at file offset `window_start`.
pub fn find_armor(window: &[u8], window_start: u64) -> Vec<Armor> {
    armor_lines(window)
        .map(|(start, end, begin)| Armor {
            span: window_start + start as u64..window_start + end as u64,
            begin,
        })
        .collect()
}

/// The armor lines of `bytes` (SPEC section 8) as `(start, end, is BEGIN)`, without
/// overlaps: each `PRIVATE KEY` followed by `-----` or ` BLOCK-----`, preceded by a label of
/// `[A-Za-z0-9 _-]` (at most [`MAX_ARMOR_LABEL_BYTES`]) that holds `-----BEGIN ` or
/// `-----END `; the last such marker before `PRIVATE KEY` decides the kind.
fn armor_lines(bytes: &[u8]) -> impl Iterator<Item = (usize, usize, bool)> + '_ {
    let is_label = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b' ' | b'_' | b'-');
    let mut after_last = 0;
    memchr::memmem::find_iter(bytes, b"PRIVATE KEY").filter_map(move |key| {
        if key < after_last {
            return None;
        }
        let rest = &bytes[key + b"PRIVATE KEY".len()..];
        let tail = if rest.starts_with(b"-----") {
            5
        } else if rest.starts_with(b" BLOCK-----") {
            11
        } else {
            return None;
        };
        let floor = key.saturating_sub(MAX_ARMOR_LABEL_BYTES).max(after_last);
        let mut start = key;
        while start > floor && is_label(bytes[start - 1]) {
            start -= 1;
        }
        let label = &bytes[start..key];
        let begin = memchr::memmem::rfind(label, b"-----BEGIN ");
        let end = memchr::memmem::rfind(label, b"-----END ");
        let (at, is_begin) = match (begin, end) {
            (Some(b), Some(e)) if b > e => (b, true),
            (Some(b), None) => (b, true),
            (_, Some(e)) => (e, false),
            (None, None) => return None,
        };
        let stop = key + b"PRIVATE KEY".len() + tail;
        after_last = stop;
        Some((start + at, stop, is_begin))
    })
}

/// True for a key-body line (SPEC section 8): 16–100 characters of `A–Z a–z 0–9 + / =`,
/// optionally indented; `line` excludes its `\n` (a trailing `\r` is ignored).
pub fn is_key_body_line(line: &[u8]) -> bool {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let start = line
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(line.len());
    let body = &line[start..];
    (16..=100).contains(&body.len())
        && body
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'=')
}

/// The fail-closed rule of SPEC section 3: `look_back` is the bytes just before a page (or
/// window) start and does not reach the start of the file. True when it holds at least one
/// whole line and every whole line is a key-body line. The partial lines at its two edges
/// are not judged.
pub fn look_back_is_all_key_body(look_back: &[u8]) -> bool {
    // The first segment starts before the window: partial. The last segment (after the
    // last `\n`) ends at the page start without one: partial too. Whole lines lie between.
    let (Some(first_nl), Some(last_nl)) = (
        memchr::memchr(b'\n', look_back),
        memchr::memrchr(b'\n', look_back),
    ) else {
        return false;
    };
    if first_nl == last_nl {
        return false;
    }
    // Most text fails on its first line, so stop at the first ordinary one.
    look_back[first_nl + 1..last_nl]
        .split(|&b| b == b'\n')
        .all(is_key_body_line)
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
    /// does not reach the file start, and the look-back is only key-body lines. Armor after
    /// the range start does not matter: an END line after the start does not clear it.
    pub fail_closed: bool,
}

impl KeyScan {
    /// Scans `window` (file offsets `window_start..`) around `range`, which lies inside it.
    pub fn scan(window: &[u8], window_start: u64, range: Range<u64>) -> KeyScan {
        let armor = find_armor(window, window_start);
        let overlaps = armor
            .iter()
            .any(|a| a.span.start < range.end && a.span.end > range.start);
        let last_before = armor.iter().rfind(|a| a.span.start < range.start);
        let starts_inside = last_before.is_some_and(|a| a.begin);
        let ends_inside = armor.last().is_some_and(|a| a.begin);
        let fail_closed = last_before.is_none() && window_start > 0 && {
            let look_back_end = (range.start - window_start) as usize;
            look_back_is_all_key_body(window.get(..look_back_end).unwrap_or(window))
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
    fn look_back_rule() {
        let body = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY\n";
        assert!(look_back_is_all_key_body(
            format!("partial{body}{body}par").as_bytes()
        ));
        assert!(!look_back_is_all_key_body(
            format!("partial{body}hello world\n{body}").as_bytes()
        ));
        // Only partial lines: nothing to judge.
        assert!(!look_back_is_all_key_body(
            b"QUJDREVGR0hJSktMTU5PUFFSU1RVVldY"
        ));
        assert!(!look_back_is_all_key_body(
            b"QUJDREVG\nR0hJSktMTU5PUFFSU1RVVldY"
        ));
    }
}
