//! The steps of a run, one tool call each, and the limits they keep.

use serde_json::{Value, json};

/// The search pattern when the prompt quotes no term: any of [`ERROR_WORDS`], in any case.
pub const ERROR_PATTERN: &str = "(?i)error|fail|fatal|panic|exception";

/// The words of [`ERROR_PATTERN`].
pub const ERROR_WORDS: [&str; 5] = ["error", "fail", "fatal", "panic", "exception"];
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

pub(super) const LIST_DIR: &str = "list_dir";
pub(super) const GREP_FILES: &str = "grep_files";
pub(super) const READ_FILE: &str = "read_file";
pub(super) const TAIL_FILE: &str = "tail_file";

/// What the model does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Step {
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
    pub(super) fn call(&self) -> Option<(&'static str, Value)> {
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
    pub(super) fn announce(&self) -> String {
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
