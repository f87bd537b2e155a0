//! Partitions: found by (queue, partition) name, created on first push.

use std::collections::HashMap;

use serde_json::Value;
use tokio_postgres::Row;
use uuid::Uuid;

use crate::sql::partitions::{
    CREATE_QUEUE, ENSURE, ENSURE_FOUND, LOCK, LOCK_CITUS, LOOKUP, LOOKUP_BY_ID_CITUS,
    LOOKUP_QUEUES_CITUS, PLACES_CITUS, QUEUE_ID,
};
use crate::{Layout, StoreError, Tx};

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

/// The id of a partition created on Citus: derived from its queue and name (a name-based,
/// SHA-1 UUID under the queue's id), so that the primary key alone keeps one partition per
/// name, which Citus requires of a table distributed by it, and a name is found on its shard
/// without asking the others. On one PostgreSQL ids are time-ordered (v7) and a unique
/// constraint on (queue, name) keeps names unique.
pub fn id_of(layout: Layout, queue_id: Uuid, name: &str) -> Uuid {
    match layout {
        Layout::Single => Uuid::now_v7(),
        Layout::Citus => Uuid::new_v5(&queue_id, name.as_bytes()),
    }
}

/// The partitions of `keys` that exist, by key.
pub async fn lookup(
    tx: &Tx<'_>,
    tenant: &str,
    keys: &[&PartitionKey],
) -> Result<HashMap<PartitionKey, PartitionRef>, StoreError> {
    if tx.layout() == Layout::Citus {
        return lookup_by_id(tx, tenant, keys).await;
    }
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

/// The node group holding each partition's shard on Citus (every table of a partition is
/// co-located with `partitions`), asked of the coordinator's metadata alone. On one PostgreSQL
/// every partition is in group 0, asked of nobody.
pub async fn places(tx: &Tx<'_>, ids: &[Uuid]) -> Result<Vec<(Uuid, i32)>, StoreError> {
    if !tx.layout().spreads_partitions() || ids.is_empty() {
        return Ok(ids.iter().map(|&id| (id, 0)).collect());
    }
    let st = tx.prepare_cached(PLACES_CITUS).await?;
    let rows = tx.query(&st, &[&ids]).await?;
    Ok(rows.iter().map(|r| (r.get("id"), r.get("place"))).collect())
}

async fn lookup_by_id(
    tx: &Tx<'_>,
    tenant: &str,
    keys: &[&PartitionKey],
) -> Result<HashMap<PartitionKey, PartitionRef>, StoreError> {
    let names: Vec<&str> = keys.iter().map(|(q, _)| q.as_str()).collect();
    let st = tx.prepare_cached(LOOKUP_QUEUES_CITUS).await?;
    let queues: HashMap<String, (Uuid, Value)> = tx
        .query(&st, &[&tenant, &names])
        .await?
        .iter()
        .map(|r| (r.get("queue"), (r.get("queue_id"), r.get("options"))))
        .collect();
    let ids: Vec<Uuid> = keys
        .iter()
        .filter_map(|(q, p)| Some(id_of(Layout::Citus, queues.get(q)?.0, p)))
        .collect();
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let st = tx.prepare_cached(LOOKUP_BY_ID_CITUS).await?;
    let by_queue: HashMap<Uuid, (&String, &Value)> =
        queues.iter().map(|(n, (id, o))| (*id, (n, o))).collect();
    let mut found = HashMap::new();
    for row in tx.query(&st, &[&ids]).await? {
        let Some((queue, options)) = by_queue.get(&row.get::<_, Uuid>("queue_id")) else {
            continue;
        };
        let p = PartitionRef {
            id: row.get("id"),
            name: row.get("name"),
            queue_id: row.get("queue_id"),
            queue: (*queue).clone(),
            options: (*options).clone(),
        };
        found.insert((p.queue.clone(), p.name.clone()), p);
    }
    Ok(found)
}

/// Creates the queues and partitions named, in the order given (callers sort by name: the
/// head of the global lock order), and returns (queue id, partition id) of each. A queue that
/// exists keeps its configuration.
pub async fn create(
    tx: &Tx<'_>,
    tenant: &str,
    missing: &[NewPartition<'_>],
) -> Result<Vec<(Uuid, Uuid)>, StoreError> {
    let q_st = tx.prepare_cached(CREATE_QUEUE).await?;
    let id_st = tx.prepare_cached(QUEUE_ID).await?;
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
    tx: &Tx<'_>,
    tenant: &str,
    queue_id: Uuid,
    name: &str,
) -> Result<Uuid, StoreError> {
    let ins = tx.prepare_cached(ENSURE).await?;
    let id = id_of(tx.layout(), queue_id, name);
    if let Some(row) = tx
        .query_opt(&ins, &[&id, &tenant, &queue_id, &name])
        .await?
    {
        return Ok(row.get("id"));
    }
    let sel = tx.prepare_cached(ENSURE_FOUND).await?;
    let routed = (tx.layout() == Layout::Citus).then_some(id);
    Ok(tx
        .query_one(&sel, &[&queue_id, &name, &routed])
        .await?
        .get("id"))
}

/// Locks the tenant's partitions `ids` (their sequencer rows) in id order, the global lock
/// order, for the rest of the caller's transaction: for a writer that must hold them before
/// it takes locks of its own (a requeue, before the dead letters it deletes). Returns the
/// ids that exist.
pub async fn lock(tx: &Tx<'_>, tenant: &str, ids: &[Uuid]) -> Result<Vec<Uuid>, StoreError> {
    let st = tx
        .prepare_cached(match tx.layout() {
            Layout::Single => LOCK,
            Layout::Citus => LOCK_CITUS,
        })
        .await?;
    let rows = tx.query(&st, &[&tenant, &ids]).await?;
    Ok(rows.iter().map(|r| r.get("id")).collect())
}
