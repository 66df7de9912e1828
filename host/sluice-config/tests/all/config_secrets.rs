//! `[tools.x.config]` values and `[tools.x.secrets]` sources
//! (docs/configuration.md#config-and-secrets) in `sluice.toml`, `[config]` and `[secrets]` in
//! a tools-directory policy. Secrets are only located here (their values are read when the
//! component loads); bad keys and shapes are refused naming the key, the line and what is
//! allowed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sluice_config::{Config, ConfigError, Overrides};
use sluice_grants::SecretSource;

/// `sluice.toml` holding `body` in a temporary directory.
fn file(body: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sluice.toml");
    std::fs::write(&path, body).unwrap();
    (dir, path)
}

fn refused(body: &str) -> (String, PathBuf) {
    let (dir, path) = file(body);
    let e = Config::resolve(Some(&path), &|_| None, &Overrides::default()).unwrap_err();
    assert!(matches!(e, ConfigError::Value { .. }), "{e:?}");
    drop(dir);
    (e.to_string(), path)
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

#[test]
fn values_and_secret_sources_are_read_from_the_table() {
    let (dir, path) = file(
        "[tools.x]\ncomponent = \"x.wasm\"\n\n[tools.x.config]\nregion = \"eu-west-1\"\n\"api.url\" = \"https://example.test\"\n\n[tools.x.secrets]\ntoken = { env = \"X_TOKEN\" }\nkey = { file = \"secrets/key.txt\" }\n",
    );
    // The variable is not set: that is a load error of the component, not of the file.
    let config = Config::resolve(Some(&path), &|_| None, &Overrides::default()).unwrap();
    let x = config.tools.iter().find(|t| t.name == "x").unwrap();
    assert_eq!(
        x.config,
        BTreeMap::from([
            ("api.url".to_string(), "https://example.test".to_string()),
            ("region".to_string(), "eu-west-1".to_string()),
        ])
    );
    assert_eq!(
        x.secrets,
        BTreeMap::from([
            (
                "key".to_string(),
                SecretSource::File(dir.path().join("secrets/key.txt"))
            ),
            ("token".to_string(), SecretSource::Env("X_TOKEN".into())),
        ])
    );
}

/// The files no tool may read: every tool's secret files and the model's key file, each
/// once, resolved against the file that names them; variables are no files.
#[test]
fn secret_files_list_every_tools_secret_files_and_the_api_key_file_once() {
    let (dir, path) = file(
        "[model]\nprovider = \"openai\"\nname = \"m\"\napi_key_file = \"keys/openai.txt\"\n\n[tools.x]\ncomponent = \"x.wasm\"\n\n[tools.x.secrets]\ntoken = { env = \"X_TOKEN\" }\nkey = { file = \"secrets/key.txt\" }\n\n[tools.y]\ncomponent = \"y.wasm\"\n\n[tools.y.secrets]\nsame = { file = \"secrets/key.txt\" }\nother = { file = \"/run/y.secret\" }\n",
    );
    let config = Config::resolve(Some(&path), &|_| None, &Overrides::default()).unwrap();
    assert_eq!(
        config.secret_files(),
        [
            dir.path().join("secrets/key.txt"),
            PathBuf::from("/run/y.secret"),
            dir.path().join("keys/openai.txt"),
        ]
    );
}

#[test]
fn bad_keys_and_shapes_name_the_key_the_line_and_what_is_allowed() {
    let head = "[tools.x]\ncomponent = \"x.wasm\"\n";
    let cases = [
        (
            "[tools.x.config]\nretries = 3\n",
            "tools.x.config.retries must be a string (config values are strings: quote numbers and booleans); got 3",
            4,
        ),
        (
            "[tools.x.config]\n\"a b\" = \"c\"\n",
            "tools.x.config must be a table whose keys are 1 to 128 characters of A-Z, a-z, 0-9, `_`, `.` and `-`; got the key \"a b\"",
            3,
        ),
        (
            "[tools.x.secrets]\ntoken = { env = \"A\", file = \"b\" }\n",
            "tools.x.secrets.token must be { env = \"VAR\" } (an environment variable of the operator) or { file = \"path\" } (relative to this file); got both env and file",
            4,
        ),
        (
            "[tools.x.secrets]\ntoken = { env = \"A=B\" }\n",
            "tools.x.secrets.token must be { env = \"VAR\" } (an environment variable of the operator) or { file = \"path\" } (relative to this file); got env = \"A=B\"",
            4,
        ),
        (
            "[tools.x.secrets]\ntoken = {}\n",
            "tools.x.secrets.token must be { env = \"VAR\" } (an environment variable of the operator) or { file = \"path\" } (relative to this file); got an empty table",
            4,
        ),
        (
            "[tools.x.config]\ntoken = \"plain\"\n[tools.x.secrets]\ntoken = { env = \"T\" }\n",
            "tools.x.secrets.token must be a key set in either config or secrets, not both; got \"token\", also set in config",
            6,
        ),
    ];
    for (body, expected, line) in cases {
        let (text, path) = refused(&format!("{head}{body}"));
        assert_eq!(
            text,
            format!("{expected} (from {} line {line})", shown(&path)),
            "{body}"
        );
    }
}

#[test]
fn a_secret_that_is_a_string_or_has_unknown_keys_is_a_parse_error_naming_its_line() {
    let (dir, path) =
        file("[tools.x]\ncomponent = \"x.wasm\"\n[tools.x.secrets]\ntoken = \"abc\"\n");
    let e = Config::resolve(Some(&path), &|_| None, &Overrides::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "tools.x.secrets.token must be a table: {{ env = \"VAR\" }} or {{ file = \"path\" }}; got \"abc\" (from {} line 4)",
            shown(&path)
        )
    );
    drop(dir);
    let (dir, path) =
        file("[tools.x]\ncomponent = \"x.wasm\"\n[tools.x.secrets]\ntoken = { value = \"abc\" }\n");
    let text = Config::resolve(Some(&path), &|_| None, &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(
        text.starts_with(&format!(
            "invalid configuration file {}: line 4, tools.x.secrets.token: unknown field `value`, expected `env` or `file`",
            shown(&path)
        )),
        "{text}"
    );
    drop(dir);
}

#[test]
fn a_tools_directory_policy_takes_config_and_secrets_relative_to_itself() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    std::fs::write(tools.join("reader.wasm"), b"\0asm").unwrap();
    std::fs::write(
        tools.join("reader.toml"),
        "[config]\nregion = \"eu\"\n\n[secrets]\ntoken = { file = \"reader.token\" }\n",
    )
    .unwrap();
    let path = dir.path().join("sluice.toml");
    std::fs::write(&path, "tools_dir = \"tools\"\n").unwrap();
    let config = Config::resolve(Some(&path), &|_| None, &Overrides::default()).unwrap();
    let reader = config.tools.iter().find(|t| t.name == "reader").unwrap();
    assert_eq!(
        reader.config,
        BTreeMap::from([("region".to_string(), "eu".to_string())])
    );
    assert_eq!(
        reader.secrets,
        BTreeMap::from([(
            "token".to_string(),
            SecretSource::File(tools.join("reader.token"))
        )])
    );
    // Both: refused, naming the policy file (`strict`; without it the component is left
    // out with that reason).
    let strict = Overrides {
        strict: true,
        ..Overrides::default()
    };
    std::fs::write(
        tools.join("reader.toml"),
        "[config]\ntoken = \"eu\"\n\n[secrets]\ntoken = { env = \"T\" }\n",
    )
    .unwrap();
    let e = Config::resolve(Some(&path), &|_| None, &strict).unwrap_err();
    let left_out = Config::resolve(Some(&path), &|_| None, &Overrides::default()).unwrap();
    assert_eq!(left_out.rejected.len(), 1);
    assert_eq!(left_out.rejected[0].reason, e.to_string());
    assert_eq!(
        e.to_string(),
        format!(
            "tools.reader.secrets.token must be a key set in either config or secrets, not both; got \"token\", also set in config (from {})",
            tools.join("reader.toml").display()
        )
    );
    // A FIFO as the policy file is refused at once, naming it.
    let policy = tools.join("reader.toml");
    std::fs::remove_file(&policy).unwrap();
    sluice_operator_files::make_fifo(&policy).unwrap();
    let e = Config::resolve(Some(&path), &|_| None, &strict).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "failed to read {}: not a regular file (it is a FIFO); name a regular file",
            policy.display()
        )
    );
}

/// A `*.wasm` in a tools directory that is no regular file (a FIFO, a directory) is listed
/// like any other, so loading it says why it is unavailable (and `strict` refuses to start)
/// instead of leaving it out without a word.
#[cfg(unix)]
#[test]
fn a_tools_directory_lists_a_wasm_that_is_no_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    sluice_operator_files::make_fifo(&tools.join("piped.wasm")).unwrap();
    std::fs::create_dir(tools.join("folder.wasm")).unwrap();
    let path = dir.path().join("sluice.toml");
    std::fs::write(&path, "builtins = []\ntools_dir = \"tools\"\n").unwrap();
    let config = Config::resolve(Some(&path), &|_| None, &Overrides::default()).unwrap();
    let listed: Vec<(&str, &sluice_config::ToolSource)> = config
        .tools
        .iter()
        .map(|t| (t.name.as_str(), &t.source))
        .collect();
    assert_eq!(
        listed,
        [
            (
                "folder",
                &sluice_config::ToolSource::Component(tools.join("folder.wasm"))
            ),
            (
                "piped",
                &sluice_config::ToolSource::Component(tools.join("piped.wasm"))
            ),
        ]
    );
}
