//! `wc` (guest-examples/c-wc): a C component (wasi-libc via zig, `wit-bindgen c` bindings,
//! the WASI preview1 reactor adapter), importing `sluice:tools/budget`.

use serde_json::{Value, json};

use super::Example;

const TOOL: &str = "wc";
const CAP: u32 = 65_536;

#[test]
fn c_wc() {
    let Some(ex) = Example::load("c-wc", "wc", |_| {}) else {
        return;
    };
    insta::assert_json_snapshot!("wc_tools", ex.schema());

    samples(&ex);
    errors(&ex);
    pages_of_files(&ex);
}

/// Counts as the Unix `wc -lwmc` gives them.
fn counts(path: &str, text: &[u8]) -> Value {
    let words = text
        .split(|b| b" \t\n\x0b\x0c\r".contains(b))
        .filter(|w| !w.is_empty())
        .count();
    let chars = text.iter().filter(|&&b| b & 0xC0 != 0x80).count();
    let longest = text
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l).len())
        .max()
        .unwrap_or(0);
    json!({
        "path": path,
        "lines": text.iter().filter(|&&b| b == b'\n').count(),
        "words": words,
        "chars": chars,
        "bytes": text.len(),
        "maxLineBytes": longest,
    })
}

/// The example's `sample/` files, exactly, and a larger file read in several chunks.
fn samples(ex: &Example) {
    assert_eq!(
        ex.ok(TOOL, &json!({"paths": ["poem.txt", "notes.txt"]}), CAP),
        json!({"files":[
            {"path":"poem.txt","lines":7,"words":21,"chars":110,"bytes":110,"maxLineBytes":20},
            {"path":"notes.txt","lines":2,"words":5,"chars":31,"bytes":34,"maxLineBytes":18}
        ],"totalLines":9,"totalWords":26,"totalBytes":144})
    );
    let mut big = Vec::new();
    for i in 0..40_000 {
        big.extend_from_slice(format!("ligne {i} ✓ — {}\n", "x".repeat(i % 90)).as_bytes());
    }
    big.extend_from_slice(b"no newline at the end");
    ex.write("sub/big.txt", &big);
    ex.write("empty.txt", "");
    let r = ex.ok(TOOL, &json!({"paths": ["sub/big.txt", "empty.txt"]}), CAP);
    assert_eq!(
        r["files"],
        json!([counts("sub/big.txt", &big), counts("empty.txt", b"")])
    );
    assert_eq!(r["totalBytes"], big.len());
}

fn errors(ex: &Example) {
    let err = |args: Value, kind: &str, message: &str| {
        assert_eq!(
            ex.err(TOOL, &args, CAP),
            json!({"ok": false, "error": message, "kind": kind}),
            "{args}"
        );
    };
    err(
        json!({"paths": ["poem.txt", "nope.txt"]}),
        "not-found",
        "no such file or directory: nope.txt",
    );
    err(
        json!({"paths": ["../poem.txt"]}),
        "outside-root",
        "path is outside the root: ../poem.txt; give a path relative to the root, without `..` above it or symlinks that leave it",
    );
    err(
        json!({"paths": ["/etc/passwd"]}),
        "outside-root",
        "path is outside the root: /etc/passwd; give a path relative to the root",
    );
    ex.mkdir("dir");
    err(
        json!({"paths": ["dir"]}),
        "wrong-kind",
        "dir is a directory; wc counts files",
    );
    err(
        json!({"paths": []}),
        "invalid-argument",
        "paths must name 1 to 100 files; got 0",
    );
    err(
        json!({"paths": vec!["poem.txt"; 101]}),
        "invalid-argument",
        "paths must name 1 to 100 files; got 101",
    );
    err(
        json!({"paths": ["poem.txt"], "offset": 1}),
        "invalid-argument",
        "offset must be less than the number of paths (1); got 1",
    );
    err(
        json!({"paths": ["poem.txt"], "root": "logs"}),
        "invalid-argument",
        "unknown root logs; this tool's roots are: data",
    );
    // A long path is quoted cut to 200 bytes (on a character boundary) and `…`.
    let long = format!("{}/{}.txt", "ü".repeat(90), "ü".repeat(60));
    let mut cut = 200;
    while !long.is_char_boundary(cut) {
        cut -= 1;
    }
    let v = ex.err(TOOL, &json!({"paths": [long]}), CAP);
    assert_eq!(
        v["error"],
        format!("no such file or directory: {}…", &long[..cut])
    );
}

/// 100 files with long names under a small cap: pages that tile the list, each within the
/// page budget, totals per page.
fn pages_of_files(ex: &Example) {
    let paths: Vec<String> = (0..100)
        .map(|i| format!("many/a-rather-long-file-name-for-paging-{i:03}.txt"))
        .collect();
    for (i, p) in paths.iter().enumerate() {
        ex.write(p, "word ".repeat(i));
    }
    let pages = ex.pages(
        TOOL,
        &json!({"paths": paths}),
        1024,
        "nextIndex",
        "offset",
        100,
    );
    assert!(pages.len() > 10, "{} pages", pages.len());
    let mut seen = Vec::new();
    for page in &pages {
        assert!(page.to_string().len() <= 512, "within the page: {page}");
        let files = page["files"].as_array().unwrap();
        let words: u64 = files.iter().map(|f| f["words"].as_u64().unwrap()).sum();
        assert_eq!(page["totalWords"], words);
        for f in files {
            let i = seen.len() as u64;
            assert_eq!(f["words"], i);
            assert_eq!(f["bytes"], 5 * i);
            seen.push(f["path"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(seen, paths, "every file once, in order");
}
