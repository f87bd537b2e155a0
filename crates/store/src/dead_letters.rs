//! Dead letters: snapshots of the frames of messages a group gave up on, with the reason, so
//! they outlive the log.

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use tokio_postgres::Row;
use uuid::Uuid;

use crate::message::{Message, StoredMessage};
use crate::sql::dead_letters::{EXPIRE, FILE, LIST, PICK, READ, SEGMENT, TAKE, TAKE_CITUS};
use crate::{frames, Layout, StoreError, Tx};

/// A message to dead-letter: where it is and why.
pub struct Letter<'a> {
    pub tenant: &'a str,
    pub queue_id: Uuid,
    pub partition_id: Uuid,
    pub group: &'a str,
    pub offset: i64,
    pub reason: &'a str,
    pub retry_count: i32,
}

/// Files the message at `letter.offset` as a dead letter: its frame's bytes, copied from the
/// log.
pub async fn file(tx: &Tx<'_>, letter: &Letter<'_>) -> Result<(), StoreError> {
    let st = tx.prepare_cached(SEGMENT).await?;
    let seg = tx
        .query_one(&st, &[&letter.partition_id, &letter.offset])
        .await?;
    let base: i64 = seg.get("base_offset");
    let created_at: DateTime<Utc> = seg.get("created_at");
    let raw = frames::raw_at(seg.get("frames"), (letter.offset - base) as usize)?;
    let m = frames::decode(raw)?;
    let st = tx.prepare_cached(FILE).await?;
    tx.execute(
        &st,
        &[
            &letter.tenant,
            &letter.queue_id,
            &letter.partition_id,
            &letter.group,
            &letter.offset,
            &m.message_id,
            &m.transaction_id,
            &raw,
            &created_at,
            &letter.reason,
            &letter.retry_count,
        ],
    )
    .await?;
    Ok(())
}

#[derive(Debug, Default)]
pub struct Filter<'a> {
    pub queue: Option<&'a str>,
    pub group: Option<&'a str>,
    pub partition: Option<&'a str>,
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    /// The reason exactly, as the bulk routes select it.
    pub reason: Option<&'a str>,
    pub limit: i64,
    pub offset: i64,
}

#[derive(Debug)]
pub struct DeadLetter {
    pub id: i64,
    pub partition_id: Uuid,
    pub queue: String,
    pub partition: String,
    pub group: String,
    pub error: String,
    pub retry_count: i32,
    pub message: StoredMessage,
    pub failed_at: DateTime<Utc>,
}

impl TryFrom<&Row> for DeadLetter {
    type Error = StoreError;

    fn try_from(r: &Row) -> Result<DeadLetter, StoreError> {
        Ok(DeadLetter {
            id: r.get("id"),
            partition_id: r.get("partition_id"),
            queue: r.get("queue"),
            partition: r.get("partition"),
            group: r.get("consumer_group"),
            error: r.get("error"),
            retry_count: r.get("retry_count"),
            message: StoredMessage {
                offset: r.get("offset"),
                created_at: r.get("created_at"),
                message: frames::decode(r.get("frame"))?,
            },
            failed_at: r.get("failed_at"),
        })
    }
}

/// A page of dead letters, newest failure first, and the number of all that match.
pub async fn list(
    client: &Client,
    tenant: &str,
    f: &Filter<'_>,
) -> Result<(Vec<DeadLetter>, i64), StoreError> {
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 9] = [
        &tenant,
        &f.queue,
        &f.group,
        &f.partition,
        &f.from,
        &f.to,
        &f.reason,
        &f.limit,
        &f.offset,
    ];
    let st = client.prepare_cached(LIST).await?;
    let rows = client.query(&st, &params).await?;
    let total: i64 = rows.first().map_or(0, |r| r.get("total"));
    let letters = rows
        .iter()
        .filter(|r| r.get::<_, Option<i64>>("id").is_some())
        .map(DeadLetter::try_from)
        .collect::<Result<Vec<_>, _>>()?;
    Ok((letters, total))
}

