//! Limits on a request's head, checked before anything reads its body: a `Content-Length`
//! over `MAX_BODY_BYTES` is refused at once (413) instead of after the limit's worth has
//! been read, and headers too large or too many get a JSON 431. hyper's own limits sit far
//! above these (`src/connections.rs`), so only a head no client sends meets hyper's empty
//! 431.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::AppState;

/// The most header bytes (names and values) a request may carry: a JWT, cookies a proxy
/// adds and tracing headers fit many times over.
pub const MAX_HEADER_BYTES: usize = 128 * 1024;
/// The most header fields a request may carry.
pub const MAX_HEADERS: usize = 100;

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
    next.run(req).await
}
