//! Row L1 of docs/regressions.md, entry kinds, list paging and name cutting
//! (docs/paging.md#list_dir).

use serde_json::{Value, json};
use sluice_tests::{Sandbox, json_len};

use crate::cache;

/// L1: 120 entries with 8-character names at cap 1024: pages within the cap, no name cut,
/// the pages reassemble the sorted list.
#[test]
fn l1_pages_reassemble_the_sorted_list() {
    let sb = Sandbox::new(cache(), 1024);
    let mut names: Vec<String> = (0..120)
        .map(|i| format!("n{:03}{}", (i * 37) % 120, ["abcd", "wxyz"][i % 2]))
        .collect();
    // Created in an unsorted order; a few are directories.
    for (i, name) in names.iter().enumerate() {
        if i % 10 == 0 {
            sb.mkdir(name);
        } else {
            sb.write(name, "x".repeat(i));
        }
    }
    names.sort();
    assert!(names.iter().all(|n| n.len() == 8));
    let pages = sb.list_pages(&json!({}), 40);
    assert!(pages.len() > 1);
    let mut seen = Vec::new();
    for p in &pages {
        assert_eq!(p["total"], 120);
        assert_eq!(p["path"], ".");
        assert!(json_len(&p["entries"]) <= 512);
        for e in p["entries"].as_array().unwrap() {
            assert!(e.get("nameTruncated").is_none(), "{e}");
            seen.push(e["name"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(seen, names);
    assert_eq!(pages[0]["offset"], 0);
}

/// Kinds and sizes; `offset` equal to the count is an empty page, past it an error.
#[test]
fn kinds_sizes_and_offsets() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("b.txt", "12345");
    sb.mkdir("a_dir");
    sb.symlink("b.txt", "c_link");
    sb.write("B_upper", "");
    let r = sb.ok("list_dir", &json!({}));
    assert_eq!(
        r,
        json!({"path":".","total":4,"offset":0,"count":4,"entries":[
            {"name":"B_upper","kind":"file","size":0},
            {"name":"a_dir","kind":"directory"},
            {"name":"b.txt","kind":"file","size":5},
            {"name":"c_link","kind":"symlink"}
        ]})
    );
    assert_eq!(
        sb.ok("list_dir", &json!({"path": "a_dir"})),
        json!({"path":"a_dir","total":0,"offset":0,"count":0,"entries":[]})
    );
    assert_eq!(
        sb.ok("list_dir", &json!({"offset": 4})),
        json!({"path":".","total":4,"offset":4,"count":0,"entries":[]})
    );
    let r = sb.ok("list_dir", &json!({"offset": 3}));
    assert_eq!(r["entries"], json!([{"name":"c_link","kind":"symlink"}]));
    let (msg, kind) = sb.err("list_dir", &json!({"offset": 5}));
    assert_eq!(kind, "invalid-argument");
    assert!(msg.contains('5') && msg.contains('4'), "{msg}");
    let (msg, kind) = sb.err("list_dir", &json!({"path": "missing"}));
    assert_eq!(kind, "not-found");
    assert!(msg.contains("missing"), "{msg}");
}

/// A name too long for a page on its own comes back cut, flagged on the entry, and the
/// cursor moves past it. 200 U+0001 cost 1200 escaped bytes; the page is 512; the entry
/// without its name costs 55 bytes, so 75 characters (450 bytes) fit.
#[test]
fn name_too_long_for_a_page_is_cut() {
    let sb = Sandbox::new(cache(), 1024);
    let long = "\u{1}".repeat(200);
    sb.write(&long, "");
    sb.write("z.txt", "");
    let first = sb.ok("list_dir", &json!({}));
    assert_eq!(
        first,
        json!({"path":".","total":2,"offset":0,"count":1,"entries":[
            {"name": "\u{1}".repeat(75), "kind":"file","size":0,"nameTruncated":true}
        ],"nextOffset":1})
    );
    let pages = sb.list_pages(&json!({}), 5);
    assert_eq!(pages.len(), 2);
    assert_eq!(
        pages[1]["entries"],
        json!([{"name":"z.txt","kind":"file","size":0}])
    );
    let last: &Value = &pages[1];
    assert!(last.get("nextOffset").is_none());
}
