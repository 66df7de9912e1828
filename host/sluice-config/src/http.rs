//! The outbound-HTTP keys of a tool policy (docs/configuration.md#outbound-http): `http`
//! (the allowlist), `http_methods`, `http_private`, `http_max_response_bytes`,
//! `http_max_connections` and `http_credentials` ([`crate::http_credentials`]), read into a
//! [`HttpGrant`].

pub use crate::http_entry::{HTTP_ENTRY_RULE, HttpEntryError, IPV4_FORM_RULE, parse_entry};
pub use sluice_grants::DEFAULT_HTTP_MAX_RESPONSE_BYTES;

use sluice_grants::HttpGrant;

/// The largest `http_max_response_bytes`: 1 GiB.
pub const MAX_HTTP_MAX_RESPONSE_BYTES: u64 = 1 << 30;

/// The methods `http_methods` may list, as written there (upper case): those of RFC 9110
/// (section 9) and `PATCH` (RFC 5789).
pub const HTTP_METHODS: [&str; 9] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
];

/// The methods that only read (RFC 9110's safe methods but `TRACE`, which echoes the
/// request): a grant of other methods, or of any method, makes a tool destructive unless
/// its policy says `destructive = false` (docs/configuration.md#outbound-http).
pub const READ_ONLY_HTTP_METHODS: [&str; 3] = ["GET", "HEAD", "OPTIONS"];

/// An entry of `http_methods` that is not one of [`HTTP_METHODS`] as written there; the text
/// says so, and names the upper-case method when only the case was wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{method:?} is not one of them{}", case_hint(method))]
pub struct UnknownMethod {
    /// The entry as written.
    pub method: String,
}

/// `: methods are written in upper case, "GET"` when `method` upper-cased is one of
/// [`HTTP_METHODS`]; empty otherwise.
fn case_hint(method: &str) -> String {
    let upper = method.to_ascii_uppercase();
    if HTTP_METHODS.contains(&upper.as_str()) {
        format!(": methods are written in upper case, {upper:?}")
    } else {
        String::new()
    }
}

/// Checks one entry of `http_methods`: one of [`HTTP_METHODS`], as written there.
///
/// # Errors
/// [`UnknownMethod`] for any other text.
pub fn parse_method(text: &str) -> Result<String, UnknownMethod> {
    if HTTP_METHODS.contains(&text) {
        Ok(text.to_string())
    } else {
        Err(UnknownMethod {
            method: text.to_string(),
        })
    }
}

/// True when a request `grant` allows may change something: some host is granted, and
/// `http_methods` is empty (any method) or lists one not in [`READ_ONLY_HTTP_METHODS`]. A
/// policy that leaves `destructive` unset is destructive when this holds.
pub fn may_write(grant: &HttpGrant) -> bool {
    !grant.allow.is_empty()
        && (grant.methods.is_empty()
            || grant
                .methods
                .iter()
                .any(|m| !READ_ONLY_HTTP_METHODS.contains(&m.as_str())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_grants::{HttpAllow, HttpHost};

    /// [`parse_entry`] with its error as the message the operator reads.
    fn entry_text(text: &str) -> Result<HttpAllow, String> {
        parse_entry(text).map_err(|e| e.to_string())
    }

    /// [`parse_method`] with its error as the message the operator reads.
    fn method_text(text: &str) -> Result<String, String> {
        parse_method(text).map_err(|e| e.to_string())
    }

    fn entry(host: HttpHost, port: Option<u16>) -> HttpAllow {
        HttpAllow { host, port }
    }

    #[test]
    fn entries_parse_to_their_host_and_port() {
        assert_eq!(
            entry_text("API.example.com."),
            Ok(entry(HttpHost::Name("api.example.com".into()), None))
        );
        assert_eq!(
            entry_text("*.example.com:8443"),
            Ok(entry(
                HttpHost::Subdomains("example.com".into()),
                Some(8443)
            ))
        );
        assert_eq!(
            entry_text("127.0.0.1:8080"),
            Ok(entry(HttpHost::Ip([127, 0, 0, 1].into()), Some(8080)))
        );
        assert_eq!(
            entry_text("[::1]:80"),
            Ok(entry(
                HttpHost::Ip(std::net::Ipv6Addr::LOCALHOST.into()),
                Some(80)
            ))
        );
        assert_eq!(
            entry_text("[::1]"),
            Ok(entry(
                HttpHost::Ip(std::net::Ipv6Addr::LOCALHOST.into()),
                None
            ))
        );
    }

    #[test]
    fn bad_entries_say_what_is_wrong() {
        assert_eq!(
            entry_text("https://example.com"),
            Err("an entry names a host, not a URL: leave out the scheme and the path".into())
        );
        assert_eq!(
            entry_text("::1"),
            Err("an IPv6 address goes in brackets: `[::1]` or `[::1]:8080`".into())
        );
        assert_eq!(
            entry_text("example.com:0"),
            Err("the port \"0\" is not from 1 to 65535".into())
        );
        assert_eq!(
            entry_text("api.*.com"),
            Err("`*` may only stand first, as a whole label: `*.example.com`".into())
        );
        assert_eq!(
            entry_text("*"),
            Err("`*` may only stand first, as a whole label: `*.example.com`".into())
        );
        assert_eq!(entry_text(""), Err("\"\" is not a host name".into()));
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
            let got = entry_text(text);
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
            entry_text("10.0.0.1"),
            Ok(entry(HttpHost::Ip([10, 0, 0, 1].into()), None))
        );
        assert_eq!(
            entry_text("1.2.3.example.com"),
            Ok(entry(HttpHost::Name("1.2.3.example.com".into()), None))
        );
        // One trailing dot is removed from a name; two are refused.
        assert_eq!(
            entry_text("example.com."),
            Ok(entry(HttpHost::Name("example.com".into()), None))
        );
        assert_eq!(
            entry_text("example.com.."),
            Err("\"example.com.\" is not a host name".into())
        );
    }

    #[test]
    fn methods_are_those_of_rfc_9110_in_upper_case() {
        assert_eq!(method_text("GET"), Ok("GET".into()));
        assert_eq!(method_text("PATCH"), Ok("PATCH".into()));
        assert_eq!(
            method_text("get"),
            Err("\"get\" is not one of them: methods are written in upper case, \"GET\"".into())
        );
        assert_eq!(
            method_text("FETCH"),
            Err("\"FETCH\" is not one of them".into())
        );
        assert_eq!(
            method_text("GET POST"),
            Err("\"GET POST\" is not one of them".into())
        );
    }

    #[test]
    fn a_grant_of_a_method_that_writes_may_write() {
        let grant = |methods: &[&str]| HttpGrant {
            allow: vec![entry(HttpHost::Name("api.example.com".into()), None)],
            methods: methods.iter().map(|m| m.to_string()).collect(),
            ..HttpGrant::default()
        };
        assert!(!may_write(&grant(&["GET", "HEAD", "OPTIONS"])));
        assert!(may_write(&grant(&["GET", "POST"])));
        assert!(may_write(&grant(&[])), "no http_methods: any method");
        assert!(!may_write(&HttpGrant::default()), "no host granted");
    }
}
