//! Queues and partitions: configure, resolve (creating on first use), list, delete.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use deadpool_postgres::{Client, Transaction};
use serde_json::Value;
use uuid::Uuid;

use super::{Store, StoreError};
use crate::broker::naming::{derive_namespace_task, DEFAULT_PARTITION};
use crate::broker::options::QueueOptions;

#[derive(Clone, Debug)]
pub struct QueueRow {
    pub id: Uuid,
    pub name: String,
    pub namespace: String,
    pub task: String,
    pub options: QueueOptions,
    pub created_at: DateTime<Utc>,
}

/// A partition together with what its queue says about it.
#[derive(Clone, Debug)]
pub struct PartitionRef {
    pub id: Uuid,
    pub name: String,
    pub queue_id: Uuid,
    pub queue: String,
    pub options: QueueOptions,
}

pub(crate) fn options_from(v: Value) -> QueueOptions {
    serde_json::from_value(v).unwrap_or_default()
}

fn options_to(o: &QueueOptions) -> Value {
    serde_json::to_value(o).expect("options serialize")
}

const QUEUE_COLUMNS: &str = "id, name, namespace, task, options, created_at";

fn queue_row(r: &tokio_postgres::Row) -> QueueRow {
    QueueRow {
        id: r.get(0),
        name: r.get(1),
        namespace: r.get(2),
        task: r.get(3),
        options: options_from(r.get(4)),
        created_at: r.get(5),
    }
}

/// Creates the queue or replaces its whole configuration (not a patch), and makes sure its
/// `Default` partition exists. Returns the queue and the `Default` partition's id.
pub async fn configure(
    store: &Store,
    tenant: &str,
    name: &str,
    namespace: &str,
    task: &str,
    options: &QueueOptions,
) -> Result<(QueueRow, Uuid), StoreError> {
    let opts = options_to(options);
    crate::in_transaction!(store, |tx| {
        let sql = format!(
                "INSERT INTO queues (id, tenant, name, namespace, task, options)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (tenant, name) DO UPDATE
                   SET namespace = EXCLUDED.namespace, task = EXCLUDED.task, options = EXCLUDED.options
                 RETURNING {QUEUE_COLUMNS}"
            );
        let st = tx.prepare_cached(&sql).await?;
        let row = tx
            .query_one(
                &st,
                &[&Uuid::now_v7(), &tenant, &name, &namespace, &task, &opts],
            )
            .await?;
        let queue = queue_row(&row);
        let pid = ensure_partition(tx, tenant, queue.id, DEFAULT_PARTITION).await?;
        Ok((queue, pid))
    })
}

async fn ensure_partition(
    tx: &Transaction<'_>,
    tenant: &str,
    queue_id: Uuid,
    name: &str,
) -> Result<Uuid, StoreError> {
    // Two statements, not one: when a concurrent transaction commits the same partition, the
    // insert waits for it and returns nothing, and only a statement started after that sees
    // the committed row (a single statement keeps its older snapshot).
    let ins = tx
        .prepare_cached(
            "INSERT INTO partitions (id, tenant, queue_id, name) VALUES ($1, $2, $3, $4)
             ON CONFLICT (queue_id, name) DO NOTHING RETURNING id",
        )
        .await?;
    if let Some(row) = tx
        .query_opt(&ins, &[&Uuid::now_v7(), &tenant, &queue_id, &name])
        .await?
    {
        return Ok(row.get(0));
    }
    let sel = tx
        .prepare_cached("SELECT id FROM partitions WHERE queue_id = $1 AND name = $2")
        .await?;
    Ok(tx.query_one(&sel, &[&queue_id, &name]).await?.get(0))
}

pub async fn find_queue(
    client: &Client,
    tenant: &str,
    name: &str,
) -> Result<Option<QueueRow>, StoreError> {
    let sql = format!("SELECT {QUEUE_COLUMNS} FROM queues WHERE tenant = $1 AND name = $2");
    let st = client.prepare_cached(&sql).await?;
    Ok(client
        .query_opt(&st, &[&tenant, &name])
        .await?
        .map(|r| queue_row(&r)))
}

