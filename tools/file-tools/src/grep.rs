//! `grep_files`: search files for a regular expression, one page of matches at a time
//! (docs/paging.md#grep_files).
//!
//! The walk starts at the root so that every `.gitignore` from the root down applies
//! (matched by ripgrep's `ignore` crate), visits only the searched path, and is sorted by
//! name, so the `n`th file is the same on every call while the tree does not change. It
//! reads directories through [`crate::sys`], which counts an entry it cannot read instead
//! of losing its neighbours. A cursor names the
//! position of the last returned match (file number and line) plus a check of the search
//! and the file, so it stays short whatever the path length; when it fits in the cursor's 62
//! bytes, the file's position in the walk (its index in each sorted directory) too, so that
//! a resume seeks to it instead of walking back (see [`walk`]).
//!
//! The time budget ([`crate::Limits::deadline`]) is checked before each entry of the walk.
//! Every call visits at least one entry past its cursor first, so following `nextCursor`
//! always reaches the end of the search, however slow the walk back to the cursor is.

use std::path::Path;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, SearcherBuilder, sinks};
use serde::{Deserialize, Serialize};

use crate::Context;
use crate::budget::json_len;
use crate::error::quote;
use crate::error::{ErrorKind, Result, ToolError};
use crate::keys::has_armor;
use crate::list::{DirSource, WholeFile, WholeRead};
use crate::root::{Root, Target};
use crate::text::escaped_prefix;

mod cursor;
mod walk;

use cursor::{Cursor, check, entry_check};
use walk::{Seek, Walk};

/// Longest pattern accepted, in characters.
pub const MAX_PATTERN_CHARS: usize = 1000;

/// `maxResults` when not given.
pub const DEFAULT_MAX_RESULTS: u64 = 100;

/// Largest `maxResults`; larger values are clamped to it.
pub const MAX_MAX_RESULTS: u64 = 500;

/// Files larger than this are skipped, in bytes (5 MiB).
pub const MAX_FILE_BYTES: u64 = 5 * 1024 * 1024;

/// The most memory a compiled pattern may take, in bytes (grep-regex's default is 100 MiB).
const REGEX_SIZE_LIMIT_BYTES: usize = 16 << 20;

/// The most memory the lazy DFA's cache may take while searching, in bytes.
const REGEX_DFA_SIZE_LIMIT_BYTES: usize = 32 << 20;

/// A match's `text` is cut to this many characters, then `…` is added.
pub const MAX_TEXT_CHARS: usize = 500;

/// Files up to this size are read in one read, in bytes (64 KiB); larger ones read their
/// first 8 KiB first, to pass over a binary file without reading the rest.
const ONE_READ_BYTES: u64 = 64 * 1024;

/// What the search reads whole through a [`DirSource`]: files up to 5 MiB, binary by a NUL
/// in the first 8 KiB.
const WHOLE_READ: WholeRead = WholeRead {
    max_bytes: MAX_FILE_BYTES,
    sniff_bytes: crate::file::BINARY_SNIFF_BYTES,
};

/// The most files one announcement to the [`DirSource`] names ([`walk`]).
const READ_AHEAD_RUN: usize = 1024;

/// Directories never entered.
const PRUNED_DIRS: &[&str] = &[".git", "node_modules"];

/// Arguments of `grep_files`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GrepFilesArgs {
    /// Regular expression, Rust `regex` syntax, at most 1,000 characters.
    pub pattern: String,
    /// File or directory to search; default the root.
    pub path: Option<String>,
    /// Name of the root; default the first.
    pub root: Option<String>,
    /// Glob on file names (or on the path relative to the root when it holds a `/`).
    pub glob: Option<String>,
    /// Match case exactly; default false.
    pub case_sensitive: Option<bool>,
    /// Most matches (1–500, default 100; larger is clamped).
    pub max_results: Option<u64>,
    /// Where to resume, from `nextCursor`.
    pub cursor: Option<String>,
}

