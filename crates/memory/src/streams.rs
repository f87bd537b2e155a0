//! Per stream query, what this broker's cycles did since it started: the Prometheus counters
//! `regent_stream_cycles_total`, `regent_stream_state_ops_total`,
//! `regent_stream_pushed_total`, `regent_stream_replays_total` and
//! `regent_stream_failures_total`, labelled by tenant and query name. Bounded as every
//! [`Counters`] map is.

use uuid::Uuid;

use crate::counters::Counters;

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

/// Per query id: (tenant, name) and counts.
#[derive(Default)]
pub struct Streams(Counters<Uuid, (String, String), StreamTotal>);

/// Who a query is, for its labels.
pub struct QueryLabel<'a> {
    pub id: Uuid,
    pub tenant: &'a str,
    pub name: &'a str,
}

impl Streams {
    /// Adds to query `q`'s counts with `f`.
    pub fn count(&self, q: &QueryLabel<'_>, f: impl FnOnce(&mut StreamTotal)) {
        let labels = || (q.tenant.to_string(), q.name.to_string());
        self.0.count(q.id, labels, f);
    }

    /// Every query counted: (tenant, name, counts), by tenant and name.
    pub fn all(&self) -> Vec<(String, String, StreamTotal)> {
        let mut out: Vec<_> = self
            .0
            .all()
            .into_iter()
            .map(|((t, n), c)| (t, n, c))
            .collect();
        out.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        out
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
