//! The operator console: a page, its script (a few ES modules, app.js the entry), its styles and
//! an icon (`host/sluice-server/console/`), embedded in the binary and served by `sluice serve`
//! at `/` and `/console/{version}/{file}` (docs/console.md).
//!
//! - **No token for the assets.** They hold no data, so a `GET` (or `HEAD`) of `/` or
//!   `/console/…` passes the guard once its `Host` is allowed ([`is_public`]); everything the
//!   page shows comes from the API, which asks for the token as always. Such a request does not
//!   count its connection as authenticated ([`crate::listen`]).
//! - **Versioned and cached.** `{version}` is the first 16 hex digits of the SHA-256 of every
//!   asset; the page names its files under it (the `{{VERSION}}` placeholders of index.html),
//!   so a file is cached for a year (`immutable`) and a new build is a new URL. The page
//!   itself is `no-cache`. Every answer has an `ETag`; `If-None-Match` with it answers 304.
//! - **A strict policy.** Every answer carries [`CONTENT_SECURITY_POLICY`] (scripts, styles,
//!   images and connections from this origin only; no inline script or style, no framing),
//!   `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`.

use std::sync::LazyLock;

use axum::Router;
use axum::body::Bytes;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sha2::{Digest, Sha256};

use crate::error::ApiError;

/// The `Content-Security-Policy` of every console answer.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The page, with `{{VERSION}}` where the files' version goes.
const PAGE: &str = include_str!("../console/index.html");

/// The files under `/console/{version}/`: name, media type, contents. A new module goes here
/// and in a `modulepreload` link of index.html.
const FILES: [(&str, &str, &str); 11] = [
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("../console/app.js"),
    ),
    (
        "dom.js",
        "text/javascript; charset=utf-8",
        include_str!("../console/dom.js"),
    ),
    (
        "view.js",
        "text/javascript; charset=utf-8",
        include_str!("../console/view.js"),
    ),
    (
        "api.js",
        "text/javascript; charset=utf-8",
        include_str!("../console/api.js"),
    ),
    (
        "sessions.js",
        "text/javascript; charset=utf-8",
        include_str!("../console/sessions.js"),
    ),
    (
        "transcript.js",
        "text/javascript; charset=utf-8",
        include_str!("../console/transcript.js"),
    ),
    (
        "live.js",
        "text/javascript; charset=utf-8",
        include_str!("../console/live.js"),
    ),
    (
        "operate.js",
        "text/javascript; charset=utf-8",
        include_str!("../console/operate.js"),
    ),
    (
        "setup.js",
        "text/javascript; charset=utf-8",
        include_str!("../console/setup.js"),
    ),
    (
        "app.css",
        "text/css; charset=utf-8",
        include_str!("../console/app.css"),
    ),
    (
        "icon.svg",
        "image/svg+xml",
        include_str!("../console/icon.svg"),
    ),
];

/// True for a request the console answers without a token: `GET` or `HEAD` of `/` or of a
/// path under `/console/`.
pub(crate) fn is_public(method: &Method, path: &str) -> bool {
    (method == Method::GET || method == Method::HEAD)
        && (path == "/" || path.starts_with("/console/"))
}

/// The console's routes (for [`crate::Server::router`], behind the guard).
/// Every answer of theirs (a 404 or 405 too) carries the security headers ([`secured`]).
pub(crate) fn router() -> Router {
    Router::new()
        .route("/", get(page).fallback(wrong_method))
        .route(
            "/console/{version}/{file}",
            get(file).fallback(wrong_method),
        )
        .layer(axum::middleware::map_response(secured))
}

/// 405 for a method other than `GET` or `HEAD`, as JSON like every API error.
async fn wrong_method(method: Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!(
            "{} does not take {method}: the console's page and files answer GET and HEAD",
            uri.path()
        ),
    )
}

