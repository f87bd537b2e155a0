//! Per stream query, what this broker's cycles did since it started: the Prometheus counters
//! `regent_stream_cycles_total`, `regent_stream_state_ops_total`,
//! `regent_stream_pushed_total`, `regent_stream_replays_total` and
//! `regent_stream_failures_total`, labelled by tenant and query name.
//!
//! Bounded by [`MAX_QUERIES`]: when a new query finds the map full, the quarter counted least
//! recently is forgotten (their counters start again from 0, which Prometheus reads as a
//! reset).

use std::collections::HashMap;
use std::sync::Mutex;

use uuid::Uuid;

use crate::lock;

/// Queries counted at most.
pub const MAX_QUERIES: usize = 10_000;

/// One query's counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamTotal {
    /// Cycles committed.
    pub cycles: u64,
    /// State operations those cycles applied.
    pub state_ops: u64,
    /// Sink items those cycles pushed.
    pub pushed: u64,
    /// Cycles answered from the stored answer of their first commit (a client's retry).
    pub replays: u64,
    /// Cycles refused or failed, nothing committed.
    pub failures: u64,
}

struct Held {
    tenant: String,
    name: String,
    total: StreamTotal,
    touched: u64,
}

#[derive(Default)]
pub struct Streams {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    by_query: HashMap<Uuid, Held>,
    ticks: u64,
}

impl Inner {
    fn forget_stalest(&mut self) {
        let mut ages: Vec<u64> = self.by_query.values().map(|h| h.touched).collect();
        let k = (ages.len() / 4).max(1) - 1;
        let (_, &mut cutoff, _) = ages.select_nth_unstable(k);
        self.by_query.retain(|_, h| h.touched > cutoff);
    }
}

/// Who a query is, for its labels.
pub struct QueryLabel<'a> {
    pub id: Uuid,
    pub tenant: &'a str,
    pub name: &'a str,
}

impl Streams {
    /// Adds to query `q`'s counts with `f`.
    pub fn count(&self, q: &QueryLabel<'_>, f: impl FnOnce(&mut StreamTotal)) {
        let mut inner = lock(&self.inner);
        inner.ticks += 1;
        let now = inner.ticks;
        if !inner.by_query.contains_key(&q.id) && inner.by_query.len() >= MAX_QUERIES {
            inner.forget_stalest();
        }
        let held = inner.by_query.entry(q.id).or_insert_with(|| Held {
            tenant: q.tenant.to_string(),
            name: q.name.to_string(),
            total: StreamTotal::default(),
            touched: now,
        });
        held.touched = now;
        f(&mut held.total);
    }

    /// Every query counted: (tenant, name, counts), by tenant and name.
    pub fn all(&self) -> Vec<(String, String, StreamTotal)> {
        let inner = lock(&self.inner);
        let mut out: Vec<_> = inner
            .by_query
            .values()
            .map(|h| (h.tenant.clone(), h.name.clone(), h.total))
            .collect();
        out.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        out
    }

    pub fn len(&self) -> usize {
        lock(&self.inner).by_query.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_per_query_and_stay_bounded() {
        let s = Streams::default();
        let kept = Uuid::new_v4();
        let label = |id| QueryLabel {
            id,
            tenant: "t",
            name: "q",
        };
        for i in 0..(3 * MAX_QUERIES) {
            s.count(&label(Uuid::new_v4()), |t| t.cycles += 1);
            if i % 100 == 0 {
                s.count(&label(kept), |t| {
                    t.cycles += 1;
                    t.state_ops += 2
                });
            }
        }
        assert!(s.len() <= MAX_QUERIES, "{}", s.len());
        let kept_total = lock(&s.inner).by_query.get(&kept).map(|h| h.total);
        assert_eq!(
            kept_total.map(|t| (t.cycles, t.state_ops)),
            Some((300, 600))
        );
    }
}
