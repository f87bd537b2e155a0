//! Queen Streams' tables: registered queries (`stream_queries`), each (source partition,
//! query)'s last cycle (`stream_partitions`), and the state rows (`stream_state`). Every
//! statement of a cycle names its source partition, so on Citus it runs on that partition's
//! worker; queries are a reference table.

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use uuid::Uuid;

use crate::sql::streams::{
    ADD_CYCLE, ADOPT, DELETE_PARTITIONS, DELETE_STATE, FIND, FIND_NAMED, LIST, LOCK, LOCK_CYCLE,
    PARTITIONS, PARTITION_COUNT, READ_STATE, RECORD_CYCLE, REGISTER, SCOPE, WRITE_STATE,
};
use crate::{StoreError, Tx};

/// A query as registered.
#[derive(Clone, Debug)]
pub struct StreamQuery {
    pub id: Uuid,
    pub name: String,
    pub source_queue: String,
    pub sink_queue: Option<String>,
    pub config_hash: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

fn query_of(r: &tokio_postgres::Row) -> StreamQuery {
    StreamQuery {
        id: r.get("id"),
        name: r.get("name"),
        source_queue: r.get("source_queue"),
        sink_queue: r.get("sink_queue"),
        config_hash: r.get("config_hash"),
        created_at: r.get("created_at"),
        updated_at: r.get("updated_at"),
    }
}

/// What a registration names.
pub struct NewQuery<'a> {
    pub tenant: &'a str,
    pub name: &'a str,
    pub source_queue: &'a str,
    pub sink_queue: Option<&'a str>,
    pub config_hash: &'a str,
}

/// Registers `q` under id `id` unless its name is taken in its tenant; then the stored query,
/// locked until the transaction ends. The flag is whether this call created it.
pub async fn claim(
    tx: &Tx<'_>,
    id: Uuid,
    q: &NewQuery<'_>,
) -> Result<(StreamQuery, bool), StoreError> {
    let insert = tx.prepare_cached(REGISTER).await?;
    let created = tx
        .execute(
            &insert,
            &[
                &id,
                &q.tenant,
                &q.name,
                &q.source_queue,
                &q.sink_queue,
                &q.config_hash,
            ],
        )
        .await?
        == 1;
    let lock = tx.prepare_cached(LOCK).await?;
    let row = tx.query_one(&lock, &[&q.tenant, &q.name]).await?;
    Ok((query_of(&row), created))
}

/// Starts query `id` over: its state and cycle records deleted, the sent configuration
/// adopted.
pub async fn reset(tx: &Tx<'_>, id: Uuid, q: &NewQuery<'_>) -> Result<(), StoreError> {
    for sql in [DELETE_STATE, DELETE_PARTITIONS] {
        let st = tx.prepare_cached(sql).await?;
        tx.execute(&st, &[&id]).await?;
    }
    let st = tx.prepare_cached(ADOPT).await?;
    tx.execute(&st, &[&id, &q.config_hash, &q.source_queue, &q.sink_queue])
        .await?;
    Ok(())
}

/// The tenant's query `id`.
pub async fn find(
    client: &Client,
    tenant: &str,
    id: Uuid,
) -> Result<Option<StreamQuery>, StoreError> {
    let st = client.prepare_cached(FIND).await?;
    Ok(client
        .query_opt(&st, &[&id, &tenant])
        .await?
        .as_ref()
        .map(query_of))
}

/// The tenant's query of that name.
pub async fn find_named(
    client: &Client,
    tenant: &str,
    name: &str,
) -> Result<Option<StreamQuery>, StoreError> {
    let st = client.prepare_cached(FIND_NAMED).await?;
    Ok(client
        .query_opt(&st, &[&tenant, &name])
        .await?
        .as_ref()
        .map(query_of))
}

/// The tenant's queries, by name.
pub async fn list(client: &Client, tenant: &str) -> Result<Vec<StreamQuery>, StoreError> {
    let st = client.prepare_cached(LIST).await?;
    Ok(client
        .query(&st, &[&tenant])
        .await?
        .iter()
        .map(query_of)
        .collect())
}

/// The tenant's query `id`, and the name of the tenant's queue that holds `partition` (`None`
/// when the tenant has no such partition), in one round trip: what a cycle checks first.
pub async fn scope(
    tx: &Tx<'_>,
    tenant: &str,
    id: Uuid,
    partition: Uuid,
) -> Result<Option<(StreamQuery, Option<String>)>, StoreError> {
    let st = tx.prepare_cached(SCOPE).await?;
    Ok(tx
        .query_opt(&st, &[&id, &tenant, &partition])
        .await?
        .map(|r| (query_of(&r), r.get("partition_queue"))))
}

/// The last committed cycle of a (partition, query): its digest and the answer it got.
pub struct LastCycle {
    pub digest: Uuid,
    pub answer: Vec<u8>,
}

