//! Reading dead letters.

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use uuid::Uuid;

use super::frames;
use super::pop::{stored, StoredMessage};
use super::StoreError;

#[derive(Debug, Default)]
pub struct DlqFilter<'a> {
    pub queue: Option<&'a str>,
    pub group: Option<&'a str>,
    pub partition: Option<&'a str>,
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub limit: i64,
    pub offset: i64,
}

#[derive(Debug)]
pub struct DeadLetter {
    pub partition_id: Uuid,
    pub queue: String,
    pub partition: String,
    pub group: String,
    pub error: String,
    pub retry_count: i32,
    pub message: StoredMessage,
    pub failed_at: DateTime<Utc>,
}

const WHERE: &str = "FROM dead_letters d
       JOIN queues q ON q.id = d.queue_id
       JOIN partitions p ON p.id = d.partition_id
      WHERE d.tenant = $1
        AND ($2::text IS NULL OR q.name = $2)
        AND ($3::text IS NULL OR d.consumer_group = $3)
        AND ($4::text IS NULL OR p.name = $4)
        AND ($5::timestamptz IS NULL OR d.failed_at >= $5)
        AND ($6::timestamptz IS NULL OR d.failed_at <= $6)";

/// A page of dead letters, newest failure first, and the number of all that match.
pub async fn list(
    client: &Client,
    tenant: &str,
    f: &DlqFilter<'_>,
) -> Result<(Vec<DeadLetter>, i64), StoreError> {
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 6] =
        [&tenant, &f.queue, &f.group, &f.partition, &f.from, &f.to];
    let count_sql = format!("SELECT count(*) {WHERE}");
    let st = client.prepare_cached(&count_sql).await?;
    let total: i64 = client.query_one(&st, &params).await?.get(0);

    let sql = format!(
        "SELECT d.partition_id, q.name, p.name, d.consumer_group, d.error, d.retry_count,
                d.\"offset\", d.frame, d.created_at, d.failed_at
           {WHERE}
          ORDER BY d.failed_at DESC, d.id DESC
          LIMIT $7 OFFSET $8"
    );
    let st = client.prepare_cached(&sql).await?;
    let mut all = params.to_vec();
    all.push(&f.limit);
    all.push(&f.offset);
    let rows = client.query(&st, &all).await?;
    let letters = rows
        .into_iter()
        .map(|r| {
            let frame: &[u8] = r.get(7);
            let f = frames::iter(frame).next().ok_or(StoreError::Corrupt)??;
            Ok(DeadLetter {
                partition_id: r.get(0),
                queue: r.get(1),
                partition: r.get(2),
                group: r.get(3),
                error: r.get(4),
                retry_count: r.get(5),
                message: stored(r.get(6), f, r.get(8))?,
                failed_at: r.get(9),
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    Ok((letters, total))
}
