//! Recorded HTTP responses the host answers a call's `wasi:http` requests from, in place of
//! the network: `sluice test`'s `[[http]]` tables (docs/authoring.md#recorded-http-responses).
//!
//! A policy whose [`ToolPolicy::http_recordings`](crate::policy::ToolPolicy::http_recordings) is
//! set sends nothing to the network. Each request is checked by the policy first, as any request
//! (`http_methods`, the host and port in `http`, credentials in the URL; [`crate::host::http`]):
//! a recording never lets a tool reach a host its policy does not grant. No name is resolved,
//! so `http_private` plays no part. A request the policy allows is then answered by the
//! recording of its method and URL ([`HttpRecording`]), whose body counts against
//! `http_max_response_bytes` exactly as a real response's does. A request no recording
//! matches is refused as the policy refuses one: the call ends with an `http-denied` tool
//! error naming the method, the URL, where the recordings come from and what they record.
//!
//! The request's body is read and dropped; it plays no part in the match.

use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use http::{HeaderName, HeaderValue, StatusCode, Uri};

use crate::host::http::refusal::HttpRefusal;

/// Why a recording cannot be ([`HttpRecording::new`]): the field that is wrong, and how.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordingError {
    /// The method is not an HTTP token.
    #[error("`method` {0:?} is not an HTTP method")]
    Method(String),
    /// The URL is not absolute `http://` or `https://` with a host.
    #[error("`url` {0:?} is not an absolute http:// or https:// URL")]
    NotUrl(String),
    /// The URL has a fragment, which a request never sends.
    #[error("`url` {0:?} has a fragment (#…), which is never sent: leave it out")]
    Fragment(String),
    /// The URL has credentials (`user:pw@`), which the host never sends.
    #[error("`url` {0:?} has credentials, which the host never sends")]
    Credentials(String),
    /// The status is not from 200 to 599.
    #[error("`status` {0} is not from 200 to 599")]
    Status(i64),
    /// A header name HTTP does not allow.
    #[error("`headers`: {0:?} is not a header name")]
    HeaderName(String),
    /// A header value HTTP does not allow (of the header named).
    #[error("`headers`: the value of {0:?} is not a header value")]
    HeaderValue(String),
}

/// One recorded exchange: the request it answers (method and URL) and the response.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpRecording {
    method: String,
    url: String,
    status: StatusCode,
    headers: Vec<(HeaderName, HeaderValue)>,
    body: Bytes,
}

impl std::fmt::Debug for HttpRecording {
    /// `GET https://host/path -> 200, N bytes` (not the body).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} -> {}, {} bytes",
            self.method,
            self.url,
            self.status.as_u16(),
            self.body.len()
        )
    }
}

impl HttpRecording {
    /// The recording of the response to `method` (a token, uppercased: `get` is `GET`) at
    /// `url` (absolute: `http://` or `https://`, a host, an optional port, path and query),
    /// with `status` (200 to 599), `headers` (names and values as HTTP allows them, in
    /// order) and `body`.
    ///
    /// The URL is kept in a normal form that requests are matched against exactly: scheme and
    /// host lowercase, the scheme's default port left out (`https://a.example:443/x` is
    /// `https://a.example/x`), an empty path written `/`.
    ///
    /// # Errors
    /// [`RecordingError`], naming the field: `` `method` "G T" is not an HTTP method``,
    /// `` `url` "…" is not an absolute http:// or https:// URL ``, a URL with credentials or
    /// a fragment, `` `status` 700 is not from 200 to 599``, a header name or value HTTP
    /// does not allow.
    pub fn new(
        method: &str,
        url: &str,
        status: i64,
        headers: &[(String, String)],
        body: Vec<u8>,
    ) -> Result<HttpRecording, RecordingError> {
        let method = method.to_ascii_uppercase();
        if http::Method::from_bytes(method.as_bytes()).is_err() {
            return Err(RecordingError::Method(method));
        }
        let not_url = || RecordingError::NotUrl(url.to_string());
        if url.contains('#') {
            return Err(RecordingError::Fragment(url.to_string()));
        }
        let uri: Uri = url.parse().map_err(|_| not_url())?;
        if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
            return Err(RecordingError::Credentials(url.to_string()));
        }
        let url = normal_url(&uri).ok_or_else(not_url)?;
        let status = u16::try_from(status)
            .ok()
            .filter(|s| (200..=599).contains(s))
            .and_then(|s| StatusCode::from_u16(s).ok())
            .ok_or(RecordingError::Status(status))?;
        let headers = headers
            .iter()
            .map(|(name, value)| {
                let n = HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| RecordingError::HeaderName(name.clone()))?;
                let v = HeaderValue::from_str(value)
                    .map_err(|_| RecordingError::HeaderValue(name.clone()))?;
                Ok((n, v))
            })
            .collect::<Result<_, RecordingError>>()?;
        Ok(HttpRecording {
            method,
            url,
            status,
            headers,
            body: body.into(),
        })
    }

    /// The method it answers (uppercase).
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The URL it answers, in the normal form of [`HttpRecording::new`].
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The response's status code.
    pub fn status(&self) -> u16 {
        self.status.as_u16()
    }

    /// The response's body.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// The response, its body as one frame of `Bytes`.
    pub(crate) fn response(&self) -> http::Response<Bytes> {
        let mut response = http::Response::new(self.body.clone());
        *response.status_mut() = self.status;
        for (name, value) in &self.headers {
            response.headers_mut().append(name.clone(), value.clone());
        }
        response
    }
}

