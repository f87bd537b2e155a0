#![allow(dead_code)]
//! Test-side mirrors of the core answers (push, pop, ack), each field spelled as Queen spells
//! it on the wire. A test that reads one of these answers deserializes it here (the harness's
//! `push`, `pop`, `txids`, `ack_batch` do), so a renamed or missing field fails in one place,
//! naming the field, and a test reads `pop.messages[0].transaction_id` rather than indexing
//! JSON by a string the compiler cannot check. Fields that an answer carries only in some
//! cases are `Option`s; the others are required.
//!
//! The broker's own types (crates/http) are the ones that serialize these answers and derive
//! their OpenAPI schemas; `tests/api/openapi.rs` checks sent answers against those schemas,
//! and these mirrors check what the suites read.

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

/// One item of a push answer. Queen's push answer is snake_case, but for `queueName`.
#[derive(Debug, Clone, Deserialize)]
pub struct Pushed {
    pub index: usize,
    pub transaction_id: String,
    /// `queued`, `duplicate`, `buffered` or `failed`.
    pub status: String,
    pub message_id: Option<String>,
    pub partition_id: Option<String>,
    pub error: Option<String>,
}

/// A pop answer: messages, or none (`success: false` with an `error`, or the empty shape).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Popped {
    pub success: bool,
    pub error: Option<String>,
    pub partition_id: Option<String>,
    pub lease_id: Option<String>,
    pub consumer_group: Option<String>,
    pub messages: Vec<PoppedMessage>,
}

/// One message of a pop answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoppedMessage {
    pub id: String,
    pub transaction_id: String,
    pub trace_id: Option<String>,
    pub data: Value,
    pub producer_sub: Option<String>,
    pub created_at: Value,
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

/// `v` read as `T`; a mismatch fails the test, naming the field and showing the answer.
pub fn read<T: DeserializeOwned>(v: &Value) -> T {
    T::deserialize(v).unwrap_or_else(|e| {
        panic!(
            "the answer is not a {}: {e}\n{v}",
            std::any::type_name::<T>()
        )
    })
}
