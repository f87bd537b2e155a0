//! Maintenance switches and the push buffer (spec §15): the switches per tenant, the
//! buffered pushes, and the drain that appends them when push maintenance ends.

use std::collections::BTreeMap;

use deadpool_postgres::Client;
use uuid::Uuid;

use crate::append::{append_many, logged, Appended, Batch, Dedup, Window};
use crate::sql::maintenance::{
    BUFFER, BUFFERED_FRAME, DRAIN, DRAINED_PLACES, GET, POLL, SET, SHARE_DRAIN_LOCK,
    STILL_BUFFERING, TAKE_DRAIN_LOCK,
};
use crate::{frames, StoreError, Tx};

/// A tenant's switches, and whether pushes of it wait in the buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Switches {
    pub push: bool,
    pub pop: bool,
    pub buffered: bool,
}

/// Sets the tenant's push switch, its pop switch, or both; answers them as stored.
pub async fn set(
    client: &Client,
    tenant: &str,
    push: Option<bool>,
    pop: Option<bool>,
) -> Result<Switches, StoreError> {
    let st = client.prepare_cached(SET).await?;
    let r = client.query_one(&st, &[&tenant, &push, &pop]).await?;
    Ok(Switches {
        push: r.get("push"),
        pop: r.get("pop"),
        buffered: false,
    })
}

/// The tenant's switches and how many of its pushes wait in the buffer.
pub async fn get(client: &Client, tenant: &str) -> Result<(Switches, i64), StoreError> {
    let st = client.prepare_cached(GET).await?;
    let r = client.query_one(&st, &[&tenant]).await?;
    let waiting: i64 = r.get("buffered");
    let switches = Switches {
        push: r.get("push"),
        pop: r.get("pop"),
        buffered: waiting > 0,
    };
    Ok((switches, waiting))
}

/// Every tenant with a switch on or pushes in the buffer.
pub async fn poll(client: &Client) -> Result<Vec<(String, Switches)>, StoreError> {
    let st = client.prepare_cached(POLL).await?;
    Ok(client
        .query(&st, &[])
        .await?
        .iter()
        .map(|r| {
            let s = Switches {
                push: r.get("push"),
                pop: r.get("pop"),
                buffered: r.get("buffered"),
            };
            (r.get("tenant"), s)
        })
        .collect())
}

/// Holds the batches' messages in the buffer inside the caller's transaction, deduplicated
/// as an append is: per message, `New` when it was taken, `Duplicate` with the id of the
/// message that has its transaction id, in the log or already in the buffer.
pub async fn hold(
    tx: &Tx<'_>,
    tenant: &str,
    batches: &[Batch],
) -> Result<Vec<Vec<Appended>>, StoreError> {
    let mut out = Vec::with_capacity(batches.len());
    for b in batches {
        let mut verdicts = vec![Appended::New; b.hashes.len()];
        let logged = logged(tx, b).await?;
        let fresh: Vec<usize> = (0..b.hashes.len())
            .filter(|i| !logged.iter().any(|(at, _)| at == i))
            .collect();
        for (i, id) in logged {
            verdicts[i] = Appended::Duplicate(id);
        }
        let held = insert(tx, tenant, b, &fresh).await?;
        let taken: Vec<usize> = fresh
            .into_iter()
            .filter(|i| !held.contains(&b.hashes[*i]))
            .collect();
        for i in taken {
            verdicts[i] = Appended::Duplicate(duplicate_id(tx, b, i).await?);
        }
        out.push(verdicts);
    }
    Ok(out)
}

/// Buffers the messages at `which`, in that order; the hashes taken (a hash already
/// buffered is not).
async fn insert(
    tx: &Tx<'_>,
    tenant: &str,
    b: &Batch,
    which: &[usize],
) -> Result<Vec<Uuid>, StoreError> {
    let hashes: Vec<Uuid> = which.iter().map(|&i| b.hashes[i]).collect();
    let frames: Vec<&[u8]> = which.iter().map(|&i| b.frames[i].as_slice()).collect();
    let st = tx.prepare_cached(BUFFER).await?;
    let rows = tx
        .query(&st, &[&tenant, &b.partition, &hashes, &frames])
        .await?;
    Ok(rows.iter().map(|r| r.get("hash")).collect())
}

