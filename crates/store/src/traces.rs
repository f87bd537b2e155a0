//! Trace events attached to messages (spec §12). A trace names its message as the client
//! does, by partition and transaction id; the id is resolved through the transaction index
//! when the trace is recorded, and only to a message the log still holds.

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use serde_json::Value;
use tokio_postgres::Row;
use uuid::Uuid;

use crate::dead_letters::Taken;
use crate::message::Message;
use crate::sql::traces::{
    BY_NAME, COUNT_BY_NAME, COUNT_NAMES, NAMES, OF_MESSAGE, RECORD, RECORD_AT, RECORD_CITUS,
    RECORD_REQUEUED, RECORD_REQUEUED_CITUS,
};
use crate::{frames, Conn, Layout, StoreError, Tx};

/// A trace event as the client sends it, parsed.
pub struct TraceEvent<'a> {
    pub partition_id: Uuid,
    pub transaction_id: &'a str,
    pub event_type: &'a str,
    pub data: &'a Value,
    pub consumer_group: &'a str,
    pub worker_id: Option<&'a str>,
    pub names: &'a [String],
}

/// A trace to record. `hash` is the transaction index's hash of (partition, transaction id).
pub struct NewTrace<'a> {
    pub id: Uuid,
    pub tenant: &'a str,
    pub hash: Uuid,
    pub event: &'a TraceEvent<'a>,
}

/// The trace rows' own fields, as every read route answers them.
#[derive(Debug)]
pub struct Trace {
    pub id: Uuid,
    pub partition_id: Uuid,
    pub transaction_id: String,
    pub event_type: String,
    pub data: Value,
    pub consumer_group: String,
    pub worker_id: Option<String>,
    pub names: Vec<String>,
    pub created_at: DateTime<Utc>,
}

impl From<&Row> for Trace {
    fn from(r: &Row) -> Trace {
        Trace {
            id: r.get("id"),
            partition_id: r.get("partition_id"),
            transaction_id: r.get("transaction_id"),
            event_type: r.get("event_type"),
            data: r.get("data"),
            consumer_group: r.get("consumer_group"),
            worker_id: r.get("worker_id"),
            names: r.get("trace_names"),
            created_at: r.get("created_at"),
        }
    }
}

/// A trace with where its message is and the message itself, while the log holds it.
#[derive(Debug)]
pub struct NamedTrace {
    pub trace: Trace,
    pub queue: String,
    pub partition: String,
    pub message: Option<Message>,
}

#[derive(Debug)]
pub struct TraceName {
    pub name: String,
    pub traces: i64,
    pub messages: i64,
    pub last_seen: DateTime<Utc>,
}

/// Records the trace if the tenant's partition holds the message; `None` when it does not.
pub async fn record(client: &Conn, t: &NewTrace<'_>) -> Result<Option<Uuid>, StoreError> {
    let st = client
        .prepare_cached(match client.layout() {
            Layout::Single => RECORD,
            Layout::Citus => RECORD_CITUS,
        })
        .await?;
    // Whether it was written, not RETURNING: Citus names the table, not its shard, in the
    // RETURNING clause of an INSERT ... SELECT it routes to one shard.
    write(client, &st, t, &t.hash).await
}

/// Records a trace of the message at `offset`, found by the caller without the index (the
/// deduplication window passed while it was being worked on). `None` when the tenant has no
/// such partition.
pub async fn record_at(
    client: &Conn,
    t: &NewTrace<'_>,
    offset: i64,
) -> Result<Option<Uuid>, StoreError> {
    let st = client.prepare_cached(RECORD_AT).await?;
    write(client, &st, t, &offset).await
}

/// Runs a trace's insert, `$4` locating its message (the index's hash, or the offset); the
/// trace's id when a row was written.
async fn write(
    client: &Conn,
    st: &tokio_postgres::Statement,
    t: &NewTrace<'_>,
    locator: &(dyn tokio_postgres::types::ToSql + Sync),
) -> Result<Option<Uuid>, StoreError> {
    let e = t.event;
    let written = client
        .execute(
            st,
            &[
                &t.id,
                &e.partition_id,
                &t.tenant,
                locator,
                &e.transaction_id,
                &e.event_type,
                &e.data,
                &e.consumer_group,
                &e.worker_id,
                &e.names,
            ],
        )
        .await?;
    Ok((written > 0).then_some(t.id))
}

/// Where a copy came from: the trace a copy of a message carries (`event_type` says how it
/// was made, e.g. `retried`), naming the original under `key`.
pub struct Origin<'a> {
    pub event_type: &'a str,
    pub key: &'a str,
    pub message_id: Uuid,
    pub transaction_id: &'a str,
    pub consumer_group: &'a str,
}

