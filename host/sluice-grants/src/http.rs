//! Outbound HTTP through `wasi:http` (docs/configuration.md#outbound-http): the hosts a tool
//! may reach (`http`), how (`http_methods`, `http_private`, `http_max_response_bytes`,
//! `http_max_connections`), and the headers the host adds with secrets the tool never holds
//! (`http_credentials`, docs/configuration.md#credentials-the-tool-never-holds).

use std::net::IpAddr;

use sluice_protocol::limits::DEFAULT_HTTP_MAX_CONNECTIONS;

use crate::SecretSource;

/// `http_max_response_bytes` when not configured: 10 MiB.
pub const DEFAULT_HTTP_MAX_RESPONSE_BYTES: u64 = 10 << 20;

/// What a tool may reach over `wasi:http`. [`HttpGrant::default`] grants no host: every
/// request is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpGrant {
    /// `http`: the hosts it may send requests to; empty (the default): none.
    pub allow: Vec<HttpAllow>,
    /// `http_methods`: the methods it may use, uppercase (`GET`); empty (the default): any.
    pub methods: Vec<String>,
    /// `http_private`: allowed host names may resolve to loopback, private and link-local
    /// addresses (any address that is not globally reachable,
    /// `sluice_runtime::address::special_range`); default false. IP literals of those ranges
    /// are allowed when listed, whatever this says.
    pub private: bool,
    /// `http_max_response_bytes`: the most body bytes one response may have, 1 to 1 GiB
    /// (default [`DEFAULT_HTTP_MAX_RESPONSE_BYTES`]); a longer one fails the call with a
    /// `resource-limit` error naming the limit.
    pub max_response_bytes: u64,
    /// `http_max_connections`: the most requests one call may have open at once, 1 to
    /// [`MAX_OPEN_DESCRIPTORS`](sluice_protocol::limits::MAX_OPEN_DESCRIPTORS) (default
    /// [`DEFAULT_HTTP_MAX_CONNECTIONS`]); a request is open from `outgoing-handler.handle`
    /// until its connection is closed. One more stops the call with a `resource-limit` error
    /// naming the key. Open requests also count against the call's open descriptors, with its
    /// open files.
    pub max_connections: usize,
    /// `http_credentials`: headers the host adds to requests to single hosts of `allow`,
    /// with secrets read when the component loads and never given to the guest, in key order.
    /// Default: none.
    pub credentials: Vec<HttpCredential>,
}

impl Default for HttpGrant {
    fn default() -> Self {
        HttpGrant {
            allow: Vec::new(),
            methods: Vec::new(),
            private: false,
            max_response_bytes: DEFAULT_HTTP_MAX_RESPONSE_BYTES,
            max_connections: DEFAULT_HTTP_MAX_CONNECTIONS,
            credentials: Vec::new(),
        }
    }
}

/// One entry of `http`: a host (or the hosts below a domain) and optionally a port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpAllow {
    /// Which hosts the entry covers.
    pub host: HttpHost,
    /// The port; `None`: the default port of the request's scheme only (80 for `http`,
    /// 443 for `https`).
    pub port: Option<u16>,
}

/// The host part of an [`HttpAllow`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HttpHost {
    /// This host name exactly (lowercase, no trailing dot): `api.example.com`.
    Name(String),
    /// Every name below this domain, at any depth, but not the domain itself:
    /// `*.example.com` is `Subdomains("example.com")`.
    Subdomains(String),
    /// This IP address, given as a literal; the only way to reach a loopback, private or
    /// link-local address by address.
    Ip(IpAddr),
}

impl HttpAllow {
    /// The entry as the `http` key takes it, an IPv6 address always in brackets:
    /// `api.example.com`, `*.example.com:8443`, `10.0.0.1`, `[::1]`, `[::1]:8080` (what the
    /// configuration's messages and reports show).
    pub fn as_written(&self) -> String {
        self.render(true)
    }

    /// The entry as host and port, an IPv6 address in brackets only before a port:
    /// `api.example.com`, `*.example.com:8443`, `::1`, `[::1]:8080` (what the runtime's
    /// refusals and credential labels show).
    pub fn as_host_port(&self) -> String {
        self.render(false)
    }

    /// The entry, with an IPv6 address bracketed always (`always_bracket`) or only before a
    /// port.
    fn render(&self, always_bracket: bool) -> String {
        let host = match &self.host {
            HttpHost::Name(n) => n.clone(),
            HttpHost::Subdomains(d) => format!("*.{d}"),
            HttpHost::Ip(IpAddr::V6(ip)) if always_bracket || self.port.is_some() => {
                format!("[{ip}]")
            }
            HttpHost::Ip(ip) => ip.to_string(),
        };
        match self.port {
            Some(p) => format!("{host}:{p}"),
            None => host,
        }
    }
}

/// One credential of `http_credentials` (`[http_credentials."HOST"]`): after the allowlist,
/// method and address checks pass, a request to [`HttpCredential::entry`]'s host and port
/// gets `header: value`, `{secret}` in `value` replaced by the secret (a header of that name
/// the guest set is replaced).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpCredential {
    /// The entry of `http` it goes to (the table's key): one host name or IP address (never
    /// [`HttpHost::Subdomains`]), and its port as the entry has it (`None`: the scheme's
    /// default port, as in `allow`).
    pub entry: HttpAllow,
    /// `header`: the header's name, lowercase (`authorization`).
    pub header: String,
    /// `value`: the header's value, with `{secret}` once where the secret goes
    /// (`Bearer {secret}`).
    pub value: String,
    /// `secret`: where the secret is read from when the component loads; one that cannot be
    /// read, or is shorter than 8 bytes (`sluice_runtime::secrets::MIN_SECRET_BYTES`), makes
    /// the component unavailable.
    pub secret: SecretSource,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(host: HttpHost, port: Option<u16>) -> HttpAllow {
        HttpAllow { host, port }
    }

    #[test]
    fn an_entry_renders_as_written_and_as_host_and_port() {
        let v6 = HttpHost::Ip(std::net::Ipv6Addr::LOCALHOST.into());
        let cases = [
            (
                entry(HttpHost::Name("api.example.com".into()), None),
                "api.example.com",
                "api.example.com",
            ),
            (
                entry(HttpHost::Subdomains("example.com".into()), Some(8443)),
                "*.example.com:8443",
                "*.example.com:8443",
            ),
            (
                entry(HttpHost::Ip([10, 0, 0, 1].into()), None),
                "10.0.0.1",
                "10.0.0.1",
            ),
            (entry(v6.clone(), None), "[::1]", "::1"),
            (entry(v6, Some(8080)), "[::1]:8080", "[::1]:8080"),
        ];
        for (e, written, host_port) in cases {
            assert_eq!(e.as_written(), written);
            assert_eq!(e.as_host_port(), host_port);
        }
    }

    #[test]
    fn the_default_grant_allows_no_host_with_the_default_limits() {
        let g = HttpGrant::default();
        assert_eq!(g.allow, Vec::<HttpAllow>::new());
        assert_eq!(g.methods, Vec::<String>::new());
        assert!(!g.private);
        assert_eq!(g.max_response_bytes, 10_485_760);
        assert_eq!(g.max_connections, 16);
        assert_eq!(g.credentials, Vec::<HttpCredential>::new());
    }
}
