//! What the run knows so far: the next step, and the answer made of the observations.

use std::collections::HashSet;

use serde_json::Value;

use super::prompt::analyse_prompt;
use super::run::{Call, Obs, Run};
use super::step::{
    ERROR_PATTERN, GREP_FILES, LIST_DIR, MAX_CITED_MATCHES, MAX_LISTED_ENTRIES, MAX_QUOTED_CHARS,
    MAX_READ_PAGES, READ_FILE, Step, TAIL_FILE,
};

/// Why the file was chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Why {
    Matches(usize),
    Largest(u64),
    Named,
    Earlier,
}

/// What the run knows so far: the decision state and the material of the answer.
pub(super) struct Findings<'r, 'a> {
    tools: &'r HashSet<&'r str>,
    dir: String,
    pattern: String,
    listing: Option<&'r Call<'a>>,
    grep: Option<&'r Call<'a>>,
    file: Option<(String, Why)>,
    reads: Vec<&'r Call<'a>>,
    tail: Option<&'r Call<'a>>,
}

impl<'r, 'a> Findings<'r, 'a> {
    pub(super) fn new(run: &'r Run<'a>, tools: &'r HashSet<&'r str>) -> Self {
        let (dir, term) = analyse_prompt(run.prompt);
        let pattern = term.map_or_else(|| ERROR_PATTERN.to_string(), |t| regex::escape(&t));
        let listing = run.first(LIST_DIR);
        let grep = run.first(GREP_FILES);
        let natural = choose_file(&dir, listing, grep);
        let committed = run
            .first(READ_FILE)
            .or(run.first(TAIL_FILE))
            .and_then(Call::path_arg);
        let file = match (committed, natural) {
            (Some(c), Some((n, why))) if c == n => Some((n, why)),
            (Some(c), _) => Some((c.to_string(), Why::Earlier)),
            (None, natural) => natural,
        };
        let reads = match &file {
            Some((path, _)) => run
                .calls
                .iter()
                .filter(|c| c.tool == READ_FILE && c.path_arg() == Some(path.as_str()))
                .collect(),
            None => Vec::new(),
        };
        let tail = run.first(TAIL_FILE);
        Findings {
            tools,
            dir,
            pattern,
            listing,
            grep,
            file,
            reads,
            tail,
        }
    }

    fn has(&self, tool: &str) -> bool {
        self.tools.contains(tool)
    }

    /// The state machine: the first step not yet done whose tool is available.
    pub(super) fn next_step(&self) -> Step {
        if self.has(LIST_DIR) && self.listing.is_none() {
            return Step::ListDir {
                path: self.dir.clone(),
            };
        }
        if self.has(GREP_FILES) && self.grep.is_none() {
            return Step::Grep {
                pattern: self.pattern.clone(),
                path: self.dir.clone(),
            };
        }
        let Some((path, _)) = &self.file else {
            return Step::Answer;
        };
        if self.has(READ_FILE) {
            match self.reads.last() {
                None => {
                    return Step::Read {
                        path: path.clone(),
                        cursor: None,
                    };
                }
                Some(last) if self.reads.len() < MAX_READ_PAGES => {
                    if let Some(offset) = last
                        .obs
                        .ok()
                        .and_then(|r| r.get("nextOffset"))
                        .and_then(Value::as_u64)
                    {
                        let line = last
                            .obs
                            .ok()
                            .and_then(|r| r.get("nextLine"))
                            .and_then(Value::as_u64);
                        return Step::Read {
                            path: path.clone(),
                            cursor: Some((offset, line)),
                        };
                    }
                }
                Some(_) => {}
            }
        }
        if self.has(TAIL_FILE) && self.tail.is_none() {
            return Step::Tail { path: path.clone() };
        }
        Step::Answer
    }

    /// The final answer, from the observations only.
    pub(super) fn answer(&self) -> String {
        let mut out = Vec::new();
        out.push(format!(
            "Findings for `{}` (scripted offline model: a fixed sequence of tool calls, not an LLM).",
            self.dir
        ));
        if [LIST_DIR, GREP_FILES, READ_FILE, TAIL_FILE]
            .iter()
            .all(|t| !self.has(t))
        {
            out.push(
                "None of list_dir, grep_files, read_file and tail_file is available, so there is nothing I can look at."
                    .to_string(),
            );
            return out.join("\n");
        }
        self.describe_listing(&mut out);
        self.describe_search(&mut out);
        self.describe_file(&mut out);
        out.join("\n")
    }

