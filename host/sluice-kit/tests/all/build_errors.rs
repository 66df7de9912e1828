//! `build` and `tool.toml` on hand-written projects: a bad manifest, a failing command, a
//! missing or wrong output, and a command that makes a component (no toolchain needed).

use std::path::{Path, PathBuf};

use sluice_kit::{BuildOptions, KitError, Manifest, build_with};

/// What every manifest error ends with.
const TAKES: &str = "it takes [build] command = \"…\" (run with `sh -c` in the project directory) and output = \"…\" (the component the command makes, relative to the project directory)";

/// A project directory whose tool.toml is `manifest`.
fn project(manifest: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tool.toml"), manifest).unwrap();
    dir
}

fn captured(dir: &Path) -> Result<sluice_kit::Built, KitError> {
    build_with(
        dir,
        &BuildOptions {
            capture: true,
            ..BuildOptions::default()
        },
    )
}

#[test]
fn a_manifest_is_read_and_unknown_keys_refused() {
    let dir = project("[build]\ncommand = \"make\"\noutput = \"out/x.wasm\"\n");
    assert_eq!(
        Manifest::read(dir.path()).unwrap().build.output,
        PathBuf::from("out/x.wasm")
    );

    let dir = project("[build]\ncommand = \"make\"\noutput = \"x.wasm\"\ntarget = \"wasm\"\n");
    let e = Manifest::read(dir.path()).unwrap_err();
    assert!(matches!(e, KitError::Manifest { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "{} is not a valid tool.toml: TOML parse error at line 4, column 1\n  |\n4 | target = \"wasm\"\n  | ^^^^^^\nunknown field `target`, expected `command` or `output`; {TAKES}",
            dir.path().join("tool.toml").display()
        )
    );

    let dir = project("[biuld]\ncommand = \"make\"\n");
    assert_eq!(
        Manifest::read(dir.path()).unwrap_err().to_string(),
        format!(
            "{} is not a valid tool.toml: TOML parse error at line 1, column 2\n  |\n1 | [biuld]\n  |  ^^^^^\nunknown field `biuld`, expected `build`; {TAKES}",
            dir.path().join("tool.toml").display()
        )
    );

    let dir = project("[build]\ncommand = \"make\"\n");
    assert_eq!(
        Manifest::read(dir.path()).unwrap_err().to_string(),
        format!(
            "{} is not a valid tool.toml: TOML parse error at line 1, column 1\n  |\n1 | [build]\n  | ^^^^^^^\nmissing field `output`; {TAKES}",
            dir.path().join("tool.toml").display()
        )
    );

    for (manifest, reason) in [
        (
            "[build]\ncommand = \" \"\noutput = \"x.wasm\"\n",
            "[build] command is empty".to_string(),
        ),
        (
            "[build]\ncommand = \"make\"\noutput = \"\"\n",
            "[build] output is empty".to_string(),
        ),
        (
            "[build]\ncommand = \"make\"\noutput = \"/tmp/x.wasm\"\n",
            "[build] output is an absolute path (/tmp/x.wasm); give it relative to the project directory".to_string(),
        ),
    ] {
        let dir = project(manifest);
        assert_eq!(
            Manifest::read(dir.path()).unwrap_err().to_string(),
            format!("{} is not a valid tool.toml: {reason}; {TAKES}", dir.path().join("tool.toml").display())
        );
    }
}

#[test]
fn no_manifest_says_what_build_needs() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        captured(dir.path()).unwrap_err().to_string(),
        format!(
            "{} has no tool.toml: `sluice build` builds a tool project made by `sluice new` (or any directory whose tool.toml has a [build] table with `command` and `output`)",
            dir.path().display()
        )
    );
}

