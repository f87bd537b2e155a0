//! The web console (issue 14): the bundle built from `console/` and committed in
//! `console/dist/`, embedded in the binary at compile time, so the broker serves it with no
//! file beside it and a fresh clone builds without Node. `/` answers `index.html`,
//! `/assets/{*file}` the hashed files it loads; both are public routes of the table (the
//! page holds no tenant's data: its API calls carry the user's token).
//!
//! Caching: an asset's name carries its content hash, so it is cached for a year as
//! immutable; `index.html` names the current assets and is revalidated on every load
//! (`no-cache`, with an ETag). Compression is done at build time (`console/scripts/
//! compress.js` writes `file.br` and `file.gz`): the encoding the client accepts is picked
//! here, nothing is compressed per request.
//!
//! A rebuilt bundle always changes `index.html` (it names the new hashes), which is
//! embedded with `include_bytes!`, so cargo recompiles this crate and the derive walks the
//! folder afresh: new asset names are never missed.

use std::borrow::Cow;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use rust_embed::Embed;
use serde_json::json;

use super::error::ApiError;
use super::openapi::{Doc, Tag};
use super::routes::{route, Entry, Level::Public};

#[derive(Embed)]
#[folder = "../../console/dist/"]
struct Bundle;

const IMMUTABLE: &str = "public, max-age=31536000, immutable";
/// Scripts, styles and connections from the broker itself only: a token pasted into the
/// console can only be sent where the console's own code sends it. Inline styles are
/// allowed because uPlot positions its elements with them.
const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; \
                   frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

const TAG: Tag = (
    "console",
    "The web console, embedded in the binary: public files; the API calls the page makes carry the user's token.",
);

pub(crate) fn routes() -> Vec<Entry> {
    // Not JSON (the page, its assets, a 304): the typed responses of `openapi::object` are
    // JSON's, so these are written out.
    let file = |content: &str, description: &str| {
        json!({
            "description": description,
            "headers": { "x-request-id": { "$ref": "#/components/headers/RequestId" } },
            "content": { content: { "schema": { "type": "string" } } },
        })
    };
    let current = json!({ "description": "The client's copy (its `If-None-Match`) is current." });
    vec![
        route(Method::GET, "/", Public, index).reads_nothing().doc(
            Doc::op(TAG, "The web console's page")
                .reply_raw(200, file("text/html", "The page."))
                .reply_raw(304, current.clone()),
        ),
        route(Method::GET, "/assets/{*file}", Public, asset)
            .doc(
                Doc::op(TAG, "A file of the web console")
                    .reply_raw(
                        200,
                        file(
                            "text/javascript",
                            "The file, typed by its extension (`text/javascript`, `text/css`, …).",
                        ),
                    )
                    .reply_raw(304, current)
                    .fails(404, "`Not found`"),
            )
            // No state needed: the real handler, seeded with the embedded assets' names.
            .reads_request(
                &asset_names()
                    .iter()
                    .map(|a| a.trim_start_matches("assets/"))
                    .collect::<Vec<_>>(),
                asset,
            ),
    ]
}

/// `GET /`: the console's page.
async fn index(headers: HeaderMap) -> Response {
    serve("index.html", &headers)
}

/// `GET /assets/{*file}`: a file the page loads. The raw path is used (asset names are
/// plain ASCII), so no percent-decoding can reach outside `assets/`: the lookup is in the
/// embedded table, never on disk.
async fn asset(uri: Uri, headers: HeaderMap) -> Response {
    let name = uri.path().trim_start_matches('/');
    serve(name, &headers)
}

/// The embedded assets' names (`assets/…`), without their precompressed copies.
pub fn asset_names() -> Vec<String> {
    Bundle::iter()
        .filter(|n| n.starts_with("assets/") && encoded(n).is_none())
        .map(Cow::into_owned)
        .collect()
}

fn serve(name: &str, headers: &HeaderMap) -> Response {
    // The precompressed copies are served only as an encoding of their file.
    let found = encoded(name).is_none().then(|| Bundle::get(name)).flatten();
    let Some(file) = found else {
        return ApiError::NotFound("Not found".into()).into_response();
    };
    let etag = etag(&file.metadata.sha256_hash());
    let cache = if name.starts_with("assets/") {
        IMMUTABLE
    } else {
        "no-cache"
    };
    let mut res = if fresh(headers, &etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let (data, coding) = pick(name, headers).unwrap_or((file.data, None));
        let mut res = Body::from(bytes(data)).into_response();
        let h = res.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(content_type(name)),
        );
        if let Some(coding) = coding {
            h.insert(header::CONTENT_ENCODING, HeaderValue::from_static(coding));
        }
        if name == "index.html" {
            h.insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CSP),
            );
        }
        res
    };
    let h = res.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    res
}

