//! `/api/v1/analytics/queue-{ops,lag}` and `/retention` (spec §13.7): the queue series per
//! queue and bucket; and `/queue-parked-replicas`, the tenant's parked pops per queue and
//! broker from the fleet's samples. The fleet's own series (system and worker metrics) live
//! with the fleet samples (`fleet.rs`), under the same tag.

use std::collections::{BTreeMap, BTreeSet};

use axum::extract::State as AxState;
use axum::http::Method;
use axum::Extension;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::answer::{Answer, Millis, Null};
use super::auth::Principal;
use super::error::ApiError;
use super::openapi::{Doc, Tag};
use super::params::Params;
use super::routes::{route, Entry, Level::*};
use super::status::{series_query, QueueFilter, WINDOW_FAILS, WINDOW_SEED};
use super::time::{TimeRange, WindowQuery};
use super::State;
use regent_service::fleet::Window;
use regent_service::overview::Counts;

pub(crate) const TAG: Tag = (
    "analytics",
    "Time series: the per-minute queue series per queue and bucket and the parked pops per queue and broker (the caller's tenant's queues), and the fleet's samples and PostgreSQL's statistics (admin).",
);

pub(crate) fn routes() -> Vec<Entry> {
    use Method as M;
    let op = |summary| Doc::op(TAG, summary);
    vec![
        route(M::GET, "/api/v1/analytics/queue-lag", ReadOnly, queue_lag)
            .doc(op("Delivery waits per queue and bucket").query_of::<WindowQuery<1>>().query_of::<QueueFilter>()
                .fails(400, WINDOW_FAILS)
                .answers::<Vec<LagPoint>>(200, "The waits."))
            .reads_request(&[WINDOW_SEED], |p: Params| async move { series_query::<1>(&p).map(drop) }),
        route(M::GET, "/api/v1/analytics/queue-ops", ReadOnly, queue_ops)
            .doc(op("Operations per queue and bucket").query_of::<WindowQuery<1>>().query_of::<QueueFilter>()
                .fails(400, WINDOW_FAILS)
                .answers::<QueueOps>(200, "The series."))
            .reads_request(&[WINDOW_SEED], |p: Params| async move { series_query::<1>(&p).map(drop) }),
        // The tenant's queues only, though the counts come from the fleet's samples.
        route(M::GET, "/api/v1/analytics/queue-parked-replicas", ReadOnly, queue_parked_replicas)
            .doc(op("Parked long-polls per queue and broker").query_of::<WindowQuery<1>>()
                .query_of::<ParkedFilter>()
                .fails(400, "`from must not be after to`, `from must be an ISO-8601 timestamp`, `to must be an ISO-8601 timestamp`.")
                .answers::<ParkedReplicas>(200, "The series."))
            .reads_request(&["?from=2026-01-01T00:00:00Z&to=2026-01-01T06:00:00Z&queue=q"], |p: Params| async move {
                parked_query(&p).map(drop)
            }),
        route(M::GET, "/api/v1/analytics/retention", ReadOnly, retention)
            .doc(op("Messages deleted by retention").query_of::<WindowQuery<24>>().query_of::<QueueFilter>()
                .fails(400, WINDOW_FAILS)
                .answers::<RetentionSeries>(200, "The series."))
            .reads_request(&[WINDOW_SEED], |p: Params| async move { series_query::<24>(&p).map(drop) }),
    ]
}

/// Operations in one bucket or window.
#[derive(Serialize, JsonSchema)]
struct QueueOpCounts {
    /// Messages pushed.
    push: i64,
    /// Messages delivered.
    pop: i64,
    /// Messages passed by a cursor.
    ack: i64,
    /// Nacks.
    nack: i64,
    /// Dead letters filed.
    dlq: i64,
    /// Deleted by retention or eviction.
    expired: i64,
}

impl From<&Counts> for QueueOpCounts {
    fn from(c: &Counts) -> QueueOpCounts {
        QueueOpCounts {
            push: c.pushed,
            pop: c.delivered,
            ack: c.completed,
            nack: c.failed,
            dlq: c.dead_lettered,
            expired: c.expired,
        }
    }
}

