//! Latency histograms for `/metrics/prometheus`: fixed bucket bounds, one atomic add per
//! observation, read as Prometheus' cumulative buckets. The bounds span a fast in-memory
//! answer (0.5 ms) to a long-poll's whole wait (30 s).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// The buckets' upper bounds, in seconds (`le`); past the last is `+Inf`.
pub const BOUNDS: [f64; 16] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0,
    30.0,
];

#[derive(Default)]
pub struct Histogram {
    /// Per bucket (not cumulative), the last one `+Inf`.
    counts: [AtomicU64; BOUNDS.len() + 1],
    sum_micros: AtomicU64,
}

/// A histogram as Prometheus reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    /// (upper bound in seconds, observations at or below it), ascending; `+Inf` last.
    pub cumulative: Vec<(f64, u64)>,
    pub count: u64,
    pub sum_seconds: f64,
}

impl Histogram {
    pub fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        let bucket = BOUNDS
            .iter()
            .position(|&b| secs <= b)
            .unwrap_or(BOUNDS.len());
        self.counts[bucket].fetch_add(1, Relaxed);
        self.sum_micros
            .fetch_add(d.as_micros().min(u64::MAX as u128) as u64, Relaxed);
    }

    pub fn snapshot(&self) -> Snapshot {
        let mut total = 0;
        let mut cumulative = Vec::with_capacity(BOUNDS.len() + 1);
        for (i, c) in self.counts.iter().enumerate() {
            total += c.load(Relaxed);
            cumulative.push((BOUNDS.get(i).copied().unwrap_or(f64::INFINITY), total));
        }
        Snapshot {
            cumulative,
            count: total,
            sum_seconds: self.sum_micros.load(Relaxed) as f64 / 1e6,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_land_in_cumulative_buckets() {
        let h = Histogram::default();
        h.observe(Duration::from_micros(300));
        h.observe(Duration::from_millis(7));
        h.observe(Duration::from_secs(60));
        let s = h.snapshot();
        assert_eq!(s.count, 3);
        assert_eq!(s.cumulative[0], (0.0005, 1));
        let at = |le: f64| s.cumulative.iter().find(|(b, _)| *b == le).unwrap().1;
        assert_eq!(
            (at(0.005), at(0.01), at(30.0), at(f64::INFINITY)),
            (1, 2, 2, 3)
        );
        assert!((s.sum_seconds - 60.0073).abs() < 1e-9);
    }
}
