//! What a component is to the host before it runs: where it comes from ([`source`]), what
//! it imports and whether the host provides it ([`imports`]), and its exported functions as
//! tools ([`reflect`]) with JSON schemas ([`schema`]), descriptions ([`docs`], [`mounts`]),
//! the policy's refinements of their arguments ([`refine`], refused with
//! [`refinement_error`]) and names ([`names`]);
//! [`inspect`] shows all of it for `sluice tools inspect`. Components of the component
//! model's async ABI (WASIp3) are refused by name (`async_abi`).

pub mod argument_error;
pub(crate) mod async_abi;
pub mod docs;
pub mod imports;
pub mod inspect;
pub mod mounts;
pub mod names;
pub mod pattern;
pub mod refine;
#[cfg(test)]
mod refine_tests;
pub mod refinement_error;
pub mod reflect;
pub mod schema;
pub mod source;
pub(crate) mod stand_in;

pub use names::MAX_TOOL_NAME_BYTES;
