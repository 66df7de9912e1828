//! The cap on every observation (docs/observations.md#the-cap, docs/paging.md#page-budget and
//! the tiling of docs/paging.md#read_file-the-result): text whose escaped size differs from
//! its byte size, paged under several caps, always within the cap, never cut, and tiling the
//! file exactly.

use serde_json::{Value, json};
use sluice_tests::{Sandbox, escaped_len, json_len};

use crate::cache;

/// A deterministic file of 240 lines mixing characters that cost more once escaped
/// (`"`, `\`, tab, U+0001, CR), multi-byte characters, and a few lines longer than any page.
fn tricky_text() -> String {
    let pieces = [
        "plain ",
        "\"q\" ",
        "back\\slash ",
        "\ttab ",
        "\u{1}ctl ",
        "é ",
        "漢字 ",
        "😀 ",
        "x",
    ];
    let mut out = String::new();
    let mut seed = 12_345u64;
    for line in 0..240 {
        let len = match line % 40 {
            7 => 700,
            23 => 260,
            _ => 1 + (line * 7) % 23,
        };
        for _ in 0..len {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            out.push_str(pieces[(seed >> 33) as usize % pieces.len()]);
        }
        out.push_str(if line % 5 == 0 { "\r\n" } else { "\n" });
    }
    out.push_str("last line without newline é");
    out
}

fn page_bytes(cap: usize, path: &str) -> usize {
    (cap / 2).min(cap - escaped_len(path) - 256)
}

/// Following read_file from the start visits every byte once, each page within its budget,
/// every observation within the cap and uncut, for several caps.
#[test]
fn read_file_pages_tile_the_file_under_several_caps() {
    let text = tricky_text();
    for cap in [1024u32, 1500, 5000] {
        let sb = Sandbox::new(cache(), cap);
        sb.write("t.txt", &text);
        let page = page_bytes(cap as usize, "t.txt");
        let pages = sb.read_pages(&json!({"path": "t.txt"}), 2000);
        let mut joined = String::new();
        let mut line = 1;
        for p in &pages {
            let content = p["content"].as_str().unwrap();
            assert!(!content.is_empty());
            assert!(
                escaped_len(content) <= page,
                "cap {cap}: {} > {page}",
                escaped_len(content)
            );
            assert_eq!(p["offset"], joined.len(), "cap {cap}");
            assert_eq!(p["startLine"], line, "cap {cap} at {}", joined.len());
            joined.push_str(content);
            if let Some(next) = p.get("nextOffset") {
                assert_eq!(next, &json!(joined.len()));
                line = p["nextLine"].as_u64().unwrap();
                let cut = p.get("lineTruncated") == Some(&Value::Bool(true));
                assert_eq!(cut, !content.ends_with('\n'), "cap {cap}");
            }
        }
        assert_eq!(joined, text, "cap {cap}");
        assert_eq!(pages.last().unwrap()["totalLines"], 241);
    }
}

/// tail_file, grep_files and list_dir at the floor cap on the same text stay within the
/// page, and what they return is the file's own text.
#[test]
fn other_tools_at_the_floor_cap() {
    let text = tricky_text();
    let sb = Sandbox::new(cache(), 1024);
    sb.write("t.txt", &text);
    let lines: Vec<&str> = text.lines().collect();

    let t = sb.ok("tail_file", &json!({"path": "t.txt", "lines": 5000}));
    assert!(json_len(&t["lines"]) <= 512);
    let got: Vec<&str> = t["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(!got.is_empty());
    assert_eq!(got, lines[lines.len() - got.len()..]);
    assert_eq!(t["truncated"], true);

    // Every line that matches `.` comes back once, in order, across the pages.
    let pages = sb.grep_pages(&json!({"pattern": "."}), 1000);
    let mut seen = Vec::new();
    for p in &pages {
        assert!(json_len(&p["results"]) <= 512);
        for m in p["results"].as_array().unwrap() {
            let n = m["line"].as_u64().unwrap() as usize;
            let want = lines[n - 1];
            let got = m["text"].as_str().unwrap();
            if want.chars().count() > 500 {
                let head = got.strip_suffix('…').unwrap_or(got);
                assert!(want.starts_with(head), "line {n}");
            } else if p["count"] == 1 && p["truncated"] == true {
                assert!(want.starts_with(got), "line {n}");
            } else {
                assert_eq!(got, want, "line {n}");
            }
            seen.push(n);
        }
    }
    let want: Vec<usize> = (1..=lines.len())
        .filter(|&n| !lines[n - 1].is_empty())
        .collect();
    assert_eq!(seen, want);

    // Names that cost more escaped.
    let names = [
        "a \"quoted\" name",
        "back\\slash",
        "tab\tname",
        "é漢😀",
        "\u{1}ctl",
    ];
    for n in names {
        sb.write(&format!("d/{n}"), n);
    }
    let pages = sb.list_pages(&json!({"path": "d"}), 10);
    let mut listed: Vec<String> = Vec::new();
    for p in &pages {
        assert!(json_len(&p["entries"]) <= 512);
        listed.extend(
            p["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["name"].as_str().unwrap().to_string()),
        );
    }
    let mut sorted: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    sorted.sort();
    assert_eq!(listed, sorted);
}

/// Every observation, including errors whose message holds a long path, is within the cap.
#[test]
fn errors_with_long_paths_stay_within_the_cap() {
    let sb = Sandbox::new(cache(), 1024);
    let long = format!("{}/missing.txt", "\u{1}".repeat(200));
    for (tool, args) in [
        ("read_file", json!({"path": long})),
        ("tail_file", json!({"path": long})),
        ("grep_files", json!({"pattern": "x", "path": long})),
        ("list_dir", json!({"path": long})),
        (
            "read_file",
            json!({"path": format!("../{}", "é".repeat(2000))}),
        ),
    ] {
        let obs = sb.checked(tool, &args);
        assert!(
            obs.text().starts_with(r#"{"ok":false,"error":""#),
            "{tool}: {}",
            obs.text()
        );
        // Cut or not, the observation is valid UTF-8 of at most the cap.
        assert!(std::str::from_utf8(obs.text().as_bytes()).is_ok());
        if obs.truncated() {
            assert!(
                obs.text().contains("…[truncated; full result is "),
                "{}",
                obs.text()
            );
        }
    }
}
