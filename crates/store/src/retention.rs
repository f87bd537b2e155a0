//! Retention: whole segments deleted from the front of a partition's log once due, by age
//! alone (`retentionSeconds`) or by age once every consumer group of the queue has passed
//! them (`completedRetentionSeconds`). Segments are never rewritten: a segment goes when its
//! newest message is due. The partition's `first_offset` moves past them, cursors below it
//! move up to it (a lease entirely over deleted messages is released), and their traces go.

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use serde_json::Value;
use uuid::Uuid;

use crate::{Layout, StoreError, Tx};

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
    let st = client
        .prepare_cached(
            "SELECT id, options FROM queues
              WHERE options ?| array['retentionSeconds', 'completedRetentionSeconds',
                                     'maxWaitTimeSeconds']",
        )
        .await?;
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

/// Per partition of the queue, how far every group has passed: the lowest cursor, or -1
/// while a group of the queue has no cursor there yet (it may start from the beginning) or
/// no group has one at all (nothing has been consumed).
/// `$5` holds the queue's groups, read first ([`subscribed`]): Citus plans no correlated
/// subquery over a reference table such as `subscriptions`.
const PASSED: &str = "CASE WHEN (SELECT count(*) FROM cursors c
                       WHERE c.partition_id = p.id AND c.consumer_group = ANY ($5::text[]))
                    < cardinality($5::text[])
          THEN -1
          ELSE coalesce((SELECT min(c.committed) FROM cursors c WHERE c.partition_id = p.id), -1)
        END";

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
    let sql = format!(
        "WITH parts AS (
           SELECT p.id, p.next_offset, {PASSED} AS passed FROM partitions p WHERE p.queue_id = $1),
         keep AS (
           SELECT parts.id, coalesce((
               SELECT s.base_offset FROM segments s
                WHERE s.partition_id = parts.id
                  AND NOT (($2::timestamptz IS NOT NULL AND s.created_at < $2)
                           OR ($3::timestamptz IS NOT NULL AND s.created_at < $3
                               AND s.end_offset <= parts.passed))
                ORDER BY s.end_offset LIMIT 1),
               parts.next_offset) AS keep_from
             FROM parts),
         doomed AS (
           SELECT s.partition_id, s.end_offset FROM keep
             JOIN segments s ON s.partition_id = keep.id AND s.end_offset < keep.keep_from
            ORDER BY s.partition_id, s.end_offset LIMIT $4),
         gone AS (
           DELETE FROM segments s USING doomed d
            WHERE s.partition_id = d.partition_id AND s.end_offset = d.end_offset
           RETURNING s.partition_id, s.base_offset, s.end_offset)
         SELECT partition_id, max(end_offset) + 1 AS first_kept,
                count(*) AS segments, sum(end_offset - base_offset + 1)::bigint AS messages
           FROM gone GROUP BY partition_id ORDER BY partition_id"
    );
    let groups = subscribed(tx, queue_id, queue_mode).await?;
    let st = tx.prepare_cached(&sql).await?;
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
    move_past(tx, &partitions, &first_kept).await?;
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
    let st = tx
        .prepare_cached("SELECT consumer_group FROM subscriptions WHERE queue_id = $1")
        .await?;
    let mut groups: Vec<String> = tx
        .query(&st, &[&queue_id])
        .await?
        .iter()
        .map(|r| r.get("consumer_group"))
        .collect();
    // A statement of its own: Citus plans no query over both a reference table
    // (`subscriptions`) and a distributed one.
    let st = tx
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM cursors WHERE queue_id = $1 AND consumer_group = $2)",
        )
        .await?;
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
/// first: partition, then group) and drops the traces of the deleted messages.
async fn move_past(tx: &Tx<'_>, partitions: &[Uuid], first_kept: &[i64]) -> Result<(), StoreError> {
    // (On Citus an update that changes nothing takes the locks: see `partitions::lock`.)
    let st = tx
        .prepare_cached(match tx.layout() {
            Layout::Single => {
                "SELECT 1 FROM cursors c
                   JOIN unnest($1::uuid[], $2::bigint[]) AS u(pid, first_kept)
                     ON c.partition_id = u.pid
                  WHERE c.committed < u.first_kept - 1
                  ORDER BY c.partition_id, c.consumer_group
                    FOR UPDATE OF c"
            }
            Layout::Citus => {
                "UPDATE cursors c SET committed = c.committed
                   FROM unnest($1::uuid[], $2::bigint[]) AS u(pid, first_kept)
                  WHERE c.partition_id = u.pid AND c.committed < u.first_kept - 1"
            }
        })
        .await?;
    tx.query(&st, &[&partitions, &first_kept]).await?;
    let st = tx
        .prepare_cached(
            "WITH u AS (SELECT * FROM unnest($1::uuid[], $2::bigint[]) AS u(pid, first_kept)),
                  c AS (UPDATE cursors c
                           SET committed = u.first_kept - 1,
                               lease_id = CASE WHEN c.lease_end IS NULL OR c.lease_end < u.first_kept
                                               THEN NULL ELSE c.lease_id END
                          FROM u WHERE c.partition_id = u.pid AND c.committed < u.first_kept - 1),
                  t AS (DELETE FROM traces t USING u
                         WHERE t.partition_id = u.pid AND t.\"offset\" < u.first_kept),
                  k AS (DELETE FROM tombstones k USING u
                         WHERE k.partition_id = u.pid AND k.\"offset\" < u.first_kept)
             UPDATE partitions p SET first_offset = greatest(p.first_offset, u.first_kept)
               FROM u WHERE p.id = u.pid",
        )
        .await?;
    tx.execute(&st, &[&partitions, &first_kept]).await?;
    Ok(())
}
