//! Where each value of the effective configuration came from (`sluice doctor`): a flag, a
//! `SLUICE_*` environment variable, a line of `sluice.toml`, or the default.
//!
//! The precedence is [`Config::resolve`]'s (flag, variable, file, default); the variables
//! are [`ENV_KEYS`], the flags [`Overrides::flags_given`], the lines the file's own
//! ([`Source::line_of_key`]). Every key the file sets is listed, known to this module or
//! not (a new key shows as written), and so is every variable of [`ENV_KEYS`] that is set.
//!
//! ```
//! use sluice_config::{Config, Origin, Overrides};
//!
//! let env = |k: &str| (k == "SLUICE_AGENT_MAX_TURNS").then(|| "7".to_string());
//! let overrides = Overrides { roots: vec![".".into()], ..Overrides::default() };
//! let explained = Config::explain(None, &env, &overrides, &|url| url.to_string())?;
//! let turns = explained.settings.iter().find(|s| s.key == "agent.max_turns").unwrap();
//! assert_eq!((turns.value.as_str(), turns.origin.to_string()), ("7", "SLUICE_AGENT_MAX_TURNS".into()));
//! let cap = explained.settings.iter().find(|s| s.key == "agent.max_tool_result_bytes").unwrap();
//! assert_eq!(cap.origin, Origin::Default);
//! # Ok::<(), sluice_config::ConfigError>(())
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use crate::file::Source;
use crate::{Config, ConfigError, ENV_KEYS, Overrides, ToolSource, keys};

/// Where one value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Nothing set it.
    Default,
    /// A line of the configuration file (1-based), shown `FILE:LINE`.
    File {
        /// The file, as given.
        path: PathBuf,
        /// The line that sets the key (or opens its table).
        line: usize,
    },
    /// An environment variable (`SLUICE_AGENT_MAX_TURNS`).
    Env(String),
    /// A command-line flag (`--max-turns`).
    Flag(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Default => f.write_str("default"),
            Origin::File { path, line } => write!(f, "{}:{line}", path.display()),
            Origin::Env(var) => f.write_str(var),
            Origin::Flag(flag) => f.write_str(flag),
        }
    }
}

