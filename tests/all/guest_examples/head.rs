//! `head` (guest-examples/{py,js,c,rust}-head): one tool, one world, in four languages, and
//! the tool author's guide (guest-examples/README.md) that shows them.
//!
//! The guide's snippets are the example files themselves: a fenced block after
//! `<!-- file: PATH -->` must be PATH byte for byte, or an exact excerpt of it. A block after
//! `<!-- command -->` is a `sluice …` command line; the block after the `<!-- output -->`
//! that follows it is its exact stdout (`<!-- output: /JSON/POINTER -->`: the JSON value
//! at that pointer in it). The tests here run every such command through the `sluice` binary, from the
//! repository root, and check more calls the guide does not show (errors, edge cases), which
//! every language must answer alike, byte for byte.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{Value, json};

use super::{built, repo};

/// The examples: directory, component stem, and the `prefix` their policies set.
const EXAMPLES: [(&str, &str, &str); 4] = [
    ("py-head", "py_head", "py"),
    ("js-head", "js_head", "js"),
    ("c-head", "c_head", "c"),
    ("rust-head", "rust_head", "rust"),
];

/// The guide, relative to the repository.
const GUIDE: &str = "guest-examples/README.md";

#[test]
fn py_head() {
    head("py-head", "py_head", "py");
}

#[test]
fn js_head() {
    head("js-head", "js_head", "js");
}

#[test]
fn c_head() {
    head("c-head", "c_head", "c");
}

#[test]
fn rust_head() {
    head("rust-head", "rust_head", "rust");
}

/// One annotated fenced block of the guide.
#[derive(Debug)]
enum Snippet {
    /// `<!-- file: PATH -->`: the block is PATH or an excerpt of it.
    File { path: String, text: String },
    /// `<!-- command -->` then `<!-- output[: KEY] -->`: a command line and its stdout.
    Command {
        line: String,
        key: Option<String>,
        output: String,
    },
}

/// The annotated blocks of the guide, in order. Panics on an annotation without a block, a
/// command without its output, or an unknown annotation.
fn snippets() -> Vec<Snippet> {
    let text = std::fs::read_to_string(repo().join(GUIDE)).expect("the guide");
    let mut lines = text.split_inclusive('\n').peekable();
    let mut out = Vec::new();
    // The fenced block that follows an annotation (blank lines between are allowed).
    let block = |lines: &mut std::iter::Peekable<std::str::SplitInclusive<'_, char>>,
                 what: &str| {
        while lines.peek().is_some_and(|l| l.trim().is_empty()) {
            lines.next();
        }
        let fence = lines.next().unwrap_or_default();
        assert!(
            fence.starts_with("```"),
            "{GUIDE}: {what} is not followed by a fenced block: {fence:?}"
        );
        let mut body = String::new();
        for line in lines.by_ref() {
            if line.trim_end() == "```" {
                return body;
            }
            body.push_str(line);
        }
        panic!("{GUIDE}: the block after {what} is not closed");
    };
    while let Some(line) = lines.next() {
        let Some(note) = line
            .trim()
            .strip_prefix("<!-- ")
            .and_then(|l| l.strip_suffix(" -->"))
        else {
            continue;
        };
        if let Some(path) = note.strip_prefix("file: ") {
            let text = block(&mut lines, note);
            out.push(Snippet::File {
                path: path.to_string(),
                text,
            });
        } else if note == "command" {
            let command = block(&mut lines, note);
            let line = command.replace("\\\n", " ");
            let next = lines
                .by_ref()
                .find(|l| !l.trim().is_empty())
                .unwrap_or_default();
            let note = next
                .trim()
                .strip_prefix("<!-- output")
                .and_then(|l| l.strip_suffix(" -->"))
                .unwrap_or_else(|| panic!("{GUIDE}: `{}` has no <!-- output -->", line.trim()));
            let key = note.strip_prefix(": ").map(str::to_string);
            let output = block(&mut lines, "output");
            out.push(Snippet::Command {
                line: line.trim().to_string(),
                key,
                output,
            });
        } else {
            assert!(
                !note.starts_with("output"),
                "{GUIDE}: <!-- {note} --> follows no command"
            );
        }
    }
    out
}

