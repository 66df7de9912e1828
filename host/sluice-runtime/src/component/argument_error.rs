//! Why a model's argument was refused ([`ArgumentError`]), in the words the model reads
//! (docs/observations.md#arguments), and how a value it gave is shown there
//! (`short_json`). The lowering of a call's arguments (`call::value`, `call::integers`)
//! and the checks of the policy's refinements (`component::refine`) refuse with it.

use serde_json::Value;

/// Why an argument was refused. Each names the argument by its path (`startLine`,
/// `items[2].name`) and, where a value was given, shows it (`short_json`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentError {
    /// The value is not of the argument's type, or lies outside its bounds or its `enum`
    /// (`startLine must be an integer of at least 1; got 0`).
    #[error("{name} must be {expected}; got {got}")]
    Expected {
        /// The argument's path.
        name: String,
        /// What it takes (`a string`, `one of: a, b`).
        expected: String,
        /// The value given, as shown.
        got: String,
    },
    /// A string that does not match the argument's `pattern`.
    #[error("{name} must match the regular expression {pattern}; got {got}")]
    NoMatch {
        /// The argument's path.
        name: String,
        /// The pattern, as written.
        pattern: String,
        /// The value given, as shown.
        got: String,
    },
    /// A variant given a field other than `tag` and `val`.
    #[error("{name} has an unknown field {field:?}; a variant has only \"tag\" and \"val\"")]
    VariantField {
        /// The argument's path.
        name: String,
        /// The field.
        field: String,
    },
    /// A variant case that carries a value, given none.
    #[error("{name}.val is required for tag {tag:?}")]
    ValRequired {
        /// The argument's path.
        name: String,
        /// The case.
        tag: String,
    },
    /// A variant case that carries no value, given one.
    #[error("{name}.val must be absent for tag {tag:?}")]
    ValAbsent {
        /// The argument's path.
        name: String,
        /// The case.
        tag: String,
    },
    /// A flag the argument's flags do not have.
    #[error("{name} has no flag {flag:?}; flags are: {flags}")]
    NoFlag {
        /// The argument's path.
        name: String,
        /// The flag given.
        flag: String,
        /// The flags it has, comma-separated.
        flags: String,
    },
    /// An argument of a type a model cannot give.
    #[error("{name} has a type that cannot be given as JSON")]
    NotJson {
        /// The argument's path.
        name: String,
    },
    /// Properties the function or record does not have.
    #[error(
        "unknown argument{}: {}; allowed: {allowed}",
        if unknown.len() == 1 { "" } else { "s" },
        unknown.join(", ")
    )]
    Unknown {
        /// Their paths, each quoted.
        unknown: Vec<String>,
        /// The properties it has, comma-separated (`none`).
        allowed: String,
    },
    /// A required argument or field left out (or `null`).
    #[error("missing required argument: {name}")]
    Missing {
        /// The argument's path.
        name: String,
    },
}

impl ArgumentError {
    /// [`ArgumentError::Expected`]: `name` must be `expected`; `got` was given.
    pub(crate) fn expected(name: &str, expected: impl Into<String>, got: String) -> Self {
        ArgumentError::Expected {
            name: name.to_string(),
            expected: expected.into(),
            got,
        }
    }
}

/// A value as shown in a message: compact JSON, long ones cut to 100 bytes.
pub(crate) fn short_json(json: &Value) -> String {
    sluice_text::cut_bytes(&json.to_string(), 100).into_owned()
}
