//! `summarize`: GET a URL through `wasi:http` and describe the JSON it returns (status,
//! content type, size, JSON type, top-level keys, a preview). The host decides which hosts
//! it reaches: the tool's `http` policy.

#![allow(unsafe_code)] // The generated export glue is unsafe.

mod bindings {
    #![allow(missing_docs, unreachable_pub, clippy::all)]
    wit_bindgen::generate!({ world: "json-summary", path: "wit" });
}

use bindings::{SummarizeRequest, Summary};
use serde_json::Value;

/// Characters of the body kept in `preview`.
const PREVIEW_CHARS: usize = 200;

/// Keys listed when the request does not say.
const DEFAULT_MAX_KEYS: u32 = 20;

struct JsonSummary;

impl bindings::Guest for JsonSummary {
    fn summarize(request: SummarizeRequest) -> Result<Summary, String> {
        let (status, content_type, body) = get(&request.url)?;
        Ok(summarize(
            status,
            content_type,
            &body,
            request.max_keys.unwrap_or(DEFAULT_MAX_KEYS),
        ))
    }
}

bindings::export!(JsonSummary with_types_in bindings);

/// Describes `body`.
fn summarize(status: u16, content_type: Option<String>, body: &[u8], max_keys: u32) -> Summary {
    let text = String::from_utf8_lossy(body);
    let (json_type, keys, length) = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => {
            let keys = map.keys().take(max_keys as usize).cloned().collect();
            ("object", keys, Some(map.len() as u64))
        }
        Ok(Value::Array(items)) => ("array", Vec::new(), Some(items.len() as u64)),
        Ok(Value::String(_)) => ("string", Vec::new(), None),
        Ok(Value::Number(_)) => ("number", Vec::new(), None),
        Ok(Value::Bool(_)) => ("boolean", Vec::new(), None),
        Ok(Value::Null) => ("null", Vec::new(), None),
        Err(_) => ("not-json", Vec::new(), None),
    };
    Summary {
        status,
        content_type,
        bytes: body.len() as u64,
        json_type: json_type.to_string(),
        keys,
        length,
        preview: text.chars().take(PREVIEW_CHARS).collect(),
    }
}

/// GETs `url`: (status, content type, body).
#[cfg(target_os = "wasi")]
fn get(url: &str) -> Result<(u16, Option<String>, Vec<u8>), String> {
    use wasip2::http::outgoing_handler;
    use wasip2::http::types::{Fields, IncomingBody, OutgoingRequest, Scheme};
    use wasip2::io::streams::StreamError;

    let (scheme, rest) = if let Some(r) = url.strip_prefix("https://") {
        (Scheme::Https, r)
    } else if let Some(r) = url.strip_prefix("http://") {
        (Scheme::Http, r)
    } else {
        return Err(format!("{url:?} is not an http:// or https:// URL"));
    };
    let (authority, path) = rest.find('/').map_or((rest, "/"), |i| rest.split_at(i));
    let headers = Fields::new();
    headers
        .append("accept", b"application/json")
        .map_err(|e| format!("{e:?}"))?;
    let request = OutgoingRequest::new(headers);
    request
        .set_scheme(Some(&scheme))
        .map_err(|()| "bad scheme")?;
    request
        .set_authority(Some(authority))
        .map_err(|()| format!("bad host {authority:?}"))?;
    request
        .set_path_with_query(Some(path))
        .map_err(|()| format!("bad path {path:?}"))?;
    let pending = outgoing_handler::handle(request, None)
        .map_err(|e| format!("the request failed: {e:?}"))?;
    pending.subscribe().block();
    let response = pending
        .get()
        .ok_or("no response")?
        .map_err(|()| "no response")?
        .map_err(|e| format!("the request failed: {e:?}"))?;
    let content_type = response
        .headers()
        .get("content-type")
        .first()
        .map(|v| String::from_utf8_lossy(v).into_owned());
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
    Ok((status, content_type, bytes))
}

#[cfg(not(target_os = "wasi"))]
fn get(url: &str) -> Result<(u16, Option<String>, Vec<u8>), String> {
    Err(format!(
        "{url}: wasi:http exists only in the wasm32-wasip2 build"
    ))
}
