//! The agent loop through the crate's public API, as a newcomer drives it.

mod one_run;
