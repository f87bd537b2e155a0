//! Per tenant, what this broker's ephemeral queue requests did since it started: the
//! Prometheus counters `regent_ephemeral_pushed_total`, `_popped_total`, `_acked_total` and
//! `regent_ephemeral_dropped_total{reason}` (`bounds`, `ttl`, `retry`), labelled by tenant.
//!
//! Bounded as every [`PerTenant`] map is.

use crate::counters::PerTenant;

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

/// Per tenant: its counts.
pub type Ephemeral = PerTenant<EphemeralTotal>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::MAX_KEYS as MAX_TENANTS;

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
