//! Inspection and administration of queues.

use axum::extract::State as AxState;

use super::path::PathParams;
use axum::{Extension, Json};
use serde_json::{json, Value};

use super::auth::Principal;
use super::error::ApiError;
use super::params::Params;
use super::time::millis;
use super::State;
use regent_service::queues::PartitionStats;

pub async fn list_queues(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let limit = p.int("limit").unwrap_or(1000).clamp(1, 10_000);
    let offset = p.int("offset").unwrap_or(0).max(0);
    let rows = s
        .service
        .list_queues(&who.tenant, p.str("search"), limit, offset)
        .await?;
    let queues: Vec<Value> = rows
        .into_iter()
        .map(|r| {
            json!({
                "id": r.queue.id, "name": r.queue.name, "namespace": r.queue.namespace,
                "task": r.queue.task, "createdAt": millis(r.queue.created_at),
                "partitions": r.partitions,
                "messages": { "total": r.total, "pending": r.pending, "processing": r.processing },
            })
        })
        .collect();
    Ok(Json(json!({ "queues": queues })))
}

fn stats(p: &PartitionStats) -> Value {
    json!({
        "total": p.total, "pending": p.pending, "processing": p.processing,
        "completed": p.completed, "failed": p.failed, "deadLetter": p.dead_letters,
    })
}

/// `Admin.get_queue`: the queue and each partition's counts, each the largest over consumer
/// groups (`failed` is 1 while a group's next message waits for the retry of a nack);
/// `totals` sums the partitions.
pub async fn get_queue(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(queue): PathParams<String>,
) -> Result<Json<Value>, ApiError> {
    let Some((q, partitions)) = s.service.queue_detail(&who.tenant, &queue).await? else {
        return Err(ApiError::NotFound("Queue not found".into()));
    };
    let sum = |f: fn(&PartitionStats) -> i64| partitions.iter().map(f).sum::<i64>();
    let totals = json!({
        "total": sum(|p| p.total), "pending": sum(|p| p.pending),
        "processing": sum(|p| p.processing), "completed": sum(|p| p.completed),
        "failed": sum(|p| p.failed), "deadLetter": sum(|p| p.dead_letters),
    });
    let listed: Vec<Value> = partitions
        .iter()
        .map(|p| {
            json!({
                "id": p.id, "name": p.name, "createdAt": millis(p.created_at),
                "stats": stats(p),
                "oldestMessage": p.oldest.map(millis), "newestMessage": p.newest.map(millis),
            })
        })
        .collect();
    Ok(Json(json!({
        "id": q.id, "name": q.name, "namespace": q.namespace, "task": q.task,
        "createdAt": millis(q.created_at), "partitions": listed, "totals": totals,
    })))
}

/// `Admin.get_queue_depth`: a queue's backlog for one consumer group (`?group=`), or for its
/// furthest-behind cursors. Regent does not conflate deliveries, so the work left is the
/// backlog itself (`effectivePending` = `pending`). Only partitions with something pending
/// are listed, so the answer stays small however many partitions the queue has.
pub async fn queue_depth(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(queue): PathParams<String>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let group = p.str("group").filter(|g| !g.is_empty());
    let Some(partitions) = s.service.queue_depth(&who.tenant, &queue, group).await? else {
        return Err(ApiError::NotFound("Queue not found".into()));
    };
    let pending: i64 = partitions.iter().map(|(_, n)| n).sum();
    let listed: Vec<Value> = partitions
        .iter()
        .map(|(partition, n)| json!({ "partition": partition, "pending": n }))
        .collect();
    Ok(Json(json!({
        "queue": queue, "group": group, "pending": pending,
        "partitionsPending": partitions.len(), "conflation": false,
        "effectivePending": pending, "partitions": listed,
    })))
}

/// Idempotent: deleting a queue that does not exist answers `existed: false`.
pub async fn delete_queue(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(queue): PathParams<String>,
) -> Result<Json<Value>, ApiError> {
    let existed = s.service.delete_queue(&who.tenant, &queue).await?;
    Ok(Json(
        json!({ "deleted": true, "queue": queue, "existed": existed }),
    ))
}
