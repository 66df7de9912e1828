//! Native tests of `sluice-file-tools`: the reference rows and bug-report cases of
//! `docs/regressions.md`, the sandbox rules, property tests of the cursors and the key rules,
//! and the repros of issue 12.

// Test code: a panic is the assertion. clippy.toml lets `#[test]` functions unwrap; this
// lets the helpers they share do so too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod deep_keys; // Deep keys of every shape: line endings, indentation, blanks, PGP headers, labels.
mod edge;
mod grep;
mod grep_seek; // Issue 19 item 1: resumes that seek.
mod grep_source; // Issue 19: the walk through a host listing.
mod issue12; // Issue 12 items 7–11: keys in UTF-16, encrypted, split; paging edges; deep trees.
mod keys;
mod list;
mod props;
mod props_keys; // Properties of the key rules, `startLine` past the end, grep's lines.
mod read;
mod sandbox;
mod shape;
mod support;
mod tail;
