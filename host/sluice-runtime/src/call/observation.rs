//! The observation: the exact string stored in the transcript for one tool call, its
//! shapes, the secret scan, the key-material scan, and the cap (docs/observations.md).
//!
//! Everything a model can see from a tool passes [`Draft::finish`], which withholds the
//! component's secrets, applies the key scan and then the cap, in that order, in one place.
//! It is the only way to make an [`Observation`]: its fields are private, so no tool source
//! (a component, a built-in, an MCP client, a test fake) can store text that skipped them.
//!
//! ```compile_fail
//! use sluice_runtime::call::observation::{CallStatus, Observation};
//! // A tool source cannot write an observation by hand: the fields are private.
//! let observation = Observation {
//!     text: "-----BEGIN OPENSSH PRIVATE KEY-----".to_string(),
//!     full_bytes: 35,
//!     truncated: false,
//!     status: CallStatus::Ok,
//!     paged: false,
//!     withheld: Vec::new(),
//! };
//! ```

use std::sync::Arc;

use serde_json::Value;

use crate::call::facts::CallFacts;
use crate::call::script_record::ScriptRecord;
pub use crate::call::status::CallStatus;
use crate::secrets::Secrets;

/// The start of the marker that ends a capped observation.
pub const TRUNCATION_MARKER_START: &str = "…[truncated; full result is ";

/// The most tool names an unknown-tool observation lists.
pub const UNKNOWN_TOOL_LISTED: usize = 20;

/// The most bytes the list of tool names of an unknown-tool observation takes, brackets
/// included (half the smallest cap).
pub const UNKNOWN_TOOL_LIST_BYTES: usize = 512;

/// One tool call's observation: made only by [`Draft::finish`], so its text has had the
/// component's secrets withheld, holds no PEM private-key armor and is at most the cap in
/// bytes. Read it through its accessors.
///
/// Two observations are equal when the model sees the same: their [`CallFacts`] (times,
/// memory) differ from call to call and are not compared.
#[derive(Clone, Debug)]
pub struct Observation {
    text: String,
    full_bytes: usize,
    truncated: bool,
    status: CallStatus,
    paged: bool,
    withheld: Vec<String>,
    script: Option<Arc<ScriptRecord>>,
    facts: CallFacts,
}

impl PartialEq for Observation {
    fn eq(&self, other: &Self) -> bool {
        let Observation {
            text,
            full_bytes,
            truncated,
            status,
            paged,
            withheld,
            script,
            facts: _,
        } = self;
        *text == other.text
            && *full_bytes == other.full_bytes
            && *truncated == other.truncated
            && *status == other.status
            && *paged == other.paged
            && *withheld == other.withheld
            && *script == other.script
    }
}

impl Eq for Observation {}

/// Whether a result field says more can be had: a present field whose JSON name starts with
/// `next` (`nextOffset`, `nextCursor`, ...), or `truncated` when it is `true`. `is_true` is
/// whether the field's value is the boolean `true`. The one rule for a result lifted as JSON
/// ([`Observation::success`]) and one written straight from the guest's value.
pub(crate) fn says_more_follows(json_name: &str, is_true: bool) -> bool {
    json_name.starts_with("next") || (json_name == "truncated" && is_true)
}

impl Observation {
    /// The exact string stored in the transcript: compact JSON (or its capped head), at most
    /// the cap in bytes.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The stored string, by value ([`Observation::text`]).
    pub fn into_text(self) -> String {
        self.text
    }

    /// Length in bytes of the observation before the cap (after the secret withholding and
    /// the key scan).
    pub fn full_bytes(&self) -> usize {
        self.full_bytes
    }

    /// True when the cap cut it.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// What the call came to.
    pub fn status(&self) -> CallStatus {
        self.status
    }

    /// True when the result says more can be had: a `next…` cursor or `truncated: true`.
    pub fn paged(&self) -> bool {
        self.paged
    }

    /// What the script of a `run_script` call did: its program and its tool calls, for the
    /// audit (docs/code-mode.md#the-audit); `None` for any other call.
    pub fn script(&self) -> Option<&ScriptRecord> {
        self.script.as_deref()
    }

    /// What the call cost inside its sandbox (all zero for an observation made without a
    /// call).
    pub fn facts(&self) -> &CallFacts {
        &self.facts
    }

    /// The same observation, with the facts of the call that made it.
    pub(crate) fn with_facts(mut self, facts: CallFacts) -> Self {
        self.facts = facts;
        self
    }

    /// The config keys whose secret values were found and withheld, in the order scanned
    /// (each occurrence replaced by `[secret withheld: KEY]`); empty when none was.
    pub fn withheld(&self) -> &[String] {
        &self.withheld
    }

