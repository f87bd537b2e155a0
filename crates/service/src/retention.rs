//! The retention clock (Queen's `RETENTION_INTERVAL`): every pass reads the queues whose
//! options mention retention, applies the rule (`QueueOptions::retention`) and deletes their
//! due segments in short transactions of at most `RETENTION_BATCH_SEGMENTS` each
//! (`regent_store::retention`). The same pass deletes dead letters older than the broker-wide
//! `DEAD_LETTER_RETENTION_SECONDS`, when that is set, and the queue series past
//! `SERIES_RETENTION_DAYS`, and the key/value rows past their expiry (`crate::kv`).

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use regent_rules::naming::QUEUE_MODE;
use regent_rules::options::QueueOptions;
use regent_memory::tallies::Tally;
use regent_store::retention::{self, Cutoffs, Expired};
use regent_store::{dead_letters, in_transaction};

use crate::{Error, Service};

/// Dead letters one transaction deletes at most.
const DEAD_LETTER_BATCH: i64 = 10_000;

/// What one retention pass deleted.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pass {
    pub expired: Expired,
    pub dead_letters: i64,
    /// Minutes of the queue series older than `SERIES_RETENTION_DAYS`.
    pub series_minutes: i64,
    /// Key/value rows past their expiry.
    pub kv_rows: u64,
}

impl Service {
    /// One pass over every queue, then the dead letters; what it deleted.
    pub async fn retention_pass(&self) -> Result<Pass, Error> {
        Ok(Pass {
            expired: self.expire_messages().await?,
            dead_letters: self.expire_dead_letters().await?,
            series_minutes: self.expire_series().await?,
            kv_rows: self.prune_kv().await?,
        })
    }

    async fn expire_messages(&self) -> Result<Expired, Error> {
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
                    retention::expire(tx, q.id, cut, batch, QUEUE_MODE).await
                })?;
                total.segments += done.segments;
                total.messages += done.messages;
                let expired = Tally {
                    expired: done.messages,
                    ..Tally::default()
                };
                self.runtime.tallies.add(q.id, expired);
                if done.segments < batch {
                    break;
                }
            }
        }
        Ok(total)
    }

    async fn expire_dead_letters(&self) -> Result<i64, Error> {
        let Some(keep) = self.dead_letter_retention else {
            return Ok(0);
        };
        let before = Utc::now() - keep;
        let mut total = 0;
        loop {
            let done = in_transaction!(self.store, |tx| {
                dead_letters::expire(tx, before, DEAD_LETTER_BATCH).await
            })?;
            total += done;
            if done < DEAD_LETTER_BATCH {
                return Ok(total);
            }
        }
    }
}

pub(crate) async fn run(s: Arc<Service>) {
    loop {
        tokio::time::sleep(s.retention_interval).await;
        match s.retention_pass().await {
            Ok(p) if p.expired.segments == 0 && p.dead_letters == 0 && p.series_minutes == 0 => {}
            Ok(p) => tracing::info!(
                segments = p.expired.segments,
                messages = p.expired.messages,
                dead_letters = p.dead_letters,
                series_minutes = p.series_minutes,
                "retention deleted expired messages"
            ),
            Err(e) => tracing::warn!(error = %e, "retention pass failed"),
        }
    }
}

/// The dead-letter retention as configured in seconds; 0 is none (keep them all). Capped at a
/// thousand years, so that `now - keep` is always a valid time.
pub(crate) fn dead_letter_keep(secs: u64) -> Option<chrono::Duration> {
    const CAP: u64 = 1000 * 366 * 86_400;
    (secs > 0).then(|| chrono::Duration::seconds(secs.min(CAP) as i64))
}

/// The interval as configured in milliseconds; at least 10 ms.
pub(crate) fn interval(ms: u64) -> Duration {
    Duration::from_millis(ms.max(10))
}
