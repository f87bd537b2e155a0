//! Appending to a partition's log.

use deadpool_postgres::GenericClient;
use serde_json::Value;
use uuid::Uuid;

use crate::frames;
use crate::sql::append::{APPEND, APPEND_CITUS, APPEND_KNOWN, LOGGED, LOGGED_CITUS, SEGMENTS_OF};
use crate::{Conn, Layout, StoreError, Tx};

/// One partition's share of an append: its messages' index hashes and frames, in order,
/// free of duplicates among themselves.
pub struct Batch {
    pub partition: Uuid,
    /// Each message's transaction index key (`regent_rules::tx_hash`).
    pub hashes: Vec<Uuid>,
    /// Each message's frame (`frames::encode`).
    pub frames: Vec<Vec<u8>>,
}

/// What became of one message of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Appended {
    New,
    /// Its transaction id was already in the partition: the id of the message stored there,
    /// `None` when the log no longer holds it (retention or a clear deleted it while the
    /// index, on its own clock, still knows the transaction id).
    Duplicate(Option<Uuid>),
}

/// The deduplication window in seconds (`DEDUP_WINDOW_SECONDS`): an index entry younger than
/// this makes a push a duplicate; an older one does not, purged or not (migration V19).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window(pub i32);

/// How an append finds duplicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dedup {
    /// Look every transaction id up first and append without the duplicates.
    Careful,
    /// Skip the lookup: a duplicate fails the append with a unique violation
    /// ([`StoreError::is_duplicate`]) and the caller re-runs the whole transaction carefully.
    /// Duplicates are rare, and the lookup is about a third of an append's cost.
    Optimistic,
}

/// The frames as one segment, and where each ends in it (in bytes).
fn joined(frames: &[Vec<u8>]) -> Result<(Vec<u8>, Vec<i32>), StoreError> {
    let mut segment = Vec::with_capacity(frames.iter().map(Vec::len).sum());
    let mut ends = Vec::with_capacity(frames.len());
    for f in frames {
        segment.extend_from_slice(f);
        let end = i32::try_from(segment.len()).map_err(|_| frames::TooLarge {
            field: "segment",
            len: segment.len(),
        })?;
        ends.push(end);
    }
    Ok((segment, ends))
}

/// Appends batches to several partitions inside the caller's transaction, each batch as one
/// segment. The calls are pipelined on the connection in the order given, which must be
/// partition-id order (the global lock order); each partition's sequencer row stays locked
/// until the transaction ends, which is what makes offsets visible in commit order. Returns
/// one verdict per message, batch by batch.
pub async fn append_many(
    tx: &Tx<'_>,
    batches: &[Batch],
    dedup: Dedup,
    window: Window,
) -> Result<Vec<Vec<Appended>>, StoreError> {
    let careful = dedup == Dedup::Careful;
    let st = tx
        .prepare_cached(match tx.layout() {
            Layout::Single => APPEND,
            Layout::Citus => APPEND_CITUS,
        })
        .await?;
    let calls = batches.iter().map(|b| {
        let st = &st;
        async move {
            let rows = match tx.layout() {
                Layout::Single => {
                    tx.query(
                        st,
                        &[&b.partition, &b.hashes, &b.frames, &careful, &window.0],
                    )
                    .await?
                }
                Layout::Citus => {
                    let (segment, ends) = joined(&b.frames)?;
                    let w = &window.0;
                    tx.query(st, &[&b.partition, &b.hashes, &segment, &ends, &careful, w])
                        .await?
                }
            };
            let mut out = vec![Appended::New; b.frames.len()];
            if rows.is_empty() {
                return Ok(out);
            }
            // Only items that were not appended come back (1-based), with the offset already
            // holding their transaction id; the verdict names the message stored there.
            let items: Vec<usize> = rows
                .iter()
                .map(|r| r.get::<_, i32>("item") as usize - 1)
                .collect();
            let offsets: Vec<i64> = rows.iter().map(|r| r.get("stored_offset")).collect();
            let ids = stored_ids(&**tx, b.partition, &offsets).await?;
            for (item, id) in items.into_iter().zip(ids) {
                out[item] = Appended::Duplicate(id);
            }
            Ok::<_, StoreError>(out)
        }
    });
    futures::future::try_join_all(calls).await
}

