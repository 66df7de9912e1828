use super::*;

/// A config file in a temp dir with roots `logs` and `src`; `body` may start with
/// top-level keys (they go before the `[roots]` table).
#[test]
fn oci_components_take_keys_and_insecure_and_a_lock_beside_the_file() {
    let (d, file) = setup(
        "builtins = []\n[tools.wc]\ncomponent = \"oci://127.0.0.1:5000/tools/wc:1.0\"\nverify.key = \"keys/cosign.pub\"\n[tools.two]\ncomponent = \"oci://registry.example/two@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"\nverify = { key = [\"a.pub\", \"b.pub\"] }\ninsecure = true\n",
    );
    let config = resolve(&file).unwrap();
    assert_eq!(config.lock_file, d.path().join("sluice.lock"));
    let sources: Vec<_> = config.tools.iter().map(|t| t.source.clone()).collect();
    let ToolSource::Oci(two) = &sources[0] else {
        panic!("{sources:?}")
    };
    assert_eq!(two.reference.registry(), "registry.example");
    assert_eq!(two.keys, [d.path().join("a.pub"), d.path().join("b.pub")]);
    assert!(two.insecure);
    let ToolSource::Oci(wc) = &sources[1] else {
        panic!("{sources:?}")
    };
    assert_eq!(
        wc.reference.to_string(),
        "oci://127.0.0.1:5000/tools/wc:1.0"
    );
    assert_eq!(wc.keys, [d.path().join("keys/cosign.pub")]);
    assert!(!wc.insecure);

    let cases = [
        (
            "[tools.x]\ncomponent = \"oci://127.0.0.1:5000/x\"\n",
            "tools.x.component must be a path to a .wasm file, or oci://REGISTRY/REPOSITORY:TAG",
        ),
        (
            "[tools.x]\ncomponent = \"x.wasm\"\nverify.key = \"cosign.pub\"\n",
            "tools.x.verify must be set only for a component from a registry",
        ),
        (
            "[tools.x]\ncomponent = \"x.wasm\"\ninsecure = true\n",
            "tools.x.insecure must be set only for a component from a registry",
        ),
        (
            "[tools.x]\ncomponent = \"oci://r.example/x:1\"\nverify.key = []\n",
            "tools.x.verify.key must be a public key file (\"cosign.pub\") or a non-empty list of them; got []",
        ),
    ];
    for (body, expected) in cases {
        let (_d, file) = setup(body);
        let e = resolve(&file).unwrap_err().to_string();
        assert!(e.starts_with(expected), "{e}\nexpected: {expected}");
    }
    let (_d, file) = setup("[tools.x]\ncomponent = \"oci://127.0.0.1:5000/x\"\n");
    let e = resolve(&file).unwrap_err().to_string();
    assert!(e.contains("Sluice does not assume :latest"), "{e}");
    assert!(e.contains("sluice.toml line 2)"), "{e}");
}

fn setup(body: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("logs")).unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    let file = dir.path().join("sluice.toml");
    std::fs::write(
        &file,
        format!("{body}\n[roots]\nlogs = \"logs\"\nsrc = \"src\"\n"),
    )
    .unwrap();
    (dir, file)
}

fn resolve(file: &Path) -> Result<Config, ConfigError> {
    let env = |k: &str| (k == "LANG").then(|| "C.UTF-8".to_string());
    Config::resolve(Some(file), &env, &Overrides::default())
}

/// [`resolve`] with `--strict`.
fn resolve_strict(file: &Path) -> Result<Config, ConfigError> {
    let strict = Overrides {
        strict: true,
        ..Overrides::default()
    };
    Config::resolve(Some(file), &|_| None, &strict)
}

#[test]
fn builtins_read_every_root_by_default() {
    let (_d, file) = setup("");
    let c = resolve(&file).unwrap();
    let names: Vec<&str> = c.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, BUILTIN_TOOLS);
    let t = &c.tools[0];
    assert_eq!(t.source, ToolSource::Builtin("read_file".into()));
    assert_eq!(
        t.read.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
        ["logs", "src"]
    );
    assert_eq!((t.memory_mib, t.timeout_ms), (256, 10_000));
}

