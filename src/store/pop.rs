//! Claiming partitions for a consumer group and reading their messages.
//!
//! A claim is a compare-and-set on the group's cursor rows under `FOR UPDATE SKIP LOCKED`:
//! a pop never waits on a lock, it moves on to the next partition.

use chrono::{DateTime, Utc};
use deadpool_postgres::Transaction;
use serde_json::value::RawValue;
use uuid::Uuid;

use super::frames::{self, Frame};
use super::StoreError;
use crate::broker::naming::QUEUE_MODE;
use crate::broker::subscription::StartPoint;

#[derive(Clone, Copy)]
pub struct PopRequest<'a> {
    pub queue_id: Uuid,
    /// One lease id per pop request, shared by every partition it claims (one extend call
    /// renews them all), even across queues on the namespace/task route.
    pub lease_id: Uuid,
    /// `Some` on the partition route: only this partition (by name).
    pub partition: Option<&'a str>,
    pub group: &'a str,
    /// Where a named group starts on first join (ignored when its choice is already stored).
    pub start: StartPoint,
    pub max_partitions: i64,
    /// Messages in the whole answer, shared by every claimed partition.
    pub batch: i64,
    pub lease_seconds: i64,
    pub delayed_processing_seconds: i64,
    pub window_buffer_seconds: i64,
    pub auto_ack: bool,
    /// Which partitions to sweep for a missing cursor of the group before claiming. The
    /// caller decides when (`crate::wakeup::Sweeps`): a group learns of a partition no later
    /// than that.
    pub sweep: Sweep<'a>,
    /// Partitions that probably have messages for the group (`crate::wakeup::Ready`), tried
    /// before the walk over all of its cursors. A hint only: the walk still runs when these
    /// yield nothing.
    pub hint: &'a [Uuid],
}

/// Which partitions a pop gives its group cursors on first.
#[derive(Clone, Copy, Debug)]
pub enum Sweep<'a> {
    No,
    /// Every partition of the queue (an anti-join over them all).
    All,
    /// Only these (partitions just created): primary-key lookups.
    Only(&'a [Uuid]),
}

#[derive(Clone, Debug)]
pub struct StoredMessage {
    pub offset: i64,
    pub message_id: Uuid,
    pub transaction_id: String,
    /// JSON text, as stored (still encrypted when `encrypted`).
    pub payload: Box<RawValue>,
    pub trace_id: Option<Uuid>,
    pub producer_sub: Option<String>,
    pub encrypted: bool,
    pub created_at: DateTime<Utc>,
}

pub struct DeliveredPartition {
    pub partition_id: Uuid,
    pub partition: String,
    pub messages: Vec<StoredMessage>,
}

pub struct PopOutcome {
    /// `None` when nothing was delivered or the pop auto-acked.
    pub lease_id: Option<Uuid>,
    pub partitions: Vec<DeliveredPartition>,
}

/// Why a partition-route pop found nothing.
#[derive(Debug, PartialEq, Eq)]
pub enum EmptyReason {
    PartitionNotFound,
    LeaseHeld,
    WindowBufferActive { partition_id: Uuid },
    NothingReadable,
}

macro_rules! ensure_queue_mode {
    ($partitions:literal) => {
        concat!(
            "INSERT INTO cursors (partition_id, consumer_group, committed, queue_id)
     SELECT p.id, $2, -1, p.queue_id FROM partitions p
      WHERE p.queue_id = $1 AND ($3::text IS NULL OR p.name = $3)",
            $partitions,
            "
        AND NOT EXISTS (SELECT 1 FROM cursors c WHERE c.partition_id = p.id AND c.consumer_group = $2)
     ON CONFLICT DO NOTHING"
        )
    };
}
const ENSURE_QUEUE_MODE: &str = ensure_queue_mode!("");
const ENSURE_QUEUE_MODE_ONLY: &str = ensure_queue_mode!(" AND p.id = ANY ($4::uuid[])");

