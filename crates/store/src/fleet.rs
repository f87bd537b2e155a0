//! The fleet's samples (`broker_samples`): what each broker measured of itself every few
//! seconds, written by that broker and read back by any, bucketed in SQL (`date_bin`) for the
//! system and worker metrics; with each sample, the pops it had parked per queue
//! (`broker_parked`), read back for one tenant only; and the tenant's per-queue activity of a
//! window, from the queue series, for the worker metrics' `queues`.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use serde_json::{Map, Value};
use tokio_postgres::Row;
use uuid::Uuid;

use crate::StoreError;

/// Requests or messages per operation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ops {
    pub push: i64,
    pub pop: i64,
    pub ack: i64,
    pub transaction: i64,
}

/// One broker's measure of itself. Counters are what happened over `interval_ms`.
pub struct Sample<'a> {
    pub broker_id: Uuid,
    pub hostname: &'a str,
    pub port: i32,
    pub interval_ms: i64,
    pub cpu_user_us: i64,
    pub cpu_system_us: i64,
    pub rss_bytes: i64,
    pub virtual_bytes: i64,
    pub pool_size: i32,
    pub pool_open: i32,
    pub pool_idle: i32,
    pub pool_waiting: i32,
    pub requests: Ops,
    pub messages: Ops,
    pub pending_handovers: i32,
    /// Entries in each in-memory map, by name.
    pub runtime: &'a [(&'static str, usize)],
    /// Pops parked per (tenant, queue) at the sample (the caller bounds how many).
    pub parked: &'a [Parked<'a>],
}

/// One queue's parked pops in a sample.
pub struct Parked<'a> {
    pub tenant: &'a str,
    pub queue: &'a str,
    pub parked: i32,
}

/// Writes one sample, stamped with the database's clock (the one every broker shares).
pub async fn record(client: &Client, s: &Sample<'_>) -> Result<(), StoreError> {
    let runtime: Map<String, Value> = s
        .runtime
        .iter()
        .map(|(name, n)| (name.to_string(), Value::from(*n as u64)))
        .collect();
    let runtime = Value::Object(runtime);
    // The parked counts go in with the sample, in one statement, under its instant.
    let st = client
        .prepare_cached(
            "WITH s AS (
                INSERT INTO broker_samples
                    (broker_id, sampled_at, hostname, port, interval_ms, cpu_user_us,
                     cpu_system_us, rss_bytes, virtual_bytes, pool_size, pool_open, pool_idle,
                     pool_waiting, push_requests, push_messages, pop_requests, pop_messages,
                     ack_requests, ack_messages, transaction_requests, transaction_messages,
                     pending_handovers, runtime_entries)
                VALUES ($1, now(), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
                        $16, $17, $18, $19, $20, $21, $22)
                RETURNING broker_id, sampled_at)
             INSERT INTO broker_parked (tenant, sampled_at, broker_id, queue, parked)
             SELECT p.tenant, s.sampled_at, s.broker_id, p.queue, p.parked
               FROM s, unnest($23::text[], $24::text[], $25::int4[]) AS p(tenant, queue, parked)",
        )
        .await?;
    let tenants: Vec<&str> = s.parked.iter().map(|p| p.tenant).collect();
    let queues: Vec<&str> = s.parked.iter().map(|p| p.queue).collect();
    let parked: Vec<i32> = s.parked.iter().map(|p| p.parked).collect();
    let (q, m) = (&s.requests, &s.messages);
    client
        .execute(
            &st,
            &[
                &s.broker_id,
                &s.hostname,
                &s.port,
                &s.interval_ms,
                &s.cpu_user_us,
                &s.cpu_system_us,
                &s.rss_bytes,
                &s.virtual_bytes,
                &s.pool_size,
                &s.pool_open,
                &s.pool_idle,
                &s.pool_waiting,
                &q.push,
                &m.push,
                &q.pop,
                &m.pop,
                &q.ack,
                &m.ack,
                &q.transaction,
                &m.transaction,
                &s.pending_handovers,
                &runtime,
                &tenants,
                &queues,
                &parked,
            ],
        )
        .await?;
    Ok(())
}