#[test]
fn a_component_table_grants_only_what_it_names() {
    let (d, file) = setup(
        "builtins = [\"list_dir\"]\n\n[tools.stats]\ncomponent = \"stats.wasm\"\nread = [\"src\"]\nwrite = [\"logs\"]\nmemory_mib = 64\ntimeout_ms = 2000\nenv = [\"LANG\", \"UNSET\"]\nsha256 = \"AB00000000000000000000000000000000000000000000000000000000000000\"\ndescription = \"Text statistics\"\n",
    );
    let c = resolve(&file).unwrap();
    assert_eq!(c.tools.len(), 2);
    let t = &c.tools[1];
    assert_eq!(t.name, "stats");
    assert_eq!(t.source, ToolSource::Component(d.path().join("stats.wasm")));
    assert_eq!(
        t.read.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
        ["src"]
    );
    assert_eq!(
        t.write.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
        ["logs"]
    );
    assert_eq!((t.memory_mib, t.timeout_ms), (64, 2000));
    assert_eq!(t.env, [("LANG".to_string(), "C.UTF-8".to_string())]);
    assert_eq!(
        t.sha256.as_deref(),
        Some("ab00000000000000000000000000000000000000000000000000000000000000")
    );
    assert_eq!(t.description.as_deref(), Some("Text statistics"));
}

#[test]
fn bad_policies_are_config_errors_naming_the_key() {
    let cases = [
        (
            "[tools.x]\ncomponent = \"x.wasm\"\nread = [\"nope\"]\n",
            "tools.x.read must be names of defined roots (logs, src); got \"nope\"",
        ),
        (
            "[tools.x]\ncomponent = \"x.wasm\"\nmemory_mib = 0\n",
            "tools.x.memory_mib must be an integer from 1 to 4096 (MiB); got 0",
        ),
        (
            "[tools.x]\ncomponent = \"x.wasm\"\ntimeout_ms = 1.5\n",
            "tools.x.timeout_ms must be an integer from 1 to 3600000 (ms); got 1.5",
        ),
        (
            "[tools.x]\ncomponent = \"x.wasm\"\nsha256 = \"abc\"\n",
            "tools.x.sha256 must be 64 hexadecimal digits; got \"abc\"",
        ),
        (
            "builtins = [\"cat\"]\n",
            "builtins must be a list of built-in tool names (read_file, tail_file, grep_files, list_dir, run_script); got \"cat\"",
        ),
    ];
    for (body, expected) in cases {
        let (_d, file) = setup(body);
        let e = resolve(&file).unwrap_err().to_string();
        assert!(e.starts_with(expected), "{e}\nexpected: {expected}");
    }
    let (_d, file) = setup("[tools.x]\nread = [\"src\"]\n");
    let e = resolve(&file).unwrap_err().to_string();
    assert!(e.starts_with("tools.x must be a table with either `component = \"path.wasm\"` or `builtin = \"read_file\"` (or named after a built-in tool); got neither"), "{e}");
    let (_d, file) = setup("[tools.x]\ncomponent = \"x.wasm\"\nfuel = 5\n");
    assert!(
        resolve(&file)
            .unwrap_err()
            .to_string()
            .contains("unknown field `fuel`")
    );
}

#[test]
fn a_root_that_does_not_exist_stops_the_start() {
    let (d, file) = setup("");
    std::fs::write(&file, "[roots]\ngone = \"missing\"\n").unwrap();
    let e = resolve(&file).unwrap_err().to_string();
    // The file and the key that set it, with the line.
    assert!(
        e.starts_with(&format!(
            "root \"gone\" (missing, set by roots.gone in {} line 2): cannot be opened: ",
            file.display()
        )),
        "{e}"
    );
    drop(d);
}

#[test]
fn a_tools_directory_pairs_components_with_policies() {
    let (d, file) = setup("builtins = []\ntools_dir = \"drop-in\"\n");
    let dir = d.path().join("drop-in");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("b.wasm"), b"").unwrap();
    std::fs::write(dir.join("a.wasm"), b"").unwrap();
    std::fs::write(dir.join("a.toml"), "read = [\"logs\"]\ntimeout_ms = 500\n").unwrap();
    std::fs::write(dir.join("notes.txt"), b"").unwrap();
    let c = resolve(&file).unwrap();
    let names: Vec<&str> = c.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(c.tools[0].read[0].name, "logs");
    assert_eq!(c.tools[0].timeout_ms, 500);
    // Without a policy: nothing granted, default limits.
    assert!(c.tools[1].read.is_empty() && c.tools[1].write.is_empty() && c.tools[1].env.is_empty());
    assert_eq!(
        (c.tools[1].memory_mib, c.tools[1].timeout_ms),
        (256, 10_000)
    );
    std::fs::write(
        dir.join("a.toml"),
        "read = []\ncomponent = \"other.wasm\"\n",
    )
    .unwrap();
    let reason = format!(
        "invalid configuration file {}: line 2: a tools-directory policy describes its sibling .wasm; `component` and `builtin` are not allowed here",
        dir.join("a.toml").display()
    );
    // Only that entry is left out, with the reason; `strict` refuses the start.
    let c = resolve(&file).unwrap();
    let names: Vec<&str> = c.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["b"]);
    assert_eq!(
        c.rejected,
        [RejectedTool {
            component: dir.join("a.wasm"),
            reason: reason.clone()
        }]
    );
    assert_eq!(resolve_strict(&file).unwrap_err().to_string(), reason);
}

