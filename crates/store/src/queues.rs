//! Queues: configured, found by name or by namespace and task, listed with their counts,
//! inspected partition by partition, deleted with everything that hangs off them.

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use serde_json::Value;
use tokio_postgres::Row;
use uuid::Uuid;

use crate::sql::queues::{
    CLEAR, CLEAR_CURSORS, DELETE, DELETE_CONTENTS, DELETE_TIMERS, FIND, FIND_SCOPED, ID, LIST,
    LOCK_CLEARED_PARTITIONS, LOCK_CLEARED_PARTITIONS_CITUS, LOCK_PARTITIONS, LOCK_PARTITIONS_CITUS,
    PARTITION_STATS, PENDING_BY_PARTITION, START_AFTER, STORED_MESSAGES, UPSERT,
};
use crate::{Layout, StoreError, Tx};

#[derive(Clone, Debug)]
pub struct QueueRow {
    pub id: Uuid,
    pub name: String,
    pub namespace: String,
    pub task: String,
    /// The options as stored: only what the client set.
    pub options: Value,
    pub created_at: DateTime<Utc>,
}

impl From<&Row> for QueueRow {
    fn from(r: &Row) -> QueueRow {
        QueueRow {
            id: r.get("id"),
            name: r.get("name"),
            namespace: r.get("namespace"),
            task: r.get("task"),
            options: r.get("options"),
            created_at: r.get("created_at"),
        }
    }
}

/// Creates the queue or replaces its whole configuration (not a patch).
pub async fn upsert(
    tx: &Tx<'_>,
    tenant: &str,
    name: &str,
    namespace: &str,
    task: &str,
    options: &Value,
) -> Result<QueueRow, StoreError> {
    let st = tx.prepare_cached(UPSERT).await?;
    let row = tx
        .query_one(
            &st,
            &[&Uuid::now_v7(), &tenant, &name, &namespace, &task, options],
        )
        .await?;
    Ok(QueueRow::from(&row))
}

pub async fn find(
    client: &impl deadpool_postgres::GenericClient,
    tenant: &str,
    name: &str,
) -> Result<Option<QueueRow>, StoreError> {
    let st = client.prepare_cached(FIND).await?;
    Ok(client
        .query_opt(&st, &[&tenant, &name])
        .await?
        .as_ref()
        .map(QueueRow::from))
}

/// The queues of a namespace and/or task, highest `priority` first.
pub async fn find_scoped(
    client: &Client,
    tenant: &str,
    namespace: Option<&str>,
    task: Option<&str>,
) -> Result<Vec<QueueRow>, StoreError> {
    let st = client.prepare_cached(FIND_SCOPED).await?;
    Ok(client
        .query(&st, &[&tenant, &namespace, &task])
        .await?
        .iter()
        .map(QueueRow::from)
        .collect())
}

/// One row of the queue listing.
#[derive(Clone, Debug)]
pub struct QueueSummary {
    pub queue: QueueRow,
    pub partitions: i64,
    pub total: i64,
    pub pending: i64,
    pub processing: i64,
    pub dead_letters: i64,
    /// Pushed and passed by a cursor since the listing's `recent` instant, from the series.
    pub pushed_recently: i64,
    pub completed_recently: i64,
}

/// Which queues a listing shows: names containing `search`, of a namespace, of a task.
#[derive(Clone, Copy, Debug, Default)]
pub struct Listing<'a> {
    pub search: Option<&'a str>,
    pub namespace: Option<&'a str>,
    pub task: Option<&'a str>,
    pub limit: i64,
    pub offset: i64,
}

/// Queues of a tenant, newest first, with their counts from the stats snapshot (zeros for
/// a queue no round has counted yet) and what the series counted for each since `recent`.
/// `pending` counts messages after each partition's furthest-behind cursor.
pub async fn list(
    client: &Client,
    tenant: &str,
    l: &Listing<'_>,
    recent: DateTime<Utc>,
) -> Result<Vec<QueueSummary>, StoreError> {
    let st = client.prepare_cached(LIST).await?;
    let rows = client
        .query(
            &st,
            &[
                &tenant,
                &l.search,
                &l.limit,
                &l.offset,
                &l.namespace,
                &l.task,
                &recent,
            ],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| QueueSummary {
            queue: QueueRow::from(r),
            partitions: r.get("partitions"),
            total: r.get("total"),
            pending: r.get("pending"),
            processing: r.get("processing"),
            dead_letters: r.get("dead_letters"),
            pushed_recently: r.get("pushed_recently"),
            completed_recently: r.get("completed_recently"),
        })
        .collect())
}

/// One partition's counts for the queue detail, each the largest over consumer groups.
#[derive(Debug)]
pub struct PartitionStats {
    pub id: Uuid,
    pub name: String,
    pub created_at: DateTime<Utc>,
    /// Messages in the log.
    pub total: i64,
    /// After the furthest-behind cursor (leased ones included), as [`list`] counts.
    pub pending: i64,
    /// Under a live lease.
    pub processing: i64,
    /// Kept messages up to the furthest-ahead cursor.
    pub completed: i64,
    /// 1 while a group's next message has been nacked and waits for its retry.
    pub failed: i64,
    pub dead_letters: i64,
    pub oldest: Option<DateTime<Utc>>,
    pub newest: Option<DateTime<Utc>>,
}

impl From<&Row> for PartitionStats {
    fn from(r: &Row) -> PartitionStats {
        PartitionStats {
            id: r.get("id"),
            name: r.get("name"),
            created_at: r.get("created_at"),
            total: r.get("total"),
            pending: r.get("pending"),
            processing: r.get("processing"),
            completed: r.get("completed"),
            failed: r.get("failed"),
            dead_letters: r.get("dead_letters"),
            oldest: r.get("oldest"),
            newest: r.get("newest"),
        }
    }
}

