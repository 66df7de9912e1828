//! The bytes one `read_file` page is cut from and judged on, read at once: with the whole
//! 128 KiB look-back before the page, or, after a [`KeyCarry`], with the look-back's head only
//! (docs/keys.md#sequential-pages).

use std::ops::Range;

use crate::carry::{FileVersion, KeyCarries, KeyCarry};
use crate::error::Result;
use crate::file::TextFile;
use crate::keys::{self, KeyScan, LOOK_BACK_BYTES, MARKER_BYTES, Window};
use crate::text::end_of_char_at;

/// Bytes read past a page's end so that an armor line the page cuts is still recognised.
const ARMOR_TAIL_BYTES: u64 = 1024;

/// How much of the look-back a page read after a carry reads: its first lines, which the
/// cut-armor and fail-closed rules look at ([`keys::scan_after_clean_look_back`]).
const HEAD_BYTES: u64 = 4096;

/// What is known of the look-back of a [`PageRead`].
pub(crate) enum LookBack {
    /// It is in the bytes read: they start one byte before it (or at the file start).
    InBytes,
    /// It holds no armor marker and no NUL byte, as the page before this one showed:
    /// `head` holds its first bytes from `head_at`, the byte before the look-back (empty
    /// when the look-back starts at the file start).
    Clean {
        head: Vec<u8>,
        head_at: u64,
        carry: KeyCarry,
    },
}

/// The bytes of one page and around it.
pub(crate) struct PageRead {
    /// Bytes of the file from offset `at`: (the look-back,) the page, and a little more to
    /// judge its end.
    bytes: Vec<u8>,
    at: u64,
    /// Where the page starts: where it was asked to, or the end of the character an
    /// `offset` falls inside.
    pub(crate) start: u64,
    /// The file's size when it was opened, and the version of its bytes.
    pub(crate) size: u64,
    version: Option<FileVersion>,
    pub(crate) look_back: LookBack,
}

impl PageRead {
    /// Reads the page asked for at `asked` (a budget of `page` bytes) with its whole
    /// look-back: the byte before the look-back (is its first line whole?), the look-back,
    /// the page (which starts up to 3 bytes after an `offset` inside a character), and a
    /// little more to judge the page's end.
    ///
    /// # Errors
    /// I/O failures.
    pub(crate) fn with_look_back(
        file: &mut TextFile,
        asked: u64,
        page: u64,
        offset_given: bool,
    ) -> Result<PageRead> {
        let at = asked.saturating_sub(LOOK_BACK_BYTES + 1);
        let bytes = read_page(file, at, asked, page)?;
        let start = page_start(&bytes, at, asked, offset_given);
        Ok(PageRead {
            bytes,
            at,
            start,
            size: file.size,
            version: file.version,
            look_back: LookBack::InBytes,
        })
    }

    /// Reads the page at `asked`, an offset where a page of this version of the file ended
    /// and left `carry`: the page from 3 bytes before it, and the look-back's first
    /// [`HEAD_BYTES`]. `None` when `asked` is inside a character (a carry is left at a
    /// page's end, which never is; read with the look-back instead).
    ///
    /// # Errors
    /// I/O failures.
    pub(crate) fn after_carry(
        file: &mut TextFile,
        asked: u64,
        page: u64,
        carry: KeyCarry,
    ) -> Result<Option<PageRead>> {
        let at = asked.saturating_sub(3);
        let bytes = read_page(file, at, asked, page)?;
        let start = page_start(&bytes, at, asked, true);
        if start != asked {
            return Ok(None);
        }
        let look_back_start = asked.saturating_sub(LOOK_BACK_BYTES);
        let (head, head_at) = match look_back_start.checked_sub(1) {
            None => (Vec::new(), 0),
            Some(head_at) => {
                let len = (1 + HEAD_BYTES).min(asked - head_at);
                (file.read_at(head_at, len as usize)?, head_at)
            }
        };
        Ok(Some(PageRead {
            bytes,
            at,
            start,
            size: file.size,
            version: file.version,
            look_back: LookBack::Clean {
                head,
                head_at,
                carry,
            },
        }))
    }