/// `GET /api/v1/analytics/queue-ops`.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct QueueOps {
    time_range: TimeRange,
    bucket_minutes: i32,
    /// Per queue and bucket, oldest bucket first.
    series: Vec<QueueOpsPoint>,
    /// Each queue's totals over the window.
    queues: Vec<QueueOpsTotal>,
}

/// One queue's operations in one bucket.
#[derive(Serialize, JsonSchema)]
struct QueueOpsPoint {
    /// The bucket's start.
    timestamp: Millis,
    queue: Option<String>,
    #[serde(flatten)]
    ops: QueueOpCounts,
}

/// One queue's operations over the window.
#[derive(Serialize, JsonSchema)]
struct QueueOpsTotal {
    queue: String,
    #[serde(flatten)]
    ops: QueueOpCounts,
}

/// Operations per queue and bucket (newest bucket last), and each queue's totals.
async fn queue_ops(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Answer<QueueOps>, ApiError> {
    let (filter, w) = series_query::<1>(&p)?;
    let rows = s.service.series(&who.tenant, &filter, w, true).await?;
    let mut totals: BTreeMap<&str, Counts> = BTreeMap::new();
    for (_, queue, c) in &rows {
        totals
            .entry(queue.as_deref().unwrap_or_default())
            .or_default()
            .add(c);
    }
    Ok(Answer(QueueOps {
        time_range: TimeRange::new(w.from, w.to),
        bucket_minutes: w.bucket_minutes,
        series: rows
            .iter()
            .map(|(at, queue, c)| QueueOpsPoint {
                timestamp: Millis(*at),
                queue: queue.clone(),
                ops: c.into(),
            })
            .collect(),
        queues: totals
            .iter()
            .map(|(queue, c)| QueueOpsTotal {
                queue: queue.to_string(),
                ops: c.into(),
            })
            .collect(),
    }))
}

/// How long one queue's deliveries of one bucket had waited since their append.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct LagPoint {
    queue_name: Option<String>,
    /// Messages delivered.
    pop_count: i64,
    avg_lag_ms: f64,
    max_lag_ms: i64,
    /// The bucket's start.
    bucket_time: Millis,
}

/// How long delivered messages waited after their append, per queue and bucket (an array,
/// as Queen answers): pops (messages delivered), average and longest wait.
async fn queue_lag(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Answer<Vec<LagPoint>>, ApiError> {
    let (filter, w) = series_query::<1>(&p)?;
    let rows = s.service.series(&who.tenant, &filter, w, true).await?;
    Ok(Answer(
        rows.iter()
            .filter(|(_, _, c)| c.delivered > 0)
            .map(|(at, queue, c)| LagPoint {
                queue_name: queue.clone(),
                pop_count: c.delivered,
                avg_lag_ms: c.lag_ms_sum as f64 / c.delivered as f64,
                max_lag_ms: c.lag_ms_max,
                bucket_time: Millis(*at),
            })
            .collect(),
    ))
}

/// `GET /api/v1/analytics/retention`.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct RetentionSeries {
    time_range: TimeRange,
    bucket_minutes: i32,
    /// The buckets with deletions, oldest first.
    series: Vec<ExpiredPoint>,
    totals: ExpiredTotals,
}

/// Messages deleted in one bucket. Queen's per-rule counts are null: Regent deletes by
/// whichever rule is due first and does not count them apart.
#[derive(Serialize, JsonSchema)]
struct ExpiredPoint {
    /// The bucket's start.
    timestamp: Millis,
    expired: i64,
    retention: Null,
    completed_retention: Null,
    max_wait_time_eviction: Null,
}

/// Messages deleted over the window (per-rule counts null, as in each bucket).
#[derive(Serialize, JsonSchema)]
struct ExpiredTotals {
    expired: i64,
    retention: Null,
    completed_retention: Null,
    max_wait_time_eviction: Null,
}

