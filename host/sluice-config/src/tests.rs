use super::*;

fn with_cap(v: &str) -> Result<Config, ConfigError> {
    Config::resolve(
        None,
        &|_| None,
        &Overrides {
            max_tool_result_bytes: Some(v.into()),
            ..Overrides::default()
        },
    )
}

#[test]
fn cap_bounds() {
    assert_eq!(with_cap("1024").unwrap().agent.max_tool_result_bytes, 1024);
    assert_eq!(
        with_cap("1048576").unwrap().agent.max_tool_result_bytes,
        1_048_576
    );
    for bad in ["1023", "1048577", "1.5", "x", "-1", ""] {
        let e = with_cap(bad).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "agent.max_tool_result_bytes must be an integer from 1024 to 1048576 (bytes); got {bad} (from --max-tool-result-bytes)"
            )
        );
    }
}

#[test]
fn precedence_flag_env_file_default() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sluice.toml");
    std::fs::write(&file, "[agent]\nmax_tool_result_bytes = 4096\n").unwrap();
    let env_set = |k: &str| (k == "SLUICE_AGENT_MAX_TOOL_RESULT_BYTES").then(|| "2048".to_string());
    let flag = Overrides {
        max_tool_result_bytes: Some("8192".into()),
        ..Overrides::default()
    };
    let none = Overrides::default();
    let cap = |f: Option<&Path>, env: &dyn Fn(&str) -> Option<String>, o: &Overrides| {
        Config::resolve(f, env, o)
            .unwrap()
            .agent
            .max_tool_result_bytes
    };
    assert_eq!(cap(Some(&file), &env_set, &flag), 8192);
    assert_eq!(cap(Some(&file), &env_set, &none), 2048);
    assert_eq!(cap(Some(&file), &|_| None, &none), 4096);
    assert_eq!(cap(None, &|_| None, &none), 65_536);
}

#[test]
fn model_tool_choice_is_one_of_four_names() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sluice.toml");
    let resolve = |value: &str| {
        std::fs::write(
            &file,
            format!("[model]\nprovider = \"llamacpp\"\nname = \"m\"\n{value}"),
        )
        .unwrap();
        Config::resolve(Some(&file), &|_| None, &Overrides::default())
    };
    assert_eq!(resolve("").unwrap().model.tool_choice, None);
    let choices = [
        ToolChoice::Auto,
        ToolChoice::Required,
        ToolChoice::None,
        ToolChoice::Omit,
    ];
    for (name, choice) in ToolChoice::NAMES.into_iter().zip(choices) {
        let config = resolve(&format!("tool_choice = \"{name}\"\n")).unwrap();
        assert_eq!(config.model.tool_choice, Some(choice), "{name}");
    }
    let e = resolve("tool_choice = \"always\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(
            "model.tool_choice must be one of auto, required, none, omit; got \"always\""
        ),
        "{e}"
    );
    assert!(resolve("tool_choice = 1\n").is_err());
}

#[test]
fn file_values_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sluice.toml");
    for (text, shown) in [("1.5", "1.5"), ("\"x\"", "\"x\""), ("1023", "1023")] {
        std::fs::write(&file, format!("[agent]\nmax_tool_result_bytes = {text}\n")).unwrap();
        let e = Config::resolve(Some(&file), &|_| None, &Overrides::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "agent.max_tool_result_bytes must be an integer from 1024 to 1048576 (bytes); got {shown} (from {} line 2)",
                file.display()
            )
        );
    }
    std::fs::write(&file, "[agent]\nmax_tool_result = 5\n").unwrap();
    let e = Config::resolve(Some(&file), &|_| None, &Overrides::default()).unwrap_err();
    assert!(
        e.to_string().contains("unknown field `max_tool_result`"),
        "{e}"
    );
}

#[test]
fn roots_from_flags() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("logs");
    std::fs::create_dir(&sub).unwrap();
    let o = Overrides {
        roots: vec![
            sub.display().to_string(),
            format!("src={}", dir.path().display()),
        ],
        ..Overrides::default()
    };
    let c = Config::resolve(None, &|_| None, &o).unwrap();
    assert_eq!(c.roots[0].name, "logs");
    assert_eq!(c.roots[1].name, "src");
    let missing = Overrides {
        roots: vec![format!("x={}/nope", dir.path().display())],
        ..Overrides::default()
    };
    let e = Config::resolve(None, &|_| None, &missing)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!(
            "root \"x\" ({0}/nope, set by --root x={0}/nope): cannot be opened: ",
            dir.path().display()
        )),
        "{e}"
    );
    assert!(e.contains("cannot be opened"), "{e}");
    let dup = Overrides {
        roots: vec![
            format!("a={}", dir.path().display()),
            format!("a={}", sub.display()),
        ],
        ..Overrides::default()
    };
    assert!(
        Config::resolve(None, &|_| None, &dup)
            .unwrap_err()
            .to_string()
            .contains("two roots have this name")
    );
    // A name that is not allowed says so, instead of taking `we ird=.` as a path that
    // does not exist; a directory whose path holds `=` is still taken whole.
    let bad_name = Overrides {
        roots: vec!["we ird=.".into()],
        ..Overrides::default()
    };
    assert_eq!(
        Config::resolve(None, &|_| None, &bad_name)
            .unwrap_err()
            .to_string(),
        "root \"we ird\" (., set by --root we ird=.): the name is not allowed: a root name is 1 to 64 characters of letters, digits, `_`, `-` and `.`, other than `.` and `..` (--root NAME=DIR)"
    );
    let with_equals = dir.path().join("a b=c");
    std::fs::create_dir(&with_equals).unwrap();
    let whole = Overrides {
        roots: vec![with_equals.display().to_string()],
        ..Overrides::default()
    };
    let c = Config::resolve(None, &|_| None, &whole).unwrap();
    assert_eq!(c.roots[0].name, "root");
}

#[test]
fn a_config_file_that_is_not_utf8_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sluice.toml");
    std::fs::write(&path, b"[agent]\n# caf\xE9\nmax_turns = 3\n").unwrap();
    let err = Config::resolve(Some(&path), &|_| None, &Overrides::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "failed to read {}: it is not UTF-8: line 2, byte 6 of the line, is not valid \
             UTF-8 (save the file as UTF-8)",
            path.display()
        )
    );
}
