//! A consumer group's cursors handled by hand: moved to the end of each partition (skip the
//! backlog) or back to an instant (replay), or deleted with the group. Only partitions where
//! the group already has a cursor move; it is the group's pops that give it cursors, from its
//! subscription's start point.

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use uuid::Uuid;

use crate::queues;
use crate::sql::seek::{DELETE_GROUP, DELETE_GROUP_STATS, PARTITION_EXISTS, SEEK};
use crate::StoreError;

/// Where a seek moves the cursors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeekTo {
    /// Onto the newest message: everything pending is skipped.
    End,
    /// Onto the last message appended at or before the instant, so consumption resumes with
    /// the first one after it; before the first message if none was.
    At(DateTime<Utc>),
}

/// One cursor a seek moved.
#[derive(Debug)]
pub struct Moved {
    /// When the message the cursor now stands on was appended; `None` before the first.
    pub appended_at: Option<DateTime<Utc>>,
}

#[derive(Debug)]
pub enum Seek {
    NoQueue,
    NoPartition,
    Moved(Vec<Moved>),
}

/// Moves `group`'s cursors on the tenant's `queue` (on one named partition, or on all).
pub async fn seek(
    client: &Client,
    tenant: &str,
    queue: &str,
    group: &str,
    partition: Option<&str>,
    to: SeekTo,
) -> Result<Seek, StoreError> {
    let Some(q) = queues::find(client, tenant, queue).await? else {
        return Ok(Seek::NoQueue);
    };
    if let Some(name) = partition {
        let st = client.prepare_cached(PARTITION_EXISTS).await?;
        if client.query_opt(&st, &[&q.id, &name]).await?.is_none() {
            return Ok(Seek::NoPartition);
        }
    }
    let (to_end, at) = match to {
        SeekTo::End => (true, None),
        SeekTo::At(t) => (false, Some(t)),
    };
    let st = client.prepare_cached(SEEK).await?;
    let rows = client
        .query(&st, &[&q.id, &group, &to_end, &at, &partition])
        .await?;
    Ok(Seek::Moved(
        rows.iter()
            .map(|r| Moved {
                appended_at: r.get("appended_at"),
            })
            .collect(),
    ))
}

/// What deleting a group removed.
#[derive(Debug)]
pub struct Deleted {
    /// Cursors (one per partition the group had read), with any lease they held.
    pub cursors: u64,
    /// Whether its stored start points went too (`forget_start`).
    pub start_points: bool,
    /// The queues it had cursors on.
    pub queues: Vec<Uuid>,
}

/// Deletes `group`'s cursors, with their leases, on the tenant's queues (one, or all); with
/// `forget_start`, also its stored start points, so the group's next pop starts it afresh
/// from that pop's subscription. Its dead letters stay: they are records of what happened.
pub async fn delete_group(
    client: &Client,
    tenant: &str,
    group: &str,
    queue: Option<&str>,
    forget_start: bool,
) -> Result<Deleted, StoreError> {
    let st = client.prepare_cached(DELETE_GROUP).await?;
    let row = client
        .query_one(&st, &[&tenant, &group, &queue, &forget_start])
        .await?;
    let cursors: i64 = row.get("cursors");
    // Out of the stats snapshot as well (sql/seek.sql says why).
    let st = client.prepare_cached(DELETE_GROUP_STATS).await?;
    client.execute(&st, &[&tenant, &group, &queue]).await?;
    Ok(Deleted {
        cursors: cursors as u64,
        start_points: forget_start,
        queues: row.get("queues"),
    })
}