/// A named group's start point is stored once per (queue, group) and then always wins; a
/// cursor created later for a new partition starts after the last segment appended at or
/// before that instant.
macro_rules! ensure_named {
    ($partitions:literal) => {
        concat!(
            "WITH sub AS (
       INSERT INTO subscriptions (queue_id, consumer_group, start_after) VALUES ($1, $2, $4)
       ON CONFLICT (queue_id, consumer_group) DO NOTHING RETURNING start_after),
     s AS (SELECT start_after FROM sub
           UNION ALL SELECT start_after FROM subscriptions WHERE queue_id = $1 AND consumer_group = $2
           LIMIT 1)
     INSERT INTO cursors (partition_id, consumer_group, committed, queue_id)
     SELECT p.id, $2,
            CASE WHEN (SELECT start_after FROM s) IS NULL THEN -1
                 ELSE ",
            last_offset_at!("p.id", "(SELECT start_after FROM s)"),
            " END,
            p.queue_id
       FROM partitions p
      WHERE p.queue_id = $1 AND ($3::text IS NULL OR p.name = $3)",
            $partitions,
            "
        AND NOT EXISTS (SELECT 1 FROM cursors c WHERE c.partition_id = p.id AND c.consumer_group = $2)
     ON CONFLICT DO NOTHING"
        )
    };
}
const ENSURE_NAMED: &str = ensure_named!("");
const ENSURE_NAMED_ONLY: &str = ensure_named!(" AND p.id = ANY ($5::uuid[])");

/// Claims and reads in one statement. Least recently claimed partitions first, so a hot
/// partition cannot starve the others. Each claimed partition comes back once per segment
/// overlapping its leased range (committed, lease_end]: the segments ending inside the range
/// plus the first one ending after it, both bounded index scans however long the backlog
/// behind the range is.
/// Claims up to `$5` partitions for the group under lease `$6` and reads their segments, in
/// one statement. `$candidates` narrows the cursors considered (see the two forms below).
macro_rules! claim_and_read {
    ($candidates:literal) => {
        concat!(
            "WITH cand AS (
       SELECT c.partition_id, c.committed, c.lease_end AS old_end, c.lease_expires_at AS last_claim,
              p.next_offset, p.name
         FROM cursors c JOIN partitions p ON p.id = c.partition_id
        WHERE c.queue_id = $1 AND c.consumer_group = $2 AND ($3::text IS NULL OR p.name = $3)",
            $candidates,
            "
          AND c.committed < p.next_offset - 1
          AND (c.lease_id IS NULL OR c.lease_expires_at <= now())
          AND ($4::float8 = 0 OR p.last_push_at <= now() - make_interval(secs => $4::float8))
        ORDER BY c.lease_expires_at NULLS FIRST, c.partition_id
        LIMIT $5
        FOR UPDATE OF c SKIP LOCKED),
     claimed AS (
       UPDATE cursors c
          SET lease_id = $6, lease_expires_at = now() + make_interval(secs => $7::float8),
              lease_end = least(cand.next_offset - 1, cand.committed + $8)
         FROM cand
        WHERE c.partition_id = cand.partition_id AND c.consumer_group = $2
       RETURNING c.partition_id, cand.name, cand.committed, c.lease_end, cand.old_end,
                 cand.last_claim)
     SELECT cl.partition_id, cl.name, cl.committed, cl.lease_end, cl.old_end, cl.last_claim,
            now(), s.base_offset, s.created_at, s.frames
       FROM claimed cl
       LEFT JOIN LATERAL (
         (SELECT base_offset, end_offset, created_at, frames FROM segments
           WHERE partition_id = cl.partition_id AND end_offset > cl.committed
             AND end_offset <= cl.lease_end)
         UNION ALL
         (SELECT base_offset, end_offset, created_at, frames FROM segments
           WHERE partition_id = cl.partition_id AND end_offset > cl.lease_end
           ORDER BY end_offset LIMIT 1)) s ON s.base_offset <= cl.lease_end
      ORDER BY cl.partition_id, s.end_offset"
        )
    };
}

/// Walks the group's cursors in claim order (least recently claimed first).
const CLAIM_AND_READ: &str = claim_and_read!("");

/// Only the hinted partitions (`$9`, partitions pushed to since the group last looked): primary
/// key lookups instead of a walk past every partition with nothing to read.
const CLAIM_HINTED: &str = claim_and_read!(" AND c.partition_id = ANY ($9::uuid[])");

const FINISH: &str = "UPDATE cursors c
        SET committed = u.committed,
            lease_id = CASE WHEN u.release THEN NULL ELSE c.lease_id END,
            lease_end = u.lease_end
       FROM unnest($1::uuid[], $2::bigint[], $3::bool[], $4::bigint[]) AS u(pid, committed, release, lease_end)
      WHERE c.partition_id = u.pid AND c.consumer_group = $5";

