//! `[server]`: what `sluice serve` (and `sluice mcp --listen`) answers to. Its listening
//! address, token and body limit are flags of `serve`; the names it answers to besides its
//! own address are configuration (`server.allowed_hosts`), because an operator behind a
//! proxy or a DNS name sets them once, and so are the limits on connections and event
//! streams ([`ServerLimits`]; docs/configuration.md#server).

use std::time::Duration;

use serde::Deserialize;

use crate::ConfigError;
use crate::file::Raw;
use crate::keys::{
    self, SERVER_ALLOWED_HOSTS, SERVER_HEADER_READ_TIMEOUT_MS, SERVER_MAX_CONNECTIONS,
    SERVER_MAX_EVENT_STREAMS, SERVER_MAX_UNAUTHENTICATED_CONNECTIONS,
};

/// What an allowed host may be, as messages say it.
pub const ALLOWED_HOST_RULE: &str = "a host name (labels of 1 to 63 letters, digits, `-` or `_`, joined by `.`, at most 253 characters) or an IP address, without a scheme, port or path";

/// The `[server]` table, resolved.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerConfig {
    /// `server.allowed_hosts`: host names (or IP literals) the operator API answers to
    /// besides its listening address and, on loopback, `localhost`; lowercase, in the order
    /// given. Default none. From `--allowed-host` (repeatable), else
    /// `SLUICE_SERVER_ALLOWED_HOSTS` (comma-separated), else the file.
    pub allowed_hosts: Vec<String>,
    /// The limits on connections and event streams.
    pub limits: ServerLimits,
    /// `[[server.tokens]]`: the named principals' tokens (by hash) and scopes. Default none.
    pub tokens: Vec<crate::server_tokens::ServerToken>,
    /// `[server.oauth]`: accept OAuth access tokens of this authorization server. Default
    /// `None`: no OAuth.
    pub oauth: Option<crate::server_oauth::OAuthConfig>,
    /// `[server.tls]` (`--tls-cert`, `--tls-key`): serve HTTPS with these files. Default
    /// `None`: plain HTTP.
    pub tls: Option<crate::server_tls::TlsFiles>,
}

/// `server.header_read_timeout_ms` when not set: 10 s.
pub const DEFAULT_HEADER_READ_TIMEOUT_MS: u64 = 10_000;
/// `server.max_connections` when not set.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// `server.max_unauthenticated_connections` when not set.
pub const DEFAULT_MAX_UNAUTHENTICATED_CONNECTIONS: usize = 128;
/// `server.max_event_streams` when not set.
pub const DEFAULT_MAX_EVENT_STREAMS: usize = 256;

/// How much the HTTP listener takes on at once (docs/configuration.md#server).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerLimits {
    /// `server.header_read_timeout_ms` (100 to 600,000 ms; default 10,000): a connection
    /// that has not sent a whole request head this long after it opened, or after its last
    /// answer, is closed (without an answer). It is also how long an idle keep-alive
    /// connection stays open.
    pub header_read_timeout: Duration,
    /// `server.max_connections` (1 to 1,000,000; default 1,024): connections open at once.
    /// Further ones wait in the kernel's backlog until one closes. Capped at the process's
    /// descriptor limit less a reserve, so the listener never runs out of descriptors.
    pub max_connections: usize,
    /// `server.max_unauthenticated_connections` (1 to 1,000,000; default 128): connections
    /// open at once none of whose requests has passed the guard yet (with a token: none has
    /// carried it). A connection beyond that is answered 503 and closed.
    pub max_unauthenticated_connections: usize,
    /// `server.max_event_streams` (1 to 100,000; default 256): `GET /sessions/{id}/events`
    /// streams open at once, for the one principal there is (the token's holder); one more
    /// is answered 429.
    pub max_event_streams: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            header_read_timeout: Duration::from_millis(DEFAULT_HEADER_READ_TIMEOUT_MS),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_unauthenticated_connections: DEFAULT_MAX_UNAUTHENTICATED_CONNECTIONS,
            max_event_streams: DEFAULT_MAX_EVENT_STREAMS,
        }
    }
}

/// `[server]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileServer {
    allowed_hosts: Option<Vec<String>>,
    header_read_timeout_ms: Option<Raw>,
    max_connections: Option<Raw>,
    max_unauthenticated_connections: Option<Raw>,
    max_event_streams: Option<Raw>,
    tokens: Option<Vec<crate::server_tokens::FileToken>>,
    oauth: Option<crate::server_oauth::FileOAuth>,
    pub(crate) tls: Option<crate::server_tls::FileTls>,
}

