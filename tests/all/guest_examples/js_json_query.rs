//! `query_json` (guest-examples/js-json-query): a JavaScript component built with
//! componentize-js, importing `sluice:tools/budget` and `wasi:filesystem`, whose errors are
//! plain strings (`result<_, string>`: no `kind`).

use serde_json::{Value, json};

use super::Example;

const TOOL: &str = "query_json";
const CAP: u32 = 65_536;

#[test]
fn js_json_query() {
    let Some(ex) = Example::load("js-json-query", "json_query", |_| {}) else {
        return;
    };
    insta::assert_json_snapshot!("json_query_tools", ex.schema());

    samples(&ex);
    errors(&ex);
    pages_of_matches(&ex);
    a_value_larger_than_a_page(&ex);
}

fn query(ex: &Example, q: &str) -> Value {
    ex.ok(TOOL, &json!({"path": "shop.json", "query": q}), CAP)
}

/// Queries of the example's `sample/shop.json`, exactly.
fn samples(ex: &Example) {
    let s =
        |at: &str, text: &str| json!({"at": at, "kind": "string", "json": format!("\"{text}\"")});
    assert_eq!(
        query(ex, "$.store.books[*].title"),
        json!({"path":"shop.json","query":"$.store.books[*].title","total":3,"offset":0,"matches":[
            s("$.store.books[0].title", "Dune"),
            s("$.store.books[1].title", "Emma"),
            s("$.store.books[2].title", "Neuromancer"),
        ]})
    );
    assert_eq!(
        query(ex, "$..name")["matches"],
        json!([
            s("$.store.name", "Corner Books"),
            s("$.store.books[0].author.name", "Frank Herbert"),
            s("$.store.books[1].author.name", "Jane Austen"),
            s("$.store.books[2].author.name", "William Gibson"),
        ])
    );
    // `$` may be left out; negative indexes count from the end; bracketed names.
    assert_eq!(
        query(ex, "store.books[-1].tags[0]")["matches"],
        json!([s("$.store.books[2].tags[0]", "sf")])
    );
    assert_eq!(
        query(ex, "$.store['open']")["matches"],
        json!([{"at": "$.store.open", "kind": "boolean", "json": "true"}])
    );
    // Every member: kinds, sizes of arrays and objects.
    let all = query(ex, "$.store.*");
    let kinds: Vec<(&str, &str, Option<u64>)> = all["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["at"].as_str().unwrap(),
                m["kind"].as_str().unwrap(),
                m["size"].as_u64(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("$.store.name", "string", None),
            ("$.store.open", "boolean", None),
            ("$.store.books", "array", Some(3)),
            ("$.store.owner", "null", None),
        ]
    );
    // `offset` and `limit`: one match, and where the next one starts.
    assert_eq!(
        ex.ok(
            TOOL,
            &json!({"path": "shop.json", "query": "$.store.books[*].price", "offset": 1, "limit": 1}),
            CAP
        ),
        json!({"path":"shop.json","query":"$.store.books[*].price","total":3,"offset":1,
            "matches":[{"at":"$.store.books[1].price","kind":"number","json":"7"}],"nextOffset":2})
    );
    assert_eq!(query(ex, "$.nothing")["total"], 0);
    // JSON Lines: an array of the lines; member names that are not identifiers.
    ex.write("e.jsonl", "{\"a b\": 1}\n\n{\"a b\": [true]}\n");
    assert_eq!(
        ex.ok(
            TOOL,
            &json!({"path": "e.jsonl", "query": "$[*][\"a b\"]"}),
            CAP
        )["matches"],
        json!([
            {"at": "$[0][\"a b\"]", "kind": "number", "json": "1"},
            {"at": "$[1][\"a b\"]", "kind": "array", "size": 1, "json": "[true]"},
        ])
    );
}

fn errors(ex: &Example) {
    // A string error: the observation has no `kind`.
    let err = |args: Value, message: &str| {
        assert_eq!(
            ex.err(TOOL, &args, CAP),
            json!({"ok": false, "error": message}),
            "{args}"
        );
    };
    err(
        json!({"path": "nope.json"}),
        "no such file or directory: nope.json",
    );
    err(
        json!({"path": "../x.json"}),
        "path is outside the root: ../x.json; give a path relative to the root, without `..` above it or symlinks that leave it",
    );
    ex.mkdir("dir");
    err(
        json!({"path": "dir"}),
        "dir is a directory; give a JSON file",
    );
    err(
        json!({"path": "shop.json", "query": "$.store["}),
        "query $.store[ is not valid at [: `[` without `]`",
    );
    err(
        json!({"path": "shop.json", "query": "$.store[x]"}),
        "query $.store[x] is not valid at [x]: brackets hold `*`, an index or a quoted name",
    );
    err(
        json!({"path": "shop.json", "root": "logs"}),
        "unknown root logs; this tool's roots are: data",
    );
    err(
        json!({"path": "shop.json", "limit": 0}),
        "limit must be an integer of at least 1; got 0",
    );
    err(
        json!({"path": "shop.json", "query": "$.store.books[*]", "offset": 3}),
        "offset must be less than the number of matches (3); got 3",
    );
    ex.write("bad.json", "{\"a\": ");
    let v = ex.err(TOOL, &json!({"path": "bad.json"}), CAP);
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .starts_with("bad.json is not valid JSON: "),
        "{v}"
    );
}

/// 300 matches under a small cap: pages that tile the matches, each within the page budget.
fn pages_of_matches(ex: &Example) {
    ex.write("items.json", items_json());
    let pages = ex.pages(
        TOOL,
        &json!({"path": "items.json", "query": "$[*].id"}),
        1024,
        "nextOffset",
        "offset",
        100,
    );
    assert!(pages.len() > 10, "{} pages", pages.len());
    let mut ids = Vec::new();
    for page in &pages {
        assert_eq!(page["total"], 300);
        assert!(page.to_string().len() <= 512, "within the page: {page}");
        for m in page["matches"].as_array().unwrap() {
            let id: u64 = m["json"].as_str().unwrap().parse().unwrap();
            assert_eq!(m["at"], format!("$[{id}].id"));
            ids.push(id);
        }
    }
    assert_eq!(
        ids,
        (0..300).collect::<Vec<u64>>(),
        "every match once, in order"
    );
}

/// `items.json`: 300 objects, as compact JSON.
fn items_json() -> String {
    let items: Vec<Value> = (0..300)
        .map(|i| json!({"id": i, "name": format!("item-{i}")}))
        .collect();
    Value::Array(items).to_string()
}

/// A value larger than a page comes back cut, marked `cut`, its text a prefix of the value.
fn a_value_larger_than_a_page(ex: &Example) {
    let r = ex.ok(TOOL, &json!({"path": "items.json"}), 2048);
    let m = &r["matches"][0];
    assert_eq!(
        (&m["at"], &m["kind"], &m["size"], &m["cut"]),
        (&json!("$"), &json!("array"), &json!(300), &json!(true))
    );
    let text = m["json"].as_str().unwrap();
    let prefix = text.strip_suffix('…').expect("a cut value ends with …");
    assert!(
        prefix.len() > 500,
        "most of the page is used: {}",
        prefix.len()
    );
    assert!(items_json().starts_with(prefix), "{prefix}");
    assert!(r.to_string().len() <= 1024, "within the page budget");
}
