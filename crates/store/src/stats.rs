//! The stats snapshot (migration V12): one broker of the fleet at a time recounts every
//! queue into `queue_stats`, `group_stats` and `lagging_stats`, and the inspection routes
//! read those rows instead of every partition and cursor. A round is one transaction holding
//! the `stats_rounds` row, so rounds of different brokers run one after the other and a
//! reader sees a whole round or none of it.

use chrono::{DateTime, Utc};
use tokio_postgres::Row;
use uuid::Uuid;

use crate::sql::stats::{
    BEGIN_ROUND, CLEAR_LAGGING, FINISH_ROUND, GROUP_DEPTH, JOINED, QUEUES, QUEUE_DEPTH,
    QUEUE_TOTALS, RECOUNT, WORK_MEM, WRITE_LAGGING,
};
use crate::{StoreError, Tx};

/// Partitions kept in a queue's (or a group's) depth list: those with the most pending.
pub const TOP_PARTITIONS: i64 = 100;
/// Lagging cursors kept per tenant: those whose first unread message is oldest.
pub const TOP_LAGGING: usize = 1000;

/// How much longer than a round the pause after it is at least: rounds then take at most a
/// fifth of one database connection's time, however large the fleet grows.
pub const PAUSE_PER_ROUND: f64 = 4.0;

/// Takes the round if the last one finished more than `interval` ago, and more than
/// [`PAUSE_PER_ROUND`] times its own length ago (or always, with `force`). A round already
/// running holds the row: without `force` this broker skips at once; with it, it waits for
/// that round and then runs its own, which sees every write committed before the call.
/// The round's statements run with room to sort in memory (and, as on every pooled
/// connection, without JIT: `sql::session::PLANNING`).
pub async fn begin_round(
    tx: &Tx<'_>,
    force: bool,
    interval: std::time::Duration,
) -> Result<bool, StoreError> {
    let st = tx.prepare_cached(BEGIN_ROUND).await?;
    let taken = tx
        .query_opt(&st, &[&force, &interval.as_secs_f64(), &PAUSE_PER_ROUND])
        .await?
        .is_some();
    if taken {
        tx.batch_execute(WORK_MEM).await?;
    }
    Ok(taken)
}

/// Marks the round finished and drops the rows of queues deleted since the last one.
pub async fn finish_round(tx: &Tx<'_>) -> Result<(), StoreError> {
    let st = tx.prepare_cached(FINISH_ROUND).await?;
    tx.execute(&st, &[]).await?;
    Ok(())
}

/// Every queue of the fleet, by tenant: what a round recounts.
pub async fn queues(tx: &Tx<'_>) -> Result<Vec<(String, Uuid)>, StoreError> {
    let st = tx.prepare_cached(QUEUES).await?;
    Ok(tx
        .query(&st, &[])
        .await?
        .iter()
        .map(|r| (r.get("tenant"), r.get("id")))
        .collect())
}

/// A cursor behind its partition's end, with the time of its first unread message.
#[derive(Clone, Debug)]
pub struct Lagging {
    pub queue_id: Uuid,
    pub partition_id: Uuid,
    pub partition: String,
    pub group: String,
    pub offset_lag: i64,
    pub oldest_unread_at: DateTime<Utc>,
}

impl From<&Row> for Lagging {
    fn from(r: &Row) -> Lagging {
        Lagging {
            queue_id: r.get("queue_id"),
            partition_id: r.get("partition_id"),
            partition: r.get("partition_name"),
            group: r.get("consumer_group"),
            offset_lag: r.get("behind"),
            oldest_unread_at: r.get("oldest_unread_at"),
        }
    }
}

/// Queues of one tenant recounted by one statement: a round costs statements in proportion
/// to queues / this, and each statement's work in proportion to its partitions and cursors.
pub const QUEUES_PER_STATEMENT: usize = 500;

/// Recounts some queues of one tenant (at most [`QUEUES_PER_STATEMENT`]) into `queue_stats`
/// and `group_stats` in one statement (the log is probed once per cursor), and returns their
/// cursors whose first unread message is oldest (at most [`TOP_LAGGING`]) for the tenant's
/// lagging list. `queue_mode` is the queue-mode group's name: a queue with no group at all
/// is behind in it.
pub async fn recount(
    tx: &Tx<'_>,
    tenant: &str,
    queues: &[Uuid],
    queue_mode: &str,
) -> Result<Vec<Lagging>, StoreError> {
    let st = tx.prepare_cached(RECOUNT).await?;
    let top = TOP_LAGGING as i64;
    let rows = tx
        .query(&st, &[&queues, &tenant, &TOP_PARTITIONS, &top, &queue_mode])
        .await?;
    Ok(rows.iter().map(Lagging::from).collect())
}

