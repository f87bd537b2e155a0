//! Resolving and committing the acks of one (partition, lease) group.
//!
//! The cursor row is locked first and the lease is checked on that locked row in the same
//! transaction that moves it: the lease is a fencing token, never a separate pre-check.

use deadpool_postgres::Transaction;
use uuid::Uuid;

use super::frames;
use super::queues::options_from;
use super::tx_hash::tx_hash;
use super::StoreError;
use crate::broker::ack_plan::{
    self, AckItem, AckPlan, CursorView, Policy, CONSUMER_NOT_FOUND, INVALID_LEASE, NOT_OWNED,
};
use crate::broker::status::AckStatus;

#[derive(Clone, Debug)]
pub struct AckRequestItem {
    pub status: AckStatus,
    pub transaction_id: String,
    pub error: Option<String>,
}

/// Acks sharing one partition, consumer group and lease (or no lease).
#[derive(Clone, Debug)]
pub struct AckGroup {
    /// As the client sent it: a malformed id fails in the database with its own message.
    pub partition_id: String,
    pub group: String,
    pub lease_id: Option<String>,
    pub items: Vec<AckRequestItem>,
    /// The items' offsets, when the caller already knows them (from what it delivered under
    /// the lease, `crate::deliveries`): the transaction index is then not consulted.
    pub known: Option<Vec<i64>>,
}

/// The offsets of the transaction ids whose index hashes are in `$hashes` (a `uuid[]`), in
/// the same order, NULL where one resolves nowhere, as an SQL array expression.
macro_rules! offsets_of {
    ($hashes:literal) => {
        concat!(
            "ARRAY(SELECT x.\"offset\"
                     FROM unnest(",
            $hashes,
            "::uuid[]) WITH ORDINALITY AS w(hash, ord)
                     LEFT JOIN tx_index x ON x.hash = w.hash
                    ORDER BY w.ord)"
        )
    };
}

/// Locks the cursor row and resolves the transaction ids (`$4`, their index hashes) in one
/// round trip; the queue's name and the partition's end say whether an ended lease leaves
/// the group something to claim.
const LOCK_AND_RESOLVE: &str = concat!(
    "SELECT c.committed, c.lease_id,
            (c.lease_id IS NOT NULL AND c.lease_expires_at > now()), c.lease_end, c.retry_count,
            q.options, q.id, p.id, ",
    offsets_of!("$4"),
    ", q.name, p.next_offset
       FROM cursors c
       JOIN partitions p ON p.id = c.partition_id
       JOIN queues q ON q.id = p.queue_id
      WHERE c.partition_id = $1::text::uuid AND c.consumer_group = $2 AND p.tenant = $3
        FOR UPDATE OF c"
);

/// The resolution of [`LOCK_AND_RESOLVE`] on its own, for a partition id the broker could not
/// parse but PostgreSQL could (so the hashes sent with it were keyed wrongly).
const RESOLVE: &str = concat!("SELECT ", offsets_of!("$1"));

const WRITE_CURSOR: &str = "UPDATE cursors
        SET committed = $3, retry_count = $4,
            lease_id = CASE WHEN $5 THEN NULL ELSE lease_id END
      WHERE partition_id = $1 AND consumer_group = $2";

/// The segment that holds an offset.
const SEGMENT_OF: &str = "SELECT base_offset, created_at, frames FROM segments
      WHERE partition_id = $1 AND end_offset >= $2 ORDER BY end_offset LIMIT 1";

/// A snapshot of the frame, so the entry outlives the log's retention.
const DEAD_LETTER: &str = "INSERT INTO dead_letters
         (tenant, queue_id, partition_id, consumer_group, \"offset\", message_id, transaction_id,
          frame, created_at, error, retry_count)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

/// How an ack whose `leaseId` is not the live lease is treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseCheck {
    /// The ack routes: refused with `invalid or expired lease` (the seed).
    Strict,
    /// Transactions: a replay of already-completed acks is a no-op (see `ack_plan::replay`).
    AllowReplay,
}