impl serde::Serialize for Origin {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One key of the effective configuration.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Setting {
    /// The key as `sluice.toml` names it (`agent.max_turns`, `roots.logs`,
    /// `tools.weather.memory_mib`).
    pub key: String,
    /// The value in force, as text: numbers and booleans bare, a list as `[a, b]`, `unset`
    /// for an optional key nobody set. Values from the file that this module does not
    /// resolve are shown as written (TOML). Secrets are redacted: a store URL's password
    /// and any value of a key named like a secret (`token`, `password`, `secret`,
    /// `api_key`).
    pub value: String,
    /// Where it came from (serialized as its text: `default`, `FILE:LINE`, the variable,
    /// the flag).
    #[serde(rename = "source")]
    pub origin: Origin,
}

/// A resolved configuration with the source of every value.
#[derive(Clone, Debug)]
pub struct Explained {
    /// The configuration, as [`Config::resolve`] gives it.
    pub config: Config,
    /// Every key, in the order of docs/configuration.md's tables, then the file's other
    /// keys in file order.
    pub settings: Vec<Setting>,
}

/// What a value shows when it is a secret.
pub const REDACTED: &str = "*** (redacted)";

impl Overrides {
    /// The keys the given flags set, as (key, flag): `--root` sets every `roots.NAME`
    /// (its key here is `roots`), `--model` both `model.provider` and `model.name`; the
    /// other flags are those of [`keys::KEYS`].
    pub fn flags_given(&self) -> Vec<(&'static str, &'static str)> {
        let declared = [
            (
                &keys::AGENT_MAX_TOOL_RESULT_BYTES,
                self.max_tool_result_bytes.is_some(),
            ),
            (&keys::TOOLS_DIR, self.tools_dir.is_some()),
            (&keys::AGENT_MAX_TURNS, self.max_turns.is_some()),
            (&keys::AGENT_AUTO_APPROVE, self.auto_approve),
            (&keys::STORE_PATH, self.store.is_some()),
            (&keys::STORE_URL, self.store_url.is_some()),
            (
                &keys::RUNTIME_MAX_CONCURRENT_CALLS,
                self.max_concurrent_calls.is_some(),
            ),
            (&keys::SERVER_ALLOWED_HOSTS, !self.allowed_hosts.is_empty()),
            (&keys::MCP_ALLOW_DESTRUCTIVE, self.allow_destructive),
            (&keys::STRICT, self.strict),
        ];
        let mut given: Vec<_> = declared
            .into_iter()
            .filter(|(_, set)| *set)
            .map(|(key, _)| (key.name, key.flag_name()))
            .collect();
        let mut add = |set: bool, key, flag| {
            if set {
                given.push((key, flag));
            }
        };
        add(!self.roots.is_empty(), "roots", "--root");
        add(self.model.is_some(), "model.provider", "--model");
        add(self.model.is_some(), "model.name", "--model");
        add(
            self.tls_cert.is_some(),
            "server.tls.cert_file",
            crate::FLAG_TLS_CERT,
        );
        add(
            self.tls_key.is_some(),
            "server.tls.key_file",
            crate::FLAG_TLS_KEY,
        );
        given
    }
}

impl Config {
    /// [`Config::resolve`], with the value and the source of every key. `redact_url` shows
    /// a store URL without its password (`sluice_store::redact_url`).
    ///
    /// # Errors
    /// As [`Config::resolve`].
    pub fn explain(
        file: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
        overrides: &Overrides,
        redact_url: &dyn Fn(&str) -> String,
    ) -> Result<Explained, ConfigError> {
        let config = Config::resolve(file, env, overrides)?;
        let text = match file {
            Some(path) => {
                sluice_operator_files::read_text(path, sluice_operator_files::MAX_CONFIG_FILE_BYTES)
                    .map_err(|e| ConfigError::Read {
                        path: path.to_path_buf(),
                        reason: e.to_string(),
                    })?
            }
            None => String::new(),
        };
        let source = file.map(|path| Source {
            path,
            text: &text,
            label: path.display().to_string(),
        });
        let flags = overrides.flags_given();
        let origin_of = |key: &str| -> Origin {
            let head = if key.starts_with("roots.") {
                "roots"
            } else {
                key
            };
            if let Some((_, flag)) = flags.iter().find(|(k, _)| *k == head) {
                return Origin::Flag((*flag).to_string());
            }
            if let Some(declared) = keys::KEYS.iter().find(|k| k.name == key)
                && let (Some(var), Some(_)) = (declared.env, declared.env_value(env))
            {
                return Origin::Env(var.to_string());
            }
            match source.as_ref().and_then(|s| Some((s, s.line_of_key(key)?))) {
                Some((s, line)) => Origin::File {
                    path: s.path.to_path_buf(),
                    line,
                },
                None => Origin::Default,
            }
        };
        let mut settings: Vec<Setting> = values(&config, redact_url)
            .into_iter()
            .map(|(key, value)| Setting {
                origin: origin_of(&key),
                key,
                value,
            })
            .collect();
        // Variables of keys this module does not resolve: as given.
        for (var, key) in ENV_KEYS {
            if let Some(value) = env(var)
                && !settings.iter().any(|s| s.key == *key)
            {
                settings.push(Setting {
                    key: (*key).to_string(),
                    value: shown_secret(key, value),
                    origin: Origin::Env((*var).to_string()),
                });
            }
        }
        // The file's other keys (tool policies, tables added later): as written.
        if let Some(s) = &source
            && let Ok(table) = text.parse::<toml::Table>()
        {
            let mut leaves = Vec::new();
            file_leaves(s, &table, "", &mut leaves);
            for (key, value, line) in leaves {
                if settings.iter().any(|x| x.key == key) {
                    continue;
                }
                settings.push(Setting {
                    value: shown_secret(&key, value),
                    key,
                    origin: Origin::File {
                        path: s.path.to_path_buf(),
                        line,
                    },
                });
            }
        }
        Ok(Explained { config, settings })
    }
}

/// `value`, or [`REDACTED`] when `key`'s last part names a secret.
fn shown_secret(key: &str, value: String) -> String {
    let last = key.rsplit('.').next().unwrap_or(key).to_ascii_lowercase();
    let secret = ["token", "password", "secret", "api_key"]
        .iter()
        .any(|w| last.contains(w))
        && !last.ends_with("_env")
        && !last.ends_with("_file");
    if secret { REDACTED.to_string() } else { value }
}

/// The keys set in `table` (below `prefix`), each with its value as written and its line:
/// a table opened by a header is walked into, a value (an inline table included) is a key.
fn file_leaves(
    source: &Source<'_>,
    table: &toml::Table,
    prefix: &str,
    out: &mut Vec<(String, String, usize)>,
) {
    for (name, value) in table {
        let key = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        let line = source.line_of_key(&key);
        let header = line.is_some_and(|n| {
            source
                .text
                .lines()
                .nth(n - 1)
                .is_some_and(|l| l.trim_start().starts_with('['))
        });
        match (value, line) {
            (toml::Value::Table(inner), _) if header || line.is_none() => {
                file_leaves(source, inner, &key, out);
            }
            (value, Some(line)) => out.push((key, value.to_string(), line)),
            (_, None) => {}
        }
    }
}

fn unset_or<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "unset".to_string(), |v| v.to_string())
}

