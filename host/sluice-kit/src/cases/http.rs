//! `[[http]]`: recorded HTTP responses that answer the plan's calls in place of the network
//! (docs/authoring.md#recorded-http-responses).
//!
//! ```toml
//! [[http]]                                   # the plan's: every case's requests
//! url = "https://api.example.com/weather?city=paris"
//! method = "GET"                             # default GET
//! status = 200                               # default 200
//! headers = { content-type = "application/json" }
//! body = '{"sky":"clear"}'                   # or body_file = "fixtures/paris.json"
//!
//! [[case]]
//! name = "offline"
//! tool = "weather"
//! http = []                                  # this case's, in place of the plan's
//! ```
//!
//! A plan with recordings (a `[[http]]` table, or a case with `http`) sends nothing to the
//! network: each request its policy allows is answered by the recording of its method and
//! URL, and one that none matches is refused (`http-denied`), naming them
//! ([`sluice_runtime::host::http_recorded`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use sluice_operator_files::RegularFileError;
use sluice_runtime::host::http_recorded::{HttpRecording, HttpRecordings, RecordingError};

use crate::cases::Case;

/// The most bytes a `body_file` may have: 64 MiB.
pub const MAX_BODY_FILE_BYTES: u64 = 64 << 20;

/// One `[[http]]` table, or one entry of a case's `http`, as written.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpTable {
    /// The request's method (default `GET`; uppercased).
    #[serde(default = "get")]
    pub method: String,
    /// The request's URL, exactly: `http://` or `https://`, host, port when not the
    /// scheme's default, path and query (scheme and host match in any case).
    pub url: String,
    /// The response's status, 200 to 599 (default 200).
    #[serde(default = "ok")]
    pub status: i64,
    /// The response's headers, by name (default: none).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The response's body, as text. Not with `body_file`; neither: an empty body.
    pub body: Option<String>,
    /// A file whose bytes are the response's body, relative to the plan (at most
    /// [`MAX_BODY_FILE_BYTES`]).
    pub body_file: Option<String>,
}

fn get() -> String {
    "GET".into()
}

fn ok() -> i64 {
    200
}

/// Why an `[[http]]` table (or an entry of a case's `http`) makes no recording
/// ([`HttpTable::recording`]), naming the key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpTableError {
    /// Both `body` and `body_file`.
    #[error("it has both `body` and `body_file`: give one")]
    BothBodies,
    /// The `body_file` cannot be read.
    #[error("`body_file` {file:?} cannot be read: {reason}")]
    BodyFile {
        /// The file, as written.
        file: String,
        /// Why. Not the `source`: its text is in the message.
        reason: RegularFileError,
    },
    /// What [`HttpRecording::new`] refuses (`method`, `url`, `status`, `headers`).
    #[error(transparent)]
    Recording(RecordingError),
}

/// Why a plan's recordings cannot be read ([`PlanRecordings::read`]): the first table that
/// is wrong, named (`[[http]] #2`, `` case `NAME`: http #1 ``).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum RecordingsError {
    /// A table makes no recording.
    #[error("{key} #{number}: {reason}")]
    Table {
        /// What the tables are called: `[[http]]`, or `http` for a case's.
        key: &'static str,
        /// The table's number, from 1.
        number: usize,
        /// Why. Not the `source`: its text is in the message.
        reason: HttpTableError,
    },
    /// Two tables record the same method and URL.
    #[error("{key} #{first} and #{second} both record {method} {url}")]
    Twice {
        /// What the tables are called: `[[http]]`, or `http` for a case's.
        key: &'static str,
        /// The first table's number, from 1.
        first: usize,
        /// The second's.
        second: usize,
        /// The method they record.
        method: String,
        /// The URL, in normal form.
        url: String,
    },
    /// A case's `http` is not valid.
    #[error("case `{case}`: {reason}")]
    Case {
        /// The case's name.
        case: String,
        /// Why (a [`RecordingsError::Table`] or [`RecordingsError::Twice`]). Not the
        /// `source`: its text is in the message.
        reason: Box<RecordingsError>,
    },
}

