//! Windows onto long lists, as the console (and any client) pages through them: the sessions
//! of `GET /sessions` (`limit`, `offset`, `q`, `status`) and the transcript of
//! `GET /sessions/{id}` (`from`, `limit`). Without these parameters both answer everything,
//! as before they existed. The store gives whole lists; the window is cut here.

use serde_json::{Value, json};
use sluice_protocol::SessionStatus;
use sluice_store::{SessionRecord, StoredMessage};

use crate::error::ApiError;
use crate::request::param;

/// The most items one page may ask for (`limit`): 1,000.
pub(crate) const MAX_LIMIT: usize = 1000;

/// `GET /sessions`'s parameters.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SessionWindow {
    /// At most this many sessions (1 to [`MAX_LIMIT`]); `None`: all.
    limit: Option<usize>,
    /// Skip this many of the matching sessions (default 0).
    offset: usize,
    /// Only sessions whose id contains this, compared case-insensitively.
    q: Option<String>,
    /// Only sessions with this status.
    status: Option<SessionStatus>,
}

impl SessionWindow {
    /// Reads `limit`, `offset`, `q` and `status` from a query string.
    ///
    /// # Errors
    /// 400 naming the parameter, the value and what is allowed.
    pub(crate) fn parse(query: Option<&str>) -> Result<SessionWindow, ApiError> {
        let status = match param(query, "status").filter(|s| !s.is_empty()) {
            None => None,
            Some(s) => Some(SessionStatus::parse(&s).ok_or_else(|| {
                let allowed = SessionStatus::ALL.map(SessionStatus::as_str);
                ApiError::bad_request(format!(
                    "query parameter status must be one of {}; got {s:?}",
                    allowed.join(", ")
                ))
                .with("parameter", "status")
                .with("allowed", allowed.to_vec())
            })?),
        };
        Ok(SessionWindow {
            limit: limit(query)?,
            offset: number(query, "offset", 0, usize::MAX, "an integer from 0")?.unwrap_or(0),
            q: param(query, "q")
                .map(|q| q.trim().to_lowercase())
                .filter(|q| !q.is_empty()),
            status,
        })
    }

    /// `{"sessions": […], "total", "offset", "limit"}`: the window of `sessions` (newest
    /// first, as the store lists them) that match, and how many match in all.
    pub(crate) fn answer(&self, sessions: Vec<SessionRecord>) -> Value {
        let matching: Vec<SessionRecord> = sessions
            .into_iter()
            .filter(|s| self.status.is_none_or(|status| s.status == status))
            .filter(|s| {
                self.q
                    .as_ref()
                    .is_none_or(|q| s.id.to_lowercase().contains(q.as_str()))
            })
            .collect();
        let total = matching.len();
        let page: Vec<SessionRecord> = matching
            .into_iter()
            .skip(self.offset)
            .take(self.limit.unwrap_or(usize::MAX))
            .collect();
        json!({"sessions": page, "total": total, "offset": self.offset, "limit": self.limit})
    }
}

/// `GET /sessions/{id}`'s transcript window: the messages from `from` (a `seq`, from 1), at
/// most `limit` of them; without either, the whole transcript.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TranscriptWindow {
    from: u64,
    limit: Option<usize>,
}

impl TranscriptWindow {
    /// Reads `from` and `limit` from a query string.
    ///
    /// # Errors
    /// 400 naming the parameter, the value and what is allowed.
    pub(crate) fn parse(query: Option<&str>) -> Result<TranscriptWindow, ApiError> {
        Ok(TranscriptWindow {
            from: number(
                query,
                "from",
                1,
                u64::MAX,
                "an integer from 1 (a message's seq)",
            )?
            .unwrap_or(1),
            limit: limit(query)?,
        })
    }

    /// The window's messages, and the `seq` that follows it when the transcript goes on
    /// (`None` at its end).
    pub(crate) fn cut(&self, messages: Vec<StoredMessage>) -> (Vec<StoredMessage>, Option<u64>) {
        let mut page: Vec<StoredMessage> = messages
            .into_iter()
            .skip_while(|m| m.seq < self.from)
            .take(self.limit.map_or(usize::MAX, |n| n + 1))
            .collect();
        let next = match self.limit {
            Some(n) if page.len() > n => page.pop().map(|m| m.seq),
            _ => None,
        };
        (page, next)
    }
}

/// `limit`: 1 to [`MAX_LIMIT`], or absent.
fn limit(query: Option<&str>) -> Result<Option<usize>, ApiError> {
    let allowed = format!("an integer from 1 to {MAX_LIMIT}");
    number(query, "limit", 1, MAX_LIMIT, &allowed)
}

