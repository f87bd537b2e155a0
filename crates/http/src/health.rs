//! `GET /health`: 200 while the database answers and every background task runs; 503
//! otherwise, naming what is wrong, so an orchestrator routes around this broker.

use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Serialize;

use super::answer::Answer;
use super::openapi::{Doc, Tag};
use super::routes::{route, Entry, Level::Public};
use super::State;

/// Health, metrics and the OpenAPI document (`crate::metrics`, `crate::openapi`).
pub(crate) const TAG: Tag = (
    "health",
    "Health, metrics and this document: public, naming no tenant's data.",
);

pub(crate) fn routes() -> Vec<Entry> {
    vec![route(Method::GET, "/health", Public, health)
        .reads_nothing()
        .doc(
            Doc::op(TAG, "Health of this broker")
                .answers::<Health>(200, "Healthy.")
                .answers_with_retry::<Health>(
                    503,
                    "Unhealthy: the database is down or a background task is being restarted.",
                ),
        )]
}

/// This broker's health, in Queen's keys.
#[derive(Serialize, JsonSchema)]
struct Health {
    #[schemars(extend("enum" = ["healthy", "unhealthy"]))]
    status: &'static str,
    #[schemars(extend("enum" = ["connected", "disconnected"]))]
    database: &'static str,
    /// Background tasks being restarted after a panic (a push or ack flusher, the purge
    /// clock, the peer link, the maintenance poll, the retention clock, the series flush, the
    /// JWKS refresh).
    #[serde(rename = "tasksDown")]
    tasks_down: Vec<String>,
    #[schemars(extend("const" = "Regent"))]
    server: &'static str,
    #[schemars(extend("const" = 0))]
    worker_id: u32,
    version: &'static str,
    shared_state: SharedState,
    queen: Worker,
}

/// Queen's cluster sync, which Regent does not have.
#[derive(Serialize, JsonSchema)]
struct SharedState {
    #[schemars(extend("const" = false))]
    enabled: bool,
}

#[derive(Serialize, JsonSchema)]
struct Worker {
    worker_id: u32,
    status: &'static str,
}

async fn health(axum::extract::State(s): State) -> Response {
    let h = s.service.health().await;
    let body = Health {
        status: if h.ok() { "healthy" } else { "unhealthy" },
        database: if h.database {
            "connected"
        } else {
            "disconnected"
        },
        tasks_down: h.down.iter().map(|t| t.to_string()).collect(),
        server: "Regent",
        worker_id: 0,
        version: env!("CARGO_PKG_VERSION"),
        shared_state: SharedState { enabled: false },
        queen: Worker {
            worker_id: 0,
            status: "active",
        },
    };
    if h.ok() {
        Answer(body).into_response()
    } else {
        let retry = [(header::RETRY_AFTER, "1")];
        (
            retry,
            Answer(body).with_status(StatusCode::SERVICE_UNAVAILABLE),
        )
            .into_response()
    }
}
