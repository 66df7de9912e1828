//! `summarize_table` (guest-examples/python-csv-summary): a Python component built with
//! componentize-py, importing `sluice:tools/budget` and `wasi:filesystem/preopens`.

use serde_json::{Value, json};

use super::Example;

const TOOL: &str = "summarize_table";
const CAP: u32 = 65_536;

#[test]
fn python_csv_summary() {
    let Some(ex) = Example::load("python-csv-summary", "csv_summary", |_| {}) else {
        return;
    };
    // The schema comes from the WIT types; the description from the policy (componentize-py
    // keeps no doc comments in the component).
    insta::assert_json_snapshot!("csv_summary_tools", ex.schema());

    samples(&ex);
    formats(&ex);
    errors(&ex);
    pages_of_columns(&ex);
    // Loaded again (from the compiled cache) under a shorter timeout.
    stops_at_the_time_budget();
}

/// The example's `sample/` files, exactly.
fn samples(ex: &Example) {
    assert_eq!(
        ex.ok(TOOL, &json!({"path": "sales.csv"}), CAP),
        json!({"path":"sales.csv","format":"csv","rows":6,"columnCount":6,"columns":[
            {"name":"date","kind":"text","filled":6,"empty":0,"distinct":3,"top":[{"value":"2026-11-02","count":2},{"value":"2026-11-03","count":2},{"value":"2026-11-04","count":2}]},
            {"name":"region","kind":"text","filled":6,"empty":0,"distinct":4,"top":[{"value":"north","count":3},{"value":"south","count":1},{"value":"east","count":1}]},
            {"name":"product","kind":"text","filled":6,"empty":0,"distinct":3,"top":[{"value":"apple","count":3},{"value":"pear","count":2},{"value":"plum","count":1}]},
            {"name":"units","kind":"number","filled":5,"empty":1,"distinct":5,"min":4.0,"max":12.0,"mean":8.0,"top":[{"value":"10","count":1},{"value":"4","count":1},{"value":"6","count":1}]},
            {"name":"unit_price","kind":"number","filled":6,"empty":0,"distinct":4,"min":1.4,"max":3.0,"mean":1.983333,"top":[{"value":"1.50","count":2},{"value":"2.25","count":2},{"value":"3.00","count":1}]},
            {"name":"note","kind":"text","filled":2,"empty":4,"distinct":2,"top":[{"value":"late delivery","count":1},{"value":"box said \"fragile\"","count":1}]}
        ]})
    );
    // Only some columns, in the order asked, with fewer common values.
    assert_eq!(
        ex.ok(
            TOOL,
            &json!({"path": "sales.csv", "columns": ["unit_price", "region"], "top": 1}),
            CAP
        ),
        json!({"path":"sales.csv","format":"csv","rows":6,"columnCount":2,"columns":[
            {"name":"unit_price","kind":"number","filled":6,"empty":0,"distinct":4,"min":1.4,"max":3.0,"mean":1.983333,"top":[{"value":"1.50","count":2}]},
            {"name":"region","kind":"text","filled":6,"empty":0,"distinct":4,"top":[{"value":"north","count":3}]}
        ]})
    );
    // JSON Lines: keys become columns in order of appearance; null is empty; nested values
    // are shown as JSON.
    assert_eq!(
        ex.ok(TOOL, &json!({"path": "events.jsonl", "top": 2}), CAP),
        json!({"path":"events.jsonl","format":"json-lines","rows":4,"columnCount":6,"columns":[
            {"name":"ts","kind":"text","filled":4,"empty":0,"distinct":4,"top":[{"value":"2026-11-30T01:00:00Z","count":1},{"value":"2026-11-30T01:00:01Z","count":1}]},
            {"name":"level","kind":"text","filled":4,"empty":0,"distinct":3,"top":[{"value":"info","count":2},{"value":"error","count":1}]},
            {"name":"service","kind":"text","filled":4,"empty":0,"distinct":2,"top":[{"value":"api","count":3},{"value":"db","count":1}]},
            {"name":"ms","kind":"number","filled":3,"empty":1,"distinct":3,"min":9.0,"max":1530.0,"mean":517.0,"top":[{"value":"12","count":1},{"value":"1530","count":1}]},
            {"name":"error","kind":"text","filled":1,"empty":3,"distinct":1,"top":[{"value":"{\"code\":\"ECONNRESET\"}","count":1}]},
            {"name":"retry","kind":"text","filled":1,"empty":3,"distinct":1,"top":[{"value":"true","count":1}]}
        ]})
    );
}

