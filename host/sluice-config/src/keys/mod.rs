//! Every scalar configuration key, declared once: its name in `sluice.toml`, its `SLUICE_*`
//! variable, its flag, what values it takes (range and unit), its default and whether the
//! operator API may change it at run time ([`KEYS`]). The layered read (flag, variable, file,
//! default), the messages of a bad value, [`crate::ENV_KEYS`], [`crate::RUNTIME_KEYS`],
//! `sluice doctor`'s flag sources, the flags' `--help` and the rows of
//! docs/configuration.md#precedence all come from these declarations.
//!
//! ```
//! use sluice_config::keys::{AGENT_MAX_TURNS, KEYS};
//!
//! assert_eq!(AGENT_MAX_TURNS.env, Some("SLUICE_AGENT_MAX_TURNS"));
//! assert_eq!(
//!     AGENT_MAX_TURNS.help("The most model requests of this run"),
//!     "The most model requests of this run (1 to 10000; default 50; env SLUICE_AGENT_MAX_TURNS)."
//! );
//! assert!(KEYS.iter().any(|k| k.name == "runtime.queue_timeout_ms"));
//! ```

mod declarations;

use crate::ConfigError;
use crate::file::Raw;
pub use declarations::*;

/// What values a key takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An integer from `min` to `max`, inclusive.
    Integer {
        /// The smallest value.
        min: u64,
        /// The largest value.
        max: u64,
        /// The unit as a word (`bytes`, `ms`, `calls`), or empty.
        unit: &'static str,
    },
    /// `true` or `false` (from a variable or a flag's text also `1` or `0`).
    Boolean,
    /// Text its table's module checks (a path, a URL, an address, a list).
    Text {
        /// What it is, as docs/configuration.md's table says it in parentheses (empty:
        /// nothing).
        shown: &'static str,
    },
}

impl Kind {
    /// What is allowed, in words: `an integer from 1024 to 1048576 (bytes)`, `true or false`;
    /// empty for text.
    pub fn describe(&self) -> String {
        match self {
            Kind::Integer { min, max, unit } => {
                format!("an integer from {min} to {max}{}", in_parentheses(unit))
            }
            Kind::Boolean => "true or false".to_string(),
            Kind::Text { .. } => String::new(),
        }
    }

    /// `text` (the value of `key`, from `origin`) as an integer of this kind's range (any
    /// `u64` for a kind that is no integer).
    ///
    /// # Errors
    /// [`ConfigError::Value`] naming the key, the text, the range and `origin`.
    pub fn check_integer(&self, key: &str, text: &str, origin: &str) -> Result<u64, ConfigError> {
        let (min, max, unit) = match *self {
            Kind::Integer { min, max, unit } => (min, max, unit),
            _ => (0, u64::MAX, ""),
        };
        integer(key, text, origin, min, max, &in_parentheses(unit))
    }
}

/// ` (unit)`, or nothing for no unit.
fn in_parentheses(unit: &str) -> String {
    if unit.is_empty() {
        String::new()
    } else {
        format!(" ({unit})")
    }
}

/// A key's value when nothing sets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// This integer.
    Integer(u64),
    /// This boolean.
    Boolean(bool),
    /// Computed or absent, as docs/configuration.md says it (`2 × the cores`, `none`).
    Described(&'static str),
}

/// A key's command-line flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flag {
    /// The flag (`--store`), as messages and `sluice doctor` name it.
    pub name: &'static str,
    /// Its value as docs/configuration.md's table shows it (`FILE`), or empty.
    pub value: &'static str,
    /// What the table adds after it (` (repeatable)`), or empty.
    pub note: &'static str,
}

/// One configuration key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    /// Its name in `sluice.toml`, table first (`agent.max_turns`).
    pub name: &'static str,
    /// The variable that sets it, if any.
    pub env: Option<&'static str>,
    /// What docs/configuration.md's table adds after the variable, or empty.
    pub env_note: &'static str,
    /// A variable set to the empty text counts as unset.
    pub empty_env_is_unset: bool,
    /// The flag that sets it, if any.
    pub flag: Option<Flag>,
    /// What values it takes.
    pub kind: Kind,
    /// Its value when nothing sets it.
    pub default: Fallback,
    /// `PUT /agent/config` may change it while Sluice runs (docs/configuration.md#run-time-keys).
    pub live: bool,
    /// What it does, as docs/configuration.md's table says it after its range, or empty.
    pub doc: &'static str,
}