#[test]
fn a_failing_command_names_itself_its_status_and_its_output() {
    let dir = project(
        "[build]\ncommand = \"echo compiling; echo 'oops: no compiler' >&2; exit 3\"\noutput = \"x.wasm\"\n",
    );
    let e = captured(dir.path()).unwrap_err();
    assert!(matches!(e, KitError::BuildFailed { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "the build failed: `echo compiling; echo 'oops: no compiler' >&2; exit 3` (tool.toml's [build] command) in {} ended with exit status 3; its output ends:\ncompiling\noops: no compiler",
            dir.path().display()
        )
    );

    let dir = project("[build]\ncommand = \"kill -9 $$\"\noutput = \"x.wasm\"\n");
    let e = captured(dir.path()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "the build failed: `kill -9 $$` (tool.toml's [build] command) in {} ended with signal 9; its output ends:\n",
            dir.path().display()
        )
    );
}

#[test]
fn the_output_must_be_there_and_a_component() {
    let dir = project("[build]\ncommand = \"true\"\noutput = \"build/x.wasm\"\n");
    assert_eq!(
        captured(dir.path()).unwrap_err().to_string(),
        format!(
            "the build `true` succeeded but {} is not there: tool.toml's [build] output names the component the command makes",
            dir.path().join("build/x.wasm").display()
        )
    );

    let dir = project(
        "[build]\ncommand = \"printf '\\\\0asm\\\\1\\\\0\\\\0\\\\0' > x.wasm\"\noutput = \"x.wasm\"\n",
    );
    assert_eq!(
        captured(dir.path()).unwrap_err().to_string(),
        format!(
            "the build's output {} cannot be loaded: it is a core WebAssembly module, not a component: build it for wasm32-wasip2, or wrap it with `wasm-tools component new`; tool.toml's [build] output names the component the command makes",
            dir.path().join("x.wasm").display()
        )
    );

    let dir = project("[build]\ncommand = \"echo hello > x.wasm\"\noutput = \"x.wasm\"\n");
    assert_eq!(
        captured(dir.path()).unwrap_err().to_string(),
        format!(
            "the build's output {} cannot be loaded: it is not a WebAssembly component (a component starts with `\\0asm` and the component layer); tool.toml's [build] output names the component the command makes",
            dir.path().join("x.wasm").display()
        )
    );

    let dir = project("[build]\ncommand = \"mkdir x.wasm\"\noutput = \"x.wasm\"\n");
    assert_eq!(
        captured(dir.path()).unwrap_err().to_string(),
        format!(
            "the build's output {} cannot be loaded: it is not a regular file; tool.toml's [build] output names the component file the command makes",
            dir.path().join("x.wasm").display()
        )
    );
}

/// A command that writes a component: its path, size, command and output come back; the
/// options' PATH prefix and variables reach it.
#[test]
fn a_component_is_reported() {
    let dir = project(
        "[build]\ncommand = \"mkdir -p out && printf '\\\\0asm\\\\15\\\\0\\\\1\\\\0' > out/x.wasm && echo \\\"$GREETING from $(command -v mytool)\\\"\"\noutput = \"out/x.wasm\"\n",
    );
    let bin = tempfile::tempdir().unwrap();
    let tool = bin.path().join("mytool");
    std::fs::write(&tool, "#!/bin/sh\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let built = build_with(
        dir.path(),
        &BuildOptions {
            path_prefix: vec![bin.path().to_path_buf()],
            env: vec![("GREETING".into(), "hello".into())],
            capture: true,
        },
    )
    .unwrap();
    assert_eq!(built.component, dir.path().join("out/x.wasm"));
    assert_eq!(built.bytes, 8);
    assert_eq!(
        built.log.as_deref(),
        Some(format!("hello from {}\n", tool.display()).as_str())
    );
    assert!(built.command.starts_with("mkdir -p out && "));
    assert_eq!(
        built.to_string(),
        format!(
            "built {}: a component of 8 bytes, in {:.1} s",
            built.component.display(),
            built.duration.as_secs_f64()
        )
    );
}
