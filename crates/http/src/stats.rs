//! `POST /api/v1/stats/refresh` (`Admin.refresh_consumer_stats()`): Queen recomputes its
//! dashboard counters on demand; Regent computes every figure when it is read, so there is
//! nothing to refresh and the answer is the spec's plain success.

use axum::Json;
use serde_json::{json, Value};

pub async fn refresh() -> Json<Value> {
    Json(json!({"success": true}))
}