/// Appends batches to partitions this broker knows, in one statement that is its own
/// transaction (one PostgreSQL only; migration V20): `options[k]` is what the broker knows
/// of batch k's queue's options. Batches in partition-id order, as [`append_many`]. When a
/// partition is gone or its queue's options changed, nothing is written and the error says
/// [`StoreError::is_stale`]. Returns one verdict per message, batch by batch.
pub async fn append_known(
    client: &Conn,
    batches: &[Batch],
    options: &[&Value],
    dedup: Dedup,
    window: Window,
) -> Result<Vec<Vec<Appended>>, StoreError> {
    let partitions: Vec<Uuid> = batches.iter().map(|b| b.partition).collect();
    let counts: Vec<i32> = batches.iter().map(|b| b.hashes.len() as i32).collect();
    let hashes: Vec<Uuid> = batches
        .iter()
        .flat_map(|b| b.hashes.iter().copied())
        .collect();
    let frames: Vec<&[u8]> = batches
        .iter()
        .flat_map(|b| b.frames.iter().map(Vec::as_slice))
        .collect();
    let careful = dedup == Dedup::Careful;
    let st = client.prepare_cached(APPEND_KNOWN).await?;
    let rows = client
        .query(
            &st,
            &[
                &partitions,
                &options,
                &counts,
                &hashes,
                &frames,
                &careful,
                &window.0,
            ],
        )
        .await?;
    let mut out: Vec<Vec<Appended>> = batches
        .iter()
        .map(|b| vec![Appended::New; b.frames.len()])
        .collect();
    // Only items that were not appended come back: (1-based batch, 1-based item, offset).
    let mut by_batch: Vec<(Vec<usize>, Vec<i64>)> = vec![Default::default(); batches.len()];
    for r in &rows {
        let (items, offsets) = &mut by_batch[r.get::<_, i32>("batch") as usize - 1];
        items.push(r.get::<_, i32>("item") as usize - 1);
        offsets.push(r.get("stored_offset"));
    }
    for (k, (items, offsets)) in by_batch.into_iter().enumerate() {
        let ids = stored_ids(&**client, batches[k].partition, &offsets).await?;
        for (item, id) in items.into_iter().zip(ids) {
            out[k][item] = Appended::Duplicate(id);
        }
    }
    Ok(out)
}

/// The ids of the messages stored at `offsets` of a partition, in the same order; `None`
/// for an offset whose segment has been deleted.
pub(crate) async fn stored_ids(
    tx: &impl GenericClient,
    partition: Uuid,
    offsets: &[i64],
) -> Result<Vec<Option<Uuid>>, StoreError> {
    if offsets.is_empty() {
        return Ok(Vec::new());
    }
    let st = tx.prepare_cached(SEGMENTS_OF).await?;
    let rows = tx.query(&st, &[&partition, &offsets]).await?;
    let ends: Vec<i64> = rows.iter().map(|r| r.get("end_offset")).collect();
    offsets
        .iter()
        .map(|&at| {
            // The first segment ending at or after the offset holds it, unless the segments
            // up to it are gone (deleted whole, from the front of the log).
            let Some(r) = rows.get(ends.partition_point(|&end| end < at)) else {
                return Ok(None);
            };
            let base: i64 = r.get("base_offset");
            if at < base {
                return Ok(None);
            }
            let frame = frames::raw_at(r.get("frames"), (at - base) as usize)?;
            Ok(Some(frames::message_id(frame)?))
        })
        .collect()
}

/// The batch's messages whose transaction ids are in the log: (position, stored id).
pub async fn logged(tx: &Tx<'_>, b: &Batch) -> Result<Vec<(usize, Option<Uuid>)>, StoreError> {
    let st = tx
        .prepare_cached(match tx.layout() {
            Layout::Single => LOGGED,
            Layout::Citus => LOGGED_CITUS,
        })
        .await?;
    let rows = tx.query(&st, &[&b.hashes, &b.partition]).await?;
    let at: Vec<usize> = rows
        .iter()
        .map(|r| r.get::<_, i64>("ord") as usize - 1)
        .collect();
    let offsets: Vec<i64> = rows.iter().map(|r| r.get("offset")).collect();
    let ids = stored_ids(&**tx, b.partition, &offsets).await?;
    Ok(at.into_iter().zip(ids).collect())
}
