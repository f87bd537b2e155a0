//! The fleet's metrics (spec §13.7): `GET /api/v1/analytics/system-metrics` and
//! `/worker-metrics` from every broker's samples, `/postgres-stats` from PostgreSQL's
//! statistics views; and `GET /api/v1/status/buffers` (§13.6). A Queen field Regent has no
//! measurement for is `null`, never a made-up number (docs/metrics.md, "Fleet metrics").

use std::collections::BTreeMap;

use axum::extract::State as AxState;
use axum::http::Method;
use axum::Extension;
use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::analytics::TAG;
use super::answer::{Answer, Millis, Null};
use super::auth::Principal;
use super::error::ApiError;
use super::openapi::Doc;
use super::params::Params;
use super::routes::{route, Entry, Level::*};
use super::time::{TimeRange, WindowQuery};
use super::State;
use regent_service::fleet::pg_stats as pg;
use regent_service::fleet::{
    percent, Cpu, FleetPoint, Gauge, Ops, PgStats, Recent, SystemPoint, Window,
};

/// The brokers a fleet route reads ([`window`]'s filter).
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct FleetFilter {
    /// Only brokers on this host.
    #[schemars(with = "String")]
    hostname: Option<String>,
    /// Only this broker (its id, new at every start).
    #[schemars(with = "String")]
    worker_id: Option<String>,
}

pub(crate) fn routes() -> Vec<Entry> {
    use Method as M;
    let op = |summary| Doc::op(TAG, summary);
    const FAILS: &str = "`from must not be after to`, `from must be an ISO-8601 timestamp`, `to must be an ISO-8601 timestamp`.";
    let fleet = |doc: Doc| {
        doc.query_of::<WindowQuery<1>>()
            .query_of::<FleetFilter>()
            .fails(400, FAILS)
    };
    let reader = |p: Params| async move { window(&p).map(drop) };
    // The fleet's figures name hosts and span every tenant: admin, not the spec's read-only
    // (docs/api.md, "Access levels and tenants").
    vec![
        route(M::GET, "/api/v1/analytics/system-metrics", Admin, system_metrics)
            .doc(fleet(op("The fleet's system metrics"))
                .answers::<SystemMetrics>(200, "The fleet's series."))
            .reads_request(&["?from=2026-01-01T00:00:00Z&hostname=h&workerId=0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d"], reader),
        route(M::GET, "/api/v1/analytics/worker-metrics", Admin, worker_metrics)
            .doc(fleet(op("The fleet's request and message figures"))
                .answers::<WorkerMetrics>(200, "The figures."))
            .reads_request(&["?to=2026-01-01T00:00:00Z&hostname=h"], reader),
        route(M::GET, "/api/v1/analytics/postgres-stats", Admin, postgres_stats)
            .reads_nothing()
            .doc(op("PostgreSQL's statistics")
                .answers::<PostgresStats>(200, "The statistics.")),
        route(M::GET, "/api/v1/status/buffers", ReadOnly, buffers)
            .reads_nothing()
            .doc(op("Pushes waiting in the push buffer")
                .answers::<BufferAnswer>(200, "The buffer.")),
    ]
}

