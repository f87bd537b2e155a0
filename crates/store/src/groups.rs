//! What the consumer groups of a tenant are doing, read from their cursors: one row per
//! (group, queue) for `GET /api/v1/consumer-groups`, one per cursor for a group's detail and
//! the lagging list.

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use uuid::Uuid;

use crate::StoreError;

/// One consumer group on one queue.
#[derive(Debug)]
pub struct GroupOnQueue {
    pub group: String,
    pub queue: String,
    /// Partitions the group has a cursor on.
    pub partitions: i64,
    /// Of those, partitions with messages after the cursor.
    pub partitions_with_lag: i64,
    /// Messages after the cursors, summed.
    pub lag: i64,
    /// Seconds since the newest message it has not read, over its lagging partitions (the
    /// partition's last push: a lower bound on how long it has waited); 0 with no lag.
    pub max_time_lag_secs: i64,
    /// Whether any cursor has moved off the beginning or is leased now: the group consumes.
    pub consuming: bool,
    /// Where a group subscribed to new messages only started (its stored start point).
    pub starts_after: Option<DateTime<Utc>>,
    /// When the group first joined the queue, for named groups.
    pub joined_at: Option<DateTime<Utc>>,
}

/// Every (group, queue) pair of the tenant with at least one cursor, by group, then queue.
pub async fn list(client: &Client, tenant: &str) -> Result<Vec<GroupOnQueue>, StoreError> {
    let st = client
        .prepare_cached(
            "SELECT c.consumer_group, q.name AS queue, count(*) AS partitions,
                    count(*) FILTER (WHERE c.committed < p.next_offset - 1) AS partitions_with_lag,
                    coalesce(sum(greatest(p.next_offset - 1 - c.committed, 0)), 0)::bigint AS lag,
                    coalesce(max(floor(extract(epoch FROM now() - p.last_push_at)))
                             FILTER (WHERE c.committed < p.next_offset - 1), 0)::bigint
                      AS max_time_lag,
                    bool_or(c.committed >= 0
                            OR (c.lease_id IS NOT NULL AND c.lease_expires_at > now())) AS consuming,
                    s.start_after, s.created_at AS joined_at
               FROM cursors c
               JOIN partitions p ON p.id = c.partition_id
               JOIN queues q ON q.id = c.queue_id
               LEFT JOIN subscriptions s
                      ON s.queue_id = c.queue_id AND s.consumer_group = c.consumer_group
              WHERE q.tenant = $1
              GROUP BY c.consumer_group, q.name, s.start_after, s.created_at
              ORDER BY c.consumer_group, q.name",
        )
        .await?;
    Ok(client
        .query(&st, &[&tenant])
        .await?
        .iter()
        .map(|r| GroupOnQueue {
            group: r.get("consumer_group"),
            queue: r.get("queue"),
            partitions: r.get("partitions"),
            partitions_with_lag: r.get("partitions_with_lag"),
            lag: r.get("lag"),
            max_time_lag_secs: r.get("max_time_lag"),
            consuming: r.get("consuming"),
            starts_after: r.get("start_after"),
            joined_at: r.get("joined_at"),
        })
        .collect())
}

/// One consumer group's cursor on one partition.
#[derive(Debug)]
pub struct PartitionLag {
    pub group: String,
    pub queue: String,
    pub partition: String,
    pub partition_id: Uuid,
    /// Messages consumed: the cursor plus one.
    pub consumed: i64,
    /// Messages after the cursor.
    pub lag: i64,
    /// When the first message after the cursor was appended; `None` with no lag.
    pub oldest_unread_at: Option<DateTime<Utc>>,
    /// Seconds since then; 0 with no lag.
    pub time_lag_secs: i64,
    pub leased: bool,
}

/// The cursors of the tenant's groups (of one group, with `group`), by group, queue and
/// partition; with `min_lag_secs`, only those whose first unread message is older than that,
/// longest first. The first unread message's time is its segment's: one index probe per
/// cursor behind its partition's end.
pub async fn partition_lags(
    client: &Client,
    tenant: &str,
    group: Option<&str>,
    min_lag_secs: Option<f64>,
) -> Result<Vec<PartitionLag>, StoreError> {
    let st = client
        .prepare_cached(
            "SELECT c.consumer_group, q.name AS queue, p.name AS partition, p.id AS partition_id,
                    c.committed + 1 AS consumed,
                    greatest(p.next_offset - 1 - c.committed, 0) AS lag,
                    o.created_at AS oldest_unread_at,
                    coalesce(floor(extract(epoch FROM now() - o.created_at)), 0)::bigint AS lag_secs,
                    (c.lease_id IS NOT NULL AND c.lease_expires_at > now()) AS leased
               FROM cursors c
               JOIN partitions p ON p.id = c.partition_id
               JOIN queues q ON q.id = c.queue_id
               LEFT JOIN LATERAL (
                    SELECT g.created_at FROM segments g
                     WHERE g.partition_id = p.id AND g.end_offset > c.committed
                     ORDER BY g.end_offset LIMIT 1) o ON c.committed < p.next_offset - 1
              WHERE q.tenant = $1 AND ($2::text IS NULL OR c.consumer_group = $2)
                AND ($3::float8 IS NULL
                     OR o.created_at < now() - make_interval(secs => $3::float8))
              ORDER BY CASE WHEN $3::float8 IS NULL THEN 0 ELSE -extract(epoch FROM now() - o.created_at) END,
                       c.consumer_group, q.name, p.name",
        )
        .await?;
    Ok(client
        .query(&st, &[&tenant, &group, &min_lag_secs])
        .await?
        .iter()
        .map(|r| PartitionLag {
            group: r.get("consumer_group"),
            queue: r.get("queue"),
            partition: r.get("partition"),
            partition_id: r.get("partition_id"),
            consumed: r.get("consumed"),
            lag: r.get("lag"),
            oldest_unread_at: r.get("oldest_unread_at"),
            time_lag_secs: r.get("lag_secs"),
            leased: r.get("leased"),
        })
        .collect())
}

/// Sets the stored start instant of the tenant's named `group` on every queue it has joined;
/// the number of queues changed. Cursors the group already has stay where they are: the
/// instant places only the cursors of partitions it meets from now on.
pub async fn resubscribe(
    client: &Client,
    tenant: &str,
    group: &str,
    at: DateTime<Utc>,
) -> Result<u64, StoreError> {
    let st = client
        .prepare_cached(
            "UPDATE subscriptions s SET start_after = $3
               FROM queues q
              WHERE q.id = s.queue_id AND q.tenant = $1 AND s.consumer_group = $2",
        )
        .await?;
    Ok(client.execute(&st, &[&tenant, &group, &at]).await?)
}
