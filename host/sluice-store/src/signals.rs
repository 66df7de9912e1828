//! Change signals: who waits for what ([`crate::Topic`]) and how they are woken. A store
//! signals its own changes at once; changes made by other processes arrive through
//! LISTEN/NOTIFY (PostgreSQL) or are found by the store's watcher (SQLite), which wakes
//! every subscription.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;

use crate::Topic;

/// The signals of one store.
#[derive(Default)]
pub(crate) struct Signals {
    topics: Mutex<HashMap<Topic, watch::Sender<u64>>>,
}

/// How waiting for a change ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Woken {
    /// A change was signalled.
    Signalled,
    /// The poll interval passed without a signal: check what no change announces (whether
    /// the runner of a run is still alive). Every committed change is signalled (by this
    /// store, by LISTEN/NOTIFY, or by the SQLite store's watcher).
    Polled,
}

/// A subscription to one topic: [`Subscription::changed`] returns when something changed
/// or the poll interval passed.
pub struct Subscription {
    rx: watch::Receiver<u64>,
    poll: Duration,
}

impl Subscription {
    /// Waits for a change about the topic, at most the store's poll interval (1 s). Read
    /// the store again after it returns [`Woken::Signalled`].
    pub async fn changed(&mut self) -> Woken {
        tokio::select! {
            r = self.rx.changed() => match r {
                Ok(()) => Woken::Signalled,
                // The store is gone: nothing more will be signalled; poll.
                Err(_) => {
                    tokio::time::sleep(self.poll).await;
                    Woken::Polled
                }
            },
            () = tokio::time::sleep(self.poll) => Woken::Polled,
        }
    }
}

impl Subscription {
    /// Waits for a change about the topic, with no poll: for a waiter with nothing to check
    /// while nothing changes. Never returns once the store is gone.
    pub async fn signalled(&mut self) {
        if self.rx.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

impl Signals {
    fn topics(&self) -> std::sync::MutexGuard<'_, HashMap<Topic, watch::Sender<u64>>> {
        self.topics.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A subscription to `topic` that polls every `poll`.
    pub(crate) fn subscribe(&self, topic: Topic, poll: Duration) -> Subscription {
        let mut topics = self.topics();
        if topics.len() >= 1024 {
            topics.retain(|_, tx| tx.receiver_count() > 0);
        }
        let rx = topics
            .entry(topic)
            .or_insert_with(|| watch::Sender::new(0))
            .subscribe();
        Subscription { rx, poll }
    }

    /// Wakes every subscription to `topic`.
    pub(crate) fn notify(&self, topic: &Topic) {
        let mut topics = self.topics();
        if let Some(tx) = topics.get(topic) {
            if tx.receiver_count() == 0 {
                topics.remove(topic);
            } else {
                tx.send_modify(|n| *n = n.wrapping_add(1));
            }
        }
    }

    /// The subscriptions alive now (those not yet dropped), over every topic. Forgets the
    /// topics nobody waits for any more.
    pub(crate) fn subscriptions(&self) -> usize {
        let mut topics = self.topics();
        topics.retain(|_, tx| tx.receiver_count() > 0);
        topics.values().map(watch::Sender::receiver_count).sum()
    }

    /// Wakes every subscription (after a reconnection, when notifications may have been
    /// missed; on SQLite, after another process committed a change).
    pub(crate) fn notify_all(&self) {
        for tx in self.topics().values() {
            tx.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// The topic a NOTIFY payload names: `e:<run>`, `c:<run>` or `s:<session>`.
    pub(crate) fn parse_payload(payload: &str) -> Option<Topic> {
        let (kind, id) = payload.split_once(':')?;
        let id = id.to_owned();
        Some(match kind {
            "e" => Topic::Events(id),
            "c" => Topic::Cancel(id),
            "s" => Topic::Runs(id),
            _ => return None,
        })
    }

    /// The NOTIFY payload of `topic`.
    pub(crate) fn payload(topic: &Topic) -> String {
        match topic {
            Topic::Events(id) => format!("e:{id}"),
            Topic::Cancel(id) => format!("c:{id}"),
            Topic::Runs(id) => format!("s:{id}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_notification_wakes_its_topic_only() {
        let signals = Signals::default();
        let poll = Duration::from_secs(3600);
        let mut a = signals.subscribe(Topic::Events("r-a".into()), poll);
        let mut b = signals.subscribe(Topic::Events("r-b".into()), Duration::from_millis(1));
        signals.notify(&Topic::Events("r-a".into()));
        assert_eq!(a.changed().await, Woken::Signalled);
        assert_eq!(b.changed().await, Woken::Polled);
        signals.notify(&Topic::Events("r-a".into()));
        a.signalled().await;
        for topic in [
            Topic::Events("r-1".into()),
            Topic::Cancel("r-1".into()),
            Topic::Runs("s-1".into()),
        ] {
            assert_eq!(
                Signals::parse_payload(&Signals::payload(&topic)),
                Some(topic)
            );
        }
        assert_eq!(Signals::parse_payload("x:1"), None);
    }

    #[test]
    fn dropped_subscriptions_are_forgotten() {
        let signals = Signals::default();
        let poll = Duration::from_secs(1);
        let a = signals.subscribe(Topic::Runs("s-1".into()), poll);
        let b = signals.subscribe(Topic::Runs("s-1".into()), poll);
        let c = signals.subscribe(Topic::Events("r-1".into()), poll);
        assert_eq!(signals.subscriptions(), 3);
        drop((a, c));
        assert_eq!(signals.subscriptions(), 1);
        assert_eq!(signals.topics().len(), 1);
        drop(b);
        assert_eq!(signals.subscriptions(), 0);
        assert_eq!(signals.topics().len(), 0);
    }
}
