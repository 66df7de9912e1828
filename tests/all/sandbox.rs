//! A component never reads outside its root: `..`, absolute paths, symlinks out (relative
//! and absolute targets, with and without a trailing slash) are `outside-root` errors.
//! Named roots: a second root by name, an unknown name listed against the real ones. Roots
//! are opened once per loaded component: a root replaced at its path is seen by later calls,
//! and a root removed fails them with its name.

use serde_json::{Value, json};
use sluice_runtime::RootGrant;
use sluice_tests::Sandbox;

use crate::cache;

/// Asserts that `tool` with `args` is an `outside-root` error saying so, and that nothing
/// of the secret leaks.
fn assert_outside(sb: &Sandbox, tool: &str, args: &Value) {
    let obs = sb.checked(tool, args);
    assert!(
        !obs.text().contains("TOPSECRET"),
        "{tool} {args}: {}",
        obs.text()
    );
    let v: Value = serde_json::from_str(obs.text()).unwrap();
    assert_eq!(v["ok"], false, "{tool} {args}: {v}");
    assert_eq!(v["kind"], "outside-root", "{tool} {args}: {v}");
    let msg = v["error"].as_str().unwrap();
    assert!(msg.contains("outside the root"), "{tool} {args}: {msg}");
}

/// A sandbox with `secret.txt` and `outside/inner.txt` beside the root (both holding
/// `TOPSECRET`), and symlinks in the root pointing at them.
fn sandbox_with_secrets() -> Sandbox {
    let sb = Sandbox::new(cache(), 65_536);
    std::fs::write(sb.outside("secret.txt"), "TOPSECRET\n").unwrap();
    std::fs::create_dir(sb.outside("outside")).unwrap();
    std::fs::write(sb.outside("outside/inner.txt"), "TOPSECRET inner\n").unwrap();
    sb.write("inside.txt", "fine\n");
    sb.symlink("../secret.txt", "rel_link");
    sb.symlink(sb.outside("secret.txt"), "abs_link");
    sb.symlink("../outside", "dir_link");
    sb.symlink(sb.outside("outside"), "abs_dir_link");
    sb.symlink("../../secret.txt", "sub/deep_link");
    sb.symlink("inside.txt", "ok_link");
    sb
}

#[test]
fn dot_dot_and_absolute_paths_are_outside() {
    let sb = sandbox_with_secrets();
    for path in [
        "../secret.txt",
        "sub/../../secret.txt",
        "..",
        "/etc/passwd",
        "/",
        "./../root/inside.txt",
    ] {
        assert_outside(&sb, "read_file", &json!({"path": path}));
        assert_outside(&sb, "tail_file", &json!({"path": path}));
        assert_outside(
            &sb,
            "grep_files",
            &json!({"pattern": "TOPSECRET", "path": path}),
        );
        assert_outside(&sb, "list_dir", &json!({"path": path}));
    }
    let host_path = sb.root().join("inside.txt");
    assert_outside(
        &sb,
        "read_file",
        &json!({"path": host_path.to_str().unwrap()}),
    );
    // `..` that stays inside the root is fine.
    assert_eq!(
        sb.ok("read_file", &json!({"path": "sub/../inside.txt"}))["path"],
        "inside.txt"
    );
}

