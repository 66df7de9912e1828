//! `read_file`: one page of a text file (docs/paging.md#read_file).

use serde::{Deserialize, Serialize};

use crate::Context;
use crate::budget::escaped_char_len;
use crate::error::{ErrorKind, Result, ToolError};
use crate::file::TextFile;
use crate::keys::KeyScan;
use crate::page_read::{LookBack, PageRead};

/// Arguments of `read_file`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadFileArgs {
    /// File to read, relative to the root.
    pub path: String,
    /// Name of the root; default the first.
    pub root: Option<String>,
    /// First line (1-based, at least 1); with `offset`, the line number `offset` starts.
    pub start_line: Option<u64>,
    /// Most lines to return (at least 1); default as many as fit.
    pub line_count: Option<u64>,
    /// Byte offset to start at, as returned in `nextOffset`.
    pub offset: Option<u64>,
}

/// One page of a text file. Serialises (camelCase, `None` omitted) exactly as the host
/// shows the WIT record `read-file-page`: the cursor, the line numbers and `contentBytes`
/// before `content`, so a client that keeps only the head of a result, or cuts its middle,
/// still shows them (docs/paging.md#read_file-the-result).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadFilePage {
    /// The file, relative to the root.
    pub path: String,
    /// File size in bytes.
    pub size: u64,
    /// Byte offset where the page starts.
    pub offset: u64,
    /// Byte offset of the next page; `None` at the end of the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
    /// Line number of the next page, with line numbers, before the end of the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_line: Option<u64>,
    /// `Some(true)` when the page ends inside a line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_truncated: Option<bool>,
    /// First line number of the page, when line numbers are known and the page is not empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u64>,
    /// Last line number of the page, likewise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u64>,
    /// Lines in the file, with line numbers, at the end of the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_lines: Option<u64>,
    /// `Some(true)` when the page holds bytes that are not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid_utf8: Option<bool>,
    /// `content.len()`: the page's text in bytes (UTF-8, not escaped).
    pub content_bytes: u64,
    /// The page's text.
    pub content: String,
}

/// Where a page stopped, relative to the page start (raw bytes).
enum Ending {
    /// At the end of the file.
    Eof,
    /// Before a line (whole lines only).
    BeforeLine(usize),
    /// Inside the first line, which is longer than a page.
    InsideLine(usize),
}

/// Reads one page of `args.path`.
///
/// # Errors
/// Bad arguments, paths outside the root, key material, directories and other files that
/// are not regular, binary files, an `offset` past the end, a page budget below 320 bytes,
/// and I/O failures, each as a [`ToolError`] whose message says what was wrong.
pub fn read_file(ctx: &Context, args: &ReadFileArgs) -> Result<ReadFilePage> {
    crate::args::at_least("startLine", args.start_line, 1)?;
    crate::args::at_least("lineCount", args.line_count, 1)?;
    let root = ctx.roots.pick(args.root.as_deref())?;
    let target = root.resolve(&args.path)?;
    target.refuse_key_names(ctx.keys.as_ref(), false)?;
    let page = ctx.limits.page_for(&target.shown)?;
    // The version is asked for only where carries are kept (docs/keys.md#sequential-pages).
    let mut file = TextFile::open(&target, ctx.carries.is_some())?;
    let size = file.size;

    let first_line = args.start_line.unwrap_or(1);
    let asked = match args.offset {
        Some(o) if o > size => {
            return Err(ToolError::new(
                ErrorKind::InvalidArgument,
                format!("offset {o} is past the end of the file ({size} bytes)"),
            ));
        }
        Some(o) => o,
        None if first_line > 1 => match line_start(&mut file, first_line)? {
            LineStart::At(pos) if pos < size => pos,
            // Line `first_line - 1` ends the file: `first_line` is past the last line.
            LineStart::At(_) => return empty_page(target.shown, size, first_line - 1),
            LineStart::PastEnd { total_lines } => {
                return empty_page(target.shown, size, total_lines);
            }
        },
        None => 0,
    };

    // A page that starts where a page of this version of the file ended may skip most of
    // its look-back (docs/keys.md#sequential-pages); when that cannot judge it, or anything
    // else does not match, the page is read and judged with its whole look-back.
    let carried = match (&ctx.carries, file.version, args.offset) {
        (Some(store), Some(version), Some(offset)) => store.recall(&version, offset),
        _ => None,
    };
    if let Some(carry) = carried
        && let Some(read) = PageRead::after_carry(&mut file, asked, page, carry)?
        && let Some(page) = serve(ctx, args, &target.shown, &read, page, first_line)?
    {
        return Ok(page);
    }
    let read = PageRead::with_look_back(&mut file, asked, page, args.offset.is_some())?;
    serve(ctx, args, &target.shown, &read, page, first_line)?.ok_or_else(|| {
        // A page read with its look-back is always judged.
        ToolError::new(
            ErrorKind::Io,
            format!("{} could not be judged", target.shown),
        )
    })
}