/// One matching line (the WIT record `grep-match`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GrepMatch {
    /// The file, relative to the root.
    pub path: String,
    /// Line number, 1-based.
    pub line: u64,
    /// The line without its terminator, cut to 500 characters plus `…`.
    pub text: String,
}

/// A page of matches (the WIT record `grep-files-page`): the counts and the cursor before
/// `results` (docs/paging.md#grep_files-the-result).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GrepFilesPage {
    /// The searched path, relative to the root.
    pub path: String,
    /// Matches in `results`.
    pub count: u64,
    /// More matches may follow `nextCursor`.
    pub truncated: bool,
    /// Where the next page starts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// `time` when the search stopped at its time budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<String>,
    /// Files passed over (binary, over 5 MiB, key material, symlinks).
    pub skipped_files: u64,
    /// The matches, in walk order.
    pub results: Vec<GrepMatch>,
}

/// Searches for `args.pattern`; see the module docs for the walk and the cursor.
///
/// # Errors
/// A pattern longer than 1,000 characters or that does not parse (quoting the parser's
/// reason), `maxResults` below 1, a bad glob or cursor, a missing path, a key-material
/// path, a directory a `.gitignore` excludes, a page budget below 320 bytes (also when
/// one match's own path cannot fit).
pub fn grep_files(ctx: &Context, args: &GrepFilesArgs) -> Result<GrepFilesPage> {
    grep_files_from(ctx, args, None)
}

/// [`grep_files`], walking through the listings of `source` where it can list a directory
/// (the results, pages and cursors are the same; only the cost differs).
///
/// # Errors
/// As [`grep_files`].
pub fn grep_files_from(
    ctx: &Context,
    args: &GrepFilesArgs,
    source: Option<&dyn DirSource>,
) -> Result<GrepFilesPage> {
    let chars = args.pattern.chars().count();
    if chars > MAX_PATTERN_CHARS {
        return Err(ToolError::new(
            ErrorKind::InvalidArgument,
            format!("pattern must be at most {MAX_PATTERN_CHARS} characters; got {chars}"),
        ));
    }
    crate::args::at_least("maxResults", args.max_results, 1)?;
    let max_results = args
        .max_results
        .unwrap_or(DEFAULT_MAX_RESULTS)
        .min(MAX_MAX_RESULTS) as usize;
    let root = ctx.roots.pick(args.root.as_deref())?;
    let target = root.resolve(args.path.as_deref().unwrap_or(""))?;
    let meta =
        crate::sys::stat(&target.fs_path, true).map_err(|e| ToolError::io(&target.shown, &e))?;
    target.refuse_key_names(ctx.keys.as_ref(), meta.is_dir())?;
    let page = ctx.limits.page_for(&target.shown)?;
    // Parse the pattern as written first: grep-regex wraps it in a group before parsing,
    // which makes some of its messages point at text the caller never wrote.
    regex_syntax::Parser::new()
        .parse(&args.pattern)
        .map_err(|e| ToolError::new(ErrorKind::InvalidArgument, format!("invalid pattern: {e}")))?;
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(!args.case_sensitive.unwrap_or(false))
        .line_terminator(Some(b'\n'))
        // Well inside the component's memory: a pattern that compiles larger (`a{1000}{1000}`)
        // is an invalid argument that says so, not a memory-limit failure mid-search.
        .size_limit(REGEX_SIZE_LIMIT_BYTES)
        .dfa_size_limit(REGEX_DFA_SIZE_LIMIT_BYTES)
        .build(&args.pattern)
        .map_err(|e| ToolError::new(ErrorKind::InvalidArgument, format!("invalid pattern: {e}")))?;
    let glob = match &args.glob {
        None => None,
        Some(g) if g.is_empty() => {
            return Err(ToolError::new(
                ErrorKind::InvalidArgument,
                "glob must not be empty; leave it out to search every file",
            ));
        }
        Some(g) => Some(
            globset::GlobBuilder::new(g)
                .literal_separator(true)
                .build()
                .map_err(|e| {
                    ToolError::new(ErrorKind::InvalidArgument, format!("invalid glob: {e}"))
                })?
                .compile_matcher(),
        ),
    };
    let search_id = check(
        [
            args.pattern.as_bytes(),
            target.shown.as_bytes(),
            root.name.as_bytes(),
            args.glob.as_deref().unwrap_or("").as_bytes(),
            &[u8::from(args.case_sensitive.unwrap_or(false))],
        ]
        .concat(),
    );
    let resume = args
        .cursor
        .as_deref()
        .map(|c| Cursor::parse(c, search_id))
        .transpose()?;

    let mut search = Search {
        ctx,
        source,
        matcher,
        glob,
        resume,
        visited: false,
        ahead: std::collections::VecDeque::new(),
        buf: Vec::new(),
        // The file's own bytes, as they are: no byte-order-mark sniffing, so no transcoding
        // of UTF-16 (the key rules judge the same bytes), and a UTF-8 BOM stays part of the
        // first line (docs/paging.md#text-and-bytes).
        searcher: SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::none())
            .bom_sniffing(false)
            .build(),
        page: Collector {
            out: GrepFilesPage {
                path: target.shown.clone(),
                ..GrepFilesPage::default()
            },
            budget: page,
            used: 2,
            max_results,
            search_id,
            cap: ctx.limits.max_result_bytes,
            last_file: 0,
            at: Vec::new(),
            last_at: Vec::new(),
            skipped_since_last: 0,
        },
    };
    if meta.is_dir() {
        search.walk(root, &target)?;
    } else {
        Walk::new(&root.dir, &target.resolved_parts, &target.shown, None, None)
            .check_way_to_file()?;
        let rel = target.resolved_parts.join("/");
        // Judged as the walk judges an entry: a file the glob does not select is passed
        // over, and a FIFO, device or socket is counted in skippedFiles.
        let what = search.judge(&rel, meta.is_file());
        search.visit(0, &rel, &target.fs_path, what)?;
    }
    let mut out = search.page.out;
    out.count = out.results.len() as u64;
    Ok(out)
}

