//! Single messages on the log (spec §10): found by transaction id, listed newest first
//! across partitions, deleted by tombstone. The log has no per-message state, so what a
//! message's status is comes from its partition's cursors and dead letters, read here and
//! decided by `regent_rules::message_status`.

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use serde_json::Value;
use tokio_postgres::Row;
use uuid::Uuid;

use crate::message::StoredMessage;
use crate::sql::messages::{TOMBSTONE, TOMBSTONE_CITUS};
use crate::{frames, Conn, Layout, StoreError, Tx};

/// A tenant's partition with its queue.
#[derive(Clone, Debug)]
pub struct Place {
    pub partition_id: Uuid,
    pub partition: String,
    pub queue_id: Uuid,
    pub queue: String,
    pub namespace: String,
    pub task: String,
    pub options: Value,
    pub last_push_at: Option<DateTime<Utc>>,
}

impl From<&Row> for Place {
    fn from(r: &Row) -> Place {
        Place {
            partition_id: r.get("partition_id"),
            partition: r.get("partition"),
            queue_id: r.get("queue_id"),
            queue: r.get("queue"),
            namespace: r.get("namespace"),
            task: r.get("task"),
            options: r.get("options"),
            last_push_at: r.get("last_push_at"),
        }
    }
}

const PLACE: &str = "SELECT p.id AS partition_id, p.name AS partition, q.id AS queue_id,
                            q.name AS queue, q.namespace, q.task, q.options, p.last_push_at
                       FROM partitions p JOIN queues q ON q.id = p.queue_id";

/// The tenant's partition with this id.
pub async fn place(
    client: &Client,
    tenant: &str,
    partition: Uuid,
) -> Result<Option<Place>, StoreError> {
    let sql = format!("{PLACE} WHERE p.id = $1 AND q.tenant = $2");
    let st = client.prepare_cached(&sql).await?;
    Ok(client
        .query_opt(&st, &[&partition, &tenant])
        .await?
        .as_ref()
        .map(Place::from))
}

/// The offset the transaction index holds for `hash` (of this partition and a transaction
/// id), while it is inside the index's window.
pub async fn indexed_offset(
    client: &Conn,
    partition: Uuid,
    hash: Uuid,
) -> Result<Option<i64>, StoreError> {
    let st = client
        .prepare_cached(match client.layout() {
            Layout::Single => {
                "SELECT \"offset\" FROM tx_index WHERE hash = $1 AND $2::uuid IS NOT NULL"
            }
            Layout::Citus => {
                "SELECT \"offset\" FROM tx_index WHERE hash = $1 AND partition_id = $2"
            }
        })
        .await?;
    Ok(client
        .query_opt(&st, &[&hash, &partition])
        .await?
        .map(|r| r.get("offset")))
}

/// The message at `offset`, while the log holds it.
pub async fn at(
    client: &Client,
    partition: Uuid,
    offset: i64,
) -> Result<Option<StoredMessage>, StoreError> {
    let st = client
        .prepare_cached(
            "SELECT base_offset, created_at, frames FROM segments
              WHERE partition_id = $1 AND end_offset >= $2 ORDER BY end_offset LIMIT 1",
        )
        .await?;
    let Some(r) = client.query_opt(&st, &[&partition, &offset]).await? else {
        return Ok(None);
    };
    let base: i64 = r.get("base_offset");
    if offset < base {
        return Ok(None);
    }
    let raw = frames::raw_at(r.get("frames"), (offset - base) as usize)?;
    Ok(Some(StoredMessage {
        offset,
        created_at: r.get("created_at"),
        message: frames::decode(raw)?,
    }))
}

/// The newest message with this transaction id among the partition's newest `segments`
/// segments: how a message is found once the index has forgotten its transaction id.
pub async fn search(
    client: &Client,
    partition: Uuid,
    transaction_id: &str,
    segments: i64,
) -> Result<Option<StoredMessage>, StoreError> {
    let st = client
        .prepare_cached(
            "SELECT base_offset, created_at, frames FROM segments
              WHERE partition_id = $1 ORDER BY end_offset DESC LIMIT $2",
        )
        .await?;
    for r in client.query(&st, &[&partition, &segments]).await? {
        let base: i64 = r.get("base_offset");
        let mut found = None;
        for (k, frame) in frames::split(r.get("frames")).enumerate() {
            let m = frames::decode(frame?)?;
            if m.transaction_id == transaction_id {
                found = Some((k, m));
            }
        }
        if let Some((k, message)) = found {
            return Ok(Some(StoredMessage {
                offset: base + k as i64,
                created_at: r.get("created_at"),
                message,
            }));
        }
    }
    Ok(None)
}

