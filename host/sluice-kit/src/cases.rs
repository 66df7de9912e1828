//! `sluice test`: a tool's calls with the observations they must give, read from a
//! `tests.toml` ([`TestPlan`]) and run through the host exactly as a model's calls run (the
//! policy, the cap, the key scan), at each cap the plan lists (docs/authoring.md#tests).
//!
//! ```toml
//! config = "sluice.toml"         # the policy the calls run under (default: sluice.toml here)
//! caps = [65536, 1024]           # every case runs at each cap (default: [65536])
//!
//! [roots]                        # fixture directories, relative to this file: they replace
//! data = "sample"                # the configuration's roots
//!
//! [[case]]
//! name = "the first page"
//! tool = "notes"
//! args = { path = "/data/notes.txt" }
//! contains = { ok = true }       # every key given must be in the observation, equal
//! must_page = true               # fail when the cap cut the result: the tool must page
//! snapshot = "first-page"        # the exact observation, in snapshots/first-page@CAP.txt
//!
//! [[case]]
//! name = "a missing file"
//! tool = "notes"
//! args = { path = "/data/nope.txt" }
//! caps = [65536]                 # this case's caps, in place of the plan's
//! expect = '{"ok":false,"error":"no such file or directory: /data/nope.txt","kind":"not-found"}'
//! ```
//!
//! `[[http]]` tables record HTTP responses that answer the calls' requests in place of the
//! network ([`http`], docs/authoring.md#recorded-http-responses).
//!
//! A case checks any of: `expect` (a string: the observation's exact text; a table: its
//! JSON, exactly), `contains` (a subset: each key given, recursively; arrays element by
//! element, of the same length), `snapshot` (the observation's exact text in a file, written
//! by `--bless`), `must_page`. A case with none of them only has to run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

pub mod http;

pub use http::{HttpTable, PlanRecordings};

/// The cap a plan without `caps` runs at: the host's default, 65,536 bytes.
pub const DEFAULT_CAPS: [u32; 1] = [65_536];

/// The directory of snapshot files, beside the plan.
pub const SNAPSHOT_DIR: &str = "snapshots";

/// Why a plan could not be read or run (a case that fails is not an error: see
/// [`CaseOutcome`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TestsError {
    /// The plan file cannot be read.
    #[error("cannot read the tests {path}: {reason}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The plan is not valid.
    #[error(
        "{path} is not a valid tests file: {reason}; it takes `config`, `caps` (each 1024 to 1048576), [roots], [[http]] tables with `url`, `method`, `status`, `headers`, and `body` or `body_file`, and [[case]] tables with `name`, `tool`, `args`, `caps`, `http`, and any of `expect`, `contains`, `snapshot`, `must_page` (docs/authoring.md#tests)"
    )]
    Plan {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The configuration or the tools could not be loaded.
    #[error("cannot load the tools for {path}: {reason}")]
    Load {
        /// The plan file.
        path: PathBuf,
        /// Why, in the host's words.
        reason: String,
    },
}

/// `tests.toml`: the calls of a tool and what each must give.
#[derive(Clone, Debug, PartialEq)]
pub struct TestPlan {
    /// The plan file.
    pub path: PathBuf,
    /// The configuration the calls run under, when there is one.
    pub config: Option<PathBuf>,
    /// The caps every case runs at, in bytes.
    pub caps: Vec<u32>,
    /// Root overrides, `NAME=DIR` with DIR absolute (empty: the configuration's roots).
    pub roots: Vec<String>,
    /// The cases, in file order.
    pub cases: Vec<Case>,
    /// The recorded HTTP responses that answer the calls' requests (`[[http]]` and the
    /// cases' `http`); `None`: the plan has none, and requests go to the network.
    pub recordings: Option<PlanRecordings>,
}