/// Records on the copy (`copy_txid` in `partition`, index key `hash`) the trace naming its
/// original; `None` when the log does not hold the copy (yet).
pub async fn record_origin(
    client: &Conn,
    tenant: &str,
    partition: Uuid,
    copy_txid: &str,
    hash: Uuid,
    o: &Origin<'_>,
) -> Result<Option<Uuid>, StoreError> {
    let data = serde_json::json!({
        o.key: { "messageId": o.message_id, "transactionId": o.transaction_id },
    });
    let event = TraceEvent {
        partition_id: partition,
        transaction_id: copy_txid,
        event_type: o.event_type,
        data: &data,
        consumer_group: o.consumer_group,
        worker_id: None,
        names: &[],
    };
    let t = NewTrace {
        id: Uuid::now_v7(),
        tenant,
        hash,
        event: &event,
    };
    record(client, &t).await
}

/// A message appended as the copy of a dead letter: what its trace records.
pub struct Requeued<'a> {
    /// The copy's transaction id and its index hash.
    pub transaction_id: &'a str,
    pub hash: Uuid,
    pub dead_letter: &'a Taken,
}

/// Records one `event_type` trace on each copy, in the caller's transaction (the one that
/// appended them), under the dead letter's consumer group, its data naming the dead letter
/// and the original message.
pub async fn record_requeued(
    tx: &Tx<'_>,
    tenant: &str,
    event_type: &str,
    copies: &[Requeued<'_>],
) -> Result<(), StoreError> {
    let st = tx
        .prepare_cached(match tx.layout() {
            Layout::Single => RECORD_REQUEUED,
            Layout::Citus => RECORD_REQUEUED_CITUS,
        })
        .await?;
    let ids: Vec<Uuid> = copies.iter().map(|_| Uuid::now_v7()).collect();
    let partitions: Vec<Uuid> = copies.iter().map(|c| c.dead_letter.partition_id).collect();
    let hashes: Vec<Uuid> = copies.iter().map(|c| c.hash).collect();
    let txids: Vec<&str> = copies.iter().map(|c| c.transaction_id).collect();
    let dead_letters: Vec<i64> = copies.iter().map(|c| c.dead_letter.id).collect();
    let originals: Vec<Uuid> = copies
        .iter()
        .map(|c| c.dead_letter.message.message_id)
        .collect();
    let original_txids: Vec<&str> = copies
        .iter()
        .map(|c| c.dead_letter.message.transaction_id.as_str())
        .collect();
    let groups: Vec<&str> = copies
        .iter()
        .map(|c| c.dead_letter.group.as_str())
        .collect();
    let reasons: Vec<&str> = copies
        .iter()
        .map(|c| c.dead_letter.error.as_str())
        .collect();
    tx.execute(
        &st,
        &[
            &tenant,
            &event_type,
            &ids,
            &partitions,
            &hashes,
            &txids,
            &dead_letters,
            &originals,
            &original_txids,
            &groups,
            &reasons,
        ],
    )
    .await?;
    Ok(())
}

/// The traces of one message, oldest first.
pub async fn of_message(
    client: &Client,
    tenant: &str,
    partition_id: Uuid,
    transaction_id: &str,
) -> Result<Vec<Trace>, StoreError> {
    let st = client.prepare_cached(OF_MESSAGE).await?;
    let rows = client
        .query(&st, &[&partition_id, &transaction_id, &tenant])
        .await?;
    Ok(rows.iter().map(Trace::from).collect())
}

/// A page of the tenant's traces carrying `name`, newest first, and how many there are.
pub async fn by_name(
    client: &Client,
    tenant: &str,
    name: &str,
    limit: i64,
    offset: i64,
) -> Result<(Vec<NamedTrace>, i64), StoreError> {
    let names = [name];
    let st = client.prepare_cached(COUNT_BY_NAME).await?;
    let total: i64 = client
        .query_one(&st, &[&tenant, &&names[..]])
        .await?
        .get("total");
    let st = client.prepare_cached(BY_NAME).await?;
    let rows = client
        .query(&st, &[&tenant, &&names[..], &limit, &offset])
        .await?;
    let traces = rows
        .iter()
        .map(named)
        .collect::<Result<Vec<_>, StoreError>>()?;
    Ok((traces, total))
}

fn named(r: &Row) -> Result<NamedTrace, StoreError> {
    let segment: Option<&[u8]> = r.get("frames");
    let message = match segment {
        Some(seg) => {
            let base: i64 = r.get("base_offset");
            let at: i64 = r.get("offset");
            Some(frames::decode(frames::raw_at(seg, (at - base) as usize)?)?)
        }
        None => None,
    };
    Ok(NamedTrace {
        trace: Trace::from(r),
        queue: r.get("queue"),
        partition: r.get("partition"),
        message,
    })
}

/// A page of the tenant's trace names, most recently seen first, and how many there are.
pub async fn names(
    client: &Client,
    tenant: &str,
    limit: i64,
    offset: i64,
) -> Result<(Vec<TraceName>, i64), StoreError> {
    let st = client.prepare_cached(COUNT_NAMES).await?;
    let total: i64 = client.query_one(&st, &[&tenant]).await?.get("total");
    let st = client.prepare_cached(NAMES).await?;
    let rows = client.query(&st, &[&tenant, &limit, &offset]).await?;
    let names = rows
        .iter()
        .map(|r| TraceName {
            name: r.get("name"),
            traces: r.get("traces"),
            messages: r.get("messages"),
            last_seen: r.get("last_seen"),
        })
        .collect();
    Ok((names, total))
}