/// `key`'s variable; a compile-time error for a key without one.
pub(crate) const fn env_of(key: &Key) -> &'static str {
    match key.env {
        Some(var) => var,
        None => panic!("a key without a variable"),
    }
}

/// How many of `keys` have a variable.
pub(crate) const fn count_env(keys: &[Key]) -> usize {
    let (mut i, mut n) = (0, 0);
    while i < keys.len() {
        if keys[i].env.is_some() {
            n += 1;
        }
        i += 1;
    }
    n
}

/// (variable, key) of each of `keys` that has a variable, in order; `N` is their number.
pub(crate) const fn env_pairs<const N: usize>(keys: &[Key]) -> [(&'static str, &'static str); N] {
    let mut out = [("", ""); N];
    let (mut i, mut n) = (0, 0);
    while i < keys.len() {
        if let Some(var) = keys[i].env {
            out[n] = (var, keys[i].name);
            n += 1;
        }
        i += 1;
    }
    out
}

/// The value of one key given as text, with where it came from (the flag, the variable, or
/// the file's label).
pub(crate) type Given = (String, String);

/// Where a read takes a key's value from besides its flag: the environment and the file.
pub(crate) struct Layers<'a> {
    /// The environment (`Config::resolve`'s `env`).
    pub(crate) env: &'a dyn Fn(&str) -> Option<String>,
    /// The configuration file as messages name it.
    pub(crate) file_label: &'a str,
}