/// One call and what it must give.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// How the output names it.
    pub name: String,
    /// The tool, as the model names it.
    pub tool: String,
    /// The arguments: a table, sent as JSON, or a string, sent verbatim (so a case can send
    /// JSON that is not valid); default `{}`.
    #[serde(default = "empty_object")]
    pub args: Value,
    /// The caps this case runs at, in place of the plan's.
    pub caps: Option<Vec<i64>>,
    /// The observation: its exact text (a string), or its JSON exactly (any other value).
    pub expect: Option<Value>,
    /// A subset of the observation's JSON.
    pub contains: Option<Value>,
    /// The snapshot's name: `snapshots/NAME@CAP.txt` beside the plan.
    pub snapshot: Option<String>,
    /// The cap must not cut the result.
    #[serde(default)]
    pub must_page: bool,
    /// The recorded HTTP responses of this case's calls, in place of the plan's `[[http]]`
    /// (`http = []`: none, so every request is refused).
    pub http: Option<Vec<HttpTable>>,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    config: Option<String>,
    caps: Option<Vec<i64>>,
    #[serde(default)]
    roots: BTreeMap<String, String>,
    #[serde(default)]
    http: Vec<HttpTable>,
    #[serde(default)]
    case: Vec<Case>,
}

impl TestPlan {
    /// Reads the plan at `path` (a `tests.toml`, or a directory holding one).
    ///
    /// # Errors
    /// [`TestsError::Read`] when it cannot be read; [`TestsError::Plan`] for an unknown key,
    /// a cap out of range, a case without a name or tool, two cases of one name, a snapshot
    /// name that is not a plain file name, no case at all, or an `[[http]]` table (or an
    /// entry of a case's `http`) that is not valid ([`HttpTable::recording`]).
    pub fn load(path: &Path) -> Result<TestPlan, TestsError> {
        let path = if path.is_dir() {
            path.join("tests.toml")
        } else {
            path.to_path_buf()
        };
        let text =
            sluice_operator_files::read_regular(&path, 16 << 20).map_err(|e| TestsError::Read {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        let plan = |reason: String| TestsError::Plan {
            path: path.clone(),
            reason,
        };
        let text = String::from_utf8(text).map_err(|e| plan(format!("it is not UTF-8: {e}")))?;
        let file: PlanFile = toml::from_str(&text).map_err(|e| plan(e.to_string()))?;
        let base = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let base = std::path::absolute(base).map_err(|e| plan(e.to_string()))?;
        let caps = match &file.caps {
            None => DEFAULT_CAPS.to_vec(),
            Some(caps) => valid_caps(caps).map_err(|e| plan(e.to_string()))?,
        };
        let config = match file.config {
            Some(c) => Some(base.join(c)),
            None => Some(base.join("sluice.toml")).filter(|c| c.is_file()),
        };
        if file.case.is_empty() {
            return Err(plan("it has no [[case]]".into()));
        }
        let mut names = std::collections::BTreeSet::new();
        for case in &file.case {
            if case.name.is_empty() || case.tool.is_empty() {
                return Err(plan("a case needs a `name` and a `tool`".into()));
            }
            if !names.insert(case.name.as_str()) {
                return Err(plan(format!("two cases are named `{}`", case.name)));
            }
            if let Some(caps) = &case.caps {
                valid_caps(caps).map_err(|e| plan(format!("case `{}`: {e}", case.name)))?;
            }
            if let Some(s) = &case.snapshot
                && (s.is_empty() || s.contains(['/', '\\']) || s.starts_with('.'))
            {
                return Err(plan(format!(
                    "case `{}`: snapshot `{s}` is not a plain file name (it goes in {SNAPSHOT_DIR}/)",
                    case.name
                )));
            }
        }
        let file_name = path.file_name().map_or_else(
            || path.display().to_string(),
            |f| f.to_string_lossy().into(),
        );
        let recordings = PlanRecordings::read(&file_name, &base, &file.http, &file.case)
            .map_err(|e| plan(e.to_string()))?;
        Ok(TestPlan {
            recordings,
            config,
            caps,
            roots: file
                .roots
                .iter()
                .map(|(name, dir)| format!("{name}={}", base.join(dir).display()))
                .collect(),
            cases: file.case,
            path,
        })
    }

    /// The caps `case` runs at: its own, else the plan's.
    pub fn caps_of(&self, case: &Case) -> Vec<u32> {
        case.caps
            .as_deref()
            .and_then(|c| valid_caps(c).ok())
            .unwrap_or_else(|| self.caps.clone())
    }

    /// Where the snapshot `name` at `cap` is kept.
    pub fn snapshot_path(&self, name: &str, cap: u32) -> PathBuf {
        self.path
            .parent()
            .unwrap_or(Path::new("."))
            .join(SNAPSHOT_DIR)
            .join(format!("{name}@{cap}.txt"))
    }
}

/// Why a plan's (or a case's) `caps` are not valid ([`TestsError::Plan`] says so).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
enum CapsError {
    /// `caps` lists none.
    #[error("`caps` is empty")]
    Empty,
    /// A cap is not from 1,024 to 1,048,576.
    #[error("cap {0} is not from 1024 to 1048576")]
    OutOfRange(i64),
}

/// `caps` checked: not empty, each from 1,024 to 1,048,576.
fn valid_caps(caps: &[i64]) -> Result<Vec<u32>, CapsError> {
    if caps.is_empty() {
        return Err(CapsError::Empty);
    }
    caps.iter()
        .map(|&c| {
            u32::try_from(c)
                .ok()
                .filter(|c| (1024..=1_048_576).contains(c))
                .ok_or(CapsError::OutOfRange(c))
        })
        .collect()
}

/// What one case gave at one cap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseOutcome {
    /// The case's name.
    pub name: String,
    /// The cap, in bytes.
    pub cap: u32,
    /// The observation's size, in bytes.
    pub bytes: usize,
    /// The result says more follows (a `next…` cursor, `truncated: true`).
    pub paged: bool,
    /// The cap cut it.
    pub cut: bool,
    /// Why it failed, one reason per check that failed; empty when it passed.
    pub failures: Vec<String>,
    /// A snapshot was written (`--bless`).
    pub blessed: bool,
}

impl std::fmt::Display for CaseOutcome {
    /// `ok   NAME @CAP: N bytes, paged` or `FAIL NAME @CAP: N bytes: REASON; REASON`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shape = if self.cut {
            "cut"
        } else if self.paged {
            "paged"
        } else {
            "whole"
        };
        let head = if self.failures.is_empty() {
            "ok  "
        } else {
            "FAIL"
        };
        write!(
            f,
            "{head} {} @{}: {} bytes, {shape}",
            self.name, self.cap, self.bytes
        )?;
        if self.blessed {
            write!(f, " (snapshot written)")?;
        }
        for failure in &self.failures {
            write!(f, "\n     {failure}")?;
        }
        Ok(())
    }
}

