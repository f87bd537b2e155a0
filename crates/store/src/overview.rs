//! The tenant-wide inspection figures: the overview, the namespace and task roll-ups (read
//! from the stats snapshot, `crate::stats`) and the partition listing (a page of partitions
//! counted when asked: watermark arithmetic over partitions and cursors).

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use tokio_postgres::Row;
use uuid::Uuid;

use crate::series::Filter;
use crate::sql::overview::PARTITIONS_PAGE;
use crate::StoreError;

/// Message counts summed over some partitions.
#[derive(Clone, Copy, Debug, Default)]
pub struct Messages {
    pub total: i64,
    pub pending: i64,
    pub processing: i64,
    pub completed: i64,
    pub failed: i64,
}

impl From<&Row> for Messages {
    fn from(r: &Row) -> Messages {
        Messages {
            total: r.get("total"),
            pending: r.get("pending"),
            processing: r.get("processing"),
            completed: r.get("completed"),
            failed: r.get("failed"),
        }
    }
}

const SUMS: &str = "coalesce(sum(total), 0)::bigint AS total,
                    coalesce(sum(pending), 0)::bigint AS pending,
                    coalesce(sum(processing), 0)::bigint AS processing,
                    coalesce(sum(completed), 0)::bigint AS completed,
                    coalesce(sum(failed), 0)::bigint AS failed";

