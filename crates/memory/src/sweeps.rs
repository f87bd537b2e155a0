//! The clock of partition discovery: a pop gives its group cursors on partitions it has none
//! on. Over every partition of the queue (an anti-join) at most once per interval per (queue,
//! group); in between, only on the partitions this broker created (or heard a peer create)
//! since the group's last look, by primary key. Partitions created elsewhere unheard are found
//! within the interval; none is hidden. (Sweeping whenever a claim came back empty, or
//! everything after any creation, made pops run the anti-join over 10,000 partitions most of
//! the time.)
//!
//! Bounded by time: a look older than the interval is the same as none (both sweep
//! everything), and so is a creation older than the interval (every group that could still
//! need it has swept everything since), so both are forgotten once they are that old. Past
//! [`MAX_LOOKS`] recent looks, all are forgotten: each group then sweeps everything once.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::lock;

/// Created partitions remembered per queue; a group further behind sweeps everything.
const CREATED_KEPT: usize = 1024;
/// Recent looks kept at most.
pub const MAX_LOOKS: usize = 100_000;
/// The map is pruned when it has doubled since the last prune, and not below this size.
const PRUNE_FLOOR: usize = 1024;

/// What a pop should sweep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Due {
    No,
    All,
    Only(Vec<Uuid>),
}

pub struct Sweeps {
    every: Duration,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Creations seen, over every queue: a group's look remembers how many.
    seq: u64,
    /// Per (queue, group): when it last swept everything, and `seq` at its last look.
    looks: HashMap<(Uuid, String), Look>,
    /// Per queue: the latest creations.
    created: HashMap<Uuid, Created>,
    prune_at: usize,
}

struct Look {
    swept: Instant,
    seen: u64,
}

#[derive(Default)]
struct Created {
    /// (seq, when, partition), oldest first.
    recent: VecDeque<(u64, Instant, Uuid)>,
    /// The highest seq dropped for room: a group that looked before it sweeps everything.
    lost: u64,
}

impl Default for Sweeps {
    fn default() -> Self {
        Sweeps::every(Duration::from_secs(1))
    }
}

impl Sweeps {
    pub fn every(every: Duration) -> Sweeps {
        Sweeps {
            every,
            inner: Mutex::new(Inner {
                prune_at: PRUNE_FLOOR,
                ..Default::default()
            }),
        }
    }

    /// What a pop of `group` on `queue` should sweep now; it counts as done.
    pub fn due(&self, queue: Uuid, group: &str) -> Due {
        let now = Instant::now();
        let mut inner = lock(&self.inner);
        let seq = inner.seq;
        let key = (queue, group.to_string());
        let Some(look) = inner.looks.get(&key) else {
            inner.looks.insert(
                key,
                Look {
                    swept: now,
                    seen: seq,
                },
            );
            inner.prune_if_grown(now, self.every);
            return Due::All;
        };
        let (swept, from) = (look.swept, look.seen);
        let due = if now.duration_since(swept) >= self.every {
            Due::All
        } else {
            match inner.created.get(&queue) {
                None => Due::No,
                Some(c) if c.lost > from => Due::All,
                Some(c) => {
                    let ids: Vec<Uuid> = c
                        .recent
                        .iter()
                        .filter(|(s, _, _)| *s > from)
                        .map(|&(_, _, p)| p)
                        .collect();
                    if ids.is_empty() {
                        Due::No
                    } else {
                        Due::Only(ids)
                    }
                }
            }
        };
        let look = inner.looks.get_mut(&key).expect("found above");
        look.seen = seq;
        if due == Due::All {
            look.swept = now;
        }
        due
    }

    /// Forgets when `group` last swept `queue`: its cursors were deleted, and its next pop
    /// must give it new ones at once rather than after the interval.
    pub fn forget(&self, queue: Uuid, group: &str) {
        lock(&self.inner).looks.remove(&(queue, group.to_string()));
    }

