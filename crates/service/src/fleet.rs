//! The fleet's metrics. Every `METRICS_SAMPLE_INTERVAL` each broker writes a sample of
//! itself to `broker_samples` (CPU time and requests since its previous sample, memory, its
//! pool, pending handovers, the size of each in-memory map), and deletes samples older than
//! `METRICS_RETENTION_HOURS` in bounded batches; so any broker answers for the whole fleet
//! (`/api/v1/analytics/system-metrics`, `/worker-metrics`). With each sample go the pops it
//! has parked per queue (the [`PARKED_QUEUES`] most waited-on), read back per tenant
//! (`/queue-parked-replicas`). Also what PostgreSQL says about itself (`/postgres-stats`) and
//! the tenant's push buffer (`/status/buffers`).
//!
//! A sample that cannot be written is not lost: its counters stay in the next one, which then
//! covers the longer interval.

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use regent_memory::activity::{hostname, ProcessUse};
use regent_memory::Op;
use regent_store::fleet::{self, Parked, Sample};
use regent_store::{maintenance, pg_stats};

pub use regent_store::fleet::{
    Cpu, FleetPoint, Gauge, MapSize, Ops, ParkedPoint, QueueActivity, Recent, SystemPoint,
};
pub use regent_store::pg_stats::PgStats;

use crate::{Error, Service};

/// Samples one expiring statement deletes at most (each broker runs one per sample; and as
/// many of the samples' parked counts, more than one sample writes).
pub const EXPIRE_BATCH: i64 = 10_000;
/// Queues a sample names with their parked pops at most: the most waited-on.
pub const PARKED_QUEUES: usize = 100;
/// The worker metrics list the brokers that sampled this recently.
pub const RECENT: Duration = Duration::from_secs(5 * 60);
/// Queues the worker metrics list at most.
const QUEUES: i64 = 100;
/// Brokers the worker metrics list at most.
const BROKERS: i64 = 1_000;
/// The shortest sampling interval honoured.
const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// This broker's sampling: where it serves, how often it samples, how long samples are kept,
/// and the counters as of its last sample written.
pub(crate) struct Sampler {
    interval: Duration,
    keep: chrono::Duration,
    hostname: String,
    /// The port this broker serves on, once known (0 until then).
    port: AtomicU16,
    last: tokio::sync::Mutex<Last>,
}

#[derive(Clone, Copy)]
struct Last {
    at: Instant,
    cpu_user: u64,
    cpu_system: u64,
    requests: [u64; 4],
    messages: [u64; 4],
}

impl Sampler {
    /// From `METRICS_SAMPLE_INTERVAL` (ms) and `METRICS_RETENTION_HOURS`; the first sample
    /// counts from `started`, when the counters were zero.
    pub(crate) fn new(interval_ms: u64, retention_hours: u64, started: Instant) -> Sampler {
        Sampler {
            interval: Duration::from_millis(interval_ms).max(MIN_INTERVAL),
            keep: chrono::Duration::hours(retention_hours.clamp(1, 10 * 366 * 24) as i64),
            hostname: hostname(),
            port: AtomicU16::new(0),
            last: tokio::sync::Mutex::new(Last {
                at: started,
                cpu_user: 0,
                cpu_system: 0,
                requests: [0; 4],
                messages: [0; 4],
            }),
        }
    }
}

pub use regent_rules::buckets::bucket_minutes;

/// What a metrics query reads: samples taken in `[from, to]`, of one host and one broker
/// (`workerId`) when given.
#[derive(Clone, Debug)]
pub struct Window {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub hostname: Option<String>,
    pub worker: Option<String>,
}

impl Window {
    /// The default window is the last hour; `to` alone ends it there, `from` alone runs to
    /// now.
    pub fn new(
        from: Option<DateTime<Utc>>,
        to: Option<DateTime<Utc>>,
        hostname: Option<String>,
        worker: Option<String>,
    ) -> Result<Window, Error> {
        let to = to.unwrap_or_else(Utc::now);
        let from = from.unwrap_or(to - chrono::Duration::hours(1));
        if from > to {
            return Err(Error::invalid("from must not be after to"));
        }
        Ok(Window {
            from,
            to,
            hostname,
            worker,
        })
    }

