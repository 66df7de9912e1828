//! One entry of a tool policy's `http` allowlist (docs/configuration.md#outbound-http): a
//! host name, `*.DOMAIN` or an IP address, with an optional port, parsed into a
//! [`HttpAllow`]. Both the allowlist (`http`) and `http_credentials` name hosts so.

use std::net::{IpAddr, Ipv4Addr};

use sluice_grants::{HttpAllow, HttpHost};

/// What an entry of `http` may be.
pub const HTTP_ENTRY_RULE: &str = "a host name (`api.example.com`), `*.DOMAIN` (every name below DOMAIN), an IPv4 address as four decimal numbers (`a.b.c.d`) or a bracketed IPv6 address (`[::1]`), each optionally followed by `:PORT` (1 to 65535; without a port, only port 80 for http and 443 for https); no scheme and no path";

/// Why an entry that reads as an IPv4 address in another form is refused.
pub const IPV4_FORM_RULE: &str = "write IPv4 addresses as four decimal numbers, a.b.c.d";

/// Why an entry of `http` (or a host key of `http_credentials`) is refused: the text says
/// what is wrong with it and what to write instead; [`HTTP_ENTRY_RULE`] says what is allowed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HttpEntryError {
    /// A scheme (`https://`) or a path.
    #[error("an entry names a host, not a URL: leave out the scheme and the path")]
    Url,
    /// `[::1` without its `]`.
    #[error("a `[` without its `]`")]
    UnclosedBracket,
    /// `[::1]x`: something other than `:PORT` after the bracket.
    #[error("after `]` comes `:PORT` or nothing")]
    AfterBracket,
    /// `[…]` that holds no IPv6 address.
    #[error("not an IPv6 address in `[…]`")]
    NotIpv6,
    /// An IPv6 address without brackets (`::1`).
    #[error("an IPv6 address goes in brackets: `[::1]` or `[::1]:8080`")]
    UnbracketedIpv6,
    /// A host that reads as an IPv4 address in a form other than `a.b.c.d`
    /// (`2130706433`, `0x7f.1`), as the host as written.
    #[error("{host:?} reads as the IPv4 address {ip}: {rule}", rule = IPV4_FORM_RULE)]
    Ipv4Form {
        /// The host as written.
        host: String,
        /// The address it reads as.
        ip: Ipv4Addr,
    },
    /// Not a DNS name (empty, a bad character, a label too long).
    #[error("{0:?} is not a host name")]
    NotHostName(String),
    /// `*` anywhere but as the whole first label.
    #[error("`*` may only stand first, as a whole label: `*.example.com`")]
    MisplacedWildcard,
    /// A port that is not a number from 1 to 65535, as written.
    #[error("the port {0:?} is not from 1 to 65535")]
    Port(String),
}

/// Parses one entry of `http` (what [`HttpAllow::as_written`] shows again).
///
/// # Errors
/// [`HttpEntryError`]: what is wrong with the entry.
pub fn parse_entry(text: &str) -> Result<HttpAllow, HttpEntryError> {
    let t = text.trim();
    if t.contains("://") || t.contains('/') {
        return Err(HttpEntryError::Url);
    }
    let (host, port) = if let Some(rest) = t.strip_prefix('[') {
        let (ip, after) = rest
            .split_once(']')
            .ok_or(HttpEntryError::UnclosedBracket)?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':').ok_or(HttpEntryError::AfterBracket)?),
        };
        let ip: std::net::Ipv6Addr = ip.parse().map_err(|_| HttpEntryError::NotIpv6)?;
        (HttpHost::Ip(IpAddr::V6(ip)), port)
    } else if t.matches(':').count() > 1 {
        return Err(HttpEntryError::UnbracketedIpv6);
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
                return Err(HttpEntryError::Ipv4Form {
                    host: bare.to_string(),
                    ip,
                });
            }
            // `example.0x10`: ends in a number, yet no address.
            Err(_) if !bare.is_empty() && !bare.contains('*') => {
                return Err(HttpEntryError::NotHostName(bare.to_string()));
            }
            _ => {}
        }
        // A trailing dot (a fully qualified name) names the same host: one is removed.
        let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
        let host = if let Ok(ip) = host.parse::<IpAddr>() {
            HttpHost::Ip(ip)
        } else if let Some(domain) = host.strip_prefix("*.") {
            valid_name(domain)?;
            HttpHost::Subdomains(domain.to_string())
        } else {
            valid_name(&host)?;
            HttpHost::Name(host)
        };
        (host, port)
    };
    let port = match port {
        None => None,
        Some(p) => Some(
            p.parse::<u16>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| HttpEntryError::Port(p.to_string()))?,
        ),
    };
    Ok(HttpAllow { host, port })
}

/// Checks a DNS name: dot-separated labels of 1 to 63 letters, digits and `-`, not
/// starting or ending with `-`; 253 characters at most.
fn valid_name(name: &str) -> Result<(), HttpEntryError> {
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
        Err(HttpEntryError::MisplacedWildcard)
    } else {
        Err(HttpEntryError::NotHostName(name.to_string()))
    }
}
