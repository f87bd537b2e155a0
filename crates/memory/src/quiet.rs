//! Consumer groups whose last walk over their cursors found nothing to claim, and have not
//! been woken since: a long-polling pop of such a group parks without walking again.
//!
//! A consumer that acks and pops again finds no hint (it took the partition it was woken
//! for) and walks every cursor of its group, and so does every long-poll asked again on a
//! drained queue; with nothing left, the walk reads every cursor and its partition's head to
//! claim nothing. 64 consumers waiting on a queue pushed to 20 times a second made 2,716
//! claims for 400 messages; with this, 850 (BENCHMARKS.md, "Issue 49, step 4").
//!
//! A walk that found nothing stands for its group until something that can make a message
//! claimable is announced for the queue without saying where (a release, a seek, a peer's
//! note too large to list its partitions: `Runtime::hint`), or for at most [`QUIET_FOR`].
//! What is announced with its partitions leaves the group quiet: a push, and an ack that
//! left its partition something to read, list the partition in the ready lists
//! (`crate::ready`; the ack's only for a group that is quiet), and the pops they wake claim
//! it from there. So a group kept busy by
//! pushes walks at most once per [`QUIET_FOR`], not once per pop that finds no hint (at 800
//! messages a second, 7,478 walks in 20,000 claims became 388; BENCHMARKS.md, "Issue 49,
//! step 5"). A hint can still be missed (taken by a claim that met its partition leased by
//! a lease another broker ends, or dropped from a full list), and what nothing announces (a
//! lease expiring, a delay or window buffer running out) is never hinted: all of it is found
//! by the next walk after [`QUIET_FOR`], as parked pops already find it at their rechecks. A
//! stamp taken before the walk and checked when its result is recorded makes a wakeup
//! during the walk count. Only pops that wait consult it (one without `wait` is answered
//! from the database).
//!
//! Bounded: at most [`MAX_QUEUES`] queues and [`MAX_GROUPS`] groups each; past that,
//! everything is forgotten, which costs a walk, never a message.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::lock;

/// How long a walk that found nothing stands for its group, unannounced.
pub const QUIET_FOR: Duration = Duration::from_millis(100);
const MAX_QUEUES: usize = 4096;
const MAX_GROUPS: usize = 1024;

#[derive(Default)]
pub struct Quiet {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// The last stamp given out: stamps never repeat, so a forgotten queue's old stamp never
    /// matches its new one.
    last: u64,
    /// Per (tenant, queue).
    queues: HashMap<(String, String), Queue>,
}

struct Queue {
    /// Changed by every wakeup of the queue's pops.
    stamp: u64,
    /// Per group: when its last walk that found nothing started (under the current stamp).
    empty: HashMap<String, Instant>,
}

impl Quiet {
    /// The queue's stamp now: taken before a walk, handed to [`Quiet::found_nothing`] after.
    pub fn stamp(&self, tenant: &str, queue: &str) -> u64 {
        let mut inner = lock(&self.inner);
        let key = (tenant.to_string(), queue.to_string());
        if !inner.queues.contains_key(&key) && inner.queues.len() >= MAX_QUEUES {
            inner.queues.clear();
        }
        let Inner { last, queues } = &mut *inner;
        queues
            .entry(key)
            .or_insert_with(|| {
                *last += 1;
                Queue {
                    stamp: *last,
                    empty: HashMap::new(),
                }
            })
            .stamp
    }

    /// Something may have become claimable in the queue: every group walks again.
    pub fn woke(&self, tenant: &str, queue: &str) {
        let mut inner = lock(&self.inner);
        let Inner { last, queues } = &mut *inner;
        if let Some(q) = queues.get_mut(&(tenant.to_string(), queue.to_string())) {
            *last += 1;
            q.stamp = *last;
            q.empty.clear();
        }
    }

    /// `group`'s walk, started at `at` under `stamp`, claimed nothing: it stands until the
    /// queue is woken (at once, if it was during the walk) or [`QUIET_FOR`] has passed.
    pub fn found_nothing(&self, tenant: &str, queue: &str, group: &str, stamp: u64, at: Instant) {
        let mut inner = lock(&self.inner);
        let Some(q) = inner
            .queues
            .get_mut(&(tenant.to_string(), queue.to_string()))
        else {
            return;
        };
        if q.stamp != stamp {
            return;
        }
        if !q.empty.contains_key(group) && q.empty.len() >= MAX_GROUPS {
            q.empty.clear();
        }
        q.empty.insert(group.to_string(), at);
    }

    /// Whether `group` skips its walk: its last one found nothing less than [`QUIET_FOR`]
    /// ago, and nothing woke the queue since.
    pub fn skips_walk(&self, tenant: &str, queue: &str, group: &str) -> bool {
        self.skips_walk_at(tenant, queue, group, Instant::now())
    }

    fn skips_walk_at(&self, tenant: &str, queue: &str, group: &str, now: Instant) -> bool {
        lock(&self.inner)
            .queues
            .get(&(tenant.to_string(), queue.to_string()))
            .and_then(|q| q.empty.get(group))
            .is_some_and(|&at| now.saturating_duration_since(at) < QUIET_FOR)
    }

    /// Queues held.
    pub fn len(&self) -> usize {
        lock(&self.inner).queues.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_that_found_nothing_stands_for_its_group_until_the_queue_is_woken() {
        let q = Quiet::default();
        let now = Instant::now();
        let stamp = q.stamp("t", "q");
        assert!(!q.skips_walk_at("t", "q", "g", now), "no walk yet");
        q.found_nothing("t", "q", "g", stamp, now);
        assert!(q.skips_walk_at("t", "q", "g", now));
        assert!(
            !q.skips_walk_at("t", "q", "other", now),
            "only its own group"
        );
        assert!(!q.skips_walk_at("u", "q", "g", now), "only its own tenant");
        q.woke("t", "elsewhere");
        assert!(
            q.skips_walk_at("t", "q", "g", now),
            "another queue's wakeup"
        );
        q.woke("t", "q");
        assert!(!q.skips_walk_at("t", "q", "g", now));
    }

    #[test]
    fn a_wakeup_during_the_walk_voids_what_it_found() {
        let q = Quiet::default();
        let stamp = q.stamp("t", "q");
        q.woke("t", "q");
        q.found_nothing("t", "q", "g", stamp, Instant::now());
        assert!(!q.skips_walk("t", "q", "g"));
    }

    #[test]
    fn a_walk_stands_no_longer_than_quiet_for() {
        let q = Quiet::default();
        let at = Instant::now();
        q.found_nothing("t", "q", "g", q.stamp("t", "q"), at);
        assert!(q.skips_walk_at("t", "q", "g", at + QUIET_FOR / 2));
        assert!(!q.skips_walk_at("t", "q", "g", at + QUIET_FOR));
    }

    #[test]
    fn a_forgotten_queue_never_matches_an_old_stamp() {
        let q = Quiet::default();
        let old = q.stamp("t", "q");
        for i in 0..MAX_QUEUES {
            q.stamp("t", &format!("other-{i}"));
        }
        assert!(q.len() <= MAX_QUEUES, "bounded");
        q.stamp("t", "q");
        q.found_nothing("t", "q", "g", old, Instant::now());
        assert!(
            !q.skips_walk("t", "q", "g"),
            "the stamp was taken before it was forgotten"
        );
    }
}
