//! Claiming partitions for a consumer group and reading their messages.
//!
//! A claim is a compare-and-set on the group's cursor rows under `FOR UPDATE SKIP LOCKED`:
//! a pop never waits on a lock, it moves on to the next partition. What to deliver of what
//! was claimed is the caller's decision (`regent_rules::delivery`); [`finish`] then trims or
//! releases the leases to match.

use chrono::{DateTime, Utc};
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;
use uuid::Uuid;

use deadpool_postgres::GenericClient;
use serde_json::Value;

use crate::sql::claim::{
    ASYNCHRONOUS_COMMIT, CLAIM, DIAGNOSE_EMPTY, ENSURE_NAMED, ENSURE_NAMED_ONLY, ENSURE_QUEUE_MODE,
    ENSURE_QUEUE_MODE_ONLY, FINISH, SWEEP_TURN,
};
use crate::{Conn, Layout, StoreError, Tx};

mod citus;

/// One claim: up to `max_partitions` of the group's partitions of a queue, each up to
/// `batch` messages past its cursor, the k-th claimed (in claim order) leased under
/// `leases[k]`. A pop's lease id is shared by every partition it claims, so one extend call
/// renews them all; a claim for several pops names each pop's lease once per partition it
/// may take, in the order the pops are served.
#[derive(Clone, Copy)]
pub struct Claim<'a> {
    pub queue_id: Uuid,
    /// One per partition slot: `max_partitions` of them.
    pub leases: &'a [Uuid],
    /// `Some` on the partition route: only this partition (by name).
    pub partition: Option<&'a str>,
    pub group: &'a str,
    pub max_partitions: i64,
    pub batch: i64,
    pub lease_seconds: i64,
    /// Partitions pushed to less than this long ago are not claimed.
    pub window_buffer_seconds: i64,
    /// Partitions that probably have messages for the group, tried before the walk over all
    /// of its cursors. A hint only: the walk still runs when these yield nothing.
    pub hint: &'a [Uuid],
    /// Where the walk starts: just after this partition, round to it (`None`: from the
    /// first). The caller moves it on as it serves (`regent_rules::delivery::walk_end`), so
    /// every partition with something to read is reached in turn.
    pub after: Option<Uuid>,
}

impl<'a> Claim<'a> {
    /// The window buffer and the lease length, as the statements take them.
    fn seconds(&self) -> (f64, f64) {
        (self.window_buffer_seconds as f64, self.lease_seconds as f64)
    }

    /// `$1`-`$9` of every claim statement; `window` and `lease` from [`Claim::seconds`].
    fn params<'p>(&'p self, window: &'p f64, lease: &'p f64) -> Params<'p> {
        vec![
            &self.queue_id,
            &self.group,
            &self.partition,
            window,
            &self.max_partitions,
            &self.leases,
            lease,
            &self.batch,
            &self.after,
        ]
    }
}

/// Where the cursors a sweep creates start.
#[derive(Clone, Copy, Debug)]
pub enum Start {
    /// Plain queue consumption: at the beginning.
    QueueMode,
    /// A named group: after the messages appended at or before this instant (`None`: at the
    /// beginning), unless the group's first join already stored its choice, which then wins.
    Named(Option<DateTime<Utc>>),
}

/// Which partitions a sweep gives the group cursors on.
#[derive(Clone, Copy, Debug)]
pub enum Sweep<'a> {
    /// Every partition of the queue (an anti-join over them all).
    All,
    /// Only these (partitions just created): primary-key lookups.
    Only(&'a [Uuid]),
}

/// A claimed partition and the segments overlapping its leased range (committed, lease_end],
/// in offset order.
pub struct ClaimedPartition {
    pub id: Uuid,
    /// The lease the claim put it under (its slot's).
    pub lease_id: Uuid,
    pub name: String,
    pub committed: i64,
    pub lease_end: i64,
    /// The range end of the lease this claim replaced, if any.
    pub old_end: Option<i64>,
    /// When it was last claimed before: claims are served least recently claimed first.
    pub last_claim: Option<DateTime<Utc>>,
    /// Deleted offsets inside the lease, ascending.
    pub tombstoned: Vec<i64>,
    pub segments: Vec<Segment>,
}

/// One segment of the log, its frames still in the row they came in.
pub struct Segment {
    pub base_offset: i64,
    pub end_offset: i64,
    pub created_at: DateTime<Utc>,
    row: Row,
}

impl Segment {
    /// Its frames (`crate::frames`), offsets `base_offset..=end_offset`.
    pub fn frames(&self) -> &[u8] {
        self.row.get("frames")
    }
}

/// What a claim took, read in the same statement.
pub struct Claimed {
    /// The database's clock at the claim, for delays measured against segment times.
    pub db_now: DateTime<Utc>,
    pub partitions: Vec<ClaimedPartition>,
    /// Whether they came from the walk over the group's cursors (not the hints): the caller
    /// then moves the walk's start on ([`Claim::after`]).
    pub walked: bool,
}

