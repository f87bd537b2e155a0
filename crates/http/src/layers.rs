//! What every request passes through, outermost first: its id (`request_id`: the client's
//! `x-request-id`, else a new UUID, named on every log line of the request and echoed on the
//! answer); Queen's CORS headers; the shutdown cut-off; panic isolation; the body limit.
//!
//! CORS stays hand-written (`cors.rs`): Queen sends its headers on every answer and answers
//! every `OPTIONS` with 204, which tower-http's `CorsLayer` (preflight-only headers, 200)
//! does not reproduce.

use std::any::Any;
use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::response::{IntoResponse, Response};
use axum::Router;
use tower_http::catch_panic::CatchPanicLayer;

use super::error::ApiError;
use super::{cors, grace, request_id, AppState};

pub fn around(app: Router<Arc<AppState>>, state: &Arc<AppState>) -> Router<Arc<AppState>> {
    app.layer(DefaultBodyLimit::max(state.config.max_body_bytes))
        .layer(CatchPanicLayer::custom(panicked))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            grace::bounded,
        ))
        .layer(axum::middleware::from_fn(cors::cors))
        .layer(axum::middleware::from_fn(request_id::request_id))
}

/// A handler that panicked answers its own request with 500; the broker serves on.
fn panicked(panic: Box<dyn Any + Send + 'static>) -> Response {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into());
    ApiError::Internal(format!("handler panicked: {text}")).into_response()
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use axum::routing::get;
    use tower::ServiceExt;

    use super::*;

    async fn boom() -> &'static str {
        panic!("a bug in one handler")
    }

    async fn fine() -> &'static str {
        "ok"
    }

    /// The same panic layer as the broker's, around a router with a handler that panics.
    #[tokio::test]
    async fn a_panicking_handler_answers_500_and_the_next_request_is_served() {
        let app: Router = Router::new()
            .route("/boom", get(boom))
            .route("/fine", get(fine))
            .layer(CatchPanicLayer::custom(panicked));
        let res = app
            .clone()
            .oneshot(Request::get("/boom").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = axum::body::to_bytes(res.into_body(), 1024).await.unwrap();
        assert_eq!(&body[..], br#"{"error":"Internal server error"}"#);
        let res = app
            .oneshot(Request::get("/fine").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK);
    }
}