/// The id of the message already holding the transaction id of the batch's message `i`: in
/// the buffer, or, when a drain appended it between our insert and this read, in the log.
async fn duplicate_id(tx: &Tx<'_>, b: &Batch, i: usize) -> Result<Option<Uuid>, StoreError> {
    let st = tx.prepare_cached(BUFFERED_FRAME).await?;
    if let Some(row) = tx.query_opt(&st, &[&b.hashes[i]]).await? {
        return Ok(Some(frames::message_id(row.get("frame"))?));
    }
    let one = Batch {
        partition: b.partition,
        hashes: vec![b.hashes[i]],
        frames: Vec::new(),
    };
    match logged(tx, &one).await?.first() {
        Some((_, id)) => Ok(*id),
        None => Err(StoreError::Corrupt),
    }
}

/// Whether the tenant's pushes still go to the buffer, asked of the database by a broker
/// whose last poll said so, first in its push transaction: push maintenance is on, or
/// pushes wait to be drained. Takes the drain lock shared, so that no drain can find the
/// buffer empty while this transaction may still add to it: a broker whose poll is behind
/// the switch never buffers a push after one that went straight to the log.
pub async fn still_buffering(tx: &Tx<'_>, tenant: &str) -> Result<bool, StoreError> {
    let lock = tx.prepare_cached(SHARE_DRAIN_LOCK).await?;
    tx.query_one(&lock, &[&tenant]).await?;
    let st = tx.prepare_cached(STILL_BUFFERING).await?;
    Ok(tx.query_one(&st, &[&tenant]).await?.get("buffering"))
}

/// What one drain transaction did.
#[derive(Debug)]
pub enum Drain {
    /// Nothing of the tenant is buffered.
    Empty,
    /// Appended to these partitions: (queue id, queue name, partition id).
    Appended(Vec<(Uuid, String, Uuid)>),
}

/// Appends up to `limit` of the tenant's oldest buffered messages to their partitions, in
/// arrival order, and removes them from the buffer, in the caller's transaction: a message
/// is appended exactly once however many brokers drain. The drain lock is taken exclusive
/// and waited for (pushes into the buffer hold it shared; PostgreSQL queues new shared
/// requests behind a waiting exclusive one, so a steady stream of them cannot starve the
/// drain); brokers draining at once take turns, each batch the oldest left.
pub async fn drain(
    tx: &Tx<'_>,
    tenant: &str,
    limit: i64,
    window: Window,
) -> Result<Drain, StoreError> {
    let lock = tx.prepare_cached(TAKE_DRAIN_LOCK).await?;
    tx.query_one(&lock, &[&tenant]).await?;
    let st = tx.prepare_cached(DRAIN).await?;
    let mut rows = tx.query(&st, &[&tenant, &limit]).await?;
    if rows.is_empty() {
        return Ok(Drain::Empty);
    }
    rows.sort_by_key(|r| r.get::<_, i64>("seq"));
    let mut by_partition: BTreeMap<Uuid, Batch> = BTreeMap::new();
    for r in &rows {
        let partition: Uuid = r.get("partition_id");
        let b = by_partition.entry(partition).or_insert_with(|| Batch {
            partition,
            hashes: Vec::new(),
            frames: Vec::new(),
        });
        b.hashes.push(r.get("hash"));
        b.frames.push(r.get("frame"));
    }
    let batches: Vec<Batch> = by_partition.into_values().collect();
    // Careful: a push made directly since (another broker not yet seeing the switch) may
    // have taken a transaction id first.
    append_many(tx, &batches, Dedup::Careful, window).await?;
    let ids: Vec<Uuid> = batches.iter().map(|b| b.partition).collect();
    let st = tx.prepare_cached(DRAINED_PLACES).await?;
    Ok(Drain::Appended(
        tx.query(&st, &[&ids])
            .await?
            .iter()
            .map(|r| (r.get("queue_id"), r.get("queue"), r.get("id")))
            .collect(),
    ))
}
