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

/// `--trace-slower-than`: one stderr line per sample over the threshold, stamped with the
/// wall-clock time it was taken at (`what` says which latency).
pub fn trace_slow(threshold_ms: Option<u64>, what: &str, micros: u64, now_unix_ms: u64) {
    if let Some(line) = slow_line(threshold_ms, what, micros, now_unix_ms) {
        eprintln!("{line}");
    }
}

fn slow_line(
    threshold_ms: Option<u64>,
    what: &str,
    micros: u64,
    now_unix_ms: u64,
) -> Option<String> {
    let over = micros > threshold_ms? * 1000;
    over.then(|| {
        format!(
            "slow {what} at {now_unix_ms} ms: {:.1} ms",
            micros as f64 / 1000.0
        )
    })
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

    #[test]
    fn only_samples_over_the_threshold_are_traced_with_their_time() {
        assert_eq!(slow_line(None, "push", 900_000, 1), None);
        assert_eq!(slow_line(Some(30), "push", 30_000, 1), None);
        assert_eq!(
            slow_line(Some(30), "delivery", 30_500, 1_796_307_204_400),
            Some("slow delivery at 1796307204400 ms: 30.5 ms".to_string())
        );
    }
}