/// `uri` as `scheme://host[:port]/path[?query]`: scheme and host lowercase, no default port,
/// `/` for an empty path; `None` for a URI that is not absolute `http` or `https` with a host.
pub(crate) fn normal_url(uri: &Uri) -> Option<String> {
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let default = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let host = uri.host().filter(|h| !h.is_empty())?.to_ascii_lowercase();
    let port = match uri.port_u16() {
        Some(p) if p != default => format!(":{p}"),
        _ => String::new(),
    };
    let path = match uri.path() {
        "" => "/",
        p => p,
    };
    let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
    Some(format!("{scheme}://{host}{port}{path}{query}"))
}

/// The recordings a policy's requests are answered from: a shared handle, cheap to clone,
/// whose set [`HttpRecordings::replace`] swaps (`sluice test` puts each case's in place
/// before its calls). Every clone sees the same set; a call reads it when it sends a request.
#[derive(Clone, Default)]
pub struct HttpRecordings {
    set: Arc<Mutex<RecordedSet>>,
}

/// The recordings in place now, and where they come from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct RecordedSet {
    recordings: Vec<HttpRecording>,
    origin: String,
}

impl std::fmt::Debug for HttpRecordings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = self.lock();
        f.debug_struct("HttpRecordings")
            .field("origin", &set.origin)
            .field("recordings", &set.recordings)
            .finish()
    }
}

impl PartialEq for HttpRecordings {
    /// The same handle, or two handles holding equal sets.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.set, &other.set) || {
            let mine = self.lock().clone();
            mine == *other.lock()
        }
    }
}

impl Eq for HttpRecordings {}

impl HttpRecordings {
    /// A handle holding `recordings`, which come from `origin` (how messages name them:
    /// `[[http]] of tests.toml`).
    pub fn new(recordings: Vec<HttpRecording>, origin: &str) -> HttpRecordings {
        let handle = HttpRecordings::default();
        handle.replace(recordings, origin);
        handle
    }

