//! In-process wakeups for long-polling pops, and the clock of partition discovery. A push fires its queue's `Notify` after commit;
//! a parked pop waits on it with a timer fallback, so a lost or foreign-broker wakeup only
//! costs latency, never a message (the wakeup is a hint, the database is the truth).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// Pushes wake at most this many parked pops per consumer group of the queue.
const MAX_WOKEN: usize = 64;

/// Per consumer group: the notifier its parked pops wait on.
type GroupNotifiers = HashMap<String, Arc<Notify>>;

#[derive(Default)]
pub struct Wakeups {
    /// Per (tenant, queue).
    queues: Mutex<HashMap<(String, String), GroupNotifiers>>,
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

    /// After `group` was left messages to claim on a partition (a nack to retry, a batch acked
    /// in part, a lease released undelivered, a seek back): one parked pop of that group
    /// claims them now rather than at its next recheck. Other groups' cursors did not move, so they are not woken;
    /// nor are pops across a tenant's queues, which would all wake for every such ack.
    pub fn reopened(&self, tenant: &str, queue: &str, group: &str) {
        let map = self.queues.lock().expect("wakeup map poisoned");
        if let Some(n) = map
            .get(&(tenant.to_string(), queue.to_string()))
            .and_then(|groups| groups.get(group))
        {
            n.notify_one();
        }
    }
}

/// The clock of partition discovery: a pop gives its group cursors on partitions it has none
/// on. Over every partition of the queue (an anti-join) at most once per interval per (queue,
/// group); in between, only on the partitions this broker created since the group's last
/// look, by primary key. Partitions another broker creates are found within the interval;
/// none is hidden. (Sweeping whenever a claim came back empty, or everything after any
/// creation, made pops run the anti-join over 10,000 partitions most of the time.)
pub struct Sweeps {
    every: std::time::Duration,
    /// Per (queue, group): when it last swept everything, and how many creations it had seen.
    last: Mutex<HashMap<(uuid::Uuid, String), (std::time::Instant, u64)>>,
    /// Per queue: how many partitions this broker has created in it, and the latest ones.
    created: Mutex<HashMap<uuid::Uuid, (u64, std::collections::VecDeque<uuid::Uuid>)>>,
}

/// Created partitions remembered per queue; a group further behind sweeps everything.
const CREATED_KEPT: usize = 1024;

/// What a pop should sweep.
#[derive(Debug, PartialEq, Eq)]
pub enum Due {
    No,
    All,
    Only(Vec<uuid::Uuid>),
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
    /// What a pop of `group` on `queue` should sweep now; it counts as done.
    pub fn due(&self, queue: uuid::Uuid, group: &str) -> Due {
        let now = std::time::Instant::now();
        let created = self.created.lock().expect("sweep map poisoned");
        let (count, recent) = match created.get(&queue) {
            Some((n, ids)) => (*n, Some(ids)),
            None => (0, None),
        };
        let mut last = self.last.lock().expect("sweep map poisoned");
        let key = (queue, group.to_string());
        let Some((at, seen)) = last.get_mut(&key) else {
            last.insert(key, (now, count));
            return Due::All;
        };
        if now.duration_since(*at) >= self.every {
            (*at, *seen) = (now, count);
            return Due::All;
        }
        let missed = (count - *seen) as usize;
        *seen = count;
        match recent {
            _ if missed == 0 => Due::No,
            Some(ids) if missed <= ids.len() => {
                Due::Only(ids.iter().skip(ids.len() - missed).copied().collect())
            }
            _ => {
                *at = now;
                Due::All
            }
        }
    }

    /// Forgets when `group` last swept `queue`: its cursors were deleted, and its next pop
    /// must give it new ones at once rather than after the interval.
    pub fn forget(&self, queue: uuid::Uuid, group: &str) {
        let mut last = self.last.lock().expect("sweep map poisoned");
        last.remove(&(queue, group.to_string()));
    }

    /// Records that this broker committed a new partition in `queue`.
    pub fn created(&self, queue: uuid::Uuid, partition: uuid::Uuid) {
        let mut created = self.created.lock().expect("sweep map poisoned");
        let (n, ids) = created.entry(queue).or_default();
        *n += 1;
        ids.push_back(partition);
        if ids.len() > CREATED_KEPT {
            ids.pop_front();
        }
    }
}

/// Entries kept per queue; a group that falls further behind loses the oldest hints (the
/// claim's walk finds those partitions instead).
const READY_KEPT: usize = 16_384;