/// One group's cursor on a partition; `lease` is its live lease (end, expiry).
#[derive(Clone, Debug)]
pub struct CursorRow {
    pub partition_id: Uuid,
    pub group: String,
    pub committed: i64,
    pub lease: Option<(i64, DateTime<Utc>)>,
}

pub async fn cursors(client: &Client, partitions: &[Uuid]) -> Result<Vec<CursorRow>, StoreError> {
    let st = client
        .prepare_cached(
            "SELECT partition_id, consumer_group, committed,
                    CASE WHEN lease_id IS NOT NULL AND lease_expires_at > now() THEN lease_end END
                      AS lease_end,
                    lease_expires_at
               FROM cursors WHERE partition_id = ANY($1)
              ORDER BY partition_id, consumer_group",
        )
        .await?;
    Ok(client
        .query(&st, &[&partitions])
        .await?
        .iter()
        .map(|r| CursorRow {
            partition_id: r.get("partition_id"),
            group: r.get("consumer_group"),
            committed: r.get("committed"),
            lease: r
                .get::<_, Option<i64>>("lease_end")
                .zip(r.get::<_, Option<DateTime<Utc>>>("lease_expires_at")),
        })
        .collect())
}

/// A dead letter filed for a message: by which group, why, after how many retries.
#[derive(Clone, Debug)]
pub struct DeadMark {
    pub partition_id: Uuid,
    pub offset: i64,
    pub group: String,
    pub error: String,
    pub retry_count: i32,
}

/// The dead letters filed for offsets of partitions: `(partition, offset)` pairs.
pub async fn dead_marks(
    client: &Client,
    tenant: &str,
    at: &[(Uuid, i64)],
) -> Result<Vec<DeadMark>, StoreError> {
    let partitions: Vec<Uuid> = at.iter().map(|(p, _)| *p).collect();
    let offsets: Vec<i64> = at.iter().map(|(_, o)| *o).collect();
    let st = client
        .prepare_cached(
            "SELECT d.partition_id, d.\"offset\", d.consumer_group, d.error, d.retry_count
               FROM dead_letters d
               JOIN unnest($2::uuid[], $3::bigint[]) AS u(p, o)
                 ON d.partition_id = u.p AND d.\"offset\" = u.o
              WHERE d.tenant = $1
              ORDER BY d.failed_at DESC",
        )
        .await?;
    Ok(client
        .query(&st, &[&tenant, &partitions, &offsets])
        .await?
        .iter()
        .map(|r| DeadMark {
            partition_id: r.get("partition_id"),
            offset: r.get("offset"),
            group: r.get("consumer_group"),
            error: r.get("error"),
            retry_count: r.get("retry_count"),
        })
        .collect())
}

/// Which of these (partition, offset) pairs are deleted.
pub async fn tombstoned(
    client: &Client,
    at: &[(Uuid, i64)],
) -> Result<Vec<(Uuid, i64)>, StoreError> {
    let partitions: Vec<Uuid> = at.iter().map(|(p, _)| *p).collect();
    let offsets: Vec<i64> = at.iter().map(|(_, o)| *o).collect();
    let st = client
        .prepare_cached(
            "SELECT t.partition_id, t.\"offset\" FROM tombstones t
               JOIN unnest($1::uuid[], $2::bigint[]) AS u(p, o)
                 ON t.partition_id = u.p AND t.\"offset\" = u.o",
        )
        .await?;
    Ok(client
        .query(&st, &[&partitions, &offsets])
        .await?
        .iter()
        .map(|r| (r.get("partition_id"), r.get("offset")))
        .collect())
}

/// Deletes the message at `offset` in the caller's transaction: a tombstone every pop skips,
/// its transaction-index entry (`hash`) so that the id may be pushed again, and its traces.
/// False when it was already deleted.
pub async fn tombstone(
    tx: &Tx<'_>,
    partition: Uuid,
    offset: i64,
    hash: Uuid,
) -> Result<bool, StoreError> {
    let st = tx
        .prepare_cached(match tx.layout() {
            Layout::Single => TOMBSTONE,
            Layout::Citus => TOMBSTONE_CITUS,
        })
        .await?;
    let n: i64 = tx
        .query_one(&st, &[&partition, &offset, &hash])
        .await?
        .get("n");
    Ok(n > 0)
}