    /// `{"ok":true,"result":<result>}`.
    pub fn success(result: &Value) -> Draft {
        let paged = result.as_object().is_some_and(|o| {
            o.iter()
                .any(|(k, v)| says_more_follows(k, v == &Value::Bool(true)))
        });
        Draft {
            text: format!("{{\"ok\":true,\"result\":{result}}}"),
            status: CallStatus::Ok,
            paged,
            secrets: None,
            script: None,
        }
    }

    /// `{"ok":true,"result":<result>}`, the result written by `write` as compact JSON text
    /// (what [`crate::call::value::write_json`] writes); `paged` as [`Observation::success`]
    /// would judge the result. The same text as [`Observation::success`] of the parsed
    /// result, without building it as a [`Value`] first.
    pub(crate) fn success_written(write: impl FnOnce(&mut Vec<u8>), paged: bool) -> Draft {
        let mut text = Vec::with_capacity(256);
        text.extend_from_slice(b"{\"ok\":true,\"result\":");
        write(&mut text);
        text.push(b'}');
        Draft {
            // JSON written from `str`s is UTF-8; a bug that broke that shows as U+FFFD.
            text: String::from_utf8(text)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            status: CallStatus::Ok,
            paged,
            secrets: None,
            script: None,
        }
    }

    /// `{"ok":false,"error":<message>[,"kind":<kind>]}`.
    pub fn error(message: &str, kind: Option<&str>) -> Draft {
        let mut text = format!("{{\"ok\":false,\"error\":{}", Value::from(message));
        if let Some(kind) = kind {
            text.push_str(&format!(",\"kind\":{}", Value::from(kind)));
        }
        text.push('}');
        Draft {
            text,
            status: CallStatus::ToolError,
            paged: false,
            secrets: None,
            script: None,
        }
    }

    /// `{"ok":false,"error":<message>,"kind":"cancelled"}`, with status
    /// [`CallStatus::Cancelled`]: the call was cancelled before the tool finished.
    pub fn cancelled(message: &str) -> Draft {
        Observation::error(message, Some("cancelled")).with_status(CallStatus::Cancelled)
    }

    /// `{"ok":false,"error":"unknown_tool","name":<name as asked>}`, for a tool source that
    /// knows no tools; [`Observation::unknown_tool_among`] lists the ones it knows.
    pub fn unknown_tool(name: &str) -> Draft {
        unknown(name, None)
    }

    /// `{"ok":false,"error":"unknown_tool","name":<name>,"didYouMean":<closest>,
    /// "tools":[<names>],"moreTools":<n>}`: the name as asked (cut to 200 characters and
    /// `…`, as in both shapes); the closest of `known` when one is close (by edit
    /// distance, docs/observations.md#shapes); at most [`UNKNOWN_TOOL_LISTED`] of `known`, closest
    /// first, within [`UNKNOWN_TOOL_LIST_BYTES`] bytes of JSON, so that with a name of up to
    /// 200 characters the observation fits the smallest cap; and how many were left out
    /// (`moreTools` only when some were).
    pub fn unknown_tool_among<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Draft {
        unknown(name, Some(crate::component::names::nearest(name, known)))
    }
}

fn unknown(name: &str, near: Option<crate::component::names::Nearest<'_>>) -> Draft {
    let mut text = format!(
        "{{\"ok\":false,\"error\":\"unknown_tool\",\"name\":{}",
        Value::from(sluice_file_tools::error::quote(name))
    );
    if let Some(near) = near {
        if let Some(s) = near.suggestion {
            text.push_str(&format!(",\"didYouMean\":{}", Value::from(s)));
        }
        let mut list = String::from("[");
        let mut listed = 0;
        for t in &near.ranked {
            let item = Value::from(*t).to_string();
            if listed == UNKNOWN_TOOL_LISTED
                || list.len() + item.len() + 2 > UNKNOWN_TOOL_LIST_BYTES
            {
                break;
            }
            if listed > 0 {
                list.push(',');
            }
            list.push_str(&item);
            listed += 1;
        }
        list.push(']');
        text.push_str(&format!(",\"tools\":{list}"));
        let more = near.ranked.len() - listed;
        if more > 0 {
            text.push_str(&format!(",\"moreTools\":{more}"));
        }
    }
    text.push('}');
    Draft {
        text,
        status: CallStatus::UnknownTool,
        paged: false,
        secrets: None,
        script: None,
    }
}

