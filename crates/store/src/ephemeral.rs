//! Ephemeral queues' tables (V18): the declared options (`ephemeral_queues`, logged) and the
//! contents (UNLOGGED: `ephemeral_live`, `_rings`, `_messages`, `_groups`, `_cursors`,
//! `_deliveries`). Every statement names the tenant and the queue, so on Citus it runs on
//! the one worker holding the tenant's shard. Every write of a queue's contents first locks
//! its live row ([`lock`]): the queue's writes take turns, and no other lock order exists.

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;

use crate::sql::ephemeral::{DROP_OLDEST, EXPIRE, TRIM};
use crate::{StoreError, Tx};

/// A queue's options as declared (`None`: the default); the policy as the client spelled it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredOptions {
    pub max_bytes: Option<i64>,
    pub max_length: Option<i64>,
    pub policy: Option<String>,
    pub ttl_seconds: Option<i64>,
    pub lease_seconds: Option<i64>,
    pub retry_limit: Option<i64>,
    pub window_ms: Option<i64>,
    pub window_count: Option<i64>,
}

const OPTION_COLUMNS: &str = "max_bytes, max_length, policy, ttl_seconds, lease_seconds, \
                              retry_limit, window_ms, window_count";

fn options_of(r: &tokio_postgres::Row) -> StoredOptions {
    StoredOptions {
        max_bytes: r.get("max_bytes"),
        max_length: r.get("max_length"),
        policy: r.get("policy"),
        ttl_seconds: r.get("ttl_seconds"),
        lease_seconds: r.get("lease_seconds"),
        retry_limit: r.get("retry_limit"),
        window_ms: r.get("window_ms"),
        window_count: r.get("window_count"),
    }
}

/// The queue's declared options; `None` when it is not declared.
pub async fn declared(
    tx: &Tx<'_>,
    tenant: &str,
    queue: &str,
) -> Result<Option<StoredOptions>, StoreError> {
    let st = tx
        .prepare_cached(&format!(
            "SELECT {OPTION_COLUMNS} FROM ephemeral_queues WHERE tenant = $1 AND name = $2"
        ))
        .await?;
    Ok(tx
        .query_opt(&st, &[&tenant, &queue])
        .await?
        .as_ref()
        .map(options_of))
}

/// Declares the queue with `o`, replacing what it was declared with; true when it was not
/// declared before.
pub async fn declare(
    tx: &Tx<'_>,
    tenant: &str,
    queue: &str,
    o: &StoredOptions,
) -> Result<bool, StoreError> {
    let st = tx
        .prepare_cached(&format!(
            "INSERT INTO ephemeral_queues (tenant, name, {OPTION_COLUMNS})
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
             ON CONFLICT (tenant, name) DO UPDATE
                SET max_bytes = excluded.max_bytes, max_length = excluded.max_length,
                    policy = excluded.policy, ttl_seconds = excluded.ttl_seconds,
                    lease_seconds = excluded.lease_seconds, retry_limit = excluded.retry_limit,
                    window_ms = excluded.window_ms, window_count = excluded.window_count,
                    updated_at = excluded.updated_at
             RETURNING (xmax = 0) AS created"
        ))
        .await?;
    let row = tx
        .query_one(
            &st,
            &[
                &tenant,
                &queue,
                &o.max_bytes,
                &o.max_length,
                &o.policy,
                &o.ttl_seconds,
                &o.lease_seconds,
                &o.retry_limit,
                &o.window_ms,
                &o.window_count,
            ],
        )
        .await?;
    Ok(row.get("created"))
}

/// How many queues the tenant has, declared or live, for a transaction about to make a new
/// one: it first takes the tenant's turn at making queues (an advisory lock held until it
/// ends), so the count (a statement begun after the turn came) sees every queue an earlier
/// turn made. Without the turn, new queues made together each counted the others as absent
/// and the tenant passed its limit.
pub async fn queue_count(tx: &Tx<'_>, tenant: &str) -> Result<i64, StoreError> {
    let st = tx
        .prepare_cached(
            "SELECT pg_advisory_xact_lock(hashtextextended('regent-ephemeral-queues/' || $1, 0))",
        )
        .await?;
    tx.query_one(&st, &[&tenant]).await?;
    let st = tx
        .prepare_cached(
            "SELECT count(*) AS n FROM (SELECT name FROM ephemeral_queues WHERE tenant = $1
                                        UNION SELECT queue FROM ephemeral_live WHERE tenant = $1) q",
        )
        .await?;
    Ok(tx.query_one(&st, &[&tenant]).await?.get("n"))
}

