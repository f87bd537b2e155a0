//! Answers for requests no route takes: JSON, like every other error.

use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::error::ApiError;

pub async fn not_found() -> ApiError {
    ApiError::NotFound("Not found".into())
}

pub async fn method_not_allowed() -> (StatusCode, Json<Value>) {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        Json(json!({ "error": "Method not allowed" })),
    )
}