/// Which partitions received messages, per queue, in push order, with each consumer group's
/// place in that list: a pop claims from the partitions pushed to since its group last looked
/// before walking every cursor of the group, which at 10,000 partitions means walking
/// thousands with nothing to read. Only this broker's pushes are listed; the walk finds the
/// rest (and leftovers of a partition with more than one batch), so a lost hint costs time,
/// never a message.
#[derive(Default)]
pub struct Ready {
    queues: Mutex<HashMap<uuid::Uuid, ReadyList>>,
}

#[derive(Default)]
struct ReadyList {
    /// (sequence number, partition), oldest first.
    pushed: std::collections::VecDeque<(u64, uuid::Uuid)>,
    next: u64,
    /// Per group: the sequence number of the first entry it has not taken.
    taken: HashMap<String, u64>,
}

impl Ready {
    /// Records a committed push to `partition` of `queue`, here or on another broker. Only
    /// for queues this broker has popped from: a group starts at the end of the list, so
    /// entries written before any pop would never be read, and with every broker hearing
    /// every push, a list per queue pushed to anywhere would cost each broker memory for
    /// queues it does not serve.
    pub fn pushed(&self, queue: uuid::Uuid, partition: uuid::Uuid) {
        let mut map = self.queues.lock().expect("ready map poisoned");
        let Some(list) = map.get_mut(&queue) else {
            return;
        };
        list.pushed.push_back((list.next, partition));
        list.next += 1;
        if list.pushed.len() > READY_KEPT {
            list.pushed.pop_front();
        }
    }

    /// Up to `max` distinct partitions pushed to since `group` last took, oldest first; they
    /// count as taken. A group's first call takes nothing (it starts at the end of the list).
    pub fn take(&self, queue: uuid::Uuid, group: &str, max: usize) -> Vec<uuid::Uuid> {
        let mut map = self.queues.lock().expect("ready map poisoned");
        let list = map.entry(queue).or_default();
        let end = list.next;
        let from = *list.taken.entry(group.to_string()).or_insert(end);
        let mut out: Vec<uuid::Uuid> = Vec::new();
        let mut upto = from;
        for &(seq, p) in list.pushed.iter().skip_while(|(seq, _)| *seq < from) {
            if out.len() >= max && !out.contains(&p) {
                break;
            }
            if !out.contains(&p) {
                out.push(p);
            }
            upto = seq + 1;
        }
        list.taken.insert(group.to_string(), upto.max(from));
        out
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
        assert_eq!(
            s.due(q, "g"),
            Due::All,
            "a group's first pop sweeps everything"
        );
        assert_eq!(s.due(q, "g"), Due::No, "not again within the interval");
        assert_eq!(s.due(q, "other"), Due::All, "groups sweep independently");
        let (p1, p2) = (uuid::Uuid::now_v7(), uuid::Uuid::now_v7());
        s.created(q, p1);
        s.created(q, p2);
        assert_eq!(
            s.due(q, "g"),
            Due::Only(vec![p1, p2]),
            "new partitions, by id"
        );
        assert_eq!(s.due(q, "g"), Due::No);
        assert_eq!(s.due(q, "other"), Due::Only(vec![p1, p2]));
        for _ in 0..=CREATED_KEPT {
            s.created(q, uuid::Uuid::now_v7());
        }
        assert_eq!(s.due(q, "g"), Due::All, "too far behind: everything");
    }

    #[test]
    fn ready_hands_each_group_the_partitions_pushed_since_it_last_took() {
        let r = Ready::default();
        let q = uuid::Uuid::now_v7();
        let (a, b, c) = (
            uuid::Uuid::now_v7(),
            uuid::Uuid::now_v7(),
            uuid::Uuid::now_v7(),
        );
        r.pushed(q, uuid::Uuid::now_v7());
        assert!(r.take(q, "g", 4).is_empty(), "a group starts at the end");
        assert!(r.take(q, "h", 4).is_empty());
        for p in [a, b, a, c] {
            r.pushed(q, p);
        }
        assert_eq!(r.take(q, "g", 1), vec![a]);
        assert_eq!(r.take(q, "g", 2), vec![b, a]);
        assert_eq!(r.take(q, "g", 4), vec![c]);
        assert!(r.take(q, "g", 4).is_empty());
        // Another group has its own place in the list.
        assert_eq!(r.take(q, "h", 8), vec![a, b, c]);
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
}