/// Deletes up to `limit` samples, oldest first, taken before `before`; rows another broker is
/// deleting at the same moment are skipped, so brokers expiring together never wait on each
/// other.
pub async fn expire(client: &Client, before: DateTime<Utc>, limit: i64) -> Result<i64, StoreError> {
    let st = client
        .prepare_cached(
            "DELETE FROM broker_samples b
               USING (SELECT broker_id, sampled_at FROM broker_samples
                       WHERE sampled_at < $1
                       ORDER BY sampled_at
                       LIMIT $2
                       FOR UPDATE SKIP LOCKED) d
              WHERE b.broker_id = d.broker_id AND b.sampled_at = d.sampled_at",
        )
        .await?;
    Ok(client.execute(&st, &[&before, &limit]).await? as i64)
}

/// The same for the samples' parked counts: up to `limit` rows taken before `before`, oldest
/// first, skipping rows another broker is deleting.
pub async fn expire_parked(
    client: &Client,
    before: DateTime<Utc>,
    limit: i64,
) -> Result<i64, StoreError> {
    let st = client
        .prepare_cached(
            "DELETE FROM broker_parked b
               USING (SELECT tenant, sampled_at, broker_id, queue FROM broker_parked
                       WHERE sampled_at < $1
                       ORDER BY sampled_at
                       LIMIT $2
                       FOR UPDATE SKIP LOCKED) d
              WHERE (b.tenant, b.sampled_at, b.broker_id, b.queue)
                  = (d.tenant, d.sampled_at, d.broker_id, d.queue)",
        )
        .await?;
    Ok(client.execute(&st, &[&before, &limit]).await? as i64)
}

/// Which samples a query reads: taken in `[from, to]`, of one host and one broker when given.
pub struct Window<'a> {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    /// The width of a bucket.
    pub bucket_minutes: i32,
    pub hostname: Option<&'a str>,
    /// A broker id, as text (anything else matches nothing).
    pub broker: Option<&'a str>,
}

/// The samples of a window, each with the start of its bucket (buckets aligned on UTC
/// midnight of 2000-01-01, so a bucket's start is a multiple of its width), per-sample CPU
/// use as a percent of one core, and the pool's connections in use. Parameters: `$1` from,
/// `$2` to, `$3` bucket minutes, `$4` hostname, `$5` broker id.
const SAMPLES_IN_WINDOW: &str = "
    SELECT *,
           date_bin(make_interval(mins => $3), sampled_at,
                    TIMESTAMPTZ '2000-01-01 00:00:00+00') AS bucket,
           cpu_user_us::float8 / greatest(interval_ms, 1) / 10 AS cpu_user_percent,
           cpu_system_us::float8 / greatest(interval_ms, 1) / 10 AS cpu_system_percent,
           pool_open - pool_idle AS pool_active
      FROM broker_samples
     WHERE sampled_at >= $1 AND sampled_at <= $2
       AND ($4::text IS NULL OR hostname = $4)
       AND ($5::text IS NULL OR broker_id::text = $5)";

/// avg, min, max and latest value of one integer gauge over a group of samples, as
/// `<col>_avg`, `<col>_min`, `<col>_max`, `<col>_last`.
fn gauge_columns(col: &str) -> String {
    format!(
        "avg({col})::float8 AS {col}_avg, min({col})::bigint AS {col}_min,
         max({col})::bigint AS {col}_max,
         (array_agg({col} ORDER BY sampled_at DESC))[1]::bigint AS {col}_last"
    )
}

/// The same for CPU (`user` or `system`): the average is over the time the samples cover
/// (not a mean of the samples' percents), the extremes and latest are one sample's; and the
/// CPU time itself, `cpu_<kind>_us`.
fn cpu_columns(kind: &str) -> String {
    let p = format!("cpu_{kind}_percent");
    format!(
        "sum(cpu_{kind}_us)::float8 / greatest(sum(interval_ms), 1) / 10 AS {p}_avg,
         min({p}) AS {p}_min, max({p}) AS {p}_max,
         (array_agg({p} ORDER BY sampled_at DESC))[1] AS {p}_last,
         sum(cpu_{kind}_us)::bigint AS cpu_{kind}_us"
    )
}

