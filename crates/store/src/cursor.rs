//! A consumer group's cursor on a partition, as acks see it: locked, read with the offsets
//! of the transaction ids being acked, and written back.
//!
//! The cursor row is locked first and the caller checks the lease on that locked row in the
//! same transaction that moves it: the lease is a fencing token, never a separate pre-check.

use serde_json::Value;
use tokio_postgres::Row;
use uuid::Uuid;

use crate::sql::cursor::{
    COMPLETE_IN_LEASE, COMPLETE_IN_LEASE_CITUS, IN_RANGE, LIVE_LEASES, LOCK_AND_RESOLVE,
    LOCK_AND_RESOLVE_CITUS, OWNER, RESOLVE, RESOLVE_CITUS, WRITE,
};
use crate::{frames, Layout, StoreError, Tx};

/// A locked cursor row and what the ack needs around it.
#[derive(Debug)]
pub struct Locked {
    /// Every offset <= committed is done; -1 = nothing consumed.
    pub committed: i64,
    pub lease_id: Option<Uuid>,
    /// Whether `lease_id` is live (unexpired, not released).
    pub live: bool,
    /// The end of the latest lease's range, live or not.
    pub lease_end: Option<i64>,
    pub retry_count: i32,
    /// The queue's options as stored.
    pub options: Value,
    pub queue_id: Uuid,
    pub queue: String,
    pub partition_id: Uuid,
    pub next_offset: i64,
    /// The offsets of the hashes asked about, in order; `None` where one resolves nowhere.
    pub offsets: Vec<Option<i64>>,
}

impl From<&Row> for Locked {
    fn from(r: &Row) -> Locked {
        Locked {
            committed: r.get("committed"),
            lease_id: r.get("lease_id"),
            live: r.get("live"),
            lease_end: r.get("lease_end"),
            retry_count: r.get("retry_count"),
            options: r.get("options"),
            queue_id: r.get("queue_id"),
            queue: r.get("queue"),
            partition_id: r.get("partition_id"),
            next_offset: r.get("next_offset"),
            offsets: r.get("offsets"),
        }
    }
}

/// Locks the group's cursor on the tenant's partition and resolves `hashes` with it.
/// `partition_id` is the text the client sent: one PostgreSQL cannot read as a uuid fails
/// here with its own message, which the ack contract reports as it is. `None` when the
/// tenant's partition has no cursor of the group.
pub async fn lock(
    tx: &Tx<'_>,
    tenant: &str,
    partition_id: &str,
    group: &str,
    hashes: &[Uuid],
) -> Result<Option<Locked>, StoreError> {
    let st = tx
        .prepare_cached(match tx.layout() {
            Layout::Single => LOCK_AND_RESOLVE,
            Layout::Citus => LOCK_AND_RESOLVE_CITUS,
        })
        .await?;
    Ok(tx
        .query_opt(&st, &[&partition_id, &group, &tenant, &hashes])
        .await?
        .as_ref()
        .map(Locked::from))
}

/// The offsets of `hashes` (of transaction ids in `partition`) in the index, in order.
pub async fn resolve(
    tx: &Tx<'_>,
    partition: Uuid,
    hashes: &[Uuid],
) -> Result<Vec<Option<i64>>, StoreError> {
    let row = match tx.layout() {
        Layout::Single => {
            let st = tx.prepare_cached(RESOLVE).await?;
            tx.query_one(&st, &[&hashes]).await?
        }
        Layout::Citus => {
            let st = tx.prepare_cached(RESOLVE_CITUS).await?;
            tx.query_one(&st, &[&hashes, &partition]).await?
        }
    };
    Ok(row.get("offsets"))
}

/// The offsets of `transaction_ids` among the partition's offsets `after+1..=upto` (a live
/// lease's range), read from the segments' frames; `None` where one is not there. What an
/// ack inside its lease falls back to when the index no longer holds the id: every frame
/// carries its transaction id, so no window limits it.
pub async fn resolve_in_range(
    tx: &impl deadpool_postgres::GenericClient,
    partition: Uuid,
    after: i64,
    upto: i64,
    transaction_ids: &[&str],
) -> Result<Vec<Option<i64>>, StoreError> {
    let st = tx.prepare_cached(IN_RANGE).await?;
    let mut found: Vec<Option<i64>> = vec![None; transaction_ids.len()];
    for row in tx.query(&st, &[&partition, &after, &upto]).await? {
        let base: i64 = row.get("base_offset");
        let segment: &[u8] = row.get("frames");
        for (i, frame) in frames::split(segment).enumerate() {
            let offset = base + i as i64;
            if offset <= after || offset > upto {
                continue;
            }
            let id = frames::transaction_id(frame?)?;
            for (slot, _) in transaction_ids
                .iter()
                .enumerate()
                .filter(|(_, t)| **t == id)
            {
                found[slot] = Some(offset);
            }
        }
    }
    Ok(found)
}