/// The walk and the file search.
struct Search<'a> {
    ctx: &'a Context,
    /// Where the walk lists directories, when not itself.
    source: Option<&'a dyn DirSource>,
    matcher: RegexMatcher,
    glob: Option<globset::GlobMatcher>,
    resume: Option<Cursor>,
    /// True once an entry at or after the cursor has been visited in this call.
    visited: bool,
    /// The files announced to `source` ([`DirSource::read_ahead`]) and not yet read, in
    /// order.
    ahead: std::collections::VecDeque<std::path::PathBuf>,
    /// Reused for every file's contents.
    buf: Vec<u8>,
    searcher: grep_searcher::Searcher,
    page: Collector,
}

/// What the walk does with one entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Visit {
    /// A regular file: search it.
    File,
    /// A symlink or another non-file: count it in `skippedFiles`.
    Skipped,
    /// Not selected by the glob: pass over it silently.
    Filtered,
}

/// The page being filled.
struct Collector {
    out: GrepFilesPage,
    /// The page budget, in escaped bytes of the results array.
    budget: u64,
    /// Bytes of the results array so far, brackets and commas included.
    used: u64,
    max_results: usize,
    search_id: u32,
    /// `agent.max_tool_result_bytes`, for messages.
    cap: u32,
    /// File number of the last returned match.
    last_file: u64,
    /// Position of the entry being visited: its index in each sorted directory from the
    /// searched directory down (kept by the walk; empty when a file is searched).
    at: Vec<u64>,
    /// Position of the file of the last returned match.
    last_at: Vec<u64>,
    /// Entries counted in `skippedFiles` since the last returned match: a page that ends
    /// just after that match gives them back, since the next page (resuming there) passes
    /// over them again and counts them.
    skipped_since_last: u64,
}