/// `from`, `to` (default: the last hour), `hostname`, `workerId` (a broker's id).
fn window(p: &Params) -> Result<Window, ApiError> {
    let q: WindowQuery<1> = p.read()?;
    let (from, to) = (q.from.get()?, q.to.get()?);
    let FleetFilter {
        hostname,
        worker_id,
    } = p.read()?;
    Ok(Window::new(from, to, hostname, worker_id)?)
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// A gauge over a bucket: the average over its samples (to two decimals), the least, the
/// most and the last.
#[derive(Serialize, JsonSchema)]
struct GaugeFigures {
    avg: f64,
    min: i64,
    max: i64,
    last: i64,
}

impl From<&Gauge> for GaugeFigures {
    fn from(g: &Gauge) -> GaugeFigures {
        GaugeFigures {
            avg: round2(g.avg),
            min: g.min,
            max: g.max,
            last: g.last,
        }
    }
}

/// CPU use over a bucket in percent of one core (to two decimals): `avg` over the time the
/// samples cover, `min`/`max`/`last` of single samples.
#[derive(Serialize, JsonSchema)]
struct CpuPercent {
    avg: f64,
    min: f64,
    max: f64,
    last: f64,
}

impl From<&Cpu> for CpuPercent {
    fn from(c: &Cpu) -> CpuPercent {
        CpuPercent {
            avg: round2(c.avg),
            min: round2(c.min),
            max: round2(c.max),
            last: round2(c.last),
        }
    }
}

/// Requests or messages per operation.
#[derive(Serialize, JsonSchema)]
struct PerOp {
    push: i64,
    pop: i64,
    ack: i64,
    transaction: i64,
}

impl From<&Ops> for PerOp {
    fn from(o: &Ops) -> PerOp {
        PerOp {
            push: o.push,
            pop: o.pop,
            ack: o.ack,
            transaction: o.transaction,
        }
    }
}

/// `GET /api/v1/analytics/system-metrics`.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct SystemMetrics {
    time_range: TimeRange,
    /// Per broker, by (hostname, port, broker).
    replicas: Vec<SystemReplica>,
    replica_count: usize,
    bucket_minutes: i32,
    /// Buckets over every broker.
    point_count: usize,
}

/// One broker's buckets.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct SystemReplica {
    hostname: String,
    port: i32,
    /// The broker's id, new at every start.
    worker_id: Uuid,
    /// Oldest bucket first.
    time_series: Vec<SystemBucket>,
}

/// One broker's bucket.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct SystemBucket {
    /// The bucket's start.
    timestamp: Millis,
    sample_count: i64,
    /// Milliseconds the bucket's counters cover.
    covered_ms: i64,
    metrics: BucketMetrics,
}

/// One broker's bucket: CPU in percent of one core and in microseconds, memory, the pool,
/// requests and messages in the bucket, pending handovers, the in-memory maps.
#[derive(Serialize, JsonSchema)]
struct BucketMetrics {
    cpu: CpuFigures,
    memory: MemoryFigures,
    database: PoolFigures,
    requests: PerOp,
    messages: PerOp,
    handovers: HandoverFigures,
    /// Entries in each in-memory map, by its name: the most in one sample and the last.
    runtime: BTreeMap<String, MapFigures>,
}

#[derive(Serialize, JsonSchema)]
struct CpuFigures {
    user_percent: CpuPercent,
    system_percent: CpuPercent,
    /// CPU time in the bucket, in microseconds.
    user_us: i64,
    system_us: i64,
}

#[derive(Serialize, JsonSchema)]
struct MemoryFigures {
    rss_bytes: GaugeFigures,
    virtual_bytes: GaugeFigures,
}

/// The broker's database pool.
#[derive(Serialize, JsonSchema)]
struct PoolFigures {
    pool_size: GaugeFigures,
    pool_open: GaugeFigures,
    pool_active: GaugeFigures,
    pool_idle: GaugeFigures,
    /// Requests waiting for a connection.
    pool_waiting: GaugeFigures,
}

#[derive(Serialize, JsonSchema)]
struct HandoverFigures {
    pending: GaugeFigures,
}

#[derive(Serialize, JsonSchema)]
struct MapFigures {
    max: i64,
    last: i64,
}

