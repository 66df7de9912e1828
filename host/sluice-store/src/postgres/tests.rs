//! The PostgreSQL store's own unit tests (the shared behaviour is in `tests/store`).

use super::*;
use crate::{RunEnd, Store};

#[test]
fn lock_keys_are_stable_and_distinct() {
    assert_eq!(lock_key("s-1"), lock_key("s-1"));
    assert_ne!(lock_key("s-1"), lock_key("s-2"));
}

/// The connection a run holds its lock on asks the server to end it within 10 s of its
/// host going silent (docs/replicas.md#failover): the settings as that backend has them.
#[tokio::test]
async fn a_runs_connection_asks_the_server_to_notice_a_vanished_host() {
    let server = match std::env::var("SLUICE_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "SLUICE_TEST_POSTGRES_URL is not set, and CI=true"
            );
            return;
        }
    };
    let url = PgStore::create_scratch_database(&server).await.unwrap();
    let store = PgStore::connect(&url).await.unwrap();
    let id = store.create_session().await.unwrap().id;
    store.begin_run(&id, None).await.unwrap();
    let held = store.inner.held().get(&id).unwrap().conn.clone();
    let row = held
        .lock()
        .await
        .query_one(
            "SELECT current_setting('tcp_keepalives_idle'), current_setting('tcp_keepalives_interval'),
                    current_setting('tcp_keepalives_count'), current_setting('tcp_user_timeout')",
            &[],
        )
        .await
        .unwrap();
    let settings: [String; 4] = [row.get(0), row.get(1), row.get(2), row.get(3)];
    // Seconds, seconds, probes, milliseconds.
    assert_eq!(settings, ["5", "1", "5", "10000"]);
    drop(held);
    store
        .end_run(
            &id,
            &RunEnd::status(sluice_protocol::SessionStatus::Completed, None),
        )
        .await
        .unwrap();
    drop(store);
    PgStore::drop_scratch_database(&url).await.unwrap();
}