/// Query parameter `name` as an integer from `min` to `max` (`allowed` says so in words);
/// absent or empty is `None`.
fn number<T>(
    query: Option<&str>,
    name: &str,
    min: T,
    max: T,
    allowed: &str,
) -> Result<Option<T>, ApiError>
where
    T: std::str::FromStr + PartialOrd + Copy + std::fmt::Display,
{
    let Some(text) = param(query, name).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let parsed = text.parse::<T>();
    if let Ok(n) = parsed
        && n >= min
        && n <= max
    {
        return Ok(Some(n));
    }
    // Digits past what the type holds: say where it ends.
    let overflow = parsed.is_err() && text.bytes().all(|b| b.is_ascii_digit());
    let most = if overflow {
        format!(", at most {max}")
    } else {
        String::new()
    };
    Err(ApiError::bad_request(format!(
        "query parameter {name} must be {allowed}{most}; got {text:?}"
    ))
    .with("parameter", name)
    .with("allowed", allowed))
}

#[cfg(test)]
mod tests {
    use sluice_protocol::Message;

    use super::*;

    fn session(id: &str, status: SessionStatus) -> SessionRecord {
        SessionRecord {
            id: id.into(),
            created_at: "2026-12-06T00:00:00.000Z".into(),
            updated_at: "2026-12-06T00:00:00.000Z".into(),
            status,
            last_error: None,
            message_count: 0,
            owner: sluice_store::DEFAULT_OWNER.into(),
        }
    }

    fn ids(answer: &Value) -> Vec<&str> {
        answer["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn sessions_are_filtered_then_windowed() {
        let all = vec![
            session("s-alpha1", SessionStatus::Completed),
            session("s-beta22", SessionStatus::AwaitingApproval),
            session("s-ALPHA3", SessionStatus::AwaitingApproval),
            session("s-gamma4", SessionStatus::Completed),
        ];
        let answer = SessionWindow::parse(None).unwrap().answer(all.clone());
        assert_eq!(ids(&answer).len(), 4);
        assert_eq!(answer["total"], 4);
        assert_eq!(answer["limit"], Value::Null);

        let w = SessionWindow::parse(Some("q=Alpha&limit=1&offset=1")).unwrap();
        let answer = w.answer(all.clone());
        assert_eq!(ids(&answer), ["s-ALPHA3"]);
        assert_eq!(
            (&answer["total"], &answer["offset"], &answer["limit"]),
            (&json!(2), &json!(1), &json!(1))
        );

        let w = SessionWindow::parse(Some("status=awaiting_approval")).unwrap();
        assert_eq!(ids(&w.answer(all.clone())), ["s-beta22", "s-ALPHA3"]);
        let w = SessionWindow::parse(Some("offset=9&limit=5")).unwrap();
        let answer = w.answer(all);
        assert_eq!(ids(&answer).len(), 0);
        assert_eq!(answer["total"], 4);
    }

    #[test]
    fn bad_session_parameters_name_what_is_allowed() {
        let e = SessionWindow::parse(Some("limit=0")).unwrap_err();
        assert_eq!(
            e.body["error"],
            "query parameter limit must be an integer from 1 to 1000; got \"0\""
        );
        let e = SessionWindow::parse(Some("limit=1001")).unwrap_err();
        assert_eq!(e.status, axum::http::StatusCode::BAD_REQUEST);
        let e = SessionWindow::parse(Some("offset=-1")).unwrap_err();
        assert_eq!(
            e.body["error"],
            "query parameter offset must be an integer from 0; got \"-1\""
        );
        let e = SessionWindow::parse(Some("status=done")).unwrap_err();
        assert_eq!(
            e.body["error"],
            "query parameter status must be one of idle, running, awaiting_approval, completed, aborted, error; got \"done\""
        );
        assert_eq!(
            SessionWindow::parse(Some("q=&status=&limit=")).unwrap(),
            SessionWindow::default()
        );
    }

    fn transcript(n: u64) -> Vec<StoredMessage> {
        (1..=n)
            .map(|seq| StoredMessage {
                seq,
                message: Message::user(format!("m{seq}"), "2026-12-06T00:00:00Z"),
            })
            .collect()
    }

    fn seqs(page: &[StoredMessage]) -> Vec<u64> {
        page.iter().map(|m| m.seq).collect()
    }

    #[test]
    fn a_transcript_window_says_where_the_next_begins() {
        let w = TranscriptWindow::parse(Some("from=3&limit=2")).unwrap();
        let (page, next) = w.cut(transcript(10));
        assert_eq!((seqs(&page), next), (vec![3, 4], Some(5)));
        let w = TranscriptWindow::parse(Some("from=9&limit=2")).unwrap();
        let (page, next) = w.cut(transcript(10));
        assert_eq!((seqs(&page), next), (vec![9, 10], None));
        let w = TranscriptWindow::parse(Some("from=11&limit=2")).unwrap();
        assert_eq!(w.cut(transcript(10)), (vec![], None));
        let (page, next) = TranscriptWindow::parse(None).unwrap().cut(transcript(3));
        assert_eq!((seqs(&page), next), (vec![1, 2, 3], None));
        let e = TranscriptWindow::parse(Some("from=99999999999999999999")).unwrap_err();
        assert_eq!(
            e.body["error"],
            "query parameter from must be an integer from 1 (a message's seq), at most 18446744073709551615; got \"99999999999999999999\""
        );
        let e = TranscriptWindow::parse(Some("from=0")).unwrap_err();
        assert_eq!(
            e.body["error"],
            "query parameter from must be an integer from 1 (a message's seq); got \"0\""
        );
    }
}
