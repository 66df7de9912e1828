//! The console's assets over plain HTTP (no browser): served without the token, under the
//! strict Content-Security-Policy, versioned and cached with an ETag, small; the API beside
//! them still needs the token.

use reqwest::blocking::Response;
use reqwest::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH};

use super::server::Setup;

/// The Content-Security-Policy of every console response.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The console's size limit: the page and every file it names, together.
const MAX_BYTES: usize = 300 * 1000;

/// Header `name` of `response`, which must be there.
fn header<'a>(response: &'a Response, name: &str) -> &'a str {
    response
        .headers()
        .get(name)
        .unwrap_or_else(|| panic!("no {name} in {:?}", response.headers()))
        .to_str()
        .unwrap()
}

/// The security headers every console response carries.
fn assert_secured(response: &Response) {
    assert_eq!(header(response, "content-security-policy"), CSP);
    assert_eq!(header(response, "x-content-type-options"), "nosniff");
    assert_eq!(header(response, "referrer-policy"), "no-referrer");
}

/// The path of asset `name` in `html`: `/console/<version>/<name>`, from a `src` or `href`.
fn asset_path<'a>(html: &'a str, name: &str) -> &'a str {
    let end = html
        .find(&format!("/{name}\""))
        .unwrap_or_else(|| panic!("{name} in {html}"))
        + name.len()
        + 1;
    let start = html[..end].rfind('"').unwrap() + 1;
    let path = &html[start..end];
    let version = path
        .strip_prefix("/console/")
        .and_then(|rest| rest.strip_suffix(&format!("/{name}")))
        .unwrap_or_else(|| panic!("{path}"));
    assert!(
        !version.is_empty() && version.chars().all(|c| c.is_ascii_hexdigit()),
        "a hex version in {path}"
    );
    path
}

#[test]
fn the_console_is_served_without_a_token_under_a_strict_policy() {
    let _serial = super::browser::serial();
    let serve = Setup::new().serve("", &[]);
    let get = |path: &str| serve.client.get(format!("{}{path}", serve.url));

    let index = get("/").send().unwrap();
    assert_eq!(index.status(), 200);
    assert!(
        header(&index, CONTENT_TYPE.as_str()).starts_with("text/html"),
        "{:?}",
        index.headers()
    );
    assert_secured(&index);
    assert_eq!(header(&index, CACHE_CONTROL.as_str()), "no-cache");
    let index_etag = header(&index, ETAG.as_str()).to_string();
    let html = index.text().unwrap();
    assert!(!html.contains("{{VERSION}}"), "{html}");
    let again = get("/").header(IF_NONE_MATCH, &index_etag).send().unwrap();
    assert_eq!(again.status(), 304);

    // Every file the page names (its script's modules preloaded, the styles, the icon).
    let mut names: Vec<&str> = html
        .split('"')
        .filter_map(|s| s.strip_prefix("/console/"))
        .filter_map(|rest| rest.split_once('/').map(|(_, name)| name))
        .collect();
    names.sort_unstable();
    names.dedup();
    for wanted in ["app.js", "app.css", "icon.svg"] {
        assert!(names.contains(&wanted), "{wanted} in {names:?}");
    }
    let mut total = html.len();
    for name in &names {
        let kind = match name.rsplit_once('.').map(|(_, ext)| ext) {
            Some("js") => "text/javascript",
            Some("css") => "text/css",
            Some("svg") => "image/svg+xml",
            other => panic!("an asset of an unexpected kind: {name} ({other:?})"),
        };
        let path = asset_path(&html, name);
        let asset = get(path).send().unwrap();
        assert_eq!(asset.status(), 200, "{path}");
        assert!(
            header(&asset, CONTENT_TYPE.as_str()).contains(kind),
            "{path}"
        );
        assert_secured(&asset);
        assert_eq!(
            header(&asset, CACHE_CONTROL.as_str()),
            "public, max-age=31536000, immutable",
            "{path}"
        );
        let etag = header(&asset, ETAG.as_str()).to_string();
        total += asset.bytes().unwrap().len();
        let again = get(path).header(IF_NONE_MATCH, &etag).send().unwrap();
        assert_eq!(again.status(), 304, "{path}");
        assert_eq!(header(&again, ETAG.as_str()), etag, "{path}");
    }
    assert!(total <= MAX_BYTES, "the console is {total} bytes");
    #[allow(clippy::print_stderr)]
    {
        eprintln!(
            "the console: {total} bytes in {} files and the page",
            names.len()
        );
    }

    // The API beside it needs the token.
    let sessions = get("/sessions").send().unwrap();
    assert_eq!(sessions.status(), 401);
    let error: serde_json::Value = sessions.json().unwrap();
    assert!(error["error"].is_string(), "{error}");
    let sessions = get("/sessions")
        .bearer_auth(super::server::TOKEN)
        .send()
        .unwrap();
    assert_eq!(sessions.status(), 200);
}
