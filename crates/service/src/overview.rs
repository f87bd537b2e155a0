//! The tenant-wide inspection figures behind `GET /api/v1/resources/{overview, namespaces,
//! tasks, partitions}`.

use std::time::Duration;

pub use regent_store::overview::{
    DeadSummary, Label, Leases, Messages, Overview, PartitionSummary, Rollup, Spread,
};
pub use regent_store::series::{Counts, Filter, QueueCounts};

use crate::queues::Page;
use crate::{Error, Service};

/// The span the overview's throughput is averaged over (Queen's: the last 5 minutes).
pub const THROUGHPUT_SPAN: Duration = Duration::from_secs(300);

/// Messages per second over [`THROUGHPUT_SPAN`], from the series.
#[derive(Clone, Copy, Debug, Default)]
pub struct Throughput {
    /// Pushed.
    pub ingested: f64,
    /// Passed by a consumer group's cursor (acknowledged, dead-lettered or dropped).
    pub processed: f64,
}

impl Service {
    pub async fn overview(&self, tenant: &str) -> Result<(Overview, Throughput), Error> {
        let client = self.store.client().await?;
        let o = regent_store::overview::overview(&client, tenant, &Filter::default()).await?;
        drop(client);
        let recent = self.recent_counts(tenant, THROUGHPUT_SPAN).await?;
        let secs = THROUGHPUT_SPAN.as_secs_f64();
        let throughput = Throughput {
            ingested: recent.pushed as f64 / secs,
            processed: recent.completed as f64 / secs,
        };
        Ok((o, throughput))
    }

    pub async fn rollup(&self, tenant: &str, by: Label, page: Page) -> Result<Vec<Rollup>, Error> {
        let client = self.store.client().await?;
        Ok(regent_store::overview::rollup(&client, tenant, by, page.limit, page.offset).await?)
    }

    /// A page of the tenant's partitions and how many there are.
    pub async fn partitions(
        &self,
        tenant: &str,
        queue: Option<&str>,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<PartitionSummary>, i64), Error> {
        let client = self.store.client().await?;
        Ok(regent_store::overview::partitions(&client, tenant, queue, limit, offset).await?)
    }
}
