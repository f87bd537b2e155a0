//! The per-minute series of each queue (`queue_minutes`): what brokers counted, added up.

use chrono::{DateTime, DurationRound, Utc};
use deadpool_postgres::Client;
use uuid::Uuid;

use crate::sql::series as sql;
use crate::{Conn, StoreError, Tx};

/// What happened to one queue's messages over some span.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub pushed: i64,
    pub delivered: i64,
    pub completed: i64,
    pub failed: i64,
    pub dead_lettered: i64,
    pub expired: i64,
    pub lag_ms_sum: i64,
    pub lag_ms_max: i64,
}

impl Counts {
    /// Sums two spans' counts (the longest wait is the longer of the two).
    pub fn add(&mut self, o: &Counts) {
        self.pushed += o.pushed;
        self.delivered += o.delivered;
        self.completed += o.completed;
        self.failed += o.failed;
        self.dead_lettered += o.dead_lettered;
        self.expired += o.expired;
        self.lag_ms_sum += o.lag_ms_sum;
        self.lag_ms_max = self.lag_ms_max.max(o.lag_ms_max);
    }
}

/// Adds each queue's counts to its row of the current minute. Queues deleted meanwhile are
/// skipped; rows are written in queue order, so brokers flushing at once cannot deadlock.
pub async fn add(client: &Client, counts: &[(Uuid, Counts)]) -> Result<(), StoreError> {
    let col = |f: fn(&Counts) -> i64| counts.iter().map(|(_, c)| f(c)).collect::<Vec<i64>>();
    let queues: Vec<Uuid> = counts.iter().map(|(q, _)| *q).collect();
    let st = client.prepare_cached(sql::ADD).await?;
    client
        .execute(
            &st,
            &[
                &queues,
                &col(|c| c.pushed),
                &col(|c| c.delivered),
                &col(|c| c.completed),
                &col(|c| c.failed),
                &col(|c| c.dead_lettered),
                &col(|c| c.expired),
                &col(|c| c.lag_ms_sum),
                &col(|c| c.lag_ms_max),
            ],
        )
        .await?;
    Ok(())
}

/// The tenant's counts summed over its queues since the minute of `since`: the one bucket
/// from that minute to the next (zeros when nothing was counted).
pub async fn since(
    client: &Client,
    tenant: &str,
    since: DateTime<Utc>,
) -> Result<Counts, StoreError> {
    let from = since
        .duration_trunc(chrono::Duration::minutes(1))
        .unwrap_or(since);
    // Minutes are counted up to now; a day on covers a clock that runs ahead of this one.
    let to = Utc::now().max(from) + chrono::Duration::days(1);
    let span = Span {
        filter: Filter::default(),
        from,
        to,
        bucket_minutes: i32::try_from((to - from).num_minutes() + 1).unwrap_or(i32::MAX),
    };
    let mut total = Counts::default();
    for (_, _, c) in buckets(client, tenant, &span, false).await? {
        total.add(&c);
    }
    Ok(total)
}

/// Deletes up to `limit` minutes older than `before`, in the caller's transaction.
pub async fn expire(tx: &Tx<'_>, before: DateTime<Utc>, limit: i64) -> Result<i64, StoreError> {
    expire_minutes(tx, sql::EXPIRE, before, limit).await
}

/// Runs `statement`, the bounded expiry of a per-minute table (`series::expire`,
/// `depth_history::expire_tenants`, ...: $1 before, $2 limit), in the caller's transaction.
pub(crate) async fn expire_minutes(
    tx: &Tx<'_>,
    statement: &'static str,
    before: DateTime<Utc>,
    limit: i64,
) -> Result<i64, StoreError> {
    let st = tx.prepare_cached(statement).await?;
    Ok(tx.execute(&st, &[&before, &limit]).await? as i64)
}

/// Which of the tenant's queues a series read covers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Filter<'a> {
    pub queue: Option<&'a str>,
    pub namespace: Option<&'a str>,
    pub task: Option<&'a str>,
}

fn counts(r: &tokio_postgres::Row) -> Counts {
    Counts {
        pushed: r.get("pushed"),
        delivered: r.get("delivered"),
        completed: r.get("completed"),
        failed: r.get("failed"),
        dead_lettered: r.get("dead_lettered"),
        expired: r.get("expired"),
        lag_ms_sum: r.get("lag_ms_sum"),
        lag_ms_max: r.get("lag_ms_max"),
    }
}

/// A series read: the filtered queues, the window [from, to) and its bucket width.
#[derive(Clone, Copy, Debug)]
pub struct Span<'a> {
    pub filter: Filter<'a>,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub bucket_minutes: i32,
}

/// Queues a per-queue series shows at most: the window's busiest.
pub const SERIES_QUEUES: i64 = 100;

/// The counts per bucket (and per queue with `by_queue`, for the [`SERIES_QUEUES`] queues
/// that counted most in the window; the name is then `Some`), oldest first, then by queue
/// name. Buckets with nothing counted are absent.
pub async fn buckets(
    client: &Client,
    tenant: &str,
    span: &Span<'_>,
    by_queue: bool,
) -> Result<Vec<(DateTime<Utc>, Option<String>, Counts)>, StoreError> {
    let st = client.prepare_cached(sql::BUCKETS).await?;
    let f = &span.filter;
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 9] = [
        &tenant,
        &f.queue,
        &f.namespace,
        &f.task,
        &span.from,
        &span.to,
        &span.bucket_minutes,
        &by_queue,
        &SERIES_QUEUES,
    ];
    let rows = client.query(&st, &params).await?;
    Ok(rows
        .iter()
        .map(|r| (r.get("bucket"), r.get("queue"), counts(r)))
        .collect())
}

/// Queues the status page lists at most (by name).
pub const STATUS_QUEUES: i64 = 1000;

/// Each filtered queue's counts over [from, to), with its labels, by name (the first
/// [`STATUS_QUEUES`]); queues with nothing counted included (zeros).
pub async fn per_queue(
    client: &Conn,
    tenant: &str,
    f: &Filter<'_>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<QueueCounts>, StoreError> {
    let st = client.prepare_cached(sql::PER_QUEUE).await?;
    let rows = client
        .query(
            &st,
            &[
                &tenant,
                &f.queue,
                &f.namespace,
                &f.task,
                &from,
                &to,
                &STATUS_QUEUES,
            ],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| QueueCounts {
            id: r.get("id"),
            name: r.get("name"),
            namespace: r.get("namespace"),
            task: r.get("task"),
            partitions: r.get("partitions"),
            counts: counts(r),
        })
        .collect())
}

/// One queue's counts over a window.
#[derive(Clone, Debug)]
pub struct QueueCounts {
    pub id: Uuid,
    pub name: String,
    pub namespace: String,
    pub task: String,
    pub partitions: i64,
    pub counts: Counts,
}
