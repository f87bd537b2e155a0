//! Queue configuration, the dead letters, and the queue resources (list, detail, depth,
//! deletion).

use serde::Deserialize;
use serde_json::Value;

use super::nullable;

/// `POST /configure`: the queue as configured.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Configured {
    pub configured: bool,
    pub queue_id: String,
    /// The `Default` partition, created if missing.
    pub partition_id: String,
    pub queue: String,
    pub namespace: String,
    pub task: String,
    pub created_at: String,
    pub options: ConfiguredOptions,
}

/// The options a configure answer echoes (those the suites read; it echoes every one).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfiguredOptions {
    pub lease_time: i64,
    pub retry_limit: i64,
    /// Null: never set.
    #[serde(deserialize_with = "nullable")]
    pub dead_letter_queue: Option<bool>,
    /// Null: never set.
    #[serde(deserialize_with = "nullable")]
    pub dlq_after_max_retries: Option<bool>,
}

/// `GET /dlq`.
#[derive(Debug, Clone, Deserialize)]
pub struct DeadLetters {
    pub messages: Vec<DeadLetter>,
    pub pagination: Pagination,
    /// Every dead letter the filter matches.
    pub total: i64,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Pagination {
    pub limit: i64,
    pub offset: i64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeadLetter {
    pub dead_letter_id: i64,
    pub id: String,
    pub transaction_id: String,
    pub partition_id: String,
    pub queue: String,
    pub partition: String,
    pub consumer_group: String,
    pub error_message: String,
    pub retry_count: i32,
    pub data: Value,
    #[serde(deserialize_with = "nullable")]
    pub producer_sub: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub trace_id: Option<String>,
    pub created_at: String,
    pub failed_at: String,
}

/// `GET /resources/queues`.
#[derive(Debug, Clone, Deserialize)]
pub struct QueueList {
    pub queues: Vec<QueueListed>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueListed {
    pub id: String,
    pub name: String,
    pub namespace: String,
    pub task: String,
    pub created_at: String,
    pub partitions: i64,
    pub messages: ListedCounts,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedCounts {
    pub total: i64,
    pub pending: i64,
    pub processing: i64,
    pub dead_letter: i64,
}

/// `GET /resources/queues/:queue`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueDetail {
    pub id: String,
    pub name: String,
    pub namespace: String,
    pub task: String,
    pub created_at: String,
    pub partitions: Vec<PartitionDetail>,
    pub totals: Counts,
    pub pagination: PartitionPage,
    pub stats_age: i64,
}

impl QueueDetail {
    /// The partition named `name`; the test fails without one.
    pub fn partition(&self, name: &str) -> &PartitionDetail {
        self.partitions
            .iter()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("no partition {name} in {self:?}"))
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartitionDetail {
    pub id: String,
    pub name: String,
    pub created_at: String,
    pub stats: Counts,
    #[serde(deserialize_with = "nullable")]
    pub oldest_message: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub newest_message: Option<String>,
}

/// A partition's or a queue's counts, exactly these keys.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Counts {
    pub total: i64,
    pub pending: i64,
    pub processing: i64,
    pub completed: i64,
    pub failed: i64,
    pub dead_letter: i64,
}

/// A page of a queue's partitions, exactly these keys.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartitionPage {
    pub limit: i64,
    pub offset: i64,
    pub total: i64,
}

/// `GET /resources/queues/:queue/depth`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueDepth {
    pub stats_age: i64,
    pub queue: String,
    #[serde(deserialize_with = "nullable")]
    pub group: Option<String>,
    pub pending: i64,
    pub partitions_pending: i64,
    pub conflation: bool,
    pub effective_pending: i64,
    pub partitions: Vec<PartitionPending>,
}

/// One partition of a depth answer, exactly these keys.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartitionPending {
    pub partition: String,
    pub pending: i64,
}

/// `DELETE /resources/queues/:queue`.
#[derive(Debug, Clone, Deserialize)]
pub struct QueueDeleted {
    pub deleted: bool,
    pub queue: String,
    pub existed: bool,
}
