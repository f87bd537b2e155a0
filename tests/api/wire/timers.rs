//! Timers (`/timers`): the batch's results, a peek, a listing, the queues with timers.

use serde::Deserialize;

use super::nullable;

/// `POST /timers`.
#[derive(Debug, Clone, Deserialize)]
pub struct TimerBatch {
    pub results: Vec<TimerResult>,
}

/// One operation's result (also a timer operation of a transaction).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimerResult {
    pub ok: bool,
    /// `scheduled`, `rescheduled`, `cancelled`, `absent` or `too_late`.
    pub status: String,
    pub queue: String,
    pub timer_key: String,
    #[serde(deserialize_with = "nullable")]
    pub txn: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub message_id: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub deliver_at: Option<String>,
}

/// A pending timer.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimerRow {
    pub queue: String,
    pub timer_key: String,
    pub txn: String,
    pub message_id: String,
    pub partition: String,
    pub deliver_at: String,
    pub attempts: i32,
    pub created_at: String,
    pub updated_at: String,
}

/// A peek: `found`, and when found the row, its payload and whether it is encrypted.
#[derive(Debug, Clone, Deserialize)]
pub struct TimerPeek {
    pub found: bool,
    #[serde(flatten)]
    pub timer: Option<TimerPeeked>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TimerPeeked {
    #[serde(flatten)]
    pub row: TimerRow,
    pub payload: String,
    pub encrypted: bool,
}

/// A listing of pending timers.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimerList {
    pub rows: Vec<TimerRow>,
    pub truncated: bool,
    #[serde(deserialize_with = "nullable")]
    pub next_after: Option<String>,
}

/// The queues with pending timers.
#[derive(Debug, Clone, Deserialize)]
pub struct TimerQueues {
    pub queues: Vec<TimerQueue>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimerQueue {
    pub queue: String,
    pub pending: i64,
    pub next_deliver_at: String,
}
