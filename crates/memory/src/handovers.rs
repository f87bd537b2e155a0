//! The leases of pop answers not yet handed to a connection, and the releases in progress.
//! A pop registers its lease before it claims; exactly one of "the answer's last frame was
//! handed over" and "the lease is released" takes the registration (one map removal), so a
//! lease is never both delivered and released, nor neither. Deciding and releasing are the
//! service layer's; this is only the ledger.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::watch;
use uuid::Uuid;

use crate::lock;

pub struct Handovers {
    /// Lease id to tenant: one entry per pop answer that has not been delivered or released.
    pending: Mutex<HashMap<Uuid, String>>,
    /// Releases running now; shutdown waits for them before closing the pool.
    releasing: watch::Sender<usize>,
}

impl Default for Handovers {
    fn default() -> Self {
        Handovers {
            pending: Mutex::default(),
            releasing: watch::Sender::new(0),
        }
    }
}

impl Handovers {
    /// Registers a lease about to be claimed for `tenant`.
    pub fn open(&self, lease: Uuid, tenant: &str) {
        lock(&self.pending).insert(lease, tenant.to_string());
    }

    /// Removes the lease from the pending set; `Some` for exactly one caller, which decides
    /// its fate (deliver or release).
    pub fn take(&self, lease: Uuid) -> Option<String> {
        lock(&self.pending).remove(&lease)
    }

    /// Every lease still pending, removed: at shutdown, once no answer can be delivered.
    pub fn take_all(&self) -> Vec<(Uuid, String)> {
        lock(&self.pending).drain().collect()
    }

    /// Counts a release as running, until [`Handovers::end_release`]. The caller pairs them
    /// with a drop guard, so a release that panics is not waited for forever.
    pub fn begin_release(&self) {
        self.releasing.send_modify(|n| *n += 1);
    }

    pub fn end_release(&self) {
        self.releasing.send_modify(|n| *n = n.saturating_sub(1));
    }

    /// Waits until no release is running.
    pub async fn released(&self) {
        let mut running = self.releasing.subscribe();
        let _ = running.wait_for(|n| *n == 0).await;
    }

    /// How many pop answers hold a lease not yet delivered.
    pub fn pending(&self) -> usize {
        lock(&self.pending).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_one_caller_takes_a_lease() {
        let h = Handovers::default();
        let lease = Uuid::now_v7();
        h.open(lease, "t");
        assert_eq!(h.pending(), 1);
        assert_eq!(h.take(lease).as_deref(), Some("t"));
        assert_eq!(h.take(lease), None);
        assert_eq!(h.pending(), 0);
    }

    #[tokio::test]
    async fn shutdown_waits_for_running_releases_only() {
        let h = Handovers::default();
        let quick = std::time::Duration::from_millis(50);
        tokio::time::timeout(quick, h.released())
            .await
            .expect("none running");
        h.begin_release();
        assert!(tokio::time::timeout(quick, h.released()).await.is_err());
        h.end_release();
        tokio::time::timeout(quick, h.released())
            .await
            .expect("ended");
    }
}
