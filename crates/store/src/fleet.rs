//! The fleet's samples (`broker_samples`): what each broker measured of itself every few
//! seconds, written by that broker and read back by any, bucketed in SQL (`date_bin`) for the
//! system and worker metrics; with each sample, the pops it had parked per queue
//! (`broker_parked`), read back for one tenant only; and the tenant's per-queue activity of a
//! window, from the queue series, for the worker metrics' `queues`.

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use serde_json::{Map, Value};
use tokio_postgres::Row;
use uuid::Uuid;

use crate::sql::fleet as sql;
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
    let st = client.prepare_cached(sql::RECORD).await?;
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
    let st = client.prepare_cached(sql::EXPIRE).await?;
    Ok(client.execute(&st, &[&before, &limit]).await? as i64)
}

/// The same for the samples' parked counts: up to `limit` rows taken before `before`, oldest
/// first, skipping rows another broker is deleting.
pub async fn expire_parked(
    client: &Client,
    before: DateTime<Utc>,
    limit: i64,
) -> Result<i64, StoreError> {
    let st = client.prepare_cached(sql::EXPIRE_PARKED).await?;
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

/// avg, min, max and latest value of an integer gauge over a bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Gauge {
    pub avg: f64,
    pub min: i64,
    pub max: i64,
    pub last: i64,
}

/// A row's gauges, as `system` answers them: one array per aggregate, ordered by name.
struct Gauges {
    names: Vec<String>,
    avg: Vec<f64>,
    min: Vec<i64>,
    max: Vec<i64>,
    last: Vec<i64>,
}

impl Gauges {
    fn read(r: &Row) -> Gauges {
        Gauges {
            names: r.get("gauge_names"),
            avg: r.get("gauge_avg"),
            min: r.get("gauge_min"),
            max: r.get("gauge_max"),
            last: r.get("gauge_last"),
        }
    }

