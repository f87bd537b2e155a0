//! `POST /api/v1/stats/refresh` (`Admin.refresh_consumer_stats()`): runs a stats round now
//! (waiting for one another broker is running) so the inspection routes' counts include
//! every write committed before the call, and says what it counted.

use axum::extract::State as AxState;
use axum::Json;
use serde_json::{json, Value};

use super::error::ApiError;
use super::State;

pub async fn refresh(AxState(s): State) -> Result<Json<Value>, ApiError> {
    let round = s.service.refresh_stats(true).await?;
    Ok(Json(json!({
        "success": true,
        "queues": round.queues,
        "tookMs": round.took.as_secs_f64() * 1000.0,
    })))
}
