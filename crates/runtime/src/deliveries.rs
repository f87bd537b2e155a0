//! What this broker handed out under each live lease: for every delivered message, its
//! partition, transaction id (as its index hash) and offset. An ack that names the lease is
//! then resolved from here instead of from the transaction index, which saves the ack path
//! its only index lookup.
//!
//! It is a hint, never the truth. "Transaction id T of partition P is at offset N" never
//! changes once committed, so a remembered answer is the answer the index or the leased
//! segments' frames would give, however old the message. Anything missing here (another
//! broker popped, the lease was extended past its recorded expiry, the map was full) falls
//! back to the index, then to the frames. The lease itself is still checked on the locked
//! cursor row.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use uuid::Uuid;

use regent_rules::tx_hash::tx_hash;

use crate::lock;

/// Past this many remembered messages, new leases are not recorded (acks then use the index).
const MAX_ENTRIES: usize = 1 << 20;

#[derive(Default)]
pub struct Deliveries {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    leases: HashMap<Uuid, Lease>,
    entries: usize,
    next_prune: Option<Instant>,
}

struct Lease {
    expires: Instant,
    /// Transaction id hash -> (partition, offset). The hash names its partition already; the
    /// partition is kept to check it. A map, since an ack batch may name every item.
    items: HashMap<Uuid, (Uuid, i64)>,
}

/// One delivered message, as [`Deliveries::record`] takes it.
pub struct Delivered<'a> {
    pub partition: Uuid,
    pub transaction_id: &'a str,
    pub offset: i64,
}

impl Deliveries {
    /// Remembers what a pop delivered under `lease`, for as long as the lease lasts.
    pub fn record<'a>(
        &self,
        lease: Uuid,
        lasts: Duration,
        delivered: impl IntoIterator<Item = Delivered<'a>>,
    ) {
        let items: HashMap<Uuid, (Uuid, i64)> = delivered
            .into_iter()
            .map(|d| {
                (
                    tx_hash(d.partition, d.transaction_id),
                    (d.partition, d.offset),
                )
            })
            .collect();
        let now = Instant::now();
        let mut inner = lock(&self.inner);
        if inner.next_prune.is_none_or(|t| now >= t) {
            inner.prune(now);
            inner.next_prune = Some(now + Duration::from_secs(1));
        }
        if items.is_empty() || inner.entries + items.len() > MAX_ENTRIES {
            return;
        }
        inner.entries += items.len();
        let replaced = inner.leases.insert(
            lease,
            Lease {
                expires: now + lasts,
                items,
            },
        );
        if let Some(old) = replaced {
            inner.entries -= old.items.len();
        }
    }

    /// The offsets of `transaction_ids` in `partition`, in order, when every one of them was
    /// delivered under `lease` by this broker.
    pub fn resolve<'a>(
        &self,
        lease: &str,
        partition: &str,
        transaction_ids: impl IntoIterator<Item = &'a str>,
    ) -> Option<Vec<i64>> {
        let lease = Uuid::parse_str(lease).ok()?;
        let partition = Uuid::parse_str(partition).ok()?;
        let hashes: Vec<Uuid> = transaction_ids
            .into_iter()
            .map(|t| tx_hash(partition, t))
            .collect();
        let inner = lock(&self.inner);
        let l = inner.leases.get(&lease)?;
        hashes
            .iter()
            .map(|h| match l.items.get(h) {
                Some(&(p, offset)) if p == partition => Some(offset),
                _ => None,
            })
            .collect()
    }

    /// Drops a lease that has ended.
    pub fn forget(&self, lease: &str) {
        let Ok(lease) = Uuid::parse_str(lease) else {
            return;
        };
        let mut inner = lock(&self.inner);
        if let Some(old) = inner.leases.remove(&lease) {
            inner.entries -= old.items.len();
        }
    }

    /// Messages remembered, over every lease.
    pub fn len(&self) -> usize {
        lock(&self.inner).entries
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Inner {
    fn prune(&mut self, now: Instant) {
        let before = self.leases.len();
        if before == 0 {
            return;
        }
        let mut dropped = 0;
        self.leases.retain(|_, l| {
            let keep = l.expires > now;
            if !keep {
                dropped += l.items.len();
            }
            keep
        });
        self.entries -= dropped;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(p: Uuid, t: &str, offset: i64) -> Delivered<'_> {
        Delivered {
            partition: p,
            transaction_id: t,
            offset,
        }
    }

    #[test]
    fn resolves_only_what_the_lease_delivered() {
        let d = Deliveries::default();
        let (lease, p, q) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let long = Duration::from_secs(30);
        d.record(lease, long, [at(p, "a", 7), at(p, "b", 8), at(q, "c", 0)]);
        let (ls, ps, qs) = (lease.to_string(), p.to_string(), q.to_string());
        assert_eq!(d.resolve(&ls, &ps, ["b", "a"]), Some(vec![8, 7]));
        assert_eq!(d.resolve(&ls, &qs, ["c"]), Some(vec![0]));
        // Another partition's id, an id never delivered, another lease: ask the index.
        assert_eq!(d.resolve(&ls, &qs, ["a"]), None);
        assert_eq!(d.resolve(&ls, &ps, ["a", "zz"]), None);
        assert_eq!(d.resolve(&Uuid::now_v7().to_string(), &ps, ["a"]), None);
        assert_eq!(d.resolve("not-a-lease", &ps, ["a"]), None);
        d.forget(&ls);
        assert_eq!(d.resolve(&ls, &ps, ["a"]), None);
        assert_eq!(d.len(), 0);
    }

    #[test]
    fn expired_leases_are_pruned() {
        let d = Deliveries::default();
        let p = Uuid::now_v7();
        d.record(Uuid::now_v7(), Duration::ZERO, [at(p, "a", 0)]);
        assert_eq!(d.len(), 1);
        d.inner.lock().unwrap().next_prune = None;
        d.record(Uuid::now_v7(), Duration::from_secs(30), [at(p, "b", 1)]);
        assert_eq!(d.len(), 1);
    }
}
