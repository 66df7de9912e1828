//! The outbound-HTTP keys of a tool policy (docs/configuration.md#outbound-http): `http`
//! (the allowlist), `http_methods`, `http_private`, `http_max_response_bytes`,
//! `http_max_connections` and `http_credentials` ([`crate::http_credentials`]).

use std::net::IpAddr;

/// What an entry of `http` may be.
pub const HTTP_ENTRY_RULE: &str = "a host name (`api.example.com`), `*.DOMAIN` (every name below DOMAIN), an IPv4 address as four decimal numbers (`a.b.c.d`) or a bracketed IPv6 address (`[::1]`), each optionally followed by `:PORT` (1 to 65535; without a port, only port 80 for http and 443 for https); no scheme and no path";

/// Why an entry that reads as an IPv4 address in another form is refused.
pub const IPV4_FORM_RULE: &str = "write IPv4 addresses as four decimal numbers, a.b.c.d";

/// `http_max_response_bytes` when not set: 10 MiB.
pub const DEFAULT_HTTP_MAX_RESPONSE_BYTES: u64 = 10 << 20;

/// The largest `http_max_response_bytes`: 1 GiB.
pub const MAX_HTTP_MAX_RESPONSE_BYTES: u64 = 1 << 30;

/// A tool's outbound HTTP grant; the default grants no host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpConfig {
    /// `http`: the hosts its requests may go to.
    pub allow: Vec<HttpEntry>,
    /// `http_methods`: the methods allowed, uppercase; empty: any.
    pub methods: Vec<String>,
    /// `http_private`: host names may resolve to loopback, private and link-local
    /// addresses (default false).
    pub private: bool,
    /// `http_max_response_bytes`: the most body bytes of one response, 1 to
    /// [`MAX_HTTP_MAX_RESPONSE_BYTES`] (default [`DEFAULT_HTTP_MAX_RESPONSE_BYTES`]).
    pub max_response_bytes: u64,
    /// `http_max_connections`: the most requests one call may have open at once, 1 to
    /// [`MAX_OPEN_DESCRIPTORS`](sluice_protocol::limits::MAX_OPEN_DESCRIPTORS) (default
    /// [`DEFAULT_HTTP_MAX_CONNECTIONS`](sluice_protocol::limits::DEFAULT_HTTP_MAX_CONNECTIONS)).
    pub max_connections: usize,
    /// `http_credentials`: headers the host adds to requests to single hosts of `allow`,
    /// with secrets the tool never holds, in key order (default: none).
    pub credentials: Vec<crate::http_credentials::HttpCredential>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            allow: Vec::new(),
            methods: Vec::new(),
            private: false,
            max_response_bytes: DEFAULT_HTTP_MAX_RESPONSE_BYTES,
            max_connections: sluice_protocol::limits::DEFAULT_HTTP_MAX_CONNECTIONS,
            credentials: Vec::new(),
        }
    }
}

/// One entry of `http`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpEntry {
    /// The host (or hosts) it covers.
    pub host: HttpEntryHost,
    /// Its port; `None`: the scheme's default port only.
    pub port: Option<u16>,
}

/// The entry as `http` takes it: `api.example.com`, `*.example.com:8443`, `10.0.0.1`,
/// `[::1]:8080`.
impl std::fmt::Display for HttpEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.host {
            HttpEntryHost::Name(n) => f.write_str(n)?,
            HttpEntryHost::Subdomains(d) => write!(f, "*.{d}")?,
            HttpEntryHost::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]")?,
            HttpEntryHost::Ip(ip) => write!(f, "{ip}")?,
        }
        match self.port {
            Some(p) => write!(f, ":{p}"),
            None => Ok(()),
        }
    }
}

/// The host of an [`HttpEntry`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HttpEntryHost {
    /// One host name, lowercase, without a trailing dot.
    Name(String),
    /// Every name below this domain (`*.example.com`: `Subdomains("example.com")`).
    Subdomains(String),
    /// One IP address.
    Ip(IpAddr),
}