impl From<&SystemPoint> for SystemBucket {
    fn from(p: &SystemPoint) -> SystemBucket {
        SystemBucket {
            timestamp: Millis(p.bucket),
            sample_count: p.samples,
            covered_ms: p.covered_ms,
            metrics: BucketMetrics {
                cpu: CpuFigures {
                    user_percent: (&p.cpu_user).into(),
                    system_percent: (&p.cpu_system).into(),
                    user_us: p.cpu_user.micros,
                    system_us: p.cpu_system.micros,
                },
                memory: MemoryFigures {
                    rss_bytes: (&p.rss_bytes).into(),
                    virtual_bytes: (&p.virtual_bytes).into(),
                },
                database: PoolFigures {
                    pool_size: (&p.pool_size).into(),
                    pool_open: (&p.pool_open).into(),
                    pool_active: (&p.pool_active).into(),
                    pool_idle: (&p.pool_idle).into(),
                    pool_waiting: (&p.pool_waiting).into(),
                },
                requests: (&p.requests).into(),
                messages: (&p.messages).into(),
                handovers: HandoverFigures {
                    pending: (&p.pending_handovers).into(),
                },
                runtime: p
                    .runtime
                    .iter()
                    .map(|m| {
                        let figures = MapFigures {
                            max: m.max,
                            last: m.last,
                        };
                        (m.name.clone(), figures)
                    })
                    .collect(),
            },
        }
    }
}

/// `Admin.get_system_metrics`: each broker's samples of the window, bucketed.
async fn system_metrics(AxState(s): State, p: Params) -> Result<Answer<SystemMetrics>, ApiError> {
    let w = window(&p)?;
    let points = s.service.fleet().system_metrics(&w).await?;
    // The points come by broker: each run of one broker's points is its series.
    let mut replicas: Vec<SystemReplica> = Vec::new();
    for point in &points {
        let bucket = SystemBucket::from(point);
        match replicas.last_mut() {
            Some(r) if r.worker_id == point.broker_id => r.time_series.push(bucket),
            _ => replicas.push(SystemReplica {
                hostname: point.hostname.clone(),
                port: point.port,
                worker_id: point.broker_id,
                time_series: vec![bucket],
            }),
        }
    }
    Ok(Answer(SystemMetrics {
        time_range: TimeRange::new(w.from, w.to),
        replica_count: replicas.len(),
        replicas,
        bucket_minutes: w.bucket_minutes(),
        point_count: points.len(),
    }))
}

/// `GET /api/v1/analytics/worker-metrics`.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct WorkerMetrics {
    time_range: TimeRange,
    bucket_minutes: i32,
    point_count: usize,
    /// The fleet's buckets, newest first.
    time_series: Vec<FleetBucket>,
    /// The brokers that sampled in the last 5 minutes, each over that span.
    workers: Vec<RecentBroker>,
    /// The caller's tenant's queues with activity in the window, most delivered first.
    queues: Vec<QueueActivity>,
    /// The window's totals.
    summary: FleetSummary,
}

/// The fleet's figures of one bucket. Queen's event loop, its slots and backoff, pop lag and
/// error counters are null: Regent measures none of them.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct FleetBucket {
    /// The bucket's start.
    timestamp: Millis,
    /// Brokers that sampled in the bucket.
    brokers: i64,
    sample_count: i64,
    push_messages: i64,
    pop_messages: i64,
    ack_messages: i64,
    transaction_messages: i64,
    push_requests: i64,
    pop_requests: i64,
    ack_requests: i64,
    transaction_requests: i64,
    /// Messages per second over the bucket (to two decimals).
    push_per_second: f64,
    pop_per_second: f64,
    ack_per_second: f64,
    /// CPU use of the brokers over the bucket, in percent of one core, summed over brokers.
    cpu_percent: f64,
    /// Open pool connections: each broker's average over the bucket, summed over brokers.
    db_connections: f64,
    /// Requests waiting for a pool connection: each broker's average, summed over brokers.
    avg_job_queue_size: f64,
    /// The most requests any one broker's pool had waiting in one sample.
    max_job_queue_size: i64,
    #[serde(flatten)]
    unmeasured: FleetUnmeasured,
}

