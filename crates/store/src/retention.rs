//! Retention: whole segments deleted from the front of a partition's log once due, by age
//! alone (`retentionSeconds`) or by age once every consumer group of the queue has passed
//! them (`completedRetentionSeconds`). Segments are never rewritten: a segment goes when its
//! newest message is due. The partition's `first_offset` moves past them, cursors below it
//! move up to it (a lease entirely over deleted messages is released), and their traces go.

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use serde_json::Value;
use uuid::Uuid;

use crate::sql::retention::{EXPIRE, GROUPS, HAS_CURSOR, MOVE_CURSORS, MOVE_PAST, QUEUES};
use crate::{StoreError, Tx};

/// A queue whose options mention retention.
pub struct RetainedQueue {
    pub id: Uuid,
    pub options: Value,
}

/// Which segments of a queue are due: appended before `all_before`, or appended before
/// `passed_before` and passed by every group.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cutoffs {
    pub all_before: Option<DateTime<Utc>>,
    pub passed_before: Option<DateTime<Utc>>,
}

/// What one pass over a queue deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Expired {
    pub segments: i64,
    pub messages: i64,
}

pub async fn queues(client: &Client) -> Result<Vec<RetainedQueue>, StoreError> {
    let st = client.prepare_cached(QUEUES).await?;
    Ok(client
        .query(&st, &[])
        .await?
        .iter()
        .map(|r| RetainedQueue {
            id: r.get("id"),
            options: r.get("options"),
        })
        .collect())
}

/// Deletes up to `limit` due segments of the queue, a prefix of each partition's log, and
/// moves what hangs off them, in the caller's transaction. Each partition's log is read in
/// offset order up to its first segment not due, through the primary key: a partition with
/// nothing due costs one index probe.
pub async fn expire(
    tx: &Tx<'_>,
    queue_id: Uuid,
    cut: Cutoffs,
    limit: i64,
    queue_mode: &str,
) -> Result<Expired, StoreError> {
    let groups = subscribed(tx, queue_id, queue_mode).await?;
    let st = tx.prepare_cached(EXPIRE).await?;
    let rows = tx
        .query(
            &st,
            &[
                &queue_id,
                &cut.all_before,
                &cut.passed_before,
                &limit,
                &groups,
            ],
        )
        .await?;
    if rows.is_empty() {
        return Ok(Expired::default());
    }
    if cut.passed_before.is_some() && joined_since(tx, queue_id, queue_mode, &groups).await? {
        return Err(StoreError::Changed);
    }
    let partitions: Vec<Uuid> = rows.iter().map(|r| r.get("partition_id")).collect();
    let first_kept: Vec<i64> = rows.iter().map(|r| r.get("first_kept")).collect();
    let last_gone_at: Vec<DateTime<Utc>> = rows.iter().map(|r| r.get("last_gone_at")).collect();
    move_past(tx, &partitions, &first_kept, &last_gone_at).await?;
    Ok(Expired {
        segments: rows.iter().map(|r| r.get::<_, i64>("segments")).sum(),
        messages: rows.iter().map(|r| r.get::<_, i64>("messages")).sum(),
    })
}

/// The queue's consumer groups: the named ones (each has a subscription), and queue mode
/// (`queue_mode`, which has none) once it has a cursor on any of the queue's partitions, so
/// a partition it has not met yet keeps what it has not read, as a named group's does. A
/// queue never popped in queue mode is read by its named groups only.
async fn subscribed(
    tx: &Tx<'_>,
    queue_id: Uuid,
    queue_mode: &str,
) -> Result<Vec<String>, StoreError> {
    let st = tx.prepare_cached(GROUPS).await?;
    let mut groups: Vec<String> = tx
        .query(&st, &[&queue_id])
        .await?
        .iter()
        .map(|r| r.get("consumer_group"))
        .collect();
    let st = tx.prepare_cached(HAS_CURSOR).await?;
    if tx.query_one(&st, &[&queue_id, &queue_mode]).await?.get(0) {
        groups.push(queue_mode.to_string());
    }
    Ok(groups)
}

/// Whether a group not among `groups` has joined the queue by now. The groups are read in a
/// statement of their own, before the delete's (on READ COMMITTED, two snapshots): a group
/// that joined between them, with no cursor yet, was counted by neither, and the delete,
/// seeing acks committed after the join, could take what that group has not read. Read
/// again after the delete, any join committed before the delete's snapshot shows here, and
/// the pass is run again (`StoreError::Changed`) with the group counted
/// (`retention::a_group_that_joins_while_a_pass_runs_keeps_what_it_has_not_read`). One
/// statement over both would need a correlated subquery over `subscriptions`, a reference
/// table Citus cannot plan one over.
async fn joined_since(
    tx: &Tx<'_>,
    queue_id: Uuid,
    queue_mode: &str,
    groups: &[String],
) -> Result<bool, StoreError> {
    let now = subscribed(tx, queue_id, queue_mode).await?;
    Ok(now.iter().any(|g| !groups.contains(g)))
}

/// Moves the partitions' first offsets, the cursors below them (locked in the global order
/// first: partition, then group) and drops the traces of the deleted messages; keeps when the
/// newest deleted segment was appended, which a log emptied no longer tells.
async fn move_past(
    tx: &Tx<'_>,
    partitions: &[Uuid],
    first_kept: &[i64],
    last_gone_at: &[DateTime<Utc>],
) -> Result<(), StoreError> {
    let st = tx.prepare_cached(MOVE_CURSORS).await?;
    tx.query(&st, &[&partitions, &first_kept]).await?;
    let st = tx.prepare_cached(MOVE_PAST).await?;
    tx.execute(&st, &[&partitions, &first_kept, &last_gone_at])
        .await?;
    Ok(())
}
