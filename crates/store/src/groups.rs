//! What the consumer groups of a tenant are doing: one row per (group, queue) for
//! `GET /api/v1/consumer-groups` and the lagging list, from the stats snapshot; a page of one
//! group's cursors, counted now, for its detail.

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use uuid::Uuid;

use crate::sql::groups::{CURSORS, LAGGING, LIST, RESUBSCRIBE};
use crate::StoreError;

/// One consumer group on one queue.
#[derive(Debug)]
pub struct GroupOnQueue {
    pub group: String,
    pub queue: String,
    /// Partitions the group has a cursor on.
    pub partitions: i64,
    /// Of those, partitions with messages after the cursor.
    pub partitions_with_lag: i64,
    /// Messages after the cursors, summed.
    pub lag: i64,
    /// Seconds since the newest message it has not read, over its lagging partitions (the
    /// partition's last push: a lower bound on how long it has waited); 0 with no lag.
    pub max_time_lag_secs: i64,
    /// Whether any cursor has moved off the beginning or is leased now: the group consumes.
    pub consuming: bool,
    /// Where a group subscribed to new messages only started (its stored start point).
    pub starts_after: Option<DateTime<Utc>>,
    /// When the group first joined the queue, for named groups.
    pub joined_at: Option<DateTime<Utc>>,
}

/// A page of the (group, queue) pairs of the tenant with at least one cursor, by group,
/// then queue, as the last stats round counted them.
/// Which (group, queue) elements a listing shows: one queue's, groups whose name contains
/// `search`, a page.
#[derive(Clone, Copy, Debug, Default)]
pub struct GroupListing<'a> {
    pub queue: Option<&'a str>,
    pub search: Option<&'a str>,
    pub limit: i64,
    pub offset: i64,
}

pub async fn list(
    client: &Client,
    tenant: &str,
    l: &GroupListing<'_>,
) -> Result<Vec<GroupOnQueue>, StoreError> {
    let st = client.prepare_cached(LIST).await?;
    Ok(client
        .query(&st, &[&tenant, &l.limit, &l.offset, &l.queue, &l.search])
        .await?
        .iter()
        .map(|r| GroupOnQueue {
            group: r.get("consumer_group"),
            queue: r.get("queue"),
            partitions: r.get("partitions"),
            partitions_with_lag: r.get("partitions_with_lag"),
            lag: r.get("lag"),
            max_time_lag_secs: r.get("max_time_lag"),
            consuming: r.get("consuming"),
            starts_after: r.get("start_after"),
            joined_at: r.get("joined_at"),
        })
        .collect())
}

/// One consumer group's cursor on one partition.
#[derive(Debug)]
pub struct PartitionLag {
    pub group: String,
    pub queue: String,
    pub partition: String,
    pub partition_id: Uuid,
    /// Messages consumed: the cursor plus one.
    pub consumed: i64,
    /// Messages after the cursor.
    pub lag: i64,
    /// When the first message after the cursor was appended; `None` with no lag.
    pub oldest_unread_at: Option<DateTime<Utc>>,
    /// Seconds since then; 0 with no lag.
    pub time_lag_secs: i64,
    pub leased: bool,
}

/// A page of one group's cursors counted now. Pages go in partition-id order (the order
/// partitions were created, and the cursors' primary key, so a page is read off the index
/// without sorting every cursor of the group); within a page, by queue and partition name.
/// Only the page's cursors are probed for their first unread message's time.
pub async fn cursors(
    client: &Client,
    tenant: &str,
    group: &str,
    limit: i64,
    offset: i64,
) -> Result<Vec<PartitionLag>, StoreError> {
    let st = client.prepare_cached(CURSORS).await?;
    Ok(client
        .query(&st, &[&tenant, &group, &limit, &offset])
        .await?
        .iter()
        .map(|r| PartitionLag {
            group: r.get("consumer_group"),
            queue: r.get("queue"),
            partition: r.get("partition"),
            partition_id: r.get("partition_id"),
            consumed: r.get("consumed"),
            lag: r.get("lag"),
            oldest_unread_at: r.get("oldest_unread_at"),
            time_lag_secs: r.get("lag_secs"),
            leased: r.get("leased"),
        })
        .collect())
}

/// One cursor of the lagging list.
#[derive(Debug)]
pub struct Lagging {
    pub group: String,
    pub queue: String,
    pub partition: String,
    pub partition_id: Uuid,
    pub offset_lag: i64,
    pub oldest_unread_at: DateTime<Utc>,
    /// Seconds since then, now.
    pub time_lag_secs: i64,
}

/// A page of the tenant's cursors whose first unread message is older than `min_lag_secs`,
/// longest first, from the last stats round's list (the 1,000 oldest of the tenant).
pub async fn lagging(
    client: &Client,
    tenant: &str,
    min_lag_secs: f64,
    limit: i64,
    offset: i64,
) -> Result<Vec<Lagging>, StoreError> {
    let st = client.prepare_cached(LAGGING).await?;
    Ok(client
        .query(&st, &[&tenant, &min_lag_secs, &limit, &offset])
        .await?
        .iter()
        .map(|r| Lagging {
            group: r.get("consumer_group"),
            queue: r.get("queue"),
            partition: r.get("partition_name"),
            partition_id: r.get("partition_id"),
            offset_lag: r.get("offset_lag"),
            oldest_unread_at: r.get("oldest_unread_at"),
            time_lag_secs: r.get("lag_secs"),
        })
        .collect())
}

/// Sets the stored start instant of the tenant's named `group` on every queue it has joined;
/// the number of queues changed. Cursors the group already has stay where they are: the
/// instant places only the cursors of partitions it meets from now on.
pub async fn resubscribe(
    client: &Client,
    tenant: &str,
    group: &str,
    at: DateTime<Utc>,
) -> Result<u64, StoreError> {
    let st = client.prepare_cached(RESUBSCRIBE).await?;
    Ok(client.execute(&st, &[&tenant, &group, &at]).await?)
}
