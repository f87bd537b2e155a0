//! What the consumer groups of a tenant are doing, read from their cursors: one row per
//! (group, queue), for `GET /api/v1/consumer-groups`.

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;

use super::StoreError;

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
            "SELECT c.consumer_group, q.name, count(*),
                    count(*) FILTER (WHERE c.committed < p.next_offset - 1),
                    coalesce(sum(greatest(p.next_offset - 1 - c.committed, 0)), 0)::bigint,
                    coalesce(max(floor(extract(epoch FROM now() - p.last_push_at)))
                             FILTER (WHERE c.committed < p.next_offset - 1), 0)::bigint,
                    bool_or(c.committed >= 0
                            OR (c.lease_id IS NOT NULL AND c.lease_expires_at > now())),
                    s.start_after, s.created_at
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
            group: r.get(0),
            queue: r.get(1),
            partitions: r.get(2),
            partitions_with_lag: r.get(3),
            lag: r.get(4),
            max_time_lag_secs: r.get(5),
            consuming: r.get(6),
            starts_after: r.get(7),
            joined_at: r.get(8),
        })
        .collect())
}