    fn describe_listing(&self, out: &mut Vec<String>) {
        let listing = match self.listing {
            None if !self.has(LIST_DIR) => {
                return out.push("Listing: skipped (list_dir is not available).".into());
            }
            None => return,
            Some(call) => call,
        };
        let Some(result) = checked(out, "Listing", LIST_DIR, &listing.obs) else {
            return;
        };
        let entries = result
            .get("entries")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let total = result
            .get("total")
            .and_then(Value::as_u64)
            .unwrap_or(entries.len() as u64);
        let shown: Vec<String> = entries
            .iter()
            .take(MAX_LISTED_ENTRIES)
            .map(describe_entry)
            .collect();
        let mut line = if entries.is_empty() {
            format!("Listing: `{}` is empty.", self.dir)
        } else {
            format!(
                "Listing: `{}` has {total} {}: {}",
                self.dir,
                if total == 1 { "entry" } else { "entries" },
                shown.join(", ")
            )
        };
        if entries.len() > shown.len() {
            line.push_str(&format!(
                ", and {} more on this page",
                entries.len() - shown.len()
            ));
        }
        if !entries.is_empty() {
            line.push('.');
        }
        if let Some(next) = result.get("nextOffset").and_then(Value::as_u64) {
            line.push_str(&format!(
                " (Only the first page was listed; more entries follow from offset {next}.)"
            ));
        }
        out.push(line);
    }

    fn describe_search(&self, out: &mut Vec<String>) {
        let grep = match self.grep {
            None if !self.has(GREP_FILES) => {
                return out.push("Search: skipped (grep_files is not available).".into());
            }
            None => return,
            Some(call) => call,
        };
        let Some(result) = checked(out, "Search", GREP_FILES, &grep.obs) else {
            return;
        };
        let matches = grep_matches(result);
        let mut line = if matches.is_empty() {
            format!(
                "Search: no matches for `{}` in `{}`.",
                self.pattern, self.dir
            )
        } else {
            let per_file: Vec<String> = match_counts(&matches)
                .iter()
                .map(|(p, n)| format!("{p} ({n})"))
                .collect();
            format!(
                "Search: {} {} for `{}` in {} {}: {}.",
                matches.len(),
                plural(matches.len(), "match", "matches"),
                self.pattern,
                per_file.len(),
                plural(per_file.len(), "file", "files"),
                per_file.join(", ")
            )
        };
        if result.get("truncated").and_then(Value::as_bool) == Some(true) {
            line.push_str(" More matches exist beyond this page.");
        }
        if result.get("stoppedBy").and_then(Value::as_str) == Some("time") {
            line.push_str(" The search stopped at its time budget.");
        }
        if let Some(skipped) = result
            .get("skippedFiles")
            .and_then(Value::as_u64)
            .filter(|n| *n > 0)
        {
            line.push_str(&format!(
                " {skipped} {} skipped (binary, too large, key material or symlinks).",
                plural(skipped as usize, "file was", "files were")
            ));
        }
        out.push(line);
        if !matches.is_empty() {
            out.push("Matches:".into());
            for m in matches.iter().take(MAX_CITED_MATCHES) {
                out.push(format!("- {}:{}: {}", m.path, m.line, quote(m.text)));
            }
            if matches.len() > MAX_CITED_MATCHES {
                out.push(format!("- …and {} more", matches.len() - MAX_CITED_MATCHES));
            }
        }
    }

    fn describe_file(&self, out: &mut Vec<String>) {
        let Some((path, why)) = &self.file else {
            out.push("File: none to read (no search match and no file in the listing).".into());
            return;
        };
        let why = match why {
            Why::Matches(n) => format!("it has the most matches ({n})"),
            Why::Largest(size) => {
                format!("no search match, and it is the largest file in the listing ({size} bytes)")
            }
            Why::Named => "the prompt names it and it could not be listed".to_string(),
            Why::Earlier => "chosen earlier in this run".to_string(),
        };
        out.push(format!("File: `{path}`, because {why}."));
        self.describe_reads(path, out);
        self.describe_tail(path, out);
    }