/// Gives the group a cursor on every partition of the queue it has none on yet. Returns how
/// many it created.
async fn ensure_cursors(tx: &Transaction<'_>, req: &PopRequest<'_>) -> Result<u64, StoreError> {
    let only = match req.sweep {
        Sweep::Only(ids) => Some(ids),
        _ => None,
    };
    if req.group == QUEUE_MODE {
        let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
            vec![&req.queue_id, &req.group, &req.partition];
        let sql = match &only {
            Some(ids) => {
                params.push(ids);
                ENSURE_QUEUE_MODE_ONLY
            }
            None => ENSURE_QUEUE_MODE,
        };
        let st = tx.prepare_cached(sql).await?;
        return Ok(tx.execute(&st, &params).await?);
    }
    let start: Option<DateTime<Utc>> = match req.start {
        StartPoint::Beginning => None,
        StartPoint::After(t) => Some(t),
    };
    let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
        vec![&req.queue_id, &req.group, &req.partition, &start];
    let sql = match &only {
        Some(ids) => {
            params.push(ids);
            ENSURE_NAMED_ONLY
        }
        None => ENSURE_NAMED,
    };
    let st = tx.prepare_cached(sql).await?;
    Ok(tx.execute(&st, &params).await?)
}

async fn claim(
    tx: &Transaction<'_>,
    req: &PopRequest<'_>,
) -> Result<Vec<tokio_postgres::Row>, StoreError> {
    let window = req.window_buffer_seconds as f64;
    let lease = req.lease_seconds as f64;
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 8] = [
        &req.queue_id,
        &req.group,
        &req.partition,
        &window,
        &req.max_partitions,
        &req.lease_id,
        &lease,
        &req.batch,
    ];
    if !req.hint.is_empty() {
        let st = tx.prepare_cached(CLAIM_HINTED).await?;
        let mut hinted = params.to_vec();
        hinted.push(&req.hint);
        let rows = tx.query(&st, &hinted).await?;
        if !rows.is_empty() {
            return Ok(rows);
        }
    }
    let st = tx.prepare_cached(CLAIM_AND_READ).await?;
    Ok(tx.query(&st, &params).await?)
}

struct Claimed {
    partition_id: Uuid,
    name: String,
    committed: i64,
    lease_end: i64,
    old_end: Option<i64>,
    last_claim: Option<DateTime<Utc>>,
}