    pub fn bucket_minutes(&self) -> i32 {
        bucket_minutes(self.to - self.from)
    }

    fn store(&self) -> fleet::Window<'_> {
        fleet::Window {
            from: self.from,
            to: self.to,
            bucket_minutes: self.bucket_minutes(),
            hostname: self.hostname.as_deref(),
            broker: self.worker.as_deref(),
        }
    }
}

/// `part` as a percent of `whole`, to two decimals; `None` when `whole` is 0 (no data is not
/// a ratio of 0 or 100).
pub fn percent(part: i64, whole: i64) -> Option<f64> {
    (whole > 0).then(|| (part as f64 * 10_000.0 / whole as f64).round() / 100.0)
}

/// The worker metrics: the fleet's buckets, the brokers seen lately, the tenant's queues.
pub struct WorkerMetrics {
    /// Newest first.
    pub series: Vec<FleetPoint>,
    /// The brokers that sampled within [`RECENT`], each over that span.
    pub brokers: Vec<Recent>,
    /// The tenant's queues with activity in the window, most delivered first.
    pub queues: Vec<QueueActivity>,
}

/// `/status/buffers`: the tenant's pushes held in the push buffer, and whether the database
/// answered the count (`pending` is `None` when it did not).
pub struct Buffers {
    pub pending: Option<i64>,
    pub db_healthy: bool,
}

impl Service {
    /// The port this broker serves on, for its samples.
    pub fn serving_on(&self, port: u16) {
        self.fleet.port.store(port, Ordering::Relaxed);
    }

    /// This broker's id in the fleet's samples (and in its peer notes).
    pub fn broker_id(&self) -> uuid::Uuid {
        self.runtime.peers.id()
    }

    /// Writes a sample of this broker now. Its counters are what happened since the last
    /// sample written (or since start); when the write fails they stay for the next.
    pub async fn sample_fleet(&self) -> Result<(), Error> {
        let mut last = self.fleet.last.lock().await;
        // Read before taking a connection, so the sample does not count itself in use.
        let pool = self.store.pool_status();
        let process = ProcessUse::now();
        let at = Instant::now();
        let activity = &self.runtime.activity;
        let requests = Op::ALL.map(|op| activity.requests(op));
        let messages = Op::ALL.map(|op| activity.messages(op));
        let since = |now: u64, before: u64| now.saturating_sub(before) as i64;
        let ops = |now: &[u64; 4], before: &[u64; 4]| Ops {
            push: since(now[Op::Push as usize], before[Op::Push as usize]),
            pop: since(now[Op::Pop as usize], before[Op::Pop as usize]),
            ack: since(now[Op::Ack as usize], before[Op::Ack as usize]),
            transaction: since(
                now[Op::Transaction as usize],
                before[Op::Transaction as usize],
            ),
        };
        let sizes = self.runtime_sizes();
        let clamp = |n: usize| n.min(i32::MAX as usize) as i32;
        let top = self.runtime.parked.top(PARKED_QUEUES);
        let parked: Vec<Parked> = top
            .iter()
            .map(|q| Parked {
                tenant: &q.tenant,
                queue: &q.queue,
                parked: clamp(q.parked),
            })
            .collect();
        let sample = Sample {
            broker_id: self.runtime.peers.id(),
            hostname: &self.fleet.hostname,
            port: i32::from(self.fleet.port.load(Ordering::Relaxed)),
            interval_ms: at.duration_since(last.at).as_millis() as i64,
            cpu_user_us: since(process.cpu_user_micros, last.cpu_user),
            cpu_system_us: since(process.cpu_system_micros, last.cpu_system),
            rss_bytes: process.resident_bytes as i64,
            virtual_bytes: process.virtual_bytes as i64,
            pool_size: clamp(pool.max),
            pool_open: clamp(pool.open),
            pool_idle: clamp(pool.idle),
            pool_waiting: clamp(pool.waiting),
            requests: ops(&requests, &last.requests),
            messages: ops(&messages, &last.messages),
            pending_handovers: clamp(self.runtime.handovers.pending()),
            runtime: &sizes,
            parked: &parked,
        };
        let client = self.store.client().await?;
        fleet::record(&client, &sample).await?;
        *last = Last {
            at,
            cpu_user: process.cpu_user_micros,
            cpu_system: process.cpu_system_micros,
            requests,
            messages,
        };
        Ok(())
    }

