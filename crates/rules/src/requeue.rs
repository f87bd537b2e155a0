//! A requeued dead letter's identity: the copy appended to its partition gets a new message
//! id and a transaction id derived from the message it copies, so the transaction index
//! deduplicates copies as it does pushes.
//!
//! The id is derived from the original *message id*, not from the dead letter or its group:
//! two groups that dead-lettered the same message get one copy between them (the log is
//! shared, every group reads the copy), while a copy that is dead-lettered and requeued
//! again has a message id of its own and is copied again.
//!
//! Architecture Invariant: the derivation never changes, or a requeue retried across an
//! upgrade would append a second copy.

use uuid::Uuid;

/// The transaction id of the copy of message `original`.
pub fn copy_transaction_id(original: Uuid) -> String {
    format!("requeue:{original}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_across_releases() {
        let m = Uuid::parse_str("0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b").unwrap();
        assert_eq!(
            copy_transaction_id(m),
            "requeue:0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b"
        );
    }
}
