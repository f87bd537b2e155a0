//! `/api/v1/status/*` (spec §13.1–13.5): what Queen's dashboard pages read, from the queue
//! series and the current counts. Fields Queen fills from machinery Regent does not have (an
//! event loop, worker slots, a stats refresh) are `null`, never invented (README, "Status").

use axum::extract::State as AxState;
use axum::{Extension, Json};
use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};

use super::auth::Principal;
use super::configure::echo_options;
use super::error::ApiError;
use super::params::Params;
use super::path::PathParams;
use super::resources::stats_age;
use super::resources::{
    messages_json, page, pagination, queue_summary, stats, stats_age_secs, totals,
};
use super::time::{instant, millis};
use super::State;
use regent_broker::message_status::Status;
use regent_broker::options::QueueOptions;
use regent_service::messages::{Found, ListQuery, Scope};
use regent_service::overview::{Counts, Filter};
use regent_service::queues::Listing;
use regent_service::status::Window;

pub(super) fn filter(p: &Params) -> Filter<'_> {
    let some = |k| p.str(k).filter(|v: &&str| !v.is_empty());
    Filter {
        queue: some("queue"),
        namespace: some("namespace"),
        task: some("task"),
    }
}

/// `from`/`to` as sent, else `to` now and `from` that long before it.
pub(crate) fn window(
    p: &Params,
    default: Duration,
    bucket: Option<i32>,
) -> Result<Window, ApiError> {
    let to = instant(p, "to")?.unwrap_or_else(Utc::now);
    let from = instant(p, "from")?.unwrap_or(to - default);
    if from >= to {
        return Err(ApiError::bad_request("from must be before to"));
    }
    Ok(Window::new(from, to, bucket))
}

pub(super) fn time_range(w: &Window) -> Value {
    json!({ "from": millis(w.from), "to": millis(w.to) })
}

fn point(at: DateTime<Utc>, c: &Counts, w: &Window) -> Value {
    let secs = (w.bucket_minutes as f64) * 60.0;
    json!({
        "timestamp": millis(at),
        "ingested": c.pushed, "processed": c.completed, "popMessages": c.delivered,
        "ingestedPerSecond": c.pushed as f64 / secs,
        "processedPerSecond": c.completed as f64 / secs,
        "popPerSecond": c.delivered as f64 / secs,
        "ackFailed": c.failed, "dlqCount": c.dead_lettered, "expired": c.expired,
        "avgLagMs": null, "maxLagMs": null, "avgEventLoopLagMs": null, "maxEventLoopLagMs": null,
        "minFreeSlots": null, "dbErrors": null, "queenCpuUserPct": null, "queenCpuSysPct": null,
        "queenRssMb": null, "dbPoolActive": null, "dbPoolIdle": null, "dbPoolSize": null,
    })
}

/// `Admin.get_status`: the window's throughput (newest bucket first), each queue's share,
/// and the counts, leases and dead letters now.
pub async fn status(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let w = window(&p, Duration::hours(1), None)?;
    let st = s.service.status(&who.tenant, &filter(&p), w).await?;
    let throughput: Vec<Value> = st.points.iter().map(|(at, c)| point(*at, c, &w)).collect();
    let queues: Vec<Value> = st
        .queues
        .iter()
        .map(|q| {
            json!({
                "id": q.id, "name": q.name, "namespace": q.namespace, "task": q.task,
                "partitions": q.partitions, "totalConsumed": q.counts.completed,
            })
        })
        .collect();
    let mut messages = messages_json(&st.now.messages);
    messages["deadLetter"] = json!(st.now.dead_letters);
    messages["requests"] = json!({"push": null, "pop": null, "ack": null});
    messages["batchEfficiency"] = json!({"push": null, "pop": null, "ack": null});
    let sum = |f: fn(&Counts) -> i64| st.points.iter().map(|(_, c)| f(c)).sum::<i64>();
    let top: Vec<Value> = st
        .dead
        .top_errors
        .iter()
        .map(|(error, count)| json!({ "error": error, "count": count }))
        .collect();
    // A Regent extension: the backlog as the stats rounds counted it, for the depth and lag
    // charts (`null` when filtered: it is kept per tenant).
    let depth = st.depth.as_ref().map(|points| {
        points
            .iter()
            .map(|d| {
                json!({
                    "timestamp": millis(d.at), "pending": d.pending, "processing": d.processing,
                    "deadLetter": d.dead_letters, "lagMessages": d.lag_messages,
                    "maxTimeLagSeconds": d.max_time_lag,
                })
            })
            .collect::<Vec<Value>>()
    });
    Ok(Json(json!({
        "timeRange": time_range(&w), "bucketMinutes": w.bucket_minutes, "pointCount": w.points(),
        "throughput": throughput, "depth": depth, "queues": queues, "messages": messages,
        "leases": {
            "active": st.leases.active, "partitionsWithLeases": st.leases.partitions,
            "totalBatchSize": st.leases.messages, "totalAcked": sum(|c| c.completed),
        },
        "deadLetterQueue": {
            "totalMessages": st.dead.total, "affectedPartitions": st.dead.partitions,
            "topErrors": top,
        },
        "workers": [],
        "errors": {
            "dbErrors": null, "ackFailed": sum(|c| c.failed),
            "dlqMessages": sum(|c| c.dead_lettered),
        },
        "statsAge": stats_age_secs(st.now.stats_age),
    })))
}

