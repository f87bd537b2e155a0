//! Counters per something a client names (a stream query, a tenant), for the Prometheus
//! families of the 1.x features: a bounded map. When a new key finds it full, the quarter
//! counted least recently is forgotten (their counters start again from 0, which Prometheus
//! reads as a reset).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;

use crate::lock;

/// Keys counted at most, in each map.
pub const MAX_KEYS: usize = 10_000;

struct Held<L, V> {
    labels: L,
    total: V,
    touched: u64,
}

/// Counts `V` per key `K`, each with the labels `L` it is exposed under.
pub struct Counters<K, L, V> {
    inner: Mutex<Inner<K, L, V>>,
}

struct Inner<K, L, V> {
    by_key: HashMap<K, Held<L, V>>,
    ticks: u64,
}

impl<K, L, V> Default for Counters<K, L, V> {
    fn default() -> Self {
        Counters {
            inner: Mutex::new(Inner {
                by_key: HashMap::new(),
                ticks: 0,
            }),
        }
    }
}

impl<K: Hash + Eq, L: Clone, V: Default + Copy> Counters<K, L, V> {
    /// Adds to `key`'s counts with `f`; `labels` names a key seen for the first time.
    pub fn count(&self, key: K, labels: impl FnOnce() -> L, f: impl FnOnce(&mut V)) {
        let mut inner = lock(&self.inner);
        inner.ticks += 1;
        let now = inner.ticks;
        if !inner.by_key.contains_key(&key) && inner.by_key.len() >= MAX_KEYS {
            let mut ages: Vec<u64> = inner.by_key.values().map(|h| h.touched).collect();
            let k = (ages.len() / 4).max(1) - 1;
            let (_, &mut cutoff, _) = ages.select_nth_unstable(k);
            inner.by_key.retain(|_, h| h.touched > cutoff);
        }
        let held = inner.by_key.entry(key).or_insert_with(|| Held {
            labels: labels(),
            total: V::default(),
            touched: now,
        });
        held.touched = now;
        f(&mut held.total);
    }

    /// Every key counted: its labels and counts, in no order.
    pub fn all(&self) -> Vec<(L, V)> {
        lock(&self.inner)
            .by_key
            .values()
            .map(|h| (h.labels.clone(), h.total))
            .collect()
    }

    /// `key`'s counts, if it is counted.
    pub fn get(&self, key: &K) -> Option<V> {
        lock(&self.inner).by_key.get(key).map(|h| h.total)
    }

    pub fn len(&self) -> usize {
        lock(&self.inner).by_key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Counts `V` per tenant, labelled by the tenant.
pub struct PerTenant<V>(Counters<String, String, V>);

impl<V> Default for PerTenant<V> {
    fn default() -> Self {
        PerTenant(Counters::default())
    }
}

impl<V: Default + Copy> PerTenant<V> {
    pub fn count(&self, tenant: &str, f: impl FnOnce(&mut V)) {
        self.0.count(tenant.to_string(), || tenant.to_string(), f);
    }

    /// Every tenant counted, by tenant.
    pub fn all(&self) -> Vec<(String, V)> {
        let mut out = self.0.all();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_per_key_and_stay_bounded() {
        let c: Counters<u64, &str, (u64, u64)> = Counters::default();
        for i in 0..(3 * MAX_KEYS as u64) {
            c.count(i + 1_000_000, || "other", |t| t.0 += 1);
            if i % 100 == 0 {
                c.count(
                    7,
                    || "kept",
                    |t| {
                        t.0 += 1;
                        t.1 += 2
                    },
                );
            }
        }
        assert!(c.len() <= MAX_KEYS, "{}", c.len());
        assert_eq!(c.get(&7), Some((300, 600)));
        assert!(c.all().iter().any(|(l, _)| *l == "kept"));
    }
}
