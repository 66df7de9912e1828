//! Aggregation prompts (see the [module docs](super)): "count errors by service", "how many
//! ERROR lines per worker in ./logs?". The scripted model answers one with a single
//! `run_script` call (code mode, docs/code-mode.md) whose program reads every page of the
//! named file (or of every file under the named directory) inside the sandbox and returns the
//! counts, then an answer from that one observation.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Value, json};

use super::run::{Obs, Run};

/// The tool that runs scripts.
pub(super) const RUN_SCRIPT: &str = "run_script";

/// The most groups named in the answer.
pub const MAX_GROUPS: usize = 50;

/// "count …", "how many …", "tally …", "number of …" followed by "by WORD" or "per WORD".
#[allow(clippy::expect_used)] // A constant pattern, exercised by the tests.
static AGGREGATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:count|how many|tally|number of)\b.*?\b(?:by|per)\s+(?:(?:the|each|every)\s+)?([a-z][a-z0-9_-]*)",
    )
    .expect("a valid regex")
});

/// What an aggregation prompt asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Aggregation {
    /// The file or directory to read (root-relative).
    pub(super) path: String,
    /// The lines to count: a regular expression (`(?i)` is the case-insensitive flag).
    pub(super) pattern: String,
    /// Lowercase words one of which every matching line holds: only the lines holding one
    /// are looked at, found by searching each page for them (with none, every line is).
    pub(super) needles: Vec<String>,
    /// What to group by: a level (`level`), or the prefix of a token (`worker` groups by
    /// `worker-3`, `worker-7`, …).
    pub(super) group: String,
}

impl Aggregation {
    /// The aggregation `prompt` asks for, if it is one; `path` and `pattern` as the prompt
    /// analysis found them.
    pub(super) fn of(
        prompt: &str,
        path: &str,
        (pattern, needles): (&str, Vec<String>),
    ) -> Option<Aggregation> {
        let group = AGGREGATION.captures(prompt)?.get(1)?.as_str();
        let group = group.trim_end_matches('s').to_ascii_lowercase();
        Some(Aggregation {
            path: path.to_string(),
            pattern: pattern.to_string(),
            needles,
            group: if group.is_empty() {
                "level".into()
            } else {
                group
            },
        })
    }

    /// The `run_script` call's arguments: the program, with the path, pattern and group as
    /// JSON literals.
    pub(super) fn arguments(&self) -> Value {
        let (source, flags) = match self.pattern.strip_prefix("(?i)") {
            Some(rest) => (rest, "i"),
            None => (self.pattern.as_str(), "i"),
        };
        let script = format!(
            "const root = {root}, pattern = new RegExp({source}, {flags}), group = {group}, needles = {needles};\n{BODY}",
            root = json!(self.path),
            source = json!(source),
            flags = json!(flags),
            group = json!(self.group),
            needles = json!(self.needles),
        );
        json!({ "script": script })
    }

    /// The text sent with the call.
    pub(super) fn announce(&self) -> String {
        format!(
            "Counting the lines of `{}` that match `{}`, by {}, with one script.",
            self.path, self.pattern, self.group
        )
    }

    /// The answer, from the script's observation.
    pub(super) fn answer(&self, run: &Run<'_>) -> String {
        let mut out = format!(
            "Counts for `{}` (scripted offline model: one run_script call, not an LLM).\n",
            self.path
        );
        let Some(call) = run.first(RUN_SCRIPT) else {
            out.push_str("No script ran.\n");
            return out;
        };
        let result = match &call.obs {
            Obs::Ok(result) => result,
            Obs::Failed(error) => {
                out.push_str(&format!("The script failed: {error}\n"));
                return out;
            }
            Obs::Unreadable(why) => {
                out.push_str(&format!("The script's observation is unreadable: {why}.\n"));
                return out;
            }
            Obs::Missing => {
                out.push_str("The script's observation is missing.\n");
                return out;
            }
        };
        let answer = &result["result"];
        if let Some(error) = answer.get("error").and_then(Value::as_str) {
            out.push_str(&format!("The script could not read everything: {error}\n"));
        }
        let number = |key: &str| answer.get(key).and_then(Value::as_u64).unwrap_or(0);
        let calls = result["calls"].as_u64().unwrap_or(0);
        out.push_str(&format!(
            "Matched: {} of {} lines in {} match `{}`; {} read {} bytes.\n",
            number("matched"),
            number("lines"),
            counted(number("files"), "file"),
            self.pattern,
            counted(calls, "tool call"),
            result["innerBytes"].as_u64().unwrap_or(0),
        ));
        let mut groups: Vec<(&str, u64)> = answer
            .get("counts")
            .and_then(Value::as_object)
            .map(|o| {
                o.iter()
                    .filter_map(|(k, v)| Some((k.as_str(), v.as_u64()?)))
                    .collect()
            })
            .unwrap_or_default();
        groups.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        out.push_str(&format!("By {}:\n", self.group));
        for (name, count) in groups.iter().take(MAX_GROUPS) {
            out.push_str(&format!("- {name}: {count}\n"));
        }
        if groups.len() > MAX_GROUPS {
            out.push_str(&format!(
                "- … and {} more groups\n",
                groups.len() - MAX_GROUPS
            ));
        }
        out
    }
}