impl FileServer {
    /// Resolves the table: `flags` (`--allowed-host`, in order) replace the variable, which
    /// replaces the file's list.
    pub(crate) fn resolve(
        &self,
        flags: &[String],
        env: Option<String>,
        file_label: &str,
    ) -> Result<ServerConfig, ConfigError> {
        let (hosts, origin): (Vec<String>, String) = if !flags.is_empty() {
            (flags.to_vec(), SERVER_ALLOWED_HOSTS.flag_name().into())
        } else if let Some(list) = env {
            (
                list.split(',')
                    .map(str::trim)
                    .filter(|h| !h.is_empty())
                    .map(str::to_string)
                    .collect(),
                keys::env_of(&SERVER_ALLOWED_HOSTS).into(),
            )
        } else {
            (
                self.allowed_hosts.clone().unwrap_or_default(),
                file_label.to_string(),
            )
        };
        for host in &hosts {
            if !valid_allowed_host(host) {
                return Err(ConfigError::Value {
                    key: SERVER_ALLOWED_HOSTS.name.into(),
                    value: format!("{host:?}"),
                    allowed: format!("a list of host names: each {ALLOWED_HOST_RULE}"),
                    origin,
                });
            }
        }
        Ok(ServerConfig {
            allowed_hosts: hosts.iter().map(|h| h.to_ascii_lowercase()).collect(),
            limits: self.limits(file_label)?,
            tokens: crate::server_tokens::resolve(
                self.tokens.as_deref().unwrap_or_default(),
                file_label,
            )?,
            oauth: crate::server_oauth::resolve(self.oauth.as_ref(), file_label)?,
            // Set by `Config::resolve`, which knows the file's directory (server_tls.rs).
            tls: None,
        })
    }

    fn limits(&self, file_label: &str) -> Result<ServerLimits, ConfigError> {
        let count = |key: &keys::Key, raw: &Option<Raw>| {
            Ok::<usize, ConfigError>(key.file_integer_or_default(raw.as_ref(), file_label)? as usize)
        };
        Ok(ServerLimits {
            header_read_timeout: Duration::from_millis(
                SERVER_HEADER_READ_TIMEOUT_MS
                    .file_integer_or_default(self.header_read_timeout_ms.as_ref(), file_label)?,
            ),
            max_connections: count(&SERVER_MAX_CONNECTIONS, &self.max_connections)?,
            max_unauthenticated_connections: count(
                &SERVER_MAX_UNAUTHENTICATED_CONNECTIONS,
                &self.max_unauthenticated_connections,
            )?,
            max_event_streams: count(&SERVER_MAX_EVENT_STREAMS, &self.max_event_streams)?,
        })
    }
}

/// Whether `host` may be an allowed host: [`ALLOWED_HOST_RULE`]. A trailing `.` (a fully
/// qualified name) and brackets around an IPv6 address are accepted.
pub fn valid_allowed_host(host: &str) -> bool {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if bare.parse::<std::net::IpAddr>().is_ok() {
        return true;
    }
    let name = host.strip_suffix('.').unwrap_or(host);
    (1..=253).contains(&name.len())
        && name.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names() {
        for ok in [
            "sluice.example",
            "Box-1.lan",
            "my_service",
            "localhost.",
            "10.0.0.7",
            "::1",
            "[fe80::1]",
        ] {
            assert!(valid_allowed_host(ok), "{ok}");
        }
        for bad in [
            "",
            "http://sluice.example",
            "sluice.example:8080",
            "a..b",
            "*.example",
            "sluice example",
            &"a".repeat(64),
        ] {
            assert!(!valid_allowed_host(bad), "{bad}");
        }
    }

    #[test]
    fn flags_replace_the_variable_which_replaces_the_file() {
        let file = FileServer {
            allowed_hosts: Some(vec!["file.example".into()]),
            ..FileServer::default()
        };
        let hosts = |flags: &[String], env: Option<&str>| {
            file.resolve(flags, env.map(str::to_string), "sluice.toml")
                .unwrap()
                .allowed_hosts
        };
        assert_eq!(hosts(&[], None), ["file.example"]);
        assert_eq!(
            hosts(&[], Some("A.example, b.example,")),
            ["a.example", "b.example"]
        );
        assert_eq!(
            hosts(&["Flag.example".into()], Some("a.example")),
            ["flag.example"]
        );
        let e = file
            .resolve(&["http://x.example".into()], None, "sluice.toml")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "server.allowed_hosts must be a list of host names: each {ALLOWED_HOST_RULE}; got \"http://x.example\" (from --allowed-host)"
            )
        );
    }

    #[test]
    fn limits_default_and_are_bounded() {
        let limits = |text: &str| {
            let file: FileServer = toml::from_str(text).unwrap();
            file.resolve(&[], None, "sluice.toml").map(|c| c.limits)
        };
        assert_eq!(limits("").unwrap(), ServerLimits::default());
        assert_eq!(
            ServerLimits::default().header_read_timeout,
            Duration::from_secs(10)
        );
        let set = limits(
            "header_read_timeout_ms = 250\nmax_connections = 64\nmax_unauthenticated_connections = 8\nmax_event_streams = 3\n",
        )
        .unwrap();
        assert_eq!(
            set,
            ServerLimits {
                header_read_timeout: Duration::from_millis(250),
                max_connections: 64,
                max_unauthenticated_connections: 8,
                max_event_streams: 3,
            }
        );
        assert_eq!(
            limits("header_read_timeout_ms = 99")
                .unwrap_err()
                .to_string(),
            "server.header_read_timeout_ms must be an integer from 100 to 600000 (ms); got 99 (from sluice.toml)"
        );
        assert_eq!(
            limits("max_connections = 0").unwrap_err().to_string(),
            "server.max_connections must be an integer from 1 to 1000000; got 0 (from sluice.toml)"
        );
        assert_eq!(
            limits("max_event_streams = \"5\"").unwrap_err().to_string(),
            "server.max_event_streams must be an integer from 1 to 100000; got \"5\" (from sluice.toml)"
        );
    }
}
