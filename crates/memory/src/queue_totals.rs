//! Messages pushed and delivered per queue by this broker since it started: the per-queue
//! Prometheus counters (`regent_queue_pushed_total`, `regent_queue_delivered_total`). Fed by
//! the series flush with the tallies it wrote (`regent_service::series`), so the hot paths
//! pay nothing more and a count appears here once it is in `queue_minutes`, within 5 s.
//!
//! Per broker and since start, as a Prometheus counter is meant to be (a restart is a
//! reset; summed over brokers it is the fleet's). A sum over the series' retained minutes
//! was the other source: it is the fleet's, but it goes down as old minutes expire, which a
//! counter may not, and reading days of minutes per queue at every scrape is not cheap.
//!
//! Bounded by [`MAX_QUEUES`]: when a new queue finds the map full, the quarter of the queues
//! counted least recently is forgotten (their counters start again from 0, which Prometheus
//! reads as a reset).

use std::collections::HashMap;
use std::sync::Mutex;

use uuid::Uuid;

use crate::lock;

/// Queues counted at most.
pub const MAX_QUEUES: usize = 100_000;

/// One queue's counts since start (or since it was last forgotten).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueTotal {
    pub pushed: u64,
    pub delivered: u64,
}

#[derive(Default)]
struct Held {
    total: QueueTotal,
    /// The flush that last added to it.
    touched: u64,
}

#[derive(Default)]
pub struct QueueTotals {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    by_queue: HashMap<Uuid, Held>,
    flushes: u64,
}

impl Inner {
    /// Forgets the quarter of the queues touched longest ago (at least one).
    fn forget_stalest(&mut self) {
        let mut ages: Vec<u64> = self.by_queue.values().map(|h| h.touched).collect();
        let k = (ages.len() / 4).max(1) - 1;
        let (_, &mut cutoff, _) = ages.select_nth_unstable(k);
        self.by_queue.retain(|_, h| h.touched > cutoff);
    }
}

impl QueueTotals {
    /// Adds one flush's counts: (queue, pushed, delivered).
    pub fn add(&self, counts: impl IntoIterator<Item = (Uuid, u64, u64)>) {
        let mut inner = lock(&self.inner);
        inner.flushes += 1;
        let now = inner.flushes;
        for (queue, pushed, delivered) in counts {
            if pushed == 0 && delivered == 0 {
                continue;
            }
            if !inner.by_queue.contains_key(&queue) && inner.by_queue.len() >= MAX_QUEUES {
                inner.forget_stalest();
            }
            let held = inner.by_queue.entry(queue).or_default();
            held.total.pushed += pushed;
            held.total.delivered += delivered;
            held.touched = now;
        }
    }

    /// A queue's counts (zero when never counted).
    pub fn of(&self, queue: Uuid) -> QueueTotal {
        lock(&self.inner)
            .by_queue
            .get(&queue)
            .map(|h| h.total)
            .unwrap_or_default()
    }

    /// The counts of each of `queues`, in order, under one lock.
    pub fn of_each(&self, queues: impl IntoIterator<Item = Uuid>) -> Vec<QueueTotal> {
        let inner = lock(&self.inner);
        queues
            .into_iter()
            .map(|q| inner.by_queue.get(&q).map(|h| h.total).unwrap_or_default())
            .collect()
    }

    pub fn len(&self) -> usize {
        lock(&self.inner).by_queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_per_queue_across_flushes() {
        let t = QueueTotals::default();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        t.add([(a, 3, 1), (b, 0, 0)]);
        t.add([(a, 2, 4)]);
        assert_eq!(
            t.of(a),
            QueueTotal {
                pushed: 5,
                delivered: 5
            }
        );
        assert_eq!(t.of(b), QueueTotal::default());
        assert_eq!(t.len(), 1, "nothing counted is not an entry");
        assert_eq!(t.of_each([b, a])[1].pushed, 5);
    }

    #[test]
    fn a_million_queues_stay_bounded_and_the_recent_ones_are_kept() {
        let t = QueueTotals::default();
        let kept = Uuid::new_v4();
        for i in 0..1_000_000u32 {
            let mut flush = vec![(Uuid::new_v4(), 1, 0)];
            if i % 1000 == 0 {
                flush.push((kept, 1, 0));
            }
            t.add(flush);
        }
        assert!(t.len() <= MAX_QUEUES, "{}", t.len());
        assert_eq!(
            t.of(kept).pushed,
            1000,
            "a queue counted lately is never forgotten"
        );
    }
}
