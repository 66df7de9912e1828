//! `[functions.<f>]` of a policy (`[tools.NAME.functions.<f>]` in `sluice.toml`): one
//! function's tool name and description, and the refinements of its arguments
//! (docs/configuration.md#argument-refinements).

use std::collections::BTreeMap;

use serde_json::Number;

/// The settings of one function of a component: `[tools.NAME.functions.FUNC]` in
/// `sluice.toml`, `[functions.FUNC]` in a sibling policy. The default sets nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionPolicy {
    /// `name`: the tool's name, instead of the one derived from the export (and without the
    /// prefix): 1 to 64 characters of `A-Z a-z 0-9 _ -` (`sluice_protocol::TOOL_NAME_RULE`).
    pub name: Option<String>,
    /// `description`: what the model is told the tool does: replaces the WIT doc comment and
    /// the policy's `description`.
    pub description: Option<String>,
    /// `args.<a>`: refinements of single arguments, by the argument's WIT name
    /// (`start-line`) or the name the model gives it (`startLine`); top-level arguments only
    /// (a record argument's fields are not addressed). Checked against the argument's type
    /// when the component loads (by the runtime): an argument that does not exist, or a
    /// refinement its type cannot take, refuses the component.
    pub args: BTreeMap<String, ArgPolicy>,
}

/// The refinements of one argument (`[tools.NAME.functions.FUNC.args.ARG]`), each narrowing
/// what its WIT type allows: the JSON schema the model sees shows them, and a call that
/// breaks one is an `invalid-argument` error before the component runs. A key set here
/// replaces what the argument's WIT doc comment says (`@minimum`, `@maximum`, the text). The
/// default refines nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArgPolicy {
    /// `description`: what the model is told the argument is.
    pub description: Option<String>,
    /// `minimum`: the least value, inclusive: an integer within the type's range for an
    /// integer argument, any finite number for an `f32` or `f64`. Other types refuse it.
    pub minimum: Option<Number>,
    /// `maximum`: the greatest value, inclusive; as `minimum`, and not below it.
    pub maximum: Option<Number>,
    /// `enum`: the values a `string` argument may take, or the cases of a WIT `enum`
    /// argument it may take (each one of its cases); not empty, each once.
    pub one_of: Option<Vec<String>>,
    /// `pattern`: a regular expression a `string` argument must match somewhere, in JSON
    /// Schema's dialect (ECMA-262, not anchored: `^…$` for the whole string; no look-around
    /// or backreferences); not with `one_of`.
    pub pattern: Option<String>,
}