    /// Records that a new partition of `queue` committed (here, or on a peer).
    pub fn created(&self, queue: Uuid, partition: Uuid) {
        let now = Instant::now();
        let mut inner = lock(&self.inner);
        inner.seq += 1;
        let seq = inner.seq;
        let c = inner.created.entry(queue).or_default();
        c.recent.push_back((seq, now, partition));
        if c.recent.len() > CREATED_KEPT {
            if let Some((lost, _, _)) = c.recent.pop_front() {
                c.lost = lost;
            }
        }
        if inner.created.len() > inner.prune_at {
            inner.prune(now, self.every);
        }
    }

    /// Looks remembered.
    pub fn looks(&self) -> usize {
        lock(&self.inner).looks.len()
    }

    /// Queues with creations remembered.
    pub fn created_len(&self) -> usize {
        lock(&self.inner).created.len()
    }
}

impl Inner {
    fn prune_if_grown(&mut self, now: Instant, every: Duration) {
        if self.looks.len() > self.prune_at {
            self.prune(now, every);
        }
    }

    /// Forgets what is older than the interval; past the bound, every look.
    fn prune(&mut self, now: Instant, every: Duration) {
        self.looks
            .retain(|_, l| now.duration_since(l.swept) < every);
        if self.looks.len() > MAX_LOOKS {
            self.looks.clear();
        }
        self.created.retain(|_, c| {
            while c
                .recent
                .front()
                .is_some_and(|&(_, at, _)| now.duration_since(at) >= every)
            {
                c.recent.pop_front();
            }
            !c.recent.is_empty()
        });
        let held = self.looks.len().max(self.created.len());
        self.prune_at = (2 * held).clamp(PRUNE_FLOOR, MAX_LOOKS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_are_due_per_interval_and_after_a_creation() {
        let s = Sweeps::default();
        let q = Uuid::now_v7();
        assert_eq!(
            s.due(q, "g"),
            Due::All,
            "a group's first pop sweeps everything"
        );
        assert_eq!(s.due(q, "g"), Due::No, "not again within the interval");
        assert_eq!(s.due(q, "other"), Due::All, "groups sweep independently");
        let (p1, p2) = (Uuid::now_v7(), Uuid::now_v7());
        s.created(q, p1);
        s.created(q, p2);
        s.created(Uuid::now_v7(), Uuid::now_v7());
        assert_eq!(
            s.due(q, "g"),
            Due::Only(vec![p1, p2]),
            "new partitions, by id"
        );
        assert_eq!(s.due(q, "g"), Due::No);
        assert_eq!(s.due(q, "other"), Due::Only(vec![p1, p2]));
        for _ in 0..=CREATED_KEPT {
            s.created(q, Uuid::now_v7());
        }
        assert_eq!(s.due(q, "g"), Due::All, "too far behind: everything");
    }

    #[test]
    fn after_the_interval_everything_is_due_and_old_entries_go() {
        let s = Sweeps::every(Duration::from_millis(20));
        let q = Uuid::now_v7();
        assert_eq!(s.due(q, "g"), Due::All);
        s.created(q, Uuid::now_v7());
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(s.due(q, "g"), Due::All);
        assert_eq!(s.due(q, "g"), Due::No);
        // A prune leaves only what is younger than the interval.
        std::thread::sleep(Duration::from_millis(30));
        lock(&s.inner).prune(Instant::now(), s.every);
        assert_eq!((s.looks(), s.created_len()), (0, 0));
        assert_eq!(
            s.due(q, "g"),
            Due::All,
            "a forgotten look sweeps, as an old one would"
        );
    }

    #[test]
    fn a_million_group_names_stay_within_bounds() {
        let s = Sweeps::default();
        let q = Uuid::now_v7();
        for i in 0..1_000_000u32 {
            assert_eq!(s.due(q, &format!("group-{i}")), Due::All);
            if i % 1000 == 0 {
                s.created(Uuid::now_v7(), Uuid::now_v7());
            }
        }
        assert!(s.looks() <= MAX_LOOKS + 1, "{}", s.looks());
        assert!(s.created_len() <= MAX_LOOKS + 1);
    }
}
