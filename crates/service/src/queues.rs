//! Queues: configured, listed, inspected, deleted.

use regent_rules::naming::DEFAULT_PARTITION;
use regent_rules::options::QueueOptions;
use regent_store::in_transaction;
use regent_store::partitions;
use regent_store::queues;
pub use regent_store::queues::{Cleared, Listing, PartitionStats, QueueRow, QueueSummary};
use regent_store::stats;
pub use regent_store::stats::{Depth, QueueTotals};
use uuid::Uuid;

use crate::overview::THROUGHPUT_SPAN;
use crate::{Error, Service};

/// A queue's configuration as sent.
pub struct Configure<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    pub task: &'a str,
    pub options: &'a QueueOptions,
}

/// A queue as configured, with its options read.
pub struct Queue {
    pub row: QueueRow,
    pub options: QueueOptions,
}

/// A page of a listing.
#[derive(Clone, Copy, Debug)]
pub struct Page {
    pub limit: i64,
    pub offset: i64,
}

/// What the queue pages show.
pub struct QueueDetail {
    pub row: QueueRow,
    /// A page of its partitions, counted now.
    pub partitions: Vec<PartitionStats>,
    /// Over every partition, from the stats snapshot.
    pub totals: QueueTotals,
}

impl From<QueueRow> for Queue {
    fn from(row: QueueRow) -> Queue {
        Queue {
            options: QueueOptions::from_stored(&row.options),
            row,
        }
    }
}

impl Service {
    /// Creates the queue or replaces its whole configuration (not a patch), and makes sure
    /// its `Default` partition exists. Returns the queue and that partition's id.
    pub async fn configure(&self, tenant: &str, c: &Configure<'_>) -> Result<(Queue, Uuid), Error> {
        if c.options.encrypted() && self.cipher.is_none() {
            return Err(Error::invalid(
                "encryptionEnabled requires the broker to have QUEEN_ENCRYPTION_KEY (64 hex characters)",
            ));
        }
        let stored = c.options.to_stored();
        let (row, partition) = in_transaction!(self.store, |tx| {
            let row = queues::upsert(tx, tenant, c.name, c.namespace, c.task, &stored).await?;
            let pid = partitions::ensure(tx, tenant, row.id, DEFAULT_PARTITION).await?;
            Ok((row, pid))
        })?;
        Ok((row.into(), partition))
    }

    /// A page of the tenant's queues, newest first, as the listing filters them, each with
    /// what was pushed and processed over the overview's span (`THROUGHPUT_SPAN`).
    pub async fn list_queues(
        &self,
        tenant: &str,
        listing: &Listing<'_>,
    ) -> Result<Vec<QueueSummary>, Error> {
        let client = self.store.client().await?;
        let span = chrono::Duration::from_std(THROUGHPUT_SPAN).unwrap_or_default();
        let recent = chrono::Utc::now() - span;
        Ok(queues::list(&client, tenant, listing, recent).await?)
    }

    /// The queue, its counts from the stats snapshot, and a page of its partitions counted
    /// now; `None` for a queue the tenant does not have.
    pub async fn queue_detail(
        &self,
        tenant: &str,
        name: &str,
        page: Page,
    ) -> Result<Option<QueueDetail>, Error> {
        let client = self.store.client().await?;
        let Some(row) = queues::find(&*client, tenant, name).await? else {
            return Ok(None);
        };
        let partitions =
            queues::partition_stats(&client, tenant, row.id, page.limit, page.offset).await?;
        let totals = stats::queue_totals(&client, row.id).await?;
        Ok(Some(QueueDetail {
            row,
            partitions,
            totals,
        }))
    }

    /// The queue's backlog (for `group`, or behind the furthest-behind cursors) from the
    /// stats snapshot; a group no round has seen on the queue is counted now. `None` for a
    /// queue the tenant does not have.
    pub async fn queue_depth(
        &self,
        tenant: &str,
        name: &str,
        group: Option<&str>,
    ) -> Result<Option<Depth>, Error> {
        let client = self.store.client().await?;
        let Some(q) = queues::find(&*client, tenant, name).await? else {
            return Ok(None);
        };
        Ok(Some(
            match (stats::depth(&client, q.id, group).await?, group) {
                (Some(d), _) => d,
                (None, Some(g)) => queues::depth_now(&client, q.id, g).await?,
                (None, None) => Depth::default(),
            },
        ))
    }

    /// Deletes a queue with everything that hangs off it; whether it existed.
    pub async fn delete_queue(&self, tenant: &str, name: &str) -> Result<bool, Error> {
        Ok(in_transaction!(self.store, |tx| {
            queues::delete(tx, tenant, name).await
        })?)
    }

    /// Deletes the messages of a queue (or of one partition) and moves its cursors to the
    /// end (`DELETE /api/v1/queues/:queue/clear`).
    pub async fn clear_queue(
        &self,
        tenant: &str,
        name: &str,
        partition: Option<&str>,
    ) -> Result<Cleared, Error> {
        Ok(in_transaction!(self.store, |tx| {
            queues::clear(tx, tenant, name, partition).await
        })?)
    }
}
