//! One error type for every route, mapped to a status code and Queen's `{"error": "..."}`
//! envelope. Client mistakes are 4xx with the spec's text; 5xx is kept for failures that are
//! safe for the client to retry (it retries 5xx, even for POSTs).

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    NotFound(String),
    #[error("request body too large")]
    PayloadTooLarge,
    /// The database could not be reached or did not commit; nothing was acknowledged.
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    Internal(String),
    /// Over a tenant limit: 429 with `Retry-After` and the proxy-style `code` the Python
    /// client surfaces (`rate_limited`, `quota_exceeded`).
    #[error("{text}")]
    TooManyRequests {
        text: String,
        code: &'static str,
        retry_after_secs: u64,
    },
}

impl ApiError {
    pub fn bad_request(msg: impl Into<String>) -> ApiError {
        ApiError::BadRequest(msg.into())
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        if e.is_client_error() {
            ApiError::BadRequest(e.to_string())
        } else if e.is_unavailable() {
            ApiError::Unavailable(format!("database unavailable: {e}"))
        } else {
            tracing::error!(error = %e, "store error");
            ApiError::Internal(e.to_string())
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = match &self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::TooManyRequests {
                text,
                code,
                retry_after_secs,
            } => {
                let body = json!({ "error": text, "code": code, "retryAfter": retry_after_secs });
                let retry = [(header::RETRY_AFTER, retry_after_secs.to_string())];
                return (StatusCode::TOO_MANY_REQUESTS, retry, Json(body)).into_response();
            }
        };
        (status, Json(json!({ "error": self.to_string() }))).into_response()
    }
}