/// A group's plan as carried out, and what it left for the group's other consumers.
#[derive(Debug)]
pub struct Acked {
    pub plan: AckPlan,
    /// The queue's name when the ack ended the group's lease with messages still to read on
    /// the partition (a nack to retry, or a batch acked in part): once committed, the
    /// group's parked pops can claim them at once instead of at their next recheck.
    pub reopened: Option<String>,
}

impl From<AckPlan> for Acked {
    fn from(plan: AckPlan) -> Acked {
        Acked {
            plan,
            reopened: None,
        }
    }
}

/// Resolves and commits one group inside the caller's transaction and returns the plan that
/// was carried out (its `items` align with `group.items`).
pub async fn ack_group(
    tx: &Transaction<'_>,
    tenant: &str,
    group: &AckGroup,
    check: LeaseCheck,
) -> Result<Acked, StoreError> {
    let n = group.items.len();
    // A partition id only PostgreSQL can parse (or none at all) is keyed with the nil id here
    // and resolved again below once the row names the partition.
    let sent_partition = Uuid::parse_str(&group.partition_id).ok();
    let hashes = |partition: Uuid| -> Vec<Uuid> {
        group
            .items
            .iter()
            .map(|i| tx_hash(partition, &i.transaction_id))
            .collect()
    };
    // Offsets the caller already knows need no lookup: the statement then resolves nothing.
    let keyed = match &group.known {
        Some(_) => Vec::new(),
        None => hashes(sent_partition.unwrap_or(Uuid::nil())),
    };
    let st = tx.prepare_cached(LOCK_AND_RESOLVE).await?;
    let Some(row) = tx
        .query_opt(&st, &[&group.partition_id, &group.group, &tenant, &keyed])
        .await?
    else {
        let st = tx
            .prepare_cached("SELECT tenant FROM partitions WHERE id = $1::text::uuid")
            .await?;
        let owner: Option<String> = tx
            .query_opt(&st, &[&group.partition_id])
            .await?
            .map(|r| r.get(0));
        let error = match owner {
            Some(t) if t != tenant => NOT_OWNED,
            _ => CONSUMER_NOT_FOUND,
        };
        return Ok(AckPlan::refuse_all(n, error).into());
    };
    let committed: i64 = row.get(0);
    let live_lease: Option<Uuid> = row.get(1);
    let live: bool = row.get(2);
    let lease_end: Option<i64> = row.get(3);
    let retry_count: i32 = row.get(4);
    let options = options_from(row.get(5));
    let queue_id: Uuid = row.get(6);
    let partition_id: Uuid = row.get(7);
    let queue: String = row.get(9);
    let next_offset: i64 = row.get(10);

    let leased = group.lease_id.is_some();
    let lease_ok = match &group.lease_id {
        Some(sent) => live && live_lease.is_some() && Uuid::parse_str(sent).ok() == live_lease,
        None => true,
    };
    if !lease_ok && check == LeaseCheck::Strict {
        return Ok(AckPlan::refuse_all(n, INVALID_LEASE).into());
    }

    let mut at: Vec<Option<i64>> = match &group.known {
        Some(known) => known.iter().copied().map(Some).collect(),
        None => row.get(8),
    };
    if group.known.is_none() && sent_partition != Some(partition_id) {
        let st = tx.prepare_cached(RESOLVE).await?;
        at = tx.query_one(&st, &[&hashes(partition_id)]).await?.get(0);
    }
    let items: Vec<AckItem> = group
        .items
        .iter()
        .zip(at)
        .map(|(i, offset)| AckItem {
            status: i.status,
            offset,
            error: i.error.clone(),
        })
        .collect();
    if !lease_ok {
        return Ok(ack_plan::replay(committed, &items)
            .unwrap_or_else(|| AckPlan::refuse_all(n, INVALID_LEASE))
            .into());
    }

    let cursor = CursorView {
        committed,
        live_lease_end: if live { lease_end } else { None },
        last_lease_end: lease_end,
        retry_count,
    };
    let policy = Policy {
        retry_limit: options.retry_limit(),
        dead_letter: options.dead_letter_enabled(),
    };
    let plan = ack_plan::plan(&cursor, &policy, leased, &items);
    if !plan.changed {
        return Ok(plan.into());
    }
    let st = tx.prepare_cached(WRITE_CURSOR).await?;
    tx.execute(
        &st,
        &[
            &partition_id,
            &group.group,
            &plan.committed,
            &plan.retry_count,
            &plan.release_lease,
        ],
    )
    .await?;
    if let Some(dl) = &plan.dead_letter {
        let st = tx.prepare_cached(SEGMENT_OF).await?;
        let seg = tx.query_one(&st, &[&partition_id, &dl.offset]).await?;
        let base: i64 = seg.get(0);
        let created_at: chrono::DateTime<chrono::Utc> = seg.get(1);
        let bytes: &[u8] = seg.get(2);
        let raw = frames::raw_at(bytes, (dl.offset - base) as usize)?;
        let f = frames::iter(raw).next().ok_or(StoreError::Corrupt)??;
        let st = tx.prepare_cached(DEAD_LETTER).await?;
        tx.execute(
            &st,
            &[
                &tenant,
                &queue_id,
                &partition_id,
                &group.group,
                &dl.offset,
                &f.message_id,
                &f.transaction_id,
                &raw,
                &created_at,
                &dl.reason,
                &retry_count,
            ],
        )
        .await?;
    }
    let reopened = plan.reopens(next_offset).then_some(queue);
    Ok(Acked { plan, reopened })
}

