//! `[tools.NAME.http_credentials."HOST"]` in `sluice.toml` and `[http_credentials."HOST"]` in
//! a tools-directory policy (docs/configuration.md#credentials-the-tool-never-holds). A
//! credential is keyed by an entry of the policy's `http` list naming one host; its header is
//! a token the host does not own; its value holds `{secret}` once; its secret is located as
//! one of `secrets` is. Each wrong credential is refused naming the key, the value and what is
//! allowed.

use std::path::{Path, PathBuf};

use sluice_config::http::parse_entry;
use sluice_config::{Config, Overrides};
use sluice_grants::{HttpCredential, SecretSource};

/// `sluice.toml` holding `body` in a temporary directory.
fn file(body: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sluice.toml");
    std::fs::write(&path, body).unwrap();
    (dir, path)
}

fn resolve(path: &Path) -> Result<Config, sluice_config::ConfigError> {
    Config::resolve(Some(path), &|_| None, &Overrides::default())
}

/// The table of tool `api` with `http = [...]` as given.
const HEAD: &str = "[tools.api]\ncomponent = \"api.wasm\"\nhttp = [\"api.example.com\", \"127.0.0.1:8080\", \"*.example.org\"]\n";

#[test]
fn credentials_reach_the_tool_config_keyed_by_their_entry() {
    let (dir, path) = file(&format!(
        "{HEAD}\n[tools.api.http_credentials.\"api.example.com\"]\nheader = \"Authorization\"\nvalue = \"Bearer {{secret}}\"\nsecret = {{ env = \"API_TOKEN\" }}\n\n[tools.api.http_credentials.\"127.0.0.1:8080\"]\nheader = \"X-Api-Key\"\nvalue = \"{{secret}}\"\nsecret = {{ file = \"keys/local.txt\" }}\n"
    ));
    // The variable is not set: that is a load error of the component, not of the file.
    let config = resolve(&path).unwrap();
    let api = config.tools.iter().find(|t| t.name == "api").unwrap();
    assert_eq!(
        api.http.credentials,
        [
            HttpCredential {
                entry: parse_entry("127.0.0.1:8080").unwrap(),
                header: "x-api-key".into(),
                value: "{secret}".into(),
                secret: SecretSource::File(dir.path().join("keys/local.txt")),
            },
            HttpCredential {
                entry: parse_entry("api.example.com").unwrap(),
                header: "authorization".into(),
                value: "Bearer {secret}".into(),
                secret: SecretSource::Env("API_TOKEN".into()),
            },
        ]
    );
    // A credential's file is refused to every tool, as a secret's is.
    assert_eq!(config.secret_files(), [dir.path().join("keys/local.txt")]);
}

#[test]
fn a_tools_directory_policy_takes_http_credentials_tables() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    std::fs::write(tools.join("fetch.wasm"), b"").unwrap();
    std::fs::write(
        tools.join("fetch.toml"),
        "http = [\"[::1]:8443\"]\n\n[http_credentials.\"[::1]:8443\"]\nheader = \"Authorization\"\nvalue = \"token {secret}\"\nsecret = { file = \"fetch.key\" }\n",
    )
    .unwrap();
    let path = dir.path().join("sluice.toml");
    std::fs::write(&path, "builtins = []\ntools_dir = \"tools\"\n").unwrap();
    let config = resolve(&path).unwrap();
    let fetch = config.tools.iter().find(|t| t.name == "fetch").unwrap();
    assert_eq!(
        fetch.http.credentials,
        [HttpCredential {
            entry: parse_entry("[::1]:8443").unwrap(),
            header: "authorization".into(),
            value: "token {secret}".into(),
            secret: SecretSource::File(tools.join("fetch.key")),
        }]
    );
}

