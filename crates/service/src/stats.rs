//! The stats rounds (spec §9's stats table): whenever one is due (`STATS_INTERVAL_MS` after
//! the last, and four times its length) one broker of the fleet recounts every queue into
//! the snapshot the inspection routes read (`regent_store::stats`), so a read costs a few
//! rows however many partitions and cursors there are; `POST /api/v1/stats/refresh` runs a
//! round at once and waits for it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use regent_rules::naming::QUEUE_MODE;
use regent_store::stats::{self, Lagging, QUEUES_PER_STATEMENT, TOP_LAGGING};
use regent_store::{depth_history, in_transaction};
use uuid::Uuid;

use crate::{Error, Service};

/// What a round did, for `POST /api/v1/stats/refresh`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Round {
    /// False when another broker's round was running or had just run.
    pub ran: bool,
    pub queues: usize,
    pub took: Duration,
}

/// Keeps the `TOP_LAGGING` oldest of a tenant's lagging cursors.
fn keep_oldest(all: &mut Vec<Lagging>) {
    all.sort_by(|a, b| {
        (a.oldest_unread_at, a.partition_id, &a.group).cmp(&(
            b.oldest_unread_at,
            b.partition_id,
            &b.group,
        ))
    });
    all.truncate(TOP_LAGGING);
}

/// The queues (sorted by tenant) grouped by tenant.
fn by_tenant(queues: &[(String, Uuid)]) -> Vec<(&str, Vec<Uuid>)> {
    let mut out: Vec<(&str, Vec<Uuid>)> = Vec::new();
    for (tenant, id) in queues {
        match out.last_mut() {
            Some((t, ids)) if *t == tenant.as_str() => ids.push(*id),
            _ => out.push((tenant.as_str(), vec![*id])),
        }
    }
    out
}

impl Service {
    /// Runs a round unless another broker's is running or the last one finished too
    /// recently (`store::stats::begin_round`); with `force`, waits for a running round and
    /// then runs one, so the counts include every write committed before the call.
    pub async fn refresh_stats(&self, force: bool) -> Result<Round, Error> {
        let started = Instant::now();
        let counted = in_transaction!(self.store, |tx| {
            if !stats::begin_round(tx, force, self.stats_interval).await? {
                return Ok(None);
            }
            let queues = stats::queues(tx).await?;
            for (tenant, ids) in by_tenant(&queues) {
                let mut lagging: Vec<Lagging> = Vec::new();
                for chunk in ids.chunks(QUEUES_PER_STATEMENT) {
                    lagging.extend(stats::recount(tx, tenant, chunk, QUEUE_MODE).await?);
                    depth_history::record_queues(tx, chunk).await?;
                }
                keep_oldest(&mut lagging);
                stats::write_lagging(tx, tenant, &lagging).await?;
            }
            depth_history::record(tx).await?;
            stats::finish_round(tx).await?;
            Ok(Some(queues.len()))
        })?;
        Ok(Round {
            ran: counted.is_some(),
            queues: counted.unwrap_or(0),
            took: started.elapsed(),
        })
    }
}

/// Asks for a round four times an interval (the database decides whether one is due, so
/// the fleet's brokers share the rounds); a failure is logged when it starts and when it
/// ends.
pub(crate) async fn run(s: Arc<Service>) {
    let mut failing = false;
    loop {
        tokio::time::sleep(s.stats_interval / 4).await;
        match s.refresh_stats(false).await {
            Err(e) if !failing => {
                failing = true;
                tracing::warn!(error = %e, retry_in = ?s.stats_interval, "a stats round failed");
            }
            Ok(_) if failing => {
                failing = false;
                tracing::info!("stats rounds succeed again");
            }
            Ok(r) if r.ran && r.took > s.stats_interval => {
                tracing::info!(took = ?r.took, queues = r.queues,
                    "a stats round took longer than STATS_INTERVAL_MS: the next waits 4 times as long");
            }
            _ => {}
        }
    }
}
