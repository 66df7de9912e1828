//! The files the configuration names as sources of secrets and keys are refused by every
//! file tool (docs/keys.md#secret-files): by name as key material (read_file, tail_file,
//! grep_files' path), never searched by grep_files (counted in skippedFiles), listed by
//! list_dir as key files are; and by identity (a hard link under another name) the host
//! refuses the open itself. No page, match or listing shows a character of the secret.

use serde_json::json;
use sluice_tests::Sandbox;

use crate::cache;

/// The secret: 19 characters, as in the report that found a secret's file served.
const SECRET: &str = "tok-9f2c4e7a1b3d5f6";

/// The built-in tools over a root holding the secret's file `token.txt`, a hard link to it
/// at `a/notes.log` and an ordinary file, with `token.txt` refused as the configuration's
/// secret file.
fn sandbox() -> Sandbox {
    let sb = Sandbox::with_policy(cache(), 65_536, |p| {
        let root = p.roots[0].dir.clone();
        std::fs::write(root.join("token.txt"), format!("{SECRET}\n")).unwrap();
        std::fs::create_dir(root.join("a")).unwrap();
        std::fs::hard_link(root.join("token.txt"), root.join("a/notes.log")).unwrap();
        p.refused_files = vec![root.join("token.txt")];
    });
    sb.write("a/plain.txt", "tok-: not the secret\n");
    sb
}

#[test]
fn a_secret_file_is_refused_by_name_and_a_hard_link_to_it_by_identity() {
    let sb = sandbox();
    sb.symlink("token.txt", "innocent.txt");
    for tool in ["read_file", "tail_file"] {
        // By name, and through a symlink (whose target's name is checked).
        for path in ["token.txt", "innocent.txt"] {
            assert_eq!(
                sb.err(tool, &json!({"path": path})),
                (
                    format!("refusing to read key material: {path}"),
                    "key-material".to_string()
                ),
                "{tool} {path}"
            );
        }
        // The same file under another name: the host refuses to open it.
        assert_eq!(
            sb.err(tool, &json!({"path": "a/notes.log"})),
            (
                "failed to read a/notes.log: permission denied".to_string(),
                "io".to_string()
            ),
            "{tool}"
        );
    }
    // Paged by offset, as through MCP: no offset shows a byte of it.
    for offset in [0, 5, 18] {
        let (_, kind) = sb.err("read_file", &json!({"path": "token.txt", "offset": offset}));
        assert_eq!(kind, "key-material");
        let (_, kind) = sb.err(
            "read_file",
            &json!({"path": "a/notes.log", "offset": offset}),
        );
        assert_eq!(kind, "io");
    }
}

#[test]
fn grep_never_searches_a_secret_file_and_list_dir_lists_it_as_a_key_file() {
    let sb = sandbox();
    // grep as an oracle: a prefix of the secret matches nothing in its file or the link.
    for pattern in ["tok-", "tok-9", SECRET] {
        let r = sb.ok("grep_files", &json!({"pattern": pattern}));
        let results = if pattern == "tok-" {
            json!([{"path":"a/plain.txt","line":1,"text":"tok-: not the secret"}])
        } else {
            json!([])
        };
        assert_eq!(
            r,
            json!({"path":".","count":results.as_array().unwrap().len(),"results":results,"truncated":false,"skippedFiles":2}),
            "{pattern}"
        );
    }
    assert_eq!(
        sb.err(
            "grep_files",
            &json!({"pattern": "tok", "path": "token.txt"})
        ),
        (
            "refusing to read key material: token.txt".to_string(),
            "key-material".to_string()
        )
    );
    let entries = |path: &str| sb.ok("list_dir", &json!({"path": path}))["entries"].clone();
    assert_eq!(
        entries("."),
        json!([
            {"name":"a","kind":"directory"},
            {"name":"token.txt","kind":"file","size":SECRET.len() + 1}
        ])
    );
    assert_eq!(
        entries("a"),
        json!([
            {"name":"notes.log","kind":"file","size":SECRET.len() + 1},
            {"name":"plain.txt","kind":"file","size":21}
        ])
    );
}