/// Every counter summed over a group of samples, each under its own name.
fn counter_totals() -> String {
    ["push", "pop", "ack", "transaction"]
        .iter()
        .flat_map(|op| [format!("{op}_requests"), format!("{op}_messages")])
        .map(|col| format!("sum({col})::bigint AS {col}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// avg, min, max and latest value of an integer gauge over a bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Gauge {
    pub avg: f64,
    pub min: i64,
    pub max: i64,
    pub last: i64,
}

impl Gauge {
    fn read(r: &Row, col: &str) -> Gauge {
        Gauge {
            avg: r.get(format!("{col}_avg").as_str()),
            min: r.get(format!("{col}_min").as_str()),
            max: r.get(format!("{col}_max").as_str()),
            last: r.get(format!("{col}_last").as_str()),
        }
    }
}

/// CPU use over a bucket, in percent of one core: `avg` over the time the samples cover,
/// `min`/`max`/`last` of single samples; and the CPU time itself.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Cpu {
    pub avg: f64,
    pub min: f64,
    pub max: f64,
    pub last: f64,
    pub micros: i64,
}

impl Cpu {
    fn read(r: &Row, kind: &str) -> Cpu {
        Cpu {
            avg: r.get(format!("cpu_{kind}_percent_avg").as_str()),
            min: r.get(format!("cpu_{kind}_percent_min").as_str()),
            max: r.get(format!("cpu_{kind}_percent_max").as_str()),
            last: r.get(format!("cpu_{kind}_percent_last").as_str()),
            micros: r.get(format!("cpu_{kind}_us").as_str()),
        }
    }
}

fn ops(r: &Row, what: &str) -> Ops {
    Ops {
        push: r.get(format!("push_{what}").as_str()),
        pop: r.get(format!("pop_{what}").as_str()),
        ack: r.get(format!("ack_{what}").as_str()),
        transaction: r.get(format!("transaction_{what}").as_str()),
    }
}

/// One in-memory map over a bucket: its largest and its latest size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapSize {
    pub name: String,
    pub max: i64,
    pub last: i64,
}

/// One broker over one bucket.
#[derive(Clone, Debug)]
pub struct SystemPoint {
    pub broker_id: Uuid,
    pub hostname: String,
    pub port: i32,
    pub bucket: DateTime<Utc>,
    pub samples: i64,
    /// Milliseconds the bucket's counters cover.
    pub covered_ms: i64,
    pub cpu_user: Cpu,
    pub cpu_system: Cpu,
    pub rss_bytes: Gauge,
    pub virtual_bytes: Gauge,
    pub pool_size: Gauge,
    pub pool_open: Gauge,
    pub pool_active: Gauge,
    pub pool_idle: Gauge,
    pub pool_waiting: Gauge,
    pub pending_handovers: Gauge,
    pub requests: Ops,
    pub messages: Ops,
    /// By map name.
    pub runtime: Vec<MapSize>,
}