/// A queue's live row, as locked.
#[derive(Clone, Copy, Debug)]
pub struct Live {
    /// The incarnation its message ids name.
    pub epoch: i64,
    pub next_seq: i64,
    /// Messages and bytes held.
    pub length: i64,
    pub bytes: i64,
}

/// Locks the queue's live row for the transaction; `None` when the queue has none.
pub async fn lock(tx: &Tx<'_>, tenant: &str, queue: &str) -> Result<Option<Live>, StoreError> {
    let st = tx
        .prepare_cached(
            "SELECT epoch, next_seq, length, bytes FROM ephemeral_live
              WHERE tenant = $1 AND queue = $2 FOR UPDATE",
        )
        .await?;
    Ok(tx.query_opt(&st, &[&tenant, &queue]).await?.map(|r| Live {
        epoch: r.get("epoch"),
        next_seq: r.get("next_seq"),
        length: r.get("length"),
        bytes: r.get("bytes"),
    }))
}

/// Gives the queue a live row (a new incarnation) unless it has one; then locks it.
pub async fn create(tx: &Tx<'_>, tenant: &str, queue: &str) -> Result<Live, StoreError> {
    let st = tx
        .prepare_cached(
            "INSERT INTO ephemeral_live (tenant, queue) VALUES ($1, $2)
             ON CONFLICT (tenant, queue) DO NOTHING",
        )
        .await?;
    tx.execute(&st, &[&tenant, &queue]).await?;
    // The row exists now (this transaction's, or one committed before the conflict), and
    // nothing deletes it without first taking the lock the insert waited on.
    lock(tx, tenant, queue).await?.ok_or(StoreError::Corrupt)
}

/// Messages and bytes a statement removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Removed {
    pub count: i64,
    pub bytes: i64,
}

/// Which drop counter a removal adds to.
#[derive(Clone, Copy)]
enum Counter {
    None,
    Ttl,
    Bounds,
}

/// Removes the messages `sql` selects and deletes (`$3` and `$4` its parameters, returning
/// `seq, bytes`), then their deliveries, and takes them off the live row's counts (and adds
/// them to `counter`). One statement each: on Citus a data-modifying CTE beside another did
/// not apply.
async fn remove(
    tx: &Tx<'_>,
    sql: &'static str,
    tenant: &str,
    queue: &str,
    params: [&(dyn tokio_postgres::types::ToSql + Sync); 2],
    counter: Counter,
) -> Result<Removed, StoreError> {
    let st = tx.prepare_cached(sql).await?;
    let rows = tx
        .query(&st, &[&tenant, &queue, params[0], params[1]])
        .await?;
    let seqs: Vec<i64> = rows.iter().map(|r| r.get("seq")).collect();
    let removed = Removed {
        count: seqs.len() as i64,
        bytes: rows.iter().map(|r| r.get::<_, i64>("bytes")).sum(),
    };
    if seqs.is_empty() {
        return Ok(removed);
    }
    let st = tx
        .prepare_cached(
            "DELETE FROM ephemeral_deliveries WHERE tenant = $1 AND queue = $2 AND seq = ANY($3)",
        )
        .await?;
    tx.execute(&st, &[&tenant, &queue, &seqs]).await?;
    let (ttl, bounds) = match counter {
        Counter::None => (0, 0),
        Counter::Ttl => (removed.count, 0),
        Counter::Bounds => (0, removed.count),
    };
    let st = tx
        .prepare_cached(
            "UPDATE ephemeral_live
                SET length = length - $3, bytes = bytes - $4,
                    dropped_ttl = dropped_ttl + $5, dropped_bounds = dropped_bounds + $6
              WHERE tenant = $1 AND queue = $2",
        )
        .await?;
    tx.execute(
        &st,
        &[
            &tenant,
            &queue,
            &removed.count,
            &removed.bytes,
            &ttl,
            &bounds,
        ],
    )
    .await?;
    Ok(removed)
}

