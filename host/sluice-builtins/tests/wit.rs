//! `sluice wit DIR` (docs/authoring.md#the-project) writes the `sluice:tools` package and the
//! WASI 0.2 WIT the host was built with. What it writes parses with wit-parser as one
//! resolvable set, is byte for byte the embedded text, and a tool author's world can import
//! WASI from it.

// Test code: a panic is the assertion. clippy.toml lets `#[test]` functions unwrap; this
// lets the helpers they share do so too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use sluice_builtins::wit::{SLUICE_TOOLS_FILE, WASI_VERSION, WASI_WIT, WitError, write_wit};
use wit_parser::Resolve;

/// The packages of `resolve`, as `namespace:name@version`, sorted.
fn packages(resolve: &Resolve) -> Vec<String> {
    let mut names: Vec<String> = resolve
        .packages
        .iter()
        .map(|(_, p)| p.name.to_string())
        .collect();
    names.sort();
    names
}

#[test]
fn the_files_written_parse_and_match_the_embedded_packages() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("wit");
    let written = write_wit(&out).expect("the WIT is written");
    let relative: Vec<String> = written
        .iter()
        .map(|p| p.strip_prefix(&out).unwrap().display().to_string())
        .collect();
    assert_eq!(
        relative,
        [
            "sluice-tools.wit",
            "deps/cli.wit",
            "deps/clocks.wit",
            "deps/filesystem.wit",
            "deps/http.wit",
            "deps/io.wit",
            "deps/random.wit",
            "deps/sockets.wit",
            "deps/config/store.wit",
            "deps/config/world.wit"
        ]
    );
    assert_eq!(
        std::fs::read_to_string(out.join(SLUICE_TOOLS_FILE)).unwrap(),
        sluice_builtins::WIT
    );
    for (name, text) in WASI_WIT {
        assert_eq!(
            std::fs::read_to_string(out.join("deps").join(name)).unwrap(),
            text
        );
    }
    // The package files open with their package line (`config/store.wit` is the second
    // file of the `wasi:config` directory package and has none).
    for (file, line) in [
        ("http.wit", format!("package wasi:http@{WASI_VERSION};")),
        ("config/world.wit", "package wasi:config@0.2.0-rc.1;".into()),
        ("config/store.wit", "interface store {".into()),
    ] {
        let text = std::fs::read_to_string(out.join("deps").join(file)).unwrap();
        assert_eq!(text.lines().next(), Some(line.as_str()), "{file}");
    }

    let mut resolve = Resolve::default();
    let (main, _) = resolve.push_dir(&out).expect("the WIT written parses");
    assert_eq!(
        resolve.packages[main].name.to_string(),
        "sluice:tools@0.1.5"
    );
    let v = WASI_VERSION;
    assert_eq!(
        packages(&resolve),
        [
            "sluice:tools@0.1.5".to_string(),
            format!("wasi:cli@{v}"),
            format!("wasi:clocks@{v}"),
            "wasi:config@0.2.0-rc.1".to_string(),
            format!("wasi:filesystem@{v}"),
            format!("wasi:http@{v}"),
            format!("wasi:io@{v}"),
            format!("wasi:random@{v}"),
            format!("wasi:sockets@{v}"),
        ]
    );
    // The worlds of the built-ins are there, as the embedded package has them.
    let worlds: Vec<&str> = resolve.packages[main]
        .worlds
        .keys()
        .map(String::as_str)
        .collect();
    for world in [
        "read-file",
        "tail-file",
        "grep-files",
        "list-dir",
        "run-script",
        "host",
    ] {
        assert!(worlds.contains(&world), "{worlds:?}");
    }
}

/// A tool author's own world beside the files written: it uses `sluice:tools` types and
/// imports WASI's preopens, `wasi:http` and `wasi:config`, all resolved from the directory.
#[test]
fn an_authors_world_resolves_against_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("wit");
    write_wit(&out).unwrap();
    // The author's package is the main one: sluice:tools moves to deps beside WASI.
    std::fs::rename(
        out.join(SLUICE_TOOLS_FILE),
        out.join("deps").join(SLUICE_TOOLS_FILE),
    )
    .unwrap();
    std::fs::write(
        out.join("tool.wit"),
        format!(
            "package acme:reader@0.1.0;\n\nworld reader {{\n    import wasi:filesystem/preopens@{WASI_VERSION};\n    import wasi:http/outgoing-handler@{WASI_VERSION};\n    import wasi:config/store@0.2.0-rc.1;\n    import sluice:tools/budget@0.1.5;\n    use sluice:tools/types@0.1.5.{{tool-error}};\n    export read: func(path: string) -> result<string, tool-error>;\n}}\n"
        ),
    )
    .unwrap();
    let mut resolve = Resolve::default();
    let (main, _) = resolve.push_dir(&out).expect("the author's world resolves");
    let world = resolve.select_world(&[main], Some("reader")).unwrap();
    assert_eq!(resolve.worlds[world].exports.len(), 1);
}

#[test]
fn writing_again_is_a_no_op_and_other_contents_are_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("wit");
    let first = write_wit(&out).unwrap();
    assert_eq!(write_wit(&out).unwrap(), first);
    let io = out.join("deps/io.wit");
    std::fs::write(&io, "package mine:io;\n").unwrap();
    let e = write_wit(&out).unwrap_err();
    assert!(matches!(e, WitError::Differs { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "{} already exists with other contents; nothing was written (remove it, or write to another directory)",
            io.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&io).unwrap(), "package mine:io;\n");
}

/// A FIFO where a file would be written is refused at once, naming it (reading it to compare
/// would wait for a writer for ever); nothing is written.
#[cfg(unix)]
#[test]
fn a_fifo_in_the_way_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("wit");
    std::fs::create_dir(&out).unwrap();
    let fifo = out.join(SLUICE_TOOLS_FILE);
    sluice_operator_files::make_fifo(&fifo).unwrap();
    let error = write_wit(&out).unwrap_err();
    assert!(matches!(error, WitError::Io { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        format!(
            "failed to write {}: not a regular file (it is a FIFO); name a regular file",
            fifo.display()
        )
    );
    assert!(!out.join("deps").exists());
}
