//! Appending to a partition's log.

use deadpool_postgres::Transaction;
use serde_json::value::RawValue;
use uuid::Uuid;

use super::frames::{self, Frame};
use super::tx_hash::tx_hash;
use super::StoreError;

/// A message about to be appended. The payload is JSON text, stored as given (already
/// encrypted when the queue asks for it).
#[derive(Clone, Debug)]
pub struct NewMessage {
    pub message_id: Uuid,
    pub transaction_id: String,
    pub payload: Box<RawValue>,
    pub trace_id: Option<Uuid>,
    pub producer_sub: Option<String>,
    pub encrypted: bool,
}

impl NewMessage {
    fn frame(&self) -> Vec<u8> {
        Frame {
            message_id: self.message_id,
            transaction_id: &self.transaction_id,
            trace_id: self.trace_id,
            producer_sub: self.producer_sub.as_deref(),
            encrypted: self.encrypted,
            payload: self.payload.get().as_bytes(),
        }
        .encode()
    }
}

/// The verdict for one appended message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Appended {
    /// The new message's id, or for a duplicate the id of the message already stored.
    pub message_id: Uuid,
    pub duplicate: bool,
}

const APPEND: &str = "SELECT item, stored_offset FROM regent_append($1, $2, $3, $4)";

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

/// For each offset, the segment holding it: where a duplicate's stored message id is read.
const SEGMENTS_OF: &str = "SELECT s.base_offset, s.frames
       FROM unnest($2::bigint[]) WITH ORDINALITY AS o(at, ord)
      CROSS JOIN LATERAL (SELECT base_offset, frames FROM segments
                           WHERE partition_id = $1 AND end_offset >= o.at
                           ORDER BY end_offset LIMIT 1) s
      ORDER BY o.ord";

/// Appends batches to several partitions inside the caller's transaction, each batch (free
/// of duplicates among itself) as one segment. The calls are pipelined on the connection in
/// the order given, which must be partition-id order (the global lock order); each
/// partition's sequencer row stays locked until the transaction ends, which is what makes
/// offsets visible in commit order. Returns one verdict per message, batch by batch.
pub async fn append_many(
    tx: &Transaction<'_>,
    batches: &[(Uuid, &[NewMessage])],
    dedup: Dedup,
) -> Result<Vec<Vec<Appended>>, StoreError> {
    let careful = dedup == Dedup::Careful;
    let st = tx.prepare_cached(APPEND).await?;
    let calls = batches.iter().map(|(partition, msgs)| {
        let st = &st;
        async move {
            let hashes: Vec<Uuid> = msgs
                .iter()
                .map(|m| tx_hash(*partition, &m.transaction_id))
                .collect();
            let frames: Vec<Vec<u8>> = msgs.iter().map(NewMessage::frame).collect();
            let rows = tx
                .query(st, &[partition, &hashes, &frames, &careful])
                .await?;
            let mut out: Vec<Appended> = msgs
                .iter()
                .map(|m| Appended {
                    message_id: m.message_id,
                    duplicate: false,
                })
                .collect();
            if rows.is_empty() {
                return Ok(out);
            }
            // Only items that were not appended come back, with the offset already holding
            // their transaction id; the verdict names the message stored there.
            let items: Vec<usize> = rows
                .iter()
                .map(|r| r.get::<_, i32>(0) as usize - 1)
                .collect();
            let offsets: Vec<i64> = rows.iter().map(|r| r.get(1)).collect();
            let ids = stored_ids(tx, *partition, &offsets).await?;
            for (item, message_id) in items.into_iter().zip(ids) {
                out[item] = Appended {
                    message_id,
                    duplicate: true,
                };
            }
            Ok::<_, StoreError>(out)
        }
    });
    futures::future::try_join_all(calls).await
}

/// The ids of the messages stored at `offsets` of a partition, in the same order.
async fn stored_ids(
    tx: &Transaction<'_>,
    partition: Uuid,
    offsets: &[i64],
) -> Result<Vec<Uuid>, StoreError> {
    let st = tx.prepare_cached(SEGMENTS_OF).await?;
    let rows = tx.query(&st, &[&partition, &offsets]).await?;
    if rows.len() != offsets.len() {
        return Err(StoreError::Corrupt);
    }
    rows.iter()
        .zip(offsets)
        .map(|(r, at)| {
            let base: i64 = r.get(0);
            let segment: &[u8] = r.get(1);
            let raw = frames::raw_at(segment, (at - base) as usize)?;
            let frame = frames::iter(raw).next().ok_or(StoreError::Corrupt)??;
            Ok(frame.message_id)
        })
        .collect()
}

/// Appends one batch to one partition (see [`append_many`]).
pub async fn append(
    tx: &Transaction<'_>,
    partition: Uuid,
    msgs: &[NewMessage],
) -> Result<Vec<Appended>, StoreError> {
    let mut out = append_many(tx, &[(partition, msgs)], Dedup::Careful).await?;
    Ok(out.pop().expect("one batch"))
}
