//! Every bad configuration is refused at boot (docs/configuration.md#boot-checks) with a
//! message naming the key, the value or the line, and what is allowed. Before, each of these either named neither
//! key nor line (`invalid type: integer `5`, expected a string`, `duplicate key`, `… as i128,
//! expected any valid TOML value`), stated a rule the value satisfied (root `.`), or was
//! accepted silently and failed later or never (`base_url = "not a url"`, a non-UTF-8
//! `SLUICE_AGENT_MAX_TOOL_RESULT_BYTES`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use sluice_config::{Config, ConfigError, Overrides, check_environment};

/// `sluice.toml` holding `body` in a temporary directory with a `logs` directory.
fn file(body: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("logs")).unwrap();
    let path = dir.path().join("sluice.toml");
    std::fs::write(&path, body).unwrap();
    (dir, path)
}

fn refused(body: &str) -> (String, ConfigError, PathBuf) {
    let (dir, path) = file(body);
    let e = Config::resolve(Some(&path), &|_| None, &Overrides::default()).unwrap_err();
    let text = e.to_string();
    drop(dir);
    (text, e, path)
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

#[test]
fn a_duplicate_key_names_the_key_and_line() {
    let (text, e, path) = refused("[agent]\nmax_turns = 5\nmax_turns = 6\n");
    assert!(matches!(e, ConfigError::Parse { .. }), "{e:?}");
    assert_eq!(
        text,
        format!(
            "invalid configuration file {}: line 3: agent.max_turns is set a second time; a key may be set once in its table",
            shown(&path)
        )
    );
}

#[test]
fn wrong_types_name_the_key_the_value_the_line_and_what_is_allowed() {
    let cases = [
        (
            "[tools.x]\ncomponent = \"x.wasm\"\nsha256 = 5\n",
            "tools.x.sha256 must be 64 hexadecimal digits (a string); got 5",
            3,
        ),
        (
            "[agent]\nsystem_prompt = 5\n",
            "agent.system_prompt must be a string; got 5",
            2,
        ),
        (
            "tools = 5\n",
            "tools must be a table of tool policies, one [tools.NAME] table per tool; got 5",
            1,
        ),
        (
            "[tools]\nx = 5\n",
            "tools.x must be a table: [tools.NAME] with component = \"path.wasm\" or builtin = \"read_file\"; got 5",
            2,
        ),
        (
            "roots = \"/srv/logs\"\n",
            "roots must be a table of root names and directories, like [roots] logs = \"/srv/logs\"; got \"/srv/logs\"",
            1,
        ),
        (
            "builtins = \"read_file\"\n",
            "builtins must be an array of built-in tool names, like [\"read_file\", \"list_dir\"]; got \"read_file\"",
            1,
        ),
        (
            "[model]\nstream = \"yes\"\n",
            "model.stream must be a boolean; got \"yes\"",
            2,
        ),
    ];
    for (body, expected, line) in cases {
        let (text, e, path) = refused(body);
        assert!(matches!(e, ConfigError::Value { .. }), "{e:?}");
        assert_eq!(
            text,
            format!("{expected} (from {} line {line})", shown(&path))
        );
    }
}

#[test]
fn an_integer_past_64_bits_is_judged_by_its_key() {
    let (text, _, path) = refused("# caps\n[agent]\nmax_turns = 18446744073709551616\n");
    assert_eq!(
        text,
        format!(
            "agent.max_turns must be an integer from 1 to 10000; got 18446744073709551616 (from {} line 3)",
            shown(&path)
        )
    );
    let (text, _, path) =
        refused("[tools.x]\ncomponent = \"x.wasm\"\ntimeout_ms = 99999999999999999999\n");
    assert_eq!(
        text,
        format!(
            "tools.x.timeout_ms must be an integer from 1 to 3600000 (ms); got 99999999999999999999 (from {} line 3)",
            shown(&path)
        )
    );
    let (text, _, path) = refused("[model]\nmax_retries = -18446744073709551616\n");
    assert_eq!(
        text,
        format!(
            "model.max_retries must be an integer from 0 to 10; got -18446744073709551616 (from {} line 2)",
            shown(&path)
        )
    );
}

#[test]
fn values_checked_after_parsing_name_their_line_too() {
    let (text, _, path) =
        refused("[roots]\nlogs = \"logs\"\n\n[agent]\nmax_tool_result_bytes = 1023\n");
    assert_eq!(
        text,
        format!(
            "agent.max_tool_result_bytes must be an integer from 1024 to 1048576 (bytes); got 1023 (from {} line 5)",
            shown(&path)
        )
    );
    let (text, _, path) = refused(
        "[tools.x]\ncomponent = \"x.wasm\"\nread = [\"nope\"]\n\n[roots]\nlogs = \"logs\"\n",
    );
    assert_eq!(
        text,
        format!(
            "tools.x.read must be names of defined roots (logs); got \"nope\" (from {} line 3)",
            shown(&path)
        )
    );
    // Unknown keys and syntax errors say where.
    let (text, _, path) = refused("[agent]\nmax_tool_result = 5\n");
    assert!(
        text.starts_with(&format!(
            "invalid configuration file {}: line 2, agent.max_tool_result: unknown field `max_tool_result`",
            shown(&path)
        )),
        "{text}"
    );
    let (text, _, path) = refused("[agent]\nmax_turns = \n");
    assert!(
        text.starts_with(&format!(
            "invalid configuration file {}: line 2",
            shown(&path)
        )),
        "{text}"
    );
}

#[test]
fn a_root_named_dot_is_refused_by_a_rule_it_breaks() {
    let (text, _, path) = refused("[roots]\n\".\" = \"logs\"\n");
    // The key, the file and the line that set it.
    assert_eq!(
        text,
        format!(
            "root \".\" (logs, set by roots.\".\" in {} line 2): a root name is 1 to 64 characters of letters, digits, `_`, `-` and `.`, other than `.` and `..`",
            shown(&path)
        )
    );
}

#[test]
fn a_base_url_that_is_not_a_url_stops_the_start() {
    let (text, _, path) = refused(
        "[model]\nprovider = \"openai-compatible\"\nname = \"x\"\nbase_url = \"not a url\"\n",
    );
    assert_eq!(
        text,
        format!(
            "model.base_url must be an http:// or https:// URL with a host, like http://127.0.0.1:11434/v1; got \"not a url\" (from {} line 4)",
            shown(&path)
        )
    );
}

#[cfg(unix)]
#[test]
fn a_variable_that_is_not_utf8_is_refused() {
    use std::os::unix::ffi::OsStringExt;
    let bytes = OsString::from_vec(vec![0xff, 0xfe]);
    let env = |k: &str| (k == "SLUICE_AGENT_MAX_TOOL_RESULT_BYTES").then(|| bytes.clone());
    let e = check_environment(&env).unwrap_err();
    assert_eq!(
        e.to_string(),
        "agent.max_tool_result_bytes must be valid UTF-8 text; got \"\\xFF\\xFE\" (from SLUICE_AGENT_MAX_TOOL_RESULT_BYTES)"
    );
    let store = |k: &str| (k == "SLUICE_STORE").then(|| bytes.clone());
    assert_eq!(
        check_environment(&store).unwrap_err().to_string(),
        "store.path must be valid UTF-8 text (for a path that is not, use --store FILE); got \"\\xFF\\xFE\" (from SLUICE_STORE)"
    );
    // UTF-8 values (good or bad) are left to their keys' checks; other variables are not
    // looked at.
    let fine =
        |k: &str| (k == "SLUICE_AGENT_MAX_TURNS" || k == "HOME").then(|| OsString::from("zero"));
    check_environment(&fine).unwrap();
}

/// `store.url` names a PostgreSQL database; its password must not show in any
/// message, so a refused URL is named by its scheme alone.
#[test]
fn a_store_url_that_is_not_postgresql_is_refused_without_showing_it() {
    let (text, e, path) = refused("[store]\nurl = \"mysql://u:hunter2@db/sessions\"\n");
    assert!(matches!(e, ConfigError::Value { .. }), "{e:?}");
    assert_eq!(
        text,
        format!(
            "store.url must be a PostgreSQL URL, postgres://USER:PASSWORD@HOST:PORT/DATABASE (or postgresql://…); got a URL starting \"mysql\" (not shown: it may hold a password) (from {} line 2)",
            shown(&path)
        )
    );
    let env = |k: &str| (k == "SLUICE_STORE_URL").then(|| "sqlite://hunter2".to_string());
    let text = Config::resolve(None, &env, &Overrides::default())
        .unwrap_err()
        .to_string();
    assert_eq!(
        text,
        "store.url must be a PostgreSQL URL, postgres://USER:PASSWORD@HOST:PORT/DATABASE (or postgresql://…); got a URL starting \"sqlite\" (not shown: it may hold a password) (from SLUICE_STORE_URL)"
    );
    let flag = Overrides {
        store_url: Some("hunter2@db".into()),
        ..Overrides::default()
    };
    let text = Config::resolve(None, &|_| None, &flag)
        .unwrap_err()
        .to_string();
    assert_eq!(
        text,
        "store.url must be a PostgreSQL URL, postgres://USER:PASSWORD@HOST:PORT/DATABASE (or postgresql://…); got a value that is not a URL (not shown: it may hold a password) (from --store-url)"
    );
    // A libpq keyword string is not a URL either, and its password is not shown.
    let flag = Overrides {
        store_url: Some("host=db password=hunter2://x".into()),
        ..Overrides::default()
    };
    let text = Config::resolve(None, &|_| None, &flag)
        .unwrap_err()
        .to_string();
    assert!(!text.contains("hunter2"), "{text}");
    assert!(text.contains("got a value that is not a URL"), "{text}");
}

#[test]
fn a_store_url_and_a_store_path_together_are_refused() {
    let (text, _, path) =
        refused("[store]\npath = \"sessions.db\"\nurl = \"postgres://u:hunter2@db/s\"\n");
    assert_eq!(
        text,
        format!(
            "store must be either store.url (--store-url, SLUICE_STORE_URL) or store.path (--store, SLUICE_STORE), not both; got both a PostgreSQL URL and a database file (from {} line 1)",
            shown(&path)
        )
    );
}

#[test]
fn the_store_url_flag_beats_the_variable_and_the_file() {
    let (_dir, path) = file("[store]\nurl = \"postgres://file@db/s\"\n");
    let env = |k: &str| (k == "SLUICE_STORE_URL").then(|| "postgres://env@db/s".to_string());
    let resolve = |flag: Option<&str>, env: &dyn Fn(&str) -> Option<String>| {
        let o = Overrides {
            store_url: flag.map(str::to_owned),
            ..Overrides::default()
        };
        Config::resolve(Some(&path), env, &o).unwrap().store_url
    };
    assert_eq!(
        resolve(Some("postgres://flag@db/s"), &env).as_deref(),
        Some("postgres://flag@db/s")
    );
    assert_eq!(resolve(None, &env).as_deref(), Some("postgres://env@db/s"));
    assert_eq!(
        resolve(None, &|_| None).as_deref(),
        Some("postgres://file@db/s")
    );
    // An empty variable is unset.
    let empty = |k: &str| (k == "SLUICE_STORE_URL").then(String::new);
    assert_eq!(
        resolve(None, &empty).as_deref(),
        Some("postgres://file@db/s")
    );
}

#[test]
fn bad_http_policy_values_name_the_key_the_line_and_what_is_allowed() {
    let (text, _, path) = refused(
        "[roots]\nlogs = \"logs\"\n\n[tools.x]\ncomponent = \"x.wasm\"\nhttp = [\"api.example.com\", \"https://example.com/v1\"]\n",
    );
    assert_eq!(
        text,
        format!(
            "tools.x.http must be {} (an entry names a host, not a URL: leave out the scheme and the path); got \"https://example.com/v1\" (from {} line 6)",
            sluice_config::http::HTTP_ENTRY_RULE,
            shown(&path)
        )
    );
    let (text, _, path) = refused(
        "[roots]\nlogs = \"logs\"\n\n[tools.x]\ncomponent = \"x.wasm\"\nhttp = [\"0x7f.1:8080\"]\n",
    );
    assert_eq!(
        text,
        format!(
            "tools.x.http must be {} (\"0x7f.1\" reads as the IPv4 address 127.0.0.1: write IPv4 addresses as four decimal numbers, a.b.c.d); got \"0x7f.1:8080\" (from {} line 6)",
            sluice_config::http::HTTP_ENTRY_RULE,
            shown(&path)
        )
    );
    let (text, _, path) = refused(
        "[roots]\nlogs = \"logs\"\n\n[tools.x]\ncomponent = \"x.wasm\"\nhttp_methods = [\"GET POST\"]\n",
    );
    assert_eq!(
        text,
        format!(
            "tools.x.http_methods must be a list of HTTP methods, each one of GET, HEAD, POST, PUT, DELETE, CONNECT, OPTIONS, TRACE, PATCH (\"GET POST\" is not one of them); got \"GET POST\" (from {} line 6)",
            shown(&path)
        )
    );
    let (text, _, path) = refused(
        "[roots]\nlogs = \"logs\"\n\n[tools.x]\ncomponent = \"x.wasm\"\nhttp_max_response_bytes = 0\n",
    );
    assert_eq!(
        text,
        format!(
            "tools.x.http_max_response_bytes must be an integer from 1 to 1073741824 (bytes); got 0 (from {} line 6)",
            shown(&path)
        )
    );
    let (text, _, path) = refused(
        "[roots]\nlogs = \"logs\"\n\n[tools.x]\ncomponent = \"x.wasm\"\nhttp_max_connections = 257\n",
    );
    assert_eq!(
        text,
        format!(
            "tools.x.http_max_connections must be an integer from 1 to 256 (requests open at once); got 257 (from {} line 6)",
            shown(&path)
        )
    );
}

#[test]
fn http_policy_keys_reach_the_tool_config() {
    use sluice_grants::{HttpAllow, HttpGrant, HttpHost};
    let (dir, path) = file(
        "[roots]\nlogs = \"logs\"\n\n[tools.x]\ncomponent = \"x.wasm\"\nhttp = [\"api.example.com\", \"*.example.org:8443\", \"127.0.0.1:8080\"]\nhttp_methods = [\"GET\"]\nhttp_private = true\nhttp_max_response_bytes = 4096\nhttp_max_connections = 3\n",
    );
    let config = Config::resolve(Some(&path), &|_| None, &Overrides::default()).unwrap();
    drop(dir);
    let x = config.tools.iter().find(|t| t.name == "x").unwrap();
    assert_eq!(
        x.http,
        HttpGrant {
            allow: vec![
                HttpAllow {
                    host: HttpHost::Name("api.example.com".into()),
                    port: None
                },
                HttpAllow {
                    host: HttpHost::Subdomains("example.org".into()),
                    port: Some(8443)
                },
                HttpAllow {
                    host: HttpHost::Ip([127, 0, 0, 1].into()),
                    port: Some(8080)
                },
            ],
            methods: vec!["GET".into()],
            private: true,
            max_response_bytes: 4096,
            max_connections: 3,
            credentials: Vec::new(),
        }
    );
}

/// A FIFO (or a directory) named as the configuration file is refused at once: a plain read
/// would wait for a writer for ever.
#[test]
fn a_fifo_or_a_directory_as_the_configuration_file_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("sluice.toml");
    sluice_operator_files::make_fifo(&fifo).unwrap();
    let e = Config::resolve(Some(&fifo), &|_| None, &Overrides::default()).unwrap_err();
    assert!(matches!(e, ConfigError::Read { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "failed to read {}: not a regular file (it is a FIFO); name a regular file",
            shown(&fifo)
        )
    );
    let e = Config::resolve(Some(dir.path()), &|_| None, &Overrides::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "failed to read {}: not a regular file (it is a directory); name a regular file",
            shown(dir.path())
        )
    );
}
