#![allow(dead_code)]
//! Test-side mirrors of the broker's answers, each field spelled as Queen spells it on the
//! wire, one file of `wire/` per family of routes. A test that reads one of these answers
//! deserializes it here (the harness's `push`, `pop`, `txids`, `ack_batch` do), so a renamed
//! or missing field fails in one place, naming the field, and a test reads
//! `pop.messages[0].transaction_id` rather than indexing JSON by a string the compiler cannot
//! check. Fields that an answer carries only in some cases are `Option`s; fields it always
//! carries but may set to null are `Option`s read with [`nullable`], which refuses them
//! missing; the others are required.
//!
//! The broker's own types (crates/http) are the ones that serialize these answers and derive
//! their OpenAPI schemas; `tests/api/openapi.rs` checks sent answers against those schemas,
//! and these mirrors check what the suites read. Where a test checks the raw shape of an
//! answer (a key absent, null against missing, an exact key set, an error text), it compares
//! the JSON itself, not a mirror.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

mod dlq;
mod ephemeral;
mod groups;
mod kv;
mod push_pop;
mod queues;
mod streams;
mod timers;
mod traces;
mod transaction;

pub use dlq::*;
pub use ephemeral::*;
pub use groups::*;
pub use kv::*;
pub use push_pop::*;
pub use queues::*;
pub use streams::*;
pub use timers::*;
pub use traces::*;
pub use transaction::*;

/// `v` read as `T`; a mismatch fails the test, naming the field and showing the answer.
pub fn read<T: DeserializeOwned>(v: &Value) -> T {
    T::deserialize(v).unwrap_or_else(|e| {
        panic!(
            "the answer is not a {}: {e}\n{v}",
            std::any::type_name::<T>()
        )
    })
}

/// A field the answer always carries, null or not: `#[serde(deserialize_with = "nullable")]`
/// on an `Option` makes its absence an error (serde's default reads a missing `Option` as
/// `None`, so a renamed field would pass unnoticed).
pub fn nullable<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d)
}
