//! The route targets: a route's path segments and query string go through axum's own
//! matching and percent-decoding and the route's real extractors (`PathParams`, `Params`),
//! then the reading its handler does before the service call (`Entry::reads_request`). One
//! router holds them all, so a segment that names another route
//! (`/consumer-groups/lagging`) is routed there, as it would be.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request, Uri};
use axum::Router;
use futures::executor::block_on;
use tower::ServiceExt;

use super::{Input, Outcome, Target};

/// One target per route that reads its path or query, all through one router.
pub(super) fn targets() -> Vec<Target> {
    let table = crate::routes::table();
    let mut router = Router::new();
    let mut readers = Vec::new();
    for e in table {
        let Some(r) = e.reads.request else { continue };
        router = router.route(e.path, r.reader);
        let keys = e.doc.as_ref().map(|d| d.query_names()).unwrap_or_default();
        readers.push((e.method, e.path, keys, r.seeds));
    }
    let router = Arc::new(router);
    readers
        .into_iter()
        .map(|(method, path, keys, seeds)| {
            let router = router.clone();
            let m = method.clone();
            Target {
                name: format!("{method} {path} (path, query)"),
                input: Input::Route {
                    params: params(path),
                },
                keys,
                seeds,
                routes: vec![(method, path)],
                run: Box::new(move |input| call(&router, &m, path, input)),
            }
        })
        .collect()
}

fn params(template: &str) -> usize {
    template.split('/').filter(|s| s.starts_with('{')).count()
}

/// One request through the router: 2xx and 3xx are accepted, 4xx refused, 5xx a defect.
fn call(router: &Router, method: &Method, template: &str, input: &[u8]) -> Outcome {
    let Ok(uri) = Uri::try_from(uri(template, input)) else {
        return Outcome::NotARequest;
    };
    let request = Request::builder()
        .method(method.clone())
        .uri(uri)
        .body(Body::empty())
        .expect("a request of a valid URI");
    let response = block_on(router.clone().oneshot(request)).expect("the router is infallible");
    let status = response.status();
    assert!(
        !status.is_server_error(),
        "answered {status} to client input"
    );
    if status.is_client_error() {
        Outcome::Refused(status)
    } else {
        Outcome::Accepted
    }
}

/// The template with its parameters replaced by the input's segments, in order (the last
/// takes the rest, slashes and all), then the input's query string.
pub fn uri(template: &str, input: &[u8]) -> Vec<u8> {
    let (path, query) = match input.iter().position(|&b| b == b'?') {
        Some(i) => (&input[..i], Some(&input[i + 1..])),
        None => (input, None),
    };
    let mut segments = path.splitn(params(template).max(1), |&b| b == b'/');
    let mut out = Vec::with_capacity(template.len() + input.len() + 1);
    for part in template.split('/').skip(1) {
        out.push(b'/');
        if part.starts_with('{') {
            out.extend_from_slice(segments.next().unwrap_or_default());
        } else {
            out.extend_from_slice(part.as_bytes());
        }
    }
    if let Some(q) = query {
        out.push(b'?');
        out.extend_from_slice(q);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::uri;

    #[test]
    fn segments_fill_the_template_in_order() {
        let t = "/api/v1/messages/{partition_id}/{transaction_id}";
        assert_eq!(uri(t, b"p/t?x=1"), b"/api/v1/messages/p/t?x=1");
        assert_eq!(uri(t, b"p/t/u"), b"/api/v1/messages/p/t/u");
        assert_eq!(uri(t, b"p"), b"/api/v1/messages/p/");
        assert_eq!(uri("/api/v1/pop", b"?a=b"), b"/api/v1/pop?a=b");
        assert_eq!(uri("/", b"x?"), b"/?");
    }
}
