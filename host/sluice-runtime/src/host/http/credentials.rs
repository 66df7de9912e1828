//! `http_credentials`: headers the host adds to a tool's requests, with secrets the tool
//! never holds (docs/configuration.md#credentials-the-tool-never-holds).
//!
//! A component's credentials are read when it loads (`host::config_store::resolve_policy`)
//! into [`Credentials`], which only the call's `wasi:http` hooks hold: no `wasi:config`
//! key, no environment variable. Then, for each request ([`crate::host::http`]):
//!
//! 1. after the allowlist, method and address checks pass, a request whose host (as the
//!    URI names it, like the allowlist matches it) and port are a credential's entry gets
//!    its header, the guest's header of that name replaced, and `accept-encoding: identity`
//!    (so that the response can be read for the secret). Over plain `http`, only to a
//!    loopback address: a request that would carry it in clear elsewhere is refused;
//! 2. every response the component receives, from any host, has each credential's secret
//!    (as it is, and as it appears inside a JSON string) replaced by
//!    `[secret withheld: http_credentials.ENTRY]` in its header values and trailers and in
//!    its body, also when it is split across the body's chunks ([`ScrubbedBody`]); a header
//!    whose name holds it is dropped, and `content-length` is dropped (withholding changes
//!    the length). A compressed response (`content-encoding` other than `identity`) to a
//!    request carrying a credential is refused: it cannot be read for the secret;
//! 3. the `wasi:http` errors the guest sees have it replaced in their text too.
//!
//! wasi:http's `outgoing-handler` follows no redirect: the guest sees a `3xx` and makes a new
//! request, judged anew, so a credential never goes to a host other than its own.
//!
//! Each use is one `info` event of this module's target (`credential attached`, with
//! `server.address`, `server.port`, `http.request.method` and the header's name, never the
//! value), and the request is marked in the call's log line and counted in its facts
//! (`httpCredentials`).

use std::sync::Arc;

use http::{HeaderMap, HeaderName, HeaderValue};
use wasmtime_wasi_http::Error;

use crate::host::http::refusal::HttpRefusal;
use crate::policy::{HttpAllow, HttpCredential, HttpHost};
use crate::secrets::{Secret, SecretError, Secrets, forms, withheld_marker};

/// Where `{secret}` goes in a credential's value.
const SECRET_PLACEHOLDER: &str = "{secret}";

/// The resolved `http_credentials` of one component, shared by its calls.
#[derive(Debug, Default)]
pub(crate) struct Credentials {
    entries: Vec<Credential>,
    /// What is replaced in responses and errors: each secret's forms, longest first.
    patterns: Arc<Patterns>,
    /// The secrets, for text ([`Secrets::withhold`]).
    secrets: Secrets,
}

/// One resolved credential.
struct Credential {
    entry: HttpAllow,
    header: HeaderName,
    value: HeaderValue,
    /// `http_credentials.ENTRY`: its key in markers and messages.
    label: String,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("label", &self.label)
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

/// The byte strings withheld from responses, each with its marker, longest first.
#[derive(Default)]
pub(crate) struct Patterns(Vec<(Vec<u8>, Vec<u8>)>);

/// Shows how many, never the bytes.
impl std::fmt::Debug for Patterns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Patterns({})", self.0.len())
    }
}

/// The label of a credential of `entry`: `http_credentials.api.example.com:8443`.
fn label(entry: &HttpAllow) -> String {
    format!("http_credentials.{}", entry.as_host_port())
}

