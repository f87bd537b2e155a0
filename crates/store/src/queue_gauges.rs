//! The per-queue gauges of the Prometheus families (`regent_queue_depth`,
//! `regent_queue_lag_messages`, `queen_dlq_depth_by_queue`): depth, each consumer group's
//! lag and the dead letters of every queue of one tenant (or of all of them), behind this
//! one function so that where they are read from can change without its callers.
//!
//! Today they are computed at each scrape from the live tables, by watermark arithmetic only:
//! partitions' `next_offset` and `first_offset`, cursors' `committed`, a count of
//! `dead_letters`. The log is never read (no probe of segments per cursor), so the cost is
//! one pass over the scope's partitions, cursors and dead letters, and the age of a group's
//! oldest unread message, which needs such a probe, is not among the gauges.

use deadpool_postgres::Client;
use uuid::Uuid;

use crate::StoreError;

/// One consumer group's lag on a queue: messages after its cursors, summed over the
/// partitions it has a cursor on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupLag {
    pub group: String,
    pub lag: i64,
}

/// One queue's gauges now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueGauge {
    pub queue_id: Uuid,
    pub tenant: String,
    pub queue: String,
    /// Messages kept that some group has still to read: per partition, those after its
    /// furthest-behind cursor (every kept message of a partition no cursor reads), summed.
    pub depth: i64,
    /// Dead letters kept of the queue.
    pub dead_letters: i64,
    /// Every group with a cursor on the queue, by name.
    pub groups: Vec<GroupLag>,
}

/// The gauges of every queue of `tenant` (of every tenant when `None`), by tenant and name.
pub async fn queue_gauges(
    client: &Client,
    tenant: Option<&str>,
) -> Result<Vec<QueueGauge>, StoreError> {
    let st = client
        .prepare_cached(
            "WITH q AS (
                SELECT id, tenant, name FROM queues WHERE $1::text IS NULL OR tenant = $1),
             p AS (
                SELECT p.id, p.queue_id, p.next_offset, p.first_offset
                  FROM partitions p JOIN q ON q.id = p.queue_id),
             behind AS (
                SELECT p.queue_id, c.partition_id, c.consumer_group,
                       greatest(p.next_offset - 1 - greatest(c.committed, p.first_offset - 1), 0)
                         AS n
                  FROM cursors c JOIN p ON p.id = c.partition_id),
             depth AS (
                SELECT p.queue_id,
                       sum(coalesce(b.most, p.next_offset - p.first_offset))::bigint AS depth
                  FROM p LEFT JOIN (SELECT partition_id, max(n) AS most FROM behind
                                     GROUP BY partition_id) b ON b.partition_id = p.id
                 GROUP BY p.queue_id),
             lag AS (
                SELECT queue_id, array_agg(consumer_group ORDER BY consumer_group) AS groups,
                       array_agg(n ORDER BY consumer_group) AS lags
                  FROM (SELECT queue_id, consumer_group, sum(n)::bigint AS n FROM behind
                         GROUP BY queue_id, consumer_group) g
                 GROUP BY queue_id),
             dead AS (
                SELECT d.queue_id, count(*) AS n
                  FROM dead_letters d JOIN q ON q.id = d.queue_id AND q.tenant = d.tenant
                 GROUP BY d.queue_id)
             SELECT q.id, q.tenant, q.name, coalesce(depth.depth, 0) AS depth,
                    coalesce(dead.n, 0) AS dead_letters, lag.groups, lag.lags
               FROM q LEFT JOIN depth ON depth.queue_id = q.id
                      LEFT JOIN dead ON dead.queue_id = q.id
                      LEFT JOIN lag ON lag.queue_id = q.id
              ORDER BY q.tenant, q.name",
        )
        .await?;
    let rows = client.query(&st, &[&tenant]).await?;
    Ok(rows
        .iter()
        .map(|r| {
            let names: Vec<String> = r
                .get::<_, Option<Vec<String>>>("groups")
                .unwrap_or_default();
            let lags: Vec<i64> = r.get::<_, Option<Vec<i64>>>("lags").unwrap_or_default();
            QueueGauge {
                queue_id: r.get("id"),
                tenant: r.get("tenant"),
                queue: r.get("name"),
                depth: r.get("depth"),
                dead_letters: r.get("dead_letters"),
                groups: names
                    .into_iter()
                    .zip(lags)
                    .map(|(group, lag)| GroupLag { group, lag })
                    .collect(),
            }
        })
        .collect())
}
