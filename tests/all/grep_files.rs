//! Rows G1–G4 of docs/regressions.md, grep paging and the walk's skip rules
//! (docs/paging.md#grep_files).

use serde_json::{Value, json};
use sluice_tests::{Sandbox, json_len};

use crate::cache;

/// G1: a 1200-char first match is cut to 500 chars + `…`; the page (2048 bytes at cap
/// 4096) then holds 32 more matches: 33 in all, results JSON 2036 bytes.
#[test]
fn g1_long_first_match_and_page_budget() {
    let sb = Sandbox::new(cache(), 4096);
    let first = "error ".repeat(200);
    sb.write("f.txt", format!("{first}\n{}", "error here\n".repeat(500)));
    let r = sb.ok("grep_files", &json!({"pattern": "error"}));
    assert_eq!(r["truncated"], true);
    let count = r["count"].as_u64().unwrap();
    assert!(count < 500);
    assert_eq!(count, 33);
    let results = r["results"].as_array().unwrap();
    assert_eq!(results.len(), 33);
    let text = results[0]["text"].as_str().unwrap();
    assert_eq!(text.chars().count(), 501);
    assert_eq!(text, format!("{}…", &first[..500]));
    assert_eq!(results[0]["line"], 1);
    for (i, m) in results.iter().enumerate().skip(1) {
        assert_eq!(
            m,
            &json!({"path": "f.txt", "line": i + 1, "text": "error here"})
        );
    }
    assert!(json_len(&r["results"]) <= 2048);
    assert_eq!(json_len(&r["results"]), 2036);
    assert_eq!(r["skippedFiles"], 0);
    // The cursor resumes right after line 33.
    let next = sb.ok(
        "grep_files",
        &json!({"pattern": "error", "cursor": r["nextCursor"]}),
    );
    assert_eq!(
        next["results"][0],
        json!({"path": "f.txt", "line": 34, "text": "error here"})
    );
}

/// G2: `maxResults` below and at the number of matches.
#[test]
fn g2_max_results() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("f.txt", "hit\n".repeat(3));
    let r = sb.ok("grep_files", &json!({"pattern": "hit", "maxResults": 2}));
    assert_eq!(r["count"], 2);
    assert_eq!(r["truncated"], true);
    let cursor = r["nextCursor"].as_str().expect("a nextCursor");
    assert!(cursor.len() <= 64, "{cursor}");
    assert_eq!(
        r["results"],
        json!([{"path":"f.txt","line":1,"text":"hit"},{"path":"f.txt","line":2,"text":"hit"}])
    );
    let rest = sb.ok(
        "grep_files",
        &json!({"pattern": "hit", "maxResults": 2, "cursor": cursor}),
    );
    assert_eq!(
        rest,
        json!({"path":".","count":1,"results":[{"path":"f.txt","line":3,"text":"hit"}],"truncated":false,"skippedFiles":0})
    );
    let r = sb.ok("grep_files", &json!({"pattern": "hit", "maxResults": 3}));
    assert_eq!(r["count"], 3);
    assert_eq!(r["truncated"], false);
    assert!(r.get("nextCursor").is_none());
}

/// G3: one match too large for the page (512 at cap 1024): its text is cut to fit, without
/// a marker: 475 bytes of room, 158 `漢`.
#[test]
fn g3_first_match_cut_to_fit() {
    let sb = Sandbox::new(cache(), 1024);
    sb.write("f.txt", format!("{}\n", "漢".repeat(600)));
    let r = sb.ok("grep_files", &json!({"pattern": "漢"}));
    assert_eq!(r["count"], 1);
    assert_eq!(r["truncated"], true);
    let text = r["results"][0]["text"].as_str().unwrap();
    assert!(
        !text.is_empty() && text.chars().all(|c| c == '漢'),
        "{text}"
    );
    assert_eq!(text, "漢".repeat(158));
    assert!(json_len(&r["results"]) <= 512);
    // After the cut match the search is over.
    let rest = sb.ok(
        "grep_files",
        &json!({"pattern": "漢", "cursor": r["nextCursor"]}),
    );
    assert_eq!(rest["count"], 0);
    assert_eq!(rest["truncated"], false);
}

/// G4: a 6 MB file (over 5 MiB) is skipped and counted; no match is not truncation.
#[test]
fn g4_file_over_5_mib_is_skipped() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("big.txt", "error\n".repeat(1_000_000));
    sb.write("small.txt", "nothing here\n");
    assert_eq!(
        sb.ok("grep_files", &json!({"pattern": "error"})),
        json!({"path":".","count":0,"results":[],"truncated":false,"skippedFiles":1})
    );
}