/// Locks the (partition, query)'s cycle row, creating it on the first cycle: concurrent
/// cycles of one partition of one query commit one after another. Returns the stored answer
/// when the last committed cycle's digest is `digest` (a replay). The lock writes no row
/// version (the cycle's record writes the one), and the stored answer is read only for a
/// replay.
pub async fn lock_cycle(
    tx: &Tx<'_>,
    partition: Uuid,
    query: Uuid,
    digest: Uuid,
) -> Result<Option<Vec<u8>>, StoreError> {
    let lock = tx.prepare_cached(LOCK_CYCLE).await?;
    if let Some(row) = tx.query_opt(&lock, &[&partition, &query, &digest]).await? {
        return Ok(row.get("answer"));
    }
    let create = tx.prepare_cached(ADD_CYCLE).await?;
    tx.execute(&create, &[&partition, &query]).await?;
    let row = tx.query_one(&lock, &[&partition, &query, &digest]).await?;
    Ok(row.get("answer"))
}

/// A state row to write: key, value (JSON text), and the value's `windowEnd`.
pub struct StateRow<'a> {
    pub key: &'a str,
    pub value: &'a str,
    pub window_end: Option<f64>,
}

/// Deletes `deletes` and upserts `upserts` in the (partition, query)'s state, in one call of
/// `regent_stream_state` (V15); each key at most once in all.
pub async fn write_state(
    tx: &Tx<'_>,
    partition: Uuid,
    query: Uuid,
    deletes: &[String],
    upserts: &[StateRow<'_>],
) -> Result<(), StoreError> {
    if deletes.is_empty() && upserts.is_empty() {
        return Ok(());
    }
    let keys: Vec<&str> = upserts.iter().map(|r| r.key).collect();
    let values: Vec<&str> = upserts.iter().map(|r| r.value).collect();
    let ends: Vec<Option<f64>> = upserts.iter().map(|r| r.window_end).collect();
    let st = tx.prepare_cached(WRITE_STATE).await?;
    tx.execute(&st, &[&partition, &query, &deletes, &keys, &values, &ends])
        .await?;
    Ok(())
}

/// Records the (partition, query)'s cycle as committed (with the transaction): its digest,
/// its answer, and how many state operations it applied.
pub async fn record_cycle(
    tx: &Tx<'_>,
    partition: Uuid,
    query: Uuid,
    last: &LastCycle,
    state_ops: i64,
) -> Result<(), StoreError> {
    let st = tx.prepare_cached(RECORD_CYCLE).await?;
    tx.execute(
        &st,
        &[&partition, &query, &last.digest, &last.answer, &state_ops],
    )
    .await?;
    Ok(())
}

/// Which state rows a read wants.
pub struct StateFilter<'a> {
    /// Empty: every key.
    pub keys: &'a [String],
    pub key_prefix: Option<&'a str>,
    /// Rows whose `windowEnd` is at or before this (epoch ms).
    pub ripe_at_or_before: Option<f64>,
    pub limit: Option<i64>,
}

/// A state row as read.
#[derive(Clone, Debug)]
pub struct StoredState {
    pub key: String,
    /// JSON text, as the client wrote it.
    pub value: String,
    pub updated_at: DateTime<Utc>,
}

/// The tenant's query's state rows in `partition` that `f` wants, by key.
pub async fn read_state(
    client: &Client,
    tenant: &str,
    query: Uuid,
    partition: Uuid,
    f: &StateFilter<'_>,
) -> Result<Vec<StoredState>, StoreError> {
    let st = client.prepare_cached(READ_STATE).await?;
    let rows = client
        .query(
            &st,
            &[
                &partition,
                &query,
                &tenant,
                &f.keys,
                &f.key_prefix,
                &f.ripe_at_or_before,
                &f.limit,
            ],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| StoredState {
            key: r.get("key"),
            value: r.get("value"),
            updated_at: r.get("updated_at"),
        })
        .collect())
}

/// One source partition of a query, for the console.
#[derive(Clone, Debug)]
pub struct StreamPartition {
    pub partition_id: Uuid,
    pub partition: String,
    pub state_rows: i64,
    pub cycles: i64,
    pub state_ops: i64,
    pub last_cycle_at: Option<DateTime<Utc>>,
}

/// A page of query `query`'s source partitions, most recently cycled first, and how many
/// there are.
pub async fn partitions(
    client: &Client,
    query: Uuid,
    limit: i64,
    offset: i64,
) -> Result<(Vec<StreamPartition>, i64), StoreError> {
    let st = client.prepare_cached(PARTITIONS).await?;
    let rows = client.query(&st, &[&query, &limit, &offset]).await?;
    let page = rows
        .iter()
        .map(|r| StreamPartition {
            partition_id: r.get("partition_id"),
            partition: r.get("name"),
            state_rows: r.get("state_rows"),
            cycles: r.get("cycles"),
            state_ops: r.get("state_ops"),
            last_cycle_at: r.get("last_cycle_at"),
        })
        .collect();
    let st = client.prepare_cached(PARTITION_COUNT).await?;
    let total = client.query_one(&st, &[&query]).await?.get("n");
    Ok((page, total))
}