    /// Puts `recordings` from `origin` in place of the set every clone of this handle holds;
    /// the requests sent from now on are answered from them. An empty set answers none.
    pub fn replace(&self, recordings: Vec<HttpRecording>, origin: &str) {
        *self.lock() = RecordedSet {
            recordings,
            origin: origin.to_string(),
        };
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RecordedSet> {
        self.set.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The recording of `method` to `uri`, or the refusal
    /// ([`HttpRefusal::NotRecorded`]): `the tool's GET request to https://a.example/x was
    /// refused: no recording in [[http]] of tests.toml matches it (it records GET
    /// https://a.example/y, …); under recordings the host sends no request to the network`.
    pub(crate) fn answer(&self, method: &str, uri: &Uri) -> Result<HttpRecording, HttpRefusal> {
        let url = normal_url(uri).unwrap_or_else(|| uri.to_string());
        let set = self.lock();
        if let Some(r) = set
            .recordings
            .iter()
            .find(|r| r.method == method && r.url == url)
        {
            return Ok(r.clone());
        }
        Err(HttpRefusal::NotRecorded {
            method: method.to_string(),
            url,
            origin: set.origin.clone(),
            recorded: set
                .recordings
                .iter()
                .map(|r| format!("{} {}", r.method, r.url))
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recording_keeps_its_url_in_normal_form_and_refuses_what_http_does_not_allow() {
        let r = |method: &str, url: &str, status: i64| {
            HttpRecording::new(method, url, status, &[], Vec::new())
                .map(|r| r.url().to_string())
                .map_err(|e| e.to_string())
        };
        assert_eq!(
            r("get", "HTTPS://API.Example.com:443/v1?q=1", 200).unwrap(),
            "https://api.example.com/v1?q=1"
        );
        assert_eq!(
            r("GET", "http://[::1]:8080", 200).unwrap(),
            "http://[::1]:8080/"
        );
        assert_eq!(
            r("G T", "http://a.example/", 200).unwrap_err(),
            "`method` \"G T\" is not an HTTP method"
        );
        assert_eq!(
            r("GET", "ftp://a.example/", 200).unwrap_err(),
            "`url` \"ftp://a.example/\" is not an absolute http:// or https:// URL"
        );
        assert_eq!(
            r("GET", "/relative", 200).unwrap_err(),
            "`url` \"/relative\" is not an absolute http:// or https:// URL"
        );
        assert_eq!(
            r("GET", "https://u:p@a.example/", 200).unwrap_err(),
            "`url` \"https://u:p@a.example/\" has credentials, which the host never sends"
        );
        assert_eq!(
            r("GET", "https://a.example/#top", 200).unwrap_err(),
            "`url` \"https://a.example/#top\" has a fragment (#…), which is never sent: leave it out"
        );
        assert_eq!(
            r("GET", "https://a.example/", 199).unwrap_err(),
            "`status` 199 is not from 200 to 599"
        );
        let bad_header = HttpRecording::new(
            "GET",
            "https://a.example/",
            200,
            &[("content type".into(), "x".into())],
            Vec::new(),
        );
        assert_eq!(
            bad_header.unwrap_err().to_string(),
            "`headers`: \"content type\" is not a header name"
        );
    }

    #[test]
    fn a_handle_answers_its_current_set_and_names_them_when_none_matches() {
        let weather = HttpRecording::new(
            "GET",
            "https://api.example.com/weather?city=paris",
            200,
            &[("content-type".into(), "application/json".into())],
            b"{\"sky\":\"clear\"}".to_vec(),
        )
        .unwrap();
        let handle = HttpRecordings::new(vec![weather.clone()], "[[http]] of tests.toml");
        let uri: Uri = "https://API.example.com:443/weather?city=paris"
            .parse()
            .unwrap();
        assert_eq!(handle.answer("GET", &uri), Ok(weather.clone()));
        let response = handle.answer("GET", &uri).unwrap().response();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "application/json");
        assert_eq!(response.body().as_ref(), b"{\"sky\":\"clear\"}");
        assert_eq!(
            handle.answer("POST", &uri).unwrap_err().to_string(),
            "the tool's POST request to https://api.example.com/weather?city=paris was refused: no recording in [[http]] of tests.toml matches it (it records GET https://api.example.com/weather?city=paris); under recordings the host sends no request to the network"
        );
        // A clone sees what replaces the set.
        let clone = handle.clone();
        handle.replace(Vec::new(), "the `http` of case `offline`");
        assert_eq!(
            clone.answer("GET", &uri).unwrap_err().to_string(),
            "the tool's GET request to https://api.example.com/weather?city=paris was refused: no recording in the `http` of case `offline` matches it (it records no request); under recordings the host sends no request to the network"
        );
        assert_eq!(clone, handle);
        assert_ne!(clone, HttpRecordings::new(vec![weather], "x"));
    }

    /// The response's status and body (or the error of the request or of its body), the
    /// call's refusal and its log line.
    type Sent = (
        Result<(u16, Vec<u8>), wasmtime_wasi_http::Error>,
        Option<(String, &'static str)>,
        String,
    );

    /// Through the call's hooks: `method` to `uri` under a policy granting `api.example.com`
    /// (GET only, responses up to `limit` bytes), answered from `recordings`. Returns the
    /// status and body of the response (or the error of the request or of its body), the
    /// refusal and the log line.
    fn send(recordings: &HttpRecordings, method: &str, uri: &str, limit: u64) -> Sent {
        use http_body_util::BodyExt;
        use wasmtime_wasi_http::WasiHttpHooks;

        use crate::host::http::HttpHooks;
        use crate::policy::{HttpAllow, HttpGrant, HttpHost};

        let grant = HttpGrant {
            allow: vec![HttpAllow {
                host: HttpHost::Name("api.example.com".into()),
                port: None,
            }],
            methods: vec!["GET".into()],
            max_response_bytes: limit,
            ..HttpGrant::default()
        };
        let mut hooks = HttpHooks::new(
            Arc::new(grant),
            Some(recordings.clone()),
            Arc::default(),
            std::time::Instant::now() + std::time::Duration::from_secs(5),
        );
        let body: wasmtime_wasi_http::WasiBody = http_body_util::Empty::new()
            .map_err(|never| match never {})
            .boxed_unsync();
        let request = http::Request::builder()
            .method(method)
            .uri(uri)
            .body(body)
            .unwrap();
        let sent = hooks.send_request(request, None, Box::new(async { Ok(()) }));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let got = runtime.block_on(async {
            let (response, io) = Box::into_pin(sent).await?;
            Box::into_pin(io).await?;
            let status = response.status().as_u16();
            let body = response.into_body().collect().await?.to_bytes();
            Ok((status, body.to_vec()))
        });
        let log = hooks.log();
        (got, log.refusal().cloned(), log.summary())
    }

    fn weather() -> HttpRecordings {
        let body = b"{\"sky\":\"clear\"}".to_vec();
        let recordings = vec![
            HttpRecording::new(
                "GET",
                "https://api.example.com/weather?city=paris",
                200,
                &[],
                body.clone(),
            )
            .unwrap(),
            HttpRecording::new("GET", "https://evil.example/weather", 200, &[], body).unwrap(),
        ];
        HttpRecordings::new(recordings, "[[http]] of tests.toml")
    }

    #[test]
    fn a_granted_request_gets_its_recording_within_the_response_limit() {
        let (got, refusal, summary) = send(
            &weather(),
            "GET",
            "https://api.example.com/weather?city=paris",
            1024,
        );
        assert_eq!(got.unwrap(), (200, b"{\"sky\":\"clear\"}".to_vec()));
        assert_eq!(refusal, None);
        assert_eq!(summary, "GET api.example.com:443 200 15 B");
        // 15 bytes past a limit of 10: as a real response, the body fails, naming the key.
        let (got, refusal, summary) = send(
            &weather(),
            "GET",
            "https://api.example.com/weather?city=paris",
            10,
        );
        assert!(
            matches!(
                got,
                Err(wasmtime_wasi_http::Error::HttpResponseBodySize(Some(10)))
            ),
            "{got:?}"
        );
        assert_eq!(
            refusal,
            Some((
                "the response to the tool's GET request to api.example.com:443 is larger than 10 bytes, the most one response may have (policy key http_max_response_bytes); it was cut there".to_string(),
                "resource-limit"
            ))
        );
        assert_eq!(
            summary,
            "GET api.example.com:443 failed: body over 10 bytes"
        );
    }

    #[test]
    fn the_policy_refuses_first_and_a_request_without_a_recording_is_refused() {
        // Recorded, but not granted: the policy's refusal, not the recording.
        let (got, refusal, summary) = send(&weather(), "GET", "https://evil.example/weather", 1024);
        assert!(
            matches!(got, Err(wasmtime_wasi_http::Error::HttpRequestDenied)),
            "{got:?}"
        );
        assert_eq!(
            refusal,
            Some((
                "the tool's GET request to evil.example:443 was refused: evil.example:443 is not in its policy key http (it allows api.example.com)".to_string(),
                crate::host::http::HTTP_DENIED_KIND
            ))
        );
        assert_eq!(
            summary,
            "GET evil.example:443 failed: refused by the policy"
        );
        let (_, refusal, _) = send(
            &weather(),
            "POST",
            "https://api.example.com/weather?city=paris",
            1024,
        );
        assert_eq!(
            refusal.unwrap().0,
            "the tool's POST request to api.example.com:443 was refused: its policy allows only GET (policy key http_methods)"
        );
        // Granted, not recorded: refused, naming what is recorded.
        let (got, refusal, _) = send(
            &weather(),
            "GET",
            "https://api.example.com/weather?city=oslo",
            1024,
        );
        assert!(
            matches!(got, Err(wasmtime_wasi_http::Error::HttpRequestDenied)),
            "{got:?}"
        );
        assert_eq!(
            refusal,
            Some((
                "the tool's GET request to https://api.example.com/weather?city=oslo was refused: no recording in [[http]] of tests.toml matches it (it records GET https://api.example.com/weather?city=paris, GET https://evil.example/weather); under recordings the host sends no request to the network".to_string(),
                crate::host::http::HTTP_DENIED_KIND
            ))
        );
    }
}
