//! Integration tests of the SQLite session store, as one binary.

/// Helpers: a store in a temporary directory, a raw connection, message builders.
mod util;

/// Transcripts: every field round-trips, positions are gapless, changes are audited.
mod transcript;

/// Runs and approvals: one run per session, stale runs taken over, decisions.
mod runs;

/// The file: creation, migrations on reopen, a schema from a newer Sluice, bad files.
mod schema;

/// Appends from several threads and connections at once lose and duplicate nothing.
mod concurrency;

/// A process killed with SIGKILL mid-append loses nothing it acknowledged.
mod crash;
