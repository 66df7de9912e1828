//! A component that reads values and secrets from `wasi:config/store` and returns them, or
//! sends them in a request through `wasi:http`, so that tests can check that the host
//! withholds the secrets from every observation and every log line.

#![allow(unsafe_code)] // The generated import and export glue is unsafe.

mod bindings {
    #![allow(missing_docs, unreachable_pub, clippy::all)]
    wit_bindgen::generate!({
        world: "config-reader",
        path: "wit",
        generate_all,
    });
}

use bindings::wasi::config::store;

struct ConfigReader;

/// The store's error as text.
fn describe(e: store::Error) -> String {
    match e {
        store::Error::Upstream(m) => format!("upstream: {m}"),
        store::Error::Io(m) => format!("io: {m}"),
    }
}

impl bindings::Guest for ConfigReader {
    fn get(key: String) -> Result<String, String> {
        match store::get(&key).map_err(describe)? {
            Some(value) => Ok(value),
            None => Err(format!("{key} is not set")),
        }
    }

    fn echo_all() -> Vec<bindings::Entry> {
        let mut all = store::get_all().unwrap_or_default();
        all.sort();
        all.into_iter()
            .map(|(key, value)| bindings::Entry { key, value })
            .collect()
    }

    fn crash_after_stderr(key: String, before: u32, after: u32) {
        Self::crash(&key, before, after)
    }

    fn fail_with(key: String) -> Result<String, String> {
        let value = Self::get(key.clone())?;
        Err(format!("cannot use {key}={value}"))
    }

    fn send_with(key: String, url: String, method: String) -> Result<String, String> {
        let value = Self::get(key)?;
        send(&url.replace("{}", &value), &method.replace("{}", &value))
    }
}

/// Sends `method url` (`http://authority/path`) and returns its status as text.
#[cfg(target_os = "wasi")]
fn send(url: &str, method: &str) -> Result<String, String> {
    use wasip2::http::outgoing_handler;
    use wasip2::http::types::{Fields, Method, OutgoingRequest, Scheme};

    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("not an http:// URL: {url}"))?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let request = OutgoingRequest::new(Fields::new());
    request
        .set_method(&Method::Other(method.to_string()))
        .map_err(|()| "bad method")?;
    request
        .set_scheme(Some(&Scheme::Http))
        .map_err(|()| "bad scheme")?;
    request
        .set_authority(Some(authority))
        .map_err(|()| "bad authority")?;
    request
        .set_path_with_query(Some(if path.is_empty() { "/" } else { path }))
        .map_err(|()| "bad path")?;
    let future = outgoing_handler::handle(request, None).map_err(|e| format!("{e:?}"))?;
    future.subscribe().block();
    let response = future
        .get()
        .ok_or("no response after the pollable was ready")?
        .map_err(|()| "the response was taken twice")?
        .map_err(|e| format!("{e:?}"))?;
    Ok(format!("status {}", response.status()))
}

#[cfg(not(target_os = "wasi"))]
fn send(url: &str, _method: &str) -> Result<String, String> {
    Err(format!(
        "{url}: wasi:http exists only in the wasm32-wasip2 build"
    ))
}

/// Writes `text` to stderr whole.
fn write_stderr(text: &[u8]) {
    use std::io::Write;
    let mut stderr = std::io::stderr();
    // The host keeps what it is given; a refused write would end the test's point anyway.
    let _ = stderr.write_all(text);
    let _ = stderr.flush();
}

impl ConfigReader {
    fn crash(key: &str, before: u32, after: u32) -> ! {
        let value = store::get(key).ok().flatten().unwrap_or_default();
        write_stderr(&vec![b'\n'; before as usize]);
        write_stderr(value.as_bytes());
        write_stderr(&vec![b'\n'; after as usize]);
        std::process::abort()
    }
}

bindings::export!(ConfigReader with_types_in bindings);
