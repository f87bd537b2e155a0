//! Partitions: found by (queue, partition) name, created on first push.

use std::collections::HashMap;

use deadpool_postgres::Transaction;
use serde_json::Value;
use tokio_postgres::Row;
use uuid::Uuid;

use crate::StoreError;

/// A partition together with what its queue says about it.
#[derive(Clone, Debug)]
pub struct PartitionRef {
    pub id: Uuid,
    pub name: String,
    pub queue_id: Uuid,
    pub queue: String,
    /// The queue's options as stored.
    pub options: Value,
}

impl From<&Row> for PartitionRef {
    fn from(r: &Row) -> PartitionRef {
        PartitionRef {
            queue_id: r.get("queue_id"),
            queue: r.get("queue"),
            options: r.get("options"),
            id: r.get("id"),
            name: r.get("name"),
        }
    }
}

/// (queue name, partition name).
pub type PartitionKey = (String, String);

/// A partition to create, with the namespace and task its queue gets if it is new too.
pub struct NewPartition<'a> {
    pub queue: &'a str,
    pub partition: &'a str,
    pub namespace: &'a str,
    pub task: &'a str,
}

const LOOKUP: &str = "SELECT q.id AS queue_id, q.name AS queue, q.options, p.id, p.name
       FROM unnest($2::text[], $3::text[]) AS r(qn, pn)
       JOIN queues q ON q.tenant = $1 AND q.name = r.qn
       JOIN partitions p ON p.queue_id = q.id AND p.name = r.pn";

/// The partitions of `keys` that exist, by key.
pub async fn lookup(
    tx: &Transaction<'_>,
    tenant: &str,
    keys: &[&PartitionKey],
) -> Result<HashMap<PartitionKey, PartitionRef>, StoreError> {
    let (qs, ps): (Vec<&str>, Vec<&str>) =
        keys.iter().map(|(q, p)| (q.as_str(), p.as_str())).unzip();
    let st = tx.prepare_cached(LOOKUP).await?;
    let rows = tx.query(&st, &[&tenant, &qs, &ps]).await?;
    Ok(rows
        .iter()
        .map(PartitionRef::from)
        .map(|p| ((p.queue.clone(), p.name.clone()), p))
        .collect())
}

/// Creates the queues and partitions named, in the order given (callers sort by name: the
/// head of the global lock order), and returns (queue id, partition id) of each. A queue that
/// exists keeps its configuration.
pub async fn create(
    tx: &Transaction<'_>,
    tenant: &str,
    missing: &[NewPartition<'_>],
) -> Result<Vec<(Uuid, Uuid)>, StoreError> {
    let q_st = tx
        .prepare_cached(
            "INSERT INTO queues (id, tenant, name, namespace, task) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (tenant, name) DO NOTHING",
        )
        .await?;
    let id_st = tx
        .prepare_cached("SELECT id FROM queues WHERE tenant = $1 AND name = $2")
        .await?;
    let mut created = Vec::with_capacity(missing.len());
    for m in missing {
        tx.execute(
            &q_st,
            &[&Uuid::now_v7(), &tenant, &m.queue, &m.namespace, &m.task],
        )
        .await?;
        let qid: Uuid = tx.query_one(&id_st, &[&tenant, &m.queue]).await?.get("id");
        let pid = ensure(tx, tenant, qid, m.partition).await?;
        created.push((qid, pid));
    }
    Ok(created)
}

/// The id of the named partition of a queue, created if missing.
pub async fn ensure(
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
        return Ok(row.get("id"));
    }
    let sel = tx
        .prepare_cached("SELECT id FROM partitions WHERE queue_id = $1 AND name = $2")
        .await?;
    Ok(tx.query_one(&sel, &[&queue_id, &name]).await?.get("id"))
}

/// Locks the tenant's partitions `ids` (their sequencer rows) in id order, the global lock
/// order, for the rest of the caller's transaction: for a writer that must hold them before
/// it takes locks of its own (a requeue, before the dead letters it deletes). Returns the
/// ids that exist.
pub async fn lock(
    tx: &Transaction<'_>,
    tenant: &str,
    ids: &[Uuid],
) -> Result<Vec<Uuid>, StoreError> {
    let st = tx
        .prepare_cached(
            "SELECT id FROM partitions WHERE tenant = $1 AND id = ANY ($2) ORDER BY id FOR UPDATE",
        )
        .await?;
    let rows = tx.query(&st, &[&tenant, &ids]).await?;
    Ok(rows.iter().map(|r| r.get("id")).collect())
}
