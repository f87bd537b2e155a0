//! In-process wakeups for long-polling pops. A push fires its queue's notifiers after commit;
//! a parked pop waits on one with a timer fallback, so a lost or foreign-broker wakeup only
//! costs latency, never a message (the wakeup is a hint, the database is the truth).
//!
//! A notifier exists only while some pop holds its [`Waiter`]: the last waiter to leave
//! removes it, so the map holds the groups with a pop in flight and nothing else, however
//! many names clients have popped with.

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::lock;

/// Pushes wake at most this many parked pops per consumer group of the queue.
const MAX_WOKEN: usize = 64;

type QueueKey = (String, String);

#[derive(Default)]
pub struct Wakeups {
    /// Per (tenant, queue), per consumer group: the notifier its pops wait on.
    queues: Mutex<HashMap<QueueKey, HashMap<String, Arc<Notify>>>>,
    /// Per tenant: fired by a push to any of its queues, for pops that span queues.
    tenants: Mutex<HashMap<String, Arc<Notify>>>,
}

/// What a waiter waits on.
enum Key {
    Group(QueueKey, String),
    Tenant(String),
}

/// A pop's registration: dereferences to the notifier it waits on; dropping the last one of a
/// notifier removes it from the map.
pub struct Waiter<'a> {
    wakeups: &'a Wakeups,
    key: Key,
    notify: Arc<Notify>,
}

impl Deref for Waiter<'_> {
    type Target = Notify;

    fn deref(&self) -> &Notify {
        &self.notify
    }
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        // Checked under the map's lock, so no one clones it meanwhile: two references (the
        // map's and ours) mean we are the last waiter.
        match &self.key {
            Key::Group(queue, group) => {
                let mut map = lock(&self.wakeups.queues);
                if let Some(groups) = map.get_mut(queue) {
                    if groups.get(group).is_some_and(|n| Arc::strong_count(n) <= 2) {
                        groups.remove(group);
                    }
                    if groups.is_empty() {
                        map.remove(queue);
                    }
                }
            }
            Key::Tenant(tenant) => {
                let mut map = lock(&self.wakeups.tenants);
                if map.get(tenant).is_some_and(|n| Arc::strong_count(n) <= 2) {
                    map.remove(tenant);
                }
            }
        }
    }
}

