//! Hooks for the fault tests (`tests/faults`) alone: each is off unless its environment
//! variable is set when the broker starts, and costs the hot path one branch on an `Option`
//! otherwise. They are not configuration: nothing a deployment should ever set.

use crate::push::{PushItem, Verdict};

/// `REGENT_TEST_ABORT_AFTER_COMMIT=<transactionId>`: see [`AbortAfterCommit`].
const ABORT_AFTER_COMMIT: &str = "REGENT_TEST_ABORT_AFTER_COMMIT";

/// The process aborts right after the push transaction (or stream cycle) that stored an item
/// with this transaction id has committed, before anything is announced or answered: the crash window
/// between a push's COMMIT and its answer, made deterministic. A retried push of the id is a
/// duplicate, so it passes (the broker restarted with the variable still set does not abort
/// again for it).
pub(crate) struct AbortAfterCommit(String);

impl AbortAfterCommit {
    pub(crate) fn from_env() -> Option<AbortAfterCommit> {
        let id = std::env::var(ABORT_AFTER_COMMIT)
            .ok()
            .filter(|v| !v.is_empty())?;
        tracing::warn!(
            transaction_id = %id,
            "test hook {ABORT_AFTER_COMMIT} is set: this broker aborts once a push of it commits"
        );
        Some(AbortAfterCommit(id))
    }

    /// Aborts if this committed push stored the hook's transaction id.
    pub(crate) fn check(&self, items: &[PushItem], verdicts: &[Verdict]) {
        let stored = items.iter().zip(verdicts).any(|(item, v)| {
            item.message.transaction_id == self.0
                && matches!(v, Verdict::Queued { .. } | Verdict::Buffered { .. })
        });
        if stored {
            eprintln!("{ABORT_AFTER_COMMIT}: {} committed; aborting", self.0);
            std::process::abort();
        }
    }
}
