//! Queen's timers (`timers`, V17): pending timers by (tenant, queue, key), and what the firing
//! loop reads and takes. A statement about one timer or one queue's timers names the queue, so
//! on Citus (the table distributed by `queue`) it runs on one worker; the firing loop's two
//! scans over every queue ([`nearest`], [`due`]) are the only statements over every shard.
//!
//! A row is taken by a firing transaction with `FOR UPDATE SKIP LOCKED` and deleted by it; a
//! schedule or cancel of that key meanwhile finds the row present but not lockable
//! ([`Claim::Locked`]) and does not wait for it. Schedules and cancels of one key take turns
//! ([`take_turns`]), so they never mistake each other for a fire, and never both find a key
//! empty.

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::sql::timers::{
    BY_QUEUE, CLAIM, DELETE, DUE, LIST, NEAREST, PEEK, POSTPONE, TAKE, TAKE_TURNS, UPSERT,
};
use crate::{StoreError, Tx};

/// A timer as stored.
#[derive(Clone, Debug)]
pub struct StoredTimer {
    pub queue: String,
    pub key: String,
    pub txn: String,
    pub message_id: Uuid,
    pub partition: String,
    /// The message's JSON text.
    pub payload: Box<RawValue>,
    pub producer_sub: Option<String>,
    pub deliver_at: DateTime<Utc>,
    /// Fires that failed and were put off.
    pub attempts: i32,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

fn timer_of(r: &tokio_postgres::Row) -> Result<StoredTimer, StoreError> {
    // Stored only after the schedule checked it is JSON.
    let payload = RawValue::from_string(r.get("payload")).map_err(|_| StoreError::Corrupt)?;
    Ok(StoredTimer {
        queue: r.get("queue"),
        key: r.get("timer_key"),
        txn: r.get("txn"),
        message_id: r.get("message_id"),
        partition: r.get("partition"),
        payload,
        producer_sub: r.get("producer_sub"),
        deliver_at: r.get("deliver_at"),
        attempts: r.get("attempts"),
        created_at: r.get("created_at"),
        updated_at: r.get("updated_at"),
    })
}

/// The pending timer of a key, as a schedule or cancel finds it.
#[derive(Clone, Debug)]
pub struct Pending {
    pub txn: String,
    pub message_id: Uuid,
    pub deliver_at: DateTime<Utc>,
}

/// What a schedule or cancel found at its key.
#[derive(Clone, Debug)]
pub enum Claim {
    /// No pending timer (with the txn asked for, when one was).
    Absent,
    /// A pending timer, now locked by this transaction.
    Mine(Pending),
    /// A pending timer locked by another transaction: a fire about to commit it.
    Locked(Pending),
}

/// Makes the caller's transaction take its turn at each (`queue`, `key`) of `keys`: it waits
/// for every other schedule or cancel of those keys to end, and holds them until it ends.
/// Taken before any [`claim`], so the claim of a key no other transaction holds is the truth
/// about it, absent included: two schedules of a new key cannot both find nothing (the
/// second sees the first's timer), and a claim that finds the row locked knows a fire holds
/// it. Fires do not take turns (they skip what they cannot lock). The keys are locked in one
/// order, so two batches of the same keys cannot deadlock on them.
pub async fn take_turns(
    tx: &Tx<'_>,
    tenant: &str,
    keys: &[(&str, &str)],
) -> Result<(), StoreError> {
    let (queues, names): (Vec<&str>, Vec<&str>) = keys.iter().copied().unzip();
    let st = tx.prepare_cached(TAKE_TURNS).await?;
    tx.query_one(&st, &[&tenant, &queues, &names]).await?;
    Ok(())
}

/// Locks the pending timer of (`queue`, `key`) without waiting for it; with `txn`, only the
/// timer scheduled under that txn. The caller has taken its turn at the key ([`take_turns`]),
/// so a row it cannot lock is a fire's.
pub async fn claim(
    tx: &Tx<'_>,
    tenant: &str,
    queue: &str,
    key: &str,
    txn: Option<&str>,
) -> Result<Claim, StoreError> {
    let st = tx.prepare_cached(CLAIM).await?;
    let Some(r) = tx.query_opt(&st, &[&tenant, &queue, &key, &txn]).await? else {
        return Ok(Claim::Absent);
    };
    let pending = Pending {
        txn: r.get("txn"),
        message_id: r.get("message_id"),
        deliver_at: r.get("deliver_at"),
    };
    Ok(if r.get("mine") {
        Claim::Mine(pending)
    } else {
        Claim::Locked(pending)
    })
}

/// A timer to store.
pub struct NewTimer<'a> {
    pub tenant: &'a str,
    pub queue: &'a str,
    pub key: &'a str,
    pub txn: &'a str,
    pub message_id: Uuid,
    pub partition: &'a str,
    pub payload: &'a str,
    pub producer_sub: Option<&'a str>,
    /// From now, by the database's clock; may be negative.
    pub delay_ms: i64,
}