/// The page `read` holds: filled, judged by the key rules, and its carry left for the next
/// page. `None` when `read` (read after a carry) cannot be judged without the whole
/// look-back, or a `startLine` passed with the offset is not the one the carry knows.
fn serve(
    ctx: &Context,
    args: &ReadFileArgs,
    shown: &str,
    read: &PageRead,
    page: u64,
    first_line: u64,
) -> Result<Option<ReadFilePage>> {
    let line_numbers = args.offset.is_none() || args.start_line.is_some();
    let start = read.start;
    if let (Some(offset), Some(line)) = (args.offset, args.start_line) {
        match &read.look_back {
            LookBack::InBytes => {
                let (before, from_file_start) = read.look_back_bytes();
                check_start_line(line, offset, before, from_file_start)?;
            }
            LookBack::Clean { carry, .. } if carry.line == Some(line) => {}
            LookBack::Clean { .. } => return Ok(None),
        }
    }
    let body = read.body();

    let mut fill = Filler::new(page, args.line_count.unwrap_or(u64::MAX));
    let mut ending = fill.fill(body);
    if let Ending::BeforeLine(p) = ending
        && start + p as u64 == read.size
    {
        ending = Ending::Eof;
    }
    let Filler {
        content,
        pos,
        invalid,
        mut lines_done,
        line_pos,
        ..
    } = fill;
    if matches!(ending, Ending::Eof) && pos > line_pos {
        // A final line without `\n` counts as a line at the end of the file.
        lines_done += 1;
    }

    let scan = if pos == 0 {
        // An empty page (at the end of the file) shows nothing, wherever it is.
        KeyScan::default()
    } else {
        match read.scan(start..start + pos as u64) {
            Some(scan) => scan,
            None => return Ok(None),
        }
    };
    if scan.overlaps || scan.starts_inside || scan.fail_closed {
        let why = if scan.overlaps {
            "holds a PEM private key in that range"
        } else if scan.starts_inside {
            "holds a PEM private key at that position"
        } else {
            "may hold a PEM private key at that position (the 128 KiB before it are only key-body lines)"
        };
        return Err(ToolError::new(
            ErrorKind::KeyMaterial,
            format!("refusing to read key material: {shown} {why}"),
        ));
    }

    let mut out = ReadFilePage {
        path: shown.to_string(),
        size: read.size,
        offset: start,
        content_bytes: content.len() as u64,
        content,
        invalid_utf8: invalid.then_some(true),
        ..ReadFilePage::default()
    };
    let (next_offset, line_truncated, lines_touched) = match ending {
        Ending::Eof => (None, false, lines_done),
        Ending::BeforeLine(p) => (Some(start + p as u64), false, lines_done),
        Ending::InsideLine(p) => (Some(start + p as u64), true, lines_done + 1),
    };
    // The last line the page touches (`startLine - 1` when it touches none). Line numbers
    // saturate: `startLine` comes from the caller and may be near u64::MAX.
    let last_line = match lines_touched {
        0 => first_line - 1,
        n => first_line.saturating_add(n - 1),
    };
    out.next_offset = next_offset;
    out.line_truncated = line_truncated.then_some(true);
    if line_numbers {
        if !out.content.is_empty() {
            out.start_line = Some(first_line);
            out.end_line = Some(last_line);
        }
        match next_offset {
            None => out.total_lines = Some(last_line),
            Some(_) if line_truncated => out.next_line = Some(last_line),
            Some(_) => out.next_line = Some(last_line.saturating_add(1)),
        }
    }
    if let (Some(store), Some(next)) = (&ctx.carries, out.next_offset) {
        read.leave_carry(store.as_ref(), next, out.next_line);
    }
    Ok(Some(out))
}

