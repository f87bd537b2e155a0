//! Per tenant, what this broker's key/value operations did since it started: the Prometheus
//! counters `regent_kv_reads_total`, `regent_kv_writes_total`, `regent_kv_refused_total` and
//! `regent_kv_rollbacks_total`, labelled by tenant. Bounded as every [`PerTenant`] map is.

use crate::counters::PerTenant;

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

/// Per tenant: its counts.
pub type KvTotals = PerTenant<KvTotal>;
