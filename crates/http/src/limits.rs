//! Per-tenant request rate at the HTTP edge: a route layer, inside `auth::authorize` (which
//! decided the tenant), taking one token of the tenant's bucket per request. Public routes
//! carry no Principal and are not counted.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::auth::Principal;
use super::error::ApiError;
use super::AppState;

pub async fn admit(State(s): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if let Some(who) = req.extensions().get::<Principal>() {
        if let Err(e) = s.service.admit(&who.tenant) {
            return ApiError::from(e).into_response();
        }
    }
    next.run(req).await
}
