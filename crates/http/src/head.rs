//! Limits on a request's head, checked before anything reads its body: a `Content-Length`
//! over `MAX_BODY_BYTES` is refused at once (413) instead of after the limit's worth has
//! been read, and headers too large or too many get a JSON 431. hyper's own limits sit far
//! above these (`src/connections.rs`), so only a head no client sends meets hyper's empty
//! 431.
//!
//! A request with a large body waits for one of `MAX_LARGE_REQUESTS` turns before its body
//! is read: serving a push costs several times its body (the items, their frames, the
//! answer), so without turns a burst of maximum-size pushes takes memory in proportion to
//! how many arrive at once. Small requests never wait.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use futures::StreamExt;

use super::error::ApiError;
use super::AppState;

/// The most header bytes (names and values) a request may carry: a JWT, cookies a proxy
/// adds and tracing headers fit many times over.
pub const MAX_HEADER_BYTES: usize = 128 * 1024;
/// The most header fields a request may carry.
pub const MAX_HEADERS: usize = 100;
/// A body over this (or of unknown length) waits for a turn. A 1 MiB push is about 10,000
/// items: larger than what producers send request by request.
pub const LARGE_BODY_BYTES: u64 = 1024 * 1024;
/// What a large request refused a turn is told: turns come round as fast as a push of that
/// size is served.
const TURN_RETRY: Duration = Duration::from_secs(1);

pub async fn limit(State(s): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let bytes: usize = headers
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len())
        .sum();
    if headers.len() > MAX_HEADERS || bytes > MAX_HEADER_BYTES {
        return ApiError::HeadersTooLarge.into_response();
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > s.config.max_body_bytes as u64) {
        return ApiError::PayloadTooLarge.into_response();
    }
    if !is_large(headers, declared) {
        return next.run(req).await;
    }
    let wait = Duration::from_millis(s.config.large_request_wait_ms);
    let turn = match tokio::time::timeout(wait, s.large_requests.clone().acquire_owned()).await {
        Ok(Ok(turn)) => turn,
        _ => {
            return ApiError::Unavailable {
                text: "Server busy: too many large requests at once".into(),
                retry_after: TURN_RETRY,
            }
            .into_response()
        }
    };
    // The turn is held until the answer has been sent: a large answer is streamed, and what
    // it is rendered from lives until then.
    let (parts, body) = next.run(req).await.into_parts();
    let body = Body::from_stream(body.into_data_stream().inspect(move |_| {
        let _ = &turn;
    }));
    Response::from_parts(parts, body)
}

/// A body over [`LARGE_BODY_BYTES`], or a chunked one, whose length nothing bounds but
/// `MAX_BODY_BYTES`.
fn is_large(headers: &HeaderMap, declared: Option<u64>) -> bool {
    match declared {
        Some(n) => n > LARGE_BODY_BYTES,
        None => headers.contains_key(header::TRANSFER_ENCODING),
    }
}
