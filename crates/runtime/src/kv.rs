//! Per tenant, what this broker's key/value operations did since it started: the Prometheus
//! counters `regent_kv_reads_total`, `regent_kv_writes_total`, `regent_kv_refused_total` and
//! `regent_kv_rollbacks_total`, labelled by tenant. Bounded as every [`Counters`] map is.

use crate::counters::Counters;

/// One tenant's counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KvTotal {
    /// Read operations (`get`, `getMany`, `getPrefix`) committed.
    pub reads: u64,
    /// Writes committed that applied.
    pub writes: u64,
    /// Writes committed that did not apply (`expect`, `absent`, a bound).
    pub refused: u64,
    /// Requests and bundles rolled back by a `required` operation that did not apply.
    pub rollbacks: u64,
}

#[derive(Default)]
pub struct KvTotals(Counters<String, String, KvTotal>);

impl KvTotals {
    pub fn count(&self, tenant: &str, f: impl FnOnce(&mut KvTotal)) {
        self.0.count(tenant.to_string(), || tenant.to_string(), f);
    }

    /// Every tenant counted, by tenant.
    pub fn all(&self) -> Vec<(String, KvTotal)> {
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
