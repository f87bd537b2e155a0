//! Which partitions received messages, per queue, in push order, with each consumer group's
//! place in that list: a pop claims from the partitions pushed to since its group last looked
//! before walking every cursor of the group, which at 10,000 partitions means walking
//! thousands with nothing to read. Only this broker's pushes and its peers' notes are listed;
//! the walk finds the rest (and leftovers of a partition with more than one batch), so a lost
//! hint costs time, never a message.
//!
//! Bounded three ways: lists exist only for queues this broker pops from (at most
//! [`MAX_QUEUES`], the one looked at least recently goes first), each list remembers at most
//! [`MAX_GROUPS`] groups' places (likewise), and all lists together hold at most
//! [`MAX_ENTRIES`] entries, each list an equal share (at least [`MIN_KEPT`]). A forgotten
//! group starts again at the end of its list; forgotten entries are found by the walk.
//!
//! An ack that leaves a partition with messages for a quiet group (`crate::quiet`: its pops
//! do not walk) lists that partition for that group alone ([`Ready::reopened`]): its push
//! hint was taken by the pop whose lease it was, so without it the rest would wait for the
//! next walk. A group that walks meets it there, in claim order (least recently served
//! first), which listing it would jump. It goes in its place among the pushed entries, after
//! those pushed before it: taken first, a partition reopened by every ack went ahead of the
//! others, and a backlog's oldest messages waited longer. At most [`MAX_REOPENED`] a group;
//! the walk finds the rest.
//!
//! And kept no longer than they serve: entries every group of a list has taken are dropped
//! (every [`COMPACT_EVERY`] takes of the list), and a list no pop has looked at for [`IDLE`]
//! goes. Without that, a queue popped once kept its list full (16,384 entries) until 1,024
//! other queues pushed it out, and a long soak with fresh queue names grew the resident set
//! stretch after stretch (BENCHMARKS.md, "the two-hour soak").

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::lock;

/// Lists kept at most.
pub const MAX_QUEUES: usize = 1024;
/// Groups' places kept per list at most.
pub const MAX_GROUPS: usize = 1024;
/// Entries over every list at most (24 bytes each).
pub const MAX_ENTRIES: usize = 1 << 20;
/// Entries one list keeps at most, and at least when lists share [`MAX_ENTRIES`].
const MAX_KEPT: usize = 16_384;
const MIN_KEPT: usize = 256;
/// Partitions reopened for one group kept at most.
pub const MAX_REOPENED: usize = 256;
/// A list no pop has looked at for this long is dropped.
pub const IDLE: Duration = Duration::from_secs(60);
/// How often idle lists are looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(10);
/// Takes of a list between two drops of the entries every group has taken (each a pass over
/// the list's groups).
const COMPACT_EVERY: u64 = 64;

#[derive(Default)]
pub struct Ready {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    lists: HashMap<Uuid, ReadyList>,
    /// A logical clock: one tick per take, so "least recently" never ties.
    tick: u64,
    /// When idle lists were last looked for.
    swept: Option<Instant>,
}

struct ReadyList {
    /// (sequence number, partition), oldest first.
    pushed: VecDeque<(u64, Uuid)>,
    next: u64,
    /// Per group: the sequence number of the first entry it has not taken, and when it took.
    taken: HashMap<String, (u64, u64)>,
    /// Per group: the partition its last walk over the queue's cursors ended at, where the
    /// next starts (`regent_store::claim::Claim::after`). At most [`MAX_GROUPS`].
    walks: HashMap<String, Uuid>,
    /// Per group (one with a place in `taken`): partitions an ack left with messages for it,
    /// each once, with the sequence number of the next push when it was (it goes before that
    /// push), oldest first. At most [`MAX_REOPENED`] a group.
    reopened: HashMap<String, VecDeque<(u64, Uuid)>>,
    looked: u64,
    looked_at: Instant,
    takes: u64,
}

impl ReadyList {
    fn new(now: u64, at: Instant) -> ReadyList {
        ReadyList {
            pushed: VecDeque::new(),
            next: 0,
            taken: HashMap::new(),
            walks: HashMap::new(),
            reopened: HashMap::new(),
            looked: now,
            looked_at: at,
            takes: 0,
        }
    }

    /// Drops the entries every group has taken: no group reads them again (a group seen for
    /// the first time starts at the end).
    fn drop_taken(&mut self) {
        let Some(lowest) = self.taken.values().map(|&(seq, _)| seq).min() else {
            return;
        };
        while self.pushed.front().is_some_and(|&(seq, _)| seq < lowest) {
            self.pushed.pop_front();
        }
    }