impl Credentials {
    /// Resolves `list`: `read(label, source)` reads each secret ([`crate::secrets::read`]).
    ///
    /// # Errors
    /// What `read` returns, and a [`SecretError`] for a value that cannot be an HTTP header
    /// value (a control character such as a newline, or a byte past ASCII).
    pub(crate) fn resolve(
        list: &[HttpCredential],
        mut read: impl FnMut(&str, &crate::secrets::SecretSource) -> Result<Secret, SecretError>,
    ) -> Result<Credentials, SecretError> {
        let mut entries = Vec::new();
        let mut secrets = Vec::new();
        for c in list {
            let label = label(&c.entry);
            let fail = |reason: &str| SecretError {
                key: label.clone(),
                from: c.secret.clone(),
                reason: reason.to_string(),
            };
            let secret = read(&label, &c.secret)?;
            let header = HeaderName::from_bytes(c.header.as_bytes())
                .map_err(|_| fail("its header name is not an HTTP header name"))?;
            let text = c.value.replacen(SECRET_PLACEHOLDER, secret.expose(), 1);
            let mut value = HeaderValue::from_str(&text).map_err(|_| {
                fail("it cannot go in an HTTP header value: it holds a control character (such as a newline) or a character past ASCII")
            })?;
            // Never indexed by a header compressor, and shown as `Sensitive` by `Debug`.
            value.set_sensitive(true);
            entries.push(Credential {
                entry: c.entry.clone(),
                header,
                value,
                label: label.clone(),
            });
            secrets.push((label, secret));
        }
        let secrets = Secrets::new(secrets);
        Ok(Credentials {
            entries,
            patterns: Arc::new(Patterns::of(&secrets)),
            secrets,
        })
    }

    /// True when the component has none.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The credential for a request to `name` (lowercase, no trailing dot) or IP literal
    /// `literal`, port `port`, over TLS or not: its entry names that host, and its port (or
    /// the scheme's default port, for an entry without one) is `port`.
    fn find(
        &self,
        name: &str,
        literal: Option<std::net::IpAddr>,
        port: u16,
        tls: bool,
    ) -> Option<&Credential> {
        let default_port = if tls { 443 } else { 80 };
        self.entries.iter().find(|c| {
            let host = match (&c.entry.host, literal) {
                (HttpHost::Ip(ip), Some(l)) => *ip == l,
                (HttpHost::Name(n), None) => n == name,
                _ => false,
            };
            host && c.entry.port.unwrap_or(default_port) == port
        })
    }

    /// The credential `request` carries, if any: its header and `accept-encoding: identity`
    /// are set on `headers` (replacing the guest's), the use is logged, and the header's
    /// name returned.
    ///
    /// # Errors
    /// [`HttpRefusal::CredentialInClear`] for a plain-`http` request to an address that is
    /// not loopback (`addrs`, the checked addresses it goes to).
    pub(crate) fn attach(
        &self,
        request: Request<'_>,
        headers: &mut HeaderMap,
    ) -> Result<Option<String>, HttpRefusal> {
        let Request {
            method,
            authority,
            name,
            literal,
            port,
            tls,
            addrs,
        } = request;
        let Some(c) = self.find(name, literal, port, tls) else {
            return Ok(None);
        };
        if !tls && !addrs.iter().all(|a| a.ip().is_loopback()) {
            return Err(HttpRefusal::CredentialInClear {
                method: method.to_string(),
                authority: authority.to_string(),
                entry: c.entry.clone(),
            });
        }
        headers.insert(c.header.clone(), c.value.clone());
        headers.insert(
            http::header::ACCEPT_ENCODING,
            HeaderValue::from_static("identity"),
        );
        tracing::info!(
            server.address = %name,
            server.port = port,
            http.request.method = %method,
            http.request.header = %c.header,
            credential = %c.label,
            "credential attached"
        );
        Ok(Some(c.header.to_string()))
    }

    /// `headers` (a response's, or its trailers) with each secret withheld: replaced in
    /// values, a header whose name holds one dropped. True when one was there.
    pub(crate) fn scrub_headers(&self, headers: &mut HeaderMap) -> bool {
        if self.is_empty() {
            return false;
        }
        let mut found = false;
        let old = std::mem::take(headers);
        let mut name = None;
        for (n, value) in old {
            // `into_iter` names each header once, before its first value.
            if let Some(n) = n {
                name = Some(n);
            }
            let Some(name) = &name else { continue };
            if self.patterns.in_name(name.as_str()) {
                found = true;
                continue;
            }
            let (bytes, n) = self.patterns.replace(value.as_bytes());
            if n > 0 {
                found = true;
                // A marker is printable ASCII: the value stays a header value.
                if let Ok(v) = HeaderValue::from_bytes(&bytes) {
                    headers.append(name.clone(), v);
                }
            } else {
                headers.append(name.clone(), value);
            }
        }
        found
    }