/// A page of a queue's partitions, by name, each with its counts counted now (as the
/// overview counts them, `sql/overview.sql`). The page is chosen before anything is
/// counted, so it costs the same at 100 partitions or 100,000. Oldest and newest message
/// times are the first and last segments' (index probes, not scans).
pub async fn partition_stats(
    client: &Client,
    tenant: &str,
    queue_id: Uuid,
    limit: i64,
    offset: i64,
) -> Result<Vec<PartitionStats>, StoreError> {
    let st = client.prepare_cached(PARTITION_STATS).await?;
    let rows = client
        .query(&st, &[&tenant, &queue_id, &limit, &offset])
        .await?;
    Ok(rows.iter().map(PartitionStats::from).collect())
}

/// A queue's depth for `group` counted now, for a group no stats round has seen on the
/// queue: messages after its cursor on each partition, a partition it has no cursor on
/// counted from where its first pop would start it (its stored start point, or the
/// beginning). Watermark arithmetic only: the log is not read.
pub async fn depth_now(
    client: &Client,
    queue_id: Uuid,
    group: &str,
) -> Result<crate::stats::Depth, StoreError> {
    // The group's start point first, on its own (sql/queues.sql says why).
    let st = client.prepare_cached(START_AFTER).await?;
    let start_after: Option<DateTime<Utc>> = client
        .query_opt(&st, &[&queue_id, &group])
        .await?
        .and_then(|r| r.get("start_after"));
    let st = client.prepare_cached(PENDING_BY_PARTITION).await?;
    let rows = client
        .query(
            &st,
            &[
                &queue_id,
                &group,
                &crate::stats::TOP_PARTITIONS,
                &start_after,
            ],
        )
        .await?;
    let first = rows.first();
    Ok(crate::stats::Depth {
        pending: first.map_or(0, |r| r.get("sum")),
        partitions_pending: first.map_or(0, |r| r.get("n")),
        top: rows
            .iter()
            .map(|r| (r.get("name"), r.get("pending")))
            .collect(),
        refreshed_at: None,
    })
}

/// Deletes a queue with everything that hangs off it: partitions, the log, cursors,
/// subscriptions, dead letters, traces, its series and buffered pushes. Returns whether it existed.
pub async fn delete(tx: &Tx<'_>, tenant: &str, name: &str) -> Result<bool, StoreError> {
    let st = tx.prepare_cached(DELETE).await?;
    let Some(row) = tx.query_opt(&st, &[&tenant, &name]).await? else {
        return Ok(false);
    };
    let qid: Uuid = row.get("id");
    // Wait for in-flight appends first (sql/queues.sql says why), then delete.
    let lock = tx
        .prepare_cached(match tx.layout() {
            Layout::Single => LOCK_PARTITIONS,
            Layout::Citus => LOCK_PARTITIONS_CITUS,
        })
        .await?;
    tx.query(&lock, &[&qid]).await?;
    let st = tx.prepare_cached(DELETE_CONTENTS).await?;
    tx.execute(&st, &[&qid]).await?;
    // Its pending timers too, in a statement of their own.
    let st = tx.prepare_cached(DELETE_TIMERS).await?;
    tx.execute(&st, &[&tenant, &name]).await?;
    Ok(true)
}

/// How many messages a tenant holds in the log: every offset its queues' logs still hold
/// (retention gives room back).
pub async fn stored_messages(client: &Client, tenant: &str) -> Result<i64, StoreError> {
    let st = client.prepare_cached(STORED_MESSAGES).await?;
    Ok(client.query_one(&st, &[&tenant]).await?.get("stored"))
}

/// What clearing found.
#[derive(Debug, PartialEq, Eq)]
pub enum Cleared {
    NoQueue,
    NoPartition,
    /// How many messages the log no longer holds.
    Deleted(i64),
}

/// Deletes every message of a queue (or of one partition of it) and moves every cursor of
/// that scope to the end, their leases released and retry counts reset, in the caller's
/// transaction. The partitions are locked first (in id order: in-flight appends commit
/// before, later ones after), then the cursors (partition, then group), as retention does.
/// Dead letters, which are snapshots, and the transaction index, on its own clock, stay.
pub async fn clear(
    tx: &Tx<'_>,
    tenant: &str,
    queue: &str,
    partition: Option<&str>,
) -> Result<Cleared, StoreError> {
    let st = tx.prepare_cached(ID).await?;
    let Some(q) = tx.query_opt(&st, &[&tenant, &queue]).await? else {
        return Ok(Cleared::NoQueue);
    };
    let queue_id: Uuid = q.get("id");
    let st = tx
        .prepare_cached(match tx.layout() {
            Layout::Single => LOCK_CLEARED_PARTITIONS,
            Layout::Citus => LOCK_CLEARED_PARTITIONS_CITUS,
        })
        .await?;
    let ids: Vec<Uuid> = tx
        .query(&st, &[&queue_id, &partition])
        .await?
        .iter()
        .map(|r| r.get("id"))
        .collect();
    if ids.is_empty() && partition.is_some() {
        return Ok(Cleared::NoPartition);
    }
    let st = tx.prepare_cached(CLEAR_CURSORS).await?;
    tx.query(&st, &[&ids]).await?;
    let st = tx.prepare_cached(CLEAR).await?;
    let deleted: i64 = tx.query_one(&st, &[&ids]).await?.get("deleted");
    Ok(Cleared::Deleted(deleted))
}