/// Runs one group in its own transaction and maps every failure to the contract's per-item
/// texts: no connection -> `pool`; a statement failing -> the database's own message (a
/// malformed `partitionId` lands here); the commit failing -> `ack flush failed; ...`.
/// Retryable failures (serialization, deadlock) are retried first.
pub async fn run_group(store: &super::Store, tenant: &str, group: &AckGroup) -> Acked {
    use crate::broker::ack_plan::{FLUSH_FAILED, POOL};
    let n = group.items.len();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut client = match store.client().await {
            Ok(c) => c,
            Err(_) => return AckPlan::refuse_all(n, POOL).into(),
        };
        let result = async {
            let tx = client.transaction().await?;
            let acked = ack_group(&tx, tenant, group, LeaseCheck::Strict).await?;
            Ok::<_, StoreError>((tx, acked))
        }
        .await;
        let (tx, acked) = match result {
            Ok(r) => r,
            Err(e) if attempt < 4 && e.is_retryable() => continue,
            Err(e) => return AckPlan::refuse_all(n, &e.to_string()).into(),
        };
        return match tx.commit().await {
            Ok(()) => acked,
            Err(e) => {
                tracing::warn!(error = %e, "ack commit failed");
                AckPlan::refuse_all(n, FLUSH_FAILED).into()
            }
        };
    }
}

/// Runs several groups in one transaction, in the order given (which must be the global
/// lock order: by partition, then group), so many acks share one commit. A statement
/// failing is returned as the error, for the caller to fall back to [`run_group`] per group
/// (a group's failure must not touch the others); no connection answers `pool` for every
/// group; the commit failing answers `ack flush failed; ...` for every group.
pub async fn run_groups(
    store: &super::Store,
    tenant: &str,
    groups: &[&AckGroup],
) -> Result<Vec<Acked>, StoreError> {
    use crate::broker::ack_plan::{FLUSH_FAILED, POOL};
    let refuse = |error: &str| {
        groups
            .iter()
            .map(|g| AckPlan::refuse_all(g.items.len(), error).into())
            .collect()
    };
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut client = match store.client().await {
            Ok(c) => c,
            Err(_) => return Ok(refuse(POOL)),
        };
        let result = async {
            let tx = client.transaction().await?;
            let mut plans = Vec::with_capacity(groups.len());
            for g in groups {
                plans.push(ack_group(&tx, tenant, g, LeaseCheck::Strict).await?);
            }
            Ok::<_, StoreError>((tx, plans))
        }
        .await;
        let (tx, plans) = match result {
            Ok(r) => r,
            Err(e) if attempt < 4 && e.is_retryable() => continue,
            Err(e) => return Err(e),
        };
        return Ok(match tx.commit().await {
            Ok(()) => plans,
            Err(e) => {
                tracing::warn!(error = %e, "fused ack commit failed");
                refuse(FLUSH_FAILED)
            }
        });
    }
}
