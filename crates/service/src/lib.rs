//! Regent's use cases, one module each: push (request fusion included), pop (the long-poll
//! loop, the claim, the lease's handover), ack, transaction, lease, announcements to this
//! broker's wakeups and to the other brokers, and the inspection and administration of
//! queues, consumer groups and dead letters.
//!
//! A use case takes parsed, typed input and returns a typed outcome. It owns its transaction
//! boundary: it begins the transaction, calls `regent-store` for SQL and `regent-rules` for
//! the rules, commits, and only then tells anyone (announcements happen after commit). It
//! knows no HTTP and no JSON shapes.
//!
//! Architecture Invariant: nothing is acknowledged before its commit. Every function here
//! that writes returns only after the transaction holding the write has committed (or with
//! an error, having written nothing).

pub mod ack;
mod announce;
mod compact;
pub mod dead_letters;
pub mod ephemeral;
pub mod error;
pub mod fleet;
mod fusion;
pub mod groups;
mod handover;
pub mod health;
pub mod kv;
pub mod lease;
mod limits;
pub mod maintenance;
pub mod messages;
pub mod overview;
mod payloads;
pub mod pop;
mod purge;
pub mod push;
pub mod queue_metrics;
pub mod queues;
pub mod requeue;
mod retention;
pub mod series;
pub mod stats;
pub mod status;
pub mod streams;
mod supervise;
mod test_hooks;
pub mod timers;
pub mod traces;
pub mod transaction;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use regent_config::Config;
use regent_memory::Runtime;
use regent_rules::encryption::PayloadCipher;
use regent_store::Store;

pub use error::Error;

/// One family of `Service`'s use cases (`service.kv()`, `service.streams()`, …), as the http
/// crate groups its routes: `F` names the family, and each family's module implements its
/// use cases on `Family<'_, F>`. It derefs to the `Service`, whose store, runtime and other
/// families the use cases reach as before.
pub struct Family<'a, F> {
    service: &'a Service,
    family: std::marker::PhantomData<F>,
}

impl<'a, F> Family<'a, F> {
    fn new(service: &'a Service) -> Self {
        Family {
            service,
            family: std::marker::PhantomData,
        }
    }
}

impl<F> std::ops::Deref for Family<'_, F> {
    type Target = Service;

    fn deref(&self) -> &Service {
        self.service
    }
}
pub use handover::Handover;
pub use regent_memory::activity::{Activity, Op, Outcome, ProcessUse, Recheck};
pub use regent_memory::histogram::Snapshot;
pub use regent_memory::limiter::Refusal;
pub use regent_memory::wakeups::Waiter;
pub use regent_store::{Message, StoredMessage};
pub use supervise::Supervisor;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The supervised tasks that `finish` stops.
struct Background {
    purge: JoinHandle<()>,
    compaction: JoinHandle<()>,
    peer_link: JoinHandle<()>,
    switches: JoinHandle<()>,
    retention: JoinHandle<()>,
    series: JoinHandle<()>,
    stats: JoinHandle<()>,
    fleet: JoinHandle<()>,
    timers: JoinHandle<()>,
}

/// One broker's use cases and everything they share.
pub struct Service {
    store: Store,
    runtime: Runtime,
    cipher: Option<PayloadCipher>,
    /// `DEDUP_WINDOW_SECONDS`: how long a transaction id deduplicates pushes.
    dedup_window: Duration,
    purge_interval: Duration,
    retention_interval: Duration,
    retention_batch: i64,
    implicit_retention: bool,
    dead_letter_retention: Option<chrono::Duration>,
    series_retention: chrono::Duration,
    /// How often the fleet recounts the stats snapshot (`STATS_INTERVAL_MS`).
    stats_interval: Duration,
    /// This broker's samples for the fleet's metrics.
    fleet: fleet::Sampler,
    database_url: String,
    /// Where push requests go to be fused into shared transactions.
    pushes: fusion::Batcher<push::PushJob>,
    /// Where ack requests go to be fused into shared transactions.
    acks: fusion::Batcher<ack::AckJob>,
    /// Where pops of one queue by one group wait to share a claim.
    pop_lanes: regent_memory::lanes::Lanes<pop::LaneKey, pop::LaneJob>,
    /// Flips to true when the broker starts shutting down: parked long-polls answer at once.
    stopping: watch::Sender<bool>,
    /// Flips to true last, once the shutdown's own releases are announced: the peer link
    /// sends what is left and closes.
    peers_stop: watch::Sender<bool>,
    supervisor: Supervisor,
    /// The background clocks and the peer link, stopped at shutdown.
    background: std::sync::Mutex<Option<Background>>,
    /// The fault tests' crash between a push's commit and its answer; `None` in service.
    abort_after_commit: Option<test_hooks::AbortAfterCommit>,
}

