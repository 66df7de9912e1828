//! Checks on argument values that the types alone do not express.

use crate::error::{Result, ToolError};

/// Fails with `<name> must be an integer of at least <min>; got <value>` when `value` is
/// present and below `min`.
pub(crate) fn at_least(name: &str, value: Option<u64>, min: u64) -> Result<()> {
    match value {
        Some(v) if v < min => Err(ToolError::integer_below(name, min, v)),
        _ => Ok(()),
    }
}