/// Drops the queue's messages older than `ttl_seconds`, counted as dropped by ttl.
pub async fn expire(
    tx: &Tx<'_>,
    tenant: &str,
    queue: &str,
    ttl_seconds: i64,
) -> Result<Removed, StoreError> {
    remove(
        tx,
        EXPIRE,
        tenant,
        queue,
        [&ttl_seconds, &true],
        Counter::Ttl,
    )
    .await
}

/// Drops the queue's oldest messages until at least `count` messages and `bytes` bytes are
/// gone, counted as dropped by the queue's bounds.
pub async fn drop_oldest(
    tx: &Tx<'_>,
    tenant: &str,
    queue: &str,
    count: i64,
    bytes: i64,
) -> Result<Removed, StoreError> {
    remove(
        tx,
        DROP_OLDEST,
        tenant,
        queue,
        [&count, &bytes],
        Counter::Bounds,
    )
    .await
}

/// Appends `payloads` to the queue's `partition` as sequence numbers `first..`, and counts
/// them on the live row (locked by the caller).
pub async fn append(
    tx: &Tx<'_>,
    tenant: &str,
    queue: &str,
    partition: &str,
    first: i64,
    payloads: &[&str],
) -> Result<(), StoreError> {
    let ring = tx
        .prepare_cached(
            "INSERT INTO ephemeral_rings (tenant, queue, partition) VALUES ($1, $2, $3)
             ON CONFLICT DO NOTHING",
        )
        .await?;
    tx.execute(&ring, &[&tenant, &queue, &partition]).await?;
    let st = tx
        .prepare_cached(
            "WITH added AS (
               INSERT INTO ephemeral_messages (tenant, queue, seq, partition, payload, bytes)
               SELECT $1, $2, $4 + p.i - 1, $3, p.payload, octet_length(p.payload)
                 FROM unnest($5::text[]) WITH ORDINALITY AS p(payload, i)
               RETURNING bytes)
             UPDATE ephemeral_live
                SET next_seq = $4 + cardinality($5::text[]),
                    length = length + cardinality($5::text[]),
                    bytes = ephemeral_live.bytes + (SELECT coalesce(sum(bytes), 0) FROM added)
              WHERE tenant = $1 AND queue = $2",
        )
        .await?;
    tx.execute(&st, &[&tenant, &queue, &partition, &first, &payloads])
        .await?;
    Ok(())
}

/// Remembers `group` among the queue's consumer groups, unless it already holds `cap`.
pub async fn remember_group(
    tx: &Tx<'_>,
    tenant: &str,
    queue: &str,
    group: &str,
    cap: i64,
) -> Result<(), StoreError> {
    let st = tx
        .prepare_cached(
            "INSERT INTO ephemeral_groups (tenant, queue, grp)
             SELECT $1, $2, $3
              WHERE (SELECT count(*) FROM ephemeral_groups WHERE tenant = $1 AND queue = $2) < $4
             ON CONFLICT DO NOTHING",
        )
        .await?;
    tx.execute(&st, &[&tenant, &queue, &group, &cap]).await?;
    Ok(())
}

/// A message handed to a pop.
#[derive(Clone, Debug)]
pub struct Handed {
    pub seq: i64,
    pub partition: String,
    /// Deliveries before this one (0 for a first delivery).
    pub attempts: i32,
    /// The client's JSON text.
    pub payload: String,
}

fn handed(r: &tokio_postgres::Row) -> Handed {
    Handed {
        seq: r.get("seq"),
        partition: r.get("partition"),
        attempts: r.get("attempts"),
        payload: r.get("payload"),
    }
}

