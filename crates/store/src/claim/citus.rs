//! The claim on Citus. A queue's cursors are spread over the workers with their partitions,
//! and Citus locks rows (`FOR UPDATE`) only in a statement routed to one shard. So a claim
//! reads its candidates first, without locks (the hinted partitions' shards, or every shard
//! in claim order, each shard's best few merged on the coordinator), then claims them one
//! partition at a time (`claim_citus.sql`: `claim_one`), each routed to the partition's worker and
//! skipping a cursor another pop holds, the calls pipelined. The least recently claimed
//! partitions still come first, as on one PostgreSQL; a claim over partitions on two workers
//! commits on both in two phases.

use futures::future::try_join_all;
use tokio_postgres::types::ToSql;
use uuid::Uuid;

use super::{claimed, Claim, Claimed};
use crate::partitions::id_of;
use crate::sql::claim_citus::{CANDIDATES, CANDIDATES_HINTED, CLAIM_ONE};
use crate::{Layout, StoreError, Tx};

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
                let params: [&(dyn ToSql + Sync); 6] =
                    [pid, &c.group, &window, slot, &lease, &c.batch];
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
