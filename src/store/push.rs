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

/// Appends `msgs` (already free of duplicates among themselves) to one partition as one
/// segment, inside the caller's transaction. The partition's sequencer row stays locked until
/// that transaction ends, which is what makes offsets visible in commit order. Returns one
/// verdict per message, in order.
pub async fn append(
    tx: &Transaction<'_>,
    partition: Uuid,
    msgs: &[NewMessage],
) -> Result<Vec<Appended>, StoreError> {
    let txids: Vec<&str> = msgs.iter().map(|m| m.transaction_id.as_str()).collect();
    let ids: Vec<Uuid> = msgs.iter().map(|m| m.message_id).collect();
    let frames: Vec<Vec<u8>> = msgs.iter().map(NewMessage::frame).collect();
    let st = tx
        .prepare_cached("SELECT item, message_id FROM regent_append($1, $2, $3, $4)")
        .await?;
    let rows = tx.query(&st, &[&partition, &txids, &ids, &frames]).await?;
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
    Ok(out)
}