/// TSV, a JSON array, a sniffed delimiter, a header-only file, long values.
fn formats(ex: &Example) {
    ex.write("t.tsv", "a\tb\n1\tx,y\n2\t\n");
    ex.write("t.txt", "a\tb\n1\tx,y\n2\t\n");
    let tsv = |path: &str| {
        json!({"path":path,"format":"tsv","rows":2,"columnCount":2,"columns":[
            {"name":"a","kind":"number","filled":2,"empty":0,"distinct":2,"min":1.0,"max":2.0,"mean":1.5,"top":[]},
            {"name":"b","kind":"text","filled":1,"empty":1,"distinct":1,"top":[]}
        ]})
    };
    assert_eq!(
        ex.ok(TOOL, &json!({"path": "t.tsv", "top": 0}), CAP),
        tsv("t.tsv")
    );
    assert_eq!(
        ex.ok(TOOL, &json!({"path": "t.txt", "top": 0}), CAP),
        tsv("t.txt")
    );
    ex.write(
        "a.json",
        r#"[{"n": 1, "ok": true}, {"n": 2.5, "ok": false, "s": ""}, {"s": "x"}]"#,
    );
    assert_eq!(
        ex.ok(TOOL, &json!({"path": "a.json", "top": 1}), CAP),
        json!({"path":"a.json","format":"json","rows":3,"columnCount":3,"columns":[
            {"name":"n","kind":"number","filled":2,"empty":1,"distinct":2,"min":1.0,"max":2.5,"mean":1.75,"top":[{"value":"1","count":1}]},
            {"name":"ok","kind":"text","filled":2,"empty":1,"distinct":2,"top":[{"value":"true","count":1}]},
            {"name":"s","kind":"text","filled":1,"empty":2,"distinct":1,"top":[{"value":"x","count":1}]}
        ]})
    );
    ex.write("header.csv", "only,a header\n");
    assert_eq!(
        ex.ok(TOOL, &json!({"path": "header.csv"}), CAP),
        json!({"path":"header.csv","format":"csv","rows":0,"columnCount":2,"columns":[
            {"name":"only","kind":"empty","filled":0,"empty":0,"distinct":0,"top":[]},
            {"name":"a header","kind":"empty","filled":0,"empty":0,"distinct":0,"top":[]}
        ]})
    );
    // A value is shown cut to 100 characters and `…`; counted whole.
    ex.write("long.csv", format!("v\n{}\n", "é".repeat(300)));
    let r = ex.ok(TOOL, &json!({"path": "long.csv"}), CAP);
    assert_eq!(
        r["columns"][0]["top"],
        json!([{"value": format!("{}…", "é".repeat(100)), "count": 1}])
    );
}