    /// Deletes at most [`EXPIRE_BATCH`] samples older than `METRICS_RETENTION_HOURS`, oldest
    /// first, and as many of their parked counts; how many samples went.
    pub async fn expire_fleet_samples(&self) -> Result<i64, Error> {
        let client = self.store.client().await?;
        let before = Utc::now() - self.fleet.keep;
        let samples = fleet::expire(&client, before, EXPIRE_BATCH).await?;
        fleet::expire_parked(&client, before, EXPIRE_BATCH).await?;
        Ok(samples)
    }

    /// Every broker's buckets of the window, by (hostname, port, broker), oldest first.
    pub async fn system_metrics(&self, w: &Window) -> Result<Vec<SystemPoint>, Error> {
        let client = self.store.client().await?;
        Ok(fleet::system(&client, &w.store()).await?)
    }

    /// The fleet's buckets of the window, the brokers seen lately, and what the tenant's
    /// queues did in the window.
    pub async fn worker_metrics(&self, tenant: &str, w: &Window) -> Result<WorkerMetrics, Error> {
        let client = self.store.client().await?;
        let series = fleet::fleet(&client, &w.store()).await?;
        let since = Utc::now() - chrono::Duration::from_std(RECENT).unwrap_or_default();
        let brokers = fleet::recent(&client, since, BROKERS).await?;
        let queues = fleet::queue_activity(&client, tenant, w.from, w.to, QUEUES).await?;
        Ok(WorkerMetrics {
            series,
            brokers,
            queues,
        })
    }

    /// The tenant's parked pops per (bucket, queue, broker) of the window (of one queue when
    /// given), oldest bucket first.
    pub async fn parked_replicas(
        &self,
        tenant: &str,
        queue: Option<&str>,
        w: &Window,
    ) -> Result<Vec<ParkedPoint>, Error> {
        let client = self.store.client().await?;
        Ok(fleet::parked(&client, tenant, queue, &w.store()).await?)
    }

    /// What PostgreSQL says about itself.
    pub async fn postgres_stats(&self) -> Result<PgStats, Error> {
        let client = self.store.client().await?;
        Ok(pg_stats::read(&client).await?)
    }

    /// The tenant's pushes waiting in the push buffer (maintenance), counted in the database.
    pub async fn buffers(&self, tenant: &str) -> Buffers {
        let counted = async {
            let client = self.store.client().await?;
            maintenance::get(&client, tenant).await
        };
        match counted.await {
            Ok((_, pending)) => Buffers {
                pending: Some(pending),
                db_healthy: true,
            },
            Err(e) => {
                tracing::debug!(error = %e, "counting the push buffer failed");
                Buffers {
                    pending: None,
                    db_healthy: false,
                }
            }
        }
    }
}

/// Samples for ever, and after each sample deletes one batch of expired ones; a failure is
/// logged when it starts and when it ends.
pub(crate) async fn run(s: Arc<Service>) {
    let mut failing = false;
    loop {
        tokio::time::sleep(s.fleet.interval).await;
        let done = match s.sample_fleet().await {
            Ok(()) => s.expire_fleet_samples().await.map(|_| ()),
            Err(e) => Err(e),
        };
        match done {
            Err(e) if !failing => {
                failing = true;
                tracing::warn!(error = %e, retry_in = ?s.fleet.interval,
                               "writing the fleet's metrics sample failed");
            }
            Ok(()) if failing => {
                failing = false;
                tracing::info!("writing the fleet's metrics samples again");
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_defaults_to_the_last_hour_and_is_never_reversed() {
        let w = Window::new(None, None, None, None).unwrap();
        assert_eq!(w.to - w.from, chrono::Duration::hours(1));
        let to = Utc::now() - chrono::Duration::days(2);
        let w = Window::new(None, Some(to), None, None).unwrap();
        assert_eq!((w.from, w.to), (to - chrono::Duration::hours(1), to));
        assert!(Window::new(Some(Utc::now()), Some(to), None, None).is_err());
    }

    #[test]
    fn percents_of_nothing_are_none() {
        assert_eq!(percent(1, 3), Some(33.33));
        assert_eq!(percent(0, 5), Some(0.0));
        assert_eq!(percent(0, 0), None);
    }
}