/// The unknown-key error of a sibling policy lists the keys allowed there, without
/// `component` and `builtin`.
#[test]
fn a_sibling_policys_unknown_key_lists_only_its_keys() {
    let (d, file) = setup("builtins = []\ntools_dir = \"drop-in\"\n");
    let dir = d.path().join("drop-in");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("a.wasm"), b"").unwrap();
    std::fs::write(dir.join("a.toml"), "read = [\"logs\"]\nfuel = 5\n").unwrap();
    let e = resolve_strict(&file).unwrap_err().to_string();
    let expected = format!(
        "invalid configuration file {}: line 2, fuel: unknown field `fuel`, expected one of ",
        dir.join("a.toml").display()
    );
    assert!(e.starts_with(&expected), "{e}");
    let listed = &e[expected.len()..];
    assert!(listed.starts_with("`read`, `write`, "), "{e}");
    assert!(!listed.contains("`component`"), "{e}");
    assert!(!listed.contains("`builtin`"), "{e}");
    // A `[tools.NAME]` table does take them.
    let (_d, file) = setup("[tools.x]\ncomponent = \"x.wasm\"\nfuel = 5\n");
    let e = resolve(&file).unwrap_err().to_string();
    assert!(
        e.contains("unknown field `fuel`, expected one of `component`, `builtin`, `read`"),
        "{e}"
    );
}

/// A typo in one tools-directory policy leaves only that tool out, with the reason and the
/// key it was probably meant to be; the built-ins and the other components start.
#[test]
fn a_bad_sibling_policy_leaves_only_its_tool_out() {
    let (d, file) = setup("tools_dir = \"tools\"\n");
    let dir = d.path().join("tools");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("x.wasm"), b"").unwrap();
    std::fs::write(dir.join("x.toml"), "memroy_mib = 64\n").unwrap();
    std::fs::write(dir.join("y.wasm"), b"").unwrap();
    let c = resolve(&file).unwrap();
    let names: Vec<&str> = c.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "read_file",
            "tail_file",
            "grep_files",
            "list_dir",
            "run_script",
            "y"
        ]
    );
    assert_eq!(c.rejected.len(), 1, "{:?}", c.rejected);
    assert_eq!(c.rejected[0].component, dir.join("x.wasm"));
    let reason = &c.rejected[0].reason;
    let expected = format!(
        "invalid configuration file {}: line 1, memroy_mib: unknown field `memroy_mib`, expected one of `read`, ",
        dir.join("x.toml").display()
    );
    assert!(reason.starts_with(&expected), "{reason}");
    assert!(reason.ends_with("; did you mean `memory_mib`?"), "{reason}");
    assert_eq!(resolve_strict(&file).unwrap_err().to_string(), *reason);
    // A value out of bounds, or an undefined root, the same way.
    std::fs::write(dir.join("x.toml"), "read = [\"nowhere\"]\n").unwrap();
    let c = resolve(&file).unwrap();
    assert_eq!(
        c.rejected[0].reason,
        format!(
            "tools.x.read must be names of defined roots (logs, src); got \"nowhere\" (from {})",
            dir.join("x.toml").display()
        )
    );
}

/// `tools/read_file.wasm` beside the built-in `read_file`: the message names both plainly
/// and what to rename; without `strict` only the component is left out.
#[test]
fn a_component_named_like_a_built_in_names_both_and_the_fix() {
    let (d, file) = setup("tools_dir = \"tools\"\n");
    let dir = d.path().join("tools");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("read_file.wasm"), b"").unwrap();
    let component = dir.join("read_file.wasm");
    let expected = format!(
        "two tools entries are named \"read_file\": the built-in tool read_file and {0}; the tools directory names an entry after its file, so rename {0} (and its policy read_file.toml with it), or leave read_file out of `builtins` in sluice.toml",
        component.display()
    );
    assert_eq!(resolve_strict(&file).unwrap_err().to_string(), expected);
    let c = resolve(&file).unwrap();
    assert_eq!(c.tools.len(), 5, "the built-ins");
    assert_eq!(
        c.rejected,
        [RejectedTool {
            component,
            reason: expected
        }]
    );
}

#[test]
fn http_methods_are_rfc_9110_methods_in_upper_case() {
    for (methods, why) in [
        ("[\"FETCH\"]", "\"FETCH\" is not one of them"),
        (
            "[\"get\"]",
            "\"get\" is not one of them: methods are written in upper case, \"GET\"",
        ),
    ] {
        let (_d, file) = setup(&format!(
            "[tools.x]\ncomponent = \"x.wasm\"\nhttp = [\"api.example.com\"]\nhttp_methods = {methods}\n"
        ));
        let value = methods.trim_matches(['[', ']']);
        assert_eq!(
            resolve(&file).unwrap_err().to_string(),
            format!(
                "tools.x.http_methods must be a list of HTTP methods, each one of GET, HEAD, POST, PUT, DELETE, CONNECT, OPTIONS, TRACE, PATCH ({why}); got {value} (from {} line 4)",
                file.display()
            )
        );
    }
}

