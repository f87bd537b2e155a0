//! The per-queue gauges of the Prometheus families (`regent_queue_depth`,
//! `regent_queue_lag_messages`, `queen_dlq_depth_by_queue`): depth, each consumer group's
//! lag and the dead letters of every queue of one tenant (or of all of them), behind this
//! one function so that where they are read from can change without its callers.
//!
//! They are read from the stats snapshot (`crate::stats`, refreshed every
//! `STATS_INTERVAL_MS`), so a scrape costs one row per queue and per group however many
//! partitions and cursors there are; a queue no round has counted yet shows zeros.

use deadpool_postgres::Client;
use uuid::Uuid;

use crate::sql::queue_gauges::QUEUE_GAUGES;
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
    let st = client.prepare_cached(QUEUE_GAUGES).await?;
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
