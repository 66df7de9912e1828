//! Native tests of `sluice-pager`: the reference rows and bug-report cases of
//! `/work/shared/cases`, the sandbox rules, and property tests of the cursors.

mod edge;
mod grep;
mod keys;
mod list;
mod props;
mod read;
mod sandbox;
mod support;
mod tail;
