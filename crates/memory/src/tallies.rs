//! Per-queue counts of what happened since the last flush: messages pushed, delivered,
//! completed (passed by a group's cursor), nacked, dead-lettered and expired. The service
//! layer adds to them after each commit and writes them to the per-minute series every few
//! seconds (`regent_service::series`), so the hot paths pay a hash-map update, not a write.
//!
//! Bounded by [`MAX_QUEUES`]: the map is emptied by every flush, and a queue first seen
//! while it is full is not counted (`dropped` says how many counts went that way), so a
//! database that stays away cannot grow it without end.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

use uuid::Uuid;

use crate::lock;

/// Queues counted between two flushes at most.
pub const MAX_QUEUES: usize = 100_000;

/// What happened to one queue's messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub pushed: i64,
    pub delivered: i64,
    pub completed: i64,
    pub failed: i64,
    pub dead_lettered: i64,
    pub expired: i64,
    /// Milliseconds the delivered messages waited since their append: summed, and the most.
    pub lag_ms_sum: i64,
    pub lag_ms_max: i64,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.pushed += o.pushed;
        self.delivered += o.delivered;
        self.completed += o.completed;
        self.failed += o.failed;
        self.dead_lettered += o.dead_lettered;
        self.expired += o.expired;
        self.lag_ms_sum += o.lag_ms_sum;
        self.lag_ms_max = self.lag_ms_max.max(o.lag_ms_max);
    }

    pub fn is_empty(&self) -> bool {
        *self == Tally::default()
    }
}

#[derive(Default)]
pub struct Tallies {
    by_queue: Mutex<HashMap<Uuid, Tally>>,
    dropped: AtomicU64,
}

impl Tallies {
    pub fn add(&self, queue: Uuid, t: Tally) {
        if t.is_empty() {
            return;
        }
        let mut map = lock(&self.by_queue);
        let full = map.len() >= MAX_QUEUES;
        match map.get_mut(&queue) {
            Some(held) => held.add(&t),
            None if full => {
                self.dropped.fetch_add(1, Relaxed);
            }
            None => {
                map.insert(queue, t);
            }
        }
    }

    /// Everything counted since the last take, emptied.
    pub fn take(&self) -> Vec<(Uuid, Tally)> {
        std::mem::take(&mut *lock(&self.by_queue))
            .into_iter()
            .collect()
    }

    /// Puts back what a flush could not write, so the next one writes it.
    pub fn restore(&self, taken: Vec<(Uuid, Tally)>) {
        for (q, t) in taken {
            self.add(q, t);
        }
    }

    pub fn len(&self) -> usize {
        lock(&self.by_queue).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Counts not kept because the map was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_per_queue_until_taken() {
        let t = Tallies::default();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        t.add(
            a,
            Tally {
                pushed: 3,
                ..Tally::default()
            },
        );
        t.add(
            a,
            Tally {
                pushed: 2,
                completed: 1,
                ..Tally::default()
            },
        );
        t.add(b, Tally::default());
        let mut taken = t.take();
        assert_eq!(taken.len(), 1, "an empty tally is not an entry");
        assert_eq!(
            taken[0].1,
            Tally {
                pushed: 5,
                completed: 1,
                ..Tally::default()
            }
        );
        assert!(t.is_empty());
        t.restore(std::mem::take(&mut taken));
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn a_million_queues_between_flushes_stay_bounded() {
        let t = Tallies::default();
        for _ in 0..1_000_000 {
            t.add(
                Uuid::new_v4(),
                Tally {
                    pushed: 1,
                    ..Tally::default()
                },
            );
        }
        assert_eq!(t.len(), MAX_QUEUES);
        assert_eq!(t.dropped(), (1_000_000 - MAX_QUEUES) as u64);
    }
}
