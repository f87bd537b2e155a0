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
use regent_service::overview::{Label, Messages, Spread};
use regent_service::queues::{Cleared, Listing, PartitionStats, QueueSummary};

pub async fn list_queues(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let listing = Listing {
        search: p.str("search"),
        limit: p.int("limit").unwrap_or(1000).clamp(1, 10_000),
        offset: p.int("offset").unwrap_or(0).max(0),
        ..Listing::default()
    };
    let rows = s.service.list_queues(&who.tenant, &listing).await?;
    let queues: Vec<Value> = rows.iter().map(queue_summary).collect();
    Ok(Json(json!({ "queues": queues })))
}

/// One queue of a listing, as both queue listings answer it.
pub(super) fn queue_summary(r: &QueueSummary) -> Value {
    json!({
        "id": r.queue.id, "name": r.queue.name, "namespace": r.queue.namespace,
        "task": r.queue.task, "createdAt": millis(r.queue.created_at),
        "partitions": r.partitions,
        "messages": { "total": r.total, "pending": r.pending, "processing": r.processing },
    })
}

/// A partition's six counts, as the queue pages show them.
pub(super) fn stats(p: &PartitionStats) -> Value {
    json!({
        "total": p.total, "pending": p.pending, "processing": p.processing,
        "completed": p.completed, "failed": p.failed, "deadLetter": p.dead_letters,
    })
}

/// The six counts summed over the partitions.
pub(super) fn totals(parts: &[PartitionStats]) -> Value {
    let sum = |f: fn(&PartitionStats) -> i64| parts.iter().map(f).sum::<i64>();
    json!({
        "total": sum(|p| p.total), "pending": sum(|p| p.pending),
        "processing": sum(|p| p.processing), "completed": sum(|p| p.completed),
        "failed": sum(|p| p.failed), "deadLetter": sum(|p| p.dead_letters),
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
    let totals = totals(&partitions);
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

pub(super) fn messages_json(m: &Messages) -> Value {
    json!({
        "total": m.total, "pending": m.pending, "processing": m.processing,
        "completed": m.completed, "failed": m.failed,
    })
}

fn spread(s: &Spread) -> Value {
    json!({ "avg": s.avg, "median": s.median, "min": s.min, "max": s.max })
}

/// `Admin.get_overview`: the tenant's queues, partitions and messages at a glance. Regent
/// counts when asked, so `statsAge` is 0; throughput is the last 5 minutes of the series.
pub async fn overview(
    AxState(s): State,
    Extension(who): Extension<Principal>,
) -> Result<Json<Value>, ApiError> {
    let (o, t) = s.service.overview(&who.tenant).await?;
    let mut counts = messages_json(&o.messages);
    counts["deadLetter"] = json!(o.dead_letters);
    Ok(Json(json!({
        "queues": o.queues, "partitions": o.partitions,
        "namespaces": o.namespaces, "tasks": o.tasks,
        "messages": counts,
        "lag": { "time": spread(&o.time_lag), "offset": spread(&o.offset_lag) },
        "throughput": { "ingestedPerSecond": t.ingested, "processedPerSecond": t.processed },
        "timestamp": millis(chrono::Utc::now()), "statsAge": 0,
    })))
}

async fn rollup(s: &super::AppState, tenant: &str, by: Label) -> Result<Vec<Value>, ApiError> {
    let key = match by {
        Label::Namespace => "namespace",
        Label::Task => "task",
    };
    Ok(s.service
        .rollup(tenant, by)
        .await?
        .iter()
        .map(|r| {
            json!({
                key: r.name, "queues": r.queues, "partitions": r.partitions,
                "messages": { "total": r.messages.total, "pending": r.messages.pending },
            })
        })
        .collect())
}

pub async fn namespaces(
    AxState(s): State,
    Extension(who): Extension<Principal>,
) -> Result<Json<Value>, ApiError> {
    let listed = rollup(&s, &who.tenant, Label::Namespace).await?;
    Ok(Json(json!({ "namespaces": listed })))
}

pub async fn tasks(
    AxState(s): State,
    Extension(who): Extension<Principal>,
) -> Result<Json<Value>, ApiError> {
    let listed = rollup(&s, &who.tenant, Label::Task).await?;
    Ok(Json(json!({ "tasks": listed })))
}

/// `Admin.get_partitions`: a page of partitions (`?queue=`, `limit` 100 by default, at most
/// 1,000, `offset`), by queue then partition name, with `total`.
pub async fn partitions(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let limit = p.int("limit").unwrap_or(100).clamp(1, 1000);
    let offset = p.int("offset").unwrap_or(0).max(0);
    let queue = p.str("queue").filter(|q| !q.is_empty());
    let (page, total) = s
        .service
        .partitions(&who.tenant, queue, limit, offset)
        .await?;
    let listed: Vec<Value> = page
        .iter()
        .map(|p| {
            json!({
                "id": p.id, "name": p.name, "queue": p.queue,
                "createdAt": millis(p.created_at), "lastActivity": p.last_push_at.map(millis),
                "messages": messages_json(&p.messages),
            })
        })
        .collect();
    Ok(Json(json!({
        "partitions": listed, "total": total,
        "pagination": { "limit": limit, "offset": offset },
    })))
}

/// `Admin.clear_queue`: every message of the queue (or of `?partition=`) deleted, its
/// cursors moved to the end with their leases released. Dead letters and the transaction
/// index stay (README, "Clearing a queue").
pub async fn clear_queue(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(queue): PathParams<String>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let partition = p.str("partition").filter(|p| !p.is_empty());
    match s
        .service
        .clear_queue(&who.tenant, &queue, partition)
        .await?
    {
        Cleared::NoQueue => Err(ApiError::NotFound("Queue not found".into())),
        Cleared::NoPartition => Err(ApiError::NotFound("Partition not found".into())),
        Cleared::Deleted(n) => Ok(Json(json!({
            "success": true, "queue": queue, "partition": partition, "deleted": n,
        }))),
    }
}
