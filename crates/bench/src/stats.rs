//! Latency histograms (microseconds) recorded per task and merged at the end, so percentiles
//! are computed over every sample rather than averaged across tasks.

use hdrhistogram::Histogram;
use serde::Serialize;

pub fn histogram() -> Histogram<u64> {
    // 1 µs .. 10 min, 3 significant digits.
    Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid histogram bounds")
}

pub fn record(h: &mut Histogram<u64>, micros: u64) {
    h.saturating_record(micros.max(1));
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Percentiles {
    pub count: u64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

pub fn percentiles(h: &Histogram<u64>) -> Percentiles {
    let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    Percentiles {
        count: h.len(),
        p50_ms: ms(0.50),
        p90_ms: ms(0.90),
        p99_ms: ms(0.99),
        p999_ms: ms(0.999),
        max_ms: h.max() as f64 / 1000.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_percentiles_cover_every_sample() {
        let mut a = histogram();
        let mut b = histogram();
        for _ in 0..99 {
            record(&mut a, 1_000);
        }
        record(&mut b, 100_000);
        a.add(&b).unwrap();
        let p = percentiles(&a);
        assert_eq!(p.count, 100);
        assert!((p.p50_ms - 1.0).abs() < 0.01);
        assert!((p.max_ms - 100.0).abs() < 0.1);
    }
}
