//! Native tests of `sluice-file-tools`: the reference rows and bug-report cases of
//! `docs/regressions.md` (rows I7–I11 included), the sandbox rules, property tests of the
//! cursors and the key rules.

// Test code: a panic is the assertion. clippy.toml lets `#[test]` functions unwrap; this
// lets the helpers they share do so too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod carry; // Sequential pages after a carry (docs/keys.md#sequential-pages).
mod deep_keys; // Deep keys of every shape: line endings, indentation, blanks, PGP headers, labels.
mod edge;
mod grep;
mod grep_seek; // Resumes that seek.
mod grep_source; // The walk through a host listing.
mod grep_whole_files; // The files a search reads through the host, announced ahead.
mod keys;
mod keys_and_paging_edges; // Rows I7–I11: keys in UTF-16, encrypted, split; paging edges; deep trees.
mod list;
mod props;
mod props_keys; // Properties of the key rules, `startLine` past the end, grep's lines.
mod read;
mod sandbox;
mod shape;
mod support;
mod tail;
