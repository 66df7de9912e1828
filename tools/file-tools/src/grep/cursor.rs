//! The cursor of a `grep_files` search: where the next page starts, written into
//! `nextCursor` and parsed back, with the checks that refuse a cursor of another search or
//! one whose entry changed.

use crate::error::{ErrorKind, Result, ToolError, quote};

/// The longest cursor, in bytes (docs/paging.md#grep_files-cursors).
const MAX_CURSOR_BYTES: usize = 62;

/// A position in a search: after line `line` of entry number `file` of the sorted walk
/// (every non-directory below the searched path is numbered, whatever the glob), and where
/// that entry is, to seek to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Cursor {
    /// Check of the search it belongs to (pattern, path, root, glob, case).
    pub(super) search: u32,
    /// Entry number in the walk.
    pub(super) file: u64,
    /// Last line already returned (0: none).
    pub(super) line: u64,
    /// Check of that entry: [`entry_check`] of its path and number.
    pub(super) path_check: u32,
    /// The entry's index in each sorted directory from the searched directory down; empty
    /// when unknown (a searched file, or too long for the cursor).
    pub(super) seek: Vec<u64>,
}

impl std::fmt::Display for Cursor {
    /// `g1.<file>.<line>.<search:08x><path:08x>[.<index>-<index>…]`, the indices in
    /// decimal ([`Cursor::new`] keeps it within 62 bytes).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "g1.{}.{}.{:08x}{:08x}",
            self.file, self.line, self.search, self.path_check
        )?;
        for (k, index) in self.seek.iter().enumerate() {
            write!(f, "{}{index}", if k == 0 { '.' } else { '-' })?;
        }
        Ok(())
    }
}

impl Cursor {
    /// The cursor after line `line` of entry number `file` of search `search`, at `rel`
    /// (relative to the root) and position `at` in the walk; the position is kept only when
    /// the cursor still fits in 62 bytes.
    pub(super) fn new(search: u32, file: u64, line: u64, rel: &str, at: &[u64]) -> Cursor {
        let mut cursor = Cursor {
            search,
            file,
            line,
            path_check: 0,
            seek: at.to_vec(),
        };
        if cursor.to_string().len() > MAX_CURSOR_BYTES {
            cursor.seek.clear();
        }
        cursor.path_check = entry_check(rel, file, !cursor.seek.is_empty());
        cursor
    }

    pub(super) fn parse(s: &str, search: u32) -> Result<Cursor> {
        let bad = || {
            ToolError::new(
                ErrorKind::InvalidArgument,
                format!(
                    "cursor {:?} is not a nextCursor of this search; pass it back unchanged with the same pattern, path, root, glob and caseSensitive, or search again without cursor",
                    quote(s),
                ),
            )
        };
        let mut parts = s.split('.');
        if parts.next() != Some("g1") {
            return Err(bad());
        }
        let file = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let line = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let checks = parts
            .next()
            .filter(|c| c.len() == 16 && c.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(bad)?;
        let seek = match parts.next() {
            None => Vec::new(),
            Some(p) => p
                .split('-')
                .map(|i| {
                    (!i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
                        .then(|| i.parse::<u64>().ok())
                        .flatten()
                })
                .collect::<Option<Vec<u64>>>()
                .ok_or_else(bad)?,
        };
        if parts.next().is_some() {
            return Err(bad());
        }
        let found_search = u32::from_str_radix(&checks[..8], 16).map_err(|_| bad())?;
        let path_check = u32::from_str_radix(&checks[8..], 16).map_err(|_| bad())?;
        if found_search != search {
            return Err(bad());
        }
        Ok(Cursor {
            search,
            file,
            line,
            path_check,
            seek,
        })
    }
}

/// The check of the entry a cursor names: of its path `rel` alone when the cursor carries no
/// position (as every cursor did before seeking); of the path and its number `file` together
/// when it does (`positioned`), so that a seek, which does not count, still refuses a cursor
/// whose number was altered. The position itself is not checked: a position that leads
/// elsewhere fails the path check, and the walk counts its way back instead.
pub(super) fn entry_check(rel: &str, file: u64, positioned: bool) -> u32 {
    if !positioned {
        return check(rel);
    }
    let mut bytes = rel.as_bytes().to_vec();
    bytes.push(0);
    bytes.extend_from_slice(&file.to_le_bytes());
    check(bytes)
}

/// A 32-bit check value for cursors: FNV-1a, stable across builds (not a security measure:
/// a forged cursor can only resume a search the caller may run anyway).
pub(super) fn check(bytes: impl AsRef<[u8]>) -> u32 {
    bytes.as_ref().iter().fold(0x811c_9dc5_u32, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}
