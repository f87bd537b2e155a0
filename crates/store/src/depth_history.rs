//! The tenant's backlog per minute (`depth_minutes`): each stats round writes what it
//! counted, so the console can chart depth and lag over the last hour. A level, not a sum:
//! a minute's row is the last round of that minute, and a bucket of several minutes shows
//! its latest minute.

use chrono::{DateTime, Utc};
use deadpool_postgres::{Client, Transaction};
use tokio_postgres::Row;

use crate::StoreError;

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
pub async fn record(tx: &Transaction<'_>) -> Result<(), StoreError> {
    let st = tx
        .prepare_cached(
            "INSERT INTO depth_minutes AS d (tenant, minute, pending, processing, dead_letters,
                                             lag_messages, max_time_lag)
             SELECT s.tenant, date_trunc('minute', now()), sum(s.pending)::bigint,
                    sum(s.processing)::bigint, sum(s.dead_letters)::bigint,
                    coalesce(sum(g.lag), 0)::bigint, max(s.time_lag_max)
               FROM queue_stats s
               JOIN queues q ON q.id = s.queue_id
               LEFT JOIN (SELECT queue_id, sum(lag) AS lag FROM group_stats GROUP BY queue_id) g
                      ON g.queue_id = s.queue_id
              GROUP BY s.tenant
             ON CONFLICT (tenant, minute) DO UPDATE SET
                 pending = EXCLUDED.pending, processing = EXCLUDED.processing,
                 dead_letters = EXCLUDED.dead_letters, lag_messages = EXCLUDED.lag_messages,
                 max_time_lag = EXCLUDED.max_time_lag",
        )
        .await?;
    tx.execute(&st, &[]).await?;
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

/// The tenant's backlog over [from, to), a point per bucket of `bucket_minutes` with a
/// round in it (its latest minute's), newest first.
pub async fn read(
    client: &Client,
    tenant: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    bucket_minutes: i32,
) -> Result<Vec<DepthPoint>, StoreError> {
    let st = client
        .prepare_cached(
            "SELECT DISTINCT ON (bucket) date_bin(make_interval(mins => $4), minute, $2) AS bucket,
                    pending, processing, dead_letters, lag_messages, max_time_lag
               FROM depth_minutes
              WHERE tenant = $1 AND minute >= $2 AND minute < $3
              ORDER BY bucket DESC, minute DESC",
        )
        .await?;
    let rows = client
        .query(&st, &[&tenant, &from, &to, &bucket_minutes])
        .await?;
    Ok(rows.iter().map(point).collect())
}

/// Deletes up to `limit` minutes older than `before`, in the caller's transaction.
pub async fn expire(
    tx: &Transaction<'_>,
    before: DateTime<Utc>,
    limit: i64,
) -> Result<i64, StoreError> {
    let st = tx
        .prepare_cached(
            "DELETE FROM depth_minutes d
               USING (SELECT tenant, minute FROM depth_minutes WHERE minute < $1 LIMIT $2) o
              WHERE d.tenant = o.tenant AND d.minute = o.minute",
        )
        .await?;
    Ok(tx.execute(&st, &[&before, &limit]).await? as i64)
}