impl Search<'_> {
    /// Walks the root in sorted order (depth first, names in byte order), visiting only
    /// `target` and what is under it, with every `.gitignore` from the root down applied.
    /// Returns when the walk ends or the page is done.
    fn walk(&mut self, root: &Root, target: &Target) -> Result<()> {
        let seek = self
            .resume
            .as_ref()
            .filter(|c| !c.seek.is_empty())
            .map(|c| Seek::new(c.seek.clone(), c.file, c.path_check));
        let mut walk = Walk::new(
            &root.dir,
            &target.resolved_parts,
            &target.shown,
            seek,
            self.source,
        );
        walk.run(self)?;
        if walk.missed {
            // The cursor's position is not the entry it names (the tree changed): count
            // the way back to its number instead. Nothing was visited.
            walk = Walk::new(
                &root.dir,
                &target.resolved_parts,
                &target.shown,
                None,
                self.source,
            );
            walk.run(self)?;
        }
        if let Some(c) = &self.resume
            && walk.number <= c.file
        {
            // The walk ended before the cursor's file: the tree shrank, or the cursor was
            // altered. Saying so beats an empty page that reads as "no matches".
            return Err(ToolError::new(
                ErrorKind::InvalidArgument,
                "cursor no longer matches the files (the tree changed); search again without cursor",
            ));
        }
        Ok(())
    }

    /// What the search does with the entry at `rel` (relative to the root), a regular file
    /// when `is_file`: passes over it when the glob does not select it, searches it when it
    /// is a regular file whose path does not spell a PEM armor line, else counts it in
    /// `skippedFiles` (symlinks are never followed; such a path is key material).
    fn judge(&self, rel: &str, is_file: bool) -> Visit {
        if !self.glob_matches(rel) {
            Visit::Filtered
        } else if is_file && !has_armor(rel.as_bytes()) {
            Visit::File
        } else {
            Visit::Skipped
        }
    }

    fn glob_matches(&self, rel: &str) -> bool {
        let Some(g) = &self.glob else { return true };
        if g.glob().glob().contains('/') {
            g.is_match(rel)
        } else {
            g.is_match(rel.rsplit('/').next().unwrap_or(rel))
        }
    }

    /// Visits entry number `number` of the walk, at `rel` (relative to the root): passes
    /// over it when the cursor is beyond it, stops the page when the time budget is spent,
    /// counts it in `skippedFiles` or searches it. Returns true when the page is done.
    fn visit(&mut self, number: u64, rel: &str, path: &Path, what: Visit) -> Result<bool> {
        let mut after_line = 0;
        if let Some(c) = &self.resume {
            if number < c.file {
                return Ok(false);
            }
            if number == c.file {
                if c.path_check != entry_check(rel, number, !c.seek.is_empty()) {
                    return Err(ToolError::new(
                        ErrorKind::InvalidArgument,
                        "cursor no longer matches the files (the tree changed); search again without cursor",
                    ));
                }
                after_line = c.line;
            }
        }
        // Every call visits at least one entry past its cursor before the time budget may
        // stop it: walking back to the cursor is not timed, so without this a tree whose
        // walk alone outlasts the budget would hand back the same cursor forever.
        if self.visited && self.ctx.limits.out_of_time() {
            // Resume at this entry, after `after_line` when the cursor points inside it, so
            // nothing already returned comes back.
            let at = std::mem::take(&mut self.page.at);
            self.page.stop(Some("time"), number, after_line, rel, &at);
            return Ok(true);
        }
        self.visited = true;
        match what {
            Visit::Filtered => Ok(false),
            Visit::Skipped => {
                self.page.skip();
                Ok(false)
            }
            Visit::File => self.file(number, rel, path, after_line),
        }
    }

    /// Searches file number `number` of the walk, at `rel` (relative to the root), after
    /// line `after_line`. Returns true when the page is done.
    fn file(&mut self, number: u64, rel: &str, path: &Path, after_line: u64) -> Result<bool> {
        if !self.load(rel, path) {
            self.page.skip();
            return Ok(false);
        }

        let Search {
            matcher,
            searcher,
            buf,
            page,
            ..
        } = self;
        let mut outcome: Result<bool> = Ok(false);
        let sink = sinks::Bytes(|line, bytes| {
            if line <= after_line {
                return Ok(true);
            }
            outcome = page.add(number, rel, line, bytes);
            Ok(matches!(outcome, Ok(false)))
        });
        // Searching an in-memory slice fails only when the sink does, and ours does not.
        let _ = searcher.search_slice(&*matcher, buf, sink);
        outcome
    }

    /// True when the file at `path`, entry `number` of the walk and the next file this search
    /// reads, is to be announced to the source ([`Search::announce`]): there is a source, the
    /// file is not before the cursor (it is read), and it was not announced. Drops what was
    /// announced before it (passed over: a key name).
    fn wants_announcing(&mut self, number: u64, path: &Path) -> bool {
        if self.source.is_none() || self.resume.as_ref().is_some_and(|c| number < c.file) {
            return false;
        }
        match self.ahead.iter().position(|p| p == path) {
            Some(i) => {
                self.ahead.drain(..i);
                false
            }
            None => true,
        }
    }

    /// Announces `run` to the source ([`DirSource::read_ahead`]): files this search reads
    /// next, in the walk's order, before every file announced earlier (the walk is depth
    /// first: a directory's files, announced when it is entered, come before the rest of
    /// the directories around it). At most [`READ_AHEAD_RUN`] of them.
    fn announce(&mut self, mut run: Vec<std::path::PathBuf>) {
        let Some(source) = self.source else { return };
        if run.is_empty() {
            return;
        }
        run.truncate(READ_AHEAD_RUN);
        let paths: Vec<&Path> = run.iter().map(|p| p.as_path()).collect();
        source.read_ahead(&paths, WHOLE_READ);
        for p in run.into_iter().rev() {
            self.ahead.push_front(p);
        }
    }

    /// Reads the file at `path` (at `rel` from the root) into `self.buf`; false when it must
    /// be skipped: a key-material name, unreadable, over 5 MiB, binary (NUL in the first
    /// 8 KiB), or holding key armor. A file over 5 MiB
    /// is not read at all. Only the size the file had when opened is read (bytes appended
    /// since are not searched). A file of at most [`ONE_READ_BYTES`] takes one read; a larger
    /// one two, so that a large binary file is read no further than its first 8 KiB.
    fn load(&mut self, rel: &str, path: &Path) -> bool {
        if self.ahead.front().is_some_and(|p| p == path) {
            self.ahead.pop_front();
        }
        // A source that reads whole files passes over key names itself (one crossing a file
        // instead of two inside a component).
        if let Some(whole) = self.source.and_then(|s| s.read_whole(path, WHOLE_READ)) {
            return match whole {
                WholeFile::Bytes(bytes) => {
                    self.buf = bytes;
                    without_crlf(&mut self.buf);
                    true
                }
                WholeFile::PassedOver => false,
            };
        }
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if self.ctx.keys.is_key_file(name) {
            return false;
        }
        self.buf.clear();
        let Ok(mut file) = crate::sys::OpenFile::open(path) else {
            return false;
        };
        // By descriptor: what was opened is what is read (a FIFO swapped in is skipped).
        let size = match file.stat() {
            Ok(stat) if stat.is_file() => stat.size,
            _ => return false,
        };
        if size > MAX_FILE_BYTES {
            return false;
        }
        let sniff = size.min(crate::file::BINARY_SNIFF_BYTES);
        let head = if size <= ONE_READ_BYTES { size } else { sniff };
        if file.read_into(0, head, &mut self.buf).is_err()
            || memchr::memchr(0, &self.buf[..self.buf.len().min(sniff as usize)]).is_some()
        {
            return false;
        }
        if size > head && file.read_into(head, size - head, &mut self.buf).is_err() {
            return false;
        }
        if has_armor(&self.buf) {
            return false;
        }
        without_crlf(&mut self.buf);
        true
    }
}