/// Messages deleted by retention per bucket. Regent deletes by whichever rule is due first
/// and does not count the rules apart: the total is `expired`, the per-rule keys are `null`.
async fn retention(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Answer<RetentionSeries>, ApiError> {
    let (filter, w) = series_query::<24>(&p)?;
    let points = s.service.series(&who.tenant, &filter, w, false).await?;
    Ok(Answer(RetentionSeries {
        time_range: TimeRange::new(w.from, w.to),
        bucket_minutes: w.bucket_minutes,
        series: points
            .iter()
            .filter(|(_, _, c)| c.expired > 0)
            .map(|(at, _, c)| ExpiredPoint {
                timestamp: Millis(*at),
                expired: c.expired,
                retention: Null,
                completed_retention: Null,
                max_wait_time_eviction: Null,
            })
            .collect(),
        totals: ExpiredTotals {
            expired: points.iter().map(|(_, _, c)| c.expired).sum(),
            retention: Null,
            completed_retention: Null,
            max_wait_time_eviction: Null,
        },
    }))
}

/// The parked pops' window (the last hour by default) and queue (`None`: every queue).
fn parked_query(p: &Params) -> Result<(Window, Option<&str>), ApiError> {
    let q: WindowQuery<1> = p.read()?;
    let w = Window::new(q.from.get()?, q.to.get()?, None, None)?;
    Ok((w, p.read::<ParkedFilter>()?.queue))
}

/// The parked pops' queue, as [`parked_query`] reads it.
#[derive(Deserialize, JsonSchema)]
struct ParkedFilter<'a> {
    /// Only this queue.
    #[serde(borrow)]
    queue: Option<&'a str>,
}

/// `GET /api/v1/analytics/queue-parked-replicas`.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ParkedReplicas {
    time_range: TimeRange,
    bucket_minutes: i32,
    /// Per bucket, queue and broker, oldest bucket first.
    series: Vec<ParkedPoint>,
    /// The brokers of the series.
    replicas: Vec<Replica>,
}

/// One queue's parked pops on one broker in one bucket.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ParkedPoint {
    /// The bucket's start.
    bucket: Millis,
    queue_name: String,
    hostname: String,
    port: i32,
    /// The broker's id, new at every start.
    worker_id: Uuid,
    /// Average parked pops over the broker's samples of the bucket.
    parked_count: f64,
    /// The most parked in one sample.
    max_parked_count: i64,
}

/// A broker (replica): where it serves, and its id.
#[derive(Serialize, JsonSchema, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "camelCase")]
struct Replica {
    hostname: String,
    port: i32,
    /// The broker's id, new at every start.
    worker_id: Uuid,
}

/// Long-polling pops parked per queue and broker (replica) over the window: each bucket's
/// average over the broker's samples and the most in one sample, oldest bucket first; and the
/// brokers that appear (`replicas`). Only the caller's tenant's queues are read.
async fn queue_parked_replicas(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Answer<ParkedReplicas>, ApiError> {
    let (w, queue) = parked_query(&p)?;
    let points = s
        .service
        .fleet()
        .parked_replicas(&who.tenant, queue, &w)
        .await?;
    let replicas: BTreeSet<Replica> = points
        .iter()
        .map(|pt| Replica {
            hostname: pt.hostname.clone(),
            port: pt.port,
            worker_id: pt.broker_id,
        })
        .collect();
    Ok(Answer(ParkedReplicas {
        time_range: TimeRange::new(w.from, w.to),
        bucket_minutes: w.bucket_minutes(),
        series: points
            .into_iter()
            .map(|pt| ParkedPoint {
                bucket: Millis(pt.bucket),
                queue_name: pt.queue,
                hostname: pt.hostname,
                port: pt.port,
                worker_id: pt.broker_id,
                parked_count: (pt.avg * 100.0).round() / 100.0,
                max_parked_count: pt.max,
            })
            .collect(),
        replicas: replicas.into_iter().collect(),
    }))
}