/// The empty page at the end of the file that a `startLine` past the last line gets
/// (docs/paging.md#read_file-the-result): `offset` = size, empty `content`, and
/// `totalLines`. Never refused (docs/keys.md#the-empty-page): it shows nothing, whatever
/// the file ends with.
fn empty_page(path: String, size: u64, total_lines: u64) -> Result<ReadFilePage> {
    Ok(ReadFilePage {
        path,
        size,
        offset: size,
        total_lines: Some(total_lines),
        ..ReadFilePage::default()
    })
}

/// Fills one page with text: whole lines while they fit and `lineCount` allows, else a
/// prefix of the one line that does not fit.
///
/// Text is taken in runs: bytes that need no escaping cost one escaped byte each (a valid
/// multi-byte character costs its length), so a run is measured and copied at once and only
/// the bytes JSON escapes (`"`, `\\`, controls, among them `\n`) are looked at one by one.
struct Filler {
    content: String,
    /// Escaped bytes of `content`.
    escaped: u64,
    /// Raw bytes of the file taken.
    pos: usize,
    /// `content` holds U+FFFD for invalid bytes.
    invalid: bool,
    /// The same three at the start of the current line, to drop a line that does not fit.
    line_pos: usize,
    line_len: usize,
    line_invalid: bool,
    lines_done: u64,
    line_limit: u64,
    page: u64,
}

impl Filler {
    fn new(page: u64, line_limit: u64) -> Filler {
        Filler {
            content: String::new(),
            escaped: 0,
            pos: 0,
            invalid: false,
            line_pos: 0,
            line_len: 0,
            line_invalid: false,
            lines_done: 0,
            line_limit,
            page,
        }
    }

    /// Takes text from `body` (the file from the page start) until the page is full, the
    /// line count is reached, or `body` ends (the end of the file).
    fn fill(&mut self, mut body: &[u8]) -> Ending {
        // `from_utf8` validates valid text much faster than `utf8_chunks`; invalid bytes are
        // rare and handled one sequence at a time.
        loop {
            let (text, bad) = match std::str::from_utf8(body) {
                Ok(text) => (text, 0),
                Err(e) => {
                    let valid = e.valid_up_to();
                    // Invalid bytes in the middle, or an incomplete sequence at the end.
                    let bad = e.error_len().unwrap_or(body.len() - valid);
                    // The first `valid_up_to` bytes are valid UTF-8: this cannot fail.
                    (std::str::from_utf8(&body[..valid]).unwrap_or(""), bad)
                }
            };
            if let Some(end) = self.text(text) {
                return end;
            }
            if bad == 0 {
                return Ending::Eof;
            }
            if let Some(end) = self.char(char::REPLACEMENT_CHARACTER, bad, true) {
                return end;
            }
            body = &body[text.len() + bad..];
        }
    }

    /// Takes valid text: runs that need no escaping at once, the rest character by
    /// character.
    fn text(&mut self, text: &str) -> Option<Ending> {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let special = next_special(&bytes[i..]).map_or(bytes.len(), |p| i + p);
            if special > i
                && let Some(end) = self.run(&text[i..special])
            {
                return Some(end);
            }
            if special == bytes.len() {
                break;
            }
            if let Some(end) = self.char(char::from(bytes[special]), 1, false) {
                return Some(end);
            }
            i = special + 1;
        }
        None
    }

    /// Takes a run of text that needs no escaping, or as much of it as fits.
    fn run(&mut self, run: &str) -> Option<Ending> {
        let room = (self.page - self.escaped) as usize;
        let take = run.floor_char_boundary(room);
        self.content.push_str(&run[..take]);
        self.escaped += take as u64;
        self.pos += take;
        (take < run.len()).then(|| self.full())
    }

    /// Takes one character standing for `raw_len` bytes of the file, if it fits.
    fn char(&mut self, ch: char, raw_len: usize, invalid: bool) -> Option<Ending> {
        let cost = escaped_char_len(ch);
        if self.escaped + cost > self.page {
            return Some(self.full());
        }
        self.content.push(ch);
        self.escaped += cost;
        self.pos += raw_len;
        self.invalid |= invalid;
        if ch == '\n' {
            self.lines_done += 1;
            (self.line_pos, self.line_len, self.line_invalid) =
                (self.pos, self.content.len(), self.invalid);
            if self.lines_done == self.line_limit {
                return Some(Ending::BeforeLine(self.pos));
            }
        }
        None
    }

    /// The page is full: it ends inside its first line, or before the line that does not
    /// fit (which is dropped).
    fn full(&mut self) -> Ending {
        if self.lines_done == 0 {
            return Ending::InsideLine(self.pos);
        }
        self.content.truncate(self.line_len);
        (self.pos, self.invalid) = (self.line_pos, self.line_invalid);
        Ending::BeforeLine(self.pos)
    }
}