/// An `http` grant of a method that may write makes the tool destructive, unless the
/// policy says `destructive = false`.
#[test]
fn an_http_grant_that_may_write_is_destructive() {
    let destructive = |keys: &str| {
        let (_d, file) = setup(&format!(
            "[tools.x]\ncomponent = \"x.wasm\"\nhttp = [\"api.example.com\"]\n{keys}"
        ));
        let c = resolve(&file).unwrap();
        c.tools.iter().find(|t| t.name == "x").unwrap().destructive
    };
    assert!(destructive("http_methods = [\"POST\"]\n"));
    assert!(destructive(""), "no http_methods: any method");
    assert!(!destructive(
        "http_methods = [\"GET\", \"HEAD\", \"OPTIONS\"]\n"
    ));
    assert!(!destructive(
        "http_methods = [\"POST\"]\ndestructive = false\n"
    ));
    assert!(destructive(
        "http_methods = [\"GET\"]\ndestructive = true\n"
    ));
}

/// `[tools.NAME.functions.FUNC.args.ARG]` refinements are read into the
/// tool's functions; one that cannot hold stops the start (naming the key and its line), or
/// leaves out the tools-directory entry whose policy has it.
#[test]
fn argument_refinements_are_read_and_checked() {
    let (_d, file) = setup(
        "[tools.wc]\ncomponent = \"wc.wasm\"\n[tools.wc.functions.count]\ndescription = \"Count words\"\n[tools.wc.functions.count.args.top]\ndescription = \"How many words to list\"\nminimum = 1\nmaximum = 100\n[tools.wc.functions.count.args.mode]\nenum = [\"words\", \"lines\"]\n[tools.wc.functions.count.args.path]\npattern = \"^/data/\"\n",
    );
    let c = resolve(&file).unwrap();
    let wc = c.tools.iter().find(|t| t.name == "wc").unwrap();
    let count = &wc.functions["count"];
    assert_eq!(count.description.as_deref(), Some("Count words"));
    assert_eq!(
        count.args["top"],
        sluice_grants::ArgPolicy {
            description: Some("How many words to list".into()),
            minimum: Some(1.into()),
            maximum: Some(100.into()),
            one_of: None,
            pattern: None,
        }
    );
    assert_eq!(
        count.args["mode"].one_of.as_deref(),
        Some(&["words".to_string(), "lines".to_string()][..])
    );
    assert_eq!(count.args["path"].pattern.as_deref(), Some("^/data/"));

    let head = "[tools.wc]\ncomponent = \"wc.wasm\"\n[tools.wc.functions.count.args.top]\n";
    let cases = [
        (
            "minimum = 5\nmaximum = 1\n",
            "tools.wc.functions.count.args.top.maximum must be a number of at least its minimum, 5; got 1",
            5,
        ),
        (
            "minimum = \"1\"\n",
            "tools.wc.functions.count.args.top.minimum must be a number (an integer; a float only for an f32 or f64 argument); got \"1\"",
            4,
        ),
        (
            "enum = \"words\"\n",
            "tools.wc.functions.count.args.top.enum must be a non-empty array of distinct strings, like [\"words\", \"lines\"]; got \"words\"",
            4,
        ),
        (
            "pattern = '[a-'\n",
            "tools.wc.functions.count.args.top.pattern must be a regular expression as JSON Schema's pattern takes it (ECMA-262 syntax, without look-around or backreferences); unclosed character class; got \"[a-\"",
            4,
        ),
    ];
    for (body, expected, line) in cases {
        let (_d, file) = setup(&format!("{head}{body}"));
        assert_eq!(
            resolve(&file).unwrap_err().to_string(),
            format!("{expected} (from {} line {line})", file.display()),
            "{body}"
        );
    }

    // In a sibling policy, only that entry is left out.
    let (d, file) = setup("builtins = []\ntools_dir = \"tools\"\n");
    let dir = d.path().join("tools");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("x.wasm"), b"").unwrap();
    std::fs::write(
        dir.join("x.toml"),
        "[functions.count.args.mode]\nenum = []\n",
    )
    .unwrap();
    let c = resolve(&file).unwrap();
    assert_eq!(
        c.rejected[0].reason,
        format!(
            "tools.x.functions.count.args.mode.enum must be a non-empty array of distinct strings, like [\"words\", \"lines\"]; got [] (from {})",
            dir.join("x.toml").display()
        )
    );
}