/// One pop attempt, inside the caller's transaction: claim up to `max_partitions` partitions
/// under the request's lease id and read their segments (one statement), sweeping first for
/// partitions the group has no cursor on when asked to (`ensure_cursors`: the sweep clock);
/// deliver up to `batch` messages across them; then trim or release what the read did not
/// fill.
pub async fn pop(tx: &Transaction<'_>, req: &PopRequest<'_>) -> Result<PopOutcome, StoreError> {
    if !matches!(req.sweep, Sweep::No) {
        ensure_cursors(tx, req).await?;
    }
    let rows = claim(tx, req).await?;
    let lease_id = req.lease_id;
    if rows.is_empty() {
        return Ok(PopOutcome {
            lease_id: None,
            partitions: vec![],
        });
    }
    let db_now: DateTime<Utc> = rows[0].get(6);
    let mut claimed: Vec<Claimed> = Vec::new();
    for r in &rows {
        let pid: Uuid = r.get(0);
        if !claimed.iter().any(|c| c.partition_id == pid) {
            claimed.push(Claimed {
                partition_id: pid,
                name: r.get(1),
                committed: r.get(2),
                lease_end: r.get(3),
                old_end: r.get(4),
                last_claim: r.get(5),
            });
        }
    }
    claimed.sort_by(|a, b| {
        (a.last_claim.is_some(), a.last_claim, a.partition_id).cmp(&(
            b.last_claim.is_some(),
            b.last_claim,
            b.partition_id,
        ))
    });
    // Segment rows: those of a partition with a segment (the lateral join is a left join).
    let segs: Vec<&tokio_postgres::Row> = rows
        .iter()
        .filter(|r| r.get::<_, Option<i64>>(7).is_some())
        .collect();

    let cutoff = (req.delayed_processing_seconds > 0)
        .then(|| db_now - chrono::Duration::seconds(req.delayed_processing_seconds));
    let mut budget = req.batch;
    let mut delivered = Vec::with_capacity(claimed.len());
    for c in &claimed {
        let mut messages = Vec::new();
        'segments: for s in segs
            .iter()
            .filter(|s| s.get::<_, Uuid>(0) == c.partition_id)
        {
            let base: i64 = s.get(7);
            let created_at: DateTime<Utc> = s.get(8);
            if cutoff.is_some_and(|cut| created_at > cut) {
                break;
            }
            let bytes: &[u8] = s.get(9);
            for (k, f) in frames::iter(bytes).enumerate() {
                let offset = base + k as i64;
                if offset <= c.committed {
                    continue;
                }
                if offset > c.lease_end || budget == 0 {
                    break 'segments;
                }
                messages.push(stored(offset, f?, created_at)?);
                budget -= 1;
            }
        }
        delivered.push(messages);
    }

    // Trim each lease to what was delivered; release empty claims; commit auto-acks.
    let mut f_pids = vec![];
    let mut f_committed = vec![];
    let mut f_release = vec![];
    let mut f_end = vec![];
    for (c, msgs) in claimed.iter().zip(&delivered) {
        let last = msgs.last().map(|m| m.offset);
        let (new_committed, release, end) = match last {
            None => (c.committed, true, c.old_end.unwrap_or(c.committed)),
            Some(l) if req.auto_ack => (l, true, l),
            Some(l) if l < c.lease_end => (c.committed, false, l),
            Some(_) => continue,
        };
        f_pids.push(c.partition_id);
        f_committed.push(new_committed);
        f_release.push(release);
        f_end.push(end);
    }
    if !f_pids.is_empty() {
        let st = tx.prepare_cached(FINISH).await?;
        tx.execute(
            &st,
            &[&f_pids, &f_committed, &f_release, &f_end, &req.group],
        )
        .await?;
    }

    let partitions: Vec<DeliveredPartition> = claimed
        .into_iter()
        .zip(delivered)
        .filter(|(_, m)| !m.is_empty())
        .map(|(c, messages)| DeliveredPartition {
            partition_id: c.partition_id,
            partition: c.name,
            messages,
        })
        .collect();
    let lease_id = (!partitions.is_empty() && !req.auto_ack).then_some(lease_id);
    Ok(PopOutcome {
        lease_id,
        partitions,
    })
}

/// A decoded frame as a delivered message. A frame the store cannot read is a storage fault,
/// never something to skip silently.
pub(crate) fn stored(
    offset: i64,
    f: Frame<'_>,
    created_at: DateTime<Utc>,
) -> Result<StoredMessage, StoreError> {
    let payload = std::str::from_utf8(f.payload)
        .ok()
        .and_then(|t| RawValue::from_string(t.to_string()).ok())
        .ok_or(StoreError::Corrupt)?;
    Ok(StoredMessage {
        offset,
        message_id: f.message_id,
        transaction_id: f.transaction_id.to_string(),
        payload,
        trace_id: f.trace_id,
        producer_sub: f.producer_sub.map(str::to_string),
        encrypted: f.encrypted,
        created_at,
    })
}

/// Explains an empty partition-route pop, so the answer can carry Queen's error shapes.
pub async fn diagnose_empty(
    tx: &Transaction<'_>,
    queue_id: Uuid,
    partition: &str,
    group: &str,
    window_buffer_seconds: i64,
) -> Result<EmptyReason, StoreError> {
    let st = tx
        .prepare_cached(
            "SELECT p.id,
                    coalesce(c.lease_id IS NOT NULL AND c.lease_expires_at > now(), false),
                    coalesce($4::float8 > 0 AND p.last_push_at > now() - make_interval(secs => $4::float8), false)
               FROM partitions p
               LEFT JOIN cursors c ON c.partition_id = p.id AND c.consumer_group = $3
              WHERE p.queue_id = $1 AND p.name = $2",
        )
        .await?;
    let row = tx
        .query_opt(
            &st,
            &[
                &queue_id,
                &partition,
                &group,
                &(window_buffer_seconds as f64),
            ],
        )
        .await?;
    Ok(match row {
        None => EmptyReason::PartitionNotFound,
        Some(r) if r.get::<_, bool>(1) => EmptyReason::LeaseHeld,
        Some(r) if r.get::<_, bool>(2) => EmptyReason::WindowBufferActive {
            partition_id: r.get(0),
        },
        Some(_) => EmptyReason::NothingReadable,
    })
}
