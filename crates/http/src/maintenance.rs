//! `/api/v1/system/maintenance`, `/maintenance/pop` and `/shared-state` (spec §15): the
//! tenant's two maintenance switches, read and set, for every broker of the database.

use axum::extract::State as AxState;
use axum::{Extension, Json};
use serde_json::{json, Value};

use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::{AppState, State};
use regent_service::maintenance::{Status, POLL};

/// `{"enabled": <bool>}`, with the spec's text for anything else.
pub(crate) fn enabled(body: &RawBody) -> Result<bool, ApiError> {
    body.json_or_empty_object()?
        .get("enabled")
        .and_then(Value::as_bool)
        .ok_or_else(|| ApiError::bad_request("enabled (boolean) is required"))
}

fn push_text(s: &Status) -> String {
    match (s.push, s.buffered) {
        (true, _) => "Push maintenance is on: pushes are held in the buffer".into(),
        (false, 0) => "Push maintenance is off".into(),
        (false, n) => format!("Push maintenance is off: appending {n} buffered messages"),
    }
}

fn pop_text(s: &Status) -> &'static str {
    if s.pop {
        "Pop maintenance is on: pops answer paused"
    } else {
        "Pop maintenance is off"
    }
}

pub async fn get_push(
    AxState(s): State,
    Extension(who): Extension<Principal>,
) -> Result<Json<Value>, ApiError> {
    let st = s.service.maintenance(&who.tenant).await?;
    Ok(Json(json!({
        "maintenanceMode": st.push, "popMaintenanceMode": st.pop,
        "bufferedMessages": st.buffered, "bufferHealthy": true,
        "bufferStats": {
            "pendingCount": st.buffered, "failedCount": 0, "dbHealthy": true,
            "failedFiles": {"count": 0, "totalBytes": 0, "totalMB": 0, "failoverCount": 0, "qos0Count": 0},
        },
    })))
}

/// Sets the tenant's push switch (`push`) or pop switch from the body.
async fn flip(s: &AppState, tenant: &str, body: RawBody, push: bool) -> Result<Status, ApiError> {
    let on = Some(enabled(&body)?);
    let (push, pop) = if push { (on, None) } else { (None, on) };
    Ok(s.service.set_maintenance(tenant, push, pop).await?)
}

pub async fn set_push(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Json<Value>, ApiError> {
    let st = flip(&s, &who.tenant, body, true).await?;
    Ok(Json(json!({
        "maintenanceMode": st.push, "bufferedMessages": st.buffered,
        "bufferHealthy": true, "message": push_text(&st),
    })))
}

pub async fn get_pop(
    AxState(s): State,
    Extension(who): Extension<Principal>,
) -> Result<Json<Value>, ApiError> {
    let st = s.service.maintenance(&who.tenant).await?;
    Ok(Json(
        json!({"popMaintenanceMode": st.pop, "message": pop_text(&st)}),
    ))
}

pub async fn set_pop(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Json<Value>, ApiError> {
    let st = flip(&s, &who.tenant, body, false).await?;
    Ok(Json(
        json!({"popMaintenanceMode": st.pop, "message": pop_text(&st)}),
    ))
}

/// How the switches travel between brokers: through the database, polled.
pub async fn shared_state(
    AxState(s): State,
    Extension(who): Extension<Principal>,
) -> Result<Json<Value>, ApiError> {
    let st = s.service.maintenance(&who.tenant).await?;
    Ok(Json(json!({
        "enabled": true, "running": true,
        "server_id": s.service.runtime().peers.id(),
        "sync": "database", "poll_interval_ms": POLL.as_millis() as u64,
        "maintenance_mode": st.push, "pop_maintenance_mode": st.pop,
        "buffered_messages": st.buffered,
    })))
}