/// An observation before the secret scan, the key scan and the cap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Draft {
    text: String,
    status: CallStatus,
    paged: bool,
    /// The secrets of the component that made it, withheld by [`Draft::finish`].
    secrets: Option<Arc<Secrets>>,
    /// What the script of a `run_script` call did (code mode).
    script: Option<Arc<ScriptRecord>>,
}

impl Draft {
    /// The text before the key scan and the cap.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The same draft, with `secrets` to withhold when it is finished (the secrets of the
    /// component whose call made it).
    pub fn withholding(mut self, secrets: Arc<Secrets>) -> Self {
        self.secrets = Some(secrets);
        self
    }

    /// Withholds the secrets given to [`Draft::withholding`] (each occurrence replaced by
    /// `[secret withheld: KEY]`, before anything is cut, so that no cut can leave part of a
    /// secret), applies the key-material scan, then the cap of `cap` bytes with `hint` in
    /// the marker: the only way to make an [`Observation`].
    pub fn finish(mut self, tool: &str, cap: usize, hint: &str) -> Observation {
        let mut withheld = Vec::new();
        if let Some(secrets) = self.secrets.take() {
            let (text, keys) = secrets.withhold(&self.text);
            self.text = text;
            withheld = keys;
        }
        let script = self.script.take();
        let Draft {
            text,
            status,
            paged,
            secrets: _,
            script: _,
        } = if sluice_keys::has_armor(self.text.as_bytes()) {
            let refusal = format!(
                "refusing to return key material: the result of {} holds a PEM private key",
                sluice_file_tools::error::quote(&sluice_keys::redact_armor(tool))
            );
            Observation::error(&refusal, Some("key-material")).with_status(CallStatus::KeyMaterial)
        } else {
            self
        };
        let full_bytes = text.len();
        // The hint comes from the tool's argument names: redacted too, so that the marker
        // cannot bring armor back into a scanned observation.
        let capped = cap_text(text, cap, &sluice_keys::redact_armor(hint));
        Observation {
            truncated: capped.len() != full_bytes,
            text: capped,
            full_bytes,
            status,
            paged,
            withheld,
            script,
            facts: CallFacts::default(),
        }
    }

    /// The same draft, with what its script did (a `run_script` call's record, for the
    /// audit; not part of the text).
    pub(crate) fn with_script(mut self, record: ScriptRecord) -> Self {
        self.script = Some(Arc::new(record));
        self
    }

    fn with_status(mut self, status: CallStatus) -> Self {
        self.status = status;
        self
    }
}

/// The start of the marker that ends an observation shrunk after a context-window
/// rejection (docs/agent-loop.md#context-window-recovery).
pub const SHRINK_MARKER_START: &str = "…[cut from ";

pub use crate::call::hint::{DEFAULT_HINT, paging_hint};

/// Caps `text` at `cap` bytes: when it is longer, keeps the longest head that ends on a
/// character boundary and leaves room for the marker
/// `…[truncated; full result is N bytes. Ask for less: <hint>]`, N being `text`'s length.
/// The result is always at most `cap` bytes: should the marker itself not fit (a cap under
/// its length, or a very long hint; the configured cap is at least 1,024 bytes), it is the
/// marker's own head, cut on a character boundary. Text of at most `cap` bytes is returned
/// unchanged, so capping is idempotent.
pub fn cap_text(text: String, cap: usize, hint: &str) -> String {
    if text.len() <= cap {
        return text;
    }
    let marker = format!(
        "{TRUNCATION_MARKER_START}{} bytes. Ask for less: {hint}]",
        text.len()
    );
    head_with_marker(text, cap, &marker)
}

/// Shrinks an observation after a context-window rejection: a head of at most `limit`
/// bytes, marker included, ending
/// `…[cut from N bytes: a request including this result exceeded the model's context
/// window. Ask for less: <hint>]` (cut itself when it does not fit, as in [`cap_text`]).
/// Text of at most `limit` bytes is returned unchanged.
pub fn shrink_text(text: String, limit: usize, hint: &str) -> String {
    if text.len() <= limit {
        return text;
    }
    let marker = format!(
        "{SHRINK_MARKER_START}{} bytes: a request including this result exceeded the model's context window. Ask for less: {hint}]",
        text.len()
    );
    head_with_marker(text, limit, &marker)
}