/// Up to `limit` of the group's deliveries due again (lease expired, or nacked), oldest
/// first, in `partition` when named.
pub async fn due(
    tx: &Tx<'_>,
    tenant: &str,
    queue: &str,
    group: &str,
    partition: Option<&str>,
    limit: i64,
) -> Result<Vec<Handed>, StoreError> {
    let st = tx
        .prepare_cached(
            "SELECT d.seq, d.partition, d.attempts, m.payload
               FROM ephemeral_deliveries d
               JOIN ephemeral_messages m ON m.tenant = d.tenant AND m.queue = d.queue AND m.seq = d.seq
              WHERE d.tenant = $1 AND d.queue = $2 AND d.grp = $3 AND m.tenant = $1 AND m.queue = $2
                AND ($4::text IS NULL OR d.partition = $4) AND d.lease_until <= now()
              ORDER BY d.seq
              LIMIT $5",
        )
        .await?;
    let rows = tx
        .query(&st, &[&tenant, &queue, &group, &partition, &limit])
        .await?;
    Ok(rows.iter().map(handed).collect())
}

/// Up to `limit` messages the group has not been handed, oldest first, in `partition` when
/// named (else in any partition holding messages); the group's cursors move past them.
pub async fn take(
    tx: &Tx<'_>,
    tenant: &str,
    queue: &str,
    group: &str,
    partition: Option<&str>,
    limit: i64,
) -> Result<Vec<Handed>, StoreError> {
    // The group's cursors first, in a statement of their own: a statement does not see the
    // rows it inserts, and the move below must.
    let cursors = tx
        .prepare_cached(
            "INSERT INTO ephemeral_cursors (tenant, queue, grp, partition, next_seq)
             SELECT $1, $2, $3, p, 0
               FROM (SELECT $4::text AS p WHERE $4::text IS NOT NULL
                     UNION SELECT partition FROM ephemeral_rings
                            WHERE tenant = $1 AND queue = $2 AND $4::text IS NULL) s
             ON CONFLICT DO NOTHING",
        )
        .await?;
    tx.execute(&cursors, &[&tenant, &queue, &group, &partition])
        .await?;
    let st = tx
        .prepare_cached(
            "WITH picked AS (
               SELECT m.seq, m.partition, m.payload
                 FROM ephemeral_messages m
                 JOIN ephemeral_cursors c ON c.tenant = m.tenant AND c.queue = m.queue
                                         AND c.partition = m.partition
                WHERE m.tenant = $1 AND m.queue = $2 AND c.tenant = $1 AND c.queue = $2
                  AND c.grp = $3 AND ($4::text IS NULL OR c.partition = $4)
                  AND m.seq >= c.next_seq
                ORDER BY m.seq
                LIMIT $5),
             moved AS (
               UPDATE ephemeral_cursors c SET next_seq = t.top + 1
                 FROM (SELECT partition, max(seq) AS top FROM picked GROUP BY partition) t
                WHERE c.tenant = $1 AND c.queue = $2 AND c.grp = $3 AND c.partition = t.partition)
             SELECT seq, partition, 0::int AS attempts, payload FROM picked ORDER BY seq",
        )
        .await?;
    let rows = tx
        .query(&st, &[&tenant, &queue, &group, &partition, &limit])
        .await?;
    Ok(rows.iter().map(handed).collect())
}

/// Leases the group's deliveries (sequence number, partition, deliveries so far including
/// this one) until `lease_seconds` from now.
pub async fn lease(
    tx: &Tx<'_>,
    tenant: &str,
    queue: &str,
    group: &str,
    handed: &[(i64, &str, i32)],
    lease_seconds: i64,
) -> Result<(), StoreError> {
    if handed.is_empty() {
        return Ok(());
    }
    let seqs: Vec<i64> = handed.iter().map(|h| h.0).collect();
    let partitions: Vec<&str> = handed.iter().map(|h| h.1).collect();
    let attempts: Vec<i32> = handed.iter().map(|h| h.2).collect();
    let st = tx
        .prepare_cached(
            "INSERT INTO ephemeral_deliveries (tenant, queue, grp, seq, partition, attempts, lease_until)
             SELECT $1, $2, $3, h.seq, h.partition, h.attempts,
                    now() + make_interval(secs => $7::bigint)
               FROM unnest($4::bigint[], $5::text[], $6::int[]) AS h(seq, partition, attempts)
             ON CONFLICT (tenant, queue, grp, seq) DO UPDATE
                SET attempts = excluded.attempts, lease_until = excluded.lease_until",
        )
        .await?;
    tx.execute(
        &st,
        &[
            &tenant,
            &queue,
            &group,
            &seqs,
            &partitions,
            &attempts,
            &lease_seconds,
        ],
    )
    .await?;
    Ok(())
}

