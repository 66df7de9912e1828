//! The scripted model (`--model scripted`): Sluice's offline default.
//!
//! **This is not an LLM.** It does not understand language and learns nothing. It is a small,
//! deterministic state machine that reads the transcript and always investigates a directory
//! the same way, so that the real agent loop (real tools, real caps, real sessions) can run
//! with no network, no API key and no model download. Same transcript in, same turn out.
//!
//! # What it does
//!
//! The *run* is everything after the last user message (the *prompt*). From the prompt it
//! takes:
//!
//! - the **directory**: the first quoted term (`"…"`, `'…'`, `` `…` ``, `“…”`) that looks like a
//!   relative path, else the first word that does (contains a `/` or starts with `./`; letters,
//!   digits and `._-/@+` only; not absolute, no `..`, no `://`), with a leading `./` and a
//!   trailing `/` removed; else `.` (the root). So "what failed in logs/?" looks at `logs`;
//! - the **search pattern**: the first quoted term that is not a path, as a literal
//!   (regex-escaped; the tool matches case-insensitively), else [`ERROR_PATTERN`].
//!
//! Then, one tool call per turn, each step skipped when its tool is not in the request's tool
//! list:
//!
//! 1. `list_dir {"path": <directory>}` (one page);
//! 2. `grep_files {"pattern": <pattern>, "path": <directory>}` (one page);
//! 3. picks **the file**: the one with the most matches in the search result (ties: the first
//!    in walk order); with none, the largest `file` entry of the listing (ties: the first by
//!    name; directories, symlinks, others and cut names are skipped); with neither, when the
//!    listing failed, could not be read or was skipped and the prompt named a directory, the
//!    named path itself (it may be a file). Once a `read_file` or `tail_file` call is in the
//!    run, its path is the file (so a later shrink of the listing or search cannot switch it);
//! 4. `read_file {"path": <file>}`, then while the previous page has `nextOffset`,
//!    `read_file {"path", "offset": <nextOffset>, "startLine": <nextLine>}` (`startLine` only
//!    when `nextLine` was given): at most [`MAX_READ_PAGES`] pages, stopping at EOF or at a page
//!    that failed or cannot be read;
//! 5. `tail_file {"path": <file>, "lines": 20}` ([`TAIL_LINES`]);
//! 6. the **answer**: the directory's entries (up to [`MAX_LISTED_ENTRIES`]), the number of
//!    matches per file, up to [`MAX_CITED_MATCHES`] matches cited as `path:line: text`, why the
//!    file was chosen, the pages read (lines, bytes, the file's size and total lines when
//!    known) and its last lines. Quoted text is cut to [`MAX_QUOTED_CHARS`] characters.
//!
//! Each tool call comes with one sentence of text: ``Listing `logs`.``,
//! ``Searching `logs` for `…`.``, ``Reading `logs/build.log`.``,
//! ``Reading `logs/build.log` from byte 400.``, ``Reading the last 20 lines of `logs/build.log`.``.
//! The answer is plain text, one fact per line: first
//! ``Findings for `DIR` (scripted offline model: a fixed sequence of tool calls, not an LLM).``,
//! then lines starting `Listing:`, `Search:`, `Matches:` (followed by one `- path:line: text`
//! line per match), `File:`, `Read:` and ``Last N lines of `FILE`:`` (followed by the lines,
//! each indented by four spaces).
//!
//! Everything in the answer comes from the observations in the transcript (`{"ok":true,
//! "result":…}` parsed as the tools document them). A tool error is quoted; an observation that
//! is not valid JSON (cut to the observation cap, or shrunk after a context-window rejection)
//! or has an unexpected shape has its data skipped, and the answer says so. A call with no
//! observation is reported as such and not repeated.
//!
//! Tool call ids are `call_<n>`, `n` being one more than the number of tool calls already in
//! the whole transcript (skipping ids already used). Because every decision is made from the
//! transcript alone, a resumed session (or a retried request) continues exactly where it was.
//! Replies carry no usage (no tokens are counted).

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Value, json};
use sluice_protocol::{Message, Role, ToolCall};

use crate::{Backend, BackendError, ModelReply, ModelRequest};

/// The search pattern when the prompt quotes no term.
pub const ERROR_PATTERN: &str = "(?i)error|fail|fatal|panic|exception";
/// The most `read_file` pages read from the chosen file.
pub const MAX_READ_PAGES: usize = 3;
/// The `lines` argument of the `tail_file` call.
pub const TAIL_LINES: u64 = 20;
/// The most matches cited in the answer.
pub const MAX_CITED_MATCHES: usize = 10;
/// The most directory entries named in the answer.
pub const MAX_LISTED_ENTRIES: usize = 20;
/// The longest quoted line (grep text, tail line) in the answer, in characters.
pub const MAX_QUOTED_CHARS: usize = 200;

const LIST_DIR: &str = "list_dir";
const GREP_FILES: &str = "grep_files";
const READ_FILE: &str = "read_file";
const TAIL_FILE: &str = "tail_file";