/// `response` with [`CONTENT_SECURITY_POLICY`], `X-Content-Type-Options: nosniff` and
/// `Referrer-Policy: no-referrer`.
async fn secured(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// One embedded answer.
struct Asset {
    media_type: &'static str,
    /// Shared, so an answer clones a pointer, not the file.
    body: Bytes,
    /// `"<16 hex digits of its SHA-256>"`.
    etag: HeaderValue,
}

impl Asset {
    fn new(media_type: &'static str, body: Bytes) -> Asset {
        let etag = HeaderValue::try_from(format!("\"{}\"", short_digest([&body[..]])))
            .unwrap_or(HeaderValue::from_static("\"0\""));
        Asset {
            media_type,
            body,
            etag,
        }
    }
}

/// The assets, put together on first use.
struct Assets {
    version: String,
    page: Asset,
    files: Vec<(&'static str, Asset)>,
}

static ASSETS: LazyLock<Assets> = LazyLock::new(|| {
    let version = short_digest(
        std::iter::once(PAGE)
            .chain(FILES.iter().map(|(_, _, contents)| *contents))
            .map(str::as_bytes),
    );
    Assets {
        page: Asset::new(
            "text/html; charset=utf-8",
            Bytes::from(PAGE.replace("{{VERSION}}", &version)),
        ),
        files: FILES
            .iter()
            .map(|(name, media_type, contents)| {
                (
                    *name,
                    Asset::new(media_type, Bytes::from_static(contents.as_bytes())),
                )
            })
            .collect(),
        version,
    }
});

/// The first 16 hex digits of the SHA-256 of `parts`, each followed by a NUL.
fn short_digest<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> String {
    let mut hash = Sha256::new();
    for part in parts {
        hash.update(part);
        hash.update([0]);
    }
    hash.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

async fn page(headers: HeaderMap) -> Response {
    answer(&ASSETS.page, &headers, "no-cache")
}

async fn file(Path((version, name)): Path<(String, String)>, headers: HeaderMap) -> Response {
    let assets = &*ASSETS;
    let found = assets.files.iter().find(|(n, _)| *n == name);
    match found {
        Some((_, asset)) if version == assets.version => {
            answer(asset, &headers, "public, max-age=31536000, immutable")
        }
        Some(_) => ApiError::not_found(format!(
            "console version {version:?} is not this server's ({}): the console was updated since the page was loaded; reload the page",
            assets.version
        ))
        .into_response(),
        None => ApiError::not_found(format!(
            "the console has no file {name:?}; its files are {}",
            assets
                .files
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .into_response(),
    }
}

/// `asset` with its headers, or 304 when `If-None-Match` names its ETag.
fn answer(asset: &Asset, request: &HeaderMap, cache_control: &'static str) -> Response {
    let etag = asset.etag.to_str().unwrap_or_default();
    let fresh = request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == etag || tag == "*");
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (
            [(header::CONTENT_TYPE, asset.media_type)],
            asset.body.clone(),
        )
            .into_response()
    };
    let headers = response.headers_mut();
    headers.insert(header::ETAG, asset.etag.clone());
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(cache_control),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_gets_of_the_console_are_public() {
        assert!(is_public(&Method::GET, "/"));
        assert!(is_public(&Method::HEAD, "/console/0123/app.js"));
        assert!(!is_public(&Method::POST, "/"));
        assert!(!is_public(&Method::GET, "/sessions"));
        assert!(!is_public(&Method::GET, "/consoles"));
        assert!(!is_public(&Method::GET, "/console"));
    }

    #[test]
    fn the_page_names_its_files_under_the_version() {
        let assets = &*ASSETS;
        assert_eq!(assets.version.len(), 16);
        let page = std::str::from_utf8(&assets.page.body).unwrap();
        assert!(!page.contains("{{VERSION}}"));
        for (name, _, _) in FILES {
            assert!(
                page.contains(&format!("/console/{}/{name}", assets.version)),
                "index.html names {name}"
            );
        }
    }

    #[test]
    fn every_module_a_script_imports_is_served() {
        for (name, media_type, contents) in FILES {
            if !media_type.starts_with("text/javascript") {
                continue;
            }
            for import in contents.split(" from \"./").skip(1) {
                let imported = &import[..import.find('"').unwrap()];
                assert!(
                    FILES.iter().any(|(n, _, _)| *n == imported),
                    "{name} imports ./{imported}, which is not in FILES"
                );
            }
        }
    }

    #[test]
    fn a_matching_etag_answers_304_with_the_etag() {
        let asset = &ASSETS.files[0].1;
        let mut request = HeaderMap::new();
        request.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_str(&format!("\"x\", {}", asset.etag.to_str().unwrap())).unwrap(),
        );
        let response = answer(asset, &request, "no-cache");
        assert_eq!(response.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(response.headers()[header::ETAG], asset.etag);
        assert_eq!(response.headers()[header::CACHE_CONTROL], "no-cache");
        let response = answer(asset, &HeaderMap::new(), "no-cache");
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()[header::ETAG], asset.etag);
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "text/javascript; charset=utf-8"
        );
    }
}