/// The group's deliveries among `seqs`: (sequence number, partition, deliveries so far).
pub async fn held(
    tx: &Tx<'_>,
    tenant: &str,
    queue: &str,
    group: &str,
    seqs: &[i64],
) -> Result<Vec<(i64, String, i32)>, StoreError> {
    let st = tx
        .prepare_cached(
            "SELECT seq, partition, attempts FROM ephemeral_deliveries
              WHERE tenant = $1 AND queue = $2 AND grp = $3 AND seq = ANY($4)",
        )
        .await?;
    let rows = tx.query(&st, &[&tenant, &queue, &group, &seqs]).await?;
    Ok(rows
        .iter()
        .map(|r| (r.get("seq"), r.get("partition"), r.get("attempts")))
        .collect())
}

/// Ends the group's deliveries `done` and makes `again` due now; counts `dropped` as dropped
/// past the queue's retry limit. One statement each, only those with something to do.
pub async fn settle(
    tx: &Tx<'_>,
    tenant: &str,
    queue: &str,
    group: &str,
    done: &[i64],
    again: &[i64],
    dropped: i64,
) -> Result<(), StoreError> {
    let steps: [(bool, &str, &[i64]); 2] = [
        (
            !done.is_empty(),
            "DELETE FROM ephemeral_deliveries
              WHERE tenant = $1 AND queue = $2 AND grp = $3 AND seq = ANY($4)",
            done,
        ),
        (
            !again.is_empty(),
            "UPDATE ephemeral_deliveries SET lease_until = now()
              WHERE tenant = $1 AND queue = $2 AND grp = $3 AND seq = ANY($4)",
            again,
        ),
    ];
    for (_, sql, seqs) in steps.into_iter().filter(|s| s.0) {
        let st = tx.prepare_cached(sql).await?;
        tx.execute(&st, &[&tenant, &queue, &group, &seqs]).await?;
    }
    if dropped > 0 {
        let st = tx
            .prepare_cached(
                "UPDATE ephemeral_live SET dropped_retry = dropped_retry + $3
                  WHERE tenant = $1 AND queue = $2",
            )
            .await?;
        tx.execute(&st, &[&tenant, &queue, &dropped]).await?;
    }
    Ok(())
}

/// Removes the queue's messages every remembered group is past (handed, and not held by a
/// delivery); then forgets the partitions left empty, and their cursors (a cursor of an
/// empty partition is the head again: sequence numbers only grow). A queue no group has
/// popped keeps its messages for the first one.
pub async fn trim(tx: &Tx<'_>, tenant: &str, queue: &str) -> Result<Removed, StoreError> {
    let removed = remove(tx, TRIM, tenant, queue, [&true, &true], Counter::None).await?;
    if removed.count > 0 {
        forget_empty(tx, tenant, queue).await?;
    }
    Ok(removed)
}

async fn forget_empty(tx: &Tx<'_>, tenant: &str, queue: &str) -> Result<(), StoreError> {
    let st = tx
        .prepare_cached(
            "WITH empty AS (
               DELETE FROM ephemeral_rings r WHERE r.tenant = $1 AND r.queue = $2
                  AND NOT EXISTS (SELECT 1 FROM ephemeral_messages m
                                   WHERE m.tenant = $1 AND m.queue = $2 AND m.partition = r.partition)
               RETURNING partition)
             DELETE FROM ephemeral_cursors c USING empty e
              WHERE c.tenant = $1 AND c.queue = $2 AND c.partition = e.partition",
        )
        .await?;
    tx.execute(&st, &[&tenant, &queue]).await?;
    Ok(())
}

