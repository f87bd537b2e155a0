//! The backlog over time, as the stats rounds counted it, so the console can chart depth
//! and lag over the last hour: per tenant every round (`depth_minutes`), and per queue only
//! when its figures changed (`queue_depth_minutes`, carried forward by the reader). A level,
//! not a sum: a minute's row is the last round of that minute, and a bucket of several
//! minutes shows its latest minute.

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use tokio_postgres::Row;

use crate::sql::depth_history::{
    EXPIRE_QUEUES, EXPIRE_TENANTS, READ, READ_QUEUE, RECORD, RECORD_QUEUES,
};
use crate::{series, StoreError, Tx};

/// The backlog of a tenant at one minute (or the latest minute of a bucket).
#[derive(Clone, Debug, PartialEq)]
pub struct DepthPoint {
    pub at: DateTime<Utc>,
    pub pending: i64,
    pub processing: i64,
    pub dead_letters: i64,
    pub lag_messages: i64,
    pub max_time_lag: f64,
}

/// Writes every tenant's totals from the snapshot the round just wrote (in its
/// transaction): one statement, the queue and group rows summed per tenant.
pub async fn record(tx: &Tx<'_>) -> Result<(), StoreError> {
    let st = tx.prepare_cached(RECORD).await?;
    tx.execute(&st, &[]).await?;
    Ok(())
}

/// Writes a row for each of these queues (just recounted, in the round's transaction)
/// whose figures differ from its latest row: a queue that did not change writes nothing.
pub async fn record_queues(tx: &Tx<'_>, queues: &[uuid::Uuid]) -> Result<(), StoreError> {
    let st = tx.prepare_cached(RECORD_QUEUES).await?;
    tx.execute(&st, &[&queues]).await?;
    Ok(())
}

fn point(r: &Row) -> DepthPoint {
    DepthPoint {
        at: r.get("bucket"),
        pending: r.get("pending"),
        processing: r.get("processing"),
        dead_letters: r.get("dead_letters"),
        lag_messages: r.get("lag_messages"),
        max_time_lag: r.get("max_time_lag"),
    }
}

/// One queue's backlog over [from, to), newest first: a point per bucket with a row in it
/// (its latest), and, when the queue's latest row before `from` is older, that row as of
/// `from` (the figures held since). `max_time_lag` is not kept per queue: 0.
pub async fn read_queue(
    client: &Client,
    queue_id: uuid::Uuid,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    bucket_minutes: i32,
) -> Result<Vec<DepthPoint>, StoreError> {
    let st = client.prepare_cached(READ_QUEUE).await?;
    let rows = client
        .query(&st, &[&queue_id, &from, &to, &bucket_minutes])
        .await?;
    // The carried row and a row of the first bucket both say `from`: the bucket's wins.
    let mut points: Vec<DepthPoint> = rows.iter().map(point).collect();
    points.dedup_by(|later, kept| later.at == kept.at);
    Ok(points)
}

/// The tenant's backlog over [from, to), a point per bucket of `bucket_minutes` with a
/// round in it (its latest minute's), newest first.
pub async fn read(
    client: &Client,
    tenant: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    bucket_minutes: i32,
) -> Result<Vec<DepthPoint>, StoreError> {
    let st = client.prepare_cached(READ).await?;
    let rows = client
        .query(&st, &[&tenant, &from, &to, &bucket_minutes])
        .await?;
    Ok(rows.iter().map(point).collect())
}

/// Deletes up to `limit` minutes older than `before` of the tenants' and of the queues'
/// rows each, in the caller's transaction; the most of either that went.
pub async fn expire(tx: &Tx<'_>, before: DateTime<Utc>, limit: i64) -> Result<i64, StoreError> {
    let tenants = series::expire_minutes(tx, EXPIRE_TENANTS, before, limit).await?;
    let queues = series::expire_minutes(tx, EXPIRE_QUEUES, before, limit).await?;
    Ok(tenants.max(queues))
}