impl HttpTable {
    /// The recording this table makes, its `body_file` read relative to `base`.
    ///
    /// # Errors
    /// [`HttpTableError`], naming the key: both `body` and `body_file`, a `body_file` that
    /// cannot be read, or what [`HttpRecording::new`] refuses (`method`, `url`, `status`,
    /// `headers`).
    pub fn recording(&self, base: &Path) -> Result<HttpRecording, HttpTableError> {
        let body = match (&self.body, &self.body_file) {
            (Some(_), Some(_)) => return Err(HttpTableError::BothBodies),
            (Some(text), None) => text.clone().into_bytes(),
            (None, Some(file)) => {
                sluice_operator_files::read_regular(&base.join(file), MAX_BODY_FILE_BYTES).map_err(
                    |reason| HttpTableError::BodyFile {
                        file: file.clone(),
                        reason,
                    },
                )?
            }
            (None, None) => Vec::new(),
        };
        let headers: Vec<(String, String)> = self
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        HttpRecording::new(&self.method, &self.url, self.status, &headers, body)
            .map_err(HttpTableError::Recording)
    }
}

/// The recordings of a plan: its `[[http]]`, each case's own `http`, and the handle the
/// host answers its calls' requests from ([`PlanRecordings::handle`]), which
/// [`PlanRecordings::select`] points at one case's before its calls.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanRecordings {
    /// The plan's `[[http]]`, in file order.
    pub plan: Vec<HttpRecording>,
    /// The recordings of each case that has `http`, by case name: they replace the plan's.
    pub cases: BTreeMap<String, Vec<HttpRecording>>,
    /// The plan's file name, for messages.
    file: String,
    handle: HttpRecordings,
}

impl PlanRecordings {
    /// The recordings of a plan (file name `file`, in directory `base`) of `tables` and
    /// `cases`; `None` when neither has any (`[[http]]` or a case's `http`).
    ///
    /// # Errors
    /// [`RecordingsError`], what is wrong with the first table that is wrong, naming it:
    /// `[[http]] #2: …` or `case `NAME`: http #1: …` (see [`HttpTable::recording`]), or two
    /// tables recording the same method and URL.
    pub(crate) fn read(
        file: &str,
        base: &Path,
        tables: &[HttpTable],
        cases: &[Case],
    ) -> Result<Option<PlanRecordings>, RecordingsError> {
        if tables.is_empty() && cases.iter().all(|c| c.http.is_none()) {
            return Ok(None);
        }
        let plan = recordings(base, tables, "[[http]]")?;
        let mut by_case = BTreeMap::new();
        for case in cases {
            if let Some(tables) = &case.http {
                let own = recordings(base, tables, "http").map_err(|e| RecordingsError::Case {
                    case: case.name.clone(),
                    reason: Box::new(e),
                })?;
                by_case.insert(case.name.clone(), own);
            }
        }
        let recorded = PlanRecordings {
            handle: HttpRecordings::new(plan.clone(), &format!("[[http]] of {file}")),
            plan,
            cases: by_case,
            file: file.to_string(),
        };
        Ok(Some(recorded))
    }

    /// The handle every loaded tool's requests are answered from
    /// ([`sluice_wiring::ToolLoader::with_http_recordings`]).
    pub fn handle(&self) -> &HttpRecordings {
        &self.handle
    }

    /// Puts the recordings of case `name` in place: its own `http`, else the plan's.
    pub fn select(&self, name: &str) {
        match self.cases.get(name) {
            Some(own) => self
                .handle
                .replace(own.clone(), &format!("the `http` of case `{name}`")),
            None => self
                .handle
                .replace(self.plan.clone(), &format!("[[http]] of {}", self.file)),
        }
    }
}

/// The recordings of `tables` (called `key` in messages: `[[http]] #2`), none recording the
/// method and URL of another.
fn recordings(
    base: &Path,
    tables: &[HttpTable],
    key: &'static str,
) -> Result<Vec<HttpRecording>, RecordingsError> {
    let mut made: Vec<HttpRecording> = Vec::new();
    for (i, table) in tables.iter().enumerate() {
        let r = table
            .recording(base)
            .map_err(|reason| RecordingsError::Table {
                key,
                number: i + 1,
                reason,
            })?;
        if let Some(j) = made
            .iter()
            .position(|m| m.method() == r.method() && m.url() == r.url())
        {
            return Err(RecordingsError::Twice {
                key,
                first: j + 1,
                second: i + 1,
                method: r.method().to_string(),
                url: r.url().to_string(),
            });
        }
        made.push(r);
    }
    Ok(made)
}
