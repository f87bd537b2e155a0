//! Long-polling pops parked on each (tenant, queue) of this broker right now, for the fleet's
//! samples (`/api/v1/analytics/queue-parked-replicas`). A pop counts from its first empty
//! attempt until it answers, woken rechecks included: that is the time a consumer spends
//! waiting on the broker. Pops across a namespace or task wait on no one queue and are not
//! counted.
//!
//! An entry lives while one of its pops is parked (the last guard to go removes it), so the
//! map holds at most one entry per pop in flight, whatever names clients send.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::lock;

type QueueKey = (String, String);

#[derive(Default)]
pub struct Parked {
    by_queue: Mutex<HashMap<QueueKey, usize>>,
}

/// One parked pop; dropping it un-parks it.
pub struct ParkedPop<'a> {
    parked: &'a Parked,
    key: QueueKey,
}

impl Drop for ParkedPop<'_> {
    fn drop(&mut self) {
        let mut map = lock(&self.parked.by_queue);
        if let Some(n) = map.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.key);
            }
        }
    }
}

/// A queue's parked pops at one instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueParked {
    pub tenant: String,
    pub queue: String,
    pub parked: usize,
}

impl Parked {
    /// Counts a pop of (tenant, queue) as parked until the guard is dropped.
    pub fn park(&self, tenant: &str, queue: &str) -> ParkedPop<'_> {
        let key = (tenant.to_string(), queue.to_string());
        *lock(&self.by_queue).entry(key.clone()).or_default() += 1;
        ParkedPop { parked: self, key }
    }

    /// The `n` queues with the most parked pops, most first (ties by tenant, then queue), so
    /// a sample stays bounded however many queues are waited on.
    pub fn top(&self, n: usize) -> Vec<QueueParked> {
        let mut all: Vec<QueueParked> = lock(&self.by_queue)
            .iter()
            .map(|((tenant, queue), &parked)| QueueParked {
                tenant: tenant.clone(),
                queue: queue.clone(),
                parked,
            })
            .collect();
        all.sort_by(|a, b| {
            b.parked
                .cmp(&a.parked)
                .then_with(|| (&a.tenant, &a.queue).cmp(&(&b.tenant, &b.queue)))
        });
        all.truncate(n);
        all
    }

    /// Queues with a parked pop.
    pub fn len(&self) -> usize {
        lock(&self.by_queue).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_counts_its_parked_pops_until_they_answer() {
        let p = Parked::default();
        let first = p.park("t", "q");
        let second = p.park("t", "q");
        let other_tenant = p.park("u", "q");
        assert_eq!(
            p.top(10),
            vec![
                QueueParked {
                    tenant: "t".into(),
                    queue: "q".into(),
                    parked: 2
                },
                QueueParked {
                    tenant: "u".into(),
                    queue: "q".into(),
                    parked: 1
                },
            ]
        );
        drop(first);
        assert_eq!(p.top(10)[0].parked, 1);
        drop((second, other_tenant));
        assert!(p.is_empty());
    }

    #[test]
    fn the_top_is_bounded_and_most_parked_first() {
        let p = Parked::default();
        let held: Vec<_> = (0..5)
            .flat_map(|i| (0..=i).map(move |_| i))
            .map(|i| p.park("t", &format!("q{i}")))
            .collect();
        let top = p.top(2);
        let names: Vec<_> = top.iter().map(|q| (q.queue.as_str(), q.parked)).collect();
        assert_eq!(names, [("q4", 5), ("q3", 4)]);
        drop(held);
        assert!(p.top(2).is_empty());
    }

    #[test]
    fn a_million_queue_names_leave_nothing_behind() {
        let p = Parked::default();
        for i in 0..1_000_000u32 {
            let _pop = p.park("t", &format!("queue-{i}"));
        }
        assert!(p.is_empty());
    }
}