    /// `e` with each secret withheld from its text (the `wasi:http` errors that carry text:
    /// DNS, TLS alert, field names, codings, internal errors).
    pub(crate) fn scrub_error(&self, e: Error) -> Error {
        if self.is_empty() {
            return e;
        }
        let w = |s: Option<String>| s.map(|s| self.secrets.withhold(&s).0);
        match e {
            Error::DnsError { rcode, info_code } => Error::DnsError {
                rcode: w(rcode),
                info_code,
            },
            Error::TlsAlertReceived {
                alert_id,
                alert_message,
            } => Error::TlsAlertReceived {
                alert_id,
                alert_message: w(alert_message),
            },
            Error::HttpRequestHeaderSize {
                field_name,
                field_size,
            } => Error::HttpRequestHeaderSize {
                field_name: w(field_name),
                field_size,
            },
            Error::HttpRequestTrailerSize {
                field_name,
                field_size,
            } => Error::HttpRequestTrailerSize {
                field_name: w(field_name),
                field_size,
            },
            Error::HttpResponseHeaderSize {
                field_name,
                field_size,
            } => Error::HttpResponseHeaderSize {
                field_name: w(field_name),
                field_size,
            },
            Error::HttpResponseTrailerSize {
                field_name,
                field_size,
            } => Error::HttpResponseTrailerSize {
                field_name: w(field_name),
                field_size,
            },
            Error::HttpResponseTransferCoding(s) => Error::HttpResponseTransferCoding(w(s)),
            Error::HttpResponseContentCoding(s) => Error::HttpResponseContentCoding(w(s)),
            Error::InternalError(s) => Error::InternalError(w(s)),
            other => other,
        }
    }

    /// The patterns a response body is scrubbed of.
    pub(crate) fn patterns(&self) -> Arc<Patterns> {
        self.patterns.clone()
    }
}

/// What [`Credentials::attach`] knows of a request whose checks passed.
pub(crate) struct Request<'a> {
    pub(crate) method: &'a str,
    /// `host:port` as the URI names them, for messages.
    pub(crate) authority: &'a str,
    /// The host name, lowercase, without a trailing dot (or the IP literal as written).
    pub(crate) name: &'a str,
    pub(crate) literal: Option<std::net::IpAddr>,
    pub(crate) port: u16,
    pub(crate) tls: bool,
    /// The checked addresses it may connect to.
    pub(crate) addrs: &'a [std::net::SocketAddr],
}

/// The coding of a compressed response (its `content-encoding` is set and is not
/// `identity`), to name in the refusal of one to a request carrying a credential.
pub(crate) fn compressed(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(http::header::CONTENT_ENCODING)
        .iter()
        .map(|v| {
            String::from_utf8_lossy(v.as_bytes())
                .trim()
                .to_ascii_lowercase()
        })
        .find(|c| !c.is_empty() && c != "identity")
}

impl Patterns {
    /// Each form of each of `secrets` ([`forms`]), with its marker, longest first.
    fn of(secrets: &Secrets) -> Patterns {
        let mut all: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for (key, secret) in secrets.iter() {
            for form in forms(secret) {
                all.push((form.into_bytes(), withheld_marker(key).into_bytes()));
            }
        }
        all.sort_by_key(|(pattern, _)| std::cmp::Reverse(pattern.len()));
        Patterns(all)
    }

