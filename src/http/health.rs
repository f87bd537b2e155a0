use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use serde_json::json;

use super::State;

pub async fn health(axum::extract::State(s): State) -> impl IntoResponse {
    let up = s.store.ping().await.is_ok();
    let body = json!({
        "status": if up { "healthy" } else { "unhealthy" },
        "database": if up { "connected" } else { "disconnected" },
        "server": "Regent",
        "worker_id": 0,
        "version": env!("CARGO_PKG_VERSION"),
        "shared_state": { "enabled": false },
        "queen": { "worker_id": 0, "status": "active" },
    });
    let code = if up {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, Json(body))
}