/// The offline default model: a deterministic state machine over the transcript, **not an
/// LLM**. See the module docs for its exact behaviour.
#[derive(Clone, Copy, Debug, Default)]
pub struct ScriptedModel;

impl ScriptedModel {
    /// The model (it has no configuration and no state).
    pub fn new() -> Self {
        ScriptedModel
    }

    /// The next turn for `request`: one tool call, or the final answer. Pure and infallible.
    pub fn next_turn(&self, request: &ModelRequest) -> ModelReply {
        let tools: HashSet<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        let run = Run::from_transcript(&request.messages);
        let findings = Findings::new(&run, &tools);
        let step = findings.next_step();
        let (content, call) = match step.call() {
            Some((name, arguments)) => {
                let id = next_call_id(&request.messages);
                (
                    step.announce(),
                    Some(ToolCall {
                        id,
                        name: name.to_string(),
                        arguments: arguments.to_string(),
                    }),
                )
            }
            None => (findings.answer(), None),
        };
        ModelReply {
            content,
            tool_calls: call.into_iter().collect(),
            usage: None,
            http_requests: None,
        }
    }
}

#[async_trait::async_trait]
impl Backend for ScriptedModel {
    /// `scripted`.
    fn name(&self) -> String {
        "scripted".to_string()
    }

    /// [`ScriptedModel::next_turn`]; never fails.
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, BackendError> {
        Ok(self.next_turn(request))
    }
}

/// What the model does next.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    /// 1. List the directory.
    ListDir { path: String },
    /// 2. Search it.
    Grep { pattern: String, path: String },
    /// 3. Read a page of the file; `cursor` is `(nextOffset, nextLine)` of the previous page.
    Read {
        path: String,
        cursor: Option<(u64, Option<u64>)>,
    },
    /// 4. Read its last lines.
    Tail { path: String },
    /// 5. Answer.
    Answer,
}

impl Step {
    /// The tool and its arguments, or `None` for [`Step::Answer`].
    fn call(&self) -> Option<(&'static str, Value)> {
        Some(match self {
            Step::ListDir { path } => (LIST_DIR, json!({"path": path})),
            Step::Grep { pattern, path } => (GREP_FILES, json!({"pattern": pattern, "path": path})),
            Step::Read { path, cursor: None } => (READ_FILE, json!({"path": path})),
            Step::Read {
                path,
                cursor: Some((offset, None)),
            } => (READ_FILE, json!({"path": path, "offset": offset})),
            Step::Read {
                path,
                cursor: Some((offset, Some(line))),
            } => (
                READ_FILE,
                json!({"path": path, "offset": offset, "startLine": line}),
            ),
            Step::Tail { path } => (TAIL_FILE, json!({"path": path, "lines": TAIL_LINES})),
            Step::Answer => return None,
        })
    }

    /// The text sent with a tool call.
    fn announce(&self) -> String {
        match self {
            Step::ListDir { path } => format!("Listing `{path}`."),
            Step::Grep { pattern, path } => format!("Searching `{path}` for `{pattern}`."),
            Step::Read { path, cursor: None } => format!("Reading `{path}`."),
            Step::Read {
                path,
                cursor: Some((offset, _)),
            } => format!("Reading `{path}` from byte {offset}."),
            Step::Tail { path } => format!("Reading the last {TAIL_LINES} lines of `{path}`."),
            Step::Answer => String::new(),
        }
    }
}

/// The current run: the prompt and the tool calls made since, with their observations.
struct Run<'a> {
    prompt: &'a str,
    calls: Vec<Call<'a>>,
}

/// One tool call of the run.
struct Call<'a> {
    tool: &'a str,
    /// The arguments as sent (`Null` if they are not JSON).
    args: Value,
    obs: Obs,
}

impl Call<'_> {
    fn path_arg(&self) -> Option<&str> {
        self.args.get("path").and_then(Value::as_str)
    }
}

/// What a tool message says.
#[derive(Clone, Debug, PartialEq)]
enum Obs {
    /// `{"ok":true,"result":…}`: the result.
    Ok(Value),
    /// `{"ok":false,"error":…}`: the error text.
    Failed(String),
    /// Not an observation we can read; why.
    Unreadable(&'static str),
    /// No tool message answers the call.
    Missing,
}

impl Obs {
    fn parse(content: &str) -> Obs {
        let Ok(value) = serde_json::from_str::<Value>(content) else {
            return Obs::Unreadable(if content.contains("…[truncated; full result is") {
                "it was cut to fit the observation cap and is no longer valid JSON"
            } else if content.contains("…[cut from") {
                "it was shrunk after a context-window rejection and is no longer valid JSON"
            } else {
                "it is not valid JSON"
            });
        };
        match (
            value.get("ok").and_then(Value::as_bool),
            value.get("result"),
            value.get("error"),
        ) {
            (Some(true), Some(result), _) => Obs::Ok(result.clone()),
            (Some(false), _, Some(error)) => {
                let error = error
                    .as_str()
                    .map_or_else(|| error.to_string(), str::to_string);
                match value.get("name").and_then(Value::as_str) {
                    Some(name) if error == "unknown_tool" => {
                        Obs::Failed(format!("unknown tool `{name}`"))
                    }
                    _ => Obs::Failed(error),
                }
            }
            _ => Obs::Unreadable("it does not have the {\"ok\", \"result\" | \"error\"} shape"),
        }
    }

