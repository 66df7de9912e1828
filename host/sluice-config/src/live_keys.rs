//! Run-time keys: the part of the `[agent]` table an operator may change while Sluice runs
//! (the operator API's `PUT /agent/config`, docs/configuration.md#run-time-keys), checked by
//! the same rules and with the same messages as at boot.
//!
//! ```
//! use sluice_config::{RuntimeSetting, runtime_value};
//!
//! let ok = runtime_value("max_tool_result_bytes", &serde_json::json!(4096))?;
//! assert_eq!(ok, RuntimeSetting::MaxToolResultBytes(4096));
//! let e = runtime_value("max_tool_result_bytes", &serde_json::json!(1023)).unwrap_err();
//! assert_eq!(
//!     e.to_string(),
//!     "agent.max_tool_result_bytes must be an integer from 1024 to 1048576 (bytes); got 1023 (from PUT /agent/config)"
//! );
//! assert!(runtime_value("roots", &serde_json::json!({})).is_err());
//! # Ok::<(), sluice_config::ConfigError>(())
//! ```

use crate::ConfigError;
use crate::keys::{AGENT_MAX_TURNS, Fallback, KEYS, Key, Kind};

/// Where a run-time value comes from, as error messages name it.
pub const RUNTIME_ORIGIN: &str = "PUT /agent/config";

/// What values a run-time key takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allowed {
    /// A JSON integer from `min` to `max`, inclusive.
    Integer {
        /// The smallest value.
        min: u64,
        /// The largest value.
        max: u64,
        /// The unit as a word, for messages (`bytes`, or empty).
        unit: &'static str,
    },
    /// A JSON boolean.
    Boolean,
}

impl Allowed {
    /// What is allowed, in words: `an integer from 1024 to 1048576 (bytes)`, `true or false`.
    pub fn describe(&self) -> String {
        match self {
            Allowed::Integer { min, max, unit } => Kind::Integer {
                min: *min,
                max: *max,
                unit,
            }
            .describe(),
            Allowed::Boolean => Kind::Boolean.describe(),
        }
    }
}

/// A key that may change at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuntimeKey {
    /// Its name in the operator API (`max_tool_result_bytes`).
    pub name: &'static str,
    /// Its name in `sluice.toml` (`agent.max_tool_result_bytes`); the API takes it too.
    pub file_key: &'static str,
    /// What values it takes.
    pub allowed: Allowed,
}

/// How many keys may change at run time.
const RUNTIME_KEY_COUNT: usize = {
    let (mut i, mut n) = (0, 0);
    while i < KEYS.len() {
        if KEYS[i].live {
            n += 1;
        }
        i += 1;
    }
    n
};

/// Every key that may change at run time (a [`Key::live`] one of [`KEYS`]), in the order the
/// operator API lists them.
pub const RUNTIME_KEYS: [RuntimeKey; RUNTIME_KEY_COUNT] = {
    let mut out = [RuntimeKey {
        name: "",
        file_key: "",
        allowed: Allowed::Boolean,
    }; RUNTIME_KEY_COUNT];
    let (mut i, mut n) = (0, 0);
    while i < KEYS.len() {
        if KEYS[i].live {
            out[n] = runtime_key_of(&KEYS[i]);
            n += 1;
        }
        i += 1;
    }
    out
};

/// `key` as the operator API names and checks it; a compile-time error for a run-time key
/// that is neither an integer nor a boolean.
const fn runtime_key_of(key: &Key) -> RuntimeKey {
    let allowed = match key.kind {
        Kind::Integer { min, max, unit } => Allowed::Integer { min, max, unit },
        Kind::Boolean => Allowed::Boolean,
        Kind::Text { .. } => panic!("a run-time key must be an integer or a boolean"),
    };
    if matches!(key.default, Fallback::Described(_)) {
        panic!("a run-time key must have a default value");
    }
    RuntimeKey {
        name: after_table(key.name),
        file_key: key.name,
        allowed,
    }
}

/// `name` without its table (`max_turns` of `agent.max_turns`).
const fn after_table(name: &'static str) -> &'static str {
    let bytes = name.as_bytes();
    let mut i = bytes.len();
    while i > 0 && bytes[i - 1] != b'.' {
        i -= 1;
    }
    let (_, tail) = bytes.split_at(i);
    match std::str::from_utf8(tail) {
        Ok(tail) => tail,
        Err(_) => name,
    }
}

/// Keys (and tables) of `sluice.toml` that are read once at boot: the operator API refuses
/// them with [`ConfigError::BootOnly`]. `agent.` may precede `system_prompt`.
pub const BOOT_ONLY_KEYS: [&str; 9] = [
    "system_prompt",
    "roots",
    "builtins",
    "tools_dir",
    "tools",
    "strict",
    "store",
    "model",
    "mcp",
];

/// A checked run-time value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuntimeSetting {
    /// `agent.max_tool_result_bytes`, in bytes (1,024 to 1,048,576).
    MaxToolResultBytes(u32),
    /// `agent.max_turns` (1 to 10,000).
    MaxTurns(u32),
    /// `agent.auto_approve`.
    AutoApprove(bool),
}

