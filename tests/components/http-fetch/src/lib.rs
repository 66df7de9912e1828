//! A test component that fetches a URL through `wasi:http` (the `wasip2` crate's bindings)
//! and returns the status and body, or starts many requests and keeps them open (`flood`,
//! for the host's bound on open requests); `wasi:http` errors come back as their debug
//! text. For the tests of `http_credentials`, it also sends requests with headers of its
//! own and follows redirects (`exchange`), and reports what it can read of its
//! configuration (`look-around`), both in hex so that the host's scan of observations
//! cannot hide what it read.

#![allow(unsafe_code)] // The generated export glue is unsafe.

mod bindings {
    #![allow(missing_docs, unreachable_pub, clippy::all)]
    wit_bindgen::generate!({
        world: "http-fetch",
        path: "wit",
        generate_all,
    });
}

use bindings::wasi::config::store;
use bindings::{Exchange, Field, Page};

struct HttpFetch;

impl bindings::Guest for HttpFetch {
    fn fetch(url: String, method: Option<String>) -> Result<Page, String> {
        fetch(&url, method.as_deref().unwrap_or("GET"))
    }

    fn flood(url: String, count: u32, wait_ms: u32) -> Result<u32, String> {
        flood(&url, count, wait_ms)
    }

    fn exchange(
        url: String,
        method: Option<String>,
        headers: Vec<(String, String)>,
        max_redirects: u32,
    ) -> Result<Exchange, String> {
        exchange(
            &url,
            method.as_deref().unwrap_or("GET"),
            &headers,
            max_redirects,
        )
        .map_err(|e| hex(e.as_bytes()))
    }

    fn look_around(keys: Vec<String>) -> Vec<Field> {
        let mut out = Vec::new();
        let mut all = store::get_all().unwrap_or_default();
        all.sort();
        for (key, value) in all {
            out.push(field(&format!("config:{key}"), value.as_bytes()));
        }
        for key in keys {
            if let Ok(Some(value)) = store::get(&key) {
                out.push(field(&format!("get:{key}"), value.as_bytes()));
            }
        }
        for (name, value) in environment() {
            out.push(field(&format!("env:{name}"), value.as_bytes()));
        }
        out
    }
}

/// `bytes` as lowercase hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn field(name: &str, value: &[u8]) -> Field {
    Field {
        name: name.to_string(),
        value_hex: hex(value),
    }
}

#[cfg(target_os = "wasi")]
fn environment() -> Vec<(String, String)> {
    wasip2::cli::environment::get_environment()
}

#[cfg(not(target_os = "wasi"))]
fn environment() -> Vec<(String, String)> {
    std::env::vars().collect()
}

/// Where `location` (absolute, or a path) points from `url`.
#[cfg_attr(not(target_os = "wasi"), allow(dead_code))]
fn resolve_location(url: &str, location: &str) -> Result<String, String> {
    if location.starts_with("http://") || location.starts_with("https://") {
        return Ok(location.to_string());
    }
    let (tls, authority, _) = split_url(url)?;
    if !location.starts_with('/') {
        return Err(format!(
            "a location this component does not follow: {location}"
        ));
    }
    let scheme = if tls { "https" } else { "http" };
    Ok(format!("{scheme}://{authority}{location}"))
}

bindings::export!(HttpFetch with_types_in bindings);

