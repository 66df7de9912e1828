//! Why a policy's refinements of a function's arguments are refused ([`RefinementError`]),
//! when the component loads ([`crate::component::refine`]). Each message is one line that
//! names the key where it is set (`functions.count.args.top.minimum in /d/wc.toml`), its
//! value and what is wrong.

use serde_json::Number;

use crate::component::pattern::{PATTERN_RULE, PatternError};

/// A refinement the argument's WIT type does not take, or that contradicts another. `at` is
/// where the key is set, as the policy's origin words it
/// ([`PolicyOrigin::key_at`](crate::policy::PolicyOrigin::key_at)); `name` the argument's
/// WIT name; `is` its type in words (`a u32`, `an enum`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RefinementError {
    /// The key names no argument of the function.
    #[error(
        "{at} names no argument of the function; its arguments are: {}",
        list(arguments)
    )]
    NoArgument {
        /// Where the key is set.
        at: String,
        /// The function's arguments (WIT names).
        arguments: Vec<String>,
    },
    /// Two keys (`start-line`, `startLine`) name one argument.
    #[error("{first} and {second} name one argument, {name}: keep one")]
    TwoKeys {
        /// Where the first key is set.
        first: String,
        /// Where the second key is set.
        second: String,
        /// The argument.
        name: String,
    },
    /// `minimum` or `maximum` outside the range of an integer argument's type.
    #[error("{at} is {value}, but {name} is {is}: it must be an integer from {min} to {max}")]
    OutOfRange {
        /// Where the bound is set.
        at: String,
        /// The bound.
        value: Number,
        /// The argument.
        name: String,
        /// Its type, in words.
        is: &'static str,
        /// The type's least value.
        min: i128,
        /// The type's greatest value.
        max: i128,
    },
    /// `minimum` or `maximum` on an argument that is not a number.
    #[error(
        "{at} is {value}, but {name} is {is}: minimum and maximum are for integer and float arguments"
    )]
    BoundNotNumber {
        /// Where the bound is set.
        at: String,
        /// The bound.
        value: Number,
        /// The argument.
        name: String,
        /// Its type, in words.
        is: &'static str,
    },
    /// `enum` lists a value that is not a case of the argument's WIT `enum`.
    #[error(
        "{at} lists {value:?}, which is not a case of {name}: it must list cases of its enum ({})",
        cases.join(", ")
    )]
    NotACase {
        /// Where `enum` is set.
        at: String,
        /// The value.
        value: String,
        /// The argument.
        name: String,
        /// The cases of its enum.
        cases: Vec<String>,
    },
    /// `enum` on an argument that is neither a string nor a WIT `enum`.
    #[error("{at} is {shown}, but {name} is {is}: enum is for string and enum arguments")]
    EnumNotString {
        /// Where `enum` is set.
        at: String,
        /// Its values, as JSON.
        shown: String,
        /// The argument.
        name: String,
        /// Its type, in words.
        is: &'static str,
    },
    /// `enum` lists nothing.
    #[error("{at} is empty: it must list at least one value")]
    EnumEmpty {
        /// Where `enum` is set.
        at: String,
    },
    /// `enum` lists a value twice.
    #[error(
        "{at} lists {value:?} twice (items {first} and {second}): it must list each value once"
    )]
    EnumTwice {
        /// Where `enum` is set.
        at: String,
        /// The value.
        value: String,
        /// Its first item, from 1.
        first: usize,
        /// Its second item, from 1.
        second: usize,
    },
    /// `pattern` on an argument that is not a string.
    #[error("{at} is {pattern:?}, but {name} is {is}: pattern is for string arguments")]
    PatternNotString {
        /// Where `pattern` is set.
        at: String,
        /// The pattern.
        pattern: String,
        /// The argument.
        name: String,
        /// Its type, in words.
        is: &'static str,
    },
    /// `pattern` beside `enum`.
    #[error("{at} is {pattern:?} beside an enum: leave it out, the enum lists every value allowed")]
    PatternBesideEnum {
        /// Where `pattern` is set.
        at: String,
        /// The pattern.
        pattern: String,
    },
    /// A `pattern` that is not [`PATTERN_RULE`].
    #[error("{at} is {pattern:?}, which is not {PATTERN_RULE}: {why}")]
    Pattern {
        /// Where `pattern` is set.
        at: String,
        /// The pattern.
        pattern: String,
        /// Why. Not the `source`: its text is in the message.
        why: PatternError,
    },
    /// The policy's `minimum` above the maximum (the policy's or the WIT doc comment's).
    #[error("{at} is {min}, above the maximum of {name}, {max}: it must be at most {max}")]
    MinimumAboveMaximum {
        /// Where `minimum` is set.
        at: String,
        /// The minimum.
        min: Number,
        /// The argument.
        name: String,
        /// The maximum.
        max: Number,
    },
    /// The policy's `maximum` below the minimum (the WIT doc comment's).
    #[error("{at} is {max}, below the minimum of {name}, {min}: it must be at least {min}")]
    MaximumBelowMinimum {
        /// Where `maximum` is set.
        at: String,
        /// The maximum.
        max: Number,
        /// The argument.
        name: String,
        /// The minimum.
        min: Number,
    },
}

/// `names`, comma-separated; `none` when there are none.
fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}
