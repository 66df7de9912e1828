use std::collections::BTreeSet;
use std::sync::Arc;

use sluice_store::{SqliteStore, Store};

use crate::util::{temp_store, user};

/// Each writer appends `per_writer` messages `w{writer}-{i}` and returns the positions it
/// was given; then every position is checked against the transcript.
fn check(store: &SqliteStore, id: &str, given: Vec<Vec<u64>>, per_writer: usize) {
    let writers = given.len();
    let all: BTreeSet<u64> = given.iter().flatten().copied().collect();
    assert_eq!(all.len(), writers * per_writer, "no position given twice");
    assert_eq!(all, (1..=(writers * per_writer) as u64).collect(), "no gap");
    let transcript = store.messages(id).unwrap();
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

#[test]
fn two_connections_appending_at_once() {
    let t = temp_store();
    let id = t.store.create_session().unwrap().id;
    let per_writer = 300;
    let given: Vec<Vec<u64>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..2)
            .map(|writer| {
                let (path, id) = (&t.path, &id);
                scope.spawn(move || {
                    // Its own connection, as a second process would have.
                    let store = SqliteStore::open(path).unwrap();
                    (0..per_writer)
                        .map(|i| store.append(id, &user(&format!("w{writer}-{i}"))).unwrap())
                        .collect::<Vec<u64>>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    check(&t.store, &id, given, per_writer);
}

#[test]
fn threads_sharing_one_store() {
    let t = temp_store();
    let store = Arc::new(t.store);
    let id = store.create_session().unwrap().id;
    let per_writer = 100;
    let handles: Vec<_> = (0..4)
        .map(|writer| {
            let (store, id) = (Arc::clone(&store), id.clone());
            std::thread::spawn(move || {
                (0..per_writer)
                    .map(|i| store.append(&id, &user(&format!("w{writer}-{i}"))).unwrap())
                    .collect::<Vec<u64>>()
            })
        })
        .collect();
    let given = handles.into_iter().map(|h| h.join().unwrap()).collect();
    check(&store, &id, given, per_writer);
}