impl Wakeups {
    /// Registers a pop of `group` on a (tenant, queue).
    pub fn for_group(&self, tenant: &str, queue: &str, group: &str) -> Waiter<'_> {
        let queue = (tenant.to_string(), queue.to_string());
        let notify = lock(&self.queues)
            .entry(queue.clone())
            .or_default()
            .entry(group.to_string())
            .or_default()
            .clone();
        Waiter {
            wakeups: self,
            key: Key::Group(queue, group.to_string()),
            notify,
        }
    }

    /// Registers a pop across the tenant's queues: woken by a push to any of them.
    pub fn for_tenant(&self, tenant: &str) -> Waiter<'_> {
        let notify = lock(&self.tenants)
            .entry(tenant.to_string())
            .or_default()
            .clone();
        Waiter {
            wakeups: self,
            key: Key::Tenant(tenant.to_string()),
            notify,
        }
    }

    /// After a push to `partitions` partitions of a queue: wakes that many parked pops of
    /// every consumer group (one pop can take a partition's whole batch), not every parked
    /// pop. Waking them all sent dozens of consumers into the pool at once for one message,
    /// and pushes queued behind them. A woken pop that finds nothing parks again; one that
    /// is dropped passes its wakeup on to the next waiter (tokio's `Notify`).
    pub fn notify(&self, tenant: &str, queue: &str, partitions: usize) {
        let map = lock(&self.queues);
        if let Some(groups) = map.get(&(tenant.to_string(), queue.to_string())) {
            for n in groups.values() {
                for _ in 0..partitions.clamp(1, MAX_WOKEN) {
                    n.notify_one();
                }
            }
        }
        drop(map);
        if let Some(n) = lock(&self.tenants).get(tenant) {
            n.notify_waiters();
        }
    }

    /// After `group` was left messages to claim on a partition (a nack to retry, a batch acked
    /// in part, a lease released undelivered, a seek back): one parked pop of that group
    /// claims them now rather than at its next recheck. Other groups' cursors did not move,
    /// so they are not woken; nor are pops across a tenant's queues, which would all wake for
    /// every such ack.
    pub fn reopened(&self, tenant: &str, queue: &str, group: &str) {
        let map = lock(&self.queues);
        if let Some(n) = map
            .get(&(tenant.to_string(), queue.to_string()))
            .and_then(|groups| groups.get(group))
        {
            n.notify_one();
        }
    }

    /// After the tenant's pops were paused (spec §15): every parked pop of the tenant wakes,
    /// to answer `paused` at once.
    pub fn paused(&self, tenant: &str) {
        let map = lock(&self.queues);
        for groups in map
            .iter()
            .filter(|((t, _), _)| t == tenant)
            .map(|(_, groups)| groups)
        {
            for n in groups.values() {
                n.notify_waiters();
            }
        }
        drop(map);
        if let Some(n) = lock(&self.tenants).get(tenant) {
            n.notify_waiters();
        }
    }

    /// Notifiers in the map: one per (tenant, queue, group) and per tenant with a pop in
    /// flight.
    pub fn len(&self) -> usize {
        let groups: usize = lock(&self.queues).values().map(HashMap::len).sum();
        groups + lock(&self.tenants).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

    #[tokio::test]
    async fn a_reopened_partition_wakes_one_pop_of_its_group_only() {
        let w = Wakeups::default();
        let (a, b) = (w.for_group("t", "q", "a"), w.for_group("t", "q", "b"));
        let mut in_a: Vec<_> = (0..2).map(|_| Box::pin(a.notified())).collect();
        let mut in_b = vec![Box::pin(b.notified())];
        for n in in_a.iter_mut().chain(in_b.iter_mut()) {
            n.as_mut().enable();
        }
        w.reopened("t", "q", "a");
        w.reopened("t", "q", "nobody-waits");
        w.reopened("t", "elsewhere", "a");
        assert_eq!(woken(&mut in_a).await, 1);
        assert_eq!(woken(&mut in_b).await, 0);
    }

    #[tokio::test]
    async fn pausing_a_tenant_wakes_all_its_parked_pops_and_no_one_else() {
        let w = Wakeups::default();
        let (a, b, all) = (
            w.for_group("t", "q", "a"),
            w.for_group("t", "r", ""),
            w.for_tenant("t"),
        );
        let other = (w.for_group("u", "q", "a"), w.for_tenant("u"));
        let mut mine: Vec<_> = (0..3)
            .map(|_| Box::pin(a.notified()))
            .chain([Box::pin(b.notified()), Box::pin(all.notified())])
            .collect();
        let mut theirs = vec![Box::pin(other.0.notified()), Box::pin(other.1.notified())];
        for n in mine.iter_mut().chain(theirs.iter_mut()) {
            n.as_mut().enable();
        }
        w.paused("t");
        assert_eq!(woken(&mut mine).await, 5);
        assert_eq!(woken(&mut theirs).await, 0);
    }

    #[test]
    fn a_notifier_lives_as_long_as_its_waiters() {
        let w = Wakeups::default();
        let first = w.for_group("t", "q", "g");
        let second = w.for_group("t", "q", "g");
        let tenant = w.for_tenant("t");
        assert_eq!(w.len(), 2, "one notifier per group, one per tenant");
        drop(first);
        assert_eq!(w.len(), 2, "another waiter still holds it");
        drop(second);
        drop(tenant);
        assert!(w.is_empty());
    }

    #[test]
    fn a_million_group_names_leave_nothing_behind() {
        let w = Wakeups::default();
        for i in 0..1_000_000u32 {
            let _waiter = w.for_group("t", "q", &format!("group-{i}"));
            w.notify("t", "q", 1);
        }
        assert!(w.is_empty());
    }
}
