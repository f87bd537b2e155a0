//! Answers for requests no route takes: JSON, like every other error.

use super::error::ApiError;

pub async fn not_found() -> ApiError {
    ApiError::NotFound("Not found".into())
}

pub async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}
