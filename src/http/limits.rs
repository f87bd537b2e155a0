//! Per-tenant limits at the HTTP edge: the request-rate check as a route layer, and the 429
//! answer for either limit.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::auth::Principal;
use super::error::ApiError;
use super::AppState;
use crate::broker::limits::retry_after_secs;
use crate::limits::Refusal;

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

/// Route middleware, inside `auth::authorize`, which decided the request's tenant: one token
/// of that tenant's bucket per request. Public routes carry no Principal and are not counted.
pub async fn admit(State(s): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if let Some(who) = req.extensions().get::<Principal>() {
        if let Err(r) = s.limits.admit(&who.tenant) {
            return ApiError::from(r).into_response();
        }
    }
    next.run(req).await
}
