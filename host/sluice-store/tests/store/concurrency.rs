use std::collections::BTreeSet;
use std::sync::Arc;

use sluice_store::Store;

use crate::harness::{Harness, Kind, user};

/// Each writer appends `per_writer` messages `w{writer}-{i}` and returns the positions it
/// was given; then every position is checked against the transcript.
async fn check(store: &dyn Store, id: &str, given: Vec<Vec<u64>>, per_writer: usize) {
    let writers = given.len();
    let all: BTreeSet<u64> = given.iter().flatten().copied().collect();
    assert_eq!(all.len(), writers * per_writer, "no position given twice");
    assert_eq!(all, (1..=(writers * per_writer) as u64).collect(), "no gap");
    let transcript = store.messages(id).await.unwrap();
    assert_eq!(transcript.len(), writers * per_writer);
    for (writer, seqs) in given.iter().enumerate() {
        assert!(
            seqs.windows(2).all(|w| w[0] < w[1]),
            "a writer's messages keep its order"
        );
        for (i, seq) in seqs.iter().enumerate() {
            assert_eq!(
                transcript[*seq as usize - 1].message.content,
                format!("w{writer}-{i}")
            );
        }
    }
}

/// Appends from `stores` at once, `per_writer` each.
async fn append_at_once(stores: Vec<Arc<dyn Store>>, id: &str, per_writer: usize) -> Vec<Vec<u64>> {
    let tasks: Vec<_> = stores
        .into_iter()
        .enumerate()
        .map(|(writer, store)| {
            let id = id.to_string();
            tokio::spawn(async move {
                let mut seqs = Vec::new();
                for i in 0..per_writer {
                    seqs.push(
                        store
                            .append(&id, &user(&format!("w{writer}-{i}")))
                            .await
                            .unwrap(),
                    );
                }
                seqs
            })
        })
        .collect();
    let mut given = Vec::new();
    for task in tasks {
        given.push(task.await.unwrap());
    }
    given
}

async fn two_connections_appending_at_once(kind: Kind) {
    let Some(t) = Harness::new(kind, "two_connections_appending_at_once").await else {
        return;
    };
    let id = t.store.create_session().await.unwrap().id;
    // Each its own handle, as a second process or replica would have.
    let stores = vec![t.reopen().await, t.reopen().await];
    let given = append_at_once(stores, &id, 300).await;
    check(t.store.as_ref(), &id, given, 300).await;
}

async fn tasks_sharing_one_store(kind: Kind) {
    let Some(t) = Harness::new(kind, "tasks_sharing_one_store").await else {
        return;
    };
    let id = t.store.create_session().await.unwrap().id;
    let stores = (0..4).map(|_| t.store.clone()).collect();
    let given = append_at_once(stores, &id, 100).await;
    check(t.store.as_ref(), &id, given, 100).await;
}

both!(two_connections_appending_at_once, tasks_sharing_one_store);
