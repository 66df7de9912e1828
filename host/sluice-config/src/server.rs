//! `[server]`: what `sluice serve` answers to. Its listening address, token and body limit
//! are flags of `serve`; the names it answers to besides its own address are configuration
//! (`server.allowed_hosts`), because an operator behind a proxy or a DNS name sets them once.

use serde::Deserialize;

use crate::ConfigError;

/// The environment variable that sets `server.allowed_hosts` (comma-separated).
pub const ENV_ALLOWED_HOSTS: &str = "SLUICE_SERVER_ALLOWED_HOSTS";

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
}

/// `[server]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileServer {
    allowed_hosts: Option<Vec<String>>,
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
            (flags.to_vec(), "--allowed-host".into())
        } else if let Some(list) = env {
            (
                list.split(',')
                    .map(str::trim)
                    .filter(|h| !h.is_empty())
                    .map(str::to_string)
                    .collect(),
                ENV_ALLOWED_HOSTS.into(),
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
                    key: "server.allowed_hosts".into(),
                    value: format!("{host:?}"),
                    allowed: format!("a list of host names: each {ALLOWED_HOST_RULE}"),
                    origin,
                });
            }
        }
        Ok(ServerConfig {
            allowed_hosts: hosts.iter().map(|h| h.to_ascii_lowercase()).collect(),
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
}
