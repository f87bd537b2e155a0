//! Consumer groups, administered: what each is doing on each queue; seek a group's cursors
//! to the end (skip its backlog) or back to an instant (replay), on a queue or one of its
//! partitions; delete a group, on every queue or one.

use regent_runtime::Announcement;
use regent_store::{groups, seek};

pub use regent_store::groups::{GroupOnQueue, PartitionLag};
pub use regent_store::seek::{Deleted, Moved, Seek, SeekTo};

use crate::{Error, Service};

impl Service {
    /// Every (group, queue) pair of the tenant with at least one cursor.
    pub async fn consumer_groups(&self, tenant: &str) -> Result<Vec<GroupOnQueue>, Error> {
        let client = self.store.client().await?;
        Ok(groups::list(&client, tenant).await?)
    }

    /// The cursors of one group (or of all), each with its lag; with `min_lag_secs`, only
    /// those whose first unread message is older, longest first.
    pub async fn partition_lags(
        &self,
        tenant: &str,
        group: Option<&str>,
        min_lag_secs: Option<f64>,
    ) -> Result<Vec<PartitionLag>, Error> {
        let client = self.store.client().await?;
        Ok(groups::partition_lags(&client, tenant, group, min_lag_secs).await?)
    }

    /// Moves `group`'s cursors on the queue (on one named partition, or all). Leases are
    /// released as an expiry releases them; cursors moved back leave the group something to
    /// read at once, so its parked pops are told, here and on the other brokers.
    pub async fn seek(
        &self,
        tenant: &str,
        queue: &str,
        group: &str,
        partition: Option<&str>,
        to: SeekTo,
    ) -> Result<Seek, Error> {
        let client = self.store.client().await?;
        let result = seek::seek(&client, tenant, queue, group, partition, to).await?;
        if let (Seek::Moved(moved), SeekTo::At(_)) = (&result, to) {
            self.reopened_by_seek(tenant, queue, group, moved);
        }
        Ok(result)
    }

    fn reopened_by_seek(&self, tenant: &str, queue: &str, group: &str, moved: &[Moved]) {
        if !moved.is_empty() {
            let reopened = vec![(queue.to_string(), group.to_string())];
            self.announce(&Announcement::reopened(tenant, reopened));
        }
    }

    /// Deletes the group's cursors (and leases) on one queue or all, and with `forget_start`
    /// its stored start points. Its next pop on this broker gives it cursors at once, not
    /// after the sweep interval.
    pub async fn delete_group(
        &self,
        tenant: &str,
        group: &str,
        queue: Option<&str>,
        forget_start: bool,
    ) -> Result<Deleted, Error> {
        let client = self.store.client().await?;
        let deleted = seek::delete_group(&client, tenant, group, queue, forget_start).await?;
        for q in &deleted.queues {
            self.runtime.sweeps.forget(*q, group);
        }
        Ok(deleted)
    }

    /// Moves the tenant's `group`'s start instant on every queue it has joined (see
    /// `regent_store::groups::resubscribe`); the number of queues changed.
    pub async fn resubscribe(
        &self,
        tenant: &str,
        group: &str,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Result<u64, Error> {
        let client = self.store.client().await?;
        Ok(groups::resubscribe(&client, tenant, group, at).await?)
    }
}