    fn ok(&self) -> Option<&Value> {
        match self {
            Obs::Ok(v) => Some(v),
            _ => None,
        }
    }
}

impl<'a> Run<'a> {
    fn from_transcript(messages: &'a [Message]) -> Run<'a> {
        let start = messages.iter().rposition(|m| m.role == Role::User);
        let prompt = start.map_or("", |i| messages[i].content.as_str());
        let rest = start.map_or(messages, |i| &messages[i + 1..]);
        let mut calls = Vec::new();
        for (i, message) in rest.iter().enumerate() {
            for call in &message.tool_calls {
                let answer = rest[i + 1..].iter().find(|m| {
                    m.role == Role::Tool && m.tool_call_id.as_deref() == Some(call.id.as_str())
                });
                calls.push(Call {
                    tool: call.name.as_str(),
                    args: serde_json::from_str(&call.arguments).unwrap_or(Value::Null),
                    obs: answer.map_or(Obs::Missing, |m| Obs::parse(&m.content)),
                });
            }
        }
        Run { prompt, calls }
    }

    fn first(&self, tool: &str) -> Option<&Call<'a>> {
        self.calls.iter().find(|c| c.tool == tool)
    }
}

/// Why the file was chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Why {
    Matches(usize),
    Largest(u64),
    Named,
    Earlier,
}

/// What the run knows so far: the decision state and the material of the answer.
struct Findings<'r, 'a> {
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
    fn new(run: &'r Run<'a>, tools: &'r HashSet<&'r str>) -> Self {
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
    fn next_step(&self) -> Step {
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
    fn answer(&self) -> String {
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
    match text.char_indices().nth(MAX_QUOTED_CHARS) {
        None => text,
        Some((at, _)) => format!("{}…", &text[..at]),
    }
}

/// `call_<n>`: one more than the tool calls in the transcript, skipping ids in use.
fn next_call_id(messages: &[Message]) -> String {
    let used: HashSet<&str> = messages
        .iter()
        .flat_map(|m| &m.tool_calls)
        .map(|c| c.id.as_str())
        .collect();
    let mut n = used.len() + 1;
    while used.contains(format!("call_{n}").as_str()) {
        n += 1;
    }
    format!("call_{n}")
}

/// Quoted spans: `"…"`, `“…”`, `` `…` ``, and `'…'` when the quotes are not inside a word.
static QUOTED: LazyLock<Regex> = LazyLock::new(|| {
    // Infallible: a constant pattern, exercised by the prompt tests.
    Regex::new(r#""([^"\n]+)"|“([^”\n]+)”|`([^`\n]+)`|(?:^|[^\w'])'([^'\n]+)'(?:[^\w]|$)"#)
        .expect("a valid regex")
});

/// The directory and the quoted search term of a prompt (see the module docs).
fn analyse_prompt(prompt: &str) -> (String, Option<String>) {
    let mut dir = None;
    let mut term = None;
    for captures in QUOTED.captures_iter(prompt) {
        let Some(quoted) = captures.iter().skip(1).flatten().next() else {
            continue;
        };
        let quoted = quoted.as_str().trim();
        if quoted.is_empty() {
            continue;
        }
        match as_path(quoted) {
            Some(path) if dir.is_none() => dir = Some(path),
            Some(_) => {}
            None if term.is_none() && quoted.chars().count() <= MAX_QUOTED_CHARS => {
                term = Some(quoted.to_string())
            }
            None => {}
        }
    }
    if dir.is_none() {
        dir = prompt.split_whitespace().find_map(|word| {
            let word = word.trim_start_matches(['"', '\'', '`', '(', '[', '{', '<', '“', '‘']);
            let word = word.trim_end_matches([
                '"', '\'', '`', ')', ']', '}', '>', ',', ';', ':', '!', '?', '”', '’',
            ]);
            // A sentence's full stop, but not the `.` of `./`.
            let word = if word.ends_with('.') && !word.ends_with("/.") {
                word.trim_end_matches('.')
            } else {
                word
            };
            as_path(word)
        });
    }
    (dir.unwrap_or_else(|| ".".to_string()), term)
}

/// `text` as a root-relative directory path, if it looks like one.
fn as_path(text: &str) -> Option<String> {
    let allowed = |c: char| c.is_alphanumeric() || "._-/@+".contains(c);
    if text.is_empty()
        || !(text.contains('/'))
        || text.starts_with('/')
        || text.contains("://")
        || !text.chars().all(allowed)
        || text.split('/').any(|part| part == "..")
    {
        return None;
    }
    let mut path = text;
    while let Some(rest) = path.strip_prefix("./") {
        path = rest;
    }
    let path = path.trim_end_matches('/');
    let path = path.strip_suffix("/.").unwrap_or(path);
    Some(if path.is_empty() || path == "." {
        ".".to_string()
    } else {
        path.to_string()
    })
}

#[cfg(test)]
mod tests;
