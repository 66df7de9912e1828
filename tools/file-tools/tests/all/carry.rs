//! Sequential pages after a carry (docs/keys.md#sequential-pages): a page that starts where a
//! page of the same file version ended reads only the head of its look-back, and answers
//! exactly as a page read with its whole look-back does; a file changed between the pages is
//! judged on its whole look-back again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use proptest::prelude::*;
use sluice_file_tools::{
    Context, FileVersion, KeyCarries, KeyCarry, ReadFileArgs, ToolError, read_file,
};

use crate::support::{Fixture, fake_pem, obs};

/// Carries kept in memory, counting what was asked and found.
#[derive(Debug, Default)]
struct Kept {
    carries: Mutex<HashMap<(FileVersion, u64), KeyCarry>>,
    found: Mutex<u64>,
}

impl KeyCarries for Kept {
    fn recall(&self, file: &FileVersion, offset: u64) -> Option<KeyCarry> {
        let found = self.carries.lock().unwrap().get(&(*file, offset)).copied();
        *self.found.lock().unwrap() += u64::from(found.is_some());
        found
    }

    fn remember(&self, file: &FileVersion, offset: u64, carry: KeyCarry) {
        self.carries.lock().unwrap().insert((*file, offset), carry);
    }
}

/// Ordinary log lines, `len` bytes.
fn log_text(len: usize) -> String {
    let mut out = String::with_capacity(len + 64);
    let mut n = 0;
    while out.len() < len {
        out.push_str(&format!(
            "2026-12-07T12:00:{:02}Z GET /items/{n} 200 {}\n",
            n % 60,
            n * 7
        ));
        n += 1;
    }
    out.truncate(len);
    out
}

/// Follows `nextOffset` from `offset` to the end of the file, with `nextLine` when `line`
/// (the line `offset` is on) is given; on a refusal goes on 997 bytes further without a line,
/// as a model might. Every observation, in order.
fn page_through(ctx: &Context, path: &str, offset: u64, line: Option<u64>) -> Vec<String> {
    let mut out = Vec::new();
    let (mut offset, mut line) = (Some(offset), line);
    let size = std::fs::metadata(ctx.roots.pick(None).unwrap().resolve(path).unwrap().fs_path)
        .unwrap()
        .len();
    while let Some(at) = offset {
        let args = ReadFileArgs {
            path: path.into(),
            offset: Some(at),
            start_line: line,
            ..ReadFileArgs::default()
        };
        let result = read_file(ctx, &args);
        out.push(obs(&result));
        (offset, line) = match result {
            Ok(page) => (page.next_offset, page.next_line),
            Err(_) => ((at + 997 < size).then_some(at + 997), None),
        };
    }
    out
}

#[test]
fn pages_of_a_log_after_the_first_read_the_head_of_their_look_back_only() {
    let f = Fixture::new();
    f.write("app.log", log_text(1 << 20));
    let kept = Arc::new(Kept::default());
    let plain = f.ctx(8192);
    let carried = f.ctx(8192).with_key_carries(kept.clone());
    let expected = page_through(&plain, "app.log", 0, Some(1));
    assert_eq!(page_through(&carried, "app.log", 0, Some(1)), expected);
    // Every page after the first started after a carry.
    assert_eq!(*kept.found.lock().unwrap(), expected.len() as u64 - 1);
    assert_eq!(expected.len(), 264);
    // A startLine that is not the carried nextLine is judged on the whole look-back, and
    // refused as it is without a carry.
    let (&(_, offset), &KeyCarry { line }) = kept
        .carries
        .lock()
        .unwrap()
        .iter()
        .find(|((_, o), _)| *o > 300_000)
        .unwrap();
    let wrong = ReadFileArgs {
        path: "app.log".into(),
        offset: Some(offset),
        start_line: Some(3),
        ..ReadFileArgs::default()
    };
    assert!(line.unwrap() > 3);
    let refused = read_file(&carried, &wrong).unwrap_err();
    assert_eq!(
        obs::<()>(&Err(refused)),
        obs::<()>(&Err(read_file(&plain, &wrong).unwrap_err()))
    );
}

#[test]
fn a_file_changed_between_pages_is_judged_on_its_whole_look_back() {
    let f = Fixture::new();
    let log = log_text(400_000);
    let path = f.write("app.log", &log);
    let kept = Arc::new(Kept::default());
    let ctx = f.ctx(8192).with_key_carries(kept.clone());
    let first = read_file(
        &ctx,
        &ReadFileArgs {
            path: "app.log".into(),
            offset: Some(200_000),
            ..ReadFileArgs::default()
        },
    )
    .unwrap();
    let next = first.next_offset.unwrap();
    assert_eq!(kept.carries.lock().unwrap().len(), 1);
    // The same size, a key's BEGIN line and body 50 KiB before the next page, and a later
    // modification time: the carry belongs to the old version.
    let key = fake_pem("RSA", 20);
    let begin = key.find("\n-----END").unwrap() + 1;
    let at = next as usize - 50_000;
    let mut changed = log.into_bytes();
    changed[at..at + begin].copy_from_slice(&key.as_bytes()[..begin]);
    std::fs::write(&path, &changed).unwrap();
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(SystemTime::now() + Duration::from_secs(5))
        .unwrap();
    let second: Result<_, ToolError> = read_file(
        &ctx,
        &ReadFileArgs {
            path: "app.log".into(),
            offset: Some(next),
            ..ReadFileArgs::default()
        },
    );
    assert_eq!(
        second.unwrap_err().message,
        "refusing to read key material: app.log holds a PEM private key at that position"
    );
    assert_eq!(*kept.found.lock().unwrap(), 0);
}

/// Pieces of text the key rules treat specially.
fn piece() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "-----BEGIN RSA PRIVATE KEY-----\n",
        "-----END RSA PRIVATE KEY-----\n",
        "-----BEGIN EC PRIVATE\nKEY-----\n",
        "PRIVATE KEY-----\n",
        "Y-----",
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n",
        "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xt\r",
        "\\n",
        "\r\n",
        "-----",
        "label_chars-",
        "\0",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, failure_persistence: None, ..ProptestConfig::default() })]

    /// Whatever a file holds and wherever, paging through it after carries answers page for
    /// page, refusal for refusal, as paging with the whole look-back.
    #[test]
    fn paging_after_carries_answers_as_paging_with_the_look_back(
        pieces in prop::collection::vec((0usize..600_000, piece()), 0..6),
        cap in prop::sample::select(vec![2048u32, 8192, 65_536]),
        with_lines in any::<bool>(),
    ) {
        let mut text = log_text(600_000).into_bytes();
        for (at, piece) in &pieces {
            let at = (*at).min(text.len() - piece.len());
            text[at..at + piece.len()].copy_from_slice(piece.as_bytes());
        }
        let f = Fixture::new();
        f.write("mixed.log", &text);
        let plain = f.ctx(cap);
        let carried = f.ctx(cap).with_key_carries(Arc::new(Kept::default()));
        let from = 150_000;
        let line = with_lines.then(|| 1 + memchr::memchr_iter(b'\n', &text[..from]).count() as u64);
        prop_assert_eq!(
            page_through(&carried, "mixed.log", from as u64, line),
            page_through(&plain, "mixed.log", from as u64, line)
        );
    }
}
