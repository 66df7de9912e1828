//! What the property tests generate: WIT types ([`types`]), JSON arguments for them
//! ([`values`]) and a policy's refinements of the arguments ([`refinements`]).

pub(crate) mod refinements;
pub(crate) mod types;
pub(crate) mod values;