/// Splits `scheme://authority/path?query` into its parts.
#[cfg_attr(not(target_os = "wasi"), allow(dead_code))]
fn split_url(url: &str) -> Result<(bool, &str, &str), String> {
    let (tls, rest) = if let Some(r) = url.strip_prefix("https://") {
        (true, r)
    } else if let Some(r) = url.strip_prefix("http://") {
        (false, r)
    } else {
        return Err(format!("not an http(s) URL: {url}"));
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    Ok((tls, authority, path))
}

/// The request `method url`, ready to send.
#[cfg(target_os = "wasi")]
fn request(url: &str, method: &str) -> Result<wasip2::http::types::OutgoingRequest, String> {
    request_with(url, method, wasip2::http::types::Fields::new())
}

/// The request `method url` with `headers`, ready to send.
#[cfg(target_os = "wasi")]
fn request_with(
    url: &str,
    method: &str,
    headers: wasip2::http::types::Fields,
) -> Result<wasip2::http::types::OutgoingRequest, String> {
    use wasip2::http::types::{Method, OutgoingRequest, Scheme};

    let (tls, authority, path) = split_url(url)?;
    let request = OutgoingRequest::new(headers);
    let method = match method {
        "GET" => Method::Get,
        "POST" => Method::Post,
        "HEAD" => Method::Head,
        other => Method::Other(other.to_string()),
    };
    request.set_method(&method).map_err(|()| "bad method")?;
    request
        .set_scheme(Some(if tls { &Scheme::Https } else { &Scheme::Http }))
        .map_err(|()| "bad scheme")?;
    request
        .set_authority(Some(authority))
        .map_err(|()| "bad authority")?;
    request
        .set_path_with_query(Some(path))
        .map_err(|()| "bad path")?;
    Ok(request)
}

#[cfg(target_os = "wasi")]
fn flood(url: &str, count: u32, wait_ms: u32) -> Result<u32, String> {
    use wasip2::http::outgoing_handler;

    let mut open = Vec::new();
    for _ in 0..count {
        let future =
            outgoing_handler::handle(request(url, "GET")?, None).map_err(|e| format!("{e:?}"))?;
        open.push(future);
    }
    // The host connects while the guest waits.
    wasip2::clocks::monotonic_clock::subscribe_duration(u64::from(wait_ms) * 1_000_000).block();
    Ok(open.len() as u32)
}

#[cfg(not(target_os = "wasi"))]
fn flood(url: &str, _count: u32, _wait_ms: u32) -> Result<u32, String> {
    Err(format!(
        "{url}: wasi:http exists only in the wasm32-wasip2 build"
    ))
}

#[cfg(target_os = "wasi")]
fn fetch(url: &str, method: &str) -> Result<Page, String> {
    use wasip2::http::outgoing_handler;
    use wasip2::http::types::IncomingBody;
    use wasip2::io::streams::StreamError;

    let future =
        outgoing_handler::handle(request(url, method)?, None).map_err(|e| format!("{e:?}"))?;
    future.subscribe().block();
    let response = future
        .get()
        .ok_or("no response after the pollable was ready")?
        .map_err(|()| "the response was taken twice")?
        .map_err(|e| format!("{e:?}"))?;
    let status = response.status();
    let body = response.consume().map_err(|()| "no body")?;
    let stream = body.stream().map_err(|()| "no body stream")?;
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => bytes.extend_from_slice(&chunk),
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(format!("reading the body failed: {}", e.to_debug_string()));
            }
        }
    }
    drop(stream);
    drop(IncomingBody::finish(body));
    Ok(Page {
        status,
        bytes: bytes.len() as u64,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    })
}

#[cfg(target_os = "wasi")]
fn exchange(
    url: &str,
    method: &str,
    headers: &[(String, String)],
    max_redirects: u32,
) -> Result<Exchange, String> {
    use wasip2::http::outgoing_handler;
    use wasip2::http::types::IncomingBody;
    use wasip2::io::streams::StreamError;

    let mut hops = Vec::new();
    let mut url = url.to_string();
    loop {
        // A request's own headers are immutable: they are set before it is made.
        let fields = wasip2::http::types::Fields::new();
        for (name, value) in headers {
            fields
                .append(name, value.as_bytes())
                .map_err(|e| format!("the header {name}: {e:?}"))?;
        }
        let request = request_with(&url, method, fields)?;
        let future = outgoing_handler::handle(request, None).map_err(|e| format!("{e:?}"))?;
        future.subscribe().block();
        let response = future
            .get()
            .ok_or("no response after the pollable was ready")?
            .map_err(|()| "the response was taken twice")?
            .map_err(|e| format!("{e:?}"))?;
        let status = response.status();
        hops.push(bindings::Hop {
            url: url.clone(),
            status,
        });
        let entries = response.headers().entries();
        let location = entries
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("location"))
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned());
        if (300..400).contains(&status)
            && let Some(location) = location
            && (hops.len() as u32) <= max_redirects
        {
            drop(response);
            url = resolve_location(&url, &location)?;
            continue;
        }
        let body = response.consume().map_err(|()| "no body")?;
        let stream = body.stream().map_err(|()| "no body stream")?;
        let mut bytes = Vec::new();
        loop {
            match stream.blocking_read(64 * 1024) {
                Ok(chunk) => bytes.extend_from_slice(&chunk),
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(e)) => {
                    return Err(format!(
                        "reading the body failed: {}; read before: {}",
                        e.to_debug_string(),
                        String::from_utf8_lossy(&bytes)
                    ));
                }
            }
        }
        drop(stream);
        drop(IncomingBody::finish(body));
        return Ok(Exchange {
            hops,
            headers: entries.iter().map(|(n, v)| field(n, v)).collect(),
            body_hex: hex(&bytes),
        });
    }
}

#[cfg(not(target_os = "wasi"))]
fn exchange(
    url: &str,
    _method: &str,
    _headers: &[(String, String)],
    _max_redirects: u32,
) -> Result<Exchange, String> {
    Err(format!(
        "{url}: wasi:http exists only in the wasm32-wasip2 build"
    ))
}

#[cfg(not(target_os = "wasi"))]
fn fetch(url: &str, _method: &str) -> Result<Page, String> {
    Err(format!(
        "{url}: wasi:http exists only in the wasm32-wasip2 build"
    ))
}