/// Every broker's buckets of the window, by (hostname, port, broker), oldest bucket first.
pub async fn system(client: &Client, w: &Window<'_>) -> Result<Vec<SystemPoint>, StoreError> {
    static SQL: LazyLock<String> = LazyLock::new(|| {
        let gauges = [
            "rss_bytes",
            "virtual_bytes",
            "pool_size",
            "pool_open",
            "pool_active",
            "pool_idle",
            "pool_waiting",
            "pending_handovers",
        ]
        .map(gauge_columns)
        .join(", ");
        format!(
            "WITH s AS ({SAMPLES_IN_WINDOW}),
             maps AS (
                SELECT broker_id, bucket,
                       array_agg(name ORDER BY name) AS map_names,
                       array_agg(largest ORDER BY name) AS map_max,
                       array_agg(latest ORDER BY name) AS map_last
                  FROM (SELECT s.broker_id, s.bucket, e.key AS name,
                               max(e.value::bigint) AS largest,
                               (array_agg(e.value::bigint ORDER BY s.sampled_at DESC))[1]
                                 AS latest
                          FROM s, jsonb_each_text(s.runtime_entries) e
                         GROUP BY s.broker_id, s.bucket, e.key) per_map
                 GROUP BY broker_id, bucket)
             SELECT s.broker_id, s.hostname, s.port, s.bucket,
                    count(*) AS samples, sum(s.interval_ms)::bigint AS covered_ms,
                    {user}, {system}, {gauges}, {totals},
                    m.map_names, m.map_max, m.map_last
               FROM s LEFT JOIN maps m ON m.broker_id = s.broker_id AND m.bucket = s.bucket
              GROUP BY s.broker_id, s.hostname, s.port, s.bucket,
                       m.map_names, m.map_max, m.map_last
              ORDER BY s.hostname, s.port, s.broker_id, s.bucket",
            user = cpu_columns("user"),
            system = cpu_columns("system"),
            totals = counter_totals(),
        )
    });
    let st = client.prepare_cached(&SQL).await?;
    let rows = client
        .query(
            &st,
            &[&w.from, &w.to, &w.bucket_minutes, &w.hostname, &w.broker],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| {
            let names: Vec<String> = r
                .get::<_, Option<Vec<String>>>("map_names")
                .unwrap_or_default();
            let max: Vec<i64> = r.get::<_, Option<Vec<i64>>>("map_max").unwrap_or_default();
            let last: Vec<i64> = r.get::<_, Option<Vec<i64>>>("map_last").unwrap_or_default();
            let runtime = names
                .into_iter()
                .zip(max.into_iter().zip(last))
                .map(|(name, (max, last))| MapSize { name, max, last })
                .collect();
            SystemPoint {
                broker_id: r.get("broker_id"),
                hostname: r.get("hostname"),
                port: r.get("port"),
                bucket: r.get("bucket"),
                samples: r.get("samples"),
                covered_ms: r.get("covered_ms"),
                cpu_user: Cpu::read(r, "user"),
                cpu_system: Cpu::read(r, "system"),
                rss_bytes: Gauge::read(r, "rss_bytes"),
                virtual_bytes: Gauge::read(r, "virtual_bytes"),
                pool_size: Gauge::read(r, "pool_size"),
                pool_open: Gauge::read(r, "pool_open"),
                pool_active: Gauge::read(r, "pool_active"),
                pool_idle: Gauge::read(r, "pool_idle"),
                pool_waiting: Gauge::read(r, "pool_waiting"),
                pending_handovers: Gauge::read(r, "pending_handovers"),
                requests: ops(r, "requests"),
                messages: ops(r, "messages"),
                runtime,
            }
        })
        .collect())
}

/// The whole fleet (of the window's host and broker) over one bucket.
#[derive(Clone, Debug)]
pub struct FleetPoint {
    pub bucket: DateTime<Utc>,
    /// Brokers that sampled in the bucket.
    pub brokers: i64,
    pub samples: i64,
    pub requests: Ops,
    pub messages: Ops,
    /// Open pool connections: each broker's average over the bucket, summed over brokers.
    pub db_connections: f64,
    /// Requests waiting for a pool connection: each broker's average, summed over brokers.
    pub avg_waiting: f64,
    /// The most requests any one broker's pool had waiting in one sample.
    pub max_waiting: i64,
    /// CPU use of the brokers over the bucket, in percent of one core, summed over brokers.
    pub cpu_percent: f64,
}