fn errors(ex: &Example) {
    let err = |args: Value, kind: &str, message: &str| {
        let v = ex.err(TOOL, &args, CAP);
        assert_eq!(
            v,
            json!({"ok": false, "error": message, "kind": kind}),
            "{args}"
        );
    };
    err(
        json!({"path": "nope.csv"}),
        "not-found",
        "no such file or directory: nope.csv",
    );
    err(
        json!({"path": "../outside.csv"}),
        "outside-root",
        "path is outside the root: ../outside.csv; give a path relative to the root, without `..` above it",
    );
    err(
        json!({"path": "/etc/passwd"}),
        "outside-root",
        "path is outside the root: /etc/passwd; give a path relative to the root, without `..` above it",
    );
    err(
        json!({"path": "a\u{0}b.csv"}),
        "invalid-argument",
        "path holds a NUL character: a\u{0}b.csv",
    );
    ex.mkdir("dir.csv");
    err(
        json!({"path": "dir.csv"}),
        "wrong-kind",
        "dir.csv is a directory, not a table file",
    );
    ex.write("bin.csv", b"a,b\n\0\x01\n");
    err(
        json!({"path": "bin.csv"}),
        "binary-file",
        "bin.csv holds a NUL byte in its first 8 KiB; only text tables are read",
    );
    err(
        json!({"path": "sales.csv", "columns": ["price"]}),
        "invalid-argument",
        "no column named price; the columns are: date, region, product, units, unit_price, note",
    );
    err(
        json!({"path": "sales.csv", "top": 11}),
        "invalid-argument",
        "top must be at most 10; got 11",
    );
    err(
        json!({"path": "sales.csv", "startColumn": 6}),
        "invalid-argument",
        "startColumn must be less than the number of columns (6); got 6",
    );
    err(
        json!({"path": "sales.csv", "root": "logs"}),
        "invalid-argument",
        "unknown root logs; this tool's roots are: data",
    );
    ex.write("bad.jsonl", "{\"a\": 1}\n[1]\n");
    err(
        json!({"path": "bad.jsonl"}),
        "invalid-argument",
        "bad.jsonl line 2 is not a JSON object",
    );
    // A path so long that no page is left: the tool asks the host and says so.
    let long = format!("{}.csv", "d".repeat(700));
    let v = ex.err(TOOL, &json!({"path": long}), 1024);
    assert_eq!(v["kind"], "page-too-small", "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .starts_with("the result cannot fit: agent.max_tool_result_bytes is 1024 bytes"),
        "{v}"
    );
    // The host checks types before the guest runs.
    let v = ex.err(TOOL, &json!({"path": "sales.csv", "top": -1}), CAP);
    assert_eq!(v["kind"], "invalid-argument", "{v}");
}

/// A wide table under a small cap: pages of columns that tile the table, each within the
/// page budget (half the cap).
fn pages_of_columns(ex: &Example) {
    let names: Vec<String> = (0..30).map(|i| format!("measurement_{i:02}")).collect();
    let mut csv = names.join(",") + "\n";
    for row in 0..20 {
        let values: Vec<String> = (0..30).map(|c| format!("{}", row * 100 + c)).collect();
        csv += &(values.join(",") + "\n");
    }
    ex.write("wide.csv", csv);
    let pages = ex.pages(
        TOOL,
        &json!({"path": "wide.csv"}),
        1024,
        "nextColumn",
        "startColumn",
        30,
    );
    assert!(pages.len() > 5, "{} pages", pages.len());
    let mut seen = Vec::new();
    for page in &pages {
        assert!(
            page.to_string().len() <= 512,
            "a page within the page budget: {page}"
        );
        for col in page["columns"].as_array().unwrap() {
            assert_eq!(col["kind"], "number");
            assert_eq!(col["filled"], 20);
            seen.push(col["name"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(seen, names, "every column once, in order");
}

/// The time budget: a large file under a 2 s timeout stops after 1.6 s (80%) and says so,
/// with counts of the rows it read. How many rows 1.6 s reads depends on the machine (400,000
/// took about 5 s on one and under 1.6 s on another), so the file grows fourfold until it
/// is too large to read in time; a file read whole must be summarised whole.
fn stops_at_the_time_budget() {
    let ex = Example::load("python-csv-summary", "csv_summary", |policy| {
        policy.insert("timeout_ms".into(), 2000.into());
    })
    .expect("built");
    for total in [400_000u64, 1_600_000, 6_400_000] {
        let mut csv = String::from("id,group\n");
        for i in 0..total {
            csv += &format!("{i},g{}\n", i % 7);
        }
        ex.write("big.csv", csv);
        let r = ex.ok(TOOL, &json!({"path": "big.csv", "top": 0}), CAP);
        let rows = r["rows"].as_u64().unwrap();
        assert_eq!(r["columns"][0]["filled"], rows, "{r}");
        assert_eq!(r["columns"][0]["max"], json!((rows - 1) as f64), "{r}");
        if r["stoppedBy"].is_null() {
            assert_eq!(rows, total, "read to the end: {r}");
            continue;
        }
        assert_eq!(r["stoppedBy"], "time", "{r}");
        assert!(rows > 0 && rows < total, "{r}");
        return;
    }
    panic!("6,400,000 rows were read within the 1.6 s time budget: the budget is not checked");
}
