//! `/api/v1/system/maintenance`, `/maintenance/pop` and `/shared-state` (spec §15): the
//! tenant's two maintenance switches, read and set, for every broker of the database.

use axum::extract::State as AxState;
use axum::http::Method;
use axum::Extension;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::answer::{Answer, True};
use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::openapi::{Doc, Tag};
use super::read;
use super::routes::{route, Entry, Level::Admin};
use super::{AppState, State};
use regent_service::maintenance::{Status, POLL};

/// The tenant's switches, its per-queue metrics, who a request is, the stats round
/// (`crate::queue_metrics`, `crate::whoami`, `crate::stats`).
pub(crate) const TAG: Tag = (
    "system",
    "The tenant's maintenance switches and its per-queue metrics (admin). Queen's switches are cluster-wide; Regent's belong to the token's tenant.",
);

const MAINTENANCE: &str = "/api/v1/system/maintenance";
const POP_MAINTENANCE: &str = "/api/v1/system/maintenance/pop";

pub(crate) fn routes() -> Vec<Entry> {
    use Method as M;
    let enabled_400 = "`enabled (boolean) is required`; `Empty request body`, `Invalid JSON: …`.";
    let enabled_seeds = &[r#"{"enabled": true}"#, r#"{"enabled": false}"#];
    vec![
        route(M::GET, MAINTENANCE, Admin, get_push)
            .reads_nothing()
            .doc(
                Doc::op(TAG, "Read the push maintenance switch")
                    .answers::<Switches>(200, "The switches."),
            ),
        route(M::POST, MAINTENANCE, Admin, set_push)
            .doc(
                Doc::op(TAG, "Set the push maintenance switch")
                    .body_of::<Switch>(true, "The switch.")
                    .fails(400, enabled_400)
                    .answers::<PushSwitch>(200, "The switch now."),
            )
            .reads_body(enabled_seeds, enabled),
        route(M::GET, POP_MAINTENANCE, Admin, get_pop)
            .reads_nothing()
            .doc(
                Doc::op(TAG, "Read the pop maintenance switch")
                    .answers::<PopSwitch>(200, "The switch."),
            ),
        route(M::POST, POP_MAINTENANCE, Admin, set_pop)
            .doc(
                Doc::op(TAG, "Set the pop maintenance switch")
                    .body_of::<Switch>(true, "The switch.")
                    .fails(400, enabled_400)
                    .answers::<PopSwitch>(200, "The switch now."),
            )
            .reads_body(enabled_seeds, enabled),
        route(M::GET, "/api/v1/system/shared-state", Admin, shared_state)
            .reads_nothing()
            .doc(
                Doc::op(TAG, "How the switches travel between brokers")
                    .answers::<SharedState>(200, "The state."),
            ),
    ]
}

/// A maintenance switch's new position.
#[derive(Deserialize, JsonSchema)]
#[schemars(rename = "MaintenanceSwitch")]
struct Switch {
    #[schemars(with = "bool")]
    enabled: Option<Value>,
}

/// `{"enabled": <bool>}`, with the spec's text for anything else (a body that is not an
/// object included).
fn enabled(body: &RawBody) -> Result<bool, ApiError> {
    read::fields::<Switch>(&body.json_or_empty_object()?)
        .ok()
        .and_then(|s| s.enabled)
        .and_then(|e| e.as_bool())
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

/// Both switches and the buffer, as Queen's `GET /system/maintenance` answers them.
#[derive(Serialize, JsonSchema)]
struct Switches {
    #[serde(rename = "maintenanceMode")]
    maintenance_mode: bool,
    #[serde(rename = "popMaintenanceMode")]
    pop_maintenance_mode: bool,
    #[serde(rename = "bufferedMessages")]
    buffered_messages: i64,
    #[serde(rename = "bufferHealthy")]
    buffer_healthy: True,
    #[serde(rename = "bufferStats")]
    buffer_stats: BufferStats,
}

/// Queen's file buffer's figures; Regent's buffer is a table, so only `pendingCount` is real.
#[derive(Serialize, JsonSchema)]
struct BufferStats {
    #[serde(rename = "pendingCount")]
    pending_count: i64,
    #[serde(rename = "failedCount")]
    #[schemars(extend("const" = 0))]
    failed_count: u64,
    #[serde(rename = "dbHealthy")]
    db_healthy: True,
    #[serde(rename = "failedFiles")]
    failed_files: FailedFiles,
}

#[derive(Serialize, JsonSchema, Default)]
struct FailedFiles {
    count: u64,
    #[serde(rename = "totalBytes")]
    total_bytes: u64,
    #[serde(rename = "totalMB")]
    total_mb: u64,
    #[serde(rename = "failoverCount")]
    failover_count: u64,
    #[serde(rename = "qos0Count")]
    qos0_count: u64,
}

async fn get_push(
    AxState(s): State,
    Extension(who): Extension<Principal>,
) -> Result<Answer<Switches>, ApiError> {
    let st = s.service.maintenance(&who.tenant).await?;
    Ok(Answer(Switches {
        maintenance_mode: st.push,
        pop_maintenance_mode: st.pop,
        buffered_messages: st.buffered,
        buffer_healthy: True,
        buffer_stats: BufferStats {
            pending_count: st.buffered,
            failed_count: 0,
            db_healthy: True,
            failed_files: FailedFiles::default(),
        },
    }))
}

/// Sets the tenant's push switch (`push`) or pop switch from the body.
async fn flip(s: &AppState, tenant: &str, body: RawBody, push: bool) -> Result<Status, ApiError> {
    let on = Some(enabled(&body)?);
    let (push, pop) = if push { (on, None) } else { (None, on) };
    Ok(s.service.set_maintenance(tenant, push, pop).await?)
}

/// The push switch now.
#[derive(Serialize, JsonSchema)]
struct PushSwitch {
    #[serde(rename = "maintenanceMode")]
    maintenance_mode: bool,
    /// Pushes held in the buffer, waiting to be appended.
    #[serde(rename = "bufferedMessages")]
    buffered_messages: i64,
    #[serde(rename = "bufferHealthy")]
    buffer_healthy: True,
    message: String,
}

async fn set_push(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Answer<PushSwitch>, ApiError> {
    let st = flip(&s, &who.tenant, body, true).await?;
    Ok(Answer(PushSwitch {
        maintenance_mode: st.push,
        buffered_messages: st.buffered,
        buffer_healthy: True,
        message: push_text(&st),
    }))
}

/// The pop switch now.
#[derive(Serialize, JsonSchema)]
struct PopSwitch {
    #[serde(rename = "popMaintenanceMode")]
    pop_maintenance_mode: bool,
    message: &'static str,
}

impl PopSwitch {
    fn of(st: &Status) -> PopSwitch {
        PopSwitch {
            pop_maintenance_mode: st.pop,
            message: pop_text(st),
        }
    }
}

async fn get_pop(
    AxState(s): State,
    Extension(who): Extension<Principal>,
) -> Result<Answer<PopSwitch>, ApiError> {
    let st = s.service.maintenance(&who.tenant).await?;
    Ok(Answer(PopSwitch::of(&st)))
}

async fn set_pop(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Answer<PopSwitch>, ApiError> {
    let st = flip(&s, &who.tenant, body, false).await?;
    Ok(Answer(PopSwitch::of(&st)))
}

/// How the switches travel between brokers, in Queen's snake_case.
#[derive(Serialize, JsonSchema)]
struct SharedState {
    enabled: True,
    running: True,
    server_id: String,
    #[schemars(extend("const" = "database"))]
    sync: &'static str,
    poll_interval_ms: u64,
    maintenance_mode: bool,
    pop_maintenance_mode: bool,
    buffered_messages: i64,
}

/// How the switches travel between brokers: through the database, polled.
async fn shared_state(
    AxState(s): State,
    Extension(who): Extension<Principal>,
) -> Result<Answer<SharedState>, ApiError> {
    let st = s.service.maintenance(&who.tenant).await?;
    Ok(Answer(SharedState {
        enabled: True,
        running: True,
        server_id: s.service.broker_id().to_string(),
        sync: "database",
        poll_interval_ms: POLL.as_millis() as u64,
        maintenance_mode: st.push,
        pop_maintenance_mode: st.pop,
        buffered_messages: st.buffered,
    }))
}