/// Deletes up to `limit` dead letters filed before `before`, oldest first, in the caller's
/// transaction; how many went.
pub async fn expire(tx: &Tx<'_>, before: DateTime<Utc>, limit: i64) -> Result<i64, StoreError> {
    let st = tx.prepare_cached(EXPIRE).await?;
    Ok(tx.execute(&st, &[&before, &limit]).await? as i64)
}

/// Which dead letters a bulk requeue or deletion takes: the ids named, when given, and
/// whatever the set fields of the filter match (AND). All unset selects every dead letter of
/// the tenant: the caller decides whether that was asked for.
#[derive(Clone, Copy, Debug, Default)]
pub struct Selector<'a> {
    pub ids: Option<&'a [i64]>,
    pub queue: Option<&'a str>,
    pub partition: Option<&'a str>,
    pub group: Option<&'a str>,
    /// The stored error text, exactly.
    pub reason: Option<&'a str>,
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
}

/// A dead letter a selector matched, without its frame: enough to answer for it.
#[derive(Clone, Debug)]
pub struct Picked {
    pub id: i64,
    pub partition_id: Uuid,
    pub transaction_id: String,
    pub group: String,
}

/// Up to `limit` of the tenant's dead letters that `sel` matches, oldest failure first. Only
/// dead letters whose queue and partition still exist match (as in [`list`]).
pub async fn pick(
    tx: &Tx<'_>,
    tenant: &str,
    sel: &Selector<'_>,
    limit: i64,
) -> Result<Vec<Picked>, StoreError> {
    let st = tx.prepare_cached(PICK).await?;
    let rows = tx
        .query(
            &st,
            &[
                &tenant,
                &sel.ids,
                &sel.queue,
                &sel.partition,
                &sel.group,
                &sel.reason,
                &sel.from,
                &sel.to,
                &limit,
            ],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| Picked {
            id: r.get("id"),
            partition_id: r.get("partition_id"),
            transaction_id: r.get("transaction_id"),
            group: r.get("consumer_group"),
        })
        .collect())
}

/// A dead letter taken (or read) whole, to be put back into its partition.
#[derive(Debug)]
pub struct Taken {
    pub id: i64,
    pub queue_id: Uuid,
    pub queue: String,
    pub partition_id: Uuid,
    pub group: String,
    pub error: String,
    /// Where the message was in its partition's log.
    pub offset: i64,
    /// The snapshot, as it was in the log.
    pub message: Message,
}

impl TryFrom<&Row> for Taken {
    type Error = StoreError;

    fn try_from(r: &Row) -> Result<Taken, StoreError> {
        Ok(Taken {
            id: r.get("id"),
            queue_id: r.get("queue_id"),
            queue: r.get("queue"),
            partition_id: r.get("partition_id"),
            group: r.get("consumer_group"),
            error: r.get("error"),
            offset: r.get("offset"),
            message: frames::decode(r.get("frame"))?,
        })
    }
}

/// Deletes the tenant's dead letters `ids` in the caller's transaction and returns them,
/// locked in id order (two bulk calls over the same rows then wait for each other instead
/// of deadlocking). One another transaction took first, or whose partition is gone, is not
/// returned (and, orphaned, is left alone).
pub async fn take(tx: &Tx<'_>, tenant: &str, ids: &[i64]) -> Result<Vec<Taken>, StoreError> {
    // On Citus two bulk calls over the same rows may deadlock (`take_citus` says why).
    let st = tx
        .prepare_cached(match tx.layout() {
            Layout::Single => TAKE,
            Layout::Citus => TAKE_CITUS,
        })
        .await?;
    let rows = tx.query(&st, &[&tenant, &ids]).await?;
    rows.iter().map(Taken::try_from).collect()
}

/// The tenant's dead letters `ids` whose partitions exist, read as [`take`] would delete
/// them (a dry run), without locking anything.
pub async fn read(tx: &Tx<'_>, tenant: &str, ids: &[i64]) -> Result<Vec<Taken>, StoreError> {
    let st = tx.prepare_cached(READ).await?;
    let rows = tx.query(&st, &[&tenant, &ids]).await?;
    rows.iter().map(Taken::try_from).collect()
}
