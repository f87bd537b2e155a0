//! Reading JSON bodies with Queen's error texts instead of axum's plain-text rejections.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde_json::Value;

use super::error::ApiError;

/// The raw body, with an oversized one turned into our 413.
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Bytes::from_request(req, state).await {
            Ok(b) => Ok(RawBody(b)),
            Err(r) if r.status() == StatusCode::PAYLOAD_TOO_LARGE => Err(ApiError::PayloadTooLarge),
            Err(r) => Err(ApiError::bad_request(format!(
                "Invalid body: {}",
                r.body_text()
            ))),
        }
    }
}

impl RawBody {
    /// Queen's texts: `Empty request body`, `Invalid JSON: ...`.
    pub fn json(&self) -> Result<Value, ApiError> {
        if self.0.iter().all(u8::is_ascii_whitespace) {
            return Err(ApiError::bad_request("Empty request body"));
        }
        serde_json::from_slice(&self.0)
            .map_err(|e| ApiError::bad_request(format!("Invalid JSON: {e}")))
    }

    /// The ack routes' texts (the seed): `bad body: ...`.
    pub fn ack_json(&self) -> Result<Value, ApiError> {
        if self.0.iter().all(u8::is_ascii_whitespace) {
            return Err(ApiError::bad_request("bad body: empty request body"));
        }
        serde_json::from_slice(&self.0).map_err(|e| ApiError::bad_request(format!("bad body: {e}")))
    }

    /// For routes the Python client calls with `{}`, which it sends as no body at all.
    pub fn json_or_empty_object(&self) -> Result<Value, ApiError> {
        if self.0.iter().all(u8::is_ascii_whitespace) {
            return Ok(Value::Object(Default::default()));
        }
        self.json()
    }
}