    /// `bytes` with every occurrence of a pattern replaced by its marker (left to right,
    /// the longest pattern first where several start), and how many were.
    pub(crate) fn replace(&self, bytes: &[u8]) -> (Vec<u8>, usize) {
        let mut out = Vec::with_capacity(bytes.len());
        let mut count = 0;
        let mut i = 0;
        'scan: while i < bytes.len() {
            for (pattern, marker) in &self.0 {
                if bytes[i..].starts_with(pattern) {
                    out.extend_from_slice(marker);
                    i += pattern.len();
                    count += 1;
                    continue 'scan;
                }
            }
            out.push(bytes[i]);
            i += 1;
        }
        (out, count)
    }

    /// The length of the longest end of `bytes` that is a proper beginning of a pattern: the
    /// bytes to hold back until the next chunk says whether a pattern goes on there.
    pub(crate) fn pending(&self, bytes: &[u8]) -> usize {
        let mut best = 0;
        for (pattern, _) in &self.0 {
            let longest = (pattern.len() - 1).min(bytes.len());
            for len in (best + 1..=longest).rev() {
                if bytes.ends_with(&pattern[..len]) {
                    best = len;
                    break;
                }
            }
        }
        best
    }

    /// True when header name `name` (lowercase) holds a pattern, compared without case.
    fn in_name(&self, name: &str) -> bool {
        self.0.iter().any(|(p, _)| {
            let p = p.to_ascii_lowercase();
            name.as_bytes().windows(p.len()).any(|w| w == p.as_slice())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::SecretSource;

    /// Credentials of `127.0.0.1:8080` (`Authorization: Bearer {secret}`) with `secret`.
    fn credentials(secret: &str) -> Credentials {
        let list = [HttpCredential {
            entry: HttpAllow {
                host: HttpHost::Ip([127, 0, 0, 1].into()),
                port: Some(8080),
            },
            header: "authorization".into(),
            value: "Bearer {secret}".into(),
            secret: SecretSource::Env("T".into()),
        }];
        Credentials::resolve(&list, |_, _| Ok(Secret::new(secret.to_string()))).unwrap()
    }

    const MARKER: &str = "[secret withheld: http_credentials.127.0.0.1:8080]";

    #[test]
    fn debug_shows_no_value() {
        let c = credentials("QXZ-credential-0123");
        let shown = format!("{c:?}");
        assert!(!shown.contains("QXZ"), "{shown}");
        assert!(shown.contains("http_credentials.127.0.0.1:8080"), "{shown}");
    }

    #[test]
    fn a_value_that_cannot_be_a_header_value_is_a_load_error() {
        let list = [HttpCredential {
            entry: HttpAllow {
                host: HttpHost::Name("api.example.com".into()),
                port: None,
            },
            header: "authorization".into(),
            value: "Bearer {secret}".into(),
            secret: SecretSource::Env("T".into()),
        }];
        let e = Credentials::resolve(&list, |_, _| Ok(Secret::new("line\nbreak-secret".into())))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "its secret \"http_credentials.api.example.com\" cannot be read from environment variable T: it cannot go in an HTTP header value: it holds a control character (such as a newline) or a character past ASCII"
        );
    }

    #[test]
    fn a_request_to_its_entry_gets_the_header_and_another_does_not() {
        let c = credentials("QXZ-credential-0123");
        let loopback = ["127.0.0.1:8080".parse().unwrap()];
        let request = |name, literal, port| Request {
            method: "GET",
            authority: "127.0.0.1:8080",
            name,
            literal,
            port,
            tls: false,
            addrs: &loopback,
        };
        let mut headers = HeaderMap::new();
        headers.insert("authorization", HeaderValue::from_static("Bearer guest"));
        headers.insert("accept-encoding", HeaderValue::from_static("gzip"));
        let got = c
            .attach(
                request("127.0.0.1", Some([127, 0, 0, 1].into()), 8080),
                &mut headers,
            )
            .unwrap();
        assert_eq!(got, Some("authorization".to_string()));
        assert_eq!(headers["authorization"], "Bearer QXZ-credential-0123");
        assert_eq!(headers.get_all("authorization").iter().count(), 1);
        assert_eq!(headers["accept-encoding"], "identity");
        // Another port, or the same address by name: nothing.
        let mut other = HeaderMap::new();
        let got = c.attach(
            request("127.0.0.1", Some([127, 0, 0, 1].into()), 8081),
            &mut other,
        );
        assert_eq!(got, Ok(None));
        let got = c.attach(request("localhost", None, 8080), &mut other);
        assert_eq!(got, Ok(None));
        assert!(other.is_empty());
    }

    #[test]
    fn plain_http_to_an_address_that_is_not_loopback_is_refused() {
        let c = credentials("QXZ-credential-0123");
        let addrs = [
            "127.0.0.1:8080".parse().unwrap(),
            "10.0.0.1:8080".parse().unwrap(),
        ];
        let mut headers = HeaderMap::new();
        let got = c.attach(
            Request {
                method: "GET",
                authority: "127.0.0.1:8080",
                name: "127.0.0.1",
                literal: Some([127, 0, 0, 1].into()),
                port: 8080,
                tls: false,
                addrs: &addrs,
            },
            &mut headers,
        );
        assert_eq!(
            got.unwrap_err().to_string(),
            "the tool's GET request to 127.0.0.1:8080 was refused: its policy attaches a credential to 127.0.0.1:8080 (policy key http_credentials), which is sent over https only, or over plain http to a loopback address"
        );
        assert!(headers.is_empty());
    }

    #[test]
    fn response_headers_lose_the_secret() {
        let c = credentials("QXZ-credential-0123");
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-echo",
            HeaderValue::from_static("Bearer QXZ-credential-0123"),
        );
        headers.append("x-echo", HeaderValue::from_static("plain"));
        headers.insert("x-qxz-credential-0123", HeaderValue::from_static("1"));
        headers.insert("content-type", HeaderValue::from_static("text/plain"));
        assert!(c.scrub_headers(&mut headers));
        let echo: Vec<_> = headers.get_all("x-echo").iter().collect();
        assert_eq!(echo, [format!("Bearer {MARKER}").as_str(), "plain"]);
        assert!(!headers.contains_key("x-qxz-credential-0123"));
        assert_eq!(headers["content-type"], "text/plain");
        assert!(!c.scrub_headers(&mut headers));
    }

    #[test]
    fn error_text_loses_the_secret() {
        let c = credentials("QXZ-credential-0123");
        let e = c.scrub_error(Error::InternalError(Some(
            "bad header: Bearer QXZ-credential-0123".into(),
        )));
        assert!(
            matches!(&e, Error::InternalError(Some(s)) if *s == format!("bad header: Bearer {MARKER}")),
            "{e:?}"
        );
        let e = c.scrub_error(Error::DnsError {
            rcode: Some("QXZ-credential-0123".into()),
            info_code: Some(3),
        });
        assert!(
            matches!(&e, Error::DnsError { rcode: Some(s), info_code: Some(3) } if s == MARKER),
            "{e:?}"
        );
    }

    #[test]
    fn patterns_replace_whole_secrets_and_hold_back_beginnings() {
        let c = credentials("QXZ-cred\"ential-0123");
        let p = c.patterns();
        // The JSON-escaped form is longer, so it is tried first.
        let (out, n) = p.replace(br#"a QXZ-cred\"ential-0123 b QXZ-cred"ential-0123 c"#);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!("a {MARKER} b {MARKER} c")
        );
        assert_eq!(n, 2);
        assert_eq!(p.pending(b"text QXZ-cr"), 6);
        assert_eq!(p.pending(b"text QXZ-cred\\"), 9);
        assert_eq!(p.pending(b"text"), 0);
    }

    #[test]
    fn compressed_responses_are_named() {
        let mut h = HeaderMap::new();
        assert_eq!(compressed(&h), None);
        h.insert("content-encoding", HeaderValue::from_static("identity"));
        assert_eq!(compressed(&h), None);
        h.insert("content-encoding", HeaderValue::from_static("GZIP"));
        assert_eq!(compressed(&h), Some("gzip".into()));
    }
}