/// Queen's figures of a bucket that Regent does not measure: always null.
#[derive(Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct FleetUnmeasured {
    jobs_done: Null,
    avg_event_loop_lag_ms: Null,
    max_event_loop_lag_ms: Null,
    avg_free_slots: Null,
    min_free_slots: Null,
    backoff_size: Null,
    avg_lag_ms: Null,
    max_lag_ms: Null,
    lag_count: Null,
    db_errors: Null,
    ack_success: Null,
    ack_failed: Null,
    dlq_count: Null,
}

impl FleetBucket {
    fn new(f: &FleetPoint, bucket_seconds: f64) -> FleetBucket {
        let rate = |n: i64| round2(n as f64 / bucket_seconds);
        let (m, r) = (&f.messages, &f.requests);
        FleetBucket {
            timestamp: Millis(f.bucket),
            brokers: f.brokers,
            sample_count: f.samples,
            push_messages: m.push,
            pop_messages: m.pop,
            ack_messages: m.ack,
            transaction_messages: m.transaction,
            push_requests: r.push,
            pop_requests: r.pop,
            ack_requests: r.ack,
            transaction_requests: r.transaction,
            push_per_second: rate(m.push),
            pop_per_second: rate(m.pop),
            ack_per_second: rate(m.ack),
            cpu_percent: round2(f.cpu_percent),
            db_connections: round2(f.db_connections),
            avg_job_queue_size: round2(f.avg_waiting),
            max_job_queue_size: f.max_waiting,
            unmeasured: FleetUnmeasured::default(),
        }
    }
}

/// A broker seen lately, over the last 5 minutes; its memory, pool and handovers as of its
/// latest sample. Queen's event-loop and slot figures are null.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct RecentBroker {
    hostname: String,
    port: i32,
    /// The broker's id, new at every start.
    worker_id: Uuid,
    last_seen: Millis,
    sample_count: i64,
    /// Messages pushed and acked.
    messages_processed: i64,
    requests: PerOp,
    messages: PerOp,
    /// CPU use over the span, in percent of one core.
    cpu_percent: f64,
    rss_bytes: i64,
    /// Open pool connections.
    db_connections: i32,
    /// Requests waiting for a pool connection.
    job_queue_size: i32,
    pending_handovers: i32,
    avg_event_loop_lag_ms: Null,
    max_event_loop_lag_ms: Null,
    free_slots: Null,
    backoff_size: Null,
}

impl From<&Recent> for RecentBroker {
    fn from(b: &Recent) -> RecentBroker {
        RecentBroker {
            hostname: b.hostname.clone(),
            port: b.port,
            worker_id: b.broker_id,
            last_seen: Millis(b.last_seen),
            sample_count: b.samples,
            messages_processed: b.messages.push + b.messages.ack,
            requests: (&b.requests).into(),
            messages: (&b.messages).into(),
            cpu_percent: round2(b.cpu_percent),
            rss_bytes: b.rss_bytes,
            db_connections: b.pool_open,
            job_queue_size: b.pool_waiting,
            pending_handovers: b.pending_handovers,
            avg_event_loop_lag_ms: Null,
            max_event_loop_lag_ms: Null,
            free_slots: Null,
            backoff_size: Null,
        }
    }
}

/// One of the caller's tenant's queues over the window (its waits are null here; see
/// `/api/v1/analytics/queue-lag`).
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct QueueActivity {
    queue_name: String,
    /// Messages delivered.
    pop_count: i64,
    push_count: i64,
    /// Messages passed by a cursor.
    completed_count: i64,
    /// Nacks.
    failed_count: i64,
    dead_letter_count: i64,
    avg_lag_ms: Null,
    max_lag_ms: Null,
}

