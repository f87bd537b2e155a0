//! Message traces (`/traces`), in Queen's snake_case.

use serde::Deserialize;
use serde_json::Value;

use super::nullable;

/// `GET /traces/:partitionId/:transactionId`: the message's traces, oldest first.
#[derive(Debug, Clone, Deserialize)]
pub struct MessageTraces {
    pub traces: Vec<Trace>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Trace {
    pub id: String,
    pub event_type: String,
    /// As sent (`null` is stored as `{}`).
    pub data: Value,
    pub consumer_group: String,
    #[serde(deserialize_with = "nullable")]
    pub worker_id: Option<String>,
    pub created_at: String,
    pub trace_names: Vec<String>,
}
