//! The per-minute series of each queue (`queue_minutes`): what brokers counted, added up.

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use uuid::Uuid;

use crate::{Conn, Layout, StoreError, Tx};

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
    let st = client
        .prepare_cached(
            "INSERT INTO queue_minutes AS m
                    (queue_id, minute, pushed, delivered, completed, failed, dead_lettered, expired,
                     lag_ms_sum, lag_ms_max)
             SELECT u.q, date_trunc('minute', now()), u.p, u.d, u.c, u.f, u.l, u.e, u.ls, u.lm
               FROM unnest($1::uuid[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[],
                           $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[])
                    AS u(q, p, d, c, f, l, e, ls, lm)
              WHERE EXISTS (SELECT 1 FROM queues WHERE id = u.q)
              ORDER BY u.q
             ON CONFLICT (queue_id, minute) DO UPDATE
                SET pushed = m.pushed + excluded.pushed,
                    delivered = m.delivered + excluded.delivered,
                    completed = m.completed + excluded.completed,
                    failed = m.failed + excluded.failed,
                    dead_lettered = m.dead_lettered + excluded.dead_lettered,
                    expired = m.expired + excluded.expired,
                    lag_ms_sum = m.lag_ms_sum + excluded.lag_ms_sum,
                    lag_ms_max = greatest(m.lag_ms_max, excluded.lag_ms_max)",
        )
        .await?;
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

/// The tenant's counts summed over its queues since `since`.
pub async fn since(
    client: &Client,
    tenant: &str,
    since: DateTime<Utc>,
) -> Result<Counts, StoreError> {
    let sql = format!(
        "SELECT {SUMS} FROM queue_minutes m JOIN queues q ON q.id = m.queue_id
          WHERE q.tenant = $1 AND m.minute >= date_trunc('minute', $2::timestamptz)"
    );
    let st = client.prepare_cached(&sql).await?;
    Ok(counts(&client.query_one(&st, &[&tenant, &since]).await?))
}

/// Deletes up to `limit` minutes older than `before`, in the caller's transaction.
pub async fn expire(tx: &Tx<'_>, before: DateTime<Utc>, limit: i64) -> Result<i64, StoreError> {
    expire_minutes(tx, "queue_minutes", "queue_id", before, limit).await
}

/// Deletes up to `limit` rows older than `before` of a per-minute table keyed by (`key`,
/// `minute`) with an index on `minute`: a bounded batch, so expiry never holds a long lock.
pub(crate) async fn expire_minutes(
    tx: &Tx<'_>,
    table: &'static str,
    key: &'static str,
    before: DateTime<Utc>,
    limit: i64,
) -> Result<i64, StoreError> {
    let sql = format!(
        "DELETE FROM {table} m
           USING (SELECT {key}, minute FROM {table} WHERE minute < $1 LIMIT $2) d
          WHERE m.{key} = d.{key} AND m.minute = d.minute"
    );
    let st = tx.prepare_cached(&sql).await?;
    Ok(tx.execute(&st, &[&before, &limit]).await? as i64)
}

/// Which of the tenant's queues a series read covers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Filter<'a> {
    pub queue: Option<&'a str>,
    pub namespace: Option<&'a str>,
    pub task: Option<&'a str>,
}

const FILTERED: &str = "q.tenant = $1 AND ($2::text IS NULL OR q.name = $2)
       AND ($3::text IS NULL OR q.namespace = $3) AND ($4::text IS NULL OR q.task = $4)";

const SUMS: &str = "coalesce(sum(m.pushed), 0)::bigint AS pushed,
                    coalesce(sum(m.delivered), 0)::bigint AS delivered,
                    coalesce(sum(m.completed), 0)::bigint AS completed,
                    coalesce(sum(m.failed), 0)::bigint AS failed,
                    coalesce(sum(m.dead_lettered), 0)::bigint AS dead_lettered,
                    coalesce(sum(m.expired), 0)::bigint AS expired,
                    coalesce(sum(m.lag_ms_sum), 0)::bigint AS lag_ms_sum,
                    coalesce(max(m.lag_ms_max), 0)::bigint AS lag_ms_max";

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
    let queue = if by_queue { "q.name" } else { "NULL::text" };
    let sql = format!(
        "SELECT date_bin(make_interval(mins => $7), m.minute, $5) AS bucket, {queue} AS queue,
                {SUMS}
           FROM queue_minutes m JOIN queues q ON q.id = m.queue_id
          WHERE {FILTERED} AND m.minute >= $5 AND m.minute < $6
            AND (NOT $8 OR m.queue_id IN (
                   SELECT m.queue_id FROM queue_minutes m JOIN queues q ON q.id = m.queue_id
                    WHERE {FILTERED} AND m.minute >= $5 AND m.minute < $6
                    GROUP BY m.queue_id
                    ORDER BY sum(m.pushed + m.delivered + m.completed + m.failed
                                 + m.dead_lettered + m.expired) DESC, m.queue_id
                    LIMIT $9))
          GROUP BY 1, 2 ORDER BY 1, 2"
    );
    let st = client.prepare_cached(&sql).await?;
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
    let (partitions, counted) = match client.layout() {
        Layout::Single => (
            "(SELECT count(*) FROM partitions p WHERE p.queue_id = q.id)".to_string(),
            String::new(),
        ),
        // Citus plans no correlated subquery beside a reference table: the filtered queues'
        // partitions are counted first, every shard at once.
        Layout::Citus => (
            "max(pc.n)".to_string(),
            format!(
                "LEFT JOIN (SELECT p.queue_id, count(*) AS n FROM partitions p
                             WHERE p.queue_id IN (SELECT q.id FROM queues q WHERE {FILTERED})
                             GROUP BY p.queue_id) pc ON pc.queue_id = q.id"
            ),
        ),
    };
    let sql = format!(
        "SELECT q.id, q.name, q.namespace, q.task,
                coalesce({partitions}, 0) AS partitions, {SUMS}
           FROM queues q
           LEFT JOIN queue_minutes m ON m.queue_id = q.id AND m.minute >= $5 AND m.minute < $6
           {counted}
          WHERE {FILTERED}
          GROUP BY q.id, q.name, q.namespace, q.task ORDER BY q.name LIMIT $7"
    );
    let st = client.prepare_cached(&sql).await?;
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
