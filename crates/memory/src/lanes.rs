//! Lanes of requests that can be carried out together. Concurrent pops of one queue by one
//! consumer group claim from the same cursor rows; run apart, each pays its own transaction
//! and commit and they skip past each other's locks. In a lane they queue instead, and the
//! request that finds fewer than [`LEADERS`] leaders at work becomes one: it takes everything
//! waiting, runs it as one claim, and comes back for what queued meanwhile, group-commit
//! style. A lone request leads at once, so an idle broker adds no wait.
//!
//! Bounded: a lane exists only while a request waits in it or a leader works it, so the map
//! holds at most as many lanes as there are requests in flight.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;

use crate::lock;

/// Leaders per lane at once. Two let the next batch gather while one runs; more would split
/// the waiting requests into smaller batches.
pub const LEADERS: usize = 2;

pub struct Lanes<K, J> {
    lanes: Mutex<HashMap<K, Lane<J>>>,
}

struct Lane<J> {
    waiting: Vec<J>,
    leaders: usize,
}

impl<K, J> Default for Lanes<K, J> {
    fn default() -> Self {
        Lanes {
            lanes: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Hash + Eq + Clone, J> Lanes<K, J> {
    /// Queues `job` in its lane; true when the caller is to lead it: call [`Lanes::next`]
    /// until it says the turn is over (and [`Lanes::abandon`] if the leader fails first).
    pub fn join(&self, key: K, job: J) -> bool {
        let mut lanes = lock(&self.lanes);
        let lane = lanes.entry(key).or_insert_with(|| Lane {
            waiting: Vec::new(),
            leaders: 0,
        });
        lane.waiting.push(job);
        if lane.leaders < LEADERS {
            lane.leaders += 1;
            return true;
        }
        false
    }

    /// For a leader: the jobs waiting, oldest first, as many as fit `max` by `weight` (at
    /// least one). `None` when none wait: the leader's turn is over, and an idle lane is gone.
    pub fn next(&self, key: &K, max: usize, weight: impl Fn(&J) -> usize) -> Option<Vec<J>> {
        let mut lanes = lock(&self.lanes);
        let lane = lanes.get_mut(key)?;
        if lane.waiting.is_empty() {
            lane.leaders -= 1;
            if lane.leaders == 0 {
                lanes.remove(key);
            }
            return None;
        }
        let mut total = 0;
        let take = lane
            .waiting
            .iter()
            .position(|j| {
                total += weight(j);
                total > max
            })
            .unwrap_or(lane.waiting.len())
            .max(1);
        Some(lane.waiting.drain(..take).collect())
    }

    /// For a leader that stops before its turn is over (it panicked): it leaves the lane. If
    /// it was the last, the jobs still waiting are returned, to be answered as interrupted,
    /// since no one else would run them.
    pub fn abandon(&self, key: &K) -> Vec<J> {
        let mut lanes = lock(&self.lanes);
        let Some(lane) = lanes.get_mut(key) else {
            return Vec::new();
        };
        lane.leaders -= 1;
        if lane.leaders > 0 {
            return Vec::new();
        }
        lanes.remove(key).map(|l| l.waiting).unwrap_or_default()
    }

    /// Lanes in use.
    pub fn len(&self) -> usize {
        lock(&self.lanes).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_job_leads_and_its_lane_is_gone_after() {
        let lanes: Lanes<&str, u32> = Lanes::default();
        assert!(lanes.join("q", 1));
        assert_eq!(lanes.next(&"q", 10, |_| 1), Some(vec![1]));
        assert_eq!(lanes.next(&"q", 10, |_| 1), None);
        assert!(lanes.is_empty());
    }

    #[test]
    fn jobs_arriving_while_leaders_work_are_taken_together() {
        let lanes: Lanes<&str, u32> = Lanes::default();
        assert!(lanes.join("q", 1));
        assert!(
            lanes.join("q", 2),
            "a second leader while the first has not started"
        );
        assert_eq!(lanes.next(&"q", 10, |_| 1), Some(vec![1, 2]));
        for j in 3..7 {
            assert!(!lanes.join("q", j), "two leaders at work: it waits");
        }
        assert!(lanes.join("other", 9), "another lane is not held up");
        assert_eq!(
            lanes.next(&"q", 3, |_| 1),
            Some(vec![3, 4, 5]),
            "up to the weight"
        );
        assert_eq!(lanes.next(&"q", 3, |_| 1), Some(vec![6]));
        assert_eq!(lanes.next(&"q", 3, |_| 1), None);
        assert_eq!(lanes.len(), 2, "one leader of q still at work");
        assert_eq!(lanes.next(&"q", 3, |_| 1), None);
        assert_eq!(lanes.len(), 1);
        assert_eq!(
            lanes.next(&"q", 3, |_| 100),
            None,
            "a finished lane gives nothing"
        );
        assert_eq!(
            lanes.next(&"other", 3, |_| 100),
            Some(vec![9]),
            "one job over the weight is still taken"
        );
    }

    #[test]
    fn the_last_leader_to_fail_hands_back_what_waits() {
        let lanes: Lanes<&str, u32> = Lanes::default();
        assert!(lanes.join("q", 1));
        assert!(lanes.join("q", 2));
        assert!(!lanes.join("q", 3));
        assert_eq!(
            lanes.abandon(&"q"),
            Vec::<u32>::new(),
            "another leader remains"
        );
        assert_eq!(lanes.abandon(&"q"), vec![1, 2, 3]);
        assert!(lanes.is_empty());
        assert!(lanes.join("q", 4), "a new job leads again");
    }
}
