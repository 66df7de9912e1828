//! A test component that fetches a URL through `wasi:http` (the `wasip2` crate's bindings)
//! and returns the status and body, or starts many requests and keeps them open (`flood`,
//! for the host's bound on open requests); `wasi:http` errors come back as their debug
//! text.

#![allow(unsafe_code)] // The generated export glue is unsafe.

mod bindings {
    #![allow(missing_docs, unreachable_pub, clippy::all)]
    wit_bindgen::generate!({
        world: "http-fetch",
        path: "wit",
    });
}

use bindings::Page;

struct HttpFetch;

impl bindings::Guest for HttpFetch {
    fn fetch(url: String, method: Option<String>) -> Result<Page, String> {
        fetch(&url, method.as_deref().unwrap_or("GET"))
    }

    fn flood(url: String, count: u32, wait_ms: u32) -> Result<u32, String> {
        flood(&url, count, wait_ms)
    }
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
    use wasip2::http::types::{Fields, Method, OutgoingRequest, Scheme};

    let (tls, authority, path) = split_url(url)?;
    let request = OutgoingRequest::new(Fields::new());
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

#[cfg(not(target_os = "wasi"))]
fn fetch(url: &str, _method: &str) -> Result<Page, String> {
    Err(format!(
        "{url}: wasi:http exists only in the wasm32-wasip2 build"
    ))
}