impl Key {
    /// Its table (`agent`), or empty for a key at the top of `sluice.toml`.
    pub fn table(&self) -> &'static str {
        self.name.rsplit_once('.').map_or("", |(table, _)| table)
    }

    /// Its flag's name (`--store`), or empty for a key without a flag.
    pub fn flag_name(&self) -> &'static str {
        match self.flag {
            Some(f) => f.name,
            None => "",
        }
    }

    /// The set value of the variable, if any (the empty text counting as unset when
    /// [`Key::empty_env_is_unset`]).
    pub(crate) fn env_value(&self, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
        let var = self.env?;
        env(var).filter(|v| !(self.empty_env_is_unset && v.is_empty()))
    }

    /// Its value from the highest-precedence place that has it, as text, with where it came
    /// from: `flag` (the flag's value as typed, if given), the variable, the file's `file`.
    pub(crate) fn given(
        &self,
        flag: Option<&str>,
        file: Option<&Raw>,
        layers: &Layers<'_>,
    ) -> Option<Given> {
        if let (Some(value), Some(f)) = (flag, self.flag) {
            return Some((value.to_string(), f.name.to_string()));
        }
        if let (Some(value), Some(var)) = (self.env_value(layers.env), self.env) {
            return Some((value, var.to_string()));
        }
        file.map(|v| (v.shown(), layers.file_label.to_string()))
    }

    /// The integer set by `flag`, the variable or `file`, checked against the key's range;
    /// `None` when none sets it.
    pub(crate) fn integer(
        &self,
        flag: Option<&str>,
        file: Option<&Raw>,
        layers: &Layers<'_>,
    ) -> Result<Option<u64>, ConfigError> {
        self.given(flag, file, layers)
            .map(|(text, origin)| self.check_integer(&text, &origin))
            .transpose()
    }

    /// The integer the file sets for a key only the file sets ([`FILE_KEYS`]), checked
    /// against its range; `None` when the file does not set it.
    ///
    /// # Errors
    /// [`ConfigError::Value`] naming the key, the value, the range and `file_label`.
    pub(crate) fn file_integer(
        &self,
        file: Option<&Raw>,
        file_label: &str,
    ) -> Result<Option<u64>, ConfigError> {
        file.map(|v| self.check_integer(&v.shown(), file_label))
            .transpose()
    }

    /// [`Key::file_integer`], or the key's integer default when the file does not set it.
    pub(crate) fn file_integer_or_default(
        &self,
        file: Option<&Raw>,
        file_label: &str,
    ) -> Result<u64, ConfigError> {
        let default = match self.default {
            Fallback::Integer(n) => n,
            _ => 0,
        };
        Ok(self.file_integer(file, file_label)?.unwrap_or(default))
    }

    /// [`Key::integer`], or the key's default when none sets it.
    pub(crate) fn integer_or_default(
        &self,
        flag: Option<&str>,
        file: Option<&Raw>,
        layers: &Layers<'_>,
    ) -> Result<u64, ConfigError> {
        let default = match self.default {
            Fallback::Integer(n) => n,
            _ => 0,
        };
        Ok(self.integer(flag, file, layers)?.unwrap_or(default))
    }

    /// The boolean set by `flag` (given: `true`), the variable or `file`, or the key's
    /// default.
    pub(crate) fn boolean(
        &self,
        flag: bool,
        file: Option<&Raw>,
        layers: &Layers<'_>,
    ) -> Result<bool, ConfigError> {
        match self.given(flag.then_some("true"), file, layers) {
            Some((text, origin)) => boolean(self.name, text, origin),
            None => Ok(matches!(self.default, Fallback::Boolean(true))),
        }
    }

    /// `text` (from `origin`) as an integer within the key's range.
    ///
    /// # Errors
    /// [`ConfigError::Value`] naming the key, the text, the range and `origin`.
    pub fn check_integer(&self, text: &str, origin: &str) -> Result<u64, ConfigError> {
        self.kind.check_integer(self.name, text, origin)
    }

    /// The flag's `--help`: `what`, then the range, the default and the variable in
    /// parentheses, as `The most model requests of this run (1 to 10000; default 50; env
    /// SLUICE_AGENT_MAX_TURNS).`
    pub fn help(&self, what: &str) -> String {
        let mut parts = Vec::new();
        if let Kind::Integer { min, max, .. } = self.kind {
            parts.push(format!("{min} to {max}"));
        }
        match self.default {
            Fallback::Integer(n) => parts.push(format!("default {n}")),
            Fallback::Boolean(true) => parts.push("default true".to_string()),
            Fallback::Described(text) if !text.starts_with("none") && !text.contains('[') => {
                parts.push(format!("default {text}"));
            }
            _ => {}
        }
        if let Some(var) = self.env {
            parts.push(format!("env {var}"));
        }
        if parts.is_empty() {
            format!("{what}.")
        } else {
            format!("{what} ({}).", parts.join("; "))
        }
    }

    /// Its row of docs/configuration.md#precedence: key (and range): what it does | flag |
    /// variable | default.
    pub fn docs_row(&self) -> String {
        let range = match self.kind {
            Kind::Integer { min, max, unit } => {
                let unit = if unit.is_empty() {
                    String::new()
                } else {
                    format!(" {unit}")
                };
                format!(" ({} to {}{unit})", grouped(min), grouped(max))
            }
            Kind::Boolean => " (true or false)".to_string(),
            Kind::Text { shown: "" } => String::new(),
            Kind::Text { shown } => format!(" ({shown})"),
        };
        let doc = if self.doc.is_empty() {
            String::new()
        } else {
            format!(": {}", self.doc)
        };
        let flag = self.flag.map_or(String::new(), |f| {
            let value = if f.value.is_empty() {
                String::new()
            } else {
                format!(" {}", f.value)
            };
            format!("`{}{value}`{}", f.name, f.note)
        });
        let env = self
            .env
            .map_or(String::new(), |v| format!("`{v}`{}", self.env_note));
        let default = match self.default {
            Fallback::Integer(n) => grouped(n),
            Fallback::Boolean(b) => b.to_string(),
            Fallback::Described(text) => text.to_string(),
        };
        let cells = [format!("`{}`{range}{doc}", self.name), flag, env, default];
        let row = format!("| {} |", cells.join(" | "));
        row.replace("|  |", "| |").replace("|  |", "| |")
    }
}

/// `n` with its thousands separated by commas (`1,048,576`).
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `true` or `false` (or `1`, `0`) given as text.
pub(crate) fn boolean(key: &str, text: String, origin: String) -> Result<bool, ConfigError> {
    match text.trim() {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(ConfigError::Value {
            key: key.to_string(),
            value: text,
            allowed: "true or false".into(),
            origin,
        }),
    }
}

/// An integer from `min` to `max` given as text; `unit` follows the range in the message
/// (` (bytes)`, or empty).
pub(crate) fn integer(
    key: &str,
    text: &str,
    origin: &str,
    min: u64,
    max: u64,
    unit: &str,
) -> Result<u64, ConfigError> {
    text.trim()
        .parse::<u64>()
        .ok()
        .filter(|v| (min..=max).contains(v))
        .ok_or_else(|| ConfigError::Value {
            key: key.to_string(),
            value: text.to_string(),
            allowed: format!("an integer from {min} to {max}{unit}"),
            origin: origin.to_string(),
        })
}

#[cfg(test)]
mod tests;
