//! The store's metric, through the `metrics` facade (free until a process installs a
//! recorder): `sluice_store_append_duration_seconds{store}`, the time of one
//! [`Store::append`](crate::Store::append) as its caller waits for it (the transaction, and
//! for SQLite the wait for the writer thread), `store` `sqlite` or `postgres`. Failed appends
//! are timed too.

use std::future::Future;
use std::time::Instant;

/// Awaits `append`, recording its duration under `store`.
pub(crate) async fn timed_append<T>(store: &'static str, append: impl Future<Output = T>) -> T {
    let started = Instant::now();
    let result = append.await;
    metrics::histogram!("sluice_store_append_duration_seconds", "store" => store)
        .record(started.elapsed().as_secs_f64());
    result
}
