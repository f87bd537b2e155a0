//! The transaction route (`POST /transaction`).

use serde::Deserialize;
use serde_json::Value;

use super::{nullable, KvPrecondition};

/// `POST /transaction`: one result per operation, in order, each read as the shape its
/// operation's `type` answers (`TxAcked`, `TxPushed`, `TxRider`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Transacted {
    pub transaction_id: String,
    pub success: bool,
    pub error: Option<String>,
    /// `kv_precondition`, with `precondition` beside it.
    pub reason: Option<String>,
    #[serde(flatten)]
    pub precondition: Option<KvPrecondition>,
    pub results: Vec<Value>,
}

/// An ack of a transaction.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TxAcked {
    pub index: usize,
    #[serde(rename = "type")]
    pub kind: String,
    pub success: bool,
    pub transaction_id: String,
    #[serde(deserialize_with = "nullable")]
    pub error: Option<String>,
    pub dlq: bool,
    pub lease_released: bool,
    pub noop: bool,
}

/// A push of a transaction: stored (`messageId`, `partitionId`, `status`) or refused
/// (`success: false`, `error`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TxPushed {
    pub index: usize,
    #[serde(rename = "type")]
    pub kind: String,
    pub success: bool,
    pub transaction_id: String,
    pub queue_name: String,
    pub message_id: Option<String>,
    pub partition_id: Option<String>,
    pub status: Option<String>,
    pub error: Option<String>,
}

/// A key/value or timer operation of a transaction: `index` and `type` beside the route's own
/// result (read `result` as a `KvGot`, `KvWritten`, `TimerResult`, ...).
#[derive(Debug, Clone, Deserialize)]
pub struct TxRider {
    pub index: usize,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(flatten)]
    pub result: Value,
}
