//! Third-party components dropped in beside the built-ins
//! (docs/components.md#drop-in-components). A component exporting
//! `read-file` (the shape of wassette's filesystem-rs, `tests/components/fs-like`) collides
//! with the built-in until its policy prefixes or renames it, and the error names those
//! keys; a component that cannot load leaves the others running unless loading is strict;
//! the paging hint of a cut result follows the tool's own arguments.

use std::path::PathBuf;

use sluice_config::BUILTIN_TOOLS;
use sluice_runtime::{
    CallStatus, ComponentSpec, FunctionPolicy, PolicyOrigin, ToolPolicy, Toolbox,
};
use sluice_tests::{FS_LIKE_WASM, NEEDS_MISSING_WASM, component_spec};

use crate::cache;

/// A root directory `data` holding `notes.txt` (`text`), for the built-ins and fs-like.
struct Root {
    dir: tempfile::TempDir,
}

impl Root {
    fn new(text: &str) -> Root {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("data")).unwrap();
        std::fs::write(dir.path().join("data/notes.txt"), text).unwrap();
        Root { dir }
    }

    fn policy(&self) -> ToolPolicy {
        ToolPolicy::read_only([("data".to_string(), self.dir.path().join("data"))])
    }

    /// The four built-ins, configured by `builtins`, then the component at `wasm` under
    /// the sibling policy `fs.toml` that `adjust` changes.
    fn specs(&self, wasm: &str, adjust: impl FnOnce(&mut ToolPolicy)) -> Vec<ComponentSpec> {
        let mut specs: Vec<ComponentSpec> = BUILTIN_TOOLS
            .iter()
            .map(|name| ComponentSpec {
                source: sluice_tests::builtin(name),
                policy: ToolPolicy {
                    origin: Some(PolicyOrigin::Builtins(name.to_string())),
                    ..self.policy()
                },
            })
            .collect();
        let mut policy = ToolPolicy {
            origin: Some(PolicyOrigin::Sibling(PathBuf::from("/drop-in/fs.toml"))),
            ..self.policy()
        };
        adjust(&mut policy);
        specs.push(component_spec(wasm, policy));
        specs
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn names(toolbox: &Toolbox) -> Vec<String> {
    toolbox.tools().map(|t| t.name.clone()).collect()
}

#[test]
fn the_configuration_knows_the_builtins_the_runtime_embeds() {
    // `builtins = [...]` is checked against the configuration's list; the runtime embeds
    // its own. They must be the same four names, in the same order.
    let embedded: Vec<&str> = sluice_builtins::BUILTINS.iter().map(|(n, _)| *n).collect();
    assert_eq!(embedded, BUILTIN_TOOLS);
}

#[test]
fn a_read_file_beside_the_builtin_is_refused_naming_the_keys_that_fix_it() {
    let root = Root::new("x");
    let error = Toolbox::load(
        sluice_tests::engine(cache()),
        &root.specs(FS_LIKE_WASM, |_| {}),
    )
    .expect_err("two tools named read_file");
    assert_eq!(
        error.to_string(),
        "two tools are named \"read_file\" (built-in read_file and sluice_test_fs_like.wasm); give one another name: prefix = \"…\" or [functions.read-file] name = \"…\" in /drop-in/fs.toml; or [tools.read_file] prefix = \"…\" or [tools.read_file.functions.read-file] name = \"…\" in the configuration file, or leave read_file out of `builtins = [...]`"
    );
}

#[test]
fn with_a_prefix_it_loads_beside_the_builtin_and_both_answer() {
    let root = Root::new("hello from notes\n");
    let toolbox = Toolbox::load(
        sluice_tests::engine(cache()),
        &root.specs(FS_LIKE_WASM, |p| p.prefix = Some("fs".into())),
    )
    .expect("fs-like loads under the prefix fs");
    assert_eq!(
        names(&toolbox),
        [
            "read_file",
            "tail_file",
            "grep_files",
            "list_dir",
            "run_script",
            "fs_read_file",
            "fs_list_directory"
        ]
    );
    let theirs = block_on(toolbox.call("fs_read_file", r#"{"path":"/data/notes.txt"}"#, 65_536));
    assert_eq!(
        theirs.text(),
        r#"{"ok":true,"result":"hello from notes\n"}"#
    );
    let listing = block_on(toolbox.call("fs_list_directory", r#"{"path":"/data"}"#, 65_536));
    assert_eq!(listing.text(), r#"{"ok":true,"result":["notes.txt"]}"#);
    let ours = block_on(toolbox.call("read_file", r#"{"path":"notes.txt"}"#, 65_536));
    assert_eq!(ours.status(), CallStatus::Ok);
    assert!(
        ours.text().contains(r#""content":"hello from notes\n""#),
        "{}",
        ours.text()
    );
}

#[test]
fn a_function_renamed_and_described_by_its_policy() {
    let root = Root::new("x");
    let toolbox = Toolbox::load(
        sluice_tests::engine(cache()),
        &root.specs(FS_LIKE_WASM, |p| {
            p.functions.insert(
                "read-file".into(),
                FunctionPolicy {
                    name: Some("fs_cat".into()),
                    description: Some("Print a whole file under /data.".into()),
                    ..FunctionPolicy::default()
                },
            );
            p.functions.insert(
                "list_directory".into(),
                FunctionPolicy {
                    name: None,
                    description: Some("List a directory under /data.".into()),
                    ..FunctionPolicy::default()
                },
            );
        }),
    )
    .expect("fs-like loads with read-file renamed");
    let tools: Vec<_> = toolbox.tools().skip(5).cloned().collect();
    assert_eq!(tools[0].name, "fs_cat");
    // Item 4: the operator's description, then where the roots are mounted.
    let mounted = "Paths: the granted directory is mounted at /data (read-only); give paths under it, like /data/….";
    assert_eq!(
        tools[0].description,
        format!("Print a whole file under /data. {mounted}")
    );
    assert_eq!(tools[1].name, "list_directory");
    assert_eq!(
        tools[1].description,
        format!("List a directory under /data. {mounted}")
    );
}

#[test]
fn a_functions_key_that_names_no_function_is_refused() {
    let root = Root::new("x");
    let error = Toolbox::load(
        sluice_tests::engine(cache()),
        &root.specs(FS_LIKE_WASM, |p| {
            p.prefix = Some("fs".into());
            p.functions.insert("read".into(), FunctionPolicy::default());
        }),
    )
    .expect_err("no function is called read");
    assert_eq!(
        error.to_string(),
        "sluice_test_fs_like.wasm: its policy sets functions.read, but it exports no function of that name; its functions are: read-file, list-directory"
    );
}

#[test]
fn a_name_outside_the_rule_is_refused() {
    let root = Root::new("x");
    let error = Toolbox::load(
        sluice_tests::engine(cache()),
        &root.specs(FS_LIKE_WASM, |p| p.prefix = Some("x".repeat(60))),
    )
    .expect_err("the prefixed name is 70 characters");
    let message = error.to_string();
    assert!(
        message.starts_with("sluice_test_fs_like.wasm: export read-file: its tool name \"xxxx"),
        "{message}"
    );
    assert!(
        message.ends_with("_read_file\" is not 1 to 64 characters of A-Z, a-z, 0-9, `_` and `-`; name it with prefix = \"…\" or [functions.read-file] name = \"…\" in /drop-in/fs.toml"),
        "{message}"
    );
}

/// Item 5: a third-party `read_file` whose only argument is `path`, cut at the cap, is told
/// to ask for "a narrower query", not to pass `lineCount` or `offset` it would refuse.
#[test]
fn the_cut_hint_of_a_third_party_read_file_follows_its_arguments() {
    let root = Root::new(&"line of text\n".repeat(1000));
    let toolbox = Toolbox::load(
        sluice_tests::engine(cache()),
        &[component_spec(FS_LIKE_WASM, root.policy())],
    )
    .expect("fs-like alone loads under its own names");
    assert_eq!(names(&toolbox), ["read_file", "list_directory"]);
    let obs = block_on(toolbox.call("read_file", r#"{"path":"/data/notes.txt"}"#, 1024));
    assert!(obs.truncated());
    assert_eq!(obs.text().len(), 1024);
    assert!(
        obs.text().ends_with(&format!(
            "…[truncated; full result is {} bytes. Ask for less: a narrower query]",
            obs.full_bytes()
        )),
        "{}",
        obs.text()
    );
}

/// Item 6: a component that imports what the host lacks is left out, with its reason, and
/// the built-ins still load and answer; loading strictly refuses the whole set.
#[test]
fn a_component_that_cannot_load_leaves_the_builtins_running() {
    let root = Root::new("still here\n");
    let specs = root.specs(NEEDS_MISSING_WASM, |_| {});
    let toolbox =
        Toolbox::load_available(sluice_tests::engine(cache()), &specs).expect("the others load");
    assert_eq!(names(&toolbox), BUILTIN_TOOLS);
    let unavailable = toolbox.unavailable();
    assert_eq!(unavailable.len(), 1);
    assert_eq!(unavailable[0].source, "sluice_test_needs_missing.wasm");
    assert_eq!(
        unavailable[0].reason,
        "failed to load sluice_test_needs_missing.wasm: it imports interfaces the host does not provide: acme:missing/clock@1.0.0; the host provides WASI 0.2 (cli, clocks, filesystem, http, io, random, sockets), wasi:config/store@0.2.0-rc.1 and sluice:tools/budget, key-policy, listing and tool-calls"
    );
    let obs = block_on(toolbox.call("read_file", r#"{"path":"notes.txt"}"#, 65_536));
    assert_eq!(obs.status(), CallStatus::Ok);
    assert!(obs.text().contains("still here"), "{}", obs.text());

    let strict = Toolbox::load(sluice_tests::engine(cache()), &specs)
        .expect_err("strict loading stops at the component");
    assert_eq!(strict.to_string(), unavailable[0].reason);
}
