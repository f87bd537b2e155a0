//! One error type for every answer the broker makes itself, mapped to a status code and
//! Queen's `{"error": "..."}` envelope. Client mistakes are 4xx with the spec's text; a 503
//! always says when to retry; a 500 of the broker's own fault carries a generic text and its
//! detail goes to the log (with the request's id), never to the client.

use std::time::Duration;

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Serialize;

use super::answer::Answer;
use regent_rules::limits::retry_after_secs;
use regent_service::{Error, Refusal};

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    /// No usable token: the text says what was wrong with it.
    #[error("{0}")]
    Unauthorized(String),
    /// A verified token that may not do this.
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    /// Valid, but refused by the tenant's state for now.
    #[error("{0}")]
    Conflict(String),
    #[error("Method not allowed")]
    MethodNotAllowed,
    #[error("request body too large")]
    PayloadTooLarge,
    /// A part of the request over its documented size: the text says which and the limit.
    #[error("{0}")]
    TooLarge(String),
    #[error("Request header fields too large")]
    HeadersTooLarge,
    /// More items in one request than `MAX_PUSH_ITEMS`.
    #[error("A request of {items} items is over the limit of {max} items (MAX_PUSH_ITEMS)")]
    TooManyItems { items: usize, max: usize },
    /// Over a tenant limit: 429 with `Retry-After` and the proxy-style `code` the Python
    /// client surfaces (`rate_limited`, `quota_exceeded`).
    #[error("{text}")]
    TooManyRequests {
        text: String,
        code: &'static str,
        retry_after_secs: u64,
    },
    /// Nothing was done; retry after `retry_after`.
    #[error("{text}")]
    Unavailable { text: String, retry_after: Duration },
    /// A refusal of the 1.x families with a machine code beside its text, `{"error": <text>,
    /// "code": <code>}` (spec §18): the client reads the code as its error's (`KvError.code`),
    /// and tells the ephemeral family's two 404s apart by it.
    #[error("{text}")]
    Coded {
        status: StatusCode,
        code: &'static str,
        text: String,
    },
    /// A 500 whose text the spec gives (authentication misconfigured, the key server down).
    #[error("{0}")]
    ServerError(String),
    /// A fault of the broker's own: the detail is logged, the client reads a generic text.
    #[error("Internal server error")]
    Internal(String),
}

impl ApiError {
    pub fn bad_request(msg: impl Into<String>) -> ApiError {
        ApiError::BadRequest(msg.into())
    }
}

/// How long a client over its stored-message cap is told to wait: room comes back only when
/// one of its queues is deleted, so retrying sooner only spends its request rate.
const STORED_RETRY_SECS: u64 = 60;

impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> ApiError {
        match r {
            Refusal::Rate { wait } => ApiError::TooManyRequests {
                text: "Rate limit exceeded".into(),
                code: "rate_limited",
                retry_after_secs: retry_after_secs(wait),
            },
            Refusal::Stored { cap, stored } => ApiError::TooManyRequests {
                text: format!("Stored message limit reached: {stored} of {cap} messages"),
                code: "quota_exceeded",
                retry_after_secs: STORED_RETRY_SECS,
            },
            Refusal::Larger { cap, adding } => ApiError::bad_request(format!(
                "A push of {adding} messages exceeds the stored message limit of {cap}"
            )),
        }
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> ApiError {
        match e {
            Error::Invalid(text) => ApiError::BadRequest(text),
            Error::NotFound(text) => ApiError::NotFound(text),
            Error::Conflict(text) => ApiError::Conflict(text),
            Error::Limited(r) => r.into(),
            Error::Unavailable {
                reason,
                retry_after,
            } => ApiError::Unavailable {
                text: reason.into(),
                retry_after,
            },
            Error::Internal(detail) => ApiError::Internal(detail),
        }
    }
}

impl ApiError {
    /// The answer's status code.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::PayloadTooLarge | ApiError::TooLarge(_) | ApiError::TooManyItems { .. } => {
                StatusCode::PAYLOAD_TOO_LARGE
            }
            ApiError::HeadersTooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            ApiError::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Coded { status, .. } => *status,
            ApiError::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::ServerError(_) | ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// Every error the broker answers itself: `{"error": "<text>"}`.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Error")]
pub struct ErrorBody {
    /// What went wrong, in Queen's words where Queen has them.
    pub error: String,
}

/// Over a tenant limit: the text, the proxy-style code the Python client surfaces, and when
/// to retry (as the `Retry-After` header).
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "LimitError")]
pub struct LimitBody {
    /// `Rate limit exceeded`, `Stored message limit reached: <n> of <cap> messages`, or an
    /// ephemeral queue's refusal.
    pub error: String,
    #[schemars(extend("enum" = ["rate_limited", "quota_exceeded", "queue_full"]))]
    pub code: &'static str,
    /// Seconds, as the `Retry-After` header.
    #[serde(rename = "retryAfter")]
    pub retry_after: u64,
}

/// A refusal with a machine code: the text for people, the code for programs.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "CodedError")]
pub struct CodedBody {
    pub error: String,
    /// A stable identifier the client branches on (`kv_invalid`, `kv_expiry_not_specified`,
    /// `ephemeral_queue_not_found`, ...).
    pub code: &'static str,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        match self {
            ApiError::TooManyRequests {
                text,
                code,
                retry_after_secs,
            } => {
                let retry = [(header::RETRY_AFTER, retry_after_secs.to_string())];
                let body = LimitBody {
                    error: text,
                    code,
                    retry_after: retry_after_secs,
                };
                (retry, Answer(body).with_status(status)).into_response()
            }
            ApiError::Coded { code, text, .. } => {
                Answer(CodedBody { error: text, code }).with_status(status)
            }
            ApiError::Unavailable { text, retry_after } => {
                let secs = retry_after_secs(retry_after);
                let retry = [(header::RETRY_AFTER, secs.to_string())];
                (retry, Answer(ErrorBody { error: text }).with_status(status)).into_response()
            }
            other => {
                if let ApiError::Internal(detail) = &other {
                    tracing::error!(%detail, "internal error");
                }
                let error = other.to_string();
                Answer(ErrorBody { error }).with_status(status)
            }
        }
    }
}
