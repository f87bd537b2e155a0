//! Consumer groups, administered: what each is doing on each queue; seek a group's cursors
//! to the end (skip its backlog) or back to an instant (replay), on a queue or one of its
//! partitions; delete a group, on every queue or one.

use regent_memory::Announcement;
use regent_store::{groups, seek};

pub use regent_store::groups::{GroupOnQueue, Lagging, PartitionLag};

use crate::queues::Page;
pub use regent_store::seek::{Deleted, Moved, Seek, SeekTo};

use crate::{Error, Service};

impl Service {
    /// A page of the tenant's (group, queue) pairs with at least one cursor, from the
    /// stats snapshot: all of them, one queue's, or groups whose name contains `search`.
    pub async fn consumer_groups(
        &self,
        tenant: &str,
        queue: Option<&str>,
        search: Option<&str>,
        page: Page,
    ) -> Result<Vec<GroupOnQueue>, Error> {
        let client = self.store.client().await?;
        let listing = groups::GroupListing {
            queue,
            search,
            limit: page.limit,
            offset: page.offset,
        };
        Ok(groups::list(&client, tenant, &listing).await?)
    }

    /// A page of one group's cursors, each with its lag counted now.
    pub async fn group_cursors(
        &self,
        tenant: &str,
        group: &str,
        page: Page,
    ) -> Result<Vec<PartitionLag>, Error> {
        let client = self.store.client().await?;
        Ok(groups::cursors(&client, tenant, group, page.limit, page.offset).await?)
    }

    /// A page of the cursors whose first unread message is older than `min_lag_secs`,
    /// longest first, from the stats snapshot.
    pub async fn lagging(
        &self,
        tenant: &str,
        min_lag_secs: f64,
        page: Page,
    ) -> Result<Vec<Lagging>, Error> {
        let client = self.store.client().await?;
        Ok(groups::lagging(&client, tenant, min_lag_secs, page.limit, page.offset).await?)
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
