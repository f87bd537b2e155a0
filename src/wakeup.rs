//! In-process wakeups for long-polling pops, and the clock of partition discovery. A push fires its queue's `Notify` after commit;
//! a parked pop waits on it with a timer fallback, so a lost or foreign-broker wakeup only
//! costs latency, never a message (the wakeup is a hint, the database is the truth).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

#[derive(Default)]
pub struct Wakeups {
    queues: Mutex<HashMap<(String, String), Arc<Notify>>>,
    /// Per tenant: fired by a push to any of its queues, for pops that span queues.
    tenants: Mutex<HashMap<String, Arc<Notify>>>,
}

impl Wakeups {
    /// The notifier for a (tenant, queue); created on first use.
    pub fn for_queue(&self, tenant: &str, queue: &str) -> Arc<Notify> {
        let mut map = self.queues.lock().expect("wakeup map poisoned");
        map.entry((tenant.to_string(), queue.to_string()))
            .or_default()
            .clone()
    }

    /// The notifier fired by a push to any queue of the tenant.
    pub fn for_tenant(&self, tenant: &str) -> Arc<Notify> {
        let mut map = self.tenants.lock().expect("wakeup map poisoned");
        map.entry(tenant.to_string()).or_default().clone()
    }

    /// Wakes every pop parked on the queue. Only notifiers that exist are touched, so a push
    /// to a queue nobody waits on allocates nothing.
    pub fn notify(&self, tenant: &str, queue: &str) {
        let map = self.queues.lock().expect("wakeup map poisoned");
        if let Some(n) = map.get(&(tenant.to_string(), queue.to_string())) {
            n.notify_waiters();
        }
        drop(map);
        if let Some(n) = self
            .tenants
            .lock()
            .expect("wakeup map poisoned")
            .get(tenant)
        {
            n.notify_waiters();
        }
    }
}

/// A bounded clock for background discovery: a pop sweeps for partitions its group has no
/// cursor on at most once per interval per (queue, group), instead of on every call; a pop
/// that finds nothing sweeps regardless. Discovery of a new partition by a busy group lags by
/// at most the interval, and never hides it.
pub struct Sweeps {
    every: std::time::Duration,
    last: Mutex<HashMap<(uuid::Uuid, String), std::time::Instant>>,
}

impl Default for Sweeps {
    fn default() -> Self {
        Sweeps {
            every: std::time::Duration::from_secs(1),
            last: Mutex::default(),
        }
    }
}

impl Sweeps {
    /// Whether a sweep is due now; if so, it counts as done.
    pub fn due(&self, queue: uuid::Uuid, group: &str) -> bool {
        let now = std::time::Instant::now();
        let mut last = self.last.lock().expect("sweep map poisoned");
        match last.get_mut(&(queue, group.to_string())) {
            Some(t) if now.duration_since(*t) < self.every => false,
            Some(t) => {
                *t = now;
                true
            }
            None => {
                last.insert((queue, group.to_string()), now);
                true
            }
        }
    }
}
