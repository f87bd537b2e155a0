//! `/api/v1/traces`: trace events a consumer attaches to a message (`message.trace(...)` in
//! the clients' consume loops), and the three read routes. Read answers use snake_case keys,
//! as Queen's do.

use axum::extract::State as AxState;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde_json::{json, Map, Value};
use uuid::Uuid;

use super::auth::Principal;
use super::body::RawBody;
use super::error::ApiError;
use super::params::Params;
use super::path::PathParams;
use super::time::millis;
use super::State;
use regent_broker::naming::QUEUE_MODE;
use regent_service::traces::{NamedTrace, Page, Trace, TraceEvent};
use regent_service::Error;

const NOT_FOUND: &str = "Message not found";

pub async fn record(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    body: RawBody,
) -> Result<Response, ApiError> {
    let v = body.json()?;
    let Some(r) = parse_record(&v)? else {
        return Ok(not_found());
    };
    let empty = Value::Object(Map::new());
    let event = TraceEvent {
        partition_id: r.partition_id,
        transaction_id: r.transaction_id,
        event_type: r.event_type,
        data: r.data.unwrap_or(&empty),
        consumer_group: r.consumer_group,
        worker_id: r.worker_id,
        names: &r.names,
    };
    match s.service.record_trace(&who.tenant, &event).await {
        Ok(id) => Ok((
            StatusCode::CREATED,
            Json(json!({"success": true, "traceId": id})),
        )
            .into_response()),
        Err(Error::NotFound(_)) => Ok(not_found()),
        Err(e) => Err(e.into()),
    }
}

/// A trace event as sent; `data` is `None` for JSON `null` (stored as `{}`).
pub(crate) struct Record<'a> {
    pub partition_id: Uuid,
    pub transaction_id: &'a str,
    pub event_type: &'a str,
    pub data: Option<&'a Value>,
    pub consumer_group: &'a str,
    pub worker_id: Option<&'a str>,
    pub names: Vec<String>,
}

/// The trace body, read; `None` when its partition id is not a UUID: it names no message of
/// this broker (a 404, not a 400).
pub(crate) fn parse_record(v: &Value) -> Result<Option<Record<'_>>, ApiError> {
    let o = v
        .as_object()
        .ok_or_else(|| ApiError::bad_request("transactionId and partitionId are required"))?;
    let (Some(txid), Some(pid)) = (text(o, "transactionId"), text(o, "partitionId")) else {
        return Err(ApiError::bad_request(
            "transactionId and partitionId are required",
        ));
    };
    let data = match o.get("data") {
        None => return Err(ApiError::bad_request("data is required")),
        Some(Value::Null) => None,
        Some(d) => Some(d),
    };
    let names = names(o.get("traceNames"))?;
    let Ok(partition_id) = Uuid::parse_str(pid) else {
        return Ok(None);
    };
    Ok(Some(Record {
        partition_id,
        transaction_id: txid,
        event_type: optional(o, "eventType")?.unwrap_or("info"),
        data,
        consumer_group: optional(o, "consumerGroup")?.unwrap_or(QUEUE_MODE),
        worker_id: optional(o, "workerId")?,
        names,
    }))
}

/// 404 in the shape the clients read (`success: false`); they never raise on it.
fn not_found() -> Response {
    let body = json!({"success": false, "error": NOT_FOUND});
    (StatusCode::NOT_FOUND, Json(body)).into_response()
}

fn text<'a>(o: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    o.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// A string field that may be absent or null (its default then); anything else is refused.
fn optional<'a>(o: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, ApiError> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ApiError::bad_request(format!("{key} must be a string"))),
    }
}

/// `traceNames`: one string, a list of strings, or nothing.
fn names(v: Option<&Value>) -> Result<Vec<String>, ApiError> {
    let refused = || ApiError::bad_request("traceNames must be a string or an array of strings");
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(a)) => a
            .iter()
            .map(|n| n.as_str().map(str::to_string).ok_or_else(refused))
            .collect(),
        Some(_) => Err(refused()),
    }
}

pub async fn of_message(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams((pid, txid)): PathParams<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let traces = match Uuid::parse_str(&pid) {
        Ok(pid) => s.service.traces_of_message(&who.tenant, pid, &txid).await?,
        Err(_) => Vec::new(),
    };
    let traces: Vec<Value> = traces.iter().map(own_fields).collect();
    Ok(Json(json!({ "traces": traces })))
}

pub async fn by_name(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(name): PathParams<String>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let page = page(&p, 100);
    let (traces, total) = s.service.traces_by_name(&who.tenant, &name, page).await?;
    let traces: Vec<Value> = traces.iter().map(named).collect();
    Ok(Json(json!({
        "traces": traces,
        "total": total,
        "pagination": {"limit": page.limit, "offset": page.offset},
    })))
}

pub async fn names_list(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let page = page(&p, 50);
    let (names, total) = s.service.trace_names(&who.tenant, page).await?;
    let names: Vec<Value> = names
        .iter()
        .map(|n| {
            json!({
                "trace_name": n.name, "trace_count": n.traces,
                "message_count": n.messages, "last_seen": millis(n.last_seen),
            })
        })
        .collect();
    Ok(Json(json!({
        "trace_names": names,
        "total": total,
        "pagination": {"limit": page.limit, "offset": page.offset},
    })))
}

pub(crate) fn page(p: &Params, default_limit: i64) -> Page {
    Page {
        limit: p.int("limit").unwrap_or(default_limit).clamp(1, 1000),
        offset: p.int("offset").unwrap_or(0).max(0),
    }
}

fn own_fields(t: &Trace) -> Value {
    json!({
        "id": t.id, "event_type": t.event_type, "data": t.data,
        "consumer_group": t.consumer_group, "worker_id": t.worker_id,
        "created_at": millis(t.created_at), "trace_names": t.names,
    })
}

fn named(n: &NamedTrace) -> Value {
    let mut v = own_fields(&n.trace);
    let extra = json!({
        "transaction_id": n.trace.transaction_id, "partition_id": n.trace.partition_id,
        "queue_name": n.queue, "partition_name": n.partition,
        "message_payload": n.message.as_ref().map(|m| &m.payload),
    });
    if let (Value::Object(v), Value::Object(extra)) = (&mut v, extra) {
        v.extend(extra);
    }
    v
}