/// Empties the queue (locked by the caller): messages, deliveries, cursors and partitions
/// go; its groups, options and incarnation stay. Returns the messages dropped.
pub async fn reset(tx: &Tx<'_>, tenant: &str, queue: &str) -> Result<i64, StoreError> {
    let mut dropped = 0;
    for sql in [
        "DELETE FROM ephemeral_deliveries WHERE tenant = $1 AND queue = $2",
        "DELETE FROM ephemeral_cursors WHERE tenant = $1 AND queue = $2",
        "DELETE FROM ephemeral_rings WHERE tenant = $1 AND queue = $2",
        "DELETE FROM ephemeral_messages WHERE tenant = $1 AND queue = $2",
    ] {
        let st = tx.prepare_cached(sql).await?;
        dropped = tx.execute(&st, &[&tenant, &queue]).await? as i64;
    }
    let st = tx
        .prepare_cached(
            "UPDATE ephemeral_live SET length = 0, bytes = 0 WHERE tenant = $1 AND queue = $2",
        )
        .await?;
    tx.execute(&st, &[&tenant, &queue]).await?;
    Ok(dropped)
}

/// Deletes the queue: its declaration and everything it holds. True when there was any.
pub async fn delete(tx: &Tx<'_>, tenant: &str, queue: &str) -> Result<bool, StoreError> {
    let mut any = false;
    for sql in [
        "DELETE FROM ephemeral_deliveries WHERE tenant = $1 AND queue = $2",
        "DELETE FROM ephemeral_cursors WHERE tenant = $1 AND queue = $2",
        "DELETE FROM ephemeral_groups WHERE tenant = $1 AND queue = $2",
        "DELETE FROM ephemeral_rings WHERE tenant = $1 AND queue = $2",
        "DELETE FROM ephemeral_messages WHERE tenant = $1 AND queue = $2",
        "DELETE FROM ephemeral_live WHERE tenant = $1 AND queue = $2",
        "DELETE FROM ephemeral_queues WHERE tenant = $1 AND name = $2",
    ] {
        let st = tx.prepare_cached(sql).await?;
        let n = tx.execute(&st, &[&tenant, &queue]).await?;
        any |= n > 0 && (sql.contains("_live") || sql.contains("_queues"));
    }
    Ok(any)
}

/// One queue of a tenant's listing.
#[derive(Clone, Debug)]
pub struct EphemeralRow {
    pub name: String,
    /// `Some` when declared.
    pub declared: Option<StoredOptions>,
    pub length: i64,
    pub bytes: i64,
    pub partitions: i64,
    pub groups: i64,
    pub dropped_bounds: i64,
    pub dropped_ttl: i64,
    pub dropped_retry: i64,
    pub created_at: DateTime<Utc>,
}

const QUEUE_ROW: &str =
    "SELECT coalesce(q.name, l.queue) AS name, q.name IS NOT NULL AS is_declared,
        q.max_bytes, q.max_length, q.policy, q.ttl_seconds, q.lease_seconds, q.retry_limit,
        q.window_ms, q.window_count,
        coalesce(l.length, 0) AS length, coalesce(l.bytes, 0) AS bytes,
        coalesce(l.dropped_bounds, 0) AS dropped_bounds, coalesce(l.dropped_ttl, 0) AS dropped_ttl,
        coalesce(l.dropped_retry, 0) AS dropped_retry,
        least(q.created_at, l.created_at) AS created_at,
        (SELECT count(*) FROM ephemeral_rings r
          WHERE r.tenant = $1 AND r.queue = coalesce(q.name, l.queue)) AS partitions,
        (SELECT count(*) FROM ephemeral_groups g
          WHERE g.tenant = $1 AND g.queue = coalesce(q.name, l.queue)) AS groups
   FROM (SELECT * FROM ephemeral_queues WHERE tenant = $1) q
   FULL JOIN (SELECT * FROM ephemeral_live WHERE tenant = $1) l ON l.queue = q.name";

fn queue_row(r: &tokio_postgres::Row) -> EphemeralRow {
    let declared: bool = r.get("is_declared");
    EphemeralRow {
        name: r.get("name"),
        declared: declared.then(|| options_of(r)),
        length: r.get("length"),
        bytes: r.get("bytes"),
        partitions: r.get("partitions"),
        groups: r.get("groups"),
        dropped_bounds: r.get("dropped_bounds"),
        dropped_ttl: r.get("dropped_ttl"),
        dropped_retry: r.get("dropped_retry"),
        created_at: r.get("created_at"),
    }
}

