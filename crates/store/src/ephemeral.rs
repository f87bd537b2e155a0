//! Ephemeral queues' tables (V18): the declared options (`ephemeral_queues`, logged) and the
//! contents (UNLOGGED: `ephemeral_live`, `_rings`, `_messages`, `_groups`, `_cursors`,
//! `_deliveries`). Every statement names the tenant and the queue, so on Citus it runs on
//! the one worker holding the tenant's shard. Every write of a queue's contents first locks
//! its live row ([`lock`]): the queue's writes take turns, and no other lock order exists.

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;

use crate::sql::ephemeral::{
    ADD_CURSORS, ADD_RING, APPEND, COUNT_RETRY_DROPS, CREATE, DECLARE, DECLARED, DELETE_CURSORS,
    DELETE_DECLARATION, DELETE_DELIVERIES, DELETE_GROUPS, DELETE_LIVE, DELETE_MESSAGES,
    DELETE_RINGS, DROP_OLDEST, DUE, EXPIRE, FORGET_EMPTY, GROUP_DEPTH, HELD, LEASE, LIST, LOCK,
    PARTITION_DEPTH, QUEUE_COUNT, REMEMBER_GROUP, REMOVE_DELIVERIES, RESET_LIVE, SETTLE_AGAIN,
    SETTLE_DONE, TAKE, TAKE_QUEUE_TURN, TOTALS, TRIM, UNCOUNT,
};
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
    let st = tx.prepare_cached(DECLARED).await?;
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
    let st = tx.prepare_cached(DECLARE).await?;
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
    let st = tx.prepare_cached(TAKE_QUEUE_TURN).await?;
    tx.query_one(&st, &[&tenant]).await?;
    let st = tx.prepare_cached(QUEUE_COUNT).await?;
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
    let st = tx.prepare_cached(LOCK).await?;
    Ok(tx.query_opt(&st, &[&tenant, &queue]).await?.map(|r| Live {
        epoch: r.get("epoch"),
        next_seq: r.get("next_seq"),
        length: r.get("length"),
        bytes: r.get("bytes"),
    }))
}

/// Gives the queue a live row (a new incarnation) unless it has one; then locks it.
pub async fn create(tx: &Tx<'_>, tenant: &str, queue: &str) -> Result<Live, StoreError> {
    let st = tx.prepare_cached(CREATE).await?;
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
    let st = tx.prepare_cached(REMOVE_DELIVERIES).await?;
    tx.execute(&st, &[&tenant, &queue, &seqs]).await?;
    let (ttl, bounds) = match counter {
        Counter::None => (0, 0),
        Counter::Ttl => (removed.count, 0),
        Counter::Bounds => (0, removed.count),
    };
    let st = tx.prepare_cached(UNCOUNT).await?;
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
    let ring = tx.prepare_cached(ADD_RING).await?;
    tx.execute(&ring, &[&tenant, &queue, &partition]).await?;
    let st = tx.prepare_cached(APPEND).await?;
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
    let st = tx.prepare_cached(REMEMBER_GROUP).await?;
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
    let st = tx.prepare_cached(DUE).await?;
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
    let cursors = tx.prepare_cached(ADD_CURSORS).await?;
    tx.execute(&cursors, &[&tenant, &queue, &group, &partition])
        .await?;
    let st = tx.prepare_cached(TAKE).await?;
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
    let st = tx.prepare_cached(LEASE).await?;
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
    let st = tx.prepare_cached(HELD).await?;
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
        (!done.is_empty(), SETTLE_DONE, done),
        (!again.is_empty(), SETTLE_AGAIN, again),
    ];
    for (_, sql, seqs) in steps.into_iter().filter(|s| s.0) {
        let st = tx.prepare_cached(sql).await?;
        tx.execute(&st, &[&tenant, &queue, &group, &seqs]).await?;
    }
    if dropped > 0 {
        let st = tx.prepare_cached(COUNT_RETRY_DROPS).await?;
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
    let st = tx.prepare_cached(FORGET_EMPTY).await?;
    tx.execute(&st, &[&tenant, &queue]).await?;
    Ok(())
}

/// Empties the queue (locked by the caller): messages, deliveries, cursors and partitions
/// go; its groups, options and incarnation stay. Returns the messages dropped.
pub async fn reset(tx: &Tx<'_>, tenant: &str, queue: &str) -> Result<i64, StoreError> {
    let mut dropped = 0;
    for sql in [
        DELETE_DELIVERIES,
        DELETE_CURSORS,
        DELETE_RINGS,
        DELETE_MESSAGES,
    ] {
        let st = tx.prepare_cached(sql).await?;
        dropped = tx.execute(&st, &[&tenant, &queue]).await? as i64;
    }
    let st = tx.prepare_cached(RESET_LIVE).await?;
    tx.execute(&st, &[&tenant, &queue]).await?;
    Ok(dropped)
}

/// Deletes the queue: its declaration and everything it holds. True when there was any.
pub async fn delete(tx: &Tx<'_>, tenant: &str, queue: &str) -> Result<bool, StoreError> {
    let mut any = false;
    // (statement, whether a row it deletes means the queue existed)
    for (sql, says) in [
        (DELETE_DELIVERIES, false),
        (DELETE_CURSORS, false),
        (DELETE_GROUPS, false),
        (DELETE_RINGS, false),
        (DELETE_MESSAGES, false),
        (DELETE_LIVE, true),
        (DELETE_DECLARATION, true),
    ] {
        let st = tx.prepare_cached(sql).await?;
        let n = tx.execute(&st, &[&tenant, &queue]).await?;
        any |= n > 0 && says;
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
    let st = client.prepare_cached(LIST).await?;
    Ok(client
        .query(&st, &[&tenant, &None::<&str>])
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
    let st = tx.prepare_cached(LIST).await?;
    Ok(tx
        .query_opt(&st, &[&tenant, &Some(queue)])
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
    let st = tx.prepare_cached(PARTITION_DEPTH).await?;
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
    let st = tx.prepare_cached(GROUP_DEPTH).await?;
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
    let st = client.prepare_cached(TOTALS).await?;
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