/// Every `<!-- file: … -->` block is that file or an exact excerpt of it, and every example
/// source is shown whole.
#[test]
fn guide_snippets_are_the_example_files() {
    let snippets = snippets();
    let mut whole = Vec::new();
    for s in &snippets {
        let Snippet::File { path, text } = s else {
            continue;
        };
        let file = std::fs::read_to_string(repo().join(path))
            .unwrap_or_else(|e| panic!("{GUIDE} shows {path}, which cannot be read: {e}"));
        if *text == file {
            whole.push(path.as_str());
        } else {
            assert!(
                file.contains(text.as_str()),
                "{GUIDE}: the block marked {path} is neither that file nor an excerpt of it:\n{text}"
            );
        }
    }
    let mut sources = vec![
        "guest-examples/py-head/app.py",
        "guest-examples/js-head/head.js",
        "guest-examples/c-head/head.c",
        "guest-examples/rust-head/src/lib.rs",
        "guest-examples/rust-head/Cargo.toml",
        "guest-examples/py-head/wit/world.wit",
        "guest-examples/py-head/sluice.toml",
    ];
    sources.retain(|s| !whole.contains(s));
    assert!(
        sources.is_empty(),
        "{GUIDE} does not show these whole: {sources:?}"
    );
    // One world: Python, C and Rust build the same file; JavaScript adds its imports.
    let world = |e: &str| {
        std::fs::read_to_string(repo().join(format!("guest-examples/{e}/wit/world.wit")))
            .expect("world.wit")
    };
    assert_eq!(world("py-head"), world("c-head"));
    assert_eq!(world("py-head"), world("rust-head"));
    let js = world("js-head");
    let common = world("py-head");
    let head = common
        .split("\n    export")
        .next()
        .expect("the world's start");
    assert!(
        js.starts_with(head),
        "js-head's world.wit starts as the others'"
    );
}

/// Every `<!-- command -->` of the guide is a `sluice` command on one of the examples, so
/// the example tests run it.
#[test]
fn guide_commands_are_the_ones_tested() {
    let commands: Vec<String> = snippets()
        .into_iter()
        .filter_map(|s| match s {
            Snippet::Command { line, .. } => Some(line),
            Snippet::File { .. } => None,
        })
        .collect();
    assert!(
        commands.len() >= 2 * EXAMPLES.len(),
        "{GUIDE} shows {} commands",
        commands.len()
    );
    for line in &commands {
        assert!(
            line.starts_with("sluice "),
            "{GUIDE}: `{line}` is not a sluice command"
        );
        assert!(
            EXAMPLES
                .iter()
                .any(|(dir, stem, _)| example_of(line, dir, stem)),
            "{GUIDE}: `{line}` runs none of the head examples, so no test runs it"
        );
    }
}

/// Whether the command `line` is about the example `dir` (component `stem`).
fn example_of(line: &str, dir: &str, stem: &str) -> bool {
    line.contains(&format!("guest-examples/{dir}/"))
        || line.contains(&format!("target/guest-examples/{stem}.wasm"))
}

/// Splits a command line as `sh` would for the guide's commands: words separated by spaces,
/// `'…'` quoting verbatim.
fn words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                word.get_or_insert_with(String::new);
            }
            c if c.is_whitespace() && !quoted => words.extend(word.take()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    assert!(!quoted, "unbalanced quote in `{line}`");
    words.extend(word);
    words
}

/// The `sluice` binary beside this test's (`target/<profile>/sluice`), which `cargo test`
/// of the workspace builds (host/sluice's tests need it). When it is missing: under
/// `CI=true` a failure; otherwise a line on stderr and `None`, and the test returns.
fn sluice_binary() -> Option<&'static Path> {
    static BINARY: OnceLock<Option<PathBuf>> = OnceLock::new();
    BINARY
        .get_or_init(|| {
            let exe = std::env::current_exe().expect("the test's path");
            let dir = exe
                .parent()
                .and_then(Path::parent)
                .expect("target/<profile>/deps/<test>");
            let binary = dir.join(format!("sluice{}", std::env::consts::EXE_SUFFIX));
            if binary.is_file() {
                return Some(binary);
            }
            let why = format!(
                "{} is not built (cargo build -p sluice, or cargo test of the workspace)",
                binary.display()
            );
            sluice_test_support::skip_or_fail(&why);
            None
        })
        .as_deref()
}

/// Runs `sluice ARGS` from the repository root (compiled components cached under the test
/// target dir) and returns its stdout; it must exit 0.
fn sluice(args: &[String]) -> String {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("guide");
    let binary = sluice_binary().expect("checked by the caller");
    let out = Command::new(binary)
        .current_dir(repo())
        .args(args)
        .env("XDG_CACHE_HOME", tmp.join("cache"))
        .env("XDG_DATA_HOME", tmp.join("data"))
        .output()
        .expect("sluice runs");
    assert!(
        out.status.success(),
        "sluice {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 stdout")
}

/// `sluice --config <example>/sluice.toml --root data=<root> call <tool> <args>`.
fn call(dir: &str, root: &Path, tool: &str, args: &Value) -> Value {
    let out = sluice(&[
        "--config".into(),
        format!("guest-examples/{dir}/sluice.toml"),
        "--root".into(),
        format!("data={}", root.display()),
        "call".into(),
        tool.into(),
        args.to_string(),
    ]);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{tool} {args}: {e}: {out}"))
}

