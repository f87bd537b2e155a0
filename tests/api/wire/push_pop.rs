//! Push, pop, ack, lease extension, and any answer that lists messages.

use serde::Deserialize;
use serde_json::Value;

use super::nullable;

/// One item of a push answer. Queen's push answer is snake_case, but for `queueName`.
#[derive(Debug, Clone, Deserialize)]
pub struct Pushed {
    pub index: usize,
    pub transaction_id: String,
    /// `queued`, `duplicate`, `buffered` or `failed`.
    pub status: String,
    pub message_id: Option<String>,
    pub partition_id: Option<String>,
    /// Queued items only (possibly null).
    pub trace_id: Option<String>,
    /// Queued and duplicate items.
    #[serde(rename = "queueName")]
    pub queue_name: Option<String>,
    pub error: Option<String>,
}

/// A pop answer: messages, or none (`success: false` with an `error`, or the empty shape).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Popped {
    pub success: bool,
    pub error: Option<String>,
    pub queue: Option<String>,
    pub partition: Option<String>,
    pub partition_id: Option<String>,
    pub lease_id: Option<String>,
    pub consumer_group: Option<String>,
    /// With messages.
    pub partitions_claimed: Option<usize>,
    pub messages: Vec<PoppedMessage>,
    /// The empty shape, while the partition's window buffer fills.
    pub window_buffer_active: Option<bool>,
    /// The empty shape, under pop maintenance.
    pub paused: Option<bool>,
    /// With `autopilot=true`.
    pub autopilot: Option<Autopilot>,
}

/// What an autopilot pop echoes.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Autopilot {
    pub partitions: i64,
    pub batch: i64,
    pub wait_ms: u64,
}

/// One message of a pop answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoppedMessage {
    pub id: String,
    pub transaction_id: String,
    #[serde(deserialize_with = "nullable")]
    pub trace_id: Option<String>,
    pub data: Value,
    #[serde(deserialize_with = "nullable")]
    pub producer_sub: Option<String>,
    /// Microseconds: `2026-04-26T10:59:28.267966Z`.
    pub created_at: String,
    pub partition_id: String,
    pub partition: String,
    pub queue: String,
    pub lease_id: String,
    pub consumer_group: String,
}

/// One item of an ack answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Acked {
    pub index: usize,
    pub transaction_id: String,
    pub success: bool,
    pub error: Option<String>,
    pub lease_released: bool,
    pub dlq: bool,
    pub noop: bool,
}

/// Any answer that lists messages (a pop, the dead letters, a listing): what the harness's
/// `txids` and `data` read of each.
#[derive(Debug, Clone, Deserialize)]
pub struct Listed {
    pub messages: Vec<ListedMessage>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedMessage {
    pub transaction_id: String,
    pub data: Value,
}

/// `POST /lease/:id/extend`.
#[derive(Debug, Clone, Deserialize)]
pub struct LeaseExtended {
    #[serde(rename = "leaseId")]
    pub lease_id: String,
    pub success: bool,
    /// (partition, group) rows renewed.
    pub renewed: u64,
    #[serde(rename = "newExpiresAt", deserialize_with = "nullable")]
    pub new_expires_at: Option<String>,
    #[serde(rename = "expiresAt", deserialize_with = "nullable")]
    pub expires_at: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub lease_expires_at: Option<String>,
    /// `Lease not found`, `Lease already expired`.
    #[serde(deserialize_with = "nullable")]
    pub error: Option<String>,
}

/// `GET /messages/:partitionId/:transactionId`: one message, as the listing shows it, with its
/// payload (the fields the suites read, and the ones every such answer carries).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageDetail {
    #[serde(flatten)]
    pub listed: MessageListed,
    pub payload: Value,
    pub is_encrypted: bool,
}

/// `GET /messages`: a page of messages (no payloads); the fields the suites read, and the ones
/// every listed message carries.
#[derive(Debug, Clone, Deserialize)]
pub struct MessageListing {
    pub messages: Vec<MessageListed>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageListed {
    pub id: String,
    pub transaction_id: String,
    pub partition_id: String,
    pub queue: String,
    pub partition: String,
    /// `pending`, `processing`, `completed` or `dead_letter`.
    pub status: String,
    pub created_at: String,
}