impl Service {
    /// Migrates the database, opens the pool and starts the background tasks (flushers, the
    /// purge and retention clocks, the maintenance poll, the peer link, the fleet's samples,
    /// the timers' firing loop).
    pub async fn start(config: &Config, database_url: &str) -> anyhow::Result<Arc<Service>> {
        let cipher = config
            .queen_encryption_key
            .as_deref()
            .map(PayloadCipher::from_hex)
            .transpose()?;
        let limits = config.tenant_limits()?;
        let layout = Store::migrate(database_url).await?;
        let store = Store::connect(database_url, config.db_pool_size, layout)?;
        let dedup_window = config.dedup_window()?;
        let runtime = Runtime::new(regent_memory::Settings {
            limits,
            peer_wakeups: config.peer_wakeups,
            spread: layout.spreads_partitions(),
        });
        let fleet = fleet::Sampler::new(
            config.metrics_sample_interval,
            config.metrics_retention_hours,
            runtime.activity.started,
        );
        let service = Arc::new(Service {
            store,
            runtime,
            cipher,
            dedup_window,
            purge_interval: Duration::from_secs(config.purge_interval_seconds.max(1)),
            retention_interval: retention::interval(config.retention_interval),
            retention_batch: config.retention_batch_segments.max(1),
            implicit_retention: config.implicit_retention,
            dead_letter_retention: retention::dead_letter_keep(
                config.dead_letter_retention_seconds,
            ),
            series_retention: chrono::Duration::days(
                config.series_retention_days.clamp(1, 36_600) as i64
            ),
            stats_interval: Duration::from_millis(config.stats_interval_ms.max(100)),
            fleet,
            database_url: database_url.to_string(),
            pushes: Default::default(),
            acks: Default::default(),
            pop_lanes: Default::default(),
            stopping: watch::Sender::new(false),
            peers_stop: watch::Sender::new(false),
            supervisor: Supervisor::default(),
            background: Default::default(),
            abort_after_commit: test_hooks::AbortAfterCommit::from_env(),
        });
        service.pushes.start(&service, "push flusher");
        service.acks.start(&service, "ack flusher");
        service.start_background();
        Ok(service)
    }

    fn start_background(self: &Arc<Self>) {
        let s = self.clone();
        let purge = self
            .supervisor
            .spawn("purge", move || purge::run(s.clone()));
        let s = self.clone();
        let compaction = self
            .supervisor
            .spawn("compaction", move || compact::run(s.clone()));
        let s = self.clone();
        let peers = self
            .supervisor
            .spawn("peer link", move || announce::peer_link(s.clone()));
        let s = self.clone();
        let switches = self
            .supervisor
            .spawn("maintenance", move || maintenance::run(s.clone()));
        let s = self.clone();
        let retention = self
            .supervisor
            .spawn("retention", move || retention::run(s.clone()));
        let s = self.clone();
        let series = self
            .supervisor
            .spawn("series", move || series::run(s.clone()));
        let s = self.clone();
        let stats = self
            .supervisor
            .spawn("stats", move || stats::run(s.clone()));
        let s = self.clone();
        let fleet = self
            .supervisor
            .spawn("fleet samples", move || fleet::run(s.clone()));
        let s = self.clone();
        let timers = self
            .supervisor
            .spawn("timers", move || timers::run(s.clone()));
        *self.background.lock().expect("start-up") = Some(Background {
            purge,
            compaction,
            peer_link: peers,
            switches,
            retention,
            series,
            stats,
            fleet,
            timers,
        });
    }

    /// The deduplication window as appends take it.
    pub(crate) fn window(&self) -> regent_store::append::Window {
        regent_store::append::Window(self.dedup_window.as_secs().min(i32::MAX as u64) as i32)
    }

    /// The in-memory state of this broker (wakeups, ready lists, counters...), for the
    /// integration tests that watch it. Not for regent-http: only a build with the tests'
    /// feature has it.
    #[cfg(feature = "test-support")]
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Where background tasks of other layers run, supervised (the JWKS refresh).
    pub fn supervisor(&self) -> &Supervisor {
        &self.supervisor
    }

    /// Whether payloads of encrypted queues can be sealed and opened.
    pub fn can_encrypt(&self) -> bool {
        self.cipher.is_some()
    }

    /// Shutdown, first step: parked long-polls answer their empty shape now, and new ones
    /// answer at once.
    pub fn stop_waiting(&self) {
        self.stopping.send_replace(true);
    }

    /// Shutdown, last step, once no request is running: the purge and compaction clocks
    /// stop, every lease whose answer was not delivered is released (and announced), the peer
    /// link sends what is left and closes, and the pool closes.
    pub async fn finish(self: &Arc<Self>) {
        let taken = self.background.lock().map(|mut b| b.take()).ok().flatten();
        if let Some(b) = &taken {
            b.purge.abort();
            b.compaction.abort();
            b.switches.abort();
            b.retention.abort();
            b.series.abort();
            b.stats.abort();
            b.fleet.abort();
            b.timers.abort();
        }
        handover::release_remaining(self).await;
        // The counts since the last flush, so a rolling restart loses none.
        if let Err(e) = self.flush_series().await {
            tracing::warn!(error = %e, "the last write of the queue series failed");
        }
        self.peers_stop.send_replace(true);
        if let Some(Background { mut peer_link, .. }) = taken {
            if tokio::time::timeout(Duration::from_secs(1), &mut peer_link)
                .await
                .is_err()
            {
                peer_link.abort();
            }
        }
        self.store.close();
    }
}