    fn trim(&mut self, keep: usize) {
        while self.pushed.len() > keep {
            self.pushed.pop_front();
        }
    }
}

/// How many entries each list may keep when `lists` share the budget.
fn share(lists: usize) -> usize {
    (MAX_ENTRIES / lists.max(1)).clamp(MIN_KEPT, MAX_KEPT)
}

impl Ready {
    /// Records a committed push to `partition` of `queue`, here or on another broker. Only
    /// for queues this broker pops from: a group starts at the end of the list, so entries
    /// written before any pop would never be read, and with every broker hearing every push,
    /// a list per queue pushed to anywhere would cost each broker memory for queues it does
    /// not serve.
    pub fn pushed(&self, queue: Uuid, partition: Uuid) {
        let mut inner = lock(&self.inner);
        let keep = share(inner.lists.len());
        let Some(list) = inner.lists.get_mut(&queue) else {
            return;
        };
        list.pushed.push_back((list.next, partition));
        list.next += 1;
        list.trim(keep);
    }

    /// Up to `max` distinct partitions pushed to since `group` last took, oldest first; they
    /// count as taken. A group's first call takes nothing (it starts at the end of the list).
    pub fn take(&self, queue: Uuid, group: &str, max: usize) -> Vec<Uuid> {
        self.take_at(queue, group, max, Instant::now())
    }

    fn take_at(&self, queue: Uuid, group: &str, max: usize, at: Instant) -> Vec<Uuid> {
        let mut inner = lock(&self.inner);
        inner.tick += 1;
        let now = inner.tick;
        forget_idle(&mut inner, at);
        if !inner.lists.contains_key(&queue) {
            make_room(&mut inner.lists);
            inner.lists.insert(queue, ReadyList::new(now, at));
        }
        let list = inner.lists.get_mut(&queue).expect("inserted above");
        list.looked = now;
        list.looked_at = at;
        let end = list.next;
        let from = match list.taken.get(group) {
            Some(&(seq, _)) => seq,
            None => {
                if list.taken.len() >= MAX_GROUPS {
                    forget_stalest_half(&mut list.taken);
                    let taken = &list.taken;
                    list.walks.retain(|g, _| taken.contains_key(g));
                    list.reopened.retain(|g, _| taken.contains_key(g));
                }
                end
            }
        };
        let mut mine = list.reopened.remove(group).unwrap_or_default();
        let mut out: Vec<Uuid> = Vec::new();
        let mut upto = from;
        // Sequence numbers are consecutive, so the group's place is an index, not a search.
        let first = list.pushed.front().map_or(end, |&(seq, _)| seq);
        let start = (from.saturating_sub(first) as usize).min(list.pushed.len());
        let mut pushed = list.pushed.range(start..).peekable();
        loop {
            // A reopened entry goes before the pushes numbered from its own number on.
            let reopened = match (mine.front(), pushed.peek()) {
                (None, None) => break,
                (Some(&(r, _)), Some(&&(seq, _))) => r <= seq,
                (reopened, _) => reopened.is_some(),
            };
            let p = match reopened {
                true => mine.front().expect("just seen").1,
                false => pushed.peek().expect("just seen").1,
            };
            if out.len() >= max && !out.contains(&p) {
                break;
            }
            match reopened {
                true => drop(mine.pop_front()),
                false => upto = pushed.next().expect("just seen").0 + 1,
            }
            if !out.contains(&p) {
                out.push(p);
            }
        }
        if !mine.is_empty() {
            list.reopened.insert(group.to_string(), mine);
        }
        list.taken.insert(group.to_string(), (upto.max(from), now));
        list.takes += 1;
        if list.takes.is_multiple_of(COMPACT_EVERY) {
            list.drop_taken();
        }
        out
    }

    /// Records that an ack left `partition` of `queue` with messages for `group`: that
    /// group's takes hand it out after what was pushed before, before what is pushed after. Only for a group that has taken
    /// from the list (one that has not starts by walking anyway).
    pub fn reopened(&self, queue: Uuid, group: &str, partition: Uuid) {
        let mut inner = lock(&self.inner);
        let Some(list) = inner.lists.get_mut(&queue) else {
            return;
        };
        if !list.taken.contains_key(group) {
            return;
        }
        let next = list.next;
        let mine = list.reopened.entry(group.to_string()).or_default();
        if !mine.iter().any(|&(_, p)| p == partition) && mine.len() < MAX_REOPENED {
            mine.push_back((next, partition));
        }
    }