    /// The gauge `name` (zeros if the statement named no such gauge).
    fn get(&self, name: &str) -> Gauge {
        let Some(i) = self.names.iter().position(|n| n == name) else {
            return Gauge::default();
        };
        Gauge {
            avg: self.avg[i],
            min: self.min[i],
            max: self.max[i],
            last: self.last[i],
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
    let st = client.prepare_cached(sql::SYSTEM).await?;
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
            let gauges = Gauges::read(r);
            SystemPoint {
                broker_id: r.get("broker_id"),
                hostname: r.get("hostname"),
                port: r.get("port"),
                bucket: r.get("bucket"),
                samples: r.get("samples"),
                covered_ms: r.get("covered_ms"),
                cpu_user: Cpu::read(r, "user"),
                cpu_system: Cpu::read(r, "system"),
                rss_bytes: gauges.get("rss_bytes"),
                virtual_bytes: gauges.get("virtual_bytes"),
                pool_size: gauges.get("pool_size"),
                pool_open: gauges.get("pool_open"),
                pool_active: gauges.get("pool_active"),
                pool_idle: gauges.get("pool_idle"),
                pool_waiting: gauges.get("pool_waiting"),
                pending_handovers: gauges.get("pending_handovers"),
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
    let st = client.prepare_cached(sql::FLEET).await?;
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
    let st = client.prepare_cached(sql::RECENT).await?;
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
    let st = client.prepare_cached(sql::QUEUE_ACTIVITY).await?;
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
    let st = client.prepare_cached(sql::PARKED).await?;
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use crate::sql::{fleet, folded};

    /// The gauges `system` reads back (a [`super::Gauge`] each in [`super::SystemPoint`]).
    const GAUGES: [&str; 8] = [
        "rss_bytes",
        "virtual_bytes",
        "pool_size",
        "pool_open",
        "pool_active",
        "pool_idle",
        "pool_waiting",
        "pending_handovers",
    ];
    /// The CPU kinds it reads back ([`super::Cpu`]).
    const CPU: [&str; 2] = ["user", "system"];
    /// The operations whose counters `system`, `fleet` and `recent` read back ([`super::ops`]).
    const OPS: [&str; 4] = ["push", "pop", "ack", "transaction"];

    /// How `system` names a gauge in its `gauges` VALUES list.
    fn gauge_value(col: &str) -> String {
        format!("('{col}', s.{col}::bigint)")
    }

    /// ... for a CPU kind: the average over the time covered, the extremes and latest of single
    /// samples, and the CPU time.
    fn cpu_columns(kind: &str) -> String {
        let p = format!("cpu_{kind}_percent");
        format!(
            "sum(cpu_{kind}_us)::float8 / greatest(sum(interval_ms), 1) / 10 AS {p}_avg,
             min({p}) AS {p}_min, max({p}) AS {p}_max,
             (array_agg({p} ORDER BY sampled_at DESC))[1] AS {p}_last,
             sum(cpu_{kind}_us)::bigint AS cpu_{kind}_us"
        )
    }

    /// Every counter, each summed under its own name.
    fn counters() -> Vec<String> {
        OPS.iter()
            .flat_map(|op| [format!("{op}_requests"), format!("{op}_messages")])
            .collect()
    }

    fn counter_totals() -> String {
        counters()
            .iter()
            .map(|col| format!("sum({col})::bigint AS {col}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The names a statement gives (`AS name`).
    fn aliases(text: &str) -> BTreeSet<String> {
        folded(text)
            .split(" AS ")
            .skip(1)
            .map(|rest| {
                rest.chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect()
            })
            .collect()
    }

    /// The stems of the names ending in `suffix`.
    fn stems(names: &BTreeSet<String>, suffix: &str) -> BTreeSet<String> {
        names
            .iter()
            .filter_map(|n| n.strip_suffix(suffix))
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn system_states_each_gauge_and_cpu_kind_it_reads_and_no_other() {
        let text = folded(fleet::SYSTEM);
        for col in GAUGES {
            assert!(text.contains(&folded(&gauge_value(col))), "{col}");
        }
        for kind in CPU {
            assert!(text.contains(&folded(&cpu_columns(kind))), "{kind}");
        }
        // The VALUES list names each gauge once, and no other.
        let named: BTreeSet<String> = text
            .split("('")
            .skip(1)
            .filter_map(|rest| rest.split_once("', s.").map(|(n, _)| n.to_string()))
            .collect();
        assert_eq!(named, GAUGES.iter().map(|g| g.to_string()).collect());
        let names = aliases(fleet::SYSTEM);
        // The gauges' arrays are named gauge_avg, ..., the runtime maps' map_max and map_last.
        let with = |stems: &[&str]| -> BTreeSet<String> {
            CPU.iter()
                .map(|k| format!("cpu_{k}_percent"))
                .chain(stems.iter().map(|s| s.to_string()))
                .collect()
        };
        assert_eq!(stems(&names, "_avg"), with(&["gauge"]));
        assert_eq!(stems(&names, "_min"), with(&["gauge"]));
        assert_eq!(stems(&names, "_max"), with(&["gauge", "map"]));
        assert_eq!(stems(&names, "_last"), with(&["gauge", "map"]));
        assert_eq!(
            stems(&names, "_us"),
            CPU.iter().map(|k| format!("cpu_{k}")).collect()
        );
    }

    #[test]
    fn the_bucketed_reads_sum_each_counter_they_read_and_no_other() {
        let expected: BTreeSet<String> = counters().into_iter().collect();
        for (name, text) in [
            ("system", fleet::SYSTEM),
            ("fleet", fleet::FLEET),
            ("recent", fleet::RECENT),
        ] {
            assert!(
                folded(text).contains(&folded(&counter_totals())),
                "{name} sums the counters otherwise"
            );
            let names = aliases(text);
            let counted: BTreeSet<String> = names
                .iter()
                .filter(|n| n.ends_with("_requests") || n.ends_with("_messages"))
                .cloned()
                .collect();
            assert_eq!(counted, expected, "{name}");
        }
    }
}
