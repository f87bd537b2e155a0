//! Queues: configured, found by name or by namespace and task, listed with their counts,
//! inspected partition by partition, deleted with everything that hangs off them.

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use serde_json::Value;
use tokio_postgres::Row;
use uuid::Uuid;

use crate::sql::queues::{PARTITION_STATS, PENDING_BY_PARTITION};
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

const QUEUE_COLUMNS: &str = "q.id, q.name, q.namespace, q.task, q.options, q.created_at";

/// Creates the queue or replaces its whole configuration (not a patch).
pub async fn upsert(
    tx: &Tx<'_>,
    tenant: &str,
    name: &str,
    namespace: &str,
    task: &str,
    options: &Value,
) -> Result<QueueRow, StoreError> {
    let sql = format!(
        "INSERT INTO queues AS q (id, tenant, name, namespace, task, options)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (tenant, name) DO UPDATE
           SET namespace = EXCLUDED.namespace, task = EXCLUDED.task, options = EXCLUDED.options
         RETURNING {QUEUE_COLUMNS}"
    );
    let st = tx.prepare_cached(&sql).await?;
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
    let sql = format!("SELECT {QUEUE_COLUMNS} FROM queues q WHERE q.tenant = $1 AND q.name = $2");
    let st = client.prepare_cached(&sql).await?;
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
    let sql = format!(
        "SELECT {QUEUE_COLUMNS} FROM queues q
          WHERE q.tenant = $1 AND ($2::text IS NULL OR q.namespace = $2)
            AND ($3::text IS NULL OR q.task = $3)
          ORDER BY coalesce((q.options ->> 'priority')::bigint, 0) DESC, q.name"
    );
    let st = client.prepare_cached(&sql).await?;
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
    let sql = format!(
        "SELECT {QUEUE_COLUMNS}, coalesce(s.partitions, 0) AS partitions,
                coalesce(s.total, 0) AS total, coalesce(s.pending, 0) AS pending,
                coalesce(s.processing, 0) AS processing,
                coalesce(s.dead_letters, 0) AS dead_letters,
                coalesce(m.pushed, 0) AS pushed_recently,
                coalesce(m.completed, 0) AS completed_recently
           FROM queues q LEFT JOIN queue_stats s ON s.queue_id = q.id
           LEFT JOIN LATERAL (
                SELECT sum(pushed)::bigint AS pushed, sum(completed)::bigint AS completed
                  FROM queue_minutes
                 WHERE queue_id = q.id
                   AND minute >= date_trunc('minute', $7::timestamptz)) m ON true
          WHERE q.tenant = $1 AND ($2::text IS NULL OR strpos(q.name, $2) > 0)
            AND ($5::text IS NULL OR q.namespace = $5) AND ($6::text IS NULL OR q.task = $6)
          ORDER BY q.created_at DESC, q.name
          LIMIT $3 OFFSET $4"
    );
    let st = client.prepare_cached(&sql).await?;
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
    // The group's start point first: Citus plans no correlated subquery over a reference
    // table such as `subscriptions`.
    let st = client
        .prepare_cached(
            "SELECT start_after FROM subscriptions WHERE queue_id = $1 AND consumer_group = $2",
        )
        .await?;
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
    let st = tx
        .prepare_cached("DELETE FROM queues WHERE tenant = $1 AND name = $2 RETURNING id")
        .await?;
    let Some(row) = tx.query_opt(&st, &[&tenant, &name]).await? else {
        return Ok(false);
    };
    let qid: Uuid = row.get("id");
    // Wait for in-flight appends first, so the deletes below (a fresh snapshot) see every
    // segment those appends commit.
    // (On Citus an update that changes nothing takes the locks: see `partitions::lock`.)
    let lock = tx
        .prepare_cached(match tx.layout() {
            Layout::Single => "SELECT id FROM partitions WHERE queue_id = $1 FOR UPDATE",
            Layout::Citus => {
                "UPDATE partitions SET first_offset = first_offset WHERE queue_id = $1"
            }
        })
        .await?;
    tx.query(&lock, &[&qid]).await?;
    // The transaction index is left to its purge clock: its rows hold only hashes keyed by
    // partition ids, which are never reused, and it has no partition index to delete by.
    let st = tx
        .prepare_cached(
            "WITH p AS (DELETE FROM partitions WHERE queue_id = $1 RETURNING id),
                  s AS (DELETE FROM segments WHERE partition_id IN (SELECT id FROM p)),
                  c AS (DELETE FROM cursors WHERE partition_id IN (SELECT id FROM p)),
                  d AS (DELETE FROM dead_letters WHERE queue_id = $1),
                  t AS (DELETE FROM traces WHERE queue_id = $1),
                  m AS (DELETE FROM queue_minutes WHERE queue_id = $1),
                  h AS (DELETE FROM queue_depth_minutes WHERE queue_id = $1),
                  k AS (DELETE FROM tombstones WHERE partition_id IN (SELECT id FROM p)),
                  b AS (DELETE FROM push_buffer WHERE partition_id IN (SELECT id FROM p)),
                  ss AS (DELETE FROM stream_state WHERE partition_id IN (SELECT id FROM p)),
                  sp AS (DELETE FROM stream_partitions WHERE partition_id IN (SELECT id FROM p))
             DELETE FROM subscriptions WHERE queue_id = $1",
        )
        .await?;
    tx.execute(&st, &[&qid]).await?;
    // Its pending timers too: a timer left behind would fire into a queue that is gone and
    // create it again. (A statement of its own: on Citus `timers` is distributed by queue
    // name, the tables above by partition.)
    let st = tx
        .prepare_cached("DELETE FROM timers WHERE tenant = $1 AND queue = $2")
        .await?;
    tx.execute(&st, &[&tenant, &name]).await?;
    Ok(true)
}