/// The longest head of `text` that ends on a character boundary and, followed by `marker`,
/// fits in `limit` bytes; then the marker. When the marker alone is longer than `limit`,
/// the longest head of the marker that fits: never more than `limit` bytes.
fn head_with_marker(mut text: String, limit: usize, marker: &str) -> String {
    if marker.len() > limit {
        return marker[..marker.floor_char_boundary(limit)].to_string();
    }
    text.truncate(text.floor_char_boundary(limit - marker.len()));
    text.push_str(marker);
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn shapes() {
        assert_eq!(
            Observation::success(&serde_json::json!({"a":1})).text(),
            r#"{"ok":true,"result":{"a":1}}"#
        );
        assert_eq!(
            Observation::error("bad \"x\"", Some("invalid-argument")).text(),
            r#"{"ok":false,"error":"bad \"x\"","kind":"invalid-argument"}"#
        );
        assert_eq!(
            Observation::error("e", None).text(),
            r#"{"ok":false,"error":"e"}"#
        );
        assert_eq!(
            Observation::unknown_tool("nope").text(),
            r#"{"ok":false,"error":"unknown_tool","name":"nope"}"#
        );
    }

    #[test]
    fn caps_with_marker() {
        let text = format!("{{\"ok\":true,\"result\":\"{}\"}}", "L".repeat(200_000));
        let full = text.len();
        let obs = Observation::success(&Value::Null);
        let obs = Draft { text, ..obs }.finish("t", 4096, DEFAULT_HINT);
        assert!(obs.truncated);
        assert_eq!(obs.full_bytes, 200_023);
        assert_eq!(obs.full_bytes, full);
        assert!(obs.text.len() <= 4096);
        assert!(obs.text.starts_with("{\"ok\":true,\"result\":\"LLL"));
        assert!(obs.text.ends_with(
            "…[truncated; full result is 200023 bytes. Ask for less: a narrower query]"
        ));
    }

    #[test]
    fn refuses_key_armor_before_capping() {
        let armor = "-----BEGIN OPENSSH PRIVATE KEY-----";
        let draft = Observation::success(&Value::from(format!("x\n{armor}\nAAAA")));
        let obs = draft.finish("cat", 65_536, DEFAULT_HINT);
        assert_eq!(obs.status, CallStatus::KeyMaterial);
        assert_eq!(
            obs.text,
            r#"{"ok":false,"error":"refusing to return key material: the result of cat holds a PEM private key","kind":"key-material"}"#
        );
    }

    fn token_secrets() -> Arc<Secrets> {
        use crate::secrets::Secret;
        Arc::new(Secrets::new(vec![(
            "token".into(),
            Secret::new("QXZQXZ-0123456789".into()),
        )]))
    }

    #[test]
    fn withholds_secrets_from_results_and_errors() {
        let obs = Observation::success(&Value::from("key=QXZQXZ-0123456789;"))
            .withholding(token_secrets())
            .finish("t", 65_536, DEFAULT_HINT);
        assert_eq!(
            obs.text,
            r#"{"ok":true,"result":"key=[secret withheld: token];"}"#
        );
        assert_eq!(obs.withheld, vec!["token".to_string()]);
        assert_eq!(obs.full_bytes, obs.text.len());
        let obs = Observation::error("bad QXZQXZ-0123456789", Some("io"))
            .withholding(token_secrets())
            .finish("t", 65_536, DEFAULT_HINT);
        assert_eq!(
            obs.text,
            r#"{"ok":false,"error":"bad [secret withheld: token]","kind":"io"}"#
        );
        let obs = Observation::success(&Value::from("nothing"))
            .withholding(token_secrets())
            .finish("t", 65_536, DEFAULT_HINT);
        assert!(obs.withheld.is_empty());
    }

    #[test]
    fn a_secret_straddling_the_cut_leaves_no_prefix() {
        // The secret starts at every offset around where the cap cuts: withheld before the
        // cut, so no prefix of it (not even its first byte, `Q`, found nowhere else) remains.
        let cap = 1024;
        let head = r#"{"ok":true,"result":""#.len();
        let mut straddled = 0;
        for start in 880..960 {
            let text = format!(
                "{}QXZQXZ-0123456789{}",
                "L".repeat(start - head),
                "L".repeat(4000)
            );
            let obs = Observation::success(&Value::from(text))
                .withholding(token_secrets())
                .finish("t", cap, DEFAULT_HINT);
            assert!(obs.truncated);
            assert!(obs.text.len() <= cap);
            assert!(!obs.text.contains('Q'), "start {start}: {}", obs.text);
            assert_eq!(obs.withheld, vec!["token".to_string()]);
            // The length before the cap counts the marker, not the secret.
            assert_eq!(
                obs.full_bytes,
                start + "[secret withheld: token]".len() + 4000 + 2
            );
            if obs.text.contains("[secret with") && !obs.text.contains("[secret withheld: token]") {
                straddled += 1;
            }
        }
        // Some of those starts put the cut inside the withheld marker.
        assert!(straddled > 0);
    }

    #[test]
    fn armor_in_an_error_or_a_tool_name_is_refused_exactly() {
        let armor = "-----BEGIN RSA PRIVATE KEY-----";
        let obs = Observation::error(&format!("cannot parse {armor}"), Some("io")).finish(
            "t",
            1024,
            DEFAULT_HINT,
        );
        assert_eq!(obs.status(), CallStatus::KeyMaterial);
        assert_eq!(
            obs.text(),
            r#"{"ok":false,"error":"refusing to return key material: the result of t holds a PEM private key","kind":"key-material"}"#
        );
        assert_eq!(obs.full_bytes(), 117);
        assert!(!obs.truncated());
        let name = format!("x{armor}");
        let obs = Observation::unknown_tool(&name).finish(&name, 1024, DEFAULT_HINT);
        assert_eq!(obs.status(), CallStatus::KeyMaterial);
        assert_eq!(
            obs.text(),
            r#"{"ok":false,"error":"refusing to return key material: the result of x[PEM armor] holds a PEM private key","kind":"key-material"}"#
        );
    }

    #[test]
    fn a_hint_holding_armor_is_redacted_in_the_marker() {
        let obs = Observation::success(&Value::from("L".repeat(2000))).finish(
            "t",
            1024,
            "-----BEGIN EC PRIVATE KEY-----",
        );
        assert_eq!(obs.status(), CallStatus::Ok);
        assert_eq!(obs.text().len(), 1024);
        assert!(
            obs.text()
                .ends_with("…[truncated; full result is 2023 bytes. Ask for less: [PEM armor]]"),
            "{}",
            obs.text()
        );
        assert!(!sluice_keys::has_armor(obs.text().as_bytes()));
    }

    #[test]
    fn a_cap_shorter_than_the_marker_cuts_the_marker() {
        let obs = Observation::success(&Value::from("L".repeat(100))).finish("t", 20, "x");
        assert!(obs.truncated());
        assert_eq!(obs.full_bytes(), 123);
        // The marker's first 20 bytes (`…` is 3 of them).
        assert_eq!(obs.text(), "…[truncated; full ");
        assert_eq!(obs.text().len(), 20);
        let obs = Observation::success(&Value::from("L".repeat(100))).finish("t", 0, "x");
        assert_eq!(obs.text(), "");
    }

    /// Text and hints made of armor fragments, line breaks, NULs and multi-byte characters,
    /// so that whole armor lines (in each form the scan knows) turn up often.
    fn fragments() -> impl Strategy<Value = String> {
        "(-----BEGIN |-----END |-----|PRIVATE KEY|RSA |OPENSSH |\\n|\n|\u{0}|é|[a-z ]{0,6}){0,40}"
    }

    proptest! {
        /// Whatever a tool source puts in a draft (a result, an error, a cancellation, an
        /// unknown name) and whatever cap and hint it finishes it with, the observation is
        /// at most the cap and holds no armor: the guarantee `Observation` stands for.
        #[test]
        fn no_tool_source_gets_past_the_cap_or_the_key_scan(
            text in fragments(),
            hint in fragments(),
            shape in 0..4u8,
            cap in 0usize..600,
        ) {
            let draft = match shape {
                0 => Observation::success(&Value::from(text.clone())),
                1 => Observation::error(&text, Some("io")),
                2 => Observation::cancelled(&text),
                _ => Observation::unknown_tool(&text),
            };
            let obs = draft.finish(&text, cap, &hint);
            prop_assert!(obs.text().len() <= cap, "{} > {cap}", obs.text().len());
            prop_assert!(!sluice_keys::has_armor(obs.text().as_bytes()), "{:?}", obs.text());
            prop_assert_eq!(obs.truncated(), obs.full_bytes() > cap);
        }

        #[test]
        fn cap_is_bounded_utf8_and_idempotent(text in ".{0,3000}", cap in 1024usize..2048) {
            let once = cap_text(text.clone(), cap, "pass offset");
            prop_assert!(once.len() <= cap);
            prop_assert!(std::str::from_utf8(once.as_bytes()).is_ok());
            if text.len() <= cap {
                prop_assert_eq!(&once, &text);
            } else {
                let marker = format!("{TRUNCATION_MARKER_START}{} bytes. Ask for less: pass offset]", text.len());
                prop_assert!(once.ends_with(&marker));
                prop_assert!(text.starts_with(&once[..once.len() - marker.len()]));
                // The head is as long as the marker allows, short of one character.
                prop_assert!(cap - once.len() < 4);
            }
            prop_assert_eq!(cap_text(once.clone(), cap, "pass offset"), once);
        }
    }
}