/// The fleet's buckets of the window, newest first.
pub async fn fleet(client: &Client, w: &Window<'_>) -> Result<Vec<FleetPoint>, StoreError> {
    static SQL: LazyLock<String> = LazyLock::new(|| {
        let totals = counter_totals();
        format!(
            "WITH s AS ({SAMPLES_IN_WINDOW}),
             per_broker AS (
                SELECT bucket, broker_id, count(*) AS samples, {totals},
                       avg(pool_open)::float8 AS pool_open,
                       avg(pool_waiting)::float8 AS avg_waiting,
                       max(pool_waiting) AS max_waiting,
                       sum(cpu_user_us + cpu_system_us)::float8
                         / greatest(sum(interval_ms), 1) / 10 AS cpu_percent
                  FROM s
                 GROUP BY bucket, broker_id)
             SELECT bucket, count(*) AS brokers, sum(samples)::bigint AS samples, {totals},
                    sum(pool_open)::float8 AS db_connections,
                    sum(avg_waiting)::float8 AS avg_waiting,
                    max(max_waiting)::bigint AS max_waiting,
                    sum(cpu_percent)::float8 AS cpu_percent
               FROM per_broker
              GROUP BY bucket
              ORDER BY bucket DESC"
        )
    });
    let st = client.prepare_cached(&SQL).await?;
    let rows = client
        .query(
            &st,
            &[&w.from, &w.to, &w.bucket_minutes, &w.hostname, &w.broker],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| FleetPoint {
            bucket: r.get("bucket"),
            brokers: r.get("brokers"),
            samples: r.get("samples"),
            requests: ops(r, "requests"),
            messages: ops(r, "messages"),
            db_connections: r.get("db_connections"),
            avg_waiting: r.get("avg_waiting"),
            max_waiting: r.get("max_waiting"),
            cpu_percent: r.get("cpu_percent"),
        })
        .collect())
}

/// One broker over a recent span.
#[derive(Clone, Debug)]
pub struct Recent {
    pub broker_id: Uuid,
    pub hostname: String,
    pub port: i32,
    pub last_seen: DateTime<Utc>,
    pub samples: i64,
    pub requests: Ops,
    pub messages: Ops,
    /// CPU use over the span, in percent of one core.
    pub cpu_percent: f64,
    /// The latest sample's figures.
    pub rss_bytes: i64,
    pub pool_open: i32,
    pub pool_waiting: i32,
    pub pending_handovers: i32,
}

/// Every broker that sampled since `since` (at most `limit`), by (hostname, port, broker).
pub async fn recent(
    client: &Client,
    since: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<Recent>, StoreError> {
    static SQL: LazyLock<String> = LazyLock::new(|| {
        format!(
            "SELECT broker_id, hostname, port, max(sampled_at) AS last_seen,
                    count(*) AS samples, {totals},
                    sum(cpu_user_us + cpu_system_us)::float8
                      / greatest(sum(interval_ms), 1) / 10 AS cpu_percent,
                    (array_agg(rss_bytes ORDER BY sampled_at DESC))[1] AS rss_bytes,
                    (array_agg(pool_open ORDER BY sampled_at DESC))[1] AS pool_open,
                    (array_agg(pool_waiting ORDER BY sampled_at DESC))[1] AS pool_waiting,
                    (array_agg(pending_handovers ORDER BY sampled_at DESC))[1]
                      AS pending_handovers
               FROM broker_samples
              WHERE sampled_at >= $1
              GROUP BY broker_id, hostname, port
              ORDER BY hostname, port, broker_id
              LIMIT $2",
            totals = counter_totals(),
        )
    });
    let st = client.prepare_cached(&SQL).await?;
    let rows = client.query(&st, &[&since, &limit]).await?;
    Ok(rows
        .iter()
        .map(|r| Recent {
            broker_id: r.get("broker_id"),
            hostname: r.get("hostname"),
            port: r.get("port"),
            last_seen: r.get("last_seen"),
            samples: r.get("samples"),
            requests: ops(r, "requests"),
            messages: ops(r, "messages"),
            cpu_percent: r.get("cpu_percent"),
            rss_bytes: r.get("rss_bytes"),
            pool_open: r.get("pool_open"),
            pool_waiting: r.get("pool_waiting"),
            pending_handovers: r.get("pending_handovers"),
        })
        .collect())
}

/// What one of the tenant's queues did over a window, from the queue series.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueActivity {
    pub queue: String,
    pub pushed: i64,
    pub delivered: i64,
    pub completed: i64,
    pub failed: i64,
    pub dead_lettered: i64,
}