    /// The bytes from the page start on.
    pub(crate) fn body(&self) -> &[u8] {
        self.bytes
            .get((self.start - self.at) as usize..)
            .unwrap_or_default()
    }

    /// The look-back read ([`LookBack::InBytes`]): the bytes before the page start, and
    /// whether they reach the start of the file.
    pub(crate) fn look_back_bytes(&self) -> (&[u8], bool) {
        let window_start = self.start.saturating_sub(LOOK_BACK_BYTES);
        let from = (window_start.saturating_sub(self.at)) as usize;
        let to = (self.start - self.at) as usize;
        (
            self.bytes.get(from..to).unwrap_or_default(),
            window_start == 0,
        )
    }

    /// What the key rules say of `range` (file offsets from the page start); `None` when
    /// the head of a clean look-back cannot judge it.
    pub(crate) fn scan(&self, range: Range<u64>) -> Option<KeyScan> {
        match &self.look_back {
            LookBack::InBytes => {
                // The window the key rules judge: the 128 KiB look-back before the page, and on.
                let window_start = self.start.saturating_sub(LOOK_BACK_BYTES);
                let from = (window_start - self.at) as usize;
                let window = self.bytes.get(from..).unwrap_or_default();
                let before = from.checked_sub(1).and_then(|i| self.bytes.get(i).copied());
                Some(KeyScan::scan(
                    Window::new(window, window_start, before),
                    range,
                ))
            }
            LookBack::Clean { head, head_at, .. } => {
                let head = match head.split_first() {
                    Some((&before, rest)) => Window::new(rest, head_at + 1, Some(before)),
                    None => Window::new(&[], 0, None),
                };
                keys::scan_after_clean_look_back(head, self.body(), range)
            }
        }
    }

    /// Leaves in `store` the carry for the page at `next` (this page's end), with `line`
    /// (its `nextLine`), when the bytes from one before that page's look-back to
    /// [`MARKER_BYTES`] past `next` hold no marker. This page knows of them: from its own
    /// bytes, and, after a carry, for the part before them from that carry, which covered
    /// up to [`MARKER_BYTES`] past this page's start (the two overlap by that much).
    pub(crate) fn leave_carry(&self, store: &dyn KeyCarries, next: u64, line: Option<u64>) {
        let Some(version) = self.version else { return };
        let from = match self.look_back {
            LookBack::InBytes => next.saturating_sub(LOOK_BACK_BYTES).saturating_sub(1),
            LookBack::Clean { .. } => self.at,
        };
        let to = (next + MARKER_BYTES).min(self.size);
        let Some(bytes) = from
            .checked_sub(self.at)
            .and_then(|from| self.bytes.get(from as usize..(to - self.at) as usize))
        else {
            // The file was cut short since it was opened: nothing to carry.
            return;
        };
        if keys::holds_no_marker(bytes) {
            store.remember(&version, next, KeyCarry { line });
        }
    }
}

/// Reads from `at` through the page asked at `asked` (a budget of `page` bytes) and a little
/// more: nothing past the size the file had when opened, and a file cut short meanwhile (a
/// log truncated by rotation) reads as ending early rather than failing.
fn read_page(file: &mut TextFile, at: u64, asked: u64, page: u64) -> Result<Vec<u8>> {
    let want = (asked - at) + 3 + page + 4 + ARMOR_TAIL_BYTES;
    let want = want.min(file.size - at);
    file.read_at(at, want as usize)
}

/// Where the page asked at `asked` starts in `bytes` (read from `at`): an offset inside a
/// multi-byte character moves to the end of that character.
fn page_start(bytes: &[u8], at: u64, asked: u64, offset_given: bool) -> u64 {
    let i = (asked - at) as usize;
    if offset_given && i <= bytes.len() {
        let from = i.saturating_sub(3);
        let around = &bytes[from..(i + 4).min(bytes.len())];
        at + (from + end_of_char_at(around, i - from)) as u64
    } else {
        // (Or the file was cut short since its size was read: the page is empty.)
        asked
    }
}
