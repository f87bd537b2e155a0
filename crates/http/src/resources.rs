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
use regent_service::overview::{Label, Messages, Spread, THROUGHPUT_SPAN};
use regent_service::queues::{Cleared, Listing, Page, PartitionStats, QueueSummary, QueueTotals};

pub async fn list_queues(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let listing = listing(&p);
    let rows = s.service.list_queues(&who.tenant, &listing).await?;
    let queues: Vec<Value> = rows.iter().map(queue_summary).collect();
    Ok(Json(json!({ "queues": queues })))
}

/// The queue listing's search and page.
pub(crate) fn listing(p: &Params) -> Listing<'_> {
    let Page { limit, offset } = page(p);
    Listing {
        search: p.str("search"),
        limit,
        offset,
        ..Listing::default()
    }
}

/// The span a listed queue's rates are over, in seconds (the overview's).
const RECENT_SECS: f64 = THROUGHPUT_SPAN.as_secs() as f64;

/// One queue of a listing, as both queue listings answer it.
pub(super) fn queue_summary(r: &QueueSummary) -> Value {
    json!({
        "id": r.queue.id, "name": r.queue.name, "namespace": r.queue.namespace,
        "task": r.queue.task, "createdAt": millis(r.queue.created_at),
        "partitions": r.partitions,
        "messages": {
            "total": r.total, "pending": r.pending, "processing": r.processing,
            "deadLetter": r.dead_letters,
        },
        // A Regent extension, the overview's rates for one queue: its last 5 minutes.
        "throughput": {
            "ingestedPerSecond": r.pushed_recently as f64 / RECENT_SECS,
            "processedPerSecond": r.completed_recently as f64 / RECENT_SECS,
        },
    })
}

/// A partition's six counts, as the queue pages show them.
pub(super) fn stats(p: &PartitionStats) -> Value {
    json!({
        "total": p.total, "pending": p.pending, "processing": p.processing,
        "completed": p.completed, "failed": p.failed, "deadLetter": p.dead_letters,
    })
}

/// The six counts over every partition, from the stats snapshot.
pub(super) fn totals(t: &QueueTotals) -> Value {
    json!({
        "total": t.total, "pending": t.pending, "processing": t.processing,
        "completed": t.completed, "failed": t.failed, "deadLetter": t.dead_letters,
    })
}

/// Seconds since a round counted it; -1 when none has.
pub(super) fn stats_age(at: Option<chrono::DateTime<chrono::Utc>>) -> Value {
    stats_age_secs(at.map(|t| (chrono::Utc::now() - t).num_milliseconds() as f64 / 1000.0))
}

/// Whole seconds, as Queen's `statsAge`; -1 for never.
pub(super) fn stats_age_secs(age: Option<f64>) -> Value {
    match age {
        Some(secs) => json!(secs.max(0.0).floor() as i64),
        None => json!(-1),
    }
}

/// The page of a listing asked for: `limit` (1,000 by default, at most 10,000) from
/// `offset`.
pub(super) fn page(p: &Params) -> Page {
    Page {
        limit: p.int("limit").unwrap_or(1000).clamp(1, 10_000),
        offset: p.int("offset").unwrap_or(0).max(0),
    }
}

/// `Admin.get_queue`: the queue, a page of its partitions with their counts counted now
/// (each the largest over consumer groups; `failed` is 1 while a group's next message waits
/// for the retry of a nack), and `totals` over every partition from the stats snapshot.
pub async fn get_queue(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(queue): PathParams<String>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let page = page(&p);
    let Some(d) = s.service.queue_detail(&who.tenant, &queue, page).await? else {
        return Err(ApiError::NotFound("Queue not found".into()));
    };
    let listed: Vec<Value> = d
        .partitions
        .iter()
        .map(|p| {
            json!({
                "id": p.id, "name": p.name, "createdAt": millis(p.created_at),
                "stats": stats(p),
                "oldestMessage": p.oldest.map(millis), "newestMessage": p.newest.map(millis),
            })
        })
        .collect();
    let q = &d.row;
    Ok(Json(json!({
        "id": q.id, "name": q.name, "namespace": q.namespace, "task": q.task,
        "createdAt": millis(q.created_at), "partitions": listed, "totals": totals(&d.totals),
        "pagination": pagination(page, d.totals.partitions),
        "statsAge": stats_age(d.totals.refreshed_at),
    })))
}

/// Where a page of partitions sits among all of them (`total` from the stats snapshot).
pub(super) fn pagination(page: Page, total: i64) -> Value {
    json!({ "limit": page.limit, "offset": page.offset, "total": total })
}

/// `Admin.get_queue_depth`: a queue's backlog for one consumer group (`?group=`), or for its
/// furthest-behind cursors, from the stats snapshot. Regent does not conflate deliveries,
/// so the work left is the backlog itself (`effectivePending` = `pending`). The partitions
/// listed are the 100 with the most pending, most first.
pub async fn queue_depth(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(queue): PathParams<String>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let group = p.str("group").filter(|g| !g.is_empty());
    let Some(d) = s.service.queue_depth(&who.tenant, &queue, group).await? else {
        return Err(ApiError::NotFound("Queue not found".into()));
    };
    let listed: Vec<Value> = d
        .top
        .iter()
        .map(|(partition, n)| json!({ "partition": partition, "pending": n }))
        .collect();
    Ok(Json(json!({
        "queue": queue, "group": group, "pending": d.pending,
        "partitionsPending": d.partitions_pending, "conflation": false,
        "effectivePending": d.pending, "partitions": listed,
        "statsAge": if group.is_some() && d.refreshed_at.is_none() { json!(0) }
                    else { stats_age(d.refreshed_at) },
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

/// `Admin.get_overview`: the tenant's queues, partitions and messages at a glance, from the
/// stats snapshot (`statsAge` seconds old); throughput is the last 5 minutes of the series.
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
        "timestamp": millis(chrono::Utc::now()), "statsAge": stats_age_secs(o.stats_age),
    })))
}

async fn rollup(
    s: &super::AppState,
    tenant: &str,
    by: Label,
    page: Page,
) -> Result<Vec<Value>, ApiError> {
    let key = match by {
        Label::Namespace => "namespace",
        Label::Task => "task",
    };
    Ok(s.service
        .rollup(tenant, by, page)
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

/// A page (`limit` 1,000, `offset`) of the tenant's namespaces, by name.
pub async fn namespaces(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let listed = rollup(&s, &who.tenant, Label::Namespace, page(&p)).await?;
    Ok(Json(json!({ "namespaces": listed })))
}

/// A page (`limit` 1,000, `offset`) of the tenant's tasks, by name.
pub async fn tasks(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let listed = rollup(&s, &who.tenant, Label::Task, page(&p)).await?;
    Ok(Json(json!({ "tasks": listed })))
}

/// The partition listing's queue (`None`: every queue), limit and offset.
pub(crate) fn partitions_query(p: &Params) -> (Option<&str>, i64, i64) {
    let limit = p.int("limit").unwrap_or(100).clamp(1, 1000);
    let offset = p.int("offset").unwrap_or(0).max(0);
    (p.str("queue").filter(|q| !q.is_empty()), limit, offset)
}

/// `Admin.get_partitions`: a page of partitions (`?queue=`, `limit` 100 by default, at most
/// 1,000, `offset`), by queue then partition name, with `total`.
pub async fn partitions(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let (queue, limit, offset) = partitions_query(&p);
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