    fn describe_reads(&self, path: &str, out: &mut Vec<String>) {
        if !self.has(READ_FILE) && self.reads.is_empty() {
            return out.push("Read: skipped (read_file is not available).".into());
        }
        let mut pages = Vec::new();
        let mut problem = None;
        for (i, call) in self.reads.iter().enumerate() {
            match &call.obs {
                Obs::Ok(page) => pages.push(page),
                Obs::Failed(e) => {
                    problem = Some(format!("read_file failed on page {}: {}", i + 1, quote(e)))
                }
                Obs::Unreadable(why) => {
                    problem = Some(format!(
                        "page {} is unreadable ({why}); its data is skipped",
                        i + 1
                    ))
                }
                Obs::Missing => problem = Some(format!("page {} has no recorded result", i + 1)),
            }
            if problem.is_some() {
                break;
            }
        }
        let mut facts = Vec::new();
        if let (Some(first), Some(last)) = (pages.first(), pages.last()) {
            let number = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64);
            let mut read = format!("{} {}", pages.len(), plural(pages.len(), "page", "pages"));
            if let (Some(a), Some(b)) = (number(first, "startLine"), number(last, "endLine")) {
                read.push_str(&format!(", lines {a}–{b}"));
            }
            let start = number(first, "offset").unwrap_or(0);
            let end = number(last, "nextOffset").or(number(last, "size"));
            if let Some(end) = end {
                read.push_str(&format!(" (bytes {start}–{end})"));
            }
            facts.push(read);
            match (number(last, "totalLines"), number(last, "nextOffset")) {
                (Some(total), _) => facts.push(format!("reached the end: {total} lines in total")),
                (None, None) => facts.push("reached the end".into()),
                (None, Some(next)) => facts.push(format!(
                    "stopped before the end; the rest starts at byte {next}"
                )),
            }
        }
        let size = self
            .reads
            .iter()
            .find_map(|c| {
                c.obs
                    .ok()
                    .and_then(|p| p.get("size"))
                    .and_then(Value::as_u64)
            })
            .or_else(|| self.listed_size(path));
        if let Some(size) = size {
            facts.insert(0, format!("{size} bytes"));
        }
        facts.extend(problem);
        if facts.is_empty() {
            facts.push("nothing was read".into());
        }
        out.push(format!("Read: {}.", facts.join("; ")));
    }

    fn describe_tail(&self, path: &str, out: &mut Vec<String>) {
        let tail = match self.tail {
            None if !self.has(TAIL_FILE) => {
                return out.push("Last lines: skipped (tail_file is not available).".into());
            }
            None => return,
            Some(call) => call,
        };
        let Some(result) = checked(out, "Last lines", TAIL_FILE, &tail.obs) else {
            return;
        };
        let lines: Vec<&str> = result
            .get("lines")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if lines.is_empty() {
            return out.push(format!("Last lines: `{path}` is empty."));
        }
        let cut = if result.get("truncated").and_then(Value::as_bool) == Some(true) {
            ", truncated"
        } else {
            ""
        };
        out.push(format!(
            "Last {} {} of `{path}`{cut}:",
            lines.len(),
            plural(lines.len(), "line", "lines")
        ));
        out.extend(lines.iter().map(|l| format!("    {}", quote(l))));
    }

    /// The size the listing gives for `path`.
    fn listed_size(&self, path: &str) -> Option<u64> {
        let result = self.listing?.obs.ok()?;
        let base = listing_base(result, &self.dir);
        result.get("entries")?.as_array()?.iter().find_map(|e| {
            let name = e.get("name")?.as_str()?;
            (join(&base, name) == path)
                .then(|| e.get("size")?.as_u64())
                .flatten()
        })
    }
}

/// The result of a successful observation, or `None` after writing why there is none.
fn checked<'v>(out: &mut Vec<String>, label: &str, tool: &str, obs: &'v Obs) -> Option<&'v Value> {
    match obs {
        Obs::Ok(result) => return Some(result),
        Obs::Failed(e) => out.push(format!("{label}: {tool} failed: {}.", quote(e))),
        Obs::Unreadable(why) => out.push(format!(
            "{label}: the {tool} result is unreadable ({why}); its data is skipped."
        )),
        Obs::Missing => out.push(format!("{label}: the {tool} call has no recorded result.")),
    }
    None
}

