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

const COLUMNS: &str = "queue, timer_key, txn, message_id, partition, payload, producer_sub, \
                       deliver_at, attempts, created_at, updated_at";

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
    let st = tx
        .prepare_cached(
            // `OFFSET 0` keeps the sorted subquery whole, so the locks are taken in its order.
            "SELECT count(pg_advisory_xact_lock(h)) FROM (
                 SELECT DISTINCT hashtextextended('regent-timer/' || $1 || '/' || q || '/' || k, 0) AS h
                   FROM unnest($2::text[], $3::text[]) AS u(q, k)
                  ORDER BY h OFFSET 0) sorted",
        )
        .await?;
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
    // The plain read sees a row another transaction holds (its snapshot predates that
    // transaction's delete); the locking read skips it.
    let st = tx
        .prepare_cached(
            "WITH locked AS (
                 SELECT 1 FROM timers
                  WHERE tenant = $1 AND queue = $2 AND timer_key = $3
                    AND ($4::text IS NULL OR txn = $4)
                    FOR UPDATE SKIP LOCKED)
             SELECT EXISTS (SELECT 1 FROM locked) AS mine, txn, message_id, deliver_at
               FROM timers
              WHERE tenant = $1 AND queue = $2 AND timer_key = $3
                AND ($4::text IS NULL OR txn = $4)",
        )
        .await?;
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
    let st = tx
        .prepare_cached(
            // `now()` only in the values: Citus refuses a function in `DO UPDATE SET` unless
            // it is immutable, and evaluates the values on the coordinator.
            "INSERT INTO timers (tenant, queue, timer_key, txn, message_id, partition, payload,
                                 producer_sub, deliver_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8,
                     now() + $9::float8 * interval '1 millisecond', now())
             ON CONFLICT (tenant, queue, timer_key) DO UPDATE
                SET txn = excluded.txn, message_id = excluded.message_id,
                    partition = excluded.partition, payload = excluded.payload,
                    producer_sub = excluded.producer_sub, deliver_at = excluded.deliver_at,
                    attempts = 0, updated_at = excluded.updated_at
             RETURNING deliver_at",
        )
        .await?;
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
    let st = tx
        .prepare_cached("DELETE FROM timers WHERE tenant = $1 AND queue = $2 AND timer_key = $3")
        .await?;
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
    let st = client
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM timers WHERE tenant = $1 AND queue = $2 AND timer_key = $3"
        ))
        .await?;
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
    let st = client
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM timers
              WHERE tenant = $1 AND queue = $2 AND ($3::text IS NULL OR timer_key > $3)
              ORDER BY timer_key LIMIT $4"
        ))
        .await?;
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
    let st = client
        .prepare_cached(
            "SELECT queue, count(*) AS pending, min(deliver_at) AS next
               FROM timers WHERE tenant = $1 GROUP BY queue ORDER BY queue",
        )
        .await?;
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
    let st = client
        .prepare_cached(
            "SELECT (extract(epoch FROM min(deliver_at) - clock_timestamp()) * 1000)::float8
                    AS ms
               FROM timers",
        )
        .await?;
    Ok(client.query_one(&st, &[]).await?.get("ms"))
}

/// The queues of the (at most `limit`) most overdue timers, each once, most overdue first,
/// and the database's `now()` they were due by.
pub async fn due(
    client: &Client,
    limit: i64,
) -> Result<(Vec<(String, String)>, Option<DateTime<Utc>>), StoreError> {
    let st = client
        .prepare_cached(
            "SELECT tenant, queue, now() AS at FROM timers
              WHERE deliver_at <= now() ORDER BY deliver_at LIMIT $1",
        )
        .await?;
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
    let st = tx
        .prepare_cached(&format!(
            "DELETE FROM timers
              WHERE tenant = $1 AND queue = $2 AND timer_key IN (
                    SELECT timer_key FROM timers
                     WHERE tenant = $1 AND queue = $2 AND deliver_at <= $3
                     ORDER BY deliver_at LIMIT $4
                       FOR UPDATE SKIP LOCKED)
             RETURNING {COLUMNS}"
        ))
        .await?;
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
    // Instants as parameters: Citus refuses `now()` beside a column in an update's SET.
    let st = tx
        .prepare_cached(
            "UPDATE timers t
                SET deliver_at = p.until, attempts = t.attempts + 1, updated_at = $5
               FROM unnest($3::text[], $4::timestamptz[]) AS p(k, until)
              WHERE t.tenant = $1 AND t.queue = $2 AND t.timer_key = p.k",
        )
        .await?;
    tx.execute(&st, &[&tenant, &queue, &keys, &until, &now])
        .await?;
    Ok(())
}
