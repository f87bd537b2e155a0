//! A message: the one type for its fields, from the push that parses it to the pop that
//! answers with it. What the log stores of it is its frame (`frames`).

use chrono::{DateTime, Utc};
use serde_json::value::RawValue;
use uuid::Uuid;

#[derive(Clone, Debug)]
pub struct Message {
    pub message_id: Uuid,
    pub transaction_id: String,
    pub trace_id: Option<Uuid>,
    /// The pushing token's `sub`, from the verified token (never from the body).
    pub producer_sub: Option<String>,
    /// Whether `payload` is the encryption envelope of the client's JSON rather than it.
    pub encrypted: bool,
    /// JSON text, exactly as the client sent it (or its envelope).
    pub payload: Box<RawValue>,
}

/// Equal when every field is, the payload compared as the text it is.
impl PartialEq for Message {
    fn eq(&self, o: &Message) -> bool {
        self.message_id == o.message_id
            && self.transaction_id == o.transaction_id
            && self.trace_id == o.trace_id
            && self.producer_sub == o.producer_sub
            && self.encrypted == o.encrypted
            && self.payload.get() == o.payload.get()
    }
}

/// A message as the log holds it: where, and since when.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredMessage {
    pub offset: i64,
    /// When its segment was appended.
    pub created_at: DateTime<Utc>,
    pub message: Message,
}
