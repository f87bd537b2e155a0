//! The tenant-wide inspection figures: the overview, the namespace and task roll-ups and the
//! partition listing (`GET /api/v1/resources/*`). Watermark arithmetic over partitions and
//! cursors, as the queue listing counts: the log itself is read only for the age of each
//! group's first unread message (one index probe per lagging cursor).

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use tokio_postgres::Row;
use uuid::Uuid;

use crate::series::Filter;
use crate::StoreError;

/// Per partition of the tenant's queues: its counts, as the queue detail counts them
/// (pending after the furthest-behind cursor, completed up to the furthest-ahead).
pub(crate) const PER_PARTITION: &str = "
    SELECT p.id, q.name AS queue, q.namespace, q.task, p.name, p.created_at, p.last_push_at,
           p.next_offset - p.first_offset AS total,
           p.next_offset - 1 - coalesce(min(c.committed), p.first_offset - 1) AS pending,
           coalesce(max(c.lease_end - c.committed)
                    FILTER (WHERE c.lease_id IS NOT NULL AND c.lease_expires_at > now()), 0)
             AS processing,
           greatest(coalesce(max(c.committed), p.first_offset - 1) + 1 - p.first_offset, 0)
             AS completed,
           (CASE WHEN bool_or(c.retry_count > 0) THEN 1 ELSE 0 END)::bigint AS failed
      FROM queues q
      JOIN partitions p ON p.queue_id = q.id
      LEFT JOIN cursors c ON c.partition_id = p.id
     WHERE q.tenant = $1";

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
}

/// The filter's conditions on `q`, the queues, with parameters $2 to $4.
const FILTER: &str = "($2::text IS NULL OR q.name = $2) AND ($3::text IS NULL OR q.namespace = $3)
                      AND ($4::text IS NULL OR q.task = $4)";

/// The overview of the tenant's queues the filter lets through.
pub async fn overview(
    client: &Client,
    tenant: &str,
    f: &Filter<'_>,
) -> Result<Overview, StoreError> {
    let sql = format!(
        "WITH per AS ({PER_PARTITION} AND {FILTER} GROUP BY p.id, q.name, q.namespace, q.task),
              qs AS (SELECT q.id, q.namespace, q.task FROM queues q WHERE q.tenant = $1 AND {FILTER})
         SELECT (SELECT count(*) FROM qs) AS queues,
                (SELECT count(DISTINCT namespace) FROM qs WHERE namespace <> '') AS namespaces,
                (SELECT count(DISTINCT task) FROM qs WHERE task <> '') AS tasks,
                (SELECT count(*) FROM dead_letters d WHERE d.tenant = $1
                    AND d.queue_id IN (SELECT id FROM qs)) AS dead_letters,
                count(*) AS partitions, {SUMS}
           FROM per"
    );
    let st = client.prepare_cached(&sql).await?;
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
        [&tenant, &f.queue, &f.namespace, &f.task];
    let r = client.query_one(&st, &params).await?;
    let lag = lags(client, &params).await?;
    Ok(Overview {
        queues: r.get("queues"),
        partitions: r.get("partitions"),
        namespaces: r.get("namespaces"),
        tasks: r.get("tasks"),
        messages: Messages::from(&r),
        dead_letters: r.get("dead_letters"),
        time_lag: spread(&lag, "time"),
        offset_lag: spread(&lag, "offset"),
    })
}

/// The spread of the lags of the filtered queues' cursors.
async fn lags(
    client: &Client,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync); 4],
) -> Result<Row, StoreError> {
    let sql = format!(
        "WITH l AS (
               SELECT greatest(p.next_offset - 1 - c.committed, 0)::float8 AS offset_lag,
                      coalesce(extract(epoch FROM now() - o.created_at), 0)::float8 AS time_lag
                 FROM cursors c
                 JOIN partitions p ON p.id = c.partition_id
                 JOIN queues q ON q.id = c.queue_id
                 LEFT JOIN LATERAL (
                      SELECT g.created_at FROM segments g
                       WHERE g.partition_id = p.id AND g.end_offset > c.committed
                       ORDER BY g.end_offset LIMIT 1) o ON c.committed < p.next_offset - 1
                WHERE q.tenant = $1 AND {FILTER})
             SELECT avg(time_lag) AS time_avg,
                    percentile_cont(0.5) WITHIN GROUP (ORDER BY time_lag) AS time_median,
                    min(time_lag) AS time_min, max(time_lag) AS time_max,
                    avg(offset_lag) AS offset_avg,
                    percentile_cont(0.5) WITHIN GROUP (ORDER BY offset_lag) AS offset_median,
                    min(offset_lag) AS offset_min, max(offset_lag) AS offset_max
               FROM l"
    );
    let st = client.prepare_cached(&sql).await?;
    Ok(client.query_one(&st, params).await?)
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

/// Every namespace (or task) of the tenant's queues, by name; queues without one are not
/// listed.
pub async fn rollup(client: &Client, tenant: &str, by: Label) -> Result<Vec<Rollup>, StoreError> {
    let label = match by {
        Label::Namespace => "namespace",
        Label::Task => "task",
    };
    let sql = format!(
        "WITH per AS ({PER_PARTITION} GROUP BY p.id, q.name, q.namespace, q.task),
              named AS (SELECT {label} AS label, count(*) AS queues FROM queues
                         WHERE tenant = $1 AND {label} <> '' GROUP BY {label})
         SELECT n.label, n.queues, count(per.id) AS partitions, {SUMS}
           FROM named n LEFT JOIN per ON per.{label} = n.label
          GROUP BY n.label, n.queues
          ORDER BY n.label"
    );
    let st = client.prepare_cached(&sql).await?;
    Ok(client
        .query(&st, &[&tenant])
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
    let sql = format!(
        "WITH page AS (
           SELECT p.id FROM queues q JOIN partitions p ON p.queue_id = q.id
            WHERE q.tenant = $1 AND ($2::text IS NULL OR q.name = $2)
            ORDER BY q.name, p.name LIMIT $3 OFFSET $4)
         {PER_PARTITION} AND p.id IN (SELECT id FROM page)
          GROUP BY p.id, q.name, q.namespace, q.task
          ORDER BY q.name, p.name"
    );
    let st = client.prepare_cached(&sql).await?;
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
