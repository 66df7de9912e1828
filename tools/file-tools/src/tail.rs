//! `tail_file`: the last lines of a text file (docs/paging.md#tail_file).

use serde::{Deserialize, Serialize};

use crate::Context;
use crate::budget::escaped_len;
use crate::error::{ErrorKind, Result, ToolError};
use crate::file::TextFile;
use crate::keys::{KeyScan, LOOK_BACK_BYTES, Window};
use crate::text::lossy_chars;

/// Lines returned when `lines` is not given.
pub const DEFAULT_TAIL_LINES: u64 = 200;

/// Most lines returned; larger requests are clamped to it.
pub const MAX_TAIL_LINES: u64 = 5000;

/// Arguments of `tail_file`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TailFileArgs {
    /// File to read, relative to the root.
    pub path: String,
    /// Name of the root; default the first.
    pub root: Option<String>,
    /// Lines wanted from the end (at least 1; default 200; clamped to 5,000).
    pub lines: Option<u64>,
}

/// The end of a text file, as the host shows the WIT record `tail-file-page`: `truncated`
/// and `count` before `lines` (docs/paging.md#tail_file-the-result).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TailFilePage {
    /// The file, relative to the root.
    pub path: String,
    /// Fewer lines than asked (and than the file has), or the last line was cut.
    pub truncated: bool,
    /// `lines.len()`.
    pub count: u64,
    /// The last lines that fit, oldest first, without terminators.
    pub lines: Vec<String>,
}

/// Returns the last lines of `args.path` that fit the page, reading only the end of the
/// file (the page plus the 128 KiB key look-back), whatever its size.
///
/// # Errors
/// As [`crate::read_file`], and "…ends inside a PEM private key" when the last armor line
/// before the end of the file is a BEGIN.
pub fn tail_file(ctx: &Context, args: &TailFileArgs) -> Result<TailFilePage> {
    crate::args::at_least("lines", args.lines, 1)?;
    let asked = usize::try_from(args.lines.unwrap_or(DEFAULT_TAIL_LINES)).unwrap_or(usize::MAX);
    let wanted = asked.min(MAX_TAIL_LINES as usize);
    let root = ctx.roots.pick(args.root.as_deref())?;
    let target = root.resolve(&args.path)?;
    target.refuse_key_names(ctx.keys.as_ref(), false)?;
    let page = ctx.limits.page_for(&target.shown)?;
    let mut file = TextFile::open(&target, false)?;
    let size = file.size;

    // Every returned line costs at least its raw bytes plus its terminator in JSON, so no
    // more than `page` raw bytes can fit; a few more show where the oldest line starts.
    let tail_start = size.saturating_sub(page + 8);
    let window_start = tail_start.saturating_sub(LOOK_BACK_BYTES);
    // One byte more in front tells whether the window starts at a line start.
    let read_start = window_start.saturating_sub(1);
    let read = file.read_at(read_start, (size - read_start) as usize)?;
    let (window, byte_before_window) = match (window_start - read_start) as usize {
        0 => (&read[..], None),
        _ => (read.get(1..).unwrap_or_default(), read.first().copied()),
    };
    // A file cut short since it was opened (a log truncated by rotation) reads as empty.
    let tail = window
        .get((tail_start - window_start) as usize..)
        .unwrap_or_default();

    let mut lines: Vec<String> = Vec::new();
    let mut used = 2u64; // `[` and `]`
    let mut truncated = false;
    let mut returned_from = size; // file offset where the oldest returned text starts
    let mut end = tail.len();
    if tail.last() == Some(&b'\n') {
        end -= 1;
    }
    while !tail.is_empty() {
        let newline = memchr::memrchr(b'\n', &tail[..end]);
        let line_start = newline.map_or(0, |i| i + 1);
        let whole = newline.is_some() || tail_start == 0;
        let raw = &tail[line_start..end];
        // The terminator is `\n` or `\r\n`; a `\r` that ends the file is text.
        let terminated = end < tail.len();
        let raw = match raw.strip_suffix(b"\r") {
            Some(text) if terminated => text,
            _ => raw,
        };
        let text = String::from_utf8_lossy(raw);
        let cost = escaped_len(&text) + 2 + u64::from(!lines.is_empty());
        if !whole || used + cost > page {
            if lines.is_empty() {
                // One line alone is longer than the page: its tail that fits.
                let part = escaped_suffix(raw, page - used - 2);
                returned_from = tail_start + (line_start + raw.len() - part.1) as u64;
                lines.push(part.0);
            }
            truncated = true;
            break;
        }
        lines.push(text.into_owned());
        used += cost;
        returned_from = tail_start + line_start as u64;
        match newline {
            Some(i) if lines.len() < wanted => end = i,
            // More lines were asked than the 5,000 returned, and the file has more.
            Some(_) => {
                truncated = asked > wanted;
                break;
            }
            None => break,
        }
    }
    lines.reverse();

    let window = Window::new(window, window_start, byte_before_window);
    let scan = KeyScan::scan(window, returned_from..size);
    let refusal = if scan.ends_inside {
        Some("ends inside a PEM private key")
    } else if scan.overlaps {
        Some("holds a PEM private key")
    } else if scan.fail_closed {
        Some(
            "may end inside a PEM private key (the 128 KiB before the returned lines are only key-body lines)",
        )
    } else {
        None
    };
    if let Some(why) = refusal {
        return Err(ToolError::new(
            ErrorKind::KeyMaterial,
            format!("refusing to read key material: {} {why}", target.shown),
        ));
    }
    Ok(TailFilePage {
        path: target.shown,
        truncated,
        count: lines.len() as u64,
        lines,
    })
}

/// The longest suffix of `raw` (decoded lossily) whose escaped size is at most `budget`,
/// starting on a character boundary, with its raw byte length.
fn escaped_suffix(raw: &[u8], budget: u64) -> (String, usize) {
    let chars: Vec<_> = lossy_chars(raw).collect();
    let (mut used, mut raw_len, mut keep) = (0u64, 0usize, 0usize);
    for d in chars.iter().rev() {
        let cost = crate::budget::escaped_char_len(d.ch);
        if used + cost > budget {
            break;
        }
        used += cost;
        raw_len += d.len;
        keep += 1;
    }
    let text: String = chars[chars.len() - keep..].iter().map(|d| d.ch).collect();
    (text, raw_len)
}
