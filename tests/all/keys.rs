//! Rows K1–K3 of docs/regressions.md and the key-material rules of docs/keys.md. Every key
//! is generated at test time from a fixed fake body.

use serde_json::json;
use sluice_tests::{Sandbox, fake_body_line, fake_pem};

use crate::cache;

/// The key-material names of K1, at the root and two levels down.
const KEY_NAMES: [&str; 10] = [
    "server.pem",
    "tls.key",
    "id_ed25519",
    "keys/x",
    ".ssh/config",
    "a/b/Server.PEM",
    "a/b/tls.KEY",
    "a/b/ID_ED25519",
    "a/b/keys/x",
    "a/b/.ssh/config",
];

/// K1: key-material names are refused by read_file and tail_file with the exact message,
/// never searched by grep_files (files counted as skipped, key directories pruned), and
/// listed by list_dir.
#[test]
fn k1_key_names_refused_not_searched_but_listed() {
    let sb = Sandbox::new(cache(), 65_536);
    for name in KEY_NAMES {
        sb.write(name, "secretline: not armor, refused by name\n");
    }
    sb.write("id_ed25519.pub", "secretline: a public key is fine\n");
    sb.write("a/b/notes.txt", "secretline: ordinary notes\n");
    for name in KEY_NAMES {
        for tool in ["read_file", "tail_file"] {
            let (msg, kind) = sb.err(tool, &json!({"path": name}));
            assert_eq!(
                msg,
                format!("refusing to read key material: {name}"),
                "{tool}"
            );
            assert_eq!(kind, "key-material", "{tool} {name}");
        }
    }
    assert_eq!(
        sb.ok("read_file", &json!({"path": "id_ed25519.pub"}))["endLine"],
        1
    );

    let r = sb.ok("grep_files", &json!({"pattern": "secretline"}));
    assert_eq!(
        r,
        json!({"path":".","count":2,"results":[
            {"path":"a/b/notes.txt","line":1,"text":"secretline: ordinary notes"},
            {"path":"id_ed25519.pub","line":1,"text":"secretline: a public key is fine"}
        ],"truncated":false,"skippedFiles":6})
    );
    // Names are checked on the resolved path too: a symlink to a key is refused.
    sb.symlink("server.pem", "innocent.txt");
    sb.symlink("keys", "innocent_dir");
    for path in ["innocent.txt", "innocent_dir/x"] {
        for tool in ["read_file", "tail_file"] {
            let (msg, kind) = sb.err(tool, &json!({"path": path}));
            assert_eq!(
                msg,
                format!("refusing to read key material: {path}"),
                "{tool}"
            );
            assert_eq!(kind, "key-material");
        }
    }
    // Naming a key file or a key directory as grep's path is refused.
    for path in ["server.pem", "keys", "a/b/.ssh", "a/b/keys/x"] {
        let (msg, kind) = sb.err(
            "grep_files",
            &json!({"pattern": "secretline", "path": path}),
        );
        assert_eq!(msg, format!("refusing to read key material: {path}"));
        assert_eq!(kind, "key-material");
    }

    let names = |path: &str| -> Vec<String> {
        sb.ok("list_dir", &json!({"path": path}))["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        names("."),
        [
            ".ssh",
            "a",
            "id_ed25519",
            "id_ed25519.pub",
            "innocent.txt",
            "innocent_dir",
            "keys",
            "server.pem",
            "tls.key"
        ]
    );
    assert_eq!(
        names("a/b"),
        [
            ".ssh",
            "ID_ED25519",
            "Server.PEM",
            "keys",
            "notes.txt",
            "tls.KEY"
        ]
    );
    assert_eq!(names("keys"), ["x"]);
}

/// K2: an inline PKCS#8 block in a YAML file: a page holding it is refused, a page after
/// it is not, and grep returns matches only from other files.
#[test]
fn k2_inline_block_in_config() {
    let sb = Sandbox::new(cache(), 65_536);
    let pem: String = fake_pem("", 4)
        .lines()
        .map(|l| format!("    {l}\n"))
        .collect();
    let yaml = format!("name: app\ntls:\n  key: |\n{pem}port: 8080\n");
    sb.write("app/config.yaml", &yaml);
    sb.write("app/other.yaml", "name: other\nport: 9090\n");
    let (msg, kind) = sb.err("read_file", &json!({"path": "app/config.yaml"}));
    assert_eq!(kind, "key-material");
    assert!(
        msg.starts_with("refusing to read key material: app/config.yaml"),
        "{msg}"
    );
    // Lines 1–3 end before the BEGIN line.
    let r = sb.ok(
        "read_file",
        &json!({"path": "app/config.yaml", "lineCount": 3}),
    );
    assert_eq!(r["content"], "name: app\ntls:\n  key: |\n");
    // The line after the END line (line 10) is ordinary text.
    let r = sb.ok(
        "read_file",
        &json!({"path": "app/config.yaml", "startLine": 10}),
    );
    assert_eq!(r["content"], "port: 8080\n");
    assert_eq!(r["totalLines"], 10);
    // A page starting inside the key (line 6, a body line) is refused.
    let (msg, kind) = sb.err(
        "read_file",
        &json!({"path": "app/config.yaml", "startLine": 6, "lineCount": 1}),
    );
    assert_eq!(kind, "key-material");
    assert!(msg.contains("at that position"), "{msg}");

    let r = sb.ok("grep_files", &json!({"pattern": "a", "path": "app"}));
    assert!(r["count"].as_u64().unwrap() > 0);
    for m in r["results"].as_array().unwrap() {
        assert_eq!(m["path"], "app/other.yaml", "{m}");
    }
    assert_eq!(r["skippedFiles"], 1);
    let r = sb.ok("grep_files", &json!({"pattern": "[A-Za-z0-9+/=]{16,}"}));
    assert_eq!(r["count"], 0);
}

/// K3: tail_file's window: refused when it holds the END line or ends inside a key.
#[test]
fn k3_tail_around_a_key() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write(
        "f.txt",
        format!("start\n{}line a\nline b\n", fake_pem("RSA ", 3)),
    );
    let (msg, kind) = sb.err("tail_file", &json!({"path": "f.txt", "lines": 3}));
    assert_eq!(kind, "key-material");
    assert!(
        msg.starts_with("refusing to read key material: f.txt"),
        "{msg}"
    );
    assert!(msg.contains("holds a PEM private key"), "{msg}");
    assert_eq!(
        sb.ok("tail_file", &json!({"path": "f.txt", "lines": 2})),
        json!({"path":"f.txt","truncated":false,"count":2,"lines":["line a","line b"]})
    );

    // A file ending two body lines after BEGIN.
    let open = format!(
        "start\n-----BEGIN RSA PRIVATE KEY-----\n{}\n{}\n",
        fake_body_line(0),
        fake_body_line(1)
    );
    sb.write("open.txt", &open);
    for lines in [1, 2, 200] {
        let (msg, kind) = sb.err("tail_file", &json!({"path": "open.txt", "lines": lines}));
        assert_eq!(kind, "key-material");
        assert!(
            msg.contains("ends inside a PEM private key"),
            "lines {lines}: {msg}"
        );
    }

    // BEGIN and 40 KiB of body: the window is all body lines, the BEGIN far behind it.
    let mut big = String::from("start\n-----BEGIN PRIVATE KEY-----\n");
    let mut i = 0;
    while big.len() < 40 * 1024 + 40 {
        big.push_str(&fake_body_line(i));
        big.push('\n');
        i += 1;
    }
    sb.write("big.txt", &big);
    let (msg, kind) = sb.err("tail_file", &json!({"path": "big.txt", "lines": 1}));
    assert_eq!(kind, "key-material");
    assert!(msg.contains("ends inside a PEM private key"), "{msg}");
}

