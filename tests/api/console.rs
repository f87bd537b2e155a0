//! The web console's files as the broker serves them (`regent_http::console`): the page and
//! its assets from the embedded bundle, typed, cached (immutable assets, a revalidated page),
//! precompressed by `Accept-Encoding`, and public with authentication on while the API the
//! page calls is not. The page itself is driven in Chromium by `console/test/browser.js`.

use regent::http::console::asset_names;
use reqwest::header::{
    ACCEPT_ENCODING, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE, ETAG, IF_NONE_MATCH, VARY,
};
use reqwest::StatusCode;

use crate::support::{authed_broker, broker};

fn script() -> String {
    asset_names()
        .into_iter()
        .find(|n| n.ends_with(".js"))
        .expect("the bundle has a script")
}

#[tokio::test]
async fn the_page_and_its_assets_are_served_typed_cached_and_compressed() {
    let b = broker().await;
    let get = |path: &str, coding: Option<&str>| {
        let mut req = b.http.get(format!("{}{path}", b.url));
        if let Some(c) = coding {
            req = req.header(ACCEPT_ENCODING, c);
        }
        req.send()
    };

    let page = get("/", None).await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(page.headers()[CONTENT_TYPE], "text/html; charset=utf-8");
    assert_eq!(page.headers()[CACHE_CONTROL], "no-cache");
    assert_eq!(page.headers()[VARY], "Accept-Encoding");
    assert!(page.headers().get(CONTENT_ENCODING).is_none());
    let etag = page.headers()[ETAG].clone();
    let html = page.text().await.unwrap();
    assert!(html.contains(r#"<div id="app">"#), "{html}");
    let js = script();
    assert!(html.contains(&format!("/{js}")), "index.html names {js}");

    // The page is revalidated: the same ETag is a 304 with no body.
    let again = b
        .http
        .get(format!("{}/", b.url))
        .header(IF_NONE_MATCH, etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    assert!(again.bytes().await.unwrap().is_empty());

    let plain = get(&format!("/{js}"), None).await.unwrap();
    assert_eq!(plain.status(), StatusCode::OK);
    assert_eq!(
        plain.headers()[CONTENT_TYPE],
        "text/javascript; charset=utf-8"
    );
    assert_eq!(
        plain.headers()[CACHE_CONTROL],
        "public, max-age=31536000, immutable"
    );
    let plain = plain.bytes().await.unwrap();
    for (accept, coding) in [("gzip, deflate, br", "br"), ("gzip", "gzip")] {
        let res = get(&format!("/{js}"), Some(accept)).await.unwrap();
        assert_eq!(res.headers()[CONTENT_ENCODING], coding, "{accept}");
        let body = res.bytes().await.unwrap();
        assert!(
            body.len() < plain.len() / 2,
            "{coding}: {} bytes",
            body.len()
        );
    }
    // Refused with q=0: the plain file.
    let res = get(&format!("/{js}"), Some("br;q=0, gzip;q=0"))
        .await
        .unwrap();
    assert!(res.headers().get(CONTENT_ENCODING).is_none());

    // Not in the bundle, or a precompressed copy asked for by name: the API's 404.
    for path in [
        "/assets/nope.js",
        &format!("/{js}.gz"),
        "/assets/../index.html",
    ] {
        let res = get(path, None).await.unwrap();
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{path}");
    }
}

#[tokio::test]
async fn with_authentication_on_the_console_is_public_and_the_api_it_calls_is_not() {
    let b = authed_broker().await;
    for path in ["/".to_string(), format!("/{}", script())] {
        let res = b.http.get(format!("{}{path}", b.url)).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{path}");
    }
    let res = b
        .http
        .get(format!("{}/api/v1/resources/overview", b.url))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
}