#[test]
fn wrong_credentials_name_the_key_the_value_and_what_is_allowed() {
    let listed = "it lists api.example.com, 127.0.0.1:8080, *.example.org";
    let good =
        "header = \"Authorization\"\nvalue = \"Bearer {secret}\"\nsecret = { env = \"T\" }\n";
    let cases = [
        (
            format!("[tools.api.http_credentials.\"api.other.com\"]\n{good}"),
            format!(
                "tools.api.http_credentials must be a table keyed by entries of this policy's http list that name one host ({listed}); got the key \"api.other.com\""
            ),
            None,
        ),
        (
            // The entry without a port is not the entry with one.
            format!("[tools.api.http_credentials.\"api.example.com:443\"]\n{good}"),
            format!(
                "tools.api.http_credentials must be a table keyed by entries of this policy's http list that name one host ({listed}); got the key \"api.example.com:443\""
            ),
            None,
        ),
        (
            format!("[tools.api.http_credentials.\"*.example.org\"]\n{good}"),
            format!(
                "tools.api.http_credentials must be a table keyed by entries of this policy's http list that name one host ({listed}); a wildcard `*.DOMAIN` covers many hosts and a credential goes to one: list that host in http and key the credential by it; got the key \"*.example.org\""
            ),
            None,
        ),
        (
            format!("[tools.api.http_credentials.\"https://api.example.com\"]\n{good}"),
            format!(
                "tools.api.http_credentials must be a table keyed by entries of this policy's http list that name one host ({listed}); an entry names a host, not a URL: leave out the scheme and the path; got the key \"https://api.example.com\""
            ),
            None,
        ),
        (
            "[tools.api.http_credentials.\"api.example.com\"]\nheader = \"Authorization\"\nvalue = \"Bearer\"\nsecret = { env = \"T\" }\n".to_string(),
            "tools.api.http_credentials.\"api.example.com\".value must be the header's value with {secret} exactly once where the secret goes (\"Bearer {secret}\"), otherwise printable ASCII characters, spaces and tabs; got \"Bearer\"".to_string(),
            Some(7),
        ),
        (
            "[tools.api.http_credentials.\"api.example.com\"]\nheader = \"Authorization\"\nvalue = \"{secret}:{secret}\"\nsecret = { env = \"T\" }\n".to_string(),
            "tools.api.http_credentials.\"api.example.com\".value must be the header's value with {secret} exactly once where the secret goes (\"Bearer {secret}\"), otherwise printable ASCII characters, spaces and tabs; got \"{secret}:{secret}\"".to_string(),
            Some(7),
        ),
        (
            "[tools.api.http_credentials.\"api.example.com\"]\nheader = \"Authorization\"\nvalue = \"Bearer {secret}\\r\\nX-Other: 1\"\nsecret = { env = \"T\" }\n".to_string(),
            "tools.api.http_credentials.\"api.example.com\".value must be the header's value with {secret} exactly once where the secret goes (\"Bearer {secret}\"), otherwise printable ASCII characters, spaces and tabs; got \"Bearer {secret}\\r\\nX-Other: 1\"".to_string(),
            Some(7),
        ),
        (
            "[tools.api.http_credentials.\"api.example.com\"]\nheader = \"Host\"\nvalue = \"{secret}\"\nsecret = { env = \"T\" }\n".to_string(),
            "tools.api.http_credentials.\"api.example.com\".header must be an HTTP header name (1 to 64 of the token characters A-Z a-z 0-9 ! # $ % & ' * + - . ^ _ ` | ~) that the host does not set itself (not Host, Content-Length, Transfer-Encoding, Connection, Keep-Alive, Proxy-Connection, Proxy-Authorization, Proxy-Authenticate, TE, Trailer, Upgrade, HTTP2-Settings or Accept-Encoding); got \"Host\"".to_string(),
            Some(6),
        ),
        (
            "[tools.api.http_credentials.\"api.example.com\"]\nheader = \"Content-Length\"\nvalue = \"{secret}\"\nsecret = { env = \"T\" }\n".to_string(),
            "tools.api.http_credentials.\"api.example.com\".header must be an HTTP header name (1 to 64 of the token characters A-Z a-z 0-9 ! # $ % & ' * + - . ^ _ ` | ~) that the host does not set itself (not Host, Content-Length, Transfer-Encoding, Connection, Keep-Alive, Proxy-Connection, Proxy-Authorization, Proxy-Authenticate, TE, Trailer, Upgrade, HTTP2-Settings or Accept-Encoding); got \"Content-Length\"".to_string(),
            Some(6),
        ),
        (
            "[tools.api.http_credentials.\"api.example.com\"]\nheader = \"X Api Key\"\nvalue = \"{secret}\"\nsecret = { env = \"T\" }\n".to_string(),
            "tools.api.http_credentials.\"api.example.com\".header must be an HTTP header name (1 to 64 of the token characters A-Z a-z 0-9 ! # $ % & ' * + - . ^ _ ` | ~) that the host does not set itself (not Host, Content-Length, Transfer-Encoding, Connection, Keep-Alive, Proxy-Connection, Proxy-Authorization, Proxy-Authenticate, TE, Trailer, Upgrade, HTTP2-Settings or Accept-Encoding); got \"X Api Key\"".to_string(),
            Some(6),
        ),
        (
            "[tools.api.http_credentials.\"api.example.com\"]\nheader = \"Authorization\"\nvalue = \"Bearer {secret}\"\nsecret = { env = \"A\", file = \"b\" }\n".to_string(),
            "tools.api.http_credentials.\"api.example.com\".secret must be { env = \"VAR\" } (an environment variable of the operator) or { file = \"path\" } (relative to this file); got both env and file".to_string(),
            Some(8),
        ),
    ];
    for (body, expected, line) in cases {
        let (dir, path) = file(&format!("{HEAD}\n{body}"));
        let e = resolve(&path).unwrap_err();
        let at = match line {
            Some(n) => format!("{} line {n}", path.display()),
            None => format!("{} [tools.api]", path.display()),
        };
        assert_eq!(e.to_string(), format!("{expected} (from {at})"), "{body}");
        drop(dir);
    }
}