impl Collector {
    /// Adds one matching line if it fits. Returns true when the page is done (this match
    /// did not fit, or was cut to fit as the first).
    fn add(&mut self, number: u64, rel: &str, line: u64, bytes: &[u8]) -> Result<bool> {
        if self.out.results.len() == self.max_results {
            self.stop_after_last();
            return Ok(true);
        }
        // The file's `\r\n` are `\n` here already (see `without_crlf`).
        let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let text =
            sluice_text::cut_chars(&String::from_utf8_lossy(bytes), MAX_TEXT_CHARS).into_owned();
        let mut m = GrepMatch {
            path: rel.to_string(),
            line,
            text,
        };
        let cost = json_len(&m) + u64::from(!self.out.results.is_empty());
        if self.used + cost <= self.budget {
            self.used += cost;
            self.out.results.push(m);
            self.last_file = number;
            self.last_at.clone_from(&self.at);
            self.skipped_since_last = 0;
            return Ok(false);
        }
        if !self.out.results.is_empty() {
            self.stop_after_last();
            return Ok(true);
        }
        // The first match alone is too large: cut its text to fit, without a marker.
        let full = std::mem::take(&mut m.text);
        let overhead = self.used + json_len(&m);
        if overhead > self.budget {
            return Err(ToolError::new(
                ErrorKind::PageTooSmall,
                format!(
                    "a match in {} cannot fit: its path is too long for agent.max_tool_result_bytes ({} bytes leave a page of {} bytes); raise agent.max_tool_result_bytes or search a narrower path",
                    quote(rel),
                    self.cap,
                    self.budget
                ),
            ));
        }
        m.text = escaped_prefix(&full, self.budget - overhead).to_string();
        self.out.results.push(m);
        self.last_file = number;
        self.last_at.clone_from(&self.at);
        self.skipped_since_last = 0;
        self.stop_after_last();
        Ok(true)
    }