fn list(items: impl IntoIterator<Item = String>) -> String {
    format!("[{}]", items.into_iter().collect::<Vec<_>>().join(", "))
}

/// Every key [`Config`] resolves, with its value in force, in the order of
/// docs/configuration.md.
fn values(c: &Config, redact_url: &dyn Fn(&str) -> String) -> Vec<(String, String)> {
    let m = &c.model;
    let limits = &c.server.limits;
    let mut v: Vec<(String, String)> = vec![
        (
            "agent.max_tool_result_bytes".into(),
            c.agent.max_tool_result_bytes.to_string(),
        ),
        ("agent.max_turns".into(), c.agent.max_turns.to_string()),
        (
            "agent.auto_approve".into(),
            c.agent.auto_approve.to_string(),
        ),
        (
            "agent.system_prompt".into(),
            c.agent
                .system_prompt
                .as_ref()
                .map_or("unset (the built-in prompt)".into(), |p| {
                    format!("{} characters", p.chars().count())
                }),
        ),
    ];
    for r in &c.roots {
        v.push((format!("roots.{}", r.name), r.dir.display().to_string()));
    }
    v.push((
        "builtins".into(),
        list(c.tools.iter().filter_map(|t| match &t.source {
            ToolSource::Builtin(b)
                if matches!(t.origin, sluice_grants::PolicyOrigin::Builtins(_)) =>
            {
                Some(b.clone())
            }
            _ => None,
        })),
    ));
    v.extend([
        (
            "tools_dir".into(),
            unset_or(c.tools_dir.as_ref().map(|d| d.display())),
        ),
        ("strict".into(), c.strict.to_string()),
        (
            "store.path".into(),
            c.store
                .as_ref()
                .map_or("unset (the default location)".into(), |p| {
                    p.display().to_string()
                }),
        ),
        (
            "store.url".into(),
            unset_or(c.store_url.as_deref().map(redact_url)),
        ),
        ("model.provider".into(), m.provider.to_string()),
        ("model.name".into(), m.name.clone()),
        ("model.base_url".into(), unset_or(m.base_url.as_ref())),
        ("model.api_key_env".into(), unset_or(m.api_key_env.as_ref())),
        (
            "model.api_key_file".into(),
            unset_or(m.api_key_file.as_ref().map(|f| f.display())),
        ),
        ("model.region".into(), unset_or(m.region.as_ref())),
        ("model.max_tokens".into(), m.max_tokens.to_string()),
        (
            "model.context_window_tokens".into(),
            unset_or(m.context_window_tokens),
        ),
        ("model.stream".into(), m.stream.to_string()),
        (
            "model.connect_timeout_ms".into(),
            m.connect_timeout_ms.to_string(),
        ),
        (
            "model.request_timeout_ms".into(),
            m.request_timeout_ms.to_string(),
        ),
        ("model.max_retries".into(), m.max_retries.to_string()),
        (
            "model.tool_choice".into(),
            unset_or(m.tool_choice.map(|t| crate::ToolChoice::NAMES[t as usize])),
        ),
        (
            "runtime.max_concurrent_calls".into(),
            c.runtime.max_concurrent_calls.to_string(),
        ),
        (
            "runtime.queue_timeout_ms".into(),
            c.runtime.queue_timeout_ms.to_string(),
        ),
        (
            "runtime.baseline_compiler".into(),
            c.runtime.baseline_compiler.to_string(),
        ),
        (
            "server.allowed_hosts".into(),
            list(c.server.allowed_hosts.iter().cloned()),
        ),
        (
            "server.header_read_timeout_ms".into(),
            limits.header_read_timeout.as_millis().to_string(),
        ),
        (
            "server.max_connections".into(),
            limits.max_connections.to_string(),
        ),
        (
            "server.max_unauthenticated_connections".into(),
            limits.max_unauthenticated_connections.to_string(),
        ),
        (
            "server.max_event_streams".into(),
            limits.max_event_streams.to_string(),
        ),
        (
            "server.tls.cert_file".into(),
            unset_or(c.server.tls.as_ref().map(|t| t.cert_file.display())),
        ),
        (
            "server.tls.key_file".into(),
            unset_or(c.server.tls.as_ref().map(|t| t.key_file.display())),
        ),
        (
            "mcp.allow_destructive".into(),
            c.mcp.allow_destructive.to_string(),
        ),
        (
            "mcp.tools_per_page".into(),
            c.mcp.tools_per_page.to_string(),
        ),
        (
            "code_mode.inner_max_result_bytes".into(),
            c.code_mode.inner_max_result_bytes.to_string(),
        ),
        (
            "code_mode.max_inner_calls".into(),
            c.code_mode.max_inner_calls.to_string(),
        ),
        (
            "code_mode.max_inner_bytes".into(),
            c.code_mode.max_inner_bytes.to_string(),
        ),
        (
            "registry.max_manifest_bytes".into(),
            c.registry.max_manifest_bytes.to_string(),
        ),
        (
            "registry.max_component_bytes".into(),
            c.registry.max_component_bytes.to_string(),
        ),
        (
            "registry.timeout_secs".into(),
            c.registry.timeout.as_secs().to_string(),
        ),
        (
            crate::KEY_CACHE_MAX_BYTES.into(),
            c.cache_max_bytes
                .map_or("unset (the cache's default)".into(), |b| b.to_string()),
        ),
        (
            "telemetry.otlp_endpoint".into(),
            unset_or(c.telemetry.otlp_endpoint.as_deref().map(redact_url)),
        ),
        (
            "telemetry.capture_content".into(),
            c.telemetry.capture_content.to_string(),
        ),
        ("telemetry.metrics".into(), c.telemetry.metrics.to_string()),
        (
            "telemetry.metrics_listen".into(),
            unset_or(c.telemetry.metrics_listen),
        ),
    ]);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn explain(text: &str, env: &[(&str, &str)], overrides: &Overrides) -> Explained {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("logs")).unwrap();
        let file = dir.path().join("sluice.toml");
        std::fs::write(&file, text).unwrap();
        let env = |k: &str| {
            env.iter()
                .find(|(v, _)| *v == k)
                .map(|(_, x)| x.to_string())
        };
        let mut e = Config::explain(Some(&file), &env, overrides, &|_| {
            "postgres://u:***@db/s".into()
        })
        .unwrap();
        // Paths in the temporary directory, shown relative to it.
        for s in &mut e.settings {
            s.value = s.value.replace(&dir.path().display().to_string(), "DIR");
            if let Origin::File { path, .. } = &mut s.origin {
                *path = PathBuf::from("sluice.toml");
            }
        }
        e
    }

    fn shown(e: &Explained, key: &str) -> (String, String) {
        let s = e.settings.iter().find(|s| s.key == key).unwrap();
        (s.value.clone(), s.origin.to_string())
    }

    #[test]
    fn every_value_names_its_source() {
        let text = "[agent]\nmax_turns = 5\nauto_approve = true\n\n[roots]\nlogs = \"logs\"\n\n[store]\nurl = \"postgres://u:pw@db/s\"\n\n[tools.t]\ncomponent = \"t.wasm\"\nmemory_mib = 64\n\n[tools.t.config]\napi_token = \"abc\"\n";
        let overrides = Overrides {
            max_tool_result_bytes: Some("2048".into()),
            ..Overrides::default()
        };
        let e = explain(text, &[("SLUICE_AGENT_MAX_TURNS", "9")], &overrides);
        let s = |k| shown(&e, k);
        assert_eq!(
            s("agent.max_turns"),
            ("9".into(), "SLUICE_AGENT_MAX_TURNS".into())
        );
        assert_eq!(
            s("agent.auto_approve"),
            ("true".into(), "sluice.toml:3".into())
        );
        assert_eq!(
            s("agent.max_tool_result_bytes"),
            ("2048".into(), "--max-tool-result-bytes".into())
        );
        assert_eq!(s("roots.logs"), ("DIR/logs".into(), "sluice.toml:6".into()));
        assert_eq!(
            s("store.url"),
            ("postgres://u:***@db/s".into(), "sluice.toml:9".into())
        );
        assert_eq!(
            s("tools.t.component"),
            ("\"t.wasm\"".into(), "sluice.toml:12".into())
        );
        assert_eq!(
            s("tools.t.memory_mib"),
            ("64".into(), "sluice.toml:13".into())
        );
        assert_eq!(
            s("tools.t.config.api_token"),
            (REDACTED.into(), "sluice.toml:16".into())
        );
        assert_eq!(s("model.provider"), ("scripted".into(), "default".into()));
        assert_eq!(
            s("runtime.queue_timeout_ms"),
            ("10000".into(), "default".into())
        );
    }

    #[test]
    fn an_unknown_key_is_refused_with_the_closest_one() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sluice.toml");
        std::fs::write(&file, "[agent]\nmax_turn = 5\n").unwrap();
        let e = Config::explain(Some(&file), &|_| None, &Overrides::default(), &|u| u.into())
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "invalid configuration file {}: line 2, agent.max_turn: unknown field `max_turn`, expected one of `max_tool_result_bytes`, `max_turns`, `auto_approve`, `system_prompt`; did you mean `max_turns`?",
                file.display()
            )
        );
    }
}
