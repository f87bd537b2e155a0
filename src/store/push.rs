//! Appending to a partition's log.

use deadpool_postgres::Transaction;
use serde_json::{Map, Value};
use uuid::Uuid;

use super::StoreError;

/// A message about to be appended. The payload is stored as given (already encrypted when
/// the queue asks for it).
#[derive(Clone, Debug)]
pub struct NewMessage {
    pub message_id: Uuid,
    pub transaction_id: String,
    pub payload: Value,
    pub trace_id: Option<Uuid>,
    pub producer_sub: Option<String>,
    pub encrypted: bool,
}

/// The verdict for one appended message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Appended {
    /// The new message's id, or for a duplicate the id of the message already stored.
    pub message_id: Uuid,
    pub duplicate: bool,
}

/// A frame is one message inside a segment. Short keys: they are repeated per message.
pub(crate) mod frame {
    pub const ID: &str = "i";
    pub const TXID: &str = "t";
    pub const PAYLOAD: &str = "p";
    pub const TRACE: &str = "r";
    pub const SUB: &str = "s";
    pub const ENCRYPTED: &str = "e";
}

fn frame_of(m: &NewMessage) -> Value {
    let mut f = Map::with_capacity(6);
    f.insert(frame::ID.into(), Value::String(m.message_id.to_string()));
    f.insert(frame::TXID.into(), Value::String(m.transaction_id.clone()));
    f.insert(frame::PAYLOAD.into(), m.payload.clone());
    if let Some(t) = m.trace_id {
        f.insert(frame::TRACE.into(), Value::String(t.to_string()));
    }
    if let Some(s) = &m.producer_sub {
        f.insert(frame::SUB.into(), Value::String(s.clone()));
    }
    if m.encrypted {
        f.insert(frame::ENCRYPTED.into(), Value::Bool(true));
    }
    Value::Object(f)
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
    let frames = Value::Array(msgs.iter().map(frame_of).collect());
    let st = tx
        .prepare_cached("SELECT item, message_id, duplicate FROM regent_append($1, $2, $3, $4)")
        .await?;
    let rows = tx.query(&st, &[&partition, &txids, &ids, &frames]).await?;
    let mut out: Vec<Option<Appended>> = vec![None; msgs.len()];
    for r in rows {
        let item: i32 = r.get(0);
        out[(item - 1) as usize] = Some(Appended {
            message_id: r.get(1),
            duplicate: r.get(2),
        });
    }
    Ok(out
        .into_iter()
        .map(|a| a.expect("regent_append answers for every item"))
        .collect())
}