/// The window's totals over the fleet's buckets; Queen's error, dead-letter and pending
/// totals are null.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct FleetSummary {
    total_push_messages: i64,
    total_pop_messages: i64,
    total_ack_messages: i64,
    total_transaction_messages: i64,
    total_push_requests: i64,
    total_pop_requests: i64,
    total_ack_requests: i64,
    total_transaction_requests: i64,
    total_db_errors: Null,
    total_ack_failed: Null,
    total_dlq: Null,
    pending_messages: Null,
}

/// `Admin.get_worker_metrics`: the fleet's buckets (newest first), the brokers that sampled in
/// the last 5 minutes, the tenant's queues of the window, and the window's totals.
async fn worker_metrics(
    AxState(s): State,
    Extension(who): Extension<Principal>,
    p: Params,
) -> Result<Answer<WorkerMetrics>, ApiError> {
    let w = window(&p)?;
    let m = s.service.fleet().worker_metrics(&who.tenant, &w).await?;
    let bucket_seconds = f64::from(w.bucket_minutes()) * 60.0;
    let sum = |f: fn(&FleetPoint) -> i64| m.series.iter().map(f).sum::<i64>();
    Ok(Answer(WorkerMetrics {
        time_range: TimeRange::new(w.from, w.to),
        bucket_minutes: w.bucket_minutes(),
        point_count: m.series.len(),
        time_series: m
            .series
            .iter()
            .map(|f| FleetBucket::new(f, bucket_seconds))
            .collect(),
        workers: m.brokers.iter().map(RecentBroker::from).collect(),
        queues: m
            .queues
            .iter()
            .map(|q| QueueActivity {
                queue_name: q.queue.clone(),
                pop_count: q.delivered,
                push_count: q.pushed,
                completed_count: q.completed,
                failed_count: q.failed,
                dead_letter_count: q.dead_lettered,
                avg_lag_ms: Null,
                max_lag_ms: Null,
            })
            .collect(),
        summary: FleetSummary {
            total_push_messages: sum(|f| f.messages.push),
            total_pop_messages: sum(|f| f.messages.pop),
            total_ack_messages: sum(|f| f.messages.ack),
            total_transaction_messages: sum(|f| f.messages.transaction),
            total_push_requests: sum(|f| f.requests.push),
            total_pop_requests: sum(|f| f.requests.pop),
            total_ack_requests: sum(|f| f.requests.ack),
            total_transaction_requests: sum(|f| f.requests.transaction),
            total_db_errors: Null,
            total_ack_failed: Null,
            total_dlq: Null,
            pending_messages: Null,
        },
    }))
}

/// `GET /api/v1/analytics/postgres-stats`. Every list is at most 20 long; hit ratios and
/// percentages are to two decimals, null where there is nothing to divide.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct PostgresStats {
    timestamp: Millis,
    /// The database's name.
    database: String,
    database_cache: DatabaseCache,
    table_cache: Vec<TableCache>,
    index_cache: Vec<IndexCache>,
    cache_summary: CacheSummary,
    dead_tuples: Vec<DeadTuples>,
    hot_updates: Vec<HotUpdates>,
    /// Statements running over 1 s: their kind, never their text.
    active_queries: Vec<ActiveQuery>,
    /// Tables past their autovacuum threshold.
    autovacuum_status: Vec<AutovacuumDue>,
    /// The memory settings, each pretty and in bytes.
    buffer_config: BufferConfig,
    /// Buffer use by relation (needs pg_buffercache).
    buffer_usage: Vec<BufferUse>,
    /// Whether pg_buffercache is installed (else `bufferUsage` is empty).
    buffer_usage_available: bool,
    table_sizes: Vec<TableSize>,
}

/// The database's size and counters.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct DatabaseCache {
    blocks_read: i64,
    blocks_hit: i64,
    /// Percent of blocks found in the shared buffers.
    cache_hit_ratio: Option<f64>,
    size_bytes: i64,
    size: String,
    connections: i32,
    transactions_committed: i64,
    transactions_rolled_back: i64,
    deadlocks: i64,
    conflicts: i64,
    temp_files: i64,
    temp_bytes: i64,
    stats_reset: Option<Millis>,
}

