//! The tenant-wide inspection figures: the overview, the namespace and task roll-ups (read
//! from the stats snapshot, `crate::stats`) and the partition listing (a page of partitions
//! counted when asked: watermark arithmetic over partitions and cursors).

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use tokio_postgres::Row;
use uuid::Uuid;

use crate::series::Filter;
use crate::sql::overview as sql;
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

/// The overview of the tenant's queues the filter lets through, from the stats snapshot.
pub async fn overview(
    client: &Client,
    tenant: &str,
    f: &Filter<'_>,
) -> Result<Overview, StoreError> {
    let st = client.prepare_cached(sql::OVERVIEW).await?;
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
    let st = client.prepare_cached(sql::ROLLUP).await?;
    let by_task = matches!(by, Label::Task);
    Ok(client
        .query(&st, &[&tenant, &limit, &offset, &by_task])
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
    let st = client.prepare_cached(sql::PARTITIONS_COUNT).await?;
    let total: i64 = client.query_one(&st, &[&tenant, &queue]).await?.get("n");
    let st = client.prepare_cached(sql::PARTITIONS_PAGE).await?;
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
    let st = client.prepare_cached(sql::LEASES).await?;
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
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
        [&tenant, &f.queue, &f.namespace, &f.task];
    let st = client.prepare_cached(sql::DEAD_LETTERS).await?;
    let r = client.query_one(&st, &params).await?;
    let st = client.prepare_cached(sql::DEAD_LETTER_ERRORS).await?;
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