/// How many messages a tenant holds in the log: every offset its queues' logs still hold
/// (retention gives room back).
pub async fn stored_messages(client: &Client, tenant: &str) -> Result<i64, StoreError> {
    let st = client
        .prepare_cached(
            "SELECT coalesce(sum(p.next_offset - p.first_offset), 0)::bigint AS stored
               FROM queues q JOIN partitions p ON p.queue_id = q.id
              WHERE q.tenant = $1",
        )
        .await?;
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
    let st = tx
        .prepare_cached("SELECT id FROM queues WHERE tenant = $1 AND name = $2")
        .await?;
    let Some(q) = tx.query_opt(&st, &[&tenant, &queue]).await? else {
        return Ok(Cleared::NoQueue);
    };
    let queue_id: Uuid = q.get("id");
    let st = tx
        .prepare_cached(match tx.layout() {
            Layout::Single => {
                "SELECT id FROM partitions WHERE queue_id = $1 AND ($2::text IS NULL OR name = $2)
                  ORDER BY id FOR UPDATE"
            }
            Layout::Citus => {
                "UPDATE partitions SET first_offset = first_offset
                  WHERE queue_id = $1 AND ($2::text IS NULL OR name = $2) RETURNING id"
            }
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
    let st = tx
        .prepare_cached(match tx.layout() {
            Layout::Single => {
                "SELECT 1 FROM cursors WHERE partition_id = ANY($1)
                  ORDER BY partition_id, consumer_group FOR UPDATE"
            }
            Layout::Citus => {
                "UPDATE cursors SET committed = committed WHERE partition_id = ANY($1)"
            }
        })
        .await?;
    tx.query(&st, &[&ids]).await?;
    let st = tx
        .prepare_cached(
            "WITH s AS (DELETE FROM segments WHERE partition_id = ANY($1)
                         RETURNING end_offset - base_offset + 1 AS n),
                  c AS (UPDATE cursors c
                           SET committed = greatest(c.committed, p.next_offset - 1),
                               lease_id = NULL, lease_expires_at = NULL, retry_count = 0
                          FROM partitions p WHERE p.id = c.partition_id AND p.id = ANY($1)),
                  t AS (DELETE FROM traces WHERE partition_id = ANY($1)),
                  k AS (DELETE FROM tombstones WHERE partition_id = ANY($1)),
                  u AS (UPDATE partitions SET first_offset = next_offset WHERE id = ANY($1))
             SELECT coalesce(sum(n), 0)::bigint AS deleted FROM s",
        )
        .await?;
    let deleted: i64 = tx.query_one(&st, &[&ids]).await?.get("deleted");
    Ok(Cleared::Deleted(deleted))
}
