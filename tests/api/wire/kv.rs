//! The key/value route (`POST /kv`): each result read as the shape its operation answers.

use serde::Deserialize;
use serde_json::Value;

use super::nullable;

/// `POST /kv`: one result per operation, in order; each is read as one of the shapes below.
#[derive(Debug, Clone, Deserialize)]
pub struct KvAnswer {
    pub results: Vec<Value>,
}

/// A stored row, as `get`, `getMany`, `getPrefix` and an applied write answer it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KvRow {
    pub key: String,
    /// Absent where the operation asked for keys only.
    pub value: Option<Value>,
    pub version: i64,
    #[serde(deserialize_with = "nullable")]
    pub expires_at: Option<String>,
    pub updated_at: String,
}

/// A `get`: found (with the row) or not (`found: false`, the key).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KvGot {
    pub found: bool,
    pub key: String,
    pub value: Option<Value>,
    pub version: Option<i64>,
    pub expires_at: Option<String>,
    pub updated_at: Option<String>,
}

/// A `getMany`.
#[derive(Debug, Clone, Deserialize)]
pub struct KvMany {
    pub rows: Vec<KvRow>,
    pub missing: Vec<String>,
    pub truncated: bool,
}

/// A `getPrefix`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KvPrefix {
    pub rows: Vec<KvRow>,
    pub truncated: bool,
    #[serde(deserialize_with = "nullable")]
    pub next_after: Option<String>,
}

/// A write (`put`, `incr`, `delete`, ...): applied, with the row (a delete: the key and the
/// version it removed), or refused with a `reason` and the value and version that refused it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KvWritten {
    pub applied: bool,
    pub key: String,
    pub version: i64,
    pub value: Option<Value>,
    /// Applied writes of a row.
    pub expires_at: Option<String>,
    /// Applied writes of a row.
    pub updated_at: Option<String>,
    /// Refused writes: `version`, `absent`, `max`, `min` or `not_a_number`.
    pub reason: Option<String>,
}

/// A refused precondition: the `409` of `/kv` (with `error` and `code`), and the failed
/// transaction's answer (beside `success`, `reason`, `results`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KvPrecondition {
    pub failed_index: usize,
    pub kv_reason: String,
    pub value: Value,
    pub version: i64,
}