    /// Where `group`'s next walk over the cursors of `queue` starts: just after the partition
    /// its last walk ended at (`None`: from the first).
    pub fn walk_from(&self, queue: Uuid, group: &str) -> Option<Uuid> {
        let inner = lock(&self.inner);
        inner.lists.get(&queue)?.walks.get(group).copied()
    }

    /// Records where `group`'s walk over the cursors of `queue` ended. Only for queues this
    /// broker pops from (a list exists), and for at most [`MAX_GROUPS`] groups a list: a
    /// forgotten place starts the walk from the first partition again, which costs fairness
    /// for a while, never a message.
    pub fn walked(&self, queue: Uuid, group: &str, end: Uuid) {
        let mut inner = lock(&self.inner);
        let Some(list) = inner.lists.get_mut(&queue) else {
            return;
        };
        if let Some(place) = list.walks.get_mut(group) {
            *place = end;
        } else if list.walks.len() < MAX_GROUPS {
            list.walks.insert(group.to_string(), end);
        }
    }

    /// Lists held.
    pub fn queues(&self) -> usize {
        lock(&self.inner).lists.len()
    }

    /// Groups' places held, over every list.
    pub fn groups(&self) -> usize {
        lock(&self.inner)
            .lists
            .values()
            .map(|l| l.taken.len())
            .sum()
    }

    /// Entries held, over every list.
    pub fn entries(&self) -> usize {
        lock(&self.inner)
            .lists
            .values()
            .map(|l| l.pushed.len() + l.reopened.values().map(VecDeque::len).sum::<usize>())
            .sum()
    }
}

/// Drops the lists no pop has looked at for [`IDLE`], at most once per [`SWEEP_EVERY`].
fn forget_idle(inner: &mut Inner, at: Instant) {
    if inner
        .swept
        .is_some_and(|s| at.saturating_duration_since(s) < SWEEP_EVERY)
    {
        return;
    }
    inner.swept = Some(at);
    inner
        .lists
        .retain(|_, l| at.saturating_duration_since(l.looked_at) < IDLE);
}

/// Before a new list: the least recently looked-at list goes if the map is full, and the
/// others shrink to their new share.
fn make_room(map: &mut HashMap<Uuid, ReadyList>) {
    if map.len() >= MAX_QUEUES {
        if let Some(stalest) = map.iter().min_by_key(|(_, l)| l.looked).map(|(q, _)| *q) {
            map.remove(&stalest);
        }
    }
    let keep = share(map.len() + 1);
    for list in map.values_mut() {
        list.trim(keep);
    }
}