/// Parses one entry of `http`; the error says what is wrong with it.
pub fn parse_entry(text: &str) -> Result<HttpEntry, String> {
    let t = text.trim();
    if t.contains("://") || t.contains('/') {
        return Err("an entry names a host, not a URL: leave out the scheme and the path".into());
    }
    let (host, port) = if let Some(rest) = t.strip_prefix('[') {
        let (ip, after) = rest.split_once(']').ok_or("a `[` without its `]`")?;
        let port = match after {
            "" => None,
            p => Some(
                p.strip_prefix(':')
                    .ok_or("after `]` comes `:PORT` or nothing")?,
            ),
        };
        let ip: std::net::Ipv6Addr = ip.parse().map_err(|_| "not an IPv6 address in `[…]`")?;
        (HttpEntryHost::Ip(IpAddr::V6(ip)), port)
    } else if t.matches(':').count() > 1 {
        return Err("an IPv6 address goes in brackets: `[::1]` or `[::1]:8080`".into());
    } else {
        let (host, port) = match t.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (t, None),
        };
        // The WHATWG URL host parser reads a host whose last label is a number (decimal,
        // `0x` hex or octal) as an IPv4 address, and so do many resolvers: only the plain
        // `a.b.c.d` form is accepted, so that an entry means one address.
        let bare = host.strip_prefix("*.").unwrap_or(host);
        match url::Host::parse(bare) {
            Ok(url::Host::Ipv4(ip)) if ip.to_string() != bare => {
                return Err(format!(
                    "{bare:?} reads as the IPv4 address {ip}: {IPV4_FORM_RULE}"
                ));
            }
            // `example.0x10`: ends in a number, yet no address.
            Err(_) if !bare.is_empty() && !bare.contains('*') => {
                return Err(format!("{bare:?} is not a host name"));
            }
            _ => {}
        }
        // A trailing dot (a fully qualified name) names the same host: one is removed.
        let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
        let host = if let Ok(ip) = host.parse::<IpAddr>() {
            HttpEntryHost::Ip(ip)
        } else if let Some(domain) = host.strip_prefix("*.") {
            valid_name(domain)?;
            HttpEntryHost::Subdomains(domain.to_string())
        } else {
            valid_name(&host)?;
            HttpEntryHost::Name(host)
        };
        (host, port)
    };
    let port = match port {
        None => None,
        Some(p) => Some(
            p.parse::<u16>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| format!("the port {p:?} is not from 1 to 65535"))?,
        ),
    };
    Ok(HttpEntry { host, port })
}

/// Checks a DNS name: dot-separated labels of 1 to 63 letters, digits and `-`, not
/// starting or ending with `-`; 253 characters at most.
fn valid_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    if ok {
        Ok(())
    } else if name.contains('*') {
        Err("`*` may only stand first, as a whole label: `*.example.com`".into())
    } else {
        Err(format!("{name:?} is not a host name"))
    }
}

/// The methods `http_methods` may list, as written there (upper case): those of RFC 9110
/// (section 9) and `PATCH` (RFC 5789).
pub const HTTP_METHODS: [&str; 9] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
];

/// The methods that only read (RFC 9110's safe methods but `TRACE`, which echoes the
/// request): a grant of other methods, or of any method, makes a tool destructive unless
/// its policy says `destructive = false` (docs/configuration.md#outbound-http).
pub const READ_ONLY_HTTP_METHODS: [&str; 3] = ["GET", "HEAD", "OPTIONS"];

/// Checks one entry of `http_methods`: one of [`HTTP_METHODS`], as written there.
pub fn parse_method(text: &str) -> Result<String, String> {
    if HTTP_METHODS.contains(&text) {
        Ok(text.to_string())
    } else {
        let upper = text.to_ascii_uppercase();
        let hint = if HTTP_METHODS.contains(&upper.as_str()) {
            format!(": methods are written in upper case, {upper:?}")
        } else {
            String::new()
        };
        Err(format!("{text:?} is not one of them{hint}"))
    }
}

