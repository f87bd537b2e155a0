//! Which database node holds each partition, as last asked: on Citus, the worker group of
//! the partition's shard. Fusion groups requests by it, so that a fused transaction writes on
//! one worker and commits there in one phase; requests for partitions on two workers would
//! make Citus commit every node in two (a `PREPARE` and a `COMMIT PREPARED` on each, and a
//! record on the coordinator).
//!
//! A hint only: a place that is unknown, forgotten or stale (a shard moved by a rebalance)
//! costs a two-phase commit, never a message, since a transaction is atomic on any number of
//! workers. On one PostgreSQL every partition has the same place and nothing is kept.
//!
//! Bounded: past [`MAX_KEPT`] entries a map is emptied (the cheapest to rebuild: one
//! metadata query on the coordinator per transaction that meets unknown partitions).

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;

use uuid::Uuid;

use crate::lock;

/// A node group (Citus's `groupid`); the same for every partition on one PostgreSQL.
pub type Place = i32;

/// Entries kept at most, per map.
pub const MAX_KEPT: usize = 100_000;

/// A partition's names (tenant, queue, partition), hashed: a lookup allocates nothing, and
/// two names colliding would only misplace a hint.
fn name_key(tenant: &str, queue: &str, partition: &str) -> u64 {
    let mut h = DefaultHasher::new();
    (tenant, queue, partition).hash(&mut h);
    h.finish()
}

#[derive(Default)]
pub struct Placements {
    /// Whether partitions live in more than one place at all; if not, nothing is kept.
    spread: bool,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    by_name: HashMap<u64, Place>,
    by_id: HashMap<Uuid, Place>,
}

/// The one place every key has, if each is known and they agree.
fn common<K>(
    keys: impl IntoIterator<Item = K>,
    place: impl Fn(K) -> Option<Place>,
) -> Option<Place> {
    let mut keys = keys.into_iter();
    let first = place(keys.next()?)?;
    keys.all(|k| place(k) == Some(first)).then_some(first)
}

/// Inserts into a map emptied first when it is full.
fn remember<K: Hash + Eq>(map: &mut HashMap<K, Place>, key: K, place: Place) {
    if map.len() >= MAX_KEPT {
        map.clear();
    }
    map.insert(key, place);
}

impl Placements {
    /// `spread`: whether the database keeps partitions on more than one node.
    pub fn new(spread: bool) -> Placements {
        Placements {
            spread,
            inner: Default::default(),
        }
    }

    /// The place of every named partition of `tenant`, if they share one and each is known.
    /// On one PostgreSQL, always the same place.
    pub fn of_names<'a>(
        &self,
        tenant: &str,
        names: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Option<Place> {
        if !self.spread {
            return Some(0);
        }
        let inner = lock(&self.inner);
        common(names, |(q, p)| {
            inner.by_name.get(&name_key(tenant, q, p)).copied()
        })
    }

    /// The place of every partition in `ids`, if they share one and each is known.
    pub fn of_ids(&self, ids: impl IntoIterator<Item = Uuid>) -> Option<Place> {
        if !self.spread {
            return Some(0);
        }
        let inner = lock(&self.inner);
        common(ids, |id| inner.by_id.get(&id).copied())
    }

    /// Which of `ids` have no known place (none on one PostgreSQL): the ones to look up.
    pub fn unknown(&self, ids: impl IntoIterator<Item = Uuid>) -> Vec<Uuid> {
        if !self.spread {
            return Vec::new();
        }
        let inner = lock(&self.inner);
        ids.into_iter()
            .filter(|id| !inner.by_id.contains_key(id))
            .collect()
    }

    /// Remembers where partitions are: (queue, partition, id, place) of `tenant`'s.
    pub fn learn(&self, tenant: &str, found: &[(&str, &str, Uuid, Place)]) {
        if !self.spread || found.is_empty() {
            return;
        }
        let mut inner = lock(&self.inner);
        for &(queue, partition, id, place) in found {
            remember(
                &mut inner.by_name,
                name_key(tenant, queue, partition),
                place,
            );
            remember(&mut inner.by_id, id, place);
        }
    }

    /// Remembers where partitions known by id only are (an ack names no queue).
    pub fn learn_ids(&self, found: &[(Uuid, Place)]) {
        if !self.spread || found.is_empty() {
            return;
        }
        let mut inner = lock(&self.inner);
        for &(id, place) in found {
            remember(&mut inner.by_id, id, place);
        }
    }

    /// Partitions whose place is known.
    pub fn len(&self) -> usize {
        lock(&self.inner).by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    #[test]
    fn one_postgresql_has_one_place_and_keeps_nothing() {
        let p = Placements::new(false);
        p.learn("t", &[("q", "a", id(1), 7)]);
        assert_eq!(p.of_names("t", [("q", "b")]), Some(0));
        assert_eq!(p.of_ids([id(2)]), Some(0));
        assert!(p.unknown([id(1), id(2)]).is_empty());
        assert!(p.is_empty());
    }

    #[test]
    fn requests_share_a_place_only_when_every_partition_is_known_there() {
        let p = Placements::new(true);
        p.learn(
            "t",
            &[
                ("q", "a", id(1), 1),
                ("q", "b", id(2), 1),
                ("q", "c", id(3), 2),
            ],
        );
        assert_eq!(p.of_names("t", [("q", "a"), ("q", "b")]), Some(1));
        assert_eq!(
            p.of_names("t", [("q", "a"), ("q", "c")]),
            None,
            "two workers"
        );
        assert_eq!(
            p.of_names("t", [("q", "a"), ("q", "z")]),
            None,
            "one unknown"
        );
        assert_eq!(
            p.of_names("other", [("q", "a")]),
            None,
            "another tenant's names"
        );
        assert_eq!(p.of_ids([id(3)]), Some(2));
        assert_eq!(p.of_ids([id(1), id(3)]), None);
        assert_eq!(p.of_ids(std::iter::empty()), None, "nothing to place");
        assert_eq!(p.unknown([id(1), id(9)]), vec![id(9)]);
        p.learn_ids(&[(id(9), 2)]);
        assert_eq!(p.of_ids([id(3), id(9)]), Some(2));
    }

    #[test]
    fn a_full_map_is_emptied_before_it_grows_past_its_bound() {
        let p = Placements::new(true);
        for n in 0..(MAX_KEPT as u128 + 10) {
            p.learn("t", &[("q", &n.to_string(), id(n), 1)]);
        }
        assert!(p.len() <= MAX_KEPT);
        assert_eq!(
            p.of_ids([id(MAX_KEPT as u128 + 9)]),
            Some(1),
            "the newest is kept"
        );
    }
}
