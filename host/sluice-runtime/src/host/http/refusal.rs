//! Why the host refused a tool's HTTP request, or the response to it ([`HttpRefusal`]): the
//! message of the call's tool error (kind `http-denied`), which names the request and the
//! policy key that decides it ([`crate::host::http`]).

use std::net::IpAddr;

use crate::policy::HttpAllow;

/// A request (or its response) the policy refused. `method` is the request's method and
/// `authority` its `host:port` (the host as the URI names it).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpRefusal {
    /// The URL carries credentials (`user:pw@host`), which would go out in the `Host`
    /// header.
    #[error(
        "the tool's {method} request to {authority} was refused: credentials in the URL are not sent; use an Authorization header"
    )]
    Userinfo {
        /// The request's method.
        method: String,
        /// Its `host:port`.
        authority: String,
    },
    /// The method is not in `http_methods`.
    #[error(
        "the tool's {method} request to {authority} was refused: its policy allows only {} (policy key http_methods)",
        methods.join(", ")
    )]
    Method {
        /// The request's method.
        method: String,
        /// Its `host:port`.
        authority: String,
        /// The methods the policy allows.
        methods: Vec<String>,
    },
    /// The host is an IPv4 address in another form than `a.b.c.d`
    /// ([`is_other_ipv4_form`](crate::host::http::is_other_ipv4_form)).
    #[error(
        "the tool's {method} request to {authority} was refused: the host {host} is an IPv4 address written in another form than four decimal numbers a.b.c.d, which the policy does not match (write the address as a.b.c.d, and list it in the policy key http)"
    )]
    OtherIpv4Form {
        /// The request's method.
        method: String,
        /// Its `host:port`.
        authority: String,
        /// The host, without brackets.
        host: String,
    },
    /// The host and port are not in `http`.
    #[error(
        "the tool's {method} request to {authority} was refused: {authority} is not in its policy key http ({}{})",
        allowed(allows),
        port_note(*portless)
    )]
    NotListed {
        /// The request's method.
        method: String,
        /// Its `host:port`.
        authority: String,
        /// The entries of `http`.
        allows: Vec<HttpAllow>,
        /// When an entry without a port names this host (the request being to another
        /// port): the scheme's default port and the scheme (`443`, `https`).
        portless: Option<(u16, &'static str)>,
    },
    /// A host name resolves to an address that is not globally reachable, without
    /// `http_private`.
    #[error(
        "the tool's {method} request to {authority} was refused: {name} resolves to {address}, in {range}, an address that is not globally reachable, which a host name may reach only with http_private = true in its policy (or list the address itself in http)"
    )]
    NotGlobal {
        /// The request's method.
        method: String,
        /// Its `host:port`.
        authority: String,
        /// The host name.
        name: String,
        /// The address it resolves to.
        address: IpAddr,
        /// The special-purpose block of the address
        /// ([`special_range`](crate::address::special_range)).
        range: &'static str,
    },
    /// A request that would carry a credential over plain `http` to an address that is not
    /// loopback.
    #[error(
        "the tool's {method} request to {authority} was refused: its policy attaches a credential to {} (policy key http_credentials), which is sent over https only, or over plain http to a loopback address",
        entry.as_host_port()
    )]
    CredentialInClear {
        /// The request's method.
        method: String,
        /// Its `host:port`.
        authority: String,
        /// The credential's entry.
        entry: HttpAllow,
    },
    /// A compressed response to a request that carried a credential: it cannot be read for
    /// the secret.
    #[error(
        "the response to the tool's {request} request was refused: it is compressed (content-encoding: {coding}) although the host asked for none, and the host must read a response to a request carrying a credential (policy key http_credentials) to withhold the credential from it"
    )]
    Compressed {
        /// The request: `METHOD host:port`.
        request: String,
        /// Its `content-encoding` (lowercase).
        coding: String,
    },
    /// Under recordings, no recording answers the request
    /// ([`crate::host::http_recorded`]).
    #[error(
        "the tool's {method} request to {url} was refused: no recording in {origin} matches it ({}); under recordings the host sends no request to the network",
        recorded_list(recorded)
    )]
    NotRecorded {
        /// The request's method.
        method: String,
        /// Its URL, in the recordings' normal form.
        url: String,
        /// Where the recordings come from (`[[http]] of tests.toml`).
        origin: String,
        /// What they record: `METHOD URL` each.
        recorded: Vec<String>,
    },
}

/// What `http` allows, in a refusal: `it allows a.example, b.example:8080`.
fn allowed(allows: &[HttpAllow]) -> String {
    if allows.is_empty() {
        "it grants no host".to_string()
    } else {
        let list: Vec<String> = allows.iter().map(HttpAllow::as_host_port).collect();
        format!("it allows {}", list.join(", "))
    }
}

/// The note on an entry without a port, if one names the host.
fn port_note(portless: Option<(u16, &'static str)>) -> String {
    portless.map_or_else(String::new, |(port, scheme)| {
        format!("; an entry without a port allows port {port} only for {scheme}")
    })
}

/// What recordings record, in a refusal.
fn recorded_list(recorded: &[String]) -> String {
    if recorded.is_empty() {
        "it records no request".to_string()
    } else {
        format!("it records {}", recorded.join(", "))
    }
}