/// Replaces the tenant's lagging list.
pub async fn write_lagging(tx: &Tx<'_>, tenant: &str, rows: &[Lagging]) -> Result<(), StoreError> {
    let st = tx.prepare_cached(CLEAR_LAGGING).await?;
    tx.execute(&st, &[&tenant]).await?;
    if rows.is_empty() {
        return Ok(());
    }
    let col = |f: fn(&Lagging) -> Uuid| rows.iter().map(f).collect::<Vec<_>>();
    let (queues, partitions) = (col(|l| l.queue_id), col(|l| l.partition_id));
    let names: Vec<&str> = rows.iter().map(|l| l.partition.as_str()).collect();
    let groups: Vec<&str> = rows.iter().map(|l| l.group.as_str()).collect();
    let lags: Vec<i64> = rows.iter().map(|l| l.offset_lag).collect();
    let ats: Vec<DateTime<Utc>> = rows.iter().map(|l| l.oldest_unread_at).collect();
    let st = tx.prepare_cached(WRITE_LAGGING).await?;
    tx.execute(
        &st,
        &[&tenant, &queues, &partitions, &names, &groups, &lags, &ats],
    )
    .await?;
    Ok(())
}

/// A queue's counts as the last round found them; zeros for a queue no round has counted.
#[derive(Clone, Debug, Default)]
pub struct QueueTotals {
    pub partitions: i64,
    pub total: i64,
    pub pending: i64,
    pub processing: i64,
    pub completed: i64,
    pub failed: i64,
    pub dead_letters: i64,
    pub refreshed_at: Option<DateTime<Utc>>,
}

pub async fn queue_totals(
    client: &deadpool_postgres::Client,
    queue_id: Uuid,
) -> Result<QueueTotals, StoreError> {
    let st = client.prepare_cached(QUEUE_TOTALS).await?;
    Ok(match client.query_opt(&st, &[&queue_id]).await? {
        None => QueueTotals::default(),
        Some(r) => QueueTotals {
            partitions: r.get("partitions"),
            total: r.get("total"),
            pending: r.get("pending"),
            processing: r.get("processing"),
            completed: r.get("completed"),
            failed: r.get("failed"),
            dead_letters: r.get("dead_letters"),
            refreshed_at: r.get("refreshed_at"),
        },
    })
}

/// A queue's backlog, for one group or behind the furthest-behind cursors.
#[derive(Clone, Debug, Default)]
pub struct Depth {
    pub pending: i64,
    pub partitions_pending: i64,
    /// The partitions with the most pending (at most [`TOP_PARTITIONS`]), most first.
    pub top: Vec<(String, i64)>,
    /// When a round counted it; `None` when counted now or never.
    pub refreshed_at: Option<DateTime<Utc>>,
}

fn depth_from(r: &Row) -> Depth {
    let names: Vec<String> = r.get("top_partitions");
    let counts: Vec<i64> = r.get("top_pending");
    Depth {
        pending: r.get("pending"),
        partitions_pending: r.get("partitions_pending"),
        top: names.into_iter().zip(counts).collect(),
        refreshed_at: r.get("refreshed_at"),
    }
}

/// Lists (queue, group) in the snapshot at once, when a pop has just given the group its
/// first cursors on the queue (`partitions` of them): the group's counts come with the next
/// round, its existence must not wait for one. A placeholder (`refreshed_at` -infinity, lag
/// and pending 0) that a round overwrites; a round already running does not see it (its
/// statement's snapshot is older) and so cannot delete it, and one starting later counts the
/// cursors committed with it. Never overwrites a counted row.
pub async fn joined(
    tx: &crate::Tx<'_>,
    queue_id: Uuid,
    group: &str,
    partitions: i64,
) -> Result<(), StoreError> {
    let st = tx.prepare_cached(JOINED).await?;
    tx.execute(&st, &[&queue_id, &group, &partitions]).await?;
    Ok(())
}

/// The queue's depth as the last round counted it: for `group`, if a round has seen that
/// group on the queue (`None` otherwise, also for a group only listed since it joined), else behind each partition's furthest-behind
/// cursor (zeros before the first round).
pub async fn depth(
    client: &deadpool_postgres::Client,
    queue_id: Uuid,
    group: Option<&str>,
) -> Result<Option<Depth>, StoreError> {
    let row = match group {
        Some(g) => {
            let st = client.prepare_cached(GROUP_DEPTH).await?;
            let Some(r) = client.query_opt(&st, &[&queue_id, &g]).await? else {
                return Ok(None);
            };
            r
        }
        None => {
            let st = client.prepare_cached(QUEUE_DEPTH).await?;
            match client.query_opt(&st, &[&queue_id]).await? {
                Some(r) => r,
                None => return Ok(Some(Depth::default())),
            }
        }
    };
    Ok(Some(depth_from(&row)))
}