/// What the listing filters on, besides the tenant.
#[derive(Clone, Copy, Debug)]
pub struct Scope<'a> {
    pub queue: Option<&'a str>,
    pub partition: Option<&'a str>,
    pub namespace: Option<&'a str>,
    pub task: Option<&'a str>,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

/// Up to `limit` of the tenant's partitions in scope pushed to since `from`, most recently
/// pushed first, after `after` (the last one of the previous batch).
pub async fn recent_places(
    client: &Client,
    tenant: &str,
    scope: &Scope<'_>,
    after: Option<(DateTime<Utc>, Uuid)>,
    limit: i64,
) -> Result<Vec<Place>, StoreError> {
    let sql = format!(
        "{PLACE}
          WHERE q.tenant = $1 AND p.last_push_at >= $2
            AND ($3::text IS NULL OR q.name = $3) AND ($4::text IS NULL OR p.name = $4)
            AND ($5::text IS NULL OR q.namespace = $5) AND ($6::text IS NULL OR q.task = $6)
            AND ($7::timestamptz IS NULL OR (p.last_push_at, p.id) < ($7, $8::uuid))
          ORDER BY p.last_push_at DESC, p.id DESC
          LIMIT $9"
    );
    let st = client.prepare_cached(&sql).await?;
    let (at, id) = (after.map(|a| a.0), after.map(|a| a.1));
    Ok(client
        .query(
            &st,
            &[
                &tenant,
                &scope.from,
                &scope.queue,
                &scope.partition,
                &scope.namespace,
                &scope.task,
                &at,
                &id,
                &limit,
            ],
        )
        .await?
        .iter()
        .map(Place::from)
        .collect())
}

/// The newest `limit` dead-lettered messages of the tenant in scope, by their append time:
/// (place, offset, appended at), one per message however many groups dead-lettered it. Read
/// from the dead letters, so the listing of that status does not search the log for them.
pub async fn dead_letter_places(
    client: &Client,
    tenant: &str,
    scope: &Scope<'_>,
    limit: i64,
) -> Result<Vec<(Place, i64, DateTime<Utc>)>, StoreError> {
    let st = client
        .prepare_cached(
            "SELECT * FROM (
               SELECT DISTINCT ON (d.partition_id, d.\"offset\")
                      p.id AS partition_id, p.name AS partition, q.id AS queue_id,
                      q.name AS queue, q.namespace, q.task, q.options, p.last_push_at,
                      d.\"offset\", d.created_at AS appended_at
                 FROM dead_letters d
                 JOIN partitions p ON p.id = d.partition_id
                 JOIN queues q ON q.id = d.queue_id
                WHERE d.tenant = $1 AND d.created_at >= $2 AND d.created_at <= $3
                  AND ($4::text IS NULL OR q.name = $4) AND ($5::text IS NULL OR p.name = $5)
                  AND ($6::text IS NULL OR q.namespace = $6) AND ($7::text IS NULL OR q.task = $7)
                ORDER BY d.partition_id, d.\"offset\") x
              ORDER BY appended_at DESC, \"offset\" DESC, partition_id DESC
              LIMIT $8",
        )
        .await?;
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 8] = [
        &tenant,
        &scope.from,
        &scope.to,
        &scope.queue,
        &scope.partition,
        &scope.namespace,
        &scope.task,
        &limit,
    ];
    Ok(client
        .query(&st, &params)
        .await?
        .iter()
        .map(|r| (Place::from(r), r.get("offset"), r.get("appended_at")))
        .collect())
}

/// The newest `$4` segments appended in [`$2`, `$3`] of each partition of `$1`.
const HEADS: &str = "SELECT s.partition_id, s.base_offset, s.end_offset, s.created_at
       FROM unnest($1::uuid[]) AS u(p)
       CROSS JOIN LATERAL (
         SELECT partition_id, base_offset, end_offset, created_at FROM segments
          WHERE partition_id = u.p AND created_at >= $2 AND created_at <= $3
          ORDER BY end_offset DESC LIMIT $4) s";

