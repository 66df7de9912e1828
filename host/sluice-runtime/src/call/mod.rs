//! Calling a tool: the [`toolbox::Toolbox`] (tool name → loaded component), the model's JSON
//! arguments lowered to component values ([`value`], [`integers`]), one call on a pool
//! thread (the private `invoke` module) and what a failure tells the model (`failure`), the
//! result lifted back to JSON, and the [`observation`]: the key scan and the cap, applied in
//! one place, with the hint of a cut marker ([`hint`]), what the call came to ([`status`]),
//! what it cost in its sandbox ([`facts`]) and its report (`report`).
//! [`live::LiveToolbox`] swaps a whole toolbox atomically for live reload. A script's tool
//! calls (code mode) are answered by `script` over the same path (`tool_set`, how each runs
//! in `run`), and recorded for the audit ([`script_record`]).

pub mod facts;
mod failure;
pub mod hint;
pub mod integers;
mod invoke;
pub mod live;
mod load;
pub mod observation;
mod report;
mod run;
mod script;
pub mod script_record;
pub mod status;
mod tool_set;
pub mod toolbox;
pub mod value;
