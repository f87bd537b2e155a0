//! The end of the shutdown grace period: requests still running then are answered 503 (the
//! client retries them elsewhere; every write is safe to retry) and their handlers dropped,
//! so a request stuck on the database cannot hold the process past its deadline.

use std::time::Duration;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::State;

pub async fn bounded(axum::extract::State(s): State, req: Request, next: Next) -> Response {
    let mut over = s.grace_over.clone();
    tokio::select! {
        answer = next.run(req) => answer,
        _ = over.wait_for(|o| *o) => ApiError::Unavailable {
            text: "Server is shutting down".into(),
            retry_after: Duration::from_secs(1),
        }
        .into_response(),
    }
}