/// How one claimed partition's lease ends the claim: its cursor, whether the lease is released
/// and the end of what it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finish {
    pub partition: Uuid,
    pub committed: i64,
    pub release: bool,
    pub lease_end: i64,
    /// The lease the partition is handed to, when not the claim's own (a claim made for
    /// several pops gives each its own lease).
    pub lease: Option<Uuid>,
    /// `Some(t)`: the claim is undone, and the partition's place in the claim order goes
    /// back to `t`, its last claim before this one (`None`: never claimed).
    pub undo: Option<Option<DateTime<Utc>>>,
    /// The lease the claim put the partition under: the finish applies only while that lease
    /// still holds it. Inside the claim's transaction it always does; after a claim that was
    /// its own transaction ([`claim_known`]), a seek may have released it in between, and the
    /// finish must not undo the seek.
    pub held: Uuid,
}

/// Why a partition-route pop found nothing.
#[derive(Debug, PartialEq, Eq)]
pub enum EmptyReason {
    PartitionNotFound,
    LeaseHeld,
    WindowBufferActive { partition_id: Uuid },
    NothingReadable,
}

type Params<'a> = Vec<&'a (dyn ToSql + Sync)>;

/// Gives the group a cursor on the partitions of the queue (or the one named) it has none on
/// yet. Returns how many it created.
pub async fn sweep(
    tx: &Tx<'_>,
    queue_id: Uuid,
    group: &str,
    partition: Option<&str>,
    start: Start,
    which: Sweep<'_>,
) -> Result<u64, StoreError> {
    let only = match which {
        Sweep::Only(ids) => Some(ids),
        Sweep::All => None,
    };
    let start_after = match start {
        Start::QueueMode => None,
        Start::Named(at) => Some(at),
    };
    let mut params: Params<'_> = vec![&queue_id, &group, &partition];
    if let Some(at) = &start_after {
        params.push(at);
    }
    if let Some(ids) = &only {
        params.push(ids);
    }
    let sql = match (start_after.is_some(), only.is_some()) {
        (false, false) => ENSURE_QUEUE_MODE,
        (false, true) => ENSURE_QUEUE_MODE_ONLY,
        (true, false) => ENSURE_NAMED,
        (true, true) => ENSURE_NAMED_ONLY,
    };
    // Two sweeps of one group take turns, and the sweep's statement (its snapshot) begins
    // only once its turn has come, so it sees the subscription an earlier sweep committed.
    // Without the turn, a sweep whose subscription insert met one still being committed
    // found no row to read in its own snapshot and started its cursors from the beginning,
    // though both pops asked for `new`
    // (`consumer_groups::racing_first_pops_of_a_new_group_both_start_at_the_end`). On Citus
    // the turn also keeps two sweeps from inserting the same cursors on every shard at once,
    // each waiting on the other's rows in a different order.
    let st = tx.prepare_cached(SWEEP_TURN).await?;
    tx.query_one(&st, &[&queue_id, &group]).await?;
    let st = tx.prepare_cached(sql).await?;
    Ok(tx.execute(&st, &params).await?)
}

/// Claims and reads in one statement: the hinted partitions first (when there are hints and
/// they yield anything), else the walk over the group's cursors.
pub async fn claim(tx: &Tx<'_>, c: &Claim<'_>) -> Result<Claimed, StoreError> {
    if tx.layout() == Layout::Citus {
        return citus::claim(tx, c).await;
    }
    // Without options to check, the queue always counts as found.
    Ok(run(&**tx, c, None)
        .await?
        .unwrap_or_else(|| claimed(Vec::new())))
}

/// Claims and reads as [`claim`] does, for a queue this broker knows, in one statement that
/// is its own transaction, committed without waiting for the WAL flush (a claim that consumes
/// nothing: not for autoAck; see [`lease_only`]): the hinted partitions first, then (when they
/// yield nothing) the walk, each its own statement. One PostgreSQL only. `None` when the
/// queue is gone or its options are no longer `options`: nothing was claimed.
pub async fn claim_known(
    client: &Conn,
    c: &Claim<'_>,
    options: &Value,
) -> Result<Option<Claimed>, StoreError> {
    run(&**client, c, Some(options)).await
}

/// The hinted claim, then the walk when the hints yielded nothing; `None` when a known
/// queue's options were not `options`.
async fn run(
    client: &impl GenericClient,
    c: &Claim<'_>,
    options: Option<&Value>,
) -> Result<Option<Claimed>, StoreError> {
    let (window, lease) = c.seconds();
    let st = client.prepare_cached(CLAIM).await?;
    if !c.hint.is_empty() {
        let mut params = c.params(&window, &lease);
        params.extend([&c.hint as &(dyn ToSql + Sync), &options]);
        let rows = client.query(&st, &params).await?;
        if !fresh(&rows) {
            return Ok(None);
        }
        if rows.iter().any(claims) {
            return Ok(Some(claimed(rows)));
        }
    }
    let no_hint: Option<&[Uuid]> = None;
    let mut params = c.params(&window, &lease);
    params.extend([&no_hint as &(dyn ToSql + Sync), &options]);
    let rows = client.query(&st, &params).await?;
    Ok(fresh(&rows).then(|| Claimed {
        walked: true,
        ..claimed(rows)
    }))
}

