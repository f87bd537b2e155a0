//! Appending to a partition's log.

use deadpool_postgres::Transaction;
use serde_json::value::RawValue;
use uuid::Uuid;

use super::frames::Frame;
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

const APPEND: &str = "SELECT item, message_id FROM regent_append($1, $2, $3, $4)";

/// Appends batches to several partitions inside the caller's transaction, each batch (free
/// of duplicates among itself) as one segment. The calls are pipelined on the connection in
/// the order given, which must be partition-id order (the global lock order); each
/// partition's sequencer row stays locked until the transaction ends, which is what makes
/// offsets visible in commit order. Returns one verdict per message, batch by batch.
pub async fn append_many(
    tx: &Transaction<'_>,
    batches: &[(Uuid, &[NewMessage])],
) -> Result<Vec<Vec<Appended>>, StoreError> {
    let st = tx.prepare_cached(APPEND).await?;
    let calls = batches.iter().map(|(partition, msgs)| {
        let st = &st;
        async move {
            let txids: Vec<&str> = msgs.iter().map(|m| m.transaction_id.as_str()).collect();
            let ids: Vec<Uuid> = msgs.iter().map(|m| m.message_id).collect();
            let frames: Vec<Vec<u8>> = msgs.iter().map(NewMessage::frame).collect();
            let rows = tx.query(st, &[partition, &txids, &ids, &frames]).await?;
            // Only items that were not appended come back, with the id already stored.
            let mut out: Vec<Appended> = msgs
                .iter()
                .map(|m| Appended {
                    message_id: m.message_id,
                    duplicate: false,
                })
                .collect();
            for r in rows {
                let item: i32 = r.get(0);
                out[(item - 1) as usize] = Appended {
                    message_id: r.get(1),
                    duplicate: true,
                };
            }
            Ok::<_, StoreError>(out)
        }
    });
    futures::future::try_join_all(calls).await
}

/// Appends one batch to one partition (see [`append_many`]).
pub async fn append(
    tx: &Transaction<'_>,
    partition: Uuid,
    msgs: &[NewMessage],
) -> Result<Vec<Appended>, StoreError> {
    let mut out = append_many(tx, &[(partition, msgs)]).await?;
    Ok(out.pop().expect("one batch"))
}