/// The ranges `(committed, lease_end]` of the partition's live leases, over every group: where
/// a message being worked on is, whatever the deduplication window.
pub async fn live_leases(
    client: &impl deadpool_postgres::GenericClient,
    partition: Uuid,
) -> Result<Vec<(i64, i64)>, StoreError> {
    let st = client.prepare_cached(LIVE_LEASES).await?;
    Ok(client
        .query(&st, &[&partition])
        .await?
        .iter()
        .map(|r| (r.get("committed"), r.get("lease_end")))
        .collect())
}

/// The tenant a partition belongs to (its id as the client sent it), if it exists.
pub async fn owner(tx: &Tx<'_>, partition_id: &str) -> Result<Option<String>, StoreError> {
    let st = tx.prepare_cached(OWNER).await?;
    Ok(tx
        .query_opt(&st, &[&partition_id])
        .await?
        .map(|r| r.get("tenant")))
}

/// Writes a locked cursor back.
pub async fn write(
    tx: &Tx<'_>,
    partition_id: Uuid,
    group: &str,
    committed: i64,
    retry_count: i32,
    release_lease: bool,
) -> Result<(), StoreError> {
    let st = tx.prepare_cached(WRITE).await?;
    tx.execute(
        &st,
        &[
            &partition_id,
            &group,
            &committed,
            &retry_count,
            &release_lease,
        ],
    )
    .await?;
    Ok(())
}

/// Acks that complete messages of their live lease, every offset above the cursor and inside
/// the lease: the case of nearly every ack, whose outcome the locked row alone decides.
pub struct Completion<'a> {
    pub partition: Uuid,
    pub group: &'a str,
    pub lease: Uuid,
    /// The lowest and highest offsets acked.
    pub lowest: i64,
    pub highest: i64,
}

/// A completion carried out: the row as it was, and the partition's queue and end.
pub struct Completed {
    /// Its index among the completions asked.
    pub index: usize,
    pub committed: i64,
    pub lease_end: i64,
    pub retry_count: i32,
    pub queue_id: Uuid,
    pub queue: String,
    pub next_offset: i64,
    /// The queue's options as stored.
    pub options: Value,
}

/// Carries out, in one statement and so one round trip and its own transaction, every
/// completion whose cursor row still holds its lease live with every offset inside it and
/// above the cursor; returns those, and leaves the rest untouched for the full path. Where
/// it writes, it writes what `regent_rules::ack_plan::plan` decides for such an ack: the
/// cursor to the highest offset, the lease released and the retry budget restored once the
/// lease's range is done. The rows are locked in the global lock order (partition, group).
/// The tenant's partitions only. One completion per (partition, group), which the caller
/// keeps.
/// How the statement finds each cursor, and why: `sql/cursor.sql`.
pub async fn complete_in_lease(
    client: &impl deadpool_postgres::GenericClient,
    layout: Layout,
    tenant: &str,
    completions: &[Completion<'_>],
) -> Result<Vec<Completed>, StoreError> {
    let st = client
        .prepare_cached(match layout {
            Layout::Single => COMPLETE_IN_LEASE,
            Layout::Citus => COMPLETE_IN_LEASE_CITUS,
        })
        .await?;
    let pids: Vec<Uuid> = completions.iter().map(|c| c.partition).collect();
    let groups: Vec<&str> = completions.iter().map(|c| c.group).collect();
    let leases: Vec<Uuid> = completions.iter().map(|c| c.lease).collect();
    let lowest: Vec<i64> = completions.iter().map(|c| c.lowest).collect();
    let highest: Vec<i64> = completions.iter().map(|c| c.highest).collect();
    let rows = client
        .query(&st, &[&tenant, &pids, &groups, &leases, &lowest, &highest])
        .await?;
    Ok(rows
        .iter()
        .map(|r| Completed {
            index: (r.get::<_, i64>("k") - 1) as usize,
            committed: r.get("committed"),
            lease_end: r.get("lease_end"),
            retry_count: r.get("retry_count"),
            queue_id: r.get("queue_id"),
            queue: r.get("queue"),
            next_offset: r.get("next_offset"),
            options: r.get("options"),
        })
        .collect())
}