/// The queue statistics' namespace, task and page.
pub(crate) fn queues_listing(p: &Params) -> Listing<'_> {
    let f = filter(p);
    Listing {
        search: None,
        namespace: f.namespace,
        task: f.task,
        limit: p.int("limit").unwrap_or(100).clamp(1, 1000),
        offset: p.int("offset").unwrap_or(0).max(0),
    }
}

/// `Admin.get_queue_stats`: a page of queues (`namespace`, `task`, `limit` 100, `offset`).
pub async fn queues(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let listing = queues_listing(&p);
    let rows = s.service.list_queues(&who.tenant, &listing).await?;
    let queues: Vec<Value> = rows.iter().map(queue_summary).collect();
    Ok(Json(json!({
        "queues": queues,
        "pagination": { "limit": listing.limit, "offset": listing.offset },
    })))
}

/// `Admin.get_queue_detail`: the queue, its configuration, a page of its partitions
/// counted now and its totals from the stats snapshot.
pub async fn queue(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(name): PathParams<String>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let page = page(&p);
    let Some(d) = s.service.queue_detail(&who.tenant, &name, page).await? else {
        return Err(ApiError::NotFound("Queue not found".into()));
    };
    let (q, o) = (&d.row, QueueOptions::from_stored(&d.row.options));
    let partitions: Vec<Value> = d
        .partitions
        .iter()
        .map(|p| {
            json!({
                "id": p.id, "name": p.name, "createdAt": millis(p.created_at),
                "messages": stats(p), "stats": stats(p),
                "cursor": { "totalConsumed": p.completed, "batchesConsumed": null },
                "lastActivity": p.newest.map(millis),
                "oldestMessage": p.oldest.map(millis), "newestMessage": p.newest.map(millis),
            })
        })
        .collect();
    let mut flat = totals(&d.totals);
    flat["messages"] = totals(&d.totals);
    Ok(Json(json!({
        "queue": {
            "id": q.id, "name": q.name, "namespace": q.namespace, "task": q.task,
            "priority": o.priority(), "createdAt": millis(q.created_at),
            "config": {
                "leaseTime": o.lease_seconds(), "retryLimit": o.retry_limit(),
                "retryDelay": o.retry_delay_ms(), "ttl": o.ttl_seconds(),
                "maxQueueSize": o.max_size(), "deadLetterQueue": o.dead_letter_enabled(),
            },
            // A Regent extension: every option as `configure` echoes it, so a client that
            // edits one (the console) can send the others back unchanged.
            "options": echo_options(&o),
        },
        "partitions": partitions,
        "totals": flat,
        "pagination": pagination(page, d.totals.partitions),
        "statsAge": stats_age(d.totals.refreshed_at),
    })))
}

/// A message's status as queue mode sees it: dead-lettered, else by its cursor.
fn queue_view(f: &Found) -> &'static str {
    match f.dead {
        Some(_) => Status::DeadLetter.name(),
        None => f.seen.queue_status.name(),
    }
}

/// The queue's messages up to `now`, a page (`limit` 50, `offset`).
pub(crate) fn queue_messages_query<'a>(
    name: &'a str,
    p: &Params,
    now: DateTime<Utc>,
) -> ListQuery<'a> {
    ListQuery {
        scope: Scope {
            queue: Some(name),
            partition: None,
            namespace: None,
            task: None,
            from: DateTime::<Utc>::UNIX_EPOCH,
            to: now,
        },
        status: None,
        limit: p.int("limit").unwrap_or(50).clamp(1, 1000),
        offset: p.int("offset").unwrap_or(0).max(0),
    }
}

/// A top-level array, newest first, with the status queue mode's cursor gives each message
/// (`limit` 50, `offset`).
pub async fn queue_messages(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    PathParams(name): PathParams<String>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let q = queue_messages_query(&name, &p, Utc::now());
    let found = s.service.list_messages(&who.tenant, &q).await?;
    Ok(Json(
        found
            .iter()
            .map(|f| {
                let (m, pl) = (&f.message.message, &f.place);
                json!({
                    "id": m.message_id, "transactionId": m.transaction_id,
                    "partitionId": pl.partition_id,
                    "queuePath": format!("{}/{}", pl.queue, pl.partition), "queue": pl.queue,
                    "partition": pl.partition, "status": queue_view(f),
                    "createdAt": millis(f.message.created_at),
                })
            })
            .collect(),
    ))
}

/// The analytics' bucket name and window.
pub(crate) fn analytics_window(p: &Params) -> Result<(&'static str, Window), ApiError> {
    let (interval, minutes) = match p.str("interval") {
        Some("minute") => ("minute", 1),
        Some("day") => ("day", 1440),
        _ => ("hour", 60),
    };
    Ok((interval, window(p, Duration::hours(24), Some(minutes))?))
}

/// `Admin.get_analytics`: messages pushed per bucket (`interval` minute, hour (default) or
/// day) over the window (the last 24 hours by default).
pub async fn analytics(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let (interval, w) = analytics_window(&p)?;
    let points = s.service.series(&who.tenant, &filter(&p), w, false).await?;
    let data: Vec<Value> = points
        .iter()
        .map(|(at, _, c)| json!({ "timestamp": millis(*at), "messages": c.pushed }))
        .collect();
    Ok(Json(json!({
        "dataPoints": data, "interval": interval,
        "from": millis(w.from), "to": millis(w.to),
    })))
}