/// A table's cache hits.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct TableCache {
    schema: String,
    table: String,
    disk_reads: i64,
    cache_hits: i64,
    cache_hit_ratio: Option<f64>,
}

/// An index's cache hits.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct IndexCache {
    schema: String,
    index: Option<String>,
    table: String,
    disk_reads: i64,
    cache_hits: i64,
    cache_hit_ratio: Option<f64>,
}

/// Hit ratios over every user table and every user index.
#[derive(Serialize, JsonSchema)]
struct CacheSummary {
    tables: HitRatio,
    indexes: HitRatio,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct HitRatio {
    disk_reads: i64,
    cache_hits: i64,
    hit_ratio: Option<f64>,
}

/// A table's dead tuples.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct DeadTuples {
    schema: String,
    table: String,
    live_tuples: i64,
    dead_tuples: i64,
    dead_percentage: Option<f64>,
    last_vacuum: Option<Millis>,
    last_autovacuum: Option<Millis>,
}

/// A table's HOT updates.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct HotUpdates {
    schema: String,
    table: String,
    total_updates: i64,
    hot_updates: i64,
    hot_update_percentage: Option<f64>,
}

/// A statement running over 1 s.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ActiveQuery {
    pid: i32,
    state: String,
    /// Seconds it has run.
    duration: f64,
    wait_event_type: Option<String>,
    wait_event: Option<String>,
    backend_type: Option<String>,
    /// Withheld: another session's statement can carry another tenant's data.
    query: Null,
    /// The statement's first keyword, upper-cased.
    query_kind: Option<String>,
}

/// A table past its autovacuum threshold.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct AutovacuumDue {
    schema: String,
    table: String,
    dead_tuples: i64,
    /// Dead tuples past which autovacuum takes the table.
    vacuum_threshold: i64,
    autovacuum_enabled: bool,
    autovacuum_count: i64,
    autoanalyze_count: i64,
    last_autovacuum: Option<Millis>,
    last_autoanalyze: Option<Millis>,
}

/// The memory settings: each as PostgreSQL prints it and in bytes.
#[derive(Default, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct BufferConfig {
    shared_buffers_size: Option<String>,
    shared_buffers_bytes: Option<i64>,
    effective_cache_size: Option<String>,
    effective_cache_size_bytes: Option<i64>,
    work_mem: Option<String>,
    work_mem_bytes: Option<i64>,
    maintenance_work_mem: Option<String>,
    maintenance_work_mem_bytes: Option<i64>,
    wal_buffers: Option<String>,
    wal_buffers_bytes: Option<i64>,
    temp_buffers: Option<String>,
    temp_buffers_bytes: Option<i64>,
}

impl BufferConfig {
    /// From PostgreSQL's settings (`regent_store::pg_stats::SETTINGS`, every one of which a
    /// server has).
    fn of(st: &PgStats) -> BufferConfig {
        let mut c = BufferConfig::default();
        for s in &st.settings {
            let (pretty, bytes) = match s.name.as_str() {
                "shared_buffers" => (&mut c.shared_buffers_size, &mut c.shared_buffers_bytes),
                "effective_cache_size" => (
                    &mut c.effective_cache_size,
                    &mut c.effective_cache_size_bytes,
                ),
                "work_mem" => (&mut c.work_mem, &mut c.work_mem_bytes),
                "maintenance_work_mem" => (
                    &mut c.maintenance_work_mem,
                    &mut c.maintenance_work_mem_bytes,
                ),
                "wal_buffers" => (&mut c.wal_buffers, &mut c.wal_buffers_bytes),
                _ => (&mut c.temp_buffers, &mut c.temp_buffers_bytes),
            };
            *pretty = s.pretty.clone();
            *bytes = s.bytes;
        }
        c
    }
}

