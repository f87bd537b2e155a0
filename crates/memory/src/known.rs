//! Queues and partitions this broker has looked up, by name: each one's id and its queue's
//! options as last read. A push whose every partition is known appends in one statement of
//! its own, and a pop of a known queue claims in one, with no lookup and no transaction
//! around either; the statement checks in the database that each partition or queue still
//! exists and its queue's options are still these (one deleted and made again has a new id,
//! never reused), and writes nothing otherwise: the work then runs the full way and looks
//! again.
//!
//! A hint only: an entry that is missing, forgotten or stale costs the lookup it saves, never
//! a message. Bounded: past [`MAX_KEPT`] entries a map is emptied.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use uuid::Uuid;

use crate::lock;

/// Entries kept at most.
pub const MAX_KEPT: usize = 100_000;

/// A queue or a partition as last looked up.
#[derive(Clone, Debug, PartialEq)]
pub struct Known {
    /// The partition's id (a queue's own, for a queue).
    pub id: Uuid,
    pub queue_id: Uuid,
    /// The queue's options as stored then.
    pub options: Arc<Value>,
}

/// The names an entry was learned under, kept to tell a hash collision from a hit.
struct Entry {
    tenant: String,
    queue: String,
    partition: String,
    known: Known,
}

/// Known partitions by (tenant, queue, partition), or queues by (tenant, queue, "").
#[derive(Default)]
pub struct KnownNames {
    inner: Mutex<HashMap<u64, Entry>>,
}

fn key(tenant: &str, queue: &str, partition: &str) -> u64 {
    let mut h = DefaultHasher::new();
    (tenant, queue, partition).hash(&mut h);
    h.finish()
}

impl KnownNames {
    /// Each named partition of `tenant` (a queue: `""`), in the order named, if every one is
    /// known.
    pub fn all_of<'a>(
        &self,
        tenant: &str,
        names: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Option<Vec<Known>> {
        let map = lock(&self.inner);
        names
            .into_iter()
            .map(|(queue, partition)| {
                let e = map.get(&key(tenant, queue, partition))?;
                let same = e.tenant == tenant && e.queue == queue && e.partition == partition;
                same.then(|| e.known.clone())
            })
            .collect()
    }

    /// Remembers partitions of `tenant` as just looked up: (queue, partition, what it is).
    /// A queue's partition name is `""`.
    pub fn learn<'a>(
        &self,
        tenant: &str,
        found: impl IntoIterator<Item = (&'a str, &'a str, Known)>,
    ) {
        let mut map = lock(&self.inner);
        for (queue, partition, known) in found {
            if map.len() >= MAX_KEPT {
                map.clear();
            }
            let entry = Entry {
                tenant: tenant.to_string(),
                queue: queue.to_string(),
                partition: partition.to_string(),
                known,
            };
            map.insert(key(tenant, queue, partition), entry);
        }
    }

    /// Forgets the named partitions of `tenant`: the database said one is not as known.
    pub fn forget<'a>(&self, tenant: &str, names: impl IntoIterator<Item = (&'a str, &'a str)>) {
        let mut map = lock(&self.inner);
        for (queue, partition) in names {
            map.remove(&key(tenant, queue, partition));
        }
    }

    pub fn len(&self) -> usize {
        lock(&self.inner).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(n: u128) -> Known {
        Known {
            id: Uuid::from_u128(n),
            queue_id: Uuid::from_u128(100 + n),
            options: Arc::new(Value::Null),
        }
    }

    #[test]
    fn a_push_is_known_only_when_every_partition_is() {
        let k = KnownNames::default();
        k.learn("t", [("q", "a", known(1))]);
        assert_eq!(k.all_of("t", [("q", "a")]), Some(vec![known(1)]));
        assert_eq!(k.all_of("t", [("q", "a"), ("q", "b")]), None);
        assert_eq!(k.all_of("other", [("q", "a")]), None);
        k.forget("t", [("q", "a")]);
        assert_eq!(k.all_of("t", [("q", "a")]), None);
    }

    #[test]
    fn the_map_is_bounded() {
        let k = KnownNames::default();
        for n in 0..(MAX_KEPT as u128 + 10) {
            k.learn("t", [("q", n.to_string().as_str(), known(n))]);
        }
        assert!(k.len() <= MAX_KEPT);
    }
}