impl HttpConfig {
    /// True when a request this grant allows may change something: some host is granted,
    /// and `http_methods` is empty (any method) or lists one not in
    /// [`READ_ONLY_HTTP_METHODS`].
    pub fn may_write(&self) -> bool {
        !self.allow.is_empty()
            && (self.methods.is_empty()
                || self
                    .methods
                    .iter()
                    .any(|m| !READ_ONLY_HTTP_METHODS.contains(&m.as_str())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(host: HttpEntryHost, port: Option<u16>) -> HttpEntry {
        HttpEntry { host, port }
    }

    #[test]
    fn entries_parse_to_their_host_and_port() {
        assert_eq!(
            parse_entry("API.example.com."),
            Ok(entry(HttpEntryHost::Name("api.example.com".into()), None))
        );
        assert_eq!(
            parse_entry("*.example.com:8443"),
            Ok(entry(
                HttpEntryHost::Subdomains("example.com".into()),
                Some(8443)
            ))
        );
        assert_eq!(
            parse_entry("127.0.0.1:8080"),
            Ok(entry(HttpEntryHost::Ip([127, 0, 0, 1].into()), Some(8080)))
        );
        assert_eq!(
            parse_entry("[::1]:80"),
            Ok(entry(
                HttpEntryHost::Ip(std::net::Ipv6Addr::LOCALHOST.into()),
                Some(80)
            ))
        );
        assert_eq!(
            parse_entry("[::1]"),
            Ok(entry(
                HttpEntryHost::Ip(std::net::Ipv6Addr::LOCALHOST.into()),
                None
            ))
        );
    }

    #[test]
    fn bad_entries_say_what_is_wrong() {
        assert_eq!(
            parse_entry("https://example.com"),
            Err("an entry names a host, not a URL: leave out the scheme and the path".into())
        );
        assert_eq!(
            parse_entry("::1"),
            Err("an IPv6 address goes in brackets: `[::1]` or `[::1]:8080`".into())
        );
        assert_eq!(
            parse_entry("example.com:0"),
            Err("the port \"0\" is not from 1 to 65535".into())
        );
        assert_eq!(
            parse_entry("api.*.com"),
            Err("`*` may only stand first, as a whole label: `*.example.com`".into())
        );
        assert_eq!(
            parse_entry("*"),
            Err("`*` may only stand first, as a whole label: `*.example.com`".into())
        );
        assert_eq!(parse_entry(""), Err("\"\" is not a host name".into()));
    }

    #[test]
    fn numeric_hosts_other_than_a_b_c_d_are_refused() {
        for (text, bare, ip) in [
            ("2130706433", "2130706433", "127.0.0.1"),
            ("0177.0.0.1", "0177.0.0.1", "127.0.0.1"),
            ("0x7f.1", "0x7f.1", "127.0.0.1"),
            ("0X7F.1:8080", "0X7F.1", "127.0.0.1"),
            ("*.0.1", "0.1", "0.0.0.1"),
            ("127.0.0.1.", "127.0.0.1.", "127.0.0.1"),
            ("example.0x10", "example.0x10", "?"),
        ] {
            let got = parse_entry(text);
            if ip == "?" {
                // A name whose last label is a number but the rest is not is no address
                // and no name: the WHATWG parser fails it.
                assert_eq!(got, Err("\"example.0x10\" is not a host name".into()));
                continue;
            }
            assert_eq!(
                got,
                Err(format!(
                    "{bare:?} reads as the IPv4 address {ip}: write IPv4 addresses as four decimal numbers, a.b.c.d"
                )),
                "{text}"
            );
        }
        // Plain dotted decimal, and names with numeric labels that are not last, pass.
        assert_eq!(
            parse_entry("10.0.0.1"),
            Ok(entry(HttpEntryHost::Ip([10, 0, 0, 1].into()), None))
        );
        assert_eq!(
            parse_entry("1.2.3.example.com"),
            Ok(entry(HttpEntryHost::Name("1.2.3.example.com".into()), None))
        );
        // One trailing dot is removed from a name; two are refused.
        assert_eq!(
            parse_entry("example.com."),
            Ok(entry(HttpEntryHost::Name("example.com".into()), None))
        );
        assert_eq!(
            parse_entry("example.com.."),
            Err("\"example.com.\" is not a host name".into())
        );
    }

    #[test]
    fn methods_are_those_of_rfc_9110_in_upper_case() {
        assert_eq!(parse_method("GET"), Ok("GET".into()));
        assert_eq!(parse_method("PATCH"), Ok("PATCH".into()));
        assert_eq!(
            parse_method("get"),
            Err("\"get\" is not one of them: methods are written in upper case, \"GET\"".into())
        );
        assert_eq!(
            parse_method("FETCH"),
            Err("\"FETCH\" is not one of them".into())
        );
        assert_eq!(
            parse_method("GET POST"),
            Err("\"GET POST\" is not one of them".into())
        );
    }

    #[test]
    fn a_grant_of_a_method_that_writes_may_write() {
        let grant = |methods: &[&str]| HttpConfig {
            allow: vec![entry(HttpEntryHost::Name("api.example.com".into()), None)],
            methods: methods.iter().map(|m| m.to_string()).collect(),
            ..HttpConfig::default()
        };
        assert!(!grant(&["GET", "HEAD", "OPTIONS"]).may_write());
        assert!(grant(&["GET", "POST"]).may_write());
        assert!(grant(&[]).may_write(), "no http_methods: any method");
        assert!(!HttpConfig::default().may_write(), "no host granted");
    }
}
