//! The retention clock (Queen's `RETENTION_INTERVAL`): every pass reads the queues whose
//! options mention retention, applies the rule (`QueueOptions::retention`) and deletes their
//! due segments in short transactions of at most `RETENTION_BATCH_SEGMENTS` each
//! (`regent_store::retention`).

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use regent_broker::options::QueueOptions;
use regent_store::in_transaction;
use regent_store::retention::{self, Cutoffs, Expired};

use crate::{Error, Service};

impl Service {
    /// One pass over every queue; what it deleted.
    pub async fn retention_pass(&self) -> Result<Expired, Error> {
        let queues = {
            let client = self.store.client().await?;
            retention::queues(&client).await?
        };
        let mut total = Expired::default();
        for q in queues {
            let (all, passed) =
                QueueOptions::from_stored(&q.options).retention(self.implicit_retention);
            if all.is_none() && passed.is_none() {
                continue;
            }
            let now = Utc::now();
            let before = |secs: i64| now - chrono::Duration::seconds(secs);
            let cut = Cutoffs {
                all_before: all.map(before),
                passed_before: passed.map(before),
            };
            loop {
                let batch = self.retention_batch;
                let done = in_transaction!(self.store, |tx| {
                    retention::expire(tx, q.id, cut, batch).await
                })?;
                total.segments += done.segments;
                total.messages += done.messages;
                if done.segments < batch {
                    break;
                }
            }
        }
        Ok(total)
    }
}

pub(crate) async fn run(s: Arc<Service>) {
    loop {
        tokio::time::sleep(s.retention_interval).await;
        match s.retention_pass().await {
            Ok(e) if e.segments == 0 => {}
            Ok(e) => tracing::info!(
                segments = e.segments,
                messages = e.messages,
                "retention deleted expired messages"
            ),
            Err(e) => tracing::warn!(error = %e, "retention pass failed"),
        }
    }
}

/// The interval as configured in milliseconds; at least 10 ms.
pub(crate) fn interval(ms: u64) -> Duration {
    Duration::from_millis(ms.max(10))
}