    /// Counts an entry passed over in `skippedFiles`.
    fn skip(&mut self) {
        self.out.skipped_files += 1;
        self.skipped_since_last += 1;
    }

    /// Marks the page truncated with a cursor just after the last returned match. The
    /// entries skipped after it are the next page's to count, so that `skippedFiles` summed
    /// over the pages of a search is what one page of the whole search would say.
    fn stop_after_last(&mut self) {
        if let Some(m) = self.out.results.last() {
            self.out.skipped_files -= self.skipped_since_last;
            self.skipped_since_last = 0;
            let (line, path) = (m.line, m.path.clone());
            let at = std::mem::take(&mut self.last_at);
            self.stop(None, self.last_file, line, &path, &at);
        }
    }

    /// Marks the page truncated with a cursor after line `line` of file number `file`
    /// (at `rel`, at position `at` of the walk); `stopped_by` says why, when it is not the
    /// page.
    fn stop(&mut self, stopped_by: Option<&str>, file: u64, line: u64, rel: &str, at: &[u64]) {
        self.out.truncated = true;
        self.out.stopped_by = stopped_by.map(str::to_string);
        self.out.next_cursor = Some(Cursor::new(self.search_id, file, line, rel, at).to_string());
    }
}

/// Rewrites every `\r\n` of `buf` as `\n`, in place.
///
/// A line's terminator is `\n` or `\r\n` (docs/paging.md#text-and-bytes): the pattern is
/// matched against the line without it and the match's `text` is the line without it, so
/// `foo$` matches `foo\r\n` and `\r` does not match its terminator. A `\r` not followed by
/// `\n` (one that ends the file among them) is text, matched and returned. Line numbers do
/// not change.
fn without_crlf(buf: &mut Vec<u8>) {
    // `\r` is rare in most text, so one `memchr` pass finds the first `\r\n` (if any).
    let crlf = |from: usize, buf: &[u8]| {
        memchr::memchr_iter(b'\r', &buf[from..])
            .map(|i| from + i)
            .find(|&i| buf.get(i + 1) == Some(&b'\n'))
    };
    let Some(first) = crlf(0, buf) else {
        return;
    };
    // Copy each run that starts at a `\n` whose `\r` was dropped, back over the gap.
    let (mut write, mut read) = (first, first + 1);
    loop {
        let next = crlf(read + 1, buf);
        let end = next.unwrap_or(buf.len());
        buf.copy_within(read..end, write);
        write += end - read;
        match next {
            Some(cr) => read = cr + 1,
            None => break,
        }
    }
    buf.truncate(write);
}