/// The tenant's queues with activity in the minutes of `[from, to]`, most delivered first (at
/// most `limit`).
pub async fn queue_activity(
    client: &Client,
    tenant: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<QueueActivity>, StoreError> {
    let st = client
        .prepare_cached(
            "SELECT q.name,
                    sum(m.pushed)::bigint AS pushed, sum(m.delivered)::bigint AS delivered,
                    sum(m.completed)::bigint AS completed, sum(m.failed)::bigint AS failed,
                    sum(m.dead_lettered)::bigint AS dead_lettered
               FROM queue_minutes m JOIN queues q ON q.id = m.queue_id
              WHERE q.tenant = $1
                AND m.minute >= date_trunc('minute', $2::timestamptz) AND m.minute <= $3
              GROUP BY q.id, q.name
              ORDER BY sum(m.delivered) DESC, q.name
              LIMIT $4",
        )
        .await?;
    let rows = client.query(&st, &[&tenant, &from, &to, &limit]).await?;
    Ok(rows
        .iter()
        .map(|r| QueueActivity {
            queue: r.get("name"),
            pushed: r.get("pushed"),
            delivered: r.get("delivered"),
            completed: r.get("completed"),
            failed: r.get("failed"),
            dead_lettered: r.get("dead_lettered"),
        })
        .collect())
}

/// One queue of the tenant on one broker over one bucket: its parked pops, averaged over the
/// broker's samples of the bucket (a sample that does not name the queue had none parked),
/// and the most one sample counted.
#[derive(Clone, Debug, PartialEq)]
pub struct ParkedPoint {
    pub bucket: DateTime<Utc>,
    pub queue: String,
    pub broker_id: Uuid,
    pub hostname: String,
    pub port: i32,
    pub avg: f64,
    pub max: i64,
}

/// The tenant's parked pops per (bucket, queue, broker) of the window, of one queue when
/// given, ordered by bucket, queue, hostname, port and broker. Only the tenant's rows are
/// read; a broker's samples are counted only in buckets where it parked one of them.
pub async fn parked(
    client: &Client,
    tenant: &str,
    queue: Option<&str>,
    w: &Window<'_>,
) -> Result<Vec<ParkedPoint>, StoreError> {
    const BUCKET: &str = "date_bin(make_interval(mins => $3), sampled_at,
                                   TIMESTAMPTZ '2000-01-01 00:00:00+00')";
    static SQL: LazyLock<String> = LazyLock::new(|| {
        format!(
            "WITH p AS (
                SELECT broker_id, {BUCKET} AS bucket, queue,
                       sum(parked)::bigint AS total, max(parked)::bigint AS most
                  FROM broker_parked
                 WHERE tenant = $4 AND sampled_at >= $1 AND sampled_at <= $2
                   AND ($5::text IS NULL OR queue = $5)
                 GROUP BY broker_id, bucket, queue),
             n AS (
                SELECT broker_id, {BUCKET} AS bucket, count(*) AS samples,
                       max(hostname) AS hostname, max(port) AS port
                  FROM broker_samples
                 WHERE sampled_at >= $1 AND sampled_at <= $2
                   AND broker_id IN (SELECT broker_id FROM p)
                 GROUP BY broker_id, bucket)
             SELECT p.bucket, p.queue, p.broker_id, n.hostname, n.port,
                    p.total::float8 / greatest(n.samples, 1) AS avg, p.most
               FROM p JOIN n ON n.broker_id = p.broker_id AND n.bucket = p.bucket
              ORDER BY p.bucket, p.queue, n.hostname, n.port, p.broker_id"
        )
    });
    let st = client.prepare_cached(&SQL).await?;
    let rows = client
        .query(&st, &[&w.from, &w.to, &w.bucket_minutes, &tenant, &queue])
        .await?;
    Ok(rows
        .iter()
        .map(|r| ParkedPoint {
            bucket: r.get("bucket"),
            queue: r.get("queue"),
            broker_id: r.get("broker_id"),
            hostname: r.get("hostname"),
            port: r.get("port"),
            avg: r.get("avg"),
            max: r.get("most"),
        })
        .collect())
}
