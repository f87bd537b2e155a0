//! The per-minute series: every [`FLUSH`] each broker writes what its runtime counted
//! (`regent_memory::tallies`) to `queue_minutes`; the overview's throughput and the status
//! and analytics routes read it back. A flush that fails puts its counts back for the next.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use regent_memory::tallies::Tally;
use regent_store::depth_history;
use regent_store::series::{self, Counts};
use uuid::Uuid;

use crate::{Error, Service};

/// How often each broker writes its counts.
pub const FLUSH: Duration = Duration::from_secs(5);
/// Series minutes one retention transaction deletes at most.
const EXPIRE_BATCH: i64 = 10_000;

fn counts(t: &Tally) -> Counts {
    Counts {
        pushed: t.pushed,
        delivered: t.delivered,
        completed: t.completed,
        failed: t.failed,
        dead_lettered: t.dead_lettered,
        expired: t.expired,
        lag_ms_sum: t.lag_ms_sum,
        lag_ms_max: t.lag_ms_max,
    }
}

impl Service {
    /// Writes what was counted since the last flush.
    pub async fn flush_series(&self) -> Result<(), Error> {
        let taken = self.runtime.tallies.take();
        if taken.is_empty() {
            return Ok(());
        }
        let rows: Vec<(Uuid, Counts)> = taken.iter().map(|(q, t)| (*q, counts(t))).collect();
        let written = match self.store.client().await {
            Ok(client) => series::add(&client, &rows).await.map_err(Error::from),
            Err(e) => Err(e.into()),
        };
        match written {
            // The per-queue counters count what the series holds, once.
            Ok(()) => self.runtime.queue_totals.add(
                taken
                    .iter()
                    .map(|(q, t)| (*q, t.pushed.max(0) as u64, t.delivered.max(0) as u64)),
            ),
            Err(_) => self.runtime.tallies.restore(taken),
        }
        written
    }

    /// The tenant's counts over the last `span`.
    pub async fn recent_counts(&self, tenant: &str, span: Duration) -> Result<Counts, Error> {
        let client = self.store.client().await?;
        let since = Utc::now() - chrono::Duration::from_std(span).unwrap_or_default();
        Ok(series::since(&client, tenant, since).await?)
    }

    /// Deletes series minutes older than the series retention; how many went.
    pub(crate) async fn expire_series(&self) -> Result<i64, Error> {
        let before = Utc::now() - self.series_retention;
        let mut total = 0;
        loop {
            let done = regent_store::in_transaction!(self.store, |tx| {
                let minutes = series::expire(tx, before, EXPIRE_BATCH).await?;
                let depths = depth_history::expire(tx, before, EXPIRE_BATCH).await?;
                Ok(minutes.max(depths))
            })?;
            total += done;
            if done < EXPIRE_BATCH {
                return Ok(total);
            }
        }
    }
}

/// Flushes for ever; a failure is logged when it starts and when it ends.
pub(crate) async fn run(s: Arc<Service>) {
    let mut failing = false;
    loop {
        tokio::time::sleep(FLUSH).await;
        match s.flush_series().await {
            Err(e) if !failing => {
                failing = true;
                tracing::warn!(error = %e, retry_in = ?FLUSH, "writing the queue series failed");
            }
            Ok(()) if failing => {
                failing = false;
                tracing::info!("writing the queue series again");
            }
            _ => {}
        }
    }
}
