//! Reading `sluice.toml` so that every error names the line and the key: the parser's own
//! errors (syntax, a duplicate key, a value of the wrong type, an unknown key) and the
//! checks made afterwards ([`Source::locate`] adds the line to an error naming a key).
//!
//! Values whose rule is more than a type (bounded integers) are read as [`Raw`], which takes
//! any TOML value, an integer too large for 64 bits included, so that the key's own check
//! judges it and says what is allowed.

use std::fmt;
use std::path::Path;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::ConfigError;

/// A value as written in `sluice.toml`, whatever its type.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Raw {
    /// An integer, as its decimal digits (it may not fit in 64 bits).
    Integer(String),
    /// A float.
    Float(f64),
    /// A string.
    String(String),
    /// A boolean.
    Boolean(bool),
    /// A date-time, as written.
    Datetime(String),
    /// An array or a table (`"an array"`, `"a table"`).
    Other(&'static str),
}

impl Raw {
    /// The value as messages show it: strings quoted, arrays and tables by kind.
    pub(crate) fn shown(&self) -> String {
        match self {
            Raw::Integer(digits) => digits.clone(),
            Raw::Float(f) => f.to_string(),
            Raw::String(s) => format!("{s:?}"),
            Raw::Boolean(b) => b.to_string(),
            Raw::Datetime(d) => d.clone(),
            Raw::Other(kind) => (*kind).to_string(),
        }
    }
}

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Raw, D::Error> {
        deserializer.deserialize_any(RawVisitor)
    }
}

struct RawVisitor;

