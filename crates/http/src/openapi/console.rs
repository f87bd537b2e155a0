//! The web console's two routes (`crate::console`): not API, but served by the route table
//! like every route, so documented like every route (the CI check holds for them too).

use axum::http::Method;
use serde_json::{json, Value};

use super::schemas::string;
use super::Entry;

pub(super) const TAGS: &[(&str, &str)] = &[(
    "console",
    "The web console, embedded in the binary: public files; the API calls the page makes carry the user's token.",
)];

fn file(content: &str, description: &str) -> Value {
    json!({
        "description": description,
        "headers": { "x-request-id": { "$ref": "#/components/headers/RequestId" } },
        "content": { content: { "schema": string() } },
    })
}

pub(super) fn entries() -> Vec<Entry> {
    vec![
        Entry::new("console", Method::GET, "/", "The web console's page")
            .about(r#"
A Regent extension: the console's `index.html`, which loads its script and style from `/assets/`. `Cache-Control: no-cache` with an `ETag` (304 to a matching `If-None-Match`), brotli or gzip by `Accept-Encoding`, and a Content-Security-Policy that lets the page talk to this broker only. With authentication on, the page asks for a token, keeps it in the tab's `sessionStorage` and sends it as a bearer on every API call. Queen serves its own dashboard at `/` too.
"#)
            .reply_raw(200, file("text/html", "The page."))
            .reply_raw(304, json!({ "description": "The client's copy (its `If-None-Match`) is current." })),
        Entry::new("console", Method::GET, "/assets/{*file}", "A file of the web console")
            .about(r#"
A Regent extension: a script or style of the console's bundle, named by its content hash, so `Cache-Control: public, max-age=31536000, immutable`; brotli or gzip by `Accept-Encoding`. A name the bundle does not hold is 404 `Not found`.
"#)
            .reply_raw(200, file("text/javascript", "The file, typed by its extension (`text/javascript`, `text/css`, …)."))
            .reply_raw(304, json!({ "description": "The client's copy (its `If-None-Match`) is current." }))
            .fails(404, "`Not found`"),
    ]
}