/// The position of the first byte JSON escapes (`"`, `\\`, a control below 0x20), if any.
/// `\n`, `"` and `\\` are found with memchr; other controls are rare, so a run is checked
/// for them with a loop the compiler vectorises, and searched byte by byte only when it has
/// one.
fn next_special(bytes: &[u8]) -> Option<usize> {
    let candidate = memchr::memchr3(b'\n', b'"', b'\\', bytes);
    let run = &bytes[..candidate.unwrap_or(bytes.len())];
    let has_control = run.iter().fold(false, |found, &b| found | (b < 0x20));
    if has_control {
        return run.iter().position(|&b| b < 0x20);
    }
    candidate
}

/// Checks a `startLine` given with `offset`: it names the line the byte at `offset` is on
/// (it comes back as `nextLine` with `nextOffset`), and the page's line numbers count from
/// it. `before` is the look-back already read, the bytes just before `offset`; when it
/// reaches the start of the file (`from_file_start`) the check is exact, otherwise the
/// newlines in it are a lower bound. Nothing more is read: resuming stays free of rescans.
///
/// # Errors
/// `invalid-argument` naming both values and the line `offset` is on (or the least it can be).
fn check_start_line(
    start_line: u64,
    offset: u64,
    before: &[u8],
    from_file_start: bool,
) -> Result<()> {
    let ended = memchr::memchr_iter(b'\n', before).count() as u64;
    let (fits, actual) = if from_file_start {
        (
            start_line == ended + 1,
            format!("the byte at offset {offset} is on line {}", ended + 1),
        )
    } else {
        (
            start_line > ended,
            format!("at least {ended} lines end before offset {offset}"),
        )
    };
    if fits {
        return Ok(());
    }
    Err(ToolError::new(
        ErrorKind::InvalidArgument,
        format!(
            "startLine {start_line} does not match offset {offset}: {actual}; pass back nextLine together with the nextOffset of the same page, or give startLine without offset to find the line by counting"
        ),
    ))
}

/// Where line `line` starts, or the number of lines when the file has fewer.
enum LineStart {
    At(u64),
    PastEnd { total_lines: u64 },
}

/// Finds the start of line `line` (> 1) by counting `\n` from the start of the file,
/// streaming in 64 KiB reads, within the file's size when it was opened (bytes appended
/// since are not counted).
fn line_start(file: &mut TextFile, line: u64) -> Result<LineStart> {
    const CHUNK: usize = 64 * 1024;
    let newlines_wanted = line - 1;
    let size = file.size;
    let mut buf = Vec::with_capacity(CHUNK);
    let (mut seen, mut pos, mut last) = (0u64, 0u64, b'\n');
    loop {
        let want = (size - pos).min(CHUNK as u64) as usize;
        file.read_into(pos, want, &mut buf)?;
        if buf.is_empty() {
            let partial = u64::from(pos > 0 && last != b'\n');
            return Ok(LineStart::PastEnd {
                total_lines: seen + partial,
            });
        }
        for i in memchr::memchr_iter(b'\n', &buf) {
            seen += 1;
            if seen == newlines_wanted {
                return Ok(LineStart::At(pos + i as u64 + 1));
            }
        }
        pos += buf.len() as u64;
        last = buf[buf.len() - 1];
    }
}
