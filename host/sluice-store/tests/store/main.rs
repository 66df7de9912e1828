//! Integration tests of the session store, as one binary: one suite, run against both
//! SQLite and PostgreSQL (`both!`). The PostgreSQL half needs `SLUICE_TEST_POSTGRES_URL`
//! (harness.rs); tests of one backend's own mechanics (the SQLite file, PostgreSQL's URL and
//! schema table) run against that backend alone.

// Test code: a panic is the assertion. clippy.toml lets `#[test]` functions unwrap; this
// lets the helpers they share do so too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

/// Runs `async fn $name(Kind)` as two tests, `$name::sqlite` and `$name::postgres`.
macro_rules! both {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    super::$name(crate::harness::Kind::Sqlite).await
                }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    super::$name(crate::harness::Kind::Postgres).await
                }
            }
        )*
    };
}

/// Helpers: a store of either kind in a fresh place, message builders.
mod harness;

/// Transcripts: every field round-trips, positions are gapless, changes are audited.
mod transcript;

/// Runs and approvals: one run per session, dead runners taken over, decisions.
mod runs;

/// Run events, cancellation and the run-time configuration.
mod events;

/// Tenancy: session owners, lists by owner, the actions log.
mod tenancy;

/// The SQLite file: creation, migrations on reopen, a schema from a newer Sluice, bad files.
mod schema;

/// A store on a read-only mount: read as it is, every write refused by name.
mod read_only;

/// PostgreSQL: the URL, an unreachable server, migrations, a schema from a newer Sluice.
mod postgres;

/// Appends from several tasks and connections at once lose and duplicate nothing.
mod concurrency;

/// A process killed with SIGKILL mid-append loses nothing it acknowledged.
mod crash;
