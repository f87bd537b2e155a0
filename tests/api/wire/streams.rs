//! Queen Streams (`/streams/v1`): registration, listings, the cycle, state reads; all in
//! snake_case, as Queen's.

use serde::Deserialize;
use serde_json::Value;

use super::{nullable, Pagination, Pushed};

/// `POST /streams/v1/queries`, registered.
#[derive(Debug, Clone, Deserialize)]
pub struct StreamRegistered {
    pub success: bool,
    pub query_id: String,
    pub name: String,
    pub config_hash: String,
    /// The name was new.
    pub fresh: bool,
    /// The query's state was deleted.
    pub reset: bool,
}

/// `POST /streams/v1/queries`, refused (409): another hash is stored under the name.
#[derive(Debug, Clone, Deserialize)]
pub struct StreamConflict {
    pub success: bool,
    pub query_id: String,
    pub name: String,
    /// `config_hash mismatch: ...`.
    pub error: String,
}

/// A query as registered.
#[derive(Debug, Clone, Deserialize)]
pub struct StreamQuery {
    pub query_id: String,
    pub name: String,
    pub source_queue: String,
    #[serde(deserialize_with = "nullable")]
    pub sink_queue: Option<String>,
    pub config_hash: String,
    pub created_at: String,
    pub updated_at: String,
}

/// `GET /streams/v1/queries`.
#[derive(Debug, Clone, Deserialize)]
pub struct StreamQueries {
    pub queries: Vec<StreamQuery>,
}

/// `GET /streams/v1/queries/:id/partitions`.
#[derive(Debug, Clone, Deserialize)]
pub struct StreamPartitions {
    pub query: StreamQuery,
    pub partitions: Vec<StreamPartition>,
    pub total: i64,
    pub pagination: Pagination,
}

#[derive(Debug, Clone, Deserialize)]
pub struct StreamPartition {
    pub partition_id: String,
    pub partition: String,
    pub state_rows: i64,
    pub cycles: i64,
    pub state_ops: i64,
    #[serde(deserialize_with = "nullable")]
    pub last_cycle_at: Option<String>,
}

/// `POST /streams/v1/cycle`: committed (`success: true`, what it did) or refused
/// (`success: false`, `error`, nothing done).
#[derive(Debug, Clone, Deserialize)]
pub struct Cycled {
    pub success: bool,
    pub query_id: String,
    pub partition_id: String,
    /// The source queue; null when the query was not found.
    #[serde(rename = "queueName", deserialize_with = "nullable")]
    pub queue_name: Option<String>,
    pub state_ops_applied: usize,
    /// One per push item, as the push route answers them.
    pub push_results: Vec<Pushed>,
    #[serde(deserialize_with = "nullable")]
    pub ack_result: Option<CycleAck>,
    /// Refused cycles.
    pub error: Option<String>,
}

/// What a cycle's ack did, exactly these keys.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CycleAck {
    pub success: bool,
    pub count: i64,
    pub lease_released: bool,
    pub dlq: bool,
}

/// `POST /streams/v1/state/get`.
#[derive(Debug, Clone, Deserialize)]
pub struct StreamState {
    pub success: bool,
    pub rows: Vec<StateRow>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct StateRow {
    pub key: String,
    /// As the cycle wrote it.
    pub value: Value,
    pub updated_at: String,
}
