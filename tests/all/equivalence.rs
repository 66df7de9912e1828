//! The component's observation equals `sluice_file_tools`'s native result for the same input:
//! `{"ok":true,"result":<serde_json of the native page>}` byte for byte (same fields, same
//! key order, same omissions), and the same message and kind for errors. This proves the
//! WIT lift in the host and the native serde agree.

use serde_json::{Value, json};
use sluice_file_tools::{
    Context, GrepFilesArgs, Limits, ListDirArgs, ReadFileArgs, Root, Roots, TailFileArgs, ToolError,
};
use sluice_tests::{Sandbox, fake_pem, num};

use crate::cache;

/// The native context matching the sandbox: one root called `root`, the sandbox's cap.
fn native(sb: &Sandbox) -> Context {
    Context::new(
        Roots::new(vec![Root::new("root", sb.root())]),
        Limits::new(sb.cap),
    )
}

/// Calls `$tool` through the component and natively (`$run` with `$args` deserialised into
/// `$ty`) and asserts the two agree exactly; evaluates to the observation, parsed. (A macro:
/// a generic function would need the `serde` traits, which this crate does not depend on.)
macro_rules! same {
    ($sb:expr, $tool:expr, $args:expr, $run:path, $ty:ty) => {{
        let sb: &Sandbox = $sb;
        let args: Value = $args;
        let obs = sb.checked($tool, &args);
        let typed: $ty = serde_json::from_value(args.clone()).expect("the pager accepts the arguments");
        let expected = match $run(&native(sb), &typed) {
            Ok(page) => {
                let text = serde_json::to_string(&page).unwrap();
                let parsed: Value = serde_json::from_str(obs.text()).unwrap();
                assert_eq!(parsed["result"], serde_json::to_value(&page).unwrap(), "{} {args}", $tool);
                format!(r#"{{"ok":true,"result":{text}}}"#)
            }
            Err::<_, ToolError>(e) => json!({"ok": false, "error": e.message, "kind": e.kind.as_str()}).to_string(),
        };
        assert_eq!(obs.text(), expected, "{} {args}", $tool);
        serde_json::from_str::<Value>(obs.text()).unwrap()
    }};
}

#[test]
fn read_file_matches_native() {
    let sb = Sandbox::new(cache(), 2048);
    sb.write("f.txt", num(500));
    sb.write("crlf.txt", "one\r\ntwo\nthree");
    sb.write("bad.txt", b"ok\n\xE9\x80 cut\n\xFF\n");
    sb.write("long.txt", format!("{}\n", "\"q\"\t".repeat(1000)));
    sb.write("bin.dat", b"\0\0");
    sb.write("k.txt", fake_pem("", 2));
    for args in [
        json!({"path": "crlf.txt"}),
        json!({"path": "f.txt"}),
        json!({"path": "f.txt", "startLine": 49, "offset": 960}),
        json!({"path": "f.txt", "offset": 970}),
        json!({"path": "f.txt", "startLine": 499}),
        json!({"path": "f.txt", "startLine": 600}),
        json!({"path": "f.txt", "lineCount": 3}),
        json!({"path": "bad.txt"}),
        json!({"path": "long.txt"}),
        json!({"path": "long.txt", "startLine": 1, "offset": 1000}),
        json!({"path": "f.txt", "offset": 10_001}),
        json!({"path": "bin.dat"}),
        json!({"path": "k.txt"}),
        json!({"path": "nope.txt"}),
        json!({"path": "../x"}),
        json!({"path": "f.txt", "root": "other"}),
    ] {
        same!(
            &sb,
            "read_file",
            args,
            sluice_file_tools::read_file,
            ReadFileArgs
        );
    }
}

#[test]
fn tail_file_matches_native() {
    let sb = Sandbox::new(cache(), 2048);
    sb.write("f.txt", num(1000));
    sb.write("one.txt", format!("start{}end\n", "é".repeat(5000)));
    sb.write("ctl.txt", format!("{}\n", "\u{1}".repeat(40)).repeat(200));
    sb.write("k.txt", format!("a\n{}b\n", fake_pem("EC ", 2)));
    for args in [
        json!({"path": "f.txt"}),
        json!({"path": "f.txt", "lines": 3}),
        json!({"path": "f.txt", "lines": 5000}),
        json!({"path": "one.txt", "lines": 1}),
        json!({"path": "ctl.txt", "lines": 5000}),
        json!({"path": "k.txt", "lines": 1}),
        json!({"path": "k.txt", "lines": 2}),
    ] {
        same!(
            &sb,
            "tail_file",
            args,
            sluice_file_tools::tail_file,
            TailFileArgs
        );
    }
}

#[test]
fn grep_files_matches_native() {
    let sb = Sandbox::new(cache(), 4096);
    sb.write(
        "a/1.txt",
        format!("{}\n{}", "error ".repeat(200), "error here\n".repeat(100)),
    );
    sb.write("a/2.txt", "no\nerror two\n");
    sb.write("b.bin", b"error\0");
    sb.write("wide.txt", format!("{}\n", "漢".repeat(2000)));
    let first = same!(
        &sb,
        "grep_files",
        json!({"pattern": "error"}),
        sluice_file_tools::grep_files,
        GrepFilesArgs
    );
    let cursor = first["result"]["nextCursor"].clone();
    assert!(cursor.is_string());
    same!(
        &sb,
        "grep_files",
        json!({"pattern": "error", "cursor": cursor}),
        sluice_file_tools::grep_files,
        GrepFilesArgs
    );
    for args in [
        json!({"pattern": "ERROR", "caseSensitive": true}),
        json!({"pattern": "two", "path": "a", "glob": "*.txt"}),
        json!({"pattern": "error", "maxResults": 2}),
        json!({"pattern": "漢"}),
        json!({"pattern": "("}),
        json!({"pattern": "x", "path": "missing"}),
        json!({"pattern": "x", "cursor": "g1.0.0.0000000000000000"}),
    ] {
        same!(
            &sb,
            "grep_files",
            args,
            sluice_file_tools::grep_files,
            GrepFilesArgs
        );
    }
}

#[test]
fn list_dir_matches_native() {
    let sb = Sandbox::new(cache(), 1024);
    for i in 0..40 {
        sb.write(&format!("d/file{i:02}.txt"), "x".repeat(i));
    }
    sb.mkdir("d/sub");
    sb.symlink("file00.txt", "d/link");
    sb.write(&"\u{1}".repeat(200), "");
    let first = same!(
        &sb,
        "list_dir",
        json!({"path": "d"}),
        sluice_file_tools::list_dir,
        ListDirArgs
    );
    let next = first["result"]["nextOffset"].as_u64().unwrap();
    same!(
        &sb,
        "list_dir",
        json!({"path": "d", "offset": next}),
        sluice_file_tools::list_dir,
        ListDirArgs
    );
    for args in [
        json!({}),
        json!({"path": "d", "offset": 43}),
        json!({"path": "d", "offset": 44}),
        json!({"path": "d/file01.txt"}),
    ] {
        same!(
            &sb,
            "list_dir",
            args,
            sluice_file_tools::list_dir,
            ListDirArgs
        );
    }
}

/// Pages read in sequence, through the component, where the host keeps each page's key carry
/// for the next (docs/keys.md#sequential-pages), equal the native pages read with the whole
/// look-back, through keys, cut armor and key-body runs; and a file changed between two pages
/// is judged on its whole look-back again.
#[test]
fn read_file_in_sequence_matches_native() {
    let sb = Sandbox::new(cache(), 8192);
    let line = |i: usize| format!("2026-12-07T12:00:00Z worker {i} handled the request\n");
    let mut log: String = (0..14_000).map(line).collect();
    // Deep in the file: a key, an armor line's tail at a page's look-back start, a run of
    // key-body lines, and an END line alone.
    for (at, text) in [
        (200_000, fake_pem("RSA", 12)),
        (330_000, "label PRIVATE KEY-----\n".to_string()),
        (420_000, "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY\n".repeat(40)),
        (520_000, "-----END EC PRIVATE KEY-----\n".to_string()),
    ] {
        log.replace_range(at..at + text.len(), &text);
    }
    let path = sb.write("app.log", &log);
    // A carry is kept only for a file unchanged for 2 seconds.
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    let mut offset = Some(140_000u64);
    let mut pages = 0;
    while let Some(at) = offset {
        let args = json!({"path": "app.log", "offset": at});
        let page = same!(
            &sb,
            "read_file",
            args,
            sluice_file_tools::read_file,
            ReadFileArgs
        );
        offset = match page["result"]["nextOffset"].as_u64() {
            Some(next) => Some(next),
            // A refusal: go on 4,000 bytes further, as a model might.
            None if page["ok"] == false => Some(at + 4_000).filter(|&n| n < log.len() as u64),
            None => None,
        };
        pages += 1;
    }
    assert_eq!(pages, 152);

    // The next page of a file whose look-back gained a key since the page before: refused.
    let first = sb.ok("read_file", &json!({"path": "app.log", "offset": 600_000}));
    let next = first["nextOffset"].as_u64().unwrap();
    let begin = "-----BEGIN RSA PRIVATE KEY-----\n";
    let at = next as usize - 60_000;
    log.replace_range(at..at + begin.len(), begin);
    std::fs::write(&path, &log).unwrap();
    let (message, kind) = sb.err("read_file", &json!({"path": "app.log", "offset": next}));
    assert_eq!(kind, "key-material");
    assert_eq!(
        message,
        "refusing to read key material: app.log holds a PEM private key at that position"
    );
}
