//! Every request's id: the client's `x-request-id` when it sends one, else a new UUID. It is
//! echoed on the answer, and held in a task-local for as long as the request's handler runs,
//! so the log formatter (`src/logging.rs`) can name it on every line written meanwhile.
//!
//! A task-local rather than a tracing span per request: a span costs the fmt subscriber CPU
//! on every request, logged or not; the task-local costs nothing until a line is written.

use std::future::Future;

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::response::Response;

const HEADER: &str = "x-request-id";

tokio::task_local! {
    static REQUEST_ID: HeaderValue;
}

/// Runs `handle` on the request with its id held, and puts the id on the answer.
pub async fn within<F, Fut>(mut req: Request, handle: F) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    let id = match req.headers().get(HEADER) {
        Some(id) => id.clone(),
        None => {
            let id = HeaderValue::from_str(&uuid::Uuid::now_v7().to_string())
                .expect("a UUID is a header value");
            req.headers_mut().insert(HEADER, id.clone());
            id
        }
    };
    let mut res = REQUEST_ID.scope(id.clone(), handle(req)).await;
    res.headers_mut().insert(HEADER, id);
    res
}

/// Calls `f` with the id of the request being handled on this task, if any.
pub fn with_current<R>(f: impl FnOnce(Option<&str>) -> R) -> R {
    // A clone of a header value is a reference count.
    let id = REQUEST_ID.try_with(HeaderValue::clone).ok();
    f(id.as_ref().and_then(|id| id.to_str().ok()))
}

/// Runs `fut` as the request `id` would (for tests of what reads it).
pub async fn scope<F: Future>(id: &str, fut: F) -> F::Output {
    let id = HeaderValue::from_str(id).expect("a header value");
    REQUEST_ID.scope(id, fut).await
}
