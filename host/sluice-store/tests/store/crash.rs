//! The parent starts this test binary again as a child (`SLUICE_STORE_CHILD=1`) that
//! appends messages as fast as it can and prints `<acked> SEQ` after each append returns.
//! The parent kills it with SIGKILL once enough are acknowledged, at whatever point it
//! has reached (often mid-transaction, sometimes mid-checkpoint: every fifth message is
//! 100 KB, so the WAL passes its 1,000-page checkpoint threshold within each round),
//! reopens the store and checks that every acknowledged message is there, byte for byte,
//! and that there is nothing else but whole messages.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use std::sync::Arc;

use sluice_protocol::Message;
use sluice_store::{PgStore, SqliteStore, Store};

use crate::harness::{Harness, Kind, call, raw};

const CHILD_TEST: &str = "crash::child_appends_until_killed";

/// What the child prints before each acknowledged position. It may share a line with
/// the test harness's own output (`test … ... ` has no newline before the test runs).
const ACK: &str = "<acked> ";

/// Message `seq` of the crash session: sizes and shapes vary with `seq`.
fn payload(seq: u64) -> Message {
    let created_at = format!("2026-11-30T08:00:00.{:03}Z", seq % 1000);
    match seq % 5 {
        0 => Message::tool(
            format!("call_{seq}"),
            format!("{seq}:{}", "ünïcödé ✓ 🦀 ".repeat(100 * 1024 / 22)),
            created_at,
        ),
        1 => Message::user(
            format!("prompt {seq} — {}", "p".repeat((seq % 97) as usize)),
            created_at,
        ),
        2 => Message::assistant(
            format!("thinking {seq}"),
            vec![call(
                &format!("call_{seq}"),
                "read_file",
                &format!("{{\"path\":\"f{seq}\"}}"),
            )],
            created_at,
        ),
        _ => Message::tool(
            format!("call_{seq}"),
            format!("{{\"ok\":true,\"seq\":{seq}}}"),
            created_at,
        ),
    }
}

/// Not a test on its own: the child half of `sigkill_mid_append_loses_nothing_acknowledged`.
/// Does nothing unless `SLUICE_STORE_CHILD=1`. Appends to the SQLite file
/// `SLUICE_STORE_CHILD_DB`, or the PostgreSQL database `SLUICE_STORE_CHILD_URL`.
#[tokio::test]
async fn child_appends_until_killed() {
    if std::env::var_os("SLUICE_STORE_CHILD").is_none_or(|v| v != "1") {
        return;
    }
    let id = std::env::var("SLUICE_STORE_CHILD_SESSION").unwrap();
    let store: Arc<dyn Store> = match std::env::var("SLUICE_STORE_CHILD_URL") {
        Ok(url) => Arc::new(PgStore::connect(&url).await.unwrap()),
        Err(_) => {
            let path = std::env::var_os("SLUICE_STORE_CHILD_DB").unwrap();
            Arc::new(SqliteStore::open(Path::new(&path)).unwrap())
        }
    };
    let mut next = store.session(&id).await.unwrap().message_count + 1;
    let mut out = std::io::stdout().lock();
    // Never outlive a parent that failed to kill us.
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let seq = store.append(&id, &payload(next)).await.unwrap();
        assert_eq!(seq, next);
        if writeln!(out, "{ACK}{seq}")
            .and_then(|()| out.flush())
            .is_err()
        {
            return; // The parent is gone.
        }
        next += 1;
    }
}

/// Starts the child, waits for `at_least` acknowledgements, kills it with SIGKILL and
/// returns the last position it acknowledged.
fn run_child_and_kill(t: &Harness, id: &str, at_least: u64) -> u64 {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([CHILD_TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env("SLUICE_STORE_CHILD", "1")
        .env("SLUICE_STORE_CHILD_DB", &t.path)
        .env("SLUICE_STORE_CHILD_SESSION", id)
        .env_remove("SLUICE_STORE_CHILD_URL")
        .stdout(Stdio::piped());
    if let Some(url) = &t.url {
        command.env("SLUICE_STORE_CHILD_URL", url);
    }
    let mut child = command.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut acked = 0;
    let mut count = 0;
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some((_, seq)) = line.split_once(ACK) {
            let seq: u64 = seq.parse().unwrap();
            assert!(seq > acked, "acknowledgements in order");
            acked = seq;
            count += 1;
            if count >= at_least {
                break;
            }
        }
    }
    child.kill().unwrap(); // SIGKILL on Unix.
    let status = child.wait().unwrap();
    assert!(
        count >= at_least,
        "the child stopped after {count} acknowledgements: {status}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            status.signal(),
            Some(9),
            "killed by SIGKILL, not finished: {status}"
        );
    }
    acked
}

async fn sigkill_mid_append_loses_nothing_acknowledged(kind: Kind) {
    let Some(t) = Harness::new(kind, "sigkill_mid_append_loses_nothing_acknowledged").await else {
        return;
    };
    let id = t.store.create_session().await.unwrap().id;
    let mut acked = 0;
    for at_least in [200, 260, 230] {
        let round_acked = tokio::task::block_in_place(|| run_child_and_kill(&t, &id, at_least));
        assert_eq!(
            round_acked,
            acked + at_least,
            "the child went on from the last stored message"
        );
        acked = round_acked;

        let store = t.reopen().await;
        let transcript = store.messages(&id).await.unwrap();
        assert!(
            transcript.len() as u64 >= acked,
            "acknowledged {acked}, found {}",
            transcript.len()
        );
        // At most a few appends beyond the last acknowledgement: committed, not yet
        // printed or read. Each is whole.
        for (i, stored) in transcript.iter().enumerate() {
            let seq = i as u64 + 1;
            assert_eq!(stored.seq, seq, "gapless");
            assert!(
                stored.message == payload(seq),
                "message {seq} differs from what was written"
            );
        }
        assert_eq!(
            store.session(&id).await.unwrap().message_count,
            transcript.len() as u64
        );
        if kind == Kind::Sqlite {
            let check: String = raw(&t.path)
                .query_row("PRAGMA integrity_check", [], |row| row.get(0))
                .unwrap();
            assert_eq!(check, "ok");
        }
        acked = transcript.len() as u64;
    }
}

both!(sigkill_mid_append_loses_nothing_acknowledged);
