//! Dead letters requeued and deleted in bulk (`POST /dlq/requeue`, `/dlq/delete`).

use serde::Deserialize;

use super::nullable;

/// What both bulk routes count.
#[derive(Debug, Clone, Deserialize)]
pub struct BulkTally {
    #[serde(rename = "dryRun")]
    pub dry_run: bool,
    /// Dead letters considered (one item each).
    pub matched: i64,
    /// Dead letters whose message already had a copy.
    pub duplicates: i64,
    pub gone: i64,
    /// More matched than `limit`.
    pub more: bool,
}

/// Either bulk answer, the part both share: the counts, and each item's dead letter and
/// verdict.
#[derive(Debug, Clone, Deserialize)]
pub struct BulkAnswer {
    #[serde(flatten)]
    pub tally: BulkTally,
    pub items: Vec<BulkItem>,
}

/// Which dead letter an item is, where the call found it (null when gone), and its verdict.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BulkItem {
    pub dead_letter_id: i64,
    #[serde(deserialize_with = "nullable")]
    pub transaction_id: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub partition_id: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub consumer_group: Option<String>,
    /// `requeued`, `duplicate`, `deleted` or `gone`.
    pub verdict: String,
}

/// `POST /dlq/requeue`.
#[derive(Debug, Clone, Deserialize)]
pub struct DeadLettersRequeued {
    #[serde(flatten)]
    pub tally: BulkTally,
    pub requeued: i64,
    pub items: Vec<RequeuedItem>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequeuedItem {
    #[serde(flatten)]
    pub item: BulkItem,
    /// The copy: null in a dry run until one exists, and when gone.
    #[serde(deserialize_with = "nullable")]
    pub message_id: Option<String>,
    /// `requeue:<original message id>`; null when gone.
    #[serde(deserialize_with = "nullable")]
    pub new_transaction_id: Option<String>,
}

/// `POST /dlq/delete` (its items are [`BulkItem`]s, with no `messageId`).
#[derive(Debug, Clone, Deserialize)]
pub struct DeadLettersDeleted {
    #[serde(flatten)]
    pub tally: BulkTally,
    pub deleted: i64,
    pub items: Vec<BulkItem>,
}