/// Forgets the half of the groups that took least recently: one pass per half-full of new
/// names, not one per name.
fn forget_stalest_half(taken: &mut HashMap<String, (u64, u64)>) {
    let mut stamps: Vec<u64> = taken.values().map(|&(_, at)| at).collect();
    let mid = stamps.len() / 2;
    let (_, &mut median, _) = stamps.select_nth_unstable(mid);
    taken.retain(|_, &mut (_, at)| at > median);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_hands_each_group_the_partitions_pushed_since_it_last_took() {
        let r = Ready::default();
        let q = Uuid::now_v7();
        let (a, b, c) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        r.pushed(q, Uuid::now_v7());
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

    #[test]
    fn a_reopened_partition_goes_to_its_group_in_its_place_and_once() {
        let r = Ready::default();
        let q = Uuid::now_v7();
        let (a, b, c, d) = (
            Uuid::now_v7(),
            Uuid::now_v7(),
            Uuid::now_v7(),
            Uuid::now_v7(),
        );
        r.reopened(q, "g", a);
        assert!(r.take(q, "g", 4).is_empty(), "no place yet: nothing kept");
        r.take(q, "h", 1);
        r.pushed(q, b);
        r.reopened(q, "g", c);
        r.reopened(q, "g", a);
        r.reopened(q, "g", c);
        r.pushed(q, d);
        assert_eq!(
            r.take(q, "g", 2),
            vec![b, c],
            "after the push before it, each once"
        );
        assert_eq!(r.take(q, "g", 2), vec![a, d], "before the push after it");
        assert!(r.take(q, "g", 2).is_empty());
        assert_eq!(r.take(q, "h", 4), vec![b, d], "not another group's");
        for _ in 0..MAX_REOPENED + 10 {
            r.reopened(q, "g", Uuid::now_v7());
        }
        assert_eq!(r.entries(), MAX_REOPENED + 2, "bounded per group");
    }

    #[test]
    fn a_walk_starts_where_the_group_last_walk_ended() {
        let r = Ready::default();
        let (q, p) = (Uuid::now_v7(), Uuid::now_v7());
        r.walked(q, "g", p);
        assert_eq!(
            r.walk_from(q, "g"),
            None,
            "no list: a queue not popped here"
        );
        assert!(r.take(q, "g", 1).is_empty());
        r.walked(q, "g", p);
        assert_eq!(r.walk_from(q, "g"), Some(p));
        assert_eq!(r.walk_from(q, "h"), None, "each group has its own place");
        for i in 0..MAX_GROUPS + 10 {
            r.walked(q, &format!("g{i}"), p);
        }
        assert_eq!(r.inner.lock().unwrap().lists[&q].walks.len(), MAX_GROUPS);
    }

    #[test]
    fn a_million_group_names_and_queues_stay_within_bounds() {
        let r = Ready::default();
        let hot = Uuid::now_v7();
        for i in 0..1_000_000u32 {
            r.take(hot, &format!("group-{i}"), 1);
            r.pushed(hot, Uuid::now_v7());
            if i % 100 == 0 {
                r.take(Uuid::now_v7(), "g", 1);
            }
        }
        assert!(r.queues() <= MAX_QUEUES, "{}", r.queues());
        assert!(r.groups() <= MAX_QUEUES * MAX_GROUPS);
        let on_hot = lock(&r.inner).lists[&hot].taken.len();
        assert!(on_hot <= MAX_GROUPS, "{on_hot}");
        assert!(r.entries() <= MAX_ENTRIES, "{}", r.entries());
    }

    #[test]
    fn entries_every_group_has_taken_are_dropped() {
        let r = Ready::default();
        let q = Uuid::now_v7();
        r.take(q, "fast", 1);
        r.take(q, "slow", 1);
        let parts: Vec<Uuid> = (0..COMPACT_EVERY * 4).map(|_| Uuid::now_v7()).collect();
        for &p in &parts {
            r.pushed(q, p);
        }
        // The fast group takes everything; the slow one has taken nothing yet: all stay.
        for _ in 0..COMPACT_EVERY {
            r.take(q, "fast", 1_000);
        }
        assert_eq!(r.entries(), parts.len(), "the slow group still needs them");
        assert_eq!(r.take(q, "slow", 10), parts[..10].to_vec());
        for _ in 0..COMPACT_EVERY {
            r.take(q, "fast", 1_000);
        }
        assert_eq!(
            r.entries(),
            parts.len() - 10,
            "what both groups took is gone"
        );
        assert_eq!(
            r.take(q, "slow", 1),
            vec![parts[10]],
            "the rest is still there"
        );
    }

    #[test]
    fn a_list_no_pop_looks_at_goes_after_a_minute() {
        let r = Ready::default();
        let (idle, busy) = (Uuid::now_v7(), Uuid::now_v7());
        let t0 = Instant::now();
        r.take_at(idle, "g", 1, t0);
        r.take_at(busy, "g", 1, t0);
        for _ in 0..100 {
            r.pushed(idle, Uuid::now_v7());
            r.pushed(busy, Uuid::now_v7());
        }
        r.take_at(busy, "g", 1, t0 + IDLE / 2);
        assert_eq!(r.queues(), 2);
        r.take_at(busy, "g", 1, t0 + IDLE + SWEEP_EVERY);
        assert_eq!(r.queues(), 1, "the idle list went");
        assert!(r.take_at(idle, "g", 1, t0 + IDLE + SWEEP_EVERY).is_empty());
        assert!(r.entries() <= 100, "{}", r.entries());
    }

    #[test]
    fn a_forgotten_group_starts_again_at_the_end() {
        let r = Ready::default();
        let q = Uuid::now_v7();
        r.take(q, "old", 1);
        for i in 0..MAX_GROUPS {
            r.take(q, &format!("g{i}"), 1);
        }
        let p = Uuid::now_v7();
        r.pushed(q, p);
        assert!(r.take(q, "old", 1).is_empty(), "its place was forgotten");
        let last = format!("g{}", MAX_GROUPS - 1);
        assert_eq!(r.take(q, &last, 1), vec![p], "recent groups keep theirs");
    }
}