/// What the shared buffers hold of one relation.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct BufferUse {
    object: String,
    buffers: i64,
    buffered_bytes: i64,
    buffered_size: String,
    percent_of_cache: f64,
}

/// A table's sizes: with Citus, each distributed or reference table summed over its shards on
/// every node.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct TableSize {
    schema: String,
    table: String,
    total_size: String,
    table_size: String,
    index_size: String,
    total_bytes: i64,
    table_bytes: i64,
    index_bytes: i64,
    /// Live rows.
    rows: i64,
}

/// `Admin.get_postgres_stats`: PostgreSQL's own statistics, every list at most 20 long; no
/// session's statement text, only its first keyword.
async fn postgres_stats(AxState(s): State) -> Result<Answer<PostgresStats>, ApiError> {
    let st = s.service.fleet().postgres_stats().await?;
    Ok(Answer(PostgresStats {
        timestamp: Millis(st.at),
        database: st.database.name.clone(),
        database_cache: (&st.database).into(),
        table_cache: each(&st.table_cache),
        index_cache: each(&st.index_cache),
        cache_summary: (&st.cache_summary).into(),
        dead_tuples: each(&st.dead_tuples),
        hot_updates: each(&st.hot_updates),
        active_queries: each(&st.active),
        autovacuum_status: st.autovacuum_due.iter().map(AutovacuumDue::from).collect(),
        buffer_config: BufferConfig::of(&st),
        buffer_usage: st.buffered.iter().flatten().map(BufferUse::from).collect(),
        buffer_usage_available: st.buffered.is_some(),
        table_sizes: each(&st.table_sizes),
    }))
}

/// Each row of a statistics list, in its answer's shape.
fn each<'a, R, T: From<&'a R>>(rows: &'a [R]) -> Vec<T> {
    rows.iter().map(T::from).collect()
}

/// Percent of blocks found in the shared buffers.
fn hit_ratio(hit: i64, read: i64) -> Option<f64> {
    percent(hit, hit + read)
}

fn at(t: Option<DateTime<Utc>>) -> Option<Millis> {
    t.map(Millis)
}

impl From<&pg::Database> for DatabaseCache {
    fn from(d: &pg::Database) -> Self {
        DatabaseCache {
            blocks_read: d.blocks_read,
            blocks_hit: d.blocks_hit,
            cache_hit_ratio: hit_ratio(d.blocks_hit, d.blocks_read),
            size_bytes: d.size_bytes,
            size: d.size.clone(),
            connections: d.backends,
            transactions_committed: d.commits,
            transactions_rolled_back: d.rollbacks,
            deadlocks: d.deadlocks,
            conflicts: d.conflicts,
            temp_files: d.temp_files,
            temp_bytes: d.temp_bytes,
            stats_reset: at(d.stats_reset),
        }
    }
}

impl From<&pg::Cache> for TableCache {
    fn from(c: &pg::Cache) -> Self {
        TableCache {
            schema: c.schema.clone(),
            table: c.table.clone(),
            disk_reads: c.blocks_read,
            cache_hits: c.blocks_hit,
            cache_hit_ratio: hit_ratio(c.blocks_hit, c.blocks_read),
        }
    }
}

impl From<&pg::Cache> for IndexCache {
    fn from(c: &pg::Cache) -> Self {
        IndexCache {
            schema: c.schema.clone(),
            index: c.index.clone(),
            table: c.table.clone(),
            disk_reads: c.blocks_read,
            cache_hits: c.blocks_hit,
            cache_hit_ratio: hit_ratio(c.blocks_hit, c.blocks_read),
        }
    }
}

impl From<&pg::CacheSummary> for CacheSummary {
    fn from(cs: &pg::CacheSummary) -> Self {
        let ratio = |read: i64, hit: i64| HitRatio {
            disk_reads: read,
            cache_hits: hit,
            hit_ratio: hit_ratio(hit, read),
        };
        CacheSummary {
            tables: ratio(cs.table_read, cs.table_hit),
            indexes: ratio(cs.index_read, cs.index_hit),
        }
    }
}

