//! The claim on Citus. A queue's cursors are spread over the workers with their partitions,
//! and Citus locks rows (`FOR UPDATE`) only in a statement routed to one shard. So a claim
//! reads its candidates first, without locks (the hinted partitions' shards, or every shard
//! in claim order, each shard's best few merged on the coordinator), then claims them one
//! partition at a time with the statement below, each routed to the partition's worker and
//! skipping a cursor another pop holds, the calls pipelined. The least recently claimed
//! partitions still come first, as on one PostgreSQL; a claim over partitions on two workers
//! commits on both in two phases.

use futures::future::try_join_all;
use tokio_postgres::types::ToSql;
use uuid::Uuid;

use super::{claimed, Claim, Claimed};
use crate::partitions::id_of;
use crate::{Layout, StoreError, Tx};

/// Whether a cursor has something to claim: the same conditions as the claim on one
/// PostgreSQL.
macro_rules! claimable {
    () => {
        "c.committed < p.next_offset - 1
          AND (c.lease_id IS NULL OR c.lease_expires_at <= now())
          AND ($3::float8 = 0 OR p.last_push_at <= now() - make_interval(secs => $3::float8))"
    };
}

/// The group's cursors that look claimable, least recently claimed first (`$4` of them),
/// partitions never claimed in the order they were created, as on one PostgreSQL, whose
/// partition ids are time-ordered where these are derived from names. A look, not a lock:
/// another pop may take one before this one claims it.
macro_rules! candidates {
    ($narrow:literal) => {
        concat!(
            "SELECT c.partition_id FROM cursors c JOIN partitions p ON p.id = c.partition_id
              WHERE c.queue_id = $1 AND c.consumer_group = $2",
            $narrow,
            " AND ",
            claimable!(),
            " ORDER BY c.lease_expires_at NULLS FIRST, p.created_at, c.partition_id LIMIT $4"
        )
    };
}
const CANDIDATES: &str = candidates!("");
const CANDIDATES_HINTED: &str = candidates!(" AND c.partition_id = ANY ($5::uuid[])");

/// Claims partition `$1` for the group under lease `$4` and reads it, as the claim on one
/// PostgreSQL does for each partition it takes; every table is named with the partition, so
/// Citus routes the whole statement to its worker. Nothing comes back when the cursor has
/// nothing to claim or another pop holds it.
const CLAIM_ONE: &str = concat!(
    "WITH cand AS (
       SELECT c.partition_id, c.committed, c.lease_end AS old_end,
              c.lease_expires_at AS last_claim, p.next_offset, p.name
         FROM cursors c JOIN partitions p ON p.id = c.partition_id
        WHERE c.partition_id = $1 AND p.id = $1 AND c.consumer_group = $2 AND c.queue_id = $7
          AND ",
    claimable!(),
    "
          FOR UPDATE OF c SKIP LOCKED),
     claimed AS (
       UPDATE cursors c
          SET lease_id = $4, lease_expires_at = now() + make_interval(secs => $5::float8),
              lease_end = least(cand.next_offset - 1, cand.committed + $6)
         FROM cand WHERE c.partition_id = $1 AND c.consumer_group = $2
       RETURNING c.partition_id, c.lease_id, cand.name, cand.committed, c.lease_end,
                 cand.old_end, cand.last_claim)
     SELECT cl.partition_id, cl.lease_id, cl.name, cl.committed, cl.lease_end, cl.old_end,
            cl.last_claim,
            (SELECT array_agg(t.\"offset\" ORDER BY t.\"offset\") FROM tombstones t
              WHERE t.partition_id = $1 AND t.\"offset\" > cl.committed
                AND t.\"offset\" <= cl.lease_end) AS tombstoned,
            now() AS db_now, s.base_offset, s.end_offset, s.created_at, s.frames
       FROM claimed cl
       LEFT JOIN LATERAL (
         (SELECT base_offset, end_offset, created_at, frames FROM segments
           WHERE partition_id = $1 AND end_offset > cl.committed AND end_offset <= cl.lease_end)
         UNION ALL
         (SELECT base_offset, end_offset, created_at, frames FROM segments
           WHERE partition_id = $1 AND end_offset > cl.lease_end
           ORDER BY end_offset LIMIT 1)) s ON s.base_offset <= cl.lease_end
      ORDER BY s.end_offset"
);

/// The hinted partitions first (when they yield anything), else the group's cursors in claim
/// order; a pop of one partition by name claims that one alone, on its worker.
pub(super) async fn claim(tx: &Tx<'_>, c: &Claim<'_>) -> Result<Claimed, StoreError> {
    if let Some(name) = c.partition {
        return claim_each(tx, c, &[id_of(Layout::Citus, c.queue_id, name)]).await;
    }
    if !c.hint.is_empty() {
        let hinted = candidates(tx, c, Some(c.hint)).await?;
        let claimed = claim_each(tx, c, &hinted).await?;
        if !claimed.partitions.is_empty() {
            return Ok(claimed);
        }
    }
    let walked = candidates(tx, c, None).await?;
    claim_each(tx, c, &walked).await
}

/// Twice as many candidates as partitions wanted, so that a few taken meanwhile by other
/// pops do not leave the claim short.
async fn candidates(
    tx: &Tx<'_>,
    c: &Claim<'_>,
    hint: Option<&[Uuid]>,
) -> Result<Vec<Uuid>, StoreError> {
    let window = c.window_buffer_seconds as f64;
    let limit = c.max_partitions.saturating_mul(2).max(2);
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&c.queue_id, &c.group, &window, &limit];
    let sql = match &hint {
        Some(h) => {
            params.push(h);
            CANDIDATES_HINTED
        }
        None => CANDIDATES,
    };
    let st = tx.prepare_cached(sql).await?;
    Ok(tx
        .query(&st, &params)
        .await?
        .iter()
        .map(|r| r.get("partition_id"))
        .collect())
}

/// Claims candidates in order until `max_partitions` are taken or none is left: as many at a
/// time as are still wanted, pipelined, the k-th taken under lease slot k.
async fn claim_each(
    tx: &Tx<'_>,
    c: &Claim<'_>,
    candidates: &[Uuid],
) -> Result<Claimed, StoreError> {
    let st = tx.prepare_cached(CLAIM_ONE).await?;
    let window = c.window_buffer_seconds as f64;
    let lease = c.lease_seconds as f64;
    let mut rows = Vec::new();
    let (mut taken, mut next) = (0usize, 0usize);
    let wanted = usize::try_from(c.max_partitions).unwrap_or(0);
    while taken < wanted && next < candidates.len() {
        let round = &candidates[next..candidates.len().min(next + wanted - taken)];
        next += round.len();
        let calls = round.iter().enumerate().map(|(i, pid)| {
            let (st, slot) = (&st, &c.leases[(taken + i).min(c.leases.len() - 1)]);
            async move {
                let params: [&(dyn ToSql + Sync); 7] =
                    [pid, &c.group, &window, slot, &lease, &c.batch, &c.queue_id];
                tx.query(st, &params).await
            }
        });
        for claimed in try_join_all(calls).await? {
            taken += usize::from(!claimed.is_empty());
            rows.extend(claimed);
        }
    }
    Ok(claimed(rows))
}