/// The best precompressed copy the client accepts: brotli, then gzip.
fn pick(name: &str, headers: &HeaderMap) -> Option<(Cow<'static, [u8]>, Option<&'static str>)> {
    [("br", "br"), ("gz", "gzip")]
        .into_iter()
        .filter(|(_, coding)| accepts(headers, coding))
        .find_map(|(ext, coding)| {
            Bundle::get(&format!("{name}.{ext}")).map(|f| (f.data, Some(coding)))
        })
}

/// Whether `Accept-Encoding` names the coding (or `*`) without `q=0`.
fn accepts(headers: &HeaderMap, coding: &str) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|item| {
            let mut parts = item.split(';');
            let name = parts.next().unwrap_or("").trim();
            let refused = parts.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q == 0.0)
            });
            (name.eq_ignore_ascii_case(coding) || name == "*") && !refused
        })
}

/// The encoding a precompressed copy's name ends with, if it is one.
fn encoded(name: &str) -> Option<&'static str> {
    if name.ends_with(".br") {
        Some("br")
    } else if name.ends_with(".gz") {
        Some("gzip")
    } else {
        None
    }
}

/// The client's copy is current (`If-None-Match` names this ETag, or `*`).
fn fresh(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == etag || t == "*")
}

/// A strong ETag from the file's hash (the first 16 bytes are plenty to tell versions apart).
fn etag(hash: &[u8; 32]) -> String {
    let hex: String = hash[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

fn bytes(data: Cow<'static, [u8]>) -> Bytes {
    match data {
        Cow::Borrowed(b) => Bytes::from_static(b),
        Cow::Owned(v) => Bytes::from(v),
    }
}

/// The types a Vite bundle holds; anything else is served as bytes.
fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next().unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "json" | "map" => "application/json",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(name: header::HeaderName, value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(name, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn the_bundle_holds_the_page_every_asset_it_names_and_their_compressed_copies() {
        let page = Bundle::get("index.html").expect("console/dist/index.html is embedded");
        let page = String::from_utf8(page.data.into_owned()).unwrap();
        let named: Vec<&str> = page
            .split('"')
            .filter(|s| s.starts_with("/assets/"))
            .collect();
        assert!(!named.is_empty(), "index.html names its script: {page}");
        for n in named {
            assert!(
                Bundle::get(&n[1..]).is_some(),
                "{n} is named by index.html but not in dist/"
            );
        }
        for n in asset_names().into_iter().chain(["index.html".to_string()]) {
            for ext in ["br", "gz"] {
                assert!(
                    Bundle::get(&format!("{n}.{ext}")).is_some(),
                    "{n}.{ext}: run npm run build"
                );
            }
        }
    }

    #[test]
    fn accept_encoding_is_read_with_its_quality_values() {
        let h = |v| with(header::ACCEPT_ENCODING, v);
        assert!(accepts(&h("gzip, deflate, br, zstd"), "br"));
        assert!(accepts(&h("GZIP"), "gzip"));
        assert!(!accepts(&h("gzip"), "br"));
        assert!(!accepts(&h("br;q=0, gzip"), "br"));
        assert!(accepts(&h("br;q=0.5"), "br"));
        assert!(accepts(&h("*"), "gzip"));
        assert!(!accepts(&HeaderMap::new(), "gzip"));
    }

    #[test]
    fn if_none_match_compares_etags_strong_or_weak() {
        let h = |v| with(header::IF_NONE_MATCH, v);
        assert!(fresh(&h("\"ab\""), "\"ab\""));
        assert!(fresh(&h("W/\"ab\", \"cd\""), "\"ab\""));
        assert!(fresh(&h("*"), "\"ab\""));
        assert!(!fresh(&h("\"cd\""), "\"ab\""));
    }

    #[test]
    fn content_types_by_extension() {
        assert_eq!(content_type("index.html"), "text/html; charset=utf-8");
        assert_eq!(
            content_type("assets/index-x.js"),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(
            content_type("assets/style-x.css"),
            "text/css; charset=utf-8"
        );
        assert_eq!(content_type("assets/blob"), "application/octet-stream");
    }
}