/// docs/keys.md#the-look-back: a read_file page starting inside a key is refused even
/// when an END line follows; a page whose look-back is only key-body lines (not reaching
/// the file start) fails closed (docs/keys.md#fail-closed); ordinary text in the look-back
/// clears it.
#[test]
fn read_file_look_back_rules() {
    let sb = Sandbox::new(cache(), 65_536);
    sb.write("k.txt", format!("intro\n{}outro\n", fake_pem("EC ", 5)));
    // Line 4 is a body line; the page ends before the END line (line 8).
    let (msg, kind) = sb.err(
        "read_file",
        &json!({"path": "k.txt", "startLine": 4, "lineCount": 2}),
    );
    assert_eq!(kind, "key-material");
    assert!(
        msg.contains("holds a PEM private key at that position"),
        "{msg}"
    );
    // The same position by byte offset, without line numbers.
    let offset = "intro\n".len() + "-----BEGIN EC PRIVATE KEY-----\n".len() + 65;
    let (msg, kind) = sb.err(
        "read_file",
        &json!({"path": "k.txt", "offset": offset, "lineCount": 1}),
    );
    assert_eq!(kind, "key-material", "{msg}");
    assert_eq!(
        sb.ok("read_file", &json!({"path": "k.txt", "startLine": 9})),
        json!({"path":"k.txt","size":"intro\n".len() + fake_pem("EC ", 5).len() + 6,"offset":"intro\n".len() + fake_pem("EC ", 5).len(),"contentBytes":6,"content":"outro\n","startLine":9,"endLine":9,"totalLines":9})
    );

    // 200 KiB of body lines, no armor at all: reading from deep inside fails closed…
    let mut body = String::new();
    let mut i = 0;
    while body.len() < 200 * 1024 {
        body.push_str(&fake_body_line(i % 10_000));
        body.push('\n');
        i += 1;
    }
    sb.write("body.txt", &body);
    let deep = 150 * 1024 / 65 * 65;
    let (msg, kind) = sb.err("read_file", &json!({"path": "body.txt", "offset": deep}));
    assert_eq!(kind, "key-material");
    assert!(
        msg.starts_with("refusing to read key material: body.txt"),
        "{msg}"
    );
    // …and one ordinary line in the 128 KiB before the page start clears it.
    let mut mixed = body.clone();
    mixed.replace_range(
        deep - 65..deep - 1,
        &"ordinary text, not a key body line".repeat(2)[..64],
    );
    sb.write("mixed.txt", &mixed);
    let r = sb.ok(
        "read_file",
        &json!({"path": "mixed.txt", "offset": deep, "lineCount": 1}),
    );
    assert_eq!(r["content"].as_str().unwrap(), &mixed[deep..deep + 65]);
}
