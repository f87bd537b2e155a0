//! Per tenant, what this broker's ephemeral queue requests did since it started: the
//! Prometheus counters `regent_ephemeral_pushed_total`, `_popped_total`, `_acked_total` and
//! `regent_ephemeral_dropped_total{reason}` (`bounds`, `ttl`, `retry`), labelled by tenant.
//!
//! Bounded by [`MAX_TENANTS`]: when a new tenant finds the map full, the quarter counted
//! least recently is forgotten (their counters start again from 0, which Prometheus reads as
//! a reset).

use std::collections::HashMap;
use std::sync::Mutex;

use crate::lock;

/// Tenants counted at most.
pub const MAX_TENANTS: usize = 10_000;

/// One tenant's counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EphemeralTotal {
    /// Messages pushed (committed).
    pub pushed: u64,
    /// Messages handed to pops, redeliveries included.
    pub popped: u64,
    /// Acks that completed their message.
    pub acked: u64,
    /// Messages dropped to make room under `maxLength`/`maxBytes` (`dropOldest`).
    pub dropped_bounds: u64,
    /// Messages dropped past their `ttlSeconds`.
    pub dropped_ttl: u64,
    /// Deliveries given up past `retryLimit`.
    pub dropped_retry: u64,
}

struct Held {
    total: EphemeralTotal,
    touched: u64,
}

#[derive(Default)]
pub struct Ephemeral {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    by_tenant: HashMap<String, Held>,
    ticks: u64,
}

impl Inner {
    fn forget_stalest(&mut self) {
        let mut ages: Vec<u64> = self.by_tenant.values().map(|h| h.touched).collect();
        let k = (ages.len() / 4).max(1) - 1;
        let (_, &mut cutoff, _) = ages.select_nth_unstable(k);
        self.by_tenant.retain(|_, h| h.touched > cutoff);
    }
}

impl Ephemeral {
    /// Adds to `tenant`'s counts with `f`.
    pub fn count(&self, tenant: &str, f: impl FnOnce(&mut EphemeralTotal)) {
        let mut inner = lock(&self.inner);
        inner.ticks += 1;
        let now = inner.ticks;
        if !inner.by_tenant.contains_key(tenant) && inner.by_tenant.len() >= MAX_TENANTS {
            inner.forget_stalest();
        }
        let held = inner
            .by_tenant
            .entry(tenant.to_string())
            .or_insert_with(|| Held {
                total: EphemeralTotal::default(),
                touched: now,
            });
        held.touched = now;
        f(&mut held.total);
    }

    /// Every tenant counted, by name.
    pub fn all(&self) -> Vec<(String, EphemeralTotal)> {
        let inner = lock(&self.inner);
        let mut out: Vec<_> = inner
            .by_tenant
            .iter()
            .map(|(t, h)| (t.clone(), h.total))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    pub fn len(&self) -> usize {
        lock(&self.inner).by_tenant.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_per_tenant_and_stay_bounded() {
        let e = Ephemeral::default();
        for i in 0..(3 * MAX_TENANTS) {
            e.count(&format!("t{i}"), |t| t.pushed += 1);
            if i % 100 == 0 {
                e.count("kept", |t| {
                    t.pushed += 2;
                    t.dropped_ttl += 1;
                });
            }
        }
        assert!(e.len() <= MAX_TENANTS, "{}", e.len());
        let kept = e.all().into_iter().find(|(t, _)| t == "kept").map(|x| x.1);
        assert_eq!(kept.map(|t| (t.pushed, t.dropped_ttl)), Some((600, 300)));
    }
}
