//! Ephemeral queues (`/ephemeral`): the declaration, a pop, the acks, the listing, a depth.

use serde::Deserialize;
use serde_json::Value;

/// `POST /ephemeral/configure`.
#[derive(Debug, Clone, Deserialize)]
pub struct EphemeralConfigured {
    pub queue: String,
    /// `declared`.
    pub tier: String,
    pub options: EphemeralOptions,
}

/// A queue's options in force, exactly these keys.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EphemeralOptions {
    pub max_bytes: i64,
    pub max_length: i64,
    /// `reject` or `dropOldest`.
    pub policy: String,
    pub ttl_seconds: i64,
    pub lease_seconds: i64,
    pub retry_limit: i64,
    pub window_buffer: WindowBuffer,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowBuffer {
    pub ms: i64,
    pub count: i64,
}

/// `GET /ephemeral/pop`.
#[derive(Debug, Clone, Deserialize)]
pub struct EphemeralPopped {
    pub queue: String,
    /// Empty when there was nothing.
    pub messages: Vec<EphemeralMessage>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EphemeralMessage {
    /// Opaque; names the queue's incarnation.
    pub id: String,
    pub partition: String,
    /// As pushed.
    pub payload: Value,
    /// Deliveries to the group, this one included.
    pub attempts: i32,
}

/// `POST /ephemeral/ack`.
#[derive(Debug, Clone, Deserialize)]
pub struct EphemeralAcks {
    pub results: Vec<EphemeralAcked>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EphemeralAcked {
    pub id: String,
    /// `acked`, `redelivered`, `stale` or `unknown`.
    pub outcome: String,
}

/// `GET /ephemeral/queues`.
#[derive(Debug, Clone, Deserialize)]
pub struct EphemeralQueues {
    pub queues: Vec<EphemeralQueue>,
    pub count: usize,
}

#[derive(Debug, Clone, Deserialize)]
pub struct EphemeralQueue {
    pub queue: String,
    /// `declared` or `implicit`.
    pub tier: String,
    /// Messages held.
    pub depth: i64,
    pub bytes: i64,
    pub partitions: i64,
    pub groups: i64,
    pub drops: EphemeralDrops,
    pub options: EphemeralOptions,
}

/// What a queue dropped, by reason.
#[derive(Debug, Clone, Deserialize)]
pub struct EphemeralDrops {
    pub bounds: i64,
    pub ttl: i64,
    pub retry: i64,
}

/// `GET /ephemeral/queues/:queue/depth`.
#[derive(Debug, Clone, Deserialize)]
pub struct EphemeralDepth {
    pub queue: String,
    /// `declared` or `implicit`.
    pub tier: String,
    pub pending: i64,
    /// Messages held.
    pub depth: i64,
    pub bytes: i64,
    #[serde(rename = "partitionsPending")]
    pub partitions_pending: usize,
    pub partitions: Vec<EphemeralPartition>,
    pub groups: Vec<EphemeralGroup>,
}

/// One partition of a depth, exactly these keys.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EphemeralPartition {
    pub partition: String,
    pub pending: i64,
    pub bytes: i64,
}

/// One group of a depth, exactly these keys.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EphemeralGroup {
    pub group: String,
    pub pending: i64,
    pub leased: i64,
}