/// The run-time key called `key` (its API name or its `sluice.toml` name), if there is one.
pub fn runtime_key(key: &str) -> Option<&'static RuntimeKey> {
    RUNTIME_KEYS
        .iter()
        .find(|k| k.name == key || k.file_key == key)
}

/// Checks `value` (as JSON) for the run-time key `key` with the boot-time rules: integers
/// must be JSON integers within the key's range (`1.5`, `"2048"` and `-1` are refused),
/// booleans JSON booleans.
///
/// # Errors
/// - [`ConfigError::Value`] (key, value as JSON text, allowed range, origin
///   [`RUNTIME_ORIGIN`]) for a value out of range or of the wrong type;
/// - [`ConfigError::BootOnly`] for a key read only at boot ([`BOOT_ONLY_KEYS`], with or
///   without `agent.`, and any key below one, like `roots.logs` or `model.name`);
/// - [`ConfigError::UnknownKey`] for any other key.
pub fn runtime_value(key: &str, value: &serde_json::Value) -> Result<RuntimeSetting, ConfigError> {
    let Some(known) = runtime_key(key) else {
        let bare = key.strip_prefix("agent.").unwrap_or(key);
        let head = bare.split('.').next().unwrap_or(bare);
        let allowed = RUNTIME_KEYS.map(|k| k.name).join(", ");
        return Err(if BOOT_ONLY_KEYS.contains(&head) {
            ConfigError::BootOnly {
                key: key.to_string(),
                allowed,
            }
        } else {
            ConfigError::UnknownKey {
                key: key.to_string(),
                allowed,
            }
        });
    };
    let text = value.to_string();
    match known.allowed {
        Allowed::Integer { min, max, unit } => {
            // Only a JSON integer's text parses as one: `"2048"` keeps its quotes, `1.5` its
            // point and `1e3` becomes `1000.0`.
            let kind = Kind::Integer { min, max, unit };
            let n = kind.check_integer(known.file_key, &text, RUNTIME_ORIGIN)?;
            let n = u32::try_from(n).map_err(|_| ConfigError::Value {
                key: known.file_key.to_string(),
                value: text.clone(),
                allowed: known.allowed.describe(),
                origin: RUNTIME_ORIGIN.to_string(),
            })?;
            Ok(if known.file_key == AGENT_MAX_TURNS.name {
                RuntimeSetting::MaxTurns(n)
            } else {
                RuntimeSetting::MaxToolResultBytes(n)
            })
        }
        Allowed::Boolean => match value {
            serde_json::Value::Bool(b) => Ok(RuntimeSetting::AutoApprove(*b)),
            _ => Err(ConfigError::Value {
                key: known.file_key.to_string(),
                value: text,
                allowed: known.allowed.describe(),
                origin: RUNTIME_ORIGIN.to_string(),
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn p13_values_are_refused_naming_key_value_and_range() {
        for (value, shown) in [
            (json!(1023), "1023"),
            (json!(1_048_577), "1048577"),
            (json!(1.5), "1.5"),
            (json!("x"), "\"x\""),
            (json!("2048"), "\"2048\""),
            (json!(-1), "-1"),
            (json!(null), "null"),
        ] {
            let e = runtime_value("max_tool_result_bytes", &value).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "agent.max_tool_result_bytes must be an integer from 1024 to 1048576 (bytes); got {shown} (from PUT /agent/config)"
                )
            );
        }
        assert_eq!(
            runtime_value("agent.max_tool_result_bytes", &json!(1_048_576)).unwrap(),
            RuntimeSetting::MaxToolResultBytes(1_048_576)
        );
    }

    #[test]
    fn every_key_checks_its_type() {
        assert_eq!(
            runtime_value("max_turns", &json!(10_000)).unwrap(),
            RuntimeSetting::MaxTurns(10_000)
        );
        assert!(runtime_value("max_turns", &json!(0)).is_err());
        assert_eq!(
            runtime_value("auto_approve", &json!(true)).unwrap(),
            RuntimeSetting::AutoApprove(true)
        );
        let e = runtime_value("auto_approve", &json!("yes")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "agent.auto_approve must be true or false; got \"yes\" (from PUT /agent/config)"
        );
    }

    #[test]
    fn boot_only_and_unknown_keys_are_refused() {
        for key in [
            "roots",
            "roots.logs",
            "store",
            "model.name",
            "agent.system_prompt",
        ] {
            let e = runtime_value(key, &json!(1)).unwrap_err();
            assert!(matches!(e, ConfigError::BootOnly { .. }), "{key}: {e}");
            assert!(
                e.to_string()
                    .starts_with(&format!("{key} is read at boot only")),
                "{e}"
            );
        }
        let e = runtime_value("max_tool_result", &json!(1)).unwrap_err();
        assert!(matches!(e, ConfigError::UnknownKey { .. }), "{e}");
        assert_eq!(
            e.to_string(),
            "unknown configuration key \"max_tool_result\"; the keys that can change at run time are max_tool_result_bytes, max_turns, auto_approve"
        );
    }
}