impl From<&pg::TableStats> for DeadTuples {
    fn from(t: &pg::TableStats) -> Self {
        DeadTuples {
            schema: t.schema.clone(),
            table: t.table.clone(),
            live_tuples: t.live_tuples,
            dead_tuples: t.dead_tuples,
            dead_percentage: percent(t.dead_tuples, t.live_tuples + t.dead_tuples),
            last_vacuum: at(t.last_vacuum),
            last_autovacuum: at(t.last_autovacuum),
        }
    }
}

impl From<&pg::TableStats> for HotUpdates {
    fn from(t: &pg::TableStats) -> Self {
        HotUpdates {
            schema: t.schema.clone(),
            table: t.table.clone(),
            total_updates: t.updates,
            hot_updates: t.hot_updates,
            hot_update_percentage: percent(t.hot_updates, t.updates),
        }
    }
}

impl From<&pg::ActiveQuery> for ActiveQuery {
    fn from(q: &pg::ActiveQuery) -> Self {
        ActiveQuery {
            pid: q.pid,
            state: q.state.clone(),
            duration: round2(q.seconds),
            wait_event_type: q.wait_event_type.clone(),
            wait_event: q.wait_event.clone(),
            backend_type: q.backend_type.clone(),
            query: Null,
            query_kind: q.kind.clone(),
        }
    }
}

impl From<&pg::TableStats> for AutovacuumDue {
    fn from(t: &pg::TableStats) -> Self {
        AutovacuumDue {
            schema: t.schema.clone(),
            table: t.table.clone(),
            dead_tuples: t.dead_tuples,
            vacuum_threshold: t.vacuum_threshold,
            autovacuum_enabled: t.autovacuum_enabled,
            autovacuum_count: t.autovacuum_count,
            autoanalyze_count: t.autoanalyze_count,
            last_autovacuum: at(t.last_autovacuum),
            last_autoanalyze: at(t.last_autoanalyze),
        }
    }
}

impl From<&pg::Buffered> for BufferUse {
    fn from(b: &pg::Buffered) -> Self {
        BufferUse {
            object: b.relation.clone(),
            buffers: b.buffers,
            buffered_bytes: b.bytes,
            buffered_size: b.size.clone(),
            percent_of_cache: round2(b.percent_of_cache),
        }
    }
}

impl From<&pg::TableSize> for TableSize {
    fn from(t: &pg::TableSize) -> Self {
        TableSize {
            schema: t.schema.clone(),
            table: t.table.clone(),
            total_size: t.total.clone(),
            table_size: t.table_size.clone(),
            index_size: t.index_size.clone(),
            total_bytes: t.total_bytes,
            table_bytes: t.table_bytes,
            index_bytes: t.index_bytes,
            rows: t.live_tuples,
        }
    }
}

/// `GET /api/v1/status/buffers`.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct BufferAnswer {
    /// The caller's tenant's pushes held in the push buffer; null when the database did not
    /// answer the count.
    pending: Option<i64>,
    /// Always 0: Regent has no file buffer to fail.
    #[schemars(extend("const" = 0))]
    failed: u8,
    db_healthy: bool,
    /// Always 0.
    #[schemars(extend("const" = 0))]
    worker: u8,
}

/// `GET /api/v1/status/buffers`: Regent has no file buffer; `pending` is the tenant's pushes
/// held in the push buffer (maintenance), `null` when the database did not answer the count.
async fn buffers(AxState(s): State, Extension(who): Extension<Principal>) -> Answer<BufferAnswer> {
    let b = s.service.fleet().buffers(&who.tenant).await;
    Answer(BufferAnswer {
        pending: b.pending,
        failed: 0,
        db_healthy: b.db_healthy,
        worker: 0,
    })
}