/// The key under which the TOML deserializer hands over a date-time.
const DATETIME_KEY: &str = "$__toml_private_datetime";

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any TOML value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Raw, E> {
        Ok(Raw::Boolean(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Raw, E> {
        Ok(Raw::Integer(v.to_string()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Raw, E> {
        Ok(Raw::Integer(v.to_string()))
    }
    fn visit_i128<E>(self, v: i128) -> Result<Raw, E> {
        Ok(Raw::Integer(v.to_string()))
    }
    fn visit_u128<E>(self, v: u128) -> Result<Raw, E> {
        Ok(Raw::Integer(v.to_string()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Raw, E> {
        Ok(Raw::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Raw, E> {
        Ok(Raw::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Raw, E> {
        Ok(Raw::String(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Raw::Other("an array"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
        let mut datetime = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == DATETIME_KEY {
                datetime = Some(map.next_value::<String>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(datetime.map_or(Raw::Other("a table"), Raw::Datetime))
    }
}

/// The text of a configuration file and how messages name it.
pub(crate) struct Source<'a> {
    pub(crate) path: &'a Path,
    pub(crate) text: &'a str,
    /// The file as messages name it (its path as given).
    pub(crate) label: String,
}

impl Source<'_> {
    /// Parses the file as `T`.
    ///
    /// # Errors
    /// A wrong type of a key that [`Source::key_at_line`] can name: [`ConfigError::Value`]
    /// with the key, the value as written, what is allowed, and `<file> line N` as origin.
    /// Anything else (a syntax error, a duplicate or unknown key): [`ConfigError::Parse`]
    /// whose message starts with the line and the key.
    pub(crate) fn parse<T: de::DeserializeOwned>(&self) -> Result<T, ConfigError> {
        toml::from_str::<T>(self.text).map_err(|e| self.error(&e))
    }

    fn error(&self, e: &toml::de::Error) -> ConfigError {
        let message = e.message().trim().to_string();
        let Some(span) = e.span() else {
            return ConfigError::Parse {
                path: self.path.to_path_buf(),
                message,
            };
        };
        let line = line_number(self.text, span.start);
        let key = self.key_at_line(line);
        let written = self
            .text
            .get(span.clone())
            .map(|s| shorten(s.trim()))
            .unwrap_or_default();
        if let (Some(key), Some(rest)) = (&key, message.strip_prefix("invalid type: "))
            && let Some((_, expected)) = rest.split_once(", expected ")
        {
            return ConfigError::Value {
                key: key.clone(),
                value: written,
                allowed: allowed_for(key).unwrap_or_else(|| describe_expected(expected)),
                origin: format!("{} line {line}", self.label),
            };
        }
        let message = match did_you_mean(&message) {
            Some(suggestion) => format!("{message}; did you mean `{suggestion}`?"),
            None => message,
        };
        let message = match (&key, message.as_str()) {
            (Some(key), "duplicate key") => format!(
                "line {line}: {key} is set a second time; a key may be set once in its table"
            ),
            (Some(key), _) => format!("line {line}, {key}: {message}"),
            (None, _) => format!("line {line}: {message}"),
        };
        ConfigError::Parse {
            path: self.path.to_path_buf(),
            message,
        }
    }

    /// The dotted key that line `line` (1-based) sets or opens: `agent.max_turns` for
    /// `max_turns = 5` under `[agent]`, `tools.x` for `[tools.x]`. A line inside a value
    /// that spans lines counts as the line that starts it. `None` when nothing is set there.
    pub(crate) fn key_at_line(&self, line: usize) -> Option<String> {
        let mut table = String::new();
        let mut found = None;
        for (n, text) in self.text.lines().enumerate().take(line) {
            let text = text.trim();
            if let Some(header) = table_header(text) {
                table = header;
                found = (n + 1 == line).then(|| table.clone());
            } else if let Some(key) = assigned_key(text) {
                found = Some(join(&table, &key));
            }
        }
        found
    }

    /// The line (1-based) that sets or opens `key`, if the file has one.
    pub(crate) fn line_of_key(&self, key: &str) -> Option<usize> {
        let mut table = String::new();
        for (n, text) in self.text.lines().enumerate() {
            let text = text.trim();
            if let Some(header) = table_header(text) {
                table = header;
                if table == key {
                    return Some(n + 1);
                }
            } else if let Some(k) = assigned_key(text)
                && join(&table, &k) == key
            {
                return Some(n + 1);
            }
        }
        None
    }

    /// `e` with the line of its key added to its origin, when it came from this file.
    pub(crate) fn locate(&self, e: ConfigError) -> ConfigError {
        match e {
            ConfigError::Value {
                key,
                value,
                allowed,
                origin,
            } if !self.label.is_empty()
                && origin.starts_with(&self.label)
                && !origin.contains(" line ") =>
            {
                // A key with a quoted part (`http_credentials."api.example.com".header`) is
                // looked for as the file's lines are read: unquoted.
                let origin = match self.line_of_key(&dotted(&key)) {
                    Some(line) => format!("{} line {line}", self.label),
                    None => origin,
                };
                ConfigError::Value {
                    key,
                    value,
                    allowed,
                    origin,
                }
            }
            ConfigError::Root {
                name,
                dir,
                origin,
                reason,
            } if !self.label.is_empty()
                && origin == format!("{} in {}", crate::roots::root_key(&name), self.label) =>
            {
                let origin = match self.line_of_key(&format!("roots.{name}")) {
                    Some(line) => format!("{origin} line {line}"),
                    None => origin,
                };
                ConfigError::Root {
                    name,
                    dir,
                    origin,
                    reason,
                }
            }
            other => other,
        }
    }
}

/// The allowed key closest to the unknown one of serde's ``unknown field `memroy_mib`,
/// expected one of `read`, `write`, …`` (or ``expected `a` or `b` ``): the one with the
/// fewest edits (Damerau-Levenshtein: a swap of two letters is one), if it takes at most a
/// third of the unknown key's letters, and at least one.
pub(crate) fn did_you_mean(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let (unknown, expected) = rest.split_once("`, expected ")?;
    let allowed = expected.split('`').skip(1).step_by(2);
    let limit = (unknown.chars().count() / 3).max(1);
    allowed
        .map(|k| (strsim::damerau_levenshtein(unknown, k), k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.to_string())
}

/// What some keys take, in words, where the type alone says too little.
fn allowed_for(key: &str) -> Option<String> {
    let parts: Vec<&str> = key.split('.').collect();
    Some(match parts.as_slice() {
        ["roots"] => {
            "a table of root names and directories, like [roots] logs = \"/srv/logs\"".into()
        }
        ["roots", _] => "a directory path (a string)".into(),
        ["tools"] => "a table of tool policies, one [tools.NAME] table per tool".into(),
        ["tools", _] => {
            "a table: [tools.NAME] with component = \"path.wasm\" or builtin = \"read_file\"".into()
        }
        ["tools", _, "sha256"] => "64 hexadecimal digits (a string)".into(),
        ["tools", _, "read" | "write"] => "an array of root names, like [\"logs\"]".into(),
        ["tools", _, "verify"] => {
            "a table with key = \"cosign.pub\" (or a list of public key files)".into()
        }
        ["tools", _, "verify", "key"] => {
            "a public key file (\"cosign.pub\") or a list of them".into()
        }
        ["tools", _, "insecure"] => "true or false".into(),
        ["tools", _, "env"] => "an array of environment variable names, like [\"LANG\"]".into(),
        ["tools", _, "prefix"] => format!("a string of {}", crate::PREFIX_RULE),
        ["tools", _, "functions"] => {
            "a table of function settings, one [tools.NAME.functions.FUNC] table per function"
                .into()
        }
        ["tools", _, "functions", _] => {
            "a table: [tools.NAME.functions.FUNC] with name = \"…\", description = \"…\" and [tools.NAME.functions.FUNC.args.ARG] tables"
                .into()
        }
        ["tools", _, "functions", _, "args"] => {
            "a table of argument refinements, one [tools.NAME.functions.FUNC.args.ARG] table per argument".into()
        }
        ["tools", _, "functions", _, "args", _] => {
            "a table: [tools.NAME.functions.FUNC.args.ARG] with description, minimum, maximum, enum or pattern".into()
        }
        ["tools", _, "functions", _, "args", _, "enum"] => crate::ENUM_RULE.into(),
        ["tools", _, "functions", _, "args", _, "pattern"] => {
            format!("a string, {}", crate::PATTERN_RULE)
        }
        ["tools", _, "functions", _, "name"] => {
            format!("a string, a tool name: {}", crate::TOOL_NAME_RULE)
        }
        ["tools", _, "config"] => "a table of config keys and string values, like [tools.NAME.config] region = \"eu\"".into(),
        ["tools", _, "secrets"] => "a table of config keys and their sources, like [tools.NAME.secrets] token = { env = \"API_TOKEN\" }".into(),
        ["tools", _, "secrets", _] => "a table: { env = \"VAR\" } or { file = \"path\" }".into(),
        ["tools", _, "http_credentials"] => "a table of credentials by entry of http, like [tools.NAME.http_credentials.\"api.example.com\"] header = \"Authorization\", value = \"Bearer {secret}\", secret = { env = \"API_TOKEN\" }".into(),
        ["strict"] => "true or false".into(),
        ["builtins"] => {
            "an array of built-in tool names, like [\"read_file\", \"list_dir\"]".into()
        }
        ["agent" | "store" | "model" | "server"] => format!("a table ([{key}])"),
        _ => return None,
    })
}

/// serde's "expected …" in the words of TOML.
fn describe_expected(expected: &str) -> String {
    match expected {
        "a map" => "a table".into(),
        "a sequence" => "an array".into(),
        e if e.starts_with("struct ") => "a table".into(),
        e => e.to_string(),
    }
}

/// The 1-based line of byte `offset` in `text`.
fn line_number(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// At most 80 characters of `s`, then `…`.
fn shorten(s: &str) -> String {
    sluice_text::cut_chars(s, 80).into_owned()
}

/// The dotted name of a table header line (`[tools.x]`, `[[a.b]]`), unquoted.
fn table_header(line: &str) -> Option<String> {
    let inner = line.strip_prefix('[')?;
    let inner = inner.strip_prefix('[').unwrap_or(inner);
    let end = inner.find(']')?;
    Some(dotted(&inner[..end]))
}

/// The key a `key = value` line sets, unquoted and dotted.
fn assigned_key(line: &str) -> Option<String> {
    if line.starts_with('#') || line.starts_with('[') {
        return None;
    }
    let (key, _) = split_assignment(line)?;
    let key = dotted(key);
    (!key.is_empty()).then_some(key)
}

/// `key = value` split at the first `=` outside quotes.
fn split_assignment(line: &str) -> Option<(&str, &str)> {
    let mut quote = None;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '=') => return Some((&line[..i], &line[i + 1..])),
            _ => {}
        }
    }
    None
}

/// A key as written (`a . "b c"`) as a dotted name (`a.b c`).
fn dotted(key: &str) -> String {
    key.split('.')
        .map(|part| part.trim().trim_matches(|c| c == '"' || c == '\''))
        .collect::<Vec<_>>()
        .join(".")
}

fn join(table: &str, key: &str) -> String {
    if table.is_empty() {
        key.to_string()
    } else {
        format!("{table}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(text: &str) -> Source<'_> {
        Source {
            path: Path::new("sluice.toml"),
            text,
            label: "sluice.toml".into(),
        }
    }

    #[test]
    fn keys_of_lines() {
        let s = source(
            "builtins = [\n  \"read_file\",\n]\n[agent]\nmax_turns = 5\n\n[tools.\"x y\"]\nsha256 = \"a=b\"\nmodel.name = 1\n",
        );
        assert_eq!(s.key_at_line(1).as_deref(), Some("builtins"));
        assert_eq!(
            s.key_at_line(2).as_deref(),
            Some("builtins"),
            "inside the array"
        );
        assert_eq!(s.key_at_line(5).as_deref(), Some("agent.max_turns"));
        assert_eq!(s.key_at_line(7).as_deref(), Some("tools.x y"));
        assert_eq!(s.key_at_line(8).as_deref(), Some("tools.x y.sha256"));
        assert_eq!(s.key_at_line(9).as_deref(), Some("tools.x y.model.name"));
        assert_eq!(s.line_of_key("agent.max_turns"), Some(5));
        assert_eq!(s.line_of_key("tools.x y"), Some(7));
        assert_eq!(s.line_of_key("agent.nope"), None);
    }

    #[test]
    fn an_unknown_key_is_told_the_closest_allowed_one() {
        let m = |s: &str| did_you_mean(s);
        assert_eq!(
            m("unknown field `memroy_mib`, expected one of `read`, `write`, `memory_mib`, `timeout_ms`")
                .as_deref(),
            Some("memory_mib")
        );
        assert_eq!(
            m("unknown field `max_turn`, expected `max_turns` or `auto_approve`").as_deref(),
            Some("max_turns")
        );
        // Nothing close: no guess.
        assert_eq!(
            m("unknown field `colour`, expected one of `read`, `write`"),
            None
        );
        assert_eq!(m("duplicate key"), None);
    }

    #[test]
    fn raw_values_keep_what_was_written() {
        #[derive(serde::Deserialize)]
        struct T {
            a: Raw,
            b: Raw,
            c: Raw,
            d: Raw,
            e: Raw,
            f: Raw,
        }
        let t: T = toml::from_str(
            "a = 18446744073709551616\nb = -3\nc = \"x\"\nd = [1]\ne = 1979-05-27\nf = 1.5\n",
        )
        .unwrap();
        assert_eq!(t.a, Raw::Integer("18446744073709551616".into()));
        assert_eq!(t.b.shown(), "-3");
        assert_eq!(t.c.shown(), "\"x\"");
        assert_eq!(t.d.shown(), "an array");
        assert_eq!(t.e.shown(), "1979-05-27");
        assert_eq!(t.f.shown(), "1.5");
    }
}