/// Following `nextCursor` returns every match exactly once, across files, in walk order.
#[test]
fn cursor_visits_every_match_once_across_files() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("a/1.txt", "hit 1\nmiss\nhit 2\n");
    sb.write("a/2.txt", "hit 3\nhit 4\n");
    sb.write("b.txt", "miss\nhit 5\nhit 6\nhit 7\n");
    sb.write("c/d/e.txt", "hit 8\n");
    let pages = sb.grep_pages(&json!({"pattern": "hit", "maxResults": 3}), 10);
    assert_eq!(pages.len(), 3);
    let all: Vec<Value> = pages
        .iter()
        .flat_map(|p| p["results"].as_array().unwrap().clone())
        .collect();
    assert_eq!(
        all,
        json!([
            {"path":"a/1.txt","line":1,"text":"hit 1"},
            {"path":"a/1.txt","line":3,"text":"hit 2"},
            {"path":"a/2.txt","line":1,"text":"hit 3"},
            {"path":"a/2.txt","line":2,"text":"hit 4"},
            {"path":"b.txt","line":2,"text":"hit 5"},
            {"path":"b.txt","line":3,"text":"hit 6"},
            {"path":"b.txt","line":4,"text":"hit 7"},
            {"path":"c/d/e.txt","line":1,"text":"hit 8"},
        ])
        .as_array()
        .unwrap()
        .clone()
    );
    for p in &pages[..2] {
        assert_eq!(p["truncated"], true);
        assert!(p.get("stoppedBy").is_none());
    }
    assert_eq!(pages[2]["truncated"], false);
    // A subdirectory as `path`: match paths stay relative to the root.
    let r = sb.ok("grep_files", &json!({"pattern": "hit", "path": "c"}));
    assert_eq!(
        r,
        json!({"path":"c","count":1,"results":[{"path":"c/d/e.txt","line":1,"text":"hit 8"}],"truncated":false,"skippedFiles":0})
    );
    // A cursor from another search is refused.
    let (msg, kind) = sb.err(
        "grep_files",
        &json!({"pattern": "miss", "cursor": pages[0]["nextCursor"]}),
    );
    assert_eq!(kind, "invalid-argument");
    assert!(msg.contains("cursor"), "{msg}");
}

/// The walk skips `.git`, `node_modules`, `.gitignore`d files (without a git repository),
/// binary files and symlinks; hidden files are searched; only files and symlinks count in
/// `skippedFiles`.
#[test]
fn walk_skip_rules() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write(".gitignore", "*.log\nbuild/\n");
    sb.write(".git/config", "hit in git\n");
    sb.write("node_modules/m/index.js", "hit in node_modules\n");
    sb.write("app.log", "hit in an ignored file\n");
    sb.write("build/out.txt", "hit in an ignored directory\n");
    sb.write(".hidden", "hit in a hidden file\n");
    sb.write("a.txt", "hit in a.txt\r\n");
    sb.write("bin.dat", b"hit\0binary\n");
    sb.symlink("a.txt", "link.txt");
    let r = sb.ok("grep_files", &json!({"pattern": "hit"}));
    assert_eq!(
        r,
        json!({"path":".","count":2,"results":[
            {"path":".hidden","line":1,"text":"hit in a hidden file"},
            {"path":"a.txt","line":1,"text":"hit in a.txt"}
        ],"truncated":false,"skippedFiles":2})
    );
}

/// `glob` filters file names; `caseSensitive` switches off the default case folding.
#[test]
fn glob_and_case() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("src/a.rs", "Todo: upper\ntodo: lower\n");
    sb.write("src/b.txt", "todo: text\n");
    let r = sb.ok("grep_files", &json!({"pattern": "todo", "glob": "*.rs"}));
    assert_eq!(r["count"], 2);
    assert!(
        r["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["path"] == "src/a.rs")
    );
    let r = sb.ok(
        "grep_files",
        &json!({"pattern": "todo", "glob": "*.rs", "caseSensitive": true}),
    );
    assert_eq!(
        r["results"],
        json!([{"path":"src/a.rs","line":2,"text":"todo: lower"}])
    );
    let r = sb.ok("grep_files", &json!({"pattern": "todo"}));
    assert_eq!(r["count"], 3);
}

/// `maxResults` above 500 counts as 500.
#[test]
fn max_results_clamped_to_500() {
    let sb = Sandbox::new(cache(), 1_048_576);
    sb.write("f.txt", "hit\n".repeat(600));
    let r = sb.ok("grep_files", &json!({"pattern": "hit", "maxResults": 1000}));
    assert_eq!(r["count"], 500);
    assert_eq!(r["truncated"], true);
    assert_eq!(r["results"][499]["line"], 500);
}

/// A missing path is an error, not an empty result; an over-long pattern is refused.
#[test]
fn missing_path_and_long_pattern() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("f.txt", "x\n");
    let (msg, kind) = sb.err("grep_files", &json!({"pattern": "x", "path": "nope"}));
    assert_eq!(kind, "not-found");
    assert!(msg.contains("nope"), "{msg}");
    let (msg, kind) = sb.err("grep_files", &json!({"pattern": "a".repeat(1001)}));
    assert_eq!(kind, "invalid-argument");
    assert!(msg.contains("1,000") || msg.contains("1000"), "{msg}");
    // 1,000 characters are fine.
    let r = sb.ok("grep_files", &json!({"pattern": "a".repeat(1000)}));
    assert_eq!(r["count"], 0);
}