/// `n` and `thing`, with an `s` unless `n` is 1.
fn counted(n: u64, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

/// The program after its constants (`root`, `pattern`, `group`): read `root` (a file, or
/// every file under a directory) page by page, count the matching lines by group.
const BODY: &str = r#"const LEVELS = ["TRACE", "DEBUG", "INFO", "WARN", "WARNING", "ERROR", "FATAL"];
const counts = {};
let lines = 0, matched = 0, files = 0;
function key(line) {
  const tokens = line.split(/[\s,;:()\[\]{}="']+/);
  if (group === "level") return tokens.find(t => LEVELS.includes(t.toUpperCase())) || "(none)";
  return tokens.find(t => t.toLowerCase().startsWith(group)) || "(none)";
}
function tally(line) {
  if (line === "" || !pattern.test(line)) return;
  matched++;
  const k = key(line);
  counts[k] = (counts[k] || 0) + 1;
}
function count(path) {
  let offset = 0;
  for (;;) {
    const page = tools.call("read_file", offset ? {path, offset} : {path});
    if (!page.ok) return page;
    const text = page.result.content;
    const parts = text.split("\n");
    lines += parts.length - (text.endsWith("\n") ? 1 : 0);
    const lower = text.toLowerCase();
    if (needles.length > 0 && lower.length === text.length) {
      // Only the lines that hold a needle, found by searching the page for each.
      const next = needles.map(w => lower.indexOf(w));
      for (;;) {
        let at = -1;
        for (const n of next) if (n >= 0 && (at < 0 || n < at)) at = n;
        if (at < 0) break;
        const start = text.lastIndexOf("\n", at) + 1;
        let end = text.indexOf("\n", at);
        if (end < 0) end = text.length;
        tally(text.slice(start, end));
        for (let i = 0; i < next.length; i++) {
          if (next[i] >= 0 && next[i] < end) next[i] = lower.indexOf(needles[i], end);
        }
      }
    } else {
      for (const line of parts) tally(line);
    }
    if (page.result.nextOffset == null) { files++; return null; }
    offset = page.result.nextOffset;
  }
}
function walk(dir) {
  let offset = 0;
  for (;;) {
    const page = tools.call("list_dir", {path: dir, offset});
    if (!page.ok) return page;
    for (const e of page.result.entries) {
      const path = dir === "." ? e.name : dir + "/" + e.name;
      const failed = e.kind === "file" ? count(path) : e.kind === "directory" ? walk(path) : null;
      if (failed && failed.kind !== "binary-file" && failed.kind !== "key-material") return failed;
    }
    if (page.result.nextOffset == null) return null;
    offset = page.result.nextOffset;
  }
}
const first = count(root);
const failed = first && first.kind === "wrong-kind" ? walk(root) : first;
return {counts, lines, matched, files, error: failed ? failed.error : undefined};
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregation_prompts_and_their_group() {
        let a = |p: &str| Aggregation::of(p, ".", ("(?i)error", vec![])).map(|a| a.group);
        assert_eq!(a("count errors by service").as_deref(), Some("service"));
        assert_eq!(
            a("How many ERROR lines per worker in ./app.log?").as_deref(),
            Some("worker")
        );
        assert_eq!(a("tally failures by the level").as_deref(), Some("level"));
        assert_eq!(a("number of warnings per hosts").as_deref(), Some("host"));
        assert_eq!(a("Which files here mention errors?"), None);
        assert_eq!(a("count the errors"), None);
    }

    #[test]
    fn the_error_words_are_the_error_pattern() {
        use super::super::step::{ERROR_PATTERN, ERROR_WORDS};
        assert_eq!(ERROR_PATTERN, format!("(?i){}", ERROR_WORDS.join("|")));
    }

    #[test]
    fn the_program_carries_its_constants_as_json() {
        let agg = Aggregation {
            path: "logs/a \"b\".log".into(),
            pattern: "(?i)error|fail".into(),
            needles: vec!["error".into(), "fail".into()],
            group: "worker".into(),
        };
        let script = agg.arguments()["script"].as_str().unwrap().to_string();
        assert!(
            script.starts_with(
                "const root = \"logs/a \\\"b\\\".log\", pattern = new RegExp(\"error|fail\", \"i\"), group = \"worker\", needles = [\"error\",\"fail\"];\n"
            ),
            "{script}"
        );
        assert!(script.ends_with(BODY));
    }
}