#[test]
fn symlinks_out_of_the_root_are_outside() {
    let sb = sandbox_with_secrets();
    for path in ["rel_link", "abs_link", "sub/deep_link"] {
        assert_outside(&sb, "read_file", &json!({"path": path}));
        assert_outside(&sb, "tail_file", &json!({"path": path}));
        assert_outside(
            &sb,
            "grep_files",
            &json!({"pattern": "TOPSECRET", "path": path}),
        );
    }
    for dir in ["dir_link", "abs_dir_link"] {
        for path in [
            dir.to_string(),
            format!("{dir}/"),
            format!("{dir}/inner.txt"),
        ] {
            assert_outside(&sb, "read_file", &json!({"path": path}));
            assert_outside(&sb, "tail_file", &json!({"path": path}));
            assert_outside(&sb, "list_dir", &json!({"path": path}));
            assert_outside(
                &sb,
                "grep_files",
                &json!({"pattern": "TOPSECRET", "path": path}),
            );
        }
    }
    // A symlink inside the root is followed by read_file; the result shows the path asked.
    assert_eq!(
        sb.ok("read_file", &json!({"path": "ok_link"})),
        json!({"path":"ok_link","size":5,"offset":0,"contentBytes":5,"content":"fine\n","startLine":1,"endLine":1,"totalLines":1})
    );
    // grep over the whole root passes over every symlink (counted), never following one.
    let r = sb.ok("grep_files", &json!({"pattern": "TOPSECRET|fine"}));
    assert_eq!(
        r,
        json!({"path":".","count":1,"results":[{"path":"inside.txt","line":1,"text":"fine"}],"truncated":false,"skippedFiles":6})
    );
    // list_dir shows the links as symlinks without following them.
    let r = sb.ok("list_dir", &json!({}));
    let kinds: Vec<(String, String)> = r["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("abs_dir_link", "symlink"),
            ("abs_link", "symlink"),
            ("dir_link", "symlink"),
            ("inside.txt", "file"),
            ("ok_link", "symlink"),
            ("rel_link", "symlink"),
            ("sub", "directory"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
}

#[test]
fn second_root_by_name_and_unknown_root() {
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("o.txt"), "other root\n").unwrap();
    let sb = Sandbox::with_policy(cache(), 65_536, |p| {
        p.roots.push(RootGrant {
            name: "other".into(),
            dir: other.path().to_path_buf(),
            write: false,
        });
    });
    sb.write("o.txt", "first root\n");
    assert_eq!(
        sb.ok("read_file", &json!({"path": "o.txt"}))["content"],
        "first root\n"
    );
    assert_eq!(
        sb.ok("read_file", &json!({"path": "o.txt", "root": "root"}))["content"],
        "first root\n"
    );
    assert_eq!(
        sb.ok("read_file", &json!({"path": "o.txt", "root": "other"})),
        json!({"path":"o.txt","size":11,"offset":0,"contentBytes":11,"content":"other root\n","startLine":1,"endLine":1,"totalLines":1})
    );
    assert_eq!(
        sb.ok("tail_file", &json!({"path": "o.txt", "root": "other"}))["lines"],
        json!(["other root"])
    );
    assert_eq!(
        sb.ok("grep_files", &json!({"pattern": "root", "root": "other"})),
        json!({"path":".","count":1,"results":[{"path":"o.txt","line":1,"text":"other root"}],"truncated":false,"skippedFiles":0})
    );
    assert_eq!(
        sb.ok("list_dir", &json!({"root": "other"}))["entries"],
        json!([{"name":"o.txt","kind":"file","size":11}])
    );
    // The second root is a root of its own: `..` does not reach the first one.
    assert_outside(
        &sb,
        "read_file",
        &json!({"path": "../root/o.txt", "root": "other"}),
    );
    for (tool, args) in [
        ("read_file", json!({"path": "o.txt", "root": "nope"})),
        ("tail_file", json!({"path": "o.txt", "root": "nope"})),
        ("grep_files", json!({"pattern": "x", "root": "nope"})),
        ("list_dir", json!({"root": "nope"})),
    ] {
        let (msg, kind) = sb.err(tool, &args);
        assert_eq!(kind, "invalid-argument", "{tool}");
        assert!(
            msg.contains("root") && msg.contains("other") && msg.contains("nope"),
            "{tool}: {msg}"
        );
        assert_eq!(
            msg, r#"root must be one of: root, other; got "nope""#,
            "{tool}"
        );
    }
}

/// Names a component cannot see (not UTF-8) are counted, and never cost their neighbours.
#[test]
fn names_that_are_not_utf8_are_counted_not_fatal() {
    use std::os::unix::ffi::OsStrExt;
    let sb = Sandbox::new(cache(), 8192);
    sb.write("a/f.txt", "content\n");
    sb.write("z/f.txt", "content\n");
    std::fs::write(
        sb.root().join(std::ffi::OsStr::from_bytes(b"m\xff.txt")),
        "content\n",
    )
    .unwrap();
    let r = sb.ok("grep_files", &json!({"pattern": "content"}));
    assert_eq!(
        r,
        json!({"path": ".", "count": 2, "results": [
            {"path": "a/f.txt", "line": 1, "text": "content"},
            {"path": "z/f.txt", "line": 1, "text": "content"}
        ], "truncated": false, "skippedFiles": 1})
    );
    let r = sb.ok("list_dir", &json!({}));
    assert_eq!(
        r,
        json!({"path": ".", "total": 2, "offset": 0, "count": 2, "entries": [
            {"name": "a", "kind": "directory"},
            {"name": "z", "kind": "directory"}
        ], "withheld": 1})
    );
}

/// A file named like a PEM armor line is withheld from listings and passed over by grep,
/// instead of getting the whole page refused by the host's key scan.
#[test]
fn a_name_spelling_armor_does_not_block_the_directory() {
    let sb = Sandbox::new(cache(), 8192);
    sb.write("a.txt", "x\n");
    sb.write("-----BEGIN RSA PRIVATE KEY-----", "x\n");
    let r = sb.ok("list_dir", &json!({}));
    assert_eq!(
        r,
        json!({"path": ".", "total": 1, "offset": 0, "count": 1, "entries": [
            {"name": "a.txt", "kind": "file", "size": 2}
        ], "withheld": 1})
    );
    let r = sb.ok("grep_files", &json!({"pattern": "x"}));
    assert_eq!(
        (r["count"].as_u64(), r["skippedFiles"].as_u64()),
        (Some(1), Some(1))
    );
    // A tool name that spells armor is refused without repeating it.
    let obs = sb.call_raw("-----BEGIN RSA PRIVATE KEY-----", "{}");
    assert_eq!(
        obs.text(),
        r#"{"ok":false,"error":"refusing to return key material: the result of [PEM armor] holds a PEM private key","kind":"key-material"}"#
    );
}

/// A component's roots are opened when it is loaded and shared by its calls; a
/// root whose path comes to name another directory is opened again within the recheck
/// interval (1 s), and one that disappears fails the call with its name and path.
#[test]
fn a_replaced_root_is_seen_and_a_removed_one_named() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("a.txt", "old\n");
    assert_eq!(
        sb.ok("read_file", &json!({"path": "a.txt"}))["content"],
        "old\n"
    );
    let root = sb.root();
    std::fs::rename(&root, sb.dir.path().join("root.old")).unwrap();
    std::fs::create_dir(&root).unwrap();
    sb.write("a.txt", "new\n");
    // The interval is 1 s; 10 s of slack for a loaded 2-core machine.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let content = sb.ok("read_file", &json!({"path": "a.txt"}))["content"].clone();
        if content == "new\n" {
            break;
        }
        assert_eq!(content, "old\n");
        assert!(
            std::time::Instant::now() < deadline,
            "the replaced root was not seen"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::fs::remove_file(root.join("a.txt")).unwrap();
    std::fs::remove_dir(&root).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let (msg, kind) = loop {
        let v = sb.call_json("read_file", &json!({"path": "a.txt"}));
        if v["ok"] == false
            && v["error"]
                .as_str()
                .is_some_and(|e| e.starts_with("root root"))
        {
            break (v["error"].as_str().unwrap().to_string(), v["kind"].clone());
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the removed root still answers: {v}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(kind, "io");
    assert!(
        msg.starts_with(&format!(
            "root root ({}) is not available: ",
            root.display()
        )),
        "{msg}"
    );
}
