//! In-process wakeups for long-polling pops, and the clock of partition discovery. A push fires its queue's `Notify` after commit;
//! a parked pop waits on it with a timer fallback, so a lost or foreign-broker wakeup only
//! costs latency, never a message (the wakeup is a hint, the database is the truth).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// Pushes wake at most this many parked pops per consumer group of the queue.
const MAX_WOKEN: usize = 64;

#[derive(Default)]
pub struct Wakeups {
    /// Per (tenant, queue), per consumer group.
    queues: Mutex<HashMap<(String, String), HashMap<String, Arc<Notify>>>>,
    /// Per tenant: fired by a push to any of its queues, for pops that span queues.
    tenants: Mutex<HashMap<String, Arc<Notify>>>,
}

impl Wakeups {
    /// The notifier of a consumer group's pops on a (tenant, queue); created on first use.
    pub fn for_group(&self, tenant: &str, queue: &str, group: &str) -> Arc<Notify> {
        let mut map = self.queues.lock().expect("wakeup map poisoned");
        map.entry((tenant.to_string(), queue.to_string()))
            .or_default()
            .entry(group.to_string())
            .or_default()
            .clone()
    }

    /// The notifier fired by a push to any queue of the tenant.
    pub fn for_tenant(&self, tenant: &str) -> Arc<Notify> {
        let mut map = self.tenants.lock().expect("wakeup map poisoned");
        map.entry(tenant.to_string()).or_default().clone()
    }

    /// After a push to `partitions` partitions of a queue: wakes that many parked pops of
    /// every consumer group (one pop can take a partition's whole batch), not every parked
    /// pop. Waking them all sent dozens of consumers into the pool at once for one message,
    /// and pushes queued behind them. A woken pop that finds nothing parks again; one that
    /// is dropped passes its wakeup on to the next waiter (tokio's `Notify`). Only notifiers
    /// that exist are touched, so a push to a queue nobody waits on allocates nothing.
    pub fn notify(&self, tenant: &str, queue: &str, partitions: usize) {
        let map = self.queues.lock().expect("wakeup map poisoned");
        if let Some(groups) = map.get(&(tenant.to_string(), queue.to_string())) {
            for n in groups.values() {
                for _ in 0..partitions.clamp(1, MAX_WOKEN) {
                    n.notify_one();
                }
            }
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

/// The clock of partition discovery: a pop sweeps for partitions its group has no cursor on
/// (an anti-join over the queue's partitions) at most once per interval per (queue, group),
/// and at once when this broker has created a partition in the queue since that group's last
/// sweep. Partitions another broker creates are found within the interval; none is hidden.
/// (Sweeping whenever a claim came back empty made every idle long-poll recheck an
/// anti-join: at 700 msg/s with 8 consumers, most of PostgreSQL's CPU.)
pub struct Sweeps {
    every: std::time::Duration,
    /// Per (queue, group): when it last swept, and the queue's creation count it had seen.
    last: Mutex<HashMap<(uuid::Uuid, String), (std::time::Instant, u64)>>,
    /// Per queue: partitions this broker has created in it.
    created: Mutex<HashMap<uuid::Uuid, u64>>,
}

impl Default for Sweeps {
    fn default() -> Self {
        Sweeps {
            every: std::time::Duration::from_secs(1),
            last: Mutex::default(),
            created: Mutex::default(),
        }
    }
}

impl Sweeps {
    /// Whether a sweep is due now; if so, it counts as done.
    pub fn due(&self, queue: uuid::Uuid, group: &str) -> bool {
        let now = std::time::Instant::now();
        let created = *self
            .created
            .lock()
            .expect("sweep map poisoned")
            .get(&queue)
            .unwrap_or(&0);
        let mut last = self.last.lock().expect("sweep map poisoned");
        match last.get_mut(&(queue, group.to_string())) {
            Some((t, seen)) if now.duration_since(*t) < self.every && *seen == created => false,
            Some(entry) => {
                *entry = (now, created);
                true
            }
            None => {
                last.insert((queue, group.to_string()), (now, created));
                true
            }
        }
    }

    /// Records that this broker committed a new partition in `queue`.
    pub fn created(&self, queue: uuid::Uuid) {
        *self
            .created
            .lock()
            .expect("sweep map poisoned")
            .entry(queue)
            .or_default() += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// How many of `waiters` complete within a short while.
    async fn woken(
        waiters: &mut [std::pin::Pin<Box<tokio::sync::futures::Notified<'_>>>],
    ) -> usize {
        let mut n = 0;
        for w in waiters.iter_mut() {
            if tokio::time::timeout(Duration::from_millis(20), w.as_mut())
                .await
                .is_ok()
            {
                n += 1;
            }
        }
        n
    }

    #[test]
    fn sweeps_are_due_per_interval_and_after_a_creation() {
        let s = Sweeps::default();
        let q = uuid::Uuid::now_v7();
        assert!(s.due(q, "g"), "a group's first pop sweeps");
        assert!(!s.due(q, "g"), "not again within the interval");
        assert!(s.due(q, "other"), "groups sweep independently");
        s.created(q);
        assert!(s.due(q, "g"), "a new partition makes it due");
        assert!(!s.due(q, "g"));
        assert!(s.due(q, "other"));
    }

    #[tokio::test]
    async fn a_push_wakes_one_pop_per_partition_in_every_group() {
        let w = Wakeups::default();
        let (a, b) = (w.for_group("t", "q", "a"), w.for_group("t", "q", "b"));
        let other = w.for_group("t", "elsewhere", "a");
        let mut in_a: Vec<_> = (0..4).map(|_| Box::pin(a.notified())).collect();
        let mut in_b: Vec<_> = (0..4).map(|_| Box::pin(b.notified())).collect();
        let mut idle = vec![Box::pin(other.notified())];
        for n in in_a
            .iter_mut()
            .chain(in_b.iter_mut())
            .chain(idle.iter_mut())
        {
            n.as_mut().enable();
        }
        w.notify("t", "q", 2);
        assert_eq!(woken(&mut in_a).await, 2);
        assert_eq!(woken(&mut in_b).await, 2);
        assert_eq!(woken(&mut idle).await, 0);
    }
}
