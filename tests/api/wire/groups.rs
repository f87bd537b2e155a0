//! Consumer groups: the list, one group's cursors, the lagging cursors, seek, subscription,
//! deletion; and the stats refresh.

use serde::Deserialize;

use super::nullable;

/// One element of `GET /consumer-groups`: a (group, queue) with cursors.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupListed {
    pub name: String,
    pub topics: Vec<String>,
    pub queue_name: String,
    pub members: i64,
    pub partitions_with_lag: i64,
    pub total_lag: i64,
    pub max_time_lag: i64,
    /// `Stable`, `Lagging` or `Dead`.
    pub state: String,
    /// `new`, or null.
    #[serde(deserialize_with = "nullable")]
    pub subscription_mode: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub subscription_timestamp: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub subscription_created_at: Option<String>,
}

/// One queue of `GET /consumer-groups/:group` (the answer is keyed by queue name).
#[derive(Debug, Clone, Deserialize)]
pub struct QueueCursors {
    pub partitions: Vec<Cursor>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cursor {
    pub partition: String,
    /// Always null.
    #[serde(deserialize_with = "nullable")]
    pub worker_id: Option<String>,
    /// Always null.
    #[serde(deserialize_with = "nullable")]
    pub last_consumed_at: Option<String>,
    pub total_consumed: i64,
    pub offset_lag: i64,
    pub time_lag_seconds: i64,
    pub lease_active: bool,
}

/// One row of `GET /consumer-groups/lagging` (snake_case, as Queen's).
#[derive(Debug, Clone, Deserialize)]
pub struct LaggingCursor {
    pub consumer_group: String,
    pub queue_name: String,
    pub partition_name: String,
    pub partition_id: String,
    #[serde(deserialize_with = "nullable")]
    pub worker_id: Option<String>,
    pub offset_lag: i64,
    pub time_lag_seconds: i64,
    pub lag_hours: f64,
    pub oldest_unconsumed_at: String,
    #[serde(deserialize_with = "nullable")]
    pub last_consumed_at: Option<String>,
}

/// `POST /consumer-groups/:group/subscription`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resubscribed {
    pub success: bool,
    pub consumer_group: String,
    pub new_timestamp: serde_json::Value,
    pub rows_updated: u64,
}

/// `POST /consumer-groups/:group/queues/:queue/seek`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueSought {
    pub success: bool,
    pub consumer_group: String,
    pub queue_name: String,
    pub seek_to_end: bool,
    #[serde(deserialize_with = "nullable")]
    pub target_timestamp: Option<String>,
    pub partitions_updated: usize,
}

/// `POST /consumer-groups/:group/queues/:queue/partitions/:partition/seek`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartitionSought {
    pub success: bool,
    pub consumer_group: String,
    pub queue_name: String,
    pub partition_name: String,
    pub updated: bool,
    #[serde(deserialize_with = "nullable")]
    pub cursor_moved_to: Option<String>,
}

/// `DELETE /consumer-groups/:group` and its one-queue form.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupDeleted {
    pub success: bool,
    pub consumer_group: String,
    pub deleted_partitions: u64,
    pub metadata_deleted: bool,
    /// The one-queue form.
    pub queue_name: Option<String>,
}

/// `POST /stats/refresh`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Refreshed {
    pub success: bool,
    pub queues: usize,
    pub took_ms: f64,
}
