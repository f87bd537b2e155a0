//! `/api/v1/messages`: the listing (newest first across partitions), one message, and what
//! an operator does to one (delete, retry, move to the dead-letter queue). What each means on
//! a log with a cursor per group: ARCHITECTURE.md, "Single messages".

use axum::extract::State as AxState;
use axum::{Extension, Json};
use chrono::{DateTime, Duration, DurationRound, Utc};
use serde_json::{json, Value};
use uuid::Uuid;

use super::auth::Principal;
use super::error::ApiError;
use super::params::Params;
use super::path::PathParams;
use super::time::{instant, millis};
use super::State;
use regent_broker::message_status::{Seen, Status};
use regent_broker::options::QueueOptions;
use regent_service::messages::Scope;
use regent_service::messages::{Done, Found, ListQuery};

pub(crate) fn partition_id(pid: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(pid).map_err(|_| ApiError::bad_request("partitionId must be a UUID"))
}

fn not_found() -> ApiError {
    ApiError::NotFound("Message not found".into())
}

fn mode(s: &Seen) -> Value {
    json!({
        "hasQueueMode": matches!(s.mode.name(), "queue" | "hybrid"),
        "busGroupsCount": s.bus_groups, "consumedByGroups": s.consumed_by, "type": s.mode.name(),
    })
}

/// The fields the listing and the detail share.
fn common(f: &Found) -> Value {
    let (m, p) = (&f.message.message, &f.place);
    json!({
        "id": m.message_id, "transactionId": m.transaction_id, "partitionId": p.partition_id,
        "queuePath": format!("{}/{}", p.queue, p.partition), "queue": p.queue,
        "partition": p.partition, "namespace": p.namespace, "task": p.task,
        "status": f.seen.status.name(), "traceId": m.trace_id, "producerSub": m.producer_sub,
        "createdAt": millis(f.message.created_at),
        "leaseExpiresAt": f.seen.lease_expires_at.map(millis),
    })
}

/// The listing's query; `None` when it names a status no message can have (it matches
/// nothing: Queen filters on the computed status).
pub(crate) fn list_query(
    p: &Params,
    now: DateTime<Utc>,
) -> Result<Option<ListQuery<'_>>, ApiError> {
    let to = instant(p, "to")?.unwrap_or(now);
    let to = to.duration_trunc(Duration::minutes(1)).unwrap_or(to) + Duration::minutes(1)
        - Duration::microseconds(1);
    let scope = Scope {
        queue: p.str("queue").filter(|v| !v.is_empty()),
        partition: p.str("partition").filter(|v| !v.is_empty()),
        namespace: p.str("ns").filter(|v| !v.is_empty()),
        task: p.str("task").filter(|v| !v.is_empty()),
        from: instant(p, "from")?.unwrap_or(now - Duration::hours(1)),
        to,
    };
    let status = p.str("status").filter(|v| !v.is_empty());
    if status.is_some_and(|st| Status::parse(st).is_none()) {
        return Ok(None);
    }
    Ok(Some(ListQuery {
        scope,
        status: status.and_then(Status::parse),
        limit: p.int("limit").unwrap_or(200).clamp(1, 1000),
        offset: p.int("offset").unwrap_or(0).max(0),
    }))
}

/// `Admin.list_messages`: newest first, without payloads. `from` defaults to an hour ago,
/// `to` to now (rounded up to the end of its minute); `limit` 200 (at most 1,000).
pub async fn list(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let Some(q) = list_query(&p, Utc::now())? else {
        return Ok(Json(
            json!({ "messages": [], "mode": {"hasQueueMode": false,
            "busGroupsCount": 0, "type": "none"} }),
        ));
    };
    let found = s.service.list_messages(&who.tenant, &q).await?;
    let messages: Vec<Value> = found
        .iter()
        .map(|f| {
            let mut v = common(f);
            v["queueStatus"] = json!(f.seen.queue_status.name());
            v["busStatus"] =
                json!({ "consumedBy": f.seen.consumed_by, "totalGroups": f.seen.bus_groups });
            v["queuePriority"] = json!(QueueOptions::from_stored(&f.place.options).priority());
            v
        })
        .collect();
    let listing_mode = found
        .first()
        .map(|f| mode(&f.seen))
        .unwrap_or_else(|| json!({"hasQueueMode": false, "busGroupsCount": 0, "type": "none"}));
    Ok(Json(json!({ "messages": messages, "mode": listing_mode })))
}

/// `Admin.get_message`: one message with its payload (key `payload`), its status per group
/// and the dead letter's reason, if one was filed.
pub async fn get(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams((pid, txid)): PathParams<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let pid = partition_id(&pid)?;
    let Some(f) = s.service.message(&who.tenant, pid, &txid).await? else {
        return Err(not_found());
    };
    let o = QueueOptions::from_stored(&f.place.options);
    let mut v = common(&f);
    v["payload"] = serde_json::from_str(f.message.message.payload.get()).unwrap_or(Value::Null);
    v["isEncrypted"] = json!(o.encrypted());
    v["errorMessage"] = json!(f.dead.as_ref().map(|d| &d.error));
    v["retryCount"] = json!(f.dead.as_ref().map(|d| d.retry_count));
    v["queueConfig"] = json!({
        "leaseTime": o.lease_seconds(), "retryLimit": o.retry_limit(),
        "priority": o.priority(),
    });
    v["mode"] = mode(&f.seen);
    v["consumerGroups"] = f
        .groups
        .iter()
        .map(|(name, consumed, lease)| {
            json!({ "name": name, "consumed": consumed, "leaseExpiresAt": lease.map(millis) })
        })
        .collect();
    Ok(Json(v))
}

/// Deleting answers 200 whether or not the message was there, as Queen does.
pub async fn delete(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams((pid, txid)): PathParams<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let id = partition_id(&pid)?;
    let done = s.service.delete_message(&who.tenant, id, &txid).await?;
    let (success, message) = match done {
        Done::Deleted(_) => (true, "Message deleted successfully"),
        _ => (false, "Message not found"),
    };
    Ok(Json(json!({
        "success": success, "partitionId": pid, "transactionId": txid, "message": message,
    })))
}

/// Appends a copy of the message (new ids, every group reads it) and says which.
pub async fn retry(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams((pid, txid)): PathParams<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let id = partition_id(&pid)?;
    match s.service.retry_message(&who.tenant, id, &txid).await? {
        Done::Retried {
            message_id,
            transaction_id,
        } => Ok(Json(json!({
            "success": true, "partitionId": pid, "transactionId": txid,
            "copy": {"messageId": message_id, "transactionId": transaction_id},
            "message": "A copy of the message was appended to its partition",
        }))),
        _ => Err(not_found()),
    }
}

/// Files a dead letter for `?consumerGroup=` (queue mode by default) and deletes the message
/// from the log, in one transaction.
pub async fn to_dlq(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams((pid, txid)): PathParams<(String, String)>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let id = partition_id(&pid)?;
    let group = p.str("consumerGroup").filter(|g| !g.is_empty());
    match s
        .service
        .message_to_dlq(&who.tenant, id, &txid, group)
        .await?
    {
        Done::DeadLettered { group } => Ok(Json(json!({
            "success": true, "partitionId": pid, "transactionId": txid,
            "consumerGroup": group,
            "message": "Message moved to the dead-letter queue and deleted from the log",
        }))),
        _ => Err(not_found()),
    }
}
