//! `GET /health`: 200 while the database answers and every background task runs; 503
//! otherwise, naming what is wrong, so an orchestrator routes around this broker.

use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde_json::json;

use super::State;

pub async fn health(axum::extract::State(s): State) -> impl IntoResponse {
    let h = s.service.health().await;
    let body = json!({
        "status": if h.ok() { "healthy" } else { "unhealthy" },
        "database": if h.database { "connected" } else { "disconnected" },
        "tasksDown": h.down,
        "server": "Regent",
        "worker_id": 0,
        "version": env!("CARGO_PKG_VERSION"),
        "shared_state": { "enabled": false },
        "queen": { "worker_id": 0, "status": "active" },
    });
    if h.ok() {
        (StatusCode::OK, Json(body)).into_response()
    } else {
        let retry = [(header::RETRY_AFTER, "1")];
        (StatusCode::SERVICE_UNAVAILABLE, retry, Json(body)).into_response()
    }
}