/// The tenant's queues, declared or live, by name.
pub async fn list(client: &Client, tenant: &str) -> Result<Vec<EphemeralRow>, StoreError> {
    let st = client
        .prepare_cached(&format!("{QUEUE_ROW} ORDER BY 1"))
        .await?;
    Ok(client
        .query(&st, &[&tenant])
        .await?
        .iter()
        .map(queue_row)
        .collect())
}

/// The tenant's queue `queue`, declared or live.
pub async fn find(
    tx: &Tx<'_>,
    tenant: &str,
    queue: &str,
) -> Result<Option<EphemeralRow>, StoreError> {
    let st = tx
        .prepare_cached(&format!("SELECT * FROM ({QUEUE_ROW}) s WHERE s.name = $2"))
        .await?;
    Ok(tx
        .query_opt(&st, &[&tenant, &queue])
        .await?
        .as_ref()
        .map(queue_row))
}

/// One partition's messages and bytes.
#[derive(Clone, Debug)]
pub struct PartitionDepth {
    pub partition: String,
    pub messages: i64,
    pub bytes: i64,
}

/// One group's backlog: messages it has not been handed, deliveries due again, and
/// deliveries under a live lease.
#[derive(Clone, Debug)]
pub struct GroupDepth {
    pub group: String,
    pub fresh: i64,
    pub due: i64,
    pub leased: i64,
}

/// The queue's partitions and groups, by name.
pub async fn depth(
    tx: &Tx<'_>,
    tenant: &str,
    queue: &str,
) -> Result<(Vec<PartitionDepth>, Vec<GroupDepth>), StoreError> {
    let st = tx
        .prepare_cached(
            "SELECT partition, count(*) AS messages, sum(bytes)::bigint AS bytes
               FROM ephemeral_messages WHERE tenant = $1 AND queue = $2
              GROUP BY partition ORDER BY partition",
        )
        .await?;
    let partitions = tx
        .query(&st, &[&tenant, &queue])
        .await?
        .iter()
        .map(|r| PartitionDepth {
            partition: r.get("partition"),
            messages: r.get("messages"),
            bytes: r.get("bytes"),
        })
        .collect();
    let st = tx
        .prepare_cached(
            "SELECT g.grp,
                    (SELECT count(*) FROM ephemeral_messages m
                       LEFT JOIN ephemeral_cursors c
                              ON c.tenant = $1 AND c.queue = $2 AND c.grp = g.grp
                             AND c.partition = m.partition
                      WHERE m.tenant = $1 AND m.queue = $2
                        AND m.seq >= coalesce(c.next_seq, 0)) AS fresh,
                    (SELECT count(*) FROM ephemeral_deliveries d
                      WHERE d.tenant = $1 AND d.queue = $2 AND d.grp = g.grp
                        AND d.lease_until <= now()) AS due,
                    (SELECT count(*) FROM ephemeral_deliveries d
                      WHERE d.tenant = $1 AND d.queue = $2 AND d.grp = g.grp
                        AND d.lease_until > now()) AS leased
               FROM ephemeral_groups g WHERE g.tenant = $1 AND g.queue = $2
              ORDER BY g.grp",
        )
        .await?;
    let groups = tx
        .query(&st, &[&tenant, &queue])
        .await?
        .iter()
        .map(|r| GroupDepth {
            group: r.get("grp"),
            fresh: r.get("fresh"),
            due: r.get("due"),
            leased: r.get("leased"),
        })
        .collect();
    Ok((partitions, groups))
}

/// Per tenant: its queues with contents, and the messages and bytes they hold (the
/// Prometheus gauges).
pub async fn totals(client: &Client) -> Result<Vec<(String, i64, i64, i64)>, StoreError> {
    let st = client
        .prepare_cached(
            "SELECT tenant, count(*) AS queues, sum(length)::bigint AS messages,
                    sum(bytes)::bigint AS bytes
               FROM ephemeral_live GROUP BY tenant ORDER BY tenant",
        )
        .await?;
    Ok(client
        .query(&st, &[])
        .await?
        .iter()
        .map(|r| {
            (
                r.get("tenant"),
                r.get("queues"),
                r.get("messages"),
                r.get("bytes"),
            )
        })
        .collect())
}
