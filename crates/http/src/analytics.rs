//! `/api/v1/analytics/queue-{ops,lag}` and `/retention` (spec §13.7): the queue series per
//! queue and bucket; and `/queue-parked-replicas`, the tenant's parked pops per queue and
//! broker from the fleet's samples. The fleet's own series (system and worker metrics) live
//! with the fleet samples.

use std::collections::{BTreeMap, BTreeSet};

use axum::extract::State as AxState;
use axum::{Extension, Json};
use chrono::Duration;
use serde_json::{json, Value};

use super::auth::Principal;
use super::error::ApiError;
use super::params::Params;
use super::status::{filter, time_range, window};
use super::time::{instant, millis};
use super::State;
use regent_service::fleet::Window;
use regent_service::overview::Counts;

fn ops(c: &Counts) -> Value {
    json!({
        "push": c.pushed, "pop": c.delivered, "ack": c.completed, "nack": c.failed,
        "dlq": c.dead_lettered, "expired": c.expired,
    })
}

/// Operations per queue and bucket (newest bucket last), and each queue's totals.
pub async fn queue_ops(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let w = window(&p, Duration::hours(1), None)?;
    let rows = s.service.series(&who.tenant, &filter(&p), w, true).await?;
    let series: Vec<Value> = rows
        .iter()
        .map(|(at, queue, c)| {
            let mut v = ops(c);
            v["timestamp"] = json!(millis(*at));
            v["queue"] = json!(queue);
            v
        })
        .collect();
    let mut totals: BTreeMap<&str, Counts> = BTreeMap::new();
    for (_, queue, c) in &rows {
        totals
            .entry(queue.as_deref().unwrap_or_default())
            .or_default()
            .add(c);
    }
    let queues: Vec<Value> = totals
        .iter()
        .map(|(queue, c)| {
            let mut v = ops(c);
            v["queue"] = json!(queue);
            v
        })
        .collect();
    Ok(Json(json!({
        "timeRange": time_range(&w), "bucketMinutes": w.bucket_minutes,
        "series": series, "queues": queues,
    })))
}

/// How long delivered messages waited after their append, per queue and bucket (an array,
/// as Queen answers): pops (messages delivered), average and longest wait.
pub async fn queue_lag(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let w = window(&p, Duration::hours(1), None)?;
    let rows = s.service.series(&who.tenant, &filter(&p), w, true).await?;
    Ok(Json(
        rows.iter()
            .filter(|(_, _, c)| c.delivered > 0)
            .map(|(at, queue, c)| {
                json!({
                    "queueName": queue, "popCount": c.delivered,
                    "avgLagMs": c.lag_ms_sum as f64 / c.delivered as f64,
                    "maxLagMs": c.lag_ms_max, "bucketTime": millis(*at),
                })
            })
            .collect(),
    ))
}

/// Messages deleted by retention per bucket. Regent deletes by whichever rule is due first
/// and does not count the rules apart: the total is `expired`, the per-rule keys are `null`.
pub async fn retention(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let w = window(&p, Duration::hours(24), None)?;
    let points = s.service.series(&who.tenant, &filter(&p), w, false).await?;
    let series: Vec<Value> = points
        .iter()
        .filter(|(_, _, c)| c.expired > 0)
        .map(|(at, _, c)| {
            json!({
                "timestamp": millis(*at), "expired": c.expired, "retention": null,
                "completed_retention": null, "max_wait_time_eviction": null,
            })
        })
        .collect();
    let expired: i64 = points.iter().map(|(_, _, c)| c.expired).sum();
    Ok(Json(json!({
        "timeRange": time_range(&w), "bucketMinutes": w.bucket_minutes, "series": series,
        "totals": { "expired": expired, "retention": null, "completed_retention": null,
                    "max_wait_time_eviction": null },
    })))
}

/// The parked pops' window (the last hour by default) and queue (`None`: every queue).
pub(crate) fn parked_query(p: &Params) -> Result<(Window, Option<&str>), ApiError> {
    let w = Window::new(instant(p, "from")?, instant(p, "to")?, None, None)?;
    Ok((w, p.str("queue").filter(|q| !q.is_empty())))
}

/// Long-polling pops parked per queue and broker (replica) over the window: each bucket's
/// average over the broker's samples and the most in one sample, oldest bucket first; and the
/// brokers that appear (`replicas`). Only the caller's tenant's queues are read.
pub async fn queue_parked_replicas(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let (w, queue) = parked_query(&p)?;
    let points = s.service.parked_replicas(&who.tenant, queue, &w).await?;
    let series: Vec<Value> = points
        .iter()
        .map(|pt| {
            json!({
                "bucket": millis(pt.bucket), "queueName": pt.queue,
                "hostname": pt.hostname, "port": pt.port, "workerId": pt.broker_id.to_string(),
                "parkedCount": (pt.avg * 100.0).round() / 100.0, "maxParkedCount": pt.max,
            })
        })
        .collect();
    let replicas: BTreeSet<(&str, i32, String)> = points
        .iter()
        .map(|pt| (pt.hostname.as_str(), pt.port, pt.broker_id.to_string()))
        .collect();
    let replicas: Vec<Value> = replicas
        .into_iter()
        .map(|(hostname, port, id)| json!({ "hostname": hostname, "port": port, "workerId": id }))
        .collect();
    Ok(Json(json!({
        "timeRange": { "from": millis(w.from), "to": millis(w.to) },
        "bucketMinutes": w.bucket_minutes(), "series": series, "replicas": replicas,
    })))
}