/// The queues of a namespace and/or task, highest `priority` first.
pub async fn find_scoped(
    client: &Client,
    tenant: &str,
    namespace: Option<&str>,
    task: Option<&str>,
) -> Result<Vec<QueueRow>, StoreError> {
    let sql = format!(
        "SELECT {QUEUE_COLUMNS} FROM queues
          WHERE tenant = $1 AND ($2::text IS NULL OR namespace = $2) AND ($3::text IS NULL OR task = $3)
          ORDER BY coalesce((options ->> 'priority')::bigint, 0) DESC, name"
    );
    let st = client.prepare_cached(&sql).await?;
    Ok(client
        .query(&st, &[&tenant, &namespace, &task])
        .await?
        .iter()
        .map(queue_row)
        .collect())
}

const RESOLVE_SQL: &str = "SELECT q.id, q.name, q.options, p.id, p.name
       FROM unnest($2::text[], $3::text[]) AS r(qn, pn)
       JOIN queues q ON q.tenant = $1 AND q.name = r.qn
       JOIN partitions p ON p.queue_id = q.id AND p.name = r.pn";

async fn lookup(
    tx: &Transaction<'_>,
    tenant: &str,
    pairs: &[&(String, String)],
) -> Result<HashMap<(String, String), PartitionRef>, StoreError> {
    let (qs, ps): (Vec<&str>, Vec<&str>) =
        pairs.iter().map(|(q, p)| (q.as_str(), p.as_str())).unzip();
    let st = tx.prepare_cached(RESOLVE_SQL).await?;
    let rows = tx.query(&st, &[&tenant, &qs, &ps]).await?;
    Ok(rows
        .iter()
        .map(|r| {
            let p = PartitionRef {
                queue_id: r.get(0),
                queue: r.get(1),
                options: options_from(r.get(2)),
                id: r.get(3),
                name: r.get(4),
            };
            ((p.queue.clone(), p.name.clone()), p)
        })
        .collect())
}

/// Maps (queue, partition) names to partitions inside the caller's transaction, creating
/// missing queues (defaults, derived namespace/task) and partitions first, sorted by name:
/// creation is the first step of the global lock order, and a request that is refused later
/// in the same transaction leaves nothing behind. Also returns the (queue id, partition id) of
/// every partition it created (for the sweep clock, `crate::wakeup::Sweeps`).
pub async fn resolve_partitions(
    tx: &Transaction<'_>,
    tenant: &str,
    pairs: &[(String, String)],
) -> Result<(HashMap<(String, String), PartitionRef>, Vec<(Uuid, Uuid)>), StoreError> {
    // A fused flush names the same few partitions once per item: look each up once.
    let mut unique: Vec<&(String, String)> = pairs.iter().collect();
    unique.sort();
    unique.dedup();
    let found = lookup(tx, tenant, &unique).await?;
    let missing: Vec<&(String, String)> = unique
        .iter()
        .copied()
        .filter(|k| !found.contains_key(*k))
        .collect();
    if missing.is_empty() {
        return Ok((found, vec![]));
    }
    let q_st = tx
        .prepare_cached(
            "INSERT INTO queues (id, tenant, name, namespace, task) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (tenant, name) DO NOTHING",
        )
        .await?;
    let id_st = tx
        .prepare_cached("SELECT id FROM queues WHERE tenant = $1 AND name = $2")
        .await?;
    let mut created = Vec::new();
    for (queue, partition) in missing {
        let (ns, task) = derive_namespace_task(queue);
        tx.execute(&q_st, &[&Uuid::now_v7(), &tenant, queue, &ns, &task])
            .await?;
        let qid: Uuid = tx.query_one(&id_st, &[&tenant, queue]).await?.get(0);
        let pid = ensure_partition(tx, tenant, qid, partition).await?;
        created.push((qid, pid));
    }
    Ok((lookup(tx, tenant, &unique).await?, created))
}

/// One row of the queue listing.
#[derive(Clone, Debug)]
pub struct QueueSummary {
    pub queue: QueueRow,
    pub partitions: i64,
    pub total: i64,
    pub pending: i64,
    pub processing: i64,
}