/// avg, median, min and max of one lag over the tenant's cursors.
#[derive(Clone, Copy, Debug, Default)]
pub struct Spread {
    pub avg: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

fn spread(r: &Row, prefix: &str) -> Spread {
    let f = |k: &str| -> f64 {
        r.get::<_, Option<f64>>(format!("{prefix}_{k}").as_str())
            .unwrap_or(0.0)
    };
    Spread {
        avg: f("avg"),
        median: f("median"),
        min: f("min"),
        max: f("max"),
    }
}

#[derive(Clone, Debug, Default)]
pub struct Overview {
    pub queues: i64,
    pub partitions: i64,
    pub namespaces: i64,
    pub tasks: i64,
    pub messages: Messages,
    pub dead_letters: i64,
    /// Seconds since each cursor's first unread message was appended (0 when caught up).
    pub time_lag: Spread,
    /// Messages after each cursor.
    pub offset_lag: Spread,
    /// Seconds since the oldest of the counted queues' stats rows was written; `None` when
    /// no round has counted them yet.
    pub stats_age: Option<f64>,
}

/// The filter's conditions on `q`, the queues, with parameters $2 to $4.
const FILTER: &str = "($2::text IS NULL OR q.name = $2) AND ($3::text IS NULL OR q.namespace = $3)
                      AND ($4::text IS NULL OR q.task = $4)";

/// The tenant's queues the filter lets through, with their rows of the stats snapshot
/// (`stats`; NULL columns for a queue no round has counted yet).
const COUNTED: &str = "counted AS (
        SELECT q.namespace, q.task, s.partitions, s.total, s.pending, s.processing,
               s.completed, s.failed, s.dead_letters, s.cursors, s.refreshed_at,
               s.time_lag_avg, s.time_lag_median, s.time_lag_min, s.time_lag_max,
               s.offset_lag_avg, s.offset_lag_median, s.offset_lag_min, s.offset_lag_max
          FROM queues q LEFT JOIN queue_stats s ON s.queue_id = q.id
         WHERE q.tenant = $1 AND ";

/// One lag spread over every counted cursor, from the queues' spreads: the average weighted
/// by cursors, the least minimum, the greatest maximum, and for the median the
/// cursor-weighted median of the queues' medians (exact for one queue).
fn spread_sql(lag: &str) -> String {
    format!(
        "coalesce(sum({lag}_avg * cursors) / nullif(sum(cursors), 0), 0) AS {lag}_avg,
         coalesce(min({lag}_min) FILTER (WHERE cursors > 0), 0) AS {lag}_min,
         coalesce(max({lag}_max) FILTER (WHERE cursors > 0), 0) AS {lag}_max,
         coalesce((SELECT m FROM (
                     SELECT {lag}_median AS m,
                            sum(cursors) OVER (ORDER BY {lag}_median ROWS UNBOUNDED PRECEDING) AS run,
                            sum(cursors) OVER () AS n
                       FROM counted WHERE cursors > 0) w
                    WHERE 2 * run >= n ORDER BY m LIMIT 1), 0) AS {lag}_median"
    )
}

/// The overview of the tenant's queues the filter lets through, from the stats snapshot.
pub async fn overview(
    client: &Client,
    tenant: &str,
    f: &Filter<'_>,
) -> Result<Overview, StoreError> {
    let sql = format!(
        "WITH {COUNTED} {FILTER})
         SELECT count(*) AS queues,
                count(DISTINCT namespace) FILTER (WHERE namespace <> '') AS namespaces,
                count(DISTINCT task) FILTER (WHERE task <> '') AS tasks,
                coalesce(sum(partitions), 0)::bigint AS partitions, {SUMS},
                coalesce(sum(dead_letters), 0)::bigint AS dead_letters,
                {}, {},
                extract(epoch FROM now() - min(refreshed_at))::float8 AS stats_age
           FROM counted",
        spread_sql("time_lag"),
        spread_sql("offset_lag")
    );
    let st = client.prepare_cached(&sql).await?;
    let r = client
        .query_one(&st, &[&tenant, &f.queue, &f.namespace, &f.task])
        .await?;
    Ok(Overview {
        queues: r.get("queues"),
        partitions: r.get("partitions"),
        namespaces: r.get("namespaces"),
        tasks: r.get("tasks"),
        messages: Messages::from(&r),
        dead_letters: r.get("dead_letters"),
        time_lag: spread(&r, "time_lag"),
        offset_lag: spread(&r, "offset_lag"),
        stats_age: r.get("stats_age"),
    })
}

/// Which label of a queue to roll up by.
#[derive(Clone, Copy, Debug)]
pub enum Label {
    Namespace,
    Task,
}

/// One namespace's (or task's) queues, partitions and messages.
#[derive(Clone, Debug)]
pub struct Rollup {
    pub name: String,
    pub queues: i64,
    pub partitions: i64,
    pub messages: Messages,
}

/// A page of the namespaces (or tasks) of the tenant's queues, by name, counted from the
/// stats snapshot; queues without one are not listed.
pub async fn rollup(
    client: &Client,
    tenant: &str,
    by: Label,
    limit: i64,
    offset: i64,
) -> Result<Vec<Rollup>, StoreError> {
    let label = match by {
        Label::Namespace => "namespace",
        Label::Task => "task",
    };
    let sql = format!(
        "WITH {COUNTED} q.{label} <> '')
         SELECT {label} AS label, count(*) AS queues,
                coalesce(sum(partitions), 0)::bigint AS partitions, {SUMS}
           FROM counted GROUP BY {label} ORDER BY {label} LIMIT $2 OFFSET $3"
    );
    let st = client.prepare_cached(&sql).await?;
    Ok(client
        .query(&st, &[&tenant, &limit, &offset])
        .await?
        .iter()
        .map(|r| Rollup {
            name: r.get("label"),
            queues: r.get("queues"),
            partitions: r.get("partitions"),
            messages: Messages::from(r),
        })
        .collect())
}

/// One partition of the listing.
#[derive(Clone, Debug)]
pub struct PartitionSummary {
    pub id: Uuid,
    pub name: String,
    pub queue: String,
    pub created_at: DateTime<Utc>,
    pub last_push_at: Option<DateTime<Utc>>,
    pub messages: Messages,
}

/// A page of the tenant's partitions (of one queue, if named), by queue then partition
/// name, and how many there are. The page is chosen before anything is counted, so a page
/// costs the same at 100 partitions or 100,000.
pub async fn partitions(
    client: &Client,
    tenant: &str,
    queue: Option<&str>,
    limit: i64,
    offset: i64,
) -> Result<(Vec<PartitionSummary>, i64), StoreError> {
    let st = client
        .prepare_cached(
            "SELECT count(*) AS n FROM queues q JOIN partitions p ON p.queue_id = q.id
              WHERE q.tenant = $1 AND ($2::text IS NULL OR q.name = $2)",
        )
        .await?;
    let total: i64 = client.query_one(&st, &[&tenant, &queue]).await?.get("n");
    let st = client.prepare_cached(PARTITIONS_PAGE).await?;
    let rows = client
        .query(&st, &[&tenant, &queue, &limit, &offset])
        .await?;
    let page = rows
        .iter()
        .map(|r| PartitionSummary {
            id: r.get("id"),
            name: r.get("name"),
            queue: r.get("queue"),
            created_at: r.get("created_at"),
            last_push_at: r.get("last_push_at"),
            messages: Messages::from(r),
        })
        .collect();
    Ok((page, total))
}

/// The live leases of the filtered queues.
#[derive(Clone, Copy, Debug, Default)]
pub struct Leases {
    pub active: i64,
    pub partitions: i64,
    /// Messages under them.
    pub messages: i64,
}

pub async fn leases(client: &Client, tenant: &str, f: &Filter<'_>) -> Result<Leases, StoreError> {
    let sql = format!(
        "SELECT count(DISTINCT c.lease_id) AS active, count(DISTINCT c.partition_id) AS parts,
                    coalesce(sum(c.lease_end - c.committed), 0)::bigint AS messages
               FROM cursors c JOIN queues q ON q.id = c.queue_id
              WHERE q.tenant = $1 AND {FILTER}
                AND c.lease_id IS NOT NULL AND c.lease_expires_at > now()"
    );
    let st = client.prepare_cached(&sql).await?;
    let r = client
        .query_one(&st, &[&tenant, &f.queue, &f.namespace, &f.task])
        .await?;
    Ok(Leases {
        active: r.get("active"),
        partitions: r.get("parts"),
        messages: r.get("messages"),
    })
}

/// The filtered queues' dead letters: how many, over how many partitions, the commonest
/// reasons (at most five).
#[derive(Clone, Debug, Default)]
pub struct DeadSummary {
    pub total: i64,
    pub partitions: i64,
    pub top_errors: Vec<(String, i64)>,
}

pub async fn dead_summary(
    client: &Client,
    tenant: &str,
    f: &Filter<'_>,
) -> Result<DeadSummary, StoreError> {
    let scope = format!(
        "FROM dead_letters d JOIN queues q ON q.id = d.queue_id WHERE d.tenant = $1 AND {FILTER}"
    );
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
        [&tenant, &f.queue, &f.namespace, &f.task];
    let sql = format!("SELECT count(*) AS total, count(DISTINCT d.partition_id) AS parts {scope}");
    let st = client.prepare_cached(&sql).await?;
    let r = client.query_one(&st, &params).await?;
    let sql = format!(
        "SELECT d.error, count(*) AS n {scope} GROUP BY d.error ORDER BY n DESC, d.error LIMIT 5"
    );
    let st = client.prepare_cached(&sql).await?;
    let top_errors = client
        .query(&st, &params)
        .await?
        .iter()
        .map(|r| (r.get("error"), r.get("n")))
        .collect();
    Ok(DeadSummary {
        total: r.get("total"),
        partitions: r.get("parts"),
        top_errors,
    })
}