/// The segment holding each (partition of `$1`, offset of `$2`), each once.
const SEGMENTS_AT: &str = "SELECT DISTINCT ON (s.partition_id, s.end_offset)
            s.partition_id, s.base_offset, s.end_offset, s.created_at, s.frames
       FROM unnest($1::uuid[], $2::bigint[]) AS u(p, o)
       CROSS JOIN LATERAL (
         SELECT partition_id, base_offset, end_offset, created_at, frames FROM segments
          WHERE partition_id = u.p AND end_offset >= u.o
          ORDER BY end_offset LIMIT 1) s";

/// A segment's place and age, without its frames.
#[derive(Clone, Copy, Debug)]
pub struct Head {
    pub partition_id: Uuid,
    pub base_offset: i64,
    pub end_offset: i64,
    pub created_at: DateTime<Utc>,
}

/// Per partition, its newest `per_partition` segments appended in [from, to], newest first.
pub async fn heads(
    client: &Conn,
    partitions: &[Uuid],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    per_partition: i64,
) -> Result<Vec<Head>, StoreError> {
    let rows = match client.layout() {
        Layout::Single => {
            let st = client.prepare_cached(HEADS).await?;
            client
                .query(&st, &[&partitions, &from, &to, &per_partition])
                .await?
        }
        // Citus plans no lateral probe of a distributed table from a list; one statement per
        // partition, each routed to its shard, pipelined.
        Layout::Citus => {
            let st = client
                .prepare_cached(
                    "SELECT partition_id, base_offset, end_offset, created_at FROM segments
                      WHERE partition_id = $1 AND created_at >= $2 AND created_at <= $3
                      ORDER BY end_offset DESC LIMIT $4",
                )
                .await?;
            let st = &st;
            let calls = partitions
                .iter()
                .map(|p| async move { client.query(st, &[p, &from, &to, &per_partition]).await });
            futures::future::try_join_all(calls)
                .await?
                .into_iter()
                .flatten()
                .collect()
        }
    };
    Ok(rows
        .iter()
        .map(|r| Head {
            partition_id: r.get("partition_id"),
            base_offset: r.get("base_offset"),
            end_offset: r.get("end_offset"),
            created_at: r.get("created_at"),
        })
        .collect())
}

/// The messages at these (partition, offset) pairs, read from their segments (each segment
/// fetched once).
pub async fn read(
    client: &Conn,
    at: &[(Uuid, i64)],
) -> Result<Vec<(Uuid, StoredMessage)>, StoreError> {
    let rows = match client.layout() {
        Layout::Single => {
            let partitions: Vec<Uuid> = at.iter().map(|(p, _)| *p).collect();
            let offsets: Vec<i64> = at.iter().map(|(_, o)| *o).collect();
            let st = client.prepare_cached(SEGMENTS_AT).await?;
            client.query(&st, &[&partitions, &offsets]).await?
        }
        // One statement per partition, routed to its shard, pipelined (see `heads`).
        Layout::Citus => {
            let mut by_partition: std::collections::BTreeMap<Uuid, Vec<i64>> = Default::default();
            for &(p, o) in at {
                by_partition.entry(p).or_default().push(o);
            }
            let st = client
                .prepare_cached(
                    "SELECT DISTINCT ON (s.end_offset)
                            s.partition_id, s.base_offset, s.end_offset, s.created_at, s.frames
                       FROM unnest($2::bigint[]) AS u(o)
                       CROSS JOIN LATERAL (
                         SELECT partition_id, base_offset, end_offset, created_at, frames
                           FROM segments WHERE partition_id = $1 AND end_offset >= u.o
                          ORDER BY end_offset LIMIT 1) s",
                )
                .await?;
            let st = &st;
            let calls = by_partition
                .iter()
                .map(|(p, offsets)| async move { client.query(st, &[p, offsets]).await });
            futures::future::try_join_all(calls)
                .await?
                .into_iter()
                .flatten()
                .collect()
        }
    };
    let mut out = Vec::with_capacity(at.len());
    for &(p, o) in at {
        let Some(r) = rows.iter().find(|r| {
            r.get::<_, Uuid>("partition_id") == p
                && r.get::<_, i64>("base_offset") <= o
                && r.get::<_, i64>("end_offset") >= o
        }) else {
            continue;
        };
        let base: i64 = r.get("base_offset");
        let raw = frames::raw_at(r.get("frames"), (o - base) as usize)?;
        out.push((
            p,
            StoredMessage {
                offset: o,
                created_at: r.get("created_at"),
                message: frames::decode(raw)?,
            },
        ));
    }
    Ok(out)
}