/// Queues of a tenant, newest first. `pending` counts messages after the queue-mode cursor
/// (or after the furthest-behind named group when only named groups read the queue).
pub async fn list_queues(
    client: &Client,
    tenant: &str,
    search: Option<&str>,
    limit: i64,
    offset: i64,
) -> Result<Vec<QueueSummary>, StoreError> {
    let sql = format!(
        "SELECT {cols},
                (SELECT count(*) FROM partitions p WHERE p.queue_id = q.id),
                (SELECT coalesce(sum(p.next_offset), 0)::bigint FROM partitions p WHERE p.queue_id = q.id),
                (SELECT coalesce(sum(p.next_offset - 1 - coalesce(
                          (SELECT min(c.committed) FROM cursors c WHERE c.partition_id = p.id), -1)), 0)::bigint
                   FROM partitions p WHERE p.queue_id = q.id),
                (SELECT count(*) FROM partitions p JOIN cursors c ON c.partition_id = p.id
                  WHERE p.queue_id = q.id AND c.lease_id IS NOT NULL AND c.lease_expires_at > now())
           FROM queues q
          WHERE q.tenant = $1 AND ($2::text IS NULL OR strpos(q.name, $2) > 0)
          ORDER BY q.created_at DESC, q.name
          LIMIT $3 OFFSET $4",
        cols = QUEUE_COLUMNS
            .split(", ")
            .map(|c| format!("q.{c}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let st = client.prepare_cached(&sql).await?;
    let rows = client
        .query(&st, &[&tenant, &search, &limit, &offset])
        .await?;
    Ok(rows
        .iter()
        .map(|r| QueueSummary {
            queue: queue_row(r),
            partitions: r.get(6),
            total: r.get(7),
            pending: r.get(8),
            processing: r.get(9),
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
    /// After the furthest-behind cursor (leased ones included), as [`list_queues`] counts.
    pub pending: i64,
    /// Under a live lease.
    pub processing: i64,
    /// Up to the furthest-ahead cursor.
    pub completed: i64,
    /// 1 while a group's next message has been nacked and waits for its retry.
    pub failed: i64,
    pub dead_letters: i64,
    pub oldest: Option<DateTime<Utc>>,
    pub newest: Option<DateTime<Utc>>,
}

/// The queue and its partitions with their counts (`GET /resources/queues/:queue`); `None` for
/// a queue the tenant does not have. Oldest and newest message times are the first and last
/// segments' (index probes, not scans).
pub async fn queue_detail(
    client: &Client,
    tenant: &str,
    name: &str,
) -> Result<Option<(QueueRow, Vec<PartitionStats>)>, StoreError> {
    let Some(q) = find_queue(client, tenant, name).await? else {
        return Ok(None);
    };
    let st = client
        .prepare_cached(
            "WITH d AS (SELECT partition_id, count(*) AS n FROM dead_letters
                         WHERE tenant = $2 AND queue_id = $1 GROUP BY partition_id)
             SELECT p.id, p.name, p.created_at, p.next_offset,
                    p.next_offset - 1 - coalesce(min(c.committed), -1),
                    coalesce(max(c.lease_end - c.committed)
                             FILTER (WHERE c.lease_id IS NOT NULL AND c.lease_expires_at > now()), 0),
                    coalesce(max(c.committed), -1) + 1,
                    (CASE WHEN bool_or(c.retry_count > 0) THEN 1 ELSE 0 END)::bigint,
                    coalesce(max(d.n), 0),
                    (SELECT g.created_at FROM segments g WHERE g.partition_id = p.id
                      ORDER BY g.end_offset LIMIT 1),
                    (SELECT g.created_at FROM segments g WHERE g.partition_id = p.id
                      ORDER BY g.end_offset DESC LIMIT 1)
               FROM partitions p
               LEFT JOIN cursors c ON c.partition_id = p.id
               LEFT JOIN d ON d.partition_id = p.id
              WHERE p.queue_id = $1
              GROUP BY p.id
              ORDER BY p.name",
        )
        .await?;
    let rows = client.query(&st, &[&q.id, &tenant]).await?;
    let partitions = rows
        .iter()
        .map(|r| PartitionStats {
            id: r.get(0),
            name: r.get(1),
            created_at: r.get(2),
            total: r.get(3),
            pending: r.get(4),
            processing: r.get(5),
            completed: r.get(6),
            failed: r.get(7),
            dead_letters: r.get(8),
            oldest: r.get(9),
            newest: r.get(10),
        })
        .collect();
    Ok(Some((q, partitions)))
}

/// Messages after the cursor of `group` on each partition that has any, most first; `None`
/// for a queue the tenant does not have. A partition the group has no cursor on yet counts
/// from where its first pop would start it (the group's stored start point, or the
/// beginning). Without a group, each partition counts from its furthest-behind cursor, as
/// [`list_queues`] does. Watermark arithmetic only: the log is not read.
pub async fn queue_depth(
    client: &Client,
    tenant: &str,
    queue: &str,
    group: Option<&str>,
) -> Result<Option<Vec<(String, i64)>>, StoreError> {
    let Some(q) = find_queue(client, tenant, queue).await? else {
        return Ok(None);
    };
    let st = client
        .prepare_cached(concat!(
            "SELECT name, pending FROM (
               SELECT p.name, p.next_offset - 1 - CASE
                        WHEN $2::text IS NULL THEN
                          coalesce((SELECT min(c.committed) FROM cursors c
                                     WHERE c.partition_id = p.id), -1)
                        ELSE coalesce(
                          (SELECT c.committed FROM cursors c
                            WHERE c.partition_id = p.id AND c.consumer_group = $2),
                          (SELECT ",
            last_offset_at!("p.id", "s.start_after"),
            " FROM subscriptions s
                            WHERE s.queue_id = $1 AND s.consumer_group = $2),
                          -1)
                      END AS pending
                 FROM partitions p WHERE p.queue_id = $1) d
              WHERE pending > 0
              ORDER BY pending DESC, name"
        ))
        .await?;
    let rows = client.query(&st, &[&q.id, &group]).await?;
    Ok(Some(rows.iter().map(|r| (r.get(0), r.get(1))).collect()))
}

/// Deletes a queue with everything that hangs off it: partitions, the log, the transaction
/// index, cursors, subscriptions and dead letters. Returns whether it existed.
pub async fn delete_queue(store: &Store, tenant: &str, name: &str) -> Result<bool, StoreError> {
    crate::in_transaction!(store, |tx| {
        let st = tx
            .prepare_cached("DELETE FROM queues WHERE tenant = $1 AND name = $2 RETURNING id")
            .await?;
        let Some(row) = tx.query_opt(&st, &[&tenant, &name]).await? else {
            return Ok(false);
        };
        let qid: Uuid = row.get(0);
        // Wait for in-flight appends first, so the deletes below (a fresh snapshot) see
        // every segment those appends commit.
        let lock = tx
            .prepare_cached("SELECT id FROM partitions WHERE queue_id = $1 FOR UPDATE")
            .await?;
        tx.query(&lock, &[&qid]).await?;
        // The transaction index is left to its purge clock: its rows hold only hashes keyed
        // by partition ids, which are never reused, and it has no partition index to delete
        // by.
        let st = tx
            .prepare_cached(
                "WITH p AS (DELETE FROM partitions WHERE queue_id = $1 RETURNING id),
                          s AS (DELETE FROM segments WHERE partition_id IN (SELECT id FROM p)),
                          c AS (DELETE FROM cursors WHERE partition_id IN (SELECT id FROM p)),
                          d AS (DELETE FROM dead_letters WHERE queue_id = $1)
                     DELETE FROM subscriptions WHERE queue_id = $1",
            )
            .await?;
        tx.execute(&st, &[&qid]).await?;
        Ok(true)
    })
}

/// How many messages a tenant holds in the log: every offset handed out in its queues. (The
/// log keeps what it is given until its queue is deleted.)
pub async fn stored_messages(client: &Client, tenant: &str) -> Result<i64, StoreError> {
    let st = client
        .prepare_cached(
            "SELECT coalesce(sum(p.next_offset), 0)::bigint
               FROM queues q JOIN partitions p ON p.queue_id = q.id
              WHERE q.tenant = $1",
        )
        .await?;
    Ok(client.query_one(&st, &[&tenant]).await?.get(0))
}
