//! What every request passes through before routing, in one middleware: its id (see
//! `request_id`), Queen's CORS headers (on every answer, and 204 for every `OPTIONS`, without
//! auth: browser dashboards rely on it), the end of the shutdown grace period (requests still
//! running then are answered 503 and their handlers dropped; every write is safe to retry),
//! and panic isolation (a handler that panics answers its own request with 500; the broker
//! serves on).
//!
//! One middleware rather than a layer each: every axum middleware layer costs a boxed
//! service and future per request, and with tower-http's catch-panic and request-id layers
//! and tracing's request span a batch-1 push cost the broker about 15 µs more CPU than
//! before them (BENCHMARKS.md, "The redesign").

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::FutureExt;
use tokio::sync::watch;

use super::error::ApiError;
use super::request_id;
use super::State as AppState;

pub async fn edge(State(s): AppState, req: Request, next: Next) -> Response {
    // Read only when origins are listed: with `*` the answer does not depend on it.
    let origin = s
        .cors_origins
        .as_ref()
        .and_then(|_| req.headers().get(header::ORIGIN).cloned());
    let mut res = if req.method() == Method::OPTIONS {
        StatusCode::NO_CONTENT.into_response()
    } else {
        request_id::within(req, |req| guarded(next.run(req), s.grace_over.clone())).await
    };
    if res.status() == StatusCode::SERVICE_UNAVAILABLE {
        s.service.answered_unavailable();
    }
    cors(res.headers_mut(), s.cors_origins.as_deref(), origin);
    res
}

/// The handler's answer, unless it panics (500) or the grace period ends first (503).
async fn guarded(
    answer: impl std::future::Future<Output = Response>,
    mut grace_over: watch::Receiver<bool>,
) -> Response {
    tokio::select! {
        answer = AssertUnwindSafe(answer).catch_unwind() => match answer {
            Ok(answer) => answer,
            Err(panic) => panicked(panic),
        },
        _ = grace_over.wait_for(|over| *over) => ApiError::Unavailable {
            text: "Server is shutting down".into(),
            retry_after: Duration::from_secs(1),
        }
        .into_response(),
    }
}

fn panicked(panic: Box<dyn Any + Send + 'static>) -> Response {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into());
    ApiError::Internal(format!("handler panicked: {text}")).into_response()
}

/// Queen's headers; the allowed origin is `*`, or with `CORS_ALLOWED_ORIGINS` listing
/// origins the request's own `Origin` when listed (and none otherwise, which a browser
/// refuses), the answer varying by it.
fn cors(h: &mut HeaderMap, listed: Option<&[String]>, origin: Option<HeaderValue>) {
    match listed {
        None => {
            h.insert(
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                HeaderValue::from_static("*"),
            );
        }
        Some(listed) => {
            h.append(header::VARY, HeaderValue::from_static("Origin"));
            let allowed = origin.filter(|o| {
                listed
                    .iter()
                    .any(|l| o.as_bytes().eq_ignore_ascii_case(l.as_bytes()))
            });
            if let Some(o) = allowed {
                h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, o);
            }
        }
    }
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, PUT, DELETE, OPTIONS"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("Content-Type, Authorization"),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("86400"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body(res: Response) -> String {
        let bytes = axum::body::to_bytes(res.into_body(), 1024).await.unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn a_panicking_handler_answers_500_and_the_next_request_is_served() {
        let (_cut_off, grace_over) = watch::channel(false);
        let boom = async { panic!("a bug in one handler") };
        let res = guarded(boom, grace_over.clone()).await;
        assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(body(res).await, r#"{"error":"Internal server error"}"#);
        let fine = async { "ok".into_response() };
        let res = guarded(fine, grace_over).await;
        assert_eq!(
            (res.status(), body(res).await),
            (StatusCode::OK, "ok".to_string())
        );
    }

    #[tokio::test]
    async fn the_end_of_the_grace_period_cuts_a_request_off_with_503() {
        let (cut_off, grace_over) = watch::channel(false);
        let stuck = std::future::pending::<Response>();
        let cut = async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            cut_off.send(true).unwrap();
        };
        let (res, ()) = tokio::join!(guarded(stuck, grace_over), cut);
        assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(res.headers()[header::RETRY_AFTER], "1");
        assert_eq!(body(res).await, r#"{"error":"Server is shutting down"}"#);
    }
}