/// Stores `t`, replacing the pending timer of its key; its `deliver_at`.
pub async fn upsert(tx: &Tx<'_>, t: &NewTimer<'_>) -> Result<DateTime<Utc>, StoreError> {
    let st = tx.prepare_cached(UPSERT).await?;
    let delay = t.delay_ms as f64;
    let row = tx
        .query_one(
            &st,
            &[
                &t.tenant,
                &t.queue,
                &t.key,
                &t.txn,
                &t.message_id,
                &t.partition,
                &t.payload,
                &t.producer_sub,
                &delay,
            ],
        )
        .await?;
    Ok(row.get("deliver_at"))
}

/// Deletes the timer of (`queue`, `key`), which the caller has claimed.
pub async fn delete(tx: &Tx<'_>, tenant: &str, queue: &str, key: &str) -> Result<(), StoreError> {
    let st = tx.prepare_cached(DELETE).await?;
    tx.execute(&st, &[&tenant, &queue, &key]).await?;
    Ok(())
}

/// The pending timer of (`queue`, `key`).
pub async fn peek(
    client: &Client,
    tenant: &str,
    queue: &str,
    key: &str,
) -> Result<Option<StoredTimer>, StoreError> {
    let st = client.prepare_cached(PEEK).await?;
    client
        .query_opt(&st, &[&tenant, &queue, &key])
        .await?
        .as_ref()
        .map(timer_of)
        .transpose()
}

/// Up to `limit` pending timers of `queue` by key, after `after` (exclusive).
pub async fn list(
    client: &Client,
    tenant: &str,
    queue: &str,
    after: Option<&str>,
    limit: i64,
) -> Result<Vec<StoredTimer>, StoreError> {
    let st = client.prepare_cached(LIST).await?;
    let rows = client
        .query(&st, &[&tenant, &queue, &after, &limit])
        .await?;
    rows.iter().map(timer_of).collect()
}

/// The tenant's pending timers per queue: how many, and the nearest deadline.
#[derive(Clone, Debug)]
pub struct QueueTimers {
    pub queue: String,
    pub pending: i64,
    pub next_deliver_at: DateTime<Utc>,
}

/// The tenant's queues with pending timers, by name.
pub async fn by_queue(client: &Client, tenant: &str) -> Result<Vec<QueueTimers>, StoreError> {
    let st = client.prepare_cached(BY_QUEUE).await?;
    let rows = client.query(&st, &[&tenant]).await?;
    Ok(rows
        .iter()
        .map(|r| QueueTimers {
            queue: r.get("queue"),
            pending: r.get("pending"),
            next_deliver_at: r.get("next"),
        })
        .collect())
}

/// Milliseconds from now to the nearest deadline of all (negative when one is due), by the
/// database's clock; `None` with no timer pending.
pub async fn nearest(client: &Client) -> Result<Option<f64>, StoreError> {
    let st = client.prepare_cached(NEAREST).await?;
    Ok(client.query_one(&st, &[]).await?.get("ms"))
}

/// The queues of the (at most `limit`) most overdue timers, each once, most overdue first,
/// and the database's `now()` they were due by.
pub async fn due(
    client: &Client,
    limit: i64,
) -> Result<(Vec<(String, String)>, Option<DateTime<Utc>>), StoreError> {
    let st = client.prepare_cached(DUE).await?;
    let rows = client.query(&st, &[&limit]).await?;
    let at = rows.first().map(|r| r.get("at"));
    let mut queues: Vec<(String, String)> = Vec::new();
    for r in &rows {
        let q = (r.get("tenant"), r.get("queue"));
        if !queues.contains(&q) {
            queues.push(q);
        }
    }
    Ok((queues, at))
}

/// Takes (deletes, with the transaction) up to `limit` timers of `queue` due by `at`, that no
/// other transaction holds; by deadline.
pub async fn take(
    tx: &Tx<'_>,
    tenant: &str,
    queue: &str,
    at: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<StoredTimer>, StoreError> {
    let st = tx.prepare_cached(TAKE).await?;
    let rows = tx.query(&st, &[&tenant, &queue, &at, &limit]).await?;
    let mut out: Vec<StoredTimer> = rows.iter().map(timer_of).collect::<Result<_, _>>()?;
    out.sort_by(|a, b| (a.deliver_at, &a.key).cmp(&(b.deliver_at, &b.key)));
    Ok(out)
}

/// Puts off the fire of `queue`'s timers `keys`, each to its instant, counting a failed
/// attempt; `now` is the database's clock as the caller read it.
pub async fn postpone(
    tx: &Tx<'_>,
    tenant: &str,
    queue: &str,
    keys: &[&str],
    until: &[DateTime<Utc>],
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let st = tx.prepare_cached(POSTPONE).await?;
    tx.execute(&st, &[&tenant, &queue, &keys, &until, &now])
        .await?;
    Ok(())
}