fn head(dir: &str, stem: &str, prefix: &str) {
    let Some(wasm) = built(dir, stem) else {
        return;
    };
    if sluice_binary().is_none() {
        return;
    }
    let tool = format!("{prefix}_head");

    // The guide's commands on this example, with their exact output.
    let mut shown = 0;
    for s in snippets() {
        let Snippet::Command { line, key, output } = s else {
            continue;
        };
        if !example_of(&line, dir, stem) {
            continue;
        }
        shown += 1;
        let args = words(&line);
        let stdout = sluice(&args[1..]);
        match key {
            None => assert_eq!(stdout, output, "{GUIDE}: `{line}`"),
            Some(key) => {
                let got: Value = serde_json::from_str(&stdout).expect("JSON");
                let want: Value = serde_json::from_str(&output).expect("the guide's JSON");
                assert_eq!(got.pointer(&key), Some(&want), "{GUIDE}: `{line}` ({key})");
            }
        }
    }
    assert!(shown >= 2, "{GUIDE} shows {shown} commands on {dir}");

    // What the component offers, before any policy: `head`, its schema, and nothing it
    // imports that the host lacks.
    let inspect: Value = serde_json::from_str(&sluice(&[
        "tools".into(),
        "inspect".into(),
        wasm.display().to_string(),
    ]))
    .expect("inspect prints JSON");
    assert_eq!(inspect["tools"].as_array().map(Vec::len), Some(1));
    assert_eq!(inspect["tools"][0]["name"], "head");
    assert_eq!(
        inspect["tools"][0]["inputSchema"],
        json!({"type": "object",
               "properties": {"path": {"type": "string"},
                              "count": {"type": "integer", "minimum": 0, "maximum": 4_294_967_295_u32}},
               "additionalProperties": false, "required": ["path"]})
    );
    let missing: Vec<&Value> = inspect["imports"]
        .as_array()
        .expect("imports")
        .iter()
        .filter(|i| i["provided"] != true)
        .collect();
    assert!(
        missing.is_empty(),
        "{stem} imports what the host lacks: {missing:?}"
    );

    // The same answers in every language, on files the guide does not show.
    let root = tempfile::tempdir().expect("a temporary root");
    let write = |name: &str, bytes: &[u8]| {
        std::fs::write(root.path().join(name), bytes).expect("write a test file");
    };
    write("ten.txt", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n".as_bytes());
    write("crlf.txt", b"x\r\ny\r");
    write("bom.txt", b"\xef\xbb\xbfbom\n");
    write("binary.txt", b"\xff\xfe text\n");
    write("late.txt", b"a\nb\n\xff\n");
    write("empty.txt", b"");
    std::fs::create_dir(root.path().join("sub")).expect("a directory");
    let ok = |path: &str, lines: &[&str], stopped: &str| json!({"ok": true, "result": {"path": path, "lines": lines, "stoppedBy": stopped}});
    let err = |kind: &str, message: &str| json!({"ok": false, "error": message, "kind": kind});
    let cases = [
        (
            json!({"path": "/data/ten.txt"}),
            ok(
                "/data/ten.txt",
                &["1", "2", "3", "4", "5", "6", "7", "8", "9", "10"],
                "line-limit",
            ),
        ),
        (
            json!({"path": "/data/ten.txt", "count": 11}),
            ok(
                "/data/ten.txt",
                &["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"],
                "end-of-file",
            ),
        ),
        (
            json!({"path": "/data/ten.txt", "count": 1}),
            ok("/data/ten.txt", &["1"], "line-limit"),
        ),
        // "\r\n" ends a line; a "\r" without "\n" is text.
        (
            json!({"path": "/data/crlf.txt"}),
            ok("/data/crlf.txt", &["x", "y\r"], "end-of-file"),
        ),
        // A byte-order mark is text too (U+FEFF).
        (
            json!({"path": "/data/bom.txt"}),
            ok("/data/bom.txt", &["\u{feff}bom"], "end-of-file"),
        ),
        (
            json!({"path": "/data/empty.txt"}),
            ok("/data/empty.txt", &[], "end-of-file"),
        ),
        (
            json!({"path": "/data/nope.txt"}),
            err("not-found", "no such file or directory: /data/nope.txt"),
        ),
        // Only the roots exist: a host path, or a path relative to nothing, is not found.
        (
            json!({"path": "/etc/passwd"}),
            err("not-found", "no such file or directory: /etc/passwd"),
        ),
        (
            json!({"path": "ten.txt"}),
            err("not-found", "no such file or directory: ten.txt"),
        ),
        (
            json!({"path": "/data/../secret"}),
            err(
                "outside-root",
                "not permitted: /data/../secret; give a path under a granted root, mounted at /<root name>",
            ),
        ),
        (
            json!({"path": "/data/sub"}),
            err("wrong-kind", "/data/sub is a directory; head reads files"),
        ),
        (
            json!({"path": "/data/binary.txt"}),
            err("binary-file", "/data/binary.txt is not UTF-8 text"),
        ),
        // The line read to see whether there is more must be text as well.
        (
            json!({"path": "/data/late.txt", "count": 2}),
            err("binary-file", "/data/late.txt is not UTF-8 text"),
        ),
        (
            json!({"path": "/data/ten.txt", "count": 0}),
            err("invalid-argument", "count must be 1 to 100; got 0"),
        ),
        (
            json!({"path": "/data/ten.txt", "count": 101}),
            err("invalid-argument", "count must be 1 to 100; got 101"),
        ),
    ];
    for (args, want) in cases {
        assert_eq!(call(dir, root.path(), &tool, &args), want, "{tool} {args}");
    }
}