/// One `grep_files` match.
struct Match<'v> {
    path: &'v str,
    line: u64,
    text: &'v str,
}

fn grep_matches(result: &Value) -> Vec<Match<'_>> {
    let items = result
        .get("results")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    items
        .iter()
        .filter_map(|m| {
            Some(Match {
                path: m.get("path")?.as_str()?,
                line: m.get("line")?.as_u64()?,
                text: m.get("text").and_then(Value::as_str).unwrap_or(""),
            })
        })
        .collect()
}

/// Matches per file, in order of first appearance.
fn match_counts<'v>(matches: &[Match<'v>]) -> Vec<(&'v str, usize)> {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for m in matches {
        match counts.iter_mut().find(|(p, _)| *p == m.path) {
            Some((_, n)) => *n += 1,
            None => counts.push((m.path, 1)),
        }
    }
    counts
}

/// Step 3 of the module docs, from the listing and the search alone.
fn choose_file(
    dir: &str,
    listing: Option<&Call<'_>>,
    grep: Option<&Call<'_>>,
) -> Option<(String, Why)> {
    if let Some(result) = grep.and_then(|c| c.obs.ok()) {
        let counts = match_counts(&grep_matches(result));
        let mut best: Option<(&str, usize)> = None;
        for (path, n) in counts {
            if best.is_none_or(|(_, b)| n > b) {
                best = Some((path, n));
            }
        }
        if let Some((path, n)) = best {
            return Some((path.to_string(), Why::Matches(n)));
        }
    }
    match listing.map(|c| &c.obs) {
        Some(Obs::Ok(result)) => {
            let base = listing_base(result, dir);
            let mut best: Option<(&str, u64)> = None;
            let entries = result
                .get("entries")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            for entry in entries {
                let is_file = entry.get("kind").and_then(Value::as_str) == Some("file");
                let cut = entry.get("nameTruncated").and_then(Value::as_bool) == Some(true);
                let (Some(name), Some(size)) = (
                    entry.get("name").and_then(Value::as_str),
                    entry.get("size").and_then(Value::as_u64),
                ) else {
                    continue;
                };
                if is_file && !cut && best.is_none_or(|(_, b)| size > b) {
                    best = Some((name, size));
                }
            }
            best.map(|(name, size)| (join(&base, name), Why::Largest(size)))
        }
        _ if dir != "." => Some((dir.to_string(), Why::Named)),
        _ => None,
    }
}

/// The directory the listing's names are relative to: its `path` field, else the one asked.
fn listing_base(result: &Value, asked: &str) -> String {
    result
        .get("path")
        .and_then(Value::as_str)
        .unwrap_or(asked)
        .to_string()
}

/// `dir/name`, or `name` at the root.
fn join(dir: &str, name: &str) -> String {
    match dir.trim_end_matches('/') {
        "" | "." => name.to_string(),
        dir => format!("{dir}/{name}"),
    }
}

fn describe_entry(entry: &Value) -> String {
    let name = entry.get("name").and_then(Value::as_str).unwrap_or("?");
    let cut = if entry.get("nameTruncated").and_then(Value::as_bool) == Some(true) {
        "…"
    } else {
        ""
    };
    match (
        entry.get("kind").and_then(Value::as_str),
        entry.get("size").and_then(Value::as_u64),
    ) {
        (Some("file"), Some(size)) => format!("{name}{cut} ({size} bytes)"),
        (Some("directory"), _) => format!("{name}{cut}/"),
        (Some(kind), _) => format!("{name}{cut} ({kind})"),
        (None, _) => format!("{name}{cut}"),
    }
}

fn plural<'s>(n: usize, one: &'s str, many: &'s str) -> &'s str {
    if n == 1 { one } else { many }
}

/// `text` on one line (`\r` dropped), cut to [`MAX_QUOTED_CHARS`] characters with `…`.
fn quote(text: &str) -> String {
    let text = text
        .trim_end_matches(['\r', '\n'])
        .replace(['\r', '\n'], " ");
    sluice_text::cut_chars(&text, MAX_QUOTED_CHARS).into_owned()
}