#[test]
fn a_credential_without_its_header_or_with_an_unknown_key_is_a_parse_error() {
    let (dir, path) = file(&format!(
        "{HEAD}\n[tools.api.http_credentials.\"api.example.com\"]\nvalue = \"Bearer {{secret}}\"\nsecret = {{ env = \"T\" }}\n"
    ));
    let e = resolve(&path).unwrap_err().to_string();
    assert!(e.contains("missing field `header`"), "{e}");
    drop(dir);
    let (dir, path) = file(&format!(
        "{HEAD}\n[tools.api.http_credentials.\"api.example.com\"]\nheader = \"Authorization\"\nvalue = \"Bearer {{secret}}\"\nsecret = {{ env = \"T\" }}\nscheme = \"https\"\n"
    ));
    let e = resolve(&path).unwrap_err().to_string();
    assert!(
        e.contains("unknown field `scheme`, expected one of `header`, `value`, `secret`"),
        "{e}"
    );
    drop(dir);
}

#[test]
fn a_secret_the_tool_is_also_given_is_refused() {
    let (dir, path) = file(&format!(
        "{HEAD}env = [\"API_TOKEN\"]\n\n[tools.api.secrets]\ntoken = {{ file = \"k.txt\" }}\n\n[tools.api.http_credentials.\"api.example.com\"]\nheader = \"Authorization\"\nvalue = \"Bearer {{secret}}\"\nsecret = {{ file = \"k.txt\" }}\n"
    ));
    let e = resolve(&path).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "tools.api.http_credentials.\"api.example.com\".secret must be a source the tool is not also given (in env or secrets), or the tool would hold the secret: remove it there; got file = {:?} (secrets.token reads it too) (from {} line 12)",
            dir.path().join("k.txt").display().to_string(),
            path.display()
        )
    );
    std::fs::write(
        &path,
        format!(
            "{HEAD}env = [\"API_TOKEN\"]\n\n[tools.api.http_credentials.\"api.example.com\"]\nheader = \"Authorization\"\nvalue = \"Bearer {{secret}}\"\nsecret = {{ env = \"API_TOKEN\" }}\n"
        ),
    )
    .unwrap();
    let e = resolve(&path).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "tools.api.http_credentials.\"api.example.com\".secret must be a source the tool is not also given (in env or secrets), or the tool would hold the secret: remove it there; got env = \"API_TOKEN\" (env lists API_TOKEN) (from {} line 9)",
            path.display()
        )
    );
}