/// Whether a known queue's claim found the queue as known.
fn fresh(rows: &[Row]) -> bool {
    rows.first().is_some_and(|r| r.get("fresh"))
}

/// Whether a row names a claimed partition (a known queue's claim answers one row without
/// one when it claimed nothing).
fn claims(row: &Row) -> bool {
    row.get::<_, Option<Uuid>>("partition_id").is_some()
}

/// Rows come one per (partition, overlapping segment), by partition then offset; a claimed
/// partition without a segment in range comes once with a NULL segment.
fn claimed(rows: Vec<Row>) -> Claimed {
    let rows: Vec<Row> = rows.into_iter().filter(claims).collect();
    let db_now = rows
        .first()
        .map(|r| r.get("db_now"))
        .unwrap_or(DateTime::<Utc>::MIN_UTC);
    let mut partitions: Vec<ClaimedPartition> = Vec::new();
    for row in rows {
        let id: Uuid = row.get("partition_id");
        if partitions.last().is_none_or(|p| p.id != id) {
            partitions.push(ClaimedPartition {
                id,
                lease_id: row.get("lease_id"),
                name: row.get("name"),
                committed: row.get("committed"),
                lease_end: row.get("lease_end"),
                old_end: row.get("old_end"),
                last_claim: row.get("last_claim"),
                tombstoned: row
                    .get::<_, Option<Vec<i64>>>("tombstoned")
                    .unwrap_or_default(),
                segments: Vec::new(),
            });
        }
        let Some(base_offset) = row.get::<_, Option<i64>>("base_offset") else {
            continue;
        };
        let segment = Segment {
            base_offset,
            end_offset: row.get("end_offset"),
            created_at: row.get("created_at"),
            row,
        };
        partitions
            .last_mut()
            .expect("pushed above")
            .segments
            .push(segment);
    }
    Claimed {
        db_now,
        partitions,
        walked: false,
    }
}

/// Makes the transaction's commit return without waiting for its WAL flush. Only for a claim
/// that consumes nothing (no autoAck): lost in a crash, its leases are as if they had
/// expired (the messages redeliver and acks under them are refused), which at-least-once
/// delivery allows; a later durable commit (an ack's) flushes it with its own.
pub async fn lease_only(tx: &Tx<'_>) -> Result<(), StoreError> {
    tx.batch_execute(ASYNCHRONOUS_COMMIT).await?;
    Ok(())
}

/// Ends the claim as decided: trims leases to what was delivered, releases empty ones, and
/// commits auto-acked deliveries. One statement for every partition of the claim: inside the
/// claim's transaction, or (after [`claim_known`]) on its own.
pub async fn finish(
    tx: &impl GenericClient,
    group: &str,
    finishes: &[Finish],
) -> Result<(), StoreError> {
    if finishes.is_empty() {
        return Ok(());
    }
    let pids: Vec<Uuid> = finishes.iter().map(|f| f.partition).collect();
    let committed: Vec<i64> = finishes.iter().map(|f| f.committed).collect();
    let release: Vec<bool> = finishes.iter().map(|f| f.release).collect();
    let end: Vec<i64> = finishes.iter().map(|f| f.lease_end).collect();
    let lease: Vec<Option<Uuid>> = finishes.iter().map(|f| f.lease).collect();
    let undo: Vec<bool> = finishes.iter().map(|f| f.undo.is_some()).collect();
    let last_claim: Vec<Option<DateTime<Utc>>> =
        finishes.iter().map(|f| f.undo.flatten()).collect();
    let held: Vec<Uuid> = finishes.iter().map(|f| f.held).collect();
    let st = tx.prepare_cached(FINISH).await?;
    tx.execute(
        &st,
        &[
            &pids,
            &committed,
            &release,
            &end,
            &group,
            &lease,
            &undo,
            &last_claim,
            &held,
        ],
    )
    .await?;
    Ok(())
}

/// Explains an empty partition-route pop, so the answer can carry Queen's error shapes.
pub async fn diagnose_empty(
    tx: &Tx<'_>,
    queue_id: Uuid,
    partition: &str,
    group: &str,
    window_buffer_seconds: i64,
) -> Result<EmptyReason, StoreError> {
    let st = tx.prepare_cached(DIAGNOSE_EMPTY).await?;
    let window = window_buffer_seconds as f64;
    let row = tx
        .query_opt(&st, &[&queue_id, &partition, &group, &window])
        .await?;
    Ok(match row {
        None => EmptyReason::PartitionNotFound,
        Some(r) if r.get::<_, bool>("leased") => EmptyReason::LeaseHeld,
        Some(r) if r.get::<_, bool>("buffering") => EmptyReason::WindowBufferActive {
            partition_id: r.get("id"),
        },
        Some(_) => EmptyReason::NothingReadable,
    })
}