/// How many cases passed and failed, over every cap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Case runs (a case at a cap) that passed.
    pub passed: usize,
    /// Case runs that failed.
    pub failed: usize,
}

impl std::fmt::Display for Summary {
    /// `N passed, N failed`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} passed, {} failed", self.passed, self.failed)
    }
}

/// Loads the tools `plan` calls: its configuration, with its roots in place of the
/// configuration's, strictly (a component that does not load is an error), as `sluice
/// call` loads them; with the plan's recordings, every tool's HTTP requests are answered
/// from them ([`PlanRecordings::handle`]).
///
/// # Errors
/// [`TestsError::Load`] when the configuration is not valid or a component does not load.
pub async fn load_tools(plan: &TestPlan) -> Result<sluice_runtime::Toolbox, TestsError> {
    let load = |reason: String| TestsError::Load {
        path: plan.path.clone(),
        reason,
    };
    let overrides = sluice_config::Overrides {
        roots: plan.roots.clone(),
        strict: true,
        ..sluice_config::Overrides::default()
    };
    let config = sluice_config::Config::resolve(
        plan.config.as_deref(),
        &|k| std::env::var(k).ok(),
        &overrides,
    )
    .map_err(|e| load(e.to_string()))?;
    let compilers = sluice_wiring::authoring_compilers(&config);
    let mut loader = sluice_wiring::ToolLoader::compiling_with(&config, compilers)
        .map_err(|e| load(e.to_string()))?;
    if let Some(recordings) = &plan.recordings {
        loader = loader.with_http_recordings(recordings.handle().clone());
    }
    loader
        .load(&config, None)
        .await
        .map_err(|e| load(e.to_string()))
}

/// Runs every case of `plan` at each of its caps, in order, through `toolbox` (see
/// [`load_tools`]), each call as `sluice call` makes it, and hands each outcome to `report`
/// as it comes. With `bless`, snapshots are written instead of compared. A case's calls are
/// answered from its recordings ([`PlanRecordings::select`]).
pub async fn run(
    plan: &TestPlan,
    toolbox: &sluice_runtime::Toolbox,
    bless: bool,
    mut report: impl FnMut(&CaseOutcome),
) -> Summary {
    let mut summary = Summary::default();
    for case in &plan.cases {
        if let Some(recordings) = &plan.recordings {
            recordings.select(&case.name);
        }
        for cap in plan.caps_of(case) {
            let args = match &case.args {
                Value::String(verbatim) => verbatim.clone(),
                table => table.to_string(),
            };
            let observation = toolbox.call(&case.tool, &args, cap).await;
            let (failures, blessed) = check(
                plan,
                case,
                cap,
                observation.text(),
                observation.truncated(),
                bless,
            );
            let outcome = CaseOutcome {
                name: case.name.clone(),
                cap,
                bytes: observation.text().len(),
                paged: observation.paged(),
                cut: observation.truncated(),
                failures,
                blessed,
            };
            if outcome.failures.is_empty() {
                summary.passed += 1;
            } else {
                summary.failed += 1;
            }
            report(&outcome);
        }
    }
    summary
}

/// Checks one observation (`text`, `cut` by the cap) of `case` at `cap`; writes its
/// snapshot when `bless`. Returns the failures and whether a snapshot was written.
pub fn check(
    plan: &TestPlan,
    case: &Case,
    cap: u32,
    text: &str,
    cut: bool,
    bless: bool,
) -> (Vec<String>, bool) {
    let mut failures = Vec::new();
    let observed: Option<Value> = serde_json::from_str(text).ok();
    if case.must_page && cut {
        failures.push(format!(
            "the cap ({cap} bytes) cut the result: it must page (size each page to budget.page-bytes and return a cursor)"
        ));
    }
    match &case.expect {
        Some(Value::String(exact)) if exact != text => {
            failures.push(format!("expected {exact}\n     got      {text}"));
        }
        Some(Value::String(_)) | None => {}
        Some(expected) => {
            if observed.as_ref() != Some(expected) {
                failures.push(format!("expected {expected}\n     got      {text}"));
            }
        }
    }
    if let Some(subset) = &case.contains {
        let mut at = String::new();
        match &observed {
            Some(v) if contains(v, subset, &mut at) => {}
            Some(_) => failures.push(format!(
                "does not contain {subset} (first difference at `{}`)\n     got {text}",
                if at.is_empty() { "." } else { &at }
            )),
            None => failures.push(format!("is not JSON (cut?): {text}")),
        }
    }
    let mut blessed = false;
    if let Some(name) = &case.snapshot {
        let path = plan.snapshot_path(name, cap);
        let want = format!("{text}\n");
        if bless {
            let written = path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::write(&path, &want));
            match written {
                Ok(()) => blessed = true,
                Err(e) => failures.push(format!("cannot write {}: {e}", path.display())),
            }
        } else {
            match std::fs::read_to_string(&path) {
                Ok(stored) if stored == want => {}
                Ok(stored) => failures.push(format!(
                    "differs from {} (run with --bless to accept it)\n     stored {}\n     got    {text}",
                    path.display(),
                    stored.trim_end()
                )),
                Err(e) => failures.push(format!(
                    "no snapshot {} ({e}); run with --bless to write it",
                    path.display()
                )),
            }
        }
    }
    (failures, blessed)
}

/// Whether `value` holds `subset`: equal scalars, every key of an object (recursively), an
/// array of the same length whose elements hold the subset's. `at` is left naming the first
/// place that differs.
fn contains(value: &Value, subset: &Value, at: &mut String) -> bool {
    match (value, subset) {
        (Value::Object(v), Value::Object(s)) => s.iter().all(|(k, sub)| {
            let len = at.len();
            at.push('.');
            at.push_str(k);
            let ok = v.get(k).is_some_and(|x| contains(x, sub, at));
            if ok {
                at.truncate(len);
            }
            ok
        }),
        (Value::Array(v), Value::Array(s)) => {
            if v.len() != s.len() {
                return false;
            }
            v.iter().zip(s).enumerate().all(|(i, (x, sub))| {
                let len = at.len();
                at.push_str(&format!("[{i}]"));
                let ok = contains(x, sub, at);
                if ok {
                    at.truncate(len);
                }
                ok
            })
        }
        (v, s) => v == s,
    }
}

#[cfg(test)]
mod tests;
